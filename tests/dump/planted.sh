#!/usr/bin/env bash
# Links and directories planted by another user where root's evs-dump
# writes: nothing is ever written through them. Refused before connecting
# (exit 2, a message naming the path and the reason, nothing written): an
# output directory of another uid (the default ./dump, holding a link named
# core0.evsraw; an empty one), the output directory named as a symbolic link
# (with and without a trailing slash), a directory anyone can write without
# the sticky bit. In a sticky directory (like /tmp or a fresh tmpfs, where
# anyone may add names) a name planted before the dump starts makes the
# directory not empty (refused, exit 2); one planted after evs-dump found
# it empty, as a racing user would, is not followed: a link named
# core0.evsraw or c0, and a c0 of another uid, are refused (exit 2); a
# link named .summary.json.tmp is replaced, the dump succeeds. The root
# file and directory the links point to stay untouched throughout.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "planted links and directories: needs root (the user whose files they aim at, and chown to give them to another uid)"
	exit 77
fi
# another uid, the planter: nobody, or any unused number (chown takes it)
OTHER=$(id -u nobody 2>/dev/null) || OTHER=65534
[ "$OTHER" -ne 0 ] || fail "nobody is uid 0 here"

# root's things the links aim at: a 0600 file and a 0700 directory
printf 'root secret\n' >"$T/secret"
chmod 600 "$T/secret"
mkdir -m 700 "$T/rootdir"
untouched() {
	[ "$(cat "$T/secret")" = "root secret" ] || fail "$1: root's file was written through a link: $(head -c 64 "$T/secret" | od -c | head -2)"
	[ -z "$(ls -A "$T/rootdir")" ] || fail "$1: files were created in root's directory through a link: $(ls -A "$T/rootdir" | head -3)"
}
# plant OWNER PATH...: give them to OWNER without following links
plant() { local o=$1; shift; chown -h "$o" "$@" || fail "chown $*"; }

# run NAME ARGS...: evs-dump in the foreground (bounded); exit status in
# rc, stderr in $T/NAME.err
run() {
	local n=$1; shift
	timeout -k 5 30 "$DUMP" --wait 10 --no-print "$@" "$NAME" >"$T/$n.out" 2>"$T/$n.err"
	rc=$?
}
# refused NAME MESSAGE: exit 2 and the message
refused() {
	[ "$rc" -eq 2 ] || { cat "$T/$1.err"; fail "$1: exit $rc, expected 2 (refused)"; }
	grep -qF -- "$2" "$T/$1.err" || { cat "$T/$1.err"; fail "$1: no message '$2'"; }
}

start_demo --cores 1 --rate 200 --seconds 120 --wait-consumers 0

# (a) the report's case: the default output ./dump made by another user,
# holding core0.evsraw -> root's file; root runs evs-dump --raw there
mkdir -p "$T/cwd/dump"
ln -s "$T/secret" "$T/cwd/dump/core0.evsraw"
plant "$OTHER" "$T/cwd/dump" "$T/cwd/dump/core0.evsraw"
(cd "$T/cwd" && run a --raw -n 1 && echo "$rc" >"$T/a.rc")
rc=$(cat "$T/a.rc")
refused a "output directory 'dump' is owned by uid $OTHER: refused"
untouched "default ./dump of another uid"
[ ! -e "$T/cwd/dump/index.jsonl" ] || fail "another uid's ./dump: an index was written in it"
ok "another uid's ./dump holding core0.evsraw -> root's file: '$(head -1 "$T/a.err")', exit 2"

# (c) an empty output directory of another uid, named with -o
mkdir "$T/theirs"
plant "$OTHER" "$T/theirs"
run c -o "$T/theirs" -n 1
refused c "output directory '$T/theirs' is owned by uid $OTHER: refused"
[ -z "$(ls -A "$T/theirs")" ] || fail "another uid's directory: written to: $(ls -A "$T/theirs")"
ok "another uid's output directory: refused, left empty, exit 2"

# the output directory itself a link (to root's directory), as planted, and
# with a trailing slash (which would make the kernel follow it)
ln -s "$T/rootdir" "$T/link"
plant "$OTHER" "$T/link"
for o in "$T/link" "$T/link/"; do
	run d -o "$o" -n 1
	refused d "output directory '$o' is a symbolic link (to '$T/rootdir'): refused"
	untouched "output directory $o a link"
done
ok "an output directory that is a symbolic link: '$(head -1 "$T/d.err")', exit 2"

# a directory anyone may write, without the sticky bit
mkdir -m 777 "$T/open"
run e -o "$T/open" -n 1
refused e "output directory '$T/open' has mode 0777: refused"
[ -z "$(ls -A "$T/open")" ] || fail "a mode 0777 directory: written to"
ok "a directory writable by others without the sticky bit: refused, exit 2"

# Sticky directories of root (like /tmp): anyone may add names, so each
# name evs-dump writes is opened without following a link.
sticky() { mkdir "$T/$1" && chmod 1777 "$T/$1"; }

# a name planted before the dump: the directory is not empty, refused
sticky pre
ln -s "$T/rootdir" "$T/pre/c0"
plant "$OTHER" "$T/pre/c0"
run pre -n 1 -o "$T/pre"
refused pre "output directory '$T/pre' is not empty (it holds 'c0'): refused"
untouched "c0 a link, planted before"
[ "$(ls -A "$T/pre")" = c0 ] || fail "a sticky directory holding a link: written to: $(ls -A "$T/pre")"
ok "a link named c0 planted in a sticky directory before the dump: not empty, refused, exit 2"

# late NAME PLANT ARGS...: evs-dump into the sticky directory $T/NAME for a
# producer not started yet; once it has found the directory empty (and made
# its index there), PLANT runs, as a user racing it would, then a producer
# of 20 events starts. Exit status in rc, stderr in $T/NAME.err.
late() {
	local n=$1 plant=$2 pid; shift 2
	sticky "$n"
	timeout -k 5 30 "$DUMP" --wait 10 --no-print -o "$T/$n" "$@" "$NAME-$n" >"$T/$n.out" 2>"$T/$n.err" &
	pid=$!
	PIDS+=("$pid")
	wait_for "[ -e '$T/$n/index.jsonl' ]" 10
	eval "$plant"
	"$DEMO" --name "$NAME-$n" --cores 1 --rate 200 --events 20 --wait-consumers 10 2>"$T/$n.demo" &
	PIDS+=("$!")
	wait_pid "$pid" 30; rc=$?
}

# (a') a link named core0.evsraw
late sa 'ln -s "$T/secret" "$T/sa/core0.evsraw"; plant "$OTHER" "$T/sa/core0.evsraw"' --raw -n 1
refused sa "'$T/sa/core0.evsraw' is a symbolic link (to '$T/secret'): refused"
untouched "core0.evsraw a link"
[ -L "$T/sa/core0.evsraw" ] && [ ! -e "$T/sa/index.jsonl" ] || fail "core0.evsraw a link: the link was removed or an index left"
ok "a link named core0.evsraw in a sticky directory: not followed, exit 2"

# (b) a link named c0, to root's directory
late sb 'ln -s "$T/rootdir" "$T/sb/c0"; plant "$OTHER" "$T/sb/c0"' -n 1
refused sb "core directory '$T/sb/c0' is a symbolic link (to '$T/rootdir'): refused"
untouched "c0 a link"
[ ! -e "$T/sb/index.jsonl" ] || fail "c0 a link: an index was left"
ok "a link named c0 in a sticky directory: not followed, exit 2"

# (b') a real directory c0 made by another uid
late sc 'mkdir "$T/sc/c0"; plant "$OTHER" "$T/sc/c0"' -n 1
refused sc "core directory '$T/sc/c0' is owned by uid $OTHER: refused"
[ -z "$(ls -A "$T/sc/c0")" ] || fail "another uid's c0: written to"
ok "another uid's c0 in a sticky directory: refused, exit 2"

# a link named .summary.json.tmp: replaced by a new file, never followed;
# the dump itself succeeds
late ss 'ln -s "$T/secret" "$T/ss/.summary.json.tmp"; plant "$OTHER" "$T/ss/.summary.json.tmp"' -n 5
[ "$rc" -eq 0 ] || { cat "$T/ss.err"; fail "a sticky directory with a planted temporary: exit $rc, expected 0"; }
untouched ".summary.json.tmp a link"
[ -f "$T/ss/summary.json" ] && [ ! -L "$T/ss/summary.json" ] || fail "summary.json is not a file of its own"
[ "$(json "$T/ss/summary.json" 'j["events"]')" -ge 5 ] || fail "summary.json: $(cat "$T/ss/summary.json")"
[ ! -e "$T/ss/.summary.json.tmp" ] || fail "a temporary was left"
ok "a link named .summary.json.tmp in a sticky directory: replaced, not followed; the dump is whole, exit 0"

kill -TERM "$DEMO_PID"; wait_pid "$DEMO_PID" 10
