/*
 * session.h - NFSv4.1 sessions: CREATE_SESSION and its reply cache, the
 * fore channel slot table with exactly-once replies (SEQUENCE),
 * DESTROY_SESSION, connection binding, and the back channel's slot.
 *
 * Design note.
 *
 * A session (RFC 8881 §2.10) belongs to a confirmed client. Its sessionid
 * is the clientid (8 bytes), a counter unique in this server instance
 * (4 bytes) and 4 random bytes, so a sessionid is never reused and cannot
 * be guessed from another.
 *
 * Each fore channel slot (RFC 8881 §2.10.6.1) holds the sequence id of the
 * last request it accepted and what is needed to answer a retry of it:
 *
 *         SEQUENCE seqid == slot+1                sequence_done(reply)
 *   IDLE ─────────────────────────► IN_USE ──────────────────────────► IDLE
 *    ▲ │  (seqid becomes the slot's)  │  seqid == slot: DELAY           │
 *    │ │                              │  other seqid: SEQ_MISORDERED    │
 *    │ └─ seqid == slot: a retry ─────┴───────────────────────────────────┘
 *    │      cached bytes → REPLAY; else → REPLAY_UNCACHED
 *    └─── anything else: SEQ_MISORDERED (slot unchanged)
 *
 * What is cached (RFC 8881 §2.10.6.1.3, §2.10.6.4): sa_cachethis asks the
 * server to cache the reply to the operations after SEQUENCE; with it the
 * server MUST cache unless SEQUENCE itself failed. Without it only the
 * SEQUENCE result is kept, so a retry gets SEQUENCE's result and the next
 * operation NFS4ERR_RETRY_UNCACHED_REP (REPLAY_UNCACHED below). A compound
 * that is a lone SEQUENCE has nothing after SEQUENCE: its whole reply is
 * the SEQUENCE result, and it is cached as bytes like a cachethis reply
 * (within NFS4_SLOT_SOLO_MAX), so its retry is answered byte for byte.
 *
 * Invariants:
 *  1. A slot is IN_USE for exactly one request at a time; a request that
 *     got NFS4_SEQ_NEW is ended by exactly one sequence_done().
 *  2. A retry never executes anything and never allocates: it copies the
 *     slot's bytes out, or answers from the slot's fields.
 *  3. A slot's cache never exceeds the slot capacity, max(negotiated
 *     maxresponsesize_cached, NFS4_SLOT_SOLO_MAX), and the capacity of all
 *     slots of all sessions is reserved from cfg.cache_budget at
 *     CREATE_SESSION: cached bytes are bounded whatever clients send.
 *  4. A successful CREATE_SESSION is cached in its client; a retry with the
 *     same csa_sequence gets the same result and creates nothing.
 *  5. A session's bound connections are a fixed array: at most
 *     NFS4_SESSION_MAX_CONNS, unbound when the RPC layer reports them closed.
 */
#ifndef JNFS_NFS4_SESSION_H
#define JNFS_NFS4_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs4/state/client.h"

struct nfs4_session;

#define NFS4_SESSION_MAX_CONNS 8
/* Capacity kept for the reply of a compound holding only SEQUENCE (its
 * tag included): such a reply is cached even when the client asked for a
 * smaller maxresponsesize_cached. */
#define NFS4_SLOT_SOLO_MAX 256
/* The smallest request and reply a fore channel must allow (a SEQUENCE
 * with an empty tag, with RPC headers): below them, TOOSMALL. */
#define NFS4_MIN_REQUEST_SIZE  256
#define NFS4_MIN_RESPONSE_SIZE 256

/* ---- CREATE_SESSION (RFC 8881 §18.36) --------------------------------- */

struct nfs4_create_session_args {
	uint64_t clientid;
	uint32_t sequence; /* csa_sequence */
	uint32_t flags;	   /* CREATE_SESSION4_FLAG_* */
	struct nfs4_channel_attrs fore, back;
	uint32_t cb_program;
	/* the credential flavor of back channel calls: RPC_AUTH_SYS when the
	 * client's csa_sec_parms offer it, else RPC_AUTH_NONE */
	uint32_t cb_flavor;
	/* the minor version of the CREATE_SESSION compound (1 or 2): back
	 * channel compounds carry it, and the Linux client takes a callback
	 * only for a client of the minor version it names */
	uint32_t minorversion;
	struct nfs4_principal principal;
	/* The connection the request came on (bound to the new session; for
	 * the back channel too with CONN_BACK_CHAN). conn is only an identity
	 * handed back by nfs4_cb_sequence_begin(); conn_id must be unique
	 * among live connections. */
	void *conn;
	uint64_t conn_id;
};

struct nfs4_create_session_res {
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	uint32_t sequence;
	uint32_t flags;
	struct nfs4_channel_attrs fore, back;
};

/*
 * Create a session and, for an unconfirmed client, confirm it (saving its
 * durable record first; *seq is what to force before replying). Answers
 * STALE_CLIENTID, CLID_INUSE (unconfirmed record, other principal),
 * SEQ_MISORDERED, TOOSMALL, NOSPC (session bounds), DELAY (cache budget
 * exhausted), SERVERFAULT (the record store failed). A retry of the last
 * successful CREATE_SESSION returns its cached result. Call with no lock
 * held.
 */
uint32_t nfs4_create_session(struct nfs4_state *st, const struct nfs4_create_session_args *a,
			     struct nfs4_create_session_res *r, uint64_t *seq);

/*
 * DESTROY_SESSION (RFC 8881 §18.37). cur is the session the compound's
 * SEQUENCE holds (or NULL); its own slot does not count as busy. BADSESSION
 * if unknown, DELAY while another request is in progress on it. Slots
 * held by the caller stay valid until their sequence_done().
 */
uint32_t nfs4_destroy_session(struct nfs4_state *st, const uint8_t *sessionid,
			      struct nfs4_session *cur);

/* ---- SEQUENCE (RFC 8881 §18.46) --------------------------------------- */

struct nfs4_seq_args {
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	uint32_t sequenceid;
	uint32_t slotid;
	uint32_t highest_slotid;
	bool cachethis;
	bool solo; /* the compound holds SEQUENCE only */
	/* A digest of the operations after SEQUENCE (not of SEQUENCE's own
	 * arguments, which may differ on a retry); a retry whose digest
	 * differs from the original's is SEQ_FALSE_RETRY. 0: not checked. */
	uint64_t digest;
	/* The connection (bound to the fore channel if it is not yet). */
	void *conn;
	uint64_t conn_id;
	/* The compound's operation count and the request's size, checked
	 * against the session's maxoperations (TOO_MANY_OPS) and
	 * maxrequestsize (REQ_TOO_BIG) before the slot is looked at, so such a
	 * request leaves the slot as it was (0: not checked). */
	uint32_t nops;
	uint32_t req_len;
	/* The smallest reply the request can have (RPC header, compound
	 * header, SEQUENCE's result): with cachethis, one larger than
	 * maxresponsesize_cached is REP_TOO_BIG_TO_CACHE, checked as the two
	 * above, before the slot (0: not checked). */
	uint32_t rep_min;
	/* Where a cached reply is copied: at least maxresponsesize_cached
	 * (and NFS4_SLOT_SOLO_MAX) bytes; NULL: a buffer of the reply's size
	 * is allocated and returned in res.replay (the caller frees it). */
	void *replay_buf;
	size_t replay_cap;
};

enum nfs4_seq_kind {
	NFS4_SEQ_NEW,		  /* run the compound, then nfs4_sequence_done() */
	NFS4_SEQ_REPLAY,	  /* send replay_buf[0..replay_len) as the compound reply */
	NFS4_SEQ_REPLAY_UNCACHED, /* SEQUENCE succeeds with these results; the next
				   * operation (if any) is NFS4ERR_RETRY_UNCACHED_REP */
};

struct nfs4_seq_res {
	enum nfs4_seq_kind kind;
	uint32_t sequenceid;
	uint32_t slotid;
	uint32_t highest_slotid;
	uint32_t target_highest_slotid;
	uint32_t status_flags; /* SEQ4_STATUS_* */
	size_t replay_len;
	void *replay; /* NFS4_SEQ_REPLAY: the cached reply (replay_buf, or allocated) */
};

/*
 * SEQUENCE: find the session and check the slot. NFS4_OK with *sess
 * referenced (nfs4_session_put() when the compound is answered), or an
 * error with nothing held: BADSESSION, TOO_MANY_OPS, REQ_TOO_BIG,
 * REP_TOO_BIG_TO_CACHE, BADSLOT
 * (slotid above the highest),
 * BAD_HIGH_SLOT, SEQ_MISORDERED, DELAY (the original is still in progress),
 * SEQ_FALSE_RETRY, SERVERFAULT (replay_cap too small). Renews the client's
 * lease (a COURTESY client becomes CONFIRMED, client invariant 3).
 */
uint32_t nfs4_sequence(struct nfs4_state *st, const struct nfs4_seq_args *a, struct nfs4_seq_res *r,
		       struct nfs4_session **sess);

/*
 * The request that got NFS4_SEQ_NEW on slotid is answered with reply[0..len)
 * (the COMPOUND4res body). Cached when the request had cachethis or was a
 * lone SEQUENCE. Returns 0, or -EMSGSIZE when a reply that was to be cached
 * is larger than the slot capacity (the op layer should have answered
 * REP_TOO_BIG_TO_CACHE; a retry then gets REPLAY_UNCACHED).
 * A request that failed before any reply exists passes reply = NULL.
 */
int nfs4_sequence_done(struct nfs4_session *s, uint32_t slotid, const void *reply, size_t len);

/* A session of clp whose back channel is up (a connection bound for it,
 * no fault), referenced; or NULL. For calls to the client (recalls). */
struct nfs4_session *nfs4_client_back_session(struct nfs4_client *clp);

/* The session with this id, referenced, or NULL. */
struct nfs4_session *nfs4_session_find(struct nfs4_state *st, const uint8_t *sessionid);
void nfs4_session_get(struct nfs4_session *s);
void nfs4_session_put(struct nfs4_session *s);
/* The session's client: valid while the session is referenced. */
struct nfs4_client *nfs4_session_client(struct nfs4_session *s);
void nfs4_session_id(const struct nfs4_session *s, uint8_t *sessionid);
/* The negotiated fore channel (REQ_TOO_BIG, REP_TOO_BIG[_TO_CACHE], TOO_MANY_OPS). */
void nfs4_session_fore_attrs(const struct nfs4_session *s, struct nfs4_channel_attrs *a);
void nfs4_session_back_attrs(const struct nfs4_session *s, struct nfs4_channel_attrs *a);

/*
 * Ask the client to use slots 0..target only (sr_target_highest_slotid).
 * target above the negotiated slot count is cut to it. Lowering takes
 * effect on the highest slot id once the client's sa_highest_slotid is at
 * most target and no slot above it is in use; their caches are freed then.
 * Raising again reopens slots at once (a reopened slot accepts the next
 * sequence id or 1).
 */
void nfs4_session_set_target(struct nfs4_session *s, uint32_t target);

/* ---- connections (RFC 8881 §18.34) ------------------------------------ */

/* channel_dir_from_client4 and channel_dir_from_server4 */
#define NFS4_CDFC_FORE	       0x1u
#define NFS4_CDFC_BACK	       0x2u
#define NFS4_CDFC_FORE_OR_BOTH 0x3u
#define NFS4_CDFC_BACK_OR_BOTH 0x7u
#define NFS4_CDFS_FORE	       0x1u
#define NFS4_CDFS_BACK	       0x2u
#define NFS4_CDFS_BOTH	       0x3u

/*
 * BIND_CONN_TO_SESSION: bind conn to the session's fore channel, back
 * channel or both (the *_OR_BOTH choices get both). *dir_out is the
 * channel_dir_from_server4 answer. BADSESSION, INVAL (bad direction),
 * DELAY (NFS4_SESSION_MAX_CONNS connections already bound).
 */
uint32_t nfs4_bind_conn_to_session(struct nfs4_state *st, const uint8_t *sessionid, uint32_t dir,
				   void *conn, uint64_t conn_id, uint32_t *dir_out);

/* The RPC layer closed conn_id: unbind it from every session; a session
 * left without a back channel connection reports CB_PATH_DOWN. */
void nfs4_conn_closed(struct nfs4_state *st, uint64_t conn_id);

/* ---- back channel ------------------------------------------------------ */

/* BACKCHANNEL_CTL: a new callback program and credential flavor. */
void nfs4_session_set_cb_program(struct nfs4_session *s, uint32_t cb_program, uint32_t cb_flavor);

struct nfs4_cb_seq {
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	uint32_t slotid, sequenceid, highest_slotid;
	uint32_t cb_program;
	uint32_t cb_flavor; /* RPC_AUTH_SYS or RPC_AUTH_NONE */
	uint32_t minorversion; /* the session's (CB_COMPOUND4args.minorversion) */
	void *conn; /* where to send it (an identity: see create_session args) */
	uint64_t conn_id;
};

/*
 * Take the back channel slot for a CB_COMPOUND: NFS4_OK and the values of
 * its CB_SEQUENCE; DELAY while the slot is busy; CONN_NOT_BOUND_TO_SESSION
 * when no connection is bound for the back channel.
 */
uint32_t nfs4_cb_sequence_begin(struct nfs4_session *s, struct nfs4_cb_seq *cb);
/* A CB_NULL probe of the back channel: the connection to send it on (as
 * nfs4_cb_sequence_begin, without taking the slot), then its outcome: no
 * reply marks the back channel faulty as a lost CB_COMPOUND does. */
uint32_t nfs4_cb_probe_begin(struct nfs4_session *s, struct nfs4_cb_seq *cb);
void nfs4_cb_probe_end(struct nfs4_session *s, bool replied);

/* How a CB_COMPOUND's CB_SEQUENCE ended (RFC 8881 §20.9.3: a CB_SEQUENCE
 * that failed leaves the client's slot as it was). */
enum nfs4_cb_end {
	/* the client took it: the slot's sequence id advances */
	NFS4_CB_ACCEPTED,
	/* the client asked for time (DELAY): the same sequence id goes out
	 * again, and the back channel is fine */
	NFS4_CB_REFUSED,
	/* no reply, or the client cannot take calls on this session as it
	 * is: the same sequence id goes out again, and the back channel is
	 * marked faulty (BACKCHANNEL_FAULT, CB_PATH_DOWN_SESSION) until a
	 * connection is bound for it again */
	NFS4_CB_LOST,
};

/* The CB_COMPOUND is over: the back channel slot is free again. */
void nfs4_cb_sequence_end(struct nfs4_session *s, uint32_t slotid, enum nfs4_cb_end how);

/*
 * The call holding the back channel slot found the client's slot at
 * sequence id last (SEQ_MISORDERED: last = 0, as a client that reset its
 * slot table expects; RETRY_UNCACHED_REP or SEQ_FALSE_RETRY: last = the
 * id just sent, which the client already holds). The slot takes last as
 * its own and stays held; the call goes out again with the id returned,
 * last + 1.
 */
uint32_t nfs4_cb_sequence_resync(struct nfs4_session *s, uint32_t slotid, uint32_t last);

#endif
