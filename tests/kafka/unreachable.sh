#!/usr/bin/env bash
# Kafka unreachable from the start: evs-forward names the brokers and says
# they are unreachable within its --timeout, exits 2 and never attaches to
# the runtime's rings, so the runtime runs at its pace with nothing
# blocking it (its events are dropped as no_consumer, counted). evs-dump
# --kafka says the same. Bad -X settings are refused by name.
. "$(dirname "$0")/lib.sh"

# a loopback port nobody listens on
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BROKERS=127.0.0.1:$port
start_demo --cores 2 --rate 1000 --events 2000 --wait-consumers 0
t0=$(date +%s%N)
start_forward --timeout 2
wait_pid "$FWD_PID" 30; rc=$?
t1=$(date +%s%N)
cat "$T/fwd.err"
[ "$rc" -eq 2 ] || fail "evs-forward exited with $rc, not 2"
grep -q "Kafka at '$BROKERS' is unreachable: no broker answered within 2 s" "$T/fwd.err" ||
	fail "evs-forward does not say that $BROKERS is unreachable"
[ ! -e "$T/fwd.json" ] || fail "evs-forward wrote a table though it forwarded nothing"
wait_pid "$DEMO_PID" 30 || fail "evs-demo exited with $?"
t2=$(date +%s%N)
grep -q "core 0: 2000 events emitted, 0 committed; dropped: ring_full 0, too_big 0, no_consumer 2000" "$T/demo.err" ||
	fail "the runtime did not emit its 2000 events per core unattended: $(cat "$T/demo.err")"
echo "evs-forward gave up after $(( (t1 - t0) / 1000000 )) ms; evs-demo emitted its 2 s of events in $(( (t2 - t0) / 1000000 )) ms"
ok "Kafka unreachable: evs-forward says so by name within its timeout, exit 2; the runtime ran unattended"

start_kdump "$T/k" --timeout 1
wait_pid "$KDUMP_PID" 30; rc=$?
[ "$rc" -eq 2 ] || fail "evs-dump --kafka exited with $rc, not 2"
grep -q "Kafka at '$BROKERS' is unreachable" "$T/k.stderr" || fail "evs-dump does not say $BROKERS is unreachable"
[ ! -e "$T/k" ] || fail "evs-dump left its output directory behind"
ok "evs-dump --kafka: the same, and no directory left"

"$FWD" --brokers "$BROKERS" --topic t -X linger.ms=fast "$NAME" 2>"$T/x.err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "\-X 'linger.ms=fast'" "$T/x.err" || fail "a bad -X value: exit $rc, $(cat "$T/x.err")"
"$FWD" --brokers "$BROKERS" --topic t -X no.such.setting=1 "$NAME" 2>"$T/x.err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "no.such.setting" "$T/x.err" || fail "an unknown -X key: exit $rc, $(cat "$T/x.err")"
"$FWD" --topic t "$NAME" 2>"$T/x.err"; rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--brokers is required" "$T/x.err" || fail "no --brokers: exit $rc"
"$FWD" --brokers "$BROKERS" --topic t -X message.max.bytes=2000 "$NAME" 2>"$T/x.err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "message.max.bytes 2000 is too small to carry records; allowed is 4096 to" "$T/x.err" || fail "a tiny message.max.bytes: exit $rc, $(cat "$T/x.err")"
ok "bad settings are refused by name, exit 2"
