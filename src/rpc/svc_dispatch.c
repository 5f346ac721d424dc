/*
 * svc_dispatch.c - from a record to a reply: header and credential checks,
 * program/version/procedure lookup, the duplicate request cache, argument
 * decoding, the handler, deferral and completion, reply encoding.
 *
 * Runs on worker threads (and on whichever thread calls svc_complete()).
 * The request states and invariants are in svc.h. The arbiter of PARKED is
 * membership of rq->parked_link in svc.parked, changed only under
 * svc.parked: whoever unlinks the request owns it (invariant 1).
 *
 * References on a request: one "processing" reference from creation that
 * follows the request (worker -> held -> worker -> parked ->
 * worker/completer -> send queue, dropped when the reply has been written
 * or discarded), one per armed timer, and one per svc_req_get().
 *
 * Reply space (invariants 6 and 7 of svc.h): once its arguments are
 * decoded, a call's reply bound is known; req_reserve() takes that much of
 * the connection's limit before the handler runs, or holds the call on the
 * connection until replies give space back (conn_account()). The fast path
 * is one atomic load and one atomic add on the connection and one on the
 * server's total (max_buffered), no lock: a worker of a busy connection
 * must not queue behind another worker's sendmsg, which holds svc.conn.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32c.h"
#include "base/iobuf.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "rpc/svc_internal.h"

static void req_process(struct svc_work *w);
static void req_run_handler(struct svc_work *w);

int svc_dec_void(struct xdr_dec *x, void *args)
{
	return 0;
}

int svc_enc_void(struct xdr_enc *x, const void *res)
{
	return 0;
}

struct svc_req *req_new(struct svc_conn *c, uint8_t *record, size_t len, void *alloc)
{
	struct svc_req *rq = xmalloc(sizeof(*rq));
	memset(rq, 0, offsetof(struct svc_req, inline_area));
	rq->work.fn = req_process;
	rq->refs = 1;
	rq->svc = c->svc;
	rq->conn = c;
	svc_conn_get(c);
	rq->record = record;
	rq->record_len = len;
	rq->record_alloc = alloc;
	rq->accounted = len + sizeof(*rq);
	rq->start_ns = now_ns();
	list_init(&rq->parked_link);
	timer_init(&rq->timer, NULL);
	atomic_fetch_add(&c->svc->live_reqs, 1);
	return rq;
}

/*
 * A NULL call costs less than the two thread hand-offs of the worker pool
 * (loop -> worker -> socket), which on one connection are most of its
 * latency; so calls of procedures marked SVC_PROC_INLINE (handlers that
 * neither block nor defer) are run by the event loop itself. Peeks at the
 * raw header: xid, CALL, rpcvers 2, prog, vers, proc. Anything unusual
 * goes to the pool, which answers it properly.
 */
bool req_is_inline(const struct svc_req *rq)
{
	if (rq->record_len < 24)
		return false;
	uint32_t w[6];
	memcpy(w, rq->record, sizeof(w));
	for (int i = 0; i < 6; i++)
		w[i] = ntohl(w[i]);
	if (w[1] != RPC_CALL || w[2] != RPC_VERSION)
		return false;
	const struct svc *s = rq->svc;
	for (unsigned i = 0; i < s->nprogs; i++) {
		const struct svc_program *p = s->progs[i].p;
		if (p->prog != w[3])
			continue;
		for (uint32_t vi = 0; vi < p->nversions; vi++) {
			const struct svc_version *v = &p->versions[vi];
			if (v->vers == w[4])
				return w[5] < v->nprocs && v->procs[w[5]].handler &&
				       (v->procs[w[5]].flags & SVC_PROC_INLINE);
		}
	}
	return false;
}

void svc_req_run_inline(struct svc_req *rq)
{
	req_process(&rq->work);
}

void *svc_req_ctx(const struct svc_req *rq)
{
	return rq->pe->ctx;
}

void *svc_req_scratch(struct svc_req *rq)
{
	return rq->scratch;
}

uint32_t svc_req_xid(const struct svc_req *rq)
{
	return rq->hdr.xid;
}

enum svc_wake svc_req_wake(const struct svc_req *rq)
{
	return rq->wake;
}

struct svc_conn *svc_req_conn(const struct svc_req *rq)
{
	return rq->conn;
}

void svc_req_get(struct svc_req *rq)
{
	atomic_fetch_add(&rq->refs, 1);
}

void svc_req_put(struct svc_req *rq)
{
	if (atomic_fetch_sub(&rq->refs, 1) != 1)
		return;
	struct svc *s = rq->svc;
	BUG_ON(!list_empty(&rq->parked_link));
	if (rq->drc)
		drc_abort(s->drc, rq->drc);
	if (rq->args_decoded && rq->proc->release)
		rq->proc->release(rq->args, rq->res);
	if (rq->args && rq->args != (void *)rq->inline_area)
		free(rq->args);
	if (rq->out.iov && rq->out.iov != rq->iov_inline)
		free(rq->out.iov);
	xdr_enc_destroy(&rq->reply);
	iobuf_free(rq->record_alloc);
	conn_account(rq->conn, -(long)rq->accounted, rq->reserved ? rq->reserve : 0);
	svc_conn_put(rq->conn);
	free(rq);
	atomic_fetch_sub(&s->live_reqs, 1);
}

static void req_out_done(struct svc_out *o)
{
	svc_req_put(container_of(o, struct svc_req, out));
}

/* Start the reply: the record mark is filled in by req_send(). */
static void reply_init(struct svc_req *rq)
{
	size_t off;
	xdr_enc_init_buf(&rq->reply, rq->reply_inline, sizeof(rq->reply_inline),
			 rq->svc->cfg.max_reply + 4);
	BUG_ON(xdr_enc_reserve(&rq->reply, 4, &off) || off != 0);
}

/* Hand the encoded reply to the connection; consumes the processing ref. */
static void req_send(struct svc_req *rq, enum svc_reply_kind kind)
{
	struct svc *s = rq->svc;
	size_t total = xdr_enc_len(&rq->reply);
	if (kind < REPLY_NKINDS)
		counter_inc(&s->st.replies[kind]);
	if (rq->proc_lat)
		stat_lat_record(rq->proc_lat, now_ns() - rq->start_ns);
	if (rq->drc) {
		uint8_t *flat = xmalloc(total);
		xdr_enc_flatten(&rq->reply, flat);
		drc_finish(s->drc, rq->drc, flat + 4, total - 4);
		rq->drc = NULL;
		free(flat);
	}
	xdr_enc_put_u32_at(&rq->reply, 0, REC_LAST_FRAG | (uint32_t)(total - 4));
	int n = xdr_enc_iov(&rq->reply, rq->iov_inline, (int)ARRAY_SIZE(rq->iov_inline));
	if (n < 0) {
		int max = 2 * XDR_MAX_EXT + 1;
		rq->out.iov = xcalloc((size_t)max, sizeof(struct iovec));
		n = xdr_enc_iov(&rq->reply, rq->out.iov, max);
		BUG_ON(n < 0);
	} else {
		rq->out.iov = rq->iov_inline;
	}
	rq->out.niov = n;
	rq->out.idx = 0;
	rq->out.bytes = total;
	rq->out.done = req_out_done;
	conn_send(rq->conn, &rq->out);
}

static void reply_accept_stat(struct svc_req *rq, enum rpc_accept_stat st)
{
	static const enum svc_reply_kind kinds[] = {
		[RPC_SUCCESS] = REPLY_SUCCESS,           [RPC_PROG_UNAVAIL] = REPLY_PROG_UNAVAIL,
		[RPC_PROG_MISMATCH] = REPLY_PROG_MISMATCH, [RPC_PROC_UNAVAIL] = REPLY_PROC_UNAVAIL,
		[RPC_GARBAGE_ARGS] = REPLY_GARBAGE_ARGS, [RPC_SYSTEM_ERR] = REPLY_SYSTEM_ERR,
	};
	/* an error reply is a few words: it always fits */
	BUG_ON(rpc_enc_accepted(&rq->reply, rq->hdr.xid, st));
	req_send(rq, kinds[st]);
}

/* Hand the encoded results, from byte at on, to the procedure's encoded()
 * hook (invariant 8). */
static void req_encoded(struct svc_req *rq, size_t at)
{
	struct iovec iov[2 * XDR_MAX_EXT + 1];
	int n = xdr_enc_iov(&rq->reply, iov, (int)ARRAY_SIZE(iov)), i = 0;
	BUG_ON(n < 0);
	while (i < n && at >= iov[i].iov_len)
		at -= iov[i++].iov_len;
	if (i < n) {
		iov[i].iov_base = (uint8_t *)iov[i].iov_base + at;
		iov[i].iov_len -= at;
	}
	rq->proc->encoded(rq, rq->args, rq->res, iov + i, n - i);
}

/* Encode the outcome of the handler and send it. */
static void req_finish(struct svc_req *rq, enum svc_stat st)
{
	struct xdr_mark start = xdr_enc_mark(&rq->reply);
	size_t at;
	switch (st) {
	case SVC_OK:
		if (rpc_enc_accepted(&rq->reply, rq->hdr.xid, RPC_SUCCESS))
			goto out_too_big;
		at = xdr_enc_len(&rq->reply);
		if (rq->proc->encode(&rq->reply, rq->res))
			goto out_too_big;
		if (rq->proc->encoded)
			req_encoded(rq, at);
		req_send(rq, REPLY_SUCCESS);
		return;
	out_too_big:
		/* the results exceed the call's reply bound: roll back */
		xdr_enc_rollback(&rq->reply, start);
		if (svc_warn_ok(rq->svc))
			msg_warn("rpc: reply to %s.%s does not fit in its bound of %zu bytes",
				 rq->pe->p->name, rq->proc->name, rq->reserve);
		reply_accept_stat(rq, RPC_SYSTEM_ERR);
		return;
	case SVC_GARBAGE:
		reply_accept_stat(rq, RPC_GARBAGE_ARGS);
		return;
	case SVC_DROP:
		counter_inc(&rq->svc->st.replies[REPLY_DROPPED]);
		svc_req_put(rq);
		return;
	case SVC_DEFERRED:
	case SVC_SYSERR:
		break;
	}
	BUG_ON(st == SVC_DEFERRED);
	reply_accept_stat(rq, RPC_SYSTEM_ERR);
}

static void req_run_handler(struct svc_work *w)
{
	struct svc_req *rq = container_of(w, struct svc_req, work);
	svc_handler_fn fn = rq->proc->handler;
	if (rq->wake != SVC_WAKE_NONE && rq->resume)
		fn = rq->resume; /* a parked request's rerun */
	enum svc_stat st = fn(rq, &rq->cred, rq->args, rq->res);
	if (st == SVC_DEFERRED)
		return; /* invariant 3: rq may already be gone */
	req_finish(rq, st);
}

/* A record the transport cannot make sense of: drop the connection. */
static void req_garbage(struct svc_req *rq, const char *why)
{
	counter_inc(&rq->svc->st.conns_garbage);
	conn_kill(rq->conn, why);
	svc_req_put(rq);
}


/* The duplicate request cache; false when the call is answered or
 * dropped already. */
static bool req_drc(struct svc_req *rq)
{
	struct drc_key k;
	uint8_t *cached;
	size_t len;
	memset(&k, 0, sizeof(k));
	k.xid = rq->hdr.xid;
	k.prog = rq->hdr.prog;
	k.vers = rq->hdr.vers;
	k.proc = rq->hdr.proc;
	k.csum = crc32c(0, rq->argx.p, xdr_dec_remaining(&rq->argx));
	drc_key_addr(&k, &rq->conn->peer);
	switch (drc_begin(rq->svc->drc, &k, &rq->drc, &cached, &len)) {
	case DRC_MISS:
	case DRC_UNCACHED:
		return true;
	case DRC_IN_PROGRESS:
		counter_inc(&rq->svc->st.drc_in_progress);
		svc_req_put(rq);
		return false;
	case DRC_HIT:
		break;
	}
	counter_inc(&rq->svc->st.drc_hits);
	BUG_ON(xdr_enc_fixed(&rq->reply, cached, len));
	free(cached);
	req_send(rq, REPLY_NKINDS);
	return false;
}

/* The reply space of a decoded call, its record mark included; the reply
 * stream's maximum becomes the same (invariant 6). Never below an error
 * reply, which must always fit. */
static void req_bound(struct svc_req *rq)
{
	const struct svc_proc *p = rq->proc;
	size_t max = rq->svc->cfg.max_reply;
	size_t bound = p->reply_max ? MIN(p->reply_max, max) : max;
	if (p->reply_bound)
		bound = MIN(bound, (size_t)p->reply_bound(rq->args));
	rq->reserve = 4 + MAX(bound, (size_t)SVC_REPLY_HDR);
	xdr_enc_set_max(&rq->reply, rq->reserve);
}

/*
 * Take the call's reply space, or hold it on the connection (invariant 7):
 * true when the caller runs it now. A held call runs later on a worker
 * (conn_admit_locked() queues it), or is freed unrun with its connection.
 * Calls wait in arrival order: none passes a held one on the fast path.
 */
static bool req_reserve(struct svc_req *rq)
{
	struct svc_conn *c = rq->conn;
	struct svc *s = rq->svc;
	size_t limit = s->cfg.conn_max_buffered, total_max = s->cfg.max_buffered;
	bool undo = false;
	if (!atomic_load_explicit(&c->nheld, memory_order_relaxed)) {
		size_t before = atomic_fetch_add(&c->reserved, rq->reserve);
		size_t total = atomic_fetch_add(&s->buffered, rq->reserve) + rq->reserve;
		/* one call of a connection that holds nothing always runs */
		if (!before ||
		    (before + rq->reserve <= limit && (!total_max || total <= total_max))) {
			rq->reserved = true;
			return true;
		}
		undo = true; /* given back under the lock, then admission runs */
	}
	struct list admitted;
	list_init(&admitted);
	mutex_lock(&c->lock);
	if (undo) {
		atomic_fetch_sub(&c->reserved, rq->reserve);
		atomic_fetch_sub(&s->buffered, rq->reserve);
	}
	if (c->dead) {
		/* the client is gone and the call has not run: drop it */
		mutex_unlock(&c->lock);
		counter_inc(&s->st.replies[REPLY_DROPPED]);
		svc_req_put(rq);
		return false;
	}
	counter_inc(&s->st.calls_held);
	rq->work.fn = req_run_handler;
	list_add_tail(&rq->work.link, &c->held);
	atomic_store_explicit(&c->nheld, atomic_load(&c->nheld) + 1, memory_order_relaxed);
	conn_admit_locked(c, &admitted);
	conn_pace_locked(c);
	mutex_unlock(&c->lock);
	pool_queue_list(&s->pool, &c->workq, &admitted);
	return false;
}

static void req_process(struct svc_work *w)
{
	struct svc_req *rq = container_of(w, struct svc_req, work);
	struct svc *s = rq->svc;
	struct xdr_dec x;
	uint32_t xid, type;

	xdr_dec_init(&x, rq->record, rq->record_len);
	if (rpc_dec_xid_type(&x, &xid, &type)) {
		req_garbage(rq, "record too short for an RPC message");
		return;
	}
	if (type == RPC_REPLY) {
		call_reply(rq->conn, xid, rq->record, rq->record_len);
		svc_req_put(rq);
		return;
	}
	if (type != RPC_CALL) {
		req_garbage(rq, "message is neither a CALL nor a REPLY");
		return;
	}
	if (rpc_dec_call_body(&x, xid, &rq->hdr)) {
		req_garbage(rq, "truncated call header");
		return;
	}
	counter_inc(&s->st.calls);
	reply_init(rq);
	if (rq->hdr.rpcvers != RPC_VERSION) {
		BUG_ON(rpc_enc_rpc_mismatch(&rq->reply, xid));
		req_send(rq, REPLY_RPC_MISMATCH);
		return;
	}
	enum rpc_auth_stat as = rpc_auth_check(&rq->hdr, &rq->cred);
	if (as != RPC_AUTH_OK) {
		BUG_ON(rpc_enc_auth_error(&rq->reply, xid, as));
		req_send(rq, REPLY_AUTH_ERROR);
		return;
	}
	/* a program may be registered several times, each with its own
	 * versions and context (NFSv3 and NFSv4 under 100003) */
	const struct svc_version *v = NULL;
	uint32_t vi = 0, low = UINT32_MAX, high = 0;
	bool known = false;
	for (unsigned i = 0; i < s->nprogs && !v; i++) {
		struct svc_prog_ent *pe = &s->progs[i];
		if (pe->p->prog != rq->hdr.prog)
			continue;
		known = true;
		low = MIN(low, pe->low);
		high = MAX(high, pe->high);
		for (vi = 0; vi < pe->p->nversions; vi++) {
			if (pe->p->versions[vi].vers == rq->hdr.vers) {
				v = &pe->p->versions[vi];
				rq->pe = pe;
				break;
			}
		}
	}
	if (!known) {
		reply_accept_stat(rq, RPC_PROG_UNAVAIL);
		return;
	}
	if (!v) {
		BUG_ON(rpc_enc_prog_mismatch(&rq->reply, xid, low, high));
		req_send(rq, REPLY_PROG_MISMATCH);
		return;
	}
	if (rq->hdr.proc >= v->nprocs || !v->procs[rq->hdr.proc].handler) {
		reply_accept_stat(rq, RPC_PROC_UNAVAIL);
		return;
	}
	rq->proc = &v->procs[rq->hdr.proc];
	rq->resume = v->resume;
	counter_inc(&rq->pe->proc_calls[vi][rq->hdr.proc]);
	rq->proc_lat = &rq->pe->proc_lat[vi][rq->hdr.proc];
	rq->argx = x;
	if ((rq->proc->flags & SVC_PROC_DRC) && !req_drc(rq))
		return;

	size_t asz = ALIGN_UP((size_t)rq->proc->args_size, 16), rsz = rq->proc->res_size;
	if (asz + rsz <= RQ_INLINE)
		rq->args = rq->inline_area;
	else
		rq->args = xmalloc(asz + rsz);
	memset(rq->args, 0, asz + rsz);
	rq->res = (uint8_t *)rq->args + asz;
	/* release runs even after a failed decode: decoders leave args freeable */
	rq->args_decoded = true;
	if (rq->proc->decode(&rq->argx, rq->args)) {
		reply_accept_stat(rq, RPC_GARBAGE_ARGS);
		return;
	}
	uint32_t off = (uint32_t)xdr_dec_bulk_off(&rq->argx, rq->record);
	if (off) {
		/* the next record of this connection puts this offset aligned
		 * (svc_internal.h, svc_conn.bulk_off) */
		if (atomic_load_explicit(&rq->conn->bulk_off, memory_order_relaxed) != off)
			atomic_store_explicit(&rq->conn->bulk_off, off, memory_order_relaxed);
	}
	rq->wake = SVC_WAKE_NONE;
	req_bound(rq);
	if (!req_reserve(rq))
		return; /* held: it runs later on a worker, or never */
	req_run_handler(&rq->work);
}

/* ---- deferral ---- */

static void req_timer_fire(struct svc_timer *t);

static bool req_claim(struct svc_req *rq)
{
	struct svc *s = rq->svc;
	bool mine;
	mutex_lock(&s->parked_lock);
	mine = !list_empty(&rq->parked_link);
	if (mine)
		list_del(&rq->parked_link);
	mutex_unlock(&s->parked_lock);
	return mine;
}

void svc_defer(struct svc_req *rq, uint64_t timeout_ns)
{
	struct svc *s = rq->svc;
	counter_inc(&s->st.deferred);
	rq->work.fn = req_run_handler;
	mutex_lock(&s->parked_lock);
	BUG_ON(!list_empty(&rq->parked_link));
	list_add_tail(&rq->parked_link, &s->parked);
	rq->timer_armed = timeout_ns > 0;
	if (timeout_ns) {
		svc_req_get(rq); /* the timer's reference */
		timer_init(&rq->timer, req_timer_fire);
		timer_arm(s, &rq->timer, now_ns() + timeout_ns);
	}
	mutex_unlock(&s->parked_lock);
}

/* After a claim by someone other than the timer: disarm it. */
static void req_disarm(struct svc_req *rq)
{
	if (!rq->timer_armed)
		return;
	rq->timer_armed = false;
	if (timer_cancel(rq->svc, &rq->timer))
		svc_req_put(rq);
}

/* Loop thread: claim and dispatch, nothing more. */
static void req_timer_fire(struct svc_timer *t)
{
	struct svc_req *rq = container_of(t, struct svc_req, timer);
	if (req_claim(rq)) {
		rq->timer_armed = false;
		rq->wake = SVC_WAKE_TIMEOUT;
		counter_inc(&rq->svc->st.deferred_timeouts);
		/* queued with the rest of this turn's expiries, one lock round */
		rq->work.q = &rq->conn->workq;
		list_add_tail(&rq->work.link, &rq->svc->timer_batch);
	}
	svc_req_put(rq); /* the timer's reference */
}

bool svc_complete(struct svc_req *rq, enum svc_stat st)
{
	BUG_ON(st == SVC_DEFERRED);
	if (!req_claim(rq))
		return false;
	req_disarm(rq);
	req_finish(rq, st);
	return true;
}

bool svc_wake(struct svc_req *rq)
{
	if (!req_claim(rq))
		return false;
	req_disarm(rq);
	rq->wake = SVC_WAKE_EVENT;
	counter_inc(&rq->svc->st.deferred_wakes);
	pool_queue(&rq->svc->pool, &rq->conn->workq, &rq->work);
	return true;
}
