/*
 * test_pnfs_starve.c - a client that never returns its layout must not tie
 * up the server (docs/design.md rule 9): the seed's starvation test.
 *
 *   test-pnfs-starve JNFSD JNFS
 *
 * jnfsd runs with 4 worker threads, a 5 s lease and a --fence-cmd script
 * that records its argument; the script fails (exit 1) while the file
 * "fence-fails" exists, which it does until the test has seen the fence
 * fail and be tried again. Client A (`jnfs pnfs hold --end-probe`, a
 * process of its own) holds an RW layout of "held" and never returns it:
 * recalls are acknowledged and ignored. Client B (this process, the
 * project's NFSv4.1 library) sends 64 WRITEs to "held" through the server
 * at once, each sent again 100 ms after a DELAY (as the Linux client
 * polls), while it reads 4 KiB of another file every 100 ms. A third
 * client C holds an RW layout of "held2" and, when recalled, returns only
 * part of it; B sends one WRITE to "held2" too.
 *
 * What is checked (nothing about time but the order of events, and a
 * watchdog):
 *  1. Every WRITE's first answer is DELAY, and it came before any client
 *     was fenced: the request that started the recall waited at most its
 *     30 ms parked and the others not at all; no request waited for the
 *     lease.
 *  2. No WRITE succeeded before the fence command ran, and every one
 *     succeeded after it; their data reads back through the server.
 *     While the fence command failed (and was tried again), no WRITE
 *     succeeded: the holders may still write the blocks, so none of them
 *     changes hands (docs/pnfs.md, "Fencing").
 *  3. Reads of the other file were answered while the WRITEs were being
 *     delayed, every one of them.
 *  4. The fence command ran with the clients' address, once for A and
 *     once for C (a partial return of a recalled layout is no return).
 *  5. A's LAYOUTCOMMIT and LAYOUTRETURN after it was fenced are refused
 *     (DELEG_REVOKED), and a SEQUENCE reply told it its recallable state
 *     was revoked; the same for C.
 *  6. jnfsd counts 2 fenced clients, the failed fences, and parked
 *     requests, and its own
 *     latency histogram of COMPOUND (the Prometheus endpoint, --metrics)
 *     has every call answered in less than the lease: no request waited
 *     for the holder. It stops cleanly and `jnfs check` is clean.
 *
 * What is printed, not checked (it is time): the latency of the reads
 * (`pnfs_starve.read_us_*` percentiles and how many took more than 5 ms;
 * the seed's claim is that every one is answered within 5 ms), how many
 * DELAYs the WRITEs got and how long after the recall they succeeded.
 * Only a watchdog fails on time: a READ or WRITE not answered within the
 * lease (a request held for the holder), and the whole test after 240 s.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/time.h"
#include "check.h"
#include "pnfs_util.h"

#define NWRITES	  64
#define WRITE_LEN 4096u
#define LEASE_S	  5
#define SLOW_US	  5000.0
#define MAX_READS 2000
#define LEASE_NS  ((uint64_t)LEASE_S * NSEC_PER_SEC)

static struct pu_server srv;
static char fence_log[128], fence_failed_log[128], fence_fails[128];
static struct nfs4c_client *cb;
static struct nfs4c_fh broot, held_fh, other_fh, held2_fh;
static struct stateid4 held_sid, other_sid, held2_sid;

/* Has the fence command run (for anyone)? */
static bool fenced_now(void)
{
	struct stat st;
	return stat(fence_log, &st) == 0 && st.st_size > 0;
}

static unsigned lines_of(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	unsigned n = 0;
	for (int ch; (ch = fgetc(f)) != EOF;)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* ---- B's WRITEs ---- */

static atomic_uint writes_ok;

struct wr {
	pthread_t t;
	const struct nfs4c_fh *fh;
	const struct stateid4 *sid;
	uint64_t off;
	uint8_t data[WRITE_LEN];
	nfsstat4 first;
	bool first_before_fence; /* the first answer came before any fence */
	bool ok_after_fence;	 /* the fence had run when it succeeded */
	unsigned delays;
	uint64_t first_ns, ok_ns, longest_ns;
};

static pthread_barrier_t go;
static uint64_t t_go;

static void *writer(void *arg)
{
	struct wr *w = arg;
	pthread_barrier_wait(&go);
	for (;;) {
		uint64_t t0 = now_ns();
		nfsstat4 st = pu_write(cb, w->fh, w->sid, w->off, w->data, WRITE_LEN, FILE_SYNC4);
		uint64_t t1 = now_ns();
		bool fenced = fenced_now();
		if (t1 - t0 >= LEASE_NS) {
			fprintf(stderr, "watchdog: a WRITE took %.1f s, a lease or more\n",
				(double)(t1 - t0) / 1e9);
			exit(1);
		}
		w->longest_ns = MAX(w->longest_ns, t1 - t0);
		if (!w->first_ns) {
			w->first = st;
			w->first_ns = t1;
			w->first_before_fence = !fenced;
		}
		if (st == NFS4_OK) {
			w->ok_ns = t1;
			w->ok_after_fence = fenced;
			atomic_fetch_add(&writes_ok, 1);
			return NULL;
		}
		CHECK_EQ(st, NFS4ERR_DELAY);
		w->delays++;
		sleep_ns(100 * NSEC_PER_MSEC);
	}
}

/* ---- B's reads ---- */

static atomic_bool reads_stop;
static uint64_t read_lat[MAX_READS], read_at[MAX_READS];
static unsigned nreads;

static void *reader(void *arg)
{
	uint8_t buf[4096];
	pthread_barrier_wait(&go);
	while (!atomic_load(&reads_stop) && nreads < MAX_READS) {
		uint32_t got;
		uint64_t t0 = now_ns();
		CHECK_EQ(pu_read(cb, &other_fh, &other_sid, 0, buf, sizeof(buf), &got), NFS4_OK);
		uint64_t t1 = now_ns();
		CHECK_EQ(got, sizeof(buf));
		if (t1 - t0 >= LEASE_NS) {
			fprintf(stderr, "watchdog: a READ took %.1f s, a lease or more\n",
				(double)(t1 - t0) / 1e9);
			exit(1);
		}
		read_lat[nreads] = t1 - t0;
		read_at[nreads++] = t1;
		sleep_ns(100 * NSEC_PER_MSEC);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- the server's COMPOUND latency histogram ---- */

/*
 * From jnfsd's Prometheus endpoint: how many COMPOUNDs it answered, and
 * how many within le_us microseconds (a bucket bound: a power of two).
 */
static void compound_latency(uint64_t le_us, uint64_t *within, uint64_t *all)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(srv.j.metrics_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	CHECK_OK(connect(fd, (struct sockaddr *)&sin, sizeof(sin)));
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	CHECK_EQ(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	size_t cap = 1u << 22, n = 0;
	char *text = xmalloc(cap);
	for (ssize_t r; n < cap - 1 && (r = read(fd, text + n, cap - 1 - n)) > 0;)
		n += (size_t)r;
	text[n] = '\0';
	close(fd);
	const char *name = "jnfs_rpc_procedure_duration_seconds_";
	char le[64];
	snprintf(le, sizeof(le), "le=\"%.6f\"", (double)le_us / 1e6);
	*within = *all = UINT64_MAX;
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		if (strncmp(l, name, strlen(name)) || !strstr(l, "proc=\"compound\"") ||
		    !strstr(l, "version=\"4\""))
			continue;
		const char *v = strrchr(l, ' ');
		CHECK(v);
		if (!strncmp(l + strlen(name), "bucket{", 7) && strstr(l, le))
			*within = strtoull(v + 1, NULL, 10);
		else if (!strncmp(l + strlen(name), "count{", 6))
			*all = strtoull(v + 1, NULL, 10);
	}
	free(text);
	CHECK(*within != UINT64_MAX && *all != UINT64_MAX);
}

/* ---- C: returns part of a recalled layout ---- */

static atomic_uint c_recalls;

static nfsstat4 c_recall(void *arg, const struct nfs4c_cb_req *rq, const struct nfs_cb_argop4 *op,
			 struct nfs_cb_resop4 *res)
{
	atomic_fetch_add(&c_recalls, 1);
	return NFS4_OK; /* the partial return is sent by main, off this thread */
}

/* ---- A: jnfs pnfs hold ---- */

static pid_t a_pid;
static FILE *a_out;

static void start_holder(void)
{
	int fd;
	const char *argv[] = {srv.jnfs, "pnfs",	  srv.url, "--device",	  srv.image, "hold",
			      "held",	"--size", "256K",  "--end-probe", NULL};
	a_pid = pu_spawn(argv, &fd);
	a_out = fdopen(fd, "r");
	char line[512];
	CHECK(fgets(line, sizeof(line), a_out));
	printf("A: %s", line);
	CHECK(!strncmp(line, "pnfs.hold: holding", 18));
}

/* SIGTERM A; what it printed at the end. */
static char *stop_holder(void)
{
	CHECK_OK(kill(a_pid, SIGTERM));
	char *rest = xcalloc(1, 8192);
	size_t n = 0;
	while (n < 8191 && fgets(rest + n, (int)(8192 - n), a_out))
		n += strlen(rest + n);
	fclose(a_out);
	int status;
	CHECK_EQ(waitpid(a_pid, &status, 0), a_pid);
	printf("A at its end:\n%s", rest);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return rest;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(240); /* the watchdog: everything here takes about 2 leases */
	if (argc != 3) {
		fprintf(stderr, "usage: test-pnfs-starve JNFSD JNFS\n");
		return 2;
	}
	pu_init(&srv, argv[1], argv[2], NULL);
	char script[128], fence_cmd[192], lease[16];
	snprintf(script, sizeof(script), "%s/fence.sh", srv.dir);
	snprintf(fence_log, sizeof(fence_log), "%s/fenced", srv.dir);
	snprintf(fence_failed_log, sizeof(fence_failed_log), "%s/fence-failed", srv.dir);
	snprintf(fence_fails, sizeof(fence_fails), "%s/fence-fails", srv.dir);
	FILE *f = fopen(script, "w");
	CHECK(f);
	fprintf(f,
		"#!/bin/sh\nif [ -e %s ]; then echo \"$1\" >>%s; exit 1; fi\n"
		"echo \"$1\" >>%s\n",
		fence_fails, fence_failed_log, fence_log);
	fclose(f);
	f = fopen(fence_fails, "w");
	CHECK(f);
	fclose(f);
	CHECK_OK(chmod(script, 0755));
	snprintf(fence_cmd, sizeof(fence_cmd), "%s \"$1\"", script);
	snprintf(lease, sizeof(lease), "%d", LEASE_S);
	const char *extra[] = {"--threads", "4",	 "--lease-seconds", lease, "--fence-cmd",
			       fence_cmd,   "--metrics", "127.0.0.1:0",	    NULL};
	pu_start(&srv, extra);

	/* B: the files, "other" with 4 KiB to read */
	cb = pu_client(&srv, "starve-b", &broot);
	uint8_t buf[WRITE_LEN];
	pu_pattern(buf, sizeof(buf), 0, 99);
	CHECK_EQ(pu_open(cb, &broot, "other", true, OPEN4_SHARE_ACCESS_BOTH, &other_fh, &other_sid),
		 NFS4_OK);
	CHECK_EQ(pu_write(cb, &other_fh, &other_sid, 0, buf, sizeof(buf), FILE_SYNC4), NFS4_OK);

	/* A holds "held"; C holds "held2" */
	start_holder();
	struct nfs4c_fh croot, c_fh;
	struct stateid4 c_sid;
	struct pu_layout cl;
	struct nfs4c_client *cc = pu_client(&srv, "starve-c", &croot);
	CHECK_OK(nfs4c_set_cb(cc, OP_CB_LAYOUTRECALL, c_recall, NULL));
	CHECK_EQ(pu_open(cc, &croot, "held2", true, OPEN4_SHARE_ACCESS_BOTH, &c_fh, &c_sid),
		 NFS4_OK);
	CHECK_EQ(pu_layoutget(cc, &c_fh, LAYOUTIOMODE4_RW, 0, 256 * 1024, 256 * 1024, &c_sid, 0,
			      &cl),
		 NFS4_OK);
	CHECK_EQ(pu_open(cb, &broot, "held", false, OPEN4_SHARE_ACCESS_BOTH, &held_fh, &held_sid),
		 NFS4_OK);
	CHECK_EQ(
		pu_open(cb, &broot, "held2", false, OPEN4_SHARE_ACCESS_BOTH, &held2_fh, &held2_sid),
		NFS4_OK);
	uint64_t waits0 = tc_jnfsd_stat(&srv.j, "nfs4.layout.recall_waits");

	/* B: 64 WRITEs to "held" and one to "held2", and the reads */
	static struct wr w[NWRITES + 1];
	pthread_t rt;
	CHECK_OK(pthread_barrier_init(&go, NULL, NWRITES + 3));
	for (unsigned i = 0; i <= NWRITES; i++) {
		w[i].fh = i < NWRITES ? &held_fh : &held2_fh;
		w[i].sid = i < NWRITES ? &held_sid : &held2_sid;
		w[i].off = (uint64_t)(i % NWRITES) * WRITE_LEN;
		pu_pattern(w[i].data, WRITE_LEN, w[i].off, 1000 + i);
		CHECK_OK(pthread_create(&w[i].t, NULL, writer, &w[i]));
	}
	CHECK_OK(pthread_create(&rt, NULL, reader, NULL));
	t_go = now_ns();
	pthread_barrier_wait(&go);
	/* C returns the first 64 KiB of its layout once recalled, and keeps
	 * the rest: still a recalled layout not returned */
	while (!atomic_load(&c_recalls))
		sleep_ns(NSEC_PER_MSEC);
	struct stateid4 c_ls = cl.stateid;
	CHECK_EQ(pu_layoutreturn(cc, &c_fh, LAYOUTIOMODE4_RW, LAYOUTRETURN4_FILE, 0, 64 * 1024,
				 &c_ls, &c_ls),
		 NFS4_OK);
	CHECK(c_ls.seqid != 0);
	printf("C returned [0, 64K) of its recalled layout of [0, 256K)\n");
	/* the fence fails for both holders, and is tried again: meanwhile no
	 * WRITE gets through */
	uint64_t give_up = now_ns() + 12 * LEASE_NS;
	while (lines_of(fence_failed_log) < 4 && !atomic_load(&writes_ok) && now_ns() < give_up)
		sleep_ns(10 * NSEC_PER_MSEC);
	CHECK_EQ(atomic_load(&writes_ok), 0);
	CHECK(lines_of(fence_failed_log) >= 4);
	CHECK(!fenced_now());
	unsigned failed = lines_of(fence_failed_log);
	printf("the fence command failed %u times (tried again each pass); no WRITE went "
	       "through\n",
	       failed);
	CHECK_OK(unlink(fence_fails));
	for (unsigned i = 0; i <= NWRITES; i++)
		CHECK_OK(pthread_join(w[i].t, NULL));
	atomic_store(&reads_stop, true);
	CHECK_OK(pthread_join(rt, NULL));

	/* 1, 2: the WRITEs */
	uint64_t first_ok = UINT64_MAX, last_ok = 0, last_first = 0, longest = 0;
	unsigned delays = 0;
	for (unsigned i = 0; i <= NWRITES; i++) {
		CHECK_EQ(w[i].first, NFS4ERR_DELAY);
		CHECK(w[i].first_before_fence);
		CHECK(w[i].ok_after_fence);
		first_ok = MIN(first_ok, w[i].ok_ns);
		last_ok = MAX(last_ok, w[i].ok_ns);
		last_first = MAX(last_first, w[i].first_ns);
		longest = MAX(longest, w[i].longest_ns);
		delays += w[i].delays;
	}
	for (unsigned i = 0; i <= NWRITES; i++) {
		uint32_t got;
		uint8_t back[WRITE_LEN];
		CHECK_EQ(pu_read(cb, w[i].fh, w[i].sid, w[i].off, back, WRITE_LEN, &got), NFS4_OK);
		CHECK(got == WRITE_LEN && !memcmp(back, w[i].data, WRITE_LEN));
	}
	printf("pnfs_starve.writes %u\n", NWRITES + 1);
	printf("pnfs_starve.write_delays %u\n", delays);
	printf("pnfs_starve.write_first_answers_ms %.1f\n", (double)(last_first - t_go) / 1e6);
	printf("pnfs_starve.write_longest_call_ms %.1f\n", (double)longest / 1e6);
	printf("pnfs_starve.write_first_ok_ms %.1f\n", (double)(first_ok - t_go) / 1e6);
	printf("pnfs_starve.write_last_ok_ms %.1f\n", (double)(last_ok - t_go) / 1e6);
	TEST_PASS("every WRITE was answered DELAY before the fence, and succeeded after it");

	/* 3: the reads */
	unsigned during = 0, slow = 0;
	for (unsigned i = 0; i < nreads; i++) {
		if (read_at[i] < first_ok)
			during++;
		if ((double)read_lat[i] / 1e3 > SLOW_US)
			slow++;
	}
	CHECK(during >= 1);
	qsort(read_lat, nreads, sizeof(read_lat[0]), cmp_u64);
	printf("pnfs_starve.reads %u\n", nreads);
	printf("pnfs_starve.reads_while_delayed %u\n", during);
	printf("pnfs_starve.read_us_p50 %.1f\n", (double)read_lat[nreads / 2] / 1e3);
	printf("pnfs_starve.read_us_p90 %.1f\n", (double)read_lat[nreads * 9 / 10] / 1e3);
	printf("pnfs_starve.read_us_p99 %.1f\n", (double)read_lat[nreads * 99 / 100] / 1e3);
	printf("pnfs_starve.read_us_max %.1f\n", (double)read_lat[nreads - 1] / 1e3);
	printf("pnfs_starve.reads_over_5ms %u\n", slow);
	TEST_PASS("reads of another file answered while the WRITEs were delayed");

	/* 4: the fence command, once per client */
	f = fopen(fence_log, "r");
	CHECK(f);
	char line[64];
	unsigned fences = 0;
	while (fgets(line, sizeof(line), f)) {
		CHECK(!strcmp(line, "127.0.0.1\n"));
		fences++;
	}
	fclose(f);
	CHECK_EQ(fences, 2);
	printf("the fence command ran twice with 127.0.0.1\n");
	TEST_PASS("--fence-cmd ran with the address of each client that kept its layout");

	/* 5: A's and C's later layout operations are refused */
	char *rest = stop_holder();
	CHECK(strstr(rest, "pnfs.hold.layoutcommit NFS4ERR_DELEG_REVOKED\n"));
	CHECK(strstr(rest, "pnfs.hold.layoutreturn NFS4ERR_DELEG_REVOKED\n"));
	CHECK(strstr(rest, "pnfs.hold.state_revoked 1\n"));
	free(rest);
	struct nfs4c_blk_ext e = {
		.foff = 128 * 1024, .len = 4096, .state = PNFS_BLOCK_READ_WRITE_DATA};
	memcpy(e.devid, cl.ext[0].devid, sizeof(e.devid));
	CHECK_EQ(pu_layoutcommit(cc, &c_fh, &c_ls, &e, 1, UINT64_MAX, NULL), NFS4ERR_DELEG_REVOKED);
	CHECK_EQ(pu_layoutreturn(cc, &c_fh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
				 &c_ls, NULL),
		 NFS4ERR_DELEG_REVOKED);
	struct nfs4c_info info;
	nfs4c_get_info(cc, &info);
	CHECK(info.status_flags & SEQ4_STATUS_RECALLABLE_STATE_REVOKED);
	/* the client frees the revoked stateid (RFC 8881 8.2.4), and the flag
	 * goes */
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cc);
	nfs4c_op_free_stateid(&c, &c_ls);
	CHECK_OK(nfs4c_send(&c));
	CHECK_EQ(c.status, NFS4_OK);
	nfs4c_compound_destroy(&c);
	CHECK_OK(nfs4c_sequence(cc));
	nfs4c_get_info(cc, &info);
	CHECK(!(info.status_flags & SEQ4_STATUS_RECALLABLE_STATE_REVOKED));
	TEST_PASS("a fenced client's LAYOUTCOMMIT and LAYOUTRETURN are refused, SEQUENCE says so");

	/* 6: the server's counters, a clean stop, a clean image */
	uint64_t fenced = tc_jnfsd_stat(&srv.j, "nfs4.layout.fenced");
	uint64_t fence_failed = tc_jnfsd_stat(&srv.j, "nfs4.layout.fence_failed");
	CHECK(fence_failed >= failed);
	uint64_t waits = tc_jnfsd_stat(&srv.j, "nfs4.layout.recall_waits") - waits0;
	printf("jnfsd: %llu clients fenced, %llu requests parked for a recall\n",
	       (unsigned long long)fenced, (unsigned long long)waits);
	CHECK_EQ(fenced, 2);
	CHECK(waits >= 1);
	/* the largest bucket bound below the lease */
	uint64_t le_us = 2;
	while (le_us * 2 < (uint64_t)LEASE_S * 1000000)
		le_us *= 2;
	uint64_t within, all;
	compound_latency(le_us, &within, &all);
	printf("jnfsd: %llu of %llu COMPOUNDs answered within %.1f s (the lease: %d s)\n",
	       (unsigned long long)within, (unsigned long long)all, (double)le_us / 1e6, LEASE_S);
	CHECK(all > NWRITES);
	CHECK_EQ(within, all);
	pu_close(cc, &c_fh, &c_sid);
	pu_client_end(cc);
	pu_close(cb, &held_fh, &held_sid);
	pu_close(cb, &held2_fh, &held2_sid);
	pu_close(cb, &other_fh, &other_sid);
	pu_client_end(cb);
	pu_finish(&srv);
	TEST_PASS("a client that never returns its layout does not tie up the server");
	return 0;
}
