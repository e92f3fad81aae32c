#!/usr/bin/env bash
# A consumer's handover while an emit is in flight, the interleaving made by
# gdb on every run (tests/handover_race.c, .py): every committed record must
# reach the consumer that left or the one that took over.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
prog=$BUILD/tests/progs/handover_race
command -v gdb >/dev/null || { echo "handover_race: SKIP: no gdb (make deps installs it)"; exit 0; }
[ -x "$prog" ] || { echo "handover_race: $prog not built (make tests)"; exit 1; }
d=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null; rm -rf "$d"' EXIT
chmod 700 "$d"
mkfifo "$d/in"
# gdb's command loop waits on this stdin while the program runs; kept
# open until gdb quits, which the script makes it do
EVSTREAM_RUNTIME_DIR=$d timeout 120 gdb -q -nx -x tests/handover_race.py \
  --args "$prog" < "$d/in" > "$d/out" 2>&1 &
g=$!
exec 3>"$d/in"
wait $g
rc=$?
exec 3>&-
grep -E '^(gdb:|emit|committed|handover_race:)' "$d/out"
case $rc in
0) echo "ok: a handover walking over an emit in flight lost nothing" ;;
1) echo "FAIL: a committed record never reached a consumer"; exit 1 ;;
*) echo "FAIL: the interleaving was not made (exit $rc):"; tail -20 "$d/out"; exit 1 ;;
esac
