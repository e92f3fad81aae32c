#!/usr/bin/env bash
# `make kafka-demo`: the README's Kafka example, run for real. evs-demo (2
# cores) -> evs-forward -> a Kafka topic -> evs-dump --kafka, then the dump
# verified against the generator and with NumPy. Against librdkafka's mock
# cluster (3 brokers on loopback ports) unless KAFKA_BROKERS names a real
# cluster; nothing else changes.
# Environment: BUILD, KAFKA_BROKERS, KAFKA_TOPIC (evstream-demo),
# DUMP_DIR (kdump), DEMO_EVENTS (events per core, 250).
set -u
BUILD=${BUILD:-build}
BROKERS=${KAFKA_BROKERS:-}
TOPIC=${KAFKA_TOPIC:-evstream-demo}
DIR=${DUMP_DIR:-kdump}
EVENTS=${DEMO_EVENTS:-250}
# a name of its own: a real topic may hold earlier runs
NAME=evs-demo-$$
PY=/usr/bin/python3

export EVSTREAM_RUNTIME_DIR
EVSTREAM_RUNTIME_DIR=$(mktemp -d /tmp/evs-kdemo.XXXXXX) || exit 1
pids=()
cleanup() {
	exec 3>&- 2>/dev/null
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$EVSTREAM_RUNTIME_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -e "$DIR" ]; then
	if [ -f "$DIR/summary.json" ] || [ -z "$(ls -A "$DIR" 2>/dev/null)" ]; then
		rm -rf "$DIR"
	else
		echo "kafka-demo: $DIR exists and is not a dump; choose another: make kafka-demo DUMP_DIR=..." >&2
		exit 1
	fi
fi

if [ -z "$BROKERS" ]; then
	mkfifo "$EVSTREAM_RUNTIME_DIR/mock.in"
	"$BUILD/tests/kafka/mock_cluster" --topic "$TOPIC:6" <"$EVSTREAM_RUNTIME_DIR/mock.in" \
		>"$EVSTREAM_RUNTIME_DIR/mock.out" &
	pids+=($!)
	exec 3>"$EVSTREAM_RUNTIME_DIR/mock.in"
	for _ in $(seq 100); do [ -s "$EVSTREAM_RUNTIME_DIR/mock.out" ] && break; sleep 0.05; done
	BROKERS=$(head -1 "$EVSTREAM_RUNTIME_DIR/mock.out")
	echo "kafka-demo: librdkafka's mock cluster (3 brokers) at $BROKERS; KAFKA_BROKERS=host:port for a real one"
fi
host=$(hostname)
echo "kafka-demo: evs-demo emits $EVENTS events on each of 2 cores; evs-forward publishes them to topic '$TOPIC'"
"$BUILD/evs-demo" --name "$NAME" --cores 2 --rate 500 --events "$EVENTS" --wait-consumers 10 \
	2>"$EVSTREAM_RUNTIME_DIR/demo.err" &
demo=$!
pids+=("$demo")
"$BUILD/evs-forward" --brokers "$BROKERS" --topic "$TOPIC" --wait 30 --summary "$NAME" || exit 1
wait "$demo" || { cat "$EVSTREAM_RUNTIME_DIR/demo.err"; exit 1; }
echo "kafka-demo: evs-dump --kafka reads the topic back into $DIR/ (a new group: from its start)"
"$BUILD/evs-dump" --kafka "$BROKERS" --topic "$TOPIC" --group "kafka-demo-$$" --until-idle 2 \
	-o "$DIR" --summary --no-print || exit 1
d=$DIR/$host/$NAME
echo "kafka-demo: verifying $d against the generator, then with NumPy"
"$BUILD/evs-demo" --verify "$d" || exit 1
"$PY" demo/verify_dump.py "$d" || exit 1
echo "kafka-demo: OK. Load a tensor: $PY -c \"import numpy; print(numpy.load('$d/c0/000000000000.npy'))\""
