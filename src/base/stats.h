/*
 * stats.h - counters, and the one way they leave a subsystem.
 *
 * Counter names are stable and dotted ("log.checkpoints", "dev.flushes")
 * because tools and tests print and parse them as "name value" lines. A
 * subsystem exposes its counters through a function that calls
 * stat_emit() once per counter.
 */
#ifndef JNFS_BASE_STATS_H
#define JNFS_BASE_STATS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

typedef _Atomic uint64_t counter_t;

static inline void counter_inc(counter_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static inline void counter_add(counter_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static inline uint64_t counter_get(const counter_t *c)
{
	return atomic_load_explicit((counter_t *)c, memory_order_relaxed);
}

struct stat_sink {
	void (*emit)(void *arg, const char *name, uint64_t value);
	void *arg;
};

static inline void stat_emit(const struct stat_sink *s, const char *name, uint64_t value)
{
	s->emit(s->arg, name, value);
}

/* Emit "prefix.name". */
void stat_emitf(const struct stat_sink *s, const char *prefix, const char *name, uint64_t value);

/* A sink that prints "name value\n" lines to a FILE. */
struct stat_sink stat_sink_file(FILE *f);

/*
 * A sink that records values so a test can look them up by name.
 * stat_table_get() returns 0 for a name that was never emitted.
 */
struct stat_table {
	int n;
	struct {
		char name[64];
		uint64_t value;
	} e[256];
};
struct stat_sink stat_sink_table(struct stat_table *t);
uint64_t stat_table_get(const struct stat_table *t, const char *name);

#endif
