/*
 * cmd_pnfs.c - `jnfs pnfs`: a pNFS block layout client (src/nfs4c/pnfs.h) as
 * a command, and the workloads that measure what a LAYOUTCOMMIT costs.
 *
 *   jnfs pnfs nfs://HOST[:PORT]/PATH --device DISK [--device DISK ...]
 *             [--stats ADDR:PORT | --no-stats] COMMAND [ARGS] [OPTIONS]
 *
 * PATH is a directory as the server's NFSv4 namespace shows it (`/` is its
 * root); the commands' NAMEs are relative to it. DISK is what the server's
 * storage is to this client: the block device, or the image file itself on
 * the server's machine; the client opens it O_DIRECT and finds the
 * device's volume on it by its signature.
 *
 *   info                      EXCHANGE_ID flags, layout types, block size,
 *                             devices and where their volumes were found
 *   put LOCAL NAME            copy a local file into NAME through an RW layout
 *   get NAME LOCAL            copy NAME out through a READ layout (- stdout)
 *                             (both: --depth I/Os of --io bytes in flight,
 *                             a stream of src/nfs4c/pnfs.h)
 *   overwrite NAME            write NAME.<t> (--size), then overwrite it in
 *                             --io writes, each followed by a LAYOUTCOMMIT,
 *                             --threads T files at once: latency of each
 *                             commit and the server's log writes and flushes
 *   newfiles NAME             --count new files NAME.<t>.<i> per thread, in
 *                             --io writes each followed by a LAYOUTCOMMIT
 *   hold NAME                 get an RW layout of NAME and keep it: recalls
 *                             are acknowledged and ignored (--return-on-recall:
 *                             return it when recalled, then exit; --end-probe:
 *                             at the end, try a LAYOUTCOMMIT and a LAYOUTRETURN
 *                             of it and say what the server answered)
 *
 * The workloads print `name value` lines. Server counters are read from
 * jnfsd's administration program before and after the measured part (the
 * same address unless --stats): the LAYOUTCOMMITs it counted and, per
 * commit, its log buffer writes and data device flushes - what
 * docs/design.md rule 6 promises: an overwrite's LAYOUTCOMMIT writes no log
 * and flushes once.
 *
 * Exit status: 0, 1 after an error, 2 for a bad command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/time.h"
#include "cli/cli.h"
#include "nfs4c/nfs4c.h"
#include "nfs4c/pnfs.h"

#define MAX_THREADS 64

struct opts {
	const char *url;
	const char *disks[NFS4C_PNFS_MAX_DISKS];
	unsigned ndisks;
	const char *stats_addr;
	bool no_stats;
	const char *cmd;
	const char *args[2];
	unsigned nargs;
	uint64_t size, io, ahead;
	unsigned threads, count, rounds, depth;
	unsigned seconds;
	bool commit_each, return_on_recall, end_probe;
	unsigned minor;
};

/* What the session and the layout client are. */
struct ctx {
	struct opts o;
	char addr[300];
	struct nfs4c_client *cl;
	struct nfs4c_pnfs *p;
	struct nfs4c_fh dir;
	uint32_t blksize;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: jnfs pnfs nfs://HOST[:PORT]/PATH --device DISK [--device DISK ...]\n"
		"                 [--stats ADDR:PORT | --no-stats] [--minor 1|2] COMMAND [ARGS] "
		"[OPTIONS]\n"
		"  info\n"
		"  put LOCAL NAME [--io SIZE] [--depth N] [--layout-ahead SIZE] [--commit-each]\n"
		"  get NAME LOCAL [--io SIZE] [--depth N]\n"
		"  overwrite NAME --size SIZE --io SIZE [--threads T] [--rounds R]\n"
		"  newfiles NAME --size SIZE --io SIZE [--threads T] [--count N]\n"
		"  hold NAME [--size SIZE] [--seconds N] [--return-on-recall | --end-probe]\n");
}

static void note_line(void *arg, const char *line)
{
	fprintf(stderr, "jnfs pnfs: %s\n", line);
}

#define SEQ4_REVOKED                                                                               \
	(SEQ4_STATUS_RECALLABLE_STATE_REVOKED | SEQ4_STATUS_ADMIN_STATE_REVOKED |                  \
	 SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED | SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED)

/* Every SEQUENCE status flag the server ever set (hold prints it). */
static _Atomic uint32_t flags_seen;

static void flags_changed(void *arg, struct nfs4c_client *cl, uint32_t old, uint32_t flags)
{
	atomic_fetch_or(&flags_seen, flags);
	fprintf(stderr, "jnfs pnfs: SEQUENCE status flags 0x%x (were 0x%x)%s\n", flags, old,
		flags & SEQ4_REVOKED ? ": state revoked" : "");
}

static const struct nfs4c_hooks hooks = {.status_flags = flags_changed};

static const char *status_name(int st)
{
	static __thread char buf[32];
	if (st < 0)
		return cli_errname(st);
	const char *name = nfsstat4_name(st);
	if (name)
		return name;
	snprintf(buf, sizeof(buf), "NFS4ERR %d", st);
	return buf;
}

/* nfs://HOST[:PORT]/PATH: "HOST:PORT" into addr, the path into *path.
 * HOST may be [IPv6]; PORT defaults to 2049. */
static int parse_url(const char *url, char *addr, size_t addrlen, const char **path)
{
	if (strncmp(url, "nfs://", 6))
		return -1;
	const char *h = url + 6, *slash = strchr(h, '/');
	const char *hend = slash ? slash : h + strlen(h);
	const char *port = NULL, *host_end = hend;
	if (h < hend && h[0] == '[') {
		const char *rb = memchr(h, ']', (size_t)(hend - h));
		if (!rb)
			return -1;
		host_end = rb + 1;
		if (host_end < hend && *host_end != ':')
			return -1;
	} else {
		host_end = memchr(h, ':', (size_t)(hend - h));
		if (!host_end)
			host_end = hend;
	}
	if (host_end < hend)
		port = host_end + 1;
	size_t host_len = (size_t)(host_end - h);
	size_t port_len = port ? (size_t)(hend - port) : 4;
	if (!port)
		port = "2049";
	if (!host_len || !port_len || port_len > 5 || host_len + port_len + 2 > addrlen)
		return -1;
	for (size_t i = 0; i < port_len; i++)
		if (port[i] < '0' || port[i] > '9')
			return -1;
	snprintf(addr, addrlen, "%.*s:%.*s", (int)host_len, h, (int)port_len, port);
	*path = slash ? slash : "/";
	return 0;
}

/* ---- the session ----------------------------------------------------------- */

/* Mount with pNFS asked for, check the server agreed and offers block
 * layouts where PATH is, then the layout client. */
static int ctx_open(struct ctx *x, bool hold)
{
	struct nfs4c_cfg cfg;
	struct nfs4c_fh root;
	struct nfs4c_info info;
	struct nfs4c_compound c;
	struct nfs4c_attr attr;
	const char *path;
	bitmap4 bm = {0};
	int ret;

	if (parse_url(x->o.url, x->addr, sizeof(x->addr), &path)) {
		fprintf(stderr, "jnfs pnfs: '%s' is not nfs://HOST[:PORT]/PATH\n", x->o.url);
		return 2;
	}
	nfs4c_cfg_default(&cfg);
	cfg.addr = x->addr;
	cfg.eia_flags = EXCHGID4_FLAG_USE_PNFS_MDS;
	cfg.hooks = &hooks;
	if (x->o.minor)
		cfg.minorversion = x->o.minor;
	if ((ret = nfs4c_create(&cfg, &x->cl))) {
		fprintf(stderr, "jnfs pnfs: cannot reach %s: %s\n", x->addr, strerror(-ret));
		return 1;
	}
	if ((ret = nfs4c_mount(x->cl, &root))) {
		fprintf(stderr, "jnfs pnfs: mount of %s: %s\n", x->addr, status_name(ret));
		return 1;
	}
	nfs4c_get_info(x->cl, &info);
	if (!(info.eir_flags & EXCHGID4_FLAG_USE_PNFS_MDS)) {
		fprintf(stderr,
			"jnfs pnfs: %s is no pNFS metadata server (EXCHANGE_ID flags 0x%x, no "
			"USE_PNFS_MDS): is the export marked pnfs?\n",
			x->addr, info.eir_flags);
		return 1;
	}
	nfs4c_compound_init(&c, x->cl);
	nfs4c_op_putfh(&c, &root);
	nfs4c_op_lookup_path(&c, path);
	nfs4c_op_getfh(&c);
	nfs4c_bitmap_set(&bm, FATTR4_TYPE);
	nfs4c_bitmap_set(&bm, FATTR4_FS_LAYOUT_TYPES);
	nfs4c_bitmap_set(&bm, FATTR4_LAYOUT_BLKSIZE);
	nfs4c_op_getattr(&c, &bm);
	ret = nfs4c_send(&c);
	if (!ret)
		ret = c.status;
	if (!ret)
		ret = nfs4c_res_fh(&c, &x->dir);
	if (!ret)
		ret = nfs4c_res_attr(&c, &attr);
	nfs4c_compound_destroy(&c);
	if (ret) {
		fprintf(stderr, "jnfs pnfs: %s: %s\n", path, status_name(ret));
		return 1;
	}
	if (attr.type != NF4DIR) {
		fprintf(stderr, "jnfs pnfs: %s is not a directory\n", path);
		return 1;
	}
	bool block = false;
	for (unsigned i = 0; i < attr.nlayout_types; i++)
		block |= attr.layout_types[i] == LAYOUT4_BLOCK_VOLUME;
	if (!block) {
		fprintf(stderr,
			"jnfs pnfs: %s: the export offers no block layouts "
			"(fs_layout_types)\n",
			path);
		return 1;
	}
	x->blksize = nfs4c_bitmap_isset(&attr.have, FATTR4_LAYOUT_BLKSIZE) && attr.layout_blksize
			     ? attr.layout_blksize
			     : 4096;
	if (x->blksize < 4096 || x->blksize % 4096) {
		fprintf(stderr, "jnfs pnfs: layout_blksize %u: O_DIRECT needs multiples of 4096\n",
			x->blksize);
		return 1;
	}
	struct nfs4c_pnfs_cfg pc = {.disks = x->o.disks,
				    .ndisks = x->o.ndisks,
				    .hold = hold,
				    .blksize = x->blksize,
				    .note = note_line};
	if ((ret = nfs4c_pnfs_create(x->cl, &pc, &x->p))) {
		fprintf(stderr, "jnfs pnfs: the disks: %s\n", cli_errname(ret));
		return 1;
	}
	return 0;
}

static void ctx_close(struct ctx *x, bool unmount)
{
	if (x->p)
		nfs4c_pnfs_destroy(x->p);
	if (x->cl && unmount)
		nfs4c_unmount(x->cl);
	if (x->cl)
		nfs4c_destroy(x->cl);
}

/* A name under PATH: the directory's handle (LOOKUP of the parts before
 * the last) and the last part. */
static int resolve(struct ctx *x, const char *name, struct nfs4c_fh *dir, const char **base)
{
	const char *slash = strrchr(name, '/');
	*dir = x->dir;
	*base = slash ? slash + 1 : name;
	if (!slash)
		return 0;
	char *d = xstrdup(name);
	d[slash - name] = '\0';
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, x->cl);
	nfs4c_op_putfh(&c, &x->dir);
	nfs4c_op_lookup_path(&c, d);
	nfs4c_op_getfh(&c);
	int ret = nfs4c_send(&c);
	if (!ret)
		ret = c.status;
	if (!ret)
		ret = nfs4c_res_fh(&c, dir);
	nfs4c_compound_destroy(&c);
	free(d);
	return ret;
}

static int open_file(struct ctx *x, const char *name, unsigned flags, struct nfs4c_pnfs_file **f)
{
	struct nfs4c_fh dir;
	const char *base;
	int ret = resolve(x, name, &dir, &base);
	if (!ret)
		ret = nfs4c_pnfs_open(x->p, &dir, base, flags, f);
	if (ret)
		fprintf(stderr, "jnfs pnfs: open %s: %s\n", name, status_name(ret));
	return ret;
}

/* ---- server counters -------------------------------------------------------- */

static const char *const server_counters[] = {
	"nfs4.op.LAYOUTGET", "nfs4.op.LAYOUTCOMMIT", "nfs4.op.LAYOUTRETURN", "nfs4.op.READ",
	"nfs4.op.WRITE",     "log.buffer_writes",    "log.forces_wrote",     "log.checkpoints",
	"dev.flushes",	     "fs.commit_blocks",
};
#define NCOUNTERS ARRAY_SIZE(server_counters)

struct snap {
	bool ok;
	uint64_t v[NCOUNTERS];
};

static void snap_take(struct ctx *x, struct snap *s)
{
	char *text;
	size_t len;
	memset(s, 0, sizeof(*s));
	if (x->o.no_stats)
		return;
	const char *addr = x->o.stats_addr ? x->o.stats_addr : x->addr;
	int err = cli_server_stats(addr, &text, &len);
	if (err) {
		fprintf(stderr, "jnfs pnfs: no server counters from %s: %s\n", addr,
			err == -EPROTO ? "not a jnfsd" : strerror(-err));
		return;
	}
	s->ok = len > 0;
	for (unsigned i = 0; i < NCOUNTERS; i++)
		cli_stat_value(text, server_counters[i], &s->v[i]);
	free(text);
}

static uint64_t delta(const struct snap *a, const struct snap *b, const char *name)
{
	for (unsigned i = 0; i < NCOUNTERS; i++)
		if (!strcmp(server_counters[i], name))
			return b->v[i] - a->v[i];
	return 0;
}

static void print_server(const char *pfx, const struct snap *a, const struct snap *b,
			 uint64_t commits)
{
	if (!a->ok || !b->ok)
		return;
	uint64_t lw = delta(a, b, "log.buffer_writes"), fl = delta(a, b, "dev.flushes");
	printf("%s.server.layoutcommits %llu\n", pfx,
	       (unsigned long long)delta(a, b, "nfs4.op.LAYOUTCOMMIT"));
	printf("%s.server.layoutgets %llu\n", pfx,
	       (unsigned long long)delta(a, b, "nfs4.op.LAYOUTGET"));
	printf("%s.server.reads %llu\n", pfx, (unsigned long long)delta(a, b, "nfs4.op.READ"));
	printf("%s.server.writes %llu\n", pfx, (unsigned long long)delta(a, b, "nfs4.op.WRITE"));
	printf("%s.server.log_writes %llu\n", pfx, (unsigned long long)lw);
	printf("%s.server.log_forces_wrote %llu\n", pfx,
	       (unsigned long long)delta(a, b, "log.forces_wrote"));
	printf("%s.server.checkpoints %llu\n", pfx,
	       (unsigned long long)delta(a, b, "log.checkpoints"));
	printf("%s.server.flushes %llu\n", pfx, (unsigned long long)fl);
	if (commits) {
		printf("%s.server.log_writes_per_commit %.3f\n", pfx, (double)lw / (double)commits);
		printf("%s.server.flushes_per_commit %.3f\n", pfx, (double)fl / (double)commits);
	}
}

static void print_client(const char *pfx, struct nfs4c_pnfs *p)
{
	struct nfs4c_pnfs_stats st;
	nfs4c_pnfs_stats(p, &st);
	printf("%s.client.layoutgets %llu\n", pfx, (unsigned long long)st.layoutgets);
	printf("%s.client.layoutcommits %llu\n", pfx, (unsigned long long)st.layoutcommits);
	printf("%s.client.layoutreturns %llu\n", pfx, (unsigned long long)st.layoutreturns);
	printf("%s.client.getdeviceinfos %llu\n", pfx, (unsigned long long)st.getdeviceinfos);
	printf("%s.client.disk_write_bytes %llu\n", pfx, (unsigned long long)st.disk_write_bytes);
	printf("%s.client.disk_read_bytes %llu\n", pfx, (unsigned long long)st.disk_read_bytes);
	printf("%s.client.recalls %llu\n", pfx, (unsigned long long)st.recalls);
	printf("%s.client.layoutget_ms %.1f\n", pfx, (double)st.layoutget_ns / 1e6);
	printf("%s.client.layoutget_bytes %llu\n", pfx, (unsigned long long)st.layoutget_bytes);
	printf("%s.client.layoutget_waits %llu\n", pfx, (unsigned long long)st.layoutget_waits);
}

/* ---- latencies ----------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v. */
static uint64_t pct(const uint64_t *v, size_t n, double q)
{
	size_t r = (size_t)(q * (double)n + 0.999999);
	return v[r ? MIN(r, n) - 1 : 0];
}

static void print_latencies(const char *pfx, const char *what, uint64_t *ns, size_t n)
{
	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)ns[i];
	printf("%s.%s_us_p50 %.1f\n", pfx, what, (double)pct(ns, n, 0.50) / 1e3);
	printf("%s.%s_us_p90 %.1f\n", pfx, what, (double)pct(ns, n, 0.90) / 1e3);
	printf("%s.%s_us_p99 %.1f\n", pfx, what, (double)pct(ns, n, 0.99) / 1e3);
	printf("%s.%s_us_max %.1f\n", pfx, what, (double)ns[n - 1] / 1e3);
	printf("%s.%s_us_mean %.1f\n", pfx, what, sum / (double)n / 1e3);
}

/* The bytes a workload writes: different per file offset, seed and round. */
static void pattern(uint8_t *b, size_t len, uint64_t off, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t v = (off + i) * 0x9e3779b97f4a7c15ull + seed;
		b[i] = (uint8_t)(v >> 56);
	}
}

/* ---- put, get ---------------------------------------------------------------- */

static struct nfs4c_pnfs_stream_cfg stream_cfg(const struct ctx *x, uint64_t end)
{
	return (struct nfs4c_pnfs_stream_cfg){.depth = x->o.depth,
					      .io = x->o.io ? x->o.io : 1u << 20,
					      .end = end,
					      .ahead = x->o.ahead};
}

/* put: read LOCAL straight into the stream's slots; *done: bytes given
 * to it. An error is printed. */
static int put_stream(struct ctx *x, int fd, struct nfs4c_pnfs_file *f, uint64_t *done)
{
	const char *local = x->o.args[0], *name = x->o.args[1];
	struct stat sb;
	/* a regular file's size: layouts are got ahead of the writers up to it */
	uint64_t end = !fstat(fd, &sb) && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
	struct nfs4c_pnfs_stream_cfg sc = stream_cfg(x, end);
	struct nfs4c_pnfs_stream *s;
	int ret = nfs4c_pnfs_stream_open(f, true, 0, &sc, &s);
	if (ret) {
		fprintf(stderr, "jnfs pnfs: %s: %s\n", name, status_name(ret));
		return ret;
	}
	bool local_err = false;
	for (;;) {
		void *buf;
		size_t room;
		if ((ret = nfs4c_pnfs_stream_buf(s, &buf, &room)))
			break;
		ssize_t n = read(fd, buf, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "jnfs pnfs: %s: %s\n", local, strerror(errno));
			ret = -errno;
			local_err = true;
			break;
		}
		if (n == 0)
			break;
		nfs4c_pnfs_stream_submit(s, (size_t)n);
		*done += (uint64_t)n;
	}
	int ret2 = nfs4c_pnfs_stream_close(s);
	/* the local file's error, or the stream's first (with no offset: one
	 * of the writes in flight) */
	if (!ret && ret2)
		ret = ret2;
	if (ret && !local_err)
		fprintf(stderr, "jnfs pnfs: write %s: %s\n", name, status_name(ret));
	return ret;
}

static int cmd_put(struct ctx *x)
{
	const char *local = x->o.args[0], *name = x->o.args[1];
	size_t io = x->o.io ? x->o.io : 1u << 20;
	int fd = open(local, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "jnfs pnfs: %s: %s\n", local, strerror(errno));
		return 1;
	}
	struct nfs4c_pnfs_file *f;
	if (open_file(x, name, NFS4C_PNFS_TRUNC, &f)) {
		close(fd);
		return 1;
	}
	uint64_t off = 0, t0 = now_ns();
	unsigned commits = 0;
	int ret = 0;
	if (!x->o.commit_each) {
		ret = put_stream(x, fd, f, &off);
		goto commit;
	}
	uint8_t *buf = xmalloc(io);
	for (;;) {
		ssize_t n = read(fd, buf, io);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "jnfs pnfs: %s: %s\n", local, strerror(errno));
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		if ((ret = nfs4c_pnfs_write(f, off, buf, (size_t)n))) {
			fprintf(stderr, "jnfs pnfs: write %s at %llu: %s\n", name,
				(unsigned long long)off, status_name(ret));
			break;
		}
		off += (uint64_t)n;
		if (x->o.commit_each) {
			if ((ret = nfs4c_pnfs_commit(f, NULL))) {
				fprintf(stderr, "jnfs pnfs: LAYOUTCOMMIT %s: %s\n", name,
					status_name(ret));
				break;
			}
			commits++;
		}
	}
	free(buf);
commit:;
	struct nfs4c_pnfs_commit_res cr = {0};
	if (!ret && (ret = nfs4c_pnfs_commit(f, &cr)))
		fprintf(stderr, "jnfs pnfs: LAYOUTCOMMIT %s: %s\n", name, status_name(ret));
	int ret2 = nfs4c_pnfs_close(f);
	if (!ret && ret2) {
		fprintf(stderr, "jnfs pnfs: close %s: %s\n", name, status_name(ret2));
		ret = ret2;
	}
	close(fd);
	if (ret)
		return 1;
	printf("pnfs.put.bytes %llu\n", (unsigned long long)off);
	printf("pnfs.put.seconds %.3f\n", (double)(now_ns() - t0) / 1e9);
	printf("pnfs.put.commits %u\n", commits + cr.commits);
	print_client("pnfs.put", x->p);
	return 0;
}

static int cmd_get(struct ctx *x)
{
	const char *name = x->o.args[0], *local = x->o.args[1];
	bool to_stdout = !strcmp(local, "-");
	int fd = to_stdout ? STDOUT_FILENO
			   : open(local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "jnfs pnfs: %s: %s\n", local, strerror(errno));
		return 1;
	}
	struct nfs4c_pnfs_file *f;
	if (open_file(x, name, NFS4C_PNFS_RDONLY, &f)) {
		if (!to_stdout)
			close(fd);
		return 1;
	}
	uint64_t off = 0, t0 = now_ns();
	struct nfs4c_pnfs_stream_cfg sc = stream_cfg(x, 0);
	struct nfs4c_pnfs_stream *s = NULL;
	int ret = nfs4c_pnfs_stream_open(f, false, 0, &sc, &s);
	if (ret)
		fprintf(stderr, "jnfs pnfs: %s: %s\n", name, status_name(ret));
	while (!ret) {
		const void *data;
		size_t got;
		if ((ret = nfs4c_pnfs_stream_next(s, &data, &got))) {
			fprintf(stderr, "jnfs pnfs: read %s after %llu: %s\n", name,
				(unsigned long long)off, status_name(ret));
			break;
		}
		if (!got)
			break;
		const uint8_t *buf = data;
		for (size_t w = 0; w < got;) {
			ssize_t n = write(fd, buf + w, got - w);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				fprintf(stderr, "jnfs pnfs: %s: %s\n", local, strerror(errno));
				ret = -errno;
				break;
			}
			w += (size_t)n;
		}
		if (ret)
			break;
		off += got;
	}
	if (s)
		nfs4c_pnfs_stream_close(s); /* its error was returned by next */
	int ret2 = nfs4c_pnfs_close(f);
	if (!ret && ret2) {
		fprintf(stderr, "jnfs pnfs: close %s: %s\n", name, status_name(ret2));
		ret = ret2;
	}
	if (!to_stdout && close(fd) && !ret) {
		fprintf(stderr, "jnfs pnfs: %s: %s\n", local, strerror(errno));
		ret = -EIO;
	}
	if (ret)
		return 1;
	FILE *out = to_stdout ? stderr : stdout;
	fprintf(out, "pnfs.get.bytes %llu\n", (unsigned long long)off);
	fprintf(out, "pnfs.get.seconds %.3f\n", (double)(now_ns() - t0) / 1e9);
	if (!to_stdout)
		print_client("pnfs.get", x->p);
	return 0;
}

/* ---- overwrite, newfiles ---------------------------------------------------------- */

struct worker {
	struct ctx *x;
	unsigned id;
	pthread_t t;
	pthread_barrier_t *ready, *go, *done;
	uint64_t *lat; /* per commit */
	size_t nlat, cap;
	int err;
	char what[160];
};

static void worker_fail(struct worker *w, int err, const char *fmt, const char *name)
{
	if (w->err)
		return;
	w->err = err ? err : -EIO;
	snprintf(w->what, sizeof(w->what), fmt, name);
	size_t n = strlen(w->what);
	snprintf(w->what + n, sizeof(w->what) - n, ": %s", status_name(err));
}

static void lat_add(struct worker *w, uint64_t ns)
{
	if (w->nlat < w->cap)
		w->lat[w->nlat++] = ns;
}

/* Write [0, size) of f in pieces of io, committing at the end. */
static int fill_file(struct nfs4c_pnfs_file *f, uint64_t size, size_t io, uint32_t seed)
{
	size_t chunk = MAX(io, (size_t)1 << 20);
	uint8_t *b = xmalloc(chunk);
	int ret = 0;
	for (uint64_t off = 0; !ret && off < size; off += chunk) {
		size_t n = (size_t)MIN((uint64_t)chunk, size - off);
		pattern(b, n, off, seed);
		ret = nfs4c_pnfs_write(f, off, b, n);
	}
	if (!ret)
		ret = nfs4c_pnfs_commit(f, NULL);
	free(b);
	return ret;
}

static void *overwrite_main(void *arg)
{
	struct worker *w = arg;
	struct ctx *x = w->x;
	char name[512];
	struct nfs4c_pnfs_file *f = NULL;
	uint8_t *b = xmalloc(x->o.io);
	uint64_t nw = x->o.size / x->o.io;

	snprintf(name, sizeof(name), "%s.%u", x->o.args[0], w->id);
	int ret = open_file(x, name, NFS4C_PNFS_TRUNC, &f);
	if (ret)
		worker_fail(w, ret, "open %s", name);
	else if ((ret = fill_file(f, x->o.size, x->o.io, w->id)))
		worker_fail(w, ret, "writing %s before the overwrites", name);
	pthread_barrier_wait(w->ready);
	pthread_barrier_wait(w->go); /* the counters are read between */
	for (unsigned r = 0; !w->err && r < x->o.rounds; r++) {
		for (uint64_t i = 0; !w->err && i < nw; i++) {
			uint64_t off = i * x->o.io;
			pattern(b, x->o.io, off, w->id * 1000 + r + 1);
			if ((ret = nfs4c_pnfs_write(f, off, b, x->o.io))) {
				worker_fail(w, ret, "overwrite of %s", name);
				break;
			}
			uint64_t t0 = now_ns();
			if ((ret = nfs4c_pnfs_commit(f, NULL))) {
				worker_fail(w, ret, "LAYOUTCOMMIT of %s", name);
				break;
			}
			lat_add(w, now_ns() - t0);
		}
	}
	pthread_barrier_wait(w->done);
	if (f && (ret = nfs4c_pnfs_close(f)))
		worker_fail(w, ret, "close %s", name);
	free(b);
	return NULL;
}

static void *newfiles_main(void *arg)
{
	struct worker *w = arg;
	struct ctx *x = w->x;
	char name[512];
	uint8_t *b = xmalloc(x->o.io);

	pthread_barrier_wait(w->ready);
	pthread_barrier_wait(w->go);
	for (unsigned i = 0; !w->err && i < x->o.count; i++) {
		struct nfs4c_pnfs_file *f;
		snprintf(name, sizeof(name), "%s.%u.%u", x->o.args[0], w->id, i);
		int ret = open_file(x, name, NFS4C_PNFS_TRUNC, &f);
		if (ret) {
			worker_fail(w, ret, "create %s", name);
			break;
		}
		for (uint64_t off = 0; off < x->o.size; off += x->o.io) {
			size_t n = (size_t)MIN(x->o.io, x->o.size - off);
			pattern(b, n, off, w->id * 1000 + i);
			if ((ret = nfs4c_pnfs_write(f, off, b, n))) {
				worker_fail(w, ret, "write of %s", name);
				break;
			}
			uint64_t t0 = now_ns();
			if ((ret = nfs4c_pnfs_commit(f, NULL))) {
				worker_fail(w, ret, "LAYOUTCOMMIT of %s", name);
				break;
			}
			lat_add(w, now_ns() - t0);
		}
		if ((ret = nfs4c_pnfs_close(f)))
			worker_fail(w, ret, "close %s", name);
	}
	pthread_barrier_wait(w->done);
	free(b);
	return NULL;
}

static int run_workers(struct ctx *x, const char *pfx, void *(*fn)(void *), size_t per_thread)
{
	unsigned t = x->o.threads;
	struct worker *w = xcalloc(t, sizeof(*w));
	pthread_barrier_t ready, go, done;
	struct snap s0, s1;
	int status = 0;

	pthread_barrier_init(&ready, NULL, t + 1);
	pthread_barrier_init(&go, NULL, t + 1);
	pthread_barrier_init(&done, NULL, t + 1);
	for (unsigned i = 0; i < t; i++) {
		w[i].x = x;
		w[i].id = i;
		w[i].ready = &ready;
		w[i].go = &go;
		w[i].done = &done;
		w[i].cap = per_thread;
		w[i].lat = xcalloc(per_thread ? per_thread : 1, sizeof(uint64_t));
		if (pthread_create(&w[i].t, NULL, fn, &w[i])) {
			fprintf(stderr, "jnfs pnfs: cannot start a thread\n");
			exit(1);
		}
	}
	pthread_barrier_wait(&ready);
	snap_take(x, &s0);
	uint64_t t0 = now_ns();
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done);
	uint64_t t1 = now_ns();
	snap_take(x, &s1);
	for (unsigned i = 0; i < t; i++)
		pthread_join(w[i].t, NULL);

	size_t n = 0;
	for (unsigned i = 0; i < t; i++)
		n += w[i].nlat;
	uint64_t *all = xcalloc(n ? n : 1, sizeof(*all));
	n = 0;
	for (unsigned i = 0; i < t; i++) {
		memcpy(all + n, w[i].lat, w[i].nlat * sizeof(*all));
		n += w[i].nlat;
		if (w[i].err) {
			fprintf(stderr, "jnfs pnfs: thread %u: %s\n", i, w[i].what);
			status = 1;
		}
	}
	double secs = (double)(t1 - t0) / 1e9;
	printf("%s.threads %u\n", pfx, t);
	printf("%s.file_bytes %llu\n", pfx, (unsigned long long)x->o.size);
	printf("%s.write_bytes %llu\n", pfx, (unsigned long long)x->o.io);
	printf("%s.commits %zu\n", pfx, n);
	printf("%s.seconds %.3f\n", pfx, secs);
	printf("%s.commits_per_s %.1f\n", pfx, secs > 0 ? (double)n / secs : 0.0);
	print_latencies(pfx, "commit", all, n);
	print_server(pfx, &s0, &s1, n);
	print_client(pfx, x->p);
	for (unsigned i = 0; i < t; i++)
		free(w[i].lat);
	free(all);
	free(w);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&go);
	pthread_barrier_destroy(&done);
	return status;
}

static int check_sizes(struct ctx *x, bool need_count)
{
	if (!x->o.size || !x->o.io || x->o.size % x->o.io || x->o.io > (64u << 20)) {
		fprintf(stderr, "jnfs pnfs %s: --size must be a multiple of --io (at most 64M)\n",
			x->o.cmd);
		return 2;
	}
	if (!x->o.threads || x->o.threads > MAX_THREADS || (need_count && !x->o.count)) {
		fprintf(stderr, "jnfs pnfs %s: --threads 1..%d%s\n", x->o.cmd, MAX_THREADS,
			need_count ? ", --count at least 1" : "");
		return 2;
	}
	return 0;
}

static int cmd_overwrite(struct ctx *x)
{
	if (!x->o.rounds)
		x->o.rounds = 1;
	size_t per = (size_t)(x->o.size / x->o.io) * x->o.rounds;
	return run_workers(x, "pnfs.overwrite", overwrite_main, per);
}

static int cmd_newfiles(struct ctx *x)
{
	size_t per = (size_t)(x->o.size / x->o.io) * x->o.count;
	return run_workers(x, "pnfs.newfiles", newfiles_main, per);
}

/* ---- hold, info ------------------------------------------------------------------- */

/* One layout operation of hold_probe on f: the status it got. */
static int probe_send(struct ctx *x, struct nfs4c_compound *c)
{
	int ret = nfs4c_send(c);
	if (!ret)
		ret = c->status;
	nfs4c_compound_reset(c);
	return ret;
}

/*
 * hold --end-probe: what a client that kept its layout would send at the
 * end, a LAYOUTCOMMIT (with nothing written: an empty update) and a
 * LAYOUTRETURN of the whole file with its layout stateid, and what the
 * server answered; and whether a SEQUENCE reply ever said state of ours
 * was revoked. A client fenced for keeping a recalled layout gets both
 * refused and RECALLABLE_STATE_REVOKED (docs/design.md rule 9).
 */
static void hold_probe(struct ctx *x, struct nfs4c_pnfs_file *f, const struct stateid4 *given)
{
	struct stateid4 sid = *given;
	struct nfs4c_compound c;
	struct xdr_enc e;
	uint8_t body[16];
	nfs4c_pnfs_layout_stateid(f, &sid); /* the newest the library knows, if any */
	xdr_enc_init_buf(&e, body, sizeof(body), sizeof(body));
	int ret = nfs4c_blk_update_encode(&e, NULL, 0);
	struct nfs4c_layoutcommit lc = {.off = 0,
					.len = UINT64_MAX,
					.stateid = sid,
					.type = LAYOUT4_BLOCK_VOLUME,
					.body = body,
					.body_len = (uint32_t)xdr_enc_len(&e)};
	xdr_enc_destroy(&e);
	nfs4c_compound_init(&c, x->cl);
	if (!ret) {
		nfs4c_op_putfh(&c, nfs4c_pnfs_fh(f));
		nfs4c_op_layoutcommit(&c, &lc);
		ret = probe_send(x, &c);
	}
	printf("pnfs.hold.layoutcommit %s\n", ret ? status_name(ret) : "NFS4_OK");
	nfs4c_op_putfh(&c, nfs4c_pnfs_fh(f));
	nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0,
			      UINT64_MAX, &sid);
	ret = probe_send(x, &c);
	printf("pnfs.hold.layoutreturn %s\n", ret ? status_name(ret) : "NFS4_OK");
	nfs4c_compound_destroy(&c);
	struct nfs4c_info info;
	nfs4c_get_info(x->cl, &info);
	uint32_t seen = atomic_load(&flags_seen) | info.status_flags;
	printf("pnfs.hold.state_revoked %d\n", !!(seen & SEQ4_STATUS_RECALLABLE_STATE_REVOKED));
}

static int cmd_hold(struct ctx *x)
{
	const char *name = x->o.args[0];
	uint64_t size = x->o.size ? x->o.size : 1u << 20;
	struct nfs4c_pnfs_file *f;
	struct stateid4 sid;
	if (open_file(x, name, NFS4C_PNFS_CREATE, &f))
		return 1;
	int ret = nfs4c_pnfs_layoutget(f, LAYOUTIOMODE4_RW, 0, size);
	if (ret) {
		fprintf(stderr, "jnfs pnfs: LAYOUTGET of %s: %s\n", name, status_name(ret));
		nfs4c_pnfs_close(f);
		return 1;
	}
	nfs4c_pnfs_layout_stateid(f, &sid);
	printf("pnfs.hold: holding an RW layout of %s [0, %llu), %u extents, stateid seqid %u\n",
	       name, (unsigned long long)size, nfs4c_pnfs_extents(f), sid.seqid);
	fflush(stdout);
	uint64_t end = x->o.seconds ? now_ns() + x->o.seconds * NSEC_PER_SEC : UINT64_MAX;
	struct nfs4c_pnfs_stats st;
	while (!stop_requested && now_ns() < end) {
		nfs4c_pnfs_stats(x->p, &st);
		if (x->o.return_on_recall && st.recalls_returned)
			break;
		sleep_ns(20 * NSEC_PER_MSEC);
	}
	nfs4c_pnfs_stats(x->p, &st);
	printf("pnfs.hold.recalls %llu\n", (unsigned long long)st.recalls);
	printf("pnfs.hold.recalls_ignored %llu\n", (unsigned long long)st.recalls_ignored);
	printf("pnfs.hold.recalls_returned %llu\n", (unsigned long long)st.recalls_returned);
	if (x->o.end_probe)
		hold_probe(x, f, &sid);
	/* with --return-on-recall the layout went back; without, CLOSE only
	 * (a held layout is never returned) */
	ret = nfs4c_pnfs_close(f);
	return ret && x->o.return_on_recall ? 1 : 0;
}

static void print_device(struct ctx *x, const uint8_t id[NFS4_DEVICEID4_SIZE])
{
	static const char *const types[] = {"SIMPLE", "SLICE", "CONCAT", "STRIPE"};
	struct nfs4c_pnfs_device d;
	printf("device ");
	for (unsigned i = 0; i < NFS4_DEVICEID4_SIZE; i++)
		printf("%02x", id[i]);
	int ret = nfs4c_pnfs_device(x->p, id, &d);
	if (ret) {
		printf(": %s\n", status_name(ret));
		return;
	}
	printf(": %u volumes\n", d.nvol);
	for (unsigned i = 0; i < d.nvol; i++) {
		printf("  volume %u: %s, %llu bytes", i,
		       (unsigned)d.vol[i].type < 4 ? types[d.vol[i].type] : "?",
		       (unsigned long long)d.vol[i].size);
		if (d.vol[i].type == PNFS_BLOCK_VOLUME_SIMPLE)
			printf(", %u signature components (first: %u bytes at %lld), on %s",
			       d.vol[i].nsig, d.vol[i].sig_len, (long long)d.vol[i].sig_off,
			       x->o.disks[d.vol[i].disk]);
		printf("\n");
	}
}

static int cmd_info(struct ctx *x)
{
	struct nfs4c_info info;
	struct nfs4c_compound c;
	nfs4c_get_info(x->cl, &info);
	printf("server %s, minor version %u, EXCHANGE_ID flags 0x%x (USE_PNFS_MDS)\n", x->addr,
	       info.minorversion, info.eir_flags);
	printf("fs_layout_types: LAYOUT4_BLOCK_VOLUME, layout_blksize %u\n", x->blksize);
	nfs4c_compound_init(&c, x->cl);
	uint64_t cookie = 0;
	uint8_t verf[NFS4_VERIFIER_SIZE] = {0};
	int ret = 0;
	for (unsigned rounds = 0; rounds < 64; rounds++) {
		nfs4c_compound_reset(&c);
		nfs4c_op_putfh(&c, &x->dir);
		nfs4c_op_getdevicelist(&c, LAYOUT4_BLOCK_VOLUME, 32, cookie, verf);
		ret = nfs4c_send(&c);
		if (!ret)
			ret = c.status;
		if (ret)
			break;
		const struct GETDEVICELIST4resok *ok =
			&nfs4c_res(&c, OP_GETDEVICELIST, 0)->opgetdevicelist.gdlr_resok4;
		for (uint32_t i = 0; i < ok->gdlr_deviceid_list.len; i++)
			print_device(x, ok->gdlr_deviceid_list.val[i]);
		if (ok->gdlr_eof)
			break;
		cookie = ok->gdlr_cookie;
		memcpy(verf, ok->gdlr_cookieverf, sizeof(verf));
	}
	nfs4c_compound_destroy(&c);
	if (ret) {
		printf("GETDEVICELIST: %s\n", status_name(ret));
		return 1;
	}
	return 0;
}

/* ---- the command line ---------------------------------------------------------------- */

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {{"device", required_argument, NULL, 'd'},
					      {"stats", required_argument, NULL, 's'},
					      {"no-stats", no_argument, NULL, 'S'},
					      {"size", required_argument, NULL, 'z'},
					      {"io", required_argument, NULL, 'i'},
					      {"threads", required_argument, NULL, 't'},
					      {"depth", required_argument, NULL, 'D'},
					      {"layout-ahead", required_argument, NULL, 'A'},
					      {"count", required_argument, NULL, 'n'},
					      {"rounds", required_argument, NULL, 'r'},
					      {"seconds", required_argument, NULL, 'T'},
					      {"commit-each", no_argument, NULL, 'c'},
					      {"return-on-recall", no_argument, NULL, 'R'},
					      {"end-probe", no_argument, NULL, 'P'},
					      {"minor", required_argument, NULL, 'm'},
					      {"help", no_argument, NULL, 'h'},
					      {NULL, 0, NULL, 0}};
	const char *pos[4];
	unsigned npos = 0;
	int c;
	memset(o, 0, sizeof(*o));
	o->threads = 1;
	optind = 1;
	/* "-": options and operands in any order */
	while ((c = getopt_long(argc, argv, "-", lopts, NULL)) != -1) {
		uint64_t v = 0;
		switch (c) {
		case 1:
			if (npos == ARRAY_SIZE(pos)) {
				fprintf(stderr, "jnfs pnfs: too many arguments\n");
				return 2;
			}
			pos[npos++] = optarg;
			break;
		case 'd':
			if (o->ndisks == NFS4C_PNFS_MAX_DISKS) {
				fprintf(stderr, "jnfs pnfs: at most %d --device\n",
					NFS4C_PNFS_MAX_DISKS);
				return 2;
			}
			o->disks[o->ndisks++] = optarg;
			break;
		case 's':
			o->stats_addr = optarg;
			break;
		case 'S':
			o->no_stats = true;
			break;
		case 'c':
			o->commit_each = true;
			break;
		case 'R':
			o->return_on_recall = true;
			break;
		case 'P':
			o->end_probe = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'z':
		case 'i':
		case 't':
		case 'n':
		case 'r':
		case 'T':
		case 'm':
		case 'D':
		case 'A':
			if (parse_size(optarg, &v) || v > (1ull << 50)) {
				fprintf(stderr, "jnfs pnfs: bad number '%s'\n", optarg);
				return 2;
			}
			if (c == 'z')
				o->size = v;
			else if (c == 'i')
				o->io = v;
			else if (c == 't')
				o->threads = (unsigned)MIN(v, 1000000u);
			else if (c == 'n')
				o->count = (unsigned)MIN(v, 100000000u);
			else if (c == 'r')
				o->rounds = (unsigned)MIN(v, 1000000u);
			else if (c == 'T')
				o->seconds = (unsigned)MIN(v, 100000000u);
			else if (c == 'D')
				o->depth = (unsigned)MIN(v, 1000000u);
			else if (c == 'A')
				o->ahead = v;
			else
				o->minor = (unsigned)v;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (npos < 2 || !o->ndisks || (o->minor && o->minor != 1 && o->minor != 2)) {
		usage(stderr);
		return 2;
	}
	o->url = pos[0];
	o->cmd = pos[1];
	for (unsigned i = 2; i < npos; i++)
		o->args[o->nargs++] = pos[i];
	return 0;
}

int cli_pnfs(int argc, char **argv)
{
	static const struct {
		const char *name;
		unsigned nargs;
		int (*fn)(struct ctx *x);
	} cmds[] = {{"info", 0, cmd_info},	   {"put", 2, cmd_put},
		    {"get", 2, cmd_get},	   {"overwrite", 1, cmd_overwrite},
		    {"newfiles", 1, cmd_newfiles}, {"hold", 1, cmd_hold}};
	struct ctx x = {0};
	int r = parse(argc, argv, &x.o);
	if (r)
		return r;
	int which = -1;
	for (unsigned i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(cmds[i].name, x.o.cmd))
			which = (int)i;
	if (which < 0 || cmds[which].nargs != x.o.nargs) {
		fprintf(stderr, "jnfs pnfs: %s '%s'\n",
			which < 0 ? "unknown command" : "wrong arguments for", x.o.cmd);
		usage(stderr);
		return 2;
	}
	if (!strcmp(x.o.cmd, "overwrite") && (r = check_sizes(&x, false)))
		return r;
	if (!strcmp(x.o.cmd, "newfiles") && (r = check_sizes(&x, true)))
		return r;
	if ((x.o.depth > NFS4C_PNFS_DEPTH_MAX || x.o.io > (64u << 20)) &&
	    (!strcmp(x.o.cmd, "put") || !strcmp(x.o.cmd, "get"))) {
		fprintf(stderr, "jnfs pnfs %s: --depth 1..%d, --io at most 64M\n", x.o.cmd,
			NFS4C_PNFS_DEPTH_MAX);
		return 2;
	}
	if (x.o.end_probe && (strcmp(x.o.cmd, "hold") || x.o.return_on_recall)) {
		fprintf(stderr, "jnfs pnfs: --end-probe is for hold without --return-on-recall\n");
		return 2;
	}
	bool hold = !strcmp(x.o.cmd, "hold") && !x.o.return_on_recall;
	if (!strcmp(x.o.cmd, "hold")) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}
	r = ctx_open(&x, hold);
	if (!r)
		r = cmds[which].fn(&x);
	/* a held layout is left to the server: no DESTROY_SESSION (the lease
	 * ends it), as a client that went away */
	ctx_close(&x, !hold);
	fflush(stdout);
	return r;
}
