/*
 * abuse.h - hostile and careless clients that nfs-load runs beside its
 * well-behaved ones (whose latency it measures), over raw ONC RPC:
 *
 *   idle      N connections that make one NULL call each, then stay
 *             silent; the ones the server closes are counted (at its
 *             connection limit it closes the idle one quiet longest,
 *             after --idle-timeout all of them);
 *   noread    N clients that pipeline NFSv3 READs of a 1 MiB file and
 *             never read a reply; when the server drops one (after its
 *             --send-timeout) it connects and starts again;
 *   halfsent  N connections that each send a record header announcing
 *             1 MiB and half of that record, then nothing; dropped ones
 *             (after the server's stall timeout) start again;
 *   flood     N clients that pipeline NULL and GETATTR calls as fast as
 *             the loopback takes them, and read every reply.
 *
 * Each keeps counting until abuse_stop(). Counters print as "abuse.*"
 * lines.
 */
#ifndef JNFS_BENCH_ABUSE_H
#define JNFS_BENCH_ABUSE_H

#include <stdio.h>

#include "load.h"

struct abuse_opts {
	const char *addr;
	unsigned idle, noread, halfsent, flood;
	struct load_fh root; /* GETATTR target of the flood */
	struct load_fh big;  /* a 1 MiB file: READ target of noread */
};

struct abuse;

/* Start the threads; NULL when nothing was asked for. */
struct abuse *abuse_start(const struct abuse_opts *o);
/* Stop and join every thread, close every connection. */
void abuse_stop(struct abuse *a);
/* "abuse.*" lines. */
void abuse_report(struct abuse *a, FILE *f);
void abuse_free(struct abuse *a);

#endif
