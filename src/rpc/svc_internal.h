/*
 * svc_internal.h - the structures behind svc.h, shared by the files of the
 * service (svc.c loop and connections, svc_send.c, svc_dispatch.c,
 * svc_pool.c, svc_timer.c, svc_call.c, drc.c, svc_stats.c). Nothing
 * outside src/rpc includes this.
 */
#ifndef JNFS_RPC_SVC_INTERNAL_H
#define JNFS_RPC_SVC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/list.h"
#include "base/lock.h"
#include "base/stats.h"
#include "rpc/drc.h"
#include "rpc/record.h"
#include "rpc/svc.h"

#define SVC_MAX_PROGS     16
#define SVC_MAX_LISTENERS 16
#define SVC_CALL_BUCKETS  64

extern const struct lock_class svc_conns_class, svc_drc_class, svc_conn_class,
	svc_parked_class, svc_timers_class, svc_pool_class;

/* ---- worker pool (svc_pool.c) ----
 * Work is queued per connection and workers take one item at a time from
 * the connections in round-robin order, so a burst on one connection (a
 * thousand parked requests whose timers expire together) delays another
 * connection's call by at most one item per busy connection. */
struct svc_workq {
	struct list works;
	struct list link; /* in svc_pool.ready while works is not empty */
	bool queued;
};

struct svc_worker {
	struct svc_pool *pool;
	pthread_t thread;
	struct cond cond;
	struct list idle_link; /* in svc_pool.idle while asleep */
	bool signaled;
	bool busy;     /* running a work item (under svc.pool) */
	uint64_t done; /* work items finished (under svc.pool) */
};

struct svc_pool {
	struct mutex lock;
	struct list ready;
	struct list idle;    /* sleeping workers, most recently idle first */
	unsigned nwaking;    /* signalled, not yet running */
	bool stop;
	unsigned nthreads;
	struct svc_worker *workers;
	unsigned nsyncing; /* threads in pool_synchronize() */
	struct cond synced; /* a work item finished while nsyncing */
};

void pool_init(struct svc_pool *p);
int pool_start(struct svc_pool *p, unsigned n);
void pool_stop(struct svc_pool *p);
/* Return once every work item running when called has finished
 * (svc_synchronize). */
void pool_synchronize(struct svc_pool *p);
void workq_init(struct svc_workq *q);
/* Queue w on q; q must stay alive until its last work item has started
 * (connections: every work item holds a reference on its connection). */
void pool_queue(struct svc_pool *p, struct svc_workq *q, struct svc_work *w);
/* Queue every svc_work of works on its own w->q with one lock round and
 * one wakeup; the list empties. */
void pool_queue_batch(struct svc_pool *p, struct list *works);
/* Queue every svc_work on the list (linked by .link); the list empties. */
void pool_queue_list(struct svc_pool *p, struct svc_workq *q, struct list *works);

/* ---- timers (svc_timer.c); callbacks run on the loop thread and may only
 * claim and dispatch ---- */
struct svc_timers {
	struct mutex lock;
	struct svc_timer **heap;
	size_t n, cap;
};

void timers_init(struct svc_timers *t);
void timers_destroy(struct svc_timers *t);
void timer_init(struct svc_timer *t, void (*fn)(struct svc_timer *t));
void timer_arm(struct svc *s, struct svc_timer *t, uint64_t deadline);
/* True if the timer was armed and is now disarmed (it will not fire). */
bool timer_cancel(struct svc *s, struct svc_timer *t);
uint64_t timers_next(struct svc *s);
/* Fire at most max timers due at now (every armed timer when now is
 * UINT64_MAX); true when more are due. The loop fires a bounded batch per
 * turn so that a burst of expiries never keeps it from reading sockets. */
bool timers_run(struct svc *s, uint64_t now, unsigned max);

/* ---- counters (svc_stats.c) ---- */
enum svc_reply_kind {
	REPLY_SUCCESS,
	REPLY_PROG_UNAVAIL,
	REPLY_PROG_MISMATCH,
	REPLY_PROC_UNAVAIL,
	REPLY_GARBAGE_ARGS,
	REPLY_SYSTEM_ERR,
	REPLY_RPC_MISMATCH,
	REPLY_AUTH_ERROR,
	REPLY_DROPPED,
	REPLY_NKINDS
};

struct svc_counters {
	counter_t calls;
	counter_t replies[REPLY_NKINDS];
	counter_t bytes_in, bytes_out;
	counter_t conns_accepted, conns_closed, conns_refused, conns_garbage, conns_too_big,
		conns_stalled, conns_idle, conns_evicted, conns_send_timeout, conns_partial,
		conns_pressure;
	counter_t calls_held;
	counter_t drc_hits, drc_in_progress;
	counter_t deferred, deferred_timeouts, deferred_wakes;
	counter_t cb_calls, cb_replies, cb_timeouts, cb_cancelled, cb_unmatched, cb_errors;
};

/* ---- server ---- */
struct svc_prog_ent {
	const struct svc_program *p;
	void *ctx;
	uint32_t low, high;
	counter_t **proc_calls; /* [version index][proc] */
	struct stat_lat **proc_lat; /* [version index][proc]: call arrival to reply */
};

struct svc_pollent {
	int kind; /* POLL_LISTENER, POLL_CONN, POLL_EVENT */
};
enum { POLL_LISTENER, POLL_CONN, POLL_EVENT };

struct svc_listener {
	struct svc_pollent pe;
	int fd;
	struct sockaddr_storage addr;
};

struct svc {
	struct svc_config cfg;
	struct svc_prog_ent progs[SVC_MAX_PROGS];
	unsigned nprogs;

	int epfd;
	uint64_t next_conn_id; /* loop only: svc_conn_id() */
	struct svc_pollent evpe;
	int evfd; /* eventfd: wakes the loop (new earliest timer, stop) */
	struct svc_listener listeners[SVC_MAX_LISTENERS];
	unsigned nlisteners;
	pthread_t loop_thread;
	bool started;
	_Atomic bool stopping;

	struct svc_pool pool;
	struct svc_timers timers;
	struct svc_timer sweep;
	struct svc_timer accept_retry; /* listeners paused after EMFILE */
	struct list timer_batch; /* requests claimed by timers in this turn;
				  * only the thread in timers_run() uses it */

	struct mutex conns_lock; /* svc.conns: conns, nconns */
	struct list conns;
	unsigned nconns;

	struct mutex parked_lock; /* svc.parked: parked */
	struct list parked;

	/* bytes of incomplete records of all connections (their buffers):
	 * written by the loop thread only, read by the counters */
	_Atomic size_t partial_bytes;
	/* calls read and not answered plus reply space reserved, of all
	 * connections: the sum of their rx_bytes + reserved (max_buffered) */
	_Atomic size_t buffered;
	size_t buffered_peak; /* the most seen by the sweep since memory was
			       * last given back (loop only) */

	struct drc *drc;
	_Atomic uint32_t next_xid;
	_Atomic long live_reqs;
	_Atomic long live_calls;
	_Atomic uint64_t warn_window; /* rate limit for warnings about clients */
	_Atomic unsigned warn_count;

	struct svc_counters st;
};

/* ---- connections (svc.c, svc_send.c) ---- */

/* One buffer list waiting to be written; done() runs once when it has been
 * written or discarded, with no lock held. */
struct svc_out {
	struct list link;
	struct iovec *iov;
	int niov, idx;
	size_t bytes;
	void (*done)(struct svc_out *o);
};

struct svc_conn {
	struct svc_pollent pe;
	struct svc *svc;
	_Atomic int refs;
	int fd;
	struct sockaddr_storage peer;
	uint64_t id;      /* [const] svc_conn_id() */
	struct list link; /* svc.conns */
	bool counted;     /* in svc.nconns; under svc.conns */
	struct svc_workq workq; /* under svc.pool */
	struct svc_work closed_work; /* runs conn_ops.closed() */

	struct mutex lock; /* svc.conn: everything below until "loop only" */
	bool dead;
	_Atomic bool alive;
	uint32_t events; /* current epoll interest */
	bool rx_paused;
	struct list outq;
	size_t outq_bytes;
	uint64_t tx_stuck_ns; /* since when the head of outq has not moved; 0: empty */
	size_t rx_bytes;      /* calls read and not yet released: records, requests;
			       * its changes go to svc.buffered as well */
	/* Reply space of admitted calls. Grows without the lock on the fast
	 * path (req_reserve), shrinks only under it, and every shrink is
	 * followed by conn_admit_locked(): so no held call waits on space that
	 * was given back (invariant 7 of svc.h). Every change goes to
	 * svc.buffered as well. */
	_Atomic size_t reserved;
	struct list held;      /* calls waiting for reply space, by work.link */
	_Atomic unsigned nheld; /* written under the lock, read without */
	struct list calls[SVC_CALL_BUCKETS]; /* pending svc_call by xid */
	/* the protocol's (svc_conn_set_data): written once, under the lock,
	 * data before ops; read without it */
	void *data;
	const struct svc_conn_ops *_Atomic data_ops;

	/* where the bulk data (a WRITE's) of its last call that had any lay in
	 * its record, 0: none yet. Written by the worker that decoded the
	 * call, read by the loop, which asks the next record to put that
	 * offset at an aligned address (record.h, invariant 4): a client's
	 * WRITEs have one layout, so their data then reaches a direct-I/O
	 * device without a bounce. Only a hint. */
	_Atomic uint32_t bulk_off;

	/* loop only */
	struct rec_asm rec;
	uint64_t last_rx_ns;
	uint64_t rec_start_ns; /* when the partial record began; 0 if none */
	size_t rec_counted;    /* of svc.partial_bytes: rec's buffer while partial */
};

void conn_send(struct svc_conn *c, struct svc_out *o);
/* Write what the socket takes; called by the loop on EPOLLOUT. */
void conn_flush(struct svc_conn *c);
/* Any thread: the connection is bad; the loop will close it. */
void conn_kill(struct svc_conn *c, const char *why);
/* Recompute the epoll interest; conn lock held. */
void conn_update_events_locked(struct svc_conn *c);
/* Account bytes of calls read (+) or released (-) and give back reply
 * space; may pause or resume reading and admit held calls (queued to the
 * pool). */
void conn_account(struct svc_conn *c, long rx_delta, size_t unreserve);
/* Admit held calls while they fit (invariant 7) onto admitted; conn lock
 * held. */
void conn_admit_locked(struct svc_conn *c, struct list *admitted);
/* Pause reading over the limit or while calls are held, resume below half
 * of it; conn lock held. */
void conn_pace_locked(struct svc_conn *c);
/* Warn about a client at most a few times a second. */
bool svc_warn_ok(struct svc *s);

/* ---- requests (svc_dispatch.c) ---- */
enum { RQ_RUNNING, RQ_PARKED, RQ_DONE };

#define RQ_INLINE 512

struct svc_req {
	struct svc_work work;
	_Atomic int refs;
	struct svc *svc;
	struct svc_conn *conn;
	uint8_t *record;
	size_t record_len;
	void *record_alloc; /* what to free for record (record.h, rec_take_at) */
	size_t accounted; /* bytes added to conn->rx_bytes */
	size_t reserve;   /* reply space it needs */
	bool reserved;    /* reserve is counted in conn->reserved */
	enum svc_wake wake;

	struct rpc_call_hdr hdr;
	struct rpc_cred cred;
	struct svc_prog_ent *pe;
	const struct svc_proc *proc;
	svc_handler_fn resume;    /* its version's (struct svc_version) */
	counter_t *proc_calls;
	struct stat_lat *proc_lat; /* where its reply latency is counted */
	uint64_t start_ns;        /* when the call arrived */
	void *args, *res;
	bool args_decoded;
	struct xdr_dec argx;
	uint32_t args_crc;

	struct drc_entry *drc;
	struct list parked_link; /* svc.parked while PARKED */
	struct svc_timer timer;
	bool timer_armed;

	struct xdr_enc reply;
	struct svc_out out;
	struct iovec iov_inline[4];
	_Alignas(16) uint8_t scratch[SVC_REQ_SCRATCH]; /* the protocol's (svc_req_scratch) */
	_Alignas(16) uint8_t inline_area[RQ_INLINE];
	uint8_t reply_inline[256];
};

/* Called by the loop for every complete record (owned by the request). */
struct svc_req *req_new(struct svc_conn *c, uint8_t *record, size_t len, void *alloc);
/* A call of a procedure marked SVC_PROC_INLINE: the loop runs it itself. */
bool req_is_inline(const struct svc_req *rq);
void svc_req_run_inline(struct svc_req *rq);

/* ---- calls to clients (svc_call.c) ---- */
void call_reply(struct svc_conn *c, uint32_t xid, const uint8_t *rec, size_t len);
/* The connection is gone: fail every pending call; conn lock held. The
 * claimed calls are moved to failed (by priv.link). */
void call_fail_all_locked(struct svc_conn *c, struct list *failed);
void call_finish_failed(struct list *failed);

#endif
