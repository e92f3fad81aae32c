# The installed command-line tools: evs-dump (the tensor dumper) here;
# evs-drops comes with the eBPF fragment (ebpf/ebpf.mk).
DUMP_OBJS := $(patsubst %.c,$(BUILD)/%.o,tools/evs-dump.c tools/dump_writer.c \
	tools/dump_convert.c tools/preview.c)

PROGRAMS     += $(BUILD)/evs-dump
INSTALL_BINS += $(BUILD)/evs-dump

$(BUILD)/evs-dump: $(DUMP_OBJS) $(TOOLS_LIB) $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) $(DUMP_OBJS) $(TOOLS_LIB) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS) -lm

# Unit suite for the .npy writer, the payload preview, JSON lines and the
# dump writer fed by hand.
TEST_CFLAGS_test_dump_npy := -Itools -Itools/common
TEST_LDLIBS_test_dump_npy := $(BUILD)/tools/dump_writer.o $(BUILD)/tools/preview.o $(TOOLS_LIB) -lm
$(BUILD)/tests/test_dump_npy: $(BUILD)/tools/dump_writer.o $(BUILD)/tools/preview.o $(TOOLS_LIB)

# Every number option of the tools refuses a bad value with exit 2 and a
# message naming it (tools/common/cli.h).
CLI_TEST := tests/cli_options.sh
TESTS    += $(CLI_TEST)
$(CLI_TEST): $(BUILD)/evs-dump $(BUILD)/evs-demo $(BUILD)/evs-soak $(BUILD)/evs-example $(BUILD)/evs-bench

# End to end through the real processes (tests/dump/lib.sh is their helper;
# tests/dump/peer.c, producers evs-demo is not: self-contradicting payloads,
# one that exits as soon as it is connected, repeated sequence numbers).
DUMP_E2E  := $(filter-out tests/dump/lib.sh,$(sort $(wildcard tests/dump/*.sh)))
DUMP_PEER := $(BUILD)/tests/dump-peer
TESTS     += $(DUMP_E2E)
$(DUMP_E2E): $(BUILD)/evs-dump $(BUILD)/evs-demo $(DUMP_PEER)
# a raw file cut while --convert reads it (tests/dump/convert_cut.sh)
DUMP_CUT := $(BUILD)/tests/cut-on-fstat.so
tests/dump/convert_cut.sh: $(DUMP_CUT)
$(DUMP_CUT): tests/dump/cut_on_fstat.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -shared $< -o $@ -ldl

$(DUMP_PEER): $(BUILD)/tests/dump/peer.o $(TOOLS_LIB) $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) $< $(TOOLS_LIB) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS)
