/*
 * buf_item.h - the buffer item: a 4 KiB metadata block whose changes are
 * logged as dirty 128-byte chunks.
 *
 * The caller owns the block's memory (bi_data) and the struct; the item
 * guards both with bi_lock, which a transaction holds from buf_item_join()
 * until commit or cancel. Write-back (the AIL) copies the block under the
 * lock, lets the owner stamp the copy (CRC, LSN: the engine's verifiers),
 * and writes it to bi_daddr on the log's data device.
 *
 * The dirty chunk map is cumulative from one write-back copy to the next, so
 * every checkpoint holding the block carries all of its changes since the
 * last write-back; recovery applies images oldest first.
 *
 * A freed block is cancelled in the transaction that frees it: it is never
 * written back again, and recovery skips its images in that checkpoint and
 * all earlier ones, so a reused block is not overwritten with stale
 * metadata. A cancelled block that is allocated again must be logged in
 * full (buf_item_log(tp, bip, 0, LOG_BUF_BLOCK)).
 *
 * Lifetime: the owner may free the struct only when buf_item_busy() is
 * false (not pinned, not in the AIL, not being pushed).
 */
#ifndef JNFS_LOG_BUF_ITEM_H
#define JNFS_LOG_BUF_ITEM_H

#include "base/lock.h"
#include "log/log.h"

struct buf_item;

struct buf_item_ops {
	/* Before write-back: stamp the copy (e.g. CRC and LSN). Optional. */
	void (*bo_stamp)(struct buf_item *bip, void *copy, uint64_t lsn);
};

struct buf_item {
	struct log_item bi_item;
	struct mutex bi_lock; /* rank 250, several at once in daddr order */
	uint64_t bi_daddr;    /* home: byte offset on the data device */
	uint8_t *bi_data;     /* LOG_BUF_BLOCK bytes, owned by the caller */
	uint32_t bi_dirty;    /* chunks changed since the last write-back copy */
	unsigned bi_flags;
	_Atomic int bi_pin;
	const struct buf_item_ops *bi_ops;
	void *bi_private; /* the owner's */
};

#define BI_STALE 0x1u /* cancelled: never written back */

void buf_item_init(struct buf_item *bip, struct log *log, uint64_t daddr, uint8_t *data,
		   const struct buf_item_ops *ops);
void buf_item_destroy(struct buf_item *bip);
/* The owner's lock class for bi_lock (only while nobody holds it). */
void buf_item_set_lock_class(struct buf_item *bip, const struct lock_class *cls);
bool buf_item_busy(struct buf_item *bip);

/* Lock the block and join it to tp (the transaction unlocks it). Joining a
 * block the transaction already holds does nothing. */
void buf_item_join(struct trans *tp, struct buf_item *bip);
/* Record that bytes [off, off+len) changed; the block must be joined. */
void buf_item_log(struct trans *tp, struct buf_item *bip, uint32_t off, uint32_t len);
/* The block is freed in this transaction. */
void buf_item_cancel(struct trans *tp, struct buf_item *bip);

#endif
