/*
 * memdev.c - the memory backend: a disk held in lazily allocated 4 KiB pages,
 * optionally copy-on-write over a read-only base image. Tests use it for
 * fast images and for cheap clones of a crash image.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/lock.h"
#include "base/mem.h"
#include "dev/dev.h"

#define MEM_PAGE 4096u

struct mem_dev {
	struct dev md_dev;
	struct mutex md_lock; /* guards md_pages allocation */
	uint8_t **md_pages;
	uint64_t md_npages;
	const uint8_t *md_base;
};

static struct lock_class mem_dev_lock_class = LOCK_CLASS(DEV_MEM);

static struct mem_dev *to_mdev(struct dev *d)
{
	return container_of(d, struct mem_dev, md_dev);
}

/* Copy one page's worth of bytes out, from the page, the base, or zeros. */
static void mem_page_read(struct mem_dev *m, uint64_t idx, uint32_t in, void *dst, size_t n)
{
	const uint8_t *p = m->md_pages[idx];
	if (p)
		memcpy(dst, p + in, n);
	else if (m->md_base)
		memcpy(dst, m->md_base + idx * MEM_PAGE + in, n);
	else
		memset(dst, 0, n);
}

static int mem_read(struct dev *d, void *buf, size_t len, uint64_t off)
{
	struct mem_dev *m = to_mdev(d);
	uint8_t *out = buf;
	mutex_lock(&m->md_lock);
	while (len) {
		uint64_t idx = off / MEM_PAGE;
		uint32_t in = (uint32_t)(off % MEM_PAGE);
		size_t n = MIN(len, (size_t)(MEM_PAGE - in));
		mem_page_read(m, idx, in, out, n);
		out += n;
		off += n;
		len -= n;
	}
	mutex_unlock(&m->md_lock);
	return 0;
}

static int mem_write(struct dev *d, const void *buf, size_t len, uint64_t off, unsigned flags)
{
	struct mem_dev *m = to_mdev(d);
	const uint8_t *in_buf = buf;
	mutex_lock(&m->md_lock);
	while (len) {
		uint64_t idx = off / MEM_PAGE;
		uint32_t in = (uint32_t)(off % MEM_PAGE);
		size_t n = MIN(len, (size_t)(MEM_PAGE - in));
		if (!m->md_pages[idx]) {
			uint8_t *p = xmalloc(MEM_PAGE);
			if (n != MEM_PAGE)
				mem_page_read(m, idx, 0, p, MEM_PAGE);
			m->md_pages[idx] = p;
		}
		memcpy(m->md_pages[idx] + in, in_buf, n);
		in_buf += n;
		off += n;
		len -= n;
	}
	mutex_unlock(&m->md_lock);
	return 0;
}

static int mem_flush(struct dev *d)
{
	return 0;
}

static void mem_destroy(struct dev *d)
{
	struct mem_dev *m = to_mdev(d);
	for (uint64_t i = 0; i < m->md_npages; i++)
		free(m->md_pages[i]);
	free(m->md_pages);
	mutex_destroy(&m->md_lock);
	free(m);
}

static const struct dev_ops mem_dev_ops = {
	.read = mem_read,
	.write = mem_write,
	.flush = mem_flush,
	.destroy = mem_destroy,
};

int dev_mem_create(uint64_t size, const void *base, struct dev **out)
{
	if (!size || size % MEM_PAGE)
		return -EINVAL;
	struct mem_dev *m = xcalloc(1, sizeof(*m));
	dev_init(&m->md_dev, &mem_dev_ops, base ? "mem-cow" : "mem", size, 512);
	mutex_init(&m->md_lock, &mem_dev_lock_class);
	m->md_npages = size / MEM_PAGE;
	m->md_pages = xcalloc(m->md_npages, sizeof(*m->md_pages));
	m->md_base = base;
	*out = &m->md_dev;
	return 0;
}

void dev_mem_copy_out(struct dev *d, void *buf)
{
	struct mem_dev *m = to_mdev(d);
	mutex_lock(&m->md_lock);
	for (uint64_t i = 0; i < m->md_npages; i++)
		mem_page_read(m, i, 0, (uint8_t *)buf + i * MEM_PAGE, MEM_PAGE);
	mutex_unlock(&m->md_lock);
}
