#!/usr/bin/env bash
# The broker leading every partition goes down in the middle of a run and
# comes back: evs-forward reconnects and goes on; librdkafka's queue, kept
# small here, fills while the broker is away, so the forwarder stops taking
# records and the runtime's small ring drops and counts (ring_full), never
# blocking it. Nothing taken is lost: every core's counts add up, the dump
# holds exactly the acknowledged events, and its gaps are the ring's drops.
# Then every broker goes down with a short message timeout: what cannot be
# delivered is counted lost as "timeout", and the counts still add up.
. "$(dirname "$0")/lib.sh"

export EVSTREAM_HUGEPAGES=off # rings of exactly --ring bytes
start_mock --topic "$TOPIC:4" --leader 1
start_kdump "$T/k" --until-idle 3 --group down
wait_for 'grep -qs "assigned partitions" "$T/k.stderr"' 30
start_demo --pattern all --cores 2 --rate 300 --events 1000 --ring 128K --wait-consumers 10
start_forward --host kt -X queue.buffering.max.messages=200 -X reconnect.backoff.max.ms=500
sleep 1
mock_cmd down 1
sleep 1.5
mock_cmd up 1
wait_pid "$DEMO_PID" 60 || fail "evs-demo exited with $?"
wait_pid "$FWD_PID" 60 || { cat "$T/fwd.err"; fail "evs-forward exited with $?"; }
cat "$T/fwd.err"
check_accounts
[ "$(fwd 'j["lost"]')" -eq 0 ] || fail "events were lost with the broker back"
[ "$(fwd 'j["queue_full"]')" -gt 0 ] || fail "librdkafka's queue never filled: the outage was not felt"
wait_pid "$KDUMP_PID" 60 || { cat "$T/k.stderr"; fail "evs-dump --kafka exited with $?"; }
D=$T/k/kt/$NAME
verify "$D" --pattern all
"$PY" - "$T/fwd.json" "$D/index.jsonl" <<'PYEOF' || fail "the dump does not hold exactly the acknowledged events"
import json, sys
fwd = json.load(open(sys.argv[1]))
lines = [json.loads(l) for l in open(sys.argv[2])]
for c in fwd["cores"]:
    mine = [l for l in lines if l["core"] == c["core"]]
    seqs = [l["seq"] for l in mine]
    assert len(seqs) == len(set(seqs)) == c["acked"], (c["core"], len(seqs), c["acked"])
    gaps = sum(l["gap"] for l in mine)
    # drops after the last committed event leave no gap behind them
    assert gaps <= c["ring_full"], (c["core"], gaps, c["ring_full"])
    print("core %d: %d events dumped = acknowledged; %d lost in ring_full drops (%d seen as gaps)"
          % (c["core"], len(seqs), c["ring_full"], gaps))
PYEOF
ok "broker 1 down 1.5 s and back: nothing lost beyond the ring's counted drops; counts add up"

# All brokers down, short message timeout: lost as "timeout", counted.
mock_cmd topic "$TOPIC-2" 4
start_demo --pattern all --cores 2 --rate 500 --events 1000 --wait-consumers 10
"$FWD" --brokers "$BROKERS" --topic "$TOPIC-2" --host kt --wait 10 --summary --json "$T/fwd.json" \
	-X message.timeout.ms=1500 -X queue.buffering.max.messages=200 -X reconnect.backoff.max.ms=500 "$NAME" 2>"$T/fwd.err" &
FWD_PID=$!
PIDS+=("$FWD_PID")
sleep 1
mock_cmd down -1
sleep 3
mock_cmd up -1
wait_pid "$DEMO_PID" 60 || fail "evs-demo exited with $?"
wait_pid "$FWD_PID" 60; rc=$?
cat "$T/fwd.err"
[ "$rc" -eq 1 ] || fail "evs-forward exited with $rc, not 1, after losing events"
check_accounts
[ "$(fwd 'sum(c["lost_timeout"] for c in j["cores"])')" -gt 0 ] || fail "no event was lost as timeout"
grep -q 'not acknowledged by Kafka' "$T/fwd.err" || fail "the loss is not said"
TOPIC=$TOPIC-2 start_kdump "$T/k2" --until-idle 2 --group down2
wait_pid "$KDUMP_PID" 60 || { cat "$T/k2.stderr"; fail "evs-dump --kafka exited with $?"; }
verify "$T/k2/kt/$NAME" --pattern all >/dev/null
dumped_within "$T/k2/kt/$NAME"
ok "all brokers down 3 s with a 1.5 s message timeout: $(fwd 'sum(c["lost_timeout"] for c in j["cores"])') events counted lost as timeout, counts add up"
