/*
 * test_fs_damage.c - damaged images: clean errors, never a crash (docs/design.md §9).
 *
 *   test-fs-damage [--flips N] [--seed S] [--verbose]
 *
 * A populated image (fsimg.h: every tree type at two levels, every inode
 * kind) is damaged in copies, each copy visited as a user would: jnfs check
 * (readonly_check mount + fs_check), a normal mount, reading everything,
 * changing a few things, unmount (fsimg_exercise). Nothing may crash or hang
 * (the ASan build runs this too).
 *
 *  1. Byte flips. A random byte of a random metadata region of each kind
 *     is XORed with a random value:
 *     a. plain: the checksum no longer matches. Every flip in a region a
 *        checksum covers (superblock, tree blocks, allocated inodes) must
 *        be reported by check (refused mount or problems); a normal mount
 *        must refuse, naming the block, when the damage is in what mount
 *        reads (superblock, free-space tree, inode index, orphan tree, root
 *        inode); otherwise an operation must fail with EUCLEAN or EIO.
 *        Flips where no check looks (free inode slots, free-list blocks,
 *        the log outside its live records) may pass: counted.
 *     b. restamped: the checksum is made right again, so the damage reaches
 *        the structural checks. Where the changed byte carries structure
 *        (fsimg_byte_checked) check must report it; bytes no check can
 *        judge (timestamps, owners, padding...) may pass: counted.
 *  2. Truncated images, on memory and file devices, down to a few bytes:
 *     check and mount refuse with a message that says the image is short.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/msg.h"
#include "base/rand.h"
#include "check.h"
#include "fs/fs.h"
#include "fs/fs_format.h"
#include "fsimg.h"

#define MIB (1ull << 20)

static const struct fsimg_params P = {
	.size = 16 * MIB, .big_dir = 400, .frag_exts = 150, .junk = 400};

static uint8_t *img;
static struct fsimg_region *regs;
static size_t nregs;
static uint64_t root_ino;
static bool verbose;

/* regions of each kind, for picking */
static size_t *by_kind[FSIMG_NKINDS];
static size_t nby_kind[FSIMG_NKINDS];

static void index_regions(void)
{
	for (size_t i = 0; i < nregs; i++) {
		unsigned k = regs[i].kind;
		by_kind[k] = realloc(by_kind[k], (nby_kind[k] + 1) * sizeof(size_t));
		by_kind[k][nby_kind[k]++] = i;
	}
	printf("metadata of the image:");
	for (unsigned k = 0; k < FSIMG_NKINDS; k++)
		printf(" %zu %s%s", nby_kind[k], fsimg_kind_names[k], k + 1 < FSIMG_NKINDS ? "," : "\n");
	/* the image must have what the test claims to damage */
	for (unsigned k = 0; k < FSIMG_NKINDS; k++)
		CHECK(nby_kind[k] > 0);
	bool two_level[FSIMG_NKINDS] = {0};
	for (size_t i = 0; i < nregs; i++)
		if (regs[i].level > 0)
			two_level[regs[i].kind] = true;
	CHECK(two_level[FSIMG_FREE_TREE] && two_level[FSIMG_DIR_TREE] &&
	      two_level[FSIMG_EXT_TREE] && two_level[FSIMG_XATTR_TREE]);
}

struct trial {
	struct dev *d;
	struct fsimg_result res;
};

static void run_trial(void *arg)
{
	struct trial *t = arg;
	fsimg_exercise(t->d, &(struct fsimg_opts){.modify = true, .final_check = true}, &t->res);
}

/* Does the message name the damaged place? */
static bool names_place(const char *msgs, const struct fsimg_region *r)
{
	char want[64];
	if (r->kind == FSIMG_SB)
		return strstr(msgs, "superblock") != NULL;
	if (r->kind == FSIMG_INODE)
		snprintf(want, sizeof(want), "inode %llu ", (unsigned long long)r->owner);
	else
		snprintf(want, sizeof(want), "block %llu", (unsigned long long)r->blk);
	return strstr(msgs, want) != NULL;
}

/* Is the region something every mount reads? */
static bool mount_reads(const struct fsimg_region *r)
{
	return r->kind == FSIMG_SB || r->kind == FSIMG_FREE_TREE || r->kind == FSIMG_INO_TREE ||
	       r->kind == FSIMG_ORPHAN_TREE || (r->kind == FSIMG_INODE && r->owner == root_ino);
}

static bool crc_covered(const struct fsimg_region *r)
{
	return r->kind <= FSIMG_INODE || r->kind == FSIMG_XATTR_TREE;
}

static bool in_crc_field(const struct fsimg_region *r, uint32_t at)
{
	uint32_t o;
	if (r->kind == FSIMG_SB)
		o = offsetof(struct fs_dsb, sb_crc);
	else if (r->kind == FSIMG_INODE)
		o = r->off + offsetof(struct fs_dinode, di_crc);
	else if (r->kind <= FSIMG_REC_TREE || r->kind == FSIMG_XATTR_TREE)
		o = offsetof(struct fs_bthdr, bh_crc);
	else
		return false;
	return at >= o && at < o + 4;
}

struct tally {
	unsigned flips, detected, refused_mount, op_corrupt, may_pass, may_pass_caught;
	unsigned unmount_eio;
};

static void flips(bool restamp, unsigned per_kind, uint64_t seed)
{
	struct rng rng;
	rng_seed(&rng, seed);
	struct tally t[FSIMG_NKINDS] = {0};
	unsigned failures = 0;
	char *msgs = malloc(1 << 20);
	for (unsigned k = 0; k < FSIMG_NKINDS; k++) {
		if (restamp && !crc_covered(&(struct fsimg_region){.kind = (uint8_t)k}))
			continue; /* nothing to restamp */
		for (unsigned i = 0; i < per_kind; i++) {
			const struct fsimg_region *r = &regs[by_kind[k][rng_below(&rng, nby_kind[k])]];
			uint8_t blk[FS_BLOCK_SIZE];
			memcpy(blk, img + r->blk * FS_BLOCK_SIZE, FS_BLOCK_SIZE);
			uint32_t at;
			uint8_t x;
			/* restamped: half the flips aim at bytes that carry structure */
			bool aim = restamp && i % 2;
			for (int tries = 0;; tries++) {
				at = r->off + (uint32_t)rng_below(&rng, r->len);
				x = (uint8_t)(1 + rng_below(&rng, 255));
				if (restamp && in_crc_field(r, at))
					continue;
				if (!aim || tries == 1000 || fsimg_byte_checked(blk, r, at, x))
					break;
			}
			bool checked = restamp ? fsimg_byte_checked(blk, r, at, x) : crc_covered(r);
			blk[at] ^= x;
			if (restamp)
				fsimg_restamp(blk, r);
			char where[64];
			fsimg_describe(img + r->blk * FS_BLOCK_SIZE, r, at, where, sizeof(where));
			if (verbose)
				printf("%s flip 0x%02x at %s of %s block %llu:\n",
				       restamp ? "restamped" : "plain", x, where, fsimg_kind_names[k],
				       (unsigned long long)r->blk);
			struct trial tr;
			CHECK_OK(dev_mem_create(P.size, img, &tr.d));
			CHECK_OK(dev_write(tr.d, blk, FS_BLOCK_SIZE, r->blk * FS_BLOCK_SIZE, 0));
			fsimg_capture_stderr(run_trial, &tr, msgs, 1 << 20);
			dev_close(tr.d);

			const struct fsimg_result *res = &tr.res;
			struct tally *y = &t[k];
			bool detected = res->check_mount_err || res->problems;
			y->flips++;
			y->detected += detected;
			y->refused_mount += res->mount_err != 0;
			y->op_corrupt += !res->mount_err && res->op_corrupt;
			y->unmount_eio += res->shutdown;
			const char *bad = NULL;
			if (!checked) {
				y->may_pass++;
				y->may_pass_caught += detected;
			} else if (!detected) {
				bad = "check did not report it";
			} else if (!restamp && mount_reads(r) && !res->mount_err) {
				bad = "mount did not refuse";
			} else if (!restamp && res->mount_err && !getenv("FSIMG_NOCAPTURE") &&
				   !names_place(msgs, r)) {
				bad = "the refusal does not name the damaged place";
			} else if (!restamp && !res->mount_err && !res->op_corrupt) {
				bad = "no operation reported the corruption";
			}
			if (!bad)
				bad = fsimg_clean_means_usable(res);
			if ((res->check_mount_err && res->check_mount_err != -EUCLEAN &&
			     res->check_mount_err != -EINVAL) ||
			    (res->mount_err && res->mount_err != -EUCLEAN &&
			     res->mount_err != -EINVAL))
				bad = "mount failed with an unexpected error";
			if (bad || verbose)
				printf("%s: %s flip 0x%02x at %s of %s block %llu (level %u, "
				       "owner %llu): check-mount %d, %llu problems, mount %d, %u/%u "
				       "ops failed (%u corrupt), unmount %d\n",
				       bad ? bad : "ok", restamp ? "restamped" : "plain", x,
				       where, fsimg_kind_names[k], (unsigned long long)r->blk, r->level,
				       (unsigned long long)r->owner, res->check_mount_err,
				       (unsigned long long)res->problems, res->mount_err,
				       res->op_errors, res->ops, res->op_corrupt, res->unmount_err);
			if (bad) {
				printf("--- messages:\n%.4000s---\n", msgs);
				failures++;
			}
		}
	}
	free(msgs);
	printf("%s flips (per kind: flips, detected by check, refused by mount, "
	       "op saw EUCLEAN/EIO after mount, shut down, not judgeable (of them caught)):\n",
	       restamp ? "restamped" : "plain");
	struct tally sum = {0};
	for (unsigned k = 0; k < FSIMG_NKINDS; k++) {
		if (!t[k].flips)
			continue;
		printf("  %-16s %4u %4u %4u %4u %4u %4u (%u)\n", fsimg_kind_names[k], t[k].flips,
		       t[k].detected, t[k].refused_mount, t[k].op_corrupt, t[k].unmount_eio,
		       t[k].may_pass, t[k].may_pass_caught);
		sum.flips += t[k].flips;
		sum.detected += t[k].detected;
		sum.refused_mount += t[k].refused_mount;
		sum.op_corrupt += t[k].op_corrupt;
		sum.unmount_eio += t[k].unmount_eio;
		sum.may_pass += t[k].may_pass;
		sum.may_pass_caught += t[k].may_pass_caught;
	}
	printf("  %-16s %4u %4u %4u %4u %4u %4u (%u)\n", "total", sum.flips, sum.detected,
	       sum.refused_mount, sum.op_corrupt, sum.unmount_eio, sum.may_pass,
	       sum.may_pass_caught);
	CHECK_EQ(failures, 0);
	TEST_PASS(restamp ? "restamped byte flips" : "plain byte flips");
}

static void expect_short(struct dev *d, const char *what)
{
	struct trial tr = {.d = d};
	char msgs[8192];
	fsimg_capture_stderr(run_trial, &tr, msgs, sizeof(msgs));
	if (tr.res.check_mount_err != -EUCLEAN || tr.res.mount_err != -EUCLEAN ||
	    !strstr(msgs, "truncated")) {
		printf("%s: check-mount %d, mount %d\n--- messages:\n%s---\n", what,
		       tr.res.check_mount_err, tr.res.mount_err, msgs);
		CHECK(0);
	}
	if (verbose)
		printf("%s: refused: %s", what, msgs);
}

static void truncated(void)
{
	const struct fs_dsb *sb = (const void *)img;
	uint64_t log_end = (le64toh(sb->sb_log_start) + le64toh(sb->sb_log_blocks)) * FS_BLOCK_SIZE;
	uint64_t sizes[] = {4096, 8192, 64 << 10, log_end - 4096, log_end, log_end + 4096,
			    P.size / 2, P.size - 8192, P.size - 4096};
	unsigned n = 0;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct dev *d;
		CHECK_OK(dev_mem_create(sizes[i], img, &d));
		char what[64];
		snprintf(what, sizeof(what), "image cut to %llu bytes",
			 (unsigned long long)sizes[i]);
		expect_short(d, what);
		dev_close(d);
		n++;
	}
	/* a file, cut anywhere (the device rounds down to sectors) */
	char path[] = "/tmp/jnfs-damage-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	uint64_t cuts[] = {0, 1, 511, 4095, 4097, P.size - 1, P.size - 511, P.size - 4097};
	for (unsigned i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		CHECK_EQ(ftruncate(fd, 0), 0);
		uint64_t len = cuts[i];
		CHECK_EQ(pwrite(fd, img, len, 0), (ssize_t)len);
		struct dev *d;
		CHECK_OK(dev_file_open(path, 0, 0, &d));
		char what[64];
		snprintf(what, sizeof(what), "image file cut to %llu bytes", (unsigned long long)len);
		expect_short(d, what);
		dev_close(d);
		n++;
	}
	close(fd);
	unlink(path);
	printf("truncated images: %u sizes, every one refused by check and mount\n", n);
	TEST_PASS("truncated images");
}

/* ---- targeted damage: what random flips reach only by luck ---- */

static const struct fsimg_region *find_region(unsigned kind, bool (*pred)(const struct fsimg_region *))
{
	for (size_t i = 0; i < nregs; i++)
		if (regs[i].kind == kind && (!pred || pred(&regs[i])))
			return &regs[i];
	CHECK(0);
	return NULL;
}

static bool is_frag(const struct fsimg_region *r)
{
	return r->owner == find_region(FSIMG_EXT_TREE, NULL)->owner;
}

static bool is_long_symlink(const struct fsimg_region *r)
{
	const struct fs_dinode *di =
		(const void *)(img + r->blk * FS_BLOCK_SIZE + r->off);
	return S_ISLNK(r->mode) && (le32toh(di->di_flags) & FS_DIF_SYMLINK_EXT);
}

/* The first record of a leaf region's block in a copy of the image. */
static uint8_t *leaf_rec(uint8_t *copy, const struct fsimg_region *r, unsigned i)
{
	uint8_t *b = copy + r->blk * FS_BLOCK_SIZE;
	uint16_t off;
	memcpy(&off, b + sizeof(struct fs_bthdr) + 2 * i, 2);
	return b + le16toh(off);
}

/* Make the (empty) orphan tree hold one record: inode ino. */
static void add_orphan(uint8_t *copy, uint64_t ino)
{
	const struct fsimg_region *r = find_region(FSIMG_ORPHAN_TREE, NULL);
	uint8_t *b = copy + r->blk * FS_BLOCK_SIZE;
	struct fs_bthdr *h = (struct fs_bthdr *)b;
	CHECK_EQ(le16toh(h->bh_nrecs), 0);
	uint16_t off = FS_BLOCK_SIZE - FS_BT_REC_HDR;
	struct fs_btkey k = {htole64(ino), 0};
	memset(b + off, 0, FS_BT_REC_HDR);
	memcpy(b + off, &k, sizeof(k));
	uint16_t le = htole16(off);
	memcpy(b + sizeof(*h), &le, 2);
	h->bh_nrecs = htole16(1);
	h->bh_data = htole16(off);
	fsimg_restamp(b, r);
}

struct targeted {
	const char *what;
	const char *msg; /* the refusal or failure must say this */
	bool mount_refuses;
	bool ops_may_pass; /* the engine reports it without failing an operation */
};

static void run_targeted(const struct targeted *t, uint8_t *copy)
{
	struct trial tr;
	CHECK_OK(dev_mem_create(P.size, copy, &tr.d));
	char *msgs = malloc(1 << 20);
	fsimg_capture_stderr(run_trial, &tr, msgs, 1 << 20);
	dev_close(tr.d);
	const struct fsimg_result *res = &tr.res;
	bool ok = (res->check_mount_err || res->problems) && strstr(msgs, t->msg) &&
		  (t->mount_refuses ? res->mount_err == -EUCLEAN
				    : !res->mount_err && (res->op_corrupt > 0 || t->ops_may_pass));
	printf("%s: %s: check-mount %d, %llu problems, mount %d, %u/%u ops failed (%u corrupt)\n",
	       t->what, ok ? "ok" : "WRONG", res->check_mount_err,
	       (unsigned long long)res->problems, res->mount_err, res->op_errors, res->ops,
	       res->op_corrupt);
	if (!ok)
		printf("--- messages:\n%.4000s---\n", msgs);
	CHECK(ok);
	free(msgs);
}

static void targeted(void)
{
	uint8_t *copy = malloc(P.size);
	const struct fsimg_region *ino_leaf = find_region(FSIMG_INO_TREE, NULL);
	CHECK_EQ(ino_leaf->level, 0);
	uint64_t first;
	memcpy(&first, leaf_rec(img, ino_leaf, 0), 8);
	first = le64toh(first);
	CHECK_EQ(first, root_ino);

	/* an orphan record naming a linked inode: mount must not retry it
	 * forever (it did), nor free a linked inode */
	memcpy(copy, img, P.size);
	add_orphan(copy, root_ino + 1);
	run_targeted(&(struct targeted){.what = "orphan record of a linked inode",
					.msg = "still has 3 links",
					.mount_refuses = true},
		     copy);
	/* ... of an inode number that is not allocated */
	memcpy(copy, img, P.size);
	add_orphan(copy, find_region(FSIMG_FREE_SLOT, NULL)->owner);
	run_targeted(&(struct targeted){.what = "orphan record of a free inode",
					.msg = "cannot be read",
					.mount_refuses = true},
		     copy);

	/* the inode index calls a live inode free: lookups fail, and the next
	 * create reuses the number without crashing */
	memcpy(copy, img, P.size);
	uint8_t *rec = leaf_rec(copy, ino_leaf, 0);
	uint64_t mask;
	memcpy(&mask, rec + FS_BT_REC_HDR, 8);
	mask = le64toh(mask);
	CHECK_EQ(mask & 3, 0); /* root and /a */
	mask = htole64(le64toh(mask) | 2);
	memcpy(rec + FS_BT_REC_HDR, &mask, 8);
	fsimg_restamp(copy + ino_leaf->blk * FS_BLOCK_SIZE, ino_leaf);
	char want[64];
	snprintf(want, sizeof(want), "names inode %llu that does not exist",
		 (unsigned long long)root_ino + 1);
	run_targeted(&(struct targeted){.what = "index calls a live inode free", .msg = want}, copy);

	/* a file with an extent tree and 1000 inline extents: read into a
	 * 13-entry array (heap overflow); now refused */
	memcpy(copy, img, P.size);
	const struct fsimg_region *frag = find_region(FSIMG_INODE, is_frag);
	struct fs_dinode *di = (struct fs_dinode *)(copy + frag->blk * FS_BLOCK_SIZE + frag->off);
	CHECK(le32toh(di->di_flags) & FS_DIF_EXT_BTREE);
	di->di_nextents = htole16(1000);
	fsimg_restamp(copy + frag->blk * FS_BLOCK_SIZE, frag);
	run_targeted(&(struct targeted){.what = "extent tree and 1000 inline extents",
					.msg = "too many inline extents"},
		     copy);

	/* a file that counts blocks it has not got, unlinked: freeing it
	 * punched nothing, again and again (found by fuzz-image: a hang) */
	memcpy(copy, img, P.size);
	const struct fsimg_region *s2 = find_region(FSIMG_INODE, is_long_symlink);
	di = (struct fs_dinode *)(copy + s2->blk * FS_BLOCK_SIZE + s2->off);
	di->di_nblocks = htole64(le64toh(di->di_nblocks) + 3);
	fsimg_restamp(copy + s2->blk * FS_BLOCK_SIZE, s2);
	run_targeted(&(struct targeted){.what = "freeing a file that counts blocks it has not got",
					.msg = "but maps none of them",
					.ops_may_pass = true},
		     copy);
	/* a directory entry naming an inode with no links (it was freed as if
	 * it were an orphan, under the entry's feet) */
	memcpy(copy, img, P.size);
	di = (struct fs_dinode *)(copy + s2->blk * FS_BLOCK_SIZE + s2->off);
	di->di_nlink = 0;
	fsimg_restamp(copy + s2->blk * FS_BLOCK_SIZE, s2);
	run_targeted(&(struct targeted){.what = "an entry naming an inode with no links",
					.msg = "has no links and is not an orphan"},
		     copy);
	free(copy);

	/* the stricter inode verifier must not reject what the engine writes:
	 * a create with stray mode bits stores the type and permissions only */
	struct dev *d;
	CHECK_OK(dev_mem_create(P.size, img, &d));
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	struct fs_inode *root, *ip;
	CHECK_OK(fs_root(fs, &root));
	struct fs_create_args ca = {.mode = S_IFREG | 0644 | 0x30000};
	CHECK_OK(fs_create(root, "stray", 5, &ca, &ip, NULL));
	fs_iput(ip);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d}, &fs));
	CHECK_OK(fs_root(fs, &root));
	CHECK_OK(fs_lookup(root, "stray", 5, &ip));
	struct fs_attr at;
	CHECK_OK(fs_getattr(ip, &at));
	CHECK_EQ(at.mode, S_IFREG | 0644);
	fs_iput(ip);
	fs_iput(root);
	CHECK_OK(fs_unmount(fs));
	dev_close(d);
	TEST_PASS("targeted damage");
}

int main(int argc, char **argv)
{
	unsigned per_kind = 40;
	uint64_t seed = 1;
	int o;
	static const struct option opts[] = {{"flips", required_argument, NULL, 'f'},
					     {"seed", required_argument, NULL, 's'},
					     {"verbose", no_argument, NULL, 'v'},
					     {NULL, 0, NULL, 0}};
	while ((o = getopt_long(argc, argv, "f:s:v", opts, NULL)) != -1) {
		if (o == 'f')
			per_kind = (unsigned)strtoul(optarg, NULL, 0);
		else if (o == 's')
			seed = strtoull(optarg, NULL, 0);
		else if (o == 'v')
			verbose = true;
		else
			return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	msg_set_level(MSG_ERR);
	struct dev *d = fsimg_build(&P);
	img = malloc(P.size);
	dev_mem_copy_out(d, img);
	dev_close(d);
	root_ino = le64toh(((const struct fs_dsb *)img)->sb_root_ino);
	nregs = fsimg_regions(img, P.size, &regs);
	index_regions();

	/* the intact image is clean and survives the visit */
	CHECK_OK(dev_mem_create(P.size, img, &d));
	struct fsimg_result res;
	fsimg_exercise(d, &(struct fsimg_opts){.modify = true, .final_check = true}, &res);
	CHECK_OK(res.check_mount_err);
	CHECK_EQ(res.problems, 0);
	CHECK_OK(res.mount_err);
	CHECK_EQ(res.op_errors, 0);
	CHECK_OK(res.unmount_err);
	CHECK_OK(res.final_mount_err);
	CHECK_EQ(res.final_problems, 0);
	dev_close(d);
	printf("intact image: clean, %u operations succeed\n", res.ops);

	targeted();
	flips(false, per_kind, seed);
	flips(true, per_kind, seed + 1);
	truncated();
	for (unsigned k = 0; k < FSIMG_NKINDS; k++)
		free(by_kind[k]);
	free(regs);
	free(img);
	return 0;
}
