/*
 * bench_util.c - helpers shared by the benchmark programs (see
 * bench_util.h).
 */
#include <err.h>
#include <stdarg.h>

#include "bench_util.h"

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verrx(1, fmt, ap); /* "PROGRAM: message\n" on stderr, exit(1) */
}

uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}
