/*
 * stream_nfs3.c - stream-bench's NFSv3 streams, on libnfs (bench/stream.c
 * says what they do). Each stream is one thread with its own RPC context
 * (connection), driven through poll(); set-up calls are waited for one at
 * a time, the timed WRITEs and READs are kept D in flight.
 */
#include <sys/time.h> /* before libnfs.h, which uses struct timeval */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "base/time.h"
#include "bench_util.h"
#include "nfs3_bench.h"
#include "stream.h"

#define STALL_SEC 120

struct s3 {
	unsigned k;
	struct rpc_context *rpc;
	struct fh root, dir, file;
	/* the timed phase */
	uint64_t next; /* offset of the next call to send */
	uint64_t done; /* bytes answered */
	unsigned inflight;
	char verf[NFS3_WRITEVERFSIZE];
	bool verf_set;
	/* a set-up call */
	bool busy;
	nfsstat3 status;
	uint64_t last_progress;
};

/* Serve s's connection until !*busy. */
static void serve(struct s3 *s, const bool *busy)
{
	while (*busy) {
		struct pollfd pfd = {.fd = rpc_get_fd(s->rpc),
				     .events = (short)rpc_which_events(s->rpc)};
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (rpc_service(s->rpc, pfd.revents) < 0)
			die("stream %u: %s", s->k, rpc_get_error(s->rpc));
		if (now_ns() - s->last_progress > (uint64_t)STALL_SEC * NSEC_PER_SEC)
			die("stream %u: no reply for %d s", s->k, STALL_SEC);
	}
}

static void check_rpc(struct s3 *s, const char *what, int status, void *res)
{
	if (status != RPC_STATUS_SUCCESS)
		die("stream %u: %s: %s", s->k, what,
		    status == RPC_STATUS_ERROR && res ? (const char *)res
						      : "cancelled or timed out");
}

/* ---- set-up: LOOKUP, or MKDIR / CREATE when it is not there ---- */

static void lookup_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	(void)rpc;
	struct s3 *s = priv;
	LOOKUP3res *r = res;
	check_rpc(s, "LOOKUP", status, res);
	s->status = r->status;
	if (r->status == NFS3_OK)
		fh_copy(&s->file, &r->LOOKUP3res_u.resok.object);
	s->busy = false;
}

static void create_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	(void)rpc;
	struct s3 *s = priv;
	CREATE3res *r = res;
	check_rpc(s, "CREATE", status, res);
	if (r->status != NFS3_OK)
		die("stream %u: CREATE: NFS3 status %d", s->k, (int)r->status);
	if (!r->CREATE3res_u.resok.obj.handle_follows)
		die("stream %u: CREATE returned no handle", s->k);
	fh_copy(&s->file, &r->CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	s->busy = false;
}

/* LOOKUP name in dir into s->file; NFS3_OK or the status. */
static nfsstat3 lookup(struct s3 *s, struct fh *dir, const char *name)
{
	LOOKUP3args a = {.what = {.dir = fh_arg(dir), .name = (char *)name}};
	s->busy = true;
	s->last_progress = now_ns();
	if (rpc_nfs3_lookup_async(s->rpc, lookup_cb, &a, s))
		die("LOOKUP: %s", rpc_get_error(s->rpc));
	serve(s, &s->busy);
	return s->status;
}

void *nfs3_stream_setup(unsigned k)
{
	struct s3 *s = calloc(1, sizeof(*s));
	char name[160];
	if (!s)
		die("out of memory");
	s->k = k;
	bench_nfs3_mount(so.addr, so.mount_port, so.export, &s->root);
	s->rpc = bench_nfs3_connect(so.addr, so.port);
	nfsstat3 st = lookup(s, &s->root, so.dir);
	if (st == NFS3ERR_NOENT && !so.read)
		bench_nfs3_mkdir(s->rpc, &s->root, so.dir, &s->file);
	else if (st != NFS3_OK)
		die("stream %u: LOOKUP %s: NFS3 status %d", k, so.dir, (int)st);
	s->dir = s->file;
	snprintf(name, sizeof(name), "%s-f%u", so.prefix, k);
	st = lookup(s, &s->dir, name);
	if (st == NFS3ERR_NOENT && !so.read) {
		CREATE3args a;
		create_args(&a, &s->dir, name);
		a.how.mode = UNCHECKED;
		a.how.createhow3_u.obj_attributes = a.how.createhow3_u.g_obj_attributes;
		s->busy = true;
		s->last_progress = now_ns();
		if (rpc_nfs3_create_async(s->rpc, create_cb, &a, s))
			die("CREATE: %s", rpc_get_error(s->rpc));
		serve(s, &s->busy);
	} else if (st != NFS3_OK) {
		die("stream %u: LOOKUP %s: NFS3 status %d", k, name, (int)st);
	}
	return s;
}

/* ---- the timed phase ---- */

static void send_next(struct s3 *s);

static void write_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	(void)rpc;
	struct s3 *s = priv;
	WRITE3res *r = res;
	check_rpc(s, "WRITE", status, res);
	if (r->status != NFS3_OK)
		die("stream %u: WRITE: NFS3 status %d", s->k, (int)r->status);
	WRITE3resok *ok = &r->WRITE3res_u.resok;
	if (ok->count != so.io)
		die("stream %u: short WRITE (%u of %u)", s->k, ok->count, so.io);
	if (so.filesync && ok->committed != FILE_SYNC)
		die("stream %u: FILE_SYNC WRITE answered as %d", s->k, (int)ok->committed);
	if (s->verf_set && memcmp(s->verf, ok->verf, sizeof(s->verf)))
		die("stream %u: WRITE verifier changed (server restarted?)", s->k);
	memcpy(s->verf, ok->verf, sizeof(s->verf));
	s->verf_set = true;
	s->inflight--;
	s->done += so.io;
	s->last_progress = now_ns();
	send_next(s);
}

/* A READ in flight: its stream and offset (to check what it returns). */
struct read_call {
	struct s3 *s;
	uint64_t off;
};

static void read_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	(void)rpc;
	struct read_call *rc = priv;
	struct s3 *s = rc->s;
	uint64_t off = rc->off;
	READ3res *r = res;
	free(rc);
	check_rpc(s, "READ", status, res);
	if (r->status != NFS3_OK)
		die("stream %u: READ: NFS3 status %d", s->k, (int)r->status);
	READ3resok *ok = &r->READ3res_u.resok;
	if (ok->count != so.io || ok->data.data_len != so.io)
		die("stream %u: short READ (%u of %u): is the file %" PRIu64 " bytes long?", s->k,
		    ok->count, so.io, so.bytes);
	if (memcmp(ok->data.data_val, stream_data_at(off), so.io))
		die("stream %u: READ at %" PRIu64 " returned other data than stream-bench writes",
		    s->k, off);
	s->inflight--;
	s->done += so.io;
	s->last_progress = now_ns();
	send_next(s);
}

static void commit_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	(void)rpc;
	struct s3 *s = priv;
	COMMIT3res *r = res;
	check_rpc(s, "COMMIT", status, res);
	if (r->status != NFS3_OK)
		die("stream %u: COMMIT: NFS3 status %d", s->k, (int)r->status);
	if (memcmp(r->COMMIT3res_u.resok.verf, s->verf, sizeof(s->verf)))
		die("stream %u: COMMIT verifier differs from the WRITEs'", s->k);
	s->busy = false;
}

static void send_next(struct s3 *s)
{
	while (s->inflight < so.depth && s->next < so.bytes) {
		if (so.read) {
			READ3args a = {.file = fh_arg(&s->file), .offset = s->next, .count = so.io};
			struct read_call *rc = malloc(sizeof(*rc));
			if (!rc)
				die("out of memory");
			*rc = (struct read_call){.s = s, .off = s->next};
			if (rpc_nfs3_read_async(s->rpc, read_cb, &a, rc))
				die("READ: %s", rpc_get_error(s->rpc));
		} else {
			WRITE3args a;
			memset(&a, 0, sizeof(a));
			a.file = fh_arg(&s->file);
			a.offset = s->next;
			a.count = so.io;
			a.stable = so.filesync ? FILE_SYNC : UNSTABLE;
			a.data.data_len = so.io;
			a.data.data_val = (char *)stream_data_at(s->next);
			if (rpc_nfs3_write_async(s->rpc, write_cb, &a, s))
				die("WRITE: %s", rpc_get_error(s->rpc));
		}
		s->next += so.io;
		s->inflight++;
	}
	if (s->done < so.bytes || s->inflight)
		return;
	if (so.read || so.filesync) {
		s->busy = false;
	} else {
		COMMIT3args a = {.file = fh_arg(&s->file), .offset = 0, .count = 0};
		if (rpc_nfs3_commit_async(s->rpc, commit_cb, &a, s))
			die("COMMIT: %s", rpc_get_error(s->rpc));
	}
}

void *nfs3_stream_run(void *arg)
{
	struct s3 *s = arg;
	stream_wait_start();
	s->busy = true;
	s->last_progress = now_ns();
	send_next(s);
	serve(s, &s->busy);
	return NULL;
}

void nfs3_stream_teardown(void *arg)
{
	struct s3 *s = arg;
	rpc_destroy_context(s->rpc);
	free(s);
}
