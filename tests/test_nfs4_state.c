/*
 * test_nfs4_state.c - the NFSv4.1 state core (src/nfs4/state/client.h, grace.h,
 * session.h, stateid.h), one thread: every row of EXCHANGE_ID's case table,
 * CREATE_SESSION retries and channel negotiation, the SEQUENCE slot rules,
 * replies that never grow memory, leases and the courteous server, grace
 * and reclaim answers, stateid validation (STALE after a restart), the back
 * channel, and 100 clients with many stateids expiring to nothing.
 * Time is a fake clock the test moves; nothing sleeps.
 */
#include "nfs4_state_util.h"

#include <stdlib.h>

static struct nfs4_state *make(uint32_t epoch, struct rec_store *rs)
{
	struct nfs4_state_config c;
	test_config(&c, epoch, rs);
	struct nfs4_state *st = nfs4_state_create(&c);
	CHECK(st);
	return st;
}

static unsigned nclients(struct nfs4_state *st)
{
	struct nfs4_state_counts c;
	nfs4_state_counts(st, &c);
	return c.clients;
}

static uint32_t try_create_session(struct nfs4_state *st, uint64_t clientid, uint32_t sequence,
				   const char *who, struct nfs4_create_session_res *r)
{
	struct nfs4_create_session_args a = cs_args(clientid, sequence, who);
	return nfs4_create_session(st, &a, r, NULL);
}

/* Every row of RFC 8881 §18.35.5 (the table in client.c). */
static void test_exchange_id_cases(void)
{
	struct rec_store rs = {0};
	struct nfs4_state *st = make(7, &rs);
	struct nfs4_exchange_id_res r1, r2, r3;
	struct nfs4_create_session_res cr;

	/* case 1: a new owner: an unconfirmed record of this epoch */
	CHECK_EQ(exid(st, "alpha", 1, "sys:0:0", 0, &r1), NFS4_OK);
	CHECK_EQ(r1.clientid >> 32, 7);
	CHECK_EQ(r1.sequenceid, 1);
	CHECK(!(r1.flags & EXCHGID4_FLAG_CONFIRMED_R));
	CHECK_EQ(r1.flags & EXCHGID4_FLAG_MASK_PNFS, EXCHGID4_FLAG_USE_PNFS_MDS);
	CHECK_EQ(rs.saves, 0); /* nothing durable before confirmation */

	/* case 4: again while unconfirmed: the record is replaced */
	CHECK_EQ(exid(st, "alpha", 1, "sys:0:0", 0, &r2), NFS4_OK);
	CHECK(r2.clientid != r1.clientid);
	CHECK_EQ(nclients(st), 1); /* client invariant 1 */
	CHECK_EQ(try_create_session(st, r1.clientid, 1, "sys:0:0", &cr), NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(try_create_session(st, r2.clientid, 1, "sys:0:0", &cr), NFS4_OK);
	CHECK_EQ(rs.saves, 1);
	CHECK(rec_has_owner(&rs, "alpha"));

	/* case 2: same verifier and principal: the same client, confirmed */
	CHECK_EQ(exid(st, "alpha", 1, "sys:0:0", 0, &r3), NFS4_OK);
	CHECK_EQ(r3.clientid, r2.clientid);
	CHECK(r3.flags & EXCHGID4_FLAG_CONFIRMED_R);
	CHECK_EQ(r3.sequenceid, 2);

	/* case 6: update with everything matching */
	CHECK_EQ(exid(st, "alpha", 1, "sys:0:0",
		      EXCHGID4_FLAG_UPD_CONFIRMED_REC_A | EXCHGID4_FLAG_USE_PNFS_MDS, &r3),
		 NFS4_OK);
	CHECK_EQ(r3.clientid, r2.clientid);
	CHECK(r3.flags & EXCHGID4_FLAG_CONFIRMED_R);
	/* case 7: update of an owner with no confirmed record */
	CHECK_EQ(exid(st, "beta", 1, "sys:0:0", EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, &r3),
		 NFS4ERR_NOENT);
	/* case 8: update with another verifier */
	CHECK_EQ(exid(st, "alpha", 2, "sys:0:0", EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, &r3),
		 NFS4ERR_NOT_SAME);
	/* case 9: update by another principal */
	CHECK_EQ(exid(st, "alpha", 1, "sys:5:5", EXCHGID4_FLAG_UPD_CONFIRMED_REC_A, &r3),
		 NFS4ERR_PERM);
	/* flags a client may not send */
	CHECK_EQ(exid(st, "alpha", 1, "sys:0:0", EXCHGID4_FLAG_CONFIRMED_R, &r3), NFS4ERR_INVAL);
	CHECK_EQ(exid(st, "alpha", 1, "sys:0:0", 0x8, &r3), NFS4ERR_INVAL);

	/* case 3: another principal while alpha has a session: in use */
	CHECK_EQ(exid(st, "alpha", 1, "sys:5:5", 0, &r3), NFS4ERR_CLID_INUSE);
	/* ...and once alpha has no state, the collision replaces it */
	CHECK_EQ(nfs4_destroy_session(st, cr.sessionid, NULL), NFS4_OK);
	CHECK_EQ(exid(st, "alpha", 1, "sys:5:5", 0, &r3), NFS4_OK);
	CHECK(r3.clientid != r2.clientid && !(r3.flags & EXCHGID4_FLAG_CONFIRMED_R));
	CHECK_EQ(nfs4_destroy_clientid(st, r2.clientid, NULL), NFS4ERR_STALE_CLIENTID);
	CHECK(!rec_has_owner(&rs, "alpha"));
	CHECK_EQ(nclients(st), 1);
	nfs4_state_destroy(st);
	TEST_PASS("exchange_id cases 1-4, 6-9");
}

/* Case 5: a rebooted client. Its old incarnation and state live until the
 * new one is confirmed; then they go, and its record is replaced. */
static void test_exchange_id_reboot(void)
{
	struct rec_store rs = {0};
	struct nfs4_state *st = make(8, &rs);
	uint8_t sid1[16];
	uint64_t old = new_client(st, "gamma", 1, sid1);
	struct nfs4_client *oc = nfs4_client_find(st, old);
	struct payload pl = {0};
	struct nfs4_stid *sd;
	struct nfs4_stateid v;
	CHECK_EQ(nfs4_stid_alloc(oc, NFS4_STID_OPEN, &pl, &sd), NFS4_OK);
	nfs4_stid_value(sd, &v);
	nfs4_stid_put(sd);

	struct nfs4_exchange_id_res r;
	CHECK_EQ(exid(st, "gamma", 2, "sys:0:0", 0, &r), NFS4_OK);
	CHECK(r.clientid != old && !(r.flags & EXCHGID4_FLAG_CONFIRMED_R));
	CHECK_EQ(r.sequenceid, 1);
	/* the old incarnation still works meanwhile */
	run_compound(st, sid1, 0, 1, true, "ok", 2);
	CHECK_EQ(nfs4_test_stateid(oc, &v), NFS4_OK);
	CHECK_EQ(atomic_load(&pl.released), 0);

	struct nfs4_create_session_res cr;
	CHECK_EQ(try_create_session(st, r.clientid, 1, "sys:0:0", &cr), NFS4_OK);
	/* confirmed: the old client, its session and its state are gone */
	struct nfs4_seq_res sr;
	struct nfs4_session *s;
	CHECK_EQ(do_seq(st, sid1, 0, 2, false, false, &sr, &s), NFS4ERR_BADSESSION);
	CHECK_EQ(atomic_load(&pl.released), 1);
	CHECK_EQ(nfs4_test_stateid(oc, &v), NFS4ERR_BAD_STATEID);
	CHECK(!nfs4_client_find(st, old));
	CHECK_EQ(rs.n, 1);
	CHECK_EQ(rs.recs[0].clientid, r.clientid);
	CHECK_EQ(rs.forgets, 1);
	nfs4_client_put(oc);
	nfs4_state_destroy(st);
	TEST_PASS("exchange_id case 5: client restart");
}

static void test_create_session(void)
{
	struct rec_store rs = {0};
	struct nfs4_state_config c;
	test_config(&c, 9, &rs);
	c.max_sessions_per_client = 2;
	/* one full session (64 slots of 8 KiB) and ten 4 KiB slots */
	c.cache_budget = 64 * 8192 + 10 * 4096;
	struct nfs4_state *st = nfs4_state_create(&c);
	struct nfs4_exchange_id_res er;
	struct nfs4_create_session_res r1, r2;

	CHECK_EQ(exid(st, "delta", 1, "sys:0:0", 0, &er), NFS4_OK);
	/* unconfirmed record, other principal */
	CHECK_EQ(try_create_session(st, er.clientid, 1, "sys:9:9", &r1), NFS4ERR_CLID_INUSE);
	/* misordered before the first */
	CHECK_EQ(try_create_session(st, er.clientid, 2, "sys:0:0", &r1), NFS4ERR_SEQ_MISORDERED);
	CHECK_EQ(try_create_session(st, er.clientid, 0, "sys:0:0", &r1), NFS4ERR_SEQ_MISORDERED);
	/* unknown, and of another epoch */
	CHECK_EQ(try_create_session(st, er.clientid + 100, 1, "sys:0:0", &r1),
		 NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(try_create_session(st, er.clientid ^ (1ull << 40), 1, "sys:0:0", &r1),
		 NFS4ERR_STALE_CLIENTID);
	/* too small a fore channel */
	struct nfs4_create_session_args a = cs_args(er.clientid, 1, "sys:0:0");
	a.fore.maxresponsesize = 100;
	CHECK_EQ(nfs4_create_session(st, &a, &r1, NULL), NFS4ERR_TOOSMALL);
	a = cs_args(er.clientid, 1, "sys:0:0");
	a.back.maxoperations = 1;
	CHECK_EQ(nfs4_create_session(st, &a, &r1, NULL), NFS4ERR_TOOSMALL);
	/* a record store failure confirms nothing; the same sequence works after */
	rs.fail = -EIO;
	CHECK_EQ(try_create_session(st, er.clientid, 1, "sys:0:0", &r1), NFS4ERR_SERVERFAULT);
	CHECK_EQ(rs.saves, 0);

	a = cs_args(er.clientid, 1, "sys:0:0");
	a.fore.maxrequests = 1000;
	a.fore.maxresponsesize_cached = 1 << 20;
	a.fore.maxoperations = 1000;
	a.flags |= CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_RDMA;
	uint64_t cseq = 0;
	CHECK_EQ(nfs4_create_session(st, &a, &r1, &cseq), NFS4_OK);
	CHECK(cseq > 0); /* the record's commit sequence, to force before replying */
	CHECK_EQ(r1.sequence, 1);
	CHECK_EQ(r1.flags, CREATE_SESSION4_FLAG_CONN_BACK_CHAN); /* no persist, no RDMA */
	CHECK_EQ(r1.fore.maxrequests, 64);			/* the server's limit */
	CHECK_EQ(r1.fore.maxresponsesize_cached, 8192);
	CHECK_EQ(r1.fore.maxoperations, 128);
	CHECK_EQ(r1.back.maxrequests, 1);
	CHECK_EQ(r1.back.maxresponsesize_cached, 0);
	CHECK_EQ(memcmp(r1.sessionid, &(uint8_t[8]){0, 0, 0, 9, 0, 0, 0, 1}, 8), 0);

	/* the retry: the same answer, no second session (session invariant 4) */
	struct nfs4_state_counts cnt;
	CHECK_EQ(nfs4_create_session(st, &a, &r2, NULL), NFS4_OK);
	CHECK_EQ(memcmp(&r1, &r2, sizeof(r1)), 0);
	nfs4_state_counts(st, &cnt);
	CHECK_EQ(cnt.sessions, 1);
	/* ...and a misordered one */
	CHECK_EQ(try_create_session(st, er.clientid, 3, "sys:0:0", &r2), NFS4ERR_SEQ_MISORDERED);
	CHECK_EQ(try_create_session(st, er.clientid, 0, "sys:0:0", &r2), NFS4ERR_SEQ_MISORDERED);
	/* EXCHANGE_ID says which sequence comes next */
	CHECK_EQ(exid(st, "delta", 1, "sys:0:0", 0, &er), NFS4_OK);
	CHECK_EQ(er.sequenceid, 2);

	/* the cache budget: the second session gets the slots that fit */
	a = cs_args(er.clientid, 2, "sys:0:0");
	CHECK_EQ(nfs4_create_session(st, &a, &r2, NULL), NFS4_OK);
	CHECK_EQ(r2.fore.maxrequests, 10);
	nfs4_state_counts(st, &cnt);
	CHECK(cnt.cache_reserved <= c.cache_budget);
	/* per-client session bound */
	struct nfs4_create_session_res r3;
	CHECK_EQ(try_create_session(st, er.clientid, 3, "sys:0:0", &r3), NFS4ERR_NOSPC);
	CHECK_EQ(nfs4_destroy_session(st, r2.sessionid, NULL), NFS4_OK);
	CHECK_EQ(nfs4_destroy_session(st, r2.sessionid, NULL), NFS4ERR_BADSESSION);
	/* nothing left in the budget for a third client */
	CHECK_EQ(exid(st, "eps", 1, "sys:0:0", 0, &er), NFS4_OK);
	a = cs_args(er.clientid, 1, "sys:0:0");
	CHECK_EQ(nfs4_create_session(st, &a, &r2, NULL), NFS4_OK);
	CHECK_EQ(r2.fore.maxrequests, 10);
	CHECK_EQ(exid(st, "zeta", 1, "sys:0:0", 0, &er), NFS4_OK);
	a = cs_args(er.clientid, 1, "sys:0:0");
	CHECK_EQ(nfs4_create_session(st, &a, &r2, NULL), NFS4ERR_DELAY);
	nfs4_state_destroy(st);
	TEST_PASS("create_session: retry, misordered, negotiation, bounds");
}

static void test_sequence_slots(void)
{
	struct nfs4_state *st = make(10, NULL);
	uint8_t sid[16];
	new_client(st, "eta", 1, sid);
	struct nfs4_seq_res r;
	struct nfs4_session *s, *s2;
	static const char reply1[] = "reply one: SEQUENCE OPEN GETFH";

	/* new request, answered, cached */
	CHECK_EQ(do_seq(st, sid, 3, 1, true, false, &r, &s), NFS4_OK);
	CHECK_EQ(r.kind, NFS4_SEQ_NEW);
	CHECK_EQ(r.sequenceid, 1);
	CHECK_EQ(r.slotid, 3);
	CHECK_EQ(r.highest_slotid, 63);
	CHECK_EQ(r.target_highest_slotid, 63);
	/* its retry while it runs: DELAY; another seqid: misordered */
	CHECK_EQ(do_seq(st, sid, 3, 1, true, false, &r, &s2), NFS4ERR_DELAY);
	CHECK_EQ(do_seq(st, sid, 3, 2, true, false, &r, &s2), NFS4ERR_SEQ_MISORDERED);
	CHECK_OK(nfs4_sequence_done(s, 3, reply1, sizeof(reply1)));
	nfs4_session_put(s);

	/* the retry: byte for byte, nothing run (no slot taken) */
	memset(replay_buf, 0, sizeof(replay_buf));
	CHECK_EQ(do_seq(st, sid, 3, 1, true, false, &r, &s), NFS4_OK);
	CHECK_EQ(r.kind, NFS4_SEQ_REPLAY);
	CHECK_EQ(r.replay_len, sizeof(reply1));
	CHECK_EQ(memcmp(replay_buf, reply1, sizeof(reply1)), 0);
	nfs4_session_put(s);
	/* a false retry: same slot and seqid, another request */
	CHECK_EQ(do_seq(st, sid, 3, 1, false, false, &r, &s), NFS4ERR_SEQ_FALSE_RETRY);
	CHECK_EQ(do_seq(st, sid, 3, 1, true, true, &r, &s), NFS4ERR_SEQ_FALSE_RETRY);
	/* misordered: ahead by two, and behind */
	CHECK_EQ(do_seq(st, sid, 3, 3, true, false, &r, &s), NFS4ERR_SEQ_MISORDERED);
	CHECK_EQ(do_seq(st, sid, 3, 0, true, false, &r, &s), NFS4ERR_SEQ_MISORDERED);
	/* a slot never used has no reply for seqid 0 */
	CHECK_EQ(do_seq(st, sid, 4, 0, true, false, &r, &s), NFS4ERR_SEQ_MISORDERED);

	/* uncached: cachethis false in a longer compound: SEQUENCE's result
	 * again, and RETRY_UNCACHED_REP for what follows */
	CHECK_EQ(do_seq(st, sid, 5, 1, false, false, &r, &s), NFS4_OK);
	uint32_t orig_flags = r.status_flags;
	CHECK_OK(nfs4_sequence_done(s, 5, "uncached", 8));
	nfs4_session_put(s);
	CHECK_EQ(do_seq(st, sid, 5, 1, false, false, &r, &s), NFS4_OK);
	CHECK_EQ(r.kind, NFS4_SEQ_REPLAY_UNCACHED);
	CHECK_EQ(r.sequenceid, 1);
	CHECK_EQ(r.status_flags, orig_flags);
	nfs4_session_put(s);

	/* a lone SEQUENCE (cachethis false) is cached whole: its retry is exact */
	CHECK_EQ(do_seq(st, sid, 6, 1, false, true, &r, &s), NFS4_OK);
	CHECK_OK(nfs4_sequence_done(s, 6, "solo-sequence-reply", 19));
	nfs4_session_put(s);
	CHECK_EQ(do_seq(st, sid, 6, 1, false, true, &r, &s), NFS4_OK);
	CHECK_EQ(r.kind, NFS4_SEQ_REPLAY);
	CHECK_EQ(r.replay_len, 19);
	CHECK_EQ(memcmp(replay_buf, "solo-sequence-reply", 19), 0);
	nfs4_session_put(s);

	/* a reply too big for the cache: the op layer should have answered
	 * REP_TOO_BIG_TO_CACHE; done says so, a retry is uncached */
	static uint8_t big[8192];
	CHECK_EQ(do_seq(st, sid, 7, 1, true, false, &r, &s), NFS4_OK);
	CHECK_EQ(nfs4_sequence_done(s, 7, big, 4097), -EMSGSIZE);
	nfs4_session_put(s);
	CHECK_EQ(do_seq(st, sid, 7, 1, true, false, &r, &s), NFS4_OK);
	CHECK_EQ(r.kind, NFS4_SEQ_REPLAY_UNCACHED);
	nfs4_session_put(s);

	/* a retry whose operations differ (the op layer's digest) is false */
	struct nfs4_seq_args d = {0};
	memcpy(d.sessionid, sid, 16);
	d.slotid = 8;
	d.highest_slotid = 8;
	d.sequenceid = 1;
	d.cachethis = true;
	d.digest = 0x1234;
	d.replay_buf = replay_buf;
	d.replay_cap = sizeof(replay_buf);
	CHECK_EQ(nfs4_sequence(st, &d, &r, &s), NFS4_OK);
	CHECK_OK(nfs4_sequence_done(s, 8, "digest", 6));
	nfs4_session_put(s);
	d.digest = 0x4321;
	CHECK_EQ(nfs4_sequence(st, &d, &r, &s), NFS4ERR_SEQ_FALSE_RETRY);
	d.digest = 0x1234;
	CHECK_EQ(nfs4_sequence(st, &d, &r, &s), NFS4_OK);
	CHECK_EQ(r.kind, NFS4_SEQ_REPLAY);
	nfs4_session_put(s);
	/* a replay buffer too small for the cached reply */
	d.replay_cap = 3;
	CHECK_EQ(nfs4_sequence(st, &d, &r, &s), NFS4ERR_SERVERFAULT);

	/* bad slots */
	CHECK_EQ(do_seq(st, sid, 64, 1, false, false, &r, &s), NFS4ERR_BADSLOT);
	struct nfs4_seq_args a = {0};
	memcpy(a.sessionid, sid, 16);
	a.slotid = 1;
	a.sequenceid = 1;
	a.highest_slotid = 64;
	CHECK_EQ(nfs4_sequence(st, &a, &r, &s), NFS4ERR_BAD_HIGH_SLOT);
	uint8_t bad[16];
	memcpy(bad, sid, 16);
	bad[15] ^= 1;
	CHECK_EQ(do_seq(st, bad, 0, 1, false, false, &r, &s), NFS4ERR_BADSESSION);

	/* the highest slot changes: the server asks for fewer slots */
	CHECK_EQ(do_seq(st, sid, 40, 1, false, false, &r, &s), NFS4_OK);
	nfs4_session_set_target(s, 15);
	CHECK_OK(nfs4_sequence_done(s, 40, NULL, 0));
	nfs4_session_put(s);
	/* the client still says it uses slot 40: highest stays, target lowers */
	a.slotid = 40;
	a.sequenceid = 2;
	a.highest_slotid = 40;
	CHECK_EQ(nfs4_sequence(st, &a, &r, &s), NFS4_OK);
	CHECK_EQ(r.highest_slotid, 63);
	CHECK_EQ(r.target_highest_slotid, 15);
	CHECK_OK(nfs4_sequence_done(s, 40, NULL, 0));
	nfs4_session_put(s);
	/* the client came down to 15: the slots above are retired */
	run_compound(st, sid, 0, 1, false, NULL, 0);
	a.slotid = 0;
	a.sequenceid = 2;
	a.highest_slotid = 15;
	CHECK_EQ(nfs4_sequence(st, &a, &r, &s), NFS4_OK);
	CHECK_EQ(r.highest_slotid, 15);
	CHECK_EQ(r.target_highest_slotid, 15);
	CHECK_OK(nfs4_sequence_done(s, 0, NULL, 0));
	/* slot 40 is now BADSLOT; raising the target reopens it, and the slot
	 * accepts its next seqid or 1 */
	CHECK_EQ(do_seq(st, sid, 40, 3, false, false, &r, &s2), NFS4ERR_BADSLOT);
	nfs4_session_set_target(s, 63);
	nfs4_session_put(s);
	CHECK_EQ(do_seq(st, sid, 40, 1, false, false, &r, &s), NFS4_OK);
	CHECK_EQ(r.highest_slotid, 63);
	CHECK_OK(nfs4_sequence_done(s, 40, NULL, 0));
	nfs4_session_put(s);
	run_compound(st, sid, 40, 2, false, NULL, 0);
	nfs4_state_destroy(st);
	TEST_PASS("sequence: new, retry cached/uncached/solo, in progress, misordered, "
		  "false retry, bad slot, highest slot changes");
}

/* Replays never grow memory: count the cache bytes. */
static void test_replay_memory(void)
{
	struct nfs4_state *st = make(11, NULL);
	uint8_t sid[16];
	new_client(st, "theta", 1, sid);
	static uint8_t reply[4000];
	struct nfs4_state_counts c0, c1;
	for (uint32_t slot = 0; slot < 64; slot++)
		run_compound(st, sid, slot, 1, true, reply, sizeof(reply));
	nfs4_state_counts(st, &c0);
	CHECK_EQ(c0.cache_bytes, 64 * sizeof(reply));
	CHECK(c0.cache_bytes <= c0.cache_reserved);
	for (int round = 0; round < 200; round++) {
		for (uint32_t slot = 0; slot < 64; slot += 7) {
			struct nfs4_seq_res r;
			struct nfs4_session *s;
			CHECK_EQ(do_seq(st, sid, slot, 1, true, false, &r, &s), NFS4_OK);
			CHECK_EQ(r.kind, NFS4_SEQ_REPLAY);
			nfs4_session_put(s);
		}
	}
	nfs4_state_counts(st, &c1);
	CHECK_EQ(c1.cache_bytes, c0.cache_bytes);
	/* new requests with replies of the same size or smaller reuse the buffers */
	for (uint32_t i = 2; i < 50; i++)
		run_compound(st, sid, 0, i, true, reply, sizeof(reply) - i);
	nfs4_state_counts(st, &c1);
	CHECK_EQ(c1.cache_bytes, c0.cache_bytes);
	nfs4_state_destroy(st);
	TEST_PASS("replays never grow memory");
}

static void test_lease_courtesy(void)
{
	struct rec_store rs = {0};
	struct nfs4_state *st = make(12, &rs);
	uint8_t sid[16], sid2[16];
	uint64_t id = new_client(st, "iota", 1, sid);
	uint64_t id2 = new_client(st, "kappa", 1, sid2);
	struct nfs4_client *clp = nfs4_client_find(st, id);
	struct payload pl[3] = {{0}};
	struct nfs4_stid *sd;
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_OPEN, &pl[i], &sd), NFS4_OK);
		nfs4_stid_put(sd);
	}
	struct nfs4_state_counts c;

	/* a request in flight keeps the lease (client invariant 3) */
	struct nfs4_seq_res r;
	struct nfs4_session *s;
	CHECK_EQ(do_seq(st, sid, 0, 1, false, false, &r, &s), NFS4_OK);
	advance(100 * NSEC_PER_SEC);
	nfs4_state_reap(st, NULL);
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.courtesy, 1); /* kappa, not iota */
	CHECK(!nfs4_client_expire_if_courtesy(st, id, NULL));
	CHECK_OK(nfs4_sequence_done(s, 0, NULL, 0));
	nfs4_session_put(s);

	/* lease over: courtesy, state kept */
	advance(91 * NSEC_PER_SEC);
	nfs4_state_reap(st, NULL);
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.courtesy, 2);
	CHECK_EQ(c.stateids, 3);
	/* it comes back: confirmed again, with all its state */
	run_compound(st, sid, 0, 2, false, NULL, 0);
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.courtesy, 1);
	CHECK(!nfs4_client_expire_if_courtesy(st, id, NULL));
	/* another client conflicts with the courtesy client: it goes */
	CHECK(nfs4_client_expire_if_courtesy(st, id2, NULL));
	CHECK(!nfs4_client_find(st, id2));
	CHECK_EQ(do_seq(st, sid2, 0, 1, false, false, &r, &s), NFS4ERR_BADSESSION);
	CHECK(!rec_has_owner(&rs, "kappa"));
	CHECK(rec_has_owner(&rs, "iota"));

	/* a new session revives a courtesy client too */
	advance(91 * NSEC_PER_SEC);
	nfs4_state_reap(st, NULL);
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.courtesy, 1);
	struct nfs4_create_session_res cr;
	CHECK_EQ(try_create_session(st, id, 2, "sys:0:0", &cr), NFS4_OK);
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.courtesy, 0);
	CHECK_EQ(nfs4_destroy_session(st, cr.sessionid, NULL), NFS4_OK);

	/* iota expires in turn; after the courtesy time it is expired for good */
	advance(91 * NSEC_PER_SEC);
	nfs4_state_reap(st, NULL);
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.courtesy, 1);
	advance(24 * 3600 * NSEC_PER_SEC);
	uint64_t next = nfs4_state_reap(st, NULL);
	CHECK_EQ(next, UINT64_MAX); /* nothing left to wait for */
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.clients, 0);
	CHECK_EQ(c.stateids, 0);
	CHECK_EQ(c.expired, 2);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(atomic_load(&pl[i].released), 1);
	CHECK_EQ(rs.n, 0);
	nfs4_client_put(clp);

	/* an unconfirmed record lasts one lease */
	struct nfs4_exchange_id_res er;
	CHECK_EQ(exid(st, "lambda", 1, "sys:0:0", 0, &er), NFS4_OK);
	advance(89 * NSEC_PER_SEC);
	nfs4_state_reap(st, NULL);
	CHECK_EQ(nclients(st), 1);
	advance(2 * NSEC_PER_SEC);
	nfs4_state_reap(st, NULL);
	CHECK_EQ(nclients(st), 0);
	nfs4_state_destroy(st);
	TEST_PASS("lease expiry and the courteous server");
}

static void test_destroy_clientid_and_bounds(void)
{
	struct rec_store rs = {0};
	struct nfs4_state_config cfg;
	test_config(&cfg, 13, &rs);
	cfg.max_clients = 3;
	struct nfs4_state *st = nfs4_state_create(&cfg);
	uint8_t sid[16];
	uint64_t id = new_client(st, "mu", 1, sid);
	CHECK_EQ(nfs4_destroy_clientid(st, id, NULL), NFS4ERR_CLIENTID_BUSY);
	CHECK_EQ(nfs4_destroy_session(st, sid, NULL), NFS4_OK);
	uint64_t cseq = 0;
	CHECK_EQ(nfs4_destroy_clientid(st, id, &cseq), NFS4_OK);
	CHECK(cseq > 0);
	CHECK_EQ(nfs4_destroy_clientid(st, id, NULL), NFS4ERR_STALE_CLIENTID);
	CHECK_EQ(rs.n, 0);

	/* a courtesy client with a session may be destroyed: its lease is over */
	id = new_client(st, "nu", 1, sid);
	advance(91 * NSEC_PER_SEC);
	CHECK_EQ(nfs4_destroy_clientid(st, id, NULL), NFS4_OK);

	/* full table: the courtesy client renewed longest ago makes room */
	uint8_t s1[16], s2[16], s3[16];
	uint64_t a = new_client(st, "xi", 1, s1);
	advance(NSEC_PER_SEC);
	uint64_t b = new_client(st, "omicron", 1, s2);
	advance(NSEC_PER_SEC);
	new_client(st, "pi", 1, s3);
	struct nfs4_exchange_id_res er;
	CHECK_EQ(exid(st, "rho", 1, "sys:0:0", 0, &er), NFS4ERR_DELAY); /* all alive */
	advance(89 * NSEC_PER_SEC); /* xi and omicron are past their lease, pi not */
	CHECK_EQ(exid(st, "rho", 1, "sys:0:0", 0, &er), NFS4_OK);
	struct nfs4_client *gone = nfs4_client_find(st, a);
	struct nfs4_client *kept = nfs4_client_find(st, b);
	CHECK(!gone && kept);
	nfs4_client_put(kept);
	nfs4_state_destroy(st);
	TEST_PASS("destroy_clientid, client bound");
}

/* Grace with three known clients: one back with the same verifier, one
 * rebooted, one never back; unknown clients; time out. */
static void test_grace_timeout(void)
{
	struct rec_store rs = {0};
	struct nfs4_state *st = make(20, &rs);
	struct nfs4_client_record rec = {0};
	const char *owners[] = {"sigma", "tau", "upsilon"};
	for (int i = 0; i < 3; i++) {
		memset(&rec, 0, sizeof(rec));
		rec.clientid = (19ull << 32) | (uint64_t)(i + 1);
		uint64_t v = 77;
		memcpy(rec.verifier, &v, 8);
		rec.owner_len = (uint32_t)strlen(owners[i]);
		memcpy(rec.owner, owners[i], rec.owner_len);
		CHECK_OK(nfs4_grace_load(st, &rec));
		rs.recs[rs.n++] = rec; /* the store holds them too */
	}
	uint64_t t0 = nfs4_state_now(st);
	nfs4_grace_start(st, NULL);
	CHECK(nfs4_grace_active(st));
	CHECK_EQ(nfs4_grace_check_new(st), NFS4ERR_GRACE);
	CHECK_EQ(nfs4_grace_load(st, &rec), -EINVAL);

	uint8_t s_sigma[16], s_tau[16], s_new[16];
	uint64_t sigma = new_client(st, "sigma", 77, s_sigma); /* the same instance */
	uint64_t tau = new_client(st, "tau", 78, s_tau);       /* rebooted meanwhile */
	uint64_t fresh = new_client(st, "phi", 1, s_new);      /* not known */
	struct nfs4_client *c_sigma = nfs4_client_find(st, sigma);
	struct nfs4_client *c_tau = nfs4_client_find(st, tau);
	struct nfs4_client *c_new = nfs4_client_find(st, fresh);
	CHECK_EQ(nfs4_grace_check_reclaim(st, c_sigma), NFS4_OK);
	CHECK_EQ(nfs4_grace_check_reclaim(st, c_tau), NFS4ERR_RECLAIM_BAD);
	CHECK_EQ(nfs4_grace_check_reclaim(st, c_new), NFS4ERR_NO_GRACE);
	/* sigma is told to reclaim until it completes */
	struct nfs4_seq_res r;
	struct nfs4_session *s;
	CHECK_EQ(do_seq(st, s_sigma, 1, 1, false, false, &r, &s), NFS4_OK);
	CHECK(r.status_flags & SEQ4_STATUS_RESTART_RECLAIM_NEEDED);
	CHECK_OK(nfs4_sequence_done(s, 1, NULL, 0));
	nfs4_session_put(s);
	CHECK_EQ(do_seq(st, s_new, 1, 1, false, false, &r, &s), NFS4_OK);
	CHECK(!(r.status_flags & SEQ4_STATUS_RESTART_RECLAIM_NEEDED));
	CHECK_OK(nfs4_sequence_done(s, 1, NULL, 0));
	nfs4_session_put(s);
	/* the previous records of the two that came back are replaced */
	CHECK_EQ(rs.forgets, 2);
	CHECK_EQ(rs.n, 1 + 3);

	CHECK_EQ(nfs4_reclaim_complete(st, c_sigma, NULL), NFS4_OK);
	CHECK_EQ(nfs4_reclaim_complete(st, c_sigma, NULL), NFS4ERR_COMPLETE_ALREADY);
	CHECK_EQ(nfs4_grace_check_reclaim(st, c_sigma), NFS4ERR_NO_GRACE);
	CHECK_EQ(do_seq(st, s_sigma, 1, 2, false, false, &r, &s), NFS4_OK);
	CHECK(!(r.status_flags & SEQ4_STATUS_RESTART_RECLAIM_NEEDED));
	CHECK_OK(nfs4_sequence_done(s, 1, NULL, 0));
	nfs4_session_put(s);
	/* upsilon never comes back: grace runs its time */
	struct nfs4_grace_info gi;
	nfs4_grace_info(st, &gi);
	CHECK(gi.active && gi.known == 3 && gi.pending == 1);
	advance(89 * NSEC_PER_SEC);
	nfs4_state_reap(st, NULL);
	CHECK_EQ(nfs4_grace_check_new(st), NFS4ERR_GRACE);
	advance(NSEC_PER_SEC);
	/* over by the clock even before the reaper runs */
	CHECK_EQ(nfs4_grace_check_new(st), NFS4_OK);
	nfs4_state_reap(st, NULL);
	nfs4_grace_info(st, &gi);
	CHECK(!gi.active && gi.end == NFS4_GRACE_TIMEOUT);
	CHECK_EQ(gi.end_ns - gi.start_ns, 90 * NSEC_PER_SEC);
	CHECK_EQ(gi.start_ns, t0);
	printf("grace lasted %.1f s (timeout)\n", (double)(gi.end_ns - gi.start_ns) / 1e9);
	CHECK(!rec_has_owner(&rs, "upsilon")); /* can no longer reclaim */
	CHECK_EQ(rs.n, 3);
	CHECK_EQ(nfs4_grace_check_reclaim(st, c_tau), NFS4ERR_NO_GRACE);
	CHECK_EQ(nfs4_grace_check_new(st), NFS4_OK);
	nfs4_client_put(c_sigma);
	nfs4_client_put(c_tau);
	nfs4_client_put(c_new);
	nfs4_state_destroy(st);
	TEST_PASS("grace: GRACE, NO_GRACE, RECLAIM_BAD, COMPLETE_ALREADY, ends by timeout");
}

/* Grace ends as soon as every known client completed; and at once with none. */
static void test_grace_early(void)
{
	struct rec_store rs = {0};
	struct nfs4_state *st = make(21, &rs);
	nfs4_grace_start(st, NULL);
	CHECK(!nfs4_grace_active(st));
	struct nfs4_grace_info gi;
	nfs4_grace_info(st, &gi);
	CHECK(gi.started && gi.end == NFS4_GRACE_ALL_RECLAIMED && gi.known == 0);
	nfs4_state_destroy(st);

	st = make(22, &rs);
	struct nfs4_client_record rec = {0};
	for (int i = 0; i < 2; i++) {
		memset(&rec, 0, sizeof(rec));
		rec.clientid = (21ull << 32) | (uint64_t)(i + 1);
		uint64_t v = 5;
		memcpy(rec.verifier, &v, 8);
		rec.owner_len = 3;
		memcpy(rec.owner, i ? "chi" : "psi", 3);
		CHECK_OK(nfs4_grace_load(st, &rec));
		rs.recs[rs.n++] = rec;
	}
	/* an older record of psi (a replacement the old instance did not finish) */
	rec.clientid = (20ull << 32) | 9;
	memcpy(rec.owner, "psi", 3);
	CHECK_OK(nfs4_grace_load(st, &rec));
	rs.recs[rs.n++] = rec;
	nfs4_grace_start(st, NULL);
	nfs4_grace_info(st, &gi);
	CHECK(gi.active && gi.known == 2 && gi.pending == 2);
	uint8_t s1[16], s2[16];
	struct nfs4_client *a = nfs4_client_find(st, new_client(st, "psi", 5, s1));
	advance(3 * NSEC_PER_SEC);
	struct nfs4_client *b = nfs4_client_find(st, new_client(st, "chi", 5, s2));
	CHECK_EQ(nfs4_reclaim_complete(st, a, NULL), NFS4_OK);
	CHECK(nfs4_grace_active(st));
	advance(2 * NSEC_PER_SEC);
	uint64_t cseq = 0;
	CHECK_EQ(nfs4_reclaim_complete(st, b, &cseq), NFS4_OK);
	CHECK(cseq > 0); /* the superseded psi record was forgotten */
	CHECK(!nfs4_grace_active(st));
	CHECK_EQ(nfs4_grace_check_new(st), NFS4_OK);
	nfs4_grace_info(st, &gi);
	CHECK(gi.end == NFS4_GRACE_ALL_RECLAIMED);
	CHECK_EQ(gi.end_ns - gi.start_ns, 5 * NSEC_PER_SEC);
	printf("grace lasted %.1f s (every known client reclaimed)\n",
	       (double)(gi.end_ns - gi.start_ns) / 1e9);
	CHECK_EQ(rs.n, 2); /* only the two new records */
	CHECK_EQ(nfs4_reclaim_complete(st, b, NULL), NFS4ERR_COMPLETE_ALREADY);
	nfs4_client_put(a);
	nfs4_client_put(b);
	nfs4_state_destroy(st);

	/* a known client that is destroyed counts as done too */
	rs = (struct rec_store){0};
	st = make(23, &rs);
	memset(&rec, 0, sizeof(rec));
	rec.clientid = (22ull << 32) | 1;
	rec.owner_len = 5;
	memcpy(rec.owner, "omega", 5);
	CHECK_OK(nfs4_grace_load(st, &rec));
	rs.recs[rs.n++] = rec;
	nfs4_grace_start(st, NULL);
	uint64_t id = new_client(st, "omega", 0, s1);
	CHECK(nfs4_grace_active(st));
	CHECK_EQ(nfs4_destroy_session(st, s1, NULL), NFS4_OK);
	CHECK_EQ(nfs4_destroy_clientid(st, id, NULL), NFS4_OK);
	CHECK(!nfs4_grace_active(st));
	nfs4_state_destroy(st);
	TEST_PASS("grace ends early once every known client is done");
}

static struct nfs4_stateid bump_copy(struct nfs4_stid *sd)
{
	struct nfs4_stateid v;
	nfs4_stid_bump(sd, &v);
	return v;
}

static void test_stateids(void)
{
	struct nfs4_state *st = make(30, NULL);
	uint8_t sid[16], sid2[16];
	struct nfs4_client *clp = nfs4_client_find(st, new_client(st, "a1", 1, sid));
	struct nfs4_client *other = nfs4_client_find(st, new_client(st, "a2", 1, sid2));
	struct payload pl[8] = {{0}};
	struct nfs4_stid *sd, *f;
	struct nfs4_stateid v0, v;

	/* special stateids */
	struct nfs4_stateid sp = {0};
	CHECK_EQ(nfs4_stateid_special(&sp), NFS4_STATEID_ANONYMOUS);
	sp.seqid = 1;
	CHECK_EQ(nfs4_stateid_special(&sp), NFS4_STATEID_CURRENT);
	sp.seqid = UINT32_MAX;
	CHECK_EQ(nfs4_stateid_special(&sp), NFS4_STATEID_INVALID);
	memset(sp.other, 0xff, 12);
	CHECK_EQ(nfs4_stateid_special(&sp), NFS4_STATEID_BYPASS);
	sp.seqid = 0;
	CHECK_EQ(nfs4_stateid_special(&sp), NFS4_STATEID_INVALID);
	CHECK_EQ(nfs4_stid_find(clp, &sp, NFS4_STID_ANY, &f), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4_test_stateid(clp, &sp), NFS4ERR_BAD_STATEID);

	CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_OPEN, &pl[0], &sd), NFS4_OK);
	nfs4_stid_value(sd, &v0);
	CHECK_EQ(v0.seqid, 1);
	CHECK_EQ(nfs4_stateid_special(&v0), NFS4_STATEID_NORMAL);
	CHECK_EQ(nfs4_stid_clientid(sd), nfs4_client_id(clp));
	v = bump_copy(sd);
	CHECK_EQ(v.seqid, 2);
	CHECK_EQ(memcmp(v.other, v0.other, 12), 0);
	CHECK_EQ(nfs4_stid_find(clp, &v, NFS4_STID_OPEN, &f), NFS4_OK);
	CHECK(f == sd && nfs4_stid_payload(f) == &pl[0]);
	nfs4_stid_put(f);
	CHECK_EQ(nfs4_stid_find(clp, &v0, NFS4_STID_OPEN, &f), NFS4ERR_OLD_STATEID);
	struct nfs4_stateid w = v;
	w.seqid = 3;
	CHECK_EQ(nfs4_stid_find(clp, &w, NFS4_STID_OPEN, &f), NFS4ERR_BAD_STATEID);
	w.seqid = 0; /* "the current one" */
	CHECK_EQ(nfs4_stid_find(clp, &w, NFS4_STID_OPEN, &f), NFS4_OK);
	nfs4_stid_put(f);
	/* wrong type, other client, unknown */
	CHECK_EQ(nfs4_stid_find(clp, &v, NFS4_STID_LOCK, &f), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4_stid_find(other, &v, NFS4_STID_ANY, &f), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4_test_stateid(other, &v), NFS4ERR_BAD_STATEID);
	w = v;
	w.other[11] ^= 0x55;
	CHECK_EQ(nfs4_stid_find(clp, &w, NFS4_STID_ANY, &f), NFS4ERR_BAD_STATEID);
	/* TEST_STATEID */
	CHECK_EQ(nfs4_test_stateid(clp, &v), NFS4_OK);
	CHECK_EQ(nfs4_test_stateid(clp, &v0), NFS4ERR_OLD_STATEID);
	/* an open stateid is a lock: FREE_STATEID refuses */
	CHECK_EQ(nfs4_free_stateid(clp, &v), NFS4ERR_LOCKS_HELD);
	/* CLOSE: gone for lookups; the payload waits for the last reference */
	nfs4_stid_unhash(sd);
	CHECK_EQ(nfs4_stid_find(clp, &v, NFS4_STID_ANY, &f), NFS4ERR_BAD_STATEID);
	CHECK_EQ(atomic_load(&pl[0].released), 0); /* stateid invariant 1 */
	nfs4_stid_put(sd);
	CHECK_EQ(atomic_load(&pl[0].released), 1);

	/* revocation: each reason its error and SEQUENCE flag, until freed */
	enum nfs4_revoke_reason why[] = {NFS4_REVOKE_EXPIRED, NFS4_REVOKE_ADMIN,
					 NFS4_REVOKE_RECALL};
	uint32_t err[] = {NFS4ERR_EXPIRED, NFS4ERR_ADMIN_REVOKED, NFS4ERR_DELEG_REVOKED};
	uint32_t flag[] = {SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED, SEQ4_STATUS_ADMIN_STATE_REVOKED,
			   SEQ4_STATUS_RECALLABLE_STATE_REVOKED};
	unsigned types[] = {NFS4_STID_LOCK, NFS4_STID_OPEN, NFS4_STID_LAYOUT};
	uint32_t seqid = 1;
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(nfs4_stid_alloc(clp, types[i], &pl[1 + i], &sd), NFS4_OK);
		nfs4_stid_value(sd, &v);
		/* an operation still holds it (as LAYOUTGET would while the
		 * reaper revokes): its payload stays until that one lets go */
		nfs4_stid_get(sd);
		nfs4_stid_revoke(sd, why[i]);
		CHECK_EQ(nfs4_stid_tryget(sd), false);
		nfs4_stid_put(sd); /* the revoker's */
		CHECK_EQ(atomic_load(&pl[1 + i].released), 0); /* stateid invariant 2 */
		CHECK(nfs4_stid_payload(sd) == &pl[1 + i]);
		nfs4_stid_put(sd); /* the operation's */
		CHECK_EQ(atomic_load(&pl[1 + i].released), 1);
		CHECK(nfs4_stid_payload(sd) == NULL);
		CHECK_EQ(nfs4_stid_find(clp, &v, NFS4_STID_ANY, &f), err[i]);
		CHECK_EQ(nfs4_test_stateid(clp, &v), err[i]);
		struct nfs4_seq_res r;
		struct nfs4_session *s;
		CHECK_EQ(do_seq(st, sid, 0, seqid++, false, false, &r, &s), NFS4_OK);
		CHECK(r.status_flags & flag[i]);
		CHECK_OK(nfs4_sequence_done(s, 0, NULL, 0));
		nfs4_session_put(s);
		CHECK_EQ(nfs4_free_stateid(clp, &v), NFS4_OK);
		CHECK_EQ(nfs4_test_stateid(clp, &v), NFS4ERR_BAD_STATEID);
		CHECK_EQ(do_seq(st, sid, 0, seqid++, false, false, &r, &s), NFS4_OK);
		CHECK(!(r.status_flags & flag[i]));
		CHECK_OK(nfs4_sequence_done(s, 0, NULL, 0));
		nfs4_session_put(s);
	}

	/* FREE_STATEID of lock stateids */
	CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_LOCK, &pl[4], &sd), NFS4_OK);
	nfs4_stid_value(sd, &v);
	CHECK_EQ(nfs4_free_stateid(clp, &v), NFS4ERR_DELAY); /* we hold it: in use */
	nfs4_stid_put(sd);
	pl[4].locks = true;
	CHECK_EQ(nfs4_free_stateid(clp, &v), NFS4ERR_LOCKS_HELD);
	pl[4].locks = false;
	w = v;
	w.seqid = 2;
	CHECK_EQ(nfs4_free_stateid(clp, &w), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4_free_stateid(clp, &v), NFS4_OK);
	CHECK_EQ(atomic_load(&pl[4].released), 1);
	CHECK_EQ(nfs4_free_stateid(clp, &v), NFS4ERR_BAD_STATEID);

	/* the per-client bound */
	struct nfs4_state_counts c;
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.stateids, 0);
	nfs4_client_put(clp);
	nfs4_client_put(other);
	nfs4_state_destroy(st);

	struct nfs4_state_config cfg;
	test_config(&cfg, 31, NULL);
	cfg.max_stateids_per_client = 4;
	cfg.max_stateids = 6;
	st = nfs4_state_create(&cfg);
	clp = nfs4_client_find(st, new_client(st, "b1", 1, sid));
	other = nfs4_client_find(st, new_client(st, "b2", 1, sid2));
	struct nfs4_stid *held[8];
	for (int i = 0; i < 4; i++)
		CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_OPEN, NULL, &held[i]), NFS4_OK);
	CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_OPEN, NULL, &f), NFS4ERR_DELAY);
	for (int i = 4; i < 6; i++)
		CHECK_EQ(nfs4_stid_alloc(other, NFS4_STID_OPEN, NULL, &held[i]), NFS4_OK);
	CHECK_EQ(nfs4_stid_alloc(other, NFS4_STID_OPEN, NULL, &f), NFS4ERR_DELAY); /* total */
	for (int i = 0; i < 6; i++) {
		nfs4_stid_unhash(held[i]);
		nfs4_stid_put(held[i]);
	}
	CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_OPEN, NULL, &f), NFS4_OK);
	nfs4_stid_put(f);
	nfs4_client_put(clp);
	nfs4_client_put(other);
	nfs4_state_destroy(st);
	TEST_PASS(
		"stateids: special, seqid, type, client scope, revoke, TEST/FREE_STATEID, bounds");
}

/* nfs4_stid_hold_ends (jnfsd --test-hold-ends): the entries that end while
 * it is on (unhashed by CLOSE's nfs4_stid_unhash or by FREE_STATEID) keep
 * their payload, and refuse nfs4_stid_tryget, until it is turned off;
 * then each payload goes once. What ends after it is off goes at once, and
 * what a test left held goes with the state. */
static void test_hold_ends(void)
{
	struct nfs4_state *st = make(32, NULL);
	uint8_t sid[16];
	struct nfs4_client *clp = nfs4_client_find(st, new_client(st, "h1", 1, sid));
	struct payload pl[4] = {{0}};
	struct nfs4_stid *open, *lock, *f;
	struct nfs4_stateid v;

	CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_OPEN, &pl[0], &open), NFS4_OK);
	CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_LOCK, &pl[1], &lock), NFS4_OK);
	nfs4_stid_value(lock, &v);
	nfs4_stid_put(lock);
	nfs4_stid_hold_ends(st, true);
	nfs4_stid_unhash(open); /* CLOSE */
	nfs4_stid_put(open);	/* the op's: the last but the hold's */
	CHECK_EQ(nfs4_free_stateid(clp, &v), NFS4_OK);
	CHECK_EQ(nfs4_stid_find(clp, &v, NFS4_STID_ANY, &f), NFS4ERR_BAD_STATEID);
	/* dying: unhashed, payload still there, no new reference */
	CHECK_EQ(atomic_load(&pl[0].released), 0);
	CHECK_EQ(atomic_load(&pl[1].released), 0);
	CHECK(nfs4_stid_payload(open) == &pl[0] && nfs4_stid_payload(lock) == &pl[1]);
	CHECK_EQ(nfs4_stid_tryget(open), false);
	CHECK_EQ(nfs4_stid_tryget(lock), false);
	nfs4_stid_hold_ends(st, false);
	CHECK_EQ(atomic_load(&pl[0].released), 1);
	CHECK_EQ(atomic_load(&pl[1].released), 1);
	struct nfs4_state_counts c;
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.stateids, 0);

	/* off: an end releases at once */
	CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_OPEN, &pl[2], &open), NFS4_OK);
	nfs4_stid_unhash(open);
	nfs4_stid_put(open);
	CHECK_EQ(atomic_load(&pl[2].released), 1);

	/* left held: released when the state goes */
	CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_LAYOUT, &pl[3], &open), NFS4_OK);
	nfs4_stid_hold_ends(st, true);
	nfs4_stid_unhash(open);
	nfs4_stid_put(open);
	CHECK_EQ(atomic_load(&pl[3].released), 0);
	nfs4_client_put(clp);
	nfs4_state_destroy(st);
	CHECK_EQ(atomic_load(&pl[3].released), 1);
	TEST_PASS("hold ends: CLOSE and FREE_STATEID held back until released, once each");
}

/* A restart: a new state with another boot epoch. Old clientids are stale,
 * old stateids STALE_STATEID. */
static void test_restart_stale(void)
{
	struct nfs4_state *st1 = make(40, NULL);
	uint8_t sid[16];
	uint64_t id = new_client(st1, "restart", 1, sid);
	struct nfs4_client *clp = nfs4_client_find(st1, id);
	struct nfs4_stid *sd;
	struct nfs4_stateid v;
	CHECK_EQ(nfs4_stid_alloc(clp, NFS4_STID_OPEN, NULL, &sd), NFS4_OK);
	nfs4_stid_value(sd, &v);
	nfs4_stid_put(sd);
	nfs4_client_put(clp);
	nfs4_state_destroy(st1);

	struct nfs4_state *st2 = make(41, NULL);
	struct nfs4_create_session_res cr;
	CHECK_EQ(try_create_session(st2, id, 1, "sys:0:0", &cr), NFS4ERR_STALE_CLIENTID);
	struct nfs4_seq_res r;
	struct nfs4_session *s;
	CHECK_EQ(do_seq(st2, sid, 0, 1, false, false, &r, &s), NFS4ERR_BADSESSION);
	uint8_t sid2[16];
	uint64_t id2 = new_client(st2, "restart", 1, sid2);
	CHECK((uint32_t)id2 == (uint32_t)id); /* same counter, other epoch */
	clp = nfs4_client_find(st2, id2);
	CHECK_EQ(nfs4_stid_find(clp, &v, NFS4_STID_ANY, &sd), NFS4ERR_STALE_STATEID);
	CHECK_EQ(nfs4_test_stateid(clp, &v), NFS4ERR_BAD_STATEID);
	CHECK_EQ(nfs4_free_stateid(clp, &v), NFS4ERR_BAD_STATEID);
	nfs4_client_put(clp);
	/* the server owner and scope survive the restart */
	struct nfs4_server_owner o1, o2;
	struct nfs4_state *st3 = make(42, NULL);
	nfs4_server_owner(st2, &o1);
	nfs4_server_owner(st3, &o2);
	CHECK_EQ(memcmp(&o1, &o2, sizeof(o1)), 0);
	CHECK(o1.major_len > 0 && o1.major_len <= NFS4_SERVER_ID_MAX);
	nfs4_state_destroy(st3);
	nfs4_state_destroy(st2);
	TEST_PASS("restart: STALE_CLIENTID, BADSESSION, STALE_STATEID; stable server owner");
}

static void test_backchannel(void)
{
	struct nfs4_state *st = make(50, NULL);
	struct nfs4_exchange_id_res er;
	CHECK_EQ(exid(st, "cb", 1, "sys:0:0", 0, &er), NFS4_OK);
	struct nfs4_create_session_args a = cs_args(er.clientid, 1, "sys:0:0");
	a.conn = (void *)0x1000;
	a.conn_id = 1; /* back channel too: CONN_BACK_CHAN */
	struct nfs4_create_session_res cr;
	CHECK_EQ(nfs4_create_session(st, &a, &cr, NULL), NFS4_OK);
	struct nfs4_seq_res r;
	struct nfs4_session *s;
	uint32_t n = 1;
	CHECK_EQ(do_seq(st, cr.sessionid, 0, n++, false, false, &r, &s), NFS4_OK);
	CHECK_EQ(r.status_flags & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION), 0);
	/* callbacks use the bound connection, one slot, sequence ids 1, 2... */
	struct nfs4_cb_seq cb, cb2;
	CHECK_EQ(nfs4_cb_sequence_begin(s, &cb), NFS4_OK);
	CHECK(cb.conn == (void *)0x1000 && cb.conn_id == 1);
	CHECK_EQ(cb.sequenceid, 1);
	CHECK_EQ(cb.cb_program, 0x40000000);
	CHECK_EQ(memcmp(cb.sessionid, cr.sessionid, 16), 0);
	CHECK_EQ(nfs4_cb_sequence_begin(s, &cb2), NFS4ERR_DELAY); /* one slot */
	nfs4_cb_sequence_end(s, cb.slotid, NFS4_CB_ACCEPTED);
	CHECK_EQ(nfs4_cb_sequence_begin(s, &cb), NFS4_OK);
	CHECK_EQ(cb.sequenceid, 2);
	/* DELAY: the same sequence id again, and no fault */
	nfs4_cb_sequence_end(s, cb.slotid, NFS4_CB_REFUSED);
	CHECK_OK(nfs4_sequence_done(s, 0, NULL, 0));
	nfs4_session_put(s);
	CHECK_EQ(do_seq(st, cr.sessionid, 0, n++, false, false, &r, &s), NFS4_OK);
	CHECK_EQ(r.status_flags & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION |
				   SEQ4_STATUS_BACKCHANNEL_FAULT),
		 0);
	CHECK_EQ(nfs4_cb_sequence_begin(s, &cb), NFS4_OK);
	CHECK_EQ(cb.sequenceid, 2);
	/* resynchronised (SEQ_MISORDERED): 1 next, the slot still held */
	CHECK_EQ(nfs4_cb_sequence_resync(s, cb.slotid, 0), 1);
	CHECK_EQ(nfs4_cb_sequence_begin(s, &cb2), NFS4ERR_DELAY);
	nfs4_cb_sequence_end(s, cb.slotid, NFS4_CB_ACCEPTED);
	CHECK_EQ(nfs4_cb_sequence_begin(s, &cb), NFS4_OK);
	CHECK_EQ(cb.sequenceid, 2);
	/* resynchronised (RETRY_UNCACHED_REP): the client holds 2 already */
	CHECK_EQ(nfs4_cb_sequence_resync(s, cb.slotid, 2), 3);
	nfs4_cb_sequence_end(s, cb.slotid, NFS4_CB_ACCEPTED);
	CHECK_EQ(nfs4_cb_sequence_begin(s, &cb), NFS4_OK);
	CHECK_EQ(cb.sequenceid, 4);
	/* no reply: the same sequence id again, and the fault is reported */
	nfs4_cb_sequence_end(s, cb.slotid, NFS4_CB_LOST);
	CHECK_OK(nfs4_sequence_done(s, 0, NULL, 0));
	nfs4_session_put(s);
	CHECK_EQ(do_seq(st, cr.sessionid, 0, n++, false, false, &r, &s), NFS4_OK);
	CHECK(r.status_flags & SEQ4_STATUS_BACKCHANNEL_FAULT);
	CHECK(r.status_flags & SEQ4_STATUS_CB_PATH_DOWN_SESSION);
	CHECK(r.status_flags & SEQ4_STATUS_CB_PATH_DOWN);
	CHECK_OK(nfs4_sequence_done(s, 0, NULL, 0));
	nfs4_session_put(s);
	/* the client binds a new connection for the back channel */
	uint32_t dir;
	CHECK_EQ(nfs4_bind_conn_to_session(st, cr.sessionid, 9, (void *)0x2000, 2, &dir),
		 NFS4ERR_INVAL);
	CHECK_EQ(nfs4_bind_conn_to_session(st, cr.sessionid, NFS4_CDFC_BACK_OR_BOTH, (void *)0x2000,
					   2, &dir),
		 NFS4_OK);
	CHECK_EQ(dir, NFS4_CDFS_BOTH);
	CHECK_EQ(do_seq(st, cr.sessionid, 0, n++, false, false, &r, &s), NFS4_OK);
	CHECK_EQ(r.status_flags & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_BACKCHANNEL_FAULT), 0);
	CHECK_EQ(nfs4_cb_sequence_begin(s, &cb), NFS4_OK);
	CHECK_EQ(cb.sequenceid, 4);
	nfs4_cb_sequence_end(s, cb.slotid, NFS4_CB_ACCEPTED);
	CHECK_OK(nfs4_sequence_done(s, 0, NULL, 0));
	nfs4_session_put(s);
	/* both connections close: the path is down */
	nfs4_conn_closed(st, 1);
	nfs4_conn_closed(st, 2);
	CHECK_EQ(do_seq(st, cr.sessionid, 0, n++, false, false, &r, &s), NFS4_OK);
	CHECK(r.status_flags & SEQ4_STATUS_CB_PATH_DOWN);
	CHECK(r.status_flags & SEQ4_STATUS_CB_PATH_DOWN_SESSION);
	CHECK_EQ(nfs4_cb_sequence_begin(s, &cb), NFS4ERR_CONN_NOT_BOUND_TO_SESSION);
	CHECK_OK(nfs4_sequence_done(s, 0, NULL, 0));
	nfs4_session_put(s);
	/* connections bound per session are bounded */
	for (uint64_t id = 10; id < 10 + NFS4_SESSION_MAX_CONNS; id++)
		CHECK_EQ(
			nfs4_bind_conn_to_session(st, cr.sessionid, NFS4_CDFC_FORE, NULL, id, &dir),
			NFS4_OK);
	CHECK_EQ(nfs4_bind_conn_to_session(st, cr.sessionid, NFS4_CDFC_FORE, NULL, 99, &dir),
		 NFS4ERR_DELAY);
	uint8_t bad[16] = {0};
	CHECK_EQ(nfs4_bind_conn_to_session(st, bad, NFS4_CDFC_FORE, NULL, 99, &dir),
		 NFS4ERR_BADSESSION);
	nfs4_state_destroy(st);
	TEST_PASS("back channel: CB_SEQUENCE slot, DELAY, resync, faults, binding, CB_PATH_DOWN");
}

static void test_destroy_session_busy(void)
{
	struct nfs4_state *st = make(60, NULL);
	uint8_t sid[16];
	new_client(st, "busy", 1, sid);
	struct nfs4_seq_res r;
	struct nfs4_session *s1, *s2;
	CHECK_EQ(do_seq(st, sid, 0, 1, false, false, &r, &s1), NFS4_OK);
	CHECK_EQ(do_seq(st, sid, 1, 1, false, false, &r, &s2), NFS4_OK);
	/* from within the session, another slot still running: DELAY */
	CHECK_EQ(nfs4_destroy_session(st, sid, s1), NFS4ERR_DELAY);
	CHECK_OK(nfs4_sequence_done(s2, 1, NULL, 0));
	nfs4_session_put(s2);
	CHECK_EQ(nfs4_destroy_session(st, sid, s1), NFS4_OK);
	/* the caller's slot ends normally; the session is gone */
	CHECK_OK(nfs4_sequence_done(s1, 0, "late", 4));
	nfs4_session_put(s1);
	CHECK_EQ(do_seq(st, sid, 0, 2, false, false, &r, &s1), NFS4ERR_BADSESSION);
	struct nfs4_state_counts c;
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.sessions, 0);
	CHECK_EQ(c.cache_bytes, 0);
	CHECK_EQ(c.cache_reserved, 0);
	nfs4_state_destroy(st);
	TEST_PASS("destroy_session while busy");
}

/* 100 clients with many stateids, all expiring: every counter back to 0. */
static void test_scale_expiry(void)
{
	struct rec_store rs = {0};
	struct nfs4_state *st = make(70, &rs);
	enum { NCL = 100, NST = 200 };
	struct payload *pl = calloc(NCL * NST, sizeof(*pl));
	static uint8_t sids[NCL][16];
	uint64_t ids[NCL];
	atomic_store(&releases, 0);
	for (int i = 0; i < NCL; i++) {
		char owner[32];
		snprintf(owner, sizeof(owner), "client-%03d", i);
		ids[i] = new_client(st, owner, 1, sids[i]);
		struct nfs4_client *clp = nfs4_client_find(st, ids[i]);
		for (int j = 0; j < NST; j++) {
			struct nfs4_stid *sd;
			unsigned t = j & 1 ? NFS4_STID_LOCK : NFS4_STID_OPEN;
			CHECK_EQ(nfs4_stid_alloc(clp, t, &pl[i * NST + j], &sd), NFS4_OK);
			if (j % 50 == 0)
				nfs4_stid_revoke(sd, NFS4_REVOKE_ADMIN);
			nfs4_stid_put(sd);
		}
		nfs4_client_put(clp);
		run_compound(st, sids[i], 0, 1, true, "cached reply", 12);
	}
	struct nfs4_state_counts c;
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.clients, NCL);
	CHECK_EQ(c.stateids, NCL * NST);
	CHECK_EQ(c.sessions, NCL);
	CHECK(c.cache_bytes > 0);
	CHECK_EQ(rs.n, NCL);
	/* leases run out: all courtesy; half meet a conflict, the rest time out */
	advance(91 * NSEC_PER_SEC);
	nfs4_state_reap(st, NULL);
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.courtesy, NCL);
	for (int i = 0; i < NCL; i += 2)
		CHECK(nfs4_client_expire_if_courtesy(st, ids[i], NULL));
	advance(24 * 3600 * NSEC_PER_SEC);
	nfs4_state_reap(st, NULL);
	nfs4_state_counts(st, &c);
	CHECK_EQ(c.clients, 0);
	CHECK_EQ(c.sessions, 0);
	CHECK_EQ(c.stateids, 0);
	CHECK_EQ(c.cache_bytes, 0);
	CHECK_EQ(c.cache_reserved, 0);
	CHECK_EQ(c.expired, NCL);
	CHECK_EQ(atomic_load(&releases), NCL * NST);
	for (int k = 0; k < NCL * NST; k++)
		CHECK_EQ(atomic_load(&pl[k].released), 1);
	CHECK_EQ(rs.n, 0);
	free(pl);
	nfs4_state_destroy(st);
	TEST_PASS("100 clients x 200 stateids expire to nothing");
}

int main(void)
{
	test_exchange_id_cases();
	test_exchange_id_reboot();
	test_create_session();
	test_sequence_slots();
	test_replay_memory();
	test_lease_courtesy();
	test_destroy_clientid_and_bounds();
	test_grace_timeout();
	test_grace_early();
	test_stateids();
	test_hold_ends();
	test_restart_stale();
	test_backchannel();
	test_destroy_session_busy();
	test_scale_expiry();
	return 0;
}
