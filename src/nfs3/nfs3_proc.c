/*
 * nfs3_proc.c - the NFSv3 procedures (RFC 1813 §3.3): wire arguments to
 * the calls of the shared server layer, its answers back to wire results.
 *
 * Nothing is decided here that another protocol would decide the same
 * way: admission, squashing and the export a handle names are
 * srv_fh_resolve's (the first handle of a call fixes the export, a second
 * one must be of the same export: XDEV); who may do what, and the
 * operations themselves, are srv/vfs.h's (src/srv/perm.h has the rules,
 * docs/permissions.md the table); the write verifier is srv_write_verf's;
 * waiting for stability is srv_reply_stable's. What stays is NFSv3's own:
 * which procedure needs which call, the checks RFC 1813 and knfsd make of
 * the wire arguments before anything else (a name with '/', a directory
 * operation on a file), and the shape of the results.
 *
 * Arguments and results are the types generated from src/xdr/nfs3.x
 * (docs/xdr.md), decoded and encoded by the generated codecs the
 * procedure table names. A result is a union on its status: the success
 * arm (resok) or the failure arm (resfail). Where the failure arm is the
 * first member(s) of the success arm - every result but LOOKUP's and the
 * four creates' - a handler fills resok and the encoder sends the common
 * part for a failure (a union's structures with a common initial
 * sequence, C11 6.5.2.3); the others fill the arm their status names.
 * Names and WRITE data point into the request's record, READ data is
 * spliced into the reply: nothing is copied.
 *
 * Stability. A procedure that changed something leaves in its struct
 * call the sequence its reply waits for (its own transaction's on a sync
 * export, rule 7; the file's sync sequence for a stable WRITE and for
 * COMMIT, rule 8, with the data device too) and ends with reply(), which
 * hands that to srv_reply_stable. A parked request that runs again goes to
 * the version's resume hook (svc.h), nfs3_resume, which only ends the wait
 * (srv_stable_resume): a procedure runs once. A wait that fails (the
 * journal shut down) turns the reply into NFS3ERR_IO (the failed
 * callbacks).
 *
 * The write verifier moves when a write or flush of the data device fails:
 * a WRITE reads it before its data goes to the engine, a COMMIT once its
 * data is durable (srv_reply_committed), so a failure in between makes
 * them differ and the client sends its unstable data again. A stable
 * WRITE reads the data mark there too: a flush that fails, whoever ran it,
 * before its wait ends makes it NFS3ERR_IO (srv.h S1), since its client
 * keeps no copy to send again.
 *
 * Weak cache consistency: the engine takes "pre" and "post" under the lock
 * that orders the change (struct fs_result in fs.h), so no other client's
 * change falls between them; a client whose cache matches "pre" may adopt
 * "post". Where the engine changed nothing, one snapshot is both. The
 * SETATTR guard is compared by the engine under the same lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "base/msg.h"
#include "nfs3/nfs3.h"
#include "srv/vfs.h"
#include "xdr/nfs3.h"

#define NFS3_NAME_MAX	255
#define NFS3_MAXDATA	(1u << 20) /* READ and WRITE, as FSINFO says */
#define NFS3_MAXPATH	NFS3_LIMIT_nfspath3
#define NFS3_DIRMAX	(256u << 10) /* largest READDIR reply we build */
#define NFS3_FATTR_SIZE 84	     /* an encoded fattr3 */
#define READDIR_RES_HDR (4 + 4 + NFS3_FATTR_SIZE + NFS3_COOKIEVERFSIZE + 4 + 4)

_Static_assert(NFS3_MAXDATA == NFS3_LIMIT_WRITE3args_data &&
		       NFS3_MAXDATA == NFS3_LIMIT_READ3resok_data,
	       "the transfer size FSINFO offers is what the codecs take");
_Static_assert(NFS3_CREATEVERFSIZE == SRV_CREATEVERF_SIZE, "one exclusive-create verifier");
_Static_assert(NFS3_WRITEVERFSIZE == 8, "srv_write_verf's size");
_Static_assert(NFS3_COOKIEVERFSIZE == 8, "srv_cookie_verf's size");
_Static_assert(FH_SIZE <= NFS3_FHSIZE, "our handles fit NFSv3's");

/* One call: its caller, the export its first handle named, and when its
 * reply may go. */
struct call {
	struct srv *srv;
	struct svc_req *rq;
	const struct rpc_cred *rc;
	struct srv_exp e;     /* e.ex is NULL until the first handle names the export */
	uint64_t csn;	      /* the reply waits until this sequence is durable */
	bool data;	      /* ... and the data device holds what was written */
	uint64_t data_mark;   /* ... with no data flush failed since (srv.h S1) */
	uint8_t *verf;	      /* COMMIT: the write verifier, read once it is */
	srv_failed_fn failed; /* makes the result NFS3ERR_IO when the wait fails */
	void *failed_arg;
};

static void call_init(struct call *c, struct svc_req *rq, const struct rpc_cred *rc)
{
	const struct nfs3_server *s = svc_req_ctx(rq);
	*c = (struct call){.srv = s->srv, .rq = rq, .rc = rc};
}

nfsstat3 nfs3_status(int err)
{
	switch (err) {
	case 0:
		return NFS3_OK;
	case -EPERM:
		return NFS3ERR_PERM;
	case -ENOENT:
		return NFS3ERR_NOENT;
	case -EIO:
	case -EUCLEAN:
	case -EBADMSG:
		return NFS3ERR_IO;
	case -ENXIO:
		return NFS3ERR_NXIO;
	case -EACCES:
		return NFS3ERR_ACCES;
	case -EEXIST:
		return NFS3ERR_EXIST;
	case -EXDEV:
		return NFS3ERR_XDEV;
	case -ENODEV:
		return NFS3ERR_NODEV;
	case -ENOTDIR:
		return NFS3ERR_NOTDIR;
	case -EISDIR:
		return NFS3ERR_ISDIR;
	case -EINVAL:
	case -ELOOP:
		return NFS3ERR_INVAL;
	case -EFBIG:
		return NFS3ERR_FBIG;
	case -ENOSPC:
		return NFS3ERR_NOSPC;
	case -EROFS:
		return NFS3ERR_ROFS;
	case -EMLINK:
		return NFS3ERR_MLINK;
	case -ENAMETOOLONG:
		return NFS3ERR_NAMETOOLONG;
	case -ENOTEMPTY:
		return NFS3ERR_NOTEMPTY;
	case -EDQUOT:
		return NFS3ERR_DQUOT;
	case -ESTALE:
		return NFS3ERR_STALE;
	case -SRV_EBADHANDLE:
		return NFS3ERR_BADHANDLE;
	case -EOPNOTSUPP:
		return NFS3ERR_NOTSUPP;
	case -ECANCELED:
		return NFS3ERR_NOT_SYNC; /* only fs_setattr's guard */
	case -EWOULDBLOCK:
	case -EINPROGRESS:
	case -ENOMEM:
		return NFS3ERR_JUKEBOX;
	}
	msg_warn("nfs3: unexpected engine error %d (%s)", err, strerror(-err));
	return NFS3ERR_SERVERFAULT;
}

/* ---- handles and names ---- */

/* The inode a wire handle names, for this caller (see the header). */
static nfsstat3 fh_get(struct call *c, const struct nfs_fh3 *fh, struct fs_inode **ip)
{
	struct fh h;
	*ip = NULL;
	int err = srv_fh_decode(c->srv, fh->data.val, fh->data.len, &h);
	if (!err)
		err = srv_fh_resolve(c->srv, c->rq, c->rc, &h, &c->e, ip);
	return nfs3_status(err);
}

static void fh_make(const struct call *c, const struct fs_attr *a, struct nfs_fh3 *out)
{
	srv_fh_make(c->srv, c->e.ex, a, out->data.val);
	out->data.len = FH_SIZE;
}

/* As knfsd's check_filename: empty or with '/' or NUL is ACCES. */
static nfsstat3 name_check(const filename3 *n)
{
	if (n->len == 0 || memchr(n->val, '/', n->len) || memchr(n->val, '\0', n->len))
		return NFS3ERR_ACCES;
	if (n->len > NFS3_NAME_MAX)
		return NFS3ERR_NAMETOOLONG;
	return NFS3_OK;
}

/* A directory operation on something else is NOTDIR, before any
 * permission check (as knfsd's fh_verify(S_IFDIR)). */
static nfsstat3 is_dir(struct fs_inode *ip)
{
	struct fs_attr a;
	int err = fs_getattr(ip, &a);
	if (err)
		return nfs3_status(err);
	return S_ISDIR(a.mode) ? NFS3_OK : NFS3ERR_NOTDIR;
}

/* ---- attributes ---- */

static struct nfstime3 ts3(struct timespec t)
{
	return (struct nfstime3){.seconds = (uint32_t)t.tv_sec, .nseconds = (uint32_t)t.tv_nsec};
}

static void fattr3_of(const struct call *c, const struct fs_attr *a, struct fattr3 *f)
{
	switch (a->mode & S_IFMT) {
	case S_IFDIR:
		f->type = NF3DIR;
		break;
	case S_IFLNK:
		f->type = NF3LNK;
		break;
	case S_IFBLK:
		f->type = NF3BLK;
		break;
	case S_IFCHR:
		f->type = NF3CHR;
		break;
	case S_IFSOCK:
		f->type = NF3SOCK;
		break;
	case S_IFIFO:
		f->type = NF3FIFO;
		break;
	default:
		f->type = NF3REG;
		break;
	}
	f->mode = a->mode & 07777;
	f->nlink = a->nlink;
	f->uid = a->uid;
	f->gid = a->gid;
	f->size = a->size;
	f->used = a->used;
	f->rdev.specdata1 = major(a->rdev);
	f->rdev.specdata2 = minor(a->rdev);
	f->fsid = c->e.ex->fsid;
	f->fileid = a->ino;
	f->atime = ts3(a->atime);
	f->mtime = ts3(a->mtime);
	f->ctime = ts3(a->ctime);
}

static void post_attr_of(const struct call *c, const struct fs_attr *a, struct post_op_attr *p)
{
	p->attributes_follow = true;
	fattr3_of(c, a, &p->attributes);
}

static void post_attr(const struct call *c, struct fs_inode *ip, struct post_op_attr *p)
{
	struct fs_attr a;
	if (ip && !fs_getattr(ip, &a))
		post_attr_of(c, &a, p);
}

/*
 * Weak cache consistency for ip: what the engine reported in res->ino[slot]
 * (taken under the inode's lock: "pre" only when no other change came
 * between it and "post"), or, when the call never changed the inode (res
 * NULL, an error before the change, nothing to do), one snapshot as both.
 */
static void wcc_set(const struct call *c, struct fs_inode *ip, const struct fs_result *res,
		    unsigned slot, struct wcc_data *w)
{
	const struct fs_res_ino *ri = res ? &res->ino[slot] : NULL;
	struct fs_attr snap;
	const struct fs_attr *post = NULL;
	struct fs_wcc pre = {0};
	bool has_pre = false;
	if (ri && ri->has_post) {
		post = &ri->post;
		has_pre = ri->has_pre;
		pre = ri->pre;
	} else if (ip && !fs_getattr(ip, &snap)) {
		post = &snap;
		has_pre = true;
		pre = (struct fs_wcc){.size = snap.size, .mtime = snap.mtime, .ctime = snap.ctime};
	}
	w->before.attributes_follow = has_pre;
	if (has_pre)
		w->before.attributes = (struct wcc_attr){
			.size = pre.size, .mtime = ts3(pre.mtime), .ctime = ts3(pre.ctime)};
	if (post)
		post_attr_of(c, post, &w->after);
}

static void sattr_to_fs(const struct sattr3 *sa, struct fs_setattr *fsa)
{
	memset(fsa, 0, sizeof(*fsa));
	if (sa->mode.set_it) {
		fsa->mask |= FS_SET_MODE;
		fsa->mode = sa->mode.mode & 07777;
	}
	if (sa->uid.set_it) {
		fsa->mask |= FS_SET_UID;
		fsa->uid = sa->uid.uid;
	}
	if (sa->gid.set_it) {
		fsa->mask |= FS_SET_GID;
		fsa->gid = sa->gid.gid;
	}
	if (sa->size.set_it) {
		fsa->mask |= FS_SET_SIZE;
		fsa->size = sa->size.size;
	}
	if (sa->atime.set_it == SET_TO_SERVER_TIME)
		fsa->mask |= FS_SET_ATIME_NOW;
	if (sa->atime.set_it == SET_TO_CLIENT_TIME) {
		fsa->mask |= FS_SET_ATIME;
		fsa->atime = (struct timespec){sa->atime.atime.seconds, sa->atime.atime.nseconds};
	}
	if (sa->mtime.set_it == SET_TO_SERVER_TIME)
		fsa->mask |= FS_SET_MTIME_NOW;
	if (sa->mtime.set_it == SET_TO_CLIENT_TIME) {
		fsa->mask |= FS_SET_MTIME;
		fsa->mtime = (struct timespec){sa->mtime.mtime.seconds, sa->mtime.mtime.nseconds};
	}
}

/* ---- stability ---- */

/* The wait for stability failed: the reply says NFS3ERR_IO (arg: the
 * status of a result whose failure arm is a prefix of its success arm). */
static void fail_io(void *arg, int err)
{
	nfsstat3 *status = arg;
	*status = NFS3ERR_IO;
}

/* A metadata change (rule 7): on a sync export its reply waits for the
 * change's own sequence, on an async one it goes at once. */
static void reply_when_durable(struct call *c, uint64_t csn, srv_failed_fn failed, void *arg)
{
	if (c->e.opts && c->e.opts->sync)
		c->csn = csn;
	c->failed = failed;
	c->failed_arg = arg;
}

/* The reply of a procedure that changed something goes once what c says it
 * waits for is durable (at once when nothing); its rerun is nfs3_resume. */
static enum svc_stat reply(struct call *c)
{
	if (c->verf)
		return srv_reply_committed(c->srv, c->rq, c->csn, c->verf, c->failed,
					   c->failed_arg);
	return srv_reply_stable(c->srv, c->rq, c->csn, c->data, c->data_mark, c->failed,
				c->failed_arg);
}

/* The version's resume hook (svc.h): a parked request runs again only to
 * end its reply's wait; the procedure itself ran once. */
static enum svc_stat nfs3_resume(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	const struct nfs3_server *s = svc_req_ctx(rq);
	return srv_stable_resume(s->srv, rq);
}

/* ---- GETATTR, SETATTR, LOOKUP, ACCESS, READLINK ---- */

static enum svc_stat nfs3_null(struct svc_req *rq, const struct rpc_cred *rc, void *args, void *res)
{
	return SVC_OK;
}

static enum svc_stat nfs3_getattr(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				  void *res)
{
	struct GETATTR3args *a = args;
	struct GETATTR3res *r = res;
	struct call c;
	struct fs_inode *ip;
	struct fs_attr at;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->object, &ip)))
		return SVC_OK;
	if (!(r->status = nfs3_status(fs_getattr(ip, &at))))
		fattr3_of(&c, &at, &r->resok.obj_attributes);
	fs_iput(ip);
	return SVC_OK;
}

static enum svc_stat nfs3_setattr(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				  void *res)
{
	struct SETATTR3args *a = args;
	struct SETATTR3res *r = res;
	struct fs_inode *ip;
	struct fs_setattr fsa;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	struct call c;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->object, &ip)))
		return SVC_OK;
	sattr_to_fs(&a->new_attributes, &fsa);
	if (a->guard.check) {
		/* compared by the engine under the lock that orders the change */
		fsa.mask |= FS_SET_GUARD;
		fsa.guard_ctime =
			(struct timespec){a->guard.obj_ctime.seconds, a->guard.obj_ctime.nseconds};
	}
	r->status = nfs3_status(srv_setattr(&c.e, ip, &fsa, &fr));
	wcc_set(&c, ip, &fr, 0, &r->resok.obj_wcc);
	fs_iput(ip);
	reply_when_durable(&c, fr.csn, fail_io, &r->status);
	return reply(&c);
}

static enum svc_stat nfs3_lookup(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct LOOKUP3args *a = args;
	struct LOOKUP3res *r = res;
	const filename3 *nm = &a->what.name;
	struct call c;
	struct fs_inode *dp, *ip = NULL;
	struct fs_attr at;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->what.dir, &dp)))
		return SVC_OK;
	if ((r->status = is_dir(dp)) || (r->status = name_check(nm)))
		goto out;
	/* ".." never climbs out of the export */
	int err = srv_lookup(&c.e, dp, nm->val, nm->len, &ip);
	if (!err)
		err = fs_getattr(ip, &at);
	if (!(r->status = nfs3_status(err))) {
		fh_make(&c, &at, &r->resok.object);
		post_attr_of(&c, &at, &r->resok.obj_attributes);
	}
	if (ip)
		fs_iput(ip);
out:
	post_attr(&c, dp, r->status ? &r->resfail.dir_attributes : &r->resok.dir_attributes);
	fs_iput(dp);
	return SVC_OK;
}

static enum svc_stat nfs3_access(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct ACCESS3args *a = args;
	struct ACCESS3res *r = res;
	struct call c;
	struct fs_inode *ip;
	struct fs_attr at;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->object, &ip)))
		return SVC_OK;
	if (!(r->status = nfs3_status(fs_getattr(ip, &at)))) {
		r->resok.access = srv_access(&c.e.cred, c.e.opts, &at, a->access);
		post_attr_of(&c, &at, &r->resok.obj_attributes);
	}
	fs_iput(ip);
	return SVC_OK;
}

/* READLINK's result and the buffer its path is in (freed by release). */
struct readlink_res {
	struct READLINK3res r; /* first: what the encoder sees */
	char *buf;
};

static enum svc_stat nfs3_readlink(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				   void *res)
{
	struct READLINK3args *a = args;
	struct readlink_res *rr = res;
	struct READLINK3res *r = &rr->r;
	struct call c;
	struct fs_inode *ip;
	size_t len = 0;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->symlink, &ip)))
		return SVC_OK;
	rr->buf = xmalloc(NFS3_MAXPATH);
	r->status = nfs3_status(fs_readlink(ip, rr->buf, NFS3_MAXPATH, &len));
	r->resok.data = (nfspath3){.len = (uint32_t)len, .val = rr->buf};
	post_attr(&c, ip, &r->resok.symlink_attributes);
	fs_iput(ip);
	return SVC_OK;
}

static void nfs3_release_readlink(void *args, void *res)
{
	free(((struct readlink_res *)res)->buf);
}

/* ---- READ, WRITE, COMMIT ---- */

/* READ's result and the buffer its data is in (spliced into the reply,
 * freed by release). */
struct read_res {
	struct READ3res r; /* first: what the encoder sees */
	uint8_t *buf;
};

static enum svc_stat nfs3_read(struct svc_req *rq, const struct rpc_cred *rc, void *args, void *res)
{
	struct READ3args *a = args;
	struct read_res *rr = res;
	struct READ3res *r = &rr->r;
	struct call c;
	struct fs_inode *ip;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->file, &ip)))
		return SVC_OK;
	if ((r->status = nfs3_status(srv_may_read(&c.e, ip))))
		goto out;
	uint32_t count = a->count < NFS3_MAXDATA ? a->count : NFS3_MAXDATA;
	size_t n = 0;
	bool eof = false;
	/* aligned for direct I/O when large (the device reads straight into
	 * it), and from the buffer cache (base/iobuf.h) */
	rr->buf = iobuf_alloc(count);
	r->status = nfs3_status(fs_read(ip, a->offset, rr->buf, count, &n, &eof));
	r->resok.count = (uint32_t)n;
	r->resok.eof = eof;
	r->resok.data.len = (uint32_t)n;
	r->resok.data.val = rr->buf;
out:
	post_attr(&c, ip, &r->resok.file_attributes);
	fs_iput(ip);
	return SVC_OK;
}

static void nfs3_release_read(void *args, void *res)
{
	iobuf_free(((struct read_res *)res)->buf);
}

static enum svc_stat nfs3_write(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	struct WRITE3args *a = args;
	struct WRITE3res *r = res;
	struct fs_inode *ip;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	struct call c;
	call_init(&c, rq, rc);
	/* both before the data goes to the engine: a flush that fails after
	 * it moves the verifier (rule 8) and fails a stable reply (srv.h S1) */
	if (a->stable != UNSTABLE)
		c.data_mark = srv_data_mark(c.srv);
	srv_write_verf(c.srv, r->resok.verf);
	if ((r->status = fh_get(&c, &a->file, &ip)))
		return SVC_OK;
	if (a->count != a->data.len) {
		r->status = NFS3ERR_INVAL; /* the count disagrees with the data */
		goto out;
	}
	/* a stable write may go through the journal (docs/logged-data.md):
	 * then forcing its sequence makes the data durable, with no flush */
	bool logged;
	r->status = nfs3_status(srv_write(&c.e, ip, a->offset, a->data.val, a->count,
					  a->stable != UNSTABLE, &fr, &logged));
	if (r->status)
		goto out;
	r->resok.count = a->count;
	r->resok.committed = a->stable;
	if (a->stable != UNSTABLE) {
		/* rule 8: DATA_SYNC is an fdatasync, FILE_SYNC an fsync */
		c.csn = fs_sync_seq(ip, a->stable == DATA_SYNC);
		c.data = !logged;
		c.failed = fail_io;
		c.failed_arg = &r->status;
	}
out:
	wcc_set(&c, ip, &fr, 0, &r->resok.file_wcc);
	fs_iput(ip);
	return reply(&c);
}

/* COMMIT is an fsync of the whole file (rule 8): the range is not used,
 * since the engine tracks durability per inode, not per range. */
static enum svc_stat nfs3_commit(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct COMMIT3args *a = args;
	struct COMMIT3res *r = res;
	struct fs_inode *ip;
	struct call c;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->file, &ip)))
		return SVC_OK;
	wcc_set(&c, ip, NULL, 0, &r->resok.file_wcc); /* COMMIT changes no attribute */
	/* a force and a device flush on demand: as knfsd, only for a caller
	 * who may write the file, and never on a read-only export */
	if (!(r->status = nfs3_status(srv_may_commit(&c.e, ip)))) {
		c.csn = fs_sync_seq(ip, false);
		c.data = true;
		c.verf = r->resok.verf; /* read once the data is durable */
		c.failed = fail_io;
		c.failed_arg = &r->status;
	}
	fs_iput(ip);
	return reply(&c);
}

/* ---- CREATE, MKDIR, SYMLINK, MKNOD ---- */

enum create_kind { CR_FILE, CR_DIR, CR_SYMLINK, CR_NODE };

/*
 * The four procedures' results: RFC 1813 gives each a type of its own,
 * all of one shape. The kind says which member is in use; created_of()
 * finds its parts.
 */
struct create_res {
	union {
		struct CREATE3res create;
		struct MKDIR3res mkdir;
		struct SYMLINK3res symlink;
		struct MKNOD3res mknod;
	}; /* first: what the encoder sees */
	enum create_kind kind;
};

struct created {
	nfsstat3 *status;
	struct post_op_fh3 *obj;     /* success arm */
	struct post_op_attr *attr;   /* success arm */
	struct wcc_data *dir, *fail; /* the directory's, in the success and the failure arm */
};

static struct created created_of(struct create_res *r)
{
	switch (r->kind) {
	case CR_DIR:
		return (struct created){&r->mkdir.status, &r->mkdir.resok.obj,
					&r->mkdir.resok.obj_attributes, &r->mkdir.resok.dir_wcc,
					&r->mkdir.resfail.dir_wcc};
	case CR_SYMLINK:
		return (struct created){&r->symlink.status, &r->symlink.resok.obj,
					&r->symlink.resok.obj_attributes, &r->symlink.resok.dir_wcc,
					&r->symlink.resfail.dir_wcc};
	case CR_NODE:
		return (struct created){&r->mknod.status, &r->mknod.resok.obj,
					&r->mknod.resok.obj_attributes, &r->mknod.resok.dir_wcc,
					&r->mknod.resfail.dir_wcc};
	default:
		return (struct created){&r->create.status, &r->create.resok.obj,
					&r->create.resok.obj_attributes, &r->create.resok.dir_wcc,
					&r->create.resfail.dir_wcc};
	}
}

/* The wait for a create's stability failed: NFS3ERR_IO, with the
 * directory's attributes moved to the failure arm. */
static void created_failed(void *arg, int err)
{
	struct created p = created_of(arg);
	if (*p.status == NFS3_OK) {
		struct wcc_data w = *p.dir;
		*p.fail = w;
	}
	*p.status = NFS3ERR_IO;
}

/* A create refused before the directory's handle was looked at. */
static void create_refused(struct create_res *r, enum create_kind kind, nfsstat3 status)
{
	r->kind = kind;
	*created_of(r).status = status;
}

/*
 * A CREATE that finds its name taken: a guarded one fails; an exclusive
 * one succeeds only as its own retransmission (the verifier matches) and
 * then waits for the original's durability; an unchecked one opens a
 * regular file and applies only the size it was sent (src/srv/perm.h
 * rule 11).
 */
static int create_existing(struct call *c, const struct createhow3 *how, struct fs_setattr *req,
			   struct fs_inode *ip, uint64_t *csn)
{
	struct fs_attr at;
	int err;
	if (how->mode == GUARDED)
		return -EEXIST;
	if ((err = fs_getattr(ip, &at)))
		return err;
	if (how->mode == EXCLUSIVE) {
		if (!srv_createverf_matches(&at, how->verf))
			return -EEXIST;
		*csn = fs_sync_seq(ip, false);
		return 0;
	}
	if (!S_ISREG(at.mode))
		return -EEXIST;
	srv_existing_sattr(req);
	if (!req->mask)
		return 0;
	struct fs_result fr = {0};
	err = srv_setattr(&c->e, ip, req, &fr);
	*csn = fr.csn;
	return err;
}

/* CREATE of a regular file: the name is looked up first, so that an
 * existing one needs search permission only (rule 11). */
static int create_file(struct call *c, const struct createhow3 *how, struct fs_inode *dp,
		       const filename3 *nm, struct fs_create_args *ca, struct fs_setattr *req,
		       struct fs_inode **ip, struct fs_result *dres, uint64_t *csn)
{
	bool excl = how->mode == EXCLUSIVE;
	int err = srv_create_lookup(&c->e, dp, nm->val, nm->len, ip);
	if (err == -ENOENT) {
		/* an exclusive create sends no attributes */
		err = srv_create(&c->e, dp, nm->val, nm->len, ca, excl ? NULL : req, ip, dres);
		*csn = dres->csn;
		if (!err && excl) {
			struct fs_setattr vsa = {.mask = FS_SET_ATIME | FS_SET_MTIME};
			struct fs_result vres = {0};
			srv_createverf_times(how->verf, &vsa.atime, &vsa.mtime);
			err = fs_setattr(*ip, &vsa, &vres);
			*csn = vres.csn ? vres.csn : *csn;
		}
		if (err != -EEXIST)
			return err;
		/* made meanwhile */
		err = srv_create_lookup(&c->e, dp, nm->val, nm->len, ip);
	}
	return err ? err : create_existing(c, how, req, *ip, csn);
}

/*
 * Make where->name, an object of this kind, as ca says: srv_create decides
 * its mode, owner and group (rule 10) and which of the attributes sent
 * (sattr, NULL for none) apply after the creation. how: CREATE's.
 */
static void create(struct call *c, enum create_kind kind, const struct diropargs3 *where,
		   struct fs_create_args *ca, const struct sattr3 *sattr,
		   const struct createhow3 *how, struct create_res *r)
{
	r->kind = kind;
	struct created p = created_of(r);
	struct fs_inode *dp, *ip = NULL;
	struct fs_attr at;
	struct fs_setattr req = {0};
	struct fs_result dres = {.want = FS_RES_ATTRS};
	uint64_t csn = 0;
	int err;
	if ((*p.status = fh_get(c, &where->dir, &dp)))
		return;
	if (sattr)
		sattr_to_fs(sattr, &req);
	if ((*p.status = is_dir(dp)) || (*p.status = name_check(&where->name)))
		goto out;
	if (how) {
		err = create_file(c, how, dp, &where->name, ca, &req, &ip, &dres, &csn);
	} else {
		err = srv_create(&c->e, dp, where->name.val, where->name.len, ca, &req, &ip, &dres);
		csn = dres.csn;
	}
	if (!(*p.status = nfs3_status(err)) && !fs_getattr(ip, &at)) {
		p.obj->handle_follows = true;
		fh_make(c, &at, &p.obj->handle);
		post_attr_of(c, &at, p.attr);
	}
	if (ip)
		fs_iput(ip);
out:
	wcc_set(c, dp, &dres, 0, *p.status ? p.fail : p.dir);
	fs_iput(dp);
	reply_when_durable(c, csn, created_failed, r);
}

static enum svc_stat nfs3_create(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct CREATE3args *a = args;
	bool excl = a->how.mode == EXCLUSIVE;
	struct fs_create_args ca = {.mode = S_IFREG | (excl ? 0600 : 0644)};
	struct call c;
	call_init(&c, rq, rc);
	create(&c, CR_FILE, &a->where, &ca, excl ? NULL : &a->how.obj_attributes, &a->how, res);
	return reply(&c);
}

static enum svc_stat nfs3_mkdir(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	struct MKDIR3args *a = args;
	struct fs_create_args ca = {.mode = S_IFDIR | 0755};
	struct call c;
	call_init(&c, rq, rc);
	create(&c, CR_DIR, &a->where, &ca, &a->attributes, NULL, res);
	return reply(&c);
}

/* A bad symlink target or MKNOD type is refused before anything else (as
 * knfsd does, even before the handle is checked). */
static enum svc_stat nfs3_symlink(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				  void *res)
{
	struct SYMLINK3args *a = args;
	const nfspath3 *t = &a->symlink.symlink_data;
	struct fs_create_args ca = {.mode = S_IFLNK | 0777, .target = t->val, .target_len = t->len};
	struct call c;
	call_init(&c, rq, rc);
	if (t->len == 0 || memchr(t->val, '\0', t->len)) {
		create_refused(res, CR_SYMLINK, NFS3ERR_INVAL);
		return SVC_OK;
	}
	create(&c, CR_SYMLINK, &a->where, &ca, &a->symlink.symlink_attributes, NULL, res);
	return reply(&c);
}

static enum svc_stat nfs3_mknod(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	struct MKNOD3args *a = args;
	const struct mknoddata3 *w = &a->what;
	struct fs_create_args ca = {0};
	const struct sattr3 *sattr = &w->pipe_attributes;
	struct call c;
	call_init(&c, rq, rc);
	switch (w->type) {
	case NF3CHR:
	case NF3BLK:
		ca.mode = (w->type == NF3CHR ? S_IFCHR : S_IFBLK) | 0644;
		ca.rdev = makedev(w->device.spec.specdata1, w->device.spec.specdata2);
		sattr = &w->device.dev_attributes;
		break;
	case NF3SOCK:
		ca.mode = S_IFSOCK | 0644;
		break;
	case NF3FIFO:
		ca.mode = S_IFIFO | 0644;
		break;
	default:
		create_refused(res, CR_NODE, NFS3ERR_BADTYPE);
		return SVC_OK;
	}
	create(&c, CR_NODE, &a->where, &ca, sattr, NULL, res);
	return reply(&c);
}

/* ---- REMOVE, RMDIR, RENAME, LINK ---- */

/* REMOVE's and RMDIR's: status, then the directory's attributes in both arms. */
static void remove_entry(struct call *c, const struct diropargs3 *what, nfsstat3 *status,
			 struct wcc_data *dir_wcc, enum srv_rm kind)
{
	struct fs_inode *dp;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	const filename3 *nm = &what->name;
	if ((*status = fh_get(c, &what->dir, &dp)))
		return;
	if (!(*status = is_dir(dp)) && !(*status = name_check(nm)))
		*status = nfs3_status(srv_remove(&c->e, dp, nm->val, nm->len, kind, &fr));
	wcc_set(c, dp, &fr, 0, dir_wcc);
	fs_iput(dp);
	reply_when_durable(c, fr.csn, fail_io, status);
}

static enum svc_stat nfs3_remove(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct REMOVE3args *a = args;
	struct REMOVE3res *r = res;
	struct call c;
	call_init(&c, rq, rc);
	remove_entry(&c, &a->object, &r->status, &r->resok.dir_wcc, SRV_RM_FILE);
	return reply(&c);
}

static enum svc_stat nfs3_rmdir(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	struct RMDIR3args *a = args;
	struct RMDIR3res *r = res;
	struct call c;
	call_init(&c, rq, rc);
	remove_entry(&c, &a->object, &r->status, &r->resok.dir_wcc, SRV_RM_DIR);
	return reply(&c);
}

static enum svc_stat nfs3_rename(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct RENAME3args *a = args;
	struct RENAME3res *r = res;
	const filename3 *from = &a->from.name, *to = &a->to.name;
	struct fs_inode *sdp, *ddp = NULL;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	struct call c;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->from.dir, &sdp)))
		return SVC_OK;
	if ((r->status = fh_get(&c, &a->to.dir, &ddp)) || (r->status = is_dir(sdp)) ||
	    (r->status = is_dir(ddp)) || (r->status = name_check(from)) ||
	    (r->status = name_check(to)))
		goto out;
	r->status = nfs3_status(
		srv_rename(&c.e, sdp, from->val, from->len, ddp, to->val, to->len, &fr));
out:
	wcc_set(&c, sdp, &fr, 0, &r->resok.fromdir_wcc);
	wcc_set(&c, ddp, &fr, 1, &r->resok.todir_wcc);
	fs_iput(sdp);
	if (ddp)
		fs_iput(ddp);
	reply_when_durable(&c, fr.csn, fail_io, &r->status);
	return reply(&c);
}

static enum svc_stat nfs3_link(struct svc_req *rq, const struct rpc_cred *rc, void *args, void *res)
{
	struct LINK3args *a = args;
	struct LINK3res *r = res;
	const filename3 *nm = &a->link.name;
	struct fs_inode *ip, *dp = NULL;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	struct call c;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->file, &ip)))
		return SVC_OK;
	if ((r->status = fh_get(&c, &a->link.dir, &dp)) || (r->status = is_dir(dp)) ||
	    (r->status = name_check(nm)))
		goto out;
	r->status = nfs3_status(srv_link(&c.e, ip, dp, nm->val, nm->len, &fr));
out:
	if (fr.ino[1].has_post)
		post_attr_of(&c, &fr.ino[1].post, &r->resok.file_attributes);
	else
		post_attr(&c, ip, &r->resok.file_attributes);
	wcc_set(&c, dp, &fr, 0, &r->resok.linkdir_wcc);
	fs_iput(ip);
	if (dp)
		fs_iput(dp);
	reply_when_durable(&c, fr.csn, fail_io, &r->status);
	return reply(&c);
}

/* ---- READDIR, READDIRPLUS ---- */

/* Bytes an entry takes in the reply: value_follows, fileid, name,
 * cookie, and for READDIRPLUS the attributes and the handle. */
static uint32_t dirent_size(uint32_t namelen, bool plus)
{
	uint32_t n = 4 + 8 + 4 + namelen + XDR_PAD(namelen) + 8;
	if (plus)
		n += 4 + NFS3_FATTR_SIZE + 4 + 4 + FH_SIZE + XDR_PAD(FH_SIZE);
	return n;
}

/* READDIR's and READDIRPLUS's results, and the memory their entries take
 * (freed by release). */
struct readdir_res {
	union {
		struct READDIR3res rd;
		struct READDIRPLUS3res plus;
	};	     /* first: what the encoder sees */
	void *ents;  /* struct entry3 or struct entryplus3 */
	char *names; /* the entries' names */
};

/* One READDIR or READDIRPLUS, the same but for the entries' type. */
struct rd {
	struct call *c;
	bool plus;
	union {
		struct entry3 *ents;
		struct entryplus3 *pents;
	};
	uint32_t n, cap; /* entries made, allocated */
	char *names;
	size_t names_len, names_cap;
	uint32_t count, dircount; /* bytes left */
	bool stopped;		  /* an entry did not fit */
	uint64_t dotdot_ino;	  /* ".." of the export root is itself */
};

static int rd_fill(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		   uint64_t cookie)
{
	struct rd *d = arg;
	uint32_t sz = dirent_size((uint32_t)len, d->plus), dsz = dirent_size((uint32_t)len, false);
	if (sz > d->count || dsz > d->dircount) {
		d->stopped = true;
		return 1;
	}
	d->count -= sz;
	d->dircount -= dsz;
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 32;
		if (d->plus)
			d->pents = xrealloc(d->pents, d->cap * sizeof(*d->pents));
		else
			d->ents = xrealloc(d->ents, d->cap * sizeof(*d->ents));
	}
	if (d->names_len + len > d->names_cap) {
		d->names_cap = (d->names_cap + len) * 2;
		d->names = xrealloc(d->names, d->names_cap);
	}
	bool dotdot = len == 2 && name[0] == '.' && name[1] == '.';
	uint64_t fileid = dotdot && d->dotdot_ino ? d->dotdot_ino : ino;
	/* an offset until the names stop moving (rd_link) */
	filename3 nm = {.len = (uint32_t)len, .val = (const char *)(uintptr_t)d->names_len};
	if (d->plus)
		d->pents[d->n] =
			(struct entryplus3){.fileid = fileid, .name = nm, .cookie = cookie};
	else
		d->ents[d->n] = (struct entry3){.fileid = fileid, .name = nm, .cookie = cookie};
	d->n++;
	memcpy(d->names + d->names_len, name, len);
	d->names_len += len;
	return 0;
}

/* The arrays no longer move: names become pointers, entries a list. */
static void rd_link(struct rd *d)
{
	for (uint32_t i = 0; i < d->n; i++) {
		bool last = i + 1 == d->n;
		if (d->plus) {
			d->pents[i].name.val = d->names + (uintptr_t)d->pents[i].name.val;
			d->pents[i].nextentry = last ? NULL : &d->pents[i + 1];
		} else {
			d->ents[i].name.val = d->names + (uintptr_t)d->ents[i].name.val;
			d->ents[i].nextentry = last ? NULL : &d->ents[i + 1];
		}
	}
}

/* READDIRPLUS: each entry's handle and attributes, looked up by name as
 * LOOKUP does: none for a name removed or replaced since the directory
 * was read, nor for a ".." outside the export. */
static void rd_lookups(struct rd *d, struct fs_inode *dp)
{
	for (uint32_t i = 0; i < d->n; i++) {
		struct entryplus3 *e = &d->pents[i];
		struct fs_inode *ip;
		struct fs_attr at;
		if (export_lookup_entry(d->c->e.ex, dp, e->name.val, e->name.len, e->fileid, &ip))
			continue;
		if (!fs_getattr(ip, &at)) {
			post_attr_of(d->c, &at, &e->name_attributes);
			e->name_handle.handle_follows = true;
			fh_make(d->c, &at, &e->name_handle.handle);
		}
		fs_iput(ip);
	}
}

/* What READDIR and READDIRPLUS ask, in one shape. */
struct rd_args {
	const struct nfs_fh3 *dir;
	uint64_t cookie;
	const uint8_t *cookieverf; /* the client's */
	uint32_t count, dircount;  /* bytes of reply, bytes of names (READDIR: count) */
};

/*
 * The entries of dp that ra asks for: verf gets the directory's cookie
 * verifier, *eof whether they are all there.
 */
static nfsstat3 list_dir(struct rd *d, struct fs_inode *dp, const struct rd_args *ra,
			 uint8_t verf[NFS3_COOKIEVERFSIZE], bool *eof)
{
	static const uint8_t zero[NFS3_COOKIEVERFSIZE];
	struct fs_attr dat;
	bool lookups;
	nfsstat3 st;
	if ((st = nfs3_status(fs_getattr(dp, &dat))))
		return st;
	if (!S_ISDIR(dat.mode))
		return NFS3ERR_NOTDIR;
	/* READDIRPLUS looks the names up: without search permission the
	 * entries come without handles and attributes, as knfsd's */
	if ((st = nfs3_status(srv_may_readdir(&d->c->e, dp, &lookups))))
		return st;
	/* srv_cookie_verf; cookies 3..65535 are never handed out */
	srv_cookie_verf(d->c->srv, &dat, verf);
	if (ra->cookie && ((memcmp(ra->cookieverf, zero, NFS3_COOKIEVERFSIZE) &&
			    memcmp(ra->cookieverf, verf, NFS3_COOKIEVERFSIZE)) ||
			   (ra->cookie > 2 && ra->cookie < 65536)))
		return NFS3ERR_BAD_COOKIE;
	uint32_t count = ra->count < NFS3_DIRMAX ? ra->count : NFS3_DIRMAX;
	if (count <= READDIR_RES_HDR)
		return NFS3ERR_TOOSMALL;
	d->count = count - READDIR_RES_HDR;
	d->dircount = ra->dircount < NFS3_DIRMAX ? ra->dircount : NFS3_DIRMAX;
	d->dotdot_ino = export_is_root(d->c->e.ex, dp) ? dat.ino : 0;
	if ((st = nfs3_status(fs_readdir(dp, ra->cookie, rd_fill, d))))
		return st;
	rd_link(d);
	*eof = !d->stopped;
	if (d->n == 0 && !*eof)
		return NFS3ERR_TOOSMALL;
	if (d->plus && lookups)
		rd_lookups(d, dp);
	return NFS3_OK;
}

/* READDIR and READDIRPLUS: the same but for their entries' type; the
 * parts both results have are at the same places of either. */
static enum svc_stat readdir_any(struct svc_req *rq, const struct rpc_cred *rc,
				 const struct rd_args *ra, bool plus, struct readdir_res *rr)
{
	nfsstat3 *status = plus ? &rr->plus.status : &rr->rd.status;
	struct call c;
	struct fs_inode *dp;
	call_init(&c, rq, rc);
	struct rd d = {.c = &c, .plus = plus};
	if ((*status = fh_get(&c, ra->dir, &dp)))
		return SVC_OK;
	if (plus) {
		struct READDIRPLUS3resok *ok = &rr->plus.resok;
		*status = list_dir(&d, dp, ra, ok->cookieverf, &ok->reply.eof);
		ok->reply.entries = d.n ? d.pents : NULL;
		post_attr(&c, dp, &ok->dir_attributes);
		rr->ents = d.pents;
	} else {
		struct READDIR3resok *ok = &rr->rd.resok;
		*status = list_dir(&d, dp, ra, ok->cookieverf, &ok->reply.eof);
		ok->reply.entries = d.n ? d.ents : NULL;
		post_attr(&c, dp, &ok->dir_attributes);
		rr->ents = d.ents;
	}
	rr->names = d.names;
	fs_iput(dp);
	return SVC_OK;
}

static enum svc_stat nfs3_readdir(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				  void *res)
{
	const struct READDIR3args *a = args;
	struct rd_args ra = {&a->dir, a->cookie, a->cookieverf, a->count, a->count};
	return readdir_any(rq, rc, &ra, false, res);
}

static enum svc_stat nfs3_readdirplus(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				      void *res)
{
	const struct READDIRPLUS3args *a = args;
	struct rd_args ra = {&a->dir, a->cookie, a->cookieverf, a->maxcount, a->dircount};
	return readdir_any(rq, rc, &ra, true, res);
}

static void nfs3_release_readdir(void *args, void *res)
{
	struct readdir_res *rr = res;
	free(rr->ents);
	free(rr->names);
}

/* ---- filesystem information ---- */

static enum svc_stat nfs3_fsstat(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct FSSTAT3args *a = args;
	struct FSSTAT3res *r = res;
	struct FSSTAT3resok *ok = &r->resok;
	struct call c;
	struct fs_inode *ip;
	struct fs_statfs st;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->fsroot, &ip)))
		return SVC_OK;
	if (!(r->status = nfs3_status(fs_statfs(c.srv->fs, &st)))) {
		ok->tbytes = st.blocks * st.bsize;
		ok->fbytes = ok->abytes = st.bfree * st.bsize;
		ok->tfiles = st.files;
		ok->ffiles = ok->afiles = st.ffree;
		ok->invarsec = 0;
	}
	post_attr(&c, ip, &ok->obj_attributes);
	fs_iput(ip);
	return SVC_OK;
}

static enum svc_stat nfs3_fsinfo(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct FSINFO3args *a = args;
	struct FSINFO3res *r = res;
	struct FSINFO3resok *ok = &r->resok;
	struct call c;
	struct fs_inode *ip;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->fsroot, &ip)))
		return SVC_OK;
	ok->rtmax = ok->rtpref = ok->wtmax = ok->wtpref = NFS3_MAXDATA;
	ok->rtmult = ok->wtmult = 4096;
	ok->dtpref = 64 << 10;
	ok->maxfilesize = FS_MAX_FILE_SIZE; /* writes past it fail with FBIG */
	ok->time_delta = (struct nfstime3){.seconds = 0, .nseconds = 1};
	ok->properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
	post_attr(&c, ip, &ok->obj_attributes);
	fs_iput(ip);
	return SVC_OK;
}

static enum svc_stat nfs3_pathconf(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				   void *res)
{
	struct PATHCONF3args *a = args;
	struct PATHCONF3res *r = res;
	struct PATHCONF3resok *ok = &r->resok;
	struct call c;
	struct fs_inode *ip;
	struct fs_statfs st;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->object, &ip)))
		return SVC_OK;
	r->status = nfs3_status(fs_statfs(c.srv->fs, &st));
	ok->linkmax = UINT32_MAX;
	ok->name_max = st.namemax < NFS3_NAME_MAX ? st.namemax : NFS3_NAME_MAX;
	ok->no_trunc = true;
	ok->chown_restricted = true;
	ok->case_insensitive = false;
	ok->case_preserving = true;
	post_attr(&c, ip, &ok->obj_attributes);
	fs_iput(ip);
	return SVC_OK;
}

/*
 * Reply bounds (struct svc_proc reply_max, svc.h): every result but READ's,
 * READDIR(PLUS)'s and READLINK's has a fixed most - CREATE's is the
 * largest, 280 bytes (status, post_op_fh3, post_op_attr, wcc_data) - and
 * fits in RES_FIXED_MAX with room to spare; those three add their data.
 */
#define RES_FIXED_MAX 1024
#define RES_READ_MAX  (4 + 4 + NFS3_FATTR_SIZE + 4 + 4 + 4) /* without the data */

/* A READ's reply holds at most the count asked for (rounded up to XDR
 * units), a READDIR's at most its count and never less than an error. */
static uint32_t read_bound(const void *args)
{
	const struct READ3args *a = args;
	uint32_t count = a->count < NFS3_MAXDATA ? a->count : NFS3_MAXDATA;
	return SVC_REPLY_HDR + RES_READ_MAX + count + 3;
}

static uint32_t readdir_count_bound(uint32_t count)
{
	return SVC_REPLY_HDR + RES_FIXED_MAX + (count < NFS3_DIRMAX ? count : NFS3_DIRMAX);
}

static uint32_t readdir_bound(const void *args)
{
	return readdir_count_bound(((const struct READDIR3args *)args)->count);
}

static uint32_t readdirplus_bound(const void *args)
{
	return readdir_count_bound(((const struct READDIRPLUS3args *)args)->maxcount);
}

/*
 * One row per procedure: P is the procedure's name in the types of
 * nfs3.x (P3args, P3res and their generated svc codecs), rt the result
 * struct the handler fills (P3res, or a struct that begins with it).
 */
#define PROC_BOUND(P, fn, rt, rel, fl, max, bound)                                                 \
	[NFSPROC3_##P] = {.name = #fn,                                                             \
			  .decode = nfs3_rpc_dec_##P##3args,                                       \
			  .handler = nfs3_##fn,                                                    \
			  .encode = nfs3_rpc_enc_##P##3res,                                        \
			  .release = rel,                                                          \
			  .args_size = sizeof(struct P##3args),                                    \
			  .res_size = sizeof(rt),                                                  \
			  .flags = fl,                                                             \
			  .reply_max = SVC_REPLY_HDR + (max),                                      \
			  .reply_bound = bound}
#define PROC(P, fn, rt, fl) PROC_BOUND(P, fn, rt, NULL, fl, RES_FIXED_MAX, NULL)

static const struct svc_proc nfs3_procs[] = {
	[NFSPROC3_NULL] = {.name = "null",
			   .decode = svc_dec_void,
			   .handler = nfs3_null,
			   .encode = svc_enc_void,
			   .flags = SVC_PROC_INLINE,
			   .reply_max = SVC_REPLY_HDR},
	PROC(GETATTR, getattr, struct GETATTR3res, 0),
	PROC(SETATTR, setattr, struct SETATTR3res, SVC_PROC_DRC),
	PROC(LOOKUP, lookup, struct LOOKUP3res, 0),
	PROC(ACCESS, access, struct ACCESS3res, 0),
	PROC_BOUND(READLINK, readlink, struct readlink_res, nfs3_release_readlink, 0,
		   RES_FIXED_MAX + NFS3_MAXPATH, NULL),
	PROC_BOUND(READ, read, struct read_res, nfs3_release_read, 0, RES_READ_MAX + NFS3_MAXDATA,
		   read_bound),
	PROC(WRITE, write, struct WRITE3res, 0),
	PROC(CREATE, create, struct create_res, SVC_PROC_DRC),
	PROC(MKDIR, mkdir, struct create_res, SVC_PROC_DRC),
	PROC(SYMLINK, symlink, struct create_res, SVC_PROC_DRC),
	PROC(MKNOD, mknod, struct create_res, SVC_PROC_DRC),
	PROC(REMOVE, remove, struct REMOVE3res, SVC_PROC_DRC),
	PROC(RMDIR, rmdir, struct RMDIR3res, SVC_PROC_DRC),
	PROC(RENAME, rename, struct RENAME3res, SVC_PROC_DRC),
	PROC(LINK, link, struct LINK3res, SVC_PROC_DRC),
	PROC_BOUND(READDIR, readdir, struct readdir_res, nfs3_release_readdir, 0,
		   RES_FIXED_MAX + NFS3_DIRMAX, readdir_bound),
	PROC_BOUND(READDIRPLUS, readdirplus, struct readdir_res, nfs3_release_readdir, 0,
		   RES_FIXED_MAX + NFS3_DIRMAX, readdirplus_bound),
	PROC(FSSTAT, fsstat, struct FSSTAT3res, 0),
	PROC(FSINFO, fsinfo, struct FSINFO3res, 0),
	PROC(PATHCONF, pathconf, struct PATHCONF3res, 0),
	PROC(COMMIT, commit, struct COMMIT3res, 0),
};

const struct svc_version nfs3_version = {.vers = NFS_V3,
					 .nprocs = sizeof(nfs3_procs) / sizeof(nfs3_procs[0]),
					 .procs = nfs3_procs,
					 .resume = nfs3_resume};
