#!/usr/bin/env bash
# make bench-python runs end to end: one short round gives a JSON report
# with every figure and ratio (A, B and C) above zero, and the peer refuses
# a bad rate by name. Asserts structure and non-zero counts, never speed.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
PY=${PYTHON:-/usr/bin/python3}
peer=$BUILD/python/bench/evs-pybench-peer
[ -x "$peer" ] || { echo "SKIP python bench smoke: $peer not built (make bench-python builds it)"; exit 77; }
"$PY" -c "import numpy" 2>/dev/null || { echo "SKIP python bench smoke: $PY has no numpy (python3-numpy; make deps)"; exit 77; }
if [ ! -e "$BUILD/python/evstream/_native.abi3.so" ]; then
	echo "SKIP python bench smoke: the benchmark measures the native extension, which is not built" \
		"($BUILD/python/evstream/_native.abi3.so; needs python3-dev, then make python)"
	exit 77
fi
out=$(mktemp -d /tmp/evs-pybench-smoke.XXXXXX) || exit 1
trap 'rm -rf "$out"' EXIT
export EVSTREAM_RUNTIME_DIR=$out/run PYTHONPATH=$BUILD/python PYTHONDONTWRITEBYTECODE=1

"$PY" python/bench/bench_py.py --peer "$peer" --rounds 1 --events 2000 --seconds 0.2 \
	--window 0.2 --json "$out/r.json" > "$out/log" 2>&1 ||
	{ cat "$out/log"; echo "FAIL: bench_py.py"; exit 1; }
"$PY" - "$out/r.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["rounds"] == 1 and r["machine"]["clocksource"], r["machine"]
figures = dict(r["A_ns_per_event"], **r["B_events_per_s"], **r["B_bytes_per_s"], **r["C_events_per_s"])
for k in ("native", "fallback", "pipe", "bare", "call", "native_tensor", "native_tensor_array",
          "fallback_tensor", "fallback_tensor_array", "native64", "fallback64", "pipe64", "c64",
          "native1M", "fallback1M", "c1M", "native_dropfree64"):
    assert figures[k] > 0, (k, figures)
for k, v in r["ratios"].items():
    assert v > 0, (k, v)
for k, (lo, hi) in r["ratio_ranges"].items():
    assert 0 < lo <= hi, (k, lo, hi)
print("ok: bench_py.py: native %.0f ns/event, %.0fx the pipe reader pipelined, none lost up to %.3g events/s"
      % (figures["native"], r["ratios"]["B: native vs Python pipe reader, 64 B"], figures["native_dropfree64"]))
PY

# a bad option value: exit 2, naming the value and what is allowed
for arg in "--rounds 0" "--rounds x" "--events 5" "--seconds nan" "--window 0"; do
	set -- $arg
	"$PY" python/bench/bench_py.py --peer "$peer" "$1" "$2" > "$out/bad.log" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -qF "argument $1: '$2' is not allowed: " "$out/bad.log" ||
		{ cat "$out/bad.log"; echo "FAIL: bench_py.py $arg gave exit $rc"; exit 1; }
done
echo "ok: bench_py.py refuses bad --rounds, --events, --seconds and --window by name"

# the paced producer refuses a rate it cannot offer, naming it
for bad in 0 -5 x; do
	"$peer" paced "smoke-bad-$$" 64 0.1 "$bad" > "$out/bad.log" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -qF "rate '" "$out/bad.log" && grep -qF "is not allowed" "$out/bad.log" ||
		{ cat "$out/bad.log"; echo "FAIL: evs-pybench-peer paced rate '$bad' gave exit $rc"; exit 1; }
done
echo "ok: evs-pybench-peer refuses rates 0, -5 and x"
