/*
 * test_logged_data.c - small synchronous writes made durable through the
 * journal (docs/logged-data.md, src/log/data_item.h D1-D3).
 *
 *   1. Counting: an overwrite and an extending write of 4 KiB with
 *      fs_write_sync, each forced: one checkpoint (its FUA commit record)
 *      and no flush of the data device; reads see the data. With logged data
 *      off, the same writes are not logged and cost a flush.
 *   2. Replay never overwrites a later in-place write (D1): a logged write
 *      of a block, then an unlogged overwrite of it and fdatasync; power cut
 *      (many seeds): the overwrite is there. The same with the block freed
 *      and given to another file that writes it unlogged. And a truncate
 *      into the logged block: what stays is there, and the file grows
 *      again with zeros (the engine zeroes an EOF block's tail whenever the
 *      size grows over it, so the replayed image there is never seen).
 *   3. Direct writers (D3): a logged write, then a pNFS client maps the
 *      block for writing, writes it straight to the device and commits:
 *      after a power cut the client's data is there.
 *   4. After recovery: a logged write, a power cut, recovery (which replays
 *      it), an unlogged overwrite and fdatasync, a second power cut: the
 *      overwrite holds (the mount moves the tail past what it replayed).
 *   5. Log space: a write whose reservation is more than an eighth of the
 *      log is not logged; while logged data fills the CIL unforced, a
 *      metadata transaction never waits for log space.
 *   6. Streams: a synchronous write while another write of the same file
 *      is in flight (held on the device) is not logged, and does not wait
 *      for the other; alone again, the next one is logged.
 * The overwrite, reuse and layout cases fail (the older logged data comes
 * back) without the cancels.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <pthread.h>

#include "base/msg.h"
#include "check.h"
#include "dev/crashdev.h"
#include "fs/fs.h"
#include "flush_gate.h"
#include "fs_pattern.h"

#define MIB (1u << 20)

static uint64_t counter(struct fs *fs, const char *name)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	fs_stats(fs, &s);
	return stat_table_get(&t, name);
}

/* fs_write_sync of len bytes of v at off, forced as an NFS FILE_SYNC write
 * is (and flushed when the data was not logged); returns whether it was. */
static bool sync_write(struct fs *fs, struct fs_inode *ip, uint64_t off, uint64_t len, uint8_t v)
{
	uint8_t *buf = malloc(len);
	memset(buf, v, len);
	struct fs_result res = {0};
	bool logged, flushed = false;
	CHECK_OK(fs_write_sync(ip, off, buf, len, &res, &logged));
	free(buf);
	uint64_t seq = fs_sync_seq(ip, false);
	if (seq)
		CHECK_OK(fs_force(fs, seq, &flushed));
	if (!logged && !flushed)
		CHECK_OK(fs_flush_data(fs));
	return logged;
}

struct rig {
	struct dev *inner, *cd;
	struct fs *fs;
	struct fs_inode *root, *f;
};

static void rig_up(struct rig *r, bool crash, uint32_t ldata_max)
{
	CHECK_OK(dev_mem_create(64 * MIB, NULL, &r->inner));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = r->inner}));
	r->cd = r->inner;
	if (crash)
		CHECK_OK(crashdev_create(r->inner, 0, &r->cd));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = r->cd, .logged_data_max = ldata_max},
			  &r->fs));
	CHECK_OK(fs_root(r->fs, &r->root));
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(r->root, "f", 1, &ca, &r->f, NULL));
	write_pattern(r->f, 0, MIB, 0x11);
	CHECK_OK(fs_fsync(r->f, false, NULL));
	CHECK_OK(fs_fsync(r->root, false, NULL));
}

/* Power cut (crash rigs), then mount the inner device again. */
static void rig_cut_remount(struct rig *r, uint64_t seed)
{
	CHECK_OK(crashdev_powerfail(r->cd, seed, NULL));
	fs_shutdown(r->fs, "power cut");
	fs_iput(r->f);
	fs_iput(r->root);
	fs_unmount(r->fs);
	dev_close(r->cd);
	r->cd = r->inner;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = r->inner}, &r->fs));
	CHECK_OK(fs_root(r->fs, &r->root));
	CHECK_OK(fs_lookup(r->root, "f", 1, &r->f));
}

static void rig_down(struct rig *r)
{
	fs_iput(r->f);
	fs_iput(r->root);
	CHECK_OK(fs_unmount(r->fs));
	if (r->cd != r->inner)
		dev_close(r->cd);
	dev_close(r->inner);
}

struct snap {
	uint64_t ckpts, flushes;
};

static struct snap snap(struct fs *fs)
{
	return (struct snap){counter(fs, "log.checkpoints"), counter(fs, "dev.flushes")};
}

static void test_counting(void)
{
	for (int off = 0; off < 2; off++) {
		struct rig r;
		rig_up(&r, false, off ? FS_LOGGED_DATA_OFF : 0);
		struct snap a = snap(r.fs);
		bool logged = sync_write(r.fs, r.f, 8192, 4096, 0x22);
		struct snap b = snap(r.fs);
		printf("logged data %s: overwrite of 4 KiB, FILE_SYNC: logged %d, %llu "
		       "checkpoints, "
		       "%llu flushes\n",
		       off ? "off" : "on", logged, (unsigned long long)(b.ckpts - a.ckpts),
		       (unsigned long long)(b.flushes - a.flushes));
		CHECK_EQ(logged, !off);
		/* (unlogged, within a timestamp tick, no checkpoint at all) */
		CHECK_EQ(b.ckpts - a.ckpts, off ? b.ckpts - a.ckpts : 1);
		CHECK_EQ(b.flushes - a.flushes, off ? 1 : 0);
		check_pattern(r.f, 8192, 4096, 0x22);

		a = snap(r.fs);
		logged = sync_write(r.fs, r.f, MIB, 4096, 0x33);
		b = snap(r.fs);
		printf("logged data %s: extending write of 4 KiB, FILE_SYNC: logged %d, %llu "
		       "checkpoints, %llu flushes\n",
		       off ? "off" : "on", logged, (unsigned long long)(b.ckpts - a.ckpts),
		       (unsigned long long)(b.flushes - a.flushes));
		CHECK_EQ(logged, !off);
		CHECK_EQ(b.ckpts - a.ckpts, 1);
		CHECK_EQ(b.flushes - a.flushes, off ? 1 : 0);
		check_pattern(r.f, MIB, 4096, 0x33);
		CHECK_EQ(counter(r.fs, "fs.logged_writes"), off ? 0 : 2);
		rig_down(&r);
	}
	TEST_PASS("logged writes: one FUA log write, no flush");
}

/* 2 and 3: the later write must win after a power cut. */
enum later { LATER_OVERWRITE, LATER_TRUNCATE, LATER_REUSE, LATER_LAYOUT, LATER_N };
static const char *const later_name[LATER_N] = {
	"unlogged overwrite + fdatasync", "truncate into the block + fsync",
	"block freed, reused by another file's write", "pNFS client writes the block directly"};

static void test_later_write(enum later k)
{
	unsigned ok = 0;
	for (uint64_t seed = 1; seed <= 24; seed++) {
		struct rig r;
		rig_up(&r, true, 0);
		struct fs_inode *g = NULL;
		struct fs_create_args ca = {.mode = S_IFREG | 0644};
		struct fs_result res = {0};
		if (k == LATER_REUSE) {
			/* a file of its own, whose blocks the next file gets */
			CHECK_OK(fs_create(r.root, "g", 1, &ca, &g, &res));
			CHECK_OK(fs_force(r.fs, res.csn, NULL));
			CHECK(sync_write(r.fs, g, 0, 4096, 0x44));
			struct fs_map m;
			unsigned n;
			CHECK_OK(fs_map_blocks(g, 0, 4096, false, &m, 1, &n));
			fs_iput(g);
			CHECK_OK(fs_unlink(r.root, "g", 1, &res));
			CHECK_OK(fs_force(r.fs, res.csn, NULL));
			/* the freed block is reused once its free is durable */
			CHECK_OK(fs_create(r.root, "h", 1, &ca, &g, &res));
			CHECK_OK(fs_force(r.fs, res.csn, NULL));
			write_pattern(g, 0, 4096, 0x55);
			struct fs_map m2;
			CHECK_OK(fs_map_blocks(g, 0, 4096, false, &m2, 1, &n));
			if (seed == 1)
				printf("reuse: the logged block %llu, the new file's block %llu\n",
				       (unsigned long long)m.addr, (unsigned long long)m2.addr);
			CHECK_EQ(m.addr, m2.addr);
			CHECK_OK(fs_fsync(g, true, NULL));
		} else {
			/* the logged write, durable */
			CHECK(sync_write(r.fs, r.f, 65536, 4096, 0x44));
		}
		if (k == LATER_OVERWRITE) {
			write_pattern(r.f, 65536, 4096, 0x55);
			CHECK_OK(fs_fsync(r.f, true, NULL));
		} else if (k == LATER_TRUNCATE) {
			CHECK_OK(fs_setattr(
				r.f,
				&(struct fs_setattr){.mask = FS_SET_SIZE, .size = 65536 + 1024},
				NULL));
			CHECK_OK(fs_fsync(r.f, false, NULL));
		} else if (k == LATER_LAYOUT) {
			struct fs_map m;
			unsigned n;
			CHECK_OK(fs_map_blocks(r.f, 65536, 4096, true, &m, 1, &n));
			CHECK_EQ(m.state, FS_MAP_WRITTEN);
			uint8_t buf[4096];
			memset(buf, 0x55, sizeof(buf));
			CHECK_OK(dev_write(r.cd, buf, 4096, m.addr, 0));
			struct fs_range rg = {65536, 4096};
			CHECK_OK(fs_commit_blocks(r.f, &rg, 1, 0, NULL, NULL));
		}
		if (g)
			fs_iput(g);
		rig_cut_remount(&r, seed);
		bool bad = false;
		uint8_t buf[4096];
		size_t got;
		bool eof;
		if (k == LATER_REUSE) {
			CHECK_OK(fs_lookup(r.root, "h", 1, &g));
			CHECK_OK(fs_read(g, 0, buf, 4096, &got, &eof));
			bad = got != 4096 || buf[0] != 0x55 || buf[4095] != 0x55;
			fs_iput(g);
		} else if (k == LATER_TRUNCATE) {
			struct fs_attr at;
			CHECK_OK(fs_getattr(r.f, &at));
			CHECK_EQ(at.size, 65536 + 1024);
			CHECK_OK(fs_read(r.f, 65536, buf, 1024, &got, &eof));
			bad = got != 1024 || buf[0] != 0x44;
			/* the block's tail, zeroed in place, must not come back from
			 * the log when the file grows again */
			CHECK_OK(fs_setattr(
				r.f,
				&(struct fs_setattr){.mask = FS_SET_SIZE, .size = 65536 + 4096},
				NULL));
			CHECK_OK(fs_read(r.f, 65536 + 1024, buf, 3072, &got, &eof));
			bad = bad || got != 3072 || buf[0] != 0 || buf[3071] != 0;
		} else {
			CHECK_OK(fs_read(r.f, 65536, buf, 4096, &got, &eof));
			bad = got != 4096 || buf[0] != 0x55 || buf[4095] != 0x55;
		}
		if (bad)
			fprintf(stderr, "%s, seed %llu: the older logged data came back (0x%02x)\n",
				later_name[k], (unsigned long long)seed, buf[0]);
		CHECK(!bad);
		rig_down(&r);
		ok++;
	}
	printf("%s after a logged write, power cut: %u seeds, the later write held\n",
	       later_name[k], ok);
	TEST_PASS(later_name[k]);
}

/*
 * After a crash, recovery replays a logged write; the filesystem mounted on
 * the recovered device overwrites the block in place and fdatasyncs (a
 * flush, no log write); a second crash: the overwrite holds. (Fails if the
 * mount leaves the replayed checkpoints in front of the tail: nothing knows
 * them live any more.)
 */
static void test_after_recovery(void)
{
	for (uint64_t seed = 1; seed <= 8; seed++) {
		struct rig r;
		rig_up(&r, true, 0);
		CHECK(sync_write(r.fs, r.f, 65536, 4096, 0x44));
		CHECK_OK(crashdev_powerfail(r.cd, seed, NULL));
		fs_shutdown(r.fs, "power cut");
		fs_iput(r.f);
		fs_iput(r.root);
		fs_unmount(r.fs);
		dev_close(r.cd);
		/* recovered, on a crash device again for the second cut */
		CHECK_OK(crashdev_create(r.inner, 0, &r.cd));
		CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = r.cd}, &r.fs));
		CHECK_OK(fs_root(r.fs, &r.root));
		CHECK_OK(fs_lookup(r.root, "f", 1, &r.f));
		check_pattern(r.f, 65536, 4096, 0x44);
		write_pattern(r.f, 65536, 4096, 0x55);
		CHECK_OK(fs_fsync(r.f, true, NULL));
		rig_cut_remount(&r, seed + 100);
		uint8_t buf[4096];
		size_t got;
		bool eof;
		CHECK_OK(fs_read(r.f, 65536, buf, 4096, &got, &eof));
		if (buf[0] != 0x55)
			fprintf(stderr,
				"seed %llu: the replayed write came back over the later one\n",
				(unsigned long long)seed);
		CHECK_EQ(buf[0], 0x55);
		CHECK_EQ(buf[4095], 0x55);
		rig_down(&r);
	}
	printf("logged write, power cut, recovery, overwrite + fdatasync, power cut (8 seeds): "
	       "the overwrite held\n");
	TEST_PASS("a write after recovery is not overwritten by a second replay");
}

/* 5. Logged data keeps its hands off the log space metadata needs. */
static void test_space(void)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(64 * MIB, NULL, &d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d, .log_size = MIB}));
	struct fs *fs;
	CHECK_OK(fs_mount(
		&(struct fs_mount_opts){.ddev = d, .push_interval_ns = 3600ull * 1000000000}, &fs));
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(root, "f", 1, &ca, &f, NULL));
	write_pattern(f, 0, MIB, 0x11);
	CHECK_OK(fs_fsync(f, false, NULL));
	uint8_t *buf = calloc(1, 65536);
	struct fs_result res = {0};
	bool logged;
	/* 64 KiB would reserve more than an eighth of a 1 MiB log */
	CHECK_OK(fs_write_sync(f, 0, buf, 65536, &res, &logged));
	CHECK(!logged);
	/* many small ones, nobody forcing: the CIL fills with data until
	 * logging stops, and a create never waits for space */
	unsigned nlogged = 0;
	for (int i = 0; i < 400; i++) {
		CHECK_OK(fs_write_sync(f, (uint64_t)(i % 256) * 4096, buf, 4096, &res, &logged));
		nlogged += logged;
		if (i % 40 == 39) {
			char name[16];
			snprintf(name, sizeof(name), "m%d", i);
			struct fs_inode *m;
			CHECK_OK(fs_create(root, name, strlen(name), &ca, &m, NULL));
			fs_iput(m);
		}
	}
	printf("1 MiB log: 400 unforced 4 KiB sync writes, %u logged; waits for log space: %llu\n",
	       nlogged, (unsigned long long)counter(fs, "log.space_waits"));
	CHECK(nlogged > 0);
	CHECK_EQ(counter(fs, "log.space_waits"), 0);
	free(buf);
	fs_iput(f);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
	TEST_PASS("logged data never makes metadata wait for log space");
}

/* 6. The crash device holds the first write of HELD_LEN bytes until
 * released: the data write of an unstable write of the file. */
#define HELD_LEN (17 * 4096)
struct held {
	struct gate g;
	struct rig *r;
	bool done;
};

static void hold_write(void *arg, uint64_t off, size_t len)
{
	(void)off;
	struct held *h = arg;
	if (len != HELD_LEN)
		return;
	pthread_mutex_lock(&h->g.m);
	bool first = !h->g.entered;
	pthread_mutex_unlock(&h->g.m);
	if (first)
		gate_hook(&h->g);
}

static void *unstable_writer(void *arg)
{
	struct held *h = arg;
	write_pattern(h->r->f, 0, HELD_LEN, 0x66);
	return NULL;
}

static void *sync_writer(void *arg)
{
	struct held *h = arg;
	bool logged = sync_write(h->r->fs, h->r->f, 512 * 1024, 65536, 0x77);
	CHECK(!logged);
	__atomic_store_n(&h->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void test_concurrent(void)
{
	struct rig r;
	rig_up(&r, true, 0);
	struct held h = {.g = GATE_INIT, .r = &r};
	crashdev_set_write_hook(r.cd, hold_write, &h);
	pthread_t a, b;
	CHECK_EQ(pthread_create(&a, NULL, unstable_writer, &h), 0);
	WAIT_FOR(gate_entered(&h.g) == 1);
	uint64_t before = counter(r.fs, "fs.logged_writes");
	/* the write in flight holds the shared I/O lock: a logged write
	 * (exclusive) would wait for it, so the sync write must finish first */
	CHECK_EQ(pthread_create(&b, NULL, sync_writer, &h), 0);
	WAIT_FOR(__atomic_load_n(&h.done, __ATOMIC_ACQUIRE));
	CHECK_EQ(pthread_join(b, NULL), 0);
	CHECK_EQ(counter(r.fs, "fs.logged_writes"), before);
	CHECK_EQ(counter(r.fs, "fs.logged_concurrent"), 1);
	gate_release(&h.g, 1);
	CHECK_EQ(pthread_join(a, NULL), 0);
	check_pattern(r.f, 0, HELD_LEN, 0x66);
	check_pattern(r.f, 512 * 1024, 65536, 0x77);
	/* alone (and away from the last one's end, not a stream's): logged */
	CHECK(sync_write(r.fs, r.f, 3 * 512 * 1024, 65536, 0x78));
	crashdev_set_write_hook(r.cd, NULL, NULL);
	printf("a 64 KiB sync write beside a write in flight: not logged, done while the other "
	       "was held; alone: logged\n");
	rig_down(&r);
	TEST_PASS("a synchronous write beside another write of the file is not logged");
}

/* A stream's writes are not logged: a large sync write that continues the
 * file's previous one goes in place; a small one, or one far away, is
 * still logged. Every one of them, logged or not, survives a power cut. */
static void test_stream(void)
{
	const size_t len = 65536;
	const uint64_t far = 64 * len, small = far + len;
	for (uint64_t seed = 1; seed <= 4; seed++) {
		struct rig r;
		rig_up(&r, true, 0);
		/* the first of a stream has nothing before it: logged */
		CHECK(sync_write(r.fs, r.f, 0, len, 0x41));
		for (unsigned i = 1; i < 8; i++)
			CHECK(!sync_write(r.fs, r.f, i * len, len, (uint8_t)(0x41 + i)));
		CHECK_EQ(counter(r.fs, "fs.logged_streaming"), 7);
		/* arriving out of order, within 8 calls of the stream's end */
		CHECK(!sync_write(r.fs, r.f, 4 * len, len, 0x51));
		CHECK_EQ(counter(r.fs, "fs.logged_streaming"), 8);
		/* far from where the last one ended */
		CHECK(sync_write(r.fs, r.f, far, len, 0x52));
		/* small writes that follow each other: a database's pages */
		CHECK(sync_write(r.fs, r.f, small, 16384, 0x53));
		CHECK(sync_write(r.fs, r.f, small + 16384, 16384, 0x54));
		CHECK_EQ(counter(r.fs, "fs.logged_streaming"), 8);
		CHECK_EQ(counter(r.fs, "fs.logged_writes"), 4);
		rig_cut_remount(&r, seed);
		for (unsigned i = 0; i < 8; i++)
			check_pattern(r.f, i * len, len, i == 4 ? 0x51 : (uint8_t)(0x41 + i));
		check_pattern(r.f, far, len, 0x52);
		check_pattern(r.f, small, 16384, 0x53);
		check_pattern(r.f, small + 16384, 16384, 0x54);
		rig_down(&r);
	}
	printf("8 sequential 64 KiB sync writes: the first logged, 7 in place; one out of "
	       "order in place; far away and 16 KiB ones logged; all held after a power cut "
	       "(4 seeds)\n");
	TEST_PASS("a stream's large sync writes go in place, not through the journal");
}

int main(void)
{
	msg_set_level(MSG_ERR);
	test_counting();
	for (int k = 0; k < LATER_N; k++)
		test_later_write((enum later)k);
	test_after_recovery();
	test_space();
	test_concurrent();
	test_stream();
	return 0;
}
