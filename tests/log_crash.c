/*
 * log_crash.c - the journal's crash suite.
 *
 *   log-crash [--points N] [--seed S] [--wrap] [--verbose]
 *
 * Each round runs a random multi-threaded workload (tests/logwl: none, half,
 * most or all of its transactions unordered, so that checkpoints skip their
 * data-device flush and carry the old tail, G7) on a recording crash
 * device, then cuts power at crash points of the recorded stream: at every
 * flush and every FUA write (the commit record in flight) and at random
 * points between, keeping a random subset of the unflushed writes, possibly
 * torn at sector boundaries. After each cut the image is
 * recovered and checked: every transaction whose force returned is present
 * (G3), the image is exactly the checkpoints up to some N in CSN order (G1,
 * G2), and on every eighth point the log is used again, unmounted cleanly
 * and mounted without replay. Rounds continue until N points are checked.
 *
 * --wrap: one long round on a small log (at least 50 times its size is
 * written, the AIL moving the tail) with crash points chosen where log
 * writes reach the physical end of the region and wrap to its start.
 *
 * The last line is "crash points: N, violations: V"; the exit status is 0
 * only when V is 0.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/rand.h"
#include "dev/crashdev.h"
#include "logwl.h"

static const uint8_t uuid[16] = {0x1c, 0x2a, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

struct round_cfg {
	struct wl_params wp;
	uint64_t log_size;
	unsigned buf_size, nbufs;
	uint64_t push_ms;
};

struct totals {
	uint64_t points, violations, reused;
	uint64_t kept, dropped, torn;
	uint64_t ckpts_seen;
	uint64_t space_waits;
};

static bool verbose;

static uint64_t stat_of(struct log *log, const char *name)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	log_stats(log, &s);
	return stat_table_get(&t, name);
}

static struct log_params make_params(const struct round_cfg *c, struct dev *d, unsigned nblocks)
{
	struct log_params p = {.ldev = d,
			       .log_offset = wl_home_bytes(nblocks),
			       .log_size = c->log_size,
			       .buf_size = c->buf_size,
			       .nbufs = c->nbufs,
			       .push_interval_ns = c->push_ms * 1000000};
	memcpy(p.uuid, uuid, 16);
	return p;
}

/* After recovery at a crash point: use the log again, unmount cleanly, and
 * check that the next mount replays nothing and finds everything. */
static int check_reuse(const struct round_cfg *c, struct dev *img, unsigned nblocks,
		       struct log *log, uint64_t seed)
{
	struct wl_params wp = {.threads = 1,
			       .txns = 24,
			       .shared = nblocks - 1,
			       .force_pct = 30,
			       .free_pct = 5,
			       .seed = seed};
	struct wl *w = wl_create(&wp, log, img);
	int err = wl_run(w);
	if (!err)
		err = log_unmount(log);
	else
		log_unmount(log);
	wl_detach(w);
	wl_build_model(w);
	if (err) {
		fprintf(stderr, "reuse: the recovered log failed: %s\n", strerror(-err));
		wl_free(w);
		return -1;
	}
	struct log_params p = make_params(c, img, nblocks);
	err = log_mount(&p, &log);
	if (err) {
		fprintf(stderr, "reuse: mount after a clean unmount failed: %s\n", strerror(-err));
		wl_free(w);
		return -1;
	}
	int ret = 0;
	if (stat_of(log, "log.recovered_clean") != 1 ||
	    stat_of(log, "log.recovered_checkpoints") != 0) {
		fprintf(stderr, "reuse: mount after a clean unmount replayed the log\n");
		ret = -1;
	}
	if (wl_verify(w, img, w->max_csn, w->data_flushed, "reuse", NULL))
		ret = -1;
	log_unmount(log);
	wl_free(w);
	return ret;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

/* Log writes that touch the last or first 16 KiB of the region. */
static bool near_wrap(const struct crash_event *e, uint64_t log_off, uint64_t log_size)
{
	if (e->type != CRASH_EV_WRITE && e->type != CRASH_EV_FUA)
		return false;
	if (e->off < log_off || e->off >= log_off + log_size)
		return false;
	uint64_t rel = e->off - log_off, end = rel + e->len;
	return end > log_size - 16384 || rel < 16384;
}

static void run_round(const struct round_cfg *c, uint64_t seed, uint64_t budget, bool wrap,
		      struct totals *tot)
{
	unsigned nblocks = c->wp.threads + c->wp.shared;
	uint64_t home = wl_home_bytes(nblocks), size = home + c->log_size;
	struct dev *inner, *cd;
	if (dev_mem_create(size, NULL, &inner))
		abort();
	struct log_params p = make_params(c, inner, nblocks);
	if (log_format(&p))
		abort();
	uint8_t *durable = xmalloc(size);
	dev_mem_copy_out(inner, durable);
	if (crashdev_create(inner, CRASHDEV_RECORD, &cd))
		abort();

	/* the workload, recorded */
	p.ldev = cd;
	struct log *log;
	if (log_mount(&p, &log))
		abort();
	struct wl_params wp = c->wp;
	wp.markdev = cd;
	struct wl *w = wl_create(&wp, log, cd);
	int err = wl_run(w);
	if (err) {
		fprintf(stderr, "round %llu: workload failed: %s\n", (unsigned long long)seed,
			strerror(-err));
		tot->violations++;
	}
	uint64_t written = stat_of(log, "log.buffer_bytes");
	uint64_t tail_moves = stat_of(log, "log.tail_moves");
	tot->space_waits += stat_of(log, "log.space_waits");
	tot->ckpts_seen += stat_of(log, "log.checkpoints");
	log_shutdown(log, "end of recorded workload");
	log_unmount(log);
	wl_detach(w);
	wl_build_model(w);
	if (wrap) {
		printf("wrap round: %llu bytes of log written (%.1f x the log), %llu tail moves\n",
		       (unsigned long long)written, (double)written / (double)c->log_size,
		       (unsigned long long)tail_moves);
		if (written < 50 * c->log_size || tail_moves < 50) {
			fprintf(stderr, "wrap round wrote too little log\n");
			tot->violations++;
		}
	}

	size_t nev = crashdev_nevents(cd);
	const struct crash_event *ev = crashdev_events(cd);
	if (verbose && nev < 20)
		for (size_t i = 0; i < nev; i++)
			printf("event %zu: type %u off %llu len %u tag %llu\n", i, ev[i].type,
			       (unsigned long long)ev[i].off, ev[i].len,
			       (unsigned long long)ev[i].tag);

	/* crash points */
	struct rng r;
	rng_seed(&r, seed ^ 0x5eed);
	size_t *pts = xmalloc((nev * 2 + 600) * sizeof(*pts));
	size_t npts = 0;
	for (size_t i = 0; i < nev; i++) {
		bool pick = wrap ? near_wrap(&ev[i], home, c->log_size)
				 : (ev[i].type == CRASH_EV_FLUSH || ev[i].type == CRASH_EV_FUA);
		if (pick)
			pts[npts++] = i;
		if (pick && wrap && i + 1 < nev)
			pts[npts++] = i + 1;
	}
	for (int i = 0; i < 500 && nev > 1; i++)
		pts[npts++] = (size_t)rng_below(&r, nev);
	/* thin out to the budget, keeping a spread */
	while (npts > budget) {
		size_t k = (size_t)rng_below(&r, npts);
		pts[k] = pts[--npts];
	}
	qsort(pts, npts, sizeof(*pts), cmp_size);

	struct crash_replay replay = {.ev = ev}; /* what `durable` holds */
	uint64_t acked = 0;
	size_t mark_scan = 0;
	bool *data_done = xcalloc(atomic_load(&w->ndata) + 1, sizeof(bool));
	for (size_t k = 0; k < npts; k++) {
		size_t pt = pts[k];
		/* advance the durable image to the last flush before pt */
		size_t from = crash_replay_to(&replay, pt, durable);
		for (; mark_scan < pt; mark_scan++) {
			uint64_t tag = ev[mark_scan].tag;
			if (ev[mark_scan].type != CRASH_EV_MARK || tag == UINT64_MAX)
				continue;
			if (tag & WL_DATA_MARK)
				data_done[tag & ~WL_DATA_MARK] = true;
			else if (tag > acked)
				acked = tag;
		}

		struct dev *img;
		if (dev_mem_create(size, durable, &img))
			abort();
		struct crash_cut_stats st = {0};
		uint64_t cut_seed = seed * 7919 + pt;
		crash_apply_cut(ev, from, pt, img, 512, cut_seed, &st);
		tot->kept += st.kept;
		tot->dropped += st.dropped;
		tot->torn += st.torn;

		char what[96];
		snprintf(what, sizeof(what), "round %llu point %zu/%zu (event type %u)",
			 (unsigned long long)seed, pt, nev, ev[pt].type);
		struct log_params rp = make_params(c, img, nblocks);
		struct log *rlog;
		err = log_mount(&rp, &rlog);
		bool bad = false;
		if (err) {
			fprintf(stderr, "%s: recovery failed: %s\n", what, strerror(-err));
			bad = true;
		} else {
			uint64_t n;
			bad = wl_verify(w, img, acked, data_done, what, &n) != 0;
			if (verbose)
				printf("%s: acked %llu recovered %llu\n", what,
				       (unsigned long long)acked, (unsigned long long)n);
			if (!bad && (tot->points % 8) == 0) {
				bad = check_reuse(c, img, nblocks, rlog, seed * 31 + pt) != 0;
				tot->reused++;
			} else {
				log_unmount(rlog);
			}
		}
		tot->violations += bad;
		tot->points++;
		dev_close(img);
	}
	free(pts);
	free(data_done);
	free(durable);
	wl_free(w);
	dev_close(cd);
	dev_close(inner);
}

static void random_cfg(struct rng *r, struct round_cfg *c, uint64_t seed)
{
	static const uint64_t log_sizes[] = {128 << 10, 256 << 10, 512 << 10, 1 << 20};
	static const unsigned bufs[] = {4096, 8192, 16384, 32768};
	c->log_size = log_sizes[rng_below(r, 4)];
	c->buf_size = bufs[rng_below(r, 4)];
	while (c->buf_size * 8 > c->log_size)
		c->buf_size /= 2;
	c->nbufs = 2 + (unsigned)rng_below(r, 7);
	c->push_ms = 5 + rng_below(r, 100);
	c->wp = (struct wl_params){
		.threads = 1 + (unsigned)rng_below(r, 8),
		.shared = 4 + (unsigned)rng_below(r, 40),
		.max_touch = 1 + (unsigned)rng_below(r, 5),
		.force_pct = 5 + (unsigned)rng_below(r, 40),
		.async_pct = (unsigned)rng_below(r, 20),
		.sync_pct = (unsigned)rng_below(r, 10),
		.free_pct = (unsigned)rng_below(r, 8),
		.seed = seed,
	};
	c->wp.txns = (unsigned)(1200 / c->wp.threads) + (unsigned)rng_below(r, 100);
	/* none, some or all of the checkpoints free to skip their flush (G7) */
	static const unsigned unordered[] = {0, 50, 90, 100};
	c->wp.unordered_pct = unordered[rng_below(r, 4)];
	/* a transaction's reservation must stay under a quarter of the log */
	while (c->wp.max_touch > 1 && (c->wp.max_touch + 1) * 4096 * 8 / 5 > c->log_size / 4)
		c->wp.max_touch--;
}

int main(int argc, char **argv)
{
	uint64_t points = 10000, seed = 1;
	bool wrap = false;
	static const struct option opts[] = {{"points", required_argument, NULL, 'n'},
					     {"seed", required_argument, NULL, 's'},
					     {"wrap", no_argument, NULL, 'w'},
					     {"verbose", no_argument, NULL, 'v'},
					     {NULL, 0, NULL, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "n:s:wv", opts, NULL)) != -1) {
		switch (o) {
		case 'n':
			points = strtoull(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			wrap = true;
			break;
		case 'v':
			verbose = true;
			break;
		default:
			fprintf(stderr, "usage: log-crash [--points N] [--seed S] [--wrap] "
					"[--verbose]\n");
			return 2;
		}
	}
	msg_set_level(MSG_WARN);
	msg_set_prog("log-crash");

	struct totals tot = {0};
	struct rng r;
	rng_seed(&r, seed);
	uint64_t round = 0;
	if (wrap) {
		struct round_cfg c = {
			.log_size = 128 << 10, .buf_size = 4096, .nbufs = 4, .push_ms = 20};
		c.wp = (struct wl_params){.threads = 4,
					  .txns = 2500,
					  .shared = 28,
					  .max_touch = 3,
					  .force_pct = 30,
					  .async_pct = 10,
					  .sync_pct = 5,
					  .unordered_pct = 50,
					  .free_pct = 4,
					  .seed = seed};
		run_round(&c, seed, points, true, &tot);
	}
	while (!wrap && tot.points < points) {
		struct round_cfg c;
		uint64_t rs = seed * 1000 + round++;
		random_cfg(&r, &c, rs);
		uint64_t before = tot.points;
		run_round(&c, rs, MIN(points - tot.points, 2000), false, &tot);
		if (verbose || tot.points - before == 0)
			printf("round %llu: %u threads, log %llu KiB, %u x %u B buffers: %llu "
			       "points\n",
			       (unsigned long long)rs, c.wp.threads,
			       (unsigned long long)(c.log_size >> 10), c.nbufs, c.buf_size,
			       (unsigned long long)(tot.points - before));
	}
	printf("rounds: %llu, checkpoints written: %llu, waits for log space: %llu, reuse "
	       "checks: %llu\n",
	       (unsigned long long)(wrap ? 1 : round), (unsigned long long)tot.ckpts_seen,
	       (unsigned long long)tot.space_waits, (unsigned long long)tot.reused);
	printf("unflushed writes at the cuts: %llu kept, %llu dropped, %llu torn\n",
	       (unsigned long long)tot.kept, (unsigned long long)tot.dropped,
	       (unsigned long long)tot.torn);
	printf("crash points: %llu, violations: %llu\n", (unsigned long long)tot.points,
	       (unsigned long long)tot.violations);
	return tot.violations ? 1 : 0;
}
