/*
 * test_flush_share.c - shared flushes (src/dev/dev.h, F1-F4).
 *
 * 1. Held flushes, on the crash device (its flush hook holds a flush in
 *    flight): a caller L starts flush 1 and it is held; meanwhile seven
 *    callers write and call dev_flush, and one writes and queues with
 *    dev_flush_async. None of them may return when flush 1 completes, since
 *    it started before their writes completed (F2): flush 2 must start,
 *    and while it is held none has returned and their writes are still
 *    volatile. Released, flush 2 serves all eight: two flushes reach the
 *    device for nine callers, groups of 1 and 8. A second round cuts the
 *    power while flush 2 is held: every one of the eight fails (F3), none
 *    returns success.
 * 2. Concurrent syncs on the engine, recorded: threads overwrite and
 *    append to their own files and make each write stable with fdatasync,
 *    fsync, or the asynchronous path the NFS server takes (fs_force_async,
 *    then fs_flush_data_async when the force saw no flush). Every flush is
 *    held in flight for a random while, so that writes complete during
 *    flushes. Power is then cut at the return of every sync (the volatile
 *    writes kept, dropped or torn at random): every sector each
 *    acknowledged write wrote holds that write or a newer one of the same
 *    thread, and appended sizes are there. The counters show how many
 *    syncs each flush served.
 *
 *   test-flush-share [--every K]   (cut at every K-th sync only: TSan)
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/rand.h"
#include "base/time.h"
#include "check.h"
#include "dev/crashdev.h"
#include "flush_gate.h"
#include "fs/fs.h"

static uint64_t dev_stat(struct dev *d, const char *name)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	dev_stats(d, "dev", &s);
	return stat_table_get(&t, name);
}

/* ---- 1. held flushes ---- */

#define K 7 /* synchronous callers of flush 2 */

struct caller {
	pthread_t th;
	struct dev *d;
	unsigned blk;
	_Atomic int *returned;
	int err;
};

static void write_block(struct dev *d, unsigned blk, uint8_t v)
{
	uint8_t *buf = xmalloc_aligned(4096, 4096);
	memset(buf, v, 4096);
	CHECK_OK(dev_write(d, buf, 4096, (uint64_t)blk * 4096, 0));
	free(buf);
}

static void *caller_fn(void *arg)
{
	struct caller *c = arg;
	write_block(c->d, c->blk, (uint8_t)(0xb0 + c->blk));
	c->err = dev_flush(c->d);
	atomic_fetch_add(c->returned, 1);
	return NULL;
}

struct async_caller {
	struct dev_flush_waiter w;
	_Atomic int done;
	int err;
};

static void async_fn(struct dev_flush_waiter *w, int err)
{
	struct async_caller *a = container_of(w, struct async_caller, w);
	a->err = err;
	atomic_store(&a->done, 1);
}

static void test_held(bool cut)
{
	struct dev *inner, *cd;
	CHECK_OK(dev_mem_create(1 << 20, NULL, &inner));
	CHECK_OK(crashdev_create(inner, 0, &cd));
	struct gate g = GATE_INIT;
	crashdev_set_flush_hook(cd, gate_hook, &g);
	_Atomic int returned = 0, l_returned = 0;

	/* L starts flush 1, which is held */
	struct caller l = {.d = cd, .blk = 0, .returned = &l_returned};
	pthread_create(&l.th, NULL, caller_fn, &l);
	WAIT_FOR(gate_entered(&g) == 1);

	/* eight callers whose writes complete while flush 1 is in flight */
	struct caller c[K];
	for (unsigned i = 0; i < K; i++) {
		c[i] = (struct caller){.d = cd, .blk = 1 + i, .returned = &returned};
		pthread_create(&c[i].th, NULL, caller_fn, &c[i]);
	}
	write_block(cd, K + 1, 0xaa);
	struct async_caller a = {.w.fn = async_fn};
	CHECK_EQ(dev_flush_async(cd, &a.w, false), 1);
	WAIT_FOR(dev_flush_queued(cd) == K + 1);
	CHECK_EQ(crashdev_pending(cd), K + 2);

	/* flush 1 completes: L returns, the others must wait for flush 2 */
	gate_release(&g, 1);
	WAIT_FOR(gate_entered(&g) == 2 || atomic_load(&returned) || atomic_load(&a.done));
	if (atomic_load(&returned) || atomic_load(&a.done)) {
		fprintf(stderr, "a caller returned after flush 1, which started before its write "
				"completed\n");
		CHECK(0);
	}
	pthread_join(l.th, NULL);
	CHECK_OK(l.err);
	/* flush 2 in flight: L's write is durable, the eight are not */
	CHECK_EQ(crashdev_pending(cd), K + 1);
	CHECK_EQ(atomic_load(&returned), 0);
	CHECK_EQ(atomic_load(&a.done), 0);
	if (cut)
		CHECK_OK(crashdev_powerfail(cd, 1, NULL));
	gate_release(&g, 2);
	for (unsigned i = 0; i < K; i++) {
		pthread_join(c[i].th, NULL);
		CHECK_EQ(c[i].err, cut ? -EIO : 0);
	}
	WAIT_FOR(atomic_load(&a.done));
	CHECK_EQ(a.err, cut ? -EIO : 0);

	/* two flushes reached the device (both, with the cut: the second
	 * failed there) for nine callers */
	CHECK_EQ(dev_stat(cd, "dev.flush_callers"), 1 + K + 1);
	CHECK_EQ(dev_stat(cd, "dev.flush_group_1"), 1);
	CHECK_EQ(dev_stat(cd, "dev.flush_group_8"), 1);
	CHECK_EQ(dev_stat(cd, "dev.flushes"), cut ? 1 : 2);
	/* every caller of flush 2 waited but the one that led it */
	CHECK_EQ(dev_stat(cd, "dev.flush_waits"), K);
	printf("held flushes%s: %llu callers, %llu flushes reached the device, groups of 1 "
	       "and 8\n",
	       cut ? " (power cut in flush 2)" : "",
	       (unsigned long long)dev_stat(cd, "dev.flush_callers"),
	       (unsigned long long)dev_stat(cd, "dev.flushes"));
	if (!cut) {
		CHECK_EQ(crashdev_pending(cd), 0);
		CHECK_OK(crashdev_powerfail(cd, 2, NULL));
	}
	crashdev_set_flush_hook(cd, NULL, NULL);
	dev_close(cd);
	/* what survived: L's block always; the eight only if flush 2 ran */
	uint8_t buf[4096];
	CHECK_OK(dev_read(inner, buf, 4096, 0));
	CHECK_EQ(buf[0], 0xb0);
	for (unsigned i = 1; i <= K + 1 && !cut; i++) {
		CHECK_OK(dev_read(inner, buf, 4096, (uint64_t)i * 4096));
		CHECK_EQ(buf[4095], i <= K ? 0xb0 + i : 0xaa);
	}
	dev_close(inner);
	TEST_PASS(cut ? "held flushes, power cut in the shared one" : "held flushes");
}

/* ---- 2. concurrent syncs on the engine ---- */

#define IMG     (64u << 20)
#define THREADS 6
#define OPS     120
#define FBLOCKS 64 /* blocks each file has before the race */
#define MAXBLK  (FBLOCKS + OPS)

enum sync_kind { SYNC_FDATASYNC, SYNC_FSYNC, SYNC_ASYNC };

struct op {
	uint32_t blk, gen;
	bool append;
};

struct world {
	struct fs *fs;
	struct dev *cd;
	uint64_t ino[THREADS];
	struct op ops[THREADS][OPS];
	unsigned nops[THREADS];
	_Atomic uint64_t hook_calls;
};

struct targ {
	struct world *w;
	unsigned t;
};

/* The asynchronous path of the NFS server: force, then flush if the force
 * did not see a flush; fn on the push thread or the flushing thread. */
struct async_sync {
	struct fs_sync_waiter sw;
	struct fs_flush_waiter fw;
	struct fs *fs;
	pthread_mutex_t m;
	pthread_cond_t c;
	bool done;
	int err;
};

static void as_finish(struct async_sync *a, int err)
{
	pthread_mutex_lock(&a->m);
	a->err = err;
	a->done = true;
	pthread_cond_signal(&a->c);
	pthread_mutex_unlock(&a->m);
}

static void as_flushed(struct fs_flush_waiter *w, int err)
{
	as_finish(container_of(w, struct async_sync, fw), err);
}

static void as_forced(struct fs_sync_waiter *w, int err, bool log_flushed)
{
	struct async_sync *a = container_of(w, struct async_sync, sw);
	if (err || log_flushed) {
		as_finish(a, err);
		return;
	}
	/* on the push thread: must not block, so never lead */
	a->fw.fn = as_flushed;
	if (fs_flush_data_async(a->fs, &a->fw, false) == 0)
		as_finish(a, 0);
}

static int sync_async(struct fs *fs, struct fs_inode *ip)
{
	struct async_sync a = {.fs = fs, .sw.fn = as_forced, .fw.fn = as_flushed};
	pthread_mutex_init(&a.m, NULL);
	pthread_cond_init(&a.c, NULL);
	uint64_t seq = fs_sync_seq(ip, true);
	int rc = seq ? fs_force_async(fs, seq, &a.sw) : 0;
	if (rc == 0 && fs_flush_data_async(fs, &a.fw, true) == 0)
		as_finish(&a, 0);
	else if (rc < 0)
		as_finish(&a, rc);
	pthread_mutex_lock(&a.m);
	while (!a.done)
		pthread_cond_wait(&a.c, &a.m);
	pthread_mutex_unlock(&a.m);
	pthread_mutex_destroy(&a.m);
	pthread_cond_destroy(&a.c);
	return a.err;
}

static void fill(uint8_t *buf, unsigned t, uint32_t gen)
{
	uint64_t v = (uint64_t)(t + 1) << 32 | gen;
	for (unsigned i = 0; i < 4096; i += 8)
		memcpy(buf + i, &v, 8);
}

/* A flush in flight for 0-300 us, so that writes complete meanwhile. */
static void sleepy_hook(void *arg)
{
	struct world *w = arg;
	uint64_t n = atomic_fetch_add(&w->hook_calls, 1);
	sleep_ns((splitmix64(&n) % 300) * NSEC_PER_USEC);
}

static void *race_thread(void *arg)
{
	struct targ *ta = arg;
	struct world *w = ta->w;
	unsigned t = ta->t;
	struct rng r;
	rng_seed(&r, 77 + t);
	struct fs_inode *ip;
	CHECK_OK(fs_iget(w->fs, w->ino[t], 0, &ip));
	uint8_t *buf = xmalloc(4096);
	uint32_t size_blocks = FBLOCKS;
	for (unsigned i = 0; i < OPS; i++) {
		struct op *o = &w->ops[t][i];
		o->gen = i + 1;
		o->append = rng_chance(&r, 15);
		o->blk = o->append ? size_blocks++ : (uint32_t)rng_below(&r, FBLOCKS);
		fill(buf, t, o->gen);
		CHECK_OK(fs_write(ip, (uint64_t)o->blk * 4096, buf, 4096, NULL));
		enum sync_kind k = (enum sync_kind)rng_below(&r, 3);
		int err = k == SYNC_ASYNC ? sync_async(w->fs, ip)
					  : fs_fsync(ip, k == SYNC_FDATASYNC, NULL);
		CHECK_OK(err);
		w->nops[t] = i + 1;
		crashdev_mark(w->cd, (uint64_t)t << 32 | i);
	}
	free(buf);
	fs_iput(ip);
	return NULL;
}

/* After a cut at the return of thread ct's op ci: every op acknowledged
 * before the cut is there (or a newer write of its thread). */
static unsigned verify(struct world *w, struct fs *fs, const unsigned *acked)
{
	unsigned bad = 0;
	uint8_t *buf = xmalloc(MAXBLK * 4096);
	for (unsigned t = 0; t < THREADS; t++) {
		struct fs_inode *ip;
		CHECK_OK(fs_iget(fs, w->ino[t], 0, &ip));
		struct fs_attr at;
		CHECK_OK(fs_getattr(ip, &at));
		/* the newest acknowledged generation of every block */
		uint32_t want[MAXBLK] = {0};
		uint64_t want_size = (uint64_t)FBLOCKS * 4096;
		for (unsigned i = 0; i < acked[t]; i++) {
			const struct op *o = &w->ops[t][i];
			want[o->blk] = o->gen;
			if (o->append)
				want_size = MAX(want_size, (uint64_t)(o->blk + 1) * 4096);
		}
		if (at.size < want_size) {
			fprintf(stderr, "thread %u: size %llu, acknowledged appends reached %llu\n", t,
				(unsigned long long)at.size, (unsigned long long)want_size);
			bad++;
		}
		size_t n;
		bool eof;
		CHECK_OK(fs_read(ip, 0, buf, MIN(at.size, (uint64_t)MAXBLK * 4096), &n, &eof));
		for (uint32_t b = 0; b < MAXBLK && (uint64_t)(b + 1) * 4096 <= n; b++) {
			for (unsigned s = 0; s < 4096 && want[b]; s += 512) {
				uint64_t v;
				memcpy(&v, buf + (uint64_t)b * 4096 + s, 8);
				if (v >> 32 != t + 1 || (uint32_t)v < want[b]) {
					fprintf(stderr, "thread %u block %u sector %u: %llx, acknowledged "
							"generation %u\n",
						t, b, s / 512, (unsigned long long)v, want[b]);
					bad++;
					break;
				}
			}
		}
		fs_iput(ip);
	}
	free(buf);
	return bad;
}

static void test_race(unsigned every)
{
	struct dev *inner, *cd;
	CHECK_OK(dev_mem_create(IMG, NULL, &inner));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = inner, .log_size = 2 << 20}));
	struct world *w = xcalloc(1, sizeof(*w));
	/* the files, written and durable before the race */
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = inner}, &fs));
	struct fs_inode *root;
	CHECK_OK(fs_root(fs, &root));
	uint8_t *zero = xcalloc(1, FBLOCKS * 4096);
	for (unsigned t = 0; t < THREADS; t++) {
		char name[8];
		snprintf(name, sizeof(name), "f%u", t);
		struct fs_inode *ip;
		struct fs_create_args ca = {.mode = S_IFREG | 0644};
		CHECK_OK(fs_create(root, name, strlen(name), &ca, &ip, NULL));
		CHECK_OK(fs_write(ip, 0, zero, FBLOCKS * 4096, NULL));
		w->ino[t] = fs_ino(ip);
		fs_iput(ip);
	}
	free(zero);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	uint8_t *durable = xmalloc(IMG);
	dev_mem_copy_out(inner, durable);

	CHECK_OK(crashdev_create(inner, CRASHDEV_RECORD, &cd));
	crashdev_set_flush_hook(cd, sleepy_hook, w);
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = cd}, &fs));
	w->fs = fs;
	w->cd = cd;
	pthread_t th[THREADS];
	struct targ ta[THREADS];
	for (unsigned t = 0; t < THREADS; t++) {
		ta[t] = (struct targ){w, t};
		pthread_create(&th[t], NULL, race_thread, &ta[t]);
	}
	for (unsigned t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	uint64_t callers = dev_stat(cd, "dev.flush_callers"), flushes = dev_stat(cd, "dev.flushes");
	printf("race: %u syncs; %llu flushes reached the device for %llu callers (%.2f each), "
	       "%llu waited for another's flush; groups: 1: %llu, 2: %llu, 3-4: %llu, 5-8: %llu\n",
	       THREADS * OPS, (unsigned long long)flushes, (unsigned long long)callers,
	       flushes ? (double)callers / (double)flushes : 0.0,
	       (unsigned long long)dev_stat(cd, "dev.flush_waits"),
	       (unsigned long long)dev_stat(cd, "dev.flush_group_1"),
	       (unsigned long long)dev_stat(cd, "dev.flush_group_2"),
	       (unsigned long long)dev_stat(cd, "dev.flush_group_4"),
	       (unsigned long long)dev_stat(cd, "dev.flush_group_8"));
	/* every flush that reached the device counted its group */
	uint64_t groups = 0;
	static const char *const gn[] = {"dev.flush_group_1", "dev.flush_group_2",
					 "dev.flush_group_4", "dev.flush_group_8",
					 "dev.flush_group_16", "dev.flush_group_more"};
	for (unsigned i = 0; i < ARRAY_SIZE(gn); i++)
		groups += dev_stat(cd, gn[i]);
	CHECK_EQ(groups, flushes + dev_stat(cd, "dev.errors"));
	CHECK(callers >= flushes);
	crashdev_set_flush_hook(cd, NULL, NULL);
	fs_shutdown(fs, "end of recorded race");
	fs_unmount(fs);

	/* a power cut at the return of every sync */
	size_t nev = crashdev_nevents(cd);
	const struct crash_event *ev = crashdev_events(cd);
	struct crash_replay rp = {.ev = ev};
	unsigned acked[THREADS] = {0}, cuts = 0, violations = 0, marks = 0;
	for (size_t pt = 0; pt < nev; pt++) {
		if (ev[pt].type != CRASH_EV_MARK || ev[pt].tag == UINT64_MAX)
			continue;
		acked[ev[pt].tag >> 32] = (unsigned)(ev[pt].tag & 0xffffffff) + 1;
		if (marks++ % every)
			continue;
		size_t from = crash_replay_to(&rp, pt, durable);
		for (uint64_t seed = 0; seed < 2; seed++) {
			struct dev *img;
			CHECK_OK(dev_mem_create(IMG, durable, &img));
			struct crash_cut_stats cst = {0};
			crash_apply_cut(ev, from, pt, img, 512, pt * 2 + seed, &cst);
			CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = img}, &fs));
			violations += verify(w, fs, acked);
			CHECK_OK(fs_unmount(fs));
			dev_close(img);
			cuts++;
		}
	}
	printf("power cuts at sync returns: %u, violations: %u\n", cuts, violations);
	CHECK_EQ(violations, 0);
	CHECK(cuts >= 2 * THREADS * OPS / every);
	free(durable);
	free(w);
	dev_close(cd);
	dev_close(inner);
	TEST_PASS("concurrent syncs share flushes, each durable at its return");
}

int main(int argc, char **argv)
{
	unsigned every = 1;
	if (argc == 3 && !strcmp(argv[1], "--every"))
		every = (unsigned)strtoul(argv[2], NULL, 0);
	CHECK(every >= 1);
	msg_set_level(MSG_ERR);
	test_held(false);
	test_held(true);
	test_race(every);
	return 0;
}
