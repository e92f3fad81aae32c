# evstream — plain Makefile. `make` builds the library; `make test` runs the
# suites; `make demo` runs the example. Fragments in subdirectories add their
# own programs and tests (tools/tools.mk, tests/tests.mk, ...).

VERSION_MAJOR := 1
VERSION_MINOR := 0
VERSION_PATCH := 0
VERSION       := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

CC      ?= cc
BUILD   ?= build
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
DESTDIR ?=

OPT      ?= -O2
WARN     := -Wall -Wextra -Werror
CFLAGS   ?= $(OPT) -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -Iinclude -MMD -MP
LIB_CFLAGS := $(ALL_CFLAGS) -fPIC -fvisibility=hidden -fno-tree-slp-vectorize
LDLIBS_LIB := -lpthread

SONAME   := libevstream.so.$(VERSION_MAJOR)
LIB_SO   := $(BUILD)/libevstream.so.$(VERSION)
LIB_A    := $(BUILD)/libevstream.a
PC       := $(BUILD)/evstream.pc

LIB_SRCS := $(wildcard transport/*.c runtime/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)

# Programs link against the shared library in $(BUILD) (found via rpath), so
# that probes and tools see the same libevstream.so a user would install.
PROG_LDFLAGS := $(LDFLAGS) -L$(BUILD) -Wl,-rpath,$(abspath $(BUILD))
PROG_LDLIBS  := -levstream -lpthread

# Filled in by fragments.
TESTS    :=
PROGRAMS :=
INSTALL_BINS :=

# A prerequisite written $$(VAR) is expanded after every fragment has added
# to VAR (install: $$(INSTALL_BINS), tests: $$(TESTS)).
.SECONDEXPANSION:

.PHONY: all lib install uninstall clean deps test demo check-env
all: lib

lib: $(LIB_SO) $(BUILD)/$(SONAME) $(BUILD)/libevstream.so $(LIB_A) $(PC)

$(BUILD)/transport/%.o: transport/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

# The runtime layer (tensor events, the reference API) sits on the
# transport and may use its internal helpers (ringcopy.h).
$(BUILD)/runtime/%.o: runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -Itransport -c $< -o $@

$(LIB_SO): $(LIB_OBJS) transport/libevstream.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=transport/libevstream.map \
		-Wl,-z,defs -o $@ $(LIB_OBJS) $(LDFLAGS) $(LDLIBS_LIB)

$(BUILD)/$(SONAME): $(LIB_SO)
	ln -sf $(notdir $(LIB_SO)) $@

$(BUILD)/libevstream.so: $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

$(LIB_A): $(LIB_OBJS)
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

# One idempotent step that installs missing Debian packages.
deps:
	@bash scripts/deps.sh

# Huge pages for the tests and the demo, when root and none are free.
check-env:
	@bash scripts/hugepages.sh

clean:
	rm -rf $(BUILD)

# Each directory brings its own rules; a new fragment needs no edit here.
include tests/tests.mk
-include $(sort $(wildcard tools/*.mk bench/*.mk ebpf/*.mk fuzz/*.mk python/*.mk))

-include $(LIB_OBJS:.o=.d)
