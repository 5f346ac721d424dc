/*
 * fstx.c - engine transactions: a journal transaction plus what the engine
 * keeps alongside it.
 *
 *   - Block reservation: fstx_begin() reserves the most blocks the
 *     operation can allocate, so that it fails with ENOSPC before it changes
 *     anything (a transaction that changed items cannot be cancelled).
 *   - Global allocation locks: taken at first use, held until the end.
 *   - Joined buffers: referenced until the end.
 *   - Busy extents: blocks freed by the transaction may not be allocated
 *     again until its checkpoint is durable; a durable callback releases
 *     them (otherwise a crash could leave the old owner pointing at blocks
 *     someone else already overwrote).
 */
#include <stdlib.h>

#include "base/mem.h"
#include "base/time.h"
#include "fs/fs_priv.h"

/*
 * What a transaction may reserve: the free blocks no other transaction
 * has reserved, less those kept back (f_reserve) for metadata that
 * transactions allocate beyond their reservations. An operation that
 * frees space (unlink, rmdir, rename) may take half of what is kept back,
 * and when only other transactions' reservations stand in its way it
 * waits for them, up to FREEING_WAIT_NS, rather than fail: so a full
 * filesystem can always be emptied, even while writers race for its last
 * blocks. The wait holds I/O locks only (the callers' directories), which
 * no transaction that holds a reservation waits for. A reservation of
 * nothing always succeeds: a chmod or an overwrite needs no block, even
 * when reservations in flight have dipped into what is kept back.
 */
#define FREEING_WAIT_NS (2 * NSEC_PER_SEC)

int fs_reserve_blocks(struct fs *fs, uint64_t n, bool freeing)
{
	int64_t keep = freeing ? fs->f_reserve / 2 : fs->f_reserve;
	uint64_t deadline = freeing ? now_ns() + FREEING_WAIT_NS : 0;
	int err = 0;
	if (!n)
		return 0;
	mutex_lock(&fs->f_resv_lock);
	while (fs->f_free - fs->f_resv - keep < (int64_t)n) {
		uint64_t now = now_ns();
		if (!freeing || fs->f_free - keep < (int64_t)n || now >= deadline) {
			err = -ENOSPC;
			break;
		}
		fs->f_resv_waiters++;
		cond_timedwait_ns(&fs->f_resv_cond, &fs->f_resv_lock, deadline - now);
		fs->f_resv_waiters--;
	}
	if (!err)
		fs->f_resv += (int64_t)n;
	mutex_unlock(&fs->f_resv_lock);
	return err;
}

void fs_unreserve_blocks(struct fs *fs, uint64_t n)
{
	mutex_lock(&fs->f_resv_lock);
	fs->f_resv -= (int64_t)n;
	BUG_ON(fs->f_resv < 0);
	if (fs->f_resv_waiters)
		cond_broadcast(&fs->f_resv_cond);
	mutex_unlock(&fs->f_resv_lock);
}

static int begin(struct fs *fs, uint64_t blk_res, uint64_t log_bytes, bool freeing,
		 struct fstx **txp)
{
	/* it may wait for the trimmer (ENOSPC) and for log space: no inode
	 * metadata lock or anything ranked after it, only I/O locks */
	assert_none_held(LOCK_RANK_FS_ILOCK, LOCK_RANK_MAX);
	*txp = NULL;
	if (fs_is_shutdown(fs))
		return -EIO;
	if (!log_bytes)
		log_bytes = log_calc_res(fs->f_log, 24, 16 * FS_BLOCK_SIZE);
	int err = fs_reserve_blocks(fs, blk_res, freeing);
	if (err == -ENOSPC && blk_res) {
		/* other files' preallocation past EOF may be all that is missing */
		fs_trim_eofblocks(fs);
		err = fs_reserve_blocks(fs, blk_res, freeing);
	}
	if (err)
		return err;
	struct trans *tp;
	err = trans_alloc(fs->f_log, log_bytes, 0, &tp);
	if (err) {
		fs_unreserve_blocks(fs, blk_res);
		return err;
	}
	struct fstx *tx = xcalloc(1, sizeof(*tx));
	tx->fs = fs;
	tx->tp = tp;
	tx->blk_res = (int64_t)blk_res;
	list_init(&tx->bufs);
	list_init(&tx->busy);
	*txp = tx;
	return 0;
}

int fstx_begin(struct fs *fs, uint64_t blk_res, uint64_t log_bytes, struct fstx **txp)
{
	return begin(fs, blk_res, log_bytes, false, txp);
}

int fstx_begin_freeing(struct fs *fs, uint64_t blk_res, uint64_t log_bytes, struct fstx **txp)
{
	return begin(fs, blk_res, log_bytes, true, txp);
}

void fstx_unordered(struct fstx *tx)
{
	trans_set_unordered(tx->tp);
}

/*
 * The inode allocation lock always comes with the block allocation lock:
 * both allocators change the superblock (tree roots, free list), so a
 * transaction holding the superblock buffer under one of them must never
 * wait for the other.
 */
void fstx_lock(struct fstx *tx, unsigned locks)
{
	struct fs *fs = tx->fs;
	if (locks & FSTX_IALLOC)
		locks |= FSTX_ALLOC;
	unsigned want = locks & ~tx->locks;
	/* the inode allocation lock ranks before the block allocation lock */
	BUG_ON((want & FSTX_IALLOC) && (tx->locks & FSTX_ALLOC));
	if (want & FSTX_IALLOC)
		mutex_lock(&fs->f_ialloc_lock);
	if (want & FSTX_ALLOC)
		mutex_lock(&fs->f_alloc_lock);
	tx->locks |= want;
}

static void fstx_unlock(struct fstx *tx)
{
	if (tx->locks & FSTX_ALLOC)
		mutex_unlock(&tx->fs->f_alloc_lock);
	if (tx->locks & FSTX_IALLOC)
		mutex_unlock(&tx->fs->f_ialloc_lock);
	tx->locks = 0;
}

struct busy_batch {
	struct log_durable_cb cb;
	struct fs *fs;
	struct list busy;
};

static void busy_durable(struct log_durable_cb *cb, int err)
{
	struct busy_batch *b = container_of(cb, struct busy_batch, cb);
	alloc_busy_done(b->fs, &b->busy);
	free(b);
}

/*
 * Take the joined buffers off the transaction's list while their locks are
 * still held: once commit releases a buffer, another transaction may join
 * it and link it into its own list.
 */
static struct fsbuf **fstx_take_bufs(struct fstx *tx, size_t *n)
{
	size_t cnt = 0;
	struct fsbuf *bp, *tmp;
	list_for_each_entry (bp, &tx->bufs, b_txlink)
		cnt++;
	struct fsbuf **v = xmalloc((cnt ? cnt : 1) * sizeof(*v));
	cnt = 0;
	list_for_each_entry_safe (bp, tmp, &tx->bufs, b_txlink) {
		list_del(&bp->b_txlink);
		v[cnt++] = bp;
	}
	*n = cnt;
	return v;
}

/* After commit or cancel: drop the references the transaction held. */
static void fstx_end(struct fstx *tx, struct fsbuf **bufs, size_t n)
{
	fstx_unlock(tx);
	for (size_t i = 0; i < n; i++)
		fsbuf_rele(bufs[i]);
	free(bufs);
	if (tx->blk_res > 0)
		fs_unreserve_blocks(tx->fs, (uint64_t)tx->blk_res);
	free(tx);
}

int fstx_commit(struct fstx *tx, struct fs_result *res)
{
	if (!list_empty(&tx->busy)) {
		struct busy_batch *b = xmalloc(sizeof(*b));
		b->fs = tx->fs;
		list_init(&b->busy);
		list_splice_tail(&tx->busy, &b->busy);
		b->cb.dc_fn = busy_durable;
		trans_on_durable(tx->tp, &b->cb);
	}
	size_t n;
	struct fsbuf **bufs = fstx_take_bufs(tx, &n);
	uint64_t csn = 0;
	int err = trans_commit(tx->tp, &csn);
	fstx_end(tx, bufs, n);
	if (res && csn > res->csn)
		res->csn = csn;
	return err;
}

void fstx_cancel(struct fstx *tx)
{
	size_t n;
	struct fsbuf **bufs = fstx_take_bufs(tx, &n);
	trans_cancel(tx->tp);
	alloc_busy_done(tx->fs, &tx->busy);
	fstx_end(tx, bufs, n);
}

void fsbuf_join(struct fstx *tx, struct fsbuf *bp)
{
	if (trans_has_item(tx->tp, &bp->b_bi.bi_item))
		return;
	fsbuf_hold(bp);
	buf_item_join(tx->tp, &bp->b_bi);
	list_add_tail(&bp->b_txlink, &tx->bufs);
}

void fsbuf_log(struct fstx *tx, struct fsbuf *bp, uint32_t off, uint32_t len)
{
	buf_item_log(tx->tp, &bp->b_bi, off, len);
}

void fsbuf_cancel(struct fstx *tx, struct fsbuf *bp)
{
	buf_item_cancel(tx->tp, &bp->b_bi);
}

void fs_log_sb(struct fstx *tx, uint32_t off, uint32_t len)
{
	fsbuf_join(tx, tx->fs->f_sbp);
	fsbuf_log(tx, tx->fs->f_sbp, off, len);
}
