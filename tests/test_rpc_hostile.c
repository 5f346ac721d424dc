/*
 * test_rpc_hostile.c - against a real jnfsd: while one good
 * connection keeps making NULL calls, other connections send garbage
 * records, a record length of 2^31-1, a fragment that never ends, AUTH_SYS
 * with 10,000 groups, truncated call headers, an unframed byte stream,
 * stray REPLY messages, dozens of stalled connections, and a flood of
 * calls whose replies are never read. Each bad connection must be answered
 * (with an RPC error) or dropped; every good call must succeed; jnfsd must
 * still be serving afterwards and stop cleanly.
 *
 * usage: test-rpc-hostile PATH-TO-JNFSD
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rand.h"
#include "check.h"
#include "rpc/clnt.h"
#include "rpc/rpc_test.h"

#define NFS_PROG 100003
#define RUN_MS   4000

static uint16_t port;
static _Atomic bool stop;
static _Atomic uint64_t good_calls, hostile_rounds;

static void *good_client(void *arg)
{
	int fd = tc_connect(port, false);
	uint32_t xid = 1;
	while (!atomic_load(&stop)) {
		struct rpc_reply_hdr rh;
		int err = rpc_clnt_call(fd, xid++, NFS_PROG, 3, 0, NULL, NULL, NULL, NULL, NULL, &rh);
		if (err) {
			fprintf(stderr, "good call %u failed: %s\n", xid - 1, strerror(-err));
			exit(1);
		}
		atomic_fetch_add(&good_calls, 1);
	}
	close(fd);
	return NULL;
}

static void send_record(int fd, const void *buf, size_t len)
{
	/* the peer may already have hung up: that is an allowed outcome */
	uint8_t h[4] = {(uint8_t)(0x80 | (len >> 24)), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
			(uint8_t)len};
	if (send(fd, h, 4, MSG_NOSIGNAL) == 4 && len)
		send(fd, buf, len, MSG_NOSIGNAL);
}

/* Dropped, or answered with something that decodes as a reply. */
static void expect_dropped(int fd, const char *what)
{
	if (!tc_wait_closed(fd, 10000)) {
		fprintf(stderr, "%s: connection neither answered nor dropped\n", what);
		exit(1);
	}
	close(fd);
}

static void expect_auth_error_then_ok(int fd)
{
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	free(tc_recv_reply(fd, &rh, &d));
	CHECK(rh.reply_stat == RPC_MSG_DENIED && rh.stat == RPC_AUTH_ERROR &&
	      rh.auth_stat == RPC_AUTH_BADCRED);
	CHECK_OK(rpc_clnt_call(fd, 99, NFS_PROG, 3, 0, NULL, NULL, NULL, NULL, NULL, &rh));
	close(fd);
}

static void hostile_once(struct rng *r, int kind)
{
	uint8_t buf[65536];
	int fd = tc_connect(port, false);
	switch (kind) {
	case 0: { /* garbage records */
		size_t len = 8 + rng_below(r, 2000);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rng_next(r);
		buf[4] = buf[5] = buf[6] = 0xff; /* msg_type neither CALL nor REPLY */
		send_record(fd, buf, len);
		expect_dropped(fd, "garbage record");
		break;
	}
	case 1: { /* a record length of 2^31-1 */
		uint8_t h[4] = {0xff, 0xff, 0xff, 0xff};
		send(fd, h, 4, MSG_NOSIGNAL);
		expect_dropped(fd, "2^31-1 record");
		break;
	}
	case 2: { /* a fragment that never ends */
		uint8_t h[14] = {0x80, 0, 0x10, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
		send(fd, h, sizeof(h), MSG_NOSIGNAL);
		expect_dropped(fd, "endless fragment");
		break;
	}
	case 3: { /* AUTH_SYS with 10,000 groups */
		struct xdr_enc x;
		xdr_enc_init(&x, 1 << 20);
		CHECK_OK(xdr_enc_u32(&x, 7) || xdr_enc_u32(&x, RPC_CALL) || xdr_enc_u32(&x, 2) ||
			 xdr_enc_u32(&x, NFS_PROG) || xdr_enc_u32(&x, 3) || xdr_enc_u32(&x, 0) ||
			 xdr_enc_u32(&x, RPC_AUTH_SYS) || xdr_enc_u32(&x, 4 * (10000 + 5)) ||
			 xdr_enc_u32(&x, 0) || xdr_enc_string(&x, "h") || xdr_enc_u32(&x, 0) ||
			 xdr_enc_u32(&x, 0) || xdr_enc_u32(&x, 10000));
		for (int i = 0; i < 10000; i++)
			CHECK_OK(xdr_enc_u32(&x, (uint32_t)i));
		CHECK_OK(xdr_enc_u32(&x, 0) || xdr_enc_u32(&x, 0));
		CHECK_OK(rpc_clnt_send_record(fd, x.buf, x.len));
		xdr_enc_destroy(&x);
		expect_auth_error_then_ok(fd);
		break;
	}
	case 4: { /* a call header cut short at some word */
		uint32_t hdr[10] = {htonl(9), 0, htonl(2), htonl(NFS_PROG), htonl(3), 0,
				    htonl(1), htonl(400), 0, 0};
		size_t cut = 4 * (1 + rng_below(r, 9));
		send_record(fd, hdr, cut);
		expect_dropped(fd, "truncated header");
		break;
	}
	case 5: { /* an unframed byte stream */
		for (int i = 0; i < 16; i++) {
			for (size_t j = 0; j < sizeof(buf); j++)
				buf[j] = (uint8_t)rng_next(r);
			if (send(fd, buf, sizeof(buf), MSG_NOSIGNAL) < 0)
				break;
		}
		expect_dropped(fd, "unframed bytes");
		break;
	}
	case 6: { /* a stray REPLY, then a good call on the same connection */
		uint32_t reply[6] = {htonl(12345), htonl(RPC_REPLY), 0, 0, 0, 0};
		struct rpc_reply_hdr rh;
		send_record(fd, reply, sizeof(reply));
		CHECK_OK(rpc_clnt_call(fd, 5, NFS_PROG, 3, 0, NULL, NULL, NULL, NULL, NULL, &rh));
		close(fd);
		break;
	}
	case 7: { /* 10,000 calls whose replies are never read */
		size_t n = 0;
		for (int i = 0; i < 10000; i++) {
			uint32_t call[10] = {htonl((uint32_t)i), 0, htonl(2), htonl(NFS_PROG),
					     htonl(3), 0, 0, 0, 0, 0};
			uint8_t rec[44] = {0x80, 0, 0, 40};
			memcpy(rec + 4, call, 40);
			if (n + sizeof(rec) > sizeof(buf)) {
				if (send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
					break;
				n = 0;
			}
			memcpy(buf + n, rec, sizeof(rec));
			n += sizeof(rec);
		}
		close(fd);
		break;
	}
	}
	atomic_fetch_add(&hostile_rounds, 1);
}

static void *hostile(void *arg)
{
	struct rng r;
	rng_seed(&r, (uint64_t)(uintptr_t)arg);
	for (int i = 0; !atomic_load(&stop); i++)
		hostile_once(&r, (int)((i + (uintptr_t)arg) % 8));
	return NULL;
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	struct tc_jnfsd j;
	const char *args[] = {"--listen", "127.0.0.1:0", "--rpcbind", "off", "--threads", "4",
			      "--stall-timeout", "300", NULL};
	tc_jnfsd_start(&j, argv[1], args);
	port = j.port[0];

	/* dozens of connections stalled mid-record, all at once */
	int stalled[40];
	for (int i = 0; i < 40; i++) {
		stalled[i] = tc_connect(port, false);
		uint8_t h[6] = {0x80, 0, 0, 64, 0, 0};
		tc_send_raw(stalled[i], h, sizeof(h));
	}

	pthread_t good, bad[4];
	CHECK_OK(pthread_create(&good, NULL, good_client, NULL));
	for (uintptr_t i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&bad[i], NULL, hostile, (void *)(i + 1)));
	for (int i = 0; i < 40; i++)
		expect_dropped(stalled[i], "stalled connection");
	usleep(RUN_MS * 1000);
	atomic_store(&stop, true);
	pthread_join(good, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(bad[i], NULL);
	printf("%llu good calls, all answered, while %llu hostile connections ran\n",
	       (unsigned long long)good_calls, (unsigned long long)hostile_rounds);
	CHECK(good_calls > 100);
	CHECK(hostile_rounds >= 16);

	/* still serving, the counters saw it all */
	CHECK_OK(kill(j.pid, 0));
	int fd = tc_connect(port, false);
	struct rpc_reply_hdr rh;
	CHECK_OK(rpc_clnt_call(fd, 1, NFS_PROG, 4, 0, NULL, NULL, NULL, NULL, NULL, &rh));
	close(fd);
	CHECK(tc_jnfsd_stat(&j, "rpc.connections_garbage") > 0);
	CHECK(tc_jnfsd_stat(&j, "rpc.connections_too_big") > 0);
	CHECK(tc_jnfsd_stat(&j, "rpc.connections_stalled") >= 40);
	CHECK(tc_jnfsd_stat(&j, "rpc.replies.auth_error") > 0);
	CHECK(tc_jnfsd_stat(&j, "rpc.cb.unmatched") > 0);
	int status = tc_jnfsd_stop(&j);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	TEST_PASS("hostile input never hurts a good connection");
	return 0;
}
