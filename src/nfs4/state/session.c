/*
 * session.c - CREATE_SESSION, SEQUENCE and the slot reply cache,
 * DESTROY_SESSION, connection binding and the back channel slot.
 *
 * CREATE_SESSION (RFC 8881 §18.36.4) has one "slot" per client, kept in
 * the client: a csa_sequence one above the slot's is a new request; equal
 * to it, a retry answered from the cached result of the last success;
 * anything else SEQ_MISORDERED. Only successes advance the slot, so a
 * request that failed (say TOOSMALL) can be sent again with the same
 * csa_sequence. A new client's slot starts at 0, so its first
 * CREATE_SESSION carries eir_sequenceid = 1.
 *
 * Confirming a client saves its durable record before anything is
 * visible: the registry mutex keeps the client set still while the table
 * lock is dropped around the record store's transaction (client.h
 * invariant 5). The old incarnation of a rebooted client (EXCHANGE_ID case
 * 5) is expired at this point, with all its state.
 *
 * Channel negotiation: each fore channel size is the minimum of the
 * client's and the server's (cfg.fore_max), the slot count too, and then
 * fewer slots if their cache reservation would overrun cfg.cache_budget
 * (fewer slots keep a session working; smaller slots would not). A client
 * asking for less than a SEQUENCE needs gets TOOSMALL. The back channel
 * keeps the client's sizes (the callback code must respect them), uses
 * cfg.back_max_slots slots, and asks the client to cache nothing.
 *
 * SEQUENCE renews the lease under the client lock, which ranks above the
 * session lock (client.h): the slot is checked first, the client after,
 * and the slot is changed only once the client is known to be alive.
 */
#include "nfs4/state/session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"
#include "nfs4/state/state_priv.h"

static struct lock_class session_class = LOCK_CLASS(NFS4_SESSION);

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t max32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

static uint32_t negotiate(const struct nfs4_state *st, const struct nfs4_create_session_args *a,
			  struct nfs4_channel_attrs *fore, struct nfs4_channel_attrs *back)
{
	const struct nfs4_channel_attrs *m = &st->cfg.fore_max;
	*fore = a->fore;
	*back = a->back;
	if (fore->maxrequestsize < NFS4_MIN_REQUEST_SIZE ||
	    fore->maxresponsesize < NFS4_MIN_RESPONSE_SIZE || fore->maxoperations < 1)
		return NFS4ERR_TOOSMALL;
	fore->headerpadsize = 0;
	fore->maxrequestsize = min32(fore->maxrequestsize, m->maxrequestsize);
	fore->maxresponsesize = min32(fore->maxresponsesize, m->maxresponsesize);
	fore->maxresponsesize_cached =
		min32(min32(fore->maxresponsesize_cached, m->maxresponsesize_cached),
		      fore->maxresponsesize);
	fore->maxoperations = min32(fore->maxoperations, m->maxoperations);
	fore->maxrequests = min32(max32(fore->maxrequests, 1), m->maxrequests);

	/* a CB_COMPOUND is at least CB_SEQUENCE and one operation */
	if (back->maxrequestsize < NFS4_MIN_REQUEST_SIZE ||
	    back->maxresponsesize < NFS4_MIN_RESPONSE_SIZE || back->maxoperations < 2)
		return NFS4ERR_TOOSMALL;
	back->headerpadsize = 0;
	back->maxresponsesize_cached = 0; /* we never set csa_cachethis */
	back->maxrequests = min32(max32(back->maxrequests, 1), st->cfg.back_max_slots);
	return NFS4_OK;
}

/* Session lock held. */
static void update_cb_locked(struct nfs4_session *s)
{
	assert_locked(&s->se_lock);
	bool back = false;
	for (unsigned i = 0; i < s->se_nconns; i++)
		if (s->se_conns[i].cn_dir & NFS4_CDFS_BACK)
			back = true;
	atomic_store(&s->se_cb_up, back && !s->se_cb_fault);
}

/* Bind conn for dir (NFS4_CDFS_*); false when the array is full. */
static bool bind_locked(struct nfs4_session *s, void *conn, uint64_t id, uint32_t dir)
{
	struct nfs4_conn *c = NULL;
	for (unsigned i = 0; i < s->se_nconns; i++)
		if (s->se_conns[i].cn_id == id)
			c = &s->se_conns[i];
	if (!c) {
		if (s->se_nconns == NFS4_SESSION_MAX_CONNS)
			return false;
		c = &s->se_conns[s->se_nconns++];
		c->cn_id = id;
	}
	c->cn_conn = conn;
	c->cn_dir = dir;
	if (dir & NFS4_CDFS_BACK) {
		s->se_back_wanted = true;
		s->se_cb_fault = false; /* a fresh back connection */
	}
	update_cb_locked(s);
	return true;
}

static bool conn_bound_locked(struct nfs4_session *s, uint64_t id)
{
	for (unsigned i = 0; i < s->se_nconns; i++)
		if (s->se_conns[i].cn_id == id)
			return true;
	return false;
}

static void slot_free_cache(struct nfs4_state *st, struct nfs4_slot *sl)
{
	if (sl->sl_buf) {
		atomic_fetch_sub(&st->cache_bytes, sl->sl_cap);
		free(sl->sl_buf);
	}
	sl->sl_buf = NULL;
	sl->sl_cap = sl->sl_len = 0;
	sl->sl_cached = false;
}

void nfs4_session_get(struct nfs4_session *s)
{
	atomic_fetch_add(&s->se_refs, 1);
}

void nfs4_session_put(struct nfs4_session *s)
{
	if (atomic_fetch_sub(&s->se_refs, 1) != 1)
		return;
	struct nfs4_state *st = s->se_client->cl_st;
	for (uint32_t i = 0; i < s->se_nslots; i++)
		slot_free_cache(st, &s->se_slots[i]);
	free(s->se_slots);
	mutex_destroy(&s->se_lock);
	nfs4_client_put(s->se_client);
	free(s);
}

struct nfs4_client *nfs4_session_client(struct nfs4_session *s)
{
	return s->se_client;
}

void nfs4_session_id(const struct nfs4_session *s, uint8_t *sessionid)
{
	memcpy(sessionid, s->se_id, NFS4_SESSIONID_SIZE);
}

void nfs4_session_fore_attrs(const struct nfs4_session *s, struct nfs4_channel_attrs *a)
{
	*a = s->se_fore;
}

void nfs4_session_back_attrs(const struct nfs4_session *s, struct nfs4_channel_attrs *a)
{
	*a = s->se_back;
}

/* Table held (read or write); the session is referenced on return. */
static struct nfs4_session *find_locked(struct nfs4_state *st, const uint8_t *sid)
{
	assert_rdlocked(&st->lock);
	struct nfs4_session *s = hashmap_get(&st->by_session, nfs4_get_be32(sid + 8));
	if (!s || memcmp(s->se_id, sid, NFS4_SESSIONID_SIZE) != 0)
		return NULL;
	return s;
}

struct nfs4_session *nfs4_client_back_session(struct nfs4_client *clp)
{
	struct nfs4_session *found = NULL, *s;
	mutex_lock(&clp->cl_lock);
	list_for_each_entry (s, &clp->cl_sessions, se_client_link) {
		if (atomic_load(&s->se_cb_up)) {
			found = s;
			nfs4_session_get(s);
			break;
		}
	}
	mutex_unlock(&clp->cl_lock);
	return found;
}

struct nfs4_session *nfs4_session_find(struct nfs4_state *st, const uint8_t *sid)
{
	rwlock_rdlock(&st->lock);
	struct nfs4_session *s = find_locked(st, sid);
	if (s)
		nfs4_session_get(s);
	rwlock_unlock(&st->lock);
	return s;
}

/* Table held for writing: out of the table, dead, reservation given back. */
static void kill_locked(struct nfs4_state *st, struct nfs4_session *s)
{
	assert_wrlocked(&st->lock);
	mutex_lock(&s->se_lock);
	s->se_dead = true;
	s->se_nconns = 0;
	atomic_store(&s->se_cb_up, false);
	/* idle slots' caches go now; a slot in use keeps its buffer until its
	 * request is done, and a dead session caches nothing new */
	for (uint32_t i = 0; i < s->se_nslots; i++)
		if (!s->se_slots[i].sl_inuse)
			slot_free_cache(st, &s->se_slots[i]);
	mutex_unlock(&s->se_lock);
	hashmap_remove(&st->by_session, s->se_key);
	st->nsessions--;
	st->cache_reserved -= s->se_reserved;
}

void nfs4_sessions_kill_locked(struct nfs4_state *st, struct list *sessions)
{
	assert_wrlocked(&st->lock);
	struct nfs4_session *s;
	list_for_each_entry (s, sessions, se_client_link)
		kill_locked(st, s);
}

/* ---- CREATE_SESSION ---------------------------------------------------- */

static struct nfs4_session *session_new_locked(struct nfs4_state *st, struct nfs4_client *clp,
					       const struct nfs4_create_session_args *a,
					       const struct nfs4_channel_attrs *fore,
					       const struct nfs4_channel_attrs *back,
					       uint32_t slot_cap)
{
	struct nfs4_session *s = xcalloc(1, sizeof(*s));
	nfs4_client_get(clp);
	s->se_client = clp;
	atomic_init(&s->se_refs, 1); /* the table's */
	list_init(&s->se_client_link);
	mutex_init(&s->se_lock, &session_class);
	s->se_fore = *fore;
	s->se_back = *back;
	s->se_flags = a->flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN; /* no PERSIST, no RDMA */
	s->se_cb_program = a->cb_program;
	s->se_cb_flavor = a->cb_flavor;
	s->se_minorversion = a->minorversion ? a->minorversion : 1;
	s->se_nslots = fore->maxrequests;
	s->se_highest = s->se_target = s->se_nslots - 1;
	s->se_slot_cap = slot_cap;
	s->se_reserved = (size_t)slot_cap * s->se_nslots;
	s->se_slots = xcalloc(s->se_nslots, sizeof(*s->se_slots));
	atomic_init(&s->se_cb_up, false);

	uint32_t key;
	do
		key = ++st->next_session;
	while (key == 0 || hashmap_get(&st->by_session, key));
	s->se_key = key;
	for (int i = 0; i < 8; i++)
		s->se_id[i] = (uint8_t)(clp->cl_id >> (56 - 8 * i));
	nfs4_put_be32(s->se_id + 8, key);
	nfs4_put_be32(s->se_id + 12, (uint32_t)rng_next(&st->rng));

	if (a->conn_id) {
		uint32_t dir = NFS4_CDFS_FORE;
		if (a->flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN)
			dir = NFS4_CDFS_BOTH;
		/* nobody else sees the new session yet: its lock is free */
		bool locked = mutex_trylock(&s->se_lock);
		BUG_ON(!locked);
		bind_locked(s, a->conn, a->conn_id, dir);
		mutex_unlock(&s->se_lock);
	}
	if (a->flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN)
		s->se_back_wanted = true;

	hashmap_put(&st->by_session, key, s);
	st->nsessions++;
	st->cache_reserved += s->se_reserved;
	mutex_lock(&clp->cl_lock);
	list_add_tail(&s->se_client_link, &clp->cl_sessions);
	clp->cl_nsessions++;
	mutex_unlock(&clp->cl_lock);
	return s;
}

uint32_t nfs4_create_session(struct nfs4_state *st, const struct nfs4_create_session_args *a,
			     struct nfs4_create_session_res *r, uint64_t *seq)
{
	assert_no_locks();
	struct nfs4_channel_attrs fore, back;
	struct nfs4_work w;
	uint64_t dummy, save_seq = 0;
	uint32_t status;

	if (!seq)
		seq = &dummy;
	*seq = 0;
	memset(r, 0, sizeof(*r));
	counter_inc(&st->c_create_session);
	status = negotiate(st, a, &fore, &back);
	if (status != NFS4_OK)
		return status;

	nfs4_work_init(&w);
	mutex_lock(&st->registry);
	rwlock_wrlock(&st->lock);
	struct nfs4_client *clp = hashmap_get(&st->by_clientid, a->clientid);
	if (!clp) {
		status = NFS4ERR_STALE_CLIENTID;
		goto out_unlock;
	}
	mutex_lock(&clp->cl_lock);
	bool unconfirmed = clp->cl_status == NFS4_CL_UNCONFIRMED;
	mutex_unlock(&clp->cl_lock);
	if (unconfirmed &&
	    (clp->cl_principal.len != a->principal.len ||
	     memcmp(clp->cl_principal.data, a->principal.data, a->principal.len) != 0)) {
		status = NFS4ERR_CLID_INUSE;
		goto out_unlock;
	}
	if (a->sequence != clp->cl_cs_seqid + 1) {
		if (a->sequence == clp->cl_cs_seqid && clp->cl_cs_cached) {
			*r = clp->cl_cs_res; /* a retry: client invariant 4 of session.h */
			status = NFS4_OK;
		} else {
			status = NFS4ERR_SEQ_MISORDERED;
		}
		goto out_unlock;
	}

	mutex_lock(&clp->cl_lock);
	bool full = clp->cl_nsessions >= st->cfg.max_sessions_per_client;
	mutex_unlock(&clp->cl_lock);
	if (full || st->nsessions >= st->cfg.max_sessions) {
		status = NFS4ERR_NOSPC;
		goto out_unlock;
	}
	uint32_t slot_cap = max32(fore.maxresponsesize_cached, NFS4_SLOT_SOLO_MAX);
	size_t room = st->cfg.cache_budget > st->cache_reserved
			      ? st->cfg.cache_budget - st->cache_reserved
			      : 0;
	if (room / slot_cap < fore.maxrequests)
		fore.maxrequests = (uint32_t)(room / slot_cap);
	if (fore.maxrequests == 0) {
		status = NFS4ERR_DELAY;
		goto out_unlock;
	}

	if (unconfirmed && st->cfg.records && st->cfg.records->save) {
		/* the record is durable before the confirmation is visible; the
		 * registry keeps the client set as it is meanwhile */
		struct nfs4_client_record rec;
		nfs4_client_record_of(clp, &rec);
		rwlock_unlock(&st->lock);
		int err = st->cfg.records->save(st->cfg.records_arg, &rec, &save_seq);
		rwlock_wrlock(&st->lock);
		if (err) {
			msg_warn("nfs4: saving client %016llx: error %d",
				 (unsigned long long)clp->cl_id, err);
			status = NFS4ERR_SERVERFAULT;
			goto out_unlock;
		}
	}
	if (unconfirmed) {
		nfs4_client_confirm_locked(st, clp, &w);
	} else {
		mutex_lock(&clp->cl_lock);
		if (clp->cl_status == NFS4_CL_COURTESY) {
			clp->cl_status = NFS4_CL_CONFIRMED; /* it is back */
			counter_inc(&st->c_courtesy_revived);
		}
		atomic_store(&clp->cl_renew_ns, nfs4_now(st));
		mutex_unlock(&clp->cl_lock);
	}

	struct nfs4_session *s = session_new_locked(st, clp, a, &fore, &back, slot_cap);
	memcpy(r->sessionid, s->se_id, NFS4_SESSIONID_SIZE);
	r->sequence = a->sequence;
	r->flags = s->se_flags;
	r->fore = fore;
	r->back = back;
	clp->cl_cs_seqid = a->sequence;
	clp->cl_cs_cached = true;
	clp->cl_cs_res = *r;
	status = NFS4_OK;
out_unlock:
	rwlock_unlock(&st->lock);
	nfs4_work_run(st, &w, seq);
	mutex_unlock(&st->registry);
	if (save_seq > *seq)
		*seq = save_seq;
	return status;
}

/* ---- DESTROY_SESSION --------------------------------------------------- */

uint32_t nfs4_destroy_session(struct nfs4_state *st, const uint8_t *sessionid,
			      struct nfs4_session *cur)
{
	rwlock_wrlock(&st->lock);
	struct nfs4_session *s = find_locked(st, sessionid);
	if (!s) {
		rwlock_unlock(&st->lock);
		return NFS4ERR_BADSESSION;
	}
	mutex_lock(&s->se_lock);
	unsigned others = s->se_inuse - (s == cur && s->se_inuse ? 1 : 0);
	mutex_unlock(&s->se_lock);
	if (others) {
		rwlock_unlock(&st->lock);
		return NFS4ERR_DELAY;
	}
	kill_locked(st, s);
	struct nfs4_client *clp = s->se_client;
	mutex_lock(&clp->cl_lock);
	list_del(&s->se_client_link);
	clp->cl_nsessions--;
	mutex_unlock(&clp->cl_lock);
	rwlock_unlock(&st->lock);
	nfs4_session_put(s); /* the table's */
	return NFS4_OK;
}

/* ---- SEQUENCE ---------------------------------------------------------- */

/* What the request a names its slot sl to be: a new request, a retry of
 * the one the slot answered (with or without its reply cached), or an
 * error (DELAY for a retry of a request still running, false retry,
 * misordered). */
static uint32_t slot_kind_locked(struct nfs4_state *st, struct nfs4_session *s,
				 const struct nfs4_slot *sl, const struct nfs4_seq_args *a,
				 enum nfs4_seq_kind *kind)
{
	assert_locked(&s->se_lock);
	if (sl->sl_inuse) {
		/* the original is still running: its retry waits, others are wrong */
		return a->sequenceid == sl->sl_seqid ? NFS4ERR_DELAY : NFS4ERR_SEQ_MISORDERED;
	}
	if (a->sequenceid == sl->sl_seqid + 1 || (sl->sl_reused && a->sequenceid == 1)) {
		*kind = NFS4_SEQ_NEW;
		return NFS4_OK;
	}
	if (a->sequenceid != sl->sl_seqid || !sl->sl_init) {
		counter_inc(&st->c_misordered);
		return NFS4ERR_SEQ_MISORDERED;
	}
	/* not the request the slot answered: a false retry */
	if ((a->digest && sl->sl_digest && a->digest != sl->sl_digest) || a->solo != sl->sl_solo ||
	    a->cachethis != sl->sl_cachethis)
		return NFS4ERR_SEQ_FALSE_RETRY;
	*kind = sl->sl_cached ? NFS4_SEQ_REPLAY : NFS4_SEQ_REPLAY_UNCACHED;
	if (*kind == NFS4_SEQ_REPLAY && a->replay_buf && a->replay_cap < sl->sl_len)
		return NFS4ERR_SERVERFAULT;
	return NFS4_OK;
}

/* The client now stays at or below a lowered target (highest: the highest
 * slot it says it uses): once no slot above the target is in use, the
 * session shrinks to it. */
static void shrink_to_target_locked(struct nfs4_state *st, struct nfs4_session *s, uint32_t highest)
{
	assert_locked(&s->se_lock);
	if (s->se_target >= s->se_highest || highest > s->se_target)
		return;
	for (uint32_t i = s->se_target + 1; i <= s->se_highest; i++)
		if (s->se_slots[i].sl_inuse)
			return;
	for (uint32_t i = s->se_target + 1; i <= s->se_highest; i++) {
		slot_free_cache(st, &s->se_slots[i]);
		s->se_slots[i].sl_reused = s->se_slots[i].sl_init;
	}
	s->se_highest = s->se_target;
}

uint32_t nfs4_sequence(struct nfs4_state *st, const struct nfs4_seq_args *a, struct nfs4_seq_res *r,
		       struct nfs4_session **sess)
{
	uint32_t status = NFS4_OK;
	*sess = NULL;
	memset(r, 0, sizeof(*r));

	rwlock_rdlock(&st->lock);
	struct nfs4_session *s = find_locked(st, a->sessionid);
	bool reclaim = false;
	if (s) {
		nfs4_session_get(s);
		reclaim = nfs4_grace_reclaim_needed(st, s->se_client);
	}
	rwlock_unlock(&st->lock);
	if (!s)
		return NFS4ERR_BADSESSION;
	struct nfs4_client *clp = s->se_client;

	mutex_lock(&s->se_lock);
	if (s->se_dead) {
		status = NFS4ERR_BADSESSION;
		goto out_unlock;
	}
	if (a->nops > s->se_fore.maxoperations) {
		status = NFS4ERR_TOO_MANY_OPS;
		goto out_unlock;
	}
	if (a->req_len > s->se_fore.maxrequestsize) {
		status = NFS4ERR_REQ_TOO_BIG;
		goto out_unlock;
	}
	if (a->cachethis && a->rep_min > s->se_fore.maxresponsesize_cached) {
		/* not even SEQUENCE's result could be cached (RFC 8881 §18.46.3) */
		status = NFS4ERR_REP_TOO_BIG_TO_CACHE;
		goto out_unlock;
	}
	if (a->slotid >= s->se_nslots || a->slotid > s->se_highest) {
		status = NFS4ERR_BADSLOT;
		goto out_unlock;
	}
	if (a->highest_slotid > s->se_highest) {
		status = NFS4ERR_BAD_HIGH_SLOT;
		goto out_unlock;
	}
	struct nfs4_slot *sl = &s->se_slots[a->slotid];
	enum nfs4_seq_kind kind;
	if ((status = slot_kind_locked(st, s, sl, a, &kind)))
		goto out_unlock;

	/* the client: alive? renew, and what to tell it */
	uint32_t flags = 0;
	mutex_lock(&clp->cl_lock);
	if (clp->cl_status == NFS4_CL_EXPIRED) {
		mutex_unlock(&clp->cl_lock);
		status = NFS4ERR_BADSESSION;
		goto out_unlock;
	}
	if (clp->cl_status == NFS4_CL_COURTESY) {
		clp->cl_status = NFS4_CL_CONFIRMED; /* client invariant 3 */
		counter_inc(&st->c_courtesy_revived);
	}
	atomic_store(&clp->cl_renew_ns, nfs4_now(st));
	if (kind == NFS4_SEQ_NEW)
		clp->cl_inflight++;
	flags |= nfs4_stids_flags_locked(clp);
	bool any_cb = false;
	struct nfs4_session *o;
	list_for_each_entry (o, &clp->cl_sessions, se_client_link)
		if (atomic_load(&o->se_cb_up))
			any_cb = true;
	mutex_unlock(&clp->cl_lock);
	if (!any_cb)
		flags |= SEQ4_STATUS_CB_PATH_DOWN;
	if (s->se_back_wanted && !atomic_load(&s->se_cb_up))
		flags |= SEQ4_STATUS_CB_PATH_DOWN_SESSION;
	if (s->se_cb_fault)
		flags |= SEQ4_STATUS_BACKCHANNEL_FAULT;
	if (reclaim)
		flags |= SEQ4_STATUS_RESTART_RECLAIM_NEEDED;

	if (kind == NFS4_SEQ_NEW) {
		sl->sl_seqid = a->sequenceid;
		sl->sl_inuse = true;
		sl->sl_init = true;
		sl->sl_reused = false;
		sl->sl_cachethis = a->cachethis;
		sl->sl_cache_want = a->cachethis || a->solo;
		sl->sl_solo = a->solo;
		sl->sl_digest = a->digest;
		sl->sl_cached = false; /* the buffer stays for the next reply */
		sl->sl_len = 0;
		sl->sl_status_flags = flags;
		s->se_inuse++;
	} else if (kind == NFS4_SEQ_REPLAY) {
		r->replay = a->replay_buf ? a->replay_buf : xmalloc(sl->sl_len ? sl->sl_len : 1);
		memcpy(r->replay, sl->sl_buf, sl->sl_len);
		r->replay_len = sl->sl_len;
		counter_inc(&st->c_replays);
	} else {
		flags = sl->sl_status_flags; /* what the original's SEQUENCE said */
		counter_inc(&st->c_replays_uncached);
	}
	if (a->conn_id && !conn_bound_locked(s, a->conn_id))
		bind_locked(s, a->conn, a->conn_id, NFS4_CDFS_FORE); /* SP4_NONE binds implicitly */

	shrink_to_target_locked(st, s, a->highest_slotid);
	r->kind = kind;
	r->sequenceid = a->sequenceid;
	r->slotid = a->slotid;
	r->highest_slotid = s->se_highest;
	r->target_highest_slotid = s->se_target;
	r->status_flags = flags;
	mutex_unlock(&s->se_lock);
	*sess = s;
	return NFS4_OK;

out_unlock:
	mutex_unlock(&s->se_lock);
	nfs4_session_put(s);
	return status;
}

int nfs4_sequence_done(struct nfs4_session *s, uint32_t slotid, const void *reply, size_t len)
{
	struct nfs4_client *clp = s->se_client;
	struct nfs4_state *st = clp->cl_st;
	int err = 0;

	mutex_lock(&s->se_lock);
	BUG_ON(slotid >= s->se_nslots || !s->se_slots[slotid].sl_inuse);
	struct nfs4_slot *sl = &s->se_slots[slotid];
	if (reply && sl->sl_cache_want && !s->se_dead) {
		uint32_t limit = s->se_fore.maxresponsesize_cached;
		if (sl->sl_solo)
			limit = s->se_slot_cap;
		if (len <= limit) {
			if (sl->sl_cap < len) {
				/* grows up to the slot capacity, then stays: a
				 * reply no larger than the largest so far allocates nothing */
				sl->sl_buf = xrealloc(sl->sl_buf, len);
				atomic_fetch_add(&st->cache_bytes, len - sl->sl_cap);
				sl->sl_cap = (uint32_t)len;
			}
			if (len)
				memcpy(sl->sl_buf, reply, len);
			sl->sl_len = (uint32_t)len;
			sl->sl_cached = true;
		} else if (!sl->sl_solo) {
			err = -EMSGSIZE;
		}
	}
	if (s->se_dead)
		slot_free_cache(st, sl);
	sl->sl_inuse = false;
	s->se_inuse--;
	mutex_unlock(&s->se_lock);

	mutex_lock(&clp->cl_lock);
	clp->cl_inflight--;
	atomic_store(&clp->cl_renew_ns, nfs4_now(st));
	mutex_unlock(&clp->cl_lock);
	return err;
}

void nfs4_session_set_target(struct nfs4_session *s, uint32_t target)
{
	mutex_lock(&s->se_lock);
	if (target >= s->se_nslots)
		target = s->se_nslots - 1;
	s->se_target = target;
	for (uint32_t i = s->se_highest + 1; i <= target; i++)
		s->se_slots[i].sl_reused = s->se_slots[i].sl_init;
	if (target > s->se_highest)
		s->se_highest = target;
	mutex_unlock(&s->se_lock);
}

/* ---- connections ------------------------------------------------------- */

uint32_t nfs4_bind_conn_to_session(struct nfs4_state *st, const uint8_t *sessionid, uint32_t dir,
				   void *conn, uint64_t conn_id, uint32_t *dir_out)
{
	uint32_t cdfs;
	switch (dir) {
	case NFS4_CDFC_FORE:
		cdfs = NFS4_CDFS_FORE;
		break;
	case NFS4_CDFC_BACK:
		cdfs = NFS4_CDFS_BACK;
		break;
	case NFS4_CDFC_FORE_OR_BOTH:
	case NFS4_CDFC_BACK_OR_BOTH:
		cdfs = NFS4_CDFS_BOTH;
		break;
	default:
		return NFS4ERR_INVAL;
	}
	struct nfs4_session *s = nfs4_session_find(st, sessionid);
	if (!s)
		return NFS4ERR_BADSESSION;
	uint32_t status = NFS4_OK;
	mutex_lock(&s->se_lock);
	if (s->se_dead)
		status = NFS4ERR_BADSESSION;
	else if (!bind_locked(s, conn, conn_id, cdfs))
		status = NFS4ERR_DELAY;
	mutex_unlock(&s->se_lock);
	nfs4_session_put(s);
	if (status == NFS4_OK)
		*dir_out = cdfs;
	return status;
}

void nfs4_conn_closed(struct nfs4_state *st, uint64_t conn_id)
{
	uint64_t key;
	void *v;
	rwlock_rdlock(&st->lock);
	for (size_t it = 0; hashmap_next(&st->by_session, &it, &key, &v);) {
		struct nfs4_session *s = v;
		mutex_lock(&s->se_lock);
		for (unsigned i = 0; i < s->se_nconns; i++) {
			if (s->se_conns[i].cn_id != conn_id)
				continue;
			s->se_conns[i] = s->se_conns[--s->se_nconns];
			update_cb_locked(s);
			break;
		}
		mutex_unlock(&s->se_lock);
	}
	rwlock_unlock(&st->lock);
}

/* ---- back channel ------------------------------------------------------ */

void nfs4_session_set_cb_program(struct nfs4_session *s, uint32_t cb_program, uint32_t cb_flavor)
{
	mutex_lock(&s->se_lock);
	s->se_cb_program = cb_program;
	s->se_cb_flavor = cb_flavor;
	mutex_unlock(&s->se_lock);
}

uint32_t nfs4_cb_sequence_begin(struct nfs4_session *s, struct nfs4_cb_seq *cb)
{
	uint32_t status = NFS4_OK;
	mutex_lock(&s->se_lock);
	struct nfs4_conn *c = NULL;
	for (unsigned i = 0; i < s->se_nconns && !c; i++)
		if (s->se_conns[i].cn_dir & NFS4_CDFS_BACK)
			c = &s->se_conns[i];
	if (s->se_dead)
		status = NFS4ERR_BADSESSION;
	else if (s->se_cb_busy)
		status = NFS4ERR_DELAY;
	else if (!c)
		status = NFS4ERR_CONN_NOT_BOUND_TO_SESSION;
	if (status == NFS4_OK) {
		s->se_cb_busy = true;
		memcpy(cb->sessionid, s->se_id, NFS4_SESSIONID_SIZE);
		cb->slotid = 0;
		cb->sequenceid = s->se_cb_seqid + 1;
		cb->highest_slotid = s->se_back.maxrequests - 1;
		cb->cb_program = s->se_cb_program;
		cb->cb_flavor = s->se_cb_flavor;
		cb->minorversion = s->se_minorversion;
		cb->conn = c->cn_conn;
		cb->conn_id = c->cn_id;
	}
	mutex_unlock(&s->se_lock);
	return status;
}

uint32_t nfs4_cb_probe_begin(struct nfs4_session *s, struct nfs4_cb_seq *cb)
{
	uint32_t status = NFS4_OK;
	mutex_lock(&s->se_lock);
	struct nfs4_conn *c = NULL;
	for (unsigned i = 0; i < s->se_nconns && !c; i++)
		if (s->se_conns[i].cn_dir & NFS4_CDFS_BACK)
			c = &s->se_conns[i];
	if (s->se_dead)
		status = NFS4ERR_BADSESSION;
	else if (!c)
		status = NFS4ERR_CONN_NOT_BOUND_TO_SESSION;
	if (status == NFS4_OK) {
		memset(cb, 0, sizeof(*cb));
		memcpy(cb->sessionid, s->se_id, NFS4_SESSIONID_SIZE);
		cb->cb_program = s->se_cb_program;
		cb->cb_flavor = s->se_cb_flavor;
		cb->minorversion = s->se_minorversion;
		cb->conn = c->cn_conn;
		cb->conn_id = c->cn_id;
	}
	mutex_unlock(&s->se_lock);
	return status;
}

void nfs4_cb_probe_end(struct nfs4_session *s, bool replied)
{
	if (replied)
		return;
	mutex_lock(&s->se_lock);
	s->se_cb_fault = true;
	update_cb_locked(s);
	mutex_unlock(&s->se_lock);
}

void nfs4_cb_sequence_end(struct nfs4_session *s, uint32_t slotid, enum nfs4_cb_end how)
{
	mutex_lock(&s->se_lock);
	BUG_ON(slotid != 0 || !s->se_cb_busy);
	s->se_cb_busy = false;
	if (how == NFS4_CB_ACCEPTED) {
		s->se_cb_seqid++;
	} else if (how == NFS4_CB_LOST) {
		s->se_cb_fault = true;
		update_cb_locked(s);
	}
	mutex_unlock(&s->se_lock);
}

uint32_t nfs4_cb_sequence_resync(struct nfs4_session *s, uint32_t slotid, uint32_t last)
{
	mutex_lock(&s->se_lock);
	BUG_ON(slotid != 0 || !s->se_cb_busy);
	s->se_cb_seqid = last;
	mutex_unlock(&s->se_lock);
	return last + 1;
}
