# Shared by the evs-dump end-to-end tests (sourced): a private runtime
# directory and temp directory, helpers to run evs-demo and evs-dump as real
# processes with bounded waits, and cleanup of everything they started.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
DEMO=$ROOT/$BUILD/evs-demo
DUMP=$ROOT/$BUILD/evs-dump
PY=/usr/bin/python3
for b in "$DEMO" "$DUMP"; do
	[ -x "$b" ] || { echo "FAIL: $b is not built (make dump-tools)"; exit 1; }
done
# Dumps go to memory when there is room: thousands of small files created
# and deleted per run are slow on a busy disk and add to its churn.
base=/tmp
avail=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
[ -n "$avail" ] && [ "$avail" -gt 524288 ] && [ -w /dev/shm ] && base=/dev/shm
T=$(mktemp -d "$base/evs-dumptest.XXXXXX")
export EVSTREAM_RUNTIME_DIR=$T/run
mkdir -m 700 "$EVSTREAM_RUNTIME_DIR"
NAME=dt-$$
PIDS=()
MOUNTS=()

cleanup() {
	for p in "${PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; [ -f "$T/demo.err" ] && sed 's/^/  demo: /' "$T/demo.err"; exit 1; }
ok() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; }

# start_demo ARGS...: evs-demo in the background as $DEMO_PID.
start_demo() {
	"$DEMO" --name "$NAME" "$@" 2>"$T/demo.err" &
	DEMO_PID=$!
	PIDS+=("$DEMO_PID")
}

# start_peer NAME MODE ARGS...: tests/dump/peer.c's producer in the
# background as $PEER_PID, its stderr in $T/peer.err.
start_peer() {
	# built by make tests, not by make: run alone, a missing one would
	# show only as evs-dump's "no producer named ..."
	[ -x "$ROOT/$BUILD/tests/dump-peer" ] || fail "$BUILD/tests/dump-peer is not built (make tests)"
	"$ROOT/$BUILD/tests/dump-peer" "$@" 2>"$T/peer.err" &
	PEER_PID=$!
	PIDS+=("$PEER_PID")
}

# start_dump OUT ARGS...: evs-dump in the background as $DUMP_PID; its
# stdout and stderr in $T/$(basename OUT).stdout/.stderr.
start_dump() {
	local out=$1 log; shift
	# logs beside the temp dir, not in the output (which may be a full disk)
	log=$T/$(basename "$out")
	"$DUMP" --output "$out" --wait 10 --summary "$@" "$NAME" >"$log.stdout" 2>"$log.stderr" &
	DUMP_PID=$!
	PIDS+=("$DUMP_PID")
}

# wait_pid PID SECONDS: the exit status, or fail when it does not end.
wait_pid() {
	local pid=$1 secs=$2 i=0
	while kill -0 "$pid" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -gt $((secs * 20)) ] && fail "process $pid still running after ${secs}s"
		sleep 0.05
		# reaped already? kill -0 fails and the loop ends
		if ! [ -d "/proc/$pid" ] || grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
			break
		fi
	done
	wait "$pid"
}

# wait_for COND SECONDS: poll a shell condition.
wait_for() {
	local cond=$1 secs=$2 i=0
	until eval "$cond"; do
		i=$((i + 1))
		[ "$i" -gt $((secs * 20)) ] && fail "timed out waiting for: $cond"
		sleep 0.05
	done
}

# Both checkers: contents against the generator, then NumPy.
verify() {
	local dir=$1; shift
	"$DEMO" --verify "$dir" "$@" || fail "evs-demo --verify $dir $*"
	"$PY" demo/verify_dump.py "$dir" || fail "verify_dump.py $dir"
}

# json FILE EXPR: evaluate a Python expression over the parsed file (j).
json() {
	"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
