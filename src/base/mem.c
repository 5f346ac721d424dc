#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

#include "base/msg.h"

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		panic("out of memory allocating %zu bytes", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		panic("out of memory allocating %zu x %zu bytes", n, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		panic("out of memory reallocating %zu bytes", n);
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		panic("out of memory");
	return p;
}

void *xmalloc_aligned(size_t align, size_t n)
{
	void *p;
	if (posix_memalign(&p, align, n ? n : align) != 0)
		panic("out of memory allocating %zu aligned bytes", n);
	return p;
}
