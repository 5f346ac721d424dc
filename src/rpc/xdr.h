/*
 * xdr.h - bounded XDR streams (RFC 4506).
 *
 * Design note.
 *
 * Decoding reads from a struct xdr_dec, a window [p, end) over bytes the
 * caller owns (for a call: the request's record buffer, which lives until
 * the request is released). Encoding appends to a struct xdr_enc, a growable
 * buffer with a hard maximum, plus up to XDR_MAX_EXT external segments that
 * are spliced in without copying (READ data).
 *
 * Invariants:
 *  1. No decode helper reads outside [p, end). Every helper returns 0 or
 *     -EBADMSG, and a helper that fails leaves the stream where it was
 *     (the caller normally abandons the message: GARBAGE_ARGS). Nothing
 *     outside this file does pointer arithmetic on XDR data.
 *  2. Every length read from the wire is checked against an explicit
 *     maximum given by the caller and against the bytes remaining, before
 *     anything is copied or allocated.
 *  3. Array counts are checked against a maximum and against the remaining
 *     bytes (each element takes at least min_elem bytes), so a hostile count
 *     cannot make the caller allocate more than the message could fill.
 *  4. Encoding never exceeds the stream's max; a helper that would returns
 *     -EMSGSIZE and leaves the stream as it was before that helper.
 *  5. A mark taken with xdr_enc_mark() and handed to xdr_enc_rollback()
 *     restores the stream exactly, external segments included, so a reply
 *     that fails half way can be replaced by an error reply.
 *  6. Encoders never take ownership of external segments: the bytes must
 *     stay valid until the encoded message is sent, which for an RPC reply
 *     means until the procedure's release hook runs.
 */
#ifndef JNFS_RPC_XDR_H
#define JNFS_RPC_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define XDR_UNIT 4
/* Bytes of padding that follow len bytes of opaque data. */
#define XDR_PAD(len) ((XDR_UNIT - ((len)&3)) & 3)

/* ---- decoding ---------------------------------------------------------- */

struct xdr_dec {
	const uint8_t *p;   /* next byte to decode */
	const uint8_t *end; /* one past the last byte */
};

void xdr_dec_init(struct xdr_dec *x, const void *buf, size_t len);

static inline size_t xdr_dec_remaining(const struct xdr_dec *x)
{
	return (size_t)(x->end - x->p);
}

int xdr_dec_u32(struct xdr_dec *x, uint32_t *v);
int xdr_dec_i32(struct xdr_dec *x, int32_t *v);
int xdr_dec_u64(struct xdr_dec *x, uint64_t *v);
int xdr_dec_i64(struct xdr_dec *x, int64_t *v);
/* Only 0 and 1 are valid booleans; anything else is -EBADMSG. */
int xdr_dec_bool(struct xdr_dec *x, bool *v);
int xdr_dec_float(struct xdr_dec *x, float *v);
int xdr_dec_double(struct xdr_dec *x, double *v);

/* Fixed-length opaque[len]: copy into buf, skip the padding. */
int xdr_dec_fixed(struct xdr_dec *x, void *buf, size_t len);
/* Fixed-length opaque without copying: *p points into the stream's buffer. */
int xdr_dec_fixed_ref(struct xdr_dec *x, size_t len, const void **p);

/* Variable-length opaque<max>: copy into buf (which holds max bytes). */
int xdr_dec_opaque(struct xdr_dec *x, void *buf, uint32_t max, uint32_t *len);
/* Variable-length opaque<max> without copying; *p lives as long as the
 * stream's buffer. */
int xdr_dec_opaque_ref(struct xdr_dec *x, uint32_t max, const void **p, uint32_t *len);
/* The same as an iovec, for payloads handed to writev/pwritev (WRITE data). */
int xdr_dec_opaque_iov(struct xdr_dec *x, uint32_t max, struct iovec *iov);

/* string<max>: copy into buf (max + 1 bytes) and NUL-terminate. An embedded
 * NUL byte is -EBADMSG: no name may hide a suffix from C string functions. */
int xdr_dec_string(struct xdr_dec *x, char *buf, uint32_t max);
/* string<max> without copying (not NUL-terminated). Embedded NUL rejected. */
int xdr_dec_string_ref(struct xdr_dec *x, uint32_t max, const char **s, uint32_t *len);

/* Array/list count: *n <= max and n * min_elem <= remaining bytes. */
int xdr_dec_count(struct xdr_dec *x, uint32_t max, size_t min_elem, uint32_t *n);

/* Skip len bytes of opaque data and its padding. */
int xdr_dec_skip(struct xdr_dec *x, size_t len);

/* ---- encoding ---------------------------------------------------------- */

#define XDR_MAX_EXT 16

struct xdr_ext {
	size_t at;         /* offset in buf where the segment is spliced in */
	struct iovec iov;  /* not owned by the stream (invariant 6) */
};

struct xdr_enc {
	uint8_t *buf;      /* inline bytes */
	size_t len;        /* bytes used in buf */
	size_t cap;        /* bytes allocated in buf */
	size_t max;        /* maximum total encoded size (buf + external) */
	size_t ext_bytes;  /* bytes in external segments */
	bool buf_owned;    /* buf is ours to realloc/free */
	unsigned next;
	struct xdr_ext ext[XDR_MAX_EXT];
};

struct xdr_mark {
	size_t len, ext_bytes;
	unsigned next;
};

/* An empty stream that allocates on first use and never exceeds max bytes. */
void xdr_enc_init(struct xdr_enc *x, size_t max);
/* Start in a caller-provided buffer (e.g. on the stack or inside a request);
 * the stream moves to the heap if it outgrows it. */
void xdr_enc_init_buf(struct xdr_enc *x, void *buf, size_t cap, size_t max);
/* Change the maximum, e.g. to a reply's bound once it is known; what is
 * encoded already must fit. */
void xdr_enc_set_max(struct xdr_enc *x, size_t max);
void xdr_enc_destroy(struct xdr_enc *x);

static inline size_t xdr_enc_len(const struct xdr_enc *x)
{
	return x->len + x->ext_bytes;
}

int xdr_enc_u32(struct xdr_enc *x, uint32_t v);
int xdr_enc_i32(struct xdr_enc *x, int32_t v);
int xdr_enc_u64(struct xdr_enc *x, uint64_t v);
int xdr_enc_i64(struct xdr_enc *x, int64_t v);
int xdr_enc_bool(struct xdr_enc *x, bool v);
int xdr_enc_float(struct xdr_enc *x, float v);
int xdr_enc_double(struct xdr_enc *x, double v);
int xdr_enc_fixed(struct xdr_enc *x, const void *buf, size_t len);
int xdr_enc_opaque(struct xdr_enc *x, const void *buf, uint32_t len);
int xdr_enc_string(struct xdr_enc *x, const char *s);
/* Variable-length opaque whose bytes are the given segments, spliced in
 * without copying (invariant 6). The length word and padding are inline. */
int xdr_enc_opaque_iov(struct xdr_enc *x, const struct iovec *iov, unsigned n);

/* Reserve n inline bytes (a multiple of 4) to be filled in later with
 * xdr_enc_put_u32_at() (e.g. a count known only after the list). */
int xdr_enc_reserve(struct xdr_enc *x, size_t n, size_t *off);
void xdr_enc_put_u32_at(struct xdr_enc *x, size_t off, uint32_t v);

struct xdr_mark xdr_enc_mark(const struct xdr_enc *x);
void xdr_enc_rollback(struct xdr_enc *x, struct xdr_mark m);

/* Describe the encoded bytes as iovecs (at most 2 * next + 1 of them).
 * Returns the count, or -ENOSPC when max is too small. */
int xdr_enc_iov(const struct xdr_enc *x, struct iovec *iov, int max);
/* Copy every encoded byte to dst (xdr_enc_len() bytes). */
void xdr_enc_flatten(const struct xdr_enc *x, void *dst);

#endif
