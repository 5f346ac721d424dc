/*
 * fuzz_xdrgen.c - every generated decoder (src/xdr: NFSv4.1/4.2 with the
 * COMPOUND and callback types, the pNFS block layout types, NFSv3 and
 * MOUNT). The first 4 input bytes pick the type: the FNV-1a hash of its
 * name (the seeds, fuzz/corpus/xdrgen, written by tools/xdrgen/xdrseeds.py,
 * use it), or any other value modulo the number of types; the rest is the
 * encoding. Invariants (docs/xdr.md):
 *  - a decoder never reads outside the input nor writes outside its value
 *    (ASan: the value is a heap block of exactly the type's size) and
 *    returns 0, -EBADMSG, -E2BIG or -ENOMSG, leaving the stream inside the
 *    input;
 *  - what it allocates comes from the arena, within the arena's cap;
 *  - a value that decodes encodes again, to the bytes it was decoded from
 *    (padding aside, which the encoder writes as zeros), and that encoding
 *    decodes and encodes to itself: decoder and encoder are inverses.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "xdr/mount3.h"
#include "xdr/nfs3.h"
#include "xdr/nfs4.h"
#include "xdr/pnfs_block.h"

#define ARENA_CAP (1u << 20)

struct table {
	const struct xdr_type *types;
	const unsigned *n;
};

static const struct table tables[] = {
	{nfs4_xdr_types, &nfs4_xdr_ntypes},
	{pnfs_block_xdr_types, &pnfs_block_xdr_ntypes},
	{nfs3_xdr_types, &nfs3_xdr_ntypes},
	{mount3_xdr_types, &mount3_xdr_ntypes},
};

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 0x811c9dc5;
	while (*s)
		h = (h ^ (uint8_t)*s++) * 0x01000193;
	return h;
}

#define MAX_TYPES 1024
static uint32_t hashes[MAX_TYPES];
static const struct xdr_type *all[MAX_TYPES];
static unsigned ntypes;

static const struct xdr_type *pick(uint32_t sel)
{
	if (!ntypes) {
		for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
			for (unsigned i = 0; i < *tables[t].n; i++) {
				FUZZ_CHECK(ntypes < MAX_TYPES);
				all[ntypes] = &tables[t].types[i];
				hashes[ntypes++] = fnv1a(tables[t].types[i].name);
			}
	}
	for (unsigned i = 0; i < ntypes; i++)
		if (hashes[i] == sel)
			return all[i];
	return all[sel % ntypes];
}

/* Decode data as type into a fresh value (from arena a); *used: bytes read. */
static int decode(const struct xdr_type *type, const uint8_t *data, size_t size,
		  struct xdr_arena *a, void **v, size_t *used)
{
	struct xdr_dec x;
	xdr_dec_init(&x, data, size);
	x.arena = a;
	*v = calloc(1, type->size);
	FUZZ_CHECK(*v != NULL);
	int err = type->dec(&x, *v);
	FUZZ_CHECK(err == 0 || err == -EBADMSG || err == -E2BIG || err == -ENOMSG);
	FUZZ_CHECK(x.p >= data && x.p <= data + size);
	FUZZ_CHECK(xdr_arena_held(a) <= ARENA_CAP);
	*used = (size_t)(x.p - data);
	return err;
}

/* Encode v; returns the flattened bytes (malloc'd) and their length. */
static uint8_t *encode(const struct xdr_type *type, const void *v, size_t max, size_t *len)
{
	struct xdr_enc e;
	xdr_enc_init(&e, max);
	FUZZ_CHECK(type->enc(&e, v) == 0);
	*len = xdr_enc_len(&e);
	uint8_t *flat = malloc(*len ? *len : 1);
	FUZZ_CHECK(flat != NULL);
	xdr_enc_flatten(&e, flat);
	xdr_enc_destroy(&e);
	return flat;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint32_t sel = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 |
		       data[3];
	const struct xdr_type *type = pick(sel);
	const uint8_t *body = data + 4;
	size_t blen = size - 4;

	struct xdr_arena a1, a2;
	uint8_t first[512]; /* most values fit: no heap at all */
	xdr_arena_init(&a1, first, sizeof(first), ARENA_CAP);
	xdr_arena_init(&a2, NULL, 0, ARENA_CAP);
	void *v, *w;
	size_t used, len, used2, len2;
	if (decode(type, body, blen, &a1, &v, &used)) {
		free(v);
		xdr_arena_reset(&a1);
		return 0;
	}

	/* back to the bytes it came from, zero padding aside */
	uint8_t *enc = encode(type, v, used + 64, &len);
	FUZZ_CHECK(len == used);
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK(enc[i] == body[i] || enc[i] == 0);

	/* and that encoding is a fixed point */
	FUZZ_CHECK(decode(type, enc, len, &a2, &w, &used2) == 0);
	FUZZ_CHECK(used2 == len);
	uint8_t *enc2 = encode(type, w, len + 64, &len2);
	FUZZ_CHECK(len2 == len && memcmp(enc, enc2, len) == 0);

	free(enc2);
	free(enc);
	free(w);
	free(v);
	xdr_arena_reset(&a2);
	xdr_arena_reset(&a1);
	return 0;
}
