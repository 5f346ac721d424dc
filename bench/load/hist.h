/*
 * hist.h - latency histograms for nfs-load: log-linear buckets (16 per
 * power of two, so a percentile is within 6.25% of the true value) over
 * nanoseconds, from 1 ns to about 2^44 ns (4.9 hours; larger values count
 * in the last bucket). Fixed size, no allocation: one per client and
 * operation kind, merged for the report.
 */
#ifndef JNFS_BENCH_HIST_H
#define JNFS_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB     16
#define HIST_OCTAVES 41
#define HIST_BUCKETS (HIST_SUB * HIST_OCTAVES)

struct hist {
	uint64_t h_n;
	uint64_t h_sum_ns;
	uint64_t h_max_ns;
	uint64_t h_b[HIST_BUCKETS];
};

void hist_add(struct hist *h, uint64_t ns);
void hist_merge(struct hist *into, const struct hist *from);
/* The q-quantile (0 < q <= 1) in nanoseconds: the upper bound of its
 * bucket, never above the largest value seen; 0 when empty. */
uint64_t hist_quantile(const struct hist *h, double q);

#endif
