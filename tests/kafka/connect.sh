#!/usr/bin/env bash
# evs-forward connects as evs-dump does (tools/common/follow.c): a signal
# while it waits for the producer is named, exit 2, nothing forwarded; a
# producer that ends while its cores are being connected leaves the cores
# already connected forwarded (dump-peer first-connect: 50 events on core
# 0 as soon as it has a consumer, then gone before core 1 is connected, in
# some of the runs), exit 0.
. "$(dirname "$0")/lib.sh"
PEER=$ROOT/$BUILD/tests/dump-peer
[ -x "$PEER" ] || fail "$PEER is not built (make tests)"

start_mock --topic "$TOPIC:2"

"$FWD" --brokers "$BROKERS" --topic "$TOPIC" --wait 30 nobody-$$ 2>"$T/w.err" &
pid=$!
PIDS+=("$pid")
sleep 1.5 # Kafka answered, the wait for the producer has begun
kill -INT "$pid"
wait_pid "$pid" 10; rc=$?
[ "$rc" -eq 2 ] && grep -q "SIGINT while waiting for producer 'nobody-$$'; nothing was forwarded" "$T/w.err" ||
	{ cat "$T/w.err"; fail "SIGINT while waiting: exit $rc"; }
ok "SIGINT while waiting for a producer: named, nothing forwarded, exit 2"

RUNS=${EVS_DISCOVERY_RUNS:-12}
raced=0
for i in $(seq 1 "$RUNS"); do
	name=$NAME-$i
	"$PEER" "$name" first-connect 50 2>"$T/peer$i.err" &
	peer=$!
	PIDS+=("$peer")
	"$FWD" --brokers "$BROKERS" --topic "$TOPIC" --host kt --wait 10 --json "$T/f$i.json" "$name" \
		2>"$T/f$i.err"; rc=$?
	wait_pid "$peer" 20 || { cat "$T/peer$i.err"; fail "run $i: dump-peer exited with $?"; }
	[ "$rc" -eq 0 ] || { cat "$T/f$i.err"; fail "run $i: evs-forward exited with $rc, expected 0"; }
	n=$(json "$T/f$i.json" 'sum(c["acked"] for c in j["cores"] if c["core"] == 0)')
	[ "$n" -eq 50 ] || { cat "$T/f$i.err"; fail "run $i: $n of core 0's 50 committed events acknowledged"; }
	grep -q "ended while its cores were being connected (core 1:" "$T/f$i.err" && raced=$((raced + 1))
done
ok "$RUNS runs, $raced of them with the producer gone before core 1 was connected: core 0's 50 events forwarded every time, exit 0"
[ "$raced" -gt 0 ] || echo "note: the race did not happen in $RUNS runs (EVS_DISCOVERY_RUNS=... for more)"
