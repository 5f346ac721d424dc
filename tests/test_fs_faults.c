/*
 * test_fs_faults.c - ENOSPC and EIO are clean errors (docs/design.md §9).
 *
 * ENOSPC: a small image is filled with many files, with one big file, with
 * a big directory, and with a random mix of operations near full. Every
 * operation that cannot get space fails with ENOSPC (never EIO, never a
 * shutdown), nothing is corrupted (check is clean after unmount, contents
 * read back), and freeing space makes writes work again at once.
 *
 * A failed flush of the data device moves the data epoch that protocols
 * fold into their write verifier, on every path that flushes it.
 *
 * EIO: a fault loop in the style of test_log.c. A workload of creates,
 * writes, fsyncs, fdatasyncs, renames, unlinks, truncates and pNFS layout
 * commits runs on a crash device whose Nth I/O fails (once, or sticky: that
 * one and every later one), for every N the workload and its unmount do.
 * Operations return 0 or EIO; a failed I/O of the journal's threads (a log
 * write, a metadata write-back, the flush before a checkpoint) shuts the
 * filesystem down, after which every operation fails with EIO. Then the
 * power is cut, the image is mounted again: check is clean, every file the
 * workload saw acknowledged (fsync, fdatasync, commit_blocks returned 0) is
 * there with its content, and no file holds a byte never written to it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/msg.h"
#include "base/rand.h"
#include "check.h"
#include "dev/crashdev.h"
#include "fs/fs.h"
#include "fs/fs_priv.h"

#define MIB (1ull << 20)

static struct dev *mkimg(uint64_t size)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(size, NULL, &d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d}));
	return d;
}

static struct fs *mnt(struct dev *d)
{
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	return fs;
}

static void check_clean(struct dev *d, const char *what)
{
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .readonly_check = true}, &fs));
	uint64_t problems = 1;
	CHECK_OK(fs_check(fs, stderr, &problems));
	if (problems)
		fprintf(stderr, "%s: check found %llu problems\n", what,
			(unsigned long long)problems);
	CHECK_EQ(problems, 0);
	CHECK_OK(fs_unmount(fs));
}

static struct fs_inode *create(struct fs_inode *dir, const char *name, uint32_t mode, int *err)
{
	struct fs_inode *ip = NULL;
	struct fs_create_args a = {.mode = mode};
	*err = fs_create(dir, name, strlen(name), &a, &ip, NULL);
	return ip;
}

static void fill(uint8_t *buf, size_t len, uint32_t tag)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(tag * 131 + i / 512);
}

static bool same(struct fs_inode *ip, uint64_t off, size_t len, uint32_t tag)
{
	uint8_t *want = malloc(len), *got = malloc(len);
	fill(want, len, tag);
	size_t n;
	bool eof;
	bool ok = fs_read(ip, off, got, len, &n, &eof) == 0 && n == len && !memcmp(want, got, len);
	free(want);
	free(got);
	return ok;
}

/* ---- ENOSPC ---- */

static uint64_t free_blocks(struct fs *fs)
{
	struct fs_statfs st;
	CHECK_OK(fs_statfs(fs, &st));
	return st.bfree;
}

static void test_enospc_files(void)
{
	struct dev *d = mkimg(8 * MIB);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *dir, *ip;
	int err;
	CHECK_OK(fs_root(fs, &root));
	dir = create(root, "d", S_IFDIR | 0755, &err);
	CHECK_OK(err);
	const size_t fsz = 16384;
	uint8_t *buf = malloc(fsz);
	unsigned made = 0;
	for (;; made++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", made);
		ip = create(dir, name, S_IFREG | 0644, &err);
		if (err)
			break;
		fill(buf, fsz, made);
		err = fs_write(ip, 0, buf, fsz, NULL);
		fs_iput(ip);
		if (err)
			break;
	}
	CHECK_EQ(err, -ENOSPC);
	printf("files: %u files of %zu KiB, then ENOSPC (%llu blocks free)\n", made, fsz >> 10,
	       (unsigned long long)free_blocks(fs));
	/* it stays ENOSPC, and nothing else breaks */
	for (unsigned i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof(name), "x%u", i);
		ip = create(dir, name, S_IFREG | 0644, &err);
		if (!err) {
			CHECK_EQ(fs_write(ip, 0, buf, fsz, NULL), -ENOSPC);
			fs_iput(ip);
		} else {
			CHECK_EQ(err, -ENOSPC);
		}
	}
	CHECK_OK(fs_lookup(dir, "f0", 2, &ip));
	CHECK(same(ip, 0, fsz, 0));
	fill(buf, 4096, 7777);
	CHECK_OK(fs_write(ip, 4096, buf, 4096, NULL)); /* an overwrite needs no space */
	CHECK_OK(fs_fsync(ip, false, NULL));
	CHECK(same(ip, 4096, 4096, 7777));
	fs_iput(ip);
	/* free every other file: writing works again at once */
	for (unsigned i = 1; i < made; i += 2) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", i);
		CHECK_OK(fs_unlink(dir, name, strlen(name), NULL));
	}
	unsigned again = 0;
	for (; again < made / 4; again++) {
		char name[32];
		snprintf(name, sizeof(name), "g%u", again);
		ip = create(dir, name, S_IFREG | 0644, &err);
		CHECK_OK(err);
		fill(buf, fsz, 100000 + again);
		CHECK_OK(fs_write(ip, 0, buf, fsz, NULL));
		fs_iput(ip);
	}
	fs_iput(dir);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	check_clean(d, "files");
	/* everything reads back */
	fs = mnt(d);
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_lookup(root, "d", 1, &dir));
	for (unsigned i = 0; i < made; i += 2) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", i);
		CHECK_OK(fs_lookup(dir, name, strlen(name), &ip));
		CHECK(i == 0 || same(ip, 0, fsz, i));
		fs_iput(ip);
	}
	for (unsigned i = 0; i < again; i++) {
		char name[32];
		snprintf(name, sizeof(name), "g%u", i);
		CHECK_OK(fs_lookup(dir, name, strlen(name), &ip));
		CHECK(same(ip, 0, fsz, 100000 + i));
		fs_iput(ip);
	}
	fs_iput(dir);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	free(buf);
	dev_close(d);
	printf("files: %u new files after freeing half\n", again);
	TEST_PASS("ENOSPC with many files");
}

/*
 * On a full filesystem, space freed a moment ago is all there is: it is
 * busy until the freeing checkpoint is durable, so the allocator forces the
 * log and must then find it free. (It did not always: the force returned
 * before the checkpoint's durable callbacks had released the busy space.)
 */
static void test_enospc_reuse(void)
{
	struct dev *d = mkimg(8 * MIB);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *ip;
	int err;
	CHECK_OK(fs_root(fs, &root));
	const size_t fsz = 64 << 10;
	uint8_t *buf = malloc(fsz);
	unsigned n = 0;
	for (;; n++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", n);
		ip = create(root, name, S_IFREG | 0644, &err);
		if (err)
			break;
		fill(buf, fsz, n);
		err = fs_write(ip, 0, buf, fsz, NULL);
		fs_iput(ip);
		if (err) {
			CHECK_OK(fs_unlink(root, name, strlen(name), NULL));
			break;
		}
	}
	CHECK_EQ(err, -ENOSPC);
	unsigned rounds = 300;
	for (unsigned i = 0; i < rounds; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", i);
		CHECK_OK(fs_unlink(root, name, strlen(name), NULL));
		snprintf(name, sizeof(name), "f%u", n + i);
		ip = create(root, name, S_IFREG | 0644, &err);
		CHECK_OK(err);
		fill(buf, fsz, n + i);
		err = fs_write(ip, 0, buf, fsz, NULL);
		if (err)
			fprintf(stderr, "round %u: writing into just freed space: %s\n", i,
				strerror(-err));
		CHECK_OK(err);
		fs_iput(ip);
	}
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	check_clean(d, "reuse");
	free(buf);
	dev_close(d);
	printf("reuse: %u files full, %u rounds of delete one, write one\n", n, rounds);
	TEST_PASS("ENOSPC: freed space is usable at once");
}

/*
 * A full filesystem can always be emptied, even while writers race for its
 * last blocks: removing a file or a directory and renaming (over a file)
 * may need a block or two for a directory or free-space tree node, and
 * they may take them from the blocks kept back, which writes and creates
 * may not, and wait for other transactions' reservations rather than
 * fail. (They could not: with 16 NFS clients appending to a full image,
 * the writers' reservations in flight took the last free blocks and
 * REMOVE, RMDIR and RENAME failed with ENOSPC, so nothing could be freed.)
 * An operation that reserves no block never fails for space: a chmod or an
 * overwrite (they failed when reservations had taken the blocks kept back).
 * The writers in flight are played by reservations held here.
 */
struct holder {
	struct fs *fs;
	uint64_t n;
};

static void *release_later(void *arg)
{
	struct holder *h = arg;
	usleep(200 * 1000);
	fs_unreserve_blocks(h->fs, h->n);
	return NULL;
}

/* Reserve every block an operation of this kind could still get. */
static uint64_t hold_all(struct fs *fs, bool freeing)
{
	mutex_lock(&fs->f_resv_lock);
	int64_t n = fs->f_free - fs->f_resv - (freeing ? fs->f_reserve / 2 : fs->f_reserve);
	mutex_unlock(&fs->f_resv_lock);
	if (n <= 0)
		return 0;
	CHECK_OK(fs_reserve_blocks(fs, (uint64_t)n, freeing));
	return (uint64_t)n;
}

static void test_enospc_free_when_full(void)
{
	struct dev *d = mkimg(8 * MIB);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *ip, *t;
	int err;
	CHECK_OK(fs_root(fs, &root));
	fs_iput(create(root, "e", S_IFDIR | 0755, &err));
	CHECK_OK(err);
	uint8_t buf[4096];
	const char *small[] = {"u", "s", "v"};
	for (int i = 0; i < 3; i++) {
		ip = create(root, small[i], S_IFREG | 0644, &err);
		CHECK_OK(err);
		fill(buf, sizeof(buf), (uint32_t)i);
		CHECK_OK(fs_write(ip, 0, buf, sizeof(buf), NULL));
		fs_iput(ip);
	}
	t = create(root, "t", S_IFREG | 0644, &err);
	CHECK_OK(err);
	for (uint64_t off = 0; off < 65536; off += sizeof(buf))
		CHECK_OK(fs_write(t, off, buf, sizeof(buf), NULL));
	ip = create(root, "fill", S_IFREG | 0644, &err);
	CHECK_OK(err);
	uint64_t off = 0;
	while ((err = fs_write(ip, off, buf, sizeof(buf), NULL)) == 0)
		off += sizeof(buf);
	CHECK_EQ(err, -ENOSPC);
	fs_iput(ip);
	/* writers in flight hold what is left to them */
	uint64_t held = hold_all(fs, false);
	printf("full: %llu KiB appended, %llu blocks free, %llu held by writers\n",
	       (unsigned long long)off >> 10, (unsigned long long)free_blocks(fs),
	       (unsigned long long)held);
	CHECK_EQ(fs_write(t, 65536, buf, sizeof(buf), NULL), -ENOSPC);
	CHECK_OK(fs_unlink(root, "u", 1, NULL));
	/* and other removals in flight what is left to them */
	struct holder h = {fs, hold_all(fs, true)};
	/* what needs no block still works: a chmod, an overwrite */
	CHECK_OK(fs_setattr(t, &(struct fs_setattr){.mask = FS_SET_MODE, .mode = 0600}, NULL));
	CHECK_OK(fs_write(t, 0, buf, sizeof(buf), NULL));
	/* this one waits for them */
	pthread_t th;
	CHECK_OK(pthread_create(&th, NULL, release_later, &h));
	CHECK_OK(fs_rmdir(root, "e", 1, NULL));
	CHECK_OK(pthread_join(th, NULL));
	CHECK_OK(fs_rename(root, "s", 1, root, "v", 1, NULL));
	CHECK_OK(fs_setattr(t, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = 0}, NULL));
	fs_unreserve_blocks(fs, held);
	fs_iput(t);
	/* what they freed can be written again */
	CHECK_OK(fs_lookup(root, "fill", 4, &ip));
	CHECK_OK(fs_write(ip, off, buf, sizeof(buf), NULL));
	fs_iput(ip);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	check_clean(d, "free when full");
	dev_close(d);
	TEST_PASS("ENOSPC: a full filesystem can be emptied while writers race for its last blocks");
}

static void test_enospc_bigfile(void)
{
	struct dev *d = mkimg(8 * MIB);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *ip;
	int err;
	CHECK_OK(fs_root(fs, &root));
	ip = create(root, "big", S_IFREG | 0644, &err);
	CHECK_OK(err);
	uint8_t *buf = malloc(MIB);
	uint64_t size = 0;
	unsigned chunk = 0;
	for (size_t len = MIB; len >= 4096; len /= 4) {
		for (;;) {
			fill(buf, len, chunk);
			err = fs_write(ip, size, buf, len, NULL);
			if (err)
				break;
			size += len;
			chunk++;
		}
		CHECK_EQ(err, -ENOSPC);
	}
	struct fs_attr at;
	CHECK_OK(fs_getattr(ip, &at));
	CHECK_EQ(at.size, size); /* a failed write does not move the size */
	printf("big file: %llu KiB written, then ENOSPC (%llu blocks free)\n",
	       (unsigned long long)size >> 10, (unsigned long long)free_blocks(fs));
	CHECK_EQ(fs_fallocate(ip, FS_FALLOC_ALLOC, size, MIB, NULL), -ENOSPC);
	struct fs_map maps[4];
	unsigned n;
	CHECK_EQ(fs_map_blocks(ip, ALIGN_UP(size, 4096) + MIB, MIB, true, maps, 4, &n), -ENOSPC);
	struct fs_inode *other = create(root, "other", S_IFREG | 0644, &err);
	if (!err) {
		CHECK_EQ(fs_write(other, 0, buf, 65536, NULL), -ENOSPC);
		fs_iput(other);
	} else {
		CHECK_EQ(err, -ENOSPC);
	}
	CHECK_OK(fs_fsync(ip, false, NULL));
	/* shrink: the space is back at once */
	uint64_t half = ALIGN_DOWN(size / 2, (uint64_t)MIB);
	CHECK_OK(fs_setattr(ip, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = half}, NULL));
	fill(buf, MIB, 999);
	CHECK_OK(fs_write(ip, half, buf, MIB, NULL));
	CHECK_OK(fs_fsync(ip, true, NULL));
	fs_iput(ip);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	check_clean(d, "big file");
	fs = mnt(d);
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_lookup(root, "big", 3, &ip));
	CHECK_OK(fs_getattr(ip, &at));
	CHECK_EQ(at.size, half + MIB);
	for (uint64_t off = 0, c = 0; off < half; off += MIB, c++)
		CHECK(same(ip, off, MIB, (uint32_t)c));
	CHECK(same(ip, half, MIB, 999));
	fs_iput(ip);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	free(buf);
	dev_close(d);
	TEST_PASS("ENOSPC with a big file");
}

static void test_enospc_bigdir(void)
{
	struct dev *d = mkimg(8 * MIB);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *dir, *ip;
	int err;
	CHECK_OK(fs_root(fs, &root));
	dir = create(root, "big", S_IFDIR | 0755, &err);
	CHECK_OK(err);
	unsigned made = 0;
	char name[64];
	for (;; made++) {
		/* long names: the directory's tree takes its share of space */
		snprintf(name, sizeof(name), "a-rather-long-name-for-entry-number-%08u", made);
		ip = create(dir, name, made % 50 ? S_IFREG | 0644 : S_IFDIR | 0755, &err);
		if (err)
			break;
		fs_iput(ip);
	}
	CHECK_EQ(err, -ENOSPC);
	printf("big directory: %u entries, then ENOSPC (%llu blocks free)\n", made,
	       (unsigned long long)free_blocks(fs));
	for (unsigned i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "late-%u", i);
		CHECK_EQ(fs_create(dir, name, strlen(name),
				   &(struct fs_create_args){.mode = S_IFREG | 0644}, &ip, NULL),
			 -ENOSPC);
	}
	/* elsewhere a create may still fit (a smaller tree reserves less) */
	err = fs_create(root, "dir2", 4, &(struct fs_create_args){.mode = S_IFDIR | 0755}, &ip,
			NULL);
	if (!err)
		fs_iput(ip);
	CHECK(err == 0 || err == -ENOSPC);
	unsigned count = 0;
	for (unsigned i = 1; i < made; i += 3) {
		snprintf(name, sizeof(name), "a-rather-long-name-for-entry-number-%08u", i);
		err = i % 50 ? fs_unlink(dir, name, strlen(name), NULL)
			     : fs_rmdir(dir, name, strlen(name), NULL);
		CHECK_OK(err);
		count++;
	}
	for (unsigned i = 0; i < count / 2; i++) {
		snprintf(name, sizeof(name), "new-%u", i);
		ip = create(dir, name, S_IFREG | 0644, &err);
		CHECK_OK(err);
		fs_iput(ip);
	}
	fs_iput(dir);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	check_clean(d, "big directory");
	dev_close(d);
	TEST_PASS("ENOSPC with a big directory");
}

/* Everything at once near full: only ENOSPC (and the plain errors of the
 * namespace) may come back; never EIO, never a shutdown. */
static void test_enospc_mixed(uint64_t seed)
{
	struct rng r;
	rng_seed(&r, seed);
	struct dev *d = mkimg(8 * MIB);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *dirs[4];
	CHECK_OK(fs_root(fs, &root));
	for (int i = 0; i < 4; i++) {
		char name[8] = {'d', (char)('0' + i), 0};
		int err;
		dirs[i] = create(root, name, S_IFDIR | 0755, &err);
		CHECK_OK(err);
	}
	uint8_t *buf = malloc(512 << 10);
	memset(buf, 0x5a, 512 << 10);
	unsigned enospc = 0, ok = 0, other = 0;
	for (unsigned step = 0; step < 3000; step++) {
		struct fs_inode *dir = dirs[rng_below(&r, 4)], *ip = NULL;
		char name[32], name2[32];
		snprintf(name, sizeof(name), "n%u", (unsigned)rng_below(&r, 200));
		snprintf(name2, sizeof(name2), "n%u", (unsigned)rng_below(&r, 200));
		int err = 0;
		unsigned op = (unsigned)rng_below(&r, 10);
		if (op >= 3 && op <= 7) {
			err = fs_lookup(dir, name, strlen(name), &ip);
			if (err == -ENOENT)
				ip = create(dir, name, S_IFREG | 0644, &err);
			if (!err) {
				struct fs_attr at;
				fs_getattr(ip, &at);
				if (!S_ISREG(at.mode)) {
					fs_iput(ip);
					ip = NULL;
					err = -EISDIR;
				}
			}
		}
		uint64_t off = rng_below(&r, 2 * MIB) & ~4095ull;
		size_t len = 4096 * (1 + rng_below(&r, 64));
		switch (op) {
		case 0:
			ip = create(dir, name, S_IFREG | 0644, &err);
			break;
		case 1:
			ip = create(dir, name, S_IFDIR | 0755, &err);
			break;
		case 2:
			err = fs_rename(dir, name, strlen(name), dirs[rng_below(&r, 4)], name2,
					strlen(name2), NULL);
			break;
		case 3:
			if (!err)
				err = fs_write(ip, off, buf, len, NULL);
			break;
		case 4:
			if (!err)
				err = fs_fallocate(ip, FS_FALLOC_ALLOC, off, len, NULL);
			break;
		case 5:
			if (!err)
				err = fs_fallocate(ip, FS_FALLOC_PUNCH, off, len, NULL);
			break;
		case 6:
			if (!err) {
				struct fs_map maps[8];
				unsigned n;
				err = fs_map_blocks(ip, off, len, true, maps, 8, &n);
				struct fs_range rg = {off, len};
				if (!err)
					err = fs_commit_blocks(ip, &rg, 1, off + len, NULL, NULL);
			}
			break;
		case 7:
			if (!err)
				err = fs_setattr(ip,
						 &(struct fs_setattr){.mask = FS_SET_SIZE,
								      .size = off / 2},
						 NULL);
			break;
		case 8:
			err = fs_unlink(dir, name, strlen(name), NULL);
			if (err == -EISDIR)
				err = fs_rmdir(dir, name, strlen(name), NULL);
			break;
		default:
			err = fs_sync(fs);
			break;
		}
		if (ip)
			fs_iput(ip);
		if (!err)
			ok++;
		else if (err == -ENOSPC)
			enospc++;
		else if (err == -ENOENT || err == -EEXIST || err == -ENOTEMPTY || err == -EISDIR ||
			 err == -ENOTDIR || err == -EINVAL)
			other++;
		else {
			fprintf(stderr, "step %u, operation %u: %s\n", step, op, strerror(-err));
			CHECK(0);
		}
	}
	printf("mixed (seed %llu): %u ok, %u ENOSPC, %u namespace errors\n",
	       (unsigned long long)seed, ok, enospc, other);
	CHECK(enospc > 0);
	for (int i = 0; i < 4; i++)
		fs_iput(dirs[i]);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	check_clean(d, "mixed");
	free(buf);
	dev_close(d);
}

/* ---- EIO: the fault loop ---- */

/*
 * A pass-through device over the crash device that notes which thread saw
 * an I/O fail: the workload's own (a data write, a read, its fsync's flush)
 * or one of the journal's (a log write, a write-back, a checkpoint flush).
 */
struct tdev {
	struct dev td_dev;
	struct dev *td_inner;
	pthread_t td_main;
	_Atomic unsigned td_fg_fail, td_bg_fail;
};

static struct tdev *to_tdev(struct dev *d)
{
	return container_of(d, struct tdev, td_dev);
}

static int tdev_note(struct tdev *t, int err)
{
	if (err == -EIO) {
		if (pthread_equal(pthread_self(), t->td_main))
			atomic_fetch_add(&t->td_fg_fail, 1);
		else
			atomic_fetch_add(&t->td_bg_fail, 1);
	}
	return err;
}

static int tdev_read(struct dev *d, void *buf, size_t len, uint64_t off)
{
	return tdev_note(to_tdev(d), dev_read(to_tdev(d)->td_inner, buf, len, off));
}

static int tdev_write(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags)
{
	return tdev_note(to_tdev(d), dev_write(to_tdev(d)->td_inner, buf, len, off, flags));
}

static int tdev_flush(struct dev *d)
{
	return tdev_note(to_tdev(d), dev_flush(to_tdev(d)->td_inner));
}

static void tdev_destroy(struct dev *d)
{
	free(to_tdev(d));
}

static const struct dev_ops tdev_ops = {tdev_read, tdev_write, tdev_flush, tdev_destroy};

static struct tdev *tdev_create(struct dev *inner)
{
	struct tdev *t = calloc(1, sizeof(*t));
	dev_init(&t->td_dev, &tdev_ops, "trace", dev_size(inner), dev_sector_size(inner));
	t->td_inner = inner;
	t->td_main = pthread_self();
	return t;
}

#define NFILES   24
#define FILE_MAX (32u << 10)

/* What the workload knows about a file. */
struct wfile {
	char name[2][16]; /* the name, and another it may have after a rename */
	bool in_sub;      /* in /d, else in / */
	bool acked;       /* data[0, acked_len) is durable */
	bool maybe_gone;  /* an unlink was tried */
	uint32_t acked_len;
	uint8_t data[FILE_MAX];
	uint8_t tags[4]; /* every byte value ever written to it (0 too) */
	unsigned ntags;
};

struct wl {
	struct wfile f[NFILES];
	unsigned ops, errors, eio_after_shutdown_violations;
	struct dev *ddev; /* for pNFS direct writes */
};

static int step_result(struct wl *w, int err)
{
	w->ops++;
	if (err) {
		w->errors++;
		if (err != -EIO) {
			fprintf(stderr, "workload: an operation failed with %s\n", strerror(-err));
			CHECK(0);
		}
	}
	return err;
}

static void tag(struct wfile *f, uint8_t v)
{
	for (unsigned i = 0; i < f->ntags; i++)
		if (f->tags[i] == v)
			return;
	CHECK(f->ntags < 4);
	f->tags[f->ntags++] = v;
}

/* The workload: deterministic, one thread, errors tolerated (EIO only). */
static void workload(struct fs *fs, struct wl *w)
{
	struct fs_inode *root = NULL, *sub = NULL;
	if (step_result(w, fs_root(fs, &root)))
		return;
	struct fs_create_args da = {.mode = S_IFDIR | 0755}, fa = {.mode = S_IFREG | 0644};
	int err = step_result(w, fs_create(root, "d", 1, &da, &sub, NULL));
	if (!err)
		err = step_result(w, fs_fsync(root, false, NULL));
	uint8_t buf[FILE_MAX];
	for (unsigned i = 0; i < NFILES; i++) {
		struct wfile *f = &w->f[i];
		snprintf(f->name[0], sizeof(f->name[0]), "f%u", i);
		snprintf(f->name[1], sizeof(f->name[1]), "f%u", i);
		f->in_sub = sub && i % 3 != 0;
		tag(f, 0);
		struct fs_inode *dir = f->in_sub ? sub : root, *ip;
		if (step_result(w, fs_create(dir, f->name[0], strlen(f->name[0]), &fa, &ip, NULL)))
			continue;
		uint32_t len = 6000 * (i % 4 + 1);
		uint8_t v = (uint8_t)(0x10 + i);
		memset(buf, v, len);
		tag(f, v);
		bool ok = !step_result(w, fs_write(ip, 0, buf, len, NULL));
		if (ok && i % 3 != 2 && !step_result(w, fs_fsync(ip, false, NULL))) {
			f->acked = true;
			f->acked_len = len;
			memcpy(f->data, buf, len);
		}
		if (i % 4 == 1) {
			/* overwrite the start and fdatasync */
			uint8_t v2 = (uint8_t)(0x80 + i);
			memset(buf, v2, 4096);
			tag(f, v2);
			if (!step_result(w, fs_write(ip, 0, buf, 4096, NULL)) &&
			    !step_result(w, fs_fsync(ip, true, NULL)) && f->acked)
				memset(f->data, v2, 4096);
			else
				f->acked = false; /* the start is old or new */
		}
		if (i % 7 == 3) {
			/* a pNFS client rewrites the second block and commits */
			struct fs_map m[2];
			unsigned n;
			uint8_t v3 = (uint8_t)(0xc0 + i);
			tag(f, v3);
			bool done = false;
			if (!step_result(w, fs_map_blocks(ip, 4096, 4096, true, m, 2, &n)) &&
			    m[0].state != FS_MAP_HOLE) {
				memset(buf, v3, 4096);
				struct fs_range rg = {4096, 4096};
				done = !step_result(w, dev_write(w->ddev, buf, 4096, m[0].addr, 0)) &&
				       !step_result(w, fs_commit_blocks(ip, &rg, 1, 0, NULL, NULL));
			}
			if (done && f->acked)
				memset(f->data + 4096, v3, 4096);
			else
				f->acked = false;
		}
		if (i % 8 == 6) {
			/* truncate and fsync */
			if (!step_result(w,
					 fs_setattr(ip, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = 100},
						    NULL)) &&
			    !step_result(w, fs_fsync(ip, false, NULL)) && f->acked)
				f->acked_len = 100;
			else
				f->acked = false;
		}
		fs_iput(ip);
		if (i % 5 == 4) {
			/* rename the file before, and make the directory durable */
			struct wfile *p = &w->f[i - 1];
			snprintf(p->name[1], sizeof(p->name[1]), "g%u", i - 1);
			struct fs_inode *pd = p->in_sub ? sub : root;
			if (!step_result(w, fs_rename(pd, p->name[0], strlen(p->name[0]), pd,
						      p->name[1], strlen(p->name[1]), NULL)) &&
			    !step_result(w, fs_fsync(pd, false, NULL)))
				snprintf(p->name[0], sizeof(p->name[0]), "g%u", i - 1);
		}
		if (i % 6 == 5) {
			struct wfile *p = &w->f[i - 2];
			p->maybe_gone = true;
			step_result(w, fs_unlink(p->in_sub ? sub : root, p->name[0],
						 strlen(p->name[0]), NULL));
		}
	}
	if (sub)
		fs_iput(sub);
	fs_iput(root);
}

struct verify {
	struct wl *w;
	unsigned seen[NFILES];
	unsigned problems;
	const char *what;
};

static void vproblem(struct verify *v, const char *fmt, const char *name)
{
	fprintf(stderr, "%s: ", v->what);
	fprintf(stderr, fmt, name);
	fprintf(stderr, "\n");
	v->problems++;
}

static int verify_entry(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
			uint64_t cookie)
{
	return 0;
}

static void verify_dir(struct verify *v, struct fs_inode *dir, bool sub)
{
	struct wl *w = v->w;
	/* every file the workload made, under any name it may have */
	for (unsigned i = 0; i < NFILES; i++) {
		struct wfile *f = &w->f[i];
		if (f->in_sub != sub || !f->ntags)
			continue;
		for (int k = 0; k < 2; k++) {
			if (k == 1 && !strcmp(f->name[0], f->name[1]))
				break;
			struct fs_inode *ip;
			int err = fs_lookup(dir, f->name[k], strlen(f->name[k]), &ip);
			if (err == -ENOENT)
				continue;
			CHECK_OK(err);
			v->seen[i]++;
			struct fs_attr at;
			CHECK_OK(fs_getattr(ip, &at));
			uint8_t *got = malloc(at.size ? at.size : 1);
			size_t n;
			bool eof;
			CHECK_OK(fs_read(ip, 0, got, at.size, &n, &eof));
			CHECK_EQ(n, at.size);
			for (size_t b = 0; b < n; b++) {
				bool known = false;
				for (unsigned t = 0; t < f->ntags; t++)
					known |= got[b] == f->tags[t];
				if (!known) {
					vproblem(v, "%s holds a byte never written to it", f->name[k]);
					break;
				}
			}
			if (f->acked && !f->maybe_gone &&
			    (at.size < f->acked_len || memcmp(got, f->data, f->acked_len)))
				vproblem(v, "%s lost acknowledged data", f->name[k]);
			free(got);
			fs_iput(ip);
		}
	}
	CHECK_OK(fs_readdir(dir, 0, verify_entry, v));
}

static void verify_image(struct dev *d, struct wl *w, const char *what)
{
	check_clean(d, what);
	struct fs *fs = mnt(d);
	struct verify v = {.w = w, .what = what};
	struct fs_inode *root, *sub;
	CHECK_OK(fs_root(fs, &root));
	verify_dir(&v, root, false);
	int err = fs_lookup(root, "d", 1, &sub);
	if (!err) {
		verify_dir(&v, sub, true);
		fs_iput(sub);
	}
	for (unsigned i = 0; i < NFILES; i++) {
		struct wfile *f = &w->f[i];
		if (v.seen[i] > 1)
			vproblem(&v, "%s is there under two names", f->name[0]);
		if (f->acked && !f->maybe_gone && !v.seen[i])
			vproblem(&v, "acknowledged file %s is missing", f->name[0]);
	}
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	CHECK_EQ(v.problems, 0);
}

/* After a shutdown, everything fails with EIO. */
static void expect_shut_down(struct fs *fs)
{
	struct fs_inode *root;
	CHECK_EQ(fs_root(fs, &root), -EIO);
	CHECK_EQ(fs_sync(fs), -EIO);
	struct fs_statfs st;
	CHECK_EQ(fs_statfs(fs, &st), -EIO);
}

static void expect_shut_down_inode(struct fs_inode *root)
{
	struct fs_inode *ip;
	struct fs_create_args fa = {.mode = S_IFREG | 0644};
	CHECK_EQ(fs_create(root, "late", 4, &fa, &ip, NULL), -EIO);
	CHECK_EQ(fs_lookup(root, "d", 1, &ip), -EIO);
	CHECK_EQ(fs_fsync(root, false, NULL), -EIO);
	char c;
	size_t n;
	bool eof;
	CHECK_EQ(fs_read(root, 0, &c, 1, &n, &eof), -EIO);
	CHECK_EQ(fs_readdir(root, 0, verify_entry, NULL), -EIO);
}

struct loop_stats {
	unsigned runs, bg_faults, fg_faults, shutdowns, unmount_eio;
};

static void fault_run(uint64_t n, bool sticky, struct loop_stats *ls)
{
	struct dev *inner = mkimg(16 * MIB), *cd;
	CHECK_OK(crashdev_create(inner, 0, &cd));
	struct tdev *t = tdev_create(cd);
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = &t->td_dev}, &fs));
	struct wl *w = calloc(1, sizeof(*w));
	w->ddev = &t->td_dev;
	struct fs_inode *root;
	CHECK_OK(fs_root(fs, &root)); /* held: to try operations after a shutdown */
	dev_inject_fault(cd, n, sticky);
	workload(fs, w);
	bool hit = atomic_load(&t->td_fg_fail) + atomic_load(&t->td_bg_fail) > 0;
	bool bg = atomic_load(&t->td_bg_fail) > 0;
	/* a failed write-back is noticed by the AIL thread a moment later */
	for (int i = 0; bg && i < 2000; i++) {
		struct fs_statfs st;
		if (fs_statfs(fs, &st) == -EIO)
			break;
		usleep(1000);
	}
	struct fs_statfs st;
	bool down = fs_statfs(fs, &st) == -EIO;
	if (bg && !down) {
		fprintf(stderr, "fault at I/O %llu%s: a journal I/O failed, but the filesystem "
				"is not shut down\n",
			(unsigned long long)n, sticky ? " (sticky)" : "");
		CHECK(0);
	}
	if (down) {
		expect_shut_down(fs);
		expect_shut_down_inode(root);
	}
	fs_iput(root);
	int err = fs_unmount(fs);
	if (err) {
		CHECK_EQ(err, -EIO);
		CHECK(hit || dev_io_count(cd) >= n);
	}
	if (!hit && !err)
		CHECK_EQ(w->errors, 0);
	ls->runs++;
	ls->bg_faults += bg;
	ls->fg_faults += hit && !bg;
	ls->shutdowns += down;
	ls->unmount_eio += err != 0;
	/* power cut (a no-op after a clean unmount), then mount again */
	dev_inject_fault(cd, 0, false);
	CHECK_OK(crashdev_powerfail(cd, n, NULL));
	char what[64];
	snprintf(what, sizeof(what), "fault at I/O %llu%s", (unsigned long long)n,
		 sticky ? " (sticky)" : "");
	msg_set_level(MSG_ERR);
	verify_image(inner, w, what);
	dev_close(&t->td_dev);
	dev_close(cd);
	dev_close(inner);
	free(w);
}

/*
 * The engine reports every failure it sees: each run's messages go to a
 * scratch file, shown only if the run fails (a failed CHECK exits).
 */
static FILE *run_log;

static void show_run_log(void)
{
	if (!run_log)
		return;
	fflush(run_log);
	char b[4096];
	ssize_t n;
	off_t o = 0;
	while ((n = pread(fileno(run_log), b, sizeof(b), o)) > 0 && write(2, b, (size_t)n) == n)
		o += n;
}

static void test_fault_loop(bool sticky)
{
	/* how many I/Os the workload and its unmount do without faults */
	uint64_t total;
	{
		struct dev *inner = mkimg(16 * MIB), *cd;
		CHECK_OK(crashdev_create(inner, 0, &cd));
		struct tdev *t = tdev_create(cd);
		struct fs *fs;
		CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = &t->td_dev}, &fs));
		struct wl *w = calloc(1, sizeof(*w));
		w->ddev = &t->td_dev;
		dev_inject_fault(cd, UINT64_MAX, false);
		workload(fs, w);
		CHECK_EQ(w->errors, 0);
		CHECK_OK(fs_unmount(fs));
		total = dev_io_count(cd);
		verify_image(inner, w, "no fault");
		for (unsigned i = 0; i < NFILES; i++)
			CHECK(w->f[i].acked || i % 3 == 2 || w->f[i].maybe_gone);
		free(w);
		dev_close(&t->td_dev);
		dev_close(cd);
		dev_close(inner);
	}
	struct loop_stats ls = {0};
	msg_set_level(MSG_ERR);
	FILE *saved = stderr;
	atexit(show_run_log);
	for (uint64_t n = 1; n <= total + 3; n++) {
		run_log = tmpfile();
		CHECK(run_log);
		stderr = run_log;
		fault_run(n, sticky, &ls);
		stderr = saved;
		fclose(run_log);
		run_log = NULL;
	}
	printf("fault loop%s: %llu I/Os, %u runs: %u journal I/O failures, %u workload I/O "
	       "failures, %u shut down, %u unmounts failed; every image clean after a power cut\n",
	       sticky ? " (sticky)" : "", (unsigned long long)total, ls.runs, ls.bg_faults,
	       ls.fg_faults, ls.shutdowns, ls.unmount_eio);
	CHECK(ls.bg_faults > 0 && ls.fg_faults > 0 && ls.shutdowns >= ls.bg_faults);
	TEST_PASS(sticky ? "EIO fault loop (sticky)" : "EIO fault loop");
}

/* mkfs refuses a log too small for any transaction (it made filesystems
 * on which every change failed with E2BIG) */
static void test_small_log(void)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(8 * MIB, NULL, &d));
	CHECK_EQ(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d, .log_size = 256 << 10}), -EINVAL);
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d, .log_size = 512 << 10}));
	struct fs *fs = mnt(d);
	struct fs_inode *root;
	CHECK_OK(fs_root(fs, &root));
	uint8_t *buf = calloc(1, MIB);
	for (unsigned i = 0; i < 50; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%u", i);
		int err;
		struct fs_inode *ip = create(root, name, S_IFREG | 0644, &err);
		CHECK_OK(err);
		CHECK_OK(fs_write(ip, 0, buf, 64 << 10, NULL));
		fs_iput(ip);
	}
	free(buf);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	check_clean(d, "small log");
	dev_close(d);
	TEST_PASS("mkfs: smallest log");
}

/* ---- a failed flush of the data device ---- */

/*
 * A failed flush of the data device moves the data epoch (fs_data_epoch),
 * whichever path flushed: fs_flush_data (the NFS COMMIT's), fdatasync
 * after an overwrite (rule 5's flush in place of a log write), a layout
 * commit of written blocks, and the journal's flush before a checkpoint
 * (with an external log; the filesystem then shuts down). The call that
 * flushed fails with EIO; a retry that flushes again succeeds, and the
 * epoch stays where the failure moved it.
 */
static void test_data_epoch(void)
{
	struct dev *d = mkimg(64 * MIB);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	int err;
	f = create(root, "e", S_IFREG | 0644, &err);
	CHECK_OK(err);
	uint8_t *buf = malloc(65536);
	fill(buf, 65536, 1);
	CHECK_OK(fs_write(f, 0, buf, 65536, NULL));
	CHECK_OK(fs_fsync(f, false, NULL));
	uint64_t e = fs_data_epoch(fs);

	/* fs_flush_data */
	CHECK_OK(fs_write(f, 0, buf, 4096, NULL));
	dev_inject_flush_fault(d, 1);
	CHECK_EQ(fs_flush_data(fs), -EIO);
	CHECK(fs_data_epoch(fs) != e);
	e = fs_data_epoch(fs);
	CHECK_OK(fs_flush_data(fs));
	CHECK_EQ(fs_data_epoch(fs), e);

	/* fdatasync of an overwrite: no log write, a flush */
	CHECK_OK(fs_write(f, 4096, buf, 4096, NULL));
	dev_inject_flush_fault(d, 1);
	CHECK_EQ(fs_fsync(f, true, NULL), -EIO);
	CHECK(fs_data_epoch(fs) != e);
	e = fs_data_epoch(fs);
	bool logged = true;
	CHECK_OK(fs_fsync(f, true, &logged));
	CHECK(!logged);
	CHECK_EQ(fs_data_epoch(fs), e);

	/* a layout commit of blocks the client overwrote in place */
	struct fs_map m;
	unsigned n;
	CHECK_OK(fs_map_blocks(f, 0, 4096, false, &m, 1, &n));
	CHECK(n == 1 && m.state == FS_MAP_WRITTEN);
	CHECK_OK(dev_write(d, buf, 4096, m.addr, 0));
	dev_inject_flush_fault(d, 1);
	struct fs_range rg = {0, 4096};
	CHECK_EQ(fs_commit_blocks(f, &rg, 1, 0, NULL, NULL), -EIO);
	CHECK(fs_data_epoch(fs) != e);
	e = fs_data_epoch(fs);
	CHECK_OK(fs_commit_blocks(f, &rg, 1, 0, NULL, NULL));
	CHECK_EQ(fs_data_epoch(fs), e);
	CHECK(same(f, 0, 4096, 1));
	fs_iput(f);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	check_clean(d, "data epoch");
	dev_close(d);

	/* the journal's flush of the data device before a checkpoint */
	struct dev *ld;
	CHECK_OK(dev_mem_create(64 * MIB, NULL, &d));
	CHECK_OK(dev_mem_create(4 * MIB, NULL, &ld));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d, .ldev = ld, .log_size = 4 * MIB}));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .ldev = ld}, &fs));
	CHECK_OK(fs_root(fs, &root));
	f = create(root, "j", S_IFREG | 0644, &err);
	CHECK_OK(err);
	CHECK_OK(fs_write(f, 0, buf, 65536, NULL)); /* allocates: a checkpoint to write */
	e = fs_data_epoch(fs);
	dev_inject_flush_fault(d, 1);
	CHECK_EQ(fs_fsync(f, true, NULL), -EIO);
	CHECK(fs_data_epoch(fs) != e);
	CHECK_EQ(fs_fsync(f, true, NULL), -EIO); /* shut down */
	fs_iput(f);
	fs_iput(root);
	CHECK_EQ(fs_unmount(fs), -EIO);
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .ldev = ld, .readonly_check = true},
			  &fs));
	uint64_t problems = 1;
	CHECK_OK(fs_check(fs, stderr, &problems));
	CHECK_EQ(problems, 0);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
	dev_close(ld);
	free(buf);
	TEST_PASS("a failed flush of the data device moves the data epoch, on every path");
}

/*
 * A stable write's data mark (src/dev/dev.h F6, fs_data_mark): another
 * caller's flush (a COMMIT's, flush-behind's) fails after a write's data
 * went to the device and before the fsync that makes it stable, and the
 * page cache drops the write (crashdev_drop_unflushed). The fsync's own
 * flush then succeeds and fs_fsync returns 0, which alone would have the
 * server reply "stable" (srv.h S1) with the old data on the device.
 * fs_data_lost_since(mark) says so. The write again, with a mark taken
 * after the failure (which then does not count), is stable, and reads
 * back after a power cut.
 */
static void test_data_mark(void)
{
	struct dev *inner = mkimg(64 * MIB), *cd;
	CHECK_OK(crashdev_create(inner, 0, &cd));
	struct fs *fs = mnt(cd);
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	int err;
	f = create(root, "m", S_IFREG | 0644, &err);
	CHECK_OK(err);
	uint8_t *buf = malloc(65536);
	fill(buf, 65536, 1);
	CHECK_OK(fs_write(f, 0, buf, 65536, NULL));
	CHECK_OK(fs_fsync(f, false, NULL));

	/* lost: the overwrite, a failed flush of somebody else's, the fsync */
	uint64_t mark = fs_data_mark(fs);
	fill(buf, 4096, 2);
	CHECK_OK(fs_write(f, 0, buf, 4096, NULL));
	dev_inject_flush_fault(cd, 1);
	CHECK_EQ(fs_flush_data(fs), -EIO);
	CHECK_EQ(crashdev_drop_unflushed(cd), 1);
	CHECK_OK(fs_fsync(f, false, NULL)); /* F4: the next flush returns 0 */
	CHECK(same(f, 0, 4096, 1));	    /* the fsync's 0 was no promise */
	CHECK(fs_data_lost_since(fs, mark));

	/* the write again: the failure is older than its mark */
	mark = fs_data_mark(fs);
	CHECK_OK(fs_write(f, 0, buf, 4096, NULL));
	CHECK_OK(fs_fsync(f, false, NULL));
	CHECK(!fs_data_lost_since(fs, mark));
	fs_iput(f);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	CHECK_OK(crashdev_powerfail(cd, 1, NULL));
	dev_close(cd);
	fs = mnt(inner);
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_lookup(root, "m", 1, &f));
	CHECK(same(f, 0, 4096, 2));
	fs_iput(f);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	check_clean(inner, "data mark");
	dev_close(inner);
	free(buf);
	TEST_PASS("a flush failed after a write's data write: its mark says lost (F6)");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	msg_set_level(MSG_ERR);
	test_small_log();
	test_data_epoch();
	test_data_mark();
	test_enospc_files();
	test_enospc_reuse();
	test_enospc_free_when_full();
	test_enospc_bigfile();
	test_enospc_bigdir();
	for (uint64_t seed = 1; seed <= 3; seed++)
		test_enospc_mixed(seed);
	TEST_PASS("ENOSPC near full, mixed operations");
	test_fault_loop(false);
	test_fault_loop(true);
	return 0;
}
