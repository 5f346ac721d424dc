/*
 * logwl.c - the journal test workload and its model (see logwl.h).
 */
#include "logwl.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/rand.h"
#include "dev/crashdev.h"

uint64_t wl_home_bytes(unsigned nblocks)
{
	return (uint64_t)nblocks * WL_BLOCK;
}

struct wl *wl_create(const struct wl_params *p, struct log *log, struct dev *dev)
{
	struct wl *w = xcalloc(1, sizeof(*w));
	w->p = *p;
	if (!w->p.max_touch)
		w->p.max_touch = 3;
	w->nblocks = p->threads + p->shared;
	w->log = log;
	w->blocks = xcalloc(w->nblocks, sizeof(*w->blocks));
	w->base = xmalloc(wl_home_bytes(w->nblocks));
	if (dev_read(dev, w->base, wl_home_bytes(w->nblocks), 0))
		abort();
	for (unsigned b = 0; b < w->nblocks; b++) {
		struct wl_block *blk = &w->blocks[b];
		blk->data = xmalloc_aligned(4096, WL_BLOCK);
		memcpy(blk->data, w->base + (uint64_t)b * WL_BLOCK, WL_BLOCK);
		buf_item_init(&blk->bi, log, (uint64_t)b * WL_BLOCK, blk->data, NULL);
	}
	/* global numbers start far from any earlier workload's on this image */
	w->gseq = (p->seed % 1000 + 1) << 40;
	w->dev = dev;
	w->data = xcalloc((size_t)p->threads * p->txns * 4 + 1, sizeof(*w->data));
	w->data_flushed = xcalloc((size_t)p->threads * p->txns * 4 + 1, sizeof(bool));
	w->tx = xcalloc(p->threads, sizeof(*w->tx));
	w->ntx = xcalloc(p->threads, sizeof(*w->ntx));
	for (unsigned t = 0; t < p->threads; t++)
		w->tx[t] = xcalloc(p->txns, sizeof(**w->tx));
	return w;
}

static void apply_write(uint8_t *img, uint8_t *def, const struct wl_write *wr, uint64_t local,
			uint64_t g)
{
	uint8_t *blk = img + (uint64_t)wr->block * WL_BLOCK;
	switch (wr->kind) {
	case WL_COUNTER:
		memcpy(blk, &local, 8);
		memcpy(blk + 8, &g, 8);
		break;
	case WL_RANGE:
		memset(blk + wr->off, wr->val, wr->len);
		break;
	case WL_FULL:
		memset(blk, wr->val, WL_BLOCK);
		if (def)
			def[wr->block] = 1;
		break;
	case WL_FREE:
		if (def)
			def[wr->block] = 0;
		break;
	}
}

struct wl_thread {
	struct wl *w;
	unsigned t;
};

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/*
 * The blocks freed by the transaction csn become file data: once the
 * freeing checkpoint is durable (the journal's busy-block rule), write a
 * pattern to their home and flush, then let transactions allocate them.
 */
static int wl_write_data(struct wl *w, uint64_t csn, const uint16_t *freed, unsigned n,
			 struct rng *r)
{
	int err = log_force_seq(w->log, csn, true, NULL);
	if (!err && w->p.markdev)
		crashdev_mark(w->p.markdev, csn);
	uint8_t *buf = xmalloc_aligned(4096, WL_BLOCK);
	uint64_t ids[8];
	for (unsigned i = 0; i < n && !err; i++) {
		uint64_t id = atomic_fetch_add(&w->ndata, 1);
		struct wl_data *d = &w->data[id];
		d->block = freed[i];
		d->val = (uint8_t)(rng_next(r) | 1);
		d->free_csn = csn;
		ids[i] = id;
		memset(buf, d->val, WL_BLOCK);
		err = dev_write(w->dev, buf, WL_BLOCK, (uint64_t)freed[i] * WL_BLOCK, 0);
	}
	free(buf);
	if (!err)
		err = dev_flush(w->dev);
	for (unsigned i = 0; i < n && !err; i++) {
		w->data_flushed[ids[i]] = true;
		if (w->p.markdev)
			crashdev_mark(w->p.markdev, WL_DATA_MARK | ids[i]);
		struct wl_block *blk = &w->blocks[freed[i]];
		mutex_lock(&blk->bi.bi_lock);
		blk->state = WL_DATA;
		mutex_unlock(&blk->bi.bi_lock);
	}
	return err;
}

static void *wl_thread_fn(void *arg)
{
	struct wl_thread *wt = arg;
	struct wl *w = wt->w;
	const struct wl_params *p = &w->p;
	struct rng r;
	rng_seed(&r, p->seed * 1000003 + wt->t);

	for (unsigned local = 1; local <= p->txns && !atomic_load(&w->stop_err); local++) {
		/* blocks: own counter block, then distinct shared ones, ascending */
		uint16_t blocks[8];
		unsigned nb = 1;
		blocks[0] = (uint16_t)wt->t;
		unsigned want = (unsigned)rng_below(&r, p->max_touch + 1);
		for (unsigned i = 0; i < want && p->shared; i++) {
			uint16_t b = (uint16_t)(p->threads + rng_below(&r, p->shared));
			bool dup = false;
			for (unsigned j = 0; j < nb; j++)
				dup |= blocks[j] == b;
			if (!dup)
				blocks[nb++] = b;
		}
		qsort(blocks, nb, sizeof(blocks[0]), cmp_u16);

		uint16_t freed[8];
		unsigned nfreed = 0;
		unsigned flags = rng_chance(&r, p->sync_pct) ? TRANS_SYNC : 0;
		if (p->unordered_pct && rng_chance(&r, p->unordered_pct))
			flags |= TRANS_UNORDERED;
		struct trans *tp;
		uint64_t res = log_calc_res(w->log, nb, nb * (WL_BLOCK + 64));
		int err = trans_alloc(w->log, res, flags, &tp);
		if (err) {
			atomic_store(&w->stop_err, err);
			break;
		}
		for (unsigned i = 0; i < nb; i++)
			buf_item_join(tp, &w->blocks[blocks[i]].bi);

		struct wl_txn *tx = &w->tx[wt->t][local - 1];
		tx->g = atomic_fetch_add(&w->gseq, 1) + 1; /* all locks held */
		tx->thread = wt->t;
		tx->local = local;
		tx->nw = 0;
		for (unsigned i = 0; i < nb; i++) {
			struct wl_block *blk = &w->blocks[blocks[i]];
			struct wl_write *wr = &tx->w[tx->nw];
			wr->block = blocks[i];
			if (blocks[i] == wt->t) {
				wr->kind = WL_COUNTER;
				wr->off = 0;
				wr->len = 16;
				apply_write(blk->data - (uint64_t)blocks[i] * WL_BLOCK, NULL, wr,
					    local, tx->g);
				buf_item_log(tp, &blk->bi, 0, 16);
				tx->nw++;
				continue;
			}
			uint8_t val = (uint8_t)((tx->g * 31 + i) | 1);
			if (blk->state == WL_FREED)
				continue; /* the freeing thread is writing file data there */
			if (blk->state == WL_DATA) {
				if (!rng_chance(&r, 50))
					continue; /* joined, left alone */
				wr->kind = WL_FULL;
				wr->val = val;
				blk->state = WL_LIVE;
				memset(blk->data, val, WL_BLOCK);
				buf_item_log(tp, &blk->bi, 0, WL_BLOCK);
				tx->nw++;
				continue;
			}
			if (rng_chance(&r, p->free_pct) && nfreed < 8) {
				wr->kind = WL_FREE;
				blk->state = WL_FREED;
				freed[nfreed++] = blocks[i];
				buf_item_cancel(tp, &blk->bi);
				tx->nw++;
				continue;
			}
			unsigned nranges = 1 + (unsigned)rng_below(&r, 3);
			for (unsigned k = 0; k < nranges && tx->nw < WL_MAXWRITES; k++) {
				wr = &tx->w[tx->nw++];
				wr->block = blocks[i];
				wr->kind = WL_RANGE;
				wr->off = (uint16_t)rng_below(&r, WL_BLOCK);
				wr->len = (uint16_t)(1 +
						     rng_below(&r, MIN(512u, WL_BLOCK - wr->off)));
				wr->val = (uint8_t)(val + k);
				memset(blk->data + wr->off, wr->val, wr->len);
				buf_item_log(tp, &blk->bi, wr->off, wr->len);
			}
		}
		uint64_t csn;
		err = trans_commit(tp, &csn);
		if (err && !(flags & TRANS_SYNC)) {
			atomic_store(&w->stop_err, err);
			break;
		}
		tx->csn = csn;
		w->ntx[wt->t] = local;
		if (err) {
			atomic_store(&w->stop_err, err);
			break;
		}
		bool acked = flags & TRANS_SYNC;
		if (!acked && rng_chance(&r, p->force_pct)) {
			bool flushed;
			err = log_force_seq(w->log, csn, true, &flushed);
			if (err) {
				atomic_store(&w->stop_err, err);
				break;
			}
			acked = true;
		} else if (!acked && rng_chance(&r, p->async_pct)) {
			log_force_seq(w->log, csn, false, NULL);
		}
		if (acked) {
			if (p->markdev)
				crashdev_mark(p->markdev, csn);
			uint64_t cur = atomic_load(&w->acked);
			while (cur < csn && !atomic_compare_exchange_weak(&w->acked, &cur, csn))
				;
		}
		if (nfreed && (err = wl_write_data(w, csn, freed, nfreed, &r)) != 0) {
			atomic_store(&w->stop_err, err);
			break;
		}
	}
	return NULL;
}

int wl_run(struct wl *w)
{
	pthread_t th[64];
	struct wl_thread wt[64];
	for (unsigned t = 0; t < w->p.threads; t++) {
		wt[t] = (struct wl_thread){.w = w, .t = t};
		pthread_create(&th[t], NULL, wl_thread_fn, &wt[t]);
	}
	for (unsigned t = 0; t < w->p.threads; t++)
		pthread_join(th[t], NULL);
	return atomic_load(&w->stop_err);
}

void wl_detach(struct wl *w)
{
	if (!w->blocks)
		return;
	for (unsigned b = 0; b < w->nblocks; b++) {
		/* the log is gone: nothing refers to the items any more */
		mutex_destroy(&w->blocks[b].bi.bi_lock);
		free(w->blocks[b].data);
	}
	free(w->blocks);
	w->blocks = NULL;
}

static int cmp_txn(const void *a, const void *b)
{
	const struct wl_txn *x = *(struct wl_txn *const *)a, *y = *(struct wl_txn *const *)b;
	if (x->csn != y->csn)
		return x->csn < y->csn ? -1 : 1;
	return x->g < y->g ? -1 : x->g > y->g;
}

void wl_build_model(struct wl *w)
{
	size_t n = 0;
	for (unsigned t = 0; t < w->p.threads; t++)
		n += w->ntx[t];
	w->sorted = xcalloc(n ? n : 1, sizeof(*w->sorted));
	for (unsigned t = 0; t < w->p.threads; t++)
		for (unsigned i = 0; i < w->ntx[t]; i++)
			w->sorted[w->nsorted++] = &w->tx[t][i];
	qsort(w->sorted, w->nsorted, sizeof(*w->sorted), cmp_txn);
	w->max_csn = w->nsorted ? w->sorted[w->nsorted - 1]->csn : 0;

	/* snapshots every snap_every checkpoints, so that an expected image
	 * costs at most that many checkpoints of replay */
	size_t home = wl_home_bytes(w->nblocks);
	w->snap_every = 16;
	w->nsnaps = w->max_csn / w->snap_every + 1;
	w->snaps = xcalloc(w->nsnaps, sizeof(*w->snaps));
	w->snapdef = xcalloc(w->nsnaps, sizeof(*w->snapdef));
	uint8_t *img = xmalloc(home), *def = xmalloc(w->nblocks);
	memcpy(img, w->base, home);
	memset(def, 1, w->nblocks);
	size_t i = 0;
	for (size_t s = 0; s < w->nsnaps; s++) {
		uint64_t upto = (uint64_t)s * w->snap_every;
		for (; i < w->nsorted && w->sorted[i]->csn <= upto; i++)
			for (unsigned k = 0; k < w->sorted[i]->nw; k++)
				apply_write(img, def, &w->sorted[i]->w[k], w->sorted[i]->local,
					    w->sorted[i]->g);
		w->snaps[s] = xmalloc(home);
		memcpy(w->snaps[s], img, home);
		w->snapdef[s] = xmalloc(w->nblocks);
		memcpy(w->snapdef[s], def, w->nblocks);
	}
	free(img);
	free(def);
}

void wl_expected(struct wl *w, uint64_t n, uint8_t *img, uint8_t *def)
{
	size_t s = MIN(n / w->snap_every, w->nsnaps - 1);
	uint64_t from = (uint64_t)s * w->snap_every;
	memcpy(img, w->snaps[s], wl_home_bytes(w->nblocks));
	memcpy(def, w->snapdef[s], w->nblocks);
	/* first transaction with csn > from: binary search */
	size_t lo = 0, hi = w->nsorted;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (w->sorted[mid]->csn <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < w->nsorted && w->sorted[i]->csn <= n; i++)
		for (unsigned k = 0; k < w->sorted[i]->nw; k++)
			apply_write(img, def, &w->sorted[i]->w[k], w->sorted[i]->local,
				    w->sorted[i]->g);
}

/* On a mismatch: every write of the model that touched byte o of block b. */
static void wl_history(struct wl *w, unsigned b, unsigned o)
{
	static const char *const kinds[] = {"range", "counter", "free", "full"};
	for (size_t i = 0; i < w->nsorted; i++) {
		const struct wl_txn *t = w->sorted[i];
		for (unsigned k = 0; k < t->nw; k++) {
			const struct wl_write *wr = &t->w[k];
			if (wr->block != b)
				continue;
			bool hit = wr->kind == WL_FREE || wr->kind == WL_FULL ||
				   (o >= wr->off && o < (unsigned)wr->off + wr->len);
			if (hit)
				fprintf(stderr,
					"  csn %llu g %llu thread %u txn %u: %s [%u, %u) = "
					"0x%02x\n",
					(unsigned long long)t->csn, (unsigned long long)t->g,
					t->thread, t->local, kinds[wr->kind], wr->off,
					wr->off + wr->len, wr->val);
		}
	}
}

int wl_verify(struct wl *w, struct dev *dev, uint64_t acked, const bool *data_done,
	      const char *what, uint64_t *n_out)
{
	size_t home = wl_home_bytes(w->nblocks);
	uint8_t *img = xmalloc(home), *want = xmalloc(home), *def = xmalloc(w->nblocks);
	int ret = -1;
	if (dev_read(dev, img, home, 0)) {
		fprintf(stderr, "%s: cannot read the home region\n", what);
		goto out;
	}
	/* which transactions of each thread are present, and their checkpoint */
	uint64_t n = 0;
	unsigned *present = xcalloc(w->p.threads, sizeof(*present));
	for (unsigned t = 0; t < w->p.threads; t++) {
		uint64_t local, g, base_local, base_g;
		memcpy(&local, img + (uint64_t)t * WL_BLOCK, 8);
		memcpy(&g, img + (uint64_t)t * WL_BLOCK + 8, 8);
		memcpy(&base_local, w->base + (uint64_t)t * WL_BLOCK, 8);
		memcpy(&base_g, w->base + (uint64_t)t * WL_BLOCK + 8, 8);
		if (local >= 1 && local <= w->ntx[t] && w->tx[t][local - 1].g == g) {
			present[t] = (unsigned)local;
			n = MAX(n, w->tx[t][local - 1].csn);
		} else if (local != base_local || g != base_g) {
			fprintf(stderr,
				"%s: thread %u counter block holds txn %llu/g %llu that "
				"was never committed\n",
				what, t, (unsigned long long)local, (unsigned long long)g);
			free(present);
			goto out;
		}
	}
	/* G1/G2: exactly the transactions with csn <= n */
	for (unsigned t = 0; t < w->p.threads; t++) {
		for (unsigned i = 0; i < w->ntx[t]; i++) {
			bool in_ckpt = w->tx[t][i].csn <= n;
			bool is_present = i < present[t];
			if (in_ckpt != is_present) {
				fprintf(stderr,
					"%s: thread %u txn %u (csn %llu) is %s but the image "
					"holds checkpoint %llu\n",
					what, t, i + 1, (unsigned long long)w->tx[t][i].csn,
					is_present ? "present" : "missing", (unsigned long long)n);
				free(present);
				goto out;
			}
		}
	}
	free(present);
	/* G3 */
	if (n < acked) {
		fprintf(stderr, "%s: checkpoint %llu acknowledged durable, image holds only %llu\n",
			what, (unsigned long long)acked, (unsigned long long)n);
		goto out;
	}
	/* content */
	wl_expected(w, n, want, def);
	/* a block freed as of checkpoint n holds the file data written into it,
	 * once that data was flushed (the last free of the block up to n) */
	uint64_t *last_free = xcalloc(w->nblocks, sizeof(*last_free));
	for (size_t i = 0; i < w->nsorted && w->sorted[i]->csn <= n; i++)
		for (unsigned k = 0; k < w->sorted[i]->nw; k++)
			if (w->sorted[i]->w[k].kind == WL_FREE)
				last_free[w->sorted[i]->w[k].block] = w->sorted[i]->csn;
	for (uint64_t id = 0; data_done && id < atomic_load(&w->ndata); id++) {
		const struct wl_data *d = &w->data[id];
		if (data_done[id] && !def[d->block] && last_free[d->block] == d->free_csn) {
			memset(want + (uint64_t)d->block * WL_BLOCK, d->val, WL_BLOCK);
			def[d->block] = 1;
		}
	}
	free(last_free);
	for (unsigned b = 0; b < w->nblocks; b++) {
		if (!def[b])
			continue;
		const uint8_t *x = img + (uint64_t)b * WL_BLOCK, *y = want + (uint64_t)b * WL_BLOCK;
		if (memcmp(x, y, WL_BLOCK) != 0) {
			unsigned o = 0;
			while (x[o] == y[o])
				o++;
			fprintf(stderr,
				"%s: block %u differs at byte %u (0x%02x, want 0x%02x) "
				"for checkpoint %llu\n",
				what, b, o, x[o], y[o], (unsigned long long)n);
			wl_history(w, b, o);
			goto out;
		}
	}
	ret = 0;
	if (n_out)
		*n_out = n;
out:
	free(img);
	free(want);
	free(def);
	return ret;
}

void wl_free(struct wl *w)
{
	wl_detach(w);
	for (unsigned t = 0; t < w->p.threads; t++)
		free(w->tx[t]);
	free(w->tx);
	free(w->ntx);
	free(w->base);
	free(w->data);
	free(w->data_flushed);
	free(w->sorted);
	for (size_t s = 0; s < w->nsnaps; s++) {
		free(w->snaps[s]);
		free(w->snapdef[s]);
	}
	free(w->snaps);
	free(w->snapdef);
	free(w);
}
