#include "base/hashmap.h"

#include <stdlib.h>

#include "base/mem.h"

static size_t slot_of(const struct hashmap *h, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (h->cap - 1);
}

void hashmap_init(struct hashmap *h)
{
	h->keys = NULL;
	h->vals = NULL;
	h->cap = 0;
	h->n = 0;
}

void hashmap_destroy(struct hashmap *h)
{
	free(h->keys);
	free(h->vals);
	hashmap_init(h);
}

void *hashmap_get(const struct hashmap *h, uint64_t key)
{
	if (!h->cap)
		return NULL;
	for (size_t i = slot_of(h, key);; i = (i + 1) & (h->cap - 1)) {
		if (!h->vals[i])
			return NULL;
		if (h->keys[i] == key)
			return h->vals[i];
	}
}

static void grow(struct hashmap *h)
{
	struct hashmap old = *h;
	h->cap = old.cap ? old.cap * 2 : 16;
	h->keys = xcalloc(h->cap, sizeof(*h->keys));
	h->vals = xcalloc(h->cap, sizeof(*h->vals));
	h->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.vals[i])
			hashmap_put(h, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
}

void *hashmap_put(struct hashmap *h, uint64_t key, void *val)
{
	if ((h->n + 1) * 4 > h->cap * 3)
		grow(h);
	for (size_t i = slot_of(h, key);; i = (i + 1) & (h->cap - 1)) {
		if (!h->vals[i]) {
			h->keys[i] = key;
			h->vals[i] = val;
			h->n++;
			return NULL;
		}
		if (h->keys[i] == key) {
			void *prev = h->vals[i];
			h->vals[i] = val;
			return prev;
		}
	}
}

void *hashmap_remove(struct hashmap *h, uint64_t key)
{
	if (!h->cap)
		return NULL;
	size_t mask = h->cap - 1, i = slot_of(h, key);
	while (h->vals[i] && h->keys[i] != key)
		i = (i + 1) & mask;
	if (!h->vals[i])
		return NULL;
	void *val = h->vals[i];
	h->vals[i] = NULL;
	h->n--;
	/* shift back later members of the probe run */
	for (size_t j = (i + 1) & mask; h->vals[j]; j = (j + 1) & mask) {
		size_t home = slot_of(h, h->keys[j]);
		/* move j to i if home is not cyclically in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			h->keys[i] = h->keys[j];
			h->vals[i] = h->vals[j];
			h->vals[j] = NULL;
			i = j;
		}
	}
	return val;
}

bool hashmap_next(const struct hashmap *h, size_t *iter, uint64_t *key, void **val)
{
	for (; *iter < h->cap; (*iter)++) {
		if (h->vals[*iter]) {
			*key = h->keys[*iter];
			*val = h->vals[*iter];
			(*iter)++;
			return true;
		}
	}
	return false;
}
