/*
 * buf.c - the metadata buffer cache.
 *
 * One struct fsbuf per cached block, found by block number. A buffer is a
 * journal buffer item: a transaction locks it (fsbuf_join), changes it,
 * logs the changed ranges, and the AIL writes it back in place, stamped by
 * its verifier, once the change is durable in the log.
 *
 * Life: referenced while callers use it (lookups, cursors, transactions);
 * unreferenced buffers sit on an LRU list and are evicted when the cache is
 * over its size, but only when the journal no longer refers to them
 * (buf_item_busy: pinned or in the AIL), so an evicted block's latest
 * content is on the device.
 */
#include <stdlib.h>

#include "base/mem.h"
#include "fs/fs_priv.h"

static struct lock_class bcache_lock_class = LOCK_CLASS(FS_BCACHE);
/* see fs_priv.h: buffers of global trees are ordered, an inode's own are not */
static struct lock_class global_buf_class = LOCK_CLASS(FS_BUF);
static struct lock_class inode_buf_class = LOCK_CLASS(FS_INODE_TREE_BUF);

/* Set the buffer's type; its lock must not be held. */
static void fsbuf_set_ops(struct fsbuf *bp, const struct fs_verifier *v)
{
	bp->b_ops = v;
	bool inode_tree = v && (v->magic == FS_BT_DIR_MAGIC || v->magic == FS_BT_EXT_MAGIC ||
				v->magic == FS_BT_XATTR_MAGIC);
	buf_item_set_lock_class(&bp->b_bi, inode_tree ? &inode_buf_class : &global_buf_class);
}

static void fsbuf_bi_stamp(struct buf_item *bip, void *copy, uint64_t lsn)
{
	struct fsbuf *bp = bip->bi_private;
	if (bp->b_ops && bp->b_ops->stamp)
		bp->b_ops->stamp(copy, lsn);
}

static const struct buf_item_ops fsbuf_bi_ops = {
	.bo_stamp = fsbuf_bi_stamp,
};

void fsbuf_cache_init(struct fs *fs)
{
	mutex_init(&fs->f_bcache_lock, &bcache_lock_class);
	hashmap_init(&fs->f_bufs);
	list_init(&fs->f_buf_lru);
	fs->f_nbufs = 0;
	fs->f_nbufs_max = 16384; /* 64 MiB of metadata */
}

static struct fsbuf *fsbuf_new(struct fs *fs, uint64_t blkno, const struct fs_verifier *v)
{
	struct fsbuf *bp = xcalloc(1, sizeof(*bp));
	bp->b_fs = fs;
	bp->b_blkno = blkno;
	bp->b_data = xmalloc_aligned(4096, FS_BLOCK_SIZE);
	atomic_store(&bp->b_ref, 1);
	list_init(&bp->b_lru);
	buf_item_init(&bp->b_bi, fs->f_log, fs_daddr(blkno), bp->b_data, &fsbuf_bi_ops);
	bp->b_bi.bi_private = bp;
	fsbuf_set_ops(bp, v);
	return bp;
}

static void fsbuf_free(struct fsbuf *bp)
{
	buf_item_destroy(&bp->b_bi);
	free(bp->b_data);
	free(bp);
}

/*
 * Evict unreferenced, idle buffers while over the limit. Cache lock held.
 * Every cached buffer is on the LRU from its load to its eviction: taking
 * or dropping a reference does not touch the list (that cost two cache
 * misses on its neighbours per use, which in a big directory was most of
 * a lookup), it only marks the buffer used. The shrink gives a used
 * buffer a second chance (clears the mark, moves it to the tail), and so
 * it does for a referenced one and a busy one (pinned, or in the AIL: not
 * written back yet). One call looks at no more than BCACHE_SHRINK_SCAN
 * buffers (and after a call that could evict none, the next
 * BCACHE_SHRINK_SCAN calls do not try), so that a release never walks all the buffers a burst
 * of transactions left in the AIL (inode.c's ino_shrink does the same).
 */
#define BCACHE_SHRINK_SCAN 32

static void fsbuf_shrink(struct fs *fs)
{
	assert_locked(&fs->f_bcache_lock);
	if (fs->f_bshrink_skip) {
		fs->f_bshrink_skip--;
		return;
	}
	unsigned evicted = 0;
	for (unsigned scanned = 0; scanned < BCACHE_SHRINK_SCAN; scanned++) {
		if (fs->f_nbufs <= fs->f_nbufs_max || list_empty(&fs->f_buf_lru))
			break;
		struct fsbuf *bp = list_first_entry(&fs->f_buf_lru, struct fsbuf, b_lru);
		if (bp->b_lru_ref || atomic_load(&bp->b_ref) || buf_item_busy(&bp->b_bi)) {
			bp->b_lru_ref = false;
			list_move_tail(&bp->b_lru, &fs->f_buf_lru);
			continue;
		}
		list_del(&bp->b_lru);
		hashmap_remove(&fs->f_bufs, bp->b_blkno);
		fs->f_nbufs--;
		counter_inc(&fs->f_stats.buf_evictions);
		fsbuf_free(bp);
		evicted++;
	}
	if (!evicted)
		fs->f_bshrink_skip = BCACHE_SHRINK_SCAN;
}

/* Take a reference on a cached buffer. Cache lock held. */
static void fsbuf_grab(struct fsbuf *bp)
{
	assert_locked(&bp->b_fs->f_bcache_lock);
	atomic_fetch_add(&bp->b_ref, 1);
	bp->b_lru_ref = true;
}

/* A new buffer into the cache. Cache lock held. */
static void fsbuf_insert(struct fs *fs, struct fsbuf *bp)
{
	assert_locked(&fs->f_bcache_lock);
	hashmap_put(&fs->f_bufs, bp->b_blkno, bp);
	list_add_tail(&bp->b_lru, &fs->f_buf_lru);
	fs->f_nbufs++;
	fsbuf_shrink(fs);
}

int fsbuf_read(struct fs *fs, uint64_t blkno, const struct fs_verifier *v, uint64_t owner,
	       struct fsbuf **bpp)
{
	*bpp = NULL;
	if ((blkno == 0 && v != &fs_sb_verifier) || blkno >= fs->f_blocks) {
		msg_err("fs: metadata pointer to block %llu is outside the device",
			(unsigned long long)blkno);
		return -EUCLEAN;
	}
	mutex_lock(&fs->f_bcache_lock);
	struct fsbuf *bp = hashmap_get(&fs->f_bufs, blkno);
	if (bp) {
		fsbuf_grab(bp);
		mutex_unlock(&fs->f_bcache_lock);
		counter_inc(&fs->f_stats.buf_hits);
		if (v && bp->b_ops != v && v->magic) {
			/* cached as something else: trust memory only if it says
			 * it is what the caller expects */
			uint32_t magic;
			memcpy(&magic, bp->b_data, 4);
			if (le32toh(magic) != v->magic) {
				msg_err("fs: block %llu is not a %s block",
					(unsigned long long)blkno, v->name);
				fsbuf_rele(bp);
				return -EUCLEAN;
			}
		}
		if (v && bp->b_ops != v)
			fsbuf_set_ops(bp, v);
		*bpp = bp;
		return 0;
	}
	mutex_unlock(&fs->f_bcache_lock);

	bp = fsbuf_new(fs, blkno, v);
	int err = dev_read(fs->f_ddev, bp->b_data, FS_BLOCK_SIZE, fs_daddr(blkno));
	counter_inc(&fs->f_stats.buf_reads);
	if (!err && v && v->verify)
		err = v->verify(fs, bp->b_data, blkno, owner);
	if (err) {
		if (err != -EUCLEAN)
			msg_err("fs: reading block %llu failed: %s", (unsigned long long)blkno,
				strerror(-err));
		fsbuf_free(bp);
		return err;
	}
	mutex_lock(&fs->f_bcache_lock);
	struct fsbuf *other = hashmap_get(&fs->f_bufs, blkno);
	if (other) {
		/* someone else loaded it meanwhile: theirs is authoritative */
		fsbuf_grab(other);
		mutex_unlock(&fs->f_bcache_lock);
		fsbuf_free(bp);
		*bpp = other;
		return 0;
	}
	fsbuf_insert(fs, bp);
	mutex_unlock(&fs->f_bcache_lock);
	*bpp = bp;
	return 0;
}

/* A block just allocated: its cached copy, if any, is stale; start zeroed. */
struct fsbuf *fsbuf_get_new(struct fs *fs, uint64_t blkno, const struct fs_verifier *v)
{
	mutex_lock(&fs->f_bcache_lock);
	struct fsbuf *bp = hashmap_get(&fs->f_bufs, blkno);
	if (bp) {
		/* a block freed earlier and allocated again: the same item, its
		 * new content logged in full by the caller */
		fsbuf_grab(bp);
		fsbuf_set_ops(bp, v);
		memset(bp->b_data, 0, FS_BLOCK_SIZE);
	} else {
		bp = fsbuf_new(fs, blkno, v);
		fsbuf_insert(fs, bp);
	}
	mutex_unlock(&fs->f_bcache_lock);
	return bp;
}

void fsbuf_hold(struct fsbuf *bp)
{
	int old = atomic_fetch_add(&bp->b_ref, 1);
	BUG_ON(old <= 0);
}

void fsbuf_rele(struct fsbuf *bp)
{
	struct fs *fs = bp->b_fs;
	mutex_lock(&fs->f_bcache_lock);
	int old = atomic_fetch_sub(&bp->b_ref, 1);
	if (old <= 0)
		panic("fs: buffer %llu (%s) released more often than held",
		      (unsigned long long)bp->b_blkno, bp->b_ops ? bp->b_ops->name : "?");
	if (old == 1 && fs->f_nbufs > fs->f_nbufs_max)
		fsbuf_shrink(fs);
	mutex_unlock(&fs->f_bcache_lock);
}

void fsbuf_cache_destroy(struct fs *fs)
{
	size_t it = 0;
	uint64_t k;
	void *v;
	while (hashmap_next(&fs->f_bufs, &it, &k, &v)) {
		struct fsbuf *bp = v;
		/* after unmount the journal is gone; nothing refers to items */
		mutex_destroy(&bp->b_bi.bi_lock);
		free(bp->b_data);
		free(bp);
	}
	hashmap_destroy(&fs->f_bufs);
	mutex_destroy(&fs->f_bcache_lock);
}
