# evs-demo (a simulated runtime, demo/evs-demo.c, with its generator and
# verifier) and `make demo`: the first command to run.
DEMO_OBJS := $(patsubst %.c,$(BUILD)/%.o,demo/evs-demo.c demo/demo_gen.c demo/demo_verify.c)

PROGRAMS += $(BUILD)/evs-demo

$(BUILD)/evs-demo: $(DEMO_OBJS) $(TOOLS_LIB) $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) $(DEMO_OBJS) $(TOOLS_LIB) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS) -lm

DUMP_DIR ?= dump
DEMO_SECONDS ?= 3

# deps first (it installs what is missing), huge pages when root; then the
# simulated runtime and the dumper for a few seconds, the summary, and a
# verification of every file of the dump. With the eBPF tools buildable,
# evs-drops too, for its table (ebpf/ebpf.mk adds it to DEMO_PROGS).
# demo-programs is made by a make started after deps: this one read the
# fragments before deps ran, so on a fresh machine it saw no clang.
DEMO_PROGS += lib $(BUILD)/evs-dump $(BUILD)/evs-demo
.PHONY: demo-programs
demo-programs: $$(DEMO_PROGS)

demo: deps check-env
	@$(MAKE) --no-print-directory demo-programs
	@BUILD=$(BUILD) DUMP_DIR=$(DUMP_DIR) DEMO_SECONDS=$(DEMO_SECONDS) bash demo/demo.sh
