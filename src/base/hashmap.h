/*
 * hashmap.h - open-addressing hash map from uint64_t keys to pointers.
 * Linear probing with backward-shift deletion (no tombstones). Not
 * thread-safe: the owner locks.
 */
#ifndef JNFS_BASE_HASHMAP_H
#define JNFS_BASE_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap_slot {
	uint64_t key;
	void *val; /* NULL marks an empty slot, so values must not be NULL */
};

struct hashmap {
	struct hashmap_slot *slots; /* a key beside its value: one cache miss a probe */
	size_t cap;                 /* power of two */
	size_t n;
};

void hashmap_init(struct hashmap *h);
void hashmap_destroy(struct hashmap *h);
void *hashmap_get(const struct hashmap *h, uint64_t key);
/* Insert or replace; returns the previous value or NULL. -1 cast on ENOMEM is
 * not used: allocation failure aborts, like every other small allocation. */
void *hashmap_put(struct hashmap *h, uint64_t key, void *val);
void *hashmap_remove(struct hashmap *h, uint64_t key);

/* Iterate: for (size_t i = 0; hashmap_next(h, &i, &k, &v);) */
bool hashmap_next(const struct hashmap *h, size_t *iter, uint64_t *key, void **val);

#endif
