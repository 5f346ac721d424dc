/*
 * data_item.h - file data in the journal (docs/logged-data.md).
 *
 * A small synchronous write can be made durable by logging its data: the
 * owner writes the data in place as usual (volatile, no flush) and logs the
 * same bytes with data_item_log() in the transaction that commits the
 * write's metadata; the checkpoint's FUA commit record then makes both
 * durable, and recovery writes the logged bytes to their place if the
 * in-place write was lost. No flush of the data device is needed: the
 * transaction can be TRANS_UNORDERED (log.h, G7), since what it points at is
 * in the log itself.
 *
 * A data item is written once and never relogged. It is not written back
 * by the AIL and does not hold the log tail: its data was written in place
 * before its commit, so the flush before any record that moves the tail
 * past its checkpoint (log_priv.h, I1) covers it.
 *
 * While the log may still replay an image of a block (the block is "live":
 * data_live()), replay would put that image over anything written to the
 * block in place since. So:
 *   D1 every later write to a live block is logged too (a newer image, which
 *      replay applies after the older one), or cancelled first: a cancel
 *      (data_item_cancel) makes recovery skip every image of the block
 *      before it in log order;
 *   D2 a transaction holding a cancel is ordered (not TRANS_UNORDERED): the
 *      flush before its checkpoint makes the in-place copies of the images
 *      it cancels durable first, so that the block never falls back to what
 *      it held before them;
 *   D3 a writer that goes around the journal (a pNFS client writing the
 *      device directly) gets its blocks only after a cancel of their live
 *      images is durable.
 * A block stops being live when the durable log tail passes the newest
 * checkpoint with an image of it, or when a cancel logged after its last
 * image is durable.
 *
 * Addresses and lengths are bytes on the data device, multiples of 512.
 */
#ifndef JNFS_LOG_DATA_ITEM_H
#define JNFS_LOG_DATA_ITEM_H

#include "log/log.h"

/* Log len bytes of data at daddr (the caller writes the same bytes there
 * before the transaction commits). */
void data_item_log(struct trans *tp, uint64_t daddr, const void *data, uint32_t len);

/* Cancel the live images of the 4 KiB blocks of [daddr, daddr+len): the
 * transaction must stay ordered (D2). Returns the number of blocks
 * cancelled (0: none was live, nothing was logged). */
uint64_t data_item_cancel(struct trans *tp, uint64_t daddr, uint64_t len);

/* Does [daddr, daddr+len) hold a live block? (Cheap when no data is
 * logged at all.) */
bool data_live(struct log *log, uint64_t daddr, uint64_t len);

extern const struct log_item_ops data_item_ops;

#endif
