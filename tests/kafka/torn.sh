#!/usr/bin/env bash
# The reader never writes a torn record: messages written to the topic by
# kcat (so, anything a broken or hostile writer could put there) with a
# missing chunk, a chunk without its start, a key that would climb out of
# the dump directory and a header that does not match its message are
# counted and left out; the whole records and the complete chunked one
# around them are written. A record delivered again is a duplicate, skipped
# and counted (by the dump writer, as for every dump). Exit status 1, as
# for any event not written.
. "$(dirname "$0")/lib.sh"
[ -n "$KCAT" ] || { skip "kcat is not installed (make deps installs it)"; exit 77; }

start_mock --topic "$TOPIC:1"
mkdir "$T/msgs"
"$PY" - "$T/msgs" "$RECORDS_DIR" <<'PYEOF'
import sys
sys.dont_write_bytecode = True      # nothing left in the tree
sys.path.insert(0, sys.argv[2])
from records import record, put
d = sys.argv[1]
r = {s: record(s, "torn test %d" % s) for s in range(6)}
put(d, "0", r[0])                     # whole
put(d, "1a", r[1][:400])              # chunk 0/3 ...
put(d, "1c", r[1][800:])              # ... chunk 2/3: chunk 1 missing
put(d, "2b", r[2][600:])              # chunk 1/2 without chunk 0
put(d, "3", r[3])                     # whole
put(d, "4a", r[4][:600])              # chunk 0/2
put(d, "4b", r[4][600:])              # chunk 1/2: complete
put(d, "5", record(5, "lies about its size", 8))  # header says 8 bytes more
put(d, "6", r[0])                     # a key that climbs out of the directory
PYEOF
k=kt/torn/0
send() { kcat_send 0 "$@"; }  # send FILE KEY HEADER...
send 0 $k evs.seq=0 evs.type=1
send 1a $k evs.seq=1 evs.type=1 evs.chunk=0/3
send 1c $k evs.seq=1 evs.type=1 evs.chunk=2/3
send 2b $k evs.seq=2 evs.type=1 evs.chunk=1/2
send 3 $k evs.seq=3 evs.type=1
send 4a $k evs.seq=4 evs.type=1 evs.chunk=0/2
send 4b $k evs.seq=4 evs.type=1 evs.chunk=1/2
send 3 $k evs.seq=3 evs.type=1       # again, after 4: a duplicate
send 5 $k evs.seq=5 evs.type=1
send 6 ../../x/0 evs.seq=0 evs.type=1
start_kdump "$T/k" --until-idle 2 --group torn
wait_pid "$KDUMP_PID" 60; rc=$?
cat "$T/k.stderr"
[ "$rc" -eq 1 ] || fail "evs-dump --kafka exited with $rc, not 1"
[ "$(grep -o '"seq":[0-9]*' "$T/k/kt/torn/index.jsonl" | tr '\n' ' ')" = '"seq":0 "seq":3 "seq":4 ' ] ||
	fail "expected seqs 0, 3 and 4 in the index: $(cat "$T/k/kt/torn/index.jsonl")"
[ "$(json "$T/k/summary.json" '(j["torn"], j["orphan_chunks"], j["malformed"])')" = "(1, 2, 2)" ] ||
	fail "torn, orphan chunks, malformed: $(json "$T/k/summary.json" '(j["torn"], j["orphan_chunks"], j["malformed"])')"
dups=$(json "$T/k/summary.json" '(j["duplicates"], j["sources"][0]["cores"][0]["duplicates"])')
[ "$dups" = "(1, 1)" ] || fail "duplicates (all, core 0): $dups, not (1, 1)"
[ "$(ls "$T/k")" = "kt
summary.json" ] || fail "something was written outside the host directories: $(ls "$T/k")"
[ ! -e "$T/x" ] || fail "a key climbed out of the dump directory"
grep -q 'torn records' "$T/k.stderr" || fail "the reader does not say what it left out"
ok "a missing chunk, a chunk without its start, a lying header, a hostile key, a duplicate: counted, not written"
