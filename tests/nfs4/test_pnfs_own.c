/*
 * test_pnfs_own.c - the layout holder changes its own file through the
 * server (docs/pnfs.md, "Recalls never hold a worker"; docs/design.md
 * rule 9): a truncate, a DEALLOCATE and a WRITE through the server by the
 * client that holds an RW layout of the file recall that client's own
 * layout. The request is parked until the client returns it, then runs:
 * the client sees OK, never DELAY (which would cost the Linux client
 * 100 ms or more of back-off per call).
 *
 *   test-pnfs-own JNFSD JNFS
 *
 * Client A (the project's pNFS client library, src/nfs4c/pnfs.h, which
 * returns recalled layouts from its own thread) writes a file through
 * layouts, then, on the same client ID:
 *  1. SETATTR size (smaller): OK at the first try; the server counted one
 *     own-layout wait and no DELAY (fs.layout_delays, nfs4.delays); A returned its layout; the size and
 *     the bytes read back through the server are right;
 *  2. DEALLOCATE of a range A holds a layout of: OK at the first try, the
 *     range reads back as zeros;
 *  3. a WRITE through the server into a range A holds a layout of: OK at
 *     the first try, the bytes read back;
 *  4. an OPEN(CREATE, UNCHECKED4) with size 0 by another open owner of A,
 *     which truncates after its share reservation (docs/nfs4.md): OK at
 *     the first try, the file empty; the OPEN ran again after the wait,
 *     and an upgrade of that owner's read open moved its stateid once.
 * Then client B holds an RW layout and never returns it (`hold`): A's
 * truncate of that file gets DELAY (it waits for another client, not for
 * itself), as before, counted in nfs4.delays and, as it was parked first,
 * nfs4.delays_after_wait; B is fenced at the lease.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/time.h"
#include "check.h"
#include "nfs4c/pnfs.h"
#include "pnfs_util.h"

#define FSIZE (1u << 20)

static struct pu_server srv;

static uint64_t counter(const char *name)
{
	static char out[PU_OUT_MAX];
	const char *argv[] = {srv.jnfs, "stat", "--server", srv.addr, NULL};
	CHECK_EQ(pu_run(out, argv), 0);
	uint64_t v = pu_value(out, name);
	return v == UINT64_MAX ? 0 : v;
}

static nfsstat4 truncate_to(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
			    const struct stateid4 *sid, uint64_t size)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	struct nfs4c_sattr sa = {.set = NFS4C_SA_SIZE, .size = size};
	nfs4c_op_setattr(&c, sid, &sa);
	int err = nfs4c_send(&c);
	CHECK_OK(err < 0 ? err : 0);
	nfsstat4 st = c.status;
	nfs4c_compound_destroy(&c);
	return st;
}

static nfsstat4 deallocate(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
			   const struct stateid4 *sid, uint64_t off, uint64_t len)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_deallocate(&c, sid, off, len);
	int err = nfs4c_send(&c);
	CHECK_OK(err < 0 ? err : 0);
	nfsstat4 st = c.status;
	nfs4c_compound_destroy(&c);
	return st;
}

/* OPEN name for access by owner, with UNCHECKED4 size 0 when trunc. */
static nfsstat4 open_trunc(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *owner,
			   uint32_t access, bool trunc, struct nfs4c_fh *fh, struct stateid4 *sid)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, dir);
	struct nfs4c_open o = {.owner = owner,
			       .owner_len = (uint32_t)strlen(owner),
			       .access = access,
			       .claim = CLAIM_NULL,
			       .name = "f",
			       .create = trunc,
			       .how = UNCHECKED4,
			       .attrs = {.set = NFS4C_SA_SIZE, .size = 0}};
	nfs4c_op_open(&c, &o);
	nfs4c_op_getfh(&c);
	int err = nfs4c_send(&c);
	CHECK_OK(err < 0 ? err : 0);
	nfsstat4 st = c.status;
	if (st == NFS4_OK) {
		CHECK_OK(nfs4c_res_fh(&c, fh));
		*sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	}
	nfs4c_compound_destroy(&c);
	return st;
}

struct counts {
	uint64_t own, waits, delays, returns;
	uint64_t answered_delay, delay_after_wait; /* compounds answered DELAY */
};

static void counts(struct counts *k)
{
	k->own = counter("nfs4.layout.recall_waits_own");
	k->waits = counter("nfs4.layout.recall_waits");
	k->delays = counter("fs.layout_delays");
	k->returns = counter("nfs4.layout.returns");
	k->answered_delay = counter("nfs4.delays");
	k->delay_after_wait = counter("nfs4.delays_after_wait");
}

/* The change ran at once: one own-layout wait, no other wait, no DELAY,
 * and A returned its layout. */
static void check_parked_once(const struct counts *before)
{
	struct counts now;
	counts(&now);
	CHECK_EQ(now.own, before->own + 1);
	CHECK_EQ(now.waits, before->waits);
	CHECK_EQ(now.delays, before->delays);
	CHECK_EQ(now.answered_delay, before->answered_delay);
	CHECK(now.returns > before->returns);
}

static void read_back(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
		      const struct stateid4 *sid, const uint8_t *want, uint64_t size)
{
	uint8_t *got = xmalloc(FSIZE);
	uint32_t n = 0;
	CHECK_EQ(pu_read(cl, fh, sid, 0, got, FSIZE, &n), NFS4_OK);
	CHECK_EQ(n, size);
	CHECK(memcmp(got, want, size) == 0);
	free(got);
}

int main(int argc, char **argv)
{
	CHECK(argc == 3);
	pu_init(&srv, argv[1], argv[2], NULL);
	const char *extra[] = {"--lease-seconds", "10", "--grace-seconds", "0", NULL};
	pu_start(&srv, extra);

	struct nfs4c_fh root;
	struct nfs4c_client *a = pu_client(&srv, "own-a", &root);
	const char *disks[1] = {srv.image};
	struct nfs4c_pnfs_cfg pc = {.disks = disks, .ndisks = 1, .retry_ms = 20000};
	struct nfs4c_pnfs *p;
	CHECK_OK(nfs4c_pnfs_create(a, &pc, &p));

	uint8_t *want = xmalloc(FSIZE);
	pu_pattern(want, FSIZE, 0, 7);
	struct nfs4c_pnfs_file *f;
	CHECK_OK(nfs4c_pnfs_open(p, &root, "f", NFS4C_PNFS_TRUNC, &f));
	CHECK_OK(nfs4c_pnfs_write(f, 0, want, FSIZE));
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));
	struct nfs4c_fh fh = *nfs4c_pnfs_fh(f);
	struct stateid4 osid = nfs4c_pnfs_open_stateid(f);
	struct stateid4 lsid;
	CHECK(nfs4c_pnfs_layout_stateid(f, &lsid));

	/* 1. the holder's own truncate */
	struct counts k;
	counts(&k);
	uint64_t t0 = now_ns();
	CHECK_EQ(truncate_to(a, &fh, &osid, FSIZE / 2), NFS4_OK);
	printf("own truncate: %.1f ms\n", (now_ns() - t0) / 1e6);
	check_parked_once(&k);
	CHECK(!nfs4c_pnfs_layout_stateid(f, &lsid) || nfs4c_pnfs_extents(f) == 0);
	uint64_t size, change;
	pu_getattr(a, &fh, &size, &change);
	CHECK_EQ(size, FSIZE / 2);
	read_back(a, &fh, &osid, want, FSIZE / 2);

	/* 2. DEALLOCATE of a range under a new layout */
	CHECK_OK(nfs4c_pnfs_write(f, 0, want, 65536));
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));
	counts(&k);
	CHECK_EQ(deallocate(a, &fh, &osid, 8192, 16384), NFS4_OK);
	check_parked_once(&k);
	memset(want + 8192, 0, 16384);
	read_back(a, &fh, &osid, want, FSIZE / 2);

	/* 3. a WRITE through the server into a range under a layout */
	CHECK_OK(nfs4c_pnfs_layoutget(f, LAYOUTIOMODE4_RW, 0, 65536));
	counts(&k);
	pu_pattern(want + 4096, 4096, 4096, 9);
	CHECK_EQ(pu_write(a, &fh, &osid, 4096, want + 4096, 4096, FILE_SYNC4), NFS4_OK);
	check_parked_once(&k);
	read_back(a, &fh, &osid, want, FSIZE / 2);

	/* 4. an OPEN that truncates (UNCHECKED4, size 0), by another owner
	 * of A: its share reservation is taken first, the truncate waits for
	 * A's layout, the OPEN is taken back and runs again. An upgrade of
	 * the owner's read open comes out with its stateid moved once; a new
	 * open as new */
	struct nfs4c_fh ufh;
	struct stateid4 rsid, usid;
	CHECK_EQ(open_trunc(a, &root, "own-up", OPEN4_SHARE_ACCESS_READ, false, &ufh, &rsid),
		 NFS4_OK);
	CHECK_OK(nfs4c_pnfs_layoutget(f, LAYOUTIOMODE4_RW, 0, 65536));
	counts(&k);
	CHECK_EQ(open_trunc(a, &root, "own-up", OPEN4_SHARE_ACCESS_BOTH, true, &ufh, &usid),
		 NFS4_OK);
	check_parked_once(&k);
	CHECK(memcmp(usid.other, rsid.other, sizeof(rsid.other)) == 0);
	CHECK_EQ(usid.seqid, rsid.seqid + 1);
	pu_getattr(a, &fh, &size, &change);
	CHECK_EQ(size, 0);
	CHECK_EQ(pu_write(a, &ufh, &usid, 0, want, 4096, FILE_SYNC4), NFS4_OK);
	pu_close(a, &ufh, &usid);
	CHECK_OK(nfs4c_pnfs_layoutget(f, LAYOUTIOMODE4_RW, 0, 65536));
	counts(&k);
	CHECK_EQ(open_trunc(a, &root, "own-new", OPEN4_SHARE_ACCESS_WRITE, true, &ufh, &usid),
		 NFS4_OK);
	check_parked_once(&k);
	CHECK_EQ(usid.seqid, 1);
	pu_getattr(a, &fh, &size, &change);
	CHECK_EQ(size, 0);
	pu_close(a, &ufh, &usid);
	CHECK_OK(nfs4c_pnfs_close(f));
	nfs4c_pnfs_destroy(p);

	/* another client's layout that is never returned: DELAY, as before */
	struct nfs4c_fh broot;
	struct nfs4c_client *b = pu_client(&srv, "own-b", &broot);
	struct nfs4c_pnfs_cfg hc = pc;
	hc.hold = true;
	struct nfs4c_pnfs *hp;
	CHECK_OK(nfs4c_pnfs_create(b, &hc, &hp));
	struct nfs4c_pnfs_file *hf;
	CHECK_OK(nfs4c_pnfs_open(hp, &broot, "f", 0, &hf));
	CHECK_OK(nfs4c_pnfs_layoutget(hf, LAYOUTIOMODE4_RW, 0, 65536));
	struct nfs4c_fh afh;
	struct stateid4 asid;
	CHECK_EQ(pu_open(a, &root, "f", false, OPEN4_SHARE_ACCESS_BOTH, &afh, &asid), NFS4_OK);
	counts(&k);
	CHECK_EQ(truncate_to(a, &afh, &asid, 4096), NFS4ERR_DELAY);
	struct counts now;
	counts(&now);
	CHECK_EQ(now.own, k.own);
	/* counted as a DELAY answered after the request's parked wait */
	CHECK_EQ(now.answered_delay, k.answered_delay + 1);
	CHECK_EQ(now.delay_after_wait, k.delay_after_wait + 1);
	CHECK_EQ(truncate_to(a, &afh, &asid, 4096), NFS4ERR_DELAY);
	/* the lease fences B (no --fence-cmd: its layout goes), then A's
	 * truncate goes through */
	nfsstat4 st = NFS4ERR_DELAY;
	for (int i = 0; i < 300 && st == NFS4ERR_DELAY; i++) {
		sleep_ns(100 * NSEC_PER_MSEC);
		st = truncate_to(a, &afh, &asid, 4096);
	}
	CHECK_EQ(st, NFS4_OK);
	pu_close(a, &afh, &asid);
	CHECK(counter("nfs4.layout.fenced") >= 1);
	/* B's layout was revoked: its answers do not matter here, and its
	 * client ID keeps the revoked state (CLIENTID_BUSY), so B is only
	 * forgotten */
	nfs4c_pnfs_close(hf);
	nfs4c_pnfs_destroy(hp);
	nfs4c_unmount(b);
	nfs4c_destroy(b);
	pu_client_end(a);
	free(want);
	pu_stop(&srv);
	pu_finish(&srv);
	printf("test-pnfs-own: ok\n");
	return 0;
}
