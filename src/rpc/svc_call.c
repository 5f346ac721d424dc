/*
 * svc_call.c - calls from the server to a client over the client's own
 * connection (the NFSv4.1 backchannel).
 *
 * A call is pending while it is linked in its connection's table
 * (conn->calls, by xid, under svc.conn). Whoever unlinks it - the matching
 * REPLY, its timer, svc_call_cancel() or the connection closing - decides
 * its status; the others find it gone and do nothing.
 *
 * References (call->priv.refs): one for the pending state (dropped by the
 * claimer), one for the CALL message on the send queue (dropped when it
 * was written or discarded: a reply can be processed before the writer
 * returns), one for an armed timer. The last one queues done() on the
 * worker pool, so done() never runs on the loop thread nor inside a
 * caller's locks, and runs exactly once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "rpc/svc_internal.h"

struct call_msg {
	struct svc_out out;
	struct svc_call *call;
	struct xdr_enc enc;
	struct iovec iov[2 * XDR_MAX_EXT + 1];
	uint8_t inl[512];
};

static void call_done_work(struct svc_work *w)
{
	struct svc_call *call = container_of(w, struct svc_call, priv.work);
	struct svc_conn *c = call->priv.conn;
	struct svc *s = c->svc;
	int status = call->priv.status;
	svc_conn_put(c);
	call->done(call, status); /* the caller may free call from here on */
	atomic_fetch_sub(&s->live_calls, 1);
}

static void call_put(struct svc_call *call)
{
	if (atomic_fetch_sub(&call->priv.refs, 1) != 1)
		return;
	call->priv.work.fn = call_done_work;
	pool_queue(&call->priv.conn->svc->pool, &call->priv.conn->workq, &call->priv.work);
}

static struct list *bucket(struct svc_conn *c, uint32_t xid)
{
	return &c->calls[xid % SVC_CALL_BUCKETS];
}

static bool call_claim(struct svc_call *call)
{
	struct svc_conn *c = call->priv.conn;
	bool mine;
	mutex_lock(&c->lock);
	mine = call->priv.pending;
	if (mine) {
		call->priv.pending = false;
		list_del(&call->priv.link);
	}
	mutex_unlock(&c->lock);
	return mine;
}

static void call_disarm(struct svc_call *call)
{
	if (timer_cancel(call->priv.conn->svc, &call->priv.timer))
		call_put(call);
}

static void call_msg_done(struct svc_out *o)
{
	struct call_msg *m = container_of(o, struct call_msg, out);
	struct svc_call *call = m->call;
	xdr_enc_destroy(&m->enc);
	free(m);
	call_put(call);
}

/* Loop thread: claim and hand over, nothing more. */
static void call_timer_fire(struct svc_timer *t)
{
	struct svc_call *call = container_of(t, struct svc_call, priv.timer);
	if (call_claim(call)) {
		call->priv.status = -ETIMEDOUT;
		counter_inc(&call->priv.conn->svc->st.cb_timeouts);
		call_put(call);
	}
	call_put(call); /* the timer's reference */
}

int svc_call_start(struct svc_conn *c, struct svc_call *call)
{
	struct svc *s = c->svc;
	struct call_msg *m = xmalloc(sizeof(*m));
	size_t off;
	uint32_t xid = atomic_fetch_add(&s->next_xid, 1);

	m->call = call;
	xdr_enc_init_buf(&m->enc, m->inl, sizeof(m->inl), s->cfg.max_record + 4);
	if (xdr_enc_reserve(&m->enc, 4, &off) ||
	    rpc_enc_call_hdr(&m->enc, xid, call->prog, call->vers, call->proc, call->cred) ||
	    call->encode(&m->enc, call->args)) {
		xdr_enc_destroy(&m->enc);
		free(m);
		return -EMSGSIZE;
	}
	size_t total = xdr_enc_len(&m->enc);
	xdr_enc_put_u32_at(&m->enc, 0, REC_LAST_FRAG | (uint32_t)(total - 4));
	m->out.iov = m->iov;
	m->out.niov = xdr_enc_iov(&m->enc, m->iov, (int)ARRAY_SIZE(m->iov));
	m->out.idx = 0;
	m->out.bytes = total;
	m->out.done = call_msg_done;

	memset(&call->reply, 0, sizeof(call->reply));
	call->priv.conn = c;
	call->priv.xid = xid;
	call->priv.status = 0;
	call->priv.refs = call->timeout_ns ? 3 : 2;
	timer_init(&call->priv.timer, call_timer_fire);

	mutex_lock(&c->lock);
	if (c->dead) {
		mutex_unlock(&c->lock);
		xdr_enc_destroy(&m->enc);
		free(m);
		return -ENOTCONN;
	}
	svc_conn_get(c);
	atomic_fetch_add(&s->live_calls, 1);
	call->priv.pending = true;
	list_add_tail(&call->priv.link, bucket(c, xid));
	if (call->timeout_ns)
		timer_arm(s, &call->priv.timer, now_ns() + call->timeout_ns);
	mutex_unlock(&c->lock);

	counter_inc(&s->st.cb_calls);
	conn_send(c, &m->out);
	return 0;
}

bool svc_call_cancel(struct svc_call *call)
{
	if (!call_claim(call))
		return false;
	call->priv.status = -ECANCELED;
	counter_inc(&call->priv.conn->svc->st.cb_cancelled);
	call_disarm(call);
	call_put(call);
	return true;
}

void call_reply(struct svc_conn *c, uint32_t xid, const uint8_t *rec, size_t len)
{
	struct svc *s = c->svc;
	struct svc_call *call = NULL, *it;
	mutex_lock(&c->lock);
	list_for_each_entry(it, bucket(c, xid), priv.link)
	{
		if (it->priv.xid == xid) {
			call = it;
			call->priv.pending = false;
			list_del(&call->priv.link);
			break;
		}
	}
	mutex_unlock(&c->lock);
	if (!call) {
		counter_inc(&s->st.cb_unmatched);
		return;
	}
	call_disarm(call);
	counter_inc(&s->st.cb_replies);

	struct xdr_dec x;
	xdr_dec_init(&x, rec, len);
	if (rpc_dec_reply_hdr(&x, &call->reply)) {
		call->priv.status = -EBADMSG;
	} else if (call->reply.reply_stat != RPC_MSG_ACCEPTED || call->reply.stat != RPC_SUCCESS) {
		call->priv.status = -EPROTO;
	} else {
		call->priv.status = call->decode(&x, call->res) ? -EBADMSG : 0;
	}
	if (call->priv.status)
		counter_inc(&s->st.cb_errors);
	call_put(call);
}

void call_fail_all_locked(struct svc_conn *c, struct list *failed)
{
	assert_locked(&c->lock);
	for (int i = 0; i < SVC_CALL_BUCKETS; i++) {
		while (!list_empty(&c->calls[i])) {
			struct svc_call *call =
				list_first_entry(&c->calls[i], struct svc_call, priv.link);
			list_del(&call->priv.link);
			call->priv.pending = false;
			call->priv.status = -ECONNRESET;
			list_add_tail(&call->priv.link, failed);
		}
	}
}

void call_finish_failed(struct list *failed)
{
	while (!list_empty(failed)) {
		struct svc_call *call = list_first_entry(failed, struct svc_call, priv.link);
		list_del(&call->priv.link);
		call_disarm(call);
		call_put(call);
	}
}
