/*
 * rpcb.c - RPCBIND v4 SET/UNSET client. See rpcb.h.
 */
#include "rpc/rpcb.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rpc/clnt.h"
#include "rpc/xdr.h"

#define RPCB_TIMEOUT_MS 2000

int rpcb_enc_entry(struct xdr_enc *x, const void *arg)
{
	const struct rpcb_entry *e = arg;
	if (xdr_enc_u32(x, e->prog) || xdr_enc_u32(x, e->vers) || xdr_enc_string(x, e->netid) ||
	    xdr_enc_string(x, e->addr) || xdr_enc_string(x, e->owner))
		return -EMSGSIZE;
	return 0;
}

int rpcb_dec_entry(struct xdr_dec *x, void *arg)
{
	struct rpcb_entry *e = arg;
	if (xdr_dec_u32(x, &e->prog) || xdr_dec_u32(x, &e->vers) ||
	    xdr_dec_string(x, e->netid, RPCB_MAXSTR) || xdr_dec_string(x, e->addr, RPCB_MAXSTR) ||
	    xdr_dec_string(x, e->owner, RPCB_MAXSTR))
		return -EBADMSG;
	return 0;
}

static int dec_bool(struct xdr_dec *x, void *res)
{
	return xdr_dec_bool(x, res);
}

void rpcb_uaddr(const struct sockaddr_storage *ss, char *uaddr, size_t len, const char **netid)
{
	char host[INET6_ADDRSTRLEN];
	unsigned port;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		*netid = "tcp";
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		*netid = "tcp6";
	}
	snprintf(uaddr, len, "%s.%u.%u", host, port >> 8, port & 0xff);
}

static int rpcb_call(const char *rpcbind_addr, uint32_t proc, const struct rpcb_entry *e)
{
	struct rpc_reply_hdr rh;
	bool ok = false;
	int fd = rpc_clnt_connect(rpcbind_addr, RPCB_TIMEOUT_MS);
	if (fd < 0)
		return fd;
	struct rpc_cred cred = {.flavor = RPC_AUTH_SYS, .uid = geteuid(), .gid = getegid()};
	gethostname(cred.machine, sizeof(cred.machine) - 1);
	int err = rpc_clnt_call(fd, (uint32_t)getpid() ^ proc ^ e->prog ^ e->vers, RPCB_PROG,
				RPCB_VERS4, proc, &cred, rpcb_enc_entry, e, dec_bool, &ok, &rh);
	close(fd);
	if (err)
		return err;
	return ok ? 0 : -EACCES;
}

int rpcb_set(const char *rpcbind_addr, uint32_t prog, uint32_t vers,
	     const struct sockaddr_storage *listener)
{
	struct rpcb_entry e = {.prog = prog, .vers = vers};
	const char *netid;
	rpcb_uaddr(listener, e.addr, sizeof(e.addr), &netid);
	snprintf(e.netid, sizeof(e.netid), "%s", netid);
	snprintf(e.owner, sizeof(e.owner), "%u", (unsigned)geteuid());
	return rpcb_call(rpcbind_addr, RPCB_PROC_SET, &e);
}

int rpcb_unset(const char *rpcbind_addr, uint32_t prog, uint32_t vers)
{
	/* an empty netid removes the registrations for every transport */
	struct rpcb_entry e = {.prog = prog, .vers = vers};
	snprintf(e.owner, sizeof(e.owner), "%u", (unsigned)geteuid());
	return rpcb_call(rpcbind_addr, RPCB_PROC_UNSET, &e);
}
