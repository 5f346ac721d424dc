/*
 * xattr.c - extended attributes (fs.h: fs_setxattr and the others): named
 * values of an inode, kept in a B+tree of the inode's own and changed in
 * journal transactions like every other piece of metadata. docs/design.md
 * §5 ("Extended attributes") is the user's view; this is the design.
 *
 * Format (fs_format.h): the tree is rooted in the inode (xattr_root, 0
 * while the inode has no attribute) and keyed by
 *     {hash(name) | collision index, fragment}
 * An attribute is one or more tree records ("fragments", numbered in the
 * key's second word): fragment 0 holds struct fs_dxattr, the name and the
 * value's first bytes; the others the rest of the value, FS_BT_MAX_VALUE
 * bytes each, so that a 64 KiB value is 74 tree records.
 *
 * Invariants (check.c verifies each; tests cite them):
 *   X1 An attribute's fragments are written, replaced and removed in one
 *      transaction, so after a crash an attribute is there whole, as one
 *      set left it, or not at all (the journal's G1). The CRC in fragment
 *      0 covers the name and the whole value: check finds a torn one.
 *   X2 Names are unique in an inode. An attribute is filed under its own
 *      name's hash, and the collision indexes of one hash are distinct: a
 *      lookup reads the hash's run of fragments 0 and compares names.
 *   X3 The inode's xattr_count and xattr_bytes are the number of
 *      attributes and the sum of their charges (name, value and
 *      FS_XATTR_ENTRY_COST), at most FS_XATTR_TOTAL_MAX; a set that would
 *      pass it is refused (-ENOSPC) before anything changes.
 *   X4 An inode has a tree if and only if it has an attribute: the set of
 *      the first makes it, the removal of the last frees it. Its blocks are
 *      owned once (check's block map) and are not counted in di_nblocks
 *      (a file's "used" space is its data's).
 *   X5 An unlinked inode's attributes go before its blocks, whole
 *      attributes a batch per transaction (xattr_free_all), so that every
 *      transaction is bounded and a crash in between leaves an orphan
 *      whose remaining attributes are whole (mount finishes the job).
 *
 * The hash is the durable records' keyed SipHash (rec_hash): a client
 * choosing names cannot make them collide on purpose.
 *
 * Durability: a set or remove logs the inode as FS_ILOG_XATTR, a TIMESTAMP
 * and a CHANGE (ctime and the change attribute move): fsync forces it
 * (commit_seq), fdatasync does not (datasync_seq: no read of the data
 * depends on it), and res->csn lets a sync export force it before its
 * reply (docs/design.md rule 7).
 *
 * Locks: the tree and the inode's xattr_* fields are guarded as the extent
 * map is (struct fs_icore): the I/O lock shared to read (get, list),
 * exclusively to change, with the inode joined to the transaction. The
 * transaction takes the block allocation lock at once: the first
 * attribute of a version 1 image changes the superblock's version
 * (FS_VERSION_XATTR), which is changed under that lock.
 */
#include <stdlib.h>

#include "base/crc32c.h"
#include "base/mem.h"
#include "fs/fs_priv.h"

/* Fragments freed per transaction when an inode goes (X5). */
#define XATTR_FREE_BATCH 8u

static void xattr_set_root(struct bt *bt, struct fstx *tx, uint64_t root, uint16_t level)
{
	struct fs_inode *ip = bt->priv;
	ip->i_d.xattr_root = root;
	ip->i_d.xattr_level = level;
	ino_log(tx, ip, FS_ILOG_XATTR);
}

static int xattr_alloc_block(struct bt *bt, struct fstx *tx, uint64_t *blkno)
{
	struct fs_inode *ip = bt->priv;
	uint64_t len;
	uint64_t hint = ip->i_d.xattr_root ? ip->i_d.xattr_root : fs_ino_block(ip->i_ino);
	return alloc_extent(tx, hint, 1, 1, blkno, &len);
}

static void xattr_free_block(struct bt *bt, struct fstx *tx, uint64_t blkno)
{
	if (alloc_free(tx, blkno, 1))
		fs_shutdown(tx->fs, "freeing an attribute tree block failed");
}

static const struct bt_ops xattr_bt_ops = {
	.set_root = xattr_set_root,
	.alloc_block = xattr_alloc_block,
	.free_block = xattr_free_block,
};

void xattr_bt(struct fs_inode *ip, struct bt *bt)
{
	*bt = (struct bt){
		.fs = ip->i_fs,
		.v = fs_bt_verifier(FS_BT_XATTR_MAGIC),
		.owner = ip->i_ino,
		.root = ip->i_d.xattr_root,
		.level = ip->i_d.xattr_level,
		.ops = &xattr_bt_ops,
		.priv = ip,
	};
}

uint32_t xattr_crc(const void *name, size_t nlen, const void *val, size_t vlen)
{
	return crc32c(crc32c(0, name, nlen), val, vlen);
}

static size_t charge(size_t nlen, size_t vlen)
{
	return nlen + vlen + FS_XATTR_ENTRY_COST;
}

int xattr_decode_head(const uint8_t *frag0, size_t len0, struct fs_dxattr *x, const char **name,
		      const char **why)
{
	*why = NULL;
	if (len0 < sizeof(*x)) {
		*why = "a first fragment shorter than its header";
		return -EUCLEAN;
	}
	memcpy(x, frag0, sizeof(*x));
	x->x_vallen = le32toh(x->x_vallen);
	x->x_crc = le32toh(x->x_crc);
	x->x_nfrags = le16toh(x->x_nfrags);
	size_t nl = x->x_namelen, vl = x->x_vallen;
	size_t room = FS_XATTR_FRAG0_ROOM(nl);
	if (!nl || vl > FS_XATTR_SIZE_MAX)
		*why = "a name or value length out of bounds";
	else if (x->x_nfrags != FS_XATTR_NFRAGS(nl, vl))
		*why = "the wrong number of fragments for its length";
	else if (len0 != sizeof(*x) + nl + MIN(vl, room))
		*why = "a first fragment of the wrong length";
	else if (memchr(frag0 + sizeof(*x), 0, nl))
		*why = "a NUL in its name";
	else if (x->x_pad)
		*why = "a header with its pad byte set";
	if (*why)
		return -EUCLEAN;
	*name = (const char *)frag0 + sizeof(*x);
	return 0;
}

/* The caller's name: 1..FS_XATTR_NAME_MAX bytes, no NUL. */
static int check_name(const char *name, size_t nlen)
{
	if (nlen > FS_XATTR_NAME_MAX)
		return -ERANGE; /* as Linux's setxattr */
	if (!nlen || memchr(name, 0, nlen))
		return -EINVAL;
	return 0;
}

/*
 * Find name (X2): 1, its key word in *k0 and its header in *x; or 0 and
 * in *k0 the key word a new attribute of it gets (the hash and its first
 * free collision index). I/O lock held.
 */
static int xattr_find(struct fs_inode *ip, const char *name, size_t nlen, uint64_t *k0,
		      struct fs_dxattr *x)
{
	uint64_t h = rec_hash(ip->i_fs, name, nlen);
	*k0 = h;
	if (!ip->i_d.xattr_root)
		return 0;
	struct bt bt;
	xattr_bt(ip, &bt);
	struct bt_cursor c;
	int n = bt_lookup(&bt, &(struct fs_btkey){h, 0}, BT_GE, &c);
	uint64_t next_free = h;
	bool have_free = false;
	uint8_t *f0 = xmalloc(FS_BT_MAX_VALUE);
	for (; n == 1; n = bt_next(&c)) {
		struct fs_btkey k;
		size_t l0;
		bt_get(&c, &k, f0, FS_BT_MAX_VALUE, &l0);
		if ((k.k0 & FS_XATTR_HASH_MASK) != h)
			break;
		if (k.k1 != 0)
			continue; /* the rest of a value */
		const char *nm, *why;
		int err = xattr_decode_head(f0, l0, x, &nm, &why);
		if (err) {
			msg_err("fs: inode %llu: attribute %llx has %s",
				(unsigned long long)ip->i_ino, (unsigned long long)k.k0, why);
			n = err;
			break;
		}
		if (x->x_namelen == nlen && !memcmp(nm, name, nlen)) {
			*k0 = k.k0;
			n = 1;
			goto out;
		}
		if (!have_free && k.k0 == next_free)
			next_free++;
		else
			have_free = true;
	}
	if (n >= 0) {
		n = 0;
		if ((next_free & ~FS_XATTR_HASH_MASK) == 0 && next_free != h)
			n = -ENOSPC; /* 65536 names of one hash */
		*k0 = next_free;
	}
out:
	bt_cursor_done(&c);
	free(f0);
	return n;
}

/* Read the value of the attribute at k0 (header x) into val, checking
 * every fragment and the CRC (X1). I/O lock held. */
static int xattr_read_value(struct fs_inode *ip, uint64_t k0, const struct fs_dxattr *x,
			    uint8_t *val)
{
	struct bt bt;
	xattr_bt(ip, &bt);
	struct bt_cursor c;
	uint8_t *f = xmalloc(FS_BT_MAX_VALUE);
	const char *why = NULL;
	char name[FS_XATTR_NAME_MAX];
	int n = bt_lookup(&bt, &(struct fs_btkey){k0, 0}, BT_EQ, &c);
	size_t done = 0;
	for (unsigned i = 0; n == 1 && i < x->x_nfrags; i++) {
		struct fs_btkey k;
		size_t len;
		if (i > 0 && (n = bt_next(&c)) != 1)
			break;
		bt_get(&c, &k, f, FS_BT_MAX_VALUE, &len);
		if (k.k0 != k0 || k.k1 != i) {
			why = "a fragment missing";
			break;
		}
		const uint8_t *p = f;
		if (i == 0) {
			memcpy(name, f + sizeof(struct fs_dxattr), x->x_namelen);
			p += sizeof(struct fs_dxattr) + x->x_namelen;
			len -= sizeof(struct fs_dxattr) + x->x_namelen;
		}
		size_t want = MIN((size_t)x->x_vallen - done,
				  i == 0 ? FS_XATTR_FRAG0_ROOM(x->x_namelen) : FS_BT_MAX_VALUE);
		if (len != want) {
			why = "a fragment of the wrong length";
			break;
		}
		memcpy(val + done, p, len);
		done += len;
	}
	bt_cursor_done(&c);
	free(f);
	if (n < 0)
		return n;
	if (!why && n == 0)
		why = "a fragment missing";
	if (!why && xattr_crc(name, x->x_namelen, val, x->x_vallen) != x->x_crc)
		why = "a CRC that does not match its name and value";
	if (why) {
		msg_err("fs: inode %llu: attribute %llx has %s", (unsigned long long)ip->i_ino,
			(unsigned long long)k0, why);
		return -EUCLEAN;
	}
	return 0;
}

/* Log space for a change of nfrags tree records: leaves at least half full
 * hold two fragments each, and every path may split. A set that needs more
 * than the journal gives one transaction is refused (-E2BIG from
 * fstx_begin); the freeing of an unlinked inode must always run, so it
 * asks for no more than that (the journal charges a transaction what it
 * logged, whatever it reserved). */
static uint64_t xattr_log_res(struct fs_inode *ip, unsigned nfrags, bool freeing)
{
	unsigned blocks = nfrags / 2 + 2 * (ip->i_d.xattr_level + 3u) + 8;
	uint64_t res = log_calc_res(ip->i_fs->f_log, blocks, (size_t)blocks * FS_BLOCK_SIZE);
	if (freeing)
		res = MIN(res, log_size_bytes(ip->i_fs->f_log) / 4);
	return res;
}

int fs_setxattr(struct fs_inode *ip, const char *name, size_t nlen, const void *val, size_t vlen,
		unsigned flags, struct fs_result *res)
{
	struct fs *fs = ip->i_fs;
	res_init(res);
	int err = check_name(name, nlen);
	if (err)
		return err;
	if (vlen > FS_XATTR_SIZE_MAX)
		return -E2BIG;
	if ((flags & ~(FS_XATTR_CREATE | FS_XATTR_REPLACE)) ||
	    flags == (FS_XATTR_CREATE | FS_XATTR_REPLACE))
		return -EINVAL;
	if (fs_is_shutdown(fs))
		return -EIO;
	/* fragment 0, built before anything is locked */
	uint8_t *f0 = xmalloc(FS_BT_MAX_VALUE);
	size_t first = MIN(vlen, FS_XATTR_FRAG0_ROOM(nlen));
	unsigned nnew = FS_XATTR_NFRAGS(nlen, vlen);
	struct fs_dxattr hx = {.x_vallen = htole32((uint32_t)vlen),
			       .x_crc = htole32(xattr_crc(name, nlen, val, vlen)),
			       .x_nfrags = htole16((uint16_t)nnew),
			       .x_namelen = (uint8_t)nlen};
	memcpy(f0, &hx, sizeof(hx));
	memcpy(f0 + sizeof(hx), name, nlen);
	if (first)
		memcpy(f0 + sizeof(hx) + nlen, val, first);
	size_t l0 = sizeof(hx) + nlen + first;

	rwlock_wrlock(&ip->i_iolock);
	struct fs_dxattr old;
	uint64_t k0;
	int found = xattr_find(ip, name, nlen, &k0, &old);
	if (found < 0) {
		err = found;
		goto out_unlock;
	}
	if (found && (flags & FS_XATTR_CREATE)) {
		err = -EEXIST;
		goto out_unlock;
	}
	if (!found && (flags & FS_XATTR_REPLACE)) {
		err = -ENODATA;
		goto out_unlock;
	}
	/* X3: the inode's total, before anything changes; xattr_bytes changes
	 * only under the I/O lock, held */
	uint64_t bytes = ip->i_d.xattr_bytes + charge(nlen, vlen);
	if (found)
		bytes -= charge(old.x_namelen, old.x_vallen);
	if (bytes > FS_XATTR_TOTAL_MAX) {
		err = -ENOSPC;
		goto out_unlock;
	}
	unsigned nold = found ? old.x_nfrags : 0;
	struct fstx *tx;
	err = fstx_begin(fs, nnew + 2 * (ip->i_d.xattr_level + 2u) + 2,
			 xattr_log_res(ip, nold + nnew, false), &tx);
	if (err)
		goto out_unlock;
	fstx_unordered(tx); /* names and values: nothing written in place */
	ino_join(tx, ip);
	fstx_lock(tx, FSTX_ALLOC);
	res_pre(res, 0, ip);
	if (le32toh(fs->f_sb->sb_version) < FS_VERSION_XATTR) {
		/* the first attribute of a version 1 image: older builds must
		 * refuse it from now on (fs_format.h) */
		fsbuf_join(tx, fs->f_sbp);
		fs->f_sb->sb_version = htole32(FS_VERSION_XATTR);
		FS_LOG_SB_FIELD(tx, sb_version);
	}
	struct bt bt;
	xattr_bt(ip, &bt);
	if (!bt.root)
		err = bt_create(tx, &bt);
	/* X1: every fragment, old and new, in this transaction */
	for (unsigned i = 0; !err && i < MAX(nold, nnew); i++) {
		struct fs_btkey k = {k0, i};
		const uint8_t *p = f0;
		size_t len = l0;
		if (i > 0 && i < nnew) {
			size_t off = first + (size_t)(i - 1) * FS_BT_MAX_VALUE;
			p = (const uint8_t *)val + off;
			len = MIN((size_t)FS_BT_MAX_VALUE, vlen - off);
		}
		if (i < nold && i < nnew)
			err = bt_update(tx, &bt, &k, p, len);
		else if (i < nnew)
			err = bt_insert(tx, &bt, &k, p, len);
		else
			err = bt_delete(tx, &bt, &k);
	}
	if (err) {
		fstx_cancel(tx); /* may have changed the tree: shuts down */
		goto out_unlock;
	}
	if (!found)
		ip->i_d.xattr_count++;
	ip->i_d.xattr_bytes = (uint32_t)bytes;
	ino_touch(ip, false);
	ino_log(tx, ip, FS_ILOG_XATTR | FS_ILOG_TIMESTAMP | FS_ILOG_CHANGE);
	res_post(res, 0, ip);
	err = fstx_commit(tx, res);
	if (!err)
		counter_inc(&fs->f_stats.xattr_sets);
out_unlock:
	rwlock_unlock(&ip->i_iolock);
	free(f0);
	return err;
}

/* Remove the attribute at k0 with nfrags fragments, and the tree with the
 * last one (X4). Inode joined, I/O lock held exclusively. */
static int xattr_remove_one(struct fstx *tx, struct fs_inode *ip, uint64_t k0,
			    const struct fs_dxattr *x)
{
	struct bt bt;
	xattr_bt(ip, &bt);
	int err = 0;
	for (unsigned i = 0; !err && i < x->x_nfrags; i++)
		err = bt_delete(tx, &bt, &(struct fs_btkey){k0, i});
	if (err)
		return err;
	size_t c = charge(x->x_namelen, x->x_vallen);
	if (!ip->i_d.xattr_count || ip->i_d.xattr_bytes < c) {
		msg_err("fs: inode %llu counts fewer attributes than it holds",
			(unsigned long long)ip->i_ino);
		return -EUCLEAN;
	}
	ip->i_d.xattr_count--;
	ip->i_d.xattr_bytes -= (uint32_t)c;
	if (!ip->i_d.xattr_count) {
		xattr_bt(ip, &bt);
		err = bt_destroy(tx, &bt);
		ip->i_d.xattr_root = 0;
		ip->i_d.xattr_level = 0;
		ip->i_d.xattr_bytes = 0;
	}
	ino_log(tx, ip, FS_ILOG_XATTR);
	return err;
}

int fs_removexattr(struct fs_inode *ip, const char *name, size_t nlen, struct fs_result *res)
{
	struct fs *fs = ip->i_fs;
	res_init(res);
	int err = check_name(name, nlen);
	if (err)
		return err;
	if (fs_is_shutdown(fs))
		return -EIO;
	rwlock_wrlock(&ip->i_iolock);
	struct fs_dxattr x;
	uint64_t k0;
	int found = xattr_find(ip, name, nlen, &k0, &x);
	if (found <= 0) {
		err = found < 0 ? found : -ENODATA;
		goto out_unlock;
	}
	struct fstx *tx;
	err = fstx_begin(fs, 0, xattr_log_res(ip, x.x_nfrags, false), &tx);
	if (err)
		goto out_unlock;
	fstx_unordered(tx);
	ino_join(tx, ip);
	res_pre(res, 0, ip);
	err = xattr_remove_one(tx, ip, k0, &x);
	if (err) {
		fstx_cancel(tx); /* may have changed the tree: shuts down */
		goto out_unlock;
	}
	ino_touch(ip, false);
	ino_log(tx, ip, FS_ILOG_TIMESTAMP | FS_ILOG_CHANGE);
	res_post(res, 0, ip);
	err = fstx_commit(tx, res);
	if (!err)
		counter_inc(&fs->f_stats.xattr_removes);
out_unlock:
	rwlock_unlock(&ip->i_iolock);
	return err;
}

int fs_getxattr(struct fs_inode *ip, const char *name, size_t nlen, void *buf, size_t size,
		size_t *vlen)
{
	int err = check_name(name, nlen);
	if (err)
		return err;
	if (fs_is_shutdown(ip->i_fs))
		return -EIO;
	rwlock_rdlock(&ip->i_iolock);
	struct fs_dxattr x;
	uint64_t k0;
	int found = xattr_find(ip, name, nlen, &k0, &x);
	if (found <= 0) {
		err = found < 0 ? found : -ENODATA;
		goto out_unlock;
	}
	*vlen = x.x_vallen;
	if (!buf)
		goto out_unlock; /* the length alone */
	if (size < x.x_vallen) {
		err = -ERANGE;
		goto out_unlock;
	}
	uint8_t *v = xmalloc(MAX(x.x_vallen, 1u));
	err = xattr_read_value(ip, k0, &x, v);
	if (!err)
		memcpy(buf, v, x.x_vallen);
	free(v);
out_unlock:
	rwlock_unlock(&ip->i_iolock);
	if (!err)
		counter_inc(&ip->i_fs->f_stats.xattr_gets);
	return err;
}

int fs_listxattr(struct fs_inode *ip, uint64_t cookie, fs_xattr_fn fn, void *arg)
{
	if (fs_is_shutdown(ip->i_fs))
		return -EIO;
	if (cookie == UINT64_MAX)
		return 0;
	rwlock_rdlock(&ip->i_iolock);
	int n = 0;
	if (ip->i_d.xattr_root) {
		struct bt bt;
		xattr_bt(ip, &bt);
		struct bt_cursor c;
		uint8_t *f0 = xmalloc(FS_BT_MAX_VALUE);
		n = bt_lookup(&bt, &(struct fs_btkey){cookie ? cookie + 1 : 0, 0}, BT_GE, &c);
		for (; n == 1; n = bt_next(&c)) {
			struct fs_btkey k;
			size_t l0;
			bt_get(&c, &k, f0, FS_BT_MAX_VALUE, &l0);
			if (k.k1 != 0)
				continue;
			struct fs_dxattr x;
			const char *nm, *why;
			int err = xattr_decode_head(f0, l0, &x, &nm, &why);
			if (err) {
				msg_err("fs: inode %llu: attribute %llx has %s",
					(unsigned long long)ip->i_ino, (unsigned long long)k.k0,
					why);
				n = err;
				break;
			}
			if (fn(arg, nm, x.x_namelen, x.x_vallen, k.k0))
				break;
		}
		bt_cursor_done(&c);
		free(f0);
	}
	rwlock_unlock(&ip->i_iolock);
	counter_inc(&ip->i_fs->f_stats.xattr_lists);
	return n < 0 ? n : 0;
}

int xattr_free_all(struct fs_inode *ip)
{
	struct fs *fs = ip->i_fs;
	assert_wrlocked(&ip->i_iolock);
	while (ip->i_d.xattr_root) {
		struct fstx *tx;
		unsigned most =
			XATTR_FREE_BATCH + FS_XATTR_NFRAGS(FS_XATTR_NAME_MAX, FS_XATTR_SIZE_MAX);
		int err = fstx_begin(fs, 0, xattr_log_res(ip, most, true), &tx);
		if (err)
			return err;
		fstx_unordered(tx);
		ino_join(tx, ip);
		unsigned freed = 0;
		uint8_t *f0 = xmalloc(FS_BT_MAX_VALUE);
		/* whole attributes (X5), at least one, until the batch is full */
		while (!err && ip->i_d.xattr_root && freed < XATTR_FREE_BATCH) {
			struct bt bt;
			xattr_bt(ip, &bt);
			struct bt_cursor c;
			int n = bt_lookup(&bt, &(struct fs_btkey){0, 0}, BT_GE, &c);
			struct fs_btkey k = {0, 0};
			size_t l0 = 0;
			if (n == 1)
				bt_get(&c, &k, f0, FS_BT_MAX_VALUE, &l0);
			bt_cursor_done(&c);
			struct fs_dxattr x;
			const char *nm, *why = NULL;
			if (n == 0 && !ip->i_d.xattr_count) {
				/* an empty tree left over: free it */
				err = bt_destroy(tx, &bt);
				ip->i_d.xattr_root = 0;
				ip->i_d.xattr_level = 0;
				ip->i_d.xattr_bytes = 0;
				ino_log(tx, ip, FS_ILOG_XATTR);
				break;
			}
			if (n < 0) {
				err = n;
			} else if (n == 0 || k.k1 != 0) {
				why = "an attribute tree that does not match its count";
			} else {
				err = xattr_decode_head(f0, l0, &x, &nm, &why);
			}
			if (why) {
				msg_err("fs: inode %llu: freeing its attributes found %s",
					(unsigned long long)ip->i_ino, why);
				err = -EUCLEAN;
			}
			if (!err) {
				err = xattr_remove_one(tx, ip, k.k0, &x);
				freed += x.x_nfrags;
			}
		}
		free(f0);
		if (err) {
			fstx_cancel(tx);
			return err;
		}
		err = fstx_commit(tx, NULL);
		if (err)
			return err;
		counter_inc(&fs->f_stats.xattr_frees);
	}
	return 0;
}
