/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the consumer reading an arbitrary shared region.
 *
 * A stand-in producer writes the fuzz input into a stream's control page and
 * ring (identity, positions, state, record headers and payload), and a real
 * consumer is attached. Then either it is drained, the producer moving its
 * position at an input-chosen point, or (mode bit 1) an input-chosen script
 * runs: records handed out and held (peek_next) and given back in any
 * order, the producer rewriting ring bytes and its position between the
 * calls (what a consumer checked must not be read again), prepare_wait,
 * and the CLOSED bit. Every record handed out is read whole, and parsed as
 * a tensor read with its tensor bytes read whole. The consumer must end
 * with records, -EAGAIN, -EPIPE or a sticky -EBADMSG: never a crash, an
 * out-of-bounds read or a hang.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "attach.h"
#include "evstream/tensor.h"

#define RING 4096u
#define FZ_OPS 32

struct fz_input {
	uint8_t mode;        /* bit 0: raw identity line from the input; bit 1: a
			      * script of FZ_OPS bytes follows; bit 6: close */
	uint8_t move_at;     /* peek count after which prod_pos becomes prod_pos2 */
	uint16_t max_peeks;
	uint32_t state;
	uint64_t prod_pos;
	uint64_t cons_pos;
	uint64_t prod_pos2;
};

static int ctl_fd = -1, cons_fd = -1, data_fd = -1, ro_fd = -1, efd = -1;
static uint8_t *ctl, *cons_page, *ring;

static int make_sealed(const char *name, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		abort();
	return fd;
}

static void setup(void)
{
	char path[64];

	ctl_fd = make_sealed("fz-ctl", EVS_CTL_PAGE);
	cons_fd = make_sealed("fz-cons", EVS_CTL_PAGE);
	data_fd = make_sealed("fz-data", RING);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", data_fd);
	ro_fd = open(path, O_RDONLY | O_CLOEXEC);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ctl = mmap(NULL, EVS_CTL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ctl_fd, 0);
	cons_page = mmap(NULL, EVS_CTL_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, cons_fd, 0);
	ring = mmap(NULL, RING, PROT_READ | PROT_WRITE, MAP_SHARED, data_fd, 0);
	if (ro_fd < 0 || efd < 0 || ctl == MAP_FAILED || cons_page == MAP_FAILED ||
	    ring == MAP_FAILED)
		abort();
}

static void write_identity(struct evs_shm_prod *prod)
{
	prod->magic = EVS_SHM_MAGIC;
	prod->abi_major = EVS_ABI_MAJOR;
	prod->abi_minor = EVS_ABI_MINOR;
	prod->hdr_bytes = EVS_CTL_BYTES;
	prod->ring_bytes = RING;
	prod->max_events = 64;
	prod->page_size = 4096;
	prod->core = 0;
}

static volatile uint8_t sink;

/* Touch every byte handed out: ASan/SEGV catches a range outside the ring. */
static void check_record(const struct evs_consumer *c, const struct evs_record *rec)
{
	const uint8_t *d = rec->data;
	uint8_t x = 0;

	assert(d >= c->data + EVS_RECORD_HDR && d + rec->hdr.data_size <= c->data + 2 * (size_t)RING);
	for (uint64_t i = 0; i < rec->hdr.data_size; i++)
		x ^= d[i];
	sink = x;
}

/* A record as a tensor read: what evs_tensor_parse() hands out is inside
 * the record, and is read whole. */
static void check_tensor(const struct evs_record *rec)
{
	const uint8_t *d = rec->data;
	struct evs_tensor_info ti;
	uint8_t x = 0;

	if (evs_tensor_parse(rec->data, rec->hdr.data_size, &ti))
		return;
	assert(ti.bytes == 0 ||
	       ((const uint8_t *)ti.data >= d && (const uint8_t *)ti.data + ti.bytes <= d + rec->hdr.data_size));
	for (uint64_t i = 0; i < ti.bytes; i++)
		x ^= ((const uint8_t *)ti.data)[i];
	sink = x;
}

static int count_fn(void *ctx, const struct evs_record *rec)
{
	(void)rec;
	++*(int *)ctx;
	return 0;
}

/* Peek until the ring is empty, the stream broken or the input's count
 * reached, the producer moving its position once on the way. */
static void drain(struct evs_consumer *c, const struct fz_input *in, struct evs_shm_prod *prod)
{
	struct evs_record rec;
	int err = 0, n = 0;

	for (int i = 0; i < 1 + (in->max_peeks & 511); i++) {
		if (i == in->move_at)
			prod->prod_pos = in->prod_pos2;
		err = evs_consumer__peek(c, &rec);
		if (err == 0) {
			check_record(c, &rec);
			assert(evs_consumer__release(c) == 0);
			continue;
		}
		assert(err == -EAGAIN || err == -EPIPE || err == -EBADMSG);
		if (err == -EBADMSG) {
			/* broken is sticky */
			assert(evs_consumer__peek(c, &rec) == -EBADMSG);
			assert(evs_consumer__prepare_wait(c) == -EBADMSG);
			break;
		}
		if (err == -EAGAIN && (in->mode & 0x40)) {
			prod->state |= EVS_STATE_CLOSED;
			continue;
		}
		break;
	}
	if (err != -EBADMSG) {
		err = evs_consumer__prepare_wait(c);
		assert(err == 0 || err == -EAGAIN || err == -EPIPE || err == -EBADMSG);
		err = evs_consumer__consume(c, count_fn, &n, 0);
		assert(err >= 0 || err == -EPIPE || err == -EBADMSG);
	}
}

/* One call or one move of the producer per script byte; the low three
 * bits choose, the rest is the argument. */
static void run_script(struct evs_consumer *c, const struct fz_input *in,
		       struct evs_shm_prod *prod, const uint8_t *ops)
{
	struct evs_record rec;
	int held = 0, err = 0;

	for (int i = 0; i < FZ_OPS && err != -EBADMSG; i++) {
		uint8_t op = ops[i];

		switch (op & 7) {
		case 0:
		case 1:
			err = evs_consumer__peek_next(c, &rec);
			assert(err == 0 || err == -EAGAIN || err == -EPIPE || err == -EBADMSG ||
			       err == -ENOBUFS);
			if (err == 0) {
				held++;
				check_record(c, &rec);
				check_tensor(&rec);
			}
			break;
		case 2:
			err = evs_consumer__peek(c, &rec);
			assert(err == 0 || err == -EAGAIN || err == -EPIPE || err == -EBADMSG);
			if (err == 0) {
				held += !held;
				check_record(c, &rec);
				check_tensor(&rec);
			}
			break;
		case 3:
			assert(evs_consumer__release(c) == (held ? 0 : -EINVAL));
			held -= !!held;
			break;
		case 4: /* the producer rewrites ring bytes under the consumer */
			((uint64_t *)ring)[(op >> 3) * 61 % (RING / 8)] = in->prod_pos2 ^ op;
			break;
		case 5:
			prod->prod_pos = in->prod_pos2 + (uint64_t)(op >> 3) * EVS_RECORD_ALIGN;
			break;
		case 6:
			err = evs_consumer__prepare_wait(c);
			assert(err == 0 || err == -EAGAIN || err == -EPIPE || err == -EBADMSG);
			break;
		case 7:
			prod->state ^= EVS_STATE_CLOSED;
			break;
		}
	}
	if (err == -EBADMSG) {
		/* broken is sticky */
		assert(evs_consumer__peek(c, &rec) == -EBADMSG);
		assert(evs_consumer__peek_next(c, &rec) == -EBADMSG);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	struct evs_shm_prod *prod;
	struct evs_shm_cons *cons;
	struct evs_consumer c;
	struct fz_input in;
	const uint8_t *ops = NULL;

	if (ctl_fd < 0)
		setup();
	if (len < sizeof(in))
		return 0;
	memcpy(&in, buf, sizeof(in));
	buf += sizeof(in);
	len -= sizeof(in);

	memset(ctl, 0, EVS_CTL_PAGE);
	memset(cons_page, 0, EVS_CTL_PAGE);
	memset(ring, 0, RING);
	prod = (struct evs_shm_prod *)ctl;
	cons = (struct evs_shm_cons *)cons_page;
	write_identity(prod);
	if ((in.mode & 1) && len >= 64) {
		memcpy(ctl, buf, 64);
		buf += 64;
		len -= 64;
	}
	if (in.mode & 2) {
		if (len < FZ_OPS)
			return 0;
		ops = buf;
		buf += FZ_OPS;
		len -= FZ_OPS;
	}
	memcpy(ring, buf, len < RING ? len : RING);
	prod->prod_pos = in.prod_pos;
	prod->state = in.state;
	cons->cons_pos = in.cons_pos;

	memset(&c, 0, sizeof(c));
	c.sock = -1;
	c.efd = efd;
	if (evs_consumer_map(&c, ctl_fd, cons_fd, ro_fd, RING, 4096, 0, false))
		return 0;
	if (in.mode & 2)
		run_script(&c, &in, prod, ops);
	else
		drain(&c, &in, prod);
	/* what the consumer published stays on the record grid it checked */
	assert(cons->cons_pos % EVS_RECORD_ALIGN == 0);
	evs_map_detach(&c.map);
	free(c.held_len);
	{
		uint64_t v;

		eventfd_read(efd, &v);
	}
	return 0;
}
