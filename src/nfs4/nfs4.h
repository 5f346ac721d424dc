/*
 * nfs4.h - the NFSv4.1 and 4.2 server (RFC 8881, RFC 7862) on the shared
 * server layer: what jnfsd sets up and registers. docs/nfs4.md is the
 * design; nfs4_priv.h what the source files share.
 *
 * Served on the NFS program (100003) as version 4, beside NFSv3, on the
 * same port. Minor versions 1 and 2; 4.0 answers MINOR_VERS_MISMATCH.
 * Client records that let clients reclaim after a restart are kept in the
 * engine's durable record store; the server starts in a grace period.
 */
#ifndef JNFS_NFS4_NFS4_H
#define JNFS_NFS4_NFS4_H

#include <stdbool.h>
#include <stdint.h>

#include "base/stats.h"
#include "rpc/svc.h"
#include "srv/srv.h"

struct nfs4_server;

struct nfs4_server_config {
	uint32_t lease_seconds; /* 90 */
	uint32_t grace_seconds; /* 90 */
	/* run with the client's address as $1 when a client did not return
	 * a recalled layout within the lease (NULL: none) */
	const char *fence_cmd;
};

void nfs4_server_config_default(struct nfs4_server_config *c);

/*
 * Set up on srv (its filesystem and exports): bump the durable boot
 * counter, load the client records of the previous instance and start
 * grace, start the lease reaper. NULL and a message on failure.
 */
struct nfs4_server *nfs4_server_create(struct srv *srv, const struct nfs4_server_config *cfg);
/* After the RPC service stopped: free every state. */
void nfs4_server_destroy(struct nfs4_server *s);

/*
 * The exports table of srv was replaced (srv_swap_exports): the pseudo
 * filesystem follows it. Returns the old one, which the caller frees with
 * nfs4_pseudo_put() once no handler can hold it (svc_synchronize), with
 * the old exports table.
 */
struct nfs4_pseudo;
struct nfs4_pseudo *nfs4_exports_changed(struct nfs4_server *s);
void nfs4_pseudo_put(struct nfs4_pseudo *p);

/* The version table to register on the NFS program (ctx: the server). */
extern const struct svc_version nfs4_version;

/* "nfs4.*" counters: per operation count, errors and latency; state. */
void nfs4_stats(struct nfs4_server *s, const struct stat_sink *sink);

/* Tests only (jnfsd --test-hold-ends): hold back, or no longer, the
 * releases of the stateids that end (stateid.h, nfs4_stid_hold_ends). */
void nfs4_test_hold_ends(struct nfs4_server *s, bool on);

#endif
