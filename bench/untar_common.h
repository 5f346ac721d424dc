/*
 * untar_common.h - what nfs3-untar and nfs4-untar share: their options,
 * the tree they unpack (file sizes and contents from a seed), the counters
 * they read around the timed phase, and the lines they print.
 *
 * The two programs run one workload over two protocols, and bench/report.py
 * and tests/bench/test_report.py compare their outputs line by line; so the
 * parts that must agree live here once:
 *   1. client k's file i has the same size for every server, protocol and
 *      run with the same --seed (untar_file_size);
 *   2. both print the same "untar.*" lines and the same CSV columns
 *      (untar_report); nfs4-untar adds only untar.protocol.
 * The protocol work (calls, handles, connections) stays in each program.
 */
#ifndef JNFS_BENCH_UNTAR_COMMON_H
#define JNFS_BENCH_UNTAR_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "untar_counters.h"

#define UNTAR_MAX_CLIENTS 256
#define UNTAR_MAX_WSIZE	  (1u << 20)

struct untar_opts {
	const char *addr, *export, *label, *xfs_dev, *disk;
	unsigned port, mount_port, clients, per_dir, fanout, wsize;
	uint64_t files, seed;
	bool unstable, jnfsd_stats, csv;
};

/* Parse argv into *o (defaults first). --mount-port is accepted only with
 * with_mount_port; it defaults to --port. --help prints usage to stdout and
 * exits 0; a bad or missing option prints it to stderr and exits 2; a value
 * out of range (--wsize below min_wsize, ...) ends the program with die(). */
void untar_parse_opts(int argc, char **argv, struct untar_opts *o, bool with_mount_port,
		      unsigned min_wsize, const char *usage);

/* How many of the files client k makes: o->files shared out, the first
 * o->files % o->clients clients one more. */
uint32_t untar_client_files(const struct untar_opts *o, unsigned k);

/* The size of client k's file i (invariant 1): 5% 64 B-1 KiB, 85% 1-16 KiB,
 * 10% 16-64 KiB, drawn from o->seed. */
uint32_t untar_file_size(const struct untar_opts *o, unsigned k, uint32_t i);

/* Fill data with printable text, like source files. */
void untar_fill(char *data, size_t len);

/* The server's counters (--jnfsd-stats or --xfs-dev) and the disk's flush
 * counters (--disk) at one moment. */
struct untar_sample {
	struct untar_counters k;
	bool have, have_disk;
	uint64_t disk_flushes, disk_ms;
};

void untar_sample(const struct untar_opts *o, struct untar_sample *s);

/* What a run measured, for untar_report. */
struct untar_result {
	const char *protocol; /* printed as untar.protocol; NULL: no such line */
	double seconds;
	uint64_t dirs, bytes;
	unsigned nsteps;	       /* latency rows: untar.lat_us.NAME */
	const char *const *step_name;
	const uint64_t *step_count, *step_ns;
};

/* Print the "name value" lines and, with --csv, the CSV header and row
 * (invariant 2), from the samples s0 before and s1 after the timed phase. */
void untar_report(const struct untar_opts *o, const struct untar_result *r,
		  const struct untar_sample *s0, const struct untar_sample *s1);

#endif
