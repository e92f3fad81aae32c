# Shared by the Kafka tests (sourced): everything of tests/dump/lib.sh (a
# private runtime and temp directory, evs-demo and evs-dump helpers,
# cleanup), plus librdkafka's mock cluster of 3 brokers in a process of its
# own (tests/kafka/mock_cluster.c), driven through a FIFO.
. "$(dirname "${BASH_SOURCE[0]}")/../dump/lib.sh"
FWD=$ROOT/$BUILD/evs-forward
MOCK=$ROOT/$BUILD/tests/kafka/mock_cluster
KCAT=$(command -v kcat || true)
# what this build has, not what the machine has now (the nokafka variant
# of tests/variants.sh builds without it on a machine that has it)
if grep -q "built without Kafka" "$DUMP"; then
	skip "this build has no Kafka tools (librdkafka-dev was missing at build time; make deps, then make)"
	exit 77
fi
for b in "$FWD" "$MOCK"; do
	[ -x "$b" ] || fail "$b is not built (make kafka-tools)"
done
TOPIC=evs-test
# The mock keeps the last 5 MiB of each partition (older message sets are
# dropped, a reader's fetch is then "out of range"): every test writes less
# than that in all, since any of its keys may share a partition.

# start_mock ARGS...: the mock cluster (ARGS: --topic NAME:PARTITIONS,
# --leader ID), its bootstrap servers in $BROKERS, commands through fd 3.
start_mock() {
	mkfifo "$T/mock.in"
	"$MOCK" "$@" <"$T/mock.in" >"$T/mock.out" 2>"$T/mock.err" &
	MOCK_PID=$!
	PIDS+=("$MOCK_PID")
	exec 3>"$T/mock.in"
	wait_for '[ -s "$T/mock.out" ]' 10
	BROKERS=$(head -1 "$T/mock.out")
}

# tests/kafka/records.py (in RECORDS_DIR) is for "$PY" - DIR <<'PYEOF' blocks that
# write messages to put on the topic by hand (sys.path has its directory)
RECORDS_DIR=$ROOT/tests/kafka

# kcat_send PARTITION FILE KEY HEADER...: one message from $T/msgs/FILE
# through kcat, as a broken or hostile writer could (KEY -: none; FILE -:
# a null value).
kcat_send() {
	local p=$1 f=$2 key=$3; shift 3
	local a=(-P -b "$BROKERS" -t "$TOPIC" -p "$p") x
	for x in "$@"; do a+=(-H "$x"); done
	if [ "$f" = - ]; then
		printf '%s;\n' "$key" | "$KCAT" "${a[@]}" -K ';' -Z 2>>"$T/kcat.err"
	elif [ "$key" = - ]; then
		"$KCAT" "${a[@]}" "$T/msgs/$f" 2>>"$T/kcat.err"
	else
		"$KCAT" "${a[@]}" -k "$key" "$T/msgs/$f" 2>>"$T/kcat.err"
	fi || fail "kcat -P $f: $(cat "$T/kcat.err")"
}

# mock_cmd COMMAND...: send one command, wait for its answer, fail unless ok.
mock_cmd() {
	local n
	n=$(wc -l <"$T/mock.out")
	echo "$*" >&3
	wait_for "[ \$(wc -l <'$T/mock.out') -gt $n ]" 10
	tail -1 "$T/mock.out" | grep -q '^ok' || fail "mock cluster: $* -> $(tail -1 "$T/mock.out")"
}

# start_forward ARGS...: evs-forward of $NAME to $TOPIC in the background
# as $FWD_PID; its table in $T/fwd.json, its stderr in $T/fwd.err.
start_forward() {
	"$FWD" --brokers "$BROKERS" --topic "$TOPIC" --wait 10 --summary --json "$T/fwd.json" \
		"$@" "$NAME" 2>"$T/fwd.err" &
	FWD_PID=$!
	PIDS+=("$FWD_PID")
}

# start_kdump OUT ARGS...: evs-dump --kafka of $TOPIC in the background as
# $KDUMP_PID; stdout and stderr in $T/$(basename OUT).stdout/.stderr.
start_kdump() {
	local out=$1 log; shift
	log=$T/$(basename "$out")
	"$DUMP" --kafka "$BROKERS" --topic "$TOPIC" --output "$out" --summary --no-print "$@" \
		>"$log.stdout" 2>"$log.stderr" &
	KDUMP_PID=$!
	PIDS+=("$KDUMP_PID")
}

# fwd EXPR: an expression over the forwarder's JSON table, as json() does.
fwd() { json "$T/fwd.json" "$1"; }

# Every core of the forwarder's table: taken = acked + lost + in flight,
# in flight 0, committed = released before it came + taken + left, produced
# = committed + dropped.
check_accounts() {
	"$PY" - "$T/fwd.json" <<'PYEOF' || fail "the forwarder's counts do not add up (see above)"
import json, sys
j = json.load(open(sys.argv[1]))
for c in j["cores"]:
    lost = sum(v for k, v in c.items() if k.startswith("lost_") and k != "lost_bytes")
    assert lost == c["lost"], c
    assert c["taken"] == c["acked"] + c["lost"] + c["in_flight"], c
    assert c["in_flight"] == 0, c
    assert c["committed"] == c["released_before"] + c["taken"] + c["left"], c
    assert c["produced"] == c["committed"] + c["ring_full"] + c["too_big"] + c["no_consumer"] \
        + c["no_memory"], c
PYEOF
}

# Says so when the mock dropped records before a reader came to them.
retention_hint() {
	grep -qs 'Offset out of range' "$T"/*.stderr &&
		echo "the mock cluster dropped records past its 5 MiB per partition before they were read"
}

# dumped_within DIR: every acknowledged event of the forwarder's table is in
# DIR/index.jsonl once, and nothing there was not taken from the rings
# (an event counted lost may still have reached Kafka: its fate was unknown).
dumped_within() {
	"$PY" - "$T/fwd.json" "$1/index.jsonl" <<'PYEOF' || { retention_hint; fail "the dump in $1 does not match the forwarder's counts"; }
import json, sys
fwd = json.load(open(sys.argv[1]))
lines = [json.loads(l) for l in open(sys.argv[2])]
for c in fwd["cores"]:
    seqs = [l["seq"] for l in lines if l["core"] == c["core"]]
    assert len(seqs) == len(set(seqs)), "core %d: duplicates" % c["core"]
    assert c["acked"] <= len(seqs) <= c["taken"], (c["core"], len(seqs), c["acked"], c["taken"])
    print("core %d: %d events dumped; %d acknowledged, %d counted lost" % (c["core"], len(seqs), c["acked"], c["lost"]))
PYEOF
}
