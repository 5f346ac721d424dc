/*
 * nfs_lookup.h - what nfs-lookup's main (bench/nfs_lookup.c) asks of each
 * protocol's half: bench/nfs_lookup3.c (NFSv3, libnfs) and
 * bench/nfs_lookup4.c (NFSv4.1, src/nfs4c). The halves are separate files
 * because libnfs's headers and jnfs's RPC headers define the same protocol
 * names; this header includes neither.
 *
 * Every call that fails (an RPC error, a status other than OK, no reply for
 * two minutes) ends the program with die(): a benchmark has no recovery.
 */
#ifndef JNFS_BENCH_NFS_LOOKUP_H
#define JNFS_BENCH_NFS_LOOKUP_H

#include <stdint.h>
#include <stdio.h>

/* The name of entry i of every directory the benchmark makes (the same
 * names as bench/fs_scale.c). */
static inline int nfs_lookup_name(char *buf, size_t size, uint64_t i)
{
	return snprintf(buf, size, "entry-%07llu", (unsigned long long)i);
}

#define NFS_LOOKUP_DIRS 2 /* 0: the small directory, 1: the big one */

struct nfs_lookup_server {
	const char *addr;
	unsigned port, mount_port;
	const char *export; /* NFSv3: the MNT path; NFSv4.1: a path from the
			     * pseudo-root ("/" for jnfsd's built-in export) */
};

/* One protocol's connection (one client, one TCP connection). */
struct nfs_lookup_conn;

/*
 * NFSv3. open: MNT, then a connection. make_dir: MKDIR path (one
 * component, under the export's root) and CREATE entries 0..n-1 in it,
 * `inflight` CREATEs at a time; the handle kept as directory `dir`.
 * find_dir: LOOKUP of path under the export's root, kept as `dir`.
 * lookups: LOOKUP3 of entry idx[i] (i < n) in directory dir, k in flight
 * on the one connection; lat_ns[i] the time from the call's send to its
 * reply.
 */
struct nfs_lookup_conn *nfs_lookup3_open(const struct nfs_lookup_server *s);
void nfs_lookup3_make_dir(struct nfs_lookup_conn *c, int dir, const char *path, uint64_t n,
			  unsigned inflight);
void nfs_lookup3_find_dir(struct nfs_lookup_conn *c, int dir, const char *path);
void nfs_lookup3_lookups(struct nfs_lookup_conn *c, int dir, const uint64_t *idx, uint64_t n,
			 unsigned k, uint64_t *lat_ns);
void nfs_lookup3_close(struct nfs_lookup_conn *c);

/*
 * NFSv4.1: one client ID and session. find_dir: PUTROOTFH, LOOKUP of the
 * export's path and then of path, GETFH. lookups: SEQUENCE PUTFH(dir)
 * LOOKUP(name) GETFH GETATTR (the attributes a Linux client asks for on a
 * lookup: nfs4c's standard set), k compounds in flight on the session,
 * from k threads; lat_ns[i] from the compound's send to its reply.
 */
struct nfs_lookup_conn *nfs_lookup4_open(const struct nfs_lookup_server *s, unsigned k);
void nfs_lookup4_find_dir(struct nfs_lookup_conn *c, int dir, const char *path);
void nfs_lookup4_lookups(struct nfs_lookup_conn *c, int dir, const uint64_t *idx, uint64_t n,
			 unsigned k, uint64_t *lat_ns);
void nfs_lookup4_close(struct nfs_lookup_conn *c);

#endif
