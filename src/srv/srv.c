/*
 * srv.c - admission, file handles, the write verifier and stability as a
 * service (see srv.h).
 *
 * Stability. A request that must not be answered before sequence S is
 * durable is parked (svc_defer) and the journal is forced asynchronously
 * to S (fs_force_async). Whoever makes S durable - the journal's push
 * thread, or this request's own worker when it wrote the checkpoint itself
 * on an idle journal - completes the request: it encodes and sends the
 * reply (svc_complete). When data must be durable too and that force
 * saw no flush of the data device that started after the call (rule 5),
 * the request waits, still parked, for the next flush (shared with every
 * other caller, dev.h): the thread that runs it completes the request (the
 * push thread never runs one: it would hold up the checkpoints). No thread
 * waits for the log or for a flush another thread runs; the waiter lives
 * in the request's scratch space, not in any protocol's result struct.
 * When the wait ends, a wait with a data mark fails if a flush of the data
 * device failed since the mark (srv.h S1, dev.h F6).
 *
 * Where completions send their replies: on the thread that made the
 * sequence durable. Encoding a reply is a copy of its result struct into
 * the reply buffer and a non-blocking send (svc.h invariant 5), a few
 * microseconds per request, so the push thread pays a few microseconds per
 * waiter before it can start the next checkpoint (docs/design.md §6 has
 * the measurement).
 */
#include "srv/srv.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/rand.h"
#include "base/siphash.h"
#include "base/time.h"

/* ---- set-up ---- */

void srv_init(struct srv *s, struct fs *fs, const struct exports *e)
{
	memset(s, 0, sizeof(*s));
	s->fs = fs;
	atomic_init(&s->exports, e);
	const uint8_t *secret = fs_handle_secret(fs);
	memcpy(s->fh_key, secret, sizeof(s->fh_key));
	memcpy(s->verf_key, secret + 16, sizeof(s->verf_key));
	/* a new verifier at every start (rule 8): clients resend unstable data */
	uint64_t seed = wall_ns() ^ ((uint64_t)getpid() << 32);
	uint64_t v = splitmix64(&seed);
	memcpy(s->boot_verf, &v, sizeof(v));
}

const struct exports *srv_swap_exports(struct srv *s, const struct exports *e)
{
	return atomic_exchange_explicit(&s->exports, e, memory_order_acq_rel);
}

void srv_stats(struct srv *s, const struct stat_sink *sink)
{
#define C(name) stat_emitf(sink, "srv", #name, counter_get(&s->st.name))
	C(stale);
	C(badhandle);
	C(perm_denied);
	C(sync_waits);
	C(sync_flushes);
	C(jukebox);
#undef C
}

void srv_write_verf(struct srv *s, uint8_t out[8])
{
	uint64_t v;
	memcpy(&v, s->boot_verf, sizeof(v));
	/* every failed data flush gives another verifier (rule 8) */
	v ^= fs_data_epoch(s->fs) * 0x9e3779b97f4a7c15ull;
	memcpy(out, &v, sizeof(v));
}

void srv_cookie_verf(const struct srv *s, const struct fs_attr *dir, uint8_t out[8])
{
	uint64_t in[2] = {dir->ino, dir->gen};
	uint64_t h = siphash24(s->verf_key, in, sizeof(in));
	memcpy(out, &h, sizeof(h));
}

/* ---- admission ---- */

int srv_admit(struct srv *s, const struct export *ex, struct svc_req *rq, const struct rpc_cred *rc,
	      struct srv_exp *out)
{
	const struct sockaddr_storage *peer = svc_conn_peer(svc_req_conn(rq));
	const struct export_opts *o = export_client_opts(ex, peer);
	if (!o) {
		counter_inc(&s->st.perm_denied);
		return -EACCES;
	}
	if (o->secure && !export_peer_secure(peer)) {
		counter_inc(&s->st.perm_denied);
		return -EPERM;
	}
	out->ex = ex;
	out->opts = o;
	out->holder = 0;
	out->srv = s;
	export_squash(o, rc->flavor == RPC_AUTH_SYS, rc->uid, rc->gid, rc->gids, rc->ngids,
		      &out->cred);
	return 0;
}

/* ---- file handles ---- */

void srv_fh_make(const struct srv *s, const struct export *ex, const struct fs_attr *a,
		 uint8_t out[FH_SIZE])
{
	struct fh fh = {.fsid = ex->fsid, .ino = a->ino, .gen = a->gen};
	fh_encode(s->fh_key, &fh, out);
}

void srv_fh_make_pseudo(const struct srv *s, uint32_t fsid, uint64_t ino, uint8_t out[FH_SIZE])
{
	struct fh fh = {.fsid = fsid, .ino = ino};
	fh_encode(s->fh_key, &fh, out);
}

int srv_fh_decode(struct srv *s, const void *wire, size_t len, struct fh *fh)
{
	if (fh_decode(s->fh_key, wire, len, fh)) {
		counter_inc(&s->st.badhandle);
		return -SRV_EBADHANDLE;
	}
	return 0;
}

int srv_fh_resolve(struct srv *s, struct svc_req *rq, const struct rpc_cred *rc,
		   const struct fh *fh, struct srv_exp *e, struct fs_inode **ip)
{
	*ip = NULL;
	if (e->ex) {
		if (fh->fsid != e->ex->fsid)
			return -EXDEV;
	} else {
		const struct export *ex = exports_by_fsid(srv_exports(s), fh->fsid);
		if (!ex) {
			counter_inc(&s->st.stale);
			return -ESTALE;
		}
		int err = srv_admit(s, ex, rq, rc, e);
		if (err)
			return err;
	}
	int err = fs_iget(s->fs, fh->ino, fh->gen, ip);
	if (err == -ESTALE)
		counter_inc(&s->st.stale);
	return err;
}

/* ---- stability ---- */

/* What a parked request keeps in its scratch space while it waits: the
 * journal's waiter, then (once that one's function ran and the journal let
 * go of it) the device's. */
struct srv_wait {
	union {
		struct fs_sync_waiter w;
		struct fs_flush_waiter fw;
	};
	struct svc_req *rq;
	struct srv *s;
	srv_failed_fn failed;
	void *failed_arg;
	uint8_t *verf;	 /* COMMIT: the write verifier, read once the data is durable */
	bool need_flush; /* a data sync: flush the device if the force did not */
	bool check_mark; /* S1: fail if a data flush failed since data_mark */
	uint64_t data_mark;
};
_Static_assert(sizeof(struct srv_wait) <= SVC_REQ_SCRATCH, "the waiter fits the request");

static struct srv_wait *wait_of(struct svc_req *rq)
{
	return svc_req_scratch(rq);
}

/* The wait is over and the reply is about to be encoded: a failure goes
 * into it through failed(), and so does a failed flush since the data's
 * mark (S1); otherwise a COMMIT's verifier is read now that its data is
 * durable. */
static void wait_end(struct srv_wait *sw, int err)
{
	if (!err && sw->check_mark && fs_data_lost_since(sw->s->fs, sw->data_mark))
		err = -EIO;
	if (err) {
		if (sw->failed)
			sw->failed(sw->failed_arg, err);
	} else if (sw->verf) {
		srv_write_verf(sw->s, sw->verf);
	}
}

/* The data flush is done: on the thread that ran it (this request's own
 * worker when none was under way, else whichever thread led it). Never
 * blocks. */
static void flush_done(struct fs_flush_waiter *fw, int err)
{
	struct srv_wait *sw = container_of(fw, struct srv_wait, fw);
	struct svc_req *rq = sw->rq;
	wait_end(sw, err);
	svc_complete(rq, SVC_OK);
	svc_req_put(rq);
}

/* Complete the parked request once a flush of the data device that started
 * now has completed (rule 5); consumes the caller's reference. With
 * may_lead, a flush with none under way runs on this thread. */
static void flush_then_complete(struct srv_wait *sw, bool may_lead)
{
	counter_inc(&sw->s->st.sync_flushes);
	sw->fw.fn = flush_done;
	if (fs_flush_data_async(sw->s->fs, &sw->fw, may_lead) == 0) {
		/* nothing written since a flush that covered it all */
		wait_end(sw, 0);
		svc_complete(sw->rq, SVC_OK);
		svc_req_put(sw->rq);
	}
}

/* The force is done: on the journal's push thread, or on this request's own
 * worker when it wrote the checkpoint itself before reply_stable returned
 * (fs_force_async on an idle journal). Never blocks. */
static void sync_done(struct fs_sync_waiter *w, int err, bool log_flushed)
{
	struct srv_wait *sw = container_of(w, struct srv_wait, w);
	struct svc_req *rq = sw->rq;
	if (!err && sw->need_flush && !log_flushed) {
		flush_then_complete(sw, false); /* the journal is done with w */
		return;
	}
	wait_end(sw, err);
	svc_complete(rq, SVC_OK);
	svc_req_put(rq);
}

static enum svc_stat reply_stable(struct srv *s, struct svc_req *rq, uint64_t csn, bool data,
				  const uint64_t *data_mark, uint8_t *verf, srv_failed_fn failed,
				  void *failed_arg)
{
	struct srv_wait *sw = wait_of(rq);
	memset(sw, 0, sizeof(*sw));
	sw->rq = rq;
	sw->s = s;
	sw->failed = failed;
	sw->failed_arg = failed_arg;
	sw->verf = verf;
	if (data && data_mark) {
		sw->check_mark = true;
		sw->data_mark = *data_mark;
	}
	if (!csn && !data)
		return SVC_OK;
	svc_req_get(rq);
	svc_defer(rq, 0);
	if (!csn) {
		/* nothing logged: only the device cache stands between the data
		 * and stable storage; with no flush under way, the flush runs on
		 * this worker, cheaper than a trip through another thread */
		flush_then_complete(sw, true);
		return SVC_DEFERRED;
	}
	sw->need_flush = data;
	sw->w.fn = sync_done;
	counter_inc(&s->st.sync_waits);
	int rc = fs_force_async(s->fs, csn, &sw->w);
	if (rc == 1)
		return SVC_DEFERRED;
	/* durable already (or failed): nobody else will finish it */
	if (rc == 0 && data) {
		flush_then_complete(sw, true);
		return SVC_DEFERRED;
	}
	wait_end(sw, rc);
	svc_complete(rq, SVC_OK);
	svc_req_put(rq);
	return SVC_DEFERRED;
}

enum svc_stat srv_reply_stable(struct srv *s, struct svc_req *rq, uint64_t csn, bool data,
			       uint64_t data_mark, srv_failed_fn failed, void *failed_arg)
{
	return reply_stable(s, rq, csn, data, &data_mark, NULL, failed, failed_arg);
}

enum svc_stat srv_reply_committed(struct srv *s, struct svc_req *rq, uint64_t csn, uint8_t verf[8],
				  srv_failed_fn failed, void *failed_arg)
{
	return reply_stable(s, rq, csn, true, NULL, verf, failed, failed_arg); /* no S1 */
}

enum svc_stat srv_stable_resume(struct srv *s, struct svc_req *rq)
{
	(void)s;
	if (svc_req_wake(rq) == SVC_WAKE_SHUTDOWN)
		return SVC_DROP; /* not stable yet: the client will retransmit */
	return SVC_OK;
}
