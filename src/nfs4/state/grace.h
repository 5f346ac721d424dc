/*
 * grace.h - crash recovery for NFSv4.1 clients: the clients known from the
 * previous server instance, the grace period, and the answers to reclaims
 * (RFC 8881 §8.4, §18.51).
 *
 * Design note.
 *
 * Before serving, the caller reads the previous instance's client records
 * from its durable store and hands each to nfs4_grace_load(), then calls
 * nfs4_grace_start(). The module does no I/O itself: records change only
 * through cfg.records (client.h), called at confirmation and expiry.
 *
 * A client that comes back (EXCHANGE_ID with the same owner, confirmed by
 * CREATE_SESSION) is matched to its previous record by owner. With the same
 * verifier it is the same client instance and may reclaim until it sends
 * RECLAIM_COMPLETE; with another verifier it rebooted meanwhile and had
 * nothing to reclaim (its reclaims are RECLAIM_BAD: that state cannot have
 * existed). The previous record is forgotten once the new one is saved.
 *
 *   nfs4_grace_start ──► IN GRACE ──every known client sent RECLAIM_COMPLETE,
 *     (no known client: ends at once)  │    rebooted or was destroyed ──► OVER
 *                                      └──grace_ns passed (nfs4_state_reap) ──► OVER
 *
 * At the end, the records of known clients that never came back are
 * forgotten: they can no longer reclaim.
 *
 * Answers:
 *   new state (OPEN, LOCK that is not a reclaim)   in grace: GRACE
 *   an OPEN that is not a reclaim                  before its client's
 *       RECLAIM_COMPLETE, in grace or not: GRACE (as the Linux server;
 *       LOCK is not held back, as Linux does not)
 *   a reclaim                                      after grace: NO_GRACE;
 *       by a client not known from the previous instance, or after its
 *       RECLAIM_COMPLETE: NO_GRACE; by a known client that rebooted since:
 *       RECLAIM_BAD
 *   RECLAIM_COMPLETE (rca_one_fs false)            twice: COMPLETE_ALREADY
 *
 * Invariants:
 *  1. Grace ends once and never restarts in one server instance.
 *  2. Known clients are bounded by max_clients (nfs4_grace_load refuses more).
 */
#ifndef JNFS_NFS4_GRACE_H
#define JNFS_NFS4_GRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "nfs4/state/client.h"

/* A record of the previous instance: 0, -ENOSPC beyond max_clients records,
 * -EINVAL after nfs4_grace_start(). Of two records of one owner the one
 * with the higher clientid counts; the other is forgotten at grace end. */
int nfs4_grace_load(struct nfs4_state *st, const struct nfs4_client_record *rec);
/* Start the grace period now. Call once, before serving, with no lock held. */
void nfs4_grace_start(struct nfs4_state *st, uint64_t *seq);

bool nfs4_grace_active(struct nfs4_state *st);
/* New state (not a reclaim): NFS4_OK, or GRACE while in grace. */
uint32_t nfs4_grace_check_new(struct nfs4_state *st);
/* New open state by clp: GRACE until clp sent RECLAIM_COMPLETE, in grace
 * or not (RFC 8881 §18.51.3: before it a client may only reclaim), else
 * NFS4_OK; grace itself is nfs4_grace_check_new's. */
uint32_t nfs4_grace_check_complete(struct nfs4_state *st, struct nfs4_client *clp);
/* A reclaim by clp: NFS4_OK, NO_GRACE or RECLAIM_BAD (see above). */
uint32_t nfs4_grace_check_reclaim(struct nfs4_state *st, struct nfs4_client *clp);
/* RECLAIM_COMPLETE with rca_one_fs false: OK or COMPLETE_ALREADY. May end
 * grace (and forget records): call with no lock held. */
uint32_t nfs4_reclaim_complete(struct nfs4_state *st, struct nfs4_client *clp, uint64_t *seq);

enum nfs4_grace_end {
	NFS4_GRACE_NOT_OVER,
	NFS4_GRACE_ALL_RECLAIMED, /* every known client completed (or none was known) */
	NFS4_GRACE_TIMEOUT,
};

struct nfs4_grace_info {
	bool started, active;
	enum nfs4_grace_end end;
	uint64_t start_ns, end_ns; /* end_ns - start_ns: how long grace lasted */
	unsigned known;		   /* clients loaded from the previous instance */
	unsigned pending;	   /* of those, not yet completed */
};
void nfs4_grace_info(struct nfs4_state *st, struct nfs4_grace_info *gi);

#endif
