/*
 * fuzz_nfs4c.c - what the NFSv4.1 client (src/nfs4c) does with bytes a
 * server sent it. The input's first byte chooses:
 *   0: a call record on the back channel (cb.h), answered twice (the
 *      second time it may be a replay of the first): every answer is a
 *      reply to the call's xid, or there is none when the record is not a
 *      call (cb.h invariant 1);
 *   1: fattr4 values (a bitmap of 0-3 words, then the values) through
 *      nfs4c_attr_decode(): 0 with every named attribute decoded, or an
 *      error; never a read past the values;
 *   2: a COMPOUND reply's results decoded as a compound's are (arena with
 *      a cap), then everything the client reads from results: each
 *      operation's status, the last GETFH's handle and GETATTR's values.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "nfs4c/nfs4c.h"

static const uint8_t sid[NFS4_SESSIONID_SIZE] = "fuzz-session-id!";

static nfsstat4 dispatch(void *arg, const struct nfs4c_cb_req *rq, const struct nfs_cb_argop4 *op,
			 struct nfs_cb_resop4 *res)
{
	FUZZ_CHECK(rq->seq != NULL);
	return op->argop == OP_CB_NOTIFY_LOCK ? NFS4ERR_DELAY : NFS4_OK;
}

static void one_call(struct nfs4c_cb *cb, const uint8_t *p, size_t n)
{
	struct xdr_enc out;
	xdr_enc_init(&out, 1u << 20);
	int err = nfs4c_cb_handle(cb, p, n, &out);
	FUZZ_CHECK(err == 0 || err == -EBADMSG);
	if (err) {
		FUZZ_CHECK(xdr_enc_len(&out) == 0);
	} else {
		/* a reply: the call's xid, then REPLY */
		uint8_t hdr[8];
		FUZZ_CHECK(xdr_enc_len(&out) >= 12 && n >= 8);
		memcpy(hdr, out.buf, 8);
		FUZZ_CHECK(!memcmp(hdr, p, 4));
		FUZZ_CHECK(hdr[4] == 0 && hdr[5] == 0 && hdr[6] == 0 && hdr[7] == 1);
	}
	xdr_enc_destroy(&out);
}

static void fuzz_cb(const uint8_t *p, size_t n)
{
	struct nfs4c_cb cb;
	nfs4c_cb_init(&cb, NFS4_CALLBACK, dispatch, NULL);
	cb.arena_cap = 256u << 10;
	nfs4c_cb_set_session(&cb, sid, 2);
	one_call(&cb, p, n);
	one_call(&cb, p, n);
	nfs4c_cb_destroy(&cb);
}

static void fuzz_attr(const uint8_t *p, size_t n)
{
	struct fattr4 f = {0};
	struct nfs4c_attr a;
	if (n < 1)
		return;
	uint32_t words = p[0] % 4;
	p++;
	n--;
	if (n < 4 * words)
		return;
	f.attrmask.len = words;
	for (uint32_t i = 0; i < words; i++, p += 4, n -= 4)
		f.attrmask.val[i] =
			(uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	f.attr_vals.len = (uint32_t)n;
	f.attr_vals.val = p;
	int err = nfs4c_attr_decode(&f, &a);
	FUZZ_CHECK(err == 0 || err == -EBADMSG || err == -E2BIG || err == -ENOTSUP);
	/* decoded: exactly the attributes the bitmap names are there */
	for (unsigned bit = 0; !err && bit < words * 32; bit++)
		FUZZ_CHECK(nfs4c_bitmap_isset(&a.have, bit) ==
			   nfs4c_bitmap_isset(&f.attrmask, bit));
}

static void fuzz_results(const uint8_t *p, size_t n)
{
	struct nfs4c_compound c;
	struct xdr_dec x;
	struct nfs4c_fh fh;
	struct nfs4c_attr a;
	nfs4c_compound_init(&c, NULL);
	xdr_dec_init(&x, p, n);
	x.arena = &c.arena;
	int err = nfs4_dec_COMPOUND4res(&x, &c.res);
	FUZZ_CHECK(err == 0 || err == -EBADMSG || err == -E2BIG || err == -ENOMSG);
	/* rule 6 of docs/xdr.md: what decoded before a failure is whole */
	for (uint32_t i = 0; i < c.res.resarray.len; i++)
		(void)nfs_resop4_status(&c.res.resarray.val[i]);
	if (!nfs4c_res_fh(&c, &fh))
		FUZZ_CHECK(fh.len <= NFS4_FHSIZE);
	err = nfs4c_res_attr(&c, &a);
	FUZZ_CHECK(err == 0 || err == -ENOENT || err == -EBADMSG || err == -E2BIG ||
		   err == -ENOTSUP);
	(void)nfs4c_res(&c, OP_READ, 0);
	nfs4c_compound_destroy(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_cb(data + 1, size - 1);
		break;
	case 1:
		fuzz_attr(data + 1, size - 1);
		break;
	default:
		fuzz_results(data + 1, size - 1);
		break;
	}
	return 0;
}
