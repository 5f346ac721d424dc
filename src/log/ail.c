/*
 * ail.c - the active item list: items whose changes are durable in the log
 * but not yet written back in place, ordered by log position (I4).
 *
 * The oldest item's position is the log tail: log space before it can be
 * reused once a durable record says so (I2). The AIL thread writes items
 * back in position order up to a target:
 *   - a reservation that waits for space sets the target a quarter of the
 *     log (or what it needs) past the durable tail;
 *   - the background tick and unmount push everything.
 *
 * An item being pushed is marked li_pushing and stays in the AIL until its
 * write completed; it is removed only if it did not move meanwhile (a
 * checkpoint that logged it again moves it to its own, later position).
 * Pinned items make the thread ask for a CIL push; locked ones are retried.
 */
#include <errno.h>
#include <string.h>

#include "base/msg.h"
#include "base/time.h"
#include "log/log_priv.h"

void ail_insert(struct log *log, struct log_item *lip, uint64_t pos)
{
	mutex_lock(&log->l_ail_lock);
	if (lip->li_ail_pos)
		list_del(&lip->li_ail);
	else
		log->l_ail_count++;
	BUG_ON(!list_empty(&log->l_ail) &&
	       list_last_entry(&log->l_ail, struct log_item, li_ail)->li_ail_pos > pos);
	lip->li_ail_pos = pos;
	list_add_tail(&lip->li_ail, &log->l_ail);
	mutex_unlock(&log->l_ail_lock);
}

bool log_item_in_ail(struct log_item *lip)
{
	struct log *log = lip->li_log;
	mutex_lock(&log->l_ail_lock);
	bool in = lip->li_ail_pos != 0 || lip->li_pushing;
	mutex_unlock(&log->l_ail_lock);
	return in;
}

uint64_t ail_tail_pos(struct log *log, uint64_t head_pos)
{
	mutex_lock(&log->l_ail_lock);
	uint64_t pos = list_empty(&log->l_ail)
			       ? head_pos
			       : list_first_entry(&log->l_ail, struct log_item, li_ail)->li_ail_pos;
	mutex_unlock(&log->l_ail_lock);
	return pos;
}

void ail_push_target(struct log *log, uint64_t target)
{
	mutex_lock(&log->l_ail_lock);
	if (target > log->l_ail_target) {
		log->l_ail_target = target;
		cond_signal(&log->l_ail_cond);
	}
	mutex_unlock(&log->l_ail_lock);
}

static struct log_item *ail_first(struct log *log)
{
	return list_empty(&log->l_ail) ? NULL
				       : list_first_entry(&log->l_ail, struct log_item, li_ail);
}

static struct log_item *ail_next(struct log *log, struct log_item *lip)
{
	return lip->li_ail.next == &log->l_ail
		       ? NULL
		       : list_entry(lip->li_ail.next, struct log_item, li_ail);
}

/*
 * One pass over the items below the target. Called and returns with
 * l_ail_lock held. Returns how many items left the AIL; sets *pinned if
 * some item needs a log force first.
 */
static unsigned ail_pass(struct log *log, bool *pinned)
{
	assert_locked(&log->l_ail_lock);
	unsigned removed = 0;
	uint32_t pass = ++log->l_ail_pass;
	struct log_item *lip = ail_first(log);

	while (lip && lip->li_ail_pos < log->l_ail_target && !log->l_ail_stop) {
		if (lip->li_ail_pass == pass) {
			lip = ail_next(log, lip);
			continue;
		}
		if (log_is_shutdown(log))
			break;
		uint64_t pos = lip->li_ail_pos;
		lip->li_ail_pass = pass;
		lip->li_pushing = true;
		if (!log->l_wb_ticket) /* I6: from here on a failed flush counts */
			log->l_wb_ticket = dev_flush_ticket(log->l_ddev);
		log->l_wb_started++;
		mutex_unlock(&log->l_ail_lock);

		int rc = lip->li_ops->push(lip, log_pos_to_lsn(log, pos));

		mutex_lock(&log->l_ail_lock);
		log->l_wb_done++;
		lip->li_pushing = false;
		bool moved = lip->li_ail_pos != pos;
		struct log_item *next = moved ? ail_first(log) : ail_next(log, lip);
		if (rc < 0) {
			mutex_unlock(&log->l_ail_lock);
			log_shutdown(log, "write back of a logged item failed");
			mutex_lock(&log->l_ail_lock);
			break;
		}
		switch (rc) {
		case LOG_PUSH_OK:
			counter_inc(&log->l_stats.ail_pushes);
			if (!moved) {
				list_del(&lip->li_ail);
				lip->li_ail_pos = 0;
				log->l_ail_count--;
				removed++;
			}
			break;
		case LOG_PUSH_PINNED:
			counter_inc(&log->l_stats.ail_pinned);
			*pinned = true;
			break;
		default:
			counter_inc(&log->l_stats.ail_locked);
			break;
		}
		lip = next;
	}
	return removed;
}

void *log_ail_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "log-ail");
	struct log *log = arg;

	mutex_lock(&log->l_ail_lock);
	while (!log->l_ail_stop) {
		struct log_item *first = ail_first(log);
		if (!first)
			cond_broadcast(&log->l_ail_empty_cond);
		if (!first || first->li_ail_pos >= log->l_ail_target || log_is_shutdown(log)) {
			log->l_ail_target = 0;
			cond_wait(&log->l_ail_cond, &log->l_ail_lock);
			continue;
		}
		bool pinned = false;
		unsigned removed = ail_pass(log, &pinned);
		mutex_unlock(&log->l_ail_lock);

		if (removed)
			log_space_wake(log);
		if (pinned) {
			/* items with changes still in the CIL: push it */
			mutex_lock(&log->l_push_lock);
			uint64_t seq = log->l_cur_dirty ? log->l_cur_seq : 0;
			mutex_unlock(&log->l_push_lock);
			if (seq)
				log_request_push(log, seq);
		}

		mutex_lock(&log->l_ail_lock);
		if (!removed && !log->l_ail_stop)
			cond_timedwait_ns(&log->l_ail_cond, &log->l_ail_lock, 10 * NSEC_PER_MSEC);
	}
	cond_broadcast(&log->l_ail_empty_cond);
	mutex_unlock(&log->l_ail_lock);
	return NULL;
}

/*
 * The data-device flush before a record that carries the tail further
 * (I1), and I6's check after it: no flush failed since the first
 * write-back it covers started, so every write-back that let the tail
 * move is durable. A failure shuts the log down through the caller (the
 * checkpoint or unmount record is not written).
 *
 * The flush covers every write-back completed before it started, so the
 * next check need only look back to its ticket, and not at all if no
 * write-back was under way when the ticket was taken or started since.
 */
int ail_flush_for_tail(struct log *log)
{
	mutex_lock(&log->l_ail_lock);
	uint64_t ticket = dev_flush_ticket(log->l_ddev);
	uint64_t started = log->l_wb_started;
	bool busy = started != log->l_wb_done;
	mutex_unlock(&log->l_ail_lock);

	int err = dev_flush(log->l_ddev);
	if (err) {
		msg_err("log: data device flush failed: %s", strerror(-err));
		return err;
	}

	mutex_lock(&log->l_ail_lock);
	uint64_t since = log->l_wb_ticket;
	bool lost = since && dev_flush_failed_since(log->l_ddev, since);
	if (!lost)
		log->l_wb_ticket = busy || log->l_wb_started != started ? ticket : 0;
	mutex_unlock(&log->l_ail_lock);
	if (lost) {
		msg_err("log: a flush of the data device failed after items were written back; "
			"they may be lost, so the tail stays behind their records");
		return -EIO;
	}
	return 0;
}

int log_ail_push_all(struct log *log)
{
	mutex_lock(&log->l_ail_lock);
	log->l_ail_target = UINT64_MAX;
	cond_signal(&log->l_ail_cond);
	while (!list_empty(&log->l_ail) && !log_is_shutdown(log) && !log->l_ail_stop) {
		log->l_ail_target = UINT64_MAX;
		cond_signal(&log->l_ail_cond);
		cond_timedwait_ns(&log->l_ail_empty_cond, &log->l_ail_lock, 100 * NSEC_PER_MSEC);
	}
	int err = list_empty(&log->l_ail) ? 0 : -EIO;
	mutex_unlock(&log->l_ail_lock);
	return err;
}
