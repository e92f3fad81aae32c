# SPDX-License-Identifier: MIT
"""Build and install the evstream package.

libevstream and its headers are found, in order: $EVSTREAM_INCLUDE and
$EVSTREAM_LIBDIR; the checkout this directory sits in (../include and a
../build made by `make`); pkg-config evstream (after `make install`).
The extension (abi3, CPython's limited API of 3.11) is optional: when it
cannot be built (no headers, no library, no Python.h, no compiler) the
install goes on with the pure-Python fallback and says why. The library
directory is recorded in evstream/_config.py (for the fallback) and as
the extension's rpath.
"""
import os
import re
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def pkg_config(var):
    try:
        return subprocess.run(["pkg-config", "--variable=" + var, "evstream"], check=True,
                              capture_output=True, text=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def locate():
    inc = os.environ.get("EVSTREAM_INCLUDE")
    lib = os.environ.get("EVSTREAM_LIBDIR")
    if not inc and os.path.exists(os.path.join(ROOT, "include", "evstream", "evstream.h")):
        inc = os.path.join(ROOT, "include")
    if not lib and os.path.exists(os.path.join(ROOT, "build", "libevstream.so.1")):
        lib = os.path.join(ROOT, "build")
    inc = inc or pkg_config("includedir")
    lib = lib or pkg_config("libdir")
    return inc, lib


INCLUDE, LIBDIR = locate()


def version():
    try:
        with open(os.path.join(INCLUDE, "evstream", "evstream.h")) as f:
            text = f.read()
        return ".".join(re.search(r"#define EVSTREAM_VERSION_%s (\d+)" % k, text).group(1)
                        for k in ("MAJOR", "MINOR", "PATCH"))
    except (OSError, TypeError, AttributeError):
        return "1.0.0"


class OptionalBuildExt(build_ext):
    """The extension if it builds; the fallback alone if not, said once."""

    def run(self):
        if not INCLUDE or not LIBDIR:
            self.skip("libevstream or its headers were not found (run make, or make install, "
                      "or set EVSTREAM_INCLUDE and EVSTREAM_LIBDIR)")
            return
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 (any build failure: the fallback stays)
            self.skip("the extension did not build: %s" % e)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            self.skip("the extension did not build: %s" % e)

    def skip(self, why):
        sys.stderr.write("evstream: %s; installing the pure-Python fallback alone\n" % why)


class BuildPyConfig(build_py):
    """evstream/_config.py: where the library was found, for the fallback."""

    def run(self):
        super().run()
        if LIBDIR:
            path = os.path.join(self.build_lib, "evstream", "_config.py")
            with open(path, "w") as f:
                f.write("# written by setup.py: the library directory found at install time\n"
                        "LIBDIR = %r\n" % os.path.abspath(LIBDIR))


ext = Extension(
    "evstream._native",
    sources=sorted(os.path.join("src", f) for f in os.listdir(os.path.join(HERE, "src"))
                   if f.endswith(".c")),
    depends=[os.path.join("src", f) for f in ("evspy.h", "lease.h")],
    include_dirs=[INCLUDE] if INCLUDE else [],
    library_dirs=[LIBDIR] if LIBDIR else [],
    runtime_library_dirs=[os.path.abspath(LIBDIR)] if LIBDIR else [],
    libraries=["evstream", "pthread"],
    define_macros=[("Py_LIMITED_API", "0x030B0000"), ("_GNU_SOURCE", None)],
    extra_compile_args=["-std=gnu11", "-Wall", "-Wextra"],
    py_limited_api=True,
)

setup(
    name="evstream",
    version=version(),
    description="Per-core shared-memory event streams of accelerator debug events (tensor reads)",
    license="MIT",
    python_requires=">=3.11",
    packages=["evstream"],
    ext_modules=[ext],
    cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyConfig},
    extras_require={"numpy": ["numpy"], "torch": ["torch"]},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
    zip_safe=False,
)
