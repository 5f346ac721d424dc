/*
 * crc32c.h - CRC32C (Castagnoli), the checksum on every log record and
 * metadata block. Uses the SSE4.2 instruction when the CPU has it.
 */
#ifndef JNFS_BASE_CRC32C_H
#define JNFS_BASE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * Continue a CRC32C over buf. Start a fresh checksum with crc = 0; the
 * pre/post inversion is done inside, so crc32c(crc32c(0, a), b) equals the
 * checksum of a followed by b.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif
