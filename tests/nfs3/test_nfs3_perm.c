/*
 * test_nfs3_perm.c - the permission table: every NFSv3 procedure that
 * checks permission, run as the owner, a group member, another user and
 * root, on exports with no_root_squash, root_squash, all_squash and ro,
 * on modes that include sticky and setgid directories and set-id files;
 * each answer is compared with what the Linux VFS gives for the same
 * operation.
 *
 * The oracle is the local kernel. For every case the same objects are
 * made twice: in the jnfsd image (as root, through a no_root_squash
 * export of "/") and in a directory under /tmp. The operation then runs
 * over NFS with the caller's AUTH_SYS credential, and locally in a forked
 * child that switched to the credential the export's squashing gives
 * (setgroups, setresgid, setresuid; squashing is done by this test, from
 * exports(5)). The NFS status must be the child's errno, and where a case
 * says so the mode, owner and group of the object afterwards must be the
 * same (set-id bits after WRITE, chown, chmod; S_ISGID and the group of
 * new objects), or the ACCESS bits, or whether READDIRPLUS gave handles.
 * The local side of the read-only export is a read-only bind mount of
 * the fixture directory in a private mount namespace.
 *
 * Where NFS differs from a local system call on purpose, the difference
 * is written here, applied to the local answer, and marked in the table:
 *   (o) owner override: READ, WRITE, COMMIT, SETATTR of the size and
 *       CREATE's size of an existing file are allowed to the owner
 *       whatever the mode (knfsd's nfsd_permission); the local oracle
 *       then repeats the operation through a descriptor root opened, as
 *       the caller, so that what it changes (set-id bits) is the kernel's;
 *   (x) READ of a regular file with execute permission only;
 *   (r) a read-only export refuses what needs write access (SETATTR,
 *       WRITE, COMMIT, REMOVE, RMDIR, RENAME, LINK, a size sent with
 *       CREATE) before looking at the mode, or the directory's search
 *       permission (a local open, truncate or path walk checks those
 *       first);
 *   (l) LINK: the local fs.protected_hardlinks sysctl is a rule of the
 *       link(2) system call, not of the VFS; knfsd's vfs_link has none;
 *   (c) owner and group sent with a create apply for root only (knfsd's
 *       nfsd_create_setattr): the local oracle chowns only as root;
 *   (e) an unchecked CREATE of an existing name: the local oracle looks
 *       the name up, and only applies the size (truncate) if one is sent.
 *
 * The expected answers form docs/permissions.md's tables: this program
 * prints them (--markdown), and fails when the file's tables differ from
 * what it computed (--doc FILE; --write-doc FILE rewrites them). It needs
 * root (credentials, mount namespace); without it, it skips (77).
 *
 * usage: test-nfs3-perm JNFSD JNFS [--doc FILE | --write-doc FILE] [--markdown] [-v]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "jnfsd_proc.h"
#include "nfs3/nfs3_client.h"

/* ---- identities ---- */

#define OWNER  1001u /* owns most fixtures; its group is GOWN */
#define MEMBER 1002u /* in GOWN through a supplementary group */
#define OTHER  1003u
#define GOWN   1001u
#define GMEM   1002u
#define GOTH   1003u
#define NOBODY 65534u
#define TIME_GIVEN 1000000000u

struct caller {
	const char *name;
	uint32_t uid, gid, ngroups, groups[4];
};
static const struct caller callers[] = {
	{"owner", OWNER, GOWN, 1, {GOWN}},
	{"member", MEMBER, GMEM, 2, {GMEM, GOWN}},
	{"other", OTHER, GOTH, 1, {GOTH}},
	{"root", 0, 0, 1, {0}},
};
#define NCALLERS 4

enum squash { SQ_NONE, SQ_ROOT, SQ_ALL };
struct export {
	const char *name, *title;
	enum squash squash;
	bool ro;
};
static const struct export exports_[] = {
	{"none", "rw, no_root_squash", SQ_NONE, false},
	{"rsq", "rw, root_squash", SQ_ROOT, false},
	{"asq", "rw, all_squash", SQ_ALL, false},
	{"ro", "ro, no_root_squash", SQ_NONE, true},
};
#define NEXPORTS 4

/* The credential an export gives a caller (exports(5) squashing,
 * anonuid/anongid 65534). */
static struct caller squashed(const struct caller *c, enum squash sq)
{
	struct caller e = *c;
	if (sq == SQ_ALL) {
		e.uid = e.gid = NOBODY;
		e.ngroups = 0;
	} else if (sq == SQ_ROOT) {
		if (e.uid == 0)
			e.uid = NOBODY;
		if (e.gid == 0)
			e.gid = NOBODY;
		for (uint32_t i = 0; i < e.ngroups; i++)
			if (e.groups[i] == 0)
				e.groups[i] = NOBODY;
	}
	return e;
}

/* ---- the cases ---- */

enum opk {
	O_CHMOD, O_CHOWN, O_CHGRP, O_SIZE, O_ATIME, O_MTIME, O_TIMES_NOW,
	O_LOOKUP, O_ACCESS, O_READLINK, O_READ, O_WRITE,
	O_CREATE_U, O_CREATE_G, O_CREATE_E, O_MKDIR, O_SYMLINK, O_MKFIFO, O_MKSOCK, O_MKCHR,
	O_REMOVE, O_RMDIR, O_RENAME, O_LINK, O_READDIR, O_READDIRPLUS, O_COMMIT,
};
static const char *const op_names[] = {
	"SETATTR mode", "SETATTR uid", "SETATTR gid", "SETATTR size", "SETATTR atime",
	"SETATTR mtime", "SETATTR times=now", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
	"CREATE unchecked", "CREATE guarded", "CREATE exclusive", "MKDIR", "SYMLINK",
	"MKNOD fifo", "MKNOD socket", "MKNOD chr", "REMOVE", "RMDIR", "RENAME", "LINK",
	"READDIR", "READDIRPLUS", "COMMIT",
};

struct node {
	const char *path;
	char type; /* d f l p s c */
	uint16_t mode;
	uint32_t uid, gid;
};

#define F_SIZE  0x1u /* CREATE sends size = arg */
#define F_MTIME 0x2u /* CREATE sends mtime = TIME_GIVEN; compare "mtime is it" */
#define F_OWNER 0x4u /* CREATE sends uid OTHER, gid GOTH */

struct scen {
	enum opk op;
	const char *what; /* the case, for the table */
	const char *rule; /* where the rule comes from */
	const char *a, *b;
	uint32_t mode, arg;
	unsigned flags;
	const char *check; /* object whose mode/uid/gid are compared afterwards */
	struct node nodes[5];
};

#define D(p, m, u, g) {p, 'd', m, u, g}
#define F(p, m, u, g) {p, 'f', m, u, g}

/* rule sources, in the words of src/srv/perm.h */
#define R_CLASS  "rule 1 (generic_permission)"
#define R_RO     "rule 2 (nfsd_permission)"
#define R_OVR    "rule 3 (nfsd_permission)"
#define R_DIR    "rule 4 (may_create, may_delete)"
#define R_LOOKUP "rule 2 (filename_create: may_lookup first)"
#define R_STICKY "rule 4 (may_delete, __check_sticky)"
#define R_DOTDOT "rule 5 (vfs_rename)"
#define R_WHO    "rule 6 (setattr_prepare, chown_ok, chgrp_ok)"
#define R_CHMODG "rule 7 (setattr_prepare)"
#define R_CHOWNK "rule 8 (nfsd_sanitize_attrs, setattr_should_drop_sgid)"
#define R_WRITEK "rule 9 (file_remove_privs, setattr_should_drop_suidgid)"
#define R_NEW    "rule 10 (inode_init_owner)"
#define R_MKDIR  "rule 10 (vfs_mkdir, inode_init_owner)"
#define R_NEWSG  "rule 10 (mode_strip_sgid)"
#define R_MKNOD  "rule 10 (vfs_mknod: CAP_MKNOD)"
#define R_CRATTR "rule 10 (nfsd_create_setattr)"
#define R_EXIST  "rule 11 (nfsd3_create_file)"
#define R_ACCESS "rule 1 (nfsd_access maps)"
#define R_PLUS   "rule 1 (READDIRPLUS looks entries up)"

static const struct scen scens[] = {
	/* SETATTR */
	{O_CHMOD, "0644 file to 0600", R_WHO, "f", NULL, 0600, 0, 0, "f",
	 {F("f", 0644, OWNER, GOWN)}},
	{O_CHMOD, "to 02755, owner not in the file's group", R_CHMODG, "f", NULL, 02755, 0, 0, "f",
	 {F("f", 0755, OWNER, GOTH)}},
	{O_CHMOD, "to 02755, owner in the file's group", R_CHMODG, "f", NULL, 02755, 0, 0, "f",
	 {F("f", 0755, OWNER, GOWN)}},
	{O_CHMOD, "to 04755", R_WHO, "f", NULL, 04755, 0, 0, "f", {F("f", 0755, OWNER, GOWN)}},
	{O_CHMOD, "dir to 02755, owner not in its group", R_CHMODG, "d", NULL, 02755, 0, 0, "d",
	 {D("d", 0755, OWNER, GOTH)}},
	{O_CHOWN, "06755 file to another user", R_CHOWNK, "f", NULL, 0, OTHER, 0, "f",
	 {F("f", 06755, OWNER, GOWN)}},
	{O_CHOWN, "to its current owner", R_WHO, "f", NULL, 0, OWNER, 0, "f",
	 {F("f", 0644, OWNER, GOWN)}},
	{O_CHOWN, "06755 file to its current owner", R_CHOWNK, "f", NULL, 0, OWNER, 0, "f",
	 {F("f", 06755, OWNER, GOWN)}},
	{O_CHOWN, "06745 file (S_ISGID, no g+x) to its owner", R_CHOWNK, "f", NULL, 0, OWNER, 0, "f",
	 {F("f", 06745, OWNER, GOWN)}},
	{O_CHOWN, "06755 fifo to its current owner", R_CHOWNK, "p", NULL, 0, OWNER, 0, "p",
	 {{"p", 'p', 06755, OWNER, GOWN}}},
	{O_CHOWN, "06755 socket to its current owner", R_CHOWNK, "s", NULL, 0, OWNER, 0, "s",
	 {{"s", 's', 06755, OWNER, GOWN}}},
	{O_CHOWN, "06755 char device to another user", R_CHOWNK, "c", NULL, 0, OTHER, 0, "c",
	 {{"c", 'c', 06755, OWNER, GOWN}}},
	{O_CHOWN, "06755 directory to its current owner", R_CHOWNK, "d", NULL, 0, OWNER, 0, "d",
	 {D("d", 06755, OWNER, GOWN)}},
	{O_CHGRP, "to its current group", R_WHO, "f", NULL, 0, GOWN, 0, "f",
	 {F("f", 0644, OWNER, GOWN)}},
	{O_CHGRP, "to a group the owner is not in", R_WHO, "f", NULL, 0, GMEM, 0, "f",
	 {F("f", 0644, OWNER, GOWN)}},
	{O_CHGRP, "06755 file to its current group", R_CHOWNK, "f", NULL, 0, GOWN, 0, "f",
	 {F("f", 06755, OWNER, GOWN)}},
	{O_CHGRP, "02745 file of a group the owner is not in, to it", R_CHOWNK, "f", NULL, 0, GOTH,
	 0, "f", {F("f", 02745, OWNER, GOTH)}},
	{O_SIZE, "06777 file", R_WRITEK, "f", NULL, 0, 10, 0, "f",
	 {F("f", 06777, OWNER, GOWN)}},
	{O_SIZE, "0644 file", R_CLASS, "f", NULL, 0, 10, 0, "f", {F("f", 0644, OWNER, GOWN)}},
	{O_SIZE, "0444 file", R_OVR, "f", NULL, 0, 10, 0, "f", {F("f", 0444, OWNER, GOWN)}},
	{O_ATIME, "0666 file", R_WHO, "f", NULL, 0, 0, 0, NULL, {F("f", 0666, OWNER, GOWN)}},
	{O_MTIME, "0644 file", R_WHO, "f", NULL, 0, 0, 0, NULL, {F("f", 0644, OWNER, GOWN)}},
	{O_TIMES_NOW, "0666 file", R_WHO, "f", NULL, 0, 0, 0, NULL, {F("f", 0666, OWNER, GOWN)}},
	{O_TIMES_NOW, "0644 file", R_WHO, "f", NULL, 0, 0, 0, NULL, {F("f", 0644, OWNER, GOWN)}},
	{O_TIMES_NOW, "0444 file", R_WHO, "f", NULL, 0, 0, 0, NULL, {F("f", 0444, OWNER, GOWN)}},
	/* LOOKUP */
	{O_LOOKUP, "in a 0755 directory", R_CLASS, "d/x", NULL, 0, 0, 0, NULL,
	 {D("d", 0755, OWNER, GOWN), F("d/x", 0644, OWNER, GOWN)}},
	{O_LOOKUP, "in a 0750 directory", R_CLASS, "d/x", NULL, 0, 0, 0, NULL,
	 {D("d", 0750, OWNER, GOWN), F("d/x", 0644, OWNER, GOWN)}},
	{O_LOOKUP, "in a 0600 directory", R_CLASS, "d/x", NULL, 0, 0, 0, NULL,
	 {D("d", 0600, OWNER, GOWN), F("d/x", 0644, OWNER, GOWN)}},
	/* ACCESS */
	{O_ACCESS, "0640 file", R_ACCESS, "f", NULL, 0, 0, 0, NULL, {F("f", 0640, OWNER, GOWN)}},
	{O_ACCESS, "0751 file", R_ACCESS, "f", NULL, 0, 0, 0, NULL, {F("f", 0751, OWNER, GOWN)}},
	{O_ACCESS, "0000 file", R_ACCESS, "f", NULL, 0, 0, 0, NULL, {F("f", 0000, OWNER, GOWN)}},
	{O_ACCESS, "0751 directory", R_ACCESS, "d", NULL, 0, 0, 0, NULL,
	 {D("d", 0751, OWNER, GOWN)}},
	{O_ACCESS, "0730 directory", R_ACCESS, "d", NULL, 0, 0, 0, NULL,
	 {D("d", 0730, OWNER, GOWN)}},
	/* READLINK, READ */
	{O_READLINK, "a symlink", R_CLASS, "l", NULL, 0, 0, 0, NULL, {{"l", 'l', 0777, OWNER, GOWN}}},
	{O_READ, "0640 file", R_CLASS, "f", NULL, 0, 0, 0, NULL, {F("f", 0640, OWNER, GOWN)}},
	{O_READ, "0111 file", R_OVR, "f", NULL, 0, 0, 0, NULL, {F("f", 0111, OWNER, GOWN)}},
	{O_READ, "0000 file", R_OVR, "f", NULL, 0, 0, 0, NULL, {F("f", 0000, OWNER, GOWN)}},
	/* WRITE */
	{O_WRITE, "06777 file", R_WRITEK, "f", NULL, 0, 0, 0, "f", {F("f", 06777, OWNER, GOWN)}},
	{O_WRITE, "06766 file (S_ISGID, no g+x)", R_WRITEK, "f", NULL, 0, 0, 0, "f",
	 {F("f", 06766, OWNER, GOWN)}},
	{O_WRITE, "0444 file", R_OVR, "f", NULL, 0, 0, 0, "f", {F("f", 0444, OWNER, GOWN)}},
	{O_WRITE, "0644 file", R_CLASS, "f", NULL, 0, 0, 0, "f", {F("f", 0644, OWNER, GOWN)}},
	/* CREATE */
	{O_CREATE_U, "0640 in a 0777 directory", R_NEW, "d/n", NULL, 0640, 0, 0, "d/n",
	 {D("d", 0777, OWNER, GOWN)}},
	{O_CREATE_U, "0640 in a 0755 directory", R_DIR, "d/n", NULL, 0640, 0, 0, "d/n",
	 {D("d", 0755, OWNER, GOWN)}},
	{O_CREATE_U, "02755 in a 02777 directory of group GOWN", R_NEWSG, "d/n", NULL, 02755, 0, 0,
	 "d/n", {D("d", 02777, 0, GOWN)}},
	{O_CREATE_U, "02745 in a 02777 directory of group GOWN", R_NEWSG, "d/n", NULL, 02745, 0, 0,
	 "d/n", {D("d", 02777, 0, GOWN)}},
	{O_CREATE_U, "04755 with uid and gid in a 0777 directory", R_CRATTR, "d/n", NULL, 04755, 0,
	 F_OWNER, "d/n", {D("d", 0777, OWNER, GOWN)}},
	{O_CREATE_U, "existing 0600 file, mtime sent", R_EXIST, "d/x", NULL, 0644, 0, F_MTIME, "d/x",
	 {D("d", 0777, OWNER, GOWN), F("d/x", 0600, OWNER, GOWN)}},
	{O_CREATE_U, "existing 0644 file, size 0 sent", R_EXIST, "d/x", NULL, 0644, 0, F_SIZE, "d/x",
	 {D("d", 0777, OWNER, GOWN), F("d/x", 0644, OWNER, GOWN)}},
	{O_CREATE_U, "existing 0444 file in a 0755 directory, size 0 sent", R_EXIST, "d/x", NULL,
	 0644, 0, F_SIZE, "d/x", {D("d", 0755, OWNER, GOWN), F("d/x", 0444, OWNER, GOWN)}},
	{O_CREATE_G, "existing file in a 0755 directory", R_EXIST, "d/x", NULL, 0644, 0, 0, "d/x",
	 {D("d", 0755, OWNER, GOWN), F("d/x", 0600, OWNER, GOWN)}},
	{O_CREATE_G, "in a 0770 directory", R_DIR, "d/n", NULL, 0644, 0, 0, "d/n",
	 {D("d", 0770, OWNER, GOWN)}},
	{O_CREATE_E, "in a 0777 directory", R_NEW, "d/n", NULL, 0, 0, 0, "d/n",
	 {D("d", 0777, OWNER, GOWN)}},
	/* MKDIR, SYMLINK, MKNOD */
	{O_MKDIR, "0755 in a 0777 directory", R_MKDIR, "d/n", NULL, 0755, 0, 0, "d/n",
	 {D("d", 0777, OWNER, GOWN)}},
	{O_MKDIR, "0755 in a 02777 directory of group GOWN", R_MKDIR, "d/n", NULL, 0755, 0, 0, "d/n",
	 {D("d", 02777, 0, GOWN)}},
	{O_MKDIR, "06755 in a 0777 directory", R_MKDIR, "d/n", NULL, 06755, 0, 0, "d/n",
	 {D("d", 0777, OWNER, GOWN)}},
	{O_MKDIR, "01777 in a 0777 directory", R_MKDIR, "d/n", NULL, 01777, 0, 0, "d/n",
	 {D("d", 0777, OWNER, GOWN)}},
	{O_MKDIR, "in a 0555 directory", R_DIR, "d/n", NULL, 0755, 0, 0, "d/n",
	 {D("d", 0555, OWNER, GOWN)}},
	{O_MKDIR, "in a 0666 directory", R_LOOKUP, "d/n", NULL, 0755, 0, 0, "d/n",
	 {D("d", 0666, OWNER, GOWN)}},
	{O_SYMLINK, "in a 02777 directory of group GOWN", R_NEW, "d/n", NULL, 0, 0, 0, "d/n",
	 {D("d", 02777, 0, GOWN)}},
	{O_SYMLINK, "in a 0755 directory", R_DIR, "d/n", NULL, 0, 0, 0, "d/n",
	 {D("d", 0755, OWNER, GOWN)}},
	{O_MKFIFO, "0644 in a 0777 directory", R_NEW, "d/n", NULL, 0644, 0, 0, "d/n",
	 {D("d", 0777, OWNER, GOWN)}},
	{O_MKFIFO, "02755 in a 02777 directory of group GOWN", R_NEWSG, "d/n", NULL, 02755, 0, 0,
	 "d/n", {D("d", 02777, 0, GOWN)}},
	{O_MKSOCK, "0755 in a 0777 directory", R_NEW, "d/n", NULL, 0755, 0, 0, "d/n",
	 {D("d", 0777, OWNER, GOWN)}},
	{O_MKCHR, "0644 in a 0777 directory", R_MKNOD, "d/n", NULL, 0644, 0, 0, "d/n",
	 {D("d", 0777, OWNER, GOWN)}},
	/* REMOVE, RMDIR */
	{O_REMOVE, "in a 0755 directory", R_DIR, "d/x", NULL, 0, 0, 0, "d/x",
	 {D("d", 0755, OWNER, GOWN), F("d/x", 0644, OWNER, GOWN)}},
	{O_REMOVE, "in a 0770 directory", R_DIR, "d/x", NULL, 0, 0, 0, "d/x",
	 {D("d", 0770, OWNER, GOWN), F("d/x", 0644, OTHER, GOTH)}},
	{O_REMOVE, "the owner's file in a 01777 directory of root", R_STICKY, "d/x", NULL, 0, 0, 0,
	 "d/x", {D("d", 01777, 0, 0), F("d/x", 0644, OWNER, GOWN)}},
	{O_REMOVE, "the owner's file in a 01777 directory of MEMBER", R_STICKY, "d/x", NULL, 0, 0,
	 0, "d/x", {D("d", 01777, MEMBER, GMEM), F("d/x", 0644, OWNER, GOWN)}},
	{O_RMDIR, "the owner's directory in a 01777 directory of root", R_STICKY, "d/x", NULL, 0, 0,
	 0, "d/x", {D("d", 01777, 0, 0), D("d/x", 0755, OWNER, GOWN)}},
	{O_RMDIR, "in a 0777 directory", R_DIR, "d/x", NULL, 0, 0, 0, "d/x",
	 {D("d", 0777, 0, 0), D("d/x", 0755, OWNER, GOWN)}},
	/* RENAME */
	{O_RENAME, "within a 0777 directory", R_DIR, "d/x", "d/y", 0, 0, 0, "d/y",
	 {D("d", 0777, 0, 0), F("d/x", 0644, OWNER, GOWN)}},
	{O_RENAME, "OTHER's file over the owner's, 01777 directory", R_STICKY, "d/x", "d/y", 0, 0, 0,
	 "d/y", {D("d", 01777, 0, 0), F("d/x", 0644, OTHER, GOTH), F("d/y", 0644, OWNER, GOWN)}},
	{O_RENAME, "root's 0755 dir out of OTHER's 01777 dir", R_DOTDOT, "s/x", "t/x", 0, 0, 0, "t/x",
	 {D("s", 01777, OTHER, GOTH), D("t", 0777, 0, 0), D("s/x", 0755, 0, 0)}},
	{O_RENAME, "root's 0755 dir within OTHER's 01777 dir", R_DOTDOT, "s/x", "s/y", 0, 0, 0, "s/y",
	 {D("s", 01777, OTHER, GOTH), D("s/x", 0755, 0, 0)}},
	{O_RENAME, "a file from a 0777 into a 0755 directory", R_DIR, "s/x", "t/x", 0, 0, 0, "t/x",
	 {D("s", 0777, 0, 0), D("t", 0755, 0, 0), F("s/x", 0644, OWNER, GOWN)}},
	{O_RENAME, "a file over a directory", R_DIR, "d/x", "d/y", 0, 0, 0, "d/y",
	 {D("d", 0777, 0, 0), F("d/x", 0644, OWNER, GOWN), D("d/y", 0755, OWNER, GOWN)}},
	/* LINK */
	{O_LINK, "0644 file into a 0777 directory", R_DIR, "f", "d/n", 0, 0, 0, "f",
	 {D("d", 0777, 0, 0), F("f", 0644, OWNER, GOWN)}},
	{O_LINK, "0600 file into a 0755 directory", R_DIR, "f", "d/n", 0, 0, 0, "f",
	 {D("d", 0755, OWNER, GOWN), F("f", 0600, OWNER, GOWN)}},
	/* READDIR, READDIRPLUS */
	{O_READDIR, "0751 directory", R_CLASS, "d", NULL, 0, 0, 0, NULL,
	 {D("d", 0751, OWNER, GOWN), F("d/x", 0644, OWNER, GOWN)}},
	{O_READDIRPLUS, "0754 directory", R_PLUS, "d", NULL, 0, 0, 0, NULL,
	 {D("d", 0754, OWNER, GOWN), F("d/x", 0644, OWNER, GOWN)}},
	/* COMMIT */
	{O_COMMIT, "0644 file", R_CLASS, "f", NULL, 0, 0, 0, NULL, {F("f", 0644, OWNER, GOWN)}},
	{O_COMMIT, "0444 file", R_OVR, "f", NULL, 0, 0, 0, NULL, {F("f", 0444, OWNER, GOWN)}},
};
#define NSCENS (sizeof(scens) / sizeof(scens[0]))

/* ---- results ---- */

#define N_OVERRIDE  0x01u /* (o) */
#define N_EXECREAD  0x02u /* (x) */
#define N_ROFIRST   0x04u /* (r) */
#define N_HARDLINK  0x08u /* (l) */
#define N_CREATEOWN 0x10u /* (c) */
#define N_EXISTING  0x20u /* (e) */

struct res {
	int err;
	bool present;        /* the checked object exists afterwards */
	uint32_t mode, uid, gid;
	bool mtime_given;
	uint32_t bits;       /* ACCESS */
	int handles;         /* READDIRPLUS: -1 none, 1 all entries had handles */
	unsigned notes;      /* what the expectation took from the rules above */
};

/* What the child reports (beyond what root sees afterwards). */
struct child_out {
	int err;
	uint32_t bits;
	int handles;
	unsigned notes;
	int link_dir_err; /* LINK refused by protected_hardlinks: the directory check */
};

static char base[96];        /* /tmp/test-nfs3-perm.XXXXXX */
static struct tc_jnfsd jnfsd;
static bool verbose;
static int mismatches;

static void kill_server(void)
{
	if (jnfsd.pid > 0)
		kill(jnfsd.pid, SIGKILL);
}

static void path_join(char *out, size_t n, const char *a, const char *b)
{
	int r = snprintf(out, n, "%s/%s", a, b);
	CHECK(r > 0 && (size_t)r < n);
}

/* dirname and basename of a relative path, into buffers */
static void split(const char *p, char *dir, size_t dn, const char **name)
{
	const char *slash = strrchr(p, '/');
	if (!slash) {
		snprintf(dir, dn, ".");
		*name = p;
		return;
	}
	snprintf(dir, dn, "%.*s", (int)(slash - p), p);
	*name = slash + 1;
}

/* ---- the local side ---- */

static void local_make(const char *cdir, const struct node *nd)
{
	char p[256];
	path_join(p, sizeof(p), cdir, nd->path);
	switch (nd->type) {
	case 'd': CHECK_OK(mkdir(p, 0700)); break;
	case 'f': {
		int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0600);
		CHECK(fd >= 0);
		close(fd);
		break;
	}
	case 'l': CHECK_OK(symlink("target", p)); break;
	case 'p': CHECK_OK(mknod(p, S_IFIFO | 0600, 0)); break;
	case 's': CHECK_OK(mknod(p, S_IFSOCK | 0600, 0)); break;
	case 'c': CHECK_OK(mknod(p, S_IFCHR | 0600, makedev(1, 3))); break;
	}
	CHECK_OK(fchownat(AT_FDCWD, p, nd->uid, nd->gid, AT_SYMLINK_NOFOLLOW));
	if (nd->type != 'l')
		CHECK_OK(fchmodat(AT_FDCWD, p, nd->mode, 0));
}

static int access_bits(const char *p, bool dir)
{
	/* ACCESS READ LOOKUP MODIFY EXTEND DELETE EXECUTE as local checks */
	int bits = 0;
	if (!faccessat(AT_FDCWD, p, R_OK, AT_EACCESS))
		bits |= 0x01;
	if (dir) {
		if (!faccessat(AT_FDCWD, p, X_OK, AT_EACCESS))
			bits |= 0x02;
		if (!faccessat(AT_FDCWD, p, W_OK | X_OK, AT_EACCESS))
			bits |= 0x04 | 0x08 | 0x10;
	} else {
		if (!faccessat(AT_FDCWD, p, W_OK, AT_EACCESS))
			bits |= 0x04 | 0x08;
		if (!faccessat(AT_FDCWD, p, X_OK, AT_EACCESS))
			bits |= 0x20;
	}
	return bits;
}

static int errno_of(int rc)
{
	return rc < 0 ? errno : 0;
}

/* In the child, as the caller: the operation; returns the errno. */
static int local_op(const struct scen *sc, const char *cdir, int rootfd, struct child_out *o)
{
	char a[256], b[256];
	path_join(a, sizeof(a), cdir, sc->a);
	if (sc->b)
		path_join(b, sizeof(b), cdir, sc->b);
	struct stat st;
	bool owner = !lstat(a, &st) && st.st_uid == geteuid();
	int fd, err;
	char buf[16];
	const struct timespec atime[2] = {{TIME_GIVEN, 0}, {0, UTIME_OMIT}};
	const struct timespec mtime[2] = {{0, UTIME_OMIT}, {TIME_GIVEN, 0}};
	switch (sc->op) {
	case O_CHMOD: return errno_of(fchmodat(AT_FDCWD, a, sc->mode, 0));
	case O_CHOWN: return errno_of(fchownat(AT_FDCWD, a, sc->arg, -1, AT_SYMLINK_NOFOLLOW));
	case O_CHGRP: return errno_of(fchownat(AT_FDCWD, a, -1, sc->arg, AT_SYMLINK_NOFOLLOW));
	case O_SIZE:
		err = errno_of(truncate(a, sc->arg));
		if (err == EACCES && owner && rootfd >= 0) {
			o->notes |= N_OVERRIDE;
			err = errno_of(ftruncate(rootfd, sc->arg));
		}
		return err;
	case O_ATIME: return errno_of(utimensat(AT_FDCWD, a, atime, 0));
	case O_MTIME: return errno_of(utimensat(AT_FDCWD, a, mtime, 0));
	case O_TIMES_NOW: return errno_of(utimensat(AT_FDCWD, a, NULL, 0));
	case O_LOOKUP: return errno_of(fstatat(AT_FDCWD, a, &st, AT_SYMLINK_NOFOLLOW));
	case O_ACCESS: o->bits = access_bits(a, S_ISDIR(st.st_mode)); return 0;
	case O_READLINK: return errno_of((int)readlink(a, buf, sizeof(buf)));
	case O_READ:
		fd = open(a, O_RDONLY);
		if (fd >= 0) {
			err = errno_of((int)read(fd, buf, sizeof(buf)));
			close(fd);
			return err;
		}
		err = errno;
		if (err == EACCES && owner) {
			o->notes |= N_OVERRIDE;
			return 0;
		}
		if (err == EACCES && S_ISREG(st.st_mode) && !faccessat(AT_FDCWD, a, X_OK, AT_EACCESS)) {
			o->notes |= N_EXECREAD;
			return 0;
		}
		return err;
	case O_WRITE:
	case O_COMMIT:
		fd = open(a, O_WRONLY);
		err = fd < 0 ? errno : 0;
		if (err == EACCES && owner && rootfd >= 0) {
			o->notes |= N_OVERRIDE;
			fd = rootfd; /* the write is still the caller's: file_remove_privs */
			err = 0;
		}
		if (!err)
			err = errno_of(sc->op == O_WRITE ? (int)write(fd, "hello", 5) : fsync(fd));
		if (fd >= 0 && fd != rootfd)
			close(fd);
		return err;
	case O_CREATE_U:
		if (!fstatat(AT_FDCWD, a, &st, AT_SYMLINK_NOFOLLOW)) {
			o->notes |= N_EXISTING;
			if (!(sc->flags & F_SIZE))
				return 0;
			err = errno_of(truncate(a, sc->arg));
			if (err == EACCES && st.st_uid == geteuid() && rootfd >= 0) {
				o->notes |= N_OVERRIDE;
				err = errno_of(ftruncate(rootfd, sc->arg));
			}
			return err;
		}
		if (errno != ENOENT)
			return errno;
		__attribute__((fallthrough)); /* a new name: as GUARDED */
	case O_CREATE_G:
	case O_CREATE_E:
		fd = open(a, O_CREAT | O_EXCL | O_RDONLY, sc->op == O_CREATE_E ? 0600 : sc->mode);
		if (fd < 0)
			return errno;
		err = 0;
		if (sc->flags & F_OWNER) {
			o->notes |= N_CREATEOWN;
			if (geteuid() == 0)
				err = errno_of(fchown(fd, OTHER, GOTH));
		}
		close(fd);
		return err;
	case O_MKDIR: return errno_of(mkdir(a, sc->mode));
	case O_SYMLINK: return errno_of(symlink("target", a));
	case O_MKFIFO: return errno_of(mknod(a, S_IFIFO | sc->mode, 0));
	case O_MKSOCK: return errno_of(mknod(a, S_IFSOCK | sc->mode, 0));
	case O_MKCHR: return errno_of(mknod(a, S_IFCHR | sc->mode, makedev(1, 3)));
	case O_REMOVE: return errno_of(unlink(a));
	case O_RMDIR: return errno_of(rmdir(a));
	case O_RENAME: return errno_of(rename(a, b));
	case O_LINK:
		err = errno_of(link(a, b));
		if (err == EPERM) {
			/* fs.protected_hardlinks: what vfs_link alone says is the
			 * new name's directory's permission */
			char d[256];
			const char *n;
			split(b, d, sizeof(d), &n);
			o->notes |= N_HARDLINK;
			o->link_dir_err = errno_of(faccessat(AT_FDCWD, d, W_OK | X_OK, AT_EACCESS));
		}
		return err;
	case O_READDIR:
	case O_READDIRPLUS: {
		DIR *dp = opendir(a);
		if (!dp)
			return errno;
		o->handles = 0;
		for (struct dirent *e; (e = readdir(dp));) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			int ok = !fstatat(dirfd(dp), e->d_name, &st, AT_SYMLINK_NOFOLLOW);
			o->handles = o->handles == 0 ? (ok ? 1 : -1) : (o->handles == (ok ? 1 : -1) ? o->handles : 2);
		}
		closedir(dp);
		return 0;
	}
	}
	return EINVAL;
}

/* Run sc in a child with credential e; fill what root sees afterwards. */
static void local_run(const struct scen *sc, const char *setup_dir, const char *op_dir,
		      const struct caller *e, struct res *r)
{
	char a[256];
	path_join(a, sizeof(a), op_dir, sc->a);
	int rootfd = -1;
	if (sc->op == O_WRITE || sc->op == O_COMMIT || sc->op == O_SIZE || sc->op == O_CREATE_U)
		rootfd = open(a, O_WRONLY); /* fails on the read-only view: no override there */
	int pfd[2];
	CHECK_OK(pipe(pfd));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct child_out o = {0};
		umask(0);
		if (setgroups(e->ngroups, e->groups) || setresgid(e->gid, e->gid, e->gid) ||
		    setresuid(e->uid, e->uid, e->uid))
			_exit(3);
		o.err = local_op(sc, op_dir, rootfd, &o);
		if (write(pfd[1], &o, sizeof(o)) != sizeof(o))
			_exit(4);
		_exit(0);
	}
	close(pfd[1]);
	struct child_out o;
	CHECK_EQ(read(pfd[0], &o, sizeof(o)), (long)sizeof(o));
	close(pfd[0]);
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (rootfd >= 0)
		close(rootfd);

	memset(r, 0, sizeof(*r));
	r->err = o.err;
	r->bits = o.bits;
	r->handles = o.handles;
	r->notes = o.notes;
	if (o.notes & N_HARDLINK)
		r->err = o.link_dir_err;
	else if (o.notes & (N_OVERRIDE | N_EXECREAD))
		r->err = 0; /* the child did what NFS does for it */
	if (sc->check) {
		char p[256];
		struct stat st;
		path_join(p, sizeof(p), setup_dir, sc->check);
		r->present = !lstat(p, &st);
		if (r->present) {
			r->mode = st.st_mode & 07777;
			r->uid = st.st_uid;
			r->gid = st.st_gid;
			r->mtime_given = st.st_mtim.tv_sec == TIME_GIVEN;
		}
	}
}

/* ---- the NFS side ---- */

struct fhb {
	char data[64];
	u_int len;
};

static struct nfs_fh3 fh3(struct fhb *f)
{
	struct nfs_fh3 h = {{f->len, f->data}};
	return h;
}

struct conn {
	struct nfs_context *nfs;
	struct rpc_context *rpc;
	struct fhb root;
};
static struct conn setup_conn;           /* "/" as root */
static struct conn conns[NEXPORTS];      /* one per export */

static void set_cred(struct rpc_context *rpc, uint32_t uid, uint32_t gid, uint32_t n,
		     const uint32_t *groups)
{
	uint32_t g[16];
	memcpy(g, groups, n * sizeof(*g));
	struct AUTH *auth = libnfs_authunix_create("test-nfs3-perm", uid, gid, n, g);
	CHECK(auth != NULL);
	rpc_set_auth(rpc, auth);
}

static void set_root(struct rpc_context *rpc)
{
	const uint32_t g0 = 0;
	set_cred(rpc, 0, 0, 1, &g0);
}

static void conn_open(struct conn *c, const char *export)
{
	struct raw keep = {0};
	c->nfs = tn_mount(jnfsd.port[0], export, 0, 0);
	c->rpc = nfs_get_rpc_context(c->nfs);
	struct nfs_fh3 h = tn_handle_of(c->rpc, jnfsd.port[0], export, "/", &keep);
	CHECK(h.data.data_len <= sizeof(c->root.data));
	memcpy(c->root.data, keep.fhbuf, h.data.data_len);
	c->root.len = h.data.data_len;
	set_root(c->rpc);
}

static uint32_t lookup(struct rpc_context *rpc, struct fhb *dir, const char *name, struct fhb *out)
{
	struct raw r = {0};
	r.inspect = inspect_lookup;
	LOOKUP3args la = {{fh3(dir), (char *)name}};
	RAW(rpc, &r, rpc_nfs3_lookup_async(rpc, raw_cb, &la, &r));
	if (r.nfs_status == NFS3_OK) {
		memcpy(out->data, r.fhbuf, r.fh.data.data_len);
		out->len = r.fh.data.data_len;
	}
	return r.nfs_status;
}

/* The handle of path (relative to the export root); "." is the root. */
static uint32_t walk(struct conn *c, const char *path, struct fhb *out)
{
	*out = c->root;
	if (!strcmp(path, "."))
		return NFS3_OK;
	char copy[256], *save = NULL;
	snprintf(copy, sizeof(copy), "%s", path);
	for (char *p = strtok_r(copy, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		struct fhb next;
		uint32_t st = lookup(c->rpc, out, p, &next);
		if (st != NFS3_OK)
			return st;
		*out = next;
	}
	return NFS3_OK;
}

static void sattr_none(sattr3 *s)
{
	memset(s, 0, sizeof(*s));
}

static uint32_t nfs_setattr(struct rpc_context *rpc, struct fhb *f, const sattr3 *sa)
{
	struct raw r = {0};
	SETATTR3args args = {.object = fh3(f), .new_attributes = *sa};
	RAW(rpc, &r, rpc_nfs3_setattr_async(rpc, raw_cb, &args, &r));
	return r.nfs_status;
}

/* As root through "/": make nd in the case directory cpath. */
static void nfs_make(const char *cpath, const struct node *nd)
{
	char p[256], d[256];
	const char *name;
	path_join(p, sizeof(p), cpath, nd->path);
	split(p, d, sizeof(d), &name);
	struct fhb dir, obj;
	struct rpc_context *rpc = setup_conn.rpc;
	CHECK_EQ(walk(&setup_conn, d, &dir), NFS3_OK);
	struct raw r = {0};
	sattr3 sa;
	sattr_none(&sa);
	sa.mode.set_it = 1;
	sa.mode.set_mode3_u.mode = 0600;
	switch (nd->type) {
	case 'd': {
		MKDIR3args ma = {{fh3(&dir), (char *)name}, sa};
		RAW(rpc, &r, rpc_nfs3_mkdir_async(rpc, raw_cb, &ma, &r));
		break;
	}
	case 'f': {
		CREATE3args ca = {.where = {fh3(&dir), (char *)name}, .how = {.mode = GUARDED}};
		ca.how.createhow3_u.obj_attributes = sa;
		RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &ca, &r));
		break;
	}
	case 'l': {
		SYMLINK3args sl = {{fh3(&dir), (char *)name}, {sa, "target"}};
		sattr_none(&sl.symlink.symlink_attributes);
		RAW(rpc, &r, rpc_nfs3_symlink_async(rpc, raw_cb, &sl, &r));
		break;
	}
	default: {
		MKNOD3args mk = {.where = {fh3(&dir), (char *)name}};
		mk.what.type = nd->type == 'p' ? NF3FIFO : nd->type == 's' ? NF3SOCK : NF3CHR;
		if (nd->type == 'c') {
			mk.what.mknoddata3_u.chr_device.dev_attributes = sa;
			mk.what.mknoddata3_u.chr_device.spec.specdata1 = 1;
			mk.what.mknoddata3_u.chr_device.spec.specdata2 = 3;
		} else {
			mk.what.mknoddata3_u.pipe_attributes = sa;
		}
		RAW(rpc, &r, rpc_nfs3_mknod_async(rpc, raw_cb, &mk, &r));
		break;
	}
	}
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK_EQ(walk(&setup_conn, p, &obj), NFS3_OK);
	sattr_none(&sa);
	sa.uid.set_it = sa.gid.set_it = 1;
	sa.uid.set_uid3_u.uid = nd->uid;
	sa.gid.set_gid3_u.gid = nd->gid;
	CHECK_EQ(nfs_setattr(rpc, &obj, &sa), NFS3_OK);
	if (nd->type != 'l') {
		sattr_none(&sa);
		sa.mode.set_it = 1;
		sa.mode.set_mode3_u.mode = nd->mode;
		CHECK_EQ(nfs_setattr(rpc, &obj, &sa), NFS3_OK);
	}
}

static void inspect_access(struct raw *r, void *res)
{
	ACCESS3res *a = res;
	if (a->status == NFS3_OK)
		r->u32[0] = a->ACCESS3res_u.resok.access;
}

static void inspect_plus(struct raw *r, void *res)
{
	READDIRPLUS3res *d = res;
	r->u32[0] = 0;
	if (d->status != NFS3_OK)
		return;
	int h = 0;
	for (entryplus3 *e = d->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
		if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
			continue;
		int ok = e->name_handle.handle_follows && e->name_attributes.attributes_follow;
		h = h == 0 ? (ok ? 1 : -1) : (h == (ok ? 1 : -1) ? h : 2);
	}
	r->u32[0] = (uint32_t)h;
}

static void inspect_attr(struct raw *r, void *res)
{
	GETATTR3res *g = res;
	if (g->status == NFS3_OK) {
		fattr3 *a = &g->GETATTR3res_u.resok.obj_attributes;
		r->u32[0] = a->mode;
		r->u32[1] = a->uid;
		r->u32[2] = a->gid;
		r->u64[0] = a->mtime.seconds;
	}
}

static int nfs_errno(uint32_t st)
{
	switch (st) {
	case NFS3_OK: return 0;
	case NFS3ERR_PERM: return EPERM;
	case NFS3ERR_NOENT: return ENOENT;
	case NFS3ERR_ACCES: return EACCES;
	case NFS3ERR_EXIST: return EEXIST;
	case NFS3ERR_XDEV: return EXDEV;
	case NFS3ERR_NOTDIR: return ENOTDIR;
	case NFS3ERR_ISDIR: return EISDIR;
	case NFS3ERR_INVAL: return EINVAL;
	case NFS3ERR_ROFS: return EROFS;
	case NFS3ERR_NOTEMPTY: return ENOTEMPTY;
	}
	return 1000 + (int)st; /* anything else shows as itself */
}

static void fill_sattr(const struct scen *sc, sattr3 *sa)
{
	sattr_none(sa);
	sa->mode.set_it = 1;
	sa->mode.set_mode3_u.mode = sc->mode;
	if (sc->flags & F_SIZE) {
		sa->size.set_it = 1;
		sa->size.set_size3_u.size = sc->arg;
	}
	if (sc->flags & F_MTIME) {
		sa->mtime.set_it = SET_TO_CLIENT_TIME;
		sa->mtime.set_mtime_u.mtime.seconds = TIME_GIVEN;
	}
	if (sc->flags & F_OWNER) {
		sa->uid.set_it = sa->gid.set_it = 1;
		sa->uid.set_uid3_u.uid = OTHER;
		sa->gid.set_gid3_u.gid = GOTH;
	}
}

/* Run sc on export ei as caller c (its AUTH_SYS credential, unsquashed). */
static void nfs_run(const struct scen *sc, int ei, const char *cname, const struct caller *c,
		    struct res *out)
{
	struct conn *cn = &conns[ei];
	struct rpc_context *rpc = cn->rpc;
	char a[256], b[256], ad[256], bd[256];
	const char *an, *bn = NULL;
	path_join(a, sizeof(a), cname, sc->a);
	split(a, ad, sizeof(ad), &an);
	if (sc->b) {
		path_join(b, sizeof(b), cname, sc->b);
		split(b, bd, sizeof(bd), &bn);
	}
	/* handles, looked up as root (squashed as the export says) */
	struct fhb fa = {0}, fad, fbd = {0};
	bool dirop = sc->op == O_LOOKUP || (sc->op >= O_CREATE_U && sc->op <= O_RMDIR) ||
		     sc->op == O_RENAME;
	CHECK_EQ(walk(cn, ad, &fad), NFS3_OK);
	if (!dirop)
		CHECK_EQ(walk(cn, a, &fa), NFS3_OK);
	if (sc->b)
		CHECK_EQ(walk(cn, bd, &fbd), NFS3_OK);

	set_cred(rpc, c->uid, c->gid, c->ngroups, c->groups);
	struct raw r = {0};
	sattr3 sa;
	sattr_none(&sa);
	char data[16] = "hello";
	memset(out, 0, sizeof(*out));
	switch (sc->op) {
	case O_CHMOD:
		sa.mode.set_it = 1;
		sa.mode.set_mode3_u.mode = sc->mode;
		goto setattr;
	case O_CHOWN:
		sa.uid.set_it = 1;
		sa.uid.set_uid3_u.uid = sc->arg;
		goto setattr;
	case O_CHGRP:
		sa.gid.set_it = 1;
		sa.gid.set_gid3_u.gid = sc->arg;
		goto setattr;
	case O_SIZE:
		sa.size.set_it = 1;
		sa.size.set_size3_u.size = sc->arg;
		goto setattr;
	case O_ATIME:
		sa.atime.set_it = SET_TO_CLIENT_TIME;
		sa.atime.set_atime_u.atime.seconds = TIME_GIVEN;
		goto setattr;
	case O_MTIME:
		sa.mtime.set_it = SET_TO_CLIENT_TIME;
		sa.mtime.set_mtime_u.mtime.seconds = TIME_GIVEN;
		goto setattr;
	case O_TIMES_NOW:
		sa.atime.set_it = sa.mtime.set_it = SET_TO_SERVER_TIME;
	setattr:
		r.nfs_status = nfs_setattr(rpc, &fa, &sa);
		break;
	case O_LOOKUP: {
		LOOKUP3args la = {{fh3(&fad), (char *)an}};
		RAW(rpc, &r, rpc_nfs3_lookup_async(rpc, raw_cb, &la, &r));
		break;
	}
	case O_ACCESS: {
		ACCESS3args aa = {fh3(&fa), 0x3f};
		r.inspect = inspect_access;
		RAW(rpc, &r, rpc_nfs3_access_async(rpc, raw_cb, &aa, &r));
		out->bits = r.u32[0];
		break;
	}
	case O_READLINK: {
		READLINK3args rl = {fh3(&fa)};
		RAW(rpc, &r, rpc_nfs3_readlink_async(rpc, raw_cb, &rl, &r));
		break;
	}
	case O_READ: {
		READ3args ra = {fh3(&fa), 0, 16};
		RAW(rpc, &r, rpc_nfs3_read_async(rpc, raw_cb, &ra, &r));
		break;
	}
	case O_WRITE: {
		WRITE3args wa = {.file = fh3(&fa), .offset = 0, .count = 5, .stable = UNSTABLE};
		wa.data.data_len = 5;
		wa.data.data_val = data;
		RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &wa, &r));
		break;
	}
	case O_COMMIT: {
		COMMIT3args ca = {fh3(&fa), 0, 0};
		RAW(rpc, &r, rpc_nfs3_commit_async(rpc, raw_cb, &ca, &r));
		break;
	}
	case O_CREATE_U:
	case O_CREATE_G:
	case O_CREATE_E: {
		CREATE3args ca = {.where = {fh3(&fad), (char *)an}};
		ca.how.mode = sc->op == O_CREATE_U ? UNCHECKED : sc->op == O_CREATE_G ? GUARDED
										    : EXCLUSIVE;
		if (sc->op == O_CREATE_E)
			memcpy(ca.how.createhow3_u.verf, "verifier", 8);
		else
			fill_sattr(sc, &ca.how.createhow3_u.obj_attributes);
		RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &ca, &r));
		break;
	}
	case O_MKDIR: {
		MKDIR3args ma = {{fh3(&fad), (char *)an}, {}};
		fill_sattr(sc, &ma.attributes);
		RAW(rpc, &r, rpc_nfs3_mkdir_async(rpc, raw_cb, &ma, &r));
		break;
	}
	case O_SYMLINK: {
		SYMLINK3args sl = {{fh3(&fad), (char *)an}, {{}, "target"}};
		sattr_none(&sl.symlink.symlink_attributes);
		RAW(rpc, &r, rpc_nfs3_symlink_async(rpc, raw_cb, &sl, &r));
		break;
	}
	case O_MKFIFO:
	case O_MKSOCK:
	case O_MKCHR: {
		MKNOD3args mk = {.where = {fh3(&fad), (char *)an}};
		if (sc->op == O_MKCHR) {
			mk.what.type = NF3CHR;
			fill_sattr(sc, &mk.what.mknoddata3_u.chr_device.dev_attributes);
			mk.what.mknoddata3_u.chr_device.spec.specdata1 = 1;
			mk.what.mknoddata3_u.chr_device.spec.specdata2 = 3;
		} else {
			mk.what.type = sc->op == O_MKFIFO ? NF3FIFO : NF3SOCK;
			fill_sattr(sc, &mk.what.mknoddata3_u.pipe_attributes);
		}
		RAW(rpc, &r, rpc_nfs3_mknod_async(rpc, raw_cb, &mk, &r));
		break;
	}
	case O_REMOVE: {
		REMOVE3args ra = {{fh3(&fad), (char *)an}};
		RAW(rpc, &r, rpc_nfs3_remove_async(rpc, raw_cb, &ra, &r));
		break;
	}
	case O_RMDIR: {
		RMDIR3args ra = {{fh3(&fad), (char *)an}};
		RAW(rpc, &r, rpc_nfs3_rmdir_async(rpc, raw_cb, &ra, &r));
		break;
	}
	case O_RENAME: {
		RENAME3args ra = {{fh3(&fad), (char *)an}, {fh3(&fbd), (char *)bn}};
		RAW(rpc, &r, rpc_nfs3_rename_async(rpc, raw_cb, &ra, &r));
		break;
	}
	case O_LINK: {
		LINK3args la = {fh3(&fa), {fh3(&fbd), (char *)bn}};
		RAW(rpc, &r, rpc_nfs3_link_async(rpc, raw_cb, &la, &r));
		break;
	}
	case O_READDIR: {
		READDIR3args ra = {.dir = fh3(&fa), .count = 4096};
		RAW(rpc, &r, rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &r));
		break;
	}
	case O_READDIRPLUS: {
		READDIRPLUS3args ra = {.dir = fh3(&fa), .dircount = 4096, .maxcount = 32768};
		r.inspect = inspect_plus;
		RAW(rpc, &r, rpc_nfs3_readdirplus_async(rpc, raw_cb, &ra, &r));
		out->handles = (int)r.u32[0];
		break;
	}
	}
	set_root(rpc);
	out->err = nfs_errno(r.nfs_status);
	if (sc->check) {
		/* what the object is now, seen through "/" as root */
		char p[256];
		struct fhb f;
		snprintf(p, sizeof(p), "%s/%s/%s", exports_[ei].name, cname, sc->check);
		uint32_t st = walk(&setup_conn, p, &f);
		out->present = st == NFS3_OK;
		if (out->present) {
			struct raw g = {0};
			g.inspect = inspect_attr;
			GETATTR3args ga = {fh3(&f)};
			RAW(setup_conn.rpc, &g, rpc_nfs3_getattr_async(setup_conn.rpc, raw_cb, &ga, &g));
			CHECK_EQ(g.nfs_status, NFS3_OK);
			out->mode = g.u32[0] & 07777;
			out->uid = g.u32[1];
			out->gid = g.u32[2];
			out->mtime_given = g.u64[0] == TIME_GIVEN;
		} else {
			CHECK_EQ(st, NFS3ERR_NOENT);
		}
	}
}

/* ---- expectations, comparison, the table ---- */

/* The NFS answer the rules give, from the local answer (see the header). */
static void expect(const struct scen *sc, const struct export *ex, const struct res *loc,
		   struct res *want)
{
	*want = *loc;
	/* the procedures whose first check asks for write access to the
	 * object or its directory (knfsd's fh_verify with NFSD_MAY_WRITE,
	 * SATTR, REMOVE or CREATE) */
	bool writes = sc->op <= O_TIMES_NOW || sc->op == O_WRITE || sc->op == O_COMMIT ||
		      sc->op == O_REMOVE || sc->op == O_RMDIR || sc->op == O_RENAME ||
		      sc->op == O_LINK || (sc->op == O_CREATE_U && (loc->notes & N_EXISTING));
	if (ex->ro && writes && (loc->err == EACCES || (loc->notes & N_OVERRIDE))) {
		want->err = EROFS;
		want->notes = (want->notes & ~N_OVERRIDE) | N_ROFIRST;
	}
}

static bool same(const struct scen *sc, const struct res *x, const struct res *y)
{
	if (x->err != y->err)
		return false;
	if (sc->op == O_ACCESS && x->bits != y->bits)
		return false;
	if (sc->op == O_READDIRPLUS && !x->err && x->handles != y->handles)
		return false;
	if (sc->check) {
		if (x->present != y->present)
			return false;
		if (x->present && (x->mode != y->mode || x->uid != y->uid || x->gid != y->gid))
			return false;
		if (x->present && (sc->flags & F_MTIME) && x->mtime_given != y->mtime_given)
			return false;
	}
	return true;
}

static const char *errname(int e)
{
	switch (e) {
	case 0: return "OK";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EACCES: return "EACCES";
	case EEXIST: return "EEXIST";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case EINVAL: return "EINVAL";
	case EROFS: return "EROFS";
	case ENOTEMPTY: return "ENOTEMPTY";
	}
	static char buf[16];
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

/* A cell of the table: the status, then what was compared. */
static void fmt(const struct scen *sc, const struct res *x, bool notes, char *out, size_t n)
{
	size_t len = (size_t)snprintf(out, n, "%s", errname(x->err));
	if (sc->op == O_ACCESS) {
		const char *l = "rlmedx";
		len += (size_t)snprintf(out + len, n - len, " ");
		for (int i = 0; i < 6; i++)
			len += (size_t)snprintf(out + len, n - len, "%c",
						(x->bits & (1u << i)) ? l[i] : '-');
	}
	if (sc->op == O_READDIRPLUS && !x->err)
		len += (size_t)snprintf(out + len, n - len, x->handles == 1 ? " +fh" : " -fh");
	if (sc->check && !x->err && x->present && sc->op != O_REMOVE && sc->op != O_RMDIR &&
	    sc->op != O_LINK)
		len += (size_t)snprintf(out + len, n - len, " %04o %u:%u", x->mode, x->uid, x->gid);
	if (sc->check && (sc->flags & F_MTIME) && !x->err && x->present)
		len += (size_t)snprintf(out + len, n - len, x->mtime_given ? " mtime set" : " mtime kept");
	if (notes) {
		static const struct {
			unsigned bit;
			char c;
		} nm[] = {{N_OVERRIDE, 'o'}, {N_EXECREAD, 'x'}, {N_ROFIRST, 'r'},
			  {N_HARDLINK, 'l'}, {N_CREATEOWN, 'c'}, {N_EXISTING, 'e'}};
		for (size_t i = 0; i < sizeof(nm) / sizeof(nm[0]); i++)
			if (x->notes & nm[i].bit)
				len += (size_t)snprintf(out + len, n - len, " (%c)", nm[i].c);
	}
}

#define CELL 64
static char cells[NEXPORTS][NSCENS][NCALLERS][CELL];

static void run_all(void)
{
	for (int ei = 0; ei < NEXPORTS; ei++) {
		const struct export *ex = &exports_[ei];
		char lsetup[128], lop[128];
		snprintf(lsetup, sizeof(lsetup), "%s/%s", base, ex->name);
		snprintf(lop, sizeof(lop), "%s/%s", base, ex->ro ? "ro_view" : ex->name);
		for (size_t si = 0; si < NSCENS; si++) {
			const struct scen *sc = &scens[si];
			for (int ci = 0; ci < NCALLERS; ci++) {
				char cname[32], cdir[192], copdir[192], cpath[96];
				snprintf(cname, sizeof(cname), "c%02zu-%s", si, callers[ci].name);
				path_join(cdir, sizeof(cdir), lsetup, cname);
				path_join(copdir, sizeof(copdir), lop, cname);
				snprintf(cpath, sizeof(cpath), "%s/%s", ex->name, cname);
				/* the case directory, then its objects, on both sides */
				CHECK_OK(mkdir(cdir, 0755));
				struct node top = {cname, 'd', 0755, 0, 0};
				nfs_make(ex->name, &top);
				for (int k = 0; k < 5 && sc->nodes[k].path; k++) {
					local_make(cdir, &sc->nodes[k]);
					nfs_make(cpath, &sc->nodes[k]);
				}
				struct caller e = squashed(&callers[ci], ex->squash);
				struct res loc, want, got;
				local_run(sc, cdir, copdir, &e, &loc);
				expect(sc, ex, &loc, &want);
				nfs_run(sc, ei, cname, &callers[ci], &got);
				fmt(sc, &want, true, cells[ei][si][ci], CELL);
				char gs[CELL];
				fmt(sc, &got, false, gs, sizeof(gs));
				if (!same(sc, &want, &got)) {
					mismatches++;
					printf("MISMATCH %s %s: %s, %s as %s: expected %s, got %s\n",
					       ex->name, cname, op_names[sc->op], sc->what,
					       callers[ci].name, cells[ei][si][ci], gs);
				} else if (verbose) {
					printf("ok %s %s: %s, %s as %s: %s\n", ex->name, cname,
					       op_names[sc->op], sc->what, callers[ci].name, gs);
				}
			}
		}
	}
}

#define DOC_BEGIN "<!-- permission table: generated by test-nfs3-perm --markdown -->"
#define DOC_END   "<!-- end of the permission table -->"

/* The tables as markdown, between the markers. */
static char *markdown(void)
{
	size_t cap = 1 << 20, len = 0;
	char *s = malloc(cap);
	CHECK(s != NULL);
#define OUT(...)                                                                                   \
	do {                                                                                       \
		len += (size_t)snprintf(s + len, cap - len, __VA_ARGS__);                          \
		CHECK(len < cap);                                                                  \
	} while (0)
	OUT("%s\n", DOC_BEGIN);
	for (int ei = 0; ei < NEXPORTS; ei++) {
		OUT("\n### Export `%s`\n\n", exports_[ei].title);
		OUT("| operation | case | owner | member | other | root | rule |\n");
		OUT("|---|---|---|---|---|---|---|\n");
		for (size_t si = 0; si < NSCENS; si++) {
			OUT("| %s | %s |", op_names[scens[si].op], scens[si].what);
			bool rofs = false;
			for (int ci = 0; ci < NCALLERS; ci++) {
				OUT(" %s |", cells[ei][si][ci]);
				rofs |= !strncmp(cells[ei][si][ci], "EROFS", 5);
			}
			OUT(" %s%s |\n", rofs ? R_RO ", " : "", scens[si].rule);
		}
	}
	OUT("\n%s\n", DOC_END);
#undef OUT
	return s;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 1 << 20;
	char *s = malloc(cap);
	CHECK(s != NULL);
	size_t n = fread(s, 1, cap - 1, f);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* Compare (or rewrite) the generated part of the document. */
static int doc(const char *path, bool write)
{
	char *gen = markdown();
	char *text = read_file(path);
	if (!text) {
		fprintf(stderr, "%s: cannot read\n", path);
		return 1;
	}
	char *b = strstr(text, DOC_BEGIN), *e = b ? strstr(b, DOC_END) : NULL;
	if (!b || !e) {
		fprintf(stderr, "%s: no \"%s\" ... \"%s\" section\n", path, DOC_BEGIN, DOC_END);
		return 1;
	}
	e += strlen(DOC_END) + 1; /* and its newline */
	size_t glen = strlen(gen);
	int rc = 0;
	if (write) {
		FILE *f = fopen(path, "w");
		CHECK(f != NULL);
		fwrite(text, 1, (size_t)(b - text), f);
		fwrite(gen, 1, glen, f);
		fputs(e, f);
		fclose(f);
	} else if ((size_t)(e - b) != glen || memcmp(b, gen, glen)) {
		fprintf(stderr, "%s: the permission table differs from what this test computes;\n"
				"  regenerate it with: test-nfs3-perm JNFSD JNFS --write-doc %s\n",
			path, path);
		rc = 1;
	}
	free(gen);
	free(text);
	return rc;
}

int main(int argc, char **argv)
{
	const char *docpath = NULL;
	bool write_doc = false, print = false;
	if (argc < 3) {
		fprintf(stderr, "usage: test-nfs3-perm JNFSD JNFS [--doc FILE | --write-doc FILE] "
				"[--markdown] [-v]\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--doc") && i + 1 < argc) {
			docpath = argv[++i];
		} else if (!strcmp(argv[i], "--write-doc") && i + 1 < argc) {
			docpath = argv[++i];
			write_doc = true;
		} else if (!strcmp(argv[i], "--markdown")) {
			print = true;
		} else if (!strcmp(argv[i], "-v")) {
			verbose = true;
		} else {
			fprintf(stderr, "unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if (geteuid() != 0) {
		printf("skip: needs root (credentials of other users, a mount namespace)\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* the local fixtures, and a read-only view of the "ro" ones, in a
	 * mount namespace of our own (gone when we are) */
	CHECK_OK(unshare(CLONE_NEWNS));
	CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	snprintf(base, sizeof(base), "/tmp/test-nfs3-perm.XXXXXX");
	CHECK(mkdtemp(base) != NULL);
	CHECK_OK(chmod(base, 0755));
	char p[160], image[160], exports[160];
	for (int i = 0; i < NEXPORTS; i++) {
		path_join(p, sizeof(p), base, exports_[i].name);
		CHECK_OK(mkdir(p, 0755));
	}
	char ro[160], view[160];
	path_join(ro, sizeof(ro), base, "ro");
	path_join(view, sizeof(view), base, "ro_view");
	CHECK_OK(mkdir(view, 0755));
	CHECK_OK(mount(ro, view, NULL, MS_BIND, NULL));
	CHECK_OK(mount(NULL, view, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL));

	/* jnfsd: "/" for the set-up, and one export per kind */
	path_join(image, sizeof(image), base, "img");
	path_join(exports, sizeof(exports), base, "exports");
	tn_sh("%s mkfs %s --size 256M >/dev/null", argv[2], image);
	tn_sh("%s io %s -c 'mkdir none' -c 'mkdir rsq' -c 'mkdir asq' -c 'mkdir ro' >/dev/null",
	      argv[2], image);
	FILE *f = fopen(exports, "w");
	CHECK(f != NULL);
	fprintf(f, "/ 127.0.0.1(rw,async,insecure,no_root_squash)\n"
		   "/none 127.0.0.1(rw,async,insecure,no_root_squash)\n"
		   "/rsq 127.0.0.1(rw,async,insecure,root_squash)\n"
		   "/asq 127.0.0.1(rw,async,insecure,all_squash)\n"
		   "/ro 127.0.0.1(ro,async,insecure,no_root_squash)\n");
	fclose(f);
	const char *args[] = {"--image", image, "--exports", exports, "--listen", "127.0.0.1:0",
			      "--rpcbind", "off", "--threads", "2", NULL};
	tc_jnfsd_start(&jnfsd, argv[1], args);
	atexit(kill_server);
	conn_open(&setup_conn, "/");
	for (int i = 0; i < NEXPORTS; i++) {
		char name[16];
		snprintf(name, sizeof(name), "/%s", exports_[i].name);
		conn_open(&conns[i], name);
	}

	run_all();
	printf("%zu cases, %d differ from the rules\n", NSCENS * NCALLERS * NEXPORTS, mismatches);

	int rc = mismatches ? 1 : 0;
	if (print) {
		char *md = markdown();
		fputs(md, stdout);
		free(md);
	}
	if (docpath && doc(docpath, write_doc))
		rc = 1;

	for (int i = 0; i < NEXPORTS; i++)
		nfs_destroy_context(conns[i].nfs);
	nfs_destroy_context(setup_conn.nfs);
	int status = tc_jnfsd_stop(&jnfsd);
	jnfsd.pid = 0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tn_sh("%s check %s >/dev/null", argv[2], image);
	CHECK_OK(umount(view));
	tn_sh("rm -rf %s", base);
	if (!rc)
		TEST_PASS("permission table: every case as the Linux VFS rules give");
	return rc;
}
