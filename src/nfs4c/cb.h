/*
 * cb.h - the client's side of the NFSv4.1 backchannel: the answer to one
 * call record the server sent on a fore channel connection (CB_NULL,
 * CB_COMPOUND), with the back channel's slot table and reply cache.
 *
 * Design note.
 *
 * nfs4c_cb_handle() turns a CALL record into the reply record: a pure
 * function of the record and the back channel state, no I/O, so that a
 * test and a fuzz target drive exactly what the client runs. The client
 * (client.c) calls it from its callback thread, one call at a time, and
 * sends what it returns on the connection the call came on.
 *
 * RPC level (RFC 5531): a record that is not a call header gets no reply
 * at all (-EBADMSG: nothing to address it to); a credential other than
 * AUTH_NONE/AUTH_SYS gets AUTH_ERROR; a program other than the one the
 * client named in CREATE_SESSION (cb_program) PROG_UNAVAIL; a version
 * other than 1 PROG_MISMATCH 1-1; procedure 0 (CB_NULL) an empty success;
 * 1 (CB_COMPOUND) the compound below; others PROC_UNAVAIL; arguments that
 * do not decode GARBAGE_ARGS.
 *
 * CB_COMPOUND (RFC 8881 20.2, 20.9, 2.10.6): minor versions 1 and 2 are
 * answered, others MINOR_VERS_MISMATCH with no results. More operations
 * or memory than the limits allow: REQ_TOO_BIG, no results. The first
 * operation must be CB_SEQUENCE (else OP_NOT_IN_SESSION), and no other may
 * be (SEQUENCE_POS). CB_SEQUENCE:
 *
 *   no session yet, one being created   DELAY (the server may call before
 *                                       the CREATE_SESSION reply arrives)
 *   a test asked for DELAY              DELAY, the slot unchanged
 *   (nfs4c_cb_delay)                    (as a client still busy with it)
 *   another session id                  BADSESSION
 *   slot >= nslots                      BADSLOT
 *   highest slot >= nslots              BAD_HIGH_SLOT
 *   seqid == slot's + 1                 a new request: run it, cache the
 *                                       reply (up to cache_max bytes)
 *   seqid == slot's, reply cached       the cached reply, byte for byte
 *   seqid == slot's, not cached         CB_SEQUENCE's result, then
 *                                       RETRY_UNCACHED_REP
 *   anything else                       SEQ_MISORDERED (slot unchanged)
 *
 * A slot's seqid starts at 0, so the first request on it carries 1. The
 * operations after CB_SEQUENCE go to the dispatch function one by one
 * until one fails; an operation the decoder did not know ends the
 * compound with CB_ILLEGAL / NFS4ERR_OP_ILLEGAL after the ones before it.
 *
 * Invariants:
 *  1. Every CALL record with a decodable call header gets exactly one
 *     reply; nothing else gets any.
 *  2. A slot moves only on a new request; a replay, an error or a
 *     misordered seqid leaves it as it was.
 *  3. Memory: decoding uses an arena capped at arena_cap, freed before
 *     return; a slot caches at most cache_max bytes.
 *
 * Lock order: 732 nfs4c.cb, the session and slot state below; not held
 * while the dispatch function runs.
 */
#ifndef JNFS_NFS4C_CB_H
#define JNFS_NFS4C_CB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lock.h"
#include "rpc/rpc_msg.h"
#include "rpc/xdr.h"
#include "xdr/nfs4.h"

#define NFS4C_MAX_CB_SLOTS 16

/* What a handler knows about the call it is part of. */
struct nfs4c_cb_req {
	const struct CB_SEQUENCE4args *seq; /* the compound's CB_SEQUENCE */
	const struct rpc_cred *cred;
	uint32_t minorversion;
	struct xdr_arena *arena; /* memory for results; gone once encoded */
};

/*
 * Run one operation after CB_SEQUENCE: fill the arm of res that matches
 * op->argop (res->resop is already set) and return its status, which is
 * stored in the arm's status field. Runs on the callback thread with no
 * lock of the client held; it may make calls on the fore channel.
 */
typedef nfsstat4 (*nfs4c_cb_fn)(void *arg, const struct nfs4c_cb_req *rq,
				const struct nfs_cb_argop4 *op, struct nfs_cb_resop4 *res);

struct nfs4c_cb_slot {
	uint32_t seqid;	 /* of the last new request (0: none yet) */
	uint8_t *cached; /* its CB_COMPOUND4res bytes, or NULL */
	uint32_t cached_len;
};

struct nfs4c_cb_stats {
	uint64_t nulls, compounds, replays, replays_uncached, misordered, bad_session, delayed;
	uint64_t garbage, rpc_errors;
};

struct nfs4c_cb {
	struct mutex lock;
	uint32_t prog;	  /* cb_program given in CREATE_SESSION */
	size_t arena_cap; /* decode memory per call; default 1 MiB */
	size_t cache_max; /* bytes cached per slot; default 4 KiB */
	nfs4c_cb_fn dispatch;
	void *arg;

	/* guarded by lock */
	bool have_session, creating;
	uint8_t sid[NFS4_SESSIONID_SIZE];
	uint32_t nslots;
	struct nfs4c_cb_slot slot[NFS4C_MAX_CB_SLOTS];
	unsigned delay; /* CB_SEQUENCEs still to answer DELAY (nfs4c_cb_delay) */
	struct nfs4c_cb_stats st;
};

void nfs4c_cb_init(struct nfs4c_cb *cb, uint32_t prog, nfs4c_cb_fn dispatch, void *arg);
void nfs4c_cb_destroy(struct nfs4c_cb *cb);

/* A session is being created (on) or that attempt is over (off): without
 * a session, CB_SEQUENCE is answered DELAY meanwhile, BADSESSION after. */
void nfs4c_cb_creating(struct nfs4c_cb *cb, bool on);
/* The session whose back channel this is, with nslots slots (clamped to
 * 1..NFS4C_MAX_CB_SLOTS), all at seqid 0 with nothing cached. */
void nfs4c_cb_set_session(struct nfs4c_cb *cb, const uint8_t sid[NFS4_SESSIONID_SIZE],
			  uint32_t nslots);
void nfs4c_cb_clear_session(struct nfs4c_cb *cb);

/* Tests: answer the next n CB_SEQUENCEs NFS4ERR_DELAY, as a client still
 * busy with the slot does (RFC 8881 §20.9.3), leaving the slot as it is. */
void nfs4c_cb_delay(struct nfs4c_cb *cb, unsigned n);
/* Tests: the slot at seqid with nothing cached (a slot past the table:
 * nothing). 0: a client that reset its slot table, so the server's next
 * call is SEQ_MISORDERED unless it carries 1. The seqid the server will
 * send next: a client that ran that call and lost its reply, so the call
 * gets CB_SEQUENCE's result, then RETRY_UNCACHED_REP. */
void nfs4c_cb_set_slot(struct nfs4c_cb *cb, uint32_t slotid, uint32_t seqid);

/*
 * Answer one CALL record: append the whole reply record (RPC header and
 * results, no record mark) to out. Returns 0, or -EBADMSG when rec is not
 * a call that can be answered (out is then unchanged and nothing must be
 * sent), or -EMSGSIZE when out cannot hold the reply.
 */
int nfs4c_cb_handle(struct nfs4c_cb *cb, const uint8_t *rec, size_t len, struct xdr_enc *out);

void nfs4c_cb_stats(struct nfs4c_cb *cb, struct nfs4c_cb_stats *st);

/* Set the status field of res's arm for its resop (every CB result
 * begins with one: nfs_cb_resop4_set_status()); an unknown resop becomes
 * CB_ILLEGAL with that status. */
void nfs4c_cb_res_set_status(struct nfs_cb_resop4 *res, nfsstat4 status);

#endif
