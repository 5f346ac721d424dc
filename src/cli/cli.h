/*
 * cli.h - helpers shared by the jnfs tool's commands.
 */
#ifndef JNFS_CLI_CLI_H
#define JNFS_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev/dev.h"

/* "ENOENT" for -ENOENT or ENOENT */
const char *cli_errname(int err);
int cli_open_devices(const char *image, const char *logdev, bool create, uint64_t size,
		     struct dev **ddev, struct dev **ldev);
int cli_io(int argc, char **argv);
int cli_pnfs(int argc, char **argv);

/* A running jnfsd's counters (its administration program on ADDR:PORT):
 * the "name value" lines, NUL-terminated, malloc'd. 0 or -errno
 * (-EPROTO: the program was refused, not a jnfsd). */
int cli_server_stats(const char *addr, char **text, size_t *len);
/* The value of counter name in such a text: 0, or -ENOENT (*v = 0: jnfsd
 * leaves out operations never called). */
int cli_stat_value(const char *text, const char *name, uint64_t *v);

#endif
