/*
 * alloc.c - block allocation: the free-space B+tree (key: first block,
 * value: length), busy extents, and the free list that feeds the tree.
 *
 * The free-space tree cannot allocate its own blocks from itself while it
 * is being changed, so its nodes come from a free list in the superblock
 * (up to FS_FREELIST_MAX blocks). Before every change the list is topped up
 * by shrinking some free extent from its end (an in-place update, which
 * never splits a leaf) and trimmed back into the tree when it is too full.
 * Blocks of the tree's own freed nodes go back to the list.
 *
 * Busy extents: blocks freed by a transaction stay out of allocation until
 * its checkpoint is durable. Otherwise a crash could bring back the old
 * owner with blocks that a new owner had already written: another file's
 * data in a file, or file data where recovery replays metadata. When all
 * the free space that fits is busy, the allocator forces the log and tries
 * again.
 *
 * Counting: f_free is the number of blocks in the tree. Transactions
 * reserve what they may allocate up front (fs_reserve_blocks) and consume
 * it as they allocate; f_reserve is kept back for metadata overhead.
 */
#include <stdlib.h>

#include "base/mem.h"
#include "fs/fs_priv.h"

static struct lock_class busy_lock_class = LOCK_CLASS(FS_BUSY);

/* ---- busy extents ---- */

/* The first range in [from, end) of at least min blocks that no busy extent
 * overlaps; returns false if there is none. f_busy_lock held. */
static bool busy_find_free(struct fs *fs, uint64_t from, uint64_t end, uint64_t min,
			   uint64_t *a, uint64_t *b)
{
	assert_locked(&fs->f_busy_lock);
	struct fs_busy *bx;
	uint64_t cand = from;
	list_for_each_entry (bx, &fs->f_busy, link) {
		if (bx->start + bx->len <= cand)
			continue;
		if (bx->start >= end)
			break;
		if (bx->start >= cand + min) {
			*a = cand;
			*b = MIN(bx->start, end);
			return true;
		}
		cand = MAX(cand, bx->start + bx->len);
		if (cand + min > end)
			return false;
	}
	if (cand + min > end)
		return false;
	*a = cand;
	*b = end;
	return true;
}

static void busy_add(struct fstx *tx, uint64_t start, uint64_t len)
{
	struct fs *fs = tx->fs;
	struct fs_busy *nb = xmalloc(sizeof(*nb));
	nb->start = start;
	nb->len = len;
	mutex_lock(&fs->f_busy_lock);
	struct fs_busy *bx;
	struct list *pos = &fs->f_busy;
	list_for_each_entry (bx, &fs->f_busy, link) {
		if (bx->start > start) {
			pos = &bx->link;
			break;
		}
	}
	list_add_tail(&nb->link, pos);
	mutex_unlock(&fs->f_busy_lock);
	list_add_tail(&nb->txlink, &tx->busy);
}

void alloc_busy_done(struct fs *fs, struct list *busy)
{
	struct fs_busy *bx, *tmp;
	mutex_lock(&fs->f_busy_lock);
	list_for_each_entry_safe (bx, tmp, busy, txlink) {
		list_del(&bx->txlink);
		list_del(&bx->link);
		free(bx);
	}
	cond_broadcast(&fs->f_busy_cond);
	mutex_unlock(&fs->f_busy_lock);
}

static bool busy_any(struct fs *fs)
{
	mutex_lock(&fs->f_busy_lock);
	bool any = !list_empty(&fs->f_busy);
	mutex_unlock(&fs->f_busy_lock);
	return any;
}

/* ---- the free-space tree ---- */

static void free_set_root(struct bt *bt, struct fstx *tx, uint64_t root, uint16_t level)
{
	struct fs_dsb *sb = tx->fs->f_sb;
	fsbuf_join(tx, tx->fs->f_sbp);
	sb->sb_free_root = htole64(root);
	sb->sb_free_level = htole16(level);
	FS_LOG_SB_FIELD(tx, sb_free_root);
	FS_LOG_SB_FIELD(tx, sb_free_level);
}

static void freelist_log(struct fstx *tx)
{
	FS_LOG_SB_FIELD(tx, sb_freelist_count);
	FS_LOG_SB_FIELD(tx, sb_freelist);
}

static int freelist_pop(struct bt *bt, struct fstx *tx, uint64_t *blkno)
{
	struct fs_dsb *sb = tx->fs->f_sb;
	fsbuf_join(tx, tx->fs->f_sbp);
	unsigned n = le16toh(sb->sb_freelist_count);
	if (!n) {
		msg_err("fs: the free list is empty");
		return -ENOSPC;
	}
	*blkno = le64toh(sb->sb_freelist[n - 1]);
	sb->sb_freelist[n - 1] = 0;
	sb->sb_freelist_count = htole16((uint16_t)(n - 1));
	freelist_log(tx);
	return 0;
}

static void freelist_push(struct bt *bt, struct fstx *tx, uint64_t blkno)
{
	struct fs_dsb *sb = tx->fs->f_sb;
	fsbuf_join(tx, tx->fs->f_sbp);
	unsigned n = le16toh(sb->sb_freelist_count);
	BUG_ON(n >= FS_FREELIST_MAX);
	sb->sb_freelist[n] = htole64(blkno);
	sb->sb_freelist_count = htole16((uint16_t)(n + 1));
	freelist_log(tx);
}

static const struct bt_ops free_bt_ops = {
	.set_root = free_set_root,
	.alloc_block = freelist_pop,
	.free_block = freelist_push,
};

static void free_bt(struct fs *fs, struct bt *bt)
{
	*bt = (struct bt){
		.fs = fs,
		.v = fs_bt_verifier(FS_BT_FREE_MAGIC),
		.owner = 0,
		.root = le64toh(fs->f_sb->sb_free_root),
		.level = le16toh(fs->f_sb->sb_free_level),
		.ops = &free_bt_ops,
	};
}

static struct fs_btkey fkey(uint64_t start)
{
	return (struct fs_btkey){start, 0};
}

static int rec_get(struct bt_cursor *c, uint64_t *start, uint64_t *len)
{
	struct fs_btkey k;
	uint64_t v;
	size_t vl;
	bt_get(c, &k, &v, sizeof(v), &vl);
	if (vl != sizeof(v) || !le64toh(v)) {
		msg_err("fs: malformed free-space record at block %llu", (unsigned long long)k.k0);
		return -EUCLEAN;
	}
	*start = k.k0;
	*len = le64toh(v);
	return 0;
}

static int rec_set(struct fstx *tx, struct bt *bt, uint64_t start, uint64_t len, bool update)
{
	uint64_t v = htole64(len);
	struct fs_btkey k = fkey(start);
	return update ? bt_update(tx, bt, &k, &v, sizeof(v)) : bt_insert(tx, bt, &k, &v, sizeof(v));
}

static void count_free(struct fs *fs, int64_t delta)
{
	mutex_lock(&fs->f_resv_lock);
	fs->f_free += delta;
	if (delta > 0 && fs->f_resv_waiters)
		cond_broadcast(&fs->f_resv_cond);
	mutex_unlock(&fs->f_resv_lock);
}

/* Put [start, start+len) into the tree, merging with its neighbours. */
static int tree_free(struct fstx *tx, uint64_t start, uint64_t len)
{
	struct fs *fs = tx->fs;
	struct bt bt;
	free_bt(fs, &bt);
	uint64_t ls = 0, ll = 0, rs = 0, rl = 0;
	bool left = false, right = false;
	struct bt_cursor c;
	int r = bt_lookup(&bt, &(struct fs_btkey){start, 0}, BT_LE, &c);
	if (r < 0)
		return r;
	if (r == 1) {
		int err = rec_get(&c, &ls, &ll);
		if (err) {
			bt_cursor_done(&c);
			return err;
		}
		if (ls + ll > start) {
			bt_cursor_done(&c);
			msg_err("fs: freeing blocks %llu+%llu that are already free",
				(unsigned long long)start, (unsigned long long)len);
			return -EUCLEAN;
		}
		left = ls + ll == start;
	}
	bt_cursor_done(&c);
	r = bt_lookup(&bt, &(struct fs_btkey){start, 0}, BT_GE, &c);
	if (r < 0)
		return r;
	if (r == 1) {
		int err = rec_get(&c, &rs, &rl);
		if (err) {
			bt_cursor_done(&c);
			return err;
		}
		if (rs < start + len) {
			bt_cursor_done(&c);
			msg_err("fs: freeing blocks %llu+%llu that are already free",
				(unsigned long long)start, (unsigned long long)len);
			return -EUCLEAN;
		}
		right = rs == start + len;
	}
	bt_cursor_done(&c);

	int err;
	if (left && right) {
		err = bt_delete(tx, &bt, &(struct fs_btkey){rs, 0});
		free_bt(fs, &bt);
		if (!err)
			err = rec_set(tx, &bt, ls, ll + len + rl, true);
	} else if (left) {
		err = rec_set(tx, &bt, ls, ll + len, true);
	} else if (right) {
		err = bt_delete(tx, &bt, &(struct fs_btkey){rs, 0});
		free_bt(fs, &bt);
		if (!err)
			err = rec_set(tx, &bt, start, len + rl, false);
	} else {
		err = rec_set(tx, &bt, start, len, false);
	}
	if (!err)
		count_free(fs, (int64_t)len);
	return err;
}

/* Take [a, a+n) out of the free extent [s, s+l). */
static int tree_carve(struct fstx *tx, uint64_t s, uint64_t l, uint64_t a, uint64_t n)
{
	struct fs *fs = tx->fs;
	struct bt bt;
	free_bt(fs, &bt);
	uint64_t left = a - s, right = s + l - (a + n);
	int err;
	if (!left) {
		err = bt_delete(tx, &bt, &(struct fs_btkey){s, 0});
		if (!err && right) {
			free_bt(fs, &bt);
			err = rec_set(tx, &bt, a + n, right, false);
		}
	} else {
		err = rec_set(tx, &bt, s, left, true);
		if (!err && right) {
			free_bt(fs, &bt);
			err = rec_set(tx, &bt, a + n, right, false);
		}
	}
	if (!err)
		count_free(fs, -(int64_t)n);
	return err;
}

/*
 * Keep the free list between what a change of the tree may need and a
 * little below its capacity. Refills take the last block of a free extent
 * (an in-place update that never splits a leaf); excess blocks go back
 * into the tree as busy (they may have held tree nodes a moment ago).
 */
/*
 * Top the free list up to what two changes of the tree may take. A free
 * (for_free) must not fail for want of a block: on a full filesystem the
 * only free blocks may all be busy (freed by transactions whose checkpoint
 * is not durable yet), and a failed free shuts the filesystem down. So a
 * free goes on with a short list as long as it holds what one change of
 * the tree takes (a split at every level and a new root), and the list is
 * topped up by a later change, once the busy blocks are free again.
 */
static int fix_freelist(struct fstx *tx, bool for_free)
{
	struct fs *fs = tx->fs;
	struct fs_dsb *sb = fs->f_sb;
	for (;;) {
		unsigned n = le16toh(sb->sb_freelist_count);
		unsigned level = le16toh(sb->sb_free_level);
		unsigned need = 2 * (level + 2) + 2;
		if (n >= need)
			break;
		struct bt bt;
		free_bt(fs, &bt);
		struct bt_cursor c;
		int r = bt_lookup(&bt, &(struct fs_btkey){0, 0}, BT_GE, &c);
		uint64_t s = 0, l = 0, blk = 0;
		bool found = false;
		while (r == 1) {
			int err = rec_get(&c, &s, &l);
			if (err) {
				bt_cursor_done(&c);
				return err;
			}
			uint64_t a, b;
			mutex_lock(&fs->f_busy_lock);
			bool ok = busy_find_free(fs, s + l - 1, s + l, 1, &a, &b);
			mutex_unlock(&fs->f_busy_lock);
			if (ok) {
				blk = s + l - 1;
				found = true;
				break;
			}
			r = bt_next(&c);
		}
		bt_cursor_done(&c);
		if (r < 0)
			return r;
		if (!found && for_free && n >= level + 2) {
			counter_inc(&fs->f_stats.freelist_short);
			break;
		}
		if (!found) {
			msg_err("fs: no free block to refill the free list");
			return -ENOSPC;
		}
		int err = l == 1 ? bt_delete(tx, &bt, &(struct fs_btkey){s, 0})
				 : rec_set(tx, &bt, s, l - 1, true);
		if (err)
			return err;
		count_free(fs, -1);
		freelist_push(&bt, tx, blk);
	}
	while (le16toh(sb->sb_freelist_count) > FS_FREELIST_MAX - 8) {
		uint64_t blk;
		int err = freelist_pop(NULL, tx, &blk);
		if (!err) {
			busy_add(tx, blk, 1);
			err = tree_free(tx, blk, 1);
		}
		if (err)
			return err;
	}
	return 0;
}

static void consume_reservation(struct fstx *tx, uint64_t n)
{
	uint64_t k = MIN(n, (uint64_t)MAX(tx->blk_res, 0));
	tx->blk_res -= (int64_t)k;
	if (k)
		fs_unreserve_blocks(tx->fs, k);
}

/* One pass over free extents in [from_key, to_key); first fit, from hint. */
static int search(struct fstx *tx, uint64_t hint, uint64_t from_key, uint64_t to_key,
		  uint64_t want, uint64_t min, uint64_t *fs_s, uint64_t *fs_l, uint64_t *a,
		  uint64_t *n)
{
	struct fs *fs = tx->fs;
	struct bt bt;
	free_bt(fs, &bt);
	struct bt_cursor c;
	int r = bt_lookup(&bt, &(struct fs_btkey){from_key, 0}, from_key ? BT_LE : BT_GE, &c);
	if (r == 0 && from_key) {
		bt_cursor_done(&c);
		r = bt_lookup(&bt, &(struct fs_btkey){from_key, 0}, BT_GE, &c);
	}
	for (; r == 1; r = bt_next(&c)) {
		uint64_t s, l;
		int err = rec_get(&c, &s, &l);
		if (err) {
			r = err;
			break;
		}
		if (s >= to_key)
			break;
		uint64_t from = (hint > s && hint < s + l) ? hint : s;
		uint64_t lo, hi;
		mutex_lock(&fs->f_busy_lock);
		bool ok = busy_find_free(fs, from, s + l, min, &lo, &hi);
		if (!ok && from != s)
			ok = busy_find_free(fs, s, s + l, min, &lo, &hi);
		mutex_unlock(&fs->f_busy_lock);
		if (ok) {
			*fs_s = s;
			*fs_l = l;
			*a = lo;
			*n = MIN(want, hi - lo);
			bt_cursor_done(&c);
			return 1;
		}
	}
	bt_cursor_done(&c);
	return r < 0 ? r : 0;
}

int alloc_extent(struct fstx *tx, uint64_t hint, uint64_t want, uint64_t min, uint64_t *start,
		 uint64_t *len)
{
	struct fs *fs = tx->fs;
	BUG_ON(!want || min > want || !min);
	fstx_lock(tx, FSTX_ALLOC);
	int err = fix_freelist(tx, false);
	if (err)
		return err;
	if (hint >= fs->f_blocks)
		hint = 0;
	for (int attempt = 0; attempt < 2; attempt++) {
		uint64_t s, l, a, n;
		int r = search(tx, hint, hint, UINT64_MAX, want, min, &s, &l, &a, &n);
		if (r == 0 && hint)
			r = search(tx, 0, 0, hint + 1, want, min, &s, &l, &a, &n);
		if (r < 0)
			return r;
		if (r == 1) {
			err = tree_carve(tx, s, l, a, n);
			if (err)
				return err;
			consume_reservation(tx, n);
			*start = a;
			*len = n;
			counter_inc(&fs->f_stats.allocs);
			counter_add(&fs->f_stats.alloc_blocks, n);
			return 0;
		}
		if (attempt == 0 && busy_any(fs)) {
			/* everything that fits was freed by checkpoints not yet
			 * durable: make them durable. The one force with inode
			 * locks held (this transaction's I/O and metadata locks,
			 * the allocation lock), on a nearly full disk only: the
			 * force waits for none of them (the push and what it
			 * completes take journal, item and busy-extent locks; the
			 * AIL only tries inode locks) */
			counter_inc(&fs->f_stats.busy_forces);
			err = log_force_all(fs->f_log);
			if (err)
				return err;
			continue;
		}
		break;
	}
	return -ENOSPC;
}

int alloc_free(struct fstx *tx, uint64_t start, uint64_t len)
{
	struct fs *fs = tx->fs;
	if (!len)
		return 0;
	if (start == 0 || start >= fs->f_blocks || len > fs->f_blocks - start) {
		msg_err("fs: freeing blocks %llu+%llu outside the device",
			(unsigned long long)start, (unsigned long long)len);
		return -EUCLEAN;
	}
	fstx_lock(tx, FSTX_ALLOC);
	int err = fix_freelist(tx, true);
	if (err)
		return err;
	busy_add(tx, start, len);
	err = tree_free(tx, start, len);
	if (!err) {
		counter_inc(&fs->f_stats.frees);
		counter_add(&fs->f_stats.free_blocks, len);
	}
	return err;
}

static int tree_block_alloc(struct bt *bt, struct fstx *tx, uint64_t *blkno)
{
	uint64_t len;
	uint64_t hint = bt->root ? bt->root : (bt->owner ? fs_ino_block(bt->owner) : 0);
	return alloc_extent(tx, hint, 1, 1, blkno, &len);
}

static void tree_block_free(struct bt *bt, struct fstx *tx, uint64_t blkno)
{
	int err = alloc_free(tx, blkno, 1);
	if (err)
		fs_shutdown(tx->fs, "freeing a tree block failed");
}

/* set_root is the tree's owner's business; the ops here only supply blocks */
const struct bt_ops alloc_bt_ops = {
	.alloc_block = tree_block_alloc,
	.free_block = tree_block_free,
};

int alloc_mount(struct fs *fs)
{
	mutex_init(&fs->f_busy_lock, &busy_lock_class);
	cond_init(&fs->f_busy_cond);
	list_init(&fs->f_busy);
	struct bt bt;
	free_bt(fs, &bt);
	struct bt_cursor c;
	int64_t total = 0;
	uint64_t prev_end = 0;
	int r = bt_lookup(&bt, &(struct fs_btkey){0, 0}, BT_GE, &c);
	for (; r == 1; r = bt_next(&c)) {
		uint64_t s, l;
		int err = rec_get(&c, &s, &l);
		if (err) {
			r = err;
			break;
		}
		if (s < prev_end || s + l > fs->f_blocks || s + l < s) {
			msg_err("fs: free-space record %llu+%llu overlaps or lies outside the device",
				(unsigned long long)s, (unsigned long long)l);
			r = -EUCLEAN;
			break;
		}
		prev_end = s + l;
		total += (int64_t)l;
	}
	bt_cursor_done(&c);
	if (r < 0)
		return r;
	fs->f_free = total;
	fs->f_resv = 0;
	fs->f_reserve = (int64_t)MAX(64ull, fs->f_blocks / 256);
	return 0;
}

int64_t alloc_free_blocks(struct fs *fs)
{
	mutex_lock(&fs->f_resv_lock);
	int64_t n = fs->f_free;
	mutex_unlock(&fs->f_resv_lock);
	return n;
}
