/*
 * op_lock.c - LOCK, LOCKT, LOCKU and RELEASE_LOCKOWNER's 4.1 successor
 * FREE_STATEID's lock part (RFC 8881 §18.10-§18.12): byte-range locks with
 * POSIX semantics on the table of brlock.h, and their stateids.
 *
 * Design note.
 *
 * A lock stateid (struct nfs4_lockst, the payload of a NFS4_STID_LOCK
 * stateid) is one lock owner's state on one file, made by the first LOCK of
 * that owner through an open stateid (open_to_lock_owner4) and used by the
 * later ones (exist_lock_owner4), by LOCKU and as an I/O stateid. It keeps
 * its open alive (a reference to the open's stateid) and counts itself in
 * the open, so that CLOSE can tell whether locks are still held
 * (LOCKS_HELD). It goes when the client frees it (FREE_STATEID with no lock
 * left), when its open is closed... no: CLOSE is refused while it holds
 * locks, and when its client goes (its locks are released then).
 *
 * Lock owners are keyed like open owners (a keyed hash of the session's
 * clientid and the owner bytes; the clientid field of a lock_owner4 in
 * LOCK and LOCKT is ignored). A conflict answer (LOCK4denied) names the
 * holder by its clientid and owner bytes, which the lock owner registry
 * keeps while the owner has a lock stateid.
 *
 * No server thread waits for a lock: a conflicting LOCK (of either the
 * blocking or the non-blocking type) is DENIED at once and the client
 * polls (RFC 8881 §9.6). A conflict with a courtesy client's lock expires
 * that client (the courteous server) and the LOCK is tried again.
 *
 * Lock order: the lock state table's bucket mutex (nfs4.locks, 545) is
 * taken before the state core's locks and never with a stateid lock held;
 * the stateid lock (550, open stateid first, then lock stateid) is held
 * across the byte-range table (570).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/compiler.h"
#include "base/lock.h"
#include "base/mem.h"
#include "nfs4/nfs4_priv.h"
#include "nfs4/state/grace.h"

#define LOCK_BUCKETS 1024

static struct lock_class locks_class = LOCK_CLASS(NFS4_LOCKS);

struct lockowner {
	struct lockowner *next;
	uint64_t key, clientid;
	unsigned refs; /* lock stateids of this owner */
	uint32_t len;
	uint8_t bytes[];
};

/* A lock stateid's payload, keyed by its lock owner (pl.pl_brl) and file. */
struct nfs4_lockst {
	struct nfs4_payload pl;	   /* first (stid.h) */
	struct nfs4_lockst *onext; /* in its open's list (open->lockl) */
	struct nfs4_open *open;
	struct nfs4_stid *open_stid; /* a reference: the open lives while we do */
};

/* The lock stateids (an (owner, file) table, stid.h) and the lock owner
 * registry, whose buckets have locks of the same class: none is held
 * with another. */
struct nfs4_lock_table {
	struct nfs4_pltable *lockst;
	struct {
		struct mutex lock;
		struct lockowner *owners;
	} b[LOCK_BUCKETS];
};

/* A new lock stateid of an open (arg: the open's stateid, referenced),
 * under the lock table's bucket lock (nfs4_pltable_get). */
static void lockst_init(struct nfs4_payload *pl, void *arg)
{
	container_of(pl, struct nfs4_lockst, pl)->open = nfs4_stid_payload(arg);
}

/* It has its stateid: it joins its open's list (the open's stateid lock
 * under the bucket's). */
static void lockst_made(struct nfs4_payload *pl, void *arg)
{
	struct nfs4_lockst *ls = container_of(pl, struct nfs4_lockst, pl);
	struct nfs4_stid *open_stid = arg;
	nfs4_stid_get(open_stid);
	ls->open_stid = open_stid;
	nfs4_stid_lock(open_stid);
	ls->onext = ls->open->lockl;
	ls->open->lockl = ls;
	nfs4_stid_unlock(open_stid);
}

_Static_assert(offsetof(struct nfs4_lockst, pl) == 0, "the header first");
static const struct nfs4_payload_ops lockst_ops = {
	.type = NFS4_STID_LOCK,
	.size = sizeof(struct nfs4_lockst),
	.init = lockst_init,
	.made = lockst_made,
};

void nfs4_locks_init(struct nfs4_server *s)
{
	s->locks = xcalloc(1, sizeof(*s->locks));
	s->locks->lockst = nfs4_pltable_create(LOCK_BUCKETS, &locks_class, NULL, &lockst_ops);
	for (unsigned i = 0; i < LOCK_BUCKETS; i++)
		mutex_init(&s->locks->b[i].lock, &locks_class);
}

void nfs4_locks_destroy(struct nfs4_server *s)
{
	nfs4_pltable_destroy(s->locks->lockst);
	for (unsigned i = 0; i < LOCK_BUCKETS; i++)
		mutex_destroy(&s->locks->b[i].lock);
	free(s->locks);
	s->locks = NULL;
}

struct nfs4_open *nfs4_lock_open(struct nfs4_lockst *ls)
{
	return ls->open;
}

bool nfs4_open_has_locks(struct nfs4_server *s, struct nfs4_open *op)
{
	assert_stid_locked(op->pl.pl_stid);
	for (struct nfs4_lockst *ls = op->lockl; ls; ls = ls->onext)
		if (brl_holds_file(s->brl, ls->pl.pl_file, &ls->pl.pl_brl))
			return true;
	return false;
}

size_t nfs4_open_take_locks(struct nfs4_open *op, struct nfs4_stid ***out)
{
	assert_stid_locked(op->pl.pl_stid);
	size_t n = 0;
	for (struct nfs4_lockst *ls = op->lockl; ls; ls = ls->onext)
		n++;
	*out = n ? xmalloc(n * sizeof(**out)) : NULL;
	n = 0;
	for (struct nfs4_lockst *ls = op->lockl; ls; ls = ls->onext)
		if (nfs4_stid_tryget(ls->pl.pl_stid)) /* not one already going */
			(*out)[n++] = ls->pl.pl_stid;
	return n;
}

void nfs4_lockst_end_all(struct nfs4_stid **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		nfs4_stid_unhash(v[i]);
		nfs4_stid_put(v[i]);
	}
	free(v);
}

bool nfs4_lockst_has_locks(struct nfs4_server *s, struct nfs4_lockst *ls)
{
	return brl_holds_file(s->brl, ls->pl.pl_file, &ls->pl.pl_brl);
}

static unsigned obucket(uint64_t owner)
{
	return (unsigned)((owner >> 40) % LOCK_BUCKETS);
}

static void owner_ref(struct nfs4_lock_table *t, uint64_t key, uint64_t clientid,
		      const uint8_t *bytes, uint32_t len)
{
	unsigned b = obucket(key);
	mutex_lock(&t->b[b].lock);
	struct lockowner *lo;
	for (lo = t->b[b].owners; lo; lo = lo->next)
		if (lo->key == key && lo->clientid == clientid)
			break;
	if (!lo) {
		lo = xmalloc(sizeof(*lo) + len);
		lo->key = key;
		lo->clientid = clientid;
		lo->refs = 0;
		lo->len = len;
		memcpy(lo->bytes, bytes, len);
		lo->next = t->b[b].owners;
		t->b[b].owners = lo;
	}
	lo->refs++;
	mutex_unlock(&t->b[b].lock);
}

static void owner_unref(struct nfs4_lock_table *t, uint64_t key, uint64_t clientid)
{
	unsigned b = obucket(key);
	mutex_lock(&t->b[b].lock);
	for (struct lockowner **pp = &t->b[b].owners; *pp; pp = &(*pp)->next) {
		struct lockowner *lo = *pp;
		if (lo->key == key && lo->clientid == clientid) {
			if (--lo->refs == 0) {
				*pp = lo->next;
				free(lo);
			}
			break;
		}
	}
	mutex_unlock(&t->b[b].lock);
}

/* LOCK4denied for a conflicting lock: its owner's bytes from the registry. */
static void denied_of(struct nfs4_compound *c, const struct brl_info *in, struct LOCK4denied *d)
{
	struct nfs4_lock_table *t = c->s->locks;
	d->offset = in->offset;
	d->length = in->length;
	d->locktype = in->type == BRL_WRITE ? WRITE_LT : READ_LT;
	d->owner.clientid = in->owner.client;
	d->owner.owner.len = 0;
	unsigned b = obucket(in->owner.owner);
	mutex_lock(&t->b[b].lock);
	for (struct lockowner *lo = t->b[b].owners; lo; lo = lo->next) {
		if (lo->key == in->owner.owner && lo->clientid == in->owner.client) {
			uint8_t *copy = nfs4_res_alloc(c, lo->len ? lo->len : 1);
			if (copy) {
				memcpy(copy, lo->bytes, lo->len);
				d->owner.owner.len = lo->len;
				d->owner.owner.val = copy;
			}
			break;
		}
	}
	mutex_unlock(&t->b[b].lock);
}

/* The payload goes (stid_ops.release): its locks, its owner, its open. */
void nfs4_lockst_release(struct nfs4_server *s, struct nfs4_lockst *ls)
{
	nfs4_pltable_remove(s->locks->lockst, &ls->pl);
	brl_release_file_owner(s->brl, ls->pl.pl_file, &ls->pl.pl_brl);
	owner_unref(s->locks, ls->pl.pl_owner, ls->pl.pl_client);
	nfs4_stid_lock(ls->open_stid);
	for (struct nfs4_lockst **pp = &ls->open->lockl; *pp; pp = &(*pp)->onext) {
		if (*pp == ls) {
			*pp = ls->onext;
			break;
		}
	}
	nfs4_stid_unlock(ls->open_stid);
	nfs4_stid_put(ls->open_stid);
	free(ls);
}

static enum brl_type brl_type_of(nfs_lock_type4 t)
{
	return t == WRITE_LT || t == WRITEW_LT ? BRL_WRITE : BRL_READ;
}

/* RFC 8881 §18.10.3: a length of 0 is INVAL; one past the end of the
 * offset space is INVAL unless it is "to the end" (all ones). */
static uint32_t range_check(uint64_t off, uint64_t len)
{
	if (len == 0)
		return NFS4ERR_INVAL;
	if (len != BRL_EOF && off > UINT64_MAX - len)
		return NFS4ERR_INVAL;
	return NFS4_OK;
}

/* The lock stateid of (owner, the open's file), found or made. */
static uint32_t lockst_get(struct nfs4_compound *c, struct nfs4_stid *open_stid,
			   const lock_owner4 *lo, struct nfs4_stid **out, bool *fresh)
{
	struct nfs4_open *op = nfs4_stid_payload(open_stid);
	struct nfs4_payload key = {
		.pl_file = op->pl.pl_file,
		.pl_client = nfs4_client_id(c->clp),
		.pl_owner =
			nfs4_owner_key(c->s, nfs4_client_id(c->clp), lo->owner.val, lo->owner.len) ^
			1,
	};
	struct nfs4_payload *pl;
	uint32_t st = nfs4_pltable_get(c->s->locks->lockst, c->clp, &key, open_stid, &pl, fresh);
	if (!st && *fresh)
		owner_ref(c->s->locks, key.pl_owner, key.pl_client, lo->owner.val, lo->owner.len);
	*out = st ? NULL : pl->pl_stid;
	return st;
}

/* One try at the lock, under the stateids' locks: NFS4_OK, DENIED with
 * *conflict, OPENMODE, or INVAL. */
static uint32_t try_lock(struct nfs4_compound *c, struct nfs4_lockst *ls, enum brl_type type,
			 uint64_t off, uint64_t len, struct brl_info *conflict)
{
	/* a write lock needs the file open for writing (RFC 8881 §18.10.3) */
	unsigned access = 0;
	share_get(c->s->shares, ls->pl.pl_file, &ls->open->pl.pl_share, &access, NULL);
	if (!(access & (type == BRL_WRITE ? SHARE_ACCESS_WRITE : SHARE_ACCESS_READ)))
		return NFS4ERR_OPENMODE;
	int err = brl_lock(c->s->brl, ls->pl.pl_file, &ls->pl.pl_brl, type, off, len, conflict);
	if (!err)
		return NFS4_OK;
	if (err == -ENOLCK) {
		/* a bound: DENIED (possibly temporary: the client tries again),
		 * naming no conflicting lock */
		memset(conflict, 0, sizeof(*conflict));
		conflict->type = type;
		conflict->owner = ls->pl.pl_brl;
		return NFS4ERR_DENIED;
	}
	return err == -EAGAIN ? NFS4ERR_DENIED : NFS4ERR_INVAL;
}

uint32_t nfs4_op_lock(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct LOCK4args *la = &a->oplock;
	struct nfs4_stid *open_stid = NULL, *sp = NULL;
	bool fresh = false;
	uint32_t st;
	if (la->locktype < READ_LT || la->locktype > WRITEW_LT)
		return r->oplock.status = NFS4ERR_INVAL;
	if ((st = range_check(la->offset, la->length)))
		return r->oplock.status = st;
	st = la->reclaim ? nfs4_grace_check_reclaim(c->s->state, c->clp)
			 : nfs4_grace_check_new(c->s->state);
	if (st)
		return r->oplock.status = st;
	if (la->locker.new_lock_owner) {
		/* the lock owner's clientid field is ignored: its client is the
		 * session's (RFC 8881 §18.10.3, as the Linux server does) */
		const struct open_to_lock_owner4 *oo = &la->locker.open_owner;
		if ((st = nfs4_stid_of(c, &oo->open_stateid, NFS4_STID_OPEN, &open_stid)))
			return r->oplock.status = st;
		st = lockst_get(c, open_stid, &oo->lock_owner, &sp, &fresh);
		nfs4_stid_put(open_stid);
		if (st)
			return r->oplock.status = st;
	} else {
		if ((st = nfs4_stid_of(c, &la->locker.lock_owner.lock_stateid, NFS4_STID_LOCK, &sp)))
			return r->oplock.status = st;
	}
	struct nfs4_lockst *ls = nfs4_stid_payload(sp);
	enum brl_type type = brl_type_of(la->locktype);
	struct nfs4_stateid sid;
	struct brl_info conflict = {0};
	unsigned tries = 0;
	/* the courteous server: a courtesy client's lock goes when it is in
	 * the way */
	do {
		nfs4_stid_lock(ls->open_stid);
		nfs4_stid_lock(sp);
		st = try_lock(c, ls, type, la->offset, la->length, &conflict);
		if (!st) {
			if (fresh)
				nfs4_stid_value(sp, &sid);
			else
				nfs4_stid_bump(sp, &sid);
		}
		nfs4_stid_unlock(sp);
		nfs4_stid_unlock(ls->open_stid);
	} while (nfs4_courtesy_retry(c, &st, NFS4ERR_DENIED, conflict.owner.client,
				     ls->pl.pl_client, &tries));
	if (st == NFS4ERR_DENIED)
		denied_of(c, &conflict, &r->oplock.denied);
	if (st && fresh)
		nfs4_stid_unhash(sp); /* nothing was locked with it */
	nfs4_stid_put(sp);
	r->oplock.status = st;
	if (st)
		return st;
	nfs4_sid_to_wire(&sid, &r->oplock.resok4.lock_stateid);
	nfs4_set_cur_sid(c, &sid);
	return NFS4_OK;
}

uint32_t nfs4_op_lockt(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct LOCKT4args *la = &a->oplockt;
	uint32_t st;
	struct fs_attr at;
	if (la->locktype < READ_LT || la->locktype > WRITEW_LT)
		return r->oplockt.status = NFS4ERR_INVAL;
	if ((st = range_check(la->offset, la->length)))
		return r->oplockt.status = st;
	if (c->cfh.kind != NFS4_FH_FS)
		return r->oplockt.status = NFS4ERR_ISDIR;
	int err = fs_getattr(c->cfh.ip, &at);
	if (err)
		return r->oplockt.status = nfs4_status(err);
	if (!S_ISREG(at.mode))
		return r->oplockt.status = S_ISDIR(at.mode) ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
	struct brl_owner owner = {
		.client = nfs4_client_id(c->clp),
		/* the clientid field "MUST be ignored" (RFC 8881 §18.11.3) */
		.owner = nfs4_owner_key(c->s, nfs4_client_id(c->clp), la->owner.owner.val,
					la->owner.owner.len) ^
			 1,
	};
	struct brl_info d;
	err = brl_test(c->s->brl, fs_ino(c->cfh.ip), &owner, brl_type_of(la->locktype), la->offset,
		       la->length, &d);
	if (err == -EAGAIN) {
		denied_of(c, &d, &r->oplockt.denied);
		return r->oplockt.status = NFS4ERR_DENIED;
	}
	return r->oplockt.status = err ? NFS4ERR_INVAL : NFS4_OK;
}

uint32_t nfs4_op_locku(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct LOCKU4args *la = &a->oplocku;
	struct nfs4_stid *sp;
	uint32_t st;
	if (la->locktype < READ_LT || la->locktype > WRITEW_LT)
		return NFS4ERR_INVAL;
	if ((st = range_check(la->offset, la->length)))
		return st;
	if ((st = nfs4_stid_of(c, &la->lock_stateid, NFS4_STID_LOCK, &sp)))
		return st;
	struct nfs4_lockst *ls = nfs4_stid_payload(sp);
	struct nfs4_stateid sid;
	nfs4_stid_lock(sp);
	int err = brl_unlock(c->s->brl, ls->pl.pl_file, &ls->pl.pl_brl, la->offset, la->length);
	if (!err)
		nfs4_stid_bump(sp, &sid);
	nfs4_stid_unlock(sp);
	nfs4_stid_put(sp);
	if (err)
		return err == -ENOLCK ? NFS4ERR_DELAY : NFS4ERR_INVAL;
	nfs4_sid_to_wire(&sid, &r->oplocku.lock_stateid);
	nfs4_set_cur_sid(c, &sid);
	return NFS4_OK;
}
