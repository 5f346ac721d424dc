/*
 * test_nfs4_stability.c - what stability costs over NFSv4.1, read off
 * jnfsd's counters (docs/design.md rule 7, once per compound:
 * docs/nfs4.md "A compound", step 5).
 *
 *   test-nfs4-stability JNFSD JNFS
 *
 *   - sync export, one client: SEQUENCE + PUTFH + OPEN(create) + GETFH +
 *     GETATTR costs exactly one log write (the force to the compound's own
 *     sequence, made before the reply) and no in-place inode write;
 *   - sync export: a compound of three creating operations (two OPENs
 *     that create, a CREATE) still costs one log write;
 *   - async export: the same compounds cost no log write and no wait;
 *   - sync export, 16 clients creating at once: their forces share log
 *     writes, so there are fewer log writes than creates (the ratio is
 *     printed).
 * The creates are closed and the clients leave afterwards, outside the
 * counted windows; the image is checked at the end.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nfs4_test.h"

#define NCREATE	   100
#define NTRIPLE	   20
#define NCLIENTS   16
#define PER_CLIENT 40

static struct nfs4t_server srv;

static void kill_server(void)
{
	if (srv.j.pid > 0)
		kill(srv.j.pid, SIGKILL);
}

struct counters {
	uint64_t log_writes, inode_writebacks, sync_waits, opens, creates;
};

static void read_counters(struct counters *c)
{
	struct nfs4t_stats st;
	nfs4t_stats(&srv.j, &st);
	c->log_writes = nfs4t_stat(&st, "log.buffer_writes");
	c->inode_writebacks = nfs4t_stat(&st, "fs.inode_writebacks");
	c->sync_waits = nfs4t_stat(&st, "srv.sync_waits");
	c->opens = nfs4t_stat0(&st, "nfs4.op.OPEN");
	c->creates = nfs4t_stat0(&st, "nfs4.op.CREATE");
}

/* What a client created and must close. */
struct opened {
	unsigned n;
	struct nfs4c_fh fh[NCREATE * 2];
	struct stateid4 sid[NCREATE * 2];
};

static void add_open(struct nfs4c_compound *c, const char *name, const char *owner)
{
	struct nfs4c_open o = {.owner = owner,
			       .owner_len = (uint32_t)strlen(owner),
			       .access = OPEN4_SHARE_ACCESS_BOTH,
			       .deny = OPEN4_SHARE_DENY_NONE,
			       .claim = CLAIM_NULL,
			       .name = name,
			       .create = true,
			       .how = GUARDED4,
			       .attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	nfs4c_op_open(c, &o);
}

static void keep_open(const struct nfs4c_compound *c, unsigned nth, struct opened *op)
{
	unsigned k = op->n++;
	op->sid[k] = nfs4c_res(c, OP_OPEN, nth)->opopen.resok4.stateid;
	/* the handle: the GETFH right after that OPEN */
	unsigned seen = 0;
	for (uint32_t i = 0; i < c->res.resarray.len; i++) {
		const struct nfs_resop4 *r = &c->res.resarray.val[i];
		if (r->resop != OP_OPEN || seen++ != nth)
			continue;
		const struct nfs_resop4 *g = &c->res.resarray.val[i + 1];
		CHECK(i + 1 < c->res.resarray.len && g->resop == OP_GETFH);
		op->fh[k].len = g->opgetfh.resok4.object.len;
		memcpy(op->fh[k].val, g->opgetfh.resok4.object.val, op->fh[k].len);
		return;
	}
	CHECK(false);
}

/* n compounds of SEQUENCE + PUTFH(dir) + OPEN(create) + GETFH + GETATTR. */
static void open_creates(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *prefix,
			 int n, struct opened *op)
{
	for (int i = 0; i < n; i++) {
		char name[64];
		struct nfs4c_compound c;
		snprintf(name, sizeof(name), "%s-%d", prefix, i);
		nfs4c_compound_init(&c, cl);
		nfs4c_op_putfh(&c, dir);
		add_open(&c, name, prefix);
		nfs4c_op_getfh(&c);
		nfs4c_op_getattr(&c, NULL);
		CHECK_EQ(nfs4t_send(&c), NFS4_OK);
		CHECK_EQ(c.res.resarray.len, 5);
		keep_open(&c, 0, op);
		nfs4c_compound_destroy(&c);
	}
}

static void close_all(struct nfs4c_client *cl, struct opened *op)
{
	for (unsigned i = 0; i < op->n; i++)
		nfs4t_close(cl, &op->fh[i], &op->sid[i]);
	op->n = 0;
}

struct client_arg {
	int id;
	pthread_barrier_t *start, *done;
};

static void *client_main(void *p)
{
	struct client_arg *ca = p;
	char owner[32];
	struct nfs4c_fh root, dir;
	struct opened *op = calloc(1, sizeof(*op));
	CHECK(op != NULL);
	snprintf(owner, sizeof(owner), "stab-%d", ca->id);
	struct nfs4c_client *cl = nfs4t_client(srv.addr, owner, &root);
	nfs4t_lookup(cl, &root, "many", &dir);
	pthread_barrier_wait(ca->start); /* every client mounted: the window opens */
	pthread_barrier_wait(ca->start);
	open_creates(cl, &dir, owner, PER_CLIENT, op);
	pthread_barrier_wait(ca->done); /* the window closes after the last */
	pthread_barrier_wait(ca->done);
	close_all(cl, op);
	nfs4t_unmount(cl);
	free(op);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs4-stability JNFSD JNFS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	const char *dirs[] = {"one", "many", "async", NULL};
	nfs4t_server_init(&srv, argv[1], argv[2], 256, dirs,
			  "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n"
			  "/async 127.0.0.1(rw,async,insecure,no_root_squash)\n");
	/* a disk-like flush latency, so that concurrent forces overlap */
	const char *args[] = {"--threads", "16", "--flush-latency-us", "500", NULL};
	nfs4t_server_start(&srv, args);
	atexit(kill_server);

	struct nfs4c_fh root, one, adir;
	struct counters a, b;
	static struct opened op;
	struct nfs4c_client *cl = nfs4t_client(srv.addr, "stab-main", &root);
	nfs4t_lookup(cl, &root, "one", &one);
	nfs4t_lookup(cl, &root, "async", &adir);

	read_counters(&a);
	open_creates(cl, &one, "f", NCREATE, &op);
	read_counters(&b);
	CHECK_EQ(b.opens - a.opens, NCREATE);
	printf("sync export, 1 client: %d OPEN(create) compounds, %llu log writes, %llu inode "
	       "write-backs, %llu stability waits\n",
	       NCREATE, (unsigned long long)(b.log_writes - a.log_writes),
	       (unsigned long long)(b.inode_writebacks - a.inode_writebacks),
	       (unsigned long long)(b.sync_waits - a.sync_waits));
	CHECK_EQ(b.log_writes - a.log_writes, NCREATE);
	CHECK_EQ(b.inode_writebacks - a.inode_writebacks, 0);
	CHECK_EQ(b.sync_waits - a.sync_waits, NCREATE);
	close_all(cl, &op);
	TEST_PASS("sync export: one OPEN(create) compound, one log write");

	/* three creating operations, one force */
	read_counters(&a);
	for (int i = 0; i < NTRIPLE; i++) {
		char n1[32], n2[32], n3[32];
		struct nfs4c_compound c;
		snprintf(n1, sizeof(n1), "t1-%d", i);
		snprintf(n2, sizeof(n2), "t2-%d", i);
		snprintf(n3, sizeof(n3), "t3-%d", i);
		nfs4c_compound_init(&c, cl);
		nfs4c_op_putfh(&c, &one);
		add_open(&c, n1, "triple");
		nfs4c_op_getfh(&c);
		nfs4c_op_putfh(&c, &one);
		add_open(&c, n2, "triple");
		nfs4c_op_getfh(&c);
		nfs4c_op_putfh(&c, &one);
		nfs4c_op_create(&c, NF4DIR, n3, NULL, NULL, NULL);
		CHECK_EQ(nfs4t_send(&c), NFS4_OK);
		keep_open(&c, 0, &op);
		keep_open(&c, 1, &op);
		nfs4c_compound_destroy(&c);
	}
	read_counters(&b);
	CHECK_EQ(b.opens - a.opens, 2 * NTRIPLE);
	CHECK_EQ(b.creates - a.creates, NTRIPLE);
	printf("sync export: %d compounds of 3 creates, %llu log writes\n", NTRIPLE,
	       (unsigned long long)(b.log_writes - a.log_writes));
	CHECK_EQ(b.log_writes - a.log_writes, NTRIPLE);
	CHECK_EQ(b.sync_waits - a.sync_waits, NTRIPLE);
	close_all(cl, &op);
	TEST_PASS("sync export: three creates in a compound, one log write");

	read_counters(&a);
	open_creates(cl, &adir, "f", NCREATE, &op);
	read_counters(&b);
	CHECK_EQ(b.opens - a.opens, NCREATE);
	printf("async export, 1 client: %d OPEN(create) compounds, %llu log writes\n", NCREATE,
	       (unsigned long long)(b.log_writes - a.log_writes));
	CHECK_EQ(b.log_writes - a.log_writes, 0);
	CHECK_EQ(b.sync_waits - a.sync_waits, 0);
	close_all(cl, &op);
	TEST_PASS("async export: no log write per OPEN(create)");

	pthread_t t[NCLIENTS];
	struct client_arg ca[NCLIENTS];
	pthread_barrier_t start, done;
	pthread_barrier_init(&start, NULL, NCLIENTS + 1);
	pthread_barrier_init(&done, NULL, NCLIENTS + 1);
	for (int i = 0; i < NCLIENTS; i++) {
		ca[i] = (struct client_arg){.id = i, .start = &start, .done = &done};
		CHECK_OK(pthread_create(&t[i], NULL, client_main, &ca[i]));
	}
	pthread_barrier_wait(&start);
	read_counters(&a);
	pthread_barrier_wait(&start);
	pthread_barrier_wait(&done);
	read_counters(&b);
	pthread_barrier_wait(&done);
	for (int i = 0; i < NCLIENTS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	uint64_t n = b.opens - a.opens, w = b.log_writes - a.log_writes;
	CHECK_EQ(n, NCLIENTS * PER_CLIENT);
	printf("sync export, %d clients: %llu OPEN(create) compounds, %llu log writes (%.2f log "
	       "writes per create)\n",
	       NCLIENTS, (unsigned long long)n, (unsigned long long)w, (double)w / (double)n);
	CHECK(w < n);
	TEST_PASS("sync export, 16 clients: fewer log writes than creates");

	nfs4t_unmount(cl);
	struct nfs4t_stats st;
	nfs4t_stats(&srv.j, &st);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.clients"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.stateids"), 0);
	nfs4t_server_fini(&srv);
	return 0;
}
