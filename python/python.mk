# The Python package (python/evstream) and its native extension.
#
#   make python        stage the package in $(BUILD)/python/evstream and build
#                      the extension there (_native.abi3.so) when python3-dev
#                      is installed; without it, one line says so and the
#                      pure-Python fallback is staged alone (plain `make`
#                      does the same, its line of what it left out says so)
#   make python-test   the pytest suite under both implementations
#   make bench-python  the Python benchmark (python/bench/bench_py.py)
#
# Everything runs with $(PYTHON): Debian's /usr/bin/python3, which has the
# python3-numpy, python3-pytest and python3-torch packages `make deps`
# installs (a python3 earlier on PATH may lack them).

PYTHON ?= /usr/bin/python3

PY_BUILD   := $(BUILD)/python
PY_PKG     := $(PY_BUILD)/evstream
PY_SOURCES := $(sort $(wildcard python/evstream/*.py))
PY_STAGED  := $(PY_SOURCES:python/evstream/%=$(PY_PKG)/%)
PY_CSRCS   := $(sort $(wildcard python/src/*.c))
PY_CHDRS   := $(wildcard python/src/*.h)
PY_EXT     := $(PY_PKG)/_native.abi3.so
PY_INCLUDE := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_DEV     := $(wildcard $(PY_INCLUDE)/Python.h)
# the limited API of 3.11 (the buffer protocol is in it): one abi3 build
PY_CFLAGS  := -std=gnu11 $(WARN) $(OPT) $(CFLAGS) -D_GNU_SOURCE -DPy_LIMITED_API=0x030B0000 \
	      -Iinclude -isystem $(PY_INCLUDE) -fPIC -fvisibility=hidden

.PHONY: python python-nodev python-test bench-python
ifneq ($(PY_DEV),)
PROGRAMS += $(PY_STAGED) $(PY_EXT)
else
PROGRAMS += $(PY_STAGED)
LEFT_OUT += the Python extension (no Python.h for $(PYTHON): python3-dev; the pure-Python fallback works alone)
endif

python: $(PY_STAGED) $(if $(PY_DEV),$(PY_EXT),python-nodev)

python-nodev:
	@echo "python: no Python.h for $(PYTHON) (python3-dev): the native extension is not built; the pure-Python fallback works alone"

$(PY_PKG)/%.py: python/evstream/%.py
	@mkdir -p $(dir $@)
	cp $< $@

# only include/evstream/*.h and include/nrt/*.h; -levstream, found by rpath
$(PY_EXT): $(PY_CSRCS) $(PY_CHDRS) $(BUILD)/libevstream.so include/evstream/evstream.h include/evstream/tensor.h
	@mkdir -p $(dir $@)
	$(CC) $(PY_CFLAGS) -shared $(PY_CSRCS) -o $@ $(PROG_LDFLAGS) -levstream -lpthread

# The suite twice, one run per implementation, each through run-tests.sh.
PY_TESTS := python/tests/native.sh python/tests/fallback.sh
TESTS    += $(PY_TESTS)
$(PY_TESTS): python $(BUILD)/evs-dump $(BUILD)/evs-demo

python-test: python $(BUILD)/evs-dump $(BUILD)/evs-demo
	@bash scripts/run-tests.sh $(PY_TESTS)

PY_BENCH_PEER := $(BUILD)/python/bench/evs-pybench-peer
$(PY_BENCH_PEER): python/bench/peer.c $(BUILD)/libevstream.so
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(PROG_CFLAGS)) $< -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS)

# the benchmark runs end to end in make test (one short round): it cannot rot
TESTS += python/bench/smoke.sh
python/bench/smoke.sh: python $(PY_BENCH_PEER)

bench-python: python $(PY_BENCH_PEER)
	PYTHONPATH=$(abspath $(PY_BUILD)) $(PYTHON) python/bench/bench_py.py --peer $(PY_BENCH_PEER)
