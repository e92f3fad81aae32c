#!/usr/bin/env bash
# evs-dump end to end: every dtype, ndim 0..8, strided inputs, empty
# tensors and plain prints from another process, with .npy files checked
# against the generator and loaded with NumPy; prints on the right pipe.
. "$(dirname "$0")/lib.sh"

N=498   # every case of --pattern all, twice, on each core
start_demo --pattern all --cores 2 --rate 0 --events $N --wait-consumers 10
start_dump "$T/a"
wait_pid "$DEMO_PID" 30 || fail "evs-demo exited with $?"
wait_pid "$DUMP_PID" 30; rc=$?
[ "$rc" -eq 0 ] || { cat "$T/a.stderr"; fail "evs-dump exited with $rc"; }
verify "$T/a" --pattern all
[ "$(wc -l <"$T/a/index.jsonl")" -eq $((2 * N)) ] || fail "index has $(wc -l <"$T/a/index.jsonl") lines, expected $((2 * N))"

# Coverage: every dtype at every ndim 0..8, views, empty tensors, prints.
"$PY" - "$T/a/index.jsonl" <<'PYEOF' || fail "coverage"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
t = [r for r in recs if r["kind"] == "tensor"]
dtypes = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint64", "uint32", "uint16", "uint8", "bool"]
have = {(r["dtype"], len(r["shape"])) for r in t if r["bytes"]}
miss = [(d, n) for d in dtypes for n in range(9) if (d, n) not in have]
assert not miss, "missing dtype/ndim: %s" % miss[:5]
views = {(r["dtype"], len(r["shape"])) for r in t if " view" in r["prefix"]}
assert all((d, n) in views for d in dtypes for n in range(1, 9)), "views missing"
empty = {r["dtype"] for r in t if r["bytes"] == 0}
assert empty == set(dtypes), "empty tensors missing for %s" % (set(dtypes) - empty)
assert all(r["npy_dtype"] == "<u2" for r in t if r["dtype"] == "bfloat16")
prints = [r for r in recs if r["kind"] == "print"]
assert {r["pipe"] for r in prints} == {1, 2} and all(r["file"] is None for r in prints)
assert all(r["gap"] == 0 for r in recs)
print("coverage: 13 dtypes x ndim 0..8, views for ndim 1..8, empty tensors, prints on both pipes")
PYEOF
ok "every dtype, ndim 0..8, strided views, 0-byte tensors: .npy files match the generator and load with NumPy"

# Device prints: pipe 1 on stdout, pipe 2 on stderr, with a preview.
grep -q 'plain print on stdout' "$T/a.stdout" || fail "pipe-1 print not on stdout"
grep -q 'plain print on stderr' "$T/a.stderr" || fail "pipe-2 print not on stderr"
grep -q 'plain print on stderr' "$T/a.stdout" && fail "pipe-2 print on stdout"
grep -q '^nc0 #0 float64 0D = -\?[0-9]' "$T/a.stdout" || fail "no scalar preview on stdout"
grep -q 'bool 1D = \[ *\(True\|False\) ' "$T/a.stdout" || fail "no bool preview"
ok "prefixes printed to stdout/stderr as their pipe says, with previews"
