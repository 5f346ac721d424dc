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
 * crashdev.h). The generic layer adds, for every backend:
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
 *   - shared flushes, below.
 *
 * Shared flushes. A flush is a point in time (3), so one flush serves every
 * caller whose writes completed before it started, however many they are:
 * concurrent fdatasyncs, COMMITs, layout commits and the journal's flush
 * before a checkpoint all wait for the same flush instead of each issuing
 * one. What makes that correct, numbered for the tests:
 *   F1 Flushes of a device reach the backend one at a time, in sequence
 *      order: flush k+1 starts after flush k completed. So flush k also
 *      covers everything flush k-1 did.
 *   F2 A caller is satisfied only by a flush that started after the call:
 *      it is given the sequence of the next flush to start (d_flush_started
 *      + 1 when it arrives), never the one running, which may have started
 *      before the caller's writes completed (the journal's log_flushed
 *      rests on the same argument, log.h G6).
 *   F3 A caller fails if any flush from its own sequence up to the one that
 *      completed it failed.
 *   F4 A failed flush is counted in dev_write_errors before the next flush
 *      starts and before any of its callers returns. Since flushes run one
 *      at a time, a backend whose flush reports an error to one handle only
 *      (the file backend: the kernel reports a write-back error once to
 *      each open file description, at its next fsync) needs one handle:
 *      every flush sees every error since the one before, which counted
 *      its own. Hence a flush that returns 0 follows every failure it
 *      could have missed in the count.
 *   F5 Every caller of flush k is completed when flush k completes (once
 *      someone leads it): a synchronous caller that finds no flush running
 *      leads the next one on its own thread; an asynchronous caller
 *      (dev_flush_async) with may_lead does the same; asynchronous callers
 *      queued with nobody to lead for them are led by the device's flusher
 *      thread, started the first time it is needed.
 *   F6 A write is durable once a flush that started after it completed
 *      returned 0 AND no flush failed since the write was issued: a failed
 *      flush may have lost it (a page cache drops the dirty pages whose
 *      write-back failed), whoever ran it (flush-behind, B1, another
 *      caller's, the journal's), and the next flush returns 0 (F4). So a
 *      caller that makes a write stable reads dev_flush_errors() (the
 *      failed flushes, counted before the failed flush completes, F4)
 *      before it issues the write, and once its flush (or anyone's that
 *      covered it) returned 0 reads it again: if it moved, the write may
 *      be lost and the operation fails with EIO (a retry writes it
 *      again). One atomic load each, no lock, no extra flush. It may fail
 *      an operation whose write a flush covered before another one failed
 *      (it does not know which flush covered it): only when a flush
 *      failed, never silently.
 * The group of a flush is the callers it served; dev.flush_callers counts
 * them all, dev.flush_group_<n> how many flushes served up to n callers
 * (n = 1, 2, 4, 8, 16, and "more"). dev.unflushed_bytes is what writes
 * completed since the last flush put in the device's volatile cache,
 * dev.unflushed_bytes_max the most it was after a write completed (since
 * dev_set_flush_behind last set the bound), and
 * dev.flush_bytes_last what the newest completed flush made durable that
 * no flush before it had (what it had to write back).
 *
 * Flush-behind (dev_set_flush_behind). Without it the volatile cache holds
 * whatever was written since the last flush, and the next caller that
 * needs a flush, or a FUA write where FUA is a write and a flush, pays for
 * writing all of it back: a sync export's CREATE right after another
 * client wrote half a gigabyte UNSTABLE. With a bound B and a limit H:
 *   B1 When a write without FUA completes and the unflushed bytes are B or
 *      more, a flush is asked for (dev_flush_async, no thread waits; the
 *      device's flusher thread leads it), unless one it asked for has not
 *      completed yet. It is a flush like any other (F1-F5): it serves
 *      whoever is queued for it, and serves nobody that came later (F2).
 *   B2 A write without FUA that would leave more than H bytes in the cache
 *      (the unflushed bytes of completed writes, plus its own) waits first
 *      until flushes made durable what keeps it under H (everything
 *      completed before it, if that is not enough): the flush under way
 *      when it covers that, else the next (F2); one wait, then it goes. So
 *      the one that waits is the writer that fills the cache, normally the
 *      writer of unstable data, and the cache passes H only by writes that
 *      run at once with the one that waited (or by a single write larger
 *      than H). Writes still under way are not counted: a flush started
 *      now does not cover them (F2), so they add nothing to what a sync
 *      operation's flush writes back until they complete, and a client
 *      streaming 1 MiB writes eight at a time has H under way by itself
 *      (counting them, nearly every one of its writes waited: 3,900 of
 *      4,096, against 2,340 not counting them). FUA writes never wait, nor do writes with
 *      DEV_NOTHROTTLE: the journal's log records and item write-backs, and
 *      the data of synchronous writes (fs_write_sync). A sync operation
 *      waits for the first, the second holds item locks (log_priv.h I5)
 *      that a sync operation may need: either waiting would make it wait
 *      behind other clients' unstable data, which is what the bound is
 *      for. The third is followed at once by a flush of its own: waiting
 *      for one before made a FILE_SYNC stream wait for two flushes per
 *      write (883 of 1,024 1 MiB writes waited, 4 streams). They count in
 *      the unflushed bytes and ask for flushes (B1) like any write, so the
 *      cache may also pass H by
 *      what the journal writes at once (an AIL push), which the journal
 *      flushes before its tail moves anyway (log_priv.h I1).
 *   B3 A flush-behind flush that fails is counted in dev_write_errors like
 *      any other (F4), before any later flush starts: the write verifier
 *      that hangs on it changes before the next COMMIT reply.
 * It cannot break an ordering rule (log.h G7, I1): they are all "this
 * must be durable before that is written", and an extra flush only makes
 * things durable sooner, as the disk's own write-back may at any moment
 * (1). Counters: dev.flush_behind_flushes (asked for and not elided),
 * dev.flush_behind_throttles and dev.flush_behind_throttle_ns (writers
 * that waited, B2, and how long), dev.flush_behind_bound (B, a gauge).
 *
 * All functions return 0 or -errno. Offsets and lengths are in bytes; reads
 * and writes must be multiples of the sector size at sector-aligned offsets.
 * A device may be used by many threads at once.
 *
 * Locks (ranks 900-999, after every other layer's: a caller may hold any
 * lock): 940 dev.flush_lock (a device's shared flushes and tickets, never
 * held across I/O), 970 crash_dev.flush_lock (the crash device's flushes,
 * one at a time), 980 crash_dev.lock (the crash device's overlay and
 * record; it calls its inner device with it held), then 990 mem_dev.lock
 * (the memory backend's pages). Nothing else is taken under them. With
 * flush-behind on, dev_write may wait for a flush or lead one (B2), as
 * dev_flush does: it may then run asynchronous callers' functions, which
 * must not take a lock a writer holds.
 */
#ifndef JNFS_DEV_DEV_H
#define JNFS_DEV_DEV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/list.h"
#include "base/lock.h"
#include "base/stats.h"

#define DEV_FUA	       0x1u /* write: durable on completion */
#define DEV_NOTHROTTLE 0x2u /* write: never waits for flush-behind's limit (B2) */

struct dev;

/* A caller of dev_flush_async (below). */
struct dev_flush_waiter {
	void (*fn)(struct dev_flush_waiter *w, int err);
	uint64_t seq; /* the flush it waits for (the device's) */
	struct list link;
};

struct dev_ops {
	int (*read)(struct dev *d, void *buf, size_t len, uint64_t off);
	int (*write)(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags);
	int (*flush)(struct dev *d);
	void (*destroy)(struct dev *d);
};

struct dev {
	const struct dev_ops *d_ops;
	char d_name[64];
	uint64_t d_size;
	uint32_t d_sector_size;
	bool d_direct_io; /* the backend bypasses the host's page cache (filedev.c) */

	/* latency model */
	_Atomic uint64_t d_flush_lat_ns;
	_Atomic uint64_t d_fua_lat_ns;

	/* fault injection: I/O number d_fail_at (1-based) fails; sticky: all after too */
	_Atomic uint64_t d_io_count;
	_Atomic uint64_t d_fail_at;
	_Atomic bool d_fail_sticky;
	_Atomic uint64_t d_flush_fail_in; /* this many flushes from now: the last fails */

	/* writes and flushes that failed (dev_write_errors), and flushes
	 * alone (dev_flush_errors, F6) */
	_Atomic uint64_t d_write_errors;
	_Atomic uint64_t d_flush_errors;

	/* flush elision */
	_Atomic uint64_t d_write_gen;	/* completed writes without FUA */
	_Atomic uint64_t d_flushed_gen; /* d_write_gen covered by a completed flush */
	/* bytes of those writes, and how many a completed flush covered: the
	 * difference is what the device's volatile cache may hold (the
	 * counter dev.unflushed_bytes) */
	_Atomic uint64_t d_write_total, d_flushed_total;

	/* shared flushes (F1-F5), under d_flush_lock (rank 940: taken under
	 * any engine or journal lock, never held across I/O) */
	struct mutex d_flush_lock;
	struct cond d_flush_cond;      /* synchronous callers wait for their flush */
	struct cond d_flusher_cond;    /* the flusher thread waits for work */
	uint64_t d_flush_started;      /* sequence of the newest flush started */
	uint64_t d_flush_done;	       /* every flush up to here completed */
	uint64_t d_flush_failed;       /* the newest flush that failed, 0 if none */
	bool d_flush_running;	       /* flush d_flush_started is under way */
	unsigned d_flush_next;	       /* callers waiting for the next flush */
	unsigned d_flush_next_sync;    /* ... of which synchronous: one will lead it */
	struct list d_flush_async;     /* struct dev_flush_waiter, queued */
	bool d_flusher_started, d_flusher_stop;
	pthread_t d_flusher;

	uint64_t d_flush_bytes; /* d_write_total sampled by the running flush */

	/* flush-behind (B1-B3); d_fb_bound 0: off */
	_Atomic uint64_t d_fb_bound, d_fb_limit;
	_Atomic bool d_fb_queued;	/* d_fb_waiter is queued (B1): not again */
	struct dev_flush_waiter d_fb_waiter;
	_Atomic uint64_t d_unflushed_max;    /* high-water mark of unflushed bytes */
	_Atomic uint64_t d_flush_bytes_last; /* what the newest flush made durable */

	counter_t d_reads, d_writes, d_read_bytes, d_write_bytes, d_fua_writes, d_flushes,
		d_flushes_elided, d_errors;
	counter_t d_fb_flushes, d_fb_throttles, d_fb_throttle_ns;
	counter_t d_flush_callers, d_flush_waits, d_flush_async_led;
	counter_t d_flush_group[6]; /* groups of 1, 2, 3-4, 5-8, 9-16, more */
	/* bytes of direct I/O copied through an aligned buffer because the
	 * caller's was not aligned enough (filedev.c) */
	counter_t d_bounced_bytes;
};

int dev_read(struct dev *d, void *buf, size_t len, uint64_t off);
int dev_write(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags);
/* Returns once a flush that started after the call completed (F2). */
int dev_flush(struct dev *d);
/* Writes this layer did not see may sit in the device's cache (a pNFS
 * client wrote the storage directly): the next flush reaches the backend
 * instead of being elided. */
void dev_note_external_writes(struct dev *d);
void dev_close(struct dev *d);

/*
 * A flush without a thread waiting. fn runs once a flush that started after
 * the call completed, with its result (F3); it must not block and must not
 * call into the device. Returns 0 when nothing was written since the last
 * flush that covered everything (fn is not called), 1 when fn will be
 * called. With may_lead, a caller that finds no flush running runs it on
 * its own thread, and fn has run before the call returns (one thread
 * hand-off less for a lone caller; only for callers that hold no lock fn
 * needs). Otherwise the flush is led by a synchronous caller or by the
 * device's flusher thread, and fn runs there.
 */
int dev_flush_async(struct dev *d, struct dev_flush_waiter *w, bool may_lead);

/*
 * Flush tickets, for callers that need to know whether somebody else's
 * flush covered their writes (the journal's log_flushed, G6): a ticket
 * taken now is the sequence of the next flush to start; dev_flush_covered()
 * is true once a flush with that sequence or a later one completed and
 * none of them failed, i.e. every write completed before the ticket was
 * taken is durable.
 */
uint64_t dev_flush_ticket(struct dev *d);
bool dev_flush_covered(struct dev *d, uint64_t ticket);
/* Did a flush with that sequence or a later one fail, whoever called it?
 * A write that completed after the ticket was taken may then be lost even
 * if a later flush returned 0 (F4: that flush does not report it). The
 * journal asks before it moves its tail past items it wrote back (log
 * I6). */
bool dev_flush_failed_since(struct dev *d, uint64_t ticket);
/* Flushes that failed so far, whoever ran them: read before a write that
 * must become stable and after its flush, they say whether a failed flush
 * may have lost it (F6). One atomic load. */
static inline uint64_t dev_flush_errors(struct dev *d)
{
	return atomic_load_explicit(&d->d_flush_errors, memory_order_acquire);
}
/* Callers waiting for the next flush to start (tests watch it). */
unsigned dev_flush_queued(struct dev *d);

static inline uint64_t dev_size(const struct dev *d)
{
	return d->d_size;
}

static inline uint32_t dev_sector_size(const struct dev *d)
{
	return d->d_sector_size;
}

/*
 * Flush-behind (B1-B3): bound bytes (B) of completed writes may sit in the
 * volatile cache before a flush is started behind them, limit (H) before
 * a writer waits; 0 turns it off (the default). A limit below the bound is
 * taken as the bound. Not for a device that another device writes through
 * while holding its own lock (the crash device's inner device).
 */
void dev_set_flush_behind(struct dev *d, uint64_t bound, uint64_t limit);

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
 * (F4). */
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
