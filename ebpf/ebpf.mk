# eBPF drop accounting: the CO-RE program (ebpf/drops.bpf.c), its loader
# (ebpf/drops_loader.c), the evs-drops tool, the drop-cost benchmark and the
# BPF test suite. Built only where clang, bpftool, libbpf, libelf and kernel
# BTF are all present; elsewhere `make` says so loudly and the library, the
# other tools and the other tests build as usual (test_bpf then skips).
BPF_CLANG   ?= clang
BPFTOOL     ?= $(or $(shell command -v bpftool 2>/dev/null),$(firstword $(wildcard /usr/sbin/bpftool /sbin/bpftool)))
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
# usdt.bpf.h pulls <linux/errno.h> -> <asm/errno.h>, which Debian keeps in
# the multiarch directory; -idirafter so the BPF target's own headers win.
BPF_SYSINC  := $(firstword $(wildcard /usr/include/$(shell gcc -print-multiarch 2>/dev/null)) /usr/include)
EBPF_LIBS   := -lbpf -lelf -lz

EBPF_MISSING := $(strip \
	$(if $(shell command -v $(BPF_CLANG) 2>/dev/null),,clang) \
	$(if $(BPFTOOL),,bpftool) \
	$(if $(wildcard /usr/include/bpf/libbpf.h /usr/include/bpf/usdt.bpf.h),,libbpf-dev) \
	$(if $(wildcard /usr/include/gelf.h),,libelf-dev) \
	$(if $(wildcard $(VMLINUX_BTF)),,kernel-BTF:$(VMLINUX_BTF)))

EBPF_DIR     := $(BUILD)/ebpf
EBPF_LIB     := $(EBPF_DIR)/libevsdrops.a
EBPF_CFLAGS  := -I$(EBPF_DIR) -Iebpf
EBPF_PROGS   := $(BUILD)/evs-drops $(BUILD)/evs-bench-drops

.PHONY: ebpf bpffs

ifeq ($(EBPF_MISSING),)

ebpf: lib $(EBPF_PROGS)
tests: $(EBPF_PROGS)
PROGRAMS += $(EBPF_PROGS)
INSTALL_BINS += $(BUILD)/evs-drops

$(EBPF_DIR)/vmlinux.h: | $(VMLINUX_BTF)
	@mkdir -p $(dir $@)
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(EBPF_DIR)/drops.bpf.o: ebpf/drops.bpf.c ebpf/drops.h $(EBPF_DIR)/vmlinux.h
	$(BPF_CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(BPF_ARCH) \
		-I$(EBPF_DIR) -Iebpf -idirafter $(BPF_SYSINC) -c $< -o $@

$(EBPF_DIR)/drops.skel.h: $(EBPF_DIR)/drops.bpf.o
	$(BPFTOOL) gen skeleton $< name drops_bpf > $@.tmp && mv $@.tmp $@

$(EBPF_DIR)/%.o: ebpf/%.c ebpf/drops.h ebpf/drops_loader.h $(EBPF_DIR)/drops.skel.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(EBPF_CFLAGS) -c $< -o $@

$(EBPF_LIB): $(EBPF_DIR)/drops_loader.o $(EBPF_DIR)/stapsdt.o
	rm -f $@
	ar rcs $@ $^

$(BUILD)/tools/evs-drops.o $(BUILD)/bench/drop_cost.o: PROG_CFLAGS += $(EBPF_CFLAGS)
$(BUILD)/tools/evs-drops.o $(BUILD)/bench/drop_cost.o: $(EBPF_DIR)/drops.skel.h

$(BUILD)/evs-drops: $(BUILD)/tools/evs-drops.o $(TOOLS_LIB) $(EBPF_LIB)
	$(CC) $(OPT) $(CFLAGS) $< $(TOOLS_LIB) -o $@ $(LDFLAGS) $(EBPF_LIB) $(EBPF_LIBS)

# bench/common.c: pinned and at nice -20 like evs-bench's own loops
$(BUILD)/evs-bench-drops: $(BUILD)/bench/drop_cost.o $(BUILD)/bench/common.o $(TOOLS_LIB) \
		$(EBPF_LIB) $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) $(BUILD)/bench/drop_cost.o $(BUILD)/bench/common.o $(TOOLS_LIB) -o $@ \
		$(PROG_LDFLAGS) $(EBPF_LIB) $(PROG_LDLIBS) $(EBPF_LIBS) -lm

# make demo shows evs-drops' table
DEMO_PROGS += $(BUILD)/evs-drops bpffs

TEST_CFLAGS_test_bpf := -DEVS_HAVE_BPF=1 $(EBPF_CFLAGS)
TEST_LDLIBS_test_bpf := $(EBPF_LIB) $(EBPF_LIBS)
$(BUILD)/tests/test_bpf: $(EBPF_LIB) $(BUILD)/evs-drops

else

LEFT_OUT += eBPF drop accounting (missing $(EBPF_MISSING))
ebpf:
	@echo "ebpf: not built, missing: $(EBPF_MISSING)" >&2; exit 1

endif

# The BPF tests pin maps: bpffs must be mounted (root only; harmless otherwise).
bpffs:
	@bash scripts/bpffs.sh
test: bpffs

