/*
 * fuzz_record.c - record-marking reassembly (record.h). The input's first
 * byte seeds how the rest is cut into reads. Invariants checked: the
 * records and the final error are the same however the stream is cut
 * (all at once, small chunks, direct reads into the record as the
 * transport does for large fragments); no record exceeds max_record;
 * memory follows received bytes (record.h invariant 2); errors are sticky.
 */
#include <errno.h>
#include <string.h>

#include "base/compiler.h"
#include "base/crc32c.h"
#include "base/iobuf.h"
#include "fuzz.h"
#include "rpc/record.h"

#define MAX_RECORD 4096
#define MAX_OUT    1024

struct outcome {
	unsigned n;
	uint32_t crc[MAX_OUT];
	size_t len[MAX_OUT];
	int err;
};

static void take(struct rec_asm *r, struct outcome *o)
{
	size_t len;
	uint8_t *rec = rec_take(r, &len);
	FUZZ_CHECK(len <= MAX_RECORD);
	FUZZ_CHECK((rec == NULL) == (len == 0));
	if (o->n < MAX_OUT) {
		o->crc[o->n] = crc32c(0, rec, len);
		o->len[o->n] = len;
	}
	o->n++;
	iobuf_free(rec);
}

/* mode 0: one feed; 1: chunks from the seed; 2: like 1 but direct reads
 * whenever the reassembler offers body space */
static void run(const uint8_t *s, size_t n, int mode, uint8_t seed, struct outcome *o)
{
	struct rec_asm r;
	size_t pos = 0;
	unsigned x = seed * 2654435761u + 1;
	memset(o, 0, sizeof(*o));
	rec_init(&r, MAX_RECORD);
	while (pos < n) {
		size_t want = n - pos;
		if (mode) {
			x = x * 1103515245u + 12345u;
			want = MIN(want, (size_t)(1 + (x >> 16) % 23));
		}
		uint8_t *space;
		size_t direct = mode == 2 ? rec_direct(&r, &space) : 0;
		int ret;
		if (direct) {
			size_t k = MIN(direct, want);
			memcpy(space, s + pos, k);
			pos += k;
			ret = rec_direct_commit(&r, k);
		} else {
			size_t used;
			ret = rec_feed(&r, s + pos, want, &used);
			FUZZ_CHECK(used <= want);
			pos += used;
			if (ret == 0)
				FUZZ_CHECK(used == want);
		}
		FUZZ_CHECK(r.cap <= 2 * r.len + 65536);
		FUZZ_CHECK(r.len <= MAX_RECORD);
		if (ret < 0) {
			size_t used;
			FUZZ_CHECK(ret == -EMSGSIZE);
			FUZZ_CHECK(rec_feed(&r, s, n, &used) == ret && used == 0);
			o->err = ret;
			break;
		}
		if (ret == 1)
			take(&r, o);
	}
	rec_destroy(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome a, b, c;
	if (size < 1)
		return 0;
	run(data + 1, size - 1, 0, data[0], &a);
	run(data + 1, size - 1, 1, data[0], &b);
	run(data + 1, size - 1, 2, data[0], &c);
	FUZZ_CHECK(a.n == b.n && a.n == c.n && a.err == b.err && a.err == c.err);
	for (unsigned i = 0; i < MIN(a.n, MAX_OUT); i++) {
		FUZZ_CHECK(a.len[i] == b.len[i] && a.crc[i] == b.crc[i]);
		FUZZ_CHECK(a.len[i] == c.len[i] && a.crc[i] == c.crc[i]);
	}
	return 0;
}
