/*
 * test_nfs4_conform.c - answers RFC 8881 gives (and the Linux server
 * gives) where a conformance suite asks in ways the project's client does
 * not (docs/nfs4.md "Conformance").
 *
 *   test-nfs4-conform JNFSD JNFS [CASE]
 *
 * Cases:
 *   - owners: OPEN, LOCK (a new lock owner) and LOCKT take the client from
 *     the session; the client ID inside the owner (0, another client's,
 *     anything) is ignored, so owners with the same bytes are the same
 *     owner, and another client's number reaches none of its owners;
 *     LOCK4denied names the holder by the session's client ID;
 *   - FREE_STATEID of the current stateid (an open's, a lock's holding
 *     locks): LOCKS_HELD; of a lock stateid without locks: OK;
 *   - RENAME over a file that is open, and REMOVE of one: the open keeps
 *     the file (WRITE, CLOSE are OK through its handle), whose inode is
 *     freed when the open goes (then the handle is STALE);
 *   - LOOKUPP of a symlink: SYMLINK; of a file or a FIFO: NOTDIR;
 *   - SECINFO_NO_NAME(PARENT) at the root: NOENT; of a file: NOTDIR;
 *   - sa_cachethis with a reply larger than ca_maxresponsesize_cached:
 *     REP_TOO_BIG_TO_CACHE, from SEQUENCE itself when not even its result
 *     fits (the slot is left as it was);
 *   - CREATE_SESSION with flags RFC 8881 does not define: INVAL;
 *   - a COMPOUND of many small READs and READ_PLUSes (each keeps its
 *     data buffer until the reply is sent): all answered, with their data.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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

static nfsstat4 resop_status(const struct nfs4c_compound *c, unsigned i)
{
	CHECK(i < c->res.resarray.len);
	return nfs_resop4_status(&c->res.resarray.val[i]);
}

/* The last operation appended. */
static struct nfs_argop4 *last_op(struct nfs4c_compound *c)
{
	CHECK(c->nops > 0);
	return &c->ops[c->nops - 1];
}

/* OPEN (create UNCHECKED) of name in dir by owner, whose client ID field
 * is clientid: the compound's status, the stateid and handle. */
static nfsstat4 open_as(struct nfs4c_client *cl, const char *name, const char *owner,
			clientid4 clientid, uint32_t access, uint32_t deny, struct stateid4 *sid,
			struct nfs4c_fh *fh)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &dir);
	struct nfs4c_open o = {.owner = owner,
			       .owner_len = (uint32_t)strlen(owner),
			       .access = access,
			       .deny = deny,
			       .claim = CLAIM_NULL,
			       .name = name,
			       .create = true,
			       .how = UNCHECKED4,
			       .attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	nfs4c_op_open(&c, &o);
	last_op(&c)->opopen.owner.clientid = clientid;
	nfs4c_op_getfh(&c);
	nfsstat4 st = nfs4t_send(&c);
	if (st == NFS4_OK) {
		*sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
		CHECK_OK(nfs4c_res_fh(&c, fh));
	}
	nfs4c_compound_destroy(&c);
	return st;
}

/* What LOCK4denied said. */
struct denied {
	uint64_t offset, length;
	clientid4 clientid;
	uint32_t owner_len;
	uint8_t owner[8];
};

/* LOCKT of [0, 10) for writing by owner, client ID field clientid. */
static nfsstat4 lockt_as(const struct nfs4c_fh *fh, const char *owner, clientid4 clientid,
			 struct denied *denied)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_lockt(&c, WRITE_LT, 0, 10, owner, (uint32_t)strlen(owner));
	last_op(&c)->oplockt.owner.clientid = clientid;
	nfsstat4 st = nfs4t_send(&c);
	if (st == NFS4ERR_DENIED) {
		const struct LOCK4denied *d = &nfs4c_res(&c, OP_LOCKT, 0)->oplockt.denied;
		denied->offset = d->offset;
		denied->length = d->length;
		denied->clientid = d->owner.clientid;
		CHECK(d->owner.owner.len <= sizeof(denied->owner));
		denied->owner_len = d->owner.owner.len;
		memcpy(denied->owner, d->owner.owner.val, d->owner.owner.len);
	}
	nfs4c_compound_destroy(&c);
	return st;
}

static void owners(void)
{
	const clientid4 ida = nfs4c_clientid(a);
	struct stateid4 s1, s2, sb;
	struct nfs4c_fh fh, fh2, fhb;

	/* OPEN with a client ID of 0 inside a session: the session's client */
	CHECK_EQ(open_as(a, "own", "oo", 0, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE, &s1,
			 &fh),
		 NFS4_OK);
	/* the same owner bytes with the real client ID: the same owner, so the
	 * same open, its stateid moved on */
	CHECK_EQ(open_as(a, "own", "oo", ida, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_WRITE, &s2,
			 &fh2),
		 NFS4_OK);
	CHECK(!memcmp(s1.other, s2.other, sizeof(s1.other)));
	CHECK_EQ(s2.seqid, s1.seqid + 1);
	/* another client naming a's client ID is still itself: its open of
	 * the file for writing meets a's deny */
	CHECK_EQ(open_as(b, "own", "oo", ida, OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_DENY_NONE, &sb,
			 &fhb),
		 NFS4ERR_SHARE_DENIED);

	/* LOCK of a new lock owner whose client ID is 0 */
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &fh);
	struct nfs4c_lock l = {.type = WRITE_LT,
			       .off = 0,
			       .len = 10,
			       .new_owner = true,
			       .open_stateid = s2,
			       .owner = "lk",
			       .owner_len = 2};
	nfs4c_op_lock(&c, &l);
	last_op(&c)->oplock.locker.open_owner.lock_owner.clientid = 0;
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	struct stateid4 ls = nfs4c_res(&c, OP_LOCK, 0)->oplock.resok4.lock_stateid;
	nfs4c_compound_destroy(&c);

	/* LOCKT ignores the client ID: the owner's own lock never conflicts */
	struct denied d;
	CHECK_EQ(lockt_as(&fh, "lk", 0, &d), NFS4_OK);
	CHECK_EQ(lockt_as(&fh, "lk", ida, &d), NFS4_OK);
	CHECK_EQ(lockt_as(&fh, "lk", 0x123456789abcdefull, &d), NFS4_OK);
	/* another owner's test meets it; the holder is named by a's client ID */
	CHECK_EQ(lockt_as(&fh, "other", 0, &d), NFS4ERR_DENIED);
	CHECK_EQ(d.clientid, ida);
	CHECK_EQ(d.owner_len, 2);
	CHECK(!memcmp(d.owner, "lk", 2));
	CHECK_EQ(d.offset, 0);
	CHECK_EQ(d.length, 10);

	CHECK_EQ(nfs4t_stateid_op(a, &fh, OP_LOCKU, &ls, NULL), NFS4_OK);
	nfs4t_close(a, &fh, &s2);
	TEST_PASS("owners: the session's client, whatever client ID the owner names");
}

static void free_stateid(void)
{
	static const struct stateid4 current = {.seqid = 1};
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &dir);
	struct nfs4c_open o = {.owner = "fo",
			       .owner_len = 2,
			       .access = OPEN4_SHARE_ACCESS_BOTH,
			       .deny = OPEN4_SHARE_DENY_NONE,
			       .claim = CLAIM_NULL,
			       .name = "fs",
			       .create = true,
			       .how = UNCHECKED4,
			       .attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	nfs4c_op_open(&c, &o);
	nfs4c_op_getfh(&c);
	nfs4c_op_free_stateid(&c, &current);
	nfs4c_op_close(&c, &current);
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_LOCKS_HELD);
	CHECK_EQ(c.res.resarray.len, 5); /* SEQUENCE PUTFH OPEN GETFH FREE_STATEID */
	CHECK_EQ(resop_status(&c, 4), NFS4ERR_LOCKS_HELD);
	struct stateid4 os = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	struct nfs4c_fh fh;
	CHECK_OK(nfs4c_res_fh(&c, &fh));

	/* a lock stateid holding a lock, as the current stateid and by value */
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &fh);
	struct nfs4c_lock l = {.type = WRITE_LT,
			       .off = 0,
			       .len = 10,
			       .new_owner = true,
			       .open_stateid = os,
			       .owner = "fl",
			       .owner_len = 2};
	nfs4c_op_lock(&c, &l);
	nfs4c_op_free_stateid(&c, &current);
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_LOCKS_HELD);
	CHECK_EQ(c.res.resarray.len, 4);
	struct stateid4 ls = nfs4c_res(&c, OP_LOCK, 0)->oplock.resok4.lock_stateid;
	nfs4c_compound_destroy(&c);
	CHECK_EQ(nfs4t_stateid_op(a, &fh, OP_FREE_STATEID, &ls, NULL), NFS4ERR_LOCKS_HELD);
	struct stateid4 ls2;
	CHECK_EQ(nfs4t_stateid_op(a, &fh, OP_LOCKU, &ls, &ls2), NFS4_OK);
	CHECK_EQ(nfs4t_stateid_op(a, &fh, OP_FREE_STATEID, &ls2, NULL), NFS4_OK);
	nfs4t_close(a, &fh, &os);
	TEST_PASS("FREE_STATEID of an open or a lock holding locks (current stateid too): "
		  "LOCKS_HELD");
}

/* Inodes in use: files_total - files_free (each counts free blocks as
 * inodes that could be made; the difference is what is allocated). */
static uint64_t inodes_used(void)
{
	bitmap4 bm = {0};
	nfs4c_bitmap_set(&bm, FATTR4_FILES_FREE);
	nfs4c_bitmap_set(&bm, FATTR4_FILES_TOTAL);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &dir);
	nfs4c_op_getattr(&c, &bm);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	struct nfs4c_attr at;
	CHECK_OK(nfs4c_res_attr(&c, &at));
	CHECK(nfs4c_bitmap_isset(&at.have, FATTR4_FILES_FREE));
	CHECK(nfs4c_bitmap_isset(&at.have, FATTR4_FILES_TOTAL));
	nfs4c_compound_destroy(&c);
	return at.files_total - at.files_free;
}

static void unlinked_open(void)
{
	struct nfs4c_fh fh1, fh2;
	struct stateid4 s1, s2;
	nfs4t_open_create(a, &dir, "rn-src", "ro", &fh1, &s1);
	nfs4t_close(a, &fh1, &s1);
	nfs4t_open_create(a, &dir, "rn-dst", "ro", &fh2, &s2);
	uint64_t before = inodes_used();

	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &dir);
	nfs4c_op_savefh(&c);
	nfs4c_op_rename(&c, "rn-src", "rn-dst");
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	/* the replaced file lives on while it is open: usable, not freed */
	static const uint8_t data[4] = "abc";
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &fh2);
	nfs4c_op_write(&c, &s2, 0, FILE_SYNC4, data, sizeof(data));
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	CHECK_EQ(inodes_used(), before);

	/* CLOSE is OK, and the open was the last thing holding the inode */
	CHECK_EQ(nfs4t_stateid_op(a, &fh2, OP_CLOSE, &s2, NULL), NFS4_OK);
	CHECK_EQ(inodes_used(), before - 1);
	CHECK_EQ(nfs4t_stateid_op(a, &fh2, OP_CLOSE, &s2, NULL), NFS4ERR_STALE);
	TEST_PASS("RENAME over an open file: CLOSE OK, the inode freed then");

	/* REMOVE of an open file: the same */
	nfs4t_open_create(a, &dir, "rm-open", "ro", &fh1, &s1);
	before = inodes_used();
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &dir);
	nfs4c_op_remove(&c, "rm-open");
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &fh1);
	nfs4c_op_write(&c, &s1, 0, FILE_SYNC4, data, sizeof(data));
	nfs4c_op_read(&c, &s1, 0, sizeof(data));
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	const struct READ4resok *rd = &nfs4c_res(&c, OP_READ, 0)->opread.resok4;
	CHECK_EQ(rd->data.len, sizeof(data));
	CHECK(!memcmp(rd->data.val, data, sizeof(data)));
	nfs4c_compound_destroy(&c);
	CHECK_EQ(inodes_used(), before);
	/* a write, so that the reply waits for the journal, and the CLOSE:
	 * the compound's filehandle is the last reference */
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &fh1);
	nfs4c_op_write(&c, &s1, sizeof(data), FILE_SYNC4, data, sizeof(data));
	nfs4c_op_close(&c, &s1);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	CHECK_EQ(inodes_used(), before - 1);
	CHECK_EQ(nfs4t_stateid_op(a, &fh1, OP_CLOSE, &s1, NULL), NFS4ERR_STALE);
	TEST_PASS("REMOVE of an open file: WRITE, READ and CLOSE OK, the inode freed then");
}

static nfsstat4 lookupp_of(const struct nfs4c_fh *fh)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_lookupp(&c);
	nfsstat4 st = nfs4t_send(&c);
	nfs4c_compound_destroy(&c);
	return st;
}

static nfsstat4 secinfo_parent_of(const struct nfs4c_fh *fh)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	if (fh)
		nfs4c_op_putfh(&c, fh);
	else
		nfs4c_op_putrootfh(&c);
	nfs4c_op_secinfo_no_name(&c, SECINFO_STYLE4_PARENT);
	nfsstat4 st = nfs4t_send(&c);
	nfs4c_compound_destroy(&c);
	return st;
}

/* CREATE of a non-regular object in dir: its handle. */
static void make(nfs_ftype4 type, const char *name, const char *linkdata, struct nfs4c_fh *fh)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &dir);
	nfs4c_op_create(&c, type, name, linkdata, NULL, NULL);
	nfs4c_op_getfh(&c);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_fh(&c, fh));
	nfs4c_compound_destroy(&c);
}

static void parents(void)
{
	struct nfs4c_fh sl, fifo, file;
	struct stateid4 s;
	make(NF4LNK, "sl", "target", &sl);
	make(NF4FIFO, "fifo", NULL, &fifo);
	nfs4t_open_create(a, &dir, "plain", "po", &file, &s);
	nfs4t_close(a, &file, &s);

	CHECK_EQ(lookupp_of(&sl), NFS4ERR_SYMLINK);
	CHECK_EQ(lookupp_of(&fifo), NFS4ERR_NOTDIR);
	CHECK_EQ(lookupp_of(&file), NFS4ERR_NOTDIR);
	CHECK_EQ(lookupp_of(&dir), NFS4_OK);
	CHECK_EQ(lookupp_of(&root), NFS4ERR_NOENT);
	TEST_PASS("LOOKUPP: SYMLINK for a symlink, NOTDIR for a file or FIFO, NOENT at the root");

	CHECK_EQ(secinfo_parent_of(NULL), NFS4ERR_NOENT);
	CHECK_EQ(secinfo_parent_of(&root), NFS4ERR_NOENT);
	CHECK_EQ(secinfo_parent_of(&dir), NFS4_OK);
	CHECK_EQ(secinfo_parent_of(&sl), NFS4ERR_SYMLINK);
	CHECK_EQ(secinfo_parent_of(&file), NFS4ERR_NOTDIR);
	TEST_PASS("SECINFO_NO_NAME(PARENT): NOENT at the root, the parent's answer elsewhere");
}

static struct nfs4c_client *client_cfg(const char *owner, uint32_t cached, uint32_t csa_flags)
{
	struct nfs4c_cfg cfg;
	struct nfs4c_client *cl;
	nfs4c_cfg_default(&cfg);
	cfg.addr = srv.addr;
	cfg.owner = owner;
	cfg.cred.uid = cfg.cred.gid = 0;
	cfg.reconnect_ms = 15000;
	cfg.no_renew = true;
	if (cached)
		cfg.max_response_cached = cached;
	cfg.csa_flags = csa_flags;
	CHECK_OK(nfs4c_create(&cfg, &cl));
	return cl;
}

static void cachethis(void)
{
	/* ca_maxresponsesize_cached of 10 bytes: not even SEQUENCE's result */
	struct nfs4c_client *cl = client_cfg("conform-cache-10", 10, 0);
	struct nfs4c_fh r;
	CHECK_OK(nfs4c_mount(cl, &r));
	struct nfs4c_info info;
	nfs4c_get_info(cl, &info);
	CHECK_EQ(info.fore.ca_maxresponsesize_cached, 10);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	c.slot = 0;
	c.cachethis = true;
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_REP_TOO_BIG_TO_CACHE);
	CHECK_EQ(c.res.resarray.len, 1);
	CHECK_EQ(resop_status(&c, 0), NFS4ERR_REP_TOO_BIG_TO_CACHE);
	nfs4c_compound_reset(&c);
	c.slot = 0;
	c.cachethis = true;
	nfs4c_op_putrootfh(&c);
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_REP_TOO_BIG_TO_CACHE);
	CHECK_EQ(c.res.resarray.len, 1);
	/* the slot was left as it was: without cachethis it goes on */
	nfs4c_compound_reset(&c);
	c.slot = 0;
	nfs4c_op_putrootfh(&c);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	nfs4t_unmount(cl);

	/* room for SEQUENCE and a little: the operation that does not fit */
	cl = client_cfg("conform-cache-512", 512, 0);
	CHECK_OK(nfs4c_mount(cl, &r));
	nfs4c_compound_init(&c, cl);
	c.cachethis = true;
	nfs4c_op_putfh(&c, &dir);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_reset(&c);
	c.cachethis = true;
	nfs4c_op_putfh(&c, &dir);
	for (int i = 0; i < 8; i++)
		nfs4c_op_getattr(&c, NULL);
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_REP_TOO_BIG_TO_CACHE);
	CHECK(c.res.resarray.len >= 3);
	CHECK_EQ(resop_status(&c, 0), NFS4_OK);
	CHECK_EQ(resop_status(&c, c.res.resarray.len - 1), NFS4ERR_REP_TOO_BIG_TO_CACHE);
	/* the same without cachethis: nothing is to be cached */
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &dir);
	for (int i = 0; i < 8; i++)
		nfs4c_op_getattr(&c, NULL);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	nfs4t_unmount(cl);
	TEST_PASS("sa_cachethis beyond ca_maxresponsesize_cached: REP_TOO_BIG_TO_CACHE");
}

static void many_reads(void)
{
	struct stateid4 sid;
	struct nfs4c_fh fh;
	CHECK_EQ(open_as(a, "many-reads", "conform-reads", 0, OPEN4_SHARE_ACCESS_BOTH,
			 OPEN4_SHARE_DENY_NONE, &sid, &fh),
		 NFS4_OK);
	static uint8_t data[8192];
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_write(&c, &sid, 0, FILE_SYNC4, data, sizeof(data));
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	/* more than any fixed number of kept buffers: 40 READs and 20
	 * READ_PLUSes of 100 bytes each */
	enum { NREAD = 40, NPLUS = 20, LEN = 100 };
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &fh);
	for (int i = 0; i < NREAD; i++)
		nfs4c_op_read(&c, &sid, (uint64_t)i * LEN, LEN);
	for (int i = 0; i < NPLUS; i++)
		nfs4c_op_read_plus(&c, &sid, (uint64_t)i * LEN, LEN);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	CHECK_EQ(c.res.resarray.len, 2 + NREAD + NPLUS);
	for (int i = 0; i < NREAD; i++) {
		const struct nfs_resop4 *r = nfs4c_res(&c, OP_READ, (unsigned)i);
		CHECK(r);
		CHECK_EQ(r->opread.resok4.data.len, LEN);
		CHECK(!memcmp(r->opread.resok4.data.val, data + i * LEN, LEN));
	}
	CHECK(nfs4c_res(&c, OP_READ_PLUS, NPLUS - 1));
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_close(&c, &sid);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	TEST_PASS("a COMPOUND of 40 READs and 20 READ_PLUSes: all answered");
}

static void session_flags(void)
{
	static const uint32_t bad[] = {0x8, 0x10, 0x80000000u, 0xf};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char owner[64];
		snprintf(owner, sizeof(owner), "conform-flags-%u", i);
		struct nfs4c_client *cl = client_cfg(owner, 0, bad[i]);
		CHECK_EQ(nfs4c_exchange_id(cl), NFS4_OK);
		CHECK_EQ(nfs4c_create_session(cl), NFS4ERR_INVAL);
		CHECK_EQ(nfs4c_destroy_clientid(cl), NFS4_OK);
		nfs4c_destroy(cl);
	}
	/* the flags RFC 8881 defines are fine; PERSIST and RDMA not granted */
	struct nfs4c_client *cl =
		client_cfg("conform-flags-ok", 0,
			   CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_RDMA);
	CHECK_EQ(nfs4c_exchange_id(cl), NFS4_OK);
	CHECK_EQ(nfs4c_create_session(cl), NFS4_OK);
	struct nfs4c_info info;
	nfs4c_get_info(cl, &info);
	CHECK_EQ(info.csr_flags & (CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_RDMA),
		 0);
	nfs4t_unmount(cl);
	TEST_PASS("CREATE_SESSION with undefined flags: INVAL");
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: test-nfs4-conform JNFSD JNFS [CASE]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	const char *dirs[] = {"d", NULL};
	nfs4t_server_init(&srv, argv[1], argv[2], 256, dirs,
			  "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n");
	nfs4t_server_start(&srv, NULL);
	atexit(kill_server);

	struct nfs4c_fh root_b;
	a = nfs4t_client(srv.addr, "conform-a", &root);
	b = nfs4t_client(srv.addr, "conform-b", &root_b);
	nfs4t_lookup(a, &root, "d", &dir);

	/* an optional fourth argument runs one case alone */
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {
		{"owners", owners},
		{"free_stateid", free_stateid},
		{"unlinked_open", unlinked_open},
		{"parents", parents},
		{"cachethis", cachethis},
		{"session_flags", session_flags},
		{"many_reads", many_reads},
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (argc < 4 || !strcmp(argv[3], cases[i].name))
			cases[i].fn();

	nfs4t_unmount(b);
	nfs4t_unmount(a);
	struct nfs4t_stats st;
	nfs4t_stats(&srv.j, &st);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.clients"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.stateids"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.brl.locks"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.share.opens"), 0);
	TEST_PASS("the clients left nothing behind");
	nfs4t_server_fini(&srv);
	return 0;
}
