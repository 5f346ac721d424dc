/*
 * siphash.h - SipHash-2-4 (Aumasson and Bernstein): a keyed 64-bit hash,
 * here the authenticator of file handles, so that a client cannot forge a
 * handle to a file it was never given.
 */
#ifndef JNFS_BASE_SIPHASH_H
#define JNFS_BASE_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t siphash24(const uint8_t key[16], const void *data, size_t len);

#endif
