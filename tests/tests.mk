# Check suites: every tests/test_*.c is one suite binary, run by `make test`.
# A suite that needs more sets TEST_CFLAGS_<name> / TEST_LDLIBS_<name> and
# extra prerequisites ($(BUILD)/tests/<name>: ...) in its own fragment.
# Scripted tests (shell) are added to TESTS by their fragment.
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)

TEST_SRCS := $(wildcard tests/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TESTS     += $(TEST_BINS)

$(BUILD)/tests/%: tests/%.c tests/helpers.h $(BUILD)/libevstream.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -Itransport $(TEST_CFLAGS_$*) $< -o $@ \
		$(PROG_LDFLAGS) $(PROG_LDLIBS) $(CHECK_LIBS) $(TEST_LDLIBS_$*)

.PHONY: tests test test-only
# $$(TESTS): expanded after every fragment has added to TESTS
tests: lib $$(TESTS)

# `make test`: packages, huge pages, build, then every suite. SUITES=... picks
# some, by path or name (test_ring, cli_options, dump/modes): EVS_TESTS lets
# run-tests.sh find a name among them and say which there are.
RUN_TESTS = BUILD='$(BUILD)' EVS_TESTS='$(strip $(TESTS))' bash scripts/run-tests.sh \
	$(if $(SUITES),$(SUITES),$(TESTS))

test: deps check-env
	@$(MAKE) --no-print-directory tests
	@$(RUN_TESTS)

test-only: tests
	@$(RUN_TESTS)

# Scripted: both compilers, soname/exports, make install, pkg-config.
TESTS += tests/build_contract.sh
# scripts/deps.sh's log: a mktemp file, not a fixed /tmp path (stand-in apt-get).
TESTS += tests/deps_log.sh
# scripts/run-tests.sh's tally: skipped parts of passing scripts counted and listed.
TESTS += tests/run_tests_tally.sh
# ... and its names for tests (make test-only SUITES=test_ring), an unknown one refused.
TESTS += tests/run_tests_names.sh
# make demo / kafka-demo on a fresh machine: what they build is decided after deps.
TESTS += tests/fresh_make.sh
# A consumer's handover with an emit in flight, the interleaving made by gdb.
TESTS += tests/handover_race.sh
$(BUILD)/tests/progs/handover_race: tests/handover_race.c $(BUILD)/libevstream.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< -o $@ $(BUILD)/libevstream.a -lpthread
tests: $(BUILD)/tests/progs/handover_race
