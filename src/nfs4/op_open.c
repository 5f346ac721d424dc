/*
 * op_open.c - OPEN, OPEN_DOWNGRADE and CLOSE (RFC 8881 §18.16, §18.18,
 * §18.2), the open table, and the stateid check of READ, WRITE and
 * SETATTR of the size.
 *
 * Design note.
 *
 * An open (struct nfs4_open) is one open owner's open of one file: in
 * NFSv4.1 an open owner has one open stateid per file, which a second OPEN
 * upgrades (the stateid's seqid moves). The open is the payload of its
 * stateid (stateid.h) and lives until that stateid is released: at CLOSE,
 * or when its client goes (lease expiry, DESTROY_CLIENTID), through the
 * release callback (nfs4_open_release). It holds a reference to its inode,
 * so an open file that is unlinked lives on until it is closed, as POSIX
 * wants, and its inode number names it for as long (the share and lock
 * tables key files by inode number).
 *
 * Open owners are known by a keyed hash of (clientid, owner bytes), the
 * clientid the session's (the owner's own clientid field is ignored): the
 * key is the server's, so a client cannot aim at another owner's value.
 *
 * The open table finds the open of (owner, file): find-or-create happens
 * under the bucket's mutex, so two OPENs of one owner and file never make
 * two stateids. The change of the share reservation and the stateid's
 * seqid then happen under the stateid's own lock (nfs4_stid_lock), as one
 * step, unless a truncation comes between them (below).
 *
 * Truncation (OPEN(CREATE, UNCHECKED4) of an existing file with size 0)
 * comes after the permission check and the share reservation, so that an
 * OPEN refused there (SHARE_DENIED) has cut nothing; it is an engine call,
 * made with no state lock held. If it fails, the OPEN takes back what it
 * did to the share state (a new open goes, an upgrade of an existing one
 * is undone: share_undo), and the seqid moves only after it succeeded, so
 * a failed OPEN leaves the stateid as it was; its run again after a layout
 * recall (nfs4_err_on) finds the open as before.
 *
 * Conflicts and the courteous server: an OPEN that another client's open
 * denies asks the state core to expire that client if it is only a
 * courtesy client (its lease ran out, its state kept until someone
 * conflicts), and tries again; a live client's open is SHARE_DENIED.
 *
 * Delegations are not handed out: OPEN answers OPEN_DELEGATE_NONE (or
 * NONE_EXT with WND4_NOT_WANTED... when the client asked for one), and
 * the claims that refer to a delegation answer as for a stateid never
 * issued.
 *
 * Lock order: the open table's bucket mutex (nfs4.opens, 540) is taken
 * before the state core's locks (nfs4_stid_alloc takes 610-630) and never
 * together with a stateid lock (550).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/compiler.h"
#include "base/lock.h"
#include "base/mem.h"
#include "base/siphash.h"
#include "nfs4/nfs4_priv.h"
#include "nfs4/state/grace.h"
#include "srv/vfs.h"

#define OPEN_BUCKETS 1024

static struct lock_class opens_class = LOCK_CLASS(NFS4_OPENS);

struct open_make {
	struct nfs4_server *s;
	struct fs_inode *ip;
};

/* A new open (nfs4_pltable_get, under the open table's bucket lock). */
static void open_init(struct nfs4_payload *pl, void *arg)
{
	struct open_make *m = arg;
	struct nfs4_open *op = container_of(pl, struct nfs4_open, pl);
	op->s = m->s;
	fs_igrab(m->ip);
	op->ip = m->ip;
}

static void open_fini(struct nfs4_payload *pl)
{
	fs_iput(container_of(pl, struct nfs4_open, pl)->ip);
}

/* the stateid's payload is the open: its header comes first */
_Static_assert(offsetof(struct nfs4_open, pl) == 0, "the header first");
static const struct nfs4_payload_ops open_ops = {
	.type = NFS4_STID_OPEN,
	.size = sizeof(struct nfs4_open),
	.init = open_init,
	.fini = open_fini,
};

void nfs4_opens_init(struct nfs4_server *s)
{
	s->opens = nfs4_pltable_create(OPEN_BUCKETS, &opens_class, NULL, &open_ops);
	memcpy(s->owner_key, s->srv->verf_key, sizeof(s->owner_key));
	s->owner_key[0] ^= 0x5a; /* not the readdir verifiers' key */
}

void nfs4_opens_destroy(struct nfs4_server *s)
{
	/* the state core released every open before (nfs4_state_destroy) */
	nfs4_pltable_destroy(s->opens);
	s->opens = NULL;
}

uint64_t nfs4_owner_key(const struct nfs4_server *s, uint64_t clientid, const void *owner,
			uint32_t len)
{
	/* siphash over clientid || owner, without a copy */
	uint64_t h = siphash24(s->owner_key, owner, len);
	uint64_t in[2] = {clientid, h};
	return siphash24(s->owner_key, in, sizeof(in));
}

/*
 * The open of (o, file), found or made (with a new stateid): NFS4_OK and a
 * reference to its stateid, or DELAY when the bounds are reached or one
 * going is in the way.
 */
static uint32_t open_get(struct nfs4_compound *c, const struct share_owner *o, struct fs_inode *ip,
			 struct nfs4_open **out, bool *fresh)
{
	struct nfs4_payload key = {.pl_file = fs_ino(ip), .pl_share = *o};
	struct open_make m = {.s = c->s, .ip = ip};
	struct nfs4_payload *pl;
	uint32_t st = nfs4_pltable_get(c->s->opens, c->clp, &key, &m, &pl, fresh);
	*out = st ? NULL : container_of(pl, struct nfs4_open, pl);
	return st;
}

/* The stateid's payload goes (stid_ops.release): no state lock is held. */
void nfs4_open_release(struct nfs4_server *s, struct nfs4_open *op)
{
	nfs4_pltable_remove(s->opens, &op->pl);
	share_close(s->shares, op->pl.pl_file, &op->pl.pl_share);
	fs_iput(op->ip);
	free(op);
}

/* ---- the stateid of an I/O ---- */

/* The access bits an open grants (share_get), 0 if it has gone. */
static unsigned open_access(struct nfs4_compound *c, struct nfs4_open *op)
{
	unsigned access = 0;
	share_get(c->s->shares, op->pl.pl_file, &op->pl.pl_share, &access, NULL);
	return access;
}

uint32_t nfs4_check_io_stateid(struct nfs4_compound *c, const struct stateid4 *w,
			       struct fs_inode *ip, bool write)
{
	struct nfs4_stateid sid;
	uint32_t st = nfs4_sid_resolve(c, w, &sid);
	if (st)
		return st;
	unsigned need = write ? SHARE_ACCESS_WRITE : SHARE_ACCESS_READ;
	switch (nfs4_stateid_special(&sid)) {
	case NFS4_STATEID_ANONYMOUS:
		/* no open: allowed unless another open denies it */
		return share_check(c->s->shares, fs_ino(ip), NULL, need, NULL) ? NFS4ERR_LOCKED
									       : NFS4_OK;
	case NFS4_STATEID_BYPASS:
		/* READ bypasses deny modes; WRITE may not use it */
		if (!write)
			return NFS4_OK;
		return share_check(c->s->shares, fs_ino(ip), NULL, need, NULL) ? NFS4ERR_LOCKED
									       : NFS4_OK;
	case NFS4_STATEID_CURRENT:
	case NFS4_STATEID_INVALID:
		return NFS4ERR_BAD_STATEID;
	case NFS4_STATEID_NORMAL:
		break;
	}
	if (!c->clp)
		return NFS4ERR_BAD_STATEID;
	struct nfs4_stid *sp;
	if ((st = nfs4_stid_lookup(c, w, NFS4_STID_OPEN | NFS4_STID_LOCK, &sp)))
		return st;
	const struct nfs4_payload *pl = nfs4_stid_payload(sp);
	if (pl->pl_file != fs_ino(ip)) {
		st = NFS4ERR_BAD_STATEID; /* a stateid of another file */
	} else {
		struct nfs4_open *op = nfs4_stid_type(sp) == NFS4_STID_OPEN
					       ? nfs4_stid_payload(sp)
					       : nfs4_lock_open(nfs4_stid_payload(sp));
		if (!(open_access(c, op) & need))
			st = NFS4ERR_OPENMODE;
	}
	nfs4_stid_put(sp);
	return st;
}

/* ---- OPEN ---- */

/* The object an OPEN opens must be a regular file. */
static uint32_t check_reg(const struct fs_attr *a)
{
	if (S_ISREG(a->mode))
		return NFS4_OK;
	if (S_ISDIR(a->mode))
		return NFS4ERR_ISDIR;
	if (S_ISLNK(a->mode))
		return NFS4ERR_SYMLINK;
	return NFS4ERR_INVAL;
}

/* The exclusive-create verifier is the shared layer's (srv_createverf_*),
 * kept in atime and mtime: suppattr_exclcreat leaves the times out. */
_Static_assert(NFS4_VERIFIER_SIZE == SRV_CREATEVERF_SIZE, "one verifier size");

struct open_ctx {
	struct nfs4_compound *c;
	struct OPEN4args *oa;
	struct OPEN4resok *ok;
	unsigned access, deny; /* SHARE_ACCESS_*, SHARE_DENY_* */
	struct fs_inode *ip;   /* what is opened, referenced */
	bool created;
	bool made_here; /* created, or the retransmission of its exclusive create */
	bool truncated;
	struct fs_setattr trunc; /* what an existing file is to take (the size) */
	bool want_trunc;	 /* after the share reservation: open_truncate */
};

/* Decode the attributes an OPEN(CREATE) sent. */
static uint32_t create_attrs(const struct fattr4 *fa, struct nfs4_sattr *set,
			     struct fs_setattr *req)
{
	struct nfs4_bitmap bm;
	if (!nfs4_bm_from_wire(&bm, fa->attrmask.val, fa->attrmask.len))
		return NFS4ERR_ATTRNOTSUPP;
	uint32_t st = nfs4_attr_decode(&bm, fa->attr_vals.val, fa->attr_vals.len, set);
	if (st)
		return st;
	nfs4_sattr_to_fs(set, req);
	return NFS4_OK;
}

static void bm_clear(struct nfs4_bitmap *b, unsigned n)
{
	b->w[n / 32] &= ~(1u << (n % 32));
}

/*
 * attrset of a create (RFC 8881 §18.16.4): the attributes the new file
 * took of those sent (an owner and group from root only: rule 10 of
 * src/srv/perm.h), and for an exclusive create the times that hold the
 * verifier, so that a client sets them afterwards (Linux does, only when
 * attrset names them).
 */
static void created_attrset(struct open_ctx *o, const struct nfs4_sattr *set,
			    const struct fs_setattr *req, bool exclusive)
{
	struct nfs4_bitmap as = set->set;
	unsigned taken = srv_create_taken(&o->c->cfh.exp.cred, req->mask);
	if (!(taken & FS_SET_UID))
		bm_clear(&as, FATTR4_OWNER);
	if (!(taken & FS_SET_GID))
		bm_clear(&as, FATTR4_OWNER_GROUP);
	if (exclusive) {
		nfs4_bm_set(&as, FATTR4_TIME_ACCESS);
		nfs4_bm_set(&as, FATTR4_TIME_MODIFY);
	}
	memcpy(o->ok->attrset.val, as.w, sizeof(as.w));
}

/*
 * May the caller open ip for access with deny (Linux's do_open_permission)?
 * The mode decides for the owner too (rule 3 of src/srv/perm.h): the
 * owner's override is for a file this OPEN made (override). An OPEN for
 * reading alone may read by execute permission; a deny of reads needs
 * write permission, so that a reader cannot lock the others out.
 */
static uint32_t open_permission(struct nfs4_compound *c, struct fs_inode *ip, unsigned access,
				unsigned deny, bool override)
{
	unsigned acc = SRV_MAY_READ_IF_EXEC;
	if (access & SHARE_ACCESS_READ)
		acc |= SRV_MAY_READ;
	if ((access & SHARE_ACCESS_WRITE) || (deny & SHARE_DENY_READ))
		acc |= SRV_MAY_WRITE;
	if (override)
		acc |= SRV_MAY_OWNER_OVERRIDE;
	int err = srv_may_open(&c->cfh.exp, ip, acc);
	return err ? nfs4_status(err) : NFS4_OK;
}

/* OPEN(CREATE) of a name: find or make the file (RFC 8881 §18.16.3). */
static uint32_t open_create(struct open_ctx *o, const component4 *name)
{
	struct nfs4_compound *c = o->c;
	const struct createhow4 *how = &o->oa->openhow.how;
	struct nfs4_sattr set = {0};
	struct fs_setattr req = {0};
	const uint8_t *verf = NULL;
	uint32_t st;
	int err;
	switch (how->mode) {
	case UNCHECKED4:
	case GUARDED4:
		st = create_attrs(&how->createattrs, &set, &req);
		break;
	case EXCLUSIVE4:
		verf = how->createverf;
		st = NFS4_OK;
		break;
	case EXCLUSIVE4_1:
		verf = how->ch_createboth.cva_verf;
		st = create_attrs(&how->ch_createboth.cva_attrs, &set, &req);
		/* the times hold the verifier (suppattr_exclcreat) */
		if (!st && (set.mask & (NFS4_SA_ATIME | NFS4_SA_MTIME)))
			st = NFS4ERR_INVAL;
		break;
	default:
		st = NFS4ERR_INVAL;
	}
	if (st)
		return st;
	o->ok->attrset.len = NFS4_ATTR_WORDS;
	struct fs_result res = {.want = FS_RES_ATTRS};
	struct fs_create_args ca = {.mode = S_IFREG | 0644};
	err = srv_lookup(&c->cfh.exp, c->cfh.ip, (const char *)name->val, name->len, &o->ip);
	if (err == -ENOENT) {
		err = srv_create(&c->cfh.exp, c->cfh.ip, (const char *)name->val, name->len, &ca,
				 &req, &o->ip, &res);
		if (!err) {
			o->created = o->made_here = true;
			created_attrset(o, &set, &req, verf);
		}
		if (err == -EEXIST) /* made meanwhile: the existing file's rules */
			err = srv_lookup(&c->cfh.exp, c->cfh.ip, (const char *)name->val, name->len,
					 &o->ip);
	}
	if (o->created && verf) {
		/* the attributes sent went with the create; the verifier last */
		struct fs_setattr vsa = {.mask = FS_SET_ATIME | FS_SET_MTIME};
		struct fs_result vres = {0};
		srv_createverf_times(verf, &vsa.atime, &vsa.mtime);
		err = fs_setattr(o->ip, &vsa, &vres);
		if (vres.csn > res.csn)
			res.csn = vres.csn;
	}
	if (c->cfh.exp.opts->sync)
		nfs4_note_change(c, res.csn, false);
	if (err)
		return nfs4_status(err);
	if (o->created) {
		o->ok->cinfo.atomic = res.ino[0].has_pre && res.ino[0].has_post;
		o->ok->cinfo.before = res.ino[0].pre.change;
		o->ok->cinfo.after = res.ino[0].post.change;
		return NFS4_OK;
	}
	/* the name was there */
	struct fs_attr at;
	if ((err = fs_getattr(o->ip, &at)))
		return nfs4_status(err);
	if (how->mode == GUARDED4)
		return NFS4ERR_EXIST;
	if (verf) {
		if (!srv_createverf_matches(&at, verf))
			return NFS4ERR_EXIST;
		/* the retransmission of our own create, answered as it was:
		 * the file is still the one this OPEN made (as Linux) */
		o->made_here = true;
		created_attrset(o, &set, &req, true);
		return NFS4_OK;
	}
	if ((st = check_reg(&at)))
		return st;
	/* an existing file takes only the size (O_TRUNC), with a SETATTR's
	 * permission (docs/permissions.md), and only by an OPEN for writing
	 * that may be had: the OPEN's permission and its share reservation
	 * first, so nothing is cut for an OPEN that fails there
	 * (open_truncate) */
	srv_existing_sattr(&req);
	/* and only a size of 0: UNCHECKED4 truncates (RFC 8881 §18.16.3),
	 * it does not set another size (as Linux; NFSv3 sets any) */
	if (req.size != 0)
		req.mask &= ~FS_SET_SIZE;
	if (req.mask) {
		if (!(o->access & SHARE_ACCESS_WRITE))
			return NFS4ERR_INVAL;
		o->trunc = req;
		o->want_trunc = true;
	}
	return NFS4_OK;
}

/* The truncation of an existing file an OPEN(CREATE) asked for, once the
 * OPEN's share reservation is held (no state lock held). */
static uint32_t open_truncate(struct open_ctx *o)
{
	struct nfs4_compound *c = o->c;
	struct fs_result tres = {0};
	int err = srv_setattr(&c->cfh.exp, o->ip, &o->trunc, &tres);
	if (err)
		return nfs4_err_on(c, err, o->ip);
	if (c->cfh.exp.opts->sync)
		nfs4_note_change(c, tres.csn, false);
	o->truncated = true;
	struct nfs4_bitmap as = {0};
	nfs4_bm_set(&as, FATTR4_SIZE);
	memcpy(o->ok->attrset.val, as.w, sizeof(as.w));
	return NFS4_OK;
}

/* The claims that reclaim state of the previous server instance. */
static bool open_is_reclaim(open_claim_type4 claim)
{
	return claim == CLAIM_PREVIOUS || claim == CLAIM_DELEGATE_PREV ||
	       claim == CLAIM_DELEG_PREV_FH;
}

/* One try at the share reservation (the open's stateid locked): OK,
 * SHARE_DENIED with *conflict, DELAY at a bound, INVAL. */
static uint32_t try_share(struct nfs4_compound *c, struct nfs4_open *op, unsigned access,
			  unsigned deny, struct share_info *conflict, struct share_undo *undo)
{
	assert_stid_locked(op->pl.pl_stid);
	int err = share_open_undoable(c->s->shares, op->pl.pl_file, &op->pl.pl_share, access, deny,
				      conflict, undo);
	if (!err)
		return NFS4_OK;
	if (err == -ENOLCK)
		return NFS4ERR_DELAY;
	return err == -EAGAIN ? NFS4ERR_SHARE_DENIED : NFS4ERR_INVAL;
}

/* The stateid of an OPEN that succeeded (the open's stateid locked): a
 * new open's first value, an upgrade's next one. */
static void open_sid(struct nfs4_open *op, bool fresh, struct nfs4_stateid *sid)
{
	assert_stid_locked(op->pl.pl_stid);
	if (fresh)
		nfs4_stid_value(op->pl.pl_stid, sid);
	else
		nfs4_stid_bump(op->pl.pl_stid, sid);
}

/*
 * What a CLAIM_NULL, CLAIM_FH or CLAIM_PREVIOUS OPEN opens, referenced in
 * o->ip (dat: the current filehandle's attributes); the claims that name
 * a delegation answer as for one never issued.
 */
static uint32_t open_claim(struct open_ctx *o, const struct fs_attr *dat)
{
	struct nfs4_compound *c = o->c;
	struct OPEN4args *oa = o->oa;
	struct OPEN4resok *ok = o->ok;
	uint32_t st;
	int err;
	switch (oa->claim.claim) {
	case CLAIM_NULL:
		if ((st = nfs4_grace_check_new(c->s->state)))
			return st;
		if (c->cfh.kind == NFS4_FH_PSEUDO)
			return oa->openhow.opentype == OPEN4_CREATE ? NFS4ERR_ROFS : NFS4ERR_NOENT;
		if (S_ISLNK(dat->mode))
			return NFS4ERR_SYMLINK;
		if (!S_ISDIR(dat->mode))
			return NFS4ERR_NOTDIR;
		if ((st = nfs4_name_check(&oa->claim.file)))
			return st;
		ok->cinfo.atomic = true;
		ok->cinfo.before = ok->cinfo.after = dat->change;
		if (oa->openhow.opentype == OPEN4_CREATE) {
			if (!c->cfh.exp.opts->rw)
				return NFS4ERR_ROFS;
			return open_create(o, &oa->claim.file);
		}
		err = srv_lookup(&c->cfh.exp, c->cfh.ip, (const char *)oa->claim.file.val,
				 oa->claim.file.len, &o->ip);
		return err ? nfs4_status(err) : NFS4_OK;
	case CLAIM_FH:
	case CLAIM_PREVIOUS:
		st = oa->claim.claim == CLAIM_FH ? nfs4_grace_check_new(c->s->state)
						 : nfs4_grace_check_reclaim(c->s->state, c->clp);
		if (st)
			return st;
		if (oa->openhow.opentype == OPEN4_CREATE)
			return NFS4ERR_INVAL;
		if (oa->claim.claim == CLAIM_PREVIOUS &&
		    oa->claim.delegate_type != OPEN_DELEGATE_NONE)
			return NFS4ERR_RECLAIM_BAD; /* no delegation was ever given */
		if (c->cfh.kind == NFS4_FH_PSEUDO)
			return NFS4ERR_ISDIR;
		fs_igrab(c->cfh.ip);
		o->ip = c->cfh.ip;
		ok->cinfo.atomic = true;
		return NFS4_OK;
	case CLAIM_DELEGATE_CUR:
	case CLAIM_DELEG_CUR_FH:
		return NFS4ERR_BAD_STATEID; /* no delegation stateid was ever issued */
	case CLAIM_DELEGATE_PREV:
	case CLAIM_DELEG_PREV_FH:
		return NFS4ERR_NOTSUPP; /* nor could one be reclaimed */
	default:
		return NFS4ERR_INVAL;
	}
}

/*
 * The share reservation and the stateid of the open of o->ip by the
 * OPEN's owner, as one step; with a truncation between them (the design
 * note): NFS4_OK and the stateid's new value in *sid.
 */
static uint32_t open_share(struct open_ctx *o, struct nfs4_stateid *sid)
{
	struct nfs4_compound *c = o->c;
	struct share_owner owner = {
		.client = nfs4_client_id(c->clp),
		.owner = nfs4_owner_key(c->s, nfs4_client_id(c->clp), o->oa->owner.owner.val,
					o->oa->owner.owner.len),
	};
	struct nfs4_open *op;
	bool fresh;
	uint32_t st = open_get(c, &owner, o->ip, &op, &fresh);
	if (st)
		return st;
	struct nfs4_stid *sp = op->pl.pl_stid;
	struct share_undo undo;
	struct share_info conflict = {0};
	unsigned tries = 0;
	/* the courteous server: a courtesy client's open goes when it is in
	 * the way */
	do {
		nfs4_stid_lock(sp);
		st = try_share(c, op, o->access, o->deny, &conflict, &undo);
		if (!st && !o->want_trunc)
			open_sid(op, fresh, sid);
		nfs4_stid_unlock(sp);
	} while (nfs4_courtesy_retry(c, &st, NFS4ERR_SHARE_DENIED, conflict.owner.client,
				     owner.client, &tries));
	/* the truncation once the share is held (a refused OPEN cut nothing,
	 * as Linux's nfs4_get_vfs_file); a failed one takes back what this
	 * OPEN did to the share, so that its run again after a layout
	 * recall (nfs4_err_on) finds the open as it was */
	if (!st && o->want_trunc) {
		st = open_truncate(o);
		nfs4_stid_lock(sp);
		if (!st)
			open_sid(op, fresh, sid); /* only for an OPEN that did it all */
		else if (!fresh)
			share_undo(c->s->shares, op->pl.pl_file, &op->pl.pl_share, &undo);
		nfs4_stid_unlock(sp);
	}
	if (st && fresh)
		nfs4_stid_unhash(sp); /* a new open that was refused goes */
	nfs4_stid_put(sp);
	return st;
}

uint32_t nfs4_op_open(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct OPEN4args *oa = &a->opopen;
	struct OPEN4resok *ok = &r->opopen.resok4;
	unsigned access = oa->share_access &
			  ~(uint32_t)(OPEN4_SHARE_ACCESS_WANT_DELEG_MASK |
				      OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL |
				      OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED);
	unsigned deny = oa->share_deny;
	struct open_ctx o = {.c = c, .oa = oa, .ok = ok, .access = access, .deny = deny};
	uint32_t st;
	int err;
	if (access < 1 || access > 3 || deny > 3)
		return NFS4ERR_INVAL;
	/* the owner's client is the session's: its clientid field is ignored
	 * (RFC 8881 §18.16.3, as the Linux server does) */
	if (!c->clp)
		return NFS4ERR_STALE_CLIENTID;
	if (oa->owner.owner.len > NFS4_OPAQUE_LIMIT)
		return NFS4ERR_BADXDR;
	struct fs_attr dat;
	if ((err = nfs4_fh_attr(c, &c->cfh, &dat)))
		return nfs4_status(err);
	/* until its RECLAIM_COMPLETE a client may only reclaim, in grace or
	 * not (RFC 8881 §18.51.3) */
	if (!open_is_reclaim(oa->claim.claim) &&
	    (st = nfs4_grace_check_complete(c->s->state, c->clp)))
		return st;
	if ((st = open_claim(&o, &dat)))
		goto out;

	struct fs_attr at;
	if ((err = fs_getattr(o.ip, &at))) {
		st = nfs4_status(err);
		goto out;
	}
	if ((st = check_reg(&at)))
		goto out;
	/* a file this OPEN made is the caller's: no check (Linux checks
	 * it with the owner's override, which the caller, its owner, passes) */
	if (!o.created && (st = open_permission(c, o.ip, access, deny, o.made_here)))
		goto out;
	struct nfs4_stateid sid;
	if ((st = open_share(&o, &sid)))
		goto out;
	nfs4_sid_to_wire(&sid, &ok->stateid);
	ok->rflags = OPEN4_RESULT_LOCKTYPE_POSIX;
	if (oa->share_access & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK) {
		ok->delegation.delegation_type = OPEN_DELEGATE_NONE_EXT;
		ok->delegation.od_whynone.ond_why = WND4_NOT_SUPP_FTYPE;
	} else {
		ok->delegation.delegation_type = OPEN_DELEGATE_NONE;
	}
	/* the opened file is the current filehandle, its stateid the current one */
	if (c->cfh.kind == NFS4_FH_FS && c->cfh.ip != o.ip) {
		fs_iput(c->cfh.ip);
		c->cfh.ip = o.ip;
		o.ip = NULL;
	}
	nfs4_set_cur_sid(c, &sid);
out:
	if (o.ip)
		fs_iput(o.ip);
	return st;
}

uint32_t nfs4_op_open_downgrade(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct OPEN_DOWNGRADE4args *da = &a->opopen_downgrade;
	unsigned access = da->share_access & ~(uint32_t)OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
	struct nfs4_stid *sp;
	uint32_t st;
	if (access < 1 || access > 3 || da->share_deny > 3)
		return NFS4ERR_INVAL;
	if ((st = nfs4_stid_of(c, &da->open_stateid, NFS4_STID_OPEN, &sp)))
		return st;
	struct nfs4_open *op = nfs4_stid_payload(sp);
	struct nfs4_stateid sid;
	nfs4_stid_lock(sp);
	int err = share_downgrade(c->s->shares, op->pl.pl_file, &op->pl.pl_share, access,
				  da->share_deny);
	if (!err)
		nfs4_stid_bump(sp, &sid);
	nfs4_stid_unlock(sp);
	nfs4_stid_put(sp);
	if (err)
		return NFS4ERR_INVAL;
	nfs4_sid_to_wire(&sid, &r->opopen_downgrade.resok4.open_stateid);
	nfs4_set_cur_sid(c, &sid);
	return NFS4_OK;
}

uint32_t nfs4_op_close(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct nfs4_stid *sp;
	uint32_t st;
	if ((st = nfs4_stid_of(c, &a->opclose.open_stateid, NFS4_STID_OPEN, &sp)))
		return st;
	struct nfs4_open *op = nfs4_stid_payload(sp);
	struct nfs4_stid **locks = NULL;
	size_t nlocks = 0;
	nfs4_stid_lock(sp);
	if (nfs4_open_has_locks(c->s, op)) {
		st = NFS4ERR_LOCKS_HELD;
	} else {
		nfs4_stid_unhash(sp); /* the open goes with the last reference */
		nlocks = nfs4_open_take_locks(op, &locks);
	}
	nfs4_stid_unlock(sp);
	nfs4_lockst_end_all(locks, nlocks); /* they hold no locks: they go with it */
	nfs4_stid_put(sp);
	if (st)
		return st;
	/* the stateid is over: the special invalid one (RFC 8881 §18.2.4) */
	struct stateid4 *w = &r->opclose.open_stateid;
	w->seqid = UINT32_MAX;
	memset(w->other, 0, sizeof(w->other));
	c->have_cur_sid = false;
	return NFS4_OK;
}
