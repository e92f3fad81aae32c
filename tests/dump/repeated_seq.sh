#!/usr/bin/env bash
# A producer whose sequence numbers repeat or go back (dump-peer dup-seq:
# 0 float32 [2], 0 again int32 [3], 2, 1, 4): .npy files are named by seq,
# so the repeat once replaced c0/000000000000.npy while its first index
# line still described the first tensor. Each such record is skipped, not
# indexed: said once as it happens and counted at the end and in
# summary.json ("skipped"), exit 1. The same through --raw and --convert,
# and --index-only: the three paths keep the same lines. evs-demo --verify
# takes a skipped record for a problem.
. "$(dirname "$0")/lib.sh"

start_peer "$NAME" dup-seq
start_dump "$T/x"
wait_pid "$PEER_PID" 20 || { cat "$T/peer.err"; fail "dump-peer exited with $?"; }
wait_pid "$DUMP_PID" 20; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/x.stderr"; fail "evs-dump exited with $rc, expected 1 (records skipped)"; }
grep -qF "core 0: a record with sequence number 0 is at or below 0, already dumped for that core: skipped" "$T/x.stderr" ||
	{ cat "$T/x.stderr"; fail "the first skipped record not said"; }
[ "$(grep -c "already dumped for that core" "$T/x.stderr")" -eq 1 ] || { cat "$T/x.stderr"; fail "said more than once"; }
grep -qF "2 records were skipped, not indexed" "$T/x.stderr" || { cat "$T/x.stderr"; fail "no count of the skipped records"; }
# skipped records are not previewed either
grep -qE '^(again|back) =' "$T/x.stdout" && { cat "$T/x.stdout"; fail "a skipped record was printed"; }
"$PY" - "$T/x" <<'PYEOF' || fail "index, files or summary"
import json, os, sys
import numpy as np
d = sys.argv[1]
recs = [json.loads(l) for l in open(d + "/index.jsonl")]
assert [(r["seq"], r["prefix"]) for r in recs] == [(0, "first ="), (2, "third ="), (4, "last =")], recs
files = [r["file"] for r in recs]
assert files == ["c0/%012d.npy" % s for s in (0, 2, 4)], files
a = np.load(os.path.join(d, "c0/000000000000.npy"))
assert a.dtype == np.float32 and a.shape == (2,) and list(a) == [1.5, 2.5], (a.dtype, a.shape, a)
assert sorted(os.listdir(d + "/c0")) == ["%012d.npy" % s for s in (0, 2, 4)], os.listdir(d + "/c0")
s = json.load(open(d + "/summary.json"))
assert s["events"] == 3 and s["skipped"] == 2, s
assert s["cores"][0]["events"] == 3 and s["cores"][0]["skipped"] == 2, s["cores"][0]
print("index: seqs 0, 2, 4; c0/000000000000.npy holds the first tensor, float32 (2,); 2 skipped in summary.json")
PYEOF
"$PY" demo/verify_dump.py "$T/x" >/dev/null || fail "verify_dump.py: the index and the files disagree"

strip() { sed 's/"ts_ns":[0-9]*,//' "$1"; }
# --raw keeps the same records, and its conversion writes the same lines
start_peer "$NAME" dup-seq
start_dump "$T/r" --raw --no-print
wait_pid "$PEER_PID" 20 || { cat "$T/peer.err"; fail "dump-peer (raw) exited with $?"; }
wait_pid "$DUMP_PID" 20; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/r.stderr"; fail "evs-dump --raw exited with $rc, expected 1"; }
[ "$(json "$T/r/summary.json" 'j["skipped"]')" -eq 2 ] || fail "--raw: summary.json skipped"
"$DUMP" --convert "$T/r" -o "$T/rn" 2>"$T/rn.err" || { cat "$T/rn.err"; fail "convert of the raw dump"; }
grep -q "skipped" "$T/rn.err" && { cat "$T/rn.err"; fail "convert skipped records the raw dump had kept out"; }
[ "$(strip "$T/x/index.jsonl")" = "$(strip "$T/rn/index.jsonl")" ] ||
	{ diff <(strip "$T/x/index.jsonl") <(strip "$T/rn/index.jsonl"); fail "converted index differs from the live one"; }

# --index-only: the same lines, without files
start_peer "$NAME" dup-seq
start_dump "$T/i" --index-only --no-print
wait_pid "$PEER_PID" 20 || { cat "$T/peer.err"; fail "dump-peer (index-only) exited with $?"; }
wait_pid "$DUMP_PID" 20; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/i.stderr"; fail "evs-dump --index-only exited with $rc, expected 1"; }
[ "$(sed 's/"ts_ns":[0-9]*,//; s/"file":[^,]*,//' "$T/i/index.jsonl")" = "$(sed 's/"ts_ns":[0-9]*,//; s/"file":[^,]*,//' "$T/x/index.jsonl")" ] ||
	{ cat "$T/i/index.jsonl"; fail "--index-only lines differ"; }
# evs-demo --verify counts a skipped record as a problem: evs-demo numbers
# each event once, in order, and no seq stands for a skipped one in the
# sum of lines, gaps and drops (the sum alone would add up without it)
start_demo --cores 1 --rate 0 --events 20 --wait-consumers 10
start_dump "$T/v" --no-print
wait_pid "$DEMO_PID" 30 || fail "evs-demo"
wait_pid "$DUMP_PID" 30 || { cat "$T/v.stderr"; fail "evs-dump of evs-demo exited with $?"; }
"$DEMO" --verify "$T/v" >/dev/null || fail "evs-demo --verify of a plain dump"
"$PY" - "$T/v/summary.json" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["skipped"] == 0 and j["cores"][0]["skipped"] == 0, j
j["skipped"] = j["cores"][0]["skipped"] = 1
json.dump(j, open(sys.argv[1], "w"), separators=(",", ":"))  # as evs-dump writes it
PYEOF
"$DEMO" --verify "$T/v" >"$T/v.verify" 2>&1 && { cat "$T/v.verify"; fail "evs-demo --verify passed a dump that skipped a record"; }
grep -qF "core 0: summary.json says 1 records were skipped" "$T/v.verify" || { cat "$T/v.verify"; fail "--verify: no word of the skipped record"; }

ok "seqs 0, 0, 2, 1, 4: the repeat and the step back skipped (said once, 2 in summary.json, exit 1), c0/000000000000.npy the first tensor; the same lines through --raw + --convert and --index-only; --verify fails a dump that skipped one"
