/*
 * test_nfs4c_pnfs.c - the pNFS block layout client (src/nfs4c/blk.h and
 * pnfs.h) without a real server.
 *
 *  - volumes: device descriptions decoded (and refused when they are not
 *    a topology), signatures found on in-memory disks (negative offsets
 *    from the end, a decoy that matches only in part), SLICE, CONCAT and
 *    STRIPE offsets mapped to disks;
 *  - extents: layouts decoded (misaligned, empty, overflowing extents
 *    refused), the client's extent map (plans for reads and writes,
 *    written INVALID_DATA blocks, the layout update, copy-on-write, the
 *    bound), the update encoded and read back;
 *  - the client against a small metadata server played by this test on
 *    127.0.0.1 (its answers follow RFC 8881 and RFC 5663; the "disk" is an
 *    image file the test reads itself): unaligned writes through INVALID
 *    extents, several LAYOUTGETs and a RECALLCONFLICT retried, the
 *    stateids presented, what LAYOUTCOMMIT carries (the written blocks,
 *    last_write_offset, nothing for an overwrite), reads back, recalls
 *    (the written blocks are committed before the return, the recall's
 *    seqid, NOMATCHING_LAYOUT, DELAY while a LAYOUTGET's reply is on its
 *    way), CB_RECALL_ANY, close, and a holding client that ignores recalls.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/mem.h"
#include "base/time.h"
#include "check.h"
#include "nfs4c/blk.h"
#include "nfs4c/pnfs.h"
#include "pnfs_util.h"
#include "rpc/clnt.h"
#include "rpc/rpc_msg.h"

/* ---- volumes -------------------------------------------------------------- */

/* Encode n volumes as a pnfs_block_deviceaddr4; returns the length. */
static uint32_t enc_devaddr(struct pnfs_block_volume4 *v, unsigned n, uint8_t *out, size_t cap)
{
	struct xdr_enc x;
	struct pnfs_block_deviceaddr4 da = {.bda_volumes = {n, v}};
	xdr_enc_init_buf(&x, out, cap, cap);
	CHECK_OK(pnfs_block_enc_pnfs_block_deviceaddr4(&x, &da));
	uint32_t len = (uint32_t)xdr_enc_len(&x);
	if (x.buf != out)
		xdr_enc_flatten(&x, out);
	xdr_enc_destroy(&x);
	return len;
}

struct memdisk {
	uint8_t *b;
	uint64_t size;
};

static struct memdisk mdisk[2];
static unsigned mreads;

static int mem_read(void *arg, unsigned disk, uint64_t off, void *buf, size_t len)
{
	CHECK(disk < 2 && off + len <= mdisk[disk].size);
	memcpy(buf, mdisk[disk].b + off, len);
	mreads++;
	return 0;
}

static struct pnfs_block_volume4 simple(struct pnfs_block_sig_component4 *c, unsigned n)
{
	struct pnfs_block_volume4 v = {.type = PNFS_BLOCK_VOLUME_SIMPLE};
	v.bv_simple_info.bsv_ds.len = n;
	v.bv_simple_info.bsv_ds.val = c;
	return v;
}

static void test_volumes(void)
{
	uint8_t buf[4096];
	struct nfs4c_blk_topo t;
	uint64_t sizes[2] = {64 << 10, 128 << 10};
	unsigned disk;
	uint64_t doff, contig;

	for (int i = 0; i < 2; i++) {
		mdisk[i].size = sizes[i];
		mdisk[i].b = xcalloc(1, sizes[i]);
	}
	memcpy(mdisk[0].b + 32, "ABCDEFGH", 8);
	memcpy(mdisk[1].b + 32, "IJKLMNOP", 8);
	memcpy(mdisk[0].b + sizes[0] - 512, "tail", 4);
	memcpy(mdisk[1].b + sizes[1] - 512, "tail", 4);

	struct pnfs_block_sig_component4 s0[2] = {{32, {8, (const uint8_t *)"IJKLMNOP"}},
						  {-512, {4, (const uint8_t *)"tail"}}};
	struct pnfs_block_sig_component4 s1[2] = {{32, {8, (const uint8_t *)"ABCDEFGH"}},
						  {-512, {4, (const uint8_t *)"tail"}}};
	struct pnfs_block_volume4 v[6] = {simple(s0, 2), simple(s1, 2)};
	v[2].type = PNFS_BLOCK_VOLUME_SLICE;
	v[2].bv_slice_info = (struct pnfs_block_slice_volume_info4){4096, 32768, 1};
	v[3].type = PNFS_BLOCK_VOLUME_CONCAT;
	v[3].bv_concat_info.bcv_volumes.len = 2;
	v[3].bv_concat_info.bcv_volumes.val[0] = 2;
	v[3].bv_concat_info.bcv_volumes.val[1] = 0;
	v[4].type = PNFS_BLOCK_VOLUME_STRIPE;
	v[4].bv_stripe_info.bsv_stripe_unit = 8192;
	v[4].bv_stripe_info.bsv_volumes.len = 2;
	v[4].bv_stripe_info.bsv_volumes.val[0] = 1;
	v[4].bv_stripe_info.bsv_volumes.val[1] = 0;

	/* the device is the STRIPE (the last volume) */
	uint32_t len = enc_devaddr(v, 5, buf, sizeof(buf));
	CHECK_OK(nfs4c_blk_topo_decode(buf, len, &t));
	CHECK_EQ(t.nvol, 5);
	CHECK(t.vol[0].type == PNFS_BLOCK_VOLUME_SIMPLE && t.vol[0].nsig == 2);
	CHECK(t.vol[0].sig[1].off == -512 && t.vol[0].sig[1].len == 4);
	CHECK(t.vol[2].start == 4096 && t.vol[2].length == 32768 && t.vol[2].sub[0] == 1);
	CHECK(t.vol[4].unit == 8192 && t.vol[4].nsub == 2);
	CHECK_OK(nfs4c_blk_topo_resolve(&t, 2, sizes, mem_read, NULL));
	CHECK_EQ(t.vol[0].disk, 1); /* IJKLMNOP */
	CHECK_EQ(t.vol[1].disk, 0);
	CHECK_EQ(t.vol[2].size, 32768);
	CHECK_EQ(t.vol[3].size, 32768 + (128 << 10));
	/* whole stripe units of the smaller part (64 KiB), on both */
	CHECK_EQ(t.vol[4].size, 2 * (64 << 10));

	/* STRIPE: units alternate between volume 1 (disk 0) and 0 (disk 1) */
	CHECK_OK(nfs4c_blk_topo_map(&t, 0, 1 << 20, &disk, &doff, &contig));
	CHECK(disk == 0 && doff == 0 && contig == 8192);
	CHECK_OK(nfs4c_blk_topo_map(&t, 8192, 100, &disk, &doff, &contig));
	CHECK(disk == 1 && doff == 0 && contig == 100);
	CHECK_OK(nfs4c_blk_topo_map(&t, 16384 + 5000, 10000, &disk, &doff, &contig));
	CHECK(disk == 0 && doff == 8192 + 5000 && contig == 8192 - 5000);
	CHECK_OK(nfs4c_blk_topo_map(&t, 3 * 8192 + 1, 1, &disk, &doff, &contig));
	CHECK(disk == 1 && doff == 8192 + 1 && contig == 1);
	CHECK_EQ(nfs4c_blk_topo_map(&t, t.vol[4].size, 1, &disk, &doff, &contig), -ERANGE);
	nfs4c_blk_topo_free(&t);

	/* the CONCAT as the device: the SLICE first (disk 0 from 4096), then
	 * all of volume 0 (disk 1) */
	len = enc_devaddr(v, 4, buf, sizeof(buf));
	CHECK_OK(nfs4c_blk_topo_decode(buf, len, &t));
	CHECK_OK(nfs4c_blk_topo_resolve(&t, 2, sizes, mem_read, NULL));
	CHECK_OK(nfs4c_blk_topo_map(&t, 32767, 10, &disk, &doff, &contig));
	CHECK(disk == 0 && doff == 4096 + 32767 && contig == 1);
	CHECK_OK(nfs4c_blk_topo_map(&t, 32768 + 77, 1 << 20, &disk, &doff, &contig));
	CHECK(disk == 1 && doff == 77 && contig == (128 << 10) - 77);
	nfs4c_blk_topo_free(&t);

	/* a signature on no disk: the tail differs on the decoy */
	memcpy(mdisk[0].b + sizes[0] - 512, "TAIL", 4);
	len = enc_devaddr(v, 2, buf, sizeof(buf));
	CHECK_OK(nfs4c_blk_topo_decode(buf, len, &t));
	CHECK_EQ(nfs4c_blk_topo_resolve(&t, 2, sizes, mem_read, NULL), -ENODEV);
	nfs4c_blk_topo_free(&t);
	memcpy(mdisk[0].b + sizes[0] - 512, "tail", 4);
	/* offsets past either end never match and read nothing */
	struct nfs4c_blk_sig far[3] = {{INT64_MIN, 1, (uint8_t *)"x"},
				       {(int64_t)sizes[0], 1, (uint8_t *)"x"},
				       {-1 - (int64_t)sizes[0], 1, (uint8_t *)"x"}};
	mreads = 0;
	for (int i = 0; i < 3; i++)
		CHECK_EQ(nfs4c_blk_sig_match(&far[i], 1, 0, sizes[0], mem_read, NULL), 0);
	CHECK_EQ(mreads, 0);
	struct nfs4c_blk_sig last = {-1, 1, (uint8_t *)"z"};
	mdisk[0].b[sizes[0] - 1] = 'z';
	CHECK_EQ(nfs4c_blk_sig_match(&last, 1, 0, sizes[0], mem_read, NULL), 1);

	/* what is no topology */
	struct pnfs_block_volume4 bad[2] = {simple(s0, 2)};
	bad[1].type = PNFS_BLOCK_VOLUME_SLICE;
	bad[1].bv_slice_info = (struct pnfs_block_slice_volume_info4){0, 1, 1}; /* itself */
	len = enc_devaddr(bad, 2, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_topo_decode(buf, len, &t), -EBADMSG);
	nfs4c_blk_topo_free(&t);
	bad[1].type = PNFS_BLOCK_VOLUME_CONCAT;
	bad[1].bv_concat_info.bcv_volumes.len = 0;
	len = enc_devaddr(bad, 2, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_topo_decode(buf, len, &t), -EBADMSG);
	nfs4c_blk_topo_free(&t);
	bad[1].type = PNFS_BLOCK_VOLUME_STRIPE;
	bad[1].bv_stripe_info.bsv_stripe_unit = 0;
	bad[1].bv_stripe_info.bsv_volumes.len = 1;
	bad[1].bv_stripe_info.bsv_volumes.val[0] = 0;
	len = enc_devaddr(bad, 2, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_topo_decode(buf, len, &t), -EBADMSG);
	nfs4c_blk_topo_free(&t);
	bad[0] = simple(s0, 0); /* nothing to find it by */
	len = enc_devaddr(bad, 1, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_topo_decode(buf, len, &t), -EBADMSG);
	nfs4c_blk_topo_free(&t);
	struct pnfs_block_sig_component4 empty = {0, {0, NULL}};
	bad[0] = simple(&empty, 1);
	len = enc_devaddr(bad, 1, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_topo_decode(buf, len, &t), -EBADMSG);
	nfs4c_blk_topo_free(&t);
	len = enc_devaddr(bad, 0, buf, sizeof(buf)); /* no volume */
	CHECK_EQ(nfs4c_blk_topo_decode(buf, len, &t), -EBADMSG);
	nfs4c_blk_topo_free(&t);
	len = enc_devaddr(v, 2, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_topo_decode(buf, len + 4, &t), -EBADMSG); /* bytes after it */
	nfs4c_blk_topo_free(&t);
	for (uint32_t cut = 0; cut < len; cut += 3) {
		CHECK(nfs4c_blk_topo_decode(buf, cut, &t) < 0);
		nfs4c_blk_topo_free(&t);
	}
	/* a SLICE past the end of its volume is found out when resolved */
	v[2].bv_slice_info = (struct pnfs_block_slice_volume_info4){4096, 64 << 10, 1};
	len = enc_devaddr(v, 3, buf, sizeof(buf));
	CHECK_OK(nfs4c_blk_topo_decode(buf, len, &t));
	CHECK_EQ(nfs4c_blk_topo_resolve(&t, 2, sizes, mem_read, NULL), -EBADMSG);
	nfs4c_blk_topo_free(&t);
	free(mdisk[0].b);
	free(mdisk[1].b);
	TEST_PASS("block volumes: decode, signatures, mapping");
}

/* ---- extents --------------------------------------------------------------- */

static const uint8_t DEV_A[16] = "device-A-------";
static const uint8_t DEV_B[16] = "device-B-------";

static struct nfs4c_blk_ext ext(uint64_t foff, uint64_t len, uint64_t soff,
				pnfs_block_extent_state4 st, layoutiomode4 io, const uint8_t *dev)
{
	struct nfs4c_blk_ext e = {
		.foff = foff, .len = len, .soff = soff, .state = st, .iomode = io};
	memcpy(e.devid, dev, 16);
	return e;
}

static uint32_t enc_layout(const struct pnfs_block_extent4 *e, unsigned n, uint8_t *out, size_t cap)
{
	struct xdr_enc x;
	struct pnfs_block_layout4 lo = {.blo_extents = {n, (struct pnfs_block_extent4 *)e}};
	xdr_enc_init_buf(&x, out, cap, cap);
	CHECK_OK(pnfs_block_enc_pnfs_block_layout4(&x, &lo));
	uint32_t len = (uint32_t)xdr_enc_len(&x);
	if (x.buf != out)
		xdr_enc_flatten(&x, out);
	xdr_enc_destroy(&x);
	return len;
}

static void plan(const struct nfs4c_blk_map *m, bool wr, uint64_t off, uint64_t len,
		 enum nfs4c_blk_how how, uint64_t plen, uint64_t soff)
{
	struct nfs4c_blk_piece p;
	nfs4c_blk_map_plan(m, wr, off, len, &p);
	if (p.how != how || p.len != plen || (how == NFS4C_BLK_DEV && p.soff != soff)) {
		fprintf(stderr,
			"plan(%s, %llu, %llu): how %d len %llu soff %llu, expected %d %llu %llu\n",
			wr ? "write" : "read", (unsigned long long)off, (unsigned long long)len,
			p.how, (unsigned long long)p.len, (unsigned long long)p.soff, how,
			(unsigned long long)plen, (unsigned long long)soff);
		exit(1);
	}
}

static void test_extents(void)
{
	uint8_t buf[8192];
	struct nfs4c_blk_ext e[8], got[8];
	unsigned n;
	bool more;

	/* layout bodies */
	struct pnfs_block_extent4 w[3] = {
		{.bex_file_offset = 0,
		 .bex_length = 65536,
		 .bex_storage_offset = 1 << 20,
		 .bex_state = PNFS_BLOCK_INVALID_DATA},
		{.bex_file_offset = 65536,
		 .bex_length = 8192,
		 .bex_storage_offset = 2 << 20,
		 .bex_state = PNFS_BLOCK_READ_WRITE_DATA},
		{.bex_file_offset = 73728,
		 .bex_length = 4096,
		 .bex_storage_offset = 123,
		 .bex_state = PNFS_BLOCK_NONE_DATA}, /* storage offset of a hole: unused */
	};
	for (int i = 0; i < 3; i++)
		memcpy(w[i].bex_vol_id, DEV_A, 16);
	uint32_t len = enc_layout(w, 3, buf, sizeof(buf));
	CHECK_OK(nfs4c_blk_layout_decode(buf, len, LAYOUTIOMODE4_RW, 4096, e, 8, &n));
	CHECK_EQ(n, 3);
	CHECK(e[0].state == PNFS_BLOCK_INVALID_DATA && e[0].soff == 1 << 20 && !e[0].written);
	CHECK(e[2].soff == 0 && e[2].iomode == LAYOUTIOMODE4_RW && !memcmp(e[2].devid, DEV_A, 16));
	CHECK_EQ(nfs4c_blk_layout_decode(buf, len, LAYOUTIOMODE4_RW, 4096, e, 2, &n), -E2BIG);
	CHECK_EQ(nfs4c_blk_layout_decode(buf, len - 1, LAYOUTIOMODE4_RW, 4096, e, 8, &n), -EBADMSG);
	struct pnfs_block_extent4 bad = w[0];
	bad.bex_file_offset = 512; /* not a block */
	len = enc_layout(&bad, 1, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_layout_decode(buf, len, LAYOUTIOMODE4_RW, 4096, e, 8, &n), -EBADMSG);
	bad = w[0];
	bad.bex_storage_offset = 100;
	len = enc_layout(&bad, 1, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_layout_decode(buf, len, LAYOUTIOMODE4_RW, 4096, e, 8, &n), -EBADMSG);
	bad = w[0];
	bad.bex_length = 0;
	len = enc_layout(&bad, 1, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_layout_decode(buf, len, LAYOUTIOMODE4_RW, 4096, e, 8, &n), -EBADMSG);
	bad = w[0];
	bad.bex_file_offset = UINT64_MAX - 4095;
	bad.bex_length = 8192;
	len = enc_layout(&bad, 1, buf, sizeof(buf));
	CHECK_EQ(nfs4c_blk_layout_decode(buf, len, LAYOUTIOMODE4_RW, 4096, e, 8, &n), -EBADMSG);

	/* the map of that RW layout */
	struct nfs4c_blk_map m;
	nfs4c_blk_map_init(&m);
	len = enc_layout(w, 3, buf, sizeof(buf));
	CHECK_OK(nfs4c_blk_layout_decode(buf, len, LAYOUTIOMODE4_RW, 4096, e, 8, &n));
	CHECK_OK(nfs4c_blk_map_add(&m, e, n));
	CHECK_EQ(nfs4c_blk_map_count(&m), 3);
	plan(&m, true, 0, 1 << 20, NFS4C_BLK_DEV, 65536, 1 << 20);
	plan(&m, false, 4096, 100, NFS4C_BLK_ZERO, 100, 0);
	plan(&m, true, 65536, 1 << 20, NFS4C_BLK_DEV, 8192, 2 << 20);
	plan(&m, true, 73728, 4096, NFS4C_BLK_HOLE, 4096, 0);
	plan(&m, false, 73728, 4096, NFS4C_BLK_ZERO, 4096, 0);
	plan(&m, false, 77824, 4096, NFS4C_BLK_UNMAPPED, 4096, 0);
	struct nfs4c_blk_piece pc;
	nfs4c_blk_map_plan(&m, true, 8192, 4096, &pc);
	CHECK(pc.fill && !pc.cow && !memcmp(pc.devid, DEV_A, 16));
	CHECK(!nfs4c_blk_map_covers(&m, true, 0, 77824));
	CHECK(nfs4c_blk_map_covers(&m, true, 0, 73728));
	CHECK(nfs4c_blk_map_covers(&m, false, 0, 77824));

	/* written INVALID blocks: read from storage, pending, merged */
	CHECK_OK(nfs4c_blk_map_mark_written(&m, 4096, 4096));
	plan(&m, false, 0, 65536, NFS4C_BLK_ZERO, 4096, 0);
	plan(&m, false, 4096, 65536, NFS4C_BLK_DEV, 4096, (1 << 20) + 4096);
	plan(&m, false, 8192, 100, NFS4C_BLK_ZERO, 100, 0);
	nfs4c_blk_map_plan(&m, true, 4096, 4096, &pc);
	CHECK(pc.how == NFS4C_BLK_DEV && !pc.fill);
	CHECK_OK(nfs4c_blk_map_mark_written(&m, 8192, 8192));
	CHECK_OK(nfs4c_blk_map_mark_written(&m, 40960, 4096));
	CHECK_OK(nfs4c_blk_map_mark_written(&m, 65536, 8192)); /* READ_WRITE_DATA: nothing */
	nfs4c_blk_map_pending(&m, got, 8, &n, &more);
	CHECK(n == 2 && !more);
	CHECK(got[0].foff == 4096 && got[0].len == 12288 && got[0].soff == (1 << 20) + 4096);
	CHECK(got[1].foff == 40960 && got[1].len == 4096);
	nfs4c_blk_map_pending(&m, got, 1, &n, &more);
	CHECK(n == 1 && more);
	/* the same layout again (another thread's LAYOUTGET, or one ahead
	 * of a stream): the blocks written stay written, pending and read
	 * from the disk; on other storage they are not kept */
	CHECK_OK(nfs4c_blk_map_add(&m, e, 3));
	nfs4c_blk_map_pending(&m, got, 8, &n, &more);
	CHECK(n == 2 && !more && got[0].foff == 4096 && got[0].len == 12288 &&
	      got[1].foff == 40960 && got[1].len == 4096);
	plan(&m, false, 4096, 65536, NFS4C_BLK_DEV, 12288, (1 << 20) + 4096);
	struct nfs4c_blk_map m2;
	nfs4c_blk_map_init(&m2);
	CHECK_OK(nfs4c_blk_map_add(&m2, e, 1));
	CHECK_OK(nfs4c_blk_map_mark_written(&m2, 4096, 8192));
	struct nfs4c_blk_ext moved = e[0];
	moved.soff = 5 << 20;
	CHECK_OK(nfs4c_blk_map_add(&m2, &moved, 1));
	nfs4c_blk_map_pending(&m2, got, 8, &n, &more);
	CHECK_EQ(n, 0);
	plan(&m2, false, 4096, 4096, NFS4C_BLK_ZERO, 4096, 0);
	nfs4c_blk_map_destroy(&m2);
	/* the update as the server reads it */
	struct xdr_enc x;
	xdr_enc_init(&x, 1 << 20);
	nfs4c_blk_map_pending(&m, got, 8, &n, &more);
	CHECK_OK(nfs4c_blk_update_encode(&x, got, n));
	CHECK_EQ(xdr_enc_len(&x), 4 + 2 * 44); /* 44 bytes an extent (RFC 5663) */
	xdr_enc_flatten(&x, buf);
	struct xdr_dec d;
	struct xdr_arena ar;
	struct pnfs_block_layoutupdate4 u;
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	xdr_dec_init(&d, buf, xdr_enc_len(&x));
	d.arena = &ar;
	CHECK_OK(pnfs_block_dec_pnfs_block_layoutupdate4(&d, &u));
	CHECK_EQ(u.blu_commit_list.len, 2);
	CHECK(u.blu_commit_list.val[0].bex_state == PNFS_BLOCK_READ_WRITE_DATA &&
	      u.blu_commit_list.val[0].bex_file_offset == 4096 &&
	      u.blu_commit_list.val[0].bex_length == 12288 &&
	      u.blu_commit_list.val[0].bex_storage_offset == (1 << 20) + 4096 &&
	      !memcmp(u.blu_commit_list.val[1].bex_vol_id, DEV_A, 16));
	xdr_arena_reset(&ar);
	xdr_enc_destroy(&x);
	/* committed: READ_WRITE_DATA; the first range only, then the rest */
	nfs4c_blk_map_committed(&m, got, 1);
	nfs4c_blk_map_pending(&m, got, 8, &n, &more);
	CHECK(n == 1 && got[0].foff == 40960);
	plan(&m, true, 4096, 65536, NFS4C_BLK_DEV, 12288, (1 << 20) + 4096);
	nfs4c_blk_map_plan(&m, true, 4096, 4096, &pc);
	CHECK(!pc.fill);
	nfs4c_blk_map_committed(&m, got, n);
	nfs4c_blk_map_pending(&m, got, 8, &n, &more);
	CHECK_EQ(n, 0);
	/* removing what an RW layout gave */
	CHECK_OK(nfs4c_blk_map_remove(&m, LAYOUTIOMODE4_RW, 8192, 8192));
	plan(&m, true, 8192, 65536, NFS4C_BLK_UNMAPPED, 8192, 0);
	plan(&m, true, 4096, 65536, NFS4C_BLK_DEV, 4096, (1 << 20) + 4096);
	CHECK_OK(nfs4c_blk_map_remove(&m, LAYOUTIOMODE4_READ, 0, UINT64_MAX)); /* none of those */
	plan(&m, true, 4096, 65536, NFS4C_BLK_DEV, 4096, (1 << 20) + 4096);
	CHECK_OK(nfs4c_blk_map_remove(&m, LAYOUTIOMODE4_ANY, 0, UINT64_MAX));
	CHECK_EQ(nfs4c_blk_map_count(&m), 0);

	/* a READ layout, then an RW one over part of it with copy-on-write:
	 * INVALID_DATA over READ_DATA on another device */
	e[0] = ext(0, 32768, 1 << 20, PNFS_BLOCK_READ_DATA, LAYOUTIOMODE4_READ, DEV_A);
	e[1] = ext(32768, 32768, 0, PNFS_BLOCK_NONE_DATA, LAYOUTIOMODE4_READ, DEV_A);
	CHECK_OK(nfs4c_blk_map_add(&m, e, 2));
	plan(&m, false, 100, 1 << 20, NFS4C_BLK_DEV, 32768 - 100, (1 << 20) + 100);
	plan(&m, false, 32768, 1 << 20, NFS4C_BLK_ZERO, 32768, 0);
	plan(&m, true, 0, 4096, NFS4C_BLK_READONLY, 4096, 0);
	e[0] = ext(8192, 8192, 3 << 20, PNFS_BLOCK_INVALID_DATA, LAYOUTIOMODE4_RW, DEV_B);
	e[1] = ext(8192, 8192, (1 << 20) + 8192, PNFS_BLOCK_READ_DATA, LAYOUTIOMODE4_RW, DEV_A);
	CHECK_OK(nfs4c_blk_map_add(&m, e, 2));
	nfs4c_blk_map_plan(&m, true, 8192, 65536, &pc);
	CHECK(pc.how == NFS4C_BLK_DEV && pc.len == 8192 && pc.soff == 3 << 20 && pc.fill && pc.cow);
	CHECK(pc.cow_soff == (1 << 20) + 8192 && !memcmp(pc.cow_devid, DEV_A, 16));
	/* unwritten: read from the source; written: from the new blocks */
	plan(&m, false, 8192, 4096, NFS4C_BLK_DEV, 4096, (1 << 20) + 8192);
	CHECK_OK(nfs4c_blk_map_mark_written(&m, 8192, 4096));
	plan(&m, false, 8192, 8192, NFS4C_BLK_DEV, 4096, 3 << 20);
	plan(&m, false, 12288, 4096, NFS4C_BLK_DEV, 4096, (1 << 20) + 12288);
	/* returning the RW layout leaves what is left of the READ one (the
	 * RW layout's extents had replaced it where they were) */
	CHECK_OK(nfs4c_blk_map_remove(&m, LAYOUTIOMODE4_RW, 0, UINT64_MAX));
	plan(&m, false, 4096, 65536, NFS4C_BLK_DEV, 4096, (1 << 20) + 4096);
	plan(&m, false, 8192, 65536, NFS4C_BLK_UNMAPPED, 8192, 0);
	plan(&m, false, 16384, 65536, NFS4C_BLK_DEV, 16384, (1 << 20) + 16384);
	/* one layout mapping a range twice is refused, the map unchanged */
	e[0] = ext(0, 8192, 0, PNFS_BLOCK_INVALID_DATA, LAYOUTIOMODE4_RW, DEV_A);
	e[1] = ext(4096, 8192, 65536, PNFS_BLOCK_INVALID_DATA, LAYOUTIOMODE4_RW, DEV_A);
	unsigned before = nfs4c_blk_map_count(&m);
	CHECK_EQ(nfs4c_blk_map_add(&m, e, 2), -EBADMSG);
	CHECK_EQ(nfs4c_blk_map_count(&m), before);
	nfs4c_blk_map_destroy(&m);

	/* new extents replace old ones over exactly their range */
	nfs4c_blk_map_init(&m);
	e[0] = ext(0, 65536, 1 << 20, PNFS_BLOCK_READ_WRITE_DATA, LAYOUTIOMODE4_RW, DEV_A);
	CHECK_OK(nfs4c_blk_map_add(&m, e, 1));
	e[0] = ext(8192, 4096, 5 << 20, PNFS_BLOCK_INVALID_DATA, LAYOUTIOMODE4_RW, DEV_A);
	e[1] = ext(32768, 4096, 6 << 20, PNFS_BLOCK_INVALID_DATA, LAYOUTIOMODE4_RW, DEV_A);
	e[2] = ext(61440, 8192, 7 << 20, PNFS_BLOCK_INVALID_DATA, LAYOUTIOMODE4_RW, DEV_A);
	CHECK_OK(nfs4c_blk_map_add(&m, e, 3));
	plan(&m, true, 0, 1 << 20, NFS4C_BLK_DEV, 8192, 1 << 20);
	plan(&m, true, 8192, 1 << 20, NFS4C_BLK_DEV, 4096, 5 << 20);
	plan(&m, true, 12288, 1 << 20, NFS4C_BLK_DEV, 20480, (1 << 20) + 12288);
	plan(&m, true, 36864, 1 << 20, NFS4C_BLK_DEV, 24576, (1 << 20) + 36864);
	plan(&m, true, 61440, 1 << 20, NFS4C_BLK_DEV, 8192, 7 << 20);
	plan(&m, true, 69632, 1 << 20, NFS4C_BLK_UNMAPPED, (1 << 20), 0);
	CHECK_EQ(nfs4c_blk_map_count(&m), 6);
	nfs4c_blk_map_destroy(&m);

	/* the bound: NFS4C_BLK_MAX_EXTENTS that do not merge, then one more */
	nfs4c_blk_map_init(&m);
	unsigned nmax = NFS4C_BLK_MAX_EXTENTS;
	struct nfs4c_blk_ext *many = xcalloc(nmax + 1, sizeof(*many));
	for (unsigned i = 0; i <= nmax; i++)
		many[i] = ext((uint64_t)i * 4096, 4096, (uint64_t)i * 8192, PNFS_BLOCK_INVALID_DATA,
			      LAYOUTIOMODE4_RW, DEV_A);
	CHECK_EQ(nfs4c_blk_map_add(&m, many, nmax + 1), -E2BIG);
	CHECK_EQ(nfs4c_blk_map_count(&m), 0);
	CHECK_OK(nfs4c_blk_map_add(&m, many, nmax));
	CHECK_EQ(nfs4c_blk_map_count(&m), nmax);
	CHECK_EQ(nfs4c_blk_map_add(&m, many + nmax, 1), -E2BIG);
	/* marking written splits nothing here (whole extents): fits */
	CHECK_OK(nfs4c_blk_map_mark_written(&m, 0, (uint64_t)nmax * 4096));
	CHECK_EQ(nfs4c_blk_map_count(&m), nmax);
	free(many);
	nfs4c_blk_map_destroy(&m);
	TEST_PASS("block extents: decode, the map, the layout update");
}

/* ---- a metadata server played by the test ------------------------------------ */

#define BS	    4096u
#define DISK_SIZE   (8u << 20)
#define FILE_BLOCKS 256u /* the model's file: at most 1 MiB */
#define CBPROG	    0x40000000u

static const uint8_t DEVID[16] = "the-test-device";
static const uint8_t SIG[16] = "pnfs-test-sig-01";
static const uint8_t OPEN_OTHER[12] = "open-stateid";
static const uint8_t LAYOUT_OTHER[12] = "layout-state";
static const uint8_t SESSION[16] = "mds-session-0001";
static const struct nfs4c_fh FILE_FH = {.len = 2, .val = {0xf1, 0x1e}};
static const struct nfs4c_fh DIR_FH = {.len = 1, .val = {0xd1}};

struct mds {
	int lfd, fd;
	char addr[32];
	pthread_t thread;
	pthread_mutex_t lock, send_lock;
	pthread_cond_t cv;

	/* the file, guarded by lock */
	uint64_t size;
	int64_t blk[FILE_BLOCKS]; /* storage block, -1: none */
	bool written[FILE_BLOCKS];
	uint64_t next_free; /* storage block */
	bool have_layout;
	uint32_t lseqid;
	/* what the client did, guarded by lock */
	char ops[512]; /* G LAYOUTGET, C LAYOUTCOMMIT, R LAYOUTRETURN, D GETDEVICEINFO,
			* O OPEN, X CLOSE */
	unsigned nops;
	struct stateid4 lg_sid, lg_first_sid; /* the last LAYOUTGET's, the first's */
	unsigned lg_open;		      /* LAYOUTGETs with the open stateid */
	struct {
		unsigned n;
		struct pnfs_block_extent4 e[64];
		bool have_lw;
		uint64_t lw, off, len;
		struct stateid4 sid;
	} commit;
	struct {
		layoutreturn_type4 kind;
		layoutiomode4 iomode;
		uint64_t off, len;
		struct stateid4 sid;
	} ret;
	/* how it answers */
	uint64_t lg_cap;    /* bytes per LAYOUTGET */
	bool lg_forget;	    /* forget the layout at the next LAYOUTGET that names it
			     * (a revocation): BAD_STATEID */
	nfsstat4 lg_answer; /* answer the next LAYOUTGET with this, once */
	bool hold_lg;	    /* keep the next LAYOUTGET's reply for the test */
	uint64_t gdi_delay_ns; /* GETDEVICEINFO answers wait this long */
	uint8_t *held;
	size_t held_len;
	/* callbacks */
	uint32_t cb_seqid, cb_xid;
	uint32_t cb_reply_xid;
	nfsstat4 cb_reply_status;
	bool cb_replied;
};

static struct mds M;

static void mds_op(char c)
{
	if (M.nops < sizeof(M.ops) - 1)
		M.ops[M.nops++] = c;
}

static uint64_t blk_soff(uint64_t b)
{
	return (uint64_t)M.blk[b] * BS;
}

/* LAYOUTGET (RFC 8881 18.43, RFC 5663 2.3): RW layouts allocate what is
 * not allocated; extents are runs of one state on contiguous storage. */
static void mds_layoutget(const struct LAYOUTGET4args *a, struct LAYOUTGET4res *r, uint8_t *body,
			  size_t cap)
{
	if (!M.lg_sid.seqid && !M.lg_sid.other[0])
		M.lg_first_sid = a->loga_stateid;
	M.lg_sid = a->loga_stateid;
	M.lg_open += !memcmp(a->loga_stateid.other, OPEN_OTHER, 12);
	mds_op('G');
	if (M.lg_forget && M.have_layout && !memcmp(a->loga_stateid.other, LAYOUT_OTHER, 12)) {
		M.lg_forget = false;
		M.have_layout = false;
		r->logr_status = NFS4ERR_BAD_STATEID;
		return;
	}
	const uint8_t *want = M.have_layout ? LAYOUT_OTHER : OPEN_OTHER;
	if (memcmp(a->loga_stateid.other, want, 12)) {
		r->logr_status = NFS4ERR_BAD_STATEID;
		return;
	}
	if (M.lg_answer) {
		r->logr_status = M.lg_answer;
		M.lg_answer = 0;
		return;
	}
	CHECK(a->loga_layout_type == LAYOUT4_BLOCK_VOLUME);
	CHECK(a->loga_minlength > 0 && a->loga_minlength <= a->loga_length);
	uint64_t first = a->loga_offset / BS;
	uint64_t end = MIN((a->loga_offset + a->loga_length + BS - 1) / BS, first + M.lg_cap / BS);
	end = MIN(end, (uint64_t)FILE_BLOCKS);
	if (first >= end) {
		r->logr_status = NFS4ERR_LAYOUTUNAVAILABLE;
		return;
	}
	bool rw = a->loga_iomode == LAYOUTIOMODE4_RW;
	struct pnfs_block_extent4 e[FILE_BLOCKS];
	unsigned n = 0;
	for (uint64_t b = first; b < end; b++) {
		if (rw && M.blk[b] < 0)
			M.blk[b] = (int64_t)M.next_free++;
		pnfs_block_extent_state4 st =
			M.blk[b] < 0   ? PNFS_BLOCK_NONE_DATA
			: M.written[b] ? (rw ? PNFS_BLOCK_READ_WRITE_DATA : PNFS_BLOCK_READ_DATA)
			: rw	       ? PNFS_BLOCK_INVALID_DATA
				       : PNFS_BLOCK_NONE_DATA;
		uint64_t soff = st == PNFS_BLOCK_NONE_DATA ? 0 : blk_soff(b);
		struct pnfs_block_extent4 *l = n ? &e[n - 1] : NULL;
		if (l && l->bex_state == st &&
		    (st == PNFS_BLOCK_NONE_DATA || l->bex_storage_offset + l->bex_length == soff)) {
			l->bex_length += BS;
			continue;
		}
		memset(&e[n], 0, sizeof(e[n]));
		memcpy(e[n].bex_vol_id, DEVID, 16);
		e[n].bex_file_offset = b * BS;
		e[n].bex_length = BS;
		e[n].bex_storage_offset = soff;
		e[n].bex_state = st;
		n++;
	}
	struct xdr_enc x;
	struct pnfs_block_layout4 lo = {.blo_extents = {n, e}};
	xdr_enc_init_buf(&x, body, cap, cap);
	CHECK_OK(pnfs_block_enc_pnfs_block_layout4(&x, &lo));
	CHECK(x.buf == body);
	size_t blen = xdr_enc_len(&x);
	xdr_enc_destroy(&x);

	static struct layout4 lay;
	M.have_layout = true;
	M.lseqid++;
	r->logr_status = NFS4_OK;
	struct LAYOUTGET4resok *ok = &r->logr_resok4;
	ok->logr_return_on_close = false;
	ok->logr_stateid.seqid = M.lseqid;
	memcpy(ok->logr_stateid.other, LAYOUT_OTHER, 12);
	lay.lo_offset = first * BS;
	lay.lo_length = (end - first) * BS;
	lay.lo_iomode = a->loga_iomode;
	lay.lo_content.loc_type = LAYOUT4_BLOCK_VOLUME;
	lay.lo_content.loc_body.len = (uint32_t)blen;
	lay.lo_content.loc_body.val = body;
	ok->logr_layout.len = 1;
	ok->logr_layout.val = &lay;
}

/* LAYOUTCOMMIT (18.42, RFC 5663 2.3.2): the written blocks, sorted,
 * disjoint, block-aligned, READ_WRITE_DATA, of blocks the file has. */
static void mds_layoutcommit(const struct LAYOUTCOMMIT4args *a, struct LAYOUTCOMMIT4res *r)
{
	struct xdr_arena ar;
	struct xdr_dec x;
	struct pnfs_block_layoutupdate4 u;
	mds_op('C');
	CHECK(M.have_layout && !memcmp(a->loca_stateid.other, LAYOUT_OTHER, 12));
	CHECK_EQ(a->loca_layoutupdate.lou_type, LAYOUT4_BLOCK_VOLUME);
	xdr_arena_init(&ar, NULL, 0, 1 << 20);
	xdr_dec_init(&x, a->loca_layoutupdate.lou_body.val, a->loca_layoutupdate.lou_body.len);
	x.arena = &ar;
	CHECK_OK(pnfs_block_dec_pnfs_block_layoutupdate4(&x, &u));
	CHECK_EQ(xdr_dec_remaining(&x), 0);
	CHECK(u.blu_commit_list.len <= 64);
	M.commit.n = u.blu_commit_list.len;
	M.commit.have_lw = a->loca_last_write_offset.no_newoffset;
	M.commit.lw = a->loca_last_write_offset.no_offset;
	M.commit.off = a->loca_offset;
	M.commit.len = a->loca_length;
	M.commit.sid = a->loca_stateid;
	CHECK(a->loca_time_modify.nt_timechanged);
	uint64_t prev_end = 0;
	for (uint32_t i = 0; i < u.blu_commit_list.len; i++) {
		const struct pnfs_block_extent4 *e = &u.blu_commit_list.val[i];
		M.commit.e[i] = *e;
		CHECK_EQ(e->bex_state, PNFS_BLOCK_READ_WRITE_DATA);
		CHECK(e->bex_file_offset % BS == 0 && e->bex_length % BS == 0 && e->bex_length);
		CHECK(e->bex_file_offset >= prev_end);
		CHECK(!memcmp(e->bex_vol_id, DEVID, 16));
		/* inside the range committed */
		CHECK(e->bex_file_offset >= a->loca_offset &&
		      e->bex_file_offset + e->bex_length <= a->loca_offset + a->loca_length);
		prev_end = e->bex_file_offset + e->bex_length;
		for (uint64_t b = e->bex_file_offset / BS; b < prev_end / BS; b++) {
			CHECK(b < FILE_BLOCKS && M.blk[b] >= 0);
			CHECK_EQ(blk_soff(b),
				 e->bex_storage_offset + (b * BS - e->bex_file_offset));
			M.written[b] = true;
		}
	}
	xdr_arena_reset(&ar);
	r->locr_status = NFS4_OK;
	if (M.commit.have_lw && M.commit.lw + 1 > M.size) {
		M.size = M.commit.lw + 1;
		r->locr_resok4.locr_newsize.ns_sizechanged = true;
		r->locr_resok4.locr_newsize.ns_size = M.size;
	}
}

static void mds_layoutreturn(const struct LAYOUTRETURN4args *a, struct LAYOUTRETURN4res *r)
{
	mds_op('R');
	M.ret.kind = a->lora_layoutreturn.lr_returntype;
	M.ret.iomode = a->lora_iomode;
	r->lorr_status = NFS4_OK;
	if (M.ret.kind != LAYOUTRETURN4_FILE) {
		M.have_layout = false;
		return;
	}
	const struct layoutreturn_file4 *f = &a->lora_layoutreturn.lr_layout;
	M.ret.off = f->lrf_offset;
	M.ret.len = f->lrf_length;
	M.ret.sid = f->lrf_stateid;
	CHECK(!memcmp(f->lrf_stateid.other, LAYOUT_OTHER, 12));
	if (f->lrf_offset == 0 && f->lrf_length == NFS4_UINT64_MAX) {
		M.have_layout = false; /* nothing left: no stateid (18.44.3) */
	} else {
		r->lorr_stateid.lrs_present = true;
		r->lorr_stateid.lrs_stateid.seqid = ++M.lseqid;
		memcpy(r->lorr_stateid.lrs_stateid.other, LAYOUT_OTHER, 12);
	}
}

static void mds_getdeviceinfo(const struct GETDEVICEINFO4args *a, struct GETDEVICEINFO4res *r,
			      uint8_t *body, size_t cap)
{
	mds_op('D');
	CHECK(!memcmp(a->gdia_device_id, DEVID, 16));
	if (M.gdi_delay_ns)
		sleep_ns(M.gdi_delay_ns);
	struct pnfs_block_sig_component4 s[2] = {{32, {16, SIG}},
						 {-4096, {8, (const uint8_t *)"tailsig!"}}};
	struct pnfs_block_volume4 v = simple(s, 2);
	uint32_t len = enc_devaddr(&v, 1, body, cap);
	r->gdir_status = NFS4_OK;
	r->gdir_resok4.gdir_device_addr.da_layout_type = LAYOUT4_BLOCK_VOLUME;
	r->gdir_resok4.gdir_device_addr.da_addr_body.len = len;
	r->gdir_resok4.gdir_device_addr.da_addr_body.val = body;
}

/* GETATTR: the attributes asked for that the model has, in bit order. */
static void mds_getattr(const bitmap4 *want, bool file, struct GETATTR4res *r, uint8_t *vals,
			size_t cap)
{
	struct xdr_enc x;
	bitmap4 *have = &r->resok4.obj_attributes.attrmask;
	xdr_enc_init_buf(&x, vals, cap, cap);
	nfs_ftype4 type = file ? NF4REG : NF4DIR;
	uint64_t size = file ? M.size : 4096;
	uint32_t lease = 90, blksize = BS;
	layouttype4 lt = LAYOUT4_BLOCK_VOLUME;
	fattr4_fs_layout_types lts = {1, &lt};
	if (nfs4c_bitmap_isset(want, FATTR4_TYPE)) {
		nfs4c_bitmap_set(have, FATTR4_TYPE);
		CHECK_OK(nfs4_enc_fattr4_type(&x, &type));
	}
	if (nfs4c_bitmap_isset(want, FATTR4_SIZE)) {
		nfs4c_bitmap_set(have, FATTR4_SIZE);
		CHECK_OK(nfs4_enc_fattr4_size(&x, &size));
	}
	if (nfs4c_bitmap_isset(want, FATTR4_LEASE_TIME)) {
		nfs4c_bitmap_set(have, FATTR4_LEASE_TIME);
		CHECK_OK(nfs4_enc_fattr4_lease_time(&x, &lease));
	}
	if (nfs4c_bitmap_isset(want, FATTR4_FS_LAYOUT_TYPES)) {
		nfs4c_bitmap_set(have, FATTR4_FS_LAYOUT_TYPES);
		CHECK_OK(nfs4_enc_fattr4_fs_layout_types(&x, &lts));
	}
	if (nfs4c_bitmap_isset(want, FATTR4_LAYOUT_BLKSIZE)) {
		nfs4c_bitmap_set(have, FATTR4_LAYOUT_BLKSIZE);
		CHECK_OK(nfs4_enc_fattr4_layout_blksize(&x, &blksize));
	}
	CHECK(x.buf == vals);
	r->resok4.obj_attributes.attr_vals.len = (uint32_t)xdr_enc_len(&x);
	r->resok4.obj_attributes.attr_vals.val = vals;
	xdr_enc_destroy(&x);
}

static void mds_send(const struct xdr_enc *x)
{
	uint8_t *flat = xmalloc(xdr_enc_len(x));
	xdr_enc_flatten(x, flat);
	pthread_mutex_lock(&M.send_lock);
	CHECK_OK(rpc_clnt_send_record(M.fd, flat, xdr_enc_len(x)));
	pthread_mutex_unlock(&M.send_lock);
	free(flat);
}

/* One COMPOUND: every operation answered as the model says, up to the
 * first error. */
static void mds_compound(uint32_t xid, const struct COMPOUND4args *args)
{
	uint32_t n = args->argarray.len;
	struct nfs_resop4 *res = xcalloc(n ? n : 1, sizeof(*res));
	static uint8_t body[65536], vals[4096];
	bool cur_file = false, hold = false;
	nfsstat4 status = NFS4_OK;
	uint32_t i;

	pthread_mutex_lock(&M.lock);
	for (i = 0; i < n && status == NFS4_OK; i++) {
		const struct nfs_argop4 *a = &args->argarray.val[i];
		struct nfs_resop4 *r = &res[i];
		r->resop = a->argop;
		switch (a->argop) {
		case OP_EXCHANGE_ID: {
			struct EXCHANGE_ID4resok *ok = &r->opexchange_id.eir_resok4;
			CHECK(a->opexchange_id.eia_flags & EXCHGID4_FLAG_USE_PNFS_MDS);
			ok->eir_clientid = 0x77;
			ok->eir_sequenceid = 1;
			ok->eir_flags = EXCHGID4_FLAG_USE_PNFS_MDS;
			break;
		}
		case OP_CREATE_SESSION: {
			const struct CREATE_SESSION4args *ca = &a->opcreate_session;
			struct CREATE_SESSION4resok *ok = &r->opcreate_session.csr_resok4;
			memcpy(ok->csr_sessionid, SESSION, 16);
			ok->csr_sequence = ca->csa_sequence;
			ok->csr_flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
			ok->csr_fore_chan_attrs = ca->csa_fore_chan_attrs;
			ok->csr_fore_chan_attrs.ca_maxrequests = 8;
			ok->csr_back_chan_attrs = ca->csa_back_chan_attrs;
			break;
		}
		case OP_SEQUENCE: {
			struct SEQUENCE4resok *ok = &r->opsequence.sr_resok4;
			memcpy(ok->sr_sessionid, a->opsequence.sa_sessionid, 16);
			ok->sr_sequenceid = a->opsequence.sa_sequenceid;
			ok->sr_slotid = a->opsequence.sa_slotid;
			ok->sr_highest_slotid = 7;
			ok->sr_target_highest_slotid = 7;
			break;
		}
		case OP_PUTROOTFH:
			cur_file = false;
			break;
		case OP_PUTFH:
			cur_file = a->opputfh.object.len == FILE_FH.len &&
				   !memcmp(a->opputfh.object.val, FILE_FH.val, FILE_FH.len);
			break;
		case OP_LOOKUP:
			cur_file =
				a->oplookup.objname.len == 1 && a->oplookup.objname.val[0] == 'f';
			if (!cur_file && a->oplookup.objname.len != 1)
				r->oplookup.status = status = NFS4ERR_NOENT;
			break;
		case OP_GETFH: {
			const struct nfs4c_fh *fh = cur_file ? &FILE_FH : &DIR_FH;
			r->opgetfh.resok4.object.len = fh->len;
			memcpy(r->opgetfh.resok4.object.val, fh->val, fh->len);
			break;
		}
		case OP_GETATTR:
			mds_getattr(&a->opgetattr.attr_request, cur_file, &r->opgetattr, vals,
				    sizeof(vals));
			break;
		case OP_OPEN: {
			const struct OPEN4args *o = &a->opopen;
			/* every name starting with f is the one file */
			CHECK(o->claim.claim == CLAIM_NULL && o->claim.file.len >= 1 &&
			      o->claim.file.val[0] == 'f');
			mds_op('O');
			if (o->openhow.opentype == OPEN4_CREATE &&
			    o->openhow.how.mode == UNCHECKED4 &&
			    nfs4c_bitmap_isset(&o->openhow.how.createattrs.attrmask, FATTR4_SIZE)) {
				M.size = 0; /* the truncation (its value is 0 here) */
				for (unsigned b = 0; b < FILE_BLOCKS; b++) {
					M.blk[b] = -1;
					M.written[b] = false;
				}
			}
			r->opopen.resok4.stateid.seqid = 1;
			memcpy(r->opopen.resok4.stateid.other, OPEN_OTHER, 12);
			cur_file = true;
			break;
		}
		case OP_CLOSE:
			mds_op('X');
			CHECK(!memcmp(a->opclose.open_stateid.other, OPEN_OTHER, 12));
			break;
		case OP_LAYOUTGET:
			CHECK(cur_file);
			mds_layoutget(&a->oplayoutget, &r->oplayoutget, body, sizeof(body));
			status = r->oplayoutget.logr_status;
			hold = M.hold_lg && status == NFS4_OK;
			M.hold_lg = false;
			break;
		case OP_LAYOUTCOMMIT:
			CHECK(cur_file);
			mds_layoutcommit(&a->oplayoutcommit, &r->oplayoutcommit);
			break;
		case OP_LAYOUTRETURN:
			mds_layoutreturn(&a->oplayoutreturn, &r->oplayoutreturn);
			break;
		case OP_GETDEVICEINFO:
			mds_getdeviceinfo(&a->opgetdeviceinfo, &r->opgetdeviceinfo, body,
					  sizeof(body));
			break;
		case OP_GETDEVICELIST: {
			static deviceid4 ids[1];
			memcpy(ids[0], DEVID, 16);
			struct GETDEVICELIST4resok *ok = &r->opgetdevicelist.gdlr_resok4;
			ok->gdlr_deviceid_list.len = 1;
			ok->gdlr_deviceid_list.val = ids;
			ok->gdlr_eof = true;
			break;
		}
		default:
			break; /* OK, zeroed results: RECLAIM_COMPLETE, DESTROY_* ... */
		}
	}
	struct xdr_enc x;
	struct COMPOUND4res cr = {.status = status, .resarray = {i, res}};
	xdr_enc_init(&x, 8u << 20);
	CHECK_OK(rpc_enc_accepted(&x, xid, RPC_SUCCESS));
	CHECK_OK(nfs4_enc_COMPOUND4res(&x, &cr));
	if (hold) {
		/* the test sends it when it wants (a reply still on its way) */
		M.held_len = xdr_enc_len(&x);
		M.held = xmalloc(M.held_len);
		xdr_enc_flatten(&x, M.held);
		pthread_cond_broadcast(&M.cv);
	}
	pthread_mutex_unlock(&M.lock);
	if (!hold)
		mds_send(&x);
	xdr_enc_destroy(&x);
	free(res);
}

/* Serve one connection until the client goes away. */
static void mds_serve(void)
{
	for (;;) {
		uint8_t *rec;
		size_t len;
		uint32_t xid, type;
		struct xdr_dec x;
		if (rpc_clnt_recv_record(M.fd, 8u << 20, &rec, &len))
			return; /* the client went away */
		xdr_dec_init(&x, rec, len);
		CHECK_OK(rpc_dec_xid_type(&x, &xid, &type));
		if (type == 1) {
			/* the answer to a callback */
			struct rpc_reply_hdr rh;
			struct CB_COMPOUND4res cr;
			struct xdr_arena ar;
			xdr_dec_init(&x, rec, len);
			CHECK_OK(rpc_dec_reply_hdr(&x, &rh));
			CHECK_EQ(rh.stat, RPC_SUCCESS);
			xdr_arena_init(&ar, NULL, 0, 1 << 20);
			x.arena = &ar;
			CHECK_OK(nfs4_dec_CB_COMPOUND4res(&x, &cr));
			CHECK(cr.resarray.len == 2 &&
			      cr.resarray.val[0].opcbsequence.csr_status == 0);
			pthread_mutex_lock(&M.lock);
			M.cb_reply_xid = xid;
			M.cb_reply_status = cr.status; /* the last operation's */
			M.cb_replied = true;
			pthread_cond_broadcast(&M.cv);
			pthread_mutex_unlock(&M.lock);
			xdr_arena_reset(&ar);
			free(rec);
			continue;
		}
		struct rpc_call_hdr h;
		struct xdr_arena ar;
		struct COMPOUND4args args;
		xdr_dec_init(&x, rec, len);
		CHECK_OK(rpc_dec_call_hdr(&x, &h));
		CHECK(h.prog == NFS4_PROGRAM && h.vers == NFS_V4);
		if (h.proc == 0) {
			struct xdr_enc e;
			xdr_enc_init(&e, 1024);
			CHECK_OK(rpc_enc_accepted(&e, h.xid, RPC_SUCCESS));
			mds_send(&e);
			xdr_enc_destroy(&e);
			free(rec);
			continue;
		}
		xdr_arena_init(&ar, NULL, 0, 16u << 20);
		x.arena = &ar;
		CHECK_OK(nfs4_dec_COMPOUND4args(&x, &args));
		mds_compound(h.xid, &args);
		xdr_arena_reset(&ar);
		free(rec);
	}
}

/* One client after the other (each a connection); ends when the test
 * shuts the listener down. The file outlives its clients. */
static void *mds_main(void *arg)
{
	struct timeval tv = {.tv_sec = 30};
	for (;;) {
		int fd = accept(M.lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		pthread_mutex_lock(&M.send_lock);
		M.fd = fd;
		pthread_mutex_unlock(&M.send_lock);
		mds_serve();
		pthread_mutex_lock(&M.send_lock);
		close(M.fd);
		M.fd = -1;
		pthread_mutex_unlock(&M.send_lock);
		/* a new client: no layout, a new back channel */
		pthread_mutex_lock(&M.lock);
		M.have_layout = false;
		M.cb_seqid = 0;
		pthread_mutex_unlock(&M.lock);
	}
}

static void mds_stop(void)
{
	shutdown(M.lfd, SHUT_RDWR); /* accept() fails: the thread ends */
	CHECK_OK(pthread_join(M.thread, NULL));
	close(M.lfd);
}

static void mds_start(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	memset(&M, 0, sizeof(M));
	M.fd = -1;
	pthread_mutex_init(&M.lock, NULL);
	pthread_mutex_init(&M.send_lock, NULL);
	pthread_cond_init(&M.cv, NULL);
	for (unsigned b = 0; b < FILE_BLOCKS; b++)
		M.blk[b] = -1;
	M.next_free = (1u << 20) / BS; /* storage is not where the file is */
	M.lg_cap = 64u << 10;
	M.lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(M.lfd >= 0);
	CHECK_OK(bind(M.lfd, (struct sockaddr *)&sa, sizeof(sa)));
	CHECK_OK(listen(M.lfd, 4));
	CHECK_OK(getsockname(M.lfd, (struct sockaddr *)&sa, &sl));
	snprintf(M.addr, sizeof(M.addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	CHECK_OK(pthread_create(&M.thread, NULL, mds_main, NULL));
}

/* Send a CB_COMPOUND of CB_SEQUENCE and op; the status of op. */
static nfsstat4 mds_callback(struct nfs_cb_argop4 *op)
{
	struct xdr_enc x;
	struct nfs_cb_argop4 ops[2] = {{.argop = OP_CB_SEQUENCE}, *op};
	struct CB_SEQUENCE4args *s = &ops[0].opcbsequence;
	pthread_mutex_lock(&M.lock);
	uint32_t xid = 0x7000 + ++M.cb_xid;
	memcpy(s->csa_sessionid, SESSION, 16);
	s->csa_sequenceid = ++M.cb_seqid;
	M.cb_replied = false;
	pthread_mutex_unlock(&M.lock);
	struct CB_COMPOUND4args a = {.minorversion = 1, .argarray = {2, ops}};
	xdr_enc_init(&x, 1 << 20);
	CHECK_OK(rpc_enc_call_hdr(&x, xid, CBPROG, 1, 1, NULL));
	CHECK_OK(nfs4_enc_CB_COMPOUND4args(&x, &a));
	mds_send(&x);
	xdr_enc_destroy(&x);
	pthread_mutex_lock(&M.lock);
	while (!M.cb_replied)
		pthread_cond_wait(&M.cv, &M.lock);
	CHECK_EQ(M.cb_reply_xid, xid);
	nfsstat4 st = M.cb_reply_status;
	pthread_mutex_unlock(&M.lock);
	return st;
}

static nfsstat4 mds_recall(const struct nfs4c_fh *fh, uint32_t seqid, layoutiomode4 iomode)
{
	struct nfs_cb_argop4 op = {.argop = OP_CB_LAYOUTRECALL};
	struct CB_LAYOUTRECALL4args *a = &op.opcblayoutrecall;
	a->clora_type = LAYOUT4_BLOCK_VOLUME;
	a->clora_iomode = iomode;
	a->clora_changed = true;
	a->clora_recall.lor_recalltype = LAYOUTRECALL4_FILE;
	struct layoutrecall_file4 *f = &a->clora_recall.lor_layout;
	f->lor_fh.len = fh->len;
	memcpy(f->lor_fh.val, fh->val, fh->len);
	f->lor_offset = 0;
	f->lor_length = NFS4_UINT64_MAX;
	f->lor_stateid.seqid = seqid;
	memcpy(f->lor_stateid.other, LAYOUT_OTHER, 12);
	return mds_callback(&op);
}

/* Wait (30 s at most: a watchdog, not a measurement) until the client
 * made n operations of kind c in all. */
static void mds_wait_op(char c, unsigned n)
{
	uint64_t end = now_ns() + 30 * NSEC_PER_SEC;
	for (;;) {
		pthread_mutex_lock(&M.lock);
		unsigned k = 0;
		for (unsigned i = 0; i < M.nops; i++)
			k += M.ops[i] == c;
		pthread_mutex_unlock(&M.lock);
		if (k >= n)
			return;
		CHECK(now_ns() < end);
		sleep_ns(2 * NSEC_PER_MSEC);
	}
}

static unsigned mds_count(char c)
{
	pthread_mutex_lock(&M.lock);
	unsigned k = 0;
	for (unsigned i = 0; i < M.nops; i++)
		k += M.ops[i] == c;
	pthread_mutex_unlock(&M.lock);
	return k;
}

static char mds_last_op(unsigned back)
{
	pthread_mutex_lock(&M.lock);
	char c = M.nops > back ? M.ops[M.nops - 1 - back] : 0;
	pthread_mutex_unlock(&M.lock);
	return c;
}

/* The file's bytes as the model's blocks hold them on the disk image. */
static void disk_file(int dfd, uint8_t *out, uint64_t len)
{
	for (uint64_t off = 0; off < len; off += BS) {
		uint64_t b = off / BS, n = MIN((uint64_t)BS, len - off);
		pthread_mutex_lock(&M.lock);
		int64_t s = M.blk[b];
		pthread_mutex_unlock(&M.lock);
		CHECK(s >= 0);
		CHECK_EQ(pread(dfd, out + off, n, s * (off_t)BS), (ssize_t)n);
	}
}

static void fill(uint8_t *b, size_t n, uint64_t off, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((off + i) * 131 + seed + (off + i) / 4096);
}

/* In a new directory (dir: a mkdtemp template), the disk (returned open)
 * and a decoy with half its signature. */
static int make_disks(char *dir, char *disk, char *decoy)
{
	CHECK(mkdtemp(dir));
	snprintf(disk, 64, "%s/disk.img", dir);
	snprintf(decoy, 64, "%s/decoy.img", dir);
	int dfd = open(disk, O_RDWR | O_CREAT | O_TRUNC, 0600);
	int xfd = open(decoy, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(dfd >= 0 && xfd >= 0);
	CHECK_OK(ftruncate(dfd, DISK_SIZE));
	CHECK_OK(ftruncate(xfd, DISK_SIZE));
	CHECK_EQ(pwrite(dfd, SIG, 16, 32), 16);
	CHECK_EQ(pwrite(xfd, SIG, 16, 32), 16);
	CHECK_EQ(pwrite(dfd, "tailsig!", 8, DISK_SIZE - 4096), 8);
	CHECK_EQ(pwrite(xfd, "tailSIG!", 8, DISK_SIZE - 4096), 8);
	close(xfd);
	return dfd;
}

struct bgwrite {
	pthread_t t;
	struct nfs4c_pnfs_file *f;
	uint64_t off;
	uint8_t data[100];
	int ret;
};

static void *bgwrite_main(void *arg)
{
	struct bgwrite *b = arg;
	b->ret = nfs4c_pnfs_write(b->f, b->off, b->data, sizeof(b->data));
	return NULL;
}

static void test_client(void)
{
	char dir[] = "/tmp/nfs4c-pnfs.XXXXXX", disk[64], decoy[64];
	struct nfs4c_client *cl;
	struct nfs4c_cfg cfg;
	struct nfs4c_fh root;
	struct nfs4c_pnfs *p;
	struct nfs4c_pnfs_file *f;
	struct nfs4c_pnfs_stats st;
	struct nfs4c_pnfs_commit_res cr;
	const uint64_t fsize = 101000;
	uint8_t *want = xcalloc(1, 1 << 20), *got = xcalloc(1, 1 << 20);

	int dfd = make_disks(dir, disk, decoy);

	mds_start();
	nfs4c_cfg_default(&cfg);
	cfg.addr = M.addr;
	cfg.owner = "pnfs-test-client";
	cfg.eia_flags = EXCHGID4_FLAG_USE_PNFS_MDS;
	cfg.no_renew = true;
	CHECK_OK(nfs4c_create(&cfg, &cl));
	CHECK_OK(nfs4c_mount(cl, &root));
	const char *disks[2] = {decoy, disk};
	struct nfs4c_pnfs_cfg pc = {.disks = disks, .ndisks = 2, .retry_ms = 20000};
	CHECK_OK(nfs4c_pnfs_create(cl, &pc, &p));

	/* unaligned writes through INVALID extents: several LAYOUTGETs (64
	 * KiB each), the first answered RECALLCONFLICT and retried, the open
	 * stateid first and the layout stateid after */
	CHECK_OK(nfs4c_pnfs_open(p, &DIR_FH, "f", NFS4C_PNFS_TRUNC, &f));
	CHECK_EQ(nfs4c_pnfs_size(f), 0);
	M.lg_answer = NFS4ERR_RECALLCONFLICT;
	fill(want + 1000, fsize - 1000, 1000, 1);
	for (uint64_t off = 1000; off < fsize; off += 3000)
		CHECK_OK(nfs4c_pnfs_write(f, off, want + off, (size_t)MIN(3000, fsize - off)));
	nfs4c_pnfs_stats(p, &st);
	CHECK(st.layoutget_retries == 1 && st.getdeviceinfos == 1);
	CHECK_EQ(mds_count('G'), st.layoutgets);
	CHECK_EQ(mds_count('D'), 1);
	CHECK(!memcmp(M.lg_first_sid.other, OPEN_OTHER, 12));
	CHECK(!memcmp(M.lg_sid.other, LAYOUT_OTHER, 12));
	/* one write over several layouts (64 KiB each) */
	unsigned lgs = mds_count('G');
	fill(want + fsize, 300000 - fsize, fsize, 1);
	CHECK_OK(nfs4c_pnfs_write(f, fsize, want + fsize, 300000 - fsize));
	CHECK_EQ(mds_count('G'), lgs + 4); /* blocks 24 to 73 */
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));
	CHECK_EQ(M.size, 300000);
	/* again from an empty file */
	CHECK_OK(nfs4c_pnfs_close(f));
	CHECK_OK(nfs4c_pnfs_open(p, &DIR_FH, "f", NFS4C_PNFS_TRUNC, &f));
	CHECK_EQ(M.size, 0);
	memset(want + fsize, 0, (1 << 20) - fsize);
	for (uint64_t off = 1000; off < fsize; off += 3000)
		CHECK_OK(nfs4c_pnfs_write(f, off, want + off, (size_t)MIN(3000, fsize - off)));
	disk_file(dfd, got, fsize);
	CHECK(!memcmp(got, want, fsize)); /* zeros before 1000: INVALID blocks filled */

	/* LAYOUTCOMMIT: the 25 blocks written, last_write_offset, the size */
	unsigned commits = mds_count('C');
	CHECK_OK(nfs4c_pnfs_commit(f, &cr));
	CHECK(cr.commits == 1 && cr.size_changed && cr.new_size == fsize);
	uint64_t total = 0;
	for (unsigned i = 0; i < M.commit.n; i++)
		total += M.commit.e[i].bex_length;
	CHECK_EQ(total, 25 * BS);
	CHECK(M.commit.have_lw && M.commit.lw == fsize - 1);
	CHECK(M.commit.off == 0 && M.commit.len == 25 * BS);
	CHECK_EQ(M.size, fsize);
	CHECK_EQ(nfs4c_pnfs_size(f), fsize);
	/* nothing written since: nothing sent */
	CHECK_OK(nfs4c_pnfs_commit(f, &cr));
	CHECK_EQ(cr.commits, 0);
	CHECK_EQ(mds_count('C'), commits + 1);

	/* an overwrite: an empty update, still a LAYOUTCOMMIT (an fdatasync) */
	fill(want + 8192, 4096, 8192, 2);
	CHECK_OK(nfs4c_pnfs_write(f, 8192, want + 8192, 4096));
	CHECK_OK(nfs4c_pnfs_commit(f, &cr));
	CHECK(cr.commits == 1 && cr.extents == 0 && !cr.size_changed);
	CHECK(M.commit.n == 0 && M.commit.lw == 12287 && M.commit.off == 8192 &&
	      M.commit.len == 4096);
	/* a partial overwrite of a written block keeps the rest of it */
	fill(want + 20000, 10, 20000, 3);
	CHECK_OK(nfs4c_pnfs_write(f, 20000, want + 20000, 10));
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));
	CHECK_EQ(M.size, fsize);

	/* read back through the layout (the RW layout serves) */
	size_t n;
	memset(got, 0xee, fsize);
	CHECK_OK(nfs4c_pnfs_read(f, 0, got, 1 << 20, &n));
	CHECK_EQ(n, fsize);
	CHECK(!memcmp(got, want, fsize));
	CHECK_OK(nfs4c_pnfs_read(f, fsize, got, 100, &n));
	CHECK_EQ(n, 0);

	/* a recall while written blocks are not committed yet: they are
	 * committed first, then the layout goes back with the recall's seqid */
	fill(want + 204800, 5000, 204800, 4);
	CHECK_OK(nfs4c_pnfs_write(f, 204800, want + 204800, 5000));
	unsigned returns = mds_count('R');
	commits = mds_count('C');
	uint32_t rseq = M.lseqid + 1;
	CHECK_EQ(mds_recall(&FILE_FH, rseq, LAYOUTIOMODE4_ANY), NFS4_OK);
	mds_wait_op('R', returns + 1);
	CHECK_EQ(mds_count('C'), commits + 1);
	CHECK(mds_last_op(0) == 'R' && mds_last_op(1) == 'C');
	CHECK(M.commit.n == 1 && M.commit.e[0].bex_file_offset == 204800 &&
	      M.commit.e[0].bex_length == 8192 && M.commit.lw == 204800 + 5000 - 1);
	CHECK(M.ret.kind == LAYOUTRETURN4_FILE && M.ret.off == 0 && M.ret.len == NFS4_UINT64_MAX);
	CHECK_EQ(M.ret.sid.seqid, rseq);
	CHECK_EQ(M.size, 204800 + 5000);
	/* the client counts the return when the server's reply reaches its
	 * return thread, which is after the server saw the LAYOUTRETURN */
	nfs4c_pnfs_stats(p, &st);
	for (int i = 0; i < 1000 && st.recalls_returned == 0; i++) {
		sleep_ns(NSEC_PER_MSEC);
		nfs4c_pnfs_stats(p, &st);
	}
	CHECK(st.recalls == 1 && st.recalls_returned == 1);
	/* after it the layout is gone: the next LAYOUTGET presents the open
	 * stateid again, and the data is still there */
	struct stateid4 lsid;
	unsigned lg_open = M.lg_open;
	for (int i = 0; i < 1000 && nfs4c_pnfs_layout_stateid(f, &lsid); i++)
		sleep_ns(NSEC_PER_MSEC); /* the return thread finishes its bookkeeping */
	CHECK(!nfs4c_pnfs_layout_stateid(f, &lsid));
	CHECK_OK(nfs4c_pnfs_read(f, 0, got, 1 << 20, &n));
	CHECK_EQ(n, 204800 + 5000);
	CHECK(!memcmp(got, want, 204800 + 5000));
	CHECK_EQ(M.lg_open, lg_open + 1);

	/* a recall of a file the client has no layout of */
	struct nfs4c_fh other = {.len = 3, .val = {9, 9, 9}};
	CHECK_EQ(mds_recall(&other, 1, LAYOUTIOMODE4_ANY), NFS4ERR_NOMATCHING_LAYOUT);

	/* a recall that names a seqid the client has not seen, while a
	 * LAYOUTGET's reply is on its way: DELAY; then the reply arrives and
	 * the recall is answered */
	struct bgwrite bw = {.f = f, .off = 400 * 1024};
	memset(bw.data, 0x5a, sizeof(bw.data));
	pthread_mutex_lock(&M.lock);
	M.hold_lg = true;
	pthread_mutex_unlock(&M.lock);
	CHECK_OK(pthread_create(&bw.t, NULL, bgwrite_main, &bw));
	pthread_mutex_lock(&M.lock);
	while (!M.held)
		pthread_cond_wait(&M.cv, &M.lock);
	uint32_t held_seq = M.lseqid;
	pthread_mutex_unlock(&M.lock);
	CHECK_EQ(mds_recall(&FILE_FH, held_seq + 1, LAYOUTIOMODE4_ANY), NFS4ERR_DELAY);
	pthread_mutex_lock(&M.send_lock);
	CHECK_OK(rpc_clnt_send_record(M.fd, M.held, M.held_len));
	pthread_mutex_unlock(&M.send_lock);
	free(M.held);
	M.held = NULL;
	CHECK_OK(pthread_join(bw.t, NULL));
	CHECK_OK(bw.ret);
	returns = mds_count('R');
	CHECK_EQ(mds_recall(&FILE_FH, held_seq + 1, LAYOUTIOMODE4_ANY), NFS4_OK);
	mds_wait_op('R', returns + 1);
	CHECK_EQ(M.ret.sid.seqid, held_seq + 1);
	/* the 100 bytes written before the recall were committed */
	CHECK_EQ(M.size, 400 * 1024 + 100);
	nfs4c_pnfs_stats(p, &st);
	CHECK_EQ(st.recalls_delayed, 1);

	/* the server forgets the layout (BAD_STATEID for the layout
	 * stateid): with nothing written since the last commit, the client
	 * starts again from the open stateid; with written blocks not
	 * committed, the write that meets it fails: they are lost, and the
	 * client must say so rather than go on without them */
	uint8_t blk[4096];
	memset(blk, 0x33, sizeof(blk));
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));
	lg_open = M.lg_open;
	pthread_mutex_lock(&M.lock);
	M.lg_forget = true;
	pthread_mutex_unlock(&M.lock);
	CHECK_OK(nfs4c_pnfs_write(f, 500 * 1024, blk, sizeof(blk)));
	CHECK_EQ(M.lg_open, lg_open + 1);
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));
	CHECK_OK(nfs4c_pnfs_write(f, 508 * 1024, blk, sizeof(blk))); /* not committed */
	pthread_mutex_lock(&M.lock);
	M.lg_forget = true;
	pthread_mutex_unlock(&M.lock);
	CHECK_EQ(nfs4c_pnfs_write(f, 700 * 1024, blk, sizeof(blk)), -EIO);
	CHECK(!nfs4c_pnfs_layout_stateid(f, &lsid));
	CHECK_OK(nfs4c_pnfs_write(f, 700 * 1024, blk, sizeof(blk))); /* a new layout */
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));

	/* CB_RECALL_ANY for block layouts: everything back, in bulk */
	CHECK_OK(nfs4c_pnfs_layoutget(f, LAYOUTIOMODE4_RW, 0, 8192));
	returns = mds_count('R');
	struct nfs_cb_argop4 ra = {.argop = OP_CB_RECALL_ANY};
	nfs4c_bitmap_set(&ra.opcbrecall_any.craa_type_mask, RCA4_TYPE_MASK_BLK_LAYOUT);
	CHECK_EQ(mds_callback(&ra), NFS4_OK);
	mds_wait_op('R', returns + 1);
	CHECK(M.ret.kind == LAYOUTRETURN4_ALL);

	/* close: a layout is returned, then CLOSE */
	CHECK_OK(nfs4c_pnfs_layoutget(f, LAYOUTIOMODE4_READ, 0, 8192));
	returns = mds_count('R');
	CHECK_OK(nfs4c_pnfs_close(f));
	CHECK_EQ(mds_count('R'), returns + 1);
	CHECK(mds_last_op(0) == 'X' && mds_last_op(1) == 'R');
	nfs4c_pnfs_destroy(p);

	/* a holding client acknowledges recalls and returns nothing, not even
	 * at close */
	pc.hold = true;
	CHECK_OK(nfs4c_pnfs_create(cl, &pc, &p));
	CHECK_OK(nfs4c_pnfs_open(p, &DIR_FH, "f", 0, &f));
	CHECK_OK(nfs4c_pnfs_layoutget(f, LAYOUTIOMODE4_RW, 0, 65536));
	returns = mds_count('R');
	CHECK_EQ(mds_recall(&FILE_FH, M.lseqid + 1, LAYOUTIOMODE4_ANY), NFS4_OK);
	sleep_ns(200 * NSEC_PER_MSEC);
	CHECK_OK(nfs4c_pnfs_close(f));
	CHECK_EQ(mds_count('R'), returns);
	nfs4c_pnfs_stats(p, &st);
	CHECK(st.recalls == 1 && st.recalls_ignored == 1 && st.recalls_returned == 0);
	nfs4c_pnfs_destroy(p);

	CHECK_OK(nfs4c_unmount(cl));
	nfs4c_destroy(cl);
	mds_stop();
	close(dfd);
	unlink(disk);
	unlink(decoy);
	rmdir(dir);
	free(want);
	free(got);
	TEST_PASS("block layout client against a scripted metadata server");
}

/* ---- streams: several I/Os in flight ---------------------------------------------- */

/* The disk hook of the stream tests: every data write is logged as 'W'
 * (and a read as 'r') among the server's operations, so that their order
 * against LAYOUTGET, LAYOUTCOMMIT and LAYOUTRETURN shows; I/Os in the
 * hook at once are counted; a closed gate holds writes; one I/O can be
 * made to fail. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	unsigned in, max_in; /* I/Os in the hook now, at most */
	unsigned barrier;    /* the first I/Os wait until this many are in (0: none) */
	bool barrier_met;
	bool gate_closed;    /* writes wait while it is */
	unsigned io_count;   /* data I/Os seen */
	unsigned fail_at;    /* the I/O (1-based) that fails with -EIO (0: none) */
	unsigned after_fail; /* I/Os that reached the hook after it */
} H = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static int stream_hook(void *arg, bool wr, unsigned disk, uint64_t off, size_t len)
{
	pthread_mutex_lock(&M.lock);
	mds_op(wr ? 'W' : 'r');
	pthread_mutex_unlock(&M.lock);
	pthread_mutex_lock(&H.lock);
	unsigned nth = ++H.io_count;
	if (H.fail_at && nth > H.fail_at)
		H.after_fail++;
	H.in++;
	H.max_in = MAX(H.max_in, H.in);
	pthread_cond_broadcast(&H.cv);
	/* the barrier: these wait for each other (a watchdog of 10 s, not a
	 * measurement: a client with fewer in flight fails max_in below) */
	uint64_t end = now_ns() + 10 * NSEC_PER_SEC;
	while (H.barrier && !H.barrier_met && H.in < H.barrier && now_ns() < end) {
		struct timespec ts = {.tv_nsec = 10 * 1000 * 1000};
		pthread_mutex_unlock(&H.lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&H.lock);
	}
	if (H.barrier && H.in >= H.barrier)
		H.barrier_met = true;
	else if (H.barrier)
		H.barrier = 0; /* it never came: the rest go on at once */
	while (wr && H.gate_closed)
		pthread_cond_wait(&H.cv, &H.lock);
	H.in--;
	int ret = H.fail_at && nth == H.fail_at ? -EIO : 0;
	pthread_mutex_unlock(&H.lock);
	CHECK_EQ(off % BS, 0); /* slots never share a block: whole blocks */
	(void)arg;
	(void)disk;
	(void)len;
	return ret;
}

static void hook_reset(void)
{
	pthread_mutex_lock(&H.lock);
	H.in = H.max_in = H.barrier = H.io_count = H.fail_at = H.after_fail = 0;
	H.barrier_met = H.gate_closed = false;
	pthread_mutex_unlock(&H.lock);
}

/* Wait (a watchdog of 30 s) until n I/Os are in the hook. */
static void hook_wait_in(unsigned n)
{
	uint64_t end = now_ns() + 30 * NSEC_PER_SEC;
	pthread_mutex_lock(&H.lock);
	while (H.in < n) {
		pthread_mutex_unlock(&H.lock);
		CHECK(now_ns() < end);
		sleep_ns(2 * NSEC_PER_MSEC);
		pthread_mutex_lock(&H.lock);
	}
	pthread_mutex_unlock(&H.lock);
}

static void gate(bool closed)
{
	pthread_mutex_lock(&H.lock);
	H.gate_closed = closed;
	pthread_cond_broadcast(&H.cv);
	pthread_mutex_unlock(&H.lock);
}

/* The position in the server's log of the last op c (-1: none). */
static int mds_last_index(char c)
{
	pthread_mutex_lock(&M.lock);
	int at = -1;
	for (unsigned i = 0; i < M.nops; i++)
		if (M.ops[i] == c)
			at = (int)i;
	pthread_mutex_unlock(&M.lock);
	return at;
}

/* Transparent huge pages for an madvise(MADV_HUGEPAGE) mapping, and page
 * faults that count only the program's own pages (ThreadSanitizer's shadow
 * of every page written faults on its own). */
static bool thp_counted(void)
{
#ifdef JNFS_TSAN
	return false;
#endif
	char buf[128] = "";
	FILE *fp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!fp)
		return false;
	bool ok = fgets(buf, sizeof(buf), fp) && !strstr(buf, "[never]");
	fclose(fp);
	return ok;
}

static long minor_faults(void)
{
	struct rusage ru;
	CHECK_OK(getrusage(RUSAGE_SELF, &ru));
	return ru.ru_minflt;
}

static void test_stream(void)
{
	char dir[] = "/tmp/nfs4c-stream.XXXXXX", disk[64], decoy[64];
	struct nfs4c_client *cl;
	struct nfs4c_cfg cfg;
	struct nfs4c_fh root;
	struct nfs4c_pnfs *p;
	struct nfs4c_pnfs_file *f;
	struct nfs4c_pnfs_stream *s;
	struct nfs4c_pnfs_stats st;
	const uint64_t fsize = (1u << 20) - 5000; /* 16 layout ranges of 64 KiB */
	uint8_t *want = xcalloc(1, 1 << 20), *got = xcalloc(1, 1 << 20);

	int dfd = make_disks(dir, disk, decoy);
	mds_start();
	nfs4c_cfg_default(&cfg);
	cfg.addr = M.addr;
	cfg.owner = "pnfs-stream-client";
	cfg.eia_flags = EXCHGID4_FLAG_USE_PNFS_MDS;
	cfg.no_renew = true;
	CHECK_OK(nfs4c_create(&cfg, &cl));
	CHECK_OK(nfs4c_mount(cl, &root));
	const char *disks[1] = {disk};
	struct nfs4c_pnfs_cfg pc = {
		.disks = disks, .ndisks = 1, .retry_ms = 20000, .io_hook = stream_hook};
	CHECK_OK(nfs4c_pnfs_create(cl, &pc, &p));

	/* 1. a write stream of depth 4 in 16 KiB slots over 16 layout
	 * ranges, given in pieces that fit no slot: 4 writes in flight at
	 * once, every byte on the disk where the server put it, one
	 * LAYOUTCOMMIT; read back by a read stream with 4 reads in flight */
	hook_reset();
	H.barrier = 4;
	CHECK_OK(nfs4c_pnfs_open(p, &DIR_FH, "f", NFS4C_PNFS_TRUNC, &f));
	fill(want, fsize, 0, 7);
	struct nfs4c_pnfs_stream_cfg sc = {
		.depth = 4, .io = 16384, .end = fsize, .ahead = 128 << 10};
	CHECK_OK(nfs4c_pnfs_stream_open(f, true, 0, &sc, &s));
	for (uint64_t off = 0; off < fsize; off += 7000)
		CHECK_OK(nfs4c_pnfs_stream_write(s, want + off, (size_t)MIN(7000, fsize - off)));
	CHECK_OK(nfs4c_pnfs_stream_close(s));
	CHECK_EQ(H.max_in, 4);
	CHECK(H.barrier_met);
	CHECK(mds_count('G') >= 16);
	unsigned commits = mds_count('C');
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));
	CHECK_EQ(mds_count('C'), commits + 1);
	CHECK_EQ(M.size, fsize);
	disk_file(dfd, got, fsize);
	CHECK(!memcmp(got, want, fsize));
	hook_reset();
	H.barrier = 4;
	memset(got, 0xee, 1 << 20);
	sc = (struct nfs4c_pnfs_stream_cfg){.depth = 4, .io = 16384};
	CHECK_OK(nfs4c_pnfs_stream_open(f, false, 0, &sc, &s));
	uint64_t at = 0;
	for (;;) {
		const void *data;
		size_t n;
		CHECK_OK(nfs4c_pnfs_stream_next(s, &data, &n));
		if (!n)
			break;
		CHECK(at + n <= fsize);
		memcpy(got + at, data, n);
		at += n;
	}
	CHECK_OK(nfs4c_pnfs_stream_close(s));
	CHECK_EQ(at, fsize);
	CHECK(!memcmp(got, want, fsize));
	CHECK_EQ(H.max_in, 4);

	/* 2. a recall while writes are in flight: it is answered at once, but
	 * neither the LAYOUTCOMMIT nor the LAYOUTRETURN goes out before the
	 * four writes in flight are done (the commit carries all four
	 * slots); the slot queued behind them waits for the return, gets a
	 * layout again and only then is written */
	hook_reset();
	gate(true);
	sc = (struct nfs4c_pnfs_stream_cfg){.depth = 4, .io = 16384};
	fill(want, 5 * 16384, 0, 8);
	CHECK_OK(nfs4c_pnfs_stream_open(f, true, 0, &sc, &s));
	CHECK_OK(nfs4c_pnfs_stream_write(s, want, 5 * 16384)); /* 5 slots: 4 in flight */
	hook_wait_in(4);
	unsigned returns = mds_count('R');
	commits = mds_count('C');
	CHECK_EQ(mds_recall(&FILE_FH, M.lseqid + 1, LAYOUTIOMODE4_ANY), NFS4_OK);
	sleep_ns(200 * NSEC_PER_MSEC); /* a client that did not wait would return now */
	CHECK_EQ(mds_count('R'), returns);
	CHECK_EQ(mds_count('C'), commits);
	pthread_mutex_lock(&H.lock);
	CHECK_EQ(H.io_count, 4); /* the fifth is not written during the recall */
	pthread_mutex_unlock(&H.lock);
	gate(false);
	mds_wait_op('R', returns + 1);
	CHECK_OK(nfs4c_pnfs_stream_close(s));
	int r_at = mds_last_index('R');
	pthread_mutex_lock(&M.lock);
	CHECK(r_at > 0 && M.ops[r_at - 1] == 'C');
	/* after the return: a LAYOUTGET, then the fifth slot's write */
	bool lg_seen = false;
	unsigned writes_after = 0;
	for (unsigned i = (unsigned)r_at + 1; i < M.nops; i++) {
		lg_seen |= M.ops[i] == 'G';
		if (M.ops[i] == 'W') {
			CHECK(lg_seen);
			writes_after++;
		}
	}
	pthread_mutex_unlock(&M.lock);
	CHECK_EQ(writes_after, 1);
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));
	CHECK_EQ(M.size, fsize); /* an overwrite of the start: the size stays */
	disk_file(dfd, got, 5 * 16384);
	CHECK(!memcmp(got, want, 5 * 16384));

	/* 3. an I/O error in flight fails the stream: the call that meets
	 * it or the close returns it, no slot starts after the ones already
	 * in flight; then a read stream's error */
	hook_reset();
	H.fail_at = 3;
	sc = (struct nfs4c_pnfs_stream_cfg){.depth = 2, .io = 8192, .end = 256 << 10};
	CHECK_OK(nfs4c_pnfs_stream_open(f, true, 0, &sc, &s));
	int err = 0;
	for (uint64_t off = 0; !err && off < (256 << 10); off += 8192)
		err = nfs4c_pnfs_stream_write(s, want, 8192);
	int err2 = nfs4c_pnfs_stream_close(s);
	CHECK_EQ(err2, -EIO);
	CHECK(err == 0 || err == -EIO);
	/* what was queued when it failed, at most: the writer stopped */
	CHECK(H.after_fail <= 2);
	hook_reset();
	H.fail_at = 2;
	sc = (struct nfs4c_pnfs_stream_cfg){.depth = 3, .io = 8192};
	CHECK_OK(nfs4c_pnfs_stream_open(f, false, 0, &sc, &s));
	err = 0;
	for (unsigned i = 0; !err && i < 200; i++) {
		const void *data;
		size_t n;
		err = nfs4c_pnfs_stream_next(s, &data, &n);
		if (!err && !n)
			break;
	}
	CHECK_EQ(err, -EIO);
	CHECK_EQ(nfs4c_pnfs_stream_close(s), -EIO);
	nfs4c_pnfs_stats(p, &st);
	CHECK(st.layoutget_bytes > 0);

	/* 4. a stream's buffers (9 slots of 1 MiB) are touched when it
	 * opens, in huge pages where the kernel has them: a few faults, not
	 * one per 4 KiB page (2,304), which on some virtual machines cost
	 * more than the I/O itself (not under ThreadSanitizer) */
	if (thp_counted()) {
		hook_reset();
		sc = (struct nfs4c_pnfs_stream_cfg){.depth = 8, .io = 1 << 20};
		long flt0 = minor_faults();
		CHECK_OK(nfs4c_pnfs_stream_open(f, false, 0, &sc, &s));
		CHECK_OK(nfs4c_pnfs_stream_close(s));
		long flt = minor_faults() - flt0;
		printf("# a read stream of depth 8, 1 MiB slots: %ld page faults\n", flt);
		CHECK(flt < 1000);
	}

	CHECK_OK(nfs4c_pnfs_close(f));
	nfs4c_pnfs_destroy(p);

	/* 5. a new pNFS client's first read stream: its first reads all
	 * need the device at once, while its GETDEVICEINFO is on its way
	 * (the server takes 100 ms to answer): one is sent, not one each */
	CHECK_OK(nfs4c_pnfs_create(cl, &pc, &p));
	CHECK_OK(nfs4c_pnfs_open(p, &DIR_FH, "f", NFS4C_PNFS_RDONLY, &f));
	hook_reset();
	pthread_mutex_lock(&M.lock);
	M.gdi_delay_ns = 100 * NSEC_PER_MSEC;
	pthread_mutex_unlock(&M.lock);
	unsigned devinfos = mds_count('D');
	sc = (struct nfs4c_pnfs_stream_cfg){.depth = 4, .io = 16384};
	CHECK_OK(nfs4c_pnfs_stream_open(f, false, 0, &sc, &s));
	for (at = 0;;) {
		const void *data;
		size_t n;
		CHECK_OK(nfs4c_pnfs_stream_next(s, &data, &n));
		if (!n)
			break;
		at += n;
	}
	CHECK_OK(nfs4c_pnfs_stream_close(s));
	CHECK_EQ(at, fsize);
	CHECK_EQ(mds_count('D'), devinfos + 1);
	nfs4c_pnfs_stats(p, &st);
	CHECK_EQ(st.getdeviceinfos, 1);
	pthread_mutex_lock(&M.lock);
	M.gdi_delay_ns = 0;
	pthread_mutex_unlock(&M.lock);
	CHECK_OK(nfs4c_pnfs_close(f));
	nfs4c_pnfs_destroy(p);

	CHECK_OK(nfs4c_unmount(cl));
	nfs4c_destroy(cl);
	mds_stop();
	close(dfd);
	unlink(disk);
	unlink(decoy);
	rmdir(dir);
	free(want);
	free(got);
	TEST_PASS("streams: writes and reads in flight, a recall among them, an error, "
		  "buffers in huge pages, one GETDEVICEINFO");
}

/* ---- jnfs pnfs against the same server ------------------------------------------ */

static void test_cli(const char *jnfs)
{
	char dir[] = "/tmp/jnfs-pnfs-cli.XXXXXX", disk[64], decoy[64], local[96], back[96];
	char url[64], *out = xmalloc(PU_OUT_MAX);
	uint8_t *want = xmalloc(200000), *got = xmalloc(200000);
	int dfd = make_disks(dir, disk, decoy);
	mds_start();
	snprintf(url, sizeof(url), "nfs://%s/", M.addr);
	snprintf(local, sizeof(local), "%s/local", dir);
	snprintf(back, sizeof(back), "%s/back", dir);
	fill(want, 200000, 0, 9);
	int fd = open(local, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, want, 200000) == 200000);
	close(fd);

	/* put in unaligned writes each committed, get: the same bytes, on
	 * the disk where the server put the file */
	const char *put[] = {jnfs,	 "pnfs", url,	       "--device",	decoy,
			     "--device", disk,	 "--no-stats", "put",		local,
			     "f",	 "--io", "3000",       "--commit-each", NULL};
	CHECK_EQ(pu_run_echo(out, put), 0);
	CHECK_EQ(pu_value(out, "pnfs.put.bytes"), 200000);
	CHECK_EQ(pu_value(out, "pnfs.put.commits"), 67);
	CHECK_EQ(M.size, 200000);
	disk_file(dfd, got, 200000);
	CHECK(!memcmp(got, want, 200000));
	const char *get[] = {jnfs,	   "pnfs", url, "--device", disk,
			     "--no-stats", "get",  "f", back,	    NULL};
	CHECK_EQ(pu_run_echo(out, get), 0);
	CHECK_EQ(pu_value(out, "pnfs.get.bytes"), 200000);
	fd = open(back, O_RDONLY);
	CHECK(fd >= 0 && read(fd, got, 200000) == 200000);
	close(fd);
	CHECK(!memcmp(got, want, 200000));

	/* put and get in streams: 3 writes of 8 KiB in flight, layouts got
	 * 32 KiB ahead (7 of them), one LAYOUTCOMMIT; 3 reads in flight */
	unsigned lgs = mds_count('G'), cms = mds_count('C');
	const char *sput[] = {
		jnfs, "pnfs",	 url, "--device", disk, "--no-stats",	  "put", local,
		"f",  "--depth", "3", "--io",	  "8K", "--layout-ahead", "32K", NULL};
	CHECK_EQ(pu_run_echo(out, sput), 0);
	CHECK_EQ(pu_value(out, "pnfs.put.bytes"), 200000);
	CHECK_EQ(pu_value(out, "pnfs.put.commits"), 1);
	CHECK(mds_count('G') >= lgs + 7);
	CHECK_EQ(mds_count('C'), cms + 1);
	CHECK_EQ(M.size, 200000);
	disk_file(dfd, got, 200000);
	CHECK(!memcmp(got, want, 200000));
	const char *sget[] = {jnfs, "pnfs", url,       "--device", disk,   "--no-stats", "get",
			      "f",  back,   "--depth", "3",	   "--io", "8K",	 NULL};
	CHECK_EQ(pu_run_echo(out, sget), 0);
	CHECK_EQ(pu_value(out, "pnfs.get.bytes"), 200000);
	memset(got, 0, 200000);
	fd = open(back, O_RDONLY);
	CHECK(fd >= 0 && read(fd, got, 200000) == 200000);
	close(fd);
	CHECK(!memcmp(got, want, 200000));
	const char *bad_depth[] = {jnfs, "pnfs", url,	    "--device", disk, "get",
				   "f",	 back,	 "--depth", "65",	NULL};
	CHECK_EQ(pu_run_echo(out, bad_depth), 2);

	/* info: the device, found on the disk and not on the decoy */
	const char *info[] = {jnfs, "pnfs", url, "--device", decoy, "--device", disk, "info", NULL};
	CHECK_EQ(pu_run_echo(out, info), 0);
	CHECK(strstr(out, "volume 0: SIMPLE") && strstr(out, disk));

	/* the workloads */
	unsigned commits = mds_count('C');
	const char *ow[] = {jnfs,	  "pnfs",      url,	   "--device", disk,
			    "--no-stats", "overwrite", "fo",	   "--size",   "256K",
			    "--io",	  "64K",       "--rounds", "2",	       NULL};
	CHECK_EQ(pu_run_echo(out, ow), 0);
	CHECK_EQ(pu_value(out, "pnfs.overwrite.commits"), 8);
	CHECK(pu_value(out, "pnfs.overwrite.commit_us_p99") != UINT64_MAX);
	CHECK_EQ(mds_count('C'), commits + 1 + 8); /* the file's first commit, then 8 */
	CHECK_EQ(M.commit.n, 0);		   /* an overwrite: nothing to convert */
	const char *nf[] = {jnfs,	  "pnfs",     url,	 "--device", disk,
			    "--no-stats", "newfiles", "fn",	 "--size",   "128K",
			    "--io",	  "32K",      "--count", "2",	     NULL};
	CHECK_EQ(pu_run_echo(out, nf), 0);
	CHECK_EQ(pu_value(out, "pnfs.newfiles.commits"), 8);
	CHECK(M.commit.n == 1 && M.commit.e[0].bex_file_offset == 96 * 1024 &&
	      M.commit.e[0].bex_length == 32 * 1024 && M.size == 128 * 1024);

	/* hold: a recall is ignored; with --return-on-recall it is honoured */
	for (int returning = 0; returning < 2; returning++) {
		const char *hold[] = {jnfs,
				      "pnfs",
				      url,
				      "--device",
				      disk,
				      "hold",
				      "fh",
				      "--seconds",
				      returning ? "60" : "1",
				      returning ? "--return-on-recall" : NULL,
				      NULL};
		int pfd, status;
		char line[256];
		pid_t pid = pu_spawn(hold, &pfd);
		FILE *in = fdopen(pfd, "r");
		CHECK(fgets(line, sizeof(line), in));
		printf("%s", line);
		CHECK(!strncmp(line, "pnfs.hold: holding", 18));
		unsigned returns = mds_count('R');
		CHECK_EQ(mds_recall(&FILE_FH, M.lseqid + 1, LAYOUTIOMODE4_ANY), NFS4_OK);
		size_t n = 0;
		while (n < PU_OUT_MAX - 1 && fgets(out + n, (int)(PU_OUT_MAX - n), in))
			n += strlen(out + n);
		fclose(in);
		printf("%s", out);
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK_EQ(pu_value(out, "pnfs.hold.recalls"), 1);
		CHECK_EQ(pu_value(out, "pnfs.hold.recalls_returned"), (uint64_t)returning);
		CHECK_EQ(mds_count('R'), returns + returning);
	}

	/* bad command lines */
	const char *bad_url[] = {jnfs, "pnfs", "http://x/", "--device", disk, "info", NULL};
	CHECK_EQ(pu_run_echo(out, bad_url), 2);
	const char *no_dev[] = {jnfs, "pnfs", url, "info", NULL};
	CHECK_EQ(pu_run_echo(out, no_dev), 2);
	const char *bad_args[] = {jnfs, "pnfs", url, "--device", disk, "get", "f", NULL};
	CHECK_EQ(pu_run_echo(out, bad_args), 2);
	const char *bad_size[] = {jnfs, "pnfs",	  url,	  "--device", disk,  "overwrite",
				  "f",	"--size", "100K", "--io",     "64K", NULL};
	CHECK_EQ(pu_run_echo(out, bad_size), 2);

	mds_stop();
	close(dfd);
	unlink(disk);
	unlink(decoy);
	unlink(local);
	unlink(back);
	rmdir(dir);
	free(out);
	free(want);
	free(got);
	TEST_PASS("jnfs pnfs against the scripted metadata server");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(240);
	test_volumes();
	test_extents();
	test_client();
	test_stream();
	if (argc > 1)
		test_cli(argv[1]); /* the jnfs program */
	return 0;
}
