# libFuzzer targets (clang). `make fuzz` builds them and runs each for
# FUZZ_TIME seconds from the seed corpus in fuzz/corpus/<target>; new inputs
# go to $(BUILD)/fuzz/corpus-<target>, findings to $(BUILD)/fuzz/. The
# library sources are compiled into each target with the same sanitizers.
FUZZ_CC      ?= clang
FUZZ_TIME    ?= 60
# evs-dump --kafka's records where the build has Kafka: KAFKA_OK comes
# from tools/kafka.mk, read after this file, hence = and $$(FUZZ_BINS)
FUZZ_TARGETS = consumer producer convert $(if $(KAFKA_OK),kafka)
FUZZ_CFLAGS  := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	-D_GNU_SOURCE -Iinclude -Itransport -Iruntime -Wall -Wextra -Werror
FUZZ_BINS    = $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)

# clang and its libFuzzer runtime: `make deps` installs them (`make fuzz`
# runs it first; plain `make fuzz-build` does not install anything)
$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c $(LIB_SRCS) $(wildcard transport/*.h runtime/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(LIB_SRCS) -o $@ -lpthread

# the records' unit with what it calls: the dump writer, its preview and
# the tools' common code
FUZZ_KAFKA_SRCS := tools/kafka_records.c tools/kafka_msg.c tools/dump_writer.c tools/preview.c \
	$(TOOLS_LIB_SRCS)
$(BUILD)/fuzz/fuzz_kafka: fuzz/fuzz_kafka.c fuzz/scratch.h $(FUZZ_KAFKA_SRCS) $(LIB_SRCS) $(wildcard tools/*.h tools/common/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Itools -Itools/common $(shell pkg-config --cflags rdkafka) $< \
		$(FUZZ_KAFKA_SRCS) $(LIB_SRCS) -o $@ $(shell pkg-config --libs rdkafka) -lpthread -lm

# evs-dump --convert: the converter with the dump writer it feeds
FUZZ_CONVERT_SRCS := tools/dump_convert.c tools/dump_writer.c tools/preview.c $(TOOLS_LIB_SRCS)
$(BUILD)/fuzz/fuzz_convert: fuzz/fuzz_convert.c fuzz/scratch.h $(FUZZ_CONVERT_SRCS) $(LIB_SRCS) $(wildcard tools/*.h tools/common/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Itools -Itools/common $< $(FUZZ_CONVERT_SRCS) $(LIB_SRCS) -o $@ -lpthread -lm

.PHONY: fuzz fuzz-build fuzz-run
fuzz-build: $$(FUZZ_BINS)

# run by a make that reads the fragments after deps: the targets then
# include kafka on a machine where deps has just installed librdkafka
fuzz-run: $$(FUZZ_BINS)
	@bash fuzz/run.sh $(BUILD)/fuzz $(FUZZ_TIME) $(FUZZ_TARGETS)

fuzz: deps
	@$(MAKE) --no-print-directory fuzz-run
