/* SPDX-License-Identifier: MIT */
/*
 * The Kafka cluster of the tests and the benchmark: librdkafka's mock
 * cluster (rdkafka_mock.h), which speaks the real protocol on loopback
 * ports, in a process of its own.
 *
 *   mock_cluster [--brokers N] [--topic NAME:PARTITIONS]... [--leader ID]
 *
 * Prints its bootstrap servers as the first line of stdout, then takes one
 * command per line on stdin and answers each with a line "ok ..." or
 * "error ...":
 *
 *   down ID | up ID                 broker ID stops / starts taking
 *                                   connections (-1: all); leaders stay
 *   topic NAME PARTITIONS           create a topic
 *   leader NAME PARTITION ID        move a partition's leader
 *   rtt ID MS                       delay broker ID's responses
 *
 * Ends on EOF, "quit", SIGINT or SIGTERM. The mock keeps at most 5 MiB per
 * partition (older message sets are dropped): tests read back what they
 * wrote before that much piles up.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define MAX_TOPICS 16

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mock_cluster [--brokers N] [--topic NAME:PARTITIONS]... [--leader ID]\n"
		   "commands on stdin: down ID | up ID | topic NAME PARTITIONS |\n"
		   "                   leader NAME PARTITION ID | rtt ID MS | quit\n");
}

/* A whole number from min to max, or -1 after saying why. */
static long number(const char *what, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max) {
		fprintf(stderr, "mock_cluster: %s '%s' is not a number from %ld to %ld\n", what, s, min, max);
		return min - 1;
	}
	return v;
}

static int make_topic(rd_kafka_mock_cluster_t *mc, const char *name, int parts, int leader)
{
	rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, name, parts, 3);

	if (err)
		return err;
	/* every partition on one broker when asked, so that taking that
	 * broker down stops the whole topic */
	for (int p = 0; leader > 0 && p < parts; p++)
		if ((err = rd_kafka_mock_partition_set_leader(mc, name, p, leader)))
			return err;
	return 0;
}

/* One command line; the answer goes to stdout. */
static void command(rd_kafka_mock_cluster_t *mc, char *line)
{
	char *argv[4] = { 0 }, *save = NULL;
	rd_kafka_resp_err_t err = 0;
	int argc = 0;

	for (char *t = strtok_r(line, " \t\r\n", &save); t && argc < 4; t = strtok_r(NULL, " \t\r\n", &save))
		argv[argc++] = t;
	if (!argc)
		return;
	if (!strcmp(argv[0], "quit")) {
		stop = 1;
		printf("ok quit\n");
	} else if ((!strcmp(argv[0], "down") || !strcmp(argv[0], "up")) && argc == 2) {
		long id = number("broker", argv[1], -1, 1000);

		if (id < -1)
			goto bad;
		err = argv[0][0] == 'd' ? rd_kafka_mock_broker_set_down(mc, (int32_t)id)
					: rd_kafka_mock_broker_set_up(mc, (int32_t)id);
		printf(err ? "error %s %ld: %s\n" : "ok %s %ld\n", argv[0], id, rd_kafka_err2str(err));
	} else if (!strcmp(argv[0], "topic") && argc == 3) {
		long n = number("partitions", argv[2], 1, 10000);

		if (n < 1)
			goto bad;
		err = make_topic(mc, argv[1], (int)n, 0);
		printf(err ? "error topic %s: %s\n" : "ok topic %s\n", argv[1], rd_kafka_err2str(err));
	} else if (!strcmp(argv[0], "leader") && argc == 4) {
		long p = number("partition", argv[2], 0, 10000), id = number("broker", argv[3], -1, 1000);

		if (p < 0 || id < -1)
			goto bad;
		err = rd_kafka_mock_partition_set_leader(mc, argv[1], (int32_t)p, (int32_t)id);
		printf(err ? "error leader: %s\n" : "ok leader\n", rd_kafka_err2str(err));
	} else if (!strcmp(argv[0], "rtt") && argc == 3) {
		long id = number("broker", argv[1], -1, 1000), ms = number("rtt", argv[2], 0, 600000);

		if (id < -1 || ms < 0)
			goto bad;
		err = rd_kafka_mock_broker_set_rtt(mc, (int32_t)id, (int)ms);
		printf(err ? "error rtt: %s\n" : "ok rtt\n", rd_kafka_err2str(err));
	} else {
		goto bad;
	}
	fflush(stdout);
	return;
bad:
	printf("error: unknown command or bad arguments: %s\n", argv[0]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *topics[MAX_TOPICS];
	int ntopics = 0, nbrokers = 3, leader = 0;
	char errstr[512], line[1024];
	size_t used = 0;
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;
	rd_kafka_mock_cluster_t *mc;
	struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: poll returns */

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--brokers") && i + 1 < argc) {
			if ((nbrokers = (int)number("--brokers", argv[++i], 1, 100)) < 1)
				return 2;
		} else if (!strcmp(argv[i], "--leader") && i + 1 < argc) {
			if ((leader = (int)number("--leader", argv[++i], 1, 100)) < 1)
				return 2;
		} else if (!strcmp(argv[i], "--topic") && i + 1 < argc && ntopics < MAX_TOPICS) {
			topics[ntopics++] = argv[++i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* the mock needs an rd_kafka_t for its bookkeeping; it sends nothing */
	conf = rd_kafka_conf_new();
	/* it connects nowhere: no notice that bootstrap.servers is unset */
	rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr));
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!rk) {
		fprintf(stderr, "mock_cluster: rd_kafka_new: %s\n", errstr);
		return 1;
	}
	mc = rd_kafka_mock_cluster_new(rk, nbrokers);
	if (!mc) {
		fprintf(stderr, "mock_cluster: cannot create a mock cluster of %d brokers\n", nbrokers);
		rd_kafka_destroy(rk);
		return 1;
	}
	for (int i = 0; i < ntopics; i++) {
		char name[256], *colon;
		long parts = 1;
		rd_kafka_resp_err_t err;

		snprintf(name, sizeof(name), "%s", topics[i]);
		colon = strchr(name, ':');
		if (colon) {
			*colon = '\0';
			if ((parts = number("--topic partitions", colon + 1, 1, 10000)) < 1)
				return 2;
		}
		err = make_topic(mc, name, (int)parts, leader);
		if (err) {
			fprintf(stderr, "mock_cluster: topic '%s': %s\n", name, rd_kafka_err2str(err));
			return 1;
		}
	}
	printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
	fflush(stdout);

	while (!stop) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		ssize_t n;
		char *nl;

		if (poll(&pfd, 1, -1) < 0)
			continue; /* EINTR: stop is set */
		n = read(STDIN_FILENO, line + used, sizeof(line) - 1 - used);
		if (n <= 0)
			break; /* EOF: whoever started us is gone */
		used += (size_t)n;
		line[used] = '\0';
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			command(mc, line);
			used -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, used + 1);
		}
		if (used == sizeof(line) - 1)
			used = 0; /* a line too long for any command */
	}
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return 0;
}
