/*
 * tally.h - per-client counts of state records with two bounds (per client
 * and in total), and each client's list of items, for the NFSv4 lock and
 * share tables (brlock.h, share.h).
 *
 * Design note.
 *
 * A table of NFSv4 state (byte-range locks, opens) charges every record it
 * keeps to the client that owns it. A charge that would take the client past
 * max_per_client, or everyone past max_total, is refused before anything
 * changes, so the caller can refuse the request with nothing to undo. The
 * charge is made while the caller holds the lock of the file the records
 * belong to, and the shard lock is held until the change is done: the count
 * and the change are one step for every other thread.
 *
 * A client's entry also lists the caller's per-file items of that client (a
 * lock owner's locks on one file, an open), so that everything of a client
 * or of an owner can be found without scanning every file (lease expiry,
 * DESTROY_CLIENTID, RELEASE_LOCKOWNER).
 *
 * Invariants:
 *  1. tc_n is the sum of the records charged to the client and never
 *     exceeds max_per_client; total is the sum over all clients and never
 *     exceeds max_total.
 *  2. A client has an entry exactly while tc_n > 0. Every item of the
 *     client carries at least one record, so tc_items is empty exactly
 *     when tc_n == 0, and the entry is freed then.
 *  3. An item on tc_items stays allocated while the shard lock is held
 *     (its owner unlinks it under that lock before freeing it), so a
 *     thread holding the shard lock may read the item's immutable fields,
 *     e.g. the key of its file.
 *
 * Lock order: the shard lock (class "nfs4.tally", rank 580) is taken inside
 * the callers' file locks (570-579) and never the other way round; no two
 * shard locks are ever held at once. See brlock.h for the whole nfs4 band.
 */
#ifndef JNFS_NFS4_TALLY_H
#define JNFS_NFS4_TALLY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hashmap.h"
#include "base/list.h"
#include "base/lock.h"

#define TALLY_SHARDS 16

struct tally_client {
	uint64_t tc_id;
	size_t tc_n;	      /* records charged (invariant 1) */
	struct list tc_items; /* the owner table's items of this client */
};

struct tally_shard {
	struct mutex ts_lock;
	struct hashmap ts_clients; /* client id -> struct tally_client */
};

struct tally {
	struct tally_shard t_shards[TALLY_SHARDS];
	size_t t_max_total;
	size_t t_max_per_client;
	_Atomic size_t t_total;	  /* records charged to every client */
	_Atomic size_t t_clients; /* entries */
};

void tally_init(struct tally *t, size_t max_total, size_t max_per_client);
/* Every entry must have been released (panics otherwise). */
void tally_destroy(struct tally *t);

/* Lock the shard of client and return it; tally_unlock() drops it. */
struct tally_shard *tally_lock(struct tally *t, uint64_t client);
void tally_unlock(struct tally_shard *s);

/* The client's entry or NULL. Shard locked. */
struct tally_client *tally_find(struct tally_shard *s, uint64_t client);

/*
 * Charge n >= 1 records to client: 0 and the entry in *tcp (created if
 * needed), or -ENOLCK if either bound would be passed, with nothing changed.
 * Shard locked.
 */
int tally_charge(struct tally *t, struct tally_shard *s, uint64_t client, size_t n,
		 struct tally_client **tcp);

/* Give back n records; frees the entry at 0 (its item list must then be
 * empty). Shard locked; tc is invalid afterwards if it was freed. */
void tally_uncharge(struct tally *t, struct tally_shard *s, struct tally_client *tc, size_t n);

static inline size_t tally_total(struct tally *t)
{
	return atomic_load_explicit(&t->t_total, memory_order_relaxed);
}

static inline size_t tally_clients(struct tally *t)
{
	return atomic_load_explicit(&t->t_clients, memory_order_relaxed);
}

/* Records charged to client (0 for an unknown client). */
size_t tally_count(struct tally *t, uint64_t client);

#endif
