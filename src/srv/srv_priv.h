/*
 * srv_priv.h - the permission rules of src/srv/perm.h that decide, this
 * layer's own: no file outside src/srv/ includes this header but the unit
 * tests of the rules (tools/check_includes.py, docs/design.md §2).
 *
 * A protocol that called these itself would refuse without counting, and
 * could apply a rule in another order than knfsd; so NFSv3 and NFSv4
 * reach them only through the operations of vfs.h, which apply them in the
 * Linux VFS's order and count every refusal (srv.perm_denied). The rule
 * lives in one place for every protocol.
 *
 * The functions are pure (perm.h): a credential after squashing, the
 * export's options and attribute snapshots in, 0 or -errno out.
 */
#ifndef JNFS_SRV_SRV_PRIV_H
#define JNFS_SRV_SRV_PRIV_H

#include "srv/perm.h"

/* Is gid the caller's group or one of its supplementary groups? */
bool srv_in_group(const struct export_cred *cr, uint32_t gid);

/* Rule 1: mask of SRV_MAY_READ/WRITE/EXEC on an object with attributes a.
 * 0 or -EACCES. */
int srv_permission(const struct export_cred *cr, const struct fs_attr *a, unsigned mask);

/* Rules 1-3: an access of kind acc (SRV_MAY_*) to a, on an export with
 * options o. 0, -EROFS or -EACCES. */
int srv_may(const struct export_cred *cr, const struct export_opts *o, const struct fs_attr *a,
	    unsigned acc);

/* Rule 4: may the caller remove victim from dir? Directory permission
 * (-EROFS, -EACCES), then the sticky bit (-EPERM). */
int srv_may_delete(const struct export_cred *cr, const struct export_opts *o,
		   const struct fs_attr *dir, const struct fs_attr *victim);

/* Rules 4 and 5, in vfs_rename's order: may the caller move src from sdir
 * into ddir, replacing tgt (NULL: the target name is free)? -EROFS,
 * -EACCES, -EPERM, and -ENOTDIR/-EISDIR for a directory over a
 * non-directory and the reverse. Two names of one inode: 0 (nothing is
 * done). */
int srv_may_rename(const struct export_cred *cr, const struct export_opts *o,
		   const struct fs_attr *sdir, const struct fs_attr *src,
		   const struct fs_attr *ddir, const struct fs_attr *tgt);

/*
 * Rule 10: the mode, owner and group of a new object made by cr in dir.
 * *mode holds the file type and the permission bits asked for; on return
 * it holds what the object gets. req (may be NULL) is what the client sent
 * along: its owner and group apply for root only, as a chown of the new
 * object (so with rule 8's clearing); the caller removes FS_SET_MODE,
 * FS_SET_UID and FS_SET_GID from req after this (srv_create_sattr).
 * -EPERM for a device node made by anyone but root.
 */
int srv_new_object(const struct export_cred *cr, const struct fs_attr *dir,
		   const struct fs_setattr *req, uint32_t *mode, uint32_t *uid, uint32_t *gid);

/*
 * Rules 2, 3 and 6-9 for a change of the attributes of a (the current
 * snapshot) to sa, in knfsd's order: -EROFS, -EISDIR/-EINVAL for a size on
 * a directory or special file, -EACCES, -EPERM. On success sa is what to
 * apply: the mode sanitized (S_ISGID stripped by rule 7; set-id bits
 * cleared from it by rule 8 when the mode is set too; no mode change for a
 * symbolic link), or FS_KILL_SUID/FS_KILL_SGID added (rules 8 and 9).
 */
int srv_setattr_prepare(const struct export_cred *cr, const struct export_opts *o,
			const struct fs_attr *a, struct fs_setattr *sa);

/* Rule 9 for a write to a: the FS_KILL_* flags to apply before the data
 * (0: none). */
unsigned srv_write_kill(const struct export_cred *cr, const struct fs_attr *a);

#endif
