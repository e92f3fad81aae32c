#!/usr/bin/env bash
# --convert on raw files it did not write: a core number in the header
# beyond the library's 0..4095 (the largest wraps a 32-bit count) is refused
# with a message naming it and the range, exit 1, no crash.
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

# the largest allowed core still converts
mkdir "$T/r4095"
raw_file "$T/r4095/core0.evsraw" 4095
"$DUMP" --convert "$T/r4095" -o "$T/o4095" -q 2>"$T/e4095"; rc=$?
# the record is a "bad" event: indexed as such (exit 0 from convert: only
# write failures fail it)
grep -q '"core":4095,.*"kind":"bad"' "$T/o4095/index.jsonl" || { cat "$T/e4095"; fail "core 4095: not indexed (exit $rc)"; }
ok "raw header with core 4095: converted, exit $rc"

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
