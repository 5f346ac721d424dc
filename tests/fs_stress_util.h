/*
 * fs_stress_util.h - what the multi-threaded engine stress tests share
 * (test-fs-stress, test-fs-dirlock): their command line, and the final
 * check that the image they leave is clean.
 */
#ifndef JNFS_TESTS_FS_STRESS_UTIL_H
#define JNFS_TESTS_FS_STRESS_UTIL_H

#include <stdint.h>

#include "dev/dev.h"

/* Parse [--threads T] [--COUNT N] [--seed S] (count_name is COUNT: "ops",
 * "seconds"); the values keep the caller's defaults when not given. 0, or
 * 2 for a bad command line (the exit status). */
int fsu_parse_opts(int argc, char **argv, const char *count_name, unsigned *threads,
		   unsigned *count, uint64_t *seed);

/* Mount the unmounted image on d for a read-only check: it must find no
 * problem. Unmounts again; d stays open. */
void fsu_check_clean(struct dev *d);

#endif
