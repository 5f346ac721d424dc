/*
 * nfs_load.c - many NFS clients for a long time, each checking what the
 * server promised it.
 *
 *   nfs-load [--addr A:P] [--export PATH] [--dir NAME] [--proto nfs3]
 *            [--clients N] [--seconds S] [--seed S] [--files F] [--dirs D]
 *            [--shared K] [--file-max BYTES] [--wsize BYTES] [--fill]
 *            [--think-us U] [--timeout-ms T] [--give-up-ms G]
 *            [--interval S] [--series FILE] [--report-limit N] [--csv]
 *            [--idle N] [--noread N] [--halfsent N] [--flood N]
 *
 * N clients, each a thread with its own connection, run the seeded mix of
 * work.c for S seconds in "<dir>/cK" and "<dir>/shared" of the export
 * (default "/" on 127.0.0.1:2049, directory "load"), keeping a model of
 * every acknowledged reply and checking every READ, GETATTR, LOOKUP and
 * READDIR against it. The server may be killed and restarted meanwhile
 * (bench/soak.sh does): clients reconnect, check that everything promised
 * stable is still there, send again what was only UNSTABLE, and go on.
 * At the end each client checks all of its names and files once more.
 *
 * --fill is the full-disk workload: appending writes of --wsize, and on
 * NOSPC the client removes its largest file and goes on. --idle, --noread,
 * --halfsent and --flood add the hostile clients of abuse.h beside the
 * measured ones.
 *
 * Output: "name value" lines (load.*: operations, ops/s, latency
 * percentiles of operations sent once, per kind; errors by operation and
 * status; mismatches and lost promises; reconnects, resends, restarts
 * seen; abuse.*), and with --csv one header and one row. --series writes
 * one CSV row per --interval (default 1 s): t_s, ops, ops_per_s, p50_us,
 * p99_us, max_us, reconnects, mismatches, lost. Exit status 0 only when
 * no reply contradicted the model and every client reached the server to
 * the end; 1 otherwise; 2 for bad arguments.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "abuse.h"
#include "base/mem.h"
#include "base/time.h"
#include "work.h"

struct client {
	pthread_t thread;
	struct worker *w;
	unsigned id;
	int err;
};

static struct work_opts wo;
static volatile bool stop_flag;
static pthread_barrier_t start_barrier;

static void *client_main(void *arg)
{
	struct client *c = arg;
	c->err = work_init(&c->w, &wo, c->id);
	pthread_barrier_wait(&start_barrier);
	if (!c->err)
		c->err = work_run(c->w, &stop_flag);
	return NULL;
}

static bool parse_size(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 10);
	unsigned shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : 0;
	if (shift)
		end++;
	if (errno || *end || end == s)
		return false;
	*v = (uint64_t)n << shift;
	return true;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nfs-load [--addr A:P] [--export PATH] [--dir NAME] [--proto nfs3]\n"
		   "                [--clients N] [--seconds S] [--seed S] [--files F] [--dirs D]\n"
		   "                [--shared K] [--file-max BYTES] [--wsize BYTES] [--fill]\n"
		   "                [--think-us U] [--timeout-ms T] [--give-up-ms G]\n"
		   "                [--interval S] [--series FILE] [--report-limit N] [--csv]\n"
		   "                [--idle N] [--noread N] [--halfsent N] [--flood N]\n");
}

/* A 1 MiB file for the never-reading clients to READ. */
static enum load_st write_big(struct load_client *c, const struct load_fh *root,
			      struct load_fh *big)
{
	struct load_fh dir;
	struct load_attr a;
	enum load_st st = wo.proto->lookup(c, root, wo.dir, &dir, &a);
	if (st == LOAD_OK)
		st = wo.proto->create(c, &dir, "abuse-big", LOAD_UNCHECKED, NULL, 0644, big, &a);
	uint8_t *buf = xmalloc(1u << 16), verf[LOAD_VERF_LEN];
	for (uint32_t off = 0; st == LOAD_OK && off < (1u << 20); off += 1u << 16) {
		uint32_t count;
		enum load_stable comm;
		memset(buf, (int)(off >> 16), 1u << 16);
		st = wo.proto->write(c, big, off, buf, 1u << 16, LOAD_FILE_SYNC, &count, &comm,
				     verf);
	}
	free(buf);
	return st;
}

/* The root's handle (the flood's GETATTRs) and the never-reading
 * clients' file. */
static int abuse_prepare(struct abuse_opts *ao)
{
	struct load_client c = {.lc_id = 1023, .lc_proto = wo.proto};
	int err = wo.proto->open(&c, &wo.conn, &ao->root);
	if (!err && ao->noread && write_big(&c, &ao->root, &ao->big) != LOAD_OK)
		err = -EIO;
	if (c.lc_pd)
		wo.proto->close(&c);
	if (err)
		fprintf(stderr, "nfs-load: cannot prepare the hostile clients: %s\n",
			strerror(-err));
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"addr", required_argument, NULL, 'a'},
		{"export", required_argument, NULL, 'e'},
		{"dir", required_argument, NULL, 'd'},
		{"proto", required_argument, NULL, 'P'},
		{"clients", required_argument, NULL, 'c'},
		{"seconds", required_argument, NULL, 's'},
		{"seed", required_argument, NULL, 'S'},
		{"files", required_argument, NULL, 'f'},
		{"dirs", required_argument, NULL, 'D'},
		{"shared", required_argument, NULL, 'k'},
		{"file-max", required_argument, NULL, 'M'},
		{"wsize", required_argument, NULL, 'w'},
		{"fill", no_argument, NULL, 'F'},
		{"think-us", required_argument, NULL, 't'},
		{"timeout-ms", required_argument, NULL, 'T'},
		{"give-up-ms", required_argument, NULL, 'G'},
		{"interval", required_argument, NULL, 'i'},
		{"series", required_argument, NULL, 'z'},
		{"report-limit", required_argument, NULL, 'r'},
		{"csv", no_argument, NULL, 'C'},
		{"idle", required_argument, NULL, '1'},
		{"noread", required_argument, NULL, '2'},
		{"halfsent", required_argument, NULL, '3'},
		{"flood", required_argument, NULL, '4'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	unsigned clients = 16, seconds = 30, interval = 1;
	const char *series = NULL;
	bool csv = false, file_max_given = false;
	struct abuse_opts ao = {0};
	uint64_t v;
	int opt;

	wo.proto = &load_nfs3;
	wo.conn.addr = "127.0.0.1:2049";
	wo.conn.export_path = "/";
	wo.conn.timeout_ms = 30000;
	wo.conn.give_up_ms = 120000;
	wo.dir = "load";
	wo.seed = 1;
	wo.files = 24;
	wo.dirs = 4;
	wo.shared = 4;
	wo.file_max = 128 << 10;
	wo.wsize = 64 << 10;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			wo.conn.addr = optarg;
			break;
		case 'e':
			wo.conn.export_path = optarg;
			break;
		case 'd':
			wo.dir = optarg;
			break;
		case 'P':
			if (strcmp(optarg, "nfs3") != 0) {
				fprintf(stderr, "nfs-load: protocols: nfs3\n");
				return 2;
			}
			break;
		case 'c':
			clients = (unsigned)atoi(optarg);
			break;
		case 's':
			seconds = (unsigned)atoi(optarg);
			break;
		case 'S':
			wo.seed = strtoull(optarg, NULL, 0);
			break;
		case 'f':
			wo.files = (unsigned)atoi(optarg);
			break;
		case 'D':
			wo.dirs = (unsigned)atoi(optarg);
			break;
		case 'k':
			wo.shared = (unsigned)atoi(optarg);
			break;
		case 'M':
			if (!parse_size(optarg, &wo.file_max))
				goto bad;
			file_max_given = true;
			break;
		case 'w':
			if (!parse_size(optarg, &v) || v > (1u << 20))
				goto bad;
			wo.wsize = (uint32_t)v;
			break;
		case 'F':
			wo.fill = true;
			break;
		case 't':
			wo.think_us = (unsigned)atoi(optarg);
			break;
		case 'T':
			wo.conn.timeout_ms = (unsigned)atoi(optarg);
			break;
		case 'G':
			wo.conn.give_up_ms = (unsigned)atoi(optarg);
			break;
		case 'i':
			interval = (unsigned)atoi(optarg);
			break;
		case 'z':
			series = optarg;
			break;
		case 'r':
			work_set_report_limit((unsigned)atoi(optarg));
			break;
		case 'C':
			csv = true;
			break;
		case '1':
			ao.idle = (unsigned)atoi(optarg);
			break;
		case '2':
			ao.noread = (unsigned)atoi(optarg);
			break;
		case '3':
			ao.halfsent = (unsigned)atoi(optarg);
			break;
		case '4':
			ao.flood = (unsigned)atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		continue;
	bad:
		fprintf(stderr, "nfs-load: bad value '%s'\n", optarg);
		return 2;
	}
	if (wo.fill && !file_max_given)
		wo.file_max = 4u << 20;
	wo.wsize &= ~255u;
	wo.file_max &= ~(uint64_t)255;
	if (optind < argc || !clients || clients > 1000 || !wo.files || wo.wsize < 256 ||
	    wo.file_max < wo.wsize || !interval) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* up to a thousand clients and thousands of idle connections, a
	 * descriptor each */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	FILE *sf = NULL;
	if (series && !(sf = fopen(series, "w"))) {
		fprintf(stderr, "nfs-load: %s: %s\n", series, strerror(errno));
		return 2;
	}
	if (sf)
		fprintf(sf, "t_s,ops,ops_per_s,p50_us,p99_us,max_us,reconnects,mismatches,lost\n");

	struct client *cl = xcalloc(clients, sizeof(*cl));
	pthread_barrier_init(&start_barrier, NULL, clients + 1);
	for (unsigned i = 0; i < clients; i++) {
		cl[i].id = i;
		pthread_create(&cl[i].thread, NULL, client_main, &cl[i]);
	}
	pthread_barrier_wait(&start_barrier);
	unsigned failed = 0;
	for (unsigned i = 0; i < clients; i++)
		failed += cl[i].err != 0;
	if (failed)
		stop_flag = true;

	struct abuse *ab = NULL;
	if (!failed && (ao.idle || ao.noread || ao.halfsent || ao.flood)) {
		ao.addr = wo.conn.addr;
		if (abuse_prepare(&ao))
			stop_flag = true;
		else
			ab = abuse_start(&ao);
	}

	uint64_t t0 = now_ns(), end = t0 + (uint64_t)seconds * NSEC_PER_SEC;
	uint64_t next = t0 + (uint64_t)interval * NSEC_PER_SEC;
	while (!stop_flag && now_ns() < end) {
		uint64_t now = now_ns(), until = next < end ? next : end;
		if (until > now)
			sleep_ns(until - now > 100 * NSEC_PER_MSEC ? 100 * NSEC_PER_MSEC
								   : until - now);
		if (now_ns() < next)
			continue;
		struct hist h = {0};
		uint64_t ops = 0, reconnects = 0, mism = 0, lost = 0;
		for (unsigned i = 0; i < clients; i++) {
			if (!cl[i].w)
				continue;
			work_take_interval(cl[i].w, &h, &ops);
			reconnects += work_client(cl[i].w)->lc_cs.reconnects;
			mism += work_stats(cl[i].w)->mismatches;
			lost += work_stats(cl[i].w)->lost;
		}
		if (sf)
			fprintf(sf, "%.1f,%llu,%.0f,%.1f,%.1f,%.1f,%llu,%llu,%llu\n",
				(double)(now_ns() - t0) / 1e9, (unsigned long long)ops,
				(double)ops / interval, hist_quantile(&h, 0.5) / 1e3,
				hist_quantile(&h, 0.99) / 1e3, h.h_max_ns / 1e3,
				(unsigned long long)reconnects, (unsigned long long)mism,
				(unsigned long long)lost);
		if (sf)
			fflush(sf);
		next += (uint64_t)interval * NSEC_PER_SEC;
	}
	double elapsed = (double)(now_ns() - t0) / 1e9;
	stop_flag = true;
	abuse_stop(ab);
	for (unsigned i = 0; i < clients; i++)
		pthread_join(cl[i].thread, NULL);
	failed = 0;
	for (unsigned i = 0; i < clients; i++)
		failed += cl[i].err != 0;

	/* sum up */
	struct work_stats tot = {0};
	struct load_conn_stats cs = {0};
	struct hist all = {0};
	uint64_t restarts_max = 0;
	for (unsigned i = 0; i < clients; i++) {
		if (!cl[i].w)
			continue;
		const struct work_stats *s = work_stats(cl[i].w);
		const struct load_conn_stats *c = &work_client(cl[i].w)->lc_cs;
		for (int k = 0; k < OP_NKINDS; k++) {
			tot.ops[k] += s->ops[k];
			for (int e = 0; e < LOAD_NST; e++)
				tot.errs[k][e] += s->errs[k][e];
			hist_merge(&tot.lat[k], &s->lat[k]);
			hist_merge(&all, &s->lat[k]);
		}
		tot.retried_ops += s->retried_ops;
		tot.delays += s->delays;
		tot.mismatches += s->mismatches;
		tot.lost += s->lost;
		tot.recoveries += s->recoveries;
		tot.resent_bytes += s->resent_bytes;
		tot.short_writes += s->short_writes;
		tot.nospc += s->nospc;
		tot.ok_after_nospc += s->ok_after_nospc;
		tot.verified_files += s->verified_files;
		tot.verified_names += s->verified_names;
		tot.verified_bytes += s->verified_bytes;
		tot.bytes_written += s->bytes_written;
		tot.bytes_read += s->bytes_read;
		tot.tainted += s->tainted;
		if (s->restarts > restarts_max)
			restarts_max = s->restarts;
		cs.reconnects += c->reconnects;
		cs.resends += c->resends;
		cs.timeouts += c->timeouts;
		cs.rpc_errors += c->rpc_errors;
		cs.down_ns += c->down_ns;
	}
	uint64_t ops = 0;
	for (int k = 0; k < OP_NKINDS; k++)
		ops += tot.ops[k];

	printf("load.proto %s\n", wo.proto->name);
	printf("load.clients %u\n", clients);
	printf("load.seconds %.1f\n", elapsed);
	printf("load.ops %llu\n", (unsigned long long)ops);
	printf("load.ops_per_s %.0f\n", (double)ops / elapsed);
	printf("load.lat_us.p50 %.1f\n", hist_quantile(&all, 0.5) / 1e3);
	printf("load.lat_us.p90 %.1f\n", hist_quantile(&all, 0.9) / 1e3);
	printf("load.lat_us.p99 %.1f\n", hist_quantile(&all, 0.99) / 1e3);
	printf("load.lat_us.p999 %.1f\n", hist_quantile(&all, 0.999) / 1e3);
	printf("load.lat_us.max %.1f\n", all.h_max_ns / 1e3);
	for (int k = 0; k < OP_NKINDS; k++) {
		if (!tot.ops[k])
			continue;
		printf("load.op.%s.count %llu\n", op_names[k], (unsigned long long)tot.ops[k]);
		printf("load.op.%s.p50_us %.1f\n", op_names[k],
		       hist_quantile(&tot.lat[k], 0.5) / 1e3);
		printf("load.op.%s.p99_us %.1f\n", op_names[k],
		       hist_quantile(&tot.lat[k], 0.99) / 1e3);
		for (int e = 1; e < LOAD_NST; e++)
			if (tot.errs[k][e])
				printf("load.err.%s.%s %llu\n", op_names[k], load_st_name(e),
				       (unsigned long long)tot.errs[k][e]);
	}
	printf("load.bytes_written %llu\n", (unsigned long long)tot.bytes_written);
	printf("load.bytes_read %llu\n", (unsigned long long)tot.bytes_read);
	printf("load.retried_ops %llu\n", (unsigned long long)tot.retried_ops);
	printf("load.delays %llu\n", (unsigned long long)tot.delays);
	printf("load.reconnects %llu\n", (unsigned long long)cs.reconnects);
	printf("load.resends %llu\n", (unsigned long long)cs.resends);
	printf("load.timeouts %llu\n", (unsigned long long)cs.timeouts);
	printf("load.rpc_errors %llu\n", (unsigned long long)cs.rpc_errors);
	printf("load.down_s_per_client %.2f\n", (double)cs.down_ns / 1e9 / clients);
	printf("load.restarts_seen %llu\n", (unsigned long long)restarts_max);
	printf("load.recoveries %llu\n", (unsigned long long)tot.recoveries);
	printf("load.resent_bytes %llu\n", (unsigned long long)tot.resent_bytes);
	printf("load.short_writes %llu\n", (unsigned long long)tot.short_writes);
	printf("load.nospc %llu\n", (unsigned long long)tot.nospc);
	printf("load.ok_after_nospc %llu\n", (unsigned long long)tot.ok_after_nospc);
	printf("load.verified_files %llu\n", (unsigned long long)tot.verified_files);
	printf("load.verified_names %llu\n", (unsigned long long)tot.verified_names);
	printf("load.verified_bytes %llu\n", (unsigned long long)tot.verified_bytes);
	printf("load.tainted %llu\n", (unsigned long long)tot.tainted);
	printf("load.clients_failed %u\n", failed);
	printf("load.mismatches %llu\n", (unsigned long long)tot.mismatches);
	printf("load.lost %llu\n", (unsigned long long)tot.lost);
	abuse_report(ab, stdout);
	if (csv) {
		printf("csv,proto,clients,seconds,ops,ops_per_s,p50_us,p99_us,p999_us,restarts,"
		       "nospc,mismatches,lost\n");
		printf("csv,%s,%u,%.1f,%llu,%.0f,%.1f,%.1f,%.1f,%llu,%llu,%llu,%llu\n",
		       wo.proto->name, clients, elapsed, (unsigned long long)ops,
		       (double)ops / elapsed, hist_quantile(&all, 0.5) / 1e3,
		       hist_quantile(&all, 0.99) / 1e3, hist_quantile(&all, 0.999) / 1e3,
		       (unsigned long long)restarts_max, (unsigned long long)tot.nospc,
		       (unsigned long long)tot.mismatches, (unsigned long long)tot.lost);
	}
	if (sf)
		fclose(sf);
	abuse_free(ab);
	for (unsigned i = 0; i < clients; i++)
		work_free(cl[i].w);
	free(cl);
	pthread_barrier_destroy(&start_barrier);
	return failed || tot.mismatches || tot.lost ? 1 : 0;
}
