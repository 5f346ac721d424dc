/*
 * nfs4c.h - the project's NFSv4.1/4.2 client library: sessions with the
 * backchannel, a COMPOUND builder over the generated codecs, and raw
 * control for tests. Used by the server's tests, the benchmarks and
 * `jnfs pnfs`; it never includes the server (src/nfs4). docs/nfs4-client.md
 * is the tour; conn.h, slots.h and cb.h are its parts.
 *
 * Design note.
 *
 * A client (struct nfs4c_client) is one client owner on one server: its
 * client ID (EXCHANGE_ID), at most one session at a time (CREATE_SESSION),
 * one current TCP connection (conn.h) that carries both the fore channel
 * and, when asked for (the default), the back channel. Calls block the
 * thread that makes them; many threads, or one thread with several
 * compounds started, share the session's slots, so up to that many
 * compounds are in flight on the connection at once.
 *
 * A compound (struct nfs4c_compound) is built by appending operations -
 * generated nfs_argop4 values, through helpers for the common ones - and
 * sent; SEQUENCE is put first automatically (slots.h chooses the slot and
 * its sequence id) unless the compound says otherwise. The reply is kept
 * as received and decoded by the generated decoders, from an arena with a
 * cap (docs/xdr.md rule 2): whatever a server sends, the client's memory
 * for one reply is bounded and nothing it decodes can crash it.
 *
 * Threads per client: each connection's receiver (conn.h); a callback
 * thread that answers the server's calls (cb.h) and may run the user's
 * handlers, which may make calls of their own; a renewal thread that sends
 * a lone SEQUENCE when nothing renewed the lease for a third of it, and
 * binds the connection to the back channel again when the server reports
 * CB_PATH_DOWN.
 *
 * Recovery. A compound whose connection breaks (or whose reply does not
 * come within timeout_ms, which drops the connection, as RFC 8881 2.9.2
 * allows a retry only on a new connection) waits for the client to
 * reconnect (for up to reconnect_ms, e.g. while the server restarts),
 * bind the new connection to the session (BIND_CONN_TO_SESSION, both
 * directions), and is sent again with the same slot and sequence id: the
 * server's reply cache makes that exactly once. When the session is gone
 * (BADSESSION), the client creates a new one on its client ID; when the
 * client ID is gone too (STALE_CLIENTID: the server restarted) it sends
 * EXCHANGE_ID again with the same owner and verifier, creates a session,
 * and calls the state_lost hook, whose job is to reclaim opens and locks
 * and send RECLAIM_COMPLETE (without a hook the client sends
 * RECLAIM_COMPLETE at once). A compound caught in a session change is not
 * sent again: it fails with -ESTALE and may be resent by its caller.
 *
 * Invariants:
 *  1. Every compound with SEQUENCE holds exactly one slot from the moment
 *     its SEQUENCE is filled in until its outcome is known, and leaves it
 *     as slots.h says (PROCESSED / UNUSED / LOST).
 *  2. A compound is sent again only with the bytes it was sent with (same
 *     slot, sequence id and xid), and only on a connection bound to the
 *     same session.
 *  3. One recovery at a time (recover_lock); a thread that finds the
 *     connection or session already replaced since it looked does not
 *     replace it again.
 *  4. No client lock is held while the client waits on the network,
 *     except recover_lock during a recovery, and no user callback or hook
 *     runs with any client lock held.
 *
 * Lock order (ranks 700-799, lowest first; base/lock_classes.h):
 *   710 nfs4c.recover  one recovery at a time (held across its calls)
 *   720 nfs4c.client   session, slots, current connection, flags
 *   730 nfs4c.cbq      the callback queue
 *   732 nfs4c.cb       back channel slots (cb.h)
 *   736 nfs4c.send     one connection's writes (conn.h)
 *   740 nfs4c.conn     one connection's calls (conn.h)
 *   750 nfs4c.pnfs     the pNFS client's disks, devices and files (pnfs.h)
 *   760 nfs4c.pnfs.file  one file's layouts (pnfs.h)
 *
 * Results of functions that perform a whole exchange: 0, an nfsstat4
 * (> 0) the server answered, or -errno (no answer: transport, limits,
 * garbage).
 */
#ifndef JNFS_NFS4C_NFS4C_H
#define JNFS_NFS4C_NFS4C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nfs4c/cb.h"
#include "nfs4c/conn.h"
#include "nfs4c/slots.h"
#include "rpc/rpc_msg.h"
#include "rpc/xdr.h"
#include "xdr/nfs4.h"

struct nfs4c_client;

/* A file handle, inline. */
struct nfs4c_fh {
	uint32_t len;
	uint8_t val[NFS4_FHSIZE];
};

/* ---- configuration ------------------------------------------------------ */

/* Handlers for the server's callback operations, by opcode; NULL: the
 * default (docs/nfs4-client.md lists them: e.g. CB_LAYOUTRECALL answers
 * NOMATCHING_LAYOUT, CB_RECALL_ANY and CB_NOTIFY_LOCK OK, CB_RECALL_SLOT
 * lowers the fore channel's target). */
#define NFS4C_CB_NOPS (OP_CB_OFFLOAD + 1)
struct nfs4c_cb_ops {
	nfs4c_cb_fn op[NFS4C_CB_NOPS];
	void *arg;
};

/* Called with no client lock held, on whichever thread saw the event. */
struct nfs4c_hooks {
	void *arg;
	/* sr_status_flags of a SEQUENCE reply differ from the previous one */
	void (*status_flags)(void *arg, struct nfs4c_client *cl, uint32_t old, uint32_t flags);
	/* SEQ_MISORDERED on a slot whose seqid the client chose: the seqid to
	 * send next on that slot, or 0 to keep it */
	uint32_t (*seq_misordered)(void *arg, struct nfs4c_client *cl, uint32_t slot,
				   uint32_t seqid);
	/* a new session replaced one the server no longer knew (BADSESSION) */
	void (*session_lost)(void *arg, struct nfs4c_client *cl);
	/* the server no longer knew the client ID (it restarted): the client
	 * has a new client ID and session; reclaim, then RECLAIM_COMPLETE.
	 * NULL: the client sends RECLAIM_COMPLETE itself. */
	void (*state_lost)(void *arg, struct nfs4c_client *cl);
};

struct nfs4c_cfg {
	const char *addr;		      /* "ADDR:PORT" or "[ADDR6]:PORT" (required) */
	const char *owner;		      /* co_ownerid; NULL: unique to this client object */
	uint8_t verifier[NFS4_VERIFIER_SIZE]; /* co_verifier; all zero: random. The same
					       * verifier across reconnects; another one
					       * tells the server the client rebooted */
	struct rpc_cred cred;		      /* every call's credential unless a compound says
					       * otherwise; default AUTH_SYS with this process's
					       * uid and gid */
	uint32_t minorversion;		      /* 2 (default), or 1; EXCHANGE_ID falls back to 1
					       * when the server refuses 2 */
	uint32_t eia_flags;   /* EXCHANGE_ID flags (e.g. EXCHGID4_FLAG_USE_PNFS_MDS) */
	uint32_t fore_slots;  /* ca_maxrequests asked for (default 64) */
	uint32_t back_slots;  /* of the back channel (default 1) */
	bool no_back_channel; /* CREATE_SESSION without CONN_BACK_CHAN */
	uint32_t csa_flags;   /* more CREATE_SESSION flags, sent as they are (tests:
			       * PERSIST, bits no RFC defines) */
	uint32_t cb_program;  /* default NFS4_CALLBACK (0x40000000) */
	uint32_t max_request, max_response; /* fore channel sizes asked for
					     * (default 1 MiB + 64 KiB each) */
	uint32_t max_response_cached;	    /* default 64 KiB */
	uint32_t max_ops;		    /* ca_maxoperations asked for (default 128) */
	unsigned timeout_ms;		    /* a reply later than this drops the connection
					     * (and the compound is sent again); default 60 s */
	unsigned reconnect_ms;		    /* how long reconnecting may take; default 120 s */
	uint32_t lease_s;		    /* 0: the server's lease_time (nfs4c_mount asks) */
	bool no_renew;			    /* no renewal thread (tests that count calls) */
	size_t max_record;		    /* largest record received; default 4 MiB */
	size_t arena_cap;		    /* memory for one decoded reply; default 16 MiB */
	const struct nfs4c_cb_ops *cb;
	const struct nfs4c_hooks *hooks;
};

/* Defaults for everything but addr. */
void nfs4c_cfg_default(struct nfs4c_cfg *cfg);

/* ---- a client ------------------------------------------------------------ */

/* Connect (nothing is sent yet). The configuration and the strings it
 * points to are copied. Returns 0 or -errno. */
int nfs4c_create(const struct nfs4c_cfg *cfg, struct nfs4c_client **out);
/* Stop the threads and close the connection. Sends nothing: call
 * nfs4c_unmount() first for a clean end. Compounds must be finished. */
void nfs4c_destroy(struct nfs4c_client *cl);

/*
 * The session layer, each one exchange (results as at the top):
 *   nfs4c_exchange_id     EXCHANGE_ID (SP4_NONE) with the owner and verifier
 *   nfs4c_create_session  CREATE_SESSION: fore slots, the back channel on
 *                         this connection (CONN_BACK_CHAN) for cb_program;
 *                         starts the renewal thread
 *   nfs4c_reclaim_complete  SEQUENCE + RECLAIM_COMPLETE(one_fs)
 *   nfs4c_sequence        a lone SEQUENCE (renews the lease)
 *   nfs4c_bind_conn       BIND_CONN_TO_SESSION of conn (NULL: the client's)
 *                         in direction dir; *got (may be NULL) the answer
 *   nfs4c_destroy_session, nfs4c_destroy_clientid
 * nfs4c_mount does what is missing of EXCHANGE_ID and CREATE_SESSION, then
 * RECLAIM_COMPLETE (COMPLETE_ALREADY is fine), and PUTROOTFH + GETFH +
 * GETATTR(lease_time): the root's handle in *root (may be NULL).
 * nfs4c_unmount: DESTROY_SESSION then DESTROY_CLIENTID.
 */
int nfs4c_exchange_id(struct nfs4c_client *cl);
int nfs4c_create_session(struct nfs4c_client *cl);
int nfs4c_reclaim_complete(struct nfs4c_client *cl, bool one_fs);
int nfs4c_sequence(struct nfs4c_client *cl);
int nfs4c_bind_conn(struct nfs4c_client *cl, struct nfs4c_conn *conn, channel_dir_from_client4 dir,
		    channel_dir_from_server4 *got);
int nfs4c_destroy_session(struct nfs4c_client *cl);
int nfs4c_destroy_clientid(struct nfs4c_client *cl);
int nfs4c_mount(struct nfs4c_client *cl, struct nfs4c_fh *root);
int nfs4c_unmount(struct nfs4c_client *cl);

struct nfs4c_info {
	clientid4 clientid;    /* 0 before EXCHANGE_ID */
	uint32_t eir_flags;    /* EXCHANGE_ID's answer */
	uint32_t minorversion; /* in use */
	bool have_session;
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	uint32_t csr_flags;		  /* CREATE_SESSION's answer */
	struct channel_attrs4 fore, back; /* as granted */
	uint32_t fore_slots, back_slots;
	uint32_t highest_slot, target_slot; /* the last SEQUENCE reply's */
	uint32_t status_flags;		    /* the last SEQUENCE reply's sr_status_flags */
	uint32_t lease_s;
	uint64_t sessions; /* created */
	uint64_t reconnects, session_recoveries, state_losses;
	uint64_t renewals;		/* lone SEQUENCEs sent by the renewal thread */
	uint64_t cb_ops[NFS4C_CB_NOPS]; /* callback operations received, by opcode */
	uint64_t cb_dropped;		/* calls dropped: the callback queue was full */
};
void nfs4c_get_info(struct nfs4c_client *cl, struct nfs4c_info *info);
/* The current connection, referenced: nfs4c_conn_put() it. */
struct nfs4c_conn *nfs4c_get_conn(struct nfs4c_client *cl);
/* Another connection to the client's server whose incoming calls go to
 * the client's back channel, e.g. to bind it with nfs4c_bind_conn() (a
 * connection of its own for the back channel, or a second one for the
 * fore channel). Compounds use it when they name it (c->conn). The caller
 * closes it (nfs4c_conn_close) before nfs4c_destroy(). 0 or -errno. */
int nfs4c_open_conn(struct nfs4c_client *cl, struct nfs4c_conn **out);
/*
 * Install (fn) or remove (NULL) the handler of one callback operation after
 * the client was created, with an argument of its own: how a layer above
 * the client (pnfs.h answers CB_LAYOUTRECALL) hooks into the back channel.
 * Returns once no handler runs any more with what was installed before, so
 * a layer may free its argument after removing its handler. Never call it
 * from a handler (it would wait for itself). 0 or -EINVAL for an operation
 * out of range.
 */
int nfs4c_set_cb(struct nfs4c_client *cl, nfs_cb_opnum4 op, nfs4c_cb_fn fn, void *arg);
/* The back channel's state (stats, and for tests). */
struct nfs4c_cb *nfs4c_get_cb(struct nfs4c_client *cl);
/* The open and lock owners' client ID field. */
clientid4 nfs4c_clientid(struct nfs4c_client *cl);

/* Drop the current connection as if the network failed: the next or
 * current compounds reconnect (tests). */
void nfs4c_break_conn(struct nfs4c_client *cl);

/* ---- compounds ------------------------------------------------------------ */

#define NFS4C_MAX_OPS 16384 /* appendable per compound (tests send too many) */

struct nfs4c_compound {
	/* options: defaults after init/reset; set them before sending */
	int slot;		     /* -1: any free slot; >= 0: this one (tests) */
	uint32_t seqid;		     /* 0: the slot's next; else sent as is (replays,
				      * misordered ids: the slot table is left alone
				      * unless it equals the slot's next) */
	bool cachethis;		     /* sa_cachethis */
	bool no_sequence;	     /* no SEQUENCE first (EXCHANGE_ID, CREATE_SESSION,
				      * ... or a test placing its own) */
	int32_t minorversion;	     /* -1: the client's */
	const struct rpc_cred *cred; /* NULL: the client's */
	const char *tag;	     /* NULL: empty */
	struct nfs4c_conn *conn;     /* NULL: the client's connection, with recovery;
				      * else this one, without */
	uint64_t timeout_ns;	     /* 0: the client's */

	/* the caller's operations; unless no_sequence, a SEQUENCE is put in
	 * front of them when the compound is sent (so res.resarray.val[0] is
	 * SEQUENCE's result). Pointers into ops stay valid until the next
	 * append. */
	struct nfs_argop4 *ops;
	uint32_t nops;

	/* after nfs4c_send() returned 0 or a decode error: valid until the
	 * next send, reset or destroy */
	nfsstat4 status;	     /* the COMPOUND's status */
	struct COMPOUND4res res;     /* results; opaque data points into reply */
	struct nfs_argop4 seq;	     /* the SEQUENCE it was sent with */
	uint32_t slotid, seqid_sent; /* the SEQUENCE it went with */
	uint8_t *reply;		     /* the whole reply record */
	size_t reply_len;
	size_t body_off; /* COMPOUND4res starts at reply + body_off */
	struct rpc_reply_hdr rh;

	/* private */
	struct nfs4c_client *cl;
	uint32_t cap;
	int build_err;
	bool started, have_slot, seq_auto, no_recover;
	int send_err;
	uint64_t sess_gen, conn_gen, deadline;
	struct nfs4c_conn *sent_on;
	struct nfs4c_call call;
	struct xdr_enc req;
	struct xdr_arena arena, scratch;
	uint8_t arena_first[4096] __attribute__((aligned(16)));
};

/* cl may be NULL for a compound that is only encoded (tests). */
void nfs4c_compound_init(struct nfs4c_compound *c, struct nfs4c_client *cl);
/* Forget the operations and results; options back to their defaults. */
void nfs4c_compound_reset(struct nfs4c_compound *c);
void nfs4c_compound_destroy(struct nfs4c_compound *c);

/* Append a zeroed operation with argop set: NULL past NFS4C_MAX_OPS (the
 * compound then fails to send with -E2BIG). An operation number the
 * generated codecs do not know is sent as the number alone. */
struct nfs_argop4 *nfs4c_op_add(struct nfs4c_compound *c, nfs_opnum4 op);
/* Memory that lives as long as the compound's operations (names,
 * attribute values); NULL past 1 MiB (the send then fails with -E2BIG). */
void *nfs4c_scratch(struct nfs4c_compound *c, size_t len);
/* A copy of s as a component4/utf8string in scratch memory. */
utf8string nfs4c_str(struct nfs4c_compound *c, const char *s);

/*
 * Send and wait: 0 when a COMPOUND reply arrived and decoded (c->status
 * and c->res say what the server answered); -EPROTO for an RPC-level
 * error (c->rh); -EBADMSG or -E2BIG when the reply did not decode within
 * the limits (c->res holds the complete results before the failure);
 * -ESTALE when the session was replaced before an answer came (not sent
 * again); -ENOTCONN without a session; -ETIMEDOUT / -ECONNRESET ... when
 * no answer could be had within reconnect_ms; -E2BIG / -EINVAL for a
 * compound that cannot be built or encoded.
 */
int nfs4c_send(struct nfs4c_compound *c);
/* The same in two halves, so that one thread can have several compounds
 * in flight: start blocks only while every usable slot is busy (so a
 * thread must not start more compounds than there are slots before it
 * waits for one); wait returns what nfs4c_send would. */
int nfs4c_start(struct nfs4c_compound *c);
int nfs4c_wait(struct nfs4c_compound *c);

/* The encoded COMPOUND4args as built: with c->seq in front unless
 * no_sequence (it is filled in by a send, so encode a compound sent
 * before; tests that build their own SEQUENCE set no_sequence and use
 * nfs4c_op_sequence). 0, a build error, or the encoder's. */
int nfs4c_compound_encode(const struct nfs4c_compound *c, struct xdr_enc *out);

/* The nth (0-based) result of operation op, or NULL. */
const struct nfs_resop4 *nfs4c_res(const struct nfs4c_compound *c, nfs_opnum4 op, unsigned nth);
/* (The status in any operation's result is nfs_resop4_status(), generated
 * from the XDR description: docs/xdr.md.) */
/* The last GETFH's handle / GETATTR's decoded attributes: 0, -ENOENT
 * when there is none that succeeded, or the decoder's error. */
int nfs4c_res_fh(const struct nfs4c_compound *c, struct nfs4c_fh *fh);
struct nfs4c_attr;
int nfs4c_res_attr(const struct nfs4c_compound *c, struct nfs4c_attr *a);

/*
 * Raw control for tests: send rec (a whole RPC record, xid inside it) on
 * conn (NULL: the client's) and wait for the reply with that xid, handed
 * back in *reply (freed with iobuf_free, base/iobuf.h). No slot, no recovery. 0 or -errno.
 */
int nfs4c_call_raw(struct nfs4c_client *cl, struct nfs4c_conn *conn, const void *rec, size_t len,
		   uint32_t xid, uint8_t **reply, size_t *reply_len);

/* ---- attributes ------------------------------------------------------------ */

static inline void nfs4c_bitmap_set(bitmap4 *bm, unsigned bit)
{
	if (bit / 32 >= NFS4_LIMIT_bitmap4)
		return;
	while (bm->len <= bit / 32)
		bm->val[bm->len++] = 0;
	bm->val[bit / 32] |= 1u << (bit % 32);
}

static inline bool nfs4c_bitmap_isset(const bitmap4 *bm, unsigned bit)
{
	return bit / 32 < bm->len && (bm->val[bit / 32] >> (bit % 32) & 1);
}

/* What a GETATTR decodes into; have says which were present. Owner and
 * group are parsed as numbers (uid/gid, UINT32_MAX if not numeric); the
 * string itself is kept up to 127 bytes. */
struct nfs4c_attr {
	bitmap4 have;
	bitmap4 supported;
	nfs_ftype4 type;
	uint32_t mode, nlink, lease_time, maxname, layout_blksize;
	uint64_t change, size, fileid, mounted_on_fileid, space_used;
	uint64_t space_avail, space_free, space_total, files_avail, files_free, files_total;
	uint64_t maxread, maxwrite, maxfilesize;
	uint32_t uid, gid;
	char owner[128], group[128];
	struct fsid4 fsid;
	struct specdata4 rawdev;
	struct nfstime4 atime, mtime, ctime, btime;
	nfsstat4 rdattr_error;
	uint32_t nlayout_types;
	layouttype4 layout_types[4];
	struct nfs4c_fh fh;
};

/*
 * Decode every attribute of f (in bit order, each with its generated
 * decoder). Returns 0; -EBADMSG when the values do not match the bitmap
 * (short, long, malformed); -ENOTSUP for a bit no type is known for (the
 * values after it cannot be found). Values are copied out: nothing in *a
 * points into f.
 */
int nfs4c_attr_decode(const struct fattr4 *f, struct nfs4c_attr *a);

/* The attributes the helpers ask for by default: type, change, size,
 * fsid, fileid, mode, numlinks, owner, owner_group, rawdev, space_used,
 * time_access/metadata/modify, mounted_on_fileid. */
void nfs4c_bitmap_std(bitmap4 *bm);

/* Attributes to set (CREATE, OPEN with create, SETATTR): the bits of
 * NFS4C_SA_* in set say which. Times: the client's value, or the
 * server's clock with atime_now/mtime_now. */
#define NFS4C_SA_MODE  (1u << 0)
#define NFS4C_SA_SIZE  (1u << 1)
#define NFS4C_SA_UID   (1u << 2)
#define NFS4C_SA_GID   (1u << 3)
#define NFS4C_SA_ATIME (1u << 4)
#define NFS4C_SA_MTIME (1u << 5)
struct nfs4c_sattr {
	uint32_t set;
	uint32_t mode;
	uint64_t size;
	uint32_t uid, gid;
	bool atime_now, mtime_now;
	struct nfstime4 atime, mtime;
};
/* Encode sa into *f, its values in c's scratch memory. 0 or -E2BIG. */
int nfs4c_sattr_encode(struct nfs4c_compound *c, const struct nfs4c_sattr *sa, struct fattr4 *f);

/* ---- operation helpers ------------------------------------------------------
 * Each appends one operation (lookup_path one per component) and returns
 * 0 or -errno; a failure is also remembered and reported by the send.
 * Strings are copied; data (WRITE) is referenced and must stay valid
 * until the compound has been sent. */

int nfs4c_op_putrootfh(struct nfs4c_compound *c);
int nfs4c_op_putfh(struct nfs4c_compound *c, const struct nfs4c_fh *fh);
int nfs4c_op_getfh(struct nfs4c_compound *c);
int nfs4c_op_savefh(struct nfs4c_compound *c);
int nfs4c_op_restorefh(struct nfs4c_compound *c);
int nfs4c_op_lookup(struct nfs4c_compound *c, const char *name);
int nfs4c_op_lookupp(struct nfs4c_compound *c);
/* One LOOKUP per component of path ('/' separated; empty ones skipped). */
int nfs4c_op_lookup_path(struct nfs4c_compound *c, const char *path);
/* bm NULL: nfs4c_bitmap_std(). */
int nfs4c_op_getattr(struct nfs4c_compound *c, const bitmap4 *bm);
int nfs4c_op_access(struct nfs4c_compound *c, uint32_t access);
int nfs4c_op_readlink(struct nfs4c_compound *c);

/* OPEN (RFC 8881 18.16). The open owner is (client ID, owner bytes). */
struct nfs4c_open {
	const void *owner;
	uint32_t owner_len;
	uint32_t access, deny;		  /* OPEN4_SHARE_ACCESS_* / OPEN4_SHARE_DENY_* */
	open_claim_type4 claim;		  /* CLAIM_NULL: name in the current directory;
					   * CLAIM_FH: the current file; CLAIM_PREVIOUS:
					   * reclaim of the current file after a restart */
	const char *name;		  /* CLAIM_NULL */
	open_delegation_type4 prev_deleg; /* CLAIM_PREVIOUS: OPEN_DELEGATE_NONE */
	bool create;			  /* OPEN4_CREATE */
	createmode4 how;		  /* UNCHECKED4, GUARDED4, EXCLUSIVE4_1 (EXCLUSIVE4) */
	struct nfs4c_sattr attrs;	  /* UNCHECKED4, GUARDED4, EXCLUSIVE4_1 */
	uint8_t verf[NFS4_VERIFIER_SIZE]; /* EXCLUSIVE4, EXCLUSIVE4_1 */
};
int nfs4c_op_open(struct nfs4c_compound *c, const struct nfs4c_open *o);
int nfs4c_op_open_downgrade(struct nfs4c_compound *c, const struct stateid4 *sid, uint32_t access,
			    uint32_t deny);
int nfs4c_op_close(struct nfs4c_compound *c, const struct stateid4 *sid);
int nfs4c_op_read(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		  uint32_t count);
int nfs4c_op_write(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		   stable_how4 stable, const void *data, uint32_t len);
int nfs4c_op_commit(struct nfs4c_compound *c, uint64_t off, uint32_t count);

/* LOCK (18.10): a new lock owner (open stateid, owner bytes) or an
 * existing lock stateid. */
struct nfs4c_lock {
	nfs_lock_type4 type;
	uint64_t off, len;
	bool reclaim;
	bool new_owner;
	struct stateid4 open_stateid; /* new_owner */
	const void *owner;	      /* new_owner */
	uint32_t owner_len;
	struct stateid4 lock_stateid; /* !new_owner */
};
int nfs4c_op_lock(struct nfs4c_compound *c, const struct nfs4c_lock *l);
int nfs4c_op_lockt(struct nfs4c_compound *c, nfs_lock_type4 type, uint64_t off, uint64_t len,
		   const void *owner, uint32_t owner_len);
int nfs4c_op_locku(struct nfs4c_compound *c, nfs_lock_type4 type, const struct stateid4 *sid,
		   uint64_t off, uint64_t len);

int nfs4c_op_remove(struct nfs4c_compound *c, const char *name);
/* RENAME from the saved filehandle's directory to the current one. */
int nfs4c_op_rename(struct nfs4c_compound *c, const char *oldname, const char *newname);
/* LINK the saved filehandle into the current directory as name. */
int nfs4c_op_link(struct nfs4c_compound *c, const char *name);
/* CREATE a non-regular object: NF4DIR, NF4LNK (linkdata), NF4BLK/NF4CHR
 * (rdev), NF4SOCK, NF4FIFO. attrs may be NULL. */
int nfs4c_op_create(struct nfs4c_compound *c, nfs_ftype4 type, const char *name,
		    const char *linkdata, const struct specdata4 *rdev,
		    const struct nfs4c_sattr *attrs);
int nfs4c_op_readdir(struct nfs4c_compound *c, uint64_t cookie,
		     const uint8_t verf[NFS4_VERIFIER_SIZE], uint32_t dircount, uint32_t maxcount,
		     const bitmap4 *bm);
/* SETATTR; sid NULL: the anonymous stateid (all zero). */
int nfs4c_op_setattr(struct nfs4c_compound *c, const struct stateid4 *sid,
		     const struct nfs4c_sattr *sa);
int nfs4c_op_reclaim_complete(struct nfs4c_compound *c, bool one_fs);
int nfs4c_op_free_stateid(struct nfs4c_compound *c, const struct stateid4 *sid);
int nfs4c_op_test_stateid(struct nfs4c_compound *c, const struct stateid4 *sids, uint32_t n);
int nfs4c_op_secinfo_no_name(struct nfs4c_compound *c, secinfo_style4 style);
/* A SEQUENCE with the client's session id, placed where the caller wants
 * (tests; set no_sequence). The client's slot table is not involved. */
int nfs4c_op_sequence(struct nfs4c_compound *c, uint32_t slot, uint32_t seqid, uint32_t highest,
		      bool cachethis);

/* pNFS (RFC 8881 18.40-18.44). GETDEVICEINFO and GETDEVICELIST need no
 * current filehandle; the others act on the current file (LAYOUTRETURN of
 * the FSID kind on its filesystem). */
int nfs4c_op_getdeviceinfo(struct nfs4c_compound *c, const uint8_t id[NFS4_DEVICEID4_SIZE],
			   layouttype4 type, uint32_t maxcount, uint32_t notify_types);
int nfs4c_op_getdevicelist(struct nfs4c_compound *c, layouttype4 type, uint32_t maxdevices,
			   uint64_t cookie, const uint8_t verf[NFS4_VERIFIER_SIZE]);
/* LAYOUTGET: sid is an open, lock or delegation stateid for the first
 * layout of a file, the layout stateid after. */
int nfs4c_op_layoutget(struct nfs4c_compound *c, layouttype4 type, layoutiomode4 iomode,
		       uint64_t off, uint64_t len, uint64_t minlen, const struct stateid4 *sid,
		       uint32_t maxcount);
/* LAYOUTCOMMIT (18.42): the body is the layout type's update (for blocks a
 * pnfs_block_layoutupdate4), copied. */
struct nfs4c_layoutcommit {
	uint64_t off, len;	  /* loca_offset, loca_length */
	bool reclaim;
	struct stateid4 stateid;  /* the layout stateid */
	bool have_last_write;	  /* loca_last_write_offset present */
	uint64_t last_write;	  /* offset of the last byte written */
	bool have_mtime;	  /* loca_time_modify present */
	struct nfstime4 mtime;
	layouttype4 type;
	const void *body;
	uint32_t body_len;
};
int nfs4c_op_layoutcommit(struct nfs4c_compound *c, const struct nfs4c_layoutcommit *lc);
/* LAYOUTRETURN of a range of the current file (LAYOUTRETURN4_FILE, sid the
 * layout stateid), or of everything the client holds on the current
 * file's filesystem (LAYOUTRETURN4_FSID) or anywhere (LAYOUTRETURN4_ALL),
 * where off, len and sid are not sent. */
int nfs4c_op_layoutreturn(struct nfs4c_compound *c, layouttype4 type, layoutiomode4 iomode,
			  layoutreturn_type4 kind, uint64_t off, uint64_t len,
			  const struct stateid4 *sid);

/* NFSv4.2 (RFC 7862) */
int nfs4c_op_allocate(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		      uint64_t len);
int nfs4c_op_deallocate(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
			uint64_t len);
int nfs4c_op_seek(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		  data_content4 what);
/* COPY from the saved filehandle to the current one, synchronous. */
int nfs4c_op_copy(struct nfs4c_compound *c, const struct stateid4 *src, const struct stateid4 *dst,
		  uint64_t src_off, uint64_t dst_off, uint64_t count);
int nfs4c_op_read_plus(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		       uint32_t count);
int nfs4c_op_clone(struct nfs4c_compound *c, const struct stateid4 *src, const struct stateid4 *dst,
		   uint64_t src_off, uint64_t dst_off, uint64_t count);

#endif
