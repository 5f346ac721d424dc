/*
 * ops.c - the operations of ops.h: perm.h's rules in the order the Linux
 * VFS and knfsd apply them (docs/permissions.md), then the engine.
 */
#include "srv/ops.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static int may(const struct srv_exp *e, struct fs_inode *ip, unsigned acc)
{
	struct fs_attr a;
	int err = fs_getattr(ip, &a);
	return err ? err : srv_may(&e->cred, e->opts, &a, acc);
}

/* The attributes of what name names in dir now. */
static int entry_attr(struct fs_inode *dir, const char *name, size_t len, struct fs_attr *a)
{
	struct fs_inode *ip;
	int err = fs_lookup(dir, name, len, &ip);
	if (err)
		return err;
	err = fs_getattr(ip, a);
	fs_iput(ip);
	return err;
}

static int prepare_write(const struct srv_exp *e, struct fs_inode *ip, struct fs_inode *other);

int srv_lookup(const struct srv_exp *e, struct fs_inode *dir, const char *name, size_t len,
	       struct fs_inode **ip)
{
	int err = may(e, dir, SRV_MAY_EXEC);
	return err ? err : export_lookup(e->ex, dir, name, len, ip);
}

int srv_create(const struct srv_exp *e, struct fs_inode *dir, const char *name, size_t len,
	       struct fs_create_args *ca, const struct fs_setattr *req, struct fs_inode **ip,
	       struct fs_result *res)
{
	struct fs_attr dat, at;
	int err;
	*ip = NULL;
	if ((err = fs_getattr(dir, &dat)) ||
	    (err = srv_may(&e->cred, e->opts, &dat, SRV_MAY_CREATE)))
		return err;
	if (req && (req->mask & FS_SET_MODE))
		ca->mode = (ca->mode & S_IFMT) | (req->mode & 07777);
	if ((err = srv_new_object(&e->cred, &dat, req, &ca->mode, &ca->uid, &ca->gid)))
		return err;
	if ((err = fs_create(dir, name, len, ca, ip, res)))
		return err;
	if (!req)
		return 0;
	/* the size and times are left, as a SETATTR of the new object; its
	 * commit sequence is the later one */
	struct fs_setattr sa = *req;
	srv_create_sattr(&sa);
	if (!sa.mask)
		return 0;
	struct fs_result sres = {0};
	if (!(err = fs_getattr(*ip, &at)) &&
	    !(err = srv_setattr_prepare(&e->cred, e->opts, &at, &sa)))
		err = fs_setattr(*ip, &sa, &sres);
	if (res && sres.csn > res->csn)
		res->csn = sres.csn;
	if (err) {
		fs_iput(*ip);
		*ip = NULL;
	}
	return err;
}

int srv_remove(const struct srv_exp *e, struct fs_inode *dir, const char *name, size_t len,
	       enum srv_rm what, struct fs_result *res)
{
	struct fs_attr dat, at;
	int err;
	/* the directory's permission before the name's existence, as knfsd */
	if ((err = fs_getattr(dir, &dat)) ||
	    (err = srv_may(&e->cred, e->opts, &dat, SRV_MAY_REMOVE)))
		return err;
	if ((err = entry_attr(dir, name, len, &at)) ||
	    (err = srv_may_delete(&e->cred, e->opts, &dat, &at)))
		return err;
	bool isdir = what == SRV_RM_DIR || (what == SRV_RM_ANY && S_ISDIR(at.mode));
	if (!isdir && S_ISREG(at.mode) && at.nlink == 1) {
		/* the last link: a client writing it through a layout must stop */
		struct fs_inode *ip;
		if (!fs_lookup(dir, name, len, &ip)) {
			err = fs_break_layouts(ip, NULL, e->holder);
			fs_iput(ip);
			if (err)
				return err;
		}
	}
	return isdir ? fs_rmdir(dir, name, len, res) : fs_unlink(dir, name, len, res);
}

int srv_rename(const struct srv_exp *e, struct fs_inode *sdir, const char *sname, size_t slen,
	       struct fs_inode *ddir, const char *dname, size_t dlen, struct fs_result *res)
{
	struct fs_attr sdat, ddat, src, tgt;
	int err;
	if ((err = may(e, sdir, SRV_MAY_REMOVE)) || (err = may(e, ddir, SRV_MAY_CREATE)))
		return err;
	/* the sticky rule for the source and an existing target, and a moved
	 * directory's "..", judged on the entries as they are now */
	if ((err = fs_getattr(sdir, &sdat)) || (err = fs_getattr(ddir, &ddat)) ||
	    (err = entry_attr(sdir, sname, slen, &src)))
		return err;
	int terr = entry_attr(ddir, dname, dlen, &tgt);
	if (terr && terr != -ENOENT)
		return terr;
	if ((err = srv_may_rename(&e->cred, e->opts, &sdat, &src, &ddat, terr ? NULL : &tgt)))
		return err;
	if (!terr && S_ISREG(tgt.mode) && tgt.nlink == 1) {
		/* the target's last link goes: a client writing it through a
		 * layout must stop first (rule 9) */
		struct fs_inode *tp;
		if (!fs_lookup(ddir, dname, dlen, &tp)) {
			err = fs_break_layouts(tp, NULL, e->holder);
			fs_iput(tp);
			if (err)
				return err;
		}
	}
	return fs_rename(sdir, sname, slen, ddir, dname, dlen, res);
}

int srv_link(const struct srv_exp *e, struct fs_inode *ip, struct fs_inode *dir, const char *name,
	     size_t len, struct fs_result *res)
{
	int err = may(e, dir, SRV_MAY_CREATE);
	return err ? err : fs_link(ip, dir, name, len, res);
}

int srv_setattr(const struct srv_exp *e, struct fs_inode *ip, struct fs_setattr *sa,
		struct fs_result *res)
{
	struct fs_attr at;
	int err;
	if ((err = fs_getattr(ip, &at)) || (err = srv_setattr_prepare(&e->cred, e->opts, &at, sa)))
		return err;
	if ((sa->mask & FS_SET_SIZE) && (err = fs_break_layouts(ip, NULL, e->holder)))
		return err;
	return fs_setattr(ip, sa, res);
}

int srv_write(const struct srv_exp *e, struct fs_inode *ip, uint64_t off, const void *buf,
	      size_t len, bool stable, struct fs_result *res, bool *data_logged)
{
	*data_logged = false;
	/* set-id bits go before the data does; their change is covered by
	 * the write's own sync */
	int err = prepare_write(e, ip, NULL);
	if (err)
		return err;
	return stable ? fs_write_sync(ip, off, buf, len, res, data_logged)
		      : fs_write(ip, off, buf, len, res);
}

/* What a write to ip needs before its data goes: permission with the
 * owner override, other clients' layouts recalled, set-id bits cleared. */
static int prepare_write(const struct srv_exp *e, struct fs_inode *ip, struct fs_inode *other)
{
	struct fs_attr at;
	int err;
	if ((err = fs_getattr(ip, &at)) ||
	    (err = srv_may(&e->cred, e->opts, &at, SRV_MAY_WRITE | SRV_MAY_OWNER_OVERRIDE)) ||
	    (err = fs_break_layouts(ip, other, e->holder)))
		return err;
	struct fs_setattr kill = {.mask = srv_write_kill(&e->cred, &at)};
	return kill.mask ? fs_setattr(ip, &kill, NULL) : 0;
}

int srv_fallocate(const struct srv_exp *e, struct fs_inode *ip, int mode, uint64_t off,
		  uint64_t len, struct fs_result *res)
{
	int err = prepare_write(e, ip, NULL);
	return err ? err : fs_fallocate(ip, mode, off, len, res);
}

int srv_copy(const struct srv_exp *e, struct fs_inode *src, uint64_t soff, struct fs_inode *dst,
	     uint64_t doff, uint64_t len, uint64_t *copied, struct fs_result *res)
{
	int err = srv_may_read(e, src);
	if (!err)
		err = prepare_write(e, dst, src);
	return err ? err : fs_copy_range(src, soff, dst, doff, len, copied, res);
}

int srv_may_read(const struct srv_exp *e, struct fs_inode *ip)
{
	struct fs_attr a;
	int err = fs_getattr(ip, &a);
	if (err)
		return err;
	err = srv_may(&e->cred, e->opts, &a, SRV_MAY_READ | SRV_MAY_OWNER_OVERRIDE);
	/* execute permission lets a client read a program it runs */
	if (err && !srv_may(&e->cred, e->opts, &a, SRV_MAY_EXEC))
		err = 0;
	return err;
}

int srv_may_commit(const struct srv_exp *e, struct fs_inode *ip)
{
	return may(e, ip, SRV_MAY_WRITE | SRV_MAY_OWNER_OVERRIDE);
}
