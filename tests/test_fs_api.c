/*
 * test_fs_api.c - the fs API is opaque (docs/design.md §2): fs.h, included
 * alone, brings in no journal or device header, and a caller's
 * struct fs_sync_waiter carries the engine's journal waiter in its opaque
 * room (no allocation per sync).
 *
 * The first part is checked when this file compiles: it includes fs.h
 * before anything else of the project.
 */
#include "fs/fs.h"

#if defined(JNFS_LOG_LOG_H) || defined(JNFS_DEV_DEV_H) || defined(JNFS_FS_FS_PRIV_H)
#error "fs/fs.h exposes the journal or the device layer"
#endif

#include <errno.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "base/msg.h"
#include "base/time.h"
#include "check.h"
#include "dev/dev.h"

struct waiter {
	struct fs_sync_waiter w; /* not first: the engine finds it by address */
	_Atomic int called;
	int err;
};

static void done(struct fs_sync_waiter *w, int err, bool log_flushed)
{
	struct waiter *x = (struct waiter *)((char *)w - offsetof(struct waiter, w));
	x->err = err;
	atomic_store(&x->called, 1);
}

static void test_force_async(void)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(64 << 20, NULL, &d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d}));
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	struct fs_inode *root, *ip;
	CHECK_OK(fs_root(fs, &root));
	for (int i = 0; i < 20; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		struct fs_result res = {0};
		struct fs_create_args ca = {.mode = S_IFREG | 0644};
		CHECK_OK(fs_create(root, name, strlen(name), &ca, &ip, &res));
		CHECK(res.csn != 0);
		CHECK_EQ(fs_sync_seq(ip, false), res.csn);
		struct waiter x = {.w.fn = done};
		int rc = fs_force_async(fs, res.csn, &x.w);
		CHECK(rc == 0 || rc == 1);
		for (int t = 0; rc == 1 && !atomic_load(&x.called) && t < 5000; t++)
			sleep_ns(NSEC_PER_MSEC);
		CHECK(rc == 0 || atomic_load(&x.called));
		CHECK_OK(x.err);
		/* durable now: a second force has nothing to wait for */
		struct waiter y = {.w.fn = done};
		CHECK_EQ(fs_force_async(fs, res.csn, &y.w), 0);
		CHECK(!atomic_load(&y.called));
		fs_iput(ip);
	}
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
	TEST_PASS("fs_force_async with the journal waiter in the caller's opaque room");
}

int main(void)
{
	msg_set_level(MSG_WARN);
	TEST_PASS("fs.h includes no journal or device header");
	test_force_async();
	return 0;
}
