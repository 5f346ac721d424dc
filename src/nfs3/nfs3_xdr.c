/*
 * nfs3_xdr.c - NFSv3 codecs (RFC 1813 §3).
 *
 * Every decoder returns 0 or -EBADMSG (GARBAGE_ARGS); lengths are checked
 * against the protocol's maximums by the XDR stream before anything is
 * copied. Encoders return 0 or -EMSGSIZE.
 */
#include <errno.h>
#include <string.h>

#include "nfs3/nfs3_xdr.h"

/* ---- decoding ---- */

static int dec_fh(struct xdr_dec *x, struct nfs3_fh *fh)
{
	return xdr_dec_opaque(x, fh->data, NFS3_FHSIZE, &fh->len);
}

static int dec_name(struct xdr_dec *x, struct nfs3_name *n, uint32_t max)
{
	return xdr_dec_string_ref(x, max, &n->s, &n->len);
}

static int dec_time(struct xdr_dec *x, struct nfs3_time *t)
{
	int err;
	if ((err = xdr_dec_u32(x, &t->sec)))
		return err;
	return xdr_dec_u32(x, &t->nsec);
}

static int dec_sattr(struct xdr_dec *x, struct nfs3_sattr *s)
{
	int err;
	if ((err = xdr_dec_bool(x, &s->set_mode)))
		return err;
	if (s->set_mode)
		if ((err = xdr_dec_u32(x, &s->mode)))
			return err;
	if ((err = xdr_dec_bool(x, &s->set_uid)))
		return err;
	if (s->set_uid)
		if ((err = xdr_dec_u32(x, &s->uid)))
			return err;
	if ((err = xdr_dec_bool(x, &s->set_gid)))
		return err;
	if (s->set_gid)
		if ((err = xdr_dec_u32(x, &s->gid)))
			return err;
	if ((err = xdr_dec_bool(x, &s->set_size)))
		return err;
	if (s->set_size)
		if ((err = xdr_dec_u64(x, &s->size)))
			return err;
	if ((err = xdr_dec_u32(x, &s->atime_how)))
		return err;
	if (s->atime_how > SET_TO_CLIENT_TIME)
		return -EBADMSG;
	if (s->atime_how == SET_TO_CLIENT_TIME)
		if ((err = dec_time(x, &s->atime)))
			return err;
	if ((err = xdr_dec_u32(x, &s->mtime_how)))
		return err;
	if (s->mtime_how > SET_TO_CLIENT_TIME)
		return -EBADMSG;
	if (s->mtime_how == SET_TO_CLIENT_TIME)
		if ((err = dec_time(x, &s->mtime)))
			return err;
	return 0;
}

static int dec_dirop(struct xdr_dec *x, struct nfs3_dirop *d)
{
	int err;
	if ((err = dec_fh(x, &d->dir)))
		return err;
	return dec_name(x, &d->name, NFS3_MAXNAME);
}

int nfs3_dec_fh(struct xdr_dec *x, void *args)
{
	struct nfs3_fh_args *a = args;
	return dec_fh(x, &a->fh);
}

int nfs3_dec_setattr(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_setattr_args *a = args;
	if ((err = dec_fh(x, &a->fh)))
		return err;
	if ((err = dec_sattr(x, &a->sattr)))
		return err;
	if ((err = xdr_dec_bool(x, &a->guard)))
		return err;
	if (a->guard)
		if ((err = dec_time(x, &a->guard_ctime)))
			return err;
	return 0;
}

int nfs3_dec_dirop(struct xdr_dec *x, void *args)
{
	struct nfs3_dirop_args *a = args;
	return dec_dirop(x, &a->what);
}

int nfs3_dec_access(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_access_args *a = args;
	if ((err = dec_fh(x, &a->fh)))
		return err;
	return xdr_dec_u32(x, &a->access);
}

int nfs3_dec_read(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_read_args *a = args;
	if ((err = dec_fh(x, &a->fh)))
		return err;
	if ((err = xdr_dec_u64(x, &a->offset)))
		return err;
	return xdr_dec_u32(x, &a->count);
}

int nfs3_dec_write(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_write_args *a = args;
	if ((err = dec_fh(x, &a->fh)))
		return err;
	if ((err = xdr_dec_u64(x, &a->offset)))
		return err;
	if ((err = xdr_dec_u32(x, &a->count)))
		return err;
	if ((err = xdr_dec_u32(x, &a->stable)))
		return err;
	if (a->stable > FILE_SYNC)
		return -EBADMSG;
	return xdr_dec_opaque_iov(x, NFS3_MAXDATA, &a->data);
}

int nfs3_dec_create(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_create_args *a = args;
	if ((err = dec_dirop(x, &a->where)))
		return err;
	if ((err = xdr_dec_u32(x, &a->how)))
		return err;
	switch (a->how) {
	case UNCHECKED:
	case GUARDED:
		return dec_sattr(x, &a->sattr);
	case EXCLUSIVE:
		return xdr_dec_fixed(x, a->verf, NFS3_VERFSIZE);
	}
	return -EBADMSG;
}

int nfs3_dec_mkdir(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_create_args *a = args;
	if ((err = dec_dirop(x, &a->where)))
		return err;
	return dec_sattr(x, &a->sattr);
}

int nfs3_dec_symlink(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_create_args *a = args;
	if ((err = dec_dirop(x, &a->where)))
		return err;
	if ((err = dec_sattr(x, &a->sattr)))
		return err;
	return dec_name(x, &a->target, NFS3_MAXPATH);
}

int nfs3_dec_mknod(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_create_args *a = args;
	if ((err = dec_dirop(x, &a->where)))
		return err;
	if ((err = xdr_dec_u32(x, &a->how)))
		return err;
	switch (a->how) {
	case NF3CHR:
	case NF3BLK:
		if ((err = dec_sattr(x, &a->sattr)))
			return err;
		if ((err = xdr_dec_u32(x, &a->major)))
			return err;
		return xdr_dec_u32(x, &a->minor);
	case NF3SOCK:
	case NF3FIFO:
		return dec_sattr(x, &a->sattr);
	case NF3REG:
	case NF3DIR:
	case NF3LNK:
		return 0; /* answered with NFS3ERR_BADTYPE */
	}
	return -EBADMSG;
}

int nfs3_dec_rename(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_rename_args *a = args;
	if ((err = dec_dirop(x, &a->from)))
		return err;
	return dec_dirop(x, &a->to);
}

int nfs3_dec_link(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_link_args *a = args;
	if ((err = dec_fh(x, &a->fh)))
		return err;
	return dec_dirop(x, &a->link);
}

int nfs3_dec_readdir(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_readdir_args *a = args;
	if ((err = dec_fh(x, &a->dir)))
		return err;
	if ((err = xdr_dec_u64(x, &a->cookie)))
		return err;
	if ((err = xdr_dec_fixed(x, a->verf, NFS3_VERFSIZE)))
		return err;
	if ((err = xdr_dec_u32(x, &a->count)))
		return err;
	a->dircount = a->count;
	return 0;
}

int nfs3_dec_readdirplus(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_readdir_args *a = args;
	if ((err = dec_fh(x, &a->dir)))
		return err;
	if ((err = xdr_dec_u64(x, &a->cookie)))
		return err;
	if ((err = xdr_dec_fixed(x, a->verf, NFS3_VERFSIZE)))
		return err;
	if ((err = xdr_dec_u32(x, &a->dircount)))
		return err;
	return xdr_dec_u32(x, &a->count);
}

int nfs3_dec_commit(struct xdr_dec *x, void *args)
{
	int err;
	struct nfs3_commit_args *a = args;
	if ((err = dec_fh(x, &a->fh)))
		return err;
	if ((err = xdr_dec_u64(x, &a->offset)))
		return err;
	return xdr_dec_u32(x, &a->count);
}

/* ---- encoding ---- */

static int enc_time(struct xdr_enc *x, const struct nfs3_time *t)
{
	int err;
	if ((err = xdr_enc_u32(x, t->sec)))
		return err;
	return xdr_enc_u32(x, t->nsec);
}

static int enc_fattr(struct xdr_enc *x, const struct nfs3_fattr *a)
{
	int err;
	if ((err = xdr_enc_u32(x, a->type)))
		return err;
	if ((err = xdr_enc_u32(x, a->mode)))
		return err;
	if ((err = xdr_enc_u32(x, a->nlink)))
		return err;
	if ((err = xdr_enc_u32(x, a->uid)))
		return err;
	if ((err = xdr_enc_u32(x, a->gid)))
		return err;
	if ((err = xdr_enc_u64(x, a->size)))
		return err;
	if ((err = xdr_enc_u64(x, a->used)))
		return err;
	if ((err = xdr_enc_u32(x, a->rdev_major)))
		return err;
	if ((err = xdr_enc_u32(x, a->rdev_minor)))
		return err;
	if ((err = xdr_enc_u64(x, a->fsid)))
		return err;
	if ((err = xdr_enc_u64(x, a->fileid)))
		return err;
	if ((err = enc_time(x, &a->atime)))
		return err;
	if ((err = enc_time(x, &a->mtime)))
		return err;
	return enc_time(x, &a->ctime);
}

static int enc_post(struct xdr_enc *x, const struct nfs3_post_attr *p)
{
	int err;
	if ((err = xdr_enc_bool(x, p->present)))
		return err;
	return p->present ? enc_fattr(x, &p->a) : 0;
}

static int enc_wcc(struct xdr_enc *x, const struct nfs3_wcc *w)
{
	int err;
	if ((err = xdr_enc_bool(x, w->pre_present)))
		return err;
	if (w->pre_present) {
		if ((err = xdr_enc_u64(x, w->pre_size)))
			return err;
		if ((err = enc_time(x, &w->pre_mtime)))
			return err;
		if ((err = enc_time(x, &w->pre_ctime)))
			return err;
	}
	return enc_post(x, &w->post);
}

static int enc_fh(struct xdr_enc *x, const struct nfs3_fh *fh)
{
	return xdr_enc_opaque(x, fh->data, fh->len);
}

int nfs3_enc_getattr(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_getattr_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	return r->status == NFS3_OK ? enc_fattr(x, &r->attr) : 0;
}

int nfs3_enc_wcc_res(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_wcc_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	return enc_wcc(x, &r->wcc);
}

int nfs3_enc_lookup(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_lookup_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if (r->status == NFS3_OK) {
		if ((err = enc_fh(x, &r->fh)))
			return err;
		if ((err = enc_post(x, &r->obj)))
			return err;
	}
	return enc_post(x, &r->dir);
}

int nfs3_enc_access(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_access_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_post(x, &r->obj)))
		return err;
	return r->status == NFS3_OK ? xdr_enc_u32(x, r->access) : 0;
}

int nfs3_enc_readlink(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_readlink_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_post(x, &r->obj)))
		return err;
	return r->status == NFS3_OK ? xdr_enc_opaque(x, r->path, r->len) : 0;
}

int nfs3_enc_read(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_read_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_post(x, &r->obj)))
		return err;
	if (r->status != NFS3_OK)
		return 0;
	if ((err = xdr_enc_u32(x, r->count)))
		return err;
	if ((err = xdr_enc_bool(x, r->eof)))
		return err;
	struct iovec iov = {.iov_base = r->data, .iov_len = r->count};
	return xdr_enc_opaque_iov(x, &iov, r->count ? 1 : 0);
}

int nfs3_enc_write(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_write_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_wcc(x, &r->wcc)))
		return err;
	if (r->status != NFS3_OK)
		return 0;
	if ((err = xdr_enc_u32(x, r->count)))
		return err;
	if ((err = xdr_enc_u32(x, r->committed)))
		return err;
	return xdr_enc_fixed(x, r->verf, NFS3_VERFSIZE);
}

int nfs3_enc_create(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_create_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if (r->status == NFS3_OK) {
		if ((err = xdr_enc_bool(x, r->fh_present)))
			return err;
		if (r->fh_present)
			if ((err = enc_fh(x, &r->fh)))
				return err;
		if ((err = enc_post(x, &r->obj)))
			return err;
	}
	return enc_wcc(x, &r->dir);
}

int nfs3_enc_rename(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_rename_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_wcc(x, &r->from)))
		return err;
	return enc_wcc(x, &r->to);
}

int nfs3_enc_link(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_link_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_post(x, &r->obj)))
		return err;
	return enc_wcc(x, &r->dir);
}

uint32_t nfs3_dirent_size(uint32_t namelen, bool plus, uint32_t fhlen)
{
	/* value_follows, fileid, name, cookie (+ attributes, handle) */
	uint32_t n = 4 + 8 + 4 + namelen + XDR_PAD(namelen) + 8;
	if (plus)
		n += 4 + NFS3_FATTR_SIZE + 4 + 4 + fhlen + XDR_PAD(fhlen);
	return n;
}

int nfs3_enc_readdir(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_readdir_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_post(x, &r->dir)))
		return err;
	if (r->status != NFS3_OK)
		return 0;
	if ((err = xdr_enc_fixed(x, r->verf, NFS3_VERFSIZE)))
		return err;
	for (uint32_t i = 0; i < r->nents; i++) {
		const struct nfs3_dirent *e = &r->ents[i];
		if ((err = xdr_enc_bool(x, true)))
			return err;
		if ((err = xdr_enc_u64(x, e->fileid)))
			return err;
		if ((err = xdr_enc_opaque(x, e->name, e->namelen)))
			return err;
		if ((err = xdr_enc_u64(x, e->cookie)))
			return err;
		if (r->plus) {
			if ((err = enc_post(x, &e->attr)))
				return err;
			if ((err = xdr_enc_bool(x, e->fh_present)))
				return err;
			if (e->fh_present)
				if ((err = enc_fh(x, &e->fh)))
					return err;
		}
	}
	if ((err = xdr_enc_bool(x, false)))
		return err;
	return xdr_enc_bool(x, r->eof);
}

int nfs3_enc_fsstat(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_fsstat_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_post(x, &r->obj)))
		return err;
	if (r->status != NFS3_OK)
		return 0;
	if ((err = xdr_enc_u64(x, r->tbytes)))
		return err;
	if ((err = xdr_enc_u64(x, r->fbytes)))
		return err;
	if ((err = xdr_enc_u64(x, r->abytes)))
		return err;
	if ((err = xdr_enc_u64(x, r->tfiles)))
		return err;
	if ((err = xdr_enc_u64(x, r->ffiles)))
		return err;
	if ((err = xdr_enc_u64(x, r->afiles)))
		return err;
	return xdr_enc_u32(x, r->invarsec);
}

int nfs3_enc_fsinfo(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_fsinfo_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_post(x, &r->obj)))
		return err;
	if (r->status != NFS3_OK)
		return 0;
	if ((err = xdr_enc_u32(x, r->rtmax)))
		return err;
	if ((err = xdr_enc_u32(x, r->rtpref)))
		return err;
	if ((err = xdr_enc_u32(x, r->rtmult)))
		return err;
	if ((err = xdr_enc_u32(x, r->wtmax)))
		return err;
	if ((err = xdr_enc_u32(x, r->wtpref)))
		return err;
	if ((err = xdr_enc_u32(x, r->wtmult)))
		return err;
	if ((err = xdr_enc_u32(x, r->dtpref)))
		return err;
	if ((err = xdr_enc_u64(x, r->maxfilesize)))
		return err;
	if ((err = enc_time(x, &r->time_delta)))
		return err;
	return xdr_enc_u32(x, r->properties);
}

int nfs3_enc_pathconf(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_pathconf_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_post(x, &r->obj)))
		return err;
	if (r->status != NFS3_OK)
		return 0;
	if ((err = xdr_enc_u32(x, r->linkmax)))
		return err;
	if ((err = xdr_enc_u32(x, r->name_max)))
		return err;
	if ((err = xdr_enc_bool(x, r->no_trunc)))
		return err;
	if ((err = xdr_enc_bool(x, r->chown_restricted)))
		return err;
	if ((err = xdr_enc_bool(x, r->case_insensitive)))
		return err;
	return xdr_enc_bool(x, r->case_preserving);
}

int nfs3_enc_commit(struct xdr_enc *x, const void *res)
{
	int err;
	const struct nfs3_commit_res *r = res;
	if ((err = xdr_enc_u32(x, r->status)))
		return err;
	if ((err = enc_wcc(x, &r->wcc)))
		return err;
	return r->status == NFS3_OK ? xdr_enc_fixed(x, r->verf, NFS3_VERFSIZE) : 0;
}
