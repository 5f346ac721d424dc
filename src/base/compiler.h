/*
 * compiler.h - small helpers every layer uses: container_of, array sizes,
 * alignment and branch hints. No control flow hides in these macros.
 */
#ifndef JNFS_BASE_COMPILER_H
#define JNFS_BASE_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Round x up / down to a multiple of the power of two a. */
#define ALIGN_UP(x, a)	 (((x) + ((a)-1)) & ~((__typeof__(x))(a)-1))
#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a)-1))
#define IS_ALIGNED(x, a) (((x) & ((__typeof__(x))(a)-1)) == 0)

#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))

#define __printf(a, b) __attribute__((format(printf, a, b)))
#define __unused       __attribute__((unused))

#endif
