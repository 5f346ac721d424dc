/*
 * exports.h - the exports table (exports(5) syntax), client matching and
 * credential squashing. Shared by every protocol.
 *
 *   # comment
 *   /path   client(opt,opt,...) client(opt,...) ...
 *   /path   -opt,opt client client(opt)      (default options for the line)
 *
 * A client is "*", an IPv4 or IPv6 address, or a network in CIDR form
 * (10.0.0.0/8, fd00::/8). A client with no options gets the line's
 * defaults. Options: rw, ro, sync, async, root_squash, no_root_squash,
 * all_squash, no_all_squash, anonuid=N, anongid=N, fsid=N, pnfs, no_pnfs,
 * secure, insecure, no_subtree_check (the only mode there is). Defaults as
 * in exports(5): ro, sync, root_squash, secure, anon 65534. Anything else,
 * or a malformed line, is refused with a message naming the line.
 *
 * The first client entry of an export that matches the peer applies.
 *
 * Fsids. Every handle carries its export's fsid, and handles outlive
 * restarts, so an fsid must keep naming the same export however the file is
 * edited. It is therefore derived from what identifies the export's root
 * directory, its inode number and generation (export_fsid_derive), unless
 * the line gives fsid=N; never from the line's position. Reordering,
 * adding or removing lines leaves every other export's fsid as it was; a
 * handle whose fsid no export has any more is STALE. Two exports with one
 * fsid (two fsid= alike, or a derived one that meets another) are refused at
 * start with a message naming both lines.
 */
#ifndef JNFS_EXPORT_EXPORTS_H
#define JNFS_EXPORT_EXPORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>


enum export_squash { SQUASH_ROOT = 0, SQUASH_NONE, SQUASH_ALL };

struct export_opts {
	bool rw, sync, secure, pnfs;
	enum export_squash squash;
	uint32_t anonuid, anongid;
};

struct export_client {
	int family;          /* 0: any ("*"), AF_INET, AF_INET6 */
	uint8_t addr[16];
	unsigned prefix;     /* bits that must match */
	struct export_opts opts;
};

struct export {
	char *path;          /* absolute, no trailing '/' except the root */
	uint32_t fsid;       /* carried in file handles: fsid= or, once resolved, derived */
	bool fsid_given;     /* the line said fsid= */
	uint64_t root_ino;   /* resolved by the server at start */
	uint32_t root_gen;
	struct export_client *clients;
	unsigned nclients;
	unsigned line;
};

struct exports {
	struct export *v;
	unsigned n;
};

/* Parse text (name is used in messages). On error returns -EINVAL and
 * writes "NAME:LINE: what is wrong" to err. */
int exports_parse(const char *text, const char *name, struct exports *out, char *err,
		  size_t errlen);
int exports_load(const char *path, struct exports *out, char *err, size_t errlen);
void exports_free(struct exports *e);

/*
 * The exports without an exports file: "/" read-write, sync, any source
 * port, root not squashed, and therefore to loopback clients only
 * (127.0.0.0/8 and ::1; IPv4-mapped loopback matches the first). The
 * server refuses to listen on any other address with these (jnfsd.c).
 */
#define EXPORTS_BUILTIN                                                                            \
	"/ 127.0.0.0/8(rw,sync,insecure,no_root_squash) ::1(rw,sync,insecure,no_root_squash)\n"

const struct export *exports_by_path(const struct exports *e, const char *path);
const struct export *exports_by_fsid(const struct exports *e, uint32_t fsid);

/* The options for a peer, or NULL if the export does not admit it. */
const struct export_opts *export_client_opts(const struct export *ex,
					     const struct sockaddr_storage *peer);

/* Find every export's root directory in the filesystem (root_ino and
 * root_gen) and derive the fsid of each export without fsid=. An export
 * whose path is missing or not a directory, and two exports with one fsid,
 * are errors naming their lines. */
struct fs;
int exports_resolve(struct exports *e, struct fs *fs, const char *name, char *err, size_t errlen);

/* The fsid of an export rooted at (root_ino, root_gen): SipHash-2-4 with a
 * fixed key, folded to 32 bits. Part of the handle format: changing it
 * makes every handle given out before STALE. */
uint32_t export_fsid_derive(uint64_t root_ino, uint32_t root_gen);

/*
 * The export boundary (boundary.c). A file handle (fh.h) names an export by
 * its fsid and an inode by number and generation, under a MAC only this
 * server can make. What a handle guarantees:
 *   1. It names exactly the inode it was made for, or nothing: a forged or
 *      altered handle is refused (BADHANDLE), one of a removed inode (its
 *      number perhaps reused since) is STALE, one whose export is no
 *      longer in the exports file is STALE.
 *   2. It was made for an inode that lay under its export's root at the
 *      time: the root itself (MNT), or what a lookup or a create in a
 *      directory of the export returned.
 *   3. Nothing climbs out of the export from it: ".." is resolved by
 *      export_lookup, which gives the root itself at the export's root and
 *      refuses (EACCES) to name a parent that does not lie under the
 *      export's root. Protocols resolve every ".." through it (LOOKUP, the
 *      ".." entry of READDIRPLUS, NFSv4 LOOKUPP).
 *   4. Its generation is its inode's own: handles are made only from an
 *      inode found by name (export_lookup, export_lookup_entry) or just
 *      created, never from a bare inode number.
 * What it does not guarantee, as knfsd with no_subtree_check (the only
 * mode there is): that the inode still lies under the export. A file or
 * directory moved out of the export after its handle was handed out still
 * resolves, and names below such a directory can still be looked up; but
 * those were moved out with it, and by 3 its new parents stay out of
 * reach. Checking on every call that an inode lies under its export would
 * cost a walk to the root per call and would break the handles of files
 * renamed from one directory to another, which is why knfsd gave it up.
 */
struct fs_inode;

/* Is ip the export's root (number and generation)? */
bool export_is_root(const struct export *ex, struct fs_inode *ip);

/* name in dir, within ex: ".." as rule 3 above says, anything else as
 * fs_lookup. A reference in *ip on success (fs_iput). */
int export_lookup(const struct export *ex, struct fs_inode *dir, const char *name, size_t len,
		  struct fs_inode **ip);

/* The inode a directory entry that readdir returned (name, ino) names now,
 * to hand out its handle and attributes: name looked up as export_lookup
 * does, -ENOENT if it is gone or names another inode number now. Never
 * from the number alone (boundary.c says why). */
int export_lookup_entry(const struct export *ex, struct fs_inode *dir, const char *name,
			size_t len, uint64_t ino, struct fs_inode **ip);

/* Privileged source port (< 1024), as "secure" requires. */
bool export_peer_secure(const struct sockaddr_storage *peer);

/* A caller's identity as the filesystem sees it. */
#define EXPORT_MAX_GROUPS 16
struct export_cred {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[EXPORT_MAX_GROUPS];
};

/* The credential after squashing; auth_sys false (AUTH_NONE) counts as
 * anonymous. */
void export_squash(const struct export_opts *o, bool auth_sys, uint32_t uid, uint32_t gid,
		   const uint32_t *groups, unsigned ngroups, struct export_cred *out);

#endif
