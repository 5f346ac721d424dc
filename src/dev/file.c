/*
 * file.c - the file backend: an image file or a block device.
 *
 * Flush is fdatasync(). A FUA write is pwritev2(RWF_DSYNC), which Linux turns
 * into a FUA write on devices that have it; where the flag is refused, a
 * plain write followed by fdatasync() gives the same guarantee.
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
	bool fd_rdonly;
	bool fd_no_dsync; /* RWF_DSYNC refused: use write + fdatasync */
};

#define DIRECT_ALIGN 4096

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

static bool needs_bounce(struct file_dev *f, const void *buf, size_t len, uint64_t off)
{
	return f->fd_direct && (((uintptr_t)buf | len | off) & (DIRECT_ALIGN - 1));
}

static int file_read(struct dev *d, void *buf, size_t len, uint64_t off)
{
	struct file_dev *f = to_fdev(d);
	if (!needs_bounce(f, buf, len, off))
		return full_pread(f->fd_fd, buf, len, off);
	/* O_DIRECT with an unaligned request: read the aligned span and copy */
	uint64_t start = ALIGN_DOWN(off, DIRECT_ALIGN);
	uint64_t end = ALIGN_UP(off + len, DIRECT_ALIGN);
	char *b = xmalloc_aligned(DIRECT_ALIGN, end - start);
	int err = full_pread(f->fd_fd, b, end - start, start);
	if (!err)
		memcpy(buf, b + (off - start), len);
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
	uint64_t woff = off;
	size_t wlen = len;
	const void *wbuf = buf;
	if (needs_bounce(f, buf, len, off)) {
		uint64_t start = ALIGN_DOWN(off, DIRECT_ALIGN);
		uint64_t end = ALIGN_UP(off + len, DIRECT_ALIGN);
		bounce = xmalloc_aligned(DIRECT_ALIGN, end - start);
		if (start != off || end != off + len) {
			/* read-modify-write of the partial blocks */
			int err = full_pread(f->fd_fd, bounce, end - start, start);
			if (err) {
				free(bounce);
				return err;
			}
		}
		memcpy(bounce + (off - start), buf, len);
		woff = start;
		wlen = end - start;
		wbuf = bounce;
	}
	int err = full_pwrite(f, wbuf, wlen, woff, rwf);
	if (err == -EOPNOTSUPP && rwf) {
		f->fd_no_dsync = true;
		err = full_pwrite(f, wbuf, wlen, woff, 0);
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

int dev_file_open(const char *path, unsigned flags, uint64_t size, struct dev **out)
{
	int oflags = (flags & DEV_OPEN_RDONLY) ? O_RDONLY : O_RDWR;
	oflags |= O_CLOEXEC;
	if (flags & DEV_OPEN_DIRECT)
		oflags |= O_DIRECT;
	if (flags & DEV_OPEN_CREATE)
		oflags |= O_CREAT;
	int fd = open(path, oflags, 0644);
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

	struct file_dev *f = xcalloc(1, sizeof(*f));
	char name[64];
	snprintf(name, sizeof(name), "file:%s", path);
	dev_init(&f->fd_dev, &file_dev_ops, name, dsize, sector);
	f->fd_fd = fd;
	f->fd_direct = (flags & DEV_OPEN_DIRECT) != 0;
	f->fd_rdonly = (flags & DEV_OPEN_RDONLY) != 0;
	*out = &f->fd_dev;
	return 0;
}
