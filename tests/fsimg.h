/*
 * fsimg.h - populated filesystem images and their metadata, for the
 * damaged-image test (test_fs_damage.c) and the image fuzz target
 * (fuzz/fuzz_image.c).
 *
 *   - fsimg_build() makes a small image in memory with every kind of
 *     metadata: a directory chain, a directory big enough for a two-level
 *     tree, a fragmented file with a two-level extent tree, sparse and
 *     preallocated files, short and long symlinks, hard links, special
 *     files, a free-space tree of two levels (every other small file
 *     deleted), durable records (two tree levels, one and two
 *     fragments), and extended attributes (a tree of two levels, values of
 *     one and of many fragments). Block layout is deterministic for given
 *     parameters (all allocations come before the deletes), so an input
 *     that names "the 3rd directory tree block" means the same block in
 *     every process.
 *   - fsimg_regions() walks the on-disk format of an image independently of
 *     the engine (only fs_format.h) and lists every metadata region: the
 *     superblock, every block of every tree, every allocated inode, the free
 *     inode slots, the free-list blocks, the log.
 *   - fsimg_restamp() recomputes the checksum of a region after a change, so
 *     that damage reaches the structural checks behind the CRC.
 *   - fsimg_exercise() does what a user would with a damaged image: check
 *     it (readonly_check mount + fs_check), mount it, read everything, change
 *     a few things, unmount. It must never crash or hang; it reports what
 *     refused and which operations failed how.
 */
#ifndef JNFS_TESTS_FSIMG_H
#define JNFS_TESTS_FSIMG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dev/dev.h"

struct fsimg_params {
	uint64_t size;      /* device bytes (multiple of 4 KiB, at least 8 MiB) */
	uint64_t log_size;  /* 0: mkfs default */
	unsigned big_dir;   /* entries in /big */
	unsigned frag_exts; /* extents of /frag, and free extents its holes make */
	unsigned junk;      /* small files made in /junk; every other one is deleted */
};

/* A new memory device with the populated image, cleanly unmounted. */
struct dev *fsimg_build(const struct fsimg_params *p);

enum fsimg_kind {
	FSIMG_SB,
	FSIMG_FREE_TREE,
	FSIMG_INO_TREE,
	FSIMG_ORPHAN_TREE,
	FSIMG_DIR_TREE,
	FSIMG_EXT_TREE,
	FSIMG_REC_TREE,  /* the durable records */
	FSIMG_INODE,     /* an allocated inode's 512 bytes */
	FSIMG_FREE_SLOT, /* an inode slot the index calls free: never read */
	FSIMG_FREELIST,  /* a block held in reserve by the superblock's free list */
	FSIMG_LOG,       /* a block of the internal log */
	/* an inode's extended attributes (last: the fuzz corpus names the
	 * kinds above by number) */
	FSIMG_XATTR_TREE,
	FSIMG_NKINDS,
};

extern const char *const fsimg_kind_names[FSIMG_NKINDS];

struct fsimg_region {
	uint8_t kind;
	uint16_t level;  /* trees: the block's level */
	uint64_t blk;    /* block number */
	uint32_t off;    /* bytes within the block (inodes: the slot) */
	uint32_t len;
	uint64_t owner;  /* inode number for inodes and inode trees, else 0 */
	uint32_t mode;   /* inodes: the mode */
};

/* Every metadata region of the image in buf (size bytes); *out is
 * malloc'ed. Returns the count. The image must be intact. */
size_t fsimg_regions(const uint8_t *img, uint64_t size, struct fsimg_region **out);

/* Recompute the checksum covering region r in its block (4 KiB at blk). */
void fsimg_restamp(uint8_t *blk, const struct fsimg_region *r);

/*
 * Is x XORed into the byte at offset `at` of r's block a change that must be
 * caught even with the checksum made right again (true), or one that no
 * check can judge: padding, timestamps, owners, permission bits, LSNs,
 * unused space, an extent moved within a hole (false)? blk is the intact
 * block.
 */
bool fsimg_byte_checked(const uint8_t *blk, const struct fsimg_region *r, uint32_t at, uint8_t x);

/* Where `at` is, e.g. "record 3 (of 90) byte 20", for messages. */
void fsimg_describe(const uint8_t *blk, const struct fsimg_region *r, uint32_t at, char *buf,
		    size_t size);

struct fsimg_result {
	int check_mount_err; /* readonly_check mount refused */
	uint64_t problems;   /* fs_check's count (if it mounted) */
	int mount_err;       /* normal mount refused */
	unsigned ops, op_errors, op_corrupt; /* operations; failed; with EUCLEAN or EIO */
	int unmount_err;
	bool shutdown;
	/* with final_check: check again after the visit */
	int final_mount_err;
	uint64_t final_problems;
};

struct fsimg_opts {
	bool modify;      /* change things after reading everything */
	bool final_check; /* and check the image again at the end */
	FILE *out;        /* fs_check's report (NULL: stderr) */
};

/* Check, mount, read everything, change some things, unmount, check. The
 * engine's own messages go to stderr as usual. */
void fsimg_exercise(struct dev *d, const struct fsimg_opts *o, struct fsimg_result *res);

/*
 * The oracle for a damaged image: where check finds nothing wrong, the
 * filesystem must mount, every operation must work without reporting
 * corruption, and check must still find nothing after them. Returns NULL
 * or what went wrong.
 */
const char *fsimg_clean_means_usable(const struct fsimg_result *res);

/* Run fn with the engine's messages (stderr) captured into buf (NUL
 * terminated, truncated to size). */
void fsimg_capture_stderr(void (*fn)(void *arg), void *arg, char *buf, size_t size);

#endif
