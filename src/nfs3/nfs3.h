/*
 * nfs3.h - NFSv3 (RFC 1813) and MOUNT v3 on the shared server layer.
 *
 * This layer only translates: wire arguments to the calls of src/srv
 * (admission and squashing, handles, the permission rules and the
 * operations that apply them, the write verifier, stability) and the
 * engine's answers back to wire results. Stability (docs/design.md rules 7
 * and 8): on a sync export every procedure that changes metadata replies
 * only once the journal holds its own transaction; WRITE is as stable as
 * the client asked and COMMIT is an fsync, on any export. The waits are
 * srv_reply_stable's: no thread waits with them.
 */
#ifndef JNFS_NFS3_NFS3_H
#define JNFS_NFS3_NFS3_H

#include <stdint.h>

#include "base/lock.h"
#include "rpc/svc.h"
#include "srv/srv.h"

struct nfs3_mount;

/* What NFSv3 and MOUNT keep of their own: the list MOUNT's DUMP shows.
 * Everything else is the shared server's. */
struct nfs3_server {
	struct srv *srv;
	/* 480 nfs3.mnt_lock (base/lock_classes.h): the MOUNT list; nothing is
	 * taken under it */
	struct mutex mnt_lock;
	struct nfs3_mount *mounts;
};

/* Serve NFSv3 and MOUNT through srv (which must outlive s). */
void nfs3_server_init(struct nfs3_server *s, struct srv *srv);
void nfs3_server_destroy(struct nfs3_server *s);

/* The version tables to register (ctx: the struct nfs3_server). */
extern const struct svc_version nfs3_version;
extern const struct svc_version mount3_version;

/* Engine and server errors (-errno, SRV_EBADHANDLE) become NFS3 status
 * codes (an nfsstat3) here, and only here. */
int32_t nfs3_status(int err);

#endif
