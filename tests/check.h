/*
 * check.h - assertions for test programs. A failed check prints the
 * expression and location and exits with status 1; it never returns into
 * the test.
 */
#ifndef JNFS_TESTS_CHECK_H
#define JNFS_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b) {                                                                    \
			fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n",          \
				__FILE__, __LINE__, #a, #b, _a, _b);                               \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_OK(expr) CHECK_EQ((expr), 0)

#define TEST_PASS(name) printf("ok %s\n", name)

#endif
