/*
 * test_nfs4_replay.c - exactly once through NFSv4.1 session slots, against
 * jnfsd, with the project's client choosing the slot and sequence id
 * itself (RFC 8881 §2.10.6; docs/nfs4-state.md "A fore channel slot").
 *
 *   test-nfs4-replay JNFSD JNFS [REPLAYS]
 *
 * For CREATE (a directory), REMOVE, RENAME, WRITE and LOCK, each sent with
 * sa_cachethis on one slot: the same slot and sequence id sent again gets
 * the first reply byte for byte, and the operation ran once. Between the
 * original and the retry the test undoes or redoes what the original did
 * (removes the directory, makes the removed or renamed name again, writes
 * other bytes over the written ones, unlocks), so that an operation run a
 * second time would show: a directory back, a name gone, old bytes back, a
 * lock held again. The per-operation counters say the same (one call).
 * Then:
 *   - a compound whose last operation does not decode: its retry gets
 *     the cached reply as it is;
 *   - without sa_cachethis the retry gets SEQUENCE's result and
 *     RETRY_UNCACHED_REP on the next operation, and nothing runs again;
 *   - misordered sequence ids (ahead, behind, 0) get SEQ_MISORDERED, run
 *     nothing and leave the slot as it was;
 *   - a retry sent while the original is still running (parked on a
 *     journal force that a disk-like flush latency makes slow) gets DELAY,
 *     and once the original is done, its reply;
 *   - REPLAYS (default 10,000) replays keep nothing (each copies the
 *     cached reply to send it, and frees the copy once sent): the slot caches'
 *     bytes (nfs4.slot_cache_bytes) stay as they are, and jnfsd's resident
 *     memory grows by less than 1 MiB (not judged under ASan, whose
 *     quarantine keeps freed memory);
 *   - after the clients leave, no client, session, stateid or cached
 *     reply is left, and jnfsd stops cleanly (its leak check under ASan).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "check.h"
#include "nfs4_test.h"

#define SLOT	  7 /* the slot the test drives; the client's own compounds take 0 */
#define SLOW_SLOT 9

static struct nfs4t_server srv;
static struct nfs4c_client *cl, *cl2;
static struct nfs4c_fh root, adir;
static uint32_t seq; /* the last sequence id used on SLOT */

static void kill_server(void)
{
	if (srv.j.pid > 0)
		kill(srv.j.pid, SIGKILL);
}

/* A compound that starts with SEQUENCE(slot, seqid, cachethis) of its own. */
static void begin(struct nfs4c_compound *c, uint32_t slot, uint32_t seqid, bool cachethis)
{
	nfs4c_compound_init(c, cl);
	c->no_sequence = true;
	CHECK_OK(nfs4c_op_sequence(c, slot, seqid, slot, cachethis));
}

/* The COMPOUND4res bytes of a reply. */
struct reply {
	uint8_t *b;
	size_t n;
};

static void keep(const struct nfs4c_compound *c, struct reply *r)
{
	r->n = c->reply_len - c->body_off;
	r->b = xmalloc(r->n);
	memcpy(r->b, c->reply + c->body_off, r->n);
}

static void check_same(const struct nfs4c_compound *c, const struct reply *r)
{
	size_t n = c->reply_len - c->body_off;
	if (n != r->n || memcmp(c->reply + c->body_off, r->b, n) != 0) {
		fprintf(stderr,
			"the retry's reply (%zu bytes, status %u) is not the first one "
			"(%zu bytes)\n",
			n, (unsigned)c->status, r->n);
		exit(1);
	}
}

static uint64_t calls(const struct nfs4t_stats *st, const char *op)
{
	char name[64];
	snprintf(name, sizeof(name), "nfs4.op.%s", op);
	return nfs4t_stat0(st, name);
}

static void simple(nfs_ftype4 type, const char *name, bool create)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &adir);
	if (create)
		nfs4c_op_create(&c, type, name, NULL, NULL, NULL);
	else
		nfs4c_op_remove(&c, name);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
}

/* ---- the operations, each cached and sent again ---- */

static void replay_create(void)
{
	struct nfs4t_stats a, b;
	struct nfs4c_compound c;
	struct reply r;
	nfs4t_stats(&srv.j, &a);
	begin(&c, SLOT, ++seq, true);
	nfs4c_op_putfh(&c, &adir);
	nfs4c_op_create(&c, NF4DIR, "d", NULL, NULL, NULL);
	nfs4c_op_getfh(&c);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	keep(&c, &r);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK); /* not EXIST */
	check_same(&c, &r);
	simple(NF4DIR, "d", false);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	check_same(&c, &r);
	CHECK_EQ(nfs4t_exists(cl, &adir, "d"), NFS4ERR_NOENT); /* not made again */
	nfs4t_stats(&srv.j, &b);
	CHECK_EQ(calls(&b, "CREATE") - calls(&a, "CREATE"), 1);
	CHECK_EQ(nfs4t_stat(&b, "nfs4.replays") - nfs4t_stat(&a, "nfs4.replays"), 2);
	free(r.b);
	nfs4c_compound_destroy(&c);
	TEST_PASS("CREATE: the retry gets the cached reply; the directory is made once");
}

static void replay_remove(void)
{
	struct nfs4t_stats a, b;
	struct nfs4c_compound c;
	struct reply r;
	simple(NF4DIR, "r", true);
	nfs4t_stats(&srv.j, &a);
	begin(&c, SLOT, ++seq, true);
	nfs4c_op_putfh(&c, &adir);
	nfs4c_op_remove(&c, "r");
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	keep(&c, &r);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK); /* not NOENT */
	check_same(&c, &r);
	simple(NF4DIR, "r", true);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	check_same(&c, &r);
	CHECK_EQ(nfs4t_exists(cl, &adir, "r"), NFS4_OK); /* the new one is not removed */
	nfs4t_stats(&srv.j, &b);
	CHECK_EQ(calls(&b, "REMOVE") - calls(&a, "REMOVE"), 1);
	simple(NF4DIR, "r", false);
	free(r.b);
	nfs4c_compound_destroy(&c);
	TEST_PASS("REMOVE: the retry gets the cached reply, not NOENT; removed once");
}

static void replay_rename(void)
{
	struct nfs4t_stats a, b;
	struct nfs4c_compound c;
	struct reply r;
	simple(NF4DIR, "m1", true);
	nfs4t_stats(&srv.j, &a);
	begin(&c, SLOT, ++seq, true);
	nfs4c_op_putfh(&c, &adir);
	nfs4c_op_savefh(&c);
	nfs4c_op_rename(&c, "m1", "m2");
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	keep(&c, &r);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK); /* not NOENT */
	check_same(&c, &r);
	simple(NF4DIR, "m1", true);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	check_same(&c, &r);
	/* both there: the new m1 was not renamed over m2 */
	CHECK_EQ(nfs4t_exists(cl, &adir, "m1"), NFS4_OK);
	CHECK_EQ(nfs4t_exists(cl, &adir, "m2"), NFS4_OK);
	nfs4t_stats(&srv.j, &b);
	CHECK_EQ(calls(&b, "RENAME") - calls(&a, "RENAME"), 1);
	simple(NF4DIR, "m1", false);
	simple(NF4DIR, "m2", false);
	free(r.b);
	nfs4c_compound_destroy(&c);
	TEST_PASS("RENAME: the retry gets the cached reply, not NOENT; renamed once");
}

static void read_all(const struct nfs4c_fh *fh, const struct stateid4 *sid, uint8_t *out,
		     uint32_t len)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_read(&c, sid, 0, len);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	const struct READ4resok *ok = &nfs4c_res(&c, OP_READ, 0)->opread.resok4;
	CHECK_EQ(ok->data.len, len);
	memcpy(out, ok->data.val, len);
	nfs4c_compound_destroy(&c);
}

static void replay_write(const struct nfs4c_fh *fh, const struct stateid4 *sid)
{
	static uint8_t a_bytes[4096], b_bytes[4096], got[4096];
	struct nfs4t_stats a, b;
	struct nfs4c_compound c, w;
	struct nfs4c_attr at1, at2;
	struct reply r;
	memset(a_bytes, 'A', sizeof(a_bytes));
	memset(b_bytes, 'B', sizeof(b_bytes));
	nfs4t_stats(&srv.j, &a);
	begin(&c, SLOT, ++seq, true);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_write(&c, sid, 0, UNSTABLE4, a_bytes, sizeof(a_bytes));
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	keep(&c, &r);
	/* other bytes over them; a WRITE run again would bring the A's back */
	nfs4c_compound_init(&w, cl);
	nfs4c_op_putfh(&w, fh);
	nfs4c_op_write(&w, sid, 0, UNSTABLE4, b_bytes, sizeof(b_bytes));
	CHECK_EQ(nfs4t_send(&w), NFS4_OK);
	nfs4c_compound_destroy(&w);
	nfs4t_getattr(cl, fh, &at1);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	check_same(&c, &r);
	nfs4t_getattr(cl, fh, &at2);
	CHECK_EQ(at1.change, at2.change);
	CHECK_EQ(at2.size, sizeof(b_bytes));
	read_all(fh, sid, got, sizeof(got));
	CHECK(memcmp(got, b_bytes, sizeof(got)) == 0);
	nfs4t_stats(&srv.j, &b);
	CHECK_EQ(calls(&b, "WRITE") - calls(&a, "WRITE"), 2); /* the original and B */
	free(r.b);
	nfs4c_compound_destroy(&c);
	TEST_PASS("WRITE: the retry gets the cached reply; the data is written once");
}

static void replay_lock(const struct nfs4c_fh *fh, const struct stateid4 *open_sid)
{
	static const char owner[] = "replay-lock-owner";
	struct nfs4t_stats a, b;
	struct nfs4c_compound c, u;
	struct reply r;
	nfs4t_stats(&srv.j, &a);
	begin(&c, SLOT, ++seq, true);
	nfs4c_op_putfh(&c, fh);
	struct nfs4c_lock l = {.type = WRITE_LT,
			       .off = 0,
			       .len = 100,
			       .new_owner = true,
			       .open_stateid = *open_sid,
			       .owner = owner,
			       .owner_len = sizeof(owner) - 1};
	nfs4c_op_lock(&c, &l);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	keep(&c, &r);
	struct stateid4 lsid = nfs4c_res(&c, OP_LOCK, 0)->oplock.resok4.lock_stateid;
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	check_same(&c, &r);
	CHECK_EQ(nfs4c_res(&c, OP_LOCK, 0)->oplock.resok4.lock_stateid.seqid, lsid.seqid);

	/* unlock (the lock stateid moves on); a LOCK run again would take the
	 * range again and move the stateid once more */
	nfs4c_compound_init(&u, cl);
	nfs4c_op_putfh(&u, fh);
	nfs4c_op_locku(&u, WRITE_LT, &lsid, 0, 100);
	CHECK_EQ(nfs4t_send(&u), NFS4_OK);
	struct stateid4 after = nfs4c_res(&u, OP_LOCKU, 0)->oplocku.lock_stateid;
	CHECK_EQ(after.seqid, lsid.seqid + 1);
	nfs4c_compound_destroy(&u);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	check_same(&c, &r);

	/* the range is free for another client, and the stateid is where the
	 * LOCKU left it */
	nfs4c_compound_init(&u, cl2);
	nfs4c_op_putfh(&u, fh);
	nfs4c_op_lockt(&u, WRITE_LT, 0, 100, "other", 5);
	CHECK_EQ(nfs4t_send(&u), NFS4_OK);
	nfs4c_compound_destroy(&u);
	nfs4c_compound_init(&u, cl);
	nfs4c_op_test_stateid(&u, &after, 1);
	CHECK_EQ(nfs4t_send(&u), NFS4_OK);
	const struct TEST_STATEID4resok *t =
		&nfs4c_res(&u, OP_TEST_STATEID, 0)->optest_stateid.tsr_resok4;
	CHECK(t->tsr_status_codes.len == 1 && t->tsr_status_codes.val[0] == NFS4_OK);
	nfs4c_compound_destroy(&u);
	nfs4t_stats(&srv.j, &b);
	CHECK_EQ(calls(&b, "LOCK") - calls(&a, "LOCK"), 1);
	CHECK_EQ(nfs4t_stat(&b, "nfs4.brl.locks"), 0);
	free(r.b);
	nfs4c_compound_destroy(&c);
	TEST_PASS("LOCK: the retry gets the cached reply and the same stateid; locked once");
}

/* A compound whose last operation does not decode (an unknown one): its
 * retry gets the cached reply as it is, with nothing added. */
static void replay_undecodable(void)
{
	struct nfs4c_compound c;
	struct reply r;
	begin(&c, SLOT, ++seq, true);
	nfs4c_op_putfh(&c, &adir);
	nfs4c_op_add(&c, 9999);
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_OP_ILLEGAL);
	CHECK_EQ(c.res.resarray.len, 3);
	keep(&c, &r);
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_OP_ILLEGAL);
	check_same(&c, &r);
	free(r.b);
	nfs4c_compound_destroy(&c);
	TEST_PASS("a compound with an operation that does not decode: its retry gets its reply");
}

/* ---- the other slot rules ---- */

static void replay_uncached(void)
{
	struct nfs4t_stats a, b;
	struct nfs4c_compound c;
	nfs4t_stats(&srv.j, &a);
	begin(&c, SLOT, ++seq, false);
	nfs4c_op_putfh(&c, &adir);
	nfs4c_op_create(&c, NF4DIR, "u", NULL, NULL, NULL);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	simple(NF4DIR, "u", false);
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_RETRY_UNCACHED_REP);
	CHECK_EQ(c.res.resarray.len, 2);
	const struct nfs_resop4 *r0 = &c.res.resarray.val[0], *r1 = &c.res.resarray.val[1];
	CHECK(r0->resop == OP_SEQUENCE && r0->opsequence.sr_status == NFS4_OK);
	CHECK_EQ(r0->opsequence.sr_resok4.sr_sequenceid, seq);
	CHECK_EQ(r0->opsequence.sr_resok4.sr_slotid, SLOT);
	CHECK_EQ(r1->resop, OP_PUTFH);
	CHECK_EQ(nfs_resop4_status(r1), NFS4ERR_RETRY_UNCACHED_REP);
	CHECK_EQ(nfs4t_exists(cl, &adir, "u"), NFS4ERR_NOENT);
	nfs4t_stats(&srv.j, &b);
	CHECK_EQ(calls(&b, "CREATE") - calls(&a, "CREATE"), 1);
	CHECK_EQ(nfs4t_stat(&b, "nfs4.replays_uncached") - nfs4t_stat(&a, "nfs4.replays_uncached"),
		 1);
	nfs4c_compound_destroy(&c);
	TEST_PASS("without cachethis: SEQUENCE OK, RETRY_UNCACHED_REP, nothing run again");
}

static void misordered(void)
{
	struct nfs4t_stats a, b;
	struct nfs4c_compound c;
	const uint32_t bad[] = {seq + 2, seq - 1, 0, seq + 1000};
	nfs4t_stats(&srv.j, &a);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		begin(&c, SLOT, bad[i], true);
		nfs4c_op_putfh(&c, &adir);
		nfs4c_op_create(&c, NF4DIR, "mis", NULL, NULL, NULL);
		CHECK_EQ(nfs4t_send(&c), NFS4ERR_SEQ_MISORDERED);
		CHECK_EQ(c.res.resarray.len, 1);
		nfs4c_compound_destroy(&c);
	}
	CHECK_EQ(nfs4t_exists(cl, &adir, "mis"), NFS4ERR_NOENT);
	nfs4t_stats(&srv.j, &b);
	CHECK_EQ(calls(&b, "CREATE") - calls(&a, "CREATE"), 0);
	CHECK_EQ(nfs4t_stat(&b, "nfs4.seq_misordered") - nfs4t_stat(&a, "nfs4.seq_misordered"),
		 sizeof(bad) / sizeof(bad[0]));
	/* the slot is where it was: the next sequence id is taken */
	begin(&c, SLOT, ++seq, true);
	nfs4c_op_putfh(&c, &adir);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	TEST_PASS("misordered sequence ids: SEQ_MISORDERED, nothing run, the slot unchanged");
}

/*
 * A retry while the original still runs: CREATE on the sync export parks
 * until its journal force is done, which the flush latency makes take a
 * few hundred milliseconds; the same request, sent again on the same
 * connection right after, finds the slot in use. (The server may take the
 * two in either order: whichever it took second is the retry.) Should the
 * machine be so slow that the first was done before the second came, the
 * second gets its cached reply instead, and the test tries again with the
 * next sequence id.
 */
static void in_progress(void)
{
	struct nfs4c_compound c[2];
	struct reply r;
	uint32_t sid = 0;
	int delays = 0;
	for (int attempt = 0; attempt < 8 && !delays; attempt++) {
		char name[32];
		snprintf(name, sizeof(name), "slow-%d", attempt);
		sid++;
		for (int i = 0; i < 2; i++) {
			begin(&c[i], SLOW_SLOT, sid, true);
			nfs4c_op_putfh(&c[i], &root);
			nfs4c_op_create(&c[i], NF4DIR, name, NULL, NULL, NULL);
			CHECK_OK(nfs4c_start(&c[i]));
		}
		CHECK_OK(nfs4c_wait(&c[0]));
		CHECK_OK(nfs4c_wait(&c[1]));
		int retry = c[0].status == NFS4ERR_DELAY ? 0 : 1;
		struct nfs4c_compound *orig = &c[1 - retry], *again = &c[retry];
		CHECK_EQ(orig->status, NFS4_OK);
		keep(orig, &r);
		if (again->status == NFS4ERR_DELAY) {
			delays++;
			CHECK_EQ(again->res.resarray.len, 1);
			CHECK_EQ(again->res.resarray.val[0].resop, OP_SEQUENCE);
			/* once the original is done, the retry gets its reply */
			CHECK_EQ(nfs4t_send(again), NFS4_OK);
		} else {
			printf("attempt %d: the original was done before its retry came\n",
			       attempt);
		}
		check_same(again, &r);
		free(r.b);
		nfs4c_compound_destroy(&c[0]);
		nfs4c_compound_destroy(&c[1]);
	}
	CHECK_EQ(delays, 1);
	TEST_PASS("a retry while the original runs: DELAY, then the original's reply");
}

static void memory(const struct nfs4c_fh *fh, const struct stateid4 *sid, long replays)
{
	struct nfs4t_stats a, b;
	struct nfs4c_compound c;
	struct reply r;
	begin(&c, SLOT, ++seq, true);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_read(&c, sid, 0, 4096);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	keep(&c, &r);
	for (int i = 0; i < 1000; i++) { /* every allocator cache warm */
		CHECK_EQ(nfs4t_send(&c), NFS4_OK);
		check_same(&c, &r);
	}
	nfs4t_stats(&srv.j, &a);
	long rss_a = nfs4t_rss_kib(srv.j.pid);
	for (long i = 0; i < replays; i++) {
		CHECK_EQ(nfs4t_send(&c), NFS4_OK);
		check_same(&c, &r);
	}
	nfs4t_stats(&srv.j, &b);
	long rss_b = nfs4t_rss_kib(srv.j.pid);
	uint64_t cache_a = nfs4t_stat(&a, "nfs4.slot_cache_bytes");
	uint64_t cache_b = nfs4t_stat(&b, "nfs4.slot_cache_bytes");
	printf("%ld replays of a %zu-byte reply: slot caches %llu -> %llu bytes, jnfsd RSS %ld -> "
	       "%ld KiB\n",
	       replays, r.n, (unsigned long long)cache_a, (unsigned long long)cache_b, rss_a,
	       rss_b);
	CHECK_EQ(nfs4t_stat(&b, "nfs4.replays") - nfs4t_stat(&a, "nfs4.replays"), replays);
	CHECK_EQ(cache_a, cache_b);
	if (!NFS4T_ASAN)
		CHECK(rss_b - rss_a < 1024);
	free(r.b);
	nfs4c_compound_destroy(&c);
	TEST_PASS("replays keep nothing: slot caches and memory stay as they were");
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: test-nfs4-replay JNFSD JNFS [REPLAYS]\n");
		return 2;
	}
	long replays = argc == 4 ? atol(argv[3]) : 10000;
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	const char *dirs[] = {"a", NULL};
	nfs4t_server_init(&srv, argv[1], argv[2], 256, dirs,
			  "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n"
			  "/a 127.0.0.1(rw,async,insecure,no_root_squash)\n");
	/* a slow disk, so that a force on the sync export takes long enough
	 * for a retry to find its original still running */
	const char *args[] = {"--flush-latency-us", "100000", NULL};
	nfs4t_server_start(&srv, args);
	atexit(kill_server);

	cl = nfs4t_client(srv.addr, "replay-a", &root);
	struct nfs4c_fh root2;
	cl2 = nfs4t_client(srv.addr, "replay-b", &root2);
	nfs4t_lookup(cl, &root, "a", &adir);

	replay_create();
	replay_remove();
	replay_rename();
	struct nfs4c_fh fh;
	struct stateid4 sid;
	nfs4t_open_create(cl, &adir, "w", "replay-open-owner", &fh, &sid);
	replay_write(&fh, &sid);
	replay_lock(&fh, &sid);
	replay_undecodable();
	replay_uncached();
	misordered();
	in_progress();
	memory(&fh, &sid, replays);
	nfs4t_close(cl, &fh, &sid);

	nfs4t_unmount(cl2);
	nfs4t_unmount(cl);
	struct nfs4t_stats st;
	nfs4t_stats(&srv.j, &st);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.clients"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.sessions"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.stateids"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.slot_cache_bytes"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.share.opens"), 0);
	TEST_PASS("the clients left nothing behind");
	nfs4t_server_fini(&srv);
	return 0;
}
