#!/usr/bin/env bash
# --convert on raw files it did not write: a core number in the header
# beyond the library's 0..4095 (the largest wraps a 32-bit count) is refused
# with a message naming it and the range, exit 1, no crash; a file refused
# is counted as not converted, and when none was, nothing is left; a
# RAWDIR without raw files is said, exit 2, before any output; a malformed
# record is indexed as bad and said; a link or a FIFO is refused; a
# sequence number repeated within a core is skipped and said; a prefix
# that is not UTF-8 leaves the index UTF-8 JSON.
. "$(dirname "$0")/lib.sh"

# raw_file PATH CORE: the 64-byte raw header, then one 8-byte record
# (a "bad" event: type 0) so that the converter reaches its record loop.
raw_file() {
	"$PY" - "$1" "$2" <<'PY'
import struct, sys
hdr = b"EVSRAW01" + struct.pack("<II", 1, int(sys.argv[2])) + bytes(48)
rec = struct.pack("<QIIQQ", 8, 0, 0, 0, 0) + bytes(32) + bytes(8)
open(sys.argv[1], "wb").write(hdr + rec)
PY
}

for core in 4294967295 4096; do
	mkdir "$T/r$core"
	raw_file "$T/r$core/core0.evsraw" "$core"
	"$DUMP" --convert "$T/r$core" -o "$T/o$core" -q 2>"$T/e$core"; rc=$?
	[ "$rc" -eq 1 ] || { cat "$T/e$core"; fail "core $core: exit $rc, expected 1"; }
	grep -qF "core $core in its header; cores are 0 to 4095" "$T/e$core" || { cat "$T/e$core"; fail "core $core: message"; }
	ok "raw header with core $core refused: '$(head -1 "$T/e$core")', exit 1"
done

# the only raw file refused: the count says none was converted, not "converted
# 1 raw files", and nothing is left in the output directory (an empty dump
# there would make the run on the file put right refuse it)
"$DUMP" --convert "$T/r4096" -o "$T/o4096s" -s 2>"$T/e4096s"; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/e4096s"; fail "core 4096, -s: exit $rc, expected 1"; }
grep -qx "evs-dump: converted none of the 1 raw file: nothing written" "$T/e4096s" &&
	grep -qx "evs-dump: the raw file was not converted (said above)" "$T/e4096s" ||
	{ cat "$T/e4096s"; fail "core 4096, -s: the counts do not say the file was not converted"; }
grep -q "converted 1 raw" "$T/e4096s" && { cat "$T/e4096s"; fail "core 4096, -s: said to be converted"; }
[ -e "$T/o4096s" ] && { ls -lR "$T/o4096s"; fail "core 4096: the output directory was left behind"; }
raw_file "$T/r4096/core0.evsraw" 0
"$DUMP" --convert "$T/r4096" -o "$T/o4096s" -q 2>"$T/e4096s" ||
	{ cat "$T/e4096s"; fail "the file put right: not converted (exit $?)"; }
ok "the only raw file refused: 'converted none of the 1 raw file', 'the raw file was not converted', nothing left; the file put right converts"

# one refused beside one converted: each counted as what it was
mkdir "$T/rmix"
raw_file "$T/rmix/core0.evsraw" 0
raw_file "$T/rmix/core1.evsraw" 4096
"$DUMP" --convert "$T/rmix" -o "$T/omix" -s 2>"$T/emix"; rc=$?
[ "$rc" -eq 1 ] || { cat "$T/emix"; fail "one refused of two: exit $rc, expected 1"; }
grep -qx "evs-dump: converted 1 of the 2 raw files: 1 events, 0 tensor bytes into $T/omix" "$T/emix" &&
	grep -qx "evs-dump: 1 of the 2 raw files was not converted (said above)" "$T/emix" ||
	{ cat "$T/emix"; fail "one refused of two: the counts"; }
[ -f "$T/omix/index.jsonl" ] || fail "one refused of two: the converted one's index is gone"
ok "one refused of two: 'converted 1 of the 2 raw files', '1 of the 2 raw files was not converted', exit 1"

# RAWDIR without raw files: said, exit 2, no output made; then with one,
# the conversion runs (an empty dump left behind refused it)
mkdir "$T/rnone"
"$DUMP" --convert "$T/rnone" -q 2>"$T/enone"; rc=$?
[ "$rc" -eq 2 ] || { cat "$T/enone"; fail "no raw files: exit $rc, expected 2"; }
grep -qxF "evs-dump: no core<N>.evsraw files in '$T/rnone': nothing to convert, nothing written" "$T/enone" ||
	{ cat "$T/enone"; fail "no raw files: message"; }
[ -z "$(ls -A "$T/rnone")" ] || { ls -lR "$T/rnone"; fail "no raw files: RAWDIR/npy was made"; }
said=$(head -1 "$T/enone")
raw_file "$T/rnone/core0.evsraw" 0
"$DUMP" --convert "$T/rnone" -q 2>"$T/enone" || { cat "$T/enone"; fail "raw file added: exit $?"; }
[ -f "$T/rnone/npy/index.jsonl" ] || fail "raw file added: no RAWDIR/npy/index.jsonl"
ok "no raw files: '$said', exit 2, nothing made; a raw file added then converts"

# the largest allowed core still converts
mkdir "$T/r4095"
raw_file "$T/r4095/core0.evsraw" 4095
"$DUMP" --convert "$T/r4095" -o "$T/o4095" -q 2>"$T/e4095"; rc=$?
# the record is a "bad" event: indexed as such (exit 0 from convert: only
# write failures fail it)
grep -q '"core":4095,.*"kind":"bad"' "$T/o4095/index.jsonl" || { cat "$T/e4095"; fail "core 4095: not indexed (exit $rc)"; }
grep -qF '1 malformed events were indexed as "bad"' "$T/e4095" || { cat "$T/e4095"; fail "core 4095: the bad record not said"; }
ok "raw header with core 4095: converted, the bad record said, exit $rc"

# a core<N>.evsraw that is a link (to a raw dump that converts) or a FIFO:
# refused by name, exit 1, and the FIFO does not hang the open
mkdir "$T/rlink" "$T/rfifo"
ln -s "$T/r4095/core0.evsraw" "$T/rlink/core0.evsraw"
mkfifo "$T/rfifo/core0.evsraw"
for k in link:"a symbolic link" fifo:"not a regular file"; do
	d=${k%%:*} why=${k#*:}
	timeout 20 "$DUMP" --convert "$T/r$d" -o "$T/o$d" -q 2>"$T/e$d"; rc=$?
	[ "$rc" -eq 1 ] || { cat "$T/e$d"; fail "raw $d: exit $rc, expected 1"; }
	grep -qF "core0.evsraw: $why, not a raw dump: refused" "$T/e$d" || { cat "$T/e$d"; fail "raw $d: message"; }
	ok "raw $d refused: '$(head -1 "$T/e$d")', exit 1"
done

# raw_tensors PATH CORE SPEC...: a raw file of tensor records, each SPEC
# "seq:dtype:shape" (shape "2x2", "" for a scalar), data bytes 0, 1, 2...;
# as evs-dump --raw writes them (the extension records ndim).
raw_tensors() {
	"$PY" - "$@" <<'PY'
import struct, sys
size = {"float32": 4, "int8": 1, "float64": 8}
out = b"EVSRAW01" + struct.pack("<II", 1, int(sys.argv[2])) + bytes(48)
for spec in sys.argv[3:]:
    seq, dtype, shape = spec.split(":")
    shape = [int(s) for s in shape.split("x")] if shape else []
    n = size[dtype]
    for s in shape:
        n *= s
    p = bytearray(1024)
    p[:len(spec)] = spec.encode()
    p[520:520 + len(dtype)] = dtype.encode()
    struct.pack_into("<8Q", p, 536, *(shape + [0] * (8 - len(shape))))
    struct.pack_into("<Q", p, 600, n)
    struct.pack_into("<HBBI", p, 608, 0x4e45, len(shape), 0, 0)
    p += bytes(i % 256 for i in range(n))
    out += struct.pack("<QIIQQ32x", len(p), 1, 0, int(seq), 1000) + p + bytes(-len(p) % 8)
open(sys.argv[1], "wb").write(out)
PY
}

# npy_shape FILE: the shape in a .npy's header, as Python prints it
npy_shape() {
	"$PY" -c 'import ast, sys; b = open(sys.argv[1], "rb").read(); n = b[8] | b[9] << 8
print(ast.literal_eval(b[10:10 + n].decode())["shape"])' "$1"
}

# a sequence number that repeats or goes back within a core (one crafted
# file, or two files whose headers name the same core) would name a .npy
# already written: the record is skipped and said, the first file kept
# as its index line describes it, exit 0 (as for a torn record)
mkdir "$T/rdup"
raw_tensors "$T/rdup/core0.evsraw" 0 7:float32:2x2 7:int8:3 5:float64: 8:int8:2
raw_tensors "$T/rdup/core1.evsraw" 0 8:float64:1 9:int8:1
"$DUMP" --convert "$T/rdup" -o "$T/odup" -q 2>"$T/edup"; rc=$?
[ "$rc" -eq 0 ] || { cat "$T/edup"; fail "repeated seq: exit $rc, expected 0"; }
[ "$(npy_shape "$T/odup/c0/000000000007.npy")" = "(2, 2)" ] ||
	{ cat "$T/odup/index.jsonl"; fail "repeated seq: c0/000000000007.npy replaced by a later record ($(npy_shape "$T/odup/c0/000000000007.npy"))"; }
[ "$(grep -c '"file":"c0/000000000008.npy"' "$T/odup/index.jsonl")" -eq 1 ] ||
	{ cat "$T/odup/index.jsonl"; fail "repeated seq: c0/000000000008.npy named by more than one line"; }
[ "$(wc -l <"$T/odup/index.jsonl")" -eq 3 ] || { cat "$T/odup/index.jsonl"; fail "repeated seq: index lines"; }
grep -qF "core0.evsraw: 2 records skipped: sequence number 7 at offset 1168 is at or below 7, already converted for core 0" "$T/edup" ||
	{ cat "$T/edup"; fail "repeated seq: message (file 0)"; }
grep -qF "core1.evsraw: 1 records skipped: sequence number 8 at offset 64 is at or below 8, already converted for core 0" "$T/edup" ||
	{ cat "$T/edup"; fail "repeated seq: message (file 1)"; }
skipped=$("$PY" -c 'import json, sys; s = json.load(open(sys.argv[1]))
print(s["skipped"], [(c["core"], c["skipped"]) for c in s["cores"]])' "$T/odup/summary.json") ||
	fail "repeated seq: summary.json unreadable"
[ "$skipped" = "3 [(0, 3)]" ] || { cat "$T/odup/summary.json"; fail "repeated seq: summary.json says skipped $skipped, expected 3 on core 0"; }
ok "repeated sequence numbers skipped and said: '$(head -1 "$T/edup")', exit 0, 3 in summary.json"

# a prefix with bytes that cannot start UTF-8 (0xf5..0xff) before
# continuation bytes: the index stays UTF-8 JSON, each such byte shown as
# its code point (0xff 0xa7 0xa7 once went out raw, read as a 3-byte
# sequence)
mkdir "$T/rutf"
"$PY" - "$T/rutf/core0.evsraw" <<'PY'
import struct, sys
p = bytearray(1024)
text = b"x \xff\xa7\xa7 \xf8\x88\x80\x80\x80 \xf5\x80\x80\x80 \xe2\x86\x92"
p[:len(text)] = text
out = b"EVSRAW01" + struct.pack("<II", 1, 0) + bytes(48)
out += struct.pack("<QIIQQ32x", len(p), 1, 0, 0, 0) + p
open(sys.argv[1], "wb").write(out)
PY
"$DUMP" --convert "$T/rutf" -o "$T/outf" -q 2>"$T/eutf"; rc=$?
[ "$rc" -eq 0 ] || { cat "$T/eutf"; fail "non-UTF-8 prefix: exit $rc, expected 0"; }
"$PY" - "$T/outf/index.jsonl" <<'PY' || fail "non-UTF-8 prefix: index is not UTF-8 JSON"
import json, sys
line = open(sys.argv[1], "rb").read()
want = "x \u00ff\u00a7\u00a7 \u00f8\u0088\u0080\u0080\u0080 \u00f5\u0080\u0080\u0080 \u2192"
got = json.loads(line.decode("utf-8"))["prefix"]
assert got == want, "prefix %r, expected %r" % (got, want)
PY
ok "a prefix with bytes that start no UTF-8 sequence: index valid, '$(grep -o '"prefix":.*' "$T/outf/index.jsonl" | cut -c1-40)...'"
