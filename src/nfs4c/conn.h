/*
 * conn.h - one TCP connection of the NFSv4.1 client: record marking, calls
 * in flight matched to their replies by xid, and the calls the server makes
 * on the same connection (the backchannel) handed to their owner.
 *
 * Design note.
 *
 * Threads. Each connection has one receiver thread. It reads whole records
 * (rpc/record.h reassembles them, at most max_record bytes, memory growing
 * with the bytes that arrive, in buffers from base/iobuf.h; a reply is
 * freed with iobuf_free) and blocks on nothing but the socket:
 *   - a REPLY is matched by xid to a registered call, which takes the
 *     record and is woken;
 *   - a CALL (the server's CB_NULL, CB_COMPOUND) is handed to on_call(),
 *     which must only queue it: the receiver never runs a callback, so a
 *     callback handler may itself make calls on this connection and get
 *     their replies;
 *   - a record that is neither, or too short to say, kills the connection
 *     (-EPROTO): the stream can no longer be trusted.
 * Any number of threads may have calls in flight at once; each waits on
 * its own condition variable (a client may block; only a server must not).
 *
 * States:
 *
 *   OPEN --EOF, read/write error, garbage, nfs4c_conn_shutdown()--> DEAD
 *     (err set once; every registered call is woken with it and every
 *      later call fails with it at once; the socket is shut down so the
 *      receiver ends)
 *   nfs4c_conn_close(): DEAD, receiver joined, descriptor closed, the
 *     opener's reference dropped; the struct is freed at the last put.
 *
 * Invariants:
 *  1. A call is registered before its first byte is sent, so its reply
 *     can never arrive unmatched.
 *  2. A registered call is completed exactly once: by its reply, or by the
 *     connection's death (with err). A reply for an xid nobody waits for
 *     is counted and dropped.
 *  3. Records are written whole under send_lock: two senders' bytes never
 *     interleave. A write that fails or times out half way kills the
 *     connection, since the peer's reassembly is then out of step.
 *  4. Memory of a record being received is at most max_record (record.h
 *     invariant 2: it grows with the bytes that arrived, not with what a
 *     header claims, until 60 KiB of it did); a larger record kills the
 *     connection (-EMSGSIZE).
 *
 * Lock order (src/nfs4c ranks 700-799; nfs4c.h lists them all):
 *   736 nfs4c.send   one connection's socket writes
 *   740 nfs4c.conn   one connection's registered calls and state
 * on_call() runs with neither held.
 */
#ifndef JNFS_NFS4C_CONN_H
#define JNFS_NFS4C_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/list.h"
#include "base/lock.h"

struct nfs4c_conn;

/*
 * One call waiting for its reply. The caller owns it, sets xid, and keeps
 * it alive from nfs4c_conn_call() until nfs4c_conn_wait() returned
 * something other than -ETIMEDOUT, or nfs4c_conn_cancel() returned.
 */
struct nfs4c_call {
	uint32_t xid;
	uint8_t *reply; /* the reply record (malloc'd; the caller frees it) */
	size_t reply_len;

	/* private: guarded by the connection's lock */
	struct list link;
	struct cond cv;
	bool registered, done;
	int err;
};

void nfs4c_call_init(struct nfs4c_call *call);
/* Frees the reply, if any; the call must not be registered. */
void nfs4c_call_destroy(struct nfs4c_call *call);

/*
 * What the receiver does with a CALL record: rec (malloc'd, len bytes) now
 * belongs to on_call, which must not block (queue it for another thread).
 * NULL: calls are counted and dropped.
 */
typedef void (*nfs4c_on_call_fn)(struct nfs4c_conn *c, uint8_t *rec, size_t len, void *arg);

struct nfs4c_conn_cfg {
	size_t max_record;	     /* largest record accepted; default 4 MiB */
	unsigned send_timeout_ms;    /* a write blocked this long kills the connection; 60 s */
	unsigned connect_timeout_ms; /* default 10 s */
	nfs4c_on_call_fn on_call;
	void *on_call_arg;
};

struct nfs4c_conn_stats {
	uint64_t calls, replies,
		unmatched;	       /* our calls, their replies, replies nobody waited for */
	uint64_t cb_calls, cb_dropped; /* the server's calls, and those with no on_call */
};

/* Connect to "ADDR:PORT" or "[ADDR6]:PORT" and start the receiver.
 * cfg may be NULL (defaults). Returns 0 or -errno. */
int nfs4c_conn_open(const char *addr, const struct nfs4c_conn_cfg *cfg, struct nfs4c_conn **out);
/* The same over a connected stream socket the caller made (tests: a
 * socketpair); the connection owns fd from now on, also on failure. */
int nfs4c_conn_open_fd(int fd, const struct nfs4c_conn_cfg *cfg, struct nfs4c_conn **out);

/* Kill the connection (no-op when already DEAD): every waiting call gets
 * err (a negative errno), later ones too. Any thread, any time. */
void nfs4c_conn_shutdown(struct nfs4c_conn *c, int err);
/* Shut down, join the receiver, close the socket, drop the reference
 * nfs4c_conn_open gave. Not from the receiver or on_call. */
void nfs4c_conn_close(struct nfs4c_conn *c);

void nfs4c_conn_get(struct nfs4c_conn *c);
void nfs4c_conn_put(struct nfs4c_conn *c);

/* 0 while OPEN, else the error it died with. */
int nfs4c_conn_error(struct nfs4c_conn *c);

/*
 * Register call (call->xid) and send the record made of iov (record
 * marking is added here). Returns 0 (wait for it with nfs4c_conn_wait,
 * which also reports a failed send), -EEXIST when that xid is already
 * waiting, or the connection's error when it is DEAD (not registered).
 */
int nfs4c_conn_call(struct nfs4c_conn *c, struct nfs4c_call *call, const struct iovec *iov,
		    int niov);
/*
 * Wait up to timeout_ns (0: forever) for the reply. Returns 0 with
 * call->reply set; -ETIMEDOUT with the call still registered (wait again
 * or cancel); or the connection's error, the call no longer registered.
 */
int nfs4c_conn_wait(struct nfs4c_conn *c, struct nfs4c_call *call, uint64_t timeout_ns);
/* Unregister a call that is still waiting (true); a reply that comes
 * later is dropped as unmatched. False when it had completed meanwhile:
 * nfs4c_conn_wait() then returns its outcome at once. */
bool nfs4c_conn_cancel(struct nfs4c_conn *c, struct nfs4c_call *call);

/* Send one record that expects no reply (a backchannel reply, or raw
 * bytes for a test). Returns 0 or -errno (the connection is then DEAD). */
int nfs4c_conn_send(struct nfs4c_conn *c, const struct iovec *iov, int niov);

void nfs4c_conn_stats(struct nfs4c_conn *c, struct nfs4c_conn_stats *st);

/* A transaction id unique in this process (a counter that starts at a
 * random value), for calls on any connection. */
uint32_t nfs4c_next_xid(void);

/* True for the errors that mean "the connection is gone" (worth a
 * reconnect), as opposed to a peer that sent garbage. */
bool nfs4c_conn_err_is_transport(int err);

#endif
