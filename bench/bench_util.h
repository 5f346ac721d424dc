/*
 * bench_util.h - the small things every benchmark program in bench/ does
 * the same way: end the run with a message, and draw reproducible numbers
 * from a seed.
 *
 * A benchmark has no error recovery: a failed call voids the run, so die()
 * ends the process. Its message goes to stderr as "PROGRAM: message", with
 * the name the program was started under (bench/CMakeLists.txt names each
 * binary after its program: "nfs3-untar", "nfs4-untar", ...).
 */
#ifndef JNFS_BENCH_UTIL_H
#define JNFS_BENCH_UTIL_H

#include <stdint.h>

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* splitmix64's finaliser: a well-mixed 64-bit value of x, the same on
 * every machine and run. */
uint64_t mix64(uint64_t x);

#endif
