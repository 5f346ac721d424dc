/*
 * mem.h - allocation helpers. Small bookkeeping allocations that fail abort
 * the process (there is no sane recovery from a failed 64-byte malloc);
 * large, input-sized allocations use plain malloc and handle NULL.
 */
#ifndef JNFS_BASE_MEM_H
#define JNFS_BASE_MEM_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Aligned allocation, freed with free(). */
void *xmalloc_aligned(size_t align, size_t n);

#endif
