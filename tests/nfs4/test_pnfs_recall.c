/*
 * test_pnfs_recall.c - CB_LAYOUTRECALL when the holder does not simply
 * answer OK: it asks for time (NFS4ERR_DELAY), answers an error, or the
 * recall cannot go out at once (docs/pnfs.md, "Recalls").
 *
 *   test-pnfs-recall JNFSD JNFS [CASE]
 *
 * jnfsd serves a pnfs export with a 60 s lease; its stderr goes to a file
 * of the test. Client A (the project's NFSv4.1 library, its own handler
 * for CB_LAYOUTRECALL) holds RW layouts; client B conflicts with them
 * through the server. Each case:
 *
 *  1. A answers the recall DELAY once: jnfsd sends it again, with the
 *     same stateid and seqid (one further, and the Linux client would
 *     answer DELAY again), A answers OK and returns the layout, and B's
 *     WRITE goes through, long before the lease-long fence (no client is
 *     fenced, A's LAYOUTRETURN is accepted, not refused as revoked).
 *  2. A holds layouts of two files and B's COPY from one to the other
 *     recalls both at once: the session's one back channel slot is busy
 *     with the first recall when the second is sent, and the second goes
 *     out once the slot is free; B's COPY then goes through.
 *  3. A answers BAD_STATEID: the failure is logged with A's client ID and
 *     the status, and counted; A returns the layout itself and B goes on.
 *  4. A answers DELAY to every recall: jnfsd resends exactly as often as
 *     docs/pnfs.md says (8 times), all with the same seqid, then counts
 *     and logs the failure; A returns the layout, B goes on.
 *  5. A returns the layout while it answers DELAY: no resend follows.
 *  6. The back channel connection dies just before a recall is sent
 *     (jnfsd with one worker thread, kept busy by a LAYOUTCOMMIT on a
 *     slow device, so that the recall is sent after the connection closed
 *     and before jnfsd unbound it): jnfsd stays up (it once released the
 *     layout stateid twice there and stopped on a BUG), and the recall
 *     reaches A on the connection A binds next.
 *
 * Cases 7-9 are about the recall's CB_SEQUENCE, not the recall: A's back
 * channel answers it
 *
 *  7. DELAY once (a client still busy with its slot): jnfsd sends the
 *     recall again with the same sequence id;
 *  8. SEQ_MISORDERED once (A reset its slot table): jnfsd starts the slot
 *     again at 1;
 *  9. as a retry of a call A ran and whose reply was lost (CB_SEQUENCE's
 *     result, then RETRY_UNCACHED_REP): jnfsd goes on with the next id.
 *
 * In each, A gets the recall and B's WRITE goes through long before the
 * fence, and the back channel stays as it was: jnfsd never marks it
 * faulty (A's SEQUENCE reports no fault, nfs4.cb.failures does not move)
 * and the next recall reaches A on the same connection with the next
 * sequence id.
 *
 * 10. A's slot is far ahead, SEQ_MISORDERED even for 1: jnfsd tries once
 *     with 1, then marks the back channel faulty, once; A's SEQUENCE
 *     says so, A starts its slot again and binds the back channel anew,
 *     and the recall, sent again, reaches it with 1.
 *
 * CASE (1-10) runs that case alone. Nothing is checked about time but a
 * watchdog on each wait (20 s, a third of the lease) and on the whole
 * test; how long B waited is printed.
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
#define RESENDS	    8 /* docs/pnfs.md: a recall is sent again at most 8 times */
#define LAYOUT_LEN  (64u << 10)
#define MAX_RECALLS 64

/* ---- the holder's handler ---- */

struct recall_seen {
	struct stateid4 sid;
	struct nfs4c_fh fh;
	uint32_t cb_seqid; /* its CB_SEQUENCE's sequence id */
	uint64_t at_ns;	   /* when it came */
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
	(void)res;
	const struct CB_LAYOUTRECALL4args *a = &op->opcblayoutrecall;
	CHECK_EQ(a->clora_recall.lor_recalltype, LAYOUTRECALL4_FILE);
	const struct layoutrecall_file4 *r = &a->clora_recall.lor_layout;
	unsigned n = atomic_load(&h.recalls);
	CHECK(n < MAX_RECALLS);
	h.seen[n].sid = r->lor_stateid;
	h.seen[n].cb_seqid = rq->seq->csa_sequenceid;
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

/* Wait for the holder's nth recall; false when the watchdog ran out. */
static bool wait_recalls(unsigned n)
{
	uint64_t give_up = now_ns() + WAIT_NS;
	while (atomic_load(&h.recalls) < n && now_ns() < give_up)
		usleep(2000);
	return atomic_load(&h.recalls) >= n;
}

/* ---- the cases ---- */

static struct pu_server srv;
static char log_path[160];
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

/* Wait until jnfsd's counter name has moved from from (the watchdog
 * bounds it), and return it. */
static uint64_t wait_stat_moves(const char *name, uint64_t from)
{
	uint64_t give_up = now_ns() + WAIT_NS, v;
	while ((v = stat_of(name)) == from && now_ns() < give_up)
		usleep(2000);
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

/* Does the recall name f's file? */
static bool names(const struct recall_seen *r, const struct file *f)
{
	return r->fh.len == f->fh.len && !memcmp(r->fh.val, f->fh.val, f->fh.len);
}

/* Every recall seen names f's layout with the seqid after the one A got
 * from LAYOUTGET. */
static void check_recalls_name(const struct file *f, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++) {
		const struct recall_seen *r = &h.seen[i];
		if (memcmp(r->sid.other, f->lay.stateid.other, 12) ||
		    r->sid.seqid != f->lay.stateid.seqid + 1)
			fprintf(stderr, "recall %u: seqid %u, the layout's was %u\n", i,
				r->sid.seqid, f->lay.stateid.seqid);
		CHECK(!memcmp(r->sid.other, f->lay.stateid.other, 12));
		CHECK_EQ(r->sid.seqid, f->lay.stateid.seqid + 1);
		CHECK(names(r, f));
	}
}

static void case_delay_once(void)
{
	struct file f;
	file_held("delay-once", &f, NULL, 0);
	uint64_t sent0 = stat_of("nfs4.layout.recalls_sent");
	holder_reset(NFS4_OK, 1, false);
	uint64_t t0 = now_ns();
	uint8_t data[100] = {0};
	CHECK_EQ(pu_write(b, &f.fh, &f.b_open, 8192, data, sizeof(data), FILE_SYNC4),
		 NFS4ERR_DELAY);
	CHECK(wait_recalls(1));
	if (!wait_recalls(2)) {
		fprintf(stderr, "the recall A answered DELAY was never sent again: B would wait "
				"for the fence, a lease\n");
		CHECK(0);
	}
	check_recalls_name(&f, 0, 2);
	give_back(&f, &h.seen[1].sid);
	unsigned delays = write_until_done(&f);
	printf("delay once: the recall came again %.1f ms after the first; B's WRITE went "
	       "through %.1f ms after it was first sent, after %u more DELAYs\n",
	       (double)(h.seen[1].at_ns - h.seen[0].at_ns) / 1e6, (double)(now_ns() - t0) / 1e6,
	       delays);
	CHECK_EQ(atomic_load(&h.recalls), 2);
	CHECK_EQ(stat_of("nfs4.layout.recalls_sent"), sent0 + 2);
	CHECK(stat_of("nfs4.layout.recalls_resent") >= 1);
	TEST_PASS("a recall answered DELAY is sent again, with the same seqid");
}

/* PUTFH src, SAVEFH, PUTFH dst, COPY of 4 KiB: its status. */
static nfsstat4 copy(const struct file *src, const struct file *dst)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, b);
	nfs4c_op_putfh(&c, &src->fh);
	nfs4c_op_savefh(&c);
	nfs4c_op_putfh(&c, &dst->fh);
	nfs4c_op_copy(&c, &src->b_open, &dst->b_open, 0, 0, 4096);
	CHECK_OK(nfs4c_send(&c));
	nfsstat4 st = c.status;
	nfs4c_compound_destroy(&c);
	return st;
}

/* The recall of f among the first n, or -1. */
static int recall_of(const struct file *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (names(&h.seen[i], f))
			return (int)i;
	return -1;
}

static void case_two_at_once(void)
{
	struct file src, dst;
	uint8_t data[4096];
	pu_pattern(data, sizeof(data), 0, 7);
	file_held("copy-src", &src, data, sizeof(data));
	file_held("copy-dst", &dst, NULL, 0);
	holder_reset(NFS4_OK, 0, false);

	CHECK_EQ(copy(&src, &dst), NFS4ERR_DELAY);
	uint64_t give_up = now_ns() + WAIT_NS;
	unsigned n;
	while (((n = atomic_load(&h.recalls)), recall_of(&src, n) < 0 || recall_of(&dst, n) < 0) &&
	       now_ns() < give_up)
		usleep(2000);
	int rs = recall_of(&src, n), rd = recall_of(&dst, n);
	if (rs < 0 || rd < 0) {
		fprintf(stderr,
			"%u recall(s) reached A, of the source %s, of the destination %s: "
			"a recall found the back channel busy and was dropped\n",
			n, rs < 0 ? "no" : "yes", rd < 0 ? "no" : "yes");
		CHECK(0);
	}
	CHECK_EQ(n, 2);
	check_recalls_name(&src, (unsigned)rs, (unsigned)rs + 1);
	check_recalls_name(&dst, (unsigned)rd, (unsigned)rd + 1);
	give_back(&src, &h.seen[rs].sid);
	give_back(&dst, &h.seen[rd].sid);
	nfsstat4 st;
	give_up = now_ns() + WAIT_NS;
	while ((st = copy(&src, &dst)) == NFS4ERR_DELAY) {
		CHECK(now_ns() < give_up);
		usleep(10000);
	}
	CHECK_EQ(st, NFS4_OK);
	uint8_t back[4096];
	uint32_t got;
	CHECK_EQ(pu_read(b, &dst.fh, &dst.b_open, 0, back, sizeof(back), &got), NFS4_OK);
	CHECK(got == sizeof(back) && !memcmp(back, data, sizeof(data)));
	TEST_PASS("two recalls at once on one back channel both reach the client");
}

static void case_error_logged(void)
{
	struct file f;
	file_held("bad-stateid", &f, NULL, 0);
	uint64_t failed0 = stat_of("nfs4.layout.recalls_failed");
	holder_reset(NFS4ERR_BAD_STATEID, 0, false);
	uint8_t data[100] = {0};
	CHECK_EQ(pu_write(b, &f.fh, &f.b_open, 8192, data, sizeof(data), FILE_SYNC4),
		 NFS4ERR_DELAY);
	CHECK(wait_recalls(1));
	CHECK_EQ(wait_stat_moves("nfs4.layout.recalls_failed", failed0), failed0 + 1);
	usleep(100000); /* an error is not sent again: none came */
	CHECK_EQ(atomic_load(&h.recalls), 1);
	give_back(&f, &h.seen[0].sid);
	write_until_done(&f);
	TEST_PASS("a recall answered with an error is counted (the log is checked at the end)");
}

static void case_delay_always(void)
{
	struct file f;
	file_held("delay-always", &f, NULL, 0);
	uint64_t failed0 = stat_of("nfs4.layout.recalls_failed");
	uint64_t sent0 = stat_of("nfs4.layout.recalls_sent");
	holder_reset(NFS4_OK, 1000, false);
	uint8_t data[100] = {0};
	CHECK_EQ(pu_write(b, &f.fh, &f.b_open, 8192, data, sizeof(data), FILE_SYNC4),
		 NFS4ERR_DELAY);
	CHECK_EQ(wait_stat_moves("nfs4.layout.recalls_failed", failed0), failed0 + 1);
	unsigned n = atomic_load(&h.recalls);
	printf("delay always: %u recalls, then given up\n", n);
	CHECK_EQ(n, 1 + RESENDS);
	CHECK_EQ(stat_of("nfs4.layout.recalls_sent"), sent0 + 1 + RESENDS);
	CHECK(stat_of("nfs4.layout.recalls_resent") >= RESENDS);
	check_recalls_name(&f, 0, n);
	give_back(&f, &h.seen[n - 1].sid);
	write_until_done(&f);
	CHECK_EQ(atomic_load(&h.recalls), 1 + RESENDS);
	TEST_PASS("a recall answered DELAY every time is sent again 8 times, then fails");
}

static void case_returned_meanwhile(void)
{
	struct file f;
	file_held("returned", &f, NULL, 0);
	uint64_t sent0 = stat_of("nfs4.layout.recalls_sent");
	uint64_t failed0 = stat_of("nfs4.layout.recalls_failed");
	holder_reset(NFS4_OK, 1, true);
	uint8_t data[100] = {0};
	/* OK when the return came while the WRITE was parked for it */
	nfsstat4 st = pu_write(b, &f.fh, &f.b_open, 8192, data, sizeof(data), FILE_SYNC4);
	CHECK(st == NFS4_OK || st == NFS4ERR_DELAY);
	CHECK(wait_recalls(1));
	if (st)
		write_until_done(&f);
	/* a resend would have come 10 ms after the DELAY */
	usleep(300000);
	CHECK_EQ(atomic_load(&h.recalls), 1);
	CHECK_EQ(stat_of("nfs4.layout.recalls_sent"), sent0 + 1);
	CHECK_EQ(stat_of("nfs4.layout.recalls_failed"), failed0);
	TEST_PASS("no recall is sent again for a layout returned meanwhile");
}

/* ---- the recall's CB_SEQUENCE refused ---- */

/* A whole round on a new file: B's WRITE recalls A's layout, A answers
 * OK and gives it back, B's WRITE goes through. The recall's CB_SEQUENCE
 * sequence id. */
static uint32_t recall_round(const char *name)
{
	struct file f;
	file_held(name, &f, NULL, 0);
	holder_reset(NFS4_OK, 0, false);
	uint8_t data[100] = {0};
	CHECK_EQ(pu_write(b, &f.fh, &f.b_open, 8192, data, sizeof(data), FILE_SYNC4),
		 NFS4ERR_DELAY);
	if (!wait_recalls(1)) {
		fprintf(stderr, "%s: the recall never reached A\n", name);
		CHECK(0);
	}
	check_recalls_name(&f, 0, 1);
	give_back(&f, &h.seen[0].sid);
	write_until_done(&f);
	CHECK_EQ(atomic_load(&h.recalls), 1);
	return h.seen[0].cb_seqid;
}

/* How a case has A's back channel answer the recall's CB_SEQUENCE. */
enum seq_answer { SEQ_DELAY, SEQ_MISORDERED, SEQ_UNCACHED };

static void case_seq(enum seq_answer how)
{
	static const char *const what[] = {"DELAY", "SEQ_MISORDERED", "RETRY_UNCACHED_REP"};
	struct nfs4c_cb *cb = nfs4c_get_cb(h.cl);
	/* jnfsd's slot one past A's (on a first use, 1 would not be
	 * misordered) */
	uint32_t last = recall_round("seq-before");
	struct nfs4c_cb_stats cs0, cs;
	nfs4c_cb_stats(cb, &cs0);
	uint64_t failures0 = stat_of("nfs4.cb.failures");
	uint64_t sent0 = stat_of("nfs4.layout.recalls_sent");
	uint64_t failed0 = stat_of("nfs4.layout.recalls_failed");

	struct file f;
	file_held(what[how], &f, NULL, 0);
	holder_reset(NFS4_OK, 0, false);
	uint32_t want; /* the sequence id of the call A takes */
	if (how == SEQ_DELAY) {
		nfs4c_cb_delay(cb, 1);
		want = last + 1; /* the refused one, again */
	} else if (how == SEQ_MISORDERED) {
		nfs4c_cb_set_slot(cb, 0, 0);
		want = 1;
	} else {
		nfs4c_cb_set_slot(cb, 0, last + 1);
		want = last + 2;
	}
	uint64_t t0 = now_ns();
	uint8_t data[100] = {0};
	CHECK_EQ(pu_write(b, &f.fh, &f.b_open, 8192, data, sizeof(data), FILE_SYNC4),
		 NFS4ERR_DELAY);
	if (!wait_recalls(1)) {
		fprintf(stderr,
			"A's back channel answered the recall's CB_SEQUENCE %s and the recall "
			"never reached A: B would wait for the fence, a lease\n",
			what[how]);
		CHECK(0);
	}
	check_recalls_name(&f, 0, 1);
	if (h.seen[0].cb_seqid != want)
		fprintf(stderr, "the recall came with sequence id %u, %u expected\n",
			h.seen[0].cb_seqid, want);
	CHECK_EQ(h.seen[0].cb_seqid, want);
	give_back(&f, &h.seen[0].sid);
	unsigned delays = write_until_done(&f);
	printf("CB_SEQUENCE answered %s: the recall reached A %.1f ms after B's WRITE; the "
	       "WRITE went through after %.1f ms and %u more DELAYs\n",
	       what[how], (double)(h.seen[0].at_ns - t0) / 1e6, (double)(now_ns() - t0) / 1e6,
	       delays);
	nfs4c_cb_stats(cb, &cs);
	CHECK_EQ(cs.delayed, cs0.delayed + (how == SEQ_DELAY));
	CHECK_EQ(cs.misordered, cs0.misordered + (how == SEQ_MISORDERED));
	CHECK_EQ(cs.replays_uncached, cs0.replays_uncached + (how == SEQ_UNCACHED));
	CHECK_EQ(atomic_load(&h.recalls), 1);

	/* the back channel as it was: no fault reported, and the next
	 * recall reaches A on it with the next sequence id */
	CHECK_OK(nfs4c_sequence(h.cl));
	struct nfs4c_info info;
	nfs4c_get_info(h.cl, &info);
	if (info.status_flags & (SEQ4_STATUS_BACKCHANNEL_FAULT | SEQ4_STATUS_CB_PATH_DOWN |
				 SEQ4_STATUS_CB_PATH_DOWN_SESSION))
		fprintf(stderr, "A's SEQUENCE reports a back channel fault (flags 0x%x)\n",
			info.status_flags);
	CHECK_EQ(info.status_flags & (SEQ4_STATUS_BACKCHANNEL_FAULT | SEQ4_STATUS_CB_PATH_DOWN |
				      SEQ4_STATUS_CB_PATH_DOWN_SESSION),
		 0);
	CHECK_EQ(stat_of("nfs4.cb.failures"), failures0);
	CHECK_EQ(recall_round("seq-after"), want + 1);
	CHECK_EQ(stat_of("nfs4.cb.failures"), failures0);
	/* this round's recall and the next; the DELAY's resend counts */
	CHECK_EQ(stat_of("nfs4.layout.recalls_sent"), sent0 + 2 + (how == SEQ_DELAY));
	CHECK_EQ(stat_of("nfs4.layout.recalls_failed"), failed0);
	char done[96];
	snprintf(done, sizeof(done), "a recall whose CB_SEQUENCE got %s reaches the client",
		 what[how]);
	TEST_PASS(done);
}

static void case_seq_delay(void)
{
	case_seq(SEQ_DELAY);
}

static void case_seq_misordered(void)
{
	case_seq(SEQ_MISORDERED);
}

static void case_seq_uncached(void)
{
	case_seq(SEQ_UNCACHED);
}

static void case_seq_out_of_step(void)
{
	struct nfs4c_cb *cb = nfs4c_get_cb(h.cl);
	recall_round("step-before");
	struct nfs4c_cb_stats cs0, cs;
	nfs4c_cb_stats(cb, &cs0);
	uint64_t failures0 = stat_of("nfs4.cb.failures");
	struct file f;
	file_held("out-of-step", &f, NULL, 0);
	holder_reset(NFS4_OK, 0, false);
	/* far ahead: SEQ_MISORDERED for jnfsd's id and for 1 */
	nfs4c_cb_set_slot(cb, 0, 1000);
	uint8_t data[100] = {0};
	CHECK_EQ(pu_write(b, &f.fh, &f.b_open, 8192, data, sizeof(data), FILE_SYNC4),
		 NFS4ERR_DELAY);
	/* jnfsd tries its id, then 1, then gives the back channel up, once */
	CHECK_EQ(wait_stat_moves("nfs4.cb.failures", failures0), failures0 + 1);
	nfs4c_cb_stats(cb, &cs);
	CHECK_EQ(cs.misordered, cs0.misordered + 2);
	CHECK_EQ(atomic_load(&h.recalls), 0);
	CHECK_OK(nfs4c_sequence(h.cl));
	struct nfs4c_info info;
	nfs4c_get_info(h.cl, &info);
	CHECK(info.status_flags & SEQ4_STATUS_BACKCHANNEL_FAULT);
	/* A starts its slot again and binds the back channel anew: the
	 * recall, sent again, reaches it with 1 */
	nfs4c_cb_set_slot(cb, 0, 0);
	CHECK_OK(nfs4c_bind_conn(h.cl, NULL, CDFC4_BACK_OR_BOTH, NULL));
	if (!wait_recalls(1)) {
		fprintf(stderr,
			"the recall never reached A after it bound its back channel again\n");
		CHECK(0);
	}
	check_recalls_name(&f, 0, 1);
	CHECK_EQ(h.seen[0].cb_seqid, 1);
	give_back(&f, &h.seen[0].sid);
	write_until_done(&f);
	CHECK_EQ(recall_round("step-after"), 2);
	CHECK_EQ(stat_of("nfs4.cb.failures"), failures0 + 1);
	TEST_PASS("a back channel out of step past a resync is faulty once, and bound again");
}

/* The log lines of jnfsd that say a recall of client failed. */
static void check_log(uint64_t clientid, bool want_bad_stateid, bool want_given_up)
{
	FILE *f = fopen(log_path, "r");
	CHECK(f);
	char line[512], id[32];
	snprintf(id, sizeof(id), "client %016llx", (unsigned long long)clientid);
	unsigned bad_stateid = 0, given_up = 0;
	while (fgets(line, sizeof(line), f)) {
		printf("jnfsd: %s", line);
		if (!strstr(line, "layout recall") || !strstr(line, id))
			continue;
		bad_stateid += strstr(line, "answered: NFS4ERR_BAD_STATEID, status 10025") != NULL;
		given_up += strstr(line, "no resend left: NFS4ERR_DELAY") != NULL;
	}
	fclose(f);
	if (bad_stateid != want_bad_stateid || given_up != want_given_up)
		fprintf(stderr,
			"jnfsd logged %u BAD_STATEID answers (%d expected) and %u recalls "
			"given up after DELAYs (%d expected) of %s\n",
			bad_stateid, want_bad_stateid, given_up, want_given_up, id);
	CHECK_EQ(bad_stateid, want_bad_stateid);
	CHECK_EQ(given_up, want_given_up);
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
	CHECK(wait_recalls(1));
	check_recalls_name(&dying, 0, atomic_load(&h.recalls));
	give_back(&dying, &h.seen[0].sid);
	CHECK_OK(pthread_join(wt, NULL));
	CHECK_OK(pthread_join(ct, NULL));
	CHECK_EQ(slow.st, NFS4_OK);
	printf("conn dies: %llu recalls sent, %llu resent\n",
	       (unsigned long long)stat_of("nfs4.layout.recalls_sent"),
	       (unsigned long long)stat_of("nfs4.layout.recalls_resent"));
	CHECK_EQ(stat_of("nfs4.layout.fenced"), 0);
	nfs4c_destroy(slow.committer);
	nfs4c_destroy(b);
	nfs4c_conn_close(back);
	nfs4c_destroy(h.cl);
	pu_finish(&srv);
	TEST_PASS("a recall sent on a connection that just died is sent again on the next one");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: test-pnfs-recall JNFSD JNFS [CASE]\n");
		return 2;
	}
	/* one case (1-10) alone, or all */
	int only = argc == 4 ? atoi(argv[3]) : 0;
	pu_init(&srv, argv[1], argv[2], NULL);
	/* jnfsd's messages to a file of ours */
	snprintf(log_path, sizeof(log_path), "%s/jnfsd.log", srv.dir);
	int logfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(logfd >= 0);
	int saved = dup(2);
	CHECK(saved >= 0);
	CHECK(dup2(logfd, 2) == 2);
	const char *extra[] = {"--lease-seconds", LEASE_S, NULL};
	pu_start(&srv, extra);
	CHECK(dup2(saved, 2) == 2);
	close(saved);
	close(logfd);

	h.cl = pu_client(&srv, "recall-holder", &aroot);
	CHECK_OK(nfs4c_set_cb(h.cl, OP_CB_LAYOUTRECALL, on_recall, NULL));
	b = pu_client(&srv, "recall-writer", &broot);
	uint64_t holder_id = nfs4c_clientid(h.cl);

	/* case 6 needs a jnfsd of its own: below */
	void (*cases[])(void) = {case_delay_once,     case_two_at_once,	       case_error_logged,
				 case_delay_always,   case_returned_meanwhile, NULL,
				 case_seq_delay,      case_seq_misordered,     case_seq_uncached,
				 case_seq_out_of_step};
	for (int i = 0; i < (int)ARRAY_SIZE(cases); i++)
		if (cases[i] && (!only || only == i + 1))
			cases[i]();
	/* nobody waited for the fence */
	CHECK_EQ(stat_of("nfs4.layout.fenced"), 0);
	/* CB_SEQUENCE was answered DELAY in case 7 only, and the slot
	 * resynchronised once in each of cases 8-10 */
	CHECK_EQ(stat_of("nfs4.cb.delays"), (uint64_t)(!only || only == 7));
	CHECK_EQ(stat_of("nfs4.cb.resyncs"),
		 (uint64_t)(!only || only == 8) + (!only || only == 9) + (!only || only == 10));

	/* their opens are left to the server's stop */
	nfs4c_destroy(b);
	nfs4c_destroy(h.cl);
	pu_stop(&srv);
	check_log(holder_id, !only || only == 3, !only || only == 4);
	pu_finish(&srv);

	if (!only || only == 6)
		case_conn_dies(argv[1], argv[2]);
	TEST_PASS("pnfs recalls answered DELAY, errors, busy and dying back channels");
	return 0;
}
