/*
 * cil.c - the committed item list (CIL), checkpoints and log forces.
 *
 * Commit (on the caller's thread, every dirty item locked by the
 * transaction, l_ctx_lock held for read so no push can swap the context):
 *   1. format each dirty item into a log vector of the current context; an
 *      item already in the context is formatted again in place of its
 *      earlier image (relogging: a hot item is logged once per checkpoint);
 *      an item new to the context is pinned;
 *   2. charge the context's growth to the transaction's reservation;
 *   3. take the context's sequence as the CSN and call committing(csn) on
 *      each item, still before the items are unlocked.
 *
 * Push (by whoever holds l_pusher_lock, one checkpoint at a time, so
 * checkpoints become durable in order):
 *   1. swap in a fresh context under l_ctx_lock for write;
 *   2. sample the tail, then flush the data device (I1, G7): data and
 *      write-backs completed before are durable before any record of this
 *      checkpoint; a checkpoint of unordered transactions that moves no
 *      tail skips the flush (cil_want_flush);
 *   3. stream the op headers and images into log buffers; every full buffer
 *      is queued for the I/O thread as a record;
 *   4. wait for those records, flush the log device if there were any, and
 *      write the last buffer as the commit record with FUA;
 *   5. complete: move the tail, insert the items in the AIL at the
 *      checkpoint's start, unpin them, run the durable callbacks, and only
 *      then publish the durable sequence (waking the forces).
 *
 * Force: a force of csn returns at once if csn is durable; if csn is the
 * current context it asks the push thread to push it; then it waits. Every
 * force of the same context waits for the same push: group commit.
 *
 * Waiting for the group. With C clients each waiting for its own force,
 * the forces that arrive while a checkpoint is being written go into the
 * next one, and the clients that checkpoint releases come back with their
 * next operation a moment after it completed. Pushed at once, the next
 * checkpoint holds only the first group, and the clients settle into two
 * halves taking turns: C/2 forces per log write instead of C. So when a
 * push was asked for by forces, the push thread may wait a little for the
 * rest: until the current context has as many forces as were waiting when
 * the last checkpoint completed (its own plus the current one's), or until
 * half of the last checkpoint's write time has passed since the later of
 * the first force and that completion, at most GROUP_WAIT_MAX_NS (half, not
 * a quarter: nfs3-untar with 8 clients, FILE_SYNC, 2-12% more files/s in
 * four paired runs, 0.38 instead of 0.40 log writes per file). One
 * client never waits (it is the whole group); a push asked for by log space
 * (size, AIL, reservations) never waits.
 *
 * Pushing on the forcing thread. A force that would wake the push thread
 * to push at once (nothing being written, no group to wait for: a lone
 * client) may instead push on its own thread, if its caller allows it
 * (log_force_async's may_push: the NFS reply path, holding no lock). That
 * saves a thread hand-off, which on one client is a good part of a sync
 * operation's latency. Checkpoints stay serial: either pusher holds
 * l_pusher_lock, and the push thread looks again under it whether the
 * context it meant to push is still current.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "log/log_priv.h"

#define GROUP_WAIT_MAX_NS (2 * NSEC_PER_MSEC)

struct cil_ctx *cil_ctx_alloc(uint64_t seq)
{
	struct cil_ctx *ctx = xcalloc(1, sizeof(*ctx));
	ctx->c_seq = seq;
	list_init(&ctx->c_lvs);
	list_init(&ctx->c_cbs);
	return ctx;
}

static uint32_t op_size(uint32_t len)
{
	return (uint32_t)sizeof(struct log_op_hdr) + ALIGN_UP(len, LOG_OP_ALIGN);
}

/* Format one dirty item into ctx; returns the growth of the op stream. */
static int64_t cil_format_item(struct log *log, struct cil_ctx *ctx, struct log_item *lip)
{
	assert_rdlocked(&log->l_ctx_lock);
	size_t n = lip->li_ops->size(lip);
	BUG_ON(n > UINT32_MAX / 2);
	struct log_vec *old = lip->li_lv;
	struct log_vec *lv = old;
	uint32_t old_len = old ? old->lv_len : 0;

	if (!old || old->lv_cap < n) {
		uint32_t cap = ALIGN_UP((uint32_t)n + (uint32_t)n / 4, 8u);
		lv = xmalloc(sizeof(*lv) + cap);
		lv->lv_cap = cap;
		lv->lv_item = lip;
		list_init(&lv->lv_link);
	}
	/* old, if reused, belongs to this context, which no push can take
	 * while we hold l_ctx_lock for read */
	lip->li_ops->format(lip, lv->lv_data);
	lv->lv_len = (uint32_t)n;

	int64_t delta;
	mutex_lock(&log->l_cil_lock);
	if (!old) {
		list_add_tail(&lv->lv_link, &ctx->c_lvs);
		delta = op_size((uint32_t)n);
	} else {
		if (lv != old) {
			list_insert_between(&lv->lv_link, &old->lv_link, old->lv_link.next);
			list_del(&old->lv_link);
		}
		delta = (int64_t)op_size((uint32_t)n) - (int64_t)op_size(old_len);
	}
	lip->li_lv = lv;
	ctx->c_payload = (uint64_t)((int64_t)ctx->c_payload + delta);
	mutex_unlock(&log->l_cil_lock);

	if (!old)
		lip->li_ops->pin(lip);
	else if (lv != old)
		free(old);
	return delta;
}

void cil_commit(struct log *log, struct trans *tp, uint64_t *csnp)
{
	struct log_item *lip;

	rwlock_rdlock(&log->l_ctx_lock);
	struct cil_ctx *ctx = log->l_ctx;
	list_for_each_entry (lip, &tp->t_items, li_trans) {
		if (lip->li_dirty)
			cil_format_item(log, ctx, lip);
	}

	mutex_lock(&log->l_cil_lock);
	uint64_t space = log_ckpt_space(log->l_buf_size, ctx->c_payload);
	int64_t charge = (int64_t)space - (int64_t)ctx->c_space;
	ctx->c_space = space;
	bool first = ctx->c_ntrans++ == 0;
	if (!(tp->t_flags & TRANS_UNORDERED))
		ctx->c_ordered = true; /* G7 */
	list_splice_tail(&tp->t_cbs, &ctx->c_cbs);
	uint64_t csn = ctx->c_seq;
	if (first) {
		mutex_lock(&log->l_push_lock);
		log->l_cur_dirty = true;
		mutex_unlock(&log->l_push_lock);
	}
	mutex_unlock(&log->l_cil_lock);

	list_for_each_entry (lip, &tp->t_items, li_trans) {
		if (lip->li_dirty && lip->li_ops->committing)
			lip->li_ops->committing(lip, csn);
	}
	rwlock_unlock(&log->l_ctx_lock);

	if (charge > (int64_t)tp->t_res)
		msg_debug("log: transaction charged %lld bytes, reserved %llu", (long long)charge,
			  (unsigned long long)tp->t_res);
	log_space_release(log, tp->t_res, charge);
	tp->t_res = 0;
	*csnp = csn;

	/* a big CIL is pushed in the background; a huge one throttles commits */
	if (space > log->l_push_threshold) {
		log_request_push(log, csn);
		if (space > 2 * log->l_push_threshold)
			cil_throttle(log, csn);
	}
}

/* Wait until the context csn has been swapped out by a push. */
void cil_throttle(struct log *log, uint64_t csn)
{
	mutex_lock(&log->l_push_lock);
	if (log->l_cur_seq == csn)
		counter_inc(&log->l_stats.throttles);
	while (log->l_cur_seq == csn && !log_is_shutdown(log))
		cond_wait(&log->l_swap_cond, &log->l_push_lock);
	mutex_unlock(&log->l_push_lock);
}

/*
 * Give up a context that will never be written (after a shutdown). Its
 * items' li_lv no longer point into it: cleared when the push swapped it
 * out, or by cil_abandon(). (It must not look: once swapped out, an item's
 * li_lv belongs to the next context, where a commit may be setting it.)
 */
static void cil_ctx_abort(struct log *log, struct cil_ctx *ctx)
{
	struct log_vec *lv, *ltmp;
	list_for_each_entry_safe (lv, ltmp, &ctx->c_lvs, lv_link) {
		list_del(&lv->lv_link);
		lv->lv_item->li_ops->unpin(lv->lv_item, true);
		free(lv);
	}
	struct log_durable_cb *cb, *ctmp;
	list_for_each_entry_safe (cb, ctmp, &ctx->c_cbs, dc_link) {
		list_del(&cb->dc_link);
		cb->dc_fn(cb, -EIO);
	}
	mutex_lock(&log->l_space_lock);
	log->l_cil_space -= ctx->c_space;
	mutex_unlock(&log->l_space_lock);
	free(ctx);
}

/* At teardown after a shutdown: drop the current context (no thread
 * commits or pushes any more). */
void cil_abandon(struct log *log)
{
	struct log_vec *lv;
	list_for_each_entry (lv, &log->l_ctx->c_lvs, lv_link)
		lv->lv_item->li_lv = NULL;
	cil_ctx_abort(log, log->l_ctx);
	log->l_ctx = NULL;
}

/* Streams a context's op headers and images into log records. */
struct cil_writer {
	struct log *log;
	struct cil_ctx *ctx;
	struct logbuf *b;
	uint32_t fill;
	uint32_t index;
	int err;
};

/* The current buffer is full and more follows: write it as a record. */
static void cw_next_record(struct cil_writer *w)
{
	struct log *log = w->log;
	w->err = log_place_record(log, w->b, w->fill);
	if (w->err)
		return;
	if (w->index == 0)
		w->ctx->c_start_pos = w->b->b_pos;
	log_fill_header(log, w->b, w->index == 0 ? LOG_REC_START : 0, w->ctx->c_seq, w->index,
			w->ctx->c_tail_pos, w->fill);
	logbuf_submit(log, w->b);
	w->index++;
	w->b = logbuf_get(log);
	w->fill = 0;
}

static void cw_emit(struct cil_writer *w, const void *p, size_t n)
{
	uint32_t per_rec = w->log->l_buf_size - LOG_BB_SIZE;
	const uint8_t *src = p;
	while (n && !w->err) {
		if (w->fill == per_rec) {
			cw_next_record(w);
			if (w->err)
				return;
		}
		size_t k = MIN(n, (size_t)(per_rec - w->fill));
		uint8_t *dst = w->b->b_data + LOG_BB_SIZE + w->fill;
		if (src) {
			memcpy(dst, src, k);
			src += k;
		} else {
			memset(dst, 0, k);
		}
		w->fill += (uint32_t)k;
		n -= k;
	}
}

/*
 * Whether a checkpoint flushes the data device before its first record,
 * and the tail its records carry. An ordered checkpoint flushes (G7) and,
 * since it does, carries the AIL's tail (I1: the tail first, then the flush
 * that makes what moved it durable). One of TRANS_UNORDERED transactions
 * only (a sync export's CREATE, REMOVE, RENAME, SETATTR, a logged write)
 * carries the durable tail it has and needs no flush at all: it then costs
 * one FUA write, however much other clients' data the device caches. It
 * flushes to move the tail only when somebody needs the space
 * (reservations wait, or half the log is in use) or it is an empty
 * checkpoint written for that very purpose (cil_cover).
 *
 * Past half the log in use, the AIL is also asked to write back what is
 * older than the newest quarter (as XFS pushes its AIL when a quarter of
 * its log is left), so that the tail, when it moves, moves far: a few
 * tail-moving flushes per log's worth of checkpoints.
 */
static bool cil_want_flush(struct log *log, struct cil_ctx *ctx, bool *moves_tail)
{
	mutex_lock(&log->l_space_lock);
	uint64_t head = log->l_head_pos, dtail = log->l_durable_tail;
	uint64_t used = (head - dtail) * LOG_BB_SIZE;
	bool want_space = log->l_space_next != log->l_space_serving || used > log->l_bytes / 2;
	mutex_unlock(&log->l_space_lock);
	if (used > log->l_bytes / 2 && head > log->l_bbs / 4)
		ail_push_target(log, head - log->l_bbs / 4);
	uint64_t tail = ail_tail_pos(log, head);
	bool cover = list_empty(&ctx->c_lvs);
	bool flush = ctx->c_ordered || (tail != dtail && (want_space || cover));
	ctx->c_tail_pos = flush ? tail : dtail;
	*moves_tail = ctx->c_tail_pos != dtail;
	return flush;
}

static int cil_write(struct log *log, struct cil_ctx *ctx)
{
	bool moves_tail;
	if (cil_want_flush(log, ctx, &moves_tail)) {
		uint64_t t0 = now_ns();
		/* past write-backs, I6 checks what flushed them */
		int err = moves_tail ? ail_flush_for_tail(log) : dev_flush(log->l_ddev);
		counter_add(&log->l_stats.push_flush_ns, now_ns() - t0);
		if (err) {
			if (!moves_tail)
				msg_err("log: data device flush failed: %s", strerror(-err));
			return err;
		}
	} else {
		counter_inc(&log->l_stats.checkpoints_unflushed);
	}
	int err;

	struct cil_writer w = {.log = log, .ctx = ctx, .b = logbuf_get(log)};
	struct log_vec *lv;
	list_for_each_entry (lv, &ctx->c_lvs, lv_link) {
		struct log_op_hdr oh = {
			.o_type = htole16(lv->lv_item->li_ops->type),
			.o_len = htole32(lv->lv_len),
		};
		cw_emit(&w, &oh, sizeof(oh));
		cw_emit(&w, lv->lv_data, lv->lv_len);
		cw_emit(&w, NULL, ALIGN_UP(lv->lv_len, LOG_OP_ALIGN) - lv->lv_len);
	}

	/* the commit record */
	err = w.err;
	if (!err)
		err = log_place_record(log, w.b, w.fill);
	if (!err) {
		if (w.index == 0)
			ctx->c_start_pos = w.b->b_pos;
		log_fill_header(log, w.b, LOG_REC_COMMIT | (w.index == 0 ? LOG_REC_START : 0),
				ctx->c_seq, w.index, ctx->c_tail_pos, w.fill);
	}
	int werr = logbuf_wait_all(log);
	if (!err)
		err = werr;
	/* earlier records of this checkpoint must be durable before its commit
	 * record can be: a flush, then the commit record with FUA */
	if (!err && w.index > 0)
		err = dev_flush(log->l_ldev);
	if (!err)
		err = log_write_record(log, w.b, true);
	logbuf_put(log, w.b);
	return err;
}

static void cil_complete(struct log *log, struct cil_ctx *ctx)
{
	bool empty = list_empty(&ctx->c_lvs);

	/* counted before anyone can see it durable, so that a caller whose
	 * force returned reads counters that include it */
	counter_inc(&log->l_stats.checkpoints);
	if (empty)
		counter_inc(&log->l_stats.checkpoints_empty);

	/* I2: the tail its records carry is on stable storage */
	mutex_lock(&log->l_space_lock);
	log->l_cil_space -= ctx->c_space;
	BUG_ON(ctx->c_tail_pos < log->l_durable_tail);
	if (ctx->c_tail_pos != log->l_durable_tail) {
		log->l_durable_tail = ctx->c_tail_pos;
		counter_inc(&log->l_stats.tail_moves);
	}
	cond_broadcast(&log->l_space_cond);
	mutex_unlock(&log->l_space_lock);

	/* I4: into the AIL at the checkpoint's start, and only then unpinned */
	uint64_t lsn = log_pos_to_lsn(log, ctx->c_start_pos);
	struct log_vec *lv, *ltmp;
	list_for_each_entry_safe (lv, ltmp, &ctx->c_lvs, lv_link) {
		struct log_item *lip = lv->lv_item;
		if (lip->li_ops->committed)
			lip->li_ops->committed(lip, lsn);
		if (!(lip->li_ops->flags & LOG_ITEM_NO_AIL))
			ail_insert(log, lip, ctx->c_start_pos);
		lip->li_ops->unpin(lip, false);
		free(lv);
	}

	struct log_durable_cb *cb, *ctmp;
	list_for_each_entry_safe (cb, ctmp, &ctx->c_cbs, dc_link) {
		list_del(&cb->dc_link);
		cb->dc_fn(cb, 0);
	}

	/* G3: durable now. Published last (waking the forces, waiting and
	 * asynchronous), so that a force that returns has seen every effect
	 * of the checkpoint: its items unpinned and in the AIL, its durable
	 * callbacks run (the engine releases the space a checkpoint freed in
	 * one, and an allocator that forced the log to get that space must
	 * find it free) */
	struct list ready = LIST_INIT(ready);
	mutex_lock(&log->l_push_lock);
	log->l_durable_seq = ctx->c_seq;
	log->l_pushing_seq = 0;
	/* the group: who waited for this checkpoint and who waits for the next */
	log->l_group_want = ctx->c_forcers + log->l_cur_forcers;
	log->l_push_free_ns = now_ns();
	log->l_write_ns = ctx->c_write_ns;
	cond_broadcast(&log->l_durable_cond);
	struct log_force_waiter *fw, *fwt;
	list_for_each_entry_safe (fw, fwt, &log->l_force_waiters, link)
		if (fw->csn <= ctx->c_seq)
			list_move_tail(&fw->link, &ready);
	mutex_unlock(&log->l_push_lock);
	list_for_each_entry_safe (fw, fwt, &ready, link) {
		list_del(&fw->link);
		fw->fn(fw, 0, dev_flush_covered(log->l_ddev, fw->flush_ticket));
	}
	free(ctx);
}

/* Swap the current context out and write it as a checkpoint. Caller holds
 * l_pusher_lock: one checkpoint is written at a time, by the push thread or
 * by a force that pushes on its own thread (log_force_async). */
static void cil_push(struct log *log)
{
	assert_locked(&log->l_pusher_lock);
	struct cil_ctx *fresh = cil_ctx_alloc(0);

	rwlock_wrlock(&log->l_ctx_lock);
	struct cil_ctx *ctx = log->l_ctx;
	fresh->c_seq = ctx->c_seq + 1;
	struct log_vec *lv;
	list_for_each_entry (lv, &ctx->c_lvs, lv_link)
		lv->lv_item->li_lv = NULL;
	log->l_ctx = fresh;
	mutex_lock(&log->l_push_lock);
	log->l_cur_seq = fresh->c_seq;
	log->l_cur_dirty = false;
	log->l_pushing_seq = ctx->c_seq;
	ctx->c_forcers = log->l_cur_forcers;
	log->l_cur_forcers = 0;
	log->l_push_urgent = false;
	cond_broadcast(&log->l_swap_cond);
	mutex_unlock(&log->l_push_lock);
	rwlock_unlock(&log->l_ctx_lock);

	counter_inc(&log->l_stats.cil_pushes);
	uint64_t t0 = now_ns();
	int err = log_is_shutdown(log) ? -EIO : cil_write(log, ctx);
	uint64_t t1 = now_ns();
	ctx->c_write_ns = t1 - t0;
	counter_add(&log->l_stats.push_write_ns, ctx->c_write_ns);
	if (err) {
		log_shutdown(log, "checkpoint write failed");
		cil_ctx_abort(log, ctx);
		return;
	}
	cil_complete(log, ctx);
	counter_add(&log->l_stats.push_complete_ns, now_ns() - t1);
}

/* Write an empty checkpoint if the AIL tail moved past the durable one, so
 * that the log space behind it can be reused (I2). */
static void cil_cover(struct log *log)
{
	mutex_lock(&log->l_space_lock);
	uint64_t head = log->l_head_pos, dtail = log->l_durable_tail;
	mutex_unlock(&log->l_space_lock);
	if (ail_tail_pos(log, head) != dtail)
		cil_push(log);
}

/*
 * Right after recovery: the durable tail still lies before the checkpoints
 * replay just wrote home (and flushed). Until a record carries a tail past
 * them, a second crash would replay them again; for logged data that would
 * put an image over whatever is written to its block in place meanwhile,
 * and nothing knows those blocks live (data_item.h, D1). So the mount
 * writes an empty checkpoint that carries the tail to the head.
 */
int log_cover_recovered(struct log *log)
{
	if (!log->l_replayed)
		return 0;
	mutex_lock(&log->l_pusher_lock);
	cil_cover(log);
	mutex_unlock(&log->l_pusher_lock);
	return log_is_shutdown(log) ? -EIO : 0;
}

/* How long the push thread may still wait for more forces of the current
 * context before pushing it (see "Waiting for the group"); 0: push now.
 * Caller holds l_push_lock. */
static uint64_t cil_group_wait(struct log *log, uint64_t now)
{
	assert_locked(&log->l_push_lock);
	if (log->l_push_urgent || log->l_stop || log->l_cur_forcers >= log->l_group_want)
		return 0;
	uint64_t from = MAX(log->l_push_asked_ns, log->l_push_free_ns);
	uint64_t deadline = from + MIN(log->l_write_ns / 2, GROUP_WAIT_MAX_NS);
	return now < deadline ? deadline - now : 0;
}

/* A force of the current context (l_push_lock held): ask for the push if
 * nobody did, or wake the push thread if the group it waits for is here.
 * With may_push, a push that could start at once (nothing being written, no
 * group to wait for) is left to the caller: returns true, and the push
 * thread is not woken. */
static bool cil_force_cur(struct log *log, uint64_t csn, bool may_push)
{
	assert_locked(&log->l_push_lock);
	log->l_cur_forcers++;
	if (log->l_push_seq < csn) {
		log->l_push_seq = csn;
		log->l_push_asked_ns = now_ns();
		counter_inc(&log->l_stats.forces_wrote);
		if (may_push && !log->l_pushing_seq && !log->l_stop &&
		    !cil_group_wait(log, log->l_push_asked_ns))
			return true;
		cond_signal(&log->l_push_cond);
	} else if (log->l_cur_forcers == log->l_group_want) {
		cond_signal(&log->l_push_cond);
	}
	return false;
}

/* The caller of a force that cil_force_cur left to it: push csn on this
 * thread, unless another push is under way (then the push thread, which
 * finishes that one first, does it). */
static void cil_push_here(struct log *log, uint64_t csn)
{
	if (mutex_trylock(&log->l_pusher_lock)) {
		mutex_lock(&log->l_push_lock);
		bool still = log->l_cur_seq == csn && !log_is_shutdown(log);
		mutex_unlock(&log->l_push_lock);
		if (still) {
			counter_inc(&log->l_stats.inline_pushes);
			cil_push(log);
		}
		mutex_unlock(&log->l_pusher_lock);
		return;
	}
	mutex_lock(&log->l_push_lock);
	cond_signal(&log->l_push_cond);
	mutex_unlock(&log->l_push_lock);
}

void *log_push_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "log-push");
	struct log *log = arg;
	uint64_t interval = log->l_p.push_interval_ns;
	uint64_t next_tick = now_ns() + interval;
	bool grouping = false; /* this push already waited for its group */

	mutex_lock(&log->l_push_lock);
	while (!log->l_stop) {
		if (log_is_shutdown(log)) {
			cond_wait(&log->l_push_cond, &log->l_push_lock);
			continue;
		}
		bool push = log->l_push_seq >= log->l_cur_seq;
		bool cover = log->l_want_cover;
		bool tick = false;
		uint64_t now = now_ns();
		if (now >= next_tick) {
			/* background: write the CIL, write items back, then keep
			 * the durable tail close to the head */
			next_tick = now + interval;
			tick = true;
			if (log->l_cur_dirty)
				push = true;
			else
				cover = true;
		}
		if (!push && !cover && !tick) {
			cond_timedwait_ns(&log->l_push_cond, &log->l_push_lock, next_tick - now);
			continue;
		}
		uint64_t gw = push && !tick ? cil_group_wait(log, now) : 0;
		if (gw) {
			if (!grouping)
				counter_inc(&log->l_stats.group_waits);
			grouping = true;
			cond_timedwait_ns(&log->l_push_cond, &log->l_push_lock,
					  MIN(gw, next_tick - now));
			counter_add(&log->l_stats.group_wait_ns, now_ns() - now);
			continue;
		}
		grouping = false;
		if (push || cover)
			log->l_want_cover = false;
		mutex_unlock(&log->l_push_lock);
		if (tick)
			ail_push_target(log, UINT64_MAX);
		mutex_lock(&log->l_pusher_lock);
		if (push) {
			/* a force may have pushed it on its own thread meanwhile */
			mutex_lock(&log->l_push_lock);
			push = log->l_push_seq >= log->l_cur_seq || (tick && log->l_cur_dirty);
			mutex_unlock(&log->l_push_lock);
		}
		if (push)
			cil_push(log);
		else if (cover)
			cil_cover(log);
		mutex_unlock(&log->l_pusher_lock);
		mutex_lock(&log->l_push_lock);
	}
	mutex_unlock(&log->l_push_lock);
	return NULL;
}

void log_request_push(struct log *log, uint64_t seq)
{
	mutex_lock(&log->l_push_lock);
	if (seq > log->l_push_seq) {
		log->l_push_seq = seq;
		cond_signal(&log->l_push_cond);
	}
	/* asked for by space: no waiting for a group (cil_group_wait) */
	if (seq == log->l_cur_seq && !log->l_push_urgent) {
		log->l_push_urgent = true;
		cond_signal(&log->l_push_cond);
	}
	mutex_unlock(&log->l_push_lock);
}

void log_request_cover(struct log *log)
{
	mutex_lock(&log->l_push_lock);
	if (!log->l_want_cover) {
		log->l_want_cover = true;
		cond_signal(&log->l_push_cond);
	}
	mutex_unlock(&log->l_push_lock);
}

int log_force_seq(struct log *log, uint64_t csn, bool wait, bool *log_flushed)
{
	if (log_flushed)
		*log_flushed = false;
	if (!csn)
		return 0;
	counter_inc(&log->l_stats.forces);
	/* G6: a flush of the data device that starts after this point covers
	 * the caller's data, whoever asked for it (the checkpoint's own, or
	 * another caller's: shared flushes, dev.h) */
	uint64_t ticket = dev_flush_ticket(log->l_ddev);

	mutex_lock(&log->l_push_lock);
	if (log_is_shutdown(log)) {
		mutex_unlock(&log->l_push_lock);
		return -EIO;
	}
	if (csn <= log->l_durable_seq) {
		mutex_unlock(&log->l_push_lock);
		return 0;
	}
	if (csn > log->l_cur_seq) {
		mutex_unlock(&log->l_push_lock);
		msg_err("log: force of sequence %llu beyond the current %llu",
			(unsigned long long)csn, (unsigned long long)log->l_cur_seq);
		return -EINVAL;
	}
	if (csn == log->l_cur_seq)
		cil_force_cur(log, csn, false);
	if (!wait) {
		mutex_unlock(&log->l_push_lock);
		return 0;
	}
	if (log->l_durable_seq < csn)
		counter_inc(&log->l_stats.forces_waited);
	while (log->l_durable_seq < csn && !log_is_shutdown(log))
		cond_wait(&log->l_durable_cond, &log->l_push_lock);
	int err = log->l_durable_seq < csn ? -EIO : 0;
	mutex_unlock(&log->l_push_lock);
	if (!err && log_flushed)
		*log_flushed = dev_flush_covered(log->l_ddev, ticket);
	return err;
}

int log_force_async(struct log *log, uint64_t csn, struct log_force_waiter *w)
{
	if (!csn)
		return 0;
	counter_inc(&log->l_stats.forces);
	w->flush_ticket = dev_flush_ticket(log->l_ddev); /* G6, as in log_force_seq */
	mutex_lock(&log->l_push_lock);
	if (log_is_shutdown(log)) {
		mutex_unlock(&log->l_push_lock);
		return -EIO;
	}
	if (csn <= log->l_durable_seq) {
		mutex_unlock(&log->l_push_lock);
		return 0;
	}
	if (csn > log->l_cur_seq) {
		mutex_unlock(&log->l_push_lock);
		return -EINVAL;
	}
	w->csn = csn;
	list_add_tail(&w->link, &log->l_force_waiters);
	bool here = csn == log->l_cur_seq && cil_force_cur(log, csn, w->may_push);
	counter_inc(&log->l_stats.forces_waited);
	mutex_unlock(&log->l_push_lock);
	if (here)
		cil_push_here(log, csn);
	return 1;
}

/* After a shutdown: every queued asynchronous force fails. */
void log_fail_force_waiters(struct log *log)
{
	struct list failed = LIST_INIT(failed);
	mutex_lock(&log->l_push_lock);
	list_splice_tail(&log->l_force_waiters, &failed);
	mutex_unlock(&log->l_push_lock);
	struct log_force_waiter *fw, *fwt;
	list_for_each_entry_safe (fw, fwt, &failed, link) {
		list_del(&fw->link);
		fw->fn(fw, -EIO, false);
	}
}

bool log_seq_durable(struct log *log, uint64_t csn)
{
	mutex_lock(&log->l_push_lock);
	bool yes = csn <= log->l_durable_seq;
	mutex_unlock(&log->l_push_lock);
	return yes;
}

int log_force_all(struct log *log)
{
	mutex_lock(&log->l_push_lock);
	uint64_t seq = log->l_cur_dirty ? log->l_cur_seq : log->l_cur_seq - 1;
	mutex_unlock(&log->l_push_lock);
	if (log_is_shutdown(log))
		return -EIO;
	return log_force_seq(log, seq, true, NULL);
}
