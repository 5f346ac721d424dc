/*
 * test_pnfs_recall.c - CB_LAYOUTRECALL when the recall does not simply go
 * out and come back OK (docs/pnfs.md, "Recalls").
 *
 *   test-pnfs-recall JNFSD JNFS
 *
 * Client A (the project's NFSv4.1 library, its own handler for
 * CB_LAYOUTRECALL) holds an RW layout; client B conflicts with it through
 * the server. The back channel connection dies just before the recall is
 * sent (jnfsd with one worker thread, kept busy by a LAYOUTCOMMIT on a
 * slow device, so that the recall is sent after the connection closed and
 * before jnfsd unbound it): jnfsd stays up (it released the layout
 * stateid twice there and stopped on a BUG), A binds another connection
 * for its back channel and returns the layout, and B's WRITE goes through.
 *
 * Nothing is checked about time but a watchdog on each wait (20 s, a
 * third of the lease) and on the whole test.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/time.h"
#include "check.h"
#include "nfs4c/cb.h"
#include "nfs4c/conn.h"
#include "pnfs_util.h"

#define LEASE_S	    "60"
#define WAIT_NS	    (20 * NSEC_PER_SEC)
#define LAYOUT_LEN  (64u << 10)
#define MAX_RECALLS 64

/* ---- the holder's handler ---- */

struct recall_seen {
	struct stateid4 sid;
	struct nfs4c_fh fh;
	uint64_t at_ns; /* when it came */
};

/* Written by A's callback thread; recalls is the last store, so what it
 * counts may be read. */
static struct {
	struct nfs4c_client *cl;
	atomic_uint recalls;   /* CB_LAYOUTRECALLs received */
	atomic_uint delays;    /* answer DELAY this many more times */
	atomic_uint answer;    /* then this */
	atomic_bool ret_first; /* return the recalled layout before answering */
	struct recall_seen seen[MAX_RECALLS];
} h;

static nfsstat4 on_recall(void *arg, const struct nfs4c_cb_req *rq, const struct nfs_cb_argop4 *op,
			  struct nfs_cb_resop4 *res)
{
	(void)arg;
	(void)rq;
	(void)res;
	const struct CB_LAYOUTRECALL4args *a = &op->opcblayoutrecall;
	CHECK_EQ(a->clora_recall.lor_recalltype, LAYOUTRECALL4_FILE);
	const struct layoutrecall_file4 *r = &a->clora_recall.lor_layout;
	unsigned n = atomic_load(&h.recalls);
	CHECK(n < MAX_RECALLS);
	h.seen[n].sid = r->lor_stateid;
	h.seen[n].at_ns = now_ns();
	h.seen[n].fh.len = r->lor_fh.len;
	CHECK(r->lor_fh.len <= sizeof(h.seen[n].fh.val));
	memcpy(h.seen[n].fh.val, r->lor_fh.val, r->lor_fh.len);
	if (atomic_load(&h.ret_first)) {
		/* the whole layout back, with the recall's stateid, before the
		 * answer (the handler may call the server) */
		CHECK_EQ(pu_layoutreturn(h.cl, &h.seen[n].fh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE,
					 0, UINT64_MAX, &r->lor_stateid, NULL),
			 NFS4_OK);
	}
	nfsstat4 st = atomic_load(&h.answer);
	unsigned d = atomic_load(&h.delays);
	if (d) {
		atomic_store(&h.delays, d - 1);
		st = NFS4ERR_DELAY;
	}
	atomic_store(&h.recalls, n + 1);
	return st;
}

static void holder_reset(nfsstat4 answer, unsigned delays, bool ret_first)
{
	atomic_store(&h.recalls, 0);
	atomic_store(&h.answer, answer);
	atomic_store(&h.delays, delays);
	atomic_store(&h.ret_first, ret_first);
}

/* ---- the cases ---- */

static struct pu_server srv;
static struct nfs4c_client *b;
static struct nfs4c_fh aroot, broot;

struct file {
	struct nfs4c_fh fh;
	struct stateid4 a_open, b_open; /* A's and B's opens */
	struct pu_layout lay;		/* A's RW layout */
};

/* name made by B (len bytes of data written first), opened by A, who
 * gets an RW layout of its start. */
static void file_held(const char *name, struct file *f, const void *data, uint32_t len)
{
	CHECK_EQ(pu_open(b, &broot, name, true, OPEN4_SHARE_ACCESS_BOTH, &f->fh, &f->b_open),
		 NFS4_OK);
	if (len)
		CHECK_EQ(pu_write(b, &f->fh, &f->b_open, 0, data, len, FILE_SYNC4), NFS4_OK);
	struct nfs4c_fh afh;
	CHECK_EQ(pu_open(h.cl, &aroot, name, false, OPEN4_SHARE_ACCESS_BOTH, &afh, &f->a_open),
		 NFS4_OK);
	CHECK(afh.len == f->fh.len && !memcmp(afh.val, f->fh.val, afh.len));
	CHECK_EQ(pu_layoutget(h.cl, &f->fh, LAYOUTIOMODE4_RW, 0, LAYOUT_LEN, 4096, &f->a_open, 0,
			      &f->lay),
		 NFS4_OK);
}

static uint64_t stat_of(const char *name)
{
	uint64_t v = tc_jnfsd_stat(&srv.j, name);
	CHECK(v != UINT64_MAX);
	return v;
}

/* B's WRITE of 100 bytes at 8 KiB, sent again after each DELAY (10 ms
 * apart, under the watchdog) until it goes through: how many DELAYs. */
static unsigned write_until_done(const struct file *f)
{
	uint8_t data[100];
	memset(data, 0x5a, sizeof(data));
	uint64_t give_up = now_ns() + WAIT_NS;
	unsigned delays = 0;
	for (;;) {
		nfsstat4 st = pu_write(b, &f->fh, &f->b_open, 8192, data, sizeof(data), FILE_SYNC4);
		if (st == NFS4_OK)
			return delays;
		CHECK_EQ(st, NFS4ERR_DELAY);
		delays++;
		CHECK(now_ns() < give_up);
		usleep(10000);
	}
}

/* A gives the layout back with sid (a recall's, or the one it holds). */
static void give_back(const struct file *f, const struct stateid4 *recall_sid)
{
	CHECK_EQ(pu_layoutreturn(h.cl, &f->fh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
				 recall_sid, NULL),
		 NFS4_OK);
}

/* ---- the back channel connection dies as the recall goes out ---- */

static struct {
	struct nfs4c_client *committer;
	struct nfs4c_fh fh;
	struct stateid4 sid;
	struct pu_layout lay;
	nfsstat4 st;
} slow;

static void *commit_thread(void *arg)
{
	(void)arg;
	/* the INVALID_DATA extent converted: a log write on the slow device */
	slow.st = pu_layoutcommit(slow.committer, &slow.fh, &slow.lay.stateid, slow.lay.ext, 1,
				  4095, NULL);
	return NULL;
}

static struct file dying;

static void *write_thread(void *arg)
{
	(void)arg;
	write_until_done(&dying);
	return NULL;
}

static struct nfs4c_client *client(const char *owner)
{
	struct nfs4c_cfg cfg;
	struct nfs4c_client *cl;
	nfs4c_cfg_default(&cfg);
	cfg.addr = srv.addr;
	cfg.owner = owner;
	cfg.eia_flags = EXCHGID4_FLAG_USE_PNFS_MDS;
	cfg.cred.uid = cfg.cred.gid = 0;
	cfg.reconnect_ms = 3000; /* a jnfsd that died fails the test soon */
	CHECK_OK(nfs4c_create(&cfg, &cl));
	return cl;
}

static void bind_back(struct nfs4c_conn *conn)
{
	channel_dir_from_server4 got = 0;
	int err = nfs4c_bind_conn(h.cl, conn, CDFC4_BACK, &got);
	if (err) {
		int status = 0;
		for (int i = 0; i < 200; i++) {
			if (waitpid(srv.j.pid, &status, WNOHANG) == srv.j.pid) {
				fprintf(stderr, "jnfsd died (%s %d)\n",
					WIFSIGNALED(status) ? "signal" : "exit status",
					WIFSIGNALED(status) ? WTERMSIG(status)
							    : WEXITSTATUS(status));
				break;
			}
			usleep(10000);
		}
		CHECK_OK(err);
	}
	CHECK_EQ(got, CDFS4_BACK);
}

static void case_conn_dies(const char *jnfsd, const char *jnfs)
{
	pu_init(&srv, jnfsd, jnfs, NULL);
	/* one worker, and a device whose flushes and FUA writes take 300 ms:
	 * a LAYOUTCOMMIT holds the only worker that long */
	const char *extra[] = {"--threads", "1", "--flush-latency-us", "300000", "--lease-seconds",
			       LEASE_S,	    NULL};
	pu_start(&srv, extra);
	/* A's back channel on a connection of its own: the session's first
	 * connection is made fore channel only */
	h.cl = client("recall-dies-a");
	CHECK_OK(nfs4c_mount(h.cl, &aroot));
	channel_dir_from_server4 got = 0;
	CHECK_OK(nfs4c_bind_conn(h.cl, NULL, CDFC4_FORE, &got));
	CHECK_EQ(got, CDFS4_FORE);
	struct nfs4c_conn *back;
	CHECK_OK(nfs4c_open_conn(h.cl, &back));
	bind_back(back);
	CHECK_OK(nfs4c_set_cb(h.cl, OP_CB_LAYOUTRECALL, on_recall, NULL));
	b = client("recall-dies-b");
	CHECK_OK(nfs4c_mount(b, &broot));
	slow.committer = client("recall-dies-c");
	struct nfs4c_fh croot;
	CHECK_OK(nfs4c_mount(slow.committer, &croot));
	file_held("dies", &dying, NULL, 0);
	CHECK_EQ(pu_open(slow.committer, &croot, "slow", true, OPEN4_SHARE_ACCESS_BOTH, &slow.fh,
			 &slow.sid),
		 NFS4_OK);
	CHECK_EQ(pu_layoutget(slow.committer, &slow.fh, LAYOUTIOMODE4_RW, 0, 4096, 4096, &slow.sid,
			      0, &slow.lay),
		 NFS4_OK);
	CHECK(slow.lay.n >= 1);
	slow.lay.ext[0].len = 4096;
	holder_reset(NFS4_OK, 0, false);

	/* the worker busy with the commit; B's WRITE queued behind it; then
	 * A's back channel connection closes: jnfsd sees it dead at once, and
	 * unbinds it only when the worker is free, after the WRITE, which
	 * recalls A's layout on it */
	pthread_t ct, wt;
	CHECK_OK(pthread_create(&ct, NULL, commit_thread, NULL));
	usleep(60000);
	CHECK_OK(pthread_create(&wt, NULL, write_thread, NULL));
	usleep(60000);
	nfs4c_conn_close(back);
	/* and another one for the back channel */
	CHECK_OK(nfs4c_open_conn(h.cl, &back));
	bind_back(back);
	give_back(&dying, &dying.lay.stateid);
	CHECK_OK(pthread_join(wt, NULL));
	CHECK_OK(pthread_join(ct, NULL));
	CHECK_EQ(slow.st, NFS4_OK);
	CHECK_EQ(stat_of("nfs4.layout.fenced"), 0);
	nfs4c_destroy(slow.committer);
	nfs4c_destroy(b);
	nfs4c_conn_close(back);
	nfs4c_destroy(h.cl);
	pu_finish(&srv);
	TEST_PASS("a recall sent on a connection that just died leaves jnfsd up");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	if (argc != 3) {
		fprintf(stderr, "usage: test-pnfs-recall JNFSD JNFS\n");
		return 2;
	}
	case_conn_dies(argv[1], argv[2]);
	return 0;
}
