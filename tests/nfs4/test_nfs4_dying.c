/*
 * test_nfs4_dying.c - OPEN, LOCK and LAYOUTGET meeting the state they
 * would reuse on its way out: NFS4ERR_DELAY, then, once it is gone, a
 * retry that makes new state which works.
 *
 *   test-nfs4-dying JNFSD JNFS
 *
 * An open, a lock stateid and a layout are each found by the op layer in
 * a table of its own, keyed by (owner, file) or (client, file), and live
 * until their stateid's payload is released. Between the stateid's end
 * (CLOSE, FREE_STATEID, LAYOUTRETURN) and that release, the entry is
 * still in the table but no longer takes a reference (stateid.h
 * invariant 6): an OPEN, LOCK or LAYOUTGET of the same owner and file
 * that made new state then would lose it to the pending release (the
 * release closes the owner's share, drops the owner's locks, returns the
 * client's layout leases of the file), so they answer DELAY. That moment
 * is short; jnfsd --test-hold-ends makes it last: SIGUSR2 holds back the
 * releases of the stateids that end, a second SIGUSR2 lets them run.
 *
 * Cases, each on a file of its own:
 *  1. OPEN: an open closed while releases are held; the same owner's
 *     OPEN of the file is DELAY (and stays so: a second try too); once
 *     released, the OPEN succeeds with a new stateid, and the share it
 *     asked for (deny WRITE) is in force: another owner's OPEN for
 *     writing is SHARE_DENIED, and a WRITE under the new stateid works.
 *  2. LOCK: a lock stateid freed (LOCKU, FREE_STATEID) while releases
 *     are held; a LOCK of the same lock owner through the open is DELAY;
 *     once released, the LOCK succeeds with a new lock stateid, and the
 *     lock is held: another client's LOCK of the range is DENIED, and
 *     LOCKU with the new stateid succeeds.
 *  3. LAYOUTGET: a layout returned while releases are held; the client's
 *     LAYOUTGET of the file is DELAY; once released, the LAYOUTGET gets
 *     a new layout stateid with one extent, which LAYOUTRETURN accepts.
 * jnfsd stops cleanly at the end (in the ASan build: its leak check).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nfs4_test.h"

static struct nfs4t_server srv;
static struct nfs4c_client *a, *b;
static struct nfs4c_fh root, dir;

static void kill_server(void)
{
	if (srv.j.pid > 0)
		kill(srv.j.pid, SIGKILL);
}

static void hold_ends(bool on)
{
	tc_jnfsd_signal(&srv.j, SIGUSR2, on ? "stateid ends held" : "stateid ends released");
}

static bool same_other(const struct stateid4 *x, const struct stateid4 *y)
{
	return !memcmp(x->other, y->other, sizeof(x->other));
}

/* OPEN (no create) of name in dir by owner with access and deny: the
 * status, and the stateid when OK. */
static nfsstat4 open_as(struct nfs4c_client *cl, const char *name, const char *owner,
			uint32_t access, uint32_t deny, struct stateid4 *sid)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &dir);
	struct nfs4c_open o = {.owner = owner,
			       .owner_len = (uint32_t)strlen(owner),
			       .access = access,
			       .deny = deny,
			       .claim = CLAIM_NULL,
			       .name = name};
	nfs4c_op_open(&c, &o);
	nfsstat4 st = nfs4t_send(&c);
	if (st == NFS4_OK)
		*sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	nfs4c_compound_destroy(&c);
	return st;
}

static nfsstat4 write_under(const struct nfs4c_fh *fh, const struct stateid4 *sid)
{
	static const char data[] = "dying";
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_write(&c, sid, 0, FILE_SYNC4, data, sizeof(data));
	nfsstat4 st = nfs4t_send(&c);
	nfs4c_compound_destroy(&c);
	return st;
}

/* LOCK of [0, 10) for writing: a new lock owner through an open stateid,
 * or an existing lock stateid (open NULL). */
static nfsstat4 lock(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
		     const struct stateid4 *open, const char *owner, const struct stateid4 *lsid,
		     struct stateid4 *out)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	struct nfs4c_lock l = {.type = WRITE_LT, .off = 0, .len = 10};
	if (open) {
		l.new_owner = true;
		l.open_stateid = *open;
		l.owner = owner;
		l.owner_len = (uint32_t)strlen(owner);
	} else {
		l.lock_stateid = *lsid;
	}
	nfs4c_op_lock(&c, &l);
	nfsstat4 st = nfs4t_send(&c);
	if (st == NFS4_OK && out)
		*out = nfs4c_res(&c, OP_LOCK, 0)->oplock.resok4.lock_stateid;
	nfs4c_compound_destroy(&c);
	return st;
}

/* ---- 1. OPEN ---- */

static void open_dying(void)
{
	struct nfs4c_fh fh;
	struct stateid4 old, again, other;
	nfs4t_open_create(a, &dir, "open", "owner-1", &fh, &old);
	hold_ends(true);
	nfs4t_close(a, &fh, &old);
	/* the open of (owner-1, open) is on its way out: DELAY, every time */
	CHECK_EQ(open_as(a, "open", "owner-1", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE,
			 &again),
		 NFS4ERR_DELAY);
	CHECK_EQ(open_as(a, "open", "owner-1", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE,
			 &again),
		 NFS4ERR_DELAY);
	hold_ends(false);
	CHECK_EQ(open_as(a, "open", "owner-1", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE,
			 &again),
		 NFS4_OK);
	CHECK(!same_other(&again, &old)); /* a new open, not the one that went */
	CHECK_EQ(again.seqid, 1);
	/* its share reservation holds: deny WRITE keeps another owner (of
	 * another client) from writing, and it may write itself */
	CHECK_EQ(open_as(b, "open", "owner-2", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_NONE,
			 &other),
		 NFS4ERR_SHARE_DENIED);
	CHECK_EQ(write_under(&fh, &again), NFS4_OK);
	nfs4t_close(a, &fh, &again);
	/* and it is gone with its CLOSE: the other owner may write now */
	CHECK_EQ(open_as(b, "open", "owner-2", OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_NONE,
			 &other),
		 NFS4_OK);
	nfs4t_close(b, &fh, &other);
	printf("ok OPEN of an open on its way out: DELAY, then a new open whose share holds\n");
}

/* ---- 2. LOCK ---- */

static void lock_dying(void)
{
	struct nfs4c_fh fh, fh_b;
	struct stateid4 osid, osid_b, l1, l1u, l2, l2u, lb, lbu;
	nfs4t_open_create(a, &dir, "lock", "owner-1", &fh, &osid);
	CHECK_EQ(lock(a, &fh, &osid, "locker", NULL, &l1), NFS4_OK);
	CHECK_EQ(nfs4t_stateid_op(a, &fh, OP_LOCKU, &l1, &l1u), NFS4_OK);
	hold_ends(true);
	CHECK_EQ(nfs4t_stateid_op(a, &fh, OP_FREE_STATEID, &l1u, NULL), NFS4_OK);
	/* the lock stateid of (locker, lock) is on its way out */
	CHECK_EQ(lock(a, &fh, &osid, "locker", NULL, &l2), NFS4ERR_DELAY);
	CHECK_EQ(lock(a, &fh, &osid, "locker", NULL, &l2), NFS4ERR_DELAY);
	hold_ends(false);
	CHECK_EQ(lock(a, &fh, &osid, "locker", NULL, &l2), NFS4_OK);
	CHECK(!same_other(&l2, &l1));
	/* the lock holds: another client cannot take the range */
	nfs4t_open_create(b, &dir, "lock", "owner-2", &fh_b, &osid_b);
	CHECK_EQ(lock(b, &fh_b, &osid_b, "locker-b", NULL, NULL), NFS4ERR_DENIED);
	CHECK_EQ(nfs4t_stateid_op(a, &fh, OP_LOCKU, &l2, &l2u), NFS4_OK);
	CHECK_EQ(lock(b, &fh_b, &osid_b, "locker-b", NULL, &lb), NFS4_OK);
	CHECK_EQ(nfs4t_stateid_op(b, &fh_b, OP_LOCKU, &lb, &lbu), NFS4_OK);
	nfs4t_close(b, &fh_b, &osid_b);
	nfs4t_close(a, &fh, &osid);
	printf("ok LOCK of a lock stateid on its way out: DELAY, then a new lock that holds\n");
}

/* ---- 3. LAYOUTGET ---- */

static nfsstat4 layoutget(const struct nfs4c_fh *fh, const struct stateid4 *sid,
			  struct stateid4 *out)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_RW, 0, 1 << 20, 4096, sid, 4096);
	nfsstat4 st = nfs4t_send(&c);
	if (st == NFS4_OK) {
		const struct LAYOUTGET4resok *ok =
			&nfs4c_res(&c, OP_LAYOUTGET, 0)->oplayoutget.logr_resok4;
		CHECK_EQ(ok->logr_layout.len, 1);
		CHECK_EQ(ok->logr_layout.val[0].lo_content.loc_type, LAYOUT4_BLOCK_VOLUME);
		CHECK_EQ(ok->logr_layout.val[0].lo_iomode, LAYOUTIOMODE4_RW);
		*out = ok->logr_stateid;
	}
	nfs4c_compound_destroy(&c);
	return st;
}

static nfsstat4 layoutreturn(const struct nfs4c_fh *fh, const struct stateid4 *sid)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0,
			      UINT64_MAX, sid);
	nfsstat4 st = nfs4t_send(&c);
	if (st == NFS4_OK)
		CHECK(!nfs4c_res(&c, OP_LAYOUTRETURN, 0)->oplayoutreturn.lorr_stateid.lrs_present);
	nfs4c_compound_destroy(&c);
	return st;
}

static void layout_dying(void)
{
	struct nfs4c_fh fh;
	struct stateid4 osid, lo1, lo2;
	nfs4t_open_create(a, &dir, "layout", "owner-1", &fh, &osid);
	CHECK_EQ(layoutget(&fh, &osid, &lo1), NFS4_OK);
	hold_ends(true);
	CHECK_EQ(layoutreturn(&fh, &lo1), NFS4_OK);
	/* the layout of (a, layout) is on its way out */
	CHECK_EQ(layoutget(&fh, &osid, &lo2), NFS4ERR_DELAY);
	CHECK_EQ(layoutget(&fh, &osid, &lo2), NFS4ERR_DELAY);
	hold_ends(false);
	CHECK_EQ(layoutget(&fh, &osid, &lo2), NFS4_OK);
	CHECK(!same_other(&lo2, &lo1));
	/* the new layout is known: its LAYOUTRETURN is accepted, the old
	 * one's is not */
	CHECK_EQ(layoutreturn(&fh, &lo1), NFS4ERR_BAD_STATEID);
	CHECK_EQ(layoutreturn(&fh, &lo2), NFS4_OK);
	nfs4t_close(a, &fh, &osid);
	printf("ok LAYOUTGET of a layout on its way out: DELAY, then a new layout\n");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs4-dying JNFSD JNFS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(120); /* a watchdog: every step is answered at once */
	const char *dirs[] = {"d", NULL};
	nfs4t_server_init(&srv, argv[1], argv[2], 256, dirs,
			  "/ 127.0.0.1(rw,sync,insecure,no_root_squash,pnfs)\n");
	const char *args[] = {"--test-hold-ends", NULL};
	nfs4t_server_start(&srv, args);
	atexit(kill_server);
	struct nfs4c_fh root_b;
	a = nfs4t_client(srv.addr, "dying-a", &root);
	b = nfs4t_client(srv.addr, "dying-b", &root_b);
	nfs4t_lookup(a, &root, "d", &dir);

	open_dying();
	lock_dying();
	layout_dying();

	nfs4t_unmount(a);
	nfs4t_unmount(b);
	nfs4t_server_stop(&srv);
	nfs4t_server_fini(&srv);
	return 0;
}
