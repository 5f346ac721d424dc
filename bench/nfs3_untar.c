/*
 * nfs3_untar.c - unpack a source tree over NFSv3 the way tar does on a
 * sync mount, and count what making it stable costs the server.
 *
 *   nfs3-untar --port P [--mount-port P] [--addr A] [--export PATH]
 *              [--files N] [--clients C] [--mode filesync|unstable]
 *              [--per-dir F] [--fanout B] [--wsize W] [--seed S]
 *              [--label L] [--jnfsd-stats] [--xfs-dev DEV] [--disk DEV] [--csv]
 *
 * The workload. C clients, each on its own TCP connection (its own libnfs
 * RPC context), all driven by one thread through poll(), create N files
 * between them (N/C each) in a fresh directory under the export. Client k
 * unpacks its own tree "cK": directory 0 is cK itself, directory d > 0 is
 * "dD" inside directory (d - 1) / B, and file i (name "fI") goes into
 * directory i / F, so every directory holds F files and up to B
 * subdirectories, and a directory is made (MKDIR) just before its first
 * file, as tar meets it in the archive. A file is CREATE (GUARDED, mode
 * 0644), then its data in WRITEs of at most W bytes, sent together; with
 * --mode filesync every WRITE is FILE_SYNC, with --mode unstable they are
 * UNSTABLE and a COMMIT of the whole file follows the last reply (its
 * verifier must match the WRITEs'). A client has one file in flight at a
 * time, like one tar process. Sizes are drawn per file from a fixed seed:
 * 5% 64 B-1 KiB, 85% 1-16 KiB, 10% 16-64 KiB (a source tarball: mean about
 * 11 KiB). Every reply is checked; an error stops the run with a message.
 *
 * The timed phase runs from the first call to the last reply. Counters are
 * read just before and after it: --jnfsd-stats asks the server's
 * administration program on the NFS port; --xfs-dev reads the kernel's
 * XFS and block-layer counters of DEV (untar_counters.h says exactly
 * which). Without either, those columns are n/a. --disk names the disk
 * under the server's storage (e.g. vda): its flush count and mean flush
 * time over the run are printed too (untar.disk_*), for context only: the
 * disk is shared with whatever else runs on the machine.
 *
 * Output: "name value" lines (untar.*), and with --csv one header and one
 * row: label,mode,clients,files,dirs,bytes,seconds,files_per_sec,
 * log_writes,log_writes_per_file,flushes,flushes_per_file. Latencies
 * (untar.lat_us.*) are means per call; for WRITE, from the first WRITE of
 * a file to the last reply.
 */
#include <sys/time.h> /* before libnfs.h, which uses struct timeval */

#include <errno.h>
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
#include "untar_common.h"

#define STALL_SEC   120

enum op { OP_MKDIR, OP_CREATE, OP_WRITE, OP_COMMIT, OP_N };
static const char *const op_name[OP_N] = {"mkdir", "create", "write", "commit"};


struct client {
	struct rpc_context *rpc;
	unsigned id;
	uint32_t nfiles, next; /* files this client makes; the one in progress */
	struct fh *dirs;       /* dirs[d] once directory d is made */
	uint32_t ndirs;
	struct fh file;        /* the file being written */
	uint32_t size, inflight;
	char verf[NFS3_WRITEVERFSIZE];
	bool verf_set;
	uint64_t t_op;         /* when the call (or first WRITE) in flight was sent */
};

static struct untar_opts o;
static struct fh run_dir;
static unsigned active;
static uint64_t op_count[OP_N], op_ns[OP_N], bytes_written, dirs_made;
static uint64_t last_progress;
static char data[UNTAR_MAX_WSIZE];

static void op_done(struct client *c, enum op op)
{
	op_count[op]++;
	op_ns[op] += now_ns() - c->t_op;
	last_progress = now_ns();
}

/* An RPC-level failure or an NFS error: the run is void. */
static void check(struct client *c, const char *what, int status, void *res, nfsstat3 st)
{
	if (status != RPC_STATUS_SUCCESS)
		die("client %u: %s: %s", c->id, what,
		    status == RPC_STATUS_ERROR && res ? (const char *)res : "cancelled or timed out");
	if (st != NFS3_OK)
		die("client %u: %s: NFS3 status %d (file %u)", c->id, what, (int)st, c->next);
}

/* ---- the event loop ---- */

static void service(struct client *cl, unsigned n)
{
	struct pollfd pfd[UNTAR_MAX_CLIENTS];
	for (unsigned i = 0; i < n; i++) {
		pfd[i].fd = rpc_get_fd(cl[i].rpc);
		pfd[i].events = (short)rpc_which_events(cl[i].rpc);
		pfd[i].revents = 0;
	}
	int r = poll(pfd, n, 1000);
	if (r < 0 && errno != EINTR)
		die("poll: %s", strerror(errno));
	for (unsigned i = 0; i < n; i++) {
		if (rpc_service(cl[i].rpc, pfd[i].revents) < 0)
			die("client %u: %s", cl[i].id, rpc_get_error(cl[i].rpc));
	}
	if (now_ns() - last_progress > (uint64_t)STALL_SEC * NSEC_PER_SEC)
		die("no reply for %d s", STALL_SEC);
}

/* The run's directory, by client 0, in the export's root. */
static void make_run_dir(struct client *c)
{
	char name[96];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "untar-%s-%ld-%ld.%09ld", o.label, (long)getpid(),
		 (long)ts.tv_sec, ts.tv_nsec);
	bench_nfs3_mkdir(c->rpc, &run_dir, name, &run_dir);
}

/* ---- one client's unpacking ---- */

static void client_step(struct client *c);

static void mkdir_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	MKDIR3res *r = res;
	check(c, "MKDIR", status, res, status ? NFS3_OK : r->status);
	if (!r->MKDIR3res_u.resok.obj.handle_follows)
		die("MKDIR returned no handle");
	fh_copy(&c->dirs[c->ndirs++], &r->MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
	op_done(c, OP_MKDIR);
	dirs_made++;
	client_step(c);
}

static void commit_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	COMMIT3res *r = res;
	check(c, "COMMIT", status, res, status ? NFS3_OK : r->status);
	if (memcmp(r->COMMIT3res_u.resok.verf, c->verf, NFS3_WRITEVERFSIZE))
		die("client %u: COMMIT verifier differs from the WRITEs' (server restarted?)",
		    c->id);
	op_done(c, OP_COMMIT);
	c->next++;
	client_step(c);
}

static void write_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	WRITE3res *r = res;
	check(c, "WRITE", status, res, status ? NFS3_OK : r->status);
	WRITE3resok *ok = &r->WRITE3res_u.resok;
	if (!o.unstable && ok->committed != FILE_SYNC)
		die("client %u: FILE_SYNC WRITE answered as %d", c->id, (int)ok->committed);
	if (c->verf_set && memcmp(ok->verf, c->verf, NFS3_WRITEVERFSIZE))
		die("client %u: WRITE verifier changed (server restarted?)", c->id);
	memcpy(c->verf, ok->verf, NFS3_WRITEVERFSIZE);
	c->verf_set = true;
	if (--c->inflight)
		return;
	op_done(c, OP_WRITE);
	bytes_written += c->size;
	if (o.unstable) {
		COMMIT3args a = {.file = fh_arg(&c->file), .offset = 0, .count = 0};
		c->t_op = now_ns();
		if (rpc_nfs3_commit_async(c->rpc, commit_cb, &a, c))
			die("COMMIT: %s", rpc_get_error(c->rpc));
		return;
	}
	c->next++;
	client_step(c);
}

static void create_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	CREATE3res *r = res;
	check(c, "CREATE", status, res, status ? NFS3_OK : r->status);
	if (!r->CREATE3res_u.resok.obj.handle_follows)
		die("CREATE returned no handle");
	fh_copy(&c->file, &r->CREATE3res_u.resok.obj.post_op_fh3_u.handle);
	op_done(c, OP_CREATE);

	c->size = untar_file_size(&o, c->id, c->next);
	c->t_op = now_ns();
	for (uint32_t off = 0; off < c->size; off += o.wsize) {
		uint32_t n = c->size - off < o.wsize ? c->size - off : o.wsize;
		WRITE3args a;
		memset(&a, 0, sizeof(a));
		a.file = fh_arg(&c->file);
		a.offset = off;
		a.count = n;
		a.stable = o.unstable ? UNSTABLE : FILE_SYNC;
		a.data.data_len = n;
		a.data.data_val = data + (c->next * 4096u + off) % (UNTAR_MAX_WSIZE - o.wsize);
		if (rpc_nfs3_write_async(c->rpc, write_cb, &a, c))
			die("WRITE: %s", rpc_get_error(c->rpc));
		c->inflight++;
	}
}

/* Start the next call of client c: a directory it needs, or its next file. */
static void client_step(struct client *c)
{
	char name[32];
	if (c->next == c->nfiles) {
		active--;
		return;
	}
	uint32_t d = c->next / o.per_dir;
	c->t_op = now_ns();
	if (d >= c->ndirs) {
		MKDIR3args a;
		memset(&a, 0, sizeof(a));
		if (d == 0) {
			snprintf(name, sizeof(name), "c%u", c->id);
			a.where.dir = fh_arg(&run_dir);
		} else {
			snprintf(name, sizeof(name), "d%u", d);
			a.where.dir = fh_arg(&c->dirs[(d - 1) / o.fanout]);
		}
		a.where.name = name;
		a.attributes.mode.set_it = 1;
		a.attributes.mode.set_mode3_u.mode = 0755;
		if (rpc_nfs3_mkdir_async(c->rpc, mkdir_cb, &a, c))
			die("MKDIR: %s", rpc_get_error(c->rpc));
		return;
	}
	CREATE3args a;
	snprintf(name, sizeof(name), "f%u", c->next);
	create_args(&a, &c->dirs[d], name);
	if (rpc_nfs3_create_async(c->rpc, create_cb, &a, c))
		die("CREATE: %s", rpc_get_error(c->rpc));
}

static const char usage[] =
	"usage: nfs3-untar --port P [--mount-port P] [--addr A] [--export PATH]\n"
	"                  [--files N] [--clients C] [--mode filesync|unstable]\n"
	"                  [--per-dir F] [--fanout B] [--wsize W] [--seed S]\n"
	"                  [--label L] [--jnfsd-stats] [--xfs-dev DEV] [--disk DEV]\n"
	"                  [--csv]\n";

int main(int argc, char **argv)
{
	untar_parse_opts(argc, argv, &o, true, 512, usage);
	untar_fill(data, sizeof(data));

	struct client *cl = calloc(o.clients, sizeof(*cl));
	if (!cl)
		die("out of memory");

	/* MNT on its own connection, then one connection per client */
	bench_nfs3_mount(o.addr, o.mount_port, o.export, &run_dir);

	for (unsigned k = 0; k < o.clients; k++) {
		struct client *c = &cl[k];
		c->id = k;
		c->nfiles = untar_client_files(&o, k);
		c->dirs = calloc((c->nfiles + o.per_dir - 1) / o.per_dir, sizeof(*c->dirs));
		if (!c->dirs)
			die("out of memory");
		c->rpc = bench_nfs3_connect(o.addr, o.port);
		rpc_set_next_xid(c->rpc, k << 24);
	}
	make_run_dir(&cl[0]);

	struct untar_sample s0, s1;
	untar_sample(&o, &s0);

	uint64_t t0 = now_ns();
	last_progress = t0;
	active = o.clients;
	for (unsigned k = 0; k < o.clients; k++)
		client_step(&cl[k]);
	while (active)
		service(cl, o.clients);
	uint64_t t1 = now_ns();

	untar_sample(&o, &s1);
	for (unsigned k = 0; k < o.clients; k++) {
		rpc_destroy_context(cl[k].rpc);
		free(cl[k].dirs);
	}
	free(cl);

	struct untar_result r = {.seconds = (double)(t1 - t0) / 1e9,
				 .dirs = dirs_made,
				 .bytes = bytes_written,
				 .nsteps = OP_N,
				 .step_name = op_name,
				 .step_count = op_count,
				 .step_ns = op_ns};
	untar_report(&o, &r, &s0, &s1);
	return 0;
}
