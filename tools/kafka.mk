# Kafka (docs/kafka.md): evs-forward publishes a producer's cores to a topic,
# evs-dump --kafka reads them back; tests with librdkafka's mock cluster;
# `make bench-kafka`. Built only where librdkafka is (pkg-config rdkafka);
# elsewhere the tools are left out, evs-dump --kafka says so, and the tests
# skip.
KAFKA_OK := $(shell pkg-config --exists rdkafka 2>/dev/null && echo yes)
KAFKA_TESTS := $(sort $(wildcard tests/kafka/*.sh))
KAFKA_TESTS := $(filter-out tests/kafka/lib.sh,$(KAFKA_TESTS))
TESTS += $(KAFKA_TESTS)

ifeq ($(KAFKA_OK),yes)
KAFKA_CFLAGS := $(shell pkg-config --cflags rdkafka)
KAFKA_LIBS   := $(shell pkg-config --libs rdkafka)
KAFKA_HDRS   := tools/kafka_msg.h tools/kafka_dump.h tools/tensor_event.h tools/cli.h \
                tools/dump_writer.h
# several sources in one command: no per-object dependency files
KAFKA_TOOL_CFLAGS := $(filter-out -MMD -MP,$(ALL_CFLAGS)) -Itools $(KAFKA_CFLAGS)

FORWARD_SRCS := tools/evs-forward.c tools/kafka_msg.c tools/tensor_event.c
PROGRAMS     += $(BUILD)/evs-forward $(BUILD)/tests/kafka/mock_cluster $(BUILD)/kafka-gen
INSTALL_BINS += $(BUILD)/evs-forward

$(BUILD)/evs-forward: $(FORWARD_SRCS) $(KAFKA_HDRS) $(BUILD)/libevstream.so
	@mkdir -p $(dir $@)
	$(CC) $(KAFKA_TOOL_CFLAGS) $(FORWARD_SRCS) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS) $(KAFKA_LIBS)

# evs-dump reads Kafka too: its rule (tools/dump.mk) takes the reader's
# sources and librdkafka from here.
KAFKA_DUMP_SRCS := tools/kafka_dump.c tools/kafka_msg.c
$(BUILD)/evs-dump: $(KAFKA_DUMP_SRCS) $(KAFKA_HDRS)
$(BUILD)/evs-dump: DUMP_SRCS += $(KAFKA_DUMP_SRCS)
$(BUILD)/evs-dump: DUMP_CFLAGS += -DEVS_KAFKA $(KAFKA_CFLAGS)
$(BUILD)/evs-dump: PROG_LDLIBS += $(KAFKA_LIBS)

# The tests' cluster: librdkafka's mock brokers in a process of their own.
$(BUILD)/tests/kafka/mock_cluster: tests/kafka/mock_cluster.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(KAFKA_CFLAGS) $< -o $@ $(LDFLAGS) $(KAFKA_LIBS)

# The benchmark's producer of fixed-size events (and kcat's input file).
$(BUILD)/kafka-gen: bench/kafka_gen.c tools/cli.h $(BUILD)/libevstream.so
	$(CC) $(ALL_CFLAGS) -Itools $< -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS)

.PHONY: kafka-tools
kafka-tools: $(BUILD)/evs-forward $(BUILD)/evs-dump $(BUILD)/evs-demo $(BUILD)/tests/kafka/mock_cluster \
	$(BUILD)/kafka-gen
$(KAFKA_TESTS): kafka-tools

# evs-forward and kcat -P into the mock cluster, 64-byte and 1 MiB events.
.PHONY: bench-kafka
bench-kafka: deps
	@$(MAKE) --no-print-directory lib kafka-tools
	@BUILD=$(BUILD) bash bench/kafka_bench.sh

# The README's example, run: against the mock cluster, or KAFKA_BROKERS.
.PHONY: kafka-demo
kafka-demo: deps check-env
	@$(MAKE) --no-print-directory lib kafka-tools
	@BUILD=$(BUILD) KAFKA_BROKERS=$(KAFKA_BROKERS) bash scripts/kafka-demo.sh
else
# said once, not again by each recursive make
ifeq ($(MAKELEVEL),0)
$(info evstream: librdkafka not found (pkg-config rdkafka): evs-forward and evs-dump --kafka left out (make deps installs it))
endif
.PHONY: bench-kafka kafka-demo
bench-kafka kafka-demo:
	@echo "$@: librdkafka not found (pkg-config rdkafka); make deps installs it" >&2; exit 1
endif
