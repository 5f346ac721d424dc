/*
 * test_fs_xattr.c - the engine's extended attributes (fs.h, xattr.c X1-X5):
 * set, get, list with cookies, remove; the create and replace flags; the
 * bounds (name, value, an inode's total); a thousand attributes on one
 * inode; values of every fragment count; ctime, the change attribute and
 * res->csn; attributes going with their inode; persistence across a
 * remount; version 1 images mounted and upgraded; check clean after each.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/crc32c.h"
#include "base/msg.h"
#include "check.h"
#include "dev/dev.h"
#include "fs/fs.h"
#include "fs/fs_format.h" /* test_version rewrites the superblock */

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

static struct fs_inode *get(struct fs *fs, const char *name)
{
	struct fs_inode *root, *ip;
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_lookup(root, name, strlen(name), &ip));
	fs_iput(root);
	return ip;
}

/* A value that says which attribute and which version it is. */
static void fill(uint8_t *v, size_t len, unsigned who, unsigned version)
{
	for (size_t i = 0; i < len; i++)
		v[i] = (uint8_t)(who * 31 + version * 7 + i * 13 + (i >> 8));
}

static void expect(struct fs_inode *ip, const char *name, size_t len, unsigned who,
		   unsigned version)
{
	uint8_t *want = malloc(len + 1), *got = malloc(len + 1);
	size_t glen = 0;
	fill(want, len, who, version);
	CHECK_OK(fs_getxattr(ip, name, strlen(name), got, len, &glen));
	CHECK_EQ(glen, len);
	CHECK(!memcmp(got, want, len));
	free(want);
	free(got);
}

struct names {
	unsigned n, max;
	uint64_t last;
	char (*name)[FS_XATTR_NAME_MAX + 1];
	size_t *vlen;
};

static int names_cb(void *arg, const char *name, size_t nlen, size_t vlen, uint64_t cookie)
{
	struct names *s = arg;
	if (s->n == s->max)
		return 1; /* the reply is full */
	CHECK(cookie > s->last);
	memcpy(s->name[s->n], name, nlen);
	s->name[s->n][nlen] = 0;
	s->vlen[s->n] = vlen;
	s->n++;
	s->last = cookie;
	return 0;
}

/* Every name, in pages of `page` names resumed by cookie. */
static unsigned list_all(struct fs_inode *ip, unsigned page, struct names *all)
{
	all->n = 0;
	all->last = 0;
	uint64_t cookie = 0;
	for (;;) {
		struct names p = {.max = page, .last = cookie};
		p.name = malloc(page * sizeof(*p.name));
		p.vlen = malloc(page * sizeof(*p.vlen));
		CHECK_OK(fs_listxattr(ip, cookie, names_cb, &p));
		for (unsigned i = 0; i < p.n; i++) {
			CHECK(all->n < all->max);
			memcpy(all->name[all->n], p.name[i], sizeof(p.name[i]));
			all->vlen[all->n++] = p.vlen[i];
		}
		cookie = p.last;
		free(p.name);
		free(p.vlen);
		if (p.n < page)
			break;
	}
	return all->n;
}

static struct names *names_new(unsigned max)
{
	struct names *s = calloc(1, sizeof(*s));
	s->max = max;
	s->name = calloc(max, sizeof(*s->name));
	s->vlen = calloc(max, sizeof(*s->vlen));
	return s;
}

static void names_free(struct names *s)
{
	free(s->name);
	free(s->vlen);
	free(s);
}

static void test_basics(void)
{
	struct dev *d = mkimg(256 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	f = mk(root, "f", S_IFREG | 0644);
	uint8_t *v = malloc(FS_XATTR_SIZE_MAX + 1), *g = malloc(FS_XATTR_SIZE_MAX + 1);
	size_t glen;
	char name[FS_XATTR_NAME_MAX + 2];
	memset(name, 'n', sizeof(name));

	/* bounds and errors */
	CHECK_EQ(fs_getxattr(f, "a", 1, g, 10, &glen), -ENODATA);
	CHECK_EQ(fs_removexattr(f, "a", 1, NULL), -ENODATA);
	CHECK_EQ(fs_setxattr(f, "", 0, v, 1, 0, NULL), -EINVAL);
	CHECK_EQ(fs_setxattr(f, "a\0b", 3, v, 1, 0, NULL), -EINVAL);
	CHECK_EQ(fs_setxattr(f, name, FS_XATTR_NAME_MAX + 1, v, 1, 0, NULL), -ERANGE);
	CHECK_EQ(fs_setxattr(f, "a", 1, v, FS_XATTR_SIZE_MAX + 1, 0, NULL), -E2BIG);
	CHECK_EQ(fs_setxattr(f, "a", 1, v, 1, FS_XATTR_CREATE | FS_XATTR_REPLACE, NULL), -EINVAL);
	CHECK_EQ(fs_setxattr(f, "a", 1, v, 1, FS_XATTR_REPLACE, NULL), -ENODATA);

	/* set moves ctime and the change attribute, and returns its sequence */
	struct fs_attr a0, a1;
	CHECK_OK(fs_getattr(f, &a0));
	struct fs_result res = {.want = FS_RES_ATTRS};
	fill(v, 10, 1, 0);
	CHECK_OK(fs_setxattr(f, "a", 1, v, 10, FS_XATTR_CREATE, &res));
	CHECK(res.csn != 0);
	CHECK(res.ino[0].has_pre && res.ino[0].has_post);
	CHECK_EQ(res.ino[0].pre.change, a0.change);
	CHECK(res.ino[0].post.change > a0.change);
	CHECK_OK(fs_force(fs, res.csn, NULL));
	CHECK_OK(fs_getattr(f, &a1));
	CHECK(a1.change > a0.change);
	CHECK_EQ(a1.used, a0.used); /* X4: attribute blocks are not the file's */
	CHECK_EQ(fs_setxattr(f, "a", 1, v, 10, FS_XATTR_CREATE, NULL), -EEXIST);

	/* get: the length alone, a buffer too small, the value */
	CHECK_OK(fs_getxattr(f, "a", 1, NULL, 0, &glen));
	CHECK_EQ(glen, 10);
	CHECK_EQ(fs_getxattr(f, "a", 1, g, 9, &glen), -ERANGE);
	CHECK_EQ(glen, 10);
	expect(f, "a", 10, 1, 0);

	/* replace across every fragment count, up and down (X1) */
	/* with a one-byte name, fragment 0 holds 887 bytes of value, the
	 * others 900 each */
	static const size_t lens[] = {
		0, 1, 887, 888, 1787, 1788, 5000, FS_XATTR_SIZE_MAX, 100, 40000, 65535, 3, 0,
	};
	for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		fill(v, lens[i], 1, i + 1);
		CHECK_OK(fs_setxattr(f, "a", 1, v, lens[i], i % 2 ? FS_XATTR_REPLACE : 0, &res));
		CHECK(res.csn != 0);
		expect(f, "a", lens[i], 1, i + 1);
	}
	/* a long name with the largest value: both limits at once */
	fill(v, FS_XATTR_SIZE_MAX, 2, 0);
	CHECK_OK(fs_setxattr(f, name, FS_XATTR_NAME_MAX, v, FS_XATTR_SIZE_MAX, 0, NULL));
	name[FS_XATTR_NAME_MAX] = 0;
	expect(f, name, FS_XATTR_SIZE_MAX, 2, 0);

	/* the inode's total: four 64 KiB values do not fit beside that one */
	char nm[16];
	int err = 0;
	unsigned big = 0;
	for (; big < 8 && !err; big++) {
		snprintf(nm, sizeof(nm), "big%u", big);
		fill(v, FS_XATTR_SIZE_MAX, 3, big);
		err = fs_setxattr(f, nm, strlen(nm), v, FS_XATTR_SIZE_MAX, 0, NULL);
	}
	CHECK_EQ(err, -ENOSPC);
	CHECK_EQ(big, 3); /* 4 * (64 KiB + name + 16) > 256 KiB */
	CHECK_EQ(fs_getxattr(f, nm, strlen(nm), NULL, 0, &glen), -ENODATA);
	/* a replace by a smaller value fits; removal makes room */
	CHECK_OK(fs_setxattr(f, "big0", 4, v, 100, FS_XATTR_REPLACE, NULL));
	fill(v, FS_XATTR_SIZE_MAX, 3, 9);
	CHECK_OK(fs_setxattr(f, nm, strlen(nm), v, FS_XATTR_SIZE_MAX, 0, NULL));
	expect(f, nm, FS_XATTR_SIZE_MAX, 3, 9);

	/* remove */
	CHECK_OK(fs_getattr(f, &a0));
	CHECK_OK(fs_removexattr(f, "a", 1, &res));
	CHECK(res.csn != 0);
	CHECK_OK(fs_getattr(f, &a1));
	CHECK(a1.change > a0.change);
	CHECK_EQ(fs_getxattr(f, "a", 1, g, 10, &glen), -ENODATA);
	CHECK_EQ(fs_removexattr(f, "a", 1, NULL), -ENODATA);

	/* directories and symlinks hold them too */
	struct fs_inode *dir = mk(root, "d", S_IFDIR | 0755);
	CHECK_OK(fs_setxattr(dir, "x", 1, "dir", 3, 0, NULL));
	CHECK_OK(fs_getxattr(dir, "x", 1, g, 3, &glen));
	CHECK(glen == 3 && !memcmp(g, "dir", 3));
	fs_iput(dir);

	/* persistence, then every attribute removed: the tree goes (X4) */
	fs_iput(f);
	fs_iput(root);
	umount_check(fs, d);
	fs = mnt(d);
	f = get(fs, "f");
	expect(f, name, FS_XATTR_SIZE_MAX, 2, 0);
	expect(f, nm, FS_XATTR_SIZE_MAX, 3, 9);
	struct names *all = names_new(16);
	CHECK_EQ(list_all(f, 1, all), 4);
	for (unsigned i = 0; i < all->n; i++)
		CHECK_OK(fs_removexattr(f, all->name[i], strlen(all->name[i]), NULL));
	CHECK_EQ(list_all(f, 4, all), 0);
	names_free(all);
	fs_iput(f);
	umount_check(fs, d);
	dev_close(d);
	free(v);
	free(g);
	TEST_PASS("xattr: set, get, remove, flags, bounds, fragments, total, remount");
}

/* A thousand attributes on one inode: listed once each in pages of any
 * size, every value read back after a remount, removed with the file. */
static void test_many(void)
{
	enum { N = 1000 };
	struct dev *d = mkimg(256 << 20);
	struct fs *fs = mnt(d);
	struct fs_inode *root, *f;
	CHECK_OK(fs_root(fs, &root));
	f = mk(root, "many", S_IFREG | 0644);
	uint8_t v[200];
	for (unsigned i = 0; i < N; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "user.attr.%u", i);
		fill(v, i % 200, i, 0);
		CHECK_OK(fs_setxattr(f, nm, strlen(nm), v, i % 200, FS_XATTR_CREATE, NULL));
	}
	fs_iput(f);
	fs_iput(root);
	umount_check(fs, d);
	fs = mnt(d);
	f = get(fs, "many");
	static const unsigned pages[] = {1, 7, 100, 2000};
	struct names *all = names_new(N);
	for (unsigned p = 0; p < sizeof(pages) / sizeof(pages[0]); p++) {
		CHECK_EQ(list_all(f, pages[p], all), N);
		uint8_t *seen = calloc(N, 1);
		for (unsigned i = 0; i < N; i++) {
			unsigned who = (unsigned)atoi(all->name[i] + strlen("user.attr."));
			CHECK(who < N && !seen[who]);
			seen[who] = 1;
			CHECK_EQ(all->vlen[i], who % 200);
		}
		free(seen);
	}
	names_free(all);
	for (unsigned i = 0; i < N; i += 37) {
		char nm[32];
		snprintf(nm, sizeof(nm), "user.attr.%u", i);
		expect(f, nm, i % 200, i, 0);
	}
	/* the file goes, and its attributes with it (X5): check finds no
	 * block of theirs left */
	fs_iput(f);
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_unlink(root, "many", 4, NULL));
	/* an unlinked file still open keeps them until it is let go */
	f = mk(root, "open", S_IFREG | 0644);
	CHECK_OK(fs_setxattr(f, "k", 1, v, 100, 0, NULL));
	CHECK_OK(fs_unlink(root, "open", 4, NULL));
	CHECK_OK(fs_getxattr(f, "k", 1, NULL, 0, &(size_t){0}));
	fs_iput(f);
	fs_iput(root);
	umount_check(fs, d);
	dev_close(d);
	TEST_PASS("xattr: 1,000 attributes, listed by cookie, removed with the inode");
}

/* Version 1 images (made before attributes) mount, and their first
 * attribute makes them version 2 (fs_format.h). */
static void test_version(void)
{
	struct dev *d = mkimg(64 << 20);
	uint8_t *blk = malloc(FS_BLOCK_SIZE);
	CHECK_OK(dev_read(d, blk, FS_BLOCK_SIZE, 0));
	struct fs_dsb *sb = (struct fs_dsb *)blk;
	CHECK_EQ(le32toh(sb->sb_version), FS_VERSION);
	sb->sb_version = htole32(1);
	sb->sb_crc = 0;
	sb->sb_crc = htole32(crc32c(0, blk, FS_BLOCK_SIZE));
	CHECK_OK(dev_write(d, blk, FS_BLOCK_SIZE, 0, 0));
	struct fs *fs = mnt(d);
	struct fs_inode *root;
	CHECK_OK(fs_root(fs, &root));
	struct fs_inode *f = mk(root, "old", S_IFREG | 0644);
	fs_iput(f);
	fs_iput(root);
	umount_check(fs, d);
	CHECK_OK(dev_read(d, blk, FS_BLOCK_SIZE, 0));
	CHECK_EQ(le32toh(sb->sb_version), 1);
	fs = mnt(d);
	f = get(fs, "old");
	CHECK_OK(fs_setxattr(f, "new", 3, "v", 1, 0, NULL));
	fs_iput(f);
	umount_check(fs, d);
	CHECK_OK(dev_read(d, blk, FS_BLOCK_SIZE, 0));
	CHECK_EQ(le32toh(sb->sb_version), FS_VERSION_XATTR);
	/* a version this build does not know is refused */
	sb->sb_version = htole32(FS_VERSION + 1);
	sb->sb_crc = 0;
	sb->sb_crc = htole32(crc32c(0, blk, FS_BLOCK_SIZE));
	CHECK_OK(dev_write(d, blk, FS_BLOCK_SIZE, 0, 0));
	CHECK_EQ(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs), -EUCLEAN);
	free(blk);
	dev_close(d);
	TEST_PASS("xattr: version 1 images mount and are upgraded by their first attribute");
}

int main(void)
{
	msg_set_level(MSG_WARN);
	test_basics();
	test_many();
	test_version();
	return 0;
}
