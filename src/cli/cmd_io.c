/*
 * cmd_io.c - `jnfs io`: an xfs_io-like shell over the engine, one command per -c.
 *
 * The commands are the rows of io_cmds (name, arguments, function, help),
 * as xfs_io's cmdinfo table; `-c help` prints it. Among them: open, pwrite,
 * pread, fsync, truncate, falloc, seek, the namespace operations, stat,
 * readdir; map_blocks, commit_blocks and write_direct do what a pNFS block
 * layout client does; recput, recdel and recls reach the durable records;
 * setxattr, getxattr, listxattr and removexattr the current file's
 * extended attributes;
 * counters prints every counter; powerfail (with --crash) cuts the power
 * and exits without unmounting.
 *
 * Paths are relative to the root. At the end the filesystem is unmounted
 * cleanly (unless power failed).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/parse.h"
#include "base/time.h"
#include "cli/cli.h"
#include "dev/crashdev.h"
#include "fs/fs.h"

#define MAX_ARGS 8
#define MAX_MAPS 256

struct io_state {
	struct fs *fs;
	struct dev *dev;  /* what the engine uses (the crash device with --crash) */
	struct dev *file; /* the image */
	struct dev *ldev;
	bool crash;
	struct fs_inode *cur;
	struct fs_map maps[MAX_MAPS];
	unsigned nmaps;
	bool powered_off;
};

static int parse_u64(const char *s, uint64_t *v)
{
	return parse_size(s, v) ? -EINVAL : 0;
}

static int parse_byte(const char *s, uint8_t *b)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);
	if (*end || v > 255)
		return -EINVAL;
	*b = (uint8_t)v;
	return 0;
}

/* Resolve PATH to its parent directory and last name. */
static int walk_parent(struct io_state *s, const char *path, struct fs_inode **dirp,
		       const char **name, size_t *len)
{
	struct fs_inode *dir;
	int err = fs_root(s->fs, &dir);
	if (err)
		return err;
	const char *p = path;
	while (*p == '/')
		p++;
	for (;;) {
		const char *slash = strchr(p, '/');
		if (!slash)
			break;
		struct fs_inode *next;
		err = fs_lookup(dir, p, (size_t)(slash - p), &next);
		fs_iput(dir);
		if (err)
			return err;
		dir = next;
		p = slash + 1;
		while (*p == '/')
			p++;
	}
	*dirp = dir;
	*name = p;
	*len = strlen(p);
	return 0;
}

static int walk_path(struct io_state *s, const char *path, struct fs_inode **ipp)
{
	struct fs_inode *dir;
	const char *name;
	size_t len;
	int err = walk_parent(s, path, &dir, &name, &len);
	if (err)
		return err;
	if (!len) {
		*ipp = dir;
		return 0;
	}
	err = fs_lookup(dir, name, len, ipp);
	fs_iput(dir);
	return err;
}

static int need_file(struct io_state *s)
{
	if (!s->cur) {
		fprintf(stderr, "jnfs io: no file is open\n");
		return -EBADF;
	}
	return 0;
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "chardev";
	case S_IFBLK: return "blockdev";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	}
	return "unknown";
}

static int print_entry(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		       uint64_t cookie)
{
	printf("%.*s %llu %u\n", (int)len, name, (unsigned long long)ino, type);
	return 0;
}

static int print_rec(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	printf("%.*s %zu\n", (int)klen, (const char *)key, vlen);
	return 0;
}

/*
 * One row per command, as xfs_io's cmdinfo: the argument counts are
 * checked (and the current file asked for) before fn runs, so a function
 * sees argc within [min_args, max_args] + 1 (a[0] is the name). flag
 * tells the rows that share a function apart.
 */
struct io_cmd {
	const char *name;
	const char *args; /* synopsis, for help */
	int min_args, max_args;
	bool need_file; /* acts on the current file (open) */
	int flag;
	int (*fn)(struct io_state *s, const struct io_cmd *cmd, int argc, char **a);
	const char *help;
};

static int cmd_open(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	if (s->cur)
		fs_iput(s->cur);
	s->cur = NULL;
	int err = walk_path(s, a[1], &s->cur);
	if (err == -ENOENT && argc == 3 && !strcmp(a[2], "create")) {
		struct fs_inode *dir;
		const char *name;
		size_t len;
		err = walk_parent(s, a[1], &dir, &name, &len);
		if (!err) {
			struct fs_create_args ca = {.mode = S_IFREG | 0644};
			err = fs_create(dir, name, len, &ca, &s->cur, NULL);
			fs_iput(dir);
		}
	}
	return err;
}

static int cmd_pwrite(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x, y;
	uint8_t pat = 0xcd;
	if (parse_u64(a[1], &x) || parse_u64(a[2], &y) || (argc == 4 && parse_byte(a[3], &pat)))
		return -EINVAL;
	uint8_t *buf = xmalloc(y ? y : 1);
	memset(buf, pat, y);
	int err = fs_write(s->cur, x, buf, y, NULL);
	free(buf);
	if (!err)
		printf("wrote %llu bytes at %llu\n", (unsigned long long)y, (unsigned long long)x);
	return err;
}

static int cmd_pread(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x, y;
	uint8_t pat = 0xcd;
	if (parse_u64(a[1], &x) || parse_u64(a[2], &y) || (argc == 4 && parse_byte(a[3], &pat)))
		return -EINVAL;
	uint8_t *buf = xmalloc(y ? y : 1);
	size_t n;
	bool eof;
	int err = fs_read(s->cur, x, buf, y, &n, &eof);
	if (!err && argc == 4) {
		if (n != y) {
			fprintf(stderr, "jnfs io: pread: %zu of %llu bytes (end of file)\n", n,
				(unsigned long long)y);
			err = -EIO;
		}
		for (size_t i = 0; i < n && !err; i++) {
			if (buf[i] != pat) {
				fprintf(stderr, "jnfs io: pread: byte %llu is 0x%02x, expected 0x%02x\n",
					(unsigned long long)(x + i), buf[i], pat);
				err = -EILSEQ;
			}
		}
	}
	if (!err)
		printf("read %zu bytes at %llu\n", n, (unsigned long long)x);
	free(buf);
	return err;
}

/* flag: 1 for fdatasync */
static int cmd_fsync(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	return fs_fsync(s->cur, cmd->flag, NULL);
}

static int cmd_truncate(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x;
	if (parse_u64(a[1], &x))
		return -EINVAL;
	return fs_setattr(s->cur, &(struct fs_setattr){.mask = FS_SET_SIZE, .size = x}, NULL);
}

/* flag: the FS_FALLOC_ mode */
static int cmd_falloc(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x, y;
	if (parse_u64(a[1], &x) || parse_u64(a[2], &y))
		return -EINVAL;
	int mode = cmd->flag;
	if (argc == 4 && !strcmp(a[3], "keep"))
		mode |= FS_FALLOC_KEEP_SIZE;
	return fs_fallocate(s->cur, mode, x, y, NULL);
}

static int cmd_seek(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x, out;
	if (parse_u64(a[1], &x))
		return -EINVAL;
	int err = fs_seek(s->cur, x, !strcmp(a[2], "hole") ? FS_SEEK_HOLE : FS_SEEK_DATA, &out);
	if (!err)
		printf("%s at %llu\n", a[2], (unsigned long long)out);
	return err;
}

/* mkdir PATH, symlink TARGET PATH: the new name is the last argument */
static int cmd_mkdir(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	bool sym = argc == 3;
	struct fs_inode *dir, *ip;
	const char *name;
	size_t len;
	int err = walk_parent(s, a[argc - 1], &dir, &name, &len);
	if (err)
		return err;
	struct fs_create_args ca = {.mode = sym ? S_IFLNK | 0777 : S_IFDIR | 0755};
	if (sym) {
		ca.target = a[1];
		ca.target_len = strlen(a[1]);
	}
	err = fs_create(dir, name, len, &ca, &ip, NULL);
	if (!err)
		fs_iput(ip);
	fs_iput(dir);
	return err;
}

/* flag: 1 for rmdir */
static int cmd_unlink(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	struct fs_inode *dir;
	const char *name;
	size_t len;
	int err = walk_parent(s, a[1], &dir, &name, &len);
	if (err)
		return err;
	err = cmd->flag ? fs_rmdir(dir, name, len, NULL) : fs_unlink(dir, name, len, NULL);
	fs_iput(dir);
	return err;
}

/* flag: 1 for link */
static int cmd_rename(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	struct fs_inode *sd, *dd, *ip = NULL;
	const char *sn, *dn;
	size_t sl, dl;
	int err = walk_parent(s, a[1], &sd, &sn, &sl);
	if (err)
		return err;
	err = walk_parent(s, a[2], &dd, &dn, &dl);
	if (err) {
		fs_iput(sd);
		return err;
	}
	if (!cmd->flag) {
		err = fs_rename(sd, sn, sl, dd, dn, dl, NULL);
	} else {
		err = fs_lookup(sd, sn, sl, &ip);
		if (!err) {
			err = fs_link(ip, dd, dn, dl, NULL);
			fs_iput(ip);
		}
	}
	fs_iput(sd);
	fs_iput(dd);
	return err;
}

static int cmd_readlink(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	struct fs_inode *ip;
	int err = walk_path(s, a[1], &ip);
	if (err)
		return err;
	char buf[4096];
	size_t n;
	err = fs_readlink(ip, buf, sizeof(buf), &n);
	if (!err)
		printf("%.*s\n", (int)n, buf);
	fs_iput(ip);
	return err;
}

static int cmd_readdir(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	struct fs_inode *ip;
	int err = walk_path(s, argc == 2 ? a[1] : "", &ip);
	if (err)
		return err;
	err = fs_readdir(ip, 0, print_entry, NULL);
	fs_iput(ip);
	return err;
}

static int cmd_stat(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	struct fs_inode *ip = s->cur;
	int err;
	if (argc == 2) {
		err = walk_path(s, a[1], &ip);
		if (err)
			return err;
	} else if ((err = need_file(s))) {
		return err;
	}
	struct fs_attr at;
	fs_getattr(ip, &at);
	printf("ino %llu\ntype %s\nmode 0%o\nnlink %u\nuid %u\ngid %u\nsize %llu\n"
	       "used %llu\nchange %llu\nmtime %lld.%09ld\nctime %lld.%09ld\n",
	       (unsigned long long)at.ino, type_name(at.mode), at.mode & 07777, at.nlink, at.uid,
	       at.gid, (unsigned long long)at.size, (unsigned long long)at.used,
	       (unsigned long long)at.change, (long long)at.mtime.tv_sec, at.mtime.tv_nsec,
	       (long long)at.ctime.tv_sec, at.ctime.tv_nsec);
	if (ip != s->cur)
		fs_iput(ip);
	return 0;
}

static int cmd_sleep(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x;
	if (parse_u64(a[1], &x))
		return -EINVAL;
	sleep_ns(x * NSEC_PER_MSEC);
	return 0;
}

static int cmd_map_blocks(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	static const char *const st[] = {"hole", "written", "unwritten"};
	uint64_t x, y;
	if (parse_u64(a[1], &x) || parse_u64(a[2], &y))
		return -EINVAL;
	bool rw = argc == 4 && !strcmp(a[3], "rw");
	int err = fs_map_blocks(s->cur, x, y, rw, s->maps, MAX_MAPS, &s->nmaps);
	for (unsigned i = 0; !err && i < s->nmaps; i++)
		printf("map %llu+%llu %s at %llu\n", (unsigned long long)s->maps[i].off,
		       (unsigned long long)s->maps[i].len, st[s->maps[i].state],
		       (unsigned long long)s->maps[i].addr);
	return err;
}

static int cmd_write_direct(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x, y;
	uint8_t pat;
	if (parse_u64(a[1], &x) || parse_u64(a[2], &y) || parse_byte(a[3], &pat))
		return -EINVAL;
	if (x % 4096 || y % 4096)
		return -EINVAL;
	uint8_t *buf = xmalloc_aligned(4096, 4096);
	memset(buf, pat, 4096);
	int err = 0;
	for (uint64_t o = x; o < x + y && !err; o += 4096) {
		const struct fs_map *m = NULL;
		for (unsigned i = 0; i < s->nmaps; i++)
			if (o >= s->maps[i].off && o < s->maps[i].off + s->maps[i].len)
				m = &s->maps[i];
		if (!m || m->state == FS_MAP_HOLE) {
			fprintf(stderr, "jnfs io: write_direct: %llu is not mapped\n",
				(unsigned long long)o);
			err = -ENXIO;
			break;
		}
		err = dev_write(s->dev, buf, 4096, m->addr + (o - m->off), 0);
	}
	free(buf);
	if (!err)
		printf("wrote %llu bytes directly at %llu\n", (unsigned long long)y,
		       (unsigned long long)x);
	return err;
}

static int cmd_commit_blocks(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x, y, z = 0;
	if (parse_u64(a[1], &x) || parse_u64(a[2], &y) || (argc == 4 && parse_u64(a[3], &z)))
		return -EINVAL;
	struct fs_range r = {x, y};
	bool logged;
	int err = fs_commit_blocks(s->cur, &r, 1, z, NULL, &logged);
	if (!err)
		printf("committed %llu+%llu%s\n", (unsigned long long)x, (unsigned long long)y,
		       logged ? " (log written)" : "");
	return err;
}

static int cmd_recput(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x;
	uint8_t pat = 0xcd;
	if (parse_u64(a[2], &x) || x > FS_REC_VALUE_MAX || (argc == 4 && parse_byte(a[3], &pat)))
		return -EINVAL;
	uint8_t val[FS_REC_VALUE_MAX];
	memset(val, pat, x);
	return fs_rec_put(s->fs, a[1], strlen(a[1]), val, x, NULL);
}

static int cmd_recdel(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	return fs_rec_delete(s->fs, a[1], strlen(a[1]), NULL);
}

static int cmd_recls(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	return fs_rec_iterate(s->fs, print_rec, NULL);
}

static int cmd_setxattr(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t x;
	uint8_t pat = 0xcd;
	unsigned flags = 0;
	if (parse_u64(a[2], &x) || x > FS_XATTR_SIZE_MAX || (argc >= 4 && parse_byte(a[3], &pat)))
		return -EINVAL;
	if (argc == 5 && !strcmp(a[4], "create"))
		flags = FS_XATTR_CREATE;
	else if (argc == 5 && !strcmp(a[4], "replace"))
		flags = FS_XATTR_REPLACE;
	else if (argc == 5)
		return -EINVAL;
	uint8_t *val = xmalloc(FS_XATTR_SIZE_MAX);
	memset(val, pat, x);
	int err = fs_setxattr(s->cur, a[1], strlen(a[1]), val, x, flags, NULL);
	free(val);
	if (!err)
		printf("set %s %llu\n", a[1], (unsigned long long)x);
	return err;
}

static int cmd_getxattr(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint8_t pat = 0;
	if (argc == 3 && parse_byte(a[2], &pat))
		return -EINVAL;
	uint8_t *val = xmalloc(FS_XATTR_SIZE_MAX);
	size_t len;
	int err = fs_getxattr(s->cur, a[1], strlen(a[1]), val, FS_XATTR_SIZE_MAX, &len);
	for (size_t i = 0; !err && argc == 3 && i < len; i++) {
		if (val[i] != pat) {
			fprintf(stderr, "jnfs io: getxattr: byte %zu is 0x%02x, expected 0x%02x\n",
				i, val[i], pat);
			err = -EILSEQ;
		}
	}
	free(val);
	if (!err)
		printf("%s %zu\n", a[1], len);
	return err;
}

/* listxattr prints a page of names per call, as a protocol's reply would
 * hold them, and resumes after the last one's cookie. */
#define XATTR_PAGE 16
struct xattr_page {
	unsigned n;
	uint64_t cookie;
};

static int print_xattr(void *arg, const char *name, size_t nlen, size_t vlen, uint64_t cookie)
{
	struct xattr_page *p = arg;
	if (p->n == XATTR_PAGE)
		return 1;
	printf("%.*s %zu\n", (int)nlen, name, vlen);
	p->n++;
	p->cookie = cookie;
	return 0;
}

static int cmd_listxattr(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	struct xattr_page p = {0};
	do {
		p.n = 0;
		int err = fs_listxattr(s->cur, p.cookie, print_xattr, &p);
		if (err)
			return err;
	} while (p.n == XATTR_PAGE);
	return 0;
}

static int cmd_removexattr(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	return fs_removexattr(s->cur, a[1], strlen(a[1]), NULL);
}

static int cmd_counters(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	struct stat_sink sink = stat_sink_file(stdout);
	fs_stats(s->fs, &sink);
	if (s->crash)
		dev_stats(s->file, "image", &sink);
	fflush(stdout);
	return 0;
}

static int cmd_sync(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	return fs_sync(s->fs);
}

static int cmd_powerfail(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	uint64_t seed = 0;
	if (!s->crash) {
		fprintf(stderr, "jnfs io: powerfail needs --crash\n");
		return -EINVAL;
	}
	if (argc == 2 && parse_u64(a[1], &seed))
		return -EINVAL;
	struct crash_cut_stats st;
	int err = crashdev_powerfail(s->dev, seed, &st);
	if (!err)
		printf("power failed: %llu unflushed writes kept, %llu dropped, %llu torn\n",
		       (unsigned long long)st.kept, (unsigned long long)st.dropped,
		       (unsigned long long)st.torn);
	s->powered_off = true;
	return err;
}

static int cmd_help(struct io_state *s, const struct io_cmd *cmd, int argc, char **a);

static const struct io_cmd io_cmds[] = {
	{"open", "PATH [create]", 1, 2, false, 0, cmd_open,
	 "make PATH the current file (create: if missing)"},
	{"pwrite", "OFF LEN [PATTERN]", 2, 3, true, 0, cmd_pwrite,
	 "write LEN bytes of PATTERN (a byte, default 0xcd)"},
	{"pread", "OFF LEN [PATTERN]", 2, 3, true, 0, cmd_pread,
	 "read, and with PATTERN check every byte"},
	{"fsync", "", 0, 0, true, 0, cmd_fsync, "fsync the current file"},
	{"fdatasync", "", 0, 0, true, 1, cmd_fsync, "fdatasync the current file"},
	{"truncate", "SIZE", 1, 1, true, 0, cmd_truncate, "set the current file's size"},
	{"falloc", "OFF LEN [keep]", 2, 3, true, FS_FALLOC_ALLOC, cmd_falloc,
	 "allocate (keep: without changing the size)"},
	{"punch", "OFF LEN [keep]", 2, 3, true, FS_FALLOC_PUNCH, cmd_falloc, "punch a hole"},
	{"zero", "OFF LEN [keep]", 2, 3, true, FS_FALLOC_ZERO, cmd_falloc, "zero a range"},
	{"seek", "OFF data|hole", 2, 2, true, 0, cmd_seek,
	 "the next data or hole at or after OFF"},
	{"mkdir", "PATH", 1, 1, false, 0, cmd_mkdir, "make a directory"},
	{"symlink", "TARGET PATH", 2, 2, false, 0, cmd_mkdir, "make a symbolic link"},
	{"rmdir", "PATH", 1, 1, false, 1, cmd_unlink, "remove a directory"},
	{"unlink", "PATH", 1, 1, false, 0, cmd_unlink, "remove a name"},
	{"rename", "OLD NEW", 2, 2, false, 0, cmd_rename, "rename OLD to NEW"},
	{"link", "OLD NEW", 2, 2, false, 1, cmd_rename, "make NEW a hard link to OLD"},
	{"readlink", "PATH", 1, 1, false, 0, cmd_readlink, "print a symbolic link's target"},
	{"readdir", "[PATH]", 0, 1, false, 0, cmd_readdir, "one \"name ino type\" line per entry"},
	{"stat", "[PATH]", 0, 1, false, 0, cmd_stat,
	 "attributes of PATH or the current file"},
	{"sleep", "MS", 1, 1, false, 0, cmd_sleep, "wait MS milliseconds"},
	{"map_blocks", "OFF LEN [rw]", 2, 3, true, 0, cmd_map_blocks,
	 "print the block map (rw: allocate, durably)"},
	{"commit_blocks", "OFF LEN [NEWSIZE]", 2, 3, true, 0, cmd_commit_blocks,
	 "layout commit of [OFF, OFF+LEN)"},
	{"write_direct", "OFF LEN PATTERN", 3, 3, true, 0, cmd_write_direct,
	 "write to the device blocks the last map_blocks returned"},
	{"recput", "KEY LEN [PATTERN]", 2, 3, false, 0, cmd_recput,
	 "put a durable record of LEN bytes"},
	{"recdel", "KEY", 1, 1, false, 0, cmd_recdel, "delete a durable record"},
	{"recls", "", 0, 0, false, 0, cmd_recls, "list every durable record as \"KEY LEN\""},
	{"setxattr", "NAME LEN [PATTERN [create|replace]]", 2, 4, true, 0, cmd_setxattr,
	 "set an extended attribute of the current file to LEN bytes of PATTERN"},
	{"getxattr", "NAME [PATTERN]", 1, 2, true, 0, cmd_getxattr,
	 "print \"NAME LEN\", and with PATTERN check every byte"},
	{"listxattr", "", 0, 0, true, 0, cmd_listxattr,
	 "the current file's extended attributes as \"NAME LEN\""},
	{"removexattr", "NAME", 1, 1, true, 0, cmd_removexattr, "remove an extended attribute"},
	{"counters", "", 0, 0, false, 0, cmd_counters, "every counter as \"name value\""},
	{"sync", "", 0, 0, false, 0, cmd_sync, "force the log and flush"},
	{"powerfail", "[SEED]", 0, 1, false, 0, cmd_powerfail,
	 "(--crash) cut power now, keep a random part of the unflushed writes, exit"},
	{"help", "", 0, 0, false, 0, cmd_help, "this list"},
};

#define IO_NCMDS (sizeof(io_cmds) / sizeof(io_cmds[0]))

static int cmd_help(struct io_state *s, const struct io_cmd *cmd, int argc, char **a)
{
	for (size_t i = 0; i < IO_NCMDS; i++) {
		const struct io_cmd *c = &io_cmds[i];
		char synopsis[64];
		snprintf(synopsis, sizeof(synopsis), "%s%s%s", c->name, *c->args ? " " : "",
			 c->args);
		printf("  %-32s %s\n", synopsis, c->help);
	}
	return 0;
}

static int do_cmd(struct io_state *s, int argc, char **a)
{
	for (size_t i = 0; i < IO_NCMDS; i++) {
		const struct io_cmd *c = &io_cmds[i];
		if (strcmp(a[0], c->name))
			continue;
		if (argc - 1 < c->min_args || argc - 1 > c->max_args)
			break;
		int err = c->need_file ? need_file(s) : 0;
		return err ? err : c->fn(s, c, argc, a);
	}
	fprintf(stderr, "jnfs io: unknown command or wrong arguments: %s\n", a[0]);
	return -EINVAL;
}

int cli_io(int argc, char **argv)
{
	struct io_state s = {0};
	uint64_t lat_us = 0;
	const char *logdev = NULL;
	char **cmds = xcalloc((size_t)argc, sizeof(*cmds));
	int ncmds = 0;
	static const struct option opts[] = {{"crash", no_argument, NULL, 'C'},
					     {"flush-latency-us", required_argument, NULL, 'l'},
					     {"log-device", required_argument, NULL, 'L'},
					     {NULL, 0, NULL, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
		if (o == 'c')
			cmds[ncmds++] = optarg;
		else if (o == 'C')
			s.crash = true;
		else if (o == 'l')
			lat_us = strtoull(optarg, NULL, 0);
		else if (o == 'L')
			logdev = optarg;
		else
			return 2;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: jnfs io IMAGE [--crash] [--flush-latency-us N] "
				"[--log-device PATH] -c CMD ...\n");
		free(cmds);
		return 2;
	}
	if (cli_open_devices(argv[optind], logdev, false, 0, &s.file, &s.ldev)) {
		free(cmds);
		return 1;
	}
	s.dev = s.file;
	if (s.crash && crashdev_create(s.file, 0, &s.dev)) {
		free(cmds);
		return 1;
	}
	dev_set_latency(s.dev, lat_us * NSEC_PER_USEC, lat_us * NSEC_PER_USEC);
	int err = fs_mount(&(struct fs_mount_opts){.ddev = s.dev, .ldev = s.ldev}, &s.fs);
	if (err) {
		fprintf(stderr, "jnfs io: cannot mount %s: %s\n", argv[optind], cli_errname(err));
		free(cmds);
		return 1;
	}
	int status = 0;
	for (int i = 0; i < ncmds && !s.powered_off; i++) {
		char *copy = xstrdup(cmds[i]), *args[MAX_ARGS], *save = NULL;
		int n = 0;
		for (char *t = strtok_r(copy, " \t", &save); t && n < MAX_ARGS;
		     t = strtok_r(NULL, " \t", &save))
			args[n++] = t;
		if (n) {
			err = do_cmd(&s, n, args);
			if (err) {
				printf("%s: %s\n", args[0], cli_errname(err));
				fflush(stdout);
				status = 1;
			}
		}
		free(copy);
	}
	if (s.powered_off) {
		/* the machine is off: nothing more reaches the image */
		fflush(stdout);
		_exit(status);
	}
	if (s.cur)
		fs_iput(s.cur);
	err = fs_unmount(s.fs);
	if (err) {
		fprintf(stderr, "jnfs io: unmount: %s\n", cli_errname(err));
		status = 1;
	}
	if (s.crash)
		dev_close(s.dev);
	dev_close(s.ldev);
	dev_close(s.file);
	free(cmds);
	return status;
}
