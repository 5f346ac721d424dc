/*
 * stateid.h - NFSv4.1 stateids: allocation, seqid rules, validation,
 * revocation, TEST_STATEID and FREE_STATEID.
 *
 * Design note.
 *
 * A stateid (RFC 8881 §8.2) is a 32-bit seqid and a 12-byte "other" field.
 * Our "other" is three big-endian 32-bit words:
 *
 *   other[0..3]   boot epoch: a stateid of another server instance is
 *                 recognised and answered STALE_STATEID
 *   other[4..7]   the low 32 bits of the owning clientid: a stateid is
 *                 client-scoped, another client's is BAD_STATEID
 *   other[8..11]  a counter of the client, never 0, skipping values in use
 *
 * The seqid starts at 1 and the op layer bumps it on every change of the
 * state (OPEN upgrade/downgrade, LOCK, LOCKU, LAYOUTGET...), skipping 0 on
 * wrap. A client may send seqid 0, meaning "the current one" (§8.2.2).
 *
 * Special stateids (§8.2.3) are never in the table: all zeros (anonymous),
 * all ones (READ bypass), seqid 1 with other 0 (the current stateid of the
 * compound, §16.2.3.1.2) and seqid 0xffffffff with other 0 (invalid). The op
 * layer substitutes the current stateid and treats anonymous/bypass itself;
 * nfs4_stateid_special() tells them apart.
 *
 * Life of an entry:
 *
 *   alloc ──► VALID ──unhash (CLOSE, LOCKU+FREE, LAYOUTRETURN, client gone)──► UNHASHED
 *               │                                                                │
 *               └──revoke──► REVOKED ──FREE_STATEID──► UNHASHED ──last put──► freed
 *
 * Invariants:
 *  1. A lookup returns an entry with a reference; an entry is freed only
 *     when unhashed and unreferenced, so an entry in use by an op is never
 *     freed under it.
 *  2. The payload is released exactly once: when the last reference to an
 *     unhashed entry goes, or, once revoked, when only the table's is left
 *     (no operation holds the entry); never with a state lock held.
 *  3. A revoked entry stays (answering EXPIRED, ADMIN_REVOKED or
 *     DELEG_REVOKED, and setting the matching SEQUENCE status flag) until
 *     the client frees it with FREE_STATEID or the client goes.
 *  4. Entries count against max_stateids_per_client and max_stateids from
 *     alloc until freed; a full table answers DELAY.
 *  5. nfs4_stid_lock() serializes the operations on one stateid; no
 *     function here takes it, so lookups never wait for an operation.
 *  6. A payload that points at its entry (lists kept outside this table)
 *     takes a reference only with nfs4_stid_tryget(): between the last put
 *     and the release unlinking the payload, the entry is still reachable
 *     there with no reference left (tests/nfs4/test_nfs4_hostile.c, FREE_STATEID
 *     racing CLOSE). An OPEN, LOCK or LAYOUTGET that finds its state so
 *     answers DELAY (tests/nfs4/test_nfs4_dying.c).
 */
#ifndef JNFS_NFS4_STATEID_H
#define JNFS_NFS4_STATEID_H

#include <stdbool.h>
#include <stdint.h>

#include "nfs4/state/client.h"

#define NFS4_OTHER_SIZE 12

struct nfs4_stateid {
	uint32_t seqid;
	uint8_t other[NFS4_OTHER_SIZE];
};

/* Types, usable as a mask in nfs4_stid_find(). */
#define NFS4_STID_OPEN	 0x1u
#define NFS4_STID_LOCK	 0x2u
#define NFS4_STID_LAYOUT 0x4u
#define NFS4_STID_DELEG	 0x8u
#define NFS4_STID_ANY	 0xfu

enum nfs4_stateid_kind {
	NFS4_STATEID_NORMAL,
	NFS4_STATEID_ANONYMOUS, /* seqid 0, other all zeros */
	NFS4_STATEID_BYPASS,	/* seqid 0xffffffff, other all ones */
	NFS4_STATEID_CURRENT,	/* seqid 1, other all zeros */
	NFS4_STATEID_INVALID,	/* any other value with other all zeros or all ones */
};
enum nfs4_stateid_kind nfs4_stateid_special(const struct nfs4_stateid *sid);

/* Why a stateid was revoked, and what using it then answers. */
enum nfs4_revoke_reason {
	NFS4_REVOKE_EXPIRED, /* lease expired, conflict: EXPIRED, EXPIRED_SOME_STATE_REVOKED */
	NFS4_REVOKE_ADMIN,   /* administrator: ADMIN_REVOKED, ADMIN_STATE_REVOKED */
	NFS4_REVOKE_RECALL,  /* a recalled delegation or layout not returned:
			      * DELEG_REVOKED, RECALLABLE_STATE_REVOKED */
};

/*
 * A new stateid of type for payload (the caller's), seqid 1: NFS4_OK and
 * *out referenced; DELAY when a bound is reached (invariant 4); EXPIRED if
 * the client has left the table.
 */
uint32_t nfs4_stid_alloc(struct nfs4_client *clp, unsigned type, void *payload,
			 struct nfs4_stid **out);

/*
 * Validate sid for clp and return its entry, referenced. types is a mask
 * of acceptable types. Answers, in this order: BAD_STATEID (special or
 * malformed), STALE_STATEID (another boot epoch), BAD_STATEID (another
 * client, unknown, wrong type), EXPIRED/ADMIN_REVOKED/DELEG_REVOKED
 * (revoked), BAD_STATEID (seqid newer than the entry's), OLD_STATEID
 * (older); seqid 0 matches any.
 */
uint32_t nfs4_stid_find(struct nfs4_client *clp, const struct nfs4_stateid *sid, unsigned types,
			struct nfs4_stid **out);

void nfs4_stid_get(struct nfs4_stid *s);
/* A reference to an entry found through its payload (an open's list of lock
 * stateids, the lock table), not through the table: false when the entry
 * is unhashed or revoked, or its last reference has gone (its release may be running
 * in another thread and must not run twice: invariant 6). */
bool nfs4_stid_tryget(struct nfs4_stid *s);
/* Drop a reference; the last one of an unhashed entry releases its payload
 * (call with no state lock held). */
void nfs4_stid_put(struct nfs4_stid *s);

unsigned nfs4_stid_type(const struct nfs4_stid *s);
void *nfs4_stid_payload(const struct nfs4_stid *s);
uint64_t nfs4_stid_clientid(const struct nfs4_stid *s);
/* The current value (seqid and other). */
void nfs4_stid_value(struct nfs4_stid *s, struct nfs4_stateid *sid);
/* The state changed: seqid + 1 (0 skipped); *sid gets the new value. */
void nfs4_stid_bump(struct nfs4_stid *s, struct nfs4_stateid *sid);
/* The stateid is over (CLOSE, the last LOCKU freed, LAYOUTRETURN...): later
 * lookups answer BAD_STATEID. The payload is released at the last put. */
void nfs4_stid_unhash(struct nfs4_stid *s);
/* Revoke: lookups answer the revocation's error from now on; the payload
 * is released when the last reference but the table's goes (the caller
 * holds one: at its put at the latest), so never under an operation still
 * using it; the entry stays until FREE_STATEID (invariant 3). Call with no
 * state lock held. */
void nfs4_stid_revoke(struct nfs4_stid *s, enum nfs4_revoke_reason why);

/*
 * Tests only (jnfsd --test-hold-ends): while on, every entry that is
 * unhashed (CLOSE, FREE_STATEID, LAYOUTRETURN, the lock stateids a CLOSE
 * ends) keeps one more reference, so that its payload's release is held
 * back: the entry is dying (unhashed, its payload still linked where the
 * op layer finds it) for as long as a test wants, where otherwise it is
 * so only for a moment. Turning it off drops those references (the
 * releases run then, in the caller); an end racing that may stay held
 * until the next time it is turned off, or until nfs4_state_destroy(),
 * which lets go of whatever is held. Call with no state lock held.
 */
void nfs4_stid_hold_ends(struct nfs4_state *st, bool on);

/*
 * Serialize the operations that change one stateid's state (OPEN upgrade,
 * OPEN_DOWNGRADE, CLOSE, LOCK, LOCKU...): check the seqid, change the
 * locks or share reservations, bump, all under this mutex, as one step.
 * Hold a reference while it is locked. It ranks 550 ("nfs4.stid"), below
 * the byte-range lock and share tables (570-580), which may be called with
 * it held, and below every state lock. Two at once: an open (or delegation
 * or layout) stateid first, then a lock stateid.
 */
void nfs4_stid_lock(struct nfs4_stid *s);
void nfs4_stid_unlock(struct nfs4_stid *s);
#ifdef JNFS_LOCKDEP
/* A contract's check ("open stateid locked"): panics naming the function
 * unless the caller holds s's operations lock (base/lock.h). */
#define assert_stid_locked(s) nfs4_stid_assert_locked((s), __func__)
void nfs4_stid_assert_locked(const struct nfs4_stid *s, const char *func);
#else
#define assert_stid_locked(s) ((void)(s))
#endif

/* TEST_STATEID (RFC 8881 §18.48) for one stateid: OK, BAD_STATEID (also
 * for special and stale ones), OLD_STATEID, EXPIRED, ADMIN_REVOKED,
 * DELEG_REVOKED. Renews nothing, takes no reference. */
uint32_t nfs4_test_stateid(struct nfs4_client *clp, const struct nfs4_stateid *sid);

/*
 * FREE_STATEID (RFC 8881 §18.38): a revoked stateid is freed; a lock
 * stateid whose owner holds no locks (stid_ops.has_locks) is freed;
 * a valid open, delegation or layout stateid, or a lock stateid with
 * locks, is LOCKS_HELD; BAD_STATEID/OLD_STATEID as nfs4_stid_find();
 * DELAY while another operation uses it. Call with no lock held.
 */
uint32_t nfs4_free_stateid(struct nfs4_client *clp, const struct nfs4_stateid *sid);

#endif
