/*
 * hist.c - log-linear latency histograms. See hist.h.
 *
 * Values below HIST_SUB have a bucket each; above, a value whose highest
 * set bit is m falls in octave m - 3 and sub-bucket (v >> (m - 4)) & 15.
 */
#include "hist.h"

static unsigned bucket_of(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	unsigned m = 63u - (unsigned)__builtin_clzll(v);
	unsigned idx = (m - 3) * HIST_SUB + (unsigned)((v >> (m - 4)) & (HIST_SUB - 1));
	return idx < HIST_BUCKETS ? idx : HIST_BUCKETS - 1;
}

/* The largest value of bucket i. */
static uint64_t bucket_top(unsigned i)
{
	if (i < HIST_SUB)
		return i;
	unsigned m = i / HIST_SUB + 3, sub = i % HIST_SUB;
	uint64_t base = (uint64_t)(HIST_SUB + sub) << (m - 4);
	return base + ((uint64_t)1 << (m - 4)) - 1;
}

void hist_add(struct hist *h, uint64_t ns)
{
	h->h_n++;
	h->h_sum_ns += ns;
	if (ns > h->h_max_ns)
		h->h_max_ns = ns;
	h->h_b[bucket_of(ns)]++;
}

void hist_merge(struct hist *into, const struct hist *from)
{
	into->h_n += from->h_n;
	into->h_sum_ns += from->h_sum_ns;
	if (from->h_max_ns > into->h_max_ns)
		into->h_max_ns = from->h_max_ns;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		into->h_b[i] += from->h_b[i];
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	if (!h->h_n)
		return 0;
	uint64_t want = (uint64_t)(q * (double)h->h_n + 0.999999), acc = 0;
	if (want < 1)
		want = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		acc += h->h_b[i];
		if (acc >= want) {
			uint64_t top = bucket_top(i);
			return top < h->h_max_ns ? top : h->h_max_ns;
		}
	}
	return h->h_max_ns;
}
