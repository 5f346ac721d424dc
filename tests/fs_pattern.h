/*
 * fs_pattern.h - file contents of one repeated byte, for engine tests:
 * write a range of it, and check that a range reads back as it.
 */
#ifndef JNFS_TESTS_FS_PATTERN_H
#define JNFS_TESTS_FS_PATTERN_H

#include "check.h"
#include "fs/fs.h"

static inline void write_pattern(struct fs_inode *ip, uint64_t off, uint64_t len, uint8_t v)
{
	uint8_t *buf = malloc(len);
	memset(buf, v, len);
	CHECK_OK(fs_write(ip, off, buf, len, NULL));
	free(buf);
}

static inline void check_pattern(struct fs_inode *ip, uint64_t off, uint64_t len, uint8_t v)
{
	uint8_t *buf = malloc(len);
	size_t n;
	bool eof;
	CHECK_OK(fs_read(ip, off, buf, len, &n, &eof));
	CHECK_EQ(n, len);
	for (uint64_t i = 0; i < len; i++)
		if (buf[i] != v) {
			fprintf(stderr, "byte %llu is 0x%02x, expected 0x%02x\n",
				(unsigned long long)(off + i), buf[i], v);
			CHECK(0);
		}
	free(buf);
}

#endif
