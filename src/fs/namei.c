/*
 * namei.c - namespace and attribute operations of the fs API (fs.h).
 *
 * Every change is one transaction: the inodes it touches are joined (their
 * metadata locks taken in inode-number order) before anything is allocated;
 * directories being changed are held by their I/O lock, exclusively, in
 * the order of fs_priv.h (D1-D5): a directory before its entries, and a
 * rename's two parents under the filesystem's rename lock, an ancestor
 * first. The rename lock also makes the loop check (a directory may not
 * move under itself) see a tree nobody else is rearranging.
 *
 * A name's last link going does not free the inode: it goes into the
 * orphan tree in the same transaction, and is freed when its last
 * reference is released (fs_iput), possibly over several transactions.
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "fs/fs_priv.h"

static int check_name(const char *name, size_t len)
{
	if (len == 0)
		return -EINVAL;
	if (len > FS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	return 0;
}

static bool is_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

/* The mode of an inode the caller holds no lock of (setattr changes it). */
static uint32_t ino_mode(struct fs_inode *ip)
{
	mutex_lock(&ip->i_ilock);
	uint32_t mode = ip->i_d.mode;
	mutex_unlock(&ip->i_ilock);
	return mode;
}

/*
 * Before a directory ip named in dp is locked under dp (D1): its own parent
 * must be dp. On a damaged image it may say another; locking it then would
 * break the lock order the parents define, so the entry is corruption.
 */
static int check_child_dir(struct fs_inode *dp, struct fs_inode *ip)
{
	mutex_lock(&ip->i_ilock);
	uint64_t parent = ip->i_d.parent;
	mutex_unlock(&ip->i_ilock);
	if (parent == dp->i_ino)
		return 0;
	msg_err("fs: directory %llu names directory %llu, whose parent is %llu",
		(unsigned long long)dp->i_ino, (unsigned long long)ip->i_ino,
		(unsigned long long)parent);
	return -EUCLEAN;
}

/* A directory that may get entries: a directory, still linked. */
static int check_live_dir(struct fs_inode *dp)
{
	if (!S_ISDIR(dp->i_d.mode))
		return -ENOTDIR;
	if (dp->i_d.nlink == 0)
		return -ENOENT;
	return 0;
}

/* A name about to be added to dp (its I/O lock held for writing): dp is a
 * live directory and has no entry of that name. */
static int check_new_name(struct fs_inode *dp, const char *name, size_t len)
{
	assert_wrlocked(&dp->i_iolock);
	mutex_lock(&dp->i_ilock);
	int err = check_live_dir(dp);
	mutex_unlock(&dp->i_ilock);
	if (err)
		return err;
	uint64_t existing;
	err = dir_lookup(dp, name, len, &existing, NULL);
	return err == 0 ? -EEXIST : (err == -ENOENT ? 0 : err);
}

void ino_attr(const struct fs_inode *ip, struct fs_attr *a)
{
	assert_locked(&ip->i_ilock);
	const struct fs_icore *c = &ip->i_d;
	a->ino = ip->i_ino;
	a->gen = c->gen;
	a->mode = c->mode;
	a->nlink = c->nlink;
	a->uid = c->uid;
	a->gid = c->gid;
	a->size = c->size;
	a->used = c->nblocks * FS_BLOCK_SIZE;
	a->rdev = c->rdev;
	a->atime = c->atime;
	a->mtime = c->mtime;
	a->ctime = c->ctime;
	a->btime = c->btime;
	a->change = c->change;
}

int fs_getattr(struct fs_inode *ip, struct fs_attr *a)
{
	mutex_lock(&ip->i_ilock);
	ino_attr(ip, a);
	mutex_unlock(&ip->i_ilock);
	return 0;
}

void res_pre(struct fs_result *res, unsigned slot, struct fs_inode *ip)
{
	if (!res || !(res->want & FS_RES_ATTRS))
		return;
	assert_locked(&ip->i_ilock);
	struct fs_res_ino *ri = &res->ino[slot];
	if (!ri->has_post) {
		/* the call's first look: what it starts from */
		ino_attr(ip, &ri->post);
		ri->pre = (struct fs_wcc){.size = ri->post.size,
					  .mtime = ri->post.mtime,
					  .ctime = ri->post.ctime,
					  .change = ri->post.change};
		ri->has_pre = ri->has_post = true;
	} else if (ip->i_d.change != ri->post.change) {
		/* changed by someone else between two of the call's transactions */
		ri->has_pre = false;
	}
}

void res_post(struct fs_result *res, unsigned slot, struct fs_inode *ip)
{
	if (!res || !(res->want & FS_RES_ATTRS))
		return;
	assert_locked(&ip->i_ilock);
	ino_attr(ip, &res->ino[slot].post);
}

int fs_lookup(struct fs_inode *dp, const char *name, size_t len, struct fs_inode **ipp)
{
	*ipp = NULL;
	if (fs_is_shutdown(dp->i_fs))
		return -EIO;
	if (len == 1 && name[0] == '.') {
		mutex_lock(&dp->i_ilock);
		bool isdir = S_ISDIR(dp->i_d.mode);
		mutex_unlock(&dp->i_ilock);
		if (!isdir)
			return -ENOTDIR;
		atomic_fetch_add(&dp->i_ref, 1);
		*ipp = dp;
		return 0;
	}
	bool dotdot = len == 2 && name[0] == '.' && name[1] == '.';
	int err = dotdot ? 0 : check_name(name, len);
	if (err)
		return err;
	/*
	 * The inode is taken while what names it cannot change: the entry under
	 * the directory's I/O lock (names come and go only under it, held for
	 * writing), and for ".." the directory's parent under the rename lock
	 * too (a directory changes parent only in a cross-directory rename,
	 * which holds it). A named inode is linked, so its number can be
	 * neither freed nor reused before the reference is taken. Taken after
	 * the locks, an unlink and a create in between could hand out another
	 * file under this name. A removed directory names nothing, not even
	 * its old parent (ENOENT).
	 */
	struct fs *fs = dp->i_fs;
	if (dotdot)
		mutex_lock(&fs->f_rename_lock);
	rwlock_rdlock(&dp->i_iolock);
	mutex_lock(&dp->i_ilock);
	err = check_live_dir(dp);
	uint64_t ino = dp->i_d.parent;
	mutex_unlock(&dp->i_ilock);
	if (!err && !dotdot)
		err = dir_lookup(dp, name, len, &ino, NULL);
	if (!err)
		err = fs_iget(fs, ino, 0, ipp);
	rwlock_unlock(&dp->i_iolock);
	if (dotdot)
		mutex_unlock(&fs->f_rename_lock);
	if (err == -ESTALE) {
		msg_err("fs: directory %llu names inode %llu that does not exist",
			(unsigned long long)dp->i_ino, (unsigned long long)ino);
		err = -EUCLEAN;
	}
	return err;
}

int fs_readlink(struct fs_inode *ip, char *buf, size_t size, size_t *len)
{
	if (fs_is_shutdown(ip->i_fs))
		return -EIO;
	rwlock_rdlock(&ip->i_iolock);
	mutex_lock(&ip->i_ilock);
	int err = 0;
	uint64_t n = ip->i_d.size;
	if (!S_ISLNK(ip->i_d.mode)) {
		err = -EINVAL;
	} else if (n > size) {
		err = -ERANGE;
	} else if (!(ip->i_d.flags & FS_DIF_SYMLINK_EXT)) {
		memcpy(buf, ip->i_d.symlink, n);
	} else {
		struct bmap_ext e;
		bool hole;
		err = bmap_lookup(ip, 0, &e, &hole);
		if (!err && (hole || e.unwritten || n > FS_BLOCK_SIZE))
			err = -EUCLEAN;
		uint8_t *blk = NULL;
		if (!err) {
			blk = xmalloc_aligned(4096, FS_BLOCK_SIZE);
			err = dev_read(ip->i_fs->f_ddev, blk, FS_BLOCK_SIZE, fs_daddr(e.start));
		}
		if (!err)
			memcpy(buf, blk, n);
		free(blk);
	}
	mutex_unlock(&ip->i_ilock);
	rwlock_unlock(&ip->i_iolock);
	if (!err)
		*len = (size_t)n;
	return err;
}

int fs_create(struct fs_inode *dp, const char *name, size_t len, const struct fs_create_args *a,
	      struct fs_inode **ipp, struct fs_result *res)
{
	struct fs *fs = dp->i_fs;
	*ipp = NULL;
	res_init(res);
	int err = check_name(name, len);
	if (err)
		return err;
	if (is_dot(name, len))
		return -EEXIST;
	uint32_t type = a->mode & S_IFMT;
	if (!ino_ftype(a->mode))
		return -EINVAL;
	if (type == S_IFLNK && (!a->target || !a->target_len || a->target_len > FS_SYMLINK_MAX))
		return a->target_len > FS_SYMLINK_MAX ? -ENAMETOOLONG : -EINVAL;

	rwlock_wrlock(&dp->i_iolock);
	err = check_new_name(dp, name, len);
	if (err)
		goto out_unlock;

	struct fstx *tx;
	uint64_t blocks = FS_CHUNK_BLOCKS + dp->i_d.root_level + 4 + 2;
	err = fstx_begin(fs, blocks, 0, &tx);
	if (err)
		goto out_unlock;
	fstx_unordered(tx); /* a name and an empty inode */
	ino_join(tx, dp);
	res_pre(res, 0, dp);
	uint64_t ino;
	err = ialloc_alloc(tx, dp->i_ino, &ino);
	if (err) {
		fstx_cancel(tx);
		goto out_unlock;
	}
	struct fs_inode *ip;
	err = ino_get_new(fs, ino, &ip);
	if (err) {
		fstx_cancel(tx); /* the index changed: shuts down */
		goto out_unlock;
	}
	struct fs_icore *c = &ip->i_d;
	c->mode = a->mode & (S_IFMT | 07777); /* other bits would make the inode corrupt */
	c->uid = a->uid;
	c->gid = a->gid;
	c->nlink = type == S_IFDIR ? 2 : 1;
	fs_now(&c->btime);
	c->atime = c->mtime = c->ctime = c->btime;
	c->change = 1;
	c->rdev = (type == S_IFCHR || type == S_IFBLK) ? a->rdev : 0;
	c->parent = type == S_IFDIR ? dp->i_ino : 0;
	ino_join_locked(tx, ip);
	ino_log(tx, ip, FS_ILOG_CORE);
	if (type == S_IFDIR) {
		err = dir_create_tree(tx, ip);
		dp->i_d.nlink++;
	} else if (type == S_IFLNK) {
		c->size = a->target_len;
		if (a->target_len <= FS_INLINE_SYMLINK) {
			memcpy(c->symlink, a->target, a->target_len);
		} else {
			uint64_t start, got;
			err = alloc_extent(tx, fs_ino_block(ino), 1, 1, &start, &got);
			if (!err) {
				uint8_t *blk = xmalloc_aligned(4096, FS_BLOCK_SIZE);
				memset(blk, 0, FS_BLOCK_SIZE);
				memcpy(blk, a->target, a->target_len);
				/* written before the commit that points at it: the
				 * journal's data flush orders them */
				err = dev_write(fs->f_ddev, blk, FS_BLOCK_SIZE, fs_daddr(start), 0);
				free(blk);
			}
			if (!err) {
				c->flags |= FS_DIF_SYMLINK_EXT;
				err = bmap_add(tx, ip, 0, start, 1, false);
			}
		}
	}
	if (!err)
		err = dir_add(tx, dp, name, len, ino, ino_ftype(a->mode));
	ino_touch(dp, true);
	ino_log(tx, dp, FS_ILOG_CORE | FS_ILOG_DATA);
	if (err) {
		/* the transaction changed things: cancelling shuts down */
		fstx_cancel(tx);
		rwlock_unlock(&ip->i_iolock);
		fs_iput(ip);
		goto out_unlock;
	}
	res_post(res, 0, dp);
	err = fstx_commit(tx, res);
	rwlock_unlock(&ip->i_iolock); /* ino_get_new's */
	if (err) {
		fs_iput(ip);
		goto out_unlock;
	}
	*ipp = ip;
out_unlock:
	rwlock_unlock(&dp->i_iolock);
	return err;
}

int fs_link(struct fs_inode *ip, struct fs_inode *dp, const char *name, size_t len,
	    struct fs_result *res)
{
	struct fs *fs = dp->i_fs;
	res_init(res);
	int err = check_name(name, len);
	if (err)
		return err;
	if (is_dot(name, len))
		return -EEXIST;
	if (ip->i_fs != fs)
		return -EXDEV;
	if (S_ISDIR(ino_mode(ip)))
		return -EPERM;
	rwlock_wrlock(&dp->i_iolock);
	err = check_new_name(dp, name, len);
	if (err)
		goto out_unlock;
	struct fstx *tx;
	err = fstx_begin(fs, dp->i_d.root_level + 4, 0, &tx);
	if (err)
		goto out_unlock;
	fstx_unordered(tx); /* a name */
	ino_join2(tx, dp, ip);
	res_pre(res, 0, dp);
	res_pre(res, 1, ip);
	if (ip->i_d.nlink == 0) {
		fstx_cancel(tx);
		err = -ENOENT;
		goto out_unlock;
	}
	if (ip->i_d.nlink >= UINT32_MAX - 1) {
		fstx_cancel(tx);
		err = -EMLINK;
		goto out_unlock;
	}
	err = dir_add(tx, dp, name, len, ip->i_ino, ino_ftype(ip->i_d.mode));
	if (err) {
		fstx_cancel(tx);
		goto out_unlock;
	}
	ip->i_d.nlink++;
	ino_touch(ip, false);
	ino_log(tx, ip, FS_ILOG_CORE);
	ino_touch(dp, true);
	ino_log(tx, dp, FS_ILOG_CORE | FS_ILOG_DATA);
	res_post(res, 0, dp);
	res_post(res, 1, ip);
	err = fstx_commit(tx, res);
out_unlock:
	rwlock_unlock(&dp->i_iolock);
	return err;
}

/* ip loses the link an entry of dp gave it, in tx (which holds both): a
 * directory all its links, and dp the one its ".." gave; with no link
 * left ip becomes an orphan, freed when its last reference goes. */
static int drop_link(struct fstx *tx, struct fs_inode *dp, struct fs_inode *ip, bool isdir)
{
	if (isdir) {
		ip->i_d.nlink = 0;
		dp->i_d.nlink--;
	} else {
		ip->i_d.nlink--;
	}
	int err = ip->i_d.nlink == 0 ? orphan_add(tx, ip->i_ino) : 0;
	ino_touch(ip, false);
	ino_log(tx, ip, FS_ILOG_CORE);
	return err;
}

static int remove_common(struct fs_inode *dp, const char *name, size_t len, bool rmdir,
			 struct fs_result *res)
{
	struct fs *fs = dp->i_fs;
	res_init(res);
	int err = check_name(name, len);
	if (err)
		return err;
	if (is_dot(name, len))
		return rmdir ? -EINVAL : -EISDIR;
	rwlock_wrlock(&dp->i_iolock);
	struct fs_inode *ip = NULL;
	mutex_lock(&dp->i_ilock);
	err = S_ISDIR(dp->i_d.mode) ? 0 : -ENOTDIR;
	mutex_unlock(&dp->i_ilock);
	uint64_t ino;
	if (!err)
		err = dir_lookup(dp, name, len, &ino, NULL);
	if (!err)
		err = fs_iget_orphan(fs, ino, &ip);
	if (err)
		goto out_unlock;
	bool isdir = S_ISDIR(ino_mode(ip));
	if (rmdir && !isdir) {
		err = -ENOTDIR;
		goto out_unlock;
	}
	if (!rmdir && isdir) {
		err = -EISDIR;
		goto out_unlock;
	}
	if (isdir && ip == dp) {
		err = -EUCLEAN; /* an entry naming its own directory */
		goto out_unlock;
	}
	if (isdir) {
		/* the child after its parent (fs_priv.h, D1) */
		err = check_child_dir(dp, ip);
		if (err)
			goto out_unlock;
		bool empty;
		rwlock_wrlock(&ip->i_iolock);
		err = dir_is_empty(ip, &empty);
		if (!err && !empty)
			err = -ENOTEMPTY;
		if (err) {
			rwlock_unlock(&ip->i_iolock);
			goto out_unlock;
		}
	}
	struct fstx *tx;
	err = fstx_begin_freeing(fs, dp->i_d.root_level + 4, 0, &tx);
	if (!err) {
		fstx_unordered(tx); /* a name, maybe an orphan */
		ino_join2(tx, dp, ip);
		res_pre(res, 0, dp);
		fstx_lock(tx, FSTX_IALLOC);
		err = dir_remove(tx, dp, name, len);
		if (err) {
			fstx_cancel(tx);
		} else {
			err = drop_link(tx, dp, ip, isdir);
			ino_touch(dp, true);
			ino_log(tx, dp, FS_ILOG_CORE | FS_ILOG_DATA);
			res_post(res, 0, dp);
			int cerr = fstx_commit(tx, res);
			if (!err)
				err = cerr;
		}
	}
	if (isdir)
		rwlock_unlock(&ip->i_iolock);
out_unlock:
	rwlock_unlock(&dp->i_iolock);
	if (ip) {
		eof_forget(ip);
		fs_iput(ip); /* the last reference of an unlinked inode frees it */
	}
	return err;
}

int fs_unlink(struct fs_inode *dp, const char *name, size_t len, struct fs_result *res)
{
	return remove_common(dp, name, len, false, res);
}

int fs_rmdir(struct fs_inode *dp, const char *name, size_t len, struct fs_result *res)
{
	return remove_common(dp, name, len, true, res);
}

int fs_is_subdir(struct fs_inode *dir, struct fs_inode *anc, bool *yes)
{
	struct fs *fs = dir->i_fs;
	*yes = false;
	if (fs_is_shutdown(fs))
		return -EIO;
	if (anc->i_fs != fs)
		return 0;
	if (anc->i_ino == le64toh(fs->f_sb->sb_root_ino)) {
		*yes = true; /* everything is */
		return 0;
	}
	/* no directory changes parent while the walk runs: the answer held at
	 * one moment, however renames interleave */
	mutex_lock(&fs->f_rename_lock);
	mutex_lock(&dir->i_ilock);
	bool live = dir->i_d.nlink > 0;
	mutex_unlock(&dir->i_ilock);
	int err = live ? dir_is_ancestor(anc, dir, yes) : -ESTALE;
	mutex_unlock(&fs->f_rename_lock);
	return err;
}

static void join_sorted(struct fstx *tx, struct fs_inode **v, unsigned n)
{
	/* distinct inodes in inode-number order */
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			if (v[j] && (!v[i] || v[j]->i_ino < v[i]->i_ino)) {
				struct fs_inode *t = v[i];
				v[i] = v[j];
				v[j] = t;
			}
	for (unsigned i = 0; i < n; i++)
		if (v[i] && (i == 0 || v[i] != v[i - 1]))
			ino_join(tx, v[i]);
}

/* A rename's new name in ddp, in tx (which holds ddp, src and tgt): an
 * entry added for src, or tgt's entry (tgt: NULL when the name is free)
 * pointed at src instead and tgt's link dropped (drop_link). */
static int rename_entry(struct fstx *tx, struct fs_inode *ddp, const char *dname, size_t dlen,
			struct fs_inode *src, struct fs_inode *tgt)
{
	unsigned stype = ino_ftype(src->i_d.mode);
	if (!tgt)
		return dir_add(tx, ddp, dname, dlen, src->i_ino, stype);
	int err = dir_replace(tx, ddp, dname, dlen, src->i_ino, stype);
	return err ? err : drop_link(tx, ddp, tgt, S_ISDIR(tgt->i_d.mode));
}

int fs_rename(struct fs_inode *sdp, const char *sname, size_t slen, struct fs_inode *ddp,
	      const char *dname, size_t dlen, struct fs_result *res)
{
	struct fs *fs = sdp->i_fs;
	res_init(res);
	int err = check_name(sname, slen);
	if (!err)
		err = check_name(dname, dlen);
	if (err)
		return err;
	if (is_dot(sname, slen) || is_dot(dname, dlen))
		return -EINVAL;
	if (ddp->i_fs != fs)
		return -EXDEV;
	mutex_lock(&sdp->i_ilock);
	bool dirs = S_ISDIR(sdp->i_d.mode);
	mutex_unlock(&sdp->i_ilock);
	mutex_lock(&ddp->i_ilock);
	dirs = dirs && S_ISDIR(ddp->i_d.mode);
	mutex_unlock(&ddp->i_ilock);
	if (!dirs)
		return -ENOTDIR; /* only directories are locked as parents (D1) */
	bool cross = sdp != ddp;
	err = dir_lock2(sdp, ddp);
	if (err)
		return err;
	struct fs_inode *src = NULL, *tgt = NULL;
	bool tgt_locked = false;
	uint64_t sino, tino;
	mutex_lock(&sdp->i_ilock);
	err = check_live_dir(sdp);
	mutex_unlock(&sdp->i_ilock);
	if (!err) {
		mutex_lock(&ddp->i_ilock);
		err = check_live_dir(ddp);
		mutex_unlock(&ddp->i_ilock);
	}
	if (!err)
		err = dir_lookup(sdp, sname, slen, &sino, NULL);
	if (!err)
		err = fs_iget(fs, sino, 0, &src);
	if (err)
		goto out_unlock;
	err = dir_lookup(ddp, dname, dlen, &tino, NULL);
	if (err == 0)
		err = fs_iget(fs, tino, 0, &tgt);
	else if (err == -ENOENT)
		err = 0;
	if (err)
		goto out_unlock;
	if (tgt == src)
		goto out_unlock; /* two names of one inode: nothing to do */
	bool sdir = S_ISDIR(ino_mode(src));
	if (tgt) {
		bool tdir = S_ISDIR(ino_mode(tgt));
		if (sdir && !tdir) {
			err = -ENOTDIR;
			goto out_unlock;
		}
		if (!sdir && tdir) {
			err = -EISDIR;
			goto out_unlock;
		}
		if (tdir && (cross || tgt == sdp)) {
			/* an ancestor of the source's directory holds the source
			 * (fs_priv.h, D3): not empty, and not to be locked now */
			bool above;
			err = dir_is_ancestor(tgt, sdp, &above);
			if (!err && above)
				err = -ENOTEMPTY;
			if (err)
				goto out_unlock;
		}
		if (tdir) {
			/* held until the end, so that nothing is created in it;
			 * a child of ddp, locked after it (D1) */
			err = check_child_dir(ddp, tgt);
			if (err)
				goto out_unlock;
			rwlock_wrlock(&tgt->i_iolock);
			tgt_locked = true;
			bool empty;
			err = dir_is_empty(tgt, &empty);
			if (!err && !empty)
				err = -ENOTEMPTY;
			if (err)
				goto out_unlock;
		}
	}
	if (sdir && cross) {
		bool loop;
		err = dir_is_ancestor(src, ddp, &loop);
		if (!err && loop)
			err = -EINVAL;
		if (err)
			goto out_unlock;
	}

	struct fstx *tx;
	err = fstx_begin_freeing(fs, ddp->i_d.root_level + sdp->i_d.root_level + 8, 0, &tx);
	if (err)
		goto out_unlock;
	fstx_unordered(tx); /* names */
	struct fs_inode *v[4] = {sdp, ddp, src, tgt};
	join_sorted(tx, v, 4);
	res_pre(res, 0, sdp);
	res_pre(res, 1, ddp);
	fstx_lock(tx, FSTX_IALLOC);
	err = rename_entry(tx, ddp, dname, dlen, src, tgt);
	if (!err)
		err = dir_remove(tx, sdp, sname, slen);
	if (!err && sdir && cross) {
		src->i_d.parent = ddp->i_ino;
		sdp->i_d.nlink--;
		ddp->i_d.nlink++;
	}
	if (err) {
		fstx_cancel(tx);
		goto out_unlock;
	}
	ino_touch(src, false);
	ino_log(tx, src, FS_ILOG_CORE);
	ino_touch(sdp, true);
	ino_log(tx, sdp, FS_ILOG_CORE | FS_ILOG_DATA);
	if (cross) {
		ino_touch(ddp, true);
		ino_log(tx, ddp, FS_ILOG_CORE | FS_ILOG_DATA);
	}
	res_post(res, 0, sdp);
	res_post(res, 1, ddp);
	err = fstx_commit(tx, res);
out_unlock:
	if (tgt_locked)
		rwlock_unlock(&tgt->i_iolock);
	dir_unlock2(sdp, ddp);
	if (src)
		fs_iput(src);
	if (tgt) {
		eof_forget(tgt);
		fs_iput(tgt);
	}
	return err;
}

static bool ts_equal(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

int fs_setattr(struct fs_inode *ip, const struct fs_setattr *sa, struct fs_result *res)
{
	struct fs *fs = ip->i_fs;
	res_init(res);
	if (!sa->mask)
		return 0;
	bool size = sa->mask & FS_SET_SIZE;
	const unsigned kill_mask = FS_KILL_SUID | FS_KILL_SGID;
	uint32_t kill = ((sa->mask & FS_KILL_SUID) ? S_ISUID : 0) |
			((sa->mask & FS_KILL_SGID) ? S_ISGID : 0);
	rwlock_wrlock(&ip->i_iolock);
	int err = 0;
	if (!(sa->mask & ~kill_mask)) {
		/* only set-id bits to clear: nothing at all if they are clear
		 * (the mode changes under the I/O lock held here) */
		mutex_lock(&ip->i_ilock);
		bool none = !(ip->i_d.mode & kill);
		mutex_unlock(&ip->i_ilock);
		if (none)
			goto out;
	}
	if (size) {
		mutex_lock(&ip->i_ilock);
		if (S_ISDIR(ip->i_d.mode))
			err = -EISDIR;
		else if (!S_ISREG(ip->i_d.mode))
			err = -EINVAL;
		mutex_unlock(&ip->i_ilock);
		if (!err && sa->size > FS_MAX_FILE_SIZE)
			err = -EFBIG;
		if (err)
			goto out;
	}
	struct fstx *tx;
	err = fstx_begin(fs, 0, 0, &tx);
	if (err)
		goto out;
	if (!size)
		fstx_unordered(tx); /* attributes; a size change zeroes data */
	ino_join(tx, ip);
	res_pre(res, 0, ip);
	struct fs_icore *c = &ip->i_d;
	/* the guard under the lock that orders every change of the inode: no
	 * other change can come between this comparison and ours */
	if ((sa->mask & FS_SET_GUARD) && !ts_equal(&c->ctime, &sa->guard_ctime))
		err = -ECANCELED;
	if (err || !(sa->mask & ~FS_SET_GUARD)) {
		fstx_cancel(tx); /* nothing changed */
		goto out;
	}
	unsigned fields = 0;
	if (sa->mask & FS_SET_MODE) {
		c->mode = (c->mode & S_IFMT) | (sa->mode & 07777);
		fields |= FS_ILOG_CORE;
	}
	if (c->mode & kill) {
		c->mode &= ~kill;
		fields |= FS_ILOG_CORE;
	}
	if (sa->mask & FS_SET_UID) {
		c->uid = sa->uid;
		fields |= FS_ILOG_CORE;
	}
	if (sa->mask & FS_SET_GID) {
		c->gid = sa->gid;
		fields |= FS_ILOG_CORE;
	}
	struct timespec now;
	fs_now(&now);
	if (sa->mask & FS_SET_ATIME)
		c->atime = sa->atime;
	if (sa->mask & FS_SET_ATIME_NOW)
		c->atime = now;
	if (sa->mask & FS_SET_MTIME)
		c->mtime = sa->mtime;
	if (sa->mask & FS_SET_MTIME_NOW)
		c->mtime = now;
	c->ctime = now;
	c->change++;
	if (sa->mask & FS_SET_CTIME)
		c->ctime = sa->ctime;
	ino_log(tx, ip, fields | FS_ILOG_TIMESTAMP | FS_ILOG_CHANGE);
	if (size && sa->size != c->size) {
		err = file_truncate(ip, sa->size, tx, res); /* commits tx */
	} else {
		res_post(res, 0, ip);
		err = fstx_commit(tx, res);
	}
out:
	rwlock_unlock(&ip->i_iolock);
	return err;
}

int fs_statfs(struct fs *fs, struct fs_statfs *st)
{
	if (fs_is_shutdown(fs))
		return -EIO;
	int64_t bfree = alloc_free_blocks(fs);
	if (bfree < 0)
		bfree = 0;
	uint64_t used = atomic_load(&fs->f_icount), ifree = atomic_load(&fs->f_ifree);
	uint64_t potential = (uint64_t)bfree / FS_CHUNK_BLOCKS * FS_INODES_PER_CHUNK;
	st->blocks = fs->f_blocks;
	st->bfree = (uint64_t)bfree;
	st->files = used + ifree + potential;
	st->ffree = ifree + potential;
	st->bsize = FS_BLOCK_SIZE;
	st->namemax = FS_NAME_MAX;
	return 0;
}
