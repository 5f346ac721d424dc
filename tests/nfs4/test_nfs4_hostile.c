/*
 * test_nfs4_hostile.c - hostile NFSv4.1 compounds against jnfsd: each gets
 * the error RFC 8881 gives it, does no work, and leaks nothing.
 *
 *   test-nfs4-hostile JNFSD JNFS
 *
 * Cases (docs/nfs4.md "A compound"):
 *   - 10,000 operations: TOO_MANY_OPS behind SEQUENCE (and the slot is as
 *     it was), OP_NOT_IN_SESSION or NOT_ONLY_OP without it,
 *     MINOR_VERS_MISMATCH for minor version 0; 129 operations are too many
 *     for the session, 128 are not;
 *   - unknown operations (9999, the reserved 0-2, OP_ILLEGAL itself) and a
 *     4.2 operation in a 4.1 compound: OP_ILLEGAL, and what follows does
 *     not run; a compound that ends inside an operation's number: BADXDR
 *     in OP_ILLEGAL's result;
 *   - operations out of place: OP_NOT_IN_SESSION, SEQUENCE_POS, NOT_ONLY_OP
 *     for every operation that may only stand alone (DESTROY_SESSION and
 *     DESTROY_CLIENTID of the caller's own session and client among them:
 *     both live on), NOFILEHANDLE;
 *   - attribute bitmaps of every size up to 100,000 words, hand-encoded:
 *     GETATTR answers with what it supports, or the request is refused as
 *     a whole;
 *   - stateids: forged ones (another counter, another client's number,
 *     another boot, a seqid from the future), an old seqid (OLD_STATEID),
 *     another client's stateids (BAD_STATEID for WRITE, CLOSE, LOCK, LOCKU,
 *     TEST_STATEID, FREE_STATEID), the special ones where they do not
 *     belong, and stateids of the previous instance after a restart of
 *     jnfsd (STALE_STATEID);
 *   - a destroyed session: BADSESSION, and nothing runs;
 *   - FREE_STATEID of a lock stateid sent together with CLOSE of its open.
 * "No work" is checked after every case: the test directory's and the
 * file's change attributes and size, and jnfsd's counters of committed
 * transactions and of inodes, are as they were. At the end every client
 * leaves, and no client, session, stateid, open, lock or cached reply is
 * left (jnfsd's counters); jnfsd stops cleanly (in the ASan build that
 * includes its leak check).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "check.h"
#include "nfs4_test.h"
#include "rpc/rpc_msg.h"

#define RAW_SLOT 11 /* the slot hand-encoded compounds use */

static struct nfs4t_server srv;
static struct nfs4c_client *a, *b;
static struct nfs4c_fh root, hdir, file;
static struct stateid4 open_sid, lock_sid;
static uint32_t raw_seq; /* the last sequence id RAW_SLOT took */

static void kill_server(void)
{
	if (srv.j.pid > 0)
		kill(srv.j.pid, SIGKILL);
}

/* ---- no work done ---- */

struct snap {
	uint64_t dir_change, file_change, file_size;
	uint64_t trans, inodes;
};

static void snap(struct snap *s)
{
	struct nfs4c_attr at;
	struct nfs4t_stats st;
	nfs4t_getattr(a, &hdir, &at);
	s->dir_change = at.change;
	nfs4t_getattr(a, &file, &at);
	s->file_change = at.change;
	s->file_size = at.size;
	nfs4t_stats(&srv.j, &st);
	s->trans = nfs4t_stat(&st, "log.trans_async") + nfs4t_stat(&st, "log.trans_sync");
	s->inodes = nfs4t_stat(&st, "fs.inodes");
}

static void check_unchanged(const struct snap *before, const char *what)
{
	struct snap now;
	snap(&now);
	if (memcmp(before, &now, sizeof(now)) != 0) {
		fprintf(stderr,
			"%s changed something: directory change %llu -> %llu, file change "
			"%llu -> %llu, size %llu -> %llu, transactions %llu -> %llu, inodes "
			"%llu -> %llu\n",
			what, (unsigned long long)before->dir_change,
			(unsigned long long)now.dir_change, (unsigned long long)before->file_change,
			(unsigned long long)now.file_change, (unsigned long long)before->file_size,
			(unsigned long long)now.file_size, (unsigned long long)before->trans,
			(unsigned long long)now.trans, (unsigned long long)before->inodes,
			(unsigned long long)now.inodes);
		exit(1);
	}
}

/* ---- compounds ---- */

/* CREATE of a directory and a WRITE of the file: what must not run. */
static void harmful(struct nfs4c_compound *c)
{
	static const uint8_t junk[16] = "must not land";
	nfs4c_op_putfh(c, &hdir);
	nfs4c_op_create(c, NF4DIR, "must-not-exist", NULL, NULL, NULL);
	nfs4c_op_putfh(c, &file);
	nfs4c_op_write(c, &open_sid, 0, FILE_SYNC4, junk, sizeof(junk));
}

static nfsstat4 resop_status(const struct nfs4c_compound *c, unsigned i)
{
	CHECK(i < c->res.resarray.len);
	return nfs_resop4_status(&c->res.resarray.val[i]);
}

/* The compound's answer: status, number of results, and the last one's
 * operation. */
static void expect(const struct nfs4c_compound *c, nfsstat4 status, unsigned nres, nfs_opnum4 last)
{
	if (c->status != status || c->res.resarray.len != nres ||
	    (nres && c->res.resarray.val[nres - 1].resop != last)) {
		fprintf(stderr,
			"expected status %u with %u results ending in op %u; got %u with "
			"%u results",
			(unsigned)status, nres, (unsigned)last, (unsigned)c->status,
			c->res.resarray.len);
		if (c->res.resarray.len)
			fprintf(stderr, " ending in op %u",
				(unsigned)c->res.resarray.val[c->res.resarray.len - 1].resop);
		fprintf(stderr, "\n");
		exit(1);
	}
	if (nres)
		CHECK_EQ(resop_status(c, nres - 1), status);
}

/* ---- hand-encoded compounds (what the client's codecs cannot say) ---- */

struct raw {
	uint8_t *reply;
	size_t reply_len;
	struct xdr_arena arena;
	struct COMPOUND4res res;
};

static void raw_sequence(struct xdr_enc *x)
{
	struct nfs4c_info info;
	struct nfs_argop4 op = {.argop = OP_SEQUENCE};
	nfs4c_get_info(a, &info);
	memcpy(op.opsequence.sa_sessionid, info.sessionid, NFS4_SESSIONID_SIZE);
	op.opsequence.sa_sequenceid = raw_seq + 1;
	op.opsequence.sa_slotid = RAW_SLOT;
	op.opsequence.sa_highest_slotid = RAW_SLOT;
	CHECK_OK(nfs4_enc_nfs_argop4(x, &op));
}

static void raw_putfh(struct xdr_enc *x, const struct nfs4c_fh *fh)
{
	struct nfs_argop4 op = {.argop = OP_PUTFH};
	op.opputfh.object.len = fh->len;
	memcpy(op.opputfh.object.val, fh->val, fh->len);
	CHECK_OK(nfs4_enc_nfs_argop4(x, &op));
}

/* Send SEQUENCE, PUTFH(fh), what body encodes (nops operations) and the
 * tail bytes as they are, on RAW_SLOT; the decoded reply in r (r->res
 * valid until raw_done). */
static void raw_send(const struct nfs4c_fh *fh, uint32_t nops,
		     void (*body)(struct xdr_enc *x, void *arg), void *arg, const void *tail,
		     size_t tail_len, struct raw *r)
{
	struct xdr_enc x;
	struct rpc_cred cred = {.flavor = RPC_AUTH_SYS};
	uint32_t xid = nfs4c_next_xid();
	xdr_enc_init(&x, 8u << 20);
	CHECK_OK(rpc_enc_call_hdr(&x, xid, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, &cred));
	CHECK_OK(xdr_enc_opaque(&x, "", 0));
	CHECK_OK(xdr_enc_u32(&x, 1));
	CHECK_OK(xdr_enc_u32(&x, 2 + nops));
	raw_sequence(&x);
	raw_putfh(&x, fh);
	if (body)
		body(&x, arg);
	size_t len = xdr_enc_len(&x);
	uint8_t *rec = xmalloc(len + tail_len);
	xdr_enc_flatten(&x, rec);
	xdr_enc_destroy(&x);
	if (tail_len)
		memcpy(rec + len, tail, tail_len);
	len += tail_len;
	CHECK_OK(nfs4c_call_raw(a, NULL, rec, len, xid, &r->reply, &r->reply_len));
	free(rec);

	struct xdr_dec d;
	struct rpc_reply_hdr rh;
	xdr_dec_init(&d, r->reply, r->reply_len);
	CHECK_OK(rpc_dec_reply_hdr(&d, &rh));
	CHECK(rh.reply_stat == RPC_MSG_ACCEPTED && rh.stat == RPC_SUCCESS);
	xdr_arena_init(&r->arena, NULL, 0, 64u << 20);
	d.arena = &r->arena;
	memset(&r->res, 0, sizeof(r->res));
	CHECK_OK(nfs4_dec_COMPOUND4res(&d, &r->res));
	CHECK(r->res.resarray.len >= 1 && r->res.resarray.val[0].resop == OP_SEQUENCE);
	if (r->res.resarray.val[0].opsequence.sr_status == NFS4_OK)
		raw_seq++;
}

static void raw_done(struct raw *r)
{
	xdr_arena_reset(&r->arena);
	iobuf_free(r->reply);
}

/* ---- 10,000 operations ---- */

static void too_many_ops(void)
{
	struct nfs4c_compound c;
	struct nfs4t_stats s0, s1;
	struct snap before;
	snap(&before);
	nfs4t_stats(&srv.j, &s0);

	/* behind SEQUENCE: TOO_MANY_OPS before the slot is looked at */
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &hdir);
	for (int i = 0; i < 9998; i++) {
		char name[32];
		snprintf(name, sizeof(name), "many-%d", i);
		nfs4c_op_create(&c, NF4DIR, name, NULL, NULL, NULL);
	}
	CHECK_EQ(c.nops, 9999);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_TOO_MANY_OPS, 1, OP_SEQUENCE);
	uint32_t slot = c.slotid, seqid = c.seqid_sent;
	nfs4c_compound_destroy(&c);
	/* the slot was not used: its sequence id is taken again, as new */
	nfs4c_compound_init(&c, a);
	c.slot = (int)slot;
	nfs4c_op_putfh(&c, &hdir);
	nfs4c_op_getfh(&c);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	CHECK_EQ(c.seqid_sent, seqid);
	CHECK_EQ(c.res.resarray.len, 3);
	nfs4c_compound_destroy(&c);
	check_unchanged(&before, "10,000 operations behind SEQUENCE");

	/* without SEQUENCE first */
	nfs4c_compound_init(&c, a);
	c.no_sequence = true;
	for (int i = 0; i < 2500; i++)
		harmful(&c);
	CHECK_EQ(c.nops, 10000);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_OP_NOT_IN_SESSION, 1, OP_PUTFH);
	nfs4c_compound_destroy(&c);

	/* EXCHANGE_ID first, then 9,999 more */
	nfs4c_compound_init(&c, a);
	c.no_sequence = true;
	nfs4c_op_add(&c, OP_EXCHANGE_ID);
	for (int i = 0; i < 2500; i++)
		harmful(&c);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_NOT_ONLY_OP, 1, OP_EXCHANGE_ID);
	nfs4c_compound_destroy(&c);

	/* minor version 0: no results at all */
	nfs4c_compound_init(&c, a);
	c.no_sequence = true;
	c.minorversion = 0;
	for (int i = 0; i < 2500; i++)
		harmful(&c);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_MINOR_VERS_MISMATCH, 0, 0);
	nfs4c_compound_destroy(&c);
	check_unchanged(&before, "10,000-operation compounds");

	/* 129 operations are more than the session's 128; 128 are not */
	nfs4c_compound_init(&c, a);
	for (int i = 0; i < 128; i++)
		nfs4c_op_putfh(&c, &hdir);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_TOO_MANY_OPS, 1, OP_SEQUENCE);
	nfs4c_compound_reset(&c);
	for (int i = 0; i < 127; i++)
		nfs4c_op_putfh(&c, &hdir);
	nfs4t_send(&c);
	expect(&c, NFS4_OK, 128, OP_PUTFH);
	nfs4c_compound_destroy(&c);
	nfs4t_stats(&srv.j, &s1);
	CHECK_EQ(nfs4t_stat(&s1, "nfs4.too_many_ops") - nfs4t_stat(&s0, "nfs4.too_many_ops"), 4);
	CHECK_EQ(nfs4t_stat0(&s1, "nfs4.op.CREATE"), nfs4t_stat0(&s0, "nfs4.op.CREATE"));
	check_unchanged(&before, "129 operations");
	TEST_PASS("10,000 operations: TOO_MANY_OPS / OP_NOT_IN_SESSION / NOT_ONLY_OP / "
		  "MINOR_VERS_MISMATCH, nothing done, the slot untouched");
}

/* ---- unknown operations ---- */

static void unknown_ops(void)
{
	struct nfs4c_compound c;
	struct snap before;
	const nfs_opnum4 bad[] = {9999, 0, 1, 2, OP_ILLEGAL, 10045, 0x7fffffff};
	snap(&before);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nfs4c_compound_init(&c, a);
		nfs4c_op_putfh(&c, &hdir);
		nfs4c_op_add(&c, bad[i]);
		harmful(&c);
		nfs4t_send(&c);
		expect(&c, NFS4ERR_OP_ILLEGAL, 3, OP_ILLEGAL);
		nfs4c_compound_destroy(&c);
	}
	/* a compound that ends inside an operation's number: BADXDR, in a
	 * result a client can decode (OP_ILLEGAL's) */
	struct raw r;
	static const uint8_t half[2] = {0, 0};
	raw_send(&hdir, 1, NULL, NULL, half, sizeof(half), &r);
	CHECK_EQ(r.res.status, NFS4ERR_BADXDR);
	CHECK_EQ(r.res.resarray.len, 3);
	CHECK_EQ(r.res.resarray.val[2].resop, OP_ILLEGAL);
	CHECK_EQ(r.res.resarray.val[2].opillegal.status, NFS4ERR_BADXDR);
	raw_done(&r);
	/* a 4.2 operation in a compound of minor version 1 */
	nfs4c_compound_init(&c, a);
	c.minorversion = 1;
	nfs4c_op_putfh(&c, &file);
	nfs4c_op_allocate(&c, &open_sid, 0, 1 << 20);
	harmful(&c);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_OP_ILLEGAL, 3, OP_ILLEGAL);
	nfs4c_compound_destroy(&c);
	/* SET_SSV is a known, REQUIRED operation: INVAL for a client ID
	 * without SSV state protection (every one here), and what follows it
	 * does not run */
	nfs4c_compound_init(&c, a);
	struct nfs_argop4 *ssv = nfs4c_op_add(&c, OP_SET_SSV);
	static const uint8_t secret[16] = "not a secret";
	ssv->opset_ssv.ssa_ssv.len = sizeof(secret);
	ssv->opset_ssv.ssa_ssv.val = secret;
	nfs4c_op_putfh(&c, &hdir);
	harmful(&c);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_INVAL, 2, OP_SET_SSV);
	nfs4c_compound_destroy(&c);
	check_unchanged(&before, "unknown operations");
	TEST_PASS("unknown operations: OP_ILLEGAL, nothing after them runs; a cut opcode: BADXDR; "
		  "SET_SSV without SSV protection: INVAL");
}

/* ---- operations out of place ---- */

static void out_of_place(void)
{
	struct nfs4c_compound c;
	struct nfs4c_info info;
	struct snap before;
	snap(&before);
	nfs4c_get_info(a, &info);

	nfs4c_compound_init(&c, a);
	c.no_sequence = true;
	harmful(&c);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_OP_NOT_IN_SESSION, 1, OP_PUTFH);
	nfs4c_compound_destroy(&c);

	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &hdir);
	nfs4c_op_add(&c, OP_SEQUENCE);
	harmful(&c);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_SEQUENCE_POS, 3, OP_SEQUENCE);
	nfs4c_compound_destroy(&c);

	/* the operations that may go without SEQUENCE, but then alone: with
	 * real arguments (this client's own session and client ID), so that
	 * running them would show */
	const nfs_opnum4 lone[] = {OP_EXCHANGE_ID, OP_CREATE_SESSION, OP_DESTROY_SESSION,
				   OP_BIND_CONN_TO_SESSION, OP_DESTROY_CLIENTID};
	for (size_t i = 0; i < sizeof(lone) / sizeof(lone[0]); i++) {
		nfs4c_compound_init(&c, a);
		c.no_sequence = true;
		struct nfs_argop4 *op = nfs4c_op_add(&c, lone[i]);
		if (lone[i] == OP_DESTROY_SESSION)
			memcpy(op->opdestroy_session.dsa_sessionid, info.sessionid,
			       NFS4_SESSIONID_SIZE);
		if (lone[i] == OP_BIND_CONN_TO_SESSION) {
			memcpy(op->opbind_conn_to_session.bctsa_sessid, info.sessionid,
			       NFS4_SESSIONID_SIZE);
			op->opbind_conn_to_session.bctsa_dir = CDFC4_FORE_OR_BOTH;
		}
		if (lone[i] == OP_DESTROY_CLIENTID)
			op->opdestroy_clientid.dca_clientid = info.clientid;
		if (lone[i] == OP_CREATE_SESSION)
			op->opcreate_session.csa_clientid = info.clientid;
		harmful(&c);
		nfs4t_send(&c);
		expect(&c, NFS4ERR_NOT_ONLY_OP, 1, lone[i]);
		nfs4c_compound_destroy(&c);
	}
	/* the session and the client are alive */
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &hdir);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	struct nfs4c_info now;
	nfs4c_get_info(a, &now);
	CHECK(memcmp(now.sessionid, info.sessionid, NFS4_SESSIONID_SIZE) == 0);
	CHECK_EQ(now.clientid, info.clientid);

	/* no current or saved filehandle */
	nfs4c_compound_init(&c, a);
	nfs4c_op_create(&c, NF4DIR, "must-not-exist", NULL, NULL, NULL);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_NOFILEHANDLE, 2, OP_CREATE);
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &hdir);
	nfs4c_op_rename(&c, "a", "b");
	nfs4t_send(&c);
	expect(&c, NFS4ERR_NOFILEHANDLE, 3, OP_RENAME);
	nfs4c_compound_destroy(&c);
	check_unchanged(&before, "operations out of place");
	TEST_PASS("operations out of place: OP_NOT_IN_SESSION, SEQUENCE_POS, NOT_ONLY_OP, "
		  "NOFILEHANDLE; nothing run");
}

/* ---- attribute bitmaps ---- */

struct bm_arg {
	uint32_t words;
	uint32_t fill; /* the value of every word after the third */
	bool setattr;
};

static void enc_bitmap_op(struct xdr_enc *x, void *arg)
{
	const struct bm_arg *bm = arg;
	/* word 0: type, change, size (bits 1, 3, 4); word 1: mode (33 - 32) */
	uint32_t w0 = (1u << 1) | (1u << 3) | (1u << 4), w1 = 1u << 1;
	if (bm->setattr) {
		CHECK_OK(xdr_enc_u32(x, OP_SETATTR));
		struct stateid4 zero = {0};
		CHECK_OK(xdr_enc_u32(x, zero.seqid));
		CHECK_OK(xdr_enc_fixed(x, zero.other, sizeof(zero.other)));
		w0 = 0;
		w1 = 1u << 1; /* mode only */
	} else {
		CHECK_OK(xdr_enc_u32(x, OP_GETATTR));
	}
	CHECK_OK(xdr_enc_u32(x, bm->words));
	for (uint32_t i = 0; i < bm->words; i++)
		CHECK_OK(xdr_enc_u32(x, i == 0 ? w0 : i == 1 ? w1 : i == 2 ? 0 : bm->fill));
	if (bm->setattr) {
		/* the mode's value, 0644 */
		CHECK_OK(xdr_enc_u32(x, 4));
		CHECK_OK(xdr_enc_u32(x, 0644));
	}
}

/*
 * GETATTR asks for type, change, size and mode, and, in words 3 and up,
 * either nothing or every attribute there could be; SETATTR sets the
 * mode and, with every bit of words 3 and up, attributes that do not
 * exist. Up to the codecs' 8 words (src/xdr/nfs4.bounds) GETATTR answers
 * with exactly the attributes it supports and SETATTR is ATTRNOTSUPP;
 * longer bitmaps are refused as a whole (REQ_TOO_BIG, the generated
 * decoder's -E2BIG) before any operation of the compound runs past
 * PUTFH. Either way nothing changes.
 */
static void bitmaps(void)
{
	const uint32_t sizes[] = {3, 8, 9, 64, 1000, 100000};
	struct snap before;
	struct nfs4c_attr sup;
	bitmap4 want = {0};
	nfs4c_bitmap_set(&want, FATTR4_SUPPORTED_ATTRS);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &file);
	nfs4c_op_getattr(&c, &want);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_attr(&c, &sup));
	nfs4c_compound_destroy(&c);
	snap(&before);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int kind = 0; kind < 3; kind++) {
			struct bm_arg arg = {.words = sizes[i],
					     .fill = kind ? 0xffffffffu : 0,
					     .setattr = kind == 2};
			struct raw r;
			if (arg.setattr && sizes[i] <= 3)
				continue; /* a valid SETATTR of the mode */
			raw_send(&file, 1, enc_bitmap_op, &arg, NULL, 0, &r);
			CHECK_EQ(r.res.resarray.len, 3);
			const struct nfs_resop4 *op = &r.res.resarray.val[2];
			CHECK_EQ(op->resop, arg.setattr ? OP_SETATTR : OP_GETATTR);
			if (sizes[i] > NFS4_LIMIT_bitmap4) {
				CHECK_EQ(r.res.status, NFS4ERR_REQ_TOO_BIG);
			} else if (arg.setattr) {
				CHECK_EQ(r.res.status, NFS4ERR_ATTRNOTSUPP);
			} else {
				CHECK_EQ(r.res.status, NFS4_OK);
				const bitmap4 *got = &op->opgetattr.resok4.obj_attributes.attrmask;
				const unsigned asked[] = {FATTR4_TYPE, FATTR4_CHANGE, FATTR4_SIZE,
							  FATTR4_MODE};
				for (unsigned bit = 0; bit < 32 * NFS4_LIMIT_bitmap4; bit++) {
					bool in = false;
					for (size_t k = 0; k < sizeof(asked) / sizeof(asked[0]);
					     k++)
						in |= asked[k] == bit;
					if (kind && bit >= 96)
						in = nfs4c_bitmap_isset(&sup.supported, bit);
					CHECK_EQ(nfs4c_bitmap_isset(got, bit), in);
				}
			}
			raw_done(&r);
		}
	}
	/* CREATE and OPEN(create) with an attribute past the known words:
	 * ATTRNOTSUPP, and nothing is made */
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &hdir);
	struct nfs4c_sattr mode = {.set = NFS4C_SA_MODE, .mode = 0700};
	nfs4c_op_create(&c, NF4DIR, "must-not-exist", NULL, NULL, &mode);
	bitmap4 *cm = &c.ops[c.nops - 1].opcreate.createattrs.attrmask;
	cm->len = NFS4_LIMIT_bitmap4;
	cm->val[NFS4_LIMIT_bitmap4 - 1] = 1;
	nfs4t_send(&c);
	expect(&c, NFS4ERR_ATTRNOTSUPP, 3, OP_CREATE);
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &hdir);
	struct nfs4c_open o = {.owner = "x",
			       .owner_len = 1,
			       .access = OPEN4_SHARE_ACCESS_BOTH,
			       .claim = CLAIM_NULL,
			       .name = "must-not-exist",
			       .create = true,
			       .how = GUARDED4,
			       .attrs = mode};
	nfs4c_op_open(&c, &o);
	bitmap4 *om = &c.ops[c.nops - 1].opopen.openhow.how.createattrs.attrmask;
	om->len = NFS4_LIMIT_bitmap4;
	om->val[4] = 0x80000000u;
	nfs4t_send(&c);
	expect(&c, NFS4ERR_ATTRNOTSUPP, 3, OP_OPEN);
	nfs4c_compound_destroy(&c);
	check_unchanged(&before, "large bitmaps");
	TEST_PASS("attribute bitmaps of up to 100,000 words: the supported attributes, "
		  "ATTRNOTSUPP, or REQ_TOO_BIG past the codecs' 8 words; nothing changed");
}

/* ---- a client racing itself ---- */

/*
 * FREE_STATEID of a lock stateid and CLOSE of its open, sent together (as
 * the Linux client does when a process that held a lock closes the file).
 * The last reference to the lock stateid may go in FREE_STATEID while
 * CLOSE walks the open's lock stateids: CLOSE must not take a reference to
 * one that is already going (that freed it twice; found by the kernel
 * client test). Every round: both answered OK (or FREE_STATEID
 * BAD_STATEID when CLOSE took the lock stateid first), and jnfsd lives.
 */
#define RACE_FILES 4
static void close_free_race(void)
{
	unsigned rounds = NFS4T_ASAN ? 150 : 600;
	for (unsigned r = 0; r < rounds; r++) {
		struct nfs4c_fh fh[RACE_FILES];
		struct stateid4 osid[RACE_FILES], lsid[RACE_FILES];
		struct nfs4c_compound c[2 * RACE_FILES];
		for (int i = 0; i < RACE_FILES; i++) {
			char name[32], owner[32];
			snprintf(name, sizeof(name), "race%d", i);
			snprintf(owner, sizeof(owner), "race-%u-%d", r, i);
			nfs4t_open_create(a, &hdir, name, owner, &fh[i], &osid[i]);
			struct nfs4c_lock l = {.type = WRITE_LT,
					       .off = 0,
					       .len = 1,
					       .new_owner = true,
					       .open_stateid = osid[i],
					       .owner = owner,
					       .owner_len = (uint32_t)strlen(owner)};
			nfs4c_compound_init(&c[0], a);
			nfs4c_op_putfh(&c[0], &fh[i]);
			nfs4c_op_lock(&c[0], &l);
			CHECK_EQ(nfs4t_send(&c[0]), NFS4_OK);
			lsid[i] = nfs4c_res(&c[0], OP_LOCK, 0)->oplock.resok4.lock_stateid;
			nfs4c_compound_reset(&c[0]);
			nfs4c_op_putfh(&c[0], &fh[i]);
			nfs4c_op_locku(&c[0], WRITE_LT, &lsid[i], 0, 1);
			CHECK_EQ(nfs4t_send(&c[0]), NFS4_OK);
			lsid[i] = nfs4c_res(&c[0], OP_LOCKU, 0)->oplocku.lock_stateid;
			nfs4c_compound_destroy(&c[0]);
		}
		for (int i = 0; i < RACE_FILES; i++) {
			struct nfs4c_compound *f = &c[2 * i], *k = &c[2 * i + 1];
			nfs4c_compound_init(f, a);
			nfs4c_op_putfh(f, &fh[i]);
			nfs4c_op_free_stateid(f, &lsid[i]);
			nfs4c_compound_init(k, a);
			nfs4c_op_putfh(k, &fh[i]);
			nfs4c_op_close(k, &osid[i]);
		}
		for (int i = 0; i < 2 * RACE_FILES; i++)
			CHECK_OK(nfs4c_start(&c[i]));
		for (int i = 0; i < 2 * RACE_FILES; i++) {
			CHECK_OK(nfs4c_wait(&c[i]));
			if (i % 2)
				CHECK_EQ(c[i].status, NFS4_OK);
			else
				CHECK(c[i].status == NFS4_OK || c[i].status == NFS4ERR_BAD_STATEID ||
				      c[i].status == NFS4ERR_DELAY);
			nfs4c_compound_destroy(&c[i]);
		}
	}
	struct nfs4t_stats st;
	nfs4t_stats(&srv.j, &st);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.brl.locks"), 1); /* the test's own lock */
	printf("ok FREE_STATEID of a lock stateid racing CLOSE of its open, %u rounds of %d: "
	       "each answered, nothing freed twice\n",
	       rounds, RACE_FILES);
}

/* ---- stateids ---- */

static nfsstat4 write_with(struct nfs4c_client *cl, const struct stateid4 *sid)
{
	static const uint8_t junk[16] = "must not land";
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &file);
	nfs4c_op_write(&c, sid, 0, FILE_SYNC4, junk, sizeof(junk));
	nfsstat4 st = nfs4t_send(&c);
	nfs4c_compound_destroy(&c);
	return st;
}

static nfsstat4 test_stateid(struct nfs4c_client *cl, const struct stateid4 *sid)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_test_stateid(&c, sid, 1);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	const struct TEST_STATEID4resok *t =
		&nfs4c_res(&c, OP_TEST_STATEID, 0)->optest_stateid.tsr_resok4;
	CHECK_EQ(t->tsr_status_codes.len, 1);
	nfsstat4 st = t->tsr_status_codes.val[0];
	nfs4c_compound_destroy(&c);
	return st;
}

static void stateids(void)
{
	struct snap before;
	struct stateid4 s;
	snap(&before);

	/* forged: another counter, another client's number, another boot, a
	 * seqid from the future (other = boot | client | counter, docs/nfs4-state.md) */
	s = open_sid;
	s.other[11] ^= 0x5a;
	CHECK_EQ(write_with(a, &s), NFS4ERR_BAD_STATEID);
	CHECK_EQ(test_stateid(a, &s), NFS4ERR_BAD_STATEID);
	s = open_sid;
	s.other[7] ^= 0x01;
	CHECK_EQ(write_with(a, &s), NFS4ERR_BAD_STATEID);
	s = open_sid;
	s.other[3] ^= 0x40;
	CHECK_EQ(write_with(a, &s), NFS4ERR_STALE_STATEID);
	s = open_sid;
	s.seqid += 5;
	CHECK_EQ(write_with(a, &s), NFS4ERR_BAD_STATEID);
	/* the special ones where they do not belong: "current" with no
	 * current stateid, and the invalid one */
	struct stateid4 current = {.seqid = 1}, invalid = {.seqid = UINT32_MAX};
	CHECK_EQ(write_with(a, &current), NFS4ERR_BAD_STATEID);
	CHECK_EQ(write_with(a, &invalid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4t_stateid_op(a, &file, OP_CLOSE, &current, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4t_stateid_op(a, &file, OP_CLOSE, &invalid, NULL), NFS4ERR_BAD_STATEID);

	/* old: the open was upgraded (seqid 2), the lock moved on */
	s = open_sid;
	s.seqid--;
	CHECK_EQ(write_with(a, &s), NFS4ERR_OLD_STATEID);
	CHECK_EQ(nfs4t_stateid_op(a, &file, OP_CLOSE, &s, NULL), NFS4ERR_OLD_STATEID);
	CHECK_EQ(test_stateid(a, &s), NFS4ERR_OLD_STATEID);
	s = lock_sid;
	s.seqid--;
	CHECK_EQ(nfs4t_stateid_op(a, &file, OP_LOCKU, &s, NULL), NFS4ERR_OLD_STATEID);

	/* another client's */
	CHECK_EQ(write_with(b, &open_sid), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4t_stateid_op(b, &file, OP_CLOSE, &open_sid, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4t_stateid_op(b, &file, OP_OPEN_DOWNGRADE, &open_sid, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4t_stateid_op(b, &file, OP_LOCK, &lock_sid, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4t_stateid_op(b, &file, OP_LOCKU, &lock_sid, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4t_stateid_op(b, &file, OP_FREE_STATEID, &lock_sid, NULL), NFS4ERR_BAD_STATEID);
	CHECK_EQ(test_stateid(b, &open_sid), NFS4ERR_BAD_STATEID);
	/* all of them still good for their owner */
	CHECK_EQ(test_stateid(a, &open_sid), NFS4_OK);
	CHECK_EQ(test_stateid(a, &lock_sid), NFS4_OK);
	check_unchanged(&before, "bad stateids");
	struct nfs4t_stats st;
	nfs4t_stats(&srv.j, &st);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.brl.locks"), 1);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.share.opens"), 1);
	TEST_PASS("forged, old, special and other clients' stateids: BAD_STATEID, "
		  "STALE_STATEID, OLD_STATEID; nothing changed");
}

/* ---- a destroyed session ---- */

static void destroyed_session(void)
{
	struct nfs4c_compound c;
	struct nfs4c_info info;
	struct snap before;
	snap(&before);
	nfs4c_get_info(b, &info);
	CHECK_EQ(nfs4c_destroy_session(b), NFS4_OK);
	nfs4c_compound_init(&c, b);
	c.no_sequence = true;
	struct nfs_argop4 *op = nfs4c_op_add(&c, OP_SEQUENCE);
	memcpy(op->opsequence.sa_sessionid, info.sessionid, NFS4_SESSIONID_SIZE);
	op->opsequence.sa_sequenceid = 1;
	harmful(&c);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_BADSESSION, 1, OP_SEQUENCE);
	/* DESTROY_SESSION of it again */
	nfs4c_compound_reset(&c);
	c.no_sequence = true;
	op = nfs4c_op_add(&c, OP_DESTROY_SESSION);
	memcpy(op->opdestroy_session.dsa_sessionid, info.sessionid, NFS4_SESSIONID_SIZE);
	nfs4t_send(&c);
	expect(&c, NFS4ERR_BADSESSION, 1, OP_DESTROY_SESSION);
	nfs4c_compound_destroy(&c);
	check_unchanged(&before, "a destroyed session");
	CHECK_EQ(nfs4c_create_session(b), NFS4_OK);
	TEST_PASS("a destroyed session: BADSESSION, nothing run");
}

/* ---- a restart: stateids of the previous instance ---- */

/* The first compound of a client after the restart finds the server gone
 * and recovers (a new client ID); a compound caught in that is not sent
 * again (-ESTALE), so the client sends one of its own first. */
static void recovered(struct nfs4c_client *cl)
{
	struct nfs4c_compound k;
	nfs4c_compound_init(&k, cl);
	nfs4c_op_putrootfh(&k);
	int err = nfs4c_send(&k);
	CHECK(err == -ESTALE || err == 0);
	nfs4c_compound_destroy(&k);
}

static void restart(void)
{
	struct nfs4c_fh root_c;
	nfs4t_server_stop(&srv);
	nfs4t_server_start(&srv, NULL);
	/* a new client; and the old one, which finds its client ID gone and
	 * gets a new one (its state is lost: it does not reclaim here) */
	struct nfs4c_client *c = nfs4t_client(srv.addr, "hostile-c", &root_c);
	CHECK_EQ(write_with(c, &open_sid), NFS4ERR_STALE_STATEID);
	CHECK_EQ(nfs4t_stateid_op(c, &file, OP_CLOSE, &open_sid, NULL), NFS4ERR_STALE_STATEID);
	CHECK_EQ(nfs4t_stateid_op(c, &file, OP_LOCKU, &lock_sid, NULL), NFS4ERR_STALE_STATEID);
	CHECK_EQ(test_stateid(c, &open_sid), NFS4ERR_BAD_STATEID); /* its list has no STALE */
	recovered(a);
	CHECK_EQ(write_with(a, &open_sid), NFS4ERR_STALE_STATEID);
	CHECK_EQ(nfs4t_stateid_op(a, &file, OP_CLOSE, &open_sid, NULL), NFS4ERR_STALE_STATEID);
	nfs4t_unmount(c);
	recovered(b);
	TEST_PASS("after a restart: STALE_STATEID");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs4-hostile JNFSD JNFS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	const char *dirs[] = {"h", NULL};
	nfs4t_server_init(&srv, argv[1], argv[2], 256, dirs,
			  "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n");
	nfs4t_server_start(&srv, NULL);
	atexit(kill_server);

	struct nfs4c_fh root_b;
	a = nfs4t_client(srv.addr, "hostile-a", &root);
	b = nfs4t_client(srv.addr, "hostile-b", &root_b);
	nfs4t_lookup(a, &root, "h", &hdir);
	struct stateid4 first;
	nfs4t_open_create(a, &hdir, "f", "hostile-owner", &file, &first);
	/* a second OPEN of the owner: the stateid moves to seqid 2 */
	struct nfs4c_fh again;
	nfs4t_open_create(a, &hdir, "f", "hostile-owner", &again, &open_sid);
	CHECK_EQ(open_sid.seqid, first.seqid + 1);
	/* a lock whose stateid has moved on once (lock, then lock more) */
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &file);
	struct nfs4c_lock l = {.type = WRITE_LT,
			       .off = 0,
			       .len = 10,
			       .new_owner = true,
			       .open_stateid = open_sid,
			       .owner = "hl",
			       .owner_len = 2};
	nfs4c_op_lock(&c, &l);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	struct stateid4 l1 = nfs4c_res(&c, OP_LOCK, 0)->oplock.resok4.lock_stateid;
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &file);
	struct nfs4c_lock l2 = {.type = WRITE_LT, .off = 0, .len = 20, .lock_stateid = l1};
	nfs4c_op_lock(&c, &l2);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	lock_sid = nfs4c_res(&c, OP_LOCK, 0)->oplock.resok4.lock_stateid;
	CHECK_EQ(lock_sid.seqid, l1.seqid + 1);
	nfs4c_compound_destroy(&c);

	too_many_ops();
	unknown_ops();
	out_of_place();
	bitmaps();
	stateids();
	close_free_race();
	destroyed_session();

	/* the clients go: unlock, close, leave; nothing is left */
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &file);
	nfs4c_op_locku(&c, WRITE_LT, &lock_sid, 0, 20);
	nfs4c_op_close(&c, &open_sid);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	struct nfs4t_stats st;
	nfs4t_stats(&srv.j, &st);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.stateids"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.brl.locks"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.share.opens"), 0);

	/* stale stateids after a restart (the ones just closed are as good as
	 * any: the new instance never knew them) */
	restart();
	nfs4t_unmount(b);
	nfs4t_unmount(a);
	nfs4t_stats(&srv.j, &st);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.clients"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.sessions"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.stateids"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.slot_cache_bytes"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.brl.locks"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.share.opens"), 0);
	TEST_PASS("the clients left nothing behind");
	nfs4t_server_fini(&srv);
	return 0;
}
