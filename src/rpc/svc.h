/*
 * svc.h - the ONC RPC service: TCP listeners, an event loop, a worker pool,
 * procedure tables, deferred replies, the duplicate request cache, calls
 * from the server to a client over the client's own connection, and what
 * a session protocol (NFSv4.1) keeps per connection and per reply.
 *
 * Design note.
 *
 * Threads. One event-loop thread accepts, reads, reassembles records,
 * fires timers and flushes sockets that would block; it never decodes
 * arguments or runs a procedure. A pool of worker threads (config.threads)
 * decodes each call, runs its handler and sends the reply. A reply is
 * written directly by the thread that completes it when the connection's
 * send queue is empty; otherwise it is queued and the loop finishes it.
 * Replies on one connection go out in completion order, not call order.
 *
 * What a client can make the server hold (config below):
 *  - per connection, bytes of calls read and not yet answered plus reply
 *    space reserved (conn_max_buffered). Every call reserves the most its
 *    reply can take - its procedure's reply bound (struct svc_proc:
 *    reply_max, or what reply_bound() computes from the decoded
 *    arguments) - after its arguments are decoded and before its handler
 *    runs, and gives it back when the reply has been written or dropped.
 *    A call that does not fit waits, decoded, in the connection's HELD
 *    list (no thread, no reply memory) until replies drain; the connection
 *    is not read while anything is held or the total is over the limit,
 *    and is read again below half of it. So the memory of replies being
 *    built and queued - a READ's data buffer included - stays under the
 *    limit, or is one reply's when a single call needs more than the
 *    whole limit (it then runs alone);
 *  - a connection whose queued replies do not move for send_timeout is
 *    closed (a client that never reads);
 *  - connections (max_conns): at the limit a new connection closes the
 *    idle connection that has been quiet longest (idle: no call read and
 *    not yet released - running, parked, held or with its reply queued -,
 *    no call to the client pending, no partial record); when none is idle
 *    the new one is closed at accept. An idle connection is closed after
 *    idle_timeout (6 minutes, as knfsd: clients close theirs after 5);
 *  - a record stuck half way for stall_timeout (not counted while the
 *    server itself has stopped reading) is dropped;
 *  - all connections together, bytes of records still incomplete
 *    (partial_max): each connection alone is held to max_record, but a
 *    few thousand that each send half a large record would otherwise make
 *    the server hold gigabytes until their stall timeouts. Past the limit
 *    the connection whose record began earliest is closed (a client whose
 *    records arrive at the speed of the network finishes them long before
 *    one that stopped half way), until the total is under it again. Only
 *    the loop thread reads, so it keeps the total without locks;
 *  - all connections together, calls read and not answered plus reply
 *    space reserved (max_buffered): conn_max_buffered alone lets every
 *    client that never reads its replies hold 16 MiB. Past the limit a
 *    connection that holds any of it runs one call at a time (a call is
 *    admitted only when its connection holds nothing, and the connection
 *    is not read while it does), so every client still gets its turn; and
 *    a connection whose replies have not moved for a second is closed
 *    (PRESSURE_SEND_NS) rather than after send_timeout. The total is one
 *    atomic counter beside each connection's. Once it is back down after
 *    a spike, the freed memory is given back to the system (malloc_trim),
 *    which the allocator would otherwise keep.
 *
 * Requests (struct svc_req) are reference counted. States:
 *
 *  decoded --reply space reserved-----------> RUNNING
 *     \--no space: HELD --space given back--> RUNNING (on a worker)
 *                     \--connection closes--> freed, never run
 *   RUNNING --handler returns SVC_OK/...--> SENT --last put--> freed
 *      |  \__ handler called svc_defer() and returned SVC_DEFERRED
 *      v
 *   PARKED --svc_complete()----------------> SENT
 *      |  \--svc_wake() / timer / shutdown--> RUNNING (handler runs again
 *      |                                      on a worker; svc_req_wake()
 *      |                                      tells it why)
 *
 * Connections (struct svc_conn):
 *
 *   OPEN --error, stall, idle, send timeout, evicted, stop--> CLOSED
 *        (reading paused while over its limit)   |  conn_ops.closed() runs
 *                                                v  once, on a worker
 *                                    last svc_conn_put(): conn_ops.free()
 *                                    of the protocol's data, fd closed
 *
 * Invariants:
 *  1. A parked request holds no thread. Exactly one of svc_complete(),
 *     svc_wake(), its timer or server shutdown takes it out of PARKED; the
 *     others see false and do nothing.
 *  2. A thread that may call svc_complete()/svc_wake() later holds its own
 *     reference (svc_req_get() before parking, svc_req_put() after).
 *  3. After svc_defer() the handler must not touch the request, its args or
 *     its results except to return SVC_DEFERRED: another thread may
 *     already be completing it.
 *  4. args and res live until the reply has been written (or the
 *     connection is gone); then the procedure's release hook runs, once.
 *     So a reply may point at external buffers (xdr_enc_opaque_iov) that
 *     release frees.
 *  5. A server thread never waits for a client: sends never block (the
 *     socket is non-blocking and the remainder is queued), and a call to a
 *     client (svc_call_start) completes through a callback.
 *  6. A handler runs only with its reply space reserved, and its reply
 *     never exceeds the space reserved: one that would is replaced by
 *     SYSTEM_ERR. Per connection the reply space reserved - replies being
 *     built or queued - stays within conn_max_buffered, or is one call's
 *     alone; reading stops once calls read plus reply space pass
 *     conn_max_buffered (what one turn of the loop read still comes in).
 *  7. Held calls leave HELD in arrival order; one is admitted whenever
 *     nothing else of its connection holds reply space, so a held call
 *     always runs once the replies before it are written, or is freed
 *     unrun when the connection closes. Otherwise a call is admitted only
 *     while its connection stays within conn_max_buffered and the server
 *     within max_buffered.
 *  8. The encoded() hook of a procedure sees exactly the bytes its encoder
 *     wrote for a SUCCESS reply, before any of them is sent.
 *  9. Protocol data attached to a connection (svc_conn_set_data) gets
 *     closed() exactly once, after the connection has closed (at the
 *     latest when the server stops), then free() exactly once, when the
 *     connection is freed.
 *
 * Errors (RFC 5531): an unknown program gets PROG_UNAVAIL; an unknown
 * version PROG_MISMATCH with the lowest and highest registered versions;
 * an unknown procedure PROC_UNAVAIL; arguments that fail to decode
 * GARBAGE_ARGS; a handler failure or a reply that does not fit SYSTEM_ERR;
 * rpcvers != 2 RPC_MISMATCH; credentials as in rpc_msg.h. A record that is
 * not a call or reply header, or a header that is cut short, is garbage:
 * the connection is dropped, other connections never notice.
 *
 * Lock order (ranks 400-499, lowest first; base/lock_classes.h):
 *   410 svc.conns      server's connection list
 *   420 svc.drc        duplicate request cache
 *   430 svc.conn       one connection: send queue, pending calls, held
 *                      calls, byte accounting, protocol data
 *   450 svc.parked     parked requests: one claim each (completion, timer or
 *                      shutdown); a timer is armed under it
 *   460 svc.timers     timer heap
 *   470 svc.pool       worker queue
 */
#ifndef JNFS_RPC_SVC_H
#define JNFS_RPC_SVC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/list.h"
#include "base/stats.h"
#include "rpc/rpc_msg.h"
#include "rpc/xdr.h"

struct svc;      /* a server */
struct svc_conn; /* one client connection, reference counted */
struct svc_req;  /* one call being served, reference counted */

/* ---- configuration and life cycle -------------------------------------- */

struct svc_config {
	unsigned threads;            /* worker threads; default 8 */
	size_t max_record;           /* largest call record; default 1 MiB + 64 KiB */
	size_t max_reply;            /* largest reply; default 1 MiB + 64 KiB */
	unsigned max_conns;          /* connections; at the limit the oldest idle one
				      * makes room, else a new one is closed; 1024 */
	size_t conn_max_buffered;    /* per connection: bytes of calls read and not
				      * answered plus reply space reserved, before it
				      * stops reading and calls wait; 16 MiB */
	size_t max_buffered;         /* the same for all connections together, past
				      * which each runs one call at a time and those
				      * whose replies do not move are closed; 128 MiB;
				      * 0 = no limit */
	uint64_t stall_timeout_ns;   /* close a connection stuck mid-record; 30 s */
	size_t partial_max;          /* all connections: bytes of incomplete records
				      * before the one begun earliest is closed;
				      * 128 MiB; 0 = no limit */
	uint64_t idle_timeout_ns;    /* close a connection idle this long; 6 min;
				      * 0 = never */
	uint64_t send_timeout_ns;    /* close a connection whose queued replies do not
				      * move for this long; 60 s; 0 = never */
	size_t drc_max_entries;      /* duplicate request cache bound; 4096 */
	size_t drc_max_bytes;        /* bytes of cached replies; 8 MiB */
};

/* Fill in the defaults above. */
void svc_config_default(struct svc_config *c);

/* Create a server (no threads run yet). The config is copied. */
struct svc *svc_create(const struct svc_config *cfg);

/*
 * Listen on "ADDR:PORT" or "[ADDR6]:PORT" (port 0 picks a free one). The
 * bound port is returned in *port. May be called before or after
 * svc_start(). Returns 0 or -errno (-EINVAL for an address that does not
 * parse).
 */
int svc_listen(struct svc *s, const char *addr, uint16_t *port);

/* Parse "ADDR:PORT" / "[ADDR6]:PORT" into a socket address. */
int svc_parse_addr(const char *str, struct sockaddr_storage *ss, socklen_t *len);

/* Start the event loop and the workers. */
int svc_start(struct svc *s);

/*
 * A grace period: returns once every handler that a worker was running
 * when it was called has returned (handlers that start later, and parked
 * requests, which run no handler code until resumed, are not waited for).
 * It lets handlers read data another thread replaces without a lock on the
 * call path, as RCU readers: publish the new version with an atomic store,
 * svc_synchronize(), then free the old one, which no handler can still be
 * using. Costs the call path nothing (the workers note it under the pool
 * lock they take anyway). From a thread that is not a worker (a handler
 * would wait for itself); SVC_PROC_INLINE handlers, which run on the event
 * loop, are not covered.
 */
void svc_synchronize(struct svc *s);

/*
 * Stop: close listeners and connections, resume parked requests with
 * SVC_WAKE_SHUTDOWN (their handlers, or their version's resume hook, must
 * finish them), fail pending calls
 * with -ECONNRESET, wait for every request to be released, join threads.
 * Safe to call once, from a thread that is not a worker.
 */
void svc_stop(struct svc *s);
void svc_destroy(struct svc *s);

/* Emit counters as "rpc.*" lines (see svc_stats.c for the names). */
void svc_stats(struct svc *s, const struct stat_sink *sink);

/* ---- procedure tables -------------------------------------------------- */

enum svc_stat {
	SVC_OK,       /* encode res with the procedure's encoder; SUCCESS */
	SVC_DEFERRED, /* the handler called svc_defer() */
	SVC_GARBAGE,  /* GARBAGE_ARGS: arguments decoded but make no sense */
	SVC_SYSERR,   /* SYSTEM_ERR */
	SVC_DROP,     /* send nothing; the client will retransmit */
};

/* Why a handler is running (svc_req_wake()). */
enum svc_wake {
	SVC_WAKE_NONE,     /* first run */
	SVC_WAKE_EVENT,    /* svc_wake() was called */
	SVC_WAKE_TIMEOUT,  /* the svc_defer() timer expired */
	SVC_WAKE_SHUTDOWN, /* the server is stopping: finish now */
};

/* Decoders return 0 or -EBADMSG; encoders 0 or -EMSGSIZE. */
typedef int (*svc_decode_fn)(struct xdr_dec *x, void *args);
typedef int (*svc_encode_fn)(struct xdr_enc *x, const void *res);
/* A handler gets the checked credential as an argument; args were decoded
 * into zeroed memory of args_size bytes, res is zeroed memory of res_size
 * bytes. It returns what to answer (SVC_DEFERRED after svc_defer()). */
typedef enum svc_stat (*svc_handler_fn)(struct svc_req *rq, const struct rpc_cred *cred,
					void *args, void *res);
/* Frees what decode and handler allocated inside args/res (not the
 * structs themselves). Runs once, after the reply was sent or dropped. */
typedef void (*svc_release_fn)(void *args, void *res);
/* The largest reply to a call with these (decoded) arguments, in the
 * units of reply_max: e.g. a READ's count plus its fixed fields plus
 * SVC_REPLY_HDR. Called on a worker before the handler; a value above the
 * procedure's reply_max counts as reply_max. */
typedef uint32_t (*svc_reply_bound_fn)(const void *args);
/* The encoded results of a SUCCESS reply: iov[0..niov) are exactly the
 * bytes the procedure's encoder wrote (after the RPC reply header), valid
 * only during the call. Runs on the thread that encoded the reply, before
 * any byte of it is sent (invariant 8), with args and res still alive; it
 * must not block. For a session's reply cache (NFSv4.1 slots keep a copy
 * to answer a retransmission exactly once). */
typedef void (*svc_encoded_fn)(struct svc_req *rq, void *args, void *res, const struct iovec *iov,
			       int niov);

/* The RPC part of an accepted reply: xid, REPLY, MSG_ACCEPTED, the
 * AUTH_NONE verifier (flavour, length 0), accept_stat. */
#define SVC_REPLY_HDR (6 * 4)

/* Flags of a procedure. */
#define SVC_PROC_DRC (1u << 0) /* non-idempotent: replies go through the DRC */
/* The handler neither blocks nor defers (NULL): the event loop runs it
 * itself instead of handing it to a worker. */
#define SVC_PROC_INLINE (1u << 1)

/*
 * One row per procedure, indexed by procedure number:
 *
 *   static const struct svc_proc nfs3_procs[] = {
 *       [NFS3PROC_NULL]   = {"null", svc_dec_void, nfs3_null, svc_enc_void,
 *                            .reply_max = SVC_REPLY_HDR},
 *       [NFS3PROC_CREATE] = {"create", nfs3_dec_create, nfs3_create, nfs3_enc_create,
 *                            nfs3_release_create, sizeof(struct nfs3_create_args),
 *                            sizeof(struct nfs3_create_res), SVC_PROC_DRC,
 *                            .reply_max = SVC_REPLY_HDR + CREATE_RES_MAX},
 *       [NFS3PROC_READ]   = {..., .reply_max = SVC_REPLY_HDR + READ_RES_MAX,
 *                            .reply_bound = nfs3_read_bound},
 *   };
 *
 * A row whose handler is NULL is PROC_UNAVAIL.
 */
struct svc_proc {
	const char *name;
	svc_decode_fn decode;
	svc_handler_fn handler;
	svc_encode_fn encode;
	svc_release_fn release; /* may be NULL */
	uint32_t args_size, res_size;
	unsigned flags;
	/* The largest reply, RPC part included: SVC_REPLY_HDR plus the most
	 * the encoder writes (so SVC_REPLY_HDR alone for empty results).
	 * What a call reserves of its connection's limit, and what its reply
	 * may take: more is SYSTEM_ERR (invariant 6). 0: the server's
	 * max_reply (then every call reserves that much: set it). */
	uint32_t reply_max;
	svc_reply_bound_fn reply_bound; /* may be NULL: reply_max */
	svc_encoded_fn encoded;         /* may be NULL */
};

struct svc_version {
	uint32_t vers;
	uint32_t nprocs;
	const struct svc_proc *procs;
	/* May be NULL. When a parked request of this version runs again
	 * (svc_wake, its timer, shutdown: svc_req_wake() says which), this
	 * runs instead of its procedure's handler: for a protocol whose
	 * deferrals all end the same way, so that no handler begins by
	 * telling its first run from a rerun. */
	svc_handler_fn resume;
};

struct svc_program {
	uint32_t prog;
	const char *name;  /* for counters: rpc.<name>.v<vers>.<proc> */
	uint32_t nversions;
	const struct svc_version *versions;
};

/* Register a program before svc_start(). The table must outlive the
 * server; ctx is handed to handlers through svc_req_ctx(). A program number
 * may be registered again with other versions and its own ctx (-EEXIST if
 * a version repeats); PROG_MISMATCH then names the range of all of them. */
int svc_add_program(struct svc *s, const struct svc_program *p, void *ctx);

/* For procedures without arguments or results. */
int svc_dec_void(struct xdr_dec *x, void *args);
int svc_enc_void(struct xdr_enc *x, const void *res);

/* ---- requests ---------------------------------------------------------- */

void *svc_req_ctx(const struct svc_req *rq);
/*
 * SVC_REQ_SCRATCH bytes (aligned to 16) that belong to the protocol for
 * the request's whole life, zeroed when the call arrives: what a protocol
 * keeps while the request is parked (the shared server layer's stability
 * waiter), so it needs neither an allocation nor room in every result.
 */
#define SVC_REQ_SCRATCH 128
void *svc_req_scratch(struct svc_req *rq);
/* A number unique among the connections of this server's life (never 0):
 * an identity that outlives the connection's memory. */
uint64_t svc_conn_id(const struct svc_conn *c);
uint32_t svc_req_xid(const struct svc_req *rq);
enum svc_wake svc_req_wake(const struct svc_req *rq);
/* The connection the call came on, borrowed for the request's lifetime;
 * svc_conn_get() it to keep it (e.g. to bind a backchannel). */
struct svc_conn *svc_req_conn(const struct svc_req *rq);

void svc_req_get(struct svc_req *rq);
void svc_req_put(struct svc_req *rq);

/*
 * Park the request: the handler then returns SVC_DEFERRED and the worker
 * is free. With timeout_ns > 0 the handler runs again after that time with
 * svc_req_wake() == SVC_WAKE_TIMEOUT unless it was completed or woken
 * first. See invariants 1-3.
 */
void svc_defer(struct svc_req *rq, uint64_t timeout_ns);

/* Finish a parked request from any thread: res has been filled in; st is
 * what the handler would have returned (not SVC_DEFERRED). Encodes and
 * sends on the calling thread. False if the request had already left
 * PARKED (timer, wake, shutdown). */
bool svc_complete(struct svc_req *rq, enum svc_stat st);

/* Run the handler of a parked request again, on a worker, with
 * svc_req_wake() == SVC_WAKE_EVENT. False if it had already left PARKED. */
bool svc_wake(struct svc_req *rq);

/* ---- connections and calls to clients (backchannel) -------------------- */

void svc_conn_get(struct svc_conn *c);
void svc_conn_put(struct svc_conn *c);
/* The peer's address; valid while the caller holds a reference. */
const struct sockaddr_storage *svc_conn_peer(const struct svc_conn *c);
/* The host part of an address as text ("10.0.0.1", "::1"), for messages
 * and helper commands; "?" for a family it does not know. */
void svc_addr_name(const struct sockaddr_storage *ss, char *buf, size_t len);
/* False once the connection has closed (calls then fail at once). */
bool svc_conn_alive(const struct svc_conn *c);

/*
 * Data a protocol keeps per connection (an NFSv4.1 server: the sessions
 * bound to it, whose backchannel it may be). One owner per connection,
 * named by its ops table:
 *
 *   closed(c, data)  the connection has closed: no call is read from it
 *                    any more, calls to the client fail. Runs once, on a
 *                    worker thread, never inside a caller's locks; calls
 *                    that came on the connection may still be running or
 *                    parked (their replies are discarded). A protocol that
 *                    holds references to the connection (svc_conn_get, for
 *                    a backchannel) drops them here, or the connection is
 *                    never freed. May be NULL.
 *   free(data)       the connection is being freed (its last reference is
 *                    gone; closed() has returned). Runs once, on whichever
 *                    thread dropped that reference. May be NULL.
 *
 * svc_conn_set_data attaches data: 0, -EBUSY if the connection has data
 * already (from any owner; it is never replaced), or -ENOTCONN if it has
 * closed (then neither hook will run and the caller keeps data). Any
 * thread; takes svc.conn. svc_conn_data returns the data if ops own it,
 * else NULL: any thread holding a reference to the connection (a handler
 * holds one through its request), no lock, valid until free(). The RPC
 * layer never touches data itself; the protocol guards its contents with
 * its own locks.
 */
struct svc_conn_ops {
	void (*closed)(struct svc_conn *c, void *data);
	void (*free)(void *data);
};

int svc_conn_set_data(struct svc_conn *c, const struct svc_conn_ops *ops, void *data);
void *svc_conn_data(const struct svc_conn *c, const struct svc_conn_ops *ops);

/* A unit of work for the worker pool (internal, embedded in requests and
 * calls). */
struct svc_work {
	struct list link;
	void (*fn)(struct svc_work *w);
	struct svc_workq *q; /* for pool_queue_batch() */
};

struct svc_timer {
	uint64_t deadline;
	size_t idx;  /* position in the heap; SIZE_MAX when not armed */
	void (*fn)(struct svc_timer *t);
};

/*
 * A call from the server to the client at the other end of a connection
 * (NFSv4.1 CB_COMPOUND). The caller owns the struct, fills the public
 * fields and keeps it alive until done() has run; done() runs exactly once,
 * on a worker thread, with:
 *     0            the reply was SUCCESS and decode() filled res
 *    -EPROTO       the client answered with an RPC error (see reply)
 *    -EBADMSG      the reply's results did not decode
 *    -ETIMEDOUT    no reply within timeout_ns
 *    -ECANCELED    svc_call_cancel() won
 *    -ECONNRESET   the connection closed first (or the server stopped)
 * A REPLY that arrives on the connection is matched to the call by xid;
 * replies nobody waits for are counted and dropped.
 */
struct svc_call {
	uint32_t prog, vers, proc;
	const struct rpc_cred *cred; /* NULL: AUTH_NONE */
	svc_encode_fn encode;
	const void *args;    /* cred and args are encoded by svc_call_start()
			      * and not used after it returns */
	svc_decode_fn decode;
	void *res;           /* filled by decode(), on a worker, before done() */
	uint64_t timeout_ns; /* 0: wait until the connection closes */
	void (*done)(struct svc_call *call, int status);
	struct rpc_reply_hdr reply; /* the reply header, when one arrived */

	/* owned by the RPC layer */
	struct {
		struct svc_conn *conn;
		uint32_t xid;
		int status;
		_Atomic int refs;
		bool pending;            /* in the connection's table */
		struct svc_timer timer;
		struct svc_work work;
		struct list link;        /* in the connection's table */
	} priv;
};

/* Send the call. Returns 0 (done() will run) or -ENOTCONN / -EMSGSIZE
 * (done() will not run). */
int svc_call_start(struct svc_conn *c, struct svc_call *call);
/* Cancel a pending call: true if this claimed it (done() then runs with
 * -ECANCELED), false if it had already finished. */
bool svc_call_cancel(struct svc_call *call);

#endif
