/*
 * test_dev.c - the device layer: memory and file backends, counters, the
 * latency model, fault injection, flush elision, and the crash device's
 * contract (unflushed writes may be lost or torn; flushed and FUA writes
 * never are; the recording rebuilds what powerfail can leave), and
 * flush-behind (dev.h, B1-B3).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/rand.h"
#include "base/time.h"
#include "check.h"
#include "dev/crashdev.h"
#include "dev/dev.h"
#include "flush_gate.h"

static void fill(uint8_t *b, size_t n, uint8_t v)
{
	memset(b, v, n);
}

static uint64_t dev_stat(struct dev *d, const char *name)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	dev_stats(d, "dev", &s);
	return stat_table_get(&t, name);
}

static void test_mem(void)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(1 << 20, NULL, &d));
	uint8_t buf[8192], out[8192];
	fill(buf, sizeof(buf), 0xab);
	CHECK_OK(dev_write(d, buf, 8192, 4096 + 512, 0));
	CHECK_OK(dev_read(d, out, 8192, 4096 + 512));
	CHECK(memcmp(buf, out, 8192) == 0);
	CHECK_OK(dev_read(d, out, 512, 0));
	for (int i = 0; i < 512; i++)
		CHECK_EQ(out[i], 0);
	/* bounds and alignment */
	CHECK_EQ(dev_write(d, buf, 512, (1 << 20) - 256, 0), -EINVAL);
	CHECK_EQ(dev_write(d, buf, 100, 0, 0), -EINVAL);
	CHECK_EQ(dev_read(d, buf, 512, 1 << 20), -EINVAL);

	/* copy-on-write clone: reads the base, writes stay private */
	uint8_t *img = malloc(1 << 20);
	dev_mem_copy_out(d, img);
	struct dev *c;
	CHECK_OK(dev_mem_create(1 << 20, img, &c));
	CHECK_OK(dev_read(c, out, 8192, 4096 + 512));
	CHECK(memcmp(buf, out, 8192) == 0);
	fill(buf, 512, 0x11);
	CHECK_OK(dev_write(c, buf, 512, 4096 + 1024, 0));
	CHECK_OK(dev_read(c, out, 1024, 4096 + 512));
	CHECK_EQ(out[0], 0xab);
	CHECK_EQ(out[512], 0x11);
	CHECK_EQ(img[4096 + 1024], 0xab);
	dev_close(c);
	free(img);

	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	dev_stats(d, "dev", &s);
	CHECK_EQ(stat_table_get(&t, "dev.writes"), 1);
	CHECK_EQ(stat_table_get(&t, "dev.write_bytes"), 8192);
	CHECK_EQ(stat_table_get(&t, "dev.reads"), 2);
	dev_close(d);
	TEST_PASS("mem");
}

static void test_file(int direct)
{
	char path[] = "/tmp/jnfs-test-dev-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	unlink(path);
	struct dev *d;
	int err =
		dev_file_open(path, DEV_OPEN_CREATE | (direct ? DEV_OPEN_DIRECT : 0), 4 << 20, &d);
	if (err == -EINVAL && direct) {
		/* filesystem without O_DIRECT (tmpfs): nothing to test */
		unlink(path);
		TEST_PASS("file (direct: not supported here)");
		return;
	}
	CHECK_OK(err);
	CHECK_EQ(dev_size(d), 4 << 20);
	uint8_t *buf = malloc(65536 + 1), *out = malloc(65536);
	/* unaligned buffer address on purpose: O_DIRECT must bounce */
	fill(buf + 1, 65536, 0x5a);
	CHECK_OK(dev_write(d, buf + 1, 65536, 512, 0));
	CHECK_OK(dev_write(d, buf + 1, 4096, 1 << 20, DEV_FUA));
	struct stat_table t0;
	struct stat_sink s0 = stat_sink_table(&t0);
	dev_stats(d, "dev", &s0);
	CHECK_EQ(stat_table_get(&t0, "dev.unflushed_bytes"), 65536); /* FUA: durable */
	CHECK_OK(dev_flush(d));
	CHECK_OK(dev_read(d, out, 65536, 512));
	CHECK(memcmp(buf + 1, out, 65536) == 0);
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	dev_stats(d, "dev", &s);
	CHECK_EQ(stat_table_get(&t, "dev.writes"), 2);
	CHECK_EQ(stat_table_get(&t, "dev.fua_writes"), 1);
	CHECK_EQ(stat_table_get(&t, "dev.flushes"), 1);
	/* O_DIRECT where the filesystem allows it (else it says so and uses
	 * the page cache); 512-byte sectors at 512-byte offsets either way */
	CHECK_EQ(stat_table_get(&t, "dev.direct_io"), direct);
	CHECK_EQ(stat_table_get(&t, "dev.unflushed_bytes"), 0);
	/* both writes came from buf + 1: bounced with direct I/O; the read
	 * into out too where malloc's alignment is not enough */
	if (direct)
		CHECK(stat_table_get(&t, "dev.bounced_bytes") >= 65536 + 4096);
	else
		CHECK_EQ(stat_table_get(&t, "dev.bounced_bytes"), 0);
	dev_close(d);
	/* reopen read-only: content persists, writes refused */
	CHECK_OK(dev_file_open(path, DEV_OPEN_RDONLY, 0, &d));
	CHECK_OK(dev_read(d, out, 4096, 1 << 20));
	CHECK(memcmp(buf + 1, out, 4096) == 0);
	CHECK_EQ(dev_write(d, out, 512, 0, 0), -EROFS);
	dev_close(d);
	unlink(path);
	free(buf);
	free(out);
	TEST_PASS(direct ? "file (direct)" : "file");
}

static void test_generic(void)
{
	struct dev *d;
	CHECK_OK(dev_mem_create(1 << 20, NULL, &d));
	uint8_t buf[512] = {1};
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);

	/* flush elision: nothing written since the last flush */
	CHECK_OK(dev_flush(d));
	CHECK_OK(dev_write(d, buf, 512, 0, 0));
	CHECK_OK(dev_flush(d));
	CHECK_OK(dev_flush(d));
	CHECK_OK(dev_write(d, buf, 512, 0, DEV_FUA)); /* FUA needs no flush */
	CHECK_OK(dev_flush(d));
	dev_stats(d, "dev", &s);
	CHECK_EQ(stat_table_get(&t, "dev.flushes"), 1);
	CHECK_EQ(stat_table_get(&t, "dev.flushes_elided"), 3);

	/* latency model: a flush and a FUA write take at least the delay */
	dev_set_latency(d, 3 * NSEC_PER_MSEC, 2 * NSEC_PER_MSEC);
	CHECK_OK(dev_write(d, buf, 512, 0, 0));
	uint64_t t0 = now_ns();
	CHECK_OK(dev_flush(d));
	CHECK(now_ns() - t0 >= 3 * NSEC_PER_MSEC);
	t0 = now_ns();
	CHECK_OK(dev_write(d, buf, 512, 0, DEV_FUA));
	CHECK(now_ns() - t0 >= 2 * NSEC_PER_MSEC);
	dev_set_latency(d, 0, 0);

	/* fault injection: exactly the 3rd I/O fails, then sticky from the 2nd */
	uint64_t werr = dev_write_errors(d);
	dev_inject_fault(d, 3, false);
	CHECK_OK(dev_write(d, buf, 512, 0, 0));
	CHECK_OK(dev_read(d, buf, 512, 0));
	CHECK_EQ(dev_write(d, buf, 512, 0, 0), -EIO);
	CHECK_OK(dev_write(d, buf, 512, 0, 0));
	CHECK_EQ(dev_io_count(d), 4);
	dev_inject_fault(d, 2, true);
	CHECK_OK(dev_read(d, buf, 512, 0));
	CHECK_EQ(dev_read(d, buf, 512, 0), -EIO);
	CHECK_EQ(dev_flush(d), -EIO);
	CHECK_EQ(dev_write(d, buf, 512, 0, DEV_FUA), -EIO);
	dev_inject_fault(d, 0, false);
	CHECK_OK(dev_write(d, buf, 512, 0, 0));
	/* failed writes and flushes count, failed reads do not */
	CHECK_EQ(dev_write_errors(d) - werr, 3);

	/* the flush fault: the 2nd flush that reaches the backend fails, an
	 * elided one does not count; after it the write is still not durable,
	 * so the next flush reaches the backend */
	dev_inject_flush_fault(d, 2);
	CHECK_OK(dev_flush(d));
	CHECK_OK(dev_flush(d)); /* elided */
	CHECK_OK(dev_write(d, buf, 512, 0, 0));
	CHECK_EQ(dev_flush(d), -EIO);
	CHECK_EQ(dev_write_errors(d) - werr, 4);
	t = (struct stat_table){0};
	dev_stats(d, "dev", &s);
	uint64_t flushes = stat_table_get(&t, "dev.flushes");
	CHECK_OK(dev_flush(d));
	t = (struct stat_table){0};
	dev_stats(d, "dev", &s);
	CHECK_EQ(stat_table_get(&t, "dev.flushes"), flushes + 1);
	CHECK_EQ(stat_table_get(&t, "dev.write_errors") - werr, 4);
	CHECK_OK(dev_flush(d)); /* elided: the fault was used */
	dev_close(d);
	TEST_PASS("generic");
}

/* Every sector of [off, off+len) reads as one of the allowed byte values. */
static void check_sectors(struct dev *d, uint64_t off, size_t len, const uint8_t *allowed,
			  int nallowed)
{
	uint8_t sec[512];
	for (uint64_t p = off; p < off + len; p += 512) {
		CHECK_OK(dev_read(d, sec, 512, p));
		int ok = 0;
		for (int a = 0; a < nallowed && !ok; a++) {
			ok = 1;
			for (int i = 0; i < 512; i++)
				if (sec[i] != allowed[a])
					ok = 0;
		}
		CHECK(ok);
	}
}

static void test_crash(void)
{
	int saw_old = 0, saw_new = 0, saw_torn = 0;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		struct dev *inner, *cd;
		CHECK_OK(dev_mem_create(1 << 20, NULL, &inner));
		CHECK_OK(crashdev_create(inner, 0, &cd));
		uint8_t buf[16384];
		fill(buf, sizeof(buf), 0x01);
		CHECK_OK(dev_write(cd, buf, 16384, 0, 0));
		CHECK_OK(dev_flush(cd)); /* durable: 0x01 */
		fill(buf, sizeof(buf), 0x02);
		CHECK_OK(dev_write(cd, buf, 16384, 0, 0)); /* volatile */
		fill(buf, sizeof(buf), 0x03);
		CHECK_OK(dev_write(cd, buf, 4096, 65536, DEV_FUA)); /* durable now */
		CHECK_OK(dev_write(cd, buf, 4096, 0, 0));	    /* volatile over 0x02 */
		/* reads see the newest data */
		check_sectors(cd, 0, 4096, (uint8_t[]){0x03}, 1);
		check_sectors(cd, 4096, 12288, (uint8_t[]){0x02}, 1);
		CHECK_EQ(crashdev_pending(cd), 3);
		struct crash_cut_stats st;
		CHECK_OK(crashdev_powerfail(cd, seed, &st));
		CHECK_EQ(st.kept + st.dropped + st.torn, 3);
		uint8_t dummy[512];
		CHECK_EQ(dev_read(cd, dummy, 512, 0), -EIO);
		dev_close(cd);
		/* the inner device holds what survived */
		check_sectors(inner, 65536, 4096, (uint8_t[]){0x03}, 1);
		check_sectors(inner, 0, 4096, (uint8_t[]){0x01, 0x02, 0x03}, 3);
		check_sectors(inner, 4096, 12288, (uint8_t[]){0x01, 0x02}, 2);
		uint8_t sec[512];
		int olds = 0, news = 0;
		for (uint64_t p = 4096; p < 16384; p += 512) {
			CHECK_OK(dev_read(inner, sec, 512, p));
			olds += sec[0] == 0x01;
			news += sec[0] == 0x02;
		}
		saw_old |= news == 0;
		saw_new |= olds == 0;
		saw_torn |= olds && news;
		dev_close(inner);
	}
	/* over 200 seeds every outcome happens */
	CHECK(saw_old && saw_new && saw_torn);
	TEST_PASS("crash powerfail");
}

static void test_crash_record(void)
{
	struct dev *inner, *cd;
	CHECK_OK(dev_mem_create(1 << 20, NULL, &inner));
	CHECK_OK(crashdev_create(inner, CRASHDEV_RECORD, &cd));
	uint8_t buf[4096];
	for (int i = 0; i < 10; i++) {
		fill(buf, sizeof(buf), (uint8_t)(i + 1));
		CHECK_OK(dev_write(cd, buf, 4096, (uint64_t)i * 4096, i % 3 == 2 ? DEV_FUA : 0));
		if (i % 4 == 3)
			CHECK_OK(dev_flush(cd));
		crashdev_mark(cd, (uint64_t)i);
	}
	size_t n = crashdev_nevents(cd);
	const struct crash_event *ev = crashdev_events(cd);
	CHECK_EQ(n, 10 + 2 + 10);
	/* replaying everything as durable gives what the device shows */
	struct dev *img;
	CHECK_OK(dev_mem_create(1 << 20, NULL, &img));
	crash_apply_durable(ev, 0, n, img);
	uint8_t a[4096], b[4096];
	for (int i = 0; i < 10; i++) {
		CHECK_OK(dev_read(cd, a, 4096, (uint64_t)i * 4096));
		CHECK_OK(dev_read(img, b, 4096, (uint64_t)i * 4096));
		CHECK(memcmp(a, b, 4096) == 0);
	}
	dev_close(img);
	/* a cut after the last flush: earlier blocks durable, later ones maybe */
	size_t covered = 0; /* the last flush covered the events before this */
	for (size_t i = 0; i < n; i++)
		if (ev[i].type == CRASH_EV_FLUSH)
			covered = (size_t)ev[i].tag;
	for (uint64_t seed = 0; seed < 20; seed++) {
		CHECK_OK(dev_mem_create(1 << 20, NULL, &img));
		crash_apply_durable(ev, 0, covered, img);
		struct crash_cut_stats st = {0};
		crash_apply_cut(ev, covered, n - 1, img, 512, seed, &st);
		for (int i = 0; i < 8; i++)
			check_sectors(img, (uint64_t)i * 4096, 4096, (uint8_t[]){(uint8_t)(i + 1)},
				      1);
		check_sectors(img, 8 * 4096, 4096, (uint8_t[]){9}, 1);	   /* FUA: durable */
		check_sectors(img, 9 * 4096, 4096, (uint8_t[]){0, 10}, 2); /* unflushed */
		dev_close(img);
	}
	dev_close(cd);
	dev_close(inner);
	TEST_PASS("crash record");
}

/* ---- flush-behind (dev.h, B1-B3) ---- */

#define FB_BOUND (64u << 10)
#define FB_LIMIT (256u << 10)
#define FB_BLK	 4096u

struct fb_caller {
	pthread_t th;
	struct dev *d;
	uint64_t off;
	bool flush; /* then dev_flush */
	unsigned flags;
	_Atomic int returned;
	int err;
};

static void *fb_caller_fn(void *arg)
{
	struct fb_caller *c = arg;
	uint8_t buf[FB_BLK];
	fill(buf, sizeof(buf), 0x5a);
	c->err = dev_write(c->d, buf, FB_BLK, c->off, c->flags);
	if (!c->err && c->flush)
		c->err = dev_flush(c->d);
	atomic_store(&c->returned, 1);
	return NULL;
}

/* Write n blocks of FB_BLK from block *next on, each returning 0. */
static void fb_write(struct dev *d, unsigned *next, unsigned n)
{
	uint8_t buf[FB_BLK];
	fill(buf, sizeof(buf), 0x3c);
	for (unsigned i = 0; i < n; i++, (*next)++)
		CHECK_OK(dev_write(d, buf, FB_BLK, (uint64_t)*next * FB_BLK, 0));
}

/*
 * Held flushes: a flush-behind flush is asked for once B bytes are
 * unflushed and the writer does not wait for it (B1); while it is held,
 * writes up to H go on without waiting and ask for no second one; the
 * write that would pass H waits for it (B2), and only that one. A
 * synchronous caller whose write came after the flush-behind flush started
 * is not served by it (F2), and leads the next one (F5). A failed
 * flush-behind flush is counted (B3, F4) and fails nobody else (F3). A
 * write with DEV_NOTHROTTLE never waits (B2).
 */
static void test_flush_behind_held(void)
{
	struct dev *inner, *cd;
	CHECK_OK(dev_mem_create(4 << 20, NULL, &inner));
	CHECK_OK(crashdev_create(inner, 0, &cd));
	struct gate g = GATE_INIT;
	crashdev_set_flush_hook(cd, gate_hook, &g);
	dev_set_flush_behind(cd, FB_BOUND, FB_LIMIT);
	CHECK_EQ(dev_stat(cd, "dev.flush_behind_bound"), FB_BOUND);
	unsigned next = 0;

	/* under the bound: nothing */
	fb_write(cd, &next, FB_BOUND / FB_BLK - 1);
	CHECK_EQ(dev_stat(cd, "dev.flush_behind_flushes"), 0);
	CHECK_EQ(gate_entered(&g), 0);
	/* at the bound: a flush is asked for, and held; the writer returned */
	fb_write(cd, &next, 1);
	CHECK_EQ(dev_stat(cd, "dev.flush_behind_flushes"), 1);
	WAIT_FOR(gate_entered(&g) == 1);

	/* a synchronous caller after it started: not served by it (F2) */
	struct fb_caller sc = {.d = cd, .off = 3u << 20, .flush = true};
	CHECK_OK(pthread_create(&sc.th, NULL, fb_caller_fn, &sc));
	WAIT_FOR(dev_flush_queued(cd) == 1);

	/* up to the limit, no writer waits and no other flush is asked for */
	fb_write(cd, &next, (FB_LIMIT - FB_BOUND) / FB_BLK - 1); /* + sc's block: H */
	CHECK_EQ(dev_stat(cd, "dev.unflushed_bytes"), FB_LIMIT);
	CHECK_EQ(dev_stat(cd, "dev.flush_behind_flushes"), 1);
	CHECK_EQ(dev_stat(cd, "dev.flush_behind_throttles"), 0);

	/* past it: the writer waits for the held flush, which is enough */
	struct fb_caller tw = {.d = cd, .off = (uint64_t)next++ * FB_BLK};
	CHECK_OK(pthread_create(&tw.th, NULL, fb_caller_fn, &tw));
	usleep(20000); /* room to be wrong: tw must still wait */
	CHECK_EQ(atomic_load(&tw.returned), 0);
	CHECK_EQ(atomic_load(&sc.returned), 0);
	gate_release(&g, 1);
	CHECK_OK(pthread_join(tw.th, NULL));
	CHECK_OK(tw.err);
	CHECK_EQ(dev_stat(cd, "dev.flush_behind_throttles"), 1);
	CHECK_EQ(dev_stat(cd, "dev.flush_bytes_last"), FB_BOUND);
	/* sc leads flush 2 (F5); it returns only once that completed */
	WAIT_FOR(gate_entered(&g) == 2);
	usleep(20000);
	CHECK_EQ(atomic_load(&sc.returned), 0);
	gate_release(&g, 100);
	CHECK_OK(pthread_join(sc.th, NULL));
	CHECK_OK(sc.err);
	/* the writer that waited asked for the next flush-behind flush, since
	 * B was unflushed again; it may have been sc's flush or one after */
	WAIT_FOR(dev_stat(cd, "dev.unflushed_bytes") < FB_BOUND);
	CHECK(dev_stat(cd, "dev.unflushed_bytes_max") <= FB_LIMIT);

	/* a failed flush-behind flush: counted, and only that one fails */
	uint64_t werr = dev_write_errors(cd);
	dev_inject_flush_fault(cd, 1);
	fb_write(cd, &next, FB_BOUND / FB_BLK);
	WAIT_FOR(dev_write_errors(cd) == werr + 1);
	CHECK_OK(dev_flush(cd));
	CHECK_EQ(dev_write_errors(cd), werr + 1);
	CHECK_EQ(crashdev_pending(cd), 0);

	/* with that flush held again, a write with DEV_NOTHROTTLE (the
	 * journal's) passes H without waiting, and counts */
	struct gate g2 = GATE_INIT;
	crashdev_set_flush_hook(cd, gate_hook, &g2);
	uint64_t throttles = dev_stat(cd, "dev.flush_behind_throttles");
	fb_write(cd, &next, FB_LIMIT / FB_BLK);
	WAIT_FOR(gate_entered(&g2) == 1);
	struct fb_caller jw = {.d = cd, .off = (uint64_t)next++ * FB_BLK, .flags = DEV_NOTHROTTLE};
	CHECK_OK(pthread_create(&jw.th, NULL, fb_caller_fn, &jw));
	WAIT_FOR(atomic_load(&jw.returned)); /* times out if it waits */
	CHECK_OK(pthread_join(jw.th, NULL));
	CHECK_OK(jw.err);
	CHECK_EQ(dev_stat(cd, "dev.flush_behind_throttles"), throttles);
	CHECK_EQ(dev_stat(cd, "dev.unflushed_bytes"), FB_LIMIT + FB_BLK);
	gate_release(&g2, 100);
	dev_close(cd);
	dev_close(inner);
	TEST_PASS("flush-behind: held flushes, the limit, F2, a failed flush, DEV_NOTHROTTLE");
}

/* The crash device's write hook: the first write of FB_LIMIT - 32 KiB
 * is held until released. */
struct held_write {
	struct gate g;
	_Atomic bool taken;
};

static void hold_big_write(void *arg, uint64_t off, size_t len)
{
	(void)off;
	struct held_write *h = arg;
	if (len == FB_LIMIT - (32u << 10) && !atomic_exchange(&h->taken, true))
		gate_hook(&h->g);
}

struct big_writer {
	struct dev *d;
	int err;
};

static void *big_writer_fn(void *arg)
{
	struct big_writer *b = arg;
	size_t len = FB_LIMIT - (32u << 10);
	uint8_t *buf = xmalloc_aligned(4096, len);
	fill(buf, len, 0x77);
	b->err = dev_write(b->d, buf, len, 1u << 20, 0);
	free(buf);
	return NULL;
}

/*
 * B2 counts what completed writes left unflushed, not writes still under
 * way: with 32 KiB unflushed and a write of H - 32 KiB held in flight, a
 * write of 4 KiB neither waits nor counts as throttled (a flush started
 * now would not cover the held write: F2).
 */
static void test_flush_behind_inflight(void)
{
	struct dev *inner, *cd;
	CHECK_OK(dev_mem_create(4 << 20, NULL, &inner));
	CHECK_OK(crashdev_create(inner, 0, &cd));
	dev_set_flush_behind(cd, FB_BOUND, FB_LIMIT);
	unsigned next = 0;
	fb_write(cd, &next, (32u << 10) / FB_BLK);
	struct held_write h = {.g = GATE_INIT};
	crashdev_set_write_hook(cd, hold_big_write, &h);
	struct big_writer b = {.d = cd};
	pthread_t bt;
	CHECK_OK(pthread_create(&bt, NULL, big_writer_fn, &b));
	WAIT_FOR(gate_entered(&h.g) == 1);
	fb_write(cd, &next, 1);
	CHECK_EQ(dev_stat(cd, "dev.flush_behind_throttles"), 0);
	gate_release(&h.g, 1);
	CHECK_OK(pthread_join(bt, NULL));
	CHECK_OK(b.err);
	crashdev_set_write_hook(cd, NULL, NULL);
	dev_close(cd);
	dev_close(inner);
	TEST_PASS("flush-behind: writes under way do not count toward the limit");
}

/*
 * A stream of N x B bytes from one writer: flush-behind flushes start
 * (B1), the unflushed bytes never pass H (B2), every flush covers at most
 * H, and so the flushes are at least (N x B - H) / H. Off (bound 0), the
 * same stream asks for no flush at all.
 */
static void test_flush_behind_stream(void)
{
	for (int on = 0; on <= 1; on++) {
		struct dev *d;
		CHECK_OK(dev_mem_create(32 << 20, NULL, &d));
		if (on)
			dev_set_flush_behind(d, FB_BOUND, FB_LIMIT);
		unsigned next = 0;
		uint64_t total = 0;
		for (int round = 0; round < 8; round++) {
			fb_write(d, &next, (4u << 20) / FB_BLK);
			total += 4u << 20;
			if (on)
				CHECK(dev_stat(d, "dev.flush_bytes_last") <= FB_LIMIT);
		}
		uint64_t flushes = dev_stat(d, "dev.flushes");
		if (on) {
			CHECK(dev_stat(d, "dev.flush_behind_flushes") >= 1);
			CHECK(dev_stat(d, "dev.unflushed_bytes_max") <= FB_LIMIT);
			CHECK(flushes >= (total - FB_LIMIT) / FB_LIMIT);
		} else {
			CHECK_EQ(flushes, 0);
			CHECK_EQ(dev_stat(d, "dev.flush_behind_flushes"), 0);
			CHECK_EQ(dev_stat(d, "dev.unflushed_bytes_max"), total);
		}
		/* F5: a flush asked for behind the stream completes; close waits */
		CHECK_OK(dev_flush(d));
		CHECK_EQ(dev_stat(d, "dev.unflushed_bytes"), 0);
		dev_close(d);
	}
	TEST_PASS("flush-behind: a stream stays under the limit");
}

int main(void)
{
	test_mem();
	test_file(0);
	test_file(1);
	test_generic();
	test_crash();
	test_crash_record();
	test_flush_behind_held();
	test_flush_behind_stream();
	test_flush_behind_inflight();
	return 0;
}
