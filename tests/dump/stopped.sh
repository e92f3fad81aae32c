#!/usr/bin/env bash
# A producer stopped with SIGSTOP (a runtime paused in a debugger) holds
# nothing: SIGINT and SIGTERM end evs-dump at once while it tries to
# connect, whether its connection waits for a welcome or for a place in
# the full listen queue (exit 2, as for a signal before the producer was
# found); without a signal evs-dump gives up by itself and says why; a
# second evs-demo of the same name fails at once, naming the first's pid.
. "$(dirname "$0")/lib.sh"

SOCK=$EVSTREAM_RUNTIME_DIR/$NAME.sock
start_demo --cores 1 --rate 100 --seconds 120 --wait-consumers 0
wait_for "[ -S $SOCK ]" 10
kill -STOP "$DEMO_PID"

# exits_2_saying PID SECS LOG WHAT PATTERN [T0]: PID ends within SECS with
# exit 2 and PATTERN in LOG; with T0 (date +%s%N), MS is the time from T0
# to its end.
exits_2_saying() {
	local rc
	wait_pid "$1" "$2"; rc=$?
	[ -n "${6:-}" ] && MS=$((($(date +%s%N) - $6) / 1000000))
	[ "$rc" -eq 2 ] || { cat "$3"; fail "$4: exit $rc, expected 2"; }
	grep -q "$5" "$3" || { cat "$3"; fail "$4: message"; }
}

# Bounds of "at once", far below the 30 s evs-dump would try and the
# 10 s a producer waits: generous, so that a loaded host's process start
# and polling (wait_pid) cannot fail them; a hang still does.
AT_ONCE_MS=3000

# signal_while_connecting SIG TAG: evs-dump tries for up to 30 s; SIG
# 0.5 s in must end it at once, exit 2, said.
signal_while_connecting() {
	local sig=$1 tag=$2 t0 log
	start_dump "$T/$tag" --no-print --wait 30
	log=$T/$tag.stderr
	sleep 0.5
	kill -0 "$DUMP_PID" 2>/dev/null || { cat "$log"; fail "$tag: evs-dump ended before SIG$sig"; }
	t0=$(date +%s%N)
	kill -"$sig" "$DUMP_PID"
	exits_2_saying "$DUMP_PID" 5 "$log" "$tag: SIG$sig" \
		"SIG$sig while waiting for producer '$NAME'; nothing was dumped" "$t0"
	[ "$MS" -lt "$AT_ONCE_MS" ] || fail "$tag: SIG$sig took $MS ms to end evs-dump"
	ok "$tag: SIG$sig ended evs-dump in $MS ms, exit 2"
}

# Its connection queued, a welcome that never comes.
signal_while_connecting INT queued

# The listen queue full of connections that never say hello (held by a
# helper until the end).
"$PY" - "$SOCK" "$T/queue" <<'EOF' &
import socket, sys, time
held = []
while True:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
    except BlockingIOError:
        break
    held.append(s)
open(sys.argv[2], "w").write("%d\n" % len(held))
time.sleep(600)
EOF
PIDS+=($!)
wait_for "[ -s $T/queue ]" 10
ok "listen queue of the stopped producer full after $(cat "$T/queue") more connections"
signal_while_connecting INT full-int
signal_while_connecting TERM full-term

# No signal: it gives up by itself (at least 2 s of trying), and says why.
start_dump "$T/giveup" --no-print --wait 0
exits_2_saying "$DUMP_PID" 10 "$T/giveup.stderr" "giving up" \
	"producer '$NAME' accepts no connection.*is the producer stopped"
ok "no signal: '$(cat "$T/giveup.stderr")', exit 2"

# A second producer of the name fails at once.
t0=$(date +%s%N)
"$DEMO" --name "$NAME" --cores 1 --seconds 1 --wait-consumers 0 2>"$T/second.err" &
pid=$!
PIDS+=("$pid")
exits_2_saying "$pid" 5 "$T/second.err" "second producer" \
	"already running (pid $DEMO_PID holds" "$t0"
[ "$MS" -lt "$AT_ONCE_MS" ] || fail "second producer took $MS ms to fail"
ok "a second producer of the name: '$(cat "$T/second.err")' in $MS ms"
