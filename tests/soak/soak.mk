# The soak run (tests/soak/evs-soak.c, tests/soak/soak.sh): `make soak`
# (SOAK_SECONDS=60 by default; .ci/run runs it for 30 s).
PROGRAMS += $(BUILD)/evs-soak

$(BUILD)/evs-soak: $(BUILD)/tests/soak/evs-soak.o $(TOOLS_LIB) $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) $< $(TOOLS_LIB) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS) -lm

# tests/soak/soak.sh builds lib and evs-soak itself (CI runs it directly)
.PHONY: soak
soak: deps
	@BUILD=$(BUILD) bash tests/soak/soak.sh $(SOAK_SECONDS)

# In make test: the soak's accounting with no_memory drops (a few seconds).
SOAK_NOMEM_TEST := tests/soak/no_memory.sh
TESTS += $(SOAK_NOMEM_TEST)
$(SOAK_NOMEM_TEST): $(BUILD)/evs-soak
