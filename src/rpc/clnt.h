/*
 * clnt.h - a small blocking ONC RPC client over TCP, for what the server
 * itself calls synchronously at start and stop (rpcbind), for tests and
 * for benchmarks. Never used on a worker or the event loop: it blocks.
 *
 * Each function returns 0 or -errno; a call answered with an RPC error is
 * -EPROTO with the reply header in *rh.
 */
#ifndef JNFS_RPC_CLNT_H
#define JNFS_RPC_CLNT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rpc/rpc_msg.h"
#include "rpc/xdr.h"

/* Connect to "ADDR:PORT" / "[ADDR6]:PORT"; send and receive time out after
 * timeout_ms. Returns a blocking socket or -errno. */
int rpc_clnt_connect(const char *addr, unsigned timeout_ms);
int rpc_clnt_connect_sa(const struct sockaddr *sa, socklen_t len, unsigned timeout_ms);

/* Send buf as one record (one fragment). */
int rpc_clnt_send_record(int fd, const void *buf, size_t len);
/* Receive one record (any number of fragments, at most max bytes) into a
 * malloc'd buffer the caller frees. */
int rpc_clnt_recv_record(int fd, size_t max, uint8_t **buf, size_t *len);

/* A complete call: encode, send, wait for the reply with this xid
 * (records with other xids are skipped), decode. */
int rpc_clnt_call(int fd, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
		  const struct rpc_cred *cred, int (*enc)(struct xdr_enc *, const void *),
		  const void *args, int (*dec)(struct xdr_dec *, void *), void *res,
		  struct rpc_reply_hdr *rh);

#endif
