/*
 * data_item.c - file data in the journal (see data_item.h).
 *
 * Liveness: l_data_live maps a 4 KiB block number to what the log holds of
 * it (struct data_live, under l_data_lock):
 *   dl_pending  images and cancels committed whose checkpoint is not yet
 *               durable: the block is live, whatever else holds;
 *   dl_pos      start position of the newest durable checkpoint holding an
 *               image of it (0: none the log may replay);
 *   dl_gen      bumped by every image logged; a cancel notes it, and when
 *               the cancel is durable it clears dl_pos only if no image came
 *               after it.
 * The block is live while dl_pending > 0 or dl_pos >= the durable tail.
 * Entries of dead blocks go when a lookup finds them dead, and in sweeps
 * once the map grows past DATA_SWEEP_AT.
 *
 * Recovery: pass 1 notes, per block, the ordinal (among data items, in log
 * order) of its last cancel; pass 2 writes each image block by block to the
 * data device, skipping the blocks a later cancel covers, and drops any
 * cached metadata block it overwrites (an older metadata image of a block
 * since freed and reused for data: the free cancelled it anyway).
 */
#include "log/data_item.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/mem.h"
#include "base/msg.h"
#include "log/log_priv.h"

#define DATA_BLOCK     4096u
#define DATA_SWEEP_AT  65536u

/*
 * Two references keep an item: its transaction's (dropped by release) and
 * the journal's (taken by pin, dropped by unpin). The checkpoint may be
 * durable, and unpinned, before the committing thread has released the
 * item, so whichever comes last frees it.
 */
struct data_item {
	struct log_item di_item;
	uint64_t di_daddr;
	uint32_t di_len;
	bool di_cancel;
	bool di_pinned; /* set by pin, on the committing thread */
	_Atomic int di_refs;
	uint8_t *di_data; /* the image until it is formatted; NULL for a cancel */
};

struct data_live {
	uint64_t dl_pos;
	uint64_t dl_gen;
	uint64_t dl_cancel_gen; /* dl_gen when the newest cancel was logged */
	uint32_t dl_pending;
};

static struct data_item *to_dip(struct log_item *lip)
{
	return container_of(lip, struct data_item, di_item);
}

static uint64_t first_block(uint64_t daddr)
{
	return daddr / DATA_BLOCK;
}

static uint64_t end_block(uint64_t daddr, uint64_t len)
{
	return (daddr + len + DATA_BLOCK - 1) / DATA_BLOCK;
}

/* The durable tail's position (l_space_lock, taken alone). */
static uint64_t durable_tail(struct log *log)
{
	mutex_lock(&log->l_space_lock);
	uint64_t t = log->l_durable_tail;
	mutex_unlock(&log->l_space_lock);
	return t;
}

static bool is_live(const struct data_live *e, uint64_t dtail)
{
	return e->dl_pending || (e->dl_pos && e->dl_pos >= dtail);
}

/* Drop the entry of blk if it is dead (l_data_lock held). */
static void gc_one(struct log *log, uint64_t blk, struct data_live *e, uint64_t dtail)
{
	assert_locked(&log->l_data_lock);
	if (!is_live(e, dtail)) {
		hashmap_remove(&log->l_data_live, blk);
		free(e);
	}
}

static void sweep(struct log *log, uint64_t dtail)
{
	uint64_t dead[256];
	size_t it = 0, n;
	uint64_t k;
	void *v;
	do {
		n = 0;
		it = 0;
		while (n < ARRAY_SIZE(dead) && hashmap_next(&log->l_data_live, &it, &k, &v))
			if (!is_live(v, dtail))
				dead[n++] = k;
		for (size_t i = 0; i < n; i++)
			free(hashmap_remove(&log->l_data_live, dead[i]));
	} while (n == ARRAY_SIZE(dead));
}

bool data_live(struct log *log, uint64_t daddr, uint64_t len)
{
	if (!atomic_load(&log->l_data_nlive))
		return false;
	uint64_t dtail = durable_tail(log);
	bool live = false;
	mutex_lock(&log->l_data_lock);
	for (uint64_t b = first_block(daddr); b < end_block(daddr, len) && !live; b++) {
		struct data_live *e = hashmap_get(&log->l_data_live, b);
		if (!e)
			continue;
		live = is_live(e, dtail);
		gc_one(log, b, e, dtail);
	}
	atomic_store(&log->l_data_nlive, log->l_data_live.n);
	mutex_unlock(&log->l_data_lock);
	return live;
}

/* The entry of blk, made if missing (l_data_lock held). */
static struct data_live *entry(struct log *log, uint64_t blk)
{
	assert_locked(&log->l_data_lock);
	struct data_live *e = hashmap_get(&log->l_data_live, blk);
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		hashmap_put(&log->l_data_live, blk, e);
	}
	return e;
}

static struct data_item *item_new(struct trans *tp, uint64_t daddr, uint64_t len, bool cancel)
{
	struct log *log = trans_log(tp);
	BUG_ON((daddr | len) & (LOG_BB_SIZE - 1) || !len || len > UINT32_MAX);
	struct data_item *di = xcalloc(1, sizeof(*di));
	log_item_init(&di->di_item, log, &data_item_ops);
	di->di_daddr = daddr;
	di->di_len = (uint32_t)len;
	di->di_cancel = cancel;
	atomic_store(&di->di_refs, 1);
	trans_join(tp, &di->di_item);
	trans_dirty(tp, &di->di_item);
	return di;
}

void data_item_log(struct trans *tp, uint64_t daddr, const void *data, uint32_t len)
{
	struct log *log = trans_log(tp);
	struct data_item *di = item_new(tp, daddr, len, false);
	di->di_data = xmalloc(len);
	memcpy(di->di_data, data, len);
	mutex_lock(&log->l_data_lock);
	for (uint64_t b = first_block(daddr); b < end_block(daddr, len); b++) {
		struct data_live *e = entry(log, b);
		e->dl_pending++;
		e->dl_gen++;
	}
	atomic_store(&log->l_data_nlive, log->l_data_live.n);
	mutex_unlock(&log->l_data_lock);
}

uint64_t data_item_cancel(struct trans *tp, uint64_t daddr, uint64_t len)
{
	struct log *log = trans_log(tp);
	if (!atomic_load(&log->l_data_nlive))
		return 0;
	uint64_t dtail = durable_tail(log);
	uint64_t n = 0, run = 0, run_start = 0;
	uint64_t b0 = first_block(daddr), b1 = end_block(daddr, len);
	mutex_lock(&log->l_data_lock);
	for (uint64_t b = b0; b <= b1; b++) {
		struct data_live *e = b < b1 ? hashmap_get(&log->l_data_live, b) : NULL;
		if (e && is_live(e, dtail)) {
			if (!run)
				run_start = b;
			run++;
			e->dl_pending++;
			e->dl_cancel_gen = e->dl_gen;
			continue;
		}
		if (run) {
			/* one cancel per run of live blocks */
			item_new(tp, run_start * DATA_BLOCK, run * DATA_BLOCK, true);
			n += run;
			run = 0;
		}
	}
	mutex_unlock(&log->l_data_lock);
	return n;
}

static size_t data_item_size(struct log_item *lip)
{
	struct data_item *di = to_dip(lip);
	return sizeof(struct log_data_fmt) + (di->di_cancel ? 0 : di->di_len);
}

static void data_item_format(struct log_item *lip, void *buf)
{
	struct data_item *di = to_dip(lip);
	struct log_data_fmt f = {
		.dl_daddr = htole64(di->di_daddr),
		.dl_len = htole32(di->di_len),
		.dl_flags = htole16(di->di_cancel ? LOG_DATA_CANCEL : 0),
	};
	memcpy(buf, &f, sizeof(f));
	if (!di->di_cancel) {
		memcpy((uint8_t *)buf + sizeof(f), di->di_data, di->di_len);
		/* formatted once (never relogged): the CIL holds the copy now */
		free(di->di_data);
		di->di_data = NULL;
	}
}

static void data_item_pin(struct log_item *lip)
{
	struct data_item *di = to_dip(lip);
	di->di_pinned = true;
	atomic_fetch_add(&di->di_refs, 1);
}

static void item_put(struct data_item *di)
{
	if (atomic_fetch_sub(&di->di_refs, 1) == 1) {
		free(di->di_data);
		free(di);
	}
}

/* Durable: the blocks' images (or cancels) count from the checkpoint's
 * start position. */
static void data_item_committed(struct log_item *lip, uint64_t lsn)
{
	struct data_item *di = to_dip(lip);
	struct log *log = lip->li_log;
	uint64_t pos = log_lsn_to_pos(log, lsn);
	mutex_lock(&log->l_data_lock);
	for (uint64_t b = first_block(di->di_daddr); b < end_block(di->di_daddr, di->di_len); b++) {
		struct data_live *e = hashmap_get(&log->l_data_live, b);
		if (!e)
			continue;
		if (!di->di_cancel)
			e->dl_pos = MAX(e->dl_pos, pos);
		else if (e->dl_cancel_gen == e->dl_gen)
			e->dl_pos = 0; /* nothing the log holds of it is replayed any more */
	}
	mutex_unlock(&log->l_data_lock);
}

/* The item's pending counts go: it is durable, abandoned or cancelled. */
static void item_done(struct data_item *di)
{
	struct log *log = di->di_item.li_log;
	uint64_t dtail = durable_tail(log);
	mutex_lock(&log->l_data_lock);
	for (uint64_t b = first_block(di->di_daddr); b < end_block(di->di_daddr, di->di_len); b++) {
		struct data_live *e = hashmap_get(&log->l_data_live, b);
		if (!e || !e->dl_pending)
			continue; /* a cancel of a block that was not live at the time */
		e->dl_pending--;
		gc_one(log, b, e, dtail);
	}
	if (log->l_data_live.n > DATA_SWEEP_AT)
		sweep(log, dtail);
	atomic_store(&log->l_data_nlive, log->l_data_live.n);
	mutex_unlock(&log->l_data_lock);
}

static void data_item_unpin(struct log_item *lip, bool aborted)
{
	struct data_item *di = to_dip(lip);
	item_done(di);
	item_put(di);
}

static int data_item_push(struct log_item *lip, uint64_t lsn)
{
	return LOG_PUSH_OK; /* never in the AIL (LOG_ITEM_NO_AIL) */
}

static void data_item_release(struct log_item *lip)
{
	struct data_item *di = to_dip(lip);
	if (!di->di_pinned)
		item_done(di); /* the transaction was cancelled: never committed */
	item_put(di);
}

/* ---- recovery ---- */

struct data_rc {
	struct hashmap cancels; /* block -> 1 + ordinal of its last cancel */
	uint64_t ord_scan, ord_apply;
};

static struct data_rc *data_rc(struct log_recovery *rc)
{
	struct data_rc **p = (struct data_rc **)log_recovery_private(rc, LOG_ITEM_DATA);
	if (!*p) {
		*p = xcalloc(1, sizeof(**p));
		hashmap_init(&(*p)->cancels);
	}
	return *p;
}

static int data_fmt(struct log_recovery *rc, const void *img, size_t len,
		    struct log_data_fmt *f)
{
	if (len < sizeof(*f))
		return -EUCLEAN;
	memcpy(f, img, sizeof(*f));
	uint64_t daddr = le64toh(f->dl_daddr), dlen = le32toh(f->dl_len);
	bool cancel = le16toh(f->dl_flags) & LOG_DATA_CANCEL;
	struct dev *ddev = log_recovery_log(rc)->l_ddev;
	if (!dlen || ((daddr | dlen) & (LOG_BB_SIZE - 1)) || daddr > dev_size(ddev) ||
	    dlen > dev_size(ddev) - daddr || len != sizeof(*f) + (cancel ? 0 : dlen)) {
		msg_err("log: a data item at byte %llu (%llu bytes) is malformed or lies outside "
			"the device",
			(unsigned long long)daddr, (unsigned long long)dlen);
		return -EUCLEAN;
	}
	return 0;
}

static int data_item_recover_scan(struct log_recovery *rc, const void *img, size_t len)
{
	struct log_data_fmt f;
	int err = data_fmt(rc, img, len, &f);
	if (err)
		return err;
	struct data_rc *d = data_rc(rc);
	uint64_t ord = ++d->ord_scan;
	if (!(le16toh(f.dl_flags) & LOG_DATA_CANCEL))
		return 0;
	uint64_t daddr = le64toh(f.dl_daddr), dlen = le32toh(f.dl_len);
	for (uint64_t b = first_block(daddr); b < end_block(daddr, dlen); b++)
		hashmap_put(&d->cancels, b, (void *)(uintptr_t)ord);
	return 0;
}

static int data_item_recover(struct log_recovery *rc, const void *img, size_t len)
{
	struct log_data_fmt f;
	int err = data_fmt(rc, img, len, &f);
	if (err)
		return err;
	struct data_rc *d = data_rc(rc);
	uint64_t ord = ++d->ord_apply;
	if (le16toh(f.dl_flags) & LOG_DATA_CANCEL)
		return 0;
	uint64_t daddr = le64toh(f.dl_daddr), dlen = le32toh(f.dl_len);
	const uint8_t *data = (const uint8_t *)img + sizeof(f);
	struct dev *ddev = log_recovery_log(rc)->l_ddev;
	for (uint64_t b = first_block(daddr); b < end_block(daddr, dlen) && !err; b++) {
		uintptr_t cancel = (uintptr_t)hashmap_get(&d->cancels, b);
		if (cancel > ord)
			continue; /* cancelled by a later item */
		uint64_t lo = MAX(daddr, b * DATA_BLOCK), hi = MIN(daddr + dlen, (b + 1) * DATA_BLOCK);
		log_recovery_forget(rc, b * DATA_BLOCK, DATA_BLOCK);
		err = dev_write(ddev, data + (lo - daddr), hi - lo, lo, 0);
	}
	return err;
}

static void data_item_recover_done(struct log_recovery *rc)
{
	struct data_rc **p = (struct data_rc **)log_recovery_private(rc, LOG_ITEM_DATA);
	if (*p) {
		hashmap_destroy(&(*p)->cancels);
		free(*p);
		*p = NULL;
	}
}

const struct log_item_ops data_item_ops = {
	.type = LOG_ITEM_DATA,
	.name = "data",
	.flags = LOG_ITEM_NO_AIL,
	.size = data_item_size,
	.format = data_item_format,
	.pin = data_item_pin,
	.committed = data_item_committed,
	.unpin = data_item_unpin,
	.push = data_item_push,
	.release = data_item_release,
	.recover_scan = data_item_recover_scan,
	.recover = data_item_recover,
	.recover_done = data_item_recover_done,
};
