/*
 * test_fs_stability.c - the stability contract of the engine, counted and
 * crash-tested (docs/design.md rules 3-6; the XFS LAYOUTCOMMIT-as-fdatasync and
 * fsync ILOCK threads).
 *
 * Counting experiment (on a fresh image, after the file is written and
 * fsynced once):
 *   5 x (overwrite 4 KiB + fdatasync)            -> 0 checkpoints, 5 flushes
 *   overwrite (unsynced) + create forced          -> 1 checkpoint, 0 flushes
 *   5 x (overwrite + fsync, after a tick)         -> 5 checkpoints
 *   5 x (extending write + fdatasync)             -> 5 checkpoints
 *   5 x (write_direct + commit_blocks, same size) -> 0 checkpoints, 5 flushes
 *   commit_blocks after map_blocks allocated      -> the log is written
 *   5 x the same with bench_sync_layoutcommit     -> 5 checkpoints (the
 *       benchmark-only switch: a synchronous transaction each time)
 *
 * Crash cases (power cut with many seeds):
 *   (a) 4 MiB preallocated, written through the server (converted, not
 *       forced), then overwritten by a client through the layout and
 *       committed: after the cut the extent is written and holds the
 *       client's data;
 *   (b) a new 4 MiB file written through the layout and committed: size,
 *       extent and data are all there.
 *
 * Flush-behind (src/dev/dev.h, B2): with a flush-behind flush held and the
 * unflushed bytes at the limit, an unstable write waits for the flush,
 * and a synchronous write (fs_write_sync, not logged) does not: its own
 * flush follows at once.
 *
 * Everything runs twice: with the log inside the data device, and on a log
 * device of its own (mkfs and mount with .ldev), where the crash cases cut
 * the power of both devices (each keeps its own random part of its
 * unflushed writes). With a separate log, the data device must be flushed
 * before a log write commits metadata pointing at new data (rule 5), or
 * case (b) loses the client's data; the counting experiment also checks
 * that the log device sees no I/O where no checkpoint is written.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/msg.h"
#include "base/time.h"
#include "check.h"
#include "flush_gate.h"
#include "fs_pattern.h"
#include "dev/crashdev.h"
#include "fs/fs.h"

#define MIB (1u << 20)

static uint64_t counter(struct fs *fs, const char *name)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	fs_stats(fs, &s);
	return stat_table_get(&t, name);
}

struct snap {
	uint64_t ckpts, flushes, bufwrites;
};

/* Every I/O of the log device (0 with an internal log: no such counters). */
static uint64_t logdev_io(struct fs *fs)
{
	return counter(fs, "logdev.reads") + counter(fs, "logdev.writes") +
	       counter(fs, "logdev.flushes");
}

static struct snap snap(struct fs *fs)
{
	return (struct snap){counter(fs, "log.checkpoints"), counter(fs, "dev.flushes"),
			     counter(fs, "log.buffer_writes")};
}

/* A pNFS client: map, write straight to the device, commit. */
static void client_write(struct fs *fs, struct dev *dev, struct fs_inode *ip, uint64_t off,
			 uint64_t len, uint8_t v, uint64_t new_size, bool *logged)
{
	struct fs_map maps[64];
	unsigned n;
	CHECK_OK(fs_map_blocks(ip, off, len, true, maps, 64, &n));
	uint8_t *buf = malloc(len);
	memset(buf, v, len);
	for (unsigned i = 0; i < n; i++) {
		CHECK(maps[i].state != FS_MAP_HOLE);
		CHECK_OK(dev_write(dev, buf, maps[i].len, maps[i].addr, 0));
	}
	free(buf);
	struct fs_range r = {off, len};
	CHECK_OK(fs_commit_blocks(ip, &r, 1, new_size, NULL, logged));
}

static const char *variant(bool ext)
{
	return ext ? "external log" : "internal log";
}

static void test_counting(bool ext)
{
	struct dev *d, *l = NULL;
	CHECK_OK(dev_mem_create(128 * MIB, NULL, &d));
	if (ext)
		CHECK_OK(dev_mem_create(16 * MIB, NULL, &l));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d, .ldev = l}));
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .ldev = l}, &fs));
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(root, "f", 1, &ca, &f, NULL));
	write_pattern(f, 0, MIB, 0x11);
	CHECK_OK(fs_fsync(f, false, NULL));

	struct snap a = snap(fs);
	uint64_t lio = logdev_io(fs);
	for (int i = 0; i < 5; i++) {
		write_pattern(f, (uint64_t)i * 4096, 4096, 0x22);
		CHECK_OK(fs_fsync(f, true, NULL));
	}
	struct snap b = snap(fs);
	CHECK_EQ(logdev_io(fs) - lio, 0);
	printf("overwrite + fdatasync x5: %llu checkpoints, %llu log buffer writes, %llu flushes\n",
	       (unsigned long long)(b.ckpts - a.ckpts),
	       (unsigned long long)(b.bufwrites - a.bufwrites),
	       (unsigned long long)(b.flushes - a.flushes));
	CHECK_EQ(b.ckpts - a.ckpts, 0);
	CHECK_EQ(b.bufwrites - a.bufwrites, 0);
	CHECK_EQ(b.flushes - a.flushes, 5);

	/* a create forced to its own sequence (a sync export's CREATE) after
	 * an overwrite of another file that nobody synced: its checkpoint
	 * needs no data-device flush (log.h G7), so it does not pay for the
	 * other file's data, which stays volatile */
	a = snap(fs);
	write_pattern(f, 0, 4096, 0x29);
	struct fs_inode *g;
	struct fs_result res = {0};
	CHECK_OK(fs_create(root, "g", 1, &ca, &g, &res));
	CHECK_OK(fs_force(fs, res.csn, NULL));
	b = snap(fs);
	printf("overwrite (unsynced) + create forced: %llu checkpoints, %llu flushes\n",
	       (unsigned long long)(b.ckpts - a.ckpts),
	       (unsigned long long)(b.flushes - a.flushes));
	CHECK_EQ(b.ckpts - a.ckpts, 1);
	CHECK_EQ(b.flushes - a.flushes, 0);
	fs_iput(g);

	a = snap(fs);
	for (int i = 0; i < 5; i++) {
		sleep_ns(FS_TIME_GRAN_NS + NSEC_PER_MSEC); /* past the timestamp granularity */
		write_pattern(f, (uint64_t)i * 4096, 4096, 0x33);
		CHECK_OK(fs_fsync(f, false, NULL));
	}
	b = snap(fs);
	printf("overwrite + fsync x5: %llu checkpoints\n", (unsigned long long)(b.ckpts - a.ckpts));
	CHECK_EQ(b.ckpts - a.ckpts, 5);

	a = snap(fs);
	for (int i = 0; i < 5; i++) {
		write_pattern(f, MIB + (uint64_t)i * 4096, 4096, 0x44);
		CHECK_OK(fs_fsync(f, true, NULL));
	}
	b = snap(fs);
	printf("extending write + fdatasync x5: %llu checkpoints\n",
	       (unsigned long long)(b.ckpts - a.ckpts));
	CHECK_EQ(b.ckpts - a.ckpts, 5);

	struct fs_attr at;
	CHECK_OK(fs_getattr(f, &at));
	a = snap(fs);
	lio = logdev_io(fs);
	for (int i = 0; i < 5; i++) {
		bool logged;
		client_write(fs, d, f, (uint64_t)i * 65536, 65536, 0x55, at.size, &logged);
		CHECK(!logged);
	}
	b = snap(fs);
	CHECK_EQ(logdev_io(fs) - lio, 0);
	printf("write_direct + commit_blocks (same size) x5: %llu checkpoints, %llu flushes\n",
	       (unsigned long long)(b.ckpts - a.ckpts),
	       (unsigned long long)(b.flushes - a.flushes));
	CHECK_EQ(b.ckpts - a.ckpts, 0);
	CHECK_EQ(b.flushes - a.flushes, 5);
	check_pattern(f, 0, 5 * 65536, 0x55);

	a = snap(fs);
	bool logged;
	client_write(fs, d, f, 8 * MIB, 65536, 0x66, 8 * MIB + 65536, &logged);
	b = snap(fs);
	printf("map_blocks allocation + commit_blocks: %llu checkpoints\n",
	       (unsigned long long)(b.ckpts - a.ckpts));
	CHECK(b.ckpts - a.ckpts >= 1);
	CHECK(logged);
	check_pattern(f, 8 * MIB, 65536, 0x66);

	/* a range without blocks is refused */
	struct fs_range hole = {16 * MIB, 4096};
	CHECK_EQ(fs_commit_blocks(f, &hole, 1, 0, NULL, NULL), -EINVAL);

	fs_iput(f);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
	dev_close(l);
	printf("counting experiment (%s): as above\n", variant(ext));
	TEST_PASS(ext ? "counting experiment, external log" : "counting experiment");
}

/* The benchmark-only switch (fs_mount_opts.bench_sync_layoutcommit): the
 * same overwrite commits each write the log, as a synchronous transaction
 * does, so that bench/run-pnfs-commit.sh measures what it claims. */
static void test_bench_sync(void)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(64 * MIB, NULL, &d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d}));
	struct fs *fs;
	CHECK_OK(
		fs_mount(&(struct fs_mount_opts){.ddev = d, .bench_sync_layoutcommit = true}, &fs));
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(root, "f", 1, &ca, &f, NULL));
	write_pattern(f, 0, MIB, 0x11);
	CHECK_OK(fs_fsync(f, false, NULL));
	struct snap a = snap(fs);
	for (int i = 0; i < 5; i++) {
		bool logged;
		client_write(fs, d, f, (uint64_t)i * 65536, 65536, 0x77, MIB, &logged);
		CHECK(logged);
	}
	struct snap b = snap(fs);
	printf("bench_sync_layoutcommit: write_direct + commit_blocks (same size) x5: %llu "
	       "checkpoints, %llu flushes\n",
	       (unsigned long long)(b.ckpts - a.ckpts),
	       (unsigned long long)(b.flushes - a.flushes));
	CHECK_EQ(b.ckpts - a.ckpts, 5);
	check_pattern(f, 0, 5 * 65536, 0x77);
	fs_iput(f);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
	TEST_PASS("the benchmark-only synchronous LAYOUTCOMMIT writes the log every time");
}

/*
 * Overwrites within one timestamp tick (FS_TIME_GRAN_NS): the change
 * attribute moves on every write, mtime only once per tick, and "overwrite
 * + fsync" writes a checkpoint exactly when the write moved mtime; otherwise
 * it costs one device flush. The change attribute's last steps, logged
 * without being forced, are there after a clean unmount.
 */
static void test_timestamp_tick(void)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(64 * MIB, NULL, &d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d}));
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(root, "f", 1, &ca, &f, NULL));
	write_pattern(f, 0, MIB, 0x11);
	CHECK_OK(fs_fsync(f, false, NULL));
	struct fs_attr a0, a1;
	CHECK_OK(fs_getattr(f, &a0));
	int moved_count = 0;
	for (int i = 0; i < 60; i++) {
		if (i % 10 == 0)
			sleep_ns(FS_TIME_GRAN_NS + NSEC_PER_MSEC);
		struct snap s0 = snap(fs);
		write_pattern(f, (uint64_t)(i % 16) * 4096, 4096, (uint8_t)i);
		CHECK_OK(fs_getattr(f, &a1));
		CHECK_EQ(a1.change, a0.change + 1);
		bool moved =
			a1.mtime.tv_sec != a0.mtime.tv_sec || a1.mtime.tv_nsec != a0.mtime.tv_nsec;
		if (i % 10 == 0)
			CHECK(moved);
		bool logged;
		CHECK_OK(fs_fsync(f, false, &logged));
		struct snap s1 = snap(fs);
		CHECK_EQ(logged, moved);
		CHECK_EQ(s1.ckpts - s0.ckpts, moved ? 1 : 0);
		if (!moved)
			CHECK_EQ(s1.flushes - s0.flushes, 1);
		moved_count += moved;
		a0 = a1;
	}
	printf("overwrite + fsync x60 (a tick passed before every 10th): mtime moved %d times\n",
	       moved_count);
	fs_iput(f);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));

	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_lookup(root, "f", 1, &f));
	CHECK_OK(fs_getattr(f, &a1));
	CHECK_EQ(a1.change, a0.change);
	fs_iput(f);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
}

/* The two crash cases of the XFS LAYOUTCOMMIT thread, with many power
 * cuts. */
static void test_layout_crash(int which, bool ext)
{
	unsigned ok = 0;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct dev *inner, *cd, *linner = NULL, *cl = NULL;
		CHECK_OK(dev_mem_create(64 * MIB, NULL, &inner));
		if (ext)
			CHECK_OK(dev_mem_create(8 * MIB, NULL, &linner));
		CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = inner, .ldev = linner}));
		CHECK_OK(crashdev_create(inner, 0, &cd));
		if (ext)
			CHECK_OK(crashdev_create(linner, 0, &cl));
		struct fs *fs;
		CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = cd, .ldev = cl}, &fs));
		struct fs_inode *root, *f;
		CHECK_OK(fs_root(fs, &root));
		struct fs_create_args ca = {.mode = S_IFREG | 0644};
		CHECK_OK(fs_create(root, "f", 1, &ca, &f, NULL));
		CHECK_OK(fs_fsync(root, false, NULL)); /* the name is durable */
		if (which == 'a') {
			/* preallocated, written and converted by the server, not forced */
			CHECK_OK(fs_fallocate(f, FS_FALLOC_ALLOC, 0, 4 * MIB, NULL));
			CHECK_OK(fs_fsync(f, false, NULL));
			write_pattern(f, 0, 4 * MIB, 0x77);
			bool logged;
			client_write(fs, cd, f, 0, 4 * MIB, 0xee, 4 * MIB, &logged);
		} else {
			bool logged;
			client_write(fs, cd, f, 0, 4 * MIB, 0xee, 4 * MIB, &logged);
			CHECK(logged);
		}
		/* power cut right after the layout commit returned: of both
		 * devices, each keeping its own part of its unflushed writes */
		CHECK_OK(crashdev_powerfail(cd, seed, NULL));
		if (cl)
			CHECK_OK(crashdev_powerfail(cl, seed * 7919, NULL));
		fs_shutdown(fs, "power cut");
		fs_iput(f);
		fs_iput(root);
		fs_unmount(fs);
		dev_close(cd);
		dev_close(cl);

		CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = inner, .ldev = linner}, &fs));
		CHECK_OK(fs_root(fs, &root));
		CHECK_OK(fs_lookup(root, "f", 1, &f));
		struct fs_attr at;
		CHECK_OK(fs_getattr(f, &at));
		CHECK_EQ(at.size, 4 * MIB);
		struct fs_map maps[8];
		unsigned n;
		CHECK_OK(fs_map_blocks(f, 0, 4 * MIB, false, maps, 8, &n));
		for (unsigned i = 0; i < n; i++)
			CHECK_EQ(maps[i].state, FS_MAP_WRITTEN);
		check_pattern(f, 0, 4 * MIB, 0xee);
		fs_iput(f);
		fs_iput(root);
		CHECK_OK(fs_unmount(fs));
		CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = inner,
							  .ldev = linner,
							  .readonly_check = true},
				  &fs));
		uint64_t problems;
		CHECK_OK(fs_check(fs, stderr, &problems));
		CHECK_EQ(problems, 0);
		CHECK_OK(fs_unmount(fs));
		dev_close(inner);
		dev_close(linner);
		ok++;
	}
	printf("crash case (%c), %s: %u power cuts, all recovered the client's data\n", which,
	       variant(ext), ok);
	TEST_PASS(which == 'a' ? "crash case (a)" : "crash case (b)");
}

/*
 * One client writes 32 MiB unstable into a new file (no sync), another
 * makes a file on a sync export meanwhile (a create forced to its own
 * sequence: that checkpoint carries the first client's conversions and its
 * flush covers their data), then the first client's COMMIT (fsync, as the
 * NFS server does it: force to commit_seq, and flush the data device
 * unless a flush that started after the call covered it). Power cut
 * right after the COMMIT returned: all 32 MiB are there, and the other
 * file. The COMMIT found the data covered by the create's flush: it wrote
 * no log and reached the device with no flush of its own.
 */
static void test_unstable_commit(void)
{
	for (uint64_t seed = 1; seed <= 8; seed++) {
		struct dev *inner, *cd;
		CHECK_OK(dev_mem_create(128 * MIB, NULL, &inner));
		CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = inner}));
		CHECK_OK(crashdev_create(inner, 0, &cd));
		struct fs *fs;
		CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = cd}, &fs));
		struct fs_inode *root, *big, *other;
		CHECK_OK(fs_root(fs, &root));
		struct fs_create_args ca = {.mode = S_IFREG | 0644};
		struct fs_result res = {0};
		CHECK_OK(fs_create(root, "big", 3, &ca, &big, &res));
		CHECK_OK(fs_force(fs, res.csn, NULL));
		for (uint64_t off = 0; off < 32 * MIB; off += MIB)
			write_pattern(big, off, MIB, (uint8_t)(0x40 + off / MIB));
		CHECK_OK(fs_create(root, "other", 5, &ca, &other, &res));
		CHECK_OK(fs_force(fs, res.csn, NULL));
		struct snap a = snap(fs);
		uint64_t seq = fs_sync_seq(big, false);
		bool flushed = false;
		if (seq)
			CHECK_OK(fs_force(fs, seq, &flushed));
		if (!flushed)
			CHECK_OK(fs_flush_data(fs));
		struct snap b = snap(fs);
		CHECK_EQ(b.bufwrites - a.bufwrites, 0);
		CHECK_EQ(b.flushes - a.flushes, 0);
		CHECK_OK(crashdev_powerfail(cd, seed, NULL));
		fs_shutdown(fs, "power cut");
		fs_iput(big);
		fs_iput(other);
		fs_iput(root);
		fs_unmount(fs);
		dev_close(cd);

		CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = inner}, &fs));
		CHECK_OK(fs_root(fs, &root));
		CHECK_OK(fs_lookup(root, "other", 5, &other));
		CHECK_OK(fs_lookup(root, "big", 3, &big));
		struct fs_attr at;
		CHECK_OK(fs_getattr(big, &at));
		CHECK_EQ(at.size, 32 * MIB);
		for (uint64_t off = 0; off < 32 * MIB; off += MIB)
			check_pattern(big, off, MIB, (uint8_t)(0x40 + off / MIB));
		fs_iput(big);
		fs_iput(other);
		fs_iput(root);
		CHECK_OK(fs_unmount(fs));
		dev_close(inner);
	}
	printf("32 MiB unstable, a sync create, COMMIT, power cut (8 seeds): all there\n");
	TEST_PASS("unstable data, another client's sync create, then COMMIT");
}

struct fb_writer {
	struct fs_inode *ip;
	uint64_t off;
	bool sync;
	int err;
	_Atomic bool done;
};

static void *fb_writer_fn(void *arg)
{
	struct fb_writer *w = arg;
	uint8_t *buf = calloc(1, 65536);
	struct fs_result res;
	bool logged;
	w->err = w->sync ? fs_write_sync(w->ip, w->off, buf, 65536, &res, &logged)
			 : fs_write(w->ip, w->off, buf, 65536, &res);
	CHECK(!w->sync || !logged);
	free(buf);
	atomic_store(&w->done, true);
	return NULL;
}

static void test_sync_no_throttle(void)
{
	struct dev *inner, *cd;
	CHECK_OK(dev_mem_create(64 * MIB, NULL, &inner));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = inner}));
	CHECK_OK(crashdev_create(inner, 0, &cd));
	struct fs *fs;
	CHECK_OK(fs_mount(
		&(struct fs_mount_opts){.ddev = cd, .logged_data_max = FS_LOGGED_DATA_OFF}, &fs));
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(root, "f", 1, &ca, &f, NULL));
	write_pattern(f, 0, 4 * MIB, 0x11);
	CHECK_OK(fs_fsync(f, false, NULL));
	CHECK_OK(fs_fsync(root, false, NULL));
	/* bound 64 KiB, limit 256 KiB; flushes held from now on */
	struct gate g = GATE_INIT;
	crashdev_set_flush_hook(cd, gate_hook, &g);
	dev_set_flush_behind(cd, 64u << 10, 256u << 10);
	/* unstable overwrites: the first flush-behind flush is asked for and
	 * held; then up to the limit nobody waits */
	struct fs_result res;
	uint8_t *buf = calloc(1, 65536);
	for (int i = 0; i < 4; i++)
		CHECK_OK(fs_write(f, (uint64_t)i * 65536, buf, 65536, &res));
	WAIT_FOR(gate_entered(&g) == 1);
	/* past the limit: an unstable write waits for the held flush... */
	struct fb_writer u = {.ip = f, .off = 8 * 65536};
	pthread_t ut, st;
	CHECK_OK(pthread_create(&ut, NULL, fb_writer_fn, &u));
	usleep(20000);
	CHECK(!atomic_load(&u.done));
	/* ...and a synchronous one does not */
	struct fb_writer sw = {.ip = f, .off = 16 * 65536, .sync = true};
	CHECK_OK(pthread_create(&st, NULL, fb_writer_fn, &sw));
	WAIT_FOR(atomic_load(&sw.done)); /* times out if it waits */
	CHECK_OK(pthread_join(st, NULL));
	CHECK_OK(sw.err);
	CHECK(!atomic_load(&u.done));
	gate_release(&g, 1000);
	CHECK_OK(pthread_join(ut, NULL));
	CHECK_OK(u.err);
	printf("flush-behind held at its limit: the unstable write waited, the sync write "
	       "did not\n");
	crashdev_set_flush_hook(cd, NULL, NULL);
	free(buf);
	fs_iput(f);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	dev_close(cd);
	dev_close(inner);
	TEST_PASS("a synchronous write's data does not wait for flush-behind (dev.h B2)");
}

int main(void)
{
	msg_set_level(MSG_ERR);
	test_sync_no_throttle();
	for (int ext = 0; ext < 2; ext++) {
		test_counting(ext);
		if (!ext) {
			test_bench_sync();
			test_timestamp_tick();
			test_unstable_commit();
		}
		test_layout_crash('a', ext);
		test_layout_crash('b', ext);
	}
	return 0;
}
