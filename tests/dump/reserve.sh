#!/usr/bin/env bash
# The 4 MiB reserved ahead of the index while dumping is given back at
# exit: the index then holds about its own size of blocks. On ext4 (a
# loop-mounted image, as root with mkfs.ext4) and on tmpfs, which give
# space back in different ways (a truncate, a punched hole).
. "$(dirname "$0")/lib.sh"

# blocks_kib FILE: KiB of disk space the file holds
blocks_kib() { echo $(($(stat -c '%b * %B' "$1") / 1024)); }

# check FS DIR: dump into DIR; the reserve is there while the dumper runs
# and gone after it exits
check() {
	local fs=$1 out=$2 held size after
	start_demo --cores 2 --rate 0 --events 300 --hold --wait-consumers 10
	start_dump "$out" --no-print --index-only
	wait_for "grep -q 'done emitting' $T/demo.err" 20
	wait_for "[ \$(wc -l <$out/index.jsonl) -eq 600 ]" 20
	held=$(blocks_kib "$out/index.jsonl")
	kill -TERM "$DEMO_PID"; wait_pid "$DEMO_PID" 10
	wait_pid "$DUMP_PID" 20 || { cat "$T/$(basename "$out").stderr"; fail "$fs: evs-dump exited with $?"; }
	size=$(($(stat -c %s "$out/index.jsonl") / 1024))
	after=$(blocks_kib "$out/index.jsonl")
	[ "$held" -ge 4096 ] || { skip "$fs: no space was reserved ($held KiB held for a $size KiB index): nothing to give back"; return 1; }
	[ "$after" -le $((size + 64)) ] || fail "$fs: a $size KiB index still holds $after KiB after exit ($held KiB while dumping)"
	ok "$fs: a $size KiB index held $held KiB while dumping, $after KiB after exit"
}

skipped=0
if [ "$(id -u)" -eq 0 ] && command -v mkfs.ext4 >/dev/null; then
	truncate -s 64M "$T/ext4.img"
	mkfs.ext4 -q -F "$T/ext4.img" || fail "mkfs.ext4"
	mkdir "$T/ext4"
	if mount -o loop "$T/ext4.img" "$T/ext4" 2>"$T/mount.err"; then
		MOUNTS+=("$T/ext4")
		check ext4 "$T/ext4/d" || skipped=1
	else
		skip "ext4: cannot loop-mount an image here: $(cat "$T/mount.err")"
		skipped=1
	fi
else
	skip "ext4: a loop-mounted image needs root and mkfs.ext4"
	skipped=1
fi
check "$(stat -f -c %T "$T") ($T)" "$T/s" || skipped=1
[ "$skipped" -eq 0 ] || exit 77
