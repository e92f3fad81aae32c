#!/usr/bin/env bash
# Tensors that contradict themselves, written by hand past emit_tensor: a
# float32 with elem_size 8 and an int8 with elem_size 3 are indexed as
# "bad" (no .npy of wrong values, no preview of memory that is not there),
# exit 1. Empty tensors of any shape are valid; those whose shape NumPy
# cannot represent get their index line and no .npy; every .npy written
# loads with NumPy.
. "$(dirname "$0")/lib.sh"

start_peer "$NAME" contradict
start_dump "$T/x"
wait_pid "$PEER_PID" 20 || { cat "$T/peer.err"; fail "dump-peer exited with $?"; }
wait_pid "$DUMP_PID" 20; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/x.stderr"; fail "evs-dump exited with $rc, expected 1 (malformed events)"; }
grep -q "2 malformed events were indexed as \"bad\"" "$T/x.stderr" || { cat "$T/x.stderr"; fail "no word of the bad events"; }
grep -q "3 empty tensors have shapes NumPy cannot represent" "$T/x.stderr" || { cat "$T/x.stderr"; fail "no word of the unrepresentable shapes"; }
# no preview of the contradicting ones (the int8 one would print memory
# the payload does not hold)
grep -q 'as [38] bytes' "$T/x.stdout" && { cat "$T/x.stdout"; fail "a contradicting tensor was previewed"; }
"$PY" - "$T/x" <<'PYEOF' || fail "index"
import json, os, sys
d = sys.argv[1]
recs = [json.loads(l) for l in open(d + "/index.jsonl")]
assert len(recs) == 8, len(recs)
kinds = [r["kind"] for r in recs]
assert kinds == ["bad", "bad"] + ["tensor"] * 6, kinds
assert all(r["file"] is None for r in recs[:2])
by = {r["prefix"]: r for r in recs[2:]}
unfit = ["f32 (0, 2^63-1) =", "f32 (2^33, 2^33, 0) =", "i8 (0, 2^64-1) ="]
for p in unfit:
    r = by[p]
    assert r["file"] is None and "NumPy cannot represent" in r["note"] and r["bytes"] == 0, r
assert by["f32 (2^33, 2^33, 0) ="]["shape"] == [2**33, 2**33, 0]
assert by["i8 (0, 2^64-1) ="]["shape"] == [0, 2**64 - 1]
for p in ["i8 (0, 2^63-1) =", "u8 (0, 2^31, 2^31) =", "good ="]:
    assert by[p]["file"] and "note" not in by[p], by[p]
s = json.load(open(d + "/summary.json"))
assert s["bad"] == 2 and s["unrepresentable"] == 3, s
npys = [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".npy")]
assert len(npys) == 3, npys
print("index: 2 bad, 3 empty tensors without .npy (true shapes kept), 3 .npy files")
PYEOF
"$PY" demo/verify_dump.py "$T/x" || fail "verify_dump.py: a .npy that NumPy cannot load"

# The same through a raw dump and the converter: the same index lines
start_peer "$NAME" contradict
start_dump "$T/r" --raw --no-print
wait_pid "$PEER_PID" 20 || { cat "$T/peer.err"; fail "dump-peer exited with $?"; }
wait_pid "$DUMP_PID" 20
"$DUMP" --convert "$T/r" -o "$T/rn" 2>"$T/rn.err"
grep -q "3 empty tensors have shapes NumPy cannot represent" "$T/rn.err" || { cat "$T/rn.err"; fail "convert: no word of the unrepresentable shapes"; }
strip() { sed 's/"ts_ns":[0-9]*,//' "$1"; }
[ "$(strip "$T/x/index.jsonl")" = "$(strip "$T/rn/index.jsonl")" ] || { diff <(strip "$T/x/index.jsonl") <(strip "$T/rn/index.jsonl"); fail "converted index differs"; }
"$PY" demo/verify_dump.py "$T/rn" >/dev/null || fail "verify_dump.py of the converted dump"
ok "contradicting tensors indexed as bad, no preview, exit 1; empty tensors of any shape indexed, every .npy loads with NumPy; the same through --raw and --convert"
