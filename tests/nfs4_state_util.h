/*
 * nfs4_state_util.h - what the NFSv4.1 state tests share: a clock the test
 * moves, a record store in memory, payloads that count their release, and
 * short forms of EXCHANGE_ID, CREATE_SESSION and SEQUENCE.
 */
#ifndef JNFS_TESTS_NFS4_STATE_UTIL_H
#define JNFS_TESTS_NFS4_STATE_UTIL_H

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "base/compiler.h"
#include "base/time.h"
#include "check.h"
#include "nfs4/state/client.h"
#include "nfs4/state/grace.h"
#include "nfs4/state/session.h"
#include "nfs4/state/stateid.h"

/* ---- a clock the test moves -------------------------------------------- */

static __unused _Atomic uint64_t fake_now = 1000 * NSEC_PER_SEC;

static inline uint64_t fake_clock(void *arg)
{
	(void)arg;
	return atomic_load(&fake_now);
}

static inline void advance(uint64_t ns)
{
	atomic_fetch_add(&fake_now, ns);
}

/* ---- a record store in memory ------------------------------------------ */

#define MAX_RECS 512
struct rec_store {
	struct nfs4_client_record recs[MAX_RECS];
	unsigned n;
	unsigned saves, forgets;
	uint64_t seq;
	int fail; /* next save fails with this */
};

static inline int rec_save(void *arg, const struct nfs4_client_record *rec, uint64_t *seq)
{
	struct rec_store *rs = arg;
	if (rs->fail) {
		int e = rs->fail;
		rs->fail = 0;
		return e;
	}
	CHECK(rs->n < MAX_RECS);
	for (unsigned i = 0; i < rs->n; i++)
		CHECK(rs->recs[i].clientid != rec->clientid);
	rs->recs[rs->n++] = *rec;
	rs->saves++;
	*seq = ++rs->seq;
	return 0;
}

static inline int rec_forget(void *arg, const struct nfs4_client_record *rec, uint64_t *seq)
{
	struct rec_store *rs = arg;
	for (unsigned i = 0; i < rs->n; i++) {
		if (rs->recs[i].clientid == rec->clientid) {
			rs->recs[i] = rs->recs[--rs->n];
			rs->forgets++;
			*seq = ++rs->seq;
			return 0;
		}
	}
	CHECK(!"forgetting a record that was never saved");
	return -ENOENT;
}

static __unused const struct nfs4_record_ops rec_ops = {rec_save, rec_forget};

static inline bool rec_has_owner(const struct rec_store *rs, const char *owner)
{
	for (unsigned i = 0; i < rs->n; i++)
		if (rs->recs[i].owner_len == strlen(owner) &&
		    !memcmp(rs->recs[i].owner, owner, strlen(owner)))
			return true;
	return false;
}

/* ---- payloads ---------------------------------------------------------- */

struct payload {
	atomic_int released;
	bool locks;
};

static __unused atomic_int releases;

static inline bool pl_has_locks(void *arg, unsigned type, void *payload)
{
	(void)arg;
	(void)type;
	return payload && ((struct payload *)payload)->locks;
}

static inline void pl_release(void *arg, unsigned type, void *payload)
{
	(void)arg;
	(void)type;
	struct payload *p = payload;
	CHECK_EQ(atomic_fetch_add(&p->released, 1), 0); /* exactly once */
	atomic_fetch_add(&releases, 1);
}

static __unused const struct nfs4_stid_ops pl_ops = {pl_has_locks, pl_release};

/* ---- the state under test ---------------------------------------------- */

static inline void test_config(struct nfs4_state_config *c, uint32_t epoch, struct rec_store *rs)
{
	nfs4_state_config_default(c);
	c->boot_epoch = epoch;
	for (int i = 0; i < 16; i++)
		c->server_uuid[i] = (uint8_t)(0xa0 + i);
	c->clock = fake_clock;
	c->records = rs ? &rec_ops : NULL;
	c->records_arg = rs;
	c->stid_ops = &pl_ops;
	c->seed = 42;
}

static inline struct nfs4_principal princ(const char *s)
{
	struct nfs4_principal p = {0};
	p.len = (uint32_t)strlen(s);
	memcpy(p.data, s, p.len);
	return p;
}

static inline uint32_t exid(struct nfs4_state *st, const char *owner, uint64_t verf,
			    const char *who, uint32_t flags, struct nfs4_exchange_id_res *r)
{
	struct nfs4_exchange_id_args a = {0};
	memcpy(a.verifier, &verf, 8);
	a.ownerid = (const uint8_t *)owner;
	a.ownerid_len = (uint32_t)strlen(owner);
	a.flags = flags;
	a.principal = princ(who);
	a.pnfs_role = EXCHGID4_FLAG_USE_PNFS_MDS;
	return nfs4_exchange_id(st, &a, r, NULL);
}

static inline struct nfs4_channel_attrs fore_attrs(uint32_t slots, uint32_t cached)
{
	struct nfs4_channel_attrs f = {0};
	f.maxrequestsize = 1 << 20;
	f.maxresponsesize = 1 << 20;
	f.maxresponsesize_cached = cached;
	f.maxoperations = 16;
	f.maxrequests = slots;
	return f;
}

static inline struct nfs4_create_session_args cs_args(uint64_t clientid, uint32_t seq,
						      const char *who)
{
	struct nfs4_create_session_args a = {0};
	a.clientid = clientid;
	a.sequence = seq;
	a.flags = CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
	a.fore = fore_attrs(64, 4096);
	a.back = fore_attrs(4, 0);
	a.back.maxrequestsize = a.back.maxresponsesize = 4096;
	a.back.maxoperations = 2;
	a.cb_program = 0x40000000;
	a.principal = princ(who);
	return a;
}

/* EXCHANGE_ID and CREATE_SESSION: a confirmed client with one session. */
static inline uint64_t new_client(struct nfs4_state *st, const char *owner, uint64_t verf,
				  uint8_t *sessionid)
{
	struct nfs4_exchange_id_res er;
	CHECK_EQ(exid(st, owner, verf, "sys:0:0", 0, &er), NFS4_OK);
	struct nfs4_create_session_args a = cs_args(er.clientid, er.sequenceid, "sys:0:0");
	struct nfs4_create_session_res r;
	CHECK_EQ(nfs4_create_session(st, &a, &r, NULL), NFS4_OK);
	memcpy(sessionid, r.sessionid, NFS4_SESSIONID_SIZE);
	return er.clientid;
}

static __unused uint8_t replay_buf[64 << 10];

static inline uint32_t do_seq(struct nfs4_state *st, const uint8_t *sid, uint32_t slot,
			      uint32_t seqid, bool cachethis, bool solo, struct nfs4_seq_res *r,
			      struct nfs4_session **s)
{
	struct nfs4_seq_args a = {0};
	memcpy(a.sessionid, sid, NFS4_SESSIONID_SIZE);
	a.sequenceid = seqid;
	a.slotid = slot;
	a.highest_slotid = slot;
	a.cachethis = cachethis;
	a.solo = solo;
	a.replay_buf = replay_buf;
	a.replay_cap = sizeof(replay_buf);
	return nfs4_sequence(st, &a, r, s);
}

/* A whole compound on slot: SEQUENCE, then done with reply. */
static inline void run_compound(struct nfs4_state *st, const uint8_t *sid, uint32_t slot,
				uint32_t seqid, bool cachethis, const void *reply, size_t len)
{
	struct nfs4_seq_res r;
	struct nfs4_session *s;
	CHECK_EQ(do_seq(st, sid, slot, seqid, cachethis, false, &r, &s), NFS4_OK);
	CHECK_EQ(r.kind, NFS4_SEQ_NEW);
	CHECK_OK(nfs4_sequence_done(s, slot, reply, len));
	nfs4_session_put(s);
}

#endif
