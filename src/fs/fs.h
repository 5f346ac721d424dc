/*
 * fs.h - the filesystem engine's API: what the protocol layers, the jnfs
 * tool and the tests call. Nothing here knows about NFS.
 *
 * Conventions:
 *   - Every function returns 0 or -errno.
 *   - struct fs_inode is an opaque, counted reference. Functions that return
 *     one (fs_root, fs_iget, fs_lookup, fs_create) give the caller a
 *     reference, released with fs_iput(). Functions taking one borrow it.
 *   - Names are (pointer, length), 1..FS_NAME_MAX bytes, no '/' and no NUL;
 *     "." and ".." are refused where an entry is created or removed.
 *   - Modifying operations take `struct fs_result *res` (may be NULL):
 *     res->csn is the commit sequence of their (last) transaction, 0 if
 *     nothing was logged. The change is durable once fs_force(fs, res->csn)
 *     returned; that is how a sync export makes a metadata operation stable
 *     (docs/design.md rule 7), forcing only as far as its own transaction.
 *     On request the same struct brings back the attributes of the inodes
 *     the call changed, before and after, atomic with the change (below).
 *   - Permission checks are the caller's (docs/permissions.md has the rules);
 *     the engine checks structure: ENOTDIR, EISDIR, ENOTEMPTY, EEXIST,
 *     ENOENT, EXDEV...
 *
 * Durability of data (docs/design.md rules 3-6): fs_write() writes in place and
 * logs what it must; fs_fsync(datasync) forces the log to the inode's
 * datasync or commit sequence, without holding an inode lock, and flushes
 * the data device if that wrote nothing. fs_commit_blocks() is the pNFS
 * LAYOUTCOMMIT and behaves as fdatasync.
 */
#ifndef JNFS_FS_FS_H
#define JNFS_FS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "base/stats.h"

struct fs;
struct fs_inode;
/* A block device (dev/dev.h): the caller opens it, hands it to mkfs and
 * mount, and closes it after unmount. The engine uses it only inside. */
struct dev;

/* ---- making, mounting ---- */

struct fs_mkfs_opts {
	struct dev *ddev;        /* data device */
	struct dev *ldev;        /* external log device, or NULL for an internal log */
	uint64_t log_size;       /* bytes; 0: chosen from the device size */
	const uint8_t *uuid;     /* 16 bytes, or NULL for a random one */
	const char *label;
};
int fs_mkfs(const struct fs_mkfs_opts *o);

struct fs_mount_opts {
	struct dev *ddev;
	struct dev *ldev;           /* external log device, or NULL */
	uint64_t push_interval_ns;  /* background log push (0: 30 s) */
	unsigned log_bufs, log_buf_size; /* 0: journal defaults */
	bool readonly_check;        /* used by check: no orphan processing */
	uint64_t eof_idle_ns;       /* preallocation past EOF kept while appends come (0: 5 s) */
	/* fs_write_sync logs the data of writes of at most this many bytes
	 * (docs/logged-data.md); 0: FS_LOGGED_DATA_DEFAULT; FS_LOGGED_DATA_OFF:
	 * never */
	uint32_t logged_data_max;
	/* benchmarks only: fs_commit_blocks() logs the whole inode and forces
	 * its own transaction, as a synchronous transaction would (what a
	 * LAYOUTCOMMIT cost before docs/design.md rule 6), so that the two
	 * can be measured side by side; never for serving */
	bool bench_sync_layoutcommit;
	/* no readahead windows: every read goes to the device (to compare;
	 * fs/readahead.c) */
	bool readahead_off;
	/* readahead windows of 1 MiB (fs/readahead.c, R6); 0:
	 * FS_RA_WINDOWS_DEFAULT */
	unsigned readahead_windows;
};
#define FS_RA_WINDOWS_DEFAULT 64u
#define FS_RA_WINDOWS_MAX     1024u
#define FS_LOGGED_DATA_DEFAULT (64u << 10)
#define FS_LOGGED_DATA_OFF     UINT32_MAX
int fs_mount(const struct fs_mount_opts *o, struct fs **out);
/* Clean unmount: every inode released, the log written back and closed.
 * Returns -EIO if the filesystem was shut down. */
int fs_unmount(struct fs *fs);
/* Stop everything after a fatal error; later calls fail with -EIO. */
void fs_shutdown(struct fs *fs, const char *why);
/* Free now every file's speculative preallocation past EOF (what an
 * allocation that found no space does before it gives up). */
void fs_trim_eofblocks(struct fs *fs);

struct dev *fs_data_dev(struct fs *fs);
const uint8_t *fs_uuid(struct fs *fs);
/* The file-handle secret kept in the superblock (32 bytes). */
const uint8_t *fs_handle_secret(struct fs *fs);

/* ---- inodes ---- */

int fs_root(struct fs *fs, struct fs_inode **ip);
/* By number; with gen != 0 the generation must match, else -ESTALE. A number
 * that is not an allocated inode is -ESTALE too. An inode whose last name
 * went (unlink, rename over it) is found while someone still holds it (an
 * open file), and is -ESTALE once its last reference went. */
int fs_iget(struct fs *fs, uint64_t ino, uint32_t gen, struct fs_inode **ip);
/* Another reference to an inode the caller holds one of. */
void fs_igrab(struct fs_inode *ip);
void fs_iput(struct fs_inode *ip);
uint64_t fs_ino(const struct fs_inode *ip);
struct fs *fs_of(const struct fs_inode *ip);

struct fs_attr {
	uint64_t ino;
	uint32_t gen;
	uint32_t mode; /* S_IFMT | permissions */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;
	uint64_t used; /* bytes allocated */
	uint64_t rdev;
	struct timespec atime, mtime, ctime, btime;
	uint64_t change; /* grows on every data or metadata change */
};
int fs_getattr(struct fs_inode *ip, struct fs_attr *a);

/*
 * What a modifying call did (see the conventions above). The caller sets
 * `want`; the call sets everything else, whether it succeeds or fails.
 *
 * With FS_RES_ATTRS the call reports, per inode it changes (ino[0] and
 * ino[1]: each call below says which), its attributes taken under the
 * lock that orders changes of that inode (the metadata lock a transaction
 * holds until it commits):
 *   - pre: just before the call changed it; post: just after.
 *   - has_pre: the pair is atomic, no other change came between pre and
 *     post (NFSv3 weak cache consistency, NFSv4 change_info4 "atomic").
 *     A call that changes the inode in several transactions (a write into
 *     holes, a long truncate or fallocate) checks at each one that nobody
 *     else changed it meanwhile (the change attribute), and clears has_pre
 *     if somebody did.
 *   - has_post: post holds the inode's attributes right after the call's
 *     last change of it. A call that stopped before it got to the inode
 *     (an error, or nothing to do) sets neither: the inode is as it was.
 * Without FS_RES_ATTRS nothing is copied and has_pre/has_post stay false.
 */
struct fs_wcc {
	uint64_t size;
	struct timespec mtime, ctime;
	uint64_t change;
};

#define FS_RES_ATTRS 0x1u

struct fs_result {
	unsigned want; /* in: FS_RES_* */
	uint64_t csn;  /* out */
	struct fs_res_ino {
		bool has_pre, has_post;
		struct fs_wcc pre;
		struct fs_attr post;
	} ino[2];
};

#define FS_SET_MODE      0x01u
#define FS_SET_UID       0x02u
#define FS_SET_GID       0x04u
#define FS_SET_SIZE      0x08u
#define FS_SET_ATIME     0x10u /* to .atime */
#define FS_SET_MTIME     0x20u /* to .mtime */
#define FS_SET_ATIME_NOW 0x40u
#define FS_SET_MTIME_NOW 0x80u
#define FS_SET_CTIME     0x100u /* to .ctime (restores, e.g. exclusive-create verifiers) */
/* Clear S_ISUID / S_ISGID if set, under the inode's lock and after any
 * FS_SET_MODE (the kernel's ATTR_KILL_SUID/SGID: what a write or a chown
 * clears). A call with only these flags whose bits are already clear
 * changes nothing, not even ctime, and logs nothing. */
#define FS_KILL_SUID     0x200u
#define FS_KILL_SGID     0x400u
#define FS_SET_GUARD     0x800u /* only if the ctime is .guard_ctime (NFSv3 SETATTR guard) */

struct fs_setattr {
	unsigned mask;
	uint32_t mode, uid, gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
	struct timespec guard_ctime;
};
/*
 * res->ino[0]: ip. With FS_SET_GUARD the ctime is compared under the same
 * lock as the change: -ECANCELED (nothing changed) if it differs. A guard
 * alone (no other FS_SET_* bit) changes nothing either way.
 */
int fs_setattr(struct fs_inode *ip, const struct fs_setattr *sa, struct fs_result *res);

/* ---- namespace ---- */

int fs_lookup(struct fs_inode *dir, const char *name, size_t len, struct fs_inode **ip);

struct fs_create_args {
	uint32_t mode; /* S_IFMT type and permissions */
	uint32_t uid, gid;
	uint64_t rdev;          /* devices */
	const char *target;     /* symlinks */
	size_t target_len;
};
/* res->ino[0]: dir. */
int fs_create(struct fs_inode *dir, const char *name, size_t len, const struct fs_create_args *a,
	      struct fs_inode **ip, struct fs_result *res);
/* res->ino[0]: dir, ino[1]: ip. */
int fs_link(struct fs_inode *ip, struct fs_inode *dir, const char *name, size_t len,
	    struct fs_result *res);
/* Remove a non-directory (unlink) or an empty directory (rmdir).
 * res->ino[0]: dir. */
int fs_unlink(struct fs_inode *dir, const char *name, size_t len, struct fs_result *res);
int fs_rmdir(struct fs_inode *dir, const char *name, size_t len, struct fs_result *res);
/* Replaces an existing target (file over file, empty dir over dir).
 * res->ino[0]: sdir, ino[1]: ddir (the same inode twice within one
 * directory). */
int fs_rename(struct fs_inode *sdir, const char *sname, size_t slen, struct fs_inode *ddir,
	      const char *dname, size_t dlen, struct fs_result *res);

/*
 * Does dir lie under anc (or is it anc)? Walks dir's parents up to anc or
 * the root while no directory can move to another parent (cross-directory
 * renames wait), so the answer held at one moment: O(depth) inodes, most
 * of them cached. -ESTALE if dir was removed, -ELOOP past 4096 levels.
 */
int fs_is_subdir(struct fs_inode *dir, struct fs_inode *anc, bool *yes);

/*
 * Entries after cookie (0: from the start; "." and ".." come first with
 * cookies 1 and 2). fn returns nonzero to stop; the cookie it is given
 * resumes after that entry. Cookies stay valid while entries come and go.
 */
typedef int (*fs_filldir_t)(void *arg, const char *name, size_t len, uint64_t ino,
			    unsigned type, uint64_t cookie);
int fs_readdir(struct fs_inode *dir, uint64_t cookie, fs_filldir_t fn, void *arg);
int fs_readlink(struct fs_inode *ip, char *buf, size_t size, size_t *len);

/* ---- data ---- */

/*
 * The largest file: no write, size, allocation or layout may end past it
 * (-EFBIG; fs_map_blocks: -EINVAL). 2^50 bytes (1 PiB) keeps every byte
 * offset of a file block, and every end of a range, far from overflow.
 * Protocols advertise it (NFSv3 FSINFO maxfilesize, NFSv4 maxfilesize).
 */
#define FS_MAX_FILE_SIZE (1ull << 50)

/*
 * An overwrite moves mtime and ctime only when this much time has passed
 * since mtime was last set (a clock tick, as kernel filesystems do); the
 * change attribute moves on every write. Within a tick, fsync after an
 * overwrite flushes the data device and writes no log.
 */
#define FS_TIME_GRAN_NS 4000000ull

int fs_read(struct fs_inode *ip, uint64_t off, void *buf, size_t len, size_t *nread, bool *eof);
/* res->ino[0]: ip. */
int fs_write(struct fs_inode *ip, uint64_t off, const void *buf, size_t len, struct fs_result *res);
/*
 * A write the caller makes stable at once (NFS FILE_SYNC and DATA_SYNC):
 * fs_write, except that a small one with no other write of the file in
 * flight may go through the journal (docs/logged-data.md): its data is
 * logged with its metadata, *data_logged is set, and forcing the log to
 * the inode's sync sequence then makes the data durable too, with no flush
 * of the data device (rule 5 does not apply).
 * When *data_logged is clear, the caller flushes as after fs_write; since
 * it does so at once, the write's data never waits for flush-behind's
 * limit (dev.h, B2).
 */
int fs_write_sync(struct fs_inode *ip, uint64_t off, const void *buf, size_t len,
		  struct fs_result *res, bool *data_logged);
/* docs/design.md rules 3-5. *log_written (may be NULL): the force wrote the log. */
int fs_fsync(struct fs_inode *ip, bool datasync, bool *log_written);

#define FS_FALLOC_ALLOC     0 /* unwritten extents over holes */
#define FS_FALLOC_PUNCH     1 /* deallocate; reads return zeros */
#define FS_FALLOC_ZERO      2 /* reads return zeros; space stays allocated */
#define FS_FALLOC_KEEP_SIZE 0x100
/* res->ino[0]: ip. */
int fs_fallocate(struct fs_inode *ip, int mode, uint64_t off, uint64_t len, struct fs_result *res);

#define FS_SEEK_DATA 0
#define FS_SEEK_HOLE 1
/* -ENXIO when there is no data (or hole) at or after off before EOF. */
int fs_seek(struct fs_inode *ip, uint64_t off, int what, uint64_t *out);
/* res->ino[0]: dst. */
int fs_copy_range(struct fs_inode *src, uint64_t soff, struct fs_inode *dst, uint64_t doff,
		  uint64_t len, uint64_t *copied, struct fs_result *res);

struct fs_statfs {
	uint64_t blocks, bfree; /* in FS_BLOCK_SIZE units */
	uint64_t files, ffree;
	uint32_t bsize, namemax;
};
int fs_statfs(struct fs *fs, struct fs_statfs *st);

/* ---- durability ---- */

/* Force the journal to csn (see above). */
int fs_force(struct fs *fs, uint64_t csn, bool *log_written);
/* Everything committed so far: log forced, data device flushed. */
int fs_sync(struct fs *fs);

/*
 * fsync without a thread waiting: fs_sync_seq() is the sequence fsync
 * (datasync) would force to (0: nothing to force); fs_force_async() starts
 * the force and calls w->fn once it is durable, with log_flushed telling
 * whether a data-device flush started after the call (if not, and data
 * must be durable, the caller still calls fs_flush_data(), rule 5). fn
 * runs on the journal's push thread and must not block. Returns 0 if csn
 * is durable already (fn is not called), 1 if fn will be, -errno. The
 * caller holds no engine lock: on an idle journal the checkpoint is
 * written on the caller's thread, and fn has then run before the call
 * returns.
 *
 * The waiter lives in the caller's request, so that parking one needs no
 * allocation; priv is the engine's room for its journal waiter (checked to
 * be large enough when the engine is built), opaque to the caller, and
 * the waiter must stay put until fn ran (or the call returned 0 or
 * -errno).
 */
#define FS_SYNC_WAITER_PRIV 64
struct fs_sync_waiter {
	void (*fn)(struct fs_sync_waiter *w, int err, bool log_flushed);
	union {
		unsigned char bytes[FS_SYNC_WAITER_PRIV];
		uint64_t align_u64;
		void *align_ptr;
	} priv;
};
uint64_t fs_sync_seq(struct fs_inode *ip, bool datasync);
int fs_force_async(struct fs *fs, uint64_t csn, struct fs_sync_waiter *w);

/*
 * Flush the data device's volatile cache: returns once a flush that started
 * after the call completed. Concurrent callers share one flush (dev.h,
 * shared flushes), so a caller may wait for the one under way to end and
 * the next to run. fs_flush_data_async() does not wait: w->fn runs once
 * that flush completed (0 is returned and fn is not called when nothing
 * was written since the last flush); with may_lead, a caller that finds no
 * flush under way runs it on its own thread and fn has run before the call
 * returns, otherwise fn runs on whichever thread ran the flush and must not
 * block.
 */
int fs_flush_data(struct fs *fs);
/* As struct fs_sync_waiter: priv is the engine's room for its device
 * waiter, and the waiter stays put until fn ran (or the call returned 0). */
#define FS_FLUSH_WAITER_PRIV 32
struct fs_flush_waiter {
	void (*fn)(struct fs_flush_waiter *w, int err);
	union {
		unsigned char bytes[FS_FLUSH_WAITER_PRIV];
		uint64_t align_u64;
		void *align_ptr;
	} priv;
};
int fs_flush_data_async(struct fs *fs, struct fs_flush_waiter *w, bool may_lead);

/*
 * The data epoch: moves whenever a write or a flush of the data device
 * failed, after which data that earlier writes reported written may be
 * lost (an image file's page cache drops the pages it failed to write back
 * and tells one flush only). Protocols fold it into their write verifier
 * (docs/design.md rule 8): read it before a WRITE's data goes to the
 * engine, and for COMMIT after its force and flush returned 0; a client
 * that sees the verifier of its WRITE and of its COMMIT differ sends the
 * data again. Every flush counts, whoever asked for it: fs_flush_data,
 * fsync, layout commits, fs_sync, and the journal's flush of the data
 * device before a checkpoint (which also shuts the filesystem down: it
 * cannot commit metadata that points at data that may be lost).
 */
uint64_t fs_data_epoch(struct fs *fs);

/*
 * A stable operation's data mark (src/dev/dev.h, F6): read it before the
 * operation's data goes to the engine (or, for a COMMIT, before its
 * verifier is read); once the sync that makes the data stable returned 0,
 * fs_data_lost_since() says whether a flush of the data device failed
 * meanwhile, whoever ran it (flush-behind, another client's COMMIT, the
 * journal): the data may then be lost although the sync succeeded, and
 * the operation fails with EIO instead of replying "stable". One atomic
 * load each.
 */
uint64_t fs_data_mark(struct fs *fs);
bool fs_data_lost_since(struct fs *fs, uint64_t mark);

/* ---- durable records ---- */

/*
 * A small store of records a protocol must find again after a restart
 * (NFSv4 client records, for reclaim in the grace period): a key of 1 to
 * FS_REC_KEY_MAX bytes, a value of 0 to FS_REC_VALUE_MAX, at most
 * FS_REC_MAX records (docs/engine-records.md). Each put or delete is one
 * transaction (res->csn: durable once fs_force() to it returned; no
 * attributes); after a crash a record is there whole, as some put left it,
 * or not at all. (These bounds are also the on-disk format's: fs_format.h
 * repeats them, and the build fails if the two differ.)
 */
#define FS_REC_KEY_MAX   64
#define FS_REC_VALUE_MAX 1024
#define FS_REC_MAX       16384

/* Insert, or replace the value of an existing key. -EINVAL for a key or
 * value out of bounds, -ENOSPC when FS_REC_MAX records exist (a replace
 * always has room) or the device is full. */
int fs_rec_put(struct fs *fs, const void *key, size_t klen, const void *val, size_t vlen,
	       struct fs_result *res);
/* -ENOENT if there is no such record. */
int fs_rec_delete(struct fs *fs, const void *key, size_t klen, struct fs_result *res);
/* The value (val: room for FS_REC_VALUE_MAX bytes) and its length. */
int fs_rec_get(struct fs *fs, const void *key, size_t klen, void *val, size_t *vlen);
/*
 * Every record, in no particular order; fn returns nonzero to stop. fn
 * runs with no engine lock held and may call fs_rec_*: a record put or
 * deleted meanwhile may or may not be seen, every other is seen once.
 */
typedef int (*fs_rec_fn)(void *arg, const void *key, size_t klen, const void *val, size_t vlen);
int fs_rec_iterate(struct fs *fs, fs_rec_fn fn, void *arg);
uint32_t fs_rec_count(struct fs *fs);

/* ---- extended attributes ---- */

/*
 * Named values of an inode (user extended attributes, RFC 8276), kept by
 * the engine through the journal (docs/design.md §5, "Extended
 * attributes"). A name is 1 to FS_XATTR_NAME_MAX bytes without NUL (the
 * engine knows no namespaces: a protocol passes the name its client
 * sees); a value 0 to FS_XATTR_SIZE_MAX bytes. Each attribute is charged
 * its name, its value and FS_XATTR_ENTRY_COST bytes, and an inode's
 * charges add up to at most FS_XATTR_TOTAL_MAX. (These bounds are the
 * on-disk format's: fs_format.h repeats them, and the build fails if the
 * two differ.)
 *
 * A set or remove is one transaction that also moves ctime and the change
 * attribute; res (may be NULL) as for every modifying call: res->csn is
 * durable once fs_force() to it returned (what a sync export does before
 * its reply), res->ino[0] is ip. fsync makes it durable too, fdatasync
 * does not. After a crash an attribute is there whole, as some set left
 * it, or not at all. The attributes go with the inode.
 */
#define FS_XATTR_NAME_MAX   255
#define FS_XATTR_SIZE_MAX   65536
#define FS_XATTR_TOTAL_MAX  (256u << 10)
#define FS_XATTR_ENTRY_COST 16

#define FS_XATTR_CREATE  0x1u /* -EEXIST if the name is there */
#define FS_XATTR_REPLACE 0x2u /* -ENODATA if it is not */

/* Set name to the value (flags: 0, FS_XATTR_CREATE or FS_XATTR_REPLACE).
 * -ERANGE for a name longer than FS_XATTR_NAME_MAX, -EINVAL for an empty
 * one or one with a NUL, -E2BIG for a value longer than FS_XATTR_SIZE_MAX,
 * -ENOSPC past FS_XATTR_TOTAL_MAX (nothing changed) or when the device is
 * full; -E2BIG also when the journal is too small for the transaction of
 * a large value (mkfs's default log is large enough for the largest). */
int fs_setxattr(struct fs_inode *ip, const char *name, size_t nlen, const void *val, size_t vlen,
		unsigned flags, struct fs_result *res);
/* The value: -ENODATA if there is none. *vlen gets its length; buf NULL
 * asks for the length alone, and a buf of fewer than *vlen bytes (size)
 * is -ERANGE, with *vlen set. */
int fs_getxattr(struct fs_inode *ip, const char *name, size_t nlen, void *buf, size_t size,
		size_t *vlen);
/* -ENODATA if there is no such attribute. */
int fs_removexattr(struct fs_inode *ip, const char *name, size_t nlen, struct fs_result *res);
/*
 * The names after cookie (0: from the first), in an order that does not
 * change while they exist; fn gets each name, its value's length and the
 * cookie to resume after it, and returns nonzero to stop (a reply that is
 * full). A name set or removed meanwhile may or may not be seen, every
 * other is seen once. fn runs with ip's I/O lock held shared and must not
 * call the engine on ip.
 */
typedef int (*fs_xattr_fn)(void *arg, const char *name, size_t nlen, size_t vlen,
			   uint64_t cookie);
int fs_listxattr(struct fs_inode *ip, uint64_t cookie, fs_xattr_fn fn, void *arg);

/* ---- pNFS block layouts ---- */

/* The unit of maps, ranges and layouts: the engine's block. */
#define FS_MAP_BLOCK 4096u
/* A block-layout client finds the volume by its signature: the
 * filesystem's UUID (fs_uuid) at this byte offset of the data device. */
#define FS_PNFS_SIG_OFFSET 32u

enum fs_map_state {
	FS_MAP_HOLE = 0,      /* no blocks */
	FS_MAP_WRITTEN = 1,   /* blocks with data */
	FS_MAP_UNWRITTEN = 2, /* blocks allocated, reads as zeros */
};

struct fs_map {
	uint64_t off, len; /* file range, bytes */
	uint64_t addr;     /* device byte address (not for holes) */
	enum fs_map_state state;
};

/*
 * Map [off, off+len) (block-aligned). For writing, holes get unwritten
 * blocks first, and that allocation is durable before the call returns: the
 * client will write to those blocks. Returns up to max maps in order.
 */
int fs_map_blocks(struct fs_inode *ip, uint64_t off, uint64_t len, bool for_write,
		  struct fs_map *maps, unsigned max, unsigned *n);

struct fs_range {
	uint64_t off, len; /* bytes, block-aligned */
};

/*
 * LAYOUTCOMMIT (docs/design.md rule 6): the client wrote the ranges directly.
 * Convert what is unwritten there, grow the size to new_size if larger,
 * set mtime (NULL: now), in a transaction that is not synchronous; then
 * force to the inode's datasync sequence and flush the data device if that
 * wrote nothing. A range with no blocks is refused with -EINVAL.
 */
int fs_commit_blocks(struct fs_inode *ip, const struct fs_range *ranges, unsigned n,
		     uint64_t new_size, const struct timespec *mtime, bool *log_written);

/*
 * Layout leases (docs/design.md rule 9). A holder is an opaque id (a client);
 * recall_fn is called, without locks held, to start the recall of a
 * holder's layouts on an inode.
 */
struct fs_layout_ops {
	void (*recall)(void *arg, struct fs_inode *ip, uint64_t holder);
	void *arg;
};
void fs_set_layout_ops(struct fs *fs, const struct fs_layout_ops *ops);
/*
 * Add a layout of [off, off+len) for holder, unless it conflicts with
 * another holder's (whose recall this starts: -EAGAIN) or a recall of ip
 * is under way (-EAGAIN). *id names the new layout for fs_layout_trim.
 */
int fs_layout_get(struct fs_inode *ip, uint64_t holder, uint64_t off, uint64_t len, bool rw,
		  uint64_t *id);
/*
 * Map [off, off+len) (block-aligned, within the range of layout id, which
 * fs_layout_get just added) for that layout: fs_map_blocks, for writing
 * when the layout is RW. Holes are then filled only as far as max maps
 * reach, and the blocks that fills them belong to the layout: once no RW
 * layout of any holder covers them any more (returned, trimmed, revoked),
 * those still unwritten (no LAYOUTCOMMIT or write made them the file's)
 * are freed. Blocks that were already there, written or unwritten, are
 * never given back. -EAGAIN: the layout was returned meanwhile (what this
 * allocated for it is freed).
 */
int fs_layout_map(struct fs_inode *ip, uint64_t id, uint64_t off, uint64_t len, struct fs_map *maps,
		  unsigned max, unsigned *n);
/* The layout fs_layout_get just added was handed out only as far as its
 * first len bytes (0: not at all, e.g. the LAYOUTGET failed after all):
 * the rest goes, as if returned, and nothing else of the holder's. */
void fs_layout_trim(struct fs_inode *ip, uint64_t id, uint64_t len);
/* Modes of layouts, for fs_layout_return. */
#define FS_LAYOUT_READ 0x1u
#define FS_LAYOUT_RW   0x2u
#define FS_LAYOUT_ANY  (FS_LAYOUT_READ | FS_LAYOUT_RW)
/*
 * Return the holder's layouts of the modes given in [off, off+len) (len
 * UINT64_MAX: to the end): a layout only partly in the range keeps what
 * lies outside it (a client may return part of a layout and go on using
 * the rest, which must still be recalled when it conflicts). Blocks
 * fs_layout_map allocated that no RW layout covers any more are given
 * back (the I/O lock is taken for it: the caller holds none of ip's).
 * Wakes the waiters once no layout of ip is being recalled. Returns
 * whether the holder still holds a layout of ip.
 */
bool fs_layout_return(struct fs_inode *ip, uint64_t holder, uint64_t off, uint64_t len,
		      unsigned modes);
bool fs_layout_recalling(struct fs_inode *ip);
/* Is a layout of ip held by another holder than requester being recalled? */
bool fs_layout_recalling_other(struct fs_inode *ip, uint64_t requester);
/* Does holder hold layouts of ip covering [off, off+len) (rw: for
 * writing)? A LAYOUTCOMMIT may name only what its client holds. */
bool fs_layout_covers(struct fs_inode *ip, uint64_t holder, uint64_t off, uint64_t len, bool rw);

/*
 * Break the layouts of ip (and ip2 if not NULL) that conflict with a change
 * by requester (docs/design.md rule 9): its own layouts too, since the
 * blocks they map may change under them. Returns 0 when there are none.
 * Otherwise starts the recall of idle ones and returns:
 *   -EINPROGRESS  the caller may wait for the return (fs_layout_on_return):
 *                 this call started the recall, or only the requester's own
 *                 layouts are being recalled; up to 30 ms when another
 *                 holder's layout is recalled (fs_layout_recalling_other),
 *                 longer for the requester's own: it is the client that
 *                 sent the request, so it is busy with nothing else;
 *   -EWOULDBLOCK  the recall of another holder's layout was already under
 *                 way: answer "delay" at once.
 */
int fs_break_layouts(struct fs_inode *ip, struct fs_inode *ip2, uint64_t requester);
/* Wait up to timeout_ns for the layouts of ip to be returned (0 if they
 * were, -ETIMEDOUT if not). Blocks the caller: protocol layers park the
 * request instead and use fs_layout_on_return(). */
int fs_layout_wait(struct fs_inode *ip, uint64_t timeout_ns);
struct fs_layout_waiter {
	void (*fn)(struct fs_layout_waiter *w);
	struct fs_layout_waiter *next;
};
/* Call w->fn once the inode's conflicting layouts are all returned (at
 * once, returning 0, if they already are). Returns -EINPROGRESS if queued. */
int fs_layout_on_return(struct fs_inode *ip, struct fs_layout_waiter *w);
/* Forget a queued waiter (its timer fired first): true if it was still
 * queued, false if a return already took it (its fn runs or ran). */
bool fs_layout_cancel_wait(struct fs_inode *ip, struct fs_layout_waiter *w);

/* ---- checking ---- */

/*
 * Verify every invariant of a filesystem mounted with readonly_check (log
 * recovered, nothing else changed): superblock and log geometry, CRCs and
 * order of every tree, every block owned exactly once (no block owned twice,
 * none leaked), inodes, link counts, directory entries against inodes,
 * orphans. Problems are printed to out, one per line; *problems gets their
 * number. Returns 0 unless the check itself could not run.
 */
int fs_check(struct fs *fs, FILE *out, uint64_t *problems);

/* ---- counters ---- */

/* fs.*, log.* and dev.* counters as "name value" lines. */
void fs_stats(struct fs *fs, const struct stat_sink *sink);

#endif
