#!/usr/bin/env bash
# `make demo`: run evs-demo (a simulated accelerator runtime with 2 logical
# cores) and evs-dump (the tensor dumper) together for a few seconds, print
# what was dumped and dropped, and verify every file of the dump.
# Environment: BUILD (build dir), DUMP_DIR (default ./dump), DEMO_SECONDS.
set -u
BUILD=${BUILD:-build}
DIR=${DUMP_DIR:-dump}
SECS=${DEMO_SECONDS:-3}
RATE=${DEMO_RATE:-2000}
NAME=evs-demo

# A private runtime directory: our producer never meets anyone else's.
export EVSTREAM_RUNTIME_DIR
EVSTREAM_RUNTIME_DIR=$(mktemp -d /tmp/evs-demo.XXXXXX) || exit 1
PIN=
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "$PIN" ] && "$BUILD/evs-drops" --detach -d "$PIN" >/dev/null 2>&1
	rm -rf "$EVSTREAM_RUNTIME_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Only ever delete a previous dump, never some other directory.
if [ -e "$DIR" ]; then
	if [ -f "$DIR/index.jsonl" ] || [ -z "$(ls -A "$DIR" 2>/dev/null)" ]; then
		rm -rf "$DIR"
	else
		echo "demo: $DIR exists and is not a dump; choose another: make demo DUMP_DIR=..." >&2
		exit 1
	fi
fi

# The eBPF drop table: count drops through the USDT probe while we run.
drops=0
if [ -x "$BUILD/evs-drops" ] && [ "$(id -u)" -eq 0 ]; then
	PIN=/sys/fs/bpf/evs-demo-$$
	if "$BUILD/evs-drops" --background -d "$PIN" >/dev/null 2>"$EVSTREAM_RUNTIME_DIR/drops.err"; then
		drops=1
	else
		echo "demo: evs-drops could not attach ($(head -1 "$EVSTREAM_RUNTIME_DIR/drops.err")); no eBPF drop table" >&2
		PIN=
	fi
elif [ -x "$BUILD/evs-drops" ]; then
	echo "demo: not root: no eBPF drop table (the shared drop counters are below)" >&2
else
	echo "demo: $BUILD/evs-drops is not built: no eBPF drop table (the shared drop counters are below)" >&2
fi

# 8 MiB rings, not the default 68 MiB (65536 events): small enough that
# core 1's storm of 20000 events overruns its ring in the demo's seconds.
echo "demo: evs-demo emits for ${SECS}s on 2 cores at $RATE events/s each into 8 MiB rings (a print"
echo "demo: storm on core 1 and one tensor larger than the ring on core 0 included); evs-dump writes them to $DIR/"
"$BUILD/evs-demo" --name "$NAME" --cores 2 --rate "$RATE" --seconds "$SECS" --ring 8M \
	--huge-at 100 --burst-at 3000 --burst 20000 --wait-consumers 10 2>"$EVSTREAM_RUNTIME_DIR/demo.err" &
pids+=($!)
# Device prints of pipe 1 go to a file (one per event); the status line, the
# pipe-2 prints and the summary come on stderr.
"$BUILD/evs-dump" --output "$DIR" --wait 10 --summary "$NAME" >"$EVSTREAM_RUNTIME_DIR/prints.txt"
dump_rc=$?
wait "${pids[0]}"
demo_rc=$?
pids=()
sed 's/^/  /' "$EVSTREAM_RUNTIME_DIR/demo.err"
echo "demo: the first device prints (stdout of evs-dump):"
head -n 12 "$EVSTREAM_RUNTIME_DIR/prints.txt" | sed 's/^/  | /'
cp "$EVSTREAM_RUNTIME_DIR/prints.txt" "$DIR/prints.txt" 2>/dev/null

if [ "$drops" = 1 ]; then
	echo "demo: eBPF drop table (evs-drops, from the evstream:drop probe):"
	"$BUILD/evs-drops" --once -i 0.2 -d "$PIN" 2>&1 | grep -v "already counts" | sed 's/^/  /' ||
		echo "demo: evs-drops --once failed"
fi

fail=0
[ "$dump_rc" -eq 0 ] || { echo "demo: evs-dump exited with $dump_rc" >&2; fail=1; }
[ "$demo_rc" -eq 0 ] || { echo "demo: evs-demo exited with $demo_rc" >&2; fail=1; }
echo "demo: verifying $DIR: contents against the generator, then every file with NumPy"
"$BUILD/evs-demo" --verify "$DIR" || fail=1
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	/usr/bin/python3 demo/verify_dump.py "$DIR" || fail=1
else
	echo "demo: /usr/bin/python3 has no numpy (make deps installs python3-numpy)" >&2
	fail=1
fi
if [ "$fail" -ne 0 ]; then
	echo "demo: FAILED" >&2
	exit 1
fi
echo "demo: OK. Load a tensor: /usr/bin/python3 -c \"import numpy; print(numpy.load('$DIR/c0/000000000000.npy'))\""
