/*
 * stid.c - wire stateids to state, the (owner, file) payload tables and
 * the courteous server's retry (see stid.h).
 */
#include "nfs4/stid.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/mem.h"
#include "base/msg.h"
#include "nfs4/nfs4_priv.h"

/* ---- wire stateids ---- */

void nfs4_sid_from_wire(const struct stateid4 *w, struct nfs4_stateid *sid)
{
	sid->seqid = w->seqid;
	memcpy(sid->other, w->other, NFS4_OTHER_SIZE);
}

void nfs4_sid_to_wire(const struct nfs4_stateid *sid, struct stateid4 *w)
{
	w->seqid = sid->seqid;
	memcpy(w->other, sid->other, NFS4_OTHER_SIZE);
}

uint32_t nfs4_sid_resolve(struct nfs4_compound *c, const struct stateid4 *w,
			  struct nfs4_stateid *sid)
{
	nfs4_sid_from_wire(w, sid);
	if (nfs4_stateid_special(sid) != NFS4_STATEID_CURRENT)
		return NFS4_OK;
	if (!c->have_cur_sid)
		return NFS4ERR_BAD_STATEID;
	*sid = c->cur_sid;
	return NFS4_OK;
}

void nfs4_set_cur_sid(struct nfs4_compound *c, const struct nfs4_stateid *sid)
{
	c->cur_sid = *sid;
	c->have_cur_sid = true;
}

uint32_t nfs4_stid_lookup(struct nfs4_compound *c, const struct stateid4 *w, unsigned types,
			  struct nfs4_stid **out)
{
	struct nfs4_stateid sid;
	uint32_t st = nfs4_sid_resolve(c, w, &sid);
	if (st)
		return st;
	if (nfs4_stateid_special(&sid) != NFS4_STATEID_NORMAL)
		return NFS4ERR_BAD_STATEID;
	st = nfs4_stid_find(c->clp, &sid, types, out);
	if (st != NFS4ERR_OLD_STATEID || !(types & NFS4_STID_LAYOUT))
		return st;
	/* the layout seqid rule (stid.h) */
	struct nfs4_stateid any = sid;
	any.seqid = 0; /* matches any seqid: found now if it is a layout's */
	if (nfs4_stid_find(c->clp, &any, NFS4_STID_LAYOUT, out))
		return st;
	return NFS4_OK;
}

uint32_t nfs4_stid_of(struct nfs4_compound *c, const struct stateid4 *w, unsigned types,
		      struct nfs4_stid **out)
{
	uint32_t st = nfs4_stid_lookup(c, w, types, out);
	if (st)
		return st;
	const struct nfs4_payload *pl = nfs4_stid_payload(*out);
	if (c->cfh.kind != NFS4_FH_FS || pl->pl_file != fs_ino(c->cfh.ip)) {
		nfs4_stid_put(*out);
		*out = NULL;
		return NFS4ERR_BAD_STATEID;
	}
	return NFS4_OK;
}

/* ---- the (owner, file) tables ---- */

struct pl_bucket {
	struct mutex *lock; /* its own (locks[i]) or the table's one */
	struct nfs4_payload *head;
};

struct nfs4_pltable {
	unsigned nbuckets;
	struct pl_bucket *b;
	struct mutex *locks; /* a lock a bucket; NULL: one lock of the owner's */
	const struct nfs4_payload_ops *ops;
};

struct nfs4_pltable *nfs4_pltable_create(unsigned buckets, struct lock_class *cls,
					 struct mutex *one, const struct nfs4_payload_ops *ops)
{
	BUG_ON(!buckets || (buckets & (buckets - 1)) || (!cls == !one));
	BUG_ON(ops->size < sizeof(struct nfs4_payload));
	struct nfs4_pltable *t = xcalloc(1, sizeof(*t));
	t->nbuckets = buckets;
	t->ops = ops;
	t->b = xcalloc(buckets, sizeof(*t->b));
	if (!one)
		t->locks = xcalloc(buckets, sizeof(*t->locks));
	for (unsigned i = 0; i < buckets; i++) {
		if (one) {
			t->b[i].lock = one;
		} else {
			mutex_init(&t->locks[i], cls);
			t->b[i].lock = &t->locks[i];
		}
	}
	return t;
}

void nfs4_pltable_destroy(struct nfs4_pltable *t)
{
	if (t->locks)
		for (unsigned i = 0; i < t->nbuckets; i++)
			mutex_destroy(&t->locks[i]);
	free(t->locks);
	free(t->b);
	free(t);
}

static struct pl_bucket *bucket_of(struct nfs4_pltable *t, const struct nfs4_payload *key)
{
	uint64_t h = hash64_pair(key->pl_client ^ key->pl_owner, key->pl_file);
	return &t->b[h & (t->nbuckets - 1)];
}

static bool same_key(const struct nfs4_payload *a, const struct nfs4_payload *b)
{
	return a->pl_file == b->pl_file && a->pl_owner == b->pl_owner &&
	       a->pl_client == b->pl_client;
}

static struct nfs4_payload *find_locked(struct pl_bucket *b, const struct nfs4_payload *key)
{
	assert_locked(b->lock);
	for (struct nfs4_payload *pl = b->head; pl; pl = pl->pl_next)
		if (same_key(pl, key))
			return pl;
	return NULL;
}

/* A new payload of key with its stateid, or NULL and *st (bucket locked). */
static struct nfs4_payload *make_locked(struct nfs4_pltable *t, struct nfs4_client *clp,
					const struct nfs4_payload *key, void *arg, uint32_t *st)
{
	const struct nfs4_payload_ops *ops = t->ops;
	struct nfs4_payload *pl = xcalloc(1, ops->size);
	*pl = *key;
	pl->pl_next = NULL;
	ops->init(pl, arg);
	/* the payload pointer is its header's: it comes first */
	if ((*st = nfs4_stid_alloc(clp, ops->type, pl, &pl->pl_stid))) {
		if (ops->fini)
			ops->fini(pl);
		free(pl);
		return NULL;
	}
	if (ops->made)
		ops->made(pl, arg);
	return pl;
}

uint32_t nfs4_pltable_get(struct nfs4_pltable *t, struct nfs4_client *clp,
			  const struct nfs4_payload *key, void *arg, struct nfs4_payload **out,
			  bool *fresh)
{
	struct pl_bucket *b = bucket_of(t, key);
	uint32_t st = NFS4_OK;
	mutex_lock(b->lock);
	struct nfs4_payload *pl = find_locked(b, key);
	*fresh = !pl;
	if (pl) {
		/* one going (CLOSE, FREE_STATEID, LAYOUTRETURN, its client
		 * leaving) whose release has not unlinked it yet: a new one
		 * now would lose its state to that release (same key); the
		 * client comes back (stateid.h invariant 6) */
		if (!nfs4_stid_tryget(pl->pl_stid)) {
			pl = NULL;
			st = NFS4ERR_DELAY;
		}
	} else if ((pl = make_locked(t, clp, key, arg, &st))) {
		pl->pl_next = b->head;
		b->head = pl;
	}
	mutex_unlock(b->lock);
	*out = pl;
	return st;
}

static void unlink_locked(struct pl_bucket *b, struct nfs4_payload *pl)
{
	assert_locked(b->lock);
	for (struct nfs4_payload **pp = &b->head; *pp; pp = &(*pp)->pl_next) {
		if (*pp == pl) {
			*pp = pl->pl_next;
			break;
		}
	}
	pl->pl_next = NULL;
}

void nfs4_pltable_remove(struct nfs4_pltable *t, struct nfs4_payload *pl)
{
	struct pl_bucket *b = bucket_of(t, pl);
	mutex_lock(b->lock);
	unlink_locked(b, pl);
	mutex_unlock(b->lock);
}

struct nfs4_payload *nfs4_pltable_find_locked(struct nfs4_pltable *t,
					      const struct nfs4_payload *key)
{
	return find_locked(bucket_of(t, key), key);
}

void nfs4_pltable_unlink_locked(struct nfs4_pltable *t, struct nfs4_payload *pl)
{
	unlink_locked(bucket_of(t, pl), pl);
}

struct nfs4_payload *nfs4_pltable_next_locked(struct nfs4_pltable *t, struct nfs4_payload *pl)
{
	BUG_ON(t->locks); /* one lock: the walker holds every bucket's */
	unsigned i = 0;
	if (pl) {
		if (pl->pl_next)
			return pl->pl_next;
		i = (unsigned)(bucket_of(t, pl) - t->b) + 1;
	}
	for (; i < t->nbuckets; i++) {
		assert_locked(t->b[i].lock);
		if (t->b[i].head)
			return t->b[i].head;
	}
	return NULL;
}

/* ---- the courteous server ---- */

bool nfs4_courtesy_retry(struct nfs4_compound *c, uint32_t *st, uint32_t denied,
			 uint64_t conflict_client, uint64_t own_client, unsigned *tries)
{
	/* expiring a client takes state locks: the caller holds none */
	uint64_t seq = 0;
	if (*st != denied || conflict_client == own_client ||
	    !nfs4_client_expire_if_courtesy(c->s->state, conflict_client, &seq))
		return false;
	nfs4_note_change(c, seq, false);
	if ((*tries)++ == 3) {
		*st = NFS4ERR_DELAY;
		return false;
	}
	return true;
}
