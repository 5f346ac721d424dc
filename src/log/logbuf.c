/*
 * logbuf.c - log records on disk: headers, placement in the circular region,
 * the pool of log buffers and the I/O thread that writes them.
 *
 * Log buffer life:
 *   FREE     in the pool;
 *   (filling) taken by the push thread, which copies the op stream into it;
 *   QUEUED   handed to the I/O thread (records of a checkpoint before its
 *            commit record), written in FIFO order;
 *   WRITING  being written; back to FREE when done.
 * The commit record is written by the push thread itself once every queued
 * buffer of its checkpoint is written (and, for a checkpoint of several
 * records, after a flush of the log device), with FUA.
 *
 * Placement: a record takes 1 + ceil(len / 512) BBs at the head position;
 * the head only moves forward, and never past l_durable_tail + log size
 * (I2). A record that crosses the physical end of the region is written as
 * two pieces.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/crc32c.h"
#include "base/mem.h"
#include "base/msg.h"
#include "log/log_priv.h"

uint32_t log_rec_crc(const struct log_rec_hdr *h, const void *payload, uint32_t len)
{
	struct log_rec_hdr tmp = *h;
	tmp.h_crc = 0;
	uint32_t crc = crc32c(0, &tmp, sizeof(tmp));
	return crc32c(crc, payload, len);
}

/* Write the header of b (whose payload of len bytes is already in place)
 * and zero the padding after the payload. */
void log_fill_header(struct log *log, struct logbuf *b, uint16_t flags, uint64_t csn,
		     uint32_t index, uint64_t tail_pos, uint32_t len)
{
	struct log_rec_hdr *h = (struct log_rec_hdr *)b->b_data;
	memset(h, 0, sizeof(*h));
	h->h_magic = htole32(LOG_REC_MAGIC);
	h->h_version = htole16(LOG_REC_VERSION);
	h->h_flags = htole16(flags);
	h->h_len = htole32(len);
	h->h_lsn = htole64(log_pos_to_lsn(log, b->b_pos));
	h->h_tail = htole64(log_pos_to_lsn(log, tail_pos));
	h->h_csn = htole64(csn);
	h->h_prev_crc = htole32(log->l_prev_crc);
	h->h_index = htole32(index);
	memcpy(h->h_uuid, log->l_p.uuid, 16);
	h->h_log_bbs = htole32((uint32_t)log->l_bbs);
	uint32_t padded = ALIGN_UP(len, LOG_BB_SIZE);
	memset(b->b_data + LOG_BB_SIZE + len, 0, padded - len);
	uint32_t crc = log_rec_crc(h, b->b_data + LOG_BB_SIZE, len);
	h->h_crc = htole32(crc);
	b->b_bytes = LOG_BB_SIZE + padded;
	log->l_prev_crc = crc;
}

/* Write one record to its place, in one or two pieces. */
int log_write_record(struct log *log, struct logbuf *b, bool fua)
{
	uint64_t nbb = b->b_bytes / LOG_BB_SIZE;
	uint64_t phys = b->b_pos % log->l_bbs;
	uint64_t first = MIN(nbb, log->l_bbs - phys);
	/* never behind other clients' unstable data (dev.h, B2) */
	unsigned flags = fua ? DEV_FUA : DEV_NOTHROTTLE;
	int err = dev_write(log->l_ldev, b->b_data, first * LOG_BB_SIZE,
			    log->l_off + phys * LOG_BB_SIZE, flags);
	if (!err && first < nbb)
		err = dev_write(log->l_ldev, b->b_data + first * LOG_BB_SIZE,
				(nbb - first) * LOG_BB_SIZE, log->l_off, flags);
	if (err) {
		msg_err("log: write of record at lsn %llu/%llu failed: %s",
			(unsigned long long)(b->b_pos / log->l_bbs),
			(unsigned long long)(b->b_pos % log->l_bbs), strerror(-err));
		return err;
	}
	counter_add(&log->l_stats.buffer_writes, first < nbb ? 2 : 1);
	counter_add(&log->l_stats.buffer_bytes, b->b_bytes);
	counter_inc(&log->l_stats.records);
	return 0;
}

struct logbuf *logbuf_get(struct log *log)
{
	mutex_lock(&log->l_io_lock);
	for (;;) {
		for (uint32_t i = 0; i < log->l_nbufs; i++) {
			struct logbuf *b = &log->l_bufs[(log->l_io_next_fill + i) % log->l_nbufs];
			if (b->b_state == LB_FREE) {
				b->b_state = LB_WRITING; /* owned by the caller until put back */
				log->l_io_next_fill =
					(uint32_t)(b - log->l_bufs + 1) % log->l_nbufs;
				mutex_unlock(&log->l_io_lock);
				return b;
			}
		}
		log->l_buf_waiters++;
		cond_wait(&log->l_buf_cond, &log->l_io_lock);
		log->l_buf_waiters--;
	}
}

/* A buffer is free again (l_io_lock held). */
static void logbuf_free(struct log *log, struct logbuf *b)
{
	assert_locked(&log->l_io_lock);
	b->b_state = LB_FREE;
	if (log->l_buf_waiters)
		cond_broadcast(&log->l_buf_cond);
}

void logbuf_put(struct log *log, struct logbuf *b)
{
	mutex_lock(&log->l_io_lock);
	logbuf_free(log, b);
	mutex_unlock(&log->l_io_lock);
}

/* Queue a filled buffer for the I/O thread. The queue is the ring of
 * buffer indices starting at l_io_next_io, in submission order. */
void logbuf_submit(struct log *log, struct logbuf *b)
{
	mutex_lock(&log->l_io_lock);
	b->b_state = LB_QUEUED;
	log->l_io_queue[(log->l_io_next_io + log->l_io_busy) % log->l_nbufs] =
		(uint32_t)(b - log->l_bufs);
	log->l_io_busy++;
	cond_signal(&log->l_io_cond);
	mutex_unlock(&log->l_io_lock);
}

/* Wait until every queued buffer is written; returns the first error. */
int logbuf_wait_all(struct log *log)
{
	mutex_lock(&log->l_io_lock);
	while (log->l_io_busy)
		cond_wait(&log->l_io_done_cond, &log->l_io_lock);
	int err = log->l_io_error;
	mutex_unlock(&log->l_io_lock);
	return err;
}

void *log_io_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "log-io");
	struct log *log = arg;
	mutex_lock(&log->l_io_lock);
	for (;;) {
		while (!log->l_io_busy && !log->l_io_stop)
			cond_wait(&log->l_io_cond, &log->l_io_lock);
		if (!log->l_io_busy && log->l_io_stop)
			break;
		struct logbuf *b = &log->l_bufs[log->l_io_queue[log->l_io_next_io]];
		b->b_state = LB_WRITING;
		int err = log->l_io_error;
		mutex_unlock(&log->l_io_lock);
		/* after an error nothing more is written (G5) */
		if (!err && !log_is_shutdown(log))
			err = log_write_record(log, b, false);
		else if (!err)
			err = -EIO;
		mutex_lock(&log->l_io_lock);
		if (err && !log->l_io_error)
			log->l_io_error = err;
		logbuf_free(log, b);
		log->l_io_next_io = (log->l_io_next_io + 1) % log->l_nbufs;
		if (--log->l_io_busy == 0)
			cond_broadcast(&log->l_io_done_cond);
	}
	mutex_unlock(&log->l_io_lock);
	return NULL;
}

/*
 * Reserve the place of the next record of nbytes at the head. Only the
 * holder of l_pusher_lock (the push thread, or a force pushing on its own
 * thread) and unmount, after the push thread stopped, place records, so
 * placement and l_prev_crc follow the order of the chain.
 */
int log_place_record(struct log *log, struct logbuf *b, uint32_t len)
{
	uint64_t nbb = 1 + DIV_ROUND_UP((uint64_t)len, LOG_BB_SIZE);
	int err = 0;
	mutex_lock(&log->l_space_lock);
	if (log->l_head_pos + nbb > log->l_durable_tail + log->l_bbs) {
		/* I2/I3 broken: the accounting let a checkpoint outgrow its charge */
		err = -ENOSPC;
	} else {
		b->b_pos = log->l_head_pos;
		log->l_head_pos += nbb;
	}
	mutex_unlock(&log->l_space_lock);
	if (err)
		msg_err("log: no room for a record of %u bytes at the head (space accounting "
			"error)",
			len);
	return err;
}

/*
 * The clean-unmount record: every item is written back (the AIL is empty),
 * so after a data-device flush the record's tail is its own position.
 */
int log_write_unmount(struct log *log)
{
	int err = ail_flush_for_tail(log); /* I6 */
	if (err)
		return err;
	struct logbuf *b = logbuf_get(log);
	err = log_place_record(log, b, 0);
	if (!err) {
		log_fill_header(log, b, LOG_REC_UNMOUNT, 0, 0, b->b_pos, 0);
		err = log_write_record(log, b, true);
	}
	logbuf_put(log, b);
	return err;
}
