/*
 * log_priv.h - the journal's internal state, shared by its source files.
 *
 * Lock order (lowest first; every class and its rank: base/lock_classes.h):
 *   120 log.pusher_lock  l_pusher_lock: whoever writes a checkpoint (the push
 *                        thread, or a force that pushes on its own thread,
 *                        log_force_async); ranked below the item and engine
 *                        locks the checkpoint's completion takes under it
 *                        (unpins, durable callbacks: fs.busy)
 *   item locks (owners', 200s; 250 buf_item.lock is a buffer item's own
 *     class when its owner gives none)
 *     -> 300 log.ctx_lock   l_ctx_lock (rwlock: commits read, the push swaps
 *                           contexts under write)
 *       -> 310 log.cil_lock   l_cil_lock: the current context's log vectors
 *                             and space
 *         -> 320 log.push_lock  l_push_lock: push requests, durable sequence,
 *                               force waiters
 *           -> 330 log.space_lock  l_space_lock: head, tail, reservations
 *             -> 340 log.ail_lock   l_ail_lock: the AIL
 *               -> 350 log.io_lock    l_io_lock: the log buffer ring
 *                 -> 360 log.data_lock  l_data_lock: logged data's live
 *                                       blocks (l_space_lock is read before
 *                                       it, never under it)
 * No journal lock is held across device I/O, except l_io_lock's owner never
 * does I/O under it either: every write happens with no journal lock held.
 *
 * Positions: internally a log position is linear, pos = cycle * l_bbs +
 * block, in BBs; it only grows. LSNs on disk are (cycle << 32 | block).
 *
 * Checkpoint life (states of a CIL context):
 *   CURRENT    commits format items into it (l_ctx);
 *   PUSHING    detached by the push thread, its records being written;
 *   DURABLE    commit record on stable storage: items enter the AIL, are
 *              unpinned, durable callbacks run, l_durable_seq advances.
 * Only one context is PUSHING at a time, so checkpoints complete in order.
 *
 * Invariants:
 *   I1 A record carrying tail T is written only after a data-device flush
 *      that started after every write-back that let the tail reach T.
 *   I2 A record is written only into space below l_durable_tail + log size:
 *      the tail of the newest durable record, never the in-memory AIL tail,
 *      so a torn write can never destroy what recovery must read.
 *   I3 Space: (head - durable tail) + charged CIL space + reservations +
 *      slack <= log size. A context's charge bounds what its records take.
 *   I4 An item is in the AIL at the start position of the newest durable
 *      checkpoint holding it; the AIL is ordered by position.
 *   I5 An item being written back stays locked until the write completed:
 *      no change can be committed to it meanwhile. Otherwise a relog could
 *      move it forward in the AIL (letting the tail pass its older
 *      checkpoint) before the write-back is on the device, and the flush
 *      before the next record carrying that tail would not cover it.
 *   I6 A record carrying a tail past the previous one's is written only if
 *      no flush of the data device failed, whoever ran it (flush-behind,
 *      dev.h B1, a COMMIT, an fsync), since the first write-back that no
 *      such record's flush covered yet started (l_wb_ticket). That flush
 *      may have lost write-backs that completed before it (a page cache
 *      drops the pages whose write-back failed), and the journal's own
 *      flush after it returns 0 all the same (dev.h, F4), so I1 alone
 *      would let the tail pass the only durable copy of those items. Which items were lost is not
 *      known (they left the AIL), so none can be written again: the log
 *      shuts down (G5), as XFS does on a metadata write-back it cannot
 *      retry, and recovery replays them from the records the tail kept.
 */
#ifndef JNFS_LOG_LOG_PRIV_H
#define JNFS_LOG_LOG_PRIV_H

#include <endian.h>
#include <pthread.h>

#include "base/compiler.h"

#include "base/hashmap.h"
#include "base/lock.h"
#include "log/log.h"

struct log_vec {
	struct list lv_link; /* in the context's c_lvs */
	struct log_item *lv_item;
	uint32_t lv_len; /* image bytes */
	uint32_t lv_cap;
	uint8_t lv_data[];
};

struct cil_ctx {
	uint64_t c_seq;
	struct list c_lvs;  /* one log vector per item, in first-commit order */
	uint64_t c_payload; /* bytes of the op stream */
	uint64_t c_space;   /* log space charged: bounds what the records take */
	uint64_t c_ntrans;
	struct list c_cbs; /* struct log_durable_cb */
	uint64_t c_start_pos;
	uint64_t c_tail_pos; /* tail carried by its records */
	unsigned c_forcers;  /* forces that asked for it while it was current */
	bool c_ordered;	     /* holds a transaction that is not TRANS_UNORDERED (G7) */
	uint64_t c_write_ns; /* how long writing it took */
};

struct trans {
	struct log *t_log;
	uint64_t t_res; /* log space still reserved */
	unsigned t_flags;
	struct list t_items; /* joined items, via li_trans */
	struct list t_cbs;   /* durable callbacks */
};

enum logbuf_state { LB_FREE, LB_QUEUED, LB_WRITING };

struct logbuf {
	uint8_t *b_data; /* l_buf_size bytes */
	uint64_t b_pos;	 /* linear position of the record */
	uint32_t b_bytes;
	enum logbuf_state b_state;
};

/* The space a context with `payload` bytes of op stream may take on disk:
 * every record adds a header BB and rounds its payload up to a BB. */
static inline uint64_t log_ckpt_space(uint32_t buf_size, uint64_t payload)
{
	uint64_t per_rec = buf_size - LOG_BB_SIZE;
	uint64_t nrec = payload ? (payload + per_rec - 1) / per_rec : 1;
	return payload + nrec * 2 * LOG_BB_SIZE;
}

struct log {
	struct log_params l_p;
	struct dev *l_ldev, *l_ddev;
	uint64_t l_off;	  /* byte offset of the region */
	uint64_t l_bbs;	  /* size in BBs */
	uint64_t l_bytes; /* size in bytes */
	uint32_t l_buf_size;
	uint32_t l_nbufs;
	uint64_t l_push_threshold; /* push the CIL past this much charged space */
	uint64_t l_slack;	   /* space kept for empty checkpoints and unmount */
	const struct log_item_ops *l_types[LOG_ITEM_MAX];

	_Atomic bool l_shutdown;
	bool l_replayed; /* recovery replayed checkpoints (log_cover_recovered) */

	/* CIL */
	struct rwlock l_ctx_lock;
	struct mutex l_cil_lock;
	struct cil_ctx *l_ctx;

	/* push and force */
	struct mutex l_pusher_lock; /* held while a checkpoint is pushed and written */
	struct mutex l_push_lock;
	struct cond l_push_cond;    /* the push thread waits for work */
	struct cond l_durable_cond; /* forces wait for l_durable_seq */
	struct cond l_swap_cond;    /* throttled commits wait for a swap */
	uint64_t l_cur_seq;	    /* sequence of the current context */
	bool l_cur_dirty;	    /* the current context holds items */
	uint64_t l_push_seq;	    /* highest sequence asked to be pushed */
	uint64_t l_durable_seq;	    /* every checkpoint up to here is durable */
	uint64_t l_pushing_seq;	    /* the PUSHING context, 0 if none */
	bool l_want_cover;	    /* write an empty checkpoint to move the tail */
	struct list l_force_waiters; /* struct log_force_waiter, any order */
	bool l_stop;
	/* group commit (cil.c, "Waiting for the group") */
	unsigned l_cur_forcers;	    /* forces of the current context so far */
	unsigned l_group_want;	    /* forcers the next push may wait for */
	bool l_push_urgent;	    /* the push was asked for by space, not a force */
	uint64_t l_push_asked_ns;   /* when a force first asked to push the current */
	uint64_t l_push_free_ns;    /* when the last checkpoint completed */
	uint64_t l_write_ns;	    /* how long writing it took */

	/* head, tail and space */
	struct mutex l_space_lock;
	struct cond l_space_cond;
	uint64_t l_head_pos;	 /* where the next record goes */
	uint32_t l_prev_crc;	 /* CRC of the last record written */
	uint64_t l_durable_tail; /* tail in the newest durable record (I2) */
	uint64_t l_reserved;	 /* open transactions' reservations */
	uint64_t l_cil_space;	 /* charged by contexts not yet durable */
	uint64_t l_space_next;	 /* FIFO tickets for reservations */
	uint64_t l_space_serving;

	/* AIL */
	struct mutex l_ail_lock;
	struct cond l_ail_cond;	      /* the AIL thread waits for work */
	struct cond l_ail_empty_cond; /* log_ail_push_all() waits */
	struct list l_ail;
	uint64_t l_ail_target; /* push items below this position; UINT64_MAX: all */
	uint64_t l_ail_count;
	/* I6: data-device flush ticket taken before the first write-back no
	 * tail-moving flush covered yet (0: none), and write-backs started
	 * and completed */
	uint64_t l_wb_ticket;
	uint64_t l_wb_started, l_wb_done;
	uint32_t l_ail_pass;
	bool l_ail_stop;

	/* logged data (data_item.c): blocks the log may still replay images
	 * of, and how many there are (read without the lock: 0 is the fast
	 * path of every in-place write) */
	struct mutex l_data_lock;
	struct hashmap l_data_live;
	_Atomic size_t l_data_nlive;

	/* log buffer ring and its I/O thread */
	struct mutex l_io_lock;
	/* three waits, so that nobody is woken for another's event (a
	 * needless wake-up costs a checkpoint a context switch): */
	struct cond l_io_cond;	    /* the I/O thread: work queued, or stop */
	struct cond l_io_done_cond; /* the pusher: every queued buffer written */
	struct cond l_buf_cond;	    /* logbuf_get: a buffer free */
	unsigned l_buf_waiters;
	struct logbuf *l_bufs;
	uint32_t *l_io_queue;	 /* indices of queued buffers, FIFO from l_io_next_io */
	uint32_t l_io_next_fill; /* where the search for a free buffer starts */
	uint32_t l_io_next_io;	 /* head of the queue */
	uint32_t l_io_busy;	 /* buffers queued or being written */
	int l_io_error;
	bool l_io_stop;

	pthread_t l_push_thread, l_ail_thread, l_io_thread;
	bool l_threads_started;

	struct {
		counter_t trans_async, trans_sync, trans_empty, trans_cancelled;
		counter_t cil_pushes, checkpoints, checkpoints_empty, throttles;
		counter_t checkpoints_unflushed; /* written with no data-device flush (G7) */
		counter_t forces, forces_wrote, forces_waited, group_waits, inline_pushes;
		counter_t buffer_writes, buffer_bytes, records;
		counter_t ail_pushes, ail_pinned, ail_locked, tail_moves;
		counter_t space_waits;
		/* time the pushers spent, by phase (ns) */
		counter_t push_flush_ns, push_write_ns, push_complete_ns, group_wait_ns;
		counter_t recovered_checkpoints, recovered_items, recovered_clean;
	} l_stats;
};

/* Position <-> LSN. */
static inline uint64_t log_pos_to_lsn(const struct log *log, uint64_t pos)
{
	return ((pos / log->l_bbs) << 32) | (pos % log->l_bbs);
}

static inline uint64_t log_lsn_to_pos(const struct log *log, uint64_t lsn)
{
	return (lsn >> 32) * log->l_bbs + (lsn & 0xffffffffu);
}

/* cil.c */
struct cil_ctx *cil_ctx_alloc(uint64_t seq);
void cil_commit(struct log *log, struct trans *tp, uint64_t *csn);
void cil_throttle(struct log *log, uint64_t seq);
void *log_push_thread(void *arg);
void cil_abandon(struct log *log);
int log_cover_recovered(struct log *log);
void log_fail_force_waiters(struct log *log);

/* logbuf.c */
void *log_io_thread(void *arg);
int log_write_record(struct log *log, struct logbuf *b, bool fua);
struct logbuf *logbuf_get(struct log *log);
void logbuf_put(struct log *log, struct logbuf *b);
int log_place_record(struct log *log, struct logbuf *b, uint32_t len);
void logbuf_submit(struct log *log, struct logbuf *b);
int logbuf_wait_all(struct log *log);
int log_write_unmount(struct log *log);
void log_fill_header(struct log *log, struct logbuf *b, uint16_t flags, uint64_t csn,
		     uint32_t index, uint64_t tail_pos, uint32_t len);

/* ail.c */
void *log_ail_thread(void *arg);
void ail_insert(struct log *log, struct log_item *lip, uint64_t pos);
uint64_t ail_tail_pos(struct log *log, uint64_t head_pos);
int ail_flush_for_tail(struct log *log);
void ail_push_target(struct log *log, uint64_t target);

/* log.c */
int log_space_reserve(struct log *log, uint64_t res);
void log_space_release(struct log *log, uint64_t res, int64_t charge);
void log_space_wake(struct log *log);
void log_request_push(struct log *log, uint64_t seq);
void log_request_cover(struct log *log);

/* recover.c */
int log_recover(struct log *log);
bool log_rec_valid_header(const struct log *log, const struct log_rec_hdr *h, uint64_t pos);
uint32_t log_rec_crc(const struct log_rec_hdr *h, const void *payload, uint32_t len);

/* buf_item.c */
extern const struct log_item_ops buf_item_ops;

/* recover.c, for item types: the log being recovered, and dropping a
 * cached block that a newer write of file data replaces */
struct log *log_recovery_log(struct log_recovery *rc);
void log_recovery_forget(struct log_recovery *rc, uint64_t daddr, uint32_t len);

#endif
