/*
 * state_priv.h - the structures shared by client.c, session.c, stateid.c
 * and grace.c. Nothing outside src/nfs4/ may include this file.
 *
 * Each field says which lock guards it (lock order and ranks: client.h):
 *   [const]    set before the object is published, never changed
 *   [registry] st->registry held
 *   [table]    st->lock held (written with it held for writing)
 *   [client]   clp->cl_lock held
 *   [session]   s->se_lock held
 *   [atomic]   atomic access
 */
#ifndef JNFS_NFS4_STATE_PRIV_H
#define JNFS_NFS4_STATE_PRIV_H

#include <stdatomic.h>

#include "base/hashmap.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/rand.h"
#include "base/stats.h"
#include "nfs4/state/client.h"
#include "nfs4/state/grace.h"
#include "nfs4/state/session.h"
#include "nfs4/state/stateid.h"

enum nfs4_client_status {
	NFS4_CL_UNCONFIRMED,
	NFS4_CL_CONFIRMED,
	NFS4_CL_COURTESY,
	NFS4_CL_EXPIRED, /* out of the table; waiting for its last reference */
};

/* What a client may reclaim (grace.h). */
enum nfs4_reclaim {
	NFS4_RECLAIM_NONE,     /* not known from the previous instance */
	NFS4_RECLAIM_ELIGIBLE, /* known, same verifier */
	NFS4_RECLAIM_BAD,      /* known, rebooted since */
};

/* A client record of the previous instance (grace.c). */
struct nfs4_prev {
	struct nfs4_client_record pv_rec; /* [const] */
	uint64_t pv_hash;		  /* [const] owner hash */
	struct nfs4_prev *pv_next;	  /* [table] same owner hash */
	struct list pv_link;		  /* [table] st->prev_list */
	bool pv_done;			  /* [table] completed, rebooted or gone */
	bool pv_linked;			  /* [table] came back: record replaced */
};

struct nfs4_client {
	struct nfs4_state *cl_st; /* [const] */
	atomic_uint cl_refs;	  /* the table's and every holder's */

	/* identity [const] */
	uint64_t cl_id;
	uint64_t cl_owner_hash;
	uint8_t cl_verifier[NFS4_VERIFIER_SIZE];
	uint32_t cl_owner_len;
	uint8_t cl_owner[NFS4_OPAQUE_LIMIT];
	struct nfs4_principal cl_principal;

	/* [table] */
	struct list cl_link;		   /* st->clients, oldest renewal first-ish */
	struct nfs4_client *cl_owner_next; /* same owner hash */

	struct mutex cl_lock;
	enum nfs4_client_status cl_status; /* [client]; registry too for leaving
					    * UNCONFIRMED and entering EXPIRED */
	uint32_t cl_flags;		   /* [client] eir_flags but CONFIRMED_R */
	atomic_uint_least64_t cl_renew_ns; /* [atomic] last renewal */
	unsigned cl_inflight;		   /* [client] SEQUENCE slots in use */
	bool cl_saved;			   /* [registry] durable record saved */

	/* CREATE_SESSION's slot (RFC 8881 §18.36.4) [registry] */
	uint32_t cl_cs_seqid;
	bool cl_cs_cached;
	struct nfs4_create_session_res cl_cs_res;

	struct list cl_sessions; /* [client] struct nfs4_session.se_client_link */
	unsigned cl_nsessions;	 /* [client] */

	/* stateids [client] */
	struct hashmap cl_stids; /* other[8..11] counter -> struct nfs4_stid */
	struct list cl_stid_list;
	unsigned cl_nstids;
	uint32_t cl_stid_next;
	unsigned cl_revoked[3]; /* by enum nfs4_revoke_reason, still unfreed */

	/* grace [table] */
	enum nfs4_reclaim cl_reclaim;
	struct nfs4_prev *cl_prev; /* its previous-instance record, while grace lasts */
	bool cl_reclaim_complete;
};

/* A fore channel slot; every field [session]. */
struct nfs4_slot {
	uint32_t sl_seqid;
	bool sl_inuse;
	bool sl_init;	    /* a request was accepted since the slot was created */
	bool sl_reused;	    /* reopened after a shrink: also accepts seqid 1 */
	bool sl_cachethis;  /* the slot's request: its sa_cachethis */
	bool sl_cache_want; /* ... or it was a lone SEQUENCE: cache its reply */
	bool sl_solo;
	bool sl_cached; /* sl_buf holds the reply of the slot's request */
	uint64_t sl_digest;
	uint8_t *sl_buf;
	uint32_t sl_len, sl_cap;
	/* the SEQUENCE result of the slot's request, for REPLAY_UNCACHED */
	uint32_t sl_status_flags;
};

/* A bound connection; [session]. */
struct nfs4_conn {
	void *cn_conn;
	uint64_t cn_id;
	uint32_t cn_dir; /* NFS4_CDFS_* */
};

struct nfs4_session {
	struct nfs4_client *se_client; /* [const] referenced */
	atomic_uint se_refs;
	uint8_t se_id[NFS4_SESSIONID_SIZE]; /* [const] */
	uint32_t se_key;		    /* [const] se_id[8..11], the map key */
	struct list se_client_link;	    /* [client] */

	struct mutex se_lock;
	bool se_dead;			   /* [session] destroyed or client gone */
	struct nfs4_channel_attrs se_fore; /* [const] */
	struct nfs4_channel_attrs se_back; /* [const] */
	uint32_t se_flags;		   /* [const] csr_flags */
	uint32_t se_cb_program;		   /* [session] */
	uint32_t se_cb_flavor;		   /* [session] */
	uint32_t se_minorversion;	   /* of its CREATE_SESSION */
	uint32_t se_nslots;		   /* [const] negotiated slots */
	uint32_t se_highest;		   /* [session] highest usable slot id */
	uint32_t se_target;		   /* [session] sr_target_highest_slotid */
	uint32_t se_slot_cap;		   /* [const] bytes a slot may cache */
	size_t se_reserved;		   /* [const] from st->cache_reserved */
	unsigned se_inuse;		   /* [session] slots in use */
	struct nfs4_slot *se_slots;	   /* [session] se_nslots of them */

	struct nfs4_conn se_conns[NFS4_SESSION_MAX_CONNS]; /* [session] */
	unsigned se_nconns;
	bool se_back_wanted;  /* [session] the client asked for a back channel */
	bool se_cb_fault;     /* [session] a callback got no reply */
	atomic_bool se_cb_up; /* [session] written, read unlocked: a back conn, no fault */
	bool se_cb_busy;      /* [session] the back channel slot */
	uint32_t se_cb_seqid; /* [session] */
};

struct nfs4_stid {
	struct nfs4_state *sd_st;	/* [const] */
	atomic_uint sd_refs;		/* the table's (while hashed) and every holder's */
	unsigned sd_type;		/* [const] */
	uint32_t sd_key;		/* [const] other[8..11] */
	uint64_t sd_clientid;		/* [const] */
	struct nfs4_client *sd_client;	/* [client] NULL once unhashed */
	struct list sd_link;		/* [client] clp->cl_stid_list */
	uint32_t sd_seqid;		/* [client] */
	bool sd_hashed;			/* [client] */
	bool sd_revoked;		/* [client] */
	enum nfs4_revoke_reason sd_why; /* [client] */
	void *sd_payload;		/* [client] NULL once released */
	atomic_bool sd_release_pending; /* [client] revoked, payload still held */
	struct nfs4_stid *sd_held_next; /* in st->held (nfs4_stid_hold_ends) */
	struct mutex sd_op_lock;	/* nfs4_stid_lock(): the caller's operations */
};

struct nfs4_state {
	struct nfs4_state_config cfg; /* [const] */
	uint8_t owner_key[16];	      /* [const] SipHash key for owners */

	struct mutex registry;
	struct rwlock lock;
	struct hashmap by_clientid;		    /* [table] clientid -> client */
	struct hashmap by_owner;		    /* [table] owner hash -> client chain */
	struct hashmap by_session;		    /* [table] se_key -> session */
	struct list clients;			    /* [table] every client in the table */
	uint32_t next_client;			    /* [table] */
	uint32_t next_session;			    /* [table] */
	unsigned nclients, nunconfirmed, nsessions; /* [table] */
	size_t cache_reserved;			    /* [table] */
	struct rng rng;				    /* [table] */

	/* grace [table]; grace_active also read unlocked */
	struct hashmap prev_by_owner; /* owner hash -> struct nfs4_prev chain */
	struct list prev_list;
	unsigned prev_known, prev_pending;
	bool grace_started;
	atomic_bool grace_active;
	enum nfs4_grace_end grace_end;
	uint64_t grace_start_ns, grace_end_ns;

	/* tests only (nfs4_stid_hold_ends): ends keep a reference [atomic] */
	atomic_bool hold_ends;
	struct nfs4_stid *_Atomic held;

	/* counters [atomic] */
	atomic_uint nstids;
	atomic_uint_least64_t cache_bytes;
	counter_t c_expired, c_courtesy_revived, c_replays, c_replays_uncached;
	counter_t c_misordered, c_exchange_id, c_create_session, c_reclaims_complete;
};

/* Records to save or forget and references to drop once the state locks
 * are released (client.h invariants 4 and 5). */
struct nfs4_work {
	struct list wk_forget;	 /* struct nfs4_work_rec */
	struct list wk_sessions; /* struct nfs4_session.se_client_link, to put */
	struct list wk_stids;	 /* struct nfs4_stid.sd_link, to put */
	struct list wk_clients;	 /* struct nfs4_client.cl_link, to put */
};

struct nfs4_work_rec {
	struct list wr_link;
	struct nfs4_client_record wr_rec;
};

void nfs4_work_init(struct nfs4_work *w);
/* Queue rec to be forgotten. */
void nfs4_work_forget(struct nfs4_work *w, const struct nfs4_client_record *rec);
/* Call the record store and drop the references; no state lock held
 * (registry may be). The highest commit sequence goes to *seq. */
void nfs4_work_run(struct nfs4_state *st, struct nfs4_work *w, uint64_t *seq);

/* client.c */
void nfs4_client_record_of(const struct nfs4_client *clp, struct nfs4_client_record *rec);
/* Take clp out of the table with everything it has; registry and table
 * (write) held, clp->cl_lock not held. */
void nfs4_client_expire_locked(struct nfs4_state *st, struct nfs4_client *clp, struct nfs4_work *w);
/* CREATE_SESSION confirms clp, whose record is saved; registry and table
 * (write) held. */
void nfs4_client_confirm_locked(struct nfs4_state *st, struct nfs4_client *clp,
				struct nfs4_work *w);
uint64_t nfs4_owner_hash(const struct nfs4_state *st, const uint8_t *owner, uint32_t len);

/* session.c */
/* Destroy every session of clp's list w->wk_sessions holds (mark dead,
 * unhash, give back the cache reservation); table held for writing. */
void nfs4_sessions_kill_locked(struct nfs4_state *st, struct list *sessions);

/* stateid.c */
/* Move all of clp's stateids to w (unhashed); clp->cl_lock held. */
void nfs4_stids_detach_locked(struct nfs4_client *clp, struct nfs4_work *w);
/* SEQUENCE status flags about revoked state; clp->cl_lock held. */
uint32_t nfs4_stids_flags_locked(struct nfs4_client *clp);

/* grace.c */
/* clp is being confirmed: match it to a previous record; table held for
 * writing. A record to forget (the replaced previous one) goes to w. */
void nfs4_grace_confirm_locked(struct nfs4_state *st, struct nfs4_client *clp, struct nfs4_work *w);
/* clp leaves the table; table held for writing. */
void nfs4_grace_client_gone_locked(struct nfs4_state *st, struct nfs4_client *clp,
				   struct nfs4_work *w);
/* End grace if its time is up; table held for writing. */
void nfs4_grace_tick_locked(struct nfs4_state *st, uint64_t now, struct nfs4_work *w);
void nfs4_grace_destroy(struct nfs4_state *st);
/* RESTART_RECLAIM_NEEDED for clp? Reads table-guarded fields racily. */
bool nfs4_grace_reclaim_needed(struct nfs4_state *st, struct nfs4_client *clp);

static inline uint64_t nfs4_now(const struct nfs4_state *st)
{
	return st->cfg.clock(st->cfg.clock_arg);
}

static inline void nfs4_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t nfs4_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif
