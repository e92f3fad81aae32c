#!/usr/bin/env bash
# A producer whose ring turns out corrupt after N good records (dump-peer
# corrupt N: the record after them claims more payload than the ring
# holds): evs-forward gives the stream up, says what was wrong in the
# library's words (core, position, size) and exits 1, as for any broken
# stream, without calling it closed by its producer; the N records before
# it were taken, acknowledged and are on the topic (evs-dump --kafka reads
# them back, each once, values intact), and the counts add up with the
# corrupt record left in the ring.
. "$(dirname "$0")/lib.sh"
PEER=$ROOT/$BUILD/tests/dump-peer
[ -x "$PEER" ] || fail "$PEER is not built (make $BUILD/tests/dump-peer)"
N=20

start_mock --topic "$TOPIC:2"
start_peer "$NAME" corrupt "$N"
start_forward --host kt
wait_pid "$FWD_PID" 30; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/fwd.err"; fail "evs-forward exited with $rc, expected 1 (a corrupt stream)"; }
[ -s "$T/fwd.json" ] || { cat "$T/fwd.err"; fail "evs-forward wrote no table"; }
check_accounts
[ "$(fwd 'j["cores"][0]["taken"]')" -eq "$N" ] || { cat "$T/fwd.err"; fail "taken $(fwd 'j["cores"][0]["taken"]'), not the $N records before the corrupt one"; }
[ "$(fwd 'j["cores"][0]["acked"]')" -eq "$N" ] || { cat "$T/fwd.err"; fail "acknowledged $(fwd 'j["cores"][0]["acked"]') of the $N records before the corrupt one"; }
[ "$(fwd 'j["cores"][0]["left"]')" -eq 1 ] || fail "the corrupt record is not the one left in the ring"
# the corrupt record starts where the taken ones end: each is its header
# and its payload (a multiple of 8 bytes, no padding) in the ring
pos=$(fwd 'j["cores"][0]["taken_bytes"]')
grep -q "^evs-forward: core 0: stream corrupt: the record at position $pos claims 1099511627776 payload bytes, more than the ring's" \
	"$T/fwd.err" || { cat "$T/fwd.err"; fail "the corruption is not named (core 0, position $pos, its size)"; }
# the stream was given up with a record in it: not a producer that closed
# its streams with everything taken
! grep -q "closed its streams" "$T/fwd.err" ||
	{ cat "$T/fwd.err"; fail "a corrupt stream is reported as closed with everything taken"; }
wait_pid "$PEER_PID" 20 || { cat "$T/peer.err"; fail "dump-peer exited with $?"; }
ok "a corrupt stream: '$(grep 'stream corrupt' "$T/fwd.err")', exit 1"

# what Kafka acknowledged is there: the N records, in order, each once
start_kdump "$T/k" --until-idle 2 --group corrupt
wait_pid "$KDUMP_PID" 60 || { cat "$T/k.stderr"; fail "evs-dump --kafka exited with $?"; }
D=$T/k/kt/$NAME
[ -f "$D/index.jsonl" ] || { cat "$T/k.stderr"; fail "no dump directory $D (host/producer)"; }
dumped_within "$D"
"$PY" - "$D" "$N" <<'PYEOF' || fail "the records before the corrupt one are not on the topic as emitted"
import json, sys
import numpy as np
d, n = sys.argv[1], int(sys.argv[2])
lines = [json.loads(l) for l in open(d + "/index.jsonl")]
assert [(l["core"], l["seq"]) for l in lines] == [(0, s) for s in range(n)], lines
for l in lines:
    assert l["kind"] == "tensor" and l["dtype"] == "float32" and l["shape"] == [2], l
    a = np.load("%s/%s" % (d, l["file"]))
    assert a.tolist() == [l["seq"], l["seq"]], (l, a)
PYEOF
ok "the $N records before the corrupt one: acknowledged, on the topic once each, values intact"
