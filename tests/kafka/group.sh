#!/usr/bin/env bash
# Several machines, several readers: two runtimes, each with its own
# evs-forward under its own host name (as on two machines), publish to one
# topic. Two evs-dump --kafka in one consumer group share its partitions:
# each says which it read, and together they hold every acknowledged event
# (once each, unless a partition moved between them in a rebalance: then
# what the first could not commit is read again by the second). A third reader in a group of its own reads the whole topic
# into one dump, with a directory per host and producer.
. "$(dirname "$0")/lib.sh"

start_mock --topic "$TOPIC:6"
A=$NAME-a B=$NAME-b
NAME=$A start_demo --cores 2 --rate 1000 --events 200 --wait-consumers 10; DA=$DEMO_PID
NAME=$B start_demo --pattern all --cores 2 --rate 1000 --events 400 --wait-consumers 10; DB=$DEMO_PID
"$FWD" --brokers "$BROKERS" --topic "$TOPIC" --host machine-a --wait 10 --json "$T/fa.json" "$A" 2>"$T/fa.err" &
FA=$!
"$FWD" --brokers "$BROKERS" --topic "$TOPIC" --host machine-b --wait 10 --json "$T/fb.json" "$B" 2>"$T/fb.err" &
FB=$!
PIDS+=("$FA" "$FB")
for p in "$DA" "$DB"; do wait_pid "$p" 60 || fail "evs-demo exited with $?"; done
wait_pid "$FA" 60 || { cat "$T/fa.err"; fail "evs-forward of machine-a exited with $?"; }
wait_pid "$FB" 60 || { cat "$T/fb.err"; fail "evs-forward of machine-b exited with $?"; }
# two readers of one group, started together: they share the partitions
# (one that joins late takes over partitions from the other, which commits
# what it read before handing them over)
# a member that stops answering is given up after 6 s, not Kafka's 45
start_kdump "$T/r1" --until-idle 3 --group shared -X session.timeout.ms=6000; R1=$KDUMP_PID
start_kdump "$T/r2" --until-idle 3 --group shared -X session.timeout.ms=6000; R2=$KDUMP_PID
wait_pid "$R1" 60 || { cat "$T/r1.stderr"; fail "reader 1 exited with $?"; }
wait_pid "$R2" 60 || { cat "$T/r2.stderr"; fail "reader 2 exited with $?"; }
grep -h "partitions" "$T/r1.stderr" "$T/r2.stderr" | sed 's/^/  /'
"$PY" - "$T" "$A" "$B" <<'PYEOF' || fail "the two readers do not hold every event (see above)"
import json, os, sys
t, a, b = sys.argv[1:]
seen = {}
for r in ("r1", "r2"):
    j = json.load(open("%s/%s/summary.json" % (t, r)))
    mine = set()
    for s in j["sources"]:
        d = "%s/%s/%s/%s" % (t, r, s["host"], s["producer"])
        for l in open(d + "/index.jsonl"):
            l = json.loads(l)
            k = (s["host"], s["producer"], l["core"], l["seq"])
            assert k not in mine, "%s twice in the dump of %s" % (k, r)
            mine.add(k)
            seen.setdefault(k, []).append(r)
    read = {p["partition"] for p in j["partitions"] if p["messages"]}
    cores = {c["partition"] for s in j["sources"] for c in s["cores"]}
    assert read == cores, (r, read, cores)
    print("%s read partitions %s: %d events" % (r, sorted(read), len(mine)))
for host, name, f in (("machine-a", a, "fa"), ("machine-b", b, "fb")):
    fwd = json.load(open("%s/%s.json" % (t, f)))
    assert fwd["lost"] == 0 and fwd["host"] == host, fwd
    for c in fwd["cores"]:
        n = sum(1 for k in seen if k[:3] == (host, name, c["core"]))
        assert n == c["acked"] == c["committed"], (host, c["core"], n, c["acked"])
both = sum(1 for v in seen.values() if len(v) > 1)
moved = any("handing over" in open("%s/%s.stderr" % (t, r)).read() for r in ("r1", "r2"))
# a reader that loses a partition in a rebalance may not get to commit
# what it read (commits are refused while the group rebalances): the next
# owner reads those records again
assert not both or moved, "%d events in both dumps though no partition moved" % both
print("%d events from 2 hosts x 2 cores, each in one of the dumps%s"
      % (len(seen), "" if not both else "; %d read twice around a rebalance" % both))
PYEOF
for r in r1 r2; do
	for d in "$T/$r"/machine-a/"$A" "$T/$r"/machine-b/"$B"; do
		[ -d "$d" ] || continue
		case $d in *machine-b*) p=(--pattern all) ;; *) p=() ;; esac
		verify "$d" "${p[@]}" >/dev/null
	done
done
ok "two readers in one group share the partitions: every event in one of them, verified"

start_kdump "$T/all" --until-idle 2 --group everything
wait_pid "$KDUMP_PID" 60 || { cat "$T/all.stderr"; fail "the third reader exited with $?"; }
verify "$T/all/machine-a/$A"
verify "$T/all/machine-b/$B" --pattern all
[ "$(json "$T/all/summary.json" 'j["events"]')" -eq 1200 ] || fail "the third reader did not read all 1200 events"
ok "a reader of its own group: one dump, a directory per host and producer, all 1200 events"
