/*
 * stateid.c - the per-client stateid table.
 *
 * Entries live in their client: a hash map from the counter in other[8..11]
 * and a list, both under the client lock. Each entry holds a reference on
 * its client, so the client outlives every entry; the table holds one
 * reference on each hashed entry, and every lookup adds one (stateid.h
 * invariant 1). The last put releases the payload through cfg.stid_ops
 * with no lock held (invariant 2).
 *
 * Seqid comparisons are modular, so a stateid that wrapped past 2^32
 * changes still compares right: a seqid "ahead" of the entry's is
 * BAD_STATEID (the client cannot know a future value), "behind" is
 * OLD_STATEID.
 */
#include "nfs4/state/stateid.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"
#include "nfs4/state/state_priv.h"

#ifdef JNFS_LOCKDEP
/* Ranks: stateid.h. Two at once: an open's (or a delegation's or layout's)
 * operations lock, then a lock stateid's; the checker asks this. */
static const char *stid_order(const void *held, const void *want)
{
	const struct nfs4_stid *h = container_of(held, struct nfs4_stid, sd_op_lock);
	const struct nfs4_stid *w = container_of(want, struct nfs4_stid, sd_op_lock);
	if (h->sd_type != NFS4_STID_LOCK && w->sd_type == NFS4_STID_LOCK)
		return NULL;
	return "two stateids: an open (delegation, layout) stateid's first, then a lock "
	       "stateid's";
}
#define STID_ORDER stid_order
#else
#define STID_ORDER NULL
#endif
static struct lock_class stid_op_class = LOCK_CLASS_ORDERED(NFS4_STID, STID_ORDER);

enum nfs4_stateid_kind nfs4_stateid_special(const struct nfs4_stateid *sid)
{
	bool zeros = true, ones = true;
	for (int i = 0; i < NFS4_OTHER_SIZE; i++) {
		zeros &= sid->other[i] == 0;
		ones &= sid->other[i] == 0xff;
	}
	if (zeros) {
		if (sid->seqid == 0)
			return NFS4_STATEID_ANONYMOUS;
		if (sid->seqid == 1)
			return NFS4_STATEID_CURRENT;
		return NFS4_STATEID_INVALID;
	}
	if (ones)
		return sid->seqid == UINT32_MAX ? NFS4_STATEID_BYPASS : NFS4_STATEID_INVALID;
	return NFS4_STATEID_NORMAL;
}

static uint32_t revoked_status(enum nfs4_revoke_reason why)
{
	switch (why) {
	case NFS4_REVOKE_EXPIRED:
		return NFS4ERR_EXPIRED;
	case NFS4_REVOKE_ADMIN:
		return NFS4ERR_ADMIN_REVOKED;
	case NFS4_REVOKE_RECALL:
		return NFS4ERR_DELEG_REVOKED;
	}
	return NFS4ERR_BAD_STATEID;
}

static uint32_t seqid_status(uint32_t asked, uint32_t cur)
{
	if (asked == 0 || asked == cur)
		return NFS4_OK; /* 0: "the current one" (RFC 8881 §8.2.2) */
	return (int32_t)(asked - cur) > 0 ? NFS4ERR_BAD_STATEID : NFS4ERR_OLD_STATEID;
}

/*
 * The entry sid names in clp, or NULL with *status saying why. stale is
 * what another boot epoch answers. clp->cl_lock held.
 */
static struct nfs4_stid *lookup_locked(struct nfs4_client *clp, const struct nfs4_stateid *sid,
				       uint32_t stale, uint32_t *status)
{
	assert_locked(&clp->cl_lock);
	struct nfs4_state *st = clp->cl_st;
	*status = NFS4ERR_BAD_STATEID;
	if (nfs4_stateid_special(sid) != NFS4_STATEID_NORMAL)
		return NULL;
	if (nfs4_get_be32(sid->other) != st->cfg.boot_epoch) {
		*status = stale;
		return NULL;
	}
	if (nfs4_get_be32(sid->other + 4) != (uint32_t)clp->cl_id)
		return NULL;
	struct nfs4_stid *sd = hashmap_get(&clp->cl_stids, nfs4_get_be32(sid->other + 8));
	if (sd)
		*status = NFS4_OK;
	return sd;
}

uint32_t nfs4_stid_alloc(struct nfs4_client *clp, unsigned type, void *payload,
			 struct nfs4_stid **out)
{
	struct nfs4_state *st = clp->cl_st;
	*out = NULL;
	BUG_ON(type == 0 || (type & (type - 1)) || (type & ~NFS4_STID_ANY));
	mutex_lock(&clp->cl_lock);
	if (clp->cl_status == NFS4_CL_EXPIRED) {
		mutex_unlock(&clp->cl_lock);
		return NFS4ERR_EXPIRED;
	}
	if (clp->cl_nstids >= st->cfg.max_stateids_per_client) {
		mutex_unlock(&clp->cl_lock);
		return NFS4ERR_DELAY;
	}
	if (atomic_fetch_add(&st->nstids, 1) >= st->cfg.max_stateids) {
		atomic_fetch_sub(&st->nstids, 1);
		mutex_unlock(&clp->cl_lock);
		return NFS4ERR_DELAY;
	}
	struct nfs4_stid *sd = xcalloc(1, sizeof(*sd));
	sd->sd_st = st;
	atomic_init(&sd->sd_refs, 2); /* the table's and the caller's */
	sd->sd_type = type;
	sd->sd_clientid = clp->cl_id;
	nfs4_client_get(clp);
	sd->sd_client = clp;
	sd->sd_seqid = 1;
	sd->sd_hashed = true;
	sd->sd_payload = payload;
	mutex_init(&sd->sd_op_lock, &stid_op_class);
	/* fewer live entries than 2^32: a free value is always found */
	uint32_t key;
	do
		key = clp->cl_stid_next++;
	while (key == 0 || hashmap_get(&clp->cl_stids, key));
	sd->sd_key = key;
	hashmap_put(&clp->cl_stids, key, sd);
	list_add_tail(&sd->sd_link, &clp->cl_stid_list);
	clp->cl_nstids++;
	mutex_unlock(&clp->cl_lock);
	*out = sd;
	return NFS4_OK;
}

uint32_t nfs4_stid_find(struct nfs4_client *clp, const struct nfs4_stateid *sid, unsigned types,
			struct nfs4_stid **out)
{
	uint32_t status;
	*out = NULL;
	mutex_lock(&clp->cl_lock);
	struct nfs4_stid *sd = lookup_locked(clp, sid, NFS4ERR_STALE_STATEID, &status);
	if (!sd)
		goto out;
	status = NFS4ERR_BAD_STATEID;
	if (!(sd->sd_type & types))
		goto out;
	if (sd->sd_revoked) {
		status = revoked_status(sd->sd_why);
		goto out;
	}
	status = seqid_status(sid->seqid, sd->sd_seqid);
	if (status == NFS4_OK) {
		nfs4_stid_get(sd);
		*out = sd;
	}
out:
	mutex_unlock(&clp->cl_lock);
	return status;
}

void nfs4_stid_get(struct nfs4_stid *s)
{
	atomic_fetch_add(&s->sd_refs, 1);
}

bool nfs4_stid_tryget(struct nfs4_stid *s)
{
	struct nfs4_client *clp = s->sd_client;
	bool ok = false;
	mutex_lock(&clp->cl_lock);
	if (s->sd_hashed && !s->sd_revoked) {
		/* hashed: the table's reference is there, refs > 0 */
		atomic_fetch_add(&s->sd_refs, 1);
		ok = true;
	}
	mutex_unlock(&clp->cl_lock);
	return ok;
}

/* A revoked entry's payload goes once only the table's reference is left:
 * no operation is using it (invariant 2). */
static void release_revoked(struct nfs4_stid *s)
{
	struct nfs4_client *clp = s->sd_client;
	struct nfs4_state *st = s->sd_st;
	void *payload = NULL;
	mutex_lock(&clp->cl_lock);
	if (atomic_load(&s->sd_release_pending) && s->sd_hashed && atomic_load(&s->sd_refs) == 1) {
		atomic_store(&s->sd_release_pending, false);
		payload = s->sd_payload;
		s->sd_payload = NULL;
	}
	mutex_unlock(&clp->cl_lock);
	const struct nfs4_stid_ops *ops = st->cfg.stid_ops;
	if (payload && ops && ops->release)
		ops->release(st->cfg.stid_arg, s->sd_type, payload);
}

void nfs4_stid_put(struct nfs4_stid *s)
{
	assert_none_held(LOCK_RANK_NFS4_CLIENTS, LOCK_RANK_NFS4_CLIENT); /* no state lock */
	unsigned old = atomic_fetch_sub(&s->sd_refs, 1);
	if (old == 2 && atomic_load(&s->sd_release_pending))
		release_revoked(s); /* the last holder of a revoked entry */
	if (old != 1)
		return;
	struct nfs4_state *st = s->sd_st;
	BUG_ON(s->sd_hashed);
	const struct nfs4_stid_ops *ops = st->cfg.stid_ops;
	if (s->sd_payload && ops && ops->release)
		ops->release(st->cfg.stid_arg, s->sd_type, s->sd_payload);
	atomic_fetch_sub(&st->nstids, 1);
	nfs4_client_put(s->sd_client);
	mutex_destroy(&s->sd_op_lock);
	free(s);
}

unsigned nfs4_stid_type(const struct nfs4_stid *s)
{
	return s->sd_type;
}

void *nfs4_stid_payload(const struct nfs4_stid *s)
{
	return s->sd_payload;
}

uint64_t nfs4_stid_clientid(const struct nfs4_stid *s)
{
	return s->sd_clientid;
}

void nfs4_stid_lock(struct nfs4_stid *s)
{
	mutex_lock(&s->sd_op_lock);
}

void nfs4_stid_unlock(struct nfs4_stid *s)
{
	mutex_unlock(&s->sd_op_lock);
}

#ifdef JNFS_LOCKDEP
void nfs4_stid_assert_locked(const struct nfs4_stid *s, const char *func)
{
	lockdep_assert_mutex(&s->sd_op_lock, func);
}
#endif

static void value_locked(struct nfs4_stid *s, struct nfs4_stateid *sid)
{
	sid->seqid = s->sd_seqid;
	nfs4_put_be32(sid->other, s->sd_st->cfg.boot_epoch);
	nfs4_put_be32(sid->other + 4, (uint32_t)s->sd_clientid);
	nfs4_put_be32(sid->other + 8, s->sd_key);
}

void nfs4_stid_value(struct nfs4_stid *s, struct nfs4_stateid *sid)
{
	mutex_lock(&s->sd_client->cl_lock);
	value_locked(s, sid);
	mutex_unlock(&s->sd_client->cl_lock);
}

void nfs4_stid_bump(struct nfs4_stid *s, struct nfs4_stateid *sid)
{
	mutex_lock(&s->sd_client->cl_lock);
	if (++s->sd_seqid == 0)
		s->sd_seqid = 1;
	value_locked(s, sid);
	mutex_unlock(&s->sd_client->cl_lock);
}

/* Out of the client's table; the caller drops the table's reference.
 * clp->cl_lock held. */
static void unhash_locked(struct nfs4_client *clp, struct nfs4_stid *s)
{
	assert_locked(&clp->cl_lock);
	hashmap_remove(&clp->cl_stids, s->sd_key);
	list_del(&s->sd_link);
	clp->cl_nstids--;
	if (s->sd_revoked)
		clp->cl_revoked[s->sd_why]--;
	s->sd_hashed = false;
	struct nfs4_state *st = s->sd_st;
	if (atomic_load(&st->hold_ends)) {
		/* a push onto a stack that is only ever emptied whole: no ABA */
		nfs4_stid_get(s);
		s->sd_held_next = atomic_load(&st->held);
		while (!atomic_compare_exchange_weak(&st->held, &s->sd_held_next, s))
			;
	}
}

void nfs4_stid_hold_ends(struct nfs4_state *st, bool on)
{
	assert_none_held(LOCK_RANK_NFS4_CLIENTS, LOCK_RANK_NFS4_CLIENT); /* no state lock */
	atomic_store(&st->hold_ends, on);
	if (on)
		return;
	struct nfs4_stid *s = atomic_exchange(&st->held, NULL);
	while (s) {
		struct nfs4_stid *next = s->sd_held_next;
		nfs4_stid_put(s); /* the release it held back runs now */
		s = next;
	}
}

void nfs4_stid_unhash(struct nfs4_stid *s)
{
	struct nfs4_client *clp = s->sd_client;
	mutex_lock(&clp->cl_lock);
	bool was = s->sd_hashed;
	if (was)
		unhash_locked(clp, s);
	mutex_unlock(&clp->cl_lock);
	if (was)
		nfs4_stid_put(s);
}

void nfs4_stid_revoke(struct nfs4_stid *s, enum nfs4_revoke_reason why)
{
	assert_none_held(LOCK_RANK_NFS4_CLIENTS, LOCK_RANK_NFS4_CLIENT); /* no state lock */
	struct nfs4_client *clp = s->sd_client;
	mutex_lock(&clp->cl_lock);
	if (s->sd_hashed && !s->sd_revoked) {
		s->sd_revoked = true;
		s->sd_why = why;
		clp->cl_revoked[why]++;
		/* lookups fail from now on; the payload goes with the last
		 * holder's reference (the caller's at the latest) */
		atomic_store(&s->sd_release_pending, true);
	}
	mutex_unlock(&clp->cl_lock);
}

void nfs4_stids_detach_locked(struct nfs4_client *clp, struct nfs4_work *w)
{
	assert_locked(&clp->cl_lock);
	struct nfs4_stid *s, *tmp;
	list_for_each_entry_safe (s, tmp, &clp->cl_stid_list, sd_link) {
		s->sd_hashed = false;
		list_move_tail(&s->sd_link, &w->wk_stids); /* the table's reference */
	}
	hashmap_destroy(&clp->cl_stids);
	hashmap_init(&clp->cl_stids);
	clp->cl_nstids = 0;
	memset(clp->cl_revoked, 0, sizeof(clp->cl_revoked));
}

uint32_t nfs4_stids_flags_locked(struct nfs4_client *clp)
{
	assert_locked(&clp->cl_lock);
	uint32_t f = 0;
	if (clp->cl_revoked[NFS4_REVOKE_EXPIRED])
		f |= SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED;
	if (clp->cl_revoked[NFS4_REVOKE_ADMIN])
		f |= SEQ4_STATUS_ADMIN_STATE_REVOKED;
	if (clp->cl_revoked[NFS4_REVOKE_RECALL])
		f |= SEQ4_STATUS_RECALLABLE_STATE_REVOKED;
	return f;
}

uint32_t nfs4_test_stateid(struct nfs4_client *clp, const struct nfs4_stateid *sid)
{
	uint32_t status;
	mutex_lock(&clp->cl_lock);
	/* TEST_STATEID reports a stale stateid as BAD_STATEID (RFC 8881 §18.48.3
	 * lists no STALE_STATEID) */
	struct nfs4_stid *sd = lookup_locked(clp, sid, NFS4ERR_BAD_STATEID, &status);
	if (sd)
		status = sd->sd_revoked ? revoked_status(sd->sd_why)
					: seqid_status(sid->seqid, sd->sd_seqid);
	mutex_unlock(&clp->cl_lock);
	return status;
}

uint32_t nfs4_free_stateid(struct nfs4_client *clp, const struct nfs4_stateid *sid)
{
	assert_no_locks();
	struct nfs4_state *st = clp->cl_st;
	uint32_t status;
	bool drop = false;

	mutex_lock(&clp->cl_lock);
	struct nfs4_stid *sd = lookup_locked(clp, sid, NFS4ERR_BAD_STATEID, &status);
	if (!sd)
		goto out_unlock;
	if (sd->sd_revoked) {
		/* what a revocation left: the client has seen it, it goes */
		unhash_locked(clp, sd);
		drop = true;
		goto out_unlock;
	}
	status = seqid_status(sid->seqid, sd->sd_seqid);
	if (status != NFS4_OK)
		goto out_unlock;
	if (sd->sd_type != NFS4_STID_LOCK) {
		status = NFS4ERR_LOCKS_HELD; /* a valid open, delegation or layout is a lock */
		goto out_unlock;
	}
	if (atomic_load(&sd->sd_refs) > 1) {
		status = NFS4ERR_DELAY; /* an operation is using it */
		goto out_unlock;
	}
	/* ask the lock manager with no lock held; any LOCK or LOCKU meanwhile
	 * bumps the seqid or holds a reference, which the second look sees */
	uint32_t seen = sd->sd_seqid;
	void *payload = sd->sd_payload;
	nfs4_stid_get(sd);
	mutex_unlock(&clp->cl_lock);
	const struct nfs4_stid_ops *ops = st->cfg.stid_ops;
	bool locks =
		ops && ops->has_locks && ops->has_locks(st->cfg.stid_arg, sd->sd_type, payload);
	mutex_lock(&clp->cl_lock);
	if (!sd->sd_hashed)
		status = NFS4ERR_BAD_STATEID;
	else if (locks)
		status = NFS4ERR_LOCKS_HELD;
	else if (sd->sd_seqid != seen || atomic_load(&sd->sd_refs) > 2 || sd->sd_revoked)
		status = NFS4ERR_DELAY;
	else {
		unhash_locked(clp, sd);
		drop = true;
	}
	mutex_unlock(&clp->cl_lock);
	nfs4_stid_put(sd); /* ours */
	if (drop)
		nfs4_stid_put(sd); /* the table's */
	return status;

out_unlock:
	mutex_unlock(&clp->cl_lock);
	if (drop)
		nfs4_stid_put(sd);
	return status;
}
