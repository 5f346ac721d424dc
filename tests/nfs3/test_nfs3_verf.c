/*
 * test_nfs3_verf.c - a failed flush of the data device moves the write
 * verifier (docs/design.md rule 8), through jnfsd.
 *
 * An image file is written through the host's page cache: when a flush
 * fails, the kernel may already have dropped the dirty pages it could not
 * write back, and a later flush succeeds. A client that sent UNSTABLE
 * WRITEs and gets a COMMIT reply with the verifier of those WRITEs drops
 * its copy of the data; so after a failed flush every later COMMIT must
 * carry another verifier, and the client sends the data again.
 *
 * jnfsd runs with --test-flush-fault: SIGUSR2 makes the next flush of the
 * data device fail. The steps:
 *   1. file x: WRITE FILE_SYNC, COMMIT: verifier V0, x's journal state is
 *      durable;
 *   2. file y: WRITE UNSTABLE: verifier V0, y's data in the device cache;
 *   3. the fault armed, COMMIT x needs no log write, only a flush of the
 *      data device (that would make y's data durable): it fails, NFS3ERR_IO;
 *   4. COMMIT x again succeeds, with a verifier other than V0, and so does
 *      COMMIT y: y's client sees V0 != its COMMIT's verifier and resends;
 *   5. a new WRITE and its COMMIT agree again;
 *   6. a failed flush-behind flush (src/dev/dev.h, B3), that nobody waits
 *      for: the fault armed again, file z gets UNSTABLE WRITEs past the
 *      flush-behind bound (jnfsd's default, read from its counters), so a
 *      flush is started behind them, and it fails. Once the device counted
 *      it, the next WRITE has a new verifier, and COMMIT z succeeds with
 *      it: z's client resends what it wrote before;
 *   7. a FILE_SYNC WRITE that a failed flush-behind flush may have lost
 *      replies NFS3ERR_IO (test_stable_write).
 *
 * usage: test-nfs3-verf JNFSD JNFS
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/time.h"
#include "check.h"
#include "jnfsd_proc.h"
#include "nfs3/nfs3_client.h"

static struct tc_jnfsd jnfsd;

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

/* WRITE len bytes of v at off: the status, and when it is OK the reply's
 * verifier in verf and what it says was committed. */
static uint32_t write3_status(struct rpc_context *rpc, struct nfs_fh3 fh, uint64_t off,
			      uint32_t len, stable_how how, uint8_t v, uint8_t verf[8])
{
	static char buf[65536];
	memset(buf, v, len);
	WRITE3args a = {.file = fh, .offset = off, .count = len, .stable = how};
	a.data.data_len = len;
	a.data.data_val = buf;
	struct raw r = {.inspect = inspect_write};
	RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &a, &r));
	if (r.nfs_status == NFS3_OK) {
		CHECK_EQ(r.u32[0], len);
		CHECK_EQ(r.u32[1], how);
		memcpy(verf, r.verf, 8);
	}
	return r.nfs_status;
}

static void write3(struct rpc_context *rpc, struct nfs_fh3 fh, uint64_t off, uint32_t len,
		   stable_how how, uint8_t v, uint8_t verf[8])
{
	CHECK_EQ(write3_status(rpc, fh, off, len, how, v, verf), NFS3_OK);
}

/* COMMIT the whole file: the status, and the verifier when it is OK. */
static uint32_t commit3(struct rpc_context *rpc, struct nfs_fh3 fh, uint8_t verf[8])
{
	struct raw r = {.inspect = inspect_commit};
	RAW(rpc, &r, rpc_nfs3_commit_async(rpc, raw_cb, &(COMMIT3args){fh, 0, 0}, &r));
	if (r.nfs_status == NFS3_OK)
		memcpy(verf, r.verf, 8);
	return r.nfs_status;
}

/*
 * 7. (another life of jnfsd) A flush that fails between a FILE_SYNC
 *    WRITE's data write and the flush that makes it stable (src/srv/srv.h
 *    S1, src/dev/dev.h F6): the WRITE crosses the flush-behind bound, so
 *    the flush started behind it (B1) runs while the WRITE's checkpoint is
 *    written (a FUA write slowed by --flush-latency-us), and that flush
 *    fails. Its data may be lost (a page cache drops the pages whose
 *    write-back failed), yet the WRITE's own flush comes later and
 *    succeeds: the reply must be NFS3ERR_IO, not OK with FILE_SYNC (whose
 *    client keeps no copy). The WRITE sent again succeeds, and so does a
 *    FILE_SYNC WRITE with no fault.
 *    (Before S1 the first WRITE replied NFS3_OK, committed FILE_SYNC.)
 */
static void test_stable_write(const char *bin)
{
	const char *args[] = {"--listen",	   "127.0.0.1:0", "--rpcbind",
			      "off",		   "--test-flush-fault", "--flush-behind",
			      "32768",		   "--flush-latency-us", "100000",
			      "--logged-data-max", "0",		  NULL};
	tc_jnfsd_start(&jnfsd, bin, args);
	struct nfs_context *nfs = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(nfs);
	struct raw keep_root, keep_f;
	struct nfs_fh3 root = tn_handle_of(rpc, jnfsd.port[0], "/", "/", &keep_root);
	struct nfs_fh3 f = create(rpc, root, "f", &keep_f);
	uint8_t v0[8], v[8];
	/* the blocks allocated and durable: the WRITE below is an overwrite,
	 * whose checkpoint holds only times and needs no flush before it */
	write3(rpc, f, 0, 65536, FILE_SYNC, 0x61, v0);
	CHECK_EQ(commit3(rpc, f, v), NFS3_OK);
	uint64_t errs = tc_jnfsd_stat(&jnfsd, "dev.write_errors");
	uint64_t fb = tc_jnfsd_stat(&jnfsd, "dev.flush_behind_flushes");

	tc_jnfsd_signal(&jnfsd, SIGUSR2, "flush fault armed");
	uint32_t st = write3_status(rpc, f, 0, 65536, FILE_SYNC, 0x62, v);
	CHECK_EQ(tc_jnfsd_stat(&jnfsd, "dev.write_errors"), errs + 1);
	CHECK(tc_jnfsd_stat(&jnfsd, "dev.flush_behind_flushes") > fb);
	if (st == NFS3_OK) {
		fprintf(stderr, "a FILE_SYNC WRITE replied OK after a flush failed between its "
				"data write and its own flush: its data may be lost\n");
		CHECK(0);
	}
	CHECK_EQ(st, NFS3ERR_IO);
	CHECK_EQ(write3_status(rpc, f, 0, 65536, FILE_SYNC, 0x62, v), NFS3_OK);
	CHECK_EQ(write3_status(rpc, f, 0, 65536, FILE_SYNC, 0x63, v), NFS3_OK);
	TEST_PASS("a flush failed after a FILE_SYNC WRITE's data write: NFS3ERR_IO, the "
		  "retry is stable");

	nfs_destroy_context(nfs);
	int status = tc_jnfsd_stop(&jnfsd);
	jnfsd.pid = 0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs3-verf JNFSD JNFS\n");
		return 2;
	}
	const char *args[] = {"--listen", "127.0.0.1:0", "--rpcbind", "off", "--test-flush-fault",
			      NULL};
	tc_jnfsd_start(&jnfsd, argv[1], args);
	atexit(kill_server);
	struct nfs_context *nfs = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(nfs);
	struct raw keep_root, keep_x, keep_y;
	struct nfs_fh3 root = tn_handle_of(rpc, jnfsd.port[0], "/", "/", &keep_root);
	struct nfs_fh3 x = create(rpc, root, "x", &keep_x);
	struct nfs_fh3 y = create(rpc, root, "y", &keep_y);

	uint8_t v0[8], v[8], v1[8];
	write3(rpc, x, 0, 4096, FILE_SYNC, 0x11, v0);
	CHECK_EQ(commit3(rpc, x, v), NFS3_OK);
	CHECK(memcmp(v, v0, 8) == 0); /* nothing failed: one verifier */
	write3(rpc, y, 0, 65536, UNSTABLE, 0x22, v);
	CHECK(memcmp(v, v0, 8) == 0);

	tc_jnfsd_signal(&jnfsd, SIGUSR2, "flush fault armed");
	CHECK_EQ(commit3(rpc, x, v), NFS3ERR_IO);
	CHECK_EQ(commit3(rpc, x, v1), NFS3_OK);
	if (memcmp(v1, v0, 8) == 0) {
		fprintf(stderr, "a COMMIT after a failed flush has the verifier of the WRITEs "
				"before it: their data may be lost, and the client would drop it\n");
		CHECK(0);
	}
	CHECK_EQ(commit3(rpc, y, v), NFS3_OK);
	CHECK(memcmp(v, v1, 8) == 0);
	CHECK_EQ(tc_jnfsd_stat(&jnfsd, "dev.write_errors"), 1);
	TEST_PASS("a failed data flush: COMMIT fails, the retried COMMIT has a new verifier");

	write3(rpc, y, 0, 65536, UNSTABLE, 0x33, v);
	CHECK(memcmp(v, v1, 8) == 0);
	CHECK_EQ(commit3(rpc, y, v), NFS3_OK);
	CHECK(memcmp(v, v1, 8) == 0);
	TEST_PASS("after it, WRITE and COMMIT agree again");

	struct raw keep_z;
	struct nfs_fh3 z = create(rpc, root, "z", &keep_z);
	uint64_t bound = tc_jnfsd_stat(&jnfsd, "dev.flush_behind_bound");
	uint64_t fb = tc_jnfsd_stat(&jnfsd, "dev.flush_behind_flushes");
	CHECK(bound > 0); /* on by default */
	tc_jnfsd_signal(&jnfsd, SIGUSR2, "flush fault armed");
	uint8_t v2[8];
	for (uint64_t off = 0; off <= bound; off += 65536) {
		write3(rpc, z, off, 65536, UNSTABLE, 0x44, v);
		if (off == 0)
			memcpy(v2, v, 8);
	}
	CHECK(memcmp(v2, v1, 8) == 0);
	uint64_t t0 = now_ns();
	while (tc_jnfsd_stat(&jnfsd, "dev.write_errors") < 2) {
		CHECK(now_ns() - t0 < 20 * NSEC_PER_SEC); /* a hang is a failure */
		usleep(1000);
	}
	CHECK(tc_jnfsd_stat(&jnfsd, "dev.flush_behind_flushes") > fb);
	write3(rpc, z, 0, 65536, UNSTABLE, 0x55, v);
	if (memcmp(v, v1, 8) == 0) {
		fprintf(stderr, "a WRITE after a failed flush-behind flush has the verifier of "
				"the WRITEs before it: their data may be lost\n");
		CHECK(0);
	}
	CHECK_EQ(commit3(rpc, z, v2), NFS3_OK);
	CHECK(memcmp(v2, v, 8) == 0);
	CHECK(memcmp(v2, v1, 8) != 0);
	TEST_PASS("a failed flush-behind flush: the next WRITE and COMMIT have a new verifier");

	nfs_destroy_context(nfs);
	int status = tc_jnfsd_stop(&jnfsd);
	jnfsd.pid = 0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	test_stable_write(argv[1]);
	return 0;
}
