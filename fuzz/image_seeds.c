/*
 * image_seeds.c - write the seed inputs of the image fuzz target.
 *
 *   fuzz-image-seeds DIR
 *
 * Seeds: the intact image (read-only and with changes), a plain flip in
 * each kind of metadata, and restamped damage that once crashed or hung
 * the engine or that check once missed (see the history of verify.c,
 * check.c and ialloc.c), written as fuzz_image.h patches.
 */
#include <stdio.h>
#include <string.h>

#include "base/msg.h"
#include "fs/fs_format.h"
#include "fuzz_image.h"

static uint8_t *base;
static struct fsimg_region *regs;
static size_t nregs;
static const char *dir;

struct seed {
	uint8_t buf[512];
	size_t len;
};

static void begin(struct seed *s, uint8_t flags)
{
	s->buf[0] = flags;
	s->len = 1;
}

static void patch(struct seed *s, size_t region, uint32_t off, const void *p, uint8_t len)
{
	uint8_t *b = s->buf + s->len;
	b[0] = (uint8_t)region;
	b[1] = (uint8_t)(region >> 8);
	b[2] = (uint8_t)off;
	b[3] = (uint8_t)(off >> 8);
	b[4] = len;
	memcpy(b + 5, p, len);
	s->len += 5u + len;
}

static void write_seed(const struct seed *s, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(s->buf, 1, s->len, f) != s->len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* The index of the n-th region of a kind (and level, if level >= 0). */
static size_t region(unsigned kind, int level, unsigned n)
{
	for (size_t i = 0; i < nregs; i++)
		if (regs[i].kind == kind && (level < 0 || regs[i].level == level) && !n--)
			return i;
	fprintf(stderr, "fuzz-image-seeds: no such region\n");
	exit(1);
}

/* Offset of record i in the leaf region r. */
static uint32_t rec(size_t r, unsigned i)
{
	const uint8_t *b = base + regs[r].blk * FS_BLOCK_SIZE;
	uint16_t off;
	memcpy(&off, b + sizeof(struct fs_bthdr) + 2 * i, 2);
	return le16toh(off);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz-image-seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	msg_set_level(MSG_ERR);
	struct dev *d = fsimg_build(&fuzz_image_params);
	base = malloc(fuzz_image_params.size);
	dev_mem_copy_out(d, base);
	dev_close(d);
	nregs = fuzz_image_regions(base, &regs);
	const struct fs_dsb *sb = (const void *)base;
	uint64_t root = le64toh(sb->sb_root_ino);
	struct seed s;

	begin(&s, 0);
	write_seed(&s, "intact");
	begin(&s, FUZZ_IMAGE_READ_ONLY);
	write_seed(&s, "intact-read-only");

	/* a plain flip in each kind: the checksum catches it */
	static const char *const kinds[] = {"sb",	 "free",      "ino",	 "orphan", "dir",
					    "ext", "rec", "inode", "free-slot", "freelist"};
	for (unsigned k = 0; k < FSIMG_LOG; k++) {
		char name[64];
		snprintf(name, sizeof(name), "raw-%s", kinds[k]);
		begin(&s, FUZZ_IMAGE_RAW);
		patch(&s, region(k, -1, 0), 100, "\xff", 1);
		write_seed(&s, name);
	}

	/* restamped: the structural checks must catch these */
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;
	begin(&s, 0);
	u16 = htole16(FS_FREELIST_MAX);
	patch(&s, 0, offsetof(struct fs_dsb, sb_freelist_count), &u16, 2);
	write_seed(&s, "sb-freelist-count");
	begin(&s, 0);
	u64 = htole64(root + 1);
	patch(&s, 0, offsetof(struct fs_dsb, sb_root_ino), &u64, 8);
	write_seed(&s, "sb-root-ino");
	begin(&s, 0);
	u32 = htole32(0x2);
	patch(&s, 0, offsetof(struct fs_dsb, sb_flags), &u32, 4);
	write_seed(&s, "sb-flags");

	/* a leaf whose records overlap (BUG_ON in leaf_build, found by test-fs-damage) */
	size_t r = region(FSIMG_EXT_TREE, 0, 0);
	begin(&s, 0);
	patch(&s, r, rec(r, 5) + sizeof(struct fs_btkey), "\xbe", 1);
	write_seed(&s, "ext-leaf-vlen");
	r = region(FSIMG_DIR_TREE, 0, 1);
	begin(&s, 0);
	patch(&s, r, rec(r, 0) + sizeof(struct fs_btkey), "\xff", 1);
	write_seed(&s, "dir-leaf-vlen");
	/* an extent with unknown flags; a directory entry naming the root */
	r = region(FSIMG_EXT_TREE, 0, 1);
	begin(&s, 0);
	u32 = htole32(0x4);
	patch(&s, r, rec(r, 0) + FS_BT_REC_HDR + offsetof(struct fs_dext, e_flags), &u32, 4);
	write_seed(&s, "ext-flags");
	r = region(FSIMG_DIR_TREE, 0, 2);
	begin(&s, 0);
	u64 = htole64(root);
	patch(&s, r, rec(r, 0) + FS_BT_REC_HDR + offsetof(struct fs_ddirent, d_ino), &u64, 8);
	write_seed(&s, "dirent-ino");
	/* a free extent overlapping used blocks; a node naming itself */
	r = region(FSIMG_FREE_TREE, 0, 0);
	begin(&s, 0);
	u64 = htole64(100);
	patch(&s, r, rec(r, 0) + FS_BT_REC_HDR, &u64, 8);
	write_seed(&s, "free-overlap");
	r = region(FSIMG_FREE_TREE, 1, 0);
	begin(&s, 0);
	u64 = htole64(regs[r].blk);
	patch(&s, r, sizeof(struct fs_bthdr) + sizeof(struct fs_btkey), &u64, 8);
	write_seed(&s, "free-node-loop");

	/* an extent-tree file with 1000 inline extents (heap overflow) */
	size_t ext = region(FSIMG_EXT_TREE, -1, 0);
	for (r = 0; regs[r].kind != FSIMG_INODE || regs[r].owner != regs[ext].owner; r++)
		;
	begin(&s, 0);
	u16 = htole16(1000);
	patch(&s, r, offsetof(struct fs_dinode, di_nextents), &u16, 2);
	write_seed(&s, "inode-nextents");
	/* the inode index calls /a free */
	r = region(FSIMG_INO_TREE, 0, 0);
	begin(&s, 0);
	patch(&s, r, rec(r, 0) + FS_BT_REC_HDR, "\x02", 1);
	write_seed(&s, "ino-mask");
	/* an orphan record of a linked inode (mount looped forever) */
	r = region(FSIMG_ORPHAN_TREE, 0, 0);
	uint16_t at = htole16(FS_BLOCK_SIZE - FS_BT_REC_HDR), one = htole16(1);
	begin(&s, 0);
	patch(&s, r, offsetof(struct fs_bthdr, bh_nrecs), &one, 2);
	patch(&s, r, offsetof(struct fs_bthdr, bh_data), &at, 2);
	patch(&s, r, sizeof(struct fs_bthdr), &at, 2);
	u64 = htole64(root + 1);
	patch(&s, r, FS_BLOCK_SIZE - FS_BT_REC_HDR, &u64, 8);
	write_seed(&s, "orphan-linked");
	free(regs);
	free(base);
	return 0;
}
