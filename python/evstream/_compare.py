# SPDX-License-Identifier: MIT
"""``python3 -m evstream compare DUMP_A DUMP_B``: the golden-compare workflow.

Two evs-dump directories (docs/dump.md: index.jsonl and c<core>/<seq>.npy)
are walked together: on each core, the k-th tensor with a given prefix in
A is compared with the k-th tensor with that prefix in B (so events of
other cores, prints and interleaving do not matter). When the two indexes
agree on the kind and prefix of every sequence number both hold (two runs
of the same program), tensors are matched by sequence number instead: an
event one run lost (a gap in its index) is then named as lost, and does
not shift the pairing of every later tensor with its prefix. Values are compared
as float64 (bfloat16 files hold bits: the index's dtype says so); dtypes
NumPy does not know (``|Vn``) must be equal byte for byte, and are not
compared with another dtype. Files are read a slice at a time, .npy files
and a --raw dump's core<N>.evsraw alike. An empty tensor has nothing to
read: one without a file (its shape NumPy cannot represent) is compared
by its index line. A torn last index line (no newline: evs-dump stopped
while writing it) is the end of the dump, said once.

A tensor diverges when it is not allclose(A, B, rtol, atol) (|A - B| <=
atol + rtol * |B|, NaN equal to NaN), or when --pcc is given and its
Pearson correlation is below it. With --pcc alone, only the PCC counts.
The relative error reported is |A - B| / |B| where B is not 0.

Exit status: 0 no divergence; 1 a tensor diverges; 2 bad input (a dump
or index line that cannot be read, a missing file, a file that is not a
.npy array of numbers, tensors that do not line up, whose shapes differ
or that cannot be compared: each named).
"""
import argparse
import bisect
import json
import math
import os
import sys
import time

from ._common import bfloat16_to_float32, shown, tolerant_output

EXIT_OK, EXIT_DIVERGE, EXIT_BAD = 0, 1, 2


class BadInput(Exception):
    pass


class Tensor:
    __slots__ = ("dump", "core", "seq", "prefix", "dtype", "shape", "file", "nth",
                 "offset", "npy_dtype", "nbytes", "error")

    def label(self):
        return "core %d seq %d %r" % (self.core, self.seq, self.prefix)


class Index:
    """A dump's index: its tensors by core in index order, and per core
    what every line says (seq -> (kind, prefix)), its gaps and last seq."""

    def __init__(self, d):
        self.dir = d
        self.tensors = {}
        self.events = {}
        self.gaps = {}
        self.last = {}
        self.repeated_seq = set()   # cores where a seq is indexed twice
        self.torn = None            # (line number, bytes) of a torn last line

    def gap_before(self, core, seq):
        """(seq of the line after the gap, events lost) of the gap that
        holds seq, or None."""
        gaps = self.gaps.get(core)      # sorted by read_index()
        if not gaps:
            return None
        i = bisect.bisect_right(gaps, (seq, math.inf))
        if i < len(gaps) and gaps[i][0] - gaps[i][1] <= seq:
            return gaps[i]
        return None

    def lost(self, core, upto=None):
        """Events lost on core (before seq upto), and the gaps' lines."""
        gs = [(after, n) for after, n in self.gaps.get(core, ()) if upto is None or after <= upto]
        return sum(n for _, n in gs), [after for after, _ in gs]


def read_index(d):
    """A dump's Index (tensors by core, in index order)."""
    path = os.path.join(d, "index.jsonl")
    if not os.path.isdir(d):
        raise BadInput("%s: no such directory" % d)
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except OSError as e:
        raise BadInput("%s: cannot read the index (%s): not an evs-dump directory?"
                       % (path, e.strerror)) from None
    index = Index(d)
    # evs-dump writes a line and its newline with one write(): what follows
    # the last newline is the line it was writing when it stopped, the end
    # of the dump, not read
    torn = lines.pop()
    if torn:
        index.torn = (len(lines) + 1, len(torn))
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            # decoded here, line by line, so that a bad byte is named by its line
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError("not UTF-8: byte 0x%02x at column %d"
                                 % (raw[e.start], e.start + 1)) from None
            j = json.loads(line)
            if not isinstance(j, dict):
                raise TypeError("a JSON %s, not an object" % (
                    "array" if isinstance(j, list) else type(j).__name__))
            kind = j.get("kind")
            if kind != "tensor":
                if isinstance(j.get("core"), int) and isinstance(j.get("seq"), int):
                    note(index, j["core"], j["seq"], j.get("gap"), kind, j.get("prefix"))
                continue
            t = Tensor()
            t.dump = d
            t.core = int(j["core"])
            t.seq = int(j["seq"])
            t.prefix = j.get("prefix") or ""
            t.dtype = j["dtype"]
            t.shape = tuple(int(x) for x in j["shape"])
            t.file = j.get("file")
            # a --raw dump's tensors are records in core<N>.evsraw, at offset
            t.offset = j.get("offset")
            t.npy_dtype = j.get("npy_dtype")
            t.nbytes = j.get("bytes")
            t.error = j.get("error")
            for what, v in (("prefix", t.prefix), ("dtype", t.dtype), ("file", t.file)):
                if not isinstance(v, str) and not (what == "file" and v is None):
                    raise TypeError("%s %r is not a string" % (what, v))
        except (ValueError, KeyError, TypeError) as e:
            raise BadInput("%s line %d: not an index line (%s)" % (path, n, e)) from None
        index.tensors.setdefault(t.core, []).append(t)
        note(index, t.core, t.seq, j.get("gap"), "tensor", t.prefix)
    # for gap_before()'s bisection: a run that drops much has many gaps
    for gaps in index.gaps.values():
        gaps.sort()
    return index


def note(index, core, seq, gap, kind, prefix):
    """What a line of core says about seq, for matching by seq."""
    events = index.events.setdefault(core, {})
    if seq in events:
        index.repeated_seq.add(core)
    events[seq] = (kind, prefix)
    if isinstance(gap, int) and gap > 0:
        index.gaps.setdefault(core, []).append((seq, gap))
    index.last[core] = max(seq, index.last.get(core, seq))


def why_missing(index, side, core, seq):
    """Why the dump on side has no event seq on core, as words."""
    g = index.gap_before(core, seq)
    if g is not None:
        return "%s lost it (its index has a gap of %d event%s before seq %d)" % (
            side, g[1], "s" if g[1] > 1 else "", g[0])
    last = index.last.get(core)
    if last is None:
        return "%s has no events on core %d" % (side, core)
    if seq > last:
        return "%s ends before it (its last event on core %d is seq %d)" % (side, core, last)
    return "%s has no event of that seq" % side


def by_seq(a, b, core):
    """Whether a's and b's lines of core tell the same events apart by seq:
    every seq both hold has the same kind and prefix, and none is repeated."""
    ea, eb = a.events.get(core, {}), b.events.get(core, {})
    if core in a.repeated_seq or core in b.repeated_seq:
        return False
    common = ea.keys() & eb.keys()
    return bool(common) and all(ea[s] == eb[s] for s in common)


def pair_up(a, b, cores):
    """([(ta, tb)], unmatched): tensors matched by core and seq where the
    indexes agree on the events' seqs (by_seq), else by core, prefix and
    occurrence. unmatched are the tensors of one dump that the other lost
    or never had, each with the reason, when matched by seq; a tensor left
    over by occurrence raises (every later one of its prefix may be off)."""
    pairs, unmatched, only = [], [], []
    for core in sorted(set(a.tensors) | set(b.tensors)):
        if cores is not None and core not in cores:
            continue
        la, lb = a.tensors.get(core, []), b.tensors.get(core, [])
        if by_seq(a, b, core):
            ib = {t.seq: t for t in lb}
            for t in la:
                u = ib.pop(t.seq, None)
                if u is None:
                    unmatched.append((t, "only in A: " + why_missing(b, "B", core, t.seq)))
                else:
                    pairs.append((t, u))
            unmatched.extend((t, "only in B: " + why_missing(a, "A", core, t.seq))
                             for t in ib.values())
            continue
        # occurrences are counted per side: A and B may be the same path
        for side in (la, lb):
            seen = {}
            for t in side:
                t.nth = seen.get(t.prefix, 0)
                seen[t.prefix] = t.nth + 1
        ib = {(t.prefix, t.nth): t for t in lb}
        for t in la:
            u = ib.pop((t.prefix, t.nth), None)
            if u is None:
                only.append(("A", t))
            else:
                pairs.append((t, u))
        only.extend(("B", t) for t in lb if (t.prefix, t.nth) in ib)
    if only:
        side, t = only[0]
        lost = ["%s lost %d events on core %d (gaps in its index before seq %s)"
                % (name, n, t.core, ", ".join(map(str, after[:3])) + (", ..." if len(after) > 3
                                                                     else ""))
                for name, d in (("A", a), ("B", b)) for n, after in [d.lost(t.core)] if n]
        raise BadInput("the dumps do not line up: %d tensors are in one dump only; the first: %s "
                       "(occurrence %d of its prefix) is only in %s%s"
                       % (len(only), t.label(), t.nth + 1, side,
                          "; %s: tensors are matched by order of their prefix, which a lost "
                          "one shifts" % " and ".join(lost) if lost else ""))
    unmatched.sort(key=lambda u: (u[0].core, u[0].seq))
    return pairs, unmatched


# elements compared at a time: files are read in slices of this many, so
# that a tensor of any size costs a few MiB of float64 temporaries
CHUNK = 1 << 18

RAW_MAGIC = b"EVSRAW01"
RAW_HEADER = 64         # struct evs_event_header, before each record's payload
RAW_PAYLOAD = 1024      # the reference payload before the tensor's bytes


class Data:
    """A tensor's elements in a file, read a slice at a time (C order)."""

    def __init__(self, t, path, f, dtype, shape, offset):
        self.t, self.path, self.f = t, path, f
        self.dtype, self.shape, self.offset = dtype, shape, offset
        self.size = math.prod(shape)

    def read(self, start, count):
        import numpy as np
        self.f.seek(self.offset + start * self.dtype.itemsize)
        try:
            a = np.fromfile(self.f, self.dtype, count)
        except OSError as e:
            raise BadInput("%s: %s: cannot read %s: %s" % (self.t.dump, self.t.label(), self.path,
                                                           e)) from None
        if a.size != count:     # the file shrank since it was opened
            raise BadInput("%s: %s: %s ends within the tensor" % (self.t.dump, self.t.label(),
                                                                  self.path))
        return a

    def close(self):
        if self.f is not None:
            self.f.close()


def load(t):
    """The tensor's Data, its header and size checked; nothing is read yet."""
    if t.file is None and 0 in t.shape and t.error is None:
        # an empty tensor has no data: evs-dump writes no .npy for one whose
        # shape NumPy cannot represent (its line's note), an index-only dump none
        return Data(t, None, None, npy_dtype(t, "%s: %s" % (t.dump, t.label())), t.shape, 0)
    if t.file is None:
        raise BadInput("%s: %s has no file (%s)" % (
            t.dump, t.label(), "evs-dump could not write it: %s" % t.error if t.error
            else "an index-only dump, or it could not be written"))
    path = os.path.join(t.dump, t.file)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise BadInput("%s: %s: cannot load %s: %s" % (t.dump, t.label(), path, e)) from None
    try:
        size = os.fstat(f.fileno()).st_size
        magic = f.read(8)
        if magic == RAW_MAGIC:
            d = raw_data(t, path, f, size)
        else:
            d = npy_data(t, path, f, size, magic)
    except BadInput:
        f.close()
        raise
    except OSError as e:
        f.close()
        raise BadInput("%s: %s: cannot load %s: %s" % (t.dump, t.label(), path, e)) from None
    except Exception as e:  # whatever NumPy's header reader raises on a broken file
        f.close()
        raise BadInput("%s: %s: not a NumPy array file we can read: %s"
                       % (path, t.label(), e)) from None
    if tuple(d.shape) != t.shape:
        d.close()
        raise BadInput("%s: %s has shape %s, its index says %s" % (path, t.label(), d.shape,
                                                                   t.shape))
    if d.dtype.kind not in "biufV":
        d.close()
        raise BadInput("%s: %s: the file holds %s elements, not numbers"
                       % (path, t.label(), d.dtype.str))
    return d


def npy_data(t, path, f, size, magic):
    import numpy as np
    fmt = np.lib.format
    if magic[:6] != b"\x93NUMPY":
        raise ValueError("a .npz archive, not a .npy file" if magic[:4] == b"PK\x03\x04"
                         else "it does not start as a .npy file does (%r)" % magic[:6])
    f.seek(0)
    version = fmt.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = fmt.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dtype = fmt.read_array_header_2_0(f)
    else:
        shape, fortran, dtype = None, True, None    # read whole, below
    if fortran or dtype.hasobject:
        # not what evs-dump writes: NumPy's reader, the whole file at once
        f.seek(0)
        a = np.ascontiguousarray(fmt.read_array(f, allow_pickle=False))
        d = Data(t, path, None, a.dtype, a.shape, 0)
        d.read = lambda start, count: a.reshape(-1)[start:start + count]
        d.close = lambda: None
        f.close()
        return d
    d = Data(t, path, f, dtype, tuple(shape), f.tell())
    want = d.offset + d.size * dtype.itemsize
    if size < want:
        raise ValueError("it is cut short: %d bytes, its header says %d" % (size, want))
    return d


def raw_data(t, path, f, size):
    """A tensor read in place from a --raw dump's core<N>.evsraw
    (docs/dump.md: a 64-byte header, then the reference payload, then the
    tensor's bytes in C order), typed by the index's npy_dtype."""
    import struct
    where = "%s: %s" % (path, t.label())
    if not isinstance(t.offset, int) or not isinstance(t.nbytes, int) or \
            not isinstance(t.npy_dtype, str):
        raise BadInput("%s: a --raw dump's index line needs offset, bytes and npy_dtype" % where)
    dtype = npy_dtype(t, where)
    if t.offset < RAW_HEADER or t.offset + RAW_HEADER > size:
        raise BadInput("%s: offset %d is outside the file (%d bytes)" % (where, t.offset, size))
    f.seek(t.offset)
    data_size, _, _, seq = struct.unpack("<QIIQ", f.read(24))
    if seq != t.seq or data_size != RAW_PAYLOAD + t.nbytes or \
            t.offset + RAW_HEADER + data_size > size:
        raise BadInput("%s: the record at offset %d is not this tensor's (seq %d, %d payload bytes "
                       "in a file of %d)" % (where, t.offset, seq, data_size, size))
    d = Data(t, path, f, dtype, t.shape, t.offset + RAW_HEADER + RAW_PAYLOAD)
    if d.size * dtype.itemsize != t.nbytes:
        raise BadInput("%s: %d bytes are not %s of %s" % (where, t.nbytes, t.shape, dtype.str))
    return d


def npy_dtype(t, where):
    """The NumPy dtype the index line gives the tensor's elements."""
    import numpy as np
    try:
        if not isinstance(t.npy_dtype, str):    # np.dtype(None) is float64
            raise TypeError
        return np.dtype(t.npy_dtype)
    except TypeError:
        raise BadInput("%s: npy_dtype %r is not a NumPy dtype" % (where, t.npy_dtype)) from None


def values(t, a):
    """float64 values of a slice, or None for opaque elements (compared as bytes)."""
    import numpy as np
    if t.dtype == "bfloat16":
        return bfloat16_to_float32(a).astype(np.float64)
    if a.dtype.kind == "V":
        return None
    return a.astype(np.float64)


class Result:
    __slots__ = ("a", "b", "max_abs", "max_rel", "zero_ref", "pcc", "worst", "va", "vb",
                 "diverges", "opaque", "uncompared")


class Moments:
    """Means and centred sums of squares and products of finite pairs,
    merged slice by slice (Chan et al.), for the PCC of a whole tensor read
    in slices."""

    def __init__(self):
        self.n = 0
        self.mx = self.my = self.sxx = self.syy = self.sxy = 0.0
        self.equal = True       # the finite pairs are equal (constant tensors)
        self.misplaced = False  # a non-finite value without its equal on the other side

    def add(self, x, y):
        import numpy as np
        fx, fy = np.isfinite(x), np.isfinite(y)
        if not (fx.all() and fy.all()):
            with np.errstate(invalid="ignore"):
                same = ~fx & ~fy & ((np.isnan(x) & np.isnan(y)) | (x == y))
            if ((~fx | ~fy) & ~same).any():
                self.misplaced = True
            keep = fx & fy
            x, y = x[keep], y[keep]
        n = x.size
        if n == 0:
            return
        self.equal = self.equal and bool(np.array_equal(x, y))
        mx, my = float(x.mean()), float(y.mean())
        dx, dy = x - mx, y - my
        sxx, syy, sxy = float((dx * dx).sum()), float((dy * dy).sum()), float((dx * dy).sum())
        tot = self.n + n
        ex, ey = mx - self.mx, my - self.my
        w = self.n * n / tot
        self.sxx += sxx + ex * ex * w
        self.syy += syy + ey * ey * w
        self.sxy += sxy + ex * ey * w
        self.mx += ex * n / tot
        self.my += ey * n / tot
        self.n = tot

    def pcc(self):
        """Non-finite values must sit at the same places and be equal (NaN
        with NaN); the finite ones are correlated."""
        if self.misplaced:
            return 0.0
        if self.n == 0:
            return 1.0
        if self.sxx == 0 or self.syy == 0:
            # constant tensors: correlated only when equal
            return 1.0 if self.equal else 0.0
        return self.sxy / math.sqrt(self.sxx * self.syy)


def int_abs_diff(p, q):
    """|p - q| of two integer (or bool) slices, as float64 that is never 0
    where they differ: float64 holds integers exactly only up to 2**53, so
    2**60 + 1 and 2**60 would be equal as values."""
    import numpy as np
    u64 = np.uint64
    if p.dtype == u64 and q.dtype != u64:
        p, q = q, p
    if p.dtype != u64 and q.dtype != u64:
        p, q = p.astype(np.int64), q.astype(np.int64)
        # the difference of two int64 fits a uint64: taken modulo 2**64
        return np.where(p >= q, p.view(u64) - q.view(u64), q.view(u64) - p.view(u64)) \
            .astype(np.float64)
    if p.dtype == u64:
        return np.where(p >= q, p - q, q - p).astype(np.float64)
    # a signed p against a uint64 q: a negative p is far from q anyway
    p = p.astype(np.int64)
    pu = np.where(p < 0, 0, p).astype(u64)
    exact = np.where(pu >= q, pu - q, q - pu).astype(np.float64)
    return np.where(p < 0, q.astype(np.float64) - p.astype(np.float64), exact)


def compare_pair(ta, tb, atol, rtol, pcc_min, use_close):
    a = load(ta)
    try:
        b = load(tb)
    except BadInput:
        a.close()
        raise
    try:
        return compare_data(ta, tb, a, b, atol, rtol, pcc_min, use_close)
    finally:
        a.close()
        b.close()


def compare_data(ta, tb, a, b, atol, rtol, pcc_min, use_close):
    import numpy as np
    if a.shape != b.shape:
        raise BadInput("shapes differ: %s is %s in A (%s), %s in B (%s)"
                       % (ta.label(), a.shape, ta.dump, b.shape, tb.dump))
    r = Result()
    r.a, r.b = ta, tb
    r.max_abs = 0.0
    r.max_rel = None            # over the elements where B is not 0
    r.zero_ref = 0              # elements that differ where B is 0
    r.pcc = 1.0
    r.worst, r.va, r.vb = (), None, None
    r.diverges = False
    r.uncompared = None
    # no NumPy type (|Vn): bytes only, which mean nothing against another dtype
    r.opaque = opaque = a.dtype.kind == "V" or b.dtype.kind == "V"
    if opaque:
        r.max_abs = r.pcc = None
    if opaque and (a.dtype != b.dtype or ta.dtype != tb.dtype):
        r.uncompared = "%s is %s (%s) in A, %s (%s) in B" % (
            ta.label(), shown(ta.dtype), a.dtype.str, shown(tb.dtype), b.dtype.str)
        return r
    if a.size == 0:
        return r
    moments = Moments()
    worst, bad = -1, False
    ints = a.dtype.kind in "biu" and b.dtype.kind in "biu" and "bfloat16" not in (ta.dtype,
                                                                                  tb.dtype)
    for start in range(0, a.size, CHUNK):
        count = min(CHUNK, a.size - start)
        ca, cb = a.read(start, count), b.read(start, count)
        if opaque:
            ne = (ca.view(np.uint8) != cb.view(np.uint8)).reshape(count, -1).any(axis=1)
            if ne.any():
                k = int(np.argmax(ne))
                r.worst = tuple(int(i) for i in np.unravel_index(start + k, a.shape))
                r.va, r.vb = ca[k].tobytes().hex(), cb[k].tobytes().hex()
                r.diverges = True
                return r
            continue
        x, y = values(ta, ca), values(tb, cb)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            nan_same = np.isnan(x) & np.isnan(y)
            err = np.where(nan_same, 0.0, np.abs(x - y))
            err = np.where(np.isnan(err), np.inf, err)  # NaN against a number, inf - inf
            err = np.where((x == y), 0.0, err)          # equal infinities
            if ints:
                err = int_abs_diff(ca, cb)
            ref = np.abs(y)
            # |A - B| / |B| where B is not 0 (inf / inf: inf); where B is 0
            # there is no relative error, and atol alone decides
            nz = ref != 0
            r.zero_ref += int(np.count_nonzero(~nz & (err != 0)))
            if nz.any():
                rel = np.where(err[nz] == 0, 0.0, err[nz] / ref[nz])
                m = float(np.where(np.isnan(rel), np.inf, rel).max())
                r.max_rel = m if r.max_rel is None else max(r.max_rel, m)
            bad = bad or bool((err > atol + rtol * np.where(np.isfinite(ref), ref, 0.0)).any())
        k = int(np.argmax(err))
        if worst < 0 or err[k] > r.max_abs:     # the first of the largest
            worst, r.max_abs = start + k, float(err[k])
            # integers shown as they are (float64 rounds those past 2**53)
            r.va, r.vb = (ca[k].item(), cb[k].item()) if ints else (float(x[k]), float(y[k]))
        moments.add(x, y)
    if opaque:
        return r
    r.worst = tuple(int(i) for i in np.unravel_index(worst, a.shape))
    r.pcc = moments.pcc()
    r.diverges = (use_close and bad) or (pcc_min is not None and r.pcc < pcc_min)
    return r


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, (bool, int)):
        return str(v)
    if isinstance(v, float) and (math.isinf(v) or math.isnan(v)):
        return str(v)
    return "%.4g" % v


def print_first(r, out, a, b):
    print("first divergence: %s (A) / seq %d (B), %s vs %s, shape %s"
          % (r.a.label(), r.b.seq, shown(r.a.dtype), shown(r.b.dtype), r.a.shape), file=out)
    if r.opaque:
        print("  compared byte for byte (%s has no NumPy type): element %s differs (A %s, B %s)"
              % (shown(r.a.dtype), r.worst, r.va, r.vb), file=out, flush=True)
    else:
        print("  max abs err %s at index %s (A %s, B %s); max rel err %s%s; pcc %s"
              % (fmt(r.max_abs), r.worst, fmt(r.va), fmt(r.vb), fmt(r.max_rel),
                 " (where B is not 0; %d element%s differ%s where B is 0)"
                 % (r.zero_ref, "s" if r.zero_ref > 1 else "", "" if r.zero_ref > 1 else "s")
                 if r.zero_ref else "", fmt(r.pcc)), file=out, flush=True)
    if not by_seq(a, b, r.a.core):
        # matched by order: a tensor lost before this pair shifts it
        for name, d, t in (("A", a, r.a), ("B", b, r.b)):
            n, _ = d.lost(t.core, t.seq)
            if n:
                print("  note: %s lost %d events on core %d before seq %d (gaps in its index): "
                      "if one was a %r, these two are not the same event"
                      % (name, n, t.core, t.seq, t.prefix), file=out, flush=True)


class Progress:
    """'compare: 120 of 5000 pairs' on stderr when it is a terminal (never
    in a pipe or a log): shown at the start, rewritten in place at most
    twice a second, erased before anything else is printed."""

    def __init__(self, f):
        self.f = f
        self.on = f.isatty()
        self.next = 0.0
        self.shown = False

    def show(self, i, n):
        if not self.on or time.monotonic() < self.next:
            return
        self.next = time.monotonic() + 0.5
        self.f.write("\rcompare: %d of %d pairs (%d%%)" % (i, n, 100 * i // n))
        self.f.flush()
        self.shown = True

    def clear(self):
        if self.shown:
            self.f.write("\r\033[K")
            self.f.flush()
            self.shown = False


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m evstream compare",
        description="Compare two evs-dump directories tensor by tensor (matched by core, order "
                    "and prefix): report the first tensor that diverges, then a summary.",
        epilog="Exit status: 0 no divergence, 1 divergence, 2 bad input.")
    p.add_argument("dump_a", metavar="DUMP_A", help="the dump to check")
    p.add_argument("dump_b", metavar="DUMP_B", help="the reference (golden) dump")
    p.add_argument("--atol", type=float, default=None, help="absolute tolerance (default 1e-8)")
    p.add_argument("--rtol", type=float, default=None,
                   help="relative tolerance, of |B| (default 1e-5)")
    p.add_argument("--pcc", type=float, default=None,
                   help="least Pearson correlation; given alone, the only criterion")
    p.add_argument("--cores", default=None, help="cores to compare, e.g. 0,2-3 (default all)")
    p.add_argument("--all", action="store_true", help="list every tensor, not only diverging ones")
    p.add_argument("--show", type=int, default=20, help="rows of the table at most (default 20)")
    args = p.parse_args(argv)
    tolerant_output()
    for name in ("atol", "rtol"):
        v = getattr(args, name)
        if v is not None and not v >= 0:
            p.error("--%s %r: allowed is a number >= 0" % (name, v))
    if args.show < 0:
        p.error("--show %d: allowed is a count of rows >= 0 (0: the summary alone)" % args.show)
    if args.pcc is not None and not -1 <= args.pcc <= 1:
        p.error("--pcc %r: allowed is a number from -1 to 1" % args.pcc)
    use_close = args.pcc is None or args.atol is not None or args.rtol is not None
    atol = 1e-8 if args.atol is None else args.atol
    rtol = 1e-5 if args.rtol is None else args.rtol
    cores = None
    if args.cores:
        try:
            cores = set()
            for part in args.cores.split(","):
                lo, _, hi = part.partition("-")
                cores.update(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            p.error("--cores %r: use a list like 0,2-3" % args.cores)
    out = sys.stdout
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("compare: NumPy is needed (python3-numpy)", file=sys.stderr)
        return EXIT_BAD
    crit = []
    if use_close:
        crit.append("atol %g, rtol %g" % (atol, rtol))
    if args.pcc is not None:
        crit.append("pcc >= %g" % args.pcc)
    progress = Progress(sys.stderr)
    results, first = [], None
    try:
        a, b = read_index(args.dump_a), read_index(args.dump_b)
        for d in (a, b) if os.path.realpath(a.dir) != os.path.realpath(b.dir) else (a,):
            if d.torn:
                print("compare: %s line %d is torn (%d bytes without a newline: evs-dump "
                      "stopped while writing it): the dump ends before it"
                      % (os.path.join(d.dir, "index.jsonl"), d.torn[0], d.torn[1]),
                      file=sys.stderr)
        pairs, unmatched = pair_up(a, b, cores)
        if not pairs:
            raise BadInput("no tensors to compare in %s and %s%s" % (
                args.dump_a, args.dump_b, " on cores %s" % args.cores if cores else "")
                + (" that are in both: %d are in one only; the first: %s is %s"
                   % (len(unmatched), unmatched[0][0].label(), unmatched[0][1])
                   if unmatched else ""))
        ncores = sorted({ta.core for ta, _ in pairs})
        print("compare: %d tensor pairs on cores %s (A %s, B %s; %s)"
              % (len(pairs), ",".join(map(str, ncores)), args.dump_a, args.dump_b,
                 "; ".join(crit)), file=out, flush=True)
        for i, (ta, tb) in enumerate(pairs):
            progress.show(i, len(pairs))
            r = compare_pair(ta, tb, atol, rtol, args.pcc, use_close)
            results.append(r)
            if r.diverges and first is None:
                first = r
                # shown now: on a long compare it is what the user waits for
                progress.clear()
                print_first(r, out, a, b)
    except BadInput as e:
        progress.clear()
        print("compare: %s" % e, file=sys.stderr)
        return EXIT_BAD
    progress.clear()
    rows = results if args.all else [r for r in results if r.diverges or r.uncompared]
    if rows and args.show:
        print("  %4s %8s %-36s %-9s %-16s %10s %10s %9s %s" % (
            "core", "seq", "prefix", "dtype", "shape", "max_abs", "max_rel", "pcc", "status"),
            file=out)
        for r in rows[:args.show]:
            print("  %4d %8d %-36s %-9s %-16s %10s %10s %9s %s" % (
                r.a.core, r.a.seq, shown(r.a.prefix)[:36], shown(r.a.dtype), str(r.a.shape)[:16],
                fmt(r.max_abs), fmt(r.max_rel), fmt(r.pcc),
                "DIVERGES" if r.diverges else "NOT COMPARED" if r.uncompared else "ok"),
                file=out)
    if len(rows) > args.show:
        print("  ... %d %s (--show N)" % (len(rows) - args.show,
                                          "more" if args.show else "rows not shown"), file=out)
    print("  %4s %8s %10s %10s %10s %10s" % ("core", "tensors", "diverging", "max_abs", "max_rel",
                                             "min_pcc"), file=out)

    def extreme(f, vs):
        vs = [v for v in vs if v is not None]     # "-": opaque, or no |B| > 0
        return f(vs) if vs else None

    for core in ncores:
        rs = [r for r in results if r.a.core == core]
        print("  %4d %8d %10d %10s %10s %10s" % (
            core, len(rs), sum(r.diverges for r in rs), fmt(extreme(max, (r.max_abs for r in rs))),
            fmt(extreme(max, (r.max_rel for r in rs))), fmt(extreme(min, (r.pcc for r in rs)))),
            file=out)
    n = sum(r.diverges for r in results)
    uncompared = [r for r in results if r.uncompared]
    compared = len(results) - len(uncompared)
    nbytes = sum(1 for r in results if r.opaque and not r.uncompared)
    print("compare: %s%s%s%s" % ("%d of %d tensors diverge" % (n, compared) if n
                                 else "all %d tensors match" % compared,
                                 " (%d of dtypes NumPy does not know, byte for byte)" % nbytes
                                 if nbytes else "",
                                 "; %d more not compared" % len(uncompared) if uncompared else "",
                                 "; %d more are in one dump only" % len(unmatched) if unmatched
                                 else ""), file=out)
    if uncompared:
        print("compare: %d tensor pairs were not compared (a dtype NumPy does not know is "
              "compared byte for byte, with the same dtype only); the first: %s"
              % (len(uncompared), uncompared[0].uncompared), file=sys.stderr)
    if unmatched:
        # the others were compared (matched by seq, which a lost event does
        # not shift), but the dumps do not hold the same tensors
        t, why = unmatched[0]
        print("compare: the dumps do not line up: %d tensors are in one dump only; the first: %s "
              "is %s" % (len(unmatched), t.label(), why), file=sys.stderr)
        # the first is named above, whatever --show says: up to --show in all
        listed = max(args.show, 1)
        for t, why in unmatched[1:listed]:
            print("  %s is %s" % (t.label(), why), file=sys.stderr)
        if len(unmatched) > listed:
            print("  ... %d more (--show N)" % (len(unmatched) - listed), file=sys.stderr)
        return EXIT_BAD
    return EXIT_BAD if uncompared else EXIT_DIVERGE if n else EXIT_OK
