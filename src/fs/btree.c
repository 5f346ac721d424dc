/*
 * btree.c - B+trees with 16-byte keys and variable-length values.
 *
 * Leaves hold records {key, vlen, value} in a data area growing down from
 * the end of the block, and a slot array of offsets in key order growing up
 * after the header. Nodes hold {key, child} entries; child i holds the keys
 * >= key i and < key i+1. Search never compares key 0 (a key below it goes
 * to child 0), but an insert below it lowers it, so that key 0 stays a true
 * lower bound and a separator split out of child 0 is always above it.
 *
 * Concurrency: the tree code is single-threaded per tree; callers hold the
 * tree's lock (the directory's or file's I/O lock, the allocation locks) for
 * reads and changes alike. Changes happen inside a transaction: every
 * changed block is joined and its changed bytes logged.
 *
 * Invariants (checked by the verifier on read, and by jnfs check):
 *   T1 keys strictly increase within a block and across the tree;
 *   T2 every non-root leaf holds at least one record, every non-root node at
 *      least one entry (empty ones are freed and unlinked);
 *   T3 a node's level is one more than its children's, leaves are level 0.
 */
#include <stdlib.h>

#include "base/mem.h"
#include "fs/fs_priv.h"

#define HDR_SIZE ((unsigned)sizeof(struct fs_bthdr))

static struct fs_bthdr *hdr(struct fsbuf *bp)
{
	return (struct fs_bthdr *)bp->b_data;
}

static unsigned nrecs(struct fsbuf *bp)
{
	return le16toh(hdr(bp)->bh_nrecs);
}

static unsigned blevel(struct fsbuf *bp)
{
	return le16toh(hdr(bp)->bh_level);
}

static void set_nrecs(struct fsbuf *bp, unsigned n)
{
	hdr(bp)->bh_nrecs = htole16((uint16_t)n);
}

/* ---- leaf access ---- */

static uint16_t *slots(struct fsbuf *bp)
{
	return (uint16_t *)(bp->b_data + HDR_SIZE);
}

static unsigned slot_off(struct fsbuf *bp, unsigned i)
{
	return le16toh(slots(bp)[i]);
}

static void rec_key(struct fsbuf *bp, unsigned i, struct fs_btkey *k)
{
	memcpy(k, bp->b_data + slot_off(bp, i), sizeof(*k));
	k->k0 = le64toh(k->k0);
	k->k1 = le64toh(k->k1);
}

static unsigned rec_vlen(struct fsbuf *bp, unsigned i)
{
	uint16_t v;
	memcpy(&v, bp->b_data + slot_off(bp, i) + sizeof(struct fs_btkey), 2);
	return le16toh(v);
}

static uint8_t *rec_val(struct fsbuf *bp, unsigned i)
{
	return bp->b_data + slot_off(bp, i) + FS_BT_REC_HDR;
}

static unsigned leaf_data(struct fsbuf *bp)
{
	return le16toh(hdr(bp)->bh_data);
}

/* Contiguous free bytes between the slot array and the data area. */
static unsigned leaf_free_contig(struct fsbuf *bp)
{
	return leaf_data(bp) - HDR_SIZE - 2 * nrecs(bp);
}

/* Free bytes if the data area were compacted. */
static unsigned leaf_free_total(struct fsbuf *bp)
{
	unsigned used = HDR_SIZE + 2 * nrecs(bp);
	for (unsigned i = 0; i < nrecs(bp); i++)
		used += FS_BT_REC_HDR + rec_vlen(bp, i);
	return FS_BLOCK_SIZE - used;
}

/* ---- node access ---- */

static struct fs_btnode_ent *ents(struct fsbuf *bp)
{
	return (struct fs_btnode_ent *)(bp->b_data + HDR_SIZE);
}

static void ent_key(struct fsbuf *bp, unsigned i, struct fs_btkey *k)
{
	k->k0 = le64toh(ents(bp)[i].key.k0);
	k->k1 = le64toh(ents(bp)[i].key.k1);
}

static uint64_t ent_child(struct fsbuf *bp, unsigned i)
{
	return le64toh(ents(bp)[i].child);
}

static void ent_set(struct fsbuf *bp, unsigned i, const struct fs_btkey *k, uint64_t child)
{
	ents(bp)[i].key.k0 = htole64(k->k0);
	ents(bp)[i].key.k1 = htole64(k->k1);
	ents(bp)[i].child = htole64(child);
}

/* ---- blocks ---- */

static void init_block(struct bt *bt, struct fsbuf *bp, unsigned level)
{
	memset(bp->b_data, 0, FS_BLOCK_SIZE);
	struct fs_bthdr *h = hdr(bp);
	h->bh_magic = htole32(bt->v->magic);
	h->bh_blkno = htole64(bp->b_blkno);
	h->bh_owner = htole64(bt->owner);
	memcpy(h->bh_uuid, bt->fs->f_uuid, 16);
	h->bh_level = htole16((uint16_t)level);
	h->bh_data = htole16(FS_BLOCK_SIZE);
}

static int new_block(struct fstx *tx, struct bt *bt, unsigned level, struct fsbuf **bpp)
{
	uint64_t blkno;
	int err = bt->ops->alloc_block(bt, tx, &blkno);
	if (err)
		return err;
	struct fsbuf *bp = fsbuf_get_new(bt->fs, blkno, bt->v);
	fsbuf_join(tx, bp);
	init_block(bt, bp, level);
	fsbuf_log(tx, bp, 0, FS_BLOCK_SIZE);
	fsbuf_rele(bp); /* the transaction holds it */
	*bpp = bp;
	return 0;
}

static void free_block(struct fstx *tx, struct bt *bt, struct fsbuf *bp)
{
	fsbuf_join(tx, bp);
	fsbuf_cancel(tx, bp);
	bt->ops->free_block(bt, tx, bp->b_blkno);
}

static int read_block(struct bt *bt, uint64_t blkno, unsigned want_level, struct fsbuf **bpp)
{
	int err = fsbuf_read(bt->fs, blkno, bt->v, bt->owner, bpp);
	if (err)
		return err;
	if (blevel(*bpp) != want_level) {
		msg_err("fs: %s tree block %llu has level %u, expected %u", bt->v->name,
			(unsigned long long)blkno, blevel(*bpp), want_level);
		fsbuf_rele(*bpp);
		*bpp = NULL;
		return -EUCLEAN;
	}
	return 0;
}

/* ---- search ---- */

/* Node: the last entry whose key <= key, or 0. */
static unsigned node_search(struct fsbuf *bp, const struct fs_btkey *key)
{
	unsigned lo = 1, hi = nrecs(bp);
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		struct fs_btkey k;
		ent_key(bp, mid, &k);
		if (bt_keycmp(&k, key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* Leaf: the first record whose key >= key (nrecs if none). */
static unsigned leaf_search(struct fsbuf *bp, const struct fs_btkey *key)
{
	unsigned lo = 0, hi = nrecs(bp);
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		struct fs_btkey k;
		rec_key(bp, mid, &k);
		if (bt_keycmp(&k, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void bt_cursor_done(struct bt_cursor *c)
{
	for (int d = 0; d < c->depth; d++) {
		if (c->path[d].bp)
			fsbuf_rele(c->path[d].bp);
		c->path[d].bp = NULL;
	}
	c->depth = 0;
}

/* Descend from path level d (a node) to the leftmost or rightmost leaf of
 * the child at its current index. */
static int descend(struct bt_cursor *c, int d, bool leftmost)
{
	struct bt *bt = c->bt;
	for (; d < c->depth - 1; d++) {
		struct fsbuf *bp = c->path[d].bp;
		uint64_t child = ent_child(bp, (unsigned)c->path[d].idx);
		struct fsbuf *cb;
		int err = read_block(bt, child, blevel(bp) - 1, &cb);
		if (err)
			return err;
		if (c->path[d + 1].bp)
			fsbuf_rele(c->path[d + 1].bp);
		c->path[d + 1].bp = cb;
		int n = (int)nrecs(cb);
		c->path[d + 1].idx = leftmost ? 0 : (n ? n - 1 : 0);
	}
	return 0;
}

static int walk_path(struct bt *bt, const struct fs_btkey *key, struct bt_cursor *c)
{
	memset(c, 0, sizeof(*c));
	c->bt = bt;
	c->depth = bt->level + 1;
	uint64_t blkno = bt->root;
	for (int d = 0; d < c->depth; d++) {
		unsigned lvl = bt->level - (unsigned)d;
		struct fsbuf *bp;
		int err = read_block(bt, blkno, lvl, &bp);
		if (err) {
			bt_cursor_done(c);
			return err;
		}
		c->path[d].bp = bp;
		if (lvl > 0) {
			if (nrecs(bp) == 0) {
				msg_err("fs: %s tree node %llu is empty", bt->v->name,
					(unsigned long long)blkno);
				bt_cursor_done(c);
				return -EUCLEAN;
			}
			unsigned i = node_search(bp, key);
			c->path[d].idx = (int)i;
			blkno = ent_child(bp, i);
		} else {
			c->path[d].idx = (int)leaf_search(bp, key);
		}
	}
	return 0;
}

static struct fsbuf *leaf_of(struct bt_cursor *c)
{
	return c->path[c->depth - 1].bp;
}

int bt_next(struct bt_cursor *c)
{
	int leaf = c->depth - 1;
	struct fsbuf *lb = c->path[leaf].bp;
	if (c->path[leaf].idx + 1 < (int)nrecs(lb)) {
		c->path[leaf].idx++;
		return 1;
	}
	for (int d = leaf - 1; d >= 0; d--) {
		if (c->path[d].idx + 1 < (int)nrecs(c->path[d].bp)) {
			c->path[d].idx++;
			int err = descend(c, d, true);
			if (err)
				return err;
			if (nrecs(leaf_of(c)) == 0)
				return bt_next(c);
			return 1;
		}
	}
	c->path[leaf].idx = (int)nrecs(lb);
	return 0;
}

int bt_prev(struct bt_cursor *c)
{
	int leaf = c->depth - 1;
	if (c->path[leaf].idx > 0) {
		c->path[leaf].idx--;
		return 1;
	}
	for (int d = leaf - 1; d >= 0; d--) {
		if (c->path[d].idx > 0) {
			c->path[d].idx--;
			int err = descend(c, d, false);
			if (err)
				return err;
			if (nrecs(leaf_of(c)) == 0)
				return bt_prev(c);
			return 1;
		}
	}
	return 0;
}

int bt_lookup(struct bt *bt, const struct fs_btkey *key, enum bt_dir dir, struct bt_cursor *c)
{
	int err = walk_path(bt, key, c);
	if (err)
		return err;
	struct fsbuf *lb = leaf_of(c);
	int leaf = c->depth - 1;
	unsigned pos = (unsigned)c->path[leaf].idx, n = nrecs(lb);
	struct fs_btkey k;
	bool exact = false;
	if (pos < n) {
		rec_key(lb, pos, &k);
		exact = bt_keycmp(&k, key) == 0;
	}
	switch (dir) {
	case BT_EQ:
		return exact;
	case BT_GE:
		if (pos < n)
			return 1;
		c->path[leaf].idx = n ? (int)n - 1 : 0;
		if (!n)
			return 0;
		return bt_next(c);
	case BT_LE:
		if (exact)
			return 1;
		if (pos > 0) {
			c->path[leaf].idx = (int)pos - 1;
			return 1;
		}
		c->path[leaf].idx = 0;
		return bt_prev(c);
	}
	return 0;
}

void bt_get(struct bt_cursor *c, struct fs_btkey *key, void *val, size_t max, size_t *len)
{
	struct fsbuf *lb = leaf_of(c);
	unsigned i = (unsigned)c->path[c->depth - 1].idx;
	if (key)
		rec_key(lb, i, key);
	unsigned vlen = rec_vlen(lb, i);
	if (val)
		memcpy(val, rec_val(lb, i), MIN((size_t)vlen, max));
	if (len)
		*len = vlen;
}

/* ---- changes ---- */

struct rec {
	struct fs_btkey key;
	uint16_t vlen;
	const uint8_t *val;
};

/* Rewrite a leaf from scratch with recs (key order). */
static void leaf_build(struct fsbuf *bp, const struct rec *recs, unsigned n, uint8_t *scratch)
{
	/* values may point into bp itself: copy them out first */
	unsigned total = 0;
	for (unsigned i = 0; i < n; i++)
		total += recs[i].vlen;
	BUG_ON(total > FS_BLOCK_SIZE);
	unsigned o = 0;
	for (unsigned i = 0; i < n; i++) {
		if (recs[i].vlen)
			memcpy(scratch + o, recs[i].val, recs[i].vlen);
		o += recs[i].vlen;
	}
	struct fs_bthdr save = *hdr(bp);
	memset(bp->b_data, 0, FS_BLOCK_SIZE);
	*hdr(bp) = save;
	unsigned data = FS_BLOCK_SIZE;
	o = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned sz = FS_BT_REC_HDR + recs[i].vlen;
		data -= sz;
		BUG_ON(data < HDR_SIZE + 2 * n);
		struct fs_btkey k = {htole64(recs[i].key.k0), htole64(recs[i].key.k1)};
		memcpy(bp->b_data + data, &k, sizeof(k));
		uint16_t vl = htole16(recs[i].vlen);
		memcpy(bp->b_data + data + sizeof(k), &vl, 2);
		memcpy(bp->b_data + data + FS_BT_REC_HDR, scratch + o, recs[i].vlen);
		o += recs[i].vlen;
		slots(bp)[i] = htole16((uint16_t)data);
	}
	set_nrecs(bp, n);
	hdr(bp)->bh_data = htole16((uint16_t)data);
}

static unsigned leaf_gather(struct fsbuf *bp, struct rec *recs)
{
	unsigned n = nrecs(bp);
	for (unsigned i = 0; i < n; i++) {
		rec_key(bp, i, &recs[i].key);
		recs[i].vlen = (uint16_t)rec_vlen(bp, i);
		recs[i].val = rec_val(bp, i);
	}
	return n;
}

/* Put record at slot pos of a leaf with room; logs what changed. */
static void leaf_put(struct fstx *tx, struct fsbuf *bp, unsigned pos, const struct rec *r)
{
	unsigned n = nrecs(bp);
	unsigned sz = FS_BT_REC_HDR + r->vlen;
	unsigned data = leaf_data(bp) - sz;
	struct fs_btkey k = {htole64(r->key.k0), htole64(r->key.k1)};
	memcpy(bp->b_data + data, &k, sizeof(k));
	uint16_t vl = htole16(r->vlen);
	memcpy(bp->b_data + data + sizeof(k), &vl, 2);
	if (r->vlen)
		memcpy(bp->b_data + data + FS_BT_REC_HDR, r->val, r->vlen);
	memmove(&slots(bp)[pos + 1], &slots(bp)[pos], (n - pos) * 2);
	slots(bp)[pos] = htole16((uint16_t)data);
	set_nrecs(bp, n + 1);
	hdr(bp)->bh_data = htole16((uint16_t)data);
	fsbuf_log(tx, bp, 0, HDR_SIZE + 2 * (n + 1));
	fsbuf_log(tx, bp, data, sz);
}

static int node_insert(struct fstx *tx, struct bt *bt, struct bt_cursor *c, int d,
		       const struct fs_btkey *key, uint64_t child);

/* Grow the tree: a new root above the current one, then insert the
 * separator for `right`. */
static int new_root(struct fstx *tx, struct bt *bt, struct fsbuf *left, const struct fs_btkey *sep,
		    uint64_t right)
{
	struct fsbuf *rb;
	if (bt->level + 1 >= FS_BT_MAXLEVELS) {
		msg_err("fs: %s tree is too tall", bt->v->name);
		return -EFBIG;
	}
	int err = new_block(tx, bt, bt->level + 1, &rb);
	if (err)
		return err;
	struct fs_btkey lkey;
	if (blevel(left) > 0)
		ent_key(left, 0, &lkey);
	else if (nrecs(left))
		rec_key(left, 0, &lkey);
	else
		lkey = (struct fs_btkey){0, 0};
	ent_set(rb, 0, &lkey, left->b_blkno);
	ent_set(rb, 1, sep, right);
	set_nrecs(rb, 2);
	fsbuf_log(tx, rb, 0, HDR_SIZE + 2 * sizeof(struct fs_btnode_ent));
	bt->root = rb->b_blkno;
	bt->level++;
	bt->ops->set_root(bt, tx, bt->root, bt->level);
	return 0;
}

/* Insert {key, child} into the node at path level d, after its current index. */
static int node_insert(struct fstx *tx, struct bt *bt, struct bt_cursor *c, int d,
		       const struct fs_btkey *key, uint64_t child)
{
	if (d < 0)
		return new_root(tx, bt, c->path[0].bp, key, child);
	struct fsbuf *bp = c->path[d].bp;
	fsbuf_join(tx, bp);
	unsigned n = nrecs(bp), pos = (unsigned)c->path[d].idx + 1;
	if (n < FS_BT_NODE_MAX) {
		memmove(&ents(bp)[pos + 1], &ents(bp)[pos], (n - pos) * sizeof(struct fs_btnode_ent));
		ent_set(bp, pos, key, child);
		set_nrecs(bp, n + 1);
		fsbuf_log(tx, bp, 0, HDR_SIZE);
		fsbuf_log(tx, bp, HDR_SIZE + pos * sizeof(struct fs_btnode_ent),
			  (n + 1 - pos) * sizeof(struct fs_btnode_ent));
		return 0;
	}
	/* split: entries [0, half) stay, [half, n] move to a new node */
	struct fs_btnode_ent *all = xmalloc((n + 1) * sizeof(*all));
	memcpy(all, ents(bp), pos * sizeof(*all));
	all[pos].key.k0 = htole64(key->k0);
	all[pos].key.k1 = htole64(key->k1);
	all[pos].child = htole64(child);
	memcpy(all + pos + 1, ents(bp) + pos, (n - pos) * sizeof(*all));
	unsigned half = (n + 1) / 2;
	struct fsbuf *nb;
	int err = new_block(tx, bt, blevel(bp), &nb);
	if (err) {
		free(all);
		return err;
	}
	memcpy(ents(bp), all, half * sizeof(*all));
	memset(ents(bp) + half, 0, (FS_BT_NODE_MAX - half) * sizeof(*all));
	set_nrecs(bp, half);
	memcpy(ents(nb), all + half, (n + 1 - half) * sizeof(*all));
	set_nrecs(nb, n + 1 - half);
	fsbuf_log(tx, bp, 0, FS_BLOCK_SIZE);
	fsbuf_log(tx, nb, 0, FS_BLOCK_SIZE);
	free(all);
	struct fs_btkey sep;
	ent_key(nb, 0, &sep);
	return node_insert(tx, bt, c, d - 1, &sep, nb->b_blkno);
}

static int leaf_insert(struct fstx *tx, struct bt *bt, struct bt_cursor *c, const struct rec *r)
{
	int leaf = c->depth - 1;
	struct fsbuf *bp = c->path[leaf].bp;
	unsigned pos = (unsigned)c->path[leaf].idx;
	unsigned need = 2 + FS_BT_REC_HDR + r->vlen;
	fsbuf_join(tx, bp);
	if (leaf_free_contig(bp) < need && leaf_free_total(bp) >= need) {
		struct rec *recs = xmalloc((nrecs(bp) + 1) * sizeof(*recs));
		uint8_t *scratch = xmalloc(FS_BLOCK_SIZE);
		unsigned n = leaf_gather(bp, recs);
		leaf_build(bp, recs, n, scratch);
		fsbuf_log(tx, bp, 0, FS_BLOCK_SIZE);
		free(recs);
		free(scratch);
	}
	if (leaf_free_contig(bp) >= need) {
		leaf_put(tx, bp, pos, r);
		return 0;
	}
	/* split the leaf: gather every record with the new one in place */
	unsigned n = nrecs(bp);
	struct rec *recs = xmalloc((n + 1) * sizeof(*recs));
	leaf_gather(bp, recs);
	memmove(recs + pos + 1, recs + pos, (n - pos) * sizeof(*recs));
	recs[pos] = *r;
	n++;
	unsigned cut;
	if (pos == n - 1) {
		cut = n - 1; /* appending: the new leaf starts with the new record */
	} else if (pos == 0) {
		cut = 1;
	} else {
		unsigned total = 0, acc = 0;
		for (unsigned i = 0; i < n; i++)
			total += 2 + FS_BT_REC_HDR + recs[i].vlen;
		for (cut = 0; cut < n - 1 && acc + 2 + FS_BT_REC_HDR + recs[cut].vlen <= total / 2;
		     cut++)
			acc += 2 + FS_BT_REC_HDR + recs[cut].vlen;
		if (cut == 0)
			cut = 1;
	}
	struct fsbuf *nb;
	int err = new_block(tx, bt, 0, &nb);
	if (err) {
		free(recs);
		return err;
	}
	uint8_t *scratch = xmalloc(FS_BLOCK_SIZE);
	/* the right half first: recs point into bp, which leaf_build rewrites */
	leaf_build(nb, recs + cut, n - cut, scratch);
	leaf_build(bp, recs, cut, scratch);
	free(scratch);
	fsbuf_log(tx, bp, 0, FS_BLOCK_SIZE);
	fsbuf_log(tx, nb, 0, FS_BLOCK_SIZE);
	struct fs_btkey sep;
	rec_key(nb, 0, &sep);
	free(recs);
	return node_insert(tx, bt, c, leaf - 1, &sep, nb->b_blkno);
}

int bt_insert(struct fstx *tx, struct bt *bt, const struct fs_btkey *key, const void *val,
	      size_t len)
{
	BUG_ON(len > FS_BT_MAX_VALUE);
	struct bt_cursor c;
	int found = bt_lookup(bt, key, BT_EQ, &c);
	if (found < 0)
		return found;
	int err = -EEXIST;
	if (!found) {
		/* below a node's first key: lower it (see the header) */
		for (int d = 0; d < c.depth - 1; d++) {
			struct fsbuf *nb = c.path[d].bp;
			struct fs_btkey k0;
			ent_key(nb, 0, &k0);
			if (c.path[d].idx == 0 && bt_keycmp(key, &k0) < 0) {
				fsbuf_join(tx, nb);
				ent_set(nb, 0, key, ent_child(nb, 0));
				fsbuf_log(tx, nb, HDR_SIZE, sizeof(struct fs_btnode_ent));
			}
		}
		struct rec r = {.key = *key, .vlen = (uint16_t)len, .val = val};
		err = leaf_insert(tx, bt, &c, &r);
	}
	bt_cursor_done(&c);
	return err;
}

/* Remove the entry at path level d; unlink blocks that become empty. */
static int node_remove(struct fstx *tx, struct bt *bt, struct bt_cursor *c, int d)
{
	struct fsbuf *bp = c->path[d].bp;
	unsigned n = nrecs(bp), pos = (unsigned)c->path[d].idx;
	if (n == 1 && d > 0) {
		free_block(tx, bt, bp);
		return node_remove(tx, bt, c, d - 1);
	}
	fsbuf_join(tx, bp);
	memmove(&ents(bp)[pos], &ents(bp)[pos + 1], (n - pos - 1) * sizeof(struct fs_btnode_ent));
	memset(&ents(bp)[n - 1], 0, sizeof(struct fs_btnode_ent));
	set_nrecs(bp, n - 1);
	fsbuf_log(tx, bp, 0, HDR_SIZE);
	fsbuf_log(tx, bp, HDR_SIZE + pos * sizeof(struct fs_btnode_ent),
		  (n - pos) * sizeof(struct fs_btnode_ent));
	if (d == 0) {
		/* a root node with one child: the child becomes the root */
		while (bt->level > 0 && nrecs(c->path[0].bp) == 1) {
			struct fsbuf *root = c->path[0].bp;
			uint64_t child = ent_child(root, 0);
			free_block(tx, bt, root);
			bt->root = child;
			bt->level--;
			bt->ops->set_root(bt, tx, bt->root, bt->level);
			if (bt->level == 0)
				break;
			/* re-read the new root for the next round */
			struct fsbuf *nr;
			int err = read_block(bt, child, bt->level, &nr);
			if (err)
				return err;
			fsbuf_rele(c->path[0].bp);
			c->path[0].bp = nr;
		}
	}
	return 0;
}

int bt_delete(struct fstx *tx, struct bt *bt, const struct fs_btkey *key)
{
	struct bt_cursor c;
	int found = bt_lookup(bt, key, BT_EQ, &c);
	if (found <= 0) {
		if (!found)
			bt_cursor_done(&c);
		return found < 0 ? found : -ENOENT;
	}
	int leaf = c.depth - 1;
	struct fsbuf *bp = c.path[leaf].bp;
	unsigned n = nrecs(bp), pos = (unsigned)c.path[leaf].idx;
	int err = 0;
	if (n == 1 && leaf > 0) {
		free_block(tx, bt, bp);
		err = node_remove(tx, bt, &c, leaf - 1);
	} else {
		fsbuf_join(tx, bp);
		memmove(&slots(bp)[pos], &slots(bp)[pos + 1], (n - pos - 1) * 2);
		slots(bp)[n - 1] = 0;
		set_nrecs(bp, n - 1);
		fsbuf_log(tx, bp, 0, HDR_SIZE + 2 * n);
	}
	bt_cursor_done(&c);
	return err;
}

int bt_update(struct fstx *tx, struct bt *bt, const struct fs_btkey *key, const void *val,
	      size_t len)
{
	BUG_ON(len > FS_BT_MAX_VALUE);
	struct bt_cursor c;
	int found = bt_lookup(bt, key, BT_EQ, &c);
	if (found <= 0) {
		if (!found)
			bt_cursor_done(&c);
		return found < 0 ? found : -ENOENT;
	}
	struct fsbuf *bp = leaf_of(&c);
	unsigned i = (unsigned)c.path[c.depth - 1].idx;
	if (rec_vlen(bp, i) == len) {
		fsbuf_join(tx, bp);
		memcpy(rec_val(bp, i), val, len);
		fsbuf_log(tx, bp, (uint32_t)(rec_val(bp, i) - bp->b_data), (uint32_t)len);
		bt_cursor_done(&c);
		return 0;
	}
	bt_cursor_done(&c);
	int err = bt_delete(tx, bt, key);
	if (!err)
		err = bt_insert(tx, bt, key, val, len);
	return err;
}

int bt_create(struct fstx *tx, struct bt *bt)
{
	struct fsbuf *bp;
	int err = new_block(tx, bt, 0, &bp);
	if (err)
		return err;
	bt->root = bp->b_blkno;
	bt->level = 0;
	bt->ops->set_root(bt, tx, bt->root, 0);
	return 0;
}

static int destroy_rec(struct fstx *tx, struct bt *bt, uint64_t blkno, unsigned level)
{
	struct fsbuf *bp;
	int err = read_block(bt, blkno, level, &bp);
	if (err)
		return err;
	if (level > 0) {
		for (unsigned i = 0; i < nrecs(bp) && !err; i++)
			err = destroy_rec(tx, bt, ent_child(bp, i), level - 1);
	}
	if (!err)
		free_block(tx, bt, bp);
	fsbuf_rele(bp);
	return err;
}

int bt_destroy(struct fstx *tx, struct bt *bt)
{
	return destroy_rec(tx, bt, bt->root, bt->level);
}
