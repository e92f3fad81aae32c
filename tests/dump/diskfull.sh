#!/usr/bin/env bash
# A disk that fills up while dumping: a clear error, the count of events
# that could not be written, exit 1, and never a partial .npy that looks
# valid (every file left is complete; no temporaries). The index goes on
# (its reserve), and when even it cannot be written it still ends on a
# whole line, the dump stops there, and summary.json is whole or absent.
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

# whole_or_absent DIR: every line of the index is whole JSON (it ends with
# a newline), and summary.json is absent or whole JSON, never empty
whole_or_absent() {
	"$PY" - "$1" <<'PYEOF'
import json, os, sys
d = sys.argv[1]
data = open(d + "/index.jsonl", "rb").read()
assert not data or data.endswith(b"\n"), "the index ends with a torn line: %r" % data[-80:]
for n, l in enumerate(data.splitlines(), 1):
    json.loads(l)
s = d + "/summary.json"
if os.path.exists(s):
    json.load(open(s))
    print("  summary.json: whole")
else:
    print("  summary.json: absent")
assert not [f for f in os.listdir(d) if f.endswith(".tmp")], "a temporary summary was left"
print("  index: %d whole lines" % len(data.splitlines()))
PYEOF
}

# A disk too small for the index's reserve (1 MiB): tensors fill it, then
# the index cannot take a line either. The dump stops at that event (its
# file is taken back), the index ends on a whole line, summary.json is
# whole or absent, and the verifiers check every line there is.
mkdir "$T/mini"
mount -t tmpfs -o size=1M evs-dumptest "$T/mini" || { skip "cannot mount a small tmpfs"; exit 77; }
MOUNTS+=("$T/mini")
start_demo --cores 2 --rate 2000 --events 3000 --wait-consumers 10
start_dump "$T/mini/m" --no-print
wait_pid "$DUMP_PID" 30; rc=$?
kill -TERM "$DEMO_PID" 2>/dev/null; wait_pid "$DEMO_PID" 30
[ "$rc" -eq 1 ] || { cat "$T/m.stderr"; fail "1 MiB disk: exit $rc, expected 1"; }
grep -q "cannot write $T/mini/m/index.jsonl: No space left on device; the dump stops" "$T/m.stderr" || { cat "$T/m.stderr"; fail "no error about the index"; }
grep -q "index.jsonl is incomplete (No space left on device): the dump stopped" "$T/m.stderr" || { cat "$T/m.stderr"; fail "no closing word about the index"; }
whole_or_absent "$T/mini/m" || fail "1 MiB disk: torn index or summary"
verify "$T/mini/m" --allow-missing
ok "1 MiB disk: the index ends on a whole line, the dump stopped there, summary.json whole or absent, exit 1"

# Smaller still (64 KiB), index only: the same, with no tensors at all.
mkdir "$T/tiny"
mount -t tmpfs -o size=64K evs-dumptest "$T/tiny" || { skip "cannot mount a small tmpfs"; exit 77; }
MOUNTS+=("$T/tiny")
start_demo --cores 2 --rate 2000 --events 500 --wait-consumers 10
start_dump "$T/tiny/i" --no-print --index-only
wait_pid "$DUMP_PID" 30; rc=$?
kill -TERM "$DEMO_PID" 2>/dev/null; wait_pid "$DEMO_PID" 30
[ "$rc" -eq 1 ] || { cat "$T/i.stderr"; fail "index disk full: exit $rc, expected 1"; }
grep -q "cannot write $T/tiny/i/index.jsonl: No space left on device" "$T/i.stderr" || { cat "$T/i.stderr"; fail "no error about the index"; }
grep -q "index.jsonl is incomplete (No space left on device)" "$T/i.stderr" || { cat "$T/i.stderr"; fail "no closing word about the index"; }
[ "$(wc -l <"$T/tiny/i/index.jsonl")" -lt 1000 ] || fail "the index was whole: the case did not happen"
whole_or_absent "$T/tiny/i" || fail "64 KiB disk: torn index or summary"
if [ ! -e "$T/tiny/i/summary.json" ]; then
	grep -q "cannot write $T/tiny/i/summary.json: No space left on device (none was left)" "$T/i.stderr" || { cat "$T/i.stderr"; fail "no error about summary.json"; }
fi
ok "index disk full: the index ends on a whole line, summary.json whole or absent, both said, exit 1"
