# The tools' shared option parsing (tools/cli.h): every number option of
# evs-dump, evs-demo, evs-soak, evs-example (and evs-drops, where it is
# built) refuses a
# bad value with exit 2 and a message naming it.
CLI_TEST := tests/cli_options.sh
TESTS    += $(CLI_TEST)
$(CLI_TEST): $(BUILD)/evs-dump $(BUILD)/evs-demo $(BUILD)/evs-soak $(BUILD)/evs-example
