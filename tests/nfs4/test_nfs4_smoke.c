/*
 * test_nfs4_smoke.c - end to end over NFSv4.1 with the project's client
 * (src/nfs4c) against jnfsd:
 *
 *   test-nfs4-smoke JNFSD              start jnfsd on a fresh image
 *   test-nfs4-smoke --server ADDR:PORT [--dir PATH]
 *                                      the same against a running server
 *                                      (e.g. NFS-Ganesha), in PATH
 *
 * Mount the root (EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE,
 * PUTROOTFH), create a file with OPEN(create, GUARDED), write 1 MiB with
 * UNSTABLE WRITEs in flight together and COMMIT (the verifiers agree),
 * read it back, check GETATTR's size, mode and type; lock a range and see
 * a second client's LOCKT report that exact lock (DENIED), unlock and see
 * it free; CLOSE, REMOVE (LOOKUP then NOENT), destroy both sessions and
 * client IDs, stop jnfsd cleanly.
 *
 * A server that does not serve NFSv4 (a COMPOUND gets PROG_MISMATCH,
 * PROG_UNAVAIL or PROC_UNAVAIL: --server naming an NFSv3-only one, or the
 * jnfsd of before NFSv4) makes the test skip (exit 77).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "check.h"
#include "jnfsd_proc.h"
#include "nfs4c/nfs4c.h"
#include "rpc/clnt.h"

#define FILE_SIZE (1u << 20)
#define CHUNK	  (256u << 10)
#define NCHUNK	  (FILE_SIZE / CHUNK)

static const char *dir_path = "";

/* An empty COMPOUND (minor version 1, no operations): a server of NFSv4.1
 * answers it (RFC 8881 16.2.3: NFS4_OK). */
static int enc_empty_compound(struct xdr_enc *x, const void *args)
{
	return xdr_enc_u32(x, 0) || xdr_enc_u32(x, 1) || xdr_enc_u32(x, 0) ? -EMSGSIZE : 0;
}

/* 1: the server runs COMPOUNDs; 0: it does not serve NFSv4 (the jnfsd of
 * before NFSv4 answered NULL alone on version 4: PROC_UNAVAIL). */
static int serves_v4(const char *addr)
{
	struct rpc_reply_hdr rh;
	int fd = rpc_clnt_connect(addr, 10000);
	CHECK(fd >= 0);
	int err = rpc_clnt_call(fd, 1, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, NULL,
				enc_empty_compound, NULL, NULL, NULL, &rh);
	close(fd);
	if (err == -EPROTO && rh.reply_stat == RPC_MSG_ACCEPTED &&
	    (rh.stat == RPC_PROG_MISMATCH || rh.stat == RPC_PROG_UNAVAIL ||
	     rh.stat == RPC_PROC_UNAVAIL))
		return 0;
	CHECK_OK(err);
	return 1;
}

static struct nfs4c_client *client(const char *addr, const char *owner, struct nfs4c_fh *root)
{
	struct nfs4c_cfg cfg;
	struct nfs4c_client *cl;
	struct nfs4c_info info;
	nfs4c_cfg_default(&cfg);
	cfg.addr = addr;
	cfg.owner = owner;
	cfg.cred.uid = cfg.cred.gid = 0;
	CHECK_OK(nfs4c_create(&cfg, &cl));
	CHECK_OK(nfs4c_mount(cl, root));
	nfs4c_get_info(cl, &info);
	CHECK(info.have_session && info.fore_slots >= 1 && info.lease_s > 0);
	printf("%s: client id %llx, %u slots, lease %u s, minor version %u\n", owner,
	       (unsigned long long)info.clientid, info.fore_slots, info.lease_s, info.minorversion);
	return cl;
}

/* SEQUENCE, PUTFH(root), LOOKUP the test directory: where every compound
 * on the file's directory starts. */
static void at_dir(struct nfs4c_compound *c, const struct nfs4c_fh *root)
{
	nfs4c_op_putfh(c, root);
	nfs4c_op_lookup_path(c, dir_path);
}

static nfsstat4 send_ok(struct nfs4c_compound *c)
{
	CHECK_OK(nfs4c_send(c));
	return c->status;
}

static void run(const char *addr)
{
	struct nfs4c_fh root, fh, root_b;
	struct nfs4c_compound c, w[NCHUNK];
	struct nfs4c_attr attr;
	char name[64];
	uint8_t *data = xmalloc(FILE_SIZE), verf[NFS4_VERIFIER_SIZE];
	static const char owner_a[] = "smoke-open-owner", lock_owner[] = "smoke-lock-owner";

	for (uint32_t i = 0; i < FILE_SIZE; i++)
		data[i] = (uint8_t)(i * 7 + i / 4096);
	snprintf(name, sizeof(name), "smoke-%d", (int)getpid());
	struct nfs4c_client *a = client(addr, "nfs4-smoke-a", &root);

	/* OPEN(create GUARDED, 0644) + GETFH */
	nfs4c_compound_init(&c, a);
	at_dir(&c, &root);
	struct nfs4c_open o = {.owner = owner_a,
			       .owner_len = sizeof(owner_a) - 1,
			       .access = OPEN4_SHARE_ACCESS_BOTH,
			       .deny = OPEN4_SHARE_DENY_NONE,
			       .claim = CLAIM_NULL,
			       .name = name,
			       .create = true,
			       .how = GUARDED4,
			       .attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	nfs4c_op_open(&c, &o);
	nfs4c_op_getfh(&c);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_fh(&c, &fh));
	struct stateid4 open_sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	nfs4c_compound_destroy(&c);

	/* 1 MiB: UNSTABLE WRITEs in flight together, then COMMIT */
	for (unsigned i = 0; i < NCHUNK; i++) {
		nfs4c_compound_init(&w[i], a);
		nfs4c_op_putfh(&w[i], &fh);
		nfs4c_op_write(&w[i], &open_sid, (uint64_t)i * CHUNK, UNSTABLE4, data + i * CHUNK,
			       CHUNK);
		CHECK_OK(nfs4c_start(&w[i]));
	}
	for (unsigned i = 0; i < NCHUNK; i++) {
		CHECK_OK(nfs4c_wait(&w[i]));
		CHECK_EQ(w[i].status, NFS4_OK);
		const struct WRITE4resok *ok = &nfs4c_res(&w[i], OP_WRITE, 0)->opwrite.resok4;
		CHECK_EQ(ok->count, CHUNK);
		if (i == 0)
			memcpy(verf, ok->writeverf, sizeof(verf));
		CHECK(!memcmp(verf, ok->writeverf, sizeof(verf)));
		nfs4c_compound_destroy(&w[i]);
	}
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_commit(&c, 0, 0);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	CHECK(!memcmp(verf, nfs4c_res(&c, OP_COMMIT, 0)->opcommit.resok4.writeverf, 8));
	nfs4c_compound_destroy(&c);

	/* read it back */
	for (uint32_t off = 0; off < FILE_SIZE; off += CHUNK) {
		nfs4c_compound_init(&c, a);
		nfs4c_op_putfh(&c, &fh);
		nfs4c_op_read(&c, &open_sid, off, CHUNK);
		CHECK_EQ(send_ok(&c), NFS4_OK);
		const struct READ4resok *r = &nfs4c_res(&c, OP_READ, 0)->opread.resok4;
		CHECK_EQ(r->data.len, CHUNK);
		CHECK(!memcmp(r->data.val, data + off, CHUNK));
		nfs4c_compound_destroy(&c);
	}

	/* size, mode, type */
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_getattr(&c, NULL);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_attr(&c, &attr));
	CHECK_EQ(attr.type, NF4REG);
	CHECK_EQ(attr.size, FILE_SIZE);
	CHECK_EQ(attr.mode & 07777, 0644);
	nfs4c_compound_destroy(&c);

	/* a write lock on [0, 4096); a second client's LOCKT sees it */
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &fh);
	struct nfs4c_lock l = {.type = WRITE_LT,
			       .off = 0,
			       .len = 4096,
			       .new_owner = true,
			       .open_stateid = open_sid,
			       .owner = lock_owner,
			       .owner_len = sizeof(lock_owner) - 1};
	nfs4c_op_lock(&c, &l);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	struct stateid4 lock_sid = nfs4c_res(&c, OP_LOCK, 0)->oplock.resok4.lock_stateid;
	nfs4c_compound_destroy(&c);

	struct nfs4c_client *b = client(addr, "nfs4-smoke-b", &root_b);
	nfs4c_compound_init(&c, b);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_lockt(&c, WRITE_LT, 100, 100, "b-owner", 7);
	CHECK_EQ(send_ok(&c), NFS4ERR_DENIED);
	const struct LOCK4denied *d = &nfs4c_res(&c, OP_LOCKT, 0)->oplockt.denied;
	CHECK(d->offset == 0 && d->length == 4096 && d->locktype == WRITE_LT);
	CHECK(d->owner.owner.len == sizeof(lock_owner) - 1 &&
	      !memcmp(d->owner.owner.val, lock_owner, d->owner.owner.len));
	nfs4c_compound_destroy(&c);

	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_locku(&c, WRITE_LT, &lock_sid, 0, 4096);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	nfs4c_compound_init(&c, b);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_lockt(&c, WRITE_LT, 100, 100, "b-owner", 7);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);

	/* CLOSE, REMOVE, and the name is gone */
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_close(&c, &open_sid);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	nfs4c_compound_reset(&c);
	at_dir(&c, &root);
	nfs4c_op_remove(&c, name);
	CHECK_EQ(send_ok(&c), NFS4_OK);
	nfs4c_compound_reset(&c);
	at_dir(&c, &root);
	nfs4c_op_lookup(&c, name);
	CHECK_EQ(send_ok(&c), NFS4ERR_NOENT);
	nfs4c_compound_destroy(&c);

	struct nfs4c_cb_stats cbs;
	nfs4c_cb_stats(nfs4c_get_cb(a), &cbs);
	printf("back channel of the first client: %llu CB_NULL, %llu CB_COMPOUND\n",
	       (unsigned long long)cbs.nulls, (unsigned long long)cbs.compounds);
	CHECK_EQ(nfs4c_unmount(b), NFS4_OK);
	CHECK_EQ(nfs4c_unmount(a), NFS4_OK);
	nfs4c_destroy(b);
	nfs4c_destroy(a);
	free(data);
}

int main(int argc, char **argv)
{
	struct tc_jnfsd j;
	char addr[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	if (argc >= 3 && !strcmp(argv[1], "--server")) {
		if (argc == 5 && !strcmp(argv[3], "--dir"))
			dir_path = argv[4];
		if (!serves_v4(argv[2])) {
			printf("SKIP: %s does not serve NFSv4\n", argv[2]);
			return 77;
		}
		run(argv[2]);
		TEST_PASS("nfs4 smoke");
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: test-nfs4-smoke JNFSD | --server ADDR:PORT [--dir PATH]\n");
		return 2;
	}
	const char *args[] = {"--listen", "127.0.0.1:0", "--rpcbind", "off", NULL};
	tc_jnfsd_start(&j, argv[1], args);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", j.port[0]);
	if (!serves_v4(addr)) {
		printf("SKIP: jnfsd does not serve NFSv4 COMPOUND\n");
		tc_jnfsd_stop(&j);
		return 77;
	}
	run(addr);
	int status = tc_jnfsd_stop(&j);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	TEST_PASS("nfs4 smoke");
	return 0;
}
