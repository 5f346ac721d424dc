/*
 * testprog.c - see testprog.h.
 */
#include "testprog.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/time.h"

/* ---- ECHO ---- */
struct echo_args {
	struct iovec data;
};

static int dec_echo(struct xdr_dec *x, void *a)
{
	struct echo_args *args = a;
	return xdr_dec_opaque_iov(x, 4u << 20, &args->data);
}

static enum svc_stat do_echo(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	/* the result points at the argument bytes: both live until release */
	memcpy(r, a, sizeof(struct echo_args));
	return SVC_OK;
}

static int enc_echo(struct xdr_enc *x, const void *r)
{
	const struct echo_args *res = r;
	return xdr_enc_opaque_iov(x, &res->data, 1);
}

/* ---- WHOAMI ---- */
static enum svc_stat do_whoami(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	memcpy(r, cred, sizeof(*cred));
	return SVC_OK;
}

static int enc_whoami(struct xdr_enc *x, const void *r)
{
	const struct rpc_cred *c = r;
	int err = xdr_enc_u32(x, c->flavor) || xdr_enc_u32(x, c->uid) || xdr_enc_u32(x, c->gid) ||
		  xdr_enc_u32(x, c->ngids);
	for (uint32_t i = 0; !err && i < c->ngids; i++)
		err = xdr_enc_u32(x, c->gids[i]);
	return err || xdr_enc_string(x, c->machine) ? -EMSGSIZE : 0;
}

/* ---- SYSERR, GARBAGE, BIG ---- */
static enum svc_stat do_syserr(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	return SVC_SYSERR;
}

static enum svc_stat do_garbage(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	return SVC_GARBAGE;
}

static enum svc_stat do_ok(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	return SVC_OK;
}

static int enc_big(struct xdr_enc *x, const void *r)
{
	static char big[3 << 20];
	struct iovec v = {big, sizeof(big)};
	if (xdr_enc_u32(x, 1))
		return -EMSGSIZE;
	return xdr_enc_opaque_iov(x, &v, 1);
}

/* ---- u32 helpers ---- */
struct u32x3 {
	uint32_t a, b, c;
};

static int dec_u32(struct xdr_dec *x, void *a)
{
	return xdr_dec_u32(x, a);
}

static int dec_u32x2(struct xdr_dec *x, void *a)
{
	struct u32x3 *v = a;
	return xdr_dec_u32(x, &v->a) || xdr_dec_u32(x, &v->b) ? -EBADMSG : 0;
}

static int dec_u32x3(struct xdr_dec *x, void *a)
{
	struct u32x3 *v = a;
	return xdr_dec_u32(x, &v->a) || xdr_dec_u32(x, &v->b) || xdr_dec_u32(x, &v->c) ? -EBADMSG
										     : 0;
}

static int enc_u32(struct xdr_enc *x, const void *r)
{
	return xdr_enc_u32(x, *(const uint32_t *)r);
}

static int enc_u32x2(struct xdr_enc *x, const void *r)
{
	const struct u32x3 *v = r;
	return xdr_enc_u32(x, v->a) || xdr_enc_u32(x, v->b) ? -EMSGSIZE : 0;
}

/* ---- PARK: a timer finishes it ---- */
static enum svc_stat do_park(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	struct u32x3 *args = a;
	if (svc_req_wake(rq) == SVC_WAKE_NONE && args->a) {
		svc_defer(rq, (uint64_t)args->a * NSEC_PER_MSEC);
		return SVC_DEFERRED;
	}
	*(uint32_t *)r = args->b;
	return SVC_OK;
}

/* ---- LATER and WAKE: another thread finishes or wakes it ---- */
struct later {
	struct svc_req *rq;
	uint32_t ms;
	bool wake;
};

static void *later_thread(void *arg)
{
	struct later *l = arg;
	sleep_ns((uint64_t)l->ms * NSEC_PER_MSEC);
	if (l->wake) {
		svc_wake(l->rq);
	} else {
		/* res was filled in before the request was handed over */
		svc_complete(l->rq, SVC_OK);
	}
	svc_req_put(l->rq);
	free(l);
	return NULL;
}

static void start_later(struct svc_req *rq, uint32_t ms, bool wake)
{
	struct later *l = xmalloc(sizeof(*l));
	pthread_t t;
	l->rq = rq;
	l->ms = ms;
	l->wake = wake;
	svc_req_get(rq); /* svc.h invariant 2 */
	svc_defer(rq, 0);
	if (pthread_create(&t, NULL, later_thread, l))
		abort();
	pthread_detach(t);
}

static enum svc_stat do_later(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	*(uint32_t *)r = *(uint32_t *)a;
	start_later(rq, *(uint32_t *)a, false);
	return SVC_DEFERRED;
}

static enum svc_stat do_wake(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	if (svc_req_wake(rq) == SVC_WAKE_NONE) {
		start_later(rq, *(uint32_t *)a, true);
		return SVC_DEFERRED;
	}
	*(uint32_t *)r = svc_req_wake(rq);
	return SVC_OK;
}

/* ---- INCR: non-idempotent ---- */
static enum svc_stat do_incr(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	struct testprog_ctx *ctx = svc_req_ctx(rq);
	atomic_fetch_add(&ctx->incr_runs, 1);
	*(uint32_t *)r = atomic_fetch_add(&ctx->counter, *(uint32_t *)a) + *(uint32_t *)a;
	return SVC_OK;
}

/* ---- CB: call the client back over its connection ---- */
struct cb_state {
	struct svc_call call;
	struct svc_req *rq;
	uint32_t arg, reply;
	struct u32x3 *res;
	struct testprog_ctx *ctx;
	_Atomic int refs; /* done() and, in cancel mode, do_cb() */
};

static void cb_put(struct cb_state *st)
{
	if (atomic_fetch_sub(&st->refs, 1) == 1)
		free(st);
}

static int cb_enc(struct xdr_enc *x, const void *a)
{
	return xdr_enc_u32(x, *(const uint32_t *)a);
}

static int cb_dec(struct xdr_dec *x, void *r)
{
	return xdr_dec_u32(x, r);
}

static void cb_done(struct svc_call *call, int status)
{
	struct cb_state *st = container_of(call, struct cb_state, call);
	st->res->a = (uint32_t)status;
	st->res->b = status == 0 ? st->reply : 0;
	atomic_store(&st->ctx->cb_last_status, status);
	atomic_fetch_add(&st->ctx->cb_done, 1);
	svc_complete(st->rq, SVC_OK);
	svc_req_put(st->rq);
	cb_put(st);
}

static enum svc_stat do_cb(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	struct u32x3 *args = a;
	uint32_t mode = args->c; /* args are off limits once the call is out */
	struct cb_state *st = xcalloc(1, sizeof(*st));
	st->rq = rq;
	st->arg = args->a;
	st->res = r;
	st->ctx = svc_req_ctx(rq);
	st->call.prog = TEST_CBPROG;
	st->call.vers = 1;
	st->call.proc = TEST_CB_PROC;
	st->call.encode = cb_enc;
	st->call.args = &st->arg;
	st->call.decode = cb_dec;
	st->call.res = &st->reply;
	st->call.timeout_ns = (uint64_t)args->b * NSEC_PER_MSEC;
	st->call.done = cb_done;
	st->refs = mode == CB_MODE_CANCEL ? 2 : 1;
	svc_req_get(rq);
	svc_defer(rq, 0);
	/* after svc_defer the request belongs to the callback (invariant 3) */
	int err = svc_call_start(svc_req_conn(rq), &st->call);
	if (err) {
		st->res->a = (uint32_t)err;
		svc_complete(rq, SVC_OK);
		svc_req_put(rq);
		free(st);
		return SVC_DEFERRED;
	}
	if (mode == CB_MODE_CANCEL) {
		/* our own reference keeps st alive across the cancel */
		svc_call_cancel(&st->call);
		cb_put(st);
	}
	return SVC_DEFERRED;
}

/* ---- PARK_FOREVER ---- */
static enum svc_stat do_park_forever(struct svc_req *rq, const struct rpc_cred *cred, void *a,
				     void *r)
{
	struct testprog_ctx *ctx = svc_req_ctx(rq);
	if (svc_req_wake(rq) == SVC_WAKE_NONE) {
		svc_defer(rq, 0);
		return SVC_DEFERRED;
	}
	if (svc_req_wake(rq) == SVC_WAKE_SHUTDOWN)
		atomic_fetch_add(&ctx->shutdown_wakes, 1);
	*(uint32_t *)r = svc_req_wake(rq);
	return SVC_OK;
}

/* ---- SIZED: reply_bound() and encoded() ---- */
static uint8_t pattern[TP_SIZED_MAX + 8192];

static uint32_t sized_bound(const void *a)
{
	return SVC_REPLY_HDR + ((const struct u32x3 *)a)->a;
}

static pthread_once_t pattern_once = PTHREAD_ONCE_INIT;

static void pattern_init(void)
{
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 13 + 5);
}

static enum svc_stat do_sized(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	pthread_once(&pattern_once, pattern_init);
	memcpy(r, a, sizeof(struct u32x3));
	return SVC_OK;
}

/* tag, then opaque<n> spliced from two external pieces */
static int enc_sized(struct xdr_enc *x, const void *r)
{
	const struct u32x3 *v = r;
	uint32_t n = v->b < sizeof(pattern) ? v->b : (uint32_t)sizeof(pattern);
	struct iovec iov[2] = {{pattern, n / 2}, {pattern + n / 2, n - n / 2}};
	return xdr_enc_u32(x, 7) || xdr_enc_opaque_iov(x, iov, 2) ? -EMSGSIZE : 0;
}

static void sized_encoded(struct svc_req *rq, void *a, void *r, const struct iovec *iov, int niov)
{
	struct testprog_ctx *ctx = svc_req_ctx(rq);
	size_t len = 0;
	for (int i = 0; i < niov; i++) {
		if (len + iov[i].iov_len > sizeof(ctx->encoded))
			abort();
		memcpy(ctx->encoded + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	ctx->encoded_len = len;
	atomic_fetch_add(&ctx->encoded_calls, 1);
}

/* ---- FILL: reply memory held by the handler until release ---- */
struct fill_res {
	struct testprog_ctx *ctx;
	uint8_t *buf;
	uint32_t n;
};

static uint32_t fill_bound(const void *a)
{
	return SVC_REPLY_HDR + 4 + *(const uint32_t *)a;
}

static enum svc_stat do_fill(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	struct fill_res *res = r;
	res->ctx = svc_req_ctx(rq);
	res->n = *(uint32_t *)a & ~3u;
	res->buf = xmalloc(res->n ? res->n : 1);
	memset(res->buf, 0x5a, res->n);
	uint32_t live = atomic_fetch_add(&res->ctx->fill_live, 1) + 1;
	uint32_t max = atomic_load(&res->ctx->fill_live_max);
	while (live > max && !atomic_compare_exchange_weak(&res->ctx->fill_live_max, &max, live))
		;
	return SVC_OK;
}

static int enc_fill(struct xdr_enc *x, const void *r)
{
	const struct fill_res *res = r;
	struct iovec v = {res->buf, res->n};
	return xdr_enc_opaque_iov(x, &v, 1);
}

static void release_fill(void *a, void *r)
{
	struct fill_res *res = r;
	if (!res->buf)
		return;
	free(res->buf);
	atomic_fetch_sub(&res->ctx->fill_live, 1);
}

/* ---- CONNDATA: per-connection data, closed() and free() ---- */
struct tp_conn {
	struct testprog_ctx *ctx;
	_Atomic uint32_t calls;
	_Atomic bool closed;
};

static void tp_conn_closed(struct svc_conn *c, void *data)
{
	struct tp_conn *tc = data;
	if (svc_conn_alive(c) || atomic_exchange(&tc->closed, true))
		atomic_fetch_add(&tc->ctx->conn_hook_errors, 1);
	atomic_fetch_add(&tc->ctx->conn_closed, 1);
}

static void tp_conn_free(void *data)
{
	struct tp_conn *tc = data;
	if (!atomic_load(&tc->closed))
		atomic_fetch_add(&tc->ctx->conn_hook_errors, 1);
	atomic_fetch_add(&tc->ctx->conn_freed, 1);
	free(tc);
}

static const struct svc_conn_ops tp_conn_ops = {.closed = tp_conn_closed, .free = tp_conn_free};
static const struct svc_conn_ops tp_other_ops = {.free = free};

static enum svc_stat do_conndata(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	struct svc_conn *c = svc_req_conn(rq);
	if (*(uint32_t *)a == 1) {
		void *other = xmalloc(16);
		int err = svc_conn_set_data(c, &tp_other_ops, other);
		if (err)
			free(other);
		*(uint32_t *)r = (uint32_t)-err;
		return SVC_OK;
	}
	struct tp_conn *tc = svc_conn_data(c, &tp_conn_ops);
	if (!tc) {
		tc = xcalloc(1, sizeof(*tc));
		tc->ctx = svc_req_ctx(rq);
		int err = svc_conn_set_data(c, &tp_conn_ops, tc);
		if (err) {
			free(tc);
			return SVC_SYSERR;
		}
	}
	*(uint32_t *)r = atomic_fetch_add(&tc->calls, 1) + 1;
	return SVC_OK;
}

#define U32ARGS sizeof(struct u32x3)
#define HDR     SVC_REPLY_HDR

/* TP_BIG leaves reply_max out: the server's max_reply bounds it */
static const struct svc_proc v3_procs[TP_NPROCS] = {
	[TP_NULL] = {"null", svc_dec_void, do_ok, svc_enc_void, .reply_max = HDR},
	[TP_ECHO] = {"echo", dec_echo, do_echo, enc_echo, NULL, sizeof(struct echo_args),
		     sizeof(struct echo_args), .reply_max = HDR + 4 + (4u << 20)},
	[TP_WHOAMI] = {"whoami", svc_dec_void, do_whoami, enc_whoami, NULL, 0,
		       sizeof(struct rpc_cred), .reply_max = HDR + 1024},
	[TP_SYSERR] = {"syserr", svc_dec_void, do_syserr, svc_enc_void, .reply_max = HDR},
	[TP_BIG] = {"big", svc_dec_void, do_ok, enc_big, .reply_max = 0},
	[TP_GARBAGE] = {"garbage", svc_dec_void, do_garbage, svc_enc_void, .reply_max = HDR},
	[TP_PARK] = {"park", dec_u32x2, do_park, enc_u32, NULL, U32ARGS, 4, .reply_max = HDR + 4},
	[TP_LATER] = {"later", dec_u32, do_later, enc_u32, NULL, 4, 4, .reply_max = HDR + 4},
	[TP_WAKE] = {"wake", dec_u32, do_wake, enc_u32, NULL, 4, 4, .reply_max = HDR + 4},
	[TP_INCR] = {"incr", dec_u32, do_incr, enc_u32, NULL, 4, 4, SVC_PROC_DRC,
		     .reply_max = HDR + 4},
	[TP_CB] = {"cb", dec_u32x3, do_cb, enc_u32x2, NULL, U32ARGS, U32ARGS, .reply_max = HDR + 8},
	[TP_PARK_FOREVER] = {"park_forever", svc_dec_void, do_park_forever, enc_u32, NULL, 0, 4,
			     .reply_max = HDR + 4},
	[TP_SIZED] = {"sized", dec_u32x2, do_sized, enc_sized, NULL, U32ARGS, U32ARGS,
		      .reply_max = HDR + TP_SIZED_MAX, .reply_bound = sized_bound,
		      .encoded = sized_encoded},
	[TP_FILL] = {"fill", dec_u32, do_fill, enc_fill, release_fill, 4, sizeof(struct fill_res),
		     .reply_max = HDR + 4 + (4u << 20), .reply_bound = fill_bound},
	[TP_CONNDATA] = {"conndata", dec_u32, do_conndata, enc_u32, NULL, 4, 4,
			 .reply_max = HDR + 4},
};

/* version 2's NULL is run by the event loop itself (SVC_PROC_INLINE),
 * version 3's by a worker: the tests cover both paths */
static const struct svc_proc v2_procs[1] = {
	[TP_NULL] = {"null", svc_dec_void, do_ok, svc_enc_void, NULL, 0, 0, SVC_PROC_INLINE,
		     .reply_max = HDR},
};

/* Version 4's resume hook: the rerun of a parked PARK or WAKE says why
 * it ran (their results are a u32). */
static enum svc_stat v4_resume(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	*(uint32_t *)r = TP_RESUMED + svc_req_wake(rq);
	return SVC_OK;
}

static const struct svc_version versions[] = {
	{.vers = 2, .nprocs = 1, .procs = v2_procs},
	{.vers = 3, .nprocs = TP_NPROCS, .procs = v3_procs},
	{.vers = 4, .nprocs = TP_NPROCS, .procs = v3_procs, .resume = v4_resume},
};

const struct svc_program testprog = {
	.prog = TESTPROG, .name = "test", .nversions = 3, .versions = versions};
