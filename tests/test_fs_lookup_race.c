/*
 * test_fs_lookup_race.c - inodes found by number or by name while their
 * names come and go, and their numbers are reused.
 *
 * One thread creates d/x, unlinks it, and creates and unlinks o/y, over
 * and over: y nearly always gets the number x just gave back (the
 * allocator takes the lowest free inode of the chunk it used last). x is
 * made with uid 1 and y with uid 2. Meanwhile other threads do what a
 * file server does with the handle of x (its number and generation): get
 * the inode by number, often while the unlink's last reference is freeing
 * it. Each get must give x or ESTALE, and leave the reference counts
 * right (a lost reference frees an inode twice, or one in use).
 *
 * Lookups by name race the same way: a lookup of "x" must give x (uid 1)
 * or ENOENT, never y. And ".." likewise: the thread also makes o/p/q,
 * removes q and p, and makes o/z (uid 2) in p's number; ".." of q, held
 * across all that, must be p or ENOENT, never z.
 *
 * usage: test-fs-lookup-race [--seconds S] [--no-rmdir]
 *   --no-rmdir  leaves the ".." case out (make test-tsan): ThreadSanitizer
 *               sees rmdir's parent-then-child I/O locks on in-core inodes
 *               that swap roles as their numbers are reused (this round's
 *               q is the next round's p) as a lock-order cycle, although
 *               no two of them are ever held that way at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/time.h"
#include "check.h"
#include "dev/dev.h"
#include "fs/fs.h"

static struct fs *fs;
static struct fs_inode *root, *dir_d, *dir_o;
static atomic_bool stop;
static bool no_rmdir;
static atomic_ulong gets, got, lookups, wrong, churns;
static _Atomic uint64_t x_handle; /* x's number << 32 | its generation */

static void create(struct fs_inode *dir, const char *name, uint32_t mode, uint32_t uid,
		   struct fs_attr *at)
{
	struct fs_inode *ip;
	struct fs_create_args a = {.mode = mode, .uid = uid};
	CHECK_OK(fs_create(dir, name, strlen(name), &a, &ip, NULL));
	if (at)
		CHECK_OK(fs_getattr(ip, at));
	fs_iput(ip);
}

static void *churn(void *arg)
{
	while (!atomic_load(&stop)) {
		struct fs_attr x;
		create(dir_d, "x", S_IFREG | 0644, 1, &x);
		CHECK(x.ino < (1ull << 32));
		atomic_store(&x_handle, x.ino << 32 | x.gen);
		CHECK_OK(fs_unlink(dir_d, "x", 1, NULL));
		create(dir_o, "y", S_IFREG | 0644, 2, NULL);
		CHECK_OK(fs_unlink(dir_o, "y", 1, NULL));
		atomic_fetch_add(&churns, 1);
		if (no_rmdir)
			continue;
		struct fs_inode *p;
		struct fs_create_args da = {.mode = S_IFDIR | 0755, .uid = 1};
		CHECK_OK(fs_create(dir_o, "p", 1, &da, &p, NULL));
		create(p, "q", S_IFDIR | 0755, 1, NULL);
		CHECK_OK(fs_rmdir(p, "q", 1, NULL));
		fs_iput(p);
		CHECK_OK(fs_rmdir(dir_o, "p", 1, NULL));
		create(dir_o, "z", S_IFDIR | 0755, 2, NULL);
		CHECK_OK(fs_rmdir(dir_o, "z", 1, NULL));
	}
	return NULL;
}

/* What resolving a file handle of x does. */
static void *by_number(void *arg)
{
	while (!atomic_load(&stop)) {
		uint64_t h = atomic_load(&x_handle);
		struct fs_inode *ip;
		struct fs_attr a;
		if (!h)
			continue;
		int err = fs_iget(fs, h >> 32, (uint32_t)h, &ip);
		atomic_fetch_add(&gets, 1);
		if (err) {
			CHECK_EQ(err, -ESTALE);
			continue;
		}
		CHECK_OK(fs_getattr(ip, &a));
		if (a.uid != 1) {
			fprintf(stderr, "x's handle gave inode %llu of uid %u\n",
				(unsigned long long)a.ino, a.uid);
			atomic_fetch_add(&wrong, 1);
		}
		atomic_fetch_add(&got, 1);
		fs_iput(ip);
	}
	return NULL;
}

static void expect_uid1(int err, struct fs_inode *ip, const char *what)
{
	struct fs_attr a;
	if (err) {
		CHECK_EQ(err, -ENOENT);
		return;
	}
	CHECK_OK(fs_getattr(ip, &a));
	if (a.uid != 1) {
		fprintf(stderr, "%s gave inode %llu of uid %u\n", what, (unsigned long long)a.ino,
			a.uid);
		atomic_fetch_add(&wrong, 1);
	}
	atomic_fetch_add(&got, 1);
	fs_iput(ip);
}

/* What LOOKUP does. */
static void *by_name(void *arg)
{
	while (!atomic_load(&stop)) {
		struct fs_inode *ip, *p, *q;
		int err = fs_lookup(dir_d, "x", 1, &ip);
		atomic_fetch_add(&lookups, 1);
		expect_uid1(err, ip, "lookup of d/x");
		if (fs_lookup(dir_o, "p", 1, &p))
			continue;
		err = fs_lookup(p, "q", 1, &q);
		fs_iput(p);
		if (err)
			continue;
		err = fs_lookup(q, "..", 2, &ip);
		atomic_fetch_add(&lookups, 1);
		expect_uid1(err, ip, "'..' of o/p/q");
		fs_iput(q);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned seconds = 5;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--no-rmdir")) {
			no_rmdir = true;
		} else {
			fprintf(stderr, "usage: test-fs-lookup-race [--seconds S] [--no-rmdir]\n");
			return 2;
		}
	}
	struct dev *d;
	CHECK_OK(dev_mem_create(64 << 20, NULL, &d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d}));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args da = {.mode = S_IFDIR | 0755};
	CHECK_OK(fs_create(root, "d", 1, &da, &dir_d, NULL));
	CHECK_OK(fs_create(root, "o", 1, &da, &dir_o, NULL));

	void *(*fn[])(void *) = {churn, by_number, by_name, by_name};
	enum { NTHREADS = sizeof(fn) / sizeof(fn[0]) };
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, fn[i], NULL));
	uint64_t end = now_ns() + seconds * NSEC_PER_SEC;
	while (now_ns() < end && !atomic_load(&wrong))
		sleep_ns(10 * NSEC_PER_MSEC);
	atomic_store(&stop, true);
	for (int i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	printf("churn rounds %lu; gets by number %lu, lookups %lu (%lu found); wrong %lu\n",
	       atomic_load(&churns), atomic_load(&gets), atomic_load(&lookups), atomic_load(&got),
	       atomic_load(&wrong));
	CHECK_EQ(atomic_load(&wrong), 0);
	fs_iput(dir_o);
	fs_iput(dir_d);
	fs_iput(root);
	/* every inode freed once: the image is clean */
	CHECK_OK(fs_unmount(fs));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .readonly_check = true}, &fs));
	uint64_t problems = 1;
	CHECK_OK(fs_check(fs, stderr, &problems));
	CHECK_EQ(problems, 0);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
	TEST_PASS("inodes got by number and by name while their numbers are freed and reused");
	return 0;
}
