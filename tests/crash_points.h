/*
 * crash_points.h - what the power-cut harnesses over a recorded crash
 * device (dev/crashdev.h) share: their command line and the choice of the
 * points at which they cut the power (fs-crash, fs-rec-crash).
 *
 * The choice is part of a round's seed: the same seed picks the same
 * points, so a violation reported for "round S point P" can be run again.
 */
#ifndef JNFS_TESTS_CRASH_POINTS_H
#define JNFS_TESTS_CRASH_POINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rand.h"
#include "dev/crashdev.h"

struct crash_opts {
	uint64_t points, seed; /* --points N (the caller's default), --seed S (1) */
	bool verbose;          /* --verbose: a line per point */
};

/* Parse [--points N] [--seed S] [--verbose] into *o; 0, or 2 for a bad
 * command line (the exit status). */
int crash_opts_parse(int argc, char **argv, struct crash_opts *o);

/* The points to cut the recorded stream ev[0..nev) at: every FLUSH and FUA
 * write, then nrandom event indexes drawn from r; at most budget of them,
 * the surplus removed at random; ascending. An xmalloc'd array of *n. */
size_t *crash_points_pick(const struct crash_event *ev, size_t nev, unsigned nrandom,
			  uint64_t budget, struct rng *r, size_t *n);

#endif
