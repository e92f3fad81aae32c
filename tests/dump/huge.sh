#!/usr/bin/env bash
# A tensor larger than the ring is dropped and counted as too big (by the
# producer's shared counters and as a gap in the index); nothing crashes and
# the events around it are dumped.
. "$(dirname "$0")/lib.sh"

# normal pages, so that the ring is exactly 1 MiB: the 60 events of a core
# (about 370 KB) fit in it whole, so nothing depends on the dumper keeping
# up; the huge tensor is the ring's size plus 4 KiB
export EVSTREAM_HUGEPAGES=off
start_demo --cores 2 --rate 2000 --events 60 --ring 1M --huge-at 5 --wait-consumers 10
start_dump "$T/h" --no-print
wait_pid "$DEMO_PID" 30 || fail "evs-demo exited with $?"
wait_pid "$DUMP_PID" 30 || { cat "$T/h.stderr"; fail "evs-dump exited with $?"; }
[ "$(json "$T/h/summary.json" 'j["cores"][0]["too_big"]')" -eq 1 ] || fail "core 0: too_big is not 1"
[ "$(json "$T/h/summary.json" 'j["cores"][1]["too_big"]')" -eq 0 ] || fail "core 1: too_big is not 0"
grep -q '"seq":5,"core":0,' "$T/h/index.jsonl" && fail "the huge event is in the index"
grep -q '"seq":6,"core":0,"ts_ns":[0-9]*,"gap":1,' "$T/h/index.jsonl" || fail "no gap of 1 before seq 6"
[ "$(wc -l <"$T/h/index.jsonl")" -eq 119 ] || fail "expected 119 events"
grep -q 'too_big' "$T/h.stderr" || fail "summary lacks the drop table"
verify "$T/h"
ok "a tensor larger than the 1 MiB ring: counted as too_big, a gap of 1, the other 119 events dumped"
