/*
 * test_nfs4_flush_fault.c - a FILE_SYNC4 WRITE whose data a failed flush
 * may have lost is an I/O error over NFSv4.1 (src/srv/srv.h S1,
 * src/dev/dev.h F6; docs/design.md rule 8), through jnfsd.
 *
 *   test-nfs4-flush-fault JNFSD JNFS
 *
 * jnfsd runs with --test-flush-fault (SIGUSR2: the next flush of the data
 * device fails), a flush-behind bound of 32 KiB, flushes and FUA writes
 * slowed by 100 ms, and no logged data (the WRITE's data goes in place).
 * A FILE_SYNC4 overwrite of 64 KiB crosses the bound, so the flush started
 * behind it (B1) runs while the WRITE's checkpoint is written, and fails:
 * it may have lost the data (a page cache drops the pages whose write-back
 * failed), yet the flush that makes the WRITE stable comes later and
 * succeeds. The compound must fail with NFS4ERR_IO; the WRITE sent again
 * succeeds. (Before S1 it replied NFS4_OK.)
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nfs4_test.h"

#define WLEN 65536

static struct nfs4t_server srv;
static char data[WLEN];

static void kill_server(void)
{
	if (srv.j.pid > 0)
		kill(srv.j.pid, SIGKILL);
}

/* PUTFH, WRITE stable: the compound's status. */
static nfsstat4 write4(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
		       const struct stateid4 *sid, stable_how4 how, char v)
{
	memset(data, v, sizeof(data));
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_write(&c, sid, 0, how, data, sizeof(data));
	nfsstat4 st = nfs4t_send(&c);
	nfs4c_compound_destroy(&c);
	return st;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs4-flush-fault JNFSD JNFS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(120);
	nfs4t_server_init(&srv, argv[1], argv[2], 128, NULL,
			  "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n");
	const char *args[] = {"--test-flush-fault", "--flush-behind",    "32768",
			      "--flush-latency-us", "100000",		 "--logged-data-max",
			      "0",		    NULL};
	nfs4t_server_start(&srv, args);
	atexit(kill_server);
	struct nfs4c_fh root, fh;
	struct stateid4 sid;
	struct nfs4c_client *cl = nfs4t_client(srv.addr, "flush-fault", &root);
	nfs4t_open_create(cl, &root, "f", "owner", &fh, &sid);
	/* the blocks allocated and durable: the WRITE below is an overwrite */
	CHECK_EQ(write4(cl, &fh, &sid, FILE_SYNC4, 1), NFS4_OK);

	tc_jnfsd_signal(&srv.j, SIGUSR2, "flush fault armed");
	nfsstat4 st = write4(cl, &fh, &sid, FILE_SYNC4, 2);
	if (st == NFS4_OK) {
		fprintf(stderr, "a FILE_SYNC4 WRITE replied OK after a flush failed between its "
				"data write and its own flush: its data may be lost\n");
		CHECK(0);
	}
	CHECK_EQ(st, NFS4ERR_IO);
	struct nfs4t_stats stats;
	nfs4t_stats(&srv.j, &stats);
	CHECK_EQ(nfs4t_stat(&stats, "dev.write_errors"), 1);
	CHECK_EQ(write4(cl, &fh, &sid, FILE_SYNC4, 2), NFS4_OK);
	CHECK_EQ(write4(cl, &fh, &sid, DATA_SYNC4, 3), NFS4_OK);
	TEST_PASS("a flush failed after a FILE_SYNC4 WRITE's data write: NFS4ERR_IO, the "
		  "retry is stable");

	nfs4t_close(cl, &fh, &sid);
	nfs4t_unmount(cl);
	nfs4t_server_fini(&srv);
	return 0;
}
