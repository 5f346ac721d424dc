/*
 * clnt.c - blocking RPC client. See clnt.h.
 */
#include "rpc/clnt.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/mem.h"
#include "rpc/record.h"
#include "rpc/svc.h"

int rpc_clnt_connect_sa(const struct sockaddr *sa, socklen_t len, unsigned timeout_ms)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, sa, len)) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int rpc_clnt_connect(const char *addr, unsigned timeout_ms)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int err = svc_parse_addr(addr, &ss, &len);
	if (err)
		return err;
	return rpc_clnt_connect_sa((struct sockaddr *)&ss, len, timeout_ms);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int rpc_clnt_send_record(int fd, const void *buf, size_t len)
{
	uint8_t hdr[4];
	uint32_t h = REC_LAST_FRAG | (uint32_t)len;
	if (len > REC_LEN_MASK)
		return -EMSGSIZE;
	hdr[0] = (uint8_t)(h >> 24);
	hdr[1] = (uint8_t)(h >> 16);
	hdr[2] = (uint8_t)(h >> 8);
	hdr[3] = (uint8_t)h;
	struct iovec iov[2] = {{hdr, 4}, {(void *)buf, len}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	if ((size_t)n == len + 4)
		return 0;
	/* short write: finish with the plain loop */
	if ((size_t)n < 4) {
		int err = write_all(fd, hdr + n, 4 - (size_t)n);
		return err ? err : write_all(fd, buf, len);
	}
	return write_all(fd, (const uint8_t *)buf + (n - 4), len - ((size_t)n - 4));
}

int rpc_clnt_recv_record(int fd, size_t max, uint8_t **out, size_t *outlen)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	for (;;) {
		uint8_t hdr[4];
		int err = read_all(fd, hdr, 4);
		if (err)
			goto out_free;
		uint32_t h = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
			     (uint32_t)hdr[2] << 8 | hdr[3];
		size_t flen = h & REC_LEN_MASK;
		if (flen > max || len > max - flen) {
			err = -EMSGSIZE;
			goto out_free;
		}
		buf = xrealloc(buf, len + flen);
		err = read_all(fd, buf + len, flen);
		if (err)
			goto out_free;
		len += flen;
		if (h & REC_LAST_FRAG)
			break;
		continue;
	out_free:
		free(buf);
		return err;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

int rpc_clnt_call(int fd, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
		  const struct rpc_cred *cred, int (*enc)(struct xdr_enc *, const void *),
		  const void *args, int (*dec)(struct xdr_dec *, void *), void *res,
		  struct rpc_reply_hdr *rh)
{
	struct xdr_enc x;
	int err;
	xdr_enc_init(&x, 64 * 1024 * 1024);
	if (rpc_enc_call_hdr(&x, xid, prog, vers, proc, cred) || (enc && enc(&x, args))) {
		xdr_enc_destroy(&x);
		return -EMSGSIZE;
	}
	uint8_t *flat = xmalloc(xdr_enc_len(&x));
	xdr_enc_flatten(&x, flat);
	err = rpc_clnt_send_record(fd, flat, xdr_enc_len(&x));
	free(flat);
	xdr_enc_destroy(&x);
	if (err)
		return err;
	for (;;) {
		uint8_t *buf;
		size_t len;
		err = rpc_clnt_recv_record(fd, 64 * 1024 * 1024, &buf, &len);
		if (err)
			return err;
		struct xdr_dec d;
		xdr_dec_init(&d, buf, len);
		if (rpc_dec_reply_hdr(&d, rh)) {
			free(buf);
			return -EBADMSG;
		}
		if (rh->xid != xid) {
			free(buf);
			continue;
		}
		if (rh->reply_stat != RPC_MSG_ACCEPTED || rh->stat != RPC_SUCCESS)
			err = -EPROTO;
		else if (dec && dec(&d, res))
			err = -EBADMSG;
		free(buf);
		return err;
	}
}
