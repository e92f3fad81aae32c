#!/usr/bin/env bash
# A third-party client reads what evstream wrote: kcat (librdkafka's
# command-line client, not evstream code) consumes the topic evs-forward
# filled and sees one record per acknowledged event, keyed
# "<host>/<producer>/<core>", all of a core in one partition in sequence
# order, with the headers evs.seq, evs.type, evs.dtype and evs.shape, and a
# value of the 64-byte record header plus the payload; the headers agree
# with what evs-dump --kafka wrote from the same records.
. "$(dirname "$0")/lib.sh"
[ -n "$KCAT" ] || { skip "kcat is not installed (make deps installs it)"; exit 77; }

start_mock --topic "$TOPIC:4"
start_demo --cores 2 --rate 2000 --events 300 --wait-consumers 10
start_forward --host kt-kcat
wait_pid "$DEMO_PID" 30 || fail "evs-demo exited with $?"
wait_pid "$FWD_PID" 30 || { cat "$T/fwd.err"; fail "evs-forward exited with $?"; }
check_accounts
"$KCAT" -C -b "$BROKERS" -t "$TOPIC" -e -q -f '%p\t%o\t%k\t%S\t%h\n' >"$T/kcat.out" 2>"$T/kcat.err" ||
	{ cat "$T/kcat.err"; fail "kcat -C exited with $?"; }
head -3 "$T/kcat.out" | sed 's/^/  kcat: /'
start_kdump "$T/k" --until-idle 2 --group kcat
wait_pid "$KDUMP_PID" 60 || { cat "$T/k.stderr"; fail "evs-dump --kafka exited with $?"; }
verify "$T/k/kt-kcat/$NAME" >/dev/null
"$PY" - "$T/kcat.out" "$T/k/kt-kcat/$NAME/index.jsonl" "$T/fwd.json" "$NAME" <<'PYEOF' || fail "kcat does not see what evs-forward wrote"
import json, re, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
index = {(r["core"], r["seq"]): r for r in map(json.loads, open(sys.argv[2]))}
fwd = json.load(open(sys.argv[3]))
name = sys.argv[4]
assert len(rows) == fwd["acked"], (len(rows), fwd["acked"])
part, last = {}, {}
for p, off, key, size, hdrs in rows:
    host, prod, core = key.split("/")
    assert host == "kt-kcat" and prod == name, key
    core = int(core)
    # every header name starts with "evs.": shapes hold commas
    h = dict(kv.split("=", 1) for kv in re.split(r",(?=evs\.)", hdrs))
    seq = int(h["evs.seq"])
    assert h["evs.type"] == "1", h
    assert part.setdefault(core, p) == p, "core %d in two partitions" % core
    assert seq == last.get(core, -1) + 1, "core %d: seq %d after %d" % (core, seq, last.get(core, -1))
    last[core] = seq
    r = index[(core, seq)]
    if r["kind"] == "print":
        assert "evs.dtype" not in h and "evs.shape" not in h, h
        assert int(size) == 64 + 1024, (size, r)
    else:
        assert h["evs.dtype"] == r["dtype"], (h, r)
        assert json.loads(h["evs.shape"]) == r["shape"], (h, r)
        assert int(size) == 64 + 1024 + r["bytes"], (size, r)
for c in fwd["cores"]:
    assert last[c["core"]] + 1 == c["acked"], c
print("kcat: %d records, cores %s in partitions %s; keys, headers and sizes agree with the dump"
      % (len(rows), sorted(part), [part[c] for c in sorted(part)]))
PYEOF
ok "kcat reads $(wc -l <"$T/kcat.out") records with their keys and headers, as evs-forward wrote them"
