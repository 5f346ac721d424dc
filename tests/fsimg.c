/*
 * fsimg.c - populated images, their metadata regions, and a user's visit
 * to a damaged one (see fsimg.h).
 */
#include "fsimg.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <endian.h>

#include "base/crc32c.h"
#include "base/msg.h"
#include "fs/fs.h"
#include "fs/fs_format.h"

#define OFF(type, field) ((uint32_t)__builtin_offsetof(type, field))
#define SZ(type, field)  ((uint32_t)sizeof(((type *)0)->field))

const char *const fsimg_kind_names[FSIMG_NKINDS] = {
	"superblock", "free-space tree", "inode index", "orphan tree", "directory tree",
	"extent tree", "record tree", "inode", "free inode slot", "free-list block", "log",
	"attribute tree",
};

/* ---- building ---- */

static void die(const char *what, int err)
{
	fprintf(stderr, "fsimg: %s: %s\n", what, strerror(-err));
	abort();
}

#define MUST(expr)                                                                                 \
	do {                                                                                       \
		int _e = (expr);                                                                   \
		if (_e)                                                                            \
			die(#expr, _e);                                                            \
	} while (0)

static struct fs_inode *mk(struct fs_inode *dir, const char *name, uint32_t mode,
			   const char *target)
{
	struct fs_inode *ip;
	struct fs_create_args a = {.mode = mode, .uid = 1000, .gid = 100, .rdev = 0x0801};
	if (target) {
		a.target = target;
		a.target_len = strlen(target);
	}
	MUST(fs_create(dir, name, strlen(name), &a, &ip, NULL));
	return ip;
}

static void put(struct fs_inode *ip, uint64_t off, uint64_t len, uint8_t v)
{
	uint8_t *buf = malloc(len);
	memset(buf, v, len);
	MUST(fs_write(ip, off, buf, len, NULL));
	free(buf);
}

struct dev *fsimg_build(const struct fsimg_params *p)
{
	static const uint8_t uuid[16] = {0x6a, 0x6e, 0x66, 0x73, 0x2d, 0x66, 0x73, 0x69,
					 0x6d, 0x67, 0x2d, 0x75, 0x75, 0x69, 0x64, 0x31};
	struct dev *d;
	MUST(dev_mem_create(p->size, NULL, &d));
	MUST(fs_mkfs(&(struct fs_mkfs_opts){
		.ddev = d, .log_size = p->log_size, .uuid = uuid, .label = "fsimg"}));
	struct fs *fs;
	MUST(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	struct fs_inode *root, *a, *b, *c, *ip;
	MUST(fs_root(fs, &root));

	/* a directory chain with files, a hard link, symlinks, specials */
	a = mk(root, "a", S_IFDIR | 0755, NULL);
	b = mk(a, "b", S_IFDIR | 0700, NULL);
	c = mk(b, "c", S_IFDIR | 0755, NULL);
	ip = mk(a, "f1", S_IFREG | 0644, NULL);
	put(ip, 0, 10000, 0x11);
	MUST(fs_link(ip, c, "link", 4, NULL));
	fs_iput(ip);
	ip = mk(b, "f2", S_IFREG | 0600, NULL);
	put(ip, 0, 100 << 10, 0x22);
	fs_iput(ip);
	ip = mk(c, "f3", S_IFREG | 0644, NULL);
	put(ip, 0, 1, 0x33);
	fs_iput(ip);
	fs_iput(mk(root, "s1", S_IFLNK | 0777, "a/f1"));
	char longtarget[1001];
	memset(longtarget, 'x', 1000);
	longtarget[1000] = 0;
	fs_iput(mk(root, "s2", S_IFLNK | 0777, longtarget));
	fs_iput(mk(root, "chr", S_IFCHR | 0600, NULL));
	fs_iput(mk(root, "fifo", S_IFIFO | 0600, NULL));
	fs_iput(mk(root, "sock", S_IFSOCK | 0600, NULL));

	/* sparse, and preallocated (unwritten) */
	ip = mk(root, "sparse", S_IFREG | 0644, NULL);
	put(ip, 1 << 20, 4096, 0x44);
	fs_iput(ip);
	ip = mk(root, "prealloc", S_IFREG | 0644, NULL);
	MUST(fs_fallocate(ip, FS_FALLOC_ALLOC, 0, 128 << 10, NULL));
	put(ip, 8192, 4096, 0x55);
	fs_iput(ip);

	/* a fragmented file: written in one piece, every other block punched
	 * at the end (an extent each, and as many free extents) */
	struct fs_inode *frag = mk(root, "frag", S_IFREG | 0644, NULL);
	put(frag, 0, (uint64_t)p->frag_exts * 2 * 4096, 0x66);

	/* a big directory with files and some subdirectories */
	struct fs_inode *big = mk(root, "big", S_IFDIR | 0755, NULL);
	for (unsigned i = 0; i < p->big_dir; i++) {
		char name[32];
		snprintf(name, sizeof(name), "entry-%05u", i);
		fs_iput(mk(big, name, i % 16 == 0 ? S_IFDIR | 0755 : S_IFREG | 0644, NULL));
	}
	fs_iput(big);

	/* small files, every other one deleted later: a fragmented free space */
	struct fs_inode *junk = mk(root, "junk", S_IFDIR | 0755, NULL);
	for (unsigned i = 0; i < p->junk; i++) {
		char name[32];
		snprintf(name, sizeof(name), "j%u", i);
		ip = mk(junk, name, S_IFREG | 0644, NULL);
		put(ip, 0, 4096, (uint8_t)i);
		fs_iput(ip);
	}
	/* durable records: values of one and of two fragments, enough of them
	 * for a tree of two levels */
	uint8_t val[FS_REC_VALUE_MAX];
	for (unsigned i = 0; i < 40; i++) {
		char key[32];
		int kl = snprintf(key, sizeof(key), "client-%u", i);
		size_t vl = (i * 97) % (FS_REC_VALUE_MAX + 1);
		memset(val, (int)i, vl);
		MUST(fs_rec_put(fs, key, (size_t)kl, val, vl, NULL));
	}
	/* extended attributes: short ones and values of many fragments,
	 * enough for a tree of two levels */
	ip = mk(root, "xattrs", S_IFREG | 0644, NULL);
	uint8_t *xv = malloc(FS_XATTR_SIZE_MAX);
	for (unsigned i = 0; i < 24; i++) {
		char name[32];
		int nl = snprintf(name, sizeof(name), "user.attr-%u", i);
		size_t vl = i % 6 == 5 ? 9000 + i * 100 : i * 37;
		memset(xv, (int)i, vl);
		MUST(fs_setxattr(ip, name, (size_t)nl, xv, vl, 0, NULL));
	}
	free(xv);
	fs_iput(ip);
	/* every allocation is done: what follows frees, and freed blocks are
	 * busy for a while, which would make later allocations depend on
	 * timing */
	MUST(fs_sync(fs));
	for (unsigned i = 0; i < p->frag_exts; i++)
		MUST(fs_fallocate(frag, FS_FALLOC_PUNCH, (uint64_t)(2 * i + 1) * 4096, 4096, NULL));
	fs_iput(frag);
	for (unsigned i = 0; i < p->junk; i += 2) {
		char name[32];
		snprintf(name, sizeof(name), "j%u", i);
		MUST(fs_unlink(junk, name, strlen(name), NULL));
	}
	fs_iput(junk);
	fs_iput(c);
	fs_iput(b);
	fs_iput(a);
	fs_iput(root);
	MUST(fs_unmount(fs));
	return d;
}

/* ---- the format, walked independently of the engine ---- */

struct walker {
	const uint8_t *img;
	uint64_t nblocks;
	struct fsimg_region *v;
	size_t n, cap;
};

static void add(struct walker *w, uint8_t kind, uint16_t level, uint64_t blk, uint32_t off,
		uint32_t len, uint64_t owner, uint32_t mode)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 256;
		w->v = realloc(w->v, w->cap * sizeof(*w->v));
	}
	w->v[w->n++] = (struct fsimg_region){kind, level, blk, off, len, owner, mode};
}

static const uint8_t *block(struct walker *w, uint64_t blk)
{
	if (blk >= w->nblocks) {
		fprintf(stderr, "fsimg: block %llu outside the image\n", (unsigned long long)blk);
		abort();
	}
	return w->img + blk * FS_BLOCK_SIZE;
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

typedef void (*leaf_fn)(struct walker *w, const uint8_t *key, const uint8_t *val, unsigned vlen,
			void *arg);

static void walk_tree(struct walker *w, uint8_t kind, uint64_t blk, uint64_t owner, leaf_fn fn,
		      void *arg)
{
	const uint8_t *b = block(w, blk);
	const struct fs_bthdr *h = (const void *)b;
	unsigned level = le16toh(h->bh_level), n = le16toh(h->bh_nrecs);
	add(w, kind, (uint16_t)level, blk, 0, FS_BLOCK_SIZE, owner, 0);
	for (unsigned i = 0; i < n; i++) {
		if (level) {
			const uint8_t *e = b + sizeof(*h) + i * sizeof(struct fs_btnode_ent);
			walk_tree(w, kind, get64(e + sizeof(struct fs_btkey)), owner, fn, arg);
		} else if (fn) {
			unsigned off = get16(b + sizeof(*h) + 2 * i);
			fn(w, b + off, b + off + FS_BT_REC_HDR,
			   get16(b + off + sizeof(struct fs_btkey)), arg);
		}
	}
}

static void inode_found(struct walker *w, uint64_t ino)
{
	uint64_t blk = fs_ino_block(ino);
	const struct fs_dinode *di =
		(const void *)(block(w, blk) + fs_ino_slot(ino) * FS_INODE_SIZE);
	uint32_t mode = le32toh(di->di_mode), flags = le32toh(di->di_flags);
	add(w, FSIMG_INODE, 0, blk, fs_ino_slot(ino) * FS_INODE_SIZE, FS_INODE_SIZE, ino, mode);
	if (S_ISDIR(mode))
		walk_tree(w, FSIMG_DIR_TREE, le64toh(di->di_root), ino, NULL, NULL);
	else if (flags & FS_DIF_EXT_BTREE)
		walk_tree(w, FSIMG_EXT_TREE, le64toh(di->di_root), ino, NULL, NULL);
	if (le64toh(di->di_xattr_root))
		walk_tree(w, FSIMG_XATTR_TREE, le64toh(di->di_xattr_root), ino, NULL, NULL);
}

static void chunk_rec(struct walker *w, const uint8_t *key, const uint8_t *val, unsigned vlen,
		      void *arg)
{
	uint64_t first = get64(key), mask = get64(val);
	for (unsigned i = 0; i < FS_INODES_PER_CHUNK; i++) {
		if (mask & (1ull << i))
			add(w, FSIMG_FREE_SLOT, 0, fs_ino_block(first + i),
			    fs_ino_slot(first + i) * FS_INODE_SIZE, FS_INODE_SIZE, first + i, 0);
		else
			inode_found(w, first + i);
	}
}

size_t fsimg_regions(const uint8_t *img, uint64_t size, struct fsimg_region **out)
{
	struct walker w = {.img = img, .nblocks = size / FS_BLOCK_SIZE};
	const struct fs_dsb *sb = (const void *)img;
	add(&w, FSIMG_SB, 0, 0, 0, FS_BLOCK_SIZE, 0, 0);
	walk_tree(&w, FSIMG_FREE_TREE, le64toh(sb->sb_free_root), 0, NULL, NULL);
	walk_tree(&w, FSIMG_INO_TREE, le64toh(sb->sb_ino_root), 0, chunk_rec, NULL);
	walk_tree(&w, FSIMG_ORPHAN_TREE, le64toh(sb->sb_orphan_root), 0, NULL, NULL);
	if (le64toh(sb->sb_rec_root))
		walk_tree(&w, FSIMG_REC_TREE, le64toh(sb->sb_rec_root), 0, NULL, NULL);
	for (unsigned i = 0; i < le16toh(sb->sb_freelist_count); i++)
		add(&w, FSIMG_FREELIST, 0, le64toh(sb->sb_freelist[i]), 0, FS_BLOCK_SIZE, 0, 0);
	if (!(le32toh(sb->sb_flags) & FS_SB_EXTERNAL_LOG))
		for (uint64_t b = 0; b < le64toh(sb->sb_log_blocks); b++)
			add(&w, FSIMG_LOG, 0, le64toh(sb->sb_log_start) + b, 0, FS_BLOCK_SIZE, 0,
			    0);
	*out = w.v;
	return w.n;
}

/* ---- checksums ---- */

static uint32_t crc_skip(const uint8_t *p, size_t len, size_t crc_off)
{
	static const uint8_t zero[4];
	uint32_t c = crc32c(0, p, crc_off);
	c = crc32c(c, zero, 4);
	return crc32c(c, p + crc_off + 4, len - crc_off - 4);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

void fsimg_restamp(uint8_t *blk, const struct fsimg_region *r)
{
	switch (r->kind) {
	case FSIMG_SB:
		put32(blk + OFF(struct fs_dsb, sb_crc),
		      crc_skip(blk, FS_BLOCK_SIZE, OFF(struct fs_dsb, sb_crc)));
		break;
	case FSIMG_FREE_TREE:
	case FSIMG_INO_TREE:
	case FSIMG_ORPHAN_TREE:
	case FSIMG_DIR_TREE:
	case FSIMG_EXT_TREE:
	case FSIMG_REC_TREE:
	case FSIMG_XATTR_TREE:
		put32(blk + OFF(struct fs_bthdr, bh_crc),
		      crc_skip(blk, FS_BLOCK_SIZE, OFF(struct fs_bthdr, bh_crc)));
		break;
	case FSIMG_INODE:
		put32(blk + r->off + OFF(struct fs_dinode, di_crc),
		      crc_skip(blk + r->off, FS_INODE_SIZE, OFF(struct fs_dinode, di_crc)));
		break;
	default:
		break; /* nothing covers these */
	}
}

/* ---- which bytes a consistent change must be caught in ---- */

static bool in(uint32_t at, uint32_t off, uint32_t len)
{
	return at >= off && at < off + len;
}

#define IN(at, type, field) in((at), OFF(type, field), SZ(type, field))

static bool sb_checked(const uint8_t *blk, uint32_t at)
{
	const struct fs_dsb *sb = (const void *)blk;
	unsigned nfl = le16toh(sb->sb_freelist_count);
	return IN(at, struct fs_dsb, sb_magic) || IN(at, struct fs_dsb, sb_version) ||
	       IN(at, struct fs_dsb, sb_blocksize) || IN(at, struct fs_dsb, sb_blocks) ||
	       IN(at, struct fs_dsb, sb_uuid) || IN(at, struct fs_dsb, sb_log_start) ||
	       IN(at, struct fs_dsb, sb_log_blocks) || IN(at, struct fs_dsb, sb_flags) ||
	       IN(at, struct fs_dsb, sb_root_ino) || IN(at, struct fs_dsb, sb_free_root) ||
	       IN(at, struct fs_dsb, sb_ino_root) || IN(at, struct fs_dsb, sb_orphan_root) ||
	       IN(at, struct fs_dsb, sb_free_level) || IN(at, struct fs_dsb, sb_ino_level) ||
	       IN(at, struct fs_dsb, sb_orphan_level) ||
	       IN(at, struct fs_dsb, sb_freelist_count) ||
	       in(at, OFF(struct fs_dsb, sb_freelist), 8 * nfl) ||
	       IN(at, struct fs_dsb, sb_rec_root) || IN(at, struct fs_dsb, sb_rec_level) ||
	       IN(at, struct fs_dsb, sb_rec_count);
}

static bool bt_checked(const uint8_t *blk, const struct fsimg_region *r, uint32_t at, uint8_t x)
{
	const struct fs_bthdr *h = (const void *)blk;
	unsigned n = le16toh(h->bh_nrecs);
	if (at < sizeof(*h))
		return IN(at, struct fs_bthdr, bh_magic) || IN(at, struct fs_bthdr, bh_blkno) ||
		       IN(at, struct fs_bthdr, bh_owner) || IN(at, struct fs_bthdr, bh_uuid) ||
		       IN(at, struct fs_bthdr, bh_level) || IN(at, struct fs_bthdr, bh_nrecs);
	/* bh_data may move down freely; bh_lsn and the pads are not checked */
	if (r->level > 0) {
		/* child pointers; keys may move within their bounds */
		for (unsigned i = 0; i < n; i++) {
			uint32_t e = sizeof(*h) + i * sizeof(struct fs_btnode_ent);
			if (in(at, e + sizeof(struct fs_btkey), 8))
				return true;
		}
		return false;
	}
	if (in(at, sizeof(*h), 2 * n))
		return true; /* record slots */
	for (unsigned i = 0; i < n; i++) {
		unsigned off = get16(blk + sizeof(*h) + 2 * i);
		unsigned vlen = get16(blk + off + sizeof(struct fs_btkey));
		if (!in(at, off, FS_BT_REC_HDR + vlen))
			continue;
		uint32_t k = at - off;
		if (k >= FS_BT_REC_HDR) {
			uint32_t v = k - FS_BT_REC_HDR;
			if (r->kind == FSIMG_EXT_TREE && in(v, OFF(struct fs_dext, e_flags), 1))
				return (x & ~FS_EXT_UNWRITTEN) != 0; /* the unwritten bit may flip */
			if (r->kind == FSIMG_DIR_TREE)
				return IN(v, struct fs_ddirent, d_ino) ||
				       IN(v, struct fs_ddirent, d_type) ||
				       IN(v, struct fs_ddirent, d_namelen) ||
				       v >= sizeof(struct fs_ddirent); /* not the padding */
			return true;
		}
		/* directory, record and attribute keys: the low 16 bits tell
		 * colliding names apart (and a record's fragments) */
		if ((r->kind == FSIMG_DIR_TREE || r->kind == FSIMG_REC_TREE ||
		     r->kind == FSIMG_XATTR_TREE) &&
		    k < 2)
			return false;
		return true;
	}
	return false; /* free space in the block, dead records */
}

static bool inode_checked(const uint8_t *blk, const struct fsimg_region *r, uint32_t at,
			  uint8_t x)
{
	const struct fs_dinode *di = (const void *)(blk + r->off);
	uint32_t o = at - r->off, mode = le32toh(di->di_mode), flags = le32toh(di->di_flags);
	if (IN(o, struct fs_dinode, di_magic) || IN(o, struct fs_dinode, di_ino) ||
	    IN(o, struct fs_dinode, di_nlink) || IN(o, struct fs_dinode, di_nblocks) ||
	    IN(o, struct fs_dinode, di_flags) || IN(o, struct fs_dinode, di_parent) ||
	    IN(o, struct fs_dinode, di_root) || IN(o, struct fs_dinode, di_root_level) ||
	    IN(o, struct fs_dinode, di_nextents) || IN(o, struct fs_dinode, di_xattr_root) ||
	    IN(o, struct fs_dinode, di_xattr_level) || IN(o, struct fs_dinode, di_xattr_count) ||
	    IN(o, struct fs_dinode, di_xattr_bytes))
		return true;
	if (IN(o, struct fs_dinode, di_mode)) {
		/* the type and the unused high bits; permissions are anyone's */
		uint32_t bits = (uint32_t)x << (8 * (o - OFF(struct fs_dinode, di_mode)));
		return (bits & ~07777u) != 0;
	}
	if (IN(o, struct fs_dinode, di_rdev))
		return !S_ISCHR(mode) && !S_ISBLK(mode);
	if (!IN(o, struct fs_dinode, di_u))
		return false; /* owners, size, times, change, generation, LSN, pads */
	if (S_ISDIR(mode) || (S_ISLNK(mode) && !(flags & FS_DIF_SYMLINK_EXT)) ||
	    (flags & FS_DIF_EXT_BTREE))
		return false; /* unused, or a symlink's target */
	uint32_t u = o - OFF(struct fs_dinode, di_u);
	unsigned i = u / sizeof(struct fs_dext), ne = le16toh(di->di_nextents);
	if (i >= ne)
		return false;
	u %= sizeof(struct fs_dext);
	/* an extent may move in the file if it stays clear of the others */
	if (in(u, OFF(struct fs_dext, e_off), 8))
		return false;
	if (in(u, OFF(struct fs_dext, e_flags), 1))
		return (x & ~FS_EXT_UNWRITTEN) != 0;
	return true;
}

bool fsimg_byte_checked(const uint8_t *blk, const struct fsimg_region *r, uint32_t at, uint8_t x)
{
	switch (r->kind) {
	case FSIMG_SB:
		return sb_checked(blk, at);
	case FSIMG_FREE_TREE:
	case FSIMG_INO_TREE:
	case FSIMG_ORPHAN_TREE:
	case FSIMG_DIR_TREE:
	case FSIMG_EXT_TREE:
	case FSIMG_REC_TREE:
	case FSIMG_XATTR_TREE:
		return bt_checked(blk, r, at, x);
	case FSIMG_INODE:
		return inode_checked(blk, r, at, x);
	default:
		return false;
	}
}

void fsimg_describe(const uint8_t *blk, const struct fsimg_region *r, uint32_t at, char *buf,
		    size_t size)
{
	snprintf(buf, size, "byte %u", at - r->off);
	bool tree = (r->kind >= FSIMG_FREE_TREE && r->kind <= FSIMG_REC_TREE) ||
		    r->kind == FSIMG_XATTR_TREE;
	if (!tree || r->level > 0 || at < sizeof(struct fs_bthdr))
		return;
	const struct fs_bthdr *h = (const void *)blk;
	for (unsigned i = 0; i < le16toh(h->bh_nrecs); i++) {
		unsigned off = get16(blk + sizeof(*h) + 2 * i);
		unsigned vlen = get16(blk + off + sizeof(struct fs_btkey));
		if (in(at, off, FS_BT_REC_HDR + vlen)) {
			snprintf(buf, size, "record %u (of %u) byte %u", i, le16toh(h->bh_nrecs),
				 at - off);
			return;
		}
	}
}

/* ---- a user's visit ---- */

struct ex {
	struct fsimg_result *res;
	uint64_t visited[64];
	unsigned nvisited;
	uint8_t *buf;
};

static int op(struct ex *x, int err)
{
	x->res->ops++;
	if (err) {
		x->res->op_errors++;
		if (err == -EUCLEAN || err == -EIO)
			x->res->op_corrupt++;
	}
	return err;
}

struct names {
	char (*v)[FS_NAME_MAX + 1];
	unsigned n, cap;
};

static int collect(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		   uint64_t cookie)
{
	struct names *nm = arg;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (nm->n == 100000)
		return 1;
	if (nm->n == nm->cap) {
		nm->cap = nm->cap ? 2 * nm->cap : 64;
		nm->v = realloc(nm->v, nm->cap * sizeof(*nm->v));
	}
	memcpy(nm->v[nm->n], name, len);
	nm->v[nm->n][len] = 0;
	nm->n++;
	return 0;
}

#define READ_CHUNK (256u << 10)
#define READ_MAX   (4u << 20)

static void visit_file(struct ex *x, struct fs_inode *ip, uint64_t size)
{
	for (uint64_t off = 0; off < size && off < READ_MAX; off += READ_CHUNK) {
		size_t n;
		bool eof;
		if (op(x, fs_read(ip, off, x->buf, READ_CHUNK, &n, &eof)))
			break;
	}
	uint64_t where;
	int err = fs_seek(ip, 0, FS_SEEK_HOLE, &where);
	op(x, err == -ENXIO ? 0 : err);
	struct fs_map maps[16];
	unsigned n;
	op(x, fs_map_blocks(ip, 0, 1 << 20, false, maps, 16, &n));
}

static int collect_xattr(void *arg, const char *name, size_t len, size_t vlen,
			 uint64_t cookie)
{
	struct names *nm = arg;
	if (nm->n == 1000)
		return 1;
	if (nm->n == nm->cap) {
		nm->cap = nm->cap ? 2 * nm->cap : 16;
		nm->v = realloc(nm->v, nm->cap * sizeof(*nm->v));
	}
	memcpy(nm->v[nm->n], name, len);
	nm->v[nm->n][len] = 0;
	nm->n++;
	return 0;
}

/* Every extended attribute of ip, read back (x->buf holds the largest). */
static void visit_xattrs(struct ex *x, struct fs_inode *ip)
{
	struct names nm = {0};
	op(x, fs_listxattr(ip, 0, collect_xattr, &nm));
	for (unsigned i = 0; i < nm.n; i++) {
		size_t len;
		op(x, fs_getxattr(ip, nm.v[i], strlen(nm.v[i]), x->buf, READ_CHUNK, &len));
	}
	free(nm.v);
}

static void visit_dir(struct ex *x, struct fs_inode *dir, unsigned depth)
{
	uint64_t ino = fs_ino(dir);
	for (unsigned i = 0; i < x->nvisited; i++)
		if (x->visited[i] == ino)
			return; /* a loop made by damage */
	if (depth > 16 || x->nvisited == 64)
		return;
	x->visited[x->nvisited++] = ino;
	struct names nm = {0};
	op(x, fs_readdir(dir, 0, collect, &nm));
	for (unsigned i = 0; i < nm.n; i++) {
		struct fs_inode *ip;
		if (op(x, fs_lookup(dir, nm.v[i], strlen(nm.v[i]), &ip)))
			continue;
		struct fs_attr at;
		op(x, fs_getattr(ip, &at));
		visit_xattrs(x, ip);
		if (S_ISREG(at.mode)) {
			visit_file(x, ip, at.size);
		} else if (S_ISDIR(at.mode)) {
			visit_dir(x, ip, depth + 1);
		} else if (S_ISLNK(at.mode)) {
			char t[FS_SYMLINK_MAX + 1];
			size_t len;
			op(x, fs_readlink(ip, t, sizeof(t), &len));
		}
		fs_iput(ip);
	}
	free(nm.v);
}

static struct fs_inode *path(struct ex *x, struct fs *fs, const char *p)
{
	struct fs_inode *ip;
	if (op(x, fs_root(fs, &ip)))
		return NULL;
	while (*p) {
		const char *s = strchr(p, '/');
		size_t len = s ? (size_t)(s - p) : strlen(p);
		struct fs_inode *next;
		int err = op(x, fs_lookup(ip, p, len, &next));
		fs_iput(ip);
		if (err)
			return NULL;
		ip = next;
		p += len + (s != NULL);
	}
	return ip;
}

static int count_rec(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	return 0;
}

static void change_things(struct ex *x, struct fs *fs)
{
	struct fs_inode *root = path(x, fs, ""), *ip, *dir;
	if (!root)
		return;
	struct fs_create_args fa = {.mode = S_IFREG | 0644}, da = {.mode = S_IFDIR | 0755};
	memset(x->buf, 0x5a, READ_CHUNK);
	if (!op(x, fs_create(root, "new", 3, &fa, &ip, NULL))) {
		op(x, fs_write(ip, 0, x->buf, 100 << 10, NULL));
		op(x, fs_fsync(ip, false, NULL));
		fs_iput(ip);
	}
	if (!op(x, fs_create(root, "newdir", 6, &da, &dir, NULL))) {
		for (int i = 0; i < 3; i++) {
			char name[8] = {'n', (char)('0' + i), 0};
			if (!op(x, fs_create(dir, name, 2, &fa, &ip, NULL)))
				fs_iput(ip);
		}
		fs_iput(dir);
	}
	if ((ip = path(x, fs, "a/f1"))) {
		op(x, fs_write(ip, 4096, x->buf, 20000, NULL));
		fs_iput(ip);
	}
	if ((ip = path(x, fs, "frag"))) {
		op(x, fs_setattr(ip, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = 100 << 10},
				 NULL));
		op(x, fs_write(ip, 300 << 10, x->buf, 8192, NULL));
		fs_iput(ip);
	}
	if ((ip = path(x, fs, "sparse"))) {
		op(x, fs_fallocate(ip, FS_FALLOC_PUNCH, 0, 1 << 20, NULL));
		op(x, fs_write(ip, 64 << 10, x->buf, 4096, NULL));
		fs_iput(ip);
	}
	if ((ip = path(x, fs, "prealloc"))) {
		op(x, fs_write(ip, 0, x->buf, 64 << 10, NULL));
		op(x, fs_fsync(ip, true, NULL));
		fs_iput(ip);
	}
	struct fs_inode *a = path(x, fs, "a"), *b = path(x, fs, "a/b"), *c = path(x, fs, "a/b/c");
	if (a && b)
		op(x, fs_rename(b, "f2", 2, a, "f2moved", 7, NULL));
	if (c)
		op(x, fs_unlink(c, "link", 4, NULL));
	if (b && c)
		op(x, fs_rename(b, "c", 1, root, "c-moved", 7, NULL));
	if ((dir = path(x, fs, "big"))) {
		if (!op(x, fs_create(dir, "zz-new", 6, &fa, &ip, NULL)))
			fs_iput(ip);
		op(x, fs_unlink(dir, "entry-00001", 11, NULL));
		op(x, fs_rmdir(dir, "entry-00016", 11, NULL));
		fs_iput(dir);
	}
	if ((dir = path(x, fs, "junk"))) {
		op(x, fs_unlink(dir, "j1", 2, NULL));
		fs_iput(dir);
	}
	op(x, fs_unlink(root, "s2", 2, NULL));
	op(x, fs_rec_put(fs, "client-new", 10, x->buf, 1000, NULL));
	op(x, fs_rec_put(fs, "client-5", 8, x->buf, 7, NULL));
	op(x, fs_rec_delete(fs, "client-7", 8, NULL));
	if (c)
		fs_iput(c);
	if (b)
		fs_iput(b);
	if (a)
		fs_iput(a);
	op(x, fs_sync(fs));
	fs_iput(root);
}

static void check_image(struct dev *d, FILE *out, int *mount_err, uint64_t *problems)
{
	struct fs *fs;
	*problems = 0;
	*mount_err = fs_mount(&(struct fs_mount_opts){.ddev = d, .readonly_check = true}, &fs);
	if (*mount_err)
		return;
	int err = fs_check(fs, out, problems);
	if (err && !*problems)
		*problems = 1;
	if (*problems)
		fs_shutdown(fs, "check found damage"); /* as jnfs check does */
	fs_unmount(fs);
}

void fsimg_exercise(struct dev *d, const struct fsimg_opts *o, struct fsimg_result *res)
{
	memset(res, 0, sizeof(*res));
	FILE *out = o->out ? o->out : stderr;
	check_image(d, out, &res->check_mount_err, &res->problems);
	struct fs *fs;
	res->mount_err = fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs);
	if (!res->mount_err) {
		struct ex x = {.res = res, .buf = malloc(READ_CHUNK)};
		struct fs_inode *root;
		if (!op(&x, fs_root(fs, &root))) {
			visit_dir(&x, root, 0);
			fs_iput(root);
		}
		struct fs_statfs st;
		op(&x, fs_statfs(fs, &st));
		op(&x, fs_rec_iterate(fs, count_rec, &x));
		if (o->modify)
			change_things(&x, fs);
		res->unmount_err = fs_unmount(fs);
		res->shutdown = res->unmount_err == -EIO;
		free(x.buf);
	}
	if (o->final_check)
		check_image(d, out, &res->final_mount_err, &res->final_problems);
}

const char *fsimg_clean_means_usable(const struct fsimg_result *res)
{
	if (res->check_mount_err || res->problems)
		return NULL; /* damage found: anything but a crash goes */
	if (res->mount_err)
		return "check is clean, but mount refuses";
	if (res->op_corrupt)
		return "check is clean, but operations report corruption";
	if (res->unmount_err)
		return "check is clean, but unmount fails";
	if (res->final_mount_err || res->final_problems)
		return "check was clean, but is not after the operations";
	return NULL;
}

/* ---- messages ---- */

/*
 * Capturing swaps the stderr stream, not file descriptor 2: sanitizer
 * reports still reach the real stderr. A fatal signal copies what was
 * captured there first (an engine panic message, say).
 */
static volatile sig_atomic_t capture_fd = -1;

static void on_fatal(int sig)
{
	int fd = capture_fd;
	if (fd >= 0) {
		char b[4096];
		ssize_t n;
		off_t o = 0;
		while ((n = pread(fd, b, sizeof(b), o)) > 0 && write(2, b, (size_t)n) == n)
			o += n;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void fsimg_capture_stderr(void (*fn)(void *arg), void *arg, char *buf, size_t size)
{
	static bool handlers;
	/* FSIMG_NOCAPTURE=1: leave stderr alone */
	FILE *f = getenv("FSIMG_NOCAPTURE") ? NULL : tmpfile();
	if (!f) {
		fn(arg);
		buf[0] = 0;
		return;
	}
	if (!handlers) {
		signal(SIGABRT, on_fatal);
		signal(SIGSEGV, on_fatal);
		signal(SIGBUS, on_fatal);
		handlers = true;
	}
	setvbuf(f, NULL, _IONBF, 0);
	FILE *real = stderr;
	capture_fd = fileno(f);
	stderr = f;
	fn(arg);
	stderr = real;
	capture_fd = -1;
	size_t n = (size_t)pread(fileno(f), buf, size - 1, 0);
	buf[n < size ? n : 0] = 0;
	fclose(f);
}
