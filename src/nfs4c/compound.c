/*
 * compound.c - building, encoding, sending and decoding one COMPOUND, with
 * its slot (nfs4c.h invariants 1 and 2).
 *
 * A send goes:
 *   start: take a slot (waiting while none is free), fill SEQUENCE, encode
 *          the whole RPC record once (WRITE data spliced, not copied), and
 *          hand it to the connection;
 *   wait:  until the reply comes; if the connection breaks (or the reply
 *          is overdue, which breaks it), recover and send the same bytes
 *          again on the new connection, unless the session changed
 *          (-ESTALE) or reconnect_ms ran out;
 *   finish: decode the reply from an arena with a cap, then tell the slot
 *          table what became of the slot (slots.h: PROCESSED when SEQUENCE
 *          succeeded, UNUSED when the server answered without using it,
 *          LOST when nobody can tell), take the server's limits and status
 *          flags, and run the hooks with no lock held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/iobuf.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "nfs4c/nfs4c_priv.h"
#include "rpc/rpc_msg.h"

#define ARENA_CAP_DEFAULT (16u << 20)
#define REQ_MAX		  (64u << 20) /* an encoded request (WRITE data included) */
#define OPS_FIRST	  16

void nfs4c_compound_init(struct nfs4c_compound *c, struct nfs4c_client *cl)
{
	memset(c, 0, sizeof(*c));
	c->cl = cl;
	c->slot = -1;
	c->minorversion = -1;
	nfs4c_call_init(&c->call);
	xdr_arena_init(&c->arena, c->arena_first, sizeof(c->arena_first),
		       cl && cl->cfg.arena_cap ? cl->cfg.arena_cap : ARENA_CAP_DEFAULT);
	xdr_arena_init(&c->scratch, NULL, 0, NFS4C_SCRATCH_CAP);
	xdr_enc_init(&c->req, REQ_MAX);
}

static void results_clear(struct nfs4c_compound *c)
{
	iobuf_free(c->reply);
	c->reply = NULL;
	c->reply_len = 0;
	c->body_off = 0;
	xdr_arena_reset(&c->arena);
	memset(&c->res, 0, sizeof(c->res));
	memset(&c->rh, 0, sizeof(c->rh));
	c->status = NFS4_OK;
}

void nfs4c_compound_reset(struct nfs4c_compound *c)
{
	BUG_ON(c->started);
	results_clear(c);
	xdr_arena_reset(&c->scratch);
	c->nops = 0;
	c->build_err = 0;
	c->slot = -1;
	c->seqid = 0;
	c->cachethis = false;
	c->no_sequence = false;
	c->no_recover = false;
	c->minorversion = -1;
	c->cred = NULL;
	c->tag = NULL;
	c->conn = NULL;
	c->timeout_ns = 0;
}

void nfs4c_compound_destroy(struct nfs4c_compound *c)
{
	BUG_ON(c->started);
	results_clear(c);
	xdr_arena_reset(&c->scratch);
	xdr_enc_destroy(&c->req);
	nfs4c_call_destroy(&c->call);
	free(c->ops);
	c->ops = NULL;
}

void nfs4c_compound_no_recover(struct nfs4c_compound *c)
{
	c->no_recover = true;
}

struct nfs_argop4 *nfs4c_op_add(struct nfs4c_compound *c, nfs_opnum4 op)
{
	if (c->nops >= NFS4C_MAX_OPS) {
		c->build_err = -E2BIG;
		return NULL;
	}
	if (c->nops == c->cap) {
		c->cap = c->cap ? 2 * c->cap : OPS_FIRST;
		c->ops = xrealloc(c->ops, c->cap * sizeof(*c->ops));
	}
	struct nfs_argop4 *a = &c->ops[c->nops++];
	memset(a, 0, sizeof(*a));
	a->argop = op;
	return a;
}

void *nfs4c_scratch(struct nfs4c_compound *c, size_t len)
{
	void *p = xdr_arena_alloc(&c->scratch, 1, len ? len : 1);
	if (!p)
		c->build_err = -E2BIG;
	return p;
}

utf8string nfs4c_str(struct nfs4c_compound *c, const char *s)
{
	size_t len = strlen(s);
	utf8string u = {0};
	uint8_t *p = nfs4c_scratch(c, len);
	if (p && len <= UINT32_MAX) {
		memcpy(p, s, len);
		u.len = (uint32_t)len;
		u.val = p;
	}
	return u;
}

/* ---- encoding ------------------------------------------------------------- */

static bool op_known(nfs_opnum4 op)
{
	return (op >= OP_ACCESS && op <= OP_CLONE) || op == OP_ILLEGAL;
}

static int encode_args(const struct nfs4c_compound *c, struct xdr_enc *x, uint32_t minor)
{
	const char *tag = c->tag ? c->tag : "";
	size_t tlen = strlen(tag);
	uint32_t n = c->nops + (c->no_sequence ? 0 : 1);
	if (tlen > UINT32_MAX)
		return -EINVAL;
	int err = xdr_enc_opaque(x, tag, (uint32_t)tlen);
	err = err ? err : xdr_enc_u32(x, minor);
	err = err ? err : xdr_enc_u32(x, n);
	if (!err && !c->no_sequence)
		err = nfs4_enc_nfs_argop4(x, &c->seq);
	for (uint32_t i = 0; !err && i < c->nops; i++) {
		/* an operation the codecs do not know: its number alone, so a
		 * test can see the server answer OP_ILLEGAL */
		if (op_known(c->ops[i].argop))
			err = nfs4_enc_nfs_argop4(x, &c->ops[i]);
		else
			err = xdr_enc_u32(x, (uint32_t)c->ops[i].argop);
	}
	return err;
}

int nfs4c_compound_encode(const struct nfs4c_compound *c, struct xdr_enc *out)
{
	if (c->build_err)
		return c->build_err;
	uint32_t minor = 1;
	if (c->minorversion >= 0) {
		minor = (uint32_t)c->minorversion;
	} else if (c->cl) {
		mutex_lock(&c->cl->lock);
		minor = c->cl->minorversion;
		mutex_unlock(&c->cl->lock);
	}
	return encode_args(c, out, minor);
}

/* ---- results -------------------------------------------------------------- */

const struct nfs_resop4 *nfs4c_res(const struct nfs4c_compound *c, nfs_opnum4 op, unsigned nth)
{
	for (uint32_t i = 0; i < c->res.resarray.len; i++) {
		if (c->res.resarray.val[i].resop != op)
			continue;
		if (nth-- == 0)
			return &c->res.resarray.val[i];
	}
	return NULL;
}

int nfs4c_res_fh(const struct nfs4c_compound *c, struct nfs4c_fh *fh)
{
	for (uint32_t i = c->res.resarray.len; i-- > 0;) {
		const struct nfs_resop4 *r = &c->res.resarray.val[i];
		if (r->resop != OP_GETFH || r->opgetfh.status != NFS4_OK)
			continue;
		fh->len = r->opgetfh.resok4.object.len;
		memcpy(fh->val, r->opgetfh.resok4.object.val, fh->len);
		return 0;
	}
	return -ENOENT;
}

int nfs4c_res_attr(const struct nfs4c_compound *c, struct nfs4c_attr *a)
{
	for (uint32_t i = c->res.resarray.len; i-- > 0;) {
		const struct nfs_resop4 *r = &c->res.resarray.val[i];
		if (r->resop != OP_GETATTR || r->opgetattr.status != NFS4_OK)
			continue;
		return nfs4c_attr_decode(&r->opgetattr.resok4.obj_attributes, a);
	}
	return -ENOENT;
}

/* ---- sending -------------------------------------------------------------- */

static uint64_t timeout_of(const struct nfs4c_compound *c)
{
	if (c->timeout_ns)
		return c->timeout_ns;
	return (uint64_t)c->cl->cfg.timeout_ms * NSEC_PER_MSEC;
}

static void send_req(struct nfs4c_compound *c)
{
	struct iovec iov[2 * XDR_MAX_EXT + 1];
	int n = xdr_enc_iov(&c->req, iov, (int)ARRAY_SIZE(iov));
	BUG_ON(n < 0);
	c->send_err = nfs4c_conn_call(c->sent_on, &c->call, iov, n);
}

int nfs4c_start(struct nfs4c_compound *c)
{
	struct nfs4c_client *cl = c->cl;
	const struct rpc_cred *cred;
	uint32_t minor;
	int err;

	if (!cl || c->started)
		return -EINVAL;
	if (c->build_err)
		return c->build_err;
	results_clear(c);
	c->have_slot = false;
	c->seq_auto = false;
	if (c->no_sequence)
		c->no_recover = true; /* lone operations of the session layer */

	mutex_lock(&cl->lock);
	if (!c->no_sequence) {
		uint32_t slot;
		if (!cl->have_session) {
			mutex_unlock(&cl->lock);
			return -ENOTCONN;
		}
		/* waits while every usable slot (or the one asked for) is busy;
		 * a session change wakes it too (slot_cv) */
		while ((err = nfs4c_slots_take(&cl->slots, c->slot, &slot)) == -EAGAIN ||
		       err == -EBUSY) {
			if (cl->stopping) {
				err = -ESHUTDOWN;
				break;
			}
			cond_wait(&cl->slot_cv, &cl->lock);
		}
		if (err) {
			mutex_unlock(&cl->lock);
			return err;
		}
		uint32_t next = cl->slots.slot[slot].seqid;
		c->have_slot = true;
		c->sess_gen = cl->sess_gen;
		c->slotid = slot;
		c->seqid_sent = c->seqid ? c->seqid : next;
		/* slots.h: an explicit seqid other than the slot's next cannot
		 * move the server's slot, so the table is left alone */
		c->seq_auto = c->seqid_sent == next;
		memset(&c->seq, 0, sizeof(c->seq));
		c->seq.argop = OP_SEQUENCE;
		struct SEQUENCE4args *sa = &c->seq.opsequence;
		memcpy(sa->sa_sessionid, cl->sid, NFS4_SESSIONID_SIZE);
		sa->sa_sequenceid = c->seqid_sent;
		sa->sa_slotid = slot;
		sa->sa_highest_slotid = nfs4c_slots_highest_busy(&cl->slots);
		sa->sa_cachethis = c->cachethis;
	}
	c->sent_on = c->conn ? c->conn : cl->conn;
	nfs4c_conn_get(c->sent_on);
	c->conn_gen = cl->conn_gen;
	minor = c->minorversion >= 0 ? (uint32_t)c->minorversion : cl->minorversion;
	cred = c->cred ? c->cred : &cl->cfg.cred;
	mutex_unlock(&cl->lock);

	c->call.xid = nfs4c_next_xid();
	xdr_enc_destroy(&c->req);
	xdr_enc_init(&c->req, REQ_MAX);
	err = rpc_enc_call_hdr(&c->req, c->call.xid, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, cred);
	err = err ? err : encode_args(c, &c->req, minor);
	if (err) {
		if (c->have_slot) {
			mutex_lock(&cl->lock);
			if (c->sess_gen == cl->sess_gen)
				nfs4c_slots_done(&cl->slots, c->slotid, NFS4C_SLOT_UNUSED);
			cond_broadcast(&cl->slot_cv);
			mutex_unlock(&cl->lock);
			c->have_slot = false;
		}
		nfs4c_conn_put(c->sent_on);
		c->sent_on = NULL;
		return err;
	}
	c->deadline = now_ns() + (uint64_t)cl->cfg.reconnect_ms * NSEC_PER_MSEC;
	c->started = true;
	send_req(c);
	return 0;
}

/* Decode the reply; *how is what became of the slot. Returns 0 or the
 * error nfs4c_send reports. */
static int decode_reply(struct nfs4c_compound *c, enum nfs4c_slot_outcome *how,
			const struct SEQUENCE4res **seqres)
{
	struct xdr_dec x;
	*seqres = NULL;
	c->reply = c->call.reply;
	c->reply_len = c->call.reply_len;
	c->call.reply = NULL;
	xdr_dec_init(&x, c->reply, c->reply_len);
	if (rpc_dec_reply_hdr(&x, &c->rh)) {
		/* an answer to our xid that is not a reply header: whether the
		 * server ran the compound nobody can tell */
		*how = NFS4C_SLOT_LOST;
		return -EBADMSG;
	}
	if (c->rh.reply_stat != RPC_MSG_ACCEPTED || c->rh.stat != RPC_SUCCESS) {
		*how = NFS4C_SLOT_UNUSED; /* refused before COMPOUND ran */
		return -EPROTO;
	}
	c->body_off = c->reply_len - xdr_dec_remaining(&x);
	x.arena = &c->arena;
	int err = nfs4_dec_COMPOUND4res(&x, &c->res);
	if (!err && xdr_dec_remaining(&x))
		err = -EBADMSG; /* bytes after the results */
	c->status = c->res.status;
	if (!c->no_sequence && c->res.resarray.len > 0 &&
	    c->res.resarray.val[0].resop == OP_SEQUENCE) {
		*seqres = &c->res.resarray.val[0].opsequence;
		*how = (*seqres)->sr_status == NFS4_OK ? NFS4C_SLOT_PROCESSED : NFS4C_SLOT_UNUSED;
	} else if (!c->no_sequence && err) {
		*how = NFS4C_SLOT_LOST; /* not even SEQUENCE's result decoded */
	} else {
		*how = NFS4C_SLOT_UNUSED; /* no results (MINOR_VERS_MISMATCH...) */
	}
	return err == -ENOMSG ? -EBADMSG : err;
}

static int finish(struct nfs4c_compound *c, int err)
{
	struct nfs4c_client *cl = c->cl;
	enum nfs4c_slot_outcome how = NFS4C_SLOT_LOST;
	const struct SEQUENCE4res *seqres = NULL;
	uint32_t old_flags = 0, new_flags = 0;
	bool flags_changed = false, misordered = false, bad_session = false;

	c->started = false;
	if (!err)
		err = decode_reply(c, &how, &seqres);
	if (c->have_slot) {
		mutex_lock(&cl->lock);
		/* a session change took the slot table with it (-ESTALE) */
		if (c->sess_gen == cl->sess_gen) {
			nfs4c_slots_done(&cl->slots, c->slotid,
					 c->seq_auto ? how : NFS4C_SLOT_UNUSED);
			if (seqres && seqres->sr_status == NFS4_OK) {
				const struct SEQUENCE4resok *ok = &seqres->sr_resok4;
				nfs4c_slots_set_limits(&cl->slots, ok->sr_highest_slotid,
						       ok->sr_target_highest_slotid);
				old_flags = cl->status_flags;
				new_flags = ok->sr_status_flags;
				cl->status_flags = new_flags;
				flags_changed = old_flags != new_flags;
				cl->last_renew_ns = now_ns();
			}
			if (seqres && c->seq_auto && seqres->sr_status == NFS4ERR_SEQ_MISORDERED)
				misordered = true;
			if (seqres && (seqres->sr_status == NFS4ERR_BADSESSION ||
				       seqres->sr_status == NFS4ERR_DEADSESSION))
				bad_session = true;
		}
		cond_broadcast(&cl->slot_cv);
		mutex_unlock(&cl->lock);
		c->have_slot = false;
	}
	if (c->sent_on) {
		nfs4c_conn_put(c->sent_on);
		c->sent_on = NULL;
	}

	/* hooks and recovery with no lock held (nfs4c.h invariant 4); a
	 * recovery's own compounds run under nfs4c.recover, nothing else */
	assert_none_held(LOCK_RANK_NFS4C_CLIENT, LOCK_RANK_NFS4C_CONN);
	if (flags_changed && cl->hooks.status_flags)
		cl->hooks.status_flags(cl->hooks.arg, cl, old_flags, new_flags);
	if (misordered && cl->hooks.seq_misordered) {
		uint32_t s = cl->hooks.seq_misordered(cl->hooks.arg, cl, c->slotid, c->seqid_sent);
		mutex_lock(&cl->lock);
		if (s && c->sess_gen == cl->sess_gen)
			nfs4c_slots_set_seqid(&cl->slots, c->slotid, s);
		mutex_unlock(&cl->lock);
	}
	if (bad_session && !c->no_recover)
		nfs4c_recover(cl, NFS4C_REC_SESSION, c->sess_gen);
	return err;
}

int nfs4c_wait(struct nfs4c_compound *c)
{
	struct nfs4c_client *cl = c->cl;
	if (!c->started)
		return -EINVAL;
	for (;;) {
		int err = c->send_err;
		c->send_err = 0;
		if (!err)
			err = nfs4c_conn_wait(c->sent_on, &c->call, timeout_of(c));
		if (err == -ETIMEDOUT) {
			/* the reply came just now after all */
			if (!nfs4c_conn_cancel(c->sent_on, &c->call))
				continue;
			/* no retry on the same connection (RFC 8881 2.9.2): drop
			 * it; the calls in flight on it go through recovery */
			nfs4c_conn_shutdown(c->sent_on, -ETIMEDOUT);
		}
		if (!err)
			return finish(c, 0);
		if (c->conn || c->no_recover || !nfs4c_conn_err_is_transport(err) ||
		    now_ns() >= c->deadline)
			return finish(c, err);
		int rerr = nfs4c_recover(cl, NFS4C_REC_CONN, c->conn_gen);
		if (rerr)
			return finish(c, rerr);
		mutex_lock(&cl->lock);
		if (c->have_slot && c->sess_gen != cl->sess_gen) {
			mutex_unlock(&cl->lock);
			return finish(c, -ESTALE);
		}
		struct nfs4c_conn *conn = cl->conn;
		nfs4c_conn_get(conn);
		c->conn_gen = cl->conn_gen;
		mutex_unlock(&cl->lock);
		nfs4c_conn_put(c->sent_on);
		c->sent_on = conn;
		/* invariant 2: the same bytes, xid, slot and sequence id */
		send_req(c);
	}
}

int nfs4c_send(struct nfs4c_compound *c)
{
	int err = nfs4c_start(c);
	return err ? err : nfs4c_wait(c);
}

int nfs4c_call_raw(struct nfs4c_client *cl, struct nfs4c_conn *conn, const void *rec, size_t len,
		   uint32_t xid, uint8_t **reply, size_t *reply_len)
{
	struct nfs4c_call call;
	struct iovec iov = {(void *)rec, len};
	if (!conn)
		conn = nfs4c_get_conn(cl);
	else
		nfs4c_conn_get(conn);
	nfs4c_call_init(&call);
	call.xid = xid;
	int err = nfs4c_conn_call(conn, &call, &iov, 1);
	if (!err) {
		err = nfs4c_conn_wait(conn, &call, (uint64_t)cl->cfg.timeout_ms * NSEC_PER_MSEC);
		if (err == -ETIMEDOUT && !nfs4c_conn_cancel(conn, &call))
			err = nfs4c_conn_wait(conn, &call, 0);
	}
	if (!err) {
		*reply = call.reply;
		*reply_len = call.reply_len;
		call.reply = NULL;
	}
	nfs4c_call_destroy(&call);
	nfs4c_conn_put(conn);
	return err;
}
