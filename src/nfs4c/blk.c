/*
 * blk.c - volume topologies, signatures, layout extents and the client's
 * extent map of the pNFS block layout (blk.h has the design and the
 * invariants).
 *
 * The map's lists are small sorted arrays. Every change builds the new
 * lists beside the old ones and swaps them in only when the bound holds
 * (invariant 3), so a failure leaves the map as it was; then neighbours
 * that continue each other (same state and device, contiguous storage)
 * are merged, which keeps a file written in small pieces at a few extents.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/mem.h"
#include "nfs4c/blk.h"

#define DECODE_ARENA_CAP (1u << 20)

static uint64_t ext_end(const struct nfs4c_blk_ext *e)
{
	return e->foff + e->len;
}

static bool has_storage(pnfs_block_extent_state4 s)
{
	return s != PNFS_BLOCK_NONE_DATA;
}

/* ---- volumes ---------------------------------------------------------- */

void nfs4c_blk_topo_free(struct nfs4c_blk_topo *t)
{
	for (unsigned i = 0; i < t->nvol; i++) {
		struct nfs4c_blk_vol *v = &t->vol[i];
		for (unsigned k = 0; v->sig && k < v->nsig; k++)
			free(v->sig[k].bytes);
		free(v->sig);
		v->sig = NULL;
		v->nsig = 0;
	}
	t->nvol = 0;
}

/* Volume i may only be built from volumes before it (blk.h). */
static int subs_copy(struct nfs4c_blk_vol *v, unsigned i, const uint32_t *sub, uint32_t n)
{
	if (n == 0)
		return -EBADMSG;
	if (n > NFS4C_BLK_MAX_SUBS)
		return -E2BIG;
	for (uint32_t k = 0; k < n; k++) {
		if (sub[k] >= i)
			return -EBADMSG;
		v->sub[k] = sub[k];
	}
	v->nsub = n;
	return 0;
}

static int vol_copy(struct nfs4c_blk_vol *v, unsigned i, const struct pnfs_block_volume4 *w)
{
	v->type = w->type;
	v->disk = -1;
	switch (w->type) {
	case PNFS_BLOCK_VOLUME_SIMPLE: {
		const struct pnfs_block_simple_volume_info4 *s = &w->bv_simple_info;
		if (s->bsv_ds.len == 0)
			return -EBADMSG; /* nothing to find it by */
		v->sig = xcalloc(s->bsv_ds.len, sizeof(*v->sig));
		v->nsig = s->bsv_ds.len;
		for (uint32_t k = 0; k < s->bsv_ds.len; k++) {
			const struct pnfs_block_sig_component4 *c = &s->bsv_ds.val[k];
			if (c->bsc_contents.len == 0)
				return -EBADMSG;
			v->sig[k].off = c->bsc_sig_offset;
			v->sig[k].len = c->bsc_contents.len;
			v->sig[k].bytes = xmalloc(c->bsc_contents.len);
			memcpy(v->sig[k].bytes, c->bsc_contents.val, c->bsc_contents.len);
		}
		return 0;
	}
	case PNFS_BLOCK_VOLUME_SLICE: {
		uint32_t sub = w->bv_slice_info.bsv_volume;
		v->start = w->bv_slice_info.bsv_start;
		v->length = w->bv_slice_info.bsv_length;
		if (v->start + v->length < v->start)
			return -EBADMSG;
		return subs_copy(v, i, &sub, 1);
	}
	case PNFS_BLOCK_VOLUME_CONCAT:
		return subs_copy(v, i, w->bv_concat_info.bcv_volumes.val,
				 w->bv_concat_info.bcv_volumes.len);
	case PNFS_BLOCK_VOLUME_STRIPE:
		v->unit = w->bv_stripe_info.bsv_stripe_unit;
		if (v->unit == 0)
			return -EBADMSG;
		return subs_copy(v, i, w->bv_stripe_info.bsv_volumes.val,
				 w->bv_stripe_info.bsv_volumes.len);
	}
	return -EBADMSG;
}

int nfs4c_blk_topo_decode(const uint8_t *body, uint32_t len, struct nfs4c_blk_topo *t)
{
	uint8_t first[2048] __attribute__((aligned(16)));
	struct xdr_arena arena;
	struct xdr_dec x;
	struct pnfs_block_deviceaddr4 da;

	memset(t, 0, sizeof(*t));
	xdr_arena_init(&arena, first, sizeof(first), DECODE_ARENA_CAP);
	xdr_dec_init(&x, body, len);
	x.arena = &arena;
	int err = pnfs_block_dec_pnfs_block_deviceaddr4(&x, &da);
	if (err == -ENOMSG || (!err && xdr_dec_remaining(&x)))
		err = -EBADMSG; /* an unknown volume type; bytes after the device */
	if (!err && da.bda_volumes.len == 0)
		err = -EBADMSG;
	if (!err && da.bda_volumes.len > NFS4C_BLK_MAX_VOLS)
		err = -E2BIG;
	for (uint32_t i = 0; !err && i < da.bda_volumes.len; i++) {
		t->nvol = i + 1; /* what nfs4c_blk_topo_free() releases */
		err = vol_copy(&t->vol[i], i, &da.bda_volumes.val[i]);
	}
	xdr_arena_reset(&arena);
	return err;
}

int nfs4c_blk_sig_match(const struct nfs4c_blk_sig *sig, unsigned nsig, unsigned disk,
			uint64_t disk_size, nfs4c_blk_read_fn rd, void *arg)
{
	uint8_t small[64];
	for (unsigned k = 0; k < nsig; k++) {
		const struct nfs4c_blk_sig *s = &sig[k];
		uint64_t off;
		if (s->off >= 0) {
			off = (uint64_t)s->off;
		} else {
			/* from the end: -1 is the last byte */
			uint64_t back =
				s->off == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-s->off;
			if (back > disk_size)
				return 0;
			off = disk_size - back;
		}
		if (off > disk_size || s->len > disk_size - off)
			return 0;
		uint8_t *buf = s->len <= sizeof(small) ? small : xmalloc(s->len);
		int err = rd(arg, disk, off, buf, s->len);
		bool same = !err && !memcmp(buf, s->bytes, s->len);
		if (buf != small)
			free(buf);
		if (err)
			return err;
		if (!same)
			return 0;
	}
	return 1;
}

int nfs4c_blk_topo_resolve(struct nfs4c_blk_topo *t, unsigned ndisk, const uint64_t *disk_size,
			   nfs4c_blk_read_fn rd, void *arg)
{
	/* volumes name only earlier ones: one pass in order sees every
	 * volume's parts resolved before the volume */
	for (unsigned i = 0; i < t->nvol; i++) {
		struct nfs4c_blk_vol *v = &t->vol[i];
		switch (v->type) {
		case PNFS_BLOCK_VOLUME_SIMPLE:
			v->disk = -1;
			for (unsigned d = 0; d < ndisk && v->disk < 0; d++) {
				int m = nfs4c_blk_sig_match(v->sig, v->nsig, d, disk_size[d], rd,
							    arg);
				if (m < 0)
					return m;
				if (m)
					v->disk = (int)d;
			}
			if (v->disk < 0)
				return -ENODEV;
			v->size = disk_size[v->disk];
			break;
		case PNFS_BLOCK_VOLUME_SLICE:
			if (v->start + v->length > t->vol[v->sub[0]].size)
				return -EBADMSG;
			v->size = v->length;
			break;
		case PNFS_BLOCK_VOLUME_CONCAT:
			v->size = 0;
			for (unsigned k = 0; k < v->nsub; k++) {
				uint64_t s = t->vol[v->sub[k]].size;
				if (v->size + s < v->size)
					return -EBADMSG;
				v->size += s;
			}
			break;
		case PNFS_BLOCK_VOLUME_STRIPE: {
			/* whole stripe units of the smallest part, on every part */
			uint64_t min = UINT64_MAX;
			for (unsigned k = 0; k < v->nsub; k++)
				min = MIN(min, t->vol[v->sub[k]].size);
			uint64_t rows = min / v->unit, size;
			if (__builtin_mul_overflow(rows, (uint64_t)v->nsub, &size) ||
			    __builtin_mul_overflow(size, v->unit, &size))
				return -EBADMSG;
			v->size = size;
			break;
		}
		}
	}
	return 0;
}

int nfs4c_blk_topo_map(const struct nfs4c_blk_topo *t, uint64_t off, uint64_t len, unsigned *disk,
		       uint64_t *disk_off, uint64_t *contig)
{
	if (t->nvol == 0)
		return -ERANGE;
	unsigned i = t->nvol - 1;
	/* each step goes to an earlier volume, so this ends (blk.h) */
	for (;;) {
		const struct nfs4c_blk_vol *v = &t->vol[i];
		if (off >= v->size)
			return -ERANGE;
		len = MIN(len, v->size - off);
		switch (v->type) {
		case PNFS_BLOCK_VOLUME_SIMPLE:
			*disk = (unsigned)v->disk;
			*disk_off = off;
			*contig = len;
			return 0;
		case PNFS_BLOCK_VOLUME_SLICE:
			off += v->start;
			i = v->sub[0];
			break;
		case PNFS_BLOCK_VOLUME_CONCAT: {
			unsigned k = 0;
			while (off >= t->vol[v->sub[k]].size) {
				off -= t->vol[v->sub[k]].size;
				k++; /* off < v->size: some part holds it */
			}
			len = MIN(len, t->vol[v->sub[k]].size - off);
			i = v->sub[k];
			break;
		}
		case PNFS_BLOCK_VOLUME_STRIPE: {
			uint64_t su = v->unit, stripe = off / su, in = off % su;
			i = v->sub[stripe % v->nsub];
			off = stripe / v->nsub * su + in;
			len = MIN(len, su - in);
			break;
		}
		}
	}
}

/* ---- extents ----------------------------------------------------------- */

int nfs4c_blk_layout_decode(const uint8_t *body, uint32_t len, layoutiomode4 iomode,
			    uint32_t blksize, struct nfs4c_blk_ext *out, unsigned max, unsigned *n)
{
	uint8_t first[2048] __attribute__((aligned(16)));
	struct xdr_arena arena;
	struct xdr_dec x;
	struct pnfs_block_layout4 lo;

	*n = 0;
	if (!blksize || (blksize & (blksize - 1)))
		return -EINVAL;
	xdr_arena_init(&arena, first, sizeof(first), DECODE_ARENA_CAP);
	xdr_dec_init(&x, body, len);
	x.arena = &arena;
	int err = pnfs_block_dec_pnfs_block_layout4(&x, &lo);
	if (err == -ENOMSG || (!err && xdr_dec_remaining(&x)))
		err = -EBADMSG;
	if (!err && lo.blo_extents.len > max)
		err = -E2BIG;
	for (uint32_t i = 0; !err && i < lo.blo_extents.len; i++) {
		const struct pnfs_block_extent4 *w = &lo.blo_extents.val[i];
		uint64_t mask = blksize - 1;
		bool storage = has_storage(w->bex_state);
		if (w->bex_length == 0 || w->bex_file_offset + w->bex_length < w->bex_file_offset ||
		    (w->bex_file_offset & mask) || (w->bex_length & mask) ||
		    (storage && ((w->bex_storage_offset & mask) ||
				 w->bex_storage_offset + w->bex_length < w->bex_storage_offset))) {
			err = -EBADMSG;
			break;
		}
		struct nfs4c_blk_ext *e = &out[i];
		memset(e, 0, sizeof(*e));
		e->foff = w->bex_file_offset;
		e->len = w->bex_length;
		e->soff = storage ? w->bex_storage_offset : 0;
		e->state = w->bex_state;
		e->iomode = iomode;
		memcpy(e->devid, w->bex_vol_id, NFS4_DEVICEID4_SIZE);
		*n = i + 1;
	}
	if (err)
		*n = 0;
	xdr_arena_reset(&arena);
	return err;
}

int nfs4c_blk_update_encode(struct xdr_enc *x, const struct nfs4c_blk_ext *e, unsigned n)
{
	struct pnfs_block_layoutupdate4 u;
	struct pnfs_block_extent4 *w = n ? calloc(n, sizeof(*w)) : NULL;
	if (n && !w)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		memcpy(w[i].bex_vol_id, e[i].devid, NFS4_DEVICEID4_SIZE);
		w[i].bex_file_offset = e[i].foff;
		w[i].bex_length = e[i].len;
		w[i].bex_storage_offset = e[i].soff;
		w[i].bex_state = PNFS_BLOCK_READ_WRITE_DATA;
	}
	u.blu_commit_list.len = n;
	u.blu_commit_list.val = w;
	int err = pnfs_block_enc_pnfs_block_layoutupdate4(x, &u);
	free(w);
	return err;
}

/* ---- a file's extent map ------------------------------------------------- */

void nfs4c_blk_map_init(struct nfs4c_blk_map *m)
{
	memset(m, 0, sizeof(*m));
}

static void list_free(struct nfs4c_blk_list *l)
{
	free(l->e);
	memset(l, 0, sizeof(*l));
}

void nfs4c_blk_map_destroy(struct nfs4c_blk_map *m)
{
	list_free(&m->rw);
	list_free(&m->ro);
}

unsigned nfs4c_blk_map_count(const struct nfs4c_blk_map *m)
{
	return m->rw.n + m->ro.n;
}

static void list_push(struct nfs4c_blk_list *l, const struct nfs4c_blk_ext *e)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->e = xrealloc(l->e, l->cap * sizeof(*l->e));
	}
	l->e[l->n++] = *e;
}

/* The part [from, to) of e (within it). */
static struct nfs4c_blk_ext ext_part(const struct nfs4c_blk_ext *e, uint64_t from, uint64_t to)
{
	struct nfs4c_blk_ext p = *e;
	p.foff = from;
	p.len = to - from;
	if (has_storage(e->state))
		p.soff = e->soff + (from - e->foff);
	return p;
}

static bool iomode_matches(layoutiomode4 want, const struct nfs4c_blk_ext *e)
{
	return want == LAYOUTIOMODE4_ANY || e->iomode == want;
}

/* Copy of in without [off, end) of the extents of iomode want. */
static void list_punch(const struct nfs4c_blk_list *in, layoutiomode4 want, uint64_t off,
		       uint64_t end, struct nfs4c_blk_list *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < in->n; i++) {
		const struct nfs4c_blk_ext *e = &in->e[i];
		if (ext_end(e) <= off || e->foff >= end || !iomode_matches(want, e)) {
			list_push(out, e);
			continue;
		}
		struct nfs4c_blk_ext p;
		if (e->foff < off) {
			p = ext_part(e, e->foff, off);
			list_push(out, &p);
		}
		if (ext_end(e) > end) {
			p = ext_part(e, end, ext_end(e));
			list_push(out, &p);
		}
	}
}

/* Does b continue a (one extent could say both)? */
static bool continues(const struct nfs4c_blk_ext *a, const struct nfs4c_blk_ext *b)
{
	if (ext_end(a) != b->foff || a->state != b->state || a->written != b->written ||
	    a->iomode != b->iomode || memcmp(a->devid, b->devid, NFS4_DEVICEID4_SIZE))
		return false;
	return !has_storage(a->state) || a->soff + a->len == b->soff;
}

static void list_merge(struct nfs4c_blk_list *l)
{
	unsigned w = 0;
	for (unsigned i = 0; i < l->n; i++) {
		if (w && continues(&l->e[w - 1], &l->e[i]))
			l->e[w - 1].len += l->e[i].len;
		else
			l->e[w++] = l->e[i];
	}
	l->n = w;
}

/* Swap in the new lists if the bound holds (invariant 3). */
static int map_commit(struct nfs4c_blk_map *m, struct nfs4c_blk_list *rw, struct nfs4c_blk_list *ro)
{
	list_merge(rw);
	list_merge(ro);
	if ((size_t)rw->n + ro->n > NFS4C_BLK_MAX_EXTENTS) {
		list_free(rw);
		list_free(ro);
		return -E2BIG;
	}
	list_free(&m->rw);
	list_free(&m->ro);
	m->rw = *rw;
	m->ro = *ro;
	return 0;
}

static void list_copy(const struct nfs4c_blk_list *in, struct nfs4c_blk_list *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < in->n; i++)
		list_push(out, &in->e[i]);
}

static bool goes_to_rw(const struct nfs4c_blk_ext *e)
{
	return e->iomode == LAYOUTIOMODE4_RW && e->state != PNFS_BLOCK_READ_DATA;
}

static int cmp_foff(const void *a, const void *b)
{
	const struct nfs4c_blk_ext *x = a, *y = b;
	return x->foff < y->foff ? -1 : x->foff > y->foff;
}

/*
 * into := what of l the sorted, disjoint extents add[0..n) do not cover,
 * merged in order with add itself.
 */
static void list_replace(const struct nfs4c_blk_list *l, const struct nfs4c_blk_ext *add,
			 unsigned n, struct nfs4c_blk_list *into)
{
	struct nfs4c_blk_list rest = {0};
	unsigned k0 = 0;
	for (unsigned i = 0; i < l->n; i++) {
		struct nfs4c_blk_ext cur = l->e[i];
		/* l is sorted and disjoint: the first new extent that can
		 * overlap only moves forward */
		while (k0 < n && ext_end(&add[k0]) <= cur.foff)
			k0++;
		for (unsigned k = k0; cur.len && k < n && add[k].foff < ext_end(&cur); k++) {
			if (add[k].foff > cur.foff) {
				struct nfs4c_blk_ext left = ext_part(&cur, cur.foff, add[k].foff);
				list_push(&rest, &left);
			}
			if (ext_end(&add[k]) >= ext_end(&cur))
				cur.len = 0;
			else
				cur = ext_part(&cur, ext_end(&add[k]), ext_end(&cur));
		}
		if (cur.len)
			list_push(&rest, &cur);
	}
	memset(into, 0, sizeof(*into));
	unsigned i = 0, j = 0;
	while (i < rest.n || j < n) {
		if (j == n || (i < rest.n && rest.e[i].foff < add[j].foff))
			list_push(into, &rest.e[i++]);
		else
			list_push(into, &add[j++]);
	}
	list_free(&rest);
}

static bool unwritten_invalid(const struct nfs4c_blk_ext *e);
static bool written_invalid(const struct nfs4c_blk_ext *e);

/*
 * Blocks the client wrote and has not committed stay written when a new
 * layout gives them again as INVALID_DATA on the same storage: the
 * server knows of them only at LAYOUTCOMMIT, the client does now (another
 * thread's LAYOUTGET, or one ahead of a stream, may cover blocks written
 * meanwhile). On other storage they are not there: not kept.
 */
static void keep_written(const struct nfs4c_blk_list *old, struct nfs4c_blk_list *l)
{
	for (unsigned i = 0; i < old->n; i++) {
		const struct nfs4c_blk_ext *o = &old->e[i];
		if (!written_invalid(o))
			continue;
		struct nfs4c_blk_list out = {0};
		for (unsigned k = 0; k < l->n; k++) {
			const struct nfs4c_blk_ext *e = &l->e[k];
			uint64_t a = MAX(e->foff, o->foff), b = MIN(ext_end(e), ext_end(o));
			if (a >= b || !unwritten_invalid(e) ||
			    memcmp(e->devid, o->devid, NFS4_DEVICEID4_SIZE) ||
			    e->soff + (a - e->foff) != o->soff + (a - o->foff)) {
				list_push(&out, e);
				continue;
			}
			struct nfs4c_blk_ext p;
			if (e->foff < a) {
				p = ext_part(e, e->foff, a);
				list_push(&out, &p);
			}
			p = ext_part(e, a, b);
			p.written = true;
			list_push(&out, &p);
			if (ext_end(e) > b) {
				p = ext_part(e, b, ext_end(e));
				list_push(&out, &p);
			}
		}
		list_free(l);
		*l = out;
	}
}

int nfs4c_blk_map_add(struct nfs4c_blk_map *m, const struct nfs4c_blk_ext *e, unsigned n)
{
	struct nfs4c_blk_ext *add[2] = {xcalloc(n ? n : 1, sizeof(*e)),
					xcalloc(n ? n : 1, sizeof(*e))};
	unsigned cnt[2] = {0, 0};
	struct nfs4c_blk_list rw, ro;
	int err = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned w = goes_to_rw(&e[i]) ? 0 : 1;
		add[w][cnt[w]] = e[i];
		add[w][cnt[w]++].written = false;
	}
	for (unsigned w = 0; w < 2 && !err; w++) {
		qsort(add[w], cnt[w], sizeof(*e), cmp_foff);
		for (unsigned i = 1; i < cnt[w]; i++)
			if (ext_end(&add[w][i - 1]) > add[w][i].foff)
				err = -EBADMSG; /* one layout mapping a range twice */
	}
	if (!err) {
		list_replace(&m->rw, add[0], cnt[0], &rw);
		keep_written(&m->rw, &rw);
		list_replace(&m->ro, add[1], cnt[1], &ro);
		err = map_commit(m, &rw, &ro);
	}
	free(add[0]);
	free(add[1]);
	return err;
}

int nfs4c_blk_map_remove(struct nfs4c_blk_map *m, layoutiomode4 iomode, uint64_t off, uint64_t len)
{
	struct nfs4c_blk_list rw, ro;
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	if (iomode == LAYOUTIOMODE4_READ)
		list_copy(&m->rw, &rw); /* rw holds only extents of RW layouts */
	else
		list_punch(&m->rw, LAYOUTIOMODE4_ANY, off, end, &rw);
	list_punch(&m->ro, iomode, off, end, &ro);
	return map_commit(m, &rw, &ro);
}

/*
 * In l: the extent holding off (*at, true), or else where the next one
 * starts (*next, UINT64_MAX if none).
 */
static const struct nfs4c_blk_ext *list_find(const struct nfs4c_blk_list *l, uint64_t off,
					     uint64_t *next)
{
	unsigned lo = 0, hi = l->n; /* the first extent starting after off */
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (l->e[mid].foff <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	*next = lo < l->n ? l->e[lo].foff : UINT64_MAX;
	if (lo > 0 && ext_end(&l->e[lo - 1]) > off)
		return &l->e[lo - 1];
	return NULL;
}

static void piece_dev(struct nfs4c_blk_piece *p, const struct nfs4c_blk_ext *e, uint64_t off)
{
	p->how = NFS4C_BLK_DEV;
	p->soff = e->soff + (off - e->foff);
	memcpy(p->devid, e->devid, NFS4_DEVICEID4_SIZE);
	p->len = MIN(p->len, ext_end(e) - off);
}

void nfs4c_blk_map_plan(const struct nfs4c_blk_map *m, bool for_write, uint64_t off, uint64_t len,
			struct nfs4c_blk_piece *p)
{
	uint64_t next_rw, next_ro;
	const struct nfs4c_blk_ext *w = list_find(&m->rw, off, &next_rw);
	const struct nfs4c_blk_ext *r = list_find(&m->ro, off, &next_ro);
	/* valid data in ro: the copy-on-write source of an INVALID_DATA
	 * range, or what a READ layout maps */
	const struct nfs4c_blk_ext *src =
		r && (r->state == PNFS_BLOCK_READ_DATA || r->state == PNFS_BLOCK_READ_WRITE_DATA)
			? r
			: NULL;

	memset(p, 0, sizeof(*p));
	p->foff = off;
	p->len = len;
	if (!w) {
		p->len = MIN(len, next_rw - off);
		if (!r) {
			p->how = NFS4C_BLK_UNMAPPED;
			p->len = MIN(p->len, next_ro - off);
		} else if (for_write) {
			p->how = NFS4C_BLK_READONLY;
			p->len = MIN(p->len, ext_end(r) - off);
		} else if (src) {
			piece_dev(p, src, off);
		} else {
			p->how = NFS4C_BLK_ZERO;
			p->len = MIN(p->len, ext_end(r) - off);
		}
		return;
	}
	p->len = MIN(len, ext_end(w) - off);
	switch (w->state) {
	case PNFS_BLOCK_READ_WRITE_DATA:
		piece_dev(p, w, off);
		return;
	case PNFS_BLOCK_INVALID_DATA:
		if (for_write) {
			piece_dev(p, w, off);
			if (!w->written) {
				p->fill = true;
				if (src) {
					p->cow = true;
					p->cow_soff = src->soff + (off - src->foff);
					memcpy(p->cow_devid, src->devid, NFS4_DEVICEID4_SIZE);
					p->len = MIN(p->len, ext_end(src) - off);
				} else {
					/* a source starting within would change how
					 * the rest is filled */
					p->len = MIN(p->len, next_ro - off);
				}
			}
		} else if (w->written) {
			piece_dev(p, w, off);
		} else if (src) {
			piece_dev(p, src, off);
		} else {
			p->how = NFS4C_BLK_ZERO;
			p->len = MIN(p->len, next_ro - off);
		}
		return;
	default: /* NONE_DATA (READ_DATA never is in rw) */
		if (for_write) {
			p->how = NFS4C_BLK_HOLE;
		} else if (src) {
			piece_dev(p, src, off);
		} else {
			p->how = NFS4C_BLK_ZERO;
			p->len = MIN(p->len, next_ro - off);
		}
		return;
	}
}

bool nfs4c_blk_map_covers(const struct nfs4c_blk_map *m, bool for_write, uint64_t off, uint64_t len)
{
	while (len) {
		struct nfs4c_blk_piece p;
		nfs4c_blk_map_plan(m, for_write, off, len, &p);
		if (p.how == NFS4C_BLK_UNMAPPED ||
		    (for_write && (p.how == NFS4C_BLK_HOLE || p.how == NFS4C_BLK_READONLY)))
			return false;
		off += p.len;
		len -= p.len;
	}
	return true;
}

/* New rw list: [off, end) of what `pick` selects set to state/written. */
static void list_set(const struct nfs4c_blk_list *in, uint64_t off, uint64_t end,
		     bool (*pick)(const struct nfs4c_blk_ext *e), pnfs_block_extent_state4 state,
		     bool written, struct nfs4c_blk_list *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < in->n; i++) {
		const struct nfs4c_blk_ext *e = &in->e[i];
		if (ext_end(e) <= off || e->foff >= end || !pick(e)) {
			list_push(out, e);
			continue;
		}
		uint64_t a = MAX(e->foff, off), b = MIN(ext_end(e), end);
		struct nfs4c_blk_ext p;
		if (e->foff < a) {
			p = ext_part(e, e->foff, a);
			list_push(out, &p);
		}
		p = ext_part(e, a, b);
		p.state = state;
		p.written = written;
		list_push(out, &p);
		if (ext_end(e) > b) {
			p = ext_part(e, b, ext_end(e));
			list_push(out, &p);
		}
	}
}

static bool unwritten_invalid(const struct nfs4c_blk_ext *e)
{
	return e->state == PNFS_BLOCK_INVALID_DATA && !e->written;
}

static bool written_invalid(const struct nfs4c_blk_ext *e)
{
	return e->state == PNFS_BLOCK_INVALID_DATA && e->written;
}

int nfs4c_blk_map_mark_written(struct nfs4c_blk_map *m, uint64_t off, uint64_t len)
{
	struct nfs4c_blk_list rw, ro;
	list_set(&m->rw, off, off + len, unwritten_invalid, PNFS_BLOCK_INVALID_DATA, true, &rw);
	list_copy(&m->ro, &ro);
	return map_commit(m, &rw, &ro);
}

void nfs4c_blk_map_pending(const struct nfs4c_blk_map *m, struct nfs4c_blk_ext *out, unsigned max,
			   unsigned *n, bool *more)
{
	*n = 0;
	*more = false;
	for (unsigned i = 0; i < m->rw.n; i++) {
		const struct nfs4c_blk_ext *e = &m->rw.e[i];
		if (!written_invalid(e))
			continue;
		if (*n && continues(&out[*n - 1], e)) {
			out[*n - 1].len += e->len;
			continue;
		}
		if (*n == max) {
			*more = true;
			return;
		}
		out[(*n)++] = *e;
	}
}

void nfs4c_blk_map_committed(struct nfs4c_blk_map *m, const struct nfs4c_blk_ext *e, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct nfs4c_blk_list rw, ro;
		list_set(&m->rw, e[i].foff, ext_end(&e[i]), written_invalid,
			 PNFS_BLOCK_READ_WRITE_DATA, false, &rw);
		list_copy(&m->ro, &ro);
		/* at the bound a split may not fit: the range then stays
		 * written and goes with the next LAYOUTCOMMIT again, which
		 * converts nothing more */
		if (map_commit(m, &rw, &ro))
			return;
	}
}
