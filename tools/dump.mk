# evs-dump (tensor dumper), evs-demo (simulated runtime) and `make demo`.
DUMP_COMMON := tools/npy.c tools/jsonl.c
DUMP_SRCS   := tools/evs-dump.c tools/dump_writer.c tools/dump_convert.c tools/preview.c $(DUMP_COMMON)
DEMO_SRCS   := tools/evs-demo.c tools/demo_gen.c tools/demo_verify.c $(DUMP_COMMON)
DUMP_HDRS   := $(wildcard tools/*.h)
# several sources in one command: no per-object dependency files
DUMP_CFLAGS := $(filter-out -MMD -MP,$(ALL_CFLAGS)) -Itools

PROGRAMS     += $(BUILD)/evs-dump $(BUILD)/evs-demo
INSTALL_BINS += $(BUILD)/evs-dump $(BUILD)/evs-demo

DUMP_DIR ?= dump
DEMO_SECONDS ?= 3

$(BUILD)/evs-dump: $(DUMP_SRCS) $(DUMP_HDRS) $(BUILD)/libevstream.so
	@mkdir -p $(dir $@)
	$(CC) $(DUMP_CFLAGS) $(DUMP_SRCS) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS) -lm

$(BUILD)/evs-demo: $(DEMO_SRCS) $(DUMP_HDRS) $(BUILD)/libevstream.so
	@mkdir -p $(dir $@)
	$(CC) $(DUMP_CFLAGS) $(DEMO_SRCS) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS) -lm

.PHONY: dump-tools
dump-tools: $(BUILD)/evs-dump $(BUILD)/evs-demo

# The first command to run: build, run the simulated runtime and the dumper
# for a few seconds, print the summary, verify every file of the dump.
# With the eBPF fragment present and buildable, evs-drops too, for its table.
demo: deps check-env
	@$(MAKE) --no-print-directory lib dump-tools $(if $(EBPF_PROGS),$(if $(EBPF_MISSING),,$(BUILD)/evs-drops bpffs))
	@BUILD=$(BUILD) DUMP_DIR=$(DUMP_DIR) DEMO_SECONDS=$(DEMO_SECONDS) bash scripts/demo.sh

# Unit suite for the .npy writer and the payload reader.
NPY_TEST_SRCS := tools/npy.c tools/preview.c tools/jsonl.c
TEST_CFLAGS_test_dump_npy := -Itools $(NPY_TEST_SRCS)
TEST_LDLIBS_test_dump_npy := -lm
$(BUILD)/tests/test_dump_npy: $(NPY_TEST_SRCS) $(DUMP_HDRS)

# End to end through the real processes (tests/dump/lib.sh is their helper).
DUMP_E2E := $(filter-out tests/dump/lib.sh,$(sort $(wildcard tests/dump/*.sh)))
TESTS    += $(DUMP_E2E)
$(DUMP_E2E): $(BUILD)/evs-dump $(BUILD)/evs-demo
