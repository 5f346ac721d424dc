/*
 * ftab.c - the skeleton of the byte-range lock and share tables (see
 * ftab.h).
 */
#include "nfs4/state/ftab.h"

#include <errno.h>
#include <stdlib.h>

#include "base/hash.h"
#include "base/mem.h"
#include "base/msg.h"

void ftab_init(struct ftab *ft, const char *name, unsigned buckets, struct lock_class *cls,
	       size_t max_total, size_t max_per_client)
{
	if (!buckets || (buckets & (buckets - 1)))
		panic("%s: %u buckets is not a power of two", name, buckets);
	ft->ft_name = name;
	ft->ft_nbuckets = buckets;
	ft->ft_buckets = xmalloc_aligned(64, buckets * sizeof(*ft->ft_buckets));
	for (unsigned i = 0; i < buckets; i++) {
		mutex_init(&ft->ft_buckets[i].b_lock, cls);
		hashmap_init(&ft->ft_buckets[i].b_files);
	}
	tally_init(&ft->ft_tally, max_total, max_per_client);
	atomic_init(&ft->ft_files, 0);
}

void ftab_destroy(struct ftab *ft, const struct ftab_ops *ops)
{
	for (unsigned i = 0; i < ft->ft_nbuckets; i++) {
		struct ftab_bucket *b = &ft->ft_buckets[i];
		mutex_lock(&b->b_lock);
		/* each round removes one client's items of the first file,
		 * which frees the file with its last item */
		for (;;) {
			size_t it = 0;
			uint64_t key;
			void *fp;
			if (!hashmap_next(&b->b_files, &it, &key, &fp))
				break;
			ops->remove(ft, b, fp, ops->file_client(fp), NULL);
		}
		mutex_unlock(&b->b_lock);
		hashmap_destroy(&b->b_files);
		mutex_destroy(&b->b_lock);
	}
	tally_destroy(&ft->ft_tally);
	free(ft->ft_buckets);
}

struct ftab_bucket *ftab_bucket(struct ftab *ft, uint64_t key)
{
	return &ft->ft_buckets[hash64(key) & (ft->ft_nbuckets - 1)];
}

void *ftab_file(struct ftab_bucket *b, uint64_t key)
{
	assert_locked(&b->b_lock);
	return hashmap_get(&b->b_files, key);
}

void *ftab_lock_file(struct ftab *ft, uint64_t key, struct ftab_bucket **bp)
{
	struct ftab_bucket *b = ftab_bucket(ft, key);
	mutex_lock(&b->b_lock);
	*bp = b;
	return ftab_file(b, key);
}

void ftab_file_add(struct ftab *ft, struct ftab_bucket *b, uint64_t key, void *fp)
{
	assert_locked(&b->b_lock);
	hashmap_put(&b->b_files, key, fp);
	atomic_fetch_add_explicit(&ft->ft_files, 1, memory_order_relaxed);
}

void ftab_file_drop(struct ftab *ft, struct ftab_bucket *b, uint64_t key)
{
	assert_locked(&b->b_lock);
	hashmap_remove(&b->b_files, key);
	if (!b->b_files.n)
		hashmap_destroy(&b->b_files);
	atomic_fetch_sub_explicit(&ft->ft_files, 1, memory_order_relaxed);
}

/* The key of a file with an item of client (owner o, or any), under the
 * shard lock; false when there is none. */
static bool item_file(struct ftab *ft, const struct ftab_ops *ops, uint64_t client,
		      const void *o, uint64_t *file)
{
	struct tally_shard *ts = tally_lock(&ft->ft_tally, client);
	struct tally_client *tc = tally_find(ts, client);
	bool found = false;
	if (tc) {
		struct list *link;
		for (link = tc->tc_items.next; link != &tc->tc_items && !found; link = link->next)
			found = ops->item_of(link, o, file);
	}
	tally_unlock(ts);
	return found;
}

size_t ftab_release(struct ftab *ft, const struct ftab_ops *ops, uint64_t client, const void *o)
{
	size_t n = 0;
	uint64_t file;
	while (item_file(ft, ops, client, o, &file)) {
		struct ftab_bucket *b = ftab_bucket(ft, file);
		mutex_lock(&b->b_lock);
		void *fp = ftab_file(b, file);
		if (fp)
			n += ops->remove(ft, b, fp, client, o);
		mutex_unlock(&b->b_lock);
	}
	return n;
}

bool ftab_holds_any(struct ftab *ft, const struct ftab_ops *ops, uint64_t client, const void *o)
{
	uint64_t file;
	return item_file(ft, ops, client, o, &file);
}

int ftab_check_files(struct ftab *ft, struct hashmap *per_client,
		     int (*check)(void *fp, uint64_t key, struct hashmap *per_client, void *arg),
		     void *arg, size_t *nfiles)
{
	int err = 0;
	*nfiles = 0;
	for (unsigned i = 0; i < ft->ft_nbuckets && !err; i++) {
		struct ftab_bucket *b = &ft->ft_buckets[i];
		mutex_lock(&b->b_lock);
		size_t it = 0;
		uint64_t key;
		void *fp;
		while (!err && hashmap_next(&b->b_files, &it, &key, &fp)) {
			if (ftab_bucket(ft, key) != b) {
				msg_err("%s check: file %llu in the wrong bucket", ft->ft_name,
					(unsigned long long)key);
				err = -EUCLEAN;
				break;
			}
			err = check(fp, key, per_client, arg);
			(*nfiles)++;
		}
		mutex_unlock(&b->b_lock);
	}
	return err;
}

void ftab_count(struct hashmap *per_client, uint64_t client, size_t n)
{
	size_t *cnt = hashmap_get(per_client, client);
	if (!cnt) {
		cnt = xcalloc(1, sizeof(*cnt));
		hashmap_put(per_client, client, cnt);
	}
	*cnt += n;
}

int ftab_check_clients(struct ftab *ft, struct hashmap *per_client, int err,
		       int (*check)(struct tally_client *tc, uint64_t client, size_t n, void *arg),
		       void *arg)
{
	size_t it = 0;
	uint64_t client;
	void *val;
	while (hashmap_next(per_client, &it, &client, &val)) {
		size_t *cnt = val;
		if (!err) {
			struct tally_shard *ts = tally_lock(&ft->ft_tally, client);
			err = check(tally_find(ts, client), client, *cnt, arg);
			tally_unlock(ts);
		}
		free(cnt);
	}
	hashmap_destroy(per_client);
	return err;
}
