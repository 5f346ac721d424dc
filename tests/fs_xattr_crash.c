/*
 * fs_xattr_crash.c - power cuts in a workload of extended attributes
 * (fs_setxattr, fs_removexattr; src/fs/xattr.c).
 *
 *   fs-xattr-crash [--points N] [--seed S] [--verbose]
 *
 * Each round records, on a crash device, T threads setting and removing
 * attributes of names of their own on a file of their own (values of 0 to
 * 64 KiB: one to 74 fragments, replaced across sizes), some of them
 * forced to their own sequence (res->csn, as a sync export does) and
 * marked acknowledged, with the journal's background push every 20 ms.
 * Then, at every flush and FUA write of the recording and at random points
 * (the unflushed writes kept, dropped or torn at random), the image is
 * recovered and:
 *   1. check is clean (X1-X4 of xattr.c);
 *   2. every attribute reads back whole: its value is one a set of its
 *      name wrote (none half-applied, none made up);
 *   3. every name is as its last acknowledged set or remove left it, or as
 *      an operation on it that had started since left it (a forced commit
 *      survives; xattr.c X1 and the journal's G1-G3);
 *   4. after a mount has freed the orphans, check is clean again: another
 *      thread meanwhile makes files with attributes (up to 31 KiB) and
 *      unlinks them, so a cut leaves orphans whose attributes were being
 *      freed, a batch per transaction (xattr.c X5).
 * The last line is "crash points: N, violations: V".
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/rand.h"
#include "crash_points.h"
#include "dev/crashdev.h"
#include "fs/fs.h"

#define IMG_SIZE    (32u << 20)
#define MAX_THREADS 3
#define KEYS        24  /* names per thread */
#define MAX_OPS     300 /* per thread */

enum { OP_PUT, OP_DELETE };

struct op {
	uint8_t kind;
	bool forced;
	unsigned key;
	unsigned version; /* puts: the version written */
	size_t len;
	int err;
};

struct thread {
	unsigned t;
	struct op ops[MAX_OPS];
	unsigned nops;
};

struct world {
	_Atomic bool done; /* the workload threads ended: the churn stops */
	struct fs *fs;
	struct dev *cd;
	struct thread th[MAX_THREADS];
	unsigned nthreads, nops;
	uint64_t seed;
};

#define MARK_START 1ull
#define MARK_ACK   2ull
static uint64_t mark(uint64_t kind, unsigned t, unsigned i)
{
	return kind << 56 | (uint64_t)t << 48 | i;
}

static size_t key_of(unsigned t, unsigned k, char *out)
{
	return (size_t)snprintf(out, 32, "user.t%u-name-%u", t, k);
}

static size_t file_of(unsigned t, char *out)
{
	return (size_t)snprintf(out, 16, "f%u", t);
}

static struct fs_inode *lookup_file(struct fs *fs, unsigned t)
{
	struct fs_inode *root, *ip = NULL;
	char name[16];
	size_t nl = file_of(t, name);
	if (fs_root(fs, &root))
		return NULL;
	if (fs_lookup(root, name, nl, &ip))
		ip = NULL;
	fs_iput(root);
	return ip;
}

static void value_of(unsigned t, unsigned k, unsigned v, size_t len, uint8_t *out)
{
	uint64_t x = (uint64_t)t << 40 | (uint64_t)k << 20 | v;
	for (size_t i = 0; i < len; i++)
		out[i] = (uint8_t)splitmix64(&x);
}

static void *run_thread(void *arg)
{
	struct world *w = ((void **)arg)[0];
	struct thread *th = ((void **)arg)[1];
	struct rng r;
	rng_seed(&r, w->seed * 131 + th->t);
	unsigned version[KEYS] = {0};
	uint8_t *val = xmalloc(FS_XATTR_SIZE_MAX);
	struct fs_inode *ip = lookup_file(w->fs, th->t);
	if (!ip)
		abort();
	for (unsigned i = 0; i < w->nops; i++) {
		struct op *o = &th->ops[th->nops];
		unsigned idx = th->nops++;
		o->key = (unsigned)rng_below(&r, KEYS);
		o->kind = rng_chance(&r, 25) ? OP_DELETE : OP_PUT;
		o->forced = rng_chance(&r, 40);
		char k[32];
		size_t kl = key_of(th->t, o->key, k);
		struct fs_result res = {0};
		crashdev_mark(w->cd, mark(MARK_START, th->t, idx));
		int err;
		if (o->kind == OP_PUT) {
			o->version = ++version[o->key];
			/* fragment 0 holds 873 or 874 bytes of value with
			 * these names, the others 900 */
			static const size_t edges[] = {
				0, 1, 873, 874, 875, 1774, 1775, FS_XATTR_SIZE_MAX,
			};
			o->len = rng_chance(&r, 20)   ? edges[rng_below(&r, 8)]
				 : rng_chance(&r, 10) ? (size_t)rng_below(&r, FS_XATTR_SIZE_MAX + 1)
						      : (size_t)rng_below(&r, 4000);
			value_of(th->t, o->key, o->version, o->len, val);
			err = fs_setxattr(ip, k, kl, val, o->len, 0, &res);
			if (err == -ENOSPC)
				err = 0; /* the inode's total: refused, nothing changed */
		} else {
			err = fs_removexattr(ip, k, kl, &res);
			if (err == -ENODATA)
				err = 0; /* nothing to remove: still a state to keep */
		}
		/* acknowledged: forced to its own sequence (a delete that found
		 * nothing committed nothing, and acknowledges nothing) */
		bool acked = !err && o->forced && res.csn;
		if (acked)
			err = fs_force(w->fs, res.csn, NULL);
		o->err = err;
		if (!err && acked)
			crashdev_mark(w->cd, mark(MARK_ACK, th->t, idx));
		if (err) {
			fprintf(stderr, "thread %u op %u: %s\n", th->t, idx, strerror(-err));
			break;
		}
	}
	fs_iput(ip);
	free(val);
	return NULL;
}

/* Files made with attributes and unlinked (the last reference frees
 * them), while the workload threads run. */
static void *run_churn(void *arg)
{
	struct world *w = arg;
	uint8_t *val = xmalloc(FS_XATTR_SIZE_MAX);
	memset(val, 0x5a, FS_XATTR_SIZE_MAX);
	struct fs_inode *root;
	if (fs_root(w->fs, &root))
		abort();
	for (unsigned i = 0; !atomic_load(&w->done); i++) {
		char name[16];
		size_t nl = (size_t)snprintf(name, sizeof(name), "c%u", i % 4);
		struct fs_inode *ip;
		struct fs_create_args ca = {.mode = S_IFREG | 0644};
		int err = fs_create(root, name, nl, &ca, &ip, NULL);
		for (unsigned a = 0; !err && a < 1 + i % 12; a++) {
			char an[16];
			size_t al = (size_t)snprintf(an, sizeof(an), "user.c%u", a);
			size_t len = a % 4 == 3 ? 20000 + a * 1000 : a * 300;
			err = fs_setxattr(ip, an, al, val, len, 0, NULL);
		}
		if (!err)
			err = fs_unlink(root, name, nl, NULL);
		if (err) {
			fprintf(stderr, "churn %u: %s\n", i, strerror(-err));
			break;
		}
		fs_iput(ip);
	}
	fs_iput(root);
	free(val);
	return NULL;
}

/* ---- verification ---- */

struct verify_ctx {
	struct world *w;
	unsigned started[MAX_THREADS]; /* ops started before the cut */
	int acked[MAX_THREADS][KEYS];  /* last acknowledged op per key, or -1 */
	unsigned violations;
	uint64_t records_read;
	const char *what;
	/* what the image holds: version per key (0: absent), from iteration */
	unsigned present[MAX_THREADS][KEYS];
	size_t present_len[MAX_THREADS][KEYS];
};

static void violation(struct verify_ctx *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void violation(struct verify_ctx *v, const char *fmt, ...)
{
	v->violations++;
	if (v->violations > 20)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", v->what);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

/* 2: some set of this name that had started wrote exactly this (the
 * latest such: values can be alike, empty ones above all) */
static void seen_attr(struct verify_ctx *v, unsigned tf, const char *ks, const uint8_t *val,
		      size_t vlen)
{
	unsigned t, k;
	if (sscanf(ks, "user.t%u-name-%u", &t, &k) != 2 || t != tf || k >= KEYS) {
		violation(v, "file f%u has an attribute never written: %s", tf, ks);
		return;
	}
	const struct thread *th = &v->w->th[t];
	uint8_t *want = xmalloc(FS_XATTR_SIZE_MAX);
	unsigned n = v->started[t] < th->nops ? v->started[t] : th->nops;
	for (unsigned i = n; i-- > 0;) {
		const struct op *o = &th->ops[i];
		if (o->kind != OP_PUT || o->key != k || o->len != vlen)
			continue;
		value_of(t, k, o->version, vlen, want);
		if (!memcmp(want, val, vlen)) {
			v->present[t][k] = o->version;
			v->present_len[t][k] = vlen;
			v->records_read++;
			free(want);
			return;
		}
	}
	free(want);
	violation(v, "attribute %s holds %zu bytes no started set wrote", ks, vlen);
}

struct names {
	unsigned n;
	char name[KEYS + 8][FS_XATTR_NAME_MAX + 1];
};

static int name_cb(void *arg, const char *name, size_t nlen, size_t vlen, uint64_t cookie)
{
	struct names *ns = arg;
	if (ns->n == KEYS + 8)
		return 1;
	memcpy(ns->name[ns->n], name, nlen);
	ns->name[ns->n++][nlen] = '\0';
	return 0;
}

static void read_file_attrs(struct verify_ctx *v, struct fs *fs, unsigned t)
{
	struct fs_inode *ip = lookup_file(fs, t);
	if (!ip) {
		violation(v, "file f%u is gone", t);
		return;
	}
	struct names *ns = xcalloc(1, sizeof(*ns));
	int err = fs_listxattr(ip, 0, name_cb, ns);
	if (err)
		violation(v, "listing f%u's attributes failed: %s", t, strerror(-err));
	if (ns->n > KEYS)
		violation(v, "file f%u has %u attributes", t, ns->n);
	uint8_t *val = xmalloc(FS_XATTR_SIZE_MAX);
	for (unsigned i = 0; i < ns->n; i++) {
		size_t vlen;
		err = fs_getxattr(ip, ns->name[i], strlen(ns->name[i]), val, FS_XATTR_SIZE_MAX,
				  &vlen);
		if (err)
			violation(v, "reading %s of f%u failed: %s", ns->name[i], t,
				  strerror(-err));
		else
			seen_attr(v, t, ns->name[i], val, vlen);
	}
	free(val);
	free(ns);
	fs_iput(ip);
}

/* 3: the key's state is one an op in [last acknowledged, last started]
 * left (before the first op: absent). */
static void verify_key(struct verify_ctx *v, unsigned t, unsigned k)
{
	const struct thread *th = &v->w->th[t];
	int from = v->acked[t][k];
	unsigned have = v->present[t][k];
	bool ok = from < 0 && have == 0; /* nothing acknowledged: absent is fine */
	for (int i = from < 0 ? 0 : from; !ok && i < (int)v->started[t] && i < (int)th->nops; i++) {
		const struct op *o = &th->ops[i];
		if (o->key != k)
			continue;
		ok = o->kind == OP_PUT ? have == o->version : have == 0;
	}
	if (!ok)
		violation(v, "name %u of f%u holds version %u, but op %d on it was acknowledged", k,
			  t, have, from);
}

static void verify_image(struct verify_ctx *v, struct dev *img)
{
	struct fs *fs;
	int err = fs_mount(&(struct fs_mount_opts){.ddev = img, .readonly_check = true}, &fs);
	if (err) {
		violation(v, "recovery failed: %s", strerror(-err));
		return;
	}
	uint64_t problems = 0;
	fs_check(fs, stderr, &problems);
	if (problems)
		violation(v, "check found %llu problems", (unsigned long long)problems);
	memset(v->present, 0, sizeof(v->present));
	for (unsigned t = 0; t < v->w->nthreads; t++)
		read_file_attrs(v, fs, t);
	for (unsigned t = 0; t < v->w->nthreads; t++)
		for (unsigned k = 0; k < KEYS; k++)
			verify_key(v, t, k);
	if (fs_unmount(fs)) {
		violation(v, "unmount failed");
		return;
	}
	/* 4: a mount frees the orphans (their attributes first), and leaves
	 * the image clean */
	if (fs_mount(&(struct fs_mount_opts){.ddev = img}, &fs) || fs_unmount(fs) ||
	    fs_mount(&(struct fs_mount_opts){.ddev = img, .readonly_check = true}, &fs)) {
		violation(v, "mounting to free the orphans failed");
		return;
	}
	problems = 0;
	fs_check(fs, stderr, &problems);
	if (problems)
		violation(v, "check found %llu problems after the orphans were freed",
			  (unsigned long long)problems);
	if (fs_unmount(fs))
		violation(v, "unmount failed");
}

/* ---- rounds ---- */

static bool verbose;

struct totals {
	uint64_t points, violations, acked, records_read;
};

static void run_round(uint64_t seed, uint64_t budget, struct totals *tot)
{
	struct rng r;
	rng_seed(&r, seed);
	struct world *w = xcalloc(1, sizeof(*w));
	w->seed = seed;
	w->nthreads = 1 + (unsigned)rng_below(&r, MAX_THREADS);
	w->nops = 100 + (unsigned)rng_below(&r, MAX_OPS - 100);

	struct dev *inner, *cd;
	struct fs *fs;
	/* the files, before the recording (a 2 MiB journal: mkfs's smallest
	 * default, which takes the largest values) */
	if (dev_mem_create(IMG_SIZE, NULL, &inner) ||
	    fs_mkfs(&(struct fs_mkfs_opts){.ddev = inner, .log_size = 2 << 20}) ||
	    fs_mount(&(struct fs_mount_opts){.ddev = inner}, &fs))
		abort();
	struct fs_inode *root;
	if (fs_root(fs, &root))
		abort();
	for (unsigned t = 0; t < MAX_THREADS; t++) {
		char name[16];
		size_t nl = file_of(t, name);
		struct fs_inode *ip;
		struct fs_create_args ca = {.mode = S_IFREG | 0644};
		if (fs_create(root, name, nl, &ca, &ip, NULL))
			abort();
		fs_iput(ip);
	}
	fs_iput(root);
	if (fs_unmount(fs))
		abort();
	uint8_t *durable = xmalloc(IMG_SIZE);
	dev_mem_copy_out(inner, durable);
	if (crashdev_create(inner, CRASHDEV_RECORD, &cd) ||
	    fs_mount(&(struct fs_mount_opts){.ddev = cd, .push_interval_ns = 20000000}, &fs))
		abort();
	w->fs = fs;
	w->cd = cd;
	pthread_t tid[MAX_THREADS];
	void *args[MAX_THREADS][2];
	for (unsigned t = 0; t < w->nthreads; t++) {
		w->th[t].t = t;
		args[t][0] = w;
		args[t][1] = &w->th[t];
		pthread_create(&tid[t], NULL, run_thread, args[t]);
	}
	pthread_t churn;
	pthread_create(&churn, NULL, run_churn, w);
	for (unsigned t = 0; t < w->nthreads; t++)
		pthread_join(tid[t], NULL);
	atomic_store(&w->done, true);
	pthread_join(churn, NULL);
	fs_shutdown(fs, "end of recorded workload");
	fs_unmount(fs);

	size_t nev = crashdev_nevents(cd);
	const struct crash_event *ev = crashdev_events(cd);
	size_t npts;
	size_t *pts = crash_points_pick(ev, nev, 150, budget, &r, &npts);

	struct verify_ctx v = {.w = w};
	memset(v.acked, 0xff, sizeof(v.acked));
	size_t applied = 0, from = 0, scan = 0;
	for (size_t p = 0; p < npts; p++) {
		size_t pt = pts[p];
		for (size_t i = applied; i < pt; i++) {
			if (ev[i].type == CRASH_EV_FLUSH) {
				for (size_t j = applied; j < i; j++)
					if (ev[j].type == CRASH_EV_WRITE ||
					    ev[j].type == CRASH_EV_FUA)
						memcpy(durable + ev[j].off, ev[j].data, ev[j].len);
				applied = i + 1;
				from = i + 1;
			}
		}
		for (; scan < pt; scan++) {
			if (ev[scan].type != CRASH_EV_MARK)
				continue;
			uint64_t tag = ev[scan].tag;
			unsigned t = (unsigned)((tag >> 48) & 0xff);
			unsigned i = (unsigned)(tag & 0xffffffff);
			if (tag >> 56 == MARK_START)
				v.started[t] = i + 1;
			else if (tag >> 56 == MARK_ACK)
				v.acked[t][w->th[t].ops[i].key] = (int)i;
		}
		struct dev *img;
		if (dev_mem_create(IMG_SIZE, durable, &img))
			abort();
		struct crash_cut_stats st = {0};
		crash_apply_cut(ev, from, pt, img, 512, seed * 7919 + pt, &st);
		char what[80];
		snprintf(what, sizeof(what), "round %llu point %zu/%zu", (unsigned long long)seed,
			 pt, nev);
		v.what = what;
		unsigned before = v.violations;
		verify_image(&v, img);
		if (verbose)
			printf("%s: %s\n", what, v.violations == before ? "ok" : "VIOLATION");
		tot->points++;
		dev_close(img);
	}
	tot->violations += v.violations;
	tot->records_read += v.records_read;
	for (unsigned t = 0; t < w->nthreads; t++)
		for (unsigned k = 0; k < KEYS; k++)
			tot->acked += v.acked[t][k] >= 0;
	free(pts);
	free(durable);
	dev_close(cd);
	dev_close(inner);
	free(w);
}

int main(int argc, char **argv)
{
	struct crash_opts o = {.points = 1000};
	if (crash_opts_parse(argc, argv, &o))
		return 2;
	verbose = o.verbose;
	uint64_t points = o.points, seed = o.seed;
	msg_set_level(MSG_ERR);
	msg_set_prog("fs-xattr-crash");
	struct totals tot = {0};
	for (uint64_t round = 0; tot.points < points; round++)
		run_round(seed * 1000 + round,
			  points - tot.points < 300 ? points - tot.points : 300, &tot);
	printf("attributes read back: %llu; names acknowledged by the end of a round: %llu\n",
	       (unsigned long long)tot.records_read, (unsigned long long)tot.acked);
	printf("crash points: %llu, violations: %llu\n", (unsigned long long)tot.points,
	       (unsigned long long)tot.violations);
	return tot.violations ? 1 : 0;
}
