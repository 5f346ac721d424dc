/*
 * verify.c - verifiers: what every metadata block must look like when read,
 * and the CRC and LSN stamped on it when it is written in place or replayed.
 *
 * A failed verification is corruption: reported with the block number and
 * returned as -EUCLEAN, never a crash. B+tree blocks are checked down to
 * every record offset and the order of their keys, because everything the
 * tree code does with a block trusts those.
 */
#include <sys/stat.h>

#include "base/crc32c.h"
#include "fs/fs_priv.h"

/* CRC of a block (or inode) with its 4-byte CRC field at crc_off zeroed. */
static uint32_t crc_skip(const void *p, size_t len, size_t crc_off)
{
	static const uint8_t zero[4];
	uint32_t c = crc32c(0, p, crc_off);
	c = crc32c(c, zero, 4);
	return crc32c(c, (const uint8_t *)p + crc_off + 4, len - crc_off - 4);
}

/* ---- superblock ---- */

int fs_verify_sb(const struct fs_dsb *sb, uint64_t dev_blocks)
{
	if (le32toh(sb->sb_magic) != FS_SB_MAGIC) {
		msg_err("fs: block 0 is not a jnfs superblock (magic 0x%08x)",
			le32toh(sb->sb_magic));
		return -EUCLEAN;
	}
	uint32_t version = le32toh(sb->sb_version);
	if (version < FS_VERSION_MIN || version > FS_VERSION ||
	    le32toh(sb->sb_blocksize) != FS_BLOCK_SIZE) {
		msg_err("fs: superblock version %u / block size %u not supported",
			le32toh(sb->sb_version), le32toh(sb->sb_blocksize));
		return -EUCLEAN;
	}
	if (crc_skip(sb, FS_BLOCK_SIZE, offsetof(struct fs_dsb, sb_crc)) != le32toh(sb->sb_crc)) {
		msg_err("fs: superblock CRC mismatch");
		return -EUCLEAN;
	}
	uint64_t blocks = le64toh(sb->sb_blocks);
	if (blocks > dev_blocks) {
		msg_err("fs: the filesystem has %llu blocks but the device only %llu: truncated "
			"image?",
			(unsigned long long)blocks, (unsigned long long)dev_blocks);
		return -EUCLEAN;
	}
	uint64_t ls = le64toh(sb->sb_log_start), lb = le64toh(sb->sb_log_blocks);
	bool ext = le32toh(sb->sb_flags) & FS_SB_EXTERNAL_LOG;
	if (!lb || (!ext && (ls == 0 || ls >= blocks || lb > blocks - ls))) {
		msg_err("fs: superblock names an impossible log (%llu blocks at %llu)",
			(unsigned long long)lb, (unsigned long long)ls);
		return -EUCLEAN;
	}
	uint64_t roots[] = {le64toh(sb->sb_free_root), le64toh(sb->sb_ino_root),
			    le64toh(sb->sb_orphan_root), fs_ino_block(le64toh(sb->sb_root_ino))};
	for (unsigned i = 0; i < ARRAY_SIZE(roots); i++) {
		if (roots[i] == 0 || roots[i] >= blocks) {
			msg_err("fs: superblock names a tree root outside the device");
			return -EUCLEAN;
		}
	}
	uint64_t rec_root = le64toh(sb->sb_rec_root);
	if (rec_root >= blocks ||
	    (!rec_root && (sb->sb_rec_level || sb->sb_rec_count))) {
		msg_err("fs: superblock names an impossible record tree");
		return -EUCLEAN;
	}
	if (le32toh(sb->sb_rec_count) > FS_REC_MAX) {
		msg_err("fs: superblock counts %u records (at most %u)", le32toh(sb->sb_rec_count),
			FS_REC_MAX);
		return -EUCLEAN;
	}
	if (le16toh(sb->sb_free_level) >= FS_BT_MAXLEVELS ||
	    le16toh(sb->sb_ino_level) >= FS_BT_MAXLEVELS ||
	    le16toh(sb->sb_orphan_level) >= FS_BT_MAXLEVELS ||
	    le16toh(sb->sb_rec_level) >= FS_BT_MAXLEVELS) {
		msg_err("fs: superblock names an impossible tree height");
		return -EUCLEAN;
	}
	if (le32toh(sb->sb_flags) & ~FS_SB_EXTERNAL_LOG) {
		msg_err("fs: superblock has unknown feature flags 0x%x",
			le32toh(sb->sb_flags) & ~FS_SB_EXTERNAL_LOG);
		return -EUCLEAN;
	}
	unsigned nfl = le16toh(sb->sb_freelist_count);
	if (nfl > FS_FREELIST_MAX) {
		msg_err("fs: superblock free list holds %u blocks (max %u)", nfl, FS_FREELIST_MAX);
		return -EUCLEAN;
	}
	for (unsigned i = 0; i < nfl; i++) {
		uint64_t b = le64toh(sb->sb_freelist[i]);
		if (b == 0 || b >= blocks) {
			msg_err("fs: superblock free list names block %llu outside the device",
				(unsigned long long)b);
			return -EUCLEAN;
		}
	}
	return 0;
}

static int sb_verify(struct fs *fs, const void *blk, uint64_t blkno, uint64_t owner)
{
	return fs_verify_sb(blk, fs->f_blocks ? fs->f_blocks : UINT64_MAX);
}

static void sb_stamp(void *blk, uint64_t lsn)
{
	struct fs_dsb *sb = blk;
	sb->sb_lsn = htole64(lsn);
	sb->sb_crc = htole32(crc_skip(sb, FS_BLOCK_SIZE, offsetof(struct fs_dsb, sb_crc)));
}

const struct fs_verifier fs_sb_verifier = {
	.name = "superblock",
	.magic = FS_SB_MAGIC,
	.verify = sb_verify,
	.stamp = sb_stamp,
};

/* ---- B+tree blocks ---- */

static int bt_verify_block(struct fs *fs, const void *blk, uint64_t blkno, uint64_t owner,
			   uint32_t magic, const char *name)
{
	const struct fs_bthdr *h = blk;
	const char *why = NULL;
	if (le32toh(h->bh_magic) != magic) {
		why = "wrong magic";
	} else if (crc_skip(blk, FS_BLOCK_SIZE, offsetof(struct fs_bthdr, bh_crc)) !=
		   le32toh(h->bh_crc)) {
		why = "CRC mismatch";
	} else if (le64toh(h->bh_blkno) != blkno) {
		why = "misplaced (block number)";
	} else if (memcmp(h->bh_uuid, fs->f_uuid, 16) != 0) {
		why = "belongs to another filesystem";
	} else if (owner != UINT64_MAX && le64toh(h->bh_owner) != owner) {
		why = "wrong owner";
	} else if (le16toh(h->bh_level) >= FS_BT_MAXLEVELS) {
		why = "impossible level";
	}
	if (!why) {
		unsigned n = le16toh(h->bh_nrecs);
		const uint8_t *p = blk;
		if (le16toh(h->bh_level) > 0) {
			if (n > FS_BT_NODE_MAX) {
				why = "too many entries";
			} else {
				const struct fs_btnode_ent *e =
					(const void *)(p + sizeof(struct fs_bthdr));
				for (unsigned i = 0; i < n && !why; i++) {
					uint64_t c = le64toh(e[i].child);
					if (c == 0 || (fs->f_blocks && c >= fs->f_blocks))
						why = "child outside the device";
					struct fs_btkey a = {le64toh(e[i].key.k0),
							     le64toh(e[i].key.k1)};
					if (i > 0) {
						struct fs_btkey b = {le64toh(e[i - 1].key.k0),
								     le64toh(e[i - 1].key.k1)};
						if (bt_keycmp(&b, &a) >= 0)
							why = "keys out of order";
					}
				}
			}
		} else {
			unsigned data = le16toh(h->bh_data);
			if (sizeof(struct fs_bthdr) + 2 * n > data || data > FS_BLOCK_SIZE) {
				why = "record area overlaps the slots";
			} else {
				const uint16_t *slot = (const void *)(p + sizeof(struct fs_bthdr));
				struct fs_btkey prev = {0, 0};
				/* bytes taken by records: they must not overlap, or the
				 * space arithmetic of the tree code goes wrong */
				uint8_t used[FS_BLOCK_SIZE / 8] = {0};
				for (unsigned i = 0; i < n && !why; i++) {
					unsigned off = le16toh(slot[i]);
					if (off < data || off + FS_BT_REC_HDR > FS_BLOCK_SIZE) {
						why = "record outside the block";
						break;
					}
					uint16_t vlen;
					memcpy(&vlen, p + off + sizeof(struct fs_btkey), 2);
					vlen = le16toh(vlen);
					if (vlen > FS_BT_MAX_VALUE ||
					    off + FS_BT_REC_HDR + vlen > FS_BLOCK_SIZE) {
						why = "record value outside the block";
						break;
					}
					for (unsigned b = off; b < off + FS_BT_REC_HDR + vlen; b++) {
						if (used[b / 8] & (1u << (b % 8))) {
							why = "records overlap";
							break;
						}
						used[b / 8] |= (uint8_t)(1u << (b % 8));
					}
					if (why)
						break;
					struct fs_btkey k;
					memcpy(&k, p + off, sizeof(k));
					k.k0 = le64toh(k.k0);
					k.k1 = le64toh(k.k1);
					if (i > 0 && bt_keycmp(&prev, &k) >= 0)
						why = "keys out of order";
					prev = k;
				}
			}
		}
	}
	if (why) {
		msg_err("fs: %s tree block %llu is corrupt: %s", name, (unsigned long long)blkno,
			why);
		return -EUCLEAN;
	}
	return 0;
}

static void bt_stamp(void *blk, uint64_t lsn)
{
	struct fs_bthdr *h = blk;
	h->bh_lsn = htole64(lsn);
	h->bh_crc = htole32(crc_skip(blk, FS_BLOCK_SIZE, offsetof(struct fs_bthdr, bh_crc)));
}

#define BT_VERIFIER(fn, mg, nm)                                                                    \
	static int fn(struct fs *fs, const void *blk, uint64_t blkno, uint64_t owner)              \
	{                                                                                          \
		return bt_verify_block(fs, blk, blkno, owner, mg, nm);                             \
	}
BT_VERIFIER(bt_verify_free, FS_BT_FREE_MAGIC, "free-space")
BT_VERIFIER(bt_verify_ino, FS_BT_INO_MAGIC, "inode index")
BT_VERIFIER(bt_verify_dir, FS_BT_DIR_MAGIC, "directory")
BT_VERIFIER(bt_verify_ext, FS_BT_EXT_MAGIC, "extent")
BT_VERIFIER(bt_verify_orphan, FS_BT_ORPHAN_MAGIC, "orphan")
BT_VERIFIER(bt_verify_rec, FS_BT_REC_MAGIC, "record")
BT_VERIFIER(bt_verify_xattr, FS_BT_XATTR_MAGIC, "attribute")

const struct fs_verifier fs_bt_verifiers[] = {
	{"free-space", FS_BT_FREE_MAGIC, bt_verify_free, bt_stamp},
	{"inode index", FS_BT_INO_MAGIC, bt_verify_ino, bt_stamp},
	{"directory", FS_BT_DIR_MAGIC, bt_verify_dir, bt_stamp},
	{"extent", FS_BT_EXT_MAGIC, bt_verify_ext, bt_stamp},
	{"orphan", FS_BT_ORPHAN_MAGIC, bt_verify_orphan, bt_stamp},
	{"record", FS_BT_REC_MAGIC, bt_verify_rec, bt_stamp},
	{"attribute", FS_BT_XATTR_MAGIC, bt_verify_xattr, bt_stamp},
	{NULL, 0, NULL, NULL},
};

const struct fs_verifier *fs_bt_verifier(uint32_t magic)
{
	for (const struct fs_verifier *v = fs_bt_verifiers; v->name; v++)
		if (v->magic == magic)
			return v;
	return NULL;
}

/* ---- inodes ---- */

/* Inode chunk blocks: no block-level format; every allocated slot carries
 * its own magic, CRC and number (ino_verify). */
const struct fs_verifier fs_ichunk_verifier = {
	.name = "inode chunk",
	.magic = 0,
	.verify = NULL,
	.stamp = NULL,
};

void ino_stamp(struct fs_dinode *d, uint64_t lsn)
{
	d->di_lsn = htole64(lsn);
	d->di_crc = htole32(crc_skip(d, FS_INODE_SIZE, offsetof(struct fs_dinode, di_crc)));
}

/* Inline extents: in file order, apart, inside the device, known flags. */
static const char *inline_ext_verify(const struct fs_dinode *d, unsigned n, uint64_t blocks)
{
	uint64_t end = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct fs_dext *e = &d->di_u.di_ext[i];
		uint64_t off = le64toh(e->e_off), start = le64toh(e->e_start);
		uint32_t len = le32toh(e->e_len);
		if (!len || len > FS_EXT_MAXLEN || le32toh(e->e_flags) & ~FS_EXT_UNWRITTEN)
			return "malformed extent";
		if (start == 0 || start >= blocks || len > blocks - start)
			return "extent outside the device";
		if ((i > 0 && off < end) || off > UINT64_MAX - len)
			return "extents out of order";
		end = off + len;
	}
	return NULL;
}

/*
 * Everything an inode says about itself that the engine relies on: its
 * identity, a known type and flags, a tree root where (and only where) it
 * has a tree, inline extents that are sane, fields that only some types use
 * left zero by the others.
 */
int ino_verify(const struct fs_dinode *d, uint64_t ino, uint64_t blocks)
{
	const char *why = NULL;
	uint32_t mode = le32toh(d->di_mode), flags = le32toh(d->di_flags);
	unsigned next = le16toh(d->di_nextents), level = le16toh(d->di_root_level);
	uint64_t root = le64toh(d->di_root), size = le64toh(d->di_size);
	uint64_t xroot = le64toh(d->di_xattr_root);
	unsigned xlevel = le16toh(d->di_xattr_level), xcount = le16toh(d->di_xattr_count);
	uint32_t xbytes = le32toh(d->di_xattr_bytes);
	bool dir = S_ISDIR(mode), reg = S_ISREG(mode), lnk = S_ISLNK(mode);
	bool tree = flags & FS_DIF_EXT_BTREE, symext = flags & FS_DIF_SYMLINK_EXT;
	bool inline_ext = (reg && !tree) || symext;
	if (le32toh(d->di_magic) != FS_INODE_MAGIC)
		why = "wrong magic";
	else if (crc_skip(d, FS_INODE_SIZE, offsetof(struct fs_dinode, di_crc)) !=
		 le32toh(d->di_crc))
		why = "CRC mismatch";
	else if (le64toh(d->di_ino) != ino)
		why = "wrong inode number";
	else if (!ino_ftype(mode) || (mode & ~(uint32_t)(S_IFMT | 07777)))
		why = "impossible mode";
	else if ((flags & ~(FS_DIF_EXT_BTREE | FS_DIF_SYMLINK_EXT | FS_DIF_PREALLOC)) ||
		 (tree && !reg) || (symext && !lnk) || ((flags & FS_DIF_PREALLOC) && !reg))
		why = "impossible flags";
	else if (level >= FS_BT_MAXLEVELS)
		why = "impossible tree height";
	else if ((dir || tree) && (root == 0 || root >= blocks))
		why = "tree root outside the device";
	else if (!dir && !tree && (root || level))
		why = "a tree root but no tree";
	else if (next > (inline_ext ? FS_INLINE_EXTENTS : 0))
		why = "too many inline extents";
	else if (!dir && le64toh(d->di_parent))
		why = "a parent but not a directory";
	else if (!S_ISCHR(mode) && !S_ISBLK(mode) && le64toh(d->di_rdev))
		why = "a device number but not a device";
	else if (lnk && (size == 0 || size > FS_SYMLINK_MAX || symext != (size > FS_INLINE_SYMLINK)))
		why = "impossible symlink length";
	else if (symext && (next > 1 || (next == 1 && (le64toh(d->di_u.di_ext[0].e_off) != 0 ||
							 le32toh(d->di_u.di_ext[0].e_len) != 1))))
		why = "symlink target block misplaced"; /* none: an orphan half freed */
	else if (xlevel >= FS_BT_MAXLEVELS || xroot >= blocks || xbytes > FS_XATTR_TOTAL_MAX ||
		 (!xroot && (xlevel || xcount || xbytes)) ||
		 xbytes < (uint64_t)xcount * (FS_XATTR_ENTRY_COST + 1))
		why = "impossible attribute tree";
	else if (inline_ext)
		why = inline_ext_verify(d, next, blocks);
	if (why) {
		msg_err("fs: inode %llu is corrupt: %s", (unsigned long long)ino, why);
		return -EUCLEAN;
	}
	return 0;
}

/*
 * After log replay: blocks whose ranges were replayed carry stale CRCs (a
 * logged chunk holds whatever the CRC field was in memory). Restamp every
 * block whose magic we know; inode slots are logged whole, CRC included.
 */
void fs_restamp(void *arg, uint64_t daddr, void *blk, uint32_t len, uint64_t lsn)
{
	if (len != FS_BLOCK_SIZE)
		return;
	uint32_t magic;
	memcpy(&magic, blk, 4);
	magic = le32toh(magic);
	if (daddr == 0 && magic == FS_SB_MAGIC) {
		sb_stamp(blk, lsn);
		return;
	}
	if (fs_bt_verifier(magic))
		bt_stamp(blk, lsn);
}
