/*
 * xdr.c - bounded XDR streams. See xdr.h for the invariants; the only
 * pointer arithmetic on XDR data in the tree happens here.
 */
#include "rpc/xdr.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"

/* ---- decoding ---------------------------------------------------------- */

void xdr_dec_init(struct xdr_dec *x, const void *buf, size_t len)
{
	x->p = buf;
	x->end = x->p + len;
	if (!buf)
		x->end = x->p;
	x->arena = NULL;
	x->bulk = NULL;
	x->bulk_len = 0;
}

size_t xdr_dec_bulk_off(const struct xdr_dec *x, const void *buf)
{
	return x->bulk ? (size_t)(x->bulk - (const uint8_t *)buf) : 0;
}

/* Take n bytes (n already includes padding) or fail without moving. */
static int take(struct xdr_dec *x, size_t n, const uint8_t **out)
{
	if (n > xdr_dec_remaining(x))
		return -EBADMSG;
	*out = x->p;
	x->p += n;
	return 0;
}

static inline uint32_t get_be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static inline void put_be32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

int xdr_dec_u32(struct xdr_dec *x, uint32_t *v)
{
	const uint8_t *b;
	if (take(x, 4, &b))
		return -EBADMSG;
	*v = get_be32(b);
	return 0;
}

int xdr_dec_i32(struct xdr_dec *x, int32_t *v)
{
	uint32_t u;
	if (xdr_dec_u32(x, &u))
		return -EBADMSG;
	*v = (int32_t)u;
	return 0;
}

int xdr_dec_u64(struct xdr_dec *x, uint64_t *v)
{
	const uint8_t *b;
	if (take(x, 8, &b))
		return -EBADMSG;
	*v = (uint64_t)get_be32(b) << 32 | get_be32(b + 4);
	return 0;
}

int xdr_dec_i64(struct xdr_dec *x, int64_t *v)
{
	uint64_t u;
	if (xdr_dec_u64(x, &u))
		return -EBADMSG;
	*v = (int64_t)u;
	return 0;
}

int xdr_dec_bool(struct xdr_dec *x, bool *v)
{
	uint32_t u;
	if (xdr_dec_u32(x, &u))
		return -EBADMSG;
	if (u > 1) {
		x->p -= 4;
		return -EBADMSG;
	}
	*v = u;
	return 0;
}

int xdr_dec_float(struct xdr_dec *x, float *v)
{
	uint32_t u;
	if (xdr_dec_u32(x, &u))
		return -EBADMSG;
	memcpy(v, &u, sizeof(*v));
	return 0;
}

int xdr_dec_double(struct xdr_dec *x, double *v)
{
	uint64_t u;
	if (xdr_dec_u64(x, &u))
		return -EBADMSG;
	memcpy(v, &u, sizeof(*v));
	return 0;
}

int xdr_dec_fixed_ref(struct xdr_dec *x, size_t len, const void **p)
{
	const uint8_t *b;
	/* len + pad cannot overflow: len is bounded by remaining below */
	if (len > xdr_dec_remaining(x))
		return -EBADMSG;
	if (take(x, len + XDR_PAD(len), &b))
		return -EBADMSG;
	if (len >= XDR_BULK_MIN && len > x->bulk_len) {
		x->bulk = b;
		x->bulk_len = len;
	}
	*p = b;
	return 0;
}

int xdr_dec_fixed(struct xdr_dec *x, void *buf, size_t len)
{
	const void *p;
	if (xdr_dec_fixed_ref(x, len, &p))
		return -EBADMSG;
	if (len)
		memcpy(buf, p, len);
	return 0;
}

int xdr_dec_opaque_ref(struct xdr_dec *x, uint32_t max, const void **p, uint32_t *len)
{
	struct xdr_dec save = *x;
	uint32_t n;
	if (xdr_dec_u32(x, &n) || n > max || xdr_dec_fixed_ref(x, n, p)) {
		*x = save;
		return -EBADMSG;
	}
	*len = n;
	return 0;
}

int xdr_dec_opaque(struct xdr_dec *x, void *buf, uint32_t max, uint32_t *len)
{
	const void *p;
	if (xdr_dec_opaque_ref(x, max, &p, len))
		return -EBADMSG;
	if (*len)
		memcpy(buf, p, *len);
	return 0;
}

int xdr_dec_opaque_iov(struct xdr_dec *x, uint32_t max, struct iovec *iov)
{
	const void *p;
	uint32_t n;
	if (xdr_dec_opaque_ref(x, max, &p, &n))
		return -EBADMSG;
	iov->iov_base = (void *)p;
	iov->iov_len = n;
	return 0;
}

int xdr_dec_string_ref(struct xdr_dec *x, uint32_t max, const char **s, uint32_t *len)
{
	struct xdr_dec save = *x;
	const void *p;
	if (xdr_dec_opaque_ref(x, max, &p, len))
		return -EBADMSG;
	if (*len && memchr(p, 0, *len)) {
		*x = save;
		return -EBADMSG;
	}
	*s = p;
	return 0;
}

int xdr_dec_string(struct xdr_dec *x, char *buf, uint32_t max)
{
	const char *s;
	uint32_t len;
	if (xdr_dec_string_ref(x, max, &s, &len))
		return -EBADMSG;
	if (len)
		memcpy(buf, s, len);
	buf[len] = '\0';
	return 0;
}

int xdr_dec_count(struct xdr_dec *x, uint32_t max, size_t min_elem, uint32_t *n)
{
	struct xdr_dec save = *x;
	uint32_t c;
	if (xdr_dec_u32(x, &c) || c > max ||
	    (min_elem && (uint64_t)c > xdr_dec_remaining(x) / min_elem)) {
		*x = save;
		return -EBADMSG;
	}
	*n = c;
	return 0;
}

int xdr_dec_skip(struct xdr_dec *x, size_t len)
{
	const void *p;
	return xdr_dec_fixed_ref(x, len, &p);
}

/* ---- decoding: for generated codecs ------------------------------------ */

int xdr_dec_len(struct xdr_dec *x, uint32_t bound, uint32_t limit, size_t min_size, uint32_t *n)
{
	struct xdr_dec save = *x;
	uint32_t c;
	if (xdr_dec_u32(x, &c) || c > bound ||
	    (min_size && (uint64_t)c > xdr_dec_remaining(x) / min_size)) {
		*x = save;
		return -EBADMSG;
	}
	if (c > limit) {
		*x = save;
		return -E2BIG;
	}
	*n = c;
	return 0;
}

int xdr_dec_opaque_lim(struct xdr_dec *x, uint32_t bound, uint32_t limit, const uint8_t **p,
		       uint32_t *len)
{
	struct xdr_dec save = *x;
	const void *b;
	uint32_t n;
	int err;
	if ((err = xdr_dec_len(x, bound, limit, 1, &n)))
		return err;
	if (xdr_dec_fixed_ref(x, n, &b)) {
		*x = save;
		return -EBADMSG;
	}
	*p = b;
	*len = n;
	return 0;
}

int xdr_dec_string_lim(struct xdr_dec *x, uint32_t bound, uint32_t limit, const char **s,
		       uint32_t *len)
{
	struct xdr_dec save = *x;
	const uint8_t *p;
	int err;
	if ((err = xdr_dec_opaque_lim(x, bound, limit, &p, len)))
		return err;
	if (*len && memchr(p, 0, *len)) {
		*x = save;
		return -EBADMSG;
	}
	*s = (const char *)p;
	return 0;
}

int xdr_dec_more(struct xdr_dec *x, size_t min_size, bool *more)
{
	struct xdr_dec save = *x;
	if (xdr_dec_bool(x, more))
		return -EBADMSG;
	if (*more && min_size > xdr_dec_remaining(x)) {
		*x = save;
		return -EBADMSG;
	}
	return 0;
}

void *xdr_dec_alloc(struct xdr_dec *x, size_t n, size_t size)
{
	return x->arena ? xdr_arena_alloc(x->arena, n, size) : NULL;
}

/* ---- decode arenas ----------------------------------------------------- */

struct xdr_arena_chunk {
	struct xdr_arena_chunk *next;
	size_t size; /* of data */
	max_align_t data[];
};

#define ARENA_ALIGN _Alignof(max_align_t)
#define ARENA_MIN_CHUNK 4096

void xdr_arena_init(struct xdr_arena *a, void *buf, size_t size, size_t cap)
{
	memset(a, 0, sizeof(*a));
	a->first = buf;
	a->first_size = buf ? size : 0;
	a->cur = a->first;
	a->size = a->first_size;
	a->cap = cap;
}

void *xdr_arena_alloc(struct xdr_arena *a, size_t n, size_t size)
{
	if (size && n > (SIZE_MAX / 2) / size)
		return NULL;
	size_t bytes = n * size;
	size_t at = (a->used + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	if (!a->cur || at > a->size || bytes > a->size - at) {
		/* a new chunk: twice the last one (fewer mallocs for a
		 * growing decode), or just what is needed near the cap */
		size_t want = a->chunks ? a->chunks->size * 2 : ARENA_MIN_CHUNK;
		if (want < bytes)
			want = bytes;
		if (want > a->cap || a->held > a->cap - want)
			want = bytes;
		if (want > a->cap || a->held > a->cap - want)
			return NULL;
		struct xdr_arena_chunk *c = xmalloc(sizeof(*c) + want);
		c->size = want;
		c->next = a->chunks;
		a->chunks = c;
		a->held += want;
		a->cur = (uint8_t *)c->data;
		a->size = want;
		at = 0;
	}
	void *p = a->cur + at;
	a->used = at + bytes;
	if (bytes)
		memset(p, 0, bytes);
	return p;
}

void xdr_arena_reset(struct xdr_arena *a)
{
	while (a->chunks) {
		struct xdr_arena_chunk *c = a->chunks;
		a->chunks = c->next;
		free(c);
	}
	a->held = 0;
	a->used = 0;
	a->cur = a->first;
	a->size = a->first_size;
}

/* ---- encoding ---------------------------------------------------------- */

void xdr_enc_init(struct xdr_enc *x, size_t max)
{
	memset(x, 0, offsetof(struct xdr_enc, ext));
	x->max = max;
	x->buf_owned = true;
}

void xdr_enc_init_buf(struct xdr_enc *x, void *buf, size_t cap, size_t max)
{
	memset(x, 0, offsetof(struct xdr_enc, ext));
	x->buf = buf;
	x->cap = cap;
	x->max = max;
	x->buf_owned = false;
}

void xdr_enc_set_max(struct xdr_enc *x, size_t max)
{
	BUG_ON(xdr_enc_len(x) > max);
	x->max = max;
}

void xdr_enc_destroy(struct xdr_enc *x)
{
	if (x->buf_owned)
		free(x->buf);
	x->buf = NULL;
	x->len = x->cap = x->ext_bytes = 0;
	x->next = 0;
}

/* Make room for n more inline bytes; -EMSGSIZE past max (invariant 4). */
static int room(struct xdr_enc *x, size_t n)
{
	if (n > x->max || xdr_enc_len(x) > x->max - n)
		return -EMSGSIZE;
	if (x->len + n <= x->cap)
		return 0;
	size_t cap = x->cap ? x->cap * 2 : 256;
	while (cap < x->len + n)
		cap *= 2;
	if (x->buf_owned) {
		x->buf = xrealloc(x->buf, cap);
	} else {
		uint8_t *nb = xmalloc(cap);
		if (x->len)
			memcpy(nb, x->buf, x->len);
		x->buf = nb;
		x->buf_owned = true;
	}
	x->cap = cap;
	return 0;
}

int xdr_enc_u32(struct xdr_enc *x, uint32_t v)
{
	if (room(x, 4))
		return -EMSGSIZE;
	put_be32(x->buf + x->len, v);
	x->len += 4;
	return 0;
}

int xdr_enc_i32(struct xdr_enc *x, int32_t v)
{
	return xdr_enc_u32(x, (uint32_t)v);
}

int xdr_enc_u64(struct xdr_enc *x, uint64_t v)
{
	if (room(x, 8))
		return -EMSGSIZE;
	put_be32(x->buf + x->len, (uint32_t)(v >> 32));
	put_be32(x->buf + x->len + 4, (uint32_t)v);
	x->len += 8;
	return 0;
}

int xdr_enc_i64(struct xdr_enc *x, int64_t v)
{
	return xdr_enc_u64(x, (uint64_t)v);
}

int xdr_enc_bool(struct xdr_enc *x, bool v)
{
	return xdr_enc_u32(x, v ? 1 : 0);
}

int xdr_enc_float(struct xdr_enc *x, float v)
{
	uint32_t u;
	memcpy(&u, &v, sizeof(u));
	return xdr_enc_u32(x, u);
}

int xdr_enc_double(struct xdr_enc *x, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof(u));
	return xdr_enc_u64(x, u);
}

int xdr_enc_fixed(struct xdr_enc *x, const void *buf, size_t len)
{
	size_t pad = XDR_PAD(len);
	if (len > SIZE_MAX - 4 || room(x, len + pad))
		return -EMSGSIZE;
	if (!len)
		return 0; /* nothing to write; buf may still be unallocated */
	memcpy(x->buf + x->len, buf, len);
	memset(x->buf + x->len + len, 0, pad);
	x->len += len + pad;
	return 0;
}

int xdr_enc_opaque(struct xdr_enc *x, const void *buf, uint32_t len)
{
	struct xdr_mark m = xdr_enc_mark(x);
	if (xdr_enc_u32(x, len) || xdr_enc_fixed(x, buf, len)) {
		xdr_enc_rollback(x, m);
		return -EMSGSIZE;
	}
	return 0;
}

int xdr_enc_string(struct xdr_enc *x, const char *s)
{
	size_t len = strlen(s);
	if (len > UINT32_MAX)
		return -EMSGSIZE;
	return xdr_enc_opaque(x, s, (uint32_t)len);
}

int xdr_enc_opaque_iov(struct xdr_enc *x, const struct iovec *iov, unsigned n)
{
	struct xdr_mark m = xdr_enc_mark(x);
	size_t total = 0;
	unsigned segs = 0;
	for (unsigned i = 0; i < n; i++) {
		if (iov[i].iov_len > UINT32_MAX - total)
			return -EMSGSIZE;
		total += iov[i].iov_len;
		segs += iov[i].iov_len != 0;
	}
	if (segs > XDR_MAX_EXT - x->next)
		return -EMSGSIZE;
	if (xdr_enc_u32(x, (uint32_t)total))
		return -EMSGSIZE;
	/* the padding is inline, after the segments: check it all fits first */
	if (total > x->max || xdr_enc_len(x) > x->max - total ||
	    xdr_enc_len(x) + total > x->max - XDR_PAD(total)) {
		xdr_enc_rollback(x, m);
		return -EMSGSIZE;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!iov[i].iov_len)
			continue;
		x->ext[x->next].at = x->len;
		x->ext[x->next].iov = iov[i];
		x->next++;
		x->ext_bytes += iov[i].iov_len;
	}
	if (room(x, XDR_PAD(total))) {
		xdr_enc_rollback(x, m);
		return -EMSGSIZE;
	}
	memset(x->buf + x->len, 0, XDR_PAD(total));
	x->len += XDR_PAD(total);
	return 0;
}

int xdr_enc_opaque_splice(struct xdr_enc *x, const void *p, uint32_t len)
{
	if (!len || x->next == XDR_MAX_EXT)
		return xdr_enc_opaque(x, p, len);
	/* the stream never writes through the segment (invariant 6) */
	struct iovec iov = {.iov_base = (void *)p, .iov_len = len};
	return xdr_enc_opaque_iov(x, &iov, 1);
}

int xdr_enc_append(struct xdr_enc *x, const struct xdr_enc *src)
{
	struct xdr_mark m = xdr_enc_mark(x);
	size_t pos = 0;
	if (src->next > XDR_MAX_EXT - x->next)
		return -EMSGSIZE;
	for (unsigned i = 0; i <= src->next; i++) {
		size_t upto = i < src->next ? src->ext[i].at : src->len;
		if (upto > pos) {
			if (room(x, upto - pos)) {
				xdr_enc_rollback(x, m);
				return -EMSGSIZE;
			}
			memcpy(x->buf + x->len, src->buf + pos, upto - pos);
			x->len += upto - pos;
			pos = upto;
		}
		if (i < src->next) {
			size_t n = src->ext[i].iov.iov_len;
			if (n > x->max || xdr_enc_len(x) > x->max - n) {
				xdr_enc_rollback(x, m);
				return -EMSGSIZE;
			}
			x->ext[x->next].at = x->len;
			x->ext[x->next].iov = src->ext[i].iov;
			x->next++;
			x->ext_bytes += n;
		}
	}
	return 0;
}

int xdr_enc_reserve(struct xdr_enc *x, size_t n, size_t *off)
{
	BUG_ON(n & 3);
	if (room(x, n))
		return -EMSGSIZE;
	if (n)
		memset(x->buf + x->len, 0, n);
	*off = x->len;
	x->len += n;
	return 0;
}

void xdr_enc_put_u32_at(struct xdr_enc *x, size_t off, uint32_t v)
{
	BUG_ON(off + 4 > x->len);
	put_be32(x->buf + off, v);
}

struct xdr_mark xdr_enc_mark(const struct xdr_enc *x)
{
	return (struct xdr_mark){.len = x->len, .ext_bytes = x->ext_bytes, .next = x->next};
}

void xdr_enc_rollback(struct xdr_enc *x, struct xdr_mark m)
{
	BUG_ON(m.len > x->len || m.next > x->next);
	x->len = m.len;
	x->ext_bytes = m.ext_bytes;
	x->next = m.next;
}

int xdr_enc_iov(const struct xdr_enc *x, struct iovec *iov, int max)
{
	int n = 0;
	size_t pos = 0;
	for (unsigned i = 0; i <= x->next; i++) {
		size_t upto = i < x->next ? x->ext[i].at : x->len;
		if (upto > pos) {
			if (n == max)
				return -ENOSPC;
			iov[n].iov_base = x->buf + pos;
			iov[n].iov_len = upto - pos;
			n++;
			pos = upto;
		}
		if (i < x->next) {
			if (n == max)
				return -ENOSPC;
			iov[n++] = x->ext[i].iov;
		}
	}
	return n;
}

void xdr_enc_flatten(const struct xdr_enc *x, void *dst)
{
	uint8_t *d = dst;
	size_t pos = 0;
	for (unsigned i = 0; i <= x->next; i++) {
		size_t upto = i < x->next ? x->ext[i].at : x->len;
		if (upto > pos) {
			memcpy(d, x->buf + pos, upto - pos);
			d += upto - pos;
			pos = upto;
		}
		if (i < x->next) {
			memcpy(d, x->ext[i].iov.iov_base, x->ext[i].iov.iov_len);
			d += x->ext[i].iov.iov_len;
		}
	}
}
