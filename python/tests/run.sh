#!/usr/bin/env bash
# The pytest suite (python/tests) under one implementation of the evstream
# package: run.sh native|fallback. native.sh and fallback.sh are the two
# entries `make test` runs. Exit 77 with a SKIP line when what the run
# needs is missing (pytest or NumPy for $PYTHON, or the extension).
# Extra arguments go to pytest (test files first: only those run).
set -u
impl=${1:?usage: run.sh native|fallback [pytest args]}
shift
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
PY=${PYTHON:-/usr/bin/python3}
for m in pytest numpy; do
	"$PY" -c "import $m" 2>/dev/null || { echo "SKIP: $PY has no $m (python3-$m; make deps)"; exit 77; }
done
if [ "$impl" = native ] && [ ! -e "$BUILD/python/evstream/_native.abi3.so" ]; then
	echo "SKIP: the native extension is not built ($BUILD/python/evstream/_native.abi3.so; needs python3-dev, then make python)"
	exit 77
fi
[ -e "$BUILD/python/evstream/__init__.py" ] || { echo "FAIL: the package is not staged (make python)"; exit 1; }
run=$(mktemp -d /tmp/evs-pytest-$impl.XXXXXX) || exit 1
trap 'rm -rf "$run"' EXIT
export EVSTREAM_PY_IMPL=$impl
export PYTHONPATH=$BUILD/python
export EVSTREAM_LIBRARY=$BUILD/libevstream.so.1
export EVS_BUILD=$BUILD
export EVSTREAM_RUNTIME_DIR=$run
export PYTHONDONTWRITEBYTECODE=1
echo "pytest: the evstream package, $impl implementation, $("$PY" -V 2>&1) ($PY)"
# run.sh IMPL [tests or pytest options]: the whole suite unless tests are named
paths=python/tests
[ $# -gt 0 ] && [ -e "${1%%::*}" ] && paths=
"$PY" -m pytest -q -rs -p no:cacheprovider $paths "$@"
