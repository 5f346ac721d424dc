/*
 * ftab.h - the skeleton the byte-range lock table (brlock.h) and the share
 * table (share.h) are built on.
 *
 * Design note.
 *
 * Both tables keep records per file (an opaque 64-bit key of the caller's)
 * and per client: files hash into buckets, each a mutex and a hash map of
 * its files; every record is charged to its client in a tally (tally.h),
 * whose entry lists the table's per-file items of that client (a lock
 * owner's holder of one file, an open), so that everything of a client or
 * of an owner is found without walking every file. This file has what the
 * two share: the buckets, the file map's bookkeeping, the counters, the
 * walks over a client's items (release, holds-any) and the bucket walk of
 * a consistency check. The file and item structs are the table's own; the
 * skeleton reaches them through struct ftab_ops.
 *
 * Invariants (each table's own numbered ones build on these):
 *  1. A file is in the map of the bucket its key hashes to, under that
 *     key, exactly while it has items (ftab_file_add, ftab_file_drop);
 *     ft_files counts them.
 *  2. A whole client or owner is visited one file at a time: an item is
 *     found under the shard lock (its file's key is immutable: tally.h
 *     invariant 3), the shard lock dropped, the file's bucket taken
 *     (bucket before shard: the lock order of brlock.h), until nothing
 *     matches.
 *
 * Lock order: a bucket's lock (the table's class: nfs4.brl.bucket 570,
 * nfs4.share.bucket 575), then the tally's shard (580); never two buckets.
 */
#ifndef JNFS_NFS4_FTAB_H
#define JNFS_NFS4_FTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hashmap.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/stats.h"
#include "nfs4/state/tally.h"

struct ftab_bucket {
	struct mutex b_lock;
	struct hashmap b_files; /* key -> the table's file */
} __attribute__((aligned(64)));

struct ftab {
	const char *ft_name; /* in messages: "brl", "share" */
	unsigned ft_nbuckets;
	struct ftab_bucket *ft_buckets;
	struct tally ft_tally;
	_Atomic size_t ft_files; /* invariant 1 */
	counter_t ft_granted;	 /* requests granted, */
	counter_t ft_denied;	 /* refused by a conflict, */
	counter_t ft_refused;	 /* refused at a bound */
};

/* What the skeleton asks of the table built on it. */
struct ftab_ops {
	/* The client of one of fp's items (a file has items: invariant 1). */
	uint64_t (*file_client)(void *fp);
	/* link is on a tc_items list: true if its item is of owner o (NULL:
	 * any owner of the list's client), and *file its file's key. */
	bool (*item_of)(const struct list *link, const void *o, uint64_t *file);
	/* Remove what client (o NULL) or owner o (of client) holds on fp,
	 * bucket locked: the records that went; may drop and free fp. */
	size_t (*remove)(struct ftab *ft, struct ftab_bucket *b, void *fp, uint64_t client,
			 const void *o);
};

/* buckets: a power of two (panics otherwise); cls: the bucket locks'. */
void ftab_init(struct ftab *ft, const char *name, unsigned buckets, struct lock_class *cls,
	       size_t max_total, size_t max_per_client);
/* Removes everything left (ops->remove), then frees the skeleton. */
void ftab_destroy(struct ftab *ft, const struct ftab_ops *ops);

struct ftab_bucket *ftab_bucket(struct ftab *ft, uint64_t key);
/* The file of key, or NULL; b locked. */
void *ftab_file(struct ftab_bucket *b, uint64_t key);
/* Lock the bucket of key (*bp; the caller unlocks it): its file, or NULL. */
void *ftab_lock_file(struct ftab *ft, uint64_t key, struct ftab_bucket **bp);
/* A new file fp of key into b's map (b locked), and out of it (the
 * caller frees fp). */
void ftab_file_add(struct ftab *ft, struct ftab_bucket *b, uint64_t key, void *fp);
void ftab_file_drop(struct ftab *ft, struct ftab_bucket *b, uint64_t key);

/* Everything of client (o NULL) or of its owner o, file by file
 * (invariant 2): the records that went. No lock held. */
size_t ftab_release(struct ftab *ft, const struct ftab_ops *ops, uint64_t client, const void *o);
/* Does owner o of client hold anything? No lock held. */
bool ftab_holds_any(struct ftab *ft, const struct ftab_ops *ops, uint64_t client, const void *o);

/*
 * The consistency check's walk: every file, bucket by bucket (each locked
 * meanwhile), must be in the bucket of its key (else -EUCLEAN, said), and
 * passes check(fp, key, per_client, arg) (0 or -EUCLEAN, said by it),
 * which adds to per_client (client -> size_t *, ftab_count) what it
 * counted of each client. *nfiles: the files walked.
 */
int ftab_check_files(struct ftab *ft, struct hashmap *per_client,
		     int (*check)(void *fp, uint64_t key, struct hashmap *per_client, void *arg),
		     void *arg, size_t *nfiles);
void ftab_count(struct hashmap *per_client, uint64_t client, size_t n);
/*
 * Then, unless err is set, every client of per_client against its tally
 * entry, under the shard lock: check(tc, client, n, arg), tc NULL when it
 * has none; per_client is emptied and destroyed. Returns err or check's.
 */
int ftab_check_clients(struct ftab *ft, struct hashmap *per_client, int err,
		       int (*check)(struct tally_client *tc, uint64_t client, size_t n, void *arg),
		       void *arg);

#endif
