/*
 * test_fs_dirlock.c - the order in which the engine locks several
 * directories (fs_priv.h, D1-D5; docs/locking.md): renames, rmdirs, mkdirs,
 * links and unlinks racing over a tree whose directories keep moving, so
 * that a child often has a lower inode number than its parent.
 *
 *   test-fs-dirlock [--threads T] [--seconds S] [--seed N]
 *
 * First, one thread: renames whose target is an ancestor of the source's
 * directory fail with ENOTEMPTY without locking the target (D3; before, the
 * target equal to that directory was locked twice), and renames between a
 * directory and its child made before it lock the parent first (D1, D2;
 * in a checking build the lock checker stops any other order at once).
 *
 * Then T threads (8) for S seconds (30) on names d0-d3 (directories) and
 * f0-f3 (files) at every level: moves of directories between any two
 * directories, into a sibling and out to the grandparent; files renamed
 * into a child directory and back out, created, linked across directories,
 * unlinked; directories made and removed. A rename of B/f to B/A/f locks B
 * and A while an rmdir of B/A locks B and A too; when A was made before B
 * and moved under it later, an order by inode number takes A first in the
 * rename and B first in the rmdir: the two wait for each other for ever,
 * and so does every later operation on either directory. The tree is kept
 * to 64 inodes, so that the operations keep meeting on the same names.
 *
 * A watchdog thread fails the run (exit 1, naming each thread's operation
 * and paths) as soon as any single operation has taken more than 5 s: each
 * is a few lookups and one small transaction, milliseconds even under the
 * sanitizers on a loaded machine, so only a deadlock takes that long. Every
 * operation may fail only with the errors a racing namespace gives, and the
 * check of the image afterwards is clean.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/msg.h"
#include "base/rand.h"
#include "base/time.h"
#include "check.h"
#include "fs_stress_util.h"
#include "dev/dev.h"
#include "fs/fs.h"

#define MIB         (1ull << 20)
#define MAX_THREADS 32
#define NAMES       4 /* d0-d3, f0-f3 */
#define MAX_DEPTH   12
#define MAX_INODES  64 /* in use: beyond, mkdir and create become rmdir and unlink */
#define STUCK_NS    (5 * NSEC_PER_SEC)

enum op {
	OP_MOVE_DIR,  /* X/dK -> Y/dM */
	OP_DIR_DOWN,  /* X/dK -> X/dM/dN */
	OP_DIR_UP,    /* X/dM/dN -> X/dK */
	OP_FILE_DOWN, /* X/fK -> X/dM/fN */
	OP_FILE_UP,   /* X/dM/fN -> X/fK */
	OP_MKDIR,
	OP_RMDIR,
	OP_CREATE,
	OP_LINK, /* X/fK -> Y/fM */
	OP_UNLINK,
	OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
	"rename (move a directory)", "rename (a directory into a sibling)",
	"rename (a directory out to its grandparent)", "rename (a file into a child directory)",
	"rename (a file out to the parent)", "mkdir", "rmdir", "create", "link", "unlink",
};

struct thread {
	struct fs *fs;
	unsigned id;
	uint64_t seed;
	pthread_t th;
	/* what the thread does now, for the watchdog: op_start is 0 between
	 * operations and is stored (release) after what[] is written */
	_Atomic uint64_t op_start;
	char what[160];
	unsigned long done[OP_COUNT], failed[OP_COUNT];
};

static _Atomic bool stop;

/* A directory and its path from the root (referenced). */
struct dir {
	struct fs_inode *ip;
	char path[64];
};

static void dir_put(struct dir *d)
{
	if (d->ip)
		fs_iput(d->ip);
	d->ip = NULL;
}

static bool is_dir(struct fs_inode *ip)
{
	struct fs_attr a;
	return fs_getattr(ip, &a) == 0 && S_ISDIR(a.mode);
}

/* A child directory of d by name, or false (not there, not a directory). */
static bool child_dir(struct dir *d, const char *name, struct dir *out)
{
	struct fs_inode *ip;
	if (fs_lookup(d->ip, name, strlen(name), &ip))
		return false;
	if (!is_dir(ip)) {
		fs_iput(ip);
		return false;
	}
	out->ip = ip;
	snprintf(out->path, sizeof(out->path), "%.48s/%.8s", d->path, name);
	return true;
}

/* A random existing directory: a walk down from the root. */
static void pick_dir(struct fs *fs, struct rng *r, struct dir *out)
{
	CHECK_OK(fs_root(fs, &out->ip));
	strcpy(out->path, "");
	for (int depth = 0; depth < MAX_DEPTH && rng_chance(r, 65); depth++) {
		char name[8];
		snprintf(name, sizeof(name), "d%u", (unsigned)rng_below(r, NAMES));
		struct dir c;
		if (!child_dir(out, name, &c))
			break;
		dir_put(out);
		*out = c;
	}
}

static void rname(char *buf, struct rng *r, char kind)
{
	snprintf(buf, 8, "%c%u", kind, (unsigned)rng_below(r, NAMES));
}

static void op_begin(struct thread *t, enum op op, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void op_begin(struct thread *t, enum op op, const char *fmt, ...)
{
	int n = snprintf(t->what, sizeof(t->what), "%s ", op_names[op]);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->what + n, sizeof(t->what) - (size_t)n, fmt, ap);
	va_end(ap);
	atomic_store_explicit(&t->op_start, now_ns(), memory_order_release);
}

static void op_end(struct thread *t, enum op op, int err)
{
	atomic_store_explicit(&t->op_start, 0, memory_order_release);
	t->done[op]++;
	if (!err)
		return;
	t->failed[op]++;
	switch (err) {
	case -ENOENT:
	case -EEXIST:
	case -ENOTEMPTY:
	case -EISDIR:
	case -ENOTDIR:
	case -EINVAL: /* a directory into itself or below */
		return;
	}
	fprintf(stderr, "thread %u: %s: %s\n", t->id, t->what, strerror(-err));
	exit(1);
}

/* One operation; lookups are part of it (a stuck lookup is a hang too). */
static void one_op(struct thread *t, struct rng *r)
{
	enum op op = (enum op)rng_below(r, OP_COUNT);
	if (op == OP_MKDIR || op == OP_CREATE) {
		/* a bounded tree: moves would otherwise push what mkdir makes
		 * ever deeper, and it would grow without end */
		struct fs_statfs st;
		CHECK_OK(fs_statfs(t->fs, &st));
		if (st.files - st.ffree >= MAX_INODES)
			op = op == OP_MKDIR ? OP_RMDIR : OP_UNLINK;
	}
	struct dir x = {0}, y = {0}, c = {0};
	char a[8], b[8], m[8];
	int err;
	op_begin(t, op, "(looking up)");
	pick_dir(t->fs, r, &x);
	switch (op) {
	case OP_MOVE_DIR:
		pick_dir(t->fs, r, &y);
		rname(a, r, 'd');
		rname(b, r, 'd');
		op_begin(t, op, "%s/%s -> %s/%s", x.path, a, y.path, b);
		err = fs_rename(x.ip, a, 2, y.ip, b, 2, NULL);
		break;
	case OP_DIR_DOWN:
	case OP_FILE_DOWN:
	case OP_DIR_UP:
	case OP_FILE_UP: {
		char kind = op == OP_DIR_DOWN || op == OP_DIR_UP ? 'd' : 'f';
		rname(m, r, 'd');
		rname(a, r, kind);
		rname(b, r, kind);
		if (!child_dir(&x, m, &c)) {
			err = -ENOENT;
			break;
		}
		bool down = op == OP_DIR_DOWN || op == OP_FILE_DOWN;
		if (down) {
			op_begin(t, op, "%s/%s -> %s/%s", x.path, a, c.path, b);
			err = fs_rename(x.ip, a, 2, c.ip, b, 2, NULL);
		} else {
			op_begin(t, op, "%s/%s -> %s/%s", c.path, b, x.path, a);
			err = fs_rename(c.ip, b, 2, x.ip, a, 2, NULL);
		}
		break;
	}
	case OP_MKDIR:
	case OP_CREATE: {
		rname(a, r, op == OP_MKDIR ? 'd' : 'f');
		op_begin(t, op, "%s/%s", x.path, a);
		struct fs_create_args ca = {.mode = op == OP_MKDIR ? S_IFDIR | 0755 : S_IFREG | 0644};
		struct fs_inode *ip;
		err = fs_create(x.ip, a, 2, &ca, &ip, NULL);
		if (!err)
			fs_iput(ip);
		break;
	}
	case OP_RMDIR:
		rname(a, r, 'd');
		op_begin(t, op, "%s/%s", x.path, a);
		err = fs_rmdir(x.ip, a, 2, NULL);
		break;
	case OP_UNLINK:
		rname(a, r, 'f');
		op_begin(t, op, "%s/%s", x.path, a);
		err = fs_unlink(x.ip, a, 2, NULL);
		break;
	case OP_LINK: {
		pick_dir(t->fs, r, &y);
		rname(a, r, 'f');
		rname(b, r, 'f');
		op_begin(t, op, "%s/%s -> %s/%s", x.path, a, y.path, b);
		struct fs_inode *ip;
		err = fs_lookup(x.ip, a, 2, &ip);
		if (!err) {
			err = fs_link(ip, y.ip, b, 2, NULL);
			fs_iput(ip);
		}
		break;
	}
	default:
		abort();
	}
	dir_put(&c);
	dir_put(&y);
	dir_put(&x);
	op_end(t, op, err);
}

static void *run(void *arg)
{
	struct thread *t = arg;
	struct rng r;
	rng_seed(&r, t->seed * 1000 + t->id);
	while (!atomic_load(&stop))
		one_op(t, &r);
	return NULL;
}

struct watch {
	struct thread *th;
	unsigned n;
	_Atomic bool done;
};

static void *watchdog(void *arg)
{
	struct watch *w = arg;
	while (!atomic_load(&w->done)) {
		sleep_ns(100 * NSEC_PER_MSEC);
		uint64_t now = now_ns();
		bool stuck = false;
		for (unsigned i = 0; i < w->n; i++) {
			struct thread *t = &w->th[i];
			uint64_t t0 = atomic_load_explicit(&t->op_start, memory_order_acquire);
			if (t0 && now > t0 + STUCK_NS) {
				fprintf(stderr, "watchdog: thread %u has been in %s for %.1f s\n", t->id,
					t->what, (double)(now - t0) / 1e9);
				stuck = true;
			}
		}
		if (stuck) {
			fprintf(stderr, "watchdog: an operation took over %.0f s: deadlock\n",
				(double)STUCK_NS / 1e9);
			_exit(1); /* the stuck threads hold engine locks: no clean exit */
		}
	}
	return NULL;
}

static struct fs *make_fs(struct dev **dp)
{
	CHECK_OK(dev_mem_create(256 * MIB, NULL, dp));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = *dp, .log_size = 4 * MIB}));
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = *dp, .push_interval_ns = 50 * NSEC_PER_MSEC},
			  &fs));
	return fs;
}

static void check_clean(struct fs *fs, struct dev *d)
{
	CHECK_OK(fs_unmount(fs));
	fsu_check_clean(d);
	dev_close(d);
}

static struct fs_inode *mk(struct fs_inode *dp, const char *name, uint32_t mode)
{
	struct fs_create_args ca = {.mode = mode};
	struct fs_inode *ip;
	CHECK_OK(fs_create(dp, name, strlen(name), &ca, &ip, NULL));
	return ip;
}

/* Renames onto an ancestor of the source directory. */
static void test_target_is_ancestor(void)
{
	struct dev *d;
	struct fs *fs = make_fs(&d);
	struct fs_inode *root, *D, *T, *U, *V, *f;
	CHECK_OK(fs_root(fs, &root));
	D = mk(root, "D", S_IFDIR | 0755);
	T = mk(D, "T", S_IFDIR | 0755);
	U = mk(T, "U", S_IFDIR | 0755);
	V = mk(U, "V", S_IFDIR | 0755);
	f = mk(T, "x", S_IFDIR | 0755);
	fs_iput(f);
	f = mk(U, "y", S_IFREG | 0644);
	fs_iput(f);
	/* D/T/x -> D/T: the target is the source directory itself */
	CHECK_EQ(fs_rename(T, "x", 1, D, "T", 1, NULL), -ENOTEMPTY);
	/* D/T/U/V -> D/T: the target is the source directory's parent */
	CHECK_EQ(fs_rename(U, "V", 1, D, "T", 1, NULL), -ENOTEMPTY);
	/* D/T -> D/T/U/T2: a directory under itself */
	CHECK_EQ(fs_rename(D, "T", 1, U, "T2", 2, NULL), -EINVAL);
	/* D/T/U/y -> D/T/U/V/y and back: a file between parent and child */
	CHECK_OK(fs_rename(U, "y", 1, V, "y", 1, NULL));
	CHECK_OK(fs_rename(V, "y", 1, U, "y", 1, NULL));
	fs_iput(V);
	fs_iput(U);
	fs_iput(T);
	fs_iput(D);
	fs_iput(root);
	check_clean(fs, d);
	TEST_PASS("renames onto an ancestor of the source");
}

/* A child made before its parent and moved under it: a lower number. */
static void test_moved_child(void)
{
	struct dev *d;
	struct fs *fs = make_fs(&d);
	struct fs_inode *root, *A, *B, *f;
	CHECK_OK(fs_root(fs, &root));
	A = mk(root, "A", S_IFDIR | 0755);
	B = mk(root, "B", S_IFDIR | 0755);
	CHECK(fs_ino(A) < fs_ino(B));
	CHECK_OK(fs_rename(root, "A", 1, B, "A", 1, NULL));
	f = mk(B, "f", S_IFREG | 0644);
	fs_iput(f);
	/* B/f -> B/A/f and back: B is locked before A both ways */
	CHECK_OK(fs_rename(B, "f", 1, A, "f", 1, NULL));
	CHECK_OK(fs_rename(A, "f", 1, B, "f", 1, NULL));
	CHECK_EQ(fs_rmdir(root, "B", 1, NULL), -ENOTEMPTY);
	CHECK_OK(fs_unlink(B, "f", 1, NULL));
	CHECK_OK(fs_rmdir(B, "A", 1, NULL));
	fs_iput(A);
	fs_iput(B);
	fs_iput(root);
	check_clean(fs, d);
	TEST_PASS("a directory's lower-numbered child is locked after it");
}

static void stress(unsigned nthreads, unsigned seconds, uint64_t seed)
{
	struct dev *d;
	struct fs *fs = make_fs(&d);
	struct thread *th = calloc(nthreads, sizeof(*th));
	for (unsigned i = 0; i < nthreads; i++) {
		th[i].fs = fs;
		th[i].id = i;
		th[i].seed = seed;
	}
	struct watch w = {.th = th, .n = nthreads};
	pthread_t wd;
	CHECK_OK(pthread_create(&wd, NULL, watchdog, &w));
	uint64_t t0 = now_ns();
	for (unsigned i = 0; i < nthreads; i++)
		CHECK_OK(pthread_create(&th[i].th, NULL, run, &th[i]));
	sleep_ns((uint64_t)seconds * NSEC_PER_SEC);
	atomic_store(&stop, true);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(th[i].th, NULL);
	uint64_t t1 = now_ns();
	atomic_store(&w.done, true);
	pthread_join(wd, NULL);

	unsigned long done[OP_COUNT] = {0}, failed[OP_COUNT] = {0}, total = 0;
	for (unsigned i = 0; i < nthreads; i++)
		for (unsigned k = 0; k < OP_COUNT; k++) {
			done[k] += th[i].done[k];
			failed[k] += th[i].failed[k];
			total += th[i].done[k];
		}
	printf("stress: %u threads, %lu operations in %.1f s\n", nthreads, total,
	       (double)(t1 - t0) / 1e9);
	for (unsigned k = 0; k < OP_COUNT; k++)
		printf("  %-44s %8lu done, %8lu succeeded\n", op_names[k], done[k],
		       done[k] - failed[k]);
	/* every kind of operation got through many times, not only failed */
	for (unsigned k = 0; k < OP_COUNT; k++)
		CHECK(done[k] > failed[k]);
	check_clean(fs, d);
	free(th);
	TEST_PASS("directory operations over a moving tree, no operation over 5 s, check clean");
}

int main(int argc, char **argv)
{
	unsigned threads = 8, seconds = 30;
	uint64_t seed = 1;
	if (fsu_parse_opts(argc, argv, "seconds", &threads, &seconds, &seed))
		return 2;
	CHECK(threads >= 1 && threads <= MAX_THREADS);
	setvbuf(stdout, NULL, _IOLBF, 0);
	msg_set_level(MSG_ERR);
	test_target_is_ancestor();
	test_moved_child();
	stress(threads, seconds, seed);
	return 0;
}
