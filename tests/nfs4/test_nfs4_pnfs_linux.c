/*
 * test_nfs4_pnfs_linux.c - what the Linux kernel's pNFS block layout client
 * does to jnfsd, replayed with the project's client (src/nfs4c) on
 * 127.0.0.1, so that what the kernel client in QEMU found in the server
 * (tests/kclient, --pnfs; docs/kclient.md) is checked without QEMU:
 *
 *   test-nfs4-pnfs-linux JNFSD
 *
 * jnfsd serves a fresh image with an exports file whose export has `pnfs`.
 * The client (AUTH_SYS, with AUTH_SYS offered for the back channel, as the
 * kernel client does) creates a file and then, as the kernel client:
 *
 *   1. LAYOUTGET(RW) of [0, 64 KiB) with its open stateid: a layout of
 *      unwritten blocks;
 *   2. LAYOUTGET(RW) of [64 KiB, 128 KiB) with the layout stateid it holds:
 *      another layout, the same stateid with the next seqid;
 *   3. writes 4 KiB to the image where the first extent says (the disk),
 *      then 100 bytes at 8 KiB through the server with WRITE: the server
 *      answers DELAY (the client's own layout is in the way) and recalls
 *      the layout with CB_LAYOUTRECALL, which must carry the layout
 *      stateid's next seqid, come as AUTH_SYS, and name the client's minor
 *      version in its CB_COMPOUND header;
 *   4. LAYOUTCOMMIT of [0, 4 KiB) with the seqid it held before the recall
 *      (the kernel client commits first thing on a recall): committed,
 *      the size is 4 KiB;
 *   5. LAYOUTRETURN with the recall's stateid; the WRITE goes through;
 *      READ through the server returns the bytes written to the disk and
 *      those written through the server;
 *   6. ALLOCATE of [16 KiB, 256 KiB) through the server, then LAYOUTGET
 *      (READ) of it: blocks allocated and never written are NONE_DATA to a
 *      reader (as INVALID_DATA, the kernel client's read failed with EIO).
 *
 * Every step is one that jnfsd once got wrong (see the checks' messages).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "jnfsd_proc.h"
#include "nfs4c/cb.h"
#include "nfs4c/nfs4c.h"
#include "xdr/pnfs_block.h"

#define LAYOUT_LEN (64u << 10)

/* What the callback handler saw (the callback thread writes, main reads). */
static atomic_uint recalls;
static struct {
	uint32_t flavor, minorversion, seqid;
	uint8_t other[12];
} recall_seen;

static nfsstat4 on_layoutrecall(void *arg, const struct nfs4c_cb_req *rq,
				const struct nfs_cb_argop4 *op, struct nfs_cb_resop4 *res)
{
	(void)arg;
	(void)res;
	const struct CB_LAYOUTRECALL4args *a = &op->opcblayoutrecall;
	if (a->clora_recall.lor_recalltype == LAYOUTRECALL4_FILE) {
		recall_seen.flavor = rq->cred ? rq->cred->flavor : RPC_AUTH_NONE;
		recall_seen.minorversion = rq->minorversion;
		recall_seen.seqid = a->clora_recall.lor_layout.lor_stateid.seqid;
		memcpy(recall_seen.other, a->clora_recall.lor_layout.lor_stateid.other, 12);
	}
	atomic_fetch_add(&recalls, 1);
	/* the layout will be returned: by the main thread, after its commit */
	return NFS4_OK;
}

static nfsstat4 send_ok(struct nfs4c_compound *c)
{
	CHECK_OK(nfs4c_send(c));
	return c->status;
}

/* LAYOUTGET(RW) of [off, off + LAYOUT_LEN) with sid: its status; on
 * success the layout stateid and the first extent. */
static nfsstat4 layoutget(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
			  const struct stateid4 *sid, uint64_t off, struct stateid4 *lsid,
			  struct pnfs_block_extent4 *first)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	struct LAYOUTGET4args *a = &nfs4c_op_add(&c, OP_LAYOUTGET)->oplayoutget;
	a->loga_layout_type = LAYOUT4_BLOCK_VOLUME;
	a->loga_iomode = LAYOUTIOMODE4_RW;
	a->loga_offset = off;
	a->loga_length = LAYOUT_LEN;
	a->loga_minlength = 4096;
	a->loga_stateid = *sid;
	a->loga_maxcount = 4096;
	nfsstat4 st = send_ok(&c);
	if (st == NFS4_OK) {
		const struct LAYOUTGET4resok *ok = &nfs4c_res(&c, OP_LAYOUTGET, 0)->oplayoutget.logr_resok4;
		*lsid = ok->logr_stateid;
		CHECK_EQ(ok->logr_layout.len, 1);
		const struct layout4 *l = &ok->logr_layout.val[0];
		CHECK_EQ(l->lo_content.loc_type, LAYOUT4_BLOCK_VOLUME);
		struct xdr_dec x;
		struct xdr_arena arena;
		uint8_t abuf[4096];
		xdr_dec_init(&x, l->lo_content.loc_body.val, l->lo_content.loc_body.len);
		xdr_arena_init(&arena, abuf, sizeof(abuf), 1u << 20);
		x.arena = &arena;
		struct pnfs_block_layout4 bl;
		memset(&bl, 0, sizeof(bl));
		CHECK_OK(pnfs_block_dec_pnfs_block_layout4(&x, &bl));
		CHECK(bl.blo_extents.len >= 1);
		*first = bl.blo_extents.val[0];
		xdr_arena_reset(&arena);
	}
	nfs4c_compound_destroy(&c);
	return st;
}

static nfsstat4 write_through_server(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
				     const struct stateid4 *open_sid, const uint8_t *data,
				     uint32_t len, uint64_t off)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_write(&c, open_sid, off, FILE_SYNC4, data, len);
	nfsstat4 st = send_ok(&c);
	nfs4c_compound_destroy(&c);
	return st;
}

static void read_back(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
		      const struct stateid4 *open_sid, uint64_t off, const uint8_t *want,
		      uint32_t len)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_read(&c, open_sid, off, len);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	const struct READ4resok *r = &nfs4c_res(&c, OP_READ, 0)->opread.resok4;
	CHECK_EQ(r->data.len, len);
	if (memcmp(r->data.val, want, len)) {
		fprintf(stderr, "READ of %u bytes at %llu: not what was written\n", len,
			(unsigned long long)off);
		CHECK(0);
	}
	nfs4c_compound_destroy(&c);
}

/* 6. LAYOUTGET(READ) of [off, off + len): every extent's state must be
 * NONE_DATA (nothing to read: allocated, never written) */
static void read_layout_of_unwritten(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
				     const struct stateid4 *open_sid, uint64_t off, uint64_t len)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_allocate(&c, open_sid, off, len);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, fh);
	struct LAYOUTGET4args *a = &nfs4c_op_add(&c, OP_LAYOUTGET)->oplayoutget;
	a->loga_layout_type = LAYOUT4_BLOCK_VOLUME;
	a->loga_iomode = LAYOUTIOMODE4_READ;
	a->loga_offset = off;
	a->loga_length = len;
	a->loga_minlength = 4096;
	a->loga_stateid = *open_sid;
	a->loga_maxcount = 4096;
	CHECK_EQ(send_ok(&c), NFS4_OK);
	const struct LAYOUTGET4resok *ok = &nfs4c_res(&c, OP_LAYOUTGET, 0)->oplayoutget.logr_resok4;
	CHECK_EQ(ok->logr_layout.len, 1);
	const struct layout4 *l = &ok->logr_layout.val[0];
	struct xdr_dec x;
	struct xdr_arena arena;
	uint8_t abuf[4096];
	xdr_dec_init(&x, l->lo_content.loc_body.val, l->lo_content.loc_body.len);
	xdr_arena_init(&arena, abuf, sizeof(abuf), 1u << 20);
	x.arena = &arena;
	struct pnfs_block_layout4 bl;
	memset(&bl, 0, sizeof(bl));
	CHECK_OK(pnfs_block_dec_pnfs_block_layout4(&x, &bl));
	CHECK(bl.blo_extents.len >= 1);
	uint64_t covered = 0;
	for (uint32_t i = 0; i < bl.blo_extents.len; i++) {
		const struct pnfs_block_extent4 *e = &bl.blo_extents.val[i];
		if (e->bex_state != PNFS_BLOCK_NONE_DATA)
			fprintf(stderr, "READ layout: [%llu, +%llu) in state %d\n",
				(unsigned long long)e->bex_file_offset,
				(unsigned long long)e->bex_length, (int)e->bex_state);
		CHECK_EQ(e->bex_state, PNFS_BLOCK_NONE_DATA);
		covered += e->bex_length;
	}
	CHECK_EQ(covered, len);
	xdr_arena_reset(&arena);
	/* the layout goes back: the whole file's, with its own stateid */
	struct stateid4 lsid = ok->logr_stateid;
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, fh);
	struct LAYOUTRETURN4args *lr = &nfs4c_op_add(&c, OP_LAYOUTRETURN)->oplayoutreturn;
	lr->lora_layout_type = LAYOUT4_BLOCK_VOLUME;
	lr->lora_iomode = LAYOUTIOMODE4_ANY;
	lr->lora_layoutreturn.lr_returntype = LAYOUTRETURN4_FILE;
	lr->lora_layoutreturn.lr_layout.lrf_offset = 0;
	lr->lora_layoutreturn.lr_layout.lrf_length = UINT64_MAX;
	lr->lora_layoutreturn.lr_layout.lrf_stateid = lsid;
	CHECK_EQ(send_ok(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
}

static void run(const char *addr, const char *image)
{
	static const char owner[] = "pnfs-linux-open-owner";
	struct nfs4c_cb_ops cbops = {0};
	cbops.op[OP_CB_LAYOUTRECALL] = on_layoutrecall;
	struct nfs4c_cfg cfg;
	struct nfs4c_client *cl;
	struct nfs4c_fh root, fh;
	nfs4c_cfg_default(&cfg);
	cfg.addr = addr;
	cfg.owner = "pnfs-linux";
	cfg.cred.uid = cfg.cred.gid = 0;
	cfg.eia_flags = EXCHGID4_FLAG_USE_PNFS_MDS;
	cfg.cb = &cbops;
	CHECK_EQ(cfg.cred.flavor, RPC_AUTH_SYS); /* so AUTH_SYS is offered for callbacks */
	CHECK_OK(nfs4c_create(&cfg, &cl));
	CHECK_OK(nfs4c_mount(cl, &root));
	struct nfs4c_info info;
	nfs4c_get_info(cl, &info);

	/* the file, open for writing */
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &root);
	struct nfs4c_open o = {.owner = owner,
			       .owner_len = sizeof(owner) - 1,
			       .access = OPEN4_SHARE_ACCESS_BOTH,
			       .deny = OPEN4_SHARE_DENY_NONE,
			       .claim = CLAIM_NULL,
			       .name = "through-the-layout",
			       .create = true,
			       .how = GUARDED4,
			       .attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	nfs4c_op_open(&c, &o);
	nfs4c_op_getfh(&c);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_fh(&c, &fh));
	struct stateid4 open_sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	nfs4c_compound_destroy(&c);

	/* 1. a layout with the open stateid (jnfsd once took an engine lock
	 * under its layout table's lock here: a lockdep panic) */
	struct stateid4 lsid, lsid2;
	struct pnfs_block_extent4 ext, ext2;
	CHECK_EQ(layoutget(cl, &fh, &open_sid, 0, &lsid, &ext), NFS4_OK);
	CHECK_EQ(ext.bex_file_offset, 0);
	CHECK_EQ(ext.bex_state, PNFS_BLOCK_INVALID_DATA);
	CHECK(ext.bex_length >= 4096);
	printf("layout 1: stateid seqid %u, extent at %llu of the device\n", lsid.seqid,
	       (unsigned long long)ext.bex_storage_offset);

	/* 2. more with the layout stateid (was BAD_STATEID: the open mode was
	 * checked as if it were an open stateid) */
	nfsstat4 st = layoutget(cl, &fh, &lsid, LAYOUT_LEN, &lsid2, &ext2);
	if (st != NFS4_OK)
		fprintf(stderr, "LAYOUTGET with the layout stateid: status %u\n", st);
	CHECK_EQ(st, NFS4_OK);
	CHECK(!memcmp(lsid2.other, lsid.other, 12));
	CHECK_EQ(lsid2.seqid, lsid.seqid + 1);
	CHECK_EQ(ext2.bex_file_offset, LAYOUT_LEN);

	/* 3. 4 KiB to the disk where the layout says, as the client's block
	 * driver does; then a WRITE through the server: DELAY and a recall */
	uint8_t block[4096], small[100];
	for (unsigned i = 0; i < sizeof(block); i++)
		block[i] = (uint8_t)(i * 31 + 7);
	memset(small, 0x5a, sizeof(small));
	int fd = open(image, O_WRONLY);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, block, sizeof(block), (off_t)ext.bex_storage_offset),
		 (ssize_t)sizeof(block));
	CHECK_OK(fdatasync(fd));
	close(fd);
	CHECK_EQ(write_through_server(cl, &fh, &open_sid, small, sizeof(small), 8192),
		 NFS4ERR_DELAY);
	for (int i = 0; i < 1000 && atomic_load(&recalls) == 0; i++)
		usleep(10000);
	CHECK_EQ(atomic_load(&recalls), 1);
	printf("recall: seqid %u, flavor %u, minor version %u\n", recall_seen.seqid,
	       recall_seen.flavor, recall_seen.minorversion);
	CHECK(!memcmp(recall_seen.other, lsid.other, 12));
	/* the next seqid (it was the current one: the kernel client answered
	 * OLD_STATEID and kept the layout until it was fenced) */
	CHECK_EQ(recall_seen.seqid, lsid2.seqid + 1);
	/* AUTH_SYS, as offered (AUTH_NONE: the kernel's callback service
	 * refuses every CB_COMPOUND under it) */
	CHECK_EQ(recall_seen.flavor, RPC_AUTH_SYS);
	/* the client's minor version (1: the kernel finds no 4.2 client with
	 * the session and answers BADSESSION) */
	CHECK_EQ(recall_seen.minorversion, info.minorversion);

	/* 4. LAYOUTCOMMIT with the seqid held before the recall (was
	 * OLD_STATEID, which the kernel client sends again unchanged) */
	uint8_t body[128];
	struct pnfs_block_extent4 wrote = ext;
	wrote.bex_length = 4096;
	wrote.bex_state = PNFS_BLOCK_INVALID_DATA;
	struct pnfs_block_layoutupdate4 up = {.blu_commit_list = {.len = 1, .val = &wrote}};
	struct xdr_enc x;
	xdr_enc_init_buf(&x, body, sizeof(body), sizeof(body));
	CHECK_OK(pnfs_block_enc_pnfs_block_layoutupdate4(&x, &up));
	uint32_t blen = (uint32_t)xdr_enc_len(&x);
	xdr_enc_destroy(&x);
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &fh);
	struct LAYOUTCOMMIT4args *lc = &nfs4c_op_add(&c, OP_LAYOUTCOMMIT)->oplayoutcommit;
	lc->loca_offset = 0;
	lc->loca_length = 4096;
	lc->loca_stateid = lsid2;
	lc->loca_last_write_offset.no_newoffset = true;
	lc->loca_last_write_offset.no_offset = 4095;
	lc->loca_layoutupdate.lou_type = LAYOUT4_BLOCK_VOLUME;
	lc->loca_layoutupdate.lou_body.len = blen;
	lc->loca_layoutupdate.lou_body.val = body;
	st = send_ok(&c);
	if (st != NFS4_OK)
		fprintf(stderr, "LAYOUTCOMMIT with the seqid before the recall: status %u\n", st);
	CHECK_EQ(st, NFS4_OK);
	const struct LAYOUTCOMMIT4resok *lcr = &nfs4c_res(&c, OP_LAYOUTCOMMIT, 0)->oplayoutcommit.locr_resok4;
	CHECK(lcr->locr_newsize.ns_sizechanged && lcr->locr_newsize.ns_size == 4096);
	nfs4c_compound_destroy(&c);

	/* 5. the layout back, with the recall's stateid; then the WRITE */
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &fh);
	struct LAYOUTRETURN4args *lr = &nfs4c_op_add(&c, OP_LAYOUTRETURN)->oplayoutreturn;
	lr->lora_layout_type = LAYOUT4_BLOCK_VOLUME;
	lr->lora_iomode = LAYOUTIOMODE4_ANY;
	lr->lora_layoutreturn.lr_returntype = LAYOUTRETURN4_FILE;
	lr->lora_layoutreturn.lr_layout.lrf_offset = 0;
	lr->lora_layoutreturn.lr_layout.lrf_length = UINT64_MAX;
	lr->lora_layoutreturn.lr_layout.lrf_stateid = lsid2;
	lr->lora_layoutreturn.lr_layout.lrf_stateid.seqid = recall_seen.seqid;
	CHECK_EQ(send_ok(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	CHECK_EQ(write_through_server(cl, &fh, &open_sid, small, sizeof(small), 8192), NFS4_OK);
	read_back(cl, &fh, &open_sid, 0, block, sizeof(block));
	read_back(cl, &fh, &open_sid, 8192, small, sizeof(small));

	/* 6. blocks allocated, never written: nothing to read (was
	 * INVALID_DATA, which the kernel client fails with EIO) */
	read_layout_of_unwritten(cl, &fh, &open_sid, 16384, 245760);

	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_close(&c, &open_sid);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	CHECK_EQ(nfs4c_unmount(cl), NFS4_OK);
	nfs4c_destroy(cl);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(120);
	if (argc != 2) {
		fprintf(stderr, "usage: test-nfs4-pnfs-linux JNFSD\n");
		return 2;
	}
	char dir[] = "/tmp/test-nfs4-pnfs-linux.XXXXXX", image[64], exports[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(image, sizeof(image), "%s/img", dir);
	snprintf(exports, sizeof(exports), "%s/exports", dir);
	FILE *f = fopen(exports, "w");
	CHECK(f != NULL);
	fprintf(f, "/ 127.0.0.1(rw,insecure,no_root_squash,pnfs)\n");
	CHECK_OK(fclose(f));
	const char *args[] = {"--listen", "127.0.0.1:0", "--rpcbind", "off", "--exports", exports,
			      "--image", image, "--size", "256M", NULL};
	struct tc_jnfsd j;
	char addr[64];
	tc_jnfsd_start(&j, argv[1], args);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", j.port[0]);
	run(addr, image);
	int status = tc_jnfsd_stop(&j);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	unlink(image);
	unlink(exports);
	rmdir(dir);
	TEST_PASS("nfs4 pnfs as the Linux client does it");
	return 0;
}
