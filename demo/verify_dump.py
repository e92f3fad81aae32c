#!/usr/bin/python3
"""Check an evs-dump directory with NumPy: every index line that names a
.npy file is loaded with numpy.load, its shape, dtype and size agree with the
index, and its header is byte for byte the .npy version 1.0 format (preamble,
dict literal with sorted keys, spaces, newline, data aligned to 64 bytes);
the core directories hold no file the index does not name.

A dump cut short (no summary.json: the dumper was killed, or the disk was
full; or a torn last index line) is said so in one line; its complete lines
are checked as usual, and the files of events after the last indexed one of
their core (and temporaries) are counted in that line, not as problems:
they were in flight when the dumper stopped.

usage: /usr/bin/python3 demo/verify_dump.py DIR    (exit 0 when all is well)
"""
import io
import json
import os
import re
import struct
import sys

import numpy as np

DESCR = {
    "float64": "<f8", "float32": "<f4", "float16": "<f2", "bfloat16": "<u2",
    "int64": "<i8", "int32": "<i4", "int16": "<i2", "int8": "|i1",
    "uint64": "<u8", "uint32": "<u4", "uint16": "<u2", "uint8": "|u1",
    "bool": "|b1",
}


def expected_header(descr, shape):
    """The header as the format document describes it, built independently."""
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (descr, tuple(shape))
    total = 10 + len(d) + 1
    pad = (64 - total % 64) % 64
    body = (d + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body


class SkipFile(Exception):
    """The file could not be checked (said in problems)."""


def check_file(top, n, name, rec, problems):
    """Check the .npy of index line n against it; its data bytes."""
    descr = DESCR.get(rec["dtype"], rec.get("npy_dtype"))
    if rec.get("npy_dtype") != descr:
        problems.append("line %d: npy_dtype %r, expected %r" % (n, rec.get("npy_dtype"), descr))
    # read once; NumPy parses the same bytes
    try:
        with open(os.path.join(top, name), "rb") as g:
            raw = g.read()
    except OSError as e:
        problems.append("line %d: %s: %s" % (n, name, e.strerror))
        raise SkipFile
    want = expected_header(descr, rec["shape"])
    if raw[:len(want)] != want:
        problems.append("line %d: %s: header differs from the format: %r" % (n, name, raw[:len(want)]))
    try:
        g = io.BytesIO(raw)
        major, minor = np.lib.format.read_magic(g)
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(g)
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except ValueError as e:
        problems.append("line %d: %s: numpy cannot read it: %s" % (n, name, e))
        raise SkipFile
    if (major, minor) != (1, 0) or fortran or list(shape) != rec["shape"]:
        problems.append("line %d: %s: numpy reads version %d.%d shape %r" % (n, name, major, minor, shape))
    if arr.dtype.str != descr or list(arr.shape) != rec["shape"] or arr.nbytes != rec["bytes"]:
        problems.append("line %d: %s: numpy loads %s %r (%d bytes), index says %s %r (%d bytes)"
                        % (n, name, arr.dtype.str, arr.shape, arr.nbytes, descr, rec["shape"], rec["bytes"]))
    if len(raw) != len(want) + rec["bytes"]:
        problems.append("line %d: %s: %d bytes long, expected %d" % (n, name, len(raw), len(want) + rec["bytes"]))
    return arr.nbytes


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    top = sys.argv[1]
    problems, files, lines, nbytes = [], 0, 0, 0
    named = set()
    try:
        with open(os.path.join(top, "index.jsonl"), "rb") as f:
            data = f.read()
    except OSError as e:
        print("verify_dump.py: %s: %s" % (e.filename, e.strerror), file=sys.stderr)
        return 1
    index = data.split(b"\n")
    # what follows the last newline: "" for a whole index, else a torn line
    torn = index.pop()
    cut = []
    if torn:
        cut.append("index.jsonl ends with a torn line (%d bytes without a newline)" % len(torn))
    if not os.path.exists(os.path.join(top, "summary.json")):
        cut.append("no summary.json")
    last_seq = {}
    for n, raw_line in enumerate(index, 1):
        lines += 1
        try:
            rec = json.loads(raw_line)
        except ValueError as e:
            problems.append("line %d: not JSON (%s): %r" % (n, e, raw_line[:80]))
            continue
        if isinstance(rec.get("core"), int) and isinstance(rec.get("seq"), int):
            last_seq[rec["core"]] = rec["seq"]
        name = rec.get("file")
        if rec.get("kind") != "tensor" or not name or not name.endswith(".npy"):
            continue
        named.add(name)
        try:
            nbytes += check_file(top, n, name, rec, problems)
            files += 1
        except SkipFile:
            pass
        except (KeyError, TypeError) as e:
            problems.append("line %d: a field is missing or of the wrong type: %r" % (n, e))
    on_disk = set()
    for d in os.listdir(top):
        sub = os.path.join(top, d)
        if d.startswith("c") and os.path.isdir(sub):
            for e in os.listdir(sub):
                on_disk.add(d + "/" + e)
    # a torn line may still name its file
    m = re.search(rb'"file":"([^"]*)"', torn)
    if m:
        named.add(m.group(1).decode("utf-8", "replace"))
    stray = sorted(on_disk - named)
    in_flight = []
    if cut:
        for f in stray:
            m = re.fullmatch(r"c(\d+)/\.?(\d+)\.npy(\.tmp)?", f)
            if m and (m.group(3) or int(m.group(2)) > last_seq.get(int(m.group(1)), -1)):
                in_flight.append(f)
        stray = [f for f in stray if f not in in_flight]
        print("verify_dump.py: the dump was cut short (%s): %d complete lines checked%s"
              % ("; ".join(cut), lines,
                 "; %d files of events past the last line of their core: %s" % (len(in_flight), in_flight[:3])
                 if in_flight else ""))
    if stray:
        problems.append("%d files not named by the index (temporaries or partial files?): %s" % (len(stray), stray[:5]))
    for p in problems[:10]:
        print("verify_dump.py: " + p, file=sys.stderr)
    print("verify_dump.py: %d index lines, %d .npy files (%.1f MB) load with numpy %s; headers match "
          "the .npy 1.0 format byte for byte: %s"
          % (lines, files, nbytes / 1e6, np.__version__, "NO, %d problems" % len(problems) if problems else "yes"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
