#!/usr/bin/env bash
# --convert on raw files that change or lie about their size:
# - a file its owner cuts while it is being converted: the converter says
#   how long it is now and how many records it took (exit 1), it is not
#   killed (by SIGBUS, as a reader of a mapping would be), what it
#   converted is whole (the .npy files a conversion of the uncut file
#   writes), and the next file is converted all the same;
# - records whose headers claim gigabytes (a 3 GiB event of another type,
#   a 96 MiB tensor, both in a sparse file): converted with the memory of
#   a small one (under a 64 MiB address-space limit), the tensor copied
#   from file to file.
# tests/dump/cut_on_fstat.c cuts a file to half its size right after the
# converter has taken that size.
. "$(dirname "$0")/lib.sh"
CUT=$ROOT/$BUILD/tests/cut-on-fstat.so
[ -f "$CUT" ] || fail "$CUT is not built (make tests)"

start_demo --pattern all --cores 2 --rate 0 --events 400 --wait-consumers 10
start_dump "$T/r" --raw
wait_pid "$DEMO_PID" 30 || fail "evs-demo"
wait_pid "$DUMP_PID" 30 || fail "evs-dump --raw exited with $?"
size=$(stat -c %s "$T/r/core0.evsraw")
cp -a "$T/r" "$T/whole"
"$DUMP" --convert "$T/whole" -o "$T/wn" -q || fail "convert of the uncut copy"

EVS_CUT_ONLY=core0.evsraw LD_PRELOAD="$CUT" "$DUMP" --convert "$T/r" -o "$T/cn" -q 2>"$T/cn.err"; rc=$?
[ "$rc" -gt 128 ] && { cat "$T/cn.err"; fail "the converter was killed by signal $((rc - 128)) ($(kill -l $((rc - 128))))"; }
[ "$(stat -c %s "$T/r/core0.evsraw")" -eq $((size / 2)) ] ||
	fail "core0.evsraw was not cut (tests/dump/cut_on_fstat.c: does this libc export fstat?)"
[ "$rc" -eq 1 ] || { cat "$T/cn.err"; fail "exit $rc, expected 1"; }
grep -q "core0.evsraw: $((size / 2)) bytes now, $size when conversion began: cut while being converted; the [0-9]* records before offset [0-9]* were taken, the rest are lost" "$T/cn.err" ||
	{ cat "$T/cn.err"; fail "no word of the cut"; }
grep -qx "evs-dump: 1 of the 2 raw files was converted only in part (said above)" "$T/cn.err" || { cat "$T/cn.err"; fail "no count of the files converted only in part"; }
read_n=$(sed -n 's/.*; the \([0-9]*\) records before.*/\1/p' "$T/cn.err")
c0() { grep '"core":0,' "$1"; }
c1() { grep '"core":1,' "$1"; }
[ "$(c0 "$T/cn/index.jsonl" | wc -l)" -eq "$read_n" ] || fail "$read_n records taken, $(c0 "$T/cn/index.jsonl" | wc -l) index lines of core 0"
[ "$read_n" -gt 0 ] && [ "$read_n" -lt 400 ] || fail "$read_n records of 400 taken from a file cut to half"
strip() { sed 's/"ts_ns":[0-9]*,//'; }
[ "$(c0 "$T/cn/index.jsonl" | strip)" = "$(c0 "$T/wn/index.jsonl" | strip | head -n "$read_n")" ] ||
	fail "core 0's index lines are not the first $read_n of the whole conversion's"
[ "$(c1 "$T/cn/index.jsonl" | strip)" = "$(c1 "$T/wn/index.jsonl" | strip)" ] ||
	fail "core 1 (whole) was not converted whole after core 0 was cut"
for f in "$T"/cn/c0/*.npy "$T"/cn/c1/*.npy; do
	cmp -s "$f" "$T/wn/${f#"$T/cn/"}" || fail "${f#"$T/cn/"} differs from the whole conversion's"
done
"$PY" demo/verify_dump.py "$T/cn" >/dev/null || fail "verify_dump.py of the cut conversion"
ok "core0.evsraw cut to $((size / 2)) of $size bytes while converted: exit 1, said, $read_n records converted whole, core1.evsraw whole, no SIGBUS"

# Claims of gigabytes, in a sparse file.
mkdir "$T/big"
"$PY" - "$T/big/core0.evsraw" <<'PYEOF'
import struct, sys
def header(seq, size, typ):
    return struct.pack("<QIIQQ32x", size, typ, 0, seq, 1000 + seq)
nbytes = 96 << 20
fixed = b"big".ljust(512, b"\0") + struct.pack("<II", 0, 0) + b"float32".ljust(16, b"\0") \
    + struct.pack("<8Q", nbytes // 4, 0, 0, 0, 0, 0, 0, 0) + struct.pack("<Q", nbytes)
fixed = fixed.ljust(1024, b"\0")
other = 3 << 30
with open(sys.argv[1], "wb") as f:
    f.write(b"EVSRAW01" + struct.pack("<II", 1, 0) + bytes(48))
    f.write(header(1, other, 7))            # 3 GiB of an event type that is no tensor
    f.seek(other, 1)
    f.write(header(2, 1024 + nbytes, 1))    # a float32 tensor of 96 MiB, zeros
    f.write(fixed)
    f.truncate(f.tell() + nbytes)
PYEOF
(ulimit -v $((64 << 10)); exec "$DUMP" --convert "$T/big" -o "$T/bign" -q) 2>"$T/big.err"; rc=$?
# the first is a malformed event (said; exit 0, as for any); the tensor is written
grep -q '1 malformed events were indexed as "bad"' "$T/big.err" || { cat "$T/big.err"; fail "claims: the 3 GiB event not indexed as bad (exit $rc)"; }
grep -q "events could not be written\|memory" "$T/big.err" && { cat "$T/big.err"; fail "claims: memory or a write failed"; }
[ "$rc" -eq 0 ] || { cat "$T/big.err"; fail "claims: exit $rc, expected 0"; }
"$PY" - "$T/bign" <<'PYEOF' || fail "claims: the 96 MiB tensor"
import numpy, sys
a = numpy.load(sys.argv[1] + "/c0/000000000002.npy", mmap_mode="r")
assert a.dtype == numpy.float32 and a.shape == (24 << 20,), (a.dtype, a.shape)
assert not a[:: 1 << 16].any()
PYEOF
ok "a 3 GiB claim and a 96 MiB tensor converted within a 64 MiB address space"
