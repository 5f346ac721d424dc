/*
 * test_srv_perm.c - the permission rules of src/srv/perm.h, called
 * directly on attribute snapshots: one or more checks per numbered rule
 * (their private header, src/srv/srv_priv.h, which only tests include
 * from outside src/srv/).
 * test-nfs3-perm compares the same rules, through jnfsd, with the local
 * kernel (as root); this program needs no privilege and no server.
 */
#include <errno.h>
#include <sys/stat.h>

#include "check.h"
#include "srv/srv_priv.h"

static const struct export_opts rw = {.rw = true}, ro = {.rw = false};

static struct export_cred cred(uint32_t uid, uint32_t gid, uint32_t g2)
{
	struct export_cred c = {.uid = uid, .gid = gid, .ngroups = g2 ? 2 : 1};
	c.groups[0] = gid;
	c.groups[1] = g2;
	return c;
}

static struct fs_attr obj(uint64_t ino, uint32_t mode, uint32_t uid, uint32_t gid)
{
	return (struct fs_attr){.ino = ino, .mode = mode, .uid = uid, .gid = gid};
}

int main(void)
{
	const struct export_cred owner = cred(1001, 1001, 0), member = cred(1002, 1002, 1001),
				 other = cred(1003, 1003, 0), root = cred(0, 0, 0);
	const struct fs_attr f640 = obj(10, S_IFREG | 0640, 1001, 1001);

	/* rule 1: classes, root */
	CHECK_OK(srv_permission(&owner, &f640, SRV_MAY_READ | SRV_MAY_WRITE));
	CHECK_OK(srv_permission(&member, &f640, SRV_MAY_READ));
	CHECK_EQ(srv_permission(&member, &f640, SRV_MAY_WRITE), -EACCES);
	CHECK_EQ(srv_permission(&other, &f640, SRV_MAY_READ), -EACCES);
	CHECK_OK(srv_permission(&root, &f640, SRV_MAY_READ | SRV_MAY_WRITE));
	CHECK_EQ(srv_permission(&root, &f640, SRV_MAY_EXEC), -EACCES); /* no x bit at all */
	struct fs_attr d700 = obj(11, S_IFDIR | 0700, 1001, 1001);
	CHECK_OK(srv_permission(&root, &d700, SRV_MAY_EXEC));
	/* the owner's class applies even when others have more */
	struct fs_attr f077 = obj(12, S_IFREG | 0077, 1001, 1001);
	CHECK_EQ(srv_permission(&owner, &f077, SRV_MAY_READ), -EACCES);
	TEST_PASS("rule 1: owner, group (supplementary too), other, root");

	/* rules 2 and 3 */
	CHECK_EQ(srv_may(&root, &ro, &f640, SRV_MAY_WRITE), -EROFS);
	CHECK_EQ(srv_may(&root, &ro, &f640, SRV_MAY_SATTR), -EROFS);
	CHECK_OK(srv_may(&root, &ro, &f640, SRV_MAY_READ));
	struct fs_attr f000 = obj(13, S_IFREG | 0000, 1001, 1001);
	CHECK_EQ(srv_may(&owner, &rw, &f000, SRV_MAY_WRITE), -EACCES);
	CHECK_OK(srv_may(&owner, &rw, &f000, SRV_MAY_WRITE | SRV_MAY_OWNER_OVERRIDE));
	CHECK_EQ(srv_may(&owner, &ro, &f000, SRV_MAY_WRITE | SRV_MAY_OWNER_OVERRIDE), -EROFS);
	struct fs_attr f111 = obj(14, S_IFREG | 0111, 1001, 1001);
	CHECK_OK(srv_may(&other, &rw, &f111, SRV_MAY_READ | SRV_MAY_OWNER_OVERRIDE));
	CHECK_EQ(srv_may(&other, &rw, &f111, SRV_MAY_READ), -EACCES);
	TEST_PASS("rules 2-3: read-only export first, owner override, read by execute");

	/* ACCESS: a directory is modified with write and search */
	struct fs_attr d730 = obj(16, S_IFDIR | 0730, 1001, 1001);
	CHECK_EQ(srv_access(&member, &rw, &d730, 0x3f),
		 SRV_ACCESS_LOOKUP | SRV_ACCESS_MODIFY | SRV_ACCESS_EXTEND | SRV_ACCESS_DELETE);
	struct fs_attr d720 = obj(17, S_IFDIR | 0720, 1001, 1001);
	CHECK_EQ(srv_access(&member, &rw, &d720, 0x3f), 0);
	CHECK_EQ(srv_access(&owner, &ro, &f640, 0x3f), SRV_ACCESS_READ);
	TEST_PASS("ACCESS bits as knfsd's maps");

	/* rule 4: sticky directories, for REMOVE and both names of RENAME */
	struct fs_attr sticky = obj(20, S_IFDIR | 01777, 0, 0);
	struct fs_attr mine = obj(21, S_IFREG | 0644, 1003, 1003);
	struct fs_attr theirs = obj(22, S_IFREG | 0644, 1001, 1001);
	CHECK_OK(srv_may_delete(&other, &rw, &sticky, &mine));
	CHECK_EQ(srv_may_delete(&other, &rw, &sticky, &theirs), -EPERM);
	CHECK_OK(srv_may_delete(&root, &rw, &sticky, &theirs));
	struct fs_attr sticky_m = obj(23, S_IFDIR | 01777, 1002, 1002);
	CHECK_OK(srv_may_delete(&member, &rw, &sticky_m, &theirs)); /* the directory's owner */
	CHECK_EQ(srv_may_rename(&other, &rw, &sticky, &mine, &sticky, &theirs), -EPERM);
	CHECK_OK(srv_may_rename(&other, &rw, &sticky, &mine, &sticky, NULL));
	CHECK_OK(srv_may_rename(&owner, &rw, &sticky, &theirs, &sticky, &theirs)); /* one inode */
	struct fs_attr dir777 = obj(24, S_IFDIR | 0777, 0, 0);
	struct fs_attr sub = obj(25, S_IFDIR | 0755, 1001, 1001);
	CHECK_EQ(srv_may_rename(&owner, &rw, &dir777, &theirs, &dir777, &sub), -EISDIR);
	CHECK_EQ(srv_may_rename(&owner, &rw, &dir777, &sub, &dir777, &theirs), -ENOTDIR);
	TEST_PASS("rule 4: sticky directories (REMOVE, RENAME source and target)");

	/* rule 5: a directory moved to another parent needs write on itself */
	struct fs_attr own_sticky = obj(30, S_IFDIR | 01777, 1003, 1003);
	struct fs_attr roots = obj(31, S_IFDIR | 0755, 0, 0);
	CHECK_EQ(srv_may_rename(&other, &rw, &own_sticky, &roots, &dir777, NULL), -EACCES);
	CHECK_OK(srv_may_rename(&other, &rw, &own_sticky, &roots, &own_sticky, NULL));
	CHECK_OK(srv_may_rename(&root, &rw, &own_sticky, &roots, &dir777, NULL));
	TEST_PASS("rule 5: a moved directory's '..'");

	/* rules 6-9: SETATTR */
	struct fs_setattr sa = {.mask = FS_SET_UID, .uid = 1001};
	struct fs_attr f644 = obj(40, S_IFREG | 0644, 1001, 1001);
	CHECK_EQ(srv_setattr_prepare(&other, &rw, &f644, &sa), -EPERM); /* to its current value */
	sa = (struct fs_setattr){.mask = FS_SET_GID, .gid = 1001};
	CHECK_EQ(srv_setattr_prepare(&member, &rw, &f644, &sa), -EPERM);
	sa = (struct fs_setattr){.mask = FS_SET_GID, .gid = 1002};
	CHECK_EQ(srv_setattr_prepare(&owner, &rw, &f644, &sa), -EPERM); /* not the owner's group */
	sa = (struct fs_setattr){.mask = FS_SET_MODE, .mode = 02755};
	struct fs_attr f_og = obj(41, S_IFREG | 0755, 1001, 1003);
	CHECK_OK(srv_setattr_prepare(&owner, &rw, &f_og, &sa));
	CHECK_EQ(sa.mode, 0755); /* S_ISGID stripped: not in the file's group */
	sa = (struct fs_setattr){.mask = FS_SET_MODE, .mode = 02755};
	CHECK_OK(srv_setattr_prepare(&root, &rw, &f_og, &sa));
	CHECK_EQ(sa.mode, 02755);
	struct fs_attr f6755 = obj(42, S_IFREG | 06755, 1001, 1001);
	sa = (struct fs_setattr){.mask = FS_SET_UID, .uid = 1001};
	CHECK_OK(srv_setattr_prepare(&owner, &rw, &f6755, &sa));
	CHECK_EQ(sa.mask, FS_SET_UID | FS_KILL_SUID | FS_KILL_SGID);
	struct fs_attr f6745 = obj(43, S_IFREG | 06745, 1001, 1001);
	sa = (struct fs_setattr){.mask = FS_SET_UID, .uid = 1003};
	CHECK_OK(srv_setattr_prepare(&root, &rw, &f6745, &sa));
	CHECK_EQ(sa.mask, FS_SET_UID | FS_KILL_SUID); /* root keeps S_ISGID without g+x */
	struct fs_attr p6755 = obj(44, S_IFIFO | 06755, 1001, 1001);
	sa = (struct fs_setattr){.mask = FS_SET_GID, .gid = 1001};
	CHECK_OK(srv_setattr_prepare(&owner, &rw, &p6755, &sa));
	CHECK_EQ(sa.mask, FS_SET_GID | FS_KILL_SUID | FS_KILL_SGID);
	struct fs_attr d6755 = obj(45, S_IFDIR | 06755, 1001, 1001);
	sa = (struct fs_setattr){.mask = FS_SET_UID, .uid = 1001};
	CHECK_OK(srv_setattr_prepare(&owner, &rw, &d6755, &sa));
	CHECK_EQ(sa.mask, FS_SET_UID); /* directories keep their bits */
	sa = (struct fs_setattr){.mask = FS_SET_UID | FS_SET_MODE, .uid = 1003, .mode = 06755};
	CHECK_OK(srv_setattr_prepare(&root, &rw, &f644, &sa));
	CHECK_EQ(sa.mode, 0755); /* with the mode in the same call: cleared from it */
	struct fs_attr f6777 = obj(46, S_IFREG | 06777, 1001, 1001);
	sa = (struct fs_setattr){.mask = FS_SET_SIZE, .size = 0};
	CHECK_OK(srv_setattr_prepare(&other, &rw, &f6777, &sa));
	CHECK_EQ(sa.mask, FS_SET_SIZE | FS_KILL_SUID | FS_KILL_SGID);
	sa = (struct fs_setattr){.mask = FS_SET_MTIME};
	struct fs_attr f666 = obj(47, S_IFREG | 0666, 1001, 1001);
	CHECK_EQ(srv_setattr_prepare(&other, &rw, &f666, &sa), -EPERM);
	sa = (struct fs_setattr){.mask = FS_SET_MTIME_NOW | FS_SET_ATIME_NOW};
	CHECK_OK(srv_setattr_prepare(&other, &rw, &f666, &sa));
	CHECK_EQ(srv_setattr_prepare(&other, &rw, &f644, &sa), -EACCES);
	sa = (struct fs_setattr){.mask = FS_SET_MODE, .mode = 0600};
	struct fs_attr lnk = obj(48, S_IFLNK | 0777, 1001, 1001);
	CHECK_OK(srv_setattr_prepare(&owner, &rw, &lnk, &sa));
	CHECK_EQ(sa.mask, 0); /* no mode on a symbolic link */
	sa = (struct fs_setattr){.mask = FS_SET_SIZE, .size = 1};
	CHECK_EQ(srv_setattr_prepare(&owner, &rw, &d6755, &sa), -EISDIR);
	TEST_PASS("rules 6-9: who may change what, S_ISGID on chmod, set-id bits on chown");

	/* rule 9: WRITE */
	CHECK_EQ(srv_write_kill(&other, &f6777), FS_KILL_SUID | FS_KILL_SGID);
	CHECK_EQ(srv_write_kill(&root, &f6777), 0);
	struct fs_attr f2766 = obj(49, S_IFREG | 02766, 1001, 1001);
	CHECK_EQ(srv_write_kill(&member, &f2766), 0); /* no g+x, in the group */
	CHECK_EQ(srv_write_kill(&other, &f2766), FS_KILL_SGID);
	CHECK_EQ(srv_write_kill(&other, &f644), 0);
	TEST_PASS("rule 9: set-id bits on WRITE");

	/* rule 10: new objects */
	struct fs_attr sgid_dir = obj(50, S_IFDIR | 02777, 0, 1001);
	uint32_t mode = S_IFDIR | 0755, uid, gid;
	CHECK_OK(srv_new_object(&other, &sgid_dir, NULL, &mode, &uid, &gid));
	CHECK_EQ(mode, S_IFDIR | 02755);
	CHECK_EQ(uid, 1003);
	CHECK_EQ(gid, 1001);
	mode = S_IFDIR | 06755;
	CHECK_OK(srv_new_object(&other, &dir777, NULL, &mode, &uid, &gid));
	CHECK_EQ(mode, S_IFDIR | 0755);
	CHECK_EQ(gid, 1003);
	mode = S_IFREG | 02755;
	CHECK_OK(srv_new_object(&other, &sgid_dir, NULL, &mode, &uid, &gid));
	CHECK_EQ(mode, S_IFREG | 0755);
	mode = S_IFREG | 02755;
	CHECK_OK(srv_new_object(&member, &sgid_dir, NULL, &mode, &uid, &gid));
	CHECK_EQ(mode, S_IFREG | 02755);
	mode = S_IFIFO | 02745; /* no g+x: kept */
	CHECK_OK(srv_new_object(&other, &sgid_dir, NULL, &mode, &uid, &gid));
	CHECK_EQ(mode, S_IFIFO | 02745);
	mode = S_IFCHR | 0644;
	CHECK_EQ(srv_new_object(&other, &dir777, NULL, &mode, &uid, &gid), -EPERM);
	struct fs_setattr req = {.mask = FS_SET_UID | FS_SET_GID, .uid = 1003, .gid = 1003};
	mode = S_IFREG | 04755;
	CHECK_OK(srv_new_object(&root, &dir777, &req, &mode, &uid, &gid));
	CHECK_EQ(mode, S_IFREG | 0755);
	CHECK_EQ(uid, 1003);
	mode = S_IFREG | 04755;
	CHECK_OK(srv_new_object(&owner, &dir777, &req, &mode, &uid, &gid));
	CHECK_EQ(mode, S_IFREG | 04755);
	CHECK_EQ(uid, 1001); /* ignored for anyone but root */
	TEST_PASS("rule 10: owner, group and mode of new objects");

	/* rule 11 */
	req = (struct fs_setattr){.mask = FS_SET_MODE | FS_SET_MTIME | FS_SET_SIZE | FS_SET_UID};
	srv_existing_sattr(&req);
	CHECK_EQ(req.mask, FS_SET_SIZE);
	req = (struct fs_setattr){.mask = FS_SET_MODE | FS_SET_MTIME | FS_SET_SIZE, .size = 0};
	srv_create_sattr(&req);
	CHECK_EQ(req.mask, FS_SET_MTIME);
	TEST_PASS("rule 11: what a create applies to an existing file");
	return 0;
}
