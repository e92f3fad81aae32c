#!/usr/bin/env bash
# An output directory that cannot be written: a clear error before
# connecting, exit 2, no files. Root ignores permission bits, so a path
# below a regular file (ENOTDIR) and a read-only tmpfs mount (EROFS) are used.
. "$(dirname "$0")/lib.sh"

start_demo --cores 1 --rate 100 --seconds 20 --wait-consumers 0
touch "$T/file"
"$DUMP" -o "$T/file/out" "$NAME" 2>"$T/e1"; rc=$?
[ "$rc" -eq 2 ] || fail "below a file: exit $rc, expected 2"
grep -q "cannot create output directory '$T/file/out': Not a directory" "$T/e1" || { cat "$T/e1"; fail "message"; }
ok "path below a regular file: '$(cat "$T/e1")', exit 2"

# No such producer: exit 2, and nothing is left that a retry would refuse.
"$DUMP" -o "$T/none" "no-such-$NAME" 2>"$T/e6"; rc=$?
[ "$rc" -eq 2 ] && grep -q "no producer named 'no-such-$NAME'" "$T/e6" || fail "no producer: exit $rc"
[ ! -e "$T/none" ] || fail "no producer: '$T/none' was left behind"
ok "no such producer: '$(cat "$T/e6")', exit 2, no directory left"

mkdir "$T/old" && echo '{}' >"$T/old/index.jsonl"
"$DUMP" -o "$T/old" "$NAME" 2>"$T/e5"; rc=$?
[ "$rc" -eq 2 ] && grep -q "already holds a dump" "$T/e5" || fail "a previous dump was not refused"
[ "$(cat "$T/old/index.jsonl")" = '{}' ] || fail "a previous dump was touched"
ok "a directory holding a previous dump: refused, left alone, exit 2"

# Not empty, without an index (what an interrupted dump left, or anything
# else): refused in every mode, naming the directory and what is allowed;
# c0/ and summary.json were reused and overwritten, exit 0
mkdir -p "$T/left/c0" && echo precious >"$T/left/c0/000000000000.npy" && echo precious >"$T/left/summary.json"
for mode in "" --raw --index-only; do
	"$DUMP" -o "$T/left" -q --no-print -n 5 $mode "$NAME" 2>"$T/e7"; rc=$?
	[ "$rc" -eq 2 ] || { cat "$T/e7"; fail "a non-empty directory${mode:+ ($mode)}: exit $rc, expected 2"; }
	grep -qF "output directory '$T/left' " "$T/e7" && grep -qF "a dump goes only into a new or empty directory" "$T/e7" ||
		{ cat "$T/e7"; fail "a non-empty directory${mode:+ ($mode)}: the message does not name it and what is allowed"; }
	[ "$(cat "$T/left/c0/000000000000.npy" "$T/left/summary.json")" = "$(printf 'precious\nprecious')" ] &&
		[ "$(ls -A "$T/left" | tr '\n' ' ')" = "c0 summary.json " ] && [ "$(ls -A "$T/left/c0")" = 000000000000.npy ] ||
		fail "a non-empty directory${mode:+ ($mode)}: its files were touched: $(ls -AR "$T/left" | tr '\n' ' ')"
done
# ... and for --convert's output (a raw file to convert: without one,
# nothing to convert is said first)
mkdir -p "$T/raw" "$T/conv" && touch "$T/conv/mine"
"$PY" -c 'import struct, sys; open(sys.argv[1], "wb").write(b"EVSRAW01" + struct.pack("<II", 1, 0) + bytes(48))' \
	"$T/raw/core0.evsraw"
"$DUMP" --convert "$T/raw" -o "$T/conv" 2>"$T/e8"; rc=$?
[ "$rc" -eq 2 ] && grep -qF "output directory '$T/conv' is not empty (it holds 'mine')" "$T/e8" ||
	{ cat "$T/e8"; fail "--convert into a non-empty directory: exit $rc"; }
ok "a non-empty directory without an index: refused in every mode and by --convert, left alone, exit 2: '$(cat "$T/e7")'"

# An unwritable directory: for root (who ignores permission bits) a
# read-only tmpfs mount, for anyone else a mode 555 directory.
skipped=0
if [ "$(id -u)" -eq 0 ]; then
	mkdir "$T/ro"
	if mount -t tmpfs -o ro,size=1M evs-dumptest "$T/ro" 2>/dev/null; then
		MOUNTS+=("$T/ro")
		"$DUMP" -o "$T/ro" "$NAME" 2>"$T/e2"; rc=$?
		[ "$rc" -eq 2 ] || fail "read-only mount: exit $rc, expected 2"
		grep -q "cannot write to output directory '$T/ro': Read-only file system" "$T/e2" || { cat "$T/e2"; fail "message"; }
		"$DUMP" -o "$T/ro/sub" "$NAME" 2>"$T/e3"; rc=$?
		[ "$rc" -eq 2 ] && grep -q "Read-only file system" "$T/e3" || fail "read-only mount, subdirectory"
		ok "read-only tmpfs: '$(cat "$T/e2")', exit 2"
	else
		skip "read-only tmpfs case: root cannot mount a tmpfs here"
		skipped=1
	fi
else
	mkdir -m 555 "$T/noperm"
	"$DUMP" -o "$T/noperm" "$NAME" 2>"$T/e4"; rc=$?
	[ "$rc" -eq 2 ] && grep -q "Permission denied" "$T/e4" || fail "mode 555 directory"
	ok "mode 555 directory: exit 2"
fi
kill -TERM "$DEMO_PID"; wait_pid "$DEMO_PID" 10
# a case that could not run counts as a skip (exit 77), not as a pass
[ "$skipped" -eq 0 ] || exit 77
