/*
 * testprog.h - an RPC program for the service tests (TESTPROG, versions 2
 * and 3), exercising what NFS will need: zero-copy payloads, credentials
 * as arguments, handler errors, deferral with timer / completion from
 * another thread / wake, a non-idempotent procedure behind the DRC,
 * calls back to the client over its own connection, and what a session
 * protocol needs: reply bounds, the encoded() hook, per-connection data
 * with its closed() and free() hooks.
 */
#ifndef JNFS_TESTS_TESTPROG_H
#define JNFS_TESTS_TESTPROG_H

#include <stdatomic.h>
#include <stdint.h>

#include "rpc/svc.h"

#define TESTPROG 0x20000101u
#define TEST_CBPROG 0x40000101u

enum {
	TP_NULL = 0,
	TP_ECHO = 1,     /* opaque<> in, the same opaque out (zero-copy both ways) */
	TP_WHOAMI = 2,   /* flavor, uid, gid, gids<>, machine */
	TP_SYSERR = 3,   /* handler fails */
	TP_BIG = 4,      /* result larger than max_reply: SYSTEM_ERR */
	TP_GARBAGE = 5,  /* handler finds the arguments meaningless */
	TP_PARK = 6,     /* (ms, tag): parked ms with a timer, then tag */
	TP_LATER = 7,    /* (ms): completed by another thread after ms */
	TP_WAKE = 8,     /* (ms): parked without timer, woken after ms; returns wake reason */
	TP_INCR = 9,     /* (n): counter += n, returns counter; non-idempotent (DRC) */
	TP_CB = 10,      /* (value, timeout_ms, mode): calls the client; returns status, value */
	TP_PARK_FOREVER = 11, /* parked until shutdown; returns the wake reason */
	TP_SIZED = 12,   /* (bound, n): reply_bound() says SVC_REPLY_HDR + bound; returns
			  * tag 7 and opaque<n> in two zero-copy pieces; reply_max is
			  * SVC_REPLY_HDR + TP_SIZED_MAX; encoded() copies the results */
	TP_FILL = 13,    /* (n): allocates n bytes in the handler, returns them (zero
			  * copy), freed by release; bound SVC_REPLY_HDR + 4 + n */
	TP_CONNDATA = 14, /* (mode): 0: attach data to the connection if it has none,
			   * count the call in it, return the count; 1: attach other
			   * data with other ops, return the (negated) error */
	TP_NPROCS
};

/* The callback program the server calls: proc 1 takes a u32, returns a u32. */
#define TEST_CB_PROC 1

enum { CB_MODE_NORMAL = 0, CB_MODE_CANCEL = 1 };

#define TP_SIZED_MAX (64u << 10)

/* Version 4 has version 3's procedures and a resume hook (struct
 * svc_version): a parked call's rerun answers TP_RESUMED + svc_req_wake()
 * (a u32) instead of running its handler again. */
#define TP_RESUMED 1000u

struct testprog_ctx {
	_Atomic uint32_t counter;       /* TP_INCR */
	_Atomic uint32_t incr_runs;     /* times the TP_INCR handler ran */
	_Atomic uint32_t shutdown_wakes;
	_Atomic uint32_t cb_done;       /* callbacks finished */
	_Atomic int cb_last_status;
	/* TP_SIZED's encoded() hook: calls and a copy of the last results */
	_Atomic uint32_t encoded_calls;
	uint8_t encoded[TP_SIZED_MAX + 64];
	size_t encoded_len;
	/* TP_FILL: buffers alive now (allocated, not yet released), the most */
	_Atomic uint32_t fill_live, fill_live_max;
	/* TP_CONNDATA: hooks run, and hooks run out of order (free before
	 * closed, or twice) */
	_Atomic uint32_t conn_closed, conn_freed, conn_hook_errors;
};

extern const struct svc_program testprog;

#endif
