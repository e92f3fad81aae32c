# evstream — plain Makefile.
#
#   make          builds the library, the tools and the bench (the test
#                 suites: make tests); touches nothing outside build/ and
#                 says in one line what it left out (and why)
#   make deps     the only target that installs (missing Debian packages)
#   make test     deps + huge pages/bpffs when root, then every suite
#   make demo     deps + huge pages, then the simulated runtime and the dumper
#   make bench    deps + huge pages/bpffs, then evs-bench
#
# Directories bring their own fragments (tools/tools.mk, demo/demo.mk,
# tests/tests.mk, ...), included below; a new fragment needs no edit here.

# One version, from the public header (the symbol map and the shared
# memory ABI say 1.0 too: tests/build_contract.sh checks they agree).
VERSION_MAJOR := $(shell sed -n 's/^\#define EVSTREAM_VERSION_MAJOR \([0-9]*\)/\1/p' include/evstream/evstream.h)
VERSION_MINOR := $(shell sed -n 's/^\#define EVSTREAM_VERSION_MINOR \([0-9]*\)/\1/p' include/evstream/evstream.h)
VERSION_PATCH := $(shell sed -n 's/^\#define EVSTREAM_VERSION_PATCH \([0-9]*\)/\1/p' include/evstream/evstream.h)
VERSION       := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

CC      ?= cc
BUILD   ?= build
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
DESTDIR ?=

# OPT stays when CFLAGS is given (make CFLAGS+=-DX or CFLAGS=-g): the
# optimisation is not something a user turns off by adding a define.
OPT      ?= -O2
WARN     := -Wall -Wextra -Werror
CFLAGS   ?= -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(OPT) $(CFLAGS) -D_GNU_SOURCE -Iinclude -MMD -MP
# -fno-tree-slp-vectorize: gcc 12 pairs the per-event path's 64-bit updates
# (record counters, header fields, read cursors) into vector operations
# whose results are read back as scalars, a longer chain on every event
# (docs/design-notes.md, "Emit").
LIB_CFLAGS := $(ALL_CFLAGS) -fPIC -fvisibility=hidden -fno-tree-slp-vectorize
LDLIBS_LIB := -lpthread

SONAME   := libevstream.so.$(VERSION_MAJOR)
LIB_SO   := $(BUILD)/libevstream.so.$(VERSION)
LIB_A    := $(BUILD)/libevstream.a
PC       := $(BUILD)/evstream.pc

LIB_SRCS := $(wildcard transport/*.c runtime/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)

# The helpers tools, demo, bench and tests share (JSON lines, .npy, option
# parsing), built once as an internal static library.
TOOLS_LIB      := $(BUILD)/libevstools.a
TOOLS_LIB_SRCS := $(wildcard tools/common/*.c)
TOOLS_LIB_OBJS := $(TOOLS_LIB_SRCS:%.c=$(BUILD)/%.o)

# Programs link against the shared library in $(BUILD), so that probes and
# tools see the same libevstream.so a user would install. They find it
# through a RUNPATH of two entries: first LIBDIR as seen from BINDIR
# ($ORIGIN/../lib), so that an installed program uses the installed library
# (with or without DESTDIR, and after the build tree is gone); then $(BUILD),
# for the programs run from the tree. A change of that relative path (make
# install LIBDIR=...) links the installed programs again ($(BUILD)/bin-to-lib).
BIN_TO_LIB   := $(shell realpath -m --relative-to=$(BINDIR) $(LIBDIR))
PROG_CFLAGS  := $(ALL_CFLAGS) -Itools/common
PROG_LDFLAGS := $(LDFLAGS) -L$(BUILD) -Wl,-rpath,'$$ORIGIN/$(BIN_TO_LIB)' \
		-Wl,-rpath,$(abspath $(BUILD))
PROG_LDLIBS  := -levstream -lpthread

# Filled in by fragments.
TESTS    :=
PROGRAMS :=
INSTALL_BINS :=
# What a plain `make` could not build here, each "what (why)".
LEFT_OUT :=

# A prerequisite written $$(VAR) is expanded after every fragment has added
# to VAR (install: $$(INSTALL_BINS), tests: $$(TESTS)).
.SECONDEXPANSION:

.PHONY: all lib programs install uninstall clean deps test demo check-env
all: lib programs
	@$(if $(strip $(LEFT_OUT)),echo "evstream: left out: $(strip $(LEFT_OUT)); make deps installs what they need",true)

programs: $$(PROGRAMS)

lib: $(LIB_SO) $(BUILD)/$(SONAME) $(BUILD)/libevstream.so $(LIB_A) $(PC)

$(BUILD)/transport/%.o: transport/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -Iruntime -c $< -o $@

# The runtime layer (tensor events, the reference API) sits on the
# transport and may use its internal helpers (ringcopy.h, atomics.h).
$(BUILD)/runtime/%.o: runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -Itransport -c $< -o $@

$(LIB_SO): $(LIB_OBJS) transport/libevstream.map
	$(CC) $(OPT) $(CFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=transport/libevstream.map \
		-Wl,-z,defs -o $@ $(LIB_OBJS) $(LDFLAGS) $(LDLIBS_LIB)

$(BUILD)/$(SONAME): $(LIB_SO)
	ln -sf $(notdir $(LIB_SO)) $@

$(BUILD)/libevstream.so: $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

$(LIB_A): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

# Objects of programs (tools, demo, examples, bench, soak): one per source,
# each with its dependency file; a fragment adds flags for its own objects
# with a target-specific PROG_CFLAGS += ...
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(PROG_CFLAGS) -c $< -o $@

$(TOOLS_LIB): $(TOOLS_LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

# The .pc names the install locations: made again by `install` for its PREFIX.
make_pc = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	      -e 's|@INCLUDEDIR@|$(INCDIR)|' -e 's|@VERSION@|$(VERSION)|' evstream.pc.in

$(PC): evstream.pc.in Makefile
	@mkdir -p $(dir $@)
	$(make_pc) > $@

install: lib $$(INSTALL_BINS)
	install -d $(DESTDIR)$(INCDIR)/evstream $(DESTDIR)$(INCDIR)/nrt $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 include/evstream/*.h $(DESTDIR)$(INCDIR)/evstream/
	install -m 644 include/nrt/*.h $(DESTDIR)$(INCDIR)/nrt/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libevstream.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	$(make_pc) > $(DESTDIR)$(LIBDIR)/pkgconfig/evstream.pc
	$(if $(INSTALL_BINS),install -d $(DESTDIR)$(BINDIR) && install -m 755 $(INSTALL_BINS) $(DESTDIR)$(BINDIR)/)

uninstall:
	rm -rf $(DESTDIR)$(INCDIR)/evstream $(DESTDIR)$(INCDIR)/nrt/ndebug_stream.h $(DESTDIR)$(INCDIR)/nrt/nrt_status.h
	rm -f $(DESTDIR)$(LIBDIR)/libevstream.* $(DESTDIR)$(LIBDIR)/pkgconfig/evstream.pc
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(INSTALL_BINS)))

# Rewritten only when the path changes, so that only then the installed
# programs are linked again (see PROG_LDFLAGS).
$(BUILD)/bin-to-lib: FORCE
	@mkdir -p $(BUILD)
	@echo '$(BIN_TO_LIB)' | cmp -s - $@ || echo '$(BIN_TO_LIB)' > $@
.PHONY: FORCE
FORCE:

# One idempotent step that installs missing Debian packages.
deps:
	@bash scripts/deps.sh

# Huge pages for the tests, the demo and the bench, when root and none are free.
check-env:
	@bash scripts/hugepages.sh

clean:
	rm -rf $(BUILD)

# Each directory brings its own rules.
include tests/tests.mk
-include $(sort $(wildcard tools/*.mk demo/*.mk examples/*.mk bench/*.mk ebpf/*.mk fuzz/*.mk \
	tests/*/*.mk python/*.mk))

$(INSTALL_BINS): $(BUILD)/bin-to-lib

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d)
