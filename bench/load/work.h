/*
 * work.h - nfs-load's workload: one client's seeded mix of operations,
 * its model of what every acknowledged reply promised, and the checks of
 * the server against that model. See work.c for the model's rules.
 */
#ifndef JNFS_BENCH_WORK_H
#define JNFS_BENCH_WORK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"
#include "load.h"

/* Operation kinds, for counters and latency. */
enum op_kind {
	OP_CREATE,
	OP_WRITE_UNSTABLE,
	OP_WRITE_DATASYNC,
	OP_WRITE_FILESYNC,
	OP_COMMIT,
	OP_READ,
	OP_REMOVE,
	OP_RENAME,
	OP_LINK,
	OP_MKDIR,
	OP_RMDIR,
	OP_SETATTR,
	OP_READDIR,
	OP_GETATTR,
	OP_LOOKUP,
	OP_NKINDS
};

extern const char *const op_names[OP_NKINDS];

struct work_opts {
	const struct load_proto *proto;
	struct load_conn_opts conn;
	const char *dir; /* the run's directory under the export */
	uint64_t seed;
	unsigned files;	   /* file names per client in its own directory */
	unsigned dirs;	   /* directory names per client */
	unsigned shared;   /* names per client in the shared directory */
	uint64_t file_max; /* largest file, bytes (a multiple of 256) */
	uint32_t wsize;	   /* largest WRITE */
	bool fill;	   /* full-disk mode: appending writes, free space on NOSPC */
	unsigned think_us; /* pause between operations (0: none) */
};

/* What one client counted. */
struct work_stats {
	uint64_t ops[OP_NKINDS];
	uint64_t errs[OP_NKINDS][LOAD_NST]; /* replies other than OK, by status */
	struct hist lat[OP_NKINDS];	    /* ops sent once, no DELAY */
	uint64_t retried_ops;		    /* ops sent more than once */
	uint64_t delays;		    /* DELAY (JUKEBOX) answers waited out */
	uint64_t mismatches;		    /* replies that contradict the model */
	uint64_t lost;			    /* promises broken after a restart */
	uint64_t restarts;		    /* write verifier changes seen */
	uint64_t recoveries;		    /* checks after a reconnect */
	uint64_t resent_bytes;		    /* unstable data sent again */
	uint64_t short_writes;
	uint64_t nospc;		 /* NOSPC answers */
	uint64_t ok_after_nospc; /* writes that succeeded after a NOSPC */
	uint64_t verified_files, verified_names, verified_bytes;
	uint64_t bytes_written, bytes_read;
	uint64_t tainted; /* names or files given up after an error */
};

struct worker;

/* Set up client id: connect, make the run's directories, empty its own.
 * 0 or -errno (the reason printed). */
int work_init(struct worker **out, const struct work_opts *o, unsigned id);
/* Run operations until *stop is set; then send what must be sent again and
 * check everything against the model. 0, or -ECONNRESET if the server
 * could not be reached. */
int work_run(struct worker *w, const volatile bool *stop);
/* The client's counters, and its interval latency histogram (all ops),
 * which the caller takes and resets under the worker's lock. */
const struct work_stats *work_stats(struct worker *w);
void work_take_interval(struct worker *w, struct hist *into, uint64_t *ops);
struct load_client *work_client(struct worker *w);
void work_free(struct worker *w);

/* At most this many mismatch lines are printed (all are counted). */
void work_set_report_limit(unsigned n);

#endif
