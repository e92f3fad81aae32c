#!/usr/bin/env bash
# How evs-forward ends: SIGINT takes what the rings hold at that moment,
# waits for its acknowledgements and exits 0, the rest left in the rings
# (counted "left"); with every broker down, the acknowledgements do not come
# within --flush-timeout: what is unacknowledged is purged and counted lost
# as "shutdown", exit 1; a producer killed mid-run: its rings are drained
# and forwarded, exit 3. Every time, each core's counts add up.
# evs-dump --kafka killed mid-run leaves no summary.json, none half
# written, and a second reader will not write into what it left.
. "$(dirname "$0")/lib.sh"

start_mock --topic "$TOPIC:4" --topic "$TOPIC-2:4" --topic "$TOPIC-3:4"
start_demo --pattern all --cores 2 --rate 500 --seconds 30 --wait-consumers 10
start_forward --host kt
sleep 1.5
kill -INT "$FWD_PID"
wait_pid "$FWD_PID" 30 || { cat "$T/fwd.err"; fail "evs-forward exited with $? on SIGINT"; }
check_accounts
[ "$(fwd 'j["lost"]')" -eq 0 ] || fail "events lost on SIGINT"
[ "$(fwd 'j["acked"]')" -gt 0 ] || fail "nothing was forwarded before SIGINT"
start_kdump "$T/k" --until-idle 2 --group sig
wait_pid "$KDUMP_PID" 60 || { cat "$T/k.stderr"; fail "evs-dump --kafka exited with $?"; }
verify "$T/k/kt/$NAME" --pattern all >/dev/null
dumped_within "$T/k/kt/$NAME"
ok "SIGINT: $(fwd 'j["acked"]') events taken and acknowledged, exit 0, the counts add up"

# the same producer, still running: a second forwarder; then every broker
# down and SIGINT, with a flush timeout of 1 s
TOPIC=$TOPIC-2 start_forward --host kt --flush-timeout 1 -X reconnect.backoff.max.ms=500
sleep 1.5
mock_cmd down -1
sleep 0.5
kill -INT "$FWD_PID"
wait_pid "$FWD_PID" 30; rc=$?
mock_cmd up -1
cat "$T/fwd.err"
[ "$rc" -eq 1 ] || fail "evs-forward exited with $rc, not 1, with events unacknowledged"
check_accounts
[ "$(fwd 'sum(c["lost_shutdown"] for c in j["cores"])')" -gt 0 ] || fail "nothing counted lost as shutdown"
grep -q "not acknowledged within the flush timeout: purged" "$T/fwd.err" || fail "the purge is not said"
ok "brokers down at SIGINT: $(fwd 'sum(c["lost_shutdown"] for c in j["cores"])') events purged after 1 s and counted lost (shutdown), exit 1"
kill -TERM "$DEMO_PID"
wait_pid "$DEMO_PID" 30 || fail "evs-demo exited with $? on SIGTERM"

# a producer that dies: its committed records are still forwarded
start_demo --pattern all --cores 2 --rate 500 --seconds 30 --wait-consumers 10
TOPIC=$TOPIC-3 start_forward --host kt
sleep 1.5
kill -KILL "$DEMO_PID"
wait_pid "$FWD_PID" 30; rc=$?
[ "$rc" -eq 3 ] || { cat "$T/fwd.err"; fail "evs-forward exited with $rc, not 3, when its producer died"; }
grep -q "producer '$NAME' died" "$T/fwd.err" || fail "the death is not said"
check_accounts
[ "$(fwd 'j["lost"]')" -eq 0 ] || fail "events lost after the producer died"
ok "producer killed: $(fwd 'j["acked"]') events forwarded and acknowledged, exit 3"

# a reader killed mid-run: a summary.json appears only whole, at the end,
# so none is left (none half-written), and a second reader refuses the
# directory rather than writing into what the first one left
start_kdump "$T/killed" --group killed
wait_for '[ -n "$(find "$T/killed" -name index.jsonl -size +0 2>/dev/null)" ]' 30 ||
	{ cat "$T/killed.stderr"; fail "evs-dump --kafka wrote nothing to kill"; }
kill -KILL "$KDUMP_PID"
wait_pid "$KDUMP_PID" 30
left=$(find "$T/killed" -name 'summary.json*' -o -name '.summary.json*')
[ -z "$left" ] || fail "a killed evs-dump --kafka left $(echo $left) ($(stat -c %s $left | tr '\n' ' ')bytes)"
start_kdump "$T/killed" --until-idle 1 --group killed-2
wait_pid "$KDUMP_PID" 30; rc=$?
[ "$rc" -eq 2 ] || { cat "$T/killed.stderr"; fail "a reader into a killed one's directory exited with $rc, not 2"; }
grep -q "output directory '$T/killed' is not empty (it holds '" "$T/killed.stderr" || { cat "$T/killed.stderr"; fail "the refusal is not said"; }
ok "evs-dump --kafka killed: no summary.json left, the directory refused to a second reader"
