/*
 * iobuf.c - bulk data buffers and their bounded cache. See iobuf.h for the
 * rules I1-I5.
 *
 * Layout. Every buffer has a header just before its first byte:
 *   under 4 KiB:  [hdr][data ...]                 malloc'd, data 16-aligned
 *   4 KiB and up: [... 4096 - hdr ...][hdr][data]  4096-aligned allocation,
 *                                                 data at its second page
 * so iobuf_free() finds the header of any buffer at the same place (I4).
 */
#include "base/iobuf.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/compiler.h"
#include "base/lock.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/stats.h"

#define MAGIC_SMALL  0x696f627566736d6cull /* "iobufsml" */
#define MAGIC_LARGE  0x696f6275666c7267ull /* "iobuflrg" */
#define MAGIC_CACHED 0x696f627566636864ull /* "iobufchd": in the cache */
#define LARGE_LEAD   4096u
#define NCLASSES     (IOBUF_MAX_CACHED / IOBUF_BIG + 1) /* index = cap / IOBUF_BIG */

struct hdr {
	uint64_t magic;
	size_t cap;
	void *base;	  /* what was allocated */
	struct hdr *next; /* in a class list, while cached */
};

_Static_assert(sizeof(struct hdr) % IOBUF_ALIGN_SMALL == 0, "small buffers' alignment (I1)");
_Static_assert(sizeof(struct hdr) <= LARGE_LEAD, "the header fits before a large buffer");
_Static_assert(IOBUF_MAX_CACHED % IOBUF_BIG == 0, "classes are multiples of IOBUF_BIG");

static struct {
	pthread_once_t once;
	struct mutex lock; /* base.iobuf (I5): the lists and cached */
	struct hdr *list[NCLASSES];
	size_t cached; /* bytes in the lists */
	_Atomic size_t limit;
	counter_t gets, hits, drops;
} cache = {.once = PTHREAD_ONCE_INIT, .limit = IOBUF_LIMIT};

static const struct lock_class iobuf_class = LOCK_CLASS(BASE_IOBUF);

static void cache_init(void)
{
	mutex_init(&cache.lock, &iobuf_class);
}

static struct hdr *hdr_of(const void *p)
{
	return (struct hdr *)((uintptr_t)p - sizeof(struct hdr));
}

static void *data_of(struct hdr *h)
{
	return (uint8_t *)h + sizeof(*h);
}

/* A buffer at a page boundary, its header in the page before. */
static struct hdr *paged_new(size_t cap)
{
	uint8_t *base = xmalloc_aligned(4096, LARGE_LEAD + cap);
	struct hdr *h = hdr_of(base + LARGE_LEAD);
	h->base = base;
	h->cap = cap;
	return h;
}

void *iobuf_alloc(size_t size)
{
	if (size < IOBUF_BIG) {
		size_t cap = ALIGN_UP(size ? size : 1, (size_t)IOBUF_ALIGN_SMALL);
		struct hdr *h;
		if (size >= 4096) {
			h = paged_new(cap);
		} else {
			h = xmalloc(sizeof(*h) + cap);
			h->base = h;
			h->cap = cap;
		}
		h->magic = MAGIC_SMALL;
		return data_of(h);
	}
	size_t cap = ALIGN_UP(size, (size_t)IOBUF_BIG);
	BUG_ON(cap < size); /* overflow */
	struct hdr *h = NULL;
	counter_inc(&cache.gets);
	if (cap <= IOBUF_MAX_CACHED) {
		pthread_once(&cache.once, cache_init);
		mutex_lock(&cache.lock);
		h = cache.list[cap / IOBUF_BIG];
		if (h) {
			BUG_ON(h->magic != MAGIC_CACHED || h->cap != cap);
			cache.list[cap / IOBUF_BIG] = h->next;
			cache.cached -= cap;
		}
		mutex_unlock(&cache.lock);
	}
	if (h)
		counter_inc(&cache.hits);
	else
		h = paged_new(cap);
	h->next = NULL;
	h->magic = MAGIC_LARGE;
	return data_of(h);
}

size_t iobuf_cap(const void *p)
{
	struct hdr *h = hdr_of(p);
	BUG_ON(h->magic != MAGIC_SMALL && h->magic != MAGIC_LARGE);
	return h->cap;
}

void iobuf_free(void *p)
{
	if (!p)
		return;
	struct hdr *h = hdr_of(p);
	if (h->magic == MAGIC_SMALL) {
		h->magic = 0;
		free(h->base);
		return;
	}
	BUG_ON(h->magic != MAGIC_LARGE); /* I4: not an iobuf, or freed twice */
	bool kept = false;
	if (h->cap <= IOBUF_MAX_CACHED) {
		pthread_once(&cache.once, cache_init);
		mutex_lock(&cache.lock);
		if (cache.cached + h->cap <=
		    atomic_load_explicit(&cache.limit, memory_order_relaxed)) {
			h->magic = MAGIC_CACHED;
			h->next = cache.list[h->cap / IOBUF_BIG];
			cache.list[h->cap / IOBUF_BIG] = h;
			cache.cached += h->cap;
			kept = true;
		}
		mutex_unlock(&cache.lock);
	}
	if (!kept) {
		counter_inc(&cache.drops);
		h->magic = 0;
		free(h->base);
	}
}

/* Give back cached buffers until the cache holds at most keep bytes,
 * the largest classes first. The buffers are freed with the lock
 * dropped (I5). */
static void shrink_to(size_t keep)
{
	struct hdr *gone = NULL;
	pthread_once(&cache.once, cache_init);
	mutex_lock(&cache.lock);
	for (size_t c = NCLASSES; c-- > 0 && cache.cached > keep;) {
		while (cache.list[c] && cache.cached > keep) {
			struct hdr *h = cache.list[c];
			cache.list[c] = h->next;
			cache.cached -= h->cap;
			h->next = gone;
			gone = h;
		}
	}
	mutex_unlock(&cache.lock);
	while (gone) {
		struct hdr *h = gone;
		gone = h->next;
		h->magic = 0;
		free(h->base);
	}
}

void iobuf_set_limit(size_t limit)
{
	atomic_store_explicit(&cache.limit, limit, memory_order_relaxed);
	shrink_to(limit);
}

void iobuf_drain(void)
{
	shrink_to(0);
}

void iobuf_stats(const struct stat_sink *sink)
{
	size_t cached;
	pthread_once(&cache.once, cache_init);
	mutex_lock(&cache.lock);
	cached = cache.cached;
	mutex_unlock(&cache.lock);
	stat_emit(sink, "iobuf.gets", counter_get(&cache.gets));
	stat_emit(sink, "iobuf.hits", counter_get(&cache.hits));
	stat_emit(sink, "iobuf.drops", counter_get(&cache.drops));
	stat_gauge(sink, "iobuf.cached_bytes", cached);
	stat_gauge(sink, "iobuf.limit_bytes", atomic_load(&cache.limit));
}
