/*
 * check.c - the offline checker (jnfs check).
 *
 * It walks the image itself, block by block, trusting nothing the mount
 * computed: every tree from its root (verifier, level, key order within the
 * bounds its parent gives), every allocated inode (CRC, mode, extents), every
 * directory entry. A bitmap records which structure owns each block; a block
 * claimed twice, or claimed by nobody, is a problem. Link counts are
 * recounted from the directory entries; every allocated inode must be
 * reachable from the root or listed as an orphan (nlink 0). The durable
 * records are checked whole (rec.c: R1-R4), and so is every inode's
 * extended attributes (xattr.c: X1-X4).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/hashmap.h"
#include "base/mem.h"
#include "fs/fs_priv.h"

struct checker {
	struct fs *fs;
	FILE *out;
	uint64_t problems;
	uint8_t *owner; /* per block: 0 free/unknown, else an owner kind */
	uint64_t nblocks;
	struct hashmap inodes; /* ino -> struct cino */
	struct hashmap orphans;
};

enum owner_kind {
	OWN_NONE = 0,
	OWN_SB,
	OWN_LOG,
	OWN_FREELIST,
	OWN_FREE,
	OWN_FREETREE,
	OWN_INOTREE,
	OWN_ORPHANTREE,
	OWN_CHUNK,
	OWN_DIRTREE,
	OWN_EXTTREE,
	OWN_DATA,
	OWN_RECTREE,
	OWN_XATTRTREE,
};

static const char *const owner_names[] = {
	"nobody",     "superblock",  "log",          "free list",   "free space",   "free-space tree",
	"inode index", "orphan tree", "inode chunk", "directory tree", "extent tree", "file data",
	"record tree", "attribute tree",
};

struct cino {
	uint32_t mode, nlink, counted_links, subdirs;
	uint64_t parent, found_in;
	uint64_t dir_root, dir_blocks, nblocks;
	uint16_t dir_level;
	bool reached;
};

static void problem(struct checker *c, const char *fmt, ...) __printf(2, 3);
static void problem(struct checker *c, const char *fmt, ...)
{
	if (++c->problems > 100) {
		if (c->problems == 101)
			fprintf(c->out, "check: (more problems not shown)\n");
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	fprintf(c->out, "check: ");
	vfprintf(c->out, fmt, ap);
	fprintf(c->out, "\n");
	va_end(ap);
}

static void own(struct checker *c, uint64_t start, uint64_t len, enum owner_kind k,
		uint64_t who)
{
	if (start >= c->nblocks || len > c->nblocks - start) {
		problem(c, "%s of %llu: blocks %llu+%llu lie outside the device", owner_names[k],
			(unsigned long long)who, (unsigned long long)start, (unsigned long long)len);
		return;
	}
	for (uint64_t b = start; b < start + len; b++) {
		if (c->owner[b]) {
			problem(c, "block %llu owned twice: by the %s and by the %s of %llu",
				(unsigned long long)b, owner_names[c->owner[b]], owner_names[k],
				(unsigned long long)who);
			continue;
		}
		c->owner[b] = (uint8_t)k;
	}
}

typedef int (*rec_fn)(struct checker *c, void *arg, const struct fs_btkey *k, const uint8_t *val,
		      unsigned vlen);

/* Walk a tree: verify each block, its level, its keys within [lo, hi). */
static int walk(struct checker *c, uint64_t blkno, unsigned level, const struct fs_verifier *v,
		uint64_t owner, enum owner_kind kind, const struct fs_btkey *lo,
		const struct fs_btkey *hi, bool root, rec_fn fn, void *arg, uint64_t *nblocks)
{
	struct fsbuf *bp;
	if (blkno < c->nblocks && c->owner[blkno]) {
		/* reached twice: report it, but do not walk it again (damage could
		 * make a node name one subtree many times over) */
		own(c, blkno, 1, kind, owner);
		return 0;
	}
	int err = fsbuf_read(c->fs, blkno, v, owner, &bp);
	if (err) {
		problem(c, "%s tree block %llu of %llu cannot be read", v->name,
			(unsigned long long)blkno, (unsigned long long)owner);
		return 0;
	}
	own(c, blkno, 1, kind, owner);
	if (nblocks)
		(*nblocks)++;
	const struct fs_bthdr *h = (const void *)bp->b_data;
	unsigned n = le16toh(h->bh_nrecs);
	if (le16toh(h->bh_level) != level) {
		problem(c, "%s tree block %llu has level %u, its parent says %u", v->name,
			(unsigned long long)blkno, le16toh(h->bh_level), level);
		goto out;
	}
	if (!n && !root) {
		problem(c, "%s tree block %llu is empty", v->name, (unsigned long long)blkno);
		goto out;
	}
	if (level > 0) {
		const struct fs_btnode_ent *e = (const void *)(bp->b_data + sizeof(*h));
		for (unsigned i = 0; i < n; i++) {
			struct fs_btkey k = {le64toh(e[i].key.k0), le64toh(e[i].key.k1)};
			struct fs_btkey kn;
			const struct fs_btkey *khi = hi;
			if (i + 1 < n) {
				kn = (struct fs_btkey){le64toh(e[i + 1].key.k0),
						       le64toh(e[i + 1].key.k1)};
				khi = &kn;
			}
			if (lo && bt_keycmp(&k, lo) < 0)
				problem(c, "%s tree node %llu: key below its parent's bound",
					v->name, (unsigned long long)blkno);
			if (hi && bt_keycmp(&k, hi) >= 0)
				problem(c, "%s tree node %llu: key above its parent's bound",
					v->name, (unsigned long long)blkno);
			if (k.k1 && v->magic != FS_BT_XATTR_MAGIC)
				problem(c, "%s tree node %llu: key %llu has a second word",
					v->name, (unsigned long long)blkno,
					(unsigned long long)k.k0);
			/* every key, the first too, is a lower bound of its child
			 * (btree.c: an insert below the first key lowers it) */
			err = walk(c, le64toh(e[i].child), level - 1, v, owner, kind, &k, khi,
				   false, fn, arg, nblocks);
			if (err)
				goto out;
		}
	} else {
		const uint16_t *slot = (const void *)(bp->b_data + sizeof(*h));
		for (unsigned i = 0; i < n; i++) {
			unsigned off = le16toh(slot[i]);
			struct fs_btkey k;
			memcpy(&k, bp->b_data + off, sizeof(k));
			k.k0 = le64toh(k.k0);
			k.k1 = le64toh(k.k1);
			uint16_t vl;
			memcpy(&vl, bp->b_data + off + sizeof(k), 2);
			vl = le16toh(vl);
			if ((lo && bt_keycmp(&k, lo) < 0) || (hi && bt_keycmp(&k, hi) >= 0))
				problem(c, "%s tree leaf %llu: key %llu outside its parent's "
					   "bounds",
					v->name, (unsigned long long)blkno, (unsigned long long)k.k0);
			if (k.k1 && v->magic != FS_BT_XATTR_MAGIC) /* an attribute's fragment */
				problem(c, "%s tree leaf %llu: key %llu has a second word",
					v->name, (unsigned long long)blkno, (unsigned long long)k.k0);
			if (fn) {
				err = fn(c, arg, &k, bp->b_data + off + FS_BT_REC_HDR, vl);
				if (err)
					goto out;
			}
		}
	}
out:
	fsbuf_rele(bp);
	return err;
}

/* ---- free space ---- */

struct free_state {
	uint64_t prev_end, total;
};

static int free_rec(struct checker *c, void *arg, const struct fs_btkey *k, const uint8_t *val,
		    unsigned vlen)
{
	struct free_state *s = arg;
	uint64_t len;
	if (vlen != 8) {
		problem(c, "free-space record at %llu has a %u-byte value", (unsigned long long)k->k0,
			vlen);
		return 0;
	}
	memcpy(&len, val, 8);
	len = le64toh(len);
	if (!len)
		problem(c, "free-space record at %llu is empty", (unsigned long long)k->k0);
	if (s->prev_end && k->k0 <= s->prev_end)
		problem(c, "free extents at %llu touch or overlap the one before (should merge)",
			(unsigned long long)k->k0);
	own(c, k->k0, len, OWN_FREE, k->k0);
	s->prev_end = k->k0 + len;
	s->total += len;
	return 0;
}

/* ---- durable records (rec.c: R1-R3) ---- */

struct rec_state {
	uint64_t count;
	/* a first fragment waiting for its second */
	bool pending;
	uint64_t pend_k0;
	uint8_t pend[FS_BT_MAX_VALUE];
	unsigned pend_len;
	/* the keys of the current hash, to find duplicates */
	uint64_t run_hash;
	struct {
		uint8_t len, key[FS_REC_KEY_MAX];
	} *run;
	unsigned run_n, run_cap;
};

static void rec_whole(struct checker *c, struct rec_state *s, uint64_t k0, const uint8_t *f0,
		      unsigned l0, const uint8_t *f1, unsigned l1)
{
	uint8_t key[FS_REC_KEY_MAX], val[FS_REC_VALUE_MAX];
	size_t klen, vlen;
	unsigned nfrags;
	const char *why;
	s->count++;
	if (rec_decode(f0, l0, f1, l1, key, &klen, val, &vlen, &nfrags, &why)) {
		problem(c, "record %llx has %s", (unsigned long long)k0, why);
		return;
	}
	uint64_t h = k0 & FS_REC_HASH_MASK;
	if (rec_hash(c->fs, key, klen) != h) {
		problem(c, "record %llx is filed under the wrong hash", (unsigned long long)k0);
		return;
	}
	if (h != s->run_hash) {
		s->run_hash = h;
		s->run_n = 0;
	}
	for (unsigned i = 0; i < s->run_n; i++)
		if (s->run[i].len == klen && !memcmp(s->run[i].key, key, klen))
			problem(c, "record %llx has the key of another record",
				(unsigned long long)k0);
	if (s->run_n == s->run_cap) {
		s->run_cap = s->run_cap ? 2 * s->run_cap : 4;
		s->run = xrealloc(s->run, s->run_cap * sizeof(*s->run));
	}
	s->run[s->run_n].len = (uint8_t)klen;
	memcpy(s->run[s->run_n].key, key, klen);
	s->run_n++;
}

static void rec_flush(struct checker *c, struct rec_state *s)
{
	if (s->pending)
		rec_whole(c, s, s->pend_k0, s->pend, s->pend_len, NULL, 0);
	s->pending = false;
}

static int rec_rec(struct checker *c, void *arg, const struct fs_btkey *k, const uint8_t *val,
		   unsigned vlen)
{
	struct rec_state *s = arg;
	if (k->k0 & 1) {
		if (!s->pending || s->pend_k0 != (k->k0 & ~1ull)) {
			rec_flush(c, s);
			problem(c, "record %llx: a second fragment without its first",
				(unsigned long long)k->k0);
			return 0;
		}
		s->pending = false;
		rec_whole(c, s, s->pend_k0, s->pend, s->pend_len, val, vlen);
		return 0;
	}
	rec_flush(c, s);
	struct fs_drec d;
	if (vlen >= sizeof(d) && (memcpy(&d, val, sizeof(d)), d.r_nfrags == 2)) {
		s->pending = true;
		s->pend_k0 = k->k0;
		s->pend_len = vlen;
		memcpy(s->pend, val, vlen);
		return 0;
	}
	rec_whole(c, s, k->k0, val, vlen, NULL, 0);
	return 0;
}

/* ---- extended attributes (xattr.c: X1-X4) ---- */

struct xattr_state {
	uint64_t ino;
	uint64_t count, bytes;
	/* the attribute being put together from its fragments */
	bool open;
	uint64_t k0;
	unsigned next;
	struct fs_dxattr x;
	char name[FS_XATTR_NAME_MAX];
	uint8_t *val;
	size_t done;
	/* the names of the current hash, to find duplicates */
	uint64_t run_hash;
	struct {
		uint8_t len;
		char name[FS_XATTR_NAME_MAX];
	} *run;
	unsigned run_n, run_cap;
};

static void xattr_close(struct checker *c, struct xattr_state *s)
{
	if (!s->open)
		return;
	s->open = false;
	if (s->next != s->x.x_nfrags) {
		problem(c, "inode %llu: attribute %llx has %u of its %u fragments",
			(unsigned long long)s->ino, (unsigned long long)s->k0, s->next,
			s->x.x_nfrags);
		return;
	}
	if (xattr_crc(s->name, s->x.x_namelen, s->val, s->x.x_vallen) != s->x.x_crc)
		problem(c, "inode %llu: attribute %llx has a CRC that does not match its name "
			   "and value",
			(unsigned long long)s->ino, (unsigned long long)s->k0);
}

static int xattr_rec(struct checker *c, void *arg, const struct fs_btkey *k, const uint8_t *val,
		     unsigned vlen)
{
	struct xattr_state *s = arg;
	if (k->k1) {
		if (!s->open || k->k0 != s->k0 || k->k1 != s->next) {
			problem(c, "inode %llu: attribute fragment %llx/%llu without those before",
				(unsigned long long)s->ino, (unsigned long long)k->k0,
				(unsigned long long)k->k1);
			return 0;
		}
		size_t want = MIN((size_t)FS_BT_MAX_VALUE, s->x.x_vallen - s->done);
		if (vlen != want) {
			problem(c, "inode %llu: attribute %llx has a fragment of the wrong length",
				(unsigned long long)s->ino, (unsigned long long)s->k0);
			s->open = false;
			return 0;
		}
		memcpy(s->val + s->done, val, vlen);
		s->done += vlen;
		if (++s->next == s->x.x_nfrags)
			xattr_close(c, s);
		return 0;
	}
	xattr_close(c, s);
	const char *name, *why;
	if (xattr_decode_head(val, vlen, &s->x, &name, &why)) {
		problem(c, "inode %llu: attribute %llx has %s", (unsigned long long)s->ino,
			(unsigned long long)k->k0, why);
		return 0;
	}
	size_t nl = s->x.x_namelen;
	s->count++;
	s->bytes += nl + s->x.x_vallen + FS_XATTR_ENTRY_COST;
	uint64_t h = k->k0 & FS_XATTR_HASH_MASK;
	if (rec_hash(c->fs, name, nl) != h)
		problem(c, "inode %llu: attribute \"%.*s\" is filed under the wrong hash",
			(unsigned long long)s->ino, (int)nl, name);
	if (h != s->run_hash) {
		s->run_hash = h;
		s->run_n = 0;
	}
	for (unsigned i = 0; i < s->run_n; i++)
		if (s->run[i].len == nl && !memcmp(s->run[i].name, name, nl))
			problem(c, "inode %llu: attribute \"%.*s\" is there twice",
				(unsigned long long)s->ino, (int)nl, name);
	if (s->run_n == s->run_cap) {
		s->run_cap = s->run_cap ? 2 * s->run_cap : 4;
		s->run = xrealloc(s->run, s->run_cap * sizeof(*s->run));
	}
	s->run[s->run_n].len = (uint8_t)nl;
	memcpy(s->run[s->run_n].name, name, nl);
	s->run_n++;
	s->open = true;
	s->k0 = k->k0;
	s->next = 1;
	memcpy(s->name, name, nl);
	s->done = vlen - sizeof(s->x) - nl;
	memcpy(s->val, name + nl, s->done);
	if (s->x.x_nfrags == 1)
		xattr_close(c, s);
	return 0;
}

static void check_xattrs(struct checker *c, uint64_t ino, const struct fs_icore *d)
{
	if (!d->xattr_root)
		return; /* ino_verify: no count, no bytes */
	if (le32toh(c->fs->f_sb->sb_version) < FS_VERSION_XATTR)
		problem(c, "inode %llu has extended attributes in a version %u image",
			(unsigned long long)ino, le32toh(c->fs->f_sb->sb_version));
	struct xattr_state s = {.ino = ino, .val = xmalloc(FS_XATTR_SIZE_MAX)};
	walk(c, d->xattr_root, d->xattr_level, fs_bt_verifier(FS_BT_XATTR_MAGIC), ino,
	     OWN_XATTRTREE, NULL, NULL, true, xattr_rec, &s, NULL);
	xattr_close(c, &s);
	if (!s.count)
		problem(c, "inode %llu has an attribute tree without attributes",
			(unsigned long long)ino);
	if (s.count != d->xattr_count || s.bytes != d->xattr_bytes)
		problem(c, "inode %llu counts %u attributes of %u bytes, its tree holds %llu of %llu",
			(unsigned long long)ino, d->xattr_count, d->xattr_bytes,
			(unsigned long long)s.count, (unsigned long long)s.bytes);
	free(s.run);
	free(s.val);
}

/* ---- inodes ---- */

struct chunk_state {
	uint64_t allocated, nfree;
};

static int chunk_rec(struct checker *c, void *arg, const struct fs_btkey *k, const uint8_t *val,
		     unsigned vlen)
{
	struct chunk_state *s = arg;
	uint64_t mask;
	if (vlen != 8 || k->k0 % FS_INODES_PER_BLK) {
		problem(c, "inode index record %llu is malformed", (unsigned long long)k->k0);
		return 0;
	}
	memcpy(&mask, val, 8);
	mask = le64toh(mask);
	uint64_t first_blk = fs_ino_block(k->k0);
	own(c, first_blk, FS_CHUNK_BLOCKS, OWN_CHUNK, k->k0);
	s->nfree += (uint64_t)__builtin_popcountll(mask);
	for (unsigned i = 0; i < FS_INODES_PER_CHUNK; i++) {
		if (mask & (1ull << i))
			continue;
		struct cino *ci = xcalloc(1, sizeof(*ci));
		hashmap_put(&c->inodes, k->k0 + i, ci);
		s->allocated++;
	}
	return 0;
}

static int orphan_rec(struct checker *c, void *arg, const struct fs_btkey *k, const uint8_t *val,
		      unsigned vlen)
{
	hashmap_put(&c->orphans, k->k0, (void *)1);
	return 0;
}

struct ext_state {
	struct checker *c;
	uint64_t ino, prev_end, blocks;
	bool any;
};

static int ext_visit(struct ext_state *s, uint64_t off, uint64_t start, uint64_t len,
		     uint32_t flags)
{
	struct checker *c = s->c;
	if (!len || !start) {
		problem(c, "inode %llu: an empty or null extent at file block %llu",
			(unsigned long long)s->ino, (unsigned long long)off);
		return 0;
	}
	if (flags & ~FS_EXT_UNWRITTEN)
		problem(c, "inode %llu: extent at file block %llu has unknown flags 0x%x",
			(unsigned long long)s->ino, (unsigned long long)off, flags);
	if (s->any && off < s->prev_end)
		problem(c, "inode %llu: extents overlap at file block %llu",
			(unsigned long long)s->ino, (unsigned long long)off);
	own(c, start, len, OWN_DATA, s->ino);
	s->prev_end = off + len;
	s->blocks += len;
	s->any = true;
	return 0;
}

static int ext_rec(struct checker *c, void *arg, const struct fs_btkey *k, const uint8_t *val,
		   unsigned vlen)
{
	struct ext_state *s = arg;
	struct fs_dext e;
	if (vlen != sizeof(e)) {
		problem(c, "inode %llu: malformed extent record", (unsigned long long)s->ino);
		return 0;
	}
	memcpy(&e, val, sizeof(e));
	if (le64toh(e.e_off) != k->k0)
		problem(c, "inode %llu: extent key and offset disagree", (unsigned long long)s->ino);
	return ext_visit(s, le64toh(e.e_off), le64toh(e.e_start), le32toh(e.e_len),
			 le32toh(e.e_flags));
}

struct dir_state {
	struct checker *c;
	uint64_t ino;
	uint64_t subdirs;
};

static int dir_rec(struct checker *c, void *arg, const struct fs_btkey *k, const uint8_t *val,
		   unsigned vlen)
{
	struct dir_state *s = arg;
	struct fs_ddirent d;
	if (vlen < sizeof(d)) {
		problem(c, "directory %llu: malformed entry", (unsigned long long)s->ino);
		return 0;
	}
	memcpy(&d, val, sizeof(d));
	const char *name = (const char *)val + sizeof(d);
	if (vlen != sizeof(d) + d.d_namelen || !d.d_namelen) {
		problem(c, "directory %llu: entry with a bad name length", (unsigned long long)s->ino);
		return 0;
	}
	if ((k->k0 & FS_DIRHASH_MASK) != dir_hash(name, d.d_namelen))
		problem(c, "directory %llu: entry \"%.*s\" is filed under the wrong hash",
			(unsigned long long)s->ino, (int)d.d_namelen, name);
	if (memchr(name, '/', d.d_namelen) || memchr(name, 0, d.d_namelen) ||
	    (d.d_namelen == 1 && name[0] == '.') ||
	    (d.d_namelen == 2 && name[0] == '.' && name[1] == '.'))
		problem(c, "directory %llu: entry with an invalid name", (unsigned long long)s->ino);
	uint64_t target = le64toh(d.d_ino);
	struct cino *ci = hashmap_get(&c->inodes, target);
	if (!ci) {
		problem(c, "directory %llu: \"%.*s\" names inode %llu, which is not allocated",
			(unsigned long long)s->ino, (int)d.d_namelen, name,
			(unsigned long long)target);
		return 0;
	}
	ci->counted_links++;
	ci->reached = true;
	if (ino_ftype(ci->mode) != d.d_type)
		problem(c, "directory %llu: \"%.*s\" says type %u, inode %llu is type %u",
			(unsigned long long)s->ino, (int)d.d_namelen, name, d.d_type,
			(unsigned long long)target, ino_ftype(ci->mode));
	if (S_ISDIR(ci->mode)) {
		s->subdirs++;
		if (ci->found_in)
			problem(c, "directory %llu has two names", (unsigned long long)target);
		ci->found_in = s->ino;
	}
	return 0;
}

static void check_inode(struct checker *c, uint64_t ino, struct cino *ci)
{
	struct fsbuf *bp;
	if (fsbuf_read(c->fs, fs_ino_block(ino), &fs_ichunk_verifier, 0, &bp)) {
		problem(c, "inode %llu: its block cannot be read", (unsigned long long)ino);
		return;
	}
	struct fs_inode *ip = ino_alloc_incore(c->fs, ino);
	int err = ino_from_disk(ip, (const struct fs_dinode *)(bp->b_data +
							      fs_ino_slot(ino) * FS_INODE_SIZE));
	fsbuf_rele(bp);
	if (err) {
		problem(c, "inode %llu is allocated but corrupt", (unsigned long long)ino);
		goto out;
	}
	ci->mode = ip->i_d.mode;
	ci->nlink = ip->i_d.nlink;
	ci->parent = ip->i_d.parent;
	uint64_t blocks = 0;
	struct ext_state es = {.c = c, .ino = ino};
	ci->nblocks = ip->i_d.nblocks;
	if (S_ISDIR(ip->i_d.mode)) {
		/* walked in the second pass, once every inode's type is known */
		ci->dir_root = ip->i_d.root;
		ci->dir_level = ip->i_d.root_level;
		blocks = ip->i_d.nblocks;
		if (ip->i_d.nextents)
			problem(c, "directory %llu has extents", (unsigned long long)ino);
	} else if (ip->i_d.flags & FS_DIF_EXT_BTREE) {
		walk(c, ip->i_d.root, ip->i_d.root_level, fs_bt_verifier(FS_BT_EXT_MAGIC), ino,
		     OWN_EXTTREE, NULL, NULL, true, ext_rec, &es, &blocks);
	} else if (!S_ISLNK(ip->i_d.mode) || (ip->i_d.flags & FS_DIF_SYMLINK_EXT)) {
		for (unsigned i = 0; i < ip->i_d.nextents; i++)
			ext_visit(&es, ip->i_d.ext[i].e_off, ip->i_d.ext[i].e_start,
				  ip->i_d.ext[i].e_len, ip->i_d.ext[i].e_flags);
	}
	blocks += es.blocks;
	check_xattrs(c, ino, &ip->i_d);
	if (blocks != ip->i_d.nblocks)
		problem(c, "inode %llu counts %llu blocks but owns %llu", (unsigned long long)ino,
			(unsigned long long)ip->i_d.nblocks, (unsigned long long)blocks);
	if (S_ISLNK(ip->i_d.mode) && (ip->i_d.size == 0 || ip->i_d.size > FS_SYMLINK_MAX))
		problem(c, "symlink %llu has length %llu", (unsigned long long)ino,
			(unsigned long long)ip->i_d.size);
	if (!S_ISREG(ip->i_d.mode) && !S_ISDIR(ip->i_d.mode) && !S_ISLNK(ip->i_d.mode) &&
	    ip->i_d.nblocks)
		problem(c, "special inode %llu owns blocks", (unsigned long long)ino);
out:
	rwlock_destroy(&ip->i_iolock);
	mutex_destroy(&ip->i_ilock);
	mutex_destroy(&ip->i_item.ii_lock);
	free(ip);
}

int fs_check(struct fs *fs, FILE *out, uint64_t *problems)
{
	struct checker c = {.fs = fs, .out = out, .nblocks = fs->f_blocks};
	c.owner = xcalloc(c.nblocks, 1);
	hashmap_init(&c.inodes);
	hashmap_init(&c.orphans);
	const struct fs_dsb *sb = fs->f_sb;

	own(&c, 0, 1, OWN_SB, 0);
	if (!(le32toh(sb->sb_flags) & FS_SB_EXTERNAL_LOG))
		own(&c, le64toh(sb->sb_log_start), le64toh(sb->sb_log_blocks), OWN_LOG, 0);
	for (unsigned i = 0; i < le16toh(sb->sb_freelist_count); i++)
		own(&c, le64toh(sb->sb_freelist[i]), 1, OWN_FREELIST, i);

	struct free_state fst = {0};
	walk(&c, le64toh(sb->sb_free_root), le16toh(sb->sb_free_level),
	     fs_bt_verifier(FS_BT_FREE_MAGIC), 0, OWN_FREETREE, NULL, NULL, true, free_rec, &fst,
	     NULL);
	struct chunk_state cs = {0};
	walk(&c, le64toh(sb->sb_ino_root), le16toh(sb->sb_ino_level),
	     fs_bt_verifier(FS_BT_INO_MAGIC), 0, OWN_INOTREE, NULL, NULL, true, chunk_rec, &cs,
	     NULL);
	walk(&c, le64toh(sb->sb_orphan_root), le16toh(sb->sb_orphan_level),
	     fs_bt_verifier(FS_BT_ORPHAN_MAGIC), 0, OWN_ORPHANTREE, NULL, NULL, true, orphan_rec,
	     NULL, NULL);
	struct rec_state rs = {0};
	if (le64toh(sb->sb_rec_root)) {
		walk(&c, le64toh(sb->sb_rec_root), le16toh(sb->sb_rec_level),
		     fs_bt_verifier(FS_BT_REC_MAGIC), 0, OWN_RECTREE, NULL, NULL, true, rec_rec,
		     &rs, NULL);
		rec_flush(&c, &rs);
	}
	if (rs.count != le32toh(sb->sb_rec_count))
		problem(&c, "the superblock counts %u records, the record tree holds %llu",
			le32toh(sb->sb_rec_count), (unsigned long long)rs.count);
	free(rs.run);

	/* every allocated inode: content first, then the namespace */
	size_t it = 0;
	uint64_t ino;
	void *v;
	while (hashmap_next(&c.inodes, &it, &ino, &v))
		check_inode(&c, ino, v);
	it = 0;
	while (hashmap_next(&c.inodes, &it, &ino, &v)) {
		struct cino *ci = v;
		if (!S_ISDIR(ci->mode))
			continue;
		struct dir_state ds = {.c = &c, .ino = ino};
		uint64_t blocks = 0;
		walk(&c, ci->dir_root, ci->dir_level, fs_bt_verifier(FS_BT_DIR_MAGIC), ino,
		     OWN_DIRTREE, NULL, NULL, true, dir_rec, &ds, &blocks);
		ci->subdirs = (uint32_t)ds.subdirs;
		if (blocks != ci->nblocks)
			problem(&c, "directory %llu counts %llu blocks but owns %llu",
				(unsigned long long)ino, (unsigned long long)ci->nblocks,
				(unsigned long long)blocks);
	}

	uint64_t root = le64toh(sb->sb_root_ino);
	struct cino *rci = hashmap_get(&c.inodes, root);
	if (!rci || !S_ISDIR(rci->mode)) {
		problem(&c, "the root inode %llu is not an allocated directory",
			(unsigned long long)root);
	} else {
		rci->reached = true;
		rci->counted_links++; /* its own ".." */
		rci->found_in = root;
	}
	it = 0;
	while (hashmap_next(&c.inodes, &it, &ino, &v)) {
		struct cino *ci = v;
		if (!ci->mode)
			continue; /* corrupt, reported */
		bool orphan = hashmap_get(&c.orphans, ino) != NULL;
		uint32_t want = ci->counted_links;
		if (S_ISDIR(ci->mode)) {
			want = ci->counted_links ? 1 + 1 + ci->subdirs : 0;
			if (ci->found_in && ci->parent != ci->found_in)
				problem(&c, "directory %llu says its parent is %llu, but it is in %llu",
					(unsigned long long)ino, (unsigned long long)ci->parent,
					(unsigned long long)ci->found_in);
		}
		if (ino == root)
			want = 2 + ci->subdirs;
		if (ci->nlink == 0 && !orphan)
			problem(&c, "inode %llu has no links and is not an orphan",
				(unsigned long long)ino);
		if (ci->nlink == 0 && orphan && ci->reached)
			problem(&c, "orphan inode %llu is still named by a directory",
				(unsigned long long)ino);
		if (ci->nlink != 0 && ci->nlink != want)
			problem(&c, "inode %llu has link count %u, but %u names",
				(unsigned long long)ino, ci->nlink, want);
		if (ci->nlink != 0 && !ci->reached)
			problem(&c, "inode %llu is allocated but no directory names it",
				(unsigned long long)ino);
		if (orphan && ci->nlink)
			problem(&c, "orphan inode %llu still has %u links", (unsigned long long)ino,
				ci->nlink);
	}
	it = 0;
	while (hashmap_next(&c.orphans, &it, &ino, &v))
		if (!hashmap_get(&c.inodes, ino))
			problem(&c, "orphan record for inode %llu, which is not allocated",
				(unsigned long long)ino);

	/* every block owned once: find the leaks */
	uint64_t leaked = 0, first_leak = 0;
	for (uint64_t b = 0; b < c.nblocks; b++) {
		if (!c.owner[b]) {
			if (!leaked++)
				first_leak = b;
		}
	}
	if (leaked)
		problem(&c, "%llu blocks are owned by nobody (leaked), the first at %llu",
			(unsigned long long)leaked, (unsigned long long)first_leak);

	it = 0;
	while (hashmap_next(&c.inodes, &it, &ino, &v))
		free(v);
	hashmap_destroy(&c.inodes);
	hashmap_destroy(&c.orphans);
	free(c.owner);
	*problems = c.problems;
	return 0;
}
