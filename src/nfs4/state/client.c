/*
 * client.c - the client table: EXCHANGE_ID, leases and the courteous
 * server, DESTROY_CLIENTID, expiry, and the deferred work that calls the
 * record store and the release callbacks with no state lock held.
 *
 * EXCHANGE_ID follows the case table of RFC 8881 §18.35.5 (SP4_NONE);
 * "conf" is the confirmed (or courtesy) record of the owner, "unconf" its
 * unconfirmed record, "update" the EXCHGID4_FLAG_UPD_CONFIRMED_REC_A flag:
 *
 *   case 1  no conf, no update          new unconfirmed record
 *   case 2  conf, same verifier and     the same clientid, CONFIRMED_R (a retry,
 *           principal, no update        or trunking)
 *   case 3  conf, other principal,      CLID_INUSE while conf has sessions or
 *           no update                   stateids and is not COURTESY; otherwise
 *                                       conf is expired and case 1 follows
 *   case 4  unconf only, no update      unconf is replaced by a new record
 *   case 5  conf, other verifier, same  client restart: a new unconfirmed record;
 *           principal, no update        conf and its state stay until the new
 *                                       record is confirmed (CREATE_SESSION)
 *   case 6  update, conf matches        the same clientid, flags updated, CONFIRMED_R
 *   case 7  update, no conf             NOENT
 *   case 8  update, other verifier      NOT_SAME
 *   case 9  update, other principal     PERM
 *
 * An unconfirmed record a new one replaces (cases 1, 3, 4, 5) is dropped:
 * client invariant 1. eir_sequenceid is the CREATE_SESSION slot's sequence
 * id + 1: 1 for a new record.
 */
#include "nfs4/state/client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/siphash.h"
#include "base/time.h"
#include "nfs4/state/state_priv.h"

/* Ranks: client.h. The registry lock ranks below the engine, whose locks
 * the record store takes while the registry is held. */
static struct lock_class registry_class = LOCK_CLASS(NFS4_REGISTRY);
static struct lock_class clients_class = LOCK_CLASS(NFS4_CLIENTS);
static struct lock_class client_class = LOCK_CLASS(NFS4_CLIENT);

static uint64_t default_clock(void *arg)
{
	(void)arg;
	return now_ns();
}

void nfs4_state_config_default(struct nfs4_state_config *c)
{
	memset(c, 0, sizeof(*c));
	c->boot_epoch = (uint32_t)(wall_ns() / NSEC_PER_SEC);
	c->lease_ns = 90 * NSEC_PER_SEC;
	c->grace_ns = 90 * NSEC_PER_SEC;
	c->courtesy_max_ns = 24 * 3600 * NSEC_PER_SEC;
	c->max_clients = 1024;
	c->max_sessions = 1024;
	c->max_sessions_per_client = 16;
	c->max_stateids = 1u << 20;
	c->max_stateids_per_client = 1u << 16;
	c->fore_max.headerpadsize = 0;
	c->fore_max.maxrequestsize = (1u << 20) + (64u << 10);
	c->fore_max.maxresponsesize = (1u << 20) + (64u << 10);
	c->fore_max.maxresponsesize_cached = 8u << 10;
	c->fore_max.maxoperations = 128;
	c->fore_max.maxrequests = 64;
	c->back_max_slots = 1;
	c->cache_budget = 64u << 20;
	c->clock = default_clock;
}

static void fill_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* no entropy source: time is a poor but working seed (the
			 * sessionid's counter carries the uniqueness) */
			uint64_t t = now_ns() ^ wall_ns();
			for (size_t i = 0; i < len; i++)
				p[i] = (uint8_t)splitmix64(&t);
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

struct nfs4_state *nfs4_state_create(const struct nfs4_state_config *c)
{
	if (c->boot_epoch == 0 || c->fore_max.maxrequests == 0 || c->max_clients == 0 ||
	    c->fore_max.maxrequestsize < NFS4_MIN_REQUEST_SIZE ||
	    c->fore_max.maxresponsesize < NFS4_MIN_RESPONSE_SIZE || c->back_max_slots == 0 ||
	    c->lease_ns == 0)
		return NULL;
	struct nfs4_state *st = xcalloc(1, sizeof(*st));
	st->cfg = *c;
	if (!st->cfg.clock)
		st->cfg.clock = default_clock;
	uint64_t seed = c->seed;
	if (seed) {
		uint64_t x = seed;
		for (int i = 0; i < 16; i++)
			st->owner_key[i] = (uint8_t)splitmix64(&x);
	} else {
		fill_random(st->owner_key, sizeof(st->owner_key));
		fill_random(&seed, sizeof(seed));
	}
	rng_seed(&st->rng, seed);
	mutex_init(&st->registry, &registry_class);
	rwlock_init(&st->lock, &clients_class);
	hashmap_init(&st->by_clientid);
	hashmap_init(&st->by_owner);
	hashmap_init(&st->by_session);
	hashmap_init(&st->prev_by_owner);
	list_init(&st->clients);
	list_init(&st->prev_list);
	return st;
}

uint64_t nfs4_state_now(const struct nfs4_state *st)
{
	return nfs4_now(st);
}

void nfs4_server_owner(const struct nfs4_state *st, struct nfs4_server_owner *o)
{
	static const char hex[] = "0123456789abcdef";
	char id[5 + 32];
	memcpy(id, "jnfs:", 5);
	for (int i = 0; i < 16; i++) {
		id[5 + 2 * i] = hex[st->cfg.server_uuid[i] >> 4];
		id[6 + 2 * i] = hex[st->cfg.server_uuid[i] & 15];
	}
	memset(o, 0, sizeof(*o));
	o->minor_id = 0;
	o->major_len = sizeof(id);
	memcpy(o->major, id, sizeof(id));
	o->scope_len = sizeof(id);
	memcpy(o->scope, id, sizeof(id));
}

uint64_t nfs4_owner_hash(const struct nfs4_state *st, const uint8_t *owner, uint32_t len)
{
	return siphash24(st->owner_key, owner, len);
}

/* ---- deferred work ------------------------------------------------------ */

void nfs4_work_init(struct nfs4_work *w)
{
	list_init(&w->wk_forget);
	list_init(&w->wk_sessions);
	list_init(&w->wk_stids);
	list_init(&w->wk_clients);
}

void nfs4_work_forget(struct nfs4_work *w, const struct nfs4_client_record *rec)
{
	struct nfs4_work_rec *wr = xmalloc(sizeof(*wr));
	wr->wr_rec = *rec;
	list_add_tail(&wr->wr_link, &w->wk_forget);
}

static void work_drop_records(struct nfs4_work *w)
{
	struct nfs4_work_rec *wr, *tmp;
	list_for_each_entry_safe (wr, tmp, &w->wk_forget, wr_link) {
		list_del(&wr->wr_link);
		free(wr);
	}
}

void nfs4_work_run(struct nfs4_state *st, struct nfs4_work *w, uint64_t *seq)
{
	assert_none_held(LOCK_RANK_NFS4_CLIENTS, LOCK_RANK_NFS4_CLIENT); /* no state lock */
	const struct nfs4_record_ops *ops = st->cfg.records;
	struct nfs4_work_rec *wr, *wtmp;
	list_for_each_entry_safe (wr, wtmp, &w->wk_forget, wr_link) {
		uint64_t s = 0;
		if (ops && ops->forget) {
			int err = ops->forget(st->cfg.records_arg, &wr->wr_rec, &s);
			if (err)
				msg_warn("nfs4: forgetting client %016llx: error %d",
					 (unsigned long long)wr->wr_rec.clientid, err);
			else if (seq && s > *seq)
				*seq = s;
		}
		list_del(&wr->wr_link);
		free(wr);
	}
	while (!list_empty(&w->wk_sessions)) {
		struct nfs4_session *s =
			list_first_entry(&w->wk_sessions, struct nfs4_session, se_client_link);
		list_del(&s->se_client_link);
		nfs4_session_put(s);
	}
	while (!list_empty(&w->wk_stids)) {
		struct nfs4_stid *sd = list_first_entry(&w->wk_stids, struct nfs4_stid, sd_link);
		list_del(&sd->sd_link);
		nfs4_stid_put(sd);
	}
	while (!list_empty(&w->wk_clients)) {
		struct nfs4_client *clp =
			list_first_entry(&w->wk_clients, struct nfs4_client, cl_link);
		list_del(&clp->cl_link);
		nfs4_client_put(clp);
	}
}

/* ---- clients ------------------------------------------------------------ */

static struct nfs4_client *client_alloc(struct nfs4_state *st,
					const struct nfs4_exchange_id_args *a, uint64_t hash)
{
	struct nfs4_client *clp = xcalloc(1, sizeof(*clp));
	clp->cl_st = st;
	atomic_init(&clp->cl_refs, 1); /* the table's */
	clp->cl_owner_hash = hash;
	memcpy(clp->cl_verifier, a->verifier, NFS4_VERIFIER_SIZE);
	clp->cl_owner_len = a->ownerid_len;
	if (a->ownerid_len)
		memcpy(clp->cl_owner, a->ownerid, a->ownerid_len);
	clp->cl_principal = a->principal;
	list_init(&clp->cl_link);
	mutex_init(&clp->cl_lock, &client_class);
	clp->cl_status = NFS4_CL_UNCONFIRMED;
	clp->cl_flags = a->pnfs_role & EXCHGID4_FLAG_MASK_PNFS;
	atomic_init(&clp->cl_renew_ns, nfs4_now(st));
	list_init(&clp->cl_sessions);
	hashmap_init(&clp->cl_stids);
	list_init(&clp->cl_stid_list);
	clp->cl_stid_next = 1;
	return clp;
}

void nfs4_client_get(struct nfs4_client *clp)
{
	atomic_fetch_add(&clp->cl_refs, 1);
}

void nfs4_client_put(struct nfs4_client *clp)
{
	if (atomic_fetch_sub(&clp->cl_refs, 1) != 1)
		return;
	BUG_ON(!list_empty(&clp->cl_sessions) || clp->cl_nstids);
	hashmap_destroy(&clp->cl_stids);
	mutex_destroy(&clp->cl_lock);
	free(clp);
}

uint64_t nfs4_client_id(const struct nfs4_client *clp)
{
	return clp->cl_id;
}

bool nfs4_client_confirmed(struct nfs4_client *clp)
{
	mutex_lock(&clp->cl_lock);
	bool c = clp->cl_status == NFS4_CL_CONFIRMED || clp->cl_status == NFS4_CL_COURTESY;
	mutex_unlock(&clp->cl_lock);
	return c;
}

void nfs4_client_record_of(const struct nfs4_client *clp, struct nfs4_client_record *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->clientid = clp->cl_id;
	memcpy(rec->verifier, clp->cl_verifier, NFS4_VERIFIER_SIZE);
	rec->owner_len = clp->cl_owner_len;
	memcpy(rec->owner, clp->cl_owner, clp->cl_owner_len);
}

struct nfs4_client *nfs4_client_find(struct nfs4_state *st, uint64_t clientid)
{
	rwlock_rdlock(&st->lock);
	struct nfs4_client *clp = hashmap_get(&st->by_clientid, clientid);
	if (clp)
		nfs4_client_get(clp);
	rwlock_unlock(&st->lock);
	return clp;
}

/* Table held for writing. */
static void client_insert_locked(struct nfs4_state *st, struct nfs4_client *clp)
{
	assert_wrlocked(&st->lock);
	clp->cl_id = (uint64_t)st->cfg.boot_epoch << 32 | ++st->next_client;
	hashmap_put(&st->by_clientid, clp->cl_id, clp);
	clp->cl_owner_next = hashmap_get(&st->by_owner, clp->cl_owner_hash);
	hashmap_put(&st->by_owner, clp->cl_owner_hash, clp);
	list_add_tail(&clp->cl_link, &st->clients);
	st->nclients++;
	st->nunconfirmed++;
}

static void client_unlink_locked(struct nfs4_state *st, struct nfs4_client *clp)
{
	hashmap_remove(&st->by_clientid, clp->cl_id);
	struct nfs4_client **pp = NULL, *head = hashmap_get(&st->by_owner, clp->cl_owner_hash);
	if (head == clp) {
		if (clp->cl_owner_next)
			hashmap_put(&st->by_owner, clp->cl_owner_hash, clp->cl_owner_next);
		else
			hashmap_remove(&st->by_owner, clp->cl_owner_hash);
	} else {
		for (pp = &head->cl_owner_next; *pp != clp; pp = &(*pp)->cl_owner_next)
			BUG_ON(!*pp);
		*pp = clp->cl_owner_next;
	}
	clp->cl_owner_next = NULL;
	list_del(&clp->cl_link);
	st->nclients--;
}

void nfs4_client_expire_locked(struct nfs4_state *st, struct nfs4_client *clp, struct nfs4_work *w)
{
	assert_locked(&st->registry);
	assert_wrlocked(&st->lock);
	struct list sessions;
	list_init(&sessions);
	nfs4_grace_client_gone_locked(st, clp, w);
	if (clp->cl_saved) {
		struct nfs4_client_record rec;
		nfs4_client_record_of(clp, &rec);
		nfs4_work_forget(w, &rec);
		clp->cl_saved = false;
	}
	client_unlink_locked(st, clp);
	mutex_lock(&clp->cl_lock);
	if (clp->cl_status == NFS4_CL_UNCONFIRMED)
		st->nunconfirmed--;
	clp->cl_status = NFS4_CL_EXPIRED;
	list_splice_tail(&clp->cl_sessions, &sessions);
	clp->cl_nsessions = 0;
	nfs4_stids_detach_locked(clp, w);
	mutex_unlock(&clp->cl_lock);
	/* sessions are killed outside the client lock: session ranks below it */
	nfs4_sessions_kill_locked(st, &sessions);
	list_splice_tail(&sessions, &w->wk_sessions);
	list_add_tail(&clp->cl_link, &w->wk_clients); /* the table's reference */
}

static bool principal_eq(const struct nfs4_principal *a, const struct nfs4_principal *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

/* The lease of clp has run out (COURTESY, or CONFIRMED but not yet reaped). */
static bool lease_expired_locked(struct nfs4_state *st, struct nfs4_client *clp, uint64_t now)
{
	if (clp->cl_status == NFS4_CL_COURTESY)
		return true;
	return clp->cl_status == NFS4_CL_CONFIRMED && clp->cl_inflight == 0 &&
	       now - atomic_load(&clp->cl_renew_ns) >= st->cfg.lease_ns;
}

/* Make room for one client: expire the courtesy client renewed longest ago.
 * Registry and table (write) held. */
static bool evict_courtesy_locked(struct nfs4_state *st, struct nfs4_work *w)
{
	assert_locked(&st->registry);
	assert_wrlocked(&st->lock);
	struct nfs4_client *clp, *victim = NULL;
	uint64_t oldest = UINT64_MAX, now = nfs4_now(st);
	list_for_each_entry (clp, &st->clients, cl_link) {
		mutex_lock(&clp->cl_lock);
		bool expired = lease_expired_locked(st, clp, now);
		mutex_unlock(&clp->cl_lock);
		uint64_t renew = atomic_load(&clp->cl_renew_ns);
		if (expired && renew < oldest) {
			oldest = renew;
			victim = clp;
		}
	}
	if (!victim)
		return false;
	counter_inc(&st->c_expired);
	nfs4_client_expire_locked(st, victim, w);
	return true;
}

static void owner_lookup_locked(struct nfs4_state *st, const uint8_t *owner, uint32_t len,
				uint64_t hash, struct nfs4_client **conf,
				struct nfs4_client **unconf)
{
	*conf = *unconf = NULL;
	for (struct nfs4_client *c = hashmap_get(&st->by_owner, hash); c; c = c->cl_owner_next) {
		if (c->cl_owner_len != len || memcmp(c->cl_owner, owner, len) != 0)
			continue;
		mutex_lock(&c->cl_lock);
		bool unconfirmed = c->cl_status == NFS4_CL_UNCONFIRMED;
		mutex_unlock(&c->cl_lock);
		if (unconfirmed)
			*unconf = c;
		else
			*conf = c;
	}
}

/*
 * CREATE_SESSION confirms clp (its record already saved): the owner's old
 * confirmed record, a rebooted client's previous incarnation, goes with all
 * its state (EXCHANGE_ID case 5). Registry and table (write) held.
 */
void nfs4_client_confirm_locked(struct nfs4_state *st, struct nfs4_client *clp, struct nfs4_work *w)
{
	assert_locked(&st->registry);
	assert_wrlocked(&st->lock);
	struct nfs4_client *conf, *unconf;
	owner_lookup_locked(st, clp->cl_owner, clp->cl_owner_len, clp->cl_owner_hash, &conf,
			    &unconf);
	BUG_ON(unconf != clp);
	if (conf)
		nfs4_client_expire_locked(st, conf, w);
	nfs4_grace_confirm_locked(st, clp, w);
	clp->cl_saved = st->cfg.records != NULL;
	mutex_lock(&clp->cl_lock);
	clp->cl_status = NFS4_CL_CONFIRMED;
	atomic_store(&clp->cl_renew_ns, nfs4_now(st));
	mutex_unlock(&clp->cl_lock);
	st->nunconfirmed--;
}

uint32_t nfs4_exchange_id(struct nfs4_state *st, const struct nfs4_exchange_id_args *a,
			  struct nfs4_exchange_id_res *r, uint64_t *seq)
{
	assert_no_locks();
	struct nfs4_client *conf, *unconf, *clp = NULL;
	struct nfs4_work w;
	uint32_t status = NFS4_OK;
	uint64_t dummy;

	if (!seq)
		seq = &dummy;
	*seq = 0;
	memset(r, 0, sizeof(*r));
	if ((a->flags & ~NFS4_EXCHGID_MASK_A) || a->ownerid_len > NFS4_OPAQUE_LIMIT ||
	    a->principal.len > NFS4_PRINCIPAL_MAX)
		return NFS4ERR_INVAL;
	counter_inc(&st->c_exchange_id);
	bool update = a->flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;
	uint64_t hash = nfs4_owner_hash(st, a->ownerid, a->ownerid_len);
	uint64_t now = nfs4_now(st);

	nfs4_work_init(&w);
	mutex_lock(&st->registry);
	rwlock_wrlock(&st->lock);
	owner_lookup_locked(st, a->ownerid, a->ownerid_len, hash, &conf, &unconf);
	if (conf) {
		bool same_princ = principal_eq(&conf->cl_principal, &a->principal);
		bool same_verf = memcmp(conf->cl_verifier, a->verifier, NFS4_VERIFIER_SIZE) == 0;
		if (update) {
			if (!same_princ) {
				status = NFS4ERR_PERM; /* case 9 */
				goto out_unlock;
			}
			if (!same_verf) {
				status = NFS4ERR_NOT_SAME; /* case 8 */
				goto out_unlock;
			}
			/* case 6 */
			mutex_lock(&conf->cl_lock);
			conf->cl_flags = a->pnfs_role & EXCHGID4_FLAG_MASK_PNFS;
			mutex_unlock(&conf->cl_lock);
			clp = conf;
			goto out_result;
		}
		if (!same_princ) {
			/* case 3: a collision */
			mutex_lock(&conf->cl_lock);
			bool expired = lease_expired_locked(st, conf, now);
			bool has_state = conf->cl_nsessions || conf->cl_nstids;
			mutex_unlock(&conf->cl_lock);
			if (has_state && !expired) {
				status = NFS4ERR_CLID_INUSE;
				goto out_unlock;
			}
			if (expired)
				counter_inc(&st->c_expired);
			nfs4_client_expire_locked(st, conf, &w);
			conf = NULL;
		} else if (same_verf) {
			/* case 2: the client is evidently alive */
			mutex_lock(&conf->cl_lock);
			if (conf->cl_status == NFS4_CL_COURTESY) {
				conf->cl_status = NFS4_CL_CONFIRMED;
				counter_inc(&st->c_courtesy_revived);
			}
			atomic_store(&conf->cl_renew_ns, now);
			mutex_unlock(&conf->cl_lock);
			clp = conf;
			goto out_result;
		}
		/* case 5: conf stays until the new record is confirmed */
	} else if (update) {
		status = NFS4ERR_NOENT; /* case 7 */
		goto out_unlock;
	}
	/* cases 1 and 4, and 3 and 5 from above: a new unconfirmed record */
	if (unconf)
		nfs4_client_expire_locked(st, unconf, &w);
	if (st->nclients >= st->cfg.max_clients && !evict_courtesy_locked(st, &w)) {
		status = NFS4ERR_DELAY;
		goto out_unlock;
	}
	clp = client_alloc(st, a, hash);
	client_insert_locked(st, clp);
out_result:
	r->clientid = clp->cl_id;
	mutex_lock(&clp->cl_lock);
	r->flags = clp->cl_flags;
	if (clp->cl_status != NFS4_CL_UNCONFIRMED)
		r->flags |= EXCHGID4_FLAG_CONFIRMED_R;
	mutex_unlock(&clp->cl_lock);
	r->sequenceid = clp->cl_cs_seqid + 1;
out_unlock:
	rwlock_unlock(&st->lock);
	nfs4_work_run(st, &w, seq);
	mutex_unlock(&st->registry);
	return status;
}

uint32_t nfs4_destroy_clientid(struct nfs4_state *st, uint64_t clientid, uint64_t *seq)
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
	struct nfs4_client *clp = hashmap_get(&st->by_clientid, clientid);
	if (!clp) {
		status = NFS4ERR_STALE_CLIENTID;
		goto out;
	}
	mutex_lock(&clp->cl_lock);
	/* RFC 8881 §18.50.3: busy while state hangs on an unexpired lease */
	bool busy = (clp->cl_nsessions || clp->cl_nstids) &&
		    !lease_expired_locked(st, clp, nfs4_now(st));
	mutex_unlock(&clp->cl_lock);
	if (busy) {
		status = NFS4ERR_CLIENTID_BUSY;
		goto out;
	}
	nfs4_client_expire_locked(st, clp, &w);
out:
	rwlock_unlock(&st->lock);
	nfs4_work_run(st, &w, seq);
	mutex_unlock(&st->registry);
	return status;
}

bool nfs4_client_expire_if_courtesy(struct nfs4_state *st, uint64_t clientid, uint64_t *seq)
{
	assert_no_locks();
	struct nfs4_work w;
	bool expired = false;
	uint64_t dummy;

	if (!seq)
		seq = &dummy;
	*seq = 0;
	nfs4_work_init(&w);
	mutex_lock(&st->registry);
	rwlock_wrlock(&st->lock);
	struct nfs4_client *clp = hashmap_get(&st->by_clientid, clientid);
	if (clp) {
		mutex_lock(&clp->cl_lock);
		expired = lease_expired_locked(st, clp, nfs4_now(st));
		mutex_unlock(&clp->cl_lock);
		if (expired) {
			counter_inc(&st->c_expired);
			nfs4_client_expire_locked(st, clp, &w);
		}
	}
	rwlock_unlock(&st->lock);
	nfs4_work_run(st, &w, seq);
	mutex_unlock(&st->registry);
	return expired;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

uint64_t nfs4_state_reap(struct nfs4_state *st, uint64_t *seq)
{
	assert_no_locks();
	struct nfs4_work w;
	struct nfs4_client *clp, *tmp;
	uint64_t next = UINT64_MAX, dummy;

	if (!seq)
		seq = &dummy;
	*seq = 0;
	nfs4_work_init(&w);
	mutex_lock(&st->registry);
	rwlock_wrlock(&st->lock);
	uint64_t now = nfs4_now(st);
	nfs4_grace_tick_locked(st, now, &w);
	if (atomic_load(&st->grace_active))
		next = st->grace_start_ns + st->cfg.grace_ns;
	list_for_each_entry_safe (clp, tmp, &st->clients, cl_link) {
		bool expire = false;
		mutex_lock(&clp->cl_lock);
		uint64_t renew = atomic_load(&clp->cl_renew_ns);
		uint64_t lease_end = renew + st->cfg.lease_ns;
		if (clp->cl_status == NFS4_CL_UNCONFIRMED) {
			if (now >= lease_end)
				expire = true;
			else
				next = min64(next, lease_end);
		} else if (clp->cl_status == NFS4_CL_CONFIRMED &&
			   (now < lease_end || clp->cl_inflight)) {
			next = min64(next, now < lease_end ? lease_end : now + st->cfg.lease_ns);
		} else if (clp->cl_status != NFS4_CL_EXPIRED) {
			/* lease over with nothing in flight: kept, courteously */
			clp->cl_status = NFS4_CL_COURTESY;
			if (now - renew >= st->cfg.lease_ns + st->cfg.courtesy_max_ns)
				expire = true;
			else
				next = min64(next, lease_end + st->cfg.courtesy_max_ns);
		}
		mutex_unlock(&clp->cl_lock);
		if (expire) {
			counter_inc(&st->c_expired);
			nfs4_client_expire_locked(st, clp, &w);
		}
	}
	rwlock_unlock(&st->lock);
	nfs4_work_run(st, &w, seq);
	mutex_unlock(&st->registry);
	return next;
}

void nfs4_state_destroy(struct nfs4_state *st)
{
	nfs4_stid_hold_ends(st, false); /* what a test left held */
	struct nfs4_work w;
	nfs4_work_init(&w);
	mutex_lock(&st->registry);
	rwlock_wrlock(&st->lock);
	while (!list_empty(&st->clients))
		nfs4_client_expire_locked(
			st, list_first_entry(&st->clients, struct nfs4_client, cl_link), &w);
	nfs4_grace_destroy(st);
	rwlock_unlock(&st->lock);
	/* the records stay for the next instance */
	work_drop_records(&w);
	nfs4_work_run(st, &w, NULL);
	mutex_unlock(&st->registry);
	BUG_ON(atomic_load(&st->nstids) != 0);
	hashmap_destroy(&st->by_clientid);
	hashmap_destroy(&st->by_owner);
	hashmap_destroy(&st->by_session);
	hashmap_destroy(&st->prev_by_owner);
	rwlock_destroy(&st->lock);
	mutex_destroy(&st->registry);
	free(st);
}

void nfs4_state_counts(struct nfs4_state *st, struct nfs4_state_counts *c)
{
	struct nfs4_client *clp;
	memset(c, 0, sizeof(*c));
	rwlock_rdlock(&st->lock);
	c->clients = st->nclients;
	c->unconfirmed = st->nunconfirmed;
	c->sessions = st->nsessions;
	c->cache_reserved = st->cache_reserved;
	list_for_each_entry (clp, &st->clients, cl_link) {
		mutex_lock(&clp->cl_lock);
		if (clp->cl_status == NFS4_CL_COURTESY)
			c->courtesy++;
		mutex_unlock(&clp->cl_lock);
	}
	rwlock_unlock(&st->lock);
	c->stateids = atomic_load(&st->nstids);
	c->cache_bytes = atomic_load(&st->cache_bytes);
	c->expired = counter_get(&st->c_expired);
}

void nfs4_state_stats(struct nfs4_state *st, const struct stat_sink *sink)
{
	struct nfs4_state_counts c;
	struct nfs4_grace_info gi;
	nfs4_state_counts(st, &c);
	nfs4_grace_info(st, &gi);
	stat_emit(sink, "nfs4.clients", c.clients);
	stat_emit(sink, "nfs4.clients_unconfirmed", c.unconfirmed);
	stat_emit(sink, "nfs4.clients_courtesy", c.courtesy);
	stat_emit(sink, "nfs4.clients_expired", c.expired);
	stat_emit(sink, "nfs4.courtesy_revived", counter_get(&st->c_courtesy_revived));
	stat_emit(sink, "nfs4.sessions", c.sessions);
	stat_emit(sink, "nfs4.stateids", c.stateids);
	stat_emit(sink, "nfs4.slot_cache_bytes", c.cache_bytes);
	stat_emit(sink, "nfs4.slot_cache_reserved", c.cache_reserved);
	stat_emit(sink, "nfs4.replays", counter_get(&st->c_replays));
	stat_emit(sink, "nfs4.replays_uncached", counter_get(&st->c_replays_uncached));
	stat_emit(sink, "nfs4.seq_misordered", counter_get(&st->c_misordered));
	stat_emit(sink, "nfs4.exchange_id", counter_get(&st->c_exchange_id));
	stat_emit(sink, "nfs4.create_session", counter_get(&st->c_create_session));
	stat_emit(sink, "nfs4.reclaim_complete", counter_get(&st->c_reclaims_complete));
	stat_emit(sink, "nfs4.grace_active", gi.active);
	stat_emit(sink, "nfs4.grace_known_clients", gi.known);
	stat_emit(sink, "nfs4.grace_pending_clients", gi.pending);
	if (gi.started && !gi.active)
		stat_emit(sink, "nfs4.grace_ms", (gi.end_ns - gi.start_ns) / NSEC_PER_MSEC);
}
