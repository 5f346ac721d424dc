/*
 * crashdev.h - the crash device: a disk whose volatile cache can be lost.
 *
 * It sits on an inner device that holds exactly what is durable. Writes
 * without FUA stay in memory (an overlay that reads see) until a flush
 * writes them to the inner device; FUA writes go to the inner device at
 * once. So:
 *   - killing the process that holds a crash device is a power failure that
 *     loses every unflushed write (the inner device keeps the durable state);
 *   - crashdev_powerfail(seed) is a power failure that keeps a random subset
 *     of the unflushed writes, possibly torn at sector boundaries, drops the
 *     rest, and leaves the device dead (every later I/O fails with EIO);
 *   - with CRASHDEV_RECORD, every write, FUA write and flush is recorded in
 *     completion order, together with marks the caller places (e.g. "force of
 *     sequence 42 returned"), so a test can rebuild the image a power cut at
 *     any point of the stream could have left (crash_replay_to, crash_apply_*);
 *   - a flush covers exactly the writes that completed before it started
 *     (dev.h, contract 3): one that completes while the flush is in flight
 *     stays volatile until the next flush. crashdev_set_flush_hook() runs a
 *     test's function in that window, so a test can hold a flush in flight.
 *
 * Flush-behind (dev.h, B1-B3) is the generic layer's, so a crash device
 * has it like any other (jnfsd --crash --flush-behind): its flushes are
 * recorded and make writes durable as any flush does, and a power cut
 * loses only what no flush had covered. Its inner device must not have it
 * (the crash device writes to it holding its own lock).
 *
 * The inner device is not owned: close it after the crash device.
 */
#ifndef JNFS_DEV_CRASHDEV_H
#define JNFS_DEV_CRASHDEV_H

#include <stddef.h>
#include <stdint.h>

#include "dev/dev.h"

#define CRASHDEV_RECORD 0x1u

enum crash_ev_type {
	CRASH_EV_WRITE = 1, /* write without FUA: volatile until the next flush */
	CRASH_EV_FUA = 2,   /* FUA write: durable when recorded */
	CRASH_EV_FLUSH = 3, /* a flush completed: every write recorded before
			     * event number tag (where the stream stood when it
			     * started) is durable */
	CRASH_EV_MARK = 4,  /* caller's mark; tag is the caller's value */
};

struct crash_event {
	uint8_t type;
	uint32_t len;
	uint64_t off;
	uint64_t tag;
	uint8_t *data; /* write payload (len bytes) */
};

struct crash_cut_stats {
	uint64_t kept, dropped, torn;
};

int crashdev_create(struct dev *inner, unsigned flags, struct dev **out);

/* Place a mark in the recorded stream (no-op without CRASHDEV_RECORD). */
void crashdev_mark(struct dev *d, uint64_t tag);

/* Power failure now: keep a random subset of unflushed writes (seeded),
 * possibly torn, write them to the inner device, and make the device dead. */
int crashdev_powerfail(struct dev *d, uint64_t seed, struct crash_cut_stats *st);

/* Number of writes not yet durable. */
size_t crashdev_pending(struct dev *d);

/* A failed flush as a host's page cache has it (dev.h: a flush that fails
 * may have lost data earlier writes reported as written): every write not
 * yet durable is forgotten, and reads see the durable content again. The
 * generic layer's injected flush faults (dev_inject_flush_fault) never
 * reach the backend, so a test calls this after one to model the loss.
 * Returns how many writes were dropped; -EINVAL on a recording device
 * (its stream would no longer say what is durable). */
int crashdev_drop_unflushed(struct dev *d);

/* fn(arg) runs inside every flush, after the flush took its snapshot of
 * the completed writes and before it makes them durable, with no lock of
 * the device held (NULL: none). A test uses it to hold a flush in flight. */
void crashdev_set_flush_hook(struct dev *d, void (*fn)(void *arg), void *arg);

/* fn(arg, off, len) runs at the start of every write, before it
 * completes, with no lock of the device held (NULL: none). A test uses it
 * to hold a write in flight. */
void crashdev_set_write_hook(struct dev *d, void (*fn)(void *arg, uint64_t off, size_t len),
			     void *arg);

/* The recorded stream. The pointer is valid until the next I/O on d. */
size_t crashdev_nevents(struct dev *d);
const struct crash_event *crashdev_events(struct dev *d);

/*
 * Rebuilding images from a recording.
 *
 * crash_replay_to() walks the stream for power cuts at increasing points:
 * for a cut just before event `point`, it copies into `durable` (an image of
 * the whole device, holding what was durable as of the previous call) every
 * write that a flush completed before `point` made durable, and returns the
 * index of the first event that may still be volatile: the `from` of
 * crash_apply_cut(). Start with rp = {.ev = events} and `durable` holding
 * the image as it was when recording started.
 *
 * crash_apply_durable() writes every write event in [from, to) to img in
 * order, as a flush at `to` would have made them durable.
 *
 * crash_apply_cut() models a power cut just before event `point`, where
 * `from` is what crash_replay_to() returned and img already holds the
 * durable image: the writes in
 * [from, point) are unflushed, so FUA writes are applied and every other
 * write is kept, dropped or torn at `sector` boundaries at random (seeded);
 * event `point` itself, if it is a write, was in flight and may land torn.
 */
struct crash_replay {
	const struct crash_event *ev;
	size_t scan;	/* events before this one were looked at */
	size_t durable; /* every write before this index is in the image */
};
size_t crash_replay_to(struct crash_replay *rp, size_t point, uint8_t *durable);
void crash_apply_durable(const struct crash_event *ev, size_t from, size_t to, struct dev *img);
void crash_apply_cut(const struct crash_event *ev, size_t from, size_t point, struct dev *img,
		     uint32_t sector, uint64_t seed, struct crash_cut_stats *st);

#endif
