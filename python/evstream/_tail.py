# SPDX-License-Identifier: MIT
"""``python3 -m evstream tail PRODUCER``: a live view of a producer's
streams: one line per event (core, seq, kind, dtype, shape, prefix, a
preview of the values), gaps in the sequence numbers and the drop
counters as they change, and a summary per core at the end.

Exit status: 0 done (the producer went, a limit was reached, SIGINT, or
the reader of stdout went: `tail P | head -3`); 1 a stream failed (a
corrupt ring: said on its core's line, the other cores watched on);
2 bad usage or no producer to connect to; 130 SIGINT while still waiting
for the producer.
"""
import argparse
import errno
import os
import selectors
import signal
import sys
import time

import evstream
from evstream._common import shown, tolerant_output


def parse_cores(text):
    cores = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if not 0 <= a <= b <= 4095:
            raise ValueError(part)
        cores.extend(range(a, b + 1))
    return cores


def preview(ev, width):
    """A few values of a tensor, as text (bfloat16 shown as its values)."""
    import numpy as np
    if ev.kind != "tensor":
        return ""
    try:
        a = ev.array()
    except Exception as e:  # an exotic dtype: say why there is no preview
        return "<%s>" % e
    n = a.size
    if a.dtype.kind == "V":
        return "<%d opaque %d-byte elements>" % (n, ev.elem_size)
    flat = a.reshape(-1)
    idx = np.arange(n) if n <= 6 else np.r_[0:3, n - 3:n]
    vals = flat[idx]
    if ev.dtype == "bfloat16":
        vals = evstream.bfloat16_to_float32(vals)
    items = [("%.6g" % v) if vals.dtype.kind == "f" else str(v) for v in vals.tolist()]
    if n > 6:
        items[3:3] = ["..."]
    text = "[" + " ".join(items) + "]"
    del a, flat
    return text if len(text) <= width else text[:width - 4] + " ...]"


class View:
    def __init__(self, out, width, show_preview):
        self.out = out
        self.width = width
        self.show_preview = show_preview
        self.events = {}
        self.drops = {}

    def event(self, ev):
        core = ev.core
        self.events[core] = self.events.get(core, 0) + 1
        if ev.gap:
            self.line("c%-3d -- gap: %d events lost before seq %d" % (core, ev.gap, ev.seq))
        if ev.kind == "tensor":
            what = "%-8s %-8s %-14s" % ("tensor", ev.dtype, str(ev.shape))
            tail = " " + preview(ev, self.width) if self.show_preview else ""
        elif ev.kind == "print":
            what, tail = "%-8s %-8s %-14s" % ("print", "", ""), ""
        else:
            what, tail = "%-8s type %-3d %-14s" % (ev.kind, ev.type, "%d bytes" % ev.nbytes), ""
        # a print's text ends its own line: not one more
        prefix = ev.prefix.rstrip("\n") if ev.prefix is not None else ""
        self.line("c%-3d seq %-8d %s %s%s" % (core, ev.seq, what, prefix, tail))

    def stats(self, core, st):
        now = st.dropped_events
        before = self.drops.get(core)
        self.drops[core] = now
        total = ", ".join("%s %d" % (c, n) for c, n in now.items() if n)
        if before is None:
            # counted before tail could look (a burst can land between the
            # producer's accepting the consumer and connect() returning)
            if total:
                self.line("c%-3d -- drops when tail connected: %s" % (core, total))
            return
        if now == before:
            return
        inc = ", ".join("%s +%d" % (c, now[c] - before[c]) for c in now if now[c] != before[c])
        self.line("c%-3d -- drops: %s (so far: %s)" % (core, inc, total))

    def line(self, text):
        # the whole line: the producer wrote its prefix, a dtype's name and
        # what a preview may quote
        self.out.write(shown(text) + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m evstream tail",
        description="Show a producer's events live: core, seq, dtype, shape, prefix, a value "
                    "preview; gaps and drops as they happen.")
    p.add_argument("producer", metavar="PRODUCER", help="the producer's name")
    p.add_argument("--cores", default=None, help="cores to watch, e.g. 0,2-3 (default all)")
    p.add_argument("--events", type=int, default=0, help="stop after N events (0: no limit)")
    p.add_argument("--seconds", type=float, default=0, help="stop after S seconds (0: no limit)")
    p.add_argument("--wait", type=float, default=2.0,
                   help="seconds to wait for the producer to appear (default 2)")
    p.add_argument("--no-preview", action="store_true", help="no values")
    p.add_argument("--width", type=int, default=60, help="widest value preview (default 60)")
    args = p.parse_args(argv)
    tolerant_output()
    # named one by one; 'not >=' refuses NaN too (a deadline never reached)
    for opt, least in (("events", 0), ("seconds", 0), ("wait", 0), ("width", 16)):
        v = getattr(args, opt)
        if not v >= least:
            p.error("--%s %r: allowed is a number >= %d" % (opt, v, least))
    try:
        cores = parse_cores(args.cores) if args.cores else None
    except ValueError:
        p.error("--cores %r: use a list like 0,2-3 of cores 0 to 4095" % args.cores)

    show_preview = not args.no_preview
    if show_preview:
        try:
            import numpy  # noqa: F401
        except ImportError:
            print("tail: no value previews: they need NumPy (python3-numpy, which "
                  "/usr/bin/python3 has); events, gaps and drops are shown", file=sys.stderr)
            show_preview = False

    streams, baseline = [], []
    try:
        for core in cores if cores is not None else range(4096):
            try:
                streams.append(evstream.connect(args.producer, core,
                                                timeout=args.wait if not streams else 2.0))
                # drops from here on happen while tail watches
                baseline.append(streams[-1].stats)
            except OSError as e:
                if cores is None and streams and e.errno == errno.EINVAL:
                    break  # past the producer's last core
                raise
    except OSError as e:
        print("tail: %s" % e, file=sys.stderr)
        for s in streams:
            s.close()
        return 2
    except KeyboardInterrupt:
        # Ctrl-C before every core was connected: nothing was read
        for s in streams:
            s.close()
        print("tail: interrupted while waiting for producer '%s'" % args.producer,
              file=sys.stderr)
        return 130

    out = sys.stdout
    view = View(out, args.width, show_preview)
    t0 = time.monotonic()
    deadline = t0 + args.seconds if args.seconds else None
    seen = 0
    live = len(streams)
    ended = {}
    failed = False
    old = signal.getsignal(signal.SIGINT)
    try:
        print("tail: producer '%s', cores %s (%s implementation); Ctrl-C ends"
              % (args.producer, ",".join(str(s.core) for s in streams), evstream.implementation),
              file=sys.stderr)
        sel = selectors.DefaultSelector()
        for s, st in zip(streams, baseline):
            sel.register(s.fileno(), selectors.EVENT_READ, s)
            view.stats(s.core, st)
            view.stats(s.core, s.stats)
        last_stats = 0.0
        while live:
            timeout = 0.5
            if deadline is not None:
                timeout = min(timeout, deadline - time.monotonic())
                if timeout <= 0:
                    break
            ready = sel.select(timeout)
            for key, _ in ready:
                s = key.data
                for _ in range(256):
                    try:
                        ev = s.read(0)
                    except evstream.EndOfStream:
                        st = s.stats
                        ended[s.core] = "died" if st.producer_died else "closed"
                        view.stats(s.core, st)
                        sel.unregister(key.fd)
                        live -= 1
                        break
                    except OSError as e:
                        # this stream is broken (a corrupt ring: EBADMSG, the
                        # library's message says what the producer wrote
                        # wrong): said, no longer watched; the others go on
                        view.line("c%-3d -- stream ended: %s" % (s.core, e.strerror or e))
                        ended[s.core] = "failed"
                        failed = True
                        sel.unregister(key.fd)
                        live -= 1
                        break
                    if ev is None:
                        break
                    with ev:
                        view.event(ev)
                    seen += 1
                    if args.events and seen >= args.events:
                        live = 0
                        break
                if not live:
                    break
            now = time.monotonic()
            if now - last_stats >= 0.5:
                last_stats = now
                for s in streams:
                    if s.core not in ended:
                        view.stats(s.core, s.stats)
            out.flush()
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        # the reader of stdout went (`tail P | head -3`): done, as at a limit.
        # What is still buffered for it goes nowhere, and at exit too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
    finally:
        signal.signal(signal.SIGINT, old)
    secs = time.monotonic() - t0
    # the events shown (seen may miss the last one when Ctrl-C came just after it)
    print("tail: %d events in %.1f s" % (sum(view.events.values()), secs), file=sys.stderr)
    print("  core   events     lost  ring_full  too_big  no_consumer  no_memory  producer",
          file=sys.stderr)
    for s in streams:
        st = s.stats
        d = st.dropped_events
        print("  %4d %8d %8d %10d %8d %12d %10d  %s" % (
            s.core, view.events.get(s.core, 0), s.lost, d["ring_full"], d["too_big"],
            d["no_consumer"], d["no_memory"], ended.get(s.core, "running")), file=sys.stderr)
        s.close()
    out.flush()
    return 1 if failed else 0
