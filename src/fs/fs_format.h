/*
 * fs_format.h - the on-disk format of the jnfs filesystem. One set of
 * headers for the engine and every offline tool (mkfs, check). All fields
 * little-endian; sizes and offsets are pinned with _Static_assert.
 *
 * Geometry: 4 KiB blocks, numbered from 0. Block 0 is the superblock; the
 * internal log is a contiguous run of blocks (or the log lives on its own
 * device). Everything else is allocated from the free-space B+tree.
 *
 * Metadata:
 *   - superblock (block 0): geometry, UUID, log location, tree roots, the
 *     free list that feeds the free-space tree's own blocks, the file-handle
 *     secret. The pNFS block-layout volume signature is the UUID at byte
 *     FS_SB_SIG_OFFSET of block 0.
 *   - B+tree blocks (one format, seven uses): free space (key: start block),
 *     inode index (key: first inode of a chunk), orphans (key: inode),
 *     directories (key: name hash and collision index), extent maps (key:
 *     file block), durable records (key: key hash, collision index and
 *     fragment), extended attributes (key: name hash and collision index,
 *     fragment). Every block has a header with magic, CRC32C, its own block
 *     number, owner, LSN and UUID.
 *   - inodes: 512 bytes each, 8 per block, in chunks of 8 contiguous blocks
 *     (64 inodes). The inode number names its place: ino = block * 8 + slot.
 *     Each inode carries its own magic, CRC, number (owner) and LSN.
 *
 * CRCs are stamped when a block is written in place (and after log replay);
 * an in-memory copy's CRC field is stale and never checked.
 */
#ifndef JNFS_FS_FS_FORMAT_H
#define JNFS_FS_FS_FORMAT_H

#include <stdint.h>

#define FS_BLOCK_SHIFT 12
#define FS_BLOCK_SIZE  (1u << FS_BLOCK_SHIFT)

/* ---- superblock ---- */

#define FS_SB_MAGIC      0x53464e4au /* "JNFS" */
/*
 * Version 2 added extended attributes (the inode's di_xattr_* fields and
 * BXAT trees). This build mounts version 1 images and makes one version 2
 * in the transaction of its first attribute, so that an older build, which
 * knows version 1 alone, refuses an image that may hold attributes.
 */
#define FS_VERSION       2
#define FS_VERSION_MIN   1
#define FS_VERSION_XATTR 2
#define FS_SB_SIG_OFFSET 32 /* the pNFS volume signature: sb_uuid */
#define FS_FREELIST_MAX  32
#define FS_SECRET_SIZE   32

#define FS_SB_EXTERNAL_LOG 0x1u

struct fs_dsb {
	uint32_t sb_magic;
	uint32_t sb_version;
	uint32_t sb_crc;
	uint32_t sb_blocksize;
	uint64_t sb_lsn;
	uint64_t sb_blocks;  /* total blocks of the data device */
	uint8_t sb_uuid[16]; /* at FS_SB_SIG_OFFSET */
	uint64_t sb_log_start;  /* first block of the internal log */
	uint64_t sb_log_blocks; /* log size in blocks */
	uint8_t sb_log_uuid[16];
	uint32_t sb_flags;
	uint32_t sb_pad0;
	uint64_t sb_root_ino;
	uint64_t sb_free_root; /* free-space tree */
	uint64_t sb_ino_root;  /* inode index tree */
	uint64_t sb_orphan_root; /* inodes unlinked but not yet freed */
	uint16_t sb_free_level, sb_ino_level, sb_orphan_level;
	uint16_t sb_freelist_count;
	uint32_t sb_pad1;
	uint64_t sb_freelist[FS_FREELIST_MAX]; /* blocks reserved for the free-space tree */
	uint8_t sb_secret[FS_SECRET_SIZE];      /* file-handle authenticator key */
	uint64_t sb_mkfs_time;
	char sb_label[32];
	/* durable records (fs_rec_*): their tree, 0 until the first record */
	uint64_t sb_rec_root;
	uint16_t sb_rec_level;
	uint16_t sb_pad2;
	uint32_t sb_rec_count; /* records (not tree records), at most FS_REC_MAX */
};
_Static_assert(__builtin_offsetof(struct fs_dsb, sb_uuid) == FS_SB_SIG_OFFSET,
	       "pNFS signature offset");
_Static_assert(sizeof(struct fs_dsb) <= FS_BLOCK_SIZE, "superblock fits a block");

/* ---- B+tree blocks ---- */

#define FS_BT_FREE_MAGIC   0x45524642u /* "BFRE" */
#define FS_BT_INO_MAGIC    0x4f4e4942u /* "BINO" */
#define FS_BT_DIR_MAGIC    0x52494442u /* "BDIR" */
#define FS_BT_EXT_MAGIC    0x54584542u /* "BEXT" */
#define FS_BT_ORPHAN_MAGIC 0x50524f42u /* "BORP" */
#define FS_BT_REC_MAGIC    0x43455242u /* "BREC" */
#define FS_BT_XATTR_MAGIC  0x54415842u /* "BXAT" */
#define FS_BT_MAXLEVELS    8

struct fs_bthdr {
	uint32_t bh_magic;
	uint32_t bh_crc;
	uint64_t bh_blkno; /* this block: detects misdirected writes */
	uint64_t bh_owner; /* owning inode, 0 for the global trees */
	uint64_t bh_lsn;
	uint8_t bh_uuid[16];
	uint16_t bh_level; /* 0: leaf */
	uint16_t bh_nrecs;
	uint16_t bh_data; /* leaf: offset where record data starts (grows down) */
	uint16_t bh_pad;
	uint64_t bh_pad2;
};
_Static_assert(sizeof(struct fs_bthdr) == 64, "btree header size");

/* Keys are two 64-bit words compared as a pair. */
struct fs_btkey {
	uint64_t k0, k1;
};
_Static_assert(sizeof(struct fs_btkey) == 16, "btree key size");

/*
 * Leaf: after the header, an array of bh_nrecs uint16_t offsets (record
 * order = key order); each points to a record {key, uint16_t vlen, value}
 * in the data area between bh_data and the end of the block.
 * Node: after the header, bh_nrecs entries {key, uint64_t child}: child i
 * holds keys >= key i (and < key i+1).
 */
struct fs_btnode_ent {
	struct fs_btkey key;
	uint64_t child;
};
_Static_assert(sizeof(struct fs_btnode_ent) == 24, "btree node entry size");

#define FS_BT_NODE_MAX ((FS_BLOCK_SIZE - sizeof(struct fs_bthdr)) / sizeof(struct fs_btnode_ent))
#define FS_BT_REC_HDR  (sizeof(struct fs_btkey) + sizeof(uint16_t))
/* Largest value a leaf record may hold (a quarter of a block, so a split
 * always makes room). */
#define FS_BT_MAX_VALUE 900

/*
 * durable records: key {hash | collision index << 1 | fragment, 0}, where
 * hash is the top 48 bits (FS_REC_HASH_MASK) of SipHash-2-4 of the record's
 * key, keyed with the two words siphash24(sb_secret[0..16), "records-0")
 * and (..., "records-1"); the collision index (15 bits) tells apart keys of
 * one hash; fragment is 0 or 1. A record is one or two tree records:
 * fragment 0 holds struct fs_drec, the key, and the value's first bytes,
 * as many as fit in FS_BT_MAX_VALUE; fragment 1, when the value did not
 * fit, the rest. Both are written in one transaction. Bounds: a key of
 * 1..FS_REC_KEY_MAX bytes, a value of up to FS_REC_VALUE_MAX, at most
 * FS_REC_MAX records (docs/engine-records.md).
 */
#define FS_REC_KEY_MAX   64
#define FS_REC_VALUE_MAX 1024
#define FS_REC_MAX       16384
#define FS_REC_HASH_MASK 0xffffffffffff0000ull
#define FS_REC_IDX_MAX   0x7fffu
struct fs_drec {
	uint16_t r_vallen; /* the whole value */
	uint8_t r_keylen;
	uint8_t r_nfrags; /* 1 or 2 */
	uint32_t r_crc;   /* CRC32C of the key, then the whole value */
	/* the key, then the value's first bytes */
};
_Static_assert(sizeof(struct fs_drec) == 8, "record header size");
_Static_assert(FS_BT_MAX_VALUE - sizeof(struct fs_drec) - FS_REC_KEY_MAX + FS_BT_MAX_VALUE >=
		       FS_REC_VALUE_MAX,
	       "a record fits in two fragments");
_Static_assert(FS_REC_MAX <= FS_REC_IDX_MAX + 1, "every record has a collision index");

/*
 * extended attributes: one tree per inode (di_xattr_root, 0 when it has
 * none), key {hash | collision index, fragment}, where hash is the top 48
 * bits (FS_XATTR_HASH_MASK) of the records' SipHash of the name (rec_hash)
 * and the collision index (16 bits) tells apart names of one hash. An
 * attribute is x_nfrags tree records numbered 0.. in k1, all written in
 * one transaction: fragment 0 holds struct fs_dxattr, the name and the
 * value's first bytes, as many as fit in FS_BT_MAX_VALUE; every other
 * fragment the next FS_BT_MAX_VALUE bytes of the value. Bounds: a name of
 * 1..FS_XATTR_NAME_MAX bytes without NUL, a value of up to
 * FS_XATTR_SIZE_MAX; the inode's di_xattr_bytes (each attribute's name,
 * value and FS_XATTR_ENTRY_COST) at most FS_XATTR_TOTAL_MAX.
 */
#define FS_XATTR_NAME_MAX   255
#define FS_XATTR_SIZE_MAX   65536
#define FS_XATTR_TOTAL_MAX  (256u << 10)
#define FS_XATTR_ENTRY_COST 16
#define FS_XATTR_HASH_MASK  0xffffffffffff0000ull
struct fs_dxattr {
	uint32_t x_vallen;
	uint32_t x_crc; /* CRC32C of the name, then the whole value */
	uint16_t x_nfrags;
	uint8_t x_namelen;
	uint8_t x_pad; /* 0 */
	/* the name, then the value's first bytes */
};
_Static_assert(sizeof(struct fs_dxattr) == 12, "attribute header size");
_Static_assert(FS_XATTR_NAME_MAX <= UINT8_MAX && FS_XATTR_SIZE_MAX <= UINT32_MAX,
	       "attribute lengths fit their fields");
_Static_assert(FS_XATTR_TOTAL_MAX / (FS_XATTR_ENTRY_COST + 1) <= UINT16_MAX,
	       "di_xattr_count holds every attribute an inode can have");
#define FS_XATTR_FRAG0_ROOM(nlen) (FS_BT_MAX_VALUE - sizeof(struct fs_dxattr) - (nlen))
#define FS_XATTR_NFRAGS(nlen, vlen)                                                                \
	((vlen) <= FS_XATTR_FRAG0_ROOM(nlen)                                                       \
		 ? 1u                                                                              \
		 : 1u + (unsigned)(((vlen) - FS_XATTR_FRAG0_ROOM(nlen) + FS_BT_MAX_VALUE - 1) /   \
				   FS_BT_MAX_VALUE))

/* free space: key {start block, 0}, value uint64_t length */
/* inode index: key {first inode of chunk, 0}, value uint64_t free mask (bit = free) */
/* orphans: key {ino, 0}, empty value */
/* extents: key {file block, 0}, value struct fs_dext (inline in the inode too) */
struct fs_dext {
	uint64_t e_off;   /* file block */
	uint64_t e_start; /* device block */
	uint32_t e_len;   /* blocks */
	uint32_t e_flags;
};
#define FS_EXT_UNWRITTEN 0x1u
#define FS_EXT_MAXLEN    (1u << 21) /* 8 GiB per extent record */
_Static_assert(sizeof(struct fs_dext) == 24, "extent record size");

/* directories: key {hash with collision index, 0}, value struct fs_ddirent + name */
struct fs_ddirent {
	uint64_t d_ino;
	uint8_t d_type; /* FS_FT_* */
	uint8_t d_namelen;
	/* name follows, not NUL-terminated */
};
#define FS_NAME_MAX     255
#define FS_DIRHASH_MASK 0xffffffffffff0000ull /* hash bits; low 16: collision index */
#define FS_DIR_COOKIE_DOT    1
#define FS_DIR_COOKIE_DOTDOT 2

/* file types in directory entries */
enum fs_ftype {
	FS_FT_UNKNOWN = 0,
	FS_FT_REG = 1,
	FS_FT_DIR = 2,
	FS_FT_CHR = 3,
	FS_FT_BLK = 4,
	FS_FT_FIFO = 5,
	FS_FT_SOCK = 6,
	FS_FT_LNK = 7,
};

/* ---- inodes ---- */

#define FS_INODE_MAGIC     0x444f4e49u /* "INOD" */
#define FS_INODE_SIZE      512u
#define FS_INODES_PER_BLK  (FS_BLOCK_SIZE / FS_INODE_SIZE)
#define FS_CHUNK_BLOCKS    8u
#define FS_INODES_PER_CHUNK (FS_INODES_PER_BLK * FS_CHUNK_BLOCKS)
#define FS_INLINE_EXTENTS  13
#define FS_INLINE_SYMLINK  320
#define FS_SYMLINK_MAX     4095

/* di_flags */
#define FS_DIF_EXT_BTREE  0x1u /* extents in a B+tree rooted at di_root */
#define FS_DIF_SYMLINK_EXT 0x2u /* symlink target in a data block (extents) */
#define FS_DIF_PREALLOC   0x4u /* fallocated past EOF: blocks there are kept */

struct fs_dts {
	int64_t sec;
	uint32_t nsec;
	uint32_t pad;
};

struct fs_dinode {
	uint32_t di_magic;
	uint32_t di_crc; /* over the inode with di_crc = 0 */
	uint64_t di_ino; /* owner: its own number */
	uint64_t di_lsn;
	uint32_t di_mode; /* S_IFMT type and permission bits */
	uint32_t di_uid;
	uint32_t di_gid;
	uint32_t di_nlink;
	uint64_t di_size;
	uint64_t di_nblocks; /* blocks owned: data and tree blocks */
	struct fs_dts di_atime, di_mtime, di_ctime, di_btime;
	uint64_t di_change; /* change attribute: grows on every change */
	uint32_t di_gen;    /* generation: changes when the number is reused */
	uint32_t di_flags;
	uint64_t di_rdev;
	uint64_t di_parent; /* directories: the parent's number (..) */
	uint64_t di_root;   /* directory tree, or extent tree with FS_DIF_EXT_BTREE */
	uint16_t di_root_level;
	uint16_t di_nextents; /* inline extents in use */
	/* extended attributes (version 2; zero before): their tree, 0 if none */
	uint16_t di_xattr_level;
	uint16_t di_xattr_count;  /* attributes */
	uint64_t di_xattr_root;
	uint32_t di_xattr_bytes;  /* charged against FS_XATTR_TOTAL_MAX */
	uint32_t di_pad;
	uint64_t di_pad2;
	union {
		struct fs_dext di_ext[FS_INLINE_EXTENTS];
		char di_symlink[FS_INLINE_SYMLINK];
	} di_u;
};
_Static_assert(sizeof(struct fs_dinode) == FS_INODE_SIZE, "inode size");

/* Inode number <-> place. */
static inline uint64_t fs_ino_block(uint64_t ino)
{
	return ino / FS_INODES_PER_BLK;
}

static inline unsigned fs_ino_slot(uint64_t ino)
{
	return (unsigned)(ino % FS_INODES_PER_BLK);
}

static inline uint64_t fs_ino_chunk(uint64_t ino)
{
	return ino - ino % FS_INODES_PER_CHUNK;
}

/* ---- log items of the engine ---- */

/* Inode item image: the inode number, then the whole on-disk inode. */
struct fs_ino_log {
	uint64_t il_ino;
	uint64_t il_pad;
	struct fs_dinode il_dinode;
};

#endif
