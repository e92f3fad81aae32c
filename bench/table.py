#!/usr/bin/python3
"""Markdown tables from evs-bench --json output (one or more runs).

    /usr/bin/python3 bench/table.py [--main N] RUN.json [MORE.json ...]

Run N (1-based, default 1) gives the full tables; with several files, the
targets table shows each run's value side by side, in the order given.
"""
import json
import sys

SIZES = {0: "0 B", 64: "64 B", 1024: "1 KiB", 65536: "64 KiB", 1048576: "1 MiB", 4194304: "4 MiB"}


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


def variant_cells(by, variants, size, cell):
    """One table cell per variant for this payload size, "–" where it did not run."""
    return [cell(by[(v, size)]) if (v, size) in by else "–" for v in variants]


def usage(why):
    print(f"table.py: {why}\n{__doc__.strip()}", file=sys.stderr)
    return 2


def main():
    args = sys.argv[1:]
    main_run = 1
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if args[:1] == ["--main"]:
        if len(args) < 2 or not args[1].isdigit():
            return usage(f"--main needs a run number, got {args[1] if len(args) > 1 else 'nothing'}")
        main_run = int(args[1])
        args = args[2:]
    if not args:
        return usage("no RUN.json given")
    if not 1 <= main_run <= len(args):
        return usage(f"--main {main_run}: must be 1 to {len(args)} (the number of files given)")
    runs = []
    for path in args:
        try:
            with open(path) as f:
                runs.append(json.load(f))
        except (OSError, ValueError) as e:
            return usage(f"{path}: {e}")
    d = runs[main_run - 1]
    print(f"Tables from run {main_run} of {len(runs)}.\n")
    print(f"Machine: {d['cpu']}, {d['cpus']} CPUs, Linux {d['kernel']}, clocksource {d['clocksource']}, "
          f"load at start {d['loadavg_start'].split()[0]}, ring {d['ring_bytes'] >> 20} MiB.\n")

    lims = {x["name"]: x for x in d["limits"]}
    print("| limit (same run) | value |")
    print("|---|---|")
    print(f"| clock_gettime(CLOCK_MONOTONIC), vDSO | {fmt(lims['clock_gettime_ns']['value'], 1)} ns |")
    print(f"| memcpy 1 MiB within cache | {fmt(lims['memcpy_hot']['gb_s'], 1)} GB/s |")
    tp = [t for t in d["throughput"] if "events_s" in t]
    # every throughput row carries the memcpy limit of its payload size (older
    # reports also had it in a "memcpy" section, with the same figures)
    for size in SIZES:
        row = [t for t in tp if t["payload"] == size]
        if size and row:
            print(f"| memcpy {SIZES[size]} blocks over {d['ring_bytes'] >> 20} MiB | {fmt(row[0]['memcpy_gb_s'], 1)} GB/s |")
    print()

    variants = []
    for t in tp:
        if t["variant"] not in variants:
            variants.append(t["variant"])
    by = {(t["variant"], t["payload"]): t for t in tp}
    rounds = tp[0].get("rounds", 1) if tp else 1
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
        cells = variant_cells(by, variants, size, lambda t: f"{rate(t['events_s'])} ({fmt(t['x_pipe'], 1)}×)")
        bare = f"{rate(row[0]['bare_ring_events_s'])} | " if has_bare else ""
        print(f"| {SIZES[size]} | {rate(row[0]['pipe_events_s'])} | {rate(row[0]['socket_events_s'])} | "
              + bare + " | ".join(cells) + " |")
    if has_bare:
        print("\n64 B events: × pipe (lowest and highest round), and × the bare SPSC ring (what the "
              "library costs):\n")
        print("| path | × pipe | lowest–highest round | × bare ring |")
        print("|---|---|---|---|")
        for v in variants:
            t = by.get((v, 64))
            if t:
                print(f"| {v} | {fmt(t['x_pipe'], 1)}× | {fmt(t['x_pipe_min'], 1)}–{fmt(t['x_pipe_max'], 1)}× | "
                      f"{fmt(t['x_bare_ring'], 2)}× |")
    print("\nPayload GB/s (and × memcpy of the same block size over a ring-sized area, measured just before):\n")
    print("| payload | memcpy | " + " | ".join(variants) + " |")
    print("|---" * (2 + len(variants)) + "|")
    for size in SIZES:
        if size == 0:
            continue
        row = [t for t in tp if t["payload"] == size]
        if not row:
            continue
        cells = variant_cells(by, variants, size, lambda t: f"{fmt(t['gb_s'], 2)} ({fmt(t['x_memcpy'], 2)}×)")
        print(f"| {SIZES[size]} | {fmt(row[0]['memcpy_gb_s'], 1)} | " + " | ".join(cells) + " |")
    print()

    for c in d.get("cost", []):
        print(f"CPU time per {c['payload']} B event, one core, ring in its L2 (best of {c['passes']} passes):\n")
        print("| | producer | consumer |")
        print("|---|---|---|")
        print(f"| bare SPSC ring | {fmt(c['bare_producer_ns'])} ns | {fmt(c['bare_consumer_ns'])} ns |")
        print(f"| evstream reserve/commit, peek/release | {fmt(c['producer_ns'])} ns ({fmt(c['x_bare_producer'], 1)}×) | "
              f"{fmt(c['consumer_ns'])} ns ({fmt(c['x_bare_consumer'], 1)}×) |")
        print()

    # reports before latency rounds have one limit, measured just before
    rounds = "rounds" in d["latency"][0] if d["latency"] else False
    print("| one-way latency, 64 B | events | p50 | p90 | p99 | p99.9 | max | "
          + ("limit p50 (median of rounds) | p50 × limit (lowest–highest round) |" if rounds
             else "limit p50 (just before) | p50 × limit |"))
    print("|---|---|---|---|---|---|---|---|---|")
    for l in d["latency"]:
        x = l["lat"]
        lim = l["limit_lat"]
        spread = f" ({fmt(l['p50_x_limit_min'])}–{fmt(l['p50_x_limit_max'])}×)" if rounds else ""
        print(f"| {l['case']} | {x['samples']} | {ns(x['p50_ns'])} | {ns(x['p90_ns'])} | {ns(x['p99_ns'])} | "
              f"{ns(x['p999_ns'])} | {ns(x['max_ns'])} | {l['limit']}: {ns(lim['p50_ns'])} | "
              f"{fmt(l['p50_x_limit'])}×{spread} |")
        # reports from before the one-line message have no floor
        f = l.get("floor_lat")
        if f:
            print(f"| ↳ one-line message, same rate and rounds | {f['samples']} | {ns(f['p50_ns'])} | "
                  f"{ns(f['p90_ns'])} | {ns(f['p99_ns'])} | {ns(f['p999_ns'])} | {ns(f['max_ns'])} | "
                  f"its p50 × limit {fmt(l['floor_p50_x_limit'])}×, p99.9 × limit p50 "
                  f"{fmt(l['floor_p999_x_limit_p50'])}× | case × message: p50 {fmt(l['p50_x_floor'])}×, "
                  f"p99.9 {fmt(l['p999_x_floor'])}× |")
    print()

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
            # nothing lost at full speed: no failing rate above
            bracket = (f"≥ {rate(x['bracket_low'])}" if x["bracket_high"] is None
                       else f"{rate(x['bracket_low'])}–{rate(x['bracket_high'])}")
            print(f"| {x['system']} ({x['variant']}) | {x['window_s']:g} s | {rate(x['dropfree_events_s'])} | "
                  f"{bracket} | {windows} | {x['limit']} |")
        print()

    print("| target | goal | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " |")
    print("|---|---|" + "---|" * len(runs))
    for t in d["targets"]:
        cells = []
        for r in runs:
            x = next((y for y in r["targets"] if y["target"] == t["target"]), None)
            nd = 3 if x and x["value"] is not None and x["value"] < 10 else 2
            cells.append(f"{fmt(x['value'], nd)} {x['unit']} ({x['status'].replace('_', ' ')})" if x else "–")
        # reports from before at_least was written: the ratios to pipe and memcpy were the "at least" ones
        at_least = t.get("at_least", "x pipe" in t["target"] or "x memcpy" in t["target"])
        op = "≥" if at_least else "≤"
        print(f"| {t['target']} | {op} {t['goal']:g} {t['unit']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
