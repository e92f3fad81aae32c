# SPDX-License-Identifier: MIT
"""Which implementation: chosen automatically, forced by EVSTREAM_PY_IMPL,
a bad value refused by name; the library found or named where it was
looked for; both implementations agree on the library's constants."""
import os
import pathlib
import shutil

import pytest

import evstream
from conftest import BUILD, run_python


def test_the_forced_implementation_is_the_one_in_use():
    want = os.environ.get("EVSTREAM_PY_IMPL")
    assert evstream.implementation in ("native", "fallback")
    if want:
        assert evstream.implementation == want
    assert evstream.Producer.__module__.startswith("evstream._" + evstream.implementation)


def test_a_bad_value_is_refused_by_name():
    r = run_python("import evstream", EVSTREAM_PY_IMPL="fast")
    assert r.returncode != 0
    assert "EVSTREAM_PY_IMPL='fast': allowed is 'native', 'fallback'" in r.stderr


def test_the_fallback_is_chosen_when_the_extension_is_missing(tmp_path):
    pkg = tmp_path / "evstream"
    shutil.copytree(BUILD / "python" / "evstream", pkg,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    code = "import evstream; print(evstream.implementation); print(evstream.native_error)"
    r = run_python(code, PYTHONPATH=tmp_path, EVSTREAM_PY_IMPL="")
    impl, why = r.stdout.splitlines()
    assert impl == "fallback", r.stderr
    assert why == "the extension is not built: no _native*.so in %s" % pkg
    r = run_python("import evstream", PYTHONPATH=tmp_path, EVSTREAM_PY_IMPL="native")
    assert r.returncode != 0
    assert "EVSTREAM_PY_IMPL=native, but the extension evstream._native cannot be imported " \
        "(the extension is not built: no _native*.so in %s)" % pkg in r.stderr
    assert "make python" in r.stderr


def test_the_submodules_are_there_after_a_bare_import():
    # the reference API and the torch hooks, as the docs write them
    r = run_python("import sys, evstream; print(evstream.nrt.connect.__module__); "
                   "print('torch' in sys.modules)")
    assert r.stdout.split() == ["evstream.nrt", "False"], r.stderr
    r = run_python("import evstream; evstream.nothing")
    assert "module 'evstream' has no attribute 'nothing'" in r.stderr


def test_the_library_not_found_names_where_it_was_looked_for(tmp_path):
    r = run_python("import evstream", EVSTREAM_PY_IMPL="fallback",
                   EVSTREAM_LIBRARY=tmp_path / "nope.so")
    assert r.returncode != 0
    assert "cannot load libevstream.so.1; tried: %s (EVSTREAM_LIBRARY: no such file)" % (
        tmp_path / "nope.so") in r.stderr


def test_a_library_that_is_not_libevstream_is_named():
    # a shared object of something else (here one of Python's own)
    import _ctypes
    other = _ctypes.__file__
    r = run_python("import evstream", EVSTREAM_PY_IMPL="fallback", EVSTREAM_LIBRARY=other)
    assert r.returncode != 0
    err = r.stderr.strip().splitlines()[-1]
    assert err.startswith("ImportError: cannot load libevstream.so.1; tried: %s (EVSTREAM_LIBRARY: "
                          "not libevstream: it has no evs_producer__new)" % other), r.stderr
    assert "AttributeError" not in r.stderr and "undefined symbol" not in r.stderr


@pytest.mark.skipif(not (BUILD / "python" / "evstream" / "_native.abi3.so").exists(),
                    reason="the native extension is not built")
def test_both_implementations_agree_on_the_library():
    from evstream import _fallback, _native
    for k in ("MAX_HELD", "HAVE_PEEK_NEXT", "EVENT_TENSOR_READ", "TENSOR_FIXED_BYTES"):
        assert getattr(_fallback, k) == getattr(_native, k), k
    payload = bytes(1024)
    assert _fallback.tensor_parse(payload) == _native.tensor_parse(payload)
    assert _fallback.dtype_size("bfloat16") == _native.dtype_size("bfloat16") == 2


def test_the_extension_is_abi3_and_uses_only_the_public_api():
    so = BUILD / "python" / "evstream" / "_native.abi3.so"
    if not so.exists():
        pytest.skip("the native extension is not built")
    src = pathlib.Path(__file__).resolve().parents[1] / "src"
    for c in src.glob("*.[ch]"):
        for line in c.read_text().splitlines():
            if line.startswith("#include \""):
                # only the extension's own headers, beside it
                name = line.split('"')[1]
                assert "/" not in name and (src / name).is_file(), (c, line)
            if line.startswith("#include <evstream") or line.startswith("#include <nrt"):
                assert line.split("<")[1].split("/")[0] in ("evstream", "nrt"), (c, line)
                assert "private" not in line, (c, line)
    assert "Py_LIMITED_API=0x030B0000" in (pathlib.Path(__file__).resolve().parents[1]
                                          / "python.mk").read_text()


def test_the_guides_first_example_runs_as_written():
    # docs/python.md's opening example, taken from the page itself, so that
    # the text a newcomer copies first keeps working
    guide = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
    code = guide.split("```python\n", 1)[1].split("```", 1)[0]
    r = run_python(code, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "tensor", "layer3.out", "float32", "(4,", "3)", "0"], r.stdout


# Arguments of the wrong type or value, and what both implementations raise
# for them (docs/python.md: "the same interface and the same behaviour"):
# ints are what has __index__, seconds what has __float__ or __index__.
BAD_ARGUMENTS = [
    ("Producer ncores='2'", lambda p, s, n: evstream.Producer(None, "2"), TypeError),
    ("Producer ncores=2.0", lambda p, s, n: evstream.Producer(None, 2.0), TypeError),
    ("Producer ring_bytes='1M'", lambda p, s, n: evstream.Producer(None, ring_bytes="1M"),
     TypeError),
    ("Producer ring_bytes=1e6", lambda p, s, n: evstream.Producer(None, ring_bytes=1e6), TypeError),
    ("Producer max_events=3.0", lambda p, s, n: evstream.Producer(None, max_events=3.0), TypeError),
    ("Producer allow_gid='0'", lambda p, s, n: evstream.Producer(None, allow_gid="0"), TypeError),
    ("Producer allow_gid=0.5", lambda p, s, n: evstream.Producer(None, allow_gid=0.5), TypeError),
    ("Producer hugepages=[]", lambda p, s, n: evstream.Producer(None, hugepages=[]), ValueError),
    ("Producer hugepages=True", lambda p, s, n: evstream.Producer(None, hugepages=True), ValueError),
    ("Producer runtime_dir=b'/tmp'", lambda p, s, n: evstream.Producer(None, runtime_dir=b"/tmp"),
     TypeError),
    ("Producer name=5", lambda p, s, n: evstream.Producer(5), TypeError),
    ("emit core='0'", lambda p, s, n: p.emit("0", 5, b"x"), TypeError),
    ("emit core=1.0", lambda p, s, n: p.emit(1.0, 5, b"x"), TypeError),
    ("emit core=None", lambda p, s, n: p.emit(None, 5, b"x"), TypeError),
    ("emit type='5'", lambda p, s, n: p.emit(0, "5", b"x"), TypeError),
    ("emit type=5.0", lambda p, s, n: p.emit(0, 5.0, b"x"), TypeError),
    ("emit data='x'", lambda p, s, n: p.emit(0, 5, "x"), TypeError),
    ("emit_tensor core='0'", lambda p, s, n: p.emit_tensor("0", "x", b"ab"), TypeError),
    ("emit_tensor core=0.0", lambda p, s, n: p.emit_tensor(0.0, "x", b"ab"), TypeError),
    ("emit_tensor pipe=1.0", lambda p, s, n: p.emit_tensor(0, "x", b"ab", pipe=1.0), TypeError),
    ("emit_tensor pipe='1'", lambda p, s, n: p.emit_tensor(0, "x", b"ab", pipe="1"), TypeError),
    ("emit_tensor pipe=None", lambda p, s, n: p.emit_tensor(0, "x", b"ab", pipe=None), TypeError),
    ("emit_tensor dtype=5", lambda p, s, n: p.emit_tensor(0, "x", b"ab", dtype=5), ValueError),
    ("emit_tensor prefix=5", lambda p, s, n: p.emit_tensor(0, 5, b"ab"), TypeError),
    ("flush core='0'", lambda p, s, n: p.flush("0"), TypeError),
    ("stats core=0.0", lambda p, s, n: p.stats(0.0), TypeError),
    ("wait_connected cores='0'", lambda p, s, n: p.wait_connected("0", timeout=0), TypeError),
    ("wait_connected cores=[0.0]", lambda p, s, n: p.wait_connected([0.0], timeout=0), TypeError),
    ("wait_connected timeout='1'", lambda p, s, n: p.wait_connected(0, timeout="1"), TypeError),
    ("wait_connected timeout=-1", lambda p, s, n: p.wait_connected(0, timeout=-1), ValueError),
    ("wait_connected timeout=nan", lambda p, s, n: p.wait_connected(0, timeout=float("nan")),
     ValueError),
    ("wait_connected cores=object()", lambda p, s, n: p.wait_connected(object(), 0), TypeError),
    ("connect core='1'", lambda p, s, n: evstream.connect(n, "1"), TypeError),
    ("connect core=1.0", lambda p, s, n: evstream.connect(n, 1.0), TypeError),
    ("connect core=None", lambda p, s, n: evstream.connect(n, None), TypeError),
    ("connect timeout='x'", lambda p, s, n: evstream.connect(n, 1, timeout="x"), TypeError),
    ("connect timeout='1'", lambda p, s, n: evstream.connect(n, 1, timeout="1"), TypeError),
    ("connect timeout=-1", lambda p, s, n: evstream.connect(n, 1, timeout=-1), ValueError),
    ("connect timeout=nan", lambda p, s, n: evstream.connect(n, 1, timeout=float("nan")),
     ValueError),
    ("connect producer=5", lambda p, s, n: evstream.connect(5, 1), TypeError),
    ("connect runtime_dir=5", lambda p, s, n: evstream.connect(n, 1, runtime_dir=5), TypeError),
    ("read timeout='1'", lambda p, s, n: s.read("1"), TypeError),
    ("read timeout=[]", lambda p, s, n: s.read([]), TypeError),
    ("read timeout=-1", lambda p, s, n: s.read(-1), ValueError),
    ("read_batch n='3'", lambda p, s, n: s.read_batch("3"), TypeError),
    ("read_batch n=3.0", lambda p, s, n: s.read_batch(3.0), TypeError),
    ("read_batch n=0", lambda p, s, n: s.read_batch(0), ValueError),
    ("read_batch timeout='0'", lambda p, s, n: s.read_batch(1, "0"), TypeError),
    ("subscribe core='1'", lambda p, s, n: evstream.subscribe("1", print, producer=n), TypeError),
    ("subscribe core=1.0", lambda p, s, n: evstream.subscribe(1.0, print, producer=n), TypeError),
    ("subscribe timeout='1'", lambda p, s, n: evstream.subscribe(1, print, producer=n,
                                                                timeout="1"), TypeError),
    ("subscribe timeout=-1", lambda p, s, n: evstream.subscribe(1, print, producer=n,
                                                               timeout=-1), ValueError),
    ("subscribe fn=5", lambda p, s, n: evstream.subscribe(1, 5, producer=n), TypeError),
    ("nrt.connect core='0'", lambda p, s, n: evstream.nrt.connect("0"), TypeError),
]


@pytest.mark.parametrize("call,expected", [c[1:] for c in BAD_ARGUMENTS],
                         ids=[c[0] for c in BAD_ARGUMENTS])
def test_both_implementations_refuse_bad_arguments_alike(producer, name, call, expected):
    s = evstream.connect(name, 0)
    producer.emit(0, 5, b"x")                 # something to read, were it read
    try:
        with pytest.raises(expected) as e:
            call(producer, s, name)
        assert type(e.value) is expected, e.value        # not a subclass of it either
    finally:
        s.close()
