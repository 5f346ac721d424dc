/*
 * fuzz_image.h - what the image fuzz target (fuzz_image.c) and its seed
 * writer (image_seeds.c) share: the base image and the input format.
 *
 * Input: one flags byte, then patches until the input ends:
 *   u16 region   index into the base image's metadata regions (modulo
 *                their number; fsimg_regions() order, the log left out)
 *   u16 offset   byte in the region (modulo its length)
 *   u8  len      bytes that follow (cut at the region's end)
 *   len bytes    written there
 * Unless FUZZ_IMAGE_RAW is set, the checksum of every patched region is
 * made right again, so that the damage reaches the structural checks.
 */
#ifndef JNFS_FUZZ_FUZZ_IMAGE_H
#define JNFS_FUZZ_FUZZ_IMAGE_H

#include <stdlib.h>

#include "fsimg.h"

#define FUZZ_IMAGE_RAW       0x1 /* leave checksums as the patches left them */
#define FUZZ_IMAGE_READ_ONLY 0x2 /* only read the mounted filesystem */
#define FUZZ_IMAGE_MAX_PATCHES 16

/* Small, but with every tree at two levels. */
static const struct fsimg_params fuzz_image_params = {
	.size = 8u << 20, .log_size = 512u << 10, .big_dir = 160, .frag_exts = 150, .junk = 16};

/* The regions inputs name: all metadata but the log (test-log damages
 * logs). */
static inline size_t fuzz_image_regions(const uint8_t *img, struct fsimg_region **out)
{
	struct fsimg_region *v;
	size_t n = fsimg_regions(img, fuzz_image_params.size, &v), m = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].kind != FSIMG_LOG)
			v[m++] = v[i];
	*out = v;
	return m;
}

#endif
