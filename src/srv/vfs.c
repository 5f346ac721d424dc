/*
 * vfs.c - the operations of vfs.h: perm.h's rules in the order the Linux
 * VFS and knfsd apply them (docs/permissions.md), then the engine.
 */
#include "srv/vfs.h"
#include "srv/srv_priv.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* A refusal by a permission rule, or a conflict with another client's
 * layout, is counted where it is decided. */
static int counted(const struct srv_exp *e, int err)
{
	if (!err || !e->srv)
		return err;
	if (err == -EACCES || err == -EPERM)
		counter_inc(&e->srv->st.perm_denied);
	else if (err == -EWOULDBLOCK || err == -EINPROGRESS)
		counter_inc(&e->srv->st.jukebox);
	return err;
}

static int may_attr(const struct srv_exp *e, const struct fs_attr *a, unsigned acc)
{
	return counted(e, srv_may(&e->cred, e->opts, a, acc));
}

static int may(const struct srv_exp *e, struct fs_inode *ip, unsigned acc)
{
	struct fs_attr a;
	int err = fs_getattr(ip, &a);
	return err ? err : may_attr(e, &a, acc);
}

/* Other clients' layouts of ip (and of other, a second file of the call)
 * are recalled (rule 9). */
static int break_layouts(const struct srv_exp *e, struct fs_inode *ip, struct fs_inode *other)
{
	return counted(e, fs_break_layouts(ip, other, e->holder));
}

static bool is_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
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

int srv_create_lookup(const struct srv_exp *e, struct fs_inode *dir, const char *name, size_t len,
		      struct fs_inode **ip)
{
	*ip = NULL;
	int err = may(e, dir, SRV_MAY_EXEC);
	if (err)
		return err;
	return is_dot(name, len) ? -EEXIST : fs_lookup(dir, name, len, ip);
}

int srv_create(const struct srv_exp *e, struct fs_inode *dir, const char *name, size_t len,
	       struct fs_create_args *ca, const struct fs_setattr *req, struct fs_inode **ip,
	       struct fs_result *res)
{
	struct fs_attr dat, at;
	int err;
	*ip = NULL;
	/* the name is looked up first (rule 2): search permission decides
	 * before the directory's write permission or a read-only export */
	if ((err = fs_getattr(dir, &dat)) || (err = may_attr(e, &dat, SRV_MAY_EXEC)))
		return err;
	if (is_dot(name, len))
		return -EEXIST;
	if ((err = may_attr(e, &dat, SRV_MAY_CREATE)))
		return err;
	if (req && (req->mask & FS_SET_MODE))
		ca->mode = (ca->mode & S_IFMT) | (req->mode & 07777);
	if ((err = counted(e, srv_new_object(&e->cred, &dat, req, &ca->mode, &ca->uid, &ca->gid))))
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
	    !(err = counted(e, srv_setattr_prepare(&e->cred, e->opts, &at, &sa))))
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
	if ((err = fs_getattr(dir, &dat)) || (err = may_attr(e, &dat, SRV_MAY_REMOVE)))
		return err;
	if ((err = entry_attr(dir, name, len, &at)) ||
	    (err = counted(e, srv_may_delete(&e->cred, e->opts, &dat, &at))))
		return err;
	bool isdir = what == SRV_RM_DIR || (what == SRV_RM_ANY && S_ISDIR(at.mode));
	if (!isdir && S_ISREG(at.mode) && at.nlink == 1) {
		/* the last link: a client writing it through a layout must stop */
		struct fs_inode *ip;
		if (!fs_lookup(dir, name, len, &ip)) {
			err = break_layouts(e, ip, NULL);
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
	if ((err = counted(
		     e, srv_may_rename(&e->cred, e->opts, &sdat, &src, &ddat, terr ? NULL : &tgt))))
		return err;
	if (!terr && S_ISREG(tgt.mode) && tgt.nlink == 1) {
		/* the target's last link goes: a client writing it through a
		 * layout must stop first (rule 9) */
		struct fs_inode *tp;
		if (!fs_lookup(ddir, dname, dlen, &tp)) {
			err = break_layouts(e, tp, NULL);
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
	if ((err = fs_getattr(ip, &at)) ||
	    (err = counted(e, srv_setattr_prepare(&e->cred, e->opts, &at, sa))))
		return err;
	if ((sa->mask & FS_SET_SIZE) && (err = break_layouts(e, ip, NULL)))
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
	    (err = may_attr(e, &at, SRV_MAY_WRITE | SRV_MAY_OWNER_OVERRIDE)) ||
	    (err = break_layouts(e, ip, other)))
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
	/* srv_may lets execute permission read a regular file (rule 3) */
	return may(e, ip, SRV_MAY_READ | SRV_MAY_OWNER_OVERRIDE);
}

int srv_may_readdir(const struct srv_exp *e, struct fs_inode *dir, bool *lookups)
{
	struct fs_attr a;
	int err = fs_getattr(dir, &a);
	if (err || (err = may_attr(e, &a, SRV_MAY_READ)))
		return err;
	/* not a refusal: the listing goes without attributes */
	if (lookups)
		*lookups = !srv_may(&e->cred, e->opts, &a, SRV_MAY_EXEC);
	return 0;
}

int srv_may_commit(const struct srv_exp *e, struct fs_inode *ip)
{
	return may(e, ip, SRV_MAY_WRITE | SRV_MAY_OWNER_OVERRIDE);
}

int srv_may_layout(const struct srv_exp *e, struct fs_inode *ip, bool rw)
{
	unsigned acc = rw ? SRV_MAY_READ | SRV_MAY_WRITE : SRV_MAY_READ;
	return may(e, ip, acc | SRV_MAY_OWNER_OVERRIDE);
}

int srv_may_open(const struct srv_exp *e, struct fs_inode *ip, unsigned acc)
{
	return may(e, ip, acc);
}

/* ---- exclusive create ---- */

void srv_createverf_times(const uint8_t v[SRV_CREATEVERF_SIZE], struct timespec *atime,
			  struct timespec *mtime)
{
	uint32_t hi, lo;
	memcpy(&hi, v, 4);
	memcpy(&lo, v + 4, 4);
	*atime = (struct timespec){.tv_sec = hi};
	*mtime = (struct timespec){.tv_sec = lo};
}

bool srv_createverf_matches(const struct fs_attr *a, const uint8_t v[SRV_CREATEVERF_SIZE])
{
	struct timespec at, mt;
	srv_createverf_times(v, &at, &mt);
	return S_ISREG(a->mode) && a->atime.tv_sec == at.tv_sec && a->atime.tv_nsec == 0 &&
	       a->mtime.tv_sec == mt.tv_sec && a->mtime.tv_nsec == 0;
}
