/*
 * dir.c - directories: a B+tree per directory, keyed by name hash.
 *
 * Key: {h | i, 0} where h is a 64-bit hash of the name with its low 16 bits
 * cleared and i (0..65535) tells apart names whose hashes collide. Value:
 * struct fs_ddirent followed by the name. "." and ".." are not stored: the
 * directory knows its parent (di_parent).
 *
 * Readdir cookies are keys: an entry keeps its key for as long as it
 * exists, so a cookie stays valid while other entries come and go. Cookies
 * 1 and 2 are "." and ".."; hashes below 2^16 are moved up so that no entry
 * key collides with them.
 *
 * Callers hold the directory's I/O lock: shared to read, exclusive to change.
 */
#include <sys/stat.h>

#include "fs/fs_priv.h"

static void dir_set_root(struct bt *bt, struct fstx *tx, uint64_t root, uint16_t level)
{
	struct fs_inode *dp = bt->priv;
	dp->i_d.root = root;
	dp->i_d.root_level = level;
	ino_log(tx, dp, FS_ILOG_DATA);
}

static int dir_alloc_block(struct bt *bt, struct fstx *tx, uint64_t *blkno)
{
	struct fs_inode *dp = bt->priv;
	uint64_t len;
	uint64_t hint = dp->i_d.root ? dp->i_d.root : fs_ino_block(dp->i_ino);
	int err = alloc_extent(tx, hint, 1, 1, blkno, &len);
	if (!err)
		dp->i_d.nblocks++;
	return err;
}

static void dir_free_block(struct bt *bt, struct fstx *tx, uint64_t blkno)
{
	struct fs_inode *dp = bt->priv;
	if (alloc_free(tx, blkno, 1))
		fs_shutdown(tx->fs, "freeing a directory block failed");
	dp->i_d.nblocks--;
}

static const struct bt_ops dir_bt_ops = {
	.set_root = dir_set_root,
	.alloc_block = dir_alloc_block,
	.free_block = dir_free_block,
};

void dir_bt(struct fs_inode *dp, struct bt *bt)
{
	*bt = (struct bt){
		.fs = dp->i_fs,
		.v = fs_bt_verifier(FS_BT_DIR_MAGIC),
		.owner = dp->i_ino,
		.root = dp->i_d.root,
		.level = dp->i_d.root_level,
		.ops = &dir_bt_ops,
		.priv = dp,
	};
}

int dir_create_tree(struct fstx *tx, struct fs_inode *dp)
{
	assert_wrlocked(&dp->i_iolock);
	struct bt bt;
	dir_bt(dp, &bt);
	return bt_create(tx, &bt);
}

uint64_t dir_hash(const char *name, size_t len)
{
	/* FNV-1a, then a 64-bit finaliser for the high bits we keep */
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	h &= FS_DIRHASH_MASK;
	if (h == 0)
		h = 1ull << 16;
	return h;
}

struct dirent_buf {
	struct fs_ddirent d;
	char name[FS_NAME_MAX];
};

static int ent_get(struct bt_cursor *c, struct fs_inode *dp, struct fs_btkey *k,
		   struct dirent_buf *e)
{
	size_t len;
	bt_get(c, k, e, sizeof(*e), &len);
	if (len < sizeof(e->d) || len != sizeof(e->d) + e->d.d_namelen || !e->d.d_namelen ||
	    !le64toh(e->d.d_ino)) {
		msg_err("fs: directory %llu has a malformed entry", (unsigned long long)dp->i_ino);
		return -EUCLEAN;
	}
	return 0;
}

/* Find name: 1 and its key if there, 0 and the first free collision index
 * (in *key) if not. */
static int find(struct fs_inode *dp, const char *name, size_t len, struct fs_btkey *key,
		struct dirent_buf *out)
{
	struct bt bt;
	dir_bt(dp, &bt);
	uint64_t h = dir_hash(name, len);
	struct bt_cursor c;
	int r = bt_lookup(&bt, &(struct fs_btkey){h, 0}, BT_GE, &c);
	uint64_t next_free = h;
	bool have_free = false;
	for (; r == 1; r = bt_next(&c)) {
		struct fs_btkey k;
		struct dirent_buf e;
		int err = ent_get(&c, dp, &k, &e);
		if (err) {
			r = err;
			break;
		}
		if ((k.k0 & FS_DIRHASH_MASK) != h)
			break;
		if (e.d.d_namelen == len && memcmp(e.name, name, len) == 0) {
			*key = k;
			if (out)
				*out = e;
			bt_cursor_done(&c);
			return 1;
		}
		if (!have_free && k.k0 == next_free)
			next_free++;
		else
			have_free = true;
	}
	bt_cursor_done(&c);
	if (r < 0)
		return r;
	if ((next_free & ~FS_DIRHASH_MASK) == 0 && next_free != h)
		return -ENOSPC; /* 65536 names with one hash */
	*key = (struct fs_btkey){next_free, 0};
	return 0;
}

int dir_lookup(struct fs_inode *dp, const char *name, size_t len, uint64_t *ino, unsigned *type)
{
	assert_rdlocked(&dp->i_iolock);
	struct fs_btkey k;
	struct dirent_buf e;
	int r = find(dp, name, len, &k, &e);
	if (r < 0)
		return r;
	if (!r)
		return -ENOENT;
	*ino = le64toh(e.d.d_ino);
	if (type)
		*type = e.d.d_type;
	return 0;
}

int dir_add(struct fstx *tx, struct fs_inode *dp, const char *name, size_t len, uint64_t ino,
	    unsigned type)
{
	assert_wrlocked(&dp->i_iolock);
	struct fs_btkey k;
	int r = find(dp, name, len, &k, NULL);
	if (r < 0)
		return r;
	if (r)
		return -EEXIST;
	struct dirent_buf e = {.d = {.d_ino = htole64(ino), .d_type = (uint8_t)type,
				     .d_namelen = (uint8_t)len}};
	memcpy(e.name, name, len);
	struct bt bt;
	dir_bt(dp, &bt);
	int err = bt_insert(tx, &bt, &k, &e, sizeof(e.d) + len);
	if (!err)
		ino_log(tx, dp, FS_ILOG_DATA);
	return err;
}

int dir_remove(struct fstx *tx, struct fs_inode *dp, const char *name, size_t len)
{
	assert_wrlocked(&dp->i_iolock);
	struct fs_btkey k;
	int r = find(dp, name, len, &k, NULL);
	if (r < 0)
		return r;
	if (!r)
		return -ENOENT;
	struct bt bt;
	dir_bt(dp, &bt);
	int err = bt_delete(tx, &bt, &k);
	if (!err)
		ino_log(tx, dp, FS_ILOG_DATA);
	return err;
}

int dir_replace(struct fstx *tx, struct fs_inode *dp, const char *name, size_t len,
		uint64_t ino, unsigned type)
{
	assert_wrlocked(&dp->i_iolock);
	struct fs_btkey k;
	struct dirent_buf e;
	int r = find(dp, name, len, &k, &e);
	if (r < 0)
		return r;
	if (!r)
		return -ENOENT;
	e.d.d_ino = htole64(ino);
	e.d.d_type = (uint8_t)type;
	struct bt bt;
	dir_bt(dp, &bt);
	int err = bt_update(tx, &bt, &k, &e, sizeof(e.d) + len);
	if (!err)
		ino_log(tx, dp, FS_ILOG_DATA);
	return err;
}

int dir_is_empty(struct fs_inode *dp, bool *empty)
{
	assert_rdlocked(&dp->i_iolock);
	struct bt bt;
	dir_bt(dp, &bt);
	struct bt_cursor c;
	int r = bt_lookup(&bt, &(struct fs_btkey){0, 0}, BT_GE, &c);
	bt_cursor_done(&c);
	if (r < 0)
		return r;
	*empty = r == 0;
	return 0;
}

int fs_readdir(struct fs_inode *dp, uint64_t cookie, fs_filldir_t fn, void *arg)
{
	if (fs_is_shutdown(dp->i_fs))
		return -EIO;
	rwlock_rdlock(&dp->i_iolock);
	mutex_lock(&dp->i_ilock);
	bool isdir = S_ISDIR(dp->i_d.mode);
	uint64_t parent = dp->i_d.parent;
	mutex_unlock(&dp->i_ilock);
	int err = 0;
	if (!isdir) {
		err = -ENOTDIR;
		goto out;
	}
	if (cookie < FS_DIR_COOKIE_DOT && fn(arg, ".", 1, dp->i_ino, FS_FT_DIR, FS_DIR_COOKIE_DOT))
		goto out;
	if (cookie < FS_DIR_COOKIE_DOTDOT &&
	    fn(arg, "..", 2, parent, FS_FT_DIR, FS_DIR_COOKIE_DOTDOT))
		goto out;
	struct bt bt;
	dir_bt(dp, &bt);
	struct bt_cursor c;
	uint64_t from = cookie < FS_DIR_COOKIE_DOTDOT ? 0 : cookie + 1;
	if (cookie == UINT64_MAX)
		goto out;
	int r = bt_lookup(&bt, &(struct fs_btkey){from, 0}, BT_GE, &c);
	for (; r == 1; r = bt_next(&c)) {
		struct fs_btkey k;
		struct dirent_buf e;
		err = ent_get(&c, dp, &k, &e);
		if (err)
			break;
		if (fn(arg, e.name, e.d.d_namelen, le64toh(e.d.d_ino), e.d.d_type, k.k0))
			break;
	}
	bt_cursor_done(&c);
	if (r < 0)
		err = r;
out:
	rwlock_unlock(&dp->i_iolock);
	return err;
}

/* ---- several directories (fs_priv.h, D1-D5) ---- */

int dir_is_ancestor(struct fs_inode *a, struct fs_inode *d, bool *yes)
{
	struct fs *fs = d->i_fs;
	uint64_t root = le64toh(fs->f_sb->sb_root_ino);
	struct fs_inode *p = d; /* the caller's reference, then ours */
	int err = -ELOOP;
	bool found = false;
	*yes = false;
	for (int depth = 0; depth < 4096; depth++) {
		/* the walk goes on to the root after finding a: on a damaged
		 * image the parents may form a loop, and a directory that is
		 * its own ancestor is corruption, not an order to lock by */
		if (depth > 0 && (p->i_ino == d->i_ino || (found && p->i_ino == a->i_ino))) {
			err = -EUCLEAN;
			break;
		}
		if (p->i_ino == a->i_ino)
			found = true;
		mutex_lock(&p->i_ilock);
		uint64_t parent = p->i_d.parent;
		bool live = p->i_d.nlink > 0;
		mutex_unlock(&p->i_ilock);
		if (!live || p->i_ino == root) {
			err = 0;
			*yes = found;
			break;
		}
		struct fs_inode *pp;
		err = fs_iget(fs, parent, 0, &pp);
		if (p != d)
			fs_iput(p);
		p = d;
		if (err) {
			/* the parent went: only after d was removed meanwhile
			 * (rmdir needs no rename lock), and then d has none */
			if (err == -ESTALE) {
				err = 0;
				*yes = found;
			}
			break;
		}
		p = pp;
		err = -ELOOP;
	}
	if (p != d)
		fs_iput(p);
	return err;
}

int dir_lock2(struct fs_inode *sdp, struct fs_inode *ddp)
{
	if (sdp == ddp) {
		rwlock_wrlock(&sdp->i_iolock);
		return 0;
	}
	struct fs *fs = sdp->i_fs;
	mutex_lock(&fs->f_rename_lock);
	bool s_above, d_above = false;
	int err = dir_is_ancestor(sdp, ddp, &s_above);
	if (!err && !s_above)
		err = dir_is_ancestor(ddp, sdp, &d_above);
	if (err) {
		mutex_unlock(&fs->f_rename_lock);
		return err;
	}
	bool sdp_first = s_above || (!d_above && sdp->i_ino < ddp->i_ino);
	struct fs_inode *first = sdp_first ? sdp : ddp, *second = sdp_first ? ddp : sdp;
	rwlock_wrlock(&first->i_iolock);
	rwlock_wrlock(&second->i_iolock);
	return 0;
}

void dir_unlock2(struct fs_inode *sdp, struct fs_inode *ddp)
{
	rwlock_unlock(&sdp->i_iolock);
	if (sdp != ddp) {
		rwlock_unlock(&ddp->i_iolock);
		mutex_unlock(&sdp->i_fs->f_rename_lock);
	}
}
