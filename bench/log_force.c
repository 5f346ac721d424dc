/*
 * log_force.c - group commit in the journal.
 *
 *   log-force [--threads T] [--flush-latency-us L] [--seconds S]
 *             [--image PATH | --mem] [--log-mib M] [--csv]
 *
 * Each thread commits a small transaction (8 bytes of its own 4 KiB block)
 * and forces the log to its sequence, again and again. The device is an
 * image file (a temporary one by default) or memory, with L microseconds
 * added to every flush and FUA write (the latency model of a disk with a
 * volatile cache). Prints "name value" lines: commits, forces, checkpoints,
 * commits_per_s, forces_per_checkpoint, device flushes and FUA writes per
 * checkpoint, and force latency percentiles; --csv adds one CSV row.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "dev/dev.h"
#include "log/buf_item.h"
#include "log/log.h"

#define BLK 4096u

struct worker {
	pthread_t th;
	struct log *log;
	struct buf_item bi;
	uint8_t *data;
	uint64_t deadline;
	uint64_t commits;
	uint64_t *lat; /* force latencies, ns */
	size_t nlat, caplat;
	int err;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	while (now_ns() < w->deadline) {
		struct trans *tp;
		uint64_t t0 = now_ns();
		int err = trans_alloc(w->log, log_calc_res(w->log, 1, 256), 0, &tp);
		if (err) {
			w->err = err;
			break;
		}
		buf_item_join(tp, &w->bi);
		uint64_t n = w->commits + 1;
		memcpy(w->data, &n, sizeof(n));
		buf_item_log(tp, &w->bi, 0, sizeof(n));
		uint64_t csn;
		err = trans_commit(tp, &csn);
		if (!err)
			err = log_force_seq(w->log, csn, true, NULL);
		if (err) {
			w->err = err;
			break;
		}
		w->commits++;
		if (w->nlat == w->caplat) {
			w->caplat = w->caplat ? w->caplat * 2 : 4096;
			w->lat = xrealloc(w->lat, w->caplat * sizeof(*w->lat));
		}
		w->lat[w->nlat++] = now_ns() - t0;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t stat_get(struct stat_table *t, const char *n)
{
	return stat_table_get(t, n);
}

int main(int argc, char **argv)
{
	unsigned threads = 16, seconds = 5, log_mib = 64;
	uint64_t lat_us = 1000;
	const char *image = NULL;
	bool mem = false, csv = false;
	static const struct option opts[] = {{"threads", required_argument, NULL, 't'},
					     {"flush-latency-us", required_argument, NULL, 'l'},
					     {"seconds", required_argument, NULL, 's'},
					     {"image", required_argument, NULL, 'i'},
					     {"mem", no_argument, NULL, 'm'},
					     {"log-mib", required_argument, NULL, 'L'},
					     {"csv", no_argument, NULL, 'c'},
					     {NULL, 0, NULL, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "t:l:s:i:mL:c", opts, NULL)) != -1) {
		switch (o) {
		case 't':
			threads = (unsigned)atoi(optarg);
			break;
		case 'l':
			lat_us = strtoull(optarg, NULL, 0);
			break;
		case 's':
			seconds = (unsigned)atoi(optarg);
			break;
		case 'i':
			image = optarg;
			break;
		case 'm':
			mem = true;
			break;
		case 'L':
			log_mib = (unsigned)atoi(optarg);
			break;
		case 'c':
			csv = true;
			break;
		default:
			fprintf(stderr,
				"usage: log-force [--threads T] [--flush-latency-us L] "
				"[--seconds S] [--image PATH | --mem] [--log-mib M] [--csv]\n");
			return 2;
		}
	}
	if (!threads || threads > 1024 || !seconds) {
		fprintf(stderr, "log-force: bad arguments\n");
		return 2;
	}
	msg_set_prog("log-force");

	uint64_t home = (uint64_t)ALIGN_UP(threads, 256u) * BLK;
	uint64_t log_size = (uint64_t)log_mib << 20, size = home + log_size;
	struct dev *d;
	char tmp[] = "/tmp/jnfs-log-force-XXXXXX";
	int err;
	if (mem) {
		err = dev_mem_create(size, NULL, &d);
	} else {
		if (!image) {
			int fd = mkstemp(tmp);
			if (fd < 0) {
				perror("log-force: mkstemp");
				return 1;
			}
			close(fd);
			unlink(tmp);
			image = tmp;
		}
		err = dev_file_open(image, DEV_OPEN_CREATE, size, &d);
	}
	if (err) {
		fprintf(stderr, "log-force: cannot open the device: %s\n", strerror(-err));
		return 1;
	}
	struct log_params p = {.ldev = d, .log_offset = home, .log_size = log_size};
	memcpy(p.uuid, "log-force-bench!", 16);
	struct log *log;
	if ((err = log_format(&p)) != 0 || (err = log_mount(&p, &log)) != 0) {
		fprintf(stderr, "log-force: cannot set up the log: %s\n", strerror(-err));
		return 1;
	}
	dev_set_latency(d, lat_us * NSEC_PER_USEC, lat_us * NSEC_PER_USEC);

	struct stat_table before, after;
	struct stat_sink sb = stat_sink_table(&before);
	log_stats(log, &sb);
	dev_stats(d, "dev", &sb);

	struct worker *w = xcalloc(threads, sizeof(*w));
	uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)seconds * NSEC_PER_SEC;
	for (unsigned t = 0; t < threads; t++) {
		w[t].log = log;
		w[t].data = xmalloc_aligned(4096, BLK);
		memset(w[t].data, 0, BLK);
		buf_item_init(&w[t].bi, log, (uint64_t)t * BLK, w[t].data, NULL);
		w[t].deadline = deadline;
		pthread_create(&w[t].th, NULL, worker_fn, &w[t]);
	}
	uint64_t commits = 0, nlat = 0;
	for (unsigned t = 0; t < threads; t++) {
		pthread_join(w[t].th, NULL);
		commits += w[t].commits;
		nlat += w[t].nlat;
		if (w[t].err)
			fprintf(stderr, "log-force: thread %u: %s\n", t, strerror(-w[t].err));
	}
	double elapsed = (double)(now_ns() - t0) / 1e9;
	struct stat_sink sa = stat_sink_table(&after);
	log_stats(log, &sa);
	dev_stats(d, "dev", &sa);

	uint64_t *lat = xmalloc((nlat ? nlat : 1) * sizeof(*lat)), k = 0;
	for (unsigned t = 0; t < threads; t++) {
		memcpy(lat + k, w[t].lat, w[t].nlat * sizeof(*lat));
		k += w[t].nlat;
	}
	qsort(lat, nlat, sizeof(*lat), cmp_u64);

#define DELTA(n) (stat_get(&after, n) - stat_get(&before, n))
	uint64_t forces = DELTA("log.forces"), ckpts = DELTA("log.checkpoints");
	uint64_t flushes = DELTA("dev.flushes"), fuas = DELTA("dev.fua_writes");
	printf("threads %u\n", threads);
	printf("flush_latency_us %llu\n", (unsigned long long)lat_us);
	printf("device %s\n", d->d_name);
	printf("seconds %.2f\n", elapsed);
	printf("commits %llu\n", (unsigned long long)commits);
	printf("forces %llu\n", (unsigned long long)forces);
	printf("forces_that_wrote %llu\n", (unsigned long long)DELTA("log.forces_wrote"));
	printf("checkpoints %llu\n", (unsigned long long)ckpts);
	printf("commits_per_s %.0f\n", (double)commits / elapsed);
	printf("forces_per_checkpoint %.2f\n", ckpts ? (double)forces / (double)ckpts : 0.0);
	printf("dev_flushes_per_checkpoint %.2f\n", ckpts ? (double)flushes / (double)ckpts : 0.0);
	printf("dev_fua_writes_per_checkpoint %.2f\n", ckpts ? (double)fuas / (double)ckpts : 0.0);
	printf("log_bytes_per_checkpoint %.0f\n",
	       ckpts ? (double)DELTA("log.buffer_bytes") / (double)ckpts : 0.0);
	if (nlat) {
		printf("force_latency_p50_us %.1f\n", (double)lat[nlat / 2] / 1e3);
		printf("force_latency_p99_us %.1f\n", (double)lat[nlat * 99 / 100] / 1e3);
	}
	if (csv) {
		printf("csv,threads,flush_latency_us,commits_per_s,forces_per_checkpoint\n");
		printf("csv,%u,%llu,%.0f,%.2f\n", threads, (unsigned long long)lat_us,
		       (double)commits / elapsed, ckpts ? (double)forces / (double)ckpts : 0.0);
	}
#undef DELTA

	dev_set_latency(d, 0, 0);
	err = log_unmount(log);
	for (unsigned t = 0; t < threads; t++) {
		buf_item_destroy(&w[t].bi);
		free(w[t].data);
		free(w[t].lat);
	}
	free(w);
	free(lat);
	dev_close(d);
	if (image == tmp)
		unlink(tmp);
	return err ? 1 : 0;
}
