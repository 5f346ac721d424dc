/*
 * test_lockdep.c - the lock checker stops a program that breaks a lock
 * rule, and names the locks (docs/locking.md; a checking build).
 *
 *   test-lockdep              run every case in a child process
 *   test-lockdep CASE         one case, on an engine of its own
 *
 * Each case is this program run again with the case's name (a fresh
 * process: a fork of one whose engine threads may hold locks could block
 * for ever), on a filesystem of its own in memory. It breaks one rule with
 * the engine's real locks and functions and must die of SIGABRT with a
 * panic naming the lock classes (and, for a contract, the function):
 *   rank       an inode's I/O lock taken while its metadata lock is held
 *   contract   bmap_lookup() called without the I/O lock it requires
 *   exclusive  file_truncate() called with the I/O lock held only shared
 *   order      a directory's I/O lock taken after its child's
 *   none       fs_force() called holding an inode's I/O lock
 * The case "right" does the same steps in the right way and must exit 0,
 * so that the others die of the rule and not of something else.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/msg.h"
#include "check.h"
#include "fs/fs.h"
#include "fs/fs_priv.h"

struct env {
	struct dev *d;
	struct fs *fs;
	struct fs_inode *root, *dir, *sub, *file;
};

static void env_up(struct env *e)
{
	CHECK_OK(dev_mem_create(64ull << 20, NULL, &e->d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = e->d}));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = e->d}, &e->fs));
	CHECK_OK(fs_root(e->fs, &e->root));
	struct fs_create_args da = {.mode = S_IFDIR | 0755}, fa = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(e->root, "d", 1, &da, &e->dir, NULL));
	CHECK_OK(fs_create(e->dir, "s", 1, &da, &e->sub, NULL));
	CHECK_OK(fs_create(e->root, "f", 1, &fa, &e->file, NULL));
	CHECK_OK(fs_write(e->file, 0, "data", 4, NULL));
}

static void env_down(struct env *e)
{
	fs_iput(e->file);
	fs_iput(e->sub);
	fs_iput(e->dir);
	fs_iput(e->root);
	CHECK_OK(fs_unmount(e->fs));
	dev_close(e->d);
}

static int run_case(const char *name)
{
	struct env e;
	env_up(&e);
	struct bmap_ext ext;
	bool hole;
	bool right = !strcmp(name, "right");
	if (right || !strcmp(name, "rank")) {
		/* the I/O lock ranks before the metadata lock */
		if (right)
			rwlock_rdlock(&e.file->i_iolock);
		mutex_lock(&e.file->i_ilock);
		if (!right)
			rwlock_rdlock(&e.file->i_iolock);
		mutex_unlock(&e.file->i_ilock);
		rwlock_unlock(&e.file->i_iolock);
	}
	if (right || !strcmp(name, "contract")) {
		/* bmap_lookup: the I/O lock held, shared or exclusively */
		if (right)
			rwlock_rdlock(&e.file->i_iolock);
		CHECK_OK(bmap_lookup(e.file, 0, &ext, &hole));
		if (right)
			rwlock_unlock(&e.file->i_iolock);
	}
	if (right || !strcmp(name, "exclusive")) {
		/* file_truncate: the I/O lock held exclusively */
		if (right)
			rwlock_wrlock(&e.file->i_iolock);
		else
			rwlock_rdlock(&e.file->i_iolock);
		CHECK_OK(file_truncate(e.file, 2, NULL, NULL));
		rwlock_unlock(&e.file->i_iolock);
	}
	if (right || !strcmp(name, "order")) {
		/* a directory before its children */
		struct fs_inode *first = right ? e.dir : e.sub, *second = right ? e.sub : e.dir;
		rwlock_wrlock(&first->i_iolock);
		rwlock_wrlock(&second->i_iolock);
		rwlock_unlock(&second->i_iolock);
		rwlock_unlock(&first->i_iolock);
	}
	if (right || !strcmp(name, "none")) {
		/* no inode lock across a log force */
		if (!right)
			rwlock_rdlock(&e.file->i_iolock);
		CHECK_OK(fs_force(e.fs, 1, NULL));
		if (!right)
			rwlock_unlock(&e.file->i_iolock);
	}
	env_down(&e);
	return 0;
}

/* Run this program on one case; its stderr into out. */
static int child(const char *self, const char *name, char *out, size_t cap)
{
	int fds[2];
	CHECK_OK(pipe(fds));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execl(self, self, name, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	size_t len = 0;
	ssize_t n;
	while (len + 1 < cap && (n = read(fds[0], out + len, cap - len - 1)) > 0)
		len += (size_t)n;
	out[len] = 0;
	close(fds[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	return st;
}

static void expect_stop(const char *self, const char *name, const char *const *want)
{
	static char out[16384];
	int st = child(self, name, out, sizeof(out));
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) {
		fprintf(stderr, "case %s: not stopped by the checker (status %#x):\n%s", name, st,
			out);
		exit(1);
	}
	for (; *want; want++) {
		if (!strstr(out, *want)) {
			fprintf(stderr, "case %s: the message lacks \"%s\":\n%s", name, *want, out);
			exit(1);
		}
	}
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = 0;
	printf("ok %s: %s\n", name, out);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	msg_set_level(MSG_ERR);
	if (argc == 2)
		return run_case(argv[1]);
#ifndef JNFS_LOCKDEP
	printf("skipped: not a checking build (JNFS_LOCKDEP)\n");
	return 77;
#endif
	const char *self = "/proc/self/exe";
	static char out[16384];
	int st = child(self, "right", out, sizeof(out));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "case right: status %#x:\n%s", st, out);
		return 1;
	}
	printf("ok right: the same steps with the locks their rules ask for\n");
	expect_stop(self, "rank",
		    (const char *const[]){"taking fs.iolock (rank 100) while holding fs.ilock (rank 110)",
					  NULL});
	expect_stop(self, "contract",
		    (const char *const[]){"bmap_lookup: fs.iolock is not held by this thread", NULL});
	expect_stop(self, "exclusive",
		    (const char *const[]){"file_truncate: fs.iolock is held shared, not exclusively",
					  NULL});
	expect_stop(self, "order",
		    (const char *const[]){"taking fs.iolock while holding fs.iolock",
					  "is the parent of directory", NULL});
	expect_stop(self, "none",
		    (const char *const[]){"fs_force: called holding fs.iolock", NULL});
	TEST_PASS("the checker stops each broken lock rule, naming the locks");
	return 0;
}
