# The two-process example (tools/evs-example.c): `make example`.
PROGRAMS += $(BUILD)/evs-example

$(BUILD)/evs-example: tools/evs-example.c $(BUILD)/libevstream.so
	$(CC) $(ALL_CFLAGS) $< -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS)

.PHONY: example
example: deps check-env
	@$(MAKE) --no-print-directory lib $(BUILD)/evs-example
	@echo "== a producer process and a consumer process, 20 tensor events on 2 cores"
	@$(BUILD)/evs-example produce example 20 & \
	 sleep 0.3; $(BUILD)/evs-example consume example; wait
