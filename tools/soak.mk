# The soak run (tools/evs-soak.c, scripts/soak.sh): `make soak`
# (SOAK_SECONDS=60 by default).
PROGRAMS += $(BUILD)/evs-soak

$(BUILD)/evs-soak: tools/evs-soak.c tools/cli.h $(BUILD)/libevstream.so
	$(CC) $(ALL_CFLAGS) $< -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS)

# scripts/soak.sh builds lib and evs-soak itself (CI runs it directly)
.PHONY: soak
soak: deps
	@BUILD=$(BUILD) bash scripts/soak.sh $(SOAK_SECONDS)
