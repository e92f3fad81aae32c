# SPDX-License-Identifier: MIT
"""The Python benchmark (make bench-python): ratios measured side by side
in one run, on this machine, in alternating rounds (medians). Not a test:
nothing here passes or fails.

A. Consumer cost per event, the events already there (one process, one
   core; the producer's work is not counted):
   - 64-byte events iterated with the native extension and the fallback
     (``for ev in stream``: an Event per record, leased and released);
   - a Python reader of the same events (64-byte header + payload) from a
     pipe: a buffered file read per header and per payload, the events
     written into the pipe beforehand (its 1 MiB holds 8192);
   - small tensors (4x4 float32, prefix and shape parsed), native and
     fallback, iterated alone and with ``ev.array()`` per event: what a
     numerics check in Python pays per tensor before looking at it;
   - a bare Python loop over as many objects, and over a C method call,
     next to the native figure: what a Python-level event costs at least.
B. Throughput with a C producer in another process flat out (2 CPUs: one
   each), measured by the consumer from its first event to the end:
   - 64-byte events: native and fallback iteration, and the Python pipe
     reader fed by a C writer emitting one write() per event (as
     evs-bench's pipe: a producer emitting one event at a time);
   - 1 MiB float32 tensors: ``ev.array()`` per event (zero copy), native
     and fallback, against the C consumer (peek, evs_tensor_parse,
     release) in bytes/s. Neither reads the tensor bytes.
C. Like for like with the pipe: the pipe's writer blocks when its reader
   falls behind, so the pipe reader loses nothing; evstream's producer
   never blocks, and a C producer flat out (B) outruns any Python reader,
   which then reads a full ring. So: the highest rate a C producer in
   another process can offer 64-byte events at, into a default stream
   (65536 events), for 1 s windows, with the native reader losing none,
   against the pipe reader's rate of B in the same round.

Every worker runs in its own process with EVSTREAM_PY_IMPL set.
"""
import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HDR = 64


def worker_iter(impl, n):
    import evstream
    assert evstream.implementation == impl
    name = "pybench-iter-%d" % os.getpid()
    p = evstream.Producer(name, 1, ring_bytes=(n + 16) * (HDR + 64) + (1 << 20),
                          max_events=n + 16, hugepages="off")
    s = evstream.connect(name, 0)
    payload = bytes(64)
    out = []
    for _ in range(5):
        for _ in range(n):
            p.emit(0, 2, payload)
        t0 = time.perf_counter_ns()
        for ev in itertools.islice(s, n):
            pass
        t1 = time.perf_counter_ns()
        del ev
        out.append((t1 - t0) / n)
    return {"ns_per_event": statistics.median(out)}


def worker_tensor(impl, n):
    """Small tensors (4x4 float32, already in the ring): iteration alone,
    and iteration with ev.array() per event, as a numerics check reads."""
    import numpy as np
    import evstream
    assert evstream.implementation == impl
    name = "pybench-tensor-%d" % os.getpid()
    rec = HDR + 1024 + 64 + 64      # header, the fixed payload part, data, slack
    p = evstream.Producer(name, 1, ring_bytes=(n + 16) * rec + (1 << 20), max_events=n + 16,
                          hugepages="off")
    s = evstream.connect(name, 0)
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    it, arr = [], []
    for _ in range(5):
        for timed in (it, arr):
            for _ in range(n):
                if not p.emit_tensor(0, "layer.0.attn", x):
                    raise SystemExit("tensor worker: a tensor was dropped: %r" % (p.stats(0),))
            t0 = time.perf_counter_ns()
            if timed is it:
                for ev in itertools.islice(s, n):
                    pass
            else:
                for ev in itertools.islice(s, n):
                    a = ev.array()
            timed.append((time.perf_counter_ns() - t0) / n)
            if timed is arr:
                del a           # it holds its record, and records go back in order
            del ev
    return {"iter": statistics.median(it), "iter_array": statistics.median(arr)}


def worker_bare(n):
    objs = [object() for _ in range(n)]
    out, call = [], []
    x = 1.5
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for o in itertools.islice(objs, n):
            pass
        t1 = time.perf_counter_ns()
        for o in itertools.islice(objs, n):
            x.is_integer()          # one C method call per item
        t2 = time.perf_counter_ns()
        out.append((t1 - t0) / n)
        call.append((t2 - t1) / n)
    return {"ns_per_item": statistics.median(out), "ns_per_call": statistics.median(call)}


def pipe_events(f):
    """A Python reader of evstream-like events from a pipe: header, payload."""
    import struct
    hdr = struct.Struct("<QI4xQQ32x")
    read = f.read
    while True:
        h = read(HDR)
        if len(h) < HDR:
            return
        size, typ, seq, ts = hdr.unpack(h)
        yield seq, read(size)


def worker_pipe(n):
    import fcntl
    rfd, wfd = os.pipe()
    fcntl.fcntl(wfd, 1031, 1 << 20)   # F_SETPIPE_SZ: 1 MiB, 8192 events of 128 bytes
    chunk = (bytes([64] + [0] * 7) + bytes(HDR - 8) + bytes(64)) * 8192
    f = os.fdopen(rfd, "rb", buffering=1 << 20)
    out = []
    for _ in range(5):
        total = 0
        for _ in range(max(1, n // 8192)):
            os.write(wfd, chunk)
            t0 = time.perf_counter_ns()
            for ev in itertools.islice(pipe_events(f), 8192):
                pass
            total += time.perf_counter_ns() - t0
        out.append(total / (max(1, n // 8192) * 8192))
    return {"ns_per_event": statistics.median(out)}


def worker_stream(impl, name, arrays):
    import evstream
    import numpy  # noqa: F401  (imported now, not at the first event's array())
    assert evstream.implementation == impl
    s = evstream.connect(name, 0, timeout=30)
    n = nbytes = 0
    t0 = None
    for ev in s:
        if t0 is None:
            t0 = time.perf_counter()
        n += 1
        if arrays:
            nbytes += ev.array().nbytes
        else:
            nbytes += ev.nbytes
    t1 = time.perf_counter()
    del ev
    return {"events": n, "bytes": nbytes, "seconds": t1 - t0}


def worker_pipe_stream():
    f = os.fdopen(sys.stdin.fileno(), "rb", buffering=1 << 20)
    n = nbytes = 0
    t0 = None
    for seq, data in pipe_events(f):
        if t0 is None:
            t0 = time.perf_counter()
        n += 1
        nbytes += len(data)
    return {"events": n, "bytes": nbytes, "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------- driver

def run_worker(args, impl=None, stdin=None):
    env = dict(os.environ)
    if impl:
        env["EVSTREAM_PY_IMPL"] = impl
    r = subprocess.run([sys.executable, __file__, "--worker", *map(str, args)], env=env,
                       stdin=stdin, capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise SystemExit("worker %s failed: %s" % (args, r.stderr))
    return json.loads(r.stdout)


def pipelined(peer, kind, size, secs, consumer):
    """The C producer flat out, and a consumer (python worker args or the C one)."""
    name = "pybench-%d-%d" % (os.getpid(), time.monotonic_ns())
    prod = subprocess.Popen([peer, "produce", name, kind, str(size), str(secs)],
                            stderr=subprocess.DEVNULL)
    try:
        if consumer == "c":
            r = subprocess.run([peer, "consume", name], capture_output=True, text=True,
                               timeout=600)
            res = json.loads(r.stdout)
        else:
            impl, arrays = consumer
            res = run_worker(["stream", impl, name, int(arrays)], impl=impl)
    finally:
        prod.wait(600)
    return res


def paced_trial(peer, rate, secs):
    """The native reader against a producer offering `rate` events/s: the
    rate it offered (it may fall short of `rate`) if the reader lost none."""
    name = "pybench-paced-%d-%d" % (os.getpid(), time.monotonic_ns())
    prod = subprocess.Popen([peer, "paced", name, "64", str(secs), "%.0f" % rate],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        res = run_worker(["stream", "native", name, 0], impl="native")
    finally:
        out, _ = prod.communicate(timeout=600)
    p = json.loads(out)
    lost = p["dropped"] or res["events"] != p["emitted"]
    return None if lost else p["emitted"] / secs


def dropfree_rate(peer, secs, start=2e6):
    """Doubling from `start`, then halving the bracket (geometric) to 15 %."""
    lo, hi, r = 0.0, None, start
    for _ in range(12):
        got = paced_trial(peer, r, secs)
        if got is None:
            hi = r
        elif got < 0.9 * r:
            return got  # the producer's own limit: nothing was lost at its full speed
        else:
            lo = got
        if hi is not None and (lo and hi / lo < 1.15 or hi <= start / 16):
            break
        r = r * 2 if hi is None else (lo * hi) ** 0.5 if lo else hi / 2
    return lo


def pipe_pipelined(peer, size, secs):
    w = subprocess.Popen([peer, "pipe", str(size), str(secs)], stdout=subprocess.PIPE)
    try:
        import fcntl
        fcntl.fcntl(w.stdout.fileno(), 1031, 1 << 20)
    except OSError:
        pass
    res = run_worker(["pipe-stream"], stdin=w.stdout)
    w.stdout.close()
    w.wait(600)
    return res


def machine():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        cs = open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip()
    except OSError:
        cs = "?"
    return {"cpu": model, "cpus": os.cpu_count(), "clocksource": cs,
            "python": platform.python_version(), "kernel": platform.release()}


def bounded(kind, lo, hi, what):
    """An argparse type: a value of `kind` from lo to hi, else an error naming both."""
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            v = None
        if v is None or not lo <= v <= hi:
            raise argparse.ArgumentTypeError("'%s' is not allowed: %s from %s to %s" % (text, what, lo, hi))
        return v
    return parse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", required=True, help="build/python/bench/evs-pybench-peer")
    ap.add_argument("--rounds", type=bounded(int, 1, 9, "a whole number"), default=3,
                    help="alternating rounds, 1 to 9 (default 3)")
    ap.add_argument("--events", type=bounded(int, 100, 10 ** 7, "a whole number"), default=50000,
                    help="events per measurement in A, 100 to 10000000 (default 50000)")
    ap.add_argument("--seconds", type=bounded(float, 0.05, 600, "a number of seconds"), default=1.5,
                    help="producer seconds in B, 0.05 to 600 (default 1.5)")
    ap.add_argument("--window", type=bounded(float, 0.05, 600, "a number of seconds"), default=1.0,
                    help="seconds of each trial in C, 0.05 to 600 (default 1.0)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    import evstream
    have_native = evstream.implementation == "native" or os.environ.get("EVSTREAM_PY_IMPL")
    if evstream.implementation != "native":
        print("bench: the native extension is not in use (%s): build it (make python)"
              % (evstream.native_error or "EVSTREAM_PY_IMPL"), file=sys.stderr)
        return 2
    del have_native
    m = machine()
    print("bench: %s, %d CPUs, clocksource %s, Python %s, kernel %s"
          % (m["cpu"], m["cpus"], m["clocksource"], m["python"], m["kernel"]))
    n = args.events
    A = {k: [] for k in ("native", "fallback", "pipe", "bare", "call", "native_tensor",
                         "native_tensor_array", "fallback_tensor", "fallback_tensor_array")}
    B = {k: [] for k in ("native64", "fallback64", "pipe64", "c64", "native1M", "fallback1M",
                         "c1M")}
    C = {"native_dropfree64": []}
    for r in range(args.rounds):
        print("bench: round %d of %d" % (r + 1, args.rounds), file=sys.stderr)
        A["native"].append(run_worker(["iter", "native", n], "native")["ns_per_event"])
        A["fallback"].append(run_worker(["iter", "fallback", n // 10], "fallback")["ns_per_event"])
        A["pipe"].append(run_worker(["pipe", n])["ns_per_event"])
        for impl, k in (("native", n), ("fallback", n // 10)):
            t = run_worker(["tensor", impl, k], impl)
            A[impl + "_tensor"].append(t["iter"])
            A[impl + "_tensor_array"].append(t["iter_array"])
        bare = run_worker(["bare", n])
        A["bare"].append(bare["ns_per_item"])
        A["call"].append(bare["ns_per_call"])
        secs = args.seconds
        rate = lambda x: x["events"] / x["seconds"]          # noqa: E731
        bps = lambda x: x["bytes"] / x["seconds"]            # noqa: E731
        B["native64"].append(rate(pipelined(args.peer, "raw", 64, secs, ("native", False))))
        B["fallback64"].append(rate(pipelined(args.peer, "raw", 64, secs, ("fallback", False))))
        B["pipe64"].append(rate(pipe_pipelined(args.peer, 64, secs)))
        B["c64"].append(rate(pipelined(args.peer, "raw", 64, secs, "c")))
        B["c1M"].append(bps(pipelined(args.peer, "tensor", 1 << 20, secs, "c")))
        B["native1M"].append(bps(pipelined(args.peer, "tensor", 1 << 20, secs, ("native", True))))
        B["fallback1M"].append(bps(pipelined(args.peer, "tensor", 1 << 20, secs,
                                             ("fallback", True))))
        C["native_dropfree64"].append(dropfree_rate(args.peer, args.window))
    med = {k: statistics.median(v) for k, v in itertools.chain(A.items(), B.items(), C.items())}
    ratio = lambda a, b: [x / y for x, y in zip(a, b)]      # noqa: E731
    res = {
        "machine": m,
        "rounds": args.rounds,
        "A_ns_per_event": {k: med[k] for k in A},
        "B_events_per_s": {k: med[k] for k in ("native64", "fallback64", "pipe64", "c64")},
        "B_bytes_per_s": {k: med[k] for k in ("native1M", "fallback1M", "c1M")},
        "C_events_per_s": {k: med[k] for k in C},
        "ratios": {
            "A: native vs fallback (x faster)": med["fallback"] / med["native"],
            "A: native vs Python pipe reader": med["pipe"] / med["native"],
            "B: native vs fallback, 64 B": med["native64"] / med["fallback64"],
            "B: native vs Python pipe reader, 64 B": med["native64"] / med["pipe64"],
            "B: native vs the C consumer, 64 B": med["native64"] / med["c64"],
            "B: native 1 MiB arrays vs C consumer, bytes/s": med["native1M"] / med["c1M"],
            "B: fallback 1 MiB arrays vs C consumer, bytes/s": med["fallback1M"] / med["c1M"],
            "C: native drop-free vs Python pipe reader, 64 B": med["native_dropfree64"] / med["pipe64"],
        },
        "ratio_ranges": {
            "A: native vs fallback": (min(ratio(A["fallback"], A["native"])),
                                      max(ratio(A["fallback"], A["native"]))),
            "A: native vs pipe": (min(ratio(A["pipe"], A["native"])),
                                  max(ratio(A["pipe"], A["native"]))),
            "B: native vs fallback, 64 B": (min(ratio(B["native64"], B["fallback64"])),
                                            max(ratio(B["native64"], B["fallback64"]))),
            "B: native vs pipe, 64 B": (min(ratio(B["native64"], B["pipe64"])),
                                        max(ratio(B["native64"], B["pipe64"]))),
            "B: native 1 MiB vs C": (min(ratio(B["native1M"], B["c1M"])),
                                     max(ratio(B["native1M"], B["c1M"]))),
            "C: native drop-free vs pipe, 64 B": (min(ratio(C["native_dropfree64"], B["pipe64"])),
                                                  max(ratio(C["native_dropfree64"], B["pipe64"]))),
        },
    }
    print("A. consumer cost per 64-byte event, events already there (ns, median of %d rounds)"
          % args.rounds)
    print("   native %.0f  fallback %.0f  Python pipe reader %.0f  bare loop %.1f  "
          "loop + one C method call %.1f" % (med["native"], med["fallback"], med["pipe"],
                                              med["bare"], med["call"]))
    print("   small tensors (4x4 float32): native %.0f, with ev.array() %.0f;  fallback %.0f, "
          "with ev.array() %.0f" % (med["native_tensor"], med["native_tensor_array"],
                                    med["fallback_tensor"], med["fallback_tensor_array"]))
    print("B. with a C producer flat out in another process")
    print("   64 B events/s: native %.3g  fallback %.3g  Python pipe reader (C writer) %.3g  "
          "C consumer %.3g" % (med["native64"], med["fallback64"], med["pipe64"], med["c64"]))
    print("   1 MiB tensors, bytes/s: native arrays %.3g  fallback arrays %.3g  C consumer %.3g"
          % (med["native1M"], med["fallback1M"], med["c1M"]))
    print("C. 64 B, the highest rate a C producer can offer with the native reader losing none "
          "(%g s windows, default stream): %.3g events/s" % (args.window, med["native_dropfree64"]))
    print("ratios:")
    for k, v in res["ratios"].items():
        print("   %-50s %6.2f" % (k, v))
    print("ratio ranges over the rounds:")
    for k, (lo, hi) in res["ratio_ranges"].items():
        print("   %-50s %6.2f .. %.2f" % (k, lo, hi))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        kind, rest = sys.argv[2], sys.argv[3:]
        if kind == "iter":
            out = worker_iter(rest[0], int(rest[1]))
        elif kind == "tensor":
            out = worker_tensor(rest[0], int(rest[1]))
        elif kind == "bare":
            out = worker_bare(int(rest[0]))
        elif kind == "pipe":
            out = worker_pipe(int(rest[0]))
        elif kind == "stream":
            out = worker_stream(rest[0], rest[1], rest[2] == "1")
        elif kind == "pipe-stream":
            out = worker_pipe_stream()
        else:
            raise SystemExit("unknown worker %s" % kind)
        print(json.dumps(out))
        sys.exit(0)
    sys.exit(main())
