# SPDX-License-Identifier: MIT
"""python3 -m evstream compare (golden compare of two evs-dump
directories: exit 0/1/2) and tail (a live view with gaps and drops)."""
import json
import re
import subprocess
import time

import numpy as np
import pytest

from conftest import DEADLINE, PY, corrupting_producer, env, tool, unique

NPY = {"float32": "<f4", "float64": "<f8", "bfloat16": "<u2", "int32": "<i4", "float16": "<f2",
       "int64": "<i8", "uint64": "<u8", "fp8_e4m3": "|V1", "fp8_e5m2": "|V1"}


def write_dump(d, tensors):
    """An evs-dump directory: tensors are (core, prefix, dtype, array)."""
    d.mkdir()
    seqs = {}
    with open(d / "index.jsonl", "w") as idx:
        for core, prefix, dtype, a in tensors:
            seq = seqs.get(core, 0)
            seqs[core] = seq + 1
            rel = "c%d/%012d.npy" % (core, seq)
            (d / ("c%d" % core)).mkdir(exist_ok=True)
            np.save(d / rel, a)
            idx.write(json.dumps({"seq": seq, "core": core, "ts_ns": 0, "gap": 0,
                                  "kind": "tensor", "pipe": 1, "dtype": dtype,
                                  "npy_dtype": NPY[dtype], "shape": list(a.shape),
                                  "bytes": a.nbytes, "file": rel, "prefix": prefix}) + "\n")
            if seq == 0:
                idx.write(json.dumps({"seq": 99, "core": core, "kind": "print", "pipe": 1,
                                      "dtype": None, "prefix": "a print", "file": None}) + "\n")


def compare(*args):
    r = subprocess.run([PY, "-m", "evstream", "compare", *map(str, args)], env=env(),
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def model(scale=1.0):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    return [(0, "embed", "float32", x), (0, "ffn.out", "float32", x @ x.T * scale),
            (1, "logits", "float64", np.linspace(-1, 1, 10)), (1, "ids", "int32",
                                                               np.arange(5, dtype=np.int32))]


def test_identical_dumps_match(tmp_path):
    write_dump(tmp_path / "a", model())
    write_dump(tmp_path / "b", model())
    rc, out, err = compare(tmp_path / "a", tmp_path / "b")
    assert rc == 0, err
    assert "all 4 tensors match" in out and "first divergence" not in out


def test_a_dump_against_itself_by_the_same_path(tmp_path):
    # the same directory twice (A and B are read apart: each side counts the
    # occurrences of its prefixes), repeated prefixes included
    t = model() + [(0, "embed", "float32", np.ones((2, 2), np.float32))]
    write_dump(tmp_path / "a", t)
    for other in (tmp_path / "a", "%s/./a" % tmp_path):
        rc, out, err = compare(tmp_path / "a", other)
        assert rc == 0, out + err
        assert "all 5 tensors match" in out


def test_the_first_divergence_is_reported_with_its_worst_element(tmp_path):
    a = model()
    b = model()
    bad = b[1][3].copy()
    bad[2, 1] += 0.5
    b[1] = (0, "ffn.out", "float32", bad)
    b[2] = (1, "logits", "float64", b[2][3] * 1.01)
    write_dump(tmp_path / "a", a)
    write_dump(tmp_path / "b", b)
    rc, out, err = compare(tmp_path / "a", tmp_path / "b")
    assert rc == 1, err
    first = out.split("first divergence: ", 1)[1].splitlines()
    assert first[0].startswith("core 0 seq 1 'ffn.out' (A) / seq 1 (B), float32 vs float32")
    assert "max abs err 0.5 at index (2, 1)" in first[1] and "pcc" in first[1]
    assert "2 of 4 tensors diverge" in out
    assert "DIVERGES" in out
    # tolerances: atol covers both; PCC alone passes them too
    assert compare(tmp_path / "a", tmp_path / "b", "--atol", "0.6")[0] == 0
    assert compare(tmp_path / "a", tmp_path / "b", "--pcc", "0.99")[0] == 0
    assert compare(tmp_path / "a", tmp_path / "b", "--pcc", "0.999999999")[0] == 1


def test_bfloat16_against_a_float32_golden(tmp_path):
    golden = np.array([[1.0, -2.5], [3.140625, 1e-3]], np.float32)
    bits = (golden.view(np.uint32) >> 16).astype(np.uint16)   # truncated to bfloat16
    write_dump(tmp_path / "dev", [(0, "h", "bfloat16", bits)])
    write_dump(tmp_path / "gold", [(0, "h", "float32", golden)])
    rc, out, _ = compare(tmp_path / "dev", tmp_path / "gold", "--rtol", "1e-2")
    assert rc == 0 and "all 1 tensors match" in out
    rc, out, _ = compare(tmp_path / "dev", tmp_path / "gold")
    assert rc == 1 and "bfloat16 vs float32" in out


def test_nan_and_inf(tmp_path):
    x = np.array([np.nan, np.inf, 1.0], np.float32)
    y = np.array([np.nan, np.inf, 1.0], np.float32)
    z = np.array([1.0, np.inf, 1.0], np.float32)
    write_dump(tmp_path / "a", [(0, "t", "float32", x)])
    write_dump(tmp_path / "b", [(0, "t", "float32", y)])
    write_dump(tmp_path / "c", [(0, "t", "float32", z)])
    assert compare(tmp_path / "a", tmp_path / "b")[0] == 0
    rc, out, _ = compare(tmp_path / "a", tmp_path / "c")
    assert rc == 1 and "max abs err inf at index (0,)" in out


def test_relative_error_where_the_golden_is_0(tmp_path):
    # |A - B| <= atol + rtol * |B| (NumPy's isclose): where B is 0 atol alone
    # decides, and there is no relative error to report (not inf)
    gold = np.array([1.0, 0.0, 0.0, 4.0], np.float32)
    write_dump(tmp_path / "b", [(0, "y", "float32", gold)])
    write_dump(tmp_path / "a", [(0, "y", "float32", gold + np.float32([0, 1e-9, 0, 0]))])
    write_dump(tmp_path / "c", [(0, "y", "float32", gold + np.float32([0, 1e-3, 0, 2e-3]))])
    rc, out, err = compare(tmp_path / "a", tmp_path / "b", "--all")
    assert rc == 0 and "all 1 tensors match" in out, (out, err)
    assert "inf" not in out and "nan" not in out, out
    assert compare(tmp_path / "a", tmp_path / "b", "--atol", "0")[0] == 1
    rc, out, _ = compare(tmp_path / "c", tmp_path / "b")
    assert rc == 1 and "max abs err 0.002 at index (3,)" in out and \
        "max rel err 0.0005 (where B is not 0; 1 element differs where B is 0)" in out, out
    assert compare(tmp_path / "c", tmp_path / "b", "--atol", "1e-2")[0] == 0
    # A differs from B only where B is 0: no relative error at all
    write_dump(tmp_path / "z", [(0, "y", "float32", np.zeros(4, np.float32))])
    rc, out, _ = compare(tmp_path / "c", tmp_path / "z")
    assert rc == 1 and "max rel err - (where B is not 0; 3 elements differ where B is 0)" in out
    assert "inf" not in out, out


def test_a_torn_last_index_line_ends_the_dump(tmp_path):
    # evs-dump writes each index line with its newline in one write(): a last
    # line without one is what it was writing when it stopped. It ends the
    # dump, said once on stderr; the tensors before it are compared
    for tag, cut in (("a", 40), ("b", 1)):      # torn within its JSON; only its newline
        write_dump(tmp_path / tag, model())
        idx = tmp_path / tag / "index.jsonl"
        idx.write_bytes(idx.read_bytes()[:-cut])
    rc, out, err = compare(tmp_path / "a", tmp_path / "b")
    assert rc == 0 and "all 3 tensors match" in out, (out, err)
    for tag in "ab":
        assert err.count("compare: %s line 6 is torn" % (tmp_path / tag / "index.jsonl")) == 1, err
    rc, out, err = compare(tmp_path / "a", tmp_path / "a")
    assert rc == 0 and err.count(" is torn ") == 1, err
    # a line elsewhere that is not an index line is bad input, named
    idx = tmp_path / "b" / "index.jsonl"
    lines = idx.read_bytes().split(b"\n")
    lines[2] = lines[2][:-40]
    idx.write_bytes(b"\n".join(lines))
    rc, _, err = compare(tmp_path / "a", tmp_path / "b")
    assert rc == 2 and "b/index.jsonl line 3: not an index line" in err, err


UNFIT = {"seq": 7, "core": 0, "ts_ns": 0, "gap": 0, "kind": "tensor", "pipe": 1,
         "dtype": "float32", "npy_dtype": "<f4", "shape": [2**33, 2**33, 0], "bytes": 0,
         "file": None, "note": "empty tensor whose shape NumPy cannot represent: no .npy",
         "prefix": "unfit"}


def test_empty_tensors_match_with_or_without_a_file(tmp_path):
    # an empty tensor's .npy is a header alone; evs-dump writes none for an
    # empty tensor whose shape NumPy cannot represent (the line says so)
    for tag in "ab":
        write_dump(tmp_path / tag, [(0, "x", "float32", np.zeros((0, 3), np.float32))] +
                   model()[:2])
        with open(tmp_path / tag / "index.jsonl", "a") as idx:
            idx.write(json.dumps(UNFIT) + "\n")
    rc, out, err = compare(tmp_path / "a", tmp_path / "b", "--all")
    assert rc == 0 and "all 4 tensors match" in out, (out, err)
    assert "core 0 seq 7 'unfit'" not in err
    # without its file because it could not be written: said so
    write_dump(tmp_path / "c", [(0, "x", "float32", np.zeros((0, 3), np.float32))] + model()[:2])
    with open(tmp_path / "c" / "index.jsonl", "a") as idx:
        idx.write(json.dumps(dict(UNFIT, note=None, error="No space left on device")) + "\n")
    rc, _, err = compare(tmp_path / "a", tmp_path / "c")
    assert rc == 2 and "core 0 seq 7 'unfit' has no file (evs-dump could not write it: No " \
        "space left on device)" in err, err


def test_dtypes_numpy_does_not_know_are_compared_byte_for_byte(tmp_path):
    v = np.arange(6, dtype=np.uint8).view("V1")
    w = v.copy()
    w.view(np.uint8)[3] = 0x4d
    for tag, q, dtype in (("a", v, "fp8_e4m3"), ("b", v, "fp8_e4m3"), ("c", w, "fp8_e4m3"),
                          ("e", v, "fp8_e5m2"), ("f", np.arange(6, dtype=np.float32), "float32")):
        write_dump(tmp_path / tag, [(0, "q", dtype, q)] + model()[:1])
    rc, out, err = compare(tmp_path / "a", tmp_path / "b")
    assert rc == 0 and "all 2 tensors match (1 of dtypes NumPy does not know, byte for byte)" \
        in out, (out, err)
    rc, out, err = compare(tmp_path / "c", tmp_path / "b")
    assert rc == 1 and "compared byte for byte (fp8_e4m3 has no NumPy type): element (3,) " \
        "differs (A 4d, B 03)" in out and "inf" not in out, (out, err)
    # against another dtype, even of the same size, bytes mean nothing
    for tag, other in (("e", "fp8_e5m2 (|V1)"), ("f", "float32 (<f4)")):
        rc, out, err = compare(tmp_path / "a", tmp_path / tag)
        assert rc == 2 and "NOT COMPARED" in out and "all 1 tensors match; 1 more not " \
            "compared" in out, (out, err)
        assert "the first: core 0 seq 0 'q' is fp8_e4m3 (|V1) in A, %s in B" % other in err, err


def test_compare_shows_what_the_producer_wrote_without_obeying_it(tmp_path, monkeypatch):
    # a prefix and dtype names with an escape sequence and a C1 control (CSI)
    esc, csi = "\x1b[31m", "\x9b2J"
    monkeypatch.setitem(NPY, esc, "|V1")
    monkeypatch.setitem(NPY, csi, "|V1")
    v = np.arange(6, dtype=np.uint8).view("V1")
    w = v.copy()
    w.view(np.uint8)[3] = 0x4d
    prefix = "p" + esc + "\r"
    for tag, q, dtype in (("a", v, esc), ("b", w, esc), ("c", v, csi)):
        write_dump(tmp_path / tag, [(0, prefix, dtype, q)])
    rc, out, err = compare(tmp_path / "a", tmp_path / "b")     # diverges
    assert rc == 1, (out, err)
    assert "compared byte for byte (\\x1b[31m has no NumPy type)" in out, out
    assert "\\x1b[31m vs \\x1b[31m" in out, out
    row = [line for line in out.splitlines() if "DIVERGES" in line]
    assert len(row) == 1 and " p\\x1b[31m\\x0d " in row[0] and " \\x1b[31m " in row[0], out
    rc, out2, err2 = compare(tmp_path / "a", tmp_path / "c")   # not compared
    assert rc == 2 and "is \\x1b[31m (|V1) in A, \\x9b2J (|V1) in B" in err2, err2
    for text in (out, err, out2, err2):
        assert not set(text) & {"\x1b", "\x9b", "\r"}, text


def write_run(d, steps=6, lost=(), leading_prints=0, change=None):
    """A dump as evs-dump writes one of a run that emits tensors 'h' and
    'out' per step on core 0, after leading_prints prints: the events whose
    seq is in lost are missing and counted in the next line's gap; change
    maps a seq to a function of its array."""
    d.mkdir()
    (d / "c0").mkdir()
    last = -1
    with open(d / "index.jsonl", "w") as idx:
        def line(seq, **fields):
            nonlocal last
            idx.write(json.dumps({"seq": seq, "core": 0, "ts_ns": 0, "gap": seq - last - 1,
                                  "pipe": 1, **fields}) + "\n")
            last = seq
        for seq in range(leading_prints):
            line(seq, kind="print", dtype=None, shape=None, bytes=0, file=None, prefix="hello")
        for i in range(2 * steps):
            seq = leading_prints + i
            if seq in lost:
                continue
            a = np.full(3, 10 * (i // 2) + i % 2, np.float32)
            if change and seq in change:
                a = change[seq](a)
            rel = "c0/%012d.npy" % seq
            np.save(d / rel, a)
            line(seq, kind="tensor", dtype="float32", npy_dtype="<f4", shape=[3], bytes=12,
                 file=rel, prefix="out" if i % 2 else "h")


def test_an_event_lost_in_one_run_is_named_and_shifts_nothing(tmp_path):
    # A lost step 2's 'h' (seq 4): the later 'h's of A still meet their own
    # step in B (matched by seq), and what was lost is named as lost
    write_run(tmp_path / "gold")
    write_run(tmp_path / "a", lost={4})
    rc, out, err = compare(tmp_path / "a", tmp_path / "gold")
    assert rc == 2, out + err
    assert "first divergence" not in out and "all 11 tensors match; 1 more are in one dump" in out
    assert "the first: core 0 seq 4 'h' is only in B: A lost it (its index has a gap of 1 event " \
        "before seq 5)" in err, err
    # a real divergence after the gap is found, on the right pair
    write_run(tmp_path / "a2", lost={4}, change={8: lambda a: a + 0.5})
    rc, out, err = compare(tmp_path / "a2", tmp_path / "gold")
    assert rc == 2 and "first divergence: core 0 seq 8 'h' (A) / seq 8 (B)" in out, out + err
    assert "1 of 11 tensors diverge" in out


def test_events_lost_in_both_runs_are_not_a_divergence(tmp_path):
    # as many 'h's on both sides, but not the same ones: by order of the
    # prefix, A's step 3 would meet B's step 2
    write_run(tmp_path / "a", lost={4})
    write_run(tmp_path / "b", lost={10})
    rc, out, err = compare(tmp_path / "a", tmp_path / "b")
    assert rc == 2 and "first divergence" not in out, out + err
    assert "all 10 tensors match; 2 more are in one dump only" in out
    assert "core 0 seq 4 'h' is only in B: A lost it" in err
    assert "core 0 seq 10 'h' is only in A: B lost it" in err


def test_compare_show_counts_what_it_leaves_out(tmp_path):
    """--show N lists N rows and says how many more, in the table and in
    the tensors in one dump only (the first of those is named whatever N
    is); --show 0 prints no table header without rows; a negative N is
    refused by name, exit 2 (-1 listed all rows but one and said one more
    than were left out)."""
    write_run(tmp_path / "gold", steps=6)
    write_run(tmp_path / "a", steps=6, lost={1, 3, 5, 7},
              change={s: (lambda a: a + 0.5) for s in (0, 2, 4, 6, 8)})
    for show, listed, more in ((3, 3, "  ... 2 more (--show N)"), (1, 1, "  ... 4 more"),
                               (0, 0, "  ... 5 rows not shown (--show N)"), (5, 5, None)):
        rc, out, err = compare(tmp_path / "a", tmp_path / "gold", "--show", show)
        assert rc == 2, out + err
        assert "5 of 8 tensors diverge; 4 more are in one dump only" in out, out
        assert out.count("DIVERGES") == listed, out
        assert ("status" in out) == (listed > 0), out
        assert (more in out) if more else "more (--show N)" not in out, out
        named = err.count(" is only in B: A lost it")
        assert named == min(max(show, 1), 4), err  # the first, then up to show in all
        assert ("  ... %d more (--show N)" % (4 - named) in err) == (named < 4), err
    rc, out, err = compare(tmp_path / "a", tmp_path / "gold", "--show", "-1")
    assert rc == 2 and out == "", out
    assert "--show -1: allowed is a count of rows >= 0" in err, err


def test_a_golden_run_of_another_runtime_says_what_was_lost(tmp_path):
    # the golden run's seqs differ (a print first), so tensors are matched
    # by order of their prefix: a lost one is said, and so is what it does
    write_run(tmp_path / "gold", leading_prints=1)
    write_run(tmp_path / "a", lost={4})
    rc, out, err = compare(tmp_path / "a", tmp_path / "gold")
    assert rc == 2 and "do not line up" in err, out + err
    assert "A lost 1 events on core 0 (gaps in its index before seq 5)" in err, err
    # as many tensors on both sides, but not the same ones: the divergence
    # found says the pairing may be off
    write_run(tmp_path / "a3", lost={4, 8})
    write_run(tmp_path / "b3", lost={7, 11}, leading_prints=1)
    rc, out, err = compare(tmp_path / "a3", tmp_path / "b3")
    assert rc == 1 and "first divergence: core 0 seq 6 'h' (A) / seq 5 (B)" in out, out + err
    assert "note: A lost 1 events on core 0 before seq 6 (gaps in its index): if one was a " \
        "'h', these two are not the same event" in out, out


def test_integers_past_2_53_are_compared_exactly(tmp_path):
    # float64 holds integers exactly only up to 2**53: ids, hashes and
    # counters past it differ by 1 where float64 sees them equal
    big = 2 ** 60
    cases = [("int64", np.array([5, big + 1], np.int64), "int64", np.array([5, big], np.int64)),
             ("uint64", np.array([2 ** 64 - 1], np.uint64),
              "uint64", np.array([2 ** 64 - 2], np.uint64)),
             ("int64", np.array([-1, big + 1], np.int64),
              "uint64", np.array([2 ** 64 - 1, big], np.uint64))]
    for i, (da, a, db, b) in enumerate(cases):
        write_dump(tmp_path / ("a%d" % i), [(0, "ids", da, a)])
        write_dump(tmp_path / ("b%d" % i), [(0, "ids", db, b)])
        rc, out, err = compare(tmp_path / ("a%d" % i), tmp_path / ("b%d" % i), "--atol", "0",
                               "--rtol", "0")
        assert rc == 1, (i, out, err)
        worst = int(np.argmax(np.abs(a.astype(object) - b.astype(object))))
        assert "max abs err %s at index (%d,) (A %d, B %d)" % (
            "%.4g" % float(abs(int(a[worst]) - int(b[worst]))), worst, a[worst], b[worst]) in out, \
            out
    # the same integers match
    rc, out, err = compare(tmp_path / "a0", tmp_path / "a0", "--atol", "0", "--rtol", "0")
    assert rc == 0, out + err


def test_the_first_divergence_is_shown_before_the_rest_is_read(tmp_path):
    b = model()
    b[0] = (0, "embed", "float32", b[0][3] + 0.25)
    b[3] = (1, "ids", "int32", b[3][3].reshape(1, 5))
    write_dump(tmp_path / "a", model())
    write_dump(tmp_path / "b", b)
    rc, out, err = compare(tmp_path / "a", tmp_path / "b")
    # the bad last pair ends the run, but what diverged before it was said
    assert rc == 2 and "shapes differ: core 1 seq 1 'ids'" in err
    assert "compare: 4 tensor pairs on cores 0,1" in out
    assert "first divergence: core 0 seq 0 'embed'" in out and "max abs err 0.25" in out


def test_progress_goes_to_a_terminal_only(tmp_path):
    import os
    import pty
    write_dump(tmp_path / "a", model())
    write_dump(tmp_path / "b", model())
    rc, out, err = compare(tmp_path / "a", tmp_path / "b")
    assert rc == 0 and err == ""            # a pipe: no progress
    master, slave = pty.openpty()
    r = subprocess.run([PY, "-m", "evstream", "compare", tmp_path / "a", tmp_path / "b"],
                       env=env(), stdout=subprocess.PIPE, stderr=slave, text=True, timeout=300)
    os.close(slave)
    tty = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:                     # EIO: the other side is closed
            break
        if not chunk:
            break
        tty += chunk
    os.close(master)
    assert r.returncode == 0 and "all 4 tensors match" in r.stdout
    assert b"\rcompare: 0 of 4 pairs (0%)" in tty and tty.endswith(b"\r\x1b[K"), tty


def test_bad_input_is_named_exit_2(tmp_path):
    write_dump(tmp_path / "a", model())
    rc, _, err = compare(tmp_path / "a", tmp_path / "nope")
    assert rc == 2 and "nope: no such directory" in err
    b = model()
    b[0] = (0, "embed", "float32", b[0][3].reshape(8, 4))
    write_dump(tmp_path / "b", b)
    rc, _, err = compare(tmp_path / "a", tmp_path / "b")
    assert rc == 2 and "shapes differ: core 0 seq 0 'embed' is (4, 8) in A" in err \
        and "(8, 4) in B" in err
    write_dump(tmp_path / "c", model()[:3])
    rc, _, err = compare(tmp_path / "a", tmp_path / "c")
    assert rc == 2 and "do not line up" in err and "'ids'" in err and "only in A" in err
    write_dump(tmp_path / "d", model())
    (tmp_path / "d" / "c1" / "000000000001.npy").unlink()
    rc, _, err = compare(tmp_path / "a", tmp_path / "d")
    assert rc == 2 and "c1/000000000001.npy" in err and "'ids'" in err
    (tmp_path / "e").mkdir()
    rc, _, err = compare(tmp_path / "a", tmp_path / "e")
    assert rc == 2 and "not an evs-dump directory" in err
    rc, _, err = compare(tmp_path / "a", tmp_path / "a", "--atol", "-1")
    assert rc == 2 and "--atol -1.0: allowed is a number >= 0" in err


def test_unreadable_index_and_files_are_named_exit_2(tmp_path):
    # bad bytes in the index, lines that are not objects, and files that are
    # not NumPy arrays of numbers: exit 2 with the file named, never a traceback
    write_dump(tmp_path / "a", model())

    def broken(tag, change):
        d = tmp_path / tag
        write_dump(d, model())
        change(d)
        rc, out, err = compare(tmp_path / "a", d)
        assert rc == 2 and "Traceback" not in err, (tag, out, err)
        return err

    def index_line(d, text):
        with open(d / "index.jsonl", "ab") as f:
            f.write(text)

    err = broken("utf8", lambda d: index_line(d, b'{"kind": "print", "prefix": "\xff"}\n'))
    assert "utf8/index.jsonl line 7: not an index line" in err and "UTF-8" in err
    err = broken("list", lambda d: index_line(d, b"[1, 2]\n"))
    assert "list/index.jsonl line 7: not an index line (a JSON array, not an object)" in err
    npy = "c0/000000000000.npy"
    err = broken("str", lambda d: np.save(d / npy, np.full((4, 8), "x")))
    assert "str/%s: core 0 seq 0 'embed': the file holds <U1 elements, not numbers" % npy in err
    def npz(d):
        with open(d / npy, "wb") as f:          # np.savez(path) would add .npz to the name
            np.savez(f, np.zeros((4, 8), np.float32))

    err = broken("npz", npz)
    assert "npz/%s: core 0 seq 0 'embed': not a NumPy array file we can read: a .npz " \
        "archive, not a .npy file" % npy in err
    err = broken("junk", lambda d: (d / npy).write_bytes(b"garbage, not an array"))
    assert "junk/%s: core 0 seq 0 'embed': not a NumPy array file we can read: it does not " \
        "start as a .npy file does (b'garbag')" % npy in err and "pickled" not in err
    err = broken("short", lambda d: (d / npy).write_bytes((d / npy).read_bytes()[:-8]))
    assert "short/%s: core 0 seq 0 'embed': not a NumPy array file we can read: " % npy in err


def demo_dump(procs, out, seed, extra=()):
    name = unique("cmp")
    demo = procs.start([tool("evs-demo"), "--name", name, "--cores", "2", "--events", "150",
                        "--rate", "3000", "--seed", str(seed), *extra],
                       stderr=subprocess.DEVNULL)
    dump = procs.start([tool("evs-dump"), "--output", str(out), "--wait", "30", "--no-print",
                        "--quiet", name])
    assert dump.wait(120) == 0 and demo.wait(60) == 0


def nudge_a_float32(dump):
    """Add 1.0 to element 1 of the first float32 tensor of a converted
    dump that has two: its index line and the array as it is now."""
    for line in open(dump / "index.jsonl"):
        j = json.loads(line)
        if j["kind"] == "tensor" and j["dtype"] == "float32" and j["bytes"] >= 8:
            break
    a = np.load(dump / j["file"])
    a.flat[1] += 1.0
    np.save(dump / j["file"], a)
    return j, a


def test_two_dumps_of_the_simulated_runtime(procs, tmpdir_fast):
    demo_dump(procs, tmpdir_fast / "a", 5)
    demo_dump(procs, tmpdir_fast / "b", 5)
    rc, out, err = compare(tmpdir_fast / "a", tmpdir_fast / "b")
    assert rc == 0, out + err
    # one element of one float32 tensor of B off by 1.0
    b = tmpdir_fast / "b"
    j, a = nudge_a_float32(b)
    rc, out, err = compare(tmpdir_fast / "a", b)
    assert rc == 1, out + err
    where = str(np.unravel_index(1, a.shape)) if a.ndim > 1 else "(1,)"
    assert "first divergence: core %d seq %d %r" % (j["core"], j["seq"], j["prefix"]) in out
    assert "max abs err 1 at index %s" % where in out
    assert " 1 of " in out and "tensors diverge" in out


def test_a_raw_dump_is_compared_without_converting_it(procs, tmpdir_fast):
    # --raw keeps every record in core<N>.evsraw: compare reads the tensors
    # there, at the index's offsets, as it reads the converted .npy files
    name = unique("cmpraw")
    raw = tmpdir_fast / "raw"
    demo = procs.start([tool("evs-demo"), "--name", name, "--cores", "2", "--events", "150",
                        "--rate", "3000", "--pattern", "all"], stderr=subprocess.DEVNULL)
    dump = procs.start([tool("evs-dump"), "--raw", "--output", str(raw), "--wait", "30",
                        "--no-print", "--quiet", name])
    assert dump.wait(120) == 0 and demo.wait(60) == 0
    npy = tmpdir_fast / "npy"
    conv = subprocess.run([tool("evs-dump"), "--convert", str(raw), "-o", str(npy), "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert conv.returncode == 0, conv.stderr
    rc, out, err = compare(raw, npy)
    assert rc == 0 and "all " in out and "tensors match" in out, out + err
    j, a = nudge_a_float32(npy)
    rc, out, err = compare(raw, npy)
    assert rc == 1 and "first divergence: core %d seq %d" % (j["core"], j["seq"]) in out, out + err
    # an offset that is not the tensor's record is named, not read
    lines = open(raw / "index.jsonl").read().splitlines()
    k = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "tensor")
    j = json.loads(lines[k])
    j["offset"] += 8
    lines[k] = json.dumps(j)
    (raw / "index.jsonl").write_text("\n".join(lines) + "\n")
    rc, out, err = compare(raw, npy)
    assert rc == 2 and "core%d.evsraw: core %d seq %d" % (j["core"], j["core"], j["seq"]) in err \
        and "is not this tensor's" in err, err


def test_a_large_tensor_is_compared_in_slices(tmpdir_fast):
    # a 32 MiB float32 pair: compare's memory grows by far less than one file
    x = np.random.default_rng(1).standard_normal(8 << 20, dtype=np.float32)
    write_dump(tmpdir_fast / "a", [(0, "big", "float32", x)])
    x[5_000_000] += 1
    write_dump(tmpdir_fast / "b", [(0, "big", "float32", x)])
    code = ("import resource, sys\n"
            "from evstream._compare import main\n"
            "import numpy\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "rc = main(sys.argv[1:])\n"
            "grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before\n"
            "print('grew %d KiB' % grew)\n"
            "sys.exit(rc)\n")
    r = subprocess.run([PY, "-c", code, str(tmpdir_fast / "a"), str(tmpdir_fast / "b")],
                       env=env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "max abs err 1 at index (5000000,)" in r.stdout, r.stdout
    grew = int(r.stdout.split("grew ")[1].split()[0])
    assert grew < 32 << 10, r.stdout


def test_tail_says_drops_counted_before_it_could_look():
    """Drops already in the first counts tail reads of a core are said at
    once (they were taken for a baseline and never shown); later ones as
    increases."""
    import io
    from evstream._tail import View

    class St:
        def __init__(self, **d):
            self.dropped_events = dict({"ring_full": 0, "too_big": 0}, **d)
    out = io.StringIO()
    v = View(out, 80, False)
    v.stats(1, St(ring_full=12))
    v.stats(1, St(ring_full=12))
    v.stats(1, St(ring_full=15))
    v.stats(0, St())
    assert out.getvalue().splitlines() == [
        "c1   -- drops when tail connected: ring_full 12",
        "c1   -- drops: ring_full +3 (so far: ring_full 15)"], out.getvalue()


def test_tail_shows_events_gaps_and_drops(procs, tmp_path):
    name = unique("tail")
    # core 1 overruns its small ring with a burst (ring_full), and tensors
    # larger than a 64 KiB ring are dropped as too_big: gaps and drops
    report = tmp_path / "demo.err"
    with open(report, "w") as err:
        demo = procs.start([tool("evs-demo"), "--name", name, "--cores", "2", "--events", "400",
                            "--rate", "2000", "--ring", "64K", "--burst-at", "100", "--burst", "300"],
                           stderr=err)
    r = subprocess.run([PY, "-m", "evstream", "tail", name, "--wait", "30", "--width", "40"],
                       env=env(), capture_output=True, text=True, timeout=300)
    assert demo.wait(60) == 0
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("c0   seq 0 ") for line in lines)
    assert any("tensor" in line and "[" in line for line in lines)
    assert any(line.startswith("c1   -- gap: ") for line in lines), r.stdout[-2000:]
    # what core 1 dropped, by evs-demo's own count: a reader as fast as the
    # producer (one built with a sanitizer is slow) may keep up with the
    # burst, and then there is no ring_full to show
    said = re.search(r"core 1: .*ring_full (\d+), too_big (\d+)", report.read_text())
    assert said, report.read_text()
    ring_full, too_big = int(said.group(1)), int(said.group(2))
    assert ring_full + too_big > 0, report.read_text()
    # as they happen, or (the burst landing while connect() returned) at once
    if ring_full:
        assert any(line.startswith(("c1   -- drops: ring_full +", "c1   -- drops when tail connected: ring_full"))
                   for line in lines), r.stdout[-2000:]
    if too_big:
        assert any(line.startswith("c1   -- drops") and "too_big" in line for line in lines), r.stdout[-2000:]
    assert "producer" in r.stderr and "closed" in r.stderr
    assert r.stderr.splitlines()[-2].split()[0] == "0"   # the summary table, core 0


def test_tail_without_numpy_shows_events_and_says_why_no_values(procs):
    name = unique("tail")
    demo = procs.start([tool("evs-demo"), "--name", name, "--cores", "1", "--events", "50",
                        "--rate", "2000"], stderr=subprocess.DEVNULL)
    # an interpreter without NumPy (a pyenv build on PATH, say)
    code = ("import runpy, sys\n"
            "sys.modules['numpy'] = None\n"
            "sys.argv[0] = 'evstream'\n"
            "runpy.run_module('evstream', run_name='__main__')\n")
    r = subprocess.run([PY, "-c", code, "tail", name, "--wait", "30"],
                       env=env(), capture_output=True, text=True, timeout=300)
    assert demo.wait(60) == 0
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert "no value previews: they need NumPy" in r.stderr, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("c0   seq 0 ") for line in lines), r.stdout
    # a preview ends a tensor's line as [v v v ... v v v]
    assert not any(" tensor " in line and line.endswith("]") for line in lines), r.stdout


def test_tail_shows_what_the_producer_wrote_without_obeying_it(procs):
    import evstream
    name = unique("tail")
    with evstream.Producer(name, 1, ring_bytes=1 << 20) as p:
        tail = procs.start([PY, "-m", "evstream", "tail", name, "--events", "3", "--wait", "30"],
                           env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.wait_connected(0, timeout=60), "tail did not connect"
        # a print that would clear the terminal, and its own newline
        assert p.emit_tensor(0, "step 1: \x1b[2Jcleared\r\n")
        assert p.emit_tensor(0, "w\x07", np.ones(3, np.float32))
        # a dtype's name is the producer's text too
        assert p.emit_tensor(0, "d", np.zeros(2, np.uint8), dtype="\x1b[2J")
        out, err = tail.communicate(timeout=120)
    assert tail.returncode == 0, err
    lines = out.splitlines()
    assert len(lines) == 3 and "\x1b" not in out and "\x07" not in out, out
    assert "\\x1b[2J" in lines[2], lines[2]
    assert lines[0].startswith("c0   seq 0 ") and "print" in lines[0]
    assert lines[0].endswith(" step 1: \\x1b[2Jcleared\\x0d"), lines[0]
    assert "tensor" in lines[1] and " w\\x07 [1 1 1]" in lines[1], lines[1]
    assert "ring_full  too_big  no_consumer  no_memory" in err


def test_tail_says_a_corrupt_stream_ended_and_watches_the_others(procs):
    name = unique("tail")
    emit, close = corrupting_producer(name, 2)
    try:
        tail = procs.start([PY, "-m", "evstream", "tail", name, "--wait", "30"],
                           env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        emit(0)
        # a record that claims more bytes than its ring: core 0 is broken
        emit(0, lambda size: setattr(size, "value", 1 << 40))
        emit(1)
        emit(1)
    finally:
        time.sleep(0.5)
        close()
    out, err = tail.communicate(timeout=120)
    assert "Traceback" not in err, err
    assert tail.returncode == 1, (tail.returncode, err)
    lines = out.splitlines()
    ended = [line for line in lines if line.startswith("c0   -- stream ended: ")]
    assert len(ended) == 1, out
    assert "core 0: stream corrupt" in ended[0] and "1099511627776" in ended[0], ended[0]
    assert ended[0].startswith("c0   -- stream ended: core 0: stream corrupt"), ended[0]
    # core 1 watched on: its two events (emits before tail connected to it
    # are dropped and retried: their seqs vary)
    assert len([line for line in lines if line.startswith("c1   seq ")]) == 2, out
    table = {line.split()[0]: line.split()[-1] for line in err.splitlines()[-2:]}
    assert table == {"0": "failed", "1": "closed"}, err


def test_tail_and_compare_with_an_ascii_stdout_write_escapes(procs, tmp_path):
    import evstream
    name = unique("tail")
    ascii_env = env(PYTHONIOENCODING="ascii")
    with evstream.Producer(name, 1, ring_bytes=1 << 20) as p:
        tail = procs.start([PY, "-m", "evstream", "tail", name, "--events", "2", "--wait", "30"],
                           env=ascii_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.wait_connected(0, timeout=60), "tail did not connect"
        assert p.emit_tensor(0, "caf\u00e9 \u2192\n")
        assert p.emit_tensor(0, "d", np.zeros(2, np.uint8), dtype="\u00b5int8")
        out, err = tail.communicate(timeout=120)
    assert tail.returncode == 0 and b"Traceback" not in err, err
    lines = out.decode("ascii").splitlines()
    assert lines[0].endswith(" caf\\xe9 \\u2192"), lines[0]
    assert "\\xb5int8" in lines[1], lines[1]
    # compare prints the index's prefixes: the same
    for tag in ("a", "b"):
        write_dump(tmp_path / tag, [(0, "caf\u00e9", "float32", np.arange(3, dtype=np.float32) *
                                     (tag == "a"))])
    r = subprocess.run([PY, "-m", "evstream", "compare", tmp_path / "a", tmp_path / "b"],
                       env=ascii_env, capture_output=True, timeout=300)
    assert r.returncode == 1 and b"Traceback" not in r.stderr, r.stderr
    assert b"'caf\\xe9'" in r.stdout and b" caf\\xe9 " in r.stdout, r.stdout


def test_tail_into_a_pipe_that_closes_exits_quietly(procs):
    # `tail P | head -3`: the reader goes; tail stops, no traceback, exit 0
    import evstream
    name = unique("tail")
    with evstream.Producer(name, 1, ring_bytes=1 << 20) as p:
        tail = procs.start([PY, "-m", "evstream", "tail", name, "--wait", "30"], env=env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.wait_connected(0, timeout=60), "tail did not connect"
        for i in range(3):
            p.emit_tensor(0, "line %d" % i)
        lines = [tail.stdout.readline() for _ in range(3)]
        assert all(b"line" in line for line in lines), lines
        tail.stdout.close()                  # as head does after its lines
        deadline = time.monotonic() + DEADLINE
        while tail.poll() is None and time.monotonic() < deadline:
            p.emit_tensor(0, "more", np.zeros(256, np.float32))
            time.sleep(0.002)
        err = tail.stderr.read().decode()
    assert tail.wait(60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception" not in err, err
    assert "ring_full  too_big  no_consumer  no_memory" in err, err


# `python3 -m evstream tail` with evstream.connect() saying on stdout when
# it is called: a SIGINT sent after that line finds tail in its wait for
# the producer, not still starting (where __main__ ends it quietly, 130).
# SIGINT's handler is set here: a harness in the background may leave it
# ignored, and Python would keep it so
TAIL_ANNOUNCING_CONNECT = """
import runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import evstream
connect = evstream.connect
def announced(*args, **kw):
    print("connecting", flush=True)
    return connect(*args, **kw)
evstream.connect = announced
sys.argv = ["evstream", "tail", %r, "--wait", "600"]
runpy.run_module("evstream", run_name="__main__", alter_sys=True)
"""


def test_tail_ctrl_c_while_waiting_for_the_producer(procs):
    import signal
    tail = procs.start([PY, "-c", TAIL_ANNOUNCING_CONNECT % unique("nobody")],
                       env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert tail.stdout.readline() == "connecting\n"
    tail.send_signal(signal.SIGINT)
    out, err = tail.communicate(timeout=60)
    assert tail.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert out == "" and "interrupted while waiting for producer" in err, err


def test_tail_ctrl_c_shows_the_table(procs):
    import signal
    import evstream
    name = unique("tail")
    with evstream.Producer(name, 1, ring_bytes=1 << 20) as p:
        tail = procs.start([PY, "-m", "evstream", "tail", name, "--wait", "30"], env=env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.wait_connected(0, timeout=60), "tail did not connect"
        p.emit_tensor(0, "one")
        assert "one" in tail.stdout.readline()
        tail.send_signal(signal.SIGINT)
        out, err = tail.communicate(timeout=60)
    assert tail.returncode == 0, err
    assert "Traceback" not in err and "tail: 1 events" in err, err
    assert err.splitlines()[-1].split()[:2] == ["0", "1"], err     # core 0, 1 event


def test_tail_and_compare_usage_errors():
    r = subprocess.run([PY, "-m", "evstream", "tail", "no-such-producer", "--wait", "0"],
                       env=env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no-such-producer" in r.stderr
    r = subprocess.run([PY, "-m", "evstream", "frobnicate"], env=env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "unknown command 'frobnicate'" in r.stderr
    # each bad number is named; NaN is no number of seconds (a limit never reached)
    for opt, value in (("--wait", "nan"), ("--seconds", "nan"), ("--seconds", "-1"),
                       ("--events", "-5"), ("--width", "3")):
        r = subprocess.run([PY, "-m", "evstream", "tail", "no-such-producer", "--wait", "0",
                            opt, value], env=env(), capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (opt, value, r.stderr)
        assert "%s %s: allowed is a number >= " % (opt, float(value) if opt in ("--wait",
                                                   "--seconds") else value) in r.stderr, r.stderr


@pytest.mark.parametrize("cmd", ["tail", "compare"])
def test_help(cmd):
    r = subprocess.run([PY, "-m", "evstream", cmd, "--help"], env=env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "usage: python3 -m evstream " + cmd in r.stdout
