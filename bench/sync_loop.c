/*
 * sync_loop.c - synchronous write loops on the jnfs engine and on kernel XFS.
 *
 *   sync-loop [--threads 1,8] [--seconds S] [--rounds R] [--workloads a,b,c,d,e]
 *             [--dir DIR] [--image PATH] [--image-mib M] [--no-prefill] [--buffered]
 *             [--falloc-mib F] [--xfs-dir DIR] [--no-jnfs] [--csv]
 *
 * Workloads (each thread loops until S seconds have passed):
 *   a  overwrite_fdatasync  4 KiB pwrite inside the thread's own 1 MiB file
 *                           (written and fsynced before), then fdatasync
 *   b  overwrite_fsync      the same with fsync
 *   c  append_fdatasync     4 KiB appended to the thread's own file, fdatasync
 *   d  unwritten_fdatasync  4 KiB written into fallocated (unwritten) space of
 *                           ONE file shared by all threads, each thread
 *                           writing forward through its own region, fdatasync
 *   e  create_fsync         create a file in the thread's own directory,
 *                           write 4 KiB, fsync, close
 *
 * Each workload runs on the engine over an image file (--image, or a
 * temporary one in --dir, /var/tmp by default, made with mkfs once per
 * process), reached with O_DIRECT as jnfsd does (--buffered: through the
 * page cache), and, in the same run, with real syscalls (pwrite, fdatasync,
 * fsync, fallocate, open O_CREAT) in --xfs-dir, which should be a kernel
 * XFS mounted from a loop device over an image file on the same disk;
 * bench/run-sync-loop.sh sets that up, runs this program and tears it
 * down. Both images are filled with zeros first (the filesystem under them
 * then never allocates during the runs; --no-prefill skips it for the
 * engine's image). Each run works in a fresh directory that is removed
 * afterwards, and starts with everything synced. The two systems take
 * turns (jnfs first in even rounds, XFS first in odd ones), a round runs
 * one workload's thread counts back to back, and every figure is the
 * median of R rounds; *.spread is (max - min) / median;
 * *.ratio is the ratio of the medians, *.ratio_paired_median the median of
 * the per-round ratios (each round's two runs were back to back) and
 * *.ratio_paired_min/_max their smallest and largest, and likewise for the
 * scaling of workload d over thread counts.
 *
 * Counters per op:
 *   jnfs  log_writes (log.buffer_writes), checkpoints (log.checkpoints),
 *         flushes (dev.flushes + dev.fua_writes: each is one fdatasync of
 *         the image file)
 *   xfs   log_writes (first field of the "log" line of
 *         /sys/fs/xfs/<dev>/stats/stats, xs_log_writes: iclog writes),
 *         flushes (flush requests completed by the loop device, field 16 of
 *         /sys/block/<dev>/stat; each is one fsync of its backing file)
 *   both  disk_flushes: flushes completed by the disk under --dir, which
 *         holds both images (anything else using that disk adds to it)
 *
 * Output: "name value" lines, sync_loop.<workload>.t<T>.<system>.<what>,
 * the ratio jnfs/XFS of ops/s as sync_loop.<workload>.t<T>.ratio, and for
 * workload d the scaling of the largest T over T=1 on each system. --csv
 * adds a table, one "csv,"-prefixed line per workload and thread count.
 *
 * Not part of the test suite; it never asserts on time.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "dev/dev.h"
#include "fs/fs.h"

#define BLK       4096u
#define MIB       (1ull << 20)
#define MAX_T     64
#define MAX_ROUND 32
#define OWN_FILE  (1 * MIB) /* a, b: each thread's file */

enum wl { WL_A, WL_B, WL_C, WL_D, WL_E, WL_N };
enum sys { SYS_JNFS, SYS_XFS, SYS_N };

static const char *const wl_name[WL_N] = {"overwrite_fdatasync", "overwrite_fsync",
					  "append_fdatasync", "unwritten_fdatasync",
					  "create_fsync"};
static const char *const sys_name[SYS_N] = {"jnfs", "xfs"};

struct opts {
	unsigned threads[16], nthreads;
	double seconds;
	unsigned rounds;
	bool wl[WL_N];
	const char *dir, *image, *xfs_dir;
	uint64_t image_mib, falloc_mib;
	bool prefill, direct, no_jnfs, csv;
};

/* One measured run. */
struct result {
	double ops_per_s;
	double log_writes, checkpoints, flushes, forces, disk_flushes; /* per op */
	bool valid;
};

/* What a worker thread works on. */
struct worker {
	pthread_t th;
	struct run *run;
	unsigned id;
	/* jnfs */
	struct fs_inode *ip, *dir;
	/* xfs */
	int fd, dirfd;
	uint64_t next;            /* next block / file number */
	uint64_t region, nregion; /* d: first block of the region, blocks in it */
	uint64_t ops;
	bool wrapped;
	int err;
};

struct run {
	const struct opts *o;
	enum wl wl;
	enum sys sys;
	unsigned T;
	struct fs *fs;
	struct fs_inode *top; /* jnfs: the run's directory */
	int topfd;            /* xfs: the run's directory */
	char toppath[PATH_MAX];
	struct fs_inode *shared_ip; /* d */
	int shared_fd;
	uint8_t *buf;
	pthread_barrier_t start;
	uint64_t deadline;
	struct worker w[MAX_T];
};


/* ---- counters ---- */

struct counters {
	uint64_t log_writes, checkpoints, flushes, forces;
	uint64_t disk_flushes; /* of the disk under both images */
};

/* /sys/dev/block/M:m/stat of the disk holding --dir (both images). */
static char disk_stat[128];

static void find_disk(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) == 0)
		snprintf(disk_stat, sizeof(disk_stat), "/sys/dev/block/%u:%u/stat",
			 major(st.st_dev), minor(st.st_dev));
}

static uint64_t stat_file_flushes(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	unsigned long long v[17] = {0};
	int n = 0;
	while (n < 17 && fscanf(f, "%llu", &v[n]) == 1)
		n++;
	fclose(f);
	return n >= 16 ? v[15] : 0;
}

static uint64_t tget(const struct stat_table *t, const char *n)
{
	return stat_table_get(t, n);
}

static void jnfs_counters(struct fs *fs, struct counters *c)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	fs_stats(fs, &s);
	c->log_writes = tget(&t, "log.buffer_writes");
	c->checkpoints = tget(&t, "log.checkpoints");
	c->flushes = tget(&t, "dev.flushes") + tget(&t, "dev.fua_writes");
	c->forces = tget(&t, "log.forces");
	c->disk_flushes = stat_file_flushes(disk_stat);
}

/* The kernel's name of the block device holding the filesystem at path. */
static char xfs_devname[64];

static void find_xfs_dev(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return;
	char link[128], target[PATH_MAX];
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = 0;
	const char *base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) < sizeof(xfs_devname))
		memcpy(xfs_devname, base, strlen(base) + 1);
}

/* Flushes completed by a block device (field 16 of /sys/block/NAME/stat). */
static uint64_t blockdev_flushes(const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "/sys/block/%s/stat", name);
	return stat_file_flushes(path);
}

static void xfs_counters(struct counters *c)
{
	memset(c, 0, sizeof(*c));
	char path[256], line[512];
	snprintf(path, sizeof(path), "/sys/fs/xfs/%s/stats/stats", xfs_devname);
	FILE *f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long w, blocks, noiclogs, force, sleep;
			if (sscanf(line, "log %llu %llu %llu %llu %llu", &w, &blocks, &noiclogs, &force,
				   &sleep) == 5) {
				c->log_writes = w;
				c->forces = force;
			}
		}
		fclose(f);
	}
	c->flushes = blockdev_flushes(xfs_devname);
	c->disk_flushes = stat_file_flushes(disk_stat);
}

/* ---- jnfs side ---- */

static int jnfs_name(char *buf, size_t size, const char *prefix, uint64_t n)
{
	return snprintf(buf, size, "%s%llu", prefix, (unsigned long long)n);
}

static int jnfs_create(struct fs_inode *dir, const char *name, uint32_t mode,
		       struct fs_inode **ip)
{
	struct fs_create_args ca = {.mode = mode};
	return fs_create(dir, name, strlen(name), &ca, ip, NULL);
}

static int jnfs_setup(struct run *r, unsigned seq)
{
	struct fs_inode *root;
	int err = fs_root(r->fs, &root);
	if (err)
		return err;
	char name[64];
	jnfs_name(name, sizeof(name), "run", seq);
	err = jnfs_create(root, name, S_IFDIR | 0755, &r->top);
	fs_iput(root);
	if (err)
		return err;
	if (r->wl == WL_D) {
		err = jnfs_create(r->top, "shared", S_IFREG | 0644, &r->shared_ip);
		if (!err)
			err = fs_fallocate(r->shared_ip, FS_FALLOC_ALLOC, 0, r->o->falloc_mib * MIB,
					   NULL);
		if (err)
			return err;
	}
	for (unsigned t = 0; t < r->T; t++) {
		struct worker *w = &r->w[t];
		jnfs_name(name, sizeof(name), "t", t);
		switch (r->wl) {
		case WL_A:
		case WL_B:
			err = jnfs_create(r->top, name, S_IFREG | 0644, &w->ip);
			for (uint64_t off = 0; !err && off < OWN_FILE; off += MIB)
				err = fs_write(w->ip, off, r->buf, MIB, NULL);
			break;
		case WL_C:
			err = jnfs_create(r->top, name, S_IFREG | 0644, &w->ip);
			break;
		case WL_D:
			w->ip = r->shared_ip;
			break;
		case WL_E:
			err = jnfs_create(r->top, name, S_IFDIR | 0755, &w->dir);
			break;
		default:
			break;
		}
		if (err)
			return err;
	}
	return fs_sync(r->fs);
}

static int jnfs_op(struct run *r, struct worker *w)
{
	int err;
	switch (r->wl) {
	case WL_A:
	case WL_B:
		err = fs_write(w->ip, (w->next++ % (OWN_FILE / BLK)) * BLK, r->buf, BLK, NULL);
		return err ? err : fs_fsync(w->ip, r->wl == WL_A, NULL);
	case WL_C:
		err = fs_write(w->ip, w->next++ * BLK, r->buf, BLK, NULL);
		return err ? err : fs_fsync(w->ip, true, NULL);
	case WL_D:
		if (w->next == w->nregion) {
			w->next = 0;
			w->wrapped = true;
		}
		err = fs_write(w->ip, (w->region + w->next++) * BLK, r->buf, BLK, NULL);
		return err ? err : fs_fsync(w->ip, true, NULL);
	case WL_E: {
		char name[64];
		struct fs_inode *ip;
		jnfs_name(name, sizeof(name), "f", w->next++);
		err = jnfs_create(w->dir, name, S_IFREG | 0644, &ip);
		if (err)
			return err;
		err = fs_write(ip, 0, r->buf, BLK, NULL);
		if (!err)
			err = fs_fsync(ip, false, NULL);
		fs_iput(ip);
		return err;
	}
	default:
		return -EINVAL;
	}
}

static int jnfs_unlink_all(struct fs_inode *dir);

struct name_list {
	char (*names)[256];
	unsigned *types;
	size_t n, cap;
};

static int collect(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		   uint64_t cookie)
{
	struct name_list *l = arg;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->names = xrealloc(l->names, l->cap * sizeof(*l->names));
		l->types = xrealloc(l->types, l->cap * sizeof(*l->types));
	}
	memcpy(l->names[l->n], name, len);
	l->names[l->n][len] = 0;
	l->types[l->n] = type;
	l->n++;
	return 0;
}

/* Remove everything below dir (not dir itself). */
static int jnfs_unlink_all(struct fs_inode *dir)
{
	struct name_list l = {0};
	int err = fs_readdir(dir, 0, collect, &l);
	for (size_t i = 0; !err && i < l.n; i++) {
		const char *n = l.names[i];
		struct fs_inode *ip;
		err = fs_lookup(dir, n, strlen(n), &ip);
		if (err)
			break;
		struct fs_attr a;
		err = fs_getattr(ip, &a);
		if (!err && S_ISDIR(a.mode)) {
			err = jnfs_unlink_all(ip);
			fs_iput(ip);
			if (!err)
				err = fs_rmdir(dir, n, strlen(n), NULL);
		} else {
			fs_iput(ip);
			if (!err)
				err = fs_unlink(dir, n, strlen(n), NULL);
		}
	}
	free(l.names);
	free(l.types);
	return err;
}

static int jnfs_teardown(struct run *r, unsigned seq)
{
	for (unsigned t = 0; t < r->T; t++) {
		struct worker *w = &r->w[t];
		if (w->ip && w->ip != r->shared_ip)
			fs_iput(w->ip);
		if (w->dir)
			fs_iput(w->dir);
	}
	if (r->shared_ip)
		fs_iput(r->shared_ip);
	int err = 0;
	if (r->top) {
		err = jnfs_unlink_all(r->top);
		fs_iput(r->top);
		struct fs_inode *root;
		char name[64];
		jnfs_name(name, sizeof(name), "run", seq);
		if (!err)
			err = fs_root(r->fs, &root);
		if (!err) {
			err = fs_rmdir(root, name, strlen(name), NULL);
			fs_iput(root);
		}
	}
	int serr = fs_sync(r->fs);
	return err ? err : serr;
}

/* ---- xfs side (plain syscalls) ---- */

static int xfs_setup(struct run *r, unsigned seq)
{
	snprintf(r->toppath, sizeof(r->toppath), "%s/run%u", r->o->xfs_dir, seq);
	if (mkdir(r->toppath, 0755) != 0)
		return -errno;
	r->topfd = open(r->toppath, O_RDONLY | O_DIRECTORY);
	if (r->topfd < 0)
		return -errno;
	if (r->wl == WL_D) {
		r->shared_fd = openat(r->topfd, "shared", O_RDWR | O_CREAT | O_EXCL, 0644);
		if (r->shared_fd < 0)
			return -errno;
		if (fallocate(r->shared_fd, 0, 0, (off_t)(r->o->falloc_mib * MIB)) != 0)
			return -errno;
	}
	for (unsigned t = 0; t < r->T; t++) {
		struct worker *w = &r->w[t];
		char name[64];
		snprintf(name, sizeof(name), "t%u", t);
		w->fd = -1;
		w->dirfd = -1;
		switch (r->wl) {
		case WL_A:
		case WL_B:
		case WL_C:
			w->fd = openat(r->topfd, name, O_RDWR | O_CREAT | O_EXCL, 0644);
			if (w->fd < 0)
				return -errno;
			for (uint64_t off = 0; r->wl != WL_C && off < OWN_FILE; off += MIB)
				if (pwrite(w->fd, r->buf, MIB, (off_t)off) != (ssize_t)MIB)
					return -EIO;
			break;
		case WL_D:
			w->fd = r->shared_fd;
			break;
		case WL_E:
			if (mkdirat(r->topfd, name, 0755) != 0)
				return -errno;
			w->dirfd = openat(r->topfd, name, O_RDONLY | O_DIRECTORY);
			if (w->dirfd < 0)
				return -errno;
			break;
		default:
			break;
		}
	}
	if (syncfs(r->topfd) != 0)
		return -errno;
	return 0;
}

static int xfs_op(struct run *r, struct worker *w)
{
	switch (r->wl) {
	case WL_A:
	case WL_B:
		if (pwrite(w->fd, r->buf, BLK, (off_t)((w->next++ % (OWN_FILE / BLK)) * BLK)) != BLK)
			return -EIO;
		return (r->wl == WL_A ? fdatasync(w->fd) : fsync(w->fd)) ? -errno : 0;
	case WL_C:
		if (pwrite(w->fd, r->buf, BLK, (off_t)(w->next++ * BLK)) != BLK)
			return -EIO;
		return fdatasync(w->fd) ? -errno : 0;
	case WL_D:
		if (w->next == w->nregion) {
			w->next = 0;
			w->wrapped = true;
		}
		if (pwrite(w->fd, r->buf, BLK, (off_t)((w->region + w->next++) * BLK)) != BLK)
			return -EIO;
		return fdatasync(w->fd) ? -errno : 0;
	case WL_E: {
		char name[64];
		snprintf(name, sizeof(name), "f%llu", (unsigned long long)w->next++);
		int fd = openat(w->dirfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			return -errno;
		int err = 0;
		if (pwrite(fd, r->buf, BLK, 0) != BLK)
			err = -EIO;
		else if (fsync(fd) != 0)
			err = -errno;
		close(fd);
		return err;
	}
	default:
		return -EINVAL;
	}
}

/* Remove everything below the directory fd (not the directory). */
static int xfs_unlink_all(int dfd)
{
	int fd = dup(dfd);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int err = 0;
	struct dirent *de;
	while (!err && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_DIR) {
			int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY);
			if (sub < 0) {
				err = -errno;
				break;
			}
			err = xfs_unlink_all(sub);
			close(sub);
			if (!err && unlinkat(dfd, de->d_name, AT_REMOVEDIR) != 0)
				err = -errno;
		} else if (unlinkat(dfd, de->d_name, 0) != 0) {
			err = -errno;
		}
	}
	closedir(d);
	return err;
}

static int xfs_teardown(struct run *r)
{
	for (unsigned t = 0; t < r->T; t++) {
		struct worker *w = &r->w[t];
		if (w->fd >= 0 && w->fd != r->shared_fd)
			close(w->fd);
		if (w->dirfd >= 0)
			close(w->dirfd);
	}
	if (r->shared_fd >= 0)
		close(r->shared_fd);
	if (r->topfd < 0)
		return 0;
	int err = xfs_unlink_all(r->topfd);
	if (syncfs(r->topfd) != 0 && !err)
		err = -errno;
	close(r->topfd);
	if (!err && rmdir(r->toppath) != 0)
		err = -errno;
	return err;
}

/* ---- running ---- */

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;
	pthread_barrier_wait(&r->start);
	while (now_ns() < r->deadline) {
		int err = r->sys == SYS_JNFS ? jnfs_op(r, w) : xfs_op(r, w);
		if (err) {
			w->err = err;
			break;
		}
		w->ops++;
	}
	return NULL;
}

static unsigned run_seq;

static int run_one(const struct opts *o, struct fs *fs, enum sys sys, enum wl wl, unsigned T,
		   struct result *res)
{
	struct run *r = xcalloc(1, sizeof(*r));
	r->o = o;
	r->wl = wl;
	r->sys = sys;
	r->T = T;
	r->fs = fs;
	r->topfd = -1;
	r->shared_fd = -1;
	r->buf = xmalloc_aligned(4096, MIB);
	memset(r->buf, 0x5a, MIB);
	unsigned seq = ++run_seq;
	memset(res, 0, sizeof(*res));

	int err = sys == SYS_JNFS ? jnfs_setup(r, seq) : xfs_setup(r, seq);
	if (err) {
		fprintf(stderr, "sync-loop: %s %s setup: %s\n", sys_name[sys], wl_name[wl],
			strerror(-err));
		goto out;
	}
	uint64_t blocks = o->falloc_mib * MIB / BLK;
	for (unsigned t = 0; t < T; t++) {
		r->w[t].run = r;
		r->w[t].id = t;
		r->w[t].nregion = blocks / T;
		r->w[t].region = t * (blocks / T);
	}

	struct counters c0, c1;
	if (sys == SYS_JNFS)
		jnfs_counters(fs, &c0);
	else
		xfs_counters(&c0);
	pthread_barrier_init(&r->start, NULL, T + 1);
	for (unsigned t = 0; t < T; t++)
		pthread_create(&r->w[t].th, NULL, worker_fn, &r->w[t]);
	uint64_t t0 = now_ns();
	r->deadline = t0 + (uint64_t)(o->seconds * 1e9);
	pthread_barrier_wait(&r->start);
	uint64_t ops = 0;
	bool wrapped = false;
	for (unsigned t = 0; t < T; t++) {
		pthread_join(r->w[t].th, NULL);
		ops += r->w[t].ops;
		wrapped |= r->w[t].wrapped;
		if (r->w[t].err && !err) {
			err = r->w[t].err;
			fprintf(stderr, "sync-loop: %s %s thread %u: %s\n", sys_name[sys],
				wl_name[wl], t, strerror(-err));
		}
	}
	double elapsed = (double)(now_ns() - t0) / 1e9;
	pthread_barrier_destroy(&r->start);
	if (sys == SYS_JNFS)
		jnfs_counters(fs, &c1);
	else
		xfs_counters(&c1);
	if (wrapped)
		fprintf(stderr,
			"sync-loop: %s %s T=%u: a thread reached the end of its region and "
			"wrapped (overwrites from then on): raise --falloc-mib\n",
			sys_name[sys], wl_name[wl], T);
	if (!err && ops) {
		res->valid = true;
		res->ops_per_s = (double)ops / elapsed;
		res->log_writes = (double)(c1.log_writes - c0.log_writes) / (double)ops;
		res->checkpoints = (double)(c1.checkpoints - c0.checkpoints) / (double)ops;
		res->flushes = (double)(c1.flushes - c0.flushes) / (double)ops;
		res->forces = (double)(c1.forces - c0.forces) / (double)ops;
		res->disk_flushes = (double)(c1.disk_flushes - c0.disk_flushes) / (double)ops;
	}
out:;
	int terr = sys == SYS_JNFS ? jnfs_teardown(r, seq) : xfs_teardown(r);
	if (terr)
		fprintf(stderr, "sync-loop: %s %s teardown: %s\n", sys_name[sys], wl_name[wl],
			strerror(-terr));
	free(r->buf);
	free(r);
	return err ? err : terr;
}

/* ---- the engine's image ---- */

/* The temporary image, removed if we are interrupted (unlink is
 * async-signal-safe). */
static char tmp_image[PATH_MAX];

static void on_signal(int sig)
{
	if (tmp_image[0])
		unlink(tmp_image);
	_exit(128 + sig);
}

static int prefill(struct dev *d)
{
	uint8_t *z = xmalloc_aligned(4096, 4 * MIB);
	memset(z, 0, 4 * MIB);
	int err = 0;
	for (uint64_t off = 0; !err && off < dev_size(d); off += 4 * MIB)
		err = dev_write(d, z, (size_t)MIN(4 * MIB, dev_size(d) - off), off, 0);
	if (!err)
		err = dev_flush(d);
	free(z);
	return err;
}

/* ---- statistics over rounds ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct summary {
	double median, spread;
	double log_writes, checkpoints, flushes, forces, disk_flushes; /* averages over rounds */
	bool valid;
};

static struct summary summarize(const struct result *r, unsigned n)
{
	struct summary s = {0};
	double v[MAX_ROUND];
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!r[i].valid)
			continue;
		v[k++] = r[i].ops_per_s;
		s.log_writes += r[i].log_writes;
		s.checkpoints += r[i].checkpoints;
		s.flushes += r[i].flushes;
		s.forces += r[i].forces;
		s.disk_flushes += r[i].disk_flushes;
	}
	if (!k)
		return s;
	qsort(v, k, sizeof(v[0]), cmp_double);
	s.valid = true;
	s.median = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	s.spread = s.median > 0 ? (v[k - 1] - v[0]) / s.median : 0;
	s.log_writes /= k;
	s.checkpoints /= k;
	s.flushes /= k;
	s.forces /= k;
	s.disk_flushes /= k;
	return s;
}

static bool parse_list(const char *s, struct opts *o)
{
	o->nthreads = 0;
	char *copy = xstrdup(s), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long v = strtol(tok, NULL, 10);
		if (v < 1 || v > MAX_T || o->nthreads == ARRAY_SIZE(o->threads)) {
			free(copy);
			return false;
		}
		o->threads[o->nthreads++] = (unsigned)v;
	}
	free(copy);
	return o->nthreads > 0;
}

static bool parse_workloads(const char *s, struct opts *o)
{
	memset(o->wl, 0, sizeof(o->wl));
	char *copy = xstrdup(s), *save = NULL;
	bool ok = true;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bool found = false;
		for (int i = 0; i < WL_N; i++) {
			if ((strlen(tok) == 1 && tok[0] == 'a' + i) || !strcmp(tok, wl_name[i])) {
				o->wl[i] = true;
				found = true;
			}
		}
		ok &= found;
	}
	free(copy);
	return ok;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sync-loop [--threads 1,8] [--seconds S] [--rounds R] "
		"[--workloads a,b,c,d,e]\n"
		"                 [--dir DIR] [--image PATH] [--image-mib M] [--no-prefill] "
		"[--buffered]\n"
		"                 [--falloc-mib F] [--xfs-dir DIR] [--no-jnfs] [--csv]\n");
}

int main(int argc, char **argv)
{
	struct opts o = {.seconds = 5, .rounds = 3, .dir = "/var/tmp", .image_mib = 2048,
			 .falloc_mib = 512, .prefill = true, .direct = true};
	parse_list("1,8", &o);
	parse_workloads("a,b,c,d,e", &o);
	static const struct option lopts[] = {{"threads", required_argument, NULL, 't'},
					      {"seconds", required_argument, NULL, 's'},
					      {"rounds", required_argument, NULL, 'r'},
					      {"workloads", required_argument, NULL, 'w'},
					      {"dir", required_argument, NULL, 'D'},
					      {"image", required_argument, NULL, 'i'},
					      {"image-mib", required_argument, NULL, 'm'},
					      {"no-prefill", no_argument, NULL, 'P'},
					      {"buffered", no_argument, NULL, 'b'},
					      {"direct", no_argument, NULL, 'd'},
					      {"falloc-mib", required_argument, NULL, 'f'},
					      {"xfs-dir", required_argument, NULL, 'x'},
					      {"no-jnfs", no_argument, NULL, 'J'},
					      {"csv", no_argument, NULL, 'c'},
					      {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "t:s:r:w:D:i:m:Pdf:x:Jc", lopts, NULL)) != -1) {
		bool ok = true;
		switch (c) {
		case 't':
			ok = parse_list(optarg, &o);
			break;
		case 's':
			o.seconds = atof(optarg);
			ok = o.seconds > 0;
			break;
		case 'r':
			o.rounds = (unsigned)atoi(optarg);
			ok = o.rounds >= 1 && o.rounds <= MAX_ROUND;
			break;
		case 'w':
			ok = parse_workloads(optarg, &o);
			break;
		case 'D':
			o.dir = optarg;
			break;
		case 'i':
			o.image = optarg;
			break;
		case 'm':
			o.image_mib = strtoull(optarg, NULL, 0);
			ok = o.image_mib >= 64;
			break;
		case 'P':
			o.prefill = false;
			break;
		case 'b':
			o.direct = false;
			break;
		case 'd': /* the default; kept for older command lines */
			o.direct = true;
			break;
		case 'f':
			o.falloc_mib = strtoull(optarg, NULL, 0);
			ok = o.falloc_mib >= 1;
			break;
		case 'x':
			o.xfs_dir = optarg;
			break;
		case 'J':
			o.no_jnfs = true;
			break;
		case 'c':
			o.csv = true;
			break;
		default:
			ok = false;
		}
		if (!ok) {
			usage();
			return 2;
		}
	}
	if (optind != argc) {
		usage();
		return 2;
	}
	msg_set_prog("sync-loop");
	if (o.falloc_mib * 2 > o.image_mib) {
		fprintf(stderr, "sync-loop: --falloc-mib must be at most half of --image-mib\n");
		return 2;
	}

	bool sys_on[SYS_N] = {!o.no_jnfs, o.xfs_dir != NULL};
	if (!sys_on[SYS_JNFS] && !sys_on[SYS_XFS]) {
		fprintf(stderr, "sync-loop: nothing to run (--no-jnfs without --xfs-dir)\n");
		return 2;
	}
	if (sys_on[SYS_XFS]) {
		find_xfs_dev(o.xfs_dir);
		char p[256];
		snprintf(p, sizeof(p), "/sys/fs/xfs/%s/stats/stats", xfs_devname);
		if (!xfs_devname[0] || access(p, R_OK) != 0)
			fprintf(stderr,
				"sync-loop: no XFS statistics for %s (%s): log writes will read 0\n",
				o.xfs_dir, p);
	}

	/* the engine: an image file, filled, formatted and mounted once */
	struct dev *d = NULL;
	struct fs *fs = NULL;
	char tmp[PATH_MAX] = "";
	const char *image = o.image;
	int err;
	if (sys_on[SYS_JNFS]) {
		if (!image) {
			snprintf(tmp, sizeof(tmp), "%s/jnfs-sync-loop-XXXXXX", o.dir);
			int fd = mkstemp(tmp);
			if (fd < 0) {
				fprintf(stderr, "sync-loop: mkstemp in %s: %s\n", o.dir, strerror(errno));
				return 1;
			}
			close(fd);
			unlink(tmp);
			image = tmp;
			memcpy(tmp_image, tmp, sizeof(tmp));
			signal(SIGINT, on_signal);
			signal(SIGTERM, on_signal);
			signal(SIGHUP, on_signal);
			signal(SIGPIPE, on_signal);
		}
		err = dev_file_open(image, DEV_OPEN_CREATE | (o.direct ? DEV_OPEN_DIRECT : 0),
				    o.image_mib * MIB, &d);
		if (err) {
			fprintf(stderr, "sync-loop: %s: %s\n", image, strerror(-err));
			return 1;
		}
		if (o.prefill && (err = prefill(d)) != 0) {
			fprintf(stderr, "sync-loop: filling %s: %s\n", image, strerror(-err));
			goto out;
		}
		err = fs_mkfs(&(struct fs_mkfs_opts){.ddev = d});
		if (!err)
			err = fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs);
		if (err) {
			fprintf(stderr, "sync-loop: mkfs/mount: %s\n", strerror(-err));
			goto out;
		}
	}

	find_disk(o.dir);
	printf("sync_loop.seconds %g\n", o.seconds);
	printf("sync_loop.rounds %u\n", o.rounds);
	printf("sync_loop.image_mib %llu\n", (unsigned long long)o.image_mib);
	if (sys_on[SYS_XFS])
		printf("sync_loop.xfs_dev %s\n", xfs_devname[0] ? xfs_devname : "?");
	fflush(stdout);

	/* results[wl][ti][sys][round] */
	static struct result results[WL_N][16][SYS_N][MAX_ROUND];
	err = 0;
	/* within a round, one workload's thread counts and systems run back to
	 * back, so that both the jnfs/XFS ratio and the scaling over thread
	 * counts compare runs made under the same load */
	for (unsigned rd = 0; rd < o.rounds && !err; rd++) {
		for (int wl = 0; wl < WL_N && !err; wl++) {
			if (!o.wl[wl])
				continue;
			for (unsigned ti = 0; ti < o.nthreads && !err; ti++) {
				for (int k = 0; k < SYS_N && !err; k++) {
					enum sys sys = (enum sys)(rd % 2 ? SYS_N - 1 - k : k);
					if (!sys_on[sys])
						continue;
					struct result *res = &results[wl][ti][sys][rd];
					err = run_one(&o, fs, sys, (enum wl)wl, o.threads[ti], res);
					if (!err)
						fprintf(stderr,
							"sync-loop: round %u %s T=%u %s: %.0f ops/s\n",
							rd + 1, wl_name[wl], o.threads[ti],
							sys_name[sys], res->ops_per_s);
				}
			}
		}
	}
	if (err)
		goto out;

	struct summary sum[WL_N][16][SYS_N];
	/* the median over rounds of jnfs/XFS in the same round: the two ran
	 * one after the other, so slow drifts of the machine's load cancel */
	double paired[WL_N][16] = {{0}}, paired_min[WL_N][16] = {{0}},
	       paired_max[WL_N][16] = {{0}};
	for (int wl = 0; wl < WL_N; wl++) {
		for (unsigned ti = 0; o.wl[wl] && ti < o.nthreads; ti++) {
			double v[MAX_ROUND];
			unsigned k = 0;
			for (unsigned rd = 0; rd < o.rounds; rd++) {
				struct result *j = &results[wl][ti][SYS_JNFS][rd];
				struct result *x = &results[wl][ti][SYS_XFS][rd];
				if (j->valid && x->valid && x->ops_per_s > 0)
					v[k++] = j->ops_per_s / x->ops_per_s;
			}
			if (!k)
				continue;
			qsort(v, k, sizeof(v[0]), cmp_double);
			paired[wl][ti] = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
			paired_min[wl][ti] = v[0];
			paired_max[wl][ti] = v[k - 1];
		}
	}
	for (int wl = 0; wl < WL_N; wl++) {
		if (!o.wl[wl])
			continue;
		for (unsigned ti = 0; ti < o.nthreads; ti++) {
			for (int sys = 0; sys < SYS_N; sys++) {
				struct summary *s = &sum[wl][ti][sys];
				*s = summarize(results[wl][ti][sys], o.rounds);
				if (!s->valid)
					continue;
				char p[128];
				snprintf(p, sizeof(p), "sync_loop.%s.t%u.%s", wl_name[wl],
					 o.threads[ti], sys_name[sys]);
				printf("%s.ops_per_s %.0f\n", p, s->median);
				printf("%s.spread %.3f\n", p, s->spread);
				printf("%s.log_writes_per_op %.3f\n", p, s->log_writes);
				if (sys == SYS_JNFS)
					printf("%s.checkpoints_per_op %.3f\n", p, s->checkpoints);
				printf("%s.flushes_per_op %.3f\n", p, s->flushes);
				printf("%s.log_forces_per_op %.3f\n", p, s->forces);
				printf("%s.disk_flushes_per_op %.3f\n", p, s->disk_flushes);
			}
			struct summary *j = &sum[wl][ti][SYS_JNFS], *x = &sum[wl][ti][SYS_XFS];
			if (j->valid && x->valid && x->median > 0) {
				printf("sync_loop.%s.t%u.ratio %.2f\n", wl_name[wl], o.threads[ti],
				       j->median / x->median);
				printf("sync_loop.%s.t%u.ratio_paired_median %.2f\n", wl_name[wl],
				       o.threads[ti], paired[wl][ti]);
				printf("sync_loop.%s.t%u.ratio_paired_min %.2f\n", wl_name[wl],
				       o.threads[ti], paired_min[wl][ti]);
				printf("sync_loop.%s.t%u.ratio_paired_max %.2f\n", wl_name[wl],
				       o.threads[ti], paired_max[wl][ti]);
			}
		}
	}
	/* d: how the largest thread count scales over one thread */
	if (o.wl[WL_D]) {
		unsigned one = UINT_MAX, big = 0;
		for (unsigned ti = 0; ti < o.nthreads; ti++) {
			if (o.threads[ti] == 1)
				one = ti;
			if (o.threads[ti] > o.threads[big])
				big = ti;
		}
		for (int sys = 0; one != UINT_MAX && o.threads[big] > 1 && sys < SYS_N; sys++) {
			struct summary *a = &sum[WL_D][one][sys], *b = &sum[WL_D][big][sys];
			if (!a->valid || !b->valid || a->median <= 0)
				continue;
			printf("sync_loop.%s.scaling_t%u_over_t1.%s %.2f\n", wl_name[WL_D],
			       o.threads[big], sys_name[sys], b->median / a->median);
			/* and the median of the same round's ratios */
			double v[MAX_ROUND];
			unsigned k = 0;
			for (unsigned rd = 0; rd < o.rounds; rd++) {
				struct result *r1 = &results[WL_D][one][sys][rd];
				struct result *rb = &results[WL_D][big][sys][rd];
				if (r1->valid && rb->valid && r1->ops_per_s > 0)
					v[k++] = rb->ops_per_s / r1->ops_per_s;
			}
			if (!k)
				continue;
			qsort(v, k, sizeof(v[0]), cmp_double);
			printf("sync_loop.%s.scaling_t%u_over_t1_paired_median.%s %.2f\n",
			       wl_name[WL_D], o.threads[big], sys_name[sys],
			       k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2);
		}
	}
	if (o.csv) {
		printf("csv,workload,threads,jnfs_ops_per_s,xfs_ops_per_s,ratio,ratio_paired_median,"
		       "jnfs_log_writes_per_op,xfs_log_writes_per_op,jnfs_checkpoints_per_op,"
		       "jnfs_flushes_per_op,xfs_flushes_per_op,jnfs_spread,xfs_spread,"
		       "ratio_paired_min,ratio_paired_max\n");
		for (int wl = 0; wl < WL_N; wl++) {
			if (!o.wl[wl])
				continue;
			for (unsigned ti = 0; ti < o.nthreads; ti++) {
				struct summary *j = &sum[wl][ti][SYS_JNFS], *x = &sum[wl][ti][SYS_XFS];
				printf("csv,%s,%u,%.0f,%.0f,%.2f,%.2f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
				       "%.3f,%.2f,%.2f\n",
				       wl_name[wl], o.threads[ti], j->median, x->median,
				       x->median > 0 ? j->median / x->median : 0.0, paired[wl][ti],
				       j->log_writes,
				       x->log_writes, j->checkpoints, j->flushes, x->flushes, j->spread,
				       x->spread, paired_min[wl][ti], paired_max[wl][ti]);
			}
		}
	}

out:
	if (fs) {
		int uerr = fs_unmount(fs);
		if (uerr && !err)
			err = uerr;
	}
	dev_close(d);
	if (tmp[0])
		unlink(tmp);
	return err ? 1 : 0;
}
