/*
 * proto_nfs3.c - nfs-load's NFSv3 (RFC 1813) and MOUNT v3 client: the
 * calls of struct load_proto in XDR over a reconnecting connection
 * (rconn.h), each request encoded by hand and each reply decoded in full
 * (a reply that does not decode is LOAD_ERR_RPC, never a guess).
 *
 * CREATE sends UNCHECKED and GUARDED with the mode only, EXCLUSIVE with
 * the verifier (a client sets the mode with SETATTR afterwards, as RFC
 * 1813 §3.3.8 says). READDIR and READDIRPLUS ask for 4 KiB at a time so
 * that a directory of a few dozen names takes several calls and cookies
 * are exercised; the cookie verifier of the first reply is sent back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "load.h"
#include "rconn.h"

#define NFS_PROG   100003
#define MOUNT_PROG 100005

enum {
	P_NULL,
	P_GETATTR,
	P_SETATTR,
	P_LOOKUP,
	P_ACCESS,
	P_READLINK,
	P_READ,
	P_WRITE,
	P_CREATE,
	P_MKDIR,
	P_SYMLINK,
	P_MKNOD,
	P_REMOVE,
	P_RMDIR,
	P_RENAME,
	P_LINK,
	P_READDIR,
	P_READDIRPLUS,
	P_FSSTAT,
	P_FSINFO,
	P_PATHCONF,
	P_COMMIT
};

#define FH3_MAX	    64
#define NAME_MAX3   255
#define FATTR3_SIZE 84
#define DIR_COUNT   4096

struct nfs3_pd {
	struct rconn rc;
};

static struct rconn *rc_of(struct load_client *c)
{
	return &((struct nfs3_pd *)c->lc_pd)->rc;
}

const char *load_st_name(enum load_st st)
{
	static const char *const names[LOAD_NST] = {
		"ok",	     "noent",	 "exist",      "notempty", "nospc",	"stale",
		"badhandle", "io",	 "delay",      "isdir",	   "notdir",	"inval",
		"acces",     "not_sync", "bad_cookie", "other",	   "rpc_error", "conn_lost"};
	return st < LOAD_NST ? names[st] : "?";
}

static enum load_st map_status(uint32_t s)
{
	switch (s) {
	case 0:
		return LOAD_OK;
	case 2:
		return LOAD_NOENT;
	case 5:
		return LOAD_IO;
	case 13:
		return LOAD_ACCES;
	case 17:
		return LOAD_EXIST;
	case 20:
		return LOAD_NOTDIR;
	case 21:
		return LOAD_ISDIR;
	case 22:
		return LOAD_INVAL;
	case 28:
		return LOAD_NOSPC;
	case 66:
		return LOAD_NOTEMPTY;
	case 70:
		return LOAD_STALE;
	case 10001:
		return LOAD_BADHANDLE;
	case 10002:
		return LOAD_NOT_SYNC;
	case 10003:
		return LOAD_BAD_COOKIE;
	case 10008:
		return LOAD_DELAY;
	}
	return LOAD_OTHER;
}

/* ---- XDR pieces ---- */

static int enc_fh(struct xdr_enc *x, const struct load_fh *fh)
{
	return xdr_enc_opaque(x, fh->data, fh->len);
}

static int dec_fh(struct xdr_dec *x, struct load_fh *fh)
{
	return xdr_dec_opaque(x, fh->data, FH3_MAX, &fh->len);
}

static int dec_fattr(struct xdr_dec *x, struct load_attr *a)
{
	uint32_t type, mode, nlink, uid, gid, u32;
	uint64_t size, used, fsid, fileid;
	if (xdr_dec_u32(x, &type) || xdr_dec_u32(x, &mode) || xdr_dec_u32(x, &nlink) ||
	    xdr_dec_u32(x, &uid) || xdr_dec_u32(x, &gid) || xdr_dec_u64(x, &size) ||
	    xdr_dec_u64(x, &used) || xdr_dec_u32(x, &u32) || xdr_dec_u32(x, &u32) ||
	    xdr_dec_u64(x, &fsid) || xdr_dec_u64(x, &fileid) || xdr_dec_skip(x, 24))
		return -EBADMSG;
	a->la_valid = true;
	a->la_type = type == 1 ? LOAD_T_REG : type == 2 ? LOAD_T_DIR : LOAD_T_OTHER;
	a->la_mode = mode & 07777;
	a->la_nlink = nlink;
	a->la_size = size;
	a->la_fileid = fileid;
	return 0;
}

/* post_op_attr into a (NULL: skipped) */
static int dec_post_attr(struct xdr_dec *x, struct load_attr *a)
{
	bool follows;
	struct load_attr tmp;
	if (xdr_dec_bool(x, &follows))
		return -EBADMSG;
	if (a)
		a->la_valid = false;
	if (!follows)
		return 0;
	return dec_fattr(x, a ? a : &tmp);
}

static int dec_wcc(struct xdr_dec *x, struct load_attr *post)
{
	bool follows;
	if (xdr_dec_bool(x, &follows) || (follows && xdr_dec_skip(x, 24)))
		return -EBADMSG;
	return dec_post_attr(x, post);
}

static int enc_sattr(struct xdr_enc *x, const struct load_sattr *sa)
{
	int err = xdr_enc_bool(x, sa->set_mode);
	if (!err && sa->set_mode)
		err = xdr_enc_u32(x, sa->mode);
	if (!err)
		err = xdr_enc_bool(x, false) || xdr_enc_bool(x, false); /* uid, gid */
	if (!err)
		err = xdr_enc_bool(x, sa->set_size);
	if (!err && sa->set_size)
		err = xdr_enc_u64(x, sa->size);
	if (!err)
		err = xdr_enc_u32(x, 0) || xdr_enc_u32(x, 0); /* atime, mtime: DONT_CHANGE */
	return err ? -EMSGSIZE : 0;
}

/* ---- calls ---- */

/* Call an NFS procedure; on LOAD_OK from the transport, *st is the NFS
 * status and d is positioned after it. */
static enum load_st call(struct load_client *c, uint32_t proc,
			 int (*enc)(struct xdr_enc *, const void *), const void *args,
			 struct xdr_dec *d, enum load_st *st)
{
	struct rpc_reply_hdr rh;
	uint32_t status;
	int err = rconn_call(rc_of(c), NFS_PROG, 3, proc, enc, args, d, &rh);
	if (err == -ECONNRESET)
		return LOAD_ERR_CONN;
	if (err || xdr_dec_u32(d, &status)) {
		c->lc_cs.rpc_errors++;
		return LOAD_ERR_RPC;
	}
	*st = map_status(status);
	return LOAD_OK;
}

static enum load_st bad_reply(struct load_client *c)
{
	c->lc_cs.rpc_errors++;
	return LOAD_ERR_RPC;
}

struct dirop {
	const struct load_fh *dir;
	const char *name;
};

static int enc_dirop(struct xdr_enc *x, const void *p)
{
	const struct dirop *a = p;
	return enc_fh(x, a->dir) || xdr_enc_string(x, a->name) ? -EMSGSIZE : 0;
}

static int enc_fh_arg(struct xdr_enc *x, const void *p)
{
	return enc_fh(x, p) ? -EMSGSIZE : 0;
}

static int enc_path(struct xdr_enc *x, const void *p)
{
	return xdr_enc_string(x, p) ? -EMSGSIZE : 0;
}

static int nfs3_open(struct load_client *c, const struct load_conn_opts *o, struct load_fh *root)
{
	struct nfs3_pd *pd = xcalloc(1, sizeof(*pd));
	c->lc_pd = pd;
	int err = rconn_init(&pd->rc, c, o);
	if (err)
		return err;
	struct xdr_dec d;
	struct rpc_reply_hdr rh;
	uint32_t st;
	err = rconn_call(&pd->rc, MOUNT_PROG, 3, 1, enc_path, o->export_path, &d, &rh);
	if (err)
		return err;
	if (xdr_dec_u32(&d, &st))
		return -EBADMSG;
	if (st)
		return st == 2 ? -ENOENT : st == 13 ? -EACCES : -EIO;
	return dec_fh(&d, root) ? -EBADMSG : 0;
}

static void nfs3_close(struct load_client *c)
{
	struct nfs3_pd *pd = c->lc_pd;
	if (!pd)
		return;
	rconn_destroy(&pd->rc);
	free(pd);
	c->lc_pd = NULL;
}

static enum load_st nfs3_lookup(struct load_client *c, const struct load_fh *dir, const char *name,
				struct load_fh *fh, struct load_attr *a)
{
	struct dirop args = {dir, name};
	struct xdr_dec d;
	enum load_st st, t = call(c, P_LOOKUP, enc_dirop, &args, &d, &st);
	if (t)
		return t;
	if (st == LOAD_OK && (dec_fh(&d, fh) || dec_post_attr(&d, a) || dec_post_attr(&d, NULL)))
		return bad_reply(c);
	return st;
}

static enum load_st nfs3_getattr(struct load_client *c, const struct load_fh *fh,
				 struct load_attr *a)
{
	struct xdr_dec d;
	enum load_st st, t = call(c, P_GETATTR, enc_fh_arg, fh, &d, &st);
	if (t)
		return t;
	if (st == LOAD_OK && dec_fattr(&d, a))
		return bad_reply(c);
	return st;
}

struct setattr_args {
	const struct load_fh *fh;
	const struct load_sattr *sa;
};

static int enc_setattr(struct xdr_enc *x, const void *p)
{
	const struct setattr_args *a = p;
	return enc_fh(x, a->fh) || enc_sattr(x, a->sa) || xdr_enc_bool(x, false) ? -EMSGSIZE : 0;
}

static enum load_st nfs3_setattr(struct load_client *c, const struct load_fh *fh,
				 const struct load_sattr *sa, struct load_attr *post)
{
	struct setattr_args args = {fh, sa};
	struct xdr_dec d;
	enum load_st st, t = call(c, P_SETATTR, enc_setattr, &args, &d, &st);
	if (t)
		return t;
	if (dec_wcc(&d, post))
		return bad_reply(c);
	return st;
}

struct create_args {
	struct dirop where;
	enum load_create how;
	const uint8_t *verf;
	uint32_t mode;
	bool dir;
};

static int enc_create(struct xdr_enc *x, const void *p)
{
	const struct create_args *a = p;
	struct load_sattr sa = {.set_mode = true, .mode = a->mode};
	if (enc_dirop(x, &a->where))
		return -EMSGSIZE;
	if (a->dir)
		return enc_sattr(x, &sa);
	if (xdr_enc_u32(x, a->how))
		return -EMSGSIZE;
	if (a->how == LOAD_EXCLUSIVE)
		return xdr_enc_fixed(x, a->verf, LOAD_VERF_LEN) ? -EMSGSIZE : 0;
	return enc_sattr(x, &sa);
}

static enum load_st create_common(struct load_client *c, uint32_t proc,
				  const struct create_args *args, struct load_fh *fh,
				  struct load_attr *a)
{
	struct xdr_dec d;
	enum load_st st, t = call(c, proc, enc_create, args, &d, &st);
	bool follows;
	if (t)
		return t;
	if (st != LOAD_OK)
		return dec_wcc(&d, NULL) ? bad_reply(c) : st;
	if (xdr_dec_bool(&d, &follows) || (follows && dec_fh(&d, fh)) || dec_post_attr(&d, a) ||
	    dec_wcc(&d, NULL))
		return bad_reply(c);
	if (!follows) {
		/* the server may leave the handle out: a client looks it up */
		enum load_st l = nfs3_lookup(c, args->where.dir, args->where.name, fh, a);
		return l;
	}
	return LOAD_OK;
}

static enum load_st nfs3_create(struct load_client *c, const struct load_fh *dir, const char *name,
				enum load_create how, const uint8_t verf[LOAD_VERF_LEN],
				uint32_t mode, struct load_fh *fh, struct load_attr *a)
{
	struct create_args args = {{dir, name}, how, verf, mode, false};
	return create_common(c, P_CREATE, &args, fh, a);
}

static enum load_st nfs3_mkdir(struct load_client *c, const struct load_fh *dir, const char *name,
			       uint32_t mode, struct load_fh *fh, struct load_attr *a)
{
	struct create_args args = {{dir, name}, LOAD_UNCHECKED, NULL, mode, true};
	return create_common(c, P_MKDIR, &args, fh, a);
}

static enum load_st remove_common(struct load_client *c, uint32_t proc, const struct load_fh *dir,
				  const char *name)
{
	struct dirop args = {dir, name};
	struct xdr_dec d;
	enum load_st st, t = call(c, proc, enc_dirop, &args, &d, &st);
	if (t)
		return t;
	return dec_wcc(&d, NULL) ? bad_reply(c) : st;
}

static enum load_st nfs3_remove(struct load_client *c, const struct load_fh *dir, const char *name)
{
	return remove_common(c, P_REMOVE, dir, name);
}

static enum load_st nfs3_rmdir(struct load_client *c, const struct load_fh *dir, const char *name)
{
	return remove_common(c, P_RMDIR, dir, name);
}

struct rename_args {
	struct dirop from, to;
};

static int enc_rename(struct xdr_enc *x, const void *p)
{
	const struct rename_args *a = p;
	return enc_dirop(x, &a->from) || enc_dirop(x, &a->to) ? -EMSGSIZE : 0;
}

static enum load_st nfs3_rename(struct load_client *c, const struct load_fh *fdir,
				const char *fname, const struct load_fh *tdir, const char *tname)
{
	struct rename_args args = {{fdir, fname}, {tdir, tname}};
	struct xdr_dec d;
	enum load_st st, t = call(c, P_RENAME, enc_rename, &args, &d, &st);
	if (t)
		return t;
	return dec_wcc(&d, NULL) || dec_wcc(&d, NULL) ? bad_reply(c) : st;
}

struct link_args {
	const struct load_fh *fh;
	struct dirop to;
};

static int enc_link(struct xdr_enc *x, const void *p)
{
	const struct link_args *a = p;
	return enc_fh(x, a->fh) || enc_dirop(x, &a->to) ? -EMSGSIZE : 0;
}

static enum load_st nfs3_link(struct load_client *c, const struct load_fh *fh,
			      const struct load_fh *dir, const char *name)
{
	struct link_args args = {fh, {dir, name}};
	struct xdr_dec d;
	enum load_st st, t = call(c, P_LINK, enc_link, &args, &d, &st);
	if (t)
		return t;
	return dec_post_attr(&d, NULL) || dec_wcc(&d, NULL) ? bad_reply(c) : st;
}

struct write_args {
	const struct load_fh *fh;
	uint64_t off;
	uint32_t len;
	enum load_stable how;
	const void *buf;
};

static int enc_write(struct xdr_enc *x, const void *p)
{
	const struct write_args *a = p;
	return enc_fh(x, a->fh) || xdr_enc_u64(x, a->off) || xdr_enc_u32(x, a->len) ||
			       xdr_enc_u32(x, a->how) || xdr_enc_opaque(x, a->buf, a->len)
		       ? -EMSGSIZE
		       : 0;
}

static enum load_st nfs3_write(struct load_client *c, const struct load_fh *fh, uint64_t off,
			       const void *buf, uint32_t len, enum load_stable how, uint32_t *count,
			       enum load_stable *committed, uint8_t verf[LOAD_VERF_LEN])
{
	struct write_args args = {fh, off, len, how, buf};
	struct xdr_dec d;
	uint32_t cnt, comm;
	enum load_st st, t = call(c, P_WRITE, enc_write, &args, &d, &st);
	if (t)
		return t;
	if (dec_wcc(&d, NULL))
		return bad_reply(c);
	if (st != LOAD_OK)
		return st;
	if (xdr_dec_u32(&d, &cnt) || xdr_dec_u32(&d, &comm) || comm > 2 ||
	    xdr_dec_fixed(&d, verf, LOAD_VERF_LEN))
		return bad_reply(c);
	*count = cnt;
	*committed = (enum load_stable)comm;
	return LOAD_OK;
}

struct commit_args {
	const struct load_fh *fh;
};

static int enc_commit(struct xdr_enc *x, const void *p)
{
	const struct commit_args *a = p;
	return enc_fh(x, a->fh) || xdr_enc_u64(x, 0) || xdr_enc_u32(x, 0) ? -EMSGSIZE : 0;
}

static enum load_st nfs3_commit(struct load_client *c, const struct load_fh *fh,
				uint8_t verf[LOAD_VERF_LEN])
{
	struct commit_args args = {fh};
	struct xdr_dec d;
	enum load_st st, t = call(c, P_COMMIT, enc_commit, &args, &d, &st);
	if (t)
		return t;
	if (dec_wcc(&d, NULL))
		return bad_reply(c);
	if (st == LOAD_OK && xdr_dec_fixed(&d, verf, LOAD_VERF_LEN))
		return bad_reply(c);
	return st;
}

struct read_args {
	const struct load_fh *fh;
	uint64_t off;
	uint32_t len;
};

static int enc_read(struct xdr_enc *x, const void *p)
{
	const struct read_args *a = p;
	return enc_fh(x, a->fh) || xdr_enc_u64(x, a->off) || xdr_enc_u32(x, a->len) ? -EMSGSIZE : 0;
}

static enum load_st nfs3_read(struct load_client *c, const struct load_fh *fh, uint64_t off,
			      uint32_t len, void *buf, uint32_t *n, bool *eof)
{
	struct read_args args = {fh, off, len};
	struct xdr_dec d;
	uint32_t cnt, dlen;
	const void *data;
	enum load_st st, t = call(c, P_READ, enc_read, &args, &d, &st);
	if (t)
		return t;
	if (dec_post_attr(&d, NULL))
		return bad_reply(c);
	if (st != LOAD_OK)
		return st;
	if (xdr_dec_u32(&d, &cnt) || xdr_dec_bool(&d, eof) ||
	    xdr_dec_opaque_ref(&d, len, &data, &dlen) || dlen != cnt)
		return bad_reply(c);
	memcpy(buf, data, dlen);
	*n = dlen;
	return LOAD_OK;
}

struct readdir_args {
	const struct load_fh *dir;
	uint64_t cookie;
	uint8_t verf[8];
	bool plus;
};

static int enc_readdir(struct xdr_enc *x, const void *p)
{
	const struct readdir_args *a = p;
	if (enc_fh(x, a->dir) || xdr_enc_u64(x, a->cookie) || xdr_enc_fixed(x, a->verf, 8) ||
	    xdr_enc_u32(x, DIR_COUNT))
		return -EMSGSIZE;
	return a->plus && xdr_enc_u32(x, 4 * DIR_COUNT) ? -EMSGSIZE : 0;
}

static enum load_st nfs3_readdir(struct load_client *c, const struct load_fh *dir, bool plus,
				 load_dirent_fn fn, void *arg)
{
	struct readdir_args args = {.dir = dir, .plus = plus};
	for (unsigned round = 0; round < 100000; round++) {
		struct xdr_dec d;
		enum load_st st,
			t = call(c, plus ? P_READDIRPLUS : P_READDIR, enc_readdir, &args, &d, &st);
		if (t)
			return t;
		if (dec_post_attr(&d, NULL))
			return bad_reply(c);
		if (st != LOAD_OK)
			return st;
		if (xdr_dec_fixed(&d, args.verf, 8))
			return bad_reply(c);
		bool follows, eof;
		for (;;) {
			char name[NAME_MAX3 + 1];
			uint64_t fileid, cookie;
			struct load_attr a = {0};
			if (xdr_dec_bool(&d, &follows))
				return bad_reply(c);
			if (!follows)
				break;
			if (xdr_dec_u64(&d, &fileid) || xdr_dec_string(&d, name, NAME_MAX3) ||
			    xdr_dec_u64(&d, &cookie))
				return bad_reply(c);
			if (plus) {
				bool hf;
				struct load_fh fh;
				if (dec_post_attr(&d, &a) || xdr_dec_bool(&d, &hf) ||
				    (hf && dec_fh(&d, &fh)))
					return bad_reply(c);
			}
			args.cookie = cookie;
			if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
				continue;
			if (fn(arg, name, fileid, plus && a.la_valid ? &a : NULL))
				return LOAD_OK;
		}
		if (xdr_dec_bool(&d, &eof))
			return bad_reply(c);
		if (eof)
			return LOAD_OK;
	}
	return LOAD_OTHER; /* a directory that never ends */
}

static enum load_st nfs3_fsstat(struct load_client *c, const struct load_fh *fh, uint64_t *avail)
{
	struct xdr_dec d;
	uint64_t tbytes, fbytes;
	enum load_st st, t = call(c, P_FSSTAT, enc_fh_arg, fh, &d, &st);
	if (t)
		return t;
	if (dec_post_attr(&d, NULL))
		return bad_reply(c);
	if (st != LOAD_OK)
		return st;
	if (xdr_dec_u64(&d, &tbytes) || xdr_dec_u64(&d, &fbytes) || xdr_dec_u64(&d, avail))
		return bad_reply(c);
	return LOAD_OK;
}

const struct load_proto load_nfs3 = {
	.name = "nfs3",
	.open = nfs3_open,
	.close = nfs3_close,
	.lookup = nfs3_lookup,
	.getattr = nfs3_getattr,
	.setattr = nfs3_setattr,
	.create = nfs3_create,
	.mkdir = nfs3_mkdir,
	.remove = nfs3_remove,
	.rmdir = nfs3_rmdir,
	.rename = nfs3_rename,
	.link = nfs3_link,
	.write = nfs3_write,
	.commit = nfs3_commit,
	.read = nfs3_read,
	.readdir = nfs3_readdir,
	.fsstat = nfs3_fsstat,
};
