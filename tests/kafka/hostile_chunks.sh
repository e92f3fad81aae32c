#!/usr/bin/env bash
# Messages no evs-forward writes, put on the topic by kcat (what fuzz_kafka
# found): a record without a key; an empty (null) chunk in a record's
# middle; a first chunk whose header claims a 4 GiB record; a host named
# summary.json, the reader's own file; a record whose first chunk is on
# partition 0 and the others on partition 1. Each is counted and not
# written, the whole records around them are. The reader runs with 3 GiB
# of address space: it holds what came, not what a header claims, so the
# claim is a record torn when the next one begins, not one refused for
# want of memory. Exit status 1, as for any event not written. A second
# reader of the same group reads nothing: every message was taken, the
# first chunk of the record torn across partitions too (its partition's
# offset is stored when the tear is found, not at its next message). The
# mock cluster lets the second in once the first one's session ends (6 s).
. "$(dirname "$0")/lib.sh"
[ -n "$KCAT" ] || { skip "kcat is not installed (make deps installs it)"; exit 77; }

start_mock --topic "$TOPIC:2"
mkdir "$T/msgs"
"$PY" - "$T/msgs" "$RECORDS_DIR" <<'PYEOF'
import sys
sys.dont_write_bytecode = True      # nothing left in the tree
sys.path.insert(0, sys.argv[2])
from records import header, record, put
d = sys.argv[1]
r = {s: record(s, "hostile chunks %d" % s) for s in range(7)}
for s in (0, 3, 5):
    put(d, str(s), r[s])
put(d, "1a", r[1][:400]); put(d, "1c", r[1][400:])                   # 0/3, (null 1/3), 2/3
put(d, "4a", header(4, (4 << 30) - 64) + bytes(1024))              # 0/N of a 4 GiB record
put(d, "6a", r[6][:400]); put(d, "6b", r[6][400:800]); put(d, "6c", r[6][800:])
PYEOF
n4=$(( ((4 << 30) + 1088 - 1) / 1088 ))
k=kt/hostile/0
send() { kcat_send "$@"; }  # send PARTITION FILE KEY HEADER...
send 0 0 - evs.seq=0 evs.type=1
send 0 0 $k evs.seq=0 evs.type=1
send 0 1a $k evs.seq=1 evs.type=1 evs.chunk=0/3
send 0 - $k evs.seq=1 evs.type=1 evs.chunk=1/3
send 0 1c $k evs.seq=1 evs.type=1 evs.chunk=2/3
send 0 3 $k evs.seq=3 evs.type=1
send 0 4a $k evs.seq=4 evs.type=1 evs.chunk=0/$n4
send 0 5 $k evs.seq=5 evs.type=1
send 0 0 summary.json/p/0 evs.seq=0 evs.type=1
send 0 6a $k evs.seq=6 evs.type=1 evs.chunk=0/3
(
	ulimit -v $((3 << 20))
	exec "$DUMP" --kafka "$BROKERS" --topic "$TOPIC" --output "$T/k" --summary --no-print --progress \
		--until-idle 5 --group hostile -X session.timeout.ms=6000 >"$T/k.stdout" 2>"$T/k.stderr"
) &
KDUMP_PID=$!
PIDS+=("$KDUMP_PID")
# the rest of record 6 on partition 1, once partition 0 is read
wait_for 'grep -qs "from 10 messages" "$T/k.stderr"' 30 || fail "partition 0 was not read: $(cat "$T/k.stderr")"
send 1 6b $k evs.seq=6 evs.type=1 evs.chunk=1/3
send 1 6c $k evs.seq=6 evs.type=1 evs.chunk=2/3
wait_pid "$KDUMP_PID" 60; rc=$?
tr '\r' '\n' <"$T/k.stderr" | sed 's/\x1b\[K//' | grep -v -e '^$' -e '^ *[0-9.]*s '
[ "$rc" -eq 1 ] || fail "evs-dump --kafka exited with $rc, not 1"
[ -f "$T/k/summary.json" ] || fail "no summary.json: $(ls -l "$T/k")"
[ "$(grep -o '"seq":[0-9]*' "$T/k/kt/hostile/index.jsonl" | tr '\n' ' ')" = '"seq":0 "seq":3 "seq":5 ' ] ||
	fail "expected seqs 0, 3 and 5 in the index: $(cat "$T/k/kt/hostile/index.jsonl")"
got=$(json "$T/k/summary.json" '(j["messages"], j["malformed"], j["torn"], j["orphan_chunks"], j["refused"])')
# keyless: malformed; record 1: torn at its null chunk, it and 2/3
# orphans; the 4 GiB claim: torn when record 5 begins; summary.json/p:
# refused; record 6: torn at 1/3 on partition 1, 1/3 and 2/3 orphans
[ "$got" = "(12, 1, 3, 4, 1)" ] ||
	fail "messages, malformed, torn, orphan chunks, refused: $got, not (12, 1, 3, 4, 1)"
[ "$(ls "$T/k")" = "kt
summary.json" ] || fail "a host took the summary's name: $(ls -l "$T/k")"
ok "no key, a null chunk, a 4 GiB claim, a host named summary.json, a record on two partitions: counted, not written"

"$DUMP" --kafka "$BROKERS" --topic "$TOPIC" --output "$T/k2" --summary --no-print \
	--until-idle 3 --seconds 60 --group hostile >"$T/k2.stdout" 2>"$T/k2.stderr"; rc=$?
got=$(json "$T/k2/summary.json" '(j["messages"], j["torn"], j["unfinished"])')
[ "$rc" -eq 0 ] && [ "$got" = "(0, 0, 0)" ] ||
	{ cat "$T/k2.stderr"; fail "a second reader of the group: exit $rc, messages, torn, unfinished: $got, not (0, 0, 0)"; }
ok "a second reader of the group reads nothing again: every offset stored"
