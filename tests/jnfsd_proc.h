/*
 * jnfsd_proc.h - starting and stopping a jnfsd child process by PID, and
 * reading its counters, for tests that talk to a real server. Free of any
 * RPC header, so that tests built on other RPC libraries (libnfs) can use
 * it too.
 */
#ifndef JNFS_TESTS_JNFSD_PROC_H
#define JNFS_TESTS_JNFSD_PROC_H

#include <stdint.h>
#include <sys/types.h>

/* A jnfsd child. */
struct tc_jnfsd {
	pid_t pid;
	uint16_t port[4];
	int nports;
	uint16_t metrics_port; /* with --metrics in args: its port, else 0 */
	int out_fd;	       /* the rest of its stdout */
	char dir[64];	       /* its image, unless args named one */
};
/* Start bin with args (NULL-terminated) and wait for its "listening on"
 * lines (one per --listen in args); a "metrics on" line before them gives
 * metrics_port. Without --image in args it serves a
 * fresh 256 MiB image in a temporary directory, removed by stop. */
void tc_jnfsd_start(struct tc_jnfsd *j, const char *bin, const char *const *args);
/* SIGTERM by PID and wait; returns the exit status (CHECK-fails if it does
 * not stop within 10 s, after killing it). */
int tc_jnfsd_stop(struct tc_jnfsd *j);
/* Read "name value" lines after SIGUSR1 (up to "stats.end"); returns the
 * value of name. */
uint64_t tc_jnfsd_stat(struct tc_jnfsd *j, const char *name);
/* Send sig and read its stdout up to the line `reply` (what jnfsd prints
 * once it acted on the signal). */
void tc_jnfsd_signal(struct tc_jnfsd *j, int sig, const char *reply);

#endif
