/*
 * test_rpc_record.c - record marking (record.h invariants 1-4) and RPC
 * headers with credentials (rpc_msg.h): multi-fragment records split at
 * every byte, oversized and 2^31-1 lengths, memory that follows received
 * bytes (and takes the rest of a large fragment at once), buffers reused, AUTH_SYS with 16 and 17 groups, long bodies, RPCSEC_GSS, unknown
 * flavours, truncated headers, reply headers.
 */
#include <errno.h>

#include "check.h"
#include "base/compiler.h"
#include "base/iobuf.h"
#include "rpc/record.h"
#include "rpc/rpc_msg.h"

static size_t put_frag(uint8_t *out, const void *data, uint32_t len, bool last)
{
	uint32_t h = len | (last ? REC_LAST_FRAG : 0);
	out[0] = (uint8_t)(h >> 24);
	out[1] = (uint8_t)(h >> 16);
	out[2] = (uint8_t)(h >> 8);
	out[3] = (uint8_t)h;
	memcpy(out + 4, data, len);
	return 4 + len;
}

static void test_fragments(void)
{
	/* two records: "hello world" in 3 fragments (one empty), then "xy" */
	uint8_t stream[128];
	size_t n = 0;
	n += put_frag(stream + n, "hello", 5, false);
	n += put_frag(stream + n, "", 0, false);
	n += put_frag(stream + n, " world", 6, true);
	n += put_frag(stream + n, "xy", 2, true);
	for (size_t chunk = 1; chunk <= n; chunk++) {
		struct rec_asm r;
		rec_init(&r, 64);
		int got = 0;
		size_t pos = 0;
		while (pos < n) {
			size_t len = MIN(chunk, n - pos), used;
			int ret = rec_feed(&r, stream + pos, len, &used);
			CHECK(ret >= 0);
			pos += used;
			if (ret == 1) {
				size_t rl;
				uint8_t *rec = rec_take(&r, &rl);
				if (got == 0)
					CHECK(rl == 11 && memcmp(rec, "hello world", 11) == 0);
				else
					CHECK(rl == 2 && memcmp(rec, "xy", 2) == 0);
				iobuf_free(rec);
				got++;
			} else {
				CHECK_EQ(used, len);
			}
		}
		CHECK_EQ(got, 2);
		CHECK(!rec_partial(&r));
		rec_destroy(&r);
	}
	TEST_PASS("record fragments at every split");
}

static void test_limits(void)
{
	struct rec_asm r;
	size_t used;
	/* invariant 1: 2^31-1 refused at the header */
	uint8_t h[4] = {0xff, 0xff, 0xff, 0xff};
	rec_init(&r, 1 << 20);
	CHECK_EQ(rec_feed(&r, h, 4, &used), -EMSGSIZE);
	CHECK(r.cap == 0);
	/* invariant 3: sticky */
	CHECK_EQ(rec_feed(&r, h, 4, &used), -EMSGSIZE);
	rec_destroy(&r);
	/* the sum of fragments counts: 600 + 600 > 1000 */
	static uint8_t data[600], stream[1300];
	size_t n = put_frag(stream, data, 600, false);
	n += put_frag(stream + n, data, 600, true);
	rec_init(&r, 1000);
	CHECK_EQ(rec_feed(&r, stream, n, &used), -EMSGSIZE);
	CHECK(r.len <= 1000);
	rec_destroy(&r);
	/* exactly max is fine */
	n = put_frag(stream, data, 600, true);
	rec_init(&r, 600);
	CHECK_EQ(rec_feed(&r, stream, n, &used), 1);
	size_t rl;
	iobuf_free(rec_take(&r, &rl));
	CHECK_EQ(rl, 600);
	rec_destroy(&r);
	/* invariant 2: a header claiming 1 MiB costs what arrived, until
	 * REC_EAGER bytes did */
	uint8_t big[4] = {0x80, 0x10, 0x00, 0x00};
	rec_init(&r, 2 << 20);
	CHECK_EQ(rec_feed(&r, big, 4, &used), 0);
	CHECK(rec_partial(&r));
	CHECK_EQ(rec_feed(&r, data, 100, &used), 0);
	CHECK(r.cap <= 2 * r.len + REC_EAGER);
	/* direct reads grow with the data too: up to REC_EAGER */
	uint8_t *space;
	size_t sp = rec_direct(&r, &space);
	CHECK(sp > 0 && sp <= REC_EAGER);
	memset(space, 7, sp / 2);
	CHECK_EQ(rec_direct_commit(&r, sp / 2), 0);
	CHECK(r.len < REC_EAGER && r.cap <= 2 * r.len + REC_EAGER);
	size_t total = r.len;
	while (total < (1 << 20)) {
		sp = rec_direct(&r, &space);
		CHECK(sp > 0);
		/* from REC_EAGER on, the rest of the fragment at once */
		if (total >= REC_EAGER)
			CHECK_EQ(sp, (1 << 20) - total);
		CHECK(r.cap <= (total < REC_EAGER ? 2 * total + REC_EAGER : 1 << 20));
		sp = MIN(sp, (size_t)100000);
		int ret = rec_direct_commit(&r, sp);
		total += sp;
		CHECK_EQ(ret, total == (1 << 20));
	}
	/* moves copied the 100 fed bytes, then REC_EAGER once (a doubling
	 * buffer copies the record's size over again) */
	CHECK(r.copied <= 100 + REC_EAGER);
	uint8_t *rec = rec_take(&r, &rl);
	CHECK_EQ(rl, 1 << 20);
	iobuf_free(rec);
	/* a large record's buffer, freed, is the next one's (base/iobuf.h
	 * I3): no fresh pages for the next record of that size */
	CHECK_EQ(rec_feed(&r, big, 4, &used), 0);
	for (total = 0; total < (1 << 20); total += sp) {
		sp = rec_direct(&r, &space);
		rec_direct_commit(&r, sp);
	}
	CHECK(r.done && r.buf == rec);
	iobuf_free(rec_take(&r, &rl));
	/* an empty record */
	uint8_t empty[4] = {0x80, 0, 0, 0};
	CHECK_EQ(rec_feed(&r, empty, 4, &used), 1);
	CHECK(rec_take(&r, &rl) == NULL && rl == 0);
	rec_destroy(&r);
	TEST_PASS("record limits");
}

static size_t build_call(uint8_t *buf, size_t cap, uint32_t flavor, uint32_t ngids,
			 uint32_t machine_len, uint32_t verf_flavor)
{
	struct xdr_enc x;
	xdr_enc_init_buf(&x, buf, cap, cap);
	CHECK_OK(xdr_enc_u32(&x, 77) || xdr_enc_u32(&x, RPC_CALL) || xdr_enc_u32(&x, 2) ||
		 xdr_enc_u32(&x, 100003) || xdr_enc_u32(&x, 3) || xdr_enc_u32(&x, 0));
	CHECK_OK(xdr_enc_u32(&x, flavor));
	size_t off;
	CHECK_OK(xdr_enc_reserve(&x, 4, &off));
	size_t start = x.len;
	if (flavor == RPC_AUTH_SYS) {
		char machine[300];
		memset(machine, 'm', sizeof(machine));
		CHECK_OK(xdr_enc_u32(&x, 5) || xdr_enc_opaque(&x, machine, machine_len) ||
			 xdr_enc_u32(&x, 1000) || xdr_enc_u32(&x, 100) || xdr_enc_u32(&x, ngids));
		for (uint32_t i = 0; i < ngids; i++)
			CHECK_OK(xdr_enc_u32(&x, 200 + i));
	} else if (flavor != RPC_AUTH_NONE) {
		CHECK_OK(xdr_enc_u64(&x, 0));
	}
	xdr_enc_put_u32_at(&x, off, (uint32_t)(x.len - start));
	CHECK_OK(xdr_enc_u32(&x, verf_flavor) || xdr_enc_u32(&x, 0));
	CHECK(x.buf == buf);
	return x.len;
}

static enum rpc_auth_stat check_auth(const uint8_t *buf, size_t len, struct rpc_cred *cred)
{
	struct xdr_dec d;
	struct rpc_call_hdr h;
	xdr_dec_init(&d, buf, len);
	CHECK_OK(rpc_dec_call_hdr(&d, &h));
	CHECK(h.xid == 77 && h.prog == 100003 && h.vers == 3 && h.proc == 0);
	CHECK_EQ(xdr_dec_remaining(&d), 0);
	return rpc_auth_check(&h, cred);
}

static void test_call_headers(void)
{
	static uint8_t buf[65536];
	struct rpc_cred cred;
	size_t len = build_call(buf, sizeof(buf), RPC_AUTH_SYS, 16, 255, RPC_AUTH_NONE);
	CHECK_EQ(check_auth(buf, len, &cred), RPC_AUTH_OK);
	CHECK(cred.flavor == RPC_AUTH_SYS && cred.uid == 1000 && cred.gid == 100 &&
	      cred.ngids == 16 && cred.gids[15] == 215 && strlen(cred.machine) == 255);
	/* every truncation of the header fails cleanly */
	for (size_t cut = 0; cut < len; cut++) {
		struct xdr_dec d;
		struct rpc_call_hdr h;
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, buf, cut);
		xdr_dec_init(&d, copy, cut);
		CHECK_EQ(rpc_dec_call_hdr(&d, &h), -EBADMSG);
		free(copy);
	}
	len = build_call(buf, sizeof(buf), RPC_AUTH_SYS, 17, 8, RPC_AUTH_NONE);
	CHECK_EQ(check_auth(buf, len, &cred), RPC_AUTH_BADCRED);
	len = build_call(buf, sizeof(buf), RPC_AUTH_SYS, 10000, 8, RPC_AUTH_NONE);
	CHECK_EQ(check_auth(buf, len, &cred), RPC_AUTH_BADCRED);
	len = build_call(buf, sizeof(buf), RPC_AUTH_SYS, 2, 256, RPC_AUTH_NONE);
	CHECK_EQ(check_auth(buf, len, &cred), RPC_AUTH_BADCRED);
	len = build_call(buf, sizeof(buf), RPC_AUTH_SYS, 2, 8, RPC_AUTH_SYS);
	CHECK_EQ(check_auth(buf, len, &cred), RPC_AUTH_BADVERF);
	len = build_call(buf, sizeof(buf), RPC_RPCSEC_GSS, 0, 0, RPC_AUTH_NONE);
	CHECK_EQ(check_auth(buf, len, &cred), RPC_AUTH_TOOWEAK);
	len = build_call(buf, sizeof(buf), RPC_AUTH_DH, 0, 0, RPC_AUTH_NONE);
	CHECK_EQ(check_auth(buf, len, &cred), RPC_AUTH_BADCRED);
	len = build_call(buf, sizeof(buf), RPC_AUTH_NONE, 0, 0, RPC_AUTH_NONE);
	CHECK_EQ(check_auth(buf, len, &cred), RPC_AUTH_OK);
	CHECK(cred.flavor == RPC_AUTH_NONE && cred.uid == 65534);

	/* our own encoder agrees with the decoder */
	struct xdr_enc x;
	struct rpc_cred c2 = {.flavor = RPC_AUTH_SYS, .stamp = 9, .uid = 1, .gid = 2, .ngids = 3,
			      .gids = {4, 5, 6}};
	strcpy(c2.machine, "client");
	xdr_enc_init(&x, 4096);
	CHECK_OK(rpc_enc_call_hdr(&x, 77, 100003, 3, 0, &c2));
	len = xdr_enc_len(&x);
	xdr_enc_flatten(&x, buf);
	xdr_enc_destroy(&x);
	CHECK_EQ(check_auth(buf, len, &cred), RPC_AUTH_OK);
	CHECK(cred.stamp == 9 && cred.ngids == 3 && cred.gids[2] == 6 &&
	      strcmp(cred.machine, "client") == 0);
	TEST_PASS("call headers and credentials");
}

static void test_reply_headers(void)
{
	struct xdr_enc x;
	struct xdr_dec d;
	struct rpc_reply_hdr r;
	uint8_t buf[256];
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(rpc_enc_prog_mismatch(&x, 5, 3, 4));
	xdr_dec_init(&d, buf, x.len);
	CHECK_OK(rpc_dec_reply_hdr(&d, &r));
	CHECK(r.xid == 5 && r.reply_stat == RPC_MSG_ACCEPTED && r.stat == RPC_PROG_MISMATCH &&
	      r.low == 3 && r.high == 4);
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(rpc_enc_auth_error(&x, 6, RPC_AUTH_TOOWEAK));
	xdr_dec_init(&d, buf, x.len);
	CHECK_OK(rpc_dec_reply_hdr(&d, &r));
	CHECK(r.reply_stat == RPC_MSG_DENIED && r.stat == RPC_AUTH_ERROR &&
	      r.auth_stat == RPC_AUTH_TOOWEAK);
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(rpc_enc_rpc_mismatch(&x, 7));
	xdr_dec_init(&d, buf, x.len);
	CHECK_OK(rpc_dec_reply_hdr(&d, &r));
	CHECK(r.reply_stat == RPC_MSG_DENIED && r.stat == RPC_MISMATCH && r.low == 2 &&
	      r.high == 2);
	for (size_t cut = 0; cut < x.len; cut++) {
		xdr_dec_init(&d, buf, cut);
		CHECK_EQ(rpc_dec_reply_hdr(&d, &r), -EBADMSG);
	}
	TEST_PASS("reply headers");
}

/*
 * Invariant 4: a record asked to have offset off aligned has it aligned
 * (when it is that long), whatever the split of its bytes between feeds
 * and direct reads and however its buffer grew; its bytes are the same;
 * memory still follows what arrived; and rec_take_at() hands over what to
 * free.
 */
static void test_align(void)
{
	enum { LEN = 9000 };
	static uint8_t data[LEN], stream[LEN + 64];
	for (size_t i = 0; i < LEN; i++)
		data[i] = (uint8_t)(i * 131 + (i >> 7));
	/* three fragments: 100 bytes (a call header), 8000, 900 */
	size_t n = put_frag(stream, data, 100, false);
	n += put_frag(stream + n, data + 100, 8000, false);
	n += put_frag(stream + n, data + 8100, 900, true);
	static const size_t offs[] = {0, 1, 100, 140, 4095, 4096, 8999, 20000};
	for (size_t oi = 0; oi < sizeof(offs) / sizeof(offs[0]); oi++) {
		/* the stream split in two at every byte, the second part read
		 * directly where the reassembler allows it */
		for (size_t split = 0; split <= n; split++) {
			struct rec_asm r;
			rec_init(&r, 1 << 20);
			rec_align(&r, offs[oi]);
			size_t pos = 0, used;
			int ret = 0;
			/* a small allocation after each step keeps the buffer
			 * from growing in place: it moves, to an address of
			 * another alignment */
			void *block[64];
			unsigned nblock = 0;
			while (pos < n && ret != 1) {
				CHECK(nblock < 64);
				block[nblock++] = malloc(16 + 48 * (split % 3));
				uint8_t *space;
				size_t sp = pos >= split ? rec_direct(&r, &space) : 0;
				if (sp) {
					sp = MIN(MIN(sp, n - pos), 3000);
					memcpy(space, stream + pos, sp);
					ret = rec_direct_commit(&r, sp);
					pos += sp;
				} else {
					size_t end = pos < split ? split : n;
					end = MIN(end, pos + 700);
					ret = rec_feed(&r, stream + pos, end - pos, &used);
					pos += used;
				}
				CHECK(ret >= 0);
				CHECK(r.cap <= 2 * r.len + REC_EAGER || (r.len >= REC_EAGER && r.cap <= r.len + r.frag_left));
			}
			CHECK_EQ(ret, 1);
			CHECK_EQ(pos, n);
			while (nblock)
				free(block[--nblock]);
			size_t rl;
			void *alloc;
			uint8_t *rec = rec_take_at(&r, &rl, &alloc);
			CHECK_EQ(rl, LEN);
			CHECK(memcmp(rec, data, LEN) == 0);
			if (offs[oi] && offs[oi] < LEN)
				CHECK_EQ((uintptr_t)(rec + offs[oi]) % REC_ALIGN, 0);
			CHECK((uint8_t *)alloc <= rec && rec < (uint8_t *)alloc + REC_ALIGN);
			iobuf_free(alloc);
			rec_destroy(&r);
		}
	}
	TEST_PASS("aligned records at every split");
}

int main(void)
{
	test_fragments();
	test_limits();
	test_align();
	test_call_headers();
	test_reply_headers();
	return 0;
}
