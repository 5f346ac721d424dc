/*
 * ialloc.c - inode allocation and orphans.
 *
 * Inodes live in chunks of 8 contiguous blocks (64 inodes), allocated on
 * demand anywhere on the device; an inode's number names its place (block *
 * 8 + slot). The inode index tree has one record per chunk: key = the
 * chunk's first inode number, value = a 64-bit mask of its free inodes.
 * Chunks are never freed. A new chunk's blocks are not initialised on disk:
 * a slot is only ever read once the index says it is allocated, and the
 * inode item logs every allocated inode whole.
 *
 * Orphans: an inode whose last link goes while it is still referenced (or
 * whose freeing takes several transactions) is recorded in the orphan tree
 * in the same transaction that drops its link count to zero, and removed in
 * the transaction that finally frees it. Mount finishes the orphans a crash
 * left behind.
 */
#include "fs/fs_priv.h"

static void ino_set_root(struct bt *bt, struct fstx *tx, uint64_t root, uint16_t level)
{
	struct fs_dsb *sb = tx->fs->f_sb;
	fsbuf_join(tx, tx->fs->f_sbp);
	if (bt->v->magic == FS_BT_INO_MAGIC) {
		sb->sb_ino_root = htole64(root);
		sb->sb_ino_level = htole16(level);
		FS_LOG_SB_FIELD(tx, sb_ino_root);
		FS_LOG_SB_FIELD(tx, sb_ino_level);
	} else {
		sb->sb_orphan_root = htole64(root);
		sb->sb_orphan_level = htole16(level);
		FS_LOG_SB_FIELD(tx, sb_orphan_root);
		FS_LOG_SB_FIELD(tx, sb_orphan_level);
	}
}

static int ino_tree_alloc(struct bt *bt, struct fstx *tx, uint64_t *blkno)
{
	return alloc_bt_ops.alloc_block(bt, tx, blkno);
}

static void ino_tree_free(struct bt *bt, struct fstx *tx, uint64_t blkno)
{
	alloc_bt_ops.free_block(bt, tx, blkno);
}

static const struct bt_ops ino_bt_ops = {
	.set_root = ino_set_root,
	.alloc_block = ino_tree_alloc,
	.free_block = ino_tree_free,
};

static void ino_bt(struct fs *fs, struct bt *bt)
{
	*bt = (struct bt){
		.fs = fs,
		.v = fs_bt_verifier(FS_BT_INO_MAGIC),
		.root = le64toh(fs->f_sb->sb_ino_root),
		.level = le16toh(fs->f_sb->sb_ino_level),
		.ops = &ino_bt_ops,
	};
}

static void orphan_bt(struct fs *fs, struct bt *bt)
{
	*bt = (struct bt){
		.fs = fs,
		.v = fs_bt_verifier(FS_BT_ORPHAN_MAGIC),
		.root = le64toh(fs->f_sb->sb_orphan_root),
		.level = le16toh(fs->f_sb->sb_orphan_level),
		.ops = &ino_bt_ops,
	};
}

static int chunk_get(struct bt_cursor *c, uint64_t *first, uint64_t *mask)
{
	struct fs_btkey k;
	uint64_t v;
	size_t len;
	bt_get(c, &k, &v, sizeof(v), &len);
	if (len != sizeof(v) || k.k0 % FS_INODES_PER_BLK) {
		msg_err("fs: malformed inode index record for inode %llu",
			(unsigned long long)k.k0);
		return -EUCLEAN;
	}
	*first = k.k0;
	*mask = le64toh(v);
	return 0;
}

int ialloc_mount(struct fs *fs)
{
	struct bt bt;
	ino_bt(fs, &bt);
	struct bt_cursor c;
	uint64_t chunks = 0, nfree = 0;
	int r = bt_lookup(&bt, &(struct fs_btkey){0, 0}, BT_GE, &c);
	for (; r == 1; r = bt_next(&c)) {
		uint64_t first, mask;
		int err = chunk_get(&c, &first, &mask);
		if (err) {
			r = err;
			break;
		}
		chunks++;
		nfree += (uint64_t)__builtin_popcountll(mask);
	}
	bt_cursor_done(&c);
	if (r < 0)
		return r;
	atomic_store(&fs->f_icount, chunks * FS_INODES_PER_CHUNK - nfree);
	atomic_store(&fs->f_ifree, nfree);
	return 0;
}

static int mask_update(struct fstx *tx, uint64_t first, uint64_t mask)
{
	struct bt bt;
	ino_bt(tx->fs, &bt);
	uint64_t v = htole64(mask);
	return bt_update(tx, &bt, &(struct fs_btkey){first, 0}, &v, sizeof(v));
}

/* A chunk with a free inode at or after key `from` (wrapping once). */
static int find_free_chunk(struct fs *fs, uint64_t from, uint64_t *first, uint64_t *mask)
{
	struct bt bt;
	ino_bt(fs, &bt);
	for (int pass = 0; pass < 2; pass++) {
		struct bt_cursor c;
		int r = bt_lookup(&bt, &(struct fs_btkey){pass ? 0 : from, 0}, BT_GE, &c);
		for (; r == 1; r = bt_next(&c)) {
			int err = chunk_get(&c, first, mask);
			if (err) {
				bt_cursor_done(&c);
				return err;
			}
			if (pass && *first >= from)
				break;
			if (*mask) {
				bt_cursor_done(&c);
				return 1;
			}
		}
		bt_cursor_done(&c);
		if (r < 0)
			return r;
	}
	return 0;
}

int ialloc_alloc(struct fstx *tx, uint64_t near, uint64_t *ino)
{
	struct fs *fs = tx->fs;
	fstx_lock(tx, FSTX_IALLOC);
	uint64_t first = 0, mask = 0;
	int r = find_free_chunk(fs, fs->f_ialloc_hint, &first, &mask);
	if (r < 0)
		return r;
	if (r == 1) {
		unsigned bit = (unsigned)__builtin_ctzll(mask);
		mask &= ~(1ull << bit);
		int err = mask_update(tx, first, mask);
		if (err)
			return err;
		*ino = first + bit;
		fs->f_ialloc_hint = first;
	} else {
		/* a new chunk of 8 blocks near the parent */
		uint64_t start, len;
		int err = alloc_extent(tx, near ? fs_ino_block(near) : 0, FS_CHUNK_BLOCKS,
				       FS_CHUNK_BLOCKS, &start, &len);
		if (err)
			return err;
		for (unsigned b = 0; b < FS_CHUNK_BLOCKS; b++) {
			/* whatever we cached for these blocks is stale */
			struct fsbuf *bp = fsbuf_get_new(fs, start + b, &fs_ichunk_verifier);
			fsbuf_rele(bp);
		}
		first = start * FS_INODES_PER_BLK;
		mask = ~0ull & ~1ull;
		struct bt bt;
		ino_bt(fs, &bt);
		uint64_t v = htole64(mask);
		err = bt_insert(tx, &bt, &(struct fs_btkey){first, 0}, &v, sizeof(v));
		if (err)
			return err;
		*ino = first;
		fs->f_ialloc_hint = first;
		atomic_fetch_add(&fs->f_ifree, FS_INODES_PER_CHUNK);
	}
	atomic_fetch_add(&fs->f_icount, 1);
	atomic_fetch_sub(&fs->f_ifree, 1);
	counter_inc(&fs->f_stats.inode_allocs);
	return 0;
}

/* The chunk holding ino: its first inode and mask. 1 found, 0 not. */
static int chunk_of(struct fs *fs, uint64_t ino, uint64_t *first, uint64_t *mask)
{
	struct bt bt;
	ino_bt(fs, &bt);
	struct bt_cursor c;
	int r = bt_lookup(&bt, &(struct fs_btkey){ino, 0}, BT_LE, &c);
	if (r == 1) {
		int err = chunk_get(&c, first, mask);
		if (err)
			r = err;
		else if (ino >= *first + FS_INODES_PER_CHUNK)
			r = 0;
	}
	bt_cursor_done(&c);
	return r;
}

int ialloc_free(struct fstx *tx, uint64_t ino)
{
	fstx_lock(tx, FSTX_IALLOC);
	uint64_t first = 0, mask = 0;
	int r = chunk_of(tx->fs, ino, &first, &mask);
	if (r <= 0 || (mask & (1ull << (ino - first)))) {
		msg_err("fs: freeing inode %llu that is not allocated", (unsigned long long)ino);
		return r < 0 ? r : -EUCLEAN;
	}
	mask |= 1ull << (ino - first);
	int err = mask_update(tx, first, mask);
	if (!err) {
		atomic_fetch_sub(&tx->fs->f_icount, 1);
		atomic_fetch_add(&tx->fs->f_ifree, 1);
		counter_inc(&tx->fs->f_stats.inode_frees);
	}
	return err;
}

int ialloc_is_allocated(struct fs *fs, uint64_t ino, bool *allocated)
{
	*allocated = false;
	mutex_lock(&fs->f_ialloc_lock);
	uint64_t first = 0, mask = 0;
	int r = chunk_of(fs, ino, &first, &mask);
	mutex_unlock(&fs->f_ialloc_lock);
	if (r < 0)
		return r;
	*allocated = r == 1 && !(mask & (1ull << (ino - first)));
	return 0;
}

int orphan_add(struct fstx *tx, uint64_t ino)
{
	fstx_lock(tx, FSTX_IALLOC);
	struct bt bt;
	orphan_bt(tx->fs, &bt);
	return bt_insert(tx, &bt, &(struct fs_btkey){ino, 0}, NULL, 0);
}

int orphan_remove(struct fstx *tx, uint64_t ino)
{
	fstx_lock(tx, FSTX_IALLOC);
	struct bt bt;
	orphan_bt(tx->fs, &bt);
	int err = bt_delete(tx, &bt, &(struct fs_btkey){ino, 0});
	return err == -ENOENT ? 0 : err;
}

/* Finish the orphans a crash left: each is freed when its (only)
 * reference, taken here, goes. An orphan that is still linked, or that
 * freeing leaves in the tree, is damage: refused, not retried forever. */
int orphan_recover(struct fs *fs)
{
	unsigned n = 0;
	uint64_t prev = 0;
	for (;;) {
		struct bt bt;
		orphan_bt(fs, &bt);
		struct bt_cursor c;
		mutex_lock(&fs->f_ialloc_lock);
		int r = bt_lookup(&bt, &(struct fs_btkey){0, 0}, BT_GE, &c);
		struct fs_btkey k = {0, 0};
		if (r == 1)
			bt_get(&c, &k, NULL, 0, NULL);
		bt_cursor_done(&c);
		mutex_unlock(&fs->f_ialloc_lock);
		if (r <= 0) {
			if (n)
				msg_info("fs: freed %u orphan inodes", n);
			return r;
		}
		if (n && k.k0 == prev) {
			msg_err("fs: orphan inode %llu could not be freed", (unsigned long long)k.k0);
			return fs_is_shutdown(fs) ? -EIO : -EUCLEAN;
		}
		struct fs_inode *ip;
		int err = fs_iget_orphan(fs, k.k0, &ip);
		if (err) {
			msg_err("fs: orphan inode %llu cannot be read: %s", (unsigned long long)k.k0,
				strerror(-err));
			return err == -ESTALE ? -EUCLEAN : err;
		}
		mutex_lock(&ip->i_ilock);
		uint32_t nlink = ip->i_d.nlink;
		mutex_unlock(&ip->i_ilock);
		fs_iput(ip); /* nlink 0, last reference: frees it and its orphan record */
		if (nlink) {
			msg_err("fs: orphan inode %llu still has %u links", (unsigned long long)k.k0,
				nlink);
			return -EUCLEAN;
		}
		prev = k.k0;
		n++;
	}
}
