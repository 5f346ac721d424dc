/*
 * svc_timer.c - one binary min-heap of deadlines per server, driven by the
 * event loop: the loop sleeps in epoll_wait until the earliest deadline and
 * fires what is due. A timer armed earlier than everything in the heap
 * wakes the loop through the eventfd. Lock: svc.timers (rank 460).
 *
 * Invariant: a timer is in the heap iff t->idx != SIZE_MAX, and
 * heap[t->idx] == t. Callbacks run with no lock held, on the loop thread
 * (or on the stopping thread once the loop is gone); they only claim an
 * object and hand work to the pool.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/msg.h"
#include "rpc/svc_internal.h"

void timers_init(struct svc_timers *t)
{
	mutex_init(&t->lock, &svc_timers_class);
	t->heap = NULL;
	t->n = t->cap = 0;
}

void timers_destroy(struct svc_timers *t)
{
	free(t->heap);
	mutex_destroy(&t->lock);
}

void timer_init(struct svc_timer *t, void (*fn)(struct svc_timer *t))
{
	t->deadline = 0;
	t->idx = SIZE_MAX;
	t->fn = fn;
}

static void heap_set(struct svc_timers *h, size_t i, struct svc_timer *t)
{
	h->heap[i] = t;
	t->idx = i;
}

static void sift_up(struct svc_timers *h, size_t i)
{
	struct svc_timer *t = h->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (h->heap[parent]->deadline <= t->deadline)
			break;
		heap_set(h, i, h->heap[parent]);
		i = parent;
	}
	heap_set(h, i, t);
}

static void sift_down(struct svc_timers *h, size_t i)
{
	struct svc_timer *t = h->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->heap[c + 1]->deadline < h->heap[c]->deadline)
			c++;
		if (t->deadline <= h->heap[c]->deadline)
			break;
		heap_set(h, i, h->heap[c]);
		i = c;
	}
	heap_set(h, i, t);
}

static void heap_remove(struct svc_timers *h, size_t i)
{
	struct svc_timer *t = h->heap[i];
	t->idx = SIZE_MAX;
	h->n--;
	if (i == h->n)
		return;
	struct svc_timer *moved = h->heap[h->n];
	heap_set(h, i, moved);
	sift_down(h, i);
	sift_up(h, moved->idx);
}

static void wake_loop(struct svc *s)
{
	uint64_t one = 1;
	if (write(s->evfd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the loop is already awake */
	}
}

void timer_arm(struct svc *s, struct svc_timer *t, uint64_t deadline)
{
	struct svc_timers *h = &s->timers;
	bool first;
	mutex_lock(&h->lock);
	BUG_ON(t->idx != SIZE_MAX);
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 64;
		h->heap = xrealloc(h->heap, h->cap * sizeof(*h->heap));
	}
	t->deadline = deadline;
	heap_set(h, h->n++, t);
	sift_up(h, t->idx);
	first = t->idx == 0;
	mutex_unlock(&h->lock);
	if (first)
		wake_loop(s);
}

bool timer_cancel(struct svc *s, struct svc_timer *t)
{
	struct svc_timers *h = &s->timers;
	bool was;
	mutex_lock(&h->lock);
	was = t->idx != SIZE_MAX;
	if (was)
		heap_remove(h, t->idx);
	mutex_unlock(&h->lock);
	return was;
}

uint64_t timers_next(struct svc *s)
{
	uint64_t d;
	mutex_lock(&s->timers.lock);
	d = s->timers.n ? s->timers.heap[0]->deadline : UINT64_MAX;
	mutex_unlock(&s->timers.lock);
	return d;
}

bool timers_run(struct svc *s, uint64_t now, unsigned max)
{
	struct svc_timers *h = &s->timers;
	struct svc_timer *due[64];
	unsigned fired = 0;
	while (fired < max) {
		unsigned n = 0;
		mutex_lock(&h->lock);
		while (n < ARRAY_SIZE(due) && fired + n < max && h->n &&
		       h->heap[0]->deadline <= now) {
			due[n++] = h->heap[0];
			heap_remove(h, 0);
		}
		mutex_unlock(&h->lock);
		if (!n)
			return false;
		assert_no_locks(); /* callbacks run with none held */
		for (unsigned i = 0; i < n; i++)
			due[i]->fn(due[i]);
		pool_queue_batch(&s->pool, &s->timer_batch);
		fired += n;
	}
	return timers_next(s) <= now;
}
