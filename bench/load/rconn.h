/*
 * rconn.h - an ONC RPC client connection over TCP that reconnects and
 * sends a call again the way a real NFS client does, for nfs-load's
 * protocols.
 *
 * Design note.
 *
 * A call is encoded once, with its xid, into its own buffer. It is sent;
 * then records are read until the reply with that xid comes (replies to
 * calls sent before a reconnect are skipped). If the connection fails -
 * reset, EOF, a reply that does not come within timeout_ms - the
 * connection is closed and made again (every 20 ms, for at most
 * give_up_ms), the client's recover hook runs (load.h), and the same
 * bytes, same xid, are sent again: so a server that still has the call in
 * its duplicate request cache answers from it, and one that restarted
 * runs it again.
 *
 * Invariants:
 *  1. A call is retransmitted only with its original bytes and xid, and
 *     rc_sends counts every transmission of the last call.
 *  2. A call made while the recover hook runs (lc_in_recover) never
 *     reconnects or runs the hook: it fails with -ECONNRESET at the first
 *     connection error, and the outer call reconnects and runs the hook
 *     again. So the hook never nests.
 *  3. xids are unique per process: the client's id in the top 10 bits,
 *     a counter below, both XORed with a salt drawn at start, so that
 *     clients of one address never share an xid (the server's duplicate
 *     request cache keys on the address without the port).
 */
#ifndef JNFS_BENCH_RCONN_H
#define JNFS_BENCH_RCONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "load.h"
#include "rpc/rpc_msg.h"
#include "rpc/xdr.h"

struct rconn {
	struct load_client *rc_client;
	struct sockaddr_storage rc_sa;
	socklen_t rc_salen;
	int rc_fd;	/* -1 while not connected */
	bool rc_was_up; /* connected before: the next connect is a reconnect */
	uint32_t rc_xid_hi, rc_xid_lo;
	unsigned rc_timeout_ms, rc_give_up_ms;
	struct rpc_cred rc_cred;
	uint8_t *rc_reply; /* the last reply record (owned) */
	size_t rc_max_reply;
};

/* 0 or -EINVAL (an address that does not parse). Does not connect yet. */
int rconn_init(struct rconn *r, struct load_client *c, const struct load_conn_opts *o);
void rconn_destroy(struct rconn *r);

/*
 * One call. 0: the reply was SUCCESS and *res is positioned at its
 * results (valid until the next call). -EPROTO: an RPC error (*rh says
 * which); -EBADMSG: a reply that does not decode; -ECONNRESET: the
 * connection could not be restored (or broke inside the recover hook,
 * invariant 2); -EMSGSIZE: the call does not encode.
 */
int rconn_call(struct rconn *r, uint32_t prog, uint32_t vers, uint32_t proc,
	       int (*enc)(struct xdr_enc *, const void *), const void *args, struct xdr_dec *res,
	       struct rpc_reply_hdr *rh);

/* Drop the connection (the next call reconnects). */
void rconn_disconnect(struct rconn *r);

#endif
