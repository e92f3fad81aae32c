#!/usr/bin/env bash
# evs-demo -> evs-forward -> Kafka (the mock cluster, 3 brokers) ->
# evs-dump --kafka -> checked against the generator: every event the
# runtime committed is taken by the forwarder and acknowledged by Kafka, or
# counted lost; each acknowledged one is in the dump exactly once, byte for
# byte what evs-demo emitted, in the dump format of shared memory (one
# directory per host/producer), and the dump says which partitions it read.
. "$(dirname "$0")/lib.sh"

start_mock --topic "$TOPIC:6"
# the reader runs along, as it would in production (the mock keeps only the
# last 5 MiB of a partition: the test writes less than that in all)
start_kdump "$T/k" --until-idle 3 --group e2e
wait_for 'grep -qs "assigned partitions" "$T/k.stderr"' 30
start_demo --cores 3 --rate 1000 --events 200 --wait-consumers 10
start_forward --host kt-e2e
wait_pid "$DEMO_PID" 60 || fail "evs-demo exited with $?"
wait_pid "$FWD_PID" 60 || { cat "$T/fwd.err"; fail "evs-forward exited with $?"; }
cat "$T/fwd.err"
check_accounts
[ "$(fwd 'j["lost"]')" -eq 0 ] || fail "events were lost"
for c in 0 1 2; do
	[ "$(fwd "j['cores'][$c]['acked']")" -eq "$(fwd "j['cores'][$c]['committed']")" ] ||
		fail "core $c: not every committed event was acknowledged"
done
wait_pid "$KDUMP_PID" 60 || { cat "$T/k.stderr"; fail "evs-dump --kafka exited with $?"; }
cat "$T/k.stderr"
D=$T/k/kt-e2e/$NAME
[ -f "$D/index.jsonl" ] || fail "no dump directory $D (host/producer)"
ls -d "$D"/c0 "$D"/c1 "$D"/c2 >/dev/null || fail "a core directory is missing in $D"
verify "$D"
dumped_within "$D"
[ "$(wc -l <"$D/index.jsonl")" -eq "$(fwd 'j["acked"]')" ] || fail "the dump does not hold every acknowledged event"
# which partitions it read: those its cores came from, nothing else
"$PY" - "$T/k/summary.json" <<'PYEOF' || fail "the dump's summary does not say which partitions it read"
import json, sys
j = json.load(open(sys.argv[1]))
read = {p["partition"] for p in j["partitions"] if p["messages"]}
mine = {c["partition"] for s in j["sources"] for c in s["cores"]}
assert read and read == mine, (read, mine)
assert j["duplicates"] == 0 and j["torn"] == 0 and j["malformed"] == 0, j
print("partitions read: %s" % sorted(read))
PYEOF
grep -q "^evs-dump: read partitions [0-9]" "$T/k.stderr" || fail "the reader does not say which partitions it read"
ok "3 cores, $(fwd 'j["acked"]') events: forwarded, acknowledged, dumped once each, identical to what evs-demo emitted"
