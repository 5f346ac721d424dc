/*
 * perm.h - the POSIX permission rules of the Linux VFS, as every protocol
 * applies them: who may read, write, search, create, delete, rename, and
 * change which attribute, and which set-user-ID and set-group-ID bits a
 * change clears or a new object gets.
 *
 * The functions are pure: they look only at a credential (after squashing),
 * the export's options and attribute snapshots (struct fs_attr), and return
 * 0 or -errno in the engine's error domain (-EACCES, -EPERM, -EROFS, -EISDIR,
 * -ENOTDIR, -EINVAL), which each protocol turns into its status in its one
 * translation function. A change they compute (a mode with S_ISGID
 * stripped, set-id bits to clear) is handed back as a struct fs_setattr or
 * new-object fields, for the caller to apply through the engine in the same
 * request.
 *
 * Where the rules live: once, in this layer, for every protocol. The
 * functions that decide whether a caller may (srv_may and the rest of
 * rules 1-10) are declared in src/srv/srv_priv.h, which no protocol
 * includes (tools/check_includes.py); NFSv3 and NFSv4 reach them only
 * through the operations of vfs.h, which count each refusal
 * (srv.perm_denied). What stays here is what a protocol uses itself and
 * what refuses nothing: the access bits it asks with, ACCESS's answer,
 * and which of a create's attributes apply.
 *
 * The rules, and the Linux VFS and knfsd functions they come from
 * (docs/permissions.md has them as a table per operation and caller,
 * checked against the local kernel):
 *   1. Permission classes: the owner's bits if the caller owns the object,
 *      else the group's if the file's group is the caller's group or one
 *      of its supplementary groups, else the others'. Root (uid 0 after
 *      squashing) may read and write anything and search any directory;
 *      it may execute a non-directory only if some execute bit is set
 *      (generic_permission with CAP_DAC_OVERRIDE). Root also has
 *      CAP_FOWNER, CAP_CHOWN, CAP_FSETID and CAP_MKNOD; any other caller
 *      has none, as knfsd drops them for every caller but root.
 *   2. A read-only export refuses everything that would write or change
 *      attributes, before the mode is looked at (knfsd's nfsd_permission);
 *      a creation looks its name up first, so a directory the caller may
 *      not search answers EACCES there.
 *   3. Owner override: READ, WRITE, COMMIT, SETATTR of the size and
 *      SETATTR of the times to "now" are allowed to the owner whatever the
 *      mode says: the client checked the mode at open time and the owner
 *      may have changed it since (nfsd_permission). READ of a regular file
 *      is also allowed with execute permission alone (a client runs a
 *      program it may not read). Operations on directories (LOOKUP,
 *      READDIR, the creations and removals) ask for no override.
 *      An NFSv4 OPEN of an existing file is that check at open time, so it
 *      asks for none either: the mode decides for the owner too; only a
 *      file the same OPEN made (or the retransmission of its exclusive
 *      create) is the owner's whatever its mode. An OPEN for reading alone
 *      may read by execute permission (SRV_MAY_READ_IF_EXEC), and one that
 *      denies reads to others needs write permission (knfsd's
 *      do_open_permission).
 *   4. Creating and deleting in a directory needs write and search on it.
 *      In a sticky directory only the entry's owner, the directory's owner
 *      or root may delete or replace an entry: a rename checks this for the
 *      source and for an existing target alike, and the answer is EPERM
 *      (may_delete, __check_sticky).
 *   5. Moving a directory to another parent rewrites its ".." entry, so the
 *      caller needs write permission on the directory moved, too
 *      (vfs_rename).
 *   6. Who may change what (setattr_prepare, chown_ok, chgrp_ok): the
 *      owner or root may change the mode; only root may change the owner,
 *      except that the owner may "change" it to itself; the owner may
 *      change the group to its current value or to one of its own groups,
 *      root to any. A caller who is not the owner gets
 *      EPERM even for a change to the current value. Setting the times to
 *      given values needs the owner or root (EPERM); setting them to "now"
 *      needs the owner, root, or write permission (EACCES).
 *   7. A mode change by a caller who is neither in the file's (new) group
 *      nor root loses S_ISGID silently (setattr_prepare).
 *   8. A change of owner or group of anything but a directory clears
 *      S_ISUID always (for root too), and S_ISGID when the file is
 *      group-executable, or when the caller is neither root nor in the
 *      file's group (chown_common, setattr_should_drop_sgid; knfsd's
 *      nfsd_sanitize_attrs does the same, and when the mode is set in the
 *      same call it clears the bits from that mode instead).
 *   9. A write or a size change of a regular file by a caller other than
 *      root clears S_ISUID, and S_ISGID when group-executable or when the
 *      caller is not in the file's group (file_remove_privs,
 *      setattr_should_drop_suidgid). knfsd's SETATTR of the size does not;
 *      a local truncate(2) does, and so do we.
 *  10. A new object belongs to the caller; in a setgid directory it takes
 *      the directory's group, and a new directory also gets S_ISGID
 *      whatever mode the client sent (inode_init_owner). A new directory's
 *      mode keeps only the permission and sticky bits the client sent
 *      (vfs_mkdir). A new non-directory asked with S_ISGID and group-execute
 *      in a setgid directory loses S_ISGID unless the caller is in the
 *      directory's group or root (mode_strip_sgid). Device nodes need
 *      CAP_MKNOD (root), else EPERM (vfs_mknod). Owner and group sent with a
 *      create are honoured for root only, as a chown after the creation;
 *      the mode is the creation's (nfsd_create_setattr).
 *  11. An exclusive or unchecked create that finds an existing file needs
 *      only search permission on the directory; of the attributes sent,
 *      only the size is applied to the existing file, with the permission
 *      a SETATTR of the size needs (knfsd's nfsd3_create_file).
 */
#ifndef JNFS_SRV_PERM_H
#define JNFS_SRV_PERM_H

#include <stdbool.h>
#include <stdint.h>

#include "export/exports.h"
#include "fs/fs.h"

/* What an access needs: inode_permission's MAY_* bits and knfsd's hints. */
#define SRV_MAY_EXEC           0x01u /* search a directory, execute a file */
#define SRV_MAY_WRITE          0x02u
#define SRV_MAY_READ           0x04u
#define SRV_MAY_SATTR          0x08u /* changes attributes: refused read-only */
#define SRV_MAY_OWNER_OVERRIDE 0x40u /* rule 3 */
#define SRV_MAY_READ_IF_EXEC   0x80u /* rule 3: an OPEN that may read by execute */
#define SRV_MAY_CREATE         (SRV_MAY_WRITE | SRV_MAY_EXEC)
#define SRV_MAY_REMOVE         (SRV_MAY_WRITE | SRV_MAY_EXEC)

/* The ACCESS procedure's bits (the same numbers in NFSv3 and NFSv4). */
#define SRV_ACCESS_READ    0x01u
#define SRV_ACCESS_LOOKUP  0x02u
#define SRV_ACCESS_MODIFY  0x04u
#define SRV_ACCESS_EXTEND  0x08u
#define SRV_ACCESS_DELETE  0x10u
#define SRV_ACCESS_EXECUTE 0x20u
/* Which of want the caller has on a (knfsd's nfsd_access maps: a directory
 * needs search as well as write to be modified; DELETE means deleting
 * entries of a directory; LOOKUP only applies to directories, EXECUTE only
 * to the rest; a read-only export grants no write bit, except on device
 * and other special files, whose writes do not touch the export). */
uint32_t srv_access(const struct export_cred *cr, const struct export_opts *o,
		    const struct fs_attr *a, uint32_t want);

/* Rule 10: which of a create's attributes (FS_SET_* in mask) the new
 * object takes from what the client sent: all but the owner and group,
 * which are root's only. */
unsigned srv_create_taken(const struct export_cred *cr, unsigned mask);
/* What of a create's attributes is left to set on the new object after
 * srv_new_object: the size (unless 0: a new file is empty) and the
 * times. */
void srv_create_sattr(struct fs_setattr *sa);
/* Rule 11: of a create's attributes, what applies to an existing file. */
void srv_existing_sattr(struct fs_setattr *sa);

#endif
