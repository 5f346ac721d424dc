/*
 * test_fs.c - the filesystem engine: namespace operations and their errors,
 * file data (holes, unwritten extents, extent trees, truncate, fallocate,
 * seek), large directories, remount, orphans, and `check` after each; the
 * pre/post attributes of struct fs_result and the SETATTR guard, atomic
 * with the change under concurrent changers; the durable records.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/msg.h"
#include "base/rand.h"
#include "base/time.h"
#include "check.h"
#include "fs_pattern.h"
#include "dev/dev.h"
#include "fs/fs.h"
#include "fs/fs_priv.h" /* test_cache_limits sets the cache limits */

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

/* Release *root, unmount cleanly, mount again: the new mount, its root in *root. */
static struct fs *remount(struct fs *fs, struct dev *d, struct fs_inode **root)
{
	fs_iput(*root);
	CHECK_OK(fs_unmount(fs));
	fs = mnt(d);
	CHECK_OK(fs_root(fs, root));
	return fs;
}

/* Unmount, then check the image offline: must be clean. */
static void umount_check(struct fs *fs, struct dev *d)
{
	CHECK_OK(fs_unmount(fs));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .readonly_check = true}, &fs));
	uint64_t problems = 1;
	CHECK_OK(fs_check(fs, stderr, &problems));
	CHECK_EQ(problems, 0);
	CHECK_OK(fs_unmount(fs));
}

static struct fs_inode *mk(struct fs_inode *dir, const char *name, uint32_t mode)
{
	struct fs_inode *ip;
	struct fs_create_args a = {.mode = mode, .uid = 1000, .gid = 100};
	CHECK_OK(fs_create(dir, name, strlen(name), &a, &ip, NULL));
	return ip;
}

static int count_cb(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		    uint64_t cookie)
{
	(*(unsigned *)arg)++;
	return 0;
}

static unsigned count_entries(struct fs_inode *dir)
{
	unsigned n = 0;
	CHECK_OK(fs_readdir(dir, 0, count_cb, &n));
	return n;
}

static void test_namespace(void)
{
	struct dev *d = mkimg(64 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *a, *b, *dir, *ip;
	CHECK_OK(fs_root(fs, &root));
	a = mk(root, "a", S_IFREG | 0644);
	dir = mk(root, "dir", S_IFDIR | 0755);
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_EQ(fs_create(root, "a", 1, &ca, &ip, NULL), -EEXIST);
	CHECK_EQ(fs_create(root, "x/y", 3, &ca, &ip, NULL), -EINVAL);
	char longname[300];
	memset(longname, 'n', sizeof(longname));
	CHECK_EQ(fs_create(root, longname, 256, &ca, &ip, NULL), -ENAMETOOLONG);
	ip = mk(root, "n255-placeholder", S_IFREG | 0644);
	fs_iput(ip);
	CHECK_OK(fs_create(root, longname, 255, &ca, &ip, NULL));
	fs_iput(ip);
	CHECK_EQ(fs_lookup(root, "missing", 7, &ip), -ENOENT);
	CHECK_EQ(fs_lookup(a, "x", 1, &ip), -ENOTDIR);
	/* link, attributes */
	CHECK_OK(fs_link(a, dir, "a2", 2, NULL));
	CHECK_EQ(fs_link(dir, root, "dirlink", 7, NULL), -EPERM);
	struct fs_attr at;
	CHECK_OK(fs_getattr(a, &at));
	CHECK_EQ(at.nlink, 2);
	CHECK_EQ(at.uid, 1000);
	CHECK_OK(fs_getattr(root, &at));
	CHECK_EQ(at.nlink, 3);
	/* symlinks, short and long, and special files */
	struct fs_create_args sa = {.mode = S_IFLNK | 0777, .target = "a", .target_len = 1};
	CHECK_OK(fs_create(root, "s", 1, &sa, &ip, NULL));
	fs_iput(ip);
	char target[2000];
	memset(target, 't', sizeof(target));
	sa.target = target;
	sa.target_len = sizeof(target);
	CHECK_OK(fs_create(root, "slong", 5, &sa, &ip, NULL));
	char buf[4096];
	size_t n;
	CHECK_OK(fs_readlink(ip, buf, sizeof(buf), &n));
	CHECK_EQ(n, sizeof(target));
	CHECK(memcmp(buf, target, n) == 0);
	fs_iput(ip);
	struct fs_create_args da = {.mode = S_IFCHR | 0600, .rdev = 0x0501};
	CHECK_OK(fs_create(root, "tty", 3, &da, &ip, NULL));
	CHECK_OK(fs_getattr(ip, &at));
	CHECK_EQ(at.rdev, 0x0501);
	fs_iput(ip);
	/* rmdir of a non-empty directory, unlink of a directory */
	CHECK_EQ(fs_rmdir(root, "dir", 3, NULL), -ENOTEMPTY);
	CHECK_EQ(fs_unlink(root, "dir", 3, NULL), -EISDIR);
	CHECK_EQ(fs_rmdir(root, "a", 1, NULL), -ENOTDIR);
	/* renames: file over file, into a directory, directory over empty
	 * directory, a directory under itself */
	b = mk(root, "b", S_IFREG | 0644);
	CHECK_OK(fs_rename(root, "b", 1, root, "a", 1, NULL)); /* replaces a */
	CHECK_OK(fs_getattr(a, &at));
	CHECK_EQ(at.nlink, 1); /* still named dir/a2 */
	CHECK_OK(fs_lookup(root, "a", 1, &ip));
	CHECK_EQ(fs_ino(ip), fs_ino(b));
	fs_iput(ip);
	struct fs_inode *d2 = mk(root, "d2", S_IFDIR | 0755);
	struct fs_inode *sub = mk(dir, "sub", S_IFDIR | 0755);
	CHECK_EQ(fs_rename(root, "dir", 3, sub, "x", 1, NULL), -EINVAL);
	CHECK_OK(fs_rename(dir, "sub", 3, root, "d2", 2, NULL)); /* over an empty dir */
	CHECK_OK(fs_getattr(d2, &at));
	CHECK_EQ(at.nlink, 0);
	CHECK_OK(fs_lookup(root, "..", 2, &ip));
	CHECK_EQ(fs_ino(ip), fs_ino(root));
	fs_iput(ip);
	CHECK_OK(fs_lookup(sub, "..", 2, &ip));
	CHECK_EQ(fs_ino(ip), fs_ino(root));
	fs_iput(ip);
	CHECK_EQ(fs_rename(root, "a", 1, root, "d2", 2, NULL), -EISDIR);
	CHECK_EQ(fs_rename(root, "d2", 2, root, "a", 1, NULL), -ENOTDIR);
	fs_iput(d2);
	fs_iput(sub);
	fs_iput(a);
	fs_iput(b);
	fs_iput(dir);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("namespace");
}

static void test_data(void)
{
	struct dev *d = mkimg(128 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	f = mk(root, "f", S_IFREG | 0644);
	struct rng r;
	rng_seed(&r, 7);
	enum { SIZE = 4 << 20 };
	uint8_t *model = calloc(1, SIZE), *buf = malloc(SIZE);
	uint64_t size = 0;
	/* random writes of random sizes, sparse, unaligned */
	for (int i = 0; i < 300; i++) {
		uint64_t off = rng_below(&r, SIZE - 70000), len = 1 + rng_below(&r, 65536);
		if (i % 3 == 0)
			off = ALIGN_DOWN(off, 4096ull);
		for (uint64_t k = 0; k < len; k++)
			buf[k] = (uint8_t)rng_next(&r);
		CHECK_OK(fs_write(f, off, buf, len, NULL));
		memcpy(model + off, buf, len);
		if (off + len > size)
			size = off + len;
		if (i % 50 == 0) {
			/* punch and truncate in between */
			uint64_t po = rng_below(&r, size), pl = 1 + rng_below(&r, 100000);
			CHECK_OK(fs_fallocate(f, FS_FALLOC_PUNCH, po, pl, NULL));
			uint64_t pe = MIN(po + pl, size);
			if (po < pe)
				memset(model + po, 0, pe - po);
		}
	}
	size_t n;
	bool eof;
	CHECK_OK(fs_read(f, 0, buf, SIZE, &n, &eof));
	CHECK_EQ(n, size);
	CHECK(memcmp(buf, model, size) == 0);
	/* truncate down to an unaligned size, then grow: the tail reads zeros */
	uint64_t t = size / 3 + 123;
	CHECK_OK(fs_setattr(f, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = t}, NULL));
	CHECK_OK(fs_setattr(f, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = size}, NULL));
	memset(model + t, 0, size - t);
	CHECK_OK(fs_read(f, 0, buf, SIZE, &n, &eof));
	CHECK_EQ(n, size);
	CHECK(memcmp(buf, model, size) == 0);
	/* seek */
	uint64_t pos;
	struct fs_inode *g = mk(root, "g", S_IFREG | 0644);
	CHECK_OK(fs_write(g, 1 << 20, buf, 4096, NULL));
	CHECK_OK(fs_seek(g, 0, FS_SEEK_DATA, &pos));
	CHECK_EQ(pos, 1 << 20);
	CHECK_OK(fs_seek(g, 0, FS_SEEK_HOLE, &pos));
	CHECK_EQ(pos, 0);
	CHECK_OK(fs_seek(g, 1 << 20, FS_SEEK_HOLE, &pos));
	CHECK_EQ(pos, (1 << 20) + 4096);
	CHECK_EQ(fs_seek(g, 2 << 20, FS_SEEK_DATA, &pos), -ENXIO);
	/* fallocate: unwritten space reads zeros and is not data */
	CHECK_OK(fs_fallocate(g, FS_FALLOC_ALLOC, 0, 65536, NULL));
	CHECK_OK(fs_seek(g, 0, FS_SEEK_DATA, &pos));
	CHECK_EQ(pos, 1 << 20);
	CHECK_OK(fs_read(g, 0, buf, 65536, &n, &eof));
	for (size_t i = 0; i < 65536; i++)
		CHECK_EQ(buf[i], 0);
	struct fs_attr at;
	CHECK_OK(fs_getattr(g, &at));
	CHECK(at.used >= 65536 + 4096);
	/* zero range over written data */
	CHECK_OK(fs_fallocate(g, FS_FALLOC_ZERO, (1 << 20) + 100, 200, NULL));
	CHECK_OK(fs_read(g, (1 << 20), buf, 4096, &n, &eof));
	for (size_t i = 100; i < 300; i++)
		CHECK_EQ(buf[i], 0);
	/* copy */
	uint64_t copied;
	struct fs_inode *h = mk(root, "h", S_IFREG | 0644);
	CHECK_OK(fs_copy_range(f, 0, h, 0, size, &copied, NULL));
	CHECK_EQ(copied, size);
	CHECK_OK(fs_read(h, 0, buf, SIZE, &n, &eof));
	CHECK(memcmp(buf, model, size) == 0);
	fs_iput(f);
	fs_iput(g);
	fs_iput(h);
	/* everything survives a remount */
	fs = remount(fs, d, &root);
	CHECK_OK(fs_lookup(root, "f", 1, &f));
	CHECK_OK(fs_read(f, 0, buf, SIZE, &n, &eof));
	CHECK_EQ(n, size);
	CHECK(memcmp(buf, model, size) == 0);
	/* a file with many extents (an extent tree), then freed */
	for (int i = 0; i < 200; i++)
		CHECK_OK(fs_write(f, (uint64_t)SIZE + (uint64_t)i * 8192, buf, 4096, NULL));
	fs_iput(f);
	CHECK_OK(fs_unlink(root, "f", 1, NULL));
	fs_iput(root);
	umount_check(fs, d);
	free(model);
	free(buf);
	dev_close(d);
	TEST_PASS("data");
}

static void test_bigdir(void)
{
	struct dev *d = mkimg(128 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *dir;
	CHECK_OK(fs_root(fs, &root));
	dir = mk(root, "big", S_IFDIR | 0755);
	enum { N = 5000 };
	char name[64];
	for (int i = 0; i < N; i++) {
		int l = snprintf(name, sizeof(name), "entry-with-a-longer-name-%06d", i);
		struct fs_inode *ip;
		struct fs_create_args a = {.mode = (i % 10 ? S_IFREG : S_IFDIR) | 0644};
		CHECK_OK(fs_create(dir, name, (size_t)l, &a, &ip, NULL));
		fs_iput(ip);
	}
	CHECK_EQ(count_entries(dir), N + 2);
	for (int i = 0; i < N; i += 3) {
		int l = snprintf(name, sizeof(name), "entry-with-a-longer-name-%06d", i);
		if (i % 10)
			CHECK_OK(fs_unlink(dir, name, (size_t)l, NULL));
		else
			CHECK_OK(fs_rmdir(dir, name, (size_t)l, NULL));
	}
	CHECK_EQ(count_entries(dir), N - (N + 2) / 3 + 2);
	fs_iput(dir);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("big directory");
}

/* Where readdir saw a name, and under which cookie. */
struct seen {
	const char *name;
	uint64_t ino, cookie;
	unsigned count;
};

static int seen_cb(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		   uint64_t cookie)
{
	struct seen *s = arg;
	if (len == strlen(s->name) && memcmp(name, s->name, len) == 0) {
		s->ino = ino;
		s->cookie = cookie;
		s->count++;
	}
	return 0;
}

static struct seen readdir_find(struct fs_inode *dir, const char *name, uint64_t from)
{
	struct seen s = {.name = name};
	CHECK_OK(fs_readdir(dir, from, seen_cb, &s));
	return s;
}

static uint64_t lookup_ino(struct fs_inode *dir, const char *name)
{
	struct fs_inode *ip;
	int err = fs_lookup(dir, name, strlen(name), &ip);
	if (err)
		return (uint64_t)err; /* -errno, far above any inode number */
	uint64_t ino = fs_ino(ip);
	fs_iput(ip);
	return ino;
}

/*
 * Names whose 48-bit hashes collide (found by a birthday search) share a
 * hash in the directory tree and are told apart by the collision index in
 * the key's low bits. Each must be found by its own name, removing one
 * must leave the other reachable, a cookie must keep its place, a freed
 * index is reused, and rename over a colliding name replaces the right one.
 */
static void test_hash_collisions(void)
{
	static const char *a = "c13022887", *b = "c19549050", *x = "c579716", *y = "c30936665";
	/* if the hash changes, these stop colliding and the test stops testing */
	CHECK_EQ(dir_hash(a, strlen(a)), dir_hash(b, strlen(b)));
	CHECK_EQ(dir_hash(x, strlen(x)), dir_hash(y, strlen(y)));
	CHECK(dir_hash(a, strlen(a)) != dir_hash(x, strlen(x)));

	struct dev *d = mkimg(64 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *dir;
	CHECK_OK(fs_root(fs, &root));
	dir = mk(root, "coll", S_IFDIR | 0755);
	struct fs_inode *ia = mk(dir, a, S_IFREG | 0644), *ib = mk(dir, b, S_IFREG | 0644);
	uint64_t ino_a = fs_ino(ia), ino_b = fs_ino(ib);
	fs_iput(ia);
	fs_iput(ib);
	CHECK_EQ(lookup_ino(dir, a), ino_a);
	CHECK_EQ(lookup_ino(dir, b), ino_b);
	struct fs_inode *ip;
	struct fs_create_args fa = {.mode = S_IFREG | 0644};
	CHECK_EQ(fs_create(dir, b, strlen(b), &fa, &ip, NULL), -EEXIST);

	/* one hash, two keys: the second name got collision index 1 */
	struct seen sa = readdir_find(dir, a, 0), sb = readdir_find(dir, b, 0);
	CHECK_EQ(sa.count, 1);
	CHECK_EQ(sb.count, 1);
	CHECK_EQ(sa.ino, ino_a);
	CHECK_EQ(sb.ino, ino_b);
	CHECK_EQ(sa.cookie & ~FS_DIRHASH_MASK, 0);
	CHECK_EQ(sb.cookie, sa.cookie + 1);
	/* resuming after a's cookie still yields b */
	CHECK_EQ(readdir_find(dir, b, sa.cookie).count, 1);
	CHECK_EQ(readdir_find(dir, a, sa.cookie).count, 0);

	/* the first of the chain goes: the second is still found, at its cookie */
	CHECK_OK(fs_unlink(dir, a, strlen(a), NULL));
	CHECK_EQ(lookup_ino(dir, a), (uint64_t)-ENOENT);
	CHECK_EQ(lookup_ino(dir, b), ino_b);
	CHECK_EQ(readdir_find(dir, b, 0).cookie, sb.cookie);
	CHECK_EQ(readdir_find(dir, b, sa.cookie).count, 1);
	/* a again: it takes the free index 0, b keeps 1 */
	ia = mk(dir, a, S_IFREG | 0644);
	ino_a = fs_ino(ia);
	fs_iput(ia);
	CHECK_EQ(readdir_find(dir, a, 0).cookie, sa.cookie);
	CHECK_EQ(readdir_find(dir, b, 0).cookie, sb.cookie);
	CHECK_EQ(lookup_ino(dir, a), ino_a);
	CHECK_EQ(lookup_ino(dir, b), ino_b);

	/* rename b over a: a names b's inode, b is gone, one entry left */
	CHECK_OK(fs_rename(dir, b, strlen(b), dir, a, strlen(a), NULL));
	CHECK_EQ(lookup_ino(dir, a), ino_b);
	CHECK_EQ(lookup_ino(dir, b), (uint64_t)-ENOENT);
	CHECK_EQ(count_entries(dir), 3);

	/* a second colliding pair, made by link and rename from elsewhere */
	struct fs_inode *ix = mk(root, "x", S_IFREG | 0644);
	uint64_t ino_x = fs_ino(ix);
	CHECK_OK(fs_link(ix, dir, x, strlen(x), NULL));
	fs_iput(ix);
	CHECK_OK(fs_rename(root, "x", 1, dir, y, strlen(y), NULL));
	CHECK_EQ(lookup_ino(dir, x), ino_x);
	CHECK_EQ(lookup_ino(dir, y), ino_x);
	CHECK_OK(fs_unlink(dir, x, strlen(x), NULL));
	CHECK_EQ(lookup_ino(dir, x), (uint64_t)-ENOENT);
	CHECK_EQ(lookup_ino(dir, y), ino_x);

	/* all of it as the log replays it and check sees it */
	uint64_t ino_dir = fs_ino(dir);
	fs_iput(dir);
	fs = remount(fs, d, &root);
	CHECK_OK(fs_lookup(root, "coll", 4, &dir));
	CHECK_EQ(fs_ino(dir), ino_dir);
	CHECK_EQ(lookup_ino(dir, a), ino_b);
	CHECK_EQ(lookup_ino(dir, b), (uint64_t)-ENOENT);
	CHECK_EQ(lookup_ino(dir, y), ino_x);
	CHECK_EQ(lookup_ino(dir, x), (uint64_t)-ENOENT);
	CHECK_EQ(count_entries(dir), 4);
	fs_iput(dir);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("directory hash collisions");
}

/*
 * More busy inodes and buffers (logged, not yet written back) than the
 * cache limits allow: lookups stay right while the caches are over their
 * limits, and once everything is written back the caches shrink to their
 * limits again, although one release looks at a bounded number of entries
 * and only rotates the busy ones it meets.
 */
static void test_cache_limits(void)
{
	struct dev *d = mkimg(64 << 20);
	struct fs *fs = mnt(d);
	fs->f_ninodes_max = 64;
	fs->f_nbufs_max = 64;
	struct fs_inode *root, *dir;
	CHECK_OK(fs_root(fs, &root));
	dir = mk(root, "c", S_IFDIR | 0755);
	enum { N = 3000 };
	static uint64_t inos[N];
	char name[64];
	for (int i = 0; i < N; i++) {
		int l = snprintf(name, sizeof(name), "f%05d", i);
		struct fs_inode *ip;
		struct fs_create_args a = {.mode = S_IFREG | 0644};
		CHECK_OK(fs_create(dir, name, (size_t)l, &a, &ip, NULL));
		inos[i] = fs_ino(ip);
		fs_iput(ip);
	}
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1) {
			CHECK_OK(fs_sync(fs));
			CHECK_OK(log_ail_push_all(fs->f_log));
		}
		for (int i = 0; i < N; i++) {
			int l = snprintf(name, sizeof(name), "f%05d", (i * 7919) % N);
			struct fs_inode *ip;
			CHECK_OK(fs_lookup(dir, name, (size_t)l, &ip));
			CHECK_EQ(fs_ino(ip), inos[(i * 7919) % N]);
			fs_iput(ip);
		}
		if (pass == 0)
			CHECK(fs->f_ninodes > 64); /* busy: still cached */
	}
	CHECK(fs->f_ninodes <= 64);
	CHECK(fs->f_nbufs <= 64);
	fs_iput(dir);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("cache limits with busy inodes and buffers");
}

/* An unlinked file that is still referenced lives until the last
 * reference; a crash in between leaves an orphan that mount frees. */
static void test_orphans(void)
{
	struct dev *d = mkimg(64 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	f = mk(root, "f", S_IFREG | 0644);
	uint8_t buf[8192] = {1};
	CHECK_OK(fs_write(f, 0, buf, sizeof(buf), NULL));
	CHECK_OK(fs_unlink(root, "f", 1, NULL));
	size_t n;
	bool eof;
	CHECK_OK(fs_read(f, 0, buf, sizeof(buf), &n, &eof)); /* still readable */
	CHECK_EQ(n, sizeof(buf));
	CHECK_OK(fs_sync(fs));
	/* a crash now: the orphan is on disk */
	fs_shutdown(fs, "test");
	fs_iput(f);
	fs_iput(root);
	fs_unmount(fs);
	/* check before the orphan is processed: allowed, listed */
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .readonly_check = true}, &fs));
	uint64_t problems;
	CHECK_OK(fs_check(fs, stderr, &problems));
	CHECK_EQ(problems, 0);
	fs_shutdown(fs, "test");
	fs_unmount(fs);
	fs = mnt(d); /* frees the orphan */
	struct fs_statfs st;
	CHECK_OK(fs_statfs(fs, &st));
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("orphans");
}

/*
 * Fragmented free space: two files allocated block by block in turns, one
 * removed, leaves thousands of one-block holes; a large fallocate then
 * takes thousands of extents and a truncate frees them. Each transaction
 * must stay bounded (a few extents: the locks it holds, what it logs),
 * whatever the size of the range.
 */
static void test_fragmented(void)
{
	enum { PAIRS = 3000 };
	struct dev *d = mkimg(64 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *a, *b, *c;
	CHECK_OK(fs_root(fs, &root));
	a = mk(root, "a", S_IFREG | 0644);
	b = mk(root, "b", S_IFREG | 0644);
	for (uint64_t i = 0; i < PAIRS; i++) {
		CHECK_OK(fs_fallocate(a, FS_FALLOC_ALLOC, i * 4096, 4096, NULL));
		CHECK_OK(fs_fallocate(b, FS_FALLOC_ALLOC, i * 4096, 4096, NULL));
	}
	/* the rest of the space, but for some room for metadata */
	struct fs_statfs st;
	CHECK_OK(fs_statfs(fs, &st));
	struct fs_inode *filler = mk(root, "filler", S_IFREG | 0644);
	CHECK_OK(fs_fallocate(filler, FS_FALLOC_ALLOC, 0, (st.bfree - 256) * 4096, NULL));
	fs_iput(b);
	CHECK_OK(fs_unlink(root, "b", 1, NULL));
	c = mk(root, "c", S_IFREG | 0644);
	/* the holes b left: one-block extents */
	CHECK_OK(fs_fallocate(c, FS_FALLOC_ALLOC, 0, (PAIRS + 100) * 4096ull, NULL));
	struct fs_attr at;
	CHECK_OK(fs_getattr(c, &at));
	CHECK_EQ(at.size, (PAIRS + 100) * 4096ull);
	CHECK(at.used >= (PAIRS + 100) * 4096ull);
	fs_iput(filler);
	CHECK_OK(fs_setattr(c, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = 0}, NULL));
	fs_iput(a);
	fs_iput(c);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("fallocate and truncate over fragmented free space, in bounded transactions");
}

static uint64_t used_of(struct fs_inode *ip)
{
	struct fs_attr a;
	CHECK_OK(fs_getattr(ip, &a));
	return a.used;
}

/*
 * Speculative preallocation past EOF goes back: when the file has been idle
 * for the mount's eof_idle_ns, at unmount, and when an allocation finds no
 * space. fallocate's blocks past EOF stay.
 */
static void test_eofblocks(void)
{
	enum { KIB = 1024, MIB = 1024 * 1024 };
	struct dev *d = mkimg(64 << 20);
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .eof_idle_ns = 20 * NSEC_PER_MSEC},
			  &fs));
	struct fs_inode *root, *app, *fal;
	CHECK_OK(fs_root(fs, &root));
	app = mk(root, "app", S_IFREG | 0644);
	fal = mk(root, "fal", S_IFREG | 0644);
	for (unsigned i = 0; i < 4; i++)
		write_pattern(app, i * 64 * KIB, 64 * KIB, (uint8_t)(0x10 + i));
	CHECK(used_of(app) > 256 * KIB); /* preallocated past EOF */
	bool logged;
	CHECK_OK(fs_fsync(app, true, &logged));
	CHECK(logged);
	CHECK_OK(fs_fallocate(fal, FS_FALLOC_ALLOC | FS_FALLOC_KEEP_SIZE, 0, MIB, NULL));
	write_pattern(fal, 0, 4 * KIB, 0x20);
	/* idle: given back by the trimmer */
	for (int t = 0; t < 500 && used_of(app) != 256 * KIB; t++)
		sleep_ns(10 * NSEC_PER_MSEC);
	CHECK_EQ(used_of(app), 256 * KIB);
	/* giving blocks back past EOF is nothing fdatasync must wait for */
	CHECK_OK(fs_fsync(app, true, &logged));
	CHECK(!logged);
	for (unsigned i = 0; i < 4; i++)
		check_pattern(app, i * 64 * KIB, 64 * KIB, (uint8_t)(0x10 + i));
	sleep_ns(100 * NSEC_PER_MSEC);
	CHECK_EQ(used_of(fal), MIB); /* asked for: kept */
	fs_iput(app);
	fs_iput(fal);
	fs_iput(root);
	umount_check(fs, d);

	/* never idle long enough: unmount gives it back */
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .eof_idle_ns = 3600 * NSEC_PER_SEC},
			  &fs));
	CHECK_OK(fs_root(fs, &root));
	/* an unlinked file's blocks go at once, listed or not */
	struct fs_statfs st0, st1;
	CHECK_OK(fs_statfs(fs, &st0));
	struct fs_inode *gone = mk(root, "gone", S_IFREG | 0644);
	write_pattern(gone, 0, 64 * KIB, 0x40);
	CHECK(used_of(gone) > 64 * KIB);
	fs_iput(gone);
	CHECK_OK(fs_unlink(root, "gone", 4, NULL));
	CHECK_OK(fs_statfs(fs, &st1));
	CHECK_EQ(st1.bfree, st0.bfree);
	/* and a file a rename replaces */
	gone = mk(root, "gone", S_IFREG | 0644);
	write_pattern(gone, 0, 64 * KIB, 0x41);
	CHECK(used_of(gone) > 64 * KIB);
	fs_iput(gone);
	fs_iput(mk(root, "over", S_IFREG | 0644));
	CHECK_OK(fs_rename(root, "over", 4, root, "gone", 4, NULL));
	CHECK_OK(fs_statfs(fs, &st1));
	CHECK_EQ(st1.bfree, st0.bfree);
	CHECK_OK(fs_unlink(root, "gone", 4, NULL));
	struct fs_inode *late = mk(root, "late", S_IFREG | 0644);
	write_pattern(late, 0, 64 * KIB, 0x30);
	write_pattern(late, 64 * KIB, 32 * KIB, 0x31);
	CHECK(used_of(late) > 96 * KIB);
	fs_iput(late);
	fs = remount(fs, d, &root);
	CHECK_OK(fs_lookup(root, "late", 4, &late));
	CHECK_EQ(used_of(late), 96 * KIB);
	check_pattern(late, 0, 64 * KIB, 0x30);
	check_pattern(late, 64 * KIB, 32 * KIB, 0x31);
	fs_iput(late);

	/* a crash before the trim: found when the inode is next read */
	struct fs_inode *left = mk(root, "left", S_IFREG | 0644);
	write_pattern(left, 0, 64 * KIB, 0x50);
	CHECK_OK(fs_fsync(left, false, NULL));
	CHECK(used_of(left) > 64 * KIB);
	fs_iput(left);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .eof_idle_ns = 3600 * NSEC_PER_SEC},
			  &fs));
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_lookup(root, "left", 4, &left));
	write_pattern(left, 64 * KIB, 4 * KIB, 0x51); /* preallocates past EOF again */
	CHECK_OK(fs_fsync(left, false, NULL));
	fs_iput(left);
	/* and a sparse one: fewer blocks than its size, yet some past EOF */
	struct fs_inode *sparse = mk(root, "sparse", S_IFREG | 0644);
	CHECK_OK(fs_setattr(sparse, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = MIB}, NULL));
	write_pattern(sparse, MIB, 4 * KIB, 0x52);
	CHECK_OK(fs_fsync(sparse, false, NULL));
	CHECK(used_of(sparse) > 4 * KIB);
	fs_iput(sparse);
	fs_iput(root);
	fs_shutdown(fs, "test: power cut");
	CHECK(fs_unmount(fs) == -EIO);
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .eof_idle_ns = 20 * NSEC_PER_MSEC},
			  &fs));
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_lookup(root, "left", 4, &left));
	CHECK(used_of(left) > 68 * KIB);
	for (int t = 0; t < 500 && used_of(left) != 68 * KIB; t++)
		sleep_ns(10 * NSEC_PER_MSEC);
	CHECK_EQ(used_of(left), 68 * KIB);
	check_pattern(left, 0, 64 * KIB, 0x50);
	check_pattern(left, 64 * KIB, 4 * KIB, 0x51);
	fs_iput(left);
	CHECK_OK(fs_lookup(root, "sparse", 6, &sparse));
	for (int t = 0; t < 500 && used_of(sparse) != 4 * KIB; t++)
		sleep_ns(10 * NSEC_PER_MSEC);
	CHECK_EQ(used_of(sparse), 4 * KIB);
	check_pattern(sparse, MIB, 4 * KIB, 0x52);
	fs_iput(sparse);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));

	/* a full disk: files of 1 MiB, each preallocated another MiB, fill
	 * 80% of the free space only if the preallocation goes back */
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .eof_idle_ns = 3600 * NSEC_PER_SEC},
			  &fs));
	CHECK_OK(fs_root(fs, &root));
	struct fs_statfs st;
	CHECK_OK(fs_statfs(fs, &st));
	unsigned nfiles = (unsigned)(st.bfree * 4096 / 10 * 8 / MIB);
	CHECK(nfiles >= 30);
	for (unsigned i = 0; i < nfiles; i++) {
		char name[16];
		snprintf(name, sizeof(name), "full%u", i);
		struct fs_inode *f = mk(root, name, S_IFREG | 0644);
		write_pattern(f, 0, MIB, (uint8_t)i);
		fs_iput(f);
	}
	for (unsigned i = 0; i < nfiles; i++) {
		char name[16];
		snprintf(name, sizeof(name), "full%u", i);
		struct fs_inode *f;
		CHECK_OK(fs_lookup(root, name, strlen(name), &f));
		check_pattern(f, 0, MIB, (uint8_t)i);
		fs_iput(f);
	}
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("preallocation past EOF is given back when idle, at unmount and on a full disk; "
		  "fallocated blocks stay");
}

/* ---- durable records (fs_rec_*, rec.c) ---- */

/* A value of length len for key number i, version v: recognisable bytes. */
static size_t rec_value(unsigned i, unsigned v, size_t len, uint8_t *out)
{
	for (size_t k = 0; k < len; k++)
		out[k] = (uint8_t)(i * 31 + v * 7 + k);
	return len;
}

static size_t rec_key(unsigned i, char *out)
{
	return (size_t)snprintf(out, 32, "client-%u", i);
}

struct rec_seen {
	unsigned n;
	uint8_t *seen; /* per key number */
	unsigned version_of_len[FS_REC_VALUE_MAX + 1];
};

static int rec_seen_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct rec_seen *s = arg;
	unsigned i;
	CHECK(klen > 7 && !memcmp(key, "client-", 7));
	char buf[32];
	memcpy(buf, (const char *)key + 7, klen - 7);
	buf[klen - 7] = '\0';
	i = (unsigned)atoi(buf);
	CHECK(!s->seen[i]);
	s->seen[i] = 1;
	uint8_t want[FS_REC_VALUE_MAX];
	/* the "many" records: version 0, length i % 300 */
	CHECK_EQ(vlen, i % 300);
	rec_value(i, 0, vlen, want);
	CHECK(!memcmp(val, want, vlen));
	s->n++;
	return 0;
}

static void test_records(void)
{
	struct dev *d = mkimg(256 << 20);
	struct fs *fs = mnt(d);
	uint8_t val[FS_REC_VALUE_MAX], got[FS_REC_VALUE_MAX];
	size_t glen;
	char key[FS_REC_KEY_MAX + 2];
	struct fs_result res = {0};

	/* bounds */
	CHECK_EQ(fs_rec_put(fs, "", 0, val, 1, NULL), -EINVAL);
	memset(key, 'k', sizeof(key));
	CHECK_EQ(fs_rec_put(fs, key, FS_REC_KEY_MAX + 1, val, 1, NULL), -EINVAL);
	CHECK_EQ(fs_rec_put(fs, "a", 1, val, FS_REC_VALUE_MAX + 1, NULL), -EINVAL);
	CHECK_EQ(fs_rec_get(fs, "a", 1, got, &glen), -ENOENT);
	CHECK_EQ(fs_rec_delete(fs, "a", 1, NULL), -ENOENT);
	CHECK_EQ(fs_rec_count(fs), 0);

	/* put, get, replace across one and two fragments, delete */
	CHECK_OK(fs_rec_put(fs, "a", 1, val, 0, &res));
	CHECK(res.csn != 0);
	CHECK_OK(fs_force(fs, res.csn, NULL));
	CHECK_OK(fs_rec_get(fs, "a", 1, got, &glen));
	CHECK_EQ(glen, 0);
	static const size_t lens[] = {1, 828, 829, FS_REC_VALUE_MAX, 100, 900, 0, 500};
	for (unsigned v = 0; v < ARRAY_SIZE(lens); v++) {
		rec_value(7, v, lens[v], val);
		CHECK_OK(fs_rec_put(fs, key, FS_REC_KEY_MAX, val, lens[v], &res));
		CHECK(res.csn != 0);
		CHECK_OK(fs_rec_get(fs, key, FS_REC_KEY_MAX, got, &glen));
		CHECK_EQ(glen, lens[v]);
		CHECK(!memcmp(got, val, glen));
		CHECK_EQ(fs_rec_count(fs), 2);
	}
	CHECK_OK(fs_rec_delete(fs, "a", 1, &res));
	CHECK(res.csn != 0);
	CHECK_EQ(fs_rec_get(fs, "a", 1, got, &glen), -ENOENT);
	CHECK_EQ(fs_rec_count(fs), 1);
	CHECK_OK(fs_rec_delete(fs, key, FS_REC_KEY_MAX, NULL));
	CHECK_EQ(fs_rec_count(fs), 0);

	/* many: as many as the store holds, then one more is refused, a
	 * replace is not, and a delete makes room */
	for (unsigned i = 0; i < FS_REC_MAX; i++) {
		char k[32];
		size_t kl = rec_key(i, k);
		CHECK_OK(fs_rec_put(fs, k, kl, val, rec_value(i, 0, i % 300, val), NULL));
	}
	CHECK_EQ(fs_rec_count(fs), FS_REC_MAX);
	char k[32];
	size_t kl = rec_key(FS_REC_MAX, k);
	CHECK_EQ(fs_rec_put(fs, k, kl, val, 10, NULL), -ENOSPC);
	kl = rec_key(5, k);
	CHECK_OK(fs_rec_put(fs, k, kl, val, rec_value(5, 1, 1000, val), NULL));
	CHECK_OK(fs_rec_put(fs, k, kl, val, rec_value(5, 0, 5, val), NULL));
	kl = rec_key(6, k);
	CHECK_OK(fs_rec_delete(fs, k, kl, NULL));
	kl = rec_key(FS_REC_MAX, k);
	CHECK_OK(fs_rec_put(fs, k, kl, val, rec_value(FS_REC_MAX, 0, FS_REC_MAX % 300, val),
			    NULL));
	kl = rec_key(FS_REC_MAX, k);
	CHECK_OK(fs_rec_delete(fs, k, kl, NULL));
	kl = rec_key(6, k);
	CHECK_OK(fs_rec_put(fs, k, kl, val, rec_value(6, 0, 6, val), NULL));

	/* read back after a remount: every record once, as last put (and
	 * check is clean with a full store: R1-R4) */
	umount_check(fs, d);
	fs = mnt(d);
	CHECK_EQ(fs_rec_count(fs), FS_REC_MAX);
	struct rec_seen *s = calloc(1, sizeof(*s));
	s->seen = calloc(FS_REC_MAX + 1, 1);
	CHECK_OK(fs_rec_iterate(fs, rec_seen_cb, s));
	CHECK_EQ(s->n, FS_REC_MAX);
	free(s->seen);
	free(s);
	/* delete them all: the tree shrinks back to its root */
	for (unsigned i = 0; i < FS_REC_MAX; i++) {
		kl = rec_key(i, k);
		CHECK_OK(fs_rec_delete(fs, k, kl, NULL));
	}
	CHECK_EQ(fs_rec_count(fs), 0);
	CHECK_OK(fs_rec_put(fs, "last", 4, val, rec_value(1, 2, 1024, val), NULL));
	umount_check(fs, d);
	fs = mnt(d);
	CHECK_OK(fs_rec_get(fs, "last", 4, got, &glen));
	CHECK_EQ(glen, 1024);
	CHECK(!memcmp(got, val, 1024));
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("durable records: put, replace, delete, bounds, a full store, remount");
}

/* A file may end at FS_MAX_FILE_SIZE, not a byte past it: writes, sizes,
 * allocations. What protocols advertise (NFSv3 FSINFO) is what the engine
 * takes. */
static void test_max_file_size(void)
{
	const uint64_t max = FS_MAX_FILE_SIZE;
	struct dev *d = mkimg(64 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	f = mk(root, "max", S_IFREG | 0644);
	uint8_t buf[4096];
	memset(buf, 0x5a, sizeof(buf));
	CHECK_OK(fs_write(f, max - 4096, buf, 4096, NULL));
	CHECK_EQ(fs_write(f, max - 4095, buf, 4096, NULL), -EFBIG);
	CHECK_EQ(fs_write(f, max, buf, 1, NULL), -EFBIG);
	CHECK_EQ(fs_write(f, UINT64_MAX - 10, buf, 100, NULL), -EFBIG);
	struct fs_attr at;
	CHECK_OK(fs_getattr(f, &at));
	CHECK_EQ(at.size, max);
	check_pattern(f, max - 4096, 4096, 0x5a);
	CHECK_OK(fs_setattr(f, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = max - 1}, NULL));
	CHECK_OK(fs_setattr(f, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = max}, NULL));
	CHECK_EQ(fs_setattr(f, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = max + 1}, NULL),
		 -EFBIG);
	CHECK_OK(fs_fallocate(f, FS_FALLOC_ALLOC | FS_FALLOC_KEEP_SIZE, max - 8192, 8192, NULL));
	CHECK_EQ(fs_fallocate(f, FS_FALLOC_ALLOC | FS_FALLOC_KEEP_SIZE, max - 8192, 8193, NULL),
		 -EFBIG);
	CHECK_OK(fs_getattr(f, &at));
	CHECK_EQ(at.size, max);
	fs_iput(f);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("the largest file: a write may end at FS_MAX_FILE_SIZE, not past it");
}

/* ---- pre/post attributes (struct fs_result) ---- */

enum { WCC_THREADS = 4, WCC_OPS = 300 };

struct wcc_pair {
	uint64_t pre, post;
};

struct wcc_thread {
	unsigned t;
	struct fs_inode *root, *dir, *file, *other;
	struct wcc_pair dir_pairs[2 * WCC_OPS], file_pairs[WCC_OPS]; /* mkdir+rmdir: two */
	unsigned ndir, nfile;
};

/* The pair the call reported for slot: it must be there and atomic. */
static void wcc_keep(const struct fs_result *res, unsigned slot, struct wcc_pair *v, unsigned *n)
{
	const struct fs_res_ino *ri = &res->ino[slot];
	CHECK(ri->has_pre && ri->has_post);
	v[(*n)++] = (struct wcc_pair){ri->pre.change, ri->post.change};
}

/*
 * One thread: changes of one shared directory (create, rename within it,
 * link into it, unlink, mkdir, rmdir, chmod, rename out of it) and of one
 * shared file (aligned overwrites under the shared I/O lock, writes into
 * holes and past EOF in several transactions, truncates, fallocate), each
 * keeping the (pre, post) change attributes the engine reported.
 */
static void *wcc_run(void *arg)
{
	struct wcc_thread *w = arg;
	struct rng r;
	rng_seed(&r, 100 + w->t);
	uint8_t *buf = malloc(256 << 10);
	memset(buf, (int)(0x41 + w->t), 256 << 10);
	char names[WCC_OPS][32];
	unsigned live = 0, next = 0;
	for (unsigned i = 0; i < WCC_OPS; i++) {
		struct fs_result res = {.want = FS_RES_ATTRS};
		struct fs_inode *ip;
		char name[32], name2[32];
		unsigned k = (unsigned)rng_below(&r, 8);
		if (live == 0)
			k = 0;
		switch (k) {
		case 0: { /* create */
			snprintf(names[live], sizeof(names[live]), "f%u-%u", w->t, next++);
			struct fs_create_args ca = {.mode = S_IFREG | 0644};
			CHECK_OK(fs_create(w->dir, names[live], strlen(names[live]), &ca, &ip,
					   &res));
			fs_iput(ip);
			live++;
			break;
		}
		case 1: /* rename within the directory */
			snprintf(name, sizeof(name), "f%u-%u", w->t, next++);
			CHECK_OK(fs_rename(w->dir, names[live - 1], strlen(names[live - 1]), w->dir,
					   name, strlen(name), &res));
			CHECK_EQ(res.ino[1].pre.change, res.ino[0].pre.change);
			CHECK_EQ(res.ino[1].post.change, res.ino[0].post.change);
			memcpy(names[live - 1], name, sizeof(name));
			break;
		case 2: /* link a file from elsewhere */
			snprintf(names[live], sizeof(names[live]), "l%u-%u", w->t, next++);
			CHECK_OK(fs_link(w->other, w->dir, names[live], strlen(names[live]), &res));
			CHECK(res.ino[1].has_pre && res.ino[1].has_post);
			live++;
			break;
		case 3: /* unlink */
			live--;
			CHECK_OK(fs_unlink(w->dir, names[live], strlen(names[live]), &res));
			break;
		case 4: { /* mkdir, then rmdir */
			snprintf(name, sizeof(name), "d%u-%u", w->t, next++);
			struct fs_create_args da = {.mode = S_IFDIR | 0755};
			CHECK_OK(fs_create(w->dir, name, strlen(name), &da, &ip, &res));
			fs_iput(ip);
			wcc_keep(&res, 0, w->dir_pairs, &w->ndir);
			CHECK_OK(fs_rmdir(w->dir, name, strlen(name), &res));
			break;
		}
		case 5: /* chmod of the directory */
			CHECK_OK(fs_setattr(w->dir,
					    &(struct fs_setattr){.mask = FS_SET_MODE,
								 .mode = i & 1 ? 0775 : 0755},
					    &res));
			break;
		case 6: /* rename out of the directory: ino[0] is it */
			live--;
			snprintf(name2, sizeof(name2), "out%u-%u", w->t, next++);
			CHECK_OK(fs_rename(w->dir, names[live], strlen(names[live]), w->root, name2,
					   strlen(name2), &res));
			CHECK(res.ino[1].has_pre);
			break;
		default: /* a directory lookup changes nothing */
			CHECK_OK(fs_lookup(w->dir, names[live - 1], strlen(names[live - 1]), &ip));
			fs_iput(ip);
			res.ino[0].has_pre = false;
			break;
		}
		if (k < 7)
			wcc_keep(&res, 0, w->dir_pairs, &w->ndir);

		/* the file */
		res = (struct fs_result){.want = FS_RES_ATTRS};
		uint64_t off = rng_below(&r, 2 << 20), len = 1 + rng_below(&r, 256 << 10);
		switch (rng_below(&r, 6)) {
		case 0:
		case 1: /* aligned: overwrites inside the file under the shared I/O lock */
			off = ALIGN_DOWN(off / 2, 4096ull);
			len = 4096;
			/* fall through */
		case 2: /* anywhere: into holes, past EOF: several transactions */
			CHECK_OK(fs_write(w->file, off, buf, (size_t)len, &res));
			break;
		case 3:
			CHECK_OK(fs_setattr(w->file,
					    &(struct fs_setattr){.mask = FS_SET_SIZE, .size = off},
					    &res));
			break;
		case 4:
			CHECK_OK(fs_fallocate(w->file, FS_FALLOC_PUNCH, off, len, &res));
			break;
		default:
			CHECK_OK(fs_fallocate(w->file, FS_FALLOC_ZERO, off, len, &res));
			break;
		}
		wcc_keep(&res, 0, w->file_pairs, &w->nfile);
	}
	free(buf);
	return NULL;
}

static int pair_cmp(const void *a, const void *b)
{
	const struct wcc_pair *x = a, *y = b;
	return x->pre < y->pre ? -1 : x->pre > y->pre;
}

/* The pairs of every change of one inode form one chain from its first
 * change attribute to its last: no two calls started from the same state,
 * and each call's "post" is the next call's "pre". */
static void check_chain(struct wcc_pair *v, unsigned n, uint64_t first, uint64_t last,
			const char *what)
{
	qsort(v, n, sizeof(*v), pair_cmp);
	uint64_t at = first;
	for (unsigned i = 0; i < n; i++) {
		if (v[i].pre != at || v[i].post <= v[i].pre) {
			fprintf(stderr, "%s: change %u of %u is (%llu, %llu), expected pre %llu\n",
				what, i, n, (unsigned long long)v[i].pre,
				(unsigned long long)v[i].post, (unsigned long long)at);
			CHECK(0);
		}
		at = v[i].post;
	}
	CHECK_EQ(at, last);
}

static void test_wcc_chain(void)
{
	struct dev *d = mkimg(256 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root;
	CHECK_OK(fs_root(fs, &root));
	struct fs_inode *dir = mk(root, "shared", S_IFDIR | 0755);
	struct fs_inode *file = mk(root, "file", S_IFREG | 0644);
	struct fs_inode *other = mk(root, "other", S_IFREG | 0644);
	struct fs_attr da, fa;
	CHECK_OK(fs_getattr(dir, &da));
	CHECK_OK(fs_getattr(file, &fa));
	static struct wcc_thread w[WCC_THREADS];
	pthread_t tid[WCC_THREADS];
	for (unsigned t = 0; t < WCC_THREADS; t++) {
		w[t] = (struct wcc_thread){
			.t = t, .root = root, .dir = dir, .file = file, .other = other};
		CHECK_OK(pthread_create(&tid[t], NULL, wcc_run, &w[t]));
	}
	static struct wcc_pair dirs[WCC_THREADS * WCC_OPS * 2], files[WCC_THREADS * WCC_OPS];
	unsigned nd = 0, nf = 0;
	for (unsigned t = 0; t < WCC_THREADS; t++) {
		CHECK_OK(pthread_join(tid[t], NULL));
		memcpy(dirs + nd, w[t].dir_pairs, w[t].ndir * sizeof(dirs[0]));
		nd += w[t].ndir;
		memcpy(files + nf, w[t].file_pairs, w[t].nfile * sizeof(files[0]));
		nf += w[t].nfile;
	}
	struct fs_attr da2, fa2;
	CHECK_OK(fs_getattr(dir, &da2));
	CHECK_OK(fs_getattr(file, &fa2));
	check_chain(dirs, nd, da.change, da2.change, "directory");
	check_chain(files, nf, fa.change, fa2.change, "file");

	/* a call that changes nothing reports the state it found, once */
	struct fs_result res = {.want = FS_RES_ATTRS};
	struct fs_inode *ip;
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	CHECK_EQ(fs_create(root, "file", 4, &ca, &ip, &res), -EEXIST);
	CHECK(!res.ino[0].has_pre && !res.ino[0].has_post);
	/* without FS_RES_ATTRS, only the sequence */
	res = (struct fs_result){0};
	CHECK_OK(fs_setattr(file, &(struct fs_setattr){.mask = FS_SET_MODE, .mode = 0600}, &res));
	CHECK(res.csn != 0 && !res.ino[0].has_pre && !res.ino[0].has_post);

	fs_iput(other);
	fs_iput(file);
	fs_iput(dir);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("pre/post attributes form one chain per inode under concurrent changes");
}

/* ---- the SETATTR guard ---- */

enum { GUARD_THREADS = 4, GUARD_ROUNDS = 200 };

struct guard_race {
	struct fs_inode *ip;
	pthread_barrier_t start, done;
	struct timespec seen[GUARD_THREADS];
	int result[GUARD_THREADS];
};

struct guard_arg {
	struct guard_race *g;
	unsigned t;
};

/* Each round every thread reads the ctime, then all try a guarded chmod
 * with what they read: only one may get through. */
static void *guard_run(void *arg)
{
	struct guard_arg *a = arg;
	struct guard_race *g = a->g;
	for (unsigned round = 0; round < GUARD_ROUNDS; round++) {
		struct fs_attr at;
		CHECK_OK(fs_getattr(g->ip, &at));
		g->seen[a->t] = at.ctime;
		pthread_barrier_wait(&g->start);
		struct fs_setattr sa = {.mask = FS_SET_MODE | FS_SET_GUARD,
					.mode = 0600 | a->t,
					.guard_ctime = at.ctime};
		g->result[a->t] = fs_setattr(g->ip, &sa, NULL);
		pthread_barrier_wait(&g->done);
		pthread_barrier_wait(&g->start); /* the main thread counted */
	}
	return NULL;
}

static void test_setattr_guard(void)
{
	struct dev *d = mkimg(64 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root;
	CHECK_OK(fs_root(fs, &root));
	struct fs_inode *f = mk(root, "g", S_IFREG | 0644);
	struct fs_attr at, at2;
	CHECK_OK(fs_getattr(f, &at));
	/* a guard that does not match: nothing changes, and the pair says so */
	struct fs_result res = {.want = FS_RES_ATTRS};
	struct timespec wrong = {at.ctime.tv_sec - 1, at.ctime.tv_nsec};
	CHECK_EQ(fs_setattr(f,
			    &(struct fs_setattr){.mask = FS_SET_MODE | FS_SET_GUARD,
						 .mode = 0600,
						 .guard_ctime = wrong},
			    &res),
		 -ECANCELED);
	CHECK_OK(fs_getattr(f, &at2));
	CHECK_EQ(at2.mode & 07777, 0644);
	CHECK_EQ(at2.change, at.change);
	CHECK(res.ino[0].has_pre && res.ino[0].pre.change == res.ino[0].post.change);
	CHECK_EQ(res.csn, 0);
	/* a guard alone that matches changes nothing either */
	CHECK_OK(fs_setattr(f, &(struct fs_setattr){.mask = FS_SET_GUARD, .guard_ctime = at.ctime},
			    NULL));
	CHECK_OK(fs_getattr(f, &at2));
	CHECK_EQ(at2.change, at.change);
	/* and one that matches lets the change through */
	CHECK_OK(fs_setattr(f,
			    &(struct fs_setattr){.mask = FS_SET_MODE | FS_SET_GUARD,
						 .mode = 0640,
						 .guard_ctime = at.ctime},
			    NULL));
	CHECK_OK(fs_getattr(f, &at2));
	CHECK_EQ(at2.mode & 07777, 0640);

	static struct guard_race g;
	g.ip = f;
	pthread_barrier_init(&g.start, NULL, GUARD_THREADS + 1);
	pthread_barrier_init(&g.done, NULL, GUARD_THREADS + 1);
	pthread_t tid[GUARD_THREADS];
	struct guard_arg args[GUARD_THREADS];
	for (unsigned t = 0; t < GUARD_THREADS; t++) {
		args[t] = (struct guard_arg){&g, t};
		CHECK_OK(pthread_create(&tid[t], NULL, guard_run, &args[t]));
	}
	unsigned contested = 0;
	for (unsigned round = 0; round < GUARD_ROUNDS; round++) {
		pthread_barrier_wait(&g.start);
		pthread_barrier_wait(&g.done);
		/* all read one ctime: exactly one of them changed the file */
		unsigned ok = 0, same = 0;
		for (unsigned t = 0; t < GUARD_THREADS; t++) {
			CHECK(g.result[t] == 0 || g.result[t] == -ECANCELED);
			ok += g.result[t] == 0;
			same += g.seen[t].tv_sec == g.seen[0].tv_sec &&
				g.seen[t].tv_nsec == g.seen[0].tv_nsec;
		}
		if (same == GUARD_THREADS) {
			contested++;
			CHECK_EQ(ok, 1);
		}
		pthread_barrier_wait(&g.start);
	}
	for (unsigned t = 0; t < GUARD_THREADS; t++)
		CHECK_OK(pthread_join(tid[t], NULL));
	CHECK_EQ(contested, GUARD_ROUNDS);
	pthread_barrier_destroy(&g.start);
	pthread_barrier_destroy(&g.done);
	fs_iput(f);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("the SETATTR guard is checked atomically with the change");
}

/*
 * Writes that cover whole sectors of written blocks, or whole unwritten
 * blocks, go to the device from the caller's buffer itself: from buffers
 * at every misalignment, through direct I/O where the filesystem of /tmp
 * has it (the device bounces them), the bytes land where they belong and
 * nothing around them moves.
 */
static void test_whole_sector_writes(void)
{
	char path[] = "/tmp/jnfs-test-fs-sectors-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	unlink(path);
	struct dev *d;
	int err = dev_file_open(path, DEV_OPEN_CREATE | DEV_OPEN_DIRECT, 64 << 20, &d);
	if (err == -EINVAL)
		err = dev_file_open(path, DEV_OPEN_CREATE, 64 << 20, &d);
	CHECK_OK(err);
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d}));
	struct fs *fs = mnt(d);
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	f = mk(root, "f", S_IFREG | 0644);
	enum { SIZE = 1 << 20 };
	uint8_t *model = calloc(1, SIZE), *buf = malloc(SIZE + 64), *out = malloc(SIZE + 64);
	struct rng r;
	rng_seed(&r, 11);
	/* written blocks: the first write allocates, the rest overwrite */
	struct {
		uint64_t off, len;
		unsigned mis;
	} w[] = {
		{0, SIZE, 0},	   {0, SIZE, 1},      {512, 1536, 3},	    {4096, 8192, 7},
		{65024, 1024, 13}, {0, 512, 5},	      {SIZE - 512, 512, 9}, {100352, 262144, 17},
		{3584, 1024, 2},   {200000, 7000, 4},
	};
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		for (uint64_t k = 0; k < w[i].len; k++)
			buf[w[i].mis + k] = (uint8_t)rng_next(&r);
		CHECK_OK(fs_write(f, w[i].off, buf + w[i].mis, w[i].len, NULL));
		memcpy(model + w[i].off, buf + w[i].mis, w[i].len);
	}
	/* unwritten blocks: whole blocks of an allocated range past EOF */
	CHECK_OK(fs_fallocate(f, FS_FALLOC_ALLOC, SIZE, SIZE, NULL));
	for (uint64_t k = 0; k < 3 * 4096; k++)
		buf[5 + k] = (uint8_t)rng_next(&r);
	CHECK_OK(fs_write(f, SIZE + 8192, buf + 5, 3 * 4096, NULL));
	size_t n;
	bool eof;
	for (unsigned mis = 0; mis < 2; mis++) {
		CHECK_OK(fs_read(f, 0, out + mis, SIZE, &n, &eof));
		CHECK_EQ(n, SIZE);
		CHECK(memcmp(out + mis, model, SIZE) == 0);
	}
	CHECK_OK(fs_read(f, SIZE, out + 3, 6 * 4096, &n, &eof));
	CHECK_EQ(n, 6 * 4096);
	CHECK_EQ(out[3 + 5 * 4096], 0);
	for (unsigned k = 0; k < 2 * 4096; k++)
		CHECK_EQ(out[3 + k], 0);
	CHECK(memcmp(out + 3 + 8192, buf + 5, 3 * 4096) == 0);
	/* and the same from the device after a remount */
	fs_iput(f);
	fs = remount(fs, d, &root);
	CHECK_OK(fs_lookup(root, "f", 1, &f));
	CHECK_OK(fs_read(f, 0, out + 1, SIZE, &n, &eof));
	CHECK(memcmp(out + 1, model, SIZE) == 0);
	fs_iput(f);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	unlink(path);
	free(model);
	free(buf);
	free(out);
	TEST_PASS("whole-sector writes from misaligned buffers");
}

int main(void)
{
	msg_set_level(MSG_WARN);
	test_namespace();
	test_data();
	test_whole_sector_writes();
	test_bigdir();
	test_hash_collisions();
	test_cache_limits();
	test_orphans();
	test_fragmented();
	test_eofblocks();
	test_max_file_size();
	test_records();
	test_wcc_chain();
	test_setattr_guard();
	return 0;
}
