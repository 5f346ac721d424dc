/*
 * share.h - OPEN share reservations for NFSv4.1: OPEN's share_access and
 * share_deny, OPEN_DOWNGRADE and CLOSE (RFC 8881 sections 9.7, 18.16, 18.18).
 *
 * Design note.
 *
 * The table keeps, per file (an opaque 64-bit key chosen by the caller), one
 * open per open owner (an opaque 64-bit key plus its client id): in NFSv4.1
 * an open owner has one open stateid per file, and a second OPEN by the
 * same owner upgrades it. An open has the access bits (READ, WRITE, BOTH)
 * and deny bits (NONE, READ, WRITE, BOTH) in force, and the set of
 * (access, deny) pairs the owner's OPENs asked for since, which is what
 * OPEN_DOWNGRADE may go back to. The table knows nothing of stateids or
 * seqids; the caller maps them to (file, owner) and maps the results to
 * NFS status codes (docs/nfs4-locks.md).
 *
 * Rules:
 *  - An OPEN conflicts with another owner's open on the same file when the
 *    new access meets the other's deny bits, or the new deny bits meet the
 *    other's access. Owners of one client conflict like any others; an
 *    owner never conflicts with itself. A conflicting OPEN changes nothing
 *    and reports the first conflicting open (owner, client, its bits), so
 *    a courteous server can tell an expired client's open from a live one's.
 *  - An OPEN by an owner that has the file open already asks for the union
 *    of the old and new bits, checked the same way (an upgrade); a refused
 *    upgrade leaves the old open as it was.
 *  - OPEN_DOWNGRADE to (access, deny) is allowed when some of the owner's
 *    OPENs on the file asked for pairs whose union is exactly (access,
 *    deny) (RFC 8881 section 18.18.3: each a union of the bits of "some
 *    subset of the OPENs in effect"; taken pairwise here, the strict
 *    reading). Otherwise -EINVAL (NFS4ERR_INVAL). It never conflicts. The
 *    pairs that are not within the new bits are forgotten: those OPENs are
 *    what the downgrade closed.
 *  - CLOSE removes the open.
 *  - share_undo() takes back one granted OPEN (an OPEN that failed after
 *    its reservation, when its truncation did): as if it had not been.
 *  - share_check() answers whether an I/O needing some access by an owner
 *    (or by a special stateid, which has none) is denied by another open.
 *
 * Bounds: every open is charged to its client (tally.h): at most
 * max_opens_per_client per client and max_opens in all; an OPEN that would
 * need one more is refused with -ENOLCK and changes nothing. Upgrades,
 * downgrades and closes never need a record.
 *
 * Data structures: files hash into buckets, each with a mutex and a hash
 * map of its files; a file lists its opens; each open is also listed with
 * its client (tally.h), for share_release_client/owner.
 *
 * Invariants (share_check_all() verifies them):
 *  1. An open's access is 1-3 and its deny 0-3; its pair set is non-empty,
 *     every pair in it is within (access, deny), and their union is
 *     exactly (access, deny).
 *  2. No two opens of a file conflict with each other, and an owner has at
 *     most one open per file.
 *  3. A file exists exactly while it has opens; the opens charged to a
 *     client equal its opens listed with it.
 *
 * Threads and lock order: any thread may call any function. The bucket lock
 * is "nfs4.share.bucket" (rank 575), the client shard "nfs4.tally" (580),
 * inside it; brlock.h lists the NFSv4 band (500-699). Callers may hold
 * locks ranked below 570. Nothing here calls out while holding a lock.
 *
 * All functions return 0 or -errno unless stated otherwise.
 */
#ifndef JNFS_NFS4_SHARE_H
#define JNFS_NFS4_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"

/* The bit values of OPEN4_SHARE_ACCESS_* and OPEN4_SHARE_DENY_* (without the
 * WANT bits, which the caller strips). */
#define SHARE_ACCESS_READ  1u
#define SHARE_ACCESS_WRITE 2u
#define SHARE_ACCESS_BOTH  3u
#define SHARE_DENY_NONE	   0u
#define SHARE_DENY_READ	   1u
#define SHARE_DENY_WRITE   2u
#define SHARE_DENY_BOTH	   3u

struct share_owner {
	uint64_t client; /* client id */
	uint64_t owner;	 /* the open owner's key within the server */
};

struct share_config {
	size_t max_opens;	     /* opens in all; default 1,048,576 */
	size_t max_opens_per_client; /* default 65,536 */
	unsigned buckets;	     /* file hash buckets, a power of two; 1024 */
};

void share_config_default(struct share_config *c);

/* An open as a conflict answer shows it. */
struct share_info {
	struct share_owner owner;
	unsigned access;
	unsigned deny;
};

struct share_table;

/* The config is copied; a bucket count that is not a power of two panics. */
struct share_table *share_create(const struct share_config *cfg);
/* Frees the table and every open still in it. No other thread may use it. */
void share_destroy(struct share_table *t);

/*
 * OPEN by owner o of file with access (1-3) and deny (0-3), or an upgrade
 * of o's open to the union. 0: granted. -EAGAIN: another open conflicts,
 * the first one in *conflict (if not NULL). -ENOLCK: a new open would pass a bound. -EINVAL:
 * bits out of range. Nothing changes unless it returns 0.
 */
int share_open(struct share_table *t, uint64_t file, const struct share_owner *o, unsigned access,
	       unsigned deny, struct share_info *conflict);

/* What share_undo() needs to take back one granted share_open_undoable(). */
struct share_undo {
	unsigned access, deny; /* the OPEN's bits */
	bool had_pair;	       /* o's open had asked for that pair before */
};

/* share_open(), noting in *undo (if not NULL) how to take it back. */
int share_open_undoable(struct share_table *t, uint64_t file, const struct share_owner *o,
			unsigned access, unsigned deny, struct share_info *conflict,
			struct share_undo *undo);

/*
 * Take back a granted share_open_undoable() of o, for an OPEN that failed
 * after it (its truncation; op_open.c): the OPEN's pair is forgotten
 * unless an earlier OPEN asked for it too, and the open's bits go back to
 * the union of the pairs left (the bits before, unless o's other OPENs
 * added some meanwhile); an open left with no pair is removed. It never
 * conflicts (the bits only shrink). 0, or -ENOENT (o's open has gone).
 */
int share_undo(struct share_table *t, uint64_t file, const struct share_owner *o,
	       const struct share_undo *u);

/* OPEN_DOWNGRADE of o's open to (access, deny): 0, -EINVAL (bits out of
 * range, or not a union of pairs o opened with; nothing changed) or -ENOENT
 * (o has no open of file). */
int share_downgrade(struct share_table *t, uint64_t file, const struct share_owner *o,
		    unsigned access, unsigned deny);

/* CLOSE: 0 or -ENOENT. */
int share_close(struct share_table *t, uint64_t file, const struct share_owner *o);

/* o's open of file: 0 with its bits (either pointer may be NULL), or
 * -ENOENT. */
int share_get(struct share_table *t, uint64_t file, const struct share_owner *o, unsigned *access,
	      unsigned *deny);

/* The union of the access bits of client's opens of file, 0 when it has
 * none (a pNFS layout stateid stands for them: layout.c). */
unsigned share_client_access(struct share_table *t, uint64_t file, uint64_t client);

/*
 * May an I/O that needs access (1-3) go ahead? 0, or -EAGAIN with the first
 * other open whose deny bits forbid it in *conflict (if not NULL). o is the owner whose
 * open the I/O uses (its own deny bits never stop it), or NULL for a
 * special stateid, which every deny bit stops. -EINVAL for bad bits.
 */
int share_check(struct share_table *t, uint64_t file, const struct share_owner *o, unsigned access,
		struct share_info *conflict);

/* Remove every open of client / of open owner o; return how many went. */
size_t share_release_client(struct share_table *t, uint64_t client);
size_t share_release_owner(struct share_table *t, const struct share_owner *o);

/* Does open owner o have any file open? */
bool share_holds_any(struct share_table *t, const struct share_owner *o);

/* Opens charged to client. */
size_t share_client_opens(struct share_table *t, uint64_t client);

struct share_counts {
	size_t opens;	  /* opens */
	size_t files;	  /* files with opens */
	size_t clients;	  /* clients with opens */
	uint64_t granted; /* share_open() calls that returned 0 */
	uint64_t denied;  /* ... refused for a conflict */
	uint64_t refused; /* ... refused by a bound */
};

void share_counts(struct share_table *t, struct share_counts *c);
/* Emit the counts as "nfs4.share.*" lines. */
void share_stats(struct share_table *t, const struct stat_sink *sink);

/* Verify invariants 1-3; -EUCLEAN (after a message) or 0. Only while no
 * other thread changes the table. */
int share_check_all(struct share_table *t);

#endif
