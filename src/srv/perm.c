/*
 * perm.c - the Linux VFS permission rules (see perm.h for the rules and
 * where each comes from). Everything here is a function of its arguments:
 * no engine call, no lock, so a test can drive every rule directly.
 */
#include "srv/srv_priv.h"

#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#define PERM_BITS 07777u

/* Root after squashing holds the capabilities knfsd raises for uid 0
 * (CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, CAP_FSETID, CAP_MKNOD); every
 * other caller holds none of them. */
static bool privileged(const struct export_cred *cr)
{
	return cr->uid == 0;
}

static bool owner(const struct export_cred *cr, const struct fs_attr *a)
{
	return cr->uid == a->uid;
}

static bool owner_or_privileged(const struct export_cred *cr, const struct fs_attr *a)
{
	return owner(cr, a) || privileged(cr);
}

/* in_group_or_capable: may the caller keep S_ISGID on a file of group gid? */
static bool keeps_sgid(const struct export_cred *cr, uint32_t gid)
{
	return srv_in_group(cr, gid) || privileged(cr);
}

bool srv_in_group(const struct export_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return true;
	for (uint32_t i = 0; i < cr->ngroups && i < EXPORT_MAX_GROUPS; i++)
		if (cr->groups[i] == gid)
			return true;
	return false;
}

int srv_permission(const struct export_cred *cr, const struct fs_attr *a, unsigned mask)
{
	mask &= SRV_MAY_READ | SRV_MAY_WRITE | SRV_MAY_EXEC;
	if (privileged(cr)) {
		/* DAC override: everything but executing a non-directory
		 * that nobody may execute */
		if ((mask & SRV_MAY_EXEC) && !S_ISDIR(a->mode) && !(a->mode & 0111))
			return -EACCES;
		return 0;
	}
	unsigned bits;
	if (owner(cr, a))
		bits = a->mode >> 6;
	else if (srv_in_group(cr, a->gid))
		bits = a->mode >> 3;
	else
		bits = a->mode;
	/* MAY_READ/WRITE/EXEC are the rwx bits: 4, 2, 1 */
	return ((bits & 7) & mask) == mask ? 0 : -EACCES;
}

int srv_may(const struct export_cred *cr, const struct export_opts *o, const struct fs_attr *a,
	    unsigned acc)
{
	if ((acc & (SRV_MAY_WRITE | SRV_MAY_SATTR)) && !o->rw)
		return -EROFS;
	if ((acc & SRV_MAY_OWNER_OVERRIDE) && owner(cr, a))
		return 0;
	int err = srv_permission(cr, a, acc);
	/* a client may read a program it may only execute: READ (the hint
	 * marks an access checked at open time), or an OPEN for reading
	 * alone (nfsd_permission: either hint, not both) */
	unsigned rwx = acc & (SRV_MAY_READ | SRV_MAY_WRITE | SRV_MAY_EXEC);
	unsigned hint = acc & (SRV_MAY_OWNER_OVERRIDE | SRV_MAY_READ_IF_EXEC);
	if (err == -EACCES && S_ISREG(a->mode) && rwx == SRV_MAY_READ &&
	    (hint == SRV_MAY_OWNER_OVERRIDE || hint == SRV_MAY_READ_IF_EXEC))
		err = srv_permission(cr, a, SRV_MAY_EXEC);
	return err;
}

uint32_t srv_access(const struct export_cred *cr, const struct export_opts *o,
		    const struct fs_attr *a, uint32_t want)
{
	/* a special file's "write" does not write to the export */
	struct export_opts rw = *o;
	if (!S_ISREG(a->mode) && !S_ISDIR(a->mode))
		rw.rw = true;
	const struct {
		uint32_t bit;
		unsigned reg, dir, other; /* 0: never granted for that type */
	} map[] = {
		{SRV_ACCESS_READ, SRV_MAY_READ, SRV_MAY_READ, SRV_MAY_READ},
		{SRV_ACCESS_LOOKUP, 0, SRV_MAY_EXEC, 0},
		{SRV_ACCESS_MODIFY, SRV_MAY_WRITE, SRV_MAY_EXEC | SRV_MAY_WRITE, SRV_MAY_WRITE},
		{SRV_ACCESS_EXTEND, SRV_MAY_WRITE, SRV_MAY_EXEC | SRV_MAY_WRITE, SRV_MAY_WRITE},
		{SRV_ACCESS_DELETE, 0, SRV_MAY_REMOVE, 0},
		{SRV_ACCESS_EXECUTE, SRV_MAY_EXEC, 0, SRV_MAY_EXEC},
	};
	uint32_t ok = 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		unsigned acc = S_ISREG(a->mode)   ? map[i].reg
			       : S_ISDIR(a->mode) ? map[i].dir
						  : map[i].other;
		if ((want & map[i].bit) && acc && !srv_may(cr, &rw, a, acc))
			ok |= map[i].bit;
	}
	return ok;
}

/* __check_sticky: in a sticky directory only the entry's owner, the
 * directory's owner or CAP_FOWNER may take the entry away. */
static bool sticky_denies(const struct export_cred *cr, const struct fs_attr *dir,
			  const struct fs_attr *victim)
{
	return (dir->mode & S_ISVTX) && !owner(cr, victim) && !owner(cr, dir) && !privileged(cr);
}

int srv_may_delete(const struct export_cred *cr, const struct export_opts *o,
		   const struct fs_attr *dir, const struct fs_attr *victim)
{
	int err = srv_may(cr, o, dir, SRV_MAY_REMOVE);
	if (err)
		return err;
	return sticky_denies(cr, dir, victim) ? -EPERM : 0;
}

int srv_may_rename(const struct export_cred *cr, const struct export_opts *o,
		   const struct fs_attr *sdir, const struct fs_attr *src, const struct fs_attr *ddir,
		   const struct fs_attr *tgt)
{
	if (tgt && tgt->ino == src->ino)
		return 0;
	int err = srv_may_delete(cr, o, sdir, src);
	if (err)
		return err;
	bool isdir = S_ISDIR(src->mode);
	if (tgt) {
		/* the target is deleted: the sticky rule holds for it too */
		err = srv_may_delete(cr, o, ddir, tgt);
		if (!err && isdir && !S_ISDIR(tgt->mode))
			err = -ENOTDIR;
		if (!err && !isdir && S_ISDIR(tgt->mode))
			err = -EISDIR;
	} else {
		err = srv_may(cr, o, ddir, SRV_MAY_CREATE);
	}
	if (err)
		return err;
	/* a directory that changes parent has its ".." rewritten */
	if (isdir && sdir->ino != ddir->ino)
		err = srv_permission(cr, src, SRV_MAY_WRITE);
	return err;
}

/*
 * The set-id bits a change of owner or group clears from a non-directory
 * (rule 8) when the mode is not set in the same call: S_ISUID always,
 * S_ISGID by setattr_should_drop_sgid. Judged on a's current group.
 */
static unsigned chown_kill(const struct export_cred *cr, const struct fs_attr *a)
{
	unsigned kill = FS_KILL_SUID;
	if ((a->mode & S_ISGID) && ((a->mode & S_IXGRP) || !keeps_sgid(cr, a->gid)))
		kill |= FS_KILL_SGID;
	return kill;
}

static uint32_t apply_kill(uint32_t mode, unsigned kill)
{
	if (kill & FS_KILL_SUID)
		mode &= ~(uint32_t)S_ISUID;
	if (kill & FS_KILL_SGID)
		mode &= ~(uint32_t)S_ISGID;
	return mode;
}

unsigned srv_write_kill(const struct export_cred *cr, const struct fs_attr *a)
{
	if (!S_ISREG(a->mode) || privileged(cr) || !(a->mode & (S_ISUID | S_ISGID)))
		return 0;
	unsigned kill = (a->mode & S_ISUID) ? FS_KILL_SUID : 0;
	if ((a->mode & S_ISGID) && ((a->mode & S_IXGRP) || !srv_in_group(cr, a->gid)))
		kill |= FS_KILL_SGID;
	return kill;
}

int srv_new_object(const struct export_cred *cr, const struct fs_attr *dir,
		   const struct fs_setattr *req, uint32_t *mode, uint32_t *uid, uint32_t *gid)
{
	uint32_t type = *mode & S_IFMT, perm = *mode & PERM_BITS;
	if ((S_ISCHR(type) || S_ISBLK(type)) && !privileged(cr))
		return -EPERM;
	if (S_ISDIR(type))
		perm &= 01777; /* vfs_mkdir keeps the rwx and sticky bits */
	else if (S_ISLNK(type))
		perm = 0777;
	/* mode_strip_sgid: a setgid-and-group-executable non-directory in a
	 * setgid directory, by a caller outside the directory's group */
	if (!S_ISDIR(type) && (dir->mode & S_ISGID) &&
	    (perm & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && !keeps_sgid(cr, dir->gid))
		perm &= ~(uint32_t)S_ISGID;
	/* inode_init_owner: BSD group semantics in a setgid directory, and
	 * its subdirectories stay setgid */
	*uid = cr->uid;
	if (dir->mode & S_ISGID) {
		*gid = dir->gid;
		if (S_ISDIR(type))
			perm |= S_ISGID;
	} else {
		*gid = cr->gid;
	}
	/* root's owner and group come as a chown of the object just made */
	if (req && (req->mask & (FS_SET_UID | FS_SET_GID)) && privileged(cr)) {
		struct fs_attr made = {.mode = type | perm, .uid = *uid, .gid = *gid};
		if (!S_ISDIR(type))
			perm = apply_kill(perm, chown_kill(cr, &made));
		if (req->mask & FS_SET_UID)
			*uid = req->uid;
		if (req->mask & FS_SET_GID)
			*gid = req->gid;
	}
	*mode = type | perm;
	return 0;
}

unsigned srv_create_taken(const struct export_cred *cr, unsigned mask)
{
	return privileged(cr) ? mask : mask & ~(unsigned)(FS_SET_UID | FS_SET_GID);
}

void srv_create_sattr(struct fs_setattr *sa)
{
	sa->mask &= ~(FS_SET_MODE | FS_SET_UID | FS_SET_GID);
	if ((sa->mask & FS_SET_SIZE) && sa->size == 0)
		sa->mask &= ~FS_SET_SIZE;
}

void srv_existing_sattr(struct fs_setattr *sa)
{
	sa->mask &= FS_SET_SIZE;
}

int srv_setattr_prepare(const struct export_cred *cr, const struct export_opts *o,
			const struct fs_attr *a, struct fs_setattr *sa)
{
	const unsigned times_now = FS_SET_ATIME_NOW | FS_SET_MTIME_NOW;
	const unsigned times_set = FS_SET_ATIME | FS_SET_MTIME;
	bool size = sa->mask & FS_SET_SIZE;

	/* nfsd_setattr: the type a size needs, then one permission check for
	 * the whole call (write for the size, or for times set to "now"
	 * unless a time is given; the owner passes) */
	if (size && S_ISDIR(a->mode))
		return -EISDIR;
	if (size && !S_ISREG(a->mode))
		return -EINVAL;
	unsigned acc = SRV_MAY_SATTR;
	if (size)
		acc |= SRV_MAY_WRITE | SRV_MAY_OWNER_OVERRIDE;
	if (sa->mask & (times_now | times_set)) {
		acc |= SRV_MAY_OWNER_OVERRIDE;
		if (!(sa->mask & times_set))
			acc |= SRV_MAY_WRITE;
	}
	int err = srv_may(cr, o, a, acc);
	if (err)
		return err;

	/* nfsd_sanitize_attrs */
	if (S_ISLNK(a->mode))
		sa->mask &= ~FS_SET_MODE;
	if (sa->mask & FS_SET_MODE)
		sa->mode &= PERM_BITS;
	bool chown = sa->mask & (FS_SET_UID | FS_SET_GID);
	unsigned kill = 0;
	if (chown && !S_ISDIR(a->mode)) {
		if (sa->mask & FS_SET_MODE) {
			sa->mode &= ~(uint32_t)S_ISUID;
			if (sa->mode & S_IXGRP)
				sa->mode &= ~(uint32_t)S_ISGID;
		} else {
			kill = chown_kill(cr, a);
		}
	}

	/* setattr_prepare */
	if ((sa->mask & FS_SET_UID) && !privileged(cr) && !(owner(cr, a) && sa->uid == a->uid))
		return -EPERM;
	if ((sa->mask & FS_SET_GID) && !privileged(cr) &&
	    !(owner(cr, a) && (sa->gid == a->gid || srv_in_group(cr, sa->gid))))
		return -EPERM;
	if (sa->mask & FS_SET_MODE) {
		if (!owner_or_privileged(cr, a))
			return -EPERM;
		uint32_t gid = (sa->mask & FS_SET_GID) ? sa->gid : a->gid;
		if (!keeps_sgid(cr, gid))
			sa->mode &= ~(uint32_t)S_ISGID;
	}
	if ((sa->mask & times_set) && !owner_or_privileged(cr, a))
		return -EPERM;

	/* a size change is a modification of the data: rule 9, unless the
	 * mode is set in the same call (it is applied after the size) */
	if (size && !(sa->mask & FS_SET_MODE))
		kill |= srv_write_kill(cr, a);
	sa->mask |= kill;
	return 0;
}
