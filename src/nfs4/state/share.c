/*
 * share.c - OPEN share reservations (see share.h).
 *
 * The pairs an owner opened a file with are a 12-bit set, bit
 * (access - 1) * 4 + deny for access 1-3 and deny 0-3. Linux's nfsd keeps two
 * 4-bit sets instead, one for access and one for deny values, and lets a
 * downgrade pick each side on its own; keeping pairs lets OPEN_DOWNGRADE
 * return exactly to states that some of the OPENs in effect add up to.
 */
#include "nfs4/state/share.h"

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

static struct lock_class share_bucket_class = LOCK_CLASS(NFS4_SHARE_BUCKET);

struct share_open {
	struct share_owner o_owner;
	uint64_t o_file; /* the file's key; read under the shard lock (tally.h, 3) */
	struct share_file *o_fp;
	struct list o_link;   /* f_opens */
	struct list o_client; /* the client's tc_items */
	uint8_t o_access;
	uint8_t o_deny;
	uint16_t o_pairs; /* (access, deny) pairs opened with, see above */
};

struct share_file {
	uint64_t f_key;
	struct list f_opens;
};

/* Files (struct share_file) in the buckets of the skeleton (ftab.h); an
 * open is the item its client's tally entry lists. */
struct share_table {
	struct share_config t_cfg;
	struct ftab t_ft;
};

static bool owner_eq(const struct share_owner *a, const struct share_owner *b)
{
	return a->client == b->client && a->owner == b->owner;
}

static bool access_ok(unsigned access)
{
	return access >= SHARE_ACCESS_READ && access <= SHARE_ACCESS_BOTH;
}

static bool deny_ok(unsigned deny)
{
	return deny <= SHARE_DENY_BOTH;
}

static uint16_t pair_bit(unsigned access, unsigned deny)
{
	return (uint16_t)(1u << ((access - 1) * 4 + deny));
}

/*
 * The union of the pairs in set that lie within (access, deny), in ua and
 * ud; false if there are none.
 */
static bool pairs_union_within(uint16_t set, unsigned access, unsigned deny, unsigned *ua,
			       unsigned *ud)
{
	bool any = false;
	*ua = 0;
	*ud = 0;
	for (unsigned a = SHARE_ACCESS_READ; a <= SHARE_ACCESS_BOTH; a++) {
		for (unsigned d = SHARE_DENY_NONE; d <= SHARE_DENY_BOTH; d++) {
			if (!(set & pair_bit(a, d)) || (a & ~access) || (d & ~deny))
				continue;
			*ua |= a;
			*ud |= d;
			any = true;
		}
	}
	return any;
}

/* Only the pairs within (access, deny). */
static uint16_t pairs_within(uint16_t set, unsigned access, unsigned deny)
{
	uint16_t out = 0;
	for (unsigned a = SHARE_ACCESS_READ; a <= SHARE_ACCESS_BOTH; a++)
		for (unsigned d = SHARE_DENY_NONE; d <= SHARE_DENY_BOTH; d++)
			if ((set & pair_bit(a, d)) && !(a & ~access) && !(d & ~deny))
				out |= pair_bit(a, d);
	return out;
}

static void info_of(const struct share_open *op, struct share_info *out)
{
	out->owner = op->o_owner;
	out->access = op->o_access;
	out->deny = op->o_deny;
}

/* ---- files and opens (bucket locked) ------------------------------------ */

static struct share_open *open_find(struct share_file *fp, const struct share_owner *o)
{
	struct share_open *op;
	list_for_each_entry (op, &fp->f_opens, o_link)
		if (owner_eq(&op->o_owner, o))
			return op;
	return NULL;
}

/* The first open of another owner than o (NULL: of anyone) that conflicts
 * with (access, deny). */
static struct share_open *find_conflict(struct share_file *fp, const struct share_owner *o,
					unsigned access, unsigned deny)
{
	struct share_open *op;
	list_for_each_entry (op, &fp->f_opens, o_link) {
		if (o && owner_eq(&op->o_owner, o))
			continue;
		if ((access & op->o_deny) || (deny & op->o_access))
			return op;
	}
	return NULL;
}

/* Unlink and free op; shard of its client locked, tc its entry. */
static void open_free(struct share_table *t, struct tally_shard *ts, struct tally_client *tc,
		      struct share_open *op)
{
	assert_locked(&ts->ts_lock);
	list_del(&op->o_link);
	list_del(&op->o_client);
	free(op);
	tally_uncharge(&t->t_ft.ft_tally, ts, tc, 1);
}

/* Free fp if it has no opens left (invariant 3). */
static void file_put(struct share_table *t, struct ftab_bucket *b, struct share_file *fp)
{
	if (!list_empty(&fp->f_opens))
		return;
	ftab_file_drop(&t->t_ft, b, fp->f_key);
	free(fp);
}

/* Remove the opens on fp of client (all, or only o's); bucket locked.
 * Returns how many went; may free fp. */
static size_t remove_matching(struct ftab *ft, struct ftab_bucket *b, void *file, uint64_t client,
			      const void *owner)
{
	struct share_table *t = container_of(ft, struct share_table, t_ft);
	struct share_file *fp = file;
	const struct share_owner *o = owner;
	assert_locked(&b->b_lock);
	struct tally_shard *ts = tally_lock(&t->t_ft.ft_tally, client);
	struct tally_client *tc = tally_find(ts, client);
	size_t n = 0;
	struct share_open *op, *tmp;
	list_for_each_entry_safe (op, tmp, &fp->f_opens, o_link) {
		if (op->o_owner.client == client && (!o || op->o_owner.owner == o->owner)) {
			open_free(t, ts, tc, op);
			n++;
		}
	}
	tally_unlock(ts);
	file_put(t, b, fp);
	return n;
}

static uint64_t file_client(void *file)
{
	struct share_file *fp = file;
	return list_first_entry(&fp->f_opens, struct share_open, o_link)->o_owner.client;
}

static bool item_of(const struct list *link, const void *owner, uint64_t *file)
{
	const struct share_open *op = list_entry(link, struct share_open, o_client);
	const struct share_owner *o = owner;
	if (o && op->o_owner.owner != o->owner)
		return false;
	*file = op->o_file; /* tally.h invariant 3 */
	return true;
}

static const struct ftab_ops share_ftab_ops = {
	.file_client = file_client,
	.item_of = item_of,
	.remove = remove_matching,
};

/* ---- the API ------------------------------------------------------------ */

void share_config_default(struct share_config *c)
{
	c->max_opens = 1u << 20;
	c->max_opens_per_client = 1u << 16;
	c->buckets = 1024;
}

struct share_table *share_create(const struct share_config *cfg)
{
	struct share_table *t = xcalloc(1, sizeof(*t));
	t->t_cfg = *cfg;
	ftab_init(&t->t_ft, "share", cfg->buckets, &share_bucket_class, cfg->max_opens,
		  cfg->max_opens_per_client);
	return t;
}

void share_destroy(struct share_table *t)
{
	ftab_destroy(&t->t_ft, &share_ftab_ops);
	free(t);
}

int share_open(struct share_table *t, uint64_t file, const struct share_owner *o, unsigned access,
	       unsigned deny, struct share_info *conflict)
{
	return share_open_undoable(t, file, o, access, deny, conflict, NULL);
}

int share_open_undoable(struct share_table *t, uint64_t file, const struct share_owner *o,
			unsigned access, unsigned deny, struct share_info *conflict,
			struct share_undo *undo)
{
	if (!access_ok(access) || !deny_ok(deny))
		return -EINVAL;
	struct ftab_bucket *b;
	int err = 0;
	struct share_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	struct share_open *op = fp ? open_find(fp, o) : NULL;
	if (undo)
		*undo = (struct share_undo){.access = access,
					    .deny = deny,
					    .had_pair =
						    op && (op->o_pairs & pair_bit(access, deny))};
	unsigned na = access | (op ? op->o_access : 0);
	unsigned nd = deny | (op ? op->o_deny : 0);
	struct share_open *c = fp ? find_conflict(fp, o, na, nd) : NULL;
	if (c) {
		if (conflict)
			info_of(c, conflict);
		counter_inc(&t->t_ft.ft_denied);
		err = -EAGAIN;
		goto out_unlock;
	}
	if (!op) {
		struct tally_shard *ts = tally_lock(&t->t_ft.ft_tally, o->client);
		struct tally_client *tc;
		err = tally_charge(&t->t_ft.ft_tally, ts, o->client, 1, &tc);
		if (err) {
			tally_unlock(ts);
			counter_inc(&t->t_ft.ft_refused);
			goto out_unlock;
		}
		if (!fp) {
			fp = xmalloc(sizeof(*fp));
			fp->f_key = file;
			list_init(&fp->f_opens);
			ftab_file_add(&t->t_ft, b, file, fp);
		}
		op = xcalloc(1, sizeof(*op));
		op->o_owner = *o;
		op->o_file = file;
		op->o_fp = fp;
		list_add_tail(&op->o_link, &fp->f_opens);
		list_add_tail(&op->o_client, &tc->tc_items);
		tally_unlock(ts);
	}
	op->o_access = (uint8_t)na;
	op->o_deny = (uint8_t)nd;
	op->o_pairs |= pair_bit(access, deny);
	counter_inc(&t->t_ft.ft_granted);
out_unlock:
	mutex_unlock(&b->b_lock);
	return err;
}

int share_downgrade(struct share_table *t, uint64_t file, const struct share_owner *o,
		    unsigned access, unsigned deny)
{
	if (!access_ok(access) || !deny_ok(deny))
		return -EINVAL;
	struct ftab_bucket *b;
	int err = 0;
	struct share_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	struct share_open *op = fp ? open_find(fp, o) : NULL;
	unsigned ua, ud;
	if (!op) {
		err = -ENOENT;
	} else if (!pairs_union_within(op->o_pairs, access, deny, &ua, &ud) || ua != access ||
		   ud != deny) {
		err = -EINVAL;
	} else {
		/* fewer bits than before: nobody else's open can conflict now */
		op->o_access = (uint8_t)access;
		op->o_deny = (uint8_t)deny;
		op->o_pairs = pairs_within(op->o_pairs, access, deny);
	}
	mutex_unlock(&b->b_lock);
	return err;
}

int share_undo(struct share_table *t, uint64_t file, const struct share_owner *o,
	       const struct share_undo *u)
{
	struct ftab_bucket *b;
	int err = -ENOENT;
	struct share_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	struct share_open *op = fp ? open_find(fp, o) : NULL;
	if (op && !u->had_pair) {
		/* the pair was this OPEN's alone: the bits of the others */
		op->o_pairs &= (uint16_t)~pair_bit(u->access, u->deny);
		unsigned ua, ud;
		if (pairs_union_within(op->o_pairs, SHARE_ACCESS_BOTH, SHARE_DENY_BOTH, &ua, &ud)) {
			op->o_access = (uint8_t)ua;
			op->o_deny = (uint8_t)ud;
		} else {
			struct tally_shard *ts = tally_lock(&t->t_ft.ft_tally, o->client);
			open_free(t, ts, tally_find(ts, o->client), op);
			tally_unlock(ts);
			file_put(t, b, fp);
		}
	}
	if (op)
		err = 0;
	mutex_unlock(&b->b_lock);
	return err;
}

int share_close(struct share_table *t, uint64_t file, const struct share_owner *o)
{
	struct ftab_bucket *b;
	int err = -ENOENT;
	struct share_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	struct share_open *op = fp ? open_find(fp, o) : NULL;
	if (op) {
		struct tally_shard *ts = tally_lock(&t->t_ft.ft_tally, o->client);
		open_free(t, ts, tally_find(ts, o->client), op);
		tally_unlock(ts);
		file_put(t, b, fp);
		err = 0;
	}
	mutex_unlock(&b->b_lock);
	return err;
}

int share_get(struct share_table *t, uint64_t file, const struct share_owner *o, unsigned *access,
	      unsigned *deny)
{
	struct ftab_bucket *b;
	int err = -ENOENT;
	struct share_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	struct share_open *op = fp ? open_find(fp, o) : NULL;
	if (op) {
		if (access)
			*access = op->o_access;
		if (deny)
			*deny = op->o_deny;
		err = 0;
	}
	mutex_unlock(&b->b_lock);
	return err;
}

unsigned share_client_access(struct share_table *t, uint64_t file, uint64_t client)
{
	struct ftab_bucket *b;
	unsigned access = 0;
	struct share_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	if (fp) {
		struct share_open *op;
		list_for_each_entry (op, &fp->f_opens, o_link)
			if (op->o_owner.client == client)
				access |= op->o_access;
	}
	mutex_unlock(&b->b_lock);
	return access;
}

int share_check(struct share_table *t, uint64_t file, const struct share_owner *o, unsigned access,
		struct share_info *conflict)
{
	if (!access_ok(access))
		return -EINVAL;
	struct ftab_bucket *b;
	int err = 0;
	struct share_file *fp = ftab_lock_file(&t->t_ft, file, &b);
	struct share_open *c = fp ? find_conflict(fp, o, access, SHARE_DENY_NONE) : NULL;
	if (c) {
		if (conflict)
			info_of(c, conflict);
		err = -EAGAIN;
	}
	mutex_unlock(&b->b_lock);
	return err;
}

size_t share_release_client(struct share_table *t, uint64_t client)
{
	return ftab_release(&t->t_ft, &share_ftab_ops, client, NULL);
}

size_t share_release_owner(struct share_table *t, const struct share_owner *o)
{
	return ftab_release(&t->t_ft, &share_ftab_ops, o->client, o);
}

bool share_holds_any(struct share_table *t, const struct share_owner *o)
{
	return ftab_holds_any(&t->t_ft, &share_ftab_ops, o->client, o);
}

size_t share_client_opens(struct share_table *t, uint64_t client)
{
	return tally_count(&t->t_ft.ft_tally, client);
}

void share_counts(struct share_table *t, struct share_counts *c)
{
	c->opens = tally_total(&t->t_ft.ft_tally);
	c->files = atomic_load_explicit(&t->t_ft.ft_files, memory_order_relaxed);
	c->clients = tally_clients(&t->t_ft.ft_tally);
	c->granted = counter_get(&t->t_ft.ft_granted);
	c->denied = counter_get(&t->t_ft.ft_denied);
	c->refused = counter_get(&t->t_ft.ft_refused);
}

void share_stats(struct share_table *t, const struct stat_sink *sink)
{
	struct share_counts c;
	share_counts(t, &c);
	stat_emit(sink, "nfs4.share.opens", c.opens);
	stat_emit(sink, "nfs4.share.files", c.files);
	stat_emit(sink, "nfs4.share.clients", c.clients);
	stat_emit(sink, "nfs4.share.granted", c.granted);
	stat_emit(sink, "nfs4.share.denied", c.denied);
	stat_emit(sink, "nfs4.share.refused", c.refused);
}

/* ---- share_check_all ---------------------------------------------------- */

static int check_file(void *file, uint64_t key, struct hashmap *per_client, void *arg)
{
	struct share_file *fp = file;
	size_t *nopens = arg;
	if (fp->f_key != key) {
		msg_err("share check: file %llu in the wrong bucket", (unsigned long long)fp->f_key);
		return -EUCLEAN;
	}
	if (list_empty(&fp->f_opens)) {
		msg_err("share check: file %llu has no opens (invariant 3)",
			(unsigned long long)fp->f_key);
		return -EUCLEAN;
	}
	struct share_open *op, *other;
	list_for_each_entry (op, &fp->f_opens, o_link) {
		unsigned ua, ud;
		if (!access_ok(op->o_access) || !deny_ok(op->o_deny) ||
		    !pairs_union_within(op->o_pairs, op->o_access, op->o_deny, &ua, &ud) ||
		    ua != op->o_access || ud != op->o_deny ||
		    pairs_within(op->o_pairs, op->o_access, op->o_deny) != op->o_pairs) {
			msg_err("share check: file %llu owner %llu/%llu: bits %u/%u pairs %#x "
				"(invariant 1)",
				(unsigned long long)fp->f_key,
				(unsigned long long)op->o_owner.client,
				(unsigned long long)op->o_owner.owner, op->o_access, op->o_deny,
				op->o_pairs);
			return -EUCLEAN;
		}
		if (op->o_fp != fp || op->o_file != fp->f_key) {
			msg_err("share check: file %llu: open of another file",
				(unsigned long long)fp->f_key);
			return -EUCLEAN;
		}
		list_for_each_entry (other, &fp->f_opens, o_link) {
			if (other == op)
				continue;
			if (owner_eq(&other->o_owner, &op->o_owner) ||
			    (op->o_access & other->o_deny) || (op->o_deny & other->o_access)) {
				msg_err("share check: file %llu: opens of %llu/%llu and %llu/%llu "
					"conflict (invariant 2)",
					(unsigned long long)fp->f_key,
					(unsigned long long)op->o_owner.client,
					(unsigned long long)op->o_owner.owner,
					(unsigned long long)other->o_owner.client,
					(unsigned long long)other->o_owner.owner);
				return -EUCLEAN;
			}
		}
		ftab_count(per_client, op->o_owner.client, 1);
		(*nopens)++;
	}
	return 0;
}

static int check_client(struct tally_client *tc, uint64_t client, size_t cnt, void *arg)
{
	size_t items = 0;
	bool foreign = false;
	if (tc) {
		struct share_open *op;
		list_for_each_entry (op, &tc->tc_items, o_client) {
			items++;
			foreign |= op->o_owner.client != client;
		}
	}
	if (!tc || tc->tc_n != cnt || items != cnt || foreign) {
		msg_err("share check: client %llu has %zu opens, charged %zu, "
			"listed %zu (invariant 3)",
			(unsigned long long)client, cnt, tc ? tc->tc_n : 0, items);
		return -EUCLEAN;
	}
	return 0;
}

int share_check_all(struct share_table *t)
{
	struct hashmap per_client; /* client -> size_t opens found */
	hashmap_init(&per_client);
	size_t nfiles, nopens = 0;
	int err = ftab_check_files(&t->t_ft, &per_client, check_file, &nopens, &nfiles);
	struct share_counts c;
	share_counts(t, &c);
	if (!err && (c.files != nfiles || c.opens != nopens || c.clients != per_client.n)) {
		msg_err("share check: counted %zu files %zu opens %zu clients, counters say "
			"%zu %zu %zu (invariant 3)",
			nfiles, nopens, per_client.n, c.files, c.opens, c.clients);
		err = -EUCLEAN;
	}
	return ftab_check_clients(&t->t_ft, &per_client, err, check_client, NULL);
}
