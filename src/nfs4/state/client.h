/*
 * client.h - the NFSv4.1 state core: the client table (EXCHANGE_ID,
 * confirmation, leases, the courteous server, DESTROY_CLIENTID) and the
 * object that owns every piece of client state.
 *
 * Design note (the model is drawn in docs/nfs4-state.md).
 *
 * A struct nfs4_state holds every client of one server instance. A client
 * is known by its clientid (64 bits: the server's boot epoch in the high 32
 * bits, a counter in the low 32) and by its client owner (co_ownerid bytes).
 * Sessions (session.h) and stateids (stateid.h) belong to a client; the
 * grace period (grace.h) belongs to the state object. Nothing here knows
 * XDR: arguments and results are plain structs with fixed-size arrays, and
 * answers are nfsstat4 values (status.h).
 *
 * Client record states:
 *
 *   EXCHANGE_ID ──► UNCONFIRMED ──CREATE_SESSION──► CONFIRMED ◄──SEQUENCE──┐
 *                      │  (lease passes,                │ lease passes,    │
 *                      │   replaced by a new             │ nothing in      │
 *                      │   EXCHANGE_ID)                  ▼ flight          │
 *                      │                              COURTESY ────────────┘
 *                      ▼                                 │ conflict, bound, courtesy
 *                   (freed) ◄── DESTROY_CLIENTID, ───────┘ time, replaced by a
 *                               replaced by a confirmed      rebooted client
 *                               rebooted client
 *
 * Invariants (tests cite them as "client invariant N"):
 *  1. At most one confirmed-or-courtesy and at most one unconfirmed record
 *     exist per client owner.
 *  2. A clientid is never reused within one boot epoch, and a clientid of
 *     another epoch is never found (STALE_CLIENTID).
 *  3. A client with a request in flight (a SEQUENCE slot in use) never
 *     becomes COURTESY; a COURTESY client that sends SEQUENCE is CONFIRMED
 *     again with all its state.
 *  4. A client leaves the table with every session and stateid it had: none
 *     is reachable afterwards, and each stateid's payload is handed to the
 *     release callback exactly once, with no state lock held.
 *  5. A confirmed client's durable record is saved before its confirmation
 *     is visible, and forgotten when the client leaves the table; every
 *     call into the record store happens with no state lock held, under
 *     the registry mutex, so save/forget reach the store in decision order.
 *  6. Memory is bounded by the configuration: clients (max_clients),
 *     sessions, slots and their cached replies, stateids. Nothing a client
 *     sends makes the server allocate beyond these bounds.
 *
 * Locks (ranks; lowest taken first; docs/nfs4-state.md has the reasons):
 *    80 nfs4.registry  serializes every change to the set of clients and
 *                      their durable records. It is held while the record
 *                      store runs (engine locks rank from 90 up), so it
 *                      ranks below the whole engine.
 *   550 nfs4.stid      one stateid's operations (stateid.h), held by the op
 *                      layer across the byte-range lock and share tables
 *                      (570-580)
 *   610 nfs4.clients   the state's tables (rwlock): clientid, owner and
 *                      sessionid maps, the client list, grace.
 *   620 nfs4.session   one session: its slots and connections.
 *   630 nfs4.client    one client: status, lease, sessions, stateids.
 * The brlock and share-reservation locks (570-580) may be held by a caller
 * of the lookup functions here; every function that may call back into the
 * caller (release, has_locks, the record store) must be called with no
 * lock held and says so.
 *
 * Time comes from cfg.clock (tests replace it). No function sleeps.
 */
#ifndef JNFS_NFS4_CLIENT_H
#define JNFS_NFS4_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"
#include "nfs4/state/status.h"

#define NFS4_VERIFIER_SIZE  8
#define NFS4_OPAQUE_LIMIT   1024 /* co_ownerid and other opaques (RFC 8881) */
#define NFS4_PRINCIPAL_MAX  128
#define NFS4_SESSIONID_SIZE 16
#define NFS4_SERVER_ID_MAX  64 /* so_major_id and server scope we hand out */

struct nfs4_state;
struct nfs4_client;
struct nfs4_stid;

/*
 * Who sent a request, as the op layer derives it from the RPC credential
 * (for AUTH_SYS e.g. "sys:" uid gid; for RPCSEC_GSS the principal name).
 * Compared byte for byte; with SP4_NONE it only decides client collisions.
 */
struct nfs4_principal {
	uint32_t len;
	uint8_t data[NFS4_PRINCIPAL_MAX];
};

/* A client as the record store keeps it: what a restarted server needs to
 * recognise the client and let it reclaim. Keyed by clientid, so the
 * records of two incarnations of one owner never collide. */
struct nfs4_client_record {
	uint64_t clientid;
	uint8_t verifier[NFS4_VERIFIER_SIZE];
	uint32_t owner_len;
	uint8_t owner[NFS4_OPAQUE_LIMIT];
};

/*
 * The durable record store, implemented by the caller on the engine. Each
 * call commits a transaction and returns 0 and the commit sequence in *seq,
 * which the op layer forces before it replies; or -errno. Called with no
 * state lock held, under the registry mutex (invariant 5).
 */
struct nfs4_record_ops {
	int (*save)(void *arg, const struct nfs4_client_record *rec, uint64_t *seq);
	int (*forget)(void *arg, const struct nfs4_client_record *rec, uint64_t *seq);
};

/* What the caller keeps behind a stateid (stateid.h). */
struct nfs4_stid_ops {
	/* Does this lock stateid still hold byte-range locks? (FREE_STATEID)
	 * Called with no state lock held, with a reference on the stateid. */
	bool (*has_locks)(void *arg, unsigned type, void *payload);
	/* The stateid is gone (closed, freed, or its client expired) and no
	 * one holds it any more, or it was revoked: give back what payload
	 * holds. Called exactly once per payload, with no state lock held. */
	void (*release)(void *arg, unsigned type, void *payload);
};

/* One channel's attributes (RFC 8881 §18.36: channel_attrs4 without RDMA). */
struct nfs4_channel_attrs {
	uint32_t headerpadsize;
	uint32_t maxrequestsize;
	uint32_t maxresponsesize;
	uint32_t maxresponsesize_cached;
	uint32_t maxoperations;
	uint32_t maxrequests;
};

struct nfs4_state_config {
	/* Differs at every server start (e.g. a counter kept on disk, or the
	 * start time in seconds): clientids, sessionids and stateids of
	 * another instance are stale. Never 0. */
	uint32_t boot_epoch;
	/* The server owner and scope derive from this (e.g. the filesystem
	 * UUID), so they are the same after a restart. */
	uint8_t server_uuid[16];
	uint64_t lease_ns;		  /* 90 s */
	uint64_t grace_ns;		  /* 90 s */
	uint64_t courtesy_max_ns;	  /* how long an expired client is kept: 24 h */
	unsigned max_clients;		  /* confirmed, courtesy and unconfirmed: 1024 */
	unsigned max_sessions;		  /* all clients: 1024 */
	unsigned max_sessions_per_client; /* 16 */
	unsigned max_stateids;		  /* all clients: 1,048,576 */
	unsigned max_stateids_per_client; /* 65,536 */
	/* The server's limits for the fore channel: a client gets the minimum
	 * of what it asks and these. maxrequests is the slot count (at least
	 * 64). */
	struct nfs4_channel_attrs fore_max;
	unsigned back_max_slots; /* back channel slots we use: 1 */
	/* Bytes of slot reply caches all sessions together may reserve; a
	 * session gets fewer slots when the rest would not fit. 64 MiB. */
	size_t cache_budget;
	/* Clock in nanoseconds (monotonic); default now_ns(). */
	uint64_t (*clock)(void *arg);
	void *clock_arg;
	const struct nfs4_record_ops *records; /* may be NULL: nothing durable */
	void *records_arg;
	const struct nfs4_stid_ops *stid_ops; /* may be NULL */
	void *stid_arg;
	uint64_t seed; /* sessionid randomness; 0: from getrandom() */
};

void nfs4_state_config_default(struct nfs4_state_config *c);

/* Create the state of one server instance (the config is copied). Before
 * serving, load the previous instance's client records and start grace
 * (grace.h). Returns NULL on a bad config (boot_epoch 0, fore_max too small). */
struct nfs4_state *nfs4_state_create(const struct nfs4_state_config *c);
/* Free everything. Release callbacks run for every live payload; the record
 * store is not called (records survive a clean stop for the next instance).
 * No references may be held by the caller any more. */
void nfs4_state_destroy(struct nfs4_state *st);

uint64_t nfs4_state_now(const struct nfs4_state *st);

/* Server owner and scope for EXCHANGE_ID: stable across restarts. */
struct nfs4_server_owner {
	uint64_t minor_id;
	uint32_t major_len;
	uint8_t major[NFS4_SERVER_ID_MAX];
	uint32_t scope_len;
	uint8_t scope[NFS4_SERVER_ID_MAX];
};
void nfs4_server_owner(const struct nfs4_state *st, struct nfs4_server_owner *o);

/* ---- EXCHANGE_ID (RFC 8881 §18.35) ------------------------------------- */

struct nfs4_exchange_id_args {
	uint8_t verifier[NFS4_VERIFIER_SIZE]; /* co_verifier */
	const uint8_t *ownerid;		      /* co_ownerid, copied */
	uint32_t ownerid_len;
	uint32_t flags; /* eia_flags */
	struct nfs4_principal principal;
	/* The pNFS role the server plays for this client (the op layer's
	 * choice by export): EXCHGID4_FLAG_USE_NON_PNFS or _USE_PNFS_MDS. */
	uint32_t pnfs_role;
};

struct nfs4_exchange_id_res {
	uint64_t clientid;
	uint32_t sequenceid; /* eir_sequenceid: csa_sequence of the next CREATE_SESSION */
	uint32_t flags;	     /* eir_flags */
};

/*
 * EXCHANGE_ID with state protection SP4_NONE, per the case table of
 * RFC 8881 §18.35.5 (docs/nfs4-state.md lists the cases and our answers):
 * a new owner gets a new unconfirmed record; the same verifier and
 * principal is a retry (same clientid, CONFIRMED_R); another verifier is a
 * rebooted client (a new unconfirmed record; the old record and its state
 * go when the new one is confirmed); another principal with state is
 * CLID_INUSE; updates answer NOENT, NOT_SAME or PERM. When the table is
 * full the oldest courtesy client is expired; with none, DELAY.
 * Call with no lock held (may expire a courtesy client). *seq is the commit
 * sequence of any record change (0 if none).
 */
uint32_t nfs4_exchange_id(struct nfs4_state *st, const struct nfs4_exchange_id_args *a,
			  struct nfs4_exchange_id_res *r, uint64_t *seq);

/* ---- clients ---------------------------------------------------------- */

/* DESTROY_CLIENTID (RFC 8881 §18.50): STALE_CLIENTID if unknown,
 * CLIENTID_BUSY while the client has sessions or stateids and its lease has
 * not expired. Call with no lock held. */
uint32_t nfs4_destroy_clientid(struct nfs4_state *st, uint64_t clientid, uint64_t *seq);

/*
 * A request of another client conflicts with state of clientid: if that
 * client is COURTESY, expire it now (its state is released before this
 * returns) and return true; the caller retries. false: the client is alive
 * (or unknown), the conflict stands. Call with no lock held.
 */
bool nfs4_client_expire_if_courtesy(struct nfs4_state *st, uint64_t clientid, uint64_t *seq);

/*
 * The periodic work (call every few seconds, from a thread with no lock
 * held): unconfirmed records older than the lease are dropped; confirmed
 * clients whose lease passed with nothing in flight become COURTESY;
 * courtesy clients older than courtesy_max are expired; grace ends when
 * its time is up. Returns the time of the next deadline it knows of.
 */
uint64_t nfs4_state_reap(struct nfs4_state *st, uint64_t *seq);

/* A client found by clientid, referenced (nfs4_client_put), or NULL. */
struct nfs4_client *nfs4_client_find(struct nfs4_state *st, uint64_t clientid);
void nfs4_client_get(struct nfs4_client *clp);
void nfs4_client_put(struct nfs4_client *clp);
uint64_t nfs4_client_id(const struct nfs4_client *clp);
bool nfs4_client_confirmed(struct nfs4_client *clp);

/* Counts, for tests and counters. */
struct nfs4_state_counts {
	unsigned clients; /* in the table, any status */
	unsigned unconfirmed;
	unsigned courtesy;
	unsigned sessions;
	unsigned stateids;    /* allocated and not yet released */
	uint64_t cache_bytes; /* slot reply caches allocated */
	uint64_t cache_reserved;
	uint64_t expired; /* clients expired since start (lease or conflict) */
};
void nfs4_state_counts(struct nfs4_state *st, struct nfs4_state_counts *c);
/* "nfs4.*" counters. */
void nfs4_state_stats(struct nfs4_state *st, const struct stat_sink *sink);

#endif
