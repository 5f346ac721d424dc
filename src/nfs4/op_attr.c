/*
 * op_attr.c - GETATTR, SETATTR, VERIFY, NVERIFY and ACCESS (RFC 8881
 * §18.1, §18.7, §18.15, §18.30, §18.31), on the attribute table of attr.c
 * and the permission rules of the shared server layer (srv/perm.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "nfs4/nfs4_priv.h"
#include "srv/vfs.h"

/* Bytes of attribute values one object may take in a reply: far more than
 * every supported attribute together. */
#define ATTR_VALS_MAX 4096

void nfs4_attr_obj_of(struct nfs4_compound *c, const struct nfs4_fh *fh, const struct fs_attr *a,
		      struct nfs4_fsinfo *fsi, nfs_fh4 *wfh, struct nfs4_attr_obj *obj)
{
	nfs4_fh_fsinfo(c, fh, fsi);
	nfs4_fh_wire(c, fh, a, wfh);
	memset(obj, 0, sizeof(*obj));
	obj->a = a;
	obj->fsi = fsi;
	obj->fh = wfh->val;
	obj->fh_len = wfh->len;
	obj->mounted_on_fileid = nfs4_fh_mounted_on(c, fh, a);
}

int nfs4_fattr(struct nfs4_compound *c, const bitmap4 *req, const struct nfs4_attr_obj *obj,
	       struct fattr4 *out)
{
	struct nfs4_bitmap want, got;
	uint8_t buf[512];
	struct xdr_enc x;
	nfs4_bm_from_wire(&want, req->val, req->len);
	xdr_enc_init_buf(&x, buf, sizeof(buf), ATTR_VALS_MAX);
	int err = nfs4_attr_values(&x, &want, obj, &got);
	if (!err) {
		size_t len = xdr_enc_len(&x);
		uint8_t *vals = nfs4_res_alloc(c, len ? len : 1);
		if (!vals) {
			xdr_enc_destroy(&x);
			return -EMSGSIZE;
		}
		xdr_enc_flatten(&x, vals);
		out->attr_vals.len = (uint32_t)len;
		out->attr_vals.val = vals;
		out->attrmask.len = NFS4_ATTR_WORDS;
		while (out->attrmask.len && !got.w[out->attrmask.len - 1])
			out->attrmask.len--;
		memcpy(out->attrmask.val, got.w, sizeof(got.w));
	}
	xdr_enc_destroy(&x);
	return err;
}

uint32_t nfs4_op_getattr(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct fs_attr at;
	struct nfs4_fsinfo fsi;
	nfs_fh4 wfh;
	struct nfs4_attr_obj obj;
	int err = nfs4_fh_attr(c, &c->cfh, &at);
	if (err)
		return nfs4_status(err);
	nfs4_attr_obj_of(c, &c->cfh, &at, &fsi, &wfh, &obj);
	err = nfs4_fattr(c, &a->opgetattr.attr_request, &obj, &r->opgetattr.resok4.obj_attributes);
	return err ? nfs4_status(err) : NFS4_OK;
}

static uint32_t verify(struct nfs4_compound *c, const struct fattr4 *fa, bool want_same)
{
	struct fs_attr at;
	struct nfs4_fsinfo fsi;
	nfs_fh4 wfh;
	struct nfs4_attr_obj obj;
	struct nfs4_bitmap bm;
	int err = nfs4_fh_attr(c, &c->cfh, &at);
	if (err)
		return nfs4_status(err);
	if (!nfs4_bm_from_wire(&bm, fa->attrmask.val, fa->attrmask.len))
		return NFS4ERR_ATTRNOTSUPP;
	nfs4_attr_obj_of(c, &c->cfh, &at, &fsi, &wfh, &obj);
	return nfs4_attr_verify(&bm, fa->attr_vals.val, fa->attr_vals.len, &obj, want_same);
}

uint32_t nfs4_op_verify(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	return verify(c, &a->opverify.obj_attributes, true);
}

uint32_t nfs4_op_nverify(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	return verify(c, &a->opnverify.obj_attributes, false);
}

void nfs4_sattr_to_fs(const struct nfs4_sattr *sa, struct fs_setattr *fsa)
{
	memset(fsa, 0, sizeof(*fsa));
	if (sa->mask & NFS4_SA_MODE) {
		fsa->mask |= FS_SET_MODE;
		fsa->mode = sa->mode;
	}
	if (sa->mask & NFS4_SA_UID) {
		fsa->mask |= FS_SET_UID;
		fsa->uid = sa->uid;
	}
	if (sa->mask & NFS4_SA_GID) {
		fsa->mask |= FS_SET_GID;
		fsa->gid = sa->gid;
	}
	if (sa->mask & NFS4_SA_SIZE) {
		fsa->mask |= FS_SET_SIZE;
		fsa->size = sa->size;
	}
	if (sa->mask & NFS4_SA_ATIME) {
		fsa->mask |= sa->atime_now ? FS_SET_ATIME_NOW : FS_SET_ATIME;
		fsa->atime = sa->atime;
	}
	if (sa->mask & NFS4_SA_MTIME) {
		fsa->mask |= sa->mtime_now ? FS_SET_MTIME_NOW : FS_SET_MTIME;
		fsa->mtime = sa->mtime;
	}
}

uint32_t nfs4_op_setattr(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct SETATTR4args *sa = &a->opsetattr;
	struct nfs4_bitmap bm;
	struct nfs4_sattr set;
	uint32_t st;
	if (!nfs4_bm_from_wire(&bm, sa->obj_attributes.attrmask.val,
			       sa->obj_attributes.attrmask.len))
		st = NFS4ERR_ATTRNOTSUPP;
	else
		st = nfs4_attr_decode(&bm, sa->obj_attributes.attr_vals.val,
				      sa->obj_attributes.attr_vals.len, &set);
	r->opsetattr.status = st;
	if (st)
		return st;
	if (c->cfh.kind == NFS4_FH_PSEUDO)
		return r->opsetattr.status = NFS4ERR_ROFS;
	if (set.mask & NFS4_SA_SIZE) {
		struct fs_attr at;
		int err = fs_getattr(c->cfh.ip, &at);
		if (err)
			return r->opsetattr.status = nfs4_status(err);
		if (S_ISDIR(at.mode))
			return r->opsetattr.status = NFS4ERR_ISDIR;
		if (!S_ISREG(at.mode))
			return r->opsetattr.status = NFS4ERR_INVAL;
		/* a size change is a write: the stateid must allow one */
		if ((st = nfs4_check_io_stateid(c, &sa->stateid, c->cfh.ip, true)))
			return r->opsetattr.status = st;
	}
	struct fs_setattr fsa;
	struct fs_result res = {0};
	nfs4_sattr_to_fs(&set, &fsa);
	int err = srv_setattr(&c->cfh.exp, c->cfh.ip, &fsa, &res);
	if (c->cfh.exp.opts->sync)
		nfs4_note_change(c, res.csn, false);
	st = err ? nfs4_err_on(c, err, c->cfh.ip) : NFS4_OK;
	r->opsetattr.status = st;
	if (!st) {
		r->opsetattr.attrsset.len = NFS4_ATTR_WORDS;
		memcpy(r->opsetattr.attrsset.val, set.set.w, sizeof(set.set.w));
		while (r->opsetattr.attrsset.len && !set.set.w[r->opsetattr.attrsset.len - 1])
			r->opsetattr.attrsset.len--;
	}
	return st;
}

uint32_t nfs4_op_access(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	uint32_t want = a->opaccess.access;
	struct ACCESS4resok *ok = &r->opaccess.resok4;
	struct fs_attr at;
	int err = nfs4_fh_attr(c, &c->cfh, &at);
	if (err)
		return nfs4_status(err);
	/* ACCESS4_* are the same bits as NFSv3's (srv_access) */
	uint32_t known = SRV_ACCESS_READ | SRV_ACCESS_LOOKUP | SRV_ACCESS_MODIFY |
			 SRV_ACCESS_EXTEND | SRV_ACCESS_DELETE | SRV_ACCESS_EXECUTE;
	if (want & ~known)
		return NFS4ERR_INVAL;
	ok->supported = want;
	if (c->cfh.kind == NFS4_FH_PSEUDO) {
		ok->access = want & (SRV_ACCESS_READ | SRV_ACCESS_LOOKUP);
		return NFS4_OK;
	}
	ok->access = srv_access(&c->cfh.exp.cred, c->cfh.exp.opts, &at, want);
	return NFS4_OK;
}
