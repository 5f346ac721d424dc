/*
 * test_nfs4_open.c - OPEN over NFSv4.1 against jnfsd, answered as RFC 8881
 * and the Linux server answer it.
 *
 *   test-nfs4-open JNFSD JNFS [recc]
 *
 * (one case only when named).
 *
 * Cases:
 *   - RECLAIM_COMPLETE (§18.51.3): a client that has not sent it gets
 *     GRACE for every OPEN that is not a reclaim (CLAIM_NULL with and
 *     without create, CLAIM_FH), though no grace period is running; its
 *     reclaim (CLAIM_PREVIOUS) is NO_GRACE, as out of grace; once it sent
 *     RECLAIM_COMPLETE the same OPENs work.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nfs4_test.h"

static struct nfs4t_server srv;
static struct nfs4c_client *root_cl;
static struct nfs4c_fh root, dir;

static void kill_server(void)
{
	if (srv.j.pid > 0)
		kill(srv.j.pid, SIGKILL);
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

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: test-nfs4-open JNFSD JNFS [recc]\n");
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

	nfs4t_unmount(root_cl);
	nfs4t_server_fini(&srv);
	printf("test-nfs4-open: ok\n");
	return 0;
}
