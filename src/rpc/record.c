/*
 * record.c - record-marking reassembly. See record.h for the states and
 * invariants.
 */
#include "rpc/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/iobuf.h"
#include "base/mem.h"
#include "base/msg.h"

void rec_init(struct rec_asm *r, size_t max_record)
{
	memset(r, 0, sizeof(*r));
	r->max_record = max_record;
}

void rec_destroy(struct rec_asm *r)
{
	iobuf_free(r->base);
	r->base = r->buf = NULL;
	r->len = r->cap = r->lead = 0;
}

void rec_align(struct rec_asm *r, size_t off)
{
	r->align_next = off;
}

/* Grow the buffer for n more body bytes (invariant 2), keeping this
 * record's alignment (invariant 4). The buffer moves: a new one, the bytes
 * so far copied over, the old one freed (a large one goes back to the
 * buffer cache, base/iobuf.h, whose pages are mapped already). */
static void reserve(struct rec_asm *r, size_t n)
{
	if (r->len + n <= r->cap)
		return;
	size_t want;
	if (r->len >= REC_EAGER) {
		/* past REC_EAGER: the rest of the fragment at once */
		want = r->len + r->frag_left;
	} else {
		want = MAX(r->cap * 2, r->len + n);
		/* never beyond what this fragment can still bring */
		want = MIN(want, r->len + r->frag_left);
	}
	want = MAX(want, r->len + n);
	if (!r->base)
		r->align_off = r->align_next;
	uint8_t *base = iobuf_alloc(want + (r->align_off ? REC_ALIGN - 1 : 0));
	size_t lead = 0;
	if (r->align_off) {
		size_t mis = ((uintptr_t)base + r->align_off) % REC_ALIGN;
		lead = mis ? REC_ALIGN - mis : 0;
	}
	if (r->len)
		memcpy(base + lead, r->buf, r->len);
	r->copied += r->len;
	iobuf_free(r->base);
	r->base = base;
	r->lead = lead;
	r->buf = base + lead;
	r->cap = want;
}

static int header_done(struct rec_asm *r)
{
	uint32_t h = (uint32_t)r->hdr[0] << 24 | (uint32_t)r->hdr[1] << 16 |
		     (uint32_t)r->hdr[2] << 8 | r->hdr[3];
	uint32_t flen = h & REC_LEN_MASK;
	r->hdr_have = 0;
	r->last = h & REC_LAST_FRAG;
	if (flen > r->max_record || r->len > r->max_record - flen) {
		r->error = -EMSGSIZE; /* invariant 1 */
		return r->error;
	}
	r->frag_left = flen;
	r->in_body = true;
	r->nfrags++;
	return 0;
}

/* The body of the current fragment is complete. */
static int body_done(struct rec_asm *r)
{
	r->in_body = false;
	if (r->last) {
		r->done = true;
		return 1;
	}
	return 0;
}

int rec_feed(struct rec_asm *r, const uint8_t *data, size_t len, size_t *used)
{
	size_t pos = 0;
	int ret = 0;
	BUG_ON(r->done);
	if (r->error) {
		*used = 0;
		return r->error;
	}
	while (pos < len) {
		if (!r->in_body) {
			r->hdr[r->hdr_have++] = data[pos++];
			if (r->hdr_have < 4)
				continue;
			ret = header_done(r);
			if (ret < 0)
				break;
			if (r->frag_left == 0 && (ret = body_done(r)) == 1)
				break;
			continue;
		}
		size_t n = MIN(len - pos, (size_t)r->frag_left);
		reserve(r, n);
		memcpy(r->buf + r->len, data + pos, n);
		r->len += n;
		r->frag_left -= (uint32_t)n;
		pos += n;
		if (r->frag_left == 0 && (ret = body_done(r)) == 1)
			break;
	}
	*used = pos;
	return ret < 0 ? ret : ret == 1;
}

size_t rec_direct(struct rec_asm *r, uint8_t **space)
{
	if (!r->in_body || r->error || r->done || !r->frag_left)
		return 0;
	/* grow with what has arrived, not with what the header claims
	 * (invariant 2: up to REC_EAGER, then the rest of the fragment) */
	size_t n = r->len < REC_EAGER ? MIN((size_t)r->frag_left, REC_EAGER - r->len) : r->frag_left;
	reserve(r, n);
	*space = r->buf + r->len;
	return MIN(r->cap - r->len, (size_t)r->frag_left);
}

int rec_direct_commit(struct rec_asm *r, size_t n)
{
	BUG_ON(!r->in_body || n > r->frag_left || r->len + n > r->cap);
	r->len += n;
	r->frag_left -= (uint32_t)n;
	if (r->frag_left == 0)
		return body_done(r);
	return 0;
}

uint8_t *rec_take_at(struct rec_asm *r, size_t *len, void **alloc)
{
	BUG_ON(!r->done);
	uint8_t *buf = r->buf;
	*len = r->len;
	*alloc = r->base;
	if (!r->len) {
		iobuf_free(r->base);
		buf = NULL;
		*alloc = NULL;
	}
	r->base = r->buf = NULL;
	r->len = r->cap = r->lead = 0;
	r->done = false;
	r->nfrags = 0;
	r->copied = 0;
	return buf;
}

uint8_t *rec_take(struct rec_asm *r, size_t *len)
{
	void *alloc;
	uint8_t *buf = rec_take_at(r, len, &alloc);
	BUG_ON(buf != alloc); /* rec_align() callers use rec_take_at() */
	return buf;
}

bool rec_partial(const struct rec_asm *r)
{
	return r->hdr_have || r->in_body || r->len;
}
