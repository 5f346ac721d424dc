/*
 * test_nfs4_scale.c - NFSv4.1 state at scale against jnfsd: many clients'
 * opens and locks, kept while their leases have run out (the courteous
 * server, docs/nfs4-state.md), and all of it freed once other clients
 * conflict with it.
 *
 *   test-nfs4-scale JNFSD JNFS [CLIENTS [FILES]]
 *
 * CLIENTS (default 100) clients each open FILES (default 100) files and
 * lock a byte range of each: CLIENTS x FILES opens and as many locks. The
 * first half of the clients use the files of directory f, the second half
 * those of directory g; each client's ranges are its own, so nothing
 * conflicts yet; a live client's conflicting LOCK and OPEN are DENIED and
 * SHARE_DENIED. Then the clients vanish without a word (their
 * connections close, nothing renews their leases; jnfsd runs with a
 * 5-second lease). Once the leases have run out the clients are courtesy
 * clients and all their state is still there. A new client then takes a
 * write lock over the whole of f's first file (every client of the first
 * half holds a lock there) and opens g's first file denying everything
 * (every client of the second half has it open): each conflict expires
 * the courtesy client in the way, DELAY asks the new client to come back
 * while some remain, and in the end the new client holds its lock and its
 * open, and every other client is gone with all its state. Checked:
 * jnfsd's counters of clients, stateids, share reservations and
 * byte-range locks (all back to zero once the new client leaves too), and
 * jnfsd's resident memory, back within 10% of what it was before the
 * clients came or a quarter of what their state took. That is judged on the third such wave: the first ones
 * leave the allocator's arenas and the engine's metadata cache larger
 * (their figures are printed too). Under ASan, whose quarantine keeps
 * freed memory, one wave runs and memory is not judged.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/compiler.h"
#include "check.h"
#include "nfs4_test.h"

#define LEASE_S "5"
#define THREADS 10
#define RANGE	16 /* bytes each client locks in each file */

static struct nfs4t_server srv;
static int nclients = 100, nfiles = 100;
static struct nfs4c_fh root, fdir, gdir;
static struct nfs4c_fh *ffh, *gfh; /* the files of f and of g */
static struct nfs4c_client **clients;

static void kill_server(void)
{
	if (srv.j.pid > 0)
		kill(srv.j.pid, SIGKILL);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The files: OPEN(create) + GETFH + CLOSE each, by a client that leaves. */
static void make_files(void)
{
	struct nfs4c_client *s = nfs4t_client(srv.addr, "scale-setup", &root);
	nfs4t_lookup(s, &root, "f", &fdir);
	nfs4t_lookup(s, &root, "g", &gdir);
	for (int d = 0; d < 2; d++) {
		for (int i = 0; i < nfiles; i++) {
			char name[32];
			struct stateid4 sid;
			snprintf(name, sizeof(name), "file-%d", i);
			struct nfs4c_fh *fh = d ? &gfh[i] : &ffh[i];
			nfs4t_open_create(s, d ? &gdir : &fdir, name, "setup", fh, &sid);
			nfs4t_close(s, fh, &sid);
		}
	}
	nfs4t_unmount(s);
}

static struct stateid4 current_sid(void)
{
	return (struct stateid4){.seqid = 1}; /* RFC 8881 §16.2.3.1.2 */
}

static int wave_no;

/* Client k: mount, then for each of its files OPEN(CLAIM_FH) + LOCK of its
 * own range, through the current stateid. */
static void client_work(int k)
{
	char owner[32], lock_owner[32];
	struct nfs4c_fh r;
	snprintf(owner, sizeof(owner), "scale-%d-%d", wave_no, k);
	snprintf(lock_owner, sizeof(lock_owner), "scale-lock-%d", k);
	struct nfs4c_client *cl = nfs4t_client(srv.addr, owner, &r);
	bool first_half = k < nclients / 2;
	int slot = first_half ? k : k - nclients / 2;
	for (int i = 0; i < nfiles; i++) {
		struct nfs4c_compound c;
		nfs4c_compound_init(&c, cl);
		nfs4c_op_putfh(&c, first_half ? &ffh[i] : &gfh[i]);
		struct nfs4c_open o = {.owner = owner,
				       .owner_len = (uint32_t)strlen(owner),
				       .access = OPEN4_SHARE_ACCESS_BOTH,
				       .deny = OPEN4_SHARE_DENY_NONE,
				       .claim = CLAIM_FH};
		nfs4c_op_open(&c, &o);
		struct nfs4c_lock l = {.type = WRITE_LT,
				       .off = (uint64_t)slot * RANGE,
				       .len = RANGE,
				       .new_owner = true,
				       .open_stateid = current_sid(),
				       .owner = lock_owner,
				       .owner_len = (uint32_t)strlen(lock_owner)};
		nfs4c_op_lock(&c, &l);
		CHECK_EQ(nfs4t_send(&c), NFS4_OK);
		nfs4c_compound_destroy(&c);
	}
	clients[k] = cl;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	for (int k = t; k < nclients; k += THREADS)
		client_work(k);
	return NULL;
}

struct state_counts {
	uint64_t clients, courtesy, expired, stateids, opens, locks, sessions, cache;
};

static void counts(struct state_counts *s)
{
	struct nfs4t_stats st;
	nfs4t_stats(&srv.j, &st);
	s->clients = nfs4t_stat(&st, "nfs4.clients");
	s->courtesy = nfs4t_stat(&st, "nfs4.clients_courtesy");
	s->expired = nfs4t_stat(&st, "nfs4.clients_expired");
	s->stateids = nfs4t_stat(&st, "nfs4.stateids");
	s->opens = nfs4t_stat(&st, "nfs4.share.opens");
	s->locks = nfs4t_stat(&st, "nfs4.brl.locks");
	s->sessions = nfs4t_stat(&st, "nfs4.sessions");
	s->cache = nfs4t_stat(&st, "nfs4.slot_cache_bytes");
}

/* Send c until it is not DELAY (the courtesy clients in its way go a few
 * at a time); returns its status and how many DELAYs it took. */
static nfsstat4 until_not_delay(struct nfs4c_compound *c, int *delays)
{
	nfsstat4 st;
	*delays = 0;
	while ((st = nfs4t_send(c)) == NFS4ERR_DELAY) {
		CHECK(++*delays < 10000);
		usleep(1000);
	}
	return st;
}

/*
 * A newcomer's first two calls against the state the waves hold: c (empty,
 * on its client) OPENs f's first file by open owner *o (CLAIM_FH, BOTH,
 * DENY_NONE), which must succeed, and is then reset to a LOCK of the whole
 * file by the new lock owner lock_owner, not sent yet. The open stateid.
 */
static struct stateid4 open_then_lock_all(struct nfs4c_compound *c, struct nfs4c_open *o,
					  const char *owner, const char *lock_owner)
{
	*o = (struct nfs4c_open){.owner = owner,
				 .owner_len = (uint32_t)strlen(owner),
				 .access = OPEN4_SHARE_ACCESS_BOTH,
				 .deny = OPEN4_SHARE_DENY_NONE,
				 .claim = CLAIM_FH};
	nfs4c_op_putfh(c, &ffh[0]);
	nfs4c_op_open(c, o);
	CHECK_EQ(nfs4t_send(c), NFS4_OK);
	struct stateid4 open = nfs4c_res(c, OP_OPEN, 0)->opopen.resok4.stateid;
	nfs4c_compound_reset(c);
	nfs4c_op_putfh(c, &ffh[0]);
	struct nfs4c_lock l = {.type = WRITE_LT,
			       .off = 0,
			       .len = UINT64_MAX,
			       .new_owner = true,
			       .open_stateid = open,
			       .owner = lock_owner,
			       .owner_len = (uint32_t)strlen(lock_owner)};
	nfs4c_op_lock(c, &l);
	return open;
}

/*
 * A live client's conflicts stand: LOCK over the whole of f's first file
 * is DENIED naming one of the locks there, OPEN of g's first file denying
 * everything is SHARE_DENIED, and nobody is expired.
 */
static void live_conflicts(const struct state_counts *held)
{
	struct nfs4c_fh yr;
	struct nfs4c_compound c;
	struct state_counts now;
	struct nfs4c_client *y = nfs4t_client(srv.addr, "scale-live", &yr);
	struct nfs4c_open o;
	nfs4c_compound_init(&c, y);
	struct stateid4 yopen = open_then_lock_all(&c, &o, "y", "yl");
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_DENIED);
	const struct LOCK4denied *d = &nfs4c_res(&c, OP_LOCK, 0)->oplock.denied;
	CHECK(d->length == RANGE && d->offset % RANGE == 0 && d->locktype == WRITE_LT);
	CHECK(d->offset / RANGE < (uint64_t)nclients / 2);
	CHECK(d->owner.owner.len > 0 && !memcmp(d->owner.owner.val, "scale-lock-", 11));
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &gfh[0]);
	o.deny = OPEN4_SHARE_DENY_BOTH;
	nfs4c_op_open(&c, &o);
	CHECK_EQ(nfs4t_send(&c), NFS4ERR_SHARE_DENIED);
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &ffh[0]);
	nfs4c_op_close(&c, &yopen);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	nfs4t_unmount(y);
	counts(&now);
	CHECK_EQ(now.clients, held->clients);
	CHECK_EQ(now.expired, held->expired);
	CHECK_EQ(now.stateids, held->stateids);
	CHECK_EQ(now.opens, held->opens);
	CHECK_EQ(now.locks, held->locks);
}

/* jnfsd's RSS once it is at most limit KiB, or after 10 s. */
static long rss_settled(long limit)
{
	long rss = nfs4t_rss_kib(srv.j.pid);
	for (double t0 = now_s(); rss > limit && now_s() - t0 < 10; usleep(100000))
		rss = nfs4t_rss_kib(srv.j.pid);
	return rss;
}

/*
 * One wave: the clients come, hold their state, vanish; their leases run
 * out; a new client's conflicts free everything. *rss_before: jnfsd's RSS
 * before the clients came. Once all is freed the memory the clients took
 * must go back, not stay at its high-water mark: at least half of it
 * (the reaper gives it back within seconds).
 */
static void wave(long *rss_before, long *rss_peak)
{
	struct state_counts s0, s1, s2, s3, s4;
	wave_no++;
	counts(&s0);
	CHECK(s0.clients == 0 && s0.stateids == 0 && s0.opens == 0 && s0.locks == 0);
	long rss0 = nfs4t_rss_kib(srv.j.pid);

	double t0 = now_s();
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	uint64_t want = (uint64_t)nclients * (uint64_t)nfiles;
	counts(&s1);
	long rss1 = nfs4t_rss_kib(srv.j.pid);
	printf("wave %d: %d clients hold %llu opens and %llu locks (%.1f s): %llu stateids, jnfsd "
	       "RSS %ld KiB (%ld before)\n",
	       wave_no, nclients, (unsigned long long)s1.opens, (unsigned long long)s1.locks,
	       now_s() - t0, (unsigned long long)s1.stateids, rss1, rss0);
	CHECK_EQ(s1.clients, nclients);
	CHECK_EQ(s1.opens, want);
	CHECK_EQ(s1.locks, want);
	CHECK_EQ(s1.stateids, 2 * want);
	live_conflicts(&s1);
	TEST_PASS("the clients hold their opens and locks; a live client's conflicts stand");

	/* they vanish: connections closed, nothing renews */
	for (int k = 0; k < nclients; k++)
		nfs4c_destroy(clients[k]);
	t0 = now_s();
	do {
		CHECK(now_s() - t0 < 60);
		usleep(200000);
		counts(&s2);
	} while (s2.courtesy < (uint64_t)nclients);
	printf("wave %d: all %d leases ran out after %.1f s: %llu courtesy clients keep %llu "
	       "stateids\n",
	       wave_no, nclients, now_s() - t0, (unsigned long long)s2.courtesy,
	       (unsigned long long)s2.stateids);
	/* a courteous server: everything is still there */
	CHECK_EQ(s2.clients, nclients);
	CHECK_EQ(s2.opens, want);
	CHECK_EQ(s2.locks, want);
	CHECK_EQ(s2.stateids, 2 * want);
	CHECK_EQ(s2.expired, s0.expired);
	TEST_PASS("expired leases: the courtesy clients keep all their state");

	/* a new client conflicts with every one of them */
	struct nfs4c_fh xr;
	struct nfs4c_client *x = nfs4t_client(srv.addr, "scale-conflict", &xr);
	struct nfs4c_compound c;
	int delays_lock, delays_open;
	struct nfs4c_open o;
	nfs4c_compound_init(&c, x);
	struct stateid4 xopen_f = open_then_lock_all(&c, &o, "x", "xl");
	CHECK_EQ(until_not_delay(&c, &delays_lock), NFS4_OK);
	struct stateid4 xlock = nfs4c_res(&c, OP_LOCK, 0)->oplock.resok4.lock_stateid;
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &gfh[0]);
	o.deny = OPEN4_SHARE_DENY_BOTH;
	nfs4c_op_open(&c, &o);
	CHECK_EQ(until_not_delay(&c, &delays_open), NFS4_OK);
	struct stateid4 xopen_g = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	nfs4c_compound_destroy(&c);
	counts(&s3);
	printf("wave %d: the conflicting LOCK took %d DELAYs, the OPEN %d; %llu clients expired\n",
	       wave_no, delays_lock, delays_open, (unsigned long long)(s3.expired - s0.expired));
	CHECK_EQ(s3.expired - s0.expired, nclients);
	CHECK_EQ(s3.clients, 1);
	CHECK_EQ(s3.courtesy, 0);
	CHECK_EQ(s3.opens, 2); /* the new client's two */
	CHECK_EQ(s3.locks, 1); /* and its lock */
	CHECK_EQ(s3.stateids, 3);
	TEST_PASS("conflicts expire every courtesy client with all its state");

	nfs4c_compound_init(&c, x);
	nfs4c_op_putfh(&c, &ffh[0]);
	nfs4c_op_locku(&c, WRITE_LT, &xlock, 0, UINT64_MAX);
	nfs4c_op_close(&c, &xopen_f);
	nfs4c_op_putfh(&c, &gfh[0]);
	nfs4c_op_close(&c, &xopen_g);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	nfs4t_unmount(x);
	counts(&s4);
	CHECK_EQ(s4.clients, 0);
	CHECK_EQ(s4.sessions, 0);
	CHECK_EQ(s4.stateids, 0);
	CHECK_EQ(s4.opens, 0);
	CHECK_EQ(s4.locks, 0);
	CHECK_EQ(s4.cache, 0);
	long rss4 = rss_settled(rss0 + (rss1 - rss0) / 2);
	printf("wave %d: after, %llu clients, %llu sessions, %llu stateids, %llu opens, %llu "
	       "locks, "
	       "%llu cached reply bytes; jnfsd RSS %ld KiB (%ld before the clients came, %ld with "
	       "them)\n",
	       wave_no, (unsigned long long)s4.clients, (unsigned long long)s4.sessions,
	       (unsigned long long)s4.stateids, (unsigned long long)s4.opens,
	       (unsigned long long)s4.locks, (unsigned long long)s4.cache, rss4, rss0, rss1);
	if (!NFS4T_ASAN)
		CHECK(rss4 <= rss0 + (rss1 - rss0) / 2);
	TEST_PASS("all of it freed: counters at zero, memory given back");
	*rss_before = rss0;
	*rss_peak = rss1;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: test-nfs4-scale JNFSD JNFS [CLIENTS [FILES]]\n");
		return 2;
	}
	if (argc >= 4)
		nclients = atoi(argv[3]);
	if (argc >= 5)
		nfiles = atoi(argv[4]);
	CHECK(nclients >= 2 && nclients % 2 == 0 && nfiles >= 1);
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(600);
	const char *dirs[] = {"f", "g", NULL};
	nfs4t_server_init(&srv, argv[1], argv[2], 256, dirs,
			  "/ 127.0.0.1(rw,async,insecure,no_root_squash)\n");
	const char *args[] = {"--lease-seconds", LEASE_S, NULL};
	nfs4t_server_start(&srv, args);
	atexit(kill_server);
	ffh = calloc((size_t)nfiles, sizeof(*ffh));
	gfh = calloc((size_t)nfiles, sizeof(*gfh));
	clients = calloc((size_t)nclients, sizeof(*clients));
	CHECK(ffh && gfh && clients);
	make_files();

	/* Memory: the first waves leave the allocator's arenas laid out for
	 * the state they held (the free pages go back to the system, what is
	 * still used is scattered among them) and the engine's metadata cache
	 * a little larger; once that is done a wave must leave nothing
	 * behind. How the allocator's pages fall still moves the RSS after a
	 * wave by up to a megabyte either way (seen: -0.3 to +1.1 MiB on
	 * 10 MiB, the same before and after unrelated changes), so what is
	 * left may be 10% of the RSS before or a quarter of what the wave's
	 * state took, whichever is more: a wave's state left behind (7 MiB
	 * here) is far above both. Every wave's figures are printed. */
	int waves = NFS4T_ASAN ? 1 : 3;
	long before = 0, peak = 0;
	for (int w = 0; w < waves; w++)
		wave(&before, &peak);
	if (!NFS4T_ASAN) {
		long slack = MAX(before / 10, (peak - before) / 4);
		long after = rss_settled(before + slack);
		printf("jnfsd RSS %ld KiB before the last wave, %ld with its state, %ld after it "
		       "(at most %ld)\n",
		       before, peak, after, before + slack);
		CHECK(after <= before + slack);
		TEST_PASS("memory back after a wave (10%, or a quarter of the state)");
	}
	nfs4t_server_fini(&srv);
	free(ffh);
	free(gfh);
	free(clients);
	return 0;
}
