#!/usr/bin/env bash
# --flush-timeout runs from the stop, also while librdkafka's queue is full
# and every broker is away: evs-forward stops taking when it passes (what
# it did not take stays in the ring, counted left), purges what is queued
# (counted shutdown) and ends, rather than waiting for message.timeout.ms
# to make room. The sentence that says so counts what the purge settled by
# the cause the table counts it under: a record sent in chunks whose first
# chunk timed out before the purge is lost as timeout, not shutdown.
. "$(dirname "$0")/lib.sh"

GEN=$ROOT/$BUILD/kafka-gen
[ -x "$GEN" ] || fail "$GEN is not built (make kafka-tools)"
export EVSTREAM_HUGEPAGES=off # rings of the sizes below

# start_gen SIZE COUNT: kafka-gen's producer $NAME of one core (a full ring
# is tried again until the forwarder leaves), its stderr in $T/gen.err.
start_gen() {
	"$GEN" produce "$NAME" "$1" "$2" 2>"$T/gen.err" &
	GEN_PID=$!
	PIDS+=("$GEN_PID")
}

# stop_forward FLUSH: SIGINT, then the forwarder must end, exit 1, within
# FLUSH seconds and a little; its stderr shown.
stop_forward() {
	local t0 t1
	t0=$(date +%s%N)
	kill -INT "$FWD_PID"
	wait_pid "$FWD_PID" $(($1 + 6)); rc=$?
	t1=$(date +%s%N)
	ELAPSED=$(((t1 - t0) / 1000000))
	cat "$T/fwd.err"
	[ "$rc" -eq 1 ] || fail "evs-forward exited with $rc, not 1, with events purged"
	[ "$ELAPSED" -le $(($1 * 1000 + 1500)) ] ||
		fail "evs-forward ended $ELAPSED ms after SIGINT, with --flush-timeout $1"
}

# Records of 3 MB (in chunks), a queue of 8 MiB, every broker down and a
# message timeout of 15 s: the queue stays full. With --flush-timeout 2
# the forwarder ends 2 s after SIGINT; nothing is lost as timeout.
start_mock --topic "$TOPIC:1"
start_forward --host kt --flush-timeout 2 -X queue.buffering.max.kbytes=8192 -X message.timeout.ms=15000 \
	-X reconnect.backoff.max.ms=500
wait_for 'grep -qs "partitions;" "$T/fwd.err"' 10
mock_cmd down -1
start_gen 3000000 8
wait_pid "$GEN_PID" 10 || { cat "$T/gen.err"; fail "kafka-gen exited with $?"; }
sleep 1
stop_forward 2
mock_cmd up -1
check_accounts
committed=$(sed -n 's/^kafka-gen: \([0-9]*\) events of .* committed.*/\1/p' "$T/gen.err")
[ "$committed" = "$(fwd 'j["cores"][0]["committed"]')" ] ||
	fail "kafka-gen committed $committed events, the forwarder's table $(fwd 'j["cores"][0]["committed"]')"
[ "$(fwd 'j["cores"][0]["left"]')" -gt 0 ] || fail "the queue was never full: nothing was left in the ring"
[ "$(fwd 'j["cores"][0]["lost_timeout"]')" -eq 0 ] || fail "events lost as timeout, not purged at the flush timeout"
[ "$(fwd 'j["cores"][0]["lost_shutdown"]')" -eq "$(fwd 'j["lost"]')" ] || fail "not every lost event counted shutdown"
ok "queue full, brokers down: ended ${ELAPSED} ms after SIGINT (--flush-timeout 2), $(fwd 'j["lost"]') purged (shutdown), $(fwd 'j["cores"][0]["left"]') left in the ring"

# Records of 20000 bytes in chunks of 2928 (message.max.bytes 4096), a
# queue of 10 messages, a ring of 3 records, every broker down, a message
# timeout of 1 s: each second the queue's messages time out, and the
# record whose first chunks they were gets its other chunks queued. At the
# flush timeout one such record is still in flight: purged, it counts as
# timeout (its first failed chunk), and the sentence says so.
NAME=$NAME-2
TOPIC=$TOPIC-2
mock_cmd up -1
mock_cmd topic "$TOPIC" 1
start_forward --host kt --flush-timeout 1 -X message.max.bytes=4096 -X queue.buffering.max.messages=10 \
	-X message.timeout.ms=1000 -X reconnect.backoff.max.ms=500
wait_for 'grep -qs "partitions;" "$T/fwd.err"' 10
mock_cmd down -1
EVSTREAM_RING_BYTES=65536 start_gen 20000 100000
sleep 2.5
stop_forward 1
mock_cmd up -1
check_accounts
"$PY" - "$T/fwd.json" "$T/fwd.err" <<'PYEOF' || fail "the purge sentence does not agree with the table"
import json, re, sys
j = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read()
m = re.search(r"(\d+) events not acknowledged within the flush timeout: purged and counted lost "
              r"(\(shutdown\)|as ([^(]*) \(a record sent in chunks counts under the cause of its "
              r"first failed chunk\))\n", err)
assert m, "no purge sentence"
if m.group(3):
    said = {k: int(n) for n, k in (p.split() for p in m.group(3).split(", "))}
else:
    said = {"shutdown": int(m.group(1))}
table = {k[5:]: sum(c[k] for c in j["cores"]) for k in j["cores"][0]
         if k.startswith("lost_") and k != "lost_bytes"}
print("said:", said, "table:", table)
assert sum(said.values()) == int(m.group(1)), said
# shutdown is counted only by the purge; other causes may have counted
# records before it too
assert said.get("shutdown", 0) == table["shutdown"], (said, table)
for k, n in said.items():
    assert 0 < n <= table[k], (k, said, table)
# the record in flight whose first chunk had timed out
assert said.get("timeout", 0) > 0, said
PYEOF
ok "chunks timing out at the purge: ended ${ELAPSED} ms after SIGINT, the sentence counts by the table's causes"
