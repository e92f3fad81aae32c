#!/usr/bin/env bash
# Records larger than a Kafka message travel as chunks and arrive
# whole: a 1.5 MiB float32 tensor with librdkafka's default
# message.max.bytes (1000000) goes as two chunks and loads with NumPy equal
# to what was emitted; then with message.max.bytes at its floor (4096),
# most of evs-demo's tensors go in chunks of 2928 bytes and the dump still
# matches the generator byte for byte.
. "$(dirname "$0")/lib.sh"
GEN=$ROOT/$BUILD/kafka-gen
[ -x "$GEN" ] || fail "$GEN is not built (make kafka-tools)"

start_mock --topic "$TOPIC:3" --topic "$TOPIC-small:3"
"$GEN" tensors "$NAME" 1536K 2 2>"$T/gen.err" &
GEN_PID=$!
PIDS+=("$GEN_PID")
start_forward --host kt-big
wait_pid "$GEN_PID" 30 || { cat "$T/gen.err"; fail "kafka-gen exited with $?"; }
wait_pid "$FWD_PID" 30 || { cat "$T/fwd.err"; fail "evs-forward exited with $?"; }
check_accounts
[ "$(fwd 'j["acked"]')" -eq 2 ] || fail "the two big tensors were not both acknowledged"
cs=$(fwd 'j["chunk_size"]')
[ "$cs" -lt 1572864 ] || fail "chunk size $cs: the tensor would not be chunked"
if [ -n "$KCAT" ]; then
	"$KCAT" -C -b "$BROKERS" -t "$TOPIC" -e -q -f '%h\n' >"$T/kcat.out" 2>/dev/null
	[ "$(grep -c 'evs.chunk=' "$T/kcat.out")" -eq 4 ] || fail "kcat does not see 4 chunks: $(cat "$T/kcat.out")"
fi
start_kdump "$T/k" --until-idle 2 --group big
wait_pid "$KDUMP_PID" 60 || { cat "$T/k.stderr"; fail "evs-dump --kafka exited with $?"; }
"$PY" - "$T/k/kt-big/$NAME" <<'PYEOF' || fail "the big tensors did not arrive whole"
import json, sys
import numpy as np
d = sys.argv[1]
lines = [json.loads(l) for l in open(d + "/index.jsonl")]
assert [l["seq"] for l in lines] == [0, 1], lines
for l in lines:
    a = np.load(d + "/" + l["file"])
    n = 384 * 1024
    want = ((np.arange(n, dtype=np.uint64) * 2654435761 + l["seq"]) % 65536).astype(np.float32)
    assert a.shape == (384, 1024) and a.dtype == np.float32, (a.shape, a.dtype)
    assert np.array_equal(a.reshape(-1), want), "tensor %d differs" % l["seq"]
print("2 tensors of 1.5 MiB: equal to what was emitted")
PYEOF
ok "1.5 MiB tensors over the 1000000-byte message limit arrive whole (chunks of $cs bytes)"

start_demo --cores 2 --rate 2000 --events 300 --wait-consumers 10
TOPIC=$TOPIC-small start_forward --host kt-small -X message.max.bytes=4096
wait_pid "$DEMO_PID" 30 || fail "evs-demo exited with $?"
wait_pid "$FWD_PID" 30 || { cat "$T/fwd.err"; fail "evs-forward exited with $?"; }
check_accounts
[ "$(fwd 'j["chunk_size"]')" -eq 2928 ] || fail "chunk size $(fwd 'j["chunk_size"]') with message.max.bytes=4096"
TOPIC=$TOPIC-small start_kdump "$T/s" --until-idle 2 --group small
wait_pid "$KDUMP_PID" 60 || { cat "$T/s.stderr"; fail "evs-dump --kafka exited with $?"; }
D=$T/s/kt-small/$NAME
verify "$D"
dumped_within "$D"
big=$("$PY" -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["bytes"] + 1088 > 2928))' "$D/index.jsonl")
[ "$big" -gt 100 ] || fail "only $big records were chunked"
ok "message.max.bytes=4096: $big of $(wc -l <"$D/index.jsonl") records sent in chunks, all reassembled and verified"
