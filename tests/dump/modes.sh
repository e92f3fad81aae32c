#!/usr/bin/env bash
# evs-dump options end to end: raw mode and its converter, index-only,
# stop after N events / N bytes / N seconds, and chosen cores (two dumpers,
# one per core, on the same producer).
. "$(dirname "$0")/lib.sh"

# Raw: one file per core, then converted to .npy and checked.
start_demo --pattern all --cores 2 --rate 0 --events 300 --wait-consumers 10
start_dump "$T/r" --raw
wait_pid "$DEMO_PID" 30 || fail "evs-demo"
wait_pid "$DUMP_PID" 30 || fail "evs-dump --raw exited with $?"
[ "$(head -c 8 "$T/r/core0.evsraw")" = EVSRAW01 ] || fail "raw file magic"
ls "$T/r" | grep -q '^c[0-9]' && fail "raw mode wrote .npy directories"
# the index's offsets point at the records' headers (seq at byte 16)
"$PY" - "$T/r" <<'PYEOF' || fail "raw offsets"
import json, struct, sys
d = sys.argv[1]
files = {}
for l in open(d + "/index.jsonl"):
    r = json.loads(l)
    f = files.setdefault(r["file"], open(d + "/" + r["file"], "rb").read())
    size, typ, flags, seq = struct.unpack_from("<QIIQ", f, r["offset"])
    assert seq == r["seq"] and typ == 1, (r, seq)
PYEOF
"$DUMP" --convert "$T/r" -o "$T/rn" -q || fail "convert"
verify "$T/rn" --pattern all
[ "$(wc -l <"$T/rn/index.jsonl")" -eq 600 ] || fail "converted index lines"
ok "raw mode: core<N>.evsraw files convert to .npy files that match"
# a whole conversion has its summary.json, as a live dump: the verifiers
# check it as whole, not cut short; the producer's counters it cannot know
[ -f "$T/rn/summary.json" ] || fail "a converted dump has no summary.json: $(ls "$T/rn")"
[ "$(json "$T/rn/summary.json" '(j["producer"], j["raw_files"], j["events"], sorted((c["core"], c["events"]) for c in j["cores"]), "produced" in j["cores"][0])')" = \
	"(None, 2, 600, [(0, 300), (1, 300)], False)" ] || fail "converted summary.json: $(cat "$T/rn/summary.json")"
"$DEMO" --verify "$T/rn" --pattern all >"$T/rn.v" 2>&1 || { cat "$T/rn.v"; fail "evs-demo --verify of the conversion"; }
grep -q "cut short" "$T/rn.v" && { cat "$T/rn.v"; fail "a whole conversion verified as cut short"; }
grep -q "has no producer counters .*converted from raw files by evs-dump --convert" "$T/rn.v" ||
	{ cat "$T/rn.v"; fail "the verifier does not say why a conversion's drops are not accounted"; }
"$PY" demo/verify_dump.py "$T/rn" >"$T/rn.v2" 2>&1 && ! grep -q "cut short" "$T/rn.v2" ||
	{ cat "$T/rn.v2"; fail "verify_dump.py: a whole conversion is cut short"; }
ok "a conversion writes summary.json (producer null, 600 events on 2 cores, no producer counters); not cut short"
# --progress: a status line per file as it begins (then every half second)
"$DUMP" --convert "$T/r" -o "$T/rp" --progress 2>"$T/rp.err" || fail "convert --progress"
for f in "core0.evsraw (file 1 of 2)" "core1.evsraw (file 2 of 2)"; do
	grep -qF "$f" "$T/rp.err" || { cat "$T/rp.err"; fail "convert --progress: no status line for $f"; }
done
grep -q "converted 2 raw files: 600 events" "$T/rp.err" || { cat "$T/rp.err"; fail "convert --progress: no summary"; }
"$DUMP" --convert "$T/r" -o "$T/rq" -q 2>"$T/rq.err" || fail "convert -q"
[ -s "$T/rq.err" ] && { cat "$T/rq.err"; fail "convert -q said something"; }
ok "convert --progress: a status line per file; -q: nothing"

# Index only: every event indexed, no data written.
start_demo --pattern all --cores 2 --rate 0 --events 300 --wait-consumers 10
start_dump "$T/i" --index-only --no-print
wait_pid "$DEMO_PID" 30 || fail "evs-demo"
wait_pid "$DUMP_PID" 30 || fail "evs-dump --index-only"
[ "$(wc -l <"$T/i/index.jsonl")" -eq 600 ] || fail "index-only lines"
[ -z "$(find "$T/i" -name '*.npy')" ] || fail "index-only wrote .npy files"
"$DEMO" --verify "$T/i" --pattern all --allow-missing >/dev/null || fail "index-only index does not match"
ok "index-only: 600 events indexed, no data"

# Limits: N events, N bytes, N seconds, against a producer that goes on.
start_demo --cores 2 --rate 2000 --seconds 30 --wait-consumers 10
start_dump "$T/n" --events 100 --no-print
wait_pid "$DUMP_PID" 20 || fail "evs-dump --events"
[ "$(wc -l <"$T/n/index.jsonl")" -eq 100 ] || fail "--events 100 wrote $(wc -l <"$T/n/index.jsonl") lines"
verify "$T/n" >/dev/null
# the demo's cores are free again: a second dumper may connect
start_dump "$T/b" --bytes 200K --no-print
wait_pid "$DUMP_PID" 20 || fail "evs-dump --bytes"
b=$(json "$T/b/summary.json" 'j["bytes"]')
[ "$b" -ge 204800 ] || fail "--bytes 200K stopped at $b bytes"
start_dump "$T/t" --seconds 0.5 --no-print
wait_pid "$DUMP_PID" 20 || fail "evs-dump --seconds"
verify "$T/t" >/dev/null
kill -TERM "$DEMO_PID"; wait_pid "$DEMO_PID" 10 || fail "evs-demo on SIGTERM"
ok "stop after 100 events, after 200K bytes ($b), after 0.5 s"

# Cores: one dumper per core, each sees only its own.
start_demo --cores 2 --rate 2000 --events 400 --wait-consumers 10
start_dump "$T/c0" --cores 0 --no-print; P0=$DUMP_PID
start_dump "$T/c1" --cores 1 --no-print; P1=$DUMP_PID
wait_pid "$DEMO_PID" 30 || fail "evs-demo"
wait_pid "$P0" 20 || fail "dumper of core 0"
wait_pid "$P1" 20 || fail "dumper of core 1"
for c in 0 1; do
	[ "$(grep -c "\"core\":$c," "$T/c$c/index.jsonl")" -eq 400 ] || fail "core $c lines"
	grep -q "\"core\":$((1 - c))," "$T/c$c/index.jsonl" && fail "core $((1 - c)) in the dump of core $c"
	verify "$T/c$c" >/dev/null
done
ok "--cores: two dumpers on one producer, 400 events each"
