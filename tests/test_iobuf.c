/*
 * test_iobuf.c - the bulk data buffers and their cache (base/iobuf.h,
 * rules I1-I5): alignment and capacity, the bound on what the cache keeps,
 * reuse of the most recently freed buffer, a bad free stopping the
 * process, and threads taking and giving back buffers at once (also run
 * under ThreadSanitizer).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "base/stats.h"
#include "check.h"

static uint64_t stat_of(const char *name)
{
	struct stat_table t;
	struct stat_sink s = stat_sink_table(&t);
	iobuf_stats(&s);
	return stat_table_get(&t, name);
}

/* I1: alignment and capacity, for sizes around every boundary */
static void test_shape(void)
{
	static const size_t sizes[] = {0,	  1,	    15,	      16,	4095,
				       4096,	  4097,	    65535,    65536,	65537,
				       1 << 20,	  (1 << 20) + 4096, IOBUF_MAX_CACHED,
				       IOBUF_MAX_CACHED + 1};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint8_t *p = iobuf_alloc(n);
		CHECK((uintptr_t)p % IOBUF_ALIGN_SMALL == 0);
		if (n >= 4096)
			CHECK((uintptr_t)p % 4096 == 0);
		size_t cap = iobuf_cap(p);
		CHECK(cap >= n);
		if (n >= IOBUF_BIG)
			CHECK(cap % IOBUF_BIG == 0 && cap - n < IOBUF_BIG);
		memset(p, 0xa5, cap); /* all of it is the caller's (ASan checks) */
		iobuf_free(p);
	}
	iobuf_free(NULL);
	TEST_PASS("iobuf alignment and capacity (I1)");
}

/* I2 and I3: the cache keeps at most its limit; a class's most recently
 * freed buffer comes back first; one too large is never kept */
static void test_cache(void)
{
	iobuf_drain();
	iobuf_set_limit(4 * IOBUF_BIG);
	CHECK(stat_of("iobuf.limit_bytes") == 4 * IOBUF_BIG);
	uint64_t gets = stat_of("iobuf.gets"), hits = stat_of("iobuf.hits");
	uint64_t drops = stat_of("iobuf.drops");

	void *a = iobuf_alloc(IOBUF_BIG), *b = iobuf_alloc(IOBUF_BIG);
	void *c = iobuf_alloc(3 * IOBUF_BIG);
	CHECK(stat_of("iobuf.gets") == gets + 3 && stat_of("iobuf.hits") == hits);
	iobuf_free(a);
	iobuf_free(b);
	CHECK(stat_of("iobuf.cached_bytes") == 2 * IOBUF_BIG);
	iobuf_free(c); /* 2 + 3 units > 4: given back (I2) */
	CHECK(stat_of("iobuf.cached_bytes") == 2 * IOBUF_BIG);
	CHECK(stat_of("iobuf.drops") == drops + 1);

	/* I3: b, then a; a size of the same class is the same buffer */
	void *x = iobuf_alloc(IOBUF_BIG - 1 + 1), *y = iobuf_alloc(IOBUF_BIG / 2 + IOBUF_BIG / 2);
	CHECK(x == b && y == a);
	CHECK(stat_of("iobuf.hits") == hits + 2 && stat_of("iobuf.cached_bytes") == 0);
	/* another class misses */
	void *z = iobuf_alloc(2 * IOBUF_BIG);
	CHECK(z != a && z != b && stat_of("iobuf.hits") == hits + 2);
	iobuf_free(x);
	iobuf_free(y);
	iobuf_free(z);
	CHECK(stat_of("iobuf.cached_bytes") == 4 * IOBUF_BIG);

	/* larger than every class: never cached */
	uint64_t d0 = stat_of("iobuf.drops");
	iobuf_set_limit(64 * IOBUF_MAX_CACHED);
	void *huge = iobuf_alloc(IOBUF_MAX_CACHED + 1);
	iobuf_free(huge);
	CHECK(stat_of("iobuf.drops") == d0 + 1 && stat_of("iobuf.cached_bytes") == 4 * IOBUF_BIG);

	/* a lower limit gives back at once; 0 turns the cache off */
	iobuf_set_limit(IOBUF_BIG);
	CHECK(stat_of("iobuf.cached_bytes") <= IOBUF_BIG);
	iobuf_set_limit(0);
	CHECK(stat_of("iobuf.cached_bytes") == 0);
	void *off = iobuf_alloc(IOBUF_BIG);
	iobuf_free(off);
	CHECK(stat_of("iobuf.cached_bytes") == 0);
	iobuf_set_limit(IOBUF_LIMIT);
	iobuf_drain();
	TEST_PASS("iobuf cache bound and reuse (I2, I3)");
}

/* I4: freeing a buffer twice, or memory that is not an iobuf, stops the
 * process */
static void expect_abort(int what)
{
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2);
		if (what == 0) {
			void *p = iobuf_alloc(IOBUF_BIG);
			iobuf_free(p);
			iobuf_free(p);
		} else {
			uint8_t *m = xcalloc(1, 4096);
			iobuf_free(m + 2048);
		}
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

static void test_bad_free(void)
{
	expect_abort(0);
	expect_abort(1);
	TEST_PASS("iobuf refuses a double or foreign free (I4)");
}

/* I5: threads take and give back buffers of a few classes at once, each
 * writing its buffers whole and finding its pattern intact */
enum { THREADS = 4, ROUNDS = 2000 };

static void *churn(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	uint8_t *held[4] = {0};
	for (unsigned i = 0; i < ROUNDS; i++) {
		unsigned s = (i * 7 + k) % 4;
		if (held[s]) {
			size_t cap = iobuf_cap(held[s]);
			for (size_t o = 0; o < cap; o += 4096)
				CHECK(held[s][o] == (uint8_t)(k * 16 + s));
			iobuf_free(held[s]);
		}
		held[s] = iobuf_alloc((s + 1) * IOBUF_BIG - (i % 3));
		memset(held[s], (int)(k * 16 + s), iobuf_cap(held[s]));
	}
	for (unsigned s = 0; s < 4; s++)
		iobuf_free(held[s]);
	return NULL;
}

static void test_threads(void)
{
	iobuf_set_limit(16 * IOBUF_BIG); /* small: the cache fills and drops too */
	pthread_t t[THREADS];
	for (unsigned k = 0; k < THREADS; k++)
		CHECK(pthread_create(&t[k], NULL, churn, (void *)(uintptr_t)k) == 0);
	for (unsigned k = 0; k < THREADS; k++)
		pthread_join(t[k], NULL);
	CHECK(stat_of("iobuf.cached_bytes") <= 16 * IOBUF_BIG);
	CHECK(stat_of("iobuf.hits") > 0 && stat_of("iobuf.drops") > 0);
	iobuf_set_limit(IOBUF_LIMIT);
	iobuf_drain();
	TEST_PASS("iobuf from several threads (I5)");
}

int main(void)
{
	test_shape();
	test_cache();
	test_bad_free();
	test_threads();
	return 0;
}
