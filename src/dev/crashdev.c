/*
 * crashdev.c - the crash device (see crashdev.h for the model).
 *
 * State, all under cd_lock:
 *   cd_inner    the durable content;
 *   cd_overlay  4 KiB pages of the newest unflushed data, with a bitmask of
 *               the sectors they hold; reads patch the inner content with it;
 *   cd_pending  every write since the last flush, in completion order, so a
 *               power cut can choose which of them survive;
 *   cd_events   the recorded stream (CRASHDEV_RECORD).
 * A flush has two steps, as a disk's flush command has a start and an
 * end (dev.h, contract 3):
 *   start  under cd_lock: the writes completed so far are cd_pending[0, n)
 *          and the recorded stream has cd_nevents events;
 *   (the flush is in flight: cd_lock is free, writes complete, the test's
 *          hook runs, crashdev_set_flush_hook)
 *   end    under cd_lock: cd_pending[0, n) are written to the inner device
 *          in order, then the FUA writes that completed meanwhile again on
 *          top (they are newer and already durable); they leave the pending
 *          list, the overlay is rebuilt from what is still pending, and a
 *          FLUSH event is recorded whose tag is the stream length at start.
 * So a write that completed while a flush was in flight is not made durable
 * by it; only a later flush does that. A flush is "becoming durable", and
 * nothing else is.
 */
#include "dev/crashdev.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/hashmap.h"
#include "base/lock.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/rand.h"

#define OVL_PAGE 4096u

struct ovl_page {
	uint64_t valid; /* bit i: sector i of the page holds unflushed data */
	uint8_t data[OVL_PAGE];
};

struct pending_write {
	uint64_t off;
	uint32_t len;
	bool fua;
	uint8_t *data;
};

struct crash_dev {
	struct dev cd_dev;
	struct mutex cd_lock;
	/* held across both steps of a flush: flushes do not overlap (the
	 * generic layer runs one at a time anyway, dev.h F1) */
	struct mutex cd_flush_lock;
	void (*cd_flush_hook)(void *arg);
	void *cd_flush_hook_arg;
	/* set before the device is shared (crashdev_set_write_hook) */
	void (*_Atomic cd_write_hook)(void *arg, uint64_t off, size_t len);
	void *_Atomic cd_write_hook_arg;
	struct dev *cd_inner;
	bool cd_record;
	bool cd_dead;
	struct hashmap cd_overlay; /* page index -> struct ovl_page */
	struct pending_write *cd_pending;
	size_t cd_npending, cd_pending_cap;
	struct crash_event *cd_events;
	size_t cd_nevents, cd_events_cap;
};

static struct lock_class crash_dev_lock_class = LOCK_CLASS(DEV_CRASH);
static struct lock_class crash_flush_lock_class = LOCK_CLASS(DEV_CRASH_FLUSH);

static struct crash_dev *to_cdev(struct dev *d)
{
	return container_of(d, struct crash_dev, cd_dev);
}

static void record(struct crash_dev *c, uint8_t type, uint64_t off, const void *data, size_t len,
		   uint64_t tag)
{
	if (!c->cd_record)
		return;
	if (c->cd_nevents == c->cd_events_cap) {
		c->cd_events_cap = c->cd_events_cap ? c->cd_events_cap * 2 : 1024;
		c->cd_events = xrealloc(c->cd_events, c->cd_events_cap * sizeof(*c->cd_events));
	}
	struct crash_event *e = &c->cd_events[c->cd_nevents++];
	e->type = type;
	e->off = off;
	e->len = (uint32_t)len;
	e->tag = tag;
	e->data = NULL;
	if (len) {
		e->data = xmalloc(len);
		memcpy(e->data, data, len);
	}
}

/* Copy the newest data of [off, off+len) into the overlay. */
static void overlay_write(struct crash_dev *c, const uint8_t *buf, size_t len, uint64_t off)
{
	uint32_t sector = c->cd_dev.d_sector_size;
	while (len) {
		uint64_t idx = off / OVL_PAGE;
		uint32_t in = (uint32_t)(off % OVL_PAGE);
		size_t n = MIN(len, (size_t)(OVL_PAGE - in));
		struct ovl_page *p = hashmap_get(&c->cd_overlay, idx);
		if (!p) {
			p = xcalloc(1, sizeof(*p));
			hashmap_put(&c->cd_overlay, idx, p);
		}
		memcpy(p->data + in, buf, n);
		for (uint32_t s = in / sector; s < (in + n) / sector; s++)
			p->valid |= 1ull << s;
		buf += n;
		off += n;
		len -= n;
	}
}

static void overlay_clear(struct crash_dev *c)
{
	size_t it = 0;
	uint64_t k;
	void *v;
	while (hashmap_next(&c->cd_overlay, &it, &k, &v))
		free(v);
	hashmap_destroy(&c->cd_overlay);
	hashmap_init(&c->cd_overlay);
}

static void pending_clear(struct crash_dev *c)
{
	for (size_t i = 0; i < c->cd_npending; i++)
		free(c->cd_pending[i].data);
	c->cd_npending = 0;
}

static int crash_read(struct dev *d, void *buf, size_t len, uint64_t off)
{
	struct crash_dev *c = to_cdev(d);
	uint32_t sector = d->d_sector_size;
	mutex_lock(&c->cd_lock);
	if (c->cd_dead) {
		mutex_unlock(&c->cd_lock);
		return -EIO;
	}
	int err = dev_read(c->cd_inner, buf, len, off);
	if (!err) {
		uint8_t *out = buf;
		for (uint64_t pos = off; pos < off + len; pos += sector) {
			struct ovl_page *p = hashmap_get(&c->cd_overlay, pos / OVL_PAGE);
			uint32_t s = (uint32_t)(pos % OVL_PAGE) / sector;
			if (p && (p->valid & (1ull << s)))
				memcpy(out + (pos - off), p->data + s * sector, sector);
		}
	}
	mutex_unlock(&c->cd_lock);
	return err;
}

static int crash_write(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags)
{
	struct crash_dev *c = to_cdev(d);
	int err = 0;
	void (*hook)(void *, uint64_t, size_t) = atomic_load(&c->cd_write_hook);
	if (hook)
		hook(atomic_load(&c->cd_write_hook_arg), off, len);
	mutex_lock(&c->cd_lock);
	if (c->cd_dead) {
		err = -EIO;
		goto out_unlock;
	}
	bool fua = (flags & DEV_FUA) != 0;
	if (fua) {
		/* durable now: straight to the inner device */
		err = dev_write(c->cd_inner, buf, len, off, 0);
		if (err)
			goto out_unlock;
	}
	/* The overlay keeps the newest data even for FUA writes, so that older
	 * unflushed data for the same sectors never shadows it. */
	overlay_write(c, buf, len, off);
	if (c->cd_npending == c->cd_pending_cap) {
		c->cd_pending_cap = c->cd_pending_cap ? c->cd_pending_cap * 2 : 64;
		c->cd_pending = xrealloc(c->cd_pending, c->cd_pending_cap * sizeof(*c->cd_pending));
	}
	struct pending_write *pw = &c->cd_pending[c->cd_npending++];
	pw->off = off;
	pw->len = (uint32_t)len;
	pw->fua = fua;
	pw->data = xmalloc(len);
	memcpy(pw->data, buf, len);
	record(c, fua ? CRASH_EV_FUA : CRASH_EV_WRITE, off, buf, len, 0);
out_unlock:
	mutex_unlock(&c->cd_lock);
	return err;
}

/* Write one pending write's data to the inner device. */
static int pending_apply(struct crash_dev *c, const struct pending_write *pw)
{
	return dev_write(c->cd_inner, pw->data, pw->len, pw->off, 0);
}

static int crash_flush(struct dev *d)
{
	struct crash_dev *c = to_cdev(d);
	int err = 0;
	mutex_lock(&c->cd_flush_lock);
	/* start: what has completed so far */
	mutex_lock(&c->cd_lock);
	if (c->cd_dead) {
		mutex_unlock(&c->cd_lock);
		mutex_unlock(&c->cd_flush_lock);
		return -EIO;
	}
	size_t n = c->cd_npending;
	uint64_t start_ev = c->cd_nevents;
	mutex_unlock(&c->cd_lock);

	/* in flight: later writes complete, and are not covered */
	if (c->cd_flush_hook)
		c->cd_flush_hook(c->cd_flush_hook_arg);

	/* end */
	mutex_lock(&c->cd_lock);
	if (c->cd_dead) {
		err = -EIO;
		goto out_unlock;
	}
	for (size_t i = 0; i < n && !err; i++)
		err = pending_apply(c, &c->cd_pending[i]);
	for (size_t i = n; i < c->cd_npending && !err; i++)
		if (c->cd_pending[i].fua)
			err = pending_apply(c, &c->cd_pending[i]);
	if (err)
		goto out_unlock;
	for (size_t i = 0; i < n; i++)
		free(c->cd_pending[i].data);
	memmove(c->cd_pending, c->cd_pending + n, (c->cd_npending - n) * sizeof(*c->cd_pending));
	c->cd_npending -= n;
	overlay_clear(c);
	for (size_t i = 0; i < c->cd_npending; i++)
		overlay_write(c, c->cd_pending[i].data, c->cd_pending[i].len, c->cd_pending[i].off);
	record(c, CRASH_EV_FLUSH, 0, NULL, 0, start_ev);
out_unlock:
	mutex_unlock(&c->cd_lock);
	mutex_unlock(&c->cd_flush_lock);
	return err;
}

int crashdev_drop_unflushed(struct dev *d)
{
	struct crash_dev *c = to_cdev(d);
	if (c->cd_record)
		return -EINVAL;
	/* not in the middle of a flush, which holds indices into cd_pending */
	mutex_lock(&c->cd_flush_lock);
	mutex_lock(&c->cd_lock);
	int n = 0;
	for (size_t i = 0; i < c->cd_npending; i++)
		n += !c->cd_pending[i].fua; /* the FUA ones are on the inner device */
	overlay_clear(c);
	pending_clear(c);
	mutex_unlock(&c->cd_lock);
	mutex_unlock(&c->cd_flush_lock);
	return n;
}

void crashdev_set_flush_hook(struct dev *d, void (*fn)(void *arg), void *arg)
{
	struct crash_dev *c = to_cdev(d);
	mutex_lock(&c->cd_flush_lock);
	c->cd_flush_hook = fn;
	c->cd_flush_hook_arg = arg;
	mutex_unlock(&c->cd_flush_lock);
}

void crashdev_set_write_hook(struct dev *d, void (*fn)(void *arg, uint64_t off, size_t len),
			     void *arg)
{
	struct crash_dev *c = to_cdev(d);
	atomic_store(&c->cd_write_hook_arg, arg);
	atomic_store(&c->cd_write_hook, fn);
}

static void crash_destroy(struct dev *d)
{
	struct crash_dev *c = to_cdev(d);
	overlay_clear(c);
	pending_clear(c);
	free(c->cd_pending);
	for (size_t i = 0; i < c->cd_nevents; i++)
		free(c->cd_events[i].data);
	free(c->cd_events);
	mutex_destroy(&c->cd_lock);
	mutex_destroy(&c->cd_flush_lock);
	free(c);
}

static const struct dev_ops crash_dev_ops = {
	.read = crash_read,
	.write = crash_write,
	.flush = crash_flush,
	.destroy = crash_destroy,
};

int crashdev_create(struct dev *inner, unsigned flags, struct dev **out)
{
	if (inner->d_sector_size > OVL_PAGE || OVL_PAGE / inner->d_sector_size > 64)
		return -EINVAL;
	struct crash_dev *c = xcalloc(1, sizeof(*c));
	dev_init(&c->cd_dev, &crash_dev_ops, "crash", inner->d_size, inner->d_sector_size);
	mutex_init(&c->cd_lock, &crash_dev_lock_class);
	mutex_init(&c->cd_flush_lock, &crash_flush_lock_class);
	c->cd_inner = inner;
	c->cd_record = (flags & CRASHDEV_RECORD) != 0;
	hashmap_init(&c->cd_overlay);
	*out = &c->cd_dev;
	return 0;
}

void crashdev_mark(struct dev *d, uint64_t tag)
{
	struct crash_dev *c = to_cdev(d);
	mutex_lock(&c->cd_lock);
	record(c, CRASH_EV_MARK, 0, NULL, 0, tag);
	mutex_unlock(&c->cd_lock);
}

/*
 * Decide the fate of one unflushed write and apply what survives to img:
 * kept whole (40%), dropped (30%) or torn: each sector kept with even odds.
 */
static void cut_one(struct rng *r, const uint8_t *data, uint32_t len, uint64_t off, struct dev *img,
		    uint32_t sector, struct crash_cut_stats *st)
{
	uint64_t x = rng_below(r, 100);
	if (x < 40) {
		dev_write(img, data, len, off, 0);
		st->kept++;
	} else if (x < 70 || len <= sector) {
		st->dropped++;
	} else {
		for (uint32_t s = 0; s < len; s += sector)
			if (rng_chance(r, 50))
				dev_write(img, data + s, sector, off + s, 0);
		st->torn++;
	}
}

int crashdev_powerfail(struct dev *d, uint64_t seed, struct crash_cut_stats *st)
{
	struct crash_dev *c = to_cdev(d);
	struct crash_cut_stats local = {0};
	struct rng r;
	rng_seed(&r, seed);
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	mutex_lock(&c->cd_lock);
	if (c->cd_dead) {
		mutex_unlock(&c->cd_lock);
		return -EIO;
	}
	for (size_t i = 0; i < c->cd_npending; i++) {
		struct pending_write *pw = &c->cd_pending[i];
		if (pw->fua) {
			/* already durable; re-applied in order so that an older
			 * kept write cannot overwrite it */
			dev_write(c->cd_inner, pw->data, pw->len, pw->off, 0);
			st->kept++;
			continue;
		}
		cut_one(&r, pw->data, pw->len, pw->off, c->cd_inner, d->d_sector_size, st);
	}
	overlay_clear(c);
	pending_clear(c);
	c->cd_dead = true;
	record(c, CRASH_EV_MARK, 0, NULL, 0, UINT64_MAX);
	mutex_unlock(&c->cd_lock);
	msg_debug("crash device: power failure (seed %llu): %llu kept, %llu dropped, %llu torn",
		  (unsigned long long)seed, (unsigned long long)st->kept,
		  (unsigned long long)st->dropped, (unsigned long long)st->torn);
	return 0;
}

size_t crashdev_pending(struct dev *d)
{
	struct crash_dev *c = to_cdev(d);
	mutex_lock(&c->cd_lock);
	size_t n = c->cd_npending;
	mutex_unlock(&c->cd_lock);
	return n;
}

size_t crashdev_nevents(struct dev *d)
{
	struct crash_dev *c = to_cdev(d);
	mutex_lock(&c->cd_lock);
	size_t n = c->cd_nevents;
	mutex_unlock(&c->cd_lock);
	return n;
}

const struct crash_event *crashdev_events(struct dev *d)
{
	return to_cdev(d)->cd_events;
}

void crash_apply_durable(const struct crash_event *ev, size_t from, size_t to, struct dev *img)
{
	for (size_t i = from; i < to; i++)
		if (ev[i].type == CRASH_EV_WRITE || ev[i].type == CRASH_EV_FUA)
			dev_write(img, ev[i].data, ev[i].len, ev[i].off, 0);
}

void crash_apply_cut(const struct crash_event *ev, size_t from, size_t point, struct dev *img,
		     uint32_t sector, uint64_t seed, struct crash_cut_stats *st)
{
	struct rng r;
	rng_seed(&r, seed);
	for (size_t i = from; i < point; i++) {
		if (ev[i].type == CRASH_EV_FUA) {
			dev_write(img, ev[i].data, ev[i].len, ev[i].off, 0);
			st->kept++;
		} else if (ev[i].type == CRASH_EV_WRITE) {
			cut_one(&r, ev[i].data, ev[i].len, ev[i].off, img, sector, st);
		}
	}
	/* the write in flight at the cut, FUA or not, may land in part */
	if (ev[point].type == CRASH_EV_WRITE || ev[point].type == CRASH_EV_FUA)
		cut_one(&r, ev[point].data, ev[point].len, ev[point].off, img, sector, st);
}

size_t crash_replay_to(struct crash_replay *rp, size_t point, uint8_t *durable)
{
	const struct crash_event *ev = rp->ev;
	BUG_ON(point < rp->scan);
	for (; rp->scan < point; rp->scan++) {
		if (ev[rp->scan].type != CRASH_EV_FLUSH)
			continue;
		/* the flush started when the stream had tag events */
		size_t upto = (size_t)ev[rp->scan].tag;
		for (size_t j = rp->durable; j < upto; j++)
			if (ev[j].type == CRASH_EV_WRITE || ev[j].type == CRASH_EV_FUA)
				memcpy(durable + ev[j].off, ev[j].data, ev[j].len);
		if (upto > rp->durable)
			rp->durable = upto;
	}
	return rp->durable;
}
