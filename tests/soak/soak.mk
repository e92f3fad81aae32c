# The soak run (tests/soak/evs-soak.c, tests/soak/soak.sh): `make soak`
# (SOAK_SECONDS=60 by default; .ci/run runs it for 30 s).
PROGRAMS += $(BUILD)/evs-soak

$(BUILD)/evs-soak: $(BUILD)/tests/soak/evs-soak.o $(TOOLS_LIB) $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) $< $(TOOLS_LIB) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS) -lm

# tests/soak/soak.sh builds lib and evs-soak itself (CI runs it directly)
.PHONY: soak
soak: deps
	@BUILD=$(BUILD) bash tests/soak/soak.sh $(SOAK_SECONDS)
