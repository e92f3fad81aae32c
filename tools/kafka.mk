# Kafka (docs/kafka.md): evs-forward publishes a producer's cores to a topic,
# evs-dump --kafka reads them back; tests with librdkafka's mock cluster;
# `make bench-kafka`. Built only where librdkafka is (pkg-config rdkafka);
# elsewhere the tools are left out (plain `make` says so in its one line),
# evs-dump --kafka says so, and the tests skip.
KAFKA_OK := $(shell pkg-config --exists rdkafka 2>/dev/null && echo yes)
KAFKA_TESTS := $(sort $(wildcard tests/kafka/*.sh))
KAFKA_TESTS := $(filter-out tests/kafka/lib.sh,$(KAFKA_TESTS))
TESTS += $(KAFKA_TESTS)

ifeq ($(KAFKA_OK),yes)
KAFKA_CFLAGS := $(shell pkg-config --cflags rdkafka)
KAFKA_LIBS   := $(shell pkg-config --libs rdkafka)

FORWARD_OBJS   := $(BUILD)/tools/evs-forward.o $(BUILD)/tools/kafka_msg.o
KAFKA_DUMP_OBJS := $(BUILD)/tools/kafka_dump.o $(BUILD)/tools/kafka_records.o $(BUILD)/tools/kafka_msg.o
PROGRAMS     += $(BUILD)/evs-forward $(BUILD)/tests/kafka/mock_cluster $(BUILD)/kafka-gen
INSTALL_BINS += $(BUILD)/evs-forward

$(FORWARD_OBJS) $(KAFKA_DUMP_OBJS) $(BUILD)/tools/evs-dump.o: PROG_CFLAGS += $(KAFKA_CFLAGS)
$(BUILD)/tools/evs-dump.o: PROG_CFLAGS += -DEVS_KAFKA

$(BUILD)/evs-forward: $(FORWARD_OBJS) $(TOOLS_LIB) $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) $(FORWARD_OBJS) $(TOOLS_LIB) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS) $(KAFKA_LIBS) -lm

# evs-dump reads Kafka too: the reader's objects and librdkafka join its link.
$(BUILD)/evs-dump: $(KAFKA_DUMP_OBJS)
$(BUILD)/evs-dump: DUMP_OBJS += $(KAFKA_DUMP_OBJS)
$(BUILD)/evs-dump: PROG_LDLIBS += $(KAFKA_LIBS)

# The tests' cluster: librdkafka's mock brokers in a process of their own.
$(BUILD)/tests/kafka/mock_cluster: $(BUILD)/tests/kafka/mock_cluster.o
	$(CC) $(OPT) $(CFLAGS) $< -o $@ $(LDFLAGS) $(KAFKA_LIBS)
$(BUILD)/tests/kafka/mock_cluster.o: PROG_CFLAGS += $(KAFKA_CFLAGS)

# The benchmark's producer of fixed-size events (and kcat's input file).
$(BUILD)/kafka-gen: $(BUILD)/bench/kafka_gen.o $(TOOLS_LIB) $(BUILD)/libevstream.so
	$(CC) $(OPT) $(CFLAGS) $< $(TOOLS_LIB) -o $@ $(PROG_LDFLAGS) $(PROG_LDLIBS) -lm

.PHONY: kafka-tools
kafka-tools: $(BUILD)/evs-forward $(BUILD)/evs-dump $(BUILD)/evs-demo $(BUILD)/tests/kafka/mock_cluster \
	$(BUILD)/kafka-gen
$(KAFKA_TESTS): kafka-tools
# corrupt.sh's producer is evs-dump's test peer (tests/dump/peer.c, built
# in tools/tools.mk, read after this fragment: hence $$)
tests/kafka/corrupt.sh: $$(DUMP_PEER)

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
LEFT_OUT += Kafka tools (librdkafka-dev missing)
.PHONY: bench-kafka kafka-demo
ifeq ($(EVS_AFTER_DEPS),)
# a fresh machine: deps installs librdkafka, then a make that reads the
# fragments again (this one read them before) does the work
bench-kafka kafka-demo: deps
	@$(MAKE) --no-print-directory $@ EVS_AFTER_DEPS=1
else
bench-kafka kafka-demo:
	@echo "$@: librdkafka not found (pkg-config rdkafka) after make deps" >&2; exit 1
endif
endif
