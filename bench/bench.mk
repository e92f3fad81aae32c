# evs-bench: throughput and latency next to the limits and alternatives.
# `make bench` (deps first, huge pages and bpffs when root) runs it, folds
# in evs-bench-drops when that exists, and draws the plots; about four
# minutes (BENCH_ARGS=--quick: about one).
BENCH_SRCS := bench/evs_bench.c bench/common.c bench/limits.c bench/alt.c \
              bench/tput.c bench/lat.c bench/drop_rate.c bench/bare.c \
              bench/cost.c bench/floor.c
BENCH_OBJS := $(BENCH_SRCS:%.c=$(BUILD)/%.o)
BENCH_BIN  := $(BUILD)/evs-bench
BENCH_OUT  ?= $(BUILD)/bench-results
BENCH_ARGS ?=
# Throughput rings are 64 MiB; huge-page variants need 32 pages of their own.
BENCH_HUGEPAGES ?= 96
PROGRAMS   += $(BENCH_BIN)

$(BENCH_BIN): $(BENCH_OBJS) $(TOOLS_LIB) $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) -o $@ $(BENCH_OBJS) $(TOOLS_LIB) $(PROG_LDFLAGS) $(PROG_LDLIBS) -lm

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

# A short end-to-end run of evs-bench in `make test` (structure, not speed).
TESTS += bench/smoke.sh
bench/smoke.sh: $(BENCH_BIN)
