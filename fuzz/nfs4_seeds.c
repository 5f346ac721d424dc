/*
 * nfs4_seeds.c - write the seed inputs of the nfs4 fuzz target.
 *
 *   fuzz-nfs4-seeds DIR
 *
 * Each seed is a COMPOUND4args encoded by the project's client library
 * (src/nfs4c) with the placeholders of fuzz_nfs4.h: every operation of
 * NFSv4.1 and 4.2 in a compound that can reach it on the harness's tree
 * ("d" a directory, "f" a file of 8 KiB, "l" a symbolic link), the
 * session operations that stand alone, and the hostile shapes the server
 * must bear or refuse (many READs keeping their buffers; too many
 * operations, unknown ones, out of place, another
 * minor version, SEQUENCE retried and misordered, a compound cut inside
 * an operation's number, a retry of one with an unknown operation).
 * The layout operations on the harness's pnfs export: LAYOUTGET of both
 * iomodes, LAYOUTCOMMIT with block layout updates (true, and storage
 * offsets that lie, ranges outside the layout, past the file's blocks),
 * LAYOUTRETURN of a part, of the file, FSID and ALL, and of what was never
 * given, GETDEVICEINFO and GETDEVICELIST. Stateids are the
 * compound's current stateid, so a seed needs no state from before.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_nfs4.h"
#include "nfs4c/blk.h"
#include "nfs4c/nfs4c.h"

static const char *dir;
static unsigned nseeds;
static const struct stateid4 current = {.seqid = 1};

/* A compound whose SEQUENCE takes slot (its next sequence id). */
static void begin(struct nfs4c_compound *c, uint32_t slot, bool cachethis)
{
	nfs4c_compound_init(c, NULL);
	c->no_sequence = true;
	nfs4c_op_sequence(c, slot, 0, slot, cachethis);
}

/* The placeholders where the client would have put its own values. */
static void placeholders(struct nfs4c_compound *c)
{
	for (uint32_t i = 0; i < c->nops; i++) {
		struct nfs_argop4 *a = &c->ops[i];
		switch (a->argop) {
		case OP_SEQUENCE:
			memcpy(a->opsequence.sa_sessionid, FUZZ_NFS4_SESSIONID,
			       NFS4_SESSIONID_SIZE);
			break;
		case OP_DESTROY_SESSION:
			memcpy(a->opdestroy_session.dsa_sessionid, FUZZ_NFS4_SESSIONID,
			       NFS4_SESSIONID_SIZE);
			break;
		case OP_BIND_CONN_TO_SESSION:
			memcpy(a->opbind_conn_to_session.bctsa_sessid, FUZZ_NFS4_SESSIONID,
			       NFS4_SESSIONID_SIZE);
			break;
		case OP_OPEN:
			a->opopen.owner.clientid = FUZZ_NFS4_CLIENTID;
			break;
		case OP_LOCK:
			if (a->oplock.locker.new_lock_owner)
				a->oplock.locker.open_owner.lock_owner.clientid =
					FUZZ_NFS4_CLIENTID;
			break;
		case OP_LOCKT:
			a->oplockt.owner.clientid = FUZZ_NFS4_CLIENTID;
			break;
		case OP_CREATE_SESSION:
			a->opcreate_session.csa_clientid = FUZZ_NFS4_CLIENTID;
			break;
		case OP_DESTROY_CLIENTID:
			a->opdestroy_clientid.dca_clientid = FUZZ_NFS4_CLIENTID;
			break;
		default:
			break;
		}
	}
}

/* Write c's encoding less its last cut bytes as the seed name. */
static void write_seed_cut(struct nfs4c_compound *c, const char *name, size_t cut)
{
	struct xdr_enc x;
	char path[4096];
	placeholders(c);
	xdr_enc_init(&x, 8u << 20);
	int err = nfs4c_compound_encode(c, &x);
	if (err) {
		fprintf(stderr, "seed %s: encoding failed: %d\n", name, err);
		exit(1);
	}
	size_t len = xdr_enc_len(&x);
	uint8_t *buf = malloc(len ? len : 1);
	xdr_enc_flatten(&x, buf);
	len -= cut < len ? cut : len;
	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
	free(buf);
	xdr_enc_destroy(&x);
	nfs4c_compound_destroy(c);
	nseeds++;
}

static void write_seed(struct nfs4c_compound *c, const char *name)
{
	write_seed_cut(c, name, 0);
}

static void open_f(struct nfs4c_compound *c, uint32_t access, uint32_t deny, bool create,
		   const char *name)
{
	struct nfs4c_open o = {.owner = "seed-owner",
			       .owner_len = 10,
			       .access = access,
			       .deny = deny,
			       .claim = CLAIM_NULL,
			       .name = name,
			       .create = create,
			       .how = create ? UNCHECKED4 : 0,
			       .attrs = {.set = create ? NFS4C_SA_MODE : 0, .mode = 0644}};
	nfs4c_op_putrootfh(c);
	nfs4c_op_open(c, &o);
}

static void namespace_seeds(void)
{
	struct nfs4c_compound c;
	bitmap4 all = {0};
	for (unsigned b = 0; b < 82; b++)
		nfs4c_bitmap_set(&all, b);

	begin(&c, 1, false);
	write_seed(&c, "sequence");

	begin(&c, 1, true);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_getfh(&c);
	nfs4c_op_getattr(&c, NULL);
	write_seed(&c, "root-getattr");

	begin(&c, 2, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_getattr(&c, &all);
	nfs4c_op_lookup(&c, "d");
	nfs4c_op_getattr(&c, &all);
	nfs4c_op_lookupp(&c);
	nfs4c_op_access(&c, 0x3f);
	write_seed(&c, "lookup-all-attrs");

	begin(&c, 3, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_readdir(&c, 0, NULL, 0, 4096, NULL);
	nfs4c_op_lookup(&c, "d");
	nfs4c_op_readdir(&c, 0, NULL, 64, 1024, &all);
	write_seed(&c, "readdir");

	begin(&c, 4, true);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "d");
	nfs4c_op_create(&c, NF4DIR, "sub", NULL, NULL,
			&(struct nfs4c_sattr){.set = NFS4C_SA_MODE, .mode = 0700});
	nfs4c_op_getfh(&c);
	nfs4c_op_lookupp(&c);
	nfs4c_op_create(&c, NF4LNK, "sym", "sub/target", NULL, NULL);
	nfs4c_op_readlink(&c);
	write_seed(&c, "create-dir-symlink");

	begin(&c, 5, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "d");
	struct specdata4 rdev = {.specdata1 = 1, .specdata2 = 3};
	nfs4c_op_create(&c, NF4CHR, "chr", NULL, &rdev, NULL);
	nfs4c_op_lookupp(&c);
	nfs4c_op_create(&c, NF4FIFO, "fifo", NULL, NULL, NULL);
	nfs4c_op_lookupp(&c);
	nfs4c_op_create(&c, NF4SOCK, "sock", NULL, NULL, NULL);
	write_seed(&c, "create-specials");

	begin(&c, 6, true);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "d");
	nfs4c_op_savefh(&c);
	nfs4c_op_rename(&c, "sub", "sub2");
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "f");
	nfs4c_op_savefh(&c);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "d");
	nfs4c_op_link(&c, "hard");
	nfs4c_op_remove(&c, "hard");
	nfs4c_op_restorefh(&c);
	nfs4c_op_getfh(&c);
	write_seed(&c, "rename-link-remove");

	begin(&c, 7, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "l");
	nfs4c_op_readlink(&c);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_secinfo_no_name(&c, SECINFO_STYLE4_CURRENT_FH);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_secinfo_no_name(&c, SECINFO_STYLE4_PARENT);
	nfs4c_op_add(&c, OP_PUTPUBFH);
	struct nfs_argop4 *si = nfs4c_op_add(&c, OP_SECINFO);
	si->opsecinfo.name = nfs4c_str(&c, "d");
	write_seed(&c, "readlink-secinfo");

	begin(&c, 8, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "f");
	struct nfs_argop4 *v = nfs4c_op_add(&c, OP_VERIFY);
	nfs4c_bitmap_set(&v->opverify.obj_attributes.attrmask, FATTR4_TYPE);
	uint32_t reg = 0x01000000; /* NF4REG, big-endian */
	v->opverify.obj_attributes.attr_vals.len = 4;
	v->opverify.obj_attributes.attr_vals.val = (uint8_t *)&reg;
	struct nfs_argop4 *nv = nfs4c_op_add(&c, OP_NVERIFY);
	nv->opnverify.obj_attributes = v->opverify.obj_attributes;
	write_seed(&c, "verify-nverify");
}

static void state_seeds(void)
{
	struct nfs4c_compound c;
	static const uint8_t data[512] = "fuzz";

	begin(&c, 9, true);
	open_f(&c, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, true, "o");
	nfs4c_op_getfh(&c);
	nfs4c_op_write(&c, &current, 0, UNSTABLE4, data, sizeof(data));
	nfs4c_op_write(&c, &current, 100000, FILE_SYNC4, data, sizeof(data));
	nfs4c_op_commit(&c, 0, 0);
	nfs4c_op_read(&c, &current, 0, 4096);
	nfs4c_op_close(&c, &current);
	write_seed(&c, "open-write-read-close");

	/* many READs in one compound, each keeping its buffer to the reply */
	begin(&c, 9, false);
	open_f(&c, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE, false, "f");
	for (int i = 0; i < 24; i++)
		nfs4c_op_read(&c, &current, (uint64_t)i * 300, 100);
	for (int i = 0; i < 12; i++)
		nfs4c_op_read_plus(&c, &current, (uint64_t)i * 600, 200);
	nfs4c_op_close(&c, &current);
	write_seed(&c, "many-reads");

	begin(&c, 10, false);
	open_f(&c, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, false, "f");
	struct nfs4c_lock l = {.type = WRITE_LT,
			       .off = 0,
			       .len = 100,
			       .new_owner = true,
			       .open_stateid = current,
			       .owner = "seed-lock",
			       .owner_len = 9};
	nfs4c_op_lock(&c, &l);
	struct nfs4c_lock l2 = {
		.type = READ_LT, .off = 200, .len = UINT64_MAX, .lock_stateid = current};
	nfs4c_op_lock(&c, &l2);
	nfs4c_op_lockt(&c, WRITE_LT, 0, 1000, "other", 5);
	nfs4c_op_locku(&c, WRITE_LT, &current, 0, UINT64_MAX);
	nfs4c_op_test_stateid(&c, &current, 1);
	nfs4c_op_free_stateid(&c, &current);
	write_seed(&c, "lock-locku-free");

	begin(&c, 11, false);
	open_f(&c, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE, false, "f");
	nfs4c_op_open_downgrade(&c, &current, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE);
	nfs4c_op_setattr(&c, &current, &(struct nfs4c_sattr){.set = NFS4C_SA_MODE, .mode = 0600});
	nfs4c_op_close(&c, &current);
	write_seed(&c, "open-downgrade-setattr");

	begin(&c, 12, false);
	open_f(&c, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, false, "f");
	nfs4c_op_setattr(&c, &current,
			 &(struct nfs4c_sattr){.set = NFS4C_SA_SIZE | NFS4C_SA_MTIME | NFS4C_SA_UID,
					       .size = 5000,
					       .mtime_now = true,
					       .uid = 0});
	nfs4c_op_getattr(&c, NULL);
	nfs4c_op_close(&c, &current);
	write_seed(&c, "setattr-size");

	begin(&c, 13, false);
	struct nfs4c_open ex = {.owner = "seed-excl",
				.owner_len = 9,
				.access = OPEN4_SHARE_ACCESS_WRITE,
				.claim = CLAIM_NULL,
				.name = "excl",
				.create = true,
				.how = EXCLUSIVE4_1,
				.verf = "verifier"};
	nfs4c_op_putrootfh(&c);
	nfs4c_op_open(&c, &ex);
	nfs4c_op_close(&c, &current);
	write_seed(&c, "open-exclusive");

	begin(&c, 14, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "f");
	struct nfs4c_open fh = {.owner = "seed-fh",
				.owner_len = 7,
				.access = OPEN4_SHARE_ACCESS_READ,
				.claim = CLAIM_FH};
	nfs4c_op_open(&c, &fh);
	struct nfs4c_open prev = fh;
	prev.claim = CLAIM_PREVIOUS;
	nfs4c_op_open(&c, &prev);
	struct nfs_argop4 *dr = nfs4c_op_add(&c, OP_DELEGRETURN);
	dr->opdelegreturn.deleg_stateid = current;
	write_seed(&c, "open-claims-delegreturn");

	/* NFSv4.2 operations on an open file */
	begin(&c, 15, false);
	open_f(&c, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, true, "v42");
	nfs4c_op_allocate(&c, &current, 0, 1 << 20);
	nfs4c_op_deallocate(&c, &current, 4096, 8192);
	nfs4c_op_seek(&c, &current, 0, NFS4_CONTENT_HOLE);
	nfs4c_op_read_plus(&c, &current, 0, 65536);
	nfs4c_op_savefh(&c);
	nfs4c_op_copy(&c, &current, &current, 0, 1 << 20, 4096);
	nfs4c_op_clone(&c, &current, &current, 0, 1 << 20, 4096);
	nfs4c_op_close(&c, &current);
	write_seed(&c, "v42-ops");

	/* the operations jnfs does not offer */
	const nfs_opnum4 notsupp[] = {OP_LAYOUTGET,  OP_GETDEVICEINFO, OP_OPENATTR,
				      OP_DELEGPURGE, OP_IO_ADVISE,     OP_RELEASE_LOCKOWNER};
	for (size_t i = 0; i < sizeof(notsupp) / sizeof(notsupp[0]); i++) {
		begin(&c, 16, false);
		nfs4c_op_putrootfh(&c);
		nfs4c_op_add(&c, notsupp[i]);
		char name[32];
		snprintf(name, sizeof(name), "notsupp-%u", (unsigned)notsupp[i]);
		write_seed(&c, name);
	}
}

/* LAYOUTCOMMIT of the extents given (each READ_WRITE_DATA) with the
 * current stateid; last_write UINT64_MAX: none. */
static void layoutcommit(struct nfs4c_compound *c, const struct nfs4c_blk_ext *e, unsigned n,
			 uint64_t off, uint64_t len, uint64_t last_write)
{
	uint8_t body[1024];
	struct xdr_enc x;
	xdr_enc_init_buf(&x, body, sizeof(body), sizeof(body));
	if (nfs4c_blk_update_encode(&x, e, n)) {
		fprintf(stderr, "a layout update does not encode\n");
		exit(1);
	}
	struct nfs4c_layoutcommit lc = {.off = off,
					.len = len,
					.stateid = current,
					.have_last_write = last_write != UINT64_MAX,
					.last_write = last_write,
					.have_mtime = true,
					.mtime = {.seconds = 1700000000},
					.type = LAYOUT4_BLOCK_VOLUME,
					.body = body,
					.body_len = (uint32_t)xdr_enc_len(&x)};
	nfs4c_op_layoutcommit(c, &lc);
	xdr_enc_destroy(&x);
}

static struct nfs4c_blk_ext ext(uint64_t foff, uint64_t len, uint64_t soff)
{
	struct nfs4c_blk_ext e = {
		.foff = foff, .len = len, .soff = soff, .state = PNFS_BLOCK_READ_WRITE_DATA};
	memcpy(e.devid, FUZZ_NFS4_DEVICEID, NFS4_DEVICEID4_SIZE);
	return e;
}

static void layout_seeds(void)
{
	struct nfs4c_compound c;
	static const uint8_t verf[NFS4_VERIFIER_SIZE];

	/* what a block-layout client does with "f": an RW layout, a commit of
	 * its blocks (the storage offset is the server's to find, never
	 * trusted), part of it given back, then everything */
	begin(&c, 30, false);
	open_f(&c, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, false, "f");
	nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_RW, 0, 65536, 4096, &current, 0);
	struct nfs4c_blk_ext e = ext(0, 8192, 1 << 20);
	layoutcommit(&c, &e, 1, 0, 8192, 8191);
	nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_RW, LAYOUTRETURN4_FILE, 0,
			      16384, &current);
	nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FSID, 0, 0,
			      NULL);
	write_seed(&c, "layout-rw-commit-return");

	/* a new file grown through its layout: blocks allocated past the end,
	 * a commit with last_write_offset, the size read back; READ layout */
	begin(&c, 31, false);
	open_f(&c, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, true, "lay");
	nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_RW, 1 << 20, 131072, 131072,
			   &current, 0);
	struct nfs4c_blk_ext grow[2] = {ext(1 << 20, 65536, 0), ext((1 << 20) + 65536, 65536, 0)};
	layoutcommit(&c, grow, 2, 1 << 20, 131072, (1 << 20) + 100000);
	nfs4c_op_getattr(&c, NULL);
	nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_READ, 0, UINT64_MAX, 0, &current,
			   512);
	nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_ALL, 0, 0,
			      NULL);
	write_seed(&c, "layout-new-file");

	/* commits a well-behaved client never sends, one per seed (the first
	 * error ends a compound): storage offsets naming other blocks (the
	 * device's first, its last), a range outside the layout, an empty
	 * update with a last written byte past the file's blocks, an extent
	 * of another device */
	struct nfs4c_blk_ext lie[2] = {ext(0, 4096, 0), ext(4096, 4096, (256u << 20) - 4096)};
	struct nfs4c_blk_ext outside = ext(1 << 30, 4096, 4096);
	struct nfs4c_blk_ext other = ext(0, 4096, 0);
	other.devid[0] ^= 1;
	for (int i = 0; i < 4; i++) {
		static const char *const names[] = {"layout-commit-lie", "layout-commit-outside",
						    "layout-commit-past-blocks",
						    "layout-commit-other-device"};
		begin(&c, 32 + (uint32_t)i, false);
		open_f(&c, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE, false, "f");
		nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_RW, 0, 8192, 0, &current,
				   0);
		if (i == 0)
			layoutcommit(&c, lie, 2, 0, 8192, UINT64_MAX);
		else if (i == 1)
			layoutcommit(&c, &outside, 1, 1 << 30, 4096, (1 << 30) + 4095);
		else if (i == 2)
			layoutcommit(&c, NULL, 0, 0, UINT64_MAX, 1 << 30);
		else
			layoutcommit(&c, &other, 1, 0, 4096, UINT64_MAX);
		nfs4c_op_getattr(&c, NULL);
		write_seed(&c, names[i]);
	}

	/* returns of what was never given, a LAYOUTGET with a forged stateid */
	struct stateid4 forged = {.seqid = 1, .other = "forged-sid!"};
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = {"layout-return-forged", "layout-return-nothing",
						    "layout-get-forged"};
		begin(&c, 36 + (uint32_t)i, false);
		nfs4c_op_putrootfh(&c);
		nfs4c_op_lookup(&c, "f");
		if (i == 0)
			nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_RW,
					      LAYOUTRETURN4_FILE, 0, UINT64_MAX, &forged);
		else if (i == 1)
			nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_ANY,
					      LAYOUTRETURN4_ALL, 0, 0, NULL);
		else
			nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_READ, 4096, 4096,
					   4096, &forged, 0);
		write_seed(&c, names[i]);
	}

	/* the device */
	begin(&c, 39, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_getdevicelist(&c, LAYOUT4_BLOCK_VOLUME, 16, 0, verf);
	nfs4c_op_getdeviceinfo(&c, (const uint8_t *)FUZZ_NFS4_DEVICEID, LAYOUT4_BLOCK_VOLUME, 0,
			       1u << NOTIFY_DEVICEID4_CHANGE | 1u << NOTIFY_DEVICEID4_DELETE);
	nfs4c_op_getdeviceinfo(&c, (const uint8_t *)FUZZ_NFS4_DEVICEID, LAYOUT4_BLOCK_VOLUME, 16,
			       0);
	write_seed(&c, "getdeviceinfo");
}

static void session_seeds(void)
{
	struct nfs4c_compound c;

	begin(&c, 17, false);
	nfs4c_op_reclaim_complete(&c, false);
	struct nfs_argop4 *bc = nfs4c_op_add(&c, OP_BACKCHANNEL_CTL);
	bc->opbackchannel_ctl.bca_cb_program = 0x40000000;
	write_seed(&c, "reclaim-backchannel");

	nfs4c_compound_init(&c, NULL);
	c.no_sequence = true;
	struct nfs_argop4 *e = nfs4c_op_add(&c, OP_EXCHANGE_ID);
	e->opexchange_id.eia_clientowner.co_ownerid.len = 11;
	e->opexchange_id.eia_clientowner.co_ownerid.val = (const uint8_t *)"seed-client";
	memcpy(e->opexchange_id.eia_clientowner.co_verifier, "verifier", 8);
	e->opexchange_id.eia_state_protect.spa_how = SP4_NONE;
	write_seed(&c, "exchange-id");

	nfs4c_compound_init(&c, NULL);
	c.no_sequence = true;
	struct nfs_argop4 *cs = nfs4c_op_add(&c, OP_CREATE_SESSION);
	cs->opcreate_session.csa_sequence = 1;
	cs->opcreate_session.csa_fore_chan_attrs.ca_maxrequestsize = 1 << 20;
	cs->opcreate_session.csa_fore_chan_attrs.ca_maxresponsesize = 1 << 20;
	cs->opcreate_session.csa_fore_chan_attrs.ca_maxresponsesize_cached = 4096;
	cs->opcreate_session.csa_fore_chan_attrs.ca_maxoperations = 16;
	cs->opcreate_session.csa_fore_chan_attrs.ca_maxrequests = 4;
	cs->opcreate_session.csa_back_chan_attrs = cs->opcreate_session.csa_fore_chan_attrs;
	cs->opcreate_session.csa_cb_program = 0x40000000;
	write_seed(&c, "create-session");

	nfs4c_compound_init(&c, NULL);
	c.no_sequence = true;
	struct nfs_argop4 *b = nfs4c_op_add(&c, OP_BIND_CONN_TO_SESSION);
	b->opbind_conn_to_session.bctsa_dir = CDFC4_FORE_OR_BOTH;
	write_seed(&c, "bind-conn");

	nfs4c_compound_init(&c, NULL);
	c.no_sequence = true;
	nfs4c_op_add(&c, OP_DESTROY_SESSION);
	write_seed(&c, "destroy-session");

	nfs4c_compound_init(&c, NULL);
	c.no_sequence = true;
	nfs4c_op_add(&c, OP_DESTROY_CLIENTID);
	write_seed(&c, "destroy-clientid");
}

static void hostile_seeds(void)
{
	struct nfs4c_compound c;

	begin(&c, 18, false);
	for (int i = 0; i < 200; i++)
		nfs4c_op_putrootfh(&c);
	write_seed(&c, "too-many-ops");

	begin(&c, 19, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_add(&c, 9999);
	nfs4c_op_getfh(&c);
	write_seed(&c, "unknown-op");

	begin(&c, 20, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_add(&c, OP_ILLEGAL);
	write_seed(&c, "op-illegal");

	nfs4c_compound_init(&c, NULL);
	c.no_sequence = true;
	nfs4c_op_putrootfh(&c);
	nfs4c_op_getfh(&c);
	write_seed(&c, "no-sequence");

	begin(&c, 21, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_sequence(&c, 22, 0, 22, false);
	write_seed(&c, "sequence-pos");

	nfs4c_compound_init(&c, NULL);
	c.no_sequence = true;
	nfs4c_op_add(&c, OP_EXCHANGE_ID);
	nfs4c_op_putrootfh(&c);
	write_seed(&c, "not-only-op");

	begin(&c, 23, false);
	c.minorversion = 0;
	nfs4c_op_putrootfh(&c);
	write_seed(&c, "minor-0");

	begin(&c, 24, false);
	c.minorversion = 1;
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "f");
	nfs4c_op_seek(&c, &current, 0, NFS4_CONTENT_DATA);
	write_seed(&c, "v42-in-v41");

	begin(&c, 25, false);
	nfs4c_op_create(&c, NF4DIR, "nofh", NULL, NULL, NULL);
	write_seed(&c, "no-filehandle");

	begin(&c, 26, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_lookup(&c, "f");
	nfs4c_op_write(&c, &current, 0, FILE_SYNC4, "x", 1);
	nfs4c_op_close(&c, &current);
	write_seed(&c, "no-current-stateid");

	/* a retry: the same slot and sequence id twice (the harness fills
	 * in the slot's next id; the second copy of this seed is a retry) */
	begin(&c, 27, true);
	c.ops[0].opsequence.sa_sequenceid = 1;
	nfs4c_op_putrootfh(&c);
	nfs4c_op_create(&c, NF4DIR, "retried", NULL, NULL, NULL);
	write_seed(&c, "sequence-1");
	begin(&c, 27, false);
	c.ops[0].opsequence.sa_sequenceid = 7;
	write_seed(&c, "sequence-misordered");
	begin(&c, 200, false);
	write_seed(&c, "sequence-bad-slot");

	/* a compound cut inside its last operation's number */
	begin(&c, 29, false);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_getfh(&c);
	write_seed_cut(&c, "cut-opcode", 2);

	/* twice the same request on one slot and sequence id, its last
	 * operation unknown: whichever is replayed second is a retry */
	for (int i = 0; i < 2; i++) {
		begin(&c, 28, true);
		c.ops[0].opsequence.sa_sequenceid = 1;
		nfs4c_op_putrootfh(&c);
		nfs4c_op_add(&c, 9999);
		write_seed(&c, i ? "retry-unknown-op-b" : "retry-unknown-op-a");
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz-nfs4-seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	namespace_seeds();
	state_seeds();
	session_seeds();
	hostile_seeds();
	layout_seeds();
	printf("%u seeds in %s\n", nseeds, dir);
	return 0;
}
