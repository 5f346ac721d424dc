/*
 * boundary.c - the export boundary: lookups that never leave an export
 * (see exports.h for what a handle guarantees and what it does not).
 *
 * Only ".." can climb. Every other name names a child of a directory the
 * caller already holds a handle to, so it reaches nothing that handle did
 * not reach already. ".." is therefore the one lookup that checks where it
 * lands:
 *   1. at the export's root it is the root itself (as at "/" of a local
 *      filesystem, and as knfsd answers);
 *   2. elsewhere it is the directory's parent, given only when that parent
 *      lies under the export's root; a directory that was moved out of its
 *      export after its handle was handed out has a parent outside, and
 *      gets EACCES, never that parent's handle.
 * Deciding 2 walks parent pointers from the parent up to the export root,
 * or to the filesystem's root, which proves it is outside (fs_is_subdir):
 * O(depth) inode lookups, nearly always cached, while cross-directory
 * renames wait, so the answer is exact at one moment. An export of the
 * filesystem's root skips the walk. A client asks for ".." rarely (a
 * Linux client keeps parents in its dentry cache), so that price is paid
 * where it is needed and nowhere else.
 *
 * The root is compared by number and generation: a removed export root
 * whose number was reused by another directory is not taken for the root.
 *
 * Directory listings with attributes (READDIRPLUS, NFSv4 READDIR) hand out
 * a handle per entry. The entry's inode number alone must never make one:
 * the entry may be unlinked once the directory is read and its number
 * given to another file anywhere, which would then be handed out, with
 * its own generation, under the old name. export_lookup_entry resolves the
 * entry by name instead (fs_lookup takes the inode while the directory
 * still names it) and keeps it only if it is still the inode readdir saw.
 */
#include <errno.h>

#include "export/exports.h"
#include "fs/fs.h"

static bool is_dotdot(const char *name, size_t len)
{
	return len == 2 && name[0] == '.' && name[1] == '.';
}

bool export_is_root(const struct export *ex, struct fs_inode *ip)
{
	struct fs_attr a;
	if (fs_ino(ip) != ex->root_ino || fs_getattr(ip, &a))
		return false;
	return a.gen == ex->root_gen;
}

/* ".." of dir (not the export root) if it lies under the export. */
static int lookup_parent(const struct export *ex, struct fs_inode *dir, struct fs_inode **ipp)
{
	struct fs_inode *parent, *root;
	bool under = false;
	int err = fs_lookup(dir, "..", 2, &parent);
	if (err)
		return err;
	err = fs_iget(fs_of(dir), ex->root_ino, ex->root_gen, &root);
	if (err)
		goto out; /* the export's root is gone: so is the export */
	err = fs_is_subdir(parent, root, &under);
	fs_iput(root);
	if (!err && !under)
		err = -EACCES;
out:
	if (err) {
		fs_iput(parent);
		return err;
	}
	*ipp = parent;
	return 0;
}

int export_lookup(const struct export *ex, struct fs_inode *dir, const char *name, size_t len,
		  struct fs_inode **ipp)
{
	*ipp = NULL;
	if (!is_dotdot(name, len))
		return fs_lookup(dir, name, len, ipp);
	if (export_is_root(ex, dir))
		return fs_lookup(dir, ".", 1, ipp);
	return lookup_parent(ex, dir, ipp);
}

int export_lookup_entry(const struct export *ex, struct fs_inode *dir, const char *name,
			size_t len, uint64_t ino, struct fs_inode **ipp)
{
	int err = export_lookup(ex, dir, name, len, ipp);
	if (err || fs_ino(*ipp) == ino)
		return err;
	/* removed, or renamed over, since readdir saw it: whatever the name
	 * names now is not what the entry says */
	fs_iput(*ipp);
	*ipp = NULL;
	return -ENOENT;
}
