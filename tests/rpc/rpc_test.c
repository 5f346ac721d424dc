/*
 * rpc_test.c - see rpc_test.h.
 */
#include "rpc_test.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/time.h"
#include "check.h"
#include "rpc/clnt.h"

uint64_t tc_now_us(void)
{
	return now_ns() / 1000;
}

int tc_connect(uint16_t port, bool v6)
{
	char addr[64];
	snprintf(addr, sizeof(addr), v6 ? "[::1]:%u" : "127.0.0.1:%u", port);
	int fd = rpc_clnt_connect(addr, 10000);
	if (fd < 0) {
		fprintf(stderr, "connect %s: %s\n", addr, strerror(-fd));
		exit(1);
	}
	return fd;
}

void tc_send_raw(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		CHECK(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

void tc_send_call(int fd, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
		  const struct rpc_cred *cred, const void *args, size_t alen)
{
	struct xdr_enc x;
	xdr_enc_init(&x, 64 << 20);
	CHECK_OK(rpc_enc_call_hdr(&x, xid, prog, vers, proc, cred));
	uint8_t *buf = xmalloc(xdr_enc_len(&x) + alen);
	xdr_enc_flatten(&x, buf);
	if (alen)
		memcpy(buf + xdr_enc_len(&x), args, alen);
	CHECK_OK(rpc_clnt_send_record(fd, buf, xdr_enc_len(&x) + alen));
	free(buf);
	xdr_enc_destroy(&x);
}

uint8_t *tc_recv(int fd, size_t *len)
{
	uint8_t *buf;
	int err = rpc_clnt_recv_record(fd, 64 << 20, &buf, len);
	if (err) {
		fprintf(stderr, "receive a record: %s\n", strerror(-err));
		exit(1);
	}
	return buf;
}

uint8_t *tc_recv_reply(int fd, struct rpc_reply_hdr *rh, struct xdr_dec *res)
{
	size_t len;
	uint8_t *buf = tc_recv(fd, &len);
	xdr_dec_init(res, buf, len);
	CHECK_OK(rpc_dec_reply_hdr(res, rh));
	return buf;
}

bool tc_wait_closed(int fd, unsigned ms)
{
	uint64_t end = tc_now_us() + (uint64_t)ms * 1000;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = tc_now_us();
		if (now >= end)
			return false;
		int r = poll(&p, 1, (int)((end - now) / 1000) + 1);
		if (r <= 0)
			continue;
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
}
