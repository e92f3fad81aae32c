# SPDX-License-Identifier: MIT
"""The documented offline install on Debian 12's /usr/bin/python3 (PEP 668:
externally managed, no PyPI): a venv that sees Debian's packages, then
pip with Debian's setuptools and no build isolation. Built from a copy of
the sources, so that the checkout is left alone."""
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import textwrap

from conftest import BUILD, ROOT, unique

ROUNDTRIP = textwrap.dedent("""
    import os, sys, numpy as np, evstream
    assert evstream.__file__.startswith(sys.prefix), evstream.__file__
    want = os.environ.get("EVSTREAM_PY_IMPL")
    assert not want or evstream.implementation == want, evstream.implementation
    p = evstream.Producer(sys.argv[1], 1, ring_bytes=1 << 20)
    s = evstream.connect(sys.argv[1], 0)
    p.emit_tensor(0, "x", np.arange(6, dtype=np.int32).reshape(2, 3).T)
    ev = s.read(5)
    print(evstream.implementation, ev.prefix, ev.shape, ev.array().ravel().tolist())
""")


def test_pip_install_in_a_venv_with_system_site_packages(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "python", src / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
    shutil.copytree(ROOT / "include", src / "include")
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", "--system-site-packages",
                    str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "EVSTREAM_LIBRARY", "PIP_INDEX_URL")}
    env["EVSTREAM_LIBDIR"] = str(BUILD)     # the library `make` built
    r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                        "./python"], cwd=src, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    installed = list((venv / "lib").glob("python3*/site-packages/evstream"))
    assert len(installed) == 1
    have_ext = (installed[0] / "_native.abi3.so").exists()
    # pip builds the extension wherever this Python has its headers
    # (python3-dev), whatever `make` was told, and installs without it else
    assert have_ext == (pathlib.Path(sysconfig.get_paths()["include"]) / "Python.h").exists()
    assert (installed[0] / "_config.py").exists()   # where the fallback finds the library
    del env["EVSTREAM_LIBDIR"]
    r = subprocess.run([py, "-c", ROUNDTRIP, unique("pip")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    impl = os.environ.get("EVSTREAM_PY_IMPL") or ("native" if have_ext else "fallback")
    assert r.stdout.split(" ", 1) == [impl, "x (3, 2) [0, 3, 1, 4, 2, 5]\n"]
    r = subprocess.run([py, "-m", "evstream", "info"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "implementation: %s" % impl in r.stdout, r.stderr
    # the fallback loads the library recorded at install time (the one the
    # extension is linked with), not another libevstream that happens to
    # stand where a checkout's build directory would
    decoy = installed[0].parent.parent / "build" / "libevstream.so.1"
    decoy.parent.mkdir()
    shutil.copy(BUILD / "libevstream.so.1", decoy)
    r = subprocess.run([py, "-c", "import evstream._lib as l; print(l.path)"], cwd=tmp_path,
                       env=dict(env, EVSTREAM_PY_IMPL="fallback"), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == os.path.normpath(os.path.abspath(BUILD / "libevstream.so.1")), r.stdout
    assert sys.executable  # the suite itself runs on /usr/bin/python3 (run.sh)
