/*
 * dev.c - the generic device layer: counters, latency model, fault
 * injection, flush elision, failure counting and shared flushes (dev.h,
 * F1-F5) around a backend's ops.
 *
 * A flush's life: callers register for sequence d_flush_started + 1 (the
 * next flush to start, F2) and count in d_flush_next; whoever leads it
 * (flush_lead) takes the group, marks it running, samples d_write_gen and
 * calls the backend with no lock held; on completion it publishes
 * d_flush_done, wakes the synchronous callers, completes the queued
 * asynchronous ones, and if asynchronous callers of the next flush are left
 * with no synchronous caller that will lead it, wakes the flusher thread.
 */
#include "dev/dev.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/msg.h"
#include "base/time.h"

/* Taken under any engine or journal lock (the journal's pre-checkpoint
 * flush asks for a ticket under its own locks); never held across I/O. */
static struct lock_class flush_lock_class = LOCK_CLASS(DEV_FLUSH);

void dev_init(struct dev *d, const struct dev_ops *ops, const char *name, uint64_t size,
	      uint32_t sector_size)
{
	memset(d, 0, sizeof(*d));
	d->d_ops = ops;
	snprintf(d->d_name, sizeof(d->d_name), "%s", name);
	d->d_size = size;
	d->d_sector_size = sector_size;
	mutex_init(&d->d_flush_lock, &flush_lock_class);
	cond_init(&d->d_flush_cond);
	cond_init(&d->d_flusher_cond);
	list_init(&d->d_flush_async);
}

/* Returns true if this I/O must fail because of fault injection. */
static bool dev_fault(struct dev *d)
{
	uint64_t at = atomic_load(&d->d_fail_at);
	if (!at)
		return false;
	uint64_t n = atomic_fetch_add(&d->d_io_count, 1) + 1;
	if (n == at || (n > at && atomic_load(&d->d_fail_sticky))) {
		counter_inc(&d->d_errors);
		return true;
	}
	return false;
}

static int dev_check_range(struct dev *d, size_t len, uint64_t off)
{
	if (off > d->d_size || len > d->d_size - off)
		return -EINVAL;
	if ((off | len) & (d->d_sector_size - 1))
		return -EINVAL;
	return 0;
}

int dev_read(struct dev *d, void *buf, size_t len, uint64_t off)
{
	int err = dev_check_range(d, len, off);
	if (err)
		return err;
	if (dev_fault(d))
		return -EIO;
	err = d->d_ops->read(d, buf, len, off);
	if (err) {
		counter_inc(&d->d_errors);
		return err;
	}
	counter_inc(&d->d_reads);
	counter_add(&d->d_read_bytes, len);
	return 0;
}

static void fb_throttle(struct dev *d, size_t len, uint64_t limit);
static void fb_kick(struct dev *d, uint64_t total);

/* The I/O of dev_write, once B2 let it go. */
static int dev_write_io(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags)
{
	if (dev_fault(d)) {
		atomic_fetch_add(&d->d_write_errors, 1);
		return -EIO;
	}
	if (flags & DEV_FUA) {
		uint64_t lat = atomic_load(&d->d_fua_lat_ns);
		if (lat)
			sleep_ns(lat);
	}
	int err = d->d_ops->write(d, buf, len, off, flags);
	if (err) {
		counter_inc(&d->d_errors);
		atomic_fetch_add(&d->d_write_errors, 1);
		return err;
	}
	uint64_t total = 0;
	if (!(flags & DEV_FUA)) {
		/* bytes first: a flush that sees the generation sees them */
		total = atomic_fetch_add(&d->d_write_total, len) + len;
		atomic_fetch_add(&d->d_write_gen, 1);
	}
	counter_inc(&d->d_writes);
	counter_add(&d->d_write_bytes, len);
	if (flags & DEV_FUA)
		counter_inc(&d->d_fua_writes);
	else
		fb_kick(d, total);
	return 0;
}

int dev_write(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags)
{
	int err = dev_check_range(d, len, off);
	if (err)
		return err;
	uint64_t limit = atomic_load(&d->d_fb_limit);
	bool fb = limit && !(flags & (DEV_FUA | DEV_NOTHROTTLE));
	if (fb)
		fb_throttle(d, len, limit); /* B2 */
	return dev_write_io(d, buf, len, off, flags);
}

void dev_note_external_writes(struct dev *d)
{
	atomic_fetch_add(&d->d_write_gen, 1);
}

/*
 * Nothing completed since a flush that covered everything: the call is
 * answered at once. With no flush running and none asked for, it also
 * counts as a flush that started and completed now, so that a ticket taken
 * before it is covered (there was nothing to make durable). d_flush_lock
 * held.
 */
static bool flush_elide(struct dev *d)
{
	if (atomic_load(&d->d_write_gen) != atomic_load(&d->d_flushed_gen))
		return false;
	if (!d->d_flush_running && !d->d_flush_next)
		d->d_flush_done = ++d->d_flush_started;
	counter_inc(&d->d_flushes_elided);
	return true;
}

static void count_group(struct dev *d, unsigned n)
{
	unsigned b = n <= 1 ? 0 : n <= 2 ? 1 : n <= 4 ? 2 : n <= 8 ? 3 : n <= 16 ? 4 : 5;
	counter_inc(&d->d_flush_group[b]);
	counter_add(&d->d_flush_callers, n);
}

/* The injected flush fault: is this the flush that must fail? */
static bool dev_flush_fault(struct dev *d)
{
	uint64_t n = atomic_load(&d->d_flush_fail_in);
	while (n && !atomic_compare_exchange_weak(&d->d_flush_fail_in, &n, n - 1))
		;
	if (n == 1) {
		counter_inc(&d->d_errors);
		return true;
	}
	return false;
}

/* The flush itself, no lock held: latency, fault injection, backend. A
 * failure is counted before the flush is marked done (F4). */
static int flush_backend(struct dev *d, uint64_t gen, uint64_t bytes)
{
	assert_none_held(LOCK_RANK_DEV_FLUSH, LOCK_RANK_DEV_FLUSH);
	int err = 0;
	if (dev_fault(d) || dev_flush_fault(d)) {
		err = -EIO;
	} else {
		uint64_t lat = atomic_load(&d->d_flush_lat_ns);
		if (lat)
			sleep_ns(lat);
		if ((err = d->d_ops->flush(d)))
			counter_inc(&d->d_errors);
	}
	if (err) {
		atomic_fetch_add(&d->d_write_errors, 1);
		atomic_fetch_add(&d->d_flush_errors, 1); /* F6 */
		return err;
	}
	counter_inc(&d->d_flushes);
	uint64_t cur = atomic_load(&d->d_flushed_total);
	while (cur < bytes && !atomic_compare_exchange_weak(&d->d_flushed_total, &cur, bytes))
		;
	atomic_store(&d->d_flush_bytes_last, cur < bytes ? bytes - cur : 0);
	cur = atomic_load(&d->d_flushed_gen);
	while (cur < gen && !atomic_compare_exchange_weak(&d->d_flushed_gen, &cur, gen))
		;
	return 0;
}

static void *flusher_thread(void *arg);

/* Async callers are queued for the next flush and nobody will lead it: the
 * flusher thread does (F4). d_flush_lock held. */
static void flusher_kick(struct dev *d)
{
	assert_locked(&d->d_flush_lock);
	if (!d->d_flusher_started) {
		d->d_flusher_started = true;
		if (pthread_create(&d->d_flusher, NULL, flusher_thread, d))
			panic("dev: cannot start the flusher thread of %s", d->d_name);
	}
	cond_signal(&d->d_flusher_cond);
}

/*
 * Lead the next flush (none is running). Called and returns with
 * d_flush_lock held; drops it for the I/O and to run the completed
 * asynchronous callers' functions. Returns the flush's result.
 */
static int flush_lead(struct dev *d)
{
	assert_locked(&d->d_flush_lock);
	BUG_ON(d->d_flush_running || d->d_flush_done != d->d_flush_started);
	uint64_t seq = ++d->d_flush_started;
	unsigned group = d->d_flush_next;
	d->d_flush_next = d->d_flush_next_sync = 0;
	d->d_flush_running = true;
	/* every caller of seq registered before this point: their writes
	 * completed before the sample, which the backend flush follows */
	uint64_t gen = atomic_load(&d->d_write_gen);
	uint64_t bytes = atomic_load(&d->d_write_total);
	bool elide = gen == atomic_load(&d->d_flushed_gen);
	d->d_flush_bytes = bytes;
	mutex_unlock(&d->d_flush_lock);

	int err = elide ? 0 : flush_backend(d, gen, bytes);
	if (elide)
		counter_add(&d->d_flushes_elided, group);
	else
		count_group(d, group);

	struct list done = LIST_INIT(done);
	mutex_lock(&d->d_flush_lock);
	d->d_flush_running = false;
	d->d_flush_done = seq;
	if (err)
		d->d_flush_failed = seq;
	struct dev_flush_waiter *w, *wt;
	list_for_each_entry_safe (w, wt, &d->d_flush_async, link)
		if (w->seq <= seq)
			list_move_tail(&w->link, &done);
	cond_broadcast(&d->d_flush_cond);
	/* callers of seq + 1 are queued: a synchronous one leads it, else the
	 * flusher thread */
	if (!list_empty(&d->d_flush_async) && !d->d_flush_next_sync)
		flusher_kick(d);
	mutex_unlock(&d->d_flush_lock);
	list_for_each_entry_safe (w, wt, &done, link) {
		list_del(&w->link);
		w->fn(w, err);
	}
	mutex_lock(&d->d_flush_lock);
	return err;
}

static void *flusher_thread(void *arg)
{
	struct dev *d = arg;
	pthread_setname_np(pthread_self(), "dev-flush");
	mutex_lock(&d->d_flush_lock);
	while (!d->d_flusher_stop) {
		if (!d->d_flush_running && !list_empty(&d->d_flush_async)) {
			counter_inc(&d->d_flush_async_led);
			flush_lead(d);
			continue;
		}
		cond_wait(&d->d_flusher_cond, &d->d_flush_lock);
	}
	mutex_unlock(&d->d_flush_lock);
	return NULL;
}

int dev_flush(struct dev *d)
{
	mutex_lock(&d->d_flush_lock);
	if (flush_elide(d)) {
		mutex_unlock(&d->d_flush_lock);
		return 0;
	}
	uint64_t seq = d->d_flush_started + 1; /* F2: never the running one */
	d->d_flush_next++;
	d->d_flush_next_sync++;
	bool led = false;
	while (d->d_flush_done < seq) {
		if (!d->d_flush_running) {
			/* nobody leads seq yet (done < seq and none running
			 * means seq is next): this thread does */
			flush_lead(d);
			led = true;
			continue;
		}
		cond_wait(&d->d_flush_cond, &d->d_flush_lock);
	}
	int err = d->d_flush_failed >= seq ? -EIO : 0; /* F3 */
	mutex_unlock(&d->d_flush_lock);
	if (!led)
		counter_inc(&d->d_flush_waits);
	return err;
}

int dev_flush_async(struct dev *d, struct dev_flush_waiter *w, bool may_lead)
{
	mutex_lock(&d->d_flush_lock);
	if (flush_elide(d)) {
		mutex_unlock(&d->d_flush_lock);
		return 0;
	}
	w->seq = d->d_flush_started + 1;
	d->d_flush_next++;
	list_add_tail(&w->link, &d->d_flush_async);
	bool lead = !d->d_flush_running && may_lead;
	if (lead)
		flush_lead(d); /* completes w on this thread */
	else if (!d->d_flush_running)
		flusher_kick(d);
	else
		counter_inc(&d->d_flush_waits);
	mutex_unlock(&d->d_flush_lock);
	return 1;
}

/* ---- flush-behind (dev.h, B1-B3) ---- */

/* Unflushed bytes now: what completed writes added that no completed
 * flush covered (0 while a flush sampled writes newer than total). */
static uint64_t fb_held(struct dev *d, uint64_t total)
{
	uint64_t flushed = atomic_load(&d->d_flushed_total);
	return total > flushed ? total - flushed : 0;
}

/* Queue the flush-behind waiter for the next flush (F2), for the flusher
 * thread to lead unless a flush is running (its leader hands on). */
static void fb_queue_locked(struct dev *d)
{
	assert_locked(&d->d_flush_lock);
	d->d_fb_waiter.seq = d->d_flush_started + 1;
	d->d_flush_next++;
	list_add_tail(&d->d_fb_waiter.link, &d->d_flush_async);
	if (!d->d_flush_running)
		flusher_kick(d);
	else
		counter_inc(&d->d_flush_waits);
	counter_inc(&d->d_fb_flushes);
}

/*
 * The flush asked for by B1 completed (its failure, if any, is counted
 * already, F4). Writes that crossed the bound while it was queued asked
 * for none, and it may not have covered them (elided, or started before
 * they completed): if the bound is passed still, the next flush is asked
 * for at once rather than at the next write, which may never come; else
 * the next write past the bound may ask. Never again after a failure: a
 * dead device would be asked forever. Runs on the thread that led the
 * flush, no device lock held.
 */
static void fb_done(struct dev_flush_waiter *w, int err)
{
	struct dev *d = container_of(w, struct dev, d_fb_waiter);
	mutex_lock(&d->d_flush_lock);
	uint64_t bound = atomic_load(&d->d_fb_bound);
	if (!err && bound && fb_held(d, atomic_load(&d->d_write_total)) >= bound) {
		fb_queue_locked(d);
	} else {
		atomic_store(&d->d_fb_queued, false);
		cond_broadcast(&d->d_flush_cond); /* dev_close waits for it */
	}
	mutex_unlock(&d->d_flush_lock);
}

/* B1, after a write without FUA completed with the device's write total
 * at total: past the bound, a flush is asked for, nobody waits for it. */
static void fb_kick(struct dev *d, uint64_t total)
{
	uint64_t held = fb_held(d, total);
	uint64_t max = atomic_load(&d->d_unflushed_max);
	while (max < held && !atomic_compare_exchange_weak(&d->d_unflushed_max, &max, held))
		;
	uint64_t bound = atomic_load(&d->d_fb_bound);
	if (!bound || held < bound || atomic_exchange(&d->d_fb_queued, true))
		return;
	d->d_fb_waiter.fn = fb_done;
	mutex_lock(&d->d_flush_lock);
	if (flush_elide(d)) {
		atomic_store(&d->d_fb_queued, false); /* nothing to flush after all */
		cond_broadcast(&d->d_flush_cond);
	} else {
		fb_queue_locked(d);
	}
	mutex_unlock(&d->d_flush_lock);
}

/*
 * B2, before a write of len bytes without FUA. What it would leave in the
 * cache is the unflushed bytes, what completed writes put there, plus len.
 * Over the limit, it waits until flushes made durable enough of that: the
 * flush under way when it sampled that much, else the next one (dev_flush,
 * F2: it covers everything completed before the call). Then it goes, after
 * one wait at most, even if writes that passed meanwhile keep the cache
 * over: a writer never waits for another that waits, and the bytes by
 * which the cache can pass the limit are those of the writes that run at
 * once. A flush that fails ends the wait all the same: it is counted (B3),
 * and the write goes on.
 */
static void fb_throttle(struct dev *d, size_t len, uint64_t limit)
{
	uint64_t total = atomic_load(&d->d_write_total);
	uint64_t held = fb_held(d, total);
	if (!held || held + len <= limit)
		return;
	uint64_t t0 = now_ns();
	/* flushed_total must reach need: everything completed but what fits,
	 * or all of it when even that is not enough */
	uint64_t need = total - held + MIN(held + len - limit, held);
	mutex_lock(&d->d_flush_lock);
	if (d->d_flush_running && d->d_flush_bytes >= need) {
		uint64_t seq = d->d_flush_started;
		while (d->d_flush_done < seq)
			cond_wait(&d->d_flush_cond, &d->d_flush_lock);
	}
	bool more = atomic_load(&d->d_flushed_total) < need;
	mutex_unlock(&d->d_flush_lock);
	if (more)
		dev_flush(d); /* a failure is counted (F4): the verifier moves */
	counter_inc(&d->d_fb_throttles);
	counter_add(&d->d_fb_throttle_ns, now_ns() - t0);
}

void dev_set_flush_behind(struct dev *d, uint64_t bound, uint64_t limit)
{
	atomic_store(&d->d_fb_limit, bound ? MAX(limit, bound) : 0);
	atomic_store(&d->d_fb_bound, bound);
	/* the high-water mark is of what the bound now in force let pass */
	atomic_store(&d->d_unflushed_max, fb_held(d, atomic_load(&d->d_write_total)));
}

uint64_t dev_flush_ticket(struct dev *d)
{
	mutex_lock(&d->d_flush_lock);
	uint64_t t = d->d_flush_started + 1;
	mutex_unlock(&d->d_flush_lock);
	return t;
}

bool dev_flush_covered(struct dev *d, uint64_t ticket)
{
	mutex_lock(&d->d_flush_lock);
	bool yes = d->d_flush_done >= ticket && d->d_flush_failed < ticket;
	mutex_unlock(&d->d_flush_lock);
	return yes;
}

bool dev_flush_failed_since(struct dev *d, uint64_t ticket)
{
	mutex_lock(&d->d_flush_lock);
	bool yes = d->d_flush_failed >= ticket; /* the newest that failed */
	mutex_unlock(&d->d_flush_lock);
	return yes;
}

unsigned dev_flush_queued(struct dev *d)
{
	mutex_lock(&d->d_flush_lock);
	unsigned n = d->d_flush_next;
	mutex_unlock(&d->d_flush_lock);
	return n;
}

void dev_close(struct dev *d)
{
	if (!d)
		return;
	mutex_lock(&d->d_flush_lock);
	while (atomic_load(&d->d_fb_queued)) /* B1's flush: the flusher thread leads it */
		cond_wait(&d->d_flush_cond, &d->d_flush_lock);
	BUG_ON(!list_empty(&d->d_flush_async) || d->d_flush_running);
	d->d_flusher_stop = true;
	cond_signal(&d->d_flusher_cond);
	mutex_unlock(&d->d_flush_lock);
	if (d->d_flusher_started)
		pthread_join(d->d_flusher, NULL);
	mutex_destroy(&d->d_flush_lock);
	cond_destroy(&d->d_flush_cond);
	cond_destroy(&d->d_flusher_cond);
	d->d_ops->destroy(d);
}

void dev_set_latency(struct dev *d, uint64_t flush_ns, uint64_t fua_ns)
{
	atomic_store(&d->d_flush_lat_ns, flush_ns);
	atomic_store(&d->d_fua_lat_ns, fua_ns);
}

void dev_inject_fault(struct dev *d, uint64_t nth, bool sticky)
{
	atomic_store(&d->d_fail_at, 0);
	atomic_store(&d->d_io_count, 0);
	atomic_store(&d->d_fail_sticky, sticky);
	atomic_store(&d->d_fail_at, nth);
}

uint64_t dev_io_count(const struct dev *d)
{
	return atomic_load(&((struct dev *)d)->d_io_count);
}

void dev_inject_flush_fault(struct dev *d, uint64_t nth)
{
	atomic_store(&d->d_flush_fail_in, nth);
}

uint64_t dev_write_errors(const struct dev *d)
{
	return atomic_load(&((struct dev *)d)->d_write_errors);
}

void dev_stats(struct dev *d, const char *prefix, const struct stat_sink *sink)
{
	stat_emitf(sink, prefix, "reads", counter_get(&d->d_reads));
	stat_emitf(sink, prefix, "writes", counter_get(&d->d_writes));
	stat_emitf(sink, prefix, "read_bytes", counter_get(&d->d_read_bytes));
	stat_emitf(sink, prefix, "write_bytes", counter_get(&d->d_write_bytes));
	stat_emitf(sink, prefix, "fua_writes", counter_get(&d->d_fua_writes));
	stat_emitf(sink, prefix, "flushes", counter_get(&d->d_flushes));
	stat_emitf(sink, prefix, "flushes_elided", counter_get(&d->d_flushes_elided));
	stat_emitf(sink, prefix, "flush_callers", counter_get(&d->d_flush_callers));
	stat_emitf(sink, prefix, "flush_waits", counter_get(&d->d_flush_waits));
	stat_emitf(sink, prefix, "flush_async_led", counter_get(&d->d_flush_async_led));
	static const char *const group[] = {"flush_group_1", "flush_group_2",  "flush_group_4",
					    "flush_group_8", "flush_group_16", "flush_group_more"};
	for (unsigned i = 0; i < ARRAY_SIZE(group); i++)
		stat_emitf(sink, prefix, group[i], counter_get(&d->d_flush_group[i]));
	stat_emitf(sink, prefix, "flush_behind_flushes", counter_get(&d->d_fb_flushes));
	stat_emitf(sink, prefix, "flush_behind_throttles", counter_get(&d->d_fb_throttles));
	stat_emitf(sink, prefix, "flush_behind_throttle_ns", counter_get(&d->d_fb_throttle_ns));
	stat_emitf(sink, prefix, "errors", counter_get(&d->d_errors));
	stat_emitf(sink, prefix, "write_errors", dev_write_errors(d));
	stat_gaugef(sink, prefix, "direct_io", d->d_direct_io);
	stat_emitf(sink, prefix, "bounced_bytes", counter_get(&d->d_bounced_bytes));
	uint64_t held = atomic_load(&d->d_write_total) - atomic_load(&d->d_flushed_total);
	stat_gaugef(sink, prefix, "unflushed_bytes", (int64_t)held > 0 ? held : 0);
	stat_gaugef(sink, prefix, "unflushed_bytes_max", atomic_load(&d->d_unflushed_max));
	stat_gaugef(sink, prefix, "flush_bytes_last", atomic_load(&d->d_flush_bytes_last));
	stat_gaugef(sink, prefix, "flush_behind_bound", atomic_load(&d->d_fb_bound));
}
