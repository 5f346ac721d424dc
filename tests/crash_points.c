/*
 * crash_points.c - command line and power-cut points of the crash
 * harnesses (see crash_points.h).
 */
#include <getopt.h>
#include <stdlib.h>

#include "base/mem.h"
#include "crash_points.h"

int crash_opts_parse(int argc, char **argv, struct crash_opts *o)
{
	static const struct option opts[] = {{"points", required_argument, NULL, 'n'},
					     {"seed", required_argument, NULL, 's'},
					     {"verbose", no_argument, NULL, 'v'},
					     {NULL, 0, NULL, 0}};
	int c;
	o->seed = 1;
	o->verbose = false;
	while ((c = getopt_long(argc, argv, "n:s:v", opts, NULL)) != -1) {
		if (c == 'n')
			o->points = strtoull(optarg, NULL, 0);
		else if (c == 's')
			o->seed = strtoull(optarg, NULL, 0);
		else if (c == 'v')
			o->verbose = true;
		else
			return 2;
	}
	return 0;
}

size_t *crash_points_pick(const struct crash_event *ev, size_t nev, unsigned nrandom,
			  uint64_t budget, struct rng *r, size_t *n)
{
	size_t *pts = xmalloc((nev + nrandom) * sizeof(*pts));
	size_t npts = 0;
	for (size_t i = 0; i < nev; i++)
		if (ev[i].type == CRASH_EV_FLUSH || ev[i].type == CRASH_EV_FUA)
			pts[npts++] = i;
	for (unsigned i = 0; i < nrandom && nev > 1; i++)
		pts[npts++] = (size_t)rng_below(r, nev);
	while (npts > budget) {
		size_t k = (size_t)rng_below(r, npts);
		pts[k] = pts[--npts];
	}
	for (size_t i = 1; i < npts; i++) /* insertion sort: a few hundred */
		for (size_t j = i; j > 0 && pts[j - 1] > pts[j]; j--) {
			size_t x = pts[j];
			pts[j] = pts[j - 1];
			pts[j - 1] = x;
		}
	*n = npts;
	return pts;
}
