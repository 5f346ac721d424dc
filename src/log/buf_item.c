/*
 * buf_item.c - the buffer item (see buf_item.h).
 *
 * Image: struct log_buf_fmt, then the chunks of bl_map in order; a cancel
 * has flag LOG_BUF_CANCEL and no chunks.
 *
 * Recovery pass 1 records, per block, the last checkpoint that cancelled
 * it; pass 2 applies an image only if it comes from a later checkpoint.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/mem.h"
#include "base/msg.h"
#include "log/buf_item.h"
#include "log/log_priv.h"

static struct lock_class buf_lock_class = LOCK_CLASS(LOG_BUF_ITEM);

static struct buf_item *to_bip(struct log_item *lip)
{
	return container_of(lip, struct buf_item, bi_item);
}

static size_t buf_item_size(struct log_item *lip)
{
	struct buf_item *bip = to_bip(lip);
	if (bip->bi_flags & BI_STALE)
		return sizeof(struct log_buf_fmt);
	return sizeof(struct log_buf_fmt) +
	       (size_t)__builtin_popcount(bip->bi_dirty) * LOG_BUF_CHUNK;
}

static void buf_item_format(struct log_item *lip, void *buf)
{
	struct buf_item *bip = to_bip(lip);
	struct log_buf_fmt f = {
		.bl_daddr = htole64(bip->bi_daddr),
		.bl_map = htole32((bip->bi_flags & BI_STALE) ? 0 : bip->bi_dirty),
		.bl_flags = htole16((bip->bi_flags & BI_STALE) ? LOG_BUF_CANCEL : 0),
	};
	memcpy(buf, &f, sizeof(f));
	if (bip->bi_flags & BI_STALE)
		return;
	uint8_t *out = (uint8_t *)buf + sizeof(f);
	for (unsigned c = 0; c < LOG_BUF_CHUNKS; c++) {
		if (bip->bi_dirty & (1u << c)) {
			memcpy(out, bip->bi_data + c * LOG_BUF_CHUNK, LOG_BUF_CHUNK);
			out += LOG_BUF_CHUNK;
		}
	}
}

static void buf_item_pin(struct log_item *lip)
{
	atomic_fetch_add(&to_bip(lip)->bi_pin, 1);
}

static void buf_item_unpin(struct log_item *lip, bool aborted)
{
	int old = atomic_fetch_sub(&to_bip(lip)->bi_pin, 1);
	BUG_ON(old <= 0);
}

/*
 * Write-back holds the block locked until the write completed (I5): a change
 * committed after the copy, and the AIL move of its checkpoint, then
 * happen after the write, so the flush that precedes any record carrying a
 * tail past the old position covers it.
 */
static int buf_item_push(struct log_item *lip, uint64_t lsn)
{
	struct buf_item *bip = to_bip(lip);
	if (!mutex_trylock(&bip->bi_lock))
		return LOG_PUSH_LOCKED;
	if (atomic_load(&bip->bi_pin)) {
		mutex_unlock(&bip->bi_lock);
		return LOG_PUSH_PINNED;
	}
	if (bip->bi_flags & BI_STALE) {
		/* freed: its home may hold someone else's data by now */
		mutex_unlock(&bip->bi_lock);
		return LOG_PUSH_OK;
	}
	uint8_t *copy = xmalloc_aligned(4096, LOG_BUF_BLOCK);
	memcpy(copy, bip->bi_data, LOG_BUF_BLOCK);
	if (bip->bi_ops && bip->bi_ops->bo_stamp)
		bip->bi_ops->bo_stamp(bip, copy, lsn);
	/* locked: must not wait for other clients' data to flush (dev.h, B2) */
	int err = dev_write(log_ddev(lip->li_log), copy, LOG_BUF_BLOCK, bip->bi_daddr,
			    DEV_NOTHROTTLE);
	if (!err)
		bip->bi_dirty = 0;
	mutex_unlock(&bip->bi_lock);
	free(copy);
	if (err)
		msg_err("log: writing back block at byte %llu failed: %s",
			(unsigned long long)bip->bi_daddr, strerror(-err));
	return err ? err : LOG_PUSH_OK;
}

static void buf_item_release(struct log_item *lip)
{
	mutex_unlock(&to_bip(lip)->bi_lock);
}

/* Recovery: per block, the index of the last checkpoint that cancelled it. */
static int buf_item_recover_scan(struct log_recovery *rc, const void *img, size_t len)
{
	struct log_buf_fmt f;
	if (len < sizeof(f))
		return -EUCLEAN;
	memcpy(&f, img, sizeof(f));
	if (!(le16toh(f.bl_flags) & LOG_BUF_CANCEL))
		return 0;
	struct hashmap **cancels = (struct hashmap **)log_recovery_private(rc, LOG_ITEM_BUF);
	if (!*cancels) {
		*cancels = xmalloc(sizeof(**cancels));
		hashmap_init(*cancels);
	}
	hashmap_put(*cancels, le64toh(f.bl_daddr), (void *)(uintptr_t)log_recovery_ckpt(rc));
	return 0;
}

static int buf_item_recover(struct log_recovery *rc, const void *img, size_t len)
{
	struct log_buf_fmt f;
	if (len < sizeof(f))
		return -EUCLEAN;
	memcpy(&f, img, sizeof(f));
	uint64_t daddr = le64toh(f.bl_daddr);
	uint32_t map = le32toh(f.bl_map);
	if (le16toh(f.bl_flags) & LOG_BUF_CANCEL)
		return 0;
	if (len != sizeof(f) + (size_t)__builtin_popcount(map) * LOG_BUF_CHUNK ||
	    (daddr & (LOG_BUF_BLOCK - 1)))
		return -EUCLEAN;
	struct hashmap **cancels = (struct hashmap **)log_recovery_private(rc, LOG_ITEM_BUF);
	if (*cancels) {
		uintptr_t last = (uintptr_t)hashmap_get(*cancels, daddr);
		if (last >= log_recovery_ckpt(rc))
			return 0;
	}
	int err = 0;
	uint8_t *blk = log_recovery_block(rc, daddr, LOG_BUF_BLOCK, &err);
	if (!blk)
		return err;
	const uint8_t *in = (const uint8_t *)img + sizeof(f);
	for (unsigned c = 0; c < LOG_BUF_CHUNKS; c++) {
		if (map & (1u << c)) {
			memcpy(blk + c * LOG_BUF_CHUNK, in, LOG_BUF_CHUNK);
			in += LOG_BUF_CHUNK;
		}
	}
	return 0;
}

static void buf_item_recover_done(struct log_recovery *rc)
{
	struct hashmap **cancels = (struct hashmap **)log_recovery_private(rc, LOG_ITEM_BUF);
	if (*cancels) {
		hashmap_destroy(*cancels);
		free(*cancels);
		*cancels = NULL;
	}
}

const struct log_item_ops buf_item_ops = {
	.type = LOG_ITEM_BUF,
	.name = "buffer",
	.size = buf_item_size,
	.format = buf_item_format,
	.pin = buf_item_pin,
	.unpin = buf_item_unpin,
	.push = buf_item_push,
	.release = buf_item_release,
	.recover_scan = buf_item_recover_scan,
	.recover = buf_item_recover,
	.recover_done = buf_item_recover_done,
};

void buf_item_init(struct buf_item *bip, struct log *log, uint64_t daddr, uint8_t *data,
		   const struct buf_item_ops *ops)
{
	memset(bip, 0, sizeof(*bip));
	log_item_init(&bip->bi_item, log, &buf_item_ops);
	mutex_init(&bip->bi_lock, &buf_lock_class);
	bip->bi_daddr = daddr;
	bip->bi_data = data;
	bip->bi_ops = ops;
}

void buf_item_set_lock_class(struct buf_item *bip, const struct lock_class *cls)
{
	mutex_set_class(&bip->bi_lock, cls);
}

/*
 * The owner destroys an item nobody else can reach any more, typically
 * after log_unmount() freed the log: so the check reads the item's own
 * fields and never follows li_log (the AIL lock is gone with the log).
 */
void buf_item_destroy(struct buf_item *bip)
{
	BUG_ON(atomic_load(&bip->bi_pin) || bip->bi_item.li_ail_pos || bip->bi_item.li_pushing);
	mutex_destroy(&bip->bi_lock);
}

bool buf_item_busy(struct buf_item *bip)
{
	return atomic_load(&bip->bi_pin) || log_item_in_ail(&bip->bi_item);
}

void buf_item_join(struct trans *tp, struct buf_item *bip)
{
	if (trans_has_item(tp, &bip->bi_item))
		return;
	mutex_lock(&bip->bi_lock);
	trans_join(tp, &bip->bi_item);
}

void buf_item_log(struct trans *tp, struct buf_item *bip, uint32_t off, uint32_t len)
{
	BUG_ON(!len || off + len > LOG_BUF_BLOCK || off + len < off);
	assert_locked(&bip->bi_lock);
	unsigned first = off / LOG_BUF_CHUNK, last = (off + len - 1) / LOG_BUF_CHUNK;
	for (unsigned c = first; c <= last; c++)
		bip->bi_dirty |= 1u << c;
	bip->bi_flags &= ~BI_STALE;
	trans_dirty(tp, &bip->bi_item);
}

void buf_item_cancel(struct trans *tp, struct buf_item *bip)
{
	assert_locked(&bip->bi_lock);
	bip->bi_flags |= BI_STALE;
	bip->bi_dirty = 0;
	trans_dirty(tp, &bip->bi_item);
}
