/*
 * stream.h - what the parts of stream-bench share (bench/stream.c says what
 * the program measures). The NFSv3 part is built on libnfs, the NFSv4.1
 * part on the project's own client (src/nfs4c); their headers define the
 * same protocol names, so each lives in its own file and this header
 * includes neither.
 */
#ifndef JNFS_BENCH_STREAM_H
#define JNFS_BENCH_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#define STREAM_MAX_STREAMS 64
#define STREAM_MAX_DEPTH   64
#define STREAM_MAX_IO	   (1u << 20)

struct stream_opts {
	const char *proto; /* nfs3, nfs4, raw, tcp */
	bool read;	   /* else write */
	bool filesync;	   /* FILE_SYNC writes (raw: O_DSYNC); else UNSTABLE + COMMIT */
	unsigned streams;  /* files and connections */
	uint32_t io;	   /* bytes per call */
	uint64_t bytes;	   /* per stream */
	unsigned depth;	   /* calls in flight per stream */
	const char *addr;
	unsigned port, mount_port;
	const char *export; /* NFSv3: the MNT path; NFSv4.1: from the pseudo-root */
	const char *dir;    /* the directory in the export holding the files */
	const char *prefix; /* file k is PREFIX-fK */
	const char *path;   /* raw: the image file or device */
};

extern struct stream_opts so;
/* What is written at offset o of a file (or of the raw image): byte o %
 * STREAM_MAX_IO of stream_data, whatever the I/O size (every size divides
 * STREAM_MAX_IO); reads check it. Aligned for O_DIRECT. */
extern char stream_data[STREAM_MAX_IO];
static inline const char *stream_data_at(uint64_t off)
{
	return stream_data + off % STREAM_MAX_IO;
}

/* Every timed thread calls this first: it returns when all are set up
 * and the clock starts. */
void stream_wait_start(void);

/* One stream of a protocol: set up (connect, find or create the file; not
 * timed), run (timed, in its own thread), tear down (not timed). */
void *nfs3_stream_setup(unsigned k);
void *nfs3_stream_run(void *s);
void nfs3_stream_teardown(void *s);
void *nfs4_stream_setup(unsigned k);
void *nfs4_stream_run(void *s);
void nfs4_stream_teardown(void *s);

#endif
