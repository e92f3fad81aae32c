#!/usr/bin/env bash
# Dumps cut short, as the verifiers see them: a dumper killed with SIGKILL
# mid-stream (no summary.json, maybe a file past the last line), an index
# whose last line is torn (what a power loss can leave), and one torn in
# the middle. The verifiers say so in one line and check every complete
# line: exit 0 for a cut dump whose complete lines agree with the files,
# 1 for a line in the middle that is not JSON; never a traceback.
. "$(dirname "$0")/lib.sh"

# both verifiers on DIR, expecting exit RC and a line matching MSG from each
verifiers() {
	local dir=$1 rc=$2 msg=$3 r
	"$DEMO" --verify "$dir" >"$T/v1" 2>&1; r=$?
	[ "$r" -eq "$rc" ] && grep -q "$msg" "$T/v1" || { cat "$T/v1"; fail "evs-demo --verify $dir: exit $r, expected $rc and '$msg'"; }
	"$PY" demo/verify_dump.py "$dir" >"$T/v2" 2>&1; r=$?
	grep -q Traceback "$T/v2" && { cat "$T/v2"; fail "verify_dump.py $dir: traceback"; }
	[ "$r" -eq "$rc" ] && grep -q "$msg" "$T/v2" || { cat "$T/v2"; fail "verify_dump.py $dir: exit $r, expected $rc and '$msg'"; }
}

# SIGKILL mid-stream: every line written is whole, the dump is cut.
start_demo --cores 2 --rate 2000 --seconds 30 --wait-consumers 10
start_dump "$T/k" --no-print
wait_for "[ \$(wc -l <$T/k/index.jsonl) -gt 500 ]" 20
kill -KILL "$DUMP_PID"
wait "$DUMP_PID" 2>/dev/null
kill -TERM "$DEMO_PID"; wait_pid "$DEMO_PID" 10
[ ! -e "$T/k/summary.json" ] || fail "a killed dumper left a summary.json"
[ "$(tail -c 1 "$T/k/index.jsonl" | od -An -c | tr -d ' ')" = '\n' ] || fail "a killed dumper left a torn line"
verifiers "$T/k" 0 "cut short (no summary.json)"
ok "dumper killed: $(wc -l <"$T/k/index.jsonl") whole lines, no summary.json; both verifiers say it was cut short and pass"

# A torn last line, made by hand from a whole dump.
start_demo --cores 2 --rate 0 --events 200 --wait-consumers 10
start_dump "$T/t" --no-print
wait_pid "$DEMO_PID" 30 || fail "evs-demo"
wait_pid "$DUMP_PID" 30 || fail "evs-dump"
cp -a "$T/t" "$T/m"
size=$(stat -c %s "$T/t/index.jsonl")
truncate -s $((size - 40)) "$T/t/index.jsonl"
verifiers "$T/t" 0 "torn line"
ok "torn last line: reported in one line, the 399 complete lines checked, exit 0"

# A line in the middle that is not JSON: a problem, said, exit 1.
sed -i '100s/.*/{"seq":99,"core":0,"ts_n/' "$T/m/index.jsonl"
verifiers "$T/m" 1 "line 100"
ok "a torn line in the middle: named as a problem, exit 1"
