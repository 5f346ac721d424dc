/*
 * fs_crash.c - the filesystem engine's crash suite.
 *
 *   fs-crash [--points N] [--seed S] [--verbose]
 *
 * Each round records a random workload of T threads on a crash device.
 * Every thread works in its own directory: create, link, rename, unlink,
 * write, extend, truncate, fallocate, punch, zero, fsync, fdatasync,
 * synchronous writes (fs_write_sync forced as NFS FILE_SYNC and DATA_SYNC
 * are: small ones logged, docs/logged-data.md), and pNFS-style writes
 * (map_blocks, writes straight to the device, commit_blocks). Half of the
 * plain writes and layout writes go where the file's last synchronous
 * write went: in-place overwrites, truncates and direct writes of logged
 * blocks. Writes often follow a fallocate or zeroing of their file, in
 * whole blocks inside it: into unwritten blocks, whose data goes out under
 * the shared I/O lock before the conversion. Some metadata operations are followed by a force of their
 * own sequence (as a sync export does). Meanwhile the engine's trimmer gives
 * back the preallocation of files not appended to for 2 ms. Marks in the recorded stream tell
 * when each operation started and when each acknowledgement returned.
 *
 * Data: every aligned 8-byte word a file ever holds is 0 or
 * (file id << 40 | generation << 24 | word index), so a foreign or stale
 * byte is recognisable anywhere.
 *
 * At each crash point (every flush and FUA write, and random points, the
 * unflushed writes kept, dropped or torn at random) the image is
 * recovered, and:
 *   1. jnfs check is clean;
 *   2. every file holds only zeros and its own words (no byte that was not
 *      written to it);
 *   3. every acknowledged operation is present: a file's content and size
 *      are at least what its last acknowledged fsync/fdatasync saw (unless
 *      an operation that may shrink or zero it had started since), every
 *      acknowledged synchronous write's range holds it or newer data (the
 *      same exception), and an acknowledged name binding holds (unless an
 *      operation on that name had started since).
 * The last line is "crash points: N, violations: V".
 */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
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

#define IMG_SIZE   (48u << 20)
#define MAX_FILE   (256u << 10)
#define WORDS      (MAX_FILE / 8)
#define MAX_OPS    600
#define MAX_FILES  256
#define MAX_NAMES  512
#define MAX_THREADS 4

enum op_kind {
	OP_CREATE, OP_WRITE, OP_TRUNCATE, OP_FALLOC, OP_PUNCH, OP_ZERO, OP_LINK, OP_RENAME,
	OP_UNLINK, OP_FSYNC, OP_FDATASYNC, OP_LAYOUT, OP_SYNCWRITE, OP_NKINDS
};

static const char *const op_names[] = {"create", "write", "truncate", "falloc", "punch", "zero",
				       "link", "rename", "unlink", "fsync", "fdatasync", "layout",
				       "syncwrite"};

/* What an operation did, as the model replays it. */
struct op {
	uint8_t kind;
	bool forced; /* acknowledged by a force of its own sequence */
	int file;    /* file index in the thread */
	int name, name2;
	uint64_t off, len;
	uint32_t gen;
	int err;
};

struct file {
	uint64_t id;
	uint64_t ino;
	uint32_t igen;
	uint32_t gen; /* last write generation */
	uint64_t sync_off, sync_len; /* the last synchronous write's range (len 0: none) */
	uint64_t unw_off, unw_len;   /* the last range fallocated or zeroed */
};

struct name {
	char s[16];
};

struct thread {
	unsigned t;
	struct op ops[MAX_OPS];
	unsigned nops;
	int unw_name; /* 1 + the name the last fallocate or zeroing went through; 0: none */
	struct file files[MAX_FILES];
	unsigned nfiles;
	struct name names[MAX_NAMES];
	unsigned nnames;
	int name_file[MAX_NAMES]; /* current binding while running: file or -1 */
	uint64_t dir_ino;
};

struct world {
	struct fs *fs;
	struct dev *cd;
	struct thread th[MAX_THREADS];
	unsigned nthreads;
	unsigned nops;
	uint64_t seed;
};

/* marks: kind << 56 | thread << 48 | op index */
#define MARK_START 1ull
#define MARK_ACK   2ull
static uint64_t mark(uint64_t kind, unsigned t, unsigned i)
{
	return kind << 56 | (uint64_t)t << 48 | i;
}

static uint64_t word_of(uint64_t id, uint32_t gen, uint64_t widx)
{
	return id << 40 | (uint64_t)(gen & 0xffff) << 24 | (widx & 0xffffff);
}

static void fill(uint8_t *buf, uint64_t id, uint32_t gen, uint64_t off, uint64_t len)
{
	for (uint64_t w = 0; w < len / 8; w++) {
		uint64_t v = word_of(id, gen, off / 8 + w);
		memcpy(buf + w * 8, &v, 8);
	}
}

/* ---- running ---- */

static int lookup_dir(struct fs *fs, struct thread *th, struct fs_inode **dp)
{
	return fs_iget(fs, th->dir_ino, 0, dp);
}

static int open_name(struct fs *fs, struct thread *th, int name, struct fs_inode **ip)
{
	struct fs_inode *dp;
	int err = lookup_dir(fs, th, &dp);
	if (err)
		return err;
	err = fs_lookup(dp, th->names[name].s, strlen(th->names[name].s), ip);
	fs_iput(dp);
	return err;
}

static int new_name(struct thread *th)
{
	if (th->nnames == MAX_NAMES)
		return -1;
	int n = (int)th->nnames++;
	snprintf(th->names[n].s, sizeof(th->names[n].s), "n%d", n);
	th->name_file[n] = -1;
	return n;
}

/* A name bound to some file, at random, or -1. */
static int some_name(struct thread *th, struct rng *r)
{
	int cand[MAX_NAMES], n = 0;
	for (unsigned i = 0; i < th->nnames; i++)
		if (th->name_file[i] >= 0)
			cand[n++] = (int)i;
	return n ? cand[rng_below(r, (uint64_t)n)] : -1;
}

static int do_layout(struct world *w, struct fs_inode *ip, struct op *o, uint64_t id,
		     uint64_t size)
{
	struct fs_map maps[16];
	unsigned n;
	int err = fs_map_blocks(ip, o->off, o->len, true, maps, 16, &n);
	if (err)
		return err;
	uint8_t *buf = xmalloc_aligned(4096, o->len);
	fill(buf, id, o->gen, o->off, o->len);
	for (unsigned i = 0; i < n && !err; i++)
		err = dev_write(w->cd, buf + (maps[i].off - o->off), maps[i].len, maps[i].addr, 0);
	free(buf);
	if (err)
		return err;
	struct fs_range rg = {o->off, o->len};
	return fs_commit_blocks(ip, &rg, 1, MAX(size, o->off + o->len), NULL, NULL);
}

static void *run_thread(void *arg)
{
	struct world *w = ((void **)arg)[0];
	struct thread *th = ((void **)arg)[1];
	struct rng r;
	rng_seed(&r, w->seed * 131 + th->t);
	for (unsigned i = 0; i < w->nops; i++) {
		struct op *o = &th->ops[th->nops];
		memset(o, 0, sizeof(*o));
		o->file = o->name = o->name2 = -1;
		unsigned k = (unsigned)rng_below(&r, 100);
		int nm = some_name(th, &r);
		o->kind = nm < 0 || k < 10 ? OP_CREATE
			: k < 27 ? OP_WRITE
			: k < 35 ? OP_SYNCWRITE
			: k < 40 ? OP_TRUNCATE
			: k < 44 ? OP_FALLOC
			: k < 48 ? OP_PUNCH
			: k < 51 ? OP_ZERO
			: k < 55 ? OP_LINK
			: k < 61 ? OP_RENAME
			: k < 66 ? OP_UNLINK
			: k < 76 ? OP_FSYNC
			: k < 84 ? OP_FDATASYNC
			: OP_LAYOUT;
		if (o->kind == OP_CREATE && (th->nfiles == MAX_FILES || th->nnames == MAX_NAMES))
			continue;
		/* writes often follow a fallocate or zeroing of the file
		 * (whole blocks into its unwritten blocks, below) */
		if (o->kind == OP_WRITE && th->unw_name && th->name_file[th->unw_name - 1] >= 0 &&
		    rng_chance(&r, 60))
			nm = th->unw_name - 1;
		o->name = o->kind == OP_CREATE ? new_name(th) : nm;
		o->file = o->kind == OP_CREATE ? (int)th->nfiles : th->name_file[nm];
		if ((o->kind == OP_LINK || o->kind == OP_RENAME) && th->nnames == MAX_NAMES)
			continue;
		o->forced = (o->kind == OP_CREATE || o->kind == OP_LINK || o->kind == OP_RENAME ||
			     o->kind == OP_UNLINK || o->kind == OP_TRUNCATE) && rng_chance(&r, 40);
		unsigned idx = th->nops++;
		crashdev_mark(w->cd, mark(MARK_START, th->t, idx));

		struct fs_inode *dp = NULL, *ip = NULL;
		struct fs_result res = {0};
		int err = lookup_dir(w->fs, th, &dp);
		struct file *f = &th->files[o->file];
		struct fs_attr at;
		if (!err && o->kind != OP_CREATE)
			err = open_name(w->fs, th, o->name, &ip);
		if (!err && ip)
			err = fs_getattr(ip, &at);
		switch (o->kind) {
		case OP_CREATE:
			if (!err) {
				struct fs_create_args ca = {.mode = S_IFREG | 0644};
				const char *s = th->names[o->name].s;
				err = fs_create(dp, s, strlen(s), &ca, &ip, &res);
			}
			if (!err) {
				fs_getattr(ip, &at);
				f->id = (uint64_t)th->t << 12 | (uint64_t)(o->file + 1);
				f->ino = at.ino;
				f->igen = at.gen;
				th->nfiles++;
				th->name_file[o->name] = o->file;
			}
			break;
		case OP_WRITE: {
			uint64_t off = ALIGN_DOWN(rng_below(&r, MAX_FILE - 8), 8ull);
			uint64_t span = MIN(65536ull, MAX_FILE - off);
			uint64_t len = ALIGN_UP(1 + rng_below(&r, span), 8ull);
			uint64_t unw_lo = ALIGN_UP(f->unw_off, 4096ull);
			uint64_t unw_hi = ALIGN_DOWN(MIN(f->unw_off + f->unw_len, at.size), 4096ull);
			if (rng_chance(&r, 30) && at.size + 4096 <= MAX_FILE)
				off = at.size, len = MIN(len, MAX_FILE - off); /* extend */
			else if (f->sync_len && rng_chance(&r, 50)) {
				/* over the last synchronous write: a logged block
				 * overwritten in place */
				off = f->sync_off + ALIGN_DOWN(rng_below(&r, f->sync_len), 8ull);
				len = ALIGN_UP(1 + rng_below(&r, f->sync_off + f->sync_len - off), 8ull);
			} else if (unw_hi > unw_lo && rng_chance(&r, 80)) {
				/* whole blocks inside the file where the last
				 * fallocate or zeroing went: into unwritten blocks
				 * the data goes out under the shared I/O lock
				 * (src/fs/file.c, write_unwritten) */
				off = unw_lo + ALIGN_DOWN(rng_below(&r, unw_hi - unw_lo), 4096ull);
				len = MIN(ALIGN_UP(MIN(len, 16384ull), 4096ull), unw_hi - off);
			}
			len = MIN(len, MAX_FILE - off);
			o->off = off;
			o->len = len;
			o->gen = ++f->gen;
			uint8_t *buf = xmalloc(len);
			fill(buf, f->id, o->gen, off, len);
			err = fs_write(ip, off, buf, len, &res);
			free(buf);
			break;
		}
		case OP_SYNCWRITE: {
			/* as NFS FILE_SYNC or DATA_SYNC: force to the sync
			 * sequence, flush unless the data went into the log or a
			 * flush covered it */
			uint64_t off = ALIGN_DOWN(rng_below(&r, MAX_FILE - 8), 8ull);
			uint64_t len = ALIGN_UP(1 + rng_below(&r, MIN(16384ull, MAX_FILE - off)), 8ull);
			if (rng_chance(&r, 30) && at.size + 4096 <= MAX_FILE)
				off = at.size; /* extend */
			len = MIN(len, MAX_FILE - off);
			o->off = off;
			o->len = len;
			o->gen = ++f->gen;
			uint8_t *buf = xmalloc(len);
			fill(buf, f->id, o->gen, off, len);
			bool logged = false, flushed = false;
			err = fs_write_sync(ip, off, buf, len, &res, &logged);
			free(buf);
			uint64_t seq = err ? 0 : fs_sync_seq(ip, rng_chance(&r, 50));
			if (seq)
				err = fs_force(w->fs, seq, &flushed);
			if (!err && !logged && !flushed)
				err = fs_flush_data(w->fs);
			f->sync_off = off;
			f->sync_len = len;
			res.csn = 0; /* forced here */
			break;
		}
		case OP_TRUNCATE:
			o->off = ALIGN_DOWN(rng_below(&r, MAX_FILE), 8ull);
			if (f->sync_len && rng_chance(&r, 50)) /* into a logged block */
				o->off = f->sync_off + ALIGN_DOWN(rng_below(&r, f->sync_len), 8ull);
			err = fs_setattr(ip,
					 &(struct fs_setattr){.mask = FS_SET_SIZE, .size = o->off},
					 &res);
			break;
		case OP_FALLOC:
		case OP_PUNCH:
		case OP_ZERO:
			o->off = ALIGN_DOWN(rng_below(&r, MAX_FILE - 8), 8ull);
			uint64_t span = MIN(131072ull, MAX_FILE - o->off);
			o->len = ALIGN_UP(1 + rng_below(&r, span), 8ull);
			o->len = MIN(o->len, MAX_FILE - o->off);
			err = fs_fallocate(
				ip,
				o->kind == OP_FALLOC  ? FS_FALLOC_ALLOC | FS_FALLOC_KEEP_SIZE
				: o->kind == OP_PUNCH ? FS_FALLOC_PUNCH
						      : FS_FALLOC_ZERO | FS_FALLOC_KEEP_SIZE,
				o->off, o->len, &res);
			if (!err && o->kind != OP_PUNCH) {
				f->unw_off = o->off, f->unw_len = o->len;
				th->unw_name = o->name + 1;
			}
			break;
		case OP_LINK:
		case OP_RENAME: {
			o->name2 = new_name(th);
			const char *a = th->names[o->name].s, *b = th->names[o->name2].s;
			err = o->kind == OP_LINK
				      ? fs_link(ip, dp, b, strlen(b), &res)
				      : fs_rename(dp, a, strlen(a), dp, b, strlen(b), &res);
			if (!err) {
				th->name_file[o->name2] = o->file;
				if (o->kind == OP_RENAME)
					th->name_file[o->name] = -1;
			}
			break;
		}
		case OP_UNLINK: {
			const char *a = th->names[o->name].s;
			err = fs_unlink(dp, a, strlen(a), &res);
			if (!err)
				th->name_file[o->name] = -1;
			break;
		}
		case OP_FSYNC:
		case OP_FDATASYNC:
			err = fs_fsync(ip, o->kind == OP_FDATASYNC, NULL);
			break;
		case OP_LAYOUT:
			o->off = ALIGN_DOWN(rng_below(&r, MAX_FILE - 4096), 4096ull);
			if (f->sync_len && rng_chance(&r, 50)) /* a logged block, directly */
				o->off = ALIGN_DOWN(f->sync_off, 4096ull);
			uint64_t want = 4096 * (1 + rng_below(&r, 8));
			o->len = MIN(want, MAX_FILE - o->off);
			o->gen = ++f->gen;
			err = do_layout(w, ip, o, f->id, at.size);
			break;
		}
		if (!err && o->forced && res.csn)
			err = fs_force(w->fs, res.csn, NULL);
		o->err = err;
		bool acked = !err && (o->forced || o->kind == OP_FSYNC || o->kind == OP_FDATASYNC ||
				      o->kind == OP_SYNCWRITE);
		if (acked)
			crashdev_mark(w->cd, mark(MARK_ACK, th->t, idx));
		if (ip)
			fs_iput(ip);
		if (dp)
			fs_iput(dp);
		if (err && err != -ENOSPC) {
			fprintf(stderr, "thread %u op %u (%s): %s\n", th->t, idx, op_names[o->kind],
				strerror(-err));
			break;
		}
	}
	return NULL;
}

/* ---- the model ---- */

struct fstate {
	uint64_t size;
	uint32_t *gen; /* per word: 0 zero, else the generation */
};

/* Apply thread ops [0, upto) that touch file fi to s. */
static void replay_file(const struct thread *th, int fi, unsigned upto, struct fstate *s)
{
	s->size = 0;
	memset(s->gen, 0, WORDS * sizeof(uint32_t));
	for (unsigned i = 0; i < upto; i++) {
		const struct op *o = &th->ops[i];
		if (o->file != fi || o->err)
			continue;
		switch (o->kind) {
		case OP_WRITE:
		case OP_SYNCWRITE:
		case OP_LAYOUT:
			for (uint64_t w = o->off / 8; w < (o->off + o->len) / 8; w++)
				s->gen[w] = o->gen;
			s->size = MAX(s->size, o->off + o->len);
			break;
		case OP_TRUNCATE:
			for (uint64_t w = o->off / 8; w < WORDS; w++)
				s->gen[w] = 0;
			s->size = o->off;
			break;
		case OP_PUNCH:
		case OP_ZERO:
			for (uint64_t w = o->off / 8; w < (o->off + o->len) / 8; w++)
				s->gen[w] = 0;
			break;
		default:
			break;
		}
	}
}

static bool shrinks(uint8_t kind)
{
	return kind == OP_TRUNCATE || kind == OP_PUNCH || kind == OP_ZERO;
}

struct verify_ctx {
	const struct world *w;
	unsigned started[MAX_THREADS]; /* ops started before the cut */
	bool *acked[MAX_THREADS];      /* per op: acknowledgement returned before the cut */
	unsigned violations;
	const char *what;
};

static void violation(struct verify_ctx *v, const char *fmt, ...) __printf(2, 3);
static void violation(struct verify_ctx *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", v->what);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	v->violations++;
}

/* The file index of an inode (number and generation), or -1. */
static int file_of(const struct thread *th, uint64_t ino, uint32_t gen)
{
	for (unsigned i = 0; i < th->nfiles; i++)
		if (th->files[i].ino == ino && th->files[i].igen == gen)
			return (int)i;
	return -1;
}

static void verify_file(struct verify_ctx *v, const struct thread *th, int fi, struct fs_inode *ip,
			struct fstate *acked_state, uint8_t *buf)
{
	const struct file *f = &th->files[fi];
	struct fs_attr at;
	fs_getattr(ip, &at);
	size_t n;
	bool eof;
	uint64_t sz = MIN(at.size, (uint64_t)MAX_FILE);
	if (at.size > MAX_FILE)
		violation(v, "file %llx has size %llu, more than was ever written",
			  (unsigned long long)f->id, (unsigned long long)at.size);
	if (fs_read(ip, 0, buf, sz, &n, &eof) || n != sz) {
		violation(v, "file %llx cannot be read", (unsigned long long)f->id);
		return;
	}
	/* 2: only zeros and its own words */
	for (uint64_t wi = 0; wi < sz / 8; wi++) {
		uint64_t word;
		memcpy(&word, buf + wi * 8, 8);
		if (word && (word >> 40 != f->id || (word & 0xffffff) != (wi & 0xffffff) ||
			     ((word >> 24) & 0xffff) > (f->gen & 0xffff))) {
			violation(v, "file %llx word %llu holds 0x%016llx: not its own data",
				  (unsigned long long)f->id, (unsigned long long)wi,
				  (unsigned long long)word);
			return;
		}
	}
	/* 3: every acknowledged synchronous write, unless something that may
	 * shrink or zero the file started after it */
	for (unsigned i = 0; i < v->started[th->t]; i++) {
		const struct op *o = &th->ops[i];
		if (o->file != fi || o->err || o->kind != OP_SYNCWRITE || !v->acked[th->t][i])
			continue;
		bool shrunk = false;
		for (unsigned j = i + 1; j < v->started[th->t] && !shrunk; j++)
			shrunk = th->ops[j].file == fi && shrinks(th->ops[j].kind);
		if (shrunk)
			continue;
		if (at.size < o->off + o->len) {
			violation(v, "file %llx has size %llu, its acknowledged synchronous write "
				     "reached %llu",
				  (unsigned long long)f->id, (unsigned long long)at.size,
				  (unsigned long long)(o->off + o->len));
			return;
		}
		for (uint64_t wi = o->off / 8; wi < (o->off + o->len) / 8 && wi < sz / 8; wi++) {
			uint64_t word;
			memcpy(&word, buf + wi * 8, 8);
			uint32_t have = word ? (uint32_t)((word >> 24) & 0xffff) : 0;
			if (have < (o->gen & 0xffff)) {
				violation(v, "file %llx word %llu: generation %u, its acknowledged "
					     "synchronous write (op %u) wrote %u",
					  (unsigned long long)f->id, (unsigned long long)wi, have, i,
					  o->gen & 0xffff);
				return;
			}
		}
	}
	/* 3: at least the last acknowledged sync of this file */
	unsigned ack = 0;
	for (unsigned i = 0; i < v->started[th->t]; i++) {
		const struct op *o = &th->ops[i];
		if (o->file == fi && !o->err && (o->kind == OP_FSYNC || o->kind == OP_FDATASYNC) &&
		    v->acked[th->t][i])
			ack = i;
	}
	if (!ack)
		return;
	for (unsigned i = ack; i < v->started[th->t]; i++)
		if (th->ops[i].file == fi && shrinks(th->ops[i].kind))
			return; /* may have shrunk or zeroed since: nothing more to claim */
	replay_file(th, fi, ack, acked_state);
	if (at.size < acked_state->size)
		violation(v, "file %llx has size %llu, its acknowledged fsync saw %llu",
			  (unsigned long long)f->id, (unsigned long long)at.size,
			  (unsigned long long)acked_state->size);
	for (uint64_t wi = 0; wi < acked_state->size / 8 && wi < sz / 8; wi++) {
		uint64_t word;
		memcpy(&word, buf + wi * 8, 8);
		uint32_t want = acked_state->gen[wi] & 0xffff;
		uint32_t have = word ? (uint32_t)((word >> 24) & 0xffff) : 0;
		if (want && have < want) {
			violation(v, "file %llx word %llu: generation %u, its acknowledged fsync "
				     "saw %u",
				  (unsigned long long)f->id, (unsigned long long)wi, have, want);
			return;
		}
	}
}

static void verify_world(struct verify_ctx *v, struct fs *fs)
{
	const struct world *w = v->w;
	struct fstate st = {.gen = xmalloc(WORDS * sizeof(uint32_t))};
	uint8_t *buf = xmalloc(MAX_FILE);
	for (unsigned t = 0; t < w->nthreads; t++) {
		const struct thread *th = &w->th[t];
		struct fs_inode *dp;
		if (fs_iget(fs, th->dir_ino, 0, &dp)) {
			violation(v, "thread %u's directory is gone", t);
			continue;
		}
		/* every name: a file of this thread, and its content */
		for (unsigned n = 0; n < th->nnames; n++) {
			struct fs_inode *ip;
			int err = fs_lookup(dp, th->names[n].s, strlen(th->names[n].s), &ip);
			int fi = -1;
			if (!err) {
				struct fs_attr at;
				fs_getattr(ip, &at);
				fi = file_of(th, at.ino, at.gen);
				if (fi < 0)
					violation(v, "thread %u name %s names an unknown inode %llu", t,
						  th->names[n].s, (unsigned long long)at.ino);
				else
					verify_file(v, th, fi, ip, &st, buf);
				fs_iput(ip);
			} else if (err != -ENOENT) {
				violation(v, "lookup of %s failed: %s", th->names[n].s, strerror(-err));
			}
			/* the binding as of the last acknowledged operation on this
			 * name, if nothing touched the name since */
			int last = -1;
			bool acked_last = false;
			for (unsigned i = 0; i < v->started[t]; i++) {
				const struct op *o = &th->ops[i];
				if (o->err || (o->name != (int)n && o->name2 != (int)n))
					continue;
				if (o->kind == OP_WRITE || o->kind == OP_TRUNCATE || o->kind == OP_FALLOC ||
				    o->kind == OP_PUNCH || o->kind == OP_ZERO || o->kind == OP_LAYOUT ||
				    o->kind == OP_SYNCWRITE)
					continue;
				bool binding_op = o->kind == OP_CREATE || o->kind == OP_LINK ||
						  o->kind == OP_RENAME || o->kind == OP_UNLINK;
				if (binding_op) {
					last = (int)i;
					acked_last = v->acked[t][i];
				} else if (last >= 0 && o->name == (int)n && v->acked[t][i] &&
					   o->kind == OP_FSYNC) {
					acked_last = true; /* fsync of the file covers its names */
				}
			}
			if (last < 0 || !acked_last)
				continue;
			const struct op *o = &th->ops[last];
			bool bound = (o->kind == OP_CREATE || o->kind == OP_LINK ||
				      (o->kind == OP_RENAME && o->name2 == (int)n));
			if (bound && fi != o->file)
				violation(v, "thread %u: acknowledged name %s does not name file %d", t,
					  th->names[n].s, o->file);
			if (!bound && !err)
				violation(v, "thread %u: name %s was removed (acknowledged) but exists",
					  t, th->names[n].s);
		}
		fs_iput(dp);
	}
	free(st.gen);
	free(buf);
}

/* ---- rounds ---- */

struct totals {
	uint64_t points, violations;
	uint64_t eof_trims; /* preallocation trims recorded */
	uint64_t logged, logged_overwrites; /* logged writes, and writes over them */
	uint64_t shared_conversions; /* writes into unwritten blocks under the shared lock */
};

static bool verbose;

static void run_round(uint64_t seed, uint64_t budget, struct totals *tot)
{
	struct rng r;
	rng_seed(&r, seed);
	struct world *w = xcalloc(1, sizeof(*w));
	w->seed = seed;
	w->nthreads = 1 + (unsigned)rng_below(&r, MAX_THREADS);
	w->nops = 120 + (unsigned)rng_below(&r, 200);

	struct dev *inner, *cd;
	if (dev_mem_create(IMG_SIZE, NULL, &inner) ||
	    fs_mkfs(&(struct fs_mkfs_opts){.ddev = inner, .log_size = 1 << 20}))
		abort();
	/* per-thread directories, made durable before recording */
	struct fs *fs;
	if (fs_mount(&(struct fs_mount_opts){.ddev = inner}, &fs))
		abort();
	struct fs_inode *root;
	fs_root(fs, &root);
	for (unsigned t = 0; t < w->nthreads; t++) {
		char name[16];
		snprintf(name, sizeof(name), "t%u", t);
		struct fs_inode *dp;
		struct fs_create_args da = {.mode = S_IFDIR | 0755};
		if (fs_create(root, name, strlen(name), &da, &dp, NULL))
			abort();
		w->th[t].t = t;
		w->th[t].dir_ino = fs_ino(dp);
		fs_iput(dp);
	}
	fs_iput(root);
	if (fs_unmount(fs))
		abort();
	uint8_t *durable = xmalloc(IMG_SIZE);
	dev_mem_copy_out(inner, durable);

	/* appended files give their preallocation back 2 ms after their last
	 * append: the trimmer's transactions race the workload's */
	if (crashdev_create(inner, CRASHDEV_RECORD, &cd) ||
	    fs_mount(&(struct fs_mount_opts){.ddev = cd, .push_interval_ns = 50000000,
					     .eof_idle_ns = 2000000},
		     &fs))
		abort();
	w->fs = fs;
	w->cd = cd;
	pthread_t tid[MAX_THREADS];
	void *args[MAX_THREADS][2];
	for (unsigned t = 0; t < w->nthreads; t++) {
		args[t][0] = w;
		args[t][1] = &w->th[t];
		pthread_create(&tid[t], NULL, run_thread, args[t]);
	}
	for (unsigned t = 0; t < w->nthreads; t++)
		pthread_join(tid[t], NULL);
	struct stat_table stats = {0};
	struct stat_sink sink = stat_sink_table(&stats);
	fs_stats(fs, &sink);
	tot->eof_trims += stat_table_get(&stats, "fs.eof_trims");
	tot->logged += stat_table_get(&stats, "fs.logged_writes");
	tot->logged_overwrites += stat_table_get(&stats, "fs.logged_overwrites");
	tot->shared_conversions += stat_table_get(&stats, "fs.shared_conversions");
	fs_shutdown(fs, "end of recorded workload");
	fs_unmount(fs);

	size_t nev = crashdev_nevents(cd);
	const struct crash_event *ev = crashdev_events(cd);
	size_t npts;
	size_t *pts = crash_points_pick(ev, nev, 300, budget, &r, &npts);

	struct verify_ctx v = {.w = w};
	for (unsigned t = 0; t < w->nthreads; t++)
		v.acked[t] = xcalloc(MAX_OPS, sizeof(bool));
	struct crash_replay rp = {.ev = ev};
	size_t scan = 0;
	for (size_t k = 0; k < npts; k++) {
		size_t pt = pts[k];
		size_t from = crash_replay_to(&rp, pt, durable);
		for (; scan < pt; scan++) {
			if (ev[scan].type != CRASH_EV_MARK || ev[scan].tag == UINT64_MAX)
				continue;
			uint64_t tag = ev[scan].tag;
			unsigned t = (unsigned)((tag >> 48) & 0xff), i = (unsigned)(tag & 0xffffffff);
			if (tag >> 56 == MARK_START)
				v.started[t] = i + 1;
			else if (tag >> 56 == MARK_ACK)
				v.acked[t][i] = true;
		}
		struct dev *img;
		if (dev_mem_create(IMG_SIZE, durable, &img))
			abort();
		struct crash_cut_stats st = {0};
		crash_apply_cut(ev, from, pt, img, 512, seed * 7919 + pt, &st);
		char what[80];
		snprintf(what, sizeof(what), "round %llu point %zu/%zu", (unsigned long long)seed, pt,
			 nev);
		v.what = what;
		unsigned before = v.violations;
		/* 1: recovered, and check clean */
		int err = fs_mount(&(struct fs_mount_opts){.ddev = img, .readonly_check = true}, &fs);
		if (err) {
			violation(&v, "recovery failed: %s", strerror(-err));
		} else {
			uint64_t problems = 0;
			fs_check(fs, stderr, &problems);
			if (problems)
				violation(&v, "check found %llu problems", (unsigned long long)problems);
			fs_shutdown(fs, "checked");
			fs_unmount(fs);
			/* 2 and 3 on the mounted filesystem (orphans finished) */
			err = fs_mount(&(struct fs_mount_opts){.ddev = img}, &fs);
			if (err) {
				violation(&v, "mount after recovery failed: %s", strerror(-err));
			} else {
				verify_world(&v, fs);
				if (fs_unmount(fs))
					violation(&v, "unmount failed");
			}
		}
		if (verbose)
			printf("%s: %s\n", what, v.violations == before ? "ok" : "VIOLATION");
		tot->points++;
		dev_close(img);
	}
	tot->violations += v.violations;
	for (unsigned t = 0; t < w->nthreads; t++)
		free(v.acked[t]);
	free(pts);
	free(durable);
	dev_close(cd);
	dev_close(inner);
	free(w);
}

int main(int argc, char **argv)
{
	struct crash_opts o = {.points = 5000};
	if (crash_opts_parse(argc, argv, &o))
		return 2;
	verbose = o.verbose;
	uint64_t points = o.points, seed = o.seed;
	msg_set_level(MSG_ERR);
	msg_set_prog("fs-crash");
	struct totals tot = {0};
	for (uint64_t round = 0; tot.points < points; round++)
		run_round(seed * 1000 + round, MIN(points - tot.points, 600), &tot);
	printf("preallocation trims recorded: %llu\n", (unsigned long long)tot.eof_trims);
	printf("logged synchronous writes: %llu, later writes that cancelled logged blocks: %llu\n",
	       (unsigned long long)tot.logged, (unsigned long long)tot.logged_overwrites);
	printf("whole-block writes converted under the shared I/O lock: %llu\n",
	       (unsigned long long)tot.shared_conversions);
	printf("crash points: %llu, violations: %llu\n", (unsigned long long)tot.points,
	       (unsigned long long)tot.violations);
	return tot.violations ? 1 : 0;
}
