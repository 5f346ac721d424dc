/*
 * test_xdr_gen.c - the rules of the generated codecs (docs/xdr.md; the
 * rule numbers are those of tools/xdrgen/xdrgen.py) on the NFSv4.1/4.2,
 * block layout and MOUNT descriptions, the decode arena (rpc/xdr.h
 * invariant 7), the generated names of enumeration values and status
 * accessors of result unions, and the seed corpus of the xdrgen fuzz
 * target: every seed, written by a second encoder
 * (tools/xdrgen/xdrseeds.py), decodes and encodes back to itself.
 *
 *   test-xdr-gen FUZZ_CORPUS_DIR/xdrgen
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "xdr/mount3.h"
#include "xdr/nfs3.h"
#include "xdr/nfs4.h"
#include "xdr/pnfs_block.h"

/* ---- building encodings by hand ---- */

struct msg {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct msg *m, const void *p, size_t len)
{
	if (m->n + len > m->cap) {
		m->cap = (m->n + len) * 2;
		m->b = realloc(m->b, m->cap);
		CHECK(m->b);
	}
	memcpy(m->b + m->n, p, len);
	m->n += len;
}

static void u32(struct msg *m, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	put(m, b, 4);
}

static void u64(struct msg *m, uint64_t v)
{
	u32(m, (uint32_t)(v >> 32));
	u32(m, (uint32_t)v);
}

static void opaque(struct msg *m, const void *p, uint32_t len)
{
	static const uint8_t zero[4];
	u32(m, len);
	put(m, p, len);
	put(m, zero, (4 - (len & 3)) & 3);
}

static void stateid(struct msg *m)
{
	u32(m, 1);
	put(m, "0123456789ab", 12);
}

static void msg_free(struct msg *m)
{
	free(m->b);
	memset(m, 0, sizeof(*m));
}

/* Decode m as dec into v (zeroed first) with arena a (may be NULL). */
static int dec_with(int (*dec)(struct xdr_dec *, void *), const struct msg *m, void *v, size_t size,
		    struct xdr_arena *a, size_t *used)
{
	struct xdr_dec x;
	memset(v, 0, size);
	xdr_dec_init(&x, m->b, m->n);
	x.arena = a;
	int err = dec(&x, v);
	if (used)
		*used = (size_t)(x.p - m->b);
	return err;
}

/* Encode with enc and check the bytes are m's. */
static void enc_equals(int (*enc)(struct xdr_enc *, const void *), const void *v,
		       const struct msg *m)
{
	struct xdr_enc e;
	xdr_enc_init(&e, m->n + 64);
	CHECK_OK(enc(&e, v));
	CHECK_EQ(xdr_enc_len(&e), m->n);
	uint8_t *flat = malloc(m->n + 1);
	xdr_enc_flatten(&e, flat);
	CHECK(memcmp(flat, m->b, m->n) == 0);
	free(flat);
	xdr_enc_destroy(&e);
}

static struct xdr_arena arena;

static const struct xdr_type *T(const char *name)
{
	static const struct {
		const struct xdr_type *t;
		const unsigned *n;
	} tables[] = {{nfs4_xdr_types, &nfs4_xdr_ntypes},
		      {pnfs_block_xdr_types, &pnfs_block_xdr_ntypes},
		      {nfs3_xdr_types, &nfs3_xdr_ntypes},
		      {mount3_xdr_types, &mount3_xdr_ntypes}};
	for (size_t k = 0; k < 4; k++)
		for (unsigned i = 0; i < *tables[k].n; i++)
			if (!strcmp(tables[k].t[i].name, name))
				return &tables[k].t[i];
	fprintf(stderr, "no type %s\n", name);
	exit(1);
}

static int dec_compound(const struct msg *m, struct COMPOUND4args *c, struct xdr_arena *a)
{
	xdr_arena_reset(&arena);
	return dec_with(nfs4_rpc_dec_COMPOUND4args, m, c, sizeof(*c), a, NULL);
}

static void compound_head(struct msg *m, uint32_t nops)
{
	opaque(m, "tag", 3);
	u32(m, 2); /* minorversion */
	u32(m, nops);
}

/* ---- rule 1: counts ---- */

static void test_counts(void)
{
	struct COMPOUND4args c;
	struct msg m = {0};

	/* over the configured limit, the bytes present: -E2BIG, with the tag
	 * and minor version decoded for the TOO_MANY_OPS reply */
	compound_head(&m, NFS4_LIMIT_COMPOUND4args_argarray + 1);
	for (int i = 0; i <= NFS4_LIMIT_COMPOUND4args_argarray; i++)
		u32(&m, OP_GETFH);
	CHECK_EQ(dec_compound(&m, &c, &arena), -E2BIG);
	CHECK(c.tag.len == 3 && !memcmp(c.tag.val, "tag", 3) && c.minorversion == 2);
	CHECK_EQ(c.argarray.len, 0);
	CHECK_EQ(xdr_arena_held(&arena), 0);
	msg_free(&m);

	/* a count the bytes left cannot hold: -EBADMSG, nothing allocated */
	compound_head(&m, 100);
	u32(&m, OP_GETFH);
	CHECK_EQ(dec_compound(&m, &c, &arena), -EBADMSG);
	CHECK_EQ(xdr_arena_held(&arena), 0);
	msg_free(&m);
	struct TEST_STATEID4args ts;
	u32(&m, 0x7fffffff);
	stateid(&m);
	xdr_arena_reset(&arena);
	CHECK_EQ(dec_with(T("TEST_STATEID4args")->dec, &m, &ts, sizeof(ts), &arena, NULL),
		 -EBADMSG);
	CHECK_EQ(xdr_arena_held(&arena), 0);
	msg_free(&m);

	/* over the protocol's own bound <1>: -EBADMSG even below our limit */
	struct EXCHANGE_ID4args ex;
	put(&m, "verifier", 8);
	opaque(&m, "owner", 5);
	u32(&m, 0);	   /* flags */
	u32(&m, SP4_NONE); /* state protection */
	u32(&m, 2);	   /* eia_client_impl_id<1> */
	for (int i = 0; i < 2; i++) {
		opaque(&m, "d", 1);
		opaque(&m, "n", 1);
		u64(&m, 0);
		u32(&m, 0);
	}
	CHECK_EQ(dec_with(T("EXCHANGE_ID4args")->dec, &m, &ex, sizeof(ex), &arena, NULL), -EBADMSG);
	msg_free(&m);

	/* a file handle over NFS4_FHSIZE; a name over the configured 1024 */
	struct PUTFH4args pf;
	uint8_t big[2048];
	memset(big, 'a', sizeof(big));
	opaque(&m, big, NFS4_FHSIZE + 1);
	CHECK_EQ(dec_with(T("PUTFH4args")->dec, &m, &pf, sizeof(pf), NULL, NULL), -EBADMSG);
	msg_free(&m);
	opaque(&m, big, NFS4_FHSIZE);
	CHECK_OK(dec_with(T("PUTFH4args")->dec, &m, &pf, sizeof(pf), NULL, NULL));
	CHECK_EQ(pf.object.len, NFS4_FHSIZE);
	msg_free(&m);
	struct LOOKUP4args lk;
	opaque(&m, big, NFS4_LIMIT_utf8string + 1);
	CHECK_EQ(dec_with(T("LOOKUP4args")->dec, &m, &lk, sizeof(lk), NULL, NULL), -E2BIG);
	msg_free(&m);
	opaque(&m, big, NFS4_LIMIT_utf8string);
	CHECK_OK(dec_with(T("LOOKUP4args")->dec, &m, &lk, sizeof(lk), NULL, NULL));
	msg_free(&m);

	/* an attribute bitmap one word over its limit (inline) */
	struct GETATTR4args ga;
	u32(&m, NFS4_LIMIT_bitmap4 + 1);
	for (unsigned i = 0; i < NFS4_LIMIT_bitmap4 + 1; i++)
		u32(&m, 0);
	CHECK_EQ(dec_with(T("GETATTR4args")->dec, &m, &ga, sizeof(ga), NULL, NULL), -E2BIG);
	msg_free(&m);
	TEST_PASS("rule 1: counts bounded by the spec, the bytes left and the limits");
}

/* ---- rule 2: allocation ---- */

static void test_allocation(void)
{
	struct COMPOUND4args c;
	struct msg m = {0};
	compound_head(&m, 3);
	u32(&m, OP_PUTROOTFH);
	u32(&m, OP_GETFH);
	u32(&m, OP_LOOKUPP);

	/* no arena: nothing may be allocated */
	CHECK_EQ(dec_compound(&m, &c, NULL), -E2BIG);
	CHECK_OK(dec_compound(&m, &c, &arena));
	CHECK(c.argarray.len == 3 && c.argarray.val[2].argop == OP_LOOKUPP);
	msg_free(&m);

	/* the arena's first buffer serves small decodes without the heap */
	uint8_t first[4096];
	struct xdr_arena small;
	xdr_arena_init(&small, first, sizeof(first), 0);
	compound_head(&m, 2);
	u32(&m, OP_PUTROOTFH);
	u32(&m, OP_GETFH);
	CHECK_OK(dec_with(nfs4_rpc_dec_COMPOUND4args, &m, &c, sizeof(c), &small, NULL));
	CHECK((uint8_t *)c.argarray.val >= first && (uint8_t *)c.argarray.val < first + 4096);
	CHECK_EQ(xdr_arena_held(&small), 0);
	msg_free(&m);

	/* the cap: 128 operations need 128 * sizeof(nfs_argop4) bytes */
	struct xdr_arena capped;
	xdr_arena_init(&capped, NULL, 0, 64 * sizeof(struct nfs_argop4));
	compound_head(&m, 128);
	for (int i = 0; i < 128; i++)
		u32(&m, OP_GETFH);
	CHECK_EQ(dec_with(nfs4_rpc_dec_COMPOUND4args, &m, &c, sizeof(c), &capped, NULL), -E2BIG);
	CHECK(xdr_arena_held(&capped) <= 64 * sizeof(struct nfs_argop4));
	xdr_arena_reset(&capped);
	xdr_arena_init(&capped, NULL, 0, 128 * sizeof(struct nfs_argop4));
	CHECK_OK(dec_with(nfs4_rpc_dec_COMPOUND4args, &m, &c, sizeof(c), &capped, NULL));
	CHECK_EQ(c.argarray.len, 128);
	xdr_arena_reset(&capped);
	CHECK_EQ(xdr_arena_held(&capped), 0);
	msg_free(&m);

	/* the allocator: aligned, zeroed, overflow refused */
	struct xdr_arena a;
	xdr_arena_init(&a, NULL, 0, 1 << 20);
	for (int i = 1; i < 100; i++) {
		uint8_t *p = xdr_arena_alloc(&a, (size_t)i, 3);
		CHECK(p && ((uintptr_t)p % _Alignof(max_align_t)) == 0);
		for (int k = 0; k < 3 * i; k++)
			CHECK(p[k] == 0);
		memset(p, 0xff, (size_t)(3 * i));
	}
	CHECK(xdr_arena_alloc(&a, SIZE_MAX / 2, 4) == NULL);
	CHECK(xdr_arena_alloc(&a, (1 << 20) + 1, 1) == NULL);
	xdr_arena_reset(&a);
	CHECK_EQ(xdr_arena_held(&a), 0);
	TEST_PASS("rule 2: allocation only from the arena, after the bytes, under the cap");
}

/* ---- rules 2-3: strings and opaque data ---- */

static void test_opaques(void)
{
	struct msg m = {0};
	struct WRITE4args w;
	static uint8_t data[70000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13);
	stateid(&m);
	u64(&m, UINT64_MAX - 1);
	u32(&m, FILE_SYNC4);
	opaque(&m, data, sizeof(data));
	size_t used;
	CHECK_OK(dec_with(T("WRITE4args")->dec, &m, &w, sizeof(w), NULL, &used));
	CHECK_EQ(used, m.n);
	CHECK(w.offset == UINT64_MAX - 1 && w.stable == FILE_SYNC4);
	CHECK(w.stateid.seqid == 1 && !memcmp(w.stateid.other, "0123456789ab", 12));
	/* not copied: the data points into the received bytes */
	CHECK(w.data.len == sizeof(data) && w.data.val == m.b + 16 + 8 + 4 + 4);
	/* encoded back without copying either (WRITE4args.data is spliced) */
	struct xdr_enc e;
	xdr_enc_init(&e, m.n);
	CHECK_OK(nfs4_enc_WRITE4args(&e, &w));
	CHECK(e.next == 1 && e.ext[0].iov.iov_base == w.data.val && e.len < 100);
	xdr_enc_destroy(&e);
	enc_equals(T("WRITE4args")->enc, &w, &m);
	msg_free(&m);

	/* a name with a NUL in it is not a string */
	struct LOOKUP4args lk;
	opaque(&m, "a\0b", 3);
	CHECK_EQ(dec_with(T("LOOKUP4args")->dec, &m, &lk, sizeof(lk), NULL, NULL), 0);
	msg_free(&m); /* component4 is an opaque (utf8string) in RFC 8881 */
	struct authsys_parms as;
	u32(&m, 1);
	opaque(&m, "ho\0st", 5); /* machinename is a string */
	u32(&m, 0);
	u32(&m, 0);
	u32(&m, 0);
	CHECK_EQ(dec_with(T("authsys_parms")->dec, &m, &as, sizeof(as), NULL, NULL), -EBADMSG);
	msg_free(&m);
	TEST_PASS("rules 2-3: opaque data not copied, strings without NUL");
}

/* ---- rule 4: enumerations and unions ---- */

static void test_unions(void)
{
	struct msg m = {0};
	struct COMPOUND4args c;

	/* an unknown operation: -ENOMSG, the ops before it decoded, its code
	 * stored, nothing after it read */
	compound_head(&m, 3);
	u32(&m, OP_PUTROOTFH);
	u32(&m, 9999);
	u32(&m, OP_GETFH);
	xdr_arena_reset(&arena);
	size_t used;
	CHECK_EQ(dec_with(nfs4_rpc_dec_COMPOUND4args, &m, &c, sizeof(c), &arena, &used), -ENOMSG);
	CHECK_EQ(c.argarray.len, 1);
	CHECK_EQ(c.argarray.val[0].argop, OP_PUTROOTFH);
	CHECK_EQ(c.argarray.val[1].argop, 9999);
	CHECK_EQ(used, m.n - 4);
	msg_free(&m);
	/* an unknown callback operation alike */
	struct nfs_cb_argop4 cb;
	u32(&m, 77);
	CHECK_EQ(dec_with(T("nfs_cb_argop4")->dec, &m, &cb, sizeof(cb), NULL, NULL), -ENOMSG);
	CHECK_EQ(cb.argop, 77);
	msg_free(&m);

	/* rule 6: an operation that does not decode leaves those before it */
	compound_head(&m, 2);
	u32(&m, OP_SEQUENCE);
	put(&m, "sessionid0123456", 16);
	u32(&m, 1), u32(&m, 2), u32(&m, 3), u32(&m, 1);
	u32(&m, OP_PUTFH);
	u32(&m, 200); /* a handle over NFS4_FHSIZE */
	CHECK_EQ(dec_compound(&m, &c, &arena), -EBADMSG);
	CHECK(c.argarray.len == 1 && c.argarray.val[0].opsequence.sa_slotid == 2);
	msg_free(&m);

	/* a closed enumeration rejects what it does not define */
	struct LOCKT4args lt;
	u32(&m, 5); /* nfs_lock_type4 ends at 4 */
	u64(&m, 0), u64(&m, 1);
	u64(&m, 7), opaque(&m, "o", 1);
	CHECK_EQ(dec_with(T("LOCKT4args")->dec, &m, &lt, sizeof(lt), NULL, NULL), -EBADMSG);
	m.b[3] = WRITEW_LT;
	CHECK_OK(dec_with(T("LOCKT4args")->dec, &m, &lt, sizeof(lt), NULL, NULL));
	CHECK(lt.locktype == WRITEW_LT && lt.length == 1 && lt.owner.clientid == 7);
	msg_free(&m);

	/* an open one decodes anything: CREATE of type 99 takes the default
	 * (void) arm, answered NFS4ERR_BADTYPE by the server */
	struct CREATE4args cr;
	u32(&m, 99);
	opaque(&m, "x", 1);
	u32(&m, 0), u32(&m, 0); /* fattr4: no bits, no values */
	CHECK_OK(dec_with(T("CREATE4args")->dec, &m, &cr, sizeof(cr), NULL, &used));
	CHECK(cr.objtype.type == 99 && cr.objname.len == 1 && used == m.n);
	enc_equals(T("CREATE4args")->enc, &cr, &m);
	msg_free(&m);
	u32(&m, NF4LNK);
	opaque(&m, "target", 6);
	opaque(&m, "x", 1);
	u32(&m, 2), u32(&m, 0), u32(&m, 1u << (FATTR4_MODE - 32)), opaque(&m, "\0\0\1\xa4", 4);
	CHECK_OK(dec_with(T("CREATE4args")->dec, &m, &cr, sizeof(cr), NULL, NULL));
	CHECK(cr.objtype.linkdata.len == 6 && cr.createattrs.attrmask.len == 2);
	CHECK(cr.createattrs.attr_vals.len == 4);
	enc_equals(T("CREATE4args")->enc, &cr, &m);
	msg_free(&m);

	/* a default arm that carries data */
	struct CB_OFFLOAD4args off;
	opaque(&m, "fh", 2);
	stateid(&m);
	u32(&m, NFS4ERR_IO);
	u64(&m, 12345);
	CHECK_OK(dec_with(T("CB_OFFLOAD4args")->dec, &m, &off, sizeof(off), NULL, NULL));
	CHECK(off.coa_offload_info.coa_status == NFS4ERR_IO &&
	      off.coa_offload_info.coa_bytes_copied == 12345);
	enc_equals(T("CB_OFFLOAD4args")->enc, &off, &m);
	msg_free(&m);

	/* a union without a default and a discriminant with no arm */
	struct LAYOUTRETURN4args lr;
	u32(&m, 0), u32(&m, LAYOUT4_BLOCK_VOLUME), u32(&m, LAYOUTIOMODE4_RW);
	u32(&m, LAYOUTRETURN4_ALL);
	CHECK_OK(dec_with(T("LAYOUTRETURN4args")->dec, &m, &lr, sizeof(lr), NULL, NULL));
	msg_free(&m);
	struct CB_LAYOUTRECALL4args clr;
	u32(&m, LAYOUT4_BLOCK_VOLUME), u32(&m, LAYOUTIOMODE4_ANY), u32(&m, 1);
	u32(&m, 9); /* layoutrecall_type4: closed, 1-3 */
	CHECK_EQ(dec_with(T("CB_LAYOUTRECALL4args")->dec, &m, &clr, sizeof(clr), NULL, NULL),
		 -EBADMSG);
	msg_free(&m);
	/* a boolean is 0 or 1 */
	struct RECLAIM_COMPLETE4args rc;
	u32(&m, 2);
	CHECK_EQ(dec_with(T("RECLAIM_COMPLETE4args")->dec, &m, &rc, sizeof(rc), NULL, NULL),
		 -EBADMSG);
	msg_free(&m);
	/* an unknown layout type is the server's to answer */
	struct LAYOUTGET4args lg;
	u32(&m, 0), u32(&m, 5 /* SCSI, RFC 8154 */), u32(&m, 7 /* no such iomode */);
	u64(&m, 0), u64(&m, 4096), u64(&m, 4096);
	stateid(&m);
	u32(&m, 65536);
	CHECK_OK(dec_with(T("LAYOUTGET4args")->dec, &m, &lg, sizeof(lg), NULL, NULL));
	CHECK(lg.loga_layout_type == 5 && lg.loga_iomode == 7);
	msg_free(&m);
	TEST_PASS("rule 4: closed and open enumerations, union arms, unknown operations");
}

/* ---- rule 5: lists ---- */

static void test_lists(void)
{
	/* a READDIR reply of 100,000 entries: walked, not recursed into */
	enum { N = 100000 };
	struct msg m = {0};
	u32(&m, NFS4_OK);
	put(&m, "cookieve", 8);
	u32(&m, 1); /* entries follow */
	for (uint32_t i = 0; i < N; i++) {
		char name[16];
		int len = snprintf(name, sizeof(name), "f%u", i);
		u64(&m, i + 3);
		opaque(&m, name, (uint32_t)len);
		u32(&m, 0), u32(&m, 0); /* attrs */
		u32(&m, i + 1 < N);	/* another one follows */
	}
	u32(&m, 1); /* eof */
	struct READDIR4res r;
	struct xdr_arena a;
	xdr_arena_init(&a, NULL, 0, 64 << 20);
	size_t used;
	CHECK_OK(dec_with(T("READDIR4res")->dec, &m, &r, sizeof(r), &a, &used));
	CHECK_EQ(used, m.n);
	uint32_t n = 0;
	for (const struct entry4 *e = r.resok4.reply.entries; e; e = e->nextentry, n++)
		CHECK(e->cookie == n + 3);
	CHECK(n == N && r.resok4.reply.eof);
	enc_equals(T("READDIR4res")->enc, &r, &m);
	printf("a list of %u entries: %zu bytes encoded, %zu bytes of arena\n", n, m.n,
	       xdr_arena_held(&a));
	/* cut short anywhere inside: an error, never a crash */
	for (size_t cut = m.n - 1; cut > m.n - 200; cut--) {
		struct msg c = {m.b, cut, cut};
		xdr_arena_reset(&a);
		CHECK_EQ(dec_with(T("READDIR4res")->dec, &c, &r, sizeof(r), &a, NULL), -EBADMSG);
	}
	/* the arena's cap stops a long list */
	xdr_arena_reset(&a);
	xdr_arena_init(&a, NULL, 0, 1 << 20);
	CHECK_EQ(dec_with(T("READDIR4res")->dec, &m, &r, sizeof(r), &a, NULL), -E2BIG);
	xdr_arena_reset(&a);
	msg_free(&m);

	/* MOUNT's EXPORT list: a list of lists */
	u32(&m, 1);
	opaque(&m, "/a", 2);
	u32(&m, 1), opaque(&m, "*", 1), u32(&m, 1), opaque(&m, "10.0.0.0/8", 10), u32(&m, 0);
	u32(&m, 1);
	opaque(&m, "/b", 2);
	u32(&m, 0); /* no groups */
	u32(&m, 0);
	exports3 ex;
	xdr_arena_init(&a, NULL, 0, 1 << 20);
	CHECK_OK(dec_with(T("exports3")->dec, &m, &ex, sizeof(ex), &a, NULL));
	CHECK(ex && ex->ex_groups && ex->ex_groups->gr_next && !ex->ex_groups->gr_next->gr_next);
	CHECK(ex->ex_next && !ex->ex_next->ex_groups && !ex->ex_next->ex_next);
	enc_equals(T("exports3")->enc, &ex, &m);
	xdr_arena_reset(&a);
	msg_free(&m);
	TEST_PASS("rule 5: lists decoded and encoded iteratively");
}

/* ---- rule 7: encoders ---- */

static void test_encoders(void)
{
	struct xdr_enc e;
	xdr_enc_init(&e, 4096);
	/* lengths over the limit, values without a case */
	struct GETATTR4args ga = {.attr_request.len = NFS4_LIMIT_bitmap4 + 1};
	CHECK_EQ(nfs4_enc_GETATTR4args(&e, &ga), -EINVAL);
	struct CB_LAYOUTRECALL4args clr = {.clora_type = LAYOUT4_BLOCK_VOLUME,
					   .clora_iomode = LAYOUTIOMODE4_RW};
	clr.clora_recall.lor_recalltype = 9;
	CHECK_EQ(nfs4_enc_CB_LAYOUTRECALL4args(&e, &clr), -EINVAL);
	nfs_lock_type4 lt = 0;
	CHECK_EQ(nfs4_enc_nfs_lock_type4(&e, &lt), -EINVAL);
	struct nfs_argop4 op = {.argop = 9999};
	CHECK_EQ(nfs4_enc_nfs_argop4(&e, &op), -EINVAL);
	/* void arms are the discriminant alone */
	xdr_enc_destroy(&e);
	xdr_enc_init(&e, 4096);
	op.argop = OP_GETFH;
	CHECK_OK(nfs4_enc_nfs_argop4(&e, &op));
	CHECK_EQ(xdr_enc_len(&e), 4);
	/* the stream's max is respected */
	xdr_enc_destroy(&e);
	xdr_enc_init(&e, 8);
	struct PUTFH4args pf = {.object.len = 16};
	CHECK_EQ(nfs4_enc_PUTFH4args(&e, &pf), -EMSGSIZE);
	xdr_enc_destroy(&e);
	/* the block layout types round trip through their opaque carriers */
	struct pnfs_block_extent4 ext[2] = {
		{.bex_file_offset = 0, .bex_length = 4096, .bex_state = PNFS_BLOCK_INVALID_DATA},
		{.bex_file_offset = 4096,
		 .bex_length = UINT64_MAX,
		 .bex_storage_offset = 1ull << 40,
		 .bex_state = PNFS_BLOCK_READ_WRITE_DATA}};
	struct pnfs_block_layoutupdate4 up = {.blu_commit_list = {2, ext}};
	xdr_enc_init(&e, 4096);
	CHECK_OK(pnfs_block_enc_pnfs_block_layoutupdate4(&e, &up));
	struct msg m = {0};
	m.n = m.cap = xdr_enc_len(&e);
	m.b = malloc(m.n);
	xdr_enc_flatten(&e, m.b);
	xdr_enc_destroy(&e);
	struct pnfs_block_layoutupdate4 back;
	xdr_arena_reset(&arena);
	CHECK_OK(dec_with(T("pnfs_block_layoutupdate4")->dec, &m, &back, sizeof(back), &arena,
			  NULL));
	CHECK(back.blu_commit_list.len == 2 && !memcmp(back.blu_commit_list.val, ext, sizeof(ext)));
	msg_free(&m);
	TEST_PASS("rule 7: encoders check limits and cases, never allocate");
}

/* ---- the seeds of the xdrgen fuzz target ---- */

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 0x811c9dc5;
	while (*s)
		h = (h ^ (uint8_t)*s++) * 0x01000193;
	return h;
}

static const struct xdr_type *by_hash(uint32_t h)
{
	const struct xdr_type *const tables[] = {nfs4_xdr_types, pnfs_block_xdr_types,
						 nfs3_xdr_types, mount3_xdr_types};
	const unsigned *const n[] = {&nfs4_xdr_ntypes, &pnfs_block_xdr_ntypes, &nfs3_xdr_ntypes,
				     &mount3_xdr_ntypes};
	for (size_t k = 0; k < 4; k++)
		for (unsigned i = 0; i < *n[k]; i++)
			if (fnv1a(tables[k][i].name) == h)
				return &tables[k][i];
	return NULL;
}

static void test_seeds(const char *dir)
{
	DIR *d = opendir(dir);
	CHECK(d);
	struct dirent *de;
	unsigned n = 0, ops = 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "seed-", 5))
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "rb");
		CHECK(f);
		struct msg m = {0};
		uint8_t buf[4096];
		size_t k;
		while ((k = fread(buf, 1, sizeof(buf), f)))
			put(&m, buf, k);
		fclose(f);
		CHECK(m.n >= 4);
		const struct xdr_type *t = by_hash((uint32_t)m.b[0] << 24 | (uint32_t)m.b[1] << 16 |
						   (uint32_t)m.b[2] << 8 | m.b[3]);
		CHECK(t);
		struct msg body = {m.b + 4, m.n - 4, m.n - 4};
		void *v = malloc(t->size);
		size_t used;
		xdr_arena_reset(&arena);
		int err = dec_with(t->dec, &body, v, t->size, &arena, &used);
		if (err || used != body.n)
			fprintf(stderr, "%s: %s: %d, %zu of %zu bytes\n", de->d_name, t->name, err,
				used, body.n);
		CHECK(!err && used == body.n);
		enc_equals(t->enc, v, &body);
		free(v);
		msg_free(&m);
		n++;
		ops += !strncmp(de->d_name, "seed-nfs_argop4-", 16);
	}
	closedir(d);
	printf("%u seeds (%u operations) decode and encode back to themselves\n", n, ops);
	CHECK(ops == 70 && n > 200);
	TEST_PASS("seeds: the second encoder and the generated codecs agree");
}

/* ---- names and statuses: E_name(), U_status(), U_set_status() ---- */

/* The status a result op carries, as the encoder writes it: the word
 * after the opcode. */
static uint32_t encoded_status(int (*enc)(struct xdr_enc *, const void *), const void *v)
{
	struct xdr_enc e;
	uint8_t flat[64];
	xdr_enc_init(&e, sizeof(flat));
	CHECK_OK(enc(&e, v));
	CHECK(xdr_enc_len(&e) >= 8);
	xdr_enc_flatten(&e, flat);
	xdr_enc_destroy(&e);
	return (uint32_t)flat[4] << 24 | (uint32_t)flat[5] << 16 | (uint32_t)flat[6] << 8 | flat[7];
}

/* Every result of union U (opcodes 0-last, named by name): the status set
 * is the one read and the one encoded after the opcode; an opcode name()
 * does not know has none. n counts the results. */
#define CHECK_STATUSES(U, name, last, n)                                                           \
	for (int32_t op = 0; op <= (last); op++) {                                                 \
		struct U r;                                                                        \
		memset(&r, 0, sizeof(r));                                                          \
		r.resop = op;                                                                      \
		if (!name(op)) {                                                                   \
			CHECK_EQ(U##_set_status(&r, NFS4ERR_DELAY), -EINVAL);                      \
			CHECK_EQ(U##_status(&r), NFS4ERR_OP_ILLEGAL);                              \
			continue;                                                                  \
		}                                                                                  \
		CHECK_OK(U##_set_status(&r, NFS4ERR_DELAY));                                       \
		CHECK_EQ(U##_status(&r), NFS4ERR_DELAY);                                           \
		CHECK_EQ(encoded_status(T(#U)->enc, &r), (uint32_t)NFS4ERR_DELAY);                 \
		(n)++;                                                                             \
	}

static void test_names_status(void)
{
	CHECK(!strcmp(nfsstat4_name(NFS4_OK), "NFS4_OK"));
	CHECK(!strcmp(nfsstat4_name(NFS4ERR_BADSESSION), "NFS4ERR_BADSESSION"));
	CHECK(!strcmp(nfsstat4_name(NFS4ERR_CB_PATH_DOWN), "NFS4ERR_CB_PATH_DOWN"));
	CHECK(nfsstat4_name(10000) == NULL && nfsstat4_name(-1) == NULL);
	CHECK(!strcmp(nfs_opnum4_name(OP_SEQUENCE), "OP_SEQUENCE"));
	CHECK(!strcmp(nfs_opnum4_name(OP_ILLEGAL), "OP_ILLEGAL"));
	CHECK(nfs_opnum4_name(2) == NULL);
	CHECK(!strcmp(nfs_cb_opnum4_name(OP_CB_LAYOUTRECALL), "OP_CB_LAYOUTRECALL"));
	CHECK(!strcmp(layouttype4_name(LAYOUT4_BLOCK_VOLUME), "LAYOUT4_BLOCK_VOLUME"));
	CHECK(!strcmp(pnfs_block_extent_state4_name(PNFS_BLOCK_INVALID_DATA),
		      "PNFS_BLOCK_INVALID_DATA"));
	CHECK(!strcmp(nfsstat3_name(NFS3ERR_STALE), "NFS3ERR_STALE"));
	CHECK(!strcmp(mountstat3_name(MNT3ERR_ACCES), "MNT3ERR_ACCES"));

	unsigned ops = 0, cbops = 0;
	CHECK_STATUSES(nfs_resop4, nfs_opnum4_name, OP_ILLEGAL, ops);
	CHECK_STATUSES(nfs_cb_resop4, nfs_cb_opnum4_name, OP_CB_ILLEGAL, cbops);
	printf("%u operation and %u callback results carry the status set\n", ops, cbops);
	CHECK(ops == 70 && cbops == 14);
	TEST_PASS("names and statuses: generated from the descriptions, as encoded");
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	xdr_arena_init(&arena, NULL, 0, 4 << 20);
	test_counts();
	test_allocation();
	test_opaques();
	test_unions();
	test_lists();
	test_encoders();
	test_names_status();
	test_seeds(argv[1]);
	xdr_arena_reset(&arena);
	return 0;
}
