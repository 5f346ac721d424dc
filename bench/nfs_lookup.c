/*
 * nfs_lookup.c - what a LOOKUP costs over the wire in a big directory
 * against a small one, over NFSv3 and NFSv4.1, on one server.
 *
 *   nfs-lookup --port P [--addr A] [--mount-port M] [--export PATH]
 *              [--small N] [--big N] [--lookups L] [--rounds R]
 *              [--inflight K[,K...]] [--proto 3,4] [--create-inflight C]
 *              [--seed S] [--csv FILE]
 *
 * Set-up (not timed), over NFSv3: MKDIR of two fresh directories at the
 * export's root, "nfs-lookup-PID-small" with --small entries (1,000) and
 * "nfs-lookup-PID-big" with --big entries (100,000), each entry a CREATE
 * (GUARDED, "entry-0000000" ... as bench/fs_scale.c names them), C of them
 * in flight (64). NFSv4.1 finds the same directories by LOOKUP from its
 * export (PATH from the pseudo-root; "/" for jnfsd's built-in export).
 * Then an untimed pass of L/4 lookups in each directory and protocol.
 *
 * Timed: R rounds (3); in each, for each protocol and each K (1 and 8), L
 * lookups (20,000) of existing names drawn at random (fixed seed) in the
 * small directory and L in the big one, K in flight, in chunks of 250:
 * the directories take turns chunk by chunk (who goes first changes every
 * chunk), so that load from elsewhere on a shared machine hits both
 * alike. A lookup is
 *   NFSv3    LOOKUP3 (its reply carries the object's and the directory's
 *            attributes), K calls in flight on one connection (libnfs);
 *   NFSv4.1  SEQUENCE PUTFH(dir) LOOKUP(name) GETFH GETATTR(type, change,
 *            size, fsid, fileid, mode, numlinks, owner, group, rawdev,
 *            space used, times, mounted-on fileid): what a Linux client
 *            sends for a lookup, GETATTR included; K compounds in flight
 *            on one session and connection, from K threads (src/nfs4c).
 * Latency is from a call's send to its reply, per call.
 *
 * Output, "name value" lines, per protocol (nfs3, nfs4) and K:
 *   nfs_lookup.P.kK.{small,big}.{lookups_per_s,mean_us,p50_us,p99_us}
 *       (the median over rounds of each round's figure)
 *   nfs_lookup.P.kK.roundR.ratio   lookups/s small over big in round R:
 *       what a lookup in the big directory costs over one in the small
 *   nfs_lookup.P.kK.ratio_{median,min,max}
 *   nfs_lookup.P.kK.within_10pct   1 when the median ratio is <= 1.10
 *   nfs_lookup.P.kK.p50_ratio_median   median latency big over small
 *       (median over rounds): the same cost, less moved by stalls
 *   nfs_lookup.P.kK.p50_added_us   what the big directory adds to the
 *       median latency (big minus small, median over rounds), to set
 *       beside what it adds in the engine (fs_scale.dir.lookup_added_ns)
 *       (the goal: printed, never enforced; not part of the test suite)
 * and with --csv FILE one header and one row per protocol and K:
 * proto,inflight,small_entries,big_entries,rounds,lookups,
 * small_lookups_per_s,big_lookups_per_s,small_mean_us,big_mean_us,
 * small_p50_us,big_p50_us,small_p99_us,big_p99_us,ratio,ratio_min,
 * ratio_max. A failed call ends the run with a message.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rand.h"
#include "base/time.h"
#include "bench_util.h"
#include "nfs_lookup.h"

#define MAX_K	   8 /* values of --inflight */
#define MAX_ROUNDS 101

struct opts {
	struct nfs_lookup_server srv;
	uint64_t n[NFS_LOOKUP_DIRS], lookups, seed;
	unsigned rounds, create_inflight, nk, k[MAX_K], k_max;
	bool v3, v4;
	const char *csv;
};

/* One timed phase's figures. */
struct phase {
	double lookups_per_s, mean_us, p50_us, p99_us;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned n)
{
	double s[MAX_ROUNDS];
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static struct nfs_lookup_conn *g3, *g4;

#define CHUNK 250 /* lookups in one directory before the other's turn */

/*
 * count lookups in each directory over protocol v (3 or 4), k in flight:
 * in chunks of CHUNK, the two directories taking turns (who goes first
 * changes every chunk), so that a burst of load from elsewhere lands on
 * both alike; each directory's figures from its own chunks' time.
 */
static void measure(const struct opts *o, int v, unsigned k, uint64_t count, uint64_t seed,
		    struct phase out[NFS_LOOKUP_DIRS])
{
	uint64_t *idx[NFS_LOOKUP_DIRS], *lat[NFS_LOOKUP_DIRS], ns[NFS_LOOKUP_DIRS] = {0};
	struct rng rng;
	rng_seed(&rng, seed);
	for (int d = 0; d < NFS_LOOKUP_DIRS; d++) {
		idx[d] = malloc(count * sizeof(*idx[d]));
		lat[d] = malloc(count * sizeof(*lat[d]));
		if (!idx[d] || !lat[d])
			die("out of memory");
		for (uint64_t i = 0; i < count; i++)
			idx[d][i] = rng_below(&rng, o->n[d]);
	}
	for (uint64_t at = 0, chunk = 0; at < count; at += CHUNK, chunk++) {
		uint64_t n = count - at < CHUNK ? count - at : CHUNK;
		for (int j = 0; j < NFS_LOOKUP_DIRS; j++) {
			int d = (int)((unsigned)j ^ (chunk & 1));
			uint64_t t0 = now_ns();
			if (v == 3)
				nfs_lookup3_lookups(g3, d, idx[d] + at, n, k, lat[d] + at);
			else
				nfs_lookup4_lookups(g4, d, idx[d] + at, n, k, lat[d] + at);
			ns[d] += now_ns() - t0;
		}
	}
	for (int d = 0; d < NFS_LOOKUP_DIRS; d++) {
		struct phase *p = &out[d];
		p->lookups_per_s = (double)count * 1e9 / (double)ns[d];
		double sum = 0;
		for (uint64_t i = 0; i < count; i++)
			sum += (double)lat[d][i];
		p->mean_us = sum / (double)count / 1e3;
		qsort(lat[d], count, sizeof(*lat[d]), cmp_u64);
		p->p50_us = (double)lat[d][count / 2] / 1e3;
		p->p99_us = (double)lat[d][count * 99 / 100] / 1e3;
		free(idx[d]);
		free(lat[d]);
	}
}

static void parse_list(const char *s, unsigned *out, unsigned *n, unsigned max)
{
	char *end;
	*n = 0;
	for (;;) {
		unsigned long v = strtoul(s, &end, 10);
		if (end == s || !v || v > 4096 || *n == max)
			die("bad list: %s", s);
		out[(*n)++] = (unsigned)v;
		if (*end != ',')
			break;
		s = end + 1;
	}
	if (*end)
		die("bad list: %s", s);
}

static const char usage[] =
	"usage: nfs-lookup --port P [--addr A] [--mount-port M] [--export PATH]\n"
	"                  [--small N] [--big N] [--lookups L] [--rounds R]\n"
	"                  [--inflight K[,K...]] [--proto 3,4] [--create-inflight C]\n"
	"                  [--seed S] [--csv FILE]\n";

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {{"port", required_argument, NULL, 'p'},
					      {"addr", required_argument, NULL, 'a'},
					      {"mount-port", required_argument, NULL, 'm'},
					      {"export", required_argument, NULL, 'e'},
					      {"small", required_argument, NULL, 's'},
					      {"big", required_argument, NULL, 'b'},
					      {"lookups", required_argument, NULL, 'l'},
					      {"rounds", required_argument, NULL, 'r'},
					      {"inflight", required_argument, NULL, 'k'},
					      {"proto", required_argument, NULL, 'P'},
					      {"create-inflight", required_argument, NULL, 'c'},
					      {"seed", required_argument, NULL, 'S'},
					      {"csv", required_argument, NULL, 'C'},
					      {NULL, 0, NULL, 0}};
	*o = (struct opts){.srv = {.addr = "127.0.0.1", .export = "/"},
			   .n = {1000, 100000},
			   .lookups = 20000,
			   .seed = 1,
			   .rounds = 3,
			   .create_inflight = 64,
			   .nk = 2,
			   .k = {1, 8},
			   .v3 = true,
			   .v4 = true};
	unsigned protos[2], np;
	int c;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->srv.port = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'a':
			o->srv.addr = optarg;
			break;
		case 'm':
			o->srv.mount_port = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'e':
			o->srv.export = optarg;
			break;
		case 's':
			o->n[0] = strtoull(optarg, NULL, 10);
			break;
		case 'b':
			o->n[1] = strtoull(optarg, NULL, 10);
			break;
		case 'l':
			o->lookups = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			o->rounds = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'k':
			parse_list(optarg, o->k, &o->nk, MAX_K);
			break;
		case 'P':
			parse_list(optarg, protos, &np, 2);
			o->v3 = o->v4 = false;
			for (unsigned i = 0; i < np; i++) {
				if (protos[i] == 3)
					o->v3 = true;
				else if (protos[i] == 4)
					o->v4 = true;
				else
					die("--proto: 3 or 4, not %u", protos[i]);
			}
			break;
		case 'c':
			o->create_inflight = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'S':
			o->seed = strtoull(optarg, NULL, 0);
			break;
		case 'C':
			o->csv = optarg;
			break;
		default:
			fputs(usage, stderr);
			exit(2);
		}
	}
	if (optind != argc || !o->srv.port || !o->n[0] || !o->n[1] || o->lookups < 100 ||
	    !o->rounds || o->rounds >= MAX_ROUNDS || !o->create_inflight ||
	    o->create_inflight > 4096) {
		fputs(usage, stderr);
		exit(2);
	}
	if (!o->srv.mount_port)
		o->srv.mount_port = o->srv.port;
	for (unsigned i = 0; i < o->nk; i++)
		if (o->k[i] > o->k_max)
			o->k_max = o->k[i];
}

static void print_phase(const char *pre, const char *which, const struct phase *p, unsigned rounds)
{
	double v[MAX_ROUNDS];
	static const char *const what[] = {"lookups_per_s", "mean_us", "p50_us", "p99_us"};
	for (int f = 0; f < 4; f++) {
		for (unsigned r = 0; r < rounds; r++)
			v[r] = ((const double *)&p[r])[f];
		printf("%s.%s.%s %.*f\n", pre, which, what[f], f ? 1 : 0, median(v, rounds));
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	parse(argc, argv, &o);
	const char *dname[NFS_LOOKUP_DIRS] = {"small", "big"};
	char path[NFS_LOOKUP_DIRS][64];

	/* the directories, over NFSv3 (also when only NFSv4.1 is measured) */
	g3 = nfs_lookup3_open(&o.srv);
	for (int d = 0; d < NFS_LOOKUP_DIRS; d++) {
		snprintf(path[d], sizeof(path[d]), "nfs-lookup-%d-%s", (int)getpid(), dname[d]);
		uint64_t t0 = now_ns();
		nfs_lookup3_make_dir(g3, d, path[d], o.n[d], o.create_inflight);
		printf("nfs_lookup.%s.entries %llu\n", dname[d], (unsigned long long)o.n[d]);
		printf("nfs_lookup.%s.creates_per_s %.0f\n", dname[d],
		       (double)o.n[d] * 1e9 / (double)(now_ns() - t0));
		fflush(stdout);
	}
	if (o.v4) {
		g4 = nfs_lookup4_open(&o.srv, o.k_max);
		for (int d = 0; d < NFS_LOOKUP_DIRS; d++)
			nfs_lookup4_find_dir(g4, d, path[d]);
	}

	int protos[2], np = 0;
	if (o.v3)
		protos[np++] = 3;
	if (o.v4)
		protos[np++] = 4;
	/* untimed: every directory's blocks and inodes as a steady state has them */
	struct phase warm[NFS_LOOKUP_DIRS];
	for (int p = 0; p < np; p++)
		measure(&o, protos[p], o.k_max, o.lookups / 4, o.seed + 99, warm);

	static struct phase ph[2][MAX_K][NFS_LOOKUP_DIRS][MAX_ROUNDS];
	struct phase one[NFS_LOOKUP_DIRS];
	for (unsigned r = 0; r < o.rounds; r++)
		for (int p = 0; p < np; p++)
			for (unsigned ki = 0; ki < o.nk; ki++) {
				measure(&o, protos[p], o.k[ki], o.lookups, mix64(o.seed + r), one);
				for (int d = 0; d < NFS_LOOKUP_DIRS; d++)
					ph[p][ki][d][r] = one[d];
			}

	FILE *csv = NULL;
	if (o.csv) {
		csv = fopen(o.csv, "w");
		if (!csv)
			die("%s: cannot write", o.csv);
		fprintf(csv, "proto,inflight,small_entries,big_entries,rounds,lookups,"
			     "small_lookups_per_s,big_lookups_per_s,small_mean_us,big_mean_us,"
			     "small_p50_us,big_p50_us,small_p99_us,big_p99_us,ratio,ratio_min,"
			     "ratio_max\n");
	}
	printf("nfs_lookup.rounds %u\n", o.rounds);
	printf("nfs_lookup.lookups_per_round %llu\n", (unsigned long long)o.lookups);
	for (int p = 0; p < np; p++)
		for (unsigned ki = 0; ki < o.nk; ki++) {
			char pre[64];
			snprintf(pre, sizeof(pre), "nfs_lookup.nfs%d.k%u", protos[p], o.k[ki]);
			struct phase *s = ph[p][ki][0], *b = ph[p][ki][1];
			print_phase(pre, "small", s, o.rounds);
			print_phase(pre, "big", b, o.rounds);
			double ratio[MAX_ROUNDS], lo = 1e300, hi = 0;
			for (unsigned r = 0; r < o.rounds; r++) {
				ratio[r] = s[r].lookups_per_s / b[r].lookups_per_s;
				printf("%s.round%u.ratio %.3f\n", pre, r + 1, ratio[r]);
				lo = ratio[r] < lo ? ratio[r] : lo;
				hi = ratio[r] > hi ? ratio[r] : hi;
			}
			double med = median(ratio, o.rounds);
			printf("%s.ratio_median %.3f\n%s.ratio_min %.3f\n%s.ratio_max %.3f\n", pre,
			       med, pre, lo, pre, hi);
			printf("%s.within_10pct %d\n", pre, med <= 1.10);
			double p50r[MAX_ROUNDS];
			for (unsigned r = 0; r < o.rounds; r++)
				p50r[r] = b[r].p50_us / s[r].p50_us;
			printf("%s.p50_ratio_median %.3f\n", pre, median(p50r, o.rounds));
			for (unsigned r = 0; r < o.rounds; r++)
				p50r[r] = b[r].p50_us - s[r].p50_us;
			printf("%s.p50_added_us %.1f\n", pre, median(p50r, o.rounds));
			if (csv) {
				double v[4][2][MAX_ROUNDS];
				for (unsigned r = 0; r < o.rounds; r++)
					for (int f = 0; f < 4; f++) {
						v[f][0][r] = ((const double *)&s[r])[f];
						v[f][1][r] = ((const double *)&b[r])[f];
					}
				fprintf(csv, "nfs%d,%u,%llu,%llu,%u,%llu", protos[p], o.k[ki],
					(unsigned long long)o.n[0], (unsigned long long)o.n[1],
					o.rounds, (unsigned long long)o.lookups);
				for (int f = 0; f < 4; f++)
					fprintf(csv, f ? ",%.1f,%.1f" : ",%.0f,%.0f",
						median(v[f][0], o.rounds),
						median(v[f][1], o.rounds));
				fprintf(csv, ",%.3f,%.3f,%.3f\n", med, lo, hi);
			}
		}
	if (csv && fclose(csv))
		die("%s: write failed", o.csv);
	if (g4)
		nfs_lookup4_close(g4);
	nfs_lookup3_close(g3);
	return 0;
}
