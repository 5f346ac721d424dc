#include "base/hashmap.h"

#include <stdlib.h>

#include "base/hash.h"
#include "base/mem.h"

static size_t slot_of(const struct hashmap *h, uint64_t key)
{
	return (size_t)hash64(key) & (h->cap - 1);
}

void hashmap_init(struct hashmap *h)
{
	h->slots = NULL;
	h->cap = 0;
	h->n = 0;
}

void hashmap_destroy(struct hashmap *h)
{
	free(h->slots);
	hashmap_init(h);
}

void *hashmap_get(const struct hashmap *h, uint64_t key)
{
	if (!h->cap)
		return NULL;
	for (size_t i = slot_of(h, key);; i = (i + 1) & (h->cap - 1)) {
		if (!h->slots[i].val)
			return NULL;
		if (h->slots[i].key == key)
			return h->slots[i].val;
	}
}

static void grow(struct hashmap *h)
{
	struct hashmap old = *h;
	h->cap = old.cap ? old.cap * 2 : 16;
	h->slots = xcalloc(h->cap, sizeof(*h->slots));
	h->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i].val)
			hashmap_put(h, old.slots[i].key, old.slots[i].val);
	free(old.slots);
}

void *hashmap_put(struct hashmap *h, uint64_t key, void *val)
{
	if ((h->n + 1) * 4 > h->cap * 3)
		grow(h);
	for (size_t i = slot_of(h, key);; i = (i + 1) & (h->cap - 1)) {
		if (!h->slots[i].val) {
			h->slots[i].key = key;
			h->slots[i].val = val;
			h->n++;
			return NULL;
		}
		if (h->slots[i].key == key) {
			void *prev = h->slots[i].val;
			h->slots[i].val = val;
			return prev;
		}
	}
}

void *hashmap_remove(struct hashmap *h, uint64_t key)
{
	if (!h->cap)
		return NULL;
	size_t mask = h->cap - 1, i = slot_of(h, key);
	while (h->slots[i].val && h->slots[i].key != key)
		i = (i + 1) & mask;
	if (!h->slots[i].val)
		return NULL;
	void *val = h->slots[i].val;
	h->slots[i].val = NULL;
	h->n--;
	/* shift back later members of the probe run */
	for (size_t j = (i + 1) & mask; h->slots[j].val; j = (j + 1) & mask) {
		size_t home = slot_of(h, h->slots[j].key);
		/* move j to i if home is not cyclically in (i, j] */
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			h->slots[i] = h->slots[j];
			h->slots[j].val = NULL;
			i = j;
		}
	}
	return val;
}

bool hashmap_next(const struct hashmap *h, size_t *iter, uint64_t *key, void **val)
{
	for (; *iter < h->cap; (*iter)++) {
		if (h->slots[*iter].val) {
			*key = h->slots[*iter].key;
			*val = h->slots[*iter].val;
			(*iter)++;
			return true;
		}
	}
	return false;
}
