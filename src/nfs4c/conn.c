/*
 * conn.c - one client connection: the receiver thread, calls matched by
 * xid, whole-record sends. See conn.h for the design and invariants.
 */
#include "nfs4c/conn.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/iobuf.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "rpc/clnt.h"
#include "rpc/record.h"
#include "rpc/rpc_msg.h"
#include "rpc/xdr.h"

#define CONN_DEFAULT_MAX_RECORD (4u << 20)
#define CONN_READ_CHUNK		(64u << 10)

static const struct lock_class conn_send_class = LOCK_CLASS(NFS4C_SEND);
static const struct lock_class conn_class = LOCK_CLASS(NFS4C_CONN);

struct nfs4c_conn {
	int fd;
	struct nfs4c_conn_cfg cfg;
	_Atomic int refs;

	struct mutex send_lock; /* socket writes (invariant 3) */

	struct mutex lock; /* everything below */
	struct list calls; /* registered struct nfs4c_call, by link */
	int err;	   /* 0 while OPEN */
	struct nfs4c_conn_stats st;

	pthread_t rx;
	bool rx_started;
};

void nfs4c_call_init(struct nfs4c_call *call)
{
	memset(call, 0, sizeof(*call));
	list_init(&call->link);
	cond_init(&call->cv);
}

void nfs4c_call_destroy(struct nfs4c_call *call)
{
	BUG_ON(call->registered);
	iobuf_free(call->reply);
	call->reply = NULL;
	cond_destroy(&call->cv);
}

uint32_t nfs4c_next_xid(void)
{
	static _Atomic uint32_t next;
	static _Atomic bool seeded;
	if (!atomic_load(&seeded)) {
		uint32_t r = 0;
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (uint32_t)now_ns();
		uint32_t zero = 0;
		atomic_compare_exchange_strong(&next, &zero, r | 1);
		atomic_store(&seeded, true);
	}
	return atomic_fetch_add(&next, 1);
}

bool nfs4c_conn_err_is_transport(int err)
{
	switch (err) {
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -ECONNABORTED:
	case -EPIPE:
	case -ENOTCONN:
	case -ESHUTDOWN:
	case -ETIMEDOUT:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ENETDOWN:
		return true;
	default:
		return false;
	}
}

/* ---- death ---------------------------------------------------------------- */

/* Caller holds c->lock. Invariant 2: every registered call completes once. */
static void conn_kill_locked(struct nfs4c_conn *c, int err)
{
	assert_locked(&c->lock);
	if (c->err)
		return;
	c->err = err;
	struct nfs4c_call *call, *tmp;
	list_for_each_entry_safe (call, tmp, &c->calls, link) {
		list_del(&call->link);
		call->registered = false;
		call->done = true;
		call->err = err;
		cond_signal(&call->cv);
	}
	/* wakes the receiver out of read() */
	shutdown(c->fd, SHUT_RDWR);
}

void nfs4c_conn_shutdown(struct nfs4c_conn *c, int err)
{
	mutex_lock(&c->lock);
	conn_kill_locked(c, err);
	mutex_unlock(&c->lock);
}

int nfs4c_conn_error(struct nfs4c_conn *c)
{
	mutex_lock(&c->lock);
	int err = c->err;
	mutex_unlock(&c->lock);
	return err;
}

/* ---- receiving ------------------------------------------------------------ */

static struct nfs4c_call *find_call_locked(struct nfs4c_conn *c, uint32_t xid)
{
	struct nfs4c_call *call;
	list_for_each_entry (call, &c->calls, link) {
		if (call->xid == xid)
			return call;
	}
	return NULL;
}

/* One complete record; rec is ours to hand on or free. Returns 0, or the
 * error that kills the connection. */
static int deliver(struct nfs4c_conn *c, uint8_t *rec, size_t len)
{
	struct xdr_dec x;
	uint32_t xid, type;
	xdr_dec_init(&x, rec, len);
	if (rpc_dec_xid_type(&x, &xid, &type) || (type != RPC_CALL && type != RPC_REPLY)) {
		iobuf_free(rec);
		return -EPROTO;
	}
	if (type == RPC_CALL) {
		mutex_lock(&c->lock);
		c->st.cb_calls++;
		if (!c->cfg.on_call)
			c->st.cb_dropped++;
		mutex_unlock(&c->lock);
		if (c->cfg.on_call)
			c->cfg.on_call(c, rec, len, c->cfg.on_call_arg);
		else
			iobuf_free(rec);
		return 0;
	}
	mutex_lock(&c->lock);
	struct nfs4c_call *call = find_call_locked(c, xid);
	if (call) {
		c->st.replies++;
		list_del(&call->link);
		call->registered = false;
		call->done = true;
		call->err = 0;
		call->reply = rec;
		call->reply_len = len;
		rec = NULL;
		cond_signal(&call->cv);
	} else {
		c->st.unmatched++;
	}
	mutex_unlock(&c->lock);
	iobuf_free(rec);
	return 0;
}

static void *conn_rx(void *arg)
{
	struct nfs4c_conn *c = arg;
	struct rec_asm r;
	uint8_t *chunk = xmalloc(CONN_READ_CHUNK);
	int err = 0;
	rec_init(&r, c->cfg.max_record);
	while (!err) {
		uint8_t *space;
		size_t want = rec_direct(&r, &space);
		bool direct = want > 0;
		if (!direct) {
			space = chunk;
			want = CONN_READ_CHUNK;
		}
		ssize_t n = read(c->fd, space, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n == 0 ? -ECONNRESET : -errno;
			break;
		}
		size_t off = 0;
		int ret = 0;
		if (direct) {
			ret = rec_direct_commit(&r, (size_t)n);
			off = (size_t)n;
		}
		for (;;) {
			if (ret == 1) {
				size_t len;
				uint8_t *rec = rec_take(&r, &len);
				if (!rec) {
					/* an empty record: not even an xid */
					err = -EPROTO;
					break;
				}
				err = deliver(c, rec, len);
				if (err)
					break;
			} else if (ret < 0) {
				err = ret; /* -EMSGSIZE: invariant 4 */
				break;
			}
			if (off == (size_t)n)
				break;
			size_t used;
			ret = rec_feed(&r, space + off, (size_t)n - off, &used);
			off += used;
			if (ret == 0 && off == (size_t)n)
				break;
		}
	}
	rec_destroy(&r);
	free(chunk);
	nfs4c_conn_shutdown(c, err);
	return NULL;
}

/* ---- opening and closing -------------------------------------------------- */

int nfs4c_conn_open_fd(int fd, const struct nfs4c_conn_cfg *cfg, struct nfs4c_conn **out)
{
	struct nfs4c_conn *c = xcalloc(1, sizeof(*c));
	if (cfg)
		c->cfg = *cfg;
	if (!c->cfg.max_record)
		c->cfg.max_record = CONN_DEFAULT_MAX_RECORD;
	if (!c->cfg.send_timeout_ms)
		c->cfg.send_timeout_ms = 60000;
	c->fd = fd;
	atomic_init(&c->refs, 1);
	mutex_init(&c->send_lock, &conn_send_class);
	mutex_init(&c->lock, &conn_class);
	list_init(&c->calls);
	/* a write that blocks this long kills the connection (invariant 3);
	 * reads block forever: shutdown() ends them */
	struct timeval tv = {.tv_sec = c->cfg.send_timeout_ms / 1000,
			     .tv_usec = (c->cfg.send_timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	struct timeval zero = {0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof(zero));
	int err = -pthread_create(&c->rx, NULL, conn_rx, c);
	if (err) {
		close(fd);
		mutex_destroy(&c->lock);
		mutex_destroy(&c->send_lock);
		free(c);
		return err;
	}
	c->rx_started = true;
	*out = c;
	return 0;
}

int nfs4c_conn_open(const char *addr, const struct nfs4c_conn_cfg *cfg, struct nfs4c_conn **out)
{
	unsigned ms = cfg && cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 10000;
	int fd = rpc_clnt_connect(addr, ms);
	if (fd < 0)
		return fd;
	return nfs4c_conn_open_fd(fd, cfg, out);
}

void nfs4c_conn_get(struct nfs4c_conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void nfs4c_conn_put(struct nfs4c_conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	/* the last reference: nfs4c_conn_close() has joined the receiver */
	BUG_ON(c->rx_started);
	BUG_ON(!list_empty(&c->calls));
	mutex_destroy(&c->lock);
	mutex_destroy(&c->send_lock);
	free(c);
}

void nfs4c_conn_close(struct nfs4c_conn *c)
{
	nfs4c_conn_shutdown(c, -ESHUTDOWN);
	if (c->rx_started) {
		pthread_join(c->rx, NULL);
		c->rx_started = false;
	}
	/* a sender still inside a write holds send_lock; it fails fast on
	 * the shut-down socket, so taking the lock here does not wait long */
	mutex_lock(&c->send_lock);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	mutex_unlock(&c->send_lock);
	nfs4c_conn_put(c);
}

/* ---- sending -------------------------------------------------------------- */

/* Write the record mark and iov whole. Caller holds send_lock. */
static int send_record_locked(struct nfs4c_conn *c, const struct iovec *iov, int niov)
{
	struct iovec v[72];
	size_t len = 0;
	uint8_t mark[4];
	if (niov < 0 || (size_t)niov + 1 > ARRAY_SIZE(v))
		return -EINVAL;
	for (int i = 0; i < niov; i++)
		len += iov[i].iov_len;
	if (len > REC_LEN_MASK)
		return -EMSGSIZE;
	if (c->fd < 0)
		return -ESHUTDOWN;
	uint32_t h = REC_LAST_FRAG | (uint32_t)len;
	mark[0] = (uint8_t)(h >> 24);
	mark[1] = (uint8_t)(h >> 16);
	mark[2] = (uint8_t)(h >> 8);
	mark[3] = (uint8_t)h;
	v[0] = (struct iovec){mark, 4};
	memcpy(v + 1, iov, (size_t)niov * sizeof(*iov));
	struct iovec *p = v;
	int n = niov + 1;
	while (n > 0) {
		struct msghdr mh = {.msg_iov = p, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		}
		size_t done = (size_t)w;
		while (n > 0 && done >= p->iov_len) {
			done -= p->iov_len;
			p++;
			n--;
		}
		if (n > 0) {
			p->iov_base = (uint8_t *)p->iov_base + done;
			p->iov_len -= done;
		}
	}
	return 0;
}

int nfs4c_conn_send(struct nfs4c_conn *c, const struct iovec *iov, int niov)
{
	int err = nfs4c_conn_error(c);
	if (err)
		return err;
	mutex_lock(&c->send_lock);
	err = send_record_locked(c, iov, niov);
	mutex_unlock(&c->send_lock);
	if (err)
		nfs4c_conn_shutdown(c, err == -EINVAL || err == -EMSGSIZE ? -EPROTO : err);
	return err;
}

int nfs4c_conn_call(struct nfs4c_conn *c, struct nfs4c_call *call, const struct iovec *iov,
		    int niov)
{
	mutex_lock(&c->lock);
	if (c->err) {
		int err = c->err;
		mutex_unlock(&c->lock);
		return err;
	}
	if (find_call_locked(c, call->xid)) {
		mutex_unlock(&c->lock);
		return -EEXIST;
	}
	iobuf_free(call->reply);
	call->reply = NULL;
	call->reply_len = 0;
	call->done = false;
	call->err = 0;
	call->registered = true;
	list_add_tail(&call->link, &c->calls); /* invariant 1: before any byte */
	c->st.calls++;
	mutex_unlock(&c->lock);

	/* a failed send reaches the caller through nfs4c_conn_wait() */
	nfs4c_conn_send(c, iov, niov);
	return 0;
}

int nfs4c_conn_wait(struct nfs4c_conn *c, struct nfs4c_call *call, uint64_t timeout_ns)
{
	uint64_t deadline = timeout_ns ? now_ns() + timeout_ns : 0;
	mutex_lock(&c->lock);
	while (!call->done) {
		if (!deadline) {
			cond_wait(&call->cv, &c->lock);
			continue;
		}
		uint64_t now = now_ns();
		if (now >= deadline)
			break;
		cond_timedwait_ns(&call->cv, &c->lock, deadline - now);
	}
	int err = call->done ? call->err : -ETIMEDOUT;
	mutex_unlock(&c->lock);
	return err;
}

bool nfs4c_conn_cancel(struct nfs4c_conn *c, struct nfs4c_call *call)
{
	mutex_lock(&c->lock);
	bool was = call->registered;
	if (was) {
		list_del(&call->link);
		call->registered = false;
	}
	mutex_unlock(&c->lock);
	return was;
}

void nfs4c_conn_stats(struct nfs4c_conn *c, struct nfs4c_conn_stats *st)
{
	mutex_lock(&c->lock);
	*st = c->st;
	mutex_unlock(&c->lock);
}
