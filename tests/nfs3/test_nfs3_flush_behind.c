/*
 * test_nfs3_flush_behind.c - one client's unstable data does not sit in
 * the device's volatile cache for another client's sync CREATE to flush
 * (docs/design.md rules 7 and 8; src/dev/dev.h, B1-B3), through jnfsd.
 *
 * jnfsd runs with --flush-behind 1 MiB (so a writer waits past H = 4 MiB).
 * Client A writes 64 MiB UNSTABLE to a file and gets every reply (no
 * COMMIT). The counters then show flush-behind flushes, a high-water mark
 * of unflushed bytes no higher than H plus one WRITE, and at most H
 * unflushed: all that client B's CREATE on a sync export, on another
 * connection, can have to write back, whether its journal write flushes
 * the device or is a FUA write that does (a write and an fdatasync, where
 * the device has no FUA). After the CREATE the newest flush covered at
 * most H. A COMMIT of A's file then succeeds with its WRITEs' verifier,
 * and the data reads back.
 *
 * The same with --flush-behind 0 shows what the counters measure: all
 * 64 MiB are unflushed when the CREATE comes. No timing is asserted.
 *
 * usage: test-nfs3-flush-behind JNFSD JNFS
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "jnfsd_proc.h"
#include "nfs3/nfs3_client.h"

#define BOUND (1ull << 20)
#define LIMIT (4 * BOUND)
#define WSIZE (256u << 10)
#define TOTAL (64ull << 20)

static struct tc_jnfsd jnfsd;
static char buf[WSIZE];

static void kill_server(void)
{
	if (jnfsd.pid > 0)
		kill(jnfsd.pid, SIGKILL);
}

static struct nfs_fh3 create(struct rpc_context *rpc, struct nfs_fh3 dir, const char *name,
			     struct raw *keep)
{
	CREATE3args a = {.where = {dir, (char *)name}, .how = {.mode = UNCHECKED}};
	*keep = (struct raw){.inspect = inspect_create};
	RAW(rpc, keep, rpc_nfs3_create_async(rpc, raw_cb, &a, keep));
	CHECK_EQ(keep->nfs_status, NFS3_OK);
	keep->fh.data.data_val = keep->fhbuf;
	return keep->fh;
}

static void fill(uint64_t off)
{
	for (size_t i = 0; i < WSIZE; i += 8) {
		uint64_t v = (off + i) * 0x9e3779b97f4a7c15ull;
		memcpy(buf + i, &v, 8);
	}
}

/* One life of jnfsd with --flush-behind bound. */
static void run(const char *bin, const char *bound)
{
	const char *args[] = {"--listen",	"127.0.0.1:0", "--rpcbind", "off",
			      "--flush-behind", bound,	       NULL};
	bool on = strcmp(bound, "0") != 0;
	tc_jnfsd_start(&jnfsd, bin, args);
	CHECK_EQ(tc_jnfsd_stat(&jnfsd, "dev.flush_behind_bound"), on ? BOUND : 0);
	struct nfs_context *na = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct nfs_context *nb = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct rpc_context *ra = nfs_get_rpc_context(na), *rb = nfs_get_rpc_context(nb);
	struct raw keep_root_a, keep_root_b, keep_a, keep_b;
	struct nfs_fh3 root_a = tn_handle_of(ra, jnfsd.port[0], "/", "/", &keep_root_a);
	struct nfs_fh3 root_b = tn_handle_of(rb, jnfsd.port[0], "/", "/", &keep_root_b);
	struct nfs_fh3 fa = create(ra, root_a, "a", &keep_a);

	/* A: 64 MiB UNSTABLE */
	uint8_t verf[8];
	for (uint64_t off = 0; off < TOTAL; off += WSIZE) {
		fill(off);
		WRITE3args a = {.file = fa, .offset = off, .count = WSIZE, .stable = UNSTABLE};
		a.data.data_len = WSIZE;
		a.data.data_val = buf;
		struct raw r = {.inspect = inspect_write};
		RAW(ra, &r, rpc_nfs3_write_async(ra, raw_cb, &a, &r));
		CHECK_EQ(r.nfs_status, NFS3_OK);
		CHECK_EQ(r.u32[0], WSIZE);
		if (off == 0)
			memcpy(verf, r.verf, 8);
		CHECK(memcmp(verf, r.verf, 8) == 0);
	}
	uint64_t held = tc_jnfsd_stat(&jnfsd, "dev.unflushed_bytes");
	uint64_t max = tc_jnfsd_stat(&jnfsd, "dev.unflushed_bytes_max");
	uint64_t fb = tc_jnfsd_stat(&jnfsd, "dev.flush_behind_flushes");
	uint64_t flushes = tc_jnfsd_stat(&jnfsd, "dev.flushes");
	uint64_t fua = tc_jnfsd_stat(&jnfsd, "dev.fua_writes");
	printf("%s: after 64 MiB UNSTABLE: %llu unflushed (most %llu), %llu flush-behind "
	       "flushes, %llu throttled writes\n",
	       on ? "on" : "off", (unsigned long long)held, (unsigned long long)max,
	       (unsigned long long)fb,
	       (unsigned long long)tc_jnfsd_stat(&jnfsd, "dev.flush_behind_throttles"));
	if (on) {
		CHECK(fb >= 1);
		CHECK(max <= LIMIT + WSIZE);
		CHECK(held <= LIMIT);
	} else {
		CHECK_EQ(fb, 0);
		CHECK(held >= TOTAL);
	}

	/* B: CREATE on the sync export, another connection */
	struct raw keep_c;
	create(rb, root_b, "b", &keep_c);
	uint64_t last = tc_jnfsd_stat(&jnfsd, "dev.flush_bytes_last");
	uint64_t paid = tc_jnfsd_stat(&jnfsd, "dev.flushes") - flushes +
			tc_jnfsd_stat(&jnfsd, "dev.fua_writes") - fua;
	printf("%s: the CREATE: %llu flushes and FUA writes, the last flush covered %llu\n",
	       on ? "on" : "off", (unsigned long long)paid, (unsigned long long)last);
	CHECK(paid >= 1); /* its journal write, at least */
	if (on)
		CHECK(last <= LIMIT);
	(void)keep_b;

	/* A's COMMIT makes it all durable with the WRITEs' verifier */
	struct raw r = {.inspect = inspect_commit};
	RAW(ra, &r, rpc_nfs3_commit_async(ra, raw_cb, &(COMMIT3args){fa, 0, 0}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK(memcmp(verf, r.verf, 8) == 0);
	CHECK_EQ(tc_jnfsd_stat(&jnfsd, "dev.unflushed_bytes"), 0);
	CHECK_EQ(tc_jnfsd_stat(&jnfsd, "dev.write_errors"), 0);
	nfs_destroy_context(nb);

	/* and reads back: a sample of the WRITEs */
	struct nfsfh *f;
	char got[WSIZE];
	CHECK_OK(nfs_open(na, "/a", O_RDONLY, &f));
	for (uint64_t off = 0; off < TOTAL; off += 13 * WSIZE) {
		fill(off);
		CHECK_EQ(nfs_pread(na, f, off, WSIZE, got), (int)WSIZE);
		CHECK(memcmp(got, buf, WSIZE) == 0);
	}
	nfs_close(na, f);
	nfs_destroy_context(na);
	int status = tc_jnfsd_stop(&jnfsd);
	jnfsd.pid = 0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs3-flush-behind JNFSD JNFS\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	atexit(kill_server);
	run(argv[1], "1048576");
	TEST_PASS("flush-behind on: a CREATE after 64 MiB UNSTABLE finds at most H unflushed");
	run(argv[1], "0");
	TEST_PASS("flush-behind off: the same CREATE finds all 64 MiB unflushed");
	return 0;
}
