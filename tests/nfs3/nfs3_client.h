/*
 * nfs3_client.h - what the NFSv3 tests share on top of libnfs: calls of
 * its raw API made synchronous (one call, then poll until its callback),
 * the handles they return kept, mounting through a URL, and a handle
 * for a path.
 *
 * libnfs's headers clash with src/rpc's, so nothing here includes those.
 */
#ifndef JNFS_TESTS_NFS3_CLIENT_H
#define JNFS_TESTS_NFS3_CLIENT_H

#include <sys/time.h>

#include <stdbool.h>
#include <stdint.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

/* One raw call: pass it as private data with raw_cb as the callback. */
struct raw {
	bool done;
	int rpc_status;
	uint32_t nfs_status;
	void (*inspect)(struct raw *r, void *res);
	/* what inspect functions keep */
	struct nfs_fh3 fh;
	char fhbuf[64];
	uint64_t u64[4];
	uint32_t u32[4];
	uint8_t verf[8];
	char text[1024];
};

void raw_cb(struct rpc_context *rpc, int status, void *data, void *priv);
/* Service rpc until r's callback ran: 0 if the call succeeded at the RPC
 * level (r->nfs_status holds the NFS status), -1 otherwise, or when
 * tn_abort is set (a test that killed the server; libnfs would otherwise
 * keep reconnecting), or after 20 s. */
extern volatile int tn_abort;
int raw_wait(struct rpc_context *rpc, struct raw *r);
/* Make a call and wait; CHECK-fails unless the RPC itself succeeded. */
#define RAW(rpc, r, call)                                                                          \
	do {                                                                                       \
		(r)->done = false;                                                                 \
		CHECK_OK(call);                                                                    \
		CHECK_OK(raw_wait(rpc, r));                                                        \
	} while (0)
/* The same, returning 0 or -1 instead (for a server that may be gone). */
#define RAW_TRY(rpc, r, call) ((r)->done = false, (call) ? -1 : raw_wait(rpc, r))

void keep_fh(struct raw *r, const struct nfs_fh3 *fh);
/* inspect hooks: the handle (lookup, create, mnt), count/committed/verf
 * (write), verf (commit), size/mode/ctime/nlink/atime/mtime (getattr) */
void inspect_lookup(struct raw *r, void *res);
void inspect_create(struct raw *r, void *res);
void inspect_write(struct raw *r, void *res);
void inspect_commit(struct raw *r, void *res);
void inspect_getattr(struct raw *r, void *res);
void inspect_mnt(struct raw *r, void *res);
/* For rpc_connect_port_async(). */
void connect_cb(struct rpc_context *rpc, int status, void *data, void *priv);

/* Mount export of the jnfsd on 127.0.0.1:port (NFS and MOUNT on one port)
 * as uid/gid. */
struct nfs_context *tn_mount(uint16_t port, const char *export, int uid, int gid);
/* The handle of path under export: MNT, then one LOOKUP per component on
 * nfs_rpc. */
struct nfs_fh3 tn_handle_of(struct rpc_context *nfs_rpc, uint16_t port, const char *export,
			    const char *path, struct raw *keep);
/* system() of a formatted command; CHECK-fails unless it exits 0. */
void tn_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
