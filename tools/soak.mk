# The soak run (tools/evs-soak.c, scripts/soak.sh): `make soak`
# (SOAK_SECONDS=60 by default).
PROGRAMS += $(BUILD)/evs-soak

$(BUILD)/evs-soak: tools/evs-soak.c tools/cli.h $(BUILD)/libevstream.so
	$(CC) $(ALL_CFLAGS) $< -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS)

.PHONY: soak
soak: lib $(BUILD)/evs-soak
	@BUILD=$(BUILD) bash scripts/soak.sh $(SOAK_SECONDS)
