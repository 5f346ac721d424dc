/*
 * fuzz_xdr.c - the XDR primitives (xdr.h). The input is a program: each
 * opcode byte picks a decoder and its limits, applied to the bytes that
 * follow. What decodes is re-encoded in the same order (with zero-copy
 * segments for opaque data and rollbacks sprinkled in) and must come back
 * byte for byte as the slice of input it was decoded from. Decoders must
 * never read outside the input (ASan) and never move on failure.
 */
#include <string.h>

#include "fuzz.h"
#include "rpc/xdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t nops = 1 + data[0] % 32;
	if (size < 1 + nops)
		return 0;
	const uint8_t *ops = data + 1;
	const uint8_t *body = data + 1 + nops;
	size_t blen = size - 1 - nops;
	struct xdr_dec d;
	struct xdr_enc e;
	xdr_dec_init(&d, body, blen);
	xdr_enc_init(&e, blen + 64);
	for (size_t i = 0; i < nops; i++) {
		uint8_t op = ops[i];
		uint32_t max = (uint32_t)(op >> 4) * 37; /* small maxima reach the limits */
		const uint8_t *before = d.p;
		struct xdr_mark m = xdr_enc_mark(&e);
		int err = 0;
		switch (op & 15) {
		case 0: {
			uint32_t v;
			if (!(err = xdr_dec_u32(&d, &v)))
				FUZZ_CHECK(xdr_enc_u32(&e, v) == 0);
			break;
		}
		case 1: {
			uint64_t v;
			if (!(err = xdr_dec_u64(&d, &v)))
				FUZZ_CHECK(xdr_enc_u64(&e, v) == 0);
			break;
		}
		case 2: {
			bool v;
			if (!(err = xdr_dec_bool(&d, &v)))
				FUZZ_CHECK(xdr_enc_bool(&e, v) == 0);
			break;
		}
		case 3: {
			const void *p;
			uint32_t len;
			if (!(err = xdr_dec_opaque_ref(&d, max, &p, &len))) {
				FUZZ_CHECK(len <= max);
				FUZZ_CHECK(xdr_enc_opaque(&e, p, len) == 0);
			}
			break;
		}
		case 4: {
			struct iovec iov[2];
			if (!(err = xdr_dec_opaque_iov(&d, max, &iov[0]))) {
				/* split the payload in two zero-copy segments */
				size_t half = iov[0].iov_len / 2;
				iov[1].iov_base = (char *)iov[0].iov_base + half;
				iov[1].iov_len = iov[0].iov_len - half;
				iov[0].iov_len = half;
				int r = xdr_enc_opaque_iov(&e, iov, 2);
				if (r) { /* only when out of segments */
					FUZZ_CHECK(e.next + 2 > XDR_MAX_EXT);
					FUZZ_CHECK(xdr_enc_opaque(&e, iov[0].iov_base,
								  (uint32_t)(half + iov[1].iov_len)) == 0);
				}
			}
			break;
		}
		case 5: {
			char s[16 * 37 + 1];
			if (!(err = xdr_dec_string(&d, s, max))) {
				FUZZ_CHECK(strlen(s) <= max);
				FUZZ_CHECK(xdr_enc_string(&e, s) == 0);
			}
			break;
		}
		case 6: {
			uint32_t n;
			if (!(err = xdr_dec_count(&d, max, 4, &n))) {
				FUZZ_CHECK(n <= max && (size_t)n * 4 <= xdr_dec_remaining(&d));
				FUZZ_CHECK(xdr_enc_u32(&e, n) == 0);
			}
			break;
		}
		case 7: {
			const void *p;
			size_t len = op >> 4;
			if (!(err = xdr_dec_fixed_ref(&d, len, &p)))
				FUZZ_CHECK(xdr_enc_fixed(&e, p, len) == 0);
			break;
		}
		case 8: {
			double v;
			if (!(err = xdr_dec_double(&d, &v)))
				FUZZ_CHECK(xdr_enc_double(&e, v) == 0);
			break;
		}
		case 9: {
			/* encode something, then roll it back: no trace may remain */
			FUZZ_CHECK(xdr_enc_u32(&e, 0xdeadbeef) == 0);
			struct iovec v = {(void *)data, size};
			(void)xdr_enc_opaque_iov(&e, &v, 1);
			xdr_enc_rollback(&e, m);
			FUZZ_CHECK(xdr_enc_len(&e) == m.len + m.ext_bytes && e.next == m.next);
			break;
		}
		default: {
			const char *s;
			uint32_t len;
			if (!(err = xdr_dec_string_ref(&d, max, &s, &len))) {
				FUZZ_CHECK(memchr(s, 0, len) == NULL);
				FUZZ_CHECK(xdr_enc_opaque(&e, s, len) == 0);
			}
			break;
		}
		}
		if (err) {
			FUZZ_CHECK(d.p == before); /* a failed decoder does not move */
			break;
		}
	}
	/* the re-encoding is as long as the consumed input and equal to it
	 * whenever the input's padding was zero (we always write zeros) */
	size_t used = (size_t)(d.p - body);
	FUZZ_CHECK(xdr_enc_len(&e) == used);
	uint8_t *flat = malloc(used ? used : 1);
	xdr_enc_flatten(&e, flat);
	for (size_t i = 0; i < used; i++)
		FUZZ_CHECK(flat[i] == body[i] || flat[i] == 0);
	free(flat);
	xdr_enc_destroy(&e);
	return 0;
}
