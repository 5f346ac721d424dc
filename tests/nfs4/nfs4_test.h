/*
 * nfs4_test.h - what the NFSv4.1 end-to-end tests share: a jnfsd on an
 * image of their own with an exports file, clients of the project's client
 * library (src/nfs4c) mounted on it, compounds that must get an answer,
 * jnfsd's counters read in one dump, and its resident memory.
 *
 * Every function checks what it does (check.h) and never returns a
 * failure: a test that cannot set itself up fails there.
 */
#ifndef JNFS_TESTS_NFS4_NFS4_TEST_H
#define JNFS_TESTS_NFS4_NFS4_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include "jnfsd_proc.h"
#include "nfs4c/nfs4c.h"

/* Built with AddressSanitizer (the ASan build's tests run shorter, and
 * do not judge memory by RSS: freed memory waits in ASan's quarantine). */
#if defined(__SANITIZE_ADDRESS__)
#define NFS4T_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NFS4T_ASAN 1
#endif
#endif
#ifndef NFS4T_ASAN
#define NFS4T_ASAN 0
#endif

/* system() of a formatted command, which must succeed. */
void nfs4t_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A jnfsd on an image of its own: `jnfs mkfs` of size MiB in a temporary
 * directory, the directories of mkdirs (NULL-terminated, may be NULL)
 * made with `jnfs io`, an exports file with the lines of exports (one
 * per line, "\n"-separated), and args (NULL-terminated, may be NULL) on
 * its command line after --image, --exports, --listen 127.0.0.1:0 and
 * --rpcbind off.
 */
struct nfs4t_server {
	struct tc_jnfsd j;
	char tmp[64];
	char image[96];
	char exports[96];
	char addr[64];
	const char *jnfsd, *jnfs;
	const char *args[32];
};
void nfs4t_server_init(struct nfs4t_server *s, const char *jnfsd, const char *jnfs,
		       unsigned size_mib, const char *const *mkdirs, const char *exports);
/* Start with args; again: on the same image and address. */
void nfs4t_server_start(struct nfs4t_server *s, const char *const *args);
/* SIGTERM; it must exit 0 (so the ASan build's leak check passed). */
void nfs4t_server_stop(struct nfs4t_server *s);
/* Stop if running, `jnfs check` the image, remove the directory. */
void nfs4t_server_fini(struct nfs4t_server *s);

/* A client of owner (as root) mounted on addr; the root handle in *root. */
struct nfs4c_client *nfs4t_client(const char *addr, const char *owner, struct nfs4c_fh *root);
/* Unmount (DESTROY_SESSION, DESTROY_CLIENTID: both must succeed) and free. */
void nfs4t_unmount(struct nfs4c_client *cl);

/* Send c, which must be answered; returns the compound's status. */
nfsstat4 nfs4t_send(struct nfs4c_compound *c);
/* The handle of path under dir (PUTFH, LOOKUP per component, GETFH). */
void nfs4t_lookup(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *path,
		  struct nfs4c_fh *out);
/* The attributes of fh (nfs4c_bitmap_std), which must be there. */
void nfs4t_getattr(struct nfs4c_client *cl, const struct nfs4c_fh *fh, struct nfs4c_attr *a);
/* The status of LOOKUP name in dir (NFS4_OK or NOENT...). */
nfsstat4 nfs4t_exists(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *name);
/* OPEN(create UNCHECKED, 0644, access BOTH, deny NONE) of name in dir by
 * owner: its handle and open stateid. */
void nfs4t_open_create(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *name,
		       const char *owner, struct nfs4c_fh *fh, struct stateid4 *sid);
void nfs4t_close(struct nfs4c_client *cl, const struct nfs4c_fh *fh, const struct stateid4 *sid);
/* One operation on fh that takes a stateid: CLOSE, LOCKU or LOCK of [0, 10)
 * for writing (LOCK with an existing lock stateid), FREE_STATEID, or
 * OPEN_DOWNGRADE to READ/NONE. Its status; *out (may be NULL) gets the
 * stateid LOCKU returns. */
nfsstat4 nfs4t_stateid_op(struct nfs4c_client *cl, const struct nfs4c_fh *fh, nfs_opnum4 op,
			  const struct stateid4 *sid, struct stateid4 *out);

/* jnfsd's counters, from one SIGUSR1 dump. */
#define NFS4T_MAX_STATS 1024
struct nfs4t_stats {
	unsigned n;
	char name[NFS4T_MAX_STATS][64];
	uint64_t value[NFS4T_MAX_STATS];
};
void nfs4t_stats(struct tc_jnfsd *j, struct nfs4t_stats *st);
/* The value of name (it must be in the dump; the last one if repeated). */
uint64_t nfs4t_stat(const struct nfs4t_stats *st, const char *name);
/* The same, 0 when the dump does not have it (per-operation counters
 * appear once the operation was called). */
uint64_t nfs4t_stat0(const struct nfs4t_stats *st, const char *name);

/* VmRSS of pid in KiB. */
long nfs4t_rss_kib(pid_t pid);

#endif
