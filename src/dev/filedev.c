/*
 * filedev.c - the file backend: an image file or a block device.
 *
 * Flush is fdatasync(). A FUA write is pwritev2(RWF_DSYNC), which Linux turns
 * into a FUA write on devices that have it; where the flag is refused, a
 * plain write followed by fdatasync() gives the same guarantee.
 *
 * Direct I/O (DEV_OPEN_DIRECT, what jnfsd uses). Through the host's page
 * cache, every write of file data would sit there dirty until a flush, and
 * the journal's flush before a checkpoint (a sync export's CREATE, say)
 * would first write back every other client's unstable data: hundreds of
 * milliseconds after a client wrote half a gigabyte. A read could also come
 * from a cached page that a pNFS client writing the device directly has
 * made stale. With O_DIRECT a completed write is in the device (its own
 * volatile cache at most: dev.h, contract 1) and a flush costs what the
 * device holds; reads always go to the device. The alignment O_DIRECT needs
 * comes from statx (STATX_DIOALIGN), else the block device's logical sector,
 * else a probe; requests are sector-aligned already (dev.h), so only a
 * buffer in memory that is not aligned enough is copied (bounced). Where
 * direct I/O is refused (a filesystem without it, or one that needs more
 * alignment than the sector size), the device says so once on stderr, runs
 * through the page cache, and reports dev.direct_io 0.
 *
 * Through the host's page cache (without O_DIRECT), when writing back a
 * dirty page fails the kernel drops it and reports the error once to each
 * open file description, at its next fsync. Flushes run one at a time
 * (dev.h, F1), and the generic layer counts a failure before the next
 * starts (F4): so one description is enough, every flush seeing every
 * error since the one before.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/mem.h"
#include "base/msg.h"
#include "dev/dev.h"

struct file_dev {
	struct dev fd_dev;
	int fd_fd;
	bool fd_direct;
	uint32_t fd_mem_align; /* direct I/O: alignment of buffers in memory */
	bool fd_rdonly;
	bool fd_no_dsync; /* RWF_DSYNC refused: use write + fdatasync */
};

static struct file_dev *to_fdev(struct dev *d)
{
	return container_of(d, struct file_dev, fd_dev);
}

static int full_pread(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			/* past the end of a file: reads as zeros */
			memset(p, 0, len);
			return 0;
		}
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int full_pwrite(struct file_dev *f, const void *buf, size_t len, uint64_t off, int rwf)
{
	const char *p = buf;
	while (len) {
		struct iovec iov = {.iov_base = (void *)p, .iov_len = len};
		ssize_t n = pwritev2(f->fd_fd, &iov, 1, (off_t)off, rwf);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Direct I/O from or to a buffer not aligned enough: copy through one. */
static bool needs_bounce(struct file_dev *f, const void *buf)
{
	return f->fd_direct && ((uintptr_t)buf & (f->fd_mem_align - 1));
}

static int file_read(struct dev *d, void *buf, size_t len, uint64_t off)
{
	struct file_dev *f = to_fdev(d);
	if (!needs_bounce(f, buf))
		return full_pread(f->fd_fd, buf, len, off);
	counter_add(&d->d_bounced_bytes, len);
	char *b = xmalloc_aligned(MAX(f->fd_mem_align, 4096u), len);
	int err = full_pread(f->fd_fd, b, len, off);
	if (!err)
		memcpy(buf, b, len);
	free(b);
	return err;
}

static int file_write(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags)
{
	struct file_dev *f = to_fdev(d);
	if (f->fd_rdonly)
		return -EROFS;
	int rwf = ((flags & DEV_FUA) && !f->fd_no_dsync) ? RWF_DSYNC : 0;
	char *bounce = NULL;
	const void *wbuf = buf;
	if (needs_bounce(f, buf)) {
		counter_add(&d->d_bounced_bytes, len);
		bounce = xmalloc_aligned(MAX(f->fd_mem_align, 4096u), len);
		memcpy(bounce, buf, len);
		wbuf = bounce;
	}
	int err = full_pwrite(f, wbuf, len, off, rwf);
	if (err == -EOPNOTSUPP && rwf) {
		f->fd_no_dsync = true;
		err = full_pwrite(f, wbuf, len, off, 0);
		rwf = 0;
	}
	if (!err && (flags & DEV_FUA) && !rwf && fdatasync(f->fd_fd) != 0)
		err = -errno;
	free(bounce);
	return err;
}

static int file_flush(struct dev *d)
{
	struct file_dev *f = to_fdev(d);
	if (f->fd_rdonly)
		return -EROFS;
	if (fdatasync(f->fd_fd) != 0)
		return -errno;
	return 0;
}

static void file_destroy(struct dev *d)
{
	struct file_dev *f = to_fdev(d);
	close(f->fd_fd);
	free(f);
}

static const struct dev_ops file_dev_ops = {
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.destroy = file_destroy,
};

/*
 * The alignment direct I/O on fd needs: offsets (and lengths) and buffers.
 * 0 for the offset when it cannot be told without trying.
 */
static void dio_align(int fd, const struct stat *st, uint32_t *off_align, uint32_t *mem_align)
{
	*off_align = 0;
	*mem_align = 512;
	struct statx sx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
	    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align) {
		*off_align = sx.stx_dio_offset_align;
		*mem_align = MAX(sx.stx_dio_mem_align, 1u);
		return;
	}
	int ssz;
	if (S_ISBLK(st->st_mode) && ioctl(fd, BLKSSZGET, &ssz) == 0 && ssz >= 512) {
		*off_align = (uint32_t)ssz;
		*mem_align = (uint32_t)ssz;
	}
}

/* Does a direct read of one sector at offset `sector` work? (The kernel
 * reports nothing about alignment for this file: try it.) */
static bool dio_probe(int fd, uint32_t sector, uint32_t mem_align)
{
	void *b = xmalloc_aligned(MAX(mem_align, 4096u), sector);
	ssize_t n = pread(fd, b, sector, sector);
	free(b);
	return n >= 0 || errno != EINVAL;
}

int dev_file_open(const char *path, unsigned flags, uint64_t size, struct dev **out)
{
	int oflags = (flags & DEV_OPEN_RDONLY) ? O_RDONLY : O_RDWR;
	oflags |= O_CLOEXEC;
	if (flags & DEV_OPEN_CREATE)
		oflags |= O_CREAT;
	bool direct = (flags & DEV_OPEN_DIRECT) != 0;
	const char *why = NULL;
	int fd = open(path, oflags | (direct ? O_DIRECT : 0), 0644);
	if (fd < 0 && direct && errno == EINVAL) {
		direct = false;
		why = "the filesystem refuses O_DIRECT";
		fd = open(path, oflags, 0644);
	}
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	uint64_t dsize;
	uint32_t sector = 512;
	if (S_ISBLK(st.st_mode)) {
		int ssz = 512;
		if (ioctl(fd, BLKGETSIZE64, &dsize) != 0) {
			int err = -errno;
			close(fd);
			return err;
		}
		if (ioctl(fd, BLKSSZGET, &ssz) == 0 && ssz >= 512)
			sector = (uint32_t)ssz;
	} else if (S_ISREG(st.st_mode)) {
		dsize = (uint64_t)st.st_size;
		if ((flags & DEV_OPEN_CREATE) && dsize == 0 && size) {
			if (ftruncate(fd, (off_t)size) != 0) {
				int err = -errno;
				close(fd);
				return err;
			}
			dsize = size;
		}
	} else {
		close(fd);
		return -ENODEV;
	}
	dsize = ALIGN_DOWN(dsize, (uint64_t)sector);

	uint32_t off_align = 0, mem_align = 512;
	if (direct) {
		dio_align(fd, &st, &off_align, &mem_align);
		if (off_align > sector) {
			why = "direct I/O needs more alignment than 512-byte sectors";
			direct = false;
		} else if (!off_align && !dio_probe(fd, sector, mem_align)) {
			why = "a sector-aligned direct read was refused";
			direct = false;
		}
		if (!direct) {
			/* the same file again, through the page cache */
			int bfd = open(path, oflags & ~O_CREAT, 0644);
			if (bfd < 0) {
				int err = -errno;
				close(fd);
				return err;
			}
			close(fd);
			fd = bfd;
		}
	}
	if (why)
		msg_warn("%s: %s; its data goes through the page cache (dev.direct_io 0)", path,
			 why);

	struct file_dev *f = xcalloc(1, sizeof(*f));
	char name[64];
	snprintf(name, sizeof(name), "file:%s", path);
	dev_init(&f->fd_dev, &file_dev_ops, name, dsize, sector);
	f->fd_fd = fd;
	f->fd_direct = direct;
	f->fd_mem_align = mem_align;
	f->fd_dev.d_direct_io = direct;
	f->fd_rdonly = (flags & DEV_OPEN_RDONLY) != 0;
	*out = &f->fd_dev;
	return 0;
}
