/*
 * work.c - one nfs-load client: a seeded mix of operations, a model of
 * what the server promised, and checks of the server against it.
 *
 * Design note.
 *
 * Names. Client N works in "<dir>/cN" (its own directory: files f0..,
 * directories d0..) and in "<dir>/shared" (names "sN-K", its own within a
 * directory every client changes at once). "<dir>/probe-N" is its probe
 * file. At start it empties its own names, so the model starts empty.
 *
 * The model. A slot is one name: absent, a file (an object) or a
 * directory. An object is a file with its handle, fileid, link count,
 * mode, size bounds and content in 256-byte units (every offset, length
 * and size the workload uses is a multiple of 256). A unit holds the id
 * of the write that last wrote it (its bytes are a pattern of the client,
 * that id and the offset; id 0 is zeros) and a state:
 *
 *   CLEAN    the server has it durably: a stable WRITE (DATA_SYNC,
 *            FILE_SYNC), an UNSTABLE one followed by a COMMIT with the same
 *            verifier, a hole, or a truncation (SETATTR is stable on a
 *            sync export, docs/design.md rule 7);
 *   DIRTY    acknowledged UNSTABLE under the object's verifier: the server
 *            has it until it restarts;
 *   RESEND   was DIRTY when the write verifier changed (the server
 *            restarted): it may be lost, and is sent again (UNSTABLE, then
 *            COMMIT) before the workload goes on, as real clients do;
 *   UNKNOWN  a write that failed (NOSPC) or whose outcome was lost: any
 *            content, until written again or truncated away.
 *
 *   write OK:  -> CLEAN (stable) or DIRTY (unstable); failed: -> UNKNOWN
 *   COMMIT OK with the object's verifier: DIRTY -> CLEAN
 *   verifier changed (any WRITE/COMMIT reply, or the probe after a
 *   reconnect): every DIRTY -> RESEND; resent: RESEND -> DIRTY
 *   SETATTR size S OK: units past S -> CLEAN zeros
 *
 * Sizes. cur_lo..cur_hi bound what GETATTR may say now (cur_hi passes
 * cur_lo only after writes that failed); dur_lo is what a restart leaves
 * at least: raised by stable writes, set to cur_lo by COMMIT, set by
 * SETATTR; at a restart cur_lo drops to dur_lo.
 *
 * Metadata. The workload runs on a sync export, so CREATE, MKDIR, REMOVE,
 * RMDIR, RENAME, LINK and SETATTR are durable when answered (rule 7): a
 * restart must keep every answered one, exactly.
 *
 * An operation in doubt. Before a request goes out, the names and the
 * object it touches are marked unsure; the checks skip them. If the
 * connection fails, the protocol reconnects and calls recover(), which
 * probes the write verifier (a WRITE of 0 bytes to the probe file) and
 * checks every name and object that is not unsure against the model -
 * after a restart as broken promises ("lost"), otherwise as mismatches.
 * Then the same request goes out again. The answer to a request sent more
 * than once may be that of a second run of an operation the server had
 * already done: REMOVE/RMDIR/RENAME NOENT, MKDIR/LINK/GUARDED CREATE
 * EXIST; those count as done. An EXCLUSIVE CREATE sent again must
 * succeed (the server matches its verifier). Any other answer that the
 * model does not allow is a mismatch.
 *
 * Checks: every READ is compared with the model; GETATTR's type, fileid,
 * link count, mode and size; LOOKUP of every name; READDIR/READDIRPLUS
 * of both directories (each of the client's names exactly when the model
 * has it; nothing else in its own directory). Every mismatch is printed
 * (up to a limit) and counted; the run fails on any.
 */
#include "work.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/rand.h"
#include "base/time.h"

#define UNIT	   256u
#define MAX_NLINK  4
#define MAX_DELAYS 200
#define DELAY_NS   (50 * NSEC_PER_MSEC)

const char *const op_names[OP_NKINDS] = {
	"create", "write_unstable", "write_datasync", "write_filesync", "commit",
	"read",	  "remove",	    "rename",	      "link",		"mkdir",
	"rmdir",  "setattr",	    "readdir",	      "getattr",	"lookup"};

enum ust { U_CLEAN, U_DIRTY, U_RESEND, U_UNKNOWN };
enum sst { S_ABSENT, S_FILE, S_DIR };

struct mobj {
	unsigned id;
	struct load_fh fh;
	uint64_t fileid;
	unsigned nlink;
	uint32_t mode;
	bool mode_known;
	uint64_t cur_lo, cur_hi, dur_lo;
	uint32_t *val;
	uint8_t *st;
	unsigned ndirty, nresend;
	uint8_t verf[LOAD_VERF_LEN];
	bool unsure, tainted;
};

struct mslot {
	char name[32];
	unsigned dir; /* 0: own directory, 1: shared */
	enum sst st;
	struct mobj *obj;
	struct load_fh fh; /* S_DIR */
	uint64_t fileid;   /* S_DIR */
	bool unsure, tainted;
};

struct worker {
	struct load_client c;
	const struct work_opts *o;
	const struct load_proto *p;
	struct rng rng;
	uint64_t pat_seed;
	struct load_fh root, base, own, shared, probe;
	struct mslot *slots;
	unsigned nslots, nfile_slots; /* own files, then dirs, then shared */
	struct mobj **objs;
	unsigned nobjs;
	unsigned nunits;
	uint32_t next_wid;
	unsigned next_obj;
	uint64_t excl_seq;
	uint8_t verf[LOAD_VERF_LEN];
	bool verf_known;
	bool need_resend;
	uint8_t *wbuf, *rbuf;
	char prefix[16];
	pthread_mutex_t lock; /* ival, ival_ops */
	struct hist ival;
	uint64_t ival_ops;
	struct work_stats st;
};

static _Atomic unsigned report_left = 50;

void work_set_report_limit(unsigned n)
{
	atomic_store(&report_left, n);
}

/* A reply that contradicts the model: lost (a promise broken by a
 * restart) or a mismatch. */
static void __attribute__((format(printf, 3, 4)))
report(struct worker *w, bool lost, const char *fmt, ...)
{
	if (lost)
		w->st.lost++;
	else
		w->st.mismatches++;
	unsigned left = atomic_load(&report_left);
	while (left && !atomic_compare_exchange_weak(&report_left, &left, left - 1))
		;
	if (!left)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "nfs-load: client %u: %s: %s\n", w->c.lc_id, lost ? "LOST" : "MISMATCH",
		buf);
}

/* ---- content ---- */

static uint64_t word(const struct worker *w, uint32_t wid, uint64_t off)
{
	uint64_t h = w->pat_seed ^ ((uint64_t)wid * 0x9e3779b97f4a7c15ull) ^
		     (off * 0xc2b2ae3d27d4eb4full);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return h;
}

static void fill_unit(const struct worker *w, uint8_t *p, uint32_t wid, uint64_t unit)
{
	if (!wid) {
		memset(p, 0, UNIT);
		return;
	}
	for (unsigned i = 0; i < UNIT; i += 8) {
		uint64_t v = word(w, wid, unit * UNIT + i);
		memcpy(p + i, &v, 8);
	}
}

static bool unit_is(const struct worker *w, const uint8_t *p, uint32_t wid, uint64_t unit)
{
	uint8_t want[UNIT];
	fill_unit(w, want, wid, unit);
	return memcmp(p, want, UNIT) == 0;
}

/* ---- objects and slots ---- */

static struct mobj *obj_new(struct worker *w, const struct load_fh *fh, uint64_t fileid)
{
	struct mobj *o = xcalloc(1, sizeof(*o));
	o->id = w->next_obj++;
	o->fh = *fh;
	o->fileid = fileid;
	o->val = xcalloc(w->nunits, sizeof(*o->val));
	o->st = xcalloc(w->nunits, 1);
	w->objs = xrealloc(w->objs, (w->nobjs + 1) * sizeof(*w->objs));
	w->objs[w->nobjs++] = o;
	return o;
}

static void obj_put(struct worker *w, struct mobj *o)
{
	if (--o->nlink > 0)
		return;
	for (unsigned i = 0; i < w->nobjs; i++) {
		if (w->objs[i] == o) {
			w->objs[i] = w->objs[--w->nobjs];
			break;
		}
	}
	free(o->val);
	free(o->st);
	free(o);
}

static void set_unit(struct mobj *o, uint64_t u, uint32_t wid, enum ust s)
{
	if (o->st[u] == U_DIRTY)
		o->ndirty--;
	else if (o->st[u] == U_RESEND)
		o->nresend--;
	o->val[u] = wid;
	o->st[u] = (uint8_t)s;
	if (s == U_DIRTY)
		o->ndirty++;
	else if (s == U_RESEND)
		o->nresend++;
}

static const struct load_fh *slot_dir(struct worker *w, const struct mslot *s)
{
	return s->dir ? &w->shared : &w->own;
}

static const char *dname(const struct mslot *s)
{
	return s->dir ? "shared/" : "";
}

static bool slot_usable(const struct mslot *s)
{
	return !s->unsure && !s->tainted && (s->st != S_FILE || !s->obj->tainted);
}

/* A random usable slot in [from, to) with state st, or NULL. */
static struct mslot *pick(struct worker *w, unsigned from, unsigned to, enum sst st)
{
	if (to <= from)
		return NULL;
	unsigned n = to - from, start = (unsigned)rng_below(&w->rng, n);
	for (unsigned i = 0; i < n; i++) {
		struct mslot *s = &w->slots[from + (start + i) % n];
		if (s->st == st && slot_usable(s))
			return s;
	}
	return NULL;
}

/* Own file names and shared names, either. */
static struct mslot *pick_file_slot(struct worker *w, enum sst st)
{
	unsigned own = w->o->files, shared0 = w->o->files + w->o->dirs;
	if (w->o->shared && rng_chance(&w->rng, 20)) {
		struct mslot *s = pick(w, shared0, w->nslots, st);
		if (s)
			return s;
	}
	struct mslot *s = pick(w, 0, own, st);
	return s ? s : pick(w, shared0, w->nslots, st);
}

/* ---- calls ---- */

static bool delay_again(struct worker *w, enum load_st st, unsigned *n)
{
	if (st != LOAD_DELAY || *n >= MAX_DELAYS)
		return false;
	(*n)++;
	w->st.delays++;
	sleep_ns(DELAY_NS);
	return true;
}

/* Count an operation; its latency only when it went out once. */
static void account(struct worker *w, enum op_kind k, enum load_st st, bool retried, uint64_t t0)
{
	uint64_t ns = now_ns() - t0;
	w->st.ops[k]++;
	if (st != LOAD_OK)
		w->st.errs[k][st]++;
	if (st == LOAD_NOSPC)
		w->st.nospc++;
	if (retried) {
		w->st.retried_ops++;
		return;
	}
	if (st == LOAD_ERR_CONN)
		return;
	hist_add(&w->st.lat[k], ns);
	pthread_mutex_lock(&w->lock);
	hist_add(&w->ival, ns);
	w->ival_ops++;
	pthread_mutex_unlock(&w->lock);
}

static bool retried(struct worker *w, unsigned delays)
{
	return w->c.lc_sends > 1 || delays > 0;
}

/* GETATTR, READ and SETATTR of o, each sent again after a delay as the
 * server asks, and counted. The status of the last answer. */
static enum load_st timed_getattr(struct worker *w, struct mobj *o, struct load_attr *a)
{
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->getattr(&w->c, &o->fh, a);
	while (delay_again(w, st, &nd));
	account(w, OP_GETATTR, st, retried(w, nd), t0);
	return st;
}

static enum load_st timed_read(struct worker *w, struct mobj *o, uint64_t off, uint32_t len,
			       uint32_t *n, bool *eof)
{
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->read(&w->c, &o->fh, off, len, w->rbuf, n, eof);
	while (delay_again(w, st, &nd));
	account(w, OP_READ, st, retried(w, nd), t0);
	return st;
}

/* o is unsure while the SETATTR is out: its outcome may be unknown. */
static enum load_st timed_setattr(struct worker *w, struct mobj *o, const struct load_sattr *sa,
				  struct load_attr *post)
{
	o->unsure = true;
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->setattr(&w->c, &o->fh, sa, post);
	while (delay_again(w, st, &nd));
	account(w, OP_SETATTR, st, retried(w, nd), t0);
	o->unsure = false;
	return st;
}

/* An unexpected status on a call whose outcome the model cannot know. */
static void unexpected(struct worker *w, const char *what, enum load_st st)
{
	report(w, false, "%s: unexpected %s", what, load_st_name(st));
}

/* ---- the write verifier ---- */

/* The server restarted: whatever was only acknowledged UNSTABLE may be
 * gone; it is sent again before the workload goes on. */
static void restarted(struct worker *w)
{
	for (unsigned i = 0; i < w->nobjs; i++) {
		struct mobj *o = w->objs[i];
		if (o->ndirty)
			for (unsigned u = 0; u < w->nunits; u++)
				if (o->st[u] == U_DIRTY)
					set_unit(o, u, o->val[u], U_RESEND);
		o->cur_lo = o->dur_lo;
		if (o->nresend)
			w->need_resend = true;
	}
	w->st.restarts++;
}

static void note_verf(struct worker *w, const uint8_t v[LOAD_VERF_LEN])
{
	if (w->verf_known && memcmp(w->verf, v, LOAD_VERF_LEN) == 0)
		return;
	if (w->verf_known)
		restarted(w);
	memcpy(w->verf, v, LOAD_VERF_LEN);
	w->verf_known = true;
}

/* ---- checks ---- */

enum vmode { V_CURRENT, V_RESTART };

/* The attributes of o against the model (after a restart: lost). */
static void check_attr(struct worker *w, struct mobj *o, const struct load_attr *a, enum vmode m,
		       const char *why)
{
	bool lost = m == V_RESTART;
	if (!a->la_valid)
		return;
	if (a->la_type != LOAD_T_REG)
		report(w, lost, "%s: file #%u: type %u, not a regular file", why, o->id,
		       a->la_type);
	if (a->la_fileid != o->fileid)
		report(w, lost, "%s: file #%u: fileid %llu, want %llu", why, o->id,
		       (unsigned long long)a->la_fileid, (unsigned long long)o->fileid);
	if (a->la_nlink != o->nlink)
		report(w, lost, "%s: file #%u: %u links, want %u", why, o->id, a->la_nlink,
		       o->nlink);
	if (o->mode_known && a->la_mode != o->mode)
		report(w, lost, "%s: file #%u: mode %o, want %o", why, o->id, a->la_mode, o->mode);
	if (a->la_size < o->cur_lo || a->la_size > o->cur_hi)
		report(w, lost, "%s: file #%u: size %llu, want %llu..%llu", why, o->id,
		       (unsigned long long)a->la_size, (unsigned long long)o->cur_lo,
		       (unsigned long long)o->cur_hi);
}

/* Compare n bytes read at off (unit-aligned) with the model. */
static void check_data(struct worker *w, struct mobj *o, uint64_t off, uint32_t n,
		       const uint8_t *buf, enum vmode m, const char *why)
{
	for (uint64_t u = off / UNIT; (u + 1) * UNIT <= off + n && u < w->nunits; u++) {
		if (o->st[u] != U_CLEAN && o->st[u] != U_DIRTY)
			continue;
		if (unit_is(w, buf + (u * UNIT - off), o->val[u], u))
			continue;
		/* what is there instead, if it is one of ours */
		report(w, m == V_RESTART && o->st[u] == U_CLEAN,
		       "%s: file #%u: bytes [%llu, +%u) (%s, write %u) read back different", why,
		       o->id, (unsigned long long)(u * UNIT), UNIT,
		       o->st[u] == U_CLEAN ? "stable" : "unstable", o->val[u]);
		return; /* one line per file is enough */
	}
	w->st.verified_bytes += n;
}

/* GETATTR and READ of the whole file. -ECONNRESET or 0. */
static int verify_obj(struct worker *w, struct mobj *o, enum vmode m, const char *why)
{
	struct load_attr a;
	enum load_st st = timed_getattr(w, o, &a);
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st != LOAD_OK) {
		report(w, m == V_RESTART, "%s: file #%u: GETATTR %s", why, o->id, load_st_name(st));
		return 0;
	}
	check_attr(w, o, &a, m, why);
	uint64_t size = a.la_size < w->o->file_max ? a.la_size : w->o->file_max;
	for (uint64_t off = 0; off < size;) {
		uint32_t len = (uint32_t)(size - off < w->o->wsize ? size - off : w->o->wsize), n;
		bool eof;
		st = timed_read(w, o, off, len, &n, &eof);
		if (st == LOAD_ERR_CONN)
			return -ECONNRESET;
		if (st != LOAD_OK) {
			report(w, m == V_RESTART, "%s: file #%u: READ at %llu: %s", why, o->id,
			       (unsigned long long)off, load_st_name(st));
			return 0;
		}
		w->st.bytes_read += n;
		if (n == 0) {
			if (off < o->cur_lo)
				report(w, m == V_RESTART, "%s: file #%u: READ at %llu: end of file",
				       why, o->id, (unsigned long long)off);
			break;
		}
		check_data(w, o, off, n - n % UNIT, w->rbuf, m, why);
		off += n;
	}
	w->st.verified_files++;
	return 0;
}

struct dirscan {
	struct worker *w;
	unsigned dir;
	bool *seen;
	enum vmode m;
	const char *why;
};

static struct mslot *slot_named(struct worker *w, unsigned dir, const char *name)
{
	for (unsigned i = 0; i < w->nslots; i++)
		if (w->slots[i].dir == dir && strcmp(w->slots[i].name, name) == 0)
			return &w->slots[i];
	return NULL;
}

static int dirscan_entry(void *arg, const char *name, uint64_t fileid, const struct load_attr *a)
{
	struct dirscan *d = arg;
	struct worker *w = d->w;
	if (d->dir == 1 && strncmp(name, w->prefix, strlen(w->prefix)) != 0)
		return 0; /* another client's */
	struct mslot *s = slot_named(w, d->dir, name);
	if (!s) {
		report(w, false, "%s: READDIR lists '%s%s', a name never made", d->why,
		       d->dir ? "shared/" : "", name);
		return 0;
	}
	bool *seen = &d->seen[s - w->slots];
	if (*seen)
		report(w, false, "%s: READDIR lists '%s%s' twice", d->why, dname(s), name);
	*seen = true;
	if (!slot_usable(s) || (s->st == S_FILE && s->obj->unsure))
		return 0;
	if (s->st == S_ABSENT) {
		report(w, d->m == V_RESTART, "%s: READDIR lists '%s%s', which was removed", d->why,
		       dname(s), name);
		return 0;
	}
	uint64_t want = s->st == S_FILE ? s->obj->fileid : s->fileid;
	if (fileid && fileid != want)
		report(w, d->m == V_RESTART, "%s: READDIR: '%s%s' has fileid %llu, want %llu",
		       d->why, dname(s), name, (unsigned long long)fileid,
		       (unsigned long long)want);
	if (a && a->la_fileid != want)
		report(w, d->m == V_RESTART,
		       "%s: READDIRPLUS: '%s%s' has attributes of fileid %llu, want %llu", d->why,
		       dname(s), name, (unsigned long long)a->la_fileid, (unsigned long long)want);
	return 0;
}

/* READDIR (or READDIRPLUS) of a directory: the client's names exactly. */
static int verify_dir(struct worker *w, unsigned dir, bool plus, enum vmode m, const char *why)
{
	bool *seen = xcalloc(w->nslots, sizeof(bool));
	struct dirscan d = {w, dir, seen, m, why};
	uint64_t t0 = now_ns();
	unsigned nd = 0, restarts = 0;
	enum load_st st;
	do {
		memset(seen, 0, w->nslots * sizeof(bool));
		st = w->p->readdir(&w->c, dir ? &w->shared : &w->own, plus, dirscan_entry, &d);
		/* a server that restarted may not know the cookie: list again */
	} while (delay_again(w, st, &nd) || (st == LOAD_BAD_COOKIE && restarts++ < 10));
	account(w, OP_READDIR, st, retried(w, nd), t0);
	int err = st == LOAD_ERR_CONN ? -ECONNRESET : 0;
	if (st == LOAD_OK) {
		for (unsigned i = 0; i < w->nslots; i++) {
			struct mslot *s = &w->slots[i];
			if (s->dir != dir || seen[i] || s->st == S_ABSENT || !slot_usable(s))
				continue;
			report(w, m == V_RESTART, "%s: READDIR does not list '%s%s'", why, dname(s),
			       s->name);
		}
	} else if (st != LOAD_ERR_CONN) {
		report(w, false, "%s: READDIR: %s", why, load_st_name(st));
	}
	free(seen);
	return err;
}

/* LOOKUP of one name against its slot. */
static int verify_slot(struct worker *w, struct mslot *s, enum vmode m, const char *why)
{
	struct load_fh fh;
	struct load_attr a = {0};
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	bool lost = m == V_RESTART;
	do
		st = w->p->lookup(&w->c, slot_dir(w, s), s->name, &fh, &a);
	while (delay_again(w, st, &nd));
	account(w, OP_LOOKUP, st, retried(w, nd), t0);
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	w->st.verified_names++;
	if (s->st == S_ABSENT) {
		if (st != LOAD_NOENT)
			report(w, lost, "%s: '%s%s' was removed, but LOOKUP says %s", why, dname(s),
			       s->name, load_st_name(st));
		return 0;
	}
	if (st != LOAD_OK) {
		report(w, lost, "%s: '%s%s' exists, but LOOKUP says %s", why, dname(s), s->name,
		       load_st_name(st));
		return 0;
	}
	uint64_t want = s->st == S_FILE ? s->obj->fileid : s->fileid;
	uint32_t type = s->st == S_FILE ? LOAD_T_REG : LOAD_T_DIR;
	if (a.la_valid && (a.la_fileid != want || a.la_type != type))
		report(w, lost, "%s: '%s%s' is fileid %llu type %u, want %llu type %u", why,
		       dname(s), s->name, (unsigned long long)a.la_fileid, a.la_type,
		       (unsigned long long)want, type);
	return 0;
}

/* Every name, both directories and every object that no operation in
 * doubt touches. */
static int verify_all(struct worker *w, enum vmode m, const char *why)
{
	int err;
	for (unsigned i = 0; i < w->nslots; i++)
		if (slot_usable(&w->slots[i]) && (err = verify_slot(w, &w->slots[i], m, why)))
			return err;
	if ((err = verify_dir(w, 0, rng_chance(&w->rng, 50), m, why)) ||
	    (w->o->shared && (err = verify_dir(w, 1, rng_chance(&w->rng, 50), m, why))))
		return err;
	for (unsigned i = 0; i < w->nobjs; i++) {
		struct mobj *o = w->objs[i];
		if (!o->unsure && !o->tainted && (err = verify_obj(w, o, m, why)))
			return err;
	}
	return 0;
}

/* A WRITE of 0 bytes returns the write verifier and changes nothing. */
static enum load_st probe_verf(struct worker *w, uint8_t verf[LOAD_VERF_LEN])
{
	uint32_t count;
	enum load_stable comm;
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->write(&w->c, &w->probe, 0, w->wbuf, 0, LOAD_UNSTABLE, &count, &comm,
				 verf);
	while (delay_again(w, st, &nd));
	return st;
}

/* The protocol reconnected: find out whether the server restarted, and
 * check what it must still have. Nonzero: the connection failed again. */
static int recover(struct load_client *c)
{
	struct worker *w = c->lc_work;
	uint8_t verf[LOAD_VERF_LEN];
	enum load_st st = probe_verf(w, verf);
	if (st == LOAD_ERR_CONN)
		return 1;
	if (st != LOAD_OK) {
		unexpected(w, "probe WRITE after reconnecting", st);
		return 0;
	}
	bool restart = w->verf_known && memcmp(verf, w->verf, LOAD_VERF_LEN) != 0;
	note_verf(w, verf);
	w->st.recoveries++;
	return verify_all(w, restart ? V_RESTART : V_CURRENT,
			  restart ? "after a server restart" : "after a reconnect")
		       ? 1
		       : 0;
}

/* ---- data operations ---- */

/* Build the bytes of units [u0, u0 + n) as the model says. */
static void build(struct worker *w, const struct mobj *o, uint64_t u0, uint64_t n, uint8_t *buf)
{
	for (uint64_t i = 0; i < n; i++)
		fill_unit(w, buf + i * UNIT, o->val[u0 + i], u0 + i);
}

/* Units [u0, u0 + n) of o were written with wid (the data in w->wbuf):
 * the model after the reply. */
static void apply_write(struct worker *w, struct mobj *o, uint64_t u0, uint64_t n, uint32_t wid,
			enum load_st st, uint32_t count, enum load_stable comm, bool resend)
{
	uint64_t end = (u0 + n) * UNIT;
	if (st != LOAD_OK) {
		for (uint64_t u = u0; u < u0 + n; u++)
			set_unit(o, u, 0, U_UNKNOWN);
		if (end > o->cur_hi)
			o->cur_hi = end;
		return;
	}
	uint64_t done = count / UNIT;
	if (count < n * UNIT)
		w->st.short_writes++;
	enum ust s = comm == LOAD_UNSTABLE ? U_DIRTY : U_CLEAN;
	/* a hole between the old size and the write reads as zeros */
	for (uint64_t u = o->cur_lo / UNIT; u < u0 && u < w->nunits; u++)
		if (o->st[u] != U_UNKNOWN && o->st[u] != U_RESEND)
			set_unit(o, u, 0, U_CLEAN);
	for (uint64_t u = u0; u < u0 + n; u++) {
		if (u < u0 + done)
			set_unit(o, u, resend ? o->val[u] : wid, s);
		else
			set_unit(o, u, 0, U_UNKNOWN);
	}
	end = (u0 + done) * UNIT;
	if (s == U_DIRTY)
		memcpy(o->verf, w->verf, LOAD_VERF_LEN);
	if (end > o->cur_lo)
		o->cur_lo = end;
	if (o->cur_lo > o->cur_hi)
		o->cur_hi = o->cur_lo;
	if (s == U_CLEAN && end > o->dur_lo)
		o->dur_lo = end;
	if (u0 * UNIT + n * UNIT > o->cur_hi && done < n)
		o->cur_hi = (u0 + n) * UNIT;
}

/* One WRITE of units [u0, u0 + n): fresh data (wid), or, with resend, what
 * the model holds. -ECONNRESET or 0. */
static int do_write(struct worker *w, struct mobj *o, uint64_t u0, uint64_t n, enum load_stable how,
		    bool resend)
{
	uint32_t wid = resend ? 0 : ++w->next_wid;
	if (resend)
		build(w, o, u0, n, w->wbuf);
	else
		for (uint64_t i = 0; i < n; i++)
			fill_unit(w, w->wbuf + i * UNIT, wid, u0 + i);
	uint32_t len = (uint32_t)(n * UNIT), count = 0;
	enum load_stable comm = LOAD_UNSTABLE;
	uint8_t verf[LOAD_VERF_LEN];
	enum op_kind k = how == LOAD_UNSTABLE	 ? OP_WRITE_UNSTABLE
			 : how == LOAD_DATA_SYNC ? OP_WRITE_DATASYNC
						 : OP_WRITE_FILESYNC;
	o->unsure = true;
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->write(&w->c, &o->fh, u0 * UNIT, w->wbuf, len, how, &count, &comm, verf);
	while (delay_again(w, st, &nd));
	account(w, k, st, retried(w, nd), t0);
	o->unsure = false;
	if (st == LOAD_ERR_CONN) {
		apply_write(w, o, u0, n, wid, st, 0, how, resend);
		return -ECONNRESET;
	}
	if (st == LOAD_OK) {
		note_verf(w, verf);
		if (count > len || count % UNIT) {
			report(w, false, "WRITE of %u bytes to file #%u: count %u", len, o->id,
			       count);
			count = 0;
			st = LOAD_IO;
		} else if (comm < how) {
			report(w, false, "WRITE %d to file #%u answered as committed %d", how,
			       o->id, comm);
			comm = LOAD_UNSTABLE; /* believe the weaker promise */
		}
		w->st.bytes_written += count;
		if (resend)
			w->st.resent_bytes += count;
		if (w->st.nospc)
			w->st.ok_after_nospc++;
	} else if (st != LOAD_NOSPC) {
		unexpected(w, "WRITE", st);
	}
	apply_write(w, o, u0, n, wid, st, count, comm, resend);
	return 0;
}

static int do_commit(struct worker *w, struct mobj *o)
{
	uint8_t verf[LOAD_VERF_LEN];
	o->unsure = true;
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->commit(&w->c, &o->fh, verf);
	while (delay_again(w, st, &nd));
	account(w, OP_COMMIT, st, retried(w, nd), t0);
	o->unsure = false;
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st != LOAD_OK) {
		unexpected(w, "COMMIT", st);
		return 0;
	}
	/* a changed verifier turns DIRTY into RESEND first */
	note_verf(w, verf);
	if (o->ndirty && memcmp(o->verf, w->verf, LOAD_VERF_LEN) == 0)
		for (unsigned u = 0; u < w->nunits; u++)
			if (o->st[u] == U_DIRTY)
				set_unit(o, u, o->val[u], U_CLEAN);
	if (o->cur_lo > o->dur_lo)
		o->dur_lo = o->cur_lo;
	return 0;
}

/* Send again what a restart may have lost, then COMMIT it. */
static int resend_all(struct worker *w)
{
	while (w->need_resend) {
		w->need_resend = false;
		for (unsigned i = 0; i < w->nobjs; i++) {
			struct mobj *o = w->objs[i];
			if (!o->nresend || o->tainted)
				continue;
			uint64_t max = w->o->wsize / UNIT;
			for (uint64_t u = 0; u < w->nunits;) {
				if (o->st[u] != U_RESEND) {
					u++;
					continue;
				}
				uint64_t n = 1;
				while (u + n < w->nunits && n < max && o->st[u + n] == U_RESEND)
					n++;
				int err = do_write(w, o, u, n, LOAD_UNSTABLE, true);
				if (err)
					return err;
				u += n;
			}
			int err = do_commit(w, o);
			if (err)
				return err;
		}
	}
	return 0;
}

/* ---- namespace operations ---- */

static int op_create(struct worker *w)
{
	struct mslot *s = pick_file_slot(w, S_ABSENT);
	if (!s)
		return 0;
	unsigned r = (unsigned)rng_below(&w->rng, 10);
	enum load_create how = r < 4 ? LOAD_UNCHECKED : r < 7 ? LOAD_GUARDED : LOAD_EXCLUSIVE;
	uint32_t mode = rng_chance(&w->rng, 50) ? 0644 : 0640;
	uint8_t verf[LOAD_VERF_LEN];
	uint64_t v = ((uint64_t)w->c.lc_id << 40) ^ ++w->excl_seq ^ w->pat_seed;
	memcpy(verf, &v, sizeof(v));
	struct load_fh fh;
	struct load_attr a = {0};
	s->unsure = true;
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->create(&w->c, slot_dir(w, s), s->name, how, verf, mode, &fh, &a);
	while (delay_again(w, st, &nd));
	bool again = retried(w, nd);
	account(w, OP_CREATE, st, again, t0);
	s->unsure = false;
	if (st == LOAD_ERR_CONN) {
		s->tainted = true; /* the client gives up anyway */
		return -ECONNRESET;
	}
	if (st == LOAD_EXIST && again && how == LOAD_GUARDED) {
		/* the first transmission created it */
		st = w->p->lookup(&w->c, slot_dir(w, s), s->name, &fh, &a);
		if (st == LOAD_ERR_CONN)
			return -ECONNRESET;
	}
	if (st == LOAD_NOSPC)
		return 0;
	if (st != LOAD_OK) {
		report(w, false, "CREATE %s '%s%s' (%s): %s",
		       how == LOAD_GUARDED     ? "GUARDED"
		       : how == LOAD_EXCLUSIVE ? "EXCLUSIVE"
					       : "UNCHECKED",
		       dname(s), s->name, again ? "sent again" : "sent once", load_st_name(st));
		s->tainted = true;
		w->st.tainted++;
		return 0;
	}
	if (!a.la_valid && (st = w->p->getattr(&w->c, &fh, &a)) != LOAD_OK)
		return st == LOAD_ERR_CONN ? -ECONNRESET : 0;
	struct mobj *o = obj_new(w, &fh, a.la_fileid);
	o->nlink = 1;
	s->st = S_FILE;
	s->obj = o;
	if (a.la_type != LOAD_T_REG || a.la_nlink != 1 || a.la_size != 0)
		report(w, false, "CREATE '%s%s': type %u, %u links, size %llu", dname(s), s->name,
		       a.la_type, a.la_nlink, (unsigned long long)a.la_size);
	if (how != LOAD_EXCLUSIVE) {
		o->mode = mode;
		o->mode_known = true;
		if (a.la_mode != mode)
			report(w, false, "CREATE '%s%s' mode %o: the file has %o", dname(s),
			       s->name, mode, a.la_mode);
		return 0;
	}
	/* EXCLUSIVE sends no attributes: set the mode now, as clients do */
	struct load_sattr sa = {.set_mode = true, .mode = mode};
	struct load_attr post = {0};
	st = timed_setattr(w, o, &sa, &post);
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st != LOAD_OK) {
		unexpected(w, "SETATTR after an exclusive CREATE", st);
		return 0;
	}
	o->mode = mode;
	o->mode_known = true;
	return 0;
}

/* REMOVE the name in slot s (a name of s->obj), sent again after a delay
 * as the server asks. Returns 1 once the name is gone (the slot empty, the
 * object's reference dropped), 0 when the server's answer was wrong
 * (reported; slot and object tainted), or -ECONNRESET. */
static int remove_slot(struct worker *w, struct mslot *s)
{
	struct mobj *o = s->obj;
	s->unsure = o->unsure = true;
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->remove(&w->c, slot_dir(w, s), s->name);
	while (delay_again(w, st, &nd));
	bool again = retried(w, nd);
	account(w, OP_REMOVE, st, again, t0);
	s->unsure = o->unsure = false;
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st == LOAD_OK || (st == LOAD_NOENT && again)) {
		s->st = S_ABSENT;
		s->obj = NULL;
		obj_put(w, o);
		return 1;
	}
	report(w, false, "REMOVE '%s%s' (%s): %s", dname(s), s->name,
	       again ? "sent again" : "sent once", load_st_name(st));
	s->tainted = o->tainted = true;
	w->st.tainted++;
	return 0;
}

static int op_remove(struct worker *w)
{
	struct mslot *s = pick_file_slot(w, S_FILE);
	if (!s || s->obj->unsure)
		return 0;
	int r = remove_slot(w, s);
	return r < 0 ? r : 0;
}

/* Remove every name of o (to free space). */
static int remove_obj(struct worker *w, struct mobj *o)
{
	for (unsigned i = 0; i < w->nslots && o; i++) {
		struct mslot *s = &w->slots[i];
		if (s->st != S_FILE || s->obj != o || !slot_usable(s))
			continue;
		bool last = o->nlink == 1; /* then remove_slot frees o */
		int r = remove_slot(w, s);
		if (r <= 0)
			return r;
		if (last)
			o = NULL;
	}
	return 0;
}

static int op_rename(struct worker *w)
{
	struct mslot *from = pick_file_slot(w, S_FILE);
	if (!from || from->obj->unsure)
		return 0;
	/* to a free name, or over another file */
	struct mslot *to = pick_file_slot(w, rng_chance(&w->rng, 70) ? S_ABSENT : S_FILE);
	if (!to || to == from || (to->st == S_FILE && to->obj->unsure))
		return 0;
	struct mobj *o = from->obj, *victim = to->st == S_FILE ? to->obj : NULL;
	from->unsure = to->unsure = o->unsure = true;
	if (victim)
		victim->unsure = true;
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->rename(&w->c, slot_dir(w, from), from->name, slot_dir(w, to), to->name);
	while (delay_again(w, st, &nd));
	bool again = retried(w, nd);
	account(w, OP_RENAME, st, again, t0);
	from->unsure = to->unsure = o->unsure = false;
	if (victim)
		victim->unsure = false;
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st == LOAD_OK || (st == LOAD_NOENT && again)) {
		if (victim == o)
			return 0; /* two names of one file: rename does nothing */
		to->st = S_FILE;
		to->obj = o;
		from->st = S_ABSENT;
		from->obj = NULL;
		if (victim)
			obj_put(w, victim);
		return 0;
	}
	report(w, false, "RENAME '%s%s' -> '%s%s' (%s): %s", dname(from), from->name, dname(to),
	       to->name, again ? "sent again" : "sent once", load_st_name(st));
	from->tainted = to->tainted = o->tainted = true;
	if (victim)
		victim->tainted = true;
	w->st.tainted++;
	return 0;
}

static int op_link(struct worker *w)
{
	struct mslot *from = pick_file_slot(w, S_FILE);
	if (!from || from->obj->unsure || from->obj->nlink >= MAX_NLINK)
		return 0;
	struct mslot *to = pick_file_slot(w, S_ABSENT);
	if (!to)
		return 0;
	struct mobj *o = from->obj;
	to->unsure = o->unsure = true;
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->link(&w->c, &o->fh, slot_dir(w, to), to->name);
	while (delay_again(w, st, &nd));
	bool again = retried(w, nd);
	account(w, OP_LINK, st, again, t0);
	to->unsure = o->unsure = false;
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st == LOAD_OK || (st == LOAD_EXIST && again)) {
		to->st = S_FILE;
		to->obj = o;
		o->nlink++;
		return 0;
	}
	if (st == LOAD_NOSPC)
		return 0;
	report(w, false, "LINK file #%u as '%s%s' (%s): %s", o->id, dname(to), to->name,
	       again ? "sent again" : "sent once", load_st_name(st));
	to->tainted = o->tainted = true;
	w->st.tainted++;
	return 0;
}

static int op_mkdir(struct worker *w)
{
	struct mslot *s = pick(w, w->o->files, w->o->files + w->o->dirs, S_ABSENT);
	if (!s)
		return 0;
	struct load_fh fh;
	struct load_attr a = {0};
	s->unsure = true;
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->mkdir(&w->c, slot_dir(w, s), s->name, 0755, &fh, &a);
	while (delay_again(w, st, &nd));
	bool again = retried(w, nd);
	account(w, OP_MKDIR, st, again, t0);
	s->unsure = false;
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st == LOAD_EXIST && again) {
		st = w->p->lookup(&w->c, slot_dir(w, s), s->name, &fh, &a);
		if (st == LOAD_ERR_CONN)
			return -ECONNRESET;
	}
	if (st == LOAD_NOSPC)
		return 0;
	if (st != LOAD_OK) {
		report(w, false, "MKDIR '%s' (%s): %s", s->name, again ? "sent again" : "sent once",
		       load_st_name(st));
		s->tainted = true;
		w->st.tainted++;
		return 0;
	}
	if (!a.la_valid && (st = w->p->getattr(&w->c, &fh, &a)) != LOAD_OK)
		return st == LOAD_ERR_CONN ? -ECONNRESET : 0;
	if (a.la_type != LOAD_T_DIR)
		report(w, false, "MKDIR '%s': type %u", s->name, a.la_type);
	s->st = S_DIR;
	s->fh = fh;
	s->fileid = a.la_fileid;
	return 0;
}

static int op_rmdir(struct worker *w)
{
	struct mslot *s = pick(w, w->o->files, w->o->files + w->o->dirs, S_DIR);
	if (!s)
		return 0;
	s->unsure = true;
	uint64_t t0 = now_ns();
	unsigned nd = 0;
	enum load_st st;
	do
		st = w->p->rmdir(&w->c, slot_dir(w, s), s->name);
	while (delay_again(w, st, &nd));
	bool again = retried(w, nd);
	account(w, OP_RMDIR, st, again, t0);
	s->unsure = false;
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st == LOAD_OK || (st == LOAD_NOENT && again)) {
		s->st = S_ABSENT;
		return 0;
	}
	report(w, false, "RMDIR '%s' (%s): %s", s->name, again ? "sent again" : "sent once",
	       load_st_name(st));
	s->tainted = true;
	w->st.tainted++;
	return 0;
}

static struct mobj *pick_obj(struct worker *w)
{
	struct mslot *s = pick_file_slot(w, S_FILE);
	return s && !s->obj->unsure ? s->obj : NULL;
}

static int op_setattr(struct worker *w)
{
	struct mobj *o = pick_obj(w);
	if (!o)
		return 0;
	struct load_sattr sa = {0};
	static const uint32_t modes[] = {0600, 0640, 0644, 0664, 0444, 0755};
	if (rng_chance(&w->rng, 50)) {
		sa.set_mode = true;
		sa.mode = modes[rng_below(&w->rng, sizeof(modes) / sizeof(modes[0]))];
	} else {
		sa.set_size = true;
		uint64_t max = w->o->fill ? o->cur_lo / UNIT : w->nunits;
		sa.size = rng_below(&w->rng, max + 1) * UNIT;
	}
	struct load_attr post = {0};
	enum load_st st = timed_setattr(w, o, &sa, &post);
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st != LOAD_OK) {
		if (st != LOAD_NOSPC)
			unexpected(w, "SETATTR", st);
		if (sa.set_size) {
			/* the size may or may not have changed */
			for (uint64_t u = sa.size / UNIT; u < w->nunits; u++)
				if (o->st[u] != U_CLEAN || o->val[u])
					set_unit(o, u, 0, U_UNKNOWN);
			o->cur_lo = o->cur_lo < sa.size ? o->cur_lo : sa.size;
			o->dur_lo = o->dur_lo < sa.size ? o->dur_lo : sa.size;
			o->cur_hi = o->cur_hi > sa.size ? o->cur_hi : sa.size;
		}
		return 0;
	}
	if (sa.set_mode) {
		o->mode = sa.mode;
		o->mode_known = true;
		if (post.la_valid && post.la_mode != sa.mode)
			report(w, false, "SETATTR mode %o of file #%u: the file has %o", sa.mode,
			       o->id, post.la_mode);
		return 0;
	}
	/* past the new size everything reads as zeros, and stays so */
	for (uint64_t u = sa.size / UNIT; u < w->nunits; u++)
		set_unit(o, u, 0, U_CLEAN);
	o->cur_lo = o->cur_hi = o->dur_lo = sa.size;
	if (post.la_valid && post.la_size != sa.size)
		report(w, false, "SETATTR size %llu of file #%u: the file has %llu",
		       (unsigned long long)sa.size, o->id, (unsigned long long)post.la_size);
	return 0;
}

/* Free space after NOSPC: remove the client's largest file. */
static int free_space(struct worker *w)
{
	struct mobj *big = NULL;
	for (unsigned i = 0; i < w->nobjs; i++) {
		struct mobj *o = w->objs[i];
		if (!o->unsure && !o->tainted && (!big || o->cur_hi > big->cur_hi))
			big = o;
	}
	return big ? remove_obj(w, big) : 0;
}

static int op_write(struct worker *w)
{
	struct mobj *o = pick_obj(w);
	if (!o)
		return 0;
	uint64_t max = w->o->wsize / UNIT, u0, n;
	bool append = w->o->fill ? rng_chance(&w->rng, 90) : rng_chance(&w->rng, 30);
	if (append && o->cur_lo / UNIT < w->nunits) {
		u0 = o->cur_lo / UNIT;
	} else {
		u0 = rng_below(&w->rng, w->nunits);
	}
	unsigned r = (unsigned)rng_below(&w->rng, 10);
	if (w->o->fill)
		n = max;
	else if (r < 6)
		n = 1 + rng_below(&w->rng, 4);
	else if (r < 9)
		n = 5 + rng_below(&w->rng, 28);
	else
		n = 33 + rng_below(&w->rng, max > 33 ? max - 32 : 1);
	if (n > max)
		n = max;
	if (u0 + n > w->nunits)
		n = w->nunits - u0;
	r = (unsigned)rng_below(&w->rng, 4);
	enum load_stable how = r < 2 ? LOAD_UNSTABLE : r == 2 ? LOAD_DATA_SYNC : LOAD_FILE_SYNC;
	uint64_t nospc = w->st.nospc;
	int err = do_write(w, o, u0, n, how, false);
	if (!err && w->o->fill && w->st.nospc != nospc && rng_chance(&w->rng, 50))
		err = free_space(w);
	return err;
}

static int op_commit(struct worker *w)
{
	/* a file with unstable data, if any */
	struct mobj *o = NULL;
	unsigned start = w->nobjs ? (unsigned)rng_below(&w->rng, w->nobjs) : 0;
	for (unsigned i = 0; i < w->nobjs && !o; i++) {
		struct mobj *c = w->objs[(start + i) % w->nobjs];
		if (c->ndirty && !c->unsure && !c->tainted)
			o = c;
	}
	if (!o)
		o = pick_obj(w);
	return o ? do_commit(w, o) : 0;
}

static int op_read(struct worker *w)
{
	struct mobj *o = pick_obj(w);
	if (!o)
		return 0;
	if (rng_chance(&w->rng, 50))
		return verify_obj(w, o, V_CURRENT, "READ");
	/* one READ of a random range */
	uint64_t u0 = rng_below(&w->rng, w->nunits);
	uint32_t len = (uint32_t)(UNIT * (1 + rng_below(&w->rng, w->o->wsize / UNIT)));
	uint32_t n = 0;
	bool eof;
	enum load_st st = timed_read(w, o, u0 * UNIT, len, &n, &eof);
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st != LOAD_OK) {
		unexpected(w, "READ", st);
		return 0;
	}
	w->st.bytes_read += n;
	uint64_t off = u0 * UNIT, want = off + len < o->cur_lo ? len
					 : o->cur_lo > off     ? o->cur_lo - off
							       : 0;
	if (n < want)
		report(w, false, "READ file #%u [%llu, +%u): %u bytes, want at least %llu", o->id,
		       (unsigned long long)off, len, n, (unsigned long long)want);
	check_data(w, o, off, n - n % UNIT, w->rbuf, V_CURRENT, "READ");
	return 0;
}

static int op_getattr(struct worker *w)
{
	struct mobj *o = pick_obj(w);
	if (!o)
		return 0;
	struct load_attr a;
	enum load_st st = timed_getattr(w, o, &a);
	if (st == LOAD_ERR_CONN)
		return -ECONNRESET;
	if (st != LOAD_OK)
		unexpected(w, "GETATTR", st);
	else
		check_attr(w, o, &a, V_CURRENT, "GETATTR");
	return 0;
}

static int op_readdir(struct worker *w)
{
	return verify_dir(w, w->o->shared && rng_chance(&w->rng, 40) ? 1 : 0,
			  rng_chance(&w->rng, 50), V_CURRENT, "READDIR");
}

/* ---- the mix ---- */

struct mix {
	int (*fn)(struct worker *w);
	unsigned weight[2]; /* normal, fill */
};

static const struct mix mix[] = {
	{op_create, {10, 8}}, {op_write, {28, 60}}, {op_commit, {8, 8}},  {op_read, {10, 6}},
	{op_remove, {7, 4}},  {op_rename, {8, 2}},  {op_link, {4, 2}},	  {op_mkdir, {3, 1}},
	{op_rmdir, {3, 1}},   {op_setattr, {7, 3}}, {op_readdir, {4, 2}}, {op_getattr, {8, 3}},
};

static int one_op(struct worker *w)
{
	unsigned total = 0, k = w->o->fill ? 1 : 0;
	for (size_t i = 0; i < sizeof(mix) / sizeof(mix[0]); i++)
		total += mix[i].weight[k];
	unsigned r = (unsigned)rng_below(&w->rng, total);
	for (size_t i = 0; i < sizeof(mix) / sizeof(mix[0]); i++) {
		if (r < mix[i].weight[k])
			return mix[i].fn(w);
		r -= mix[i].weight[k];
	}
	return 0;
}

/* ---- setup ---- */

/* LOOKUP name in dir, or MKDIR it (another client may win the race). */
static int dir_get(struct worker *w, const struct load_fh *dir, const char *name,
		   struct load_fh *fh)
{
	struct load_attr a;
	for (int i = 0; i < 10; i++) {
		enum load_st st = w->p->lookup(&w->c, dir, name, fh, &a);
		if (st == LOAD_OK)
			return 0;
		if (st != LOAD_NOENT)
			goto fail;
		st = w->p->mkdir(&w->c, dir, name, 0777, fh, &a);
		if (st == LOAD_OK)
			return 0;
		if (st != LOAD_EXIST)
			goto fail;
		continue;
	fail:
		fprintf(stderr, "nfs-load: client %u: cannot get directory %s: %s\n", w->c.lc_id,
			name, load_st_name(st));
		return -EIO;
	}
	return -EIO;
}

struct names {
	char (*v)[256];
	unsigned n, cap;
	const char *prefix;
};

static int collect(void *arg, const char *name, uint64_t fileid, const struct load_attr *a)
{
	struct names *ns = arg;
	if (ns->prefix && strncmp(name, ns->prefix, strlen(ns->prefix)) != 0)
		return 0;
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? ns->cap * 2 : 64;
		ns->v = xrealloc(ns->v, ns->cap * sizeof(*ns->v));
	}
	snprintf(ns->v[ns->n++], 256, "%s", name);
	return 0;
}

/* Remove what an earlier run left under the client's names. */
static int empty_dir(struct worker *w, const struct load_fh *dir, const char *prefix)
{
	struct names ns = {.prefix = prefix};
	enum load_st st = w->p->readdir(&w->c, dir, false, collect, &ns);
	for (unsigned i = 0; st == LOAD_OK && i < ns.n; i++) {
		st = w->p->remove(&w->c, dir, ns.v[i]);
		if (st == LOAD_ISDIR || st == LOAD_ACCES || st == LOAD_OTHER || st == LOAD_INVAL)
			st = w->p->rmdir(&w->c, dir, ns.v[i]);
		if (st == LOAD_NOENT)
			st = LOAD_OK;
	}
	free(ns.v);
	if (st != LOAD_OK) {
		fprintf(stderr, "nfs-load: client %u: cannot empty its directory: %s\n", w->c.lc_id,
			load_st_name(st));
		return -EIO;
	}
	return 0;
}

int work_init(struct worker **out, const struct work_opts *o, unsigned id)
{
	struct worker *w = xcalloc(1, sizeof(*w));
	char name[64];
	int err;
	w->o = o;
	w->p = o->proto;
	w->c.lc_id = id;
	w->c.lc_proto = o->proto;
	w->c.lc_work = w;
	rng_seed(&w->rng, o->seed * 1000003u + id);
	w->pat_seed = o->seed ^ ((uint64_t)id << 48) ^ 0x5bd1e995u;
	w->nunits = (unsigned)(o->file_max / UNIT);
	w->wbuf = xmalloc(o->wsize);
	w->rbuf = xmalloc(o->wsize);
	pthread_mutex_init(&w->lock, NULL);
	snprintf(w->prefix, sizeof(w->prefix), "s%u-", id);
	w->nslots = o->files + o->dirs + o->shared;
	w->slots = xcalloc(w->nslots, sizeof(*w->slots));
	for (unsigned i = 0; i < w->nslots; i++) {
		struct mslot *s = &w->slots[i];
		if (i < o->files)
			snprintf(s->name, sizeof(s->name), "f%u", i);
		else if (i < o->files + o->dirs)
			snprintf(s->name, sizeof(s->name), "d%u", i - o->files);
		else
			snprintf(s->name, sizeof(s->name), "s%u-%u", id, i - o->files - o->dirs);
		s->dir = i >= o->files + o->dirs;
	}
	*out = w;

	if ((err = w->p->open(&w->c, &o->conn, &w->root))) {
		fprintf(stderr, "nfs-load: client %u: cannot mount %s from %s: %s\n", id,
			o->conn.export_path, o->conn.addr, strerror(-err));
		return err;
	}
	snprintf(name, sizeof(name), "c%u", id);
	if ((err = dir_get(w, &w->root, o->dir, &w->base)) ||
	    (err = dir_get(w, &w->base, "shared", &w->shared)) ||
	    (err = dir_get(w, &w->base, name, &w->own)) || (err = empty_dir(w, &w->own, NULL)) ||
	    (o->shared && (err = empty_dir(w, &w->shared, w->prefix))))
		return err;
	snprintf(name, sizeof(name), "probe-%u", id);
	struct load_attr a;
	enum load_st st =
		w->p->create(&w->c, &w->base, name, LOAD_UNCHECKED, NULL, 0644, &w->probe, &a);
	uint8_t verf[LOAD_VERF_LEN];
	if (st == LOAD_OK)
		st = probe_verf(w, verf);
	if (st != LOAD_OK) {
		fprintf(stderr, "nfs-load: client %u: cannot make its probe file: %s\n", id,
			load_st_name(st));
		return -EIO;
	}
	note_verf(w, verf);
	w->st.restarts = 0;
	w->c.lc_recover = recover;
	return 0;
}

int work_run(struct worker *w, const volatile bool *stop)
{
	int err = 0;
	while (!*stop && !err) {
		if (w->need_resend)
			err = resend_all(w);
		if (!err)
			err = one_op(w);
		if (!err && w->o->think_us)
			sleep_ns(w->o->think_us * NSEC_PER_USEC);
	}
	/* the end: what a restart lost goes again, then everything is checked */
	if (!err)
		err = resend_all(w);
	if (!err)
		err = verify_all(w, V_CURRENT, "final check");
	if (err)
		fprintf(stderr, "nfs-load: client %u: the server could not be reached again\n",
			w->c.lc_id);
	return err;
}

const struct work_stats *work_stats(struct worker *w)
{
	return &w->st;
}

void work_take_interval(struct worker *w, struct hist *into, uint64_t *ops)
{
	pthread_mutex_lock(&w->lock);
	hist_merge(into, &w->ival);
	*ops += w->ival_ops;
	memset(&w->ival, 0, sizeof(w->ival));
	w->ival_ops = 0;
	pthread_mutex_unlock(&w->lock);
}

struct load_client *work_client(struct worker *w)
{
	return &w->c;
}

void work_free(struct worker *w)
{
	if (!w)
		return;
	if (w->c.lc_pd)
		w->p->close(&w->c);
	while (w->nobjs) {
		struct mobj *o = w->objs[0];
		o->nlink = 1;
		obj_put(w, o);
	}
	free(w->objs);
	free(w->slots);
	free(w->wbuf);
	free(w->rbuf);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
