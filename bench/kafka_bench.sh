#!/usr/bin/env bash
# evs-forward next to kcat -P, publishing the same records to the same mock
# cluster (librdkafka's, 3 brokers, in a process of its own) in the same
# run, for 64-byte and 1 MiB events: `make bench-kafka`.
#
#   evs-forward  kafka-gen emits COUNT events of SIZE bytes into a ring
#                (as fast as the ring takes them); evs-forward publishes
#                them. Its rate: events acknowledged over the time from its
#                first record taken to its last acknowledgement.
#   kcat -P      the same records (key, 64-byte header + payload, two
#                headers) from /dev/shm: 64-byte ones from one file split
#                at a delimiter (kcat -l), 1 MiB ones as a file per message
#                (the same file COUNT times: kcat's delimiter search would
#                be its limit, at 200 MB/s); its rate: events over its
#                wall time, start to exit (it waits for every
#                acknowledgement before it exits), less its start-up and
#                exit: the wall time of the same command with one record.
# Both with the same librdkafka settings (idempotence on, a 64 MiB queue;
# for 1 MiB events message.max.bytes 2 MiB: kcat cannot read a larger record
# than that from its input, and each record then goes whole, unchunked).
# ROUNDS rounds, alternating which goes first; the ratio is evs-forward's
# rate over kcat's, per round and as the median.
#
# KBENCH_ROUNDS (5), KBENCH_SMALL (64-byte events, 1000000), KBENCH_LARGE
# (1 MiB events, 1000); KBENCH_JSON: where the report goes
# ($BUILD/bench-kafka.json).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FWD=$BUILD/evs-forward GEN=$BUILD/kafka-gen MOCK=$BUILD/tests/kafka/mock_cluster
PY=/usr/bin/python3
ROUNDS=${KBENCH_ROUNDS:-5}
SMALL=${KBENCH_SMALL:-1000000}
LARGE=${KBENCH_LARGE:-1000}
OUT=${KBENCH_JSON:-$BUILD/bench-kafka.json}
for b in "$FWD" "$GEN" "$MOCK"; do
	[ -x "$b" ] || { echo "bench-kafka: $b is not built (make kafka-tools)" >&2; exit 1; }
done
command -v kcat >/dev/null || { echo "bench-kafka: kcat is not installed (make deps)" >&2; exit 1; }

T=$(mktemp -d /dev/shm/evs-kbench.XXXXXX 2>/dev/null || mktemp -d /tmp/evs-kbench.XXXXXX)
export EVSTREAM_RUNTIME_DIR=$T/run
mkdir -m 700 "$EVSTREAM_RUNTIME_DIR"
MOCK_PID=
cleanup() {
	exec 3>&- 2>/dev/null
	[ -n "$MOCK_PID" ] && { kill "$MOCK_PID" 2>/dev/null; wait "$MOCK_PID" 2>/dev/null; }
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkfifo "$T/mock.in"
"$MOCK" <"$T/mock.in" >"$T/mock.out" 2>"$T/mock.err" &
MOCK_PID=$!
exec 3>"$T/mock.in"
for _ in $(seq 100); do [ -s "$T/mock.out" ] && break; sleep 0.05; done
BROKERS=$(head -1 "$T/mock.out")
[ -n "$BROKERS" ] || { cat "$T/mock.err"; echo "bench-kafka: the mock cluster did not start" >&2; exit 1; }
topic() { # topic NAME: a topic of one partition, made now
	local n
	n=$(wc -l <"$T/mock.out")
	echo "topic $1 1" >&3
	for _ in $(seq 100); do [ "$(wc -l <"$T/mock.out")" -gt "$n" ] && break; sleep 0.02; done
}
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cs=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)
echo "bench-kafka: $cpu, $(nproc) CPUs, clocksource $cs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench-kafka: librdkafka $(pkg-config --modversion rdkafka), $(kcat -V 2>&1 | sed -n 's/^Version \([^ ]*\).*/kcat \1/p'); mock cluster of 3 brokers, topics of 1 partition"

# evs SIZE COUNT TOPIC: prints "events seconds" for evs-forward
evs() {
	local name=kb-$$-$3
	topic "$3"
	"$GEN" produce "$name" "$1" "$2" 2>"$T/gen.err" &
	local gen=$!
	"$FWD" --brokers "$BROKERS" --topic "$3" --host bench --wait 10 -q \
		--json "$T/fwd.json" "${SETTINGS[@]}" "$name" 2>"$T/fwd.err" ||
		{ cat "$T/fwd.err" >&2; echo "bench-kafka: evs-forward failed" >&2; exit 1; }
	wait "$gen"
	"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["acked"], j["rate_seconds"])' "$T/fwd.json"
}

# kcat_ns TOPIC INPUT...: kcat -P's wall time in ns, start to exit
kcat_ns() {
	local t0 t1 topic=$1
	shift
	topic "$topic"
	t0=$(date +%s%N)
	kcat -P -b "$BROKERS" -t "$topic" -H evs.seq=0 -H evs.type=1 "${SETTINGS[@]}" "$@" 2>"$T/kcat.err" ||
		{ cat "$T/kcat.err" >&2; echo "bench-kafka: kcat -P failed" >&2; exit 1; }
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

# kc SIZE COUNT TOPIC: prints "events seconds" for kcat -P, its start-up
# and exit (one record) taken off
kc() {
	local one all
	if [ "$1" = 1M ]; then
		one=$(kcat_ns "$3-one" -k bench/kb/0 "$T/one") || exit 1
		all=$(kcat_ns "$3" -k bench/kb/0 $(for _ in $(seq "$2"); do echo "$T/one"; done)) || exit 1
	else
		one=$(kcat_ns "$3-one" -K '\x1f' -D '\x1e--evs--\x1e' -l "$T/one") || exit 1
		all=$(kcat_ns "$3" -K '\x1f' -D '\x1e--evs--\x1e' -l "$T/records") || exit 1
	fi
	echo "$2 $(( (all - one) / 1000 ))e-6"
}

rows=()
printf '%-7s %8s %5s %14s %10s %14s %10s %7s\n' size events round "evs-forward/s" "MB/s" "kcat -P/s" "MB/s" ratio
for size in 64 1M; do
	count=$SMALL
	[ "$size" = 1M ] && count=$LARGE
	bytes=$size
	[ "$size" = 1M ] && bytes=1048576
	# kcat reads a message into a buffer of message.max.bytes: room for
	# 1 MiB records for both (evs-forward then sends them whole too)
	SETTINGS=(-X enable.idempotence=true -X queue.buffering.max.kbytes=65536)
	[ "$size" = 1M ] && SETTINGS+=(-X message.max.bytes=2097152)
	if [ "$size" = 1M ]; then
		"$GEN" file "$size" 1 - >"$T/one"
	else
		"$GEN" file "$size" "$count" "bench/kb/0" >"$T/records"
		"$GEN" file "$size" 1 "bench/kb/0" >"$T/one"
	fi
	for r in $(seq "$ROUNDS"); do
		# alternate who goes first: the machine's state drifts
		if [ $((r % 2)) -eq 1 ]; then
			read -r en es < <(evs "$size" "$count" "evs-$size-$r")
			read -r kn ks < <(kc "$size" "$count" "kcat-$size-$r")
		else
			read -r kn ks < <(kc "$size" "$count" "kcat-$size-$r")
			read -r en es < <(evs "$size" "$count" "evs-$size-$r")
		fi
		[ -n "${en:-}" ] && [ -n "${kn:-}" ] || exit 1
		line=$("$PY" - "$size" "$bytes" "$r" "$en" "$es" "$kn" "$ks" <<'PYEOF'
import sys
size, b, r, en, es, kn, ks = sys.argv[1:]
b = int(b) + 64
er, kr = int(en) / float(es), int(kn) / float(ks)
print("%-7s %8s %5s %14.0f %10.1f %14.0f %10.1f %7.2f" % (size, en, r, er, er * b / 1e6, kr, kr * b / 1e6, er / kr))
PYEOF
)
		echo "$line"
		rows+=("$line")
	done
	rm -f "$T/records"
done
printf '%s\n' "${rows[@]}" >"$T/rows"
"$PY" - "$OUT" "$cpu" "$cs" "$(nproc)" "$T/rows" <<'PYEOF'
import json, statistics, sys
out, cpu, cs, ncpu, rows = sys.argv[1:]
rows = [l.split() for l in open(rows) if l.strip()]
report = {"cpu": cpu, "cpus": int(ncpu), "clocksource": cs, "sizes": {}}
for size in ("64", "1M"):
    rs = [r for r in rows if r[0] == size]
    ratios = [float(r[7]) for r in rs]
    report["sizes"][size] = {
        "events": int(rs[0][1]),
        "evs_forward_per_s": [float(r[3]) for r in rs], "evs_forward_mb_s": [float(r[4]) for r in rs],
        "kcat_per_s": [float(r[5]) for r in rs], "kcat_mb_s": [float(r[6]) for r in rs],
        "ratios": ratios, "median_ratio": statistics.median(ratios)}
    print("bench-kafka: %s-byte events: evs-forward / kcat -P median %.2f (rounds %s)%s"
          % (size if size != "1M" else "1 Mi", statistics.median(ratios), ", ".join("%.2f" % x for x in ratios),
             "" if statistics.median(ratios) >= 1 else "  BELOW kcat"))
json.dump(report, open(out, "w"), indent=1)
print("bench-kafka: %s" % out)
PYEOF
