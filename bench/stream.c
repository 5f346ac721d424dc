/*
 * stream.c - stream-bench: how many MiB/s S streams move, each one large
 * file over one connection with D calls in flight, and what it costs the
 * server in CPU time; or the same bytes straight to the disk, or over one
 * loopback TCP connection per stream, the two ceilings of the first.
 *
 *   stream-bench --proto nfs3|nfs4|raw|tcp --op write|read
 *                [--stable unstable|filesync] [--streams S] [--io BYTES]
 *                [--bytes PER_STREAM] [--depth D] [--addr A] [--port P]
 *                [--mount-port M] [--export PATH] [--dir NAME]
 *                [--prefix NAME] [--path FILE] [--server-pid PID]
 *                [--pattern N] [--label L] [--csv]
 *
 * nfs3  libnfs, one connection per stream: MNT PATH (default /), LOOKUP
 *       (or MKDIR) DIR (default "stream"), LOOKUP (or CREATE UNCHECKED)
 *       PREFIX-fK; then, timed, WRITEs or READs of BYTES each from offset
 *       0 to PER_STREAM, D in flight; --stable unstable ends with one
 *       COMMIT of the file (its verifier must be the WRITEs').
 * nfs4  the project's client (src/nfs4c), one client ID, session and
 *       connection per stream: LOOKUP PATH (default /) from the
 *       pseudo-root, DIR, OPEN PREFIX-fK (create UNCHECKED4 for a write),
 *       then the same WRITE / READ / COMMIT compounds, and CLOSE after the
 *       timed phase.
 * raw   FILE opened O_DIRECT (and O_DSYNC with --stable filesync), stream
 *       K its own range [K * PER_STREAM, (K + 1) * PER_STREAM), D threads
 *       per stream each taking every D-th block (D calls in flight);
 *       --stable unstable ends with one fdatasync. The disk's figure for
 *       the same I/O size, streams and depth.
 * tcp   one loopback TCP connection per stream, a sender and a receiver
 *       thread, PER_STREAM bytes in BYTES-sized send() calls: what the
 *       host's network stack moves, no file system, no RPC.
 *
 * Every reply is checked (status, count, verifiers), and every byte an
 * NFS READ returns against what stream-bench writes there: byte O of a
 * file is byte O mod 1 MiB of a pattern drawn from --pattern N (default
 * 0), whatever the I/O size; an error or a difference ends the run with a
 * message. Writes overwrite a file written before when it is
 * there (nothing is truncated); reads need it there, at least PER_STREAM
 * long. The timed phase runs from when every stream is set up to the last
 * stream's last reply (its COMMIT's). --server-pid: that process's
 * utime + stime (/proc/PID/stat) are read just before and after it.
 *
 * Output: "stream.NAME value" lines; with --csv one header and one row:
 * label,proto,op,stable,streams,io,depth,bytes,seconds,mib_per_s,
 * server_cpu_s,server_cpu_s_per_gib (n/a without --server-pid).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/time.h"
#include "bench_util.h"
#include "stream.h"

struct stream_opts so = {
	.proto = "nfs3",
	.streams = 1,
	.io = 1u << 20,
	.bytes = 64u << 20,
	.depth = 4,
	.addr = "127.0.0.1",
	.export = "/",
	.dir = "stream",
	.prefix = "s",
};
char stream_data[STREAM_MAX_IO] __attribute__((aligned(4096)));

static pthread_barrier_t start_barrier;

void stream_wait_start(void)
{
	pthread_barrier_wait(&start_barrier);
}

/* ---- raw: the disk, O_DIRECT ---- */

struct raw_worker {
	pthread_t thread;
	int fd;
	unsigned k, q;
	void *buf; /* reads */
};

static void *raw_main(void *arg)
{
	struct raw_worker *w = arg;
	uint64_t base = (uint64_t)w->k * so.bytes;
	pthread_barrier_wait(&start_barrier);
	for (uint64_t off = (uint64_t)w->q * so.io; off < so.bytes;
	     off += (uint64_t)so.depth * so.io) {
		uint32_t n = so.bytes - off < so.io ? (uint32_t)(so.bytes - off) : so.io;
		ssize_t r =
			so.read ? pread(w->fd, w->buf, n, (off_t)(base + off))
				: pwrite(w->fd, stream_data_at(base + off), n, (off_t)(base + off));
		if (r != (ssize_t)n)
			die("%s %s at %" PRIu64 ": %s", so.read ? "pread" : "pwrite", so.path,
			    base + off, r < 0 ? strerror(errno) : "short");
	}
	return NULL;
}

/* ---- tcp: one loopback connection per stream ---- */

struct tcp_pair {
	pthread_t tx, rx;
	int sfd, rfd;
	char *rbuf;
};

static void *tcp_tx(void *arg)
{
	struct tcp_pair *p = arg;
	pthread_barrier_wait(&start_barrier);
	for (uint64_t sent = 0; sent < so.bytes;) {
		uint64_t left = so.bytes - sent;
		size_t n = left < so.io ? (size_t)left : so.io;
		ssize_t r = send(p->sfd, stream_data, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("send: %s", strerror(errno));
		}
		sent += (uint64_t)r;
	}
	return NULL;
}

static void *tcp_rx(void *arg)
{
	struct tcp_pair *p = arg;
	pthread_barrier_wait(&start_barrier);
	for (uint64_t got = 0; got < so.bytes;) {
		ssize_t r = recv(p->rfd, p->rbuf, so.io, 0);
		if (r == 0)
			die("recv: early end of stream");
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("recv: %s", strerror(errno));
		}
		got += (uint64_t)r;
	}
	return NULL;
}

static void tcp_pair_open(struct tcp_pair *p)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &len))
		die("loopback listen: %s", strerror(errno));
	p->sfd = socket(AF_INET, SOCK_STREAM, 0);
	if (p->sfd < 0 || connect(p->sfd, (struct sockaddr *)&sa, sizeof(sa)))
		die("loopback connect: %s", strerror(errno));
	p->rfd = accept(l, NULL, NULL);
	if (p->rfd < 0)
		die("accept: %s", strerror(errno));
	close(l);
	int one = 1;
	setsockopt(p->sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	p->rbuf = malloc(so.io);
	if (!p->rbuf)
		die("out of memory");
}

/* ---- the server's CPU time ---- */

/* utime + stime of pid in seconds, or -1. */
static double proc_cpu_s(long pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* the command name may hold spaces and parentheses: fields count
	 * from the last ')' (field 3 follows it) */
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	unsigned long long ut = 0, st = 0;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- options ---- */

static const char usage[] =
	"usage: stream-bench --proto nfs3|nfs4|raw|tcp --op write|read\n"
	"                    [--stable unstable|filesync] [--streams S] [--io BYTES]\n"
	"                    [--bytes PER_STREAM] [--depth D] [--addr A] [--port P]\n"
	"                    [--mount-port M] [--export PATH] [--dir NAME]\n"
	"                    [--prefix NAME] [--path FILE] [--server-pid PID]\n"
	"                    [--pattern N] [--label L] [--csv]\n";

/* A size with an optional K, M or G suffix (powers of 1024). */
static uint64_t parse_size(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		die("bad size %s", s);
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		die("bad size %s", s);
	return v;
}

int main(int argc, char **argv)
{
	const char *label = "", *op = NULL;
	long server_pid = 0;
	uint64_t pattern = 0;
	bool csv = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--csv")) {
			csv = true;
			continue;
		}
		if (!v) {
			fputs(usage, stderr);
			return 2;
		}
		i++;
		if (!strcmp(a, "--proto"))
			so.proto = v;
		else if (!strcmp(a, "--op"))
			op = v;
		else if (!strcmp(a, "--stable"))
			so.filesync = !strcmp(v, "filesync");
		else if (!strcmp(a, "--streams"))
			so.streams = (unsigned)atoi(v);
		else if (!strcmp(a, "--io"))
			so.io = (uint32_t)parse_size(v);
		else if (!strcmp(a, "--bytes"))
			so.bytes = parse_size(v);
		else if (!strcmp(a, "--depth"))
			so.depth = (unsigned)atoi(v);
		else if (!strcmp(a, "--addr"))
			so.addr = v;
		else if (!strcmp(a, "--port"))
			so.port = (unsigned)atoi(v);
		else if (!strcmp(a, "--mount-port"))
			so.mount_port = (unsigned)atoi(v);
		else if (!strcmp(a, "--export"))
			so.export = v;
		else if (!strcmp(a, "--dir"))
			so.dir = v;
		else if (!strcmp(a, "--prefix"))
			so.prefix = v;
		else if (!strcmp(a, "--path"))
			so.path = v;
		else if (!strcmp(a, "--server-pid"))
			server_pid = atol(v);
		else if (!strcmp(a, "--pattern"))
			pattern = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--label"))
			label = v;
		else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!op || (strcmp(op, "write") && strcmp(op, "read")))
		die("--op write or --op read");
	so.read = !strcmp(op, "read");
	if (!so.streams || so.streams > STREAM_MAX_STREAMS)
		die("--streams 1 to %d", STREAM_MAX_STREAMS);
	if (!so.depth || so.depth > STREAM_MAX_DEPTH)
		die("--depth 1 to %d", STREAM_MAX_DEPTH);
	if (so.io < 4096 || so.io > STREAM_MAX_IO || STREAM_MAX_IO % so.io)
		die("--io a power of two from 4 KiB to %u", STREAM_MAX_IO);
	if (!so.bytes || so.bytes % so.io)
		die("--bytes a multiple of --io");
	if (!so.mount_port)
		so.mount_port = so.port;
	for (size_t i = 0; i < sizeof(stream_data); i++)
		stream_data[i] = (char)(mix64((pattern << 20) + i / 8) >> (8 * (i % 8)));

	bool raw = !strcmp(so.proto, "raw"), tcp = !strcmp(so.proto, "tcp");
	bool nfs3 = !strcmp(so.proto, "nfs3"), nfs4 = !strcmp(so.proto, "nfs4");
	if (!raw && !tcp && !nfs3 && !nfs4)
		die("--proto nfs3, nfs4, raw or tcp");
	if ((nfs3 || nfs4) && !so.port)
		die("--port is needed");
	if (raw && !so.path)
		die("--proto raw needs --path");

	unsigned nthreads = raw ? so.streams * so.depth : tcp ? 2 * so.streams : so.streams;
	pthread_barrier_init(&start_barrier, NULL, nthreads + 1);

	/* set up, not timed */
	void *st[STREAM_MAX_STREAMS] = {0};
	pthread_t th[STREAM_MAX_STREAMS];
	struct raw_worker *rw = NULL;
	struct tcp_pair tp[STREAM_MAX_STREAMS];
	int rfd = -1;
	if (raw) {
		rfd = open(so.path, (so.read ? O_RDONLY : O_WRONLY) | O_DIRECT |
					    (!so.read && so.filesync ? O_DSYNC : 0));
		if (rfd < 0)
			die("%s: %s", so.path, strerror(errno));
		rw = calloc(nthreads, sizeof(*rw));
		if (!rw)
			die("out of memory");
		for (unsigned i = 0; i < nthreads; i++) {
			rw[i].fd = rfd;
			rw[i].k = i / so.depth;
			rw[i].q = i % so.depth;
			rw[i].buf = aligned_alloc(4096, so.io);
			if (!rw[i].buf)
				die("out of memory");
			if (pthread_create(&rw[i].thread, NULL, raw_main, &rw[i]))
				die("cannot start a thread");
		}
	} else if (tcp) {
		for (unsigned k = 0; k < so.streams; k++) {
			tcp_pair_open(&tp[k]);
			if (pthread_create(&tp[k].tx, NULL, tcp_tx, &tp[k]) ||
			    pthread_create(&tp[k].rx, NULL, tcp_rx, &tp[k]))
				die("cannot start a thread");
		}
	} else {
		for (unsigned k = 0; k < so.streams; k++)
			st[k] = nfs3 ? nfs3_stream_setup(k) : nfs4_stream_setup(k);
	}

	double cpu0 = server_pid ? proc_cpu_s(server_pid) : -1;
	if (nfs3 || nfs4) {
		for (unsigned k = 0; k < so.streams; k++) {
			if (pthread_create(&th[k], NULL, nfs3 ? nfs3_stream_run : nfs4_stream_run,
					   st[k]))
				die("cannot start a thread");
		}
	}
	pthread_barrier_wait(&start_barrier);
	uint64_t t0 = now_ns();
	if (raw) {
		for (unsigned i = 0; i < nthreads; i++)
			pthread_join(rw[i].thread, NULL);
		if (!so.read && !so.filesync && fdatasync(rfd))
			die("fdatasync %s: %s", so.path, strerror(errno));
	} else if (tcp) {
		for (unsigned k = 0; k < so.streams; k++) {
			pthread_join(tp[k].tx, NULL);
			pthread_join(tp[k].rx, NULL);
		}
	} else {
		for (unsigned k = 0; k < so.streams; k++)
			pthread_join(th[k], NULL);
	}
	uint64_t t1 = now_ns();
	double cpu1 = server_pid ? proc_cpu_s(server_pid) : -1;

	if (raw) {
		for (unsigned i = 0; i < nthreads; i++)
			free(rw[i].buf);
		free(rw);
		close(rfd);
	} else if (tcp) {
		for (unsigned k = 0; k < so.streams; k++) {
			close(tp[k].sfd);
			close(tp[k].rfd);
			free(tp[k].rbuf);
		}
	} else {
		for (unsigned k = 0; k < so.streams; k++) {
			if (nfs3)
				nfs3_stream_teardown(st[k]);
			else
				nfs4_stream_teardown(st[k]);
		}
	}

	double secs = (double)(t1 - t0) / 1e9;
	uint64_t total = so.bytes * so.streams;
	double mibs = (double)total / 1048576.0 / secs;
	char cpu[32] = "n/a", cpu_gib[32] = "n/a";
	if (cpu0 >= 0 && cpu1 >= 0) {
		snprintf(cpu, sizeof(cpu), "%.2f", cpu1 - cpu0);
		snprintf(cpu_gib, sizeof(cpu_gib), "%.2f",
			 (cpu1 - cpu0) / ((double)total / 1073741824.0));
	}
	const char *stable = so.read || tcp ? "-" : so.filesync ? "filesync" : "unstable";
	printf("stream.proto %s\nstream.op %s\nstream.stable %s\nstream.streams %u\n"
	       "stream.io %u\nstream.depth %u\nstream.bytes %" PRIu64 "\nstream.seconds %.3f\n"
	       "stream.mib_per_s %.1f\nstream.server_cpu_s %s\nstream.server_cpu_s_per_gib %s\n",
	       so.proto, op, stable, so.streams, so.io, so.depth, total, secs, mibs, cpu, cpu_gib);
	if (csv)
		printf("label,proto,op,stable,streams,io,depth,bytes,seconds,mib_per_s,server_cpu_"
		       "s,"
		       "server_cpu_s_per_gib\n%s,%s,%s,%s,%u,%u,%u,%" PRIu64 ",%.3f,%.1f,%s,%s\n",
		       label, so.proto, op, stable, so.streams, so.io, so.depth, total, secs, mibs,
		       cpu, cpu_gib);
	return 0;
}
