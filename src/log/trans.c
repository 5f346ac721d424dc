/*
 * trans.c - transactions: reserve log space, join locked items, commit
 * into the CIL or cancel.
 *
 * States: ALLOCATED (space reserved) -> items joined and dirtied ->
 * COMMITTED (images in the CIL, items released) or CANCELLED. Both end
 * states free the transaction.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/mem.h"
#include "base/msg.h"
#include "log/log_priv.h"

void log_item_init(struct log_item *lip, struct log *log, const struct log_item_ops *ops)
{
	lip->li_ops = ops;
	lip->li_log = log;
	list_init(&lip->li_trans);
	atomic_store(&lip->li_tp, NULL);
	lip->li_dirty = false;
	lip->li_lv = NULL;
	list_init(&lip->li_ail);
	lip->li_ail_pos = 0;
	lip->li_ail_pass = 0;
	lip->li_pushing = false;
}

int trans_alloc(struct log *log, uint64_t res, unsigned flags, struct trans **tpp)
{
	*tpp = NULL;
	if (log_is_shutdown(log))
		return -EIO;
	if (res > log->l_bytes / 4) {
		msg_err("log: transaction reservation of %llu bytes is larger than a quarter "
			"of the log",
			(unsigned long long)res);
		return -E2BIG;
	}
	int err = log_space_reserve(log, res);
	if (err)
		return err;
	struct trans *tp = xcalloc(1, sizeof(*tp));
	tp->t_log = log;
	tp->t_res = res;
	tp->t_flags = flags;
	list_init(&tp->t_items);
	list_init(&tp->t_cbs);
	*tpp = tp;
	return 0;
}

void trans_join(struct trans *tp, struct log_item *lip)
{
	if (atomic_load(&lip->li_tp) == tp)
		return;
	BUG_ON(lip->li_log != tp->t_log || !list_empty(&lip->li_trans));
	lip->li_dirty = false;
	atomic_store(&lip->li_tp, tp);
	list_add_tail(&lip->li_trans, &tp->t_items);
}

bool trans_has_item(struct trans *tp, struct log_item *lip)
{
	return atomic_load(&lip->li_tp) == tp;
}

void trans_dirty(struct trans *tp, struct log_item *lip)
{
	BUG_ON(atomic_load(&lip->li_tp) != tp);
	lip->li_dirty = true;
}

void trans_set_sync(struct trans *tp)
{
	tp->t_flags |= TRANS_SYNC;
}

void trans_set_unordered(struct trans *tp)
{
	tp->t_flags |= TRANS_UNORDERED;
}

void trans_on_durable(struct trans *tp, struct log_durable_cb *cb)
{
	list_add_tail(&cb->dc_link, &tp->t_cbs);
}

struct log *trans_log(struct trans *tp)
{
	return tp->t_log;
}

/* Hand every item back to its owner (ops->release unlocks it). */
static void trans_release_items(struct trans *tp)
{
	struct log_item *lip, *tmp;
	list_for_each_entry_safe (lip, tmp, &tp->t_items, li_trans) {
		list_del(&lip->li_trans);
		lip->li_dirty = false;
		atomic_store(&lip->li_tp, NULL);
		lip->li_ops->release(lip);
	}
}

static void trans_run_cbs(struct trans *tp, int err)
{
	struct log_durable_cb *cb, *tmp;
	list_for_each_entry_safe (cb, tmp, &tp->t_cbs, dc_link) {
		list_del(&cb->dc_link);
		cb->dc_fn(cb, err);
	}
}

int trans_commit(struct trans *tp, uint64_t *csnp)
{
	struct log *log = tp->t_log;
	uint64_t csn = 0;
	int err = 0;
	bool dirty = false;
	struct log_item *lip;

	list_for_each_entry (lip, &tp->t_items, li_trans)
		dirty |= lip->li_dirty;

	if (log_is_shutdown(log)) {
		err = -EIO;
		trans_release_items(tp);
		trans_run_cbs(tp, err);
		goto out_free;
	}
	if (!dirty) {
		counter_inc(&log->l_stats.trans_empty);
		trans_release_items(tp);
		trans_run_cbs(tp, 0);
		goto out_free;
	}
	cil_commit(log, tp, &csn);
	trans_release_items(tp);
	if (tp->t_flags & TRANS_SYNC) {
		counter_inc(&log->l_stats.trans_sync);
		err = log_force_seq(log, csn, true, NULL);
	} else {
		counter_inc(&log->l_stats.trans_async);
	}
out_free:
	log_space_release(log, tp->t_res, 0);
	free(tp);
	if (csnp)
		*csnp = csn;
	return err;
}

void trans_cancel(struct trans *tp)
{
	struct log *log = tp->t_log;
	struct log_item *lip;
	bool dirty = false;
	list_for_each_entry (lip, &tp->t_items, li_trans)
		dirty |= lip->li_dirty;
	if (dirty)
		log_shutdown(log, "cancelled a transaction that changed items");
	counter_inc(&log->l_stats.trans_cancelled);
	trans_release_items(tp);
	trans_run_cbs(tp, dirty ? -EIO : 0);
	log_space_release(log, tp->t_res, 0);
	free(tp);
}
