#!/usr/bin/env bash
# --convert on a raw file its owner cuts while it is being converted: the
# converter says where it ended and how many records it read (exit 1), it
# is not killed (by SIGBUS, as a reader of a mapping would be), and what
# it converted is whole: the same .npy files a conversion of the uncut file
# writes. tests/dump/cut_on_fstat.c cuts the file to half its size right
# after the converter has taken that size.
. "$(dirname "$0")/lib.sh"
CUT=$ROOT/$BUILD/tests/cut-on-fstat.so
[ -f "$CUT" ] || fail "$CUT is not built (make tests)"

start_demo --pattern all --cores 1 --rate 0 --events 400 --wait-consumers 10
start_dump "$T/r" --raw
wait_pid "$DEMO_PID" 30 || fail "evs-demo"
wait_pid "$DUMP_PID" 30 || fail "evs-dump --raw exited with $?"
size=$(stat -c %s "$T/r/core0.evsraw")
cp -a "$T/r" "$T/whole"
"$DUMP" --convert "$T/whole" -o "$T/wn" -q || fail "convert of the uncut copy"

LD_PRELOAD="$CUT" "$DUMP" --convert "$T/r" -o "$T/cn" -q 2>"$T/cn.err"; rc=$?
[ "$rc" -gt 128 ] && { cat "$T/cn.err"; fail "the converter was killed by signal $((rc - 128)) ($(kill -l $((rc - 128))))"; }
[ "$rc" -eq 1 ] || { cat "$T/cn.err"; fail "exit $rc, expected 1"; }
[ "$(stat -c %s "$T/r/core0.evsraw")" -eq $((size / 2)) ] || fail "the file was not cut (cut_on_fstat.c)"
grep -q "core0.evsraw: ends at offset [0-9]*, short of the $size bytes it had when conversion began: cut while being converted; the [0-9]* records before that offset were read, the rest are lost" "$T/cn.err" ||
	{ cat "$T/cn.err"; fail "no word of the cut"; }
read_n=$(sed -n 's/.*; the \([0-9]*\) records before.*/\1/p' "$T/cn.err")
[ "$(wc -l <"$T/cn/index.jsonl")" -eq "$read_n" ] || fail "$read_n records read, $(wc -l <"$T/cn/index.jsonl") index lines"
[ "$read_n" -gt 0 ] && [ "$read_n" -lt 400 ] || fail "$read_n records read of 400 in a file cut to half"
strip() { sed 's/"ts_ns":[0-9]*,//' "$1"; }
[ "$(strip "$T/cn/index.jsonl")" = "$(strip "$T/wn/index.jsonl" | head -n "$read_n")" ] ||
	fail "the index of the cut conversion is not the first $read_n lines of the whole one"
for f in "$T"/cn/c0/*.npy; do
	cmp -s "$f" "$T/wn/c0/${f##*/}" || fail "${f##*/} differs from the whole conversion's"
done
"$PY" demo/verify_dump.py "$T/cn" >/dev/null || fail "verify_dump.py of the cut conversion"
ok "a raw file cut to $((size / 2)) of $size bytes while converted: exit 1, said, $read_n records converted whole, no SIGBUS"
