/*
 * op_session.c - the operations of clients and sessions: EXCHANGE_ID,
 * CREATE_SESSION, DESTROY_SESSION, DESTROY_CLIENTID, BIND_CONN_TO_SESSION,
 * BACKCHANNEL_CTL, RECLAIM_COMPLETE, TEST_STATEID, FREE_STATEID
 * (RFC 8881 §18.34-§18.51). The rules live in the state core (client.h,
 * session.h, stateid.h, grace.h); these translate the wire to its calls
 * and note the commit sequence of any durable client record they changed,
 * so the compound replies only once that record is durable.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nfs4/nfs4_priv.h"
#include "nfs4/state/grace.h"

/* Who sent the request, for SP4_NONE's collision rules. */
static void principal_of(const struct rpc_cred *rc, struct nfs4_principal *p)
{
	int n = rc->flavor == RPC_AUTH_SYS
			? snprintf((char *)p->data, sizeof(p->data), "sys:%u", rc->uid)
			: snprintf((char *)p->data, sizeof(p->data), "none");
	p->len = (uint32_t)n;
}

/* The client a compound's session belongs to (ops after SEQUENCE only). */
static struct nfs4_client *clp_of(struct nfs4_compound *c)
{
	return c->clp;
}

uint32_t nfs4_op_exchange_id(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct EXCHANGE_ID4args *ea = &a->opexchange_id;
	struct EXCHANGE_ID4resok *ok = &r->opexchange_id.eir_resok4;
	struct nfs4_server *s = c->s;
	if (ea->eia_flags & ~NFS4_EXCHGID_MASK_A)
		return NFS4ERR_INVAL;
	/* SP4_MACH_CRED and SP4_SSV need RPCSEC_GSS, which jnfs does not serve */
	if (ea->eia_state_protect.spa_how != SP4_NONE)
		return NFS4ERR_ENCR_ALG_UNSUPP;
	if (ea->eia_clientowner.co_ownerid.len == 0)
		return NFS4ERR_INVAL;
	struct nfs4_exchange_id_args xa = {
		.ownerid = ea->eia_clientowner.co_ownerid.val,
		.ownerid_len = ea->eia_clientowner.co_ownerid.len,
		.flags = ea->eia_flags,
		.pnfs_role = atomic_load(&s->pnfs) ? EXCHGID4_FLAG_USE_PNFS_MDS
						   : EXCHGID4_FLAG_USE_NON_PNFS,
	};
	memcpy(xa.verifier, ea->eia_clientowner.co_verifier, NFS4_VERIFIER_SIZE);
	principal_of(c->rc, &xa.principal);
	struct nfs4_exchange_id_res xr;
	uint64_t seq = 0;
	uint32_t st = nfs4_exchange_id(s->state, &xa, &xr, &seq);
	nfs4_note_change(c, seq, false);
	if (st)
		return st;
	ok->eir_clientid = xr.clientid;
	ok->eir_sequenceid = xr.sequenceid;
	ok->eir_flags = xr.flags;
	ok->eir_state_protect.spr_how = SP4_NONE;
	struct nfs4_server_owner so;
	nfs4_server_owner(s->state, &so);
	uint8_t *major = nfs4_res_alloc(c, so.major_len + so.scope_len + 1);
	struct nfs_impl_id4 *id = nfs4_res_alloc(c, sizeof(*id));
	if (!major || !id)
		return NFS4ERR_REP_TOO_BIG;
	memcpy(major, so.major, so.major_len);
	memcpy(major + so.major_len, so.scope, so.scope_len);
	ok->eir_server_owner.so_minor_id = so.minor_id;
	ok->eir_server_owner.so_major_id.len = so.major_len;
	ok->eir_server_owner.so_major_id.val = major;
	ok->eir_server_scope.len = so.scope_len;
	ok->eir_server_scope.val = major + so.major_len;
	/* the implementation id is optional; we say who we are */
	static const char domain[] = "jnfs.invalid", name[] = "jnfs";
	id->nii_domain.len = sizeof(domain) - 1;
	id->nii_domain.val = (const uint8_t *)domain;
	id->nii_name.len = sizeof(name) - 1;
	id->nii_name.val = (const uint8_t *)name;
	ok->eir_server_impl_id.len = 1;
	ok->eir_server_impl_id.val = id;
	return NFS4_OK;
}

/* A new back channel connection: see that it answers (cb.c). */
static void probe_back_channel(struct nfs4_server *s, const uint8_t *sessionid)
{
	struct nfs4_session *sess = nfs4_session_find(s->state, sessionid);
	if (sess) {
		nfs4_cb_probe(s, sess);
		nfs4_session_put(sess);
	}
}

static void chan_from_wire(const struct channel_attrs4 *w, struct nfs4_channel_attrs *a)
{
	a->headerpadsize = w->ca_headerpadsize;
	a->maxrequestsize = w->ca_maxrequestsize;
	a->maxresponsesize = w->ca_maxresponsesize;
	a->maxresponsesize_cached = w->ca_maxresponsesize_cached;
	a->maxoperations = w->ca_maxoperations;
	a->maxrequests = w->ca_maxrequests;
}

static void chan_to_wire(const struct nfs4_channel_attrs *a, struct channel_attrs4 *w)
{
	memset(w, 0, sizeof(*w));
	w->ca_headerpadsize = a->headerpadsize;
	w->ca_maxrequestsize = a->maxrequestsize;
	w->ca_maxresponsesize = a->maxresponsesize;
	w->ca_maxresponsesize_cached = a->maxresponsesize_cached;
	w->ca_maxoperations = a->maxoperations;
	w->ca_maxrequests = a->maxrequests;
}

/*
 * The credential flavor of back channel calls, from the ones the client
 * offers (csa_sec_parms, bca_sec_parms): AUTH_SYS when offered, since the
 * Linux client's callback service refuses anything but CB_NULL under
 * AUTH_NONE; AUTH_NONE when that is all it offers (or it offers nothing).
 * False when it offers neither (RPCSEC_GSS only).
 */
static bool cb_flavor_of(const struct callback_sec_parms4 *v, uint32_t n, uint32_t *flavor)
{
	bool none = n == 0, sys = false;
	for (uint32_t i = 0; i < n; i++) {
		none |= v[i].cb_secflavor == RPC_AUTH_NONE;
		sys |= v[i].cb_secflavor == RPC_AUTH_SYS;
	}
	*flavor = sys ? RPC_AUTH_SYS : RPC_AUTH_NONE;
	return none || sys;
}

uint32_t nfs4_op_create_session(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct CREATE_SESSION4args *ca = &a->opcreate_session;
	struct CREATE_SESSION4resok *ok = &r->opcreate_session.csr_resok4;
	/* flags RFC 8881 §18.36 does not define: INVAL, as the Linux server */
	if (ca->csa_flags & ~(CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_BACK_CHAN |
			      CREATE_SESSION4_FLAG_CONN_RDMA))
		return NFS4ERR_INVAL;
	/* RDMA is not served; the back channel needs AUTH_NONE or AUTH_SYS */
	if (ca->csa_fore_chan_attrs.ca_rdma_ird.len > 1 ||
	    ca->csa_back_chan_attrs.ca_rdma_ird.len > 1)
		return NFS4ERR_BADXDR;
	uint32_t cb_flavor;
	if (!cb_flavor_of(ca->csa_sec_parms.val, ca->csa_sec_parms.len, &cb_flavor))
		return NFS4ERR_ENCR_ALG_UNSUPP;
	struct svc_conn *conn = svc_req_conn(c->rq);
	struct nfs4_create_session_args sa = {
		.clientid = ca->csa_clientid,
		.sequence = ca->csa_sequence,
		.flags = ca->csa_flags & ~CREATE_SESSION4_FLAG_CONN_RDMA,
		.cb_program = ca->csa_cb_program,
		.cb_flavor = cb_flavor,
		.minorversion = c->args->minorversion,
		.conn = conn,
		.conn_id = svc_conn_id(conn),
	};
	chan_from_wire(&ca->csa_fore_chan_attrs, &sa.fore);
	chan_from_wire(&ca->csa_back_chan_attrs, &sa.back);
	principal_of(c->rc, &sa.principal);
	struct nfs4_create_session_res sr;
	uint64_t seq = 0;
	uint32_t st = nfs4_create_session(c->s->state, &sa, &sr, &seq);
	nfs4_note_change(c, seq, false);
	if (st)
		return st;
	nfs4_conn_watch(c->s, conn);
	if (sr.flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN)
		probe_back_channel(c->s, sr.sessionid);
	memcpy(ok->csr_sessionid, sr.sessionid, NFS4_SESSIONID_SIZE);
	ok->csr_sequence = sr.sequence;
	ok->csr_flags = sr.flags;
	chan_to_wire(&sr.fore, &ok->csr_fore_chan_attrs);
	chan_to_wire(&sr.back, &ok->csr_back_chan_attrs);
	return NFS4_OK;
}

uint32_t nfs4_op_destroy_session(struct nfs4_compound *c, struct nfs_argop4 *a,
				 struct nfs_resop4 *r)
{
	return nfs4_destroy_session(c->s->state, a->opdestroy_session.dsa_sessionid, c->sess);
}

uint32_t nfs4_op_destroy_clientid(struct nfs4_compound *c, struct nfs_argop4 *a,
				  struct nfs_resop4 *r)
{
	uint64_t seq = 0;
	uint32_t st = nfs4_destroy_clientid(c->s->state, a->opdestroy_clientid.dca_clientid, &seq);
	nfs4_note_change(c, seq, false);
	return st;
}

uint32_t nfs4_op_bind_conn(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct BIND_CONN_TO_SESSION4args *ba = &a->opbind_conn_to_session;
	struct BIND_CONN_TO_SESSION4resok *ok = &r->opbind_conn_to_session.bctsr_resok4;
	struct svc_conn *conn = svc_req_conn(c->rq);
	uint32_t dir = 0;
	if (ba->bctsa_use_conn_in_rdma_mode)
		return NFS4ERR_INVAL; /* not an RDMA transport */
	uint32_t st = nfs4_bind_conn_to_session(c->s->state, ba->bctsa_sessid, ba->bctsa_dir, conn,
						svc_conn_id(conn), &dir);
	if (st)
		return st;
	nfs4_conn_watch(c->s, conn);
	if (dir & NFS4_CDFS_BACK)
		probe_back_channel(c->s, ba->bctsa_sessid);
	memcpy(ok->bctsr_sessid, ba->bctsa_sessid, NFS4_SESSIONID_SIZE);
	ok->bctsr_dir = dir;
	ok->bctsr_use_conn_in_rdma_mode = false;
	return NFS4_OK;
}

uint32_t nfs4_op_backchannel_ctl(struct nfs4_compound *c, struct nfs_argop4 *a,
				 struct nfs_resop4 *r)
{
	struct BACKCHANNEL_CTL4args *ba = &a->opbackchannel_ctl;
	uint32_t cb_flavor;
	if (!cb_flavor_of(ba->bca_sec_parms.val, ba->bca_sec_parms.len, &cb_flavor))
		return NFS4ERR_INVAL;
	nfs4_session_set_cb_program(c->sess, ba->bca_cb_program, cb_flavor);
	return NFS4_OK;
}

/* SET_SSV (RFC 8881 §18.47) is REQUIRED, but it only changes the secret of
 * a client ID made with SP4_SSV state protection, which EXCHANGE_ID never
 * grants here (it needs RPCSEC_GSS): for every client ID it is INVAL. */
uint32_t nfs4_op_set_ssv(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	return NFS4ERR_INVAL;
}

uint32_t nfs4_op_reclaim_complete(struct nfs4_compound *c, struct nfs_argop4 *a,
				  struct nfs_resop4 *r)
{
	/* one filesystem at a time has nothing to reclaim here: every export is
	 * one engine, reclaimed together */
	if (a->opreclaim_complete.rca_one_fs)
		return NFS4_OK;
	uint64_t seq = 0;
	uint32_t st = nfs4_reclaim_complete(c->s->state, clp_of(c), &seq);
	nfs4_note_change(c, seq, false);
	return st;
}

uint32_t nfs4_op_test_stateid(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct TEST_STATEID4args *ta = &a->optest_stateid;
	struct TEST_STATEID4resok *ok = &r->optest_stateid.tsr_resok4;
	uint32_t n = ta->ts_stateids.len;
	nfsstat4 *codes = nfs4_res_alloc(c, (n ? n : 1) * sizeof(*codes));
	if (!codes)
		return NFS4ERR_REP_TOO_BIG;
	for (uint32_t i = 0; i < n; i++) {
		struct nfs4_stateid sid;
		nfs4_sid_from_wire(&ta->ts_stateids.val[i], &sid);
		codes[i] = nfs4_test_stateid(clp_of(c), &sid);
	}
	ok->tsr_status_codes.len = n;
	ok->tsr_status_codes.val = codes;
	return NFS4_OK;
}

uint32_t nfs4_op_free_stateid(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	/* the current stateid stands for the compound's (RFC 8881 §16.2.3.1.2):
	 * OPEN then FREE_STATEID of it is LOCKS_HELD, as the open is a lock */
	struct nfs4_stateid sid;
	uint32_t st = nfs4_sid_resolve(c, &a->opfree_stateid.fsa_stateid, &sid);
	if (st)
		return st;
	return nfs4_free_stateid(clp_of(c), &sid);
}
