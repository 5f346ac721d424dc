/*
 * drc.c - duplicate request cache. See drc.h for states and invariants.
 * A fixed array of hash buckets (intrusive lists) and one LRU list of DONE
 * entries, all under one mutex (svc.drc, rank 420).
 */
#include "rpc/drc.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32c.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/mem.h"
#include "base/msg.h"
#include "rpc/svc_internal.h"

#define DRC_BUCKETS 1024

enum { DRC_E_IN_PROGRESS, DRC_E_DONE };

struct drc_entry {
	struct list hash_link;
	struct list lru_link; /* DONE entries only */
	struct drc_key key;
	int state;
	uint8_t *reply;
	size_t len;
};

struct drc {
	struct mutex lock;
	size_t max_entries, max_bytes;
	size_t n_done, n_in_progress, bytes;
	uint64_t evictions;
	struct list lru;
	struct list buckets[DRC_BUCKETS];
};

void drc_key_addr(struct drc_key *k, const struct sockaddr_storage *ss)
{
	memset(k->addr, 0, sizeof(k->addr));
	k->port = 0;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		k->addr[10] = k->addr[11] = 0xff;
		memcpy(k->addr + 12, &in->sin_addr, 4);
		k->port = ntohs(in->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
		memcpy(k->addr, &in6->sin6_addr, 16);
		k->port = ntohs(in6->sin6_port);
	}
}

struct drc *drc_create(size_t max_entries, size_t max_bytes)
{
	struct drc *d = xcalloc(1, sizeof(*d));
	mutex_init(&d->lock, &svc_drc_class);
	d->max_entries = max_entries;
	d->max_bytes = max_bytes;
	list_init(&d->lru);
	for (int i = 0; i < DRC_BUCKETS; i++)
		list_init(&d->buckets[i]);
	return d;
}

void drc_destroy(struct drc *d)
{
	for (int i = 0; i < DRC_BUCKETS; i++) {
		struct drc_entry *e, *t;
		list_for_each_entry_safe(e, t, &d->buckets[i], hash_link)
		{
			free(e->reply);
			free(e);
		}
	}
	mutex_destroy(&d->lock);
	free(d);
}

static struct list *bucket(struct drc *d, const struct drc_key *k)
{
	return &d->buckets[crc32c(0, k, sizeof(*k)) % DRC_BUCKETS];
}

static void entry_free_locked(struct drc *d, struct drc_entry *e)
{
	assert_locked(&d->lock);
	list_del(&e->hash_link);
	if (e->state == DRC_E_DONE) {
		list_del(&e->lru_link);
		d->n_done--;
		d->bytes -= e->len;
	} else {
		d->n_in_progress--;
	}
	free(e->reply);
	free(e);
}

enum drc_result drc_begin(struct drc *d, const struct drc_key *k, struct drc_entry **out,
			  uint8_t **reply, size_t *len)
{
	enum drc_result res;
	struct list *b = bucket(d, k);
	struct drc_entry *e;

	mutex_lock(&d->lock);
	list_for_each_entry(e, b, hash_link)
	{
		if (memcmp(&e->key, k, sizeof(*k)) != 0)
			continue;
		if (e->state == DRC_E_IN_PROGRESS) {
			res = DRC_IN_PROGRESS;
			goto out_unlock;
		}
		/* copy under the lock: the entry may be evicted right after */
		*reply = xmalloc(e->len);
		memcpy(*reply, e->reply, e->len);
		*len = e->len;
		list_move_tail(&e->lru_link, &d->lru);
		res = DRC_HIT;
		goto out_unlock;
	}
	if (d->n_in_progress >= d->max_entries) {
		res = DRC_UNCACHED; /* invariant 2 */
		goto out_unlock;
	}
	e = xcalloc(1, sizeof(*e));
	e->key = *k;
	e->state = DRC_E_IN_PROGRESS;
	list_init(&e->lru_link);
	list_add(&e->hash_link, b);
	d->n_in_progress++;
	*out = e;
	res = DRC_MISS;
out_unlock:
	mutex_unlock(&d->lock);
	return res;
}

void drc_finish(struct drc *d, struct drc_entry *e, const void *reply, size_t len)
{
	uint8_t *copy = NULL;
	if (len <= d->max_bytes) {
		copy = xmalloc(len);
		memcpy(copy, reply, len);
	}
	mutex_lock(&d->lock);
	if (!copy) {
		/* larger than the whole cache: cannot be kept */
		entry_free_locked(d, e);
		goto out_unlock;
	}
	d->n_in_progress--;
	e->state = DRC_E_DONE;
	e->reply = copy;
	e->len = len;
	list_add_tail(&e->lru_link, &d->lru);
	d->n_done++;
	d->bytes += len;
	/* invariant 1 */
	while (d->n_done > d->max_entries || d->bytes > d->max_bytes) {
		struct drc_entry *old = list_first_entry(&d->lru, struct drc_entry, lru_link);
		entry_free_locked(d, old);
		d->evictions++;
	}
out_unlock:
	mutex_unlock(&d->lock);
}

void drc_abort(struct drc *d, struct drc_entry *e)
{
	mutex_lock(&d->lock);
	entry_free_locked(d, e);
	mutex_unlock(&d->lock);
}

void drc_stats(struct drc *d, const struct stat_sink *sink, const char *prefix)
{
	mutex_lock(&d->lock);
	uint64_t n = d->n_done, b = d->bytes, ip = d->n_in_progress, ev = d->evictions;
	mutex_unlock(&d->lock);
	stat_gaugef(sink, prefix, "drc_entries", n);
	stat_gaugef(sink, prefix, "drc_bytes", b);
	stat_gaugef(sink, prefix, "drc_in_progress_entries", ip);
	stat_emitf(sink, prefix, "drc_evictions", ev);
}
