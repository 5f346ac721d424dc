/*
 * nfs3_bench.h - the libnfs set-up that nfs3-untar and nfs3-create-after
 * share: file handles, a connection, MNT of the export, and the run's own
 * directory.
 *
 * The set-up is not timed, so these calls are synchronous: each drives its
 * one RPC context through poll() until the reply, and a failure (an RPC
 * error, an NFS status other than OK, no reply for two minutes) ends the
 * program with die(). The timed calls stay asynchronous in each program.
 *
 * Include after <sys/time.h> (libnfs.h uses struct timeval) and libnfs's
 * headers. Not for files that include jnfs's own RPC headers: the two
 * define the same protocol names.
 */
#ifndef JNFS_BENCH_NFS3_BENCH_H
#define JNFS_BENCH_NFS3_BENCH_H

#include <stdint.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

/* A file handle the program keeps (libnfs's point into its reply). */
struct fh {
	uint32_t len;
	char data[NFS3_FHSIZE];
};

/* fh as a call argument; valid while fh is. */
nfs_fh3 fh_arg(struct fh *fh);

/* Copy a handle out of a reply; dies on one longer than NFS3_FHSIZE. */
void fh_copy(struct fh *dst, const nfs_fh3 *src);

/* Arguments of CREATE (GUARDED, mode 0644) of name in dir. */
void create_args(CREATE3args *a, struct fh *dir, const char *name);

/* A new RPC context connected to addr:port over TCP. */
struct rpc_context *bench_nfs3_connect(const char *addr, unsigned port);

/* MNT export from the mount service at addr:port, on a connection of its
 * own that is closed again; the export's root handle in *root. */
void bench_nfs3_mount(const char *addr, unsigned port, const char *export, struct fh *root);

/* MKDIR name (mode 0755) in dir over rpc; the new directory's handle in
 * *out. The caller has nothing else in flight on rpc. */
void bench_nfs3_mkdir(struct rpc_context *rpc, struct fh *dir, const char *name,
		      struct fh *out);

#endif
