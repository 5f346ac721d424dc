/*
 * test_rpc_backchannel.c - calls from the server to a client
 * over the client's own connection. The client calls TP_CB; its handler
 * parks the call and sends a CALL (TEST_CBPROG) back on the same
 * connection; the client answers it, the server matches the REPLY by xid
 * and completes the parked call with what the client answered. Also: an
 * unanswered call times out cleanly, a cancelled one finishes with
 * -ECANCELED, an RPC error from the client is -EPROTO, a REPLY nobody
 * waits for is counted and ignored, and a connection that closes fails
 * its pending call with -ECONNRESET.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <unistd.h>

#include "base/time.h"
#include "check.h"
#include "rpc/clnt.h"
#include "rpc/rpc_test.h"
#include "rpc/svc.h"
#include "rpc/testprog.h"

static struct testprog_ctx ctx;

static void send_cb(int fd, uint32_t xid, uint32_t value, uint32_t timeout_ms, uint32_t mode)
{
	uint32_t args[3] = {htonl(value), htonl(timeout_ms), htonl(mode)};
	tc_send_call(fd, xid, TESTPROG, 3, TP_CB, NULL, args, sizeof(args));
}

/* Receive the server's CALL; returns its xid and argument. */
static uint32_t recv_cb_call(int fd, uint32_t *arg)
{
	size_t len;
	uint8_t *b = tc_recv(fd, &len);
	struct xdr_dec d;
	struct rpc_call_hdr h;
	struct rpc_cred cred;
	xdr_dec_init(&d, b, len);
	CHECK_OK(rpc_dec_call_hdr(&d, &h));
	CHECK(h.prog == TEST_CBPROG && h.vers == 1 && h.proc == TEST_CB_PROC);
	CHECK_EQ(rpc_auth_check(&h, &cred), RPC_AUTH_OK);
	CHECK_OK(xdr_dec_u32(&d, arg));
	CHECK_EQ(xdr_dec_remaining(&d), 0);
	free(b);
	return h.xid;
}

static void send_cb_reply(int fd, uint32_t xid, uint32_t stat, uint32_t value)
{
	struct xdr_enc x;
	uint8_t buf[64];
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(rpc_enc_accepted(&x, xid, stat));
	if (stat == RPC_SUCCESS)
		CHECK_OK(xdr_enc_u32(&x, value));
	CHECK_OK(rpc_clnt_send_record(fd, buf, x.len));
}

/* The reply to our TP_CB call: (status, value). */
static void recv_cb_result(int fd, uint32_t xid, int32_t *status, uint32_t *value)
{
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	uint32_t st;
	uint8_t *b = tc_recv_reply(fd, &rh, &d);
	CHECK(rh.xid == xid && rh.stat == RPC_SUCCESS);
	CHECK_OK(xdr_dec_u32(&d, &st) || xdr_dec_u32(&d, value));
	*status = (int32_t)st;
	free(b);
}

static uint64_t stat(struct svc *s, const char *name)
{
	struct stat_table t;
	struct stat_sink sink = stat_sink_table(&t);
	svc_stats(s, &sink);
	return stat_table_get(&t, name);
}

int main(void)
{
	struct svc_config cfg;
	uint16_t port;
	int32_t status;
	uint32_t value, arg, cbxid;
	svc_config_default(&cfg);
	cfg.threads = 2;
	struct svc *s = svc_create(&cfg);
	CHECK_OK(svc_add_program(s, &testprog, &ctx));
	CHECK_OK(svc_listen(s, "127.0.0.1:0", &port));
	CHECK_OK(svc_start(s));
	int fd = tc_connect(port, false);

	/* answered: the server sees our reply */
	send_cb(fd, 1, 21, 5000, CB_MODE_NORMAL);
	cbxid = recv_cb_call(fd, &arg);
	CHECK_EQ(arg, 21);
	send_cb_reply(fd, cbxid, RPC_SUCCESS, arg * 2);
	recv_cb_result(fd, 1, &status, &value);
	CHECK_EQ(status, 0);
	CHECK_EQ(value, 42);
	TEST_PASS("backchannel call answered");

	/* several at once, answered in reverse order */
	uint32_t xids[5], args5[5];
	for (uint32_t i = 0; i < 5; i++)
		send_cb(fd, 10 + i, 100 + i, 5000, CB_MODE_NORMAL);
	for (int i = 0; i < 5; i++)
		xids[i] = recv_cb_call(fd, &args5[i]);
	for (int i = 4; i >= 0; i--)
		send_cb_reply(fd, xids[i], RPC_SUCCESS, args5[i] + 1000);
	for (int i = 0; i < 5; i++) {
		struct rpc_reply_hdr rh;
		struct xdr_dec d;
		uint32_t st, v;
		uint8_t *b = tc_recv_reply(fd, &rh, &d);
		CHECK(rh.xid >= 10 && rh.xid < 15);
		CHECK_OK(xdr_dec_u32(&d, &st) || xdr_dec_u32(&d, &v));
		CHECK(st == 0 && v == 100 + (rh.xid - 10) + 1000);
		free(b);
	}
	TEST_PASS("concurrent backchannel calls matched by xid");

	/* unanswered: times out after 200 ms, the connection stays usable */
	uint64_t t0 = tc_now_us();
	send_cb(fd, 2, 5, 200, CB_MODE_NORMAL);
	cbxid = recv_cb_call(fd, &arg);
	recv_cb_result(fd, 2, &status, &value);
	CHECK_EQ(status, -ETIMEDOUT);
	CHECK(tc_now_us() - t0 >= 190000);
	/* a late reply to the timed-out call is counted and ignored */
	send_cb_reply(fd, cbxid, RPC_SUCCESS, 1);
	tc_send_call(fd, 3, TESTPROG, 3, TP_NULL, NULL, NULL, 0);
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	free(tc_recv_reply(fd, &rh, &d));
	CHECK(rh.xid == 3 && rh.stat == RPC_SUCCESS);
	CHECK_EQ(stat(s, "rpc.cb.timeouts"), 1);
	/* the stray reply and the NULL call may run on two workers at once */
	for (int i = 0; i < 200 && stat(s, "rpc.cb.unmatched") != 1; i++)
		usleep(10000);
	CHECK_EQ(stat(s, "rpc.cb.unmatched"), 1);
	TEST_PASS("unanswered backchannel call times out cleanly");

	/* cancelled */
	send_cb(fd, 4, 6, 60000, CB_MODE_CANCEL);
	cbxid = recv_cb_call(fd, &arg);
	recv_cb_result(fd, 4, &status, &value);
	CHECK_EQ(status, -ECANCELED);
	CHECK_EQ(stat(s, "rpc.cb.cancelled"), 1);
	TEST_PASS("backchannel call cancelled");

	/* the client answers with an RPC error */
	send_cb(fd, 5, 7, 5000, CB_MODE_NORMAL);
	cbxid = recv_cb_call(fd, &arg);
	send_cb_reply(fd, cbxid, RPC_PROC_UNAVAIL, 0);
	recv_cb_result(fd, 5, &status, &value);
	CHECK_EQ(status, -EPROTO);
	TEST_PASS("rpc error from the client");

	/* the connection closes with a call pending */
	uint32_t done_before = atomic_load(&ctx.cb_done);
	send_cb(fd, 6, 8, 60000, CB_MODE_NORMAL);
	recv_cb_call(fd, &arg);
	close(fd);
	for (int i = 0; i < 500 && atomic_load(&ctx.cb_done) == done_before; i++)
		usleep(10000);
	CHECK_EQ(atomic_load(&ctx.cb_done), done_before + 1);
	CHECK_EQ(atomic_load(&ctx.cb_last_status), -ECONNRESET);
	TEST_PASS("pending call fails when the connection closes");

	/* at shutdown a pending call fails too, and svc_stop waits for it */
	fd = tc_connect(port, false);
	send_cb(fd, 7, 9, 0, CB_MODE_NORMAL);
	recv_cb_call(fd, &arg);
	done_before = atomic_load(&ctx.cb_done);
	svc_destroy(s);
	CHECK_EQ(atomic_load(&ctx.cb_done), done_before + 1);
	close(fd);
	TEST_PASS("pending call fails at shutdown");
	return 0;
}
