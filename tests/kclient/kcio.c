/*
 * kcio.c - the file-system calls the kernel-client test's NFSv4 workload
 * needs and busybox does not make: byte-range and flock locks between
 * processes, fallocate, SEEK_DATA/SEEK_HOLE, copy_file_range. kclient.sh
 * builds it on the host (static, so the guest needs no libraries) into the
 * guest's initramfs; workload.sh runs it in the reference tree and on the
 * NFS mount alike where both must agree.
 *
 * usage:
 *   kcio lockwait fcntl|flock FILE [FILE2]
 *                                    a holder locks FILE; a waiter's blocking
 *                                    request through FILE2 (default FILE)
 *                                    must wait in the kernel until the
 *                                    holder unlocks, then be granted
 *   kcio ranges FILE [FILE2]         POSIX byte-range semantics between two
 *                                    lock owners, the second through FILE2
 *                                    (conflict, the conflicting lock's range,
 *                                    adjacency, split, downgrade, upgrade,
 *                                    shared reads, 64-bit offsets)
 *   kcio hold FILE OFF LEN           write-lock [OFF, OFF+LEN), print "held";
 *                                    then per line on stdin: "write" writes
 *                                    and fsyncs inside the range, "release"
 *                                    (or end of input) unlocks and exits
 *   kcio trylock FILE OFF LEN        non-blocking write lock: "locked" (and
 *                                    unlocks) or "denied"
 *   kcio falloc FILE OFF LEN         fallocate mode 0
 *   kcio punch FILE OFF LEN          fallocate PUNCH_HOLE|KEEP_SIZE
 *   kcio seek FILE data|hole OFF     the offset lseek returns, or ENXIO
 *   kcio copy SRC DST OFFIN OFFOUT LEN   copy_file_range until LEN or EOF
 *   kcio direct FILE OFF LEN SEED    write LEN bytes of the pattern SEED at
 *                                    OFF with O_DIRECT from a page-aligned
 *                                    buffer (what a pNFS block layout
 *                                    client can send to the disk itself)
 *   kcio mixed FILE ROUNDS           one file written through a pNFS block
 *                                    layout and through the server at once:
 *                                    per round 1 MiB with O_DIRECT at a
 *                                    page-aligned offset (the layout's), then
 *                                    512 bytes with O_DIRECT inside it at an
 *                                    offset that is not (the layout driver
 *                                    sends such a write to the server); then
 *                                    fsync, and every byte read back must be
 *                                    the last one written - never a zero
 *   kcio fsx FILE --seed N --ops N [--maxlen BYTES] [--check-every N]
 *            [--save MODEL]
 *                                    the classic fsx's random test of one
 *                                    file (default at most 256 KiB): from a
 *                                    PRNG seeded with N, read, write,
 *                                    mapread, mapwrite (mmap, msync),
 *                                    truncate (grow, shrink), fallocate
 *                                    (allocate, KEEP_SIZE, PUNCH_HOLE, and
 *                                    ZERO_RANGE; EOPNOTSUPP turns a mode
 *                                    off), copy_file_range within the file,
 *                                    at unaligned offsets and lengths, with
 *                                    a close and open now and then. Every
 *                                    read is checked against a model of the
 *                                    file, the whole file and its size
 *                                    every N ops (default 1000) and at the
 *                                    end; a difference (or a SIGBUS in a
 *                                    mapping) prints its first offset and
 *                                    the last 32 operations.
 *                                    Prints "ok" and the count of each op;
 *                                    --save writes the model's final bytes
 *                                    to MODEL, for a check of the file from
 *                                    outside (after drop_caches)
 * FILE2 names the same file through a second mount of the same server
 * made with nosharecache: the Linux client checks a lock against the locks
 * its own processes hold on the same inode before it asks the server, so
 * only through another inode does the server decide the conflicts.
 *
 * On a file system that refuses O_DIRECT (the reference tree's tmpfs),
 * direct and mixed write through the page cache: the same bytes.
 *
 * The patterns never contain a zero byte, so data lost to a block the server
 * still thinks unwritten (read back as zeros) is told apart from a wrong
 * write.
 *
 * Results go to stdout, one line; "EOPNOTSUPP" from falloc and punch exits
 * 3 (the caller decides whether the protocol version allows it); any other
 * failure prints "kcio: ..." on stderr and exits 1.
 *
 * How "the waiter waits" is proven without timing: the waiter is known to
 * be blocked once /proc/PID/syscall shows it inside fcntl or flock (the
 * number of the call it is sleeping in) while it has not been granted; the
 * holder then sets a shared "released" flag before it unlocks, and the
 * waiter, once granted, must see that flag set. A grant before the release
 * would see it clear. Every process has an alarm() watchdog, so a lock that
 * is never granted fails the run instead of hanging it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A blocked NFSv4 lock is retried by the client with a back-off that grows
 * to 30 s; a waiter is given several of those. */
#define WATCHDOG_SECONDS 300

static const char *prog_cmd = "";

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "kcio %s: ", prog_cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t parse_u64(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (!*s || *end || errno)
		die("not a number: %s", s);
	return v;
}

static int open_rw(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	return fd;
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* fcntl lock of [start, start+len) (len 0: to infinity): 0 or -errno */
static int range_lock(int fd, int cmd, short type, uint64_t start, uint64_t len)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = (off_t)start,
			   .l_len = (off_t)len};
	return fcntl(fd, cmd, &fl) ? -errno : 0;
}

/* --- lockwait */

struct shared {
	volatile int held;     /* the holder has its lock */
	volatile int released; /* set by the holder just before it unlocks */
	volatile int granted;  /* the waiter has its lock */
	volatile int release_seen; /* "released" as the waiter saw it when granted */
	volatile int go;       /* the parent tells the holder to release */
};

static int lock_whole(int fd, bool use_flock, bool wait)
{
	if (use_flock)
		return flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) ? -errno : 0;
	return range_lock(fd, wait ? F_SETLKW : F_SETLK, F_WRLCK, 100, 100);
}

static int unlock_whole(int fd, bool use_flock)
{
	if (use_flock)
		return flock(fd, LOCK_UN) ? -errno : 0;
	return range_lock(fd, F_SETLK, F_UNLCK, 100, 100);
}

/* Is pid sleeping inside system call nr? (/proc/PID/syscall: "NR args...",
 * or "running") */
static bool in_syscall(pid_t pid, long nr)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool in = fgets(buf, sizeof(buf), f) && strtol(buf, NULL, 10) == nr &&
		  buf[0] >= '0' && buf[0] <= '9';
	fclose(f);
	return in;
}

static int cmd_lockwait(int argc, char **argv)
{
	if (argc != 2 && argc != 3)
		die("usage: lockwait fcntl|flock FILE [FILE2]");
	bool use_flock = !strcmp(argv[0], "flock");
	if (!use_flock && strcmp(argv[0], "fcntl"))
		die("fcntl or flock, not %s", argv[0]);
	const char *path = argv[1], *path2 = argc == 3 ? argv[2] : argv[1];
	long nr = use_flock ? SYS_flock : SYS_fcntl;
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	close(open_rw(path));

	pid_t holder = fork();
	if (holder < 0)
		die("fork: %s", strerror(errno));
	if (holder == 0) {
		alarm(WATCHDOG_SECONDS);
		int fd = open_rw(path), err;
		if ((err = lock_whole(fd, use_flock, false)))
			die("holder: lock: %s", strerror(-err));
		sh->held = 1;
		while (!sh->go)
			pause_ms(10);
		sh->released = 1;
		__sync_synchronize();
		if ((err = unlock_whole(fd, use_flock)))
			die("holder: unlock: %s", strerror(-err));
		_exit(0);
	}
	alarm(WATCHDOG_SECONDS);
	while (!sh->held)
		pause_ms(10);

	pid_t waiter = fork();
	if (waiter < 0)
		die("fork: %s", strerror(errno));
	if (waiter == 0) {
		alarm(WATCHDOG_SECONDS);
		int fd = open_rw(path2), err;
		/* a non-blocking attempt must be refused first */
		err = lock_whole(fd, use_flock, false);
		if (err != -EAGAIN && err != -EACCES && err != -EWOULDBLOCK)
			die("waiter: a non-blocking lock while held: %s",
			    err ? strerror(-err) : "granted");
		if ((err = lock_whole(fd, use_flock, true)))
			die("waiter: blocking lock: %s", strerror(-err));
		__sync_synchronize();
		sh->release_seen = sh->released;
		sh->granted = 1;
		if ((err = unlock_whole(fd, use_flock)))
			die("waiter: unlock: %s", strerror(-err));
		_exit(0);
	}
	/* the waiter must be asleep in its blocking call, not granted */
	int polls = 0;
	while (!in_syscall(waiter, nr)) {
		if (sh->granted)
			die("the waiter was granted while the holder held the lock");
		pause_ms(10);
		polls++;
	}
	/* a little longer, so that the client has had its request refused by
	 * the server at least once (it sleeps in the same call meanwhile) */
	pause_ms(500);
	if (sh->granted || !in_syscall(waiter, nr))
		die("the waiter did not stay blocked while the lock was held");
	sh->go = 1;

	int st1, st2;
	if (waitpid(holder, &st1, 0) < 0 || waitpid(waiter, &st2, 0) < 0)
		die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(st1) || WEXITSTATUS(st1))
		die("the holder failed (status %#x)", st1);
	if (!WIFEXITED(st2) || WEXITSTATUS(st2))
		die("the waiter failed (status %#x)", st2);
	if (!sh->granted || !sh->release_seen)
		die("the waiter was granted before the holder released");
	printf("ok %s: waiter blocked, then granted after the release\n", argv[0]);
	return 0;
}

/* --- ranges: the parent is one lock owner, a child the other; the child
 * runs requests the parent sends it over a pipe */

struct req {
	int cmd;
	short type;
	uint64_t start, len;
};

struct res {
	int err;		/* 0 or -errno */
	short type;		/* F_GETLK: the conflicting lock's type, or F_UNLCK */
	int64_t start, len;	/* F_GETLK: its range */
};

static int child_in, child_out;

static struct res other_req(int cmd, short type, uint64_t start, uint64_t len)
{
	struct req r = {cmd, type, start, len};
	struct res res = {0};
	if (write(child_in, &r, sizeof(r)) != sizeof(r) ||
	    read(child_out, &res, sizeof(res)) != sizeof(res))
		die("the other lock owner is gone");
	return res;
}

static int other(int cmd, short type, uint64_t start, uint64_t len)
{
	return other_req(cmd, type, start, len).err;
}

static void other_loop(const char *path, int in, int out)
{
	int fd = open_rw(path);
	struct req r;
	while (read(in, &r, sizeof(r)) == sizeof(r)) {
		struct flock fl = {.l_type = r.type, .l_whence = SEEK_SET,
				   .l_start = (off_t)r.start, .l_len = (off_t)r.len};
		struct res res = {0};
		if (fcntl(fd, r.cmd, &fl))
			res.err = -errno;
		res.type = fl.l_type;
		res.start = fl.l_start;
		res.len = fl.l_len;
		if (write(out, &res, sizeof(res)) != sizeof(res))
			_exit(1);
	}
	_exit(0);
}

static bool denied(int err)
{
	return err == -EAGAIN || err == -EACCES;
}

#define EXPECT(cond, what)                                                                         \
	do {                                                                                       \
		if (!(cond))                                                                       \
			die("%s", what);                                                           \
	} while (0)

static int cmd_ranges(int argc, char **argv)
{
	if (argc != 1 && argc != 2)
		die("usage: ranges FILE [FILE2]");
	const char *path = argv[0], *path2 = argc == 2 ? argv[1] : argv[0];
	int to_child[2], from_child[2];
	if (pipe(to_child) || pipe(from_child))
		die("pipe: %s", strerror(errno));
	int fd = open_rw(path);
	alarm(WATCHDOG_SECONDS);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(to_child[1]);
		close(from_child[0]);
		close(fd);
		other_loop(path2, to_child[0], from_child[1]);
	}
	close(to_child[0]);
	close(from_child[1]);
	child_in = to_child[1];
	child_out = from_child[0];
	const uint64_t big = 1ull << 40;

	/* a write lock excludes overlapping requests, not adjacent ones */
	EXPECT(!range_lock(fd, F_SETLK, F_WRLCK, 0, 1000), "lock [0,1000)");
	EXPECT(denied(other(F_SETLK, F_WRLCK, 500, 10)), "[500,510) granted under [0,1000)");
	EXPECT(denied(other(F_SETLK, F_RDLCK, 999, 1)), "read [999,1000) granted under a write lock");
	/* the test names the conflicting lock: its type and whole range */
	struct res t = other_req(F_GETLK, F_WRLCK, 500, 10);
	EXPECT(!t.err, "F_GETLK failed");
	if (t.type != F_WRLCK || t.start != 0 || t.len != 1000)
		die("F_GETLK of [500,510) under [0,1000) gave type %d [%jd,+%jd)", t.type,
		    (intmax_t)t.start, (intmax_t)t.len);
	t = other_req(F_GETLK, F_WRLCK, 1000, 10);
	EXPECT(!t.err && t.type == F_UNLCK, "F_GETLK of a free range found a conflict");
	EXPECT(!other(F_SETLK, F_WRLCK, 1000, 10), "adjacent [1000,1010) refused");
	EXPECT(!other(F_SETLK, F_UNLCK, 1000, 10), "unlock [1000,1010)");
	/* unlocking the middle splits the lock in two */
	EXPECT(!range_lock(fd, F_SETLK, F_UNLCK, 400, 200), "unlock [400,600)");
	EXPECT(!other(F_SETLK, F_WRLCK, 450, 100), "[450,550) refused after the split");
	EXPECT(!other(F_SETLK, F_UNLCK, 450, 100), "unlock [450,550)");
	EXPECT(denied(other(F_SETLK, F_WRLCK, 300, 10)), "[300,310) granted: the left part was lost");
	EXPECT(denied(other(F_SETLK, F_WRLCK, 700, 10)), "[700,710) granted: the right part was lost");
	/* a downgrade to a read lock lets the other owner read-lock, not write */
	EXPECT(!range_lock(fd, F_SETLK, F_RDLCK, 0, 400), "downgrade [0,400) to read");
	EXPECT(!other(F_SETLK, F_RDLCK, 100, 10), "read [100,110) refused under a read lock");
	EXPECT(denied(other(F_SETLK, F_WRLCK, 100, 10)), "write [100,110) granted under a read lock");
	/* an upgrade must now wait for the other owner's read lock */
	EXPECT(denied(range_lock(fd, F_SETLK, F_WRLCK, 95, 20)), "upgrade over another read lock granted");
	EXPECT(!other(F_SETLK, F_UNLCK, 100, 10), "unlock read [100,110)");
	EXPECT(!range_lock(fd, F_SETLK, F_WRLCK, 95, 20), "upgrade [95,115) refused");
	/* 64-bit offsets, and a lock to the end of all offsets */
	EXPECT(!range_lock(fd, F_SETLK, F_WRLCK, big, 10), "lock at 2^40");
	EXPECT(denied(other(F_SETLK, F_WRLCK, big + 5, 1)), "[2^40+5] granted under [2^40,+10)");
	EXPECT(!other(F_SETLK, F_WRLCK, big + 10, 0), "[2^40+10, end) refused");
	EXPECT(denied(range_lock(fd, F_SETLK, F_WRLCK, big * 2, 1)), "2^41 granted under [2^40+10, end)");
	EXPECT(!other(F_SETLK, F_UNLCK, 0, 0), "the other owner's unlock of everything");
	/* everything released: the other owner takes the whole file */
	EXPECT(!range_lock(fd, F_SETLK, F_UNLCK, 0, 0), "unlock everything");
	EXPECT(!other(F_SETLK, F_WRLCK, 0, 0), "the whole file refused after everything was released");
	EXPECT(denied(range_lock(fd, F_SETLK, F_RDLCK, 12345, 1)), "read granted under a whole-file lock");
	EXPECT(!other(F_SETLK, F_UNLCK, 0, 0), "unlock the whole file");

	close(child_in);
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the other lock owner failed");
	printf("ok ranges\n");
	return 0;
}

/* --- hold, trylock */

static int cmd_hold(int argc, char **argv)
{
	if (argc != 3)
		die("usage: hold FILE OFF LEN");
	uint64_t off = parse_u64(argv[1]), len = parse_u64(argv[2]);
	int fd = open_rw(argv[0]), err;
	if ((err = range_lock(fd, F_SETLK, F_WRLCK, off, len)))
		die("lock: %s", strerror(-err));
	printf("held\n");
	fflush(stdout);
	char line[64], buf[64];
	unsigned n = 0;
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "release", 7))
			break;
		if (strncmp(line, "write", 5))
			die("unknown command %s", line);
		/* a lock the client lost makes I/O under it fail with EIO */
		int l = snprintf(buf, sizeof(buf), "written under the lock %u\n", n++);
		if (pwrite(fd, buf, (size_t)l, (off_t)off) != l || fsync(fd))
			die("write under the lock: %s", strerror(errno));
		printf("written\n");
		fflush(stdout);
	}
	if ((err = range_lock(fd, F_SETLK, F_UNLCK, off, len)))
		die("unlock: %s", strerror(-err));
	if (close(fd))
		die("close: %s", strerror(errno));
	printf("released\n");
	return 0;
}

static int cmd_trylock(int argc, char **argv)
{
	if (argc != 3)
		die("usage: trylock FILE OFF LEN");
	uint64_t off = parse_u64(argv[1]), len = parse_u64(argv[2]);
	alarm(WATCHDOG_SECONDS);
	int fd = open_rw(argv[0]);
	int err = range_lock(fd, F_SETLK, F_WRLCK, off, len);
	if (denied(err)) {
		printf("denied\n");
		return 0;
	}
	if (err)
		die("lock: %s", strerror(-err));
	if ((err = range_lock(fd, F_SETLK, F_UNLCK, off, len)))
		die("unlock: %s", strerror(-err));
	printf("locked\n");
	return 0;
}

/* --- fallocate, seek, copy */

static int cmd_fallocate(int argc, char **argv, int mode)
{
	if (argc != 3)
		die("usage: falloc|punch FILE OFF LEN");
	int fd = open(argv[0], O_RDWR);
	if (fd < 0)
		die("open %s: %s", argv[0], strerror(errno));
	if (fallocate(fd, mode, (off_t)parse_u64(argv[1]), (off_t)parse_u64(argv[2]))) {
		if (errno == EOPNOTSUPP) {
			printf("EOPNOTSUPP\n");
			return 3;
		}
		die("fallocate: %s", strerror(errno));
	}
	if (close(fd))
		die("close: %s", strerror(errno));
	printf("ok\n");
	return 0;
}

static int cmd_seek(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "data") && strcmp(argv[1], "hole")))
		die("usage: seek FILE data|hole OFF");
	int fd = open(argv[0], O_RDONLY);
	if (fd < 0)
		die("open %s: %s", argv[0], strerror(errno));
	off_t r = lseek(fd, (off_t)parse_u64(argv[2]), argv[1][0] == 'd' ? SEEK_DATA : SEEK_HOLE);
	if (r < 0 && errno == ENXIO)
		printf("ENXIO\n");
	else if (r < 0)
		die("lseek: %s", strerror(errno));
	else
		printf("%jd\n", (intmax_t)r);
	close(fd);
	return 0;
}

static int cmd_copy(int argc, char **argv)
{
	if (argc != 5)
		die("usage: copy SRC DST OFFIN OFFOUT LEN");
	int in = open(argv[0], O_RDONLY), out = open(argv[1], O_WRONLY | O_CREAT, 0644);
	if (in < 0 || out < 0)
		die("open: %s", strerror(errno));
	loff_t oi = (loff_t)parse_u64(argv[2]), oo = (loff_t)parse_u64(argv[3]);
	uint64_t left = parse_u64(argv[4]), total = 0;
	while (left) {
		ssize_t n = copy_file_range(in, &oi, out, &oo, left, 0);
		if (n < 0)
			die("copy_file_range: %s", strerror(errno));
		if (n == 0)
			break;
		left -= (uint64_t)n;
		total += (uint64_t)n;
	}
	if (close(out) || close(in))
		die("close: %s", strerror(errno));
	printf("%" PRIu64 "\n", total);
	return 0;
}

/* --- direct, mixed: O_DIRECT writes of patterns */

/* The byte of pattern seed at file offset off: never 0. */
static uint8_t pattern(uint64_t seed, uint64_t off)
{
	return (uint8_t)((((off * 2654435761u) >> 13) + off / 4096 + seed * 97) % 255 + 1);
}

static void fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(seed, off + i);
}

static void *page_buffer(size_t len)
{
	void *p;
	if (posix_memalign(&p, 4096, len))
		die("out of memory");
	return p;
}

/* O_DIRECT where the file system takes it */
static int open_direct(const char *path, int flags)
{
	int fd = open(path, flags | O_DIRECT, 0644);
	if (fd < 0 && errno == EINVAL)
		fd = open(path, flags, 0644);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	return fd;
}

static void pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = pwrite(fd, buf, len, (off_t)off);
	if (n < 0)
		die("pwrite of %zu bytes at %" PRIu64 ": %s", len, off, strerror(errno));
	if ((size_t)n != len)
		die("pwrite of %zu bytes at %" PRIu64 " wrote %zd", len, off, n);
}

static int cmd_direct(int argc, char **argv)
{
	if (argc != 4)
		die("usage: direct FILE OFF LEN SEED");
	uint64_t off = parse_u64(argv[1]), len = parse_u64(argv[2]), seed = parse_u64(argv[3]);
	alarm(WATCHDOG_SECONDS);
	int fd = open_direct(argv[0], O_WRONLY | O_CREAT);
	uint8_t *buf = page_buffer(len);
	fill(buf, len, seed, off);
	pwrite_all(fd, buf, len, off);
	if (close(fd))
		die("close: %s", strerror(errno));
	free(buf);
	printf("ok\n");
	return 0;
}

#define MIXED_BLOCK (1u << 20)
#define MIXED_SMALL 512u

static int cmd_mixed(int argc, char **argv)
{
	if (argc != 2)
		die("usage: mixed FILE ROUNDS");
	uint64_t rounds = parse_u64(argv[1]);
	if (rounds == 0 || rounds > 256)
		die("1 to 256 rounds");
	alarm(WATCHDOG_SECONDS);
	size_t size = rounds * MIXED_BLOCK;
	uint8_t *want = malloc(size), *buf = page_buffer(MIXED_BLOCK);
	if (!want)
		die("out of memory");
	int fd = open_direct(argv[0], O_RDWR | O_CREAT | O_TRUNC);
	for (uint64_t r = 0; r < rounds; r++) {
		uint64_t off = r * MIXED_BLOCK;
		fill(buf, MIXED_BLOCK, r, off);
		pwrite_all(fd, buf, MIXED_BLOCK, off);
		memcpy(want + off, buf, MIXED_BLOCK);
		/* an odd multiple of 512 into the block just written */
		uint64_t small = off + MIXED_SMALL * (2 * r % (MIXED_BLOCK / MIXED_SMALL) + 1);
		fill(buf, MIXED_SMALL, 1000 + r, small);
		pwrite_all(fd, buf, MIXED_SMALL, small);
		memcpy(want + small, buf, MIXED_SMALL);
	}
	if (fsync(fd))
		die("fsync: %s", strerror(errno));
	/* every byte as last written: a block read back as zeros was lost */
	for (uint64_t off = 0; off < size; off += MIXED_BLOCK) {
		ssize_t n = pread(fd, buf, MIXED_BLOCK, (off_t)off);
		if (n != (ssize_t)MIXED_BLOCK)
			die("pread at %" PRIu64 ": %s", off, n < 0 ? strerror(errno) : "short");
		for (size_t i = 0; i < MIXED_BLOCK; i++) {
			if (buf[i] == want[off + i])
				continue;
			size_t zeros = 0, bad = 0;
			for (size_t j = i; j < MIXED_BLOCK; j++) {
				bad += buf[j] != want[off + j];
				zeros += buf[j] == 0;
			}
			die("after fsync, %zu bytes of the block at %" PRIu64 " differ from byte %zu "
			    "on (%zu of them zeros)",
			    bad, off, i, zeros);
		}
	}
	if (close(fd))
		die("close: %s", strerror(errno));
	free(buf);
	free(want);
	printf("ok %" PRIu64 " rounds\n", rounds);
	return 0;
}

/* --- fsx: random operations on one file against a model of it */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

enum fsx_op {
	FSX_READ,
	FSX_WRITE,
	FSX_MAPREAD,
	FSX_MAPWRITE,
	FSX_TRUNCATE,
	FSX_FALLOC,
	FSX_FALLOC_KEEP,
	FSX_PUNCH,
	FSX_ZERO,
	FSX_COPY,
	FSX_NOPS
};

static const char *const fsx_names[FSX_NOPS] = {
	"read", "write", "mapread", "mapwrite", "truncate",
	"falloc", "falloc_keep", "punch", "zero", "copy",
};

/* Classic fsx: at most 64 KiB per operation. */
#define FSX_MAXOP (64u * 1024)
/* The ops remembered for a failure's report. */
#define FSX_HISTORY 32

struct fsx {
	const char *path;
	int fd;
	uint64_t rng;
	uint8_t *model, *buf;
	uint64_t size, maxlen, maxop;
	uint64_t op;      /* the op under way, from 1 */
	bool off[FSX_NOPS]; /* disabled: the file system answered EOPNOTSUPP */
	uint64_t count[FSX_NOPS], reopens, checks;
	struct {
		uint64_t n, off, len, dst;
		enum fsx_op op;
	} hist[FSX_HISTORY];
};

/* splitmix64: the same sequence from the same seed everywhere */
static uint64_t fsx_rand(struct fsx *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [0, n), n > 0 */
static uint64_t fsx_below(struct fsx *f, uint64_t n)
{
	return fsx_rand(f) % n;
}

static void fsx_note(struct fsx *f, enum fsx_op op, uint64_t off, uint64_t len, uint64_t dst)
{
	unsigned i = (unsigned)(f->op % FSX_HISTORY);
	f->hist[i].n = f->op;
	f->hist[i].op = op;
	f->hist[i].off = off;
	f->hist[i].len = len;
	f->hist[i].dst = dst;
	f->count[op]++;
}

__attribute__((noreturn, format(printf, 2, 3))) static void fsx_fail(struct fsx *f, const char *fmt,
								      ...)
{
	fprintf(stderr, "kcio fsx: op %" PRIu64 ": ", f->op);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fprintf(stderr, "kcio fsx: the last operations (op name offset length [destination]):\n");
	for (uint64_t n = f->op > FSX_HISTORY ? f->op - FSX_HISTORY + 1 : 1; n <= f->op; n++) {
		unsigned i = (unsigned)(n % FSX_HISTORY);
		if (f->hist[i].n != n)
			continue;
		fprintf(stderr, "kcio fsx:   %" PRIu64 " %s %" PRIu64 " %" PRIu64, n,
			fsx_names[f->hist[i].op], f->hist[i].off, f->hist[i].len);
		if (f->hist[i].op == FSX_COPY)
			fprintf(stderr, " %" PRIu64, f->hist[i].dst);
		fputc('\n', stderr);
	}
	exit(1);
}

/* The run under way, for fsx_sigbus. */
static struct fsx *fsx_cur;

/* A mapping's page the kernel could not read in (or make writable) kills
 * the process with SIGBUS: say which operation, with the history, as
 * fsx_fail does (the fault is synchronous: the main flow is in a memcpy or
 * a compare, never in stdio). */
static void fsx_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	fsx_fail(fsx_cur, "signal %d (SIGBUS) at address %p: a page of the mapping could not be "
			  "read or made writable (file size %" PRIu64 " in the model)",
		 sig, si->si_addr, fsx_cur->size);
}

/* What the file holds at off on a second look, for a failure's report:
 * read with O_DIRECT (not through the page cache), then again through the
 * page cache after dropping this file's pages (POSIX_FADV_DONTNEED). */
static void fsx_reread(struct fsx *f, uint64_t off)
{
	uint64_t pg = off & ~(uint64_t)4095;
	uint8_t *b = page_buffer(4096);
	int fd = open(f->path, O_RDONLY | O_DIRECT);
	ssize_t n = fd < 0 ? -1 : pread(fd, b, 4096, (off_t)pg);
	if (n > (ssize_t)(off - pg))
		fprintf(stderr, "kcio fsx: read again with O_DIRECT: 0x%02x at %" PRIu64 "\n",
			b[off - pg], off);
	else
		fprintf(stderr, "kcio fsx: read again with O_DIRECT: %s\n",
			n < 0 ? strerror(errno) : "short");
	if (fd >= 0)
		close(fd);
	if (fsync(f->fd) || posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED))
		fprintf(stderr, "kcio fsx: fsync or fadvise: %s\n", strerror(errno));
	n = pread(f->fd, b, 1, (off_t)off);
	if (n == 1)
		fprintf(stderr, "kcio fsx: read again after POSIX_FADV_DONTNEED: 0x%02x\n", b[0]);
	free(b);
}

/* got[0, len) against the model at off */
static void fsx_compare(struct fsx *f, const uint8_t *got, uint64_t off, uint64_t len,
			const char *what)
{
	if (!memcmp(got, f->model + off, len))
		return;
	uint64_t i = 0;
	while (got[i] == f->model[off + i])
		i++;
	uint64_t bad = 0;
	for (uint64_t j = i; j < len; j++)
		bad += got[j] != f->model[off + j];
	fprintf(stderr,
		"kcio fsx: op %" PRIu64 ": %s [%" PRIu64 ", %" PRIu64 ") of a %" PRIu64 "-byte "
		"file: first difference at offset %" PRIu64 ": 0x%02x, expected 0x%02x (%" PRIu64
		" bytes differ)\n",
		f->op, what, off, off + len, f->size, off + i, got[i], f->model[off + i], bad);
	/* (a mapping's bytes may change with the second look) */
	fsx_reread(f, off + i);
	fsx_fail(f, "%s differs from the model", what);
}

static void fsx_open(struct fsx *f, int flags)
{
	f->fd = open(f->path, O_RDWR | O_CREAT | flags, 0644);
	if (f->fd < 0)
		fsx_fail(f, "open %s: %s", f->path, strerror(errno));
}

/* The model's size changes to size: bytes past the end are zero. */
static void fsx_resize(struct fsx *f, uint64_t size)
{
	if (size < f->size)
		memset(f->model + size, 0, f->size - size);
	f->size = size;
}

/* The whole file: its size, then every byte. */
static void fsx_check_all(struct fsx *f)
{
	struct stat st;
	if (fstat(f->fd, &st))
		fsx_fail(f, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size != f->size)
		fsx_fail(f, "the file has %jd bytes, expected %" PRIu64, (intmax_t)st.st_size, f->size);
	uint64_t done = 0;
	while (done < f->size) {
		ssize_t n = pread(f->fd, f->buf, f->size - done, (off_t)done);
		if (n < 0)
			fsx_fail(f, "pread of the whole file at %" PRIu64 ": %s", done, strerror(errno));
		if (n == 0)
			fsx_fail(f, "the whole file read back ends at %" PRIu64 ", expected %" PRIu64,
				 done, f->size);
		fsx_compare(f, f->buf, done, (uint64_t)n, "whole-file check");
		done += (uint64_t)n;
	}
	f->checks++;
}

/* bytes for a write: never zero, so a hole where data belongs shows */
static void fsx_fill(struct fsx *f, uint8_t *p, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		p[i] = (uint8_t)(fsx_rand(f) % 255 + 1);
}

static void fsx_read(struct fsx *f, bool mapped)
{
	if (f->size == 0)
		return;
	uint64_t off = fsx_below(f, f->size);
	uint64_t len = fsx_below(f, min_u64(f->maxop, f->size - off)) + 1;
	fsx_note(f, mapped ? FSX_MAPREAD : FSX_READ, off, len, 0);
	if (!mapped) {
		ssize_t n = pread(f->fd, f->buf, len, (off_t)off);
		if (n != (ssize_t)len)
			fsx_fail(f, "pread of %" PRIu64 " at %" PRIu64 ": %s", len, off,
				 n < 0 ? strerror(errno) : "short");
		fsx_compare(f, f->buf, off, len, "read");
		return;
	}
	uint64_t pg = off & ~(uint64_t)4095;
	uint8_t *p = mmap(NULL, off + len - pg, PROT_READ, MAP_SHARED, f->fd, (off_t)pg);
	if (p == MAP_FAILED)
		fsx_fail(f, "mmap for reading: %s", strerror(errno));
	fsx_compare(f, p + (off - pg), off, len, "mapread");
	if (munmap(p, off + len - pg))
		fsx_fail(f, "munmap: %s", strerror(errno));
}

static void fsx_write(struct fsx *f, bool mapped)
{
	uint64_t off = fsx_below(f, f->maxlen);
	uint64_t len = fsx_below(f, min_u64(f->maxop, f->maxlen - off)) + 1;
	fsx_note(f, mapped ? FSX_MAPWRITE : FSX_WRITE, off, len, 0);
	fsx_fill(f, f->buf, len);
	if (!mapped) {
		ssize_t n = pwrite(f->fd, f->buf, len, (off_t)off);
		if (n != (ssize_t)len)
			fsx_fail(f, "pwrite of %" PRIu64 " at %" PRIu64 ": %s", len, off,
				 n < 0 ? strerror(errno) : "short");
	} else {
		/* a mapping reaches only to the end of the file: extend it first */
		if (off + len > f->size && ftruncate(f->fd, (off_t)(off + len)))
			fsx_fail(f, "ftruncate to %" PRIu64 " for mapwrite: %s", off + len,
				 strerror(errno));
		uint64_t pg = off & ~(uint64_t)4095;
		uint8_t *p = mmap(NULL, off + len - pg, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd,
				  (off_t)pg);
		if (p == MAP_FAILED)
			fsx_fail(f, "mmap for writing: %s", strerror(errno));
		memcpy(p + (off - pg), f->buf, len);
		if (msync(p, off + len - pg, MS_SYNC))
			fsx_fail(f, "msync: %s", strerror(errno));
		if (munmap(p, off + len - pg))
			fsx_fail(f, "munmap: %s", strerror(errno));
	}
	memcpy(f->model + off, f->buf, len);
	if (off + len > f->size)
		f->size = off + len;
}

static void fsx_truncate(struct fsx *f)
{
	uint64_t size = fsx_below(f, f->maxlen + 1);
	fsx_note(f, FSX_TRUNCATE, size, 0, 0);
	if (ftruncate(f->fd, (off_t)size))
		fsx_fail(f, "ftruncate to %" PRIu64 ": %s", size, strerror(errno));
	fsx_resize(f, size);
}

/*
 * fallocate. KEEP_SIZE allocations stay inside the file: the Linux NFS
 * client sends KEEP_SIZE as a plain ALLOCATE, which (RFC 7862 section 15.1)
 * extends a file it runs past. PUNCH_HOLE and ZERO_RANGE ranges may run
 * past the end.
 */
static void fsx_falloc(struct fsx *f, enum fsx_op op)
{
	static const int modes[FSX_NOPS] = {
		[FSX_FALLOC] = 0,
		[FSX_FALLOC_KEEP] = FALLOC_FL_KEEP_SIZE,
		[FSX_PUNCH] = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		[FSX_ZERO] = FALLOC_FL_ZERO_RANGE,
	};
	uint64_t room = op == FSX_FALLOC_KEEP ? f->size : f->maxlen;
	if (room == 0)
		return;
	uint64_t off = fsx_below(f, room);
	uint64_t len = fsx_below(f, min_u64(f->maxop, room - off)) + 1;
	fsx_note(f, op, off, len, 0);
	if (fallocate(f->fd, modes[op], (off_t)off, (off_t)len)) {
		if (errno == EOPNOTSUPP) {
			f->off[op] = true;
			f->count[op]--;
			return;
		}
		fsx_fail(f, "fallocate %s [%" PRIu64 ", +%" PRIu64 "): %s", fsx_names[op], off, len,
			 strerror(errno));
	}
	uint64_t end = off + len;
	if (op == FSX_PUNCH && off < f->size)
		memset(f->model + off, 0, min_u64(end, f->size) - off);
	if (op == FSX_ZERO)
		memset(f->model + off, 0, len);
	if ((op == FSX_FALLOC || op == FSX_ZERO) && end > f->size)
		f->size = end;
}

/* copy_file_range within the file, between ranges that do not overlap */
static void fsx_copy(struct fsx *f)
{
	if (f->size == 0)
		return;
	uint64_t off = fsx_below(f, f->size);
	uint64_t len = fsx_below(f, min_u64(f->maxop, f->size - off)) + 1;
	if (len > f->maxlen / 2)
		len = f->maxlen / 2;
	/* the destination: anywhere in [0, maxlen - len] clear of the source */
	uint64_t dst = fsx_below(f, f->maxlen - len + 1);
	if (dst + len > off && dst < off + len)
		return;
	fsx_note(f, FSX_COPY, off, len, dst);
	loff_t in = (loff_t)off, out = (loff_t)dst;
	uint64_t left = len;
	while (left) {
		ssize_t n = copy_file_range(f->fd, &in, f->fd, &out, left, 0);
		if (n < 0 && (errno == EOPNOTSUPP || errno == EXDEV || errno == ENOSYS) &&
		    left == len) {
			f->off[FSX_COPY] = true;
			f->count[FSX_COPY]--;
			return;
		}
		if (n <= 0)
			fsx_fail(f, "copy_file_range [%" PRIu64 ", +%" PRIu64 ") to %" PRIu64 ": %s",
				 off, len, dst, n < 0 ? strerror(errno) : "no progress");
		left -= (uint64_t)n;
	}
	memmove(f->model + dst, f->model + off, len);
	if (dst + len > f->size)
		f->size = dst + len;
}

static int cmd_fsx(int argc, char **argv)
{
	struct fsx f = {.maxlen = 256 * 1024};
	uint64_t ops = 0, seed = 0, check_every = 1000;
	const char *save = NULL;
	bool have_seed = false, have_ops = false;
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 >= argc)
			die("%s needs a value", argv[i]);
		if (!strcmp(argv[i], "--seed"))
			seed = parse_u64(argv[i + 1]), have_seed = true;
		else if (!strcmp(argv[i], "--ops"))
			ops = parse_u64(argv[i + 1]), have_ops = true;
		else if (!strcmp(argv[i], "--maxlen"))
			f.maxlen = parse_u64(argv[i + 1]);
		else if (!strcmp(argv[i], "--check-every"))
			check_every = parse_u64(argv[i + 1]);
		else if (!strcmp(argv[i], "--save"))
			save = argv[i + 1];
		else
			die("unknown option %s", argv[i]);
	}
	if (argc < 1 || !have_seed || !have_ops || f.maxlen < 2 || f.maxlen > (1u << 30) ||
	    check_every == 0)
		die("usage: fsx FILE --seed N --ops N [--maxlen BYTES] [--check-every N] "
		    "[--save MODEL]");
	f.path = argv[0];
	f.rng = seed;
	f.maxop = min_u64(FSX_MAXOP, f.maxlen);
	f.model = calloc(1, f.maxlen);
	f.buf = malloc(f.maxlen);
	if (!f.model || !f.buf)
		die("out of memory");
	fsx_cur = &f;
	struct sigaction sa = {.sa_sigaction = fsx_sigbus, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL))
		die("sigaction: %s", strerror(errno));
	fsx_open(&f, O_TRUNC);
	for (f.op = 1; f.op <= ops; f.op++) {
		enum fsx_op op = (enum fsx_op)fsx_below(&f, FSX_NOPS);
		if (f.off[op])
			op = fsx_below(&f, 2) ? FSX_WRITE : FSX_READ;
		switch (op) {
		case FSX_READ:
		case FSX_MAPREAD:
			fsx_read(&f, op == FSX_MAPREAD);
			break;
		case FSX_WRITE:
		case FSX_MAPWRITE:
			fsx_write(&f, op == FSX_MAPWRITE);
			break;
		case FSX_TRUNCATE:
			fsx_truncate(&f);
			break;
		case FSX_COPY:
			fsx_copy(&f);
			break;
		default:
			fsx_falloc(&f, op);
			break;
		}
		if (f.op % check_every == 0)
			fsx_check_all(&f);
		/* classic fsx's -c: close and open again now and then */
		if (fsx_below(&f, 64) == 0) {
			if (close(f.fd))
				fsx_fail(&f, "close: %s", strerror(errno));
			fsx_open(&f, 0);
			f.reopens++;
		}
	}
	f.op = ops;
	fsx_check_all(&f);
	if (close(f.fd))
		fsx_fail(&f, "close: %s", strerror(errno));
	if (save) {
		int fd = open(save, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("open %s: %s", save, strerror(errno));
		pwrite_all(fd, f.model, f.size, 0);
		if (close(fd))
			die("close %s: %s", save, strerror(errno));
	}
	printf("ok seed=%" PRIu64 " ops=%" PRIu64 " size=%" PRIu64, seed, ops, f.size);
	for (int i = 0; i < FSX_NOPS; i++)
		printf(" %s=%" PRIu64 "%s", fsx_names[i], f.count[i], f.off[i] ? "(EOPNOTSUPP)" : "");
	printf(" reopens=%" PRIu64 " checks=%" PRIu64 "\n", f.reopens, f.checks);
	free(f.model);
	free(f.buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die("usage: kcio lockwait|ranges|hold|trylock|falloc|punch|seek|copy|direct|mixed|fsx ARGS");
	prog_cmd = argv[1];
	/* a watchdog's SIGALRM must end the process, whatever it inherited */
	signal(SIGALRM, SIG_DFL);
	int n = argc - 2;
	char **a = argv + 2;
	if (!strcmp(argv[1], "lockwait"))
		return cmd_lockwait(n, a);
	if (!strcmp(argv[1], "ranges"))
		return cmd_ranges(n, a);
	if (!strcmp(argv[1], "hold"))
		return cmd_hold(n, a);
	if (!strcmp(argv[1], "trylock"))
		return cmd_trylock(n, a);
	if (!strcmp(argv[1], "falloc"))
		return cmd_fallocate(n, a, 0);
	if (!strcmp(argv[1], "punch"))
		return cmd_fallocate(n, a, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE);
	if (!strcmp(argv[1], "seek"))
		return cmd_seek(n, a);
	if (!strcmp(argv[1], "copy"))
		return cmd_copy(n, a);
	if (!strcmp(argv[1], "direct"))
		return cmd_direct(n, a);
	if (!strcmp(argv[1], "mixed"))
		return cmd_mixed(n, a);
	if (!strcmp(argv[1], "fsx"))
		return cmd_fsx(n, a);
	die("unknown command");
	return 1;
}
