/*
 * svc_send.c - writing replies and calls to a connection.
 *
 * Whoever completes a message writes it at once if nothing is queued ahead
 * of it, so a reply normally leaves on the worker that produced it with one
 * sendmsg(). What the socket does not take is queued (in order) and the
 * loop finishes it on EPOLLOUT. Sends never block (invariant 5 of svc.h).
 * Lock: svc.conn, held across the sendmsg so two writers never interleave
 * the bytes of two records.
 *
 * tx_stuck_ns says since when the send queue has not moved (the sweep
 * closes the connection after send_timeout): set when a message is queued
 * behind nothing, renewed by every write that makes progress, cleared when
 * the queue empties. Only the queued path reads the clock.
 */
#include <errno.h>
#include <sys/socket.h>

#include "base/msg.h"
#include "base/time.h"
#include "rpc/svc_internal.h"

/* Write as much of o as the socket takes; true when o is complete,
 * false when it would block. -errno in *err on a hard error; bytes written
 * are added to *sent. */
static bool out_write(struct svc_conn *c, struct svc_out *o, int *err, size_t *sent)
{
	while (o->idx < o->niov) {
		struct msghdr mh = {.msg_iov = o->iov + o->idx,
				    .msg_iovlen = (size_t)(o->niov - o->idx)};
		if (mh.msg_iovlen > 1024)
			mh.msg_iovlen = 1024;
		ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				*err = -errno;
			return false;
		}
		counter_add(&c->svc->st.bytes_out, (uint64_t)n);
		*sent += (size_t)n;
		size_t left = (size_t)n;
		while (left && o->idx < o->niov) {
			struct iovec *v = &o->iov[o->idx];
			if (left >= v->iov_len) {
				left -= v->iov_len;
				o->idx++;
			} else {
				v->iov_base = (char *)v->iov_base + left;
				v->iov_len -= left;
				left = 0;
			}
		}
		while (o->idx < o->niov && o->iov[o->idx].iov_len == 0)
			o->idx++;
	}
	return true;
}

void conn_send(struct svc_conn *c, struct svc_out *o)
{
	int err = 0;
	bool done = false;
	size_t sent = 0;
	mutex_lock(&c->lock);
	if (c->dead) {
		done = true;
		goto out_unlock;
	}
	if (list_empty(&c->outq) && out_write(c, o, &err, &sent)) {
		done = true;
		goto out_unlock;
	}
	if (err) {
		done = true;
		goto out_unlock;
	}
	if (list_empty(&c->outq))
		c->tx_stuck_ns = now_ns();
	list_add_tail(&o->link, &c->outq);
	c->outq_bytes += o->bytes;
	conn_update_events_locked(c);
out_unlock:
	mutex_unlock(&c->lock);
	if (err)
		conn_kill(c, NULL);
	if (done)
		o->done(o);
}

void conn_flush(struct svc_conn *c)
{
	struct list finished;
	int err = 0;
	size_t sent = 0;
	list_init(&finished);
	mutex_lock(&c->lock);
	while (!list_empty(&c->outq)) {
		struct svc_out *o = list_first_entry(&c->outq, struct svc_out, link);
		if (!out_write(c, o, &err, &sent))
			break;
		list_move_tail(&o->link, &finished);
		c->outq_bytes -= o->bytes;
	}
	if (list_empty(&c->outq))
		c->tx_stuck_ns = 0;
	else if (sent)
		c->tx_stuck_ns = now_ns();
	/* reading resumes when the finished replies give their space back */
	conn_update_events_locked(c);
	mutex_unlock(&c->lock);
	if (err)
		conn_kill(c, NULL);
	struct svc_out *o, *t;
	list_for_each_entry_safe(o, t, &finished, link)
	{
		list_del(&o->link);
		o->done(o);
	}
}
