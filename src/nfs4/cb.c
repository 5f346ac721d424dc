/*
 * cb.c - calls to clients over their back channel (RFC 8881 §2.10.3.1,
 * §20): CB_NULL probes and CB_COMPOUNDs headed by CB_SEQUENCE, sent on a
 * connection the client bound to the session for the back channel.
 *
 * Design note.
 *
 * A call goes out on the client's own connection (svc_call_start) and
 * completes through a callback on a worker: no server thread ever waits
 * for a client (docs/design.md rule 9). The session's one back channel
 * slot (session.h) is held from the moment the call is built until its
 * reply or failure is known; a second call meanwhile gets DELAY and its
 * caller retries later.
 *
 * Connections. The state core knows connections by id only; the server
 * keeps every connection it watches (nfs4_conn_watch) in a small registry
 * with a reference, dropped when the RPC layer reports it closed, so a
 * call finds the connection by id and holds it for as long as it uses it,
 * never racing its close.
 *
 * Probes. When a session gets a back channel connection (CREATE_SESSION
 * with CONN_BACK_CHAN, BIND_CONN_TO_SESSION for the back channel), a
 * CB_NULL is sent on it. A probe that gets no reply within
 * CB_PROBE_TIMEOUT marks the back channel faulty: SEQUENCE then tells
 * the client (SEQ4_STATUS_BACKCHANNEL_FAULT, CB_PATH_DOWN_SESSION), which
 * binds another connection.
 *
 * CB_SEQUENCE's answer (RFC 8881 §20.9.3, §2.10.6). A CB_SEQUENCE that
 * failed leaves the client's slot as it was, and most failures say
 * nothing against the back channel itself, so only those that do mark it
 * faulty, as the Linux server does:
 *
 *   OK                     the slot advances; done() gets the compound's
 *                          status (RETRY_UNCACHED_REP there: see below)
 *   DELAY                  the client is busy with the slot (a callback
 *                          still running, a reply it has not seen): done()
 *                          gets DELAY and its caller sends again later,
 *                          with the same sequence id; no fault
 *   SEQ_MISORDERED         the client's slot is not where ours is; a
 *                          client that reset its slot table expects 1:
 *                          sent again at once with 1 (unless it was 1)
 *   RETRY_UNCACHED_REP,    the client already holds the id just sent (it
 *   SEQ_FALSE_RETRY        ran a call whose reply we lost): the slot takes
 *                          it and the call goes again at once with the next
 *   BADSLOT                sent again at once, as it was (a client
 *                          changing its slot table a moment ago)
 *   anything else, or no   (BADSESSION, CONN_NOT_BOUND_TO_SESSION, the
 *   reply at all           sizes...) the back channel is faulty: done()
 *                          gets DELAY, the slot keeps its id
 *
 * Invariants:
 *  1. done() runs exactly once for a call nfs4_cb_compound() started, and
 *     never for one it did not: a call sent again at once is the same
 *     call, holding the same slot, session and connection references,
 *     released once, when it is finished.
 *  2. done() sees DELAY for every call whose operation the client did not
 *     run (no reply, CB_SEQUENCE refused): the caller may send it again.
 *  3. A call is sent again at once at most CB_RETRIES times; one that
 *     still finds the slots out of step marks the back channel faulty,
 *     so that the client is told and can make a new session.
 *
 * Lock order: the registry's mutex (nfs4.conns, 530) is a leaf.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lock.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "nfs4/nfs4_priv.h"

#define CB_PROBE_TIMEOUT (5 * NSEC_PER_SEC)
#define CB_CALL_TIMEOUT	 (10 * NSEC_PER_SEC)
#define CONN_BUCKETS	 256
/* Times one call is sent again at once (invariant 3): one resync, and one
 * more for a client that answers the resynced call with another of the
 * answers above (e.g. SEQ_MISORDERED, then RETRY_UNCACHED_REP for 1). */
#define CB_RETRIES 2

static struct lock_class conns_class = LOCK_CLASS(NFS4_CONNS);

struct conn_ent {
	struct conn_ent *next;
	uint64_t id;
	struct svc_conn *conn; /* referenced */
};

struct nfs4_conn_table {
	struct mutex lock;
	struct conn_ent *b[CONN_BUCKETS];
};

void nfs4_conns_init(struct nfs4_server *s)
{
	s->conns = xcalloc(1, sizeof(*s->conns));
	mutex_init(&s->conns->lock, &conns_class);
}

void nfs4_conns_destroy(struct nfs4_server *s)
{
	/* svc_stop closed every connection first: closed() emptied the table */
	for (unsigned i = 0; i < CONN_BUCKETS; i++)
		BUG_ON(s->conns->b[i]);
	mutex_destroy(&s->conns->lock);
	free(s->conns);
	s->conns = NULL;
}

void nfs4_conns_add(struct nfs4_server *s, struct svc_conn *conn)
{
	struct conn_ent *e = xmalloc(sizeof(*e));
	e->id = svc_conn_id(conn);
	e->conn = conn;
	svc_conn_get(conn);
	mutex_lock(&s->conns->lock);
	e->next = s->conns->b[e->id % CONN_BUCKETS];
	s->conns->b[e->id % CONN_BUCKETS] = e;
	mutex_unlock(&s->conns->lock);
}

void nfs4_conns_remove(struct nfs4_server *s, uint64_t id)
{
	struct conn_ent *gone = NULL;
	mutex_lock(&s->conns->lock);
	for (struct conn_ent **pp = &s->conns->b[id % CONN_BUCKETS]; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id) {
			gone = *pp;
			*pp = gone->next;
			break;
		}
	}
	mutex_unlock(&s->conns->lock);
	if (gone) {
		svc_conn_put(gone->conn);
		free(gone);
	}
}

/* The connection with this id, referenced, or NULL once it closed. */
static struct svc_conn *conn_ref(struct nfs4_server *s, uint64_t id)
{
	struct svc_conn *conn = NULL;
	mutex_lock(&s->conns->lock);
	for (struct conn_ent *e = s->conns->b[id % CONN_BUCKETS]; e; e = e->next) {
		if (e->id == id) {
			conn = e->conn;
			svc_conn_get(conn);
			break;
		}
	}
	mutex_unlock(&s->conns->lock);
	return conn;
}

/* ---- calls ---- */

/* The reply's results decode into the call's own arena. */
static int cb_dec_res(struct xdr_dec *x, void *res)
{
	struct nfs4_cb *cb = container_of(res, struct nfs4_cb, res);
	xdr_arena_init(&cb->arena, cb->arena_buf, sizeof(cb->arena_buf), 64u << 10);
	x->arena = &cb->arena;
	return nfs4_rpc_dec_CB_COMPOUND4res(x, res);
}

/* The call is over: the slot given back as how says, done() told status,
 * every reference dropped (invariant 1). */
static void cb_finish(struct nfs4_cb *cb, uint32_t status, enum nfs4_cb_end how)
{
	if (cb->probe)
		nfs4_cb_probe_end(cb->sess, how != NFS4_CB_LOST);
	else
		nfs4_cb_sequence_end(cb->sess, cb->seq.slotid, how);
	if (how == NFS4_CB_ACCEPTED)
		counter_inc(&cb->s->st.cb_replies);
	else if (how == NFS4_CB_REFUSED)
		counter_inc(&cb->s->st.cb_delays);
	else
		counter_inc(&cb->s->st.cb_failures);
	if (cb->done)
		cb->done(cb, status);
	nfs4_session_put(cb->sess);
	svc_conn_put(cb->conn);
	xdr_arena_reset(&cb->arena);
	free(cb);
}

/*
 * Send cb again at once on the slot it holds, now that the client's slot
 * is known to hold sequence id last: true when it went out (cb_done will
 * run again), false when its retries are spent (invariant 3) or it could
 * not go out; the caller then finishes it.
 */
static bool cb_resend(struct nfs4_cb *cb, uint32_t last)
{
	if (cb->retries == CB_RETRIES)
		return false;
	cb->retries++;
	cb->seq.sequenceid = nfs4_cb_sequence_resync(cb->sess, cb->seq.slotid, last);
	cb->ops[0].opcbsequence.csa_sequenceid = cb->seq.sequenceid;
	/* the last reply's results go; the next decodes afresh */
	xdr_arena_reset(&cb->arena);
	memset(&cb->res, 0, sizeof(cb->res));
	counter_inc(&cb->s->st.cb_resyncs);
	counter_inc(&cb->s->st.cb_calls);
	/* once started, the reply may come and cb_done run at once */
	return svc_call_start(cb->conn, &cb->call) == 0;
}

static void cb_done(struct svc_call *call, int err)
{
	struct nfs4_cb *cb = container_of(call, struct nfs4_cb, call);
	if (err) {
		msg_debug("nfs4: back channel call failed: %s", strerror(-err));
		cb_finish(cb, NFS4ERR_DELAY, NFS4_CB_LOST);
		return;
	}
	if (cb->probe) {
		cb_finish(cb, NFS4_OK, NFS4_CB_ACCEPTED);
		return;
	}
	/* the table of the header; the compound's status is the last op's,
	 * the answer the caller wants */
	const struct CB_COMPOUND4res *r = &cb->res;
	uint32_t sent = cb->seq.sequenceid, status = (uint32_t)r->status, seq, last;
	if (r->resarray.len < 1 || r->resarray.val[0].resop != OP_CB_SEQUENCE) {
		/* the client did not get as far as CB_SEQUENCE (say
		 * MINOR_VERS_MISMATCH): "anything else" */
		seq = status;
		goto lost;
	}
	seq = r->resarray.val[0].opcbsequence.csr_status;
	switch (seq) {
	case NFS4_OK:
		if (status != NFS4ERR_RETRY_UNCACHED_REP) {
			cb_finish(cb, status, NFS4_CB_ACCEPTED);
			return;
		}
		/* a retry as far as the client knows: its reply is gone */
		last = sent;
		break;
	case NFS4ERR_DELAY:
		cb_finish(cb, NFS4ERR_DELAY, NFS4_CB_REFUSED);
		return;
	case NFS4ERR_SEQ_MISORDERED:
		last = 0;
		if (sent == 1)
			goto lost; /* 1 is what a resync would send */
		break;
	case NFS4ERR_RETRY_UNCACHED_REP:
	case NFS4ERR_SEQ_FALSE_RETRY:
		last = sent;
		break;
	case NFS4ERR_BADSLOT:
		last = sent - 1; /* the slot stays where it is */
		break;
	default:
		goto lost;
	}
	if (cb_resend(cb, last))
		return;
lost:
	msg_debug("nfs4: back channel of client %016llx faulty: it answered status %u "
		  "(CB_SEQUENCE %u) to sequence id %u, after %u resends",
		  (unsigned long long)nfs4_client_id(nfs4_session_client(cb->sess)), status, seq,
		  sent, cb->retries);
	cb_finish(cb, NFS4ERR_DELAY, NFS4_CB_LOST);
}

static struct nfs4_cb *cb_new(struct nfs4_server *s, struct nfs4_session *sess, bool probe,
			      uint32_t *status)
{
	struct nfs4_cb *cb = xcalloc(1, sizeof(*cb));
	cb->s = s;
	cb->sess = sess;
	cb->probe = probe;
	*status = probe ? nfs4_cb_probe_begin(sess, &cb->seq)
			: nfs4_cb_sequence_begin(sess, &cb->seq);
	if (*status) {
		free(cb);
		return NULL;
	}
	cb->conn = conn_ref(s, cb->seq.conn_id);
	if (!cb->conn) {
		/* closed meanwhile: the state core hears of it from closed() */
		if (probe)
			nfs4_cb_probe_end(sess, false);
		else
			nfs4_cb_sequence_end(sess, cb->seq.slotid, NFS4_CB_LOST);
		free(cb);
		*status = NFS4ERR_CONN_NOT_BOUND_TO_SESSION;
		return NULL;
	}
	nfs4_session_get(sess);
	cb->call.prog = cb->seq.cb_program;
	cb->call.vers = NFS_CB;
	/* the flavor the client asked for (CREATE_SESSION, BACKCHANNEL_CTL);
	 * AUTH_SYS as root of this host, like the Linux server's callbacks */
	if (cb->seq.cb_flavor == RPC_AUTH_SYS) {
		cb->cred.flavor = RPC_AUTH_SYS;
		snprintf(cb->cred.machine, sizeof(cb->cred.machine), "jnfsd");
		cb->call.cred = &cb->cred;
	} else {
		cb->call.cred = NULL; /* AUTH_NONE */
	}
	cb->call.done = cb_done;
	return cb;
}

static uint32_t cb_send(struct nfs4_cb *cb)
{
	/* once started, the reply may come and cb_done free cb at once */
	struct nfs4_server *s = cb->s;
	counter_inc(&s->st.cb_calls);
	int err = svc_call_start(cb->conn, &cb->call);
	if (err) {
		/* the connection died after cb_new found it (its closed()
		 * notice is still to run), or the call did not encode: the
		 * caller hears it from the result, and done() must not run
		 * too (it would release what the caller releases) */
		cb->done = NULL;
		cb_finish(cb, NFS4ERR_DELAY, NFS4_CB_LOST);
		return NFS4ERR_DELAY;
	}
	return NFS4_OK;
}

void nfs4_cb_probe(struct nfs4_server *s, struct nfs4_session *sess)
{
	uint32_t st;
	struct nfs4_cb *cb = cb_new(s, sess, true, &st);
	if (!cb)
		return;
	cb->call.proc = CB_NULL;
	cb->call.encode = svc_enc_void;
	cb->call.args = NULL;
	cb->call.decode = svc_dec_void;
	cb->call.res = NULL;
	cb->call.timeout_ns = CB_PROBE_TIMEOUT;
	cb_send(cb);
}

uint32_t nfs4_cb_compound(struct nfs4_server *s, struct nfs4_session *sess,
			  const struct nfs_cb_argop4 *op, void (*done)(struct nfs4_cb *, uint32_t),
			  void *arg)
{
	uint32_t st;
	struct nfs4_cb *cb = cb_new(s, sess, false, &st);
	if (!cb)
		return st;
	cb->done = done;
	cb->arg = arg;
	struct CB_SEQUENCE4args *sq = &cb->ops[0].opcbsequence;
	cb->ops[0].argop = OP_CB_SEQUENCE;
	memcpy(sq->csa_sessionid, cb->seq.sessionid, NFS4_SESSIONID_SIZE);
	sq->csa_sequenceid = cb->seq.sequenceid;
	sq->csa_slotid = cb->seq.slotid;
	sq->csa_highest_slotid = cb->seq.highest_slotid;
	sq->csa_cachethis = false;
	cb->ops[1] = *op;
	cb->args.minorversion = cb->seq.minorversion;
	cb->args.argarray.len = 2;
	cb->args.argarray.val = cb->ops;
	cb->call.proc = CB_COMPOUND;
	cb->call.encode = nfs4_rpc_enc_CB_COMPOUND4args;
	cb->call.args = &cb->args;
	cb->call.decode = cb_dec_res;
	cb->call.res = &cb->res;
	cb->call.timeout_ns = CB_CALL_TIMEOUT;
	return cb_send(cb);
}
