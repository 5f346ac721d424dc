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
 *  7. Decoding allocates only from the arena attached to the stream (none:
 *     nothing can be allocated), only after the bytes the allocation stands
 *     for are known to be in the stream, and never past the arena's cap.
 *     Releasing what a decode allocated is resetting its arena: nothing a
 *     decoder allocates is freed one by one, so a decode that fails half
 *     way leaks nothing.
 *
 * Generated codecs (xdr/<spec>.h, built from src/xdr/<spec>.x by
 * tools/xdrgen; docs/xdr.md) use the helpers marked "for generated
 * codecs" below. Their decoders return 0, -EBADMSG (not a valid encoding),
 * -E2BIG (valid, but over a limit of this project: a configured bound or
 * the arena's cap) or -ENOMSG (a union whose discriminant is an open
 * enumeration met a value it has no arm for; the discriminant is stored).
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

struct xdr_arena;

struct xdr_dec {
	const uint8_t *p;   /* next byte to decode */
	const uint8_t *end; /* one past the last byte */
	struct xdr_arena *arena; /* where decoders allocate (invariant 7); NULL: nowhere */
	/* the largest opaque of at least XDR_BULK_MIN bytes decoded without
	 * copying (WRITE data), NULL if none: where the transport would have
	 * it land aligned in the next record (svc.c) */
	const uint8_t *bulk;
	size_t bulk_len;
};

#define XDR_BULK_MIN 4096

/* A stream over buf, without an arena. */
void xdr_dec_init(struct xdr_dec *x, const void *buf, size_t len);

/* Where x's bulk opaque (struct xdr_dec.bulk) begins in buf, the buffer x
 * was made over; 0 if it has none. */
size_t xdr_dec_bulk_off(const struct xdr_dec *x, const void *buf);

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

/* ---- decoding: for generated codecs ------------------------------------ */

/*
 * The count of a variable-length array: -EBADMSG when it exceeds the
 * protocol's bound or the bytes left cannot hold n elements of at least
 * min_size bytes each, -E2BIG when it only exceeds limit (<= bound), the
 * bound this project configured.
 */
int xdr_dec_len(struct xdr_dec *x, uint32_t bound, uint32_t limit, size_t min_size, uint32_t *n);
/* opaque<bound> and string<bound> without copying, with the errors of
 * xdr_dec_len(); strings with an embedded NUL are -EBADMSG. */
int xdr_dec_opaque_lim(struct xdr_dec *x, uint32_t bound, uint32_t limit, const uint8_t **p,
		       uint32_t *len);
int xdr_dec_string_lim(struct xdr_dec *x, uint32_t bound, uint32_t limit, const char **s,
		       uint32_t *len);
/* The flag before optional data (T *): when set, at least min_size bytes
 * must follow (-EBADMSG otherwise), so an allocation for it is earned. */
int xdr_dec_more(struct xdr_dec *x, size_t min_size, bool *more);
/* n zeroed elements of size bytes from the stream's arena; NULL when there
 * is no arena or its cap would be exceeded (the decoder answers -E2BIG). */
void *xdr_dec_alloc(struct xdr_dec *x, size_t n, size_t size);

/* ---- decode arenas ----------------------------------------------------- */

/*
 * A bump allocator for decoded data (invariant 7): allocations are carved
 * from a caller-provided first buffer (e.g. inside a request), then from
 * heap chunks, never holding more than cap heap bytes. Everything is freed
 * at once by xdr_arena_reset(). Not thread safe: one arena per decode.
 */
struct xdr_arena_chunk;

struct xdr_arena {
	uint8_t *cur;                   /* the buffer being carved */
	size_t used, size;              /* bytes of it taken, its size */
	size_t held, cap;               /* heap bytes held in chunks, the most allowed */
	struct xdr_arena_chunk *chunks; /* heap chunks, newest first */
	uint8_t *first;                 /* the caller's buffer (or NULL) */
	size_t first_size;
};

void xdr_arena_init(struct xdr_arena *a, void *buf, size_t size, size_t cap);
/* n * size zeroed bytes aligned for any type, or NULL past the cap. */
void *xdr_arena_alloc(struct xdr_arena *a, size_t n, size_t size);
/* Free the heap chunks: everything allocated is gone, the arena is empty. */
void xdr_arena_reset(struct xdr_arena *a);

static inline size_t xdr_arena_held(const struct xdr_arena *a)
{
	return a->held;
}

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

/* For generated codecs: variable-length opaque whose bytes stay valid until
 * the message is sent (invariant 6), spliced in without copying while a
 * segment is free and copied otherwise; the bytes on the wire are the same. */
int xdr_enc_opaque_splice(struct xdr_enc *x, const void *p, uint32_t len);

/* Append every byte src encoded, its external segments spliced in as
 * they are (they must outlive x's message as they do src's: invariant 6). */
int xdr_enc_append(struct xdr_enc *x, const struct xdr_enc *src);

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

/* ---- type tables --------------------------------------------------------- */

/* A named XDR type with its codecs, as a generated spec lists all of its
 * types (<spec>_xdr_types[] in xdr/<spec>.h): for fuzzing and tests. */
struct xdr_type {
	const char *name;
	size_t size; /* of the C type */
	int (*dec)(struct xdr_dec *x, void *v);
	int (*enc)(struct xdr_enc *x, const void *v);
};

#endif
