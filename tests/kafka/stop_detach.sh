#!/usr/bin/env bash
# A stop lets go of the rings as soon as evs-forward stops taking, not once
# Kafka has answered: with every broker down, SIGINT to a forwarder of a
# producer that goes on emitting at a steady rate. While the forwarder
# still waits for acknowledgements, a second consumer (evs-dump) attaches
# and takes what the rings hold and what comes after. The forwarder's
# table holds the rings' counters from the moment it let go, so every
# event the producer committed is in its table (taken, left) or was
# committed after it let go (and then read by evs-dump): per core,
# evs-demo's committed = taken + what evs-dump read, and the forwarder's
# committed is evs-demo's when evs-dump came, less the few events
# committed between its counters and the producer seeing it leave.
. "$(dirname "$0")/lib.sh"

RATE=500
start_mock --topic "$TOPIC:4"
start_demo --cores 3 --rate $RATE --seconds 7 --wait-consumers 10
start_forward --host kt --flush-timeout 5 -X reconnect.backoff.max.ms=500
wait_for 'grep -qs "partitions;" "$T/fwd.err"' 10
sleep 1
mock_cmd down -1
sleep 0.5
kill -INT "$FWD_PID"
# taking ends at once (the rings hold a few events, the queue has room);
# then 5 s of waiting for the brokers
sleep 1
kill -0 "$FWD_PID" 2>/dev/null || fail "evs-forward ended before the flush timeout, with every broker down"
# a second consumer is refused at once (busy) while a stream is held
start_dump "$T/d" --index-only --no-print
for _ in $(seq 50); do [ -s "$T/d/index.jsonl" ] && break; sleep 0.1; done
[ -s "$T/d/index.jsonl" ] || { cat "$T/d.stderr"; fail "evs-dump could not attach while evs-forward waited for Kafka"; }
kill -0 "$FWD_PID" 2>/dev/null || fail "evs-forward ended before evs-dump could attach: it held the rings until its end"
grep -q "stopped taking: [0-9]* events left in the rings for a later consumer; waiting up to [0-9.]* s for Kafka" \
	"$T/fwd.err" || { cat "$T/fwd.err"; fail "evs-forward did not say it stopped taking"; }
ok "SIGINT with every broker down: the rings let go of at once, evs-dump attached while evs-forward waited for Kafka"

wait_pid "$FWD_PID" 15; rc=$?
mock_cmd up -1
cat "$T/fwd.err"
[ "$rc" -eq 1 ] || fail "evs-forward exited with $rc, not 1, with events unacknowledged"
check_accounts
wait_pid "$DEMO_PID" 20 || fail "evs-demo exited with $?"
wait_pid "$DUMP_PID" 20 || { cat "$T/d.stderr"; fail "evs-dump exited with $?"; }
# the gap: events committed after the forwarder took the rings' counters
# and before the producer's socket thread saw it leave (a wakeup, well
# under a millisecond on an idle machine): allowed up to 0.2 s of events
"$PY" - "$T/fwd.json" "$T/d/summary.json" "$T/demo.err" $((RATE / 5)) <<'PYEOF' || fail "the counts of evs-demo, evs-forward and evs-dump do not agree"
import json, re, sys
fwd = {c["core"]: c for c in json.load(open(sys.argv[1]))["cores"]}
dump = {c["core"]: c for c in json.load(open(sys.argv[2]))["cores"]}
demo = {int(m.group(1)): int(m.group(2)) for m in
        re.finditer(r"core (\d+): \d+ events emitted, (\d+) committed", open(sys.argv[3]).read())}
bound = int(sys.argv[4])
assert sorted(demo) == sorted(fwd) == sorted(dump) == [0, 1, 2], (demo, fwd.keys(), dump.keys())
for core, committed in sorted(demo.items()):
    f, d = fwd[core], dump[core]
    # nothing committed went missing between the two consumers
    assert committed == f["released_before"] + f["taken"] + d["events"], (core, committed, f, d)
    # what the forwarder left in the ring, evs-dump found there
    assert f["left"] <= d["events"], (core, f["left"], d["events"])
    # committed when evs-dump came: from the producer seeing the forwarder
    # leave to evs-dump attaching, events drop (no_consumer)
    gap = d["produced_before"] - d["dropped_before"] - f["committed"]
    assert 0 <= gap <= bound, (core, "committed when evs-dump came", committed - gap,
                               "in the forwarder's table", f["committed"])
    print("core %d: evs-demo committed %d = taken %d + left %d + %d after the forwarder let go; "
          "evs-dump read %d" % (core, committed, f["taken"], f["left"], gap, d["events"]))
PYEOF
ok "every event evs-demo committed is counted by evs-forward (taken, left) or read by evs-dump after it"
