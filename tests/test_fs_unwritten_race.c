/*
 * test_fs_unwritten_race.c - writes into unwritten blocks under the shared
 * I/O lock, racing the calls that take blocks out of the file (src/fs/file.c,
 * write_unwritten).
 *
 * A whole-block write into allocated, unwritten blocks inside the file puts
 * its data on the device under the shared I/O lock and converts the blocks
 * under the exclusive one. In between, a punch may free the blocks, the
 * space may be allocated again (to this file at other device blocks, or to
 * another file), and written: converting then would show whatever those
 * device blocks held. The writer must notice and write again.
 *
 * Three writers fill blocks of one fallocated file A with blocks that name
 * their file and offset. A fourth thread punches ranges of A and fallocates
 * them again, or zeroes them; a fifth writes file B with its own blocks and
 * punches it, so that device blocks move between the two files all the time.
 * At the end every block of A and B reads as zeros or as one of its own
 * blocks for that offset (never B's in A, never a block of A from another
 * offset), the engine's checker finds nothing, and the counters show that
 * the shared path ran and that some writers had to write again (the race
 * was run). Without the check of i_unmap_gen, A shows stale blocks here.
 *
 *   test-fs-unwritten-race [--seconds S]   (default 4; runs until the
 *                                           race has been seen 20 times or
 *                                           S seconds have passed)
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/rand.h"
#include "base/time.h"
#include "check.h"
#include "dev/dev.h"
#include "fs/fs.h"
#include "fs_stress_util.h"

#define MIB       (1u << 20)
#define BLK       4096u
#define A_BLOCKS  768u /* 3 MiB: one region of 256 blocks per writer */
#define WRITERS   3
#define B_BLOCKS  1024u
#define WANT_REDO 20

struct blk_tag {
	uint64_t magic; /* TAG_A or TAG_B */
	uint64_t off;   /* the file offset the block was written at */
	uint64_t seq;
};
#define TAG_A 0x4141414141414141ull
#define TAG_B 0x4242424242424242ull

struct shared {
	struct fs *fs;
	struct fs_inode *a, *b;
	_Atomic bool stop;
	_Atomic uint64_t writes, punches;
};

struct warg {
	struct shared *s;
	unsigned w;
};

static void fill(uint8_t *buf, uint64_t magic, uint64_t off, uint64_t seq)
{
	struct blk_tag t = {magic, off, seq};
	memset(buf, (int)(off / BLK) & 0xff, BLK);
	memcpy(buf, &t, sizeof(t));
}

static void *writer(void *p)
{
	struct warg *wa = p;
	struct shared *s = wa->s;
	struct rng r;
	rng_seed(&r, 100 + wa->w);
	uint8_t *buf = xmalloc_aligned(BLK, BLK);
	for (uint64_t seq = 1; !atomic_load(&s->stop); seq++) {
		uint64_t blk = wa->w * (A_BLOCKS / WRITERS) + rng_below(&r, A_BLOCKS / WRITERS);
		fill(buf, TAG_A, blk * BLK, seq);
		CHECK_OK(fs_write(s->a, blk * BLK, buf, BLK, NULL));
		atomic_fetch_add(&s->writes, 1);
	}
	free(buf);
	return NULL;
}

/* Punch ranges of A and allocate them again (unwritten, at whatever device
 * blocks are free now), or zero them. */
static void *puncher(void *p)
{
	struct shared *s = p;
	struct rng r;
	rng_seed(&r, 7);
	while (!atomic_load(&s->stop)) {
		uint64_t first = rng_below(&r, A_BLOCKS), n = 1 + rng_below(&r, 16);
		n = MIN(n, A_BLOCKS - first);
		if (rng_below(&r, 4) == 0) {
			CHECK_OK(fs_fallocate(s->a, FS_FALLOC_ZERO | FS_FALLOC_KEEP_SIZE, first * BLK,
					      n * BLK, NULL));
		} else {
			CHECK_OK(fs_fallocate(s->a, FS_FALLOC_PUNCH | FS_FALLOC_KEEP_SIZE,
					      first * BLK, n * BLK, NULL));
			CHECK_OK(fs_fallocate(s->a, FS_FALLOC_ALLOC | FS_FALLOC_KEEP_SIZE,
					      first * BLK, n * BLK, NULL));
		}
		atomic_fetch_add(&s->punches, 1);
	}
	return NULL;
}

/* File B: its own blocks written over holes, punched again, so that device
 * blocks A gave up become B's and the other way round. */
static void *b_writer(void *p)
{
	struct shared *s = p;
	struct rng r;
	rng_seed(&r, 9);
	uint8_t *buf = xmalloc_aligned(BLK, 8 * BLK);
	for (uint64_t seq = 1; !atomic_load(&s->stop); seq++) {
		uint64_t first = rng_below(&r, B_BLOCKS - 8);
		if (rng_below(&r, 3) == 0) {
			CHECK_OK(fs_fallocate(s->b, FS_FALLOC_PUNCH | FS_FALLOC_KEEP_SIZE,
					      first * BLK, 8 * BLK, NULL));
			continue;
		}
		for (unsigned i = 0; i < 8; i++)
			fill(buf + i * BLK, TAG_B, (first + i) * BLK, seq);
		CHECK_OK(fs_write(s->b, first * BLK, buf, 8 * BLK, NULL));
	}
	free(buf);
	return NULL;
}

static uint64_t counter(struct fs *fs, const char *name)
{
	struct stat_table t;
	struct stat_sink sink = stat_sink_table(&t);
	fs_stats(fs, &sink);
	return stat_table_get(&t, name);
}

/* Every block of ip: zeros, or a block of this file (magic) written at this
 * offset. */
static void check_file(struct fs_inode *ip, uint64_t blocks, uint64_t magic, const char *name)
{
	uint8_t *buf = xmalloc_aligned(BLK, BLK), zero[BLK] = {0};
	for (uint64_t blk = 0; blk < blocks; blk++) {
		size_t n;
		bool eof;
		CHECK_OK(fs_read(ip, blk * BLK, buf, BLK, &n, &eof));
		CHECK_EQ(n, BLK);
		if (!memcmp(buf, zero, BLK))
			continue;
		struct blk_tag t;
		memcpy(&t, buf, sizeof(t));
		uint8_t want[BLK];
		fill(want, magic, blk * BLK, t.seq);
		if (memcmp(buf, want, BLK)) {
			fprintf(stderr,
				"%s block %llu is stale: magic %016llx written at offset %llu\n",
				name, (unsigned long long)blk, (unsigned long long)t.magic,
				(unsigned long long)t.off);
			CHECK(0);
		}
	}
	free(buf);
}

int main(int argc, char **argv)
{
	unsigned seconds = 4;
	int c;
	while ((c = getopt_long(argc, argv, "",
				(const struct option[]){{"seconds", required_argument, NULL, 's'},
							{0}},
				NULL)) != -1) {
		if (c != 's')
			return 2;
		seconds = (unsigned)atoi(optarg);
	}

	struct dev *d;
	CHECK_OK(dev_mem_create(64 * MIB, NULL, &d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d}));
	struct shared s = {0};
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &s.fs));
	struct fs_inode *root;
	CHECK_OK(fs_root(s.fs, &root));
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(root, "a", 1, &ca, &s.a, NULL));
	CHECK_OK(fs_create(root, "b", 1, &ca, &s.b, NULL));
	CHECK_OK(fs_fallocate(s.a, FS_FALLOC_ALLOC, 0, (uint64_t)A_BLOCKS * BLK, NULL));
	CHECK_OK(fs_fallocate(s.b, FS_FALLOC_ALLOC, 0, (uint64_t)B_BLOCKS * BLK, NULL));

	pthread_t th[WRITERS + 2];
	struct warg wa[WRITERS];
	for (unsigned w = 0; w < WRITERS; w++) {
		wa[w] = (struct warg){&s, w};
		CHECK_EQ(pthread_create(&th[w], NULL, writer, &wa[w]), 0);
	}
	CHECK_EQ(pthread_create(&th[WRITERS], NULL, puncher, &s), 0);
	CHECK_EQ(pthread_create(&th[WRITERS + 1], NULL, b_writer, &s), 0);
	uint64_t until = now_ns() + (uint64_t)seconds * NSEC_PER_SEC;
	while (now_ns() < until && counter(s.fs, "fs.shared_conversion_redos") < WANT_REDO)
		sleep_ns(10 * NSEC_PER_MSEC);
	atomic_store(&s.stop, true);
	for (unsigned i = 0; i < WRITERS + 2; i++)
		pthread_join(th[i], NULL);

	uint64_t conv = counter(s.fs, "fs.shared_conversions");
	uint64_t redo = counter(s.fs, "fs.shared_conversion_redos");
	msg_info("test-fs-unwritten-race: %llu writes, %llu punches, %llu shared conversions, "
		 "%llu written again",
		 (unsigned long long)atomic_load(&s.writes), (unsigned long long)atomic_load(&s.punches),
		 (unsigned long long)conv, (unsigned long long)redo);
	check_file(s.a, A_BLOCKS, TAG_A, "a");
	check_file(s.b, B_BLOCKS, TAG_B, "b");
	CHECK(conv > 0);
	/* the race was run: some writer found its blocks gone */
	CHECK(redo > 0);

	fs_iput(s.a);
	fs_iput(s.b);
	fs_iput(root);
	CHECK_OK(fs_unmount(s.fs));
	fsu_check_clean(d);
	dev_close(d);
	return 0;
}
