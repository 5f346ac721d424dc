/*
 * rconn.c - a reconnecting ONC RPC client connection. See rconn.h.
 */
#include "rconn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/time.h"
#include "rpc/clnt.h"
#include "rpc/svc.h"

#define RECONNECT_EVERY_NS (20 * NSEC_PER_MSEC)

static uint32_t xid_salt;

int rconn_init(struct rconn *r, struct load_client *c, const struct load_conn_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->rc_client = c;
	r->rc_fd = -1;
	if (svc_parse_addr(o->addr, &r->rc_sa, &r->rc_salen))
		return -EINVAL;
	if (!xid_salt)
		xid_salt = (uint32_t)(wall_ns() ^ (uint64_t)getpid() << 8) | 1;
	r->rc_xid_hi = (c->lc_id & 0x3ffu) << 22; /* invariant 3 */
	r->rc_timeout_ms = o->timeout_ms;
	r->rc_give_up_ms = o->give_up_ms;
	r->rc_cred.flavor = RPC_AUTH_SYS;
	r->rc_cred.uid = o->uid;
	r->rc_cred.gid = o->gid;
	snprintf(r->rc_cred.machine, sizeof(r->rc_cred.machine), "nfs-load-%u", c->lc_id);
	r->rc_max_reply = 4u << 20;
	return 0;
}

void rconn_disconnect(struct rconn *r)
{
	if (r->rc_fd >= 0)
		close(r->rc_fd);
	r->rc_fd = -1;
}

void rconn_destroy(struct rconn *r)
{
	rconn_disconnect(r);
	free(r->rc_reply);
	r->rc_reply = NULL;
}

/* Connect, trying again until give_up_ms has passed. */
static int reconnect(struct rconn *r)
{
	uint64_t start = now_ns(), deadline = start + r->rc_give_up_ms * NSEC_PER_MSEC;
	for (;;) {
		int fd = rpc_clnt_connect_sa((const struct sockaddr *)&r->rc_sa, r->rc_salen,
					     r->rc_timeout_ms);
		if (fd >= 0) {
			r->rc_fd = fd;
			if (r->rc_was_up)
				r->rc_client->lc_cs.down_ns += now_ns() - start;
			return 0;
		}
		if (now_ns() >= deadline)
			return -ECONNRESET;
		sleep_ns(RECONNECT_EVERY_NS);
	}
}

/* Send rec and wait for the reply with xid: 0, or -errno of the
 * connection (the caller reconnects), or -EBADMSG. */
static int transact(struct rconn *r, uint32_t xid, const uint8_t *rec, size_t len,
		    struct xdr_dec *res, struct rpc_reply_hdr *rh)
{
	int err = rpc_clnt_send_record(r->rc_fd, rec, len);
	if (err)
		return err;
	for (;;) {
		uint8_t *buf;
		size_t blen;
		err = rpc_clnt_recv_record(r->rc_fd, r->rc_max_reply, &buf, &blen);
		if (err) {
			if (err == -ETIMEDOUT)
				r->rc_client->lc_cs.timeouts++;
			return err;
		}
		xdr_dec_init(res, buf, blen);
		if (rpc_dec_reply_hdr(res, rh)) {
			free(buf);
			return -EBADMSG;
		}
		if (rh->xid != xid) {
			free(buf); /* a reply to a call sent before a reconnect */
			continue;
		}
		free(r->rc_reply);
		r->rc_reply = buf;
		return 0;
	}
}

int rconn_call(struct rconn *r, uint32_t prog, uint32_t vers, uint32_t proc,
	       int (*enc)(struct xdr_enc *, const void *), const void *args, struct xdr_dec *res,
	       struct rpc_reply_hdr *rh)
{
	struct load_client *c = r->rc_client;
	uint32_t xid = (r->rc_xid_hi | (r->rc_xid_lo++ & 0x3fffffu)) ^ xid_salt;
	struct xdr_enc x;
	int err;
	xdr_enc_init(&x, 2u << 20);
	if (rpc_enc_call_hdr(&x, xid, prog, vers, proc, &r->rc_cred) || (enc && enc(&x, args))) {
		xdr_enc_destroy(&x);
		return -EMSGSIZE;
	}
	size_t len = xdr_enc_len(&x);
	uint8_t *rec = xmalloc(len);
	xdr_enc_flatten(&x, rec);
	xdr_enc_destroy(&x);

	c->lc_sends = 0;
	for (;;) {
		if (r->rc_fd < 0) {
			if (c->lc_in_recover) {
				err = -ECONNRESET; /* invariant 2 */
				break;
			}
			err = reconnect(r);
			if (err)
				break;
			bool first = !r->rc_was_up;
			r->rc_was_up = true;
			if (!first)
				c->lc_cs.reconnects++;
			if (!first && c->lc_recover) {
				c->lc_in_recover = true;
				int again = c->lc_recover(c);
				c->lc_in_recover = false;
				if (again) {
					rconn_disconnect(r);
					continue;
				}
			}
		}
		if (c->lc_sends)
			c->lc_cs.resends++;
		c->lc_sends++;
		err = transact(r, xid, rec, len, res, rh);
		if (err == 0 || err == -EBADMSG)
			break;
		/* the connection failed: a real client reconnects and resends */
		rconn_disconnect(r);
	}
	free(rec);
	if (err)
		return err == -EBADMSG ? err : -ECONNRESET;
	if (rh->reply_stat != RPC_MSG_ACCEPTED || rh->stat != RPC_SUCCESS)
		return -EPROTO;
	return 0;
}
