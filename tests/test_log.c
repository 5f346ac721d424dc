/*
 * test_log.c - the journal: format and clean mount, commit/force/recover
 * after a power cut, relogging, group commit (and a lone forcer never
 * waiting for a group), log_flushed (G6), data ordering (G7), refusal of
 * damaged, foreign and truncated logs, and the fault loop (G5).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/msg.h"
#include "base/rand.h"
#include "base/time.h"
#include "check.h"
#include "dev/crashdev.h"
#include "flush_gate.h"
#include "log/log_format.h"
#include "log/log_priv.h"
#include "logwl.h"

#define NBLOCKS 24
#define HOME	(NBLOCKS * WL_BLOCK)

static const uint8_t uuid_a[16] = {0xa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static const uint8_t uuid_b[16] = {0xb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static struct log_params params(struct dev *d, uint64_t log_size, const uint8_t *uuid)
{
	struct log_params p = {
		.ldev = d, .log_offset = HOME, .log_size = log_size, .buf_size = 16384, .nbufs = 4};
	memcpy(p.uuid, uuid, 16);
	return p;
}

static struct dev *new_image(uint64_t log_size)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(HOME + log_size, NULL, &d));
	struct log_params p = params(d, log_size, uuid_a);
	CHECK_OK(log_format(&p));
	return d;
}

/* A log of 256 KiB on a crash device over a fresh image, mounted. */
static struct log *crash_log_mount(struct dev **inner, struct dev **cd, struct log_params *p)
{
	*inner = new_image(256 * 1024);
	CHECK_OK(crashdev_create(*inner, 0, cd));
	*p = params(*cd, 256 * 1024, uuid_a);
	struct log *log;
	CHECK_OK(log_mount(p, &log));
	return log;
}

static uint64_t stat_of(struct log *log, const char *name)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	log_stats(log, &s);
	return stat_table_get(&t, name);
}

static uint64_t dev_stat_of(struct dev *d, const char *name)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	dev_stats(d, "dev", &s);
	return stat_table_get(&t, name);
}

static void test_clean(void)
{
	struct dev *d = new_image(256 * 1024);
	struct log_params p = params(d, 256 * 1024, uuid_a);
	struct log *log;
	CHECK_OK(log_mount(&p, &log));
	CHECK_EQ(stat_of(log, "log.recovered_clean"), 1);
	struct wl *w = wl_create(&(struct wl_params){.threads = 2,
						     .txns = 200,
						     .shared = 10,
						     .force_pct = 10,
						     .free_pct = 5,
						     .seed = 1},
				 log, d);
	CHECK_OK(wl_run(w));
	CHECK_OK(log_unmount(log));
	wl_build_model(w);
	/* a clean unmount wrote everything home: no replay, all present */
	CHECK_OK(log_mount(&p, &log));
	CHECK_EQ(stat_of(log, "log.recovered_clean"), 1);
	CHECK_EQ(stat_of(log, "log.recovered_checkpoints"), 0);
	uint64_t n;
	CHECK_OK(wl_verify(w, d, w->max_csn, w->data_flushed, "clean", &n));
	CHECK_EQ(n, w->max_csn);
	CHECK_OK(log_unmount(log));
	wl_free(w);
	dev_close(d);
	TEST_PASS("clean unmount");
}

static void test_powercut(void)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct dev *inner = new_image(512 * 1024), *cd;
		CHECK_OK(crashdev_create(inner, 0, &cd));
		struct log_params p = params(cd, 512 * 1024, uuid_a);
		struct log *log;
		CHECK_OK(log_mount(&p, &log));
		struct wl *w = wl_create(&(struct wl_params){.threads = 4,
							     .txns = 150,
							     .shared = 20,
							     .force_pct = 15,
							     .async_pct = 10,
							     .sync_pct = 5,
							     .free_pct = 5,
							     .seed = seed},
					 log, cd);
		CHECK_OK(wl_run(w));
		uint64_t acked = atomic_load(&w->acked);
		CHECK(acked > 0);
		CHECK_OK(crashdev_powerfail(cd, seed, NULL));
		log_shutdown(log, "test power cut");
		CHECK_EQ(log_unmount(log), -EIO);
		wl_detach(w);
		wl_build_model(w);
		p.ldev = inner;
		CHECK_OK(log_mount(&p, &log));
		uint64_t n;
		CHECK_OK(wl_verify(w, inner, acked, w->data_flushed, "powercut", &n));
		CHECK(n >= acked);
		CHECK_OK(log_unmount(log));
		wl_free(w);
		dev_close(cd);
		dev_close(inner);
	}
	TEST_PASS("power cut after acknowledged forces");
}

/* A block changed 200 times within one checkpoint is logged once. */
static void test_relog(void)
{
	struct dev *d = new_image(256 * 1024);
	struct log_params p = params(d, 256 * 1024, uuid_a);
	struct log *log;
	CHECK_OK(log_mount(&p, &log));
	uint8_t *data = calloc(1, WL_BLOCK);
	struct buf_item bi;
	buf_item_init(&bi, log, 0, data, NULL);
	uint64_t csn = 0, first = 0;
	for (int i = 0; i < 200; i++) {
		struct trans *tp;
		CHECK_OK(trans_alloc(log, log_calc_res(log, 1, WL_BLOCK), 0, &tp));
		buf_item_join(tp, &bi);
		data[i * 16] = (uint8_t)i;
		buf_item_log(tp, &bi, (uint32_t)i * 16, 1);
		CHECK_OK(trans_commit(tp, &csn));
		if (!first)
			first = csn;
		CHECK_EQ(csn, first); /* no push happened: all in one context */
	}
	bool flushed;
	CHECK_OK(log_force_seq(log, csn, true, &flushed));
	CHECK(flushed);
	CHECK_EQ(stat_of(log, "log.checkpoints"), 1);
	CHECK_EQ(stat_of(log, "log.records"), 1);
	/* one image: the header, the op and the 4 KiB of touched chunks */
	CHECK(stat_of(log, "log.buffer_bytes") <= 512 + 16 + 8 + WL_BLOCK + 512);
	/* already durable: returns at once, wrote nothing */
	CHECK_OK(log_force_seq(log, csn, true, &flushed));
	CHECK(!flushed);
	CHECK_EQ(stat_of(log, "log.forces_wrote"), 1);
	CHECK_OK(log_unmount(log));
	/* written home by the unmount */
	uint8_t out[WL_BLOCK];
	CHECK_OK(dev_read(d, out, WL_BLOCK, 0));
	CHECK(memcmp(out, data, WL_BLOCK) == 0);
	mutex_destroy(&bi.bi_lock);
	free(data);
	dev_close(d);
	TEST_PASS("relogging");
}

struct gc_arg {
	struct log *log;
	struct buf_item *bi;
	int n;
};

static void *gc_thread(void *a)
{
	struct gc_arg *g = a;
	for (int i = 0; i < g->n; i++) {
		struct trans *tp;
		CHECK_OK(trans_alloc(g->log, log_calc_res(g->log, 1, 256), 0, &tp));
		buf_item_join(tp, g->bi);
		g->bi->bi_data[0]++;
		buf_item_log(tp, g->bi, 0, 8);
		uint64_t csn;
		CHECK_OK(trans_commit(tp, &csn));
		CHECK_OK(log_force_seq(g->log, csn, true, NULL));
	}
	return NULL;
}

/* Concurrent forces share checkpoints. */
static void test_group_commit(void)
{
	struct dev *d = new_image(1024 * 1024);
	dev_set_latency(d, 1000000, 1000000);
	struct log_params p = params(d, 1024 * 1024, uuid_a);
	struct log *log;
	CHECK_OK(log_mount(&p, &log));
	enum { T = 16 };
	uint8_t *data[T];
	struct buf_item bi[T];
	pthread_t th[T];
	struct gc_arg ga[T];
	for (int t = 0; t < T; t++) {
		data[t] = calloc(1, WL_BLOCK);
		buf_item_init(&bi[t], log, (uint64_t)t * WL_BLOCK, data[t], NULL);
		ga[t] = (struct gc_arg){.log = log, .bi = &bi[t], .n = 20};
		pthread_create(&th[t], NULL, gc_thread, &ga[t]);
	}
	for (int t = 0; t < T; t++)
		pthread_join(th[t], NULL);
	uint64_t forces = stat_of(log, "log.forces"), ckpts = stat_of(log, "log.checkpoints");
	printf("group commit: %llu forces, %llu checkpoints, %llu group waits\n",
	       (unsigned long long)forces, (unsigned long long)ckpts,
	       (unsigned long long)stat_of(log, "log.group_waits"));
	CHECK_EQ(forces, T * 20);
	CHECK(ckpts < forces);
	CHECK_OK(log_unmount(log));
	for (int t = 0; t < T; t++) {
		mutex_destroy(&bi[t].bi_lock);
		free(data[t]);
	}
	dev_close(d);
	TEST_PASS("group commit");
}

/* One forcer is the whole group: its pushes never wait for more forces
 * (cil.c, "Waiting for the group"), so a lone client pays no delay. */
static void test_group_alone(void)
{
	struct dev *d = new_image(1024 * 1024);
	dev_set_latency(d, 1000000, 1000000);
	struct log_params p = params(d, 1024 * 1024, uuid_a);
	struct log *log;
	CHECK_OK(log_mount(&p, &log));
	uint8_t *data = calloc(1, WL_BLOCK);
	struct buf_item bi;
	buf_item_init(&bi, log, 0, data, NULL);
	struct gc_arg ga = {.log = log, .bi = &bi, .n = 20};
	gc_thread(&ga);
	CHECK_EQ(stat_of(log, "log.forces"), 20);
	CHECK_EQ(stat_of(log, "log.checkpoints"), 20);
	CHECK_EQ(stat_of(log, "log.group_waits"), 0);
	CHECK_OK(log_unmount(log));
	mutex_destroy(&bi.bi_lock);
	free(data);
	dev_close(d);
	TEST_PASS("a lone forcer never waits for a group");
}

/* G6: a force that starts the push reports the flush; data written before
 * it is durable after a power cut. */
static void test_log_flushed(void)
{
	struct dev *inner, *cd;
	struct log_params p;
	struct log *log = crash_log_mount(&inner, &cd, &p);
	uint8_t *data = calloc(1, WL_BLOCK);
	struct buf_item bi;
	buf_item_init(&bi, log, 0, data, NULL);
	/* "file data" written in place, not logged */
	uint8_t payload[4096];
	memset(payload, 0x77, sizeof(payload));
	CHECK_OK(dev_write(cd, payload, sizeof(payload), 8 * WL_BLOCK, 0));
	struct trans *tp;
	CHECK_OK(trans_alloc(log, log_calc_res(log, 1, 64), 0, &tp));
	buf_item_join(tp, &bi);
	data[0] = 1;
	buf_item_log(tp, &bi, 0, 1);
	uint64_t csn;
	CHECK_OK(trans_commit(tp, &csn));
	bool flushed;
	CHECK_OK(log_force_seq(log, csn, true, &flushed));
	CHECK(flushed);
	CHECK_OK(crashdev_powerfail(cd, 1, NULL));
	log_shutdown(log, "test");
	log_unmount(log);
	mutex_destroy(&bi.bi_lock);
	uint8_t out[4096];
	CHECK_OK(dev_read(inner, out, sizeof(out), 8 * WL_BLOCK));
	CHECK(memcmp(out, payload, sizeof(out)) == 0);
	free(data);
	dev_close(cd);
	dev_close(inner);
	TEST_PASS("log_flushed");
}

/* One transaction changing byte i of bi's block, with the given flags. */
static uint64_t commit_one(struct log *log, struct buf_item *bi, unsigned i, unsigned flags)
{
	struct trans *tp;
	CHECK_OK(trans_alloc(log, log_calc_res(log, 1, 64), flags, &tp));
	buf_item_join(tp, bi);
	bi->bi_data[i]++;
	buf_item_log(tp, bi, i, 1);
	uint64_t csn;
	CHECK_OK(trans_commit(tp, &csn));
	return csn;
}

/*
 * G7: with "file data" written in place since the last flush, a checkpoint
 * of TRANS_UNORDERED transactions is written with its one FUA commit record
 * and no data-device flush, and its force reports no flush (G6), so a
 * caller that needs the data flushes; an ordered one (the default) flushes
 * first. After a power cut at the ordered checkpoint's return, the data is
 * there. (Fails with the flush before every checkpoint: the unordered
 * checkpoint then costs a flush too.)
 */
static void test_data_order(void)
{
	struct dev *inner, *cd;
	struct log_params p;
	struct log *log = crash_log_mount(&inner, &cd, &p);
	uint8_t *data = calloc(1, WL_BLOCK);
	struct buf_item bi;
	buf_item_init(&bi, log, 0, data, NULL);
	uint8_t payload[4096];
	memset(payload, 0x5c, sizeof(payload));

	CHECK_OK(dev_write(cd, payload, sizeof(payload), 8 * WL_BLOCK, 0));
	uint64_t f0 = dev_stat_of(cd, "dev.flushes"), fua0 = dev_stat_of(cd, "dev.fua_writes");
	uint64_t csn = commit_one(log, &bi, 0, TRANS_UNORDERED);
	bool flushed = true;
	CHECK_OK(log_force_seq(log, csn, true, &flushed));
	CHECK(!flushed);
	CHECK_EQ(dev_stat_of(cd, "dev.flushes") - f0, 0);
	CHECK_EQ(dev_stat_of(cd, "dev.fua_writes") - fua0, 1);
	CHECK_EQ(stat_of(log, "log.checkpoints_unflushed"), 1);
	CHECK(crashdev_pending(cd) > 0); /* the data is still volatile */

	csn = commit_one(log, &bi, 1, 0);
	CHECK_OK(log_force_seq(log, csn, true, &flushed));
	CHECK(flushed);
	CHECK_EQ(dev_stat_of(cd, "dev.flushes") - f0, 1);
	CHECK_EQ(stat_of(log, "log.checkpoints_unflushed"), 1);
	CHECK_OK(crashdev_powerfail(cd, 1, NULL));
	log_shutdown(log, "test");
	log_unmount(log);
	mutex_destroy(&bi.bi_lock);
	uint8_t out[4096];
	CHECK_OK(dev_read(inner, out, sizeof(out), 8 * WL_BLOCK));
	CHECK(memcmp(out, payload, sizeof(out)) == 0);
	free(data);
	dev_close(cd);
	dev_close(inner);
	TEST_PASS("data ordering (G7)");
}

/* Who fails the flush of test_lost_writeback, and when. */
enum lost_wb {
	LOST_BY_OTHER,	      /* another caller's flush (a COMMIT), after the write-back */
	LOST_BY_FLUSH_BEHIND, /* the flush-behind flush the write-back asked for (B1) */
	FAILED_BEFORE,	      /* another caller's flush, before the write-back */
};

/*
 * I6: a data-device flush the journal did not ask for fails after the AIL
 * wrote a block back, and takes the write-back with it (a page cache drops
 * the dirty pages whose write-back failed: crashdev_drop_unflushed). The
 * journal's own flush before its next checkpoint succeeds, and a record
 * carrying a tail past the block's checkpoint would leave the block in
 * neither place. The log must shut down instead of moving the tail, so
 * that after a power cut recovery replays the acknowledged change. A
 * flush that failed before the write-back started loses nothing of it:
 * the tail moves and the log stays up.
 * (The first two fail without I6: the tail moves and the block reads back
 * as zeros.)
 */
static void test_lost_writeback(enum lost_wb how)
{
	static const char *const what[] = {
		[LOST_BY_OTHER] = "no tail past a write-back another flush lost (I6)",
		[LOST_BY_FLUSH_BEHIND] = "no tail past a write-back a flush-behind flush lost (I6)",
		[FAILED_BEFORE] = "a flush failed before the write-back: the tail moves (I6)",
	};
	struct dev *inner, *cd;
	struct log_params p;
	struct log *log = crash_log_mount(&inner, &cd, &p);
	uint8_t *data = calloc(1, WL_BLOCK), *data2 = calloc(1, WL_BLOCK);
	struct buf_item bi, bi2;
	buf_item_init(&bi, log, 2 * WL_BLOCK, data, NULL);
	buf_item_init(&bi2, log, 3 * WL_BLOCK, data2, NULL);
	data[7] = 0x5a;
	uint64_t csn = commit_one(log, &bi, 0, 0);
	CHECK_OK(log_force_seq(log, csn, true, NULL)); /* acknowledged */

	if (how == FAILED_BEFORE) {
		/* "file data", so that the flush is not elided */
		uint8_t payload[4096] = {1};
		CHECK_OK(dev_write(cd, payload, sizeof(payload), 8 * WL_BLOCK, 0));
		dev_inject_flush_fault(cd, 1);
		CHECK_EQ(dev_flush(cd), -EIO);
		CHECK_EQ(crashdev_drop_unflushed(cd), 1);
	}
	if (how == LOST_BY_FLUSH_BEHIND)
		dev_set_flush_behind(cd, LOG_BUF_BLOCK, 0);
	if (how != FAILED_BEFORE)
		dev_inject_flush_fault(cd, 1);
	CHECK_OK(log_ail_push_all(log)); /* the block is home, in the cache */
	if (how == LOST_BY_FLUSH_BEHIND) {
		while (dev_write_errors(cd) == 0) /* B1's flush, on the flusher */
			sleep_ns(NSEC_PER_MSEC);
	} else if (how == LOST_BY_OTHER) {
		CHECK_EQ(dev_flush(cd), -EIO);
	}
	CHECK_EQ(dev_write_errors(cd), 1);
	if (how != FAILED_BEFORE)
		CHECK_EQ(crashdev_drop_unflushed(cd), 1); /* the write-back is gone */

	/* an ordered checkpoint flushes (that flush succeeds) and would
	 * carry the AIL's tail, past bi's checkpoint */
	uint64_t moves = stat_of(log, "log.tail_moves");
	csn = commit_one(log, &bi2, 0, 0);
	int ferr = log_force_seq(log, csn, true, NULL);
	uint64_t moved = stat_of(log, "log.tail_moves") - moves;
	bool down = log_is_shutdown(log);
	CHECK_OK(crashdev_powerfail(cd, 1, NULL));
	log_shutdown(log, "test power cut");
	CHECK_EQ(log_unmount(log), -EIO);
	mutex_destroy(&bi.bi_lock);
	mutex_destroy(&bi2.bi_lock);

	p.ldev = inner;
	CHECK_OK(log_mount(&p, &log));
	uint8_t out[WL_BLOCK];
	CHECK_OK(dev_read(inner, out, sizeof(out), 2 * WL_BLOCK));
	CHECK_EQ(out[0], 1); /* the acknowledged change survived */
	CHECK_EQ(out[7], 0x5a);
	if (how == FAILED_BEFORE) {
		CHECK_OK(ferr);
		CHECK_EQ(moved, 1);
		CHECK(!down);
		CHECK_OK(dev_read(inner, out, sizeof(out), 3 * WL_BLOCK));
		CHECK_EQ(out[0], 1); /* bi2's change, acknowledged too */
	} else {
		CHECK_EQ(ferr, -EIO); /* not acknowledged: the log shut down */
		CHECK_EQ(moved, 0);
		CHECK(down);
	}
	CHECK_OK(log_unmount(log));
	free(data);
	free(data2);
	dev_close(cd);
	dev_close(inner);
	TEST_PASS(what[how]);
}

struct push_all_call {
	struct log *log;
	_Atomic int returned;
	int err;
};

static void *push_all_fn(void *arg)
{
	struct push_all_call *c = arg;
	c->err = log_ail_push_all(c->log);
	atomic_store(&c->returned, 1);
	return NULL;
}

/*
 * dev.h B2: the AIL's write-back, which holds the item locked (I5), never
 * waits for flush-behind's limit. With the cache full of "other clients'
 * unstable data" (H bytes) and the flush-behind flush held in flight, the
 * write-back completes. (Fails without DEV_NOTHROTTLE: the push waits for
 * the held flush and WAIT_FOR times out.)
 */
static void test_writeback_not_throttled(void)
{
	struct dev *inner, *cd;
	struct log_params p;
	struct log *log = crash_log_mount(&inner, &cd, &p);
	uint8_t *data = calloc(1, WL_BLOCK);
	struct buf_item bi;
	buf_item_init(&bi, log, 2 * WL_BLOCK, data, NULL);
	CHECK_OK(log_force_seq(log, commit_one(log, &bi, 0, 0), true, NULL));

	struct gate g = GATE_INIT;
	crashdev_set_flush_hook(cd, gate_hook, &g);
	dev_set_flush_behind(cd, 4 * WL_BLOCK, 16 * WL_BLOCK);
	uint8_t payload[WL_BLOCK] = {1};
	for (unsigned i = 8; i < 24; i++) /* up to H; B1's flush is held */
		CHECK_OK(dev_write(cd, payload, sizeof(payload), i * WL_BLOCK, 0));
	WAIT_FOR(gate_entered(&g) == 1);
	struct push_all_call c = {.log = log};
	pthread_t th;
	CHECK_OK(pthread_create(&th, NULL, push_all_fn, &c));
	WAIT_FOR(atomic_load(&c.returned));
	CHECK_OK(pthread_join(th, NULL));
	CHECK_OK(c.err);
	CHECK_EQ(dev_stat_of(cd, "dev.flush_behind_throttles"), 0);
	gate_release(&g, 1000);
	CHECK_OK(log_unmount(log));
	mutex_destroy(&bi.bi_lock);
	free(data);
	dev_close(cd);
	dev_close(inner);
	TEST_PASS("the AIL's write-back never waits for flush-behind (B2)");
}

static int mount_quiet(struct log_params *p)
{
	enum msg_level lvl = msg_get_level();
	msg_set_level(MSG_ERR);
	struct log *log;
	int err = log_mount(p, &log);
	msg_set_level(lvl);
	if (!err)
		log_unmount(log);
	return err;
}

static void test_bad_input(void)
{
	const uint64_t LS = 256 * 1024;
	struct rng r;
	rng_seed(&r, 42);
	/* random bytes in the log region */
	for (int round = 0; round < 20; round++) {
		struct dev *d = new_image(LS);
		uint8_t *junk = malloc(LS);
		for (uint64_t i = 0; i < LS; i++)
			junk[i] = (uint8_t)rng_next(&r);
		if (round % 2) {
			/* keep magic and LSN plausible in some headers: only CRCs fail */
			for (uint64_t bb = 0; bb < LS / 512; bb += 7) {
				struct log_rec_hdr *h = (struct log_rec_hdr *)(junk + bb * 512);
				h->h_magic = htole32(LOG_REC_MAGIC);
				h->h_version = htole16(LOG_REC_VERSION);
				h->h_lsn = htole64((1ull << 32) | bb);
				memcpy(h->h_uuid, uuid_a, 16);
				h->h_log_bbs = htole32(LS / 512);
			}
		}
		CHECK_OK(dev_write(d, junk, LS, HOME, 0));
		struct log_params p = params(d, LS, uuid_a);
		CHECK_EQ(mount_quiet(&p), -EUCLEAN);
		free(junk);
		dev_close(d);
	}
	/* a log of another filesystem */
	struct dev *d = new_image(LS);
	struct log_params p = params(d, LS, uuid_b);
	CHECK_EQ(mount_quiet(&p), -EUCLEAN);
	/* truncated image: the device ends inside the log region */
	struct dev *small;
	CHECK_OK(dev_mem_create(HOME + LS / 2, NULL, &small));
	p = params(small, LS, uuid_a);
	CHECK_EQ(mount_quiet(&p), -EUCLEAN);
	dev_close(small);
	/* zeroed log (never formatted) */
	uint8_t *zero = calloc(1, LS);
	CHECK_OK(dev_write(d, zero, LS, HOME, 0));
	p = params(d, LS, uuid_a);
	CHECK_EQ(mount_quiet(&p), -EUCLEAN);
	free(zero);
	dev_close(d);
	/* every single-byte flip in the first records: mount refuses or
	 * recovers a valid prefix, never crashes */
	d = new_image(LS);
	p = params(d, LS, uuid_a);
	struct log *log;
	CHECK_OK(log_mount(&p, &log));
	struct wl *w = wl_create(
		&(struct wl_params){
			.threads = 1, .txns = 30, .shared = 4, .force_pct = 100, .seed = 9},
		log, d);
	CHECK_OK(wl_run(w));
	/* flip bytes in the live part of the log, between tail and head */
	uint64_t lbbs = LS / 512;
	uint64_t head = stat_of(log, "log.head_lsn"), tail = stat_of(log, "log.tail_lsn");
	uint64_t tail_pos = (tail >> 32) * lbbs + (tail & 0xffffffff);
	uint64_t head_pos = (head >> 32) * lbbs + (head & 0xffffffff);
	CHECK(head_pos > tail_pos);
	printf("byte flips over %llu live blocks of the log\n",
	       (unsigned long long)(head_pos - tail_pos));
	log_shutdown(log, "test");
	log_unmount(log);
	wl_detach(w);
	wl_build_model(w);
	uint8_t *img = malloc(HOME + LS);
	dev_mem_copy_out(d, img);
	int refused = 0, recovered = 0;
	for (int i = 0; i < 400; i++) {
		struct dev *c;
		CHECK_OK(dev_mem_create(HOME + LS, img, &c));
		uint64_t pos = tail_pos + rng_below(&r, head_pos - tail_pos);
		uint64_t off = HOME + (pos % lbbs) * 512 + rng_below(&r, 512);
		uint8_t sec[512];
		CHECK_OK(dev_read(c, sec, 512, off & ~511ull));
		sec[off & 511] ^= (uint8_t)(1 + rng_below(&r, 255));
		CHECK_OK(dev_write(c, sec, 512, off & ~511ull, 0));
		struct log_params pc = params(c, LS, uuid_a);
		int err = mount_quiet(&pc);
		CHECK(err == 0 || err == -EUCLEAN);
		if (err)
			refused++;
		else
			recovered++;
		dev_close(c);
	}
	printf("byte flips: %d refused, %d recovered\n", refused, recovered);
	free(img);
	wl_free(w);
	dev_close(d);
	TEST_PASS("bad input");
}

/*
 * G5 fault loop: the Nth device I/O fails, for every N over a workload. The
 * log shuts down, nothing is written after, and after a power cut every
 * acknowledged transaction recovers.
 */
static void test_fault_loop(void)
{
	const uint64_t LS = 128 * 1024;
	struct wl_params wp = {
		.threads = 1, .txns = 60, .shared = 6, .force_pct = 40, .free_pct = 5, .seed = 5};
	/* how many I/Os the workload does without faults */
	uint64_t total;
	{
		struct dev *d = new_image(LS);
		struct log_params p = params(d, LS, uuid_a);
		p.buf_size = 4096;
		struct log *log;
		CHECK_OK(log_mount(&p, &log));
		struct wl *w = wl_create(&wp, log, d);
		dev_inject_fault(d, UINT64_MAX, false);
		CHECK_OK(wl_run(w));
		CHECK_OK(log_unmount(log));
		total = dev_io_count(d);
		wl_free(w);
		dev_close(d);
	}
	unsigned shutdowns = 0;
	enum msg_level lvl = msg_get_level();
	for (uint64_t n = 1; n <= total + 5; n++) {
		struct dev *inner = new_image(LS), *cd;
		CHECK_OK(crashdev_create(inner, CRASHDEV_RECORD, &cd));
		struct log_params p = params(cd, LS, uuid_a);
		p.buf_size = 4096;
		struct log *log;
		msg_set_level(MSG_ERR);
		CHECK_OK(log_mount(&p, &log));
		struct wl *w = wl_create(&wp, log, cd);
		dev_inject_fault(cd, n, false);
		int err = wl_run(w);
		uint64_t acked = atomic_load(&w->acked);
		bool hit = dev_stat_of(cd, "dev.errors") > 0;
		/* wait for the journal to notice (a write-back error is found by
		 * the AIL thread) */
		for (int i = 0; hit && i < 200 && !log_is_shutdown(log); i++)
			usleep(1000);
		if (hit && log_is_shutdown(log)) {
			shutdowns++;
			usleep(2000);
			size_t events = crashdev_nevents(cd);
			CHECK(log_unmount(log) == -EIO);
			/* G5: nothing written after the shutdown */
			CHECK_EQ(crashdev_nevents(cd), events);
		} else if (hit) {
			/* the workload's own file-data write or flush failed. A
			 * failed write leaves the journal untouched; a failed
			 * flush after write-backs may have lost them, so the
			 * unmount record, which moves the tail past them, is
			 * refused (I6) */
			CHECK_EQ(err, -EIO);
			err = log_unmount(log);
			CHECK(err == 0 || (err == -EIO && dev_flush_failed_since(cd, 1)));
			shutdowns += err != 0;
		} else {
			CHECK_OK(err);
			/* the fault may hit the unmount itself */
			err = log_unmount(log);
			CHECK(err == 0 || (err == -EIO && dev_stat_of(cd, "dev.errors") > 0));
			shutdowns += err != 0;
		}
		msg_set_level(lvl);
		wl_detach(w);
		wl_build_model(w);
		CHECK_OK(crashdev_powerfail(cd, n, NULL));
		p.ldev = inner;
		msg_set_level(MSG_WARN);
		CHECK_OK(log_mount(&p, &log));
		msg_set_level(lvl);
		char what[64];
		snprintf(what, sizeof(what), "fault at I/O %llu", (unsigned long long)n);
		CHECK_OK(wl_verify(w, inner, acked, w->data_flushed, what, NULL));
		CHECK_OK(log_unmount(log));
		wl_free(w);
		dev_close(cd);
		dev_close(inner);
	}
	printf("fault loop: %llu I/Os, %u runs shut down\n", (unsigned long long)total, shutdowns);
	CHECK(shutdowns >= total / 2);
	TEST_PASS("fault loop");
}

struct durable_flag {
	struct log_durable_cb cb;
	_Atomic int called;
	int err;
};

static void durable_cb(struct log_durable_cb *cb, int err)
{
	struct durable_flag *f = container_of(cb, struct durable_flag, cb);
	f->err = err;
	atomic_store(&f->called, 1);
}

/*
 * The background push writes a checkpoint nobody forced (after the push
 * interval), the durable callback runs when its checkpoint is durable and
 * not before, and a CIL that outgrows its share of the log is pushed (and
 * throttles commits) without any force.
 */
static void test_background(void)
{
	struct dev *d = new_image(256 * 1024);
	struct log_params p = params(d, 256 * 1024, uuid_a);
	p.push_interval_ns = 200 * NSEC_PER_MSEC;
	struct log *log;
	CHECK_OK(log_mount(&p, &log));
	uint8_t *data = calloc(NBLOCKS, WL_BLOCK);
	struct buf_item bi[NBLOCKS];
	for (int b = 0; b < NBLOCKS; b++)
		buf_item_init(&bi[b], log, (uint64_t)b * WL_BLOCK, data + b * WL_BLOCK, NULL);

	struct durable_flag f = {0};
	f.cb.dc_fn = durable_cb;
	struct trans *tp;
	CHECK_OK(trans_alloc(log, log_calc_res(log, 1, 64), 0, &tp));
	buf_item_join(tp, &bi[0]);
	data[0] = 1;
	buf_item_log(tp, &bi[0], 0, 1);
	trans_on_durable(tp, &f.cb);
	uint64_t csn;
	CHECK_OK(trans_commit(tp, &csn));
	CHECK_EQ(atomic_load(&f.called), 0);
	CHECK(stat_of(log, "log.durable_seq") < csn);
	/* nobody forces: the timer pushes within a few intervals */
	for (int i = 0; i < 100 && !atomic_load(&f.called); i++)
		usleep(20000);
	CHECK_EQ(atomic_load(&f.called), 1);
	CHECK_EQ(f.err, 0);
	CHECK(stat_of(log, "log.durable_seq") >= csn);
	CHECK_EQ(stat_of(log, "log.forces"), 0);

	/* fill the CIL past its share (a quarter of 256 KiB / 8 = 32 KiB) */
	uint64_t pushes = stat_of(log, "log.cil_pushes");
	for (int i = 0; i < 64; i++) {
		CHECK_OK(trans_alloc(log, log_calc_res(log, 1, WL_BLOCK), 0, &tp));
		int b = i % NBLOCKS;
		buf_item_join(tp, &bi[b]);
		memset(data + b * WL_BLOCK, i, WL_BLOCK);
		buf_item_log(tp, &bi[b], 0, WL_BLOCK);
		CHECK_OK(trans_commit(tp, &csn));
	}
	CHECK(stat_of(log, "log.cil_pushes") > pushes);
	CHECK_EQ(stat_of(log, "log.forces"), 0);
	printf("background: %llu pushes, %llu throttled commits\n",
	       (unsigned long long)stat_of(log, "log.cil_pushes"),
	       (unsigned long long)stat_of(log, "log.throttles"));
	CHECK_OK(log_unmount(log));
	for (int b = 0; b < NBLOCKS; b++)
		buf_item_destroy(&bi[b]);
	free(data);
	dev_close(d);
	TEST_PASS("background push, durable callback, CIL share");
}

struct async_w {
	struct log_force_waiter w;
	_Atomic int done;
	int err;
	bool flushed;
	struct log *log;
	uint64_t durable_at_call;
};

static void async_fn(struct log_force_waiter *w, int err, bool flushed)
{
	struct async_w *a = container_of(w, struct async_w, w);
	a->err = err;
	a->flushed = flushed;
	atomic_store(&a->done, 1);
}

/* log_force_async: the callback runs once the checkpoint is durable. */
static void test_force_async(void)
{
	struct dev *d = new_image(256 * 1024);
	struct log_params p = params(d, 256 * 1024, uuid_a);
	struct log *log;
	CHECK_OK(log_mount(&p, &log));
	uint8_t *data = calloc(1, WL_BLOCK);
	struct buf_item bi;
	buf_item_init(&bi, log, 0, data, NULL);
	struct trans *tp;
	CHECK_OK(trans_alloc(log, log_calc_res(log, 1, 64), 0, &tp));
	buf_item_join(tp, &bi);
	data[0] = 1;
	buf_item_log(tp, &bi, 0, 1);
	uint64_t csn;
	CHECK_OK(trans_commit(tp, &csn));
	struct async_w a = {.w.fn = async_fn};
	CHECK_EQ(log_force_async(log, csn, &a.w), 1);
	for (int i = 0; i < 1000 && !atomic_load(&a.done); i++)
		usleep(1000);
	CHECK_EQ(atomic_load(&a.done), 1);
	CHECK_OK(a.err);
	CHECK(a.flushed);
	CHECK(stat_of(log, "log.durable_seq") >= csn);
	/* already durable: nothing to wait for */
	struct async_w b = {.w.fn = async_fn};
	CHECK_EQ(log_force_async(log, csn, &b.w), 0);
	CHECK_EQ(atomic_load(&b.done), 0);
	/* may_push on an idle log: written on this thread, fn already called */
	uint64_t inl = stat_of(log, "log.inline_pushes");
	CHECK_OK(trans_alloc(log, log_calc_res(log, 1, 64), 0, &tp));
	buf_item_join(tp, &bi);
	data[2] = 1;
	buf_item_log(tp, &bi, 2, 1);
	CHECK_OK(trans_commit(tp, &csn));
	struct async_w e = {.w.fn = async_fn, .w.may_push = true};
	CHECK_EQ(log_force_async(log, csn, &e.w), 1);
	CHECK_EQ(atomic_load(&e.done), 1);
	CHECK_OK(e.err);
	CHECK(e.flushed);
	CHECK_EQ(stat_of(log, "log.inline_pushes"), inl + 1);
	CHECK(stat_of(log, "log.durable_seq") >= csn);
	/* a shutdown fails the waiters */
	CHECK_OK(trans_alloc(log, log_calc_res(log, 1, 64), 0, &tp));
	buf_item_join(tp, &bi);
	data[1] = 1;
	buf_item_log(tp, &bi, 1, 1);
	CHECK_OK(trans_commit(tp, &csn));
	struct async_w c = {.w.fn = async_fn};
	dev_inject_fault(d, 1, true); /* the push cannot write */
	/* (the inline push fails on this thread: the log shuts down, fn gets EIO) */
	c.w.may_push = true;
	int r = log_force_async(log, csn, &c.w);
	CHECK(r == 1 || r == -EIO);
	for (int i = 0; r == 1 && i < 1000 && !atomic_load(&c.done); i++)
		usleep(1000);
	if (r == 1) {
		CHECK_EQ(atomic_load(&c.done), 1);
		CHECK_EQ(c.err, -EIO);
	}
	log_unmount(log);
	mutex_destroy(&bi.bi_lock);
	free(data);
	dev_close(d);
	TEST_PASS("asynchronous force");
}

int main(void)
{
	test_force_async();
	test_background();
	test_clean();
	test_relog();
	test_log_flushed();
	test_data_order();
	test_lost_writeback(LOST_BY_OTHER);
	test_lost_writeback(LOST_BY_FLUSH_BEHIND);
	test_lost_writeback(FAILED_BEFORE);
	test_writeback_not_throttled();
	test_powercut();
	test_group_commit();
	test_group_alone();
	test_bad_input();
	test_fault_loop();
	return 0;
}
