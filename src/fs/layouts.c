/*
 * layouts.c - what the pNFS block layout needs from the engine: block maps,
 * LAYOUTCOMMIT, and layout leases.
 *
 * map_blocks for writing allocates unwritten blocks over holes and makes
 * that allocation durable before returning: the client writes to those
 * blocks directly, and a server crash must not hand them to someone else.
 * For the same reason, blocks whose data the journal may still replay (a
 * logged write's, docs/logged-data.md) have those images cancelled, durably,
 * before the client gets them (data_item.h, D3).
 *
 * commit_blocks is LAYOUTCOMMIT made stable the way fdatasync is (rule 6):
 * convert what the client wrote, grow the size, log the timestamps (only
 * TIMESTAMP|CHANGE when nothing else changed), commit without forcing, then
 * fs_fsync(datasync): force to the inode's datasync sequence, or flush the
 * data device if that wrote nothing. A conversion someone else committed
 * earlier is still covered: datasync_seq stays set until it is durable.
 *
 * Layout leases (rule 9): per inode, the layouts handed out (holder, range,
 * being recalled or not). fs_break_layouts() starts recalls and never
 * waits; the caller may wait up to 30 ms only for an idle layout of another
 * holder whose recall it just started. Returns wake waiters.
 *
 * Blocks allocated for a layout. An RW layout's map fills the holes of its
 * range with unwritten blocks; a client that returns the layout without a
 * LAYOUTCOMMIT of them (or loses it: its lease, a revocation) would leave
 * them allocated for good, and a client could fill the disk that way. So
 * fs_layout_map keeps, per inode, the block ranges it filled
 * (i_layout_allocs), and every change that shrinks what the RW layouts
 * cover gives back those no RW layout covers any more:
 *
 *  L1. A record names only blocks that fs_layout_map found as holes and
 *      filled for an RW layout. Blocks that were there before, written or
 *      unwritten (fallocated, preallocated), are never recorded, so never
 *      given back.
 *  L2. Records change only with the I/O lock held exclusively and the
 *      layout lock. Once fs_layout_map, fs_layout_return or fs_layout_trim
 *      returns, every recorded block lies in an RW layout of some holder:
 *      what no RW layout covers has been given back and forgotten.
 *  L3. A recorded block is freed only when no RW layout of any holder
 *      covers any byte of it (recalled or not: a recalled holder may still
 *      write until it returns, or is fenced and revoked, layout.c), and
 *      only while it is still unwritten: blocks a LAYOUTCOMMIT or a write
 *      through the server converted are the file's.
 *  L4. The freeing is done under the I/O lock held exclusively, so no map
 *      hands out a block being freed: a map after it finds a hole, and
 *      one before it made the block covered by its layout (L3).
 *
 * The records are in memory only: after a crash the blocks stay in the
 * file, unwritten (zeros); past EOF they are trimmed as preallocation when
 * the inode is read back (eofblocks.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/time.h"
#include "fs/fs_priv.h"
#include "log/data_item.h"

_Static_assert(FS_MAP_BLOCK == FS_BLOCK_SIZE, "the fs API names the format's block");
_Static_assert(FS_PNFS_SIG_OFFSET == FS_SB_SIG_OFFSET, "and where the signature is");

static bool blk_aligned(uint64_t x)
{
	return !(x % FS_BLOCK_SIZE);
}

/* D3: the live logged blocks among maps, cancelled durably (an ordered
 * transaction: its flush makes their in-place copies durable first). */
static int cancel_mapped(struct fs *fs, const struct fs_map *maps, unsigned n)
{
	bool live = false;
	for (unsigned i = 0; i < n && !live; i++)
		live = maps[i].state != FS_MAP_HOLE && data_live(fs->f_log, maps[i].addr, maps[i].len);
	if (!live)
		return 0;
	struct fstx *tx;
	int err = fstx_begin(fs, 0, log_calc_res(fs->f_log, 4 * n, 32 * (size_t)n), &tx);
	if (err)
		return err;
	uint64_t cancelled = 0;
	for (unsigned i = 0; i < n; i++)
		if (maps[i].state != FS_MAP_HOLE)
			cancelled += data_item_cancel(tx->tp, maps[i].addr, maps[i].len);
	if (cancelled)
		counter_inc(&fs->f_stats.logged_overwrites);
	struct fs_result res = {0};
	err = fstx_commit(tx, &res);
	if (!err && res.csn)
		err = log_force_seq(fs->f_log, res.csn, true, NULL);
	return err;
}

/* Up to max maps of file blocks [first, end) (I/O lock held). */
static int map_range(struct fs_inode *ip, uint64_t first, uint64_t end, struct fs_map *maps,
		     unsigned max, unsigned *n)
{
	for (uint64_t b = first; b < end && *n < max;) {
		struct bmap_ext e;
		bool hole;
		int err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			return err;
		uint64_t stop = hole ? MIN(end, b + e.len) : MIN(end, e.off + e.len);
		struct fs_map *m = &maps[(*n)++];
		m->off = b * FS_BLOCK_SIZE;
		m->len = (stop - b) * FS_BLOCK_SIZE;
		if (hole) {
			m->state = FS_MAP_HOLE;
			m->addr = 0;
		} else {
			m->state = e.unwritten ? FS_MAP_UNWRITTEN : FS_MAP_WRITTEN;
			m->addr = fs_daddr(e.start + (b - e.off));
		}
		b = stop;
	}
	return 0;
}

static bool map_args_ok(uint64_t off, uint64_t len, unsigned max)
{
	return len && blk_aligned(off) && blk_aligned(len) && off + len >= off &&
	       off + len <= FS_MAX_FILE_SIZE && max;
}

int fs_map_blocks(struct fs_inode *ip, uint64_t off, uint64_t len, bool for_write,
		  struct fs_map *maps, unsigned max, unsigned *n)
{
	struct fs *fs = ip->i_fs;
	*n = 0;
	if (!map_args_ok(off, len, max))
		return -EINVAL;
	if (fs_is_shutdown(fs))
		return -EIO;
	counter_inc(&fs->f_stats.map_blocks);
	uint64_t first = off / FS_BLOCK_SIZE, end = (off + len) / FS_BLOCK_SIZE;
	int err = 0;
	if (for_write) {
		rwlock_wrlock(&ip->i_iolock);
		if (!S_ISREG(ip->i_d.mode)) {
			err = -EINVAL;
			goto out;
		}
		/* holes get unwritten blocks, durable before the client writes;
		 * the one force made under an I/O lock (docs/locking.md) */
		struct fs_result res = {0};
		err = file_alloc_holes(ip, first, end - 1, &res);
		if (!err && res.csn)
			err = log_force_seq(fs->f_log, res.csn, true, NULL);
		if (err)
			goto out;
	} else {
		rwlock_rdlock(&ip->i_iolock);
		if (!S_ISREG(ip->i_d.mode)) {
			err = -EINVAL;
			goto out;
		}
	}
	err = map_range(ip, first, end, maps, max, n);
	if (!err && for_write)
		err = cancel_mapped(fs, maps, *n);
out:
	rwlock_unlock(&ip->i_iolock);
	return err;
}

/* Every block of [first, end) mapped? */
static int all_mapped(struct fs_inode *ip, uint64_t first, uint64_t end, bool *yes)
{
	*yes = true;
	for (uint64_t b = first; b < end;) {
		struct bmap_ext e;
		bool hole;
		int err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			return err;
		if (hole) {
			*yes = false;
			return 0;
		}
		b = e.off + e.len;
	}
	return 0;
}

int fs_commit_blocks(struct fs_inode *ip, const struct fs_range *ranges, unsigned n,
		     uint64_t new_size, const struct timespec *mtime, bool *log_written)
{
	struct fs *fs = ip->i_fs;
	if (log_written)
		*log_written = false;
	if (fs_is_shutdown(fs))
		return -EIO;
	counter_inc(&fs->f_stats.commit_blocks);
	rwlock_wrlock(&ip->i_iolock);
	int err = S_ISREG(ip->i_d.mode) ? 0 : -EINVAL;
	for (unsigned i = 0; i < n && !err; i++) {
		const struct fs_range *r = &ranges[i];
		if (!r->len || !blk_aligned(r->off) || !blk_aligned(r->len) ||
		    r->off + r->len < r->off) {
			err = -EINVAL;
			break;
		}
		bool mapped;
		err = all_mapped(ip, r->off / FS_BLOCK_SIZE, (r->off + r->len) / FS_BLOCK_SIZE,
				 &mapped);
		if (!err && !mapped) {
			msg_warn("fs: layout commit of inode %llu names [%llu, +%llu) without "
				 "blocks",
				 (unsigned long long)ip->i_ino, (unsigned long long)r->off,
				 (unsigned long long)r->len);
			err = -EINVAL;
		}
	}
	if (err) {
		rwlock_unlock(&ip->i_iolock);
		return err;
	}
	struct fstx *tx;
	uint64_t res = 0;
	for (unsigned i = 0; i < n; i++)
		res += 2 * bmap_res(ip);
	err = fstx_begin(fs, res, 0, &tx);
	if (err) {
		rwlock_unlock(&ip->i_iolock);
		return err;
	}
	ino_join(tx, ip);
	for (unsigned i = 0; i < n && !err; i++)
		err = bmap_set_written(tx, ip, ranges[i].off / FS_BLOCK_SIZE,
				       ranges[i].len / FS_BLOCK_SIZE, true);
	unsigned fields = FS_ILOG_TIMESTAMP | FS_ILOG_CHANGE;
	if (new_size > ip->i_d.size) {
		ip->i_d.size = new_size;
		fields |= FS_ILOG_CORE;
	}
	if (fs->f_bench_sync_lc)
		fields |= FS_ILOG_CORE; /* the whole inode, every time */
	ino_touch(ip, true);
	if (mtime)
		ip->i_d.mtime = *mtime;
	ino_log(tx, ip, fields);
	/* not synchronous: the force below goes only as far as needed */
	/* the client wrote the storage itself: the device layer saw none of
	 * it, so the flush below (or the checkpoint's) must not be elided */
	dev_note_external_writes(fs->f_ddev);
	struct fs_result cres = {0};
	int cerr = fstx_commit(tx, &cres);
	rwlock_unlock(&ip->i_iolock);
	if (!err)
		err = cerr;
	if (err)
		return err;
	if (fs->f_bench_sync_lc) {
		/* benchmarks only (fs_mount_opts): a synchronous transaction,
		 * forced to its own sequence; the checkpoint's flush covers the
		 * client's data, so nothing else is flushed */
		if (log_written)
			*log_written = !log_seq_durable(fs->f_log, cres.csn);
		return log_force_seq(fs->f_log, cres.csn, true, NULL);
	}
	return fs_fsync(ip, true, log_written);
}

/* ---- layout leases ---- */

void fs_set_layout_ops(struct fs *fs, const struct fs_layout_ops *ops)
{
	mutex_lock(&fs->f_layout_lock);
	fs->f_layout_ops = *ops;
	mutex_unlock(&fs->f_layout_lock);
}

static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	uint64_t ae = alen > UINT64_MAX - a ? UINT64_MAX : a + alen;
	uint64_t be = blen > UINT64_MAX - b ? UINT64_MAX : b + blen;
	return a < be && b < ae;
}

static bool any_recalling(struct fs_inode *ip)
{
	for (struct fs_layout *l = ip->i_layouts; l; l = l->next)
		if (l->recalling)
			return true;
	return false;
}

/* Is a layout of ip held by another holder than requester being recalled? */
static bool other_recalling(struct fs_inode *ip, uint64_t requester)
{
	for (struct fs_layout *l = ip->i_layouts; l; l = l->next)
		if (l->recalling && l->holder != requester)
			return true;
	return false;
}

/* Mark the holder's layouts recalling; returns how many were idle. */
static unsigned mark_recall(struct fs_inode *ip, uint64_t holder)
{
	unsigned n = 0;
	for (struct fs_layout *l = ip->i_layouts; l; l = l->next)
		if (l->holder == holder && !l->recalling) {
			l->recalling = true;
			n++;
		}
	return n;
}

/*
 * The layouts of ip changed (layout lock held): say whether it has any to
 * readers that do not take the lock, then move the data generation. So a
 * read that samples the generation and then finds no layout either started
 * before a grant, or finds the layouts gone, and a window filled while the
 * file had one is never used after (readahead.c, R4).
 */
static void layouts_changed(struct fs_inode *ip)
{
	assert_locked(&ip->i_fs->f_layout_lock);
	atomic_store(&ip->i_has_layouts, ip->i_layouts != NULL);
	ino_data_changed(ip);
}

int fs_layout_get(struct fs_inode *ip, uint64_t holder, uint64_t off, uint64_t len, bool rw,
		  uint64_t *id)
{
	struct fs *fs = ip->i_fs;
	uint64_t recall[16];
	unsigned nrecall = 0;
	int err = 0;
	mutex_lock(&fs->f_layout_lock);
	if (any_recalling(ip)) {
		/* a LAYOUTGET racing a recall: no layout escapes the recall */
		err = -EAGAIN;
	} else {
		for (struct fs_layout *l = ip->i_layouts; l; l = l->next) {
			if (l->holder != holder && overlap(l->off, l->len, off, len) &&
			    (rw || l->rw)) {
				if (mark_recall(ip, l->holder) && nrecall < ARRAY_SIZE(recall))
					recall[nrecall++] = l->holder;
				err = -EAGAIN;
			}
		}
	}
	*id = 0;
	if (!err) {
		struct fs_layout *l = xcalloc(1, sizeof(*l));
		l->id = *id = ++fs->f_layout_next_id;
		l->holder = holder;
		l->off = off;
		l->len = len;
		l->rw = rw;
		l->next = ip->i_layouts;
		ip->i_layouts = l;
		layouts_changed(ip);
	}
	struct fs_layout_ops ops = fs->f_layout_ops;
	mutex_unlock(&fs->f_layout_lock);
	assert_no_locks(); /* recall_fn's contract (fs.h) */
	for (unsigned i = 0; i < nrecall; i++) {
		counter_inc(&fs->f_stats.layout_recalls);
		if (ops.recall)
			ops.recall(ops.arg, ip, recall[i]);
	}
	return err;
}

/* ---- blocks allocated for layouts (L1-L4) ---- */

/* The file blocks an RW layout covers some byte of: [*first, *end). */
static void layout_blocks(const struct fs_layout *l, uint64_t *first, uint64_t *end)
{
	uint64_t le = l->len > UINT64_MAX - l->off ? UINT64_MAX : l->off + l->len;
	*first = l->off / FS_BLOCK_SIZE;
	*end = le / FS_BLOCK_SIZE + (le % FS_BLOCK_SIZE != 0);
}

static void alloc_add(struct fs_layout_alloc **list, uint64_t first, uint64_t end)
{
	struct fs_layout_alloc *a = xmalloc(sizeof(*a));
	a->first = first;
	a->end = end;
	a->next = *list;
	*list = a;
}

/*
 * Split the records of ip into the parts some RW layout covers, kept, and
 * the rest, handed back in *gone (f_layout_lock held).
 */
static void allocs_uncovered_locked(struct fs_inode *ip, struct fs_layout_alloc **gone)
{
	assert_locked(&ip->i_fs->f_layout_lock);
	struct fs_layout_alloc *keep = NULL, *a = ip->i_layout_allocs;
	*gone = NULL;
	while (a) {
		struct fs_layout_alloc *next = a->next;
		for (uint64_t pos = a->first; pos < a->end;) {
			/* the covered run from pos, or the uncovered one up to
			 * the next RW layout */
			uint64_t covered = pos, stop = a->end;
			bool progress = true;
			while (progress) {
				progress = false;
				for (struct fs_layout *l = ip->i_layouts; l; l = l->next) {
					uint64_t lf, le;
					if (!l->rw)
						continue;
					layout_blocks(l, &lf, &le);
					if (lf <= covered && covered < le) {
						covered = MIN(le, a->end);
						progress = covered < a->end;
					} else if (lf > pos && lf < stop) {
						stop = lf;
					}
				}
			}
			if (covered > pos) {
				alloc_add(&keep, pos, covered);
				pos = covered;
			} else {
				alloc_add(gone, pos, stop);
				pos = stop;
			}
		}
		free(a);
		a = next;
	}
	ip->i_layout_allocs = keep;
}

/* Free what is still unwritten of file blocks [b, end) (I/O lock held
 * exclusively): written blocks and holes are left alone (L3). */
static int free_unwritten(struct fs_inode *ip, uint64_t b, uint64_t end)
{
	struct fs *fs = ip->i_fs;
	int err = 0;
	while (b < end && !err) {
		struct bmap_ext e;
		bool hole;
		err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			break;
		uint64_t stop =
			hole ? (e.len > end - b ? end : b + e.len) : MIN(end, e.off + e.len);
		if (hole || !e.unwritten) {
			b = stop;
			continue;
		}
		struct fstx *tx;
		err = fstx_begin(fs, 0, 0, &tx);
		if (err)
			break;
		fstx_unordered(tx); /* the blocks read as zeros: no data to order */
		ino_join(tx, ip);
		uint64_t before = ip->i_d.nblocks, next = stop;
		err = bmap_punch(tx, ip, b, stop - b, &next);
		uint64_t freed = before - ip->i_d.nblocks;
		/* zeros before and after: no read, and no fdatasync, depends
		 * on it; a crash before it is durable brings back unwritten
		 * blocks */
		ino_log_only(tx, ip, FS_ILOG_EOFBLOCKS);
		int cerr = fstx_commit(tx, NULL);
		if (!err)
			err = cerr;
		if (!err)
			counter_add(&fs->f_stats.layout_giveback_blocks, freed);
		b = next;
	}
	return err;
}

/* Give back the recorded blocks no RW layout covers (L2-L4; I/O lock held
 * exclusively, no other lock). */
static void giveback_locked(struct fs_inode *ip)
{
	struct fs *fs = ip->i_fs;
	assert_wrlocked(&ip->i_iolock);
	struct fs_layout_alloc *gone;
	mutex_lock(&fs->f_layout_lock);
	allocs_uncovered_locked(ip, &gone);
	mutex_unlock(&fs->f_layout_lock);
	int err = 0;
	while (gone) {
		struct fs_layout_alloc *next = gone->next;
		if (!err && !fs_is_shutdown(fs)) {
			counter_inc(&fs->f_stats.layout_givebacks);
			err = free_unwritten(ip, gone->first, gone->end);
			/* what could not be freed stays in the file as
			 * unwritten blocks: zeros, found clean by check */
			if (err && err != -EIO)
				msg_err("fs: giving back the blocks a layout of inode %llu "
					"allocated failed: %s",
					(unsigned long long)ip->i_ino, strerror(-err));
		}
		free(gone);
		gone = next;
	}
}

/* After a change that may have shrunk the RW layouts of ip (no lock held;
 * allocs: records existed then). */
static void giveback(struct fs_inode *ip, bool allocs)
{
	if (!allocs)
		return;
	rwlock_wrlock(&ip->i_iolock);
	giveback_locked(ip);
	rwlock_unlock(&ip->i_iolock);
}

int fs_layout_map(struct fs_inode *ip, uint64_t id, uint64_t off, uint64_t len, struct fs_map *maps,
		  unsigned max, unsigned *n)
{
	struct fs *fs = ip->i_fs;
	*n = 0;
	if (!map_args_ok(off, len, max))
		return -EINVAL;
	mutex_lock(&fs->f_layout_lock);
	bool found = false, rw = false;
	for (struct fs_layout *l = ip->i_layouts; l && !found; l = l->next)
		if (l->id == id) {
			found = true;
			rw = l->rw;
		}
	mutex_unlock(&fs->f_layout_lock);
	if (!found)
		return -EAGAIN;
	if (!rw)
		return fs_map_blocks(ip, off, len, false, maps, max, n);
	if (fs_is_shutdown(fs))
		return -EIO;
	counter_inc(&fs->f_stats.map_blocks);
	uint64_t first = off / FS_BLOCK_SIZE, end = (off + len) / FS_BLOCK_SIZE;
	struct fs_layout_alloc *holes = NULL;
	rwlock_wrlock(&ip->i_iolock);
	int err = S_ISREG(ip->i_d.mode) ? 0 : -EINVAL;
	/* the holes that max maps reach: filling more would allocate blocks
	 * no layout hands out */
	uint64_t b = first;
	for (unsigned runs = 0; !err && b < end && runs < max; runs++) {
		struct bmap_ext e;
		bool hole;
		err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			break;
		uint64_t stop =
			hole ? (e.len > end - b ? end : b + e.len) : MIN(end, e.off + e.len);
		if (hole)
			alloc_add(&holes, b, stop);
		b = stop;
	}
	if (!err && holes) {
		/* durable before the client writes; the one force made under
		 * an I/O lock (docs/locking.md) */
		struct fs_result res = {0};
		err = file_alloc_holes(ip, first, b - 1, &res);
		if (!err && res.csn)
			err = log_force_seq(fs->f_log, res.csn, true, NULL);
	}
	/* recorded even after a failure: what was filled is the layout's
	 * (L1), and a hole left is skipped when given back */
	mutex_lock(&fs->f_layout_lock);
	while (holes) {
		struct fs_layout_alloc *next = holes->next;
		holes->next = ip->i_layout_allocs;
		ip->i_layout_allocs = holes;
		holes = next;
	}
	bool gone = true;
	for (struct fs_layout *l = ip->i_layouts; l; l = l->next)
		if (l->id == id)
			gone = false;
	mutex_unlock(&fs->f_layout_lock);
	/* a return meanwhile saw no record of this: what no RW layout covers
	 * now goes here (L2) */
	giveback_locked(ip);
	if (!err && gone)
		err = -EAGAIN;
	if (!err)
		err = map_range(ip, first, end, maps, max, n);
	if (!err)
		err = cancel_mapped(fs, maps, *n);
	rwlock_unlock(&ip->i_iolock);
	if (err)
		*n = 0;
	return err;
}

/* Wake the waiters once no layout of ip is being recalled (f_layout_lock
 * held): the list of those to call after it is dropped. */
static struct fs_layout_waiter *take_waiters(struct fs_inode *ip)
{
	struct fs_layout_waiter *wake = NULL;
	if (!any_recalling(ip)) {
		wake = ip->i_layout_waiters;
		ip->i_layout_waiters = NULL;
		cond_broadcast(&ip->i_fs->f_layout_cond);
	}
	return wake;
}

static void call_waiters(struct fs_layout_waiter *wake)
{
	while (wake) {
		struct fs_layout_waiter *next = wake->next;
		wake->fn(wake);
		wake = next;
	}
}

bool fs_layout_return(struct fs_inode *ip, uint64_t holder, uint64_t off, uint64_t len,
		      unsigned modes)
{
	struct fs *fs = ip->i_fs;
	struct fs_layout_waiter *wake = NULL;
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	bool held = false;
	mutex_lock(&fs->f_layout_lock);
	bool allocs = ip->i_layout_allocs != NULL;
	struct fs_layout **pp = &ip->i_layouts;
	while (*pp) {
		struct fs_layout *l = *pp;
		uint64_t le = l->len > UINT64_MAX - l->off ? UINT64_MAX : l->off + l->len;
		if (l->holder != holder || !(modes & (l->rw ? FS_LAYOUT_RW : FS_LAYOUT_READ)) ||
		    !overlap(l->off, l->len, off, len)) {
			held |= l->holder == holder;
			pp = &l->next;
			continue;
		}
		/* what lies outside the range stays held, recalled or not */
		if (l->off < off && le > end) {
			struct fs_layout *tail = xcalloc(1, sizeof(*tail));
			*tail = *l;
			tail->id = 0; /* fs_layout_trim names what LAYOUTGET added */
			tail->off = end;
			tail->len = le - end;
			l->len = off - l->off;
			l->next = tail;
			held = true;
			pp = &tail->next;
		} else if (l->off < off) {
			l->len = off - l->off;
			held = true;
			pp = &l->next;
		} else if (le > end) {
			l->off = end;
			l->len = le - end;
			held = true;
			pp = &l->next;
		} else {
			*pp = l->next;
			free(l);
		}
	}
	wake = take_waiters(ip);
	layouts_changed(ip);
	mutex_unlock(&fs->f_layout_lock);
	/* before the waiters go on: they find the blocks given back */
	giveback(ip, allocs);
	call_waiters(wake);
	return held;
}

void fs_layout_trim(struct fs_inode *ip, uint64_t id, uint64_t len)
{
	struct fs *fs = ip->i_fs;
	mutex_lock(&fs->f_layout_lock);
	bool allocs = ip->i_layout_allocs != NULL;
	for (struct fs_layout **pp = &ip->i_layouts; *pp; pp = &(*pp)->next) {
		struct fs_layout *l = *pp;
		if (l->id != id)
			continue;
		if (len) {
			l->len = MIN(l->len, len);
		} else {
			*pp = l->next;
			free(l);
		}
		break;
	}
	struct fs_layout_waiter *wake = take_waiters(ip);
	layouts_changed(ip);
	mutex_unlock(&fs->f_layout_lock);
	giveback(ip, allocs);
	call_waiters(wake);
}

bool fs_layout_covers(struct fs_inode *ip, uint64_t holder, uint64_t off, uint64_t len, bool rw)
{
	struct fs *fs = ip->i_fs;
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	mutex_lock(&fs->f_layout_lock);
	/* walk forward from off: each step needs a layout that covers the
	 * current position; layouts are few per holder and file */
	bool progress = true;
	while (off < end && progress) {
		progress = false;
		for (struct fs_layout *l = ip->i_layouts; l; l = l->next) {
			uint64_t le = l->len > UINT64_MAX - l->off ? UINT64_MAX : l->off + l->len;
			if (l->holder == holder && (l->rw || !rw) && l->off <= off && off < le) {
				off = le;
				progress = true;
			}
		}
	}
	mutex_unlock(&fs->f_layout_lock);
	return off >= end;
}

bool fs_layout_recalling_other(struct fs_inode *ip, uint64_t requester)
{
	mutex_lock(&ip->i_fs->f_layout_lock);
	bool r = other_recalling(ip, requester);
	mutex_unlock(&ip->i_fs->f_layout_lock);
	return r;
}

bool fs_layout_recalling(struct fs_inode *ip)
{
	mutex_lock(&ip->i_fs->f_layout_lock);
	bool r = any_recalling(ip);
	mutex_unlock(&ip->i_fs->f_layout_lock);
	return r;
}

/* One inode: 0 no layouts, 1 the caller may wait for the return (this call
 * started recalling idle layouts, or only the requester's own are being
 * recalled), 2 another holder's recall was under way already. */
static int break_one(struct fs_inode *ip, uint64_t requester, uint64_t *recall, unsigned *nrecall,
		     unsigned max)
{
	if (!ip->i_layouts)
		return 0;
	bool under_way = other_recalling(ip, requester);
	for (struct fs_layout *l = ip->i_layouts; l; l = l->next) {
		if (l->recalling)
			continue;
		uint64_t h = l->holder;
		if (mark_recall(ip, h) && *nrecall < max)
			recall[(*nrecall)++] = h;
	}
	return under_way ? 2 : 1;
}

int fs_break_layouts(struct fs_inode *ip, struct fs_inode *ip2, uint64_t requester)
{
	struct fs *fs = ip->i_fs;
	uint64_t recall[2][16];
	unsigned nrecall[2] = {0, 0};
	mutex_lock(&fs->f_layout_lock);
	int a = break_one(ip, requester, recall[0], &nrecall[0], 16);
	int b = (ip2 && ip2 != ip) ? break_one(ip2, requester, recall[1], &nrecall[1], 16) : 0;
	struct fs_layout_ops ops = fs->f_layout_ops;
	mutex_unlock(&fs->f_layout_lock);
	assert_no_locks(); /* recall_fn's contract (fs.h) */
	for (int k = 0; k < 2; k++) {
		struct fs_inode *which = k ? ip2 : ip;
		for (unsigned i = 0; i < nrecall[k]; i++) {
			counter_inc(&fs->f_stats.layout_recalls);
			if (ops.recall)
				ops.recall(ops.arg, which, recall[k][i]);
		}
	}
	int worst = MAX(a, b);
	if (worst == 0)
		return 0;
	if (worst == 2) {
		counter_inc(&fs->f_stats.layout_delays);
		return -EWOULDBLOCK;
	}
	return -EINPROGRESS;
}

int fs_layout_wait(struct fs_inode *ip, uint64_t timeout_ns)
{
	struct fs *fs = ip->i_fs;
	counter_inc(&fs->f_stats.layout_waits);
	uint64_t deadline = now_ns() + timeout_ns;
	mutex_lock(&fs->f_layout_lock);
	while (any_recalling(ip)) {
		uint64_t now = now_ns();
		if (now >= deadline)
			break;
		cond_timedwait_ns(&fs->f_layout_cond, &fs->f_layout_lock, deadline - now);
	}
	int err = any_recalling(ip) ? -ETIMEDOUT : 0;
	mutex_unlock(&fs->f_layout_lock);
	return err;
}

int fs_layout_on_return(struct fs_inode *ip, struct fs_layout_waiter *w)
{
	struct fs *fs = ip->i_fs;
	mutex_lock(&fs->f_layout_lock);
	int err = 0;
	if (any_recalling(ip)) {
		w->next = ip->i_layout_waiters;
		ip->i_layout_waiters = w;
		err = -EINPROGRESS;
	}
	mutex_unlock(&fs->f_layout_lock);
	return err;
}

bool fs_layout_cancel_wait(struct fs_inode *ip, struct fs_layout_waiter *w)
{
	struct fs *fs = ip->i_fs;
	bool found = false;
	mutex_lock(&fs->f_layout_lock);
	for (struct fs_layout_waiter **pp = &ip->i_layout_waiters; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			found = true;
			break;
		}
	}
	mutex_unlock(&fs->f_layout_lock);
	return found;
}
