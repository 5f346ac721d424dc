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

void tc_jnfsd_start(struct tc_jnfsd *j, const char *bin, const char *const *args)
{
	int pfd[2];
	int nlisten = 0;
	const char *argv[64];
	int argc = 0;
	bool image = false;
	char path[96];
	argv[argc++] = bin;
	for (int i = 0; args[i]; i++) {
		if (strcmp(args[i], "--listen") == 0)
			nlisten++;
		if (strcmp(args[i], "--image") == 0)
			image = true;
		argv[argc++] = args[i];
	}
	j->dir[0] = '\0';
	if (!image) {
		strcpy(j->dir, "/tmp/jnfsd-test.XXXXXX");
		CHECK(mkdtemp(j->dir) != NULL);
		snprintf(path, sizeof(path), "%s/img", j->dir);
		argv[argc++] = "--image";
		argv[argc++] = path;
		argv[argc++] = "--size";
		argv[argc++] = "256M";
	}
	argv[argc] = NULL;
	CHECK_OK(pipe(pfd));
	j->pid = fork();
	CHECK(j->pid >= 0);
	if (j->pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	j->out_fd = pfd[0];
	j->nports = 0;
	char line[256];
	size_t n = 0;
	while (j->nports < nlisten) {
		char ch;
		ssize_t r = read(j->out_fd, &ch, 1);
		if (r <= 0) {
			fprintf(stderr, "jnfsd exited before listening\n");
			exit(1);
		}
		if (ch != '\n') {
			if (n < sizeof(line) - 1)
				line[n++] = ch;
			continue;
		}
		line[n] = '\0';
		n = 0;
		const char *colon = strrchr(line, ':');
		if (strncmp(line, "listening on ", 13) == 0 && colon)
			j->port[j->nports++] = (uint16_t)atoi(colon + 1);
	}
}

int tc_jnfsd_stop(struct tc_jnfsd *j)
{
	int status;
	CHECK_OK(kill(j->pid, SIGTERM));
	for (int i = 0; i < 1000; i++) {
		pid_t r = waitpid(j->pid, &status, WNOHANG);
		if (r == j->pid) {
			close(j->out_fd);
			if (j->dir[0]) {
				char cmd[128];
				snprintf(cmd, sizeof(cmd), "rm -rf %s", j->dir);
				CHECK(system(cmd) == 0);
			}
			return status;
		}
		usleep(10000);
	}
	kill(j->pid, SIGKILL);
	waitpid(j->pid, &status, 0);
	fprintf(stderr, "jnfsd did not stop on SIGTERM\n");
	exit(1);
}

uint64_t tc_jnfsd_stat(struct tc_jnfsd *j, const char *name)
{
	CHECK_OK(kill(j->pid, SIGUSR1));
	/* read up to the dump's last line */
	char line[256];
	size_t n = 0;
	uint64_t value = UINT64_MAX;
	for (;;) {
		char ch;
		CHECK(read(j->out_fd, &ch, 1) == 1);
		if (ch != '\n') {
			if (n < sizeof(line) - 1)
				line[n++] = ch;
			continue;
		}
		line[n] = '\0';
		n = 0;
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		if (strcmp(line, name) == 0)
			value = strtoull(sp + 1, NULL, 10);
		if (strcmp(line, "stats.end") == 0)
			break;
	}
	CHECK(value != UINT64_MAX);
	return value;
}
