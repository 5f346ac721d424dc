/*
 * rec.c - the durable record store (fs.h: fs_rec_*): small records a
 * protocol must find again after a restart, NFSv4's client records above
 * all, kept in a B+tree of their own through the journal like any other
 * metadata. docs/engine-records.md is the user's view; this is the design.
 *
 * Format (fs_format.h): the records tree is rooted in the superblock
 * (sb_rec_root; 0 until the first put makes it) and keyed by
 *     k0 = hash(key) | collision index << 1 | fragment
 * A record is one or two tree records ("fragments"): fragment 0 holds
 * struct fs_drec, the key and as much of the value as fits in a tree
 * record; fragment 1 the rest. The number of records is sb_rec_count.
 *
 * Invariants (check.c verifies each; tests cite them):
 *   R1 A record's fragments are written, replaced and removed in one
 *      transaction, so after a crash a record is there whole, as one put
 *      left it, or not at all (the journal's G1). The CRC in fragment 0
 *      covers the key and the whole value: check finds a torn pair.
 *   R2 Keys are unique. A record is filed under its own key's hash, and
 *      the collision indexes of one hash are distinct: a lookup reads the
 *      hash's run of tree records and compares keys.
 *   R3 sb_rec_count is the number of records, at most FS_REC_MAX; a put
 *      of a new key past it is refused (-ENOSPC) before anything changes.
 *   R4 Every block of the tree is owned once (check's block map), and the
 *      tree is never freed: an empty store keeps its (empty) root leaf.
 *
 * The hash is SipHash-2-4 keyed from the filesystem's secret (rec_mount),
 * so a client that picks keys (an NFSv4 client owner string) cannot make
 * them collide on purpose; a run of colliding keys is bounded by
 * FS_REC_MAX anyway.
 *
 * Locks: f_rec_lock (fs.records, 95) serializes the store. A put or delete takes
 * it before its transaction begins and holds it until the commit (as an
 * inode's I/O lock is held), so lookups and the count need no other lock;
 * readers take it for one lookup at a time, and iteration drops it
 * between records. The transaction takes the block allocation lock first
 * (FSTX_ALLOC): it changes the superblock (the count, the root), which
 * the allocator changes under that lock, and it may allocate or free tree
 * blocks.
 */
#include <stdlib.h>

#include "base/crc32c.h"
#include "base/mem.h"
#include "base/siphash.h"
#include "fs/fs_priv.h"

static struct lock_class rec_lock_class = LOCK_CLASS(FS_RECORDS);

/* Value bytes in fragment 0 for a key of klen bytes. */
#define FRAG0_ROOM(klen) (FS_BT_MAX_VALUE - sizeof(struct fs_drec) - (klen))

static void rec_set_root(struct bt *bt, struct fstx *tx, uint64_t root, uint16_t level)
{
	struct fs_dsb *sb = tx->fs->f_sb;
	fsbuf_join(tx, tx->fs->f_sbp);
	sb->sb_rec_root = htole64(root);
	sb->sb_rec_level = htole16(level);
	FS_LOG_SB_FIELD(tx, sb_rec_root);
	FS_LOG_SB_FIELD(tx, sb_rec_level);
}

static int rec_tree_alloc(struct bt *bt, struct fstx *tx, uint64_t *blkno)
{
	return alloc_bt_ops.alloc_block(bt, tx, blkno);
}

static void rec_tree_free(struct bt *bt, struct fstx *tx, uint64_t blkno)
{
	alloc_bt_ops.free_block(bt, tx, blkno);
}

static const struct bt_ops rec_bt_ops = {
	.set_root = rec_set_root,
	.alloc_block = rec_tree_alloc,
	.free_block = rec_tree_free,
};

static void rec_bt(struct fs *fs, struct bt *bt)
{
	*bt = (struct bt){
		.fs = fs,
		.v = fs_bt_verifier(FS_BT_REC_MAGIC),
		.root = le64toh(fs->f_sb->sb_rec_root),
		.level = le16toh(fs->f_sb->sb_rec_level),
		.ops = &rec_bt_ops,
	};
}

int rec_mount(struct fs *fs)
{
	mutex_init(&fs->f_rec_lock, &rec_lock_class);
	uint64_t k[2] = {siphash24(fs->f_secret, "records-0", 9),
			 siphash24(fs->f_secret, "records-1", 9)};
	memcpy(fs->f_rec_key, k, sizeof(k));
	return 0;
}

uint64_t rec_hash(struct fs *fs, const void *key, size_t len)
{
	uint64_t h = siphash24(fs->f_rec_key, key, len) & FS_REC_HASH_MASK;
	return h ? h : 1ull << 16; /* k0 0 stays unused, as in directories */
}

static uint32_t rec_crc(const void *key, size_t klen, const void *val, size_t vlen)
{
	return crc32c(crc32c(0, key, klen), val, vlen);
}

int rec_decode(const uint8_t *frag0, size_t len0, const uint8_t *frag1, size_t len1,
	       uint8_t key[FS_REC_KEY_MAX], size_t *klen, uint8_t val[FS_REC_VALUE_MAX],
	       size_t *vlen, unsigned *nfrags, const char **why)
{
	struct fs_drec d;
	*why = NULL;
	if (len0 < sizeof(d)) {
		*why = "a first fragment shorter than its header";
		return -EUCLEAN;
	}
	memcpy(&d, frag0, sizeof(d));
	size_t kl = d.r_keylen, vl = le16toh(d.r_vallen);
	size_t first = vl < FRAG0_ROOM(kl) ? vl : FRAG0_ROOM(kl);
	unsigned want = vl > first ? 2 : 1;
	if (!kl || kl > FS_REC_KEY_MAX || vl > FS_REC_VALUE_MAX)
		*why = "a key or value length out of bounds";
	else if (d.r_nfrags != want)
		*why = "the wrong number of fragments for its length";
	else if (len0 != sizeof(d) + kl + first)
		*why = "a first fragment of the wrong length";
	else if (want == 2 && !frag1)
		*why = "its second fragment missing";
	else if (want == 2 && len1 != vl - first)
		*why = "a second fragment of the wrong length";
	if (*why)
		return -EUCLEAN;
	memcpy(key, frag0 + sizeof(d), kl);
	memcpy(val, frag0 + sizeof(d) + kl, first);
	if (want == 2)
		memcpy(val + first, frag1, vl - first);
	if (rec_crc(key, kl, val, vl) != le32toh(d.r_crc)) {
		*why = "a CRC that does not match its key and value";
		return -EUCLEAN;
	}
	*klen = kl;
	*vlen = vl;
	*nfrags = want;
	return 0;
}

/* One record as the tree holds it. */
struct rec_buf {
	uint64_t k0; /* fragment 0's key word */
	unsigned nfrags;
	size_t klen, vlen;
	uint8_t key[FS_REC_KEY_MAX];
	uint8_t val[FS_REC_VALUE_MAX];
};

/* The record whose fragment 0 the cursor is on (it moves to fragment 1). */
static int rec_read(struct fs *fs, struct bt_cursor *c, struct rec_buf *r)
{
	uint8_t f0[FS_BT_MAX_VALUE], f1[FS_BT_MAX_VALUE];
	struct fs_btkey k, k1;
	size_t l0, l1 = 0;
	bt_get(c, &k, f0, sizeof(f0), &l0);
	struct fs_drec d;
	bool two = l0 >= sizeof(d) && (memcpy(&d, f0, sizeof(d)), d.r_nfrags == 2);
	int err = 0;
	if (two) {
		int n = bt_next(c);
		if (n < 0)
			return n;
		if (n == 1)
			bt_get(c, &k1, f1, sizeof(f1), &l1);
		if (n == 0 || k1.k0 != (k.k0 | 1))
			two = false; /* missing: rec_decode says so */
	}
	const char *why;
	err = rec_decode(f0, l0, two ? f1 : NULL, l1, r->key, &r->klen, r->val, &r->vlen,
			 &r->nfrags, &why);
	if (err)
		msg_err("fs: record %llx has %s", (unsigned long long)k.k0, why);
	r->k0 = k.k0;
	return err;
}

/*
 * Find key (R2): 1 and the record in *r (value too), or 0 and in *free_k0
 * the key word a new record of it gets (the hash and its first free
 * collision index). Store lock held.
 */
static int rec_find(struct fs *fs, const void *key, size_t klen, struct rec_buf *r,
		    uint64_t *free_k0)
{
	assert_locked(&fs->f_rec_lock);
	uint64_t h = rec_hash(fs, key, klen);
	*free_k0 = h;
	if (!le64toh(fs->f_sb->sb_rec_root))
		return 0;
	struct bt bt;
	rec_bt(fs, &bt);
	struct bt_cursor c;
	int n = bt_lookup(&bt, &(struct fs_btkey){h, 0}, BT_GE, &c);
	unsigned next_idx = 0;
	bool have_free = false;
	for (; n == 1; n = bt_next(&c)) {
		struct fs_btkey k;
		bt_get(&c, &k, NULL, 0, NULL);
		if ((k.k0 & FS_REC_HASH_MASK) != h)
			break;
		if (k.k0 & 1)
			continue; /* a second fragment: read with its first */
		unsigned idx = (unsigned)(k.k0 >> 1) & FS_REC_IDX_MAX;
		if (!have_free && idx != next_idx) {
			*free_k0 = h | (uint64_t)next_idx << 1;
			have_free = true;
		}
		next_idx = idx + 1;
		int err = rec_read(fs, &c, r);
		if (err) {
			n = err;
			break;
		}
		if (r->klen == klen && !memcmp(r->key, key, klen)) {
			bt_cursor_done(&c);
			return 1;
		}
	}
	bt_cursor_done(&c);
	if (n < 0)
		return n;
	if (!have_free) {
		if (next_idx > FS_REC_IDX_MAX)
			return -EUCLEAN; /* more colliding records than FS_REC_MAX */
		*free_k0 = h | (uint64_t)next_idx << 1;
	}
	return 0;
}

static int check_key(size_t klen)
{
	return klen && klen <= FS_REC_KEY_MAX ? 0 : -EINVAL;
}

/* Blocks a put or delete may allocate: a split per tree change, and a new
 * root, for up to four changes (a replace of both fragments). */
static uint64_t rec_blocks(struct fs *fs)
{
	return 4 * ((uint64_t)le16toh(fs->f_sb->sb_rec_level) + 2) + 2;
}

int fs_rec_put(struct fs *fs, const void *key, size_t klen, const void *val, size_t vlen,
	       struct fs_result *res)
{
	res_init(res);
	if (check_key(klen) || vlen > FS_REC_VALUE_MAX)
		return -EINVAL;
	if (fs_is_shutdown(fs))
		return -EIO;
	/* the new fragments, built before anything is locked */
	uint8_t f0[FS_BT_MAX_VALUE];
	size_t first = vlen < FRAG0_ROOM(klen) ? vlen : FRAG0_ROOM(klen);
	unsigned nfrags = vlen > first ? 2 : 1;
	struct fs_drec d = {.r_vallen = htole16((uint16_t)vlen),
			    .r_keylen = (uint8_t)klen,
			    .r_nfrags = (uint8_t)nfrags,
			    .r_crc = htole32(rec_crc(key, klen, val, vlen))};
	memcpy(f0, &d, sizeof(d));
	memcpy(f0 + sizeof(d), key, klen);
	if (first)
		memcpy(f0 + sizeof(d) + klen, val, first);
	size_t l0 = sizeof(d) + klen + first;
	const uint8_t *f1 = (const uint8_t *)val + first;
	size_t l1 = vlen - first;

	mutex_lock(&fs->f_rec_lock);
	struct fstx *tx;
	int err = fstx_begin(fs, rec_blocks(fs), 0, &tx);
	if (err)
		goto out_unlock;
	fstx_lock(tx, FSTX_ALLOC);
	struct rec_buf *old = xmalloc(sizeof(*old));
	uint64_t k0;
	int found = rec_find(fs, key, klen, old, &k0);
	uint32_t count = le32toh(fs->f_sb->sb_rec_count);
	if (found < 0 || (!found && count >= FS_REC_MAX)) {
		err = found < 0 ? found : -ENOSPC;
		fstx_cancel(tx); /* nothing changed yet */
		goto out_free;
	}
	struct bt bt;
	rec_bt(fs, &bt);
	if (!bt.root)
		err = bt_create(tx, &bt);
	if (found) {
		/* R1: both fragments change in this transaction */
		k0 = old->k0;
		if (!err)
			err = bt_update(tx, &bt, &(struct fs_btkey){k0, 0}, f0, l0);
		if (!err && nfrags == 2 && old->nfrags == 2)
			err = bt_update(tx, &bt, &(struct fs_btkey){k0 | 1, 0}, f1, l1);
		else if (!err && nfrags == 2)
			err = bt_insert(tx, &bt, &(struct fs_btkey){k0 | 1, 0}, f1, l1);
		else if (!err && old->nfrags == 2)
			err = bt_delete(tx, &bt, &(struct fs_btkey){k0 | 1, 0});
	} else {
		if (!err)
			err = bt_insert(tx, &bt, &(struct fs_btkey){k0, 0}, f0, l0);
		if (!err && nfrags == 2)
			err = bt_insert(tx, &bt, &(struct fs_btkey){k0 | 1, 0}, f1, l1);
		if (!err) {
			fsbuf_join(tx, fs->f_sbp);
			fs->f_sb->sb_rec_count = htole32(count + 1);
			FS_LOG_SB_FIELD(tx, sb_rec_count);
		}
	}
	if (err) {
		fstx_cancel(tx); /* changed the tree: shuts down */
		goto out_free;
	}
	err = fstx_commit(tx, res);
	if (!err)
		counter_inc(&fs->f_stats.rec_puts);
out_free:
	free(old);
out_unlock:
	mutex_unlock(&fs->f_rec_lock);
	return err;
}

int fs_rec_delete(struct fs *fs, const void *key, size_t klen, struct fs_result *res)
{
	res_init(res);
	if (check_key(klen))
		return -EINVAL;
	if (fs_is_shutdown(fs))
		return -EIO;
	mutex_lock(&fs->f_rec_lock);
	struct fstx *tx;
	int err = fstx_begin(fs, rec_blocks(fs), 0, &tx);
	if (err)
		goto out_unlock;
	fstx_lock(tx, FSTX_ALLOC);
	struct rec_buf *old = xmalloc(sizeof(*old));
	uint64_t k0;
	int found = rec_find(fs, key, klen, old, &k0);
	if (found <= 0) {
		err = found < 0 ? found : -ENOENT;
		fstx_cancel(tx); /* nothing changed */
		goto out_free;
	}
	struct bt bt;
	rec_bt(fs, &bt);
	err = bt_delete(tx, &bt, &(struct fs_btkey){old->k0, 0});
	if (!err && old->nfrags == 2)
		err = bt_delete(tx, &bt, &(struct fs_btkey){old->k0 | 1, 0});
	if (!err) {
		fsbuf_join(tx, fs->f_sbp);
		fs->f_sb->sb_rec_count = htole32(le32toh(fs->f_sb->sb_rec_count) - 1);
		FS_LOG_SB_FIELD(tx, sb_rec_count);
	}
	if (err) {
		fstx_cancel(tx); /* changed the tree: shuts down */
		goto out_free;
	}
	err = fstx_commit(tx, res);
	if (!err)
		counter_inc(&fs->f_stats.rec_deletes);
out_free:
	free(old);
out_unlock:
	mutex_unlock(&fs->f_rec_lock);
	return err;
}

int fs_rec_get(struct fs *fs, const void *key, size_t klen, void *val, size_t *vlen)
{
	if (check_key(klen))
		return -EINVAL;
	if (fs_is_shutdown(fs))
		return -EIO;
	struct rec_buf *r = xmalloc(sizeof(*r));
	uint64_t k0;
	mutex_lock(&fs->f_rec_lock);
	int found = rec_find(fs, key, klen, r, &k0);
	mutex_unlock(&fs->f_rec_lock);
	int err = found < 0 ? found : found ? 0 : -ENOENT;
	if (!err) {
		memcpy(val, r->val, r->vlen);
		*vlen = r->vlen;
	}
	free(r);
	return err;
}

int fs_rec_iterate(struct fs *fs, fs_rec_fn fn, void *arg)
{
	struct rec_buf *r = xmalloc(sizeof(*r));
	uint64_t next = 0;
	int err = 0;
	for (;;) {
		if (fs_is_shutdown(fs)) {
			err = -EIO;
			break;
		}
		/* one record under the lock, then fn with no lock held */
		mutex_lock(&fs->f_rec_lock);
		int n = 0;
		if (le64toh(fs->f_sb->sb_rec_root)) {
			struct bt bt;
			rec_bt(fs, &bt);
			struct bt_cursor c;
			n = bt_lookup(&bt, &(struct fs_btkey){next, 0}, BT_GE, &c);
			if (n == 1) {
				struct fs_btkey k;
				bt_get(&c, &k, NULL, 0, NULL);
				if (k.k0 & 1) {
					msg_err("fs: record %llx has no first fragment",
						(unsigned long long)k.k0);
					n = -EUCLEAN;
				} else if (k.k0 < next) {
					/* a damaged node sent the lookup back: without
					 * this, the walk would never end */
					msg_err("fs: record tree is out of order at %llx",
						(unsigned long long)k.k0);
					n = -EUCLEAN;
				} else {
					n = rec_read(fs, &c, r);
					n = n ? n : 1;
				}
			}
			bt_cursor_done(&c);
		}
		mutex_unlock(&fs->f_rec_lock);
		if (n <= 0) {
			err = n;
			break;
		}
		next = (r->k0 | 1) + 1;
		assert_none_held(0, LOCK_RANK_FS_LAYOUT); /* fn: no engine lock (fs.h) */
		if (fn(arg, r->key, r->klen, r->val, r->vlen) || next == 0)
			break;
	}
	free(r);
	return err;
}

uint32_t fs_rec_count(struct fs *fs)
{
	mutex_lock(&fs->f_rec_lock);
	uint32_t n = le32toh(fs->f_sb->sb_rec_count);
	mutex_unlock(&fs->f_rec_lock);
	return n;
}
