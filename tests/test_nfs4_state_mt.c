/*
 * test_nfs4_state_mt.c - the NFSv4.1 state core under concurrency (also
 * run under ThreadSanitizer): SEQUENCEs on many slots of one session from
 * several threads, with retries that must come back byte for byte; all
 * threads racing on one slot, where each sequence id must be run exactly
 * once (session invariant 1); seqid changes of one stateid serialized by
 * nfs4_stid_lock(); stateid churn on the same client; and a
 * thread that meanwhile creates and destroys other clients, binds and
 * closes connections, reaps and tests stateids. A watchdog fails a hang.
 */
#include "nfs4_state_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/rand.h"

#define THREADS	   4
#define OWN_SLOTS  15 /* slots 0..59 are private, 4 threads x 15 */
#define SHARED	   63 /* the slot everyone races on */
#define ROUNDS	   20000
#define SHARED_MAX (THREADS * ROUNDS)

struct shared {
	struct nfs4_state *st;
	uint8_t sid[16];
	struct nfs4_client *clp;
	struct nfs4_stid *open;		       /* every thread changes it under nfs4_stid_lock() */
	_Atomic uint32_t runs[SHARED_MAX + 2]; /* NEW answers per seqid of SHARED */
	_Atomic uint32_t shared_seq;	       /* highest seqid known answered */
	atomic_bool stop;
};

struct targ {
	struct shared *sh;
	unsigned t;
};

static void reply_of(uint32_t slot, uint32_t seqid, char *buf, size_t *len)
{
	*len = (size_t)snprintf(buf, 64, "reply slot %u seqid %u", slot, seqid);
}

static void *worker(void *arg)
{
	struct targ *ta = arg;
	struct shared *sh = ta->sh;
	struct rng r;
	rng_seed(&r, ta->t + 1);
	uint32_t seqids[OWN_SLOTS] = {0};
	static _Thread_local uint8_t buf[8192];
	char expect[64];
	size_t elen;

	for (int round = 0; round < ROUNDS; round++) {
		/* a private slot: new request, sometimes its retry */
		unsigned k = (unsigned)rng_below(&r, OWN_SLOTS);
		uint32_t slot = ta->t * OWN_SLOTS + k;
		struct nfs4_seq_args a = {0};
		memcpy(a.sessionid, sh->sid, 16);
		a.slotid = slot;
		a.highest_slotid = SHARED;
		a.sequenceid = ++seqids[k];
		a.cachethis = true;
		a.replay_buf = buf;
		a.replay_cap = sizeof(buf);
		struct nfs4_seq_res res;
		struct nfs4_session *s;
		CHECK_EQ(nfs4_sequence(sh->st, &a, &res, &s), NFS4_OK);
		CHECK_EQ(res.kind, NFS4_SEQ_NEW);
		reply_of(slot, a.sequenceid, expect, &elen);
		CHECK_OK(nfs4_sequence_done(s, slot, expect, elen));
		nfs4_session_put(s);
		if (rng_chance(&r, 30)) {
			CHECK_EQ(nfs4_sequence(sh->st, &a, &res, &s), NFS4_OK);
			CHECK_EQ(res.kind, NFS4_SEQ_REPLAY);
			CHECK_EQ(res.replay_len, elen);
			CHECK_EQ(memcmp(buf, expect, elen), 0);
			nfs4_session_put(s);
		}

		/* the shared slot: try the next seqid; exactly one thread runs it */
		uint32_t cur = atomic_load(&sh->shared_seq);
		a.slotid = SHARED;
		a.sequenceid = cur + 1;
		uint32_t st = nfs4_sequence(sh->st, &a, &res, &s);
		if (st == NFS4_OK && res.kind == NFS4_SEQ_NEW) {
			CHECK(a.sequenceid <= SHARED_MAX);
			CHECK_EQ(atomic_fetch_add(&sh->runs[a.sequenceid], 1), 0);
			reply_of(SHARED, a.sequenceid, expect, &elen);
			CHECK_OK(nfs4_sequence_done(s, SHARED, expect, elen));
			atomic_store(&sh->shared_seq, a.sequenceid);
			nfs4_session_put(s);
		} else if (st == NFS4_OK) {
			/* another thread ran it already: we get its reply */
			CHECK_EQ(res.kind, NFS4_SEQ_REPLAY);
			reply_of(SHARED, a.sequenceid, expect, &elen);
			CHECK_EQ(res.replay_len, elen);
			CHECK_EQ(memcmp(buf, expect, elen), 0);
			nfs4_session_put(s);
		} else {
			CHECK(st == NFS4ERR_DELAY || st == NFS4ERR_SEQ_MISORDERED);
		}

		/* a seqid-changing operation on a shared stateid: check, change,
		 * bump as one step (stateid invariant 5) */
		struct nfs4_stateid before, after;
		nfs4_stid_lock(sh->open);
		nfs4_stid_value(sh->open, &before);
		CHECK_EQ(nfs4_test_stateid(sh->clp, &before), NFS4_OK);
		nfs4_stid_bump(sh->open, &after);
		CHECK_EQ(after.seqid, before.seqid + 1);
		nfs4_stid_unlock(sh->open);

		/* stateid churn on the same client */
		struct nfs4_stid *sd, *f;
		struct nfs4_stateid v;
		CHECK_EQ(nfs4_stid_alloc(sh->clp, NFS4_STID_LOCK, NULL, &sd), NFS4_OK);
		nfs4_stid_lock(sh->open); /* an open's, then a lock stateid's */
		nfs4_stid_lock(sd);
		nfs4_stid_bump(sd, &v);
		nfs4_stid_unlock(sd);
		nfs4_stid_unlock(sh->open);
		CHECK_EQ(nfs4_stid_find(sh->clp, &v, NFS4_STID_LOCK, &f), NFS4_OK);
		nfs4_stid_put(f);
		CHECK_EQ(nfs4_test_stateid(sh->clp, &v), NFS4_OK);
		if (round & 1) {
			nfs4_stid_put(sd);
			CHECK_EQ(nfs4_free_stateid(sh->clp, &v), NFS4_OK);
		} else {
			nfs4_stid_unhash(sd);
			nfs4_stid_put(sd);
		}
	}
	return NULL;
}

/* Other clients come and go; connections are bound and closed. */
static void *churn(void *arg)
{
	struct shared *sh = arg;
	unsigned n = 0;
	while (!atomic_load(&sh->stop)) {
		char owner[32];
		snprintf(owner, sizeof(owner), "churn-%u", n++ % 8);
		uint8_t sid[16];
		struct nfs4_exchange_id_res er;
		CHECK_EQ(exid(sh->st, owner, n, "sys:0:0", 0, &er), NFS4_OK);
		struct nfs4_create_session_args a = cs_args(er.clientid, er.sequenceid, "sys:0:0");
		a.conn_id = 1000 + n;
		struct nfs4_create_session_res cr;
		CHECK_EQ(nfs4_create_session(sh->st, &a, &cr, NULL), NFS4_OK);
		memcpy(sid, cr.sessionid, 16);
		uint32_t dir;
		CHECK_EQ(nfs4_bind_conn_to_session(sh->st, sh->sid, NFS4_CDFC_BACK_OR_BOTH, NULL,
						   2000 + n, &dir),
			 NFS4_OK);
		nfs4_conn_closed(sh->st, 2000 + n);
		nfs4_conn_closed(sh->st, 1000 + n);
		nfs4_state_reap(sh->st, NULL);
		struct nfs4_state_counts c;
		nfs4_state_counts(sh->st, &c);
		CHECK_EQ(nfs4_destroy_session(sh->st, sid, NULL), NFS4_OK);
		CHECK_EQ(nfs4_destroy_clientid(sh->st, er.clientid, NULL), NFS4_OK);
	}
	return NULL;
}

int main(void)
{
	alarm(300); /* watchdog: a hang fails the test */
	struct shared *sh = calloc(1, sizeof(*sh));
	struct rec_store *rs = calloc(1, sizeof(*rs));
	struct nfs4_state_config c;
	test_config(&c, 3, rs);
	sh->st = nfs4_state_create(&c);
	CHECK(sh->st);
	uint64_t id = new_client(sh->st, "mt", 1, sh->sid);
	sh->clp = nfs4_client_find(sh->st, id);
	CHECK_EQ(nfs4_stid_alloc(sh->clp, NFS4_STID_OPEN, NULL, &sh->open), NFS4_OK);

	pthread_t th[THREADS], ch;
	struct targ ta[THREADS];
	CHECK_OK(pthread_create(&ch, NULL, churn, sh));
	for (unsigned t = 0; t < THREADS; t++) {
		ta[t] = (struct targ){sh, t};
		CHECK_OK(pthread_create(&th[t], NULL, worker, &ta[t]));
	}
	for (unsigned t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	atomic_store(&sh->stop, true);
	pthread_join(ch, NULL);

	uint32_t last = atomic_load(&sh->shared_seq);
	for (uint32_t q = 1; q <= last; q++)
		CHECK_EQ(atomic_load(&sh->runs[q]), 1);
	printf("shared slot: %u sequence ids, each run once\n", last);
	struct nfs4_stateid ov;
	nfs4_stid_value(sh->open, &ov);
	CHECK_EQ(ov.seqid, 1 + THREADS * ROUNDS);
	nfs4_stid_unhash(sh->open);
	nfs4_stid_put(sh->open);
	struct nfs4_state_counts cnt;
	nfs4_state_counts(sh->st, &cnt);
	CHECK_EQ(cnt.clients, 1);
	CHECK_EQ(cnt.sessions, 1);
	CHECK_EQ(cnt.stateids, 0);
	nfs4_client_put(sh->clp);
	nfs4_state_destroy(sh->st);
	free(rs);
	free(sh);
	TEST_PASS("concurrent SEQUENCEs on many slots, one contended slot, stateid churn");
	return 0;
}
