# evs-bench: throughput and latency next to the limits and alternatives.
# `make bench` (deps first, huge pages and bpffs when root) runs it (about
# six minutes, two of them for LTTng-UST and the drop-free search;
# BENCH_ARGS=--quick: about a minute and a half), folds in evs-bench-drops
# when that exists, and draws the plots.
BENCH_SRCS := bench/evs_bench.c bench/common.c bench/limits.c bench/alt.c \
              bench/tput.c bench/lat.c bench/drop_rate.c bench/bare.c \
              bench/cost.c bench/floor.c bench/lttng.c bench/lttng_ctf.c \
              bench/lttng_peer.c
BENCH_OBJS := $(BENCH_SRCS:%.c=$(BUILD)/%.o)
# The bench spells memory ordering through transport/atomics.h, as the
# library does (the one header of transport/ it includes); for every bench
# object, evs-bench-drops' (ebpf/ebpf.mk) too: they share bench.h.
$(BUILD)/bench/%.o: PROG_CFLAGS += -Itransport

# LTTng-UST, the peer of the lttng and dropfree parts, where its headers are
# (pkg-config lttng-ust; EVS_NO_LTTNG=1 builds without it all the same).
# evs-bench itself holds the call site (with liblttng-ust-tracepoint, which
# only registers it) and dlopen()s the provider, a shared object linked with
# liblttng-ust, in its LTTng process only: the tracer and its threads are
# in no other part. The mode is kept in a file so that switching it
# rebuilds what depends on it.
BENCH_LTTNG := $(if $(EVS_NO_LTTNG),off-forced,$(shell pkg-config --exists lttng-ust 2>/dev/null && \
	echo on || echo off-missing))
BENCH_LTTNG_MODE := $(BUILD)/bench/lttng.mode
$(shell mkdir -p $(BUILD)/bench; [ "$$(cat $(BENCH_LTTNG_MODE) 2>/dev/null)" = $(BENCH_LTTNG) ] || \
	echo $(BENCH_LTTNG) > $(BENCH_LTTNG_MODE))
BENCH_LTTNG_TP := $(BUILD)/evs-bench-lttng-tp.so
ifeq ($(BENCH_LTTNG),on)
BENCH_LTTNG_CFLAGS := -DEVS_BENCH_LTTNG -Ibench $(shell pkg-config --cflags lttng-ust)
BENCH_LTTNG_DEPS := $(BENCH_LTTNG_TP)
PROGRAMS += $(BENCH_LTTNG_TP)
else
# what its rows say instead of figures
BENCH_LTTNG_OFF := $(if $(EVS_NO_LTTNG),EVS_NO_LTTNG set,liblttng-ust-dev missing)
BENCH_LTTNG_CFLAGS := -DEVS_BENCH_LTTNG_OFF='"$(BENCH_LTTNG_OFF)"'
LEFT_OUT += the bench's LTTng-UST peer ($(BENCH_LTTNG_OFF))
endif
BENCH_BIN  := $(BUILD)/evs-bench
BENCH_OUT  ?= $(BUILD)/bench-results
BENCH_ARGS ?=
# Throughput rings are 64 MiB; huge-page variants need 32 pages of their own.
BENCH_HUGEPAGES ?= 96
PROGRAMS   += $(BENCH_BIN)

$(BUILD)/bench/lttng_peer.o: PROG_CFLAGS += $(BENCH_LTTNG_CFLAGS)
$(BUILD)/bench/lttng_peer.o: $(BENCH_LTTNG_MODE)

# the tracepoint provider: the probes, and liblttng-ust with them
$(BUILD)/bench/lttng_tp.o: bench/lttng_tp.c bench/lttng_tp.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ibench $(shell pkg-config --cflags lttng-ust) -fPIC -c $< -o $@

$(BENCH_LTTNG_TP): $(BUILD)/bench/lttng_tp.o
	$(CC) $(OPT) $(CFLAGS) -shared -Wl,--no-as-needed -o $@ $< $(LDFLAGS) $(shell pkg-config --libs lttng-ust)

$(BENCH_BIN): $(BENCH_OBJS) $(TOOLS_LIB) $(BUILD)/libevstream.so $(BENCH_LTTNG_DEPS) $(BENCH_LTTNG_MODE)
	$(CC) $(OPT) $(CFLAGS) -o $@ $(BENCH_OBJS) $(TOOLS_LIB) $(PROG_LDFLAGS) $(PROG_LDLIBS) -lm -ldl

.PHONY: bench bench-build
bench-build: lib $(BENCH_BIN)

bench: deps check-env bpffs
	@EVS_WANT_HUGEPAGES=$(BENCH_HUGEPAGES) bash scripts/hugepages.sh
	@$(MAKE) --no-print-directory bench-build
	@# the eBPF drop-cost probe is built by ebpf/ebpf.mk when its tools are there
	@$(MAKE) --no-print-directory $(BUILD)/evs-bench-drops >/dev/null 2>&1 || \
		echo "bench: evs-bench-drops cannot be built here (see make ebpf)" >&2
	@mkdir -p $(BENCH_OUT)
	@rm -f $(BENCH_OUT)/drops.json
	@if [ -x $(BUILD)/evs-bench-drops ]; then \
		$(BUILD)/evs-bench-drops --json > $(BENCH_OUT)/drops.json; rc=$$?; \
		if [ $$rc -eq 77 ]; then echo "bench: eBPF unusable here (evs-bench-drops exit 77): no eBPF drop figure" >&2; \
		elif [ $$rc -ne 0 ]; then rm -f $(BENCH_OUT)/drops.json; \
			echo "bench: evs-bench-drops failed (exit $$rc): no eBPF drop figure" >&2; fi; \
	else echo "bench: $(BUILD)/evs-bench-drops not built: no eBPF drop figure" >&2; fi
	$(BENCH_BIN) $(BENCH_ARGS) --json --plot-dir $(BENCH_OUT) \
		$$([ -s $(BENCH_OUT)/drops.json ] && echo --drops-json $(BENCH_OUT)/drops.json) \
		> $(BENCH_OUT)/results.json
	gnuplot -e "dir='$(BENCH_OUT)'" bench/plot.gp
	@echo "bench: $(BENCH_OUT)/results.json, $(BENCH_OUT)/throughput.svg, $(BENCH_OUT)/latency.svg"

# The results in docs/benchmarks.md and README.md, with their plots in
# docs/img, regenerated from the reports in docs/: one per host kind,
# docs/bench-results-<cpu vendor>-<clocksource>.json. With
# BENCH_RESULTS=FILE (a full make bench run's results.json), FILE first
# becomes its host kind's report; bench/table.py refuses a --quick or
# partial run.
.PHONY: bench-page
bench-page:
	/usr/bin/python3 bench/table.py $(if $(BENCH_RESULTS),--store $(BENCH_RESULTS)) --plots docs/img \
		--update docs/benchmarks.md --update README.md $(wildcard docs/bench-results-*.json)

# A short end-to-end run of evs-bench in `make test` (structure, not speed).
TESTS += bench/smoke.sh
bench/smoke.sh: $(BENCH_BIN)
