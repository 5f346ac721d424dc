/*
 * file.c - file data: read, write, fsync, truncate, fallocate, seek, copy.
 *
 * Data is written in place, straight to the device. The engine caches no
 * file data but a few readahead windows for sequential readers, which every
 * change of the data or the block map makes stale (readahead.c, R1-R6);
 * fs_read otherwise reads from the device. What a write must log:
 *   - an overwrite of written blocks inside the file: only timestamps and
 *     the change attribute (TIMESTAMP|CHANGE: fdatasync does not force them,
 *     rule 4), the timestamps at most once per FS_TIME_GRAN_NS, the change
 *     attribute alone otherwise (which fsync does not force either; see
 *     touch_write). Aligned overwrites run under the shared I/O lock, so
 *     writers of different ranges of one file proceed in parallel; so do
 *     whole-block writes into unwritten blocks inside the file, up to
 *     their conversion (write_unwritten);
 *   - a write into holes or past EOF: (1) allocate unwritten blocks in a
 *     transaction, (2) write the data, (3) convert what was written and set
 *     the size in a second transaction. A crash between (2) and (3) leaves
 *     unwritten blocks (reads as zeros), never blocks with someone's old
 *     data; the journal's data-device flush before every checkpoint orders
 *     (2) before (3) on stable storage. Appending writers get unwritten
 *     blocks preallocated beyond EOF, so their later writes only convert.
 *
 * fsync(datasync) (rules 3-5): read the inode item's commit or datasync
 * sequence under its small lock, force the log to it with no inode lock
 * held, and flush the data device unless a flush that started after the
 * call covered the data (log.h, G6).
 *
 * Logged data (docs/logged-data.md): fs_write_sync() may log a small
 * write's data with its metadata, so that the force alone makes it durable.
 * Every in-place write goes through put_data(), which logs it, or cancels
 * the journal's images of the blocks it writes first (data_item.h, D1).
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/time.h"
#include "fs/fs_priv.h"
#include "log/data_item.h"

#define SECTOR 512u

/* Read bytes at any device address, through an aligned bounce. */
static int dev_read_any(struct dev *d, void *buf, size_t len, uint64_t addr)
{
	uint64_t a = ALIGN_DOWN(addr, (uint64_t)SECTOR), b = ALIGN_UP(addr + len, (uint64_t)SECTOR);
	if (a == addr && b == addr + len && !((uintptr_t)buf & 7))
		return dev_read(d, buf, len, addr);
	uint8_t *tmp = xmalloc_aligned(4096, b - a);
	int err = dev_read(d, tmp, b - a, a);
	if (!err)
		memcpy(buf, tmp + (addr - a), len);
	free(tmp);
	return err;
}

static int check_reg(struct fs_inode *ip)
{
	if (S_ISDIR(ip->i_d.mode))
		return -EISDIR;
	if (!S_ISREG(ip->i_d.mode))
		return -EINVAL;
	return 0;
}

int file_read_range(struct fs_inode *ip, uint64_t off, uint8_t *out, size_t len)
{
	assert_rdlocked(&ip->i_iolock);
	uint64_t cur = off, end = off + len;
	while (cur < end) {
		uint64_t blk = cur / FS_BLOCK_SIZE;
		struct bmap_ext e;
		bool hole;
		int err = bmap_lookup(ip, blk, &e, &hole);
		if (err)
			return err;
		uint64_t ext_end = (e.len > (UINT64_MAX / FS_BLOCK_SIZE) - e.off)
					   ? UINT64_MAX
					   : (e.off + e.len) * FS_BLOCK_SIZE;
		uint64_t n = MIN(end, ext_end) - cur;
		if (hole || e.unwritten) {
			memset(out + (cur - off), 0, n);
		} else {
			uint64_t addr = fs_daddr(e.start) + (cur - e.off * FS_BLOCK_SIZE);
			err = dev_read_any(ip->i_fs->f_ddev, out + (cur - off), n, addr);
			if (err)
				return err;
		}
		cur += n;
	}
	return 0;
}

int fs_read(struct fs_inode *ip, uint64_t off, void *buf, size_t len, size_t *nread, bool *eof)
{
	struct fs *fs = ip->i_fs;
	*nread = 0;
	if (eof)
		*eof = false;
	if (fs_is_shutdown(fs))
		return -EIO;
	rwlock_rdlock(&ip->i_iolock);
	mutex_lock(&ip->i_ilock);
	int err = check_reg(ip);
	uint64_t size = ip->i_d.size;
	mutex_unlock(&ip->i_ilock);
	if (err)
		goto out;
	if (off >= size) {
		if (eof)
			*eof = true;
		goto out;
	}
	if (len > size - off)
		len = (size_t)(size - off);
	if (!ra_read(ip, off, buf, len, size, &err))
		err = file_read_range(ip, off, buf, len);
	if (err)
		goto out;
	*nread = len;
	if (eof)
		*eof = off + len >= size;
	counter_inc(&fs->f_stats.reads);
	counter_add(&fs->f_stats.read_bytes, len);
out:
	rwlock_unlock(&ip->i_iolock);
	return err;
}

/* A small transaction logging only the inode: timestamps and change. */
static int touch_txn(struct fs_inode *ip, bool mtime, struct fs_result *res)
{
	struct fstx *tx;
	int err =
		fstx_begin(ip->i_fs, 0, log_calc_res(ip->i_fs->f_log, 1, FS_INODE_SIZE + 32), &tx);
	if (err)
		return err;
	fstx_unordered(tx); /* times */
	ino_join(tx, ip);
	res_pre(res, 0, ip);
	ino_touch(ip, mtime);
	ino_log(tx, ip, FS_ILOG_TIMESTAMP | FS_ILOG_CHANGE);
	counter_inc(&ip->i_fs->f_stats.timestamp_txns);
	res_post(res, 0, ip);
	return fstx_commit(tx, res);
}

static bool ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * The inode part of an overwrite. mtime and ctime move only once
 * FS_TIME_GRAN_NS has passed since mtime was last set (or the clock went
 * back), as a kernel filesystem's timestamps move at clock-tick
 * granularity; the change attribute moves on every write. A write that
 * moved the timestamps logs TIMESTAMP|CHANGE. One that did not logs CHANGE
 * alone, which sets neither commit_seq nor datasync_seq (ino_item.c): it
 * reaches the disk with the next checkpoint, and an fsync after it only
 * flushes the data device. So "overwrite + fsync" in a loop writes the log
 * once per tick, not once per call. A crash can lose the change-attribute
 * steps of a tick that was never checkpointed, as it can lose those of
 * writes nobody synced; whoever needs a change attribute that never repeats
 * across a crash combines it with ctime (as nfsd does with XFS's).
 */
static void touch_in(struct fstx *tx, struct fs_inode *ip, struct fs_result *res)
{
	struct fs *fs = ip->i_fs;
	ino_join(tx, ip);
	res_pre(res, 0, ip);
	struct timespec now, next = ip->i_d.mtime;
	fs_now(&now);
	next.tv_nsec += (long)FS_TIME_GRAN_NS;
	if (next.tv_nsec >= (long)NSEC_PER_SEC) {
		next.tv_sec++;
		next.tv_nsec -= (long)NSEC_PER_SEC;
	}
	if (!ts_before(&now, &next) || ts_before(&now, &ip->i_d.mtime)) {
		ino_touch(ip, true);
		ino_log(tx, ip, FS_ILOG_TIMESTAMP | FS_ILOG_CHANGE);
		counter_inc(&fs->f_stats.timestamp_txns);
	} else {
		ip->i_d.change++;
		ino_log(tx, ip, FS_ILOG_CHANGE);
	}
}

static int touch_write(struct fs_inode *ip, struct fs_result *res)
{
	struct fs *fs = ip->i_fs;
	struct fstx *tx;
	int err = fstx_begin(fs, 0, log_calc_res(fs->f_log, 1, FS_INODE_SIZE + 32), &tx);
	if (err)
		return err;
	/* times: the data of an overwrite is made durable by a flush the
	 * syncs ask for (rules 3-5), never by this transaction */
	fstx_unordered(tx);
	touch_in(tx, ip, res);
	res_post(res, 0, ip);
	return fstx_commit(tx, res);
}

/* Is [first, last] all written blocks (*written), all allocated ones,
 * written or unwritten (*mapped)? (I/O lock held) */
static int range_state(struct fs_inode *ip, uint64_t first, uint64_t last, bool *written,
		       bool *mapped)
{
	assert_rdlocked(&ip->i_iolock);
	*written = *mapped = true;
	for (uint64_t b = first; b <= last;) {
		struct bmap_ext e;
		bool hole;
		int err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			return err;
		if (hole) {
			*written = *mapped = false;
			return 0;
		}
		if (e.unwritten)
			*written = false;
		b = e.off + e.len;
	}
	return 0;
}

static int all_written(struct fs_inode *ip, uint64_t first, uint64_t last, bool *yes)
{
	bool mapped;
	return range_state(ip, first, last, yes, &mapped);
}

/*
 * What an in-place write does about the journal's images of file data
 * (docs/logged-data.md): with log, it logs the bytes it writes into tx
 * (a logged write); without, a block the journal may still replay an image
 * of is cancelled before it is written (data_item.h, D1), in tx if the
 * caller holds one (an ordered transaction that sets the datasync
 * sequence: a size change), else in a transaction of its own.
 */
struct wlog {
	struct fstx *tx;
	bool log;
	/* DEV_NOTHROTTLE for a synchronous write's data: a flush follows it
	 * at once, so waiting for flush-behind's limit first (dev.h, B2)
	 * would only make it wait for two */
	unsigned dflags;
};

/* Cancel the live images in [addr, addr+len) in a transaction of their
 * own: ordered (D2), and forced by the fsync and fdatasync that cover the
 * write (FS_ILOG_LDATA). No inode lock but the I/O lock held. */
static int cancel_live(struct fs_inode *ip, uint64_t addr, uint64_t len)
{
	assert_rdlocked(&ip->i_iolock);
	struct fs *fs = ip->i_fs;
	struct fstx *tx;
	int err = fstx_begin(fs, 0, log_calc_res(fs->f_log, 4, FS_INODE_SIZE + 256), &tx);
	if (err)
		return err;
	ino_join(tx, ip);
	uint64_t n = data_item_cancel(tx->tp, addr, len);
	if (n) {
		ino_log(tx, ip, FS_ILOG_LDATA);
		counter_inc(&fs->f_stats.logged_overwrites);
	}
	return fstx_commit(tx, NULL);
}

/* Write one extent's bytes in place at addr, and log or cancel (wl). */
static int put_data(struct fs_inode *ip, const struct wlog *wl, const uint8_t *buf, size_t len,
		    uint64_t addr)
{
	struct fs *fs = ip->i_fs;
	int err = 0;
	if (wl && wl->log) {
		data_item_log(wl->tx->tp, addr, buf, (uint32_t)len);
		counter_add(&fs->f_stats.logged_bytes, len);
	} else if (data_live(fs->f_log, addr, len)) {
		if (wl && wl->tx) {
			if (data_item_cancel(wl->tx->tp, addr, len))
				counter_inc(&fs->f_stats.logged_overwrites);
		} else {
			err = cancel_live(ip, addr, len);
		}
	}
	if (!err)
		err = dev_write(fs->f_ddev, buf, len, addr, wl ? wl->dflags : 0);
	/* after the device has the data, before the write returns: a read
	 * that starts after it does not use a window filled before (R2) */
	ino_data_changed(ip);
	return err;
}

/*
 * Write data to [first, last] blocks of the file that are all mapped:
 * written blocks keep what the write does not cover, unwritten ones get
 * zeros there. One device write per extent.
 */
static int write_mapped(struct fs_inode *ip, uint64_t off, const uint8_t *buf, size_t len,
			const struct wlog *wl)
{
	struct fs *fs = ip->i_fs;
	uint64_t first = off / FS_BLOCK_SIZE, last = (off + len - 1) / FS_BLOCK_SIZE;
	for (uint64_t b = first; b <= last;) {
		struct bmap_ext e;
		bool hole;
		int err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			return err;
		BUG_ON(hole);
		uint64_t eb = MIN(last + 1, e.off + e.len);
		uint64_t span_lo = b * FS_BLOCK_SIZE, span_hi = eb * FS_BLOCK_SIZE;
		uint64_t lo = MAX(span_lo, off), hi = MIN(span_hi, off + len);
		uint64_t addr = fs_daddr(e.start + (b - e.off));
		uint64_t whole_lo = e.unwritten ? span_lo : ALIGN_DOWN(lo, (uint64_t)SECTOR);
		uint64_t whole_hi = e.unwritten ? span_hi : ALIGN_UP(hi, (uint64_t)SECTOR);
		if (lo == whole_lo && hi == whole_hi) {
			/* the write covers what goes to the device: its own
			 * bytes, no copy (the device bounces a buffer that is
			 * not aligned enough for it) */
			err = put_data(ip, wl, buf + (lo - off), hi - lo, addr + (lo - span_lo));
		} else if (!e.unwritten) {
			/* written blocks: only the sectors the write touches */
			uint64_t slo = whole_lo, shi = whole_hi;
			uint8_t *tmp = xmalloc_aligned(4096, shi - slo);
			if (slo != lo) {
				err = dev_read(fs->f_ddev, tmp, SECTOR, addr + (slo - span_lo));
			}
			if (!err && shi != hi && (shi - SECTOR != slo || slo == lo))
				err = dev_read(fs->f_ddev, tmp + (shi - SECTOR - slo), SECTOR,
					       addr + (shi - SECTOR - span_lo));
			if (!err) {
				memcpy(tmp + (lo - slo), buf + (lo - off), hi - lo);
				err = put_data(ip, wl, tmp, shi - slo, addr + (slo - span_lo));
			}
			free(tmp);
		} else {
			/* unwritten: whole blocks, zeros where the write does not reach */
			uint8_t *tmp = xmalloc_aligned(4096, span_hi - span_lo);
			memset(tmp, 0, lo - span_lo);
			memcpy(tmp + (lo - span_lo), buf + (lo - off), hi - lo);
			memset(tmp + (hi - span_lo), 0, span_hi - hi);
			err = put_data(ip, wl, tmp, span_hi - span_lo, addr);
			free(tmp);
		}
		if (err)
			return err;
		b = eb;
	}
	return 0;
}

/*
 * Zero [from, to) of the file on the device where blocks are written (the
 * tail of an old EOF block before the file grows past it, the edges of a
 * punched range). I/O lock held exclusively.
 */
static int zero_written(struct fs_inode *ip, uint64_t from, uint64_t to, const struct wlog *wl)
{
	assert_wrlocked(&ip->i_iolock);
	if (from >= to)
		return 0;
	uint64_t first = from / FS_BLOCK_SIZE, last = (to - 1) / FS_BLOCK_SIZE;
	for (uint64_t b = first; b <= last;) {
		struct bmap_ext e;
		bool hole;
		int err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			return err;
		uint64_t eb = hole ? MIN(last + 1, b + e.len) : MIN(last + 1, e.off + e.len);
		if (!hole && !e.unwritten) {
			uint64_t lo = MAX(b * FS_BLOCK_SIZE, from),
				 hi = MIN(eb * FS_BLOCK_SIZE, to);
			uint8_t *z = xcalloc(1, hi - lo);
			err = write_mapped(ip, lo, z, hi - lo, wl);
			free(z);
			if (err)
				return err;
		}
		b = eb;
	}
	return 0;
}

/*
 * Allocate unwritten extents for the holes in [first, last] (and prealloc
 * blocks past last, as far as they are holes). A transaction allocates at
 * most ALLOC_EXTS_PER_TX extents, so that what it locks and logs stays
 * within its log reservation (fstx_begin's default) however fragmented the
 * free space is; a long range takes several transactions, each leaving the
 * file consistent (more of the range allocated, unwritten). res->csn is the
 * last one's.
 */
#define ALLOC_EXTS_PER_TX 4

/* One transaction's share of alloc_holes: from *bp up to last, at most
 * ALLOC_EXTS_PER_TX extents; *bp is where the next one starts. */
static int alloc_holes_tx(struct fstx *tx, struct fs_inode *ip, uint64_t *bp, uint64_t last,
			  uint64_t *got_blocks)
{
	int err = 0;
	unsigned exts = 0;
	uint64_t b = *bp;
	while (b <= last && !err && exts < ALLOC_EXTS_PER_TX) {
		struct bmap_ext e;
		bool hole;
		err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			break;
		uint64_t stop = last + 1;
		if (!hole) {
			b = e.off + e.len;
			continue;
		}
		uint64_t n = MIN(e.len, stop - b);
		/* near the block before, for contiguous files */
		uint64_t hint = fs_ino_block(ip->i_ino);
		struct bmap_ext pe;
		bool phole = true;
		if (b > 0 && !bmap_lookup(ip, b - 1, &pe, &phole) && !phole)
			hint = pe.start + (b - 1 - pe.off) + 1;
		while (n && !err && exts < ALLOC_EXTS_PER_TX) {
			uint64_t start, got;
			err = alloc_extent(tx, hint, MIN(n, (uint64_t)FS_EXT_MAXLEN), 1, &start,
					   &got);
			if (err)
				break;
			err = bmap_add(tx, ip, b, start, got, true);
			b += got;
			n -= got;
			*got_blocks += got;
			hint = start + got;
			exts++;
		}
	}
	*bp = b;
	return err;
}

static int alloc_holes(struct fs_inode *ip, uint64_t first, uint64_t last, uint64_t prealloc,
		       struct fs_result *res)
{
	assert_wrlocked(&ip->i_iolock);
	struct fs *fs = ip->i_fs;
	/* count the hole blocks first, to reserve them */
	uint64_t need = 0;
	for (uint64_t b = first; b <= last;) {
		struct bmap_ext e;
		bool hole;
		int err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			return err;
		uint64_t n = hole ? MIN(e.len, last + 1 - b) : MIN(e.off + e.len, last + 1) - b;
		if (hole)
			need += n;
		b += n;
	}
	if (!need)
		return 0;
	int err = 0;
	uint64_t b = first;
	while (!err && b <= last + prealloc) {
		struct fstx *tx;
		uint64_t blocks = need + prealloc + 4 * bmap_res(ip);
		err = fstx_begin(fs, blocks, 0, &tx);
		if (err == -ENOSPC && prealloc) {
			prealloc = 0;
			blocks = need + 4 * bmap_res(ip);
			err = fstx_begin(fs, blocks, 0, &tx);
		}
		if (err)
			return err;
		fstx_unordered(tx); /* unwritten blocks read as zeros */
		ino_join(tx, ip);
		res_pre(res, 0, ip);
		uint64_t got_blocks = 0;
		err = alloc_holes_tx(tx, ip, &b, last + prealloc, &got_blocks);
		if (!err && !got_blocks) {
			/* the rest of the range was allocated already */
			fstx_cancel(tx);
			break;
		}
		need -= MIN(need, got_blocks);
		ino_log(tx, ip, FS_ILOG_EXTENTS | FS_ILOG_CORE);
		res_post(res, 0, ip);
		int cerr = fstx_commit(tx, res);
		if (!err)
			err = cerr;
	}
	return err;
}

int file_alloc_holes(struct fs_inode *ip, uint64_t first, uint64_t last, struct fs_result *res)
{
	return alloc_holes(ip, first, last, 0, res);
}

/* Log space a logged write of len bytes reserves: the default (a
 * conversion's extent and inode changes) and its data, block-padded, with
 * the old EOF block it may zero. */
static uint64_t ldata_res(struct fs *fs, size_t len)
{
	uint64_t blocks = ALIGN_UP((uint64_t)len, (uint64_t)FS_BLOCK_SIZE) / FS_BLOCK_SIZE + 2;
	return log_calc_res(fs->f_log, 24, 16 * FS_BLOCK_SIZE) +
	       log_calc_res(fs->f_log, (unsigned)blocks, blocks * FS_BLOCK_SIZE);
}

/*
 * Whether a synchronous write of len bytes goes through the journal
 * (docs/logged-data.md): small enough, the only write of the file in
 * flight, no client holds a layout it could write the blocks through (D3:
 * map_blocks cancels before it hands blocks out), and the log has room to
 * spare, so that logged data never makes metadata wait for log space.
 *
 * The only write: a logged write holds the I/O lock exclusively and
 * writes its bytes twice, which a lone writer does not feel (no flush of
 * the data device is worth more) but a client streaming a file with
 * several writes in flight does: they queue behind each other on the
 * lock, and the journal carries the stream a second time. Unlogged, they
 * overlap under the shared lock and share one flush (log.h, G6).
 *
 * Not a stream's: a write of more than LDATA_STREAM_MIN that starts within
 * LDATA_STREAM_SPAN times its length of where the file's previous
 * synchronous write ended continues a stream (its calls arrive in any
 * order), and a stream's bytes cost more twice than its flushes, which
 * its writes and every other file's share: 16 streams of 64 KiB FILE_SYNC
 * WRITEs moved 160-190 MiB/s logged and 300-410 MiB/s in place, at half
 * the server's CPU per GiB. The small writes of a database or of many
 * small files, and a lone large write, are still logged.
 */
#define LDATA_STREAM_MIN  (16u * 1024)
#define LDATA_STREAM_SPAN 8u
static bool ldata_ok(struct fs_inode *ip, uint64_t off, size_t len)
{
	struct fs *fs = ip->i_fs;
	uint64_t prev = atomic_exchange_explicit(&ip->i_sync_next, off + len,
						 memory_order_relaxed);
	if (!len || len > fs->f_ldata_max)
		return false;
	if (atomic_load(&ip->i_writes) > 1) {
		counter_inc(&fs->f_stats.logged_concurrent);
		return false;
	}
	uint64_t span = (uint64_t)LDATA_STREAM_SPAN * len;
	if (len > LDATA_STREAM_MIN && prev && off + span >= prev && off <= prev + span) {
		counter_inc(&fs->f_stats.logged_streaming);
		return false;
	}
	bool rw = false;
	mutex_lock(&fs->f_layout_lock);
	for (struct fs_layout *l = ip->i_layouts; l && !rw; l = l->next)
		rw = l->rw;
	mutex_unlock(&fs->f_layout_lock);
	uint64_t res = ldata_res(fs, len);
	return !rw && res <= log_size_bytes(fs->f_log) / 8 && log_space_ample(fs->f_log, res);
}

/*
 * The second transaction of a write into unwritten blocks (tx, begun by
 * the caller, which wrote or logged the data): convert [off, off+len) to
 * written, grow the size over it, touch the times and commit, with fields
 * (FS_ILOG_LDATA for a logged write) logged too. err is an earlier error
 * of the caller's: the transaction still commits what it holds.
 */
static int convert_commit(struct fstx *tx, struct fs_inode *ip, uint64_t off, size_t len,
			  unsigned fields, int err, struct fs_result *res)
{
	uint64_t first = off / FS_BLOCK_SIZE, last = (off + len - 1) / FS_BLOCK_SIZE;
	ino_join(tx, ip);
	res_pre(res, 0, ip);
	if (!err)
		err = bmap_set_written(tx, ip, first, last - first + 1, true);
	fields |= FS_ILOG_EXTENTS;
	if (!err && off + len > ip->i_d.size) {
		ip->i_d.size = off + len;
		fields |= FS_ILOG_CORE;
	}
	ino_touch(ip, true);
	ino_log(tx, ip, fields | FS_ILOG_TIMESTAMP | FS_ILOG_CHANGE);
	res_post(res, 0, ip);
	int cerr = fstx_commit(tx, res);
	return err ? err : cerr;
}

/*
 * A write of whole blocks that are all allocated inside the file, some of
 * them unwritten (fallocated or zeroed space, an appender's preallocation
 * that a truncate brought inside the file): the data goes to the device under
 * the shared I/O lock, which the caller holds, so that writers of
 * different ranges of one file overlap their device writes as they do for
 * overwrites; only the conversion takes the lock exclusively. Kernel XFS
 * does the same (direct I/O under the shared lock, unwritten extents
 * converted at completion): eight threads converting their own parts of
 * one fallocated file spent most of their time queued behind each other's
 * data writes when the whole write was exclusive (bench/sync_loop.c,
 * workload d).
 *
 * Between the shared lock and the exclusive one, another writer may
 * write and convert some of the blocks (the same device blocks: its data
 * came later and stays; converting them again changes nothing), zero them
 * (the blocks become unwritten again and this write's conversion shows its
 * data, as if it had come after the zeroing), or free them (a truncate or
 * a punch; the blocks may then belong to another file). i_unmap_gen tells
 * the last apart: if it moved, or the file is no longer as long, nothing
 * is converted and *done says so: the caller redoes the whole write on the
 * general path with the exclusive lock it now holds. Whole blocks only:
 * two writers of different bytes of one unwritten block would each write
 * the block with zeros around their bytes.
 *
 * The ordering is the general path's: the data is written before the
 * conversion's transaction exists, an ordered one, whose checkpoint the
 * journal writes only after a flush of the data device (log.h, G7), so a
 * crash never shows the converted blocks without the data. Called with the
 * I/O lock held shared; returns with it held exclusively, *done false when
 * nothing was converted.
 */
static int write_unwritten(struct fs_inode *ip, uint64_t off, const void *buf, size_t len,
			   const struct wlog *wl, struct fs_result *res, bool *done)
{
	struct fs *fs = ip->i_fs;
	assert_rdlocked(&ip->i_iolock);
	*done = false;
	uint64_t gen = ip->i_unmap_gen;
	int err = write_mapped(ip, off, buf, len, wl);
	rwlock_unlock(&ip->i_iolock);
	rwlock_wrlock(&ip->i_iolock);
	if (err)
		return err;
	mutex_lock(&ip->i_ilock);
	bool inside = off + len <= ip->i_d.size;
	mutex_unlock(&ip->i_ilock);
	if (ip->i_unmap_gen != gen || !inside) {
		counter_inc(&fs->f_stats.shared_conversion_redos);
		return 0;
	}
	struct fstx *tx;
	err = fstx_begin(fs, 4 * bmap_res(ip), 0, &tx);
	if (err)
		return err;
	err = convert_commit(tx, ip, off, len, 0, 0, res);
	*done = !err;
	if (*done)
		counter_inc(&fs->f_stats.shared_conversions);
	return err;
}

/* fs_write and fs_write_sync, without clearing res (fs_copy_range writes in
 * pieces): with WC_LOG, the data goes into the journal too (and the I/O
 * lock is taken exclusively: D1 needs no other writer of the file between
 * the images and their blocks); with WC_SYNC, its device writes never wait
 * for flush-behind (struct wlog). */
#define WC_SYNC 1u
#define WC_LOG	2u
static int write_common(struct fs_inode *ip, uint64_t off, const void *buf, size_t len,
			unsigned how, struct fs_result *res)
{
	struct fs *fs = ip->i_fs;
	bool log = how & WC_LOG;
	const struct wlog plain = {.dflags = (how & WC_SYNC) ? DEV_NOTHROTTLE : 0};
	if (fs_is_shutdown(fs))
		return -EIO;
	if (!len)
		return 0;
	if (off + len < off || off + len > FS_MAX_FILE_SIZE)
		return -EFBIG;
	uint64_t first = off / FS_BLOCK_SIZE, last = (off + len - 1) / FS_BLOCK_SIZE;
	bool aligned = !(off % SECTOR) && !(len % SECTOR);
	int err;

	/* the common cases first, under the shared I/O lock: an aligned
	 * overwrite inside the file, and whole blocks allocated inside it */
	bool excl = false;
	if (aligned && !log) {
		rwlock_rdlock(&ip->i_iolock);
		mutex_lock(&ip->i_ilock);
		err = check_reg(ip);
		bool inside = off + len <= ip->i_d.size;
		mutex_unlock(&ip->i_ilock);
		bool written = false, mapped = false;
		if (!err && inside)
			err = range_state(ip, first, last, &written, &mapped);
		if (!err && inside && written) {
			err = write_mapped(ip, off, buf, len, &plain);
			if (!err)
				err = touch_write(ip, res);
			rwlock_unlock(&ip->i_iolock);
			goto out;
		}
		if (!err && inside && mapped && !(off % FS_BLOCK_SIZE) && !(len % FS_BLOCK_SIZE)) {
			bool done;
			err = write_unwritten(ip, off, buf, len, &plain, res, &done);
			excl = true;
			if (err || done)
				goto out_unlock;
			/* blocks left the map meanwhile: the general path redoes
			 * the write */
		} else {
			rwlock_unlock(&ip->i_iolock);
			if (err)
				return err;
		}
	}

	if (!excl)
		rwlock_wrlock(&ip->i_iolock);
	mutex_lock(&ip->i_ilock);
	err = check_reg(ip);
	uint64_t size = ip->i_d.size;
	mutex_unlock(&ip->i_ilock);
	if (err)
		goto out_unlock;
	bool written = false;
	if (off + len <= size) {
		err = all_written(ip, first, last, &written);
		if (err)
			goto out_unlock;
	}
	struct fstx *tx;
	if (written && log) {
		/* a logged overwrite: the data and the times in one
		 * transaction that needs no flush (G7) */
		err = fstx_begin(fs, 0, ldata_res(fs, len), &tx);
		if (err)
			goto out_unlock;
		err = write_mapped(ip, off, buf, len,
				   &(struct wlog){.tx = tx, .log = true, .dflags = plain.dflags});
		touch_in(tx, ip, res);
		ino_log(tx, ip, FS_ILOG_LDATA);
		fstx_unordered(tx);
		res_post(res, 0, ip);
		int cerr = fstx_commit(tx, res);
		if (!err)
			err = cerr;
		goto out_unlock;
	}
	if (written) {
		/* unaligned overwrite: exclusive so that sector updates do not race */
		err = write_mapped(ip, off, buf, len, &plain);
		if (!err)
			err = touch_write(ip, res);
		goto out_unlock;
	}

	/* the old EOF block's tail becomes part of the file: zero it (a
	 * logged write logs the zeros with its data, below) */
	bool zero_eof = off > size && size % FS_BLOCK_SIZE;
	uint64_t zero_end = MIN(off, ALIGN_UP(size, (uint64_t)FS_BLOCK_SIZE));
	if (zero_eof && !log) {
		err = zero_written(ip, size, zero_end, &plain);
		if (err)
			goto out_unlock;
	}
	/* speculative preallocation for appending writers, up to 4 MiB */
	uint64_t prealloc = 0;
	if (off + len > size && off <= ALIGN_UP(size, (uint64_t)FS_BLOCK_SIZE)) {
		uint64_t nb = last - first + 1;
		prealloc = MIN(MAX(ip->i_prealloc * 2, nb), (uint64_t)1024);
		ip->i_prealloc = prealloc;
	}
	err = alloc_holes(ip, first, last, prealloc, res);
	if (err)
		goto out_unlock;
	if (prealloc)
		eof_note(ip);
	if (log) {
		/* the conversion's transaction first: it takes the data */
		err = fstx_begin(fs, 4 * bmap_res(ip), ldata_res(fs, len), &tx);
		if (err)
			goto out_unlock;
		struct wlog wl = {.tx = tx, .log = true, .dflags = plain.dflags};
		if (zero_eof)
			err = zero_written(ip, size, zero_end, &wl);
		if (!err)
			err = write_mapped(ip, off, buf, len, &wl);
		/* what it points at is in the journal itself (G7) */
		fstx_unordered(tx);
	} else {
		err = write_mapped(ip, off, buf, len, &plain);
		if (err)
			goto out_unlock;
		err = fstx_begin(fs, 4 * bmap_res(ip), 0, &tx);
		if (err)
			goto out_unlock;
	}
	err = convert_commit(tx, ip, off, len, log ? FS_ILOG_LDATA : 0, err, res);
out_unlock:
	rwlock_unlock(&ip->i_iolock);
out:
	if (!err) {
		counter_inc(&fs->f_stats.writes);
		counter_add(&fs->f_stats.write_bytes, len);
	}
	return err;
}

int fs_write(struct fs_inode *ip, uint64_t off, const void *buf, size_t len, struct fs_result *res)
{
	res_init(res);
	atomic_fetch_add(&ip->i_writes, 1);
	int err = write_common(ip, off, buf, len, 0, res);
	atomic_fetch_sub(&ip->i_writes, 1);
	return err;
}

int fs_write_sync(struct fs_inode *ip, uint64_t off, const void *buf, size_t len,
		  struct fs_result *res, bool *data_logged)
{
	res_init(res);
	atomic_fetch_add(&ip->i_writes, 1);
	bool log = ldata_ok(ip, off, len);
	int err = write_common(ip, off, buf, len, WC_SYNC | (log ? WC_LOG : 0), res);
	atomic_fetch_sub(&ip->i_writes, 1);
	*data_logged = log && !err;
	if (*data_logged)
		counter_inc(&ip->i_fs->f_stats.logged_writes);
	return err;
}

uint64_t fs_sync_seq(struct fs_inode *ip, bool datasync)
{
	mutex_lock(&ip->i_item.ii_lock);
	uint64_t seq = datasync ? ip->i_item.ii_datasync_seq : ip->i_item.ii_commit_seq;
	mutex_unlock(&ip->i_item.ii_lock);
	return seq;
}

int fs_fsync(struct fs_inode *ip, bool datasync, bool *log_written)
{
	struct fs *fs = ip->i_fs;
	counter_inc(datasync ? &fs->f_stats.fdatasyncs : &fs->f_stats.fsyncs);
	if (log_written)
		*log_written = false;
	if (fs_is_shutdown(fs))
		return -EIO;
	/* rule 3: the sequence, read under the item's own lock; no inode lock
	 * is held across the force */
	uint64_t seq = fs_sync_seq(ip, datasync);
	bool flushed = false, wrote = false;
	int err = 0;
	if (seq) {
		assert_none_held(LOCK_RANK_FS_IOLOCK, LOCK_RANK_FS_ILOCK);
		wrote = !log_seq_durable(fs->f_log, seq);
		err = log_force_seq(fs->f_log, seq, true, &flushed);
		if (err)
			return err;
		if (wrote)
			counter_inc(&fs->f_stats.fsync_log_writes);
	}
	/* rule 5: unless a flush of the data device started after this call
	 * (the checkpoint's own or anyone's, G6), flush it */
	if (!flushed) {
		err = dev_flush(fs->f_ddev);
		counter_inc(&fs->f_stats.fsync_flushes);
	}
	if (log_written)
		*log_written = wrote;
	return err;
}

/* Set the size (I/O lock held exclusively): zero the new EOF block's tail,
 * log the size, then free the blocks past it a batch per transaction. */
int file_truncate(struct fs_inode *ip, uint64_t size, struct fstx *tx_in, struct fs_result *res)
{
	assert_wrlocked(&ip->i_iolock);
	if (tx_in)
		assert_locked(&ip->i_ilock); /* joined to it */
	struct fs *fs = ip->i_fs;
	uint64_t old = ip->i_d.size;
	int err = 0;
	/* a live logged block is cancelled in tx_in, which holds the inode
	 * locked (its size change keeps it ordered and forced by fdatasync) */
	struct wlog wl = {.tx = tx_in};
	if (size < old && size % FS_BLOCK_SIZE)
		err = zero_written(ip, size, MIN(old, ALIGN_UP(size, (uint64_t)FS_BLOCK_SIZE)),
				   &wl);
	else if (size > old && old % FS_BLOCK_SIZE)
		err = zero_written(ip, old, MIN(size, ALIGN_UP(old, (uint64_t)FS_BLOCK_SIZE)), &wl);
	if (err) {
		if (tx_in)
			fstx_cancel(tx_in);
		return err;
	}
	struct fstx *tx = tx_in;
	if (!tx) {
		err = fstx_begin(fs, 0, 0, &tx);
		if (err)
			return err;
		ino_join(tx, ip);
		res_pre(res, 0, ip);
	}
	ip->i_d.size = size;
	ino_touch(ip, true);
	ino_log(tx, ip, FS_ILOG_CORE);
	uint64_t from = ALIGN_UP(size, (uint64_t)FS_BLOCK_SIZE) / FS_BLOCK_SIZE, next = from;
	if (size < old)
		err = bmap_punch(tx, ip, from, UINT64_MAX - from, &next);
	res_post(res, 0, ip);
	int cerr = fstx_commit(tx, res);
	if (!err)
		err = cerr;
	/* the rest of the blocks past EOF, in more transactions */
	while (!err && size < old && next != UINT64_MAX) {
		err = fstx_begin(fs, 0, 0, &tx);
		if (err)
			break;
		ino_join(tx, ip);
		res_pre(res, 0, ip);
		err = bmap_punch(tx, ip, next, UINT64_MAX - next, &next);
		ino_log(tx, ip, FS_ILOG_EXTENTS | FS_ILOG_CORE);
		res_post(res, 0, ip);
		cerr = fstx_commit(tx, res);
		if (!err)
			err = cerr;
	}
	return err;
}

int fs_fallocate(struct fs_inode *ip, int mode, uint64_t off, uint64_t len, struct fs_result *res)
{
	struct fs *fs = ip->i_fs;
	bool keep = mode & FS_FALLOC_KEEP_SIZE;
	mode &= ~FS_FALLOC_KEEP_SIZE;
	res_init(res);
	if (!len || off + len < off)
		return -EINVAL;
	if (off + len > FS_MAX_FILE_SIZE)
		return -EFBIG;
	if (fs_is_shutdown(fs))
		return -EIO;
	rwlock_wrlock(&ip->i_iolock);
	mutex_lock(&ip->i_ilock);
	int err = check_reg(ip);
	uint64_t size = ip->i_d.size;
	mutex_unlock(&ip->i_ilock);
	if (err)
		goto out;
	uint64_t end = off + len;
	bool touched = false; /* a transaction below moved the times */
	uint64_t bfirst = ALIGN_UP(off, (uint64_t)FS_BLOCK_SIZE) / FS_BLOCK_SIZE;
	uint64_t blast = end / FS_BLOCK_SIZE; /* exclusive */

	if (mode == FS_FALLOC_ALLOC) {
		if (off > size && size % FS_BLOCK_SIZE)
			err = zero_written(ip, size,
					   MIN(off, ALIGN_UP(size, (uint64_t)FS_BLOCK_SIZE)), NULL);
		if (!err)
			err = alloc_holes(ip, off / FS_BLOCK_SIZE, (end - 1) / FS_BLOCK_SIZE, 0,
					  res);
	} else if (mode == FS_FALLOC_PUNCH || mode == FS_FALLOC_ZERO) {
		uint64_t pend = MIN(end, MAX(size, end));
		/* partial blocks at the edges: zeros written in place */
		err = zero_written(ip, off, MIN(pend, bfirst * FS_BLOCK_SIZE), NULL);
		if (!err && blast * FS_BLOCK_SIZE > off && blast >= bfirst)
			err = zero_written(ip, MAX(blast * FS_BLOCK_SIZE, off), pend, NULL);
		uint64_t next = bfirst;
		while (!err && mode == FS_FALLOC_PUNCH && next < blast) {
			struct fstx *tx;
			err = fstx_begin(fs, 0, 0, &tx);
			if (err)
				break;
			ino_join(tx, ip);
			res_pre(res, 0, ip);
			err = bmap_punch(tx, ip, next, blast - next, &next);
			ino_touch(ip, true);
			touched = true;
			ino_log(tx, ip, FS_ILOG_EXTENTS | FS_ILOG_CORE);
			res_post(res, 0, ip);
			int cerr = fstx_commit(tx, res);
			if (!err)
				err = cerr;
		}
		if (!err && mode == FS_FALLOC_ZERO && blast > bfirst) {
			/* whole blocks become unwritten; holes get unwritten blocks */
			err = alloc_holes(ip, bfirst, blast - 1, 0, res);
			if (!err) {
				struct fstx *tx;
				err = fstx_begin(fs, 4 * bmap_res(ip), 0, &tx);
				if (!err) {
					ino_join(tx, ip);
					res_pre(res, 0, ip);
					err = bmap_set_written(tx, ip, bfirst, blast - bfirst,
							       false);
					ino_touch(ip, true);
					touched = true;
					ino_log(tx, ip, FS_ILOG_EXTENTS);
					res_post(res, 0, ip);
					int cerr = fstx_commit(tx, res);
					if (!err)
						err = cerr;
				}
			}
		}
		if (!err && mode == FS_FALLOC_ZERO && end > size && bfirst > off / FS_BLOCK_SIZE) {
			/* the partial first block past EOF must exist for the size */
			err = alloc_holes(ip, off / FS_BLOCK_SIZE, off / FS_BLOCK_SIZE, 0, res);
		}
		if (mode == FS_FALLOC_PUNCH)
			keep = true;
	} else {
		err = -EOPNOTSUPP;
	}
	if (!err && (mode == FS_FALLOC_PUNCH || mode == FS_FALLOC_ZERO) && !touched &&
	    (keep || end <= size)) {
		/* only zeros written inside a block (no transaction above): the
		 * data still changed, so the times and the change attribute move */
		err = touch_txn(ip, true, res);
	} else if (!err && !keep && end > size) {
		struct fstx *tx;
		err = fstx_begin(fs, 0, 0, &tx);
		if (!err) {
			ino_join(tx, ip);
			res_pre(res, 0, ip);
			ip->i_d.size = end;
			ino_touch(ip, true);
			ino_log(tx, ip, FS_ILOG_CORE);
			res_post(res, 0, ip);
			err = fstx_commit(tx, res);
		}
	} else if (!err && mode == FS_FALLOC_ALLOC && end > size) {
		/* blocks asked for past EOF: not speculative, never trimmed */
		struct fstx *tx;
		err = fstx_begin(fs, 0, 0, &tx);
		if (!err) {
			ino_join(tx, ip);
			res_pre(res, 0, ip);
			ip->i_d.flags |= FS_DIF_PREALLOC;
			ino_touch(ip, false);
			ino_log(tx, ip, FS_ILOG_CORE);
			res_post(res, 0, ip);
			err = fstx_commit(tx, res);
		}
	} else if (!err && mode == FS_FALLOC_ALLOC) {
		err = touch_txn(ip, false, res);
	}
out:
	rwlock_unlock(&ip->i_iolock);
	return err;
}

int fs_seek(struct fs_inode *ip, uint64_t off, int what, uint64_t *out)
{
	if (fs_is_shutdown(ip->i_fs))
		return -EIO;
	rwlock_rdlock(&ip->i_iolock);
	mutex_lock(&ip->i_ilock);
	int err = check_reg(ip);
	uint64_t size = ip->i_d.size;
	mutex_unlock(&ip->i_ilock);
	if (err)
		goto out;
	if (off >= size) {
		err = -ENXIO;
		goto out;
	}
	/* unwritten extents read as zeros: they count as holes */
	for (uint64_t b = off / FS_BLOCK_SIZE; b * FS_BLOCK_SIZE < size;) {
		struct bmap_ext e;
		bool hole;
		err = bmap_lookup(ip, b, &e, &hole);
		if (err)
			goto out;
		bool data = !hole && !e.unwritten;
		if (data == (what == FS_SEEK_DATA)) {
			*out = MAX(off, b * FS_BLOCK_SIZE);
			goto out;
		}
		uint64_t nb = hole ? b + e.len : e.off + e.len;
		if (nb <= b || nb > UINT64_MAX / FS_BLOCK_SIZE)
			break;
		b = nb;
	}
	if (what == FS_SEEK_HOLE)
		*out = size; /* the virtual hole at EOF */
	else
		err = -ENXIO;
out:
	rwlock_unlock(&ip->i_iolock);
	return err;
}

int fs_copy_range(struct fs_inode *src, uint64_t soff, struct fs_inode *dst, uint64_t doff,
		  uint64_t len, uint64_t *copied, struct fs_result *res)
{
	*copied = 0;
	res_init(res);
	size_t chunk = 1 << 20;
	uint8_t *buf = xmalloc(chunk);
	int err = 0;
	while (len) {
		size_t n = (size_t)MIN(len, (uint64_t)chunk), got;
		bool eof;
		err = fs_read(src, soff, buf, n, &got, &eof);
		if (err || !got)
			break;
		err = write_common(dst, doff, buf, got, 0, res);
		if (err)
			break;
		*copied += got;
		soff += got;
		doff += got;
		len -= got;
	}
	free(buf);
	return err;
}
