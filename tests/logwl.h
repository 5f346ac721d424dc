/*
 * logwl.h - a random multi-threaded transaction workload over buffer items,
 * with a model of everything it committed, for the journal's tests.
 *
 * Layout of the image: home blocks 0..nblocks-1 at byte block*4096 (block t
 * is thread t's counter block, the rest are shared), then the log region.
 *
 * Every transaction writes its thread's counter block ({local number, global
 * number g}) and changes 0-3 ranges of a few shared blocks, taking g while it
 * holds all its blocks' locks, so that per block, g order is commit order.
 * Some transactions free a shared block (buffer cancel) or allocate a freed
 * one again (a full-block write). A freed block is first reused as file data:
 * once the freeing checkpoint is durable, the thread writes a pattern to the
 * block's home directly (not logged) and flushes, as an engine writing file
 * data into a freed block would; only then may a transaction allocate it
 * again. Recovery must never put stale metadata over that data (buffer
 * cancel). Some transactions are forced, synchronously or not; every force
 * that returned, and every data write whose flush returned, is recorded as a
 * mark on the crash device (data marks have WL_DATA_MARK set).
 *
 * Verification of an image after recovery: the counter blocks say how many
 * of each thread's transactions are present; the checkpoint N of the newest
 * present one must include exactly the transactions with CSN <= N (G1, G2),
 * N must cover every acknowledged force (G3), and the home blocks must equal
 * the model's image after the transactions with CSN <= N.
 */
#ifndef JNFS_TESTS_LOGWL_H
#define JNFS_TESTS_LOGWL_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/dev.h"
#include "log/buf_item.h"
#include "log/log.h"

#define WL_BLOCK     4096u
#define WL_MAXWRITES 16

struct wl_params {
	unsigned threads;
	unsigned txns;	    /* per thread */
	unsigned shared;    /* shared blocks */
	unsigned max_touch; /* shared blocks per transaction, at most */
	unsigned force_pct; /* forced and waited for after commit */
	unsigned async_pct; /* forced without waiting */
	unsigned sync_pct;  /* committed with TRANS_SYNC */
	/* committed with TRANS_UNORDERED (log.h G7): none of them points at
	 * data written in place (file data is flushed on its own, below), so
	 * their checkpoints may skip the data-device flush and carry the old
	 * tail */
	unsigned unordered_pct;
	unsigned free_pct;  /* free a shared block */
	uint64_t seed;
	struct dev *markdev; /* crash device for acknowledgement marks, or NULL */
};

enum wl_kind { WL_RANGE, WL_COUNTER, WL_FREE, WL_FULL };

struct wl_write {
	uint16_t block;
	uint16_t off;
	uint16_t len;
	uint8_t val;
	uint8_t kind;
};

struct wl_txn {
	uint64_t g, csn;
	uint32_t thread, local;
	uint32_t nw;
	struct wl_write w[WL_MAXWRITES];
};

enum wl_block_state { WL_LIVE, WL_FREED, WL_DATA };

struct wl_block {
	struct buf_item bi;
	enum wl_block_state state; /* guarded by bi.bi_lock */
	uint8_t *data;
};

/* File data written into a freed block (one per free). */
struct wl_data {
	uint16_t block;
	uint8_t val;
	uint64_t free_csn; /* the checkpoint that freed the block */
};

#define WL_DATA_MARK (1ull << 63)

struct wl {
	struct wl_params p;
	unsigned nblocks;
	struct log *log;
	struct wl_block *blocks;
	_Atomic uint64_t gseq;
	_Atomic uint64_t acked; /* highest CSN whose force returned */
	_Atomic int stop_err;
	struct wl_data *data; /* by id; a data write's mark is WL_DATA_MARK | id */
	_Atomic uint64_t ndata;
	bool *data_flushed; /* by id: its flush returned */
	struct dev *dev;
	struct wl_txn **tx; /* per thread, in commit order */
	unsigned *ntx;
	uint8_t *base; /* home region before the workload */
	/* model, built by wl_build_model() */
	struct wl_txn **sorted; /* by (csn, g) */
	size_t nsorted;
	uint64_t max_csn;
	unsigned snap_every;
	uint8_t **snaps;   /* image after CSN <= k * snap_every */
	uint8_t **snapdef; /* per block: content defined (not freed) */
	size_t nsnaps;
};

/* Create the workload over blocks whose current content is read from dev
 * (home region at byte 0). The log must be mounted on dev. */
struct wl *wl_create(const struct wl_params *p, struct log *log, struct dev *dev);
/* Run every thread to the end (or to the first error). Returns the first
 * error a commit or force returned, 0 if none. */
int wl_run(struct wl *w);
/* Release the buffer items (the log must be unmounted or shut down). */
void wl_detach(struct wl *w);
void wl_free(struct wl *w);

/* Index the committed transactions; call once after wl_run(). */
void wl_build_model(struct wl *w);
/* Expected home image after every transaction with CSN <= n: img gets
 * nblocks * 4096 bytes, def one flag per block. */
void wl_expected(struct wl *w, uint64_t n, uint8_t *img, uint8_t *def);

/*
 * Check the home region of dev after recovery. acked: every CSN up to it
 * was acknowledged durable. data_done[id] (may be NULL: none): the data
 * write id was flushed before the cut. Returns 0 if the image is a valid
 * outcome; otherwise prints why (prefixed by what) and returns -1. *n_out
 * gets the checkpoint the image corresponds to.
 */
int wl_verify(struct wl *w, struct dev *dev, uint64_t acked, const bool *data_done,
	      const char *what, uint64_t *n_out);

/* The log geometry the tests use: home blocks, then the log. */
uint64_t wl_home_bytes(unsigned nblocks);

#endif
