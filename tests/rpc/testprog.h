/*
 * testprog.h - an RPC program for the service tests (TESTPROG, versions 2
 * and 3), exercising what NFS will need: zero-copy payloads, credentials
 * as arguments, handler errors, deferral with timer / completion from
 * another thread / wake, a non-idempotent procedure behind the DRC, and
 * calls back to the client over its own connection.
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
	TP_NPROCS
};

/* The callback program the server calls: proc 1 takes a u32, returns a u32. */
#define TEST_CB_PROC 1

enum { CB_MODE_NORMAL = 0, CB_MODE_CANCEL = 1 };

struct testprog_ctx {
	_Atomic uint32_t counter;       /* TP_INCR */
	_Atomic uint32_t incr_runs;     /* times the TP_INCR handler ran */
	_Atomic uint32_t shutdown_wakes;
	_Atomic uint32_t cb_done;       /* callbacks finished */
	_Atomic int cb_last_status;
};

extern const struct svc_program testprog;

#endif
