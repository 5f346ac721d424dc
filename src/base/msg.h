/*
 * msg.h - diagnostic messages to stderr. Not the journal: that is log/.
 *
 * Every line carries the level and the subsystem given by the caller, e.g.
 *   jnfs: error: log: record at lsn 1/2048 has a bad CRC
 */
#ifndef JNFS_BASE_MSG_H
#define JNFS_BASE_MSG_H

#include "base/compiler.h"

enum msg_level { MSG_ERR = 0, MSG_WARN = 1, MSG_INFO = 2, MSG_DEBUG = 3 };

/* Messages above this level are dropped. Default MSG_INFO; JNFS_DEBUG=1 in the
 * environment raises it to MSG_DEBUG. */
void msg_set_level(enum msg_level level);
enum msg_level msg_get_level(void);

/* Program name printed in front of every message (default "jnfs"). */
void msg_set_prog(const char *prog);

void msg(enum msg_level level, const char *fmt, ...) __printf(2, 3);

#define msg_err(...)   msg(MSG_ERR, __VA_ARGS__)
#define msg_warn(...)  msg(MSG_WARN, __VA_ARGS__)
#define msg_info(...)  msg(MSG_INFO, __VA_ARGS__)
#define msg_debug(...) msg(MSG_DEBUG, __VA_ARGS__)

/* Print a message and abort: for broken invariants, never for bad input. */
_Noreturn void panic(const char *fmt, ...) __printf(1, 2);

/* Checked in every build; costs a compare. */
#define BUG_ON(cond)                                                                               \
	do {                                                                                       \
		if (unlikely(cond))                                                                \
			panic("BUG at %s:%d: %s", __FILE__, __LINE__, #cond);                      \
	} while (0)

#endif
