/*
 * test_rpc_xdr.c - XDR streams (xdr.h invariants 1-6): every primitive
 * round-trips, every decoder fails cleanly at every truncation point,
 * lengths and counts respect their maxima, encoding stops at max without
 * changing the stream, rollback restores external segments, zero-copy
 * segments come out as iovecs in order; the helpers of generated codecs
 * tell a malformed encoding (-EBADMSG) from one over a limit of ours
 * (-E2BIG) and never move on failure; decode arenas (invariant 7) carve
 * the caller's buffer first, then heap chunks, never past their cap.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "rpc/xdr.h"

static uint8_t *flat(struct xdr_enc *x, size_t *len)
{
	*len = xdr_enc_len(x);
	uint8_t *b = malloc(*len ? *len : 1);
	xdr_enc_flatten(x, b);
	return b;
}

/* Encode one of everything, then decode it back, then decode every prefix. */
static int decode_all(struct xdr_dec *d)
{
	uint32_t u32, n;
	int32_t i32;
	uint64_t u64;
	int64_t i64;
	bool b;
	float f;
	double dbl;
	char fixed[5], op[16], str[9];
	const void *ref;
	const char *sref;
	struct iovec iov;
	if (xdr_dec_u32(d, &u32) || u32 != 0xdeadbeef)
		return -1;
	if (xdr_dec_i32(d, &i32) || i32 != -5)
		return -1;
	if (xdr_dec_u64(d, &u64) || u64 != 0x0123456789abcdefull)
		return -1;
	if (xdr_dec_i64(d, &i64) || i64 != -1234567890123ll)
		return -1;
	if (xdr_dec_bool(d, &b) || !b)
		return -1;
	if (xdr_dec_float(d, &f) || f != 1.5f)
		return -1;
	if (xdr_dec_double(d, &dbl) || dbl != -2.25)
		return -1;
	if (xdr_dec_fixed(d, fixed, 5) || memcmp(fixed, "abcde", 5))
		return -1;
	if (xdr_dec_opaque(d, op, sizeof(op), &n) || n != 3 || memcmp(op, "xyz", 3))
		return -1;
	if (xdr_dec_string(d, str, 8) || strcmp(str, "hello"))
		return -1;
	if (xdr_dec_opaque_ref(d, 100, &ref, &n) || n != 0)
		return -1;
	if (xdr_dec_string_ref(d, 10, &sref, &n) || n != 1 || sref[0] != 'z')
		return -1;
	if (xdr_dec_opaque_iov(d, 64, &iov) || iov.iov_len != 11 ||
	    memcmp(iov.iov_base, "zero-copy!!", 11))
		return -1;
	if (xdr_dec_count(d, 10, 4, &n) || n != 2)
		return -1;
	if (xdr_dec_u32(d, &u32) || u32 != 7 || xdr_dec_u32(d, &u32) || u32 != 8)
		return -1;
	if (xdr_dec_fixed_ref(d, 2, &ref) || memcmp(ref, "qq", 2))
		return -1;
	return xdr_dec_remaining(d) == 0 ? 0 : -1;
}

static void test_roundtrip(void)
{
	struct xdr_enc x;
	xdr_enc_init(&x, 4096);
	CHECK_OK(xdr_enc_u32(&x, 0xdeadbeef));
	CHECK_OK(xdr_enc_i32(&x, -5));
	CHECK_OK(xdr_enc_u64(&x, 0x0123456789abcdefull));
	CHECK_OK(xdr_enc_i64(&x, -1234567890123ll));
	CHECK_OK(xdr_enc_bool(&x, true));
	CHECK_OK(xdr_enc_float(&x, 1.5f));
	CHECK_OK(xdr_enc_double(&x, -2.25));
	CHECK_OK(xdr_enc_fixed(&x, "abcde", 5));
	CHECK_OK(xdr_enc_opaque(&x, "xyz", 3));
	CHECK_OK(xdr_enc_string(&x, "hello"));
	CHECK_OK(xdr_enc_opaque(&x, NULL, 0));
	CHECK_OK(xdr_enc_string(&x, "z"));
	struct iovec segs[2] = {{(void *)"zero-", 5}, {(void *)"copy!!", 6}};
	CHECK_OK(xdr_enc_opaque_iov(&x, segs, 2));
	CHECK_OK(xdr_enc_u32(&x, 2));
	CHECK_OK(xdr_enc_u32(&x, 7));
	CHECK_OK(xdr_enc_u32(&x, 8));
	CHECK_OK(xdr_enc_fixed(&x, "qq", 2));
	CHECK_EQ(x.next, 2);
	size_t len;
	uint8_t *b = flat(&x, &len);
	CHECK_EQ(len % 4, 0);
	/* big-endian on the wire */
	CHECK(b[0] == 0xde && b[1] == 0xad && b[2] == 0xbe && b[3] == 0xef);
	/* padding bytes are zero: "abcde" is followed by 3 zeros */
	CHECK(b[4 + 4 + 8 + 8 + 4 + 4 + 8 + 5] == 0);
	struct xdr_dec d;
	xdr_dec_init(&d, b, len);
	CHECK_OK(decode_all(&d));
	/* invariant 1: every truncation fails cleanly (ASan checks the reads) */
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, b, cut);
		xdr_dec_init(&d, copy, cut);
		CHECK(decode_all(&d) != 0);
		free(copy);
	}
	/* the iovecs give the same bytes as flatten, segments spliced in place */
	struct iovec iov[8];
	int n = xdr_enc_iov(&x, iov, 8);
	CHECK_EQ(n, 4); /* inline, segment, segment, inline */
	CHECK(iov[1].iov_base == segs[0].iov_base && iov[2].iov_base == segs[1].iov_base);
	size_t pos = 0;
	for (int i = 0; i < n; i++) {
		CHECK(memcmp(b + pos, iov[i].iov_base, iov[i].iov_len) == 0);
		pos += iov[i].iov_len;
	}
	CHECK_EQ(pos, len);
	CHECK_EQ(xdr_enc_iov(&x, iov, 2), -ENOSPC);
	free(b);
	xdr_enc_destroy(&x);
	TEST_PASS("xdr roundtrip and truncation");
}

static void test_bounds(void)
{
	uint8_t buf[64];
	struct xdr_enc x;
	struct xdr_dec d;
	uint32_t n;
	char s[8];
	const void *ref;
	bool b;

	/* a length beyond max or beyond the data */
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(xdr_enc_opaque(&x, "abcdefgh", 8));
	xdr_dec_init(&d, buf, x.len);
	CHECK_EQ(xdr_dec_opaque_ref(&d, 7, &ref, &n), -EBADMSG);
	CHECK_EQ(xdr_dec_remaining(&d), 12); /* failed helper did not move */
	CHECK_OK(xdr_dec_opaque_ref(&d, 8, &ref, &n));
	uint8_t huge[8] = {0xff, 0xff, 0xff, 0xfc, 'a', 'b', 'c', 'd'};
	xdr_dec_init(&d, huge, sizeof(huge));
	CHECK_EQ(xdr_dec_opaque_ref(&d, UINT32_MAX, &ref, &n), -EBADMSG);
	xdr_dec_init(&d, huge, sizeof(huge));
	CHECK_EQ(xdr_dec_skip(&d, SIZE_MAX - 1), -EBADMSG);

	/* strings: max, embedded NUL */
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(xdr_enc_opaque(&x, "ab\0cd", 5));
	xdr_dec_init(&d, buf, x.len);
	CHECK_EQ(xdr_dec_string(&d, s, 7), -EBADMSG);
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(xdr_enc_string(&x, "12345678"));
	xdr_dec_init(&d, buf, x.len);
	CHECK_EQ(xdr_dec_string(&d, s, 7), -EBADMSG);

	/* invariant 3: a count above max, or above what the bytes can hold */
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(xdr_enc_u32(&x, 1000000));
	xdr_dec_init(&d, buf, x.len);
	CHECK_EQ(xdr_dec_count(&d, UINT32_MAX, 4, &n), -EBADMSG);
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(xdr_enc_u32(&x, 3));
	CHECK_OK(xdr_enc_u32(&x, 1));
	CHECK_OK(xdr_enc_u32(&x, 2));
	xdr_dec_init(&d, buf, x.len);
	CHECK_EQ(xdr_dec_count(&d, 10, 4, &n), -EBADMSG); /* 3 elements, 2 words */
	xdr_dec_init(&d, buf, x.len);
	CHECK_EQ(xdr_dec_count(&d, 2, 0, &n), -EBADMSG);
	xdr_dec_init(&d, buf, x.len);
	CHECK_OK(xdr_dec_count(&d, 3, 0, &n));

	/* booleans are 0 or 1 */
	xdr_enc_init_buf(&x, buf, sizeof(buf), sizeof(buf));
	CHECK_OK(xdr_enc_u32(&x, 2));
	xdr_dec_init(&d, buf, x.len);
	CHECK_EQ(xdr_dec_bool(&d, &b), -EBADMSG);
	TEST_PASS("xdr bounds");
}

static void test_enc_limits_and_rollback(void)
{
	struct xdr_enc x;
	uint8_t small[8];
	/* invariant 4: at max the stream refuses and stays as it was */
	xdr_enc_init(&x, 16);
	CHECK_OK(xdr_enc_u64(&x, 1));
	CHECK_EQ(xdr_enc_opaque(&x, "abcdefgh", 8), -EMSGSIZE);
	CHECK_EQ(xdr_enc_len(&x), 8);
	CHECK_EQ(xdr_enc_string(&x, "abcd"), 0);
	CHECK_EQ(xdr_enc_len(&x), 16);
	CHECK_EQ(xdr_enc_u32(&x, 1), -EMSGSIZE);
	xdr_enc_destroy(&x);

	/* a caller buffer is left for the heap when outgrown */
	xdr_enc_init_buf(&x, small, sizeof(small), 1 << 20);
	for (uint32_t i = 0; i < 1000; i++)
		CHECK_OK(xdr_enc_u32(&x, i));
	CHECK(x.buf != small && x.buf_owned);
	struct xdr_dec d;
	xdr_dec_init(&d, x.buf, x.len);
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t v;
		CHECK_OK(xdr_dec_u32(&d, &v));
		CHECK_EQ(v, i);
	}
	xdr_enc_destroy(&x);

	/* invariant 5: rollback removes inline bytes and external segments */
	static char big[100000];
	memset(big, 'B', sizeof(big));
	xdr_enc_init(&x, 1 << 20);
	CHECK_OK(xdr_enc_u32(&x, 42));
	struct xdr_mark m = xdr_enc_mark(&x);
	struct iovec seg = {big, 99999};
	CHECK_OK(xdr_enc_opaque_iov(&x, &seg, 1));
	CHECK_EQ(xdr_enc_len(&x), 4 + 4 + 100000);
	CHECK_OK(xdr_enc_u32(&x, 43));
	xdr_enc_rollback(&x, m);
	CHECK_EQ(xdr_enc_len(&x), 4);
	CHECK_EQ(x.next, 0);
	CHECK_OK(xdr_enc_u32(&x, 44));
	size_t len;
	uint8_t *b = flat(&x, &len);
	CHECK_EQ(len, 8);
	CHECK(b[3] == 42 && b[7] == 44);
	free(b);
	/* an external segment past max is refused */
	xdr_enc_destroy(&x);
	xdr_enc_init(&x, 1000);
	CHECK_EQ(xdr_enc_opaque_iov(&x, &seg, 1), -EMSGSIZE);
	CHECK_EQ(xdr_enc_len(&x), 0);
	/* more segments than XDR_MAX_EXT are refused */
	struct iovec many[XDR_MAX_EXT + 1];
	for (int i = 0; i <= XDR_MAX_EXT; i++)
		many[i] = (struct iovec){big, 1};
	CHECK_EQ(xdr_enc_opaque_iov(&x, many, XDR_MAX_EXT + 1), -EMSGSIZE);
	CHECK_OK(xdr_enc_opaque_iov(&x, many, XDR_MAX_EXT));
	CHECK_EQ(xdr_enc_len(&x), 4 + XDR_MAX_EXT);
	/* reserve and patch */
	size_t off;
	CHECK_OK(xdr_enc_reserve(&x, 4, &off));
	xdr_enc_put_u32_at(&x, off, 0x01020304);
	b = flat(&x, &len);
	CHECK(b[len - 4] == 1 && b[len - 1] == 4);
	free(b);
	xdr_enc_destroy(&x);
	TEST_PASS("xdr encode limits, rollback, reserve");
}

static void test_generated_helpers(void)
{
	uint8_t buf[64] = {0, 0, 0, 5, 'a', 'b', 0, 'c', 'd', 0, 0, 0, 0, 0, 0, 1};
	struct xdr_dec x;
	const uint8_t *p;
	const char *s;
	uint32_t n, len;
	bool more;

	/* counts: the protocol's bound, the bytes left, our limit */
	buf[3] = 3;
	xdr_dec_init(&x, buf, 16);
	CHECK_EQ(xdr_dec_len(&x, 2, 2, 4, &n), -EBADMSG);
	CHECK(x.p == buf);
	CHECK_EQ(xdr_dec_len(&x, 10, 2, 4, &n), -E2BIG);
	CHECK(x.p == buf);
	CHECK_EQ(xdr_dec_len(&x, 10, 3, 4, &n), 0);
	CHECK(n == 3 && x.p == buf + 4);
	xdr_dec_init(&x, buf, 16);
	CHECK_EQ(xdr_dec_len(&x, 10, 10, 8, &n), -EBADMSG); /* 3 * 8 > 12 left */

	/* opaques and strings: the same errors; a NUL is no string */
	buf[3] = 5;
	xdr_dec_init(&x, buf, 12);
	CHECK_EQ(xdr_dec_opaque_lim(&x, 4, 4, &p, &len), -EBADMSG);
	CHECK_EQ(xdr_dec_opaque_lim(&x, 8, 4, &p, &len), -E2BIG);
	CHECK_EQ(xdr_dec_string_lim(&x, 8, 8, &s, &len), -EBADMSG);
	CHECK(x.p == buf);
	CHECK_EQ(xdr_dec_opaque_lim(&x, 8, 8, &p, &len), 0);
	CHECK(p == buf + 4 && len == 5 && x.p == buf + 12);
	xdr_dec_init(&x, buf, 11); /* the padding is missing */
	CHECK_EQ(xdr_dec_opaque_lim(&x, 8, 8, &p, &len), -EBADMSG);
	CHECK(x.p == buf);
	buf[6] = 'x';
	xdr_dec_init(&x, buf, 12);
	CHECK_EQ(xdr_dec_string_lim(&x, 8, 8, &s, &len), 0);
	CHECK((const uint8_t *)s == buf + 4 && len == 5);

	/* optional data: the flag, and the bytes it promises */
	xdr_dec_init(&x, buf + 12, 4);
	CHECK_EQ(xdr_dec_more(&x, 4, &more), -EBADMSG);
	CHECK(x.p == buf + 12);
	CHECK_EQ(xdr_dec_more(&x, 0, &more), 0);
	CHECK(more);
	xdr_dec_init(&x, buf + 9, 4); /* zeros: absent, nothing more needed */
	CHECK_EQ(xdr_dec_more(&x, 100, &more), 0);
	CHECK(!more);

	/* no arena, no allocation */
	xdr_dec_init(&x, buf, 16);
	CHECK(xdr_dec_alloc(&x, 1, 1) == NULL);

	/* splicing, and copying when the segments are used up */
	struct xdr_enc e;
	static uint8_t data[XDR_MAX_EXT + 1][8];
	xdr_enc_init(&e, 4096);
	for (int i = 0; i <= XDR_MAX_EXT; i++) {
		memset(data[i], 'a' + i, 5);
		CHECK_OK(xdr_enc_opaque_splice(&e, data[i], 5));
	}
	CHECK_EQ(e.next, XDR_MAX_EXT);
	size_t flen;
	uint8_t *f = flat(&e, &flen);
	CHECK_EQ(flen, (XDR_MAX_EXT + 1) * 12);
	for (int i = 0; i <= XDR_MAX_EXT; i++)
		CHECK(f[i * 12 + 3] == 5 && f[i * 12 + 4] == 'a' + i && f[i * 12 + 9] == 0);
	free(f);
	xdr_enc_destroy(&e);
	TEST_PASS("xdr helpers of generated codecs");
}

static void test_arena(void)
{
	uint8_t first[256];
	struct xdr_arena a;
	xdr_arena_init(&a, first, sizeof(first), 8192);

	/* the caller's buffer first, aligned and zeroed */
	memset(first, 0xee, sizeof(first));
	uint8_t *p = xdr_arena_alloc(&a, 10, 3), *q = xdr_arena_alloc(&a, 1, 100);
	CHECK(p == first && q >= first + 30 && q + 100 <= first + 256);
	CHECK(((uintptr_t)q % _Alignof(max_align_t)) == 0);
	for (int i = 0; i < 100; i++)
		CHECK(q[i] == 0);
	CHECK_EQ(xdr_arena_held(&a), 0);

	/* then heap chunks, within the cap */
	uint8_t *h = xdr_arena_alloc(&a, 1, 200);
	CHECK(h && (h < first || h >= first + 256));
	CHECK(xdr_arena_held(&a) > 0 && xdr_arena_held(&a) <= 8192);
	CHECK(xdr_arena_alloc(&a, 1, 8192) == NULL); /* over the cap */
	CHECK(xdr_arena_alloc(&a, SIZE_MAX / 8, 16) == NULL); /* n * size overflows */
	size_t held = xdr_arena_held(&a);
	while (xdr_arena_alloc(&a, 1, 500))
		CHECK(xdr_arena_held(&a) <= 8192);
	CHECK(xdr_arena_held(&a) >= held);

	/* a stream allocates from its arena */
	struct xdr_dec x;
	xdr_dec_init(&x, NULL, 0);
	xdr_arena_reset(&a);
	CHECK_EQ(xdr_arena_held(&a), 0);
	x.arena = &a;
	CHECK(xdr_dec_alloc(&x, 4, 8) == first);

	/* an arena without a first buffer or a cap allocates nothing */
	struct xdr_arena none;
	xdr_arena_init(&none, NULL, 0, 0);
	CHECK(xdr_arena_alloc(&none, 1, 1) == NULL);
	xdr_arena_reset(&a);
	TEST_PASS("xdr decode arenas");
}

/* xdr_enc_append: the same bytes, the external segments spliced, not
 * copied; too little room changes nothing. */
static void test_append(void)
{
	static const uint8_t data[7] = {1, 2, 3, 4, 5, 6, 7};
	struct iovec seg = {.iov_base = (void *)data, .iov_len = sizeof(data)};
	struct xdr_enc src, dst, small;
	xdr_enc_init(&src, 1024);
	CHECK_OK(xdr_enc_u32(&src, 42));
	CHECK_OK(xdr_enc_opaque_iov(&src, &seg, 1)); /* length, segment, padding */
	CHECK_OK(xdr_enc_u32(&src, 43));
	xdr_enc_init(&dst, 1024);
	CHECK_OK(xdr_enc_u32(&dst, 41));
	CHECK_OK(xdr_enc_append(&dst, &src));
	CHECK_EQ(xdr_enc_len(&dst), 4 + xdr_enc_len(&src));
	CHECK_EQ(dst.next, 1u);
	CHECK(dst.ext[0].iov.iov_base == data); /* spliced */
	uint8_t want[64], got[64];
	xdr_enc_flatten(&src, want);
	xdr_enc_flatten(&dst, got);
	CHECK(!memcmp(got + 4, want, xdr_enc_len(&src)));
	xdr_enc_init(&small, 8);
	CHECK_EQ(xdr_enc_append(&small, &src), -EMSGSIZE);
	CHECK_EQ(xdr_enc_len(&small), 0u);
	CHECK_EQ(small.next, 0u);
	xdr_enc_destroy(&small);
	xdr_enc_destroy(&dst);
	xdr_enc_destroy(&src);
	printf("ok append\n");
}

int main(void)
{
	test_roundtrip();
	test_bounds();
	test_enc_limits_and_rollback();
	test_generated_helpers();
	test_arena();
	test_append();
	return 0;
}
