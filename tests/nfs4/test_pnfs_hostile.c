/*
 * test_pnfs_hostile.c - the layout operations given what a well-behaved
 * client never sends: each is refused with a clear error and changes
 * nothing, and no block another file owns is ever exposed or converted.
 *
 *   test-pnfs-hostile JNFSD JNFS
 *
 * jnfsd serves an image with two exports, /pn (pnfs) and /plain (not);
 * two clients of the project's NFSv4.1 library send raw compounds.
 *
 *  1. GETDEVICEINFO of an unknown device id: NOENT; of another layout
 *     type: UNKNOWN_LAYOUTTYPE; too small a maxcount: TOOSMALL.
 *  2. LAYOUTGET on a file of the export without pnfs: LAYOUTUNAVAILABLE;
 *     on directories: ISDIR; with a forged stateid, another client's,
 *     a stateid of another file (open or layout, READ or RW: such a
 *     stateid stands for no open of this file), a special one:
 *     BAD_STATEID; with bad ranges and iomodes: INVAL, BADIOMODE. None
 *     leaves a layout behind: a WRITE through the server is not delayed.
 *  3. LAYOUTCOMMIT with a forged layout stateid, one from the future,
 *     another client's, an open stateid, the layout stateid of another
 *     file (an old one is still the layout: its extents are judged); of
 *     extents outside the layout
 *     (BADLAYOUT), unaligned, empty, overflowing, on another device
 *     (INVAL); with a last written byte where the client holds no layout
 *     (INVAL): the file's size and change attribute stay as they were.
 *  4. Storage offsets that lie: the client names the blocks of another
 *     file ("victim", written through the server) in a LAYOUTCOMMIT of
 *     its own file's range. The server converts the blocks it maps for
 *     that range, never the named ones: the victim's data and block map
 *     are as they were, the client's file maps none of the victim's
 *     blocks, and the same lie about a range the client holds no layout
 *     for is BADLAYOUT.
 *  5. LAYOUTRETURN of what was never given: a forged stateid, an open
 *     stateid, another file's or another client's layout stateid
 *     (BAD_STATEID), no current filehandle (NOFILEHANDLE), a bad iomode
 *     (BADIOMODE), another layout type; FSID and ALL by a client holding
 *     nothing, and a range never given: OK with the layouts actually held
 *     still held (a LAYOUTCOMMIT in them succeeds).
 *  6. A return of part of a layout, or of the READ layouts of a client
 *     that also holds an RW one, leaves the rest held: a LAYOUTCOMMIT in
 *     it succeeds (one in the part returned is BADLAYOUT) and another
 *     client's WRITE through the server to it waits for its recall.
 *  7. A LAYOUTGET whose minlength does not fit in its reply (room for
 *     fewer extents than the range has) is LAYOUTTRYLATER, with the
 *     result that status carries (logr_will_signal_layout_avail), and
 *     leaves the layouts held before as they were. One that could hand
 *     out only part of the range holds only that part: a LAYOUTCOMMIT
 *     beyond it is BADLAYOUT.
 *  8. At the end jnfsd stops cleanly and `jnfs check` is clean.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/time.h"
#include "check.h"
#include "pnfs_util.h"

#define KIB 1024u

static struct pu_server srv;
static struct nfs4c_client *c1, *c2;
static struct nfs4c_fh root1, root2, pn1, pn2;
static uint8_t devid[NFS4_DEVICEID4_SIZE];

/* The status's name (generated from nfs4.x), or its number. */
static const char *stname(nfsstat4 st)
{
	static char buf[32];
	const char *name = nfsstat4_name(st);
	if (name)
		return name;
	snprintf(buf, sizeof(buf), "%d", (int)st);
	return buf;
}

/* The answer is the one expected; say so. */
static void expect(const char *what, nfsstat4 got, nfsstat4 want)
{
	printf("%-66s %s\n", what, stname(got));
	if (got != want) {
		fprintf(stderr, "%s: %s, expected %s\n", what, stname(got), stname(want));
		exit(1);
	}
}

/* A stateid this server never issued: from a real one of the client, the
 * same boot and client but a counter (other[8..11], docs/nfs4-state.md)
 * no stateid has; or random bytes, which name another server instance. */
static struct stateid4 forged(const struct stateid4 *real)
{
	struct stateid4 s = *real;
	s.seqid = 1;
	s.other[8] ^= 0xa5;
	s.other[9] ^= 0x5a;
	return s;
}

static struct stateid4 random_sid(void)
{
	struct stateid4 s = {.seqid = 1};
	for (unsigned i = 0; i < sizeof(s.other); i++)
		s.other[i] = (uint8_t)(0x5a ^ (i * 37));
	return s;
}

/* A file's size and change attribute, to show nothing changed. */
struct fattr {
	uint64_t size, change;
};

static struct fattr attrs(const struct nfs4c_fh *fh)
{
	struct fattr a;
	pu_getattr(c1, fh, &a.size, &a.change);
	return a;
}

static void unchanged(const struct nfs4c_fh *fh, struct fattr before)
{
	struct fattr now = attrs(fh);
	CHECK_EQ(now.size, before.size);
	CHECK_EQ(now.change, before.change);
}

/* An extent of the layout update: file range and (claimed) storage. */
static struct nfs4c_blk_ext ext(uint64_t foff, uint64_t len, uint64_t soff)
{
	struct nfs4c_blk_ext e = {.foff = foff,
				  .len = len,
				  .soff = soff,
				  .state = PNFS_BLOCK_READ_WRITE_DATA,
				  .iomode = LAYOUTIOMODE4_RW};
	memcpy(e.devid, devid, sizeof(devid));
	return e;
}

/* Answer CB_LAYOUTRECALL OK and return nothing: the layout stays recalled
 * until the test returns it itself. */
static atomic_uint recalls;

static nfsstat4 recall_ok(void *arg, const struct nfs4c_cb_req *rq, const struct nfs_cb_argop4 *op,
			  struct nfs_cb_resop4 *res)
{
	atomic_fetch_add(&recalls, 1);
	return NFS4_OK;
}

/* A WRITE through the server by c2: its status (DELAY when a layout of
 * another client is in the way). */
static nfsstat4 c2_write(const struct nfs4c_fh *fh, const struct stateid4 *sid, uint64_t off)
{
	static const char data[] = "through the server";
	return pu_write(c2, fh, sid, off, data, sizeof(data), FILE_SYNC4);
}

/* 1 */
static void devices(void)
{
	uint8_t bogus[NFS4_DEVICEID4_SIZE];
	memcpy(bogus, devid, sizeof(bogus));
	bogus[0] ^= 0xff;
	expect("GETDEVICEINFO, the device", pu_getdeviceinfo(c1, devid, 0), NFS4_OK);
	expect("GETDEVICEINFO, an unknown device id", pu_getdeviceinfo(c1, bogus, 0),
	       NFS4ERR_NOENT);
	memset(bogus, 0, sizeof(bogus));
	expect("GETDEVICEINFO, device id 0", pu_getdeviceinfo(c1, bogus, 0), NFS4ERR_NOENT);
	expect("GETDEVICEINFO, maxcount 8", pu_getdeviceinfo(c1, devid, 8), NFS4ERR_TOOSMALL);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, c1);
	nfs4c_op_getdeviceinfo(&c, devid, LAYOUT4_NFSV4_1_FILES, 0, 0);
	CHECK_OK(nfs4c_send(&c));
	expect("GETDEVICEINFO, the files layout type", c.status, NFS4ERR_UNKNOWN_LAYOUTTYPE);
	nfs4c_compound_destroy(&c);
	TEST_PASS("GETDEVICEINFO of unknown devices and types");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	if (argc != 3) {
		fprintf(stderr, "usage: test-pnfs-hostile JNFSD JNFS\n");
		return 2;
	}
	pu_init(&srv, argv[1], argv[2],
		"/pn 127.0.0.1(rw,sync,insecure,no_root_squash,pnfs)\n"
		"/plain 127.0.0.1(rw,sync,insecure,no_root_squash)\n");
	const char *mkfs[] = {argv[2], "mkfs", srv.image, "--size", "256M", NULL};
	CHECK_EQ(pu_run(NULL, mkfs), 0);
	const char *dirs[] = {argv[2], "io",	      srv.image, "-c",	       "mkdir pn",
			      "-c",    "mkdir plain", "-c",	 "mkdir pn/d", NULL};
	CHECK_EQ(pu_run(NULL, dirs), 0);
	pu_start(&srv, NULL);
	c1 = pu_client(&srv, "hostile-1", &root1);
	c2 = pu_client(&srv, "hostile-2", &root2);
	CHECK_OK(nfs4c_set_cb(c1, OP_CB_LAYOUTRECALL, recall_ok, NULL));
	pu_lookup(c1, &root1, "pn", &pn1);
	pu_lookup(c2, &root2, "pn", &pn2);

	/* the victim: 256 KiB written through the server, durably */
	struct nfs4c_fh vfh, ffh, gfh, pfh, dfh, f2fh;
	struct stateid4 vsid, fsid, gsid, psid, f2sid;
	uint8_t *victim = xmalloc(256 * KIB), *buf = xmalloc(256 * KIB);
	pu_pattern(victim, 256 * KIB, 0, 7);
	CHECK_EQ(pu_open(c1, &pn1, "victim", true, OPEN4_SHARE_ACCESS_BOTH, &vfh, &vsid), NFS4_OK);
	CHECK_EQ(pu_write(c1, &vfh, &vsid, 0, victim, 256 * KIB, FILE_SYNC4), NFS4_OK);
	CHECK_EQ(pu_open(c1, &pn1, "f", true, OPEN4_SHARE_ACCESS_BOTH, &ffh, &fsid), NFS4_OK);
	CHECK_EQ(pu_open(c1, &pn1, "g", true, OPEN4_SHARE_ACCESS_BOTH, &gfh, &gsid), NFS4_OK);
	CHECK_EQ(pu_open(c2, &pn2, "f", false, OPEN4_SHARE_ACCESS_BOTH, &f2fh, &f2sid), NFS4_OK);
	/* a layout of g gives the device id and a layout stateid of g */
	struct pu_layout gl;
	CHECK_EQ(pu_layoutget(c1, &gfh, LAYOUTIOMODE4_RW, 0, 64 * KIB, 4 * KIB, &gsid, 0, &gl),
		 NFS4_OK);
	CHECK(gl.n >= 1);
	memcpy(devid, gl.ext[0].devid, sizeof(devid));

	devices();

	/* 2: LAYOUTGET refused */
	struct nfs4c_fh plain;
	pu_lookup(c1, &root1, "plain", &plain);
	CHECK_EQ(pu_open(c1, &plain, "p", true, OPEN4_SHARE_ACCESS_BOTH, &pfh, &psid), NFS4_OK);
	expect("LAYOUTGET on a file of an export without pnfs",
	       pu_layoutget(c1, &pfh, LAYOUTIOMODE4_RW, 0, 64 * KIB, 0, &psid, 0, NULL),
	       NFS4ERR_LAYOUTUNAVAILABLE);
	pu_lookup(c1, &pn1, "d", &dfh);
	struct fattr dbefore = attrs(&dfh);
	expect("LAYOUTGET on a directory",
	       pu_layoutget(c1, &dfh, LAYOUTIOMODE4_READ, 0, 64 * KIB, 0, &fsid, 0, NULL),
	       NFS4ERR_ISDIR);
	expect("LAYOUTGET on the export's root",
	       pu_layoutget(c1, &pn1, LAYOUTIOMODE4_RW, 0, 64 * KIB, 0, &fsid, 0, NULL),
	       NFS4ERR_ISDIR);
	unchanged(&dfh, dbefore);

	struct fattr fbefore = attrs(&ffh);
	struct stateid4 bad = forged(&fsid), rnd = random_sid();
	expect("LAYOUTGET, a forged stateid",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 64 * KIB, 0, &bad, 0, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTGET, a stateid of random bytes",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_READ, 0, 64 * KIB, 0, &rnd, 0, NULL),
	       NFS4ERR_STALE_STATEID);
	expect("LAYOUTGET, another client's open stateid",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 64 * KIB, 0, &f2sid, 0, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTGET RW, the open stateid of another file",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 64 * KIB, 0, &gsid, 0, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTGET READ, the open stateid of another file",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_READ, 0, 64 * KIB, 0, &gsid, 0, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTGET RW, the layout stateid of another file",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 64 * KIB, 0, &gl.stateid, 0, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTGET READ, the layout stateid of another file",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_READ, 0, 64 * KIB, 0, &gl.stateid, 0, NULL),
	       NFS4ERR_BAD_STATEID);
	struct stateid4 anon = {0};
	expect("LAYOUTGET, the anonymous stateid",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 64 * KIB, 0, &anon, 0, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTGET, length 0",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 0, 0, &fsid, 0, NULL), NFS4ERR_INVAL);
	expect("LAYOUTGET, minlength past length",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 4 * KIB, 8 * KIB, &fsid, 0, NULL),
	       NFS4ERR_INVAL);
	expect("LAYOUTGET, offset + length past 2^64",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, UINT64_MAX - 4095, 8 * KIB, 0, &fsid, 0,
			    NULL),
	       NFS4ERR_INVAL);
	expect("LAYOUTGET, iomode ANY",
	       pu_layoutget(c1, &ffh, LAYOUTIOMODE4_ANY, 0, 64 * KIB, 0, &fsid, 0, NULL),
	       NFS4ERR_BADIOMODE);
	unchanged(&ffh, fbefore);
	/* none of them left a layout: another client's WRITE is not delayed */
	expect("then a WRITE through the server by another client", c2_write(&f2fh, &f2sid, 0),
	       NFS4_OK);
	CHECK_EQ(atomic_load(&recalls), 0);
	TEST_PASS("LAYOUTGET refused: no pnfs, directories, stateids, ranges, iomodes");

	/* 3: LAYOUTCOMMIT refused; f has an RW layout of [0, 512K) in two
	 * LAYOUTGETs, so its layout stateid's seqid is 2 */
	struct pu_layout l1, l2;
	CHECK_EQ(pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 0, 256 * KIB, 4 * KIB, &fsid, 0, &l1),
		 NFS4_OK);
	CHECK_EQ(pu_layoutget(c1, &ffh, LAYOUTIOMODE4_RW, 256 * KIB, 256 * KIB, 4 * KIB,
			      &l1.stateid, 0, &l2),
		 NFS4_OK);
	CHECK(!memcmp(l1.stateid.other, l2.stateid.other, sizeof(l1.stateid.other)));
	CHECK_EQ(l2.stateid.seqid, l1.stateid.seqid + 1);
	struct stateid4 lsid = l2.stateid;
	fbefore = attrs(&ffh);
	struct nfs4c_blk_ext e = ext(0, 4 * KIB, l1.ext[0].soff);
	expect("LAYOUTCOMMIT, a forged stateid", pu_layoutcommit(c1, &ffh, &bad, &e, 1, 4095, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTCOMMIT, a stateid of random bytes",
	       pu_layoutcommit(c1, &ffh, &rnd, &e, 1, 4095, NULL), NFS4ERR_STALE_STATEID);
	/* an older seqid still names the layout (the Linux client commits
	 * with the seqid it held before a recall): judged on its extents */
	struct nfs4c_blk_ext out = ext(1024 * KIB, 4 * KIB, l1.ext[0].soff);
	expect("LAYOUTCOMMIT, an old layout stateid, an extent outside the layout",
	       pu_layoutcommit(c1, &ffh, &l1.stateid, &out, 1, UINT64_MAX, NULL),
	       NFS4ERR_BADLAYOUT);
	struct stateid4 future = lsid;
	future.seqid += 5;
	expect("LAYOUTCOMMIT, a layout stateid from the future",
	       pu_layoutcommit(c1, &ffh, &future, &e, 1, 4095, NULL), NFS4ERR_BAD_STATEID);
	expect("LAYOUTCOMMIT, another client's layout stateid",
	       pu_layoutcommit(c2, &f2fh, &lsid, &e, 1, 4095, NULL), NFS4ERR_BAD_STATEID);
	expect("LAYOUTCOMMIT, an open stateid", pu_layoutcommit(c1, &ffh, &fsid, &e, 1, 4095, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTCOMMIT, the layout stateid of another file",
	       pu_layoutcommit(c1, &ffh, &gl.stateid, &e, 1, 4095, NULL), NFS4ERR_BAD_STATEID);
	expect("LAYOUTCOMMIT, an extent outside the layout",
	       pu_layoutcommit(c1, &ffh, &lsid, &out, 1, UINT64_MAX, NULL), NFS4ERR_BADLAYOUT);
	struct nfs4c_blk_ext far = ext(1ull << 40, 4 * KIB, l1.ext[0].soff);
	expect("LAYOUTCOMMIT, an extent at 1 TiB",
	       pu_layoutcommit(c1, &ffh, &lsid, &far, 1, UINT64_MAX, NULL), NFS4ERR_BADLAYOUT);
	struct nfs4c_blk_ext odd = ext(512, 4 * KIB, l1.ext[0].soff);
	expect("LAYOUTCOMMIT, an unaligned extent",
	       pu_layoutcommit(c1, &ffh, &lsid, &odd, 1, UINT64_MAX, NULL), NFS4ERR_INVAL);
	struct nfs4c_blk_ext empty = ext(0, 0, l1.ext[0].soff);
	expect("LAYOUTCOMMIT, an empty extent",
	       pu_layoutcommit(c1, &ffh, &lsid, &empty, 1, UINT64_MAX, NULL), NFS4ERR_INVAL);
	struct nfs4c_blk_ext wrap = ext(UINT64_MAX - 4095, 8 * KIB, l1.ext[0].soff);
	expect("LAYOUTCOMMIT, an extent past 2^64",
	       pu_layoutcommit(c1, &ffh, &lsid, &wrap, 1, UINT64_MAX, NULL), NFS4ERR_INVAL);
	struct nfs4c_blk_ext other = e;
	other.devid[3] ^= 0x40;
	expect("LAYOUTCOMMIT, an extent on another device",
	       pu_layoutcommit(c1, &ffh, &lsid, &other, 1, UINT64_MAX, NULL), NFS4ERR_INVAL);
	/* the client holds RW [0, 512K): a size past it is no write of its */
	expect("LAYOUTCOMMIT, the last written byte past the layout",
	       pu_layoutcommit(c1, &ffh, &lsid, &e, 1, 1ull << 30, NULL), NFS4ERR_INVAL);
	expect("LAYOUTCOMMIT, no extent and the last written byte past the layout",
	       pu_layoutcommit(c1, &ffh, &lsid, NULL, 0, 512 * KIB, NULL), NFS4ERR_INVAL);
	unchanged(&ffh, fbefore);
	TEST_PASS("LAYOUTCOMMIT refused: stateids, extents");

	/* 4: storage offsets that lie. The victim's blocks, as a READ layout
	 * shows them */
	struct pu_layout vl;
	CHECK_EQ(pu_layoutget(c1, &vfh, LAYOUTIOMODE4_READ, 0, 256 * KIB, 4 * KIB, &vsid, 0, &vl),
		 NFS4_OK);
	CHECK(vl.n >= 1 && vl.ext[0].state == PNFS_BLOCK_READ_DATA);
	uint64_t vlo = UINT64_MAX, vhi = 0;
	for (unsigned i = 0; i < vl.n; i++) {
		vlo = MIN(vlo, vl.ext[i].soff);
		vhi = MAX(vhi, vl.ext[i].soff + vl.ext[i].len);
	}
	struct fattr vbefore = attrs(&vfh);
	/* f's first 256 KiB, claimed to be at the victim's blocks; nothing
	 * was written to f's own blocks */
	struct nfs4c_blk_ext lie[4];
	unsigned nlie = 0;
	for (uint64_t o = 0; o < 256 * KIB; o += 64 * KIB)
		lie[nlie++] = ext(o, 64 * KIB, vl.ext[0].soff + o);
	uint64_t ns;
	expect("LAYOUTCOMMIT of f's range naming the victim's blocks",
	       pu_layoutcommit(c1, &ffh, &lsid, lie, nlie, 256 * KIB - 1, &ns), NFS4_OK);
	struct nfs4c_blk_ext lie_out = ext(1024 * KIB, 64 * KIB, vl.ext[0].soff);
	expect("the same lie for a range of f without a layout",
	       pu_layoutcommit(c1, &ffh, &lsid, &lie_out, 1, UINT64_MAX, NULL), NFS4ERR_BADLAYOUT);
	/* the victim: same data, same blocks, same attributes */
	uint32_t got;
	CHECK_EQ(pu_read(c2, &f2fh, &f2sid, 0, buf, 4 * KIB, &got), NFS4_OK);
	CHECK_EQ(pu_read(c1, &vfh, &vsid, 0, buf, 256 * KIB, &got), NFS4_OK);
	CHECK_EQ(got, 256 * KIB);
	CHECK(!memcmp(buf, victim, 256 * KIB));
	unchanged(&vfh, vbefore);
	struct pu_layout vl2;
	CHECK_EQ(pu_layoutget(c1, &vfh, LAYOUTIOMODE4_READ, 0, 256 * KIB, 4 * KIB, &vl.stateid, 0,
			      &vl2),
		 NFS4_OK);
	CHECK_EQ(vl2.n, vl.n);
	for (unsigned i = 0; i < vl.n; i++) {
		CHECK_EQ(vl2.ext[i].foff, vl.ext[i].foff);
		CHECK_EQ(vl2.ext[i].soff, vl.ext[i].soff);
		CHECK_EQ(vl2.ext[i].len, vl.ext[i].len);
		CHECK_EQ(vl2.ext[i].state, PNFS_BLOCK_READ_DATA);
	}
	/* f's range was converted at f's own blocks: none of the victim's */
	struct pu_layout fl;
	CHECK_EQ(pu_layoutget(c1, &ffh, LAYOUTIOMODE4_READ, 0, 256 * KIB, 4 * KIB, &lsid, 0, &fl),
		 NFS4_OK);
	lsid = fl.stateid;
	uint64_t covered = 0;
	for (unsigned i = 0; i < fl.n; i++) {
		CHECK(fl.ext[i].state == PNFS_BLOCK_READ_DATA);
		CHECK(fl.ext[i].soff + fl.ext[i].len <= vlo || fl.ext[i].soff >= vhi);
		covered += fl.ext[i].len;
	}
	CHECK_EQ(covered, 256 * KIB);
	CHECK_EQ(pu_read(c1, &ffh, &fsid, 0, buf, 256 * KIB, &got), NFS4_OK);
	CHECK_EQ(got, 256 * KIB);
	CHECK(memcmp(buf, victim, 256 * KIB) != 0);
	printf("the victim's %u extents at [%llu, %llu) of the device are untouched; f's %u "
	       "extents lie elsewhere\n",
	       vl.n, (unsigned long long)vlo, (unsigned long long)vhi, fl.n);
	CHECK_EQ(pu_layoutreturn(c1, &vfh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
				 &vl2.stateid, NULL),
		 NFS4_OK);
	TEST_PASS("storage offsets that lie: the victim's blocks are never converted nor exposed");

	/* 5: LAYOUTRETURN of what was never given */
	expect("LAYOUTRETURN, a forged stateid",
	       pu_layoutreturn(c1, &ffh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX, &bad,
			       NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTRETURN, a stateid of random bytes",
	       pu_layoutreturn(c1, &ffh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX, &rnd,
			       NULL),
	       NFS4ERR_STALE_STATEID);
	expect("LAYOUTRETURN, an open stateid",
	       pu_layoutreturn(c1, &ffh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
			       &fsid, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTRETURN, the layout stateid of another file",
	       pu_layoutreturn(c1, &vfh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
			       &lsid, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTRETURN, another client's layout stateid",
	       pu_layoutreturn(c2, &f2fh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
			       &lsid, NULL),
	       NFS4ERR_BAD_STATEID);
	expect("LAYOUTRETURN FILE without a current filehandle",
	       pu_layoutreturn(c1, NULL, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
			       &lsid, NULL),
	       NFS4ERR_NOFILEHANDLE);
	expect("LAYOUTRETURN, iomode 7",
	       pu_layoutreturn(c1, &ffh, 7, LAYOUTRETURN4_FILE, 0, UINT64_MAX, &lsid, NULL),
	       NFS4ERR_BADIOMODE);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, c1);
	nfs4c_op_putfh(&c, &ffh);
	nfs4c_op_layoutreturn(&c, LAYOUT4_OSD2_OBJECTS, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0,
			      UINT64_MAX, &lsid);
	CHECK_OK(nfs4c_send(&c));
	expect("LAYOUTRETURN, the objects layout type", c.status, NFS4ERR_UNKNOWN_LAYOUTTYPE);
	nfs4c_compound_destroy(&c);
	expect("LAYOUTRETURN FSID by a client holding no layout",
	       pu_layoutreturn(c2, &f2fh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FSID, 0, 0, NULL, NULL),
	       NFS4_OK);
	expect("LAYOUTRETURN ALL by a client holding no layout",
	       pu_layoutreturn(c2, NULL, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_ALL, 0, 0, NULL, NULL),
	       NFS4_OK);
	expect("LAYOUTRETURN of a range never given",
	       pu_layoutreturn(c1, &ffh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 8192 * KIB,
			       64 * KIB, &lsid, &lsid),
	       NFS4_OK);
	CHECK(lsid.seqid != 0);
	/* what c1 holds is still held: a LAYOUTCOMMIT in it succeeds, and a
	 * WRITE through the server by c2 recalls it */
	struct nfs4c_blk_ext in = ext(64 * KIB, 4 * KIB, 0);
	expect("then a LAYOUTCOMMIT in the layout still held",
	       pu_layoutcommit(c1, &ffh, &lsid, &in, 1, UINT64_MAX, NULL), NFS4_OK);
	expect("a WRITE through the server to f by another client", c2_write(&f2fh, &f2sid, 0),
	       NFS4ERR_DELAY);
	CHECK(atomic_load(&recalls) >= 1);
	CHECK_EQ(pu_layoutreturn(c1, NULL, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_ALL, 0, 0, NULL, NULL),
		 NFS4_OK);
	expect("the same WRITE once the layouts are returned", c2_write(&f2fh, &f2sid, 0), NFS4_OK);
	TEST_PASS("LAYOUTRETURN of what was never given");

	/* 6: a return of part of a layout, or of the other iomode, leaves the
	 * rest held: a LAYOUTCOMMIT in it succeeds and a WRITE through the
	 * server to it waits for its recall */
	struct nfs4c_fh hfh, h2fh;
	struct stateid4 hsid, h2sid;
	struct pu_layout hl, hr;
	CHECK_EQ(pu_open(c1, &pn1, "h", true, OPEN4_SHARE_ACCESS_BOTH, &hfh, &hsid), NFS4_OK);
	CHECK_EQ(pu_open(c2, &pn2, "h", false, OPEN4_SHARE_ACCESS_BOTH, &h2fh, &h2sid), NFS4_OK);
	CHECK_EQ(pu_layoutget(c1, &hfh, LAYOUTIOMODE4_RW, 0, 256 * KIB, 256 * KIB, &hsid, 0, &hl),
		 NFS4_OK);
	CHECK_EQ(pu_layoutget(c1, &hfh, LAYOUTIOMODE4_READ, 0, 256 * KIB, 0, &hl.stateid, 0, &hr),
		 NFS4_OK);
	struct stateid4 hls = hr.stateid;
	expect("LAYOUTRETURN of [0, 64K) of an RW layout of [0, 256K)",
	       pu_layoutreturn(c1, &hfh, LAYOUTIOMODE4_RW, LAYOUTRETURN4_FILE, 0, 64 * KIB, &hls,
			       &hls),
	       NFS4_OK);
	CHECK(hls.seqid != 0);
	expect("LAYOUTRETURN of the READ layouts, whole file",
	       pu_layoutreturn(c1, &hfh, LAYOUTIOMODE4_READ, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
			       &hls, &hls),
	       NFS4_OK);
	CHECK(hls.seqid != 0); /* the RW layout of [64K, 256K) is left */
	struct nfs4c_blk_ext kept = ext(128 * KIB, 4 * KIB, 0);
	expect("then a LAYOUTCOMMIT of [128K, 132K)",
	       pu_layoutcommit(c1, &hfh, &hls, &kept, 1, UINT64_MAX, NULL), NFS4_OK);
	struct nfs4c_blk_ext gone = ext(0, 4 * KIB, 0);
	expect("and of [0, 4K), returned",
	       pu_layoutcommit(c1, &hfh, &hls, &gone, 1, UINT64_MAX, NULL), NFS4ERR_BADLAYOUT);
	unsigned before = atomic_load(&recalls);
	expect("a WRITE through the server into what is left, by another client",
	       c2_write(&h2fh, &h2sid, 128 * KIB), NFS4ERR_DELAY);
	CHECK(atomic_load(&recalls) > before);
	CHECK_EQ(pu_layoutreturn(c1, &hfh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
				 &hls, &hls),
		 NFS4_OK);
	CHECK_EQ(hls.seqid, 0); /* nothing left */
	expect("the same WRITE once it is returned", c2_write(&h2fh, &h2sid, 128 * KIB), NFS4_OK);
	pu_close(c1, &hfh, &hsid);
	pu_close(c2, &h2fh, &h2sid);
	TEST_PASS("a partial LAYOUTRETURN keeps the rest of the layout, and its recall");

	/* 7: a LAYOUTGET holds what it hands out, no more, and one that fails
	 * takes nothing away. "frag" has written and unwritten blocks in
	 * turn, so [0, 64K) is 16 extents; a maxcount of 108 bytes leaves
	 * room for one (64 bytes of the rest of the reply, 44 per extent) */
	struct nfs4c_fh qfh;
	struct stateid4 qsid;
	struct pu_layout ql, qg;
	CHECK_EQ(pu_open(c1, &pn1, "frag", true, OPEN4_SHARE_ACCESS_BOTH, &qfh, &qsid), NFS4_OK);
	for (uint64_t o = 0; o < 64 * KIB; o += 8 * KIB)
		CHECK_EQ(pu_write(c1, &qfh, &qsid, o, victim, 4 * KIB, FILE_SYNC4), NFS4_OK);
	CHECK_EQ(pu_layoutget(c1, &qfh, LAYOUTIOMODE4_RW, 0, 16 * KIB, 16 * KIB, &qsid, 0, &ql),
		 NFS4_OK);
	CHECK_EQ(ql.n, 4);
	expect("LAYOUTGET RW [0, 64K), minlength 64K, room for one extent",
	       pu_layoutget(c1, &qfh, LAYOUTIOMODE4_RW, 0, 64 * KIB, 64 * KIB, &ql.stateid, 108,
			    NULL),
	       NFS4ERR_LAYOUTTRYLATER);
	struct nfs4c_blk_ext q4 = ext(4 * KIB, 4 * KIB, 0);
	expect("then a LAYOUTCOMMIT in the layout of [0, 16K) held before",
	       pu_layoutcommit(c1, &qfh, &ql.stateid, &q4, 1, UINT64_MAX, NULL), NFS4_OK);
	CHECK_EQ(pu_layoutget(c1, &qfh, LAYOUTIOMODE4_RW, 32 * KIB, 32 * KIB, 4 * KIB, &ql.stateid,
			      108, &qg),
		 NFS4_OK);
	printf("LAYOUTGET RW [32K, 64K), room for one extent: [%llu, +%llu), %u extent\n",
	       (unsigned long long)qg.off, (unsigned long long)qg.len, qg.n);
	CHECK(qg.n == 1 && qg.off == 32 * KIB && qg.len == 4 * KIB);
	struct nfs4c_blk_ext q40 = ext(40 * KIB, 4 * KIB, 0);
	expect("a LAYOUTCOMMIT of [40K, 44K), asked for but not handed out",
	       pu_layoutcommit(c1, &qfh, &qg.stateid, &q40, 1, UINT64_MAX, NULL),
	       NFS4ERR_BADLAYOUT);
	CHECK_EQ(pu_layoutreturn(c1, &qfh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
				 &qg.stateid, NULL),
		 NFS4_OK);
	pu_close(c1, &qfh, &qsid);
	TEST_PASS("a LAYOUTGET holds what it hands out; one that fails keeps what was held");

	pu_close(c1, &vfh, &vsid);
	pu_close(c1, &ffh, &fsid);
	pu_close(c1, &gfh, &gsid);
	pu_close(c1, &pfh, &psid);
	pu_close(c2, &f2fh, &f2sid);
	pu_client_end(c1);
	pu_client_end(c2);
	free(victim);
	free(buf);
	pu_finish(&srv);
	TEST_PASS("hostile layout operations");
	return 0;
}
