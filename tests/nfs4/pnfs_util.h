/*
 * pnfs_util.h - what the pNFS end-to-end tests share: a jnfsd with a
 * `pnfs` export on an image file of the test's own, clients of the
 * project's NFSv4.1 library (src/nfs4c) that speak the layout operations
 * one compound at a time and hand back the server's status (so that a test
 * can send what a well-behaved client never would), and the jnfs tool run
 * as a child. Every failure of the harness itself is a CHECK (exit 1); a
 * status the server answered is the caller's to judge.
 */
#ifndef JNFS_TESTS_PNFS_UTIL_H
#define JNFS_TESTS_PNFS_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "jnfsd_proc.h"
#include "nfs4c/blk.h"
#include "nfs4c/nfs4c.h"

#define PU_OUT_MAX (1u << 20)

/* A jnfsd serving dir/img with an exports file dir/exports. */
struct pu_server {
	const char *jnfsd, *jnfs;
	char dir[64], image[96], exports[96], addr[64], url[96];
	struct tc_jnfsd j;
	bool running;
};

/* A fresh temporary directory with an exports file of the given lines
 * (NULL: `/` exported rw,pnfs to 127.0.0.1). The image is made by the
 * first start (or by the caller with pu_jnfs: mkfs, io). */
void pu_init(struct pu_server *s, const char *jnfsd, const char *jnfs, const char *exports);
/* Start jnfsd on the image with the extra arguments (NULL-terminated, may
 * be NULL): its own port on 127.0.0.1, no rpcbind. */
void pu_start(struct pu_server *s, const char *const *extra);
/* SIGTERM, wait, status 0. */
void pu_stop(struct pu_server *s);
/* SIGKILL (a power cut with --crash), wait. */
void pu_kill(struct pu_server *s);
/* `jnfs check` of the image: clean. Then the directory is removed. */
void pu_finish(struct pu_server *s);

/* Start argv (NULL-terminated) with its stdout on a pipe, killed when the
 * test dies: its pid, *out the pipe's read end (the caller's to close). */
pid_t pu_spawn(const char *const *argv, int *out);
/* Run argv (NULL-terminated) with its stdout captured in out (PU_OUT_MAX,
 * NUL-terminated; NULL: discarded); its exit status, -1 for a signal. */
int pu_run(char *out, const char *const *argv);
/* pu_run, then "$ argv" and the output (not NULL) echoed to our stdout,
 * for the test's log. */
int pu_run_echo(char *out, const char *const *argv);
/* The value of a "name value" line; UINT64_MAX when absent. */
uint64_t pu_value(const char *text, const char *name);

/* A client mounted on the server, asking for pNFS; owner names it. */
struct nfs4c_client *pu_client(const struct pu_server *s, const char *owner, struct nfs4c_fh *root);
void pu_client_end(struct nfs4c_client *cl);

/* A path of directories under the root ("" or "/": the root). */
void pu_lookup(struct nfs4c_client *cl, const struct nfs4c_fh *root, const char *path,
	       struct nfs4c_fh *out);

/* OPEN name in dir (create: UNCHECKED4 mode 0644), access OPEN4_SHARE_*. */
nfsstat4 pu_open(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *name, bool create,
		 uint32_t access, struct nfs4c_fh *fh, struct stateid4 *sid);
void pu_close(struct nfs4c_client *cl, const struct nfs4c_fh *fh, const struct stateid4 *sid);
nfsstat4 pu_write(struct nfs4c_client *cl, const struct nfs4c_fh *fh, const struct stateid4 *sid,
		  uint64_t off, const void *data, uint32_t len, stable_how4 how);
/* READ exactly len bytes (short only at EOF: *got). */
nfsstat4 pu_read(struct nfs4c_client *cl, const struct nfs4c_fh *fh, const struct stateid4 *sid,
		 uint64_t off, void *buf, uint32_t len, uint32_t *got);
/* GETATTR size and change. */
void pu_getattr(struct nfs4c_client *cl, const struct nfs4c_fh *fh, uint64_t *size,
		uint64_t *change);

#define PU_MAX_EXT 64
struct pu_layout {
	struct stateid4 stateid;
	uint64_t off, len;
	layoutiomode4 iomode;
	unsigned n;
	struct nfs4c_blk_ext ext[PU_MAX_EXT];
};
/* LAYOUTGET (block volume); on NFS4_OK *out has the layout decoded. */
nfsstat4 pu_layoutget(struct nfs4c_client *cl, const struct nfs4c_fh *fh, layoutiomode4 iomode,
		      uint64_t off, uint64_t len, uint64_t minlen, const struct stateid4 *sid,
		      uint32_t maxcount, struct pu_layout *out);
/* LAYOUTCOMMIT of the extents given (their storage offsets as they are:
 * the test may lie), loca_last_write_offset last_write unless UINT64_MAX;
 * *new_size (may be NULL) the server's answer, or UINT64_MAX when it
 * said the size did not change. */
nfsstat4 pu_layoutcommit(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
			 const struct stateid4 *sid, const struct nfs4c_blk_ext *ext, unsigned n,
			 uint64_t last_write, uint64_t *new_size);
/* LAYOUTRETURN; kind FILE uses fh, off, len and sid (fh NULL: no PUTFH).
 * *out (may be NULL) gets the layout stateid the server answered, seqid 0
 * when it said none is left (lrs_present false). */
nfsstat4 pu_layoutreturn(struct nfs4c_client *cl, const struct nfs4c_fh *fh, layoutiomode4 iomode,
			 layoutreturn_type4 kind, uint64_t off, uint64_t len,
			 const struct stateid4 *sid, struct stateid4 *out);
/* GETDEVICEINFO of id; maxcount 0: no limit. */
nfsstat4 pu_getdeviceinfo(struct nfs4c_client *cl, const uint8_t id[NFS4_DEVICEID4_SIZE],
			  uint32_t maxcount);

/* Bytes that differ by offset and seed. */
void pu_pattern(uint8_t *b, size_t len, uint64_t off, uint32_t seed);

#endif
