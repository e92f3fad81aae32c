#!/usr/bin/python3
"""Check an evs-dump directory with NumPy: every index line that names a
.npy file is loaded with numpy.load, its shape, dtype and size agree with the
index, and its header is byte for byte the .npy version 1.0 format (preamble,
dict literal with sorted keys, spaces, newline, data aligned to 64 bytes).

usage: /usr/bin/python3 demo/verify_dump.py DIR    (exit 0 when all is well)
"""
import io
import json
import os
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


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    top = sys.argv[1]
    problems, files, lines, nbytes = [], 0, 0, 0
    named = set()
    try:
        with open(os.path.join(top, "index.jsonl")) as f:
            index = f.readlines()
    except OSError as e:
        print("verify_dump.py: %s: %s" % (e.filename, e.strerror), file=sys.stderr)
        return 1
    for n, text in enumerate(index, 1):
        lines += 1
        rec = json.loads(text)
        name = rec.get("file")
        if rec.get("kind") != "tensor" or not name or not name.endswith(".npy"):
            continue
        named.add(name)
        descr = DESCR.get(rec["dtype"], rec.get("npy_dtype"))
        if rec.get("npy_dtype") != descr:
            problems.append("line %d: npy_dtype %r, expected %r" % (n, rec.get("npy_dtype"), descr))
        # read once; NumPy parses the same bytes
        try:
            with open(os.path.join(top, name), "rb") as g:
                raw = g.read()
        except OSError as e:
            problems.append("line %d: %s: %s" % (n, name, e.strerror))
            continue
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
            continue
        files += 1
        nbytes += arr.nbytes
        if (major, minor) != (1, 0) or fortran or list(shape) != rec["shape"]:
            problems.append("line %d: %s: numpy reads version %d.%d shape %r" % (n, name, major, minor, shape))
        if arr.dtype.str != descr or list(arr.shape) != rec["shape"] or arr.nbytes != rec["bytes"]:
            problems.append("line %d: %s: numpy loads %s %r (%d bytes), index says %s %r (%d bytes)"
                            % (n, name, arr.dtype.str, arr.shape, arr.nbytes, descr, rec["shape"], rec["bytes"]))
        if len(raw) != len(want) + rec["bytes"]:
            problems.append("line %d: %s: %d bytes long, expected %d" % (n, name, len(raw), len(want) + rec["bytes"]))
    on_disk = set()
    for d in os.listdir(top):
        sub = os.path.join(top, d)
        if d.startswith("c") and os.path.isdir(sub):
            for e in os.listdir(sub):
                on_disk.add(d + "/" + e)
    stray = sorted(on_disk - named)
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
