/*
 * test_nfs4_open.c - OPEN over NFSv4.1 against jnfsd, answered as RFC 8881
 * and the Linux server answer it.
 *
 *   test-nfs4-open JNFSD JNFS [recc|attrset|owner|sharetrunc]
 *
 * (one case only when named).
 *
 * Cases:
 *   - RECLAIM_COMPLETE (§18.51.3): a client that has not sent it gets
 *     GRACE for every OPEN that is not a reclaim (CLAIM_NULL with and
 *     without create, CLAIM_FH), though no grace period is running; its
 *     reclaim (CLAIM_PREVIOUS) is NO_GRACE, as out of grace; once it sent
 *     RECLAIM_COMPLETE the same OPENs work;
 *   - attrset (§18.16.3, §18.16.4): OPEN(CREATE) names the attributes it
 *     set: the mode for UNCHECKED4 and GUARDED4, of an existing file only
 *     the size it truncated (to 0: another size is not applied), the owner
 *     only when root sent it; EXCLUSIVE4 and EXCLUSIVE4_1 add time_access
 *     and time_modify, which hold the verifier, in the reply to a
 *     retransmission too. A client that, as
 *     Linux does, sets the times attrset names to the server's clock ends
 *     with times no older than the directory's change by the create;
 *   - the owner's mode bits (docs/permissions.md, rule 3 of
 *     src/srv/perm.h): an existing file is opened only with the access
 *     its mode gives, to its owner too (0477: no write, 0077: no read),
 *     denying reads to others needs write permission, and an UNCHECKED4
 *     create with size 0 of such a file truncates nothing, nor does one
 *     for reading only (INVAL); a file the OPEN created (or whose
 *     exclusive create it retransmits) is the owner's whatever its mode;
 *     WRITE and SETATTR of the size keep their owner override; LOOKUP,
 *     LOOKUPP and READDIR in a directory the caller may not search or
 *     read are ACCESS, each refusal counted in srv.perm_denied (the
 *     counter NFSv3's refusals bump: both go through src/srv/vfs.h);
 *   - truncation and share reservations: an UNCHECKED4 create with size 0
 *     that another client's deny of writes refuses (SHARE_DENIED) has cut
 *     nothing, as a refused upgrade of the owner's own open has not (its
 *     stateid unchanged); a granted one truncates, an upgrade of the
 *     owner's read open too (its stateid moved once).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nfs4_test.h"

#define OWNER_UID 1001u
#define OTHER_UID 1003u

static struct nfs4t_server srv;
static struct nfs4c_client *root_cl;
static struct nfs4c_fh root, dir;

static void kill_server(void)
{
	if (srv.j.pid > 0)
		kill(srv.j.pid, SIGKILL);
}

static struct rpc_cred cred_of(uint32_t uid)
{
	struct rpc_cred cr = {.flavor = RPC_AUTH_SYS, .uid = uid, .gid = uid};
	strcpy(cr.machine, "test-nfs4-open");
	return cr;
}

/* What an OPEN answered. */
struct opened {
	nfsstat4 st;
	struct stateid4 sid;
	bitmap4 attrset;
	struct nfs4c_fh fh;
};

/* PUTFH fh (the directory, or the file for CLAIM_FH), OPEN o, GETFH, as
 * cr (NULL: the client's). */
static struct opened open_as(struct nfs4c_client *cl, const struct rpc_cred *cr,
			     const struct nfs4c_fh *fh, const struct nfs4c_open *o)
{
	struct opened r = {0};
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	c.cred = cr;
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_open(&c, o);
	nfs4c_op_getfh(&c);
	r.st = nfs4t_send(&c);
	if (r.st == NFS4_OK) {
		const struct OPEN4resok *ok = &nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4;
		r.sid = ok->stateid;
		r.attrset = ok->attrset;
		CHECK_OK(nfs4c_res_fh(&c, &r.fh));
	}
	nfs4c_compound_destroy(&c);
	return r;
}

static struct nfs4c_open open_args(const char *name, uint32_t access)
{
	return (struct nfs4c_open){.owner = "open-owner",
				   .owner_len = 10,
				   .access = access,
				   .deny = OPEN4_SHARE_DENY_NONE,
				   .claim = CLAIM_NULL,
				   .name = name};
}

static void close_as(const struct rpc_cred *cr, const struct opened *o)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, root_cl);
	c.cred = cr;
	nfs4c_op_putfh(&c, &o->fh);
	nfs4c_op_close(&c, &o->sid);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
}

/* Is exactly bits[0..n) set in b? */
static bool bm_is(const bitmap4 *b, const unsigned *bits, unsigned n)
{
	bitmap4 want = {0};
	for (unsigned i = 0; i < n; i++)
		nfs4c_bitmap_set(&want, bits[i]);
	for (unsigned w = 0; w < 32; w++) {
		uint32_t have = w < b->len ? b->val[w] : 0;
		uint32_t need = w < want.len ? want.val[w] : 0;
		if (have != need) {
			fprintf(stderr, "attrset word %u is %#x, not %#x\n", w, have, need);
			return false;
		}
	}
	return true;
}

static void setattr_as(const struct rpc_cred *cr, const struct nfs4c_fh *fh,
		       const struct stateid4 *sid, const struct nfs4c_sattr *sa, nfsstat4 want)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, root_cl);
	c.cred = cr;
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_setattr(&c, sid, sa);
	CHECK_EQ(nfs4t_send(&c), want);
	nfs4c_compound_destroy(&c);
}

/* ---- RECLAIM_COMPLETE ---- */

static void test_reclaim_complete(void)
{
	struct nfs4c_cfg cfg;
	struct nfs4c_client *cl;
	nfs4c_cfg_default(&cfg);
	cfg.addr = srv.addr;
	cfg.owner = "open-no-recc";
	cfg.cred.uid = cfg.cred.gid = 0;
	CHECK_OK(nfs4c_create(&cfg, &cl));
	CHECK_EQ(nfs4c_exchange_id(cl), NFS4_OK);
	CHECK_EQ(nfs4c_create_session(cl), NFS4_OK);

	/* no grace period runs: jnfsd knew no client before */
	struct nfs4c_open o = open_args("recc", OPEN4_SHARE_ACCESS_BOTH);
	o.create = true;
	o.how = UNCHECKED4;
	CHECK_EQ(open_as(cl, NULL, &dir, &o).st, NFS4ERR_GRACE);
	CHECK_EQ(nfs4t_exists(cl, &dir, "recc"), NFS4ERR_NOENT); /* nothing was made */
	struct nfs4c_open plain = open_args("exists", OPEN4_SHARE_ACCESS_READ);
	CHECK_EQ(open_as(cl, NULL, &dir, &plain).st, NFS4ERR_GRACE);
	struct nfs4c_fh fh;
	nfs4t_lookup(cl, &dir, "exists", &fh);
	struct nfs4c_open byfh = open_args(NULL, OPEN4_SHARE_ACCESS_READ);
	byfh.claim = CLAIM_FH;
	CHECK_EQ(open_as(cl, NULL, &fh, &byfh).st, NFS4ERR_GRACE);
	/* a reclaim is no new state: out of grace it is NO_GRACE */
	struct nfs4c_open prev = byfh;
	prev.claim = CLAIM_PREVIOUS;
	prev.prev_deleg = OPEN_DELEGATE_NONE;
	CHECK_EQ(open_as(cl, NULL, &fh, &prev).st, NFS4ERR_NO_GRACE);

	CHECK_EQ(nfs4c_reclaim_complete(cl, false), NFS4_OK);
	struct opened r = open_as(cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &r.fh);
	nfs4c_op_close(&c, &r.sid);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	r = open_as(cl, NULL, &fh, &byfh);
	CHECK_EQ(r.st, NFS4_OK);
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &r.fh);
	nfs4c_op_close(&c, &r.sid);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	nfs4t_unmount(cl);
	printf("reclaim_complete: GRACE before it, NO_GRACE for a reclaim, OPEN after it\n");
}

/* ---- attrset ---- */

static void test_attrset(void)
{
	const unsigned mode[] = {FATTR4_MODE};
	const unsigned size[] = {FATTR4_SIZE};
	const unsigned times[] = {FATTR4_TIME_ACCESS, FATTR4_TIME_MODIFY};
	const unsigned mode_times[] = {FATTR4_MODE, FATTR4_TIME_ACCESS, FATTR4_TIME_MODIFY};
	const unsigned mode_owner[] = {FATTR4_MODE, FATTR4_OWNER};
	struct rpc_cred owner = cred_of(OWNER_UID);

	/* UNCHECKED4 and GUARDED4 of a new file: the mode */
	struct nfs4c_open o = open_args("unchecked", OPEN4_SHARE_ACCESS_BOTH);
	o.create = true;
	o.how = UNCHECKED4;
	o.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_MODE, .mode = 0640};
	struct opened r = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	CHECK(bm_is(&r.attrset, mode, 1));
	close_as(NULL, &r);
	/* the same again: the file is there, nothing is set */
	r = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	CHECK(bm_is(&r.attrset, NULL, 0));
	close_as(NULL, &r);
	/* with size 0 too: only the size applies to an existing file */
	o.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_MODE | NFS4C_SA_SIZE, .mode = 0600};
	r = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	CHECK(bm_is(&r.attrset, size, 1));
	close_as(NULL, &r);
	struct nfs4c_attr at;
	nfs4t_getattr(root_cl, &r.fh, &at);
	CHECK_EQ(at.mode & 07777, 0640);
	/* a size other than 0 is not applied to an existing file (RFC 8881
	 * §18.16.3: UNCHECKED4 truncates; as Linux): nothing set */
	o.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_SIZE, .size = 7};
	r = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	CHECK(bm_is(&r.attrset, NULL, 0));
	close_as(NULL, &r);
	nfs4t_getattr(root_cl, &r.fh, &at);
	CHECK_EQ(at.size, 0);

	o.name = "guarded";
	o.how = GUARDED4;
	o.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_MODE, .mode = 0600};
	r = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	CHECK(bm_is(&r.attrset, mode, 1));
	close_as(NULL, &r);

	/* an owner sent by root is set; by anyone else it is not */
	o.name = "owned-by-root";
	o.how = UNCHECKED4;
	o.attrs = (struct nfs4c_sattr){
		.set = NFS4C_SA_MODE | NFS4C_SA_UID, .mode = 0644, .uid = OTHER_UID};
	r = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	CHECK(bm_is(&r.attrset, mode_owner, 2));
	close_as(NULL, &r);
	nfs4t_getattr(root_cl, &r.fh, &at);
	CHECK_EQ(at.uid, OTHER_UID);
	o.name = "owned-by-owner";
	r = open_as(root_cl, &owner, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	CHECK(bm_is(&r.attrset, mode, 1));
	close_as(&owner, &r);
	nfs4t_getattr(root_cl, &r.fh, &at);
	CHECK_EQ(at.uid, OWNER_UID);

	/* EXCLUSIVE4: the times hold the verifier */
	o.name = "excl4";
	o.how = EXCLUSIVE4;
	o.attrs = (struct nfs4c_sattr){0};
	memcpy(o.verf, "verf-ex4", 8);
	r = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	CHECK(bm_is(&r.attrset, times, 2));
	close_as(NULL, &r);

	/* EXCLUSIVE4_1 with a mode: the mode and the times, again for a
	 * retransmission of the create */
	struct nfs4c_attr before;
	nfs4t_getattr(root_cl, &dir, &before);
	o.name = "excl41";
	o.how = EXCLUSIVE4_1;
	o.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_MODE, .mode = 0600};
	memcpy(o.verf, "verf-e41", 8);
	r = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	CHECK(bm_is(&r.attrset, mode_times, 3));
	struct opened again = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(again.st, NFS4_OK);
	CHECK(bm_is(&again.attrset, mode_times, 3));
	/* a client that resets the times attrset names, as Linux does after
	 * an exclusive create, to the server's clock */
	struct nfs4c_sattr now = {0};
	if (nfs4c_bitmap_isset(&r.attrset, FATTR4_TIME_ACCESS)) {
		now.set |= NFS4C_SA_ATIME;
		now.atime_now = true;
	}
	if (nfs4c_bitmap_isset(&r.attrset, FATTR4_TIME_MODIFY)) {
		now.set |= NFS4C_SA_MTIME;
		now.mtime_now = true;
	}
	if (now.set)
		setattr_as(NULL, &r.fh, &again.sid, &now, NFS4_OK);
	close_as(NULL, &again);
	struct nfs4c_attr made, dnow;
	nfs4t_getattr(root_cl, &r.fh, &made);
	nfs4t_getattr(root_cl, &dir, &dnow);
	CHECK(dnow.change != before.change); /* the create changed the directory */
	/* the file's times are of the server's clock, not the verifier's: no
	 * older than the directory's change by the create */
	if (made.mtime.seconds < dnow.mtime.seconds || made.atime.seconds < dnow.mtime.seconds)
		fprintf(stderr,
			"times after an exclusive create: atime %lld, mtime %lld, dir %lld\n",
			(long long)made.atime.seconds, (long long)made.mtime.seconds,
			(long long)dnow.mtime.seconds);
	CHECK(made.mtime.seconds >= dnow.mtime.seconds);
	CHECK(made.atime.seconds >= dnow.mtime.seconds);
	CHECK_EQ(made.mode & 07777, 0600);
	printf("attrset: what was set, and the verifier's times for exclusive creates\n");
}

/* ---- the owner's mode bits ---- */

/* A file of the owner with mode and some data, made by root. */
static void owner_file(const char *name, uint32_t mode, struct nfs4c_fh *fh)
{
	struct stateid4 sid;
	nfs4t_open_create(root_cl, &dir, name, "setup-owner", fh, &sid);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, root_cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_write(&c, &sid, 0, FILE_SYNC4, "data", 4);
	struct nfs4c_sattr sa = {.set = NFS4C_SA_UID | NFS4C_SA_GID | NFS4C_SA_MODE,
				 .uid = OWNER_UID,
				 .gid = OWNER_UID,
				 .mode = mode};
	nfs4c_op_setattr(&c, &sid, &sa);
	nfs4c_op_close(&c, &sid);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
}

static void test_owner_mode(void)
{
	struct rpc_cred owner = cred_of(OWNER_UID);
	struct nfs4c_fh f477, f077;
	owner_file("m0477", 0477, &f477);
	owner_file("m0077", 0077, &f077);

	/* a size sent with an UNCHECKED4 create of an existing file asks for
	 * a truncation: only an OPEN for writing may have one */
	struct nfs4c_open t = open_args("m0477", OPEN4_SHARE_ACCESS_READ);
	t.create = true;
	t.how = UNCHECKED4;
	t.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_SIZE, .size = 0};
	CHECK_EQ(open_as(root_cl, NULL, &dir, &t).st, NFS4ERR_INVAL);
	struct nfs4c_attr at;
	nfs4t_getattr(root_cl, &f477, &at);
	CHECK_EQ(at.size, 4);

	/* 0477: the owner may read, not write */
	struct nfs4c_open o = open_args("m0477", OPEN4_SHARE_ACCESS_WRITE);
	CHECK_EQ(open_as(root_cl, &owner, &dir, &o).st, NFS4ERR_ACCESS);
	o.access = OPEN4_SHARE_ACCESS_BOTH;
	CHECK_EQ(open_as(root_cl, &owner, &dir, &o).st, NFS4ERR_ACCESS);
	struct nfs4c_open byfh = open_args(NULL, OPEN4_SHARE_ACCESS_WRITE);
	byfh.claim = CLAIM_FH;
	CHECK_EQ(open_as(root_cl, &owner, &f477, &byfh).st, NFS4ERR_ACCESS);
	/* an UNCHECKED4 create with size 0: refused, and nothing truncated */
	o.create = true;
	o.how = UNCHECKED4;
	o.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_SIZE, .size = 0};
	CHECK_EQ(open_as(root_cl, &owner, &dir, &o).st, NFS4ERR_ACCESS);
	nfs4t_getattr(root_cl, &f477, &at);
	CHECK_EQ(at.size, 4);
	/* denying others' reads needs write permission */
	o = open_args("m0477", OPEN4_SHARE_ACCESS_READ);
	o.deny = OPEN4_SHARE_DENY_READ;
	CHECK_EQ(open_as(root_cl, &owner, &dir, &o).st, NFS4ERR_ACCESS);
	o.deny = OPEN4_SHARE_DENY_WRITE;
	struct opened r = open_as(root_cl, &owner, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	close_as(&owner, &r);
	o.deny = OPEN4_SHARE_DENY_NONE;
	r = open_as(root_cl, &owner, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	/* WRITE and SETATTR of the size keep the owner's override (rule 3):
	 * with the anonymous stateid, as NFSv3 has them */
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, root_cl);
	c.cred = &owner;
	nfs4c_op_putfh(&c, &f477);
	struct stateid4 anon = {0};
	nfs4c_op_write(&c, &anon, 4, FILE_SYNC4, "more", 4);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	struct nfs4c_sattr trunc = {.set = NFS4C_SA_SIZE, .size = 6};
	setattr_as(&owner, &f477, NULL, &trunc, NFS4_OK);
	nfs4t_getattr(root_cl, &f477, &at);
	CHECK_EQ(at.size, 6);
	close_as(&owner, &r);

	/* 0077: the owner may neither read nor write; root may */
	o = open_args("m0077", OPEN4_SHARE_ACCESS_READ);
	CHECK_EQ(open_as(root_cl, &owner, &dir, &o).st, NFS4ERR_ACCESS);
	o.access = OPEN4_SHARE_ACCESS_BOTH;
	r = open_as(root_cl, NULL, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	close_as(NULL, &r);

	/* a file the OPEN creates is the owner's whatever its mode, also when
	 * the exclusive create is sent again */
	o = open_args("made0444", OPEN4_SHARE_ACCESS_BOTH);
	o.create = true;
	o.how = EXCLUSIVE4_1;
	o.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_MODE, .mode = 0444};
	memcpy(o.verf, "verf-own", 8);
	r = open_as(root_cl, &owner, &dir, &o);
	CHECK_EQ(r.st, NFS4_OK);
	struct opened again = open_as(root_cl, &owner, &dir, &o);
	CHECK_EQ(again.st, NFS4_OK);
	close_as(&owner, &again);
	/* opened again later, without create: its mode decides */
	o = open_args("made0444", OPEN4_SHARE_ACCESS_WRITE);
	CHECK_EQ(open_as(root_cl, &owner, &dir, &o).st, NFS4ERR_ACCESS);
	o.create = true;
	o.how = UNCHECKED4;
	o.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_MODE, .mode = 0644};
	CHECK_EQ(open_as(root_cl, &owner, &dir, &o).st, NFS4ERR_ACCESS);
	printf("owner: mode bits checked for an existing file, not for one just made\n");

	/* the rules are src/srv's for every protocol, and so is their count:
	 * LOOKUP, LOOKUPP and READDIR in root's 0700 directory are ACCESS for
	 * another caller, each counted in srv.perm_denied as NFSv3's are */
	struct nfs4c_fh d700;
	struct nfs4c_compound c2;
	nfs4c_compound_init(&c2, root_cl);
	nfs4c_op_putfh(&c2, &dir);
	struct nfs4c_sattr m700 = {.set = NFS4C_SA_MODE, .mode = 0700};
	nfs4c_op_create(&c2, NF4DIR, "d0700", NULL, NULL, &m700);
	CHECK_EQ(nfs4t_send(&c2), NFS4_OK);
	nfs4c_compound_destroy(&c2);
	nfs4t_lookup(root_cl, &dir, "d0700", &d700);
	uint64_t denied0 = tc_jnfsd_stat(&srv.j, "srv.perm_denied");
	for (int op = 0; op < 3; op++) {
		nfs4c_compound_init(&c2, root_cl);
		c2.cred = &owner;
		nfs4c_op_putfh(&c2, &d700);
		if (op == 0)
			nfs4c_op_lookup(&c2, "x");
		else if (op == 1)
			nfs4c_op_lookupp(&c2);
		else
			nfs4c_op_readdir(&c2, 0, NULL, 4096, 4096, NULL);
		CHECK_EQ(nfs4t_send(&c2), NFS4ERR_ACCESS);
		nfs4c_compound_destroy(&c2);
	}
	CHECK_EQ(tc_jnfsd_stat(&srv.j, "srv.perm_denied"), denied0 + 3);
	printf("owner: NFSv4's refusals outside OPEN are counted as NFSv3's\n");
}

/* ---- truncation and share reservations ---- */

/* OPEN(CREATE UNCHECKED4) of name with size 0 (a truncation), by owner. */
static struct nfs4c_open trunc_args(const char *name, const char *owner, uint32_t access)
{
	struct nfs4c_open o = open_args(name, access);
	o.owner = owner;
	o.owner_len = (uint32_t)strlen(owner);
	o.create = true;
	o.how = UNCHECKED4;
	o.attrs = (struct nfs4c_sattr){.set = NFS4C_SA_SIZE, .size = 0};
	return o;
}

static void write_as(struct nfs4c_client *cl, const struct opened *o, nfsstat4 want)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &o->fh);
	nfs4c_op_write(&c, &o->sid, 0, FILE_SYNC4, "data", 4);
	CHECK_EQ(nfs4t_send(&c), want);
	nfs4c_compound_destroy(&c);
}

static uint64_t size_of(const struct nfs4c_fh *fh)
{
	struct nfs4c_attr at;
	nfs4t_getattr(root_cl, fh, &at);
	return at.size;
}

static void test_share_trunc(void)
{
	const unsigned size[] = {FATTR4_SIZE};
	struct nfs4c_fh broot;
	struct nfs4c_client *b = nfs4t_client(srv.addr, "open-trunc-b", &broot);

	/* client A holds "t" open denying writes, with 4 bytes in it */
	struct nfs4c_open ao = open_args("t", OPEN4_SHARE_ACCESS_BOTH);
	ao.owner = "owner-a";
	ao.owner_len = 7;
	ao.deny = OPEN4_SHARE_DENY_WRITE;
	ao.create = true;
	ao.how = UNCHECKED4;
	struct opened a = open_as(root_cl, NULL, &dir, &ao);
	CHECK_EQ(a.st, NFS4_OK);
	write_as(root_cl, &a, NFS4_OK);
	CHECK_EQ(size_of(&a.fh), 4);

	/* client B's truncating OPEN for writing is refused: nothing is cut
	 * by an OPEN that fails (the share is taken before the truncation) */
	struct nfs4c_open bo = trunc_args("t", "owner-b", OPEN4_SHARE_ACCESS_WRITE);
	CHECK_EQ(open_as(b, NULL, &dir, &bo).st, NFS4ERR_SHARE_DENIED);
	CHECK_EQ(size_of(&a.fh), 4);
	/* nor by a refused upgrade of B's own read open */
	struct nfs4c_open br = open_args("t", OPEN4_SHARE_ACCESS_READ);
	br.owner = "owner-b";
	br.owner_len = 7;
	struct opened bread = open_as(b, NULL, &dir, &br);
	CHECK_EQ(bread.st, NFS4_OK);
	CHECK_EQ(open_as(b, NULL, &dir, &bo).st, NFS4ERR_SHARE_DENIED);
	CHECK_EQ(size_of(&a.fh), 4);
	write_as(b, &bread, NFS4ERR_OPENMODE); /* still a read open */
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, b);
	nfs4c_op_putfh(&c, &bread.fh);
	nfs4c_op_close(&c, &bread.sid);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK); /* its stateid did not move */
	nfs4c_compound_destroy(&c);

	/* once A closed, the same OPEN truncates */
	close_as(NULL, &a);
	struct opened bt = open_as(b, NULL, &dir, &bo);
	CHECK_EQ(bt.st, NFS4_OK);
	CHECK(bm_is(&bt.attrset, size, 1));
	CHECK_EQ(size_of(&bt.fh), 0);
	write_as(b, &bt, NFS4_OK);
	CHECK_EQ(size_of(&bt.fh), 4);

	/* an owner upgrading its own read open to both with size 0: the
	 * upgrade truncates, its stateid moves once, and it writes */
	struct nfs4c_open up = open_args("t", OPEN4_SHARE_ACCESS_READ);
	up.owner = "owner-up";
	up.owner_len = 8;
	struct opened r = open_as(root_cl, NULL, &dir, &up);
	CHECK_EQ(r.st, NFS4_OK);
	struct nfs4c_open upt = trunc_args("t", "owner-up", OPEN4_SHARE_ACCESS_BOTH);
	struct opened u = open_as(root_cl, NULL, &dir, &upt);
	CHECK_EQ(u.st, NFS4_OK);
	CHECK(bm_is(&u.attrset, size, 1));
	CHECK(memcmp(u.sid.other, r.sid.other, sizeof(r.sid.other)) == 0);
	CHECK_EQ(u.sid.seqid, r.sid.seqid + 1);
	CHECK_EQ(size_of(&u.fh), 0);
	write_as(root_cl, &u, NFS4_OK);
	CHECK_EQ(size_of(&u.fh), 4);
	close_as(NULL, &u);

	nfs4c_compound_init(&c, b);
	nfs4c_op_putfh(&c, &bt.fh);
	nfs4c_op_close(&c, &bt.sid);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	nfs4t_unmount(b);
	printf("share_trunc: a refused OPEN truncates nothing; one granted does\n");
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr,
			"usage: test-nfs4-open JNFSD JNFS [recc|attrset|owner|sharetrunc]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	const char *dirs[] = {"d", NULL};
	nfs4t_server_init(&srv, argv[1], argv[2], 128, dirs,
			  "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n");
	nfs4t_server_start(&srv, NULL);
	atexit(kill_server);
	root_cl = nfs4t_client(srv.addr, "open-root", &root);
	nfs4t_lookup(root_cl, &root, "d", &dir);
	struct nfs4c_sattr all = {.set = NFS4C_SA_MODE, .mode = 0777};
	setattr_as(NULL, &dir, NULL, &all, NFS4_OK);
	struct nfs4c_fh fh;
	struct stateid4 sid;
	nfs4t_open_create(root_cl, &dir, "exists", "setup-owner", &fh, &sid);
	nfs4t_close(root_cl, &fh, &sid);

	const char *only = argc == 4 ? argv[3] : NULL;
	if (!only || strcmp(only, "recc") == 0)
		test_reclaim_complete();
	if (!only || strcmp(only, "attrset") == 0)
		test_attrset();
	if (!only || strcmp(only, "owner") == 0)
		test_owner_mode();
	if (!only || strcmp(only, "sharetrunc") == 0)
		test_share_trunc();

	nfs4t_unmount(root_cl);
	nfs4t_server_fini(&srv);
	printf("test-nfs4-open: ok\n");
	return 0;
}
