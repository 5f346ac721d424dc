/*
 * iobuf.h - buffers for bulk data, and a bounded cache of the large ones.
 *
 * Design note.
 *
 * RPC records (a 1 MiB WRITE's arguments, a 1 MiB READ's reply as the
 * client receives it) and READ data are large, short-lived buffers, one
 * per call. Fresh from the system, each page of one costs a page fault the
 * first time it is touched, and the buffer goes back to the system when it
 * is freed (glibc maps buffers this large, or trims its heap under them),
 * so every call faults again: 256 faults per MiB. On the virtual machines
 * this project runs on a fault is dear: before this cache, the faults of
 * fresh record buffers were a quarter of jnfsd's CPU time streaming 1 MiB
 * WRITEs (all of it on the one event-loop thread that reads the sockets),
 * and a third of the NFSv4.1 client's receiving READ replies. So a large
 * buffer that is freed is kept, up to a bound, and the next one of its
 * size class is that buffer, its pages already mapped.
 *
 * Rules, numbered for the tests (test-iobuf):
 *   I1 Every buffer starts at an address that is a multiple of
 *      IOBUF_ALIGN_SMALL; one of 4096 bytes or more at a multiple of 4096
 *      (a device with direct I/O reads into it and writes from it without
 *      a bounce). iobuf_cap() says how many bytes it has, at least what
 *      was asked: a large buffer (IOBUF_BIG or more) has its size class,
 *      the size rounded up to a multiple of IOBUF_BIG.
 *   I2 Only large buffers of at most IOBUF_MAX_CACHED bytes are cached;
 *      the cache holds at most the limit (iobuf_set_limit; IOBUF_LIMIT by
 *      default) of them together, and a buffer freed when it is full goes
 *      back to the system. So what the cache keeps from the system is
 *      bounded whatever the callers do; what they hold is theirs to bound
 *      (a connection's records: rpc/svc.h).
 *   I3 A buffer of a class is taken from the cache before any is made,
 *      the most recently freed first (its pages are the likeliest still in
 *      the processor's caches).
 *   I4 A buffer is freed with iobuf_free() and nothing else, and
 *      iobuf_free() takes nothing else: each buffer carries a header
 *      before its first byte, which iobuf_free() checks (a mismatch is a
 *      bug, and stops the process).
 *   I5 Callers may use buffers from any thread and free them on another.
 *      The cache is one list per class under one lock (base.iobuf, rank
 *      1000), held for a few pointer moves and taken under any other
 *      lock: nothing is allocated, freed or waited for with it held.
 *
 * Counters (iobuf_stats): iobuf.gets (large buffers asked for), iobuf.hits
 * (of those, taken from the cache), iobuf.drops (large buffers given back
 * to the system because the cache was full or they are larger than any
 * class), and the gauges iobuf.cached_bytes and iobuf.limit_bytes.
 */
#ifndef JNFS_BASE_IOBUF_H
#define JNFS_BASE_IOBUF_H

#include <stddef.h>

struct stat_sink;

#define IOBUF_ALIGN_SMALL 16u
#define IOBUF_BIG	  (64u << 10)		      /* large buffers, and their class unit */
#define IOBUF_MAX_CACHED  ((4u << 20) + IOBUF_BIG)    /* the largest class cached */
#define IOBUF_LIMIT	  ((size_t)64 << 20)	      /* the cache's default bound */

/* A buffer of at least size bytes (I1), from the cache when one of its
 * class is there (I3). Aborts the process when memory is exhausted, as
 * xmalloc does. */
void *iobuf_alloc(size_t size);

/* The bytes p may hold: at least what iobuf_alloc was asked for (I1). */
size_t iobuf_cap(const void *p);

/* Give p back: to the cache (I2) or to the system. NULL is ignored. */
void iobuf_free(void *p);

/* Bound the cache to limit bytes (I2); buffers over it are given back now.
 * 0 turns the cache off. */
void iobuf_set_limit(size_t limit);

/* Give back every cached buffer (tests, and a process that ends). */
void iobuf_drain(void);

void iobuf_stats(const struct stat_sink *sink);

#endif
