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
                assert line == '#include "evspy.h"', (c, line)
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
