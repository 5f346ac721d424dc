#include "base/msg.h"

#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static enum msg_level msg_level_cur = MSG_INFO;
static const char *msg_prog = "jnfs";
static int msg_env_checked;

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void msg_set_level(enum msg_level level)
{
	msg_level_cur = level;
	msg_env_checked = 1;
}

enum msg_level msg_get_level(void)
{
	if (!msg_env_checked) {
		const char *e = getenv("JNFS_DEBUG");
		if (e && *e && *e != '0')
			msg_level_cur = MSG_DEBUG;
		msg_env_checked = 1;
	}
	return msg_level_cur;
}

void msg_set_prog(const char *prog)
{
	msg_prog = prog;
}

void msg(enum msg_level level, const char *fmt, ...)
{
	if (level > msg_get_level())
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* one write per line so that threads do not interleave */
	fprintf(stderr, "%s: %s: %s\n", msg_prog, level_names[level], line);
}

void panic(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: panic: %s\n", msg_prog, line);
	/* where: function names need -rdynamic, addresses are enough for
	 * addr2line */
	void *frames[32];
	int n = backtrace(frames, 32);
	backtrace_symbols_fd(frames, n, 2);
	abort();
}
