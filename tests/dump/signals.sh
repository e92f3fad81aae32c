#!/usr/bin/env bash
# Nothing committed is lost: SIGINT drains the rings and finishes the files
# (exit 0); a producer killed with SIGKILL is drained, then evs-dump says it
# died (exit 3). Both once with records known to be waiting in the rings
# (the dumper is stopped while the producer fills them), once mid-stream.
# SIGTERM and SIGHUP (a closed terminal) stop it like SIGINT. A signal while
# it still waits for the producer ends it cleanly: the directory is reusable.
# evs-demo whose stderr is read by one who leaves (| head) ends normally.
. "$(dirname "$0")/lib.sh"

# Ctrl-C (and SIGHUP) during --wait, no producer yet: exit 2, said, and
# nothing left that the next run would refuse.
mkdir "$T/pre"
for sig in INT HUP; do
	for out in "$T/w$sig" "$T/pre"; do
		start_dump "$out" --no-print
		wait_for "[ -e $out/index.jsonl ]" 10
		sleep 0.1
		kill -"$sig" "$DUMP_PID"
		wait_pid "$DUMP_PID" 10; rc=$?
		log=$T/$(basename "$out").stderr
		[ "$rc" -eq 2 ] || { cat "$log"; fail "SIG$sig during --wait: exit $rc, expected 2"; }
		grep -q "SIG$sig while waiting for producer '$NAME'; nothing was dumped" "$log" || { cat "$log"; fail "SIG$sig during --wait: message"; }
		[ ! -e "$out/index.jsonl" ] || fail "SIG$sig during --wait: $out/index.jsonl left behind"
	done
	[ ! -e "$T/w$sig" ] || fail "SIG$sig during --wait: the directory it made was left"
	[ -d "$T/pre" ] || fail "SIG$sig during --wait: a directory it did not make was removed"
done
ok "SIGINT and SIGHUP during --wait: exit 2, '$(cat "$T/pre.stderr")', the directory is reusable"

# waiting_in_rings OUT SIG: dumper connected then stopped; the producer
# emits 2 x 300 events into the rings and holds; then SIG goes to the
# dumper (INT) or the producer (KILL) and the dumper resumes.
waiting_in_rings() {
	local out=$1 sig=$2
	start_demo --pattern all --cores 2 --rate 0 --events 300 --hold --wait-consumers 10
	start_dump "$out" --no-print
	wait_for "[ -d $out/c0 ] && [ -d $out/c1 ]" 10
	kill -STOP "$DUMP_PID"
	wait_for "grep -q 'done emitting' $T/demo.err" 20
	if [ "$sig" = INT ]; then
		kill -INT "$DUMP_PID"
	else
		kill -KILL "$DEMO_PID"
		wait "$DEMO_PID" 2>/dev/null
	fi
	kill -CONT "$DUMP_PID"
	wait_pid "$DUMP_PID" 30
}

waiting_in_rings "$T/s" INT; rc=$?
[ "$rc" -eq 0 ] || { cat "$T/s.stderr"; fail "SIGINT: exit $rc, expected 0"; }
[ "$(wc -l <"$T/s/index.jsonl")" -eq 600 ] || fail "SIGINT: $(wc -l <"$T/s/index.jsonl") of 600 waiting events written"
verify "$T/s" --pattern all
kill -TERM "$DEMO_PID"; wait_pid "$DEMO_PID" 10 || fail "evs-demo on SIGTERM"
ok "SIGINT: the 600 events waiting in the rings were drained and written, exit 0"

waiting_in_rings "$T/k" KILL; rc=$?
[ "$rc" -eq 3 ] || { cat "$T/k.stderr"; fail "producer killed: exit $rc, expected 3"; }
grep -q "producer '$NAME' died" "$T/k.stderr" || fail "no message about the producer's death"
[ "$(wc -l <"$T/k/index.jsonl")" -eq 600 ] || fail "killed: $(wc -l <"$T/k/index.jsonl") of 600 events written"
[ "$(json "$T/k/summary.json" 'j["cores"][0]["producer_died"]')" = True ] || fail "summary.json: producer_died"
verify "$T/k" --pattern all
ok "producer killed: its 600 committed events drained and written, 'died' said, exit 3"

# Mid-stream: a paced producer, SIGINT to the dumper while it runs.
start_demo --cores 2 --rate 2000 --seconds 30 --wait-consumers 10
start_dump "$T/m" --no-print
wait_for "[ -s $T/m/index.jsonl ]" 10
sleep 0.3
kill -INT "$DUMP_PID"
wait_pid "$DUMP_PID" 20 || fail "SIGINT mid-stream: exit $?"
verify "$T/m" >/dev/null
grep -q '^evs-dump: [0-9]* events' "$T/m.stderr" || fail "no summary after SIGINT"
# SIGTERM does the same.
start_dump "$T/q" --no-print
wait_for "[ -s $T/q/index.jsonl ]" 10
kill -TERM "$DUMP_PID"
wait_pid "$DUMP_PID" 20 || fail "SIGTERM mid-stream: exit $?"
verify "$T/q" >/dev/null
# ... and SIGHUP (the terminal closed) too, with the index written.
start_dump "$T/u" --no-print
wait_for "[ -s $T/u/index.jsonl ]" 10
kill -HUP "$DUMP_PID"
wait_pid "$DUMP_PID" 20 || fail "SIGHUP mid-stream: exit $?"
verify "$T/u" >/dev/null
# ... and SIGKILL to the producer while it runs.
start_dump "$T/p" --no-print
wait_for "[ -s $T/p/index.jsonl ]" 10
kill -KILL "$DEMO_PID"
wait_pid "$DUMP_PID" 20; rc=$?
[ "$rc" -eq 3 ] || fail "producer killed mid-stream: exit $rc, expected 3"
verify "$T/p" >/dev/null
ok "mid-stream SIGINT, SIGTERM and SIGHUP (exit 0), producer SIGKILL (exit 3): complete, verified dumps"

# evs-demo piped to head: the reader leaves after the first line, the lines
# after it fail to be written (no SIGPIPE death); exit 0, socket and lock
# removed
"$DEMO" --name "$NAME-pipe" --cores 1 --seconds 0.5 --wait-consumers 0 2>&1 | head -1 >"$T/pipe.out"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || fail "evs-demo | head -1: exit $rc, expected 0 ($(cat "$T/pipe.out"))"
for f in "$NAME-pipe.sock" "$NAME-pipe.lock"; do
	[ ! -e "$EVSTREAM_RUNTIME_DIR/$f" ] || fail "evs-demo | head -1: $f left behind"
done
ok "evs-demo | head -1: exit 0, nothing left behind"
