/*
 * time.h - monotonic and wall clocks in nanoseconds, and sleeping.
 */
#ifndef JNFS_BASE_TIME_H
#define JNFS_BASE_TIME_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

#define NSEC_PER_USEC 1000ull
#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_SEC  1000000000ull

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / NSEC_PER_SEC),
			      .tv_nsec = (long)(ns % NSEC_PER_SEC)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* An absolute CLOCK_MONOTONIC deadline for pthread_cond_timedwait on a
 * condition variable created with cond_init(). */
static inline struct timespec deadline_after_ns(uint64_t ns)
{
	uint64_t t = now_ns() + ns;
	struct timespec ts = {.tv_sec = (time_t)(t / NSEC_PER_SEC),
			      .tv_nsec = (long)(t % NSEC_PER_SEC)};
	return ts;
}

#endif
