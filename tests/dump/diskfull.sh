#!/usr/bin/env bash
# A disk that fills up while dumping: a clear error, the count of events
# that could not be written, exit 1, and never a partial .npy that looks
# valid (every file left is complete; no temporaries). The index goes on.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	skip "a full disk is simulated with a small tmpfs mount, which needs root"
	exit 77
fi
mkdir "$T/full"
mount -t tmpfs -o size=8M evs-dumptest "$T/full" || { skip "cannot mount tmpfs"; exit 77; }
MOUNTS+=("$T/full")

start_demo --cores 2 --rate 2000 --events 3000 --wait-consumers 10
start_dump "$T/full/d" --no-print
wait_pid "$DEMO_PID" 30 || fail "evs-demo"
wait_pid "$DUMP_PID" 30; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/d.stderr"; fail "disk full: exit $rc, expected 1"; }
grep -q "cannot write $T/full/d/c[01]/[0-9]*.npy: No space left on device" "$T/d.stderr" || { cat "$T/d.stderr"; fail "no clear error"; }
n=$(sed -n 's/^evs-dump: \([0-9]*\) events could not be written (No space left on device).*/\1/p' "$T/d.stderr")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "no count of the events not written"
[ "$(grep -c '"error":"No space left on device"' "$T/full/d/index.jsonl")" -eq "$n" ] || fail "index and count disagree"
[ "$(wc -l <"$T/full/d/index.jsonl")" -eq 6000 ] || fail "the index lost lines: $(wc -l <"$T/full/d/index.jsonl") of 6000"
[ -z "$(find "$T/full/d" -name '*.tmp')" ] || fail "temporaries left"
verify "$T/full/d" --allow-missing
ok "disk full: $n of 6000 events not written and counted, every .npy left is complete, index whole, exit 1"

# A disk too small even for the index's reserve: the index itself cannot be
# written. Its lost lines are an error (exit 1, said on stderr), and so is
# the summary.json that does not fit either.
mkdir "$T/tiny"
mount -t tmpfs -o size=64K evs-dumptest "$T/tiny" || { skip "cannot mount a small tmpfs"; exit 77; }
MOUNTS+=("$T/tiny")
start_demo --cores 2 --rate 2000 --events 500 --wait-consumers 10
start_dump "$T/tiny/i" --no-print --index-only
wait_pid "$DEMO_PID" 30 || fail "evs-demo"
wait_pid "$DUMP_PID" 30; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/i.stderr"; fail "index disk full: exit $rc, expected 1"; }
grep -q "cannot write $T/tiny/i/index.jsonl: No space left on device" "$T/i.stderr" || { cat "$T/i.stderr"; fail "no error about the index"; }
grep -q "index.jsonl is incomplete (No space left on device)" "$T/i.stderr" || { cat "$T/i.stderr"; fail "no closing word about the index"; }
grep -q "cannot write $T/tiny/i/summary.json: No space left on device" "$T/i.stderr" || { cat "$T/i.stderr"; fail "no error about summary.json"; }
[ "$(wc -l <"$T/tiny/i/index.jsonl")" -lt 1000 ] || fail "the index was whole: the case did not happen"
ok "index disk full: lost index lines and summary.json said, exit 1"
