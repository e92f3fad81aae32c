#!/usr/bin/env bash
# evs-bench runs end to end: a short throughput point and the drop path give
# a JSON report with the figures and their ratios, and the plot script draws
# from its data files. Asserts structure and non-zero counts, never speed.
set -u
BUILD=${BUILD:-build}
bin=$BUILD/evs-bench
py=/usr/bin/python3
[ -x "$bin" ] || { echo "SKIP bench smoke: $bin not built"; exit 77; }
[ -x "$py" ] || { echo "SKIP bench smoke: $py (Debian's python3) missing"; exit 77; }
out=$(mktemp -d /tmp/evs-bench-smoke.XXXXXX)
trap 'rm -rf "$out"' EXIT
# the defaults are what the reports below are checked against
unset EVSTREAM_CATCHUP_NS

"$bin" --quick --json --secs 0.05 --only tput --payload 64 --variant reserve+peek \
	--rounds 2 --plot-dir "$out" > "$out/tput.json" 2> "$out/tput.log" || { cat "$out/tput.log"; echo "FAIL: evs-bench tput"; exit 1; }
for v in wait nrt; do
	"$bin" --quick --json --secs 0.05 --only tput --payload 64 --variant "emit+$v" \
		--rounds 1 > "$out/$v.json" 2> "$out/$v.log" ||
		{ cat "$out/$v.log"; echo "FAIL: evs-bench tput $v"; exit 1; }
done
"$bin" --quick --json --only limits > "$out/limits.json" 2> "$out/limits.log" || { cat "$out/limits.log"; echo "FAIL: evs-bench limits"; exit 1; }
# the consumers' catch-up pause, which the stamped ring takes, is read off
# the library: set in the environment, the report says the value set
EVSTREAM_CATCHUP_NS=1500 "$bin" --quick --json --only cost > "$out/cost.json" 2> "$out/cost.log" || { cat "$out/cost.log"; echo "FAIL: evs-bench cost"; exit 1; }
"$bin" --quick --json --only drops > "$out/drops.json" 2> "$out/drops.log" || { cat "$out/drops.log"; echo "FAIL: evs-bench drops"; exit 1; }
"$bin" --quick --json --only lat --rounds 2 > "$out/lat.json" 2> "$out/lat.log" || { cat "$out/lat.log"; echo "FAIL: evs-bench lat"; exit 1; }
"$bin" --quick --json --only oneway --rounds 1 > "$out/oneway.json" 2> "$out/oneway.log" || { cat "$out/oneway.log"; echo "FAIL: evs-bench oneway"; exit 1; }

# LTTng-UST next to evstream's default path: both rows; LTTng's events add
# up (emitted = recorded + discarded) and its recorded count is the one
# babeltrace2 reads from the same traces (kept for it); the drop-free
# search gives its trials and bracket for both. Where LTTng cannot run,
# its rows say why and this says SKIP; evs-bench must go on all the same.
mkdir "$out/traces"
EVS_BENCH_LTTNG_KEEP="$out/traces" "$bin" --quick --json --secs 0.05 --rounds 2 --only lttng \
	> "$out/lttng.json" 2> "$out/lttng.log" || { cat "$out/lttng.log"; echo "FAIL: evs-bench lttng"; exit 1; }
"$bin" --quick --json --window 0.2 --only dropfree > "$out/dropfree.json" 2> "$out/dropfree.log" ||
	{ cat "$out/dropfree.log"; echo "FAIL: evs-bench dropfree"; exit 1; }
# a trial's drops are the run's own: the stream counted as many as emit refused
if grep -q "dropfree: evstream counted" "$out/dropfree.log"; then
	grep "dropfree: evstream counted" "$out/dropfree.log" | head -3
	echo "FAIL: evs-bench dropfree: drops counted that no emit of the trial reported"
	exit 1
fi
"$py" - "$out/lttng.json" "$out/dropfree.json" "$out/traces" <<'PY' || { cat "$out/lttng.log" "$out/dropfree.log"; exit 1; }
import json, os, re, shutil, subprocess, sys
rows = json.load(open(sys.argv[1]))["lttng"]
assert [x["system"] for x in rows] == ["evstream", "lttng-ust"], rows
e, l = rows
assert e["variant"] == "emit+consume/normal" and e["payload"] == 64 and e["timestamps"] == 1, e
assert e["rounds"] == 2 and e["events_s"] > 0, e
df = {x["system"]: x for x in json.load(open(sys.argv[2]))["dropfree"]}
assert set(df) <= {"evstream", "lttng-ust", "ratio"} and "evstream" in df and "lttng-ust" in df, df
d = df["evstream"]
assert d["window_s"] == 0.2 and d["trials"] and d["trials"][0]["probe"] == 1, d
assert d["limit"] in ("drops", "producer") and d["search_s"] > 0, d
for t in d["trials"]:
    # a trial passes when nothing was lost and the producer kept the pace
    assert t["emitted"] > 0 and t["achieved_events_s"] > 0 and not (t["pass"] and t["dropped"]), t
if d["limit"] == "drops" and d["bracket_low"] is not None:
    assert d["bracket_low"] < d["bracket_high"] and d["dropfree_events_s"] == d["bracket_low"], d
if "skipped" in l:
    assert "skipped" in df["lttng-ust"] and e["x_lttng"] is None, (l, df["lttng-ust"])
    print("SKIP lttng: " + l["skipped"])
    sys.exit(0)
assert l["rounds"] == 2 and l["events_s"] > 0 and l["emitted"] > 0, l
assert l["accounted"] == 1 and l["recorded"] + l["discarded"] == l["emitted"], l
assert l["discards"] == (l["discarded"] > 0), l
assert e["x_lttng"] > 0 and e["x_lttng_min"] <= e["x_lttng"] <= e["x_lttng_max"], e
assert "subbuf" in l["channel"] or "sub-buffers" in l["channel"], l
dl = df["lttng-ust"]
assert "skipped" not in dl and dl["trials"] and dl["trials"][0]["probe"] == 1, dl
traces = sorted(os.listdir(sys.argv[3]))
assert traces == ["trace-0", "trace-1"], traces
bt = shutil.which("babeltrace2")
if bt:
    n = 0
    for t in traces:
        out = subprocess.run([bt, os.path.join(sys.argv[3], t), "-c", "sink.utils.counter", "-p", "step=+0"],
                             capture_output=True, text=True, check=True).stdout
        n += int(re.search(r"(\d+) Event messages", out).group(1))
    assert n == l["recorded"], (n, l["recorded"])
    checked = "babeltrace2 reads as many"
else:
    checked = "babeltrace2 missing (make deps installs it): count not cross-checked"
print("ok: evs-bench lttng: %d emitted = %d recorded + %d discarded (%s); evstream default %.2fx LTTng-UST; "
      "drop-free %s / %s M/s" % (l["emitted"], l["recorded"], l["discarded"], checked, e["x_lttng"],
      "%.2f" % (d["dropfree_events_s"] / 1e6) if d["dropfree_events_s"] else "none",
      "%.2f" % (dl["dropfree_events_s"] / 1e6) if dl["dropfree_events_s"] else "none"))
PY

# a bad option value: exit 2 and a message naming the option, the value
# and what is allowed, before anything runs
bad_value() { # program option value expected-text
	"$1" "$2" "$3" --only limits > "$out/bad.log" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -qF -- "$2 '$3' is " "$out/bad.log" && grep -qF -- "$4" "$out/bad.log" ||
		{ cat "$out/bad.log"; echo "FAIL: $1 $2 '$3' gave exit $rc"; exit 1; }
}
for bad in 0 10 x 3x ""; do
	bad_value "$bin" --rounds "$bad" "; allowed is a whole number from 1 to 9"
done
for bad in 0 -1 x nan 1e9 ""; do
	bad_value "$bin" --secs "$bad" "; allowed is a number of seconds from 0.001 to 3600"
done
for bad in 0 0.001 -1 x 3601 ""; do
	bad_value "$bin" --window "$bad" "; allowed is a number of seconds from 0.01 to 3600"
done
for bad in 0 4 65537 x 18446744073709551616 ""; do
	bad_value "$bin" --ring-mb "$bad" "; allowed is a whole number from 8 to 65536"
done
for bad in 65 1000 x -1 5M ""; do
	bad_value "$bin" --payload "$bad" ""
	grep -qF "the sizes measured are 0, 64, 1024, 65536, 1048576, 4194304" "$out/bad.log" ||
		{ cat "$out/bad.log"; echo "FAIL: --payload '$bad' does not say the sizes"; exit 1; }
done
for bad in lim tputs "" all; do
	"$bin" --only "$bad" > "$out/bad.log" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -q "only '$bad' is not a part: use limits, tput, cost, lat, drops, lttng, dropfree or oneway" "$out/bad.log" ||
		{ cat "$out/bad.log"; echo "FAIL: --only '$bad' gave exit $rc"; exit 1; }
done

# bench/table.py: every report in docs/ gives its tables, and the results
# in docs/benchmarks.md and README.md are what the reports make of them;
# a report of this run fills its host kind's section of a copy of the page
# (and draws its plots); bad arguments exit 2 and say why
reports=(docs/bench-results-*.json)
for r in "${reports[@]}"; do
	"$py" bench/table.py "$r" > "$out/table.md" 2>&1 &&
		grep -q "^| drop with eBPF attached, ns per event | ≤ 10 ns | " "$out/table.md" ||
		{ cat "$out/table.md"; echo "FAIL: bench/table.py on $r"; exit 1; }
done
"$py" bench/table.py --check --update docs/benchmarks.md --update README.md "${reports[@]}" 2> "$out/check.log" ||
	{ cat "$out/check.log"; echo "FAIL: docs/benchmarks.md or README.md is not what bench/table.py makes of" \
		"${reports[*]} (make bench-page)"; exit 1; }
key=$("$py" bench/table.py --key "$out/tput.json")
cp docs/benchmarks.md "$out/page.md"
plots=()
command -v gnuplot > /dev/null && plots=(--plots "$out/img")
"$py" bench/table.py "${plots[@]}" --update "$out/page.md" "$out/tput.json" 2> "$out/update.log" &&
	sed -n "/^<!-- results:$key begin -->\$/,/^<!-- results:$key end -->\$/p" "$out/page.md" > "$out/section.md" &&
	grep -q '^| `reserve+peek` | default, zero-copy | ' "$out/section.md" &&
	grep -q '^| 64 B `reserve`/`commit` + `peek`, × bare ring | ≥ 1× | ' "$out/page.md" ||
	{ cat "$out/update.log" "$out/section.md"; echo "FAIL: bench/table.py --update with this run's report ($key)"; exit 1; }
if [ ${#plots[@]} -gt 0 ]; then
	[ -s "$out/img/bench-$key-throughput.svg" ] ||
		{ cat "$out/update.log"; echo "FAIL: bench/table.py --plots drew no bench-$key-*.svg"; exit 1; }
fi
table_bad() { # expected-text args...
	want=$1; shift
	"$py" bench/table.py "$@" > "$out/bad.log" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -qF -- "$want" "$out/bad.log" ||
		{ cat "$out/bad.log"; echo "FAIL: bench/table.py $* gave exit $rc"; exit 1; }
}
table_bad "no RUN.json given"
table_bad "--main 2: must be 1 to 1" --main 2 "${reports[0]}"
table_bad "--main needs a run number, got x" --main x "${reports[0]}"
table_bad "$out/none.json: " "$out/none.json"
table_bad "--update needs a file, got nothing" --update
table_bad "--update $out/table.md: no <!-- results:NAME begin -->" --update "$out/table.md" "${reports[0]}"
table_bad "--store $out/tput.json: a --quick run, not a result to keep" --store "$out/tput.json" --update "$out/page.md"
table_bad "--check, --store and --plots go with --update" --check "${reports[0]}"
table_bad "more than one report of host kind $("$py" bench/table.py --key "${reports[0]}")" --page "${reports[0]}" "${reports[0]}"
table_bad "--bogus: no such option" --bogus "${reports[0]}"

"$py" - "$out/tput.json" "$out/drops.json" "$out/cost.json" "$out/lat.json" "$out/limits.json" "$out/wait.json" "$out/nrt.json" <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
limits = json.load(open(sys.argv[5]))["limits"]
d = json.load(open(sys.argv[2]))
assert json.load(open(sys.argv[3]))["catchup_ns"] == 1500, "catchup_ns does not follow EVSTREAM_CATCHUP_NS"
c = json.load(open(sys.argv[3]))["cost"]
lat = json.load(open(sys.argv[4]))["latency"]
assert [x["case"] for x in lat] == ["busy-poll@10k/s", "busy-poll@1000k/s", "sleeping@10k/s", "sleeping@200k/s"], lat
for x in lat:
    # --quick: 0.4 s of events per round, at most 100000; every round's samples are kept
    per_round = min(int(x["offered_rate"] * 0.4), 100000)
    assert x["rounds"] == 2 and x["lat"]["samples"] == 2 * per_round, x
    assert x["p50_x_limit_min"] <= x["p50_x_limit"] <= x["p50_x_limit_max"], x
    assert 0 < x["lat"]["p50_ns"] <= x["lat"]["p999_ns"] <= x["lat"]["max_ns"], x
    # a busy-polling case has the one-line message at its rate, as many, in the same rounds
    if x["consumer"] == "busy_poll":
        f = x["floor_lat"]
        assert x["floor"] == "line_message" and f["samples"] == 2 * per_round, x
        assert 0 < f["p50_ns"] <= f["p999_ns"] <= f["max_ns"], x
        assert x["p50_x_floor"] > 0 and x["floor_p999_x_limit_p50"] > 0, x
    else:
        assert "floor" not in x, x
# without timestamps, then the default (with them)
assert [x["timestamps"] for x in c] == [0, 1], c
for x in c:
    for side in ("producer", "consumer"):
        assert x[side + "_ns"] > 0 and x["bare_" + side + "_ns"] > 0, x
        assert abs(x["x_bare_" + side] - x[side + "_ns"] / x["bare_" + side + "_ns"]) < 1e-3 * x["x_bare_" + side], x
    # the timestamp's floor: the bare ring's producer with one TSC read a record
    assert x["bare_ts_producer_ns"] > 0, x
# a TSC read back to back, next to clock_gettime()
tsc = next(l for l in limits if l["name"] == "tsc_read_ns")
assert tsc["value"] > 0, tsc
for k in ("cpu", "kernel", "clocksource", "producer_clock", "throughput"):
    assert k in t, "missing " + k
# the producer reads the TSC where it is invariant, whatever the clocksource
assert t["producer_clock"] in ("tsc", "clock_gettime"), t["producer_clock"]
# the consumers' catch-up pause, which the stamped ring takes too (default)
assert t["catchup_ns"] == 2000, t["catchup_ns"]
flags = next((l for l in open("/proc/cpuinfo") if l.startswith("flags")), "").split()
invariant = "constant_tsc" in flags and "nonstop_tsc" in flags
assert (t["producer_clock"] == "tsc") == invariant, (t["producer_clock"], t["clocksource"])
# emit with a consumer that sleeps in evs_consumer__wait() when empty, and
# one that reads with the reference API and polls its stream_fd
for arg, name in ((6, "emit+wait"), (7, "emit+nrt")):
    z = [x for x in json.load(open(sys.argv[arg]))["throughput"] if x.get("variant") == name]
    assert len(z) == 1 and z[0]["events_s"] > 0 and z[0]["x_bare_ring"] > 0, z
    assert z[0]["default"] == 1 and z[0]["timestamps"] == 1, z
# the limits and alternatives of a payload size are on its rows, once
assert "alternatives" not in t and "memcpy" not in t, sorted(t)
# tput divides by limits measured in its own rounds: the overview is not run
assert "limits" not in t, "limits part ran for --only tput"
names = {x["name"] for x in limits}
for k in ("clock_gettime_ns", "cacheline_oneway", "eventfd_wake_read", "cpu_stolen_from_spinner"):
    assert k in names, "missing limit " + k
rows = [x for x in t["throughput"] if x.get("variant") == "reserve+peek"]
assert len(rows) == 1, rows
r = rows[0]
assert r["payload"] == 64 and r["events_s"] > 0 and r["x_pipe"] > 0 and r["x_memcpy"] > 0, r
assert r["pipe_events_s"] > 0 and r["socket_events_s"] > 0 and r["memcpy_gb_s"] > 0, r
assert r["rounds"] == 2 and r["bare_ring_events_s"] > 0 and r["x_bare_ring"] > 0, r
# the bare ring stamped and paced like the default path, on the same row
assert r["stamped_ring_events_s"] > 0 and r["x_stamped_ring"] > 0, r
assert r["x_pipe_min"] <= r["x_pipe"] <= r["x_pipe_max"], r
causes = {x["cause"]: x for x in d["drops"]}
assert set(causes) == {"no_consumer", "ring_full"}, causes
assert all(x["ns_per_drop"] > 0 for x in causes.values())
print("ok: evs-bench report: 64 B zero-copy %.0f events/s (%.1fx pipe), drops %.1f / %.1f ns, "
      "%.1f / %.1f ns per event"
      % (r["events_s"], r["x_pipe"], causes["no_consumer"]["ns_per_drop"], causes["ring_full"]["ns_per_drop"],
         c[1]["producer_ns"], c[1]["consumer_ns"]))
PY
# the one-way probe: the message four ways, each with a figure and the line's
"$py" - "$out/oneway.json" <<'PY' || exit 1
import json, sys
ways = json.load(open(sys.argv[1]))["oneway_probe"]
assert [w["way"] for w in ways] == ["one-line message", "without pause in the poll loop",
                                    "one line reused", "stamped after the store"], ways
for w in ways:
    # stamped after its store, a message can be seen before the producer's
    # own clock read: where the line crosses fast (~50 ns on an AMD VM)
    # most of its differences are 0, so its p50 may be 0
    least = 0 if w["way"] == "stamped after the store" else 1e-9
    assert w["line_oneway_ns"] > 0 and w["p50_ns"] >= least and w["p50_x_line"] >= least, w
print("ok: evs-bench oneway: " + ", ".join("%s %.0f ns" % (w["way"], w["p50_ns"]) for w in ways))
PY
# evs-bench-drops alternates rounds without and with the BPF program; the
# program must count every drop made while it was attached, exactly
drops_bin=$BUILD/evs-bench-drops
if [ ! -x "$drops_bin" ]; then
	echo "SKIP evs-bench-drops: $drops_bin not built (make ebpf says what is missing)"
else
	for bad in 0 x -5 1e6 100000000001 ""; do
		"$drops_bin" --events "$bad" > "$out/bad.log" 2>&1
		rc=$?
		[ $rc -eq 2 ] && grep -qF "events '$bad' is" "$out/bad.log" &&
			grep -qF "; allowed is a whole number from 1 to 100000000000" "$out/bad.log" ||
			{ cat "$out/bad.log"; echo "FAIL: evs-bench-drops --events '$bad' gave exit $rc"; exit 1; }
	done
	"$drops_bin" --json --events 1500000 > "$out/bpf.json" 2> "$out/bpf.log"
	rc=$?
	if [ $rc -eq 77 ]; then
		# the reason is its last line; warnings about priority come first
		echo "SKIP evs-bench-drops with BPF: $(grep -v ': WARNING: ' "$out/bpf.log" | tail -n 1)"
	elif [ $rc -ne 0 ]; then
		cat "$out/bpf.json" "$out/bpf.log"; echo "FAIL: evs-bench-drops exit $rc"; exit 1
	else
		"$py" - "$out/bpf.json" <<'PY' || exit 1
import json, sys
b = json.load(open(sys.argv[1]))
assert b["bpf"] is True and b["rounds"] == 5, b
assert b["bpf_counted"] == b["bpf_expected"] >= 1500000, b
assert 0 < b["ns_per_drop_no_bpf"] <= b["ns_per_drop_no_bpf_median"], b
assert 0 < b["ns_per_drop_bpf"] <= b["ns_per_drop_bpf_median"], b
print("ok: evs-bench-drops: %d drops counted exactly by BPF over %d rounds, %.1f ns per drop with it"
      % (b["bpf_counted"], b["rounds"], b["ns_per_drop_bpf"]))
PY
	fi
fi
grep -q '^reserve+peek 64 ' "$out/throughput.dat" || { echo "FAIL: throughput.dat has no 64-byte zero-copy row"; exit 1; }
if command -v gnuplot >/dev/null; then
	: > "$out/latency.dat"
	gnuplot -e "dir='$out'" bench/plot.gp 2> "$out/plot.log"
	[ -s "$out/throughput.svg" ] || { cat "$out/plot.log"; echo "FAIL: no throughput.svg"; exit 1; }
	echo "ok: plot drawn"
else
	echo "SKIP plot: gnuplot missing (make deps installs gnuplot-nox)"
fi
exit 0
