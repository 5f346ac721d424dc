/*
 * svc_pool.c - the worker pool: a FIFO of svc_work items and N threads.
 * Workers run procedures, completions of calls to clients and resumed
 * handlers; the event loop only queues. Work is kept per connection
 * (struct svc_workq) and served round-robin over the connections that have
 * any (svc_pool.ready), so no connection's burst starves another's call.
 * Lock: svc.pool (rank 470), a leaf: nothing else is taken while it is
 * held.
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
	cond_init(&p->cond);
	list_init(&p->ready);
}

void workq_init(struct svc_workq *q)
{
	list_init(&q->works);
	list_init(&q->link);
	q->queued = false;
}

static void *worker_main(void *arg)
{
	struct svc_pool *p = arg;
	mutex_lock(&p->lock);
	for (;;) {
		while (list_empty(&p->ready) && !p->stop) {
			p->idle++;
			cond_wait(&p->cond, &p->lock);
			p->idle--;
		}
		if (list_empty(&p->ready))
			break; /* stopping and drained */
		struct svc_workq *q = list_first_entry(&p->ready, struct svc_workq, link);
		struct svc_work *w = list_first_entry(&q->works, struct svc_work, link);
		list_del(&w->link);
		if (list_empty(&q->works)) {
			list_del(&q->link);
			q->queued = false;
		} else {
			list_move_tail(&q->link, &p->ready);
		}
		mutex_unlock(&p->lock);
		w->fn(w);
		mutex_lock(&p->lock);
	}
	mutex_unlock(&p->lock);
	return NULL;
}

int pool_start(struct svc_pool *p, unsigned n)
{
	p->threads = xcalloc(n, sizeof(*p->threads));
	for (unsigned i = 0; i < n; i++) {
		int err = pthread_create(&p->threads[i], NULL, worker_main, p);
		if (err) {
			msg_err("rpc: cannot start worker thread: %s", strerror(err));
			pool_stop(p);
			return -err;
		}
		p->nthreads++;
	}
	return 0;
}

/* Runs the queue dry, then joins the threads. */
void pool_stop(struct svc_pool *p)
{
	mutex_lock(&p->lock);
	p->stop = true;
	cond_broadcast(&p->cond);
	mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	p->threads = NULL;
	p->nthreads = 0;
}

static void ready_locked(struct svc_pool *p, struct svc_workq *q)
{
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
	if (p->idle)
		cond_signal(&p->cond);
	mutex_unlock(&p->lock);
}

void pool_queue_list(struct svc_pool *p, struct svc_workq *q, struct list *works)
{
	if (list_empty(works))
		return;
	unsigned n = 0;
	for (struct list *l = works->next; l != works; l = l->next)
		n++;
	mutex_lock(&p->lock);
	list_splice_tail(works, &q->works);
	ready_locked(p, q);
	if (n > 1 && p->idle > 1)
		cond_broadcast(&p->cond);
	else if (p->idle)
		cond_signal(&p->cond);
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
	if (p->idle > 1)
		cond_broadcast(&p->cond);
	else if (p->idle)
		cond_signal(&p->cond);
	mutex_unlock(&p->lock);
}
