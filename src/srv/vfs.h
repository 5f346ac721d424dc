/*
 * vfs.h - the operations every protocol performs for a caller: the
 * permission rules of perm.h applied in the Linux VFS's order, then the
 * engine call. NFSv3 and NFSv4 translate their wire to these and their
 * results back; neither decides who may do what itself. (The name is
 * knfsd's: its vfs.c is this layer, the protocol-independent file
 * operations with their permission checks.)
 *
 * Every function takes the caller as admitted to an export (struct
 * srv_exp: options and squashed credential), borrows the inodes it is
 * given, returns 0 or -errno (the engine's, and perm.h's -EACCES, -EPERM,
 * -EROFS), and fills res as the engine's call does (fs.h: the commit
 * sequence, and with FS_RES_ATTRS the attributes before and after, atomic
 * with the change). A change that conflicts with another client's pNFS
 * layout answers -EINPROGRESS or -EWOULDBLOCK (fs_break_layouts: rule 9),
 * having changed nothing. Refusals by a permission rule and layout
 * conflicts are counted (srv.perm_denied, srv.jukebox), whichever
 * protocol asked: these are the only way a protocol reaches the rules
 * that refuse (src/srv/srv_priv.h), so the rule and its count live in
 * one place for every protocol.
 */
#ifndef JNFS_SRV_VFS_H
#define JNFS_SRV_VFS_H

#include "srv/perm.h"
#include "srv/srv.h"

/* name in dir, for a caller who may search dir; ".." never leaves the
 * export (export_lookup). */
int srv_lookup(const struct srv_exp *e, struct fs_inode *dir, const char *name, size_t len,
	       struct fs_inode **ip);

/*
 * The lookup a create starts with when an existing name is not an error
 * (perm.h rules 2 and 11): search permission on dir, then the name. 0 and
 * a reference in *ip when it exists, -ENOENT when it is free; "." and ".."
 * are -EEXIST without a lookup (neither is ever created, and a lookup of
 * ".." could leave the export).
 */
int srv_create_lookup(const struct srv_exp *e, struct fs_inode *dir, const char *name, size_t len,
		      struct fs_inode **ip);

/*
 * Create name in dir: search permission on dir first (rule 2; "." and ".."
 * are -EEXIST there, as for srv_create_lookup), then write permission. ca
 * gives the type (and a symlink's target, a device's number); req the
 * attributes the client sent, which decide the mode and, for root, the
 * owner (perm.h rule 10); the size and times left in req are set on the
 * new object as a SETATTR would. -EEXIST when the name is taken. A
 * reference to the new object in *ip.
 */
int srv_create(const struct srv_exp *e, struct fs_inode *dir, const char *name, size_t len,
	       struct fs_create_args *ca, const struct fs_setattr *req, struct fs_inode **ip,
	       struct fs_result *res);

/* What srv_remove may remove. */
enum srv_rm { SRV_RM_FILE, SRV_RM_DIR, SRV_RM_ANY };
int srv_remove(const struct srv_exp *e, struct fs_inode *dir, const char *name, size_t len,
	       enum srv_rm what, struct fs_result *res);
int srv_rename(const struct srv_exp *e, struct fs_inode *sdir, const char *sname, size_t slen,
	       struct fs_inode *ddir, const char *dname, size_t dlen, struct fs_result *res);
int srv_link(const struct srv_exp *e, struct fs_inode *ip, struct fs_inode *dir, const char *name,
	     size_t len, struct fs_result *res);

/* A SETATTR of ip: sa is sanitized by perm.h (rules 6-9) and applied. */
int srv_setattr(const struct srv_exp *e, struct fs_inode *ip, struct fs_setattr *sa,
		struct fs_result *res);

/* WRITE: permission with the owner override, layouts broken, set-id bits
 * cleared before the data goes (rule 9), the data written. A stable write
 * (FILE_SYNC, DATA_SYNC) may have its data logged (fs_write_sync): then
 * *data_logged is set and forcing the inode's sync sequence is all its
 * stability needs, no flush of the data device. */
int srv_write(const struct srv_exp *e, struct fs_inode *ip, uint64_t off, const void *buf,
	      size_t len, bool stable, struct fs_result *res, bool *data_logged);

/* ALLOCATE / DEALLOCATE (fs_fallocate's mode): a write of ip's space,
 * with WRITE's permission, layouts broken, set-id bits cleared. */
int srv_fallocate(const struct srv_exp *e, struct fs_inode *ip, int mode, uint64_t off,
		  uint64_t len, struct fs_result *res);
/* COPY len bytes (the engine's copy): read permission on src, WRITE's on
 * dst; both files' layouts broken. *copied may be less than len at the
 * end of src. */
int srv_copy(const struct srv_exp *e, struct fs_inode *src, uint64_t soff, struct fs_inode *dst,
	     uint64_t doff, uint64_t len, uint64_t *copied, struct fs_result *res);

/* May the caller READ ip (read permission with the owner override, or
 * execute for a regular file: a client runs a program it may not read;
 * rule 3)? */
int srv_may_read(const struct srv_exp *e, struct fs_inode *ip);
/* May the caller list the directory dir (read permission)? If so, and
 * lookups is not NULL, *lookups says whether it may also look its entries
 * up for their handles and attributes (search permission), as NFSv3's
 * listing with attributes asks (knfsd gives READDIRPLUS entries neither
 * without it). */
int srv_may_readdir(const struct srv_exp *e, struct fs_inode *dir, bool *lookups);
/* May the caller COMMIT ip, or commit what it wrote to ip's blocks through
 * a pNFS layout (LAYOUTCOMMIT): write permission with the owner override;
 * not on a read-only export. */
int srv_may_commit(const struct srv_exp *e, struct fs_inode *ip);
/* May the caller get a pNFS layout of ip for reading (rw: and writing)?
 * The permission of the same I/O through the server (READ's, and with rw
 * WRITE's): the owner override, no write on a read-only export. */
int srv_may_layout(const struct srv_exp *e, struct fs_inode *ip, bool rw);
/* May the caller open ip for acc (SRV_MAY_* of src/srv/perm.h: read,
 * write, and the hints of rule 3 the protocol's open asks for)? */
int srv_may_open(const struct srv_exp *e, struct fs_inode *ip, unsigned acc);

/*
 * The verifier of an exclusive create lives in the new file's atime and
 * mtime (seconds, nanoseconds 0), as in knfsd: it survives a restart with
 * the inode, and a retransmission of the create finds it. Both protocols
 * leave the times out of what an exclusive create may set for that reason.
 */
#define SRV_CREATEVERF_SIZE 8
/* The times that hold v. */
void srv_createverf_times(const uint8_t v[SRV_CREATEVERF_SIZE], struct timespec *atime,
			  struct timespec *mtime);
/* Is a (the existing object of an exclusive create) the file that create
 * made, a regular file holding v? */
bool srv_createverf_matches(const struct fs_attr *a, const uint8_t v[SRV_CREATEVERF_SIZE]);

#endif
