/*
 * nfs3_create_after.c - what one client's unstable data costs another
 * client's synchronous metadata operation on a sync export.
 *
 *   nfs3-create-after --port P [--mount-port P] [--addr A] [--export PATH]
 *                     [--mib M] [--wsize W] [--window N] [--rounds R]
 *                     [--creates N] [--jnfsd-stats]
 *
 * Two NFSv3 clients, each on its own connection. In each of R rounds:
 *   1. client B makes N files with CREATE, one at a time: "CREATE alone";
 *   2. client A makes a file and writes M MiB to it UNSTABLE, in WRITEs of
 *      W bytes, N in flight, and waits for every reply (no COMMIT);
 *   3. client B makes one file with CREATE at once: "CREATE after";
 *   4. client A COMMITs its file (which must make all M MiB durable) and
 *      removes it.
 * A sync export answers CREATE once the journal holds it; whether that
 * also pays for writing back A's data is what "after" against "alone"
 * shows. Every reply is checked; an error stops the run.
 *
 * Output: "name value" lines: create_after.create_alone_ms (median of all
 * rounds' step 1), create_after.create_after_ms (median of step 3, and each
 * round's value), create_after.write_mib_per_s, create_after.commit_ms
 * (medians), and with --jnfsd-stats the server's device flushes and log
 * writes during steps 3 (create_after.flushes_in_create, log_writes_in_create).
 * Not part of the test suite; it never asserts on time.
 */
#include <sys/time.h> /* before libnfs.h, which uses struct timeval */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "base/time.h"
#include "bench_util.h"
#include "nfs3_bench.h"
#include "untar_counters.h"

#define MAX_WSIZE  (1u << 20)
#define MAX_ROUNDS 64
#define MAX_CREATES 1024
#define STALL_SEC  120

struct opts {
	const char *addr, *export;
	unsigned port, mount_port, wsize, window, rounds, creates;
	uint64_t mib;
	bool jnfsd_stats;
};

static struct opts o = {.addr = "127.0.0.1", .export = "/", .wsize = 1u << 20, .window = 16,
			.rounds = 3, .creates = 20, .mib = 512};

struct client {
	struct rpc_context *rpc;
	const char *name;
	bool busy;     /* a call is in flight */
	struct fh fh;  /* what the last CREATE made */
	unsigned inflight;
	char verf[NFS3_WRITEVERFSIZE];
	bool verf_set, verf_bad;
};

static struct fh run_dir;
static char data[MAX_WSIZE];

static void check(struct client *c, const char *what, int status, void *res, nfsstat3 st)
{
	if (status != RPC_STATUS_SUCCESS)
		die("client %s: %s: %s", c->name, what,
		    status == RPC_STATUS_ERROR && res ? (const char *)res : "cancelled or timed out");
	if (st != NFS3_OK)
		die("client %s: %s: NFS3 status %d", c->name, what, (int)st);
}

/* Serve c's connection until nothing of it is in flight. */
static void wait_idle(struct client *c)
{
	uint64_t t0 = now_ns();
	while (c->busy || c->inflight) {
		struct pollfd pfd = {.fd = rpc_get_fd(c->rpc),
				     .events = (short)rpc_which_events(c->rpc)};
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (rpc_service(c->rpc, pfd.revents) < 0)
			die("client %s: %s", c->name, rpc_get_error(c->rpc));
		if (now_ns() - t0 > (uint64_t)STALL_SEC * NSEC_PER_SEC)
			die("client %s: no reply for %d s", c->name, STALL_SEC);
	}
}

static void connect_client(struct client *c, const char *name, unsigned port)
{
	c->name = name;
	c->rpc = bench_nfs3_connect(o.addr, port);
}

static void create_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	CREATE3res *r = res;
	check(c, "CREATE", status, res, status ? NFS3_OK : r->status);
	if (!r->CREATE3res_u.resok.obj.handle_follows)
		die("CREATE returned no handle");
	fh_copy(&c->fh, &r->CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	c->busy = false;
}

/* CREATE (GUARDED, 0644) of name in the run directory; its time in ns. */
static uint64_t do_create(struct client *c, const char *name)
{
	CREATE3args a;
	create_args(&a, &run_dir, name);
	c->busy = true;
	uint64_t t0 = now_ns();
	if (rpc_nfs3_create_async(c->rpc, create_cb, &a, c))
		die("CREATE: %s", rpc_get_error(c->rpc));
	wait_idle(c);
	return now_ns() - t0;
}

static void write_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	WRITE3res *r = res;
	check(c, "WRITE", status, res, status ? NFS3_OK : r->status);
	WRITE3resok *ok = &r->WRITE3res_u.resok;
	if (c->verf_set && memcmp(ok->verf, c->verf, NFS3_WRITEVERFSIZE))
		c->verf_bad = true;
	memcpy(c->verf, ok->verf, NFS3_WRITEVERFSIZE);
	c->verf_set = true;
	c->inflight--;
}

static void send_write(struct client *c, uint64_t off, uint32_t len)
{
	WRITE3args a;
	memset(&a, 0, sizeof(a));
	a.file = fh_arg(&c->fh);
	a.offset = off;
	a.count = len;
	a.stable = UNSTABLE;
	a.data.data_len = len;
	a.data.data_val = data;
	if (rpc_nfs3_write_async(c->rpc, write_cb, &a, c))
		die("WRITE: %s", rpc_get_error(c->rpc));
	c->inflight++;
}

/* mib MiB UNSTABLE to c->fh, window WRITEs in flight; its time in ns. */
static uint64_t write_unstable(struct client *c)
{
	uint64_t total = o.mib << 20, off = 0;
	c->verf_set = c->verf_bad = false;
	uint64_t t0 = now_ns(), last = t0;
	while (off < total || c->inflight) {
		while (off < total && c->inflight < o.window) {
			uint32_t n = (uint32_t)(total - off < o.wsize ? total - off : o.wsize);
			send_write(c, off, n);
			off += n;
		}
		unsigned before = c->inflight;
		struct pollfd pfd = {.fd = rpc_get_fd(c->rpc),
				     .events = (short)rpc_which_events(c->rpc)};
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (rpc_service(c->rpc, pfd.revents) < 0)
			die("client %s: %s", c->name, rpc_get_error(c->rpc));
		if (c->inflight != before)
			last = now_ns();
		else if (now_ns() - last > (uint64_t)STALL_SEC * NSEC_PER_SEC)
			die("client %s: no WRITE reply for %d s", c->name, STALL_SEC);
	}
	if (c->verf_bad)
		die("client %s: the WRITE verifier changed (server restarted?)", c->name);
	return now_ns() - t0;
}

static void commit_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	COMMIT3res *r = res;
	check(c, "COMMIT", status, res, status ? NFS3_OK : r->status);
	if (memcmp(r->COMMIT3res_u.resok.verf, c->verf, NFS3_WRITEVERFSIZE))
		die("client %s: COMMIT verifier differs from the WRITEs'", c->name);
	c->busy = false;
}

static void remove_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	REMOVE3res *r = res;
	check(c, "REMOVE", status, res, status ? NFS3_OK : r->status);
	c->busy = false;
}

static void do_remove(struct client *c, const char *name)
{
	REMOVE3args a;
	memset(&a, 0, sizeof(a));
	a.object.dir = fh_arg(&run_dir);
	a.object.name = (char *)name;
	c->busy = true;
	if (rpc_nfs3_remove_async(c->rpc, remove_cb, &a, c))
		die("REMOVE: %s", rpc_get_error(c->rpc));
	wait_idle(c);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)(n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1e6;
}

static bool read_counters(struct untar_counters *c)
{
	char addr[128];
	snprintf(addr, sizeof(addr), "%s:%u", o.addr, o.port);
	return o.jnfsd_stats && !untar_counters_jnfsd(addr, c) && c->have_flush;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nfs3-create-after --port P [--mount-port P] [--addr A] [--export PATH]\n"
		   "                         [--mib M] [--wsize W] [--window N] [--rounds R]\n"
		   "                         [--creates N] [--jnfsd-stats]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"addr", required_argument, NULL, 'a'},	      {"port", required_argument, NULL, 'p'},
		{"mount-port", required_argument, NULL, 'M'}, {"export", required_argument, NULL, 'e'},
		{"mib", required_argument, NULL, 'm'},	      {"wsize", required_argument, NULL, 'w'},
		{"window", required_argument, NULL, 'W'},     {"rounds", required_argument, NULL, 'r'},
		{"creates", required_argument, NULL, 'n'},    {"jnfsd-stats", no_argument, NULL, 'J'},
		{"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'a': o.addr = optarg; break;
		case 'p': o.port = (unsigned)atoi(optarg); break;
		case 'M': o.mount_port = (unsigned)atoi(optarg); break;
		case 'e': o.export = optarg; break;
		case 'm': o.mib = strtoull(optarg, NULL, 0); break;
		case 'w': o.wsize = (unsigned)atoi(optarg); break;
		case 'W': o.window = (unsigned)atoi(optarg); break;
		case 'r': o.rounds = (unsigned)atoi(optarg); break;
		case 'n': o.creates = (unsigned)atoi(optarg); break;
		case 'J': o.jnfsd_stats = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || !o.port) {
		usage(stderr);
		return 2;
	}
	if (!o.mount_port)
		o.mount_port = o.port;
	if (!o.mib || o.wsize < 512 || o.wsize > MAX_WSIZE || !o.window || !o.rounds ||
	    o.rounds > MAX_ROUNDS || !o.creates || o.creates > MAX_CREATES)
		die("bad --mib, --wsize, --window, --rounds or --creates");
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 131 + 7);

	struct client a = {0}, b = {0};
	bench_nfs3_mount(o.addr, o.mount_port, o.export, &run_dir);
	connect_client(&a, "A", o.port);
	connect_client(&b, "B", o.port);
	rpc_set_next_xid(b.rpc, 1u << 24);

	/* the run's directory */
	char dname[96];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(dname, sizeof(dname), "create-after-%ld-%ld.%09ld", (long)getpid(),
		 (long)ts.tv_sec, ts.tv_nsec);
	bench_nfs3_mkdir(a.rpc, &run_dir, dname, &run_dir);

	static uint64_t alone[MAX_ROUNDS * MAX_CREATES];
	uint64_t after[MAX_ROUNDS], after_sorted[MAX_ROUNDS], wr[MAX_ROUNDS], commit[MAX_ROUNDS];
	uint64_t flushes = 0, log_writes = 0;
	bool have = o.jnfsd_stats;
	unsigned nalone = 0;
	for (unsigned r = 0; r < o.rounds; r++) {
		char name[64];
		for (unsigned i = 0; i < o.creates; i++) {
			snprintf(name, sizeof(name), "alone-%u-%u", r, i);
			alone[nalone++] = do_create(&b, name);
		}
		snprintf(name, sizeof(name), "big-%u", r);
		do_create(&a, name);
		wr[r] = write_unstable(&a);
		struct untar_counters k0, k1;
		have = read_counters(&k0) && have;
		snprintf(name, sizeof(name), "after-%u", r);
		after[r] = do_create(&b, name);
		have = read_counters(&k1) && have;
		if (have) {
			/* the counter reads bracket the CREATE: whatever else the
			 * server did meanwhile (nothing: A is idle) counts too */
			flushes += k1.flushes - k0.flushes;
			log_writes += k1.log_writes - k0.log_writes;
		}
		COMMIT3args ca = {.file = fh_arg(&a.fh), .offset = 0, .count = 0};
		a.busy = true;
		uint64_t t0 = now_ns();
		if (rpc_nfs3_commit_async(a.rpc, commit_cb, &ca, &a))
			die("COMMIT: %s", rpc_get_error(a.rpc));
		wait_idle(&a);
		commit[r] = now_ns() - t0;
		snprintf(name, sizeof(name), "big-%u", r);
		do_remove(&a, name);
		printf("create_after.round%u.create_after_ms %.3f\n", r, (double)after[r] / 1e6);
		fflush(stdout);
	}
	memcpy(after_sorted, after, sizeof(after));
	printf("create_after.mib %" PRIu64 "\n", o.mib);
	printf("create_after.create_alone_ms %.3f\n", median_ms(alone, nalone));
	printf("create_after.create_after_ms %.3f\n", median_ms(after_sorted, o.rounds));
	printf("create_after.write_ms %.1f\n", median_ms(wr, o.rounds));
	printf("create_after.write_mib_per_s %.0f\n",
	       (double)o.mib / (median_ms(wr, o.rounds) / 1e3));
	printf("create_after.commit_ms %.3f\n", median_ms(commit, o.rounds));
	if (have) {
		printf("create_after.flushes_in_create %.2f\n", (double)flushes / o.rounds);
		printf("create_after.log_writes_in_create %.2f\n", (double)log_writes / o.rounds);
	}
	rpc_destroy_context(a.rpc);
	rpc_destroy_context(b.rpc);
	return 0;
}
