/*
 * log.c - the journal's life cycle (format, mount, unmount, shutdown), log
 * space reservations and counters.
 *
 * Space (I3), in bytes:
 *   used     = (head - durable tail) * 512   records not yet behind the tail
 *   cil      = charges of contexts not yet durable (bound their records)
 *   reserved = open transactions' reservations
 *   slack    = room for empty checkpoints and the unmount record
 * A reservation waits, FIFO, until used + cil + reserved + slack + res fits
 * in the log; while it waits it asks the AIL to write items back, the CIL
 * to be pushed and an empty checkpoint to carry the moved tail.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "log/data_item.h"
#include "log/log_priv.h"

static struct lock_class pusher_lock_class = LOCK_CLASS(LOG_PUSHER);
static struct lock_class ctx_lock_class = LOCK_CLASS(LOG_CTX);
static struct lock_class cil_lock_class = LOCK_CLASS(LOG_CIL);
static struct lock_class push_lock_class = LOCK_CLASS(LOG_PUSH);
static struct lock_class space_lock_class = LOCK_CLASS(LOG_SPACE);
static struct lock_class ail_lock_class = LOCK_CLASS(LOG_AIL);
static struct lock_class io_lock_class = LOCK_CLASS(LOG_IO);
static struct lock_class data_lock_class = LOCK_CLASS(LOG_DATA);

#define LOG_MIN_SIZE (64u * 1024u)

/* Check and complete the parameters; messages name what is wrong. */
static int log_check_params(const struct log_params *in, struct log_params *p)
{
	*p = *in;
	if (!p->ddev)
		p->ddev = p->ldev;
	if (!p->nbufs)
		p->nbufs = 8;
	if (!p->buf_size) {
		/* a checkpoint that fits one buffer is one record, written with
		 * FUA; one of several costs another log flush before its commit
		 * record (cil_write). At 32 KiB, nfs3-untar with 8 clients wrote
		 * 1.4 records and 2.4 flushes per checkpoint, at 256 KiB 1.0 and
		 * 2.0. Small logs keep 64 buffers' worth of room. */
		p->buf_size = 256 * 1024;
		while (p->buf_size > 32 * 1024 && p->log_size < 64ull * p->buf_size)
			p->buf_size /= 2;
	}
	if (!p->push_interval_ns)
		p->push_interval_ns = 30 * NSEC_PER_SEC;
	if (!p->ldev) {
		msg_err("log: no log device");
		return -EINVAL;
	}
	if (p->nbufs < 2 || p->nbufs > 8) {
		msg_err("log: %u log buffers: must be 2 to 8", p->nbufs);
		return -EINVAL;
	}
	if (p->buf_size < LOG_MIN_BUF_SIZE || p->buf_size > LOG_MAX_BUF_SIZE ||
	    (p->buf_size & (p->buf_size - 1))) {
		msg_err("log: log buffer size %u: must be a power of two from %u to %u",
			p->buf_size, LOG_MIN_BUF_SIZE, LOG_MAX_BUF_SIZE);
		return -EINVAL;
	}
	if ((p->log_offset | p->log_size) & (LOG_BB_SIZE - 1) || p->log_size < LOG_MIN_SIZE ||
	    p->log_size / LOG_BB_SIZE > UINT32_MAX) {
		msg_err("log: log region of %llu bytes at %llu: must be 512-aligned, at least "
			"%u bytes",
			(unsigned long long)p->log_size, (unsigned long long)p->log_offset,
			LOG_MIN_SIZE);
		return -EINVAL;
	}
	if (p->log_size < 8ull * p->buf_size) {
		msg_err("log: log of %llu bytes is too small for %u-byte log buffers",
			(unsigned long long)p->log_size, p->buf_size);
		return -EINVAL;
	}
	if (p->log_offset + p->log_size > dev_size(p->ldev)) {
		msg_err("log: the log region ends at byte %llu but the device (%s) has only "
			"%llu bytes: truncated image?",
			(unsigned long long)(p->log_offset + p->log_size), p->ldev->d_name,
			(unsigned long long)dev_size(p->ldev));
		return -EUCLEAN;
	}
	return 0;
}

int log_format(const struct log_params *in)
{
	struct log_params p;
	int err = log_check_params(in, &p);
	if (err)
		return err;

	size_t chunk = 1 << 20;
	uint8_t *zero = xcalloc(1, chunk);
	for (uint64_t off = 0; off < p.log_size && !err; off += chunk) {
		size_t n = (size_t)MIN((uint64_t)chunk, p.log_size - off);
		err = dev_write(p.ldev, zero, n, p.log_offset + off, 0);
	}
	free(zero);
	if (err)
		return err;

	/* a clean unmount record at cycle 1, block 0: the log is empty */
	struct log fake = {.l_p = p,
			   .l_ldev = p.ldev,
			   .l_off = p.log_offset,
			   .l_bbs = p.log_size / LOG_BB_SIZE};
	struct logbuf b = {.b_data = xcalloc(1, LOG_BB_SIZE), .b_pos = fake.l_bbs};
	log_fill_header(&fake, &b, LOG_REC_UNMOUNT, 0, 0, b.b_pos, 0);
	err = dev_write(p.ldev, b.b_data, LOG_BB_SIZE, p.log_offset, 0);
	free(b.b_data);
	if (!err)
		err = dev_flush(p.ldev);
	return err;
}

static void log_free(struct log *log)
{
	for (uint32_t i = 0; log->l_bufs && i < log->l_nbufs; i++)
		free(log->l_bufs[i].b_data);
	free(log->l_bufs);
	free(log->l_io_queue);
	if (log->l_ctx)
		free(log->l_ctx);
	rwlock_destroy(&log->l_ctx_lock);
	mutex_destroy(&log->l_cil_lock);
	mutex_destroy(&log->l_push_lock);
	mutex_destroy(&log->l_pusher_lock);
	mutex_destroy(&log->l_space_lock);
	mutex_destroy(&log->l_ail_lock);
	mutex_destroy(&log->l_io_lock);
	mutex_destroy(&log->l_data_lock);
	size_t it = 0;
	uint64_t k;
	void *v;
	while (hashmap_next(&log->l_data_live, &it, &k, &v))
		free(v);
	hashmap_destroy(&log->l_data_live);
	cond_destroy(&log->l_push_cond);
	cond_destroy(&log->l_durable_cond);
	cond_destroy(&log->l_swap_cond);
	cond_destroy(&log->l_space_cond);
	cond_destroy(&log->l_ail_cond);
	cond_destroy(&log->l_ail_empty_cond);
	cond_destroy(&log->l_io_cond);
	cond_destroy(&log->l_io_done_cond);
	cond_destroy(&log->l_buf_cond);
	free(log);
}

int log_mount(const struct log_params *in, struct log **out)
{
	*out = NULL;
	struct log *log = xcalloc(1, sizeof(*log));
	rwlock_init(&log->l_ctx_lock, &ctx_lock_class);
	mutex_init(&log->l_cil_lock, &cil_lock_class);
	mutex_init(&log->l_push_lock, &push_lock_class);
	mutex_init(&log->l_pusher_lock, &pusher_lock_class);
	mutex_init(&log->l_space_lock, &space_lock_class);
	mutex_init(&log->l_ail_lock, &ail_lock_class);
	mutex_init(&log->l_io_lock, &io_lock_class);
	mutex_init(&log->l_data_lock, &data_lock_class);
	hashmap_init(&log->l_data_live);
	cond_init(&log->l_push_cond);
	cond_init(&log->l_durable_cond);
	cond_init(&log->l_swap_cond);
	cond_init(&log->l_space_cond);
	cond_init(&log->l_ail_cond);
	cond_init(&log->l_ail_empty_cond);
	cond_init(&log->l_io_cond);
	cond_init(&log->l_io_done_cond);
	cond_init(&log->l_buf_cond);
	list_init(&log->l_ail);
	list_init(&log->l_force_waiters);

	int err = log_check_params(in, &log->l_p);
	if (err)
		goto out_free;
	struct log_params *p = &log->l_p;
	log->l_ldev = p->ldev;
	log->l_ddev = p->ddev;
	log->l_off = p->log_offset;
	log->l_bbs = p->log_size / LOG_BB_SIZE;
	log->l_bytes = p->log_size;
	log->l_buf_size = p->buf_size;
	log->l_nbufs = p->nbufs;
	log->l_push_threshold = MIN(log->l_bytes / 8, 32ull << 20);
	log->l_slack = 4ull * LOG_BB_SIZE;
	log->l_types[LOG_ITEM_BUF] = &buf_item_ops;
	log->l_types[LOG_ITEM_DATA] = &data_item_ops;
	for (unsigned i = 0; i < p->nitem_ops; i++) {
		const struct log_item_ops *ops = p->item_ops[i];
		if (ops->type == 0 || ops->type >= LOG_ITEM_MAX) {
			msg_err("log: item type %u out of range", ops->type);
			err = -EINVAL;
			goto out_free;
		}
		log->l_types[ops->type] = ops;
	}

	log->l_bufs = xcalloc(log->l_nbufs, sizeof(*log->l_bufs));
	log->l_io_queue = xcalloc(log->l_nbufs, sizeof(*log->l_io_queue));
	for (uint32_t i = 0; i < log->l_nbufs; i++)
		log->l_bufs[i].b_data = xmalloc_aligned(4096, log->l_buf_size);

	err = log_recover(log);
	if (err)
		goto out_free;

	log->l_ctx = cil_ctx_alloc(log->l_cur_seq);
	log->l_push_seq = log->l_durable_seq;

	if (pthread_create(&log->l_io_thread, NULL, log_io_thread, log) ||
	    pthread_create(&log->l_ail_thread, NULL, log_ail_thread, log) ||
	    pthread_create(&log->l_push_thread, NULL, log_push_thread, log))
		panic("log: cannot start threads");
	log->l_threads_started = true;
	err = log_cover_recovered(log);
	if (err) {
		log_unmount(log);
		return err;
	}
	*out = log;
	return 0;

out_free:
	log_free(log);
	return err;
}

static void log_stop_push(struct log *log)
{
	mutex_lock(&log->l_push_lock);
	log->l_stop = true;
	cond_broadcast(&log->l_push_cond);
	mutex_unlock(&log->l_push_lock);
	pthread_join(log->l_push_thread, NULL);
}

static void log_stop_ail(struct log *log)
{
	mutex_lock(&log->l_ail_lock);
	log->l_ail_stop = true;
	cond_broadcast(&log->l_ail_cond);
	mutex_unlock(&log->l_ail_lock);
	pthread_join(log->l_ail_thread, NULL);
}

static void log_stop_io(struct log *log)
{
	mutex_lock(&log->l_io_lock);
	log->l_io_stop = true;
	cond_broadcast(&log->l_io_cond);
	mutex_unlock(&log->l_io_lock);
	pthread_join(log->l_io_thread, NULL);
}

int log_unmount(struct log *log)
{
	int err = log_force_all(log);
	log_stop_push(log);
	if (!err)
		err = log_ail_push_all(log);
	log_stop_ail(log);
	if (!err && !log_is_shutdown(log))
		err = log_write_unmount(log);
	log_stop_io(log);
	if (!err && log_is_shutdown(log))
		err = -EIO;

	/* drop what can no longer be written (only after a shutdown) */
	cil_abandon(log);
	struct log_item *lip, *tmp;
	list_for_each_entry_safe (lip, tmp, &log->l_ail, li_ail) {
		list_del(&lip->li_ail);
		lip->li_ail_pos = 0;
	}
	log_free(log);
	return err;
}

void log_shutdown(struct log *log, const char *why)
{
	bool was = atomic_exchange(&log->l_shutdown, true);
	if (!was)
		msg_err("log: shut down: %s; no more changes will be written", why);
	mutex_lock(&log->l_push_lock);
	cond_broadcast(&log->l_durable_cond);
	cond_broadcast(&log->l_swap_cond);
	cond_broadcast(&log->l_push_cond);
	mutex_unlock(&log->l_push_lock);
	mutex_lock(&log->l_space_lock);
	cond_broadcast(&log->l_space_cond);
	mutex_unlock(&log->l_space_lock);
	mutex_lock(&log->l_ail_lock);
	cond_broadcast(&log->l_ail_cond);
	cond_broadcast(&log->l_ail_empty_cond);
	mutex_unlock(&log->l_ail_lock);
	log_fail_force_waiters(log);
}

bool log_is_shutdown(const struct log *log)
{
	return atomic_load(&((struct log *)log)->l_shutdown);
}

struct dev *log_ddev(struct log *log)
{
	return log->l_ddev;
}

uint64_t log_calc_res(const struct log *log, unsigned nitems, size_t nbytes)
{
	uint64_t per_rec = log->l_buf_size - LOG_BB_SIZE;
	uint64_t stream = nbytes + (uint64_t)nitems * (sizeof(struct log_op_hdr) + LOG_OP_ALIGN);
	return stream + (DIV_ROUND_UP(stream, per_rec) + 1) * 2 * LOG_BB_SIZE;
}

static int64_t space_free(struct log *log)
{
	uint64_t used = (log->l_head_pos - log->l_durable_tail) * LOG_BB_SIZE;
	return (int64_t)log->l_bytes - (int64_t)used - (int64_t)log->l_cil_space -
	       (int64_t)log->l_reserved - (int64_t)log->l_slack;
}

uint64_t log_size_bytes(const struct log *log)
{
	return log->l_bytes;
}

bool log_space_ample(struct log *log, uint64_t res)
{
	mutex_lock(&log->l_space_lock);
	bool yes = log->l_space_next == log->l_space_serving &&
		   space_free(log) - (int64_t)res >= (int64_t)(log->l_bytes / 4);
	mutex_unlock(&log->l_space_lock);
	return yes;
}

int log_space_reserve(struct log *log, uint64_t res)
{
	int err = 0;
	mutex_lock(&log->l_space_lock);
	uint64_t ticket = log->l_space_next++;
	bool counted = false;
	while (ticket != log->l_space_serving || space_free(log) < (int64_t)res) {
		if (log_is_shutdown(log)) {
			err = -EIO;
			break;
		}
		if (ticket != log->l_space_serving) {
			cond_wait(&log->l_space_cond, &log->l_space_lock);
			continue;
		}
		if (!counted) {
			counter_inc(&log->l_stats.space_waits);
			counted = true;
		}
		/* ask for space: write items back past a quarter of the log,
		 * push the CIL, and carry the moved tail in a record */
		uint64_t want = MAX(DIV_ROUND_UP(res, LOG_BB_SIZE), log->l_bbs / 4);
		uint64_t target = log->l_durable_tail + want;
		mutex_unlock(&log->l_space_lock);
		ail_push_target(log, target);
		mutex_lock(&log->l_push_lock);
		uint64_t seq = log->l_cur_dirty ? log->l_cur_seq : 0;
		mutex_unlock(&log->l_push_lock);
		if (seq)
			log_request_push(log, seq);
		log_request_cover(log);
		mutex_lock(&log->l_space_lock);
		if (space_free(log) < (int64_t)res)
			cond_timedwait_ns(&log->l_space_cond, &log->l_space_lock,
					  20 * NSEC_PER_MSEC);
	}
	if (!err)
		log->l_reserved += res;
	log->l_space_serving++;
	cond_broadcast(&log->l_space_cond);
	mutex_unlock(&log->l_space_lock);
	return err;
}

/* A transaction gives back its reservation res, of which charge moved into
 * the CIL (charge may be negative when relogging shrank an image). */
void log_space_release(struct log *log, uint64_t res, int64_t charge)
{
	if (!res && !charge)
		return;
	mutex_lock(&log->l_space_lock);
	log->l_reserved -= res;
	log->l_cil_space = (uint64_t)((int64_t)log->l_cil_space + charge);
	cond_broadcast(&log->l_space_cond);
	mutex_unlock(&log->l_space_lock);
}

/* Items left the AIL: wake reservations, and if some wait, have the moved
 * tail written so that the space becomes reusable. */
void log_space_wake(struct log *log)
{
	mutex_lock(&log->l_space_lock);
	bool waiters = log->l_space_next != log->l_space_serving;
	cond_broadcast(&log->l_space_cond);
	mutex_unlock(&log->l_space_lock);
	if (waiters)
		log_request_cover(log);
}

void log_stats(struct log *log, const struct stat_sink *s)
{
#define C(name) stat_emitf(s, "log", #name, counter_get(&log->l_stats.name))
	C(trans_async);
	C(trans_sync);
	C(trans_empty);
	C(trans_cancelled);
	C(cil_pushes);
	C(checkpoints);
	C(checkpoints_empty);
	C(checkpoints_unflushed);
	C(throttles);
	C(forces);
	C(forces_wrote);
	C(forces_waited);
	C(group_waits);
	C(inline_pushes);
	C(buffer_writes);
	C(buffer_bytes);
	C(records);
	C(ail_pushes);
	C(ail_pinned);
	C(ail_locked);
	C(tail_moves);
	C(space_waits);
	C(push_flush_ns);
	C(push_write_ns);
	C(push_complete_ns);
	C(group_wait_ns);
	C(recovered_checkpoints);
	C(recovered_items);
	C(recovered_clean);
#undef C
	mutex_lock(&log->l_space_lock);
	stat_gauge(s, "log.head_lsn", log_pos_to_lsn(log, log->l_head_pos));
	stat_gauge(s, "log.tail_lsn", log_pos_to_lsn(log, log->l_durable_tail));
	stat_gauge(s, "log.used_bytes", (log->l_head_pos - log->l_durable_tail) * LOG_BB_SIZE);
	stat_gauge(s, "log.cil_bytes", log->l_cil_space);
	mutex_unlock(&log->l_space_lock);
	mutex_lock(&log->l_ail_lock);
	stat_gauge(s, "log.ail_items", log->l_ail_count);
	mutex_unlock(&log->l_ail_lock);
	mutex_lock(&log->l_push_lock);
	stat_gauge(s, "log.durable_seq", log->l_durable_seq);
	mutex_unlock(&log->l_push_lock);
}
