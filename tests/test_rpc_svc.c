/*
 * test_rpc_svc.c - the RPC service end to end over loopback, in process:
 * every RFC 5531 error, credentials reaching the handler as an argument,
 * multi-fragment calls, a 1 MiB payload through the zero-copy paths,
 * the maximum record size, replies out of call order, deferral completed
 * by another thread or woken, IPv6, the connection limit (the oldest idle
 * connection makes room), the stall timeout, shutdown with parked
 * requests, the counters; reply space (svc.h invariants 6 and 7: a client
 * that never reads cannot make the server build more replies than its
 * connection's limit, held calls all run once it reads, a connection whose
 * replies never drain is dropped), reply bounds per procedure and per call,
 * the encoded() hook (invariant 8), per-connection data with its
 * closed() and free() hooks (invariant 9), and svc_synchronize() (waits
 * for the handlers running when called, not for parked requests nor for
 * handlers that start later).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/time.h"
#include "check.h"
#include "rpc/clnt.h"
#include "rpc/record.h"
#include "rpc/svc.h"
#include "rpc/testprog.h"
#include "rpc/rpc_test.h"
#include <arpa/inet.h>

static struct testprog_ctx ctx;

static struct svc *start(struct svc_config *cfg, uint16_t *port, uint16_t *port6)
{
	struct svc *s = svc_create(cfg);
	CHECK_OK(svc_add_program(s, &testprog, &ctx));
	CHECK_OK(svc_listen(s, "127.0.0.1:0", port));
	if (port6)
		CHECK_OK(svc_listen(s, "[::1]:0", port6));
	CHECK_OK(svc_start(s));
	return s;
}

static void expect_accept(int fd, uint32_t xid, uint32_t stat)
{
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	free(tc_recv_reply(fd, &rh, &d));
	CHECK_EQ(rh.xid, xid);
	CHECK_EQ(rh.reply_stat, RPC_MSG_ACCEPTED);
	CHECK_EQ(rh.stat, stat);
}

static void expect_auth(int fd, uint32_t xid, uint32_t auth)
{
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	free(tc_recv_reply(fd, &rh, &d));
	CHECK_EQ(rh.xid, xid);
	CHECK_EQ(rh.reply_stat, RPC_MSG_DENIED);
	CHECK_EQ(rh.stat, RPC_AUTH_ERROR);
	CHECK_EQ(rh.auth_stat, auth);
}

static void null_ok(int fd, uint32_t xid)
{
	tc_send_call(fd, xid, TESTPROG, 3, TP_NULL, NULL, NULL, 0);
	expect_accept(fd, xid, RPC_SUCCESS);
}

/* a raw call with an arbitrary credential body */
static void send_cred_vers(int fd, uint32_t xid, uint32_t vers, uint32_t flavor, const void *body,
			   uint32_t len)
{
	struct xdr_enc x;
	xdr_enc_init(&x, 1 << 20);
	CHECK_OK(xdr_enc_u32(&x, xid) || xdr_enc_u32(&x, RPC_CALL) || xdr_enc_u32(&x, 2) ||
		 xdr_enc_u32(&x, TESTPROG) || xdr_enc_u32(&x, vers) || xdr_enc_u32(&x, TP_NULL) ||
		 xdr_enc_u32(&x, flavor) || xdr_enc_opaque(&x, body, len) ||
		 xdr_enc_u32(&x, 0) || xdr_enc_u32(&x, 0));
	CHECK_OK(rpc_clnt_send_record(fd, x.buf, x.len));
	xdr_enc_destroy(&x);
}

static void send_cred(int fd, uint32_t xid, uint32_t flavor, const void *body, uint32_t len)
{
	send_cred_vers(fd, xid, 3, flavor, body, len);
}

static void test_errors(uint16_t port)
{
	int fd = tc_connect(port, false);
	uint8_t args[8] = {0};
	null_ok(fd, 1);
	tc_send_call(fd, 2, 0x20000999, 3, 0, NULL, NULL, 0);
	expect_accept(fd, 2, RPC_PROG_UNAVAIL);

	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	tc_send_call(fd, 3, TESTPROG, 9, 0, NULL, NULL, 0);
	free(tc_recv_reply(fd, &rh, &d));
	CHECK(rh.xid == 3 && rh.stat == RPC_PROG_MISMATCH && rh.low == 2 && rh.high == 4);

	tc_send_call(fd, 4, TESTPROG, 3, 99, NULL, NULL, 0);
	expect_accept(fd, 4, RPC_PROC_UNAVAIL);
	tc_send_call(fd, 5, TESTPROG, 2, TP_ECHO, NULL, NULL, 0); /* v2 has only NULL */
	expect_accept(fd, 5, RPC_PROC_UNAVAIL);
	/* ECHO claiming 8 bytes of data and carrying 4 */
	args[3] = 8;
	tc_send_call(fd, 6, TESTPROG, 3, TP_ECHO, NULL, args, 8);
	expect_accept(fd, 6, RPC_GARBAGE_ARGS);
	tc_send_call(fd, 7, TESTPROG, 3, TP_SYSERR, NULL, NULL, 0);
	expect_accept(fd, 7, RPC_SYSTEM_ERR);
	tc_send_call(fd, 8, TESTPROG, 3, TP_BIG, NULL, NULL, 0);
	expect_accept(fd, 8, RPC_SYSTEM_ERR);
	tc_send_call(fd, 9, TESTPROG, 3, TP_GARBAGE, NULL, NULL, 0);
	expect_accept(fd, 9, RPC_GARBAGE_ARGS);

	/* rpcvers 3 */
	uint8_t raw[24] = {0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 3};
	CHECK_OK(rpc_clnt_send_record(fd, raw, sizeof(raw)));
	free(tc_recv_reply(fd, &rh, &d));
	CHECK(rh.xid == 10 && rh.reply_stat == RPC_MSG_DENIED && rh.stat == RPC_MISMATCH &&
	      rh.low == 2 && rh.high == 2);

	/* credentials */
	uint8_t body[8] = {0};
	send_cred(fd, 11, RPC_RPCSEC_GSS, body, 8);
	expect_auth(fd, 11, RPC_AUTH_TOOWEAK);
	send_cred(fd, 12, RPC_AUTH_DH, body, 8);
	expect_auth(fd, 12, RPC_AUTH_BADCRED);
	struct rpc_cred many = {.flavor = RPC_AUTH_SYS, .uid = 1, .gid = 1, .ngids = 16};
	tc_send_call(fd, 13, TESTPROG, 3, TP_NULL, &many, NULL, 0);
	expect_accept(fd, 13, RPC_SUCCESS);
	send_cred(fd, 14, RPC_AUTH_SYS, body, 8); /* a truncated AUTH_SYS body */
	expect_auth(fd, 14, RPC_AUTH_BADCRED);

	/* the connection survived all of it */
	null_ok(fd, 15);
	close(fd);
	TEST_PASS("rfc 5531 errors");
}

static void test_cred_argument(uint16_t port)
{
	int fd = tc_connect(port, false);
	struct rpc_cred c = {.flavor = RPC_AUTH_SYS, .uid = 1234, .gid = 55, .ngids = 2,
			     .gids = {7, 8}};
	strcpy(c.machine, "box");
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	uint32_t v[5];
	char m[300];
	tc_send_call(fd, 1, TESTPROG, 3, TP_WHOAMI, &c, NULL, 0);
	uint8_t *b = tc_recv_reply(fd, &rh, &d);
	CHECK(rh.stat == RPC_SUCCESS);
	for (int i = 0; i < 4; i++)
		CHECK_OK(xdr_dec_u32(&d, &v[i]));
	CHECK(v[0] == RPC_AUTH_SYS && v[1] == 1234 && v[2] == 55 && v[3] == 2);
	CHECK_OK(xdr_dec_u32(&d, &v[4]));
	CHECK_EQ(v[4], 7);
	CHECK_OK(xdr_dec_u32(&d, &v[4]));
	CHECK_EQ(v[4], 8);
	CHECK_OK(xdr_dec_string(&d, m, 255));
	CHECK(strcmp(m, "box") == 0);
	free(b);
	tc_send_call(fd, 2, TESTPROG, 3, TP_WHOAMI, NULL, NULL, 0);
	b = tc_recv_reply(fd, &rh, &d);
	CHECK_OK(xdr_dec_u32(&d, &v[0]) || xdr_dec_u32(&d, &v[1]));
	CHECK(v[0] == RPC_AUTH_NONE && v[1] == 65534);
	free(b);
	close(fd);
	TEST_PASS("credential as argument");
}

static void test_big_fragments(uint16_t port, uint16_t port6)
{
	int fd = tc_connect(port6, true);
	size_t n = 1 << 20;
	uint8_t *payload = malloc(n);
	for (size_t i = 0; i < n; i++)
		payload[i] = (uint8_t)(i * 31 + 7);
	struct xdr_enc x;
	xdr_enc_init(&x, 2 << 20);
	CHECK_OK(rpc_enc_call_hdr(&x, 42, TESTPROG, 3, TP_ECHO, NULL));
	CHECK_OK(xdr_enc_opaque(&x, payload, (uint32_t)n));
	/* send the record as three fragments of odd sizes */
	size_t cuts[] = {0, 1001, 700001, x.len};
	for (int f = 0; f < 3; f++) {
		uint32_t flen = (uint32_t)(cuts[f + 1] - cuts[f]);
		uint32_t h = flen | (f == 2 ? REC_LAST_FRAG : 0);
		uint8_t hb[4] = {(uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8),
				 (uint8_t)h};
		tc_send_raw(fd, hb, 4);
		tc_send_raw(fd, x.buf + cuts[f], flen);
	}
	xdr_enc_destroy(&x);
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	const void *p;
	uint32_t len;
	uint8_t *b = tc_recv_reply(fd, &rh, &d);
	CHECK(rh.xid == 42 && rh.stat == RPC_SUCCESS);
	CHECK_OK(xdr_dec_opaque_ref(&d, 2 << 20, &p, &len));
	CHECK(len == n && memcmp(p, payload, n) == 0);
	free(b);
	free(payload);
	close(fd);
	TEST_PASS("1 MiB echo in three fragments over IPv6");
}

static void test_max_record(uint16_t port)
{
	int good = tc_connect(port, false);
	int bad = tc_connect(port, false);
	null_ok(good, 1);
	/* a header announcing more than max_record: the server hangs up */
	uint8_t h[4] = {0x80, 0x20, 0x00, 0x00}; /* 2 MiB */
	tc_send_raw(bad, h, 4);
	CHECK(tc_wait_closed(bad, 5000));
	close(bad);
	null_ok(good, 2);
	close(good);
	TEST_PASS("max record size");
}

static void test_out_of_order(uint16_t port)
{
	int fd = tc_connect(port, false);
	uint32_t park[2] = {htonl(300), htonl(77)};
	uint64_t t0 = tc_now_us();
	tc_send_call(fd, 1, TESTPROG, 3, TP_PARK, NULL, park, 8);
	uint32_t later = htonl(100);
	tc_send_call(fd, 2, TESTPROG, 3, TP_LATER, NULL, &later, 4);
	uint32_t wake = htonl(50);
	tc_send_call(fd, 3, TESTPROG, 3, TP_WAKE, NULL, &wake, 4);
	tc_send_call(fd, 4, TESTPROG, 3, TP_NULL, NULL, NULL, 0);
	/* NULL first, then the woken one (50 ms), then LATER (100), then PARK (300) */
	uint32_t order[4] = {4, 3, 2, 1}, val;
	for (int i = 0; i < 4; i++) {
		struct rpc_reply_hdr rh;
		struct xdr_dec d;
		uint8_t *b = tc_recv_reply(fd, &rh, &d);
		CHECK_EQ(rh.xid, order[i]);
		CHECK_EQ(rh.stat, RPC_SUCCESS);
		if (rh.xid == 3) {
			CHECK_OK(xdr_dec_u32(&d, &val));
			CHECK_EQ(val, SVC_WAKE_EVENT);
		} else if (rh.xid == 2) {
			CHECK_OK(xdr_dec_u32(&d, &val));
			CHECK_EQ(val, 100);
		} else if (rh.xid == 1) {
			CHECK_OK(xdr_dec_u32(&d, &val));
			CHECK_EQ(val, 77);
			CHECK(tc_now_us() - t0 >= 300000);
		}
		free(b);
	}
	close(fd);
	TEST_PASS("replies in completion order; defer by timer, completion, wake");
}

/* A version's resume hook runs a parked call's rerun, not the handler:
 * the same WAKE and PARK through version 4 answer what the hook says. */
static void test_resume_hook(uint16_t port)
{
	int fd = tc_connect(port, false);
	uint32_t wake = htonl(20), park[2] = {htonl(20), htonl(77)};
	tc_send_call(fd, 1, TESTPROG, 4, TP_WAKE, NULL, &wake, 4);
	tc_send_call(fd, 2, TESTPROG, 4, TP_PARK, NULL, park, 8);
	tc_send_call(fd, 3, TESTPROG, 4, TP_NULL, NULL, NULL, 0);
	for (int i = 0; i < 3; i++) {
		struct rpc_reply_hdr rh;
		struct xdr_dec d;
		uint32_t val;
		uint8_t *b = tc_recv_reply(fd, &rh, &d);
		CHECK_EQ(rh.stat, RPC_SUCCESS);
		if (rh.xid == 1) {
			CHECK_OK(xdr_dec_u32(&d, &val));
			CHECK_EQ(val, TP_RESUMED + SVC_WAKE_EVENT);
		} else if (rh.xid == 2) {
			CHECK_OK(xdr_dec_u32(&d, &val));
			CHECK_EQ(val, TP_RESUMED + SVC_WAKE_TIMEOUT); /* not its tag, 77 */
		} else {
			CHECK_EQ(rh.xid, 3); /* never parked: no rerun */
		}
		free(b);
	}
	close(fd);
	TEST_PASS("a version's resume hook runs the reruns of its parked calls");
}

/* NULL of version 2 runs on the event loop (SVC_PROC_INLINE): a burst of
 * them in one write, between calls for the pool, a truncated one and one
 * with a bad credential, all answered on the same connection */
static void test_inline(uint16_t port)
{
	int fd = tc_connect(port, false);
	uint32_t park[2] = {htonl(50), htonl(9)};
	tc_send_call(fd, 1, TESTPROG, 3, TP_PARK, NULL, park, 8);
	for (uint32_t i = 0; i < 200; i++)
		tc_send_call(fd, 100 + i, TESTPROG, 2, TP_NULL, NULL, NULL, 0);
	for (uint32_t i = 0; i < 200; i++)
		expect_accept(fd, 100 + i, RPC_SUCCESS);
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	free(tc_recv_reply(fd, &rh, &d));
	CHECK_EQ(rh.xid, 1);
	/* a bad credential on an inline call: the loop answers AUTH_ERROR */
	send_cred_vers(fd, 7, 2, RPC_AUTH_DH, "abcdefgh", 8);
	expect_auth(fd, 7, RPC_AUTH_BADCRED);
	null_ok(fd, 8);
	close(fd);
	TEST_PASS("NULL on the event loop: 200 pipelined calls, a parked call, a bad credential");
}

static void test_counters(struct svc *s)
{
	struct stat_table t;
	struct stat_sink sink = stat_sink_table(&t);
	svc_stats(s, &sink);
	CHECK(stat_table_get(&t, "rpc.calls") >= 20);
	CHECK(stat_table_get(&t, "rpc.replies.prog_unavail") >= 1);
	CHECK(stat_table_get(&t, "rpc.replies.prog_mismatch") >= 1);
	CHECK(stat_table_get(&t, "rpc.replies.proc_unavail") >= 2);
	CHECK(stat_table_get(&t, "rpc.replies.garbage_args") >= 2);
	CHECK(stat_table_get(&t, "rpc.replies.system_err") >= 2);
	CHECK(stat_table_get(&t, "rpc.replies.rpc_mismatch") >= 1);
	CHECK(stat_table_get(&t, "rpc.replies.auth_error") >= 3);
	CHECK(stat_table_get(&t, "rpc.test.v3.echo") >= 1);
	CHECK(stat_table_get(&t, "rpc.test.v3.park") >= 1);
	CHECK(stat_table_get(&t, "rpc.deferred") >= 3);
	CHECK(stat_table_get(&t, "rpc.deferred_timeouts") >= 1);
	CHECK(stat_table_get(&t, "rpc.deferred_wakes") >= 1);
	CHECK(stat_table_get(&t, "rpc.bytes_in") > (1 << 20));
	CHECK(stat_table_get(&t, "rpc.bytes_out") > (1 << 20));
	CHECK(stat_table_get(&t, "rpc.connections_too_big") == 1);
	CHECK(stat_table_get(&t, "rpc.connections_accepted") >= 5);
	TEST_PASS("counters");
}

static uint64_t stat_of(struct svc *s, const char *name)
{
	struct stat_table t;
	struct stat_sink sink = stat_sink_table(&t);
	svc_stats(s, &sink);
	return stat_table_get(&t, name);
}

/* reply_max, reply_bound() and encoded(), through TP_SIZED */
static void test_reply_bounds(uint16_t port)
{
	int fd = tc_connect(port, false);
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	uint32_t calls = atomic_load(&ctx.encoded_calls);

	/* within the bound its arguments give: the hook saw the results */
	uint32_t a[2] = {htonl(100), htonl(50)};
	tc_send_call(fd, 1, TESTPROG, 3, TP_SIZED, NULL, a, 8);
	uint8_t *b = tc_recv_reply(fd, &rh, &d);
	CHECK(rh.xid == 1 && rh.stat == RPC_SUCCESS);
	size_t len = xdr_dec_remaining(&d);
	CHECK_EQ(len, 4 + 4 + 52);
	CHECK_EQ(atomic_load(&ctx.encoded_calls), calls + 1);
	CHECK_EQ(ctx.encoded_len, len);
	CHECK(memcmp(ctx.encoded, d.p, len) == 0);
	free(b);

	/* over the bound from reply_bound() (reply_max would allow it) */
	a[1] = htonl(200);
	tc_send_call(fd, 2, TESTPROG, 3, TP_SIZED, NULL, a, 8);
	expect_accept(fd, 2, RPC_SYSTEM_ERR);
	/* reply_bound() asks for more than reply_max: reply_max holds */
	a[0] = htonl(1 << 20);
	a[1] = htonl(TP_SIZED_MAX);
	tc_send_call(fd, 3, TESTPROG, 3, TP_SIZED, NULL, a, 8);
	expect_accept(fd, 3, RPC_SYSTEM_ERR);
	/* no hook for replies that were not a SUCCESS */
	CHECK_EQ(atomic_load(&ctx.encoded_calls), calls + 1);

	/* exactly reply_max, in pieces spliced from outside the stream */
	a[0] = htonl(TP_SIZED_MAX);
	a[1] = htonl(TP_SIZED_MAX - 8);
	tc_send_call(fd, 4, TESTPROG, 3, TP_SIZED, NULL, a, 8);
	b = tc_recv_reply(fd, &rh, &d);
	CHECK(rh.xid == 4 && rh.stat == RPC_SUCCESS);
	len = xdr_dec_remaining(&d);
	CHECK_EQ(len, TP_SIZED_MAX);
	CHECK_EQ(atomic_load(&ctx.encoded_calls), calls + 2);
	CHECK_EQ(ctx.encoded_len, len);
	CHECK(memcmp(ctx.encoded, d.p, len) == 0);
	free(b);
	null_ok(fd, 5);
	close(fd);
	TEST_PASS("reply bounds per procedure and per call; encoded() sees the results");
}

/* Pipeline n TP_FILL calls of size bytes each in one go (nothing read). */
static void send_fills(int fd, uint32_t n, uint32_t size)
{
	struct xdr_enc x;
	xdr_enc_init(&x, 1 << 20);
	for (uint32_t i = 0; i < n; i++) {
		size_t mark;
		CHECK_OK(xdr_enc_reserve(&x, 4, &mark));
		size_t start = xdr_enc_len(&x);
		CHECK_OK(rpc_enc_call_hdr(&x, 1000 + i, TESTPROG, 3, TP_FILL, NULL));
		CHECK_OK(xdr_enc_u32(&x, size));
		xdr_enc_put_u32_at(&x, mark, REC_LAST_FRAG | (uint32_t)(xdr_enc_len(&x) - start));
	}
	tc_send_raw(fd, x.buf, x.len);
	xdr_enc_destroy(&x);
}

static int small_rcvbuf_connect(uint16_t port)
{
	int fd = tc_connect(port, false), small = 32 * 1024;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	return fd;
}

/*
 * A client pipelines 64 calls whose handlers each allocate 256 KiB for
 * their reply, and reads nothing: with a 2 MiB connection limit no more
 * than 8 such buffers may exist at once (invariant 6), another connection
 * is served meanwhile, and when the client reads, every held call runs
 * (invariant 7). Then, with a send timeout, a client that never reads is
 * dropped and every buffer is freed.
 */
static void test_reply_space(void)
{
	const uint32_t n = 64, size = 256 * 1024, limit = 2 << 20;
	struct svc_config cfg;
	uint16_t port;
	svc_config_default(&cfg);
	cfg.threads = 4;
	cfg.conn_max_buffered = limit;
	struct svc *s = start(&cfg, &port, NULL);
	atomic_store(&ctx.fill_live_max, 0);
	int fd = small_rcvbuf_connect(port);
	send_fills(fd, n, size);
	/* watch the handlers until calls are held and the workers are idle */
	uint64_t t0 = tc_now_us(), held_at = 0;
	while (tc_now_us() - t0 < 10000000 && (!held_at || tc_now_us() - held_at < 300000)) {
		CHECK(atomic_load(&ctx.fill_live_max) <= limit / size);
		if (!held_at && stat_of(s, "rpc.calls_held") > 0)
			held_at = tc_now_us();
		usleep(1000);
	}
	printf("reply buffers alive at most: %u (limit %u)\n", atomic_load(&ctx.fill_live_max),
	       limit / size);
	CHECK(atomic_load(&ctx.fill_live_max) <= limit / size);
	CHECK(held_at != 0);
	int other = tc_connect(port, false);
	null_ok(other, 1);
	close(other);
	/* now read: every call is answered */
	bool seen[64] = {false};
	for (uint32_t i = 0; i < n; i++) {
		struct rpc_reply_hdr rh;
		struct xdr_dec d;
		uint8_t *b = tc_recv_reply(fd, &rh, &d);
		CHECK(rh.stat == RPC_SUCCESS && rh.xid >= 1000 && rh.xid < 1000 + n);
		CHECK(!seen[rh.xid - 1000]);
		seen[rh.xid - 1000] = true;
		CHECK_EQ(xdr_dec_remaining(&d), 4 + size);
		free(b);
	}
	null_ok(fd, 1);
	close(fd);
	CHECK(atomic_load(&ctx.fill_live_max) <= limit / size);
	svc_destroy(s);
	CHECK_EQ(atomic_load(&ctx.fill_live), 0);
	TEST_PASS("reply space: 64 x 256 KiB replies to a client that reads nothing, 2 MiB limit");

	cfg.send_timeout_ns = 300 * NSEC_PER_MSEC;
	s = start(&cfg, &port, NULL);
	fd = small_rcvbuf_connect(port);
	send_fills(fd, n, size);
	uint64_t dropped = 0;
	for (int i = 0; i < 1000 && !dropped; i++) {
		dropped = stat_of(s, "rpc.connections_send_timeout");
		if (!dropped)
			usleep(10000);
	}
	CHECK_EQ(dropped, 1);
	CHECK(tc_wait_closed(fd, 10000));
	close(fd);
	/* the queued replies were discarded and the held calls freed unrun */
	for (int i = 0; i < 1000 && atomic_load(&ctx.fill_live); i++)
		usleep(10000);
	CHECK_EQ(atomic_load(&ctx.fill_live), 0);
	CHECK(stat_of(s, "rpc.calls_held") > 0);
	svc_destroy(s);
	TEST_PASS("send timeout: a client that never reads is dropped, its calls freed");
}

/* Per-connection data: attached once, found again, closed() once the
 * connection closes - by the client or at server stop - then free(). */
static void test_conn_data(void)
{
	struct svc_config cfg;
	uint16_t port;
	svc_config_default(&cfg);
	cfg.threads = 2;
	struct svc *s = start(&cfg, &port, NULL);
	uint32_t closed0 = atomic_load(&ctx.conn_closed), freed0 = atomic_load(&ctx.conn_freed);
	int a = tc_connect(port, false), b = tc_connect(port, false);
	uint32_t mode = 0, other = htonl(1), v;
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	uint8_t *buf;
	for (uint32_t i = 1; i <= 3; i++) {
		tc_send_call(a, i, TESTPROG, 3, TP_CONNDATA, NULL, &mode, 4);
		buf = tc_recv_reply(a, &rh, &d);
		CHECK(rh.stat == RPC_SUCCESS && !xdr_dec_u32(&d, &v));
		CHECK_EQ(v, i); /* the same data on every call of this connection */
		free(buf);
	}
	tc_send_call(b, 1, TESTPROG, 3, TP_CONNDATA, NULL, &mode, 4);
	buf = tc_recv_reply(b, &rh, &d);
	CHECK(rh.stat == RPC_SUCCESS && !xdr_dec_u32(&d, &v));
	CHECK_EQ(v, 1); /* its own */
	free(buf);
	/* data is never replaced, whoever asks */
	tc_send_call(b, 2, TESTPROG, 3, TP_CONNDATA, NULL, &other, 4);
	buf = tc_recv_reply(b, &rh, &d);
	CHECK(rh.stat == RPC_SUCCESS && !xdr_dec_u32(&d, &v));
	CHECK_EQ(v, EBUSY);
	free(buf);
	CHECK_EQ(atomic_load(&ctx.conn_closed), closed0);

	close(a);
	for (int i = 0; i < 1000 && atomic_load(&ctx.conn_freed) == freed0; i++)
		usleep(5000);
	CHECK_EQ(atomic_load(&ctx.conn_closed), closed0 + 1);
	CHECK_EQ(atomic_load(&ctx.conn_freed), freed0 + 1);
	svc_destroy(s); /* b closes with the server */
	CHECK_EQ(atomic_load(&ctx.conn_closed), closed0 + 2);
	CHECK_EQ(atomic_load(&ctx.conn_freed), freed0 + 2);
	CHECK_EQ(atomic_load(&ctx.conn_hook_errors), 0);
	CHECK(tc_wait_closed(b, 5000));
	close(b);
	TEST_PASS("per-connection data: closed() then free(), once each");
}

/* Wait until the server has let go of the calls it answered: a worker
 * sends a reply, then releases what the call held, so a client can read
 * its reply while its connection still counts as busy. */
static void wait_buffered(struct svc *s, uint64_t want)
{
	for (int i = 0; i < 1000 && stat_of(s, "rpc.buffered") != want; i++)
		usleep(5000);
	CHECK_EQ(stat_of(s, "rpc.buffered"), want);
}

static void test_conn_limit(void)
{
	struct svc_config cfg;
	uint16_t port;
	svc_config_default(&cfg);
	cfg.threads = 2;
	cfg.max_conns = 2;
	struct svc *s = start(&cfg, &port, NULL);
	/* a has a call in flight, b is idle: c takes b's place */
	uint32_t park[2] = {htonl(60000), htonl(1)};
	int a = tc_connect(port, false), b = tc_connect(port, false);
	tc_send_call(a, 1, TESTPROG, 3, TP_PARK, NULL, park, 8);
	for (int i = 0; i < 1000 && stat_of(s, "rpc.deferred") < 1; i++)
		usleep(5000);
	uint64_t held = stat_of(s, "rpc.buffered"); /* a's parked call */
	null_ok(b, 1);
	wait_buffered(s, held); /* b idle */
	int c = tc_connect(port, false);
	null_ok(c, 1);
	CHECK(tc_wait_closed(b, 5000));
	close(b);
	/* with c busy too, no connection is idle: d is refused */
	tc_send_call(c, 2, TESTPROG, 3, TP_PARK, NULL, park, 8);
	uint8_t *buf;
	size_t len;
	for (int i = 0; i < 1000 && stat_of(s, "rpc.deferred") < 2; i++)
		usleep(5000);
	int d = tc_connect(port, false);
	CHECK(tc_wait_closed(d, 5000));
	close(d);
	/* once one closes, a new one gets in */
	close(c);
	int ok = 0;
	for (int i = 0; i < 100 && !ok; i++) {
		int e = tc_connect(port, false);
		tc_send_call(e, 3, TESTPROG, 3, TP_NULL, NULL, NULL, 0);
		if (rpc_clnt_recv_record(e, 1 << 16, &buf, &len) == 0) {
			free(buf);
			ok = 1;
		}
		close(e);
		if (!ok)
			usleep(10000);
	}
	CHECK(ok);
	close(a);
	CHECK(stat_of(s, "rpc.connections_refused") >= 1);
	CHECK_EQ(stat_of(s, "rpc.connections_evicted"), 1);
	svc_destroy(s);
	TEST_PASS("connection limit: the idle connection makes room, busy ones do not");
}

static void test_stall_timeout(void)
{
	struct svc_config cfg;
	uint16_t port;
	svc_config_default(&cfg);
	cfg.threads = 2;
	cfg.stall_timeout_ns = 200 * NSEC_PER_MSEC;
	struct svc *s = start(&cfg, &port, NULL);
	int idle = tc_connect(port, false), stalled = tc_connect(port, false);
	null_ok(idle, 1);
	uint8_t part[6] = {0x80, 0, 0, 100, 0, 0}; /* 100 bytes announced, 2 sent */
	tc_send_raw(stalled, part, sizeof(part));
	uint64_t t0 = tc_now_us();
	CHECK(tc_wait_closed(stalled, 5000));
	CHECK(tc_now_us() - t0 >= 150000);
	close(stalled);
	/* a connection with no partial record is not a stalled one */
	null_ok(idle, 2);
	close(idle);
	/* nor does trickling a byte every 50 ms keep a record alive */
	int trickle = tc_connect(port, false);
	uint8_t hdr[4] = {0x80, 0, 0, 200};
	tc_send_raw(trickle, hdr, 4);
	bool closed = false;
	t0 = tc_now_us();
	for (int i = 0; i < 100 && !closed; i++) {
		uint8_t b = 0;
		if (send(trickle, &b, 1, MSG_NOSIGNAL) != 1)
			break;
		closed = tc_wait_closed(trickle, 50);
	}
	CHECK(tc_now_us() - t0 < 3000000);
	close(trickle);
	struct stat_table t;
	struct stat_sink sink = stat_sink_table(&t);
	svc_stats(s, &sink);
	CHECK_EQ(stat_table_get(&t, "rpc.connections_stalled"), 2);
	svc_destroy(s);
	TEST_PASS("stall timeout");
}

static void test_shutdown_with_parked(void)
{
	struct svc_config cfg;
	uint16_t port;
	svc_config_default(&cfg);
	cfg.threads = 2;
	struct svc *s = start(&cfg, &port, NULL);
	int fd = tc_connect(port, false);
	for (uint32_t i = 0; i < 10; i++)
		tc_send_call(fd, 100 + i, TESTPROG, 3, TP_PARK_FOREVER, NULL, NULL, 0);
	uint32_t park[2] = {htonl(60000), htonl(1)};
	tc_send_call(fd, 200, TESTPROG, 3, TP_PARK, NULL, park, 8);
	null_ok(fd, 1); /* all were dispatched before this answer */
	uint32_t before = atomic_load(&ctx.shutdown_wakes);
	svc_stop(s);
	CHECK_EQ(atomic_load(&ctx.shutdown_wakes) - before, 10);
	CHECK(tc_wait_closed(fd, 5000));
	close(fd);
	svc_destroy(s);
	TEST_PASS("shutdown finishes parked requests");
}

/* HOLDPROG 1: the handler runs until the test releases it (10 s at most). */
#define HOLDPROG 0x20000102u
static _Atomic int hold_state; /* 0 not running, 1 running, 2 released */
static _Atomic int synced;

static enum svc_stat do_hold(struct svc_req *rq, const struct rpc_cred *cred, void *a, void *r)
{
	atomic_store(&hold_state, 1);
	for (int i = 0; i < 10000 && atomic_load(&hold_state) != 2; i++)
		usleep(1000);
	return SVC_OK;
}

static const struct svc_proc hold_procs[] = {
	{.name = "null", .decode = svc_dec_void, .handler = do_hold, .encode = svc_enc_void,
	 .reply_max = SVC_REPLY_HDR},
	{.name = "hold", .decode = svc_dec_void, .handler = do_hold, .encode = svc_enc_void,
	 .reply_max = SVC_REPLY_HDR},
};
static const struct svc_version hold_versions[] = {{.vers = 1, .nprocs = 2, .procs = hold_procs}};
static const struct svc_program holdprog = {
	.prog = HOLDPROG, .name = "hold", .nversions = 1, .versions = hold_versions};

static void *sync_thread(void *arg)
{
	svc_synchronize(arg);
	atomic_store(&synced, 1);
	return NULL;
}

static void test_synchronize(void)
{
	struct svc_config cfg;
	uint16_t port;
	svc_config_default(&cfg);
	cfg.threads = 2;
	struct svc *s = svc_create(&cfg);
	CHECK_OK(svc_add_program(s, &testprog, &ctx));
	CHECK_OK(svc_add_program(s, &holdprog, NULL));
	CHECK_OK(svc_listen(s, "127.0.0.1:0", &port));
	CHECK_OK(svc_start(s));

	/* nothing running: returns at once (the test's timeout watches) */
	svc_synchronize(s);
	/* a parked request runs no handler code: not waited for */
	int p = tc_connect(port, false);
	uint64_t d0 = stat_of(s, "rpc.deferred");
	tc_send_call(p, 1, TESTPROG, 3, TP_PARK_FOREVER, NULL, NULL, 0);
	for (int i = 0; i < 2000 && stat_of(s, "rpc.deferred") == d0; i++)
		usleep(5000);
	CHECK(stat_of(s, "rpc.deferred") > d0);
	svc_synchronize(s);

	/* a running handler is waited for */
	int a = tc_connect(port, false), b = tc_connect(port, false);
	tc_send_call(a, 1, HOLDPROG, 1, 1, NULL, NULL, 0);
	for (int i = 0; i < 2000 && atomic_load(&hold_state) != 1; i++)
		usleep(5000);
	CHECK_EQ(atomic_load(&hold_state), 1);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, sync_thread, s));
	/* meanwhile the other worker serves new calls (not waited for) */
	null_ok(b, 2);
	null_ok(b, 3);
	usleep(100 * 1000);
	CHECK_EQ(atomic_load(&synced), 0); /* the held handler has not returned */
	atomic_store(&hold_state, 2);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_EQ(atomic_load(&synced), 1);
	expect_accept(a, 1, RPC_SUCCESS);
	svc_destroy(s); /* the parked request ends with the server */
	close(a);
	close(b);
	close(p);
	TEST_PASS("svc_synchronize: waits for running handlers only");
}

int main(void)
{
	struct svc_config cfg;
	uint16_t port, port6;
	svc_config_default(&cfg);
	cfg.threads = 4;
	cfg.max_record = 1100 * 1024;
	cfg.max_reply = 1100 * 1024;
	struct svc *s = start(&cfg, &port, &port6);
	test_errors(port);
	test_cred_argument(port);
	test_big_fragments(port, port6);
	test_max_record(port);
	test_out_of_order(port);
	test_resume_hook(port);
	test_inline(port);
	test_reply_bounds(port);
	test_counters(s);
	svc_destroy(s);
	test_reply_space();
	test_conn_data();
	test_conn_limit();
	test_stall_timeout();
	test_shutdown_with_parked();
	test_synchronize();
	return 0;
}
