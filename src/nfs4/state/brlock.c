/*
 * brlock.c - byte-range locks with POSIX semantics (see brlock.h).
 *
 * A lock or unlock runs in two passes over the file's sorted list under the
 * bucket lock. The first pass changes nothing: it looks for a conflict and
 * classifies each of the owner's locks near the range (classify()), which
 * gives the change in the number of records. Only then is the change charged
 * to the client, which may refuse it; the second pass applies the same
 * classification and cannot fail (allocations abort rather than fail, see
 * base/mem.h). So a refused request leaves nothing behind (invariant 4).
 *
 * Classification of one of the owner's locks l against a request [s, e]:
 *
 *   MERGE   same type as a lock request, overlapping or touching: l is
 *           absorbed into the new lock                            (-1)
 *   COVERED other type (or an unlock), l inside [s, e]: removed    (-1)
 *   TRIM    other type, overlapping, sticking out on one side: the
 *           part outside stays                                     ( 0)
 *   SPLIT   other type, covering [s, e] with bytes to spare on both
 *           sides: two pieces stay                                 (+1)
 *   NONE    untouched                                              ( 0)
 *
 * plus one record for the new lock of a lock request. Classifying against
 * [s, e] rather than against the merged range is exact: what a MERGE adds to
 * the new lock are bytes of a lock l of the same type, and by invariant 2 no
 * other lock of the owner overlaps l or touches it with the same type, so no
 * lock that [s, e] leaves alone is affected by the extension.
 *
 * Allocations happen under the bucket lock: they are small, never fail, and
 * the bucket lock only orders requests on the files of that bucket.
 */
#include "nfs4/state/brlock.h"

#include <errno.h>
#include <stdlib.h>

#include "base/compiler.h"
#include "base/hashmap.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/mem.h"
#include "base/msg.h"
#include "nfs4/state/ftab.h"
#include "nfs4/state/tally.h"

static struct lock_class brl_bucket_class = LOCK_CLASS(NFS4_BRL_BUCKET);

struct brl_lock {
	uint64_t l_start;
	uint64_t l_last; /* inclusive; UINT64_MAX for a lock to the end of file */
	struct brl_holder *l_holder;
	struct list l_link; /* f_locks, by l_start */
	enum brl_type l_type;
};

/* One owner's locks on one file (invariant 3). */
struct brl_holder {
	struct brl_owner h_owner;
	uint64_t h_file; /* the file's key; read under the shard lock (tally.h, 3) */
	struct brl_file *h_fp;
	size_t h_n;	      /* locks */
	struct list h_link;   /* f_holders */
	struct list h_client; /* the client's tc_items */
};

struct brl_file {
	uint64_t f_key;
	size_t f_n;	     /* locks */
	struct list f_locks; /* struct brl_lock, sorted by start (invariant 1) */
	struct list f_holders;
};

/* Files (struct brl_file) in the buckets of the skeleton (ftab.h); a
 * holder is the item its client's tally entry lists. */
struct brl_table {
	struct brl_config t_cfg;
	struct ftab t_ft;
	_Atomic size_t t_holders;
};

enum brl_class { CL_NONE, CL_MERGE, CL_COVERED, CL_TRIM, CL_SPLIT };

/* ---- small helpers ------------------------------------------------------ */

static bool owner_eq(const struct brl_owner *a, const struct brl_owner *b)
{
	return a->client == b->client && a->owner == b->owner;
}

/* The inclusive range of [offset, offset + length), or -EINVAL. */
static int range_of(uint64_t offset, uint64_t length, uint64_t *s, uint64_t *e)
{
	if (length == 0)
		return -EINVAL;
	*s = offset;
	if (length == BRL_EOF) {
		*e = UINT64_MAX;
		return 0;
	}
	if (length > UINT64_MAX - offset)
		return -EINVAL;
	*e = offset + length - 1;
	return 0;
}

static bool overlaps(const struct brl_lock *l, uint64_t s, uint64_t e)
{
	return l->l_start <= e && s <= l->l_last;
}

/* Overlapping or adjacent. */
static bool touches(const struct brl_lock *l, uint64_t s, uint64_t e)
{
	return (e == UINT64_MAX || l->l_start <= e + 1) &&
	       (l->l_last == UINT64_MAX || s <= l->l_last + 1);
}

/* Past every lock that can matter for [s, e]: the list is sorted by start. */
static bool beyond(const struct brl_lock *l, uint64_t e)
{
	return e != UINT64_MAX && l->l_start > e + 1;
}

/* type 0: an unlock. See the top of the file. */
static enum brl_class classify(const struct brl_lock *l, enum brl_type type, uint64_t s, uint64_t e)
{
	if (type && l->l_type == type)
		return touches(l, s, e) ? CL_MERGE : CL_NONE;
	if (!overlaps(l, s, e))
		return CL_NONE;
	bool left = l->l_start < s;
	bool right = l->l_last > e;
	if (left && right)
		return CL_SPLIT;
	return left || right ? CL_TRIM : CL_COVERED;
}

static void info_of(const struct brl_lock *l, struct brl_info *out)
{
	out->offset = l->l_start;
	out->length = l->l_last == UINT64_MAX ? BRL_EOF : l->l_last - l->l_start + 1;
	out->type = l->l_type;
	out->owner = l->l_holder->h_owner;
}

/* ---- files, holders, locks (bucket locked) ------------------------------ */

static struct brl_file *file_new(struct brl_table *t, struct ftab_bucket *b, uint64_t key)
{
	struct brl_file *fp = xmalloc(sizeof(*fp));
	fp->f_key = key;
	fp->f_n = 0;
	list_init(&fp->f_locks);
	list_init(&fp->f_holders);
	ftab_file_add(&t->t_ft, b, key, fp);
	return fp;
}

/* Free fp if it has no holders left (invariant 3). */
static void file_put(struct brl_table *t, struct ftab_bucket *b, struct brl_file *fp)
{
	if (!list_empty(&fp->f_holders))
		return;
	BUG_ON(fp->f_n || !list_empty(&fp->f_locks));
	ftab_file_drop(&t->t_ft, b, fp->f_key);
	free(fp);
}

static struct brl_holder *holder_find(struct brl_file *fp, const struct brl_owner *o)
{
	struct brl_holder *h;
	list_for_each_entry (h, &fp->f_holders, h_link)
		if (owner_eq(&h->h_owner, o))
			return h;
	return NULL;
}

/* Shard of o->client locked; tc is the client's entry. */
static struct brl_holder *holder_new(struct brl_table *t, struct brl_file *fp,
				     const struct brl_owner *o, struct tally_client *tc)
{
	struct brl_holder *h = xmalloc(sizeof(*h));
	h->h_owner = *o;
	h->h_file = fp->f_key;
	h->h_fp = fp;
	h->h_n = 0;
	list_add_tail(&h->h_link, &fp->f_holders);
	list_add_tail(&h->h_client, &tc->tc_items);
	atomic_fetch_add_explicit(&t->t_holders, 1, memory_order_relaxed);
	return h;
}

/* Free h if it has no locks left; shard of its client locked. */
static void holder_put(struct brl_table *t, struct brl_holder *h)
{
	if (h->h_n)
		return;
	list_del(&h->h_link);
	list_del(&h->h_client);
	atomic_fetch_sub_explicit(&t->t_holders, 1, memory_order_relaxed);
	free(h);
}

static struct brl_lock *lock_new(struct brl_holder *h, enum brl_type type, uint64_t s, uint64_t e)
{
	struct brl_lock *l = xmalloc(sizeof(*l));
	l->l_start = s;
	l->l_last = e;
	l->l_type = type;
	l->l_holder = h;
	list_init(&l->l_link);
	return l;
}

/* Put l into the file's list at its place by start (invariant 1). */
static void lock_insert(struct brl_file *fp, struct brl_lock *l)
{
	struct list *pos = &fp->f_locks;
	struct brl_lock *it;
	list_for_each_entry (it, &fp->f_locks, l_link) {
		if (it->l_start > l->l_start) {
			pos = &it->l_link;
			break;
		}
	}
	list_insert_between(&l->l_link, pos->prev, pos);
}

static struct brl_lock *find_conflict(struct brl_file *fp, const struct brl_owner *o,
				      enum brl_type type, uint64_t s, uint64_t e)
{
	struct brl_lock *l;
	list_for_each_entry (l, &fp->f_locks, l_link) {
		if (l->l_start > e)
			break;
		if (l->l_last < s || owner_eq(&l->l_holder->h_owner, o))
			continue;
		if (type == BRL_WRITE || l->l_type == BRL_WRITE)
			return l;
	}
	return NULL;
}

/*
 * First pass: the change in h's number of locks if [s, e] is locked with
 * type (0: unlocked), and the range the new lock will cover after merges.
 * Changes nothing.
 */
static long plan(struct brl_file *fp, struct brl_holder *h, enum brl_type type, uint64_t s,
		 uint64_t e, uint64_t *ms, uint64_t *me)
{
	long delta = type ? 1 : 0;
	*ms = s;
	*me = e;
	if (!h)
		return delta;
	struct brl_lock *l;
	list_for_each_entry (l, &fp->f_locks, l_link) {
		if (beyond(l, e))
			break;
		if (l->l_holder != h)
			continue;
		switch (classify(l, type, s, e)) {
		case CL_MERGE:
			*ms = MIN(*ms, l->l_start);
			*me = MAX(*me, l->l_last);
			delta--;
			break;
		case CL_COVERED:
			delta--;
			break;
		case CL_SPLIT:
			delta++;
			break;
		case CL_TRIM:
		case CL_NONE:
			break;
		}
	}
	return delta;
}

/*
 * Second pass: apply what plan() computed. h exists; for a lock request
 * [ms, me] is the merged range. Updates h_n and f_n; cannot fail.
 */
static void apply(struct brl_file *fp, struct brl_holder *h, enum brl_type type, uint64_t s,
		  uint64_t e, uint64_t ms, uint64_t me, long delta)
{
	struct list moved = LIST_INIT(moved); /* pieces whose start changed */
	struct brl_lock *l, *tmp;
	list_for_each_entry_safe (l, tmp, &fp->f_locks, l_link) {
		if (beyond(l, e))
			break;
		if (l->l_holder != h)
			continue;
		switch (classify(l, type, s, e)) {
		case CL_MERGE:
		case CL_COVERED:
			list_del(&l->l_link);
			free(l);
			break;
		case CL_TRIM:
			if (l->l_start < s) {
				l->l_last = s - 1; /* start unchanged: stays in place */
			} else {
				l->l_start = e + 1;
				list_del(&l->l_link);
				list_add_tail(&l->l_link, &moved);
			}
			break;
		case CL_SPLIT:
			list_add_tail(&lock_new(h, l->l_type, e + 1, l->l_last)->l_link, &moved);
			l->l_last = s - 1;
			break;
		case CL_NONE:
			break;
		}
	}
	if (type)
		list_add_tail(&lock_new(h, type, ms, me)->l_link, &moved);
	list_for_each_entry_safe (l, tmp, &moved, l_link) {
		list_del(&l->l_link);
		lock_insert(fp, l);
	}
	h->h_n = (size_t)((long)h->h_n + delta);
	fp->f_n = (size_t)((long)fp->f_n + delta);
}

/*
 * Lock (type != 0) or unlock [s, e] for o on file; bucket locked. The whole
 * of brl_lock() and brl_unlock() after the argument checks.
 */
static int change(struct brl_table *t, struct ftab_bucket *b, uint64_t file,
		  const struct brl_owner *o, enum brl_type type, uint64_t s, uint64_t e,
		  struct brl_info *denied)
{
	assert_locked(&b->b_lock);
	struct brl_file *fp = ftab_file(b, file);
	struct brl_holder *h = fp ? holder_find(fp, o) : NULL;
	if (!type && !h)
		return 0; /* nothing of o's to unlock */
	if (type && fp) {
		struct brl_lock *c = find_conflict(fp, o, type, s, e);
		if (c) {
			if (denied)
				info_of(c, denied);
			counter_inc(&t->t_ft.ft_denied);
			return -EAGAIN;
		}
	}
	uint64_t ms, me;
	long delta = plan(fp, h, type, s, e, &ms, &me);

	struct tally_shard *ts = tally_lock(&t->t_ft.ft_tally, o->client);
	struct tally_client *tc;
	if (delta > 0) {
		int err = tally_charge(&t->t_ft.ft_tally, ts, o->client, (size_t)delta, &tc);
		if (err) {
			tally_unlock(ts);
			counter_inc(&t->t_ft.ft_refused);
			return err;
		}
	} else {
		tc = tally_find(ts, o->client); /* h exists, so tc does */
		BUG_ON(!tc);
	}
	if (!fp)
		fp = file_new(t, b, file);
	if (!h)
		h = holder_new(t, fp, o, tc);
	apply(fp, h, type, s, e, ms, me, delta);
	holder_put(t, h);
	if (delta < 0)
		tally_uncharge(&t->t_ft.ft_tally, ts, tc, (size_t)-delta);
	tally_unlock(ts);
	file_put(t, b, fp);
	if (type)
		counter_inc(&t->t_ft.ft_granted);
	return 0;
}

/*
 * Remove the locks on fp of client's owners (all of them, or only *o);
 * bucket locked. Returns how many went; may free fp.
 */
static size_t remove_matching(struct ftab *ft, struct ftab_bucket *b, void *file, uint64_t client,
			      const void *owner)
{
	struct brl_table *t = container_of(ft, struct brl_table, t_ft);
	struct brl_file *fp = file;
	const struct brl_owner *o = owner;
	assert_locked(&b->b_lock);
	struct tally_shard *ts = tally_lock(&t->t_ft.ft_tally, client);
	struct tally_client *tc = tally_find(ts, client);
	size_t n = 0;
	struct brl_lock *l, *ltmp;
	list_for_each_entry_safe (l, ltmp, &fp->f_locks, l_link) {
		struct brl_holder *h = l->l_holder;
		if (h->h_owner.client != client || (o && h->h_owner.owner != o->owner))
			continue;
		list_del(&l->l_link);
		free(l);
		h->h_n--;
		n++;
	}
	struct brl_holder *h, *htmp;
	list_for_each_entry_safe (h, htmp, &fp->f_holders, h_link)
		if (h->h_owner.client == client)
			holder_put(t, h);
	fp->f_n -= n;
	if (n) {
		BUG_ON(!tc);
		tally_uncharge(&t->t_ft.ft_tally, ts, tc, n);
	}
	tally_unlock(ts);
	file_put(t, b, fp);
	return n;
}

static uint64_t file_client(void *file)
{
	struct brl_file *fp = file;
	return list_first_entry(&fp->f_holders, struct brl_holder, h_link)->h_owner.client;
}

static bool item_of(const struct list *link, const void *owner, uint64_t *file)
{
	const struct brl_holder *h = list_entry(link, struct brl_holder, h_client);
	const struct brl_owner *o = owner;
	if (o && h->h_owner.owner != o->owner)
		return false;
	*file = h->h_file; /* tally.h invariant 3 */
	return true;
}

static const struct ftab_ops brl_ftab_ops = {
	.file_client = file_client,
	.item_of = item_of,
	.remove = remove_matching,
};

/* ---- the API ------------------------------------------------------------ */

void brl_config_default(struct brl_config *c)
{
	c->max_locks = 1u << 20;
	c->max_locks_per_client = 1u << 16;
	c->buckets = 1024;
}

struct brl_table *brl_create(const struct brl_config *cfg)
{
	struct brl_table *t = xcalloc(1, sizeof(*t));
	t->t_cfg = *cfg;
	ftab_init(&t->t_ft, "brl", cfg->buckets, &brl_bucket_class, cfg->max_locks,
		  cfg->max_locks_per_client);
	return t;
}

void brl_destroy(struct brl_table *t)
{
	ftab_destroy(&t->t_ft, &brl_ftab_ops);
	free(t);
}

/* The inclusive range of a lock request of type, or -EINVAL. */
static int request_of(enum brl_type type, uint64_t offset, uint64_t length, uint64_t *s,
		      uint64_t *e)
{
	if (type != BRL_READ && type != BRL_WRITE)
		return -EINVAL;
	return range_of(offset, length, s, e);
}

int brl_lock(struct brl_table *t, uint64_t file, const struct brl_owner *o, enum brl_type type,
	     uint64_t offset, uint64_t length, struct brl_info *denied)
{
	uint64_t s, e;
	int err = request_of(type, offset, length, &s, &e);
	if (err)
		return err;
	struct ftab_bucket *b = ftab_bucket(&t->t_ft, file);
	mutex_lock(&b->b_lock);
	err = change(t, b, file, o, type, s, e, denied);
	mutex_unlock(&b->b_lock);
	return err;
}

int brl_test(struct brl_table *t, uint64_t file, const struct brl_owner *o, enum brl_type type,
	     uint64_t offset, uint64_t length, struct brl_info *denied)
{
	uint64_t s, e;
	int err = request_of(type, offset, length, &s, &e);
	if (err)
		return err;
	struct ftab_bucket *b;
	struct brl_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	struct brl_lock *c = fp ? find_conflict(fp, o, type, s, e) : NULL;
	if (c) {
		if (denied)
			info_of(c, denied);
		err = -EAGAIN;
	}
	mutex_unlock(&b->b_lock);
	return err;
}

int brl_unlock(struct brl_table *t, uint64_t file, const struct brl_owner *o, uint64_t offset,
	       uint64_t length)
{
	uint64_t s, e;
	int err = range_of(offset, length, &s, &e);
	if (err)
		return err;
	struct ftab_bucket *b = ftab_bucket(&t->t_ft, file);
	mutex_lock(&b->b_lock);
	err = change(t, b, file, o, 0, s, e, NULL);
	mutex_unlock(&b->b_lock);
	return err;
}

size_t brl_release_file_owner(struct brl_table *t, uint64_t file, const struct brl_owner *o)
{
	struct ftab_bucket *b;
	size_t n = 0;
	struct brl_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	if (fp && holder_find(fp, o))
		n = remove_matching(&t->t_ft, b, fp, o->client, o);
	mutex_unlock(&b->b_lock);
	return n;
}

size_t brl_release_owner(struct brl_table *t, const struct brl_owner *o)
{
	return ftab_release(&t->t_ft, &brl_ftab_ops, o->client, o);
}

size_t brl_release_client(struct brl_table *t, uint64_t client)
{
	return ftab_release(&t->t_ft, &brl_ftab_ops, client, NULL);
}

bool brl_holds_file(struct brl_table *t, uint64_t file, const struct brl_owner *o)
{
	struct ftab_bucket *b;
	struct brl_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	bool held = fp && holder_find(fp, o);
	mutex_unlock(&b->b_lock);
	return held;
}

bool brl_holds_any(struct brl_table *t, const struct brl_owner *o)
{
	return ftab_holds_any(&t->t_ft, &brl_ftab_ops, o->client, o);
}

size_t brl_list(struct brl_table *t, uint64_t file, struct brl_info *out, size_t max)
{
	struct ftab_bucket *b;
	size_t n = 0;
	struct brl_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	if (fp) {
		struct brl_lock *l;
		list_for_each_entry (l, &fp->f_locks, l_link) {
			if (n < max)
				info_of(l, &out[n]);
			n++;
		}
	}
	mutex_unlock(&b->b_lock);
	return n;
}

size_t brl_client_locks(struct brl_table *t, uint64_t client)
{
	return tally_count(&t->t_ft.ft_tally, client);
}

void brl_counts(struct brl_table *t, struct brl_counts *c)
{
	c->locks = tally_total(&t->t_ft.ft_tally);
	c->files = atomic_load_explicit(&t->t_ft.ft_files, memory_order_relaxed);
	c->holders = atomic_load_explicit(&t->t_holders, memory_order_relaxed);
	c->clients = tally_clients(&t->t_ft.ft_tally);
	c->granted = counter_get(&t->t_ft.ft_granted);
	c->denied = counter_get(&t->t_ft.ft_denied);
	c->refused = counter_get(&t->t_ft.ft_refused);
}

void brl_stats(struct brl_table *t, const struct stat_sink *sink)
{
	struct brl_counts c;
	brl_counts(t, &c);
	stat_emit(sink, "nfs4.brl.locks", c.locks);
	stat_emit(sink, "nfs4.brl.files", c.files);
	stat_emit(sink, "nfs4.brl.holders", c.holders);
	stat_emit(sink, "nfs4.brl.clients", c.clients);
	stat_emit(sink, "nfs4.brl.granted", c.granted);
	stat_emit(sink, "nfs4.brl.denied", c.denied);
	stat_emit(sink, "nfs4.brl.refused", c.refused);
}

/* ---- brl_check ---------------------------------------------------------- */

/* What the check counted of the files walked. */
struct brl_walk {
	size_t nholders, nlocks;
};

static int check_file(void *file, uint64_t key, struct hashmap *per_client, void *arg)
{
	struct brl_file *fp = file;
	struct brl_walk *w = arg;
	if (fp->f_key != key) {
		msg_err("brl check: file %llu in the wrong bucket", (unsigned long long)fp->f_key);
		return -EUCLEAN;
	}
	size_t n = 0;
	struct brl_lock *l, *prev = NULL;
	list_for_each_entry (l, &fp->f_locks, l_link) {
		if (l->l_start > l->l_last || (prev && prev->l_start > l->l_start)) {
			msg_err("brl check: file %llu: lock [%llu, %llu] out of order (invariant "
				"1)",
				(unsigned long long)fp->f_key, (unsigned long long)l->l_start,
				(unsigned long long)l->l_last);
			return -EUCLEAN;
		}
		if (l->l_holder->h_fp != fp) {
			msg_err("brl check: file %llu: lock of another file's holder",
				(unsigned long long)fp->f_key);
			return -EUCLEAN;
		}
		prev = l;
		n++;
	}
	if (n != fp->f_n) {
		msg_err("brl check: file %llu has %zu locks, counts %zu (invariant 3)",
			(unsigned long long)fp->f_key, n, fp->f_n);
		return -EUCLEAN;
	}
	if (list_empty(&fp->f_holders)) {
		msg_err("brl check: file %llu has no holders (invariant 3)",
			(unsigned long long)fp->f_key);
		return -EUCLEAN;
	}
	struct brl_holder *h;
	list_for_each_entry (h, &fp->f_holders, h_link) {
		size_t hn = 0;
		struct brl_lock *last = NULL; /* h's previous lock in start order */
		list_for_each_entry (l, &fp->f_locks, l_link) {
			if (l->l_holder != h)
				continue;
			if (last &&
			    (last->l_last >= l->l_start ||
			     (last->l_type == l->l_type && last->l_last + 1 == l->l_start))) {
				msg_err("brl check: file %llu owner %llu/%llu: [%llu, %llu] and "
					"[%llu, %llu] not canonical (invariant 2)",
					(unsigned long long)fp->f_key,
					(unsigned long long)h->h_owner.client,
					(unsigned long long)h->h_owner.owner,
					(unsigned long long)last->l_start,
					(unsigned long long)last->l_last,
					(unsigned long long)l->l_start,
					(unsigned long long)l->l_last);
				return -EUCLEAN;
			}
			last = l;
			hn++;
		}
		if (!hn || hn != h->h_n || h->h_fp != fp || h->h_file != fp->f_key) {
			msg_err("brl check: file %llu owner %llu/%llu: %zu locks, counts %zu "
				"(invariant 3)",
				(unsigned long long)fp->f_key,
				(unsigned long long)h->h_owner.client,
				(unsigned long long)h->h_owner.owner, hn, h->h_n);
			return -EUCLEAN;
		}
		struct brl_holder *other;
		list_for_each_entry (other, &fp->f_holders, h_link) {
			if (other != h && owner_eq(&other->h_owner, &h->h_owner)) {
				msg_err("brl check: file %llu: two holders of one owner",
					(unsigned long long)fp->f_key);
				return -EUCLEAN;
			}
		}
		ftab_count(per_client, h->h_owner.client, hn);
		w->nholders++;
	}
	w->nlocks += fp->f_n;
	return 0;
}

static int check_client(struct tally_client *tc, uint64_t client, size_t cnt, void *arg)
{
	size_t items = 0, item_locks = 0;
	bool foreign = false;
	if (tc) {
		struct brl_holder *h;
		list_for_each_entry (h, &tc->tc_items, h_client) {
			items++;
			item_locks += h->h_n;
			foreign |= h->h_owner.client != client;
		}
	}
	if (!tc || tc->tc_n != cnt || item_locks != cnt || foreign) {
		msg_err("brl check: client %llu holds %zu locks, charged %zu, "
			"its %zu holders list %zu (invariant 4)",
			(unsigned long long)client, cnt, tc ? tc->tc_n : 0, items, item_locks);
		return -EUCLEAN;
	}
	return 0;
}

int brl_check(struct brl_table *t)
{
	struct hashmap per_client; /* client -> size_t locks found */
	hashmap_init(&per_client);
	struct brl_walk w = {0};
	size_t nfiles;
	int err = ftab_check_files(&t->t_ft, &per_client, check_file, &w, &nfiles);
	struct brl_counts c;
	brl_counts(t, &c);
	if (!err && (c.files != nfiles || c.holders != w.nholders || c.locks != w.nlocks ||
		     c.clients != per_client.n)) {
		msg_err("brl check: counted %zu files %zu holders %zu locks %zu clients, "
			"counters say %zu %zu %zu %zu (invariant 4)",
			nfiles, w.nholders, w.nlocks, per_client.n, c.files, c.holders, c.locks,
			c.clients);
		err = -EUCLEAN;
	}
	return ftab_check_clients(&t->t_ft, &per_client, err, check_client, NULL);
}
