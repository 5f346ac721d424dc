/*
 * bmap.c - extent maps: file blocks to device blocks, with an unwritten
 * flag per extent.
 *
 * Up to FS_INLINE_EXTENTS extents live in the inode; beyond that they move
 * to a B+tree rooted in the inode (key: file block, value: struct fs_dext),
 * and back inline when the tree empties.
 *
 * Every change works on a window: the extents overlapping the range (and
 * the neighbours that touch it, so that results merge), which are replaced
 * by the new list. Extents that meet in the file and on the device with the
 * same state are merged, so appending writers that convert their
 * preallocated blocks keep one extent.
 *
 * Called with the inode's I/O lock (and, for reads of the map, i_ilock or
 * the I/O lock); changes inside a transaction the inode is joined to.
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "fs/fs_priv.h"

#define WINDOW_MAX 64
/* Extents a punch frees per transaction: each may touch its own leaves of
 * the free-space trees, and a transaction holds every block it changes
 * locked until it commits (see alloc_holes in file.c). */
#define PUNCH_MAX 16

static bool is_tree(struct fs_inode *ip)
{
	return ip->i_d.flags & FS_DIF_EXT_BTREE;
}

static void ext_set_root(struct bt *bt, struct fstx *tx, uint64_t root, uint16_t level)
{
	struct fs_inode *ip = bt->priv;
	ip->i_d.root = root;
	ip->i_d.root_level = level;
	ino_log(tx, ip, FS_ILOG_EXTENTS);
}

static int ext_alloc_block(struct bt *bt, struct fstx *tx, uint64_t *blkno)
{
	struct fs_inode *ip = bt->priv;
	uint64_t len;
	uint64_t hint = ip->i_d.root ? ip->i_d.root : fs_ino_block(ip->i_ino);
	int err = alloc_extent(tx, hint, 1, 1, blkno, &len);
	if (!err)
		ip->i_d.nblocks++;
	return err;
}

static void ext_free_block(struct bt *bt, struct fstx *tx, uint64_t blkno)
{
	struct fs_inode *ip = bt->priv;
	if (alloc_free(tx, blkno, 1))
		fs_shutdown(tx->fs, "freeing an extent tree block failed");
	ip->i_d.nblocks--;
}

static const struct bt_ops ext_bt_ops = {
	.set_root = ext_set_root,
	.alloc_block = ext_alloc_block,
	.free_block = ext_free_block,
};

void bmap_bt(struct fs_inode *ip, struct bt *bt)
{
	*bt = (struct bt){
		.fs = ip->i_fs,
		.v = fs_bt_verifier(FS_BT_EXT_MAGIC),
		.owner = ip->i_ino,
		.root = ip->i_d.root,
		.level = ip->i_d.root_level,
		.ops = &ext_bt_ops,
		.priv = ip,
	};
}

static int rec_to_ext(struct bt_cursor *c, struct fs_inode *ip, struct fs_dext *e)
{
	struct fs_btkey k;
	struct fs_dext d;
	size_t len;
	bt_get(c, &k, &d, sizeof(d), &len);
	e->e_off = le64toh(d.e_off);
	e->e_start = le64toh(d.e_start);
	e->e_len = le32toh(d.e_len);
	e->e_flags = le32toh(d.e_flags);
	struct fs *fs = ip->i_fs;
	if (len != sizeof(d) || e->e_off != k.k0 || !e->e_len || e->e_len > FS_EXT_MAXLEN ||
	    (e->e_flags & ~FS_EXT_UNWRITTEN) || e->e_start == 0 ||
	    e->e_start >= fs->f_blocks || e->e_len > fs->f_blocks - e->e_start) {
		msg_err("fs: inode %llu has a malformed extent at file block %llu",
			(unsigned long long)ip->i_ino, (unsigned long long)k.k0);
		return -EUCLEAN;
	}
	return 0;
}

static void ext_from(struct bmap_ext *b, const struct fs_dext *e)
{
	b->off = e->e_off;
	b->start = e->e_start;
	b->len = e->e_len;
	b->unwritten = e->e_flags & FS_EXT_UNWRITTEN;
}

/* Extents overlapping [lo, hi) in file order, at most max; *more if cut. */
static int collect(struct fs_inode *ip, uint64_t lo, uint64_t hi, struct fs_dext *out,
		   unsigned max, unsigned *n, bool *more)
{
	*n = 0;
	*more = false;
	if (!is_tree(ip)) {
		for (unsigned i = 0; i < ip->i_d.nextents; i++) {
			const struct fs_dext *e = &ip->i_d.ext[i];
			if (e->e_off + e->e_len <= lo || e->e_off >= hi)
				continue;
			if (*n == max) {
				*more = true;
				break;
			}
			out[(*n)++] = *e;
		}
		return 0;
	}
	struct bt bt;
	bmap_bt(ip, &bt);
	struct bt_cursor c;
	int r = bt_lookup(&bt, &(struct fs_btkey){lo, 0}, BT_LE, &c);
	if (r == 0) {
		bt_cursor_done(&c);
		r = bt_lookup(&bt, &(struct fs_btkey){lo, 0}, BT_GE, &c);
	}
	for (; r == 1; r = bt_next(&c)) {
		struct fs_dext e;
		int err = rec_to_ext(&c, ip, &e);
		if (err) {
			r = err;
			break;
		}
		if (e.e_off >= hi)
			break;
		if (e.e_off + e.e_len <= lo)
			continue;
		if (*n == max) {
			*more = true;
			break;
		}
		out[(*n)++] = e;
	}
	bt_cursor_done(&c);
	return r < 0 ? r : 0;
}

int bmap_lookup(struct fs_inode *ip, uint64_t off, struct bmap_ext *e, bool *hole)
{
	assert_rdlocked(&ip->i_iolock);
	struct fs_dext w[2];
	unsigned n;
	bool more;
	/* the extent at off, if any */
	int err = collect(ip, off, off + 1, w, 1, &n, &more);
	if (err)
		return err;
	if (n) {
		ext_from(e, &w[0]);
		*hole = false;
		return 0;
	}
	/* a hole: up to the next extent */
	*hole = true;
	e->off = off;
	e->start = 0;
	e->unwritten = false;
	e->len = UINT64_MAX - off;
	if (!is_tree(ip)) {
		for (unsigned i = 0; i < ip->i_d.nextents; i++)
			if (ip->i_d.ext[i].e_off > off) {
				e->len = ip->i_d.ext[i].e_off - off;
				break;
			}
		return 0;
	}
	struct bt bt;
	bmap_bt(ip, &bt);
	struct bt_cursor c;
	int r = bt_lookup(&bt, &(struct fs_btkey){off, 0}, BT_GE, &c);
	if (r == 1) {
		struct fs_dext x;
		err = rec_to_ext(&c, ip, &x);
		if (!err)
			e->len = x.e_off - off;
	}
	bt_cursor_done(&c);
	return r < 0 ? r : err;
}

static bool can_merge(const struct fs_dext *a, const struct fs_dext *b)
{
	return a->e_off + a->e_len == b->e_off && a->e_start + a->e_len == b->e_start &&
	       a->e_flags == b->e_flags && (uint64_t)a->e_len + b->e_len <= FS_EXT_MAXLEN;
}

static unsigned merge_list(struct fs_dext *v, unsigned n)
{
	unsigned o = 0;
	for (unsigned i = 0; i < n; i++) {
		if (o && can_merge(&v[o - 1], &v[i]))
			v[o - 1].e_len += v[i].e_len;
		else
			v[o++] = v[i];
	}
	return o;
}

static int cmp_ext(const void *a, const void *b)
{
	const struct fs_dext *x = a, *y = b;
	return x->e_off < y->e_off ? -1 : x->e_off > y->e_off;
}

static int tree_put(struct fstx *tx, struct fs_inode *ip, const struct fs_dext *e, bool del)
{
	struct bt bt;
	bmap_bt(ip, &bt);
	struct fs_btkey k = {e->e_off, 0};
	if (del)
		return bt_delete(tx, &bt, &k);
	struct fs_dext d = {htole64(e->e_off), htole64(e->e_start), htole32(e->e_len),
			    htole32(e->e_flags)};
	return bt_insert(tx, &bt, &k, &d, sizeof(d));
}

/* Move the inline extents into a new tree. */
static int to_tree(struct fstx *tx, struct fs_inode *ip)
{
	struct fs_dext saved[FS_INLINE_EXTENTS];
	unsigned n = ip->i_d.nextents;
	memcpy(saved, ip->i_d.ext, n * sizeof(saved[0]));
	struct bt bt;
	bmap_bt(ip, &bt);
	bt.root = 0;
	bt.level = 0;
	ip->i_d.flags |= FS_DIF_EXT_BTREE;
	ip->i_d.nextents = 0;
	memset(ip->i_d.ext, 0, sizeof(ip->i_d.ext));
	int err = bt_create(tx, &bt);
	for (unsigned i = 0; i < n && !err; i++)
		err = tree_put(tx, ip, &saved[i], false);
	ino_log(tx, ip, FS_ILOG_EXTENTS);
	return err;
}

/* If the tree holds nothing, free its root and go back to inline. */
static int maybe_from_tree(struct fstx *tx, struct fs_inode *ip)
{
	struct bt bt;
	bmap_bt(ip, &bt);
	struct bt_cursor c;
	int r = bt_lookup(&bt, &(struct fs_btkey){0, 0}, BT_GE, &c);
	bt_cursor_done(&c);
	if (r != 0)
		return r < 0 ? r : 0;
	int err = bt_destroy(tx, &bt);
	ip->i_d.flags &= ~FS_DIF_EXT_BTREE;
	ip->i_d.root = 0;
	ip->i_d.root_level = 0;
	ip->i_d.nextents = 0;
	ino_log(tx, ip, FS_ILOG_EXTENTS);
	return err;
}

/* Replace the window old[] by new[] (both sorted, new[] merged). */
static int replace(struct fstx *tx, struct fs_inode *ip, const struct fs_dext *old, unsigned nold,
		   const struct fs_dext *nw, unsigned nnew)
{
	int err = 0;
	if (!is_tree(ip) && ip->i_d.nextents - nold + nnew > FS_INLINE_EXTENTS) {
		err = to_tree(tx, ip);
		if (err)
			return err;
	}
	if (is_tree(ip)) {
		for (unsigned i = 0; i < nold && !err; i++)
			err = tree_put(tx, ip, &old[i], true);
		for (unsigned i = 0; i < nnew && !err; i++)
			err = tree_put(tx, ip, &nw[i], false);
		if (!err && !nnew)
			err = maybe_from_tree(tx, ip);
	} else {
		struct fs_dext v[2 * FS_INLINE_EXTENTS + WINDOW_MAX];
		unsigned n = 0;
		for (unsigned i = 0; i < ip->i_d.nextents; i++) {
			bool gone = false;
			for (unsigned j = 0; j < nold && !gone; j++)
				gone = ip->i_d.ext[i].e_off == old[j].e_off;
			if (!gone)
				v[n++] = ip->i_d.ext[i];
		}
		for (unsigned j = 0; j < nnew; j++)
			v[n++] = nw[j];
		qsort(v, n, sizeof(v[0]), cmp_ext);
		BUG_ON(n > FS_INLINE_EXTENTS);
		memset(ip->i_d.ext, 0, sizeof(ip->i_d.ext));
		memcpy(ip->i_d.ext, v, n * sizeof(v[0]));
		ip->i_d.nextents = (uint16_t)n;
	}
	ino_log(tx, ip, FS_ILOG_EXTENTS);
	return err;
}

int bmap_add(struct fstx *tx, struct fs_inode *ip, uint64_t off, uint64_t start, uint64_t len,
	     bool unwritten)
{
	assert_wrlocked(&ip->i_iolock);
	assert_locked(&ip->i_ilock); /* joined to tx */
	while (len) {
		uint64_t n = MIN(len, (uint64_t)FS_EXT_MAXLEN);
		struct fs_dext old[WINDOW_MAX], nw[WINDOW_MAX + 1];
		unsigned nold;
		bool more;
		int err = collect(ip, off ? off - 1 : 0, off + n + 1, old, WINDOW_MAX, &nold, &more);
		if (err)
			return err;
		for (unsigned i = 0; i < nold; i++) {
			if (old[i].e_off < off + n && old[i].e_off + old[i].e_len > off) {
				msg_err("fs: inode %llu: mapping file block %llu that is mapped",
					(unsigned long long)ip->i_ino, (unsigned long long)off);
				return -EUCLEAN;
			}
			nw[i] = old[i];
		}
		nw[nold] = (struct fs_dext){off, start, (uint32_t)n,
					    unwritten ? FS_EXT_UNWRITTEN : 0};
		qsort(nw, nold + 1, sizeof(nw[0]), cmp_ext);
		unsigned nn = merge_list(nw, nold + 1);
		err = replace(tx, ip, old, nold, nw, nn);
		if (err)
			return err;
		ip->i_d.nblocks += n;
		off += n;
		start += n;
		len -= n;
	}
	return 0;
}

int bmap_punch(struct fstx *tx, struct fs_inode *ip, uint64_t off, uint64_t len, uint64_t *next)
{
	assert_wrlocked(&ip->i_iolock);
	assert_locked(&ip->i_ilock); /* joined to tx */
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	ip->i_unmap_gen++;
	struct fs_dext old[PUNCH_MAX], nw[2 * PUNCH_MAX];
	unsigned nold, nn = 0;
	bool more;
	int err = collect(ip, off, end, old, PUNCH_MAX, &nold, &more);
	if (err)
		return err;
	for (unsigned i = 0; i < nold; i++) {
		struct fs_dext *e = &old[i];
		uint64_t s = MAX(e->e_off, off), t = MIN(e->e_off + e->e_len, end);
		if (s > e->e_off)
			nw[nn++] = (struct fs_dext){e->e_off, e->e_start, (uint32_t)(s - e->e_off),
						    e->e_flags};
		if (t < e->e_off + e->e_len)
			nw[nn++] = (struct fs_dext){t, e->e_start + (t - e->e_off),
						    (uint32_t)(e->e_off + e->e_len - t), e->e_flags};
		err = alloc_free(tx, e->e_start + (s - e->e_off), t - s);
		if (err)
			return err;
		ip->i_d.nblocks -= t - s;
	}
	if (nold)
		err = replace(tx, ip, old, nold, nw, nn);
	if (next)
		*next = more && nold ? old[nold - 1].e_off + old[nold - 1].e_len : end;
	return err;
}

int bmap_set_written(struct fstx *tx, struct fs_inode *ip, uint64_t off, uint64_t len,
		     bool written)
{
	assert_wrlocked(&ip->i_iolock);
	assert_locked(&ip->i_ilock); /* joined to tx */
	uint32_t want = written ? 0 : FS_EXT_UNWRITTEN;
	uint64_t end = off + len;
	while (off < end) {
		struct fs_dext old[WINDOW_MAX], nw[3 * WINDOW_MAX];
		unsigned nold, nn = 0;
		bool more;
		int err = collect(ip, off ? off - 1 : 0, end + 1, old, WINDOW_MAX, &nold, &more);
		if (err)
			return err;
		bool changed = false;
		for (unsigned i = 0; i < nold; i++) {
			struct fs_dext *e = &old[i];
			uint64_t s = MAX(e->e_off, off), t = MIN(e->e_off + e->e_len, end);
			if (s >= t || e->e_flags == want) {
				nw[nn++] = *e;
				continue;
			}
			changed = true;
			if (s > e->e_off)
				nw[nn++] = (struct fs_dext){e->e_off, e->e_start,
							    (uint32_t)(s - e->e_off), e->e_flags};
			nw[nn++] = (struct fs_dext){s, e->e_start + (s - e->e_off), (uint32_t)(t - s),
						    want};
			if (t < e->e_off + e->e_len)
				nw[nn++] = (struct fs_dext){t, e->e_start + (t - e->e_off),
							    (uint32_t)(e->e_off + e->e_len - t),
							    e->e_flags};
		}
		nn = merge_list(nw, nn);
		if (changed) {
			err = replace(tx, ip, old, nold, nw, nn);
			if (err)
				return err;
		}
		if (!more || !nold)
			break;
		off = old[nold - 1].e_off + old[nold - 1].e_len;
	}
	return 0;
}

unsigned bmap_res(struct fs_inode *ip)
{
	/* a tree split on every level of a tall tree, plus a new root, and a
	 * conversion from inline */
	return (is_tree(ip) ? ip->i_d.root_level : 0) + 4;
}

int bmap_walk(struct fs_inode *ip, int (*fn)(void *arg, const struct bmap_ext *e), void *arg)
{
	if (!is_tree(ip)) {
		for (unsigned i = 0; i < ip->i_d.nextents; i++) {
			struct bmap_ext b;
			ext_from(&b, &ip->i_d.ext[i]);
			int r = fn(arg, &b);
			if (r)
				return r;
		}
		return 0;
	}
	struct bt bt;
	bmap_bt(ip, &bt);
	struct bt_cursor c;
	int r = bt_lookup(&bt, &(struct fs_btkey){0, 0}, BT_GE, &c);
	for (; r == 1; r = bt_next(&c)) {
		struct fs_dext e;
		int err = rec_to_ext(&c, ip, &e);
		if (err) {
			r = err;
			break;
		}
		struct bmap_ext b;
		ext_from(&b, &e);
		int x = fn(arg, &b);
		if (x) {
			bt_cursor_done(&c);
			return x;
		}
	}
	bt_cursor_done(&c);
	return r < 0 ? r : 0;
}
