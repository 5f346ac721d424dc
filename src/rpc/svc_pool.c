/*
 * svc_pool.c - the worker pool: a FIFO of svc_work items and N threads.
 * Workers run procedures, completions of calls to clients and resumed
 * handlers; the event loop only queues. Work is kept per connection
 * (struct svc_workq) and served round-robin over the connections that have
 * any (svc_pool.ready), so no connection's burst starves another's call.
 *
 * Wakeups: sleeping workers wait on their own condition variable, on a
 * LIFO list (the most recently busy one, whose cache is warm, goes first).
 * At most one worker is being woken at a time: new work wakes one only if
 * none is already on its way, and a worker that takes an item while more
 * are queued wakes the next. So a stream of small calls is served by as few
 * threads as keep up with it instead of bouncing across all of them, and a
 * burst still fans out to every worker within a few wakeups.
 *
 * Lock: svc.pool (rank 470), a leaf: nothing else is taken while it is
 * held.
 *
 * Grace periods (pool_synchronize, svc_synchronize in svc.h): a worker
 * marks itself busy when it takes an item and counts the item done when
 * it comes back for the pool lock, both under the lock it takes anyway, so
 * the call path pays nothing for them. A waiter notes which workers are
 * busy and sleeps until each of those has finished one item.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"
#include "rpc/svc_internal.h"

void pool_init(struct svc_pool *p)
{
	memset(p, 0, sizeof(*p));
	mutex_init(&p->lock, &svc_pool_class);
	list_init(&p->ready);
	list_init(&p->idle);
	cond_init(&p->synced);
}

/* Wake the most recently idle worker unless one is already waking. */
static void wake_one_locked(struct svc_pool *p)
{
	assert_locked(&p->lock);
	if (p->nwaking || list_empty(&p->idle))
		return;
	struct svc_worker *w = list_first_entry(&p->idle, struct svc_worker, idle_link);
	list_del(&w->idle_link);
	w->signaled = true;
	p->nwaking++;
	cond_signal(&w->cond);
}

void workq_init(struct svc_workq *q)
{
	list_init(&q->works);
	list_init(&q->link);
	q->queued = false;
}

static void *worker_main(void *arg)
{
	pthread_setname_np(pthread_self(), "rpc-worker");
	struct svc_worker *w = arg;
	struct svc_pool *p = w->pool;
	mutex_lock(&p->lock);
	for (;;) {
		if (!list_empty(&p->ready)) {
			struct svc_workq *q = list_first_entry(&p->ready, struct svc_workq, link);
			struct svc_work *item = list_first_entry(&q->works, struct svc_work, link);
			list_del(&item->link);
			if (list_empty(&q->works)) {
				list_del(&q->link);
				q->queued = false;
			} else {
				list_move_tail(&q->link, &p->ready);
			}
			if (!list_empty(&p->ready))
				wake_one_locked(p); /* more to do: bring in a helper */
			w->busy = true;
			mutex_unlock(&p->lock);
			item->fn(item);
			mutex_lock(&p->lock);
			w->busy = false;
			w->done++;
			if (p->nsyncing)
				cond_broadcast(&p->synced);
			continue;
		}
		if (p->stop)
			break; /* stopping and drained */
		w->signaled = false;
		list_add(&w->idle_link, &p->idle);
		while (!w->signaled && !p->stop)
			cond_wait(&w->cond, &p->lock);
		if (w->signaled)
			p->nwaking--;
		else
			list_del(&w->idle_link);
	}
	mutex_unlock(&p->lock);
	return NULL;
}

int pool_start(struct svc_pool *p, unsigned n)
{
	p->workers = xcalloc(n, sizeof(*p->workers));
	for (unsigned i = 0; i < n; i++) {
		struct svc_worker *w = &p->workers[i];
		w->pool = p;
		cond_init(&w->cond);
		list_init(&w->idle_link);
		int err = pthread_create(&w->thread, NULL, worker_main, w);
		if (err) {
			msg_err("rpc: cannot start worker thread: %s", strerror(err));
			pool_stop(p);
			return -err;
		}
		p->nthreads++;
	}
	return 0;
}

void pool_synchronize(struct svc_pool *p)
{
	mutex_lock(&p->lock);
	unsigned n = p->nthreads;
	uint64_t *busy_at = xcalloc(n ? n : 1, sizeof(*busy_at));
	bool *busy = xcalloc(n ? n : 1, sizeof(*busy));
	for (unsigned i = 0; i < n; i++) {
		busy[i] = p->workers[i].busy;
		busy_at[i] = p->workers[i].done;
	}
	p->nsyncing++;
	for (unsigned i = 0; i < n; i++) {
		/* an item it took later is not waited for: done moved on */
		while (busy[i] && p->workers[i].busy && p->workers[i].done == busy_at[i])
			cond_wait(&p->synced, &p->lock);
	}
	p->nsyncing--;
	mutex_unlock(&p->lock);
	free(busy);
	free(busy_at);
}

/* Runs the queue dry, then joins the threads. */
void pool_stop(struct svc_pool *p)
{
	mutex_lock(&p->lock);
	p->stop = true;
	for (unsigned i = 0; i < p->nthreads; i++)
		cond_signal(&p->workers[i].cond);
	mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++) {
		pthread_join(p->workers[i].thread, NULL);
		cond_destroy(&p->workers[i].cond);
	}
	free(p->workers);
	p->workers = NULL;
	p->nthreads = 0;
}

static void ready_locked(struct svc_pool *p, struct svc_workq *q)
{
	assert_locked(&p->lock);
	if (!q->queued) {
		q->queued = true;
		list_add_tail(&q->link, &p->ready);
	}
}

void pool_queue(struct svc_pool *p, struct svc_workq *q, struct svc_work *w)
{
	mutex_lock(&p->lock);
	list_add_tail(&w->link, &q->works);
	ready_locked(p, q);
	wake_one_locked(p);
	mutex_unlock(&p->lock);
}

void pool_queue_list(struct svc_pool *p, struct svc_workq *q, struct list *works)
{
	if (list_empty(works))
		return;
	mutex_lock(&p->lock);
	list_splice_tail(works, &q->works);
	ready_locked(p, q);
	wake_one_locked(p);
	mutex_unlock(&p->lock);
}

void pool_queue_batch(struct svc_pool *p, struct list *works)
{
	if (list_empty(works))
		return;
	mutex_lock(&p->lock);
	while (!list_empty(works)) {
		struct svc_work *w = list_first_entry(works, struct svc_work, link);
		list_move_tail(&w->link, &w->q->works);
		ready_locked(p, w->q);
	}
	wake_one_locked(p);
	mutex_unlock(&p->lock);
}
