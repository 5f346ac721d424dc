/*
 * hash.h - the one hash of in-memory tables: a 64-bit key to 64 bits in
 * which every bit depends on every bit of the key.
 *
 * hash64 is the finaliser of MurmurHash3 (fmix64): a bijection, so distinct
 * keys never collide before the table takes its bits, and keys that differ
 * only in their high bits (clientids: boot epoch << 32 | counter), only in
 * their low bits (inode numbers, block addresses) or by a multiple of the
 * table's size still spread over every bucket. A table takes the low bits
 * (hash64(k) & (n - 1)) or the remainder (hash64(k) % n); both are even.
 * hash64_pair hashes a two-word key such as (owner, file).
 *
 * Not keyed: a client that chooses its keys could aim them at one bucket.
 * The NFSv4 tables hash keys the server made (clientids, inode numbers) or
 * SipHash results (owners); what a client names directly is hashed with
 * siphash24 (siphash.h).
 */
#ifndef JNFS_BASE_HASH_H
#define JNFS_BASE_HASH_H

#include <stdint.h>

static inline uint64_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static inline uint64_t hash64_pair(uint64_t a, uint64_t b)
{
	return hash64(hash64(a) ^ b);
}

#endif
