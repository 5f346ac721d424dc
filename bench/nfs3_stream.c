/*
 * nfs3_stream.c - streaming NFSv3 READ and WRITE throughput: each of N
 * connections writes its own file sequentially (WRITE of --io bytes,
 * --depth calls in flight, UNSTABLE then one COMMIT, or FILE_SYNC), then
 * reads it back the same way. Prints one CSV line per phase:
 *
 *   phase,conns,depth,io,mib,seconds,mib_per_s
 *
 *   nfs3-stream --port P [--addr A] [--mount-port P] [--export PATH]
 *               [--conns N] [--depth D] [--io BYTES] [--mib M]
 *               [--stable unstable|filesync] [--phases write,read]
 *
 * A client of its own, not libnfs: it encodes each call's header once and
 * sends the header and the data buffer with one writev(), so that the
 * client's own copies do not mask the server's on a machine where both
 * share the cores. Any error ends the program (die()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define NFS_PROG   100003u
#define MOUNT_PROG 100005u
#define P_CREATE   8u
#define P_WRITE	   7u
#define P_READ	   6u
#define P_COMMIT   21u

struct opts {
	const char *addr, *export;
	unsigned port, mount_port;
	unsigned conns, depth;
	uint32_t io;
	uint64_t mib;
	bool filesync;
	bool do_write, do_read;
};

static struct opts o = {.addr = "127.0.0.1",
			.export = "/",
			.conns = 1,
			.depth = 1,
			.io = 1u << 20,
			.mib = 256,
			.do_write = true,
			.do_read = true};

struct enc {
	uint8_t *p;
	size_t n, cap;
};

static void put32(struct enc *e, uint32_t v)
{
	if (e->n + 4 > e->cap)
		die("call header too long");
	v = htonl(v);
	memcpy(e->p + e->n, &v, 4);
	e->n += 4;
}

static void put64(struct enc *e, uint64_t v)
{
	put32(e, (uint32_t)(v >> 32));
	put32(e, (uint32_t)v);
}

static void putopaque(struct enc *e, const void *d, uint32_t len)
{
	put32(e, len);
	if (e->n + len + 3 > e->cap)
		die("call header too long");
	memcpy(e->p + e->n, d, len);
	e->n += len;
	while (e->n & 3)
		e->p[e->n++] = 0;
}

/* The record mark and the call header; the caller patches the mark. */
static void call_hdr(struct enc *e, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc)
{
	e->n = 0;
	put32(e, 0); /* record mark */
	put32(e, xid);
	put32(e, 0); /* CALL */
	put32(e, 2);
	put32(e, prog);
	put32(e, vers);
	put32(e, proc);
	put32(e, 1);  /* AUTH_SYS */
	put32(e, 20); /* stamp, machine "", uid 0, gid 0, no gids */
	put32(e, 0);
	put32(e, 0);
	put32(e, 0);
	put32(e, 0);
	put32(e, 0);
	put32(e, 0); /* verifier AUTH_NONE */
	put32(e, 0);
}

struct conn {
	int fd;
	uint32_t xid;
	uint8_t *rbuf;
	size_t rcap;
	uint8_t fh[64];
	uint32_t fhlen;
	unsigned idx;
	uint8_t *data;
	double wsec, rsec;
};

static void write_all(int fd, struct iovec *iov, int n)
{
	while (n) {
		ssize_t w = writev(fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("writev: %s", strerror(errno));
		}
		while (n && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
}

static void read_all(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t r = read(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("read: %s", r ? strerror(errno) : "connection closed");
		p += r;
		len -= (size_t)r;
	}
}

static void send_call(struct conn *c, struct enc *e, const void *data, size_t dlen)
{
	size_t total = e->n - 4 + dlen;
	uint32_t mark = htonl(0x80000000u | (uint32_t)total);
	memcpy(e->p, &mark, 4);
	struct iovec iov[2] = {{e->p, e->n}, {(void *)data, dlen}};
	write_all(c->fd, iov, dlen ? 2 : 1);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return ntohl(v);
}

/* One reply record; returns its length, results at *res. Dies on an RPC
 * error. */
static size_t recv_reply(struct conn *c, const uint8_t **res)
{
	size_t len = 0;
	for (;;) {
		uint8_t m[4];
		read_all(c->fd, m, 4);
		uint32_t mark = get32(m);
		size_t flen = mark & 0x7fffffffu;
		if (len + flen > c->rcap) {
			c->rcap = len + flen;
			c->rbuf = realloc(c->rbuf, c->rcap);
			if (!c->rbuf)
				die("out of memory");
		}
		read_all(c->fd, c->rbuf + len, flen);
		len += flen;
		if (mark & 0x80000000u)
			break;
	}
	if (len < 24 || get32(c->rbuf + 4) != 1 || get32(c->rbuf + 8) != 0)
		die("bad reply (len %zu, %u %u)", len, len >= 12 ? get32(c->rbuf + 4) : 0,
		    len >= 12 ? get32(c->rbuf + 8) : 0);
	uint32_t vlen = get32(c->rbuf + 16);
	size_t off = 20 + ((vlen + 3) & ~3u);
	if (off + 4 > len || get32(c->rbuf + off) != 0)
		die("call not accepted");
	*res = c->rbuf + off + 4;
	return len - off - 4;
}

static int dial(unsigned port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, o.addr, &sa.sin_addr) != 1)
		die("bad address %s", o.addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect: %s", strerror(errno));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void setup(struct conn *c)
{
	uint8_t hb[512];
	struct enc e = {hb, 0, sizeof(hb)};
	const uint8_t *r;
	/* MNT */
	c->fd = dial(o.mount_port);
	call_hdr(&e, c->xid++, MOUNT_PROG, 3, 1);
	putopaque(&e, o.export, (uint32_t)strlen(o.export));
	send_call(c, &e, NULL, 0);
	size_t n = recv_reply(c, &r);
	if (n < 8 || get32(r) != 0)
		die("MNT %s failed", o.export);
	uint32_t rootlen = get32(r + 4);
	uint8_t root[64];
	if (rootlen > 64 || n < 8 + rootlen)
		die("MNT reply");
	memcpy(root, r + 8, rootlen);
	close(c->fd);
	/* CREATE stream-<idx>, UNCHECKED, size 0 */
	c->fd = dial(o.port);
	char name[32];
	snprintf(name, sizeof(name), "stream-%u", c->idx);
	call_hdr(&e, c->xid++, NFS_PROG, 3, P_CREATE);
	putopaque(&e, root, rootlen);
	putopaque(&e, name, (uint32_t)strlen(name));
	put32(&e, 0); /* UNCHECKED */
	put32(&e, 1);
	put32(&e, 0644);
	put32(&e, 0);
	put32(&e, 0);
	put32(&e, 1);
	put64(&e, 0);
	put32(&e, 0);
	put32(&e, 0);
	send_call(c, &e, NULL, 0);
	n = recv_reply(c, &r);
	if (n < 12 || get32(r) != 0 || get32(r + 4) != 1)
		die("CREATE %s failed (status %u)", name, n >= 4 ? get32(r) : 0);
	c->fhlen = get32(r + 8);
	if (c->fhlen > 64 || n < 12 + c->fhlen)
		die("CREATE reply");
	memcpy(c->fh, r + 12, c->fhlen);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pthread_barrier_t bar;

static void phase(struct conn *c, bool write)
{
	uint64_t size = o.mib << 20, sent = 0, done = 0;
	uint8_t hb[256];
	struct enc e = {hb, 0, sizeof(hb)};
	const uint8_t *r;
	unsigned inflight = 0;
	while (done < size) {
		while (inflight < o.depth && sent < size) {
			uint32_t len = (uint32_t)(size - sent < o.io ? size - sent : o.io);
			call_hdr(&e, c->xid++, NFS_PROG, 3, write ? P_WRITE : P_READ);
			putopaque(&e, c->fh, c->fhlen);
			put64(&e, sent);
			put32(&e, len);
			if (write) {
				put32(&e, o.filesync ? 2 : 0);
				put32(&e, len);
			}
			send_call(c, &e, write ? c->data : NULL, write ? len : 0);
			sent += len;
			inflight++;
		}
		size_t n = recv_reply(c, &r);
		if (n < 4 || get32(r) != 0)
			die("%s failed (status %u)", write ? "WRITE" : "READ",
			    n >= 4 ? get32(r) : 0);
		inflight--;
		done += o.io;
	}
	if (write && !o.filesync) {
		call_hdr(&e, c->xid++, NFS_PROG, 3, P_COMMIT);
		putopaque(&e, c->fh, c->fhlen);
		put64(&e, 0);
		put32(&e, 0);
		send_call(c, &e, NULL, 0);
		size_t n = recv_reply(c, &r);
		if (n < 4 || get32(r) != 0)
			die("COMMIT failed");
	}
}

static void *run(void *arg)
{
	struct conn *c = arg;
	setup(c);
	for (int w = 1; w >= 0; w--) {
		if (w ? !o.do_write : !o.do_read)
			continue;
		pthread_barrier_wait(&bar);
		double t0 = now_s();
		phase(c, w);
		double t = now_s() - t0;
		if (w)
			c->wsec = t;
		else
			c->rsec = t;
		pthread_barrier_wait(&bar);
	}
	close(c->fd);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: nfs3-stream --port P [--addr A] [--mount-port P] [--export PATH]\n"
			"                   [--conns N] [--depth D] [--io BYTES] [--mib M]\n"
			"                   [--stable unstable|filesync] [--phases write,read]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--addr"))
			o.addr = v;
		else if (!strcmp(a, "--port"))
			o.port = (unsigned)atoi(v);
		else if (!strcmp(a, "--mount-port"))
			o.mount_port = (unsigned)atoi(v);
		else if (!strcmp(a, "--export"))
			o.export = v;
		else if (!strcmp(a, "--conns"))
			o.conns = (unsigned)atoi(v);
		else if (!strcmp(a, "--depth"))
			o.depth = (unsigned)atoi(v);
		else if (!strcmp(a, "--io"))
			o.io = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--mib"))
			o.mib = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--stable"))
			o.filesync = !strcmp(v, "filesync");
		else if (!strcmp(a, "--phases")) {
			o.do_write = strstr(v, "write") != NULL;
			o.do_read = strstr(v, "read") != NULL;
		} else
			usage();
	}
	if (!o.port || !o.conns || !o.depth || !o.io || !o.mib || o.io > (64u << 20))
		usage();
	if (!o.mount_port)
		o.mount_port = o.port;
	pthread_barrier_init(&bar, NULL, o.conns + 1);
	struct conn *cs = calloc(o.conns, sizeof(*cs));
	uint8_t *data = malloc(o.io);
	if (!cs || !data)
		die("out of memory");
	for (uint32_t i = 0; i < o.io; i++)
		data[i] = (uint8_t)mix64(i);
	pthread_t *th = calloc(o.conns, sizeof(*th));
	for (unsigned i = 0; i < o.conns; i++) {
		cs[i].idx = i;
		cs[i].xid = (uint32_t)mix64(i + 1 + (uint64_t)getpid() * 7919);
		cs[i].data = data;
		pthread_create(&th[i], NULL, run, &cs[i]);
	}
	printf("phase,conns,depth,io,mib,seconds,mib_per_s\n");
	for (int w = 1; w >= 0; w--) {
		if (w ? !o.do_write : !o.do_read)
			continue;
		pthread_barrier_wait(&bar);
		double t0 = now_s();
		pthread_barrier_wait(&bar);
		double t = now_s() - t0;
		double mib = (double)(o.mib * o.conns);
		printf("%s%s,%u,%u,%u,%.0f,%.3f,%.1f\n", w ? "write" : "read",
		       w ? (o.filesync ? "-filesync" : "-unstable") : "", o.conns, o.depth, o.io,
		       mib, t, mib / t);
		fflush(stdout);
	}
	for (unsigned i = 0; i < o.conns; i++)
		pthread_join(th[i], NULL);
	return 0;
}
