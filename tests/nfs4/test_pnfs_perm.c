/*
 * test_pnfs_perm.c - who gets an RW layout, and what becomes of the blocks
 * an RW layout allocated when no LAYOUTCOMMIT made them the file's
 * (docs/pnfs.md, "Who gets a layout" and "Blocks allocated for a layout";
 * src/fs/layouts.c, invariants L1-L4).
 *
 *   test-pnfs-perm JNFSD JNFS
 *
 * jnfsd (5 s lease, no fence command) serves /pn (rw,pnfs) and /ro
 * (ro,pnfs); clients of the project's NFSv4.1 library send raw compounds.
 * The free space is GETATTR space_free.
 *
 *  1. A file opened for READ only: an RW LAYOUTGET with its open stateid
 *     is OPENMODE; a READ layout of it (empty) is OK, one NONE_DATA
 *     extent covering minlength (not LAYOUTTRYLATER); an RW LAYOUTGET
 *     with that READ layout's stateid is OPENMODE. No block is allocated.
 *     Once the client has opened the file for writing too, the same
 *     layout stateid gets the RW layout; after a CLOSE of that open
 *     (the file no longer open for writing) it is OPENMODE again.
 *  2. A file of the `ro,pnfs` export (sparse, 64 MiB): a READ layout is
 *     OK (NONE_DATA over the holes); an RW LAYOUTGET with the layout
 *     stateid, or with the open stateid, is ROFS, and the free space is
 *     unchanged: nothing is allocated through a read-only export.
 *  3. A root-owned 0644 file opened for writing by root: an RW LAYOUTGET
 *     sent as uid 1000 (AUTH_SYS) with that open stateid is ACCESS and
 *     allocates nothing, and is counted in srv.perm_denied as an NFSv3
 *     refusal is; a READ layout as uid 1000 is OK.
 *  4. An RW layout over a hole returned without LAYOUTCOMMIT: the free
 *     space is back where it was; a return of part of it frees that part
 *     only. One of which the client committed the
 *     first 64 KiB: only those stay allocated (space_used 64 KiB). Blocks
 *     ALLOCATEd through the server before the layout (unwritten, inside
 *     EOF) stay: only what the layout's map allocated past them goes.
 *  5. A client that reboots (a new verifier, the same owner) while
 *     holding an RW layout over a hole: its old state goes, and with it
 *     the blocks.
 *  6. A client that keeps a recalled RW layout (it answers the recall OK
 *     and never returns it) is revoked one lease after the recall; the
 *     blocks its layout allocated are given back once it is, and another
 *     client's LAYOUTGET then succeeds.
 *  7. jnfsd stops cleanly and `jnfs check` is clean: the free space the
 *     engine counts and the block maps agree.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/time.h"
#include "check.h"
#include "pnfs_util.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

static struct pu_server srv;

static const char *stname(nfsstat4 st)
{
	static char buf[32];
	switch (st) {
	case NFS4_OK:
		return "OK";
	case NFS4ERR_ACCESS:
		return "ACCESS";
	case NFS4ERR_ROFS:
		return "ROFS";
	case NFS4ERR_OPENMODE:
		return "OPENMODE";
	case NFS4ERR_BADIOMODE:
		return "BADIOMODE";
	case NFS4ERR_BAD_STATEID:
		return "BAD_STATEID";
	case NFS4ERR_LAYOUTTRYLATER:
		return "LAYOUTTRYLATER";
	case NFS4ERR_RECALLCONFLICT:
		return "RECALLCONFLICT";
	case NFS4ERR_DELAY:
		return "DELAY";
	default:
		snprintf(buf, sizeof(buf), "%d", (int)st);
		return buf;
	}
}

static void expect(const char *what, nfsstat4 got, nfsstat4 want)
{
	printf("%-70s %s\n", what, stname(got));
	if (got != want) {
		fprintf(stderr, "%s: %s, expected %s\n", what, stname(got), stname(want));
		exit(1);
	}
}

/* One space attribute (FATTR4_SPACE_FREE, _USED) of fh. */
static uint64_t space(struct nfs4c_client *cl, const struct nfs4c_fh *fh, unsigned bit)
{
	struct nfs4c_compound c;
	struct nfs4c_attr a;
	bitmap4 bm = {0};
	nfs4c_bitmap_set(&bm, bit);
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_getattr(&c, &bm);
	CHECK_OK(nfs4c_send(&c));
	CHECK_EQ(c.status, NFS4_OK);
	CHECK_OK(nfs4c_res_attr(&c, &a));
	CHECK(nfs4c_bitmap_isset(&a.have, bit));
	nfs4c_compound_destroy(&c);
	return bit == FATTR4_SPACE_FREE ? a.space_free : a.space_used;
}

static uint64_t free_space(struct nfs4c_client *cl, const struct nfs4c_fh *fh)
{
	return space(cl, fh, FATTR4_SPACE_FREE);
}

static void expect_free(const char *what, uint64_t got, uint64_t want)
{
	printf("%-70s %llu KiB (then %llu KiB)\n", what, (unsigned long long)(got / KIB),
	       (unsigned long long)(want / KIB));
	if (got != want) {
		fprintf(stderr, "%s: %llu bytes free, expected %llu\n", what,
			(unsigned long long)got, (unsigned long long)want);
		exit(1);
	}
}

/* Poll (each 100 ms, at most 30 s) until the free space is want. */
static void wait_free(const char *what, struct nfs4c_client *cl, const struct nfs4c_fh *fh,
		      uint64_t want)
{
	uint64_t got = free_space(cl, fh);
	for (int i = 0; i < 300 && got != want; i++) {
		usleep(100 * 1000);
		got = free_space(cl, fh);
	}
	expect_free(what, got, want);
}

/* LAYOUTGET as uid/gid 1000 (AUTH_SYS) rather than the client's root. */
static nfsstat4 layoutget_as_user(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
				  layoutiomode4 iomode, uint64_t off, uint64_t len,
				  const struct stateid4 *sid)
{
	struct rpc_cred cred = {.flavor = RPC_AUTH_SYS, .uid = 1000, .gid = 1000};
	strcpy(cred.machine, "perm-test");
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	c.cred = &cred;
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, iomode, off, len, 0, sid, 0);
	CHECK_OK(nfs4c_send(&c));
	nfsstat4 st = c.status;
	nfs4c_compound_destroy(&c);
	return st;
}

static nfsstat4 allocate(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
			 const struct stateid4 *sid, uint64_t off, uint64_t len)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_allocate(&c, sid, off, len);
	CHECK_OK(nfs4c_send(&c));
	nfsstat4 st = c.status;
	nfs4c_compound_destroy(&c);
	return st;
}

static nfsstat4 return_all_of(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
			      const struct stateid4 *lsid)
{
	return pu_layoutreturn(cl, fh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX, lsid,
			       NULL);
}

/* Every extent of l is in state st. */
static void all_extents(const struct pu_layout *l, pnfs_block_extent_state4 st)
{
	CHECK(l->n >= 1);
	for (unsigned i = 0; i < l->n; i++)
		CHECK_EQ(l->ext[i].state, st);
}

/* Recalls are answered OK and the layout is never returned. */
static atomic_uint recalls;

static nfsstat4 recall_ok(void *arg, const struct nfs4c_cb_req *rq, const struct nfs_cb_argop4 *op,
			  struct nfs_cb_resop4 *res)
{
	(void)arg;
	(void)rq;
	(void)op;
	(void)res;
	atomic_fetch_add(&recalls, 1);
	return NFS4_OK;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(240);
	if (argc != 3) {
		fprintf(stderr, "usage: test-pnfs-perm JNFSD JNFS\n");
		return 2;
	}
	pu_init(&srv, argv[1], argv[2],
		"/pn 127.0.0.1(rw,sync,insecure,no_root_squash,pnfs)\n"
		"/ro 127.0.0.1(ro,sync,insecure,no_root_squash,pnfs)\n");
	const char *mkfs[] = {argv[2], "mkfs", srv.image, "--size", "256M", NULL};
	CHECK_EQ(pu_run(NULL, mkfs), 0);
	/* root-owned 0644 files: "a" empty, "root644" and ro/f sparse */
	const char *setup[] = {argv[2],
			       "io",
			       srv.image,
			       "-c",
			       "mkdir pn",
			       "-c",
			       "mkdir ro",
			       "-c",
			       "open pn/a create",
			       "-c",
			       "open pn/root644 create",
			       "-c",
			       "truncate 16777216",
			       "-c",
			       "open ro/f create",
			       "-c",
			       "truncate 67108864",
			       NULL};
	CHECK_EQ(pu_run(NULL, setup), 0);
	const char *extra[] = {"--lease-seconds", "5", NULL};
	pu_start(&srv, extra);
	struct nfs4c_fh root1, root2, pn, pn2, ro;
	struct nfs4c_client *c1 = pu_client(&srv, "perm-1", &root1);
	struct nfs4c_client *c2 = pu_client(&srv, "perm-2", &root2);
	CHECK_OK(nfs4c_set_cb(c1, OP_CB_LAYOUTRECALL, recall_ok, NULL));
	pu_lookup(c1, &root1, "pn", &pn);
	pu_lookup(c2, &root2, "pn", &pn2);
	pu_lookup(c1, &root1, "ro", &ro);

	/* 1: the open the layout stands for */
	struct nfs4c_fh afh;
	struct stateid4 asid;
	struct pu_layout l;
	uint64_t free0 = free_space(c1, &pn);
	CHECK_EQ(pu_open(c1, &pn, "a", false, OPEN4_SHARE_ACCESS_READ, &afh, &asid), NFS4_OK);
	expect("LAYOUTGET RW, the open stateid of a READ-only open",
	       pu_layoutget(c1, &afh, LAYOUTIOMODE4_RW, 0, 8 * MIB, 0, &asid, 0, NULL),
	       NFS4ERR_OPENMODE);
	expect("LAYOUTGET READ of the empty file, minlength 16 KiB",
	       pu_layoutget(c1, &afh, LAYOUTIOMODE4_READ, 0, UINT64_MAX, 16 * KIB, &asid, 0, &l),
	       NFS4_OK);
	all_extents(&l, PNFS_BLOCK_NONE_DATA);
	CHECK_EQ(l.off, 0);
	CHECK(l.len >= 16 * KIB);
	CHECK_EQ(l.ext[l.n - 1].foff + l.ext[l.n - 1].len, l.off + l.len);
	expect("LAYOUTGET READ of the empty file, no minlength",
	       pu_layoutget(c1, &afh, LAYOUTIOMODE4_READ, 0, UINT64_MAX, 0, &l.stateid, 0, &l),
	       NFS4_OK);
	all_extents(&l, PNFS_BLOCK_NONE_DATA);
	expect("LAYOUTGET RW, the layout stateid of that READ layout",
	       pu_layoutget(c1, &afh, LAYOUTIOMODE4_RW, 0, 8 * MIB, 0, &l.stateid, 0, NULL),
	       NFS4ERR_OPENMODE);
	expect_free("nothing was allocated", free_space(c1, &pn), free0);
	/* the client opens for writing too (the same owner: an upgrade) */
	struct stateid4 asid2;
	CHECK_EQ(pu_open(c1, &pn, "a", false, OPEN4_SHARE_ACCESS_BOTH, &afh, &asid2), NFS4_OK);
	struct pu_layout la;
	expect("then opened for writing: LAYOUTGET RW, the layout stateid",
	       pu_layoutget(c1, &afh, LAYOUTIOMODE4_RW, 0, 8 * MIB, 0, &l.stateid, 0, &la),
	       NFS4_OK);
	all_extents(&la, PNFS_BLOCK_INVALID_DATA);
	CHECK(free_space(c1, &pn) <= free0 - 8 * MIB);
	pu_close(c1, &afh, &asid2);
	expect("after CLOSE: LAYOUTGET RW, the layout stateid",
	       pu_layoutget(c1, &afh, LAYOUTIOMODE4_RW, 8 * MIB, 8 * MIB, 0, &la.stateid, 0, NULL),
	       NFS4ERR_OPENMODE);
	CHECK_EQ(return_all_of(c1, &afh, &la.stateid), NFS4_OK);
	expect_free("its RW layout returned uncommitted: the blocks are free again",
		    free_space(c1, &pn), free0);
	TEST_PASS("an RW layout needs an open for writing, still open");

	/* 2: the read-only export */
	struct nfs4c_fh ffh;
	struct stateid4 fsid;
	uint64_t rfree = free_space(c1, &ro);
	CHECK_EQ(pu_open(c1, &ro, "f", false, OPEN4_SHARE_ACCESS_READ, &ffh, &fsid), NFS4_OK);
	expect("ro export: LAYOUTGET READ of a sparse file",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_READ, 0, 64 * MIB, 0, &fsid, 0, &l), NFS4_OK);
	all_extents(&l, PNFS_BLOCK_NONE_DATA);
	expect("ro export: LAYOUTGET RW, the READ layout's stateid",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 64 * MIB, 0, &l.stateid, 0, NULL),
	       NFS4ERR_ROFS);
	expect("ro export: LAYOUTGET RW, the open stateid",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 64 * MIB, 0, &fsid, 0, NULL),
	       NFS4ERR_ROFS);
	expect_free("ro export: nothing was allocated", free_space(c1, &ro), rfree);
	CHECK_EQ(space(c1, &ffh, FATTR4_SPACE_USED), 0);
	CHECK_EQ(return_all_of(c1, &ffh, &l.stateid), NFS4_OK);
	pu_close(c1, &ffh, &fsid);
	TEST_PASS("no RW layout, and no block allocated, through a read-only export");

	/* 3: the mode bits */
	struct nfs4c_fh rfh;
	struct stateid4 rsid;
	free0 = free_space(c1, &pn);
	CHECK_EQ(pu_open(c1, &pn, "root644", false, OPEN4_SHARE_ACCESS_BOTH, &rfh, &rsid), NFS4_OK);
	uint64_t denied0 = tc_jnfsd_stat(&srv.j, "srv.perm_denied");
	expect("root's 0644 file, opened for writing: LAYOUTGET RW as uid 1000",
	       layoutget_as_user(c1, &rfh, LAYOUTIOMODE4_RW, 0, 8 * MIB, &rsid), NFS4ERR_ACCESS);
	/* counted where every protocol's refusals are (src/srv/vfs.h) */
	CHECK_EQ(tc_jnfsd_stat(&srv.j, "srv.perm_denied"), denied0 + 1);
	expect_free("nothing was allocated", free_space(c1, &pn), free0);
	CHECK_EQ(space(c1, &rfh, FATTR4_SPACE_USED), 0);
	expect("root's 0644 file: LAYOUTGET READ as uid 1000",
	       layoutget_as_user(c1, &rfh, LAYOUTIOMODE4_READ, 0, 8 * MIB, &rsid), NFS4_OK);
	pu_close(c1, &rfh, &rsid);
	TEST_PASS("an RW layout needs the permission to write the file");

	/* 4: returned without LAYOUTCOMMIT */
	struct nfs4c_fh gfh;
	struct stateid4 gsid;
	CHECK_EQ(pu_open(c1, &pn, "g", true, OPEN4_SHARE_ACCESS_BOTH, &gfh, &gsid), NFS4_OK);
	free0 = free_space(c1, &pn);
	expect("LAYOUTGET RW of 8 MiB over a hole",
	       pu_layoutget(c1, &gfh, LAYOUTIOMODE4_RW, 0, 8 * MIB, 0, &gsid, 0, &l), NFS4_OK);
	all_extents(&l, PNFS_BLOCK_INVALID_DATA);
	CHECK(free_space(c1, &pn) <= free0 - 8 * MIB);
	CHECK_EQ(return_all_of(c1, &gfh, &l.stateid), NFS4_OK);
	expect_free("returned without LAYOUTCOMMIT: free space as before", free_space(c1, &pn),
		    free0);
	CHECK_EQ(space(c1, &gfh, FATTR4_SPACE_USED), 0);
	/* a return of part of it: only what no RW layout covers goes */
	expect("LAYOUTGET RW of 8 MiB over a hole, to return in parts",
	       pu_layoutget(c1, &gfh, LAYOUTIOMODE4_RW, 0, 8 * MIB, 0, &gsid, 0, &l), NFS4_OK);
	struct stateid4 part;
	CHECK_EQ(pu_layoutreturn(c1, &gfh, LAYOUTIOMODE4_RW, LAYOUTRETURN4_FILE, 0, 3 * MIB,
				 &l.stateid, &part),
		 NFS4_OK);
	expect_free("its first 3 MiB returned: those are free", free_space(c1, &pn),
		    free0 - 5 * MIB);
	CHECK_EQ(space(c1, &gfh, FATTR4_SPACE_USED), 5 * MIB);
	CHECK_EQ(return_all_of(c1, &gfh, &part), NFS4_OK);
	expect_free("the rest returned: free space as before", free_space(c1, &pn), free0);
	/* again, with the first 64 KiB committed */
	expect("LAYOUTGET RW of 8 MiB over a hole, again",
	       pu_layoutget(c1, &gfh, LAYOUTIOMODE4_RW, 0, 8 * MIB, 0, &gsid, 0, &l), NFS4_OK);
	struct nfs4c_blk_ext e = l.ext[0];
	CHECK(e.foff == 0 && e.len >= 64 * KIB);
	e.len = 64 * KIB;
	e.state = PNFS_BLOCK_READ_WRITE_DATA;
	CHECK_EQ(pu_layoutcommit(c1, &gfh, &l.stateid, &e, 1, 64 * KIB - 1, NULL), NFS4_OK);
	CHECK_EQ(return_all_of(c1, &gfh, &l.stateid), NFS4_OK);
	expect_free("64 KiB committed, the rest returned: only 64 KiB stay", free_space(c1, &pn),
		    free0 - 64 * KIB);
	CHECK_EQ(space(c1, &gfh, FATTR4_SPACE_USED), 64 * KIB);
	expect("a READ layout of the committed 64 KiB",
	       pu_layoutget(c1, &gfh, LAYOUTIOMODE4_READ, 0, 64 * KIB, 0, &gsid, 0, &l), NFS4_OK);
	all_extents(&l, PNFS_BLOCK_READ_DATA);
	CHECK_EQ(return_all_of(c1, &gfh, &l.stateid), NFS4_OK);
	/* blocks ALLOCATEd through the server are the file's */
	struct nfs4c_fh hfh;
	struct stateid4 hsid;
	CHECK_EQ(pu_open(c1, &pn, "h", true, OPEN4_SHARE_ACCESS_BOTH, &hfh, &hsid), NFS4_OK);
	CHECK_EQ(allocate(c1, &hfh, &hsid, 0, 1 * MIB), NFS4_OK);
	uint64_t free_a = free_space(c1, &pn);
	CHECK_EQ(space(c1, &hfh, FATTR4_SPACE_USED), 1 * MIB);
	expect("an ALLOCATEd MiB: LAYOUTGET RW of 4 MiB",
	       pu_layoutget(c1, &hfh, LAYOUTIOMODE4_RW, 0, 4 * MIB, 0, &hsid, 0, &l), NFS4_OK);
	all_extents(&l, PNFS_BLOCK_INVALID_DATA);
	CHECK_EQ(space(c1, &hfh, FATTR4_SPACE_USED), 4 * MIB);
	CHECK_EQ(return_all_of(c1, &hfh, &l.stateid), NFS4_OK);
	expect_free("returned: the ALLOCATEd MiB stays, the layout's 3 MiB go", free_space(c1, &pn),
		    free_a);
	CHECK_EQ(space(c1, &hfh, FATTR4_SPACE_USED), 1 * MIB);
	pu_close(c1, &hfh, &hsid);
	TEST_PASS("the blocks of an RW layout returned uncommitted are given back");

	/* 5: a client that reboots holding an RW layout */
	free0 = free_space(c1, &pn);
	struct nfs4c_fh root3, pn3, bfh;
	struct stateid4 bsid;
	struct nfs4c_client *c3 = pu_client(&srv, "perm-3", &root3);
	pu_lookup(c3, &root3, "pn", &pn3);
	CHECK_EQ(pu_open(c3, &pn3, "b", true, OPEN4_SHARE_ACCESS_BOTH, &bfh, &bsid), NFS4_OK);
	uint64_t free_b = free_space(c1, &pn);
	expect("client 3: LAYOUTGET RW of 8 MiB over a hole",
	       pu_layoutget(c3, &bfh, LAYOUTIOMODE4_RW, 0, 8 * MIB, 0, &bsid, 0, &l), NFS4_OK);
	CHECK(free_space(c1, &pn) <= free_b - 8 * MIB);
	nfs4c_destroy(c3);			/* gone without a word */
	c3 = pu_client(&srv, "perm-3", &root3); /* its next incarnation */
	wait_free("client 3 rebooted: its layout's blocks are free again", c1, &pn, free_b);
	pu_client_end(c3);
	TEST_PASS("the blocks of a lost client's RW layout are given back");

	/* 6: a recalled layout never returned is revoked */
	struct nfs4c_fh vfh, vfh2;
	struct stateid4 vsid, vsid2;
	CHECK_EQ(pu_open(c1, &pn, "v", true, OPEN4_SHARE_ACCESS_BOTH, &vfh, &vsid), NFS4_OK);
	uint64_t free_v = free_space(c1, &pn);
	expect("client 1: LAYOUTGET RW of 8 MiB over a hole",
	       pu_layoutget(c1, &vfh, LAYOUTIOMODE4_RW, 0, 8 * MIB, 0, &vsid, 0, &l), NFS4_OK);
	CHECK(free_space(c1, &pn) <= free_v - 8 * MIB);
	CHECK_EQ(pu_open(c2, &pn2, "v", false, OPEN4_SHARE_ACCESS_READ, &vfh2, &vsid2), NFS4_OK);
	/* client 2's READ layout conflicts: client 1 is recalled, keeps it,
	 * and is revoked a lease later; client 2 polls as a client does */
	nfsstat4 st = NFS4ERR_LAYOUTTRYLATER;
	unsigned tries = 0;
	struct pu_layout l2;
	while (tries++ < 300) {
		st = pu_layoutget(c2, &vfh2, LAYOUTIOMODE4_READ, 0, 8 * MIB, 0, &vsid2, 0, &l2);
		if (st != NFS4ERR_LAYOUTTRYLATER && st != NFS4ERR_RECALLCONFLICT &&
		    st != NFS4ERR_DELAY)
			break;
		usleep(100 * 1000);
	}
	expect("client 2: LAYOUTGET READ, once client 1 is revoked", st, NFS4_OK);
	CHECK(atomic_load(&recalls) >= 1);
	all_extents(&l2, PNFS_BLOCK_NONE_DATA);
	expect_free("client 1 revoked: its layout's blocks are free again", free_space(c1, &pn),
		    free_v);
	CHECK_EQ(space(c1, &vfh, FATTR4_SPACE_USED), 0);
	TEST_PASS("the blocks of a revoked RW layout are given back");

	CHECK_EQ(return_all_of(c2, &vfh2, &l2.stateid), NFS4_OK);
	pu_close(c2, &vfh2, &vsid2);
	pu_client_end(c2);
	/* client 1's revoked layout stateid is still its own to free */
	nfs4c_destroy(c1);
	pu_finish(&srv);
	TEST_PASS("jnfsd stops cleanly, jnfs check is clean");
	return 0;
}
