/*
 * test_fs_readahead.c - the engine's readahead windows (src/fs/readahead.c,
 * R1-R8).
 *
 *   1. Sequential 64 KiB reads of a 4 MiB file: the data, one fill per
 *      MiB, each after the first made ahead by the read in the middle of
 *      the window before (R8), and hits for the rest (R5); with readahead
 *      off, no fill; random
 *      4 KiB reads of a 1 MiB file between writes fill none.
 *   2. Coherency (R2, R3): a window filled, then the file changed inside
 *      it (fs_write, fs_write_sync, a punched hole, truncate and regrow):
 *      the next reads return the new data and count the window stale.
 *   3. Four readers read their files sequentially while two writers
 *      overwrite random blocks with (file, block, version) patterns: every
 *      word a read returns is of a version at least as new as the newest
 *      whose fs_write had returned before the read started (what NFS
 *      promises: a READ after a WRITE reply sees it), and no newer than
 *      any issued.
 *   4. Layouts (R4): with one held, reads bypass the windows; a device
 *      write by the holder is seen by the reads after the layout's return,
 *      though a window held the old data before the grant.
 *   5. Streams (R8): 12 and then 16 files read in 64 KiB reads, round
 *      robin in lockstep on 3 and 4 threads, more streams than half the
 *      windows: a prefetch takes no window from another stream, so each
 *      MiB is filled about once and nearly every read hits.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/msg.h"
#include "base/rand.h"
#include "check.h"
#include "dev/dev.h"
#include "fs/fs.h"

#define MIB   (1u << 20)
#define KIB64 (64u << 10)
#define BLK   4096u

struct rig {
	struct dev *dev;
	struct fs *fs;
	struct fs_inode *root;
};

static uint64_t counter(struct fs *fs, const char *name)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	fs_stats(fs, &s);
	return stat_table_get(&t, name);
}

/* windows per mount: fewer than the default, so that the streams of 5
 * outnumber half of them (R6) */
#define RA_WINDOWS 16u

static void rig_up_size(struct rig *r, bool ra_off, uint64_t dev_bytes)
{
	CHECK_OK(dev_mem_create(dev_bytes, NULL, &r->dev));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = r->dev}));
	CHECK_OK(
		fs_mount(&(struct fs_mount_opts){.ddev = r->dev,
						 .readahead_off = ra_off,
						 .readahead_windows = RA_WINDOWS},
			 &r->fs));
	CHECK_OK(fs_root(r->fs, &r->root));
}

static void rig_up(struct rig *r, bool ra_off)
{
	rig_up_size(r, ra_off, 64 * MIB);
}

static void rig_down(struct rig *r)
{
	fs_iput(r->root);
	CHECK_OK(fs_unmount(r->fs));
	dev_close(r->dev);
}

static struct fs_inode *create(struct rig *r, const char *name)
{
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	struct fs_inode *ip;
	CHECK_OK(fs_create(r->root, name, strlen(name), &ca, &ip, NULL));
	return ip;
}

/* Block b of file f at version v: every word (f << 48 | b << 24 | v). */
static void pattern(uint8_t *p, unsigned f, uint64_t b, uint32_t v)
{
	uint64_t w = (uint64_t)f << 48 | b << 24 | v;
	for (unsigned i = 0; i < BLK; i += 8)
		memcpy(p + i, &w, 8);
}

/* Write blocks [0, nblk) of f at version 1; model (if not NULL) gets them. */
static void fill_file(struct fs_inode *ip, unsigned f, uint64_t nblk, uint8_t *model)
{
	uint8_t *buf = malloc(MIB);
	for (uint64_t b = 0; b < nblk; b += MIB / BLK) {
		uint64_t n = MIN(nblk - b, (uint64_t)MIB / BLK);
		for (uint64_t i = 0; i < n; i++)
			pattern(buf + i * BLK, f, b + i, 1);
		CHECK_OK(fs_write(ip, b * BLK, buf, n * BLK, NULL));
		if (model)
			memcpy(model + b * BLK, buf, n * BLK);
	}
	free(buf);
}

/* Read [off, off+len) and compare it with model. */
static void read_check(struct fs_inode *ip, uint64_t off, size_t len, const uint8_t *model)
{
	uint8_t *buf = malloc(len);
	size_t got;
	bool eof;
	CHECK_OK(fs_read(ip, off, buf, len, &got, &eof));
	CHECK_EQ(got, len);
	CHECK(memcmp(buf, model + off, len) == 0);
	free(buf);
}

/* A rig with one file "f" of size bytes at version 1, its model in *model. */
static struct fs_inode *rig_file(struct rig *r, bool ra_off, uint64_t size, uint8_t **model)
{
	rig_up(r, ra_off);
	struct fs_inode *ip = create(r, "f");
	*model = malloc(size);
	fill_file(ip, 1, size / BLK, *model);
	return ip;
}

static void rig_file_down(struct rig *r, struct fs_inode *ip, uint8_t *model)
{
	free(model);
	fs_iput(ip);
	rig_down(r);
}

static void test_sequential(bool ra_off)
{
	struct rig r;
	uint8_t *model;
	struct fs_inode *ip = rig_file(&r, ra_off, 4 * MIB, &model);
	uint64_t fills = counter(r.fs, "fs.ra_fills"), hits = counter(r.fs, "fs.ra_hits");
	uint64_t pre = counter(r.fs, "fs.ra_prefetches");
	for (uint64_t off = 0; off < 4 * MIB; off += KIB64)
		read_check(ip, off, KIB64, model);
	/* the first read fills the first window; the read in the middle of
	 * each window fills the next one (R8), so every later read hits */
	CHECK_EQ(counter(r.fs, "fs.ra_fills") - fills, ra_off ? 0 : 4);
	CHECK_EQ(counter(r.fs, "fs.ra_prefetches") - pre, ra_off ? 0 : 3);
	CHECK_EQ(counter(r.fs, "fs.ra_hits") - hits, ra_off ? 0 : 63);
	/* 1 MiB reads never use the windows */
	fills = counter(r.fs, "fs.ra_fills");
	for (uint64_t off = 0; off < 4 * MIB; off += MIB)
		read_check(ip, off, MIB, model);
	CHECK_EQ(counter(r.fs, "fs.ra_fills"), fills);
	rig_file_down(&r, ip, model);
	TEST_PASS(ra_off ? "sequential reads, readahead off: no windows"
			 : "sequential 64 KiB reads: 4 fills (3 ahead), 63 hits, the data");
}

/* 4 KiB reads of a 1 MiB file, each 37 blocks on from the last (mod 256),
 * with a write between them: none fills a window (R5). */
static void test_random(void)
{
	struct rig r;
	uint8_t *model;
	struct fs_inode *ip = rig_file(&r, false, MIB, &model);
	uint8_t *blk = malloc(BLK);
	for (unsigned i = 1; i < 256; i++) {
		uint64_t b = i * 37 % 256;
		read_check(ip, b * BLK, BLK, model);
		pattern(blk, 1, b, 2);
		CHECK_OK(fs_write(ip, b * BLK, blk, BLK, NULL));
		memcpy(model + b * BLK, blk, BLK);
	}
	CHECK_EQ(counter(r.fs, "fs.ra_fills"), 0);
	free(blk);
	rig_file_down(&r, ip, model);
	TEST_PASS("random 4 KiB reads of a small file fill no window");
}

static void test_sequential_both(void)
{
	test_sequential(false);
	test_sequential(true);
	test_random();
}

enum change { CH_WRITE, CH_WRITE_SYNC, CH_PUNCH, CH_TRUNCATE, CH_N };
static const char *const change_name[CH_N] = {"fs_write", "fs_write_sync", "punched hole",
					      "truncate and regrow"};

static void test_coherency(void)
{
	struct rig r;
	uint8_t *model;
	struct fs_inode *ip = rig_file(&r, false, 4 * MIB, &model);
	uint8_t *buf = malloc(KIB64);
	for (int k = 0; k < CH_N; k++) {
		/* a window over [0, 1 MiB): filled or found, then a hit */
		read_check(ip, 0, KIB64, model);
		uint64_t hits = counter(r.fs, "fs.ra_hits");
		read_check(ip, KIB64, KIB64, model);
		CHECK_EQ(counter(r.fs, "fs.ra_hits"), hits + 1);
		uint64_t stale = counter(r.fs, "fs.ra_stale");
		/* the change, inside the window */
		uint64_t at = 2 * KIB64 + (uint64_t)k * BLK;
		switch ((enum change)k) {
		case CH_WRITE:
		case CH_WRITE_SYNC:
			for (unsigned i = 0; i < KIB64 / BLK; i++)
				pattern(buf + i * BLK, 1, at / BLK + i, 2 + (uint32_t)k);
			if (k == CH_WRITE) {
				CHECK_OK(fs_write(ip, at, buf, KIB64, NULL));
			} else {
				bool logged;
				CHECK_OK(fs_write_sync(ip, at, buf, KIB64, NULL, &logged));
			}
			memcpy(model + at, buf, KIB64);
			break;
		case CH_PUNCH:
			CHECK_OK(fs_fallocate(ip, FS_FALLOC_PUNCH, at, KIB64, NULL));
			memset(model + at, 0, KIB64);
			break;
		case CH_TRUNCATE:
			CHECK_OK(fs_setattr(
				ip, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = at}, NULL));
			CHECK_OK(fs_setattr(
				ip, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = 4 * MIB},
				NULL));
			memset(model + at, 0, 4 * MIB - at);
			break;
		case CH_N:
			break;
		}
		/* from the start again: sequential, and the window is stale */
		for (uint64_t off = 0; off < MIB; off += KIB64)
			read_check(ip, off, KIB64, model);
		if (counter(r.fs, "fs.ra_stale") <= stale) {
			fprintf(stderr, "after %s: no stale window\n", change_name[k]);
			exit(1);
		}
	}
	free(buf);
	rig_file_down(&r, ip, model);
	TEST_PASS("a window goes stale on a write, a sync write, a punch, a truncate");
}

/* ---- 3: readers and writers ---- */

#define FILES	4 /* one per reader */
#define WRITERS 2
#define SBLKS	512u /* 2 MiB files */
#define PASSES	6
#define WOPS	1500

struct stress {
	struct fs *fs;
	struct fs_inode *ip[FILES];
	/* per file and block: the last version whose fs_write returned, and
	 * the last version handed out (writer w owns blocks b % WRITERS == w,
	 * so a block's versions reach the file in order) */
	_Atomic uint32_t done[FILES][SBLKS], issued[FILES][SBLKS];
	_Atomic unsigned readers_left;
	_Atomic uint64_t words_checked;
};

struct targ {
	struct stress *s;
	unsigned id;
};

static void *stress_writer(void *arg)
{
	struct targ *a = arg;
	struct stress *s = a->s;
	struct rng r;
	rng_seed(&r, 100 + a->id);
	uint8_t *buf = malloc(BLK);
	for (unsigned op = 0; op < WOPS && atomic_load(&s->readers_left); op++) {
		unsigned f = (unsigned)(rng_next(&r) % FILES);
		uint64_t b = rng_next(&r) % (SBLKS / WRITERS) * WRITERS + a->id;
		uint32_t v = atomic_fetch_add(&s->issued[f][b], 1) + 1;
		pattern(buf, f, b, v);
		CHECK_OK(fs_write(s->ip[f], b * BLK, buf, BLK, NULL));
		atomic_store(&s->done[f][b], v);
		/* give the readers windows to hit between changes */
		usleep(100);
	}
	free(buf);
	return NULL;
}

static void *stress_reader(void *arg)
{
	struct targ *a = arg;
	struct stress *s = a->s;
	unsigned f = a->id;
	uint8_t *buf = malloc(KIB64);
	uint32_t floor[KIB64 / BLK];
	for (unsigned pass = 0; pass < PASSES; pass++) {
		for (uint64_t off = 0; off < SBLKS * BLK; off += KIB64) {
			uint64_t b0 = off / BLK;
			for (unsigned i = 0; i < KIB64 / BLK; i++)
				floor[i] = atomic_load(&s->done[f][b0 + i]);
			size_t got;
			bool eof;
			CHECK_OK(fs_read(s->ip[f], off, buf, KIB64, &got, &eof));
			CHECK_EQ(got, KIB64);
			for (unsigned i = 0; i < KIB64 / BLK; i++) {
				uint32_t top = atomic_load(&s->issued[f][b0 + i]);
				for (unsigned w = 0; w < BLK; w += 8) {
					uint64_t word;
					memcpy(&word, buf + i * BLK + w, 8);
					uint32_t v = (uint32_t)(word & 0xffffff);
					if (word >> 48 != f || (word >> 24 & 0xffffff) != b0 + i ||
					    v < floor[i] || v > top) {
						fprintf(stderr,
							"file %u block %llu: read version %u (word "
							"%llx), written before the read: %u, "
							"issued: %u\n",
							f, (unsigned long long)(b0 + i), v,
							(unsigned long long)word, floor[i], top);
						exit(1);
					}
				}
			}
			atomic_fetch_add(&s->words_checked, KIB64 / 8);
		}
	}
	free(buf);
	atomic_fetch_sub(&s->readers_left, 1);
	return NULL;
}

/* One run of readers and writers; whether writes made a window stale
 * (they do unless the scheduler kept the writers from running while a
 * window was read: a loaded machine did, once in a few hundred runs). */
static bool stress_once(void)
{
	struct rig r;
	rig_up(&r, false);
	struct stress *s = calloc(1, sizeof(*s));
	s->fs = r.fs;
	for (unsigned f = 0; f < FILES; f++) {
		char name[8];
		snprintf(name, sizeof(name), "s%u", f);
		s->ip[f] = create(&r, name);
		fill_file(s->ip[f], f, SBLKS, NULL);
		for (unsigned b = 0; b < SBLKS; b++)
			atomic_store(&s->done[f][b], 1), atomic_store(&s->issued[f][b], 1);
	}
	atomic_store(&s->readers_left, FILES);
	uint64_t hits = counter(r.fs, "fs.ra_hits"), stale = counter(r.fs, "fs.ra_stale");
	pthread_t th[FILES + WRITERS];
	struct targ args[FILES + WRITERS];
	for (unsigned i = 0; i < FILES + WRITERS; i++) {
		args[i] = (struct targ){s, i < FILES ? i : i - FILES};
		CHECK_OK(pthread_create(&th[i], NULL, i < FILES ? stress_reader : stress_writer,
					&args[i]));
	}
	for (unsigned i = 0; i < FILES + WRITERS; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(atomic_load(&s->words_checked), (uint64_t)FILES * PASSES * SBLKS * BLK / 8);
	/* windows served reads */
	CHECK(counter(r.fs, "fs.ra_hits") > hits);
	bool made_stale = counter(r.fs, "fs.ra_stale") > stale;
	for (unsigned f = 0; f < FILES; f++)
		fs_iput(s->ip[f]);
	free(s);
	rig_down(&r);
	return made_stale;
}

static void test_stress(void)
{
	/* both paths ran: writes made some window stale, in one of a few
	 * runs (every run checks every read) */
	unsigned runs = 1;
	while (!stress_once()) {
		CHECK(runs < 4);
		runs++;
	}
	if (runs > 1)
		printf("readers and writers: windows made stale in run %u\n", runs);
	TEST_PASS("readers and writers: every read sees each write returned before it");
}

/* ---- 4: layouts ---- */

static void test_layout(void)
{
	struct rig r;
	uint8_t *model;
	struct fs_inode *ip = rig_file(&r, false, 2 * MIB, &model);
	/* a window over [0, 1 MiB) before the grant */
	read_check(ip, 0, KIB64, model);
	CHECK_EQ(counter(r.fs, "fs.ra_fills"), 1);

	uint64_t id;
	CHECK_OK(fs_layout_get(ip, 7, 0, UINT64_MAX, true, &id));
	uint64_t fills = counter(r.fs, "fs.ra_fills"), hits = counter(r.fs, "fs.ra_hits");
	/* the holder writes the device directly, as a pNFS client does */
	struct fs_map m;
	unsigned n;
	CHECK_OK(fs_map_blocks(ip, KIB64, BLK, false, &m, 1, &n));
	CHECK_EQ(n, 1);
	uint8_t *blk = malloc(BLK);
	pattern(blk, 1, KIB64 / BLK, 9);
	CHECK_OK(dev_write(fs_data_dev(r.fs), blk, BLK, m.addr, 0));
	memcpy(model + KIB64, blk, BLK);
	for (uint64_t off = KIB64; off < 2 * MIB; off += KIB64)
		read_check(ip, off, KIB64, model);
	CHECK_EQ(counter(r.fs, "fs.ra_fills"), fills);
	CHECK_EQ(counter(r.fs, "fs.ra_hits"), hits);

	fs_layout_return(ip, 7, 0, UINT64_MAX, FS_LAYOUT_ANY);
	/* the window of before the grant is stale: the holder's write is read */
	for (uint64_t off = 0; off < 2 * MIB; off += KIB64)
		read_check(ip, off, KIB64, model);
	CHECK(counter(r.fs, "fs.ra_fills") > fills);
	CHECK(counter(r.fs, "fs.ra_hits") > hits);
	free(blk);
	rig_file_down(&r, ip, model);
	TEST_PASS("a layout: reads bypass the windows, and see the holder's writes after");
}

/* ---- 5: more streams than half the windows ---- */

#define SFILE_MIB  4u  /* each stream's file */
#define SROUNDS	   (SFILE_MIB * MIB / KIB64)

/* Streams read their files in lockstep rounds: in each, every stream reads
 * its next 64 KiB, each thread taking nstreams / nthreads of them in turn,
 * and no thread starts the next round before all have ended this one. */
struct streams {
	struct fs_inode *ip[RA_WINDOWS];
	unsigned nstreams, nthreads;
	pthread_barrier_t round;
};

struct sarg {
	struct streams *g;
	unsigned id;
};

static void *streams_reader(void *arg)
{
	struct sarg *a = arg;
	struct streams *g = a->g;
	uint8_t *buf = malloc(KIB64);
	for (unsigned n = 0; n < SROUNDS; n++) {
		uint64_t off = (uint64_t)n * KIB64;
		for (unsigned f = a->id; f < g->nstreams; f += g->nthreads) {
			size_t got;
			bool eof;
			CHECK_OK(fs_read(g->ip[f], off, buf, KIB64, &got, &eof));
			CHECK_EQ(got, KIB64);
			for (unsigned i = 0; i < KIB64; i += BLK) {
				uint64_t word, want = (uint64_t)f << 48 | (off + i) / BLK << 24 | 1;
				memcpy(&word, buf + i, 8);
				CHECK_EQ(word, want);
			}
		}
		pthread_barrier_wait(&g->round);
	}
	free(buf);
	return NULL;
}

/*
 * More streams than half the windows leave too few empty ones for each to
 * have its next MiB prefetched. A prefetch that took the least recently
 * used window took one another stream was reading from (or had had
 * prefetched and not reached yet): that stream missed, filled a window
 * again, and took the next stream's. R8 takes only a window the stream has
 * read past or an empty one, so each MiB of a file is read into a window
 * about once, at most half again (a demand fill may still take a window
 * prefetched for a stream that has not reached it). 12 streams of 4 MiB
 * on 3 threads: 53-60 fills and 720-727 hits of 768 reads; 16 streams: 64
 * fills, 960 hits of 1024 on 4 threads. With the least recently used
 * window: 261-297 fills and 586-615 hits; 440-444 fills and 685-698 hits.
 */
static void test_streams_n(unsigned nstreams, unsigned nthreads)
{
	struct rig r;
	rig_up_size(&r, false, 128 * MIB);
	struct streams g = {.nstreams = nstreams, .nthreads = nthreads};
	for (unsigned f = 0; f < nstreams; f++) {
		char name[16];
		snprintf(name, sizeof(name), "r%u", f);
		g.ip[f] = create(&r, name);
		fill_file(g.ip[f], f, SFILE_MIB * MIB / BLK, NULL);
	}
	pthread_barrier_init(&g.round, NULL, nthreads);
	uint64_t fills = counter(r.fs, "fs.ra_fills"), hits = counter(r.fs, "fs.ra_hits");
	uint64_t stale = counter(r.fs, "fs.ra_stale");
	pthread_t th[RA_WINDOWS];
	struct sarg args[RA_WINDOWS];
	for (unsigned t = 0; t < nthreads; t++) {
		args[t] = (struct sarg){&g, t};
		CHECK_OK(pthread_create(&th[t], NULL, streams_reader, &args[t]));
	}
	for (unsigned t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	fills = counter(r.fs, "fs.ra_fills") - fills;
	hits = counter(r.fs, "fs.ra_hits") - hits;
	uint64_t once = (uint64_t)nstreams * SFILE_MIB, reads = (uint64_t)nstreams * SROUNDS;
	if (fills > once * 3 / 2 || hits < reads - once * 3 / 2) {
		fprintf(stderr,
			"%u streams of %u MiB on %u threads: %llu fills, %llu hits of %llu "
			"reads: windows taken from readers\n",
			nstreams, SFILE_MIB, nthreads, (unsigned long long)fills,
			(unsigned long long)hits, (unsigned long long)reads);
		exit(1);
	}
	/* nothing wrote: no window went stale */
	CHECK_EQ(counter(r.fs, "fs.ra_stale"), stale);
	pthread_barrier_destroy(&g.round);
	for (unsigned f = 0; f < nstreams; f++)
		fs_iput(g.ip[f]);
	rig_down(&r);
}

static void test_streams(void)
{
	test_streams_n(12, 3);
	test_streams_n(RA_WINDOWS, 4);
	TEST_PASS("12 and 16 streams: each MiB filled about once, no window taken from a reader");
}

/* With arguments, only the parts named: sequential, coherency, stress,
 * layout, streams. */
int main(int argc, char **argv)
{
	msg_set_level(MSG_ERR);
	static const struct {
		const char *name;
		void (*fn)(void);
	} parts[] = {{"sequential", test_sequential_both},
		     {"coherency", test_coherency},
		     {"stress", test_stress},
		     {"layout", test_layout},
		     {"streams", test_streams}};
	for (unsigned i = 0; i < ARRAY_SIZE(parts); i++) {
		bool run = argc == 1;
		for (int a = 1; a < argc; a++)
			run |= strcmp(argv[a], parts[i].name) == 0;
		if (run)
			parts[i].fn();
	}
	return 0;
}
