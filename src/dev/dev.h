/*
 * dev.h - the block device layer. All I/O in jnfs goes through here.
 *
 * A device models a disk with a volatile write cache:
 *   1. A completed write may still be lost on power failure until a flush
 *      that started after it completes.
 *   2. A write with DEV_FUA is durable when it completes.
 *   3. A flush makes every write completed before the flush started durable.
 *
 * Backends: file (image file or block device), mem (memory, optionally
 * copy-on-write over a read-only base image, for tests) and crash (see
 * crash.h). The generic layer adds, for every backend:
 *   - counters: reads, writes, bytes, FUA writes, flushes;
 *   - a latency model: a delay added to every flush and FUA write;
 *   - fault injection: the Nth I/O (or the Nth and all after) fails with EIO,
 *     or the Nth flush;
 *   - flush elision: a flush with no write completed since the last flush
 *     that covered everything is answered at once without reaching the
 *     backend (counted as dev.flushes_elided, not dev.flushes);
 *   - failed writes and flushes counted (dev_write_errors): a flush that
 *     fails may have lost data that earlier writes reported as written (a
 *     page cache drops the dirty pages whose write-back failed);
 *   - flush slots: up to DEV_FLUSH_SLOTS flushes run in the backend at
 *     once, each in a slot of its own, and a failure is counted before its
 *     slot is given back. A backend whose flush reports errors per handle
 *     (the file backend: the kernel reports a write-back error once to each
 *     open file description) keeps one handle per slot, so every flush sees
 *     every error since the last flush in its slot, and that one counted it.
 *     Hence a flush that returns 0 follows every failure it could have
 *     missed in the count.
 *
 * All functions return 0 or -errno. Offsets and lengths are in bytes; reads
 * and writes must be multiples of the sector size at sector-aligned offsets.
 * A device may be used by many threads at once.
 */
#ifndef JNFS_DEV_DEV_H
#define JNFS_DEV_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lock.h"
#include "base/stats.h"

#define DEV_FUA 0x1u /* write: durable on completion */
#define DEV_FLUSH_SLOTS 16

struct dev;

struct dev_ops {
	int (*read)(struct dev *d, void *buf, size_t len, uint64_t off);
	int (*write)(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags);
	/* slot: 0..DEV_FLUSH_SLOTS-1, no other flush runs in it meanwhile */
	int (*flush)(struct dev *d, unsigned slot);
	void (*destroy)(struct dev *d);
};

struct dev {
	const struct dev_ops *d_ops;
	char d_name[64];
	uint64_t d_size;
	uint32_t d_sector_size;

	/* latency model */
	_Atomic uint64_t d_flush_lat_ns;
	_Atomic uint64_t d_fua_lat_ns;

	/* fault injection: I/O number d_fail_at (1-based) fails; sticky: all after too */
	_Atomic uint64_t d_io_count;
	_Atomic uint64_t d_fail_at;
	_Atomic bool d_fail_sticky;
	_Atomic uint64_t d_flush_fail_in; /* this many flushes from now: the last fails */

	/* writes and flushes that failed (dev_write_errors) */
	_Atomic uint64_t d_write_errors;
	/* flush slots: bit set = free */
	struct mutex d_slot_lock; /* rank 950, never held across I/O */
	struct cond d_slot_cond;
	uint32_t d_slots_free;

	/* flush elision */
	_Atomic uint64_t d_write_gen;	/* completed writes without FUA */
	_Atomic uint64_t d_flushed_gen; /* d_write_gen covered by a completed flush */

	counter_t d_reads, d_writes, d_read_bytes, d_write_bytes, d_fua_writes, d_flushes,
		d_flushes_elided, d_errors;
};

int dev_read(struct dev *d, void *buf, size_t len, uint64_t off);
int dev_write(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags);
int dev_flush(struct dev *d);
void dev_close(struct dev *d);

static inline uint64_t dev_size(const struct dev *d)
{
	return d->d_size;
}

static inline uint32_t dev_sector_size(const struct dev *d)
{
	return d->d_sector_size;
}

/* Latency model: added to every flush and every FUA write. */
void dev_set_latency(struct dev *d, uint64_t flush_ns, uint64_t fua_ns);

/* Fault injection: the nth I/O from now on (1-based; reads, writes and flushes
 * that reach the backend all count) fails with EIO; with sticky, every later
 * one fails too. nth = 0 turns it off. */
void dev_inject_fault(struct dev *d, uint64_t nth, bool sticky);
/* I/Os counted for fault injection since the last dev_inject_fault(). */
uint64_t dev_io_count(const struct dev *d);
/* The nth flush from now on that reaches the backend (not elided) fails
 * with EIO, once; 0 turns it off. Independent of dev_inject_fault(). */
void dev_inject_flush_fault(struct dev *d, uint64_t nth);

/* Writes and flushes that failed so far (injected faults included): when it
 * moved, something a write reported written may be lost. Read after a
 * flush returned 0, it includes every failure that flush could have missed
 * (see flush slots above). */
uint64_t dev_write_errors(const struct dev *d);

/* Emit counters as prefix.reads, prefix.writes, ... (prefix is usually "dev"). */
void dev_stats(struct dev *d, const char *prefix, const struct stat_sink *sink);

/* For backends: fill in the generic part. */
void dev_init(struct dev *d, const struct dev_ops *ops, const char *name, uint64_t size,
	      uint32_t sector_size);

/*
 * File backend. Opens an image file or a block device. flags:
 *   DEV_OPEN_CREATE: create the file (size bytes, sparse) if it does not exist
 *   DEV_OPEN_DIRECT: O_DIRECT (unaligned buffers are bounced)
 *   DEV_OPEN_RDONLY: read-only; writes and flushes fail with EROFS
 * Flush is fdatasync; a FUA write uses RWF_DSYNC (or write + fdatasync).
 */
#define DEV_OPEN_CREATE 0x1u
#define DEV_OPEN_DIRECT 0x2u
#define DEV_OPEN_RDONLY 0x4u
int dev_file_open(const char *path, unsigned flags, uint64_t size, struct dev **out);

/*
 * Memory backend: a zero-filled disk of size bytes, allocated lazily in 4 KiB
 * pages. With base != NULL, unwritten pages read from base (size bytes, not
 * copied, must outlive the device): a cheap copy-on-write clone of an image.
 * Flush and FUA cost nothing; the content is what a later reader sees.
 */
int dev_mem_create(uint64_t size, const void *base, struct dev **out);
/* Copy the whole content of a memory device out (size bytes). */
void dev_mem_copy_out(struct dev *d, void *buf);

#endif
