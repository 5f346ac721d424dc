/*
 * stid.h - the op layer's one path from a wire stateid to its state, the
 * header every stateid payload starts with, the (owner, file) tables the
 * payloads live in, and the courteous server's retry.
 *
 * Design note.
 *
 * A stateid on the wire (stateid4) names state of the compound's client
 * (state/stateid.h has the table and its numbered invariants). Every op
 * that takes one goes through nfs4_stid_of(): the special value "current"
 * becomes the compound's current stateid (RFC 8881 §16.2.3.1.2); the other
 * special stateids are BAD_STATEID where state is wanted (an I/O stateid
 * check treats anonymous and bypass itself: nfs4_check_io_stateid); the
 * entry is looked up by type with the seqid rule of its type (below); and
 * its payload must be state of the current filehandle's file: a stateid of
 * another file is BAD_STATEID (RFC 8881 §8.2.4, §18.43.3).
 *
 * Seqids: open and lock stateids keep the strict rule of nfs4_stid_find()
 * (older is OLD_STATEID). A layout stateid with a seqid older than its
 * entry's is still that layout: the client cannot know the seqid a
 * LAYOUTGET, LAYOUTRETURN or recall gave the layout before their reply or
 * call reaches it (the Linux client sends LAYOUTCOMMIT with the seqid it
 * held when a recall came, and again, unchanged, on OLD_STATEID, and
 * LAYOUTGETs in parallel with one seqid).
 *
 * Payloads. An open (op_open.c), a lock stateid (op_lock.c) and a layout
 * (layout.c) start with struct nfs4_payload: their stateid, the state's
 * client, owner and file. The payload lives in the (owner, file) table of
 * its kind, found by (client, owner, file); a find-or-make under the
 * bucket's lock never makes two stateids of one key (the layouts' table
 * has one lock for all its buckets: it also guards their recall state,
 * layout.c), and a payload found
 * there is referenced with nfs4_stid_tryget() only (stateid.h invariant 6):
 * one whose entry is going answers DELAY, and the client comes back once
 * its release has unlinked it.
 *
 * Lock order: a table's bucket lock is the class its owner gives
 * (nfs4.opens 540, nfs4.locks 545, nfs4.layouts 535: base/lock_classes.h);
 * a new stateid is made under it (the state core's 610-630); no stateid's
 * lock (550) is held when it is taken, though made() may take one under
 * it (a lock stateid joins its open's list).
 */
#ifndef JNFS_NFS4_STID_H
#define JNFS_NFS4_STID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lock.h"
#include "nfs4/state/brlock.h"
#include "nfs4/state/share.h"
#include "nfs4/state/stateid.h"
#include "xdr/nfs4.h"

struct nfs4_compound;

/* The header every stateid payload starts with (open, lock, layout). */
struct nfs4_payload {
	struct nfs4_payload *pl_next; /* [bucket lock] in its table's bucket */
	struct nfs4_stid *pl_stid;    /* its stateid */
	uint64_t pl_file;	      /* the inode number */
	/* the key's owner, as the share and byte-range lock tables know it */
	union {
		struct {
			uint64_t pl_client; /* the clientid */
			uint64_t pl_owner;  /* the owner's key; a layout's: 0 */
		};
		struct share_owner pl_share; /* an open's */
		struct brl_owner pl_brl;     /* a lock stateid's */
	};
};
_Static_assert(offsetof(struct share_owner, owner) == 8 && sizeof(struct share_owner) == 16 &&
		       offsetof(struct brl_owner, owner) == 8 && sizeof(struct brl_owner) == 16,
	       "an owner is (client, owner), as pl_client and pl_owner");

/* ---- wire stateids ---- */

void nfs4_sid_from_wire(const struct stateid4 *w, struct nfs4_stateid *sid);
void nfs4_sid_to_wire(const struct nfs4_stateid *sid, struct stateid4 *w);
/* The stateid an op names: "current" becomes the compound's current
 * stateid (BAD_STATEID when it has none); any other value is itself. */
uint32_t nfs4_sid_resolve(struct nfs4_compound *c, const struct stateid4 *w,
			  struct nfs4_stateid *sid);
void nfs4_set_cur_sid(struct nfs4_compound *c, const struct nfs4_stateid *sid);

/*
 * The entry of the compound's client that w names, of one of types (a
 * mask, stateid.h), referenced in *out: nfs4_stid_find()'s answers, with
 * the layout seqid rule (above) when types has NFS4_STID_LAYOUT, and
 * BAD_STATEID for a special stateid. Its file is not checked.
 */
uint32_t nfs4_stid_lookup(struct nfs4_compound *c, const struct stateid4 *w, unsigned types,
			  struct nfs4_stid **out);
/* The same, and the state is of the current filehandle's file
 * (BAD_STATEID otherwise, and no reference is kept). */
uint32_t nfs4_stid_of(struct nfs4_compound *c, const struct stateid4 *w, unsigned types,
		      struct nfs4_stid **out);

/* ---- the (owner, file) tables ---- */

struct nfs4_pltable;

/* How a table makes a payload of its kind, in the order called, under
 * the bucket's lock (nfs4_pltable_get). */
struct nfs4_payload_ops {
	unsigned type; /* of its stateids: NFS4_STID_* */
	size_t size;   /* of the payload, which starts with its header */
	/* fill in a new payload (zeroed, its header the key) */
	void (*init)(struct nfs4_payload *pl, void *arg);
	/* no stateid could be had: undo init (NULL: nothing to undo); the
	 * table frees the payload */
	void (*fini)(struct nfs4_payload *pl);
	/* it has its stateid, and enters the table (NULL: nothing to do) */
	void (*made)(struct nfs4_payload *pl, void *arg);
};

/* buckets a power of two; a lock of class cls (the owner's) a bucket, or
 * (cls NULL) the owner's one lock for all of them. */
struct nfs4_pltable *nfs4_pltable_create(unsigned buckets, struct lock_class *cls,
					 struct mutex *one, const struct nfs4_payload_ops *ops);
/* Every payload was released before (nfs4_state_destroy). */
void nfs4_pltable_destroy(struct nfs4_pltable *t);

/*
 * The payload of key's (client, owner, file) with a reference to its
 * stateid in *out: found (*fresh false), or made (*fresh true) with a new
 * stateid of clp (the ops, arg theirs). DELAY for one whose stateid is
 * going (invariant 6 of stateid.h); nfs4_stid_alloc()'s answers. Call
 * with no stateid's lock held.
 */
uint32_t nfs4_pltable_get(struct nfs4_pltable *t, struct nfs4_client *clp,
			  const struct nfs4_payload *key, void *arg, struct nfs4_payload **out,
			  bool *fresh);
/* The payload leaves its table (its release: no state lock held). */
void nfs4_pltable_remove(struct nfs4_pltable *t, struct nfs4_payload *pl);

/* Under the bucket's lock (a table of one lock: that lock): the payload
 * of key's (client, owner, file) or NULL, no reference taken; a payload
 * out of its table now (its release finds it gone); and, to walk every
 * payload, the one after pl (NULL: the first), NULL at the end. The walk
 * is for a table of one lock only, and a payload unlinked during it ends
 * the walk's step (start again from NULL). */
struct nfs4_payload *nfs4_pltable_find_locked(struct nfs4_pltable *t,
					      const struct nfs4_payload *key);
void nfs4_pltable_unlink_locked(struct nfs4_pltable *t, struct nfs4_payload *pl);
struct nfs4_payload *nfs4_pltable_next_locked(struct nfs4_pltable *t, struct nfs4_payload *pl);

/* ---- the courteous server ---- */

/*
 * After one try of an OPEN's share reservation or a LOCK, with no state
 * lock held: *st is denied (SHARE_DENIED, DENIED) because of a lock or
 * open of conflict_client, and that is a courtesy client (its lease ran
 * out, its state kept until someone conflicts) other than own_client: it
 * is expired (a change the reply waits for) and true says try again. The
 * fourth such expiry in a row makes *st DELAY (more courtesy clients may
 * be in the way; denied would say a live client's state is): false.
 * tries counts, from 0.
 */
bool nfs4_courtesy_retry(struct nfs4_compound *c, uint32_t *st, uint32_t denied,
			 uint64_t conflict_client, uint64_t own_client, unsigned *tries);

#endif
