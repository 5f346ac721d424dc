/*
 * cli.h - helpers shared by the jnfs tool's commands.
 */
#ifndef JNFS_CLI_CLI_H
#define JNFS_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/dev.h"

int cli_parse_size(const char *s, uint64_t *out);
/* "ENOENT" for -ENOENT or ENOENT */
const char *cli_errname(int err);
int cli_open_devices(const char *image, const char *logdev, bool create, uint64_t size,
		     struct dev **ddev, struct dev **ldev);
int cli_io(int argc, char **argv);

#endif
