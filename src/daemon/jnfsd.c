/*
 * jnfsd - the jnfs NFS server.
 *
 * It mounts the engine on an image file or block device (creating and
 * formatting ./var/jnfs.img, 8 GiB sparse, on the first start when run
 * without --image), reads the exports (an exports(5) file, or the built-in
 * EXPORTS_BUILTIN: "/" read-write, sync, insecure ports allowed, root not
 * squashed, to loopback clients only; without an exports file it refuses
 * to listen on any address but a loopback one, since anyone who reaches
 * another could mount "/" as root), and
 * serves NFSv4.1/4.2, NFSv3 and MOUNT v3 (and pNFS block layouts) on every
 * --listen address, registering them with rpcbind when one runs. SIGTERM
 * or SIGINT stops it cleanly: the RPC service first (every parked reply is
 * finished or dropped), then a clean unmount. SIGUSR1 prints every counter
 * on stdout, ending with "stats.end 1"; `jnfs stat --server ADDR` fetches
 * the same through the administration program (admin.h), and with
 * --metrics ADDR:PORT an HTTP endpoint serves them to Prometheus
 * (metrics.h), on a loopback address unless --metrics-remote allows
 * another. SIGHUP reads the exports file again and applies it without
 * dropping a connection (reload_exports); a bad file is refused and the
 * exports stay as they were.
 *
 * With --crash the image sits behind the crash device (dev/crashdev.h):
 * writes the server has not flushed stay in its memory, so SIGKILL is a
 * power failure. Tests use it; nobody else should. Unlike a disk's own
 * volatile cache, that memory is jnfsd's alone: a pNFS client reading the
 * image itself sees none of those writes (the zeros of a punch, say) until
 * a flush, so a test that has a client read through layouts what the
 * server wrote must not use it. The same goes for
 * --test-flush-fault: SIGUSR2 then makes the next flush of the data device
 * fail (dev_inject_flush_fault), so that a test can watch a failed flush
 * move the write verifier. And for --test-hold-ends: SIGUSR2 then turns
 * on and off the holding back of the releases of the NFSv4 stateids that
 * end (nfs4_test_hold_ends), so that a test can meet an open, lock or
 * layout state on its way out at will.
 *
 * Signals: they are blocked in every thread (the mask is set before any
 * thread starts) and taken synchronously by the main thread with
 * sigwait(), so no handler runs in the middle of RPC code.
 *
 * Under systemd (Type=notify, dist/jnfsd.service) it says READY=1 once
 * every listener is open and rpcbind has been told, RELOADING=1 then
 * READY=1 around a SIGHUP, and STOPPING=1 when a stop begins; sd_notify()
 * does nothing when NOTIFY_SOCKET is not set, so
 * the same binary runs anywhere.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/parse.h"
#include "dev/crashdev.h"
#include "export/exports.h"
#include "fs/fs.h"
#include "nfs3/nfs3.h"
#include "nfs4/nfs4.h"
#include "srv/srv.h"
#include "rpc/rpcb.h"
#include "rpc/svc.h"
#include "daemon/admin.h"
#include "daemon/metrics.h"
#include "xdr/mount3.h" /* MOUNT_PROGRAM */
#include "xdr/nfs3.h"   /* NFS_PROGRAM */
#include "jnfs_version.h"

#define MAX_LISTEN 16
#define DEFAULT_IMAGE "var/jnfs.img"
#define DEFAULT_SIZE (8ull << 30)
#define DEFAULT_MAX_CONNS 4096
/* Flush-behind (dev.h, B1-B3): a flush costs about what the device
 * caches over its write-back rate (0.6-0.7 ms per MiB measured on a
 * virtio disk), and a sync CREATE right after a stream of UNSTABLE writes
 * waits for the flush under way and its own (docs/design.md rule 7); 2 MiB
 * keeps that to a few ms, while 1 MiB cost the stream a third of its
 * throughput there (a flush per write). Writers wait past 4 times as much. */
#define FLUSH_BEHIND_DEFAULT   (2ull << 20)
#define FLUSH_BEHIND_DEFAULT_S "2097152"
#define FLUSH_BEHIND_LIMIT     4
/* descriptors kept for all but client connections: image and log device,
 * listeners, epoll, eventfd, rpcbind calls, stdio, the engine's */
#define FDS_RESERVED 64

/* The command line, parsed and checked (options_parse). */
struct options {
	const char *listen[MAX_LISTEN];
	int nlisten;
	const char *rpcbind; /* NULL: --rpcbind off */
	const char *port_file;
	const char *metrics_addr;
	struct sockaddr_storage metrics_ss; /* metrics_addr parsed */
	bool metrics_remote;
	const char *image, *logdev, *exports_file;
	uint64_t size, flush_us, flush_behind;
	bool crash, buffered, max_conns_given, flush_fault, hold_ends, bench_sync_lc, no_ra;
	unsigned ra_windows; /* 0: the engine's default */
	uint32_t ldata_max; /* 0: the engine's default */
	struct svc_config svc;
	struct nfs4_server_config nfs4;
};

/*
 * What a running server holds. server_open() fills it in the order of the
 * fields below and stops at the first failure; server_close() undoes
 * whatever was done, in the reverse order, from any point: it is the one
 * unwind path of the daemon.
 */
struct server {
	struct exports *exports; /* the table served now, owned (reload_exports) */
	struct dev *file, *ddev, *ldev; /* ddev is file, or the crash device over it */
	struct fs *fs;
	struct srv srv; /* what NFSv3, MOUNT and NFSv4 share */
	struct nfs3_server nfs3;
	bool nfs3_ready;
	struct nfs4_server *nfs4;
	struct svc *svc;
	struct metrics *metrics;
	/* each --listen's bound port, and its address with that port */
	uint16_t ports[MAX_LISTEN];
	struct sockaddr_storage bound[MAX_LISTEN];
	counter_t reloads, reload_failures;
};

static enum svc_stat proc_null(struct svc_req *rq, const struct rpc_cred *cred, void *args,
			       void *res)
{
	return SVC_OK;
}

/* ---- counters ---- */

/* Every counter; called by SIGUSR1, the admin program's workers and the
 * metrics thread, at once if they like (every subsystem's stats function
 * reads under its own locks). */
static void server_stats(struct server *srv, const struct stat_sink *sink)
{
	svc_stats(srv->svc, sink);
	iobuf_stats(sink);
	srv_stats(&srv->srv, sink);
	nfs4_stats(srv->nfs4, sink);
	stat_emit(sink, "exports.reloads", counter_get(&srv->reloads));
	stat_emit(sink, "exports.reload_failures", counter_get(&srv->reload_failures));
	fs_stats(srv->fs, sink);
	stat_emit(sink, "stats.end", 1);
}

static void metrics_collect(void *arg, const struct stat_sink *sink)
{
	server_stats(arg, sink);
}

struct stats_res {
	char *text;
	size_t len;
};

static void emit_text(void *arg, const char *name, uint64_t value)
{
	fprintf(arg, "%s %llu\n", name, (unsigned long long)value);
}

/* 127.0.0.0/8, ::1, or 127.0.0.0/8 mapped into IPv6. */
static bool peer_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

static enum svc_stat admin_stats(struct svc_req *rq, const struct rpc_cred *cred, void *args,
				 void *res)
{
	struct stats_res *r = res;
	if (!peer_is_loopback(svc_conn_peer(svc_req_conn(rq))))
		return SVC_OK;
	FILE *f = open_memstream(&r->text, &r->len);
	if (!f)
		return SVC_SYSERR;
	struct stat_sink sink = {.emit = emit_text, .arg = f};
	server_stats(svc_req_ctx(rq), &sink);
	fclose(f);
	return SVC_OK;
}

static int enc_stats(struct xdr_enc *x, const void *res)
{
	const struct stats_res *r = res;
	size_t len = r->len < JNFS_ADMIN_MAX_STATS ? r->len : 0;
	return xdr_enc_opaque(x, r->text ? r->text : "", (uint32_t)len);
}

static void release_stats(void *args, void *res)
{
	free(((struct stats_res *)res)->text);
}

static const struct svc_proc admin_procs[] = {
	[0] = {.name = "null", .decode = svc_dec_void, .handler = proc_null, .encode = svc_enc_void,
	       .flags = SVC_PROC_INLINE, .reply_max = SVC_REPLY_HDR},
	[JNFS_ADMIN_PROC_STATS] = {.name = "stats", .decode = svc_dec_void, .handler = admin_stats,
				   .encode = enc_stats, .release = release_stats,
				   .res_size = sizeof(struct stats_res),
				   .reply_max = SVC_REPLY_HDR + 4 + JNFS_ADMIN_MAX_STATS},
};
static const struct svc_version admin_versions[] = {
	{.vers = JNFS_ADMIN_VERS, .nprocs = 2, .procs = admin_procs},
};

/* ---- programs ---- */


static const struct svc_program nfs3_program = {
	.prog = NFS_PROGRAM, .name = "nfs", .nversions = 1, .versions = &nfs3_version};
static const struct svc_program nfs4_program = {
	.prog = NFS_PROGRAM, .name = "nfs", .nversions = 1, .versions = &nfs4_version};
static const struct svc_program mount_program = {
	.prog = MOUNT_PROGRAM, .name = "mount", .nversions = 1, .versions = &mount3_version};
static const struct svc_program admin_program = {
	.prog = JNFS_ADMIN_PROG, .name = "admin", .nversions = 1, .versions = admin_versions};

/* Registered with rpcbind (the admin program is not). */
static const struct svc_program *const public_programs[] = {&nfs3_program, &nfs4_program,
							     &mount_program};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: jnfsd [options]\n"
		"  --image PATH           image file or block device (default ./" DEFAULT_IMAGE ",\n"
		"                         created sparse and formatted if it does not exist)\n"
		"  --size SIZE            size of an image created now (default 8G; K, M, G, T\n"
		"                         in either case)\n"
		"  --log-device PATH      external journal device (as given to jnfs mkfs)\n"
		"  --exports FILE         exports(5) file (default: / to loopback clients\n"
		"                         only, rw,sync,insecure,no_root_squash; then only\n"
		"                         loopback --listen addresses are allowed)\n"
		"  --listen ADDR:PORT     listen here (repeatable; [::1]:2049 for IPv6);\n"
		"                         default 127.0.0.1:2049, port 0 picks a free port\n"
		"  --threads N            worker threads (default 8)\n"
		"  --lease-seconds N      NFSv4 lease time (default 90, at least 5)\n"
		"  --grace-seconds N      NFSv4 grace period after a start (default 90)\n"
		"  --fence-cmd CMD        run CMD (sh -c, the client's address as $1) for a\n"
		"                         pNFS client that kept a recalled layout\n"
		"  --flush-latency-us N   add N us to every device flush and FUA write\n"
		"  --flush-behind BYTES   start a flush of the data device once this much\n"
		"                         written data is not flushed; a writer that would\n"
		"                         leave 4 times as much waits "
		"(default " FLUSH_BEHIND_DEFAULT_S ",\n"
		"                         0: off)\n"
		"  --buffered             reach the image through the host's page cache\n"
		"                         (default: O_DIRECT, where the filesystem allows it)\n"
		"  --logged-data-max N    FILE_SYNC/DATA_SYNC writes of at most N bytes are made\n"
		"                         durable by logging their data (default 65536; 0: never)\n"
		"  --readahead-mib N      memory for readahead windows of 1 MiB for sequential\n"
		"                         readers (default 64, at most 1024)\n"
		"  --no-readahead         read every READ from the device, with no readahead\n"
		"                         windows (to compare)\n"
		"  --crash                keep unflushed writes in memory: SIGKILL is a power\n"
		"                         failure (for tests)\n"
		"  --rpcbind ADDR:PORT    rpcbind to register with (default 127.0.0.1:111),\n"
		"                         or 'off'\n"
		"  --max-conns N          connections; at the limit the oldest idle one makes\n"
		"                         room (default 4096, fewer if the open-file limit,\n"
		"                         raised to its hard limit at start, is lower)\n"
		"  --max-record BYTES     largest call record (default 1 MiB + 64 KiB)\n"
		"  --stall-timeout MS     close a connection stuck mid-record (default 30000)\n"
		"  --max-buffered BYTES   calls read and not answered plus reply space, all\n"
		"                         connections together; past it each runs one call\n"
		"                         at a time and one whose replies do not move for\n"
		"                         a second is closed (default 128 MiB, 0: no limit)\n"
		"  --max-partial BYTES    bytes of incomplete records of all connections;\n"
		"                         past it the one begun earliest is closed\n"
		"                         (default 128 MiB, 0: no limit)\n"
		"  --idle-timeout MS      close a connection idle this long (default 360000,\n"
		"                         0: never)\n"
		"  --send-timeout MS      close a connection whose replies are not read for\n"
		"                         this long (default 60000, 0: never)\n"
		"  --port-file FILE       write the bound ports there, one per line\n"
		"  --metrics ADDR:PORT    serve Prometheus metrics at http://ADDR:PORT/metrics\n"
		"                         (a loopback address; port 0 picks a free port)\n"
		"  --metrics-remote       allow --metrics on a non-loopback address\n"
		"  --test-flush-fault     tests only: SIGUSR2 makes the next flush of the data\n"
		"                         device fail with EIO (prints 'flush fault armed')\n"
		"  --test-hold-ends       tests only: SIGUSR2 turns on and off the holding back\n"
		"                         of the releases of NFSv4 stateids that end (prints\n"
		"                         'stateid ends held' or 'stateid ends released')\n"
		"  --bench-sync-layoutcommit\n"
		"                         benchmarks only: every LAYOUTCOMMIT logs the whole\n"
		"                         inode and forces the journal, as a synchronous\n"
		"                         transaction would (what it cost before it was made\n"
		"                         an fdatasync); never for serving\n"
		"  --version              print the version and exit\n"
		"Prints 'listening on ADDR:PORT' for each listener once serving.\n"
		"SIGHUP reads the --exports file again; SIGUSR1 prints the counters.\n");
}

static bool parse_num(const char *s, unsigned long long max, unsigned long long *v)
{
	char *end;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *s && !*end && !errno && *v <= max;
}

static void print_stat(void *arg, const char *name, uint64_t value)
{
	fprintf(arg, "%s %llu\n", name, (unsigned long long)value);
}

/* Register (set) or unregister every program version on every listener.
 * When rpcbind cannot be reached this logs once and gives up: the server
 * serves anyway, clients that know the port still reach it. */
static void rpcbind_register(const char *rpcbind, struct sockaddr_storage *addrs, int naddrs,
			     bool set)
{
	for (size_t p = 0; p < sizeof(public_programs) / sizeof(public_programs[0]); p++) {
		for (uint32_t v = 0; v < public_programs[p]->nversions; v++) {
			uint32_t prog = public_programs[p]->prog, vers = public_programs[p]->versions[v].vers;
			int err = rpcb_unset(rpcbind, prog, vers);
			for (int i = 0; set && !err && i < naddrs; i++)
				err = rpcb_set(rpcbind, prog, vers, &addrs[i]);
			if (err == -EACCES) {
				msg_warn("rpcbind at %s refused to register %u v%u", rpcbind, prog,
					 vers);
			} else if (err) {
				if (set)
					msg_info("rpcbind not reachable at %s (%s); serving without "
						 "registration",
						 rpcbind, strerror(-err));
				return;
			}
		}
	}
}

/* mkdir -p of path's directory. */
static int make_parent(const char *path)
{
	char *dir = xstrdup(path);
	int err = 0;
	for (char *p = dir + 1; *p && !err; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			err = -errno;
		*p = '/';
	}
	free(dir);
	return err;
}

/* Open the data device, creating and formatting an image that does not
 * exist yet; put the crash device in front with --crash. */
static int open_storage(const char *image, uint64_t size, const char *logdev, bool crash,
			bool buffered, struct dev **file, struct dev **ddev, struct dev **ldev)
{
	struct stat st;
	bool create = stat(image, &st) && errno == ENOENT;
	/* O_DIRECT (dev/filedev.c): file data never piles up in the host's page
	 * cache for a journal flush to write back, and reads never come from a
	 * cache a pNFS client writing the device directly has made stale */
	unsigned direct = buffered ? 0 : DEV_OPEN_DIRECT;
	int err;
	*file = *ddev = *ldev = NULL;
	if (create && (err = make_parent(image))) {
		msg_err("cannot create the directory of %s: %s", image, strerror(-err));
		return err;
	}
	if ((err = dev_file_open(image, (create ? DEV_OPEN_CREATE : 0) | direct, size, file))) {
		msg_err("cannot open %s: %s", image, strerror(-err));
		return err;
	}
	if (logdev && (err = dev_file_open(logdev, direct, 0, ldev))) {
		msg_err("cannot open log device %s: %s", logdev, strerror(-err));
		return err;
	}
	if (create) {
		if ((err = fs_mkfs(&(struct fs_mkfs_opts){.ddev = *file, .ldev = *ldev}))) {
			msg_err("cannot format %s: %s", image, strerror(-err));
			unlink(image);
			return err;
		}
		msg_info("created %s (%llu MiB)", image,
			 (unsigned long long)(dev_size(*file) >> 20));
	}
	*ddev = *file;
	if (crash && (err = crashdev_create(*file, 0, ddev))) {
		msg_err("cannot create the crash device: %s", strerror(-err));
		return err;
	}
	return 0;
}

/*
 * Every connection is a descriptor, and the usual soft open-file limit of
 * 1,024 would refuse clients (accept fails with EMFILE) long before
 * max_conns: raise the soft limit to the hard one, then fit max_conns (the
 * default, or --max-conns when given) under it.
 */
static void size_connections(struct svc_config *cfg, bool given)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		msg_warn("getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
		return;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit want = {.rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl = want;
		else
			msg_warn("cannot raise the open-file limit from %llu to %llu: %s",
				 (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
				 strerror(errno));
	}
	unsigned long long fds = rl.rlim_cur == RLIM_INFINITY ? UINT_MAX : rl.rlim_cur;
	unsigned long long fit = fds > FDS_RESERVED + 16 ? fds - FDS_RESERVED : 16;
	unsigned want = given ? cfg->max_conns : DEFAULT_MAX_CONNS;
	if (want > fit) {
		if (given)
			msg_warn("--max-conns %u: the open-file limit of %llu allows %llu", want,
				 fds, fit);
		want = (unsigned)fit;
	}
	cfg->max_conns = want;
	msg_info("at most %u connections (open-file limit %llu)", want, fds);
}

static void close_storage(struct dev *file, struct dev *ddev, struct dev *ldev)
{
	if (ddev && ddev != file)
		dev_close(ddev);
	dev_close(ldev);
	dev_close(file);
}

/*
 * SIGHUP: read the exports file again, on the main thread. A good file
 * replaces the table for every request whose handler starts after the swap;
 * handlers running now keep the table they loaded until they return
 * (svc_synchronize), and only then is the old one freed. Connections,
 * mounts and parked requests are not touched. An export that stays keeps
 * its fsid (derived from its root, or its fsid=), so its handles keep
 * working; the handles of a removed export answer STALE, and a client the
 * file no longer admits gets ACCES. A file that does not parse, or names a
 * path that is not a directory, or gives two exports one fsid, is refused
 * with the line named, and the table stays as it was.
 */
static void reload_exports(struct server *srv, const char *file)
{
	char why[512];
	if (!file) {
		msg_warn("SIGHUP: no --exports file to read again; the built-in exports stay");
		return;
	}
	sd_notify(0, "RELOADING=1\nSTATUS=reading the exports again");
	struct exports *next = xcalloc(1, sizeof(*next));
	int err = exports_load(file, next, why, sizeof(why));
	if (!err)
		err = exports_resolve(next, srv->fs, file, why, sizeof(why));
	if (err) {
		counter_inc(&srv->reload_failures);
		msg_err("exports not reloaded, the previous ones stay: %s", why);
		exports_free(next);
		free(next);
		sd_notify(0, "READY=1\nSTATUS=serving; the exports file was refused (see the log)");
		return;
	}
	struct exports *old = srv->exports;
	unsigned added = 0, kept = 0;
	for (unsigned i = 0; i < next->n; i++) {
		const struct export *o = exports_by_path(old, next->v[i].path);
		if (!o)
			added++;
		else if (o->fsid == next->v[i].fsid)
			kept++;
	}
	unsigned removed = 0;
	for (unsigned i = 0; i < old->n; i++)
		removed += !exports_by_path(next, old->v[i].path);
	srv_swap_exports(&srv->srv, next);
	struct nfs4_pseudo *old_pseudo = nfs4_exports_changed(srv->nfs4);
	srv->exports = next;
	svc_synchronize(srv->svc);
	nfs4_pseudo_put(old_pseudo);
	exports_free(old);
	free(old);
	counter_inc(&srv->reloads);
	msg_info("exports reloaded from %s: %u export%s (%u new, %u removed, %u with the same "
		 "fsid)",
		 file, next->n, next->n == 1 ? "" : "s", added, removed, kept);
	sd_notify(0, "READY=1\nSTATUS=serving; exports reloaded");
}

static const struct option long_opts[] = {
	{"image", required_argument, NULL, 'I'},
	{"size", required_argument, NULL, 'S'},
	{"log-device", required_argument, NULL, 'L'},
	{"exports", required_argument, NULL, 'e'},
	{"flush-latency-us", required_argument, NULL, 'f'},
	{"flush-behind", required_argument, NULL, 'W'},
	{"crash", no_argument, NULL, 'C'},
	{"buffered", no_argument, NULL, 'B'},
	{"logged-data-max", required_argument, NULL, 'D'},
	{"listen", required_argument, NULL, 'l'},
	{"threads", required_argument, NULL, 't'},
	{"rpcbind", required_argument, NULL, 'r'},
	{"max-conns", required_argument, NULL, 'c'},
	{"max-record", required_argument, NULL, 'm'},
	{"stall-timeout", required_argument, NULL, 's'},
	{"max-partial", required_argument, NULL, 'P'},
	{"max-buffered", required_argument, NULL, 'b'},
	{"idle-timeout", required_argument, NULL, 'i'},
	{"send-timeout", required_argument, NULL, 'T'},
	{"port-file", required_argument, NULL, 'p'},
	{"test-flush-fault", no_argument, NULL, 'F'},
	{"test-hold-ends", no_argument, NULL, 'H'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{"metrics", required_argument, NULL, 'M'},
	{"metrics-remote", no_argument, NULL, 'R'},
	{"lease-seconds", required_argument, NULL, 'E'},
	{"grace-seconds", required_argument, NULL, 'G'},
	{"fence-cmd", required_argument, NULL, 'X'},
	{"bench-sync-layoutcommit", no_argument, NULL, 'Y'},
	{"no-readahead", no_argument, NULL, 'A'},
	{"readahead-mib", required_argument, NULL, 'a'},
	{NULL, 0, NULL, 0},
};

/* One option of long_opts with its argument into o: 0, or -EINVAL for a
 * value out of the option's range. --listen, --help, --version and
 * unknown options are options_parse's. */
static int option_set(struct options *o, int opt, const char *arg)
{
	unsigned long long v;
	switch (opt) {
	case 'I': o->image = arg; return 0;
	case 'L': o->logdev = arg; return 0;
	case 'e': o->exports_file = arg; return 0;
	case 'C': o->crash = true; return 0;
	case 'B': o->buffered = true; return 0;
	case 'X': o->nfs4.fence_cmd = arg; return 0;
	case 'r': o->rpcbind = strcmp(arg, "off") == 0 ? NULL : arg; return 0;
	case 'p': o->port_file = arg; return 0;
	case 'M': o->metrics_addr = arg; return 0;
	case 'R': o->metrics_remote = true; return 0;
	case 'F': o->flush_fault = true; return 0;
	case 'H': o->hold_ends = true; return 0;
	case 'A': o->no_ra = true; return 0;
	case 'a':
		if (!parse_num(arg, FS_RA_WINDOWS_MAX, &v) || v == 0)
			return -EINVAL;
		o->ra_windows = (unsigned)v;
		return 0;
	case 'Y':
		o->bench_sync_lc = true;
		msg_warn("--bench-sync-layoutcommit: every LAYOUTCOMMIT forces the journal "
			 "(for benchmarks only)");
		return 0;
	case 'S':
		if (parse_size(arg, &o->size) || o->size == 0 || o->size > (1ull << 50))
			return -EINVAL;
		return 0;
	case 'f':
		if (!parse_num(arg, 10000000, &v))
			return -EINVAL;
		o->flush_us = v;
		return 0;
	case 'D':
		if (!parse_num(arg, 1u << 20, &v))
			return -EINVAL;
		o->ldata_max = v ? (uint32_t)v : FS_LOGGED_DATA_OFF;
		return 0;
	case 'E':
		if (!parse_num(arg, 3600, &v) || v < 5)
			return -EINVAL;
		o->nfs4.lease_seconds = (unsigned)v;
		return 0;
	case 'G':
		if (!parse_num(arg, 3600, &v))
			return -EINVAL;
		o->nfs4.grace_seconds = (unsigned)v;
		return 0;
	case 't':
		if (!parse_num(arg, 1024, &v) || v == 0)
			return -EINVAL;
		o->svc.threads = (unsigned)v;
		return 0;
	case 'c':
		if (!parse_num(arg, 1u << 20, &v) || v == 0)
			return -EINVAL;
		o->svc.max_conns = (unsigned)v;
		o->max_conns_given = true;
		return 0;
	case 'm':
		if (!parse_num(arg, 0x7fffffffull, &v) || v < 1024)
			return -EINVAL;
		o->svc.max_record = (size_t)v;
		return 0;
	}
	/* the rest take any number up to 2^40 */
	if (!parse_num(arg, 1ull << 40, &v))
		return -EINVAL;
	switch (opt) {
	case 'W': o->flush_behind = v; break;
	case 's': o->svc.stall_timeout_ns = v * 1000000ull; break;
	case 'P': o->svc.partial_max = (size_t)v; break;
	case 'b': o->svc.max_buffered = (size_t)v; break;
	case 'i': o->svc.idle_timeout_ns = v * 1000000ull; break;
	case 'T': o->svc.send_timeout_ns = v * 1000000ull; break;
	}
	return 0;
}

/* The options that go together: one SIGUSR2 user, loopback listeners
 * without an exports file, a --metrics address (loopback unless
 * --metrics-remote). Also sizes the connections to the open-file limit.
 * 0, or the exit status. */
static int options_check(struct options *o)
{
	if (o->flush_fault && o->hold_ends) {
		msg_err("--test-flush-fault and --test-hold-ends both take SIGUSR2: give one");
		return 2;
	}
	if (!o->nlisten)
		o->listen[o->nlisten++] = "127.0.0.1:2049";
	for (int i = 0; i < o->nlisten && !o->exports_file; i++) {
		struct sockaddr_storage ss;
		socklen_t len;
		if (svc_parse_addr(o->listen[i], &ss, &len) == 0 && !peer_is_loopback(&ss)) {
			msg_err("--listen %s is not a loopback address: without --exports the "
				"built-in export (/ read-write, root not squashed) is for this "
				"machine only; give an exports file to serve other clients",
				o->listen[i]);
			return 1;
		}
	}
	size_connections(&o->svc, o->max_conns_given);
	/* the counters tell a lot about the clients: not to other machines
	 * unless asked for */
	if (o->metrics_addr) {
		socklen_t len;
		if (svc_parse_addr(o->metrics_addr, &o->metrics_ss, &len)) {
			msg_err("bad value '%s' for --metrics: not ADDR:PORT or [ADDR6]:PORT",
				o->metrics_addr);
			return 2;
		}
		if (!peer_is_loopback(&o->metrics_ss) && !o->metrics_remote) {
			msg_err("--metrics %s is not a loopback address; add --metrics-remote to "
				"serve the counters to other machines",
				o->metrics_addr);
			return 2;
		}
	}
	return 0;
}

/* The command line into o. true: serve; false: exit with *status (0 after
 * --help or --version, 1 or 2 after a bad command line). */
static bool options_parse(int argc, char **argv, struct options *o, int *status)
{
	*o = (struct options){
		.rpcbind = "127.0.0.1:111",
		.image = DEFAULT_IMAGE,
		.size = DEFAULT_SIZE,
		.flush_behind = FLUSH_BEHIND_DEFAULT,
	};
	svc_config_default(&o->svc);
	nfs4_server_config_default(&o->nfs4);
	int opt;
	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			if (o->nlisten == MAX_LISTEN) {
				msg_err("at most %d --listen addresses", MAX_LISTEN);
				*status = 2;
				return false;
			}
			o->listen[o->nlisten++] = optarg;
			continue;
		case 'h':
			usage(stdout);
			*status = 0;
			return false;
		case 'V':
			printf("jnfsd %s (%s)\n", JNFS_VERSION, JNFS_COMMIT);
			*status = 0;
			return false;
		case '?':
			usage(stderr);
			*status = 2;
			return false;
		}
		if (option_set(o, opt, optarg)) {
			for (const struct option *lo = long_opts; lo->name; lo++)
				if (lo->val == opt)
					msg_err("bad value '%s' for --%s", optarg, lo->name);
			*status = 2;
			return false;
		}
	}
	if (optind < argc) {
		usage(stderr);
		*status = 2;
		return false;
	}
	*status = options_check(o);
	return *status == 0;
}

/* The signals the main thread takes with sigwait(), blocked before any
 * thread exists (the engine starts its own at mount), so that every
 * thread inherits the mask. */
static void block_signals(const struct options *o, sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGTERM);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGUSR1);
	sigaddset(sigs, SIGHUP);
	sigaddset(sigs, SIGPIPE);
	if (o->flush_fault || o->hold_ends)
		sigaddset(sigs, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
}

/* The exports (a bad line stops the start before anything opens), the
 * storage, the engine and the protocols on it. 0 or -1 (said why);
 * server_close() undoes what was done either way. */
static int server_open_engine(struct server *srv, const struct options *o)
{
	const char *name = o->exports_file ? o->exports_file : "(built-in exports)";
	char why[512];
	srv->exports = xcalloc(1, sizeof(*srv->exports));
	int err = o->exports_file
			  ? exports_load(o->exports_file, srv->exports, why, sizeof(why))
			  : exports_parse(EXPORTS_BUILTIN, name, srv->exports, why, sizeof(why));
	if (err) {
		msg_err("%s", why);
		return -1;
	}
	if (open_storage(o->image, o->size, o->logdev, o->crash, o->buffered, &srv->file,
			 &srv->ddev, &srv->ldev))
		return -1;
	dev_set_latency(srv->ddev, o->flush_us * 1000, o->flush_us * 1000);
	/* the device's volatile cache is the write-back cache of unstable
	 * data: bounded, so that no sync operation pays for flushing much of
	 * another client's (dev.h, B1-B3) */
	dev_set_flush_behind(srv->ddev, o->flush_behind, o->flush_behind * FLUSH_BEHIND_LIMIT);
	if (srv->ldev)
		dev_set_latency(srv->ldev, o->flush_us * 1000, o->flush_us * 1000);
	if ((err = fs_mount(&(struct fs_mount_opts){.ddev = srv->ddev, .ldev = srv->ldev,
						     .logged_data_max = o->ldata_max,
						     .bench_sync_layoutcommit = o->bench_sync_lc,
						     .readahead_off = o->no_ra,
						     .readahead_windows = o->ra_windows},
			    &srv->fs))) {
		msg_err("cannot mount %s: %s", o->image, strerror(-err));
		return -1;
	}
	if (exports_resolve(srv->exports, srv->fs, name, why, sizeof(why))) {
		msg_err("%s", why);
		return -1;
	}
	srv_init(&srv->srv, srv->fs, srv->exports);
	nfs3_server_init(&srv->nfs3, &srv->srv);
	srv->nfs3_ready = true;
	srv->nfs4 = nfs4_server_create(&srv->srv, &o->nfs4);
	return srv->nfs4 ? 0 : -1;
}

/* Everything server_close() needs to undo is recorded in srv as it is
 * done: the engine (server_open_engine), the RPC service with its
 * programs and listeners, started, and the metrics endpoint. 0 or -1
 * (said why). */
static int server_open(struct server *srv, const struct options *o)
{
	if (server_open_engine(srv, o))
		return -1;
	struct svc *s = svc_create(&o->svc);
	srv->svc = s;
	if (svc_add_program(s, &nfs3_program, &srv->nfs3) ||
	    svc_add_program(s, &nfs4_program, srv->nfs4) ||
	    svc_add_program(s, &mount_program, &srv->nfs3) ||
	    svc_add_program(s, &admin_program, srv))
		panic("cannot register the RPC programs");
	for (int i = 0; i < o->nlisten; i++) {
		socklen_t len;
		int err = svc_listen(s, o->listen[i], &srv->ports[i]);
		if (err) {
			msg_err("cannot listen on %s: %s", o->listen[i],
				err == -EINVAL ? "not ADDR:PORT or [ADDR6]:PORT" : strerror(-err));
			return -1;
		}
		struct sockaddr_storage *b = &srv->bound[i];
		svc_parse_addr(o->listen[i], b, &len);
		if (b->ss_family == AF_INET)
			((struct sockaddr_in *)b)->sin_port = htons(srv->ports[i]);
		else
			((struct sockaddr_in6 *)b)->sin6_port = htons(srv->ports[i]);
	}
	int err = svc_start(s);
	if (err) {
		msg_err("cannot start the RPC service: %s", strerror(-err));
		return -1;
	}
	if (o->metrics_addr) {
		char why[512];
		err = metrics_start(&o->metrics_ss, metrics_collect, srv, &srv->metrics, why,
				    sizeof(why));
		if (err) {
			msg_err("--metrics %s: %s", o->metrics_addr, why);
			return -1;
		}
		const char *colon = strrchr(o->metrics_addr, ':');
		printf("metrics on http://%.*s:%u/metrics\n", (int)(colon - o->metrics_addr),
		       o->metrics_addr, metrics_port(srv->metrics));
	}
	return 0;
}

/* The one unwind path: undoes whatever server_open() did, from any point
 * it stopped at. 0, or 1 when the unmount failed. */
static int server_close(struct server *srv)
{
	int status = 0, err;
	/* no scrape reads the service or the engine once they go */
	metrics_stop(srv->metrics);
	if (srv->svc) {
		svc_stop(srv->svc); /* nothing when it did not start */
		svc_destroy(srv->svc);
	}
	if (srv->nfs4)
		nfs4_server_destroy(srv->nfs4);
	if (srv->nfs3_ready)
		nfs3_server_destroy(&srv->nfs3);
	if (srv->fs && (err = fs_unmount(srv->fs))) {
		msg_err("unmount: %s", strerror(-err));
		status = 1;
	}
	close_storage(srv->file, srv->ddev, srv->ldev);
	if (srv->exports)
		exports_free(srv->exports);
	free(srv->exports);
	return status;
}

/* Serving: register with rpcbind, write the port file, say where it
 * listens, and tell systemd. */
static void server_announce(struct server *srv, const struct options *o)
{
	if (o->rpcbind)
		rpcbind_register(o->rpcbind, srv->bound, o->nlisten, true);
	if (o->port_file) {
		FILE *f = fopen(o->port_file, "w");
		if (!f) {
			msg_err("cannot write %s: %s", o->port_file, strerror(errno));
		} else {
			for (int i = 0; i < o->nlisten; i++)
				fprintf(f, "%u\n", srv->ports[i]);
			fclose(f);
		}
	}
	for (int i = 0; i < o->nlisten; i++) {
		const char *a = o->listen[i];
		char host[80];
		if (a[0] == '[') {
			snprintf(host, sizeof(host), "%.*s", (int)(strchr(a, ']') - a + 1), a);
		} else {
			snprintf(host, sizeof(host), "%.*s", (int)(strrchr(a, ':') - a), a);
		}
		printf("listening on %s:%u\n", host, srv->ports[i]);
	}
	fflush(stdout);
	sd_notifyf(0, "READY=1\nSTATUS=serving on %d address%s", o->nlisten,
		   o->nlisten > 1 ? "es" : "");
}

/* The main thread's work while serving: take the blocked signals one at a
 * time until SIGTERM or SIGINT. */
static void serve_signals(struct server *srv, const struct options *o, const sigset_t *sigs)
{
	bool holding = false;
	for (;;) {
		int sig;
		if (sigwait(sigs, &sig))
			continue;
		if (sig == SIGUSR1) {
			struct stat_sink sink = {.emit = print_stat, .arg = stdout};
			server_stats(srv, &sink);
			fflush(stdout);
			continue;
		}
		if (sig == SIGHUP) {
			reload_exports(srv, o->exports_file);
			continue;
		}
		if (sig == SIGUSR2 && o->hold_ends) {
			holding = !holding;
			nfs4_test_hold_ends(srv->nfs4, holding);
			printf("stateid ends %s\n", holding ? "held" : "released");
			fflush(stdout);
			continue;
		}
		if (sig == SIGUSR2) {
			/* --test-flush-fault: a data flush fails, as a disk's or a
			 * page cache's write-back can (the write verifier moves) */
			dev_inject_flush_fault(srv->ddev, 1);
			printf("flush fault armed\n");
			fflush(stdout);
			continue;
		}
		if (sig == SIGTERM || sig == SIGINT)
			return;
	}
}

int main(int argc, char **argv)
{
	struct options o;
	int status;
	msg_set_prog("jnfsd");
	if (!options_parse(argc, argv, &o, &status))
		return status;
	sigset_t sigs;
	block_signals(&o, &sigs);

	struct server srv = {0};
	status = server_open(&srv, &o) ? 1 : 0;
	if (status == 0) {
		server_announce(&srv, &o);
		serve_signals(&srv, &o, &sigs);
		msg_info("stopping");
		sd_notify(0, "STOPPING=1\nSTATUS=stopping");
		if (o.rpcbind)
			rpcbind_register(o.rpcbind, srv.bound, o.nlisten, false);
	}
	if (server_close(&srv))
		status = 1;
	return status;
}
