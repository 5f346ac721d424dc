/*
 * rpcb.h - registration with rpcbind (RPCBIND protocol version 4, RFC
 * 1833), so that clients which ask the portmapper find the service.
 *
 * The calls block (a connect and one round trip each, bounded by a short
 * timeout) and are made at start and stop, never while serving. A missing
 * rpcbind is not an error for the server: the caller logs once and serves.
 */
#ifndef JNFS_RPC_RPCB_H
#define JNFS_RPC_RPCB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rpc/xdr.h"

#define RPCB_PROG      100000
#define RPCB_VERS4     4
#define RPCB_PROC_SET  1
#define RPCB_PROC_UNSET 2
#define RPCB_MAXSTR    255

/* struct rpcb (RFC 1833) */
struct rpcb_entry {
	uint32_t prog, vers;
	char netid[RPCB_MAXSTR + 1]; /* "tcp", "tcp6" */
	char addr[RPCB_MAXSTR + 1];  /* universal address "h1.h2.h3.h4.p1.p2" */
	char owner[RPCB_MAXSTR + 1];
};

int rpcb_enc_entry(struct xdr_enc *x, const void *e);
int rpcb_dec_entry(struct xdr_dec *x, void *e);

/* Universal address and netid of a bound TCP socket address. */
void rpcb_uaddr(const struct sockaddr_storage *ss, char *uaddr, size_t len, const char **netid);

/*
 * Register (prog, vers) at the listener address with the rpcbind at
 * rpcbind_addr ("127.0.0.1:111"). Returns 0, -EACCES when rpcbind refused
 * (an entry owned by someone else exists), or -errno when it cannot be
 * reached.
 */
int rpcb_set(const char *rpcbind_addr, uint32_t prog, uint32_t vers,
	     const struct sockaddr_storage *listener);
/* Remove every registration of (prog, vers). */
int rpcb_unset(const char *rpcbind_addr, uint32_t prog, uint32_t vers);

#endif
