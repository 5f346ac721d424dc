/*
 * fuzz.h - the libFuzzer entry point every target defines. The same
 * sources build two ways: with clang and -fsanitize=fuzzer (build-fuzz,
 * `make test-fuzz`), and with any compiler plus replay_main.c, which feeds
 * every file of the in-tree corpus to the target (a CTest test in the
 * normal and ASan builds). A target reports a broken invariant with
 * FUZZ_CHECK, which aborts: libFuzzer saves the input, the replay fails.
 */
#ifndef JNFS_FUZZ_FUZZ_H
#define JNFS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__,  \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif
