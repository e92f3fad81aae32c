#!/usr/bin/env bash
# evs-dump --kafka takes the options of a dump from shared memory: raw
# files per core (converted and verified), index only, a number of events,
# a number of seconds; a directory that holds a dump is refused; options
# that mean nothing for Kafka (--cores, --wait, a PRODUCER) are refused.
. "$(dirname "$0")/lib.sh"

start_mock --topic "$TOPIC:3"
start_demo --cores 2 --rate 2000 --events 100 --wait-consumers 10
start_forward --host km
wait_pid "$DEMO_PID" 30 || fail "evs-demo exited with $?"
wait_pid "$FWD_PID" 30 || { cat "$T/fwd.err"; fail "evs-forward exited with $?"; }
D=km/$NAME
start_kdump "$T/r" --raw --until-idle 1 --group raw; R=$KDUMP_PID
start_kdump "$T/i" --index-only --until-idle 1 --group index; I=$KDUMP_PID
start_kdump "$T/n" --events 50 --group events; N=$KDUMP_PID
wait_pid "$R" 60 || { cat "$T/r.stderr"; fail "evs-dump --kafka --raw exited with $?"; }
wait_pid "$I" 60 || { cat "$T/i.stderr"; fail "evs-dump --kafka --index-only exited with $?"; }
wait_pid "$N" 60 || { cat "$T/n.stderr"; fail "evs-dump --kafka --events 50 exited with $?"; }
[ "$(head -c 8 "$T/r/$D/core0.evsraw")" = EVSRAW01 ] || fail "no raw file for core 0"
"$DUMP" --convert "$T/r/$D" -o "$T/rn" -q || fail "convert"
verify "$T/rn" >/dev/null
[ "$(wc -l <"$T/i/$D/index.jsonl")" -eq 200 ] || fail "index-only: $(wc -l <"$T/i/$D/index.jsonl") lines"
[ -z "$(find "$T/i" -name '*.npy')" ] || fail "index-only wrote .npy files"
"$DEMO" --verify "$T/i/$D" --allow-missing >/dev/null || fail "the index-only index does not match"
[ "$(wc -l <"$T/n/$D/index.jsonl")" -eq 50 ] || fail "--events 50: $(wc -l <"$T/n/$D/index.jsonl") lines"
ok "raw files (converted, verified), index only (200 lines), --events 50"

start_kdump "$T/n" --events 50 --group again
wait_pid "$KDUMP_PID" 30; rc=$?
[ "$rc" -eq 2 ] && grep -q "already holds a dump" "$T/n.stderr" || fail "a dump directory reused: exit $rc"
for bad in "--cores 0" "--wait 1" "$NAME"; do
	"$DUMP" --kafka "$BROKERS" --topic "$TOPIC" -o "$T/x" $bad 2>"$T/x.err"; rc=$?
	[ "$rc" -eq 2 ] && grep -q -- "--kafka BROKERS and --topic T go together" "$T/x.err" ||
		fail "evs-dump --kafka $bad: exit $rc, $(cat "$T/x.err")"
done
[ ! -e "$T/x" ] || fail "a refused command made its output directory"
ok "a directory holding a dump, --cores, --wait and a PRODUCER are refused, exit 2"
