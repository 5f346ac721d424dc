/*
 * rpc_msg.c - call/reply headers and AUTH_SYS. See rpc_msg.h.
 */
#include "rpc/rpc_msg.h"

#include <errno.h>
#include <string.h>

int rpc_dec_xid_type(struct xdr_dec *x, uint32_t *xid, uint32_t *type)
{
	if (xdr_dec_u32(x, xid) || xdr_dec_u32(x, type))
		return -EBADMSG;
	return 0;
}

/* opaque_auth: flavor and body. The body may be longer than the RFC's 400
 * bytes here; rpc_auth_check() refuses it with AUTH_BADCRED. */
static int dec_opaque_auth(struct xdr_dec *x, uint32_t *flavor, const void **body, uint32_t *len)
{
	if (xdr_dec_u32(x, flavor) || xdr_dec_opaque_ref(x, UINT32_MAX, body, len))
		return -EBADMSG;
	return 0;
}

int rpc_dec_call_body(struct xdr_dec *x, uint32_t xid, struct rpc_call_hdr *h)
{
	h->xid = xid;
	if (xdr_dec_u32(x, &h->rpcvers))
		return -EBADMSG;
	if (h->rpcvers != RPC_VERSION) {
		/* nothing after rpcvers can be trusted to have our layout */
		h->prog = h->vers = h->proc = 0;
		h->cred_flavor = h->verf_flavor = RPC_AUTH_NONE;
		h->cred_len = h->verf_len = 0;
		h->cred_body = h->verf_body = NULL;
		return 0;
	}
	if (xdr_dec_u32(x, &h->prog) || xdr_dec_u32(x, &h->vers) || xdr_dec_u32(x, &h->proc))
		return -EBADMSG;
	if (dec_opaque_auth(x, &h->cred_flavor, &h->cred_body, &h->cred_len))
		return -EBADMSG;
	if (dec_opaque_auth(x, &h->verf_flavor, &h->verf_body, &h->verf_len))
		return -EBADMSG;
	return 0;
}

int rpc_dec_call_hdr(struct xdr_dec *x, struct rpc_call_hdr *h)
{
	uint32_t xid, type;
	if (rpc_dec_xid_type(x, &xid, &type) || type != RPC_CALL)
		return -EBADMSG;
	return rpc_dec_call_body(x, xid, h);
}

static enum rpc_auth_stat auth_sys_parse(const void *body, uint32_t len, struct rpc_cred *cred)
{
	struct xdr_dec x;
	const char *machine;
	uint32_t mlen;
	xdr_dec_init(&x, body, len);
	if (xdr_dec_u32(&x, &cred->stamp) ||
	    xdr_dec_string_ref(&x, RPC_AUTH_SYS_MAX_MACHINE, &machine, &mlen) ||
	    xdr_dec_u32(&x, &cred->uid) || xdr_dec_u32(&x, &cred->gid) ||
	    xdr_dec_count(&x, RPC_AUTH_SYS_MAX_GIDS, 4, &cred->ngids))
		return RPC_AUTH_BADCRED;
	for (uint32_t i = 0; i < cred->ngids; i++)
		if (xdr_dec_u32(&x, &cred->gids[i]))
			return RPC_AUTH_BADCRED;
	/* trailing bytes inside the credential mean it is not AUTH_SYS */
	if (xdr_dec_remaining(&x))
		return RPC_AUTH_BADCRED;
	memcpy(cred->machine, machine, mlen);
	cred->machine[mlen] = '\0';
	return RPC_AUTH_OK;
}

enum rpc_auth_stat rpc_auth_check(const struct rpc_call_hdr *h, struct rpc_cred *cred)
{
	memset(cred, 0, offsetof(struct rpc_cred, gids));
	cred->machine[0] = '\0';
	if (h->cred_len > RPC_AUTH_MAX_BODY)
		return RPC_AUTH_BADCRED;
	if (h->verf_len > RPC_AUTH_MAX_BODY)
		return RPC_AUTH_BADVERF;
	switch (h->cred_flavor) {
	case RPC_AUTH_NONE:
		cred->flavor = RPC_AUTH_NONE;
		/* nobody, as every NFS server maps an unauthenticated caller */
		cred->uid = cred->gid = 65534;
		break;
	case RPC_AUTH_SYS: {
		enum rpc_auth_stat st = auth_sys_parse(h->cred_body, h->cred_len, cred);
		if (st != RPC_AUTH_OK)
			return st;
		cred->flavor = RPC_AUTH_SYS;
		break;
	}
	case RPC_RPCSEC_GSS:
		return RPC_AUTH_TOOWEAK;
	default:
		return RPC_AUTH_BADCRED;
	}
	/* AUTH_NONE and AUTH_SYS carry an AUTH_NONE verifier */
	if (h->verf_flavor != RPC_AUTH_NONE)
		return RPC_AUTH_BADVERF;
	return RPC_AUTH_OK;
}

int rpc_enc_call_hdr(struct xdr_enc *x, uint32_t xid, uint32_t prog, uint32_t vers,
		     uint32_t proc, const struct rpc_cred *cred)
{
	struct xdr_mark m = xdr_enc_mark(x);
	int err = xdr_enc_u32(x, xid) || xdr_enc_u32(x, RPC_CALL) || xdr_enc_u32(x, RPC_VERSION) ||
		  xdr_enc_u32(x, prog) || xdr_enc_u32(x, vers) || xdr_enc_u32(x, proc);
	if (!err && cred && cred->flavor == RPC_AUTH_SYS) {
		size_t off;
		err = xdr_enc_u32(x, RPC_AUTH_SYS) || xdr_enc_reserve(x, 4, &off);
		size_t start = x->len;
		err = err || xdr_enc_u32(x, cred->stamp) || xdr_enc_string(x, cred->machine) ||
		      xdr_enc_u32(x, cred->uid) || xdr_enc_u32(x, cred->gid) ||
		      xdr_enc_u32(x, cred->ngids);
		for (uint32_t i = 0; !err && i < cred->ngids; i++)
			err = xdr_enc_u32(x, cred->gids[i]);
		if (!err)
			xdr_enc_put_u32_at(x, off, (uint32_t)(x->len - start));
	} else if (!err) {
		err = xdr_enc_u32(x, RPC_AUTH_NONE) || xdr_enc_u32(x, 0);
	}
	err = err || xdr_enc_u32(x, RPC_AUTH_NONE) || xdr_enc_u32(x, 0);
	if (err) {
		xdr_enc_rollback(x, m);
		return -EMSGSIZE;
	}
	return 0;
}

static int enc_reply_start(struct xdr_enc *x, uint32_t xid, uint32_t reply_stat)
{
	if (xdr_enc_u32(x, xid) || xdr_enc_u32(x, RPC_REPLY) || xdr_enc_u32(x, reply_stat))
		return -EMSGSIZE;
	return 0;
}

int rpc_enc_accepted(struct xdr_enc *x, uint32_t xid, enum rpc_accept_stat stat)
{
	struct xdr_mark m = xdr_enc_mark(x);
	if (enc_reply_start(x, xid, RPC_MSG_ACCEPTED) || xdr_enc_u32(x, RPC_AUTH_NONE) ||
	    xdr_enc_u32(x, 0) || xdr_enc_u32(x, stat)) {
		xdr_enc_rollback(x, m);
		return -EMSGSIZE;
	}
	return 0;
}

int rpc_enc_prog_mismatch(struct xdr_enc *x, uint32_t xid, uint32_t low, uint32_t high)
{
	struct xdr_mark m = xdr_enc_mark(x);
	if (rpc_enc_accepted(x, xid, RPC_PROG_MISMATCH) || xdr_enc_u32(x, low) ||
	    xdr_enc_u32(x, high)) {
		xdr_enc_rollback(x, m);
		return -EMSGSIZE;
	}
	return 0;
}

int rpc_enc_rpc_mismatch(struct xdr_enc *x, uint32_t xid)
{
	struct xdr_mark m = xdr_enc_mark(x);
	if (enc_reply_start(x, xid, RPC_MSG_DENIED) || xdr_enc_u32(x, RPC_MISMATCH) ||
	    xdr_enc_u32(x, RPC_VERSION) || xdr_enc_u32(x, RPC_VERSION)) {
		xdr_enc_rollback(x, m);
		return -EMSGSIZE;
	}
	return 0;
}

int rpc_enc_auth_error(struct xdr_enc *x, uint32_t xid, enum rpc_auth_stat stat)
{
	struct xdr_mark m = xdr_enc_mark(x);
	if (enc_reply_start(x, xid, RPC_MSG_DENIED) || xdr_enc_u32(x, RPC_AUTH_ERROR) ||
	    xdr_enc_u32(x, stat)) {
		xdr_enc_rollback(x, m);
		return -EMSGSIZE;
	}
	return 0;
}

int rpc_dec_reply_hdr(struct xdr_dec *x, struct rpc_reply_hdr *r)
{
	uint32_t type, flavor;
	const void *body;
	uint32_t len;
	memset(r, 0, sizeof(*r));
	if (rpc_dec_xid_type(x, &r->xid, &type) || type != RPC_REPLY ||
	    xdr_dec_u32(x, &r->reply_stat))
		return -EBADMSG;
	if (r->reply_stat == RPC_MSG_ACCEPTED) {
		if (xdr_dec_u32(x, &flavor) ||
		    xdr_dec_opaque_ref(x, RPC_AUTH_MAX_BODY, &body, &len) ||
		    xdr_dec_u32(x, &r->stat))
			return -EBADMSG;
		if (r->stat == RPC_PROG_MISMATCH &&
		    (xdr_dec_u32(x, &r->low) || xdr_dec_u32(x, &r->high)))
			return -EBADMSG;
		return 0;
	}
	if (r->reply_stat != RPC_MSG_DENIED || xdr_dec_u32(x, &r->stat))
		return -EBADMSG;
	if (r->stat == RPC_MISMATCH)
		return xdr_dec_u32(x, &r->low) || xdr_dec_u32(x, &r->high) ? -EBADMSG : 0;
	if (r->stat == RPC_AUTH_ERROR)
		return xdr_dec_u32(x, &r->auth_stat) ? -EBADMSG : 0;
	return -EBADMSG;
}

const char *rpc_accept_stat_name(uint32_t stat)
{
	static const char *const names[] = {"success",      "prog_unavail", "prog_mismatch",
					    "proc_unavail", "garbage_args", "system_err"};
	return stat < sizeof(names) / sizeof(names[0]) ? names[stat] : "unknown";
}

const char *rpc_auth_stat_name(uint32_t stat)
{
	static const char *const names[] = {"ok",           "badcred",       "rejectedcred",
					    "badverf",      "rejectedverf",  "tooweak"};
	return stat < sizeof(names) / sizeof(names[0]) ? names[stat] : "unknown";
}
