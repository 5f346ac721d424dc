/*
 * tally.c - per-client record counts with bounds (see tally.h).
 *
 * The per-client bound is checked under the client's shard lock; the total
 * is an atomic reserved with a compare-and-swap, so that shards never wait
 * for each other. Both checks come before any change.
 */
#include "nfs4/state/tally.h"

#include <errno.h>
#include <stdlib.h>

#include "base/hash.h"
#include "base/mem.h"
#include "base/msg.h"

static struct lock_class tally_shard_class = LOCK_CLASS(NFS4_TALLY);

static struct tally_shard *shard_of(struct tally *t, uint64_t client)
{
	return &t->t_shards[hash64(client) % TALLY_SHARDS];
}

void tally_init(struct tally *t, size_t max_total, size_t max_per_client)
{
	for (int i = 0; i < TALLY_SHARDS; i++) {
		mutex_init(&t->t_shards[i].ts_lock, &tally_shard_class);
		hashmap_init(&t->t_shards[i].ts_clients);
	}
	t->t_max_total = max_total;
	t->t_max_per_client = max_per_client;
	atomic_init(&t->t_total, 0);
	atomic_init(&t->t_clients, 0);
}

void tally_destroy(struct tally *t)
{
	for (int i = 0; i < TALLY_SHARDS; i++) {
		struct tally_shard *s = &t->t_shards[i];
		if (s->ts_clients.n)
			panic("tally: %zu clients left at destroy", s->ts_clients.n);
		hashmap_destroy(&s->ts_clients);
		mutex_destroy(&s->ts_lock);
	}
}

struct tally_shard *tally_lock(struct tally *t, uint64_t client)
{
	struct tally_shard *s = shard_of(t, client);
	mutex_lock(&s->ts_lock);
	return s;
}

void tally_unlock(struct tally_shard *s)
{
	mutex_unlock(&s->ts_lock);
}

struct tally_client *tally_find(struct tally_shard *s, uint64_t client)
{
	assert_locked(&s->ts_lock);
	return hashmap_get(&s->ts_clients, client);
}

/* Reserve n of the total bound: false if it would pass max_total. */
static bool total_reserve(struct tally *t, size_t n)
{
	size_t cur = atomic_load_explicit(&t->t_total, memory_order_relaxed);
	do {
		if (n > t->t_max_total || cur > t->t_max_total - n)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(
		&t->t_total, &cur, cur + n, memory_order_relaxed, memory_order_relaxed));
	return true;
}

int tally_charge(struct tally *t, struct tally_shard *s, uint64_t client, size_t n,
		 struct tally_client **tcp)
{
	assert_locked(&s->ts_lock);
	BUG_ON(n == 0);
	struct tally_client *tc = hashmap_get(&s->ts_clients, client);
	size_t have = tc ? tc->tc_n : 0;
	if (n > t->t_max_per_client || have > t->t_max_per_client - n)
		return -ENOLCK;
	if (!total_reserve(t, n))
		return -ENOLCK;
	if (!tc) {
		tc = xmalloc(sizeof(*tc));
		tc->tc_id = client;
		tc->tc_n = 0;
		list_init(&tc->tc_items);
		hashmap_put(&s->ts_clients, client, tc);
		atomic_fetch_add_explicit(&t->t_clients, 1, memory_order_relaxed);
	}
	tc->tc_n += n;
	*tcp = tc;
	return 0;
}

void tally_uncharge(struct tally *t, struct tally_shard *s, struct tally_client *tc, size_t n)
{
	assert_locked(&s->ts_lock);
	BUG_ON(n > tc->tc_n);
	tc->tc_n -= n;
	atomic_fetch_sub_explicit(&t->t_total, n, memory_order_relaxed);
	if (tc->tc_n)
		return;
	/* invariant 2: no records, so no items */
	BUG_ON(!list_empty(&tc->tc_items));
	hashmap_remove(&s->ts_clients, tc->tc_id);
	if (!s->ts_clients.n)
		hashmap_destroy(&s->ts_clients); /* give the slots back, too */
	atomic_fetch_sub_explicit(&t->t_clients, 1, memory_order_relaxed);
	free(tc);
}

size_t tally_count(struct tally *t, uint64_t client)
{
	struct tally_shard *s = tally_lock(t, client);
	struct tally_client *tc = tally_find(s, client);
	size_t n = tc ? tc->tc_n : 0;
	tally_unlock(s);
	return n;
}
