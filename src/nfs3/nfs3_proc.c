/*
 * nfs3_proc.c - the NFSv3 procedures (RFC 1813 §3.3): wire arguments to
 * the calls of the shared server layer, its answers back to wire results.
 *
 * Nothing is decided here that another protocol would decide the same
 * way: admission, squashing and the export a handle names are
 * srv_fh_resolve's (the first handle of a call fixes the export, a second
 * one must be of the same export: XDEV); who may do what, and the
 * operations themselves, are srv/ops.h's (src/srv/perm.h has the rules,
 * docs/permissions.md the table); the write verifier is srv_write_verf's;
 * waiting for stability is srv_reply_stable's. What stays is NFSv3's own:
 * which procedure needs which call, the checks RFC 1813 and knfsd make of
 * the wire arguments before anything else (a name with '/', a directory
 * operation on a file), and the shape of the results.
 *
 * Stability. A procedure that changed something runs through changing():
 * it leaves in its struct call the sequence its reply waits for (its own
 * transaction's on a sync export, rule 7; the file's sync sequence for a
 * stable WRITE and for COMMIT, rule 8, with the data device too) and
 * changing() hands that to srv_reply_stable. A parked request that runs
 * again comes back through changing() as well, which only ends the wait
 * (srv_stable_resume): the procedure itself runs once. A wait that fails
 * (the journal shut down) turns the reply into NFS3ERR_IO (fail_io).
 *
 * The write verifier moves when a write or flush of the data device fails:
 * a WRITE reads it before its data goes to the engine, a COMMIT once its
 * data is durable (srv_reply_committed), so a failure in between makes
 * them differ and the client sends its unstable data again.
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

#include "base/mem.h"
#include "base/msg.h"
#include "base/siphash.h"
#include "nfs3/nfs3.h"
#include "nfs3/nfs3_xdr.h"
#include "srv/ops.h"

#define NFS3_NAME_MAX   255
#define NFS3_DIRMAX     (256u << 10) /* largest READDIR reply we build */
#define READDIR_RES_HDR (4 + 4 + NFS3_FATTR_SIZE + NFS3_VERFSIZE + 4 + 4)

_Static_assert(NFS3_VERFSIZE == SRV_CREATEVERF_SIZE, "one exclusive-create verifier");

/* One call: its caller, the export its first handle named, and when its
 * reply may go. */
struct call {
	struct srv *srv;
	struct svc_req *rq;
	const struct rpc_cred *rc;
	struct srv_exp e;     /* e.ex is NULL until the first handle names the export */
	uint64_t csn;         /* the reply waits until this sequence is durable */
	bool data;            /* ... and the data device holds what was written */
	uint8_t *verf;        /* COMMIT: the write verifier, read once it is */
	srv_failed_fn failed; /* makes the result NFS3ERR_IO when the wait fails */
	void *failed_arg;
};

static void call_init(struct call *c, struct svc_req *rq, const struct rpc_cred *rc)
{
	const struct nfs3_server *s = svc_req_ctx(rq);
	*c = (struct call){.srv = s->srv, .rq = rq, .rc = rc};
}

uint32_t nfs3_status(int err)
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
static uint32_t fh_get(struct call *c, const struct nfs3_fh *fh, struct fs_inode **ip)
{
	return nfs3_status(srv_fh_resolve(c->srv, c->rq, c->rc, fh->data, fh->len, &c->e, ip));
}

static void fh_make(const struct call *c, const struct fs_attr *a, struct nfs3_fh *out)
{
	srv_fh_make(c->srv, c->e.ex, a, out->data);
	out->len = FH_SIZE;
}

/* As knfsd's check_filename: empty or with '/' or NUL is ACCES. */
static uint32_t name_check(const struct nfs3_name *n)
{
	if (n->len == 0 || memchr(n->s, '/', n->len) || memchr(n->s, '\0', n->len))
		return NFS3ERR_ACCES;
	if (n->len > NFS3_NAME_MAX)
		return NFS3ERR_NAMETOOLONG;
	return NFS3_OK;
}

/* A directory operation on something else is NOTDIR, before any
 * permission check (as knfsd's fh_verify(S_IFDIR)). */
static uint32_t is_dir(struct fs_inode *ip)
{
	struct fs_attr a;
	int err = fs_getattr(ip, &a);
	if (err)
		return nfs3_status(err);
	return S_ISDIR(a.mode) ? NFS3_OK : NFS3ERR_NOTDIR;
}

/* ---- attributes ---- */

static struct nfs3_time ts3(struct timespec t)
{
	return (struct nfs3_time){.sec = (uint32_t)t.tv_sec, .nsec = (uint32_t)t.tv_nsec};
}

static void fattr3(const struct call *c, const struct fs_attr *a, struct nfs3_fattr *f)
{
	switch (a->mode & S_IFMT) {
	case S_IFDIR: f->type = NF3DIR; break;
	case S_IFLNK: f->type = NF3LNK; break;
	case S_IFBLK: f->type = NF3BLK; break;
	case S_IFCHR: f->type = NF3CHR; break;
	case S_IFSOCK: f->type = NF3SOCK; break;
	case S_IFIFO: f->type = NF3FIFO; break;
	default: f->type = NF3REG; break;
	}
	f->mode = a->mode & 07777;
	f->nlink = a->nlink;
	f->uid = a->uid;
	f->gid = a->gid;
	f->size = a->size;
	f->used = a->used;
	f->rdev_major = major(a->rdev);
	f->rdev_minor = minor(a->rdev);
	f->fsid = c->e.ex->fsid;
	f->fileid = a->ino;
	f->atime = ts3(a->atime);
	f->mtime = ts3(a->mtime);
	f->ctime = ts3(a->ctime);
}

static void post_attr(const struct call *c, struct fs_inode *ip, struct nfs3_post_attr *p)
{
	struct fs_attr a;
	p->present = ip && !fs_getattr(ip, &a);
	if (p->present)
		fattr3(c, &a, &p->a);
}

/*
 * Weak cache consistency for ip: what the engine reported in res->ino[slot]
 * (taken under the inode's lock: "pre" only when no other change came
 * between it and "post"), or, when the call never changed the inode (res
 * NULL, an error before the change, nothing to do), one snapshot as both.
 */
static void wcc_set(const struct call *c, struct fs_inode *ip, const struct fs_result *res,
		    unsigned slot, struct nfs3_wcc *w)
{
	const struct fs_res_ino *ri = res ? &res->ino[slot] : NULL;
	struct fs_attr snap;
	const struct fs_attr *post = NULL;
	struct fs_wcc pre = {0};
	w->pre_present = false;
	if (ri && ri->has_post) {
		post = &ri->post;
		w->pre_present = ri->has_pre;
		pre = ri->pre;
	} else if (ip && !fs_getattr(ip, &snap)) {
		post = &snap;
		w->pre_present = true;
		pre = (struct fs_wcc){.size = snap.size, .mtime = snap.mtime, .ctime = snap.ctime};
	}
	if (w->pre_present) {
		w->pre_size = pre.size;
		w->pre_mtime = ts3(pre.mtime);
		w->pre_ctime = ts3(pre.ctime);
	}
	w->post.present = post != NULL;
	if (post)
		fattr3(c, post, &w->post.a);
}

static void sattr_to_fs(const struct nfs3_sattr *sa, struct fs_setattr *fsa)
{
	memset(fsa, 0, sizeof(*fsa));
	if (sa->set_mode) {
		fsa->mask |= FS_SET_MODE;
		fsa->mode = sa->mode & 07777;
	}
	if (sa->set_uid) {
		fsa->mask |= FS_SET_UID;
		fsa->uid = sa->uid;
	}
	if (sa->set_gid) {
		fsa->mask |= FS_SET_GID;
		fsa->gid = sa->gid;
	}
	if (sa->set_size) {
		fsa->mask |= FS_SET_SIZE;
		fsa->size = sa->size;
	}
	if (sa->atime_how == SET_TO_SERVER_TIME)
		fsa->mask |= FS_SET_ATIME_NOW;
	if (sa->atime_how == SET_TO_CLIENT_TIME) {
		fsa->mask |= FS_SET_ATIME;
		fsa->atime = (struct timespec){sa->atime.sec, sa->atime.nsec};
	}
	if (sa->mtime_how == SET_TO_SERVER_TIME)
		fsa->mask |= FS_SET_MTIME_NOW;
	if (sa->mtime_how == SET_TO_CLIENT_TIME) {
		fsa->mask |= FS_SET_MTIME;
		fsa->mtime = (struct timespec){sa->mtime.sec, sa->mtime.nsec};
	}
}

/* ---- stability ---- */

/* The wait for stability failed: the reply says NFS3ERR_IO (arg: the
 * result's status). */
static void fail_io(void *arg, int err)
{
	uint32_t *status = arg;
	*status = NFS3ERR_IO;
}

/* A metadata change (rule 7): on a sync export its reply waits for the
 * change's own sequence, on an async one it goes at once. */
static void reply_when_durable(struct call *c, uint64_t csn, uint32_t *status)
{
	if (c->e.opts && c->e.opts->sync)
		c->csn = csn;
	c->failed = fail_io;
	c->failed_arg = status;
}

typedef void (*changing_fn)(struct call *c, void *args, void *res);

/*
 * The procedures that change something run here (see the header). fn runs
 * once; a rerun of the request is the end of its reply's wait.
 */
static enum svc_stat changing(struct svc_req *rq, const struct rpc_cred *rc, void *args,
			      void *res, changing_fn fn)
{
	struct call c;
	call_init(&c, rq, rc);
	if (svc_req_wake(rq) != SVC_WAKE_NONE)
		return srv_stable_resume(c.srv, rq);
	fn(&c, args, res);
	if (c.verf)
		return srv_reply_committed(c.srv, rq, c.csn, c.verf, c.failed, c.failed_arg);
	return srv_reply_stable(c.srv, rq, c.csn, c.data, c.failed, c.failed_arg);
}

/* ---- procedures ---- */

static enum svc_stat nfs3_null(struct svc_req *rq, const struct rpc_cred *rc, void *args,
			       void *res)
{
	return SVC_OK;
}

static enum svc_stat nfs3_getattr(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				  void *res)
{
	struct nfs3_fh_args *a = args;
	struct nfs3_getattr_res *r = res;
	struct call c;
	struct fs_inode *ip;
	struct fs_attr at;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->fh, &ip)))
		return SVC_OK;
	int err = fs_getattr(ip, &at);
	if (!(r->status = nfs3_status(err)))
		fattr3(&c, &at, &r->attr);
	fs_iput(ip);
	return SVC_OK;
}

static void do_setattr(struct call *c, void *args, void *res)
{
	struct nfs3_setattr_args *a = args;
	struct nfs3_wcc_res *r = res;
	struct fs_inode *ip;
	struct fs_setattr fsa;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	if ((r->status = fh_get(c, &a->fh, &ip)))
		return;
	sattr_to_fs(&a->sattr, &fsa);
	if (a->guard) {
		/* compared by the engine under the lock that orders the change */
		fsa.mask |= FS_SET_GUARD;
		fsa.guard_ctime = (struct timespec){a->guard_ctime.sec, a->guard_ctime.nsec};
	}
	r->status = nfs3_status(srv_setattr(&c->e, ip, &fsa, &fr));
	wcc_set(c, ip, &fr, 0, &r->wcc);
	fs_iput(ip);
	reply_when_durable(c, fr.csn, &r->status);
}

static enum svc_stat nfs3_setattr(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				  void *res)
{
	return changing(rq, rc, args, res, do_setattr);
}

static enum svc_stat nfs3_lookup(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct nfs3_dirop_args *a = args;
	struct nfs3_lookup_res *r = res;
	struct call c;
	struct fs_inode *dp, *ip = NULL;
	struct fs_attr at;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->what.dir, &dp)))
		return SVC_OK;
	if ((r->status = is_dir(dp)) || (r->status = name_check(&a->what.name)))
		goto out;
	/* ".." never climbs out of the export */
	int err = srv_lookup(&c.e, dp, a->what.name.s, a->what.name.len, &ip);
	if (!err)
		err = fs_getattr(ip, &at);
	if (!(r->status = nfs3_status(err))) {
		fh_make(&c, &at, &r->fh);
		fattr3(&c, &at, &r->obj.a);
		r->obj.present = true;
	}
	if (ip)
		fs_iput(ip);
out:
	post_attr(&c, dp, &r->dir);
	fs_iput(dp);
	return SVC_OK;
}

static enum svc_stat nfs3_access(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct nfs3_access_args *a = args;
	struct nfs3_access_res *r = res;
	struct call c;
	struct fs_inode *ip;
	struct fs_attr at;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->fh, &ip)))
		return SVC_OK;
	if ((r->status = nfs3_status(fs_getattr(ip, &at))))
		goto out;
	r->access = srv_access(&c.e.cred, c.e.opts, &at, a->access);
out:
	post_attr(&c, ip, &r->obj);
	fs_iput(ip);
	return SVC_OK;
}

static enum svc_stat nfs3_readlink(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				   void *res)
{
	struct nfs3_fh_args *a = args;
	struct nfs3_readlink_res *r = res;
	struct call c;
	struct fs_inode *ip;
	size_t len = 0;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->fh, &ip)))
		return SVC_OK;
	r->path = xmalloc(NFS3_MAXPATH);
	r->status = nfs3_status(fs_readlink(ip, r->path, NFS3_MAXPATH, &len));
	r->len = (uint32_t)len;
	post_attr(&c, ip, &r->obj);
	fs_iput(ip);
	return SVC_OK;
}

static void nfs3_release_readlink(void *args, void *res)
{
	free(((struct nfs3_readlink_res *)res)->path);
}

static enum svc_stat nfs3_read(struct svc_req *rq, const struct rpc_cred *rc, void *args,
			       void *res)
{
	struct nfs3_read_args *a = args;
	struct nfs3_read_res *r = res;
	struct call c;
	struct fs_inode *ip;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->fh, &ip)))
		return SVC_OK;
	if ((r->status = nfs3_status(srv_may_read(&c.e, ip))))
		goto out;
	uint32_t count = a->count < NFS3_MAXDATA ? a->count : NFS3_MAXDATA;
	size_t n = 0;
	r->data = xmalloc(count ? count : 1);
	r->status = nfs3_status(fs_read(ip, a->offset, r->data, count, &n, &r->eof));
	r->count = (uint32_t)n;
out:
	post_attr(&c, ip, &r->obj);
	fs_iput(ip);
	return SVC_OK;
}

static void nfs3_release_read(void *args, void *res)
{
	free(((struct nfs3_read_res *)res)->data);
}

static void do_write(struct call *c, void *args, void *res)
{
	struct nfs3_write_args *a = args;
	struct nfs3_write_res *r = res;
	struct fs_inode *ip;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	srv_write_verf(c->srv, r->verf); /* before the data goes to the engine */
	if ((r->status = fh_get(c, &a->fh, &ip)))
		return;
	if (a->count != a->data.iov_len) {
		r->status = NFS3ERR_INVAL; /* the count disagrees with the data */
		goto out;
	}
	/* a stable write may go through the journal (docs/logged-data.md):
	 * then forcing its sequence makes the data durable, with no flush */
	bool logged;
	r->status = nfs3_status(srv_write(&c->e, ip, a->offset, a->data.iov_base, a->count,
					  a->stable != UNSTABLE, &fr, &logged));
	if (r->status)
		goto out;
	r->count = a->count;
	r->committed = a->stable;
	if (a->stable != UNSTABLE) {
		/* rule 8: DATA_SYNC is an fdatasync, FILE_SYNC an fsync */
		c->csn = fs_sync_seq(ip, a->stable == DATA_SYNC);
		c->data = !logged;
		c->failed = fail_io;
		c->failed_arg = &r->status;
	}
out:
	wcc_set(c, ip, &fr, 0, &r->wcc);
	fs_iput(ip);
}

static enum svc_stat nfs3_write(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	return changing(rq, rc, args, res, do_write);
}

/* ---- CREATE, MKDIR, SYMLINK, MKNOD ---- */

enum create_kind { CR_FILE, CR_DIR, CR_SYMLINK, CR_NODE };

/* The new object's type and the mode it has when the client sends none;
 * a bad type or symlink target is refused before anything else (as knfsd
 * does, even before the handle is checked). */
static uint32_t create_type(const struct nfs3_create_args *a, enum create_kind kind,
			    struct fs_create_args *ca)
{
	switch (kind) {
	case CR_FILE:
		ca->mode = S_IFREG | (a->how == EXCLUSIVE ? 0600 : 0644);
		return NFS3_OK;
	case CR_DIR:
		ca->mode = S_IFDIR | 0755;
		return NFS3_OK;
	case CR_SYMLINK:
		if (a->target.len == 0 || memchr(a->target.s, '\0', a->target.len))
			return NFS3ERR_INVAL;
		ca->mode = S_IFLNK | 0777;
		ca->target = a->target.s;
		ca->target_len = a->target.len;
		return NFS3_OK;
	case CR_NODE:
		switch (a->how) {
		case NF3CHR: ca->mode = S_IFCHR | 0644; break;
		case NF3BLK: ca->mode = S_IFBLK | 0644; break;
		case NF3SOCK: ca->mode = S_IFSOCK | 0644; break;
		case NF3FIFO: ca->mode = S_IFIFO | 0644; break;
		default: return NFS3ERR_BADTYPE;
		}
		if (a->how == NF3CHR || a->how == NF3BLK)
			ca->rdev = makedev(a->major, a->minor);
		return NFS3_OK;
	}
	return NFS3ERR_SERVERFAULT;
}

/*
 * A CREATE that finds its name taken: a guarded one fails; an exclusive
 * one succeeds only as its own retransmission (the verifier matches) and
 * then waits for the original's durability; an unchecked one opens a
 * regular file and applies only the size it was sent (src/srv/perm.h
 * rule 11).
 */
static int create_existing(struct call *c, const struct nfs3_create_args *a,
			   struct fs_setattr *req, struct fs_inode *ip, uint64_t *csn)
{
	struct fs_attr at;
	int err;
	if (a->how == GUARDED)
		return -EEXIST;
	if ((err = fs_getattr(ip, &at)))
		return err;
	if (a->how == EXCLUSIVE) {
		if (!srv_createverf_matches(&at, a->verf))
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
static int create_file(struct call *c, const struct nfs3_create_args *a, struct fs_inode *dp,
		       struct fs_create_args *ca, struct fs_inode **ip, struct fs_result *dres,
		       uint64_t *csn)
{
	const struct nfs3_name *nm = &a->where.name;
	bool excl = a->how == EXCLUSIVE;
	struct fs_setattr req;
	sattr_to_fs(&a->sattr, &req);
	int err = srv_create_lookup(&c->e, dp, nm->s, nm->len, ip);
	if (err == -ENOENT) {
		/* an exclusive create sends no attributes */
		err = srv_create(&c->e, dp, nm->s, nm->len, ca, excl ? NULL : &req, ip, dres);
		*csn = dres->csn;
		if (!err && excl) {
			struct fs_setattr vsa = {.mask = FS_SET_ATIME | FS_SET_MTIME};
			struct fs_result vres = {0};
			srv_createverf_times(a->verf, &vsa.atime, &vsa.mtime);
			err = fs_setattr(*ip, &vsa, &vres);
			*csn = vres.csn ? vres.csn : *csn;
		}
		if (err != -EEXIST)
			return err;
		/* made meanwhile */
		err = srv_create_lookup(&c->e, dp, nm->s, nm->len, ip);
	}
	return err ? err : create_existing(c, a, &req, *ip, csn);
}

/*
 * CREATE, MKDIR, SYMLINK and MKNOD: srv_create decides the new object's
 * mode, owner and group (rule 10) and which of the attributes sent apply
 * after the creation.
 */
static void do_create(struct call *c, struct nfs3_create_args *a, struct nfs3_create_res *r,
		   enum create_kind kind)
{
	struct fs_inode *dp, *ip = NULL;
	struct fs_attr at;
	struct fs_create_args ca = {0};
	struct fs_result dres = {.want = FS_RES_ATTRS};
	uint64_t csn = 0;
	int err;
	if ((r->status = create_type(a, kind, &ca)))
		return;
	if ((r->status = fh_get(c, &a->where.dir, &dp)))
		return;
	const struct nfs3_name *nm = &a->where.name;
	if ((r->status = is_dir(dp)) || (r->status = name_check(nm)))
		goto out;
	if (kind == CR_FILE) {
		err = create_file(c, a, dp, &ca, &ip, &dres, &csn);
	} else {
		struct fs_setattr req;
		sattr_to_fs(&a->sattr, &req);
		err = srv_create(&c->e, dp, nm->s, nm->len, &ca, &req, &ip, &dres);
		csn = dres.csn;
	}
	r->status = nfs3_status(err);
	if (ip && !fs_getattr(ip, &at)) {
		r->fh_present = r->status == NFS3_OK;
		if (r->fh_present)
			fh_make(c, &at, &r->fh);
		fattr3(c, &at, &r->obj.a);
		r->obj.present = true;
	}
	if (ip)
		fs_iput(ip);
out:
	wcc_set(c, dp, &dres, 0, &r->dir);
	fs_iput(dp);
	reply_when_durable(c, csn, &r->status);
}

static void create_reg(struct call *c, void *args, void *res)
{
	do_create(c, args, res, CR_FILE);
}

static void create_dir(struct call *c, void *args, void *res)
{
	do_create(c, args, res, CR_DIR);
}

static void create_symlink(struct call *c, void *args, void *res)
{
	do_create(c, args, res, CR_SYMLINK);
}

static void create_node(struct call *c, void *args, void *res)
{
	do_create(c, args, res, CR_NODE);
}

static enum svc_stat nfs3_create(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	return changing(rq, rc, args, res, create_reg);
}

static enum svc_stat nfs3_mkdir(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	return changing(rq, rc, args, res, create_dir);
}

static enum svc_stat nfs3_symlink(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				  void *res)
{
	return changing(rq, rc, args, res, create_symlink);
}

static enum svc_stat nfs3_mknod(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	return changing(rq, rc, args, res, create_node);
}

/* ---- REMOVE, RMDIR, RENAME, LINK ---- */

static void remove_entry(struct call *c, struct nfs3_dirop_args *a, struct nfs3_wcc_res *r,
			 enum srv_rm what)
{
	struct fs_inode *dp;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	const struct nfs3_name *nm = &a->what.name;
	if ((r->status = fh_get(c, &a->what.dir, &dp)))
		return;
	if (!(r->status = is_dir(dp)) && !(r->status = name_check(nm)))
		r->status = nfs3_status(srv_remove(&c->e, dp, nm->s, nm->len, what, &fr));
	wcc_set(c, dp, &fr, 0, &r->wcc);
	fs_iput(dp);
	reply_when_durable(c, fr.csn, &r->status);
}

static void remove_file(struct call *c, void *args, void *res)
{
	remove_entry(c, args, res, SRV_RM_FILE);
}

static void remove_dir(struct call *c, void *args, void *res)
{
	remove_entry(c, args, res, SRV_RM_DIR);
}

static enum svc_stat nfs3_remove(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	return changing(rq, rc, args, res, remove_file);
}

static enum svc_stat nfs3_rmdir(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	return changing(rq, rc, args, res, remove_dir);
}

static void do_rename(struct call *c, void *args, void *res)
{
	struct nfs3_rename_args *a = args;
	struct nfs3_rename_res *r = res;
	struct fs_inode *sdp, *ddp = NULL;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	if ((r->status = fh_get(c, &a->from.dir, &sdp)))
		return;
	if ((r->status = fh_get(c, &a->to.dir, &ddp)) || (r->status = is_dir(sdp)) ||
	    (r->status = is_dir(ddp)) || (r->status = name_check(&a->from.name)) ||
	    (r->status = name_check(&a->to.name)))
		goto out;
	r->status = nfs3_status(srv_rename(&c->e, sdp, a->from.name.s, a->from.name.len, ddp,
					   a->to.name.s, a->to.name.len, &fr));
out:
	wcc_set(c, sdp, &fr, 0, &r->from);
	wcc_set(c, ddp, &fr, 1, &r->to);
	fs_iput(sdp);
	if (ddp)
		fs_iput(ddp);
	reply_when_durable(c, fr.csn, &r->status);
}

static enum svc_stat nfs3_rename(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	return changing(rq, rc, args, res, do_rename);
}

static void do_link(struct call *c, void *args, void *res)
{
	struct nfs3_link_args *a = args;
	struct nfs3_link_res *r = res;
	struct fs_inode *ip, *dp = NULL;
	struct fs_result fr = {.want = FS_RES_ATTRS};
	const struct nfs3_name *nm = &a->link.name;
	if ((r->status = fh_get(c, &a->fh, &ip)))
		return;
	if ((r->status = fh_get(c, &a->link.dir, &dp)) || (r->status = is_dir(dp)) ||
	    (r->status = name_check(nm)))
		goto out;
	r->status = nfs3_status(srv_link(&c->e, ip, dp, nm->s, nm->len, &fr));
out:
	if (fr.ino[1].has_post) {
		r->obj.present = true;
		fattr3(c, &fr.ino[1].post, &r->obj.a);
	} else {
		post_attr(c, ip, &r->obj);
	}
	wcc_set(c, dp, &fr, 0, &r->dir);
	fs_iput(ip);
	if (dp)
		fs_iput(dp);
	reply_when_durable(c, fr.csn, &r->status);
}

static enum svc_stat nfs3_link(struct svc_req *rq, const struct rpc_cred *rc, void *args,
			       void *res)
{
	return changing(rq, rc, args, res, do_link);
}

/* ---- READDIR, READDIRPLUS ---- */

/*
 * Cookies are the engine's (stable while entries come and go), so the
 * verifier only has to tie a cookie to its directory: a keyed hash of the
 * inode number and generation. Cookies 3..65535 are never handed out.
 */
static void cookie_verf(const struct srv *s, const struct fs_attr *dat, uint8_t out[NFS3_VERFSIZE])
{
	uint64_t in[2] = {dat->ino, dat->gen};
	uint64_t h = siphash24(s->verf_key, in, sizeof(in));
	memcpy(out, &h, sizeof(h));
}

struct rd_fill {
	struct nfs3_readdir_res *r;
	uint32_t cap;             /* ents allocated */
	size_t names_len, names_cap;
	uint32_t count, dircount; /* bytes left */
	bool plus;
	bool stopped;             /* an entry did not fit */
	uint64_t dotdot_ino;      /* ".." of the export root is itself */
};

static int rd_fill(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		   uint64_t cookie)
{
	struct rd_fill *f = arg;
	struct nfs3_readdir_res *r = f->r;
	uint32_t sz = nfs3_dirent_size((uint32_t)len, f->plus, FH_SIZE);
	uint32_t dsz = nfs3_dirent_size((uint32_t)len, false, 0);
	if (sz > f->count || dsz > f->dircount) {
		f->stopped = true;
		return 1;
	}
	f->count -= sz;
	f->dircount -= dsz;
	if (r->nents == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 32;
		r->ents = xrealloc(r->ents, f->cap * sizeof(*r->ents));
	}
	if (f->names_len + len > f->names_cap) {
		f->names_cap = (f->names_cap + len) * 2;
		r->names = xrealloc(r->names, f->names_cap);
	}
	struct nfs3_dirent *e = &r->ents[r->nents++];
	memset(e, 0, sizeof(*e));
	e->fileid = len == 2 && name[0] == '.' && name[1] == '.' && f->dotdot_ino ? f->dotdot_ino
										  : ino;
	e->cookie = cookie;
	e->name = (char *)(uintptr_t)f->names_len; /* an offset until the arena stops moving */
	e->namelen = (uint32_t)len;
	memcpy(r->names + f->names_len, name, len);
	f->names_len += len;
	return 0;
}

static enum svc_stat do_readdir(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res, bool plus)
{
	struct nfs3_readdir_args *a = args;
	struct nfs3_readdir_res *r = res;
	struct call c;
	struct fs_inode *dp;
	struct fs_attr dat;
	bool lookups;
	static const uint8_t zero[NFS3_VERFSIZE];
	call_init(&c, rq, rc);
	r->plus = plus;
	if ((r->status = fh_get(&c, &a->dir, &dp)))
		return SVC_OK;
	if ((r->status = nfs3_status(fs_getattr(dp, &dat))))
		goto out;
	if (!S_ISDIR(dat.mode)) {
		r->status = NFS3ERR_NOTDIR;
		goto out;
	}
	/* READDIRPLUS looks the names up: without search permission the
	 * entries come without handles and attributes, as knfsd's */
	if ((r->status = nfs3_status(srv_may_readdir(&c.e, dp, &lookups))))
		goto out;
	lookups = lookups && plus;
	cookie_verf(c.srv, &dat, r->verf);
	if (a->cookie && ((memcmp(a->verf, zero, NFS3_VERFSIZE) &&
			   memcmp(a->verf, r->verf, NFS3_VERFSIZE)) ||
			  (a->cookie > 2 && a->cookie < 65536))) {
		r->status = NFS3ERR_BAD_COOKIE;
		goto out;
	}
	uint32_t count = a->count < NFS3_DIRMAX ? a->count : NFS3_DIRMAX;
	uint32_t dircount = a->dircount < NFS3_DIRMAX ? a->dircount : NFS3_DIRMAX;
	if (count <= READDIR_RES_HDR) {
		r->status = NFS3ERR_TOOSMALL;
		goto out;
	}
	struct rd_fill f = {
		.r = r, .count = count - READDIR_RES_HDR, .dircount = dircount, .plus = plus,
		.dotdot_ino = export_is_root(c.e.ex, dp) ? dat.ino : 0,
	};
	int err = fs_readdir(dp, a->cookie, rd_fill, &f);
	if ((r->status = nfs3_status(err)))
		goto out;
	r->eof = !f.stopped;
	/* the arena no longer moves: offsets become pointers */
	for (uint32_t i = 0; i < r->nents; i++)
		r->ents[i].name = r->names + (uintptr_t)r->ents[i].name;
	if (r->nents == 0 && !r->eof) {
		r->status = NFS3ERR_TOOSMALL;
		goto out;
	}
	if (lookups) {
		for (uint32_t i = 0; i < r->nents; i++) {
			struct nfs3_dirent *e = &r->ents[i];
			struct fs_inode *ip;
			struct fs_attr at;
			/* by name, as LOOKUP: no attributes and no handle for a name
			 * removed or replaced since the directory was read, nor for a
			 * ".." outside the export */
			if (export_lookup_entry(c.e.ex, dp, e->name, e->namelen, e->fileid, &ip))
				continue;
			if (!fs_getattr(ip, &at)) {
				fattr3(&c, &at, &e->attr.a);
				e->attr.present = true;
				fh_make(&c, &at, &e->fh);
				e->fh_present = true;
			}
			fs_iput(ip);
		}
	}
out:
	post_attr(&c, dp, &r->dir);
	fs_iput(dp);
	return SVC_OK;
}

static enum svc_stat nfs3_readdir(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				  void *res)
{
	return do_readdir(rq, rc, args, res, false);
}

static enum svc_stat nfs3_readdirplus(struct svc_req *rq, const struct rpc_cred *rc,
				      void *args, void *res)
{
	return do_readdir(rq, rc, args, res, true);
}

static void nfs3_release_readdir(void *args, void *res)
{
	struct nfs3_readdir_res *r = res;
	free(r->ents);
	free(r->names);
}

/* ---- filesystem information ---- */

static enum svc_stat nfs3_fsstat(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct nfs3_fh_args *a = args;
	struct nfs3_fsstat_res *r = res;
	struct call c;
	struct fs_inode *ip;
	struct fs_statfs st;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->fh, &ip)))
		return SVC_OK;
	if (!(r->status = nfs3_status(fs_statfs(c.srv->fs, &st)))) {
		r->tbytes = st.blocks * st.bsize;
		r->fbytes = r->abytes = st.bfree * st.bsize;
		r->tfiles = st.files;
		r->ffiles = r->afiles = st.ffree;
		r->invarsec = 0;
	}
	post_attr(&c, ip, &r->obj);
	fs_iput(ip);
	return SVC_OK;
}

#define FSF3_LINK        0x1
#define FSF3_SYMLINK     0x2
#define FSF3_HOMOGENEOUS 0x8
#define FSF3_CANSETTIME  0x10

static enum svc_stat nfs3_fsinfo(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	struct nfs3_fh_args *a = args;
	struct nfs3_fsinfo_res *r = res;
	struct call c;
	struct fs_inode *ip;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->fh, &ip)))
		return SVC_OK;
	r->rtmax = r->rtpref = r->wtmax = r->wtpref = NFS3_MAXDATA;
	r->rtmult = r->wtmult = 4096;
	r->dtpref = 64 << 10;
	r->maxfilesize = FS_MAX_FILE_SIZE; /* writes past it fail with FBIG */
	r->time_delta = (struct nfs3_time){0, 1};
	r->properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
	post_attr(&c, ip, &r->obj);
	fs_iput(ip);
	return SVC_OK;
}

static enum svc_stat nfs3_pathconf(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				   void *res)
{
	struct nfs3_fh_args *a = args;
	struct nfs3_pathconf_res *r = res;
	struct call c;
	struct fs_inode *ip;
	struct fs_statfs st;
	call_init(&c, rq, rc);
	if ((r->status = fh_get(&c, &a->fh, &ip)))
		return SVC_OK;
	r->status = nfs3_status(fs_statfs(c.srv->fs, &st));
	r->linkmax = UINT32_MAX;
	r->name_max = st.namemax < NFS3_NAME_MAX ? st.namemax : NFS3_NAME_MAX;
	r->no_trunc = true;
	r->chown_restricted = true;
	r->case_insensitive = false;
	r->case_preserving = true;
	post_attr(&c, ip, &r->obj);
	fs_iput(ip);
	return SVC_OK;
}

/* COMMIT is an fsync of the whole file (rule 8): the range is not used,
 * since the engine tracks durability per inode, not per range. */
static void do_commit(struct call *c, void *args, void *res)
{
	struct nfs3_commit_args *a = args;
	struct nfs3_commit_res *r = res;
	struct fs_inode *ip;
	if ((r->status = fh_get(c, &a->fh, &ip)))
		return;
	wcc_set(c, ip, NULL, 0, &r->wcc); /* COMMIT changes no attribute */
	/* a force and a device flush on demand: as knfsd, only for a caller
	 * who may write the file, and never on a read-only export */
	if (!(r->status = nfs3_status(srv_may_commit(&c->e, ip)))) {
		c->csn = fs_sync_seq(ip, false);
		c->data = true;
		c->verf = r->verf; /* read once the data is durable */
		c->failed = fail_io;
		c->failed_arg = &r->status;
	}
	fs_iput(ip);
}

static enum svc_stat nfs3_commit(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	return changing(rq, rc, args, res, do_commit);
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
	const struct nfs3_read_args *a = args;
	uint32_t count = a->count < NFS3_MAXDATA ? a->count : NFS3_MAXDATA;
	return SVC_REPLY_HDR + RES_READ_MAX + count + 3;
}

static uint32_t readdir_bound(const void *args)
{
	const struct nfs3_readdir_args *a = args;
	uint32_t count = a->count < NFS3_DIRMAX ? a->count : NFS3_DIRMAX;
	return SVC_REPLY_HDR + RES_FIXED_MAX + count;
}

#define PROC_BOUND(n, dec, fn, enc, rel, at, rt, fl, max, bound)                                  \
	[NFS3PROC_##n] = {.name = #fn, .decode = dec, .handler = nfs3_##fn, .encode = enc,        \
			  .release = rel, .args_size = sizeof(struct at),                          \
			  .res_size = sizeof(struct rt), .flags = fl,                              \
			  .reply_max = SVC_REPLY_HDR + (max), .reply_bound = bound}
#define PROC(n, dec, fn, enc, rel, at, rt, fl)                                                     \
	PROC_BOUND(n, dec, fn, enc, rel, at, rt, fl, RES_FIXED_MAX, NULL)

static const struct svc_proc nfs3_procs[NFS3_NPROCS] = {
	[NFS3PROC_NULL] = {.name = "null", .decode = svc_dec_void, .handler = nfs3_null,
			   .encode = svc_enc_void, .flags = SVC_PROC_INLINE,
			   .reply_max = SVC_REPLY_HDR},
	PROC(GETATTR, nfs3_dec_fh, getattr, nfs3_enc_getattr, NULL, nfs3_fh_args,
	     nfs3_getattr_res, 0),
	PROC(SETATTR, nfs3_dec_setattr, setattr, nfs3_enc_wcc_res, NULL, nfs3_setattr_args,
	     nfs3_wcc_res, SVC_PROC_DRC),
	PROC(LOOKUP, nfs3_dec_dirop, lookup, nfs3_enc_lookup, NULL, nfs3_dirop_args,
	     nfs3_lookup_res, 0),
	PROC(ACCESS, nfs3_dec_access, access, nfs3_enc_access, NULL, nfs3_access_args,
	     nfs3_access_res, 0),
	PROC_BOUND(READLINK, nfs3_dec_fh, readlink, nfs3_enc_readlink, nfs3_release_readlink,
		   nfs3_fh_args, nfs3_readlink_res, 0, RES_FIXED_MAX + NFS3_MAXPATH, NULL),
	PROC_BOUND(READ, nfs3_dec_read, read, nfs3_enc_read, nfs3_release_read, nfs3_read_args,
		   nfs3_read_res, 0, RES_READ_MAX + NFS3_MAXDATA, read_bound),
	PROC(WRITE, nfs3_dec_write, write, nfs3_enc_write, NULL, nfs3_write_args, nfs3_write_res,
	     0),
	PROC(CREATE, nfs3_dec_create, create, nfs3_enc_create, NULL, nfs3_create_args,
	     nfs3_create_res, SVC_PROC_DRC),
	PROC(MKDIR, nfs3_dec_mkdir, mkdir, nfs3_enc_create, NULL, nfs3_create_args,
	     nfs3_create_res, SVC_PROC_DRC),
	PROC(SYMLINK, nfs3_dec_symlink, symlink, nfs3_enc_create, NULL, nfs3_create_args,
	     nfs3_create_res, SVC_PROC_DRC),
	PROC(MKNOD, nfs3_dec_mknod, mknod, nfs3_enc_create, NULL, nfs3_create_args,
	     nfs3_create_res, SVC_PROC_DRC),
	PROC(REMOVE, nfs3_dec_dirop, remove, nfs3_enc_wcc_res, NULL, nfs3_dirop_args,
	     nfs3_wcc_res, SVC_PROC_DRC),
	PROC(RMDIR, nfs3_dec_dirop, rmdir, nfs3_enc_wcc_res, NULL, nfs3_dirop_args, nfs3_wcc_res,
	     SVC_PROC_DRC),
	PROC(RENAME, nfs3_dec_rename, rename, nfs3_enc_rename, NULL, nfs3_rename_args,
	     nfs3_rename_res, SVC_PROC_DRC),
	PROC(LINK, nfs3_dec_link, link, nfs3_enc_link, NULL, nfs3_link_args, nfs3_link_res,
	     SVC_PROC_DRC),
	PROC_BOUND(READDIR, nfs3_dec_readdir, readdir, nfs3_enc_readdir, nfs3_release_readdir,
		   nfs3_readdir_args, nfs3_readdir_res, 0, RES_FIXED_MAX + NFS3_DIRMAX,
		   readdir_bound),
	PROC_BOUND(READDIRPLUS, nfs3_dec_readdirplus, readdirplus, nfs3_enc_readdir,
		   nfs3_release_readdir, nfs3_readdir_args, nfs3_readdir_res, 0,
		   RES_FIXED_MAX + NFS3_DIRMAX, readdir_bound),
	PROC(FSSTAT, nfs3_dec_fh, fsstat, nfs3_enc_fsstat, NULL, nfs3_fh_args, nfs3_fsstat_res,
	     0),
	PROC(FSINFO, nfs3_dec_fh, fsinfo, nfs3_enc_fsinfo, NULL, nfs3_fh_args, nfs3_fsinfo_res,
	     0),
	PROC(PATHCONF, nfs3_dec_fh, pathconf, nfs3_enc_pathconf, NULL, nfs3_fh_args,
	     nfs3_pathconf_res, 0),
	PROC(COMMIT, nfs3_dec_commit, commit, nfs3_enc_commit, NULL, nfs3_commit_args,
	     nfs3_commit_res, 0),
};

const struct svc_version nfs3_version = {.vers = 3, .nprocs = NFS3_NPROCS, .procs = nfs3_procs};
