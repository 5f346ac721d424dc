/*
 * client.c - a client: its connection, client ID and session, the
 * callback and renewal threads, and recovery. See nfs4c.h for the design
 * and invariants; compound.c sends what this file builds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/iobuf.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "nfs4c/nfs4c_priv.h"

#define LEASE_DEFAULT_S 90
#define CB_REPLY_MAX	(1u << 20)

static const struct lock_class recover_class = LOCK_CLASS(NFS4C_RECOVER);
static const struct lock_class client_class = LOCK_CLASS(NFS4C_CLIENT);
static const struct lock_class cbq_class = LOCK_CLASS(NFS4C_CBQ);

void nfs4c_cfg_default(struct nfs4c_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->cred.flavor = RPC_AUTH_SYS;
	cfg->cred.uid = (uint32_t)getuid();
	cfg->cred.gid = (uint32_t)getgid();
	snprintf(cfg->cred.machine, sizeof(cfg->cred.machine), "nfs4c");
	cfg->minorversion = 2;
	cfg->fore_slots = 64;
	cfg->back_slots = 1;
	cfg->cb_program = NFS4_CALLBACK;
	cfg->max_request = cfg->max_response = (1u << 20) + (64u << 10);
	cfg->max_response_cached = 64u << 10;
	cfg->max_ops = 128;
	cfg->timeout_ms = 60000;
	cfg->reconnect_ms = 120000;
	cfg->max_record = 4u << 20;
	cfg->arena_cap = 16u << 20;
}

/* Zero fields of a configuration its caller did not default. */
static void cfg_fill(struct nfs4c_cfg *c)
{
	struct nfs4c_cfg d;
	nfs4c_cfg_default(&d);
	if (!c->minorversion)
		c->minorversion = d.minorversion;
	if (!c->fore_slots)
		c->fore_slots = d.fore_slots;
	if (!c->back_slots)
		c->back_slots = d.back_slots;
	if (!c->cb_program)
		c->cb_program = d.cb_program;
	if (!c->max_request)
		c->max_request = d.max_request;
	if (!c->max_response)
		c->max_response = d.max_response;
	if (!c->max_response_cached)
		c->max_response_cached = d.max_response_cached;
	if (!c->max_ops)
		c->max_ops = d.max_ops;
	if (!c->timeout_ms)
		c->timeout_ms = d.timeout_ms;
	if (!c->reconnect_ms)
		c->reconnect_ms = d.reconnect_ms;
	if (!c->max_record)
		c->max_record = d.max_record;
	if (!c->arena_cap)
		c->arena_cap = d.arena_cap;
}

/* ---- the back channel: queue and thread ------------------------------------ */

/* The connection's receiver hands us a server's call: queue it (conn.h:
 * on_call must not block). */
static void client_on_call(struct nfs4c_conn *conn, uint8_t *rec, size_t len, void *arg)
{
	struct nfs4c_client *cl = arg;
	mutex_lock(&cl->cbq_lock);
	if (cl->cbq_len >= NFS4C_CBQ_MAX || cl->cb_stop) {
		/* a server that sends more than the back channel's slots
		 * allow: the surplus gets no answer */
		cl->cb_dropped++;
		mutex_unlock(&cl->cbq_lock);
		iobuf_free(rec);
		return;
	}
	struct nfs4c_cbq_item *it = xmalloc(sizeof(*it));
	nfs4c_conn_get(conn);
	it->conn = conn;
	it->rec = rec;
	it->len = len;
	list_add_tail(&it->link, &cl->cbq);
	cl->cbq_len++;
	cond_signal(&cl->cbq_cv);
	mutex_unlock(&cl->cbq_lock);
}

static void *cb_main(void *arg)
{
	struct nfs4c_client *cl = arg;
	for (;;) {
		mutex_lock(&cl->cbq_lock);
		while (list_empty(&cl->cbq) && !cl->cb_stop)
			cond_wait(&cl->cbq_cv, &cl->cbq_lock);
		if (list_empty(&cl->cbq)) {
			mutex_unlock(&cl->cbq_lock);
			break;
		}
		struct nfs4c_cbq_item *it = list_first_entry(&cl->cbq, struct nfs4c_cbq_item, link);
		list_del(&it->link);
		cl->cbq_len--;
		mutex_unlock(&cl->cbq_lock);

		struct xdr_enc out;
		xdr_enc_init(&out, CB_REPLY_MAX);
		if (nfs4c_cb_handle(&cl->cb, it->rec, it->len, &out) == 0) {
			struct iovec iov[2 * XDR_MAX_EXT + 1];
			int n = xdr_enc_iov(&out, iov, (int)ARRAY_SIZE(iov));
			if (n > 0)
				nfs4c_conn_send(it->conn, iov, n);
		}
		xdr_enc_destroy(&out);
		iobuf_free(it->rec);
		nfs4c_conn_put(it->conn);
		free(it);
	}
	return NULL;
}

/* The callback operations after CB_SEQUENCE: the user's handler, or the
 * answer of a client that holds no delegations and (by default) no
 * layouts (docs/nfs4-client.md). */
static nfsstat4 cb_dispatch(void *arg, const struct nfs4c_cb_req *rq,
			    const struct nfs_cb_argop4 *op, struct nfs_cb_resop4 *res)
{
	struct nfs4c_client *cl = arg;
	nfs_cb_opnum4 n = op->argop;
	if (n >= 0 && n < NFS4C_CB_NOPS) {
		mutex_lock(&cl->cbq_lock);
		cl->cb_count[n]++;
		nfs4c_cb_fn fn = cl->cb_fn[n];
		void *fn_arg = cl->cb_arg[n];
		cl->cb_in_handler = fn != NULL;
		mutex_unlock(&cl->cbq_lock);
		if (fn) {
			nfsstat4 st = fn(fn_arg, rq, op, res);
			mutex_lock(&cl->cbq_lock);
			cl->cb_in_handler = false;
			cond_broadcast(&cl->cb_idle_cv);
			mutex_unlock(&cl->cbq_lock);
			return st;
		}
	}
	switch (n) {
	case OP_CB_RECALL:
	case OP_CB_NOTIFY:
		return NFS4ERR_BAD_STATEID;
	case OP_CB_GETATTR:
		return NFS4ERR_BADHANDLE;
	case OP_CB_LAYOUTRECALL:
		return NFS4ERR_NOMATCHING_LAYOUT;
	case OP_CB_PUSH_DELEG:
		return NFS4ERR_REJECT_DELEG;
	case OP_CB_RECALL_SLOT:
		mutex_lock(&cl->lock);
		nfs4c_slots_set_limits(&cl->slots, cl->slots.highest,
				       op->opcbrecall_slot.rsa_target_highest_slotid);
		mutex_unlock(&cl->lock);
		return NFS4_OK;
	case OP_CB_RECALL_ANY:
	case OP_CB_RECALLABLE_OBJ_AVAIL:
	case OP_CB_WANTS_CANCELLED:
	case OP_CB_NOTIFY_LOCK:
	case OP_CB_NOTIFY_DEVICEID:
	case OP_CB_OFFLOAD:
		return NFS4_OK;
	default:
		return NFS4ERR_OP_ILLEGAL;
	}
}

/* ---- the renewal thread ------------------------------------------------------ */

static uint64_t lease_period_locked(const struct nfs4c_client *cl)
{
	uint32_t lease = cl->lease_s ? cl->lease_s : LEASE_DEFAULT_S;
	return (uint64_t)lease * NSEC_PER_SEC / 3;
}

static bool path_down_locked(const struct nfs4c_client *cl)
{
	return !cl->cfg.no_back_channel &&
	       (cl->status_flags & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION));
}

/* Renew when nothing renewed for a third of the lease; bind the back
 * channel again when the server says it is down (at most once a period). */
static void *renew_main(void *arg)
{
	struct nfs4c_client *cl = arg;
	uint64_t retry_at = 0;
	mutex_lock(&cl->lock);
	while (!cl->stopping) {
		uint64_t now = now_ns(), period = lease_period_locked(cl);
		uint64_t due = MAX(cl->last_renew_ns + period, retry_at);
		uint64_t rebind = cl->last_rebind_ns + period;
		if (cl->have_session && now >= due) {
			uint64_t before = cl->last_renew_ns;
			mutex_unlock(&cl->lock);
			nfs4c_sequence(cl);
			mutex_lock(&cl->lock);
			cl->ctr.renewals++;
			/* failed (recovery ran out): try again in a second */
			retry_at = cl->last_renew_ns == before ? now_ns() + NSEC_PER_SEC : 0;
			continue;
		}
		if (cl->have_session && path_down_locked(cl) && now >= rebind) {
			cl->last_rebind_ns = now;
			mutex_unlock(&cl->lock);
			nfs4c_bind_conn(cl, NULL, CDFC4_BACK_OR_BOTH, NULL);
			mutex_lock(&cl->lock);
			continue;
		}
		uint64_t next = cl->have_session ? due : now + NSEC_PER_SEC;
		if (cl->have_session && path_down_locked(cl))
			next = MIN(next, rebind);
		cond_timedwait_ns(&cl->renew_cv, &cl->lock, next > now ? next - now : 1);
	}
	mutex_unlock(&cl->lock);
	return NULL;
}

/* ---- creating and destroying ------------------------------------------------- */

static void conn_cfg(struct nfs4c_client *cl, struct nfs4c_conn_cfg *cc)
{
	memset(cc, 0, sizeof(*cc));
	cc->max_record = cl->cfg.max_record;
	cc->send_timeout_ms = cl->cfg.timeout_ms;
	cc->connect_timeout_ms = MIN(cl->cfg.timeout_ms, 10000u);
	cc->on_call = client_on_call;
	cc->on_call_arg = cl;
}

int nfs4c_create(const struct nfs4c_cfg *cfg, struct nfs4c_client **out)
{
	static _Atomic unsigned serial;
	struct nfs4c_conn_cfg cc;
	if (!cfg->addr)
		return -EINVAL;
	struct nfs4c_client *cl = xcalloc(1, sizeof(*cl));
	cl->cfg = *cfg;
	cfg_fill(&cl->cfg);
	cl->addr = xstrdup(cfg->addr);
	cl->cfg.addr = cl->addr;
	if (cfg->owner) {
		cl->owner_len = (uint32_t)MIN(strlen(cfg->owner), (size_t)NFS4_OPAQUE_LIMIT);
		cl->owner = xmalloc(cl->owner_len + 1);
		memcpy(cl->owner, cfg->owner, cl->owner_len);
	} else {
		char name[128], host[64] = "";
		uint32_t r = 0;
		gethostname(host, sizeof(host) - 1);
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (uint32_t)now_ns();
		int n = snprintf(name, sizeof(name), "nfs4c/%s/%d/%u/%08x", host, (int)getpid(),
				 serial++, r);
		cl->owner_len = (uint32_t)MIN((size_t)n, sizeof(name) - 1);
		cl->owner = xmalloc(cl->owner_len + 1);
		memcpy(cl->owner, name, cl->owner_len);
	}
	cl->cfg.owner = NULL; /* cl->owner holds it (not NUL-terminated) */
	static const uint8_t zero[NFS4_VERIFIER_SIZE];
	if (!memcmp(cl->cfg.verifier, zero, sizeof(zero)) &&
	    getrandom(cl->cfg.verifier, sizeof(cl->cfg.verifier), 0) != sizeof(cl->cfg.verifier)) {
		uint64_t t = wall_ns();
		memcpy(cl->cfg.verifier, &t, sizeof(t));
	}
	for (unsigned i = 0; cfg->cb && i < NFS4C_CB_NOPS; i++) {
		cl->cb_fn[i] = cfg->cb->op[i];
		cl->cb_arg[i] = cfg->cb->arg;
	}
	if (cfg->hooks)
		cl->hooks = *cfg->hooks;
	cl->cfg.cb = NULL;
	cl->cfg.hooks = NULL;
	cl->minorversion = cl->cfg.minorversion;
	cl->lease_s = cl->cfg.lease_s;

	mutex_init(&cl->recover_lock, &recover_class);
	mutex_init(&cl->lock, &client_class);
	cond_init(&cl->slot_cv);
	cond_init(&cl->renew_cv);
	mutex_init(&cl->cbq_lock, &cbq_class);
	cond_init(&cl->cbq_cv);
	cond_init(&cl->cb_idle_cv);
	list_init(&cl->cbq);
	nfs4c_cb_init(&cl->cb, cl->cfg.cb_program, cb_dispatch, cl);
	nfs4c_slots_init(&cl->slots, 1);

	conn_cfg(cl, &cc);
	int err = nfs4c_conn_open(cl->addr, &cc, &cl->conn);
	if (err)
		goto out_free;
	err = -pthread_create(&cl->cb_thread, NULL, cb_main, cl);
	if (err) {
		nfs4c_conn_close(cl->conn);
		goto out_free;
	}
	*out = cl;
	return 0;

out_free:
	nfs4c_cb_destroy(&cl->cb);
	cond_destroy(&cl->cb_idle_cv);
	cond_destroy(&cl->cbq_cv);
	mutex_destroy(&cl->cbq_lock);
	cond_destroy(&cl->renew_cv);
	cond_destroy(&cl->slot_cv);
	mutex_destroy(&cl->lock);
	mutex_destroy(&cl->recover_lock);
	free(cl->owner);
	free(cl->addr);
	free(cl);
	return err;
}

void nfs4c_destroy(struct nfs4c_client *cl)
{
	/* stopping: no recovery replaces the connection from now on, and a
	 * call in flight (the renewal thread's, a callback handler's) fails
	 * once the connection is shut down */
	mutex_lock(&cl->lock);
	cl->stopping = true;
	bool renew = cl->renew_started;
	cond_broadcast(&cl->renew_cv);
	cond_broadcast(&cl->slot_cv);
	struct nfs4c_conn *conn = cl->conn;
	nfs4c_conn_get(conn);
	mutex_unlock(&cl->lock);
	nfs4c_conn_shutdown(conn, -ESHUTDOWN);
	nfs4c_conn_put(conn);
	if (renew)
		pthread_join(cl->renew_thread, NULL);
	/* the callback thread answers what is queued (the sends fail) and
	 * ends; calls that arrive after are dropped (client_on_call) */
	mutex_lock(&cl->cbq_lock);
	cl->cb_stop = true;
	cond_signal(&cl->cbq_cv);
	mutex_unlock(&cl->cbq_lock);
	pthread_join(cl->cb_thread, NULL);
	/* no thread of the client runs now: the connection is final */
	nfs4c_conn_close(cl->conn);
	struct nfs4c_cbq_item *it, *tmp;
	list_for_each_entry_safe (it, tmp, &cl->cbq, link) {
		list_del(&it->link);
		nfs4c_conn_put(it->conn);
		iobuf_free(it->rec);
		free(it);
	}

	nfs4c_cb_destroy(&cl->cb);
	cond_destroy(&cl->cb_idle_cv);
	cond_destroy(&cl->cbq_cv);
	mutex_destroy(&cl->cbq_lock);
	cond_destroy(&cl->renew_cv);
	cond_destroy(&cl->slot_cv);
	mutex_destroy(&cl->lock);
	mutex_destroy(&cl->recover_lock);
	free(cl->owner);
	free(cl->addr);
	free(cl);
}

/* ---- the session layer ---------------------------------------------------------- */

int nfs4c_exchange_id(struct nfs4c_client *cl)
{
	struct nfs4c_compound c;
	int ret;
	nfs4c_compound_init(&c, cl);
	for (;;) {
		nfs4c_compound_reset(&c);
		c.no_sequence = true;
		struct nfs_argop4 *op = nfs4c_op_add(&c, OP_EXCHANGE_ID);
		struct EXCHANGE_ID4args *a = &op->opexchange_id;
		memcpy(a->eia_clientowner.co_verifier, cl->cfg.verifier, NFS4_VERIFIER_SIZE);
		a->eia_clientowner.co_ownerid.len = cl->owner_len;
		a->eia_clientowner.co_ownerid.val = cl->owner;
		a->eia_flags = cl->cfg.eia_flags;
		a->eia_state_protect.spa_how = SP4_NONE;
		ret = nfs4c_send(&c);
		if (ret)
			break;
		ret = c.status;
		mutex_lock(&cl->lock);
		bool fallback = ret == NFS4ERR_MINOR_VERS_MISMATCH && cl->minorversion == 2;
		if (fallback)
			cl->minorversion = 1; /* a 4.1-only server */
		mutex_unlock(&cl->lock);
		if (fallback)
			continue;
		const struct nfs_resop4 *r = nfs4c_res(&c, OP_EXCHANGE_ID, 0);
		if (ret == NFS4_OK && r) {
			const struct EXCHANGE_ID4resok *ok = &r->opexchange_id.eir_resok4;
			mutex_lock(&cl->lock);
			cl->have_clientid = true;
			cl->clientid = ok->eir_clientid;
			cl->cs_seq = ok->eir_sequenceid;
			cl->eir_flags = ok->eir_flags;
			mutex_unlock(&cl->lock);
		} else if (ret == NFS4_OK) {
			ret = -EBADMSG; /* OK without a result */
		}
		break;
	}
	nfs4c_compound_destroy(&c);
	return ret;
}

static void chan_attrs(struct channel_attrs4 *a, uint32_t req, uint32_t resp, uint32_t cached,
		       uint32_t ops, uint32_t slots)
{
	memset(a, 0, sizeof(*a));
	a->ca_maxrequestsize = req;
	a->ca_maxresponsesize = resp;
	a->ca_maxresponsesize_cached = cached;
	a->ca_maxoperations = ops;
	a->ca_maxrequests = slots;
}

static bool start_renewal_locked(struct nfs4c_client *cl)
{
	if (cl->cfg.no_renew || cl->renew_started || cl->stopping)
		return false;
	cl->renew_started = true;
	return true;
}

int nfs4c_create_session(struct nfs4c_client *cl)
{
	struct nfs4c_compound c;
	struct callback_sec_parms4 sec;
	int ret;

	mutex_lock(&cl->lock);
	if (!cl->have_clientid) {
		mutex_unlock(&cl->lock);
		return -ENOENT;
	}
	clientid4 clientid = cl->clientid;
	sequenceid4 seq = cl->cs_seq;
	mutex_unlock(&cl->lock);

	nfs4c_compound_init(&c, cl);
	c.no_sequence = true;
	struct CREATE_SESSION4args *a = &nfs4c_op_add(&c, OP_CREATE_SESSION)->opcreate_session;
	a->csa_clientid = clientid;
	a->csa_sequence = seq;
	a->csa_flags = cl->cfg.csa_flags |
		       (cl->cfg.no_back_channel ? 0 : CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
	chan_attrs(&a->csa_fore_chan_attrs, cl->cfg.max_request, cl->cfg.max_response,
		   cl->cfg.max_response_cached, cl->cfg.max_ops, cl->cfg.fore_slots);
	/* the server's calls are small; the back channel answers at most
	 * NFS4C_MAX_CB_SLOTS at once and decodes at most 32 operations */
	chan_attrs(&a->csa_back_chan_attrs, 16384, 16384, 4096, 8,
		   MIN(cl->cfg.back_slots, (uint32_t)NFS4C_MAX_CB_SLOTS));
	a->csa_cb_program = cl->cfg.cb_program;
	/* callbacks carry the client's own credential, as Linux asks */
	memset(&sec, 0, sizeof(sec));
	if (cl->cfg.cred.flavor == RPC_AUTH_SYS) {
		const struct rpc_cred *cr = &cl->cfg.cred;
		sec.cb_secflavor = AUTH_SYS;
		sec.cbsp_sys_cred.stamp = cr->stamp;
		sec.cbsp_sys_cred.machinename.len = (uint32_t)strlen(cr->machine);
		sec.cbsp_sys_cred.machinename.val = cr->machine;
		sec.cbsp_sys_cred.uid = cr->uid;
		sec.cbsp_sys_cred.gid = cr->gid;
		sec.cbsp_sys_cred.gids.len = MIN(cr->ngids, 16u);
		memcpy(sec.cbsp_sys_cred.gids.val, cr->gids, sec.cbsp_sys_cred.gids.len * 4);
	} else {
		sec.cb_secflavor = AUTH_NONE;
	}
	a->csa_sec_parms.len = 1;
	a->csa_sec_parms.val = &sec;

	nfs4c_cb_creating(&cl->cb, true);
	ret = nfs4c_send(&c);
	if (!ret)
		ret = c.status;
	const struct nfs_resop4 *r = ret == NFS4_OK ? nfs4c_res(&c, OP_CREATE_SESSION, 0) : NULL;
	if (ret == NFS4_OK && !r)
		ret = -EBADMSG;
	if (r) {
		const struct CREATE_SESSION4resok *ok = &r->opcreate_session.csr_resok4;
		bool renew;
		mutex_lock(&cl->lock);
		cl->cs_seq = seq + 1;
		memcpy(cl->sid, ok->csr_sessionid, NFS4_SESSIONID_SIZE);
		cl->have_session = true;
		cl->sess_gen++;
		cl->csr_flags = ok->csr_flags;
		cl->fore = ok->csr_fore_chan_attrs;
		cl->back = ok->csr_back_chan_attrs;
		nfs4c_slots_init(&cl->slots, ok->csr_fore_chan_attrs.ca_maxrequests);
		cl->status_flags = 0;
		cl->last_renew_ns = now_ns();
		cl->ctr.sessions++;
		renew = start_renewal_locked(cl);
		if (renew && pthread_create(&cl->renew_thread, NULL, renew_main, cl))
			cl->renew_started = false;
		cond_broadcast(&cl->slot_cv);
		cond_broadcast(&cl->renew_cv);
		mutex_unlock(&cl->lock);
		if (ok->csr_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN)
			nfs4c_cb_set_session(&cl->cb, ok->csr_sessionid,
					     ok->csr_back_chan_attrs.ca_maxrequests);
		else
			nfs4c_cb_clear_session(&cl->cb);
	} else {
		nfs4c_cb_creating(&cl->cb, false);
	}
	nfs4c_compound_destroy(&c);
	return ret;
}

/* A compound of SEQUENCE and at most one more operation; its status. */
static int seq_op(struct nfs4c_client *cl, struct nfs4c_compound *c)
{
	int ret = nfs4c_send(c);
	return ret ? ret : c->status;
}

int nfs4c_reclaim_complete(struct nfs4c_client *cl, bool one_fs)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_reclaim_complete(&c, one_fs);
	int ret = seq_op(cl, &c);
	nfs4c_compound_destroy(&c);
	return ret;
}

int nfs4c_sequence(struct nfs4c_client *cl)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	int ret = seq_op(cl, &c);
	nfs4c_compound_destroy(&c);
	return ret;
}

int nfs4c_bind_conn(struct nfs4c_client *cl, struct nfs4c_conn *conn, channel_dir_from_client4 dir,
		    channel_dir_from_server4 *got)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	c.no_sequence = true;
	c.conn = conn;
	struct BIND_CONN_TO_SESSION4args *a =
		&nfs4c_op_add(&c, OP_BIND_CONN_TO_SESSION)->opbind_conn_to_session;
	mutex_lock(&cl->lock);
	bool have = cl->have_session;
	memcpy(a->bctsa_sessid, cl->sid, NFS4_SESSIONID_SIZE);
	mutex_unlock(&cl->lock);
	a->bctsa_dir = dir;
	int ret = have ? nfs4c_send(&c) : -ENOTCONN;
	if (!ret)
		ret = c.status;
	const struct nfs_resop4 *r = nfs4c_res(&c, OP_BIND_CONN_TO_SESSION, 0);
	if (ret == NFS4_OK && got && r)
		*got = r->opbind_conn_to_session.bctsr_resok4.bctsr_dir;
	nfs4c_compound_destroy(&c);
	return ret;
}

int nfs4c_destroy_session(struct nfs4c_client *cl)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	c.no_sequence = true;
	struct DESTROY_SESSION4args *a = &nfs4c_op_add(&c, OP_DESTROY_SESSION)->opdestroy_session;
	mutex_lock(&cl->lock);
	bool have = cl->have_session;
	memcpy(a->dsa_sessionid, cl->sid, NFS4_SESSIONID_SIZE);
	mutex_unlock(&cl->lock);
	int ret = have ? nfs4c_send(&c) : -ENOTCONN;
	if (!ret)
		ret = c.status;
	if (ret == NFS4_OK || ret == NFS4ERR_BADSESSION) {
		mutex_lock(&cl->lock);
		if (!memcmp(cl->sid, a->dsa_sessionid, NFS4_SESSIONID_SIZE)) {
			cl->have_session = false;
			cl->sess_gen++;
			cond_broadcast(&cl->slot_cv);
		}
		mutex_unlock(&cl->lock);
		nfs4c_cb_clear_session(&cl->cb);
	}
	nfs4c_compound_destroy(&c);
	return ret;
}

int nfs4c_destroy_clientid(struct nfs4c_client *cl)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	c.no_sequence = true;
	struct DESTROY_CLIENTID4args *a =
		&nfs4c_op_add(&c, OP_DESTROY_CLIENTID)->opdestroy_clientid;
	mutex_lock(&cl->lock);
	bool have = cl->have_clientid;
	a->dca_clientid = cl->clientid;
	mutex_unlock(&cl->lock);
	int ret = have ? nfs4c_send(&c) : -ENOENT;
	if (!ret)
		ret = c.status;
	if (ret == NFS4_OK) {
		mutex_lock(&cl->lock);
		if (cl->clientid == a->dca_clientid)
			cl->have_clientid = false;
		mutex_unlock(&cl->lock);
	}
	nfs4c_compound_destroy(&c);
	return ret;
}

int nfs4c_mount(struct nfs4c_client *cl, struct nfs4c_fh *root)
{
	struct nfs4c_compound c;
	struct nfs4c_attr attr;
	bitmap4 bm = {0};
	int ret = 0;

	mutex_lock(&cl->lock);
	bool have_clientid = cl->have_clientid, have_session = cl->have_session;
	mutex_unlock(&cl->lock);
	if (!have_clientid && (ret = nfs4c_exchange_id(cl)))
		return ret;
	if (!have_session && (ret = nfs4c_create_session(cl)))
		return ret;
	ret = nfs4c_reclaim_complete(cl, false);
	if (ret && ret != NFS4ERR_COMPLETE_ALREADY)
		return ret;

	nfs4c_compound_init(&c, cl);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_getfh(&c);
	nfs4c_bitmap_set(&bm, FATTR4_LEASE_TIME);
	nfs4c_op_getattr(&c, &bm);
	ret = seq_op(cl, &c);
	if (ret == NFS4_OK) {
		struct nfs4c_fh fh;
		if (nfs4c_res_fh(&c, &fh)) {
			ret = -EBADMSG;
		} else {
			if (root)
				*root = fh;
			if (!nfs4c_res_attr(&c, &attr) &&
			    nfs4c_bitmap_isset(&attr.have, FATTR4_LEASE_TIME) && !cl->cfg.lease_s &&
			    attr.lease_time) {
				mutex_lock(&cl->lock);
				cl->lease_s = attr.lease_time;
				cond_broadcast(&cl->renew_cv);
				mutex_unlock(&cl->lock);
			}
		}
	}
	nfs4c_compound_destroy(&c);
	return ret;
}

int nfs4c_unmount(struct nfs4c_client *cl)
{
	int ret = nfs4c_destroy_session(cl);
	int ret2 = nfs4c_destroy_clientid(cl);
	return ret ? ret : ret2;
}

/* ---- recovery ----------------------------------------------------------------- */

/* Replace the connection, trying until reconnect_ms passed. Caller holds
 * recover_lock. */
static int reconnect(struct nfs4c_client *cl)
{
	struct nfs4c_conn_cfg cc;
	struct nfs4c_conn *nc = NULL;
	uint64_t deadline = now_ns() + (uint64_t)cl->cfg.reconnect_ms * NSEC_PER_MSEC;
	uint64_t backoff = 50 * NSEC_PER_MSEC;
	conn_cfg(cl, &cc);
	for (;;) {
		int err = nfs4c_conn_open(cl->addr, &cc, &nc);
		if (!err)
			break;
		mutex_lock(&cl->lock);
		bool stopping = cl->stopping;
		mutex_unlock(&cl->lock);
		if (stopping)
			return -ESHUTDOWN;
		if (now_ns() >= deadline)
			return err;
		sleep_ns(backoff);
		backoff = MIN(2 * backoff, NSEC_PER_SEC);
	}
	mutex_lock(&cl->lock);
	if (cl->stopping) {
		/* nfs4c_destroy() closes the connection it sees: not this one */
		mutex_unlock(&cl->lock);
		nfs4c_conn_close(nc);
		return -ESHUTDOWN;
	}
	struct nfs4c_conn *old = cl->conn;
	cl->conn = nc;
	cl->conn_gen++;
	cl->ctr.reconnects++;
	mutex_unlock(&cl->lock);
	nfs4c_conn_close(old);
	return 0;
}

/* A new session on the client ID, or a new client ID and session when the
 * server lost the client. *lost_state tells which. Caller holds
 * recover_lock. */
static int new_session(struct nfs4c_client *cl, bool *lost_state)
{
	int ret = nfs4c_create_session(cl);
	if (ret == NFS4ERR_STALE_CLIENTID || ret == NFS4ERR_EXPIRED || ret == -ENOENT) {
		*lost_state = true;
		ret = nfs4c_exchange_id(cl);
		if (ret == NFS4_OK)
			ret = nfs4c_create_session(cl);
	}
	return ret > 0 ? -EIO : ret;
}

int nfs4c_recover(struct nfs4c_client *cl, int what, uint64_t seen)
{
	bool lost_state = false, lost_session = false;
	int err = 0;

	mutex_lock(&cl->recover_lock);
	mutex_lock(&cl->lock);
	bool done = what == NFS4C_REC_CONN ? cl->conn_gen != seen : cl->sess_gen != seen;
	bool stopping = cl->stopping;
	bool have_session = cl->have_session;
	mutex_unlock(&cl->lock);
	if (done)
		goto out; /* invariant 3: someone else did it */
	if (stopping) {
		err = -ESHUTDOWN;
		goto out;
	}
	if (what == NFS4C_REC_CONN) {
		if ((err = reconnect(cl)))
			goto out;
		if (have_session) {
			int st = nfs4c_bind_conn(
				cl, NULL, cl->cfg.no_back_channel ? CDFC4_FORE : CDFC4_BACK_OR_BOTH,
				NULL);
			if (st < 0) {
				err = st;
				goto out;
			}
			/* anything but a lost session: SEQUENCE binds the fore
			 * channel by itself (SP4_NONE) */
			if (st == NFS4ERR_BADSESSION || st == NFS4ERR_DEADSESSION)
				what = NFS4C_REC_SESSION;
		}
	}
	if (what == NFS4C_REC_SESSION) {
		lost_session = true;
		err = new_session(cl, &lost_state);
		mutex_lock(&cl->lock);
		cl->ctr.session_recoveries++;
		cl->ctr.state_losses += lost_state;
		mutex_unlock(&cl->lock);
	}
out:
	mutex_unlock(&cl->recover_lock);
	/* hooks with no lock held (invariant 4) */
	assert_none_held(LOCK_RANK_NFS4C_RECOVER, LOCK_RANK_NFS4C_CONN);
	if (!err && lost_state) {
		if (cl->hooks.state_lost)
			cl->hooks.state_lost(cl->hooks.arg, cl);
		else
			nfs4c_reclaim_complete(cl, false);
	} else if (!err && lost_session && cl->hooks.session_lost) {
		cl->hooks.session_lost(cl->hooks.arg, cl);
	}
	return err;
}

void nfs4c_break_conn(struct nfs4c_client *cl)
{
	struct nfs4c_conn *conn = nfs4c_get_conn(cl);
	nfs4c_conn_shutdown(conn, -ECONNRESET);
	nfs4c_conn_put(conn);
}

/* ---- information ---------------------------------------------------------------- */

void nfs4c_get_info(struct nfs4c_client *cl, struct nfs4c_info *info)
{
	mutex_lock(&cl->lock);
	*info = cl->ctr;
	info->clientid = cl->have_clientid ? cl->clientid : 0;
	info->eir_flags = cl->eir_flags;
	info->minorversion = cl->minorversion;
	info->have_session = cl->have_session;
	memcpy(info->sessionid, cl->sid, NFS4_SESSIONID_SIZE);
	info->csr_flags = cl->csr_flags;
	info->fore = cl->fore;
	info->back = cl->back;
	info->fore_slots = cl->slots.nslots;
	info->highest_slot = cl->slots.highest;
	info->target_slot = cl->slots.target;
	info->status_flags = cl->status_flags;
	info->lease_s = cl->lease_s ? cl->lease_s : LEASE_DEFAULT_S;
	mutex_unlock(&cl->lock);
	mutex_lock(&cl->cb.lock);
	info->back_slots = cl->cb.have_session ? cl->cb.nslots : 0;
	mutex_unlock(&cl->cb.lock);
	mutex_lock(&cl->cbq_lock);
	memcpy(info->cb_ops, cl->cb_count, sizeof(info->cb_ops));
	info->cb_dropped = cl->cb_dropped;
	mutex_unlock(&cl->cbq_lock);
}

struct nfs4c_conn *nfs4c_get_conn(struct nfs4c_client *cl)
{
	mutex_lock(&cl->lock);
	struct nfs4c_conn *c = cl->conn;
	nfs4c_conn_get(c);
	mutex_unlock(&cl->lock);
	return c;
}

int nfs4c_open_conn(struct nfs4c_client *cl, struct nfs4c_conn **out)
{
	struct nfs4c_conn_cfg cc;
	conn_cfg(cl, &cc);
	return nfs4c_conn_open(cl->addr, &cc, out);
}

int nfs4c_set_cb(struct nfs4c_client *cl, nfs_cb_opnum4 op, nfs4c_cb_fn fn, void *arg)
{
	if (op < 0 || op >= NFS4C_CB_NOPS)
		return -EINVAL;
	mutex_lock(&cl->cbq_lock);
	cl->cb_fn[op] = fn;
	cl->cb_arg[op] = arg;
	/* the old handler may be running with the old argument: wait for it
	 * (only the callback thread runs handlers, one at a time) */
	while (cl->cb_in_handler)
		cond_wait(&cl->cb_idle_cv, &cl->cbq_lock);
	mutex_unlock(&cl->cbq_lock);
	return 0;
}

struct nfs4c_cb *nfs4c_get_cb(struct nfs4c_client *cl)
{
	return &cl->cb;
}

clientid4 nfs4c_clientid(struct nfs4c_client *cl)
{
	mutex_lock(&cl->lock);
	clientid4 id = cl->clientid;
	mutex_unlock(&cl->lock);
	return id;
}
