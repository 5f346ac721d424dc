/*
 * fuzz_call.c - the RPC call header with its credential (rpc_msg.h), the
 * way a worker sees a record: xid and type, then the call body, then
 * rpc_auth_check(). Invariants: decoders never read outside the record
 * (ASan), a header that decodes leaves the stream inside the record, an
 * accepted AUTH_SYS credential respects its limits and survives a
 * round trip through our encoder, and every error reply the server could
 * send for it encodes and decodes back to the same status.
 */
#include <string.h>

#include "fuzz.h"
#include "rpc/rpc_msg.h"

static void check_reply(struct xdr_enc *x, uint32_t xid, uint32_t reply_stat, uint32_t stat)
{
	uint8_t flat[256];
	struct xdr_dec d;
	struct rpc_reply_hdr r;
	FUZZ_CHECK(xdr_enc_len(x) <= sizeof(flat));
	xdr_enc_flatten(x, flat);
	xdr_dec_init(&d, flat, xdr_enc_len(x));
	FUZZ_CHECK(rpc_dec_reply_hdr(&d, &r) == 0);
	FUZZ_CHECK(r.xid == xid && r.reply_stat == reply_stat && r.stat == stat);
	FUZZ_CHECK(xdr_dec_remaining(&d) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xdr_dec d;
	struct rpc_call_hdr h;
	struct rpc_cred cred;
	uint32_t xid, type;
	uint8_t buf[256];
	struct xdr_enc x;

	xdr_dec_init(&d, data, size);
	if (rpc_dec_xid_type(&d, &xid, &type) || type != RPC_CALL)
		return 0;
	if (rpc_dec_call_body(&d, xid, &h))
		return 0;
	FUZZ_CHECK(d.p >= data && d.p <= data + size);
	if (h.rpcvers != RPC_VERSION) {
		xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
		FUZZ_CHECK(rpc_enc_rpc_mismatch(&x, xid) == 0);
		check_reply(&x, xid, RPC_MSG_DENIED, RPC_MISMATCH);
		return 0;
	}
	enum rpc_auth_stat as = rpc_auth_check(&h, &cred);
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	if (as != RPC_AUTH_OK) {
		FUZZ_CHECK(rpc_enc_auth_error(&x, xid, as) == 0);
		check_reply(&x, xid, RPC_MSG_DENIED, RPC_AUTH_ERROR);
		return 0;
	}
	FUZZ_CHECK(cred.flavor == RPC_AUTH_NONE || cred.flavor == RPC_AUTH_SYS);
	FUZZ_CHECK(cred.ngids <= RPC_AUTH_SYS_MAX_GIDS);
	FUZZ_CHECK(strlen(cred.machine) <= RPC_AUTH_SYS_MAX_MACHINE);
	FUZZ_CHECK(rpc_enc_prog_mismatch(&x, xid, 3, 4) == 0);
	check_reply(&x, xid, RPC_MSG_ACCEPTED, RPC_PROG_MISMATCH);

	/* round trip the credential through our own encoder */
	struct xdr_enc e;
	xdr_enc_init(&e, 4096);
	FUZZ_CHECK(rpc_enc_call_hdr(&e, xid, h.prog, h.vers, h.proc, &cred) == 0);
	uint8_t *flat = malloc(xdr_enc_len(&e));
	xdr_enc_flatten(&e, flat);
	struct rpc_call_hdr h2;
	struct rpc_cred c2;
	xdr_dec_init(&d, flat, xdr_enc_len(&e));
	FUZZ_CHECK(rpc_dec_call_hdr(&d, &h2) == 0 && xdr_dec_remaining(&d) == 0);
	FUZZ_CHECK(h2.xid == xid && h2.prog == h.prog && h2.vers == h.vers && h2.proc == h.proc);
	FUZZ_CHECK(rpc_auth_check(&h2, &c2) == RPC_AUTH_OK);
	FUZZ_CHECK(c2.flavor == cred.flavor && c2.uid == cred.uid && c2.gid == cred.gid);
	if (cred.flavor == RPC_AUTH_SYS) {
		FUZZ_CHECK(c2.stamp == cred.stamp && c2.ngids == cred.ngids);
		FUZZ_CHECK(memcmp(c2.gids, cred.gids, cred.ngids * sizeof(uint32_t)) == 0);
		FUZZ_CHECK(strcmp(c2.machine, cred.machine) == 0);
	}
	free(flat);
	xdr_enc_destroy(&e);
	return 0;
}
