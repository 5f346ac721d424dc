/*
 * fs_stress_util.c - command line and final check of the engine stress
 * tests (see fs_stress_util.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fs/fs.h"
#include "fs_stress_util.h"

int fsu_parse_opts(int argc, char **argv, const char *count_name, unsigned *threads,
		   unsigned *count, uint64_t *seed)
{
	const struct option opts[] = {{"threads", required_argument, NULL, 't'},
				      {count_name, required_argument, NULL, 'n'},
				      {"seed", required_argument, NULL, 's'},
				      {NULL, 0, NULL, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "t:n:s:", opts, NULL)) != -1) {
		if (o == 't')
			*threads = (unsigned)strtoul(optarg, NULL, 0);
		else if (o == 'n')
			*count = (unsigned)strtoul(optarg, NULL, 0);
		else if (o == 's')
			*seed = strtoull(optarg, NULL, 0);
		else
			return 2;
	}
	return 0;
}

void fsu_check_clean(struct dev *d)
{
	struct fs *fs;
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = d, .readonly_check = true}, &fs));
	uint64_t problems = 1;
	CHECK_OK(fs_check(fs, stderr, &problems));
	CHECK_EQ(problems, 0);
	CHECK_OK(fs_unmount(fs));
}
