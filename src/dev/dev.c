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

void dev_init(struct dev *d, const struct dev_ops *ops, const char *name, uint64_t size,
	      uint32_t sector_size)
{
	memset(d, 0, sizeof(*d));
	d->d_ops = ops;
	snprintf(d->d_name, sizeof(d->d_name), "%s", name);
	d->d_size = size;
	d->d_sector_size = sector_size;
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
	if (dev_fault(d))
		return -EIO;
	if (flags & DEV_FUA) {
		uint64_t lat = atomic_load(&d->d_fua_lat_ns);
		if (lat)
			sleep_ns(lat);
	}
	err = d->d_ops->write(d, buf, len, off, flags);
	if (err) {
		counter_inc(&d->d_errors);
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

int dev_flush(struct dev *d)
{
	uint64_t gen = atomic_load(&d->d_write_gen);
	if (gen == atomic_load(&d->d_flushed_gen)) {
		/* nothing completed since a flush that covered it all */
		counter_inc(&d->d_flushes_elided);
		return 0;
	}
	if (dev_fault(d))
		return -EIO;
	uint64_t lat = atomic_load(&d->d_flush_lat_ns);
	if (lat)
		sleep_ns(lat);
	int err = d->d_ops->flush(d);
	if (err) {
		counter_inc(&d->d_errors);
		return err;
	}
	counter_inc(&d->d_flushes);
	uint64_t cur = atomic_load(&d->d_flushed_gen);
	while (cur < gen && !atomic_compare_exchange_weak(&d->d_flushed_gen, &cur, gen))
		;
	return 0;
}

void dev_close(struct dev *d)
{
	if (d)
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
}
