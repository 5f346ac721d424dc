/*
 * test_nfs4c.c - the NFSv4.1 client library (src/nfs4c) without a server.
 *
 *  - the slot table: slots.h's state diagram, limits and invariants;
 *  - compounds built by the helpers, encoded, and read back by the
 *    generated decoders; attributes encoded for CREATE/SETATTR and fattr4
 *    values decoded, with damaged ones refused;
 *  - the backchannel (cb.h) fed hand-encoded call records: every row of
 *    its CB_SEQUENCE table, replays byte for byte, the RPC errors;
 *  - the whole client against a scripted peer on 127.0.0.1: the test
 *    accepts the client's connection and answers each call with a reply it
 *    encodes itself (no server logic: each case scripts exactly the
 *    replies it needs). Session setup, slots and sequence ids, replies out
 *    of order matched by xid, the server's slot limits and status flags,
 *    callbacks on the same connection, hostile replies, and recovery: a
 *    broken connection or an overdue reply (reconnect, bind, the same
 *    bytes sent again), a lost session, a lost client ID.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "base/time.h"
#include "check.h"
#include "nfs4c/nfs4c.h"
#include "rpc/clnt.h"
#include "rpc/record.h"

/* ---- the slot table ------------------------------------------------------ */

static void test_slots(void)
{
	struct nfs4c_slots s;
	uint32_t id, id2;

	nfs4c_slots_init(&s, 4);
	nfs4c_slots_assert(&s);
	CHECK_EQ(s.nslots, 4);
	CHECK_EQ(s.highest, 3);
	CHECK_EQ(s.target, 3);
	for (uint32_t i = 0; i < 4; i++)
		CHECK_EQ(s.slot[i].seqid, 1);

	/* lowest free first; sa_highest_slotid follows the busy ones */
	CHECK_OK(nfs4c_slots_take(&s, -1, &id));
	CHECK_EQ(id, 0);
	CHECK_EQ(nfs4c_slots_highest_busy(&s), 0);
	CHECK_OK(nfs4c_slots_take(&s, -1, &id));
	CHECK_EQ(id, 1);
	CHECK_EQ(nfs4c_slots_highest_busy(&s), 1);
	CHECK_OK(nfs4c_slots_take(&s, 3, &id));
	CHECK_EQ(id, 3);
	CHECK_EQ(nfs4c_slots_highest_busy(&s), 3);
	CHECK_EQ(nfs4c_slots_take(&s, 3, &id), -EBUSY);
	CHECK_EQ(nfs4c_slots_take(&s, 4, &id), -EINVAL);
	CHECK_OK(nfs4c_slots_take(&s, -1, &id));
	CHECK_EQ(id, 2);
	CHECK_EQ(nfs4c_slots_take(&s, -1, &id), -EAGAIN);
	CHECK_EQ(s.nbusy, 4);
	nfs4c_slots_assert(&s);

	/* invariant 3: only PROCESSED moves the seqid */
	nfs4c_slots_done(&s, 0, NFS4C_SLOT_PROCESSED);
	nfs4c_slots_done(&s, 1, NFS4C_SLOT_UNUSED);
	nfs4c_slots_done(&s, 2, NFS4C_SLOT_LOST);
	CHECK_EQ(s.slot[0].seqid, 2);
	CHECK_EQ(s.slot[1].seqid, 1);
	CHECK_EQ(s.slot[2].state, NFS4C_SLOT_DEAD);
	CHECK_EQ(s.ndead, 1);
	CHECK_EQ(nfs4c_slots_highest_busy(&s), 3);
	nfs4c_slots_assert(&s);

	/* a DEAD slot is never handed out again */
	CHECK_EQ(nfs4c_slots_take(&s, 2, &id), -ENOSPC);
	CHECK_OK(nfs4c_slots_take(&s, -1, &id));
	CHECK_OK(nfs4c_slots_take(&s, -1, &id2));
	CHECK_EQ(id, 0);
	CHECK_EQ(id2, 1);
	CHECK_EQ(nfs4c_slots_take(&s, -1, &id), -EAGAIN);
	nfs4c_slots_done(&s, 0, NFS4C_SLOT_PROCESSED);
	nfs4c_slots_done(&s, 1, NFS4C_SLOT_PROCESSED);
	nfs4c_slots_done(&s, 3, NFS4C_SLOT_PROCESSED);
	CHECK_EQ(s.slot[0].seqid, 3);
	CHECK_EQ(s.slot[3].seqid, 2);

	/* the target keeps take() below it; explicit slots ignore it */
	nfs4c_slots_set_limits(&s, 3, 0);
	CHECK_OK(nfs4c_slots_take(&s, -1, &id));
	CHECK_EQ(id, 0);
	CHECK_EQ(nfs4c_slots_take(&s, -1, &id2), -EAGAIN);
	CHECK_OK(nfs4c_slots_take(&s, 3, &id2));
	nfs4c_slots_done(&s, 3, NFS4C_SLOT_UNUSED);
	nfs4c_slots_done(&s, 0, NFS4C_SLOT_PROCESSED);

	/* a lower highest: the server forgot slots 2 and 3, which restart
	 * at 1; a raised one does not bring old seqids back */
	nfs4c_slots_set_limits(&s, 1, 3);
	CHECK_EQ(s.highest, 1);
	CHECK_EQ(s.slot[3].seqid, 1);
	CHECK_EQ(s.slot[0].seqid, 4);
	nfs4c_slots_set_limits(&s, 3, 3);
	CHECK_EQ(s.slot[3].seqid, 1);
	/* invariant 2: a server's values past the table are clamped */
	nfs4c_slots_set_limits(&s, 1000, 77);
	CHECK_EQ(s.highest, 3);
	CHECK_EQ(s.target, 3);
	nfs4c_slots_assert(&s);

	/* every usable slot dead: -ENOSPC, not a wait forever */
	nfs4c_slots_init(&s, 2);
	CHECK_OK(nfs4c_slots_take(&s, -1, &id));
	nfs4c_slots_done(&s, id, NFS4C_SLOT_LOST);
	CHECK_OK(nfs4c_slots_take(&s, -1, &id));
	nfs4c_slots_done(&s, id, NFS4C_SLOT_LOST);
	CHECK_EQ(nfs4c_slots_take(&s, -1, &id), -ENOSPC);
	/* seqids wrap as the server counts them */
	nfs4c_slots_init(&s, 300);
	CHECK_EQ(s.nslots, NFS4C_MAX_SLOTS);
	nfs4c_slots_set_seqid(&s, 5, UINT32_MAX);
	CHECK_OK(nfs4c_slots_take(&s, 5, &id));
	nfs4c_slots_done(&s, 5, NFS4C_SLOT_PROCESSED);
	CHECK_EQ(s.slot[5].seqid, 0);
	nfs4c_slots_assert(&s);
	TEST_PASS("slots");
}

/* ---- compounds: built, encoded, read back by the generated decoders ------- */

static const struct stateid4 sid_a = {7, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
static const struct stateid4 sid_b = {9, {0xa, 0xb, 0xc}};

static bool str_eq(const utf8string *u, const char *s)
{
	return u->len == strlen(s) && !memcmp(u->val, s, u->len);
}

/* Decode c's encoding as a server would. */
static int decode_args(struct nfs4c_compound *c, struct xdr_enc *x, struct xdr_arena *arena,
		       uint8_t **flat, struct COMPOUND4args *args)
{
	struct xdr_dec d;
	xdr_enc_init(x, 64u << 20);
	CHECK_OK(nfs4c_compound_encode(c, x));
	*flat = xmalloc(xdr_enc_len(x));
	xdr_enc_flatten(x, *flat);
	xdr_dec_init(&d, *flat, xdr_enc_len(x));
	xdr_arena_init(arena, NULL, 0, 16u << 20);
	d.arena = arena;
	memset(args, 0, sizeof(*args));
	int err = nfs4_dec_COMPOUND4args(&d, args);
	if (!err)
		CHECK_EQ(xdr_dec_remaining(&d), 0);
	return err;
}

static void check_sattr(const struct fattr4 *f, uint32_t mode, uint64_t size, uint32_t uid)
{
	struct nfs4c_attr a;
	CHECK_OK(nfs4c_attr_decode(f, &a));
	CHECK(nfs4c_bitmap_isset(&a.have, FATTR4_MODE));
	CHECK_EQ(a.mode, mode);
	if (size != UINT64_MAX) {
		CHECK(nfs4c_bitmap_isset(&a.have, FATTR4_SIZE));
		CHECK_EQ(a.size, size);
	}
	if (uid != UINT32_MAX) {
		CHECK_EQ(a.uid, uid);
		CHECK_EQ(a.gid, uid + 1);
		CHECK(nfs4c_bitmap_isset(&a.have, FATTR4_TIME_MODIFY_SET));
	}
}

static void test_compound_encode(void)
{
	struct nfs4c_compound c;
	struct xdr_enc x;
	struct xdr_arena arena;
	struct COMPOUND4args args;
	uint8_t *flat, data[100];
	struct nfs4c_fh fh = {.len = 5, .val = {1, 2, 3, 4, 5}};
	uint8_t verf[8] = {8, 7, 6, 5, 4, 3, 2, 1};
	bitmap4 bm = {0};

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	nfs4c_compound_init(&c, NULL);
	c.no_sequence = true;
	c.tag = "t1";
	c.minorversion = 2;
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_lookup_path(&c, "/a//bb/ccc/");
	nfs4c_op_getfh(&c);
	nfs4c_op_getattr(&c, NULL);
	struct nfs4c_open o = {.owner = "own",
			       .owner_len = 3,
			       .access = OPEN4_SHARE_ACCESS_BOTH,
			       .deny = OPEN4_SHARE_DENY_WRITE,
			       .claim = CLAIM_NULL,
			       .name = "f",
			       .create = true,
			       .how = GUARDED4,
			       .attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	nfs4c_op_open(&c, &o);
	nfs4c_op_write(&c, &sid_a, 4096, UNSTABLE4, data, sizeof(data));
	nfs4c_op_commit(&c, 0, 0);
	struct nfs4c_lock l = {.type = WRITE_LT,
			       .off = 10,
			       .len = 20,
			       .new_owner = true,
			       .open_stateid = sid_a,
			       .owner = "lk",
			       .owner_len = 2};
	nfs4c_op_lock(&c, &l);
	nfs4c_op_lockt(&c, READ_LT, 1, NFS4_UINT64_MAX, "other", 5);
	nfs4c_op_locku(&c, WRITE_LT, &sid_b, 10, 20);
	nfs4c_op_close(&c, &sid_a);
	nfs4c_op_remove(&c, "gone");
	nfs4c_op_savefh(&c);
	nfs4c_op_rename(&c, "old", "new");
	nfs4c_op_link(&c, "ln");
	struct nfs4c_sattr sa = {.set = NFS4C_SA_MODE, .mode = 0755};
	nfs4c_op_create(&c, NF4DIR, "dir", NULL, NULL, &sa);
	nfs4c_op_create(&c, NF4LNK, "sym", "target/path", NULL, NULL);
	nfs4c_bitmap_set(&bm, FATTR4_FILEID);
	nfs4c_op_readdir(&c, 5, verf, 4096, 32768, &bm);
	struct nfs4c_sattr sa2 = {.set = NFS4C_SA_MODE | NFS4C_SA_SIZE | NFS4C_SA_UID |
					 NFS4C_SA_GID | NFS4C_SA_MTIME,
				  .mode = 0600,
				  .size = 12345,
				  .uid = 1000,
				  .gid = 1001,
				  .mtime_now = true};
	nfs4c_op_setattr(&c, &sid_a, &sa2);
	nfs4c_op_allocate(&c, &sid_a, 0, 1 << 20);
	nfs4c_op_deallocate(&c, &sid_a, 4096, 8192);
	nfs4c_op_seek(&c, &sid_a, 100, NFS4_CONTENT_HOLE);
	nfs4c_op_copy(&c, &sid_a, &sid_b, 1, 2, 3);
	nfs4c_op_read_plus(&c, &sid_a, 0, 65536);
	nfs4c_op_clone(&c, &sid_b, &sid_a, 4, 5, 6);
	nfs4c_op_read(&c, &sid_b, 77, 88);
	nfs4c_op_reclaim_complete(&c, true);
	struct stateid4 two[2] = {sid_a, sid_b};
	nfs4c_op_test_stateid(&c, two, 2);
	nfs4c_op_free_stateid(&c, &sid_b);
	nfs4c_op_secinfo_no_name(&c, SECINFO_STYLE4_PARENT);
	struct nfs4c_open prev = {.owner = "own",
				  .owner_len = 3,
				  .access = OPEN4_SHARE_ACCESS_READ,
				  .claim = CLAIM_PREVIOUS,
				  .prev_deleg = OPEN_DELEGATE_NONE};
	nfs4c_op_open(&c, &prev);
	struct nfs4c_open ex = {.owner = "own",
				.owner_len = 3,
				.access = OPEN4_SHARE_ACCESS_WRITE,
				.claim = CLAIM_NULL,
				.name = "x",
				.create = true,
				.how = EXCLUSIVE4_1,
				.attrs = {.set = NFS4C_SA_MODE, .mode = 0600}};
	memcpy(ex.verf, verf, 8);
	nfs4c_op_open(&c, &ex);
	static const uint8_t devid[16] = "device-id-16byte";
	nfs4c_op_getdeviceinfo(&c, devid, LAYOUT4_BLOCK_VOLUME, 65536, 6);
	nfs4c_op_getdevicelist(&c, LAYOUT4_BLOCK_VOLUME, 32, 17, verf);
	nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_RW, 8192, 65536, 4096, &sid_a,
			   32768);
	struct nfs4c_layoutcommit lc = {.off = 4096,
					.len = 8192,
					.stateid = sid_b,
					.have_last_write = true,
					.last_write = 12287,
					.have_mtime = true,
					.mtime = {1700000000, 5},
					.type = LAYOUT4_BLOCK_VOLUME,
					.body = "\0\0\0\0",
					.body_len = 4};
	nfs4c_op_layoutcommit(&c, &lc);
	nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0,
			      NFS4_UINT64_MAX, &sid_b);
	nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_READ, LAYOUTRETURN4_ALL, 1, 2,
			      NULL);
	nfs4c_op_add(&c, 9999); /* unknown to the codecs: sent as its number */
	uint32_t n = c.nops;
	CHECK_EQ(n, 41);

	/* -ENOMSG at the unknown operation, everything before it decoded */
	CHECK_EQ(decode_args(&c, &x, &arena, &flat, &args), -ENOMSG);
	CHECK_EQ(args.argarray.len, n - 1);
	CHECK(str_eq(&args.tag, "t1"));
	CHECK_EQ(args.minorversion, 2);
	CHECK_EQ(args.argarray.val[n - 1].argop, 9999);
	/* its number is the last word of the encoding */
	size_t len = xdr_enc_len(&x);
	CHECK_EQ(flat[len - 1] | flat[len - 2] << 8, 9999);

	const struct nfs_argop4 *a = args.argarray.val;
	CHECK_EQ(a[0].argop, OP_PUTFH);
	CHECK_EQ(a[0].opputfh.object.len, 5);
	CHECK(!memcmp(a[0].opputfh.object.val, fh.val, 5));
	CHECK(str_eq(&a[1].oplookup.objname, "a"));
	CHECK(str_eq(&a[2].oplookup.objname, "bb"));
	CHECK(str_eq(&a[3].oplookup.objname, "ccc"));
	CHECK_EQ(a[4].argop, OP_GETFH);
	CHECK_EQ(a[5].argop, OP_GETATTR);
	CHECK(nfs4c_bitmap_isset(&a[5].opgetattr.attr_request, FATTR4_MOUNTED_ON_FILEID));
	CHECK(nfs4c_bitmap_isset(&a[5].opgetattr.attr_request, FATTR4_TYPE));
	CHECK(!nfs4c_bitmap_isset(&a[5].opgetattr.attr_request, FATTR4_ACL));
	const struct OPEN4args *op = &a[6].opopen;
	CHECK_EQ(op->seqid, 0);
	CHECK_EQ(op->share_access, OPEN4_SHARE_ACCESS_BOTH);
	CHECK_EQ(op->share_deny, OPEN4_SHARE_DENY_WRITE);
	CHECK(op->owner.owner.len == 3 && !memcmp(op->owner.owner.val, "own", 3));
	CHECK_EQ(op->openhow.opentype, OPEN4_CREATE);
	CHECK_EQ(op->openhow.how.mode, GUARDED4);
	check_sattr(&op->openhow.how.createattrs, 0644, UINT64_MAX, UINT32_MAX);
	CHECK_EQ(op->claim.claim, CLAIM_NULL);
	CHECK(str_eq(&op->claim.file, "f"));
	const struct WRITE4args *w = &a[7].opwrite;
	CHECK(w->stateid.seqid == 7 && !memcmp(w->stateid.other, sid_a.other, 12));
	CHECK_EQ(w->offset, 4096);
	CHECK_EQ(w->stable, UNSTABLE4);
	CHECK(w->data.len == sizeof(data) && !memcmp(w->data.val, data, sizeof(data)));
	CHECK_EQ(a[8].argop, OP_COMMIT);
	const struct LOCK4args *lk = &a[9].oplock;
	CHECK(lk->locktype == WRITE_LT && lk->offset == 10 && lk->length == 20 && !lk->reclaim);
	CHECK(lk->locker.new_lock_owner);
	CHECK(lk->locker.open_owner.open_stateid.seqid == 7);
	CHECK(lk->locker.open_owner.lock_owner.owner.len == 2);
	CHECK(a[10].oplockt.locktype == READ_LT && a[10].oplockt.length == NFS4_UINT64_MAX);
	CHECK(a[10].oplockt.owner.owner.len == 5);
	CHECK(a[11].oplocku.lock_stateid.seqid == 9 && a[11].oplocku.length == 20);
	CHECK(a[12].opclose.open_stateid.seqid == 7);
	CHECK(str_eq(&a[13].opremove.target, "gone"));
	CHECK_EQ(a[14].argop, OP_SAVEFH);
	CHECK(str_eq(&a[15].oprename.oldname, "old") && str_eq(&a[15].oprename.newname, "new"));
	CHECK(str_eq(&a[16].oplink.newname, "ln"));
	CHECK(a[17].opcreate.objtype.type == NF4DIR && str_eq(&a[17].opcreate.objname, "dir"));
	check_sattr(&a[17].opcreate.createattrs, 0755, UINT64_MAX, UINT32_MAX);
	CHECK(a[18].opcreate.objtype.type == NF4LNK);
	CHECK(a[18].opcreate.objtype.linkdata.len == 11 &&
	      !memcmp(a[18].opcreate.objtype.linkdata.val, "target/path", 11));
	CHECK_EQ(a[18].opcreate.createattrs.attrmask.len, 0);
	const struct READDIR4args *rd = &a[19].opreaddir;
	CHECK(rd->cookie == 5 && !memcmp(rd->cookieverf, verf, 8) && rd->dircount == 4096 &&
	      rd->maxcount == 32768 && nfs4c_bitmap_isset(&rd->attr_request, FATTR4_FILEID));
	CHECK(a[20].opsetattr.stateid.seqid == 7);
	check_sattr(&a[20].opsetattr.obj_attributes, 0600, 12345, 1000);
	CHECK(a[21].opallocate.aa_length == 1 << 20);
	CHECK(a[22].opdeallocate.da_offset == 4096 && a[22].opdeallocate.da_length == 8192);
	CHECK(a[23].opseek.sa_offset == 100 && a[23].opseek.sa_what == NFS4_CONTENT_HOLE);
	CHECK(a[24].opcopy.ca_src_stateid.seqid == 7 && a[24].opcopy.ca_dst_stateid.seqid == 9);
	CHECK(a[24].opcopy.ca_count == 3 && a[24].opcopy.ca_synchronous);
	CHECK(a[25].opread_plus.rpa_count == 65536);
	CHECK(a[26].opclone.cl_src_stateid.seqid == 9 && a[26].opclone.cl_count == 6);
	CHECK(a[27].opread.offset == 77 && a[27].opread.count == 88);
	CHECK(a[28].opreclaim_complete.rca_one_fs);
	CHECK(a[29].optest_stateid.ts_stateids.len == 2 &&
	      a[29].optest_stateid.ts_stateids.val[1].seqid == 9);
	CHECK(a[30].opfree_stateid.fsa_stateid.seqid == 9);
	CHECK(a[31].opsecinfo_no_name == SECINFO_STYLE4_PARENT);
	CHECK(a[32].opopen.claim.claim == CLAIM_PREVIOUS &&
	      a[32].opopen.claim.delegate_type == OPEN_DELEGATE_NONE &&
	      a[32].opopen.openhow.opentype == OPEN4_NOCREATE);
	const struct createhow4 *h = &a[33].opopen.openhow.how;
	CHECK(h->mode == EXCLUSIVE4_1 && !memcmp(h->ch_createboth.cva_verf, verf, 8));
	check_sattr(&h->ch_createboth.cva_attrs, 0600, UINT64_MAX, UINT32_MAX);
	const struct GETDEVICEINFO4args *gdi = &a[34].opgetdeviceinfo;
	CHECK(!memcmp(gdi->gdia_device_id, devid, 16) && gdi->gdia_maxcount == 65536 &&
	      gdi->gdia_layout_type == LAYOUT4_BLOCK_VOLUME && gdi->gdia_notify_types.len == 1 &&
	      gdi->gdia_notify_types.val[0] == 6);
	const struct GETDEVICELIST4args *gdl = &a[35].opgetdevicelist;
	CHECK(gdl->gdla_maxdevices == 32 && gdl->gdla_cookie == 17 &&
	      !memcmp(gdl->gdla_cookieverf, verf, 8));
	const struct LAYOUTGET4args *lg = &a[36].oplayoutget;
	CHECK(lg->loga_iomode == LAYOUTIOMODE4_RW && lg->loga_offset == 8192 &&
	      lg->loga_length == 65536 && lg->loga_minlength == 4096 &&
	      lg->loga_stateid.seqid == 7 && lg->loga_maxcount == 32768 &&
	      !lg->loga_signal_layout_avail);
	const struct LAYOUTCOMMIT4args *lca = &a[37].oplayoutcommit;
	CHECK(lca->loca_offset == 4096 && lca->loca_length == 8192 && !lca->loca_reclaim &&
	      lca->loca_stateid.seqid == 9);
	CHECK(lca->loca_last_write_offset.no_newoffset &&
	      lca->loca_last_write_offset.no_offset == 12287);
	CHECK(lca->loca_time_modify.nt_timechanged &&
	      lca->loca_time_modify.nt_time.seconds == 1700000000 &&
	      lca->loca_time_modify.nt_time.nseconds == 5);
	CHECK(lca->loca_layoutupdate.lou_type == LAYOUT4_BLOCK_VOLUME &&
	      lca->loca_layoutupdate.lou_body.len == 4);
	const struct LAYOUTRETURN4args *lr = &a[38].oplayoutreturn;
	CHECK(lr->lora_layoutreturn.lr_returntype == LAYOUTRETURN4_FILE &&
	      lr->lora_iomode == LAYOUTIOMODE4_ANY &&
	      lr->lora_layoutreturn.lr_layout.lrf_length == NFS4_UINT64_MAX &&
	      lr->lora_layoutreturn.lr_layout.lrf_stateid.seqid == 9);
	CHECK(a[39].oplayoutreturn.lora_layoutreturn.lr_returntype == LAYOUTRETURN4_ALL &&
	      a[39].oplayoutreturn.lora_iomode == LAYOUTIOMODE4_READ);
	free(flat);
	xdr_arena_reset(&arena);
	xdr_enc_destroy(&x);

	/* what cannot be built is reported by the send (and the encode) */
	nfs4c_compound_reset(&c);
	c.no_sequence = true;
	char longname[2000];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK_EQ(nfs4c_op_lookup_path(&c, longname), -ENAMETOOLONG);
	xdr_enc_init(&x, 1 << 20);
	CHECK_EQ(nfs4c_compound_encode(&c, &x), -ENAMETOOLONG);
	xdr_enc_destroy(&x);
	nfs4c_compound_reset(&c);
	c.no_sequence = true;
	for (unsigned i = 0; i < NFS4C_MAX_OPS; i++)
		CHECK(nfs4c_op_add(&c, OP_GETFH));
	CHECK(!nfs4c_op_add(&c, OP_GETFH));
	xdr_enc_init(&x, 1 << 20);
	CHECK_EQ(nfs4c_compound_encode(&c, &x), -E2BIG);
	xdr_enc_destroy(&x);

	/* more operations than the codecs' limit are still sent (tests of
	 * TOO_MANY_OPS): the count on the wire is what was appended */
	nfs4c_compound_reset(&c);
	c.no_sequence = true;
	for (unsigned i = 0; i < 10000; i++)
		nfs4c_op_putrootfh(&c);
	CHECK_EQ(decode_args(&c, &x, &arena, &flat, &args), -E2BIG);
	CHECK_EQ(flat[8] << 24 | flat[9] << 16 | flat[10] << 8 | flat[11], 10000);
	CHECK_EQ(xdr_enc_len(&x), 12 + 4 * 10000);
	free(flat);
	xdr_arena_reset(&arena);
	xdr_enc_destroy(&x);
	nfs4c_compound_destroy(&c);
	TEST_PASS("compound encode");
}

/* ---- fattr4 values -------------------------------------------------------- */

/* A GETATTR result with many attributes, encoded by the generated
 * encoders in bit order; *bm gets the bitmap. Returns the bytes. */
static size_t build_attrs(uint8_t *out, size_t cap, bitmap4 *bm)
{
	struct xdr_enc x;
	xdr_enc_init_buf(&x, out, cap, cap);
	memset(bm, 0, sizeof(*bm));
	nfs_ftype4 type = NF4REG;
	uint64_t change = 0x1122334455667788ull, size = 1 << 20, fileid = 4242, mofid = 4243;
	uint64_t used = 1 << 21;
	struct fsid4 fsid = {3, 4};
	uint32_t lease = 90, mode = 0640, nlink = 2;
	nfs_fh4 fh = {3, {9, 8, 7}};
	struct nfsace4 aces[2] = {{.type = 0, .who = {5, (const uint8_t *)"OWNER"}},
				  {.type = 1, .who = {1, (const uint8_t *)"x"}}};
	fattr4_acl acl = {2, aces};
	utf8string owner = {4, (const uint8_t *)"1000"}, group = {9, (const uint8_t *)"staff@dom"};
	struct specdata4 rdev = {8, 1};
	struct nfstime4 at = {100, 1}, ct = {200, 2}, mt = {300, 3};
	layouttype4 lt[1] = {LAYOUT4_BLOCK_VOLUME};
	fattr4_fs_layout_types lts = {1, lt};

	nfs4c_bitmap_set(bm, FATTR4_TYPE);
	CHECK_OK(nfs4_enc_fattr4_type(&x, &type));
	nfs4c_bitmap_set(bm, FATTR4_CHANGE);
	CHECK_OK(nfs4_enc_fattr4_change(&x, &change));
	nfs4c_bitmap_set(bm, FATTR4_SIZE);
	CHECK_OK(nfs4_enc_fattr4_size(&x, &size));
	nfs4c_bitmap_set(bm, FATTR4_FSID);
	CHECK_OK(nfs4_enc_fattr4_fsid(&x, &fsid));
	nfs4c_bitmap_set(bm, FATTR4_LEASE_TIME);
	CHECK_OK(nfs4_enc_fattr4_lease_time(&x, &lease));
	nfs4c_bitmap_set(bm, FATTR4_ACL);
	CHECK_OK(nfs4_enc_fattr4_acl(&x, &acl));
	nfs4c_bitmap_set(bm, FATTR4_FILEHANDLE);
	CHECK_OK(nfs4_enc_fattr4_filehandle(&x, &fh));
	nfs4c_bitmap_set(bm, FATTR4_FILEID);
	CHECK_OK(nfs4_enc_fattr4_fileid(&x, &fileid));
	nfs4c_bitmap_set(bm, FATTR4_MODE);
	CHECK_OK(nfs4_enc_fattr4_mode(&x, &mode));
	nfs4c_bitmap_set(bm, FATTR4_NUMLINKS);
	CHECK_OK(nfs4_enc_fattr4_numlinks(&x, &nlink));
	nfs4c_bitmap_set(bm, FATTR4_OWNER);
	CHECK_OK(nfs4_enc_fattr4_owner(&x, &owner));
	nfs4c_bitmap_set(bm, FATTR4_OWNER_GROUP);
	CHECK_OK(nfs4_enc_fattr4_owner_group(&x, &group));
	nfs4c_bitmap_set(bm, FATTR4_RAWDEV);
	CHECK_OK(nfs4_enc_fattr4_rawdev(&x, &rdev));
	nfs4c_bitmap_set(bm, FATTR4_SPACE_USED);
	CHECK_OK(nfs4_enc_fattr4_space_used(&x, &used));
	nfs4c_bitmap_set(bm, FATTR4_TIME_ACCESS);
	CHECK_OK(nfs4_enc_fattr4_time_access(&x, &at));
	nfs4c_bitmap_set(bm, FATTR4_TIME_METADATA);
	CHECK_OK(nfs4_enc_fattr4_time_metadata(&x, &ct));
	nfs4c_bitmap_set(bm, FATTR4_TIME_MODIFY);
	CHECK_OK(nfs4_enc_fattr4_time_modify(&x, &mt));
	nfs4c_bitmap_set(bm, FATTR4_MOUNTED_ON_FILEID);
	CHECK_OK(nfs4_enc_fattr4_mounted_on_fileid(&x, &mofid));
	nfs4c_bitmap_set(bm, FATTR4_FS_LAYOUT_TYPES);
	CHECK_OK(nfs4_enc_fattr4_fs_layout_types(&x, &lts));
	CHECK_EQ(x.buf, out); /* stayed in the caller's buffer */
	return xdr_enc_len(&x);
}

static void test_attr_decode(void)
{
	uint8_t buf[1024], bad[1100];
	struct fattr4 f;
	struct nfs4c_attr a;
	size_t len = build_attrs(buf, sizeof(buf), &f.attrmask);
	f.attr_vals.len = (uint32_t)len;
	f.attr_vals.val = buf;
	CHECK_OK(nfs4c_attr_decode(&f, &a));
	CHECK_EQ(a.type, NF4REG);
	CHECK_EQ(a.change, 0x1122334455667788ull);
	CHECK_EQ(a.size, 1 << 20);
	CHECK(a.fsid.major == 3 && a.fsid.minor == 4);
	CHECK_EQ(a.lease_time, 90);
	CHECK(a.fh.len == 3 && a.fh.val[0] == 9 && a.fh.val[2] == 7);
	CHECK_EQ(a.fileid, 4242);
	CHECK_EQ(a.mode, 0640);
	CHECK_EQ(a.nlink, 2);
	CHECK_EQ(a.uid, 1000);
	CHECK_EQ(a.gid, UINT32_MAX); /* not a number */
	CHECK(!strcmp(a.owner, "1000") && !strcmp(a.group, "staff@dom"));
	CHECK(a.rawdev.specdata1 == 8 && a.rawdev.specdata2 == 1);
	CHECK_EQ(a.space_used, 1 << 21);
	CHECK(a.atime.seconds == 100 && a.ctime.seconds == 200 && a.mtime.nseconds == 3);
	CHECK_EQ(a.mounted_on_fileid, 4243);
	CHECK(a.nlayout_types == 1 && a.layout_types[0] == LAYOUT4_BLOCK_VOLUME);
	CHECK(nfs4c_bitmap_isset(&a.have, FATTR4_ACL)); /* stepped over */
	CHECK(!nfs4c_bitmap_isset(&a.have, FATTR4_TIME_CREATE));
	for (unsigned w = 0; w < f.attrmask.len; w++)
		CHECK_EQ(a.have.val[w], f.attrmask.val[w]);

	/* every cut is refused, never read past */
	for (size_t cut = 0; cut < len; cut += 4) {
		struct fattr4 g = f;
		g.attr_vals.len = (uint32_t)cut;
		CHECK_EQ(nfs4c_attr_decode(&g, &a), -EBADMSG);
	}
	/* values the bitmap does not name */
	memcpy(bad, buf, len);
	memset(bad + len, 0, 8);
	struct fattr4 g = {f.attrmask, {(uint32_t)len + 8, bad}};
	CHECK_EQ(nfs4c_attr_decode(&g, &a), -EBADMSG);
	/* an attribute number nobody knows: what follows cannot be found */
	g = f;
	nfs4c_bitmap_set(&g.attrmask, 100);
	CHECK_EQ(nfs4c_attr_decode(&g, &a), -ENOTSUP);
	g = f;
	nfs4c_bitmap_set(&g.attrmask, 81);
	CHECK_EQ(nfs4c_attr_decode(&g, &a), -ENOTSUP);
	/* an owner with a NUL byte (utf8string is an opaque in RFC 7863): no
	 * number, not the "1" before the NUL */
	memcpy(bad, buf, len);
	uint8_t *p = memmem(bad, len, "1000", 4);
	CHECK(p);
	p[1] = 0;
	g = (struct fattr4){f.attrmask, {(uint32_t)len, bad}};
	CHECK_OK(nfs4c_attr_decode(&g, &a));
	CHECK_EQ(a.uid, UINT32_MAX);
	/* an ACL whose count claims more than the bytes hold */
	memcpy(bad, buf, len);
	/* type 4, change 8, size 8, fsid 16, lease 4: the ACL count */
	bad[40] = 0x7f;
	g = (struct fattr4){f.attrmask, {(uint32_t)len, bad}};
	CHECK_EQ(nfs4c_attr_decode(&g, &a), -EBADMSG);
	/* nfs_ftype4 is open (nfs4.bounds): a newer type decodes as itself */
	memcpy(bad, buf, len);
	bad[3] = 99;
	g = (struct fattr4){f.attrmask, {(uint32_t)len, bad}};
	CHECK_OK(nfs4c_attr_decode(&g, &a));
	CHECK_EQ(a.type, 99);
	/* a file handle longer than NFS4_FHSIZE (its length word is the one
	 * before the bytes 9 8 7) */
	memcpy(bad, buf, len);
	p = memmem(bad, len, "\0\0\0\3\x09\x08\x07", 7);
	CHECK(p);
	p[3] = 200; /* over NFS4_FHSIZE */
	g = (struct fattr4){f.attrmask, {(uint32_t)len, bad}};
	CHECK_EQ(nfs4c_attr_decode(&g, &a), -EBADMSG);
	/* random bytes under the same bitmap: an error or a value, never a
	 * crash (ASan) */
	uint64_t seed = 1;
	for (int round = 0; round < 2000; round++) {
		memcpy(bad, buf, len);
		for (int k = 0; k < 4; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			bad[(seed >> 33) % len] ^= (uint8_t)(seed >> 13);
		}
		g = (struct fattr4){f.attrmask, {(uint32_t)len, bad}};
		int err = nfs4c_attr_decode(&g, &a);
		CHECK(err == 0 || err == -EBADMSG || err == -E2BIG);
	}
	TEST_PASS("attr decode");
}

/* ---- the backchannel, record by record ---------------------------------- */

/* A hand encoder (the test does not trust the codecs under test). */
struct wbuf {
	uint8_t b[8192];
	size_t n;
};

static void put32(struct wbuf *w, uint32_t v)
{
	CHECK(w->n + 4 <= sizeof(w->b));
	w->b[w->n++] = (uint8_t)(v >> 24);
	w->b[w->n++] = (uint8_t)(v >> 16);
	w->b[w->n++] = (uint8_t)(v >> 8);
	w->b[w->n++] = (uint8_t)v;
}

static void put64(struct wbuf *w, uint64_t v)
{
	put32(w, (uint32_t)(v >> 32));
	put32(w, (uint32_t)v);
}

static void putfixed(struct wbuf *w, const void *p, size_t n)
{
	CHECK(w->n + n + 3 <= sizeof(w->b));
	memcpy(w->b + w->n, p, n);
	w->n += n;
	while (w->n % 4)
		w->b[w->n++] = 0;
}

static void putopaque(struct wbuf *w, const void *p, uint32_t n)
{
	put32(w, n);
	putfixed(w, p, n);
}

#define CBPROG 0x40000000u

static void cb_call_hdr(struct wbuf *w, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
			uint32_t flavor)
{
	w->n = 0;
	put32(w, xid);
	put32(w, 0); /* CALL */
	put32(w, 2);
	put32(w, prog);
	put32(w, vers);
	put32(w, proc);
	if (flavor == RPC_AUTH_SYS) {
		struct wbuf body = {.n = 0};
		put32(&body, 0);	    /* stamp */
		putopaque(&body, "srv", 3); /* machine */
		put32(&body, 0);	    /* uid */
		put32(&body, 0);	    /* gid */
		put32(&body, 0);	    /* no gids */
		put32(w, RPC_AUTH_SYS);
		putopaque(w, body.b, (uint32_t)body.n);
	} else {
		put32(w, flavor);
		put32(w, 0);
	}
	put32(w, 0); /* verifier: AUTH_NONE */
	put32(w, 0);
}

static void cb_compound_hdr(struct wbuf *w, uint32_t xid, uint32_t minor, uint32_t nops)
{
	cb_call_hdr(w, xid, CBPROG, 1, 1, RPC_AUTH_SYS);
	putopaque(w, "cbtag", 5);
	put32(w, minor);
	put32(w, 0); /* callback_ident */
	put32(w, nops);
}

static void cb_seq(struct wbuf *w, const uint8_t sid[16], uint32_t seqid, uint32_t slot,
		   uint32_t highest)
{
	put32(w, OP_CB_SEQUENCE);
	putfixed(w, sid, 16);
	put32(w, seqid);
	put32(w, slot);
	put32(w, highest);
	put32(w, 1); /* cachethis */
	put32(w, 0); /* no referring call lists */
}

static void cb_layoutrecall(struct wbuf *w)
{
	static const uint8_t fh[4] = {1, 2, 3, 4};
	put32(w, OP_CB_LAYOUTRECALL);
	put32(w, LAYOUT4_BLOCK_VOLUME);
	put32(w, LAYOUTIOMODE4_RW);
	put32(w, 0); /* changed */
	put32(w, LAYOUTRECALL4_FILE);
	putopaque(w, fh, 4);
	put64(w, 0);
	put64(w, NFS4_UINT64_MAX);
	put32(w, 3); /* stateid */
	putfixed(w, "layoutstate!", 12);
}

static void cb_recall_any(struct wbuf *w)
{
	put32(w, OP_CB_RECALL_ANY);
	put32(w, 0);
	put32(w, 1);
	put32(w, 1u << RCA4_TYPE_MASK_BLK_LAYOUT);
}

static void cb_notify_lock(struct wbuf *w)
{
	put32(w, OP_CB_NOTIFY_LOCK);
	putopaque(w, "\x01\x02", 2);
	put64(w, 0x1234);
	putopaque(w, "lockowner", 9);
}

/* A CB_COMPOUND reply, decoded by hand. */
struct cbreply {
	uint32_t xid, reply_stat, accept;
	uint32_t low, high;
	uint32_t status, nres;
	uint32_t op[40], st[40];
	uint8_t sid[16];
	uint32_t seqid, slot, highest, target;
	size_t body;
};

static void parse_cb_reply(const uint8_t *p, size_t n, struct cbreply *r)
{
	struct xdr_dec x;
	uint32_t type, flavor, vlen, tlen;
	memset(r, 0, sizeof(*r));
	xdr_dec_init(&x, p, n);
	CHECK_OK(xdr_dec_u32(&x, &r->xid));
	CHECK_OK(xdr_dec_u32(&x, &type));
	CHECK_EQ(type, 1);
	CHECK_OK(xdr_dec_u32(&x, &r->reply_stat));
	if (r->reply_stat != 0) {
		CHECK_OK(xdr_dec_u32(&x, &r->accept)); /* reject_stat */
		return;
	}
	CHECK_OK(xdr_dec_u32(&x, &flavor));
	CHECK_OK(xdr_dec_u32(&x, &vlen));
	CHECK_OK(xdr_dec_skip(&x, vlen));
	CHECK_OK(xdr_dec_u32(&x, &r->accept));
	if (r->accept == RPC_PROG_MISMATCH) {
		CHECK_OK(xdr_dec_u32(&x, &r->low));
		CHECK_OK(xdr_dec_u32(&x, &r->high));
	}
	r->body = n - xdr_dec_remaining(&x);
	if (r->accept != 0 || !xdr_dec_remaining(&x))
		return;
	CHECK_OK(xdr_dec_u32(&x, &r->status));
	CHECK_OK(xdr_dec_u32(&x, &tlen));
	CHECK_OK(xdr_dec_skip(&x, tlen));
	CHECK_OK(xdr_dec_u32(&x, &r->nres));
	CHECK(r->nres <= 40);
	for (uint32_t i = 0; i < r->nres; i++) {
		CHECK_OK(xdr_dec_u32(&x, &r->op[i]));
		CHECK_OK(xdr_dec_u32(&x, &r->st[i]));
		if (r->op[i] == OP_CB_SEQUENCE && r->st[i] == NFS4_OK) {
			CHECK_OK(xdr_dec_fixed(&x, r->sid, 16));
			CHECK_OK(xdr_dec_u32(&x, &r->seqid));
			CHECK_OK(xdr_dec_u32(&x, &r->slot));
			CHECK_OK(xdr_dec_u32(&x, &r->highest));
			CHECK_OK(xdr_dec_u32(&x, &r->target));
		}
	}
	CHECK_EQ(xdr_dec_remaining(&x), 0);
}

struct cb_seen {
	int calls[NFS4C_CB_NOPS];
	uint32_t last_iomode;
	uint8_t last_fh[4];
};

static nfsstat4 test_dispatch(void *arg, const struct nfs4c_cb_req *rq,
			      const struct nfs_cb_argop4 *op, struct nfs_cb_resop4 *res)
{
	struct cb_seen *seen = arg;
	CHECK(rq->seq != NULL);
	CHECK(op->argop >= 0 && op->argop < NFS4C_CB_NOPS);
	seen->calls[op->argop]++;
	switch (op->argop) {
	case OP_CB_LAYOUTRECALL: {
		const struct CB_LAYOUTRECALL4args *a = &op->opcblayoutrecall;
		CHECK_EQ(a->clora_type, LAYOUT4_BLOCK_VOLUME);
		CHECK_EQ(a->clora_recall.lor_recalltype, LAYOUTRECALL4_FILE);
		CHECK_EQ(a->clora_recall.lor_layout.lor_fh.len, 4);
		memcpy(seen->last_fh, a->clora_recall.lor_layout.lor_fh.val, 4);
		CHECK_EQ(a->clora_recall.lor_layout.lor_stateid.seqid, 3);
		seen->last_iomode = (uint32_t)a->clora_iomode;
		return NFS4_OK;
	}
	case OP_CB_NOTIFY_LOCK:
		CHECK_EQ(op->opcbnotify_lock.cnla_lock_owner.clientid, 0x1234);
		return NFS4ERR_DELAY;
	default:
		return NFS4_OK;
	}
}

/* Run one record through the back channel; the reply parsed into *r. */
static int cb_run_one(struct nfs4c_cb *cb, const struct wbuf *w, struct cbreply *r, uint8_t **body,
		      size_t *body_len)
{
	struct xdr_enc out;
	xdr_enc_init(&out, 1 << 20);
	int err = nfs4c_cb_handle(cb, w->b, w->n, &out);
	if (!err) {
		uint8_t *flat = xmalloc(xdr_enc_len(&out));
		xdr_enc_flatten(&out, flat);
		parse_cb_reply(flat, xdr_enc_len(&out), r);
		CHECK_EQ(r->xid, w->b[0] << 24 | w->b[1] << 16 | w->b[2] << 8 | w->b[3]);
		if (body) {
			*body_len = xdr_enc_len(&out) - r->body;
			*body = xmalloc(*body_len + 1);
			memcpy(*body, flat + r->body, *body_len);
		}
		free(flat);
	} else {
		CHECK_EQ(xdr_enc_len(&out), 0); /* invariant 1: nothing to send */
	}
	xdr_enc_destroy(&out);
	return err;
}

static void test_cb(void)
{
	struct nfs4c_cb cb;
	struct cb_seen seen = {0};
	struct wbuf w;
	struct cbreply r;
	uint8_t sid[16], other[16];
	uint8_t *body1, *body2;
	size_t len1, len2;

	for (int i = 0; i < 16; i++) {
		sid[i] = (uint8_t)(0x40 + i);
		other[i] = (uint8_t)(0x80 + i);
	}
	nfs4c_cb_init(&cb, CBPROG, test_dispatch, &seen);

	/* not a call: no reply at all */
	w.n = 0;
	put32(&w, 1);
	put32(&w, 1); /* a REPLY */
	put32(&w, 0);
	CHECK_EQ(cb_run_one(&cb, &w, &r, NULL, NULL), -EBADMSG);
	w.n = 3;
	CHECK_EQ(cb_run_one(&cb, &w, &r, NULL, NULL), -EBADMSG);

	/* RPC level */
	cb_call_hdr(&w, 10, CBPROG, 1, 0, RPC_AUTH_NONE);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.reply_stat == 0 && r.accept == RPC_SUCCESS && r.body == 24);
	cb_call_hdr(&w, 11, CBPROG + 1, 1, 0, RPC_AUTH_NONE);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK_EQ(r.accept, RPC_PROG_UNAVAIL);
	cb_call_hdr(&w, 12, CBPROG, 4, 0, RPC_AUTH_NONE);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.accept == RPC_PROG_MISMATCH && r.low == 1 && r.high == 1);
	cb_call_hdr(&w, 13, CBPROG, 1, 7, RPC_AUTH_NONE);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK_EQ(r.accept, RPC_PROC_UNAVAIL);
	cb_call_hdr(&w, 14, CBPROG, 1, 0, RPC_RPCSEC_GSS);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.reply_stat == RPC_MSG_DENIED && r.accept == RPC_AUTH_ERROR);
	cb_call_hdr(&w, 15, CBPROG, 1, 0, RPC_AUTH_NONE);
	w.b[11] = 3; /* rpcvers */
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.reply_stat == RPC_MSG_DENIED && r.accept == RPC_MISMATCH);

	/* no session yet: BADSESSION; while one is being created: DELAY */
	cb_compound_hdr(&w, 20, 1, 1);
	cb_seq(&w, sid, 1, 0, 0);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.nres == 1 && r.op[0] == OP_CB_SEQUENCE && r.st[0] == NFS4ERR_BADSESSION);
	nfs4c_cb_creating(&cb, true);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.st[0] == NFS4ERR_DELAY && r.status == NFS4ERR_DELAY);
	nfs4c_cb_set_session(&cb, sid, 2);

	/* a new request: CB_SEQUENCE's result, the handler ran */
	cb_compound_hdr(&w, 21, 1, 2);
	cb_seq(&w, sid, 1, 0, 1);
	cb_layoutrecall(&w);
	CHECK_OK(cb_run_one(&cb, &w, &r, &body1, &len1));
	CHECK(r.status == NFS4_OK && r.nres == 2);
	CHECK(r.op[0] == OP_CB_SEQUENCE && r.st[0] == NFS4_OK);
	CHECK(!memcmp(r.sid, sid, 16) && r.seqid == 1 && r.slot == 0);
	CHECK(r.highest == 1 && r.target == 1);
	CHECK(r.op[1] == OP_CB_LAYOUTRECALL && r.st[1] == NFS4_OK);
	CHECK_EQ(seen.calls[OP_CB_LAYOUTRECALL], 1);
	CHECK(seen.last_iomode == LAYOUTIOMODE4_RW && seen.last_fh[3] == 4);

	/* the same slot and seqid again (another xid): the cached reply,
	 * byte for byte, and the handler does not run again */
	w.b[3] = 22;
	CHECK_OK(cb_run_one(&cb, &w, &r, &body2, &len2));
	CHECK_EQ(r.xid, 22);
	CHECK(len1 == len2 && !memcmp(body1, body2, len1));
	CHECK_EQ(seen.calls[OP_CB_LAYOUTRECALL], 1);
	free(body1);
	free(body2);

	/* misordered: the slot does not move (invariant 2) */
	cb_compound_hdr(&w, 23, 1, 1);
	cb_seq(&w, sid, 3, 0, 1);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK_EQ(r.st[0], NFS4ERR_SEQ_MISORDERED);
	cb_compound_hdr(&w, 24, 1, 2);
	cb_seq(&w, sid, 2, 0, 1);
	cb_recall_any(&w);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.st[0] == NFS4_OK && r.seqid == 2 && r.st[1] == NFS4_OK);
	CHECK_EQ(seen.calls[OP_CB_RECALL_ANY], 1);

	/* another session, a slot or highest slot past the table */
	cb_compound_hdr(&w, 25, 1, 1);
	cb_seq(&w, other, 3, 0, 1);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK_EQ(r.st[0], NFS4ERR_BADSESSION);
	cb_compound_hdr(&w, 26, 1, 1);
	cb_seq(&w, sid, 1, 2, 2);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK_EQ(r.st[0], NFS4ERR_BADSLOT);
	cb_compound_hdr(&w, 27, 1, 1);
	cb_seq(&w, sid, 1, 1, 5);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK_EQ(r.st[0], NFS4ERR_BAD_HIGH_SLOT);

	/* CB_SEQUENCE must come first, and only first */
	cb_compound_hdr(&w, 28, 1, 1);
	cb_recall_any(&w);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.nres == 1 && r.op[0] == OP_CB_RECALL_ANY && r.st[0] == NFS4ERR_OP_NOT_IN_SESSION);
	cb_compound_hdr(&w, 29, 1, 2);
	cb_seq(&w, sid, 3, 0, 1);
	cb_seq(&w, sid, 1, 1, 1);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.nres == 2 && r.st[0] == NFS4_OK && r.st[1] == NFS4ERR_SEQUENCE_POS);

	/* an operation nobody knows ends the compound with CB_ILLEGAL */
	cb_compound_hdr(&w, 30, 1, 2);
	cb_seq(&w, sid, 4, 0, 1);
	put32(&w, 77);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.nres == 2 && r.st[0] == NFS4_OK && r.op[1] == OP_CB_ILLEGAL &&
	      r.st[1] == NFS4ERR_OP_ILLEGAL && r.status == NFS4ERR_OP_ILLEGAL);

	/* a failing operation stops the compound */
	cb_compound_hdr(&w, 31, 1, 3);
	cb_seq(&w, sid, 5, 0, 1);
	cb_notify_lock(&w);
	cb_recall_any(&w);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.nres == 2 && r.st[1] == NFS4ERR_DELAY && r.status == NFS4ERR_DELAY);
	CHECK_EQ(seen.calls[OP_CB_RECALL_ANY], 1);

	/* minor version 0 */
	cb_compound_hdr(&w, 32, 0, 1);
	cb_seq(&w, sid, 6, 0, 1);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.status == NFS4ERR_MINOR_VERS_MISMATCH && r.nres == 0);

	/* arguments cut short: GARBAGE_ARGS; more than 32 operations:
	 * REQ_TOO_BIG with no results */
	cb_compound_hdr(&w, 33, 1, 2);
	cb_seq(&w, sid, 6, 0, 1);
	put32(&w, OP_CB_LAYOUTRECALL);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK_EQ(r.accept, RPC_GARBAGE_ARGS);
	cb_compound_hdr(&w, 34, 1, 33);
	cb_seq(&w, sid, 6, 0, 1);
	for (int i = 0; i < 32; i++)
		cb_recall_any(&w);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.status == NFS4ERR_REQ_TOO_BIG && r.nres == 0);

	/* not cached (over cache_max): a retry gets RETRY_UNCACHED_REP */
	cb.cache_max = 0;
	cb_compound_hdr(&w, 35, 1, 2);
	cb_seq(&w, sid, 1, 1, 1);
	cb_recall_any(&w);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.st[0] == NFS4_OK && r.st[1] == NFS4_OK);
	CHECK_EQ(seen.calls[OP_CB_RECALL_ANY], 2);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.nres == 2 && r.st[0] == NFS4_OK && r.st[1] == NFS4ERR_RETRY_UNCACHED_REP);
	CHECK_EQ(seen.calls[OP_CB_RECALL_ANY], 2);
	cb.cache_max = 4096;

	struct nfs4c_cb_stats st;
	nfs4c_cb_stats(&cb, &st);
	CHECK_EQ(st.replays, 1);
	CHECK_EQ(st.replays_uncached, 1);
	CHECK_EQ(st.misordered, 1);
	CHECK_EQ(st.nulls, 1);

	/* random damage to a valid record: an answer or none, never a crash */
	cb_compound_hdr(&w, 40, 1, 4);
	cb_seq(&w, sid, 7, 0, 1);
	cb_layoutrecall(&w);
	cb_notify_lock(&w);
	cb_recall_any(&w);
	struct wbuf good = w;
	uint64_t seed = 7;
	for (int round = 0; round < 3000; round++) {
		w = good;
		for (int k = 0; k < 3; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			w.b[(seed >> 33) % w.n] ^= (uint8_t)(seed >> 7);
		}
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		if (seed >> 60 == 0)
			w.n = (seed >> 20) % w.n;
		struct xdr_enc out;
		xdr_enc_init(&out, 1 << 20);
		int err = nfs4c_cb_handle(&cb, w.b, w.n, &out);
		CHECK(err == 0 || err == -EBADMSG);
		xdr_enc_destroy(&out);
	}

	/* a test's DELAY leaves the slot as it was: the same seqid is then
	 * taken as new; a slot set back to 0 takes only 1, one set to the
	 * next seqid answers it RETRY_UNCACHED_REP */
	nfs4c_cb_set_session(&cb, sid, 2);
	int any = seen.calls[OP_CB_RECALL_ANY];
	nfs4c_cb_delay(&cb, 1);
	cb_compound_hdr(&w, 42, 1, 2);
	cb_seq(&w, sid, 1, 0, 1);
	cb_recall_any(&w);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.nres == 1 && r.st[0] == NFS4ERR_DELAY && r.status == NFS4ERR_DELAY);
	CHECK_EQ(seen.calls[OP_CB_RECALL_ANY], any);
	w.b[3] = 43;
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.st[0] == NFS4_OK && r.seqid == 1 && r.st[1] == NFS4_OK);
	CHECK_EQ(seen.calls[OP_CB_RECALL_ANY], any + 1);
	cb_compound_hdr(&w, 44, 1, 2);
	cb_seq(&w, sid, 2, 0, 1);
	cb_recall_any(&w);
	nfs4c_cb_set_slot(&cb, 0, 0);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK_EQ(r.st[0], NFS4ERR_SEQ_MISORDERED);
	cb_compound_hdr(&w, 45, 1, 2);
	cb_seq(&w, sid, 1, 0, 1);
	cb_recall_any(&w);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.st[0] == NFS4_OK && r.seqid == 1 && r.st[1] == NFS4_OK);
	CHECK_EQ(seen.calls[OP_CB_RECALL_ANY], any + 2);
	nfs4c_cb_set_slot(&cb, 0, 2);
	cb_compound_hdr(&w, 46, 1, 2);
	cb_seq(&w, sid, 2, 0, 1);
	cb_recall_any(&w);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK(r.st[0] == NFS4_OK && r.st[1] == NFS4ERR_RETRY_UNCACHED_REP);
	CHECK_EQ(seen.calls[OP_CB_RECALL_ANY], any + 2);
	nfs4c_cb_stats(&cb, &st);
	CHECK_EQ(st.delayed, 1);

	nfs4c_cb_clear_session(&cb);
	cb_compound_hdr(&w, 41, 1, 1);
	cb_seq(&w, sid, 8, 0, 1);
	CHECK_OK(cb_run_one(&cb, &w, &r, NULL, NULL));
	CHECK_EQ(r.st[0], NFS4ERR_BADSESSION);
	nfs4c_cb_destroy(&cb);
	TEST_PASS("backchannel records");
}

/* ---- the whole client against a scripted peer ------------------------------ */

struct peer {
	int lfd, fd;
	char addr[32];
};

static void peer_listen(struct peer *p)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(p->lfd >= 0);
	CHECK_OK(bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)));
	CHECK_OK(listen(p->lfd, 8));
	CHECK_OK(getsockname(p->lfd, (struct sockaddr *)&sa, &sl));
	snprintf(p->addr, sizeof(p->addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	p->fd = -1;
}

static void peer_accept(struct peer *p)
{
	struct timeval tv = {.tv_sec = 20};
	p->fd = accept(p->lfd, NULL, NULL);
	CHECK(p->fd >= 0);
	/* a client that never sends what the script waits for fails the
	 * test instead of hanging it */
	setsockopt(p->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(p->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void peer_drop(struct peer *p)
{
	close(p->fd);
	p->fd = -1;
}

/* A call the client sent, decoded. */
struct pcall {
	uint8_t *rec;
	size_t len;
	struct rpc_call_hdr h;
	struct rpc_cred cred;
	struct COMPOUND4args args;
	struct xdr_arena arena;
	const struct SEQUENCE4args *seq; /* when the first operation is SEQUENCE */
};

static void peer_recv(struct peer *p, struct pcall *c)
{
	struct xdr_dec x;
	memset(c, 0, sizeof(*c));
	CHECK_OK(rpc_clnt_recv_record(p->fd, 8u << 20, &c->rec, &c->len));
	xdr_dec_init(&x, c->rec, c->len);
	CHECK_OK(rpc_dec_call_hdr(&x, &c->h));
	CHECK_EQ(c->h.prog, NFS4_PROGRAM);
	CHECK_EQ(c->h.vers, NFS_V4);
	CHECK_EQ(rpc_auth_check(&c->h, &c->cred), RPC_AUTH_OK);
	if (c->h.proc != NFSPROC4_COMPOUND)
		return;
	xdr_arena_init(&c->arena, NULL, 0, 16u << 20);
	x.arena = &c->arena;
	CHECK_OK(nfs4_dec_COMPOUND4args(&x, &c->args));
	CHECK_EQ(xdr_dec_remaining(&x), 0);
	if (c->args.argarray.len && c->args.argarray.val[0].argop == OP_SEQUENCE)
		c->seq = &c->args.argarray.val[0].opsequence;
}

static void pcall_free(struct pcall *c)
{
	xdr_arena_reset(&c->arena);
	free(c->rec);
}

static void peer_send(struct peer *p, const void *buf, size_t len)
{
	CHECK_OK(rpc_clnt_send_record(p->fd, buf, len));
}

static void peer_reply(struct peer *p, uint32_t xid, nfsstat4 status, struct nfs_resop4 *res,
		       uint32_t n)
{
	struct xdr_enc x;
	struct COMPOUND4res r = {.status = status, .resarray = {n, res}};
	xdr_enc_init(&x, 8u << 20);
	CHECK_OK(rpc_enc_accepted(&x, xid, RPC_SUCCESS));
	CHECK_OK(nfs4_enc_COMPOUND4res(&x, &r));
	uint8_t *flat = xmalloc(xdr_enc_len(&x));
	xdr_enc_flatten(&x, flat);
	peer_send(p, flat, xdr_enc_len(&x));
	free(flat);
	xdr_enc_destroy(&x);
}

static void seq_ok(struct nfs_resop4 *r, const struct SEQUENCE4args *a, uint32_t highest,
		   uint32_t target, uint32_t flags)
{
	memset(r, 0, sizeof(*r));
	r->resop = OP_SEQUENCE;
	struct SEQUENCE4resok *ok = &r->opsequence.sr_resok4;
	memcpy(ok->sr_sessionid, a->sa_sessionid, 16);
	ok->sr_sequenceid = a->sa_sequenceid;
	ok->sr_slotid = a->sa_slotid;
	ok->sr_highest_slotid = highest;
	ok->sr_target_highest_slotid = target;
	ok->sr_status_flags = flags;
}

/*
 * Answer every operation of c with NFS4_OK (zeroed results: enough for
 * the operations the scripts send), SEQUENCE echoing its arguments with
 * the given limits and flags, GETFH with fh.
 */
static void peer_answer(struct peer *p, struct pcall *c, uint32_t highest, uint32_t target,
			uint32_t flags, const struct nfs4c_fh *fh)
{
	uint32_t n = c->args.argarray.len;
	struct nfs_resop4 *res = xcalloc(n ? n : 1, sizeof(*res));
	for (uint32_t i = 0; i < n; i++) {
		const struct nfs_argop4 *a = &c->args.argarray.val[i];
		res[i].resop = a->argop;
		if (a->argop == OP_SEQUENCE)
			seq_ok(&res[i], &a->opsequence, highest, target, flags);
		if (a->argop == OP_BIND_CONN_TO_SESSION)
			res[i].opbind_conn_to_session.bctsr_resok4.bctsr_dir = CDFS4_BOTH;
		if (a->argop == OP_GETFH && fh) {
			res[i].opgetfh.resok4.object.len = fh->len;
			memcpy(res[i].opgetfh.resok4.object.val, fh->val, fh->len);
		}
	}
	peer_reply(p, c->h.xid, NFS4_OK, res, n);
	free(res);
}

/* A compound with SEQUENCE and one status for it (no other results). */
static void peer_seq_error(struct peer *p, struct pcall *c, nfsstat4 st)
{
	struct nfs_resop4 r = {.resop = OP_SEQUENCE};
	r.opsequence.sr_status = st;
	peer_reply(p, c->h.xid, st, &r, 1);
}

static void peer_exchange_id(struct peer *p, clientid4 id, uint32_t csseq)
{
	struct pcall c;
	peer_recv(p, &c);
	CHECK_EQ(c.args.argarray.len, 1);
	const struct EXCHANGE_ID4args *a = &c.args.argarray.val[0].opexchange_id;
	CHECK_EQ(c.args.argarray.val[0].argop, OP_EXCHANGE_ID);
	CHECK(a->eia_clientowner.co_ownerid.len > 0);
	CHECK_EQ(a->eia_state_protect.spa_how, SP4_NONE);
	struct nfs_resop4 r = {.resop = OP_EXCHANGE_ID};
	r.opexchange_id.eir_resok4.eir_clientid = id;
	r.opexchange_id.eir_resok4.eir_sequenceid = csseq;
	r.opexchange_id.eir_resok4.eir_flags = EXCHGID4_FLAG_USE_NON_PNFS;
	peer_reply(p, c.h.xid, NFS4_OK, &r, 1);
	pcall_free(&c);
}

/* Receive CREATE_SESSION (checking what the client asks for) and answer
 * st, or a session sid with nslots fore slots. */
static void peer_create_session(struct peer *p, clientid4 id, uint32_t csseq, nfsstat4 st,
				const uint8_t sid[16], uint32_t nslots)
{
	struct pcall c;
	peer_recv(p, &c);
	CHECK_EQ(c.args.argarray.len, 1);
	CHECK_EQ(c.args.argarray.val[0].argop, OP_CREATE_SESSION);
	const struct CREATE_SESSION4args *a = &c.args.argarray.val[0].opcreate_session;
	CHECK_EQ(a->csa_clientid, id);
	CHECK_EQ(a->csa_sequence, csseq);
	CHECK(a->csa_flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
	CHECK_EQ(a->csa_cb_program, CBPROG);
	CHECK_EQ(a->csa_fore_chan_attrs.ca_maxrequests, 64);
	CHECK_EQ(a->csa_back_chan_attrs.ca_maxrequests, 1);
	CHECK(a->csa_back_chan_attrs.ca_maxoperations >= 2);
	CHECK_EQ(a->csa_sec_parms.len, 1);
	CHECK_EQ(a->csa_sec_parms.val[0].cb_secflavor, AUTH_SYS);
	struct nfs_resop4 r = {.resop = OP_CREATE_SESSION};
	r.opcreate_session.csr_status = st;
	if (st == NFS4_OK) {
		struct CREATE_SESSION4resok *ok = &r.opcreate_session.csr_resok4;
		memcpy(ok->csr_sessionid, sid, 16);
		ok->csr_sequence = csseq;
		ok->csr_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
		ok->csr_fore_chan_attrs = a->csa_fore_chan_attrs;
		ok->csr_fore_chan_attrs.ca_maxrequests = nslots;
		ok->csr_back_chan_attrs = a->csa_back_chan_attrs;
	}
	peer_reply(p, c.h.xid, st, &r, 1);
	pcall_free(&c);
}

/* A client's blocking call on a thread of its own, while the test plays
 * the peer. */
struct bg {
	pthread_t t;
	int (*fn)(struct nfs4c_client *cl);
	struct nfs4c_client *cl;
	int ret;
};

static void *bg_main(void *arg)
{
	struct bg *b = arg;
	b->ret = b->fn(b->cl);
	return NULL;
}

static void bg_start(struct bg *b, int (*fn)(struct nfs4c_client *), struct nfs4c_client *cl)
{
	b->fn = fn;
	b->cl = cl;
	CHECK_OK(pthread_create(&b->t, NULL, bg_main, b));
}

static int bg_join(struct bg *b)
{
	pthread_join(b->t, NULL);
	return b->ret;
}

/* nfs4c_wait() on a thread of its own: recovery runs inside it, and the
 * test must play the peer meanwhile. */
struct bgw {
	pthread_t t;
	struct nfs4c_compound *c;
	int ret;
};

static void *bgw_main(void *arg)
{
	struct bgw *b = arg;
	b->ret = nfs4c_wait(b->c);
	return NULL;
}

static void bgw_start(struct bgw *b, struct nfs4c_compound *c)
{
	b->c = c;
	CHECK_OK(pthread_create(&b->t, NULL, bgw_main, b));
}

static int bgw_join(struct bgw *b)
{
	pthread_join(b->t, NULL);
	return b->ret;
}

static int do_mount(struct nfs4c_client *cl)
{
	return nfs4c_mount(cl, NULL);
}

static int do_setup(struct nfs4c_client *cl)
{
	int ret = nfs4c_exchange_id(cl);
	return ret ? ret : nfs4c_create_session(cl);
}

/* What the hooks and the callback handler saw. */
static struct {
	_Atomic int flags_calls, misordered_calls, state_lost, session_lost, layoutrecalls;
	_Atomic uint32_t old_flags, new_flags;
	_Atomic uint32_t misordered_answer;
	_Atomic bool recall_calls_back; /* the handler makes a fore channel call */
	struct nfs4c_client *cl;
} seen;

static void hook_flags(void *arg, struct nfs4c_client *cl, uint32_t old, uint32_t flags)
{
	seen.flags_calls++;
	seen.old_flags = old;
	seen.new_flags = flags;
}

static uint32_t hook_misordered(void *arg, struct nfs4c_client *cl, uint32_t slot, uint32_t seqid)
{
	seen.misordered_calls++;
	return seen.misordered_answer;
}

static void hook_state_lost(void *arg, struct nfs4c_client *cl)
{
	seen.state_lost++;
}

static void hook_session_lost(void *arg, struct nfs4c_client *cl)
{
	seen.session_lost++;
}

static nfsstat4 on_layoutrecall(void *arg, const struct nfs4c_cb_req *rq,
				const struct nfs_cb_argop4 *op, struct nfs_cb_resop4 *res)
{
	seen.layoutrecalls++;
	/* a handler may call the server itself: the receiver is not the
	 * thread that runs it */
	if (seen.recall_calls_back)
		CHECK_EQ(nfs4c_sequence(seen.cl), NFS4_OK);
	return NFS4_OK;
}

static const struct nfs4c_hooks test_hooks = {
	.status_flags = hook_flags,
	.seq_misordered = hook_misordered,
	.state_lost = hook_state_lost,
	.session_lost = hook_session_lost,
};

static const struct nfs4c_cb_ops test_cb_ops = {.op = {[OP_CB_LAYOUTRECALL] = on_layoutrecall}};

static struct nfs4c_client *peer_client(struct peer *p, bool hooks, unsigned timeout_ms, bool renew)
{
	struct nfs4c_cfg cfg;
	struct nfs4c_client *cl;
	nfs4c_cfg_default(&cfg);
	cfg.addr = p->addr;
	cfg.owner = "test-owner";
	cfg.cb_program = CBPROG;
	cfg.timeout_ms = timeout_ms;
	cfg.reconnect_ms = 20000;
	cfg.no_renew = !renew;
	cfg.lease_s = renew ? 3 : 0;
	cfg.hooks = hooks ? &test_hooks : NULL;
	cfg.cb = &test_cb_ops;
	CHECK_OK(nfs4c_create(&cfg, &cl));
	peer_accept(p);
	seen.cl = cl;
	return cl;
}

static const uint8_t SID1[16] = "session-one-----";
static const uint8_t SID2[16] = "session-two-----";

static struct wbuf raw_w;
static uint8_t *raw_rep;
static size_t raw_len;

static int do_raw(struct nfs4c_client *cl)
{
	return nfs4c_call_raw(cl, NULL, raw_w.b, raw_w.n, 0xabcdef, &raw_rep, &raw_len);
}

/* EXCHANGE_ID, CREATE_SESSION (4 slots), RECLAIM_COMPLETE, the root
 * handle and the lease, all scripted. */
static void peer_mount(struct peer *p, struct nfs4c_client *cl)
{
	struct bg b;
	struct pcall c;
	bg_start(&b, do_mount, cl);
	peer_exchange_id(p, 0x1234, 7);
	peer_create_session(p, 0x1234, 7, NFS4_OK, SID1, 4);
	peer_recv(p, &c); /* SEQUENCE, RECLAIM_COMPLETE */
	CHECK(c.seq && c.args.argarray.len == 2);
	CHECK(!memcmp(c.seq->sa_sessionid, SID1, 16));
	CHECK(c.seq->sa_slotid == 0 && c.seq->sa_sequenceid == 1 && c.seq->sa_highest_slotid == 0);
	CHECK(!c.seq->sa_cachethis);
	CHECK_EQ(c.args.argarray.val[1].argop, OP_RECLAIM_COMPLETE);
	peer_answer(p, &c, 3, 3, 0, NULL);
	pcall_free(&c);
	peer_recv(p, &c); /* SEQUENCE, PUTROOTFH, GETFH, GETATTR(lease_time) */
	CHECK(c.seq && c.seq->sa_slotid == 0 && c.seq->sa_sequenceid == 2);
	CHECK_EQ(c.args.argarray.len, 4);
	CHECK(nfs4c_bitmap_isset(&c.args.argarray.val[3].opgetattr.attr_request,
				 FATTR4_LEASE_TIME));
	struct nfs_resop4 r[4] = {{.resop = OP_SEQUENCE},
				  {.resop = OP_PUTROOTFH},
				  {.resop = OP_GETFH},
				  {.resop = OP_GETATTR}};
	seq_ok(&r[0], c.seq, 3, 3, 0);
	r[2].opgetfh.resok4.object.len = 2;
	r[2].opgetfh.resok4.object.val[0] = 0xee;
	uint8_t lease[4] = {0, 0, 0, 30};
	nfs4c_bitmap_set(&r[3].opgetattr.resok4.obj_attributes.attrmask, FATTR4_LEASE_TIME);
	r[3].opgetattr.resok4.obj_attributes.attr_vals.len = 4;
	r[3].opgetattr.resok4.obj_attributes.attr_vals.val = lease;
	peer_reply(p, c.h.xid, NFS4_OK, r, 4);
	pcall_free(&c);
	CHECK_OK(bg_join(&b));

	struct nfs4c_info info;
	nfs4c_get_info(cl, &info);
	CHECK_EQ(info.clientid, 0x1234);
	CHECK(info.have_session && !memcmp(info.sessionid, SID1, 16));
	CHECK_EQ(info.fore_slots, 4);
	CHECK_EQ(info.back_slots, 1);
	CHECK_EQ(info.lease_s, 30);
	CHECK_EQ(info.sessions, 1);
	CHECK_EQ(info.minorversion, 2);
}

/* Start a compound of PUTROOTFH + GETFH. */
static void start_getfh(struct nfs4c_compound *c, struct nfs4c_client *cl)
{
	nfs4c_compound_init(c, cl);
	nfs4c_op_putrootfh(c);
	nfs4c_op_getfh(c);
	CHECK_OK(nfs4c_start(c));
}

static void test_peer_session(void)
{
	struct peer p;
	struct pcall pc[4];
	struct nfs4c_compound c[4];
	struct nfs4c_info info;

	peer_listen(&p);
	struct nfs4c_client *cl = peer_client(&p, true, 20000, false);
	peer_mount(&p, cl);

	/* four compounds in flight, one per slot; answered in reverse order,
	 * each caller gets its own reply (matched by xid) */
	for (int i = 0; i < 4; i++)
		start_getfh(&c[i], cl);
	bool slot_seen[4] = {false};
	for (int i = 0; i < 4; i++) {
		peer_recv(&p, &pc[i]);
		const struct SEQUENCE4args *s = pc[i].seq;
		CHECK(s && s->sa_slotid < 4 && !slot_seen[s->sa_slotid]);
		slot_seen[s->sa_slotid] = true;
		CHECK_EQ(s->sa_sequenceid, s->sa_slotid == 0 ? 3 : 1);
		CHECK_EQ(s->sa_highest_slotid, (uint32_t)i);
		CHECK_EQ(s->sa_slotid, (uint32_t)i);
	}
	for (int i = 3; i >= 0; i--) {
		struct nfs4c_fh fh = {.len = 1, .val = {(uint8_t)(0x10 + i)}};
		peer_answer(&p, &pc[i], 3, 3, 0, &fh);
		pcall_free(&pc[i]);
	}
	for (int i = 0; i < 4; i++) {
		struct nfs4c_fh fh;
		CHECK_OK(nfs4c_wait(&c[i]));
		CHECK_EQ(c[i].status, NFS4_OK);
		CHECK_EQ(c[i].res.resarray.len, 3);
		CHECK_OK(nfs4c_res_fh(&c[i], &fh));
		CHECK_EQ(fh.val[0], 0x10 + c[i].slotid);
		nfs4c_compound_destroy(&c[i]);
	}

	/* the server's limits and status flags */
	start_getfh(&c[0], cl);
	peer_recv(&p, &pc[0]);
	CHECK(pc[0].seq->sa_slotid == 0 && pc[0].seq->sa_sequenceid == 4);
	peer_answer(&p, &pc[0], 3, 1, SEQ4_STATUS_CB_PATH_DOWN_SESSION, NULL);
	pcall_free(&pc[0]);
	CHECK_OK(nfs4c_wait(&c[0]));
	nfs4c_compound_destroy(&c[0]);
	CHECK_EQ(seen.flags_calls, 1);
	CHECK(seen.old_flags == 0 && seen.new_flags == SEQ4_STATUS_CB_PATH_DOWN_SESSION);
	nfs4c_get_info(cl, &info);
	CHECK(info.target_slot == 1 && info.highest_slot == 3);
	CHECK_EQ(info.status_flags, SEQ4_STATUS_CB_PATH_DOWN_SESSION);
	/* below the target only: slots 0 and 1 */
	start_getfh(&c[0], cl);
	start_getfh(&c[1], cl);
	for (int i = 0; i < 2; i++) {
		peer_recv(&p, &pc[i]);
		CHECK(pc[i].seq->sa_slotid <= 1);
	}
	for (int i = 0; i < 2; i++) {
		peer_answer(&p, &pc[i], 3, 3, 0, NULL);
		pcall_free(&pc[i]);
		CHECK_OK(nfs4c_wait(&c[i]));
		nfs4c_compound_destroy(&c[i]);
	}
	CHECK_EQ(seen.flags_calls, 2); /* the flags went back to 0 */

	/* SEQ_MISORDERED on a seqid the client chose: the hook is asked,
	 * the slot keeps its seqid when the hook says 0, takes its answer
	 * otherwise */
	nfs4c_compound_init(&c[0], cl);
	c[0].slot = 2;
	CHECK_OK(nfs4c_start(&c[0]));
	peer_recv(&p, &pc[0]);
	uint32_t s2 = pc[0].seq->sa_sequenceid;
	CHECK(pc[0].seq->sa_slotid == 2 && s2 == 2);
	peer_seq_error(&p, &pc[0], NFS4ERR_SEQ_MISORDERED);
	pcall_free(&pc[0]);
	CHECK_OK(nfs4c_wait(&c[0]));
	CHECK_EQ(c[0].status, NFS4ERR_SEQ_MISORDERED);
	CHECK_EQ(seen.misordered_calls, 1);
	seen.misordered_answer = 1;
	CHECK_OK(nfs4c_start(&c[0]));
	peer_recv(&p, &pc[0]);
	CHECK(pc[0].seq->sa_slotid == 2 && pc[0].seq->sa_sequenceid == s2);
	peer_seq_error(&p, &pc[0], NFS4ERR_SEQ_MISORDERED);
	pcall_free(&pc[0]);
	CHECK_OK(nfs4c_wait(&c[0]));
	CHECK_EQ(seen.misordered_calls, 2);
	seen.misordered_answer = 0;
	CHECK_OK(nfs4c_start(&c[0]));
	peer_recv(&p, &pc[0]);
	CHECK(pc[0].seq->sa_slotid == 2 && pc[0].seq->sa_sequenceid == 1);
	peer_answer(&p, &pc[0], 3, 3, 0, NULL);
	pcall_free(&pc[0]);
	CHECK_OK(nfs4c_wait(&c[0]));

	/* raw control: an explicit seqid (a replay, a misorder) leaves the
	 * table alone; the reply bytes are there to compare */
	c[0].seqid = 1;
	c[0].cachethis = true;
	CHECK_OK(nfs4c_start(&c[0]));
	peer_recv(&p, &pc[0]);
	CHECK(pc[0].seq->sa_slotid == 2 && pc[0].seq->sa_sequenceid == 1 &&
	      pc[0].seq->sa_cachethis);
	peer_answer(&p, &pc[0], 3, 3, 0, NULL);
	pcall_free(&pc[0]);
	CHECK_OK(nfs4c_wait(&c[0]));
	CHECK(c[0].body_off == 24 && c[0].reply_len > c[0].body_off);
	CHECK_EQ(c[0].seqid_sent, 1);
	c[0].seqid = 0;
	c[0].cachethis = false;
	CHECK_OK(nfs4c_start(&c[0]));
	peer_recv(&p, &pc[0]);
	CHECK(pc[0].seq->sa_slotid == 2 && pc[0].seq->sa_sequenceid == 2);
	peer_answer(&p, &pc[0], 3, 3, 0, NULL);
	pcall_free(&pc[0]);
	CHECK_OK(nfs4c_wait(&c[0]));
	nfs4c_compound_destroy(&c[0]);

	/* a compound that is only SEQUENCE, with a credential of its own */
	struct rpc_cred other = {
		.flavor = RPC_AUTH_SYS, .uid = 4321, .gid = 99, .ngids = 1, .gids = {5}};
	nfs4c_compound_init(&c[0], cl);
	c[0].cred = &other;
	CHECK_OK(nfs4c_start(&c[0]));
	peer_recv(&p, &pc[0]);
	CHECK(pc[0].args.argarray.len == 1 && pc[0].seq);
	CHECK(pc[0].cred.uid == 4321 && pc[0].cred.gid == 99 && pc[0].cred.ngids == 1);
	peer_answer(&p, &pc[0], 3, 3, 0, NULL);
	pcall_free(&pc[0]);
	CHECK_OK(nfs4c_wait(&c[0]));
	nfs4c_compound_destroy(&c[0]);

	/* raw bytes as a call (a NULL), the raw reply back */
	struct bg b;
	raw_w.n = 0;
	put32(&raw_w, 0xabcdef);
	put32(&raw_w, 0);
	put32(&raw_w, 2);
	put32(&raw_w, NFS4_PROGRAM);
	put32(&raw_w, NFS_V4);
	put32(&raw_w, 0);
	put64(&raw_w, 0);
	put64(&raw_w, 0);
	bg_start(&b, do_raw, cl);
	peer_recv(&p, &pc[0]);
	CHECK_EQ(pc[0].h.proc, 0);
	CHECK_EQ(pc[0].h.xid, 0xabcdef);
	pcall_free(&pc[0]);
	struct xdr_enc x;
	uint8_t flat[64];
	xdr_enc_init(&x, 1024);
	CHECK_OK(rpc_enc_accepted(&x, 0xabcdef, RPC_SUCCESS));
	xdr_enc_flatten(&x, flat);
	peer_send(&p, flat, xdr_enc_len(&x));
	CHECK_OK(bg_join(&b));
	CHECK(raw_len == 24 && !memcmp(raw_rep, flat, 24));
	iobuf_free(raw_rep);
	xdr_enc_destroy(&x);

	/* DESTROY_SESSION and DESTROY_CLIENTID */
	bg_start(&b, nfs4c_unmount, cl);
	peer_recv(&p, &pc[0]);
	CHECK(pc[0].args.argarray.len == 1 &&
	      pc[0].args.argarray.val[0].argop == OP_DESTROY_SESSION &&
	      !memcmp(pc[0].args.argarray.val[0].opdestroy_session.dsa_sessionid, SID1, 16));
	peer_answer(&p, &pc[0], 0, 0, 0, NULL);
	pcall_free(&pc[0]);
	peer_recv(&p, &pc[0]);
	CHECK(pc[0].args.argarray.val[0].argop == OP_DESTROY_CLIENTID &&
	      pc[0].args.argarray.val[0].opdestroy_clientid.dca_clientid == 0x1234);
	peer_answer(&p, &pc[0], 0, 0, 0, NULL);
	pcall_free(&pc[0]);
	CHECK_OK(bg_join(&b));
	nfs4c_get_info(cl, &info);
	CHECK(!info.have_session && info.clientid == 0);
	nfs4c_compound_init(&c[0], cl);
	CHECK_EQ(nfs4c_send(&c[0]), -ENOTCONN);
	nfs4c_compound_destroy(&c[0]);

	nfs4c_destroy(cl);
	peer_drop(&p);
	close(p.lfd);
	TEST_PASS("client: session, slots, replies out of order, limits, raw");
}

static struct nfs4c_conn *bind_conn;

static int do_bind_back(struct nfs4c_client *cl)
{
	return nfs4c_bind_conn(cl, bind_conn, CDFC4_BACK, NULL);
}

/* The peer sends a call record and reads the client's reply (parsed). */
static void peer_cb(struct peer *p, const struct wbuf *w, struct cbreply *r)
{
	uint8_t *rec;
	size_t len;
	peer_send(p, w->b, w->n);
	CHECK_OK(rpc_clnt_recv_record(p->fd, 1u << 20, &rec, &len));
	parse_cb_reply(rec, len, r);
	free(rec);
}

static void test_peer_callbacks(void)
{
	struct peer p;
	struct wbuf w;
	struct cbreply r;
	struct pcall pc;
	struct nfs4c_info info;

	peer_listen(&p);
	struct nfs4c_client *cl = peer_client(&p, true, 20000, false);
	peer_mount(&p, cl);

	/* CB_NULL on the fore channel's connection */
	cb_call_hdr(&w, 500, CBPROG, 1, 0, RPC_AUTH_NONE);
	peer_cb(&p, &w, &r);
	CHECK(r.xid == 500 && r.reply_stat == 0 && r.accept == RPC_SUCCESS);

	/* CB_LAYOUTRECALL to the user's handler, CB_RECALL_ANY to the
	 * default (OK) */
	cb_compound_hdr(&w, 501, 2, 3);
	cb_seq(&w, SID1, 1, 0, 0);
	cb_layoutrecall(&w);
	cb_recall_any(&w);
	peer_cb(&p, &w, &r);
	CHECK(r.xid == 501 && r.status == NFS4_OK && r.nres == 3);
	CHECK(r.st[0] == NFS4_OK && !memcmp(r.sid, SID1, 16) && r.seqid == 1);
	CHECK(r.op[1] == OP_CB_LAYOUTRECALL && r.st[1] == NFS4_OK);
	CHECK_EQ(seen.layoutrecalls, 1);

	/* the defaults of a client that holds no delegation: CB_RECALL is
	 * BAD_STATEID */
	cb_compound_hdr(&w, 502, 1, 2);
	cb_seq(&w, SID1, 2, 0, 0);
	put32(&w, OP_CB_RECALL);
	put32(&w, 1);
	putfixed(&w, "delegstateid", 12);
	put32(&w, 0);
	putopaque(&w, "\x01", 1);
	peer_cb(&p, &w, &r);
	CHECK(r.nres == 2 && r.st[1] == NFS4ERR_BAD_STATEID);

	/* a handler that calls the server before it answers: the SEQUENCE
	 * it sends arrives, is answered, and then the callback's reply */
	seen.recall_calls_back = true;
	cb_compound_hdr(&w, 503, 1, 2);
	cb_seq(&w, SID1, 3, 0, 0);
	cb_layoutrecall(&w);
	peer_send(&p, w.b, w.n);
	peer_recv(&p, &pc);
	CHECK(pc.seq && pc.args.argarray.len == 1);
	peer_answer(&p, &pc, 3, 3, 0, NULL);
	pcall_free(&pc);
	uint8_t *rec;
	size_t len;
	CHECK_OK(rpc_clnt_recv_record(p.fd, 1u << 20, &rec, &len));
	parse_cb_reply(rec, len, &r);
	free(rec);
	CHECK(r.xid == 503 && r.nres == 2 && r.st[1] == NFS4_OK);
	CHECK_EQ(seen.layoutrecalls, 2);
	seen.recall_calls_back = false;

	/* CB_RECALL_SLOT lowers the fore channel's target */
	cb_compound_hdr(&w, 504, 1, 2);
	cb_seq(&w, SID1, 4, 0, 0);
	put32(&w, OP_CB_RECALL_SLOT);
	put32(&w, 0);
	peer_cb(&p, &w, &r);
	CHECK(r.nres == 2 && r.st[1] == NFS4_OK);
	nfs4c_get_info(cl, &info);
	CHECK_EQ(info.target_slot, 0);

	/* a second connection bound to the back channel only: calls that
	 * come on it are answered on it */
	struct nfs4c_conn *c2;
	struct bg b;
	CHECK_OK(nfs4c_open_conn(cl, &c2));
	int fd1 = p.fd;
	peer_accept(&p);
	bind_conn = c2;
	bg_start(&b, do_bind_back, cl);
	peer_recv(&p, &pc);
	CHECK(pc.args.argarray.len == 1 &&
	      pc.args.argarray.val[0].argop == OP_BIND_CONN_TO_SESSION &&
	      pc.args.argarray.val[0].opbind_conn_to_session.bctsa_dir == CDFC4_BACK);
	peer_answer(&p, &pc, 0, 0, 0, NULL);
	pcall_free(&pc);
	CHECK_EQ(bg_join(&b), NFS4_OK);
	cb_compound_hdr(&w, 505, 1, 2);
	cb_seq(&w, SID1, 5, 0, 0);
	cb_recall_any(&w);
	peer_cb(&p, &w, &r);
	CHECK(r.xid == 505 && r.nres == 2 && r.st[1] == NFS4_OK);
	nfs4c_conn_close(c2);
	peer_drop(&p);
	p.fd = fd1;
	nfs4c_get_info(cl, &info);
	CHECK_EQ(info.cb_ops[OP_CB_RECALL_ANY], 2);
	CHECK_EQ(info.cb_ops[OP_CB_LAYOUTRECALL], 2);
	CHECK_EQ(info.cb_ops[OP_CB_RECALL], 1);

	nfs4c_destroy(cl);
	peer_drop(&p);
	close(p.lfd);
	TEST_PASS("client: callbacks on the connection");
}

/* Send bytes as one record. */
static void peer_raw_reply(struct peer *p, const struct wbuf *w)
{
	peer_send(p, w->b, w->n);
}

static void test_peer_hostile(void)
{
	struct peer p;
	struct pcall pc;
	struct nfs4c_compound c;
	struct wbuf w;
	struct nfs4c_conn_stats st;

	peer_listen(&p);
	struct nfs4c_client *cl = peer_client(&p, false, 20000, false);
	peer_mount(&p, cl);

	/* a reply for an xid nobody waits for is dropped; the right one
	 * after it is taken */
	start_getfh(&c, cl);
	peer_recv(&p, &pc);
	w.n = 0;
	put32(&w, pc.h.xid + 1000);
	put32(&w, 1);
	put32(&w, 0);
	put64(&w, 0);
	put32(&w, 0);
	peer_raw_reply(&p, &w);
	peer_answer(&p, &pc, 3, 3, 0, NULL);
	pcall_free(&pc);
	CHECK_OK(nfs4c_wait(&c));
	struct nfs4c_conn *conn = nfs4c_get_conn(cl);
	nfs4c_conn_stats(conn, &st);
	CHECK_EQ(st.unmatched, 1);
	nfs4c_conn_put(conn);

	/* an RPC-level refusal: -EPROTO, the slot unused (same seqid next) */
	c.slot = 1;
	CHECK_OK(nfs4c_start(&c));
	peer_recv(&p, &pc);
	uint32_t seq1 = pc.seq->sa_sequenceid;
	struct xdr_enc x;
	uint8_t flat[256];
	xdr_enc_init(&x, 1024);
	CHECK_OK(rpc_enc_prog_mismatch(&x, pc.h.xid, 4, 4));
	xdr_enc_flatten(&x, flat);
	peer_send(&p, flat, xdr_enc_len(&x));
	xdr_enc_destroy(&x);
	pcall_free(&pc);
	CHECK_EQ(nfs4c_wait(&c), -EPROTO);
	CHECK(c.rh.reply_stat == RPC_MSG_ACCEPTED && c.rh.stat == RPC_PROG_MISMATCH);
	CHECK_OK(nfs4c_start(&c));
	peer_recv(&p, &pc);
	CHECK_EQ(pc.seq->sa_sequenceid, seq1);

	/* results cut inside SEQUENCE's: -EBADMSG and the slot is retired
	 * (nobody can tell whether the server ran it) */
	w.n = 0;
	put32(&w, pc.h.xid);
	put32(&w, 1);
	put32(&w, 0);
	put64(&w, 0);
	put32(&w, 0);
	put32(&w, 0); /* status */
	put32(&w, 0); /* tag */
	put32(&w, 3); /* three results */
	put32(&w, OP_SEQUENCE);
	put32(&w, 0);
	putfixed(&w, SID1, 16);
	peer_raw_reply(&p, &w);
	pcall_free(&pc);
	CHECK_EQ(nfs4c_wait(&c), -EBADMSG);
	CHECK_EQ(nfs4c_start(&c), -ENOSPC); /* slot 1 asked for: it is dead */
	c.slot = -1;

	/* a count of results no reply could hold: -EBADMSG, nothing
	 * allocated for it; SEQUENCE decoded first keeps the slot */
	CHECK_OK(nfs4c_start(&c));
	peer_recv(&p, &pc);
	CHECK(pc.seq->sa_slotid != 1);
	w.n = 0;
	put32(&w, pc.h.xid);
	put32(&w, 1);
	put32(&w, 0);
	put64(&w, 0);
	put32(&w, 0);
	put32(&w, 0);
	put32(&w, 0);
	put32(&w, 0x7fffffff);
	peer_raw_reply(&p, &w);
	uint32_t slot_lost = pc.seq->sa_slotid;
	pcall_free(&pc);
	CHECK_EQ(nfs4c_wait(&c), -EBADMSG);
	/* the two dead slots are never used again */
	struct nfs4c_compound c2;
	nfs4c_compound_init(&c2, cl);
	CHECK_OK(nfs4c_start(&c));
	CHECK_OK(nfs4c_start(&c2));
	for (int i = 0; i < 2; i++) {
		peer_recv(&p, &pc);
		CHECK(pc.seq->sa_slotid != 1 && pc.seq->sa_slotid != slot_lost);
		peer_answer(&p, &pc, 3, 3, 0, NULL);
		pcall_free(&pc);
	}
	CHECK_OK(nfs4c_wait(&c));
	CHECK_OK(nfs4c_wait(&c2));
	nfs4c_compound_destroy(&c2);

	/* random damage to the results after SEQUENCE's (which end at byte
	 * 80: RPC header 24, status, tag, count, SEQUENCE 44): an error or a
	 * result, never a crash, and the slot moves on either way */
	uint64_t seed = 3;
	int errors = 0;
	for (int round = 0; round < 500; round++) {
		CHECK_OK(nfs4c_start(&c));
		peer_recv(&p, &pc);
		struct nfs_resop4 r[3] = {
			{.resop = OP_SEQUENCE}, {.resop = OP_PUTROOTFH}, {.resop = OP_GETFH}};
		seq_ok(&r[0], pc.seq, 3, 3, 0);
		r[2].opgetfh.resok4.object.len = 8;
		xdr_enc_init(&x, 4096);
		struct COMPOUND4res res = {.resarray = {3, r}};
		CHECK_OK(rpc_enc_accepted(&x, pc.h.xid, RPC_SUCCESS));
		CHECK_OK(nfs4_enc_COMPOUND4res(&x, &res));
		size_t n = xdr_enc_len(&x);
		CHECK(n <= sizeof(flat) && n > 80);
		xdr_enc_flatten(&x, flat);
		xdr_enc_destroy(&x);
		for (int k = 0; k < 2; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			flat[80 + (seed >> 33) % (n - 80)] ^= (uint8_t)((seed >> 9) | 1);
		}
		if ((seed >> 40) % 4 == 0)
			n = 80 + (seed >> 20) % (n - 80);
		peer_send(&p, flat, n);
		pcall_free(&pc);
		int err = nfs4c_wait(&c);
		CHECK(err == 0 || err == -EBADMSG || err == -E2BIG);
		errors += err != 0;
	}
	CHECK(errors > 0);
	/* every slot but the two retired ones still works */
	nfs4c_compound_init(&c2, cl);
	CHECK_OK(nfs4c_start(&c));
	CHECK_OK(nfs4c_start(&c2));
	for (int i = 0; i < 2; i++) {
		peer_recv(&p, &pc);
		peer_answer(&p, &pc, 3, 3, 0, NULL);
		pcall_free(&pc);
	}
	CHECK_OK(nfs4c_wait(&c));
	CHECK_OK(nfs4c_wait(&c2));
	nfs4c_compound_destroy(&c2);

	/* a record over max_record kills the connection: -EMSGSIZE, no
	 * reconnect (a peer sending garbage gets no second chance) */
	nfs4c_compound_reset(&c);
	CHECK_OK(nfs4c_start(&c));
	peer_recv(&p, &pc);
	uint8_t hdr[4] = {0x87, 0xff, 0xff, 0xff}; /* last fragment, 128 MiB */
	CHECK(write(p.fd, hdr, 4) == 4);
	pcall_free(&pc);
	CHECK_EQ(nfs4c_wait(&c), -EMSGSIZE);
	conn = nfs4c_get_conn(cl);
	CHECK_EQ(nfs4c_conn_error(conn), -EMSGSIZE);
	nfs4c_conn_put(conn);
	nfs4c_compound_destroy(&c);

	nfs4c_destroy(cl);
	peer_drop(&p);
	close(p.lfd);
	TEST_PASS("client: hostile replies");
}

/* After a broken connection: accept the new one, answer its
 * BIND_CONN_TO_SESSION with st, and return the next call (the resent one
 * when st is OK). */
static void peer_rebind(struct peer *p, nfsstat4 st, const uint8_t sid[16])
{
	struct pcall c;
	peer_accept(p);
	peer_recv(p, &c);
	CHECK_EQ(c.args.argarray.len, 1);
	CHECK_EQ(c.args.argarray.val[0].argop, OP_BIND_CONN_TO_SESSION);
	const struct BIND_CONN_TO_SESSION4args *a = &c.args.argarray.val[0].opbind_conn_to_session;
	CHECK(!memcmp(a->bctsa_sessid, sid, 16));
	CHECK_EQ(a->bctsa_dir, CDFC4_BACK_OR_BOTH);
	struct nfs_resop4 r = {.resop = OP_BIND_CONN_TO_SESSION};
	r.opbind_conn_to_session.bctsr_status = st;
	if (st == NFS4_OK) {
		memcpy(r.opbind_conn_to_session.bctsr_resok4.bctsr_sessid, sid, 16);
		r.opbind_conn_to_session.bctsr_resok4.bctsr_dir = CDFS4_BOTH;
	}
	peer_reply(p, c.h.xid, st, &r, 1);
	pcall_free(&c);
}

static void test_peer_recovery(void)
{
	struct peer p;
	struct pcall pc, again;
	struct nfs4c_compound c;
	struct nfs4c_info info;
	struct bgw bw;

	/* 1. the connection breaks with a compound in flight: reconnect,
	 * BIND_CONN_TO_SESSION, the same bytes again (invariant 2) */
	peer_listen(&p);
	struct nfs4c_client *cl = peer_client(&p, true, 20000, false);
	peer_mount(&p, cl);
	start_getfh(&c, cl);
	bgw_start(&bw, &c);
	peer_recv(&p, &pc);
	peer_drop(&p);
	peer_rebind(&p, NFS4_OK, SID1);
	peer_recv(&p, &again);
	CHECK(again.len == pc.len && !memcmp(again.rec, pc.rec, pc.len));
	struct nfs4c_fh fh = {.len = 1, .val = {0x77}};
	peer_answer(&p, &again, 3, 3, 0, &fh);
	pcall_free(&again);
	CHECK_OK(bgw_join(&bw));
	CHECK_OK(nfs4c_res_fh(&c, &fh));
	CHECK_EQ(fh.val[0], 0x77);
	nfs4c_get_info(cl, &info);
	CHECK_EQ(info.reconnects, 1);
	/* the slot moved on once, not twice */
	uint32_t slot = pc.seq->sa_slotid, seqid = pc.seq->sa_sequenceid;
	pcall_free(&pc);
	nfs4c_compound_reset(&c);
	c.slot = (int)slot;
	nfs4c_op_putrootfh(&c);
	CHECK_OK(nfs4c_start(&c));
	peer_recv(&p, &pc);
	CHECK_EQ(pc.seq->sa_sequenceid, seqid + 1);
	peer_answer(&p, &pc, 3, 3, 0, NULL);
	pcall_free(&pc);
	CHECK_OK(nfs4c_wait(&c));

	/* 2. a lost session (BADSESSION): a new one on the same client ID;
	 * the compound gets the server's answer */
	seen.session_lost = 0;
	nfs4c_compound_reset(&c);
	nfs4c_op_putrootfh(&c);
	CHECK_OK(nfs4c_start(&c));
	bgw_start(&bw, &c);
	peer_recv(&p, &pc);
	peer_seq_error(&p, &pc, NFS4ERR_BADSESSION);
	pcall_free(&pc);
	peer_create_session(&p, 0x1234, 8, NFS4_OK, SID2, 4);
	CHECK_OK(bgw_join(&bw));
	CHECK_EQ(c.status, NFS4ERR_BADSESSION);
	CHECK_EQ(seen.session_lost, 1);
	nfs4c_get_info(cl, &info);
	CHECK(!memcmp(info.sessionid, SID2, 16) && info.session_recoveries == 1);
	CHECK_EQ(info.state_losses, 0);
	/* a fresh slot table on the new session */
	CHECK_OK(nfs4c_start(&c));
	peer_recv(&p, &pc);
	CHECK(!memcmp(pc.seq->sa_sessionid, SID2, 16) && pc.seq->sa_slotid == 0 &&
	      pc.seq->sa_sequenceid == 1);
	peer_answer(&p, &pc, 3, 3, 0, NULL);
	pcall_free(&pc);
	CHECK_OK(nfs4c_wait(&c));

	/* 3. the server restarted: the connection breaks, the session and
	 * the client ID are unknown; EXCHANGE_ID again with the same owner,
	 * a new session, the state_lost hook; the compound in flight was
	 * for the old session: -ESTALE, not sent again */
	seen.state_lost = 0;
	CHECK_OK(nfs4c_start(&c));
	bgw_start(&bw, &c);
	peer_recv(&p, &pc);
	pcall_free(&pc);
	peer_drop(&p);
	peer_rebind(&p, NFS4ERR_BADSESSION, SID2);
	peer_create_session(&p, 0x1234, 9, NFS4ERR_STALE_CLIENTID, NULL, 0);
	peer_exchange_id(&p, 0x5678, 1);
	peer_create_session(&p, 0x5678, 1, NFS4_OK, SID1, 4);
	CHECK_EQ(bgw_join(&bw), -ESTALE);
	CHECK_EQ(seen.state_lost, 1);
	nfs4c_get_info(cl, &info);
	CHECK(info.clientid == 0x5678 && !memcmp(info.sessionid, SID1, 16));
	CHECK(info.reconnects == 2 && info.state_losses == 1 && info.session_recoveries == 2);
	nfs4c_compound_destroy(&c);
	nfs4c_destroy(cl);
	peer_drop(&p);

	/* 4. an overdue reply drops the connection (no retry on the same
	 * one) and the compound goes again on a new one */
	cl = peer_client(&p, false, 300, false);
	peer_mount(&p, cl);
	start_getfh(&c, cl);
	bgw_start(&bw, &c);
	peer_recv(&p, &pc);
	uint8_t byte;
	CHECK(read(p.fd, &byte, 1) <= 0); /* the client closed it */
	peer_drop(&p);
	peer_rebind(&p, NFS4_OK, SID1);
	peer_recv(&p, &again);
	CHECK(again.len == pc.len && !memcmp(again.rec, pc.rec, pc.len));
	peer_answer(&p, &again, 3, 3, 0, NULL);
	pcall_free(&again);
	pcall_free(&pc);
	CHECK_OK(bgw_join(&bw));
	nfs4c_compound_destroy(&c);

	/* 5. without a state_lost hook the client sends RECLAIM_COMPLETE
	 * itself after getting a new client ID */
	nfs4c_break_conn(cl);
	nfs4c_compound_init(&c, cl);
	CHECK_OK(nfs4c_start(&c));
	bgw_start(&bw, &c);
	peer_drop(&p);
	peer_rebind(&p, NFS4ERR_BADSESSION, SID1);
	peer_create_session(&p, 0x1234, 8, NFS4ERR_STALE_CLIENTID, NULL, 0);
	peer_exchange_id(&p, 0x9999, 3);
	peer_create_session(&p, 0x9999, 3, NFS4_OK, SID2, 4);
	peer_recv(&p, &pc);
	CHECK(pc.seq && !memcmp(pc.seq->sa_sessionid, SID2, 16));
	CHECK(pc.args.argarray.len == 2 && pc.args.argarray.val[1].argop == OP_RECLAIM_COMPLETE);
	peer_answer(&p, &pc, 3, 3, 0, NULL);
	pcall_free(&pc);
	CHECK_EQ(bgw_join(&bw), -ESTALE);
	nfs4c_compound_destroy(&c);
	nfs4c_destroy(cl);
	peer_drop(&p);
	close(p.lfd);
	TEST_PASS("client: recovery (reconnect and resend, lost session, lost client ID)");
}

static void test_peer_renew(void)
{
	struct peer p;
	struct pcall pc;
	struct bg b;

	peer_listen(&p);
	struct nfs4c_client *cl = peer_client(&p, false, 20000, true);
	bg_start(&b, do_setup, cl);
	peer_exchange_id(&p, 0x42, 1);
	peer_create_session(&p, 0x42, 1, NFS4_OK, SID1, 4);
	CHECK_OK(bg_join(&b));
	/* lease 3 s, nothing else to send: a lone SEQUENCE within about a
	 * second (the peer's 20 s receive timeout is the watchdog) */
	peer_recv(&p, &pc);
	CHECK(pc.seq && pc.args.argarray.len == 1);
	/* the server says the back channel is down: the client binds the
	 * connection again */
	peer_answer(&p, &pc, 3, 3, SEQ4_STATUS_CB_PATH_DOWN, NULL);
	pcall_free(&pc);
	peer_recv(&p, &pc);
	CHECK(pc.args.argarray.len == 1 &&
	      pc.args.argarray.val[0].argop == OP_BIND_CONN_TO_SESSION);
	CHECK_EQ(pc.args.argarray.val[0].opbind_conn_to_session.bctsa_dir, CDFC4_BACK_OR_BOTH);
	peer_answer(&p, &pc, 3, 3, 0, NULL);
	pcall_free(&pc);
	/* and keeps renewing */
	peer_recv(&p, &pc);
	CHECK(pc.seq && pc.args.argarray.len == 1);
	peer_answer(&p, &pc, 3, 3, 0, NULL);
	pcall_free(&pc);
	struct nfs4c_info info;
	nfs4c_get_info(cl, &info);
	CHECK(info.renewals >= 1);
	nfs4c_destroy(cl);
	peer_drop(&p);
	close(p.lfd);
	TEST_PASS("client: lease renewal, back channel bound again");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(600);
	test_slots();
	test_compound_encode();
	test_attr_decode();
	test_cb();
	test_peer_session();
	test_peer_callbacks();
	test_peer_hostile();
	test_peer_recovery();
	test_peer_renew();
	return 0;
}
