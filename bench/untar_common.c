/*
 * untar_common.c - options, sizes, counters and report of nfs3-untar and
 * nfs4-untar (see untar_common.h).
 */
#include <err.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "untar_common.h"

static const struct option untar_lo[] = {
	{"addr", required_argument, NULL, 'a'},	      {"port", required_argument, NULL, 'p'},
	{"mount-port", required_argument, NULL, 'M'}, {"export", required_argument, NULL, 'e'},
	{"files", required_argument, NULL, 'n'},      {"clients", required_argument, NULL, 'c'},
	{"mode", required_argument, NULL, 'm'},	      {"per-dir", required_argument, NULL, 'F'},
	{"fanout", required_argument, NULL, 'B'},     {"wsize", required_argument, NULL, 'w'},
	{"seed", required_argument, NULL, 's'},	      {"label", required_argument, NULL, 'l'},
	{"jnfsd-stats", no_argument, NULL, 'J'},      {"xfs-dev", required_argument, NULL, 'X'},
	{"csv", no_argument, NULL, 'C'},	      {"help", no_argument, NULL, 'h'},
	{"disk", required_argument, NULL, 'D'},	      {NULL, 0, NULL, 0}};

#define UNTAR_NOPTS (sizeof(untar_lo) / sizeof(untar_lo[0]))

void untar_parse_opts(int argc, char **argv, struct untar_opts *o, bool with_mount_port,
		      unsigned min_wsize, const char *usage)
{
	*o = (struct untar_opts){
		.addr = "127.0.0.1", .export = "/", .label = "server", .clients = 1,
		.per_dir = 16, .fanout = 4, .wsize = 65536, .files = 1000, .seed = 1,
	};
	/* without --mount-port the option is unknown, as getopt reports it */
	struct option lo[UNTAR_NOPTS];
	size_t n = 0;
	for (size_t i = 0; i < UNTAR_NOPTS; i++)
		if (with_mount_port || untar_lo[i].val != 'M')
			lo[n++] = untar_lo[i];

	int opt;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'a': o->addr = optarg; break;
		case 'p': o->port = (unsigned)atoi(optarg); break;
		case 'M': o->mount_port = (unsigned)atoi(optarg); break;
		case 'e': o->export = optarg; break;
		case 'n': o->files = strtoull(optarg, NULL, 0); break;
		case 'c': o->clients = (unsigned)atoi(optarg); break;
		case 'm':
			if (!strcmp(optarg, "filesync"))
				o->unstable = false;
			else if (!strcmp(optarg, "unstable"))
				o->unstable = true;
			else
				die("--mode is filesync or unstable, not '%s'", optarg);
			break;
		case 'F': o->per_dir = (unsigned)atoi(optarg); break;
		case 'B': o->fanout = (unsigned)atoi(optarg); break;
		case 'w': o->wsize = (unsigned)atoi(optarg); break;
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case 'l': o->label = optarg; break;
		case 'J': o->jnfsd_stats = true; break;
		case 'X': o->xfs_dev = optarg; break;
		case 'D': o->disk = optarg; break;
		case 'C': o->csv = true; break;
		case 'h': fputs(usage, stdout); exit(0);
		default: fputs(usage, stderr); exit(2);
		}
	}
	if (optind != argc || !o->port) {
		fputs(usage, stderr);
		exit(2);
	}
	if (!o->mount_port)
		o->mount_port = o->port;
	if (!o->clients || o->clients > UNTAR_MAX_CLIENTS || o->files < o->clients ||
	    o->files > UINT32_MAX || !o->per_dir || !o->fanout || o->wsize < min_wsize ||
	    o->wsize > UNTAR_MAX_WSIZE / 2)
		die("bad --clients, --files, --per-dir, --fanout or --wsize");
}

uint32_t untar_client_files(const struct untar_opts *o, unsigned k)
{
	return (uint32_t)(o->files / o->clients + (k < o->files % o->clients));
}

uint32_t untar_file_size(const struct untar_opts *o, unsigned k, uint32_t i)
{
	uint64_t h = mix64(o->seed ^ mix64(((uint64_t)k << 32) | i));
	unsigned pct = (unsigned)(h % 100);
	uint64_t r = h >> 8;
	if (pct < 5)
		return 64 + (uint32_t)(r % (1024 - 64));
	if (pct < 90)
		return 1024 + (uint32_t)(r % (16384 - 1024));
	return 16384 + (uint32_t)(r % (65536 - 16384));
}

void untar_fill(char *data, size_t len)
{
	for (size_t i = 0; i < len; i++)
		data[i] = (char)(' ' + mix64(i) % 95);
}

static bool read_counters(const struct untar_opts *o, struct untar_counters *k)
{
	char addr[160];
	int err;
	if (o->jnfsd_stats) {
		snprintf(addr, sizeof(addr), "%s:%u", o->addr, o->port);
		err = untar_counters_jnfsd(addr, k);
	} else if (o->xfs_dev) {
		err = untar_counters_xfs(o->xfs_dev, k);
	} else {
		memset(k, 0, sizeof(*k));
		return false;
	}
	if (err)
		warnx("cannot read the server's counters: %s", strerror(-err));
	return !err;
}

void untar_sample(const struct untar_opts *o, struct untar_sample *s)
{
	s->have = read_counters(o, &s->k);
	s->have_disk = o->disk && !untar_disk_flushes(o->disk, &s->disk_flushes, &s->disk_ms);
}

void untar_report(const struct untar_opts *o, const struct untar_result *r,
		  const struct untar_sample *s0, const struct untar_sample *s1)
{
	const struct untar_counters *k0 = &s0->k, *k1 = &s1->k;
	bool have = s0->have && s1->have;
	double nf = (double)o->files, rate = nf / r->seconds;
	const char *mode = o->unstable ? "unstable" : "filesync";

	printf("untar.label %s\n", o->label);
	if (r->protocol)
		printf("untar.protocol %s\n", r->protocol);
	printf("untar.mode %s\nuntar.clients %u\nuntar.files %" PRIu64 "\n", mode, o->clients,
	       o->files);
	printf("untar.dirs %" PRIu64 "\nuntar.bytes %" PRIu64 "\nuntar.seconds %.3f\n", r->dirs,
	       r->bytes, r->seconds);
	printf("untar.files_per_sec %.1f\n", rate);
	for (unsigned i = 0; i < r->nsteps; i++)
		if (r->step_count[i])
			printf("untar.lat_us.%s %.1f\n", r->step_name[i],
			       (double)r->step_ns[i] / (double)r->step_count[i] / 1e3);

	char lw[32] = "n/a", lwf[32] = "n/a", fl[32] = "n/a", flf[32] = "n/a";
	if (have && k1->have_log) {
		uint64_t w = k1->log_writes - k0->log_writes, f = k1->log_forces - k0->log_forces;
		snprintf(lw, sizeof(lw), "%" PRIu64, w);
		snprintf(lwf, sizeof(lwf), "%.3f", (double)w / nf);
		printf("untar.log_writes %s\nuntar.log_writes_per_file %s\n", lw, lwf);
		printf("untar.%s %" PRIu64 "\nuntar.%s_per_file %.3f\n", k1->forces_name, f,
		       k1->forces_name, (double)f / nf);
	}
	if (have && k1->have_flush) {
		uint64_t f = k1->flushes - k0->flushes;
		snprintf(fl, sizeof(fl), "%" PRIu64, f);
		snprintf(flf, sizeof(flf), "%.3f", (double)f / nf);
		printf("untar.flushes %s\nuntar.flushes_per_file %s\n", fl, flf);
	}
	if (s0->have_disk && s1->have_disk) {
		uint64_t df0 = s0->disk_flushes, df1 = s1->disk_flushes;
		printf("untar.disk_flushes %" PRIu64 "\n", df1 - df0);
		printf("untar.disk_flush_us_avg %.0f\n",
		       df1 > df0 ? (double)(s1->disk_ms - s0->disk_ms) * 1e3 / (double)(df1 - df0)
				 : 0.0);
	}
	if (o->csv) {
		printf("label,mode,clients,files,dirs,bytes,seconds,files_per_sec,log_writes,"
		       "log_writes_per_file,flushes,flushes_per_file\n");
		printf("%s,%s,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.1f,%s,%s,%s,%s\n",
		       o->label, mode, o->clients, o->files, r->dirs, r->bytes, r->seconds, rate,
		       lw, lwf, fl, flf);
	}
}
