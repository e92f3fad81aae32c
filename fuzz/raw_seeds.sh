#!/usr/bin/env bash
# Seeds of fuzz_convert made by the real tools: evs-demo's "all" pattern
# (every dtype, ndim 0..8, strided views, empty tensors, prints) and its
# "mixed" one, dumped by evs-dump --raw, cut into small inputs of a few
# whole records each (a raw header, then the records), one or two files
# per input (fuzz/fuzz_convert.c reads the selector byte and lengths).
# Usage: fuzz/raw_seeds.sh [BUILD]   (after make; writes fuzz/corpus/convert)
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
export EVSTREAM_RUNTIME_DIR=$T/run
mkdir -m 700 "$EVSTREAM_RUNTIME_DIR"
for p in all mixed; do
	"$BUILD/evs-demo" --name seeds-$p --pattern $p --cores 2 --rate 0 --events 60 \
		--wait-consumers 10 2>/dev/null &
	"$BUILD/evs-dump" --raw --no-print -q --wait 10 -o "$T/$p" seeds-$p
	wait
done
/usr/bin/python3 - "$T" fuzz/corpus/convert <<'PY'
import os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)

def records(path):
    b = open(path, "rb").read()
    hdr, off, out = b[:64], 64, []
    while off + 64 <= len(b):
        size = struct.unpack_from("<Q", b, off)[0]
        n = 64 + (size + 7) // 8 * 8
        out.append(b[off:off + n])
        off += n
    return hdr, out

def one(name, hdr, recs, sel=0):
    open(os.path.join(dst, name), "wb").write(bytes([sel]) + hdr + b"".join(recs))

n = 0
for pat, per, limit in (("all", 4, 6000), ("mixed", 2, 12000)):
    h0, r0 = records(os.path.join(src, pat, "core0.evsraw"))
    h1, r1 = records(os.path.join(src, pat, "core1.evsraw"))
    i = 0
    while i < len(r0) and n < 40:
        take = r0[i:i + per]
        while take and sum(map(len, take)) > limit:
            take = take[:-1]
        if take:
            one("demo-%s-%02d" % (pat, i // per), h0, take)
            n += 1
        i += per
    # two files, as evs-dump --raw writes two cores
    f0, f1 = h0 + b"".join(r0[:2]), h1 + b"".join(r1[:2])
    if len(f0) + len(f1) < 16000:
        open(os.path.join(dst, "demo-%s-two-cores" % pat), "wb").write(
            bytes([1 | 0 << 1]) + struct.pack("<H", len(f0)) + f0 + f1)
PY
echo "fuzz/raw_seeds.sh: $(ls fuzz/corpus/convert | wc -l) seeds in fuzz/corpus/convert"
