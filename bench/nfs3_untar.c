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
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "untar_counters.h"

#define MAX_CLIENTS 256
#define MAX_WSIZE   (1u << 20)
#define STALL_SEC   120

enum op { OP_MKDIR, OP_CREATE, OP_WRITE, OP_COMMIT, OP_N };
static const char *const op_name[OP_N] = {"mkdir", "create", "write", "commit"};

struct opts {
	const char *addr, *export, *label, *xfs_dev, *disk;
	unsigned port, mount_port, clients, per_dir, fanout, wsize;
	uint64_t files, seed;
	bool unstable, jnfsd_stats, csv;
};

struct fh {
	uint32_t len;
	char data[NFS3_FHSIZE];
};

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
	bool busy;             /* a synchronous setup call is in flight */
	int status;            /* its RPC status */
};

static struct opts o = {
	.addr = "127.0.0.1", .export = "/", .label = "server", .clients = 1,
	.per_dir = 16, .fanout = 4, .wsize = 65536, .files = 1000, .seed = 1,
};
static struct fh run_dir;
static unsigned active;
static uint64_t op_count[OP_N], op_ns[OP_N], bytes_written, dirs_made;
static uint64_t last_progress;
static char data[MAX_WSIZE];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "nfs3-untar: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The size of client k's file i: the same for every server and run. */
static uint32_t file_size(unsigned k, uint32_t i)
{
	uint64_t h = mix64(o.seed ^ mix64(((uint64_t)k << 32) | i));
	unsigned pct = (unsigned)(h % 100);
	uint64_t r = h >> 8;
	if (pct < 5)
		return 64 + (uint32_t)(r % (1024 - 64));
	if (pct < 90)
		return 1024 + (uint32_t)(r % (16384 - 1024));
	return 16384 + (uint32_t)(r % (65536 - 16384));
}

static void fh_copy(struct fh *dst, const nfs_fh3 *src)
{
	if (src->data.data_len > NFS3_FHSIZE)
		die("file handle of %u bytes", src->data.data_len);
	dst->len = src->data.data_len;
	memcpy(dst->data, src->data.data_val, dst->len);
}

static nfs_fh3 fh_arg(struct fh *fh)
{
	return (nfs_fh3){.data = {.data_len = fh->len, .data_val = fh->data}};
}

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
	struct pollfd pfd[MAX_CLIENTS];
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
	if (now_ns() - last_progress > (uint64_t)STALL_SEC * 1000000000u)
		die("no reply for %d s", STALL_SEC);
}

/* Run one client's loop until its synchronous setup call is answered. */
static void wait_one(struct client *c)
{
	last_progress = now_ns();
	while (c->busy)
		service(c, 1);
}

/* ---- setup: connect, mount, the run's directory ---- */

static void setup_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	c->status = status;
	c->busy = false;
	if (status != RPC_STATUS_SUCCESS)
		fprintf(stderr, "nfs3-untar: client %u: %s\n", c->id,
			status == RPC_STATUS_ERROR && res ? (const char *)res : "cancelled");
}

static void connect_client(struct client *c, unsigned port)
{
	c->rpc = rpc_init_context();
	if (!c->rpc)
		die("rpc_init_context failed");
	c->busy = true;
	if (rpc_connect_async(c->rpc, o.addr, (int)port, setup_cb, c))
		die("connect to %s:%u: %s", o.addr, port, rpc_get_error(c->rpc));
	wait_one(c);
	if (c->status != RPC_STATUS_SUCCESS)
		die("cannot connect to %s:%u", o.addr, port);
}

static void mnt_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	mountres3 *r = res;
	c->busy = false;
	if (status != RPC_STATUS_SUCCESS || r->fhs_status != MNT3_OK)
		die("MNT %s: %s", o.export,
		    status == RPC_STATUS_SUCCESS ? "refused" : (const char *)res);
	fhandle3 *h = &r->mountres3_u.mountinfo.fhandle;
	if (h->fhandle3_len > NFS3_FHSIZE)
		die("MNT: handle of %u bytes", h->fhandle3_len);
	run_dir.len = h->fhandle3_len;
	memcpy(run_dir.data, h->fhandle3_val, run_dir.len);
}

static void mkdir_setup_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct client *c = priv;
	MKDIR3res *r = res;
	c->busy = false;
	check(c, "MKDIR of the run directory", status, res, status ? NFS3_OK : r->status);
	if (!r->MKDIR3res_u.resok.obj.handle_follows)
		die("MKDIR returned no handle");
	fh_copy(&run_dir, &r->MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
}

static void make_run_dir(struct client *c)
{
	char name[96];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "untar-%s-%ld-%ld.%09ld", o.label, (long)getpid(),
		 (long)ts.tv_sec, ts.tv_nsec);
	MKDIR3args a;
	memset(&a, 0, sizeof(a));
	a.where.dir = fh_arg(&run_dir);
	a.where.name = name;
	a.attributes.mode.set_it = 1;
	a.attributes.mode.set_mode3_u.mode = 0755;
	c->busy = true;
	if (rpc_nfs3_mkdir_async(c->rpc, mkdir_setup_cb, &a, c))
		die("MKDIR: %s", rpc_get_error(c->rpc));
	wait_one(c);
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

	c->size = file_size(c->id, c->next);
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
		a.data.data_val = data + (c->next * 4096u + off) % (MAX_WSIZE - o.wsize);
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
	memset(&a, 0, sizeof(a));
	snprintf(name, sizeof(name), "f%u", c->next);
	a.where.dir = fh_arg(&c->dirs[d]);
	a.where.name = name;
	a.how.mode = GUARDED;
	a.how.createhow3_u.g_obj_attributes.mode.set_it = 1;
	a.how.createhow3_u.g_obj_attributes.mode.set_mode3_u.mode = 0644;
	if (rpc_nfs3_create_async(c->rpc, create_cb, &a, c))
		die("CREATE: %s", rpc_get_error(c->rpc));
}

/* ---- counters ---- */

static bool read_counters(struct untar_counters *k)
{
	char addr[160];
	int err;
	if (o.jnfsd_stats) {
		snprintf(addr, sizeof(addr), "%s:%u", o.addr, o.port);
		err = untar_counters_jnfsd(addr, k);
	} else if (o.xfs_dev) {
		err = untar_counters_xfs(o.xfs_dev, k);
	} else {
		memset(k, 0, sizeof(*k));
		return false;
	}
	if (err)
		fprintf(stderr, "nfs3-untar: cannot read the server's counters: %s\n",
			strerror(-err));
	return !err;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nfs3-untar --port P [--mount-port P] [--addr A] [--export PATH]\n"
		   "                  [--files N] [--clients C] [--mode filesync|unstable]\n"
		   "                  [--per-dir F] [--fanout B] [--wsize W] [--seed S]\n"
		   "                  [--label L] [--jnfsd-stats] [--xfs-dev DEV] [--disk DEV]\n"
		   "                  [--csv]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"addr", required_argument, NULL, 'a'},	      {"port", required_argument, NULL, 'p'},
		{"mount-port", required_argument, NULL, 'M'}, {"export", required_argument, NULL, 'e'},
		{"files", required_argument, NULL, 'n'},      {"clients", required_argument, NULL, 'c'},
		{"mode", required_argument, NULL, 'm'},	      {"per-dir", required_argument, NULL, 'F'},
		{"fanout", required_argument, NULL, 'B'},     {"wsize", required_argument, NULL, 'w'},
		{"seed", required_argument, NULL, 's'},	      {"label", required_argument, NULL, 'l'},
		{"jnfsd-stats", no_argument, NULL, 'J'},      {"xfs-dev", required_argument, NULL, 'X'},
		{"csv", no_argument, NULL, 'C'},	      {"help", no_argument, NULL, 'h'},
		{"disk", required_argument, NULL, 'D'},
		{NULL, 0, NULL, 0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'a': o.addr = optarg; break;
		case 'p': o.port = (unsigned)atoi(optarg); break;
		case 'M': o.mount_port = (unsigned)atoi(optarg); break;
		case 'e': o.export = optarg; break;
		case 'n': o.files = strtoull(optarg, NULL, 0); break;
		case 'c': o.clients = (unsigned)atoi(optarg); break;
		case 'm':
			if (!strcmp(optarg, "filesync"))
				o.unstable = false;
			else if (!strcmp(optarg, "unstable"))
				o.unstable = true;
			else
				die("--mode is filesync or unstable, not '%s'", optarg);
			break;
		case 'F': o.per_dir = (unsigned)atoi(optarg); break;
		case 'B': o.fanout = (unsigned)atoi(optarg); break;
		case 'w': o.wsize = (unsigned)atoi(optarg); break;
		case 's': o.seed = strtoull(optarg, NULL, 0); break;
		case 'l': o.label = optarg; break;
		case 'J': o.jnfsd_stats = true; break;
		case 'X': o.xfs_dev = optarg; break;
		case 'D': o.disk = optarg; break;
		case 'C': o.csv = true; break;
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
	if (!o.clients || o.clients > MAX_CLIENTS || o.files < o.clients || o.files > UINT32_MAX ||
	    !o.per_dir || !o.fanout || o.wsize < 512 || o.wsize > MAX_WSIZE / 2)
		die("bad --clients, --files, --per-dir, --fanout or --wsize");
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(' ' + mix64(i) % 95); /* text, like source */

	struct client *cl = calloc(o.clients, sizeof(*cl));
	if (!cl)
		die("out of memory");

	/* MNT on its own connection, then one connection per client */
	struct client m = {.id = 0};
	connect_client(&m, o.mount_port);
	m.busy = true;
	if (rpc_mount3_mnt_async(m.rpc, mnt_cb, (char *)o.export, &m))
		die("MNT: %s", rpc_get_error(m.rpc));
	wait_one(&m);
	rpc_destroy_context(m.rpc);

	for (unsigned k = 0; k < o.clients; k++) {
		struct client *c = &cl[k];
		c->id = k;
		c->nfiles = (uint32_t)(o.files / o.clients + (k < o.files % o.clients));
		c->dirs = calloc((c->nfiles + o.per_dir - 1) / o.per_dir, sizeof(*c->dirs));
		if (!c->dirs)
			die("out of memory");
		connect_client(c, o.port);
		rpc_set_next_xid(c->rpc, k << 24);
	}
	make_run_dir(&cl[0]);

	struct untar_counters k0, k1;
	bool have = read_counters(&k0);
	uint64_t df0 = 0, dm0 = 0, df1 = 0, dm1 = 0;
	bool have_disk = o.disk && !untar_disk_flushes(o.disk, &df0, &dm0);

	uint64_t t0 = now_ns();
	last_progress = t0;
	active = o.clients;
	for (unsigned k = 0; k < o.clients; k++)
		client_step(&cl[k]);
	while (active)
		service(cl, o.clients);
	uint64_t t1 = now_ns();

	have = read_counters(&k1) && have;
	have_disk = have_disk && !untar_disk_flushes(o.disk, &df1, &dm1);
	for (unsigned k = 0; k < o.clients; k++) {
		rpc_destroy_context(cl[k].rpc);
		free(cl[k].dirs);
	}
	free(cl);

	double secs = (double)(t1 - t0) / 1e9, nf = (double)o.files;
	double rate = nf / secs;
	const char *mode = o.unstable ? "unstable" : "filesync";
	printf("untar.label %s\nuntar.mode %s\nuntar.clients %u\nuntar.files %" PRIu64 "\n",
	       o.label, mode, o.clients, o.files);
	printf("untar.dirs %" PRIu64 "\nuntar.bytes %" PRIu64 "\nuntar.seconds %.3f\n",
	       dirs_made, bytes_written, secs);
	printf("untar.files_per_sec %.1f\n", rate);
	for (int i = 0; i < OP_N; i++)
		if (op_count[i])
			printf("untar.lat_us.%s %.1f\n", op_name[i],
			       (double)op_ns[i] / (double)op_count[i] / 1e3);

	char lw[32] = "n/a", lwf[32] = "n/a", fl[32] = "n/a", flf[32] = "n/a";
	if (have && k1.have_log) {
		uint64_t w = k1.log_writes - k0.log_writes, f = k1.log_forces - k0.log_forces;
		snprintf(lw, sizeof(lw), "%" PRIu64, w);
		snprintf(lwf, sizeof(lwf), "%.3f", (double)w / nf);
		printf("untar.log_writes %s\nuntar.log_writes_per_file %s\n", lw, lwf);
		printf("untar.%s %" PRIu64 "\nuntar.%s_per_file %.3f\n", k1.forces_name, f,
		       k1.forces_name, (double)f / nf);
	}
	if (have && k1.have_flush) {
		uint64_t f = k1.flushes - k0.flushes;
		snprintf(fl, sizeof(fl), "%" PRIu64, f);
		snprintf(flf, sizeof(flf), "%.3f", (double)f / nf);
		printf("untar.flushes %s\nuntar.flushes_per_file %s\n", fl, flf);
	}
	if (have_disk) {
		printf("untar.disk_flushes %" PRIu64 "\n", df1 - df0);
		printf("untar.disk_flush_us_avg %.0f\n",
		       df1 > df0 ? (double)(dm1 - dm0) * 1e3 / (double)(df1 - df0) : 0.0);
	}
	if (o.csv) {
		printf("label,mode,clients,files,dirs,bytes,seconds,files_per_sec,log_writes,"
		       "log_writes_per_file,flushes,flushes_per_file\n");
		printf("%s,%s,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.1f,%s,%s,%s,%s\n", o.label,
		       mode, o.clients, o.files, dirs_made, bytes_written, secs, rate, lw, lwf, fl,
		       flf);
	}
	return 0;
}
