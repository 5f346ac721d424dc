/*
 * nfs3.h - NFSv3 (RFC 1813) and MOUNT v3 on the filesystem engine.
 *
 * Stability (DESIGN.md rules 7 and 8): on a sync export every procedure
 * that changes metadata replies only once the journal holds its own
 * transaction (forced to its sequence, never further); on an async export
 * it replies at once. WRITE is as stable as the client asked (UNSTABLE,
 * DATA_SYNC: fdatasync, FILE_SYNC: fsync) and COMMIT is an fsync, on any
 * export. The waits happen without a worker thread: the request is parked
 * and the journal's completion sends the reply (or wakes a worker when the
 * data device must still be flushed). The write verifier is new at every
 * start and moves whenever a write or flush of the data device fails.
 */
#ifndef JNFS_NFS3_NFS3_H
#define JNFS_NFS3_NFS3_H

#include "base/lock.h"
#include "base/stats.h"
#include "export/exports.h"
#include "fs/fs.h"
#include "rpc/svc.h"

struct nfs3_mount;

struct nfs3_server {
	struct fs *fs;
	/* Roots resolved (exports_resolve). Replaced while serving
	 * (nfs3_swap_exports): a handler loads it once per use with
	 * nfs3_exports() and may keep what it got until it returns, never
	 * longer (the swapper frees the old table after svc_synchronize). */
	const struct exports *_Atomic exports;
	uint8_t fh_key[16];   /* file handle MACs */
	uint8_t verf_key[16]; /* READDIR cookie verifiers */
	uint8_t write_verf[8]; /* this start's; the data epoch is added (nfs3_write_verf) */
	/* 480 nfs3.mnt_lock (base/lock_classes.h): the MOUNT list; nothing is
	 * taken under it */
	struct mutex mnt_lock;
	struct nfs3_mount *mounts;
	struct {
		counter_t sync_waits, sync_flushes, stale, badhandle, perm_denied, jukebox;
	} st;
};

/* Set up (keys from the filesystem, a fresh write verifier). */
void nfs3_server_init(struct nfs3_server *s, struct fs *fs, const struct exports *e);
void nfs3_server_destroy(struct nfs3_server *s);

/* The exports table now, for a handler. */
static inline const struct exports *nfs3_exports(struct nfs3_server *s)
{
	return atomic_load_explicit(&s->exports, memory_order_acquire);
}

/* Serve e from now on; returns the table it replaces, which handlers
 * running now may still read: free it only after svc_synchronize(). */
const struct exports *nfs3_swap_exports(struct nfs3_server *s, const struct exports *e);

/* The version tables to register (ctx: the struct nfs3_server). */
extern const struct svc_version nfs3_version;
extern const struct svc_version mount3_version;

/* nfs3.* counters. */
void nfs3_stats(struct nfs3_server *s, const struct stat_sink *sink);

/* The write verifier: new at every start, and moved by every failed write
 * or flush of the data device (fs_data_epoch). */
void nfs3_write_verf(const struct nfs3_server *s, uint8_t out[8]);

/* Engine errors become NFS3 status codes here, and only here. */
uint32_t nfs3_status(int err);

#endif
