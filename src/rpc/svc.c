/*
 * svc.c - server life cycle, listeners and the event loop.
 *
 * The loop owns: accepting, reading and record reassembly (struct rec_asm
 * per connection), closing connections, firing timers, and flushing send
 * queues that would block. A complete record becomes a struct svc_req and
 * is queued to the worker pool; the loop never looks inside it.
 *
 * Connection life: accept -> registered in epoll (the loop's reference) ->
 * conn_kill() from any thread marks it dead and shuts the socket down ->
 * the loop sees the hang-up, unregisters it, frees its held calls, fails
 * its pending calls, queues the protocol's closed() notice and drops its
 * reference -> the fd is closed by the last svc_conn_put(), so a worker
 * that still writes can never hit a reused descriptor.
 *
 * The connection limit: at max_conns, accept looks for the idle connection
 * quiet longest (svc.h) and kills it; the victim stops counting in nconns
 * at once (counted), so the new connection takes its place while the
 * victim's close completes on a later turn.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <malloc.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "rpc/svc_internal.h"

const struct lock_class svc_conns_class = LOCK_CLASS(SVC_CONNS);
const struct lock_class svc_drc_class = LOCK_CLASS(SVC_DRC);
const struct lock_class svc_conn_class = LOCK_CLASS(SVC_CONN);
const struct lock_class svc_parked_class = LOCK_CLASS(SVC_PARKED);
const struct lock_class svc_timers_class = LOCK_CLASS(SVC_TIMERS);
const struct lock_class svc_pool_class = LOCK_CLASS(SVC_POOL);

/* Reads of small records go through a 16 KiB staging buffer, at most
 * READS_PER_EVENT of them and no more once RECORDS_PER_EVENT records came
 * out: a connection that pipelines a thousand calls gets them read over
 * several turns of the loop, and the other connections' calls are read
 * (and, with the pool's round robin, served) in between. */
#define STAGING_SIZE  (16 * 1024)
#define RECORDS_PER_EVENT 64
#define DIRECT_MIN    (16 * 1024)
#define READS_PER_EVENT 8
#define TIMERS_PER_TURN 64
/* Past max_buffered, a connection whose replies have not moved for this
 * long is closed (svc.h). */
#define PRESSURE_SEND_NS NSEC_PER_SEC
/* Calls and replies of all connections that held at least this much and
 * then went down to a quarter of it: give the memory back (sweep_fire). */
#define TRIM_PEAK (32u << 20)

void svc_config_default(struct svc_config *c)
{
	memset(c, 0, sizeof(*c));
	c->threads = 8;
	c->max_record = 1024 * 1024 + 64 * 1024;
	c->max_reply = 1024 * 1024 + 64 * 1024;
	c->max_conns = 1024;
	c->conn_max_buffered = 16 * 1024 * 1024;
	c->max_buffered = 128 * 1024 * 1024;
	c->stall_timeout_ns = 30 * NSEC_PER_SEC;
	c->partial_max = 128 * 1024 * 1024;
	c->idle_timeout_ns = 6 * 60 * NSEC_PER_SEC;
	c->send_timeout_ns = 60 * NSEC_PER_SEC;
	c->drc_max_entries = 4096;
	c->drc_max_bytes = 8 * 1024 * 1024;
}

static void sweep_fire(struct svc_timer *t);
static void accept_retry_fire(struct svc_timer *t);

struct svc *svc_create(const struct svc_config *cfg)
{
	struct svc *s = xcalloc(1, sizeof(*s));
	s->cfg = *cfg;
	if (!s->cfg.threads)
		s->cfg.threads = 1;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->epfd < 0 || s->evfd < 0)
		panic("rpc: epoll/eventfd: %s", strerror(errno));
	s->evpe.kind = POLL_EVENT;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->evpe};
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &ev))
		panic("rpc: epoll_ctl: %s", strerror(errno));
	pool_init(&s->pool);
	timers_init(&s->timers);
	timer_init(&s->sweep, sweep_fire);
	timer_init(&s->accept_retry, accept_retry_fire);
	list_init(&s->timer_batch);
	mutex_init(&s->conns_lock, &svc_conns_class);
	list_init(&s->conns);
	mutex_init(&s->parked_lock, &svc_parked_class);
	list_init(&s->parked);
	s->drc = drc_create(s->cfg.drc_max_entries, s->cfg.drc_max_bytes);
	s->next_xid = (uint32_t)(wall_ns() ^ (uint64_t)getpid() << 16);
	return s;
}

int svc_add_program(struct svc *s, const struct svc_program *p, void *ctx)
{
	if (s->nprogs == SVC_MAX_PROGS || s->started || !p->nversions)
		return -EINVAL;
	/* the same program again only with versions of its own */
	for (unsigned i = 0; i < s->nprogs; i++) {
		const struct svc_program *q = s->progs[i].p;
		if (q->prog != p->prog)
			continue;
		for (uint32_t a = 0; a < q->nversions; a++)
			for (uint32_t b = 0; b < p->nversions; b++)
				if (q->versions[a].vers == p->versions[b].vers)
					return -EEXIST;
	}
	struct svc_prog_ent *pe = &s->progs[s->nprogs++];
	pe->p = p;
	pe->ctx = ctx;
	pe->low = UINT32_MAX;
	pe->high = 0;
	pe->proc_calls = xcalloc(p->nversions, sizeof(*pe->proc_calls));
	pe->proc_lat = xcalloc(p->nversions, sizeof(*pe->proc_lat));
	for (uint32_t v = 0; v < p->nversions; v++) {
		pe->low = MIN(pe->low, p->versions[v].vers);
		pe->high = MAX(pe->high, p->versions[v].vers);
		pe->proc_calls[v] = xcalloc(p->versions[v].nprocs ? p->versions[v].nprocs : 1,
					    sizeof(counter_t));
		pe->proc_lat[v] = xcalloc(p->versions[v].nprocs ? p->versions[v].nprocs : 1,
					  sizeof(struct stat_lat));
	}
	return 0;
}

int svc_parse_addr(const char *str, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port;
	memset(ss, 0, sizeof(*ss));
	if (str[0] == '[') {
		const char *close = strchr(str, ']');
		if (!close || close[1] != ':' || (size_t)(close - str - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, str + 1, (size_t)(close - str - 1));
		host[close - str - 1] = '\0';
		port = close + 2;
	} else {
		const char *colon = strrchr(str, ':');
		if (!colon || (size_t)(colon - str) >= sizeof(host))
			return -EINVAL;
		memcpy(host, str, (size_t)(colon - str));
		host[colon - str] = '\0';
		port = colon + 1;
	}
	char *end;
	errno = 0;
	unsigned long pn = strtoul(port, &end, 10);
	if (!*port || *end || errno || pn > 65535)
		return -EINVAL;
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)pn);
		*len = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)pn);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

int svc_listen(struct svc *s, const char *addr, uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, err;
	if (s->nlisteners == SVC_MAX_LISTENERS)
		return -ENOSPC;
	err = svc_parse_addr(addr, &ss, &len);
	if (err)
		return err;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 1024))
		goto out_err;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		goto out_err;
	struct svc_listener *l = &s->listeners[s->nlisteners];
	l->pe.kind = POLL_LISTENER;
	l->fd = fd;
	l->addr = ss;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &l->pe};
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev))
		goto out_err;
	s->nlisteners++;
	*port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					      : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
out_err:
	err = -errno;
	close(fd);
	return err;
}

bool svc_warn_ok(struct svc *s)
{
	uint64_t sec = now_ns() / NSEC_PER_SEC;
	uint64_t w = atomic_load(&s->warn_window);
	if (w != sec && atomic_compare_exchange_strong(&s->warn_window, &w, sec))
		atomic_store(&s->warn_count, 0);
	return atomic_fetch_add(&s->warn_count, 1) < 5;
}

static const char *peer_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	}
	return buf;
}

void svc_addr_name(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const void *addr = ss->ss_family == AF_INET6
				   ? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
				   : (const void *)&((const struct sockaddr_in *)ss)->sin_addr;
	if ((ss->ss_family != AF_INET && ss->ss_family != AF_INET6) ||
	    !inet_ntop(ss->ss_family, addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

/* ---- connections ---- */

void svc_conn_get(struct svc_conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void svc_conn_put(struct svc_conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	BUG_ON(!list_empty(&c->outq) || !list_empty(&c->held));
	const struct svc_conn_ops *ops = atomic_load(&c->data_ops);
	if (ops && ops->free)
		ops->free(c->data); /* invariant 9 */
	rec_destroy(&c->rec);
	close(c->fd);
	mutex_destroy(&c->lock);
	free(c);
}

int svc_conn_set_data(struct svc_conn *c, const struct svc_conn_ops *ops, void *data)
{
	int err = 0;
	mutex_lock(&c->lock);
	if (c->dead) {
		err = -ENOTCONN; /* conn_close_loop() has read data_ops, or will see dead */
	} else if (atomic_load_explicit(&c->data_ops, memory_order_relaxed)) {
		err = -EBUSY;
	} else {
		c->data = data;
		atomic_store_explicit(&c->data_ops, ops, memory_order_release);
	}
	mutex_unlock(&c->lock);
	return err;
}

void *svc_conn_data(const struct svc_conn *c, const struct svc_conn_ops *ops)
{
	const struct svc_conn_ops *o =
		atomic_load_explicit(&((struct svc_conn *)c)->data_ops, memory_order_acquire);
	return o && o == ops ? c->data : NULL;
}

static void conn_closed_work(struct svc_work *w)
{
	struct svc_conn *c = container_of(w, struct svc_conn, closed_work);
	atomic_load(&c->data_ops)->closed(c, c->data);
	svc_conn_put(c); /* conn_close_loop()'s */
}

const struct sockaddr_storage *svc_conn_peer(const struct svc_conn *c)
{
	return &c->peer;
}

uint64_t svc_conn_id(const struct svc_conn *c)
{
	return c->id;
}

bool svc_conn_alive(const struct svc_conn *c)
{
	return atomic_load(&c->alive);
}

void conn_kill(struct svc_conn *c, const char *why)
{
	mutex_lock(&c->lock);
	if (!c->dead) {
		c->dead = true;
		atomic_store(&c->alive, false);
		if (why && svc_warn_ok(c->svc)) {
			char p[80];
			msg_warn("rpc: dropping connection from %s: %s",
				 peer_str(&c->peer, p, sizeof(p)), why);
		}
		/* the loop sees the hang-up and unregisters the connection */
		shutdown(c->fd, SHUT_RDWR);
	}
	mutex_unlock(&c->lock);
}

void conn_update_events_locked(struct svc_conn *c)
{
	assert_locked(&c->lock);
	if (c->dead)
		return;
	uint32_t ev = EPOLLRDHUP;
	if (!c->rx_paused)
		ev |= EPOLLIN;
	if (!list_empty(&c->outq))
		ev |= EPOLLOUT;
	if (ev == c->events)
		return;
	struct epoll_event e = {.events = ev, .data.ptr = &c->pe};
	if (epoll_ctl(c->svc->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->events = ev;
}

/* Past max_buffered? */
static bool svc_pressure(struct svc *s)
{
	return s->cfg.max_buffered && atomic_load(&s->buffered) > s->cfg.max_buffered;
}

void conn_pace_locked(struct svc_conn *c)
{
	assert_locked(&c->lock);
	size_t buffered = c->rx_bytes + atomic_load(&c->reserved);
	size_t limit = c->svc->cfg.conn_max_buffered;
	bool held = atomic_load_explicit(&c->nheld, memory_order_relaxed) > 0;
	/* past the server's limit, one call at a time */
	bool one = buffered && svc_pressure(c->svc);
	if (!c->rx_paused && (buffered > limit || held || one))
		c->rx_paused = true;
	else if (c->rx_paused && buffered <= limit / 2 && !held && !one)
		c->rx_paused = false;
	conn_update_events_locked(c);
}

void conn_admit_locked(struct svc_conn *c, struct list *admitted)
{
	assert_locked(&c->lock);
	struct svc *s = c->svc;
	size_t limit = s->cfg.conn_max_buffered, total_max = s->cfg.max_buffered;
	while (!list_empty(&c->held)) {
		struct svc_req *rq = list_first_entry(&c->held, struct svc_req, work.link);
		size_t r = atomic_load(&c->reserved);
		if (r && (r + rq->reserve > limit ||
			  (total_max && atomic_load(&s->buffered) + rq->reserve > total_max)))
			break;
		atomic_fetch_add(&c->reserved, rq->reserve);
		atomic_fetch_add(&s->buffered, rq->reserve);
		rq->reserved = true;
		list_move_tail(&rq->work.link, admitted);
		atomic_store_explicit(&c->nheld, atomic_load(&c->nheld) - 1, memory_order_relaxed);
	}
}

void conn_account(struct svc_conn *c, long rx_delta, size_t unreserve)
{
	struct list admitted;
	list_init(&admitted);
	mutex_lock(&c->lock);
	c->rx_bytes += (size_t)rx_delta;
	/* a negative delta wraps to the same subtraction */
	atomic_fetch_add(&c->svc->buffered, (size_t)rx_delta - unreserve);
	if (unreserve) {
		atomic_fetch_sub(&c->reserved, unreserve);
		conn_admit_locked(c, &admitted);
	}
	conn_pace_locked(c);
	mutex_unlock(&c->lock);
	pool_queue_list(&c->svc->pool, &c->workq, &admitted);
}

/* Nothing in flight either way: no call read and not yet released, no
 * call to the client pending, no reply queued; conn lock held. The partial
 * record is the loop's to check. */
static bool conn_quiet_locked(struct svc_conn *c)
{
	assert_locked(&c->lock);
	if (c->dead || c->rx_bytes || !list_empty(&c->outq))
		return false;
	for (int i = 0; i < SVC_CALL_BUCKETS; i++)
		if (!list_empty(&c->calls[i]))
			return false;
	return true;
}

/* Loop thread, svc.conns held: the idle connection quiet longest, or
 * NULL. Only at the connection limit: a walk of every connection. */
static struct svc_conn *oldest_idle_locked(struct svc *s)
{
	struct svc_conn *c, *best = NULL;
	assert_locked(&s->conns_lock);
	list_for_each_entry(c, &s->conns, link)
	{
		if (!c->counted || rec_partial(&c->rec) ||
		    (best && c->last_rx_ns >= best->last_rx_ns))
			continue;
		mutex_lock(&c->lock);
		bool quiet = conn_quiet_locked(c);
		mutex_unlock(&c->lock);
		if (quiet)
			best = c;
	}
	return best;
}

static void listeners_set(struct svc *s, uint32_t events)
{
	for (unsigned i = 0; i < s->nlisteners; i++) {
		struct epoll_event ev = {.events = events, .data.ptr = &s->listeners[i].pe};
		epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->listeners[i].fd, &ev);
	}
}

/* Out of descriptors: a level-triggered listener would spin the loop, so
 * stop accepting for a while (connections wait in the backlog). */
static void listeners_pause(struct svc *s)
{
	if (s->accept_retry.idx != SIZE_MAX)
		return;
	if (svc_warn_ok(s))
		msg_warn("rpc: accept: %s; pausing accepts for 100 ms", strerror(errno));
	listeners_set(s, 0);
	timer_arm(s, &s->accept_retry, now_ns() + 100 * NSEC_PER_MSEC);
}

static void accept_retry_fire(struct svc_timer *t)
{
	struct svc *s = container_of(t, struct svc, accept_retry);
	if (!atomic_load(&s->stopping))
		listeners_set(s, EPOLLIN);
}

static void accept_one(struct svc *s, struct svc_listener *l)
{
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(l->fd, (struct sockaddr *)&peer, &plen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				listeners_pause(s);
			return;
		}
		struct svc_conn *victim = NULL;
		mutex_lock(&s->conns_lock);
		if (s->nconns >= s->cfg.max_conns) {
			victim = oldest_idle_locked(s);
			if (victim) {
				victim->counted = false;
				s->nconns--;
			}
		}
		bool full = s->nconns >= s->cfg.max_conns;
		if (!full)
			s->nconns++;
		mutex_unlock(&s->conns_lock);
		if (victim) {
			/* still on the list with the loop's reference: only this
			 * thread closes connections */
			counter_inc(&s->st.conns_evicted);
			conn_kill(victim, NULL);
		}
		if (full) {
			counter_inc(&s->st.conns_refused);
			if (svc_warn_ok(s))
				msg_warn("rpc: connection limit (%u) reached, none idle: refusing a "
					 "client",
					 s->cfg.max_conns);
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct svc_conn *c = xcalloc(1, sizeof(*c));
		c->pe.kind = POLL_CONN;
		c->svc = s;
		c->refs = 1; /* the loop's */
		c->fd = fd;
		c->peer = peer;
		c->id = ++s->next_conn_id;
		c->counted = true;
		mutex_init(&c->lock, &svc_conn_class);
		atomic_store(&c->alive, true);
		list_init(&c->outq);
		list_init(&c->held);
		workq_init(&c->workq);
		for (int i = 0; i < SVC_CALL_BUCKETS; i++)
			list_init(&c->calls[i]);
		rec_init(&c->rec, s->cfg.max_record);
		c->last_rx_ns = now_ns();
		c->events = EPOLLIN | EPOLLRDHUP;
		struct epoll_event ev = {.events = c->events, .data.ptr = &c->pe};
		mutex_lock(&s->conns_lock);
		list_add_tail(&c->link, &s->conns);
		mutex_unlock(&s->conns_lock);
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			msg_err("rpc: epoll_ctl: %s", strerror(errno));
			mutex_lock(&s->conns_lock);
			list_del(&c->link);
			if (c->counted)
				s->nconns--;
			mutex_unlock(&s->conns_lock);
			svc_conn_put(c);
			continue;
		}
		counter_inc(&s->st.conns_accepted);
	}
}

/* The loop's half of closing: unregister, discard queued output, fail
 * pending calls, drop the loop's reference. */
static void conn_close_loop(struct svc_conn *c)
{
	struct svc *s = c->svc;
	struct list outs, failed, held;
	list_init(&outs);
	list_init(&failed);
	list_init(&held);

	mutex_lock(&c->lock);
	c->dead = true;
	atomic_store(&c->alive, false);
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	shutdown(c->fd, SHUT_RDWR);
	list_splice_tail(&c->outq, &outs);
	c->outq_bytes = 0;
	c->tx_stuck_ns = 0;
	list_splice_tail(&c->held, &held);
	atomic_store(&c->nheld, 0);
	call_fail_all_locked(c, &failed);
	/* set_data() after this sees dead: closed() is queued exactly once */
	const struct svc_conn_ops *ops = atomic_load(&c->data_ops);
	mutex_unlock(&c->lock);

	struct svc_out *o, *t;
	assert_no_locks(); /* done() runs with none held */
	list_for_each_entry_safe(o, t, &outs, link)
	{
		list_del(&o->link);
		o->done(o);
	}
	/* held calls never ran: drop them (their DRC entries are aborted) */
	struct svc_work *w, *wt;
	list_for_each_entry_safe(w, wt, &held, link)
	{
		list_del(&w->link);
		svc_req_put(container_of(w, struct svc_req, work));
	}
	call_finish_failed(&failed);
	if (ops && ops->closed) {
		svc_conn_get(c);
		c->closed_work.fn = conn_closed_work;
		pool_queue(&s->pool, &c->workq, &c->closed_work);
	}

	mutex_lock(&s->conns_lock);
	list_del(&c->link);
	if (c->counted)
		s->nconns--;
	c->counted = false;
	mutex_unlock(&s->conns_lock);
	counter_inc(&s->st.conns_closed);
	atomic_store_explicit(&s->partial_bytes,
			      atomic_load_explicit(&s->partial_bytes, memory_order_relaxed) -
				      c->rec_counted,
			      memory_order_relaxed);
	c->rec_counted = 0;
	rec_destroy(&c->rec);
	rec_init(&c->rec, s->cfg.max_record);
	svc_conn_put(c);
}

/* Turn a complete record into a request queued on works. */
/* A whole record: for the pool (works), or for the loop itself (inl). */
static void record_done(struct svc_conn *c, struct list *works, struct list *inl,
			size_t *accounted, size_t *records)
{
	size_t len;
	void *alloc;
	(*records)++;
	uint8_t *rec = rec_take_at(&c->rec, &len, &alloc);
	struct svc_req *rq = req_new(c, rec, len, alloc);
	*accounted += rq->accounted;
	list_add_tail(&rq->work.link, req_is_inline(rq) ? inl : works);
}

/* Loop thread: count what c's incomplete record holds now in
 * svc.partial_bytes (the loop is its only writer: no read-modify-write
 * needed). */
static void partial_account(struct svc_conn *c)
{
	struct svc *s = c->svc;
	size_t held = rec_partial(&c->rec) ? c->rec.cap : 0;
	if (held == c->rec_counted)
		return;
	size_t total = atomic_load_explicit(&s->partial_bytes, memory_order_relaxed);
	atomic_store_explicit(&s->partial_bytes, total - c->rec_counted + held,
			      memory_order_relaxed);
	c->rec_counted = held;
}

/* Loop thread: incomplete records hold more than partial_max: close the
 * connections whose records began earliest until they do not (svc.h). A
 * victim's record is freed at once (the loop owns it, and reads nothing
 * more from a dead connection); the connection itself closes on this turn
 * of the loop or the next. Only at the limit: a walk of every
 * connection. */
static void partial_enforce(struct svc *s)
{
	while (atomic_load_explicit(&s->partial_bytes, memory_order_relaxed) > s->cfg.partial_max) {
		struct svc_conn *c, *oldest = NULL;
		mutex_lock(&s->conns_lock);
		list_for_each_entry(c, &s->conns, link)
		{
			if (c->rec_counted && atomic_load(&c->alive) &&
			    (!oldest || c->rec_start_ns < oldest->rec_start_ns))
				oldest = c;
		}
		mutex_unlock(&s->conns_lock);
		/* still listed with the loop's reference: only this thread
		 * closes connections */
		if (!oldest)
			break;
		size_t total = atomic_load_explicit(&s->partial_bytes, memory_order_relaxed);
		atomic_store_explicit(&s->partial_bytes, total - oldest->rec_counted,
				      memory_order_relaxed);
		oldest->rec_counted = 0;
		counter_inc(&s->st.conns_partial);
		conn_kill(oldest, "incomplete records past the server's limit");
		rec_destroy(&oldest->rec);
		rec_init(&oldest->rec, s->cfg.max_record);
	}
}

/* Read what is there; false when the connection must close. */
static bool conn_read(struct svc_conn *c, uint8_t *staging)
{
	struct svc *s = c->svc;
	size_t accounted = 0, records = 0;
	bool ok = true;
	struct list w, inl;
	struct list *works = &w;
	list_init(works);
	list_init(&inl);
	for (int i = 0; i < READS_PER_EVENT && ok && records < RECORDS_PER_EVENT; i++) {
		uint8_t *space;
		if (!rec_partial(&c->rec))
			rec_align(&c->rec,
				  atomic_load_explicit(&c->bulk_off, memory_order_relaxed));
		size_t direct = rec_direct(&c->rec, &space);
		ssize_t n;
		if (direct >= DIRECT_MIN) {
			n = read(c->fd, space, direct);
			if (n > 0) {
				counter_add(&s->st.bytes_in, (uint64_t)n);
				c->last_rx_ns = now_ns();
				if (rec_direct_commit(&c->rec, (size_t)n) == 1) {
					record_done(c, works, &inl, &accounted, &records);
					c->rec_start_ns = 0;
				}
				continue;
			}
		} else {
			n = read(c->fd, staging, STAGING_SIZE);
		}
		if (n == 0) {
			ok = false;
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ok = errno == EAGAIN || errno == EWOULDBLOCK;
			break;
		}
		counter_add(&s->st.bytes_in, (uint64_t)n);
		c->last_rx_ns = now_ns();
		size_t pos = 0;
		uint64_t now = c->last_rx_ns;
		while (pos < (size_t)n) {
			size_t used;
			int r = rec_feed(&c->rec, staging + pos, (size_t)n - pos, &used);
			pos += used;
			if (r < 0) {
				counter_inc(&s->st.conns_too_big);
				conn_kill(c, "record larger than the maximum record size");
				ok = false;
				break;
			}
			if (r == 1) {
				record_done(c, works, &inl, &accounted, &records);
				c->rec_start_ns = 0;
			}
		}
		/* a record must complete within the stall timeout, however
		 * slowly its bytes trickle in */
		if (!rec_partial(&c->rec))
			c->rec_start_ns = 0;
		else if (!c->rec_start_ns)
			c->rec_start_ns = now;
		if ((size_t)n < STAGING_SIZE && direct < DIRECT_MIN)
			break; /* drained */
	}
	if (accounted)
		conn_account(c, (long)accounted, 0);
	pool_queue_list(&s->pool, &c->workq, works);
	struct svc_work *iw, *iwt;
	list_for_each_entry_safe (iw, iwt, &inl, link) {
		list_del(&iw->link);
		svc_req_run_inline(container_of(iw, struct svc_req, work));
	}
	partial_account(c);
	if (s->cfg.partial_max &&
	    atomic_load_explicit(&s->partial_bytes, memory_order_relaxed) > s->cfg.partial_max) {
		partial_enforce(s);
		ok = ok && atomic_load(&c->alive); /* c may have been the one */
	}
	return ok;
}

static void conn_event(struct svc_conn *c, uint32_t events, uint8_t *staging)
{
	/* not c->dead under c->lock: a worker holds that across the sendmsg
	 * of a reply, and the client's next call, which it triggers, is what
	 * wakes this loop (set together, c->alive says the same) */
	bool dead = !atomic_load(&c->alive);
	if (!dead && (events & EPOLLOUT))
		conn_flush(c);
	if (!dead && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		dead = !conn_read(c, staging);
	if (!dead && (events & (EPOLLHUP | EPOLLERR)))
		dead = true;
	if (dead)
		conn_close_loop(c);
}

static uint64_t sweep_period(struct svc *s)
{
	uint64_t p = NSEC_PER_SEC;
	if (s->cfg.stall_timeout_ns)
		p = MIN(p, s->cfg.stall_timeout_ns / 4);
	if (s->cfg.idle_timeout_ns)
		p = MIN(p, s->cfg.idle_timeout_ns / 4);
	if (s->cfg.send_timeout_ns)
		p = MIN(p, s->cfg.send_timeout_ns / 4);
	return MAX(p, 10 * NSEC_PER_MSEC);
}

/* Loop thread: close connections stuck mid-record, idle too long, or
 * whose replies do not drain. */
static void sweep_fire(struct svc_timer *t)
{
	struct svc *s = container_of(t, struct svc, sweep);
	const struct svc_config *cfg = &s->cfg;
	uint64_t now = now_ns();
	struct svc_conn *c;
	if (atomic_load(&s->stopping))
		return;
	bool pressure = svc_pressure(s);
	mutex_lock(&s->conns_lock);
	list_for_each_entry(c, &s->conns, link)
	{
		mutex_lock(&c->lock);
		bool dead = c->dead, paused = c->rx_paused, quiet = conn_quiet_locked(c);
		uint64_t stuck = c->tx_stuck_ns;
		mutex_unlock(&c->lock);
		if (dead)
			continue; /* the loop closes it on this turn */
		bool partial = rec_partial(&c->rec);
		/* the server stopped reading: its record cannot advance */
		if (paused && partial && c->rec_start_ns)
			c->rec_start_ns = now;
		if (cfg->send_timeout_ns && stuck && now - stuck > cfg->send_timeout_ns) {
			counter_inc(&s->st.conns_send_timeout);
			conn_kill(c, "its replies are not being read");
		} else if (pressure && stuck && now - stuck > PRESSURE_SEND_NS) {
			counter_inc(&s->st.conns_pressure);
			conn_kill(c, "its replies are not being read, and the server is short of "
				     "memory for calls and replies");
		} else if (cfg->stall_timeout_ns && partial && c->rec_start_ns &&
			   now - c->rec_start_ns > cfg->stall_timeout_ns) {
			counter_inc(&s->st.conns_stalled);
			conn_kill(c, "stalled in the middle of a record");
		} else if (cfg->idle_timeout_ns && quiet && !partial &&
			   now - c->last_rx_ns > cfg->idle_timeout_ns) {
			counter_inc(&s->st.conns_idle);
			conn_kill(c, NULL);
		}
	}
	mutex_unlock(&s->conns_lock);
	/* Replies of clients that did not read them (or a burst of large
	 * ones) were freed, but the allocator keeps what it freed in its
	 * per-thread arenas, and the next burst may be served from other ones:
	 * VmRSS would climb burst after burst. Give it back once the total is
	 * down to a quarter of a peak of TRIM_PEAK or more: rare, and cheap
	 * next to what it returns. The cache of large buffers (base/iobuf.h)
	 * goes with it: it was filled by the peak, and the next burst can
	 * fill it again. */
	size_t held = atomic_load(&s->buffered);
	if (held > s->buffered_peak)
		s->buffered_peak = held;
	if (s->buffered_peak >= TRIM_PEAK && held < s->buffered_peak / 4) {
		iobuf_drain();
		malloc_trim(0);
		s->buffered_peak = held;
	}
	timer_arm(s, &s->sweep, now + sweep_period(s));
}

static void *loop_main(void *arg)
{
	pthread_setname_np(pthread_self(), "rpc-loop");
	struct svc *s = arg;
	struct epoll_event evs[64];
	uint8_t *staging = xmalloc(STAGING_SIZE);

	bool more_timers = false;
	while (!atomic_load(&s->stopping)) {
		uint64_t next = timers_next(s), now = now_ns();
		int timeout = -1;
		if (more_timers)
			timeout = 0;
		else if (next != UINT64_MAX)
			timeout = next <= now ? 0 : (int)MIN((next - now + 999999) / 1000000, 60000);
		int n = epoll_wait(s->epfd, evs, 64, timeout);
		if (n < 0 && errno != EINTR)
			panic("rpc: epoll_wait: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct svc_pollent *pe = evs[i].data.ptr;
			if (pe->kind == POLL_EVENT) {
				uint64_t v;
				if (read(s->evfd, &v, sizeof(v)) < 0) {
					/* already drained */
				}
			} else if (pe->kind == POLL_LISTENER) {
				accept_one(s, container_of(pe, struct svc_listener, pe));
			} else {
				conn_event(container_of(pe, struct svc_conn, pe), evs[i].events,
					   staging);
			}
		}
		more_timers = timers_run(s, now_ns(), TIMERS_PER_TURN);
	}

	/* stopping: close every connection */
	for (;;) {
		struct svc_conn *c = NULL;
		mutex_lock(&s->conns_lock);
		if (!list_empty(&s->conns))
			c = list_first_entry(&s->conns, struct svc_conn, link);
		mutex_unlock(&s->conns_lock);
		if (!c)
			break;
		conn_close_loop(c);
	}
	free(staging);
	return NULL;
}

int svc_start(struct svc *s)
{
	int err = pool_start(&s->pool, s->cfg.threads);
	if (err)
		return err;
	timer_arm(s, &s->sweep, now_ns() + sweep_period(s));
	err = pthread_create(&s->loop_thread, NULL, loop_main, s);
	if (err) {
		pool_stop(&s->pool);
		return -err;
	}
	s->started = true;
	return 0;
}

void svc_synchronize(struct svc *s)
{
	pool_synchronize(&s->pool);
}

void svc_stop(struct svc *s)
{
	if (!s->started)
		return;
	atomic_store(&s->stopping, true);
	uint64_t one = 1;
	if (write(s->evfd, &one, sizeof(one)) < 0)
		msg_warn("rpc: cannot wake the event loop: %s", strerror(errno));
	pthread_join(s->loop_thread, NULL);
	for (unsigned i = 0; i < s->nlisteners; i++)
		close(s->listeners[i].fd);
	s->nlisteners = 0;

	/* Parked requests finish with SVC_WAKE_SHUTDOWN; timers still armed
	 * fire now (they find their objects claimed or finish them). Repeat
	 * while handlers that ran meanwhile leave work behind. */
	uint64_t start = now_ns();
	bool warned = false;
	for (;;) {
		struct list wake;
		list_init(&wake);
		mutex_lock(&s->parked_lock);
		while (!list_empty(&s->parked)) {
			struct svc_req *rq = list_first_entry(&s->parked, struct svc_req, parked_link);
			list_del(&rq->parked_link);
			rq->wake = SVC_WAKE_SHUTDOWN;
			list_add_tail(&rq->work.link, &wake);
		}
		mutex_unlock(&s->parked_lock);
		struct svc_req *rq, *t;
		list_for_each_entry_safe(rq, t, &wake, work.link)
		{
			list_del(&rq->work.link);
			if (rq->timer_armed && timer_cancel(s, &rq->timer))
				svc_req_put(rq);
			rq->timer_armed = false;
			pool_queue(&s->pool, &rq->conn->workq, &rq->work);
		}
		timers_run(s, UINT64_MAX, UINT32_MAX);
		if (!atomic_load(&s->live_reqs) && !atomic_load(&s->live_calls))
			break;
		if (!warned && now_ns() - start > 5 * NSEC_PER_SEC) {
			msg_warn("rpc: still waiting for %ld requests and %ld calls to finish",
				 atomic_load(&s->live_reqs), atomic_load(&s->live_calls));
			warned = true;
		}
		sleep_ns(NSEC_PER_MSEC);
	}
	pool_stop(&s->pool);
	s->started = false;
}

void svc_destroy(struct svc *s)
{
	if (!s)
		return;
	svc_stop(s);
	for (unsigned i = 0; i < s->nlisteners; i++)
		close(s->listeners[i].fd);
	for (unsigned i = 0; i < s->nprogs; i++) {
		for (uint32_t v = 0; v < s->progs[i].p->nversions; v++) {
			free(s->progs[i].proc_calls[v]);
			free(s->progs[i].proc_lat[v]);
		}
		free(s->progs[i].proc_calls);
		free(s->progs[i].proc_lat);
	}
	drc_destroy(s->drc);
	timers_destroy(&s->timers);
	close(s->epfd);
	close(s->evfd);
	mutex_destroy(&s->conns_lock);
	mutex_destroy(&s->parked_lock);
	free(s);
}
