/*
 * admin.h - the administration RPC program jnfsd serves next to NFS and
 * MOUNT on the same listeners, for `jnfs stat --server`.
 *
 *   program JNFS_ADMIN_PROG, version 1
 *     0 NULL
 *     1 STATS   () -> opaque<> : "name value\n" lines, every counter
 *
 * Only peers on a loopback address are answered (others get an empty
 * list): the counters say nothing secret, but they are not the business
 * of remote machines either.
 */
#ifndef JNFS_DAEMON_ADMIN_H
#define JNFS_DAEMON_ADMIN_H

#define JNFS_ADMIN_PROG       0x20004a4e /* user-defined range (RFC 5531) */
#define JNFS_ADMIN_VERS       1
#define JNFS_ADMIN_PROC_STATS 1
#define JNFS_ADMIN_MAX_STATS  (1u << 20)

#endif
