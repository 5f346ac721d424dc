/*
 * stats.h - counters, and the one way they leave a subsystem.
 *
 * Counter names are stable and dotted ("log.checkpoints", "dev.flushes")
 * because tools and tests print and parse them as "name value" lines. A
 * subsystem exposes its counters through a function that calls
 * stat_emit() once per counter.
 *
 * Three kinds of value leave a subsystem, and a sink may tell them apart
 * (the Prometheus endpoint does: src/daemon/metrics.c) or not (the
 * "name value" text of `jnfs stat`, which is the same for all three):
 *   - a count since start, which only grows: stat_emit();
 *   - a gauge, a level that goes up and down (connections open, bytes in
 *     use, a log position): stat_gauge();
 *   - a latency histogram (struct stat_lat): stat_emit_lat(). A sink that
 *     takes no histograms gets "name.p50_us" and "name.p99_us" instead,
 *     once the histogram counted anything.
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

/*
 * A latency histogram with fixed power-of-two buckets: b[i] counts the
 * latencies in [2^i, 2^(i+1)) microseconds (b[0] also those under 1 us,
 * the last bucket everything longer), sum_ns their total. Recording is two
 * relaxed atomic additions and no lock, so it may sit on any hot path. A
 * reader sees each counter exactly but not all of them at one instant: the
 * sum may already hold a latency whose bucket it has not read yet.
 */
#define STAT_LAT_BUCKETS 32
struct stat_lat {
	counter_t b[STAT_LAT_BUCKETS];
	counter_t sum_ns;
};

static inline void stat_lat_record(struct stat_lat *l, uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned i = us ? 63 - (unsigned)__builtin_clzll(us) : 0;
	counter_inc(&l->b[i < STAT_LAT_BUCKETS ? i : STAT_LAT_BUCKETS - 1]);
	counter_add(&l->sum_ns, ns);
}

/* The exclusive upper bound of bucket i, in microseconds. */
static inline uint64_t stat_lat_bound_us(unsigned i)
{
	return 2ull << i;
}

/* The upper bound (us) of the bucket that holds the q-th quantile; 0 when
 * the histogram is empty. */
uint64_t stat_lat_quantile(const struct stat_lat *l, double q);

struct stat_sink {
	void (*emit)(void *arg, const char *name, uint64_t value);
	/* optional: gauges; without it they go to emit */
	void (*gauge)(void *arg, const char *name, uint64_t value);
	/* optional: histograms; without it their percentiles go to emit */
	void (*lat)(void *arg, const char *name, const struct stat_lat *l);
	void *arg;
};

static inline void stat_emit(const struct stat_sink *s, const char *name, uint64_t value)
{
	s->emit(s->arg, name, value);
}

static inline void stat_gauge(const struct stat_sink *s, const char *name, uint64_t value)
{
	(s->gauge ? s->gauge : s->emit)(s->arg, name, value);
}

/* Emit "prefix.name". */
void stat_emitf(const struct stat_sink *s, const char *prefix, const char *name, uint64_t value);
void stat_gaugef(const struct stat_sink *s, const char *prefix, const char *name, uint64_t value);
/* The histogram, or "name.p50_us" and "name.p99_us" to a sink without lat
 * (nothing while it is empty). */
void stat_emit_lat(const struct stat_sink *s, const char *name, const struct stat_lat *l);

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
