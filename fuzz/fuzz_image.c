/*
 * fuzz_image.c - image parsing (docs/design.md §9). A
 * known-good image (fuzz_image.h) is damaged by the input's patches and
 * visited as a user would (fsimg_exercise): checked, mounted, every file,
 * directory and link read, some things changed, unmounted, checked again.
 *
 * Invariants: nothing crashes, hangs or leaks (libFuzzer with ASan and
 * UBSan); a mount that refuses says EUCLEAN (EINVAL when the superblock
 * asks for a log device); and where check finds nothing wrong the
 * filesystem is fully usable and still clean afterwards
 * (fsimg_clean_means_usable): a damaged image that check calls clean but
 * that the engine chokes on is a gap in check.
 *
 * The base image is built once per process; its layout is deterministic,
 * so an input means the same damage in every run.
 */
#include <errno.h>
#include <string.h>

#include "base/msg.h"
#include "fs/fs_format.h"
#include "fuzz.h"
#include "fuzz_image.h"

static uint8_t *base;
static struct fsimg_region *regs;
static size_t nregs;
static FILE *devnull;

static void init(void)
{
	msg_set_level(MSG_ERR);
	struct dev *d = fsimg_build(&fuzz_image_params);
	base = malloc(fuzz_image_params.size);
	dev_mem_copy_out(d, base);
	dev_close(d);
	nregs = fuzz_image_regions(base, &regs);
	devnull = fopen("/dev/null", "w");
}

struct patched {
	uint64_t blk;
	uint8_t data[FS_BLOCK_SIZE];
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base)
		init();
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	size_t pos = 1;
	struct patched *blks = malloc(FUZZ_IMAGE_MAX_PATCHES * sizeof(*blks));
	const struct fsimg_region *touched[FUZZ_IMAGE_MAX_PATCHES];
	unsigned nblks = 0, ntouched = 0;
	while (ntouched < FUZZ_IMAGE_MAX_PATCHES && pos + 5 <= size) {
		const struct fsimg_region *r = &regs[(data[pos] | data[pos + 1] << 8) % nregs];
		uint32_t off = (uint32_t)(data[pos + 2] | data[pos + 3] << 8) % r->len;
		size_t len = data[pos + 4];
		pos += 5;
		len = len < size - pos ? len : size - pos;
		len = len < r->len - off ? len : r->len - off;
		unsigned b;
		for (b = 0; b < nblks && blks[b].blk != r->blk; b++)
			;
		if (b == nblks) {
			blks[b].blk = r->blk;
			memcpy(blks[b].data, base + r->blk * FS_BLOCK_SIZE, FS_BLOCK_SIZE);
			nblks++;
		}
		memcpy(blks[b].data + r->off + off, data + pos, len);
		pos += len;
		touched[ntouched++] = r;
	}
	if (!(flags & FUZZ_IMAGE_RAW)) {
		for (unsigned i = 0; i < ntouched; i++) {
			unsigned b;
			for (b = 0; blks[b].blk != touched[i]->blk; b++)
				;
			fsimg_restamp(blks[b].data, touched[i]);
		}
	}
	struct dev *d;
	FUZZ_CHECK(dev_mem_create(fuzz_image_params.size, base, &d) == 0);
	for (unsigned b = 0; b < nblks; b++)
		FUZZ_CHECK(dev_write(d, blks[b].data, FS_BLOCK_SIZE, blks[b].blk * FS_BLOCK_SIZE,
				     0) == 0);
	free(blks);

	struct fsimg_result res;
	fsimg_exercise(d,
		       &(struct fsimg_opts){.modify = !(flags & FUZZ_IMAGE_READ_ONLY),
					    .final_check = true,
					    .out = devnull},
		       &res);
	dev_close(d);
	FUZZ_CHECK(res.check_mount_err == 0 || res.check_mount_err == -EUCLEAN ||
		   res.check_mount_err == -EINVAL);
	FUZZ_CHECK(res.mount_err == 0 || res.mount_err == -EUCLEAN || res.mount_err == -EINVAL);
	const char *why = fsimg_clean_means_usable(&res);
	if (why)
		fprintf(stderr, "fuzz-image: %s\n", why);
	FUZZ_CHECK(why == NULL);
	return 0;
}
