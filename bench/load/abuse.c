/*
 * abuse.c - the hostile clients of abuse.h, over raw sockets: each kind
 * runs in its own thread(s), checks the stop flag at least every 200 ms,
 * and closes every descriptor it opened when it stops.
 */
#include "abuse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/time.h"
#include "rpc/clnt.h"
#include "rpc/record.h"
#include "rpc/rpc_msg.h"
#include "rpc/svc.h"

#define NFS_PROG     100003
#define P_GETATTR    1
#define P_READ	     6
#define BIG_SIZE     (1u << 20)
#define HALF_CLAIM   (1u << 20)
#define HALF_SENT    (512u << 10)
#define NOREAD_BATCH 64
#define FLOOD_BATCH  64

struct abuse {
	struct abuse_opts o;
	struct sockaddr_storage sa;
	socklen_t salen;
	atomic_bool stop;
	pthread_t *threads;
	unsigned nthreads;
	struct rpc_cred cred;
	/* counters */
	atomic_ullong idle_open, idle_refused, idle_closed;
	atomic_ullong noread_calls, noread_drops, noread_conns;
	atomic_ullong half_records, half_drops;
	atomic_ullong flood_calls, flood_replies, flood_drops;
	uint64_t t0, t1;
};

/* A connected socket (blocking, with timeouts), or -errno. rcvbuf > 0
 * shrinks the receive buffer before connecting. */
static int dial(struct abuse *a, int rcvbuf, unsigned timeout_ms)
{
	int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a->sa, a->salen)) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static uint32_t next_xid(void)
{
	static atomic_uint x;
	return 0xa0000000u ^ atomic_fetch_add(&x, 1);
}

/* Append one call record (header, credential, args) to x. */
static int enc_record(struct xdr_enc *x, const struct rpc_cred *cred, uint32_t proc,
		      const struct load_fh *fh, bool read)
{
	size_t mark;
	if (xdr_enc_reserve(x, 4, &mark))
		return -EMSGSIZE;
	size_t start = xdr_enc_len(x);
	if (rpc_enc_call_hdr(x, next_xid(), NFS_PROG, 3, proc, cred))
		return -EMSGSIZE;
	if (fh && xdr_enc_opaque(x, fh->data, fh->len))
		return -EMSGSIZE;
	if (read && (xdr_enc_u64(x, 0) || xdr_enc_u32(x, BIG_SIZE)))
		return -EMSGSIZE;
	xdr_enc_put_u32_at(x, mark, REC_LAST_FRAG | (uint32_t)(xdr_enc_len(x) - start));
	return 0;
}

static uint8_t *flat(struct xdr_enc *x, size_t *len)
{
	*len = xdr_enc_len(x);
	uint8_t *b = xmalloc(*len);
	xdr_enc_flatten(x, b);
	xdr_enc_destroy(x);
	return b;
}

/* ---- idle ---- */

static void *idle_main(void *arg)
{
	struct abuse *a = arg;
	unsigned n = a->o.idle;
	struct pollfd *p = xcalloc(n, sizeof(*p));
	for (unsigned i = 0; i < n && !atomic_load(&a->stop); i++) {
		p[i].fd = -1;
		int fd = dial(a, 0, 2000);
		if (fd < 0) {
			atomic_fetch_add(&a->idle_refused, 1);
			continue;
		}
		struct rpc_reply_hdr rh;
		if (rpc_clnt_call(fd, next_xid(), NFS_PROG, 3, 0, NULL, NULL, NULL, NULL, NULL,
				  &rh)) {
			atomic_fetch_add(&a->idle_refused, 1);
			close(fd);
			continue;
		}
		p[i].fd = fd;
		p[i].events = POLLIN | POLLRDHUP;
		atomic_fetch_add(&a->idle_open, 1);
	}
	/* the server never writes to an idle connection: readable is closed */
	while (!atomic_load(&a->stop)) {
		int r = poll(p, n, 200);
		for (unsigned i = 0; r > 0 && i < n; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			close(p[i].fd);
			p[i].fd = -1;
			atomic_fetch_add(&a->idle_closed, 1);
			atomic_fetch_sub(&a->idle_open, 1);
		}
	}
	for (unsigned i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	free(p);
	return NULL;
}

/* ---- noread ---- */

/* Send len bytes without blocking for longer than the stop flag allows.
 * 0 when sent, -EPIPE when the server dropped us, -EINTR on stop. */
static int push(struct abuse *a, int fd, const uint8_t *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		if (atomic_load(&a->stop))
			return -EINTR;
		ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -EPIPE;
		struct pollfd p = {.fd = fd, .events = POLLOUT | POLLRDHUP};
		if (poll(&p, 1, 200) > 0 && (p.revents & (POLLERR | POLLHUP | POLLRDHUP)))
			return -EPIPE;
	}
	return 0;
}

static void *noread_main(void *arg)
{
	struct abuse *a = arg;
	struct xdr_enc x;
	xdr_enc_init(&x, 1u << 20);
	for (unsigned i = 0; i < NOREAD_BATCH; i++)
		if (enc_record(&x, &a->cred, P_READ, &a->o.big, true))
			return NULL;
	size_t len;
	uint8_t *batch = flat(&x, &len);
	while (!atomic_load(&a->stop)) {
		int fd = dial(a, 64 * 1024, 2000);
		if (fd < 0) {
			sleep_ns(100 * NSEC_PER_MSEC);
			continue;
		}
		atomic_fetch_add(&a->noread_conns, 1);
		set_nonblock(fd);
		int err;
		while ((err = push(a, fd, batch, len)) == 0)
			atomic_fetch_add(&a->noread_calls, NOREAD_BATCH);
		if (err == -EPIPE)
			atomic_fetch_add(&a->noread_drops, 1);
		close(fd);
	}
	free(batch);
	return NULL;
}

/* ---- halfsent ---- */

static void *half_main(void *arg)
{
	struct abuse *a = arg;
	unsigned n = a->o.halfsent;
	/* a NULL call's header, then zeros: the record claims HALF_CLAIM
	 * bytes, and HALF_SENT of them come */
	uint8_t *rec = xcalloc(1, HALF_SENT + 4);
	uint32_t hdr = htonl(REC_LAST_FRAG | HALF_CLAIM);
	memcpy(rec, &hdr, 4);
	struct xdr_enc x;
	xdr_enc_init_buf(&x, rec + 4, HALF_SENT, HALF_SENT);
	rpc_enc_call_hdr(&x, next_xid(), NFS_PROG, 3, 0, NULL);
	struct pollfd *p = xcalloc(n, sizeof(*p));
	for (unsigned i = 0; i < n; i++)
		p[i].fd = -1;
	while (!atomic_load(&a->stop)) {
		for (unsigned i = 0; i < n && !atomic_load(&a->stop); i++) {
			if (p[i].fd >= 0)
				continue;
			int fd = dial(a, 0, 2000);
			if (fd < 0)
				continue;
			set_nonblock(fd);
			if (push(a, fd, rec, HALF_SENT + 4)) {
				close(fd);
				continue;
			}
			p[i].fd = fd;
			p[i].events = POLLIN | POLLRDHUP;
			atomic_fetch_add(&a->half_records, 1);
		}
		int r = poll(p, n, 200);
		for (unsigned i = 0; r > 0 && i < n; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			close(p[i].fd);
			p[i].fd = -1;
			atomic_fetch_add(&a->half_drops, 1);
		}
	}
	for (unsigned i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	free(p);
	free(rec);
	return NULL;
}

/* ---- flood ---- */

static void *flood_main(void *arg)
{
	struct abuse *a = arg;
	struct xdr_enc x;
	xdr_enc_init(&x, 1u << 20);
	for (unsigned i = 0; i < FLOOD_BATCH; i++)
		if (enc_record(&x, &a->cred, i % 2 ? P_GETATTR : 0, i % 2 ? &a->o.root : NULL,
			       false))
			return NULL;
	size_t len;
	uint8_t *batch = flat(&x, &len);
	uint8_t *in = xmalloc(256 * 1024);
	while (!atomic_load(&a->stop)) {
		int fd = dial(a, 0, 2000);
		if (fd < 0) {
			sleep_ns(100 * NSEC_PER_MSEC);
			continue;
		}
		set_nonblock(fd);
		size_t sent = 0;   /* of the current batch */
		uint32_t need = 0; /* bytes left of the current record */
		unsigned hdr = 0;  /* header bytes seen */
		uint8_t h[4];
		bool dead = false;
		while (!dead && !atomic_load(&a->stop)) {
			struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
			if (poll(&p, 1, 200) <= 0)
				continue;
			if (p.revents & (POLLERR | POLLHUP))
				dead = true;
			if (p.revents & POLLOUT) {
				ssize_t w = send(fd, batch + sent, len - sent,
						 MSG_NOSIGNAL | MSG_DONTWAIT);
				if (w > 0) {
					sent += (size_t)w;
					if (sent == len) {
						sent = 0;
						atomic_fetch_add(&a->flood_calls, FLOOD_BATCH);
					}
				} else if (w < 0 && errno != EAGAIN) {
					dead = true;
				}
			}
			if (!(p.revents & POLLIN))
				continue;
			ssize_t r = read(fd, in, 256 * 1024);
			if (r <= 0) {
				dead = r == 0 || errno != EAGAIN;
				continue;
			}
			/* count whole records (every reply is one fragment) */
			for (ssize_t i = 0; i < r;) {
				if (need) {
					size_t take =
						(size_t)(r - i) < need ? (size_t)(r - i) : need;
					need -= (uint32_t)take;
					i += (ssize_t)take;
					if (!need)
						atomic_fetch_add(&a->flood_replies, 1);
					continue;
				}
				h[hdr++] = in[i++];
				if (hdr == 4) {
					hdr = 0;
					need = ((uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 |
						(uint32_t)h[2] << 8 | h[3]) &
					       REC_LEN_MASK;
					if (!need)
						atomic_fetch_add(&a->flood_replies, 1);
				}
			}
		}
		if (dead)
			atomic_fetch_add(&a->flood_drops, 1);
		close(fd);
	}
	free(in);
	free(batch);
	return NULL;
}

/* ---- life cycle ---- */

struct abuse *abuse_start(const struct abuse_opts *o)
{
	if (!o->idle && !o->noread && !o->halfsent && !o->flood)
		return NULL;
	struct abuse *a = xcalloc(1, sizeof(*a));
	a->o = *o;
	if (svc_parse_addr(o->addr, &a->sa, &a->salen)) {
		free(a);
		return NULL;
	}
	a->cred.flavor = RPC_AUTH_SYS;
	snprintf(a->cred.machine, sizeof(a->cred.machine), "nfs-load-abuse");
	a->threads = xcalloc(2 + o->noread + o->flood, sizeof(pthread_t));
	a->t0 = now_ns();
	if (o->idle)
		pthread_create(&a->threads[a->nthreads++], NULL, idle_main, a);
	if (o->halfsent)
		pthread_create(&a->threads[a->nthreads++], NULL, half_main, a);
	for (unsigned i = 0; i < o->noread; i++)
		pthread_create(&a->threads[a->nthreads++], NULL, noread_main, a);
	for (unsigned i = 0; i < o->flood; i++)
		pthread_create(&a->threads[a->nthreads++], NULL, flood_main, a);
	return a;
}

void abuse_stop(struct abuse *a)
{
	if (!a)
		return;
	atomic_store(&a->stop, true);
	for (unsigned i = 0; i < a->nthreads; i++)
		pthread_join(a->threads[i], NULL);
	a->nthreads = 0;
	a->t1 = now_ns();
}

void abuse_report(struct abuse *a, FILE *f)
{
	if (!a)
		return;
	double s = (double)((a->t1 ? a->t1 : now_ns()) - a->t0) / 1e9;
	if (a->o.idle) {
		fprintf(f, "abuse.idle.connections %u\n", a->o.idle);
		fprintf(f, "abuse.idle.open_at_end %llu\n", (unsigned long long)a->idle_open);
		fprintf(f, "abuse.idle.refused %llu\n", (unsigned long long)a->idle_refused);
		fprintf(f, "abuse.idle.closed_by_server %llu\n",
			(unsigned long long)a->idle_closed);
	}
	if (a->o.noread) {
		fprintf(f, "abuse.noread.clients %u\n", a->o.noread);
		fprintf(f, "abuse.noread.connections %llu\n", (unsigned long long)a->noread_conns);
		fprintf(f, "abuse.noread.reads_sent %llu\n", (unsigned long long)a->noread_calls);
		fprintf(f, "abuse.noread.dropped_by_server %llu\n",
			(unsigned long long)a->noread_drops);
	}
	if (a->o.halfsent) {
		fprintf(f, "abuse.halfsent.connections %u\n", a->o.halfsent);
		fprintf(f, "abuse.halfsent.records %llu\n", (unsigned long long)a->half_records);
		fprintf(f, "abuse.halfsent.dropped_by_server %llu\n",
			(unsigned long long)a->half_drops);
	}
	if (a->o.flood) {
		fprintf(f, "abuse.flood.clients %u\n", a->o.flood);
		fprintf(f, "abuse.flood.calls %llu\n", (unsigned long long)a->flood_calls);
		fprintf(f, "abuse.flood.replies %llu\n", (unsigned long long)a->flood_replies);
		fprintf(f, "abuse.flood.replies_per_s %.0f\n", (double)a->flood_replies / s);
		fprintf(f, "abuse.flood.dropped_by_server %llu\n",
			(unsigned long long)a->flood_drops);
	}
}

void abuse_free(struct abuse *a)
{
	if (!a)
		return;
	free(a->threads);
	free(a);
}
