/*
 * log.h - the journal: a write-ahead log in the style of XFS delayed logging.
 *
 * Users change objects under their own locks inside a transaction, join each
 * changed object's log item, and commit. Commit copies ("formats") every
 * dirty item into the in-memory committed item list (CIL) and returns the
 * commit sequence number (CSN) of the checkpoint the change joined. A change
 * is durable once that checkpoint's commit record is; log_force_seq() makes
 * it so, forcing only as far as asked and sharing one log write among all
 * concurrent forces of the same checkpoint.
 *
 * Guarantees (tests cite these by number):
 *   G1 Atomicity: after recovery, a checkpoint is present entirely or not at
 *      all; a checkpoint without its commit record is never replayed.
 *   G2 Ordering: what recovery finds is a prefix of the checkpoints in CSN
 *      order; if a change is present, every change committed before it is.
 *   G3 Durability: when log_force_seq(csn, wait) returns 0, the checkpoint csn
 *      and all before it survive any power failure.
 *   G4 Write-ahead: an item is written in place (AIL push) only once every
 *      change it holds is durable in the log.
 *   G5 A log I/O error shuts the log down: later commits and forces fail with
 *      -EIO and nothing more is written in place. So does a failed flush of
 *      the data device, whoever ran it, that may have lost items written
 *      back, before the tail moves past them (log_priv.h, I6).
 *   G6 log_flushed: a force that returns with *log_flushed set has seen a
 *      device cache flush of the data device that started after the force
 *      was called, so data written before the call is durable too. When it
 *      is clear, a caller that needs its data durable flushes the device.
 *      The flush is whichever one the device ran (the checkpoint's own or
 *      any other caller's: dev.h, shared flushes); a flush ticket taken at
 *      the call tells.
 *   G7 Data ordering: a checkpoint holding a transaction that is not
 *      TRANS_UNORDERED is written only after a data-device flush that
 *      started after that transaction committed, so whatever data its
 *      changes point at (written in place before the commit) is durable
 *      first. A checkpoint of TRANS_UNORDERED transactions only is written
 *      without that flush, unless it moves the tail (log_priv.h, I1). If
 *      that flush fails, the checkpoint is not written and the log shuts
 *      down (G5): the forces waiting for it fail with -EIO.
 *
 * Threads: commits and forces run on callers' threads; a push thread writes
 * checkpoints (and runs the background push timer), an I/O thread writes
 * log buffers, and an AIL thread writes items back in place.
 *
 * All functions return 0 or -errno unless stated otherwise.
 */
#ifndef JNFS_LOG_LOG_H
#define JNFS_LOG_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/list.h"
#include "base/stats.h"
#include "dev/dev.h"
#include "log/log_format.h"

struct log;
struct log_item;
struct log_recovery;
struct trans;

/* What an AIL push of one item came to. */
enum log_push_result {
	LOG_PUSH_OK = 0,     /* written back (or nothing to write): leaves the AIL */
	LOG_PUSH_PINNED = 1, /* has changes not yet durable: the log must be forced */
	LOG_PUSH_LOCKED = 2, /* busy: try again later */
};

/*
 * Log item operations, in the order they are called. The item's owner keeps
 * its own pin count: pin() and unpin() must be balanced, and a pinned item
 * (changes in a checkpoint that is not durable yet) must refuse push().
 */
struct log_item_ops {
	uint16_t type; /* LOG_ITEM_* on disk */
	const char *name;
	unsigned flags; /* LOG_ITEM_NO_AIL */
	/* Commit, item locked by the transaction: bytes the image will take. */
	size_t (*size)(struct log_item *lip);
	/* Commit: write the image (size() bytes) to buf. */
	void (*format)(struct log_item *lip, void *buf);
	/* Commit: the item joins a CIL context it was not in. */
	void (*pin)(struct log_item *lip);
	/* Commit: the image is in the CIL under csn; called before release(). Optional. */
	void (*committing)(struct log_item *lip, uint64_t csn);
	/* Checkpoint durable: the item enters (or moves forward in) the AIL at
	 * lsn, before unpin(). Optional. */
	void (*committed)(struct log_item *lip, uint64_t lsn);
	/* Checkpoint durable, or abandoned after a shutdown (aborted). */
	void (*unpin)(struct log_item *lip, bool aborted);
	/* AIL: write the item back in place; LOG_PUSH_* or -errno (shuts down).
	 * The item must stay locked against commits until the write completed
	 * (log_priv.h, I5). */
	int (*push)(struct log_item *lip, uint64_t lsn);
	/* The transaction is done with the item (commit or cancel): unlock it. */
	void (*release)(struct log_item *lip);
	/* Recovery: pass 1 sees every image in log order (optional), pass 2
	 * applies them; recover_done() frees what the passes kept (optional). */
	int (*recover_scan)(struct log_recovery *rc, const void *img, size_t len);
	int (*recover)(struct log_recovery *rc, const void *img, size_t len);
	void (*recover_done)(struct log_recovery *rc);
};

/* The item's owner wrote its change in place before the commit (data_item.h):
 * it never enters the AIL and never holds the tail; unpin() is the last
 * call the journal makes on it. */
#define LOG_ITEM_NO_AIL 0x1u

/* Embedded in every logged object; owned by the journal while in use. */
struct log_item {
	const struct log_item_ops *li_ops;
	struct log *li_log;
	/* transaction (guarded by the owner's lock, held by the transaction) */
	struct list li_trans;
	_Atomic(struct trans *) li_tp; /* the transaction holding the item, read unlocked */
	bool li_dirty;
	/* CIL (guarded by the CIL lock) */
	struct log_vec *li_lv; /* image in the current CIL context, or NULL */
	/* AIL (guarded by the AIL lock) */
	struct list li_ail;
	uint64_t li_ail_pos; /* position in the AIL; 0 when not in it */
	uint32_t li_ail_pass;
	bool li_pushing;
};

void log_item_init(struct log_item *lip, struct log *log, const struct log_item_ops *ops);
/* True while the journal still refers to the item: in the AIL or being
 * pushed. (Pinned is the owner's own count.) The owner must not free it. */
bool log_item_in_ail(struct log_item *lip);

/* Called when the checkpoint holding a transaction is durable (err = 0) or
 * can never be (err = -EIO after a shutdown). Runs on the push thread. */
struct log_durable_cb {
	struct list dc_link;
	void (*dc_fn)(struct log_durable_cb *cb, int err);
};

struct log_params {
	struct dev *ldev;    /* log device */
	struct dev *ddev;    /* data device: home of logged items (ldev for an internal log) */
	uint64_t log_offset; /* byte offset of the log region on ldev (512-aligned) */
	uint64_t log_size;   /* bytes (multiple of 512, at least 64 KiB) */
	uint8_t uuid[16];    /* filesystem UUID stamped in every record */
	unsigned nbufs;	     /* log buffers in the ring: 2-8 (0: 8) */
	unsigned buf_size;   /* bytes per log buffer, power of two, 4-256 KiB (0: 256 KiB,
			      * less for a log under 16 MiB: see log_check_params) */
	uint64_t push_interval_ns; /* background push period (0: 30 s) */
	/* Item types the caller logs, for recovery; the buffer item is built in. */
	const struct log_item_ops *const *item_ops;
	unsigned nitem_ops;
	/* Called for every block replay changed, before it is written home:
	 * the owner stamps checksums the replayed ranges left stale. Optional. */
	void (*restamp)(void *arg, uint64_t daddr, void *blk, uint32_t len, uint64_t lsn);
	void *restamp_arg;
};

/* Write an empty log: zeroes the region and writes a clean unmount record. */
int log_format(const struct log_params *p);

/*
 * Recover (replaying every complete checkpoint after the tail, or nothing
 * after a clean unmount) and start the journal. A damaged log region, a log
 * of another filesystem (UUID) or a device too small for the region is
 * refused with -EUCLEAN and a message that says which.
 */
int log_mount(const struct log_params *p, struct log **out);

/*
 * Clean unmount: force everything, write every item back, write the unmount
 * record, stop the threads and free the log. After a shutdown it only tears
 * down and returns -EIO. Items must no longer be used by callers.
 */
int log_unmount(struct log *log);

/* Stop the journal now, as a fatal error does (G5). */
void log_shutdown(struct log *log, const char *why);
bool log_is_shutdown(const struct log *log);

/*
 * Force the log up to checkpoint csn. Returns at once when it is already
 * durable. With wait, returns when it is durable (G3); without, only starts
 * the push. *log_flushed (may be NULL): see G6. csn 0 means nothing to do.
 */
int log_force_seq(struct log *log, uint64_t csn, bool wait, bool *log_flushed);
/* Force everything committed so far and wait. */
int log_force_all(struct log *log);
/* Is checkpoint csn durable already? (A force of it would write nothing.) */
bool log_seq_durable(struct log *log, uint64_t csn);

/*
 * Asynchronous force: start pushing csn and call w->fn once it is durable
 * (err 0, and log_flushed as G6 defines it: a data-device flush started
 * after this call) or can never be (-EIO after a shutdown). fn runs on the
 * push thread and must not block. Returns 0 when csn is already durable
 * (fn is not called; nothing was flushed for this call), 1 when fn will be
 * called, -errno otherwise (fn not called).
 *
 * may_push: when the log is idle (nothing being written, no group of
 * forces to wait for), the caller's thread writes the checkpoint itself
 * instead of waking the push thread and returns after it (fn has then run,
 * on this thread, before the call returns 1). One thread hand-off less per
 * lone sync; only for callers that hold no lock of the journal or of its
 * items (the NFS reply path).
 */
struct log_force_waiter {
	void (*fn)(struct log_force_waiter *w, int err, bool log_flushed);
	uint64_t csn;
	uint64_t flush_ticket; /* G6 (dev_flush_ticket) */
	bool may_push;
	struct list link;
};
int log_force_async(struct log *log, uint64_t csn, struct log_force_waiter *w);
/* Write every item in the AIL back and wait until the AIL is empty. */
int log_ail_push_all(struct log *log);

/* Log space a transaction must reserve to log nitems items of nbytes in all. */
uint64_t log_calc_res(const struct log *log, unsigned nitems, size_t nbytes);
/* The log's size in bytes. */
uint64_t log_size_bytes(const struct log *log);
/* Would a reservation of res now leave at least a quarter of the log to
 * everyone else, with nobody waiting for space? (No wait: for optional use
 * of log space, such as logged data.) */
bool log_space_ample(struct log *log, uint64_t res);

/* The data device items are written back to. */
struct dev *log_ddev(struct log *log);

/* Counters as "log.<name> value" lines. */
void log_stats(struct log *log, const struct stat_sink *sink);

/*
 * Transactions.
 *
 * trans_alloc() reserves log space up front and may wait for it: call it
 * before taking any item lock. Then, for each object: lock it, trans_join()
 * its item (the transaction now owns the lock and releases it through
 * ops->release at commit or cancel), change it, trans_dirty(). trans_commit()
 * consumes the transaction; *csn (may be NULL) is 0 when nothing was dirty.
 * TRANS_SYNC makes commit force the log to the transaction's CSN.
 * TRANS_UNORDERED says that nothing the transaction logs depends on data
 * written in place before it (names, attributes, times, allocation of
 * blocks that read as zeros, freeing): its checkpoint needs no flush of the
 * data device on its account (G7). Without it, a transaction is ordered:
 * a missing flag costs a flush, never data.
 * Cancelling a transaction that dirtied an item shuts the log down (the
 * in-memory change cannot be undone).
 */
#define TRANS_SYNC      0x1u
#define TRANS_UNORDERED 0x2u

int trans_alloc(struct log *log, uint64_t res, unsigned flags, struct trans **tpp);
void trans_join(struct trans *tp, struct log_item *lip);
void trans_dirty(struct trans *tp, struct log_item *lip);
/* True if lip is joined to tp (safe to call without the item's lock). */
bool trans_has_item(struct trans *tp, struct log_item *lip);
void trans_set_sync(struct trans *tp);
void trans_set_unordered(struct trans *tp);
/* cb runs once the transaction's checkpoint is durable (or with -EIO). */
void trans_on_durable(struct trans *tp, struct log_durable_cb *cb);
struct log *trans_log(struct trans *tp);
int trans_commit(struct trans *tp, uint64_t *csn);
void trans_cancel(struct trans *tp);

/*
 * Recovery helpers for item types' recover functions. Blocks read through
 * log_recovery_block() are cached, may be changed in place, and are written
 * back and flushed when replay ends.
 */
void *log_recovery_block(struct log_recovery *rc, uint64_t daddr, uint32_t len, int *err);
/* Index (from 1) of the checkpoint being replayed, in log order. */
uint64_t log_recovery_ckpt(const struct log_recovery *rc);
/* Per-item-type scratch pointer, kept across both passes; the type's
 * recover_done() frees it. */
void **log_recovery_private(struct log_recovery *rc, uint16_t type);

#endif
