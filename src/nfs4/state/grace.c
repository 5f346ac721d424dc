/*
 * grace.c - the previous instance's clients and the grace period.
 *
 * Each loaded record is a struct nfs4_prev, found by owner hash. A record
 * superseded by a newer one of the same owner (two incarnations whose
 * replacement the previous instance did not finish forgetting) leaves the
 * owner chain at once and is only remembered so it is forgotten at the end.
 * "pending" counts the matchable records not yet done; when it reaches 0
 * grace ends (ALL_RECLAIMED). All of it is guarded by the table lock.
 */
#include "nfs4/state/grace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"
#include "nfs4/state/state_priv.h"

static struct nfs4_prev *prev_find_locked(struct nfs4_state *st, const uint8_t *owner, uint32_t len,
					  uint64_t hash)
{
	for (struct nfs4_prev *pv = hashmap_get(&st->prev_by_owner, hash); pv; pv = pv->pv_next)
		if (pv->pv_rec.owner_len == len && memcmp(pv->pv_rec.owner, owner, len) == 0)
			return pv;
	return NULL;
}

static void prev_chain_remove_locked(struct nfs4_state *st, struct nfs4_prev *pv)
{
	struct nfs4_prev *head = hashmap_get(&st->prev_by_owner, pv->pv_hash);
	if (head == pv) {
		if (pv->pv_next)
			hashmap_put(&st->prev_by_owner, pv->pv_hash, pv->pv_next);
		else
			hashmap_remove(&st->prev_by_owner, pv->pv_hash);
	} else {
		struct nfs4_prev **pp = &head->pv_next;
		while (*pp != pv)
			pp = &(*pp)->pv_next;
		*pp = pv->pv_next;
	}
	pv->pv_next = NULL;
}

int nfs4_grace_load(struct nfs4_state *st, const struct nfs4_client_record *rec)
{
	int err = 0;
	if (rec->owner_len > NFS4_OPAQUE_LIMIT)
		return -EINVAL;
	mutex_lock(&st->registry);
	rwlock_wrlock(&st->lock);
	if (st->grace_started) {
		err = -EINVAL;
		goto out;
	}
	unsigned entries = 0;
	struct nfs4_prev *pv;
	list_for_each_entry (pv, &st->prev_list, pv_link)
		entries++;
	if (entries >= st->cfg.max_clients) {
		err = -ENOSPC;
		goto out;
	}
	struct nfs4_prev *n = xcalloc(1, sizeof(*n));
	n->pv_rec = *rec;
	n->pv_hash = nfs4_owner_hash(st, rec->owner, rec->owner_len);
	list_add_tail(&n->pv_link, &st->prev_list);
	struct nfs4_prev *old = prev_find_locked(st, rec->owner, rec->owner_len, n->pv_hash);
	if (old && old->pv_rec.clientid > rec->clientid) {
		n->pv_done = true; /* superseded: only to be forgotten */
		goto out;
	}
	if (old) {
		prev_chain_remove_locked(st, old);
		old->pv_done = true;
		st->prev_known--;
	}
	n->pv_next = hashmap_get(&st->prev_by_owner, n->pv_hash);
	hashmap_put(&st->prev_by_owner, n->pv_hash, n);
	st->prev_known++;
out:
	rwlock_unlock(&st->lock);
	mutex_unlock(&st->registry);
	return err;
}

/* Grace is over: forget the records of clients that never came back (they
 * can no longer reclaim) and drop the previous instance's entries. */
static void grace_end_locked(struct nfs4_state *st, enum nfs4_grace_end why, struct nfs4_work *w)
{
	struct nfs4_prev *pv, *tmp;
	struct nfs4_client *clp;
	atomic_store(&st->grace_active, false);
	st->grace_end = why;
	st->grace_end_ns = nfs4_now(st);
	list_for_each_entry (clp, &st->clients, cl_link)
		clp->cl_prev = NULL;
	list_for_each_entry_safe (pv, tmp, &st->prev_list, pv_link) {
		if (!pv->pv_linked)
			nfs4_work_forget(w, &pv->pv_rec);
		list_del(&pv->pv_link);
		free(pv);
	}
	hashmap_destroy(&st->prev_by_owner);
	hashmap_init(&st->prev_by_owner);
}

/* One known client is done (completed, rebooted, or gone). */
static void prev_done_locked(struct nfs4_state *st, struct nfs4_prev *pv, struct nfs4_work *w)
{
	if (pv->pv_done)
		return;
	pv->pv_done = true;
	st->prev_pending--;
	if (st->prev_pending == 0 && atomic_load(&st->grace_active))
		grace_end_locked(st, NFS4_GRACE_ALL_RECLAIMED, w);
}

void nfs4_grace_start(struct nfs4_state *st, uint64_t *seq)
{
	assert_no_locks();
	struct nfs4_work w;
	uint64_t dummy;
	if (!seq)
		seq = &dummy;
	*seq = 0;
	nfs4_work_init(&w);
	mutex_lock(&st->registry);
	rwlock_wrlock(&st->lock);
	BUG_ON(st->grace_started);
	st->grace_started = true;
	st->grace_start_ns = nfs4_now(st);
	st->prev_pending = st->prev_known;
	atomic_store(&st->grace_active, true);
	if (st->prev_pending == 0)
		grace_end_locked(st, NFS4_GRACE_ALL_RECLAIMED, &w); /* nobody can reclaim */
	rwlock_unlock(&st->lock);
	nfs4_work_run(st, &w, seq);
	mutex_unlock(&st->registry);
}

void nfs4_grace_tick_locked(struct nfs4_state *st, uint64_t now, struct nfs4_work *w)
{
	assert_wrlocked(&st->lock);
	if (atomic_load(&st->grace_active) && now - st->grace_start_ns >= st->cfg.grace_ns)
		grace_end_locked(st, NFS4_GRACE_TIMEOUT, w);
}

void nfs4_grace_confirm_locked(struct nfs4_state *st, struct nfs4_client *clp, struct nfs4_work *w)
{
	assert_wrlocked(&st->lock);
	clp->cl_reclaim = NFS4_RECLAIM_NONE;
	if (!atomic_load(&st->grace_active))
		return;
	struct nfs4_prev *pv =
		prev_find_locked(st, clp->cl_owner, clp->cl_owner_len, clp->cl_owner_hash);
	if (!pv || pv->pv_linked)
		return;
	/* the new record (saved by now) replaces the previous one */
	pv->pv_linked = true;
	nfs4_work_forget(w, &pv->pv_rec);
	if (pv->pv_done)
		return;
	if (memcmp(pv->pv_rec.verifier, clp->cl_verifier, NFS4_VERIFIER_SIZE) == 0) {
		clp->cl_reclaim = NFS4_RECLAIM_ELIGIBLE;
		clp->cl_prev = pv;
	} else {
		/* rebooted since: nothing of its old state can come back */
		clp->cl_reclaim = NFS4_RECLAIM_BAD;
		prev_done_locked(st, pv, w);
	}
}

void nfs4_grace_client_gone_locked(struct nfs4_state *st, struct nfs4_client *clp,
				   struct nfs4_work *w)
{
	assert_wrlocked(&st->lock);
	struct nfs4_prev *pv = clp->cl_prev;
	clp->cl_prev = NULL;
	if (pv)
		prev_done_locked(st, pv, w);
}

void nfs4_grace_destroy(struct nfs4_state *st)
{
	struct nfs4_prev *pv, *tmp;
	list_for_each_entry_safe (pv, tmp, &st->prev_list, pv_link) {
		list_del(&pv->pv_link);
		free(pv);
	}
}

bool nfs4_grace_reclaim_needed(struct nfs4_state *st, struct nfs4_client *clp)
{
	return atomic_load(&st->grace_active) && clp->cl_reclaim == NFS4_RECLAIM_ELIGIBLE &&
	       !clp->cl_reclaim_complete;
}

/* In grace, by the clock, even before nfs4_state_reap() noticed the end. */
static bool in_grace_locked(struct nfs4_state *st)
{
	return atomic_load(&st->grace_active) &&
	       nfs4_now(st) - st->grace_start_ns < st->cfg.grace_ns;
}

bool nfs4_grace_active(struct nfs4_state *st)
{
	rwlock_rdlock(&st->lock);
	bool g = in_grace_locked(st);
	rwlock_unlock(&st->lock);
	return g;
}

uint32_t nfs4_grace_check_new(struct nfs4_state *st)
{
	return nfs4_grace_active(st) ? NFS4ERR_GRACE : NFS4_OK;
}

uint32_t nfs4_grace_check_complete(struct nfs4_state *st, struct nfs4_client *clp)
{
	rwlock_rdlock(&st->lock);
	bool done = clp->cl_reclaim_complete;
	rwlock_unlock(&st->lock);
	return done ? NFS4_OK : NFS4ERR_GRACE;
}

uint32_t nfs4_grace_check_reclaim(struct nfs4_state *st, struct nfs4_client *clp)
{
	uint32_t status = NFS4ERR_NO_GRACE;
	rwlock_rdlock(&st->lock);
	if (in_grace_locked(st) && !clp->cl_reclaim_complete) {
		if (clp->cl_reclaim == NFS4_RECLAIM_ELIGIBLE)
			status = NFS4_OK;
		else if (clp->cl_reclaim == NFS4_RECLAIM_BAD)
			status = NFS4ERR_RECLAIM_BAD;
	}
	rwlock_unlock(&st->lock);
	return status;
}

uint32_t nfs4_reclaim_complete(struct nfs4_state *st, struct nfs4_client *clp, uint64_t *seq)
{
	struct nfs4_work w;
	uint32_t status = NFS4_OK;
	uint64_t dummy;
	if (!seq)
		seq = &dummy;
	*seq = 0;
	nfs4_work_init(&w);
	mutex_lock(&st->registry);
	rwlock_wrlock(&st->lock);
	if (clp->cl_reclaim_complete) {
		status = NFS4ERR_COMPLETE_ALREADY;
	} else {
		clp->cl_reclaim_complete = true;
		counter_inc(&st->c_reclaims_complete);
		if (clp->cl_prev)
			prev_done_locked(st, clp->cl_prev, &w);
	}
	rwlock_unlock(&st->lock);
	nfs4_work_run(st, &w, seq);
	mutex_unlock(&st->registry);
	return status;
}

void nfs4_grace_info(struct nfs4_state *st, struct nfs4_grace_info *gi)
{
	memset(gi, 0, sizeof(*gi));
	rwlock_rdlock(&st->lock);
	gi->started = st->grace_started;
	gi->active = atomic_load(&st->grace_active);
	gi->end = st->grace_end;
	gi->start_ns = st->grace_start_ns;
	gi->end_ns = st->grace_end_ns;
	gi->known = st->prev_known;
	gi->pending = gi->active ? st->prev_pending : 0;
	rwlock_unlock(&st->lock);
}
