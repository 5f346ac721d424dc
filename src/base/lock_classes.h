/*
 * lock_classes.h - every lock class of jnfs and its rank: the one list the
 * lock order is written from.
 *
 * A thread may block only on a lock ranked above every lock it holds
 * (base/lock.h). The ranks below are one order over the whole program; the
 * bands group them by what they guard, and each class names the file that
 * gives its reasons (where the lock is defined). Code takes a class from
 * here with LOCK_CLASS(ID) (LOCK_CLASS_ORDERED(ID, fn) for kind ORDERED);
 * no file under src/ writes a name or a rank of its own.
 *
 * docs/locking.md holds this table as text; test-lock-table fails when the
 * two differ, when a rank lies outside every band, when a class is missing
 * from the file that documents it or a rank written there differs, when
 * that file lists its classes out of rank order, and when src/ defines a
 * class outside this list. `test-lock-table --print` writes the text.
 *
 * Kinds: ONE, one lock of the class at a time; MULTI, several at once,
 * ordered by their owner (the checker orders them only against other
 * classes); ORDERED, several at once in the order a function of the class
 * decides, which the checker asks; UNORDERED, not checked against any
 * class (only taken under another lock that carries the order).
 */
#ifndef JNFS_BASE_LOCK_CLASSES_H
#define JNFS_BASE_LOCK_CLASSES_H

/* X(first rank, last rank, what) */
#define LOCK_BANDS(X)                                                                              \
	X(1, 199,                                                                                  \
	  "filesystem engine: renames, inode I/O and metadata, the preallocation list, inode "      \
	  "and block allocation; the journal's checkpoint writer, whose checkpoint completes "      \
	  "freed extents (fs.busy) and unpins items under it; and, below them all, the NFSv4 "      \
	  "client registry, held while the engine stores client records")                          \
	X(200, 299,                                                                                \
	  "metadata buffers and the engine's caches: buffer locks, busy extents, block "            \
	  "reservations, the buffer and inode caches, the readahead windows")                      \
	X(300, 399,                                                                                \
	  "the journal: CIL context, CIL, push, space, AIL, log buffers; and the engine locks "     \
	  "taken under them (inode item, layouts)")                                                \
	X(400, 499,                                                                                \
	  "RPC and protocol state: connections, duplicate request cache, parked requests, "         \
	  "timers, workers, MOUNT's list")                                                         \
	X(500, 699,                                                                                \
	  "NFSv4 server state: connections, layouts, the open and lock-state tables, a "           \
	  "stateid's operations, the "                                                             \
	  "byte-range lock and share tables, clients and sessions")                                \
	X(700, 799, "the NFSv4.1 client library (tests and benchmarks): recovery, client, "      \
	  "callbacks, connections, the pNFS block client")                                                                \
	X(900, 999, "device layer: after every other lock; the crash device calls its inner one")  \
	X(1000, 1099, "leaves of the base layer, taken under any lock: the I/O buffer cache")

/* X(ID, name, rank, type, kind, documented in, what it guards) */
#define LOCK_CLASSES(X)                                                                            \
	X(NFS4_REGISTRY, "nfs4.registry", 80, MUTEX, ONE, "src/nfs4/state/client.h",                     \
	  "changes to the set of NFSv4 clients and their durable records")                         \
	X(FS_RENAME, "fs.rename", 90, MUTEX, ONE, "src/fs/fs_priv.h",                              \
	  "renames between two directories, one at a time: the tree they check stands")            \
	X(FS_RECORDS, "fs.records", 95, MUTEX, ONE, "src/fs/fs_priv.h",                            \
	  "the durable record store: one put or delete at a time")                                 \
	X(FS_IOLOCK, "fs.iolock", 100, RWLOCK, ORDERED, "src/fs/fs_priv.h",                        \
	  "an inode's data and extent map, a directory's entries, an inode's extended "            \
	  "attributes")                                                                            \
	X(FS_EOFBLOCKS, "fs.eofblocks", 105, MUTEX, ONE, "src/fs/fs_priv.h",                       \
	  "the files holding preallocation past EOF (the trimmer's list)")                         \
	X(FS_ILOCK, "fs.ilock", 110, MUTEX, ORDERED, "src/fs/fs_priv.h",                           \
	  "an inode's in-core metadata; a transaction holds it from join to commit")               \
	X(LOG_PUSHER, "log.pusher_lock", 120, MUTEX, ONE, "src/log/log_priv.h",                    \
	  "the right to write a checkpoint: one at a time")                                        \
	X(FS_IALLOC, "fs.ialloc", 150, MUTEX, ONE, "src/fs/fs_priv.h",                             \
	  "the inode index and orphan trees")                                                      \
	X(FS_ALLOC, "fs.alloc", 160, MUTEX, ONE, "src/fs/fs_priv.h",                               \
	  "the free-space tree and free list")                                                     \
	X(FS_BUF, "fs.buf", 250, MUTEX, MULTI, "src/fs/fs_priv.h",                                 \
	  "a block of a global tree, the superblock or an inode chunk")                            \
	X(LOG_BUF_ITEM, "buf_item.lock", 250, MUTEX, MULTI, "src/log/log_priv.h",                  \
	  "a logged block whose owner gives no class of its own")                                  \
	X(FS_INODE_TREE_BUF, "fs.inode_tree_buf", 0, MUTEX, UNORDERED, "src/fs/fs_priv.h",         \
	  "a block of an inode's own tree (directory, extent map): under that inode's locks")     \
	X(FS_BUSY, "fs.busy", 270, MUTEX, ONE, "src/fs/fs_priv.h",                                 \
	  "extents freed and not yet durable")                                                     \
	X(FS_RESV, "fs.resv", 275, MUTEX, ONE, "src/fs/fs_priv.h",                                 \
	  "free and reserved block counts")                                                        \
	X(FS_BCACHE, "fs.bcache", 280, MUTEX, ONE, "src/fs/fs_priv.h",                             \
	  "the metadata buffer cache")                                                             \
	X(FS_ICACHE, "fs.icache", 285, MUTEX, ONE, "src/fs/fs_priv.h", "the inode cache")          \
	X(FS_READAHEAD, "fs.readahead", 287, MUTEX, ONE, "src/fs/fs_priv.h",                       \
	  "the readahead windows: their files, ranges, states and readers")                       \
	X(LOG_CTX, "log.ctx_lock", 300, RWLOCK, ONE, "src/log/log_priv.h",                         \
	  "the current CIL context: commits share it, a push swaps it")                            \
	X(LOG_CIL, "log.cil_lock", 310, MUTEX, ONE, "src/log/log_priv.h",                          \
	  "the current context's log vectors and space")                                           \
	X(LOG_PUSH, "log.push_lock", 320, MUTEX, ONE, "src/log/log_priv.h",                        \
	  "push requests, the durable sequence, force waiters")                                    \
	X(LOG_SPACE, "log.space_lock", 330, MUTEX, ONE, "src/log/log_priv.h",                      \
	  "log head, tail and reservations")                                                       \
	X(LOG_AIL, "log.ail_lock", 340, MUTEX, ONE, "src/log/log_priv.h", "the AIL")               \
	X(LOG_IO, "log.io_lock", 350, MUTEX, ONE, "src/log/log_priv.h", "the log buffer ring")     \
	X(LOG_DATA, "log.data_lock", 360, MUTEX, ONE, "src/log/log_priv.h",                        \
	  "logged data's live blocks")                                                             \
	X(FS_INO_ITEM, "fs.ino_item", 390, MUTEX, ONE, "src/fs/fs_priv.h",                         \
	  "an inode item's pin count, commit_seq and datasync_seq")                                \
	X(FS_LAYOUT, "fs.layout", 395, MUTEX, ONE, "src/fs/fs_priv.h",                             \
	  "pNFS layouts and their waiters")                                                        \
	X(SVC_CONNS, "svc.conns", 410, MUTEX, ONE, "src/rpc/svc.h", "the server's connections")   \
	X(SVC_DRC, "svc.drc", 420, MUTEX, ONE, "src/rpc/svc.h", "the duplicate request cache")    \
	X(SVC_CONN, "svc.conn", 430, MUTEX, ONE, "src/rpc/svc.h",                                  \
	  "one connection: send queue, pending calls, byte accounting, protocol data")                                             \
	X(SVC_PARKED, "svc.parked", 450, MUTEX, ONE, "src/rpc/svc.h",                              \
	  "parked requests: one claim each (completion, timer or shutdown)")                                                 \
	X(SVC_TIMERS, "svc.timers", 460, MUTEX, ONE, "src/rpc/svc.h", "the timer heap")           \
	X(SVC_POOL, "svc.pool", 470, MUTEX, ONE, "src/rpc/svc.h", "the worker queue")             \
	X(NFS3_MNT, "nfs3.mnt_lock", 480, MUTEX, ONE, "src/nfs3/nfs3.h",                           \
	  "MOUNT's list of mounted clients")                                                       \
	X(NFS4_CONNS, "nfs4.conns", 530, MUTEX, ONE, "src/nfs4/cb.c",                              \
	  "the NFSv4 server's registry of connections (back channels)")                           \
	X(NFS4_LAYOUTS, "nfs4.layouts", 535, MUTEX, ONE, "src/nfs4/layout.c",                      \
	  "the NFSv4 server's pNFS layout table")                                                  \
	X(NFS4_OPENS, "nfs4.opens", 540, MUTEX, ONE, "src/nfs4/op_open.c",                         \
	  "one bucket of the NFSv4 open table")                                                    \
	X(NFS4_LOCKS, "nfs4.locks", 545, MUTEX, ONE, "src/nfs4/op_lock.c",                         \
	  "one bucket of the NFSv4 lock-state table")                                              \
	X(NFS4_STID, "nfs4.stid", 550, MUTEX, ORDERED, "src/nfs4/state/client.h",                        \
	  "one stateid's operations (an open's, then a lock stateid's)")                           \
	X(NFS4_BRL_BUCKET, "nfs4.brl.bucket", 570, MUTEX, ONE, "src/nfs4/state/brlock.h",                \
	  "one file bucket of the byte-range lock table")                                          \
	X(NFS4_SHARE_BUCKET, "nfs4.share.bucket", 575, MUTEX, ONE, "src/nfs4/state/share.h",             \
	  "one bucket of the share reservation table")                                             \
	X(NFS4_TALLY, "nfs4.tally", 580, MUTEX, ONE, "src/nfs4/state/tally.h",                           \
	  "one client shard of the per-client counts")                                             \
	X(NFS4_CLIENTS, "nfs4.clients", 610, RWLOCK, ONE, "src/nfs4/state/client.h",                     \
	  "the NFSv4 state tables: clientid, owner and sessionid maps, client list, grace")         \
	X(NFS4_SESSION, "nfs4.session", 620, MUTEX, ONE, "src/nfs4/state/client.h",                      \
	  "one session: its slots and connections")                                                \
	X(NFS4_CLIENT, "nfs4.client", 630, MUTEX, ONE, "src/nfs4/state/client.h",                        \
	  "one client: status, lease, sessions, stateids")                                         \
	X(NFS4C_RECOVER, "nfs4c.recover", 710, MUTEX, ONE, "src/nfs4c/nfs4c.h",                    \
	  "the NFSv4.1 client library: one recovery at a time")                                    \
	X(NFS4C_CLIENT, "nfs4c.client", 720, MUTEX, ONE, "src/nfs4c/nfs4c.h",                      \
	  "the client's session, slots, current connection, flags")                                \
	X(NFS4C_CBQ, "nfs4c.cbq", 730, MUTEX, ONE, "src/nfs4c/nfs4c.h", "the callback queue")      \
	X(NFS4C_CB, "nfs4c.cb", 732, MUTEX, ONE, "src/nfs4c/nfs4c.h", "back channel slots")        \
	X(NFS4C_SEND, "nfs4c.send", 736, MUTEX, ONE, "src/nfs4c/nfs4c.h",                          \
	  "one connection's writes")                                                               \
	X(NFS4C_CONN, "nfs4c.conn", 740, MUTEX, ONE, "src/nfs4c/nfs4c.h",                          \
	  "one connection's calls")                                                                \
	X(NFS4C_PNFS, "nfs4c.pnfs", 750, MUTEX, ONE, "src/nfs4c/nfs4c.h",                          \
	  "the pNFS client's disks, devices and files")                                            \
	X(NFS4C_PNFS_FILE, "nfs4c.pnfs.file", 760, MUTEX, ONE, "src/nfs4c/nfs4c.h",                \
	  "one file's layouts in the pNFS client")                                                 \
	X(DEV_FLUSH, "dev.flush_lock", 940, MUTEX, ONE, "src/dev/dev.h",                           \
	  "a device's shared flushes and tickets (never held across I/O)")                         \
	X(DEV_CRASH_FLUSH, "crash_dev.flush_lock", 970, MUTEX, ONE, "src/dev/dev.h",               \
	  "the crash device's flushes, one at a time (across the inner device's I/O)")             \
	X(DEV_CRASH, "crash_dev.lock", 980, MUTEX, ONE, "src/dev/dev.h",                           \
	  "the crash device's overlay and record")                                                 \
	X(DEV_MEM, "mem_dev.lock", 990, MUTEX, ONE, "src/dev/dev.h", "the memory device's pages")  \
	X(BASE_IOBUF, "base.iobuf", 1000, MUTEX, ONE, "src/base/iobuf.h",                          \
	  "the cache of large I/O buffers (a few pointer moves)")

enum lock_type { LOCK_TYPE_MUTEX, LOCK_TYPE_RWLOCK };
enum lock_kind { LOCK_KIND_ONE, LOCK_KIND_MULTI, LOCK_KIND_ORDERED, LOCK_KIND_UNORDERED };

enum lock_class_id {
#define LOCK_X_ID(id, name, rank, type, kind, file, what) LOCK_##id,
	LOCK_CLASSES(LOCK_X_ID)
#undef LOCK_X_ID
	LOCK_CLASS_COUNT
};

/* LOCK_RANK_<ID> and LOCK_KIND_OF_<ID>: constants for initializers */
enum {
#define LOCK_X_RANK(id, name, rank, type, kind, file, what) LOCK_RANK_##id = (rank),
	LOCK_CLASSES(LOCK_X_RANK)
#undef LOCK_X_RANK
};
enum {
#define LOCK_X_KIND(id, name, rank, type, kind, file, what) LOCK_KIND_OF_##id = LOCK_KIND_##kind,
	LOCK_CLASSES(LOCK_X_KIND)
#undef LOCK_X_KIND
};

#define LOCK_NAME_MAX 24
/* The names, indexed by enum lock_class_id (an array of arrays, so that
 * an element's address is a constant for static initializers). */
extern const char lock_class_names[LOCK_CLASS_COUNT][LOCK_NAME_MAX];

/* One row of the table, for the documentation and its test. */
struct lock_class_row {
	const char *name;
	unsigned rank;
	enum lock_type type;
	enum lock_kind kind;
	const char *file;
	const char *what;
};
extern const struct lock_class_row lock_class_rows[LOCK_CLASS_COUNT];

struct lock_band {
	unsigned lo, hi;
	const char *what;
};
extern const struct lock_band lock_bands[];
extern const unsigned lock_band_count;

#endif
