/*
 * test_rpc_drc.c - the duplicate request cache returns the
 * cached reply for a retransmission (same connection, or a new one from
 * the same port as a reconnecting Linux client makes: the handler does
 * not run again), tells apart a reused xid with other arguments and
 * another client at the same address sending the same xid and arguments, and stays within its bounds (drc.h invariants 1 and 2) under 10,000
 * distinct calls. A retransmission whose original is still running is
 * dropped (checked at the cache level, DRC_IN_PROGRESS).
 */
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "rpc/drc.h"
#include "rpc/rpc_test.h"
#include "rpc/svc.h"
#include "rpc/testprog.h"

static struct testprog_ctx ctx;

/* A connection to port from local_port (0: any); *bound: the local port. */
static int connect_from(uint16_t port, uint16_t local_port, uint16_t *bound)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	int one = 1;
	CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(local_port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_OK(bind(fd, (struct sockaddr *)&a, sizeof(a)));
	socklen_t al = sizeof(a);
	CHECK_OK(getsockname(fd, (struct sockaddr *)&a, &al));
	*bound = ntohs(a.sin_port);
	a.sin_port = htons(port);
	CHECK_OK(connect(fd, (struct sockaddr *)&a, sizeof(a)));
	return fd;
}

/* Close with a reset, so that the port is free again at once (no
 * TIME_WAIT), as a client that reconnects from it needs. */
static void close_reset(int fd)
{
	struct linger l = {1, 0};
	CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)));
	close(fd);
}

static uint32_t incr(int fd, uint32_t xid, uint32_t n)
{
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	uint32_t v, arg = htonl(n);
	tc_send_call(fd, xid, TESTPROG, 3, TP_INCR, NULL, &arg, 4);
	uint8_t *b = tc_recv_reply(fd, &rh, &d);
	CHECK(rh.xid == xid && rh.stat == RPC_SUCCESS);
	CHECK_OK(xdr_dec_u32(&d, &v));
	free(b);
	return v;
}

static uint64_t stat(struct svc *s, const char *name)
{
	struct stat_table t;
	struct stat_sink sink = stat_sink_table(&t);
	svc_stats(s, &sink);
	return stat_table_get(&t, name);
}

static void test_unit_bounds(void)
{
	struct drc *d = drc_create(10, 1000);
	struct drc_key k;
	struct drc_entry *e;
	uint8_t *reply;
	size_t len;
	uint8_t body[300] = {1, 2, 3};
	memset(&k, 0, sizeof(k));
	for (uint32_t i = 0; i < 100; i++) {
		k.xid = i;
		CHECK_EQ(drc_begin(d, &k, &e, &reply, &len), DRC_MISS);
		CHECK_EQ(drc_begin(d, &k, &e, &reply, &len), DRC_IN_PROGRESS);
		drc_finish(d, e, body, 64 + (i % 3) * 100);
	}
	struct stat_table t;
	struct stat_sink sink = stat_sink_table(&t);
	drc_stats(d, &sink, "x");
	CHECK(stat_table_get(&t, "x.drc_entries") <= 10);
	CHECK(stat_table_get(&t, "x.drc_bytes") <= 1000);
	CHECK(stat_table_get(&t, "x.drc_evictions") >= 90);
	/* the newest is there, the oldest is gone */
	k.xid = 99;
	CHECK_EQ(drc_begin(d, &k, &e, &reply, &len), DRC_HIT);
	CHECK(len == 64 && reply[2] == 3);
	free(reply);
	k.xid = 0;
	CHECK_EQ(drc_begin(d, &k, &e, &reply, &len), DRC_MISS);
	drc_abort(d, e);
	/* invariant 2: no more than max_entries in progress */
	struct drc_entry *held[10];
	for (uint32_t i = 0; i < 10; i++) {
		k.xid = 1000 + i;
		CHECK_EQ(drc_begin(d, &k, &held[i], &reply, &len), DRC_MISS);
	}
	k.xid = 2000;
	CHECK_EQ(drc_begin(d, &k, &e, &reply, &len), DRC_UNCACHED);
	for (int i = 0; i < 10; i++)
		drc_abort(d, held[i]);
	/* a reply larger than the cache is not kept */
	static uint8_t huge[2000];
	k.xid = 3000;
	CHECK_EQ(drc_begin(d, &k, &e, &reply, &len), DRC_MISS);
	drc_finish(d, e, huge, sizeof(huge));
	CHECK_EQ(drc_begin(d, &k, &e, &reply, &len), DRC_MISS);
	drc_abort(d, e);
	drc_destroy(d);
	TEST_PASS("drc bounds (unit)");
}

int main(void)
{
	test_unit_bounds();

	struct svc_config cfg;
	uint16_t port;
	svc_config_default(&cfg);
	cfg.threads = 2;
	cfg.drc_max_entries = 100;
	cfg.drc_max_bytes = 100 * 32;
	struct svc *s = svc_create(&cfg);
	CHECK_OK(svc_add_program(s, &testprog, &ctx));
	CHECK_OK(svc_listen(s, "127.0.0.1:0", &port));
	CHECK_OK(svc_start(s));

	uint16_t lport, lport2;
	int fd = connect_from(port, 0, &lport);
	CHECK_EQ(incr(fd, 500, 5), 5);
	CHECK_EQ(incr(fd, 500, 5), 5); /* retransmission: cached reply */
	CHECK_EQ(atomic_load(&ctx.incr_runs), 1);
	close_reset(fd);
	fd = connect_from(port, lport, &lport2); /* a reconnecting client */
	CHECK_EQ(lport2, lport);
	CHECK_EQ(incr(fd, 500, 5), 5);
	CHECK_EQ(atomic_load(&ctx.incr_runs), 1);
	CHECK_EQ(stat(s, "rpc.drc_hits"), 2);
	/* another client at the same address, same xid and arguments: its
	 * own call, which runs */
	int other = connect_from(port, 0, &lport2);
	CHECK(lport2 != lport);
	CHECK_EQ(incr(other, 500, 5), 10);
	CHECK_EQ(atomic_load(&ctx.incr_runs), 2);
	CHECK_EQ(stat(s, "rpc.drc_hits"), 2);
	close(other);
	CHECK_EQ(incr(fd, 500, 7), 17); /* same xid, other arguments: a new call */
	CHECK_EQ(incr(fd, 501, 5), 22);
	CHECK_EQ(atomic_load(&ctx.incr_runs), 4);
	TEST_PASS("retransmission gets the cached reply");

	/* bounds under load: 10,000 distinct calls */
	for (uint32_t i = 0; i < 10000; i++)
		incr(fd, 10000 + i, 1);
	CHECK_EQ(atomic_load(&ctx.incr_runs), 10004);
	CHECK(stat(s, "rpc.drc_entries") <= 100);
	CHECK(stat(s, "rpc.drc_bytes") <= 100 * 32);
	CHECK(stat(s, "rpc.drc_evictions") >= 9900);
	CHECK_EQ(stat(s, "rpc.drc_in_progress_entries"), 0);
	/* the latest calls are still cached, the first ones are gone */
	uint32_t before = atomic_load(&ctx.counter);
	CHECK_EQ(incr(fd, 19999, 1), before);
	CHECK_EQ(atomic_load(&ctx.incr_runs), 10004);
	CHECK_EQ(incr(fd, 10000, 1), before + 1);
	CHECK_EQ(atomic_load(&ctx.incr_runs), 10005);
	TEST_PASS("drc stays within its bound");

	/* idempotent procedures do not go through the cache */
	uint32_t park[2] = {htonl(0), htonl(9)};
	uint64_t hits = stat(s, "rpc.drc_hits");
	for (int i = 0; i < 2; i++) {
		struct rpc_reply_hdr rh;
		struct xdr_dec d;
		tc_send_call(fd, 777, TESTPROG, 3, TP_PARK, NULL, park, 8);
		free(tc_recv_reply(fd, &rh, &d));
	}
	CHECK_EQ(stat(s, "rpc.drc_hits"), hits);
	close(fd);
	svc_destroy(s);
	TEST_PASS("idempotent calls bypass the drc");
	return 0;
}
