/*
 * cb.c - answering the server's backchannel calls. See cb.h for the rules
 * and invariants.
 */
#include "nfs4c/cb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/mem.h"
#include "base/msg.h"

#define CB_ARENA_CAP_DEFAULT (1u << 20)
#define CB_CACHE_MAX_DEFAULT 4096
#define CB_ARENA_FIRST	     4096

static const struct lock_class cb_class = LOCK_CLASS(NFS4C_CB);

void nfs4c_cb_init(struct nfs4c_cb *cb, uint32_t prog, nfs4c_cb_fn dispatch, void *arg)
{
	memset(cb, 0, sizeof(*cb));
	mutex_init(&cb->lock, &cb_class);
	cb->prog = prog;
	cb->arena_cap = CB_ARENA_CAP_DEFAULT;
	cb->cache_max = CB_CACHE_MAX_DEFAULT;
	cb->dispatch = dispatch;
	cb->arg = arg;
}

static void slots_reset_locked(struct nfs4c_cb *cb)
{
	for (unsigned i = 0; i < NFS4C_MAX_CB_SLOTS; i++) {
		free(cb->slot[i].cached);
		cb->slot[i] = (struct nfs4c_cb_slot){0};
	}
}

void nfs4c_cb_destroy(struct nfs4c_cb *cb)
{
	slots_reset_locked(cb);
	mutex_destroy(&cb->lock);
}

void nfs4c_cb_creating(struct nfs4c_cb *cb, bool on)
{
	mutex_lock(&cb->lock);
	cb->creating = on;
	mutex_unlock(&cb->lock);
}

void nfs4c_cb_set_session(struct nfs4c_cb *cb, const uint8_t sid[NFS4_SESSIONID_SIZE],
			  uint32_t nslots)
{
	mutex_lock(&cb->lock);
	slots_reset_locked(cb);
	memcpy(cb->sid, sid, NFS4_SESSIONID_SIZE);
	cb->nslots = MAX(1u, MIN(nslots, (uint32_t)NFS4C_MAX_CB_SLOTS));
	cb->have_session = true;
	cb->creating = false;
	mutex_unlock(&cb->lock);
}

void nfs4c_cb_clear_session(struct nfs4c_cb *cb)
{
	mutex_lock(&cb->lock);
	slots_reset_locked(cb);
	cb->have_session = false;
	cb->creating = false;
	mutex_unlock(&cb->lock);
}

void nfs4c_cb_delay(struct nfs4c_cb *cb, unsigned n)
{
	mutex_lock(&cb->lock);
	cb->delay = n;
	mutex_unlock(&cb->lock);
}

void nfs4c_cb_set_slot(struct nfs4c_cb *cb, uint32_t slotid, uint32_t seqid)
{
	mutex_lock(&cb->lock);
	if (slotid < NFS4C_MAX_CB_SLOTS) {
		struct nfs4c_cb_slot *sl = &cb->slot[slotid];
		free(sl->cached);
		*sl = (struct nfs4c_cb_slot){.seqid = seqid};
	}
	mutex_unlock(&cb->lock);
}

void nfs4c_cb_stats(struct nfs4c_cb *cb, struct nfs4c_cb_stats *st)
{
	mutex_lock(&cb->lock);
	*st = cb->st;
	mutex_unlock(&cb->lock);
}

void nfs4c_cb_res_set_status(struct nfs_cb_resop4 *res, nfsstat4 status)
{
	if (nfs_cb_resop4_set_status(res, status)) {
		res->resop = OP_CB_ILLEGAL;
		res->opcbillegal.status = status;
	}
}

/*
 * CB_SEQUENCE, the first operation (cb.h's table). Returns its status;
 * *replay is set to the cached reply's bytes when the call is a retry of
 * a cached one, *uncached when it is a retry of one that is not.
 */
static nfsstat4 cb_sequence(struct nfs4c_cb *cb, const struct CB_SEQUENCE4args *a,
			    struct CB_SEQUENCE4resok *ok, uint8_t **replay, uint32_t *replay_len,
			    bool *uncached, bool *fresh)
{
	nfsstat4 status = NFS4_OK;
	*replay = NULL;
	*uncached = *fresh = false;
	mutex_lock(&cb->lock);
	if (!cb->have_session) {
		status = cb->creating ? NFS4ERR_DELAY : NFS4ERR_BADSESSION;
	} else if (memcmp(a->csa_sessionid, cb->sid, NFS4_SESSIONID_SIZE)) {
		status = NFS4ERR_BADSESSION;
	} else if (a->csa_slotid >= cb->nslots) {
		status = NFS4ERR_BADSLOT;
	} else if (a->csa_highest_slotid >= cb->nslots) {
		status = NFS4ERR_BAD_HIGH_SLOT;
	} else if (cb->delay) {
		cb->delay--;
		status = NFS4ERR_DELAY;
		cb->st.delayed++;
	} else {
		struct nfs4c_cb_slot *sl = &cb->slot[a->csa_slotid];
		if (a->csa_sequenceid == sl->seqid + 1) {
			/* invariant 2: only a new request moves the slot */
			sl->seqid = a->csa_sequenceid;
			free(sl->cached);
			sl->cached = NULL;
			sl->cached_len = 0;
			*fresh = true;
		} else if (a->csa_sequenceid == sl->seqid && sl->seqid != 0) {
			if (sl->cached) {
				*replay = xmalloc(sl->cached_len);
				memcpy(*replay, sl->cached, sl->cached_len);
				*replay_len = sl->cached_len;
				cb->st.replays++;
			} else {
				*uncached = true;
				cb->st.replays_uncached++;
			}
		} else {
			status = NFS4ERR_SEQ_MISORDERED;
			cb->st.misordered++;
		}
	}
	if (status == NFS4ERR_BADSESSION)
		cb->st.bad_session++;
	if (status == NFS4_OK) {
		memcpy(ok->csr_sessionid, a->csa_sessionid, NFS4_SESSIONID_SIZE);
		ok->csr_sequenceid = a->csa_sequenceid;
		ok->csr_slotid = a->csa_slotid;
		ok->csr_highest_slotid = cb->nslots - 1;
		ok->csr_target_highest_slotid = cb->nslots - 1;
	}
	mutex_unlock(&cb->lock);
	return status;
}

static void cb_cache(struct nfs4c_cb *cb, uint32_t slotid, uint32_t seqid, const uint8_t *body,
		     size_t len)
{
	if (len > cb->cache_max)
		return;
	mutex_lock(&cb->lock);
	/* the session may have been replaced meanwhile: cache only into the
	 * slot of the request just answered */
	if (cb->have_session && slotid < cb->nslots && cb->slot[slotid].seqid == seqid &&
	    !cb->slot[slotid].cached) {
		cb->slot[slotid].cached = xmalloc(len ? len : 1);
		memcpy(cb->slot[slotid].cached, body, len);
		cb->slot[slotid].cached_len = (uint32_t)len;
	}
	mutex_unlock(&cb->lock);
}

static void count(struct nfs4c_cb *cb, uint64_t *ctr)
{
	mutex_lock(&cb->lock);
	(*ctr)++;
	mutex_unlock(&cb->lock);
}

/* The compound's results into res (len entries allocated); returns how
 * many were filled. args decoded with err (0, or -ENOMSG at its end). */
static uint32_t cb_run(struct nfs4c_cb *cb, const struct CB_COMPOUND4args *args, int err,
		       const struct nfs4c_cb_req *rq_in, struct nfs_cb_resop4 *res,
		       uint8_t **replay, uint32_t *replay_len, bool *fresh)
{
	struct nfs4c_cb_req rq = *rq_in;
	uint32_t n = 0;
	bool uncached = false;
	*fresh = false;
	if (args->argarray.len == 0) {
		if (err == -ENOMSG) {
			res[n].resop = OP_CB_ILLEGAL;
			res[n++].opcbillegal.status = NFS4ERR_OP_ILLEGAL;
		}
		return n;
	}
	const struct nfs_cb_argop4 *op = &args->argarray.val[0];
	res[0].resop = op->argop;
	if (op->argop != OP_CB_SEQUENCE) {
		nfs4c_cb_res_set_status(&res[0], NFS4ERR_OP_NOT_IN_SESSION);
		return 1;
	}
	nfsstat4 st = cb_sequence(cb, &op->opcbsequence, &res[0].opcbsequence.csr_resok4, replay,
				  replay_len, &uncached, fresh);
	res[0].opcbsequence.csr_status = st;
	n = 1;
	if (st != NFS4_OK || *replay)
		return n;
	if (uncached) {
		if (args->argarray.len > 1) {
			res[1].resop = args->argarray.val[1].argop;
			nfs4c_cb_res_set_status(&res[1], NFS4ERR_RETRY_UNCACHED_REP);
			n = 2;
		}
		return n;
	}
	rq.seq = &op->opcbsequence;
	for (uint32_t i = 1; i < args->argarray.len; i++) {
		op = &args->argarray.val[i];
		res[n].resop = op->argop;
		if (op->argop == OP_CB_SEQUENCE)
			st = NFS4ERR_SEQUENCE_POS;
		else
			st = cb->dispatch ? cb->dispatch(cb->arg, &rq, op, &res[n])
					  : NFS4ERR_NOTSUPP;
		/* the handler fills the arm; the status is ours to set */
		res[n].resop = op->argop;
		nfs4c_cb_res_set_status(&res[n], st);
		n++;
		if (st != NFS4_OK)
			return n;
	}
	if (err == -ENOMSG) {
		res[n].resop = OP_CB_ILLEGAL;
		res[n++].opcbillegal.status = NFS4ERR_OP_ILLEGAL;
	}
	return n;
}

static int cb_compound(struct nfs4c_cb *cb, struct xdr_dec *x, uint32_t xid,
		       const struct rpc_cred *cred, struct xdr_enc *out)
{
	uint8_t first[CB_ARENA_FIRST] __attribute__((aligned(16)));
	struct xdr_arena arena;
	struct CB_COMPOUND4args args;
	struct CB_COMPOUND4res r;
	uint8_t *replay = NULL;
	uint32_t replay_len = 0;
	bool fresh = false;
	int ret = 0;

	xdr_arena_init(&arena, first, sizeof(first), cb->arena_cap);
	x->arena = &arena;
	memset(&args, 0, sizeof(args));
	memset(&r, 0, sizeof(r));
	int err = nfs4_dec_CB_COMPOUND4args(x, &args);
	if (err == -EBADMSG) {
		count(cb, &cb->st.garbage);
		ret = rpc_enc_accepted(out, xid, RPC_GARBAGE_ARGS);
		goto out;
	}
	count(cb, &cb->st.compounds);
	r.tag = args.tag;
	if (err == -E2BIG) {
		r.status = NFS4ERR_REQ_TOO_BIG;
	} else if (args.minorversion != 1 && args.minorversion != 2) {
		r.status = NFS4ERR_MINOR_VERS_MISMATCH;
	} else {
		struct nfs4c_cb_req rq = {
			.cred = cred, .minorversion = args.minorversion, .arena = &arena};
		r.resarray.val =
			xdr_arena_alloc(&arena, args.argarray.len + 1, sizeof(*r.resarray.val));
		if (!r.resarray.val) {
			r.status = NFS4ERR_REQ_TOO_BIG;
		} else {
			uint32_t n = cb_run(cb, &args, err, &rq, r.resarray.val, &replay,
					    &replay_len, &fresh);
			r.resarray.len = n;
			r.status = n ? nfs_cb_resop4_status(&r.resarray.val[n - 1]) : NFS4_OK;
		}
	}
	struct xdr_mark m = xdr_enc_mark(out);
	if ((ret = rpc_enc_accepted(out, xid, RPC_SUCCESS)))
		goto out;
	size_t body = out->len;
	if (replay) {
		/* a retry of a cached request: the same bytes (cb.h) */
		ret = xdr_enc_fixed(out, replay, replay_len);
	} else if ((ret = nfs4_enc_CB_COMPOUND4res(out, &r))) {
		/* a handler's result that cannot be encoded: the request ran
		 * but its answer cannot be given */
		xdr_enc_rollback(out, m);
		ret = rpc_enc_accepted(out, xid, RPC_SYSTEM_ERR);
		goto out;
	} else if (fresh && out->ext_bytes == 0) {
		const struct nfs_cb_argop4 *seq = &args.argarray.val[0];
		cb_cache(cb, seq->opcbsequence.csa_slotid, seq->opcbsequence.csa_sequenceid,
			 out->buf + body, out->len - body);
	}
out:
	free(replay);
	xdr_arena_reset(&arena);
	return ret ? -EMSGSIZE : 0;
}

int nfs4c_cb_handle(struct nfs4c_cb *cb, const uint8_t *rec, size_t len, struct xdr_enc *out)
{
	struct xdr_dec x;
	struct rpc_call_hdr h;
	struct rpc_cred cred;
	int ret;

	xdr_dec_init(&x, rec, len);
	if (rpc_dec_call_hdr(&x, &h)) {
		count(cb, &cb->st.garbage);
		return -EBADMSG; /* invariant 1: nothing to answer */
	}
	if (h.rpcvers != RPC_VERSION) {
		count(cb, &cb->st.rpc_errors);
		ret = rpc_enc_rpc_mismatch(out, h.xid);
		return ret ? -EMSGSIZE : 0;
	}
	enum rpc_auth_stat auth = rpc_auth_check(&h, &cred);
	if (auth != RPC_AUTH_OK) {
		count(cb, &cb->st.rpc_errors);
		ret = rpc_enc_auth_error(out, h.xid, auth);
	} else if (h.prog != cb->prog) {
		count(cb, &cb->st.rpc_errors);
		ret = rpc_enc_accepted(out, h.xid, RPC_PROG_UNAVAIL);
	} else if (h.vers != NFS_CB) {
		count(cb, &cb->st.rpc_errors);
		ret = rpc_enc_prog_mismatch(out, h.xid, NFS_CB, NFS_CB);
	} else if (h.proc == CB_NULL) {
		count(cb, &cb->st.nulls);
		ret = rpc_enc_accepted(out, h.xid, RPC_SUCCESS);
	} else if (h.proc == CB_COMPOUND) {
		return cb_compound(cb, &x, h.xid, &cred, out);
	} else {
		count(cb, &cb->st.rpc_errors);
		ret = rpc_enc_accepted(out, h.xid, RPC_PROC_UNAVAIL);
	}
	return ret ? -EMSGSIZE : 0;
}
