/*
 * brlock.h - byte-range locks with POSIX semantics for NFSv4.1 LOCK, LOCKT
 * and LOCKU (RFC 8881 sections 12 and 18.10-18.12).
 *
 * Design note.
 *
 * The table keeps, per file (an opaque 64-bit key chosen by the caller), the
 * byte ranges locked by lock owners. An owner is an opaque 64-bit key plus
 * the client id it belongs to; two owners are the same when both match.
 * The table knows nothing of stateids, sequence ids, leases or grace: the
 * NFSv4 state code above it maps those to owners and files, and it decides
 * what an error means on the wire (docs/nfs4-locks.md has the mapping).
 *
 * Semantics (those of POSIX fcntl locks between processes):
 *  - A READ lock conflicts with another owner's WRITE lock on a common
 *    byte; a WRITE lock with any other owner's lock on a common byte. An
 *    owner's own locks never conflict with each other.
 *  - A request that conflicts changes nothing and reports the first
 *    conflicting lock in offset order: range, type, owner and client, so a
 *    courteous server can tell an expired client's lock from a live one's.
 *  - Granted, the request replaces whatever the owner held in its range:
 *    locks of the same type that overlap or touch it are merged into one;
 *    parts of locks of the other type outside the range are kept (a lock
 *    can be split in two); an upgrade (READ to WRITE) or downgrade over part
 *    of a lock is the same operation. So an upgrade that conflicts fails
 *    with nothing changed, and a downgrade never conflicts.
 *  - Unlocking a range removes it from the owner's locks, splitting a lock
 *    that covers it with bytes to spare on both sides; unlocking bytes that
 *    are not locked is not an error.
 *  - A length of all ones (BRL_EOF) means "to the end of the file": the
 *    range ends at byte 2^64 - 1 whatever the file's size. Any other length
 *    must be non-zero and offset + length must not pass 2^64 - 1, else the
 *    request is invalid (-EINVAL; NFS4ERR_INVAL on the wire).
 *  - Nothing here ever waits: a conflicting request is refused at once. A
 *    client that wants to wait polls (RFC 8881 section 9.6); no server
 *    thread waits on a client (docs/design.md rule 9).
 *
 * Bounds. Every lock record is charged to its owner's client (tally.h): at
 * most max_locks_per_client per client and max_locks in all. A request that
 * would need more records than that is refused with -ENOLCK and changes
 * nothing. Merges never need a record; a lock or unlock strictly inside
 * another lock of the owner needs one or two more (the pieces on either
 * side), so even an unlock or a downgrade can be refused at the bound.
 *
 * Data structures. Files hash into buckets; a bucket has a mutex and a hash
 * map of its files. A file has its locks on one list sorted by start offset
 * (all owners together: a conflict check reads every lock that starts
 * before the end of the request) and a list of holders, one per owner that
 * holds locks on it (what NFSv4 calls a lock stateid's state). Each holder
 * is also listed with its client (tally.h), so that everything of a client
 * or owner is found without walking every file.
 *
 * Invariants (brl_check() verifies them; tests cite them by number):
 *  1. A file's locks are sorted by start; every lock has start <= last.
 *  2. Canonical form: an owner's locks on a file never overlap, and two of
 *     the same type never touch (last + 1 == start): they would have been
 *     merged. So an owner's locks on a file are exactly the maximal runs of
 *     bytes it holds with one type.
 *  3. A holder exists exactly while it has locks; h_n counts them; a file
 *     exists exactly while it has holders.
 *  4. The records charged to a client equal the locks of its holders
 *     (tally.h invariant 1); no failed request changes any lock, holder,
 *     file or count.
 *
 * Threads and lock order. Any thread may call any function. Ranks 500-699
 * are the NFSv4 server's (base/lock_classes.h); this table and share.h
 * take nothing but the tally under their locks: a caller may hold any lock
 * ranked below 570 when calling in, and nothing here calls out while
 * holding a lock.
 *    550      nfs4.stid         a stateid's operations (callers; client.h)
 *    570      nfs4.brl.bucket   one file bucket (never two at once)
 *    575      nfs4.share.bucket one share bucket (share.h)
 *    580      nfs4.tally        one client shard, inside a bucket lock
 *    610-630  client and session state (client.h)
 * Functions that act on a whole client or owner visit its files one at a
 * time (find a file under the shard lock, drop it, lock the file's bucket)
 * until none is left. A lock the client is granted meanwhile may or may not
 * be removed, and one granted after they return stays (as long as the
 * client keeps adding locks, they keep removing them): the caller stops the
 * client's requests first (lease expired, DESTROY_CLIENTID) when it needs
 * everything gone.
 *
 * All functions return 0 or -errno unless stated otherwise.
 */
#ifndef JNFS_NFS4_BRLOCK_H
#define JNFS_NFS4_BRLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"

/* A length of all ones: to the end of the file. */
#define BRL_EOF UINT64_MAX

enum brl_type {
	BRL_READ = 1,
	BRL_WRITE = 2,
};

struct brl_owner {
	uint64_t client; /* client id */
	uint64_t owner;	 /* the lock owner's key within the server */
};

struct brl_config {
	size_t max_locks;	     /* lock records in all; default 1,048,576 */
	size_t max_locks_per_client; /* per client; default 65,536 */
	unsigned buckets;	     /* file hash buckets, a power of two; 1024 */
};

void brl_config_default(struct brl_config *c);

/* A lock as the protocol shows it (LOCK4denied, LOCKT). length is BRL_EOF
 * for a lock to the end of the file; a lock from 0 to byte 2^64 - 2 also
 * has a length of all ones and reads the same (it can only be left by an
 * unlock of the last byte alone). */
struct brl_info {
	uint64_t offset;
	uint64_t length;
	enum brl_type type;
	struct brl_owner owner;
};

struct brl_table;

/* The config is copied. A bucket count that is not a power of two is a
 * caller bug and panics. */
struct brl_table *brl_create(const struct brl_config *cfg);
/* Frees the table and every lock still in it. No other thread may use it. */
void brl_destroy(struct brl_table *t);

/*
 * LOCK: lock [offset, offset + length) for owner o with type.
 * 0: granted (and merged, split, upgraded or downgraded as above).
 * -EAGAIN: another owner's lock conflicts; *denied (if not NULL) describes
 *          the first one in offset order.
 * -ENOLCK: granting would pass a bound (see above); nothing changed.
 * -EINVAL: length 0, offset + length past 2^64 - 1, or a bad type.
 */
int brl_lock(struct brl_table *t, uint64_t file, const struct brl_owner *o, enum brl_type type,
	     uint64_t offset, uint64_t length, struct brl_info *denied);

/* LOCKT: would brl_lock() conflict? 0 (no), -EAGAIN with *denied, or
 * -EINVAL as brl_lock(). Changes nothing. */
int brl_test(struct brl_table *t, uint64_t file, const struct brl_owner *o, enum brl_type type,
	     uint64_t offset, uint64_t length, struct brl_info *denied);

/* LOCKU: unlock the owner's bytes in the range. 0 (also when nothing was
 * locked there), -ENOLCK (the unlock would split a lock and the client is at
 * a bound; nothing changed) or -EINVAL as brl_lock(). */
int brl_unlock(struct brl_table *t, uint64_t file, const struct brl_owner *o, uint64_t offset,
	       uint64_t length);

/* Remove every lock of owner o on file / of o on every file / of every owner
 * of client. They return how many lock records went. */
size_t brl_release_file_owner(struct brl_table *t, uint64_t file, const struct brl_owner *o);
size_t brl_release_owner(struct brl_table *t, const struct brl_owner *o);
size_t brl_release_client(struct brl_table *t, uint64_t client);

/* Does owner o hold any lock on file (FREE_STATEID of a lock stateid) / on
 * any file (RELEASE_LOCKOWNER)? */
bool brl_holds_file(struct brl_table *t, uint64_t file, const struct brl_owner *o);
bool brl_holds_any(struct brl_table *t, const struct brl_owner *o);

/* Copy up to max of file's locks in offset order into out; returns how many
 * the file has (which may be more than max). */
size_t brl_list(struct brl_table *t, uint64_t file, struct brl_info *out, size_t max);

/* Lock records charged to client. */
size_t brl_client_locks(struct brl_table *t, uint64_t client);

struct brl_counts {
	size_t locks;	  /* lock records */
	size_t files;	  /* files with locks */
	size_t holders;	  /* (owner, file) pairs with locks */
	size_t clients;	  /* clients with locks */
	uint64_t granted; /* brl_lock() calls that returned 0 */
	uint64_t denied;  /* brl_lock() calls refused for a conflict */
	uint64_t refused; /* brl_lock()/brl_unlock() calls refused by a bound */
};

void brl_counts(struct brl_table *t, struct brl_counts *c);
/* Emit the counts as "nfs4.brl.*" lines. */
void brl_stats(struct brl_table *t, const struct stat_sink *sink);

/* Verify invariants 1-4 over the whole table; -EUCLEAN (after a message
 * naming the first violation) or 0. Only while no other thread changes the
 * table. */
int brl_check(struct brl_table *t);

#endif
