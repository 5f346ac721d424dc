/*
 * fs_priv.h - the engine's internal state, shared by its source files.
 *
 * Lock order, lowest first (every class and its rank: base/lock_classes.h):
 *    90 fs.rename      renames between two directories, one at a time
 *                      (f_rename_lock; D2 below)
 *    95 fs.records     the durable record store (f_rec_lock, rec.c; held
 *                      across a whole put or delete, as an I/O lock is)
 *   100 fs.iolock      inode I/O lock (i_iolock; rwlock: shared for reads and
 *                      overwrites, exclusive for truncate, allocation, extent
 *                      changes, namespace changes of a directory); it guards
 *                      the extent map (struct fs_icore), a directory's
 *                      entries and an inode's extended attributes
 *   105 fs.eofblocks   the files preallocated past EOF (f_eof_lock; taken
 *                      under a file's I/O lock, nothing taken under it)
 *   110 fs.ilock       inode metadata lock (i_ilock; held while a transaction
 *                      changes the inode, released by the inode item at
 *                      commit)
 *   150 fs.ialloc      inode allocation lock (inode index and orphan trees)
 *   160 fs.alloc       block allocation lock (free-space tree, free list)
 *   250 fs.buf         buffers of the global trees, the superblock and inode
 *                      chunks (several at once; a tree's buffers only under
 *                      its lock)
 *   270 fs.busy        busy extents
 *   275 fs.resv        block reservations
 *   280 fs.bcache      buffer cache
 *   285 fs.icache      inode cache
 *   287 fs.readahead   the readahead windows (f_ra_lock, readahead.c; taken
 *                      under a file's shared I/O lock, nothing taken under
 *                      it, never held across device I/O)
 *   300+ the journal (log/log_priv.h)
 *   390 fs.ino_item    inode item lock (ii_lock: pin count, commit_seq,
 *                      datasync_seq; taken under the journal's context lock
 *                      by committing(), so ranked after it; nothing is taken
 *                      while it is held)
 *   395 fs.layout      layout lock
 *       fs.inode_tree_buf  buffers of an inode's own trees (directory, extent
 *                      map): only reached under that inode's locks, which
 *                      come before everything above, so the class is
 *                      unordered: a transaction may join them before or after
 *                      it takes the allocation locks.
 *
 * Several inodes at once. Every operation that locks more than one
 * directory, or a directory and an entry of it (rename, rmdir, unlink,
 * link, create, and an inode's freeing), keeps the rule the Linux VFS has:
 *   D1 A directory before its entries. rmdir of P/D locks P, finds D under
 *      that lock and then locks D; a rename over an existing directory T
 *      locks T after the parents. The entry is found under the parent's
 *      lock, so the child is that parent's child while both are held.
 *      unlink, link and create lock only the directory: a file's link
 *      count is metadata (i_ilock), its I/O lock is not taken.
 *   D2 Two parents (a rename between directories): the rename lock first,
 *      then an ancestor before its descendant; of two directories neither
 *      of which is an ancestor of the other, the lower inode number first
 *      (dir_lock2). Ancestry is read under the rename lock, which every
 *      move of a directory to another parent holds, so the tree the order
 *      was read from stands until both are locked.
 *   D3 A rename's target directory that is an ancestor of the source's
 *      directory (or that directory itself) is not locked at all: it holds
 *      the source, so it is not empty (ENOTEMPTY); locking it after its
 *      descendant would break D1.
 *   D4 Metadata locks come after every I/O lock; the inodes a transaction
 *      joins are locked lower inode number first (ino_join2, join_sorted).
 *   D5 An unlinked inode's I/O lock may be taken under others': only its
 *      freeing (last reference) or a rename whose directory was removed
 *      meanwhile locks it, and neither waits for anything while holding it.
 * Why this cannot deadlock: every wait of a thread holding a directory for
 * another directory is parent to child (D1), except in the one rename that
 * holds the rename lock. The tree does not change while they wait (a move
 * needs the rename lock). A cycle made only of parent-to-child waits would
 * be a cycle in the tree. With the rename in it, the cycle runs from the
 * directory the rename waits for, down the tree, to one it holds: that one
 * would be a descendant of the directory it waits for, which D2 (ancestor
 * first; unrelated directories have no such path) and D3 exclude.
 * An order by inode number alone, as renames had before, deadlocks: after
 * a move a child can have a lower number than its parent, and RENAME of
 * B/f to B/A/f took A then B while RMDIR of B/A took B then A.
 * The lock checker enforces D1, D2 (as "an ancestor is not locked after
 * its descendant", and "two directories not parent and child only under
 * the rename lock") and D4 with the inodes themselves (inode.c,
 * iolock_order and ilock_order), not with nesting levels a caller picks.
 *
 * A transaction joins (locks) every existing inode it changes first, then
 * takes the global allocation locks when it first allocates (fstx_lock; the
 * inode lock first, the block lock second) and holds them until it commits,
 * so it never waits for one while holding buffers another transaction
 * needs. A newly allocated inode is locked without waiting (nobody else can
 * see it yet).
 * No inode lock is held across a log force, a device flush or a wait for a
 * client (docs/design.md §5).
 *
 * Contracts written as "X held" below are asserted where the function
 * starts (assert_locked, assert_rdlocked, assert_wrlocked: base/lock.h).
 */
#ifndef JNFS_FS_FS_PRIV_H
#define JNFS_FS_FS_PRIV_H

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "base/compiler.h"
#include "base/hashmap.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/msg.h"
#include "fs/fs.h"
#include "fs/fs_format.h"
#include "log/buf_item.h"
#include "log/log.h"

struct fstx;

/* ---- metadata buffers (buf.c) ---- */

struct fs_verifier {
	const char *name;
	uint32_t magic;
	/* on read from disk: 0 or -EUCLEAN (with a message) */
	int (*verify)(struct fs *fs, const void *blk, uint64_t blkno, uint64_t owner);
	/* before a write in place or after log replay: CRC and LSN */
	void (*stamp)(void *blk, uint64_t lsn);
};

struct fsbuf {
	struct buf_item b_bi; /* the log item; bi_lock guards the data */
	struct fs *b_fs;
	uint64_t b_blkno;
	uint8_t *b_data;
	_Atomic int b_ref;
	const struct fs_verifier *b_ops;
	struct list b_lru;    /* every cached buffer, oldest first (cache lock) */
	bool b_lru_ref;       /* used since the shrink last looked (cache lock) */
	struct list b_txlink; /* in the joining transaction's list */
};

int fsbuf_read(struct fs *fs, uint64_t blkno, const struct fs_verifier *v, uint64_t owner,
	       struct fsbuf **bpp);
/* A newly allocated block: zeroed in memory, never read. */
struct fsbuf *fsbuf_get_new(struct fs *fs, uint64_t blkno, const struct fs_verifier *v);
void fsbuf_hold(struct fsbuf *bp);
void fsbuf_rele(struct fsbuf *bp);
/* Lock the buffer and join it to the transaction (which keeps a reference
 * until it ends). */
void fsbuf_join(struct fstx *tx, struct fsbuf *bp);
void fsbuf_log(struct fstx *tx, struct fsbuf *bp, uint32_t off, uint32_t len);
/* The block is freed in this transaction. */
void fsbuf_cancel(struct fstx *tx, struct fsbuf *bp);
void fsbuf_cache_init(struct fs *fs);
void fsbuf_cache_destroy(struct fs *fs);

extern const struct fs_verifier fs_sb_verifier, fs_bt_verifiers[], fs_ichunk_verifier;
const struct fs_verifier *fs_bt_verifier(uint32_t magic);
void fs_restamp(void *arg, uint64_t daddr, void *blk, uint32_t len, uint64_t lsn);
int fs_verify_sb(const struct fs_dsb *sb, uint64_t dev_blocks);

/* ---- transactions (fstx.c) ---- */

#define FSTX_IALLOC 0x1u /* holds the inode allocation lock */
#define FSTX_ALLOC  0x2u /* holds the block allocation lock */

struct fs_busy {
	uint64_t start, len;
	struct list link;   /* fs->f_busy, sorted by start */
	struct list txlink; /* the freeing transaction's list */
};

struct fstx {
	struct fs *fs;
	struct trans *tp;
	unsigned locks;
	int64_t blk_res;   /* blocks reserved and not yet used */
	struct list bufs;  /* joined buffers, each holding a reference */
	struct list busy;  /* extents freed here (fs_busy.txlink): busy until durable */
	struct list orphans_done;
	int nalloc_ops;    /* recursion guard for the allocator */
};

/* Begin: reserve log space for log_bytes (0: a default) and blk_res blocks
 * of free space (-ENOSPC if there are not that many, even after every
 * file's speculative preallocation was trimmed: the caller then waits for
 * the trimmer, so it must hold no inode lock but I/O locks). */
int fstx_begin(struct fs *fs, uint64_t blk_res, uint64_t log_bytes, struct fstx **txp);
/* The same for an operation that frees space (unlink, rmdir, rename): it
 * may use part of the blocks kept back, and waits for other transactions'
 * reservations rather than fail (fs_reserve_blocks). */
int fstx_begin_freeing(struct fs *fs, uint64_t blk_res, uint64_t log_bytes, struct fstx **txp);
/* Commit; res (may be NULL) keeps the highest commit sequence of the
 * call's transactions (a later one covers the earlier ones). */
int fstx_commit(struct fstx *tx, struct fs_result *res);
void fstx_cancel(struct fstx *tx);
/* Nothing the transaction logs depends on file data written in place
 * before it (names, attributes, times, blocks that read as zeros, frees):
 * its checkpoint needs no data-device flush for it (log.h, G7). Unmarked
 * transactions are ordered: the flag only ever saves a flush. */
void fstx_unordered(struct fstx *tx);

/*
 * Attributes for struct fs_result (fs.h). A public call clears res first
 * (res_init); then every transaction of the call that changes ip takes
 * res_pre(res, slot, ip) right after joining ip, before changing it, and
 * res_post(res, slot, ip) after its last change, before committing: both
 * under ip's metadata lock, which the transaction holds from join to
 * commit, so pre and post bracket exactly this call's change. The first
 * res_pre of a call takes the pre snapshot; a later one (the call's next
 * transaction) only checks that the change attribute is still what the
 * last res_post saw, and clears has_pre if not. Without FS_RES_ATTRS they
 * copy nothing.
 */
static inline void res_init(struct fs_result *res)
{
	if (!res)
		return;
	res->csn = 0;
	res->ino[0].has_pre = res->ino[0].has_post = false;
	res->ino[1].has_pre = res->ino[1].has_post = false;
}
void res_pre(struct fs_result *res, unsigned slot, struct fs_inode *ip);
void res_post(struct fs_result *res, unsigned slot, struct fs_inode *ip);
/* Take the global locks in `locks` that the transaction does not hold yet,
 * in order (inode allocation before block allocation). */
void fstx_lock(struct fstx *tx, unsigned locks);
/* Blocks: take back part of a reservation / reserve more (-ENOSPC); with
 * freeing, as an operation that frees space (see fstx.c). */
int fs_reserve_blocks(struct fs *fs, uint64_t n, bool freeing);
void fs_unreserve_blocks(struct fs *fs, uint64_t n);

/* ---- B+trees (btree.c) ---- */

struct bt;

struct bt_ops {
	/* persist a new root (logs the superblock or the owning inode) */
	void (*set_root)(struct bt *bt, struct fstx *tx, uint64_t root, uint16_t level);
	int (*alloc_block)(struct bt *bt, struct fstx *tx, uint64_t *blkno);
	void (*free_block)(struct bt *bt, struct fstx *tx, uint64_t blkno);
};

struct bt {
	struct fs *fs;
	const struct fs_verifier *v;
	uint64_t owner;
	uint64_t root;
	uint16_t level;
	const struct bt_ops *ops;
	void *priv;
};

struct bt_cursor {
	struct bt *bt;
	int depth; /* levels in the path */
	struct {
		struct fsbuf *bp;
		int idx;
	} path[FS_BT_MAXLEVELS];
};

enum bt_dir { BT_EQ, BT_LE, BT_GE };

static inline int bt_keycmp(const struct fs_btkey *a, const struct fs_btkey *b)
{
	if (a->k0 != b->k0)
		return a->k0 < b->k0 ? -1 : 1;
	if (a->k1 != b->k1)
		return a->k1 < b->k1 ? -1 : 1;
	return 0;
}

/* Position c at the record equal to / last <= / first >= key. Returns 1 if
 * positioned, 0 if there is no such record, -errno. The cursor holds buffer
 * references until bt_cursor_done(). */
int bt_lookup(struct bt *bt, const struct fs_btkey *key, enum bt_dir dir, struct bt_cursor *c);
/* Move to the next / previous record: 1, 0 at the end, -errno. */
int bt_next(struct bt_cursor *c);
int bt_prev(struct bt_cursor *c);
/* The current record: its key, and its value copied to val (up to max;
 * *len gets the real length). */
void bt_get(struct bt_cursor *c, struct fs_btkey *key, void *val, size_t max, size_t *len);
void bt_cursor_done(struct bt_cursor *c);

int bt_insert(struct fstx *tx, struct bt *bt, const struct fs_btkey *key, const void *val,
	      size_t len);
/* Replace the value of an existing key (the size may change). */
int bt_update(struct fstx *tx, struct bt *bt, const struct fs_btkey *key, const void *val,
	      size_t len);
int bt_delete(struct fstx *tx, struct bt *bt, const struct fs_btkey *key);
/* A new tree: one empty leaf. */
int bt_create(struct fstx *tx, struct bt *bt);
/* Free every block of the tree (the tree is gone). */
int bt_destroy(struct fstx *tx, struct bt *bt);
/* Blocks a modification may need, worst case. */
static inline unsigned bt_max_new_blocks(const struct bt *bt)
{
	return (unsigned)bt->level + 2;
}

/* ---- block allocation (alloc.c) ---- */

int alloc_mount(struct fs *fs);
/* Allocate up to want (at least min) contiguous blocks near hint; counts
 * against the transaction's reservation. */
int alloc_extent(struct fstx *tx, uint64_t hint, uint64_t want, uint64_t min, uint64_t *start,
		 uint64_t *len);
/* Free blocks; they stay busy (not reused) until the transaction is durable. */
int alloc_free(struct fstx *tx, uint64_t start, uint64_t len);
/* The bt_ops for trees whose blocks come from the allocator. */
extern const struct bt_ops alloc_bt_ops;
void alloc_busy_done(struct fs *fs, struct list *busy);
int64_t alloc_free_blocks(struct fs *fs);

/* ---- inodes (inode.c, ino_item.c, ialloc.c) ---- */

/* Fields changed in a transaction, for fdatasync. */
#define FS_ILOG_CORE      0x01u /* size, mode, nlink, owner... */
#define FS_ILOG_TIMESTAMP 0x02u /* atime/mtime/ctime only */
#define FS_ILOG_CHANGE    0x04u /* change attribute only */
#define FS_ILOG_EXTENTS   0x08u /* extent map, allocation, conversion */
#define FS_ILOG_DATA      0x10u /* directory contents, symlink target */
#define FS_ILOG_EOFBLOCKS 0x20u /* blocks past EOF given back (eofblocks.c) */
#define FS_ILOG_LDATA     0x40u /* file data logged, or logged data cancelled */
#define FS_ILOG_XATTR     0x80u /* extended attributes (xattr.c) */
/* Not forced by fdatasync: nothing a read of the data needs. */
#define FS_ILOG_NOSYNC    (FS_ILOG_TIMESTAMP | FS_ILOG_CHANGE | FS_ILOG_EOFBLOCKS | FS_ILOG_XATTR)

struct ino_item {
	struct log_item ii_item;
	struct mutex ii_lock; /* rank 390 */
	int ii_pin;
	unsigned ii_fields;         /* changed in the current transaction */
	uint64_t ii_commit_seq;     /* last commit touching the inode */
	uint64_t ii_datasync_seq;   /* last commit that matters for reading data */
	bool ii_logged;             /* the inode has been logged since it was written back */
};

/*
 * The in-core inode (fields native-endian); guarded by i_ilock, except the
 * map of a file's extents or of a directory's entries (nextents, ext[],
 * root, root_level and FS_DIF_EXT_BTREE in flags), which i_iolock guards:
 * read with it held shared, changed with it held exclusively by a
 * transaction the inode is joined to (so i_ilock too).
 */
struct fs_icore {
	uint32_t nlink, gen; /* first: a lookup reads them (struct fs_inode) */
	uint32_t mode, uid, gid, flags;
	uint64_t size, nblocks;
	struct timespec atime, mtime, ctime, btime;
	uint64_t change;
	uint64_t rdev, parent, root;
	uint16_t root_level;
	uint16_t nextents; /* inline extents (0 with an extent tree) */
	/* extended attributes (xattr.c): guarded as the extent map is */
	uint64_t xattr_root;
	uint16_t xattr_level, xattr_count;
	uint32_t xattr_bytes;
	union { /* as on disk: a symlink's target, or a file's extents */
		struct fs_dext ext[FS_INLINE_EXTENTS];
		char symlink[FS_INLINE_SYMLINK];
	};
};

struct fs_layout {
	uint64_t id; /* fs_layout_get's, for fs_layout_trim */
	uint64_t holder;
	uint64_t off, len;
	bool rw;
	bool recalling;
	struct fs_layout *next;
};

/* Blocks an RW layout's map allocated over holes (fs_layout_map), kept
 * until no RW layout covers them; then the ones still unwritten are freed
 * (layouts.c, invariants L1-L4). */
struct fs_layout_alloc {
	uint64_t first, end; /* file blocks [first, end) */
	struct fs_layout_alloc *next;
};

/* What a lookup of a cached inode touches (i_ref, i_freed, i_lru_ref,
 * i_ilock, i_d.nlink and i_d.gen) comes first, within two cache lines: in
 * a big directory each of them is a miss. */
struct fs_inode {
	struct fs *i_fs;
	uint64_t i_ino;
	_Atomic int i_ref;
	bool i_freed;   /* the inode was freed; the number may be reused */
	bool i_freeing; /* the last reference of an unlinked inode went: it is
			 * being freed (or that failed), no get finds it */
	bool i_lru_ref; /* used since the shrink last looked (icache lock) */
	bool i_new;     /* allocated, not yet written back once */
	bool i_evictable;
	struct fs_icore i_d;
	struct mutex i_ilock;
	struct rwlock i_iolock;
	struct ino_item i_item;
	struct list i_lru; /* every cached inode, oldest first (icache lock) */
	uint64_t i_prealloc; /* speculative preallocation hint (blocks) */
	/* bumped (i_iolock exclusive) whenever blocks leave the extent map: a
	 * writer that wrote under the shared I/O lock and converts under the
	 * exclusive one knows from it that its blocks are still its own
	 * (file.c, write_unwritten) */
	uint64_t i_unmap_gen;
	/* writes of the file inside fs_write/fs_write_sync now: a
	 * synchronous write logs its data only when it is the only one
	 * (file.c, ldata_ok) */
	_Atomic unsigned i_writes;
	/* where the file's last synchronous write ended: a large one that
	 * continues it is a stream's, and is not logged (file.c, ldata_ok) */
	_Atomic uint64_t i_sync_next;
	/* readahead (readahead.c): the data generation, a value of
	 * f_data_gen set when the inode is set up in memory and replaced by a
	 * fresh one after every change of the file's data or block map
	 * (ino_data_changed); where the last read ended, and whether it
	 * followed the one before (readahead.c, R5) */
	_Atomic uint64_t i_data_gen;
	_Atomic uint64_t i_ra_next;
	_Atomic bool i_ra_seq;	/* the last read was sequential */
	struct list i_eof_link; /* on f_eof: preallocated past EOF (eofblocks.c) */
	uint64_t i_eof_ns;       /* its last appending write (f_eof_lock) */
	/* layouts (guarded by the fs layout lock) */
	struct fs_layout *i_layouts;
	struct fs_layout_waiter *i_layout_waiters;
	struct fs_layout_alloc *i_layout_allocs;
	/* i_layouts != NULL, for readers without the layout lock (layouts.c,
	 * layouts_changed) */
	_Atomic bool i_has_layouts;
};

int ino_cache_init(struct fs *fs);
void ino_cache_destroy(struct fs *fs);
/* Lock an inode's metadata and join it to the transaction; the item's
 * release at commit unlocks it. Two inodes: ino_join2 orders them. */
void ino_join(struct fstx *tx, struct fs_inode *ip);
void ino_join2(struct fstx *tx, struct fs_inode *a, struct fs_inode *b);
/* Mark fields changed (the inode must be joined). The extent map or the
 * core (size) changes the file's data generation (ino_data_changed). */
void ino_log(struct fstx *tx, struct fs_inode *ip, unsigned fields);
/* The file's data or block map changed, and the change is visible to a read
 * from now on: readahead windows filled before are stale (readahead.c, R2). */
void ino_data_changed(struct fs_inode *ip);
/* What the whole transaction changed in ip is fields, whatever the code it
 * called marked (a trim past EOF marks extents, yet no read depends on it). */
void ino_log_only(struct fstx *tx, struct fs_inode *ip, unsigned fields);
/* Update ctime (and mtime) to now and bump the change attribute. */
void ino_touch(struct fs_inode *ip, bool mtime);
/* fs_getattr with i_ilock held. */
void ino_attr(const struct fs_inode *ip, struct fs_attr *a);
void ino_to_disk(const struct fs_inode *ip, struct fs_dinode *d);
int ino_from_disk(struct fs_inode *ip, const struct fs_dinode *d);
void ino_stamp(struct fs_dinode *d, uint64_t lsn);
/* An on-disk inode (0 or -EUCLEAN with a message); blocks: the device size. */
int ino_verify(const struct fs_dinode *d, uint64_t ino, uint64_t blocks);
struct fs_inode *ino_alloc_incore(struct fs *fs, uint64_t ino);
/* Insert a new inode into the cache (after ialloc). */
void ino_cache_insert(struct fs *fs, struct fs_inode *ip);
/* The in-core inode for a number just allocated, referenced, i_ilock and
 * i_iolock (exclusive) held: the caller drops the I/O lock after its
 * commit (-EUCLEAN if that number is in use after all). */
int ino_get_new(struct fs *fs, uint64_t ino, struct fs_inode **ipp);
void ino_join_locked(struct fstx *tx, struct fs_inode *ip);
unsigned ino_ftype(uint32_t mode);

extern const struct log_item_ops ino_item_ops;
void ino_item_init(struct fs_inode *ip);
bool ino_item_busy(struct fs_inode *ip);

int ialloc_mount(struct fs *fs);
/* Allocate an inode number (creating a chunk if needed). */
int ialloc_alloc(struct fstx *tx, uint64_t near, uint64_t *ino);
int ialloc_free(struct fstx *tx, uint64_t ino);
/* Is ino an allocated inode? */
int ialloc_is_allocated(struct fs *fs, uint64_t ino, bool *allocated);
int orphan_add(struct fstx *tx, uint64_t ino);
int orphan_remove(struct fstx *tx, uint64_t ino);
int orphan_recover(struct fs *fs);
/* iget that also returns an unlinked inode (orphan processing). */
int fs_iget_orphan(struct fs *fs, uint64_t ino, struct fs_inode **ipp);
/* Free an unlinked inode whose last reference went: truncate, free. */
int ino_inactive(struct fs_inode *ip);

/* Speculative preallocation (eofblocks.c): eof_note after an appending
 * write preallocated past EOF, or when an inode read from disk holds more
 * blocks than its size needs (left by a crash); the trimmer thread runs
 * from eof_start to eof_stop, which trims what is still listed. */
void eof_note(struct fs_inode *ip);
int eof_start(struct fs *fs, uint64_t idle_ns);
void eof_stop(struct fs *fs);
/* An inode just unlinked (caller's reference held, no lock): off the list,
 * so that the caller's fs_iput frees it now rather than the trimmer later. */
void eof_forget(struct fs_inode *ip);
/* Inodes waiting for their preallocation to be trimmed. */
uint64_t eof_listed(struct fs *fs);

/* ---- extent maps (bmap.c) ---- */

struct bmap_ext {
	uint64_t off;   /* file block */
	uint64_t start; /* device block */
	uint64_t len;
	bool unwritten;
};

/* The extent containing file block off, or the hole up to the next extent
 * (start 0, len to the next extent or UINT64_MAX - off). I/O lock held,
 * shared or exclusively (struct fs_icore). The changes below: I/O lock held
 * exclusively, the inode joined to tx. */
int bmap_lookup(struct fs_inode *ip, uint64_t off, struct bmap_ext *e, bool *hole);
/* Map a hole [off, off+len) to blocks from start (the range must be a hole). */
int bmap_add(struct fstx *tx, struct fs_inode *ip, uint64_t off, uint64_t start, uint64_t len,
	     bool unwritten);
/* Remove [off, off+len) from the map and free the blocks, a batch of extents
 * at a time: *next gets the file block to continue from (off + len when
 * done), so that callers can spread a big punch over transactions. */
int bmap_punch(struct fstx *tx, struct fs_inode *ip, uint64_t off, uint64_t len, uint64_t *next);
/* Mark [off, off+len) written (or unwritten). Holes are skipped. */
int bmap_set_written(struct fstx *tx, struct fs_inode *ip, uint64_t off, uint64_t len,
		     bool written);
/* Blocks a bmap change may need (tree splits, conversion to a tree). */
unsigned bmap_res(struct fs_inode *ip);
/* Visit every extent (for check and truncate). fn returns nonzero to stop. */
int bmap_walk(struct fs_inode *ip, int (*fn)(void *arg, const struct bmap_ext *e), void *arg);
/* The tree of an inode with FS_DIF_EXT_BTREE. */
void bmap_bt(struct fs_inode *ip, struct bt *bt);

/* ---- file data (file.c) ---- */

/* Set the size with the I/O lock held exclusively; tx (may be NULL) is an
 * open transaction the inode is joined to, which this commits. */
int file_truncate(struct fs_inode *ip, uint64_t size, struct fstx *tx, struct fs_result *res);
/* Unwritten blocks over every hole of [first, last] (I/O lock held
 * exclusively). */
int file_alloc_holes(struct fs_inode *ip, uint64_t first, uint64_t last, struct fs_result *res);

/* ---- durable records (rec.c) ---- */

int rec_mount(struct fs *fs);
/* The hash a record key is filed under (FS_REC_HASH_MASK bits). */
uint64_t rec_hash(struct fs *fs, const void *key, size_t len);
/* Parse and verify one record's fragments (frag1 NULL for a one-fragment
 * record) into key/val: 0, or -EUCLEAN with *why set. */
int rec_decode(const uint8_t *frag0, size_t len0, const uint8_t *frag1, size_t len1,
	       uint8_t key[FS_REC_KEY_MAX], size_t *klen, uint8_t val[FS_REC_VALUE_MAX],
	       size_t *vlen, unsigned *nfrags, const char **why);

/* ---- extended attributes (xattr.c) ---- */

/* The attribute tree of ip (xattr_root set). */
void xattr_bt(struct fs_inode *ip, struct bt *bt);
/* Free an unlinked inode's attributes and their tree, a batch of
 * attributes per transaction (I/O lock held exclusively). */
int xattr_free_all(struct fs_inode *ip);
/* Parse and verify one attribute's fragment 0: 0, or -EUCLEAN and *why. */
int xattr_decode_head(const uint8_t *frag0, size_t len0, struct fs_dxattr *x,
		      const char **name, const char **why);
uint32_t xattr_crc(const void *name, size_t nlen, const void *val, size_t vlen);

/* ---- directories (dir.c) ---- */

/* The directory's I/O lock held: shared to read (dir_lookup, dir_is_empty),
 * exclusively to change (dir_create_tree: the new directory's, which
 * ino_get_new returns held). */
void dir_bt(struct fs_inode *dp, struct bt *bt);
int dir_create_tree(struct fstx *tx, struct fs_inode *dp);
int dir_lookup(struct fs_inode *dp, const char *name, size_t len, uint64_t *ino, unsigned *type);
int dir_add(struct fstx *tx, struct fs_inode *dp, const char *name, size_t len, uint64_t ino,
	    unsigned type);
int dir_remove(struct fstx *tx, struct fs_inode *dp, const char *name, size_t len);
/* Point an existing entry at another inode (rename over a target). */
int dir_replace(struct fstx *tx, struct fs_inode *dp, const char *name, size_t len,
		uint64_t ino, unsigned type);
int dir_is_empty(struct fs_inode *dp, bool *empty);
/* Is directory a an ancestor of (or equal to) directory d? Walks d's
 * parents; an unlinked directory has none. Stable under the rename lock. */
int dir_is_ancestor(struct fs_inode *a, struct fs_inode *d, bool *yes);
/* Lock a rename's parents exclusively (D2 above): one directory alone; two
 * under the rename lock, the ancestor first, else the lower number first.
 * dir_unlock2 drops what dir_lock2 took. */
int dir_lock2(struct fs_inode *sdp, struct fs_inode *ddp);
void dir_unlock2(struct fs_inode *sdp, struct fs_inode *ddp);
uint64_t dir_hash(const char *name, size_t len);

/* ---- the filesystem ---- */

struct fs {
	struct dev *f_ddev, *f_ldev;
	struct log *f_log;
	struct fsbuf *f_sbp; /* the superblock buffer, referenced while mounted */
	struct fs_dsb *f_sb; /* its data */
	uint64_t f_blocks;
	uint8_t f_uuid[16];
	uint8_t f_secret[FS_SECRET_SIZE];
	bool f_readonly_check;
	_Atomic bool f_shutdown;

	/* buffer cache */
	struct mutex f_bcache_lock;
	struct hashmap f_bufs;
	struct list f_buf_lru;
	uint64_t f_nbufs, f_nbufs_max;
	unsigned f_bshrink_skip; /* releases left before the next shrink try */

	/* inode cache */
	struct mutex f_icache_lock;
	struct hashmap f_inodes;
	struct list f_ilru;
	uint64_t f_ninodes, f_ninodes_max;
	unsigned f_ishrink_skip; /* iputs left before the next shrink try */
	struct cond f_icache_cond;

	/* allocation */
	struct mutex f_ialloc_lock;
	struct mutex f_alloc_lock;
	struct mutex f_busy_lock;
	struct mutex f_resv_lock;
	struct cond f_busy_cond;
	struct cond f_resv_cond; /* f_resv went down or f_free up (f_resv_lock) */
	unsigned f_resv_waiters;  /* freeing reservations waiting (f_resv_lock) */
	struct list f_busy; /* struct fs_busy, freed and not yet durable */
	int64_t f_free;     /* free blocks in the free-space tree (f_resv_lock) */
	int64_t f_resv;     /* reserved by open transactions (f_resv_lock) */
	int64_t f_reserve;  /* kept back for metadata of any transaction */
	uint64_t f_alloc_hint;
	_Atomic uint64_t f_icount, f_ifree; /* inodes in chunks: used, free */
	uint64_t f_ialloc_hint;

	struct mutex f_rename_lock; /* renames between two directories (D2) */

	/* durable records (rec.c) */
	struct mutex f_rec_lock; /* fs.records */
	uint8_t f_rec_key[16];   /* the records' hash key, from the secret */

	/* speculative preallocation, trimmed when idle (eofblocks.c) */
	struct mutex f_eof_lock;
	struct cond f_eof_cond;
	struct list f_eof; /* struct fs_inode by i_eof_link, each referenced */
	uint64_t f_eof_idle_ns;
	uint64_t f_eof_count; /* inodes on f_eof */
	uint64_t f_eof_asked, f_eof_done; /* passes over all asked for, done */
	bool f_eof_stop, f_eof_running;
	pthread_t f_eof_thread;

	/* readahead windows (readahead.c) */
	struct mutex f_ra_lock;
	struct cond f_ra_cond;	     /* a window stopped filling */
	struct fs_ra_window *f_ra;   /* f_ra_n of them */
	unsigned f_ra_n;
	uint64_t f_ra_tick;	     /* the last use stamp given (f_ra_lock) */
	bool f_ra_off;		     /* fs_mount_opts.readahead_off */
	_Atomic uint64_t f_data_gen; /* the last data generation handed out */

	/* layouts */
	struct mutex f_layout_lock;
	struct cond f_layout_cond;
	struct fs_layout_ops f_layout_ops;
	uint64_t f_layout_next_id; /* under f_layout_lock */

	struct {
		counter_t writes, write_bytes, reads, read_bytes;
		counter_t shared_conversions, shared_conversion_redos;
		counter_t fsyncs, fdatasyncs, fsync_log_writes, fsync_flushes;
		counter_t allocs, alloc_blocks, frees, free_blocks, busy_forces;
		counter_t inode_writebacks, inode_allocs, inode_frees;
		counter_t timestamp_txns, commit_blocks, map_blocks;
		counter_t layout_recalls, layout_delays, layout_waits;
		counter_t freelist_short; /* frees that went on with a short free list (alloc.c) */
		counter_t layout_givebacks, layout_giveback_blocks;
		counter_t buf_reads, buf_hits, buf_evictions;
		counter_t eof_trims, eof_trim_blocks;
		counter_t rec_puts, rec_deletes;
		counter_t xattr_sets, xattr_removes, xattr_gets, xattr_lists, xattr_frees;
		counter_t logged_writes, logged_bytes, logged_overwrites, logged_concurrent,
			logged_streaming;
		counter_t ra_fills, ra_prefetches, ra_hits, ra_stale;
	} f_stats;
	uint32_t f_ldata_max; /* largest write whose data is logged (file.c) */
	bool f_bench_sync_lc; /* fs_mount_opts.bench_sync_layoutcommit (layouts.c) */
};

/* Shut down by fs_shutdown(), or by the journal after a log or write-back
 * I/O error (a metadata write error): either way every operation fails
 * with EIO from then on. */
static inline bool fs_is_shutdown(struct fs *fs)
{
	return atomic_load(&fs->f_shutdown) || log_is_shutdown(fs->f_log);
}

static inline uint64_t fs_daddr(uint64_t blkno)
{
	return blkno << FS_BLOCK_SHIFT;
}

/* Readahead (readahead.c). */
#define FS_RA_BYTES (1u << 20)
void ra_init(struct fs *fs, bool off, unsigned windows);
void ra_destroy(struct fs *fs);
/* Serve a read of [off, off+len), inside the file's size, from the windows
 * (shared I/O lock held): true when it did (*err its result, the bytes in
 * out), false when the caller reads from the device. */
bool ra_read(struct fs_inode *ip, uint64_t off, uint8_t *out, size_t len, uint64_t size, int *err);
/* Read [off, off+len) of the file from its blocks (holes and unwritten
 * blocks as zeros; shared I/O lock held; file.c). */
int file_read_range(struct fs_inode *ip, uint64_t off, uint8_t *out, size_t len);

/* The smallest log mkfs makes (see fs_mkfs). */
#define FS_LOG_MIN (512u << 10)

void fs_now(struct timespec *ts);
/* The superblock: join and log a byte range of it. */
void fs_log_sb(struct fstx *tx, uint32_t off, uint32_t len);
#define FS_LOG_SB_FIELD(tx, field)                                                                 \
	fs_log_sb((tx), (uint32_t)offsetof(struct fs_dsb, field),                                  \
		  (uint32_t)sizeof(((struct fs_dsb *)0)->field))

#endif
