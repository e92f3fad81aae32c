#!/usr/bin/env bash
# Drops after a core's last dumped event: no later line shows them as a
# gap, so they are accounted from the producer's counters. evs-dump's
# summary says them, and evs-demo --verify says the events after the last
# line (dropped, or committed and not read) and checks that the index's
# gaps and those drops make the producer's count; a summary that cannot
# add up is a mismatch (exit 1).
. "$(dirname "$0")/lib.sh"

# A dumper stopped (SIGSTOP) while the producer bursts into a 1 MiB ring
# until its end: once the ring is full every later event is dropped, so
# they all come after the last event the dumper can read.
start_demo --cores 1 --ring 1M --rate 200 --events 3040 --burst-at 40 --burst 3000 --wait-consumers 10
start_dump "$T/d" --no-print
wait_for "[ \"\$(wc -l 2>/dev/null <'$T/d/index.jsonl'  || echo 0)\" -ge 10 ]" 10
kill -STOP "$DUMP_PID"
wait_pid "$DEMO_PID" 30 || fail "evs-demo exited with $?"
kill -CONT "$DUMP_PID"
wait_pid "$DUMP_PID" 30 || { cat "$T/d.stderr"; fail "evs-dump exited with $?"; }

full=$(json "$T/d/summary.json" 'j["cores"][0]["ring_full"]')
gaps=$(json "$T/d/summary.json" 'j["cores"][0]["gaps"]')
last=$(tail -1 "$T/d/index.jsonl" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["seq"])')
[ "$full" -gt 0 ] || fail "no drops: the ring held the whole burst"
tail_n=$((full - gaps))
[ "$tail_n" -gt 0 ] && [ "$tail_n" -eq $((3040 - 1 - last)) ] ||
	fail "ring_full $full, gaps $gaps, last seq $last: expected every event after seq $last dropped"
grep -qF "core 0: $tail_n of its drops came after the last event read (seq $last): no later event shows them as a gap" "$T/d.stderr" ||
	{ cat "$T/d.stderr"; fail "evs-dump's summary does not say the $tail_n drops after the last event"; }
ok "evs-dump: ring_full $full, $gaps in gaps, $tail_n after the last event read (seq $last): said"

"$DEMO" --verify "$T/d" >"$T/v.out" 2>&1 || { cat "$T/v.out"; fail "evs-demo --verify: exit $?"; }
grep -qF "verify: core 0: $tail_n events after its last index line (seq $last): $tail_n dropped (the producer counted $full drops since the dump connected, $gaps of them shown as gaps)" "$T/v.out" &&
	grep -qF "$gaps events lost in gaps and $tail_n dropped after the last line of their core, as the producer counted" "$T/v.out" ||
	{ cat "$T/v.out"; fail "evs-demo --verify does not account the drops after the last line"; }
"$PY" demo/verify_dump.py "$T/d" >/dev/null || fail "verify_dump.py"
ok "evs-demo --verify: $(head -1 "$T/v.out")"

# a summary whose counts cannot be the index's: one event fewer offered
# than the index and its gaps take
cp -a "$T/d" "$T/bad"
"$PY" - "$T/bad/summary.json" <<'PY'
import json, sys
p = sys.argv[1]; j = json.load(open(p))
c = j["cores"][0]; c["produced"] = c["events"] + c["gaps"] - 1
json.dump(j, open(p, "w"), separators=(",", ":"))
PY
"$DEMO" --verify "$T/bad" >"$T/bad.out" 2>&1 && { cat "$T/bad.out"; fail "a summary that cannot add up passed"; }
grep -qF "core 0: since the dump connected the producer offered" "$T/bad.out" || { cat "$T/bad.out"; fail "the mismatch is not said"; }
ok "a summary that cannot add up: $(grep -F 'the producer offered' "$T/bad.out"), exit 1"

# a second dump of the same producer: the seqs the first one read are
# gaps of its first line, not drops since it connected
start_demo --cores 1 --rate 1000 --events 400 --wait-consumers 10
start_dump "$T/first" --no-print -n 100
wait_pid "$DUMP_PID" 30 || fail "the first dump exited with $?"
start_dump "$T/second" --no-print
wait_pid "$DUMP_PID" 30 || { cat "$T/second.stderr"; fail "the second dump exited with $?"; }
"$DEMO" --verify "$T/second" >"$T/v2.out" 2>&1 || { cat "$T/v2.out"; fail "--verify of a second dump: exit $?"; }
ok "a second dump of one producer: $(tail -1 "$T/v2.out")"
