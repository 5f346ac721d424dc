/*
 * readahead.c - a few windows of file data for sequential readers.
 *
 * Without them every READ reads the device: a client streaming a file in
 * 64 KiB READs costs one device I/O (and one doorbell) per 64 KiB. So a
 * small read that follows the previous one reads FS_RA_BYTES of the file
 * into a window, and the reads after it copy from there. The engine keeps
 * no other file data; the windows are made stale, never updated.
 *
 *   R1 A window holds [rw_off, rw_off + rw_len) of the inode numbered
 *      rw_ino as it was under data generation rw_gen. It serves a read
 *      only when it is ready, covers the whole read, and (rw_ino, rw_gen)
 *      is the file's (i_ino, i_data_gen) as the read sampled it.
 *      Generations come from one counter per mount (f_data_gen), so a
 *      window of an earlier instance of the number (freed and reused,
 *      evicted and read back) never matches.
 *   R2 Every change of the file's data or block map gives the inode a
 *      fresh generation (ino_data_changed) after the change is visible to
 *      a read and before the call that made it returns: put_data after its
 *      device write (every in-place write, file.c), ino_log of the extent
 *      map or the core (truncate, punch, zero range, allocation,
 *      conversions, LAYOUTCOMMIT, copies; those change the map with the
 *      I/O lock held exclusively, so no read is in between), and the
 *      layouts (R4). A read that starts after a change returned samples a
 *      newer generation than every window filled before it: a READ after
 *      a WRITE reply sees the write.
 *   R3 A fill samples the generation before its first device read. A write
 *      that lands during the fill moves the generation after the sample,
 *      so the window is stale from that write's return on, whatever part
 *      of it the fill read: a window's data is never older than its
 *      generation says.
 *   R4 No window serves or is filled for a file with a layout: a pNFS
 *      client writes the device directly, and an overwrite it commits logs
 *      only timestamps. A read samples the generation, then looks at
 *      i_has_layouts; a grant or a return sets that, then moves the
 *      generation (layouts.c, layouts_changed). So a window filled by a read
 *      that found no layout either started before the grant, or after the
 *      layouts went (and the generation moves once more then).
 *   R5 Only sequential reads of less than FS_RA_BYTES use the windows: one
 *      that starts within RA_INFLIGHT * len of i_ra_next, where the file's
 *      last read ended (the reads a client keeps in flight arrive in any
 *      order). Others, and reads of FS_RA_BYTES or more, go to the device
 *      as before. Only a read at offset 0 or the second sequential read in
 *      a row fills a window. Both bounds keep a random reader of a small
 *      file, whose reads fall near the last one more often, from reading
 *      a whole window for its reads after each write.
 *   R6 Memory: fs_mount_opts.readahead_windows windows of FS_RA_BYTES
 *      per mount (64 by default: 16 kept 16 streams of 64 KiB READs from
 *      prefetching, each evicting its own window half read, at 450-550
 *      MiB/s against 600-610 with 48), their buffers allocated at their
 *      first fill and freed at unmount.
 *   R8 Prefetch: a read served from the second half of a full window,
 *      when the file goes on past it, fills the next FS_RA_BYTES itself
 *      after copying its own data, unless a window of the file holds or
 *      fills them already: the reads in flight go on from the window they
 *      hit while the device reads the next (only this reply waits for it),
 *      so a stream does not stop at every window's end. It takes only a
 *      window its file has read past or an empty one, never another
 *      reader's: with as many streams as windows, each keeps one, as
 *      without prefetch (16 streams taking the least recently used
 *      evicted each other's and fell to a fifth). Its generation is the
 *      one its read sampled (R3).
 *   R7 Locks: the pool lock (fs.readahead, rank 287) is taken under the
 *      file's shared I/O lock, nothing is taken under it, and it is never
 *      held across device I/O or a copy. A reader copies out holding a
 *      user count (rw_users), which keeps the window from being refilled;
 *      a filler owns its window (RA_FILLING) and its buffer until it marks
 *      it ready. A read that finds a window of its (ino, gen) filling that
 *      will cover it waits on f_ra_cond: the filler holds only the shared
 *      I/O lock of the same file, which it already has, so the wait ends
 *      whatever writers queue for that lock.
 *
 * Counters: fs.ra_fills (windows filled), fs.ra_prefetches (of those, by
 * R8), fs.ra_hits (reads served from a
 * window filled by another read), fs.ra_stale (a window of the file
 * covering the read found with an older generation).
 */
#include <stdlib.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "fs/fs_priv.h"

/* Reads of one stream a client keeps in flight, which arrive in any
 * order (R5). */
#define RA_INFLIGHT 8u

enum ra_state { RA_EMPTY, RA_FILLING, RA_READY };

struct fs_ra_window {
	uint64_t rw_ino, rw_gen;
	uint64_t rw_off, rw_len;
	enum ra_state rw_state;
	unsigned rw_users; /* readers copying out */
	uint64_t rw_used;  /* f_ra_tick at its last use */
	uint8_t *rw_buf;   /* FS_RA_BYTES, or NULL before the first fill */
};

static struct lock_class ra_lock_class = LOCK_CLASS(FS_READAHEAD);

void ra_init(struct fs *fs, bool off, unsigned windows)
{
	mutex_init(&fs->f_ra_lock, &ra_lock_class);
	cond_init(&fs->f_ra_cond);
	fs->f_ra_n = windows ? MIN(windows, FS_RA_WINDOWS_MAX) : FS_RA_WINDOWS_DEFAULT;
	fs->f_ra = xcalloc(fs->f_ra_n, sizeof(*fs->f_ra));
	fs->f_ra_off = off;
}

void ra_destroy(struct fs *fs)
{
	for (unsigned i = 0; i < fs->f_ra_n; i++) {
		BUG_ON(fs->f_ra[i].rw_users || fs->f_ra[i].rw_state == RA_FILLING);
		iobuf_free(fs->f_ra[i].rw_buf);
	}
	free(fs->f_ra);
	fs->f_ra = NULL;
	cond_destroy(&fs->f_ra_cond);
	mutex_destroy(&fs->f_ra_lock);
}

/* Does [off, off+len) follow the file's last read (R5)? *fill: may it
 * fill a window, being the second sequential read in a row or at 0.
 * Records where it ends. */
static bool sequential(struct fs_inode *ip, uint64_t off, size_t len, bool *fill)
{
	uint64_t next = atomic_exchange_explicit(&ip->i_ra_next, off + len, memory_order_relaxed);
	uint64_t slack = (uint64_t)RA_INFLIGHT * len;
	bool seq = off + slack >= next && off <= next + slack;
	bool prev = atomic_exchange_explicit(&ip->i_ra_seq, seq, memory_order_relaxed);
	*fill = seq && (prev || off == 0);
	return seq;
}

static bool covers(const struct fs_ra_window *w, uint64_t off, size_t len)
{
	return w->rw_off <= off && off + len <= w->rw_off + w->rw_len;
}

/* What a fill for [off, off+len) reads: the aligned FS_RA_BYTES around it
 * when the read lies inside them (reads that arrive out of order find the
 * same window), else FS_RA_BYTES from off; never past size. */
static void fill_range(uint64_t off, size_t len, uint64_t size, uint64_t *woff, uint64_t *wlen)
{
	uint64_t a = ALIGN_DOWN(off, (uint64_t)FS_RA_BYTES);
	*woff = off + len <= a + FS_RA_BYTES ? a : off;
	*wlen = MIN((uint64_t)FS_RA_BYTES, size - *woff);
}

/* The least recently used window no reader holds or fills, or NULL.
 * Under the pool lock. */
static struct fs_ra_window *pick_victim(struct fs *fs)
{
	struct fs_ra_window *victim = NULL;
	for (unsigned i = 0; i < fs->f_ra_n; i++) {
		struct fs_ra_window *w = &fs->f_ra[i];
		if (w->rw_state == RA_FILLING || w->rw_users)
			continue;
		if (!victim || (victim->rw_state != RA_EMPTY &&
				(w->rw_state == RA_EMPTY || w->rw_used < victim->rw_used)))
			victim = w;
	}
	return victim;
}

/* Fill victim (marked RA_FILLING by the caller, under the pool lock, which
 * it releases) with [woff, woff + wlen) of the file; copy [off, off + len)
 * of it to out if out is set. */
static int fill(struct fs_inode *ip, struct fs_ra_window *victim, uint64_t woff, uint64_t wlen,
		uint64_t off, uint8_t *out, size_t len)
{
	struct fs *fs = ip->i_fs;
	uint8_t *buf = victim->rw_buf;
	mutex_unlock(&fs->f_ra_lock);
	/* the window is this thread's until it is marked ready (R7) */
	if (!buf)
		buf = iobuf_alloc(FS_RA_BYTES);
	int e = file_read_range(ip, woff, buf, (size_t)wlen);
	if (!e && out)
		memcpy(out, buf + (off - woff), len);
	mutex_lock(&fs->f_ra_lock);
	victim->rw_buf = buf;
	victim->rw_state = e ? RA_EMPTY : RA_READY;
	cond_broadcast(&fs->f_ra_cond);
	mutex_unlock(&fs->f_ra_lock);
	if (!e)
		counter_inc(&fs->f_stats.ra_fills);
	return e;
}

/* Claim victim for [woff, woff + wlen) of the file under generation gen. */
static void claim(struct fs *fs, struct fs_ra_window *victim, struct fs_inode *ip, uint64_t gen,
		  uint64_t woff, uint64_t wlen)
{
	victim->rw_ino = ip->i_ino;
	victim->rw_gen = gen; /* sampled before the device read (R3) */
	victim->rw_off = woff;
	victim->rw_len = wlen;
	victim->rw_state = RA_FILLING;
	victim->rw_used = ++fs->f_ra_tick;
}

/*
 * A read served from window hit (of generation gen) in its second half,
 * the file going on past it: fill the next FS_RA_BYTES now, unless a
 * window of the file holds or fills them already (R8). The reads in flight
 * go on being served from hit meanwhile; only this one's reply waits.
 */
static void prefetch(struct fs_inode *ip, const struct fs_ra_window *hit, uint64_t hoff,
		     uint64_t hlen, uint64_t off, uint64_t gen, uint64_t size)
{
	struct fs *fs = ip->i_fs;
	uint64_t next = hoff + hlen;
	if (hlen != FS_RA_BYTES || off - hoff < hlen / 2 || next >= size)
		return;
	mutex_lock(&fs->f_ra_lock);
	for (unsigned i = 0; i < fs->f_ra_n; i++) {
		const struct fs_ra_window *w = &fs->f_ra[i];
		if (w->rw_state != RA_EMPTY && w->rw_ino == ip->i_ino && w->rw_gen == gen &&
		    w->rw_off == next) {
			mutex_unlock(&fs->f_ra_lock);
			return;
		}
	}
	/* a window this stream has read past, else an empty one: never one
	 * another reader may still want (with as many streams as windows,
	 * taking the least recently used made them evict each other's) */
	struct fs_ra_window *victim = NULL;
	for (unsigned i = 0; i < fs->f_ra_n && !victim; i++) {
		struct fs_ra_window *w = &fs->f_ra[i];
		if (w != hit && w->rw_state == RA_READY && !w->rw_users && w->rw_ino == ip->i_ino &&
		    w->rw_off + w->rw_len <= hoff)
			victim = w;
	}
	for (unsigned i = 0; i < fs->f_ra_n && !victim; i++)
		if (fs->f_ra[i].rw_state == RA_EMPTY)
			victim = &fs->f_ra[i];
	if (!victim) {
		mutex_unlock(&fs->f_ra_lock);
		return;
	}
	uint64_t wlen = MIN((uint64_t)FS_RA_BYTES, size - next);
	claim(fs, victim, ip, gen, next, wlen);
	counter_inc(&fs->f_stats.ra_prefetches);
	fill(ip, victim, next, wlen, 0, NULL, 0); /* a failure only leaves it empty */
}

bool ra_read(struct fs_inode *ip, uint64_t off, uint8_t *out, size_t len, uint64_t size, int *err)
{
	struct fs *fs = ip->i_fs;
	assert_rdlocked(&ip->i_iolock);
	bool may_fill;
	if (fs->f_ra_off || len >= FS_RA_BYTES || !sequential(ip, off, len, &may_fill))
		return false;
	/* the generation first, then the layouts (R3, R4) */
	uint64_t gen = atomic_load(&ip->i_data_gen);
	if (atomic_load(&ip->i_has_layouts))
		return false;

	mutex_lock(&fs->f_ra_lock);
	for (;;) {
		struct fs_ra_window *hit = NULL, *filling = NULL;
		for (unsigned i = 0; i < fs->f_ra_n; i++) {
			struct fs_ra_window *w = &fs->f_ra[i];
			bool mine = w->rw_state != RA_EMPTY && w->rw_ino == ip->i_ino;
			if (mine && w->rw_gen == gen && covers(w, off, len)) {
				if (w->rw_state == RA_READY)
					hit = w;
				else
					filling = w;
				break;
			}
			if (mine && w->rw_gen < gen && w->rw_state == RA_READY && !w->rw_users) {
				/* the file changed since (R2): never again */
				if (covers(w, off, len))
					counter_inc(&fs->f_stats.ra_stale);
				w->rw_state = RA_EMPTY;
			}
		}
		if (hit) {
			hit->rw_users++;
			hit->rw_used = ++fs->f_ra_tick;
			uint64_t hoff = hit->rw_off, hlen = hit->rw_len;
			mutex_unlock(&fs->f_ra_lock);
			memcpy(out, hit->rw_buf + (off - hoff), len);
			mutex_lock(&fs->f_ra_lock);
			hit->rw_users--;
			mutex_unlock(&fs->f_ra_lock);
			counter_inc(&fs->f_stats.ra_hits);
			*err = 0;
			prefetch(ip, hit, hoff, hlen, off, gen, size);
			return true;
		}
		if (!filling)
			break;
		/* another read of this file fills it (R7) */
		cond_wait(&fs->f_ra_cond, &fs->f_ra_lock);
	}
	struct fs_ra_window *victim = may_fill ? pick_victim(fs) : NULL;
	if (!victim) {
		/* every window in use, or one sequential read alone: the
		 * device, as without readahead */
		mutex_unlock(&fs->f_ra_lock);
		return false;
	}
	uint64_t woff, wlen;
	fill_range(off, len, size, &woff, &wlen);
	claim(fs, victim, ip, gen, woff, wlen);
	*err = fill(ip, victim, woff, wlen, off, out, len);
	return true;
}
