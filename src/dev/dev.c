/*
 * dev.c - the generic device layer: counters, latency model, fault
 * injection and flush elision around a backend's ops.
 */
#include "dev/dev.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/msg.h"
#include "base/time.h"

/* Held only to take or give back a flush slot. */
static struct lock_class slot_lock_class = LOCK_CLASS_INIT("dev.flush_slots", 950);
_Static_assert(DEV_FLUSH_SLOTS <= 32, "a bit per flush slot");

void dev_init(struct dev *d, const struct dev_ops *ops, const char *name, uint64_t size,
	      uint32_t sector_size)
{
	memset(d, 0, sizeof(*d));
	d->d_ops = ops;
	snprintf(d->d_name, sizeof(d->d_name), "%s", name);
	d->d_size = size;
	d->d_sector_size = sector_size;
	mutex_init(&d->d_slot_lock, &slot_lock_class);
	cond_init(&d->d_slot_cond);
	d->d_slots_free = (uint32_t)((1ull << DEV_FLUSH_SLOTS) - 1);
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

int dev_write(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags)
{
	int err = dev_check_range(d, len, off);
	if (err)
		return err;
	if (dev_fault(d)) {
		atomic_fetch_add(&d->d_write_errors, 1);
		return -EIO;
	}
	if (flags & DEV_FUA) {
		uint64_t lat = atomic_load(&d->d_fua_lat_ns);
		if (lat)
			sleep_ns(lat);
	}
	err = d->d_ops->write(d, buf, len, off, flags);
	if (err) {
		counter_inc(&d->d_errors);
		atomic_fetch_add(&d->d_write_errors, 1);
		return err;
	}
	if (!(flags & DEV_FUA))
		atomic_fetch_add(&d->d_write_gen, 1);
	counter_inc(&d->d_writes);
	counter_add(&d->d_write_bytes, len);
	if (flags & DEV_FUA)
		counter_inc(&d->d_fua_writes);
	return 0;
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

/* A free flush slot, waiting for one if all are taken. */
static unsigned slot_get(struct dev *d)
{
	mutex_lock(&d->d_slot_lock);
	while (!d->d_slots_free)
		cond_wait(&d->d_slot_cond, &d->d_slot_lock);
	unsigned slot = (unsigned)__builtin_ctz(d->d_slots_free);
	d->d_slots_free &= ~(1u << slot);
	mutex_unlock(&d->d_slot_lock);
	return slot;
}

static void slot_put(struct dev *d, unsigned slot)
{
	mutex_lock(&d->d_slot_lock);
	d->d_slots_free |= 1u << slot;
	cond_signal(&d->d_slot_cond);
	mutex_unlock(&d->d_slot_lock);
}

/*
 * A flush runs in a slot (dev.h: flush slots). Its failure is counted
 * before the slot is free again: the next flush in the slot uses the same
 * handle, which no longer reports the error this one took, so it must not
 * be able to return 0 before the failure is in dev_write_errors.
 */
int dev_flush(struct dev *d)
{
	uint64_t gen = atomic_load(&d->d_write_gen);
	if (gen == atomic_load(&d->d_flushed_gen)) {
		/* nothing completed since a flush that covered it all */
		counter_inc(&d->d_flushes_elided);
		return 0;
	}
	uint64_t lat = atomic_load(&d->d_flush_lat_ns);
	if (lat)
		sleep_ns(lat);
	unsigned slot = slot_get(d);
	int err = 0;
	if (dev_fault(d) || dev_flush_fault(d))
		err = -EIO;
	else if ((err = d->d_ops->flush(d, slot)))
		counter_inc(&d->d_errors);
	if (err)
		atomic_fetch_add(&d->d_write_errors, 1);
	slot_put(d, slot);
	if (err)
		return err;
	counter_inc(&d->d_flushes);
	uint64_t cur = atomic_load(&d->d_flushed_gen);
	while (cur < gen && !atomic_compare_exchange_weak(&d->d_flushed_gen, &cur, gen))
		;
	return 0;
}

void dev_close(struct dev *d)
{
	if (d) {
		mutex_destroy(&d->d_slot_lock);
		cond_destroy(&d->d_slot_cond);
		d->d_ops->destroy(d);
	}
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
	stat_emitf(sink, prefix, "errors", counter_get(&d->d_errors));
	stat_emitf(sink, prefix, "write_errors", dev_write_errors(d));
}
