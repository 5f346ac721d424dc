/*
 * compound.c - the NFSv4 COMPOUND procedure (RFC 8881 §16.2, §2.10.6):
 * decoding, the order rules, SEQUENCE and the slot reply cache, running the
 * operations of the table (optable.c) and encoding their results, and the
 * stability wait once per compound.
 *
 * Design note.
 *
 * Decoding. The header (tag, minor version, count) is decoded, then the
 * operations one by one into the request's arena, so that the count can be
 * judged before anything is decoded for it: a compound of more than
 * NFS4_MAX_OPS operations is decoded only as far as its first operation
 * (which may be SEQUENCE, whose answer is then TOO_MANY_OPS). An operation
 * that does not decode ends the decoding: the operations before it run,
 * and it is answered BADXDR (OP_ILLEGAL for an unknown opcode), as if the
 * client had stopped there. Nothing is ever allocated for the claimed
 * count.
 *
 * Encoding. Each operation's result is encoded right after it ran, into
 * the compound's own reply stream (c->enc), with the generated encoder of
 * its union arm; the RPC encoder then appends that stream (external
 * segments, such as READ data, are spliced, not copied). So the reply
 * size is known after every operation (REP_TOO_BIG is exact) and a
 * session slot can keep the very bytes that were sent. Before an
 * operation runs, its largest result (the row's reply_size) must fit in
 * what the session allows; one that would not is answered REP_TOO_BIG or,
 * when the reply is to be cached, REP_TOO_BIG_TO_CACHE, without running.
 *
 * Order rules (RFC 8881 §2.10.6.4, §18.46.3):
 *  - a compound of minor version 1 or 2 starts with SEQUENCE, or with one
 *    of the operations that may run without a session (EXCHANGE_ID,
 *    CREATE_SESSION, DESTROY_SESSION, BIND_CONN_TO_SESSION,
 *    DESTROY_CLIENTID), which must then be alone (NOT_ONLY_OP); anything
 *    else first is OP_NOT_IN_SESSION; SEQUENCE anywhere but first is
 *    SEQUENCE_POS;
 *  - minor version 0 and unknown minor versions: MINOR_VERS_MISMATCH with
 *    no results (4.0 is not served);
 *  - an operation of a later minor version than the compound's, or an
 *    unknown opcode: OP_ILLEGAL;
 *  - operations that need a current (saved) filehandle get NOFILEHANDLE
 *    without one.
 *
 * Exactly once. SEQUENCE takes a slot; the slot is given back with the
 * reply's bytes (nfs4_sequence_done) from the RPC layer's encoded() hook,
 * which runs before any byte is sent, so that a retry arriving after the
 * reply was sent finds it cached, and a new request on the slot never
 * finds it still in use. If the reply is dropped, the release hook gives
 * the slot back without a reply.
 *
 * Stability (docs/design.md rules 7 and 8). Each operation that changes
 * something notes its commit sequence (nfs4_note_change); at the end the
 * compound asks the shared server layer to send the reply once the
 * highest of them is durable, so a compound forces the journal once.
 * Should that force fail, the results from the first changing operation
 * on are replaced by NFS4ERR_IO for that operation, and the compound ends
 * there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/iobuf.h"
#include "base/lock.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "nfs4/nfs4_priv.h"

/* Bytes a compound's decoded arguments may take in its arena. */
#define NFS4_ARGS_ARENA_CAP (512u << 10)
/* The part of the reply that is not an operation result: status, tag,
 * count; and the RPC reply header. */
#define NFS4_REPLY_HDR (3 * 4 + 1024 + SVC_REPLY_HDR)
/* An operation's result when its row gives no bound. */
#define NFS4_RES_DEFAULT 256
/* SEQUENCE's successful result: opcode, status, sessionid, five words. */
#define NFS4_SEQUENCE_RES (2 * 4 + NFS4_SESSIONID_SIZE + 5 * 4)

/* ---- decoding ---- */

static int nfs4_dec_compound(struct xdr_dec *x, void *argp)
{
	struct nfs4_compound_args *a = argp;
	const void *tag;
	int err;
	xdr_arena_init(&a->arena, a->arena_buf, sizeof(a->arena_buf), NFS4_ARGS_ARENA_CAP);
	x->arena = &a->arena;
	a->record_len = xdr_dec_remaining(x);
	if ((err = xdr_dec_opaque_ref(x, NFS4_OPAQUE_LIMIT, &tag, &a->tag_len)) ||
	    (err = xdr_dec_u32(x, &a->minorversion)) || (err = xdr_dec_u32(x, &a->count)))
		return err; /* not even a header: GARBAGE_ARGS */
	a->tag = tag;
	if (a->minorversion != 1 && a->minorversion != 2)
		return 0; /* nothing more is looked at */
	/* beyond the bound only the first op is decoded (see above) */
	uint32_t want = a->count <= NFS4_MAX_OPS ? a->count : 1;
	/* each op takes at least its opcode: never more than the bytes allow */
	if (want > xdr_dec_remaining(x) / 4)
		want = (uint32_t)(xdr_dec_remaining(x) / 4);
	if (!want)
		return 0;
	a->ops = xdr_arena_alloc(&a->arena, want, sizeof(*a->ops));
	if (!a->ops)
		return -EBADMSG;
	for (a->nops = 0; a->nops < want; a->nops++) {
		struct nfs_argop4 *op = &a->ops[a->nops];
		size_t left = xdr_dec_remaining(x);
		err = nfs4_dec_nfs_argop4(x, op);
		if (!err)
			continue;
		/* its result names it; when not even its number was there, the
		 * result is OP_ILLEGAL's (0 is no operation a client can decode) */
		a->bad_opcode = left >= 4 ? (uint32_t)op->argop : OP_ILLEGAL;
		if (err == -ENOMSG) {
			a->bad_opcode = OP_ILLEGAL;
			a->bad_status = NFS4ERR_OP_ILLEGAL;
		} else if (err == -E2BIG) {
			a->bad_status = NFS4ERR_REQ_TOO_BIG;
		} else {
			a->bad_status = NFS4ERR_BADXDR;
		}
		break;
	}
	if (!a->bad_status && a->nops < a->count && a->count <= NFS4_MAX_OPS) {
		/* the count claimed more ops than the bytes held */
		a->bad_opcode = OP_ILLEGAL;
		a->bad_status = NFS4ERR_BADXDR;
	}
	return 0;
}

/* ---- results ---- */

void *nfs4_res_alloc(struct nfs4_compound *c, size_t n)
{
	return xdr_arena_alloc(&c->resarena, 1, n);
}

struct nfs4_kept {
	void *p;
	struct nfs4_kept *next;
};

bool nfs4_res_keep(struct nfs4_compound *c, void *p)
{
	struct nfs4_kept *k = nfs4_res_alloc(c, sizeof(*k));
	if (!k)
		return false;
	k->p = p;
	k->next = c->kept;
	c->kept = k;
	return true;
}

void nfs4_note_change(struct nfs4_compound *c, uint64_t csn, bool data)
{
	if (!csn && !data)
		return;
	if (!c->first_change) {
		c->first_change = c->nres; /* the op being run is result nres-1 */
		c->first_change_mark = c->op_mark;
	}
	if (csn > c->csn)
		c->csn = csn;
	c->sync_data |= data;
}

void nfs4_mark_data(struct nfs4_compound *c)
{
	if (!c->data_marked) {
		c->data_mark = srv_data_mark(c->s->srv);
		c->data_marked = true;
	}
}

/*
 * An operation that ends with status and no result data: its opcode and
 * status (and SETATTR's empty attrsset, which every SETATTR4res carries).
 */
static int enc_op_status(struct xdr_enc *x, uint32_t opcode, uint32_t status)
{
	int err = xdr_enc_u32(x, opcode);
	if (!err)
		err = xdr_enc_u32(x, status);
	if (!err && opcode == OP_SETATTR)
		err = xdr_enc_u32(x, 0);
	return err;
}

uint32_t nfs4_err_on(struct nfs4_compound *c, int err, struct fs_inode *ip)
{
	if (err == -EINPROGRESS && !c->waited && !c->park_ip) {
		fs_igrab(ip);
		c->park_ip = ip;
		return NFS4ERR_DELAY;
	}
	return nfs4_status(err);
}

/* ---- filehandles ---- */

void nfs4_fh_clear(struct nfs4_fh *fh)
{
	if (fh->kind == NFS4_FH_FS && fh->ip)
		fs_iput(fh->ip);
	memset(fh, 0, sizeof(*fh));
}

void nfs4_fh_copy(struct nfs4_fh *dst, const struct nfs4_fh *src)
{
	nfs4_fh_clear(dst);
	*dst = *src;
	if (dst->kind == NFS4_FH_FS)
		fs_igrab(dst->ip);
}

/* ---- SEQUENCE ---- */

uint32_t nfs4_op_sequence(struct nfs4_compound *c, struct nfs_argop4 *arg, struct nfs_resop4 *res)
{
	struct SEQUENCE4args *sa = &arg->opsequence;
	struct SEQUENCE4res *sr = &res->opsequence;
	struct nfs4_compound_args *args = c->args;
	struct svc_conn *conn = svc_req_conn(c->rq);
	struct nfs4_seq_args a = {
		.sequenceid = sa->sa_sequenceid,
		.slotid = sa->sa_slotid,
		.highest_slotid = sa->sa_highest_slotid,
		.cachethis = sa->sa_cachethis,
		.solo = args->count == 1,
		.conn = conn,
		.conn_id = svc_conn_id(conn),
		.nops = args->count,
		.req_len = (uint32_t)args->record_len,
		.rep_min = (uint32_t)(xdr_enc_len(&c->enc) + SVC_REPLY_HDR + NFS4_SEQUENCE_RES),
	};
	struct nfs4_seq_res r;
	memcpy(a.sessionid, sa->sa_sessionid, NFS4_SESSIONID_SIZE);
	uint32_t st = nfs4_sequence(c->s->state, &a, &r, &c->sess);
	if (st)
		return st;
	/* SEQUENCE binds a new connection to the session (SP4_NONE): its
	 * close must be heard */
	nfs4_conn_watch(c->s, conn);
	c->clp = nfs4_session_client(c->sess);
	if (r.kind == NFS4_SEQ_REPLAY) {
		/* the whole reply is the slot's: send those bytes as they are */
		counter_inc(&c->s->st.replays);
		xdr_enc_rollback(&c->enc, (struct xdr_mark){0});
		int err = xdr_enc_fixed(&c->enc, r.replay, r.replay_len);
		free(r.replay);
		c->replayed = true;
		return err ? NFS4ERR_SERVERFAULT : NFS4_OK;
	}
	memcpy(sr->sr_resok4.sr_sessionid, sa->sa_sessionid, NFS4_SESSIONID_SIZE);
	sr->sr_resok4.sr_sequenceid = r.sequenceid;
	sr->sr_resok4.sr_slotid = r.slotid;
	sr->sr_resok4.sr_highest_slotid = r.highest_slotid;
	sr->sr_resok4.sr_target_highest_slotid = r.target_highest_slotid;
	sr->sr_resok4.sr_status_flags = r.status_flags;
	if (r.kind == NFS4_SEQ_REPLAY_UNCACHED) {
		counter_inc(&c->s->st.replays);
		c->retry_uncached = true; /* the next op, if any, answers RETRY_UNCACHED_REP */
		return NFS4_OK;
	}
	struct nfs4_channel_attrs fore;
	nfs4_session_fore_attrs(c->sess, &fore);
	c->slotid = r.slotid;
	c->slot_held = true;
	c->cachethis = sa->sa_cachethis;
	c->maxresp = fore.maxresponsesize;
	c->maxresp_cached = fore.maxresponsesize_cached;
	return NFS4_OK;
}

/* ---- the loop ---- */

static const struct nfs4_op *op_row(const struct nfs4_compound *c, uint32_t opcode)
{
	if (opcode >= nfs4_nops || !nfs4_ops[opcode].fn)
		return NULL;
	const struct nfs4_op *row = &nfs4_ops[opcode];
	if ((row->flags & OP4_V42) && c->args->minorversion < 2)
		return NULL;
	return row;
}

/* The order rules and preconditions of op i (see above): 0 to run it. */
static uint32_t op_check(struct nfs4_compound *c, unsigned i, const struct nfs4_op *row,
			 uint32_t opcode)
{
	if (!row)
		return NFS4ERR_OP_ILLEGAL;
	if (opcode == OP_SEQUENCE && i > 0)
		return NFS4ERR_SEQUENCE_POS;
	if (i == 0 && opcode != OP_SEQUENCE) {
		if (!(row->flags & OP4_FIRST))
			return NFS4ERR_OP_NOT_IN_SESSION;
		if (c->args->count > 1)
			return NFS4ERR_NOT_ONLY_OP;
	}
	if (row->flags & OP4_NOTSUPP)
		return NFS4ERR_NOTSUPP;
	if ((row->flags & OP4_CFH) && c->cfh.kind == NFS4_FH_NONE)
		return NFS4ERR_NOFILEHANDLE;
	if ((row->flags & OP4_SFH) && c->sfh.kind == NFS4_FH_NONE)
		return NFS4ERR_NOFILEHANDLE;
	if ((row->flags & OP4_MODIFIES) && c->cfh.kind == NFS4_FH_PSEUDO)
		return NFS4ERR_ROFS;
	return NFS4_OK;
}

/* Would a result of up to size bytes still fit? (REP_TOO_BIG[_TO_CACHE]) */
static uint32_t reply_room(const struct nfs4_compound *c, size_t size)
{
	size_t after = xdr_enc_len(&c->enc) + size + SVC_REPLY_HDR;
	if (c->maxresp && after > c->maxresp)
		return NFS4ERR_REP_TOO_BIG;
	if (c->cachethis && after > c->maxresp_cached)
		return NFS4ERR_REP_TOO_BIG_TO_CACHE;
	return NFS4_OK;
}

/* Run op i and encode its result. Returns its status. */
static uint32_t run_op(struct nfs4_compound *c, unsigned i)
{
	struct nfs_argop4 *arg = &c->args->ops[i];
	uint32_t opcode = arg->argop;
	const struct nfs4_op *row = op_row(c, opcode);
	struct nfs4_op_stats *os = row ? &c->s->ops[opcode] : NULL;
	uint64_t t0 = now_ns();
	struct xdr_mark mark = xdr_enc_mark(&c->enc);
	struct nfs_resop4 res;
	c->op_mark = mark;
	uint32_t st;

	if (!row)
		opcode = OP_ILLEGAL;
	c->nres++;
	if (c->retry_uncached) {
		/* the op after a SEQUENCE retry whose reply was not kept: it
		 * must not run again, and the compound ends with it */
		st = NFS4ERR_RETRY_UNCACHED_REP;
		goto error;
	}
	if ((st = op_check(c, i, row, opcode)))
		goto error;
	if ((st = reply_room(c, row->reply_size ? row->reply_size(arg) : NFS4_RES_DEFAULT)))
		goto error;
	memset(&res, 0, sizeof(res));
	res.resop = opcode;
	if (row->flags & OP4_SETS_CFH)
		c->have_cur_sid = false; /* a new current filehandle ends it (§16.2.3.1.2) */
	st = row->fn(c, arg, &res);
	if ((row->flags & OP4_SETS_CFH) && c->cfh.kind == NFS4_FH_FS && c->clp)
		c->cfh.exp.holder = nfs4_client_id(c->clp); /* rule 9: whose layouts are its own */
	if (c->replayed)
		goto out; /* the reply is the cached one, whole */
	if (st && !(row->flags & OP4_ERRDATA))
		goto error;
	int err = nfs4_enc_nfs_resop4(&c->enc, &res);
	size_t len = xdr_enc_len(&c->enc) + SVC_REPLY_HDR;
	if (!err && c->maxresp && len > c->maxresp)
		err = -EMSGSIZE;
	else if (!err && c->cachethis && len > c->maxresp_cached)
		err = -ENOBUFS; /* past what the bound (reply_size) promised */
	if (err) {
		xdr_enc_rollback(&c->enc, mark);
		st = err == -EMSGSIZE  ? NFS4ERR_REP_TOO_BIG
		     : err == -ENOBUFS ? NFS4ERR_REP_TOO_BIG_TO_CACHE
				       : NFS4ERR_SERVERFAULT;
		goto error;
	}
	goto out;
error:
	xdr_enc_rollback(&c->enc, mark);
	if (enc_op_status(&c->enc, opcode, st))
		panic("nfs4: no room for an operation's status");
out:
	msg_debug("nfs4: op %s (%u): %u", row ? row->name : "ILLEGAL", (unsigned)opcode, st);
	if (os) {
		counter_inc(&os->calls);
		if (st)
			counter_inc(&os->errors);
		stat_lat_record(&os->lat, now_ns() - t0);
	}
	if (c->replayed)
		c->next_op = c->args->nops; /* nothing more runs */
	return st;
}

/* The reply header: status and count are patched at the end. */
static int enc_header(struct nfs4_compound *c)
{
	struct nfs4_compound_args *a = c->args;
	int err;
	if ((err = xdr_enc_reserve(&c->enc, 4, &c->status_off)) ||
	    (err = xdr_enc_opaque(&c->enc, a->tag, a->tag_len)) ||
	    (err = xdr_enc_reserve(&c->enc, 4, &c->count_off)))
		return err;
	return 0;
}

static void enc_finish(struct nfs4_compound *c)
{
	xdr_enc_put_u32_at(&c->enc, c->status_off, c->status);
	xdr_enc_put_u32_at(&c->enc, c->count_off, c->nres);
}

/* The layout being waited for was returned (any thread, no lock held). */
static void layout_returned(struct fs_layout_waiter *w)
{
	assert_no_locks();
	struct nfs4_compound *c = container_of(w, struct nfs4_compound, lw);
	struct svc_req *rq = c->rq;
	svc_wake(rq);
	svc_req_put(rq); /* the waiter's */
}

/*
 * Op i asked to wait for a layout return (nfs4_err_on): its result goes,
 * and the request is parked, holding no thread, until the return or the
 * timer; then the compound runs again from op i (resume_layout). The
 * request is referenced for the waiter.
 */
static void park_for_layout(struct nfs4_compound *c, unsigned i)
{
	xdr_enc_rollback(&c->enc, c->op_mark);
	c->nres--;
	c->next_op = i;
	c->waited = true;
	c->phase = NFS4_PARKED_LAYOUT;
	c->lw.fn = layout_returned;
	svc_req_get(c->rq);
	bool other = !c->clp || fs_layout_recalling_other(c->park_ip, nfs4_client_id(c->clp));
	counter_inc(other ? &c->s->st.recall_waits : &c->s->st.recall_waits_own);
	svc_defer(c->rq, other ? NFS4_RECALL_WAIT : NFS4_OWN_RECALL_WAIT);
	if (fs_layout_on_return(c->park_ip, &c->lw) == 0)
		layout_returned(&c->lw); /* returned meanwhile */
}

/* Run the ops from c->next_op on; false if the compound is parked. */
static bool run_ops(struct nfs4_compound *c)
{
	struct nfs4_compound_args *a = c->args;
	while (c->next_op < a->nops) {
		unsigned i = c->next_op++;
		c->status = run_op(c, i);
		if (c->status == NFS4ERR_DELAY && c->park_ip && c->phase == NFS4_RUNNING) {
			park_for_layout(c, i);
			return false;
		}
		if (c->status)
			return true;
	}
	if (a->bad_status && c->next_op == a->nops && !c->replayed) {
		/* the op that did not decode (a retry's reply is the cached
		 * one, whole: nothing is added to it) */
		c->nres++;
		c->status = a->bad_status;
		if (enc_op_status(&c->enc, a->bad_opcode, a->bad_status))
			panic("nfs4: no room for an operation's status");
	}
	return true;
}

/* ---- stability and the end of a compound ---- */

/* The force failed: the first changing op answers IO and ends the compound. */
static void compound_failed(void *arg, int err)
{
	struct nfs4_compound *c = arg;
	uint32_t opcode = c->args->ops[c->first_change - 1].argop;
	xdr_enc_rollback(&c->enc, c->first_change_mark);
	c->nres = c->first_change;
	c->status = NFS4ERR_IO;
	if (enc_op_status(&c->enc, opcode, NFS4ERR_IO))
		panic("nfs4: no room for an operation's status");
	enc_finish(c);
}

static enum svc_stat finish(struct nfs4_compound *c)
{
	/* the filehandles go now, in this thread with no lock held: the last
	 * reference of an unlinked file (its CLOSE after a REMOVE) frees it
	 * (fs_iput), which the journal's completion that sends a stable
	 * reply, and releases the compound, must not do under its locks */
	nfs4_fh_clear(&c->cfh);
	nfs4_fh_clear(&c->sfh);
	if (c->replayed)
		return SVC_OK; /* the slot's bytes, stable when they were first sent */
	if (c->status == NFS4ERR_DELAY) {
		counter_inc(&c->s->st.delays);
		if (c->waited)
			counter_inc(&c->s->st.delays_after_wait);
	}
	enc_finish(c);
	if (!c->csn && !c->sync_data)
		return SVC_OK;
	c->phase = NFS4_PARKED_STABLE;
	BUG_ON(c->sync_data && !c->data_marked); /* S1: every data op marks */
	return srv_reply_stable(c->s->srv, c->rq, c->csn, c->sync_data, c->data_mark,
				compound_failed, c);
}

/* The rerun of a compound parked for a layout return (or its timer). */
static enum svc_stat resume_layout(struct nfs4_compound *c)
{
	/* woken by the return (EVENT): layout_returned puts its reference.
	 * By the timer or a shutdown: if the waiter is still queued it never
	 * runs, so its reference goes here; if a return took it meanwhile,
	 * its svc_wake fails and it puts its reference itself. */
	if (svc_req_wake(c->rq) != SVC_WAKE_EVENT && fs_layout_cancel_wait(c->park_ip, &c->lw))
		svc_req_put(c->rq);
	fs_iput(c->park_ip);
	c->park_ip = NULL;
	c->phase = NFS4_RUNNING;
	if (svc_req_wake(c->rq) == SVC_WAKE_SHUTDOWN)
		return SVC_DROP;
	if (!run_ops(c))
		return SVC_DEFERRED;
	return finish(c);
}

static enum svc_stat nfs4_proc_compound(struct svc_req *rq, const struct rpc_cred *rc, void *argp,
					void *resp)
{
	struct nfs4_compound *c = resp;
	if (svc_req_wake(rq) != SVC_WAKE_NONE)
		return c->phase == NFS4_PARKED_LAYOUT ? resume_layout(c)
						      : srv_stable_resume(c->s->srv, rq);
	c->s = svc_req_ctx(rq);
	c->pseudo = atomic_load(&c->s->pseudo);
	c->rq = rq;
	c->rc = rc;
	c->args = argp;
	counter_inc(&c->s->st.compounds);
	xdr_enc_init_buf(&c->enc, c->enc_buf, sizeof(c->enc_buf), NFS4_MAX_REPLY);
	/* results take at most a few times their encoded size in memory */
	xdr_arena_init(&c->resarena, c->resarena_buf, sizeof(c->resarena_buf), 4 * NFS4_MAX_REPLY);
	if (enc_header(c))
		return SVC_SYSERR;
	if (c->args->minorversion != 1 && c->args->minorversion != 2) {
		counter_inc(&c->s->st.minor_mismatch);
		c->status = NFS4ERR_MINOR_VERS_MISMATCH;
		enc_finish(c);
		return SVC_OK;
	}
	if (c->args->count > NFS4_MAX_OPS)
		counter_inc(&c->s->st.too_many_ops);
	if (!run_ops(c))
		return SVC_DEFERRED;
	return finish(c);
}

static int nfs4_enc_compound(struct xdr_enc *x, const void *resp)
{
	const struct nfs4_compound *c = resp;
	return xdr_enc_append(x, &c->enc);
}

/* Before any byte of the reply is sent: the slot keeps it (see above). */
static void nfs4_compound_encoded(struct svc_req *rq, void *argp, void *resp,
				  const struct iovec *iov, int niov)
{
	struct nfs4_compound *c = resp;
	if (!c->slot_held)
		return;
	size_t len = 0;
	for (int i = 0; i < niov; i++)
		len += iov[i].iov_len;
	/* the slot copies what it keeps: flatten only when it is small
	 * enough to be kept at all (a READ reply is not: cachethis is not
	 * set for it, or REP_TOO_BIG_TO_CACHE stopped it) */
	uint8_t *flat = NULL;
	if (len <= c->maxresp_cached || len <= NFS4_SLOT_SOLO_MAX) {
		flat = xmalloc(len ? len : 1);
		size_t off = 0;
		for (int i = 0; i < niov; i++) {
			memcpy(flat + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
	}
	nfs4_sequence_done(c->sess, c->slotid, flat, flat ? len : 0);
	free(flat);
	c->slot_held = false;
}

static void nfs4_release_compound(void *argp, void *resp)
{
	struct nfs4_compound_args *a = argp;
	struct nfs4_compound *c = resp;
	if (c->slot_held)
		nfs4_sequence_done(c->sess, c->slotid, NULL, 0); /* dropped: nothing to keep */
	if (c->sess)
		nfs4_session_put(c->sess);
	nfs4_fh_clear(&c->cfh);
	nfs4_fh_clear(&c->sfh);
	if (c->park_ip)
		fs_iput(c->park_ip);
	for (struct nfs4_kept *k = c->kept; k; k = k->next) /* nodes in the arena */
		iobuf_free(k->p);
	xdr_arena_reset(&c->resarena);
	xdr_enc_destroy(&c->enc);
	xdr_arena_reset(&a->arena);
}

/* The reply reservation (svc.h): the sum of the ops' bounds. */
static uint32_t nfs4_compound_bound(const void *argp)
{
	const struct nfs4_compound_args *a = argp;
	uint64_t n = NFS4_REPLY_HDR;
	for (uint32_t i = 0; i < a->nops; i++) {
		const struct nfs_argop4 *op = &a->ops[i];
		const struct nfs4_op *row =
			op->argop >= 0 && (unsigned)op->argop < nfs4_nops && nfs4_ops[op->argop].fn
				? &nfs4_ops[op->argop]
				: NULL;
		n += 8 + (row && row->reply_size ? row->reply_size(op) : NFS4_RES_DEFAULT);
	}
	n += 16; /* the op that did not decode */
	return n > NFS4_MAX_REPLY ? NFS4_MAX_REPLY : (uint32_t)n;
}

static enum svc_stat nfs4_null(struct svc_req *rq, const struct rpc_cred *rc, void *args, void *res)
{
	return SVC_OK;
}

static const struct svc_proc nfs4_procs[2] = {
	[NFSPROC4_NULL] = {.name = "null",
			   .decode = svc_dec_void,
			   .handler = nfs4_null,
			   .encode = svc_enc_void,
			   .flags = SVC_PROC_INLINE,
			   .reply_max = SVC_REPLY_HDR},
	[NFSPROC4_COMPOUND] = {.name = "compound",
			       .decode = nfs4_dec_compound,
			       .handler = nfs4_proc_compound,
			       .encode = nfs4_enc_compound,
			       .release = nfs4_release_compound,
			       .args_size = sizeof(struct nfs4_compound_args),
			       .res_size = sizeof(struct nfs4_compound),
			       .reply_max = NFS4_MAX_REPLY,
			       .reply_bound = nfs4_compound_bound,
			       .encoded = nfs4_compound_encoded},
};

const struct svc_version nfs4_version = {.vers = 4, .nprocs = 2, .procs = nfs4_procs};
