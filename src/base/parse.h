/*
 * parse.h - the one parser of sizes that jnfsd and the jnfs tool take on
 * their command lines (`jnfsd --size`, `jnfs mkfs --size`, `jnfs io`
 * offsets and lengths, `jnfs pnfs` sizes).
 *
 * A size is a decimal number, or a hexadecimal one after "0x", followed by
 * at most one binary unit: k, m, g or t in either case (KiB, MiB, GiB,
 * TiB); "i", "B" or "iB" may follow the unit ("8g", "8G", "8Gi", "8GiB").
 * Nothing else may stand around it: no sign, no space, no second unit.
 * Each program checks its own range (jnfsd, for one, refuses 0).
 */
#ifndef JNFS_BASE_PARSE_H
#define JNFS_BASE_PARSE_H

#include <stdint.h>

/* 0 and *out set; -EINVAL for a string that is not a size (*out untouched),
 * -ERANGE for one past UINT64_MAX bytes. */
int parse_size(const char *s, uint64_t *out);

#endif
