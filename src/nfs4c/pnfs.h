/*
 * pnfs.h - a pNFS block layout client (RFC 8881 section 12, RFC 5663) on
 * top of an nfs4c client: it gets layouts of files, reads and writes their
 * blocks on the shared disk itself (O_DIRECT), commits what it wrote with
 * LAYOUTCOMMIT, and returns layouts when asked (CB_LAYOUTRECALL) or done.
 * Used by `jnfs pnfs` and by tests that need a client holding layouts.
 * blk.h holds the arithmetic; docs/pnfs-client.md is the tour.
 *
 * Design note.
 *
 * Disks. The client is given candidate disks (block devices or image
 * files) and opens each O_DIRECT. A device id a layout names is described
 * by GETDEVICEINFO once and cached for the life of the client; its SIMPLE
 * volumes are found on the candidates by their signatures.
 *
 * A file (struct nfs4c_pnfs_file) is one OPEN of one file with its layout
 * state: the layout stateid (the open stateid is presented until the
 * first LAYOUTGET succeeded, RFC 8881 12.5.2), the extent map (blk.h), the
 * range written since the last LAYOUTCOMMIT and the last byte written.
 *
 *   write: plan each piece from the map; where no RW layout maps it,
 *          LAYOUTGET (RW, minlength one block) and plan again; write whole
 *          blocks to the disk, filling the rest of partly written blocks of
 *          INVALID_DATA with zeros (or the copy-on-write source) and of
 *          valid data with what the disk holds; then mark INVALID_DATA
 *          blocks written.
 *   read:  the same with READ layouts (an RW layout serves too); unwritten
 *          and hole extents read as zeros, nothing is read past the size.
 *   commit: LAYOUTCOMMIT of the written INVALID_DATA blocks (the layout
 *          update), loca_last_write_offset and loca_time_modify, even when
 *          the update is empty: for the server it is an fdatasync
 *          (docs/design.md rule 6).
 *
 * Threads may share a file, but like writes to a local disk, writes of
 * the same block at once by two threads are not ordered (each fills the
 * rest of a partly written block from what the disk held before it).
 * A call's disk I/O goes to the caller's own buffer where it and the
 * piece are aligned (DIO_ALIGN, whole blocks), else through a bounce
 * buffer of the call.
 *
 * Streams (struct nfs4c_pnfs_stream) keep the disk busy: one file read or
 * written in order, in slots of io bytes (a multiple of the block size, so
 * that no two slots share a block), `depth` of them in flight on as many
 * threads (their buffers one mapping in huge pages, touched at the open),
 * each through nfs4c_pnfs_write / nfs4c_pnfs_read and so under
 * every rule below. A write stream that knows where it ends also has a
 * thread that gets RW layouts up to `ahead` bytes past the writer, so that
 * the writers seldom wait for a LAYOUTGET (its error is left for the writer
 * that reaches the range to get again and report). The first error of any
 * slot fails the stream: no slot starts after it, and every call after it
 * returns it. Slot states:
 *
 *   FREE --(filled: write; queued: read)--> QUEUED --(a worker)--> BUSY
 *   BUSY --(the I/O ends)--> DONE --(reused: write; consumed: read)--> FREE
 *
 * The stream's state is under its file's lock (760), never held across
 * I/O or a call (invariant 1).
 *
 * Recalls. The callback thread answers CB_LAYOUTRECALL at once (never
 * waiting for I/O: the server's thread must not wait on us either): OK
 * and a return queued, NOMATCHING_LAYOUT for a file or stateid it does not
 * hold, DELAY when the recall names a layout stateid newer than it knows
 * while a LAYOUTGET of that file is in flight (its reply is still to come,
 * RFC 8881 12.5.5.2.1). A return thread then, per recalled file: stops new
 * I/O from using the layout, waits for the I/O in flight, commits what was
 * written (the data would be lost otherwise), sends LAYOUTRETURN for the
 * recalled range and iomode (FSID and ALL recalls: commits every file,
 * then one LAYOUTRETURN of that kind), forgets those extents and lets I/O
 * go on, which gets a layout again (RECALLCONFLICT, DELAY and TRYLATER
 * answers are retried with a growing pause for up to retry_ms). With
 * `hold`, recalls are acknowledged and ignored: nothing is ever returned
 * (the server must fence such a client, docs/design.md rule 9).
 *
 * Invariants:
 *  1. No lock of this layer is held while a call is on the wire or the
 *     disk is read or written; the two locks are never held together.
 *  2. A layout being returned is used by no I/O: I/O starts only on a
 *     file with no return pending, and the return starts only once the
 *     file's I/O in flight is done.
 *  3. Blocks written to INVALID_DATA extents are committed before their
 *     layout is returned (by a recall, nfs4c_pnfs_return or close).
 *  4. One LAYOUTGET and one LAYOUTCOMMIT per file at a time: a file's
 *     layout stateid only moves forward (seqid) or is replaced (other).
 *
 * Lock order (nfs4c.h's band; never nested with each other, invariant 1):
 *   750 nfs4c.pnfs       devices, the file list, the return queue, stats
 *   760 nfs4c.pnfs.file  one file's layout state
 *
 * Results: 0, an nfsstat4 (> 0) the server answered, or -errno.
 */
#ifndef JNFS_NFS4C_PNFS_H
#define JNFS_NFS4C_PNFS_H

#include <stdbool.h>
#include <stdint.h>

#include "nfs4c/blk.h"
#include "nfs4c/nfs4c.h"

#define NFS4C_PNFS_MAX_DISKS 16

struct nfs4c_pnfs;
struct nfs4c_pnfs_file;

struct nfs4c_pnfs_cfg {
	const char *const *disks; /* candidate disks: block devices or image files */
	unsigned ndisks;
	bool hold;	   /* acknowledge recalls and never return a layout */
	unsigned retry_ms; /* how long busy answers are retried (default 60 s) */
	uint32_t blksize;  /* layout_blksize; 0: 4096 */
	/* told of recalls and returns, one line each, on whichever thread saw
	 * them, with no lock held (may be NULL) */
	void (*note)(void *arg, const char *line);
	void *note_arg;
	/* for tests (may be NULL): called before each disk read or write of
	 * a file's data, with no lock held, on the thread doing it; -errno
	 * fails that I/O with it (an injected error), and it may block */
	int (*io_hook)(void *arg, bool wr, unsigned disk, uint64_t off, size_t len);
	void *io_hook_arg;
};

/*
 * Open the disks (O_RDWR | O_DIRECT) and answer CB_LAYOUTRECALL and
 * CB_RECALL_ANY for cl from now on. cl must have a session (nfs4c_mount);
 * ask for pNFS with cfg.eia_flags = EXCHGID4_FLAG_USE_PNFS_MDS. -errno
 * (e.g. a disk that cannot be opened: the message names it via note).
 */
int nfs4c_pnfs_create(struct nfs4c_client *cl, const struct nfs4c_pnfs_cfg *cfg,
		      struct nfs4c_pnfs **out);
/* Stop answering recalls, end the return thread, close the disks. Every
 * file must be closed. */
void nfs4c_pnfs_destroy(struct nfs4c_pnfs *p);

#define NFS4C_PNFS_CREATE (1u << 0) /* create if missing (UNCHECKED4, mode 0644) */
#define NFS4C_PNFS_EXCL	  (1u << 1) /* create, NFS4ERR_EXIST if it exists (GUARDED4) */
#define NFS4C_PNFS_TRUNC  (1u << 2) /* create if missing, size 0 (UNCHECKED4 with size 0) */
#define NFS4C_PNFS_RDONLY (1u << 3) /* OPEN for reading only */

/* OPEN name in directory dir (+ GETFH, GETATTR size). */
int nfs4c_pnfs_open(struct nfs4c_pnfs *p, const struct nfs4c_fh *dir, const char *name,
		    unsigned flags, struct nfs4c_pnfs_file **out);
/* Commit what is written, return the file's layouts (not with hold),
 * CLOSE, free: the first error, the file is gone either way. */
int nfs4c_pnfs_close(struct nfs4c_pnfs_file *f);

/* Get layouts of iomode until [off, off + len) is covered (bytes). */
int nfs4c_pnfs_layoutget(struct nfs4c_pnfs_file *f, layoutiomode4 iomode, uint64_t off,
			 uint64_t len);
/* Write / read through the layout; read stops at the size the client
 * knows (*got: bytes read). Buffers need no alignment. */
int nfs4c_pnfs_write(struct nfs4c_pnfs_file *f, uint64_t off, const void *buf, size_t len);
int nfs4c_pnfs_read(struct nfs4c_pnfs_file *f, uint64_t off, void *buf, size_t len, size_t *got);

#define NFS4C_PNFS_DEPTH_MAX 64
struct nfs4c_pnfs_stream;
struct nfs4c_pnfs_stream_cfg {
	unsigned depth; /* I/Os in flight, 1..NFS4C_PNFS_DEPTH_MAX (0: 8) */
	size_t io;	/* bytes per I/O, rounded up to blocks (0: 1 MiB; at most 64 MiB) */
	uint64_t end;	/* write: where it is expected to end (0: unknown, no layouts are
			 * got ahead); read: where it stops (0: the size at the start) */
	uint64_t ahead; /* write: layout bytes got ahead of the writer (0: 64 MiB) */
};
/* A stream of f from off (pnfs.h: Streams); wr: writes, else reads.
 * Close it before f. */
int nfs4c_pnfs_stream_open(struct nfs4c_pnfs_file *f, bool wr, uint64_t off,
			   const struct nfs4c_pnfs_stream_cfg *cfg, struct nfs4c_pnfs_stream **out);
/* Write: the room left in the slot being filled (waiting while every
 * slot is in flight); the caller writes up to *room bytes at *buf, then
 * submits them. The first error of the stream. */
int nfs4c_pnfs_stream_buf(struct nfs4c_pnfs_stream *s, void **buf, size_t *room);
/* Write: n (<= room) bytes more of the slot; a full slot is queued. */
void nfs4c_pnfs_stream_submit(struct nfs4c_pnfs_stream *s, size_t n);
/* Write: the next len bytes, copied (stream_buf and submit in a loop). */
int nfs4c_pnfs_stream_write(struct nfs4c_pnfs_stream *s, const void *buf, size_t len);
/* Read: the next bytes in order, *len 0 at the end; *data is the
 * stream's and lives until the next call. The first error of the stream. */
int nfs4c_pnfs_stream_next(struct nfs4c_pnfs_stream *s, const void **data, size_t *len);
/* Write: queue what is left and wait for every I/O; read: stop. End the
 * threads and free: the stream's first error. */
int nfs4c_pnfs_stream_close(struct nfs4c_pnfs_stream *s);

struct nfs4c_pnfs_commit_res {
	unsigned extents;  /* in the layout update(s) */
	unsigned commits;  /* LAYOUTCOMMITs sent (0: nothing was written) */
	bool size_changed; /* the server's locr_newsize */
	uint64_t new_size;
};
/* LAYOUTCOMMIT of everything written so far (res may be NULL). */
int nfs4c_pnfs_commit(struct nfs4c_pnfs_file *f, struct nfs4c_pnfs_commit_res *res);
/* Commit, then LAYOUTRETURN the file's layouts of iomode (ANY: all). */
int nfs4c_pnfs_return(struct nfs4c_pnfs_file *f, layoutiomode4 iomode);

const struct nfs4c_fh *nfs4c_pnfs_fh(const struct nfs4c_pnfs_file *f);
uint64_t nfs4c_pnfs_size(struct nfs4c_pnfs_file *f);
/* The open stateid (e.g. for READ through the server). */
struct stateid4 nfs4c_pnfs_open_stateid(const struct nfs4c_pnfs_file *f);
/* The layout stateid, false when the file holds none. */
bool nfs4c_pnfs_layout_stateid(struct nfs4c_pnfs_file *f, struct stateid4 *sid);
/* Extents the client holds for the file (of both lists). */
unsigned nfs4c_pnfs_extents(struct nfs4c_pnfs_file *f);

/* A device as GETDEVICEINFO described it and where it was found. */
struct nfs4c_pnfs_device {
	unsigned nvol;
	struct {
		pnfs_block_volume_type4 type;
		uint64_t size;
		int disk;	 /* SIMPLE: index into cfg.disks */
		unsigned nsig;	 /* SIMPLE */
		int64_t sig_off; /* SIMPLE: the first component */
		uint32_t sig_len;
	} vol[NFS4C_BLK_MAX_VOLS];
};
/* Describe (GETDEVICEINFO, once) and find a device. */
int nfs4c_pnfs_device(struct nfs4c_pnfs *p, const uint8_t id[NFS4_DEVICEID4_SIZE],
		      struct nfs4c_pnfs_device *out);

struct nfs4c_pnfs_stats {
	uint64_t layoutgets, layoutget_retries, layoutcommits, layoutreturns, getdeviceinfos;
	uint64_t recalls, recalls_returned, recalls_ignored, recalls_nomatch, recalls_delayed;
	uint64_t recall_any;
	uint64_t disk_writes, disk_write_bytes, disk_reads, disk_read_bytes, zero_bytes;
	uint64_t layoutget_ns;	  /* spent in LAYOUTGET calls (on any thread) */
	uint64_t layoutget_bytes; /* asked for by them */
	uint64_t layoutget_waits; /* I/Os that waited for another thread's LAYOUTGET */
};
void nfs4c_pnfs_stats(struct nfs4c_pnfs *p, struct nfs4c_pnfs_stats *st);

#endif
