/*
 * test_fs_stress.c - many threads on one filesystem (run by the TSan
 * build too, where it must be free of data races).
 *
 *   test-fs-stress [--threads T] [--ops N] [--seed S]
 *
 * Each thread works in a directory of its own and in one directory shared
 * by all: creates, mkdir/rmdir, links, renames (within a directory, between
 * its own and the shared one, over existing names), unlinks of files other
 * threads may hold open, writes (overwrites, appends, into holes; some
 * synchronous, with their data logged),
 * truncates, fallocate/punch, fsync and fdatasync (of files others write
 * too), pNFS map_blocks/commit_blocks, readdir, lookups and reads. The log
 * is small and pushed often, so checkpoints, the AIL and log-space waits
 * run underneath all the time.
 *
 * Only the plain errors of a racing namespace may come back. At the end:
 * check is clean, and every file a thread kept to itself holds exactly what
 * it wrote; shared files hold only zeros and bytes some thread wrote.
 *
 * Also: a freed inode whose number is allocated again while the AIL still
 * holds its metadata lock (writing it back) is waited for, not a BUG_ON.
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
#include "fs_stress_util.h"
#include "fs/fs.h"
#include "fs/fs_priv.h"

#define MIB        (1ull << 20)
#define MAX_THREADS 8
#define PRIV_FILES 8
#define SHARED_NAMES 24
#define FILE_MAX   (256u << 10)

struct shared {
	struct fs *fs;
	struct fs_inode *shared_dir;
	unsigned ops;
	uint64_t seed;
};

/* A private file: only its thread writes it; content[] is the model. */
struct pfile {
	bool exists;
	uint64_t size;
	uint8_t *content;
};

struct thread {
	struct shared *s;
	unsigned id;
	pthread_t th;
	struct fs_inode *dir;
	struct pfile pf[PRIV_FILES];
	struct fs_inode *held[4]; /* shared files held open across operations */
	unsigned nops, nerr;
};

static uint8_t tag(unsigned id)
{
	return (uint8_t)(0x40 + id);
}

static void allowed(struct thread *t, int err, const char *what)
{
	if (!err)
		return;
	t->nerr++;
	switch (err) {
	case -ENOENT:
	case -EEXIST:
	case -ENOTEMPTY:
	case -EISDIR:
	case -ENOTDIR:
	case -EINVAL: /* a directory into itself; a layout commit of a range punched meanwhile */
		return;
	}
	fprintf(stderr, "thread %u: %s: %s\n", t->id, what, strerror(-err));
	exit(1);
}

static void pname(char *buf, unsigned i)
{
	snprintf(buf, 16, "p%u", i);
}

static void sname(char *buf, struct rng *r)
{
	snprintf(buf, 16, "s%u", (unsigned)rng_below(r, SHARED_NAMES));
}

/* Operations on the thread's own files: the model follows exactly. */
static void private_op(struct thread *t, struct rng *r, uint8_t *buf)
{
	unsigned i = (unsigned)rng_below(r, PRIV_FILES);
	struct pfile *f = &t->pf[i];
	char name[16];
	pname(name, i);
	struct fs_inode *ip = NULL;
	int err;
	if (!f->exists) {
		struct fs_create_args a = {.mode = S_IFREG | 0644};
		CHECK_OK(fs_create(t->dir, name, strlen(name), &a, &ip, NULL));
		f->exists = true;
		f->size = 0;
		fs_iput(ip);
		return;
	}
	if (rng_chance(r, 3)) {
		CHECK_OK(fs_unlink(t->dir, name, strlen(name), NULL));
		f->exists = false;
		memset(f->content, 0, FILE_MAX);
		return;
	}
	CHECK_OK(fs_lookup(t->dir, name, strlen(name), &ip));
	unsigned op = (unsigned)rng_below(r, 8);
	uint64_t off = rng_below(r, FILE_MAX - 4096);
	size_t len = 1 + rng_below(r, MIN(64u << 10, FILE_MAX - off));
	uint8_t v = (uint8_t)(1 + rng_below(r, 255));
	switch (op) {
	case 0:
	case 1:
	case 2: /* write anywhere: overwrite, append, into a hole; a third of
		 * them synchronous, small ones with their data logged
		 * (docs/logged-data.md), the others then over logged blocks */
		memset(buf, v, len);
		if (op == 2) {
			bool logged;
			CHECK_OK(fs_write_sync(ip, off, buf, len, NULL, &logged));
		} else {
			CHECK_OK(fs_write(ip, off, buf, len, NULL));
		}
		memset(f->content + off, v, len);
		if (off + len > f->size)
			f->size = off + len;
		break;
	case 3: /* truncate */
		off = rng_below(r, f->size + 1);
		CHECK_OK(fs_setattr(ip, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = off},
				    NULL));
		if (off < f->size)
			memset(f->content + off, 0, f->size - off);
		f->size = off;
		break;
	case 4: /* punch whole blocks inside the file */
		off &= ~4095ull;
		len = ALIGN_UP(len, 4096);
		if (off + len > FILE_MAX)
			len = FILE_MAX - off;
		CHECK_OK(fs_fallocate(ip, FS_FALLOC_PUNCH, off, len, NULL));
		if (off < f->size)
			memset(f->content + off, 0, MIN(len, f->size - off));
		break;
	case 5: /* preallocate beyond, keep the size */
		CHECK_OK(fs_fallocate(ip, FS_FALLOC_ALLOC | FS_FALLOC_KEEP_SIZE, off, len, NULL));
		break;
	case 6: { /* a pNFS client writes whole blocks and commits */
		off &= ~4095ull;
		len = ALIGN_UP(len, 4096);
		if (off + len > FILE_MAX)
			len = FILE_MAX - off;
		struct fs_map maps[32];
		unsigned n;
		CHECK_OK(fs_map_blocks(ip, off, len, true, maps, 32, &n));
		memset(buf, v, len);
		uint64_t done = 0;
		for (unsigned m = 0; m < n; m++) {
			CHECK(maps[m].state != FS_MAP_HOLE);
			CHECK_OK(dev_write(fs_data_dev(t->s->fs), buf, maps[m].len, maps[m].addr, 0));
			done += maps[m].len;
		}
		CHECK_EQ(done, len);
		struct fs_range rg = {off, len};
		uint64_t nsize = MAX(f->size, off + len);
		CHECK_OK(fs_commit_blocks(ip, &rg, 1, nsize, NULL, NULL));
		memset(f->content + off, v, len);
		f->size = nsize;
		break;
	}
	default:
		err = fs_fsync(ip, rng_chance(r, 50), NULL);
		CHECK_OK(err);
		break;
	}
	fs_iput(ip);
}

static int count_entry(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		       uint64_t cookie)
{
	(*(unsigned *)arg)++;
	return 0;
}

/* Racing operations in the shared directory. */
static void shared_op(struct thread *t, struct rng *r, uint8_t *buf)
{
	struct fs_inode *sd = t->s->shared_dir, *ip = NULL;
	char a[16], b[16];
	sname(a, r);
	sname(b, r);
	struct fs_create_args fa = {.mode = S_IFREG | 0644}, da = {.mode = S_IFDIR | 0755};
	unsigned op = (unsigned)rng_below(r, 14);
	int err;
	switch (op) {
	case 0:
	case 1:
		err = fs_create(sd, a, strlen(a), op ? &da : &fa, &ip, NULL);
		allowed(t, err, "create");
		if (!err)
			fs_iput(ip);
		break;
	case 2:
		err = fs_unlink(sd, a, strlen(a), NULL);
		if (err == -EISDIR)
			err = fs_rmdir(sd, a, strlen(a), NULL);
		allowed(t, err, "unlink");
		break;
	case 3:
		allowed(t, fs_rename(sd, a, strlen(a), sd, b, strlen(b), NULL), "rename");
		break;
	case 4: { /* between the shared directory and the thread's own */
		char c[16];
		snprintf(c, sizeof(c), "m%u", (unsigned)rng_below(r, 4));
		if (rng_chance(r, 50))
			err = fs_rename(sd, a, strlen(a), t->dir, c, strlen(c), NULL);
		else
			err = fs_rename(t->dir, c, strlen(c), sd, a, strlen(a), NULL);
		allowed(t, err, "rename across");
		break;
	}
	case 5:
		if (!(err = fs_lookup(sd, a, strlen(a), &ip))) {
			err = fs_link(ip, sd, b, strlen(b), NULL);
			if (err == -EPERM) /* a directory */
				err = 0;
			fs_iput(ip);
		}
		allowed(t, err, "link");
		break;
	case 6:
	case 7:
	case 8: { /* write / read / sync a shared file, maybe one held open */
		unsigned h = (unsigned)rng_below(r, 4);
		if (!t->held[h]) {
			err = fs_lookup(sd, a, strlen(a), &t->held[h]);
			allowed(t, err, "lookup");
			if (err)
				break;
		}
		ip = t->held[h];
		uint64_t off = rng_below(r, FILE_MAX - 4096);
		size_t len = 1 + rng_below(r, 16384);
		if (op == 6) {
			memset(buf, tag(t->id), len);
			err = fs_write(ip, off, buf, len, NULL);
		} else if (op == 7) {
			size_t n;
			bool eof;
			err = fs_read(ip, off, buf, len, &n, &eof);
			for (size_t k = 0; !err && k < n; k++)
				if (buf[k] && (buf[k] < tag(0) || buf[k] >= tag(MAX_THREADS))) {
					fprintf(stderr, "thread %u: a shared file holds 0x%02x\n", t->id,
						buf[k]);
					exit(1);
				}
		} else {
			err = fs_fsync(ip, rng_chance(r, 50), NULL);
		}
		if (err == -EISDIR || err == -EINVAL)
			err = 0; /* a directory (or special) got the name */
		allowed(t, err, "shared file I/O");
		if (rng_chance(r, 30)) {
			fs_iput(ip); /* the last reference of an unlinked file frees it */
			t->held[h] = NULL;
		}
		break;
	}
	case 9:
		if (!(err = fs_lookup(sd, a, strlen(a), &ip))) {
			err = fs_setattr(ip,
					 &(struct fs_setattr){.mask = FS_SET_SIZE | FS_SET_MODE,
							      .size = rng_below(r, FILE_MAX),
							      .mode = 0600},
					 NULL);
			if (err == -EISDIR)
				err = 0;
			fs_iput(ip);
		}
		allowed(t, err, "truncate");
		break;
	case 10: {
		unsigned n = 0;
		allowed(t, fs_readdir(sd, 0, count_entry, &n), "readdir");
		break;
	}
	case 11:
		allowed(t, fs_fsync(sd, false, NULL), "fsync dir");
		break;
	case 12: { /* a directory tree in the shared directory */
		struct fs_inode *d;
		if (!(err = fs_lookup(sd, a, strlen(a), &d))) {
			err = fs_create(d, b, strlen(b), &fa, &ip, NULL);
			if (!err)
				fs_iput(ip);
			else if (rng_chance(r, 50))
				err = fs_unlink(d, b, strlen(b), NULL);
			fs_iput(d);
		}
		allowed(t, err, "subdirectory");
		break;
	}
	default:
		allowed(t, fs_sync(t->s->fs), "sync");
		break;
	}
}

static void *run(void *arg)
{
	struct thread *t = arg;
	struct rng r;
	rng_seed(&r, t->s->seed * 1000 + t->id);
	uint8_t *buf = malloc(FILE_MAX);
	for (unsigned i = 0; i < t->s->ops; i++) {
		if (rng_chance(&r, 40))
			private_op(t, &r, buf);
		else
			shared_op(t, &r, buf);
		t->nops++;
	}
	for (unsigned h = 0; h < 4; h++)
		if (t->held[h])
			fs_iput(t->held[h]);
	free(buf);
	return NULL;
}

static int readdir_any(struct fs_inode *dir)
{
	unsigned n = 0;
	return fs_readdir(dir, 0, count_entry, &n);
}

static void stress(unsigned nthreads, unsigned ops, uint64_t seed)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(256 * MIB, NULL, &d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d, .log_size = 2 * MIB}));
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .push_interval_ns = 20 * NSEC_PER_MSEC,
						  .log_buf_size = 16384},
			  &fs));
	struct shared s = {.fs = fs, .ops = ops, .seed = seed};
	struct fs_inode *root;
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args da = {.mode = S_IFDIR | 0755};
	CHECK_OK(fs_create(root, "shared", 6, &da, &s.shared_dir, NULL));
	struct thread *th = calloc(nthreads, sizeof(*th));
	for (unsigned i = 0; i < nthreads; i++) {
		th[i].s = &s;
		th[i].id = i;
		char name[16];
		snprintf(name, sizeof(name), "t%u", i);
		CHECK_OK(fs_create(root, name, strlen(name), &da, &th[i].dir, NULL));
		for (unsigned k = 0; k < PRIV_FILES; k++)
			th[i].pf[k].content = calloc(1, FILE_MAX);
	}
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < nthreads; i++)
		CHECK_OK(pthread_create(&th[i].th, NULL, run, &th[i]));
	unsigned nops = 0, nerr = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(th[i].th, NULL);
		nops += th[i].nops;
		nerr += th[i].nerr;
	}
	uint64_t t1 = now_ns();
	CHECK_OK(readdir_any(s.shared_dir));
	fs_iput(s.shared_dir);
	for (unsigned i = 0; i < nthreads; i++)
		fs_iput(th[i].dir);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));

	/* clean, and every private file holds what its thread wrote */
	fsu_check_clean(d);
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	CHECK_OK(fs_root(fs, &root));
	uint8_t *buf = malloc(FILE_MAX);
	unsigned files = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		char name[16];
		struct fs_inode *dir, *ip;
		snprintf(name, sizeof(name), "t%u", i);
		CHECK_OK(fs_lookup(root, name, strlen(name), &dir));
		for (unsigned k = 0; k < PRIV_FILES; k++) {
			struct pfile *f = &th[i].pf[k];
			pname(name, k);
			int err = fs_lookup(dir, name, strlen(name), &ip);
			CHECK_EQ(err, f->exists ? 0 : -ENOENT);
			if (err)
				continue;
			struct fs_attr at;
			CHECK_OK(fs_getattr(ip, &at));
			CHECK_EQ(at.size, f->size);
			size_t n;
			bool eof;
			CHECK_OK(fs_read(ip, 0, buf, f->size, &n, &eof));
			CHECK_EQ(n, f->size);
			if (memcmp(buf, f->content, f->size)) {
				fprintf(stderr, "thread %u: file %s does not hold what it wrote\n", i,
					name);
				CHECK(0);
			}
			fs_iput(ip);
			files++;
		}
		fs_iput(dir);
	}
	free(buf);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
	for (unsigned i = 0; i < nthreads; i++)
		for (unsigned k = 0; k < PRIV_FILES; k++)
			free(th[i].pf[k].content);
	free(th);
	printf("stress: %u threads, %u operations (%u failed with namespace races) in %.1f s; "
	       "check clean, %u private files hold what was written\n",
	       nthreads, nops, nerr, (double)(t1 - t0) / 1e9, files);
	TEST_PASS("multi-threaded stress");
}

/* ---- a freed inode's number reused while the AIL writes it back ---- */

struct holder {
	struct fs_inode *ip;
	_Atomic bool locked;
};

static void *hold_ilock(void *arg)
{
	struct holder *h = arg;
	/* as ino_item_push does while it writes the inode back */
	while (!mutex_trylock(&h->ip->i_ilock))
		sleep_ns(NSEC_PER_MSEC);
	atomic_store(&h->locked, true);
	sleep_ns(50 * NSEC_PER_MSEC);
	mutex_unlock(&h->ip->i_ilock);
	return NULL;
}

static void test_zombie_reuse(void)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(64 * MIB, NULL, &d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = d}));
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	struct fs_inode *root, *ip, *ip2;
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args fa = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(root, "f", 1, &fa, &ip, NULL));
	uint64_t ino = fs_ino(ip);
	CHECK_OK(fs_unlink(root, "f", 1, NULL));
	fs_iput(ip); /* freed; stays cached as a zombie */
	CHECK(ip->i_freed);
	struct holder h = {.ip = ip};
	pthread_t th;
	CHECK_OK(pthread_create(&th, NULL, hold_ilock, &h));
	while (!atomic_load(&h.locked))
		sleep_ns(NSEC_PER_MSEC);
	uint64_t t0 = now_ns();
	CHECK_OK(fs_create(root, "g", 1, &fa, &ip2, NULL));
	uint64_t waited = now_ns() - t0;
	pthread_join(th, NULL);
	CHECK_EQ(fs_ino(ip2), ino); /* the number was reused, and the create waited */
	CHECK(ip2 == ip);
	printf("zombie reuse: inode %llu allocated again after waiting %.1f ms for its write-back\n",
	       (unsigned long long)ino, (double)waited / 1e6);
	fs_iput(ip2);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
	TEST_PASS("freed inode reused during its write-back");
}

int main(int argc, char **argv)
{
	unsigned threads = 4, ops = 3000;
	uint64_t seed = 1;
	if (fsu_parse_opts(argc, argv, "ops", &threads, &ops, &seed))
		return 2;
	CHECK(threads >= 1 && threads <= MAX_THREADS);
	setvbuf(stdout, NULL, _IOLBF, 0);
	msg_set_level(MSG_ERR);
	test_zombie_reuse();
	stress(threads, ops, seed);
	return 0;
}
