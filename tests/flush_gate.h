/*
 * flush_gate.h - a gate for the crash device's flush hook
 * (crashdev_set_flush_hook), shared by the tests that hold flushes: flush
 * number n (from 1) waits in the hook until gate_release(g, m) with m >= n,
 * and gate_entered tells how many flushes reached the hook; WAIT_FOR polls
 * for what the held flushes lead to.
 *
 *	struct gate g = GATE_INIT;
 *	crashdev_set_flush_hook(cd, gate_hook, &g);
 */
#ifndef JNFS_TESTS_FLUSH_GATE_H
#define JNFS_TESTS_FLUSH_GATE_H

#include <pthread.h>
#include <unistd.h>

#include "base/time.h"
#include "check.h"

struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	unsigned entered, released;
};

#define GATE_INIT                                                                                  \
	{                                                                                          \
		.m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER                      \
	}

static inline void gate_hook(void *arg)
{
	struct gate *g = arg;
	pthread_mutex_lock(&g->m);
	unsigned me = ++g->entered;
	pthread_cond_broadcast(&g->c);
	while (g->released < me)
		pthread_cond_wait(&g->c, &g->m);
	pthread_mutex_unlock(&g->m);
}

static inline unsigned gate_entered(struct gate *g)
{
	pthread_mutex_lock(&g->m);
	unsigned n = g->entered;
	pthread_mutex_unlock(&g->m);
	return n;
}

static inline void gate_release(struct gate *g, unsigned n)
{
	pthread_mutex_lock(&g->m);
	g->released = n;
	pthread_cond_broadcast(&g->c);
	pthread_mutex_unlock(&g->m);
}

/* Poll for cond, failing the test after 20 s (a hang is a failure): what
 * a held flush keeps from happening, or lets happen. */
#define WAIT_FOR(cond)                                                                             \
	do {                                                                                       \
		uint64_t _t0 = now_ns();                                                           \
		while (!(cond)) {                                                                  \
			CHECK(now_ns() - _t0 < 20 * NSEC_PER_SEC);                                 \
			usleep(200);                                                               \
		}                                                                                  \
	} while (0)

#endif
