/*
 * test_fs_sync_race.c - fsync and fdatasync racing commits on one inode
 * (docs/design.md rule 3; the three-thread interleavings of the XFS
 * "don't hold ILOCK over the log force in fsync" thread).
 *
 * Writer threads change one file concurrently: overwrites of their own
 * region, appends, writes into preallocated (unwritten) space that must be
 * converted, past EOF and inside the file (the latter write their data
 * under the shared I/O lock: src/fs/file.c, write_unwritten). Syncer threads call fsync or fdatasync on the same file at the
 * same time. Before a sync starts, it records how far every writer had got
 * (their completed operations); when it returns, a mark goes into the crash
 * device's recorded stream. Then for every sync, power is cut exactly at its
 * return (the unflushed writes before it kept, dropped or torn at random):
 * every write completed before the sync started must be there, for fsync
 * and fdatasync alike (the file's data and size). No inode lock is held
 * across the force, so syncs overlap commits; a sync that returns early
 * fails here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/rand.h"
#include "base/time.h"
#include "check.h"
#include "dev/crashdev.h"
#include "fs/fs.h"

#define IMG       (32u << 20)
#define WRITERS   4
#define SYNCERS   3
#define REGION    (64u << 10) /* each writer's overwrite region */
#define OPS       150
#define APPEND_AT (4u << 20)
#define FALLOC_AT (1u << 20) /* writer 3's fallocated space, inside the file */
#define MAX_SYNCS 1500
/* Syncs the writers wait for, spread over their operations, so that the
 * race is run whatever the scheduler does on a loaded machine (each
 * writer gives up waiting after PACE_MAX_NS in all, and the check below
 * then says the race was not run). */
#define PACE_SYNCS  40
#define PACE_MAX_NS (10 * NSEC_PER_SEC)

struct shared {
	struct fs *fs;
	struct dev *cd;
	struct fs_inode *ip;
	_Atomic uint32_t done[WRITERS]; /* completed operations per writer */
	_Atomic bool stop;
	/* sync records: what each sync covered */
	pthread_mutex_t lock;
	uint32_t (*cover)[WRITERS];
	unsigned nsyncs;
	_Atomic unsigned synced; /* nsyncs, read without the lock */
};

struct warg {
	struct shared *s;
	unsigned w;
};

/* Writer w's op k writes generation k+1: words (w << 32 | gen). */
static void fill(uint8_t *buf, size_t len, unsigned w, uint32_t gen)
{
	uint64_t v = (uint64_t)(w + 1) << 32 | gen;
	for (size_t i = 0; i + 8 <= len; i += 8)
		memcpy(buf + i, &v, 8);
}

static void *writer(void *arg)
{
	struct warg *a = arg;
	struct shared *s = a->s;
	unsigned w = a->w;
	struct rng r;
	rng_seed(&r, w + 1);
	uint8_t *buf = xmalloc(REGION);
	uint64_t paced = 0;
	for (uint32_t k = 0; k < OPS; k++) {
		uint32_t gen = k + 1;
		int err;
		if (w == 0) {
			/* overwrites of written blocks: only timestamps logged */
			fill(buf, 8192, w, gen);
			err = fs_write(s->ip, (uint64_t)w * REGION + rng_below(&r, 8) * 8192, buf, 8192,
				       NULL);
		} else if (w == 1 || w == 3) {
			/* writes into preallocated space: conversions; writer
			 * 3's space is inside the file, so its data goes out
			 * under the shared I/O lock (file.c, write_unwritten) */
			uint64_t off = (w == 1 ? APPEND_AT * 2 : FALLOC_AT) + (uint64_t)k * 8192;
			fill(buf, 8192, w, gen);
			err = fs_write(s->ip, off, buf, 8192, NULL);
		} else {
			/* appends: new blocks, a new size */
			fill(buf, 4096, w, gen);
			err = fs_write(s->ip, APPEND_AT + (uint64_t)k * 4096, buf, 4096, NULL);
		}
		CHECK_OK(err);
		atomic_store(&s->done[w], gen);
		/* let the syncers keep up: PACE_SYNCS of them among the writes */
		while (atomic_load(&s->synced) < (uint64_t)gen * PACE_SYNCS / OPS &&
		       paced < PACE_MAX_NS) {
			sleep_ns(50 * NSEC_PER_USEC);
			paced += 50 * NSEC_PER_USEC;
		}
	}
	free(buf);
	return NULL;
}

static void *syncer(void *arg)
{
	struct warg *a = arg;
	struct shared *s = a->s;
	struct rng r;
	rng_seed(&r, 100 + a->w);
	while (!atomic_load(&s->stop)) {
		sleep_ns(rng_below(&r, 300) * NSEC_PER_USEC);
		uint32_t cov[WRITERS];
		for (unsigned w = 0; w < WRITERS; w++)
			cov[w] = atomic_load(&s->done[w]);
		bool datasync = rng_chance(&r, 50);
		CHECK_OK(fs_fsync(s->ip, datasync, NULL));
		pthread_mutex_lock(&s->lock);
		if (s->nsyncs == MAX_SYNCS) {
			pthread_mutex_unlock(&s->lock);
			break;
		}
		unsigned id = s->nsyncs++;
		atomic_store(&s->synced, s->nsyncs);
		memcpy(s->cover[id], cov, sizeof(cov));
		crashdev_mark(s->cd, id); /* the sync returned here */
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

/* After a cut: writer w's operations up to cov[w] are all there. */
static int verify(struct fs *fs, const uint32_t *cov, uint64_t id)
{
	struct fs_inode *root, *ip;
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_lookup(root, "f", 1, &ip));
	uint8_t *buf = xmalloc(OPS * 8192);
	size_t n;
	bool eof;
	int bad = 0;
	/* writer 0: its region holds generations; only "completed before" can
	 * be required of each block it rewrote, which the max does not tell.
	 * So require that the newest covered generation reached the disk. */
	CHECK_OK(fs_read(ip, 0, buf, REGION, &n, &eof));
	uint32_t best = 0;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t v;
		memcpy(&v, buf + i, 8);
		if (v >> 32 == 1 && (uint32_t)v > best)
			best = (uint32_t)v;
	}
	if (best < cov[0]) {
		fprintf(stderr, "sync %llu: writer 0 reached op %u, disk has %u\n",
			(unsigned long long)id, cov[0], best);
		bad = 1;
	}
	/* writers 1 and 3: every converted block up to what was covered */
	for (unsigned w = 1; w <= 3; w += 2) {
		uint64_t at = w == 1 ? APPEND_AT * 2 : FALLOC_AT;
		for (uint32_t k = 0; k < cov[w] && !bad; k++) {
			CHECK_OK(fs_read(ip, at + (uint64_t)k * 8192, buf, 8192, &n, &eof));
			uint64_t v;
			memcpy(&v, buf, 8);
			if (n != 8192 || v != ((uint64_t)(w + 1) << 32 | (k + 1))) {
				fprintf(stderr, "sync %llu: writer %u op %u (covered %u) lost\n",
					(unsigned long long)id, w, k + 1, cov[w]);
				bad = 1;
			}
		}
	}
	/* writer 2: the appended blocks and the size that covers them */
	struct fs_attr at;
	fs_getattr(ip, &at);
	if (cov[2] && at.size < APPEND_AT + (uint64_t)cov[2] * 4096) {
		fprintf(stderr, "sync %llu: size %llu misses appends up to %u\n",
			(unsigned long long)id, (unsigned long long)at.size, cov[2]);
		bad = 1;
	}
	for (uint32_t k = 0; k < cov[2] && !bad; k++) {
		CHECK_OK(fs_read(ip, APPEND_AT + (uint64_t)k * 4096, buf, 4096, &n, &eof));
		uint64_t v;
		memcpy(&v, buf, 8);
		if (n != 4096 || v != ((uint64_t)3 << 32 | (k + 1))) {
			fprintf(stderr, "sync %llu: append %u (covered %u) lost\n",
				(unsigned long long)id, k + 1, cov[2]);
			bad = 1;
		}
	}
	free(buf);
	fs_iput(ip);
	fs_iput(root);
	return bad;
}

int main(int argc, char **argv)
{
	/* --every K: cut the power at every K-th sync's return only (the TSan
	 * build, where each recovery is slow; the race itself runs in full) */
	unsigned every = 1;
	if (argc == 3 && !strcmp(argv[1], "--every"))
		every = (unsigned)strtoul(argv[2], NULL, 0);
	CHECK(every >= 1);
	msg_set_level(MSG_ERR);
	struct dev *inner, *cd;
	CHECK_OK(dev_mem_create(IMG, NULL, &inner));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = inner, .log_size = 2 << 20}));
	/* the file, written once, its preallocated part, all durable */
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = inner}, &fs));
	struct fs_inode *root, *ip;
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(root, "f", 1, &ca, &ip, NULL));
	uint8_t *zero = xcalloc(1, REGION);
	CHECK_OK(fs_write(ip, 0, zero, REGION, NULL));
	CHECK_OK(fs_fallocate(ip, FS_FALLOC_ALLOC | FS_FALLOC_KEEP_SIZE, APPEND_AT * 2,
			      OPS * 8192, NULL));
	CHECK_OK(fs_fallocate(ip, FS_FALLOC_ALLOC, FALLOC_AT, OPS * 8192, NULL));
	free(zero);
	fs_iput(ip);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	uint8_t *durable = xmalloc(IMG);
	dev_mem_copy_out(inner, durable);

	/* the race, recorded */
	CHECK_OK(crashdev_create(inner, CRASHDEV_RECORD, &cd));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = cd}, &fs));
	CHECK_OK(fs_root(fs, &root));
	struct shared s = {.fs = fs, .cd = cd};
	pthread_mutex_init(&s.lock, NULL);
	s.cover = xcalloc(MAX_SYNCS, sizeof(*s.cover));
	CHECK_OK(fs_lookup(root, "f", 1, &s.ip));
	pthread_t wt[WRITERS], st[SYNCERS];
	struct warg wa[WRITERS], sa[SYNCERS];
	for (unsigned i = 0; i < SYNCERS; i++) {
		sa[i] = (struct warg){&s, i};
		pthread_create(&st[i], NULL, syncer, &sa[i]);
	}
	for (unsigned i = 0; i < WRITERS; i++) {
		wa[i] = (struct warg){&s, i};
		pthread_create(&wt[i], NULL, writer, &wa[i]);
	}
	for (unsigned i = 0; i < WRITERS; i++)
		pthread_join(wt[i], NULL);
	atomic_store(&s.stop, true);
	for (unsigned i = 0; i < SYNCERS; i++)
		pthread_join(st[i], NULL);
	fs_iput(s.ip);
	fs_iput(root);
	fs_shutdown(fs, "end of recorded race");
	fs_unmount(fs);
	printf("race: %u syncs overlapped %u writes\n", s.nsyncs, WRITERS * OPS);
	CHECK(s.nsyncs > 20);

	/* a power cut at the return of every sync */
	size_t nev = crashdev_nevents(cd);
	const struct crash_event *ev = crashdev_events(cd);
	struct crash_replay rp = {.ev = ev};
	unsigned cuts = 0, violations = 0, marks = 0;
	for (size_t pt = 0; pt < nev; pt++) {
		if (ev[pt].type != CRASH_EV_MARK || ev[pt].tag == UINT64_MAX)
			continue;
		if (marks++ % every)
			continue;
		size_t from = crash_replay_to(&rp, pt, durable);
		for (uint64_t seed = 0; seed < 2; seed++) {
			struct dev *img;
			CHECK_OK(dev_mem_create(IMG, durable, &img));
			struct crash_cut_stats cst = {0};
			crash_apply_cut(ev, from, pt, img, 512, pt * 2 + seed, &cst);
			CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = img}, &fs));
			violations += verify(fs, s.cover[ev[pt].tag], ev[pt].tag);
			CHECK_OK(fs_unmount(fs));
			dev_close(img);
			cuts++;
		}
	}
	printf("power cuts at sync returns: %u, violations: %u\n", cuts, violations);
	CHECK_EQ(violations, 0);
	free(s.cover);
	free(durable);
	dev_close(cd);
	dev_close(inner);
	TEST_PASS("syncs racing commits");
	return 0;
}
