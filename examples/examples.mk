# The two-process example (examples/evs-example.c): `make example`.
PROGRAMS += $(BUILD)/evs-example

$(BUILD)/evs-example: $(BUILD)/examples/evs-example.o $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) $< -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS)

# Both processes start at once (each waits for the other, up to 10 s), in a
# private runtime directory: no clash with another run's "example".
.PHONY: example
example: deps check-env
	@$(MAKE) --no-print-directory lib $(BUILD)/evs-example
	@echo "== a producer process and a consumer process, 20 tensor events on 2 cores"
	@run=$$(mktemp -d /tmp/evs-example.XXXXXX) || exit 1; \
	 export EVSTREAM_RUNTIME_DIR=$$run; \
	 $(BUILD)/evs-example produce example 20 & p=$$!; \
	 $(BUILD)/evs-example consume example 20; c=$$?; \
	 wait $$p; pr=$$?; rm -rf "$$run"; \
	 [ $$c -eq 0 ] && [ $$pr -eq 0 ]
