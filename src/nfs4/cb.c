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

static void cb_finish(struct nfs4_cb *cb, uint32_t status, bool replied)
{
	if (cb->probe)
		nfs4_cb_probe_end(cb->sess, replied);
	else
		nfs4_cb_sequence_end(cb->sess, cb->seq.slotid, replied);
	counter_inc(replied ? &cb->s->st.cb_replies : &cb->s->st.cb_failures);
	if (cb->done)
		cb->done(cb, status);
	nfs4_session_put(cb->sess);
	svc_conn_put(cb->conn);
	xdr_arena_reset(&cb->arena);
	free(cb);
}

static void cb_done(struct svc_call *call, int err)
{
	struct nfs4_cb *cb = container_of(call, struct nfs4_cb, call);
	if (err) {
		msg_debug("nfs4: back channel call failed: %s", strerror(-err));
		cb_finish(cb, NFS4ERR_DELAY, false);
		return;
	}
	if (cb->probe) {
		cb_finish(cb, NFS4_OK, true);
		return;
	}
	/* the slot moves on only if CB_SEQUENCE was accepted; the compound's
	 * status is the last op's, the answer the caller wants */
	const struct CB_COMPOUND4res *r = &cb->res;
	bool seq_ok = r->resarray.len >= 1 && r->resarray.val[0].resop == OP_CB_SEQUENCE &&
		      r->resarray.val[0].opcbsequence.csr_status == NFS4_OK;
	cb_finish(cb, (uint32_t)r->status, seq_ok);
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
			nfs4_cb_sequence_end(sess, cb->seq.slotid, false);
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
		cb_finish(cb, NFS4ERR_DELAY, false);
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
