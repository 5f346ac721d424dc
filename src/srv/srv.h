/*
 * srv.h - the protocol-common server layer: what NFSv3, MOUNT and NFSv4 do
 * around the engine, written once (docs/design.md §2).
 *
 *   - admission: which export a request is for, whether its client may use
 *     it (client match, secure port), and the credential it acts with
 *     (squashing);
 *   - file handles: made, decoded and resolved here, with the export they
 *     name, for every protocol (NFSv4's pseudo filesystem too): no
 *     protocol holds the key;
 *   - the write verifier (rule 8) and directory cookie verifiers;
 *   - stability as a service: "send this request's reply once sequence S is
 *     durable (and the data device flushed if that force wrote nothing)",
 *     without a thread waiting (rules 5, 7, 8);
 *   - the permission rules (perm.h), applied and counted by the
 *     operations of vfs.h, the one way every protocol reaches them: the
 *     rules that decide (srv_may and its kin, srv_priv.h) are this
 *     layer's own, so an NFSv3 and an NFSv4 refusal are decided and
 *     counted (srv.perm_denied) in the same place.
 * The protocols keep only the translation between their wire types and
 * these calls. Nothing here includes a protocol's header.
 *
 * Errors are -errno, as the engine's; two more are this layer's own:
 * SRV_EBADHANDLE (a handle that is malformed or was not made by this
 * server: BADHANDLE) and -EXDEV (a second handle of a request names
 * another export). Each protocol turns them into its status in its one
 * translation function.
 */
#ifndef JNFS_SRV_SRV_H
#define JNFS_SRV_SRV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/stats.h"
#include "export/exports.h"
#include "export/fh.h"
#include "fs/fs.h"
#include "rpc/svc.h"

/* A handle that does not decode or verify (no engine call returns it). */
#define SRV_EBADHANDLE EBADR

struct srv {
	struct fs *fs;
	/* Roots resolved (exports_resolve). Replaced while serving
	 * (srv_swap_exports): a handler loads it once per use with
	 * srv_exports() and may keep what it got until it returns, never
	 * longer (the old table is freed after svc_synchronize()). */
	const struct exports *_Atomic exports;
	uint8_t fh_key[16];   /* file handle MACs: srv_fh_* only */
	uint8_t verf_key[16]; /* readdir cookie verifiers */
	uint8_t boot_verf[8]; /* new at every start */
	struct {
		counter_t stale, badhandle, perm_denied, sync_waits, sync_flushes, jukebox;
	} st;
};

/* Set up (keys from the filesystem's secret, a fresh boot verifier). */
void srv_init(struct srv *s, struct fs *fs, const struct exports *e);
/* The exports table now, for a handler. */
static inline const struct exports *srv_exports(struct srv *s)
{
	return atomic_load_explicit(&s->exports, memory_order_acquire);
}
/* Serve e from now on; returns the table it replaces, which the caller
 * frees once no handler can hold it (svc_synchronize). */
const struct exports *srv_swap_exports(struct srv *s, const struct exports *e);

/* "srv.*" counters. */
void srv_stats(struct srv *s, const struct stat_sink *sink);

/*
 * The write verifier of WRITE and COMMIT replies (rule 8): new at every
 * start, and changed whenever a flush of the data device failed, so that a
 * client resends unstable data the device may have dropped.
 */
void srv_write_verf(struct srv *s, uint8_t out[8]);

/*
 * The cookie verifier of a directory listing (NFSv3 READDIR, NFSv4
 * READDIR): the engine's cookies stay valid while entries come and go, so
 * the verifier only ties a cookie to its directory (dir: its attributes),
 * a keyed hash of the inode number and generation. The same for every
 * listing of that directory, in every protocol, until a restart.
 */
void srv_cookie_verf(const struct srv *s, const struct fs_attr *dir, uint8_t out[8]);

/* ---- admission ---- */

/* A caller admitted to an export: its options for this client, the
 * credential after squashing, and the server that admitted it (whose
 * counters the operations of vfs.h count refusals in). */
struct srv_exp {
	const struct export *ex;
	const struct export_opts *opts;
	struct export_cred cred;
	/* The caller as a holder of pNFS layouts (its NFSv4 clientid; 0 for
	 * NFSv3): a change that conflicts with its own layout answers "delay"
	 * at once, one that conflicts with another's may wait (rule 9). */
	uint64_t holder;
	struct srv *srv; /* that admitted it (srv_admit) */
};

/*
 * May the caller of rq (credential rc) use ex? 0 and *out filled; -EACCES
 * when the export does not admit the client's address, -EPERM when it
 * asks for a privileged source port and the client has none. Refusals
 * are counted.
 */
int srv_admit(struct srv *s, const struct export *ex, struct svc_req *rq, const struct rpc_cred *rc,
	      struct srv_exp *out);

/* ---- file handles ----
 *
 * Every handle a client sends is decoded here, under this layer's key, and
 * counted here: a protocol never sees the key. NFSv3 and NFSv4 decode
 * (srv_fh_decode), then resolve what they decoded (srv_fh_resolve); NFSv4
 * first looks whether the handle names a node of its pseudo filesystem,
 * whose handles it has made with srv_fh_make_pseudo. */

/* The handle of the inode with attributes a in ex (FH_SIZE bytes). */
void srv_fh_make(const struct srv *s, const struct export *ex, const struct fs_attr *a,
		 uint8_t out[FH_SIZE]);

/* The handle of a node of a namespace the protocol makes up (NFSv4's
 * pseudo filesystem): fsid one that no export has (the protocol refuses an
 * export with it), ino the node's fileid, generation 0. Under the same MAC
 * as every handle, so a client can no more forge one than another. */
void srv_fh_make_pseudo(const struct srv *s, uint32_t fsid, uint64_t ino, uint8_t out[FH_SIZE]);

/* Decode and verify a wire handle into *fh: 0, or SRV_EBADHANDLE (negated,
 * counted in srv.badhandle) for one malformed or not made by this server.
 * Each wire handle is decoded once, so each bad one is counted once. */
int srv_fh_decode(struct srv *s, const void *wire, size_t len, struct fh *fh);

/*
 * The inode a decoded handle (srv_fh_decode) names, for the caller of rq.
 * When e->ex is NULL the handle decides the export, and e is filled by
 * srv_admit; otherwise the handle must be of that export (-EXDEV: a second
 * handle of LINK or RENAME). Returns 0 and a reference in *ip; -ESTALE (no
 * such export or inode: counted in srv.stale), or srv_admit's refusals.
 */
int srv_fh_resolve(struct srv *s, struct svc_req *rq, const struct rpc_cred *rc,
		   const struct fh *fh, struct srv_exp *e, struct fs_inode **ip);

/* ---- stability as a service ---- */

/* The force a parked reply waited for failed (the journal is shut down):
 * put the protocol's I/O error into the reply. Runs before it is encoded. */
typedef void (*srv_failed_fn)(void *arg, int err);

/*
 * Send rq's reply once csn is durable, and, with data, once the data device
 * holds what was written before this call (rule 5: flushed when the force
 * wrote no log) and no flush of it failed since data_mark was read
 * (srv_data_mark, before the data went to the engine): a failed flush,
 * whoever ran it, may have lost the data although the flush that followed
 * succeeded (src/dev/dev.h, F6), and then failed() gets -EIO: the client
 * writes again instead of being told "stable" (S1, below). csn 0 and
 * !data: nothing to wait for (SVC_OK at once).
 * The request is parked (svc_defer) while it waits: no thread waits with
 * it. Returns what the handler returns: SVC_OK (the reply may go now,
 * possibly with failed() applied) or SVC_DEFERRED (it will be sent by
 * whoever completes the force).
 *
 * The waiter lives in the request (svc_req_scratch), so when the request
 * runs again (svc_req_wake(rq) != SVC_WAKE_NONE) srv_stable_resume() must
 * be what runs: at the start of the handler, or as its version's resume
 * hook (struct svc_version). failed() runs at most once, before the reply
 * is encoded, on whichever thread ends the wait.
 *
 *   S1 A reply that says data is stable (a WRITE with DATA_SYNC or
 *      FILE_SYNC whose data was not logged, an NFSv4 COMMIT, whose
 *      verifier is read before the wait) is sent only if no flush of the
 *      data device failed between the moment before its data went to the
 *      device (data_mark) and the end of its wait; else it is an I/O
 *      error. NFSv3's COMMIT needs no mark: its verifier is read after
 *      the wait (srv_reply_committed) and moves with any failed flush.
 */
enum svc_stat srv_reply_stable(struct srv *s, struct svc_req *rq, uint64_t csn, bool data,
			       uint64_t data_mark, srv_failed_fn failed, void *failed_arg);
/* data_mark for srv_reply_stable: read before the data goes to the engine
 * (one atomic load). */
static inline uint64_t srv_data_mark(struct srv *s)
{
	return fs_data_mark(s->fs);
}
/*
 * COMMIT's reply: as srv_reply_stable(csn, data = true) without S1, and once the data
 * is durable the write verifier is read into verf (part of the result: it
 * must live until the reply is encoded), so that a flush of the data device
 * that failed anywhere before that moment - for this request or another -
 * shows in it (rule 8) and the client sends its unstable data again. Not
 * read when failed() is called instead.
 */
enum svc_stat srv_reply_committed(struct srv *s, struct svc_req *rq, uint64_t csn, uint8_t verf[8],
				  srv_failed_fn failed, void *failed_arg);
/* The rerun of a request parked by srv_reply_stable or srv_reply_committed
 * (at server shutdown): says what to answer. */
enum svc_stat srv_stable_resume(struct srv *s, struct svc_req *rq);

#endif
