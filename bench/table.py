#!/usr/bin/python3
"""Markdown from evs-bench --json reports.

    /usr/bin/python3 bench/table.py [--main N] RUN.json [MORE.json ...]
    /usr/bin/python3 bench/table.py --page REPORT.json [MORE.json ...]
    /usr/bin/python3 bench/table.py [--check] [--store NEW.json] [--plots DIR]
                                    --update FILE [--update FILE ...] [REPORT.json ...]
    /usr/bin/python3 bench/table.py --key REPORT.json

Without options: every table of one run (run N, 1-based, default 1); with
several files, the targets table shows each run's value side by side.

A report stands for a host kind, its CPU's vendor and clocksource (--key
prints it: amd-kvm-clock, amd-tsc, ...); give one report per host kind.
--page prints the results part of docs/benchmarks.md: the summary across
host kinds, then one section per host kind.
--update FILE rewrites FILE in place between <!-- results:NAME begin -->
and <!-- results:NAME end -->: NAME "summary" gets the summary, a host kind
its report's section (a host kind without one gets a section after the
last); a section whose host kind has no report is kept as it is.
--check writes nothing and exits 1 when a FILE is not what the reports make.
--store NEW.json first copies NEW.json to docs/bench-results-KEY.json, the
report of its host kind, replacing the one there; a --quick or partial run
is refused. --plots DIR draws each report's plots with bench/plot.gp as
DIR/bench-KEY-throughput.svg and DIR/bench-KEY-latency.svg.
Reports from before the throughput paths were named by their calls are
read with the names mapped (copy: emit+nrt, zerocopy: reserve+peek, ...).
Bad arguments or an unreadable report: exit 2.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {0: "0 B", 64: "64 B", 1024: "1 KiB", 65536: "64 KiB", 1048576: "1 MiB", 4194304: "4 MiB"}
MIB = 1048576

# ------------------------------------------------------------ formatting


def fmt(v, nd=2):
    if v is None:
        return "–"
    return f"{v:.{nd}f}"


def scaled(v, units):
    """v in the largest of units ((threshold, format), largest first) it reaches."""
    if v is None:
        return "–"
    for threshold, form in units:
        if v >= threshold:
            return form.format(v / threshold)
    return units[-1][1].format(v / units[-1][0])


def rate(v):
    return scaled(v, [(1e6, "{:.2f} M"), (1e3, "{:.1f} k"), (1, "{:.0f}")])


def ns(v):
    return scaled(v, [(1e6, "{:.2f} ms"), (1e3, "{:.1f} µs"), (1, "{:.0f} ns")])


def times(v):
    """A ratio: more digits the closer it is to 1."""
    if v is None:
        return "–"
    return f"{v:.2f}×" if v < 10 else f"{v:.1f}×" if v < 100 else f"{v:.0f}×"


def spread(lo, hi):
    return f"{fmt(lo)}–{fmt(hi)}×" if lo is not None and hi is not None else "–"


# ---------------------------------------------------------------- reports

# Reports from before the paths were named by their two calls: path ->
# (producer, consumer). "stayaway" was a consumer that stayed away 20 us
# from an empty ring (docs/design-notes.md, "Pacing (not kept)").
OLD_PATHS = {"copy": ("emit", "nrt"), "zerocopy": ("reserve", "peek"), "batch": ("reserve", "consume"),
             "deferred32": ("deferred32", "peek"), "zcwait": ("reserve", "wait"),
             "zcdelay": ("reserve", "stayaway")}


def new_name(v):
    if "+" in v:
        return v
    parts = v.split("/")
    prod, cons = OLD_PATHS.get(parts[0], (parts[0], "?"))
    return f"{prod}+{cons}" + ("/huge" if "huge" in parts else "") + ("/no-ts" if "no-ts" in parts else "")


def normalise(d):
    """Old reports' throughput rows under the current names (d["old_names"] says so)."""
    d["old_names"] = False
    for t in d.get("throughput", []):
        v = t.get("variant", "")
        if "+" in v:
            continue
        d["old_names"] = True
        t["old_variant"] = v
        t["variant"] = new_name(v)
        if "events_s" in t:
            t["producer"], t["consumer"] = t["variant"].split("/")[0].split("+")
            t["default"] = int(t.get("pages") == "normal" and t.get("timestamps") == 1
                               and t["producer"] != "deferred32" and t["consumer"] != "stayaway")
    return d


def host_key(d):
    vendor = re.match(r"[A-Za-z]*", d.get("cpu", "")).group(0).lower() or "cpu"
    cs = re.sub(r"[^a-z0-9-]+", "-", d.get("clocksource", "unknown").lower()).strip("-")
    return f"{vendor}-{cs}"


def cpu_name(d):
    """The CPU model as people say it: 'Intel(R) Xeon(R) Processor' is Intel Xeon."""
    name = re.sub(r"\((R|TM)\)", "", d["cpu"])
    name = re.sub(r"\s+(Processor|CPU)\b.*$", "", name)
    return re.sub(r"\s+", " ", name).strip() or d["cpu"]


def host_title(d):
    return f"{cpu_name(d)}, clocksource {d['clocksource']}"


def load(path):
    with open(path) as f:
        d = json.load(f)
    if not isinstance(d, dict) or "cpu" not in d:
        raise ValueError("not an evs-bench --json report")
    d["path"] = path
    return normalise(d)


def full_run(d):
    """Why a report is not a full make bench run, or None."""
    if d.get("quick"):
        return "a --quick run"
    missing = [k for k in ("limits", "throughput", "latency", "drops", "targets") if k not in d]
    if missing:
        return "a partial run (no " + ", ".join(missing) + ")"
    return None


def tput(d, variant, payload):
    return next((t for t in d.get("throughput", []) if t.get("variant") == variant
                 and t.get("payload") == payload and "events_s" in t), None)


def lat_case(d, name):
    return next((x for x in d.get("latency", []) if x.get("case") == name), None)


def limit(d, name):
    return next((x for x in d.get("limits", []) if x.get("name") == name), None)


def lttng(d, system):
    return next((x for x in d.get("lttng", []) if x.get("system") == system), None)


def get(x, *keys):
    for k in keys:
        if x is None:
            return None
        x = x.get(k)
    return x


def rel(path):
    """A report's path as the repository names it, where it is in it."""
    p = os.path.abspath(path)
    return os.path.relpath(p, ROOT) if p.startswith(ROOT + os.sep) else path


# ------------------------------------------------------ summary and sections

# The targets of evs-bench (bench/evs_bench.c, targets()), each with what
# gives its value in any report; a report's own targets section, where it
# has the target, gives the goal and the verdict.
TARGETS = [
    ("64 B emit + peek, x bare SPSC ring", "64 B `emit` + `peek`, × bare ring", 1, True,
     lambda d: get(tput(d, "emit+peek", 64), "x_bare_ring")),
    ("64 B reserve/commit + peek, x bare SPSC ring", "64 B `reserve`/`commit` + `peek`, × bare ring", 1, True,
     lambda d: get(tput(d, "reserve+peek", 64), "x_bare_ring")),
    ("64 B emit + consume, x bare SPSC ring", "64 B `emit` + `consume`, × bare ring", 1, True,
     lambda d: get(tput(d, "emit+consume", 64), "x_bare_ring")),
    ("64 B emit + read_one_event, x bare SPSC ring", "64 B `emit` + `read_one_event`, × bare ring", 1, True,
     lambda d: get(tput(d, "emit+nrt", 64), "x_bare_ring")),
    ("evstream default 64 B, x LTTng-UST", "64 B `emit` + `consume`, × LTTng-UST", 3, True,
     lambda d: get(lttng(d, "evstream"), "x_lttng")),
    ("1 MiB reserve/commit + peek GB/s, x memcpy", "1 MiB `reserve`/`commit` + `peek`, × memcpy", 0.8, True,
     lambda d: get(tput(d, "reserve+peek", MIB), "x_memcpy")),
    ("1 MiB reserve/commit + peek, huge pages, x memcpy", "the same on huge pages", 0.8, True,
     lambda d: get(tput(d, "reserve+peek/huge", MIB), "x_memcpy")),
    ("busy-poll p50, x cache-line one-way", "busy-poll p50, × cache-line one-way", 1.5, False,
     lambda d: get(lat_case(d, "busy-poll@10k/s"), "p50_x_limit")),
    ("busy-poll p99.9, x cache-line one-way", "busy-poll p99.9, × cache-line one-way", 5, False,
     lambda d: get(lat_case(d, "busy-poll@10k/s"), "p999_x_limit_p50")),
    ("sleeping p50, x raw eventfd wake (read)", "sleeping p50, × raw eventfd wake", 1.2, False,
     lambda d: get(lat_case(d, "sleeping@10k/s"), "p50_x_limit")),
    ("drop with eBPF attached, ns per event", "a drop with the eBPF counter attached", 10, False,
     lambda d: get(d, "drops_bpf", "ns_per_drop_bpf") if get(d, "drops_bpf", "bpf") else None),
]

# The options, 64-byte events: (variant, what it is, what it costs).
OPTIONS = [
    ("deferred32+peek", "deferred publication, 32 records per `publish()`",
     "latency: a record waits for the next publish (here up to 31 records later); a burst shares one "
     "timestamp"),
    ("reserve+peek/no-ts", "no timestamps (`no_timestamps = 1`)",
     "none in latency; records carry no time (`timestamp_ns` 0)"),
    ("reserve+peek/huge", "huge pages (`EVSTREAM_HUGEPAGES`; `auto` uses them when free)",
     "none in latency; 32 free 2 MiB pages per 64 MiB ring"),
    ("emit+wait", "a consumer that sleeps in `evs_consumer__wait()` when empty",
     "latency: a wake, about a raw eventfd wake (sleeping p50 above); each sleep costs the producer an "
     "IPI and an eventfd write"),
]

# The paths of a host kind's table, in order, and what each is.
PATHS = [
    ("emit+peek", "default"), ("reserve+peek", "default, zero-copy"), ("emit+consume", "default, batch read"),
    ("emit+nrt", "default, reference API"), ("deferred32+peek", "option: deferred publication"),
    ("reserve+peek/no-ts", "option: no timestamps"), ("reserve+peek/huge", "option: huge pages"),
    ("emit+wait", "consumer sleeps when empty"),
    # only in reports from before the paths were named by their calls
    ("reserve+consume", "batch read behind reserve/commit"), ("reserve+wait", "consumer sleeps when empty"),
    ("reserve+stayaway", "consumer stays away 20 µs when empty (gone)"),
]

OLD_NOTE = ("Measured with the library and the benchmark as they were before the current round of "
            "changes: rings not filled before the clock started, no "
            "LTTng-UST peer, targets against a pipe. Its path names are mapped (copy: `emit+nrt`, "
            "zerocopy: `reserve+peek`, batch: `reserve+consume`, zcwait: `reserve+wait`, zcdelay: "
            "`reserve+stayaway`); it has no `emit+peek`, `emit+consume` or LTTng-UST figures. Not "
            "comparable with a current report.")


def order(reports):
    """Current reports first, then old ones; by host kind within each."""
    return sorted(reports, key=lambda d: (d["old_names"], host_key(d)))


def column_title(d):
    return f"{cpu_name(d)}, {d['clocksource']}" + (" (earlier benchmark)" if d["old_names"] else "")


# The 64 B paths whose target is × the bare ring, by target name: where a
# report has the stamped ring, its ratio goes beside (the bare ring alone
# swings between a fast and a slow state from run to run).
STAMPED_BESIDE = {
    "64 B emit + peek, x bare SPSC ring": "emit+peek",
    "64 B reserve/commit + peek, x bare SPSC ring": "reserve+peek",
    "64 B emit + consume, x bare SPSC ring": "emit+consume",
    "64 B emit + read_one_event, x bare SPSC ring": "emit+nrt",
}


def summary(reports):
    out = []
    out.append("| target (same run) | goal | " + " | ".join(column_title(d) for d in reports) + " |")
    out.append("|---|---|" + "---|" * len(reports))
    for name, label, goal, at_least, value in TARGETS:
        unit = "ns" if name.endswith("ns per event") else "×"
        cells = []
        for d in reports:
            v = value(d)
            t = next((x for x in d.get("targets", []) if x["target"] == name), None)
            if v is None:
                cells.append("not measured" if t and t["status"] == "not_measured" else "–")
                continue
            met = t["status"] == "met" if t else (v >= goal if at_least else v <= goal)
            row = tput(d, STAMPED_BESIDE[name], 64) if name in STAMPED_BESIDE else None
            xs = get(row, "x_stamped_ring")
            # a bare ring slower than the stamped one (which does more per
            # record) was in its slow state: a "met" against it is that state's
            slow = (get(row, "stamped_ring_events_s") or 0) > (get(row, "bare_ring_events_s") or float("inf"))
            verdict = (", met against a slow bare ring" if met and slow else ", met" if met else ", missed")
            cell = (f"{v:.2f} ns" if unit == "ns" else times(v)) + verdict
            cells.append(cell + (f" ({times(xs)} the stamped ring)" if xs is not None else ""))
        g = f"{'≥' if at_least else '≤'} {goal:g}{' ns' if unit == 'ns' else '×'}"
        out.append(f"| {label} | {g} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("| option | path | what it costs | " + " | ".join(column_title(d) for d in reports) + " |")
    out.append("|---|---|---|" + "---|" * len(reports))
    for v, what, cost in OPTIONS:
        cells = [f"{times(get(tput(d, v, 64), 'x_bare_ring'))} bare ring" if tput(d, v, 64) else "–"
                 for d in reports]
        out.append(f"| {what} | `{v}`, 64 B | {cost} | " + " | ".join(cells) + " |")
    if all(d["old_names"] for d in reports):
        out.append("")
        out.append("*Earlier benchmark*: measured before the current round of changes; no host kind has a "
                   "report of the current benchmark yet (`make bench`, then `make bench-page "
                   "BENCH_RESULTS=build/bench-results/results.json`).")
    return "\n".join(out) + "\n"


def machine_line(d):
    rounds = next((t["rounds"] for t in d.get("throughput", []) if "rounds" in t), None) or \
        next((x["rounds"] for x in d.get("latency", []) if "rounds" in x), None)
    clock = {"tsc": "from the TSC", "clock_gettime": "from `clock_gettime()`"}.get(d.get("producer_clock"),
                                                                                "(not recorded)")
    return (f"Linux {d['kernel']}, {d['cpus']} CPUs (producer on CPU {d.get('cpu_producer', 0)}, consumer on "
            f"CPU {d.get('cpu_consumer', 1)}), producer timestamps {clock}; {rounds or '–'} paired round(s), "
            f"{d['secs_per_point']:g} s per throughput point{' (--quick)' if d.get('quick') else ''}; load "
            f"average {d['loadavg_start'].split()[0]} at the start. Report `{rel(d['path'])}` (all its tables: "
            f"`/usr/bin/python3 bench/table.py {rel(d['path'])}`).")


def limits_line(d):
    lims = []
    t64 = tput(d, "reserve+peek", 64) or next((t for t in d.get("throughput", []) if t.get("payload") == 64
                                                and "events_s" in t), None)
    t1m = next((t for t in d.get("throughput", []) if t.get("payload") == MIB and "events_s" in t), None)
    if t64:
        stamped = t64.get("stamped_ring_events_s")
        stamped = (f" (stamped, a TSC read per record, and read with the catch-up pause: "
                   f"{rate(stamped)}/s)" if stamped else "")
        lims.append(f"bare SPSC ring {rate(t64.get('bare_ring_events_s'))}/s{stamped} and pipe "
                    f"{rate(t64['pipe_events_s'])}/s at 64 B")
    if t1m:
        lims.append(f"memcpy {fmt(t1m['memcpy_gb_s'], 1)} GB/s in 1 MiB blocks over {d['ring_bytes'] >> 20} MiB")
    x = get(limit(d, "cacheline_oneway"), "lat", "p50_ns")
    if x is not None:
        lims.append(f"cache line one-way {ns(x)} at the start (each latency case has its own, below)")
    x = get(limit(d, "eventfd_wake_read"), "lat", "p50_ns")
    if x is not None:
        lims.append(f"raw eventfd wake {ns(x)} at the start")
    x = get(limit(d, "clock_gettime_ns"), "value")
    if x is not None:
        lims.append(f"`clock_gettime()` {fmt(x, 1)} ns")
    x = get(limit(d, "tsc_read_ns"), "value")
    if x is not None:
        lims.append(f"a TSC read (`rdtsc`, back to back) {fmt(x, 1)} ns")
    s = limit(d, "cpu_stolen_from_spinner")
    if s:
        lims.append(f"a thread spinning on CPU 1 lost {100 * s['fraction_lost']:.2f} % of its time in "
                    f"{s['gaps_per_s']:g} gaps a second")
    return "Limits, same run: " + "; ".join(lims) + "." if lims else None


def paths_table(d):
    rows = [(v, what) for v, what in PATHS if tput(d, v, 64) or tput(d, v, MIB)]
    if not rows:
        return None
    # runs since the stamped ring: x it, what the library's own work costs
    st = any(get(tput(d, v, 64), "x_stamped_ring") is not None for v, _ in rows)
    out = ["| path | what | 64 B events/s | × bare ring | " + ("× stamped ring | " if st else "") +
           "× pipe (lowest–highest round) | consumer found it empty, per event | 1 MiB GB/s (× memcpy) |",
           "|---|---|---|---|---|---|---|" + ("---|" if st else "")]
    for v, what in rows:
        a, b = tput(d, v, 64), tput(d, v, MIB)
        xs = f"{times(a.get('x_stamped_ring'))} | " if st and a else ""
        c64 = (f"{rate(a['events_s'])} | {times(a.get('x_bare_ring'))} | {xs}{times(a['x_pipe'])} "
               f"({spread(a.get('x_pipe_min'), a.get('x_pipe_max'))}) | "
               f"{fmt(a.get('consumer_empty_per_event'))}" if a else
               "– | – | " + ("– | " if st else "") + "– | –")
        c1m = f"{fmt(b['gb_s'])} ({times(b['x_memcpy'])})" if b else "–"
        out.append(f"| `{v}` | {what} | {c64} | {c1m} |")
    skipped = {}
    for t in d.get("throughput", []):
        if "skipped" in t:
            skipped.setdefault(t["variant"], t["skipped"])
    if skipped:
        out += ["", "Skipped in this run: " + "; ".join(f"`{v}` ({why})" for v, why in skipped.items()) + "."]
    return "\n".join(out)


def lttng_line(d):
    e, l = lttng(d, "evstream"), lttng(d, "lttng-ust")
    if not e or not l:
        return None
    if "skipped" in l:
        return f"LTTng-UST: not measured ({l['skipped']})."
    line = (f"Next to LTTng-UST ({l.get('version', 'version not recorded')}; {l['channel']}), 64-byte events, "
            f"{e['rounds']} round(s): evstream's `emit` + `consume` {rate(e['events_s'])}/s, the tracepoint "
            f"into a session {rate(l['events_s'])}/s emitted and {rate(l['recorded_events_s'])}/s recorded "
            f"({l['discarded']} of {l['emitted']} discarded): **{times(e['x_lttng'])}** its emit rate (rounds "
            f"{spread(e.get('x_lttng_min'), e.get('x_lttng_max'))}), {times(e.get('x_lttng_recorded'))} what "
            "it recorded.")
    free, window = [], None
    for x in d.get("dropfree", []):
        if x.get("system") not in ("evstream", "lttng-ust"):
            continue
        window = x["window_s"]
        if "skipped" in x:
            free.append(f"{x['system']} not measured ({x['skipped']})")
        elif x["dropfree_events_s"] is None:
            free.append(f"{x['system']} lost events even at {rate(x['bracket_high'])}/s")
        else:
            free.append(f"{x['system']} {'≥ ' if x['bracket_high'] is None else ''}"
                        f"{rate(x['dropfree_events_s'])}/s (bound by "
                        f"{'the producer' if x['limit'] == 'producer' else 'drops'})")
    if free:
        line += f" Highest rate with nothing lost over {window:g} s windows: " + ", ".join(free) + "."
    return line


def latency_table(d):
    if not d.get("latency"):
        return None
    out = ["| one-way, 64 B | p50 | p90 | p99 | p99.9 | limit p50 | p50 × limit (rounds) | p99.9 × limit p50 |",
           "|---|---|---|---|---|---|---|---|"]
    for x in d["latency"]:
        a, m = x["lat"], x["limit_lat"]
        what = {"cacheline_oneway": "cache line", "eventfd_wake_read": "eventfd wake"}.get(x["limit"], x["limit"])
        out.append(f"| {x['case']} | {ns(a['p50_ns'])} | {ns(a['p90_ns'])} | {ns(a['p99_ns'])} | "
                   f"{ns(a['p999_ns'])} | {what} {ns(m['p50_ns'])} | {times(x['p50_x_limit'])} "
                   f"({spread(x.get('p50_x_limit_min'), x.get('p50_x_limit_max'))}) | "
                   f"{times(x.get('p999_x_limit_p50'))} |")
        f = x.get("floor_lat")
        if f:
            out.append(f"| ↳ one-line message | {ns(f['p50_ns'])} | {ns(f['p90_ns'])} | {ns(f['p99_ns'])} | "
                       f"{ns(f['p999_ns'])} | | {times(x['floor_p50_x_limit'])} | "
                       f"{times(x['floor_p999_x_limit_p50'])} |")
    return "\n".join(out)


def bare_ts_clause(c):
    """The timestamped bare ring next to a timestamped row: the clock read's floor."""
    x = c.get("bare_ts_producer_ns")
    if not c.get("timestamps") or x is None:
        return ""
    return f"; the bare ring's with one TSC read per record {fmt(x)} ns"


def cost_line(d):
    bits = []
    for c in d.get("cost", []):
        bits.append(f"CPU time per {c['payload']}-byte event on one core ({'' if c.get('timestamps') else 'no '}"
                    f"timestamps, ring in L2, best of {c['passes']} passes): producer {fmt(c['producer_ns'])} ns "
                    f"({times(c['x_bare_producer'])} the bare ring's{bare_ts_clause(c)}), consumer "
                    f"{fmt(c['consumer_ns'])} ns ({times(c['x_bare_consumer'])}).")
    if d.get("drops"):
        s = "A dropped event: " + ", ".join(f"{fmt(x['ns_per_drop'], 1)} ns ({x['cause'].replace('_', ' ')})"
                                           for x in d["drops"])
        b = d.get("drops_bpf")
        if b and b.get("bpf"):
            # the rounds alternate without and with it; the best chunks and
            # the medians of the two can differ by the host's noise, either way
            no_bpf, no_bpf_med = b.get('ns_per_drop_no_bpf'), b.get('ns_per_drop_no_bpf_median')
            adds = (f"without it {fmt(no_bpf)} ns, median {fmt(no_bpf_med)} ns"
                    if no_bpf is not None else f"the program adds {fmt(b.get('ns_added_by_bpf'))} ns")
            s += (f"; {fmt(b['ns_per_drop_bpf'])} ns with the evs-drops eBPF program attached (best chunk; "
                  f"median {fmt(b.get('ns_per_drop_bpf_median'))} ns; {adds})")
        else:
            s += "; with eBPF: not measured (" + ("no BPF here" if b else "evs-bench-drops did not run") + ")"
        bits.append(s + ".")
    return " ".join(bits) or None


def images(d, page_dir):
    """Links to the report's plots, where they are beside the page."""
    if page_dir is None:
        return None
    key = host_key(d)
    imgs = [f"![{what}](img/bench-{key}-{kind}.svg)" for kind, what in
            (("throughput", "throughput against payload size, with memcpy, pipe and socket of the same run"),
             ("latency", "one-way latency percentiles and their limits"))
            if os.path.exists(os.path.join(page_dir, "img", f"bench-{key}-{kind}.svg"))]
    return "\n".join(imgs) or None


def section(d, page_dir=None):
    """A host kind's part of the page: its machine, limits, paths, LTTng-UST, latency, costs, plots."""
    title = f"### {host_title(d)}" + (" (earlier benchmark)" if d["old_names"] else "")
    parts = [title, machine_line(d), OLD_NOTE if d["old_names"] else None, limits_line(d), paths_table(d),
             lttng_line(d), latency_table(d), cost_line(d), images(d, page_dir)]
    return "\n\n".join(p for p in parts if p) + "\n"


# ------------------------------------------------------------ --update

MARK = re.compile(r"<!-- results:([a-z0-9-]+) begin -->\n(.*?)<!-- results:\1 end -->\n", re.S)


def update_text(text, reports, page_dir):
    """FILE's text with its sections generated; (text, notes)."""
    by_key = {host_key(d): d for d in reports}
    notes, seen = [], set()

    def fill(m):
        name = m.group(1)
        seen.add(name)
        if name == "summary":
            body = summary(reports)
        elif name in by_key:
            body = section(by_key[name], page_dir)
        else:
            notes.append(f"results:{name} kept as it is (no report of that host kind given)")
            return m.group(0)
        return f"<!-- results:{name} begin -->\n{body}<!-- results:{name} end -->\n"

    new = MARK.sub(fill, text)
    hosts = [m for m in MARK.finditer(new) if m.group(1) != "summary"]
    if hosts:
        at = hosts[-1].end()
        for d in reports:
            k = host_key(d)
            if k not in seen:
                add = f"\n<!-- results:{k} begin -->\n{section(d, page_dir)}<!-- results:{k} end -->\n"
                new = new[:at] + add + new[at:]
                at += len(add)
                notes.append(f"results:{k}: a new section")
    return new, notes


def store(path):
    """Copy a full run's report to docs/ as its host kind's; the stored path."""
    d = load(path)
    why = full_run(d)
    if why:
        raise ValueError(f"{why}, not a result to keep: run make bench")
    dest = os.path.join(ROOT, "docs", f"bench-results-{host_key(d)}.json")
    if os.path.abspath(path) != dest:
        shutil.copyfile(path, dest)
    return dest


# --------------------------------------------------------------- --plots

def plot_data(d, out):
    """throughput.dat and latency.dat, as evs-bench --plot-dir writes them."""
    def g(v):
        return "nan" if v is None else f"{v:.6g}"
    with open(os.path.join(out, "throughput.dat"), "w") as f:
        f.write("# variant payload events_s gb_s memcpy_gb_s pipe_gb_s socket_gb_s\n")
        for t in d.get("throughput", []):
            if "events_s" not in t:
                continue
            size = t["payload"]
            f.write(f"{t['variant']} {size} {g(t['events_s'])} {g(t['gb_s'])} {g(t.get('memcpy_gb_s'))} "
                    f"{g(t['pipe_events_s'] * size / 1e9)} {g(t['socket_events_s'] * size / 1e9)}\n")
    with open(os.path.join(out, "latency.dat"), "w") as f:
        f.write("# case p50 p90 p99 p999 max (ns)\n")

        def row(name, x):
            f.write(f"{name} " + " ".join(f"{x[k]:.1f}" for k in ("p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"))
                    + "\n")
        for x in d.get("latency", []):
            row(x["case"], x["lat"])
            row("(eventfd-wake)" if x["limit"] == "eventfd_wake_read" else "(cacheline-1way)", x["limit_lat"])
            if x.get("floor_lat"):
                row("(line-message)", x["floor_lat"])


def plots(d, dest):
    """The report's plots in dest; a part the report lacks draws nothing."""
    if not shutil.which("gnuplot"):
        raise ValueError("gnuplot missing (make deps installs gnuplot-nox)")
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        plot_data(d, tmp)
        # gnuplot stops at a plot without data: an error only for a part the report has
        r = subprocess.run(["gnuplot", "-e", f"dir='{tmp}'", os.path.join(ROOT, "bench", "plot.gp")],
                           capture_output=True, text=True)
        for kind, part in (("throughput", "throughput"), ("latency", "latency")):
            svg = os.path.join(tmp, f"{kind}.svg")
            if os.path.exists(svg) and os.path.getsize(svg):
                shutil.move(svg, os.path.join(dest, f"bench-{host_key(d)}-{kind}.svg"))
            elif any("events_s" in x or kind == "latency" for x in d.get(part, [])):
                raise ValueError(f"gnuplot drew no {kind}.svg: {r.stderr.strip()[-300:]}")


# ------------------------------------------------------------ full tables

def tables(runs, main_run):
    d = runs[main_run - 1]
    print(f"Tables from run {main_run} of {len(runs)}.\n")
    print(f"Machine: {d['cpu']}, {d['cpus']} CPUs, Linux {d['kernel']}, clocksource {d['clocksource']}, "
          f"load at start {d['loadavg_start'].split()[0]}, ring {d['ring_bytes'] >> 20} MiB.\n")
    if d["old_names"]:
        print(OLD_NOTE + "\n")

    lims = {x["name"]: x for x in d.get("limits", [])}
    tp = [t for t in d.get("throughput", []) if "events_s" in t]
    if lims or tp:
        print("| limit (same run) | value |")
        print("|---|---|")
        if "clock_gettime_ns" in lims:
            print(f"| clock_gettime(CLOCK_MONOTONIC), vDSO | {fmt(lims['clock_gettime_ns']['value'], 1)} ns |")
        if "tsc_read_ns" in lims:
            print(f"| TSC read (rdtsc), back to back | {fmt(lims['tsc_read_ns']['value'], 1)} ns |")
        if "memcpy_hot" in lims:
            print(f"| memcpy 1 MiB within cache | {fmt(lims['memcpy_hot']['gb_s'], 1)} GB/s |")
        # every throughput row carries the memcpy limit of its payload size
        for size in SIZES:
            row = [t for t in tp if t["payload"] == size]
            if size and row:
                print(f"| memcpy {SIZES[size]} blocks over {d['ring_bytes'] >> 20} MiB | "
                      f"{fmt(row[0]['memcpy_gb_s'], 1)} GB/s |")
        print()

    variants = []
    for t in tp:
        if t["variant"] not in variants:
            variants.append(t["variant"])
    by = {(t["variant"], t["payload"]): t for t in tp}

    def cells(size, cell):
        return [cell(by[(v, size)]) if (v, size) in by else "–" for v in variants]
    if tp:
        rounds = tp[0].get("rounds", 1)
        has_bare = any("bare_ring_events_s" in t for t in tp)
        print(f"Events per second (and × the pipe carrying the same events; median of {rounds} "
              "round(s), each ratio taken within a round):\n")
        print("| payload | pipe | Unix socket | " + ("bare SPSC ring | " if has_bare else "")
              + " | ".join(variants) + " |")
        print("|---" * (3 + has_bare + len(variants)) + "|")
        for size in SIZES:
            row = [t for t in tp if t["payload"] == size]
            if not row:
                continue
            bare = f"{rate(row[0]['bare_ring_events_s'])} | " if has_bare else ""
            print(f"| {SIZES[size]} | {rate(row[0]['pipe_events_s'])} | {rate(row[0]['socket_events_s'])} | " + bare
                  + " | ".join(cells(size, lambda t: f"{rate(t['events_s'])} ({fmt(t['x_pipe'], 1)}×)")) + " |")
        if has_bare:
            print("\n64 B events: × the bare SPSC ring (what the library costs), and × pipe (lowest and "
                  "highest round):\n")
            print("| path | × bare ring | × pipe | lowest–highest round |")
            print("|---|---|---|---|")
            for v in variants:
                t = by.get((v, 64))
                if t:
                    print(f"| {v} | {fmt(t['x_bare_ring'], 2)}× | {fmt(t['x_pipe'], 1)}× | "
                          f"{fmt(t['x_pipe_min'], 1)}–{fmt(t['x_pipe_max'], 1)}× |")
        print("\nPayload GB/s (and × memcpy of the same block size over a ring-sized area, measured just "
              "before):\n")
        print("| payload | memcpy | " + " | ".join(variants) + " |")
        print("|---" * (2 + len(variants)) + "|")
        for size in SIZES:
            row = [t for t in tp if t["payload"] == size]
            if size == 0 or not row:
                continue
            print(f"| {SIZES[size]} | {fmt(row[0]['memcpy_gb_s'], 1)} | "
                  + " | ".join(cells(size, lambda t: f"{fmt(t['gb_s'], 2)} ({fmt(t['x_memcpy'], 2)}×)")) + " |")
        print()

    for c in d.get("cost", []):
        print(f"CPU time per {c['payload']} B event, one core, ring in its L2 (best of {c['passes']} passes):\n")
        print("| | producer | consumer |")
        print("|---|---|---|")
        print(f"| bare SPSC ring | {fmt(c['bare_producer_ns'])} ns | {fmt(c['bare_consumer_ns'])} ns |")
        if c.get("timestamps") and c.get("bare_ts_producer_ns") is not None:
            print(f"| bare SPSC ring, one TSC read per record | {fmt(c['bare_ts_producer_ns'])} ns | |")
        print(f"| evstream reserve/commit, peek/release | {fmt(c['producer_ns'])} ns ({fmt(c['x_bare_producer'], 1)}×) | "
              f"{fmt(c['consumer_ns'])} ns ({fmt(c['x_bare_consumer'], 1)}×) |")
        print()

    if d.get("latency"):
        # reports before latency rounds have one limit, measured just before
        rounds = "rounds" in d["latency"][0]
        print("| one-way latency, 64 B | events | p50 | p90 | p99 | p99.9 | max | "
              + ("limit p50 (median of rounds) | p50 × limit (lowest–highest round) |" if rounds
                 else "limit p50 (just before) | p50 × limit |"))
        print("|---|---|---|---|---|---|---|---|---|")
        for x in d["latency"]:
            a, lim = x["lat"], x["limit_lat"]
            sp = f" ({fmt(x['p50_x_limit_min'])}–{fmt(x['p50_x_limit_max'])}×)" if rounds else ""
            print(f"| {x['case']} | {a['samples']} | {ns(a['p50_ns'])} | {ns(a['p90_ns'])} | {ns(a['p99_ns'])} | "
                  f"{ns(a['p999_ns'])} | {ns(a['max_ns'])} | {x['limit']}: {ns(lim['p50_ns'])} | "
                  f"{fmt(x['p50_x_limit'])}×{sp} |")
            # reports from before the one-line message have no floor
            f = x.get("floor_lat")
            if f:
                print(f"| ↳ one-line message, same rate and rounds | {f['samples']} | {ns(f['p50_ns'])} | "
                      f"{ns(f['p90_ns'])} | {ns(f['p99_ns'])} | {ns(f['p999_ns'])} | {ns(f['max_ns'])} | "
                      f"its p50 × limit {fmt(x['floor_p50_x_limit'])}×, p99.9 × limit p50 "
                      f"{fmt(x['floor_p999_x_limit_p50'])}× | case × message: p50 {fmt(x['p50_x_floor'])}×, "
                      f"p99.9 {fmt(x['p999_x_floor'])}× |")
        print()

    if d.get("drops"):
        print("| drop path | ns per dropped event | drops/s |")
        print("|---|---|---|")
        for x in d["drops"]:
            print(f"| {x['cause']}, no eBPF | {fmt(x['ns_per_drop'], 1)} | {rate(x['drops_s'])} |")
        b = d.get("drops_bpf")
        if b:
            print(f"| full ring, evs-bench-drops without BPF (best chunk) | {fmt(b.get('ns_per_drop_no_bpf'), 2)} | |")
            if b.get("bpf"):
                print(f"| full ring, evs-drops BPF program attached (best chunk) | {fmt(b.get('ns_per_drop_bpf'), 2)} | |")
        print()

    # reports from before LTTng-UST was measured have neither section
    lt = {x["system"]: x for x in d.get("lttng", [])}
    if lt:
        e, l = lt["evstream"], lt["lttng-ust"]
        print(f"64-byte events next to LTTng-UST, {e['rounds']} round(s), producer CPU {d['cpu_producer']}, "
              f"consumer CPU {d['cpu_consumer']} (LTTng's consumer daemon, writing the trace):\n")
        print("| | events/s | recorded/s | emitted | recorded | discarded |")
        print("|---|---|---|---|---|---|")
        print(f"| evstream emit + consume (default) | {rate(e['events_s'])} | | | | |")
        if "skipped" in l:
            print(f"| LTTng-UST | {l['skipped']} | | | | |")
        else:
            print(f"| LTTng-UST tracepoint, session on | {rate(l['events_s'])} | {rate(l['recorded_events_s'])} | "
                  f"{l['emitted']} | {l['recorded']} | {l['discarded']} |")
            print(f"\nevstream ÷ LTTng-UST: {fmt(e['x_lttng'])}× its emit rate (lowest–highest round "
                  f"{fmt(e['x_lttng_min'])}–{fmt(e['x_lttng_max'])}×), {fmt(e['x_lttng_recorded'])}× what it "
                  f"recorded. LTTng channel: {l['channel']}.")
        print()
    df = [x for x in d.get("dropfree", []) if x["system"] != "ratio"]
    if df:
        print("| drop-free rate, 64 B | window | highest rate with nothing lost | bracket | windows | limit |")
        print("|---|---|---|---|---|---|")
        for x in df:
            if "skipped" in x:
                print(f"| {x['system']} | {x['window_s']:g} s | {x['skipped']} | | | |")
                continue
            windows = sum(1 for t in x["trials"] if not t["probe"])
            # nothing lost at full speed: no failing rate above; lost even at the lowest: none below
            bracket = (f"≥ {rate(x['bracket_low'])}" if x["bracket_high"] is None else
                       f"< {rate(x['bracket_high'])}" if x["bracket_low"] is None else
                       f"{rate(x['bracket_low'])}–{rate(x['bracket_high'])}")
            print(f"| {x['system']} ({x['variant']}) | {x['window_s']:g} s | {rate(x['dropfree_events_s'])} | "
                  f"{bracket} | {windows} | {x['limit']} |")
        print()

    if d.get("targets"):
        print("| target | goal | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " |")
        print("|---|---|" + "---|" * len(runs))
        for t in d["targets"]:
            cs = []
            for r in runs:
                x = next((y for y in r.get("targets", []) if y["target"] == t["target"]), None)
                nd = 3 if x and x["value"] is not None and x["value"] < 10 else 2
                cs.append(f"{fmt(x['value'], nd)} {x['unit']} ({x['status'].replace('_', ' ')})" if x else "–")
            # reports from before at_least was written: the ratios to pipe and memcpy were the "at least" ones
            at_least = t.get("at_least", "x pipe" in t["target"] or "x memcpy" in t["target"])
            print(f"| {t['target']} | {'≥' if at_least else '≤'} {t['goal']:g} {t['unit']} | " + " | ".join(cs) + " |")


# ------------------------------------------------------------------ main

def usage(why):
    print(f"table.py: {why}\n{__doc__.strip()}", file=sys.stderr)
    return 2


def main():
    args = sys.argv[1:]
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    main_run, mode, check, updates, stores, plot_dir = 1, "tables", False, [], [], None
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt in ("--main", "--update", "--store", "--plots"):
            if not args or (opt == "--main" and not args[0].isdigit()):
                return usage(f"{opt} needs {'a run number' if opt == '--main' else 'a file'}, "
                             f"got {args[0] if args else 'nothing'}")
            val = args.pop(0)
            if opt == "--main":
                main_run = int(val)
            elif opt == "--update":
                updates.append(val)
            elif opt == "--store":
                stores.append(val)
            else:
                plot_dir = val
        elif opt in ("--page", "--key"):
            mode = opt[2:]
        elif opt == "--check":
            check = True
        else:
            return usage(f"{opt}: no such option")
    if updates:
        mode = "update"
    if (check or stores or plot_dir) and mode != "update":
        return usage("--check, --store and --plots go with --update")
    if mode == "update" and check and (stores or plot_dir):
        return usage("--check writes nothing: no --store or --plots with it")
    texts = {}
    for path in updates:
        try:
            with open(path) as f:
                texts[path] = f.read()
        except OSError as e:
            return usage(f"--update {path}: {e}")
        if not MARK.search(texts[path]):
            return usage(f"--update {path}: no <!-- results:NAME begin --> ... <!-- results:NAME end --> in it")
    paths = list(args)
    for s in stores:
        try:
            dest = store(s)
        except (OSError, ValueError) as e:
            return usage(f"--store {s}: {e}")
        print(f"table.py: {s} is now {rel(dest)}", file=sys.stderr)
        paths = [p for p in paths if os.path.abspath(p) != dest] + [dest]
    if not paths and mode != "update":
        return usage("no RUN.json given")
    runs = []
    for path in paths:
        try:
            runs.append(load(path))
        except (OSError, ValueError) as e:
            return usage(f"{path}: {e}")

    if mode == "tables":
        if not 1 <= main_run <= len(runs):
            return usage(f"--main {main_run}: must be 1 to {len(runs)} (the number of files given)")
        tables(runs, main_run)
        return 0
    if mode == "key":
        if len(runs) != 1:
            return usage("--key takes one report")
        print(host_key(runs[0]))
        return 0
    keys = [host_key(d) for d in runs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        return usage(f"more than one report of host kind {', '.join(dup)}: give one per host kind")
    runs = order(runs)
    if mode == "page":
        print("<!-- results:summary begin -->\n" + summary(runs) + "<!-- results:summary end -->\n")
        for d in runs:
            print(f"<!-- results:{host_key(d)} begin -->\n{section(d)}<!-- results:{host_key(d)} end -->\n")
        return 0

    if plot_dir:
        for d in runs:
            try:
                plots(d, plot_dir)
            except (OSError, ValueError) as e:
                return usage(f"--plots {plot_dir}: {host_key(d)}: {e}")
    stale = []
    for path, text in texts.items():
        new, notes = update_text(text, runs, os.path.dirname(os.path.abspath(path)))
        for n in notes:
            print(f"table.py: {path}: {n}", file=sys.stderr)
        if new == text:
            continue
        if check:
            stale.append(path)
            continue
        with open(path, "w") as f:
            f.write(new)
        print(f"table.py: {path} updated", file=sys.stderr)
    if stale:
        print("table.py: not what the reports make: " + ", ".join(stale)
              + " (make bench-page regenerates them)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
