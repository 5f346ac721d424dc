/*
 * inode.c - in-core inodes and the inode cache.
 *
 * An in-core inode is found by number in the cache. References: fs_iget /
 * fs_iput count users; an unreferenced inode stays cached (LRU) and is
 * evicted only when its log item is idle (not pinned, not in the AIL), so
 * what is on disk is its latest state. An inode whose link count reached
 * zero is freed when its last reference goes (ino_inactive), in as many
 * transactions as its blocks need, under the protection of the orphan tree.
 * Until then it is found by number (an open file's handle names it after
 * its last name went); from its last reference on (i_freeing) it is not.
 * A freed inode stays cached as a "zombie" until its item is idle; if its
 * number is allocated again meanwhile, the zombie is reused.
 *
 * The in-core copy (i_d) is guarded by i_ilock. Readers that only need a
 * consistent snapshot (getattr) take i_ilock briefly.
 */
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/rand.h"
#include "base/time.h"
#include "fs/fs_priv.h"

#ifdef JNFS_LOCKDEP
/*
 * The order among inodes (fs_priv.h, D1-D5), checked by the lock checker
 * with the inodes themselves whenever a thread blocks on a second inode's
 * lock: a directory's I/O lock before its children's, two directories that
 * are not parent and child only under the rename lock and never an
 * ancestor after its descendant; metadata locks by inode number.
 */
static __thread char order_why[200];

/* mode, links and parent, read under the metadata lock */
static void ino_peek(struct fs_inode *ip, bool *dir, bool *live, uint64_t *parent)
{
	mutex_lock(&ip->i_ilock);
	*dir = S_ISDIR(ip->i_d.mode);
	*live = ip->i_d.nlink > 0;
	*parent = ip->i_d.parent;
	mutex_unlock(&ip->i_ilock);
}

static const char *iolock_order(const void *held, const void *want)
{
	struct fs_inode *h = container_of(held, struct fs_inode, i_iolock);
	struct fs_inode *w = container_of(want, struct fs_inode, i_iolock);
	unsigned long long hi = h->i_ino, wi = w->i_ino;
	bool hdir, hlive, wdir, wlive;
	uint64_t hparent, wparent;
	ino_peek(h, &hdir, &hlive, &hparent);
	ino_peek(w, &wdir, &wlive, &wparent);
	if (!wlive)
		return NULL; /* D5 */
	if (!hdir || !wdir) {
		snprintf(order_why, sizeof(order_why),
			 "inode %llu locked under inode %llu: only directories nest (D1, D2)", wi, hi);
		return order_why;
	}
	if (wparent == h->i_ino)
		return NULL; /* a child under its parent (D1) */
	if (hlive && hparent == w->i_ino) {
		snprintf(order_why, sizeof(order_why),
			 "directory %llu is the parent of directory %llu, locked after it (D1, D2)", wi,
			 hi);
		return order_why;
	}
	if (!mutex_held(&h->i_fs->f_rename_lock)) {
		snprintf(order_why, sizeof(order_why),
			 "directories %llu and %llu are not parent and child: only a rename holding "
			 "the rename lock locks two such (D2)",
			 hi, wi);
		return order_why;
	}
	bool above = false;
	if (hlive && dir_is_ancestor(w, h, &above) == 0 && above) {
		snprintf(order_why, sizeof(order_why),
			 "directory %llu is an ancestor of directory %llu, locked after it (D2)", wi, hi);
		return order_why;
	}
	return NULL;
}

static const char *ilock_order(const void *held, const void *want)
{
	const struct fs_inode *h = container_of(held, struct fs_inode, i_ilock);
	const struct fs_inode *w = container_of(want, struct fs_inode, i_ilock);
	if (h->i_ino < w->i_ino)
		return NULL;
	snprintf(order_why, sizeof(order_why),
		 "inode %llu's metadata lock after inode %llu's: lower number first (D4)",
		 (unsigned long long)w->i_ino, (unsigned long long)h->i_ino);
	return order_why;
}
#define IOLOCK_ORDER iolock_order
#define ILOCK_ORDER  ilock_order
#else
#define IOLOCK_ORDER NULL
#define ILOCK_ORDER  NULL
#endif

static struct lock_class iolock_class = LOCK_CLASS_ORDERED(FS_IOLOCK, IOLOCK_ORDER);
static struct lock_class ilock_class = LOCK_CLASS_ORDERED(FS_ILOCK, ILOCK_ORDER);
static struct lock_class icache_lock_class = LOCK_CLASS(FS_ICACHE);

int ino_cache_init(struct fs *fs)
{
	mutex_init(&fs->f_icache_lock, &icache_lock_class);
	hashmap_init(&fs->f_inodes);
	list_init(&fs->f_ilru);
	cond_init(&fs->f_icache_cond);
	fs->f_ninodes = 0;
	fs->f_ninodes_max = 262144;
	return 0;
}

static void ino_destroy(struct fs_inode *ip)
{
	rwlock_destroy(&ip->i_iolock);
	mutex_destroy(&ip->i_ilock);
	mutex_destroy(&ip->i_item.ii_lock);
	free(ip);
}

void ino_cache_destroy(struct fs *fs)
{
	size_t it = 0;
	uint64_t k;
	void *v;
	while (hashmap_next(&fs->f_inodes, &it, &k, &v))
		ino_destroy(v);
	hashmap_destroy(&fs->f_inodes);
	mutex_destroy(&fs->f_icache_lock);
	cond_destroy(&fs->f_icache_cond);
}

struct fs_inode *ino_alloc_incore(struct fs *fs, uint64_t ino)
{
	/* cache-line aligned, for the lines a lookup touches (fs_priv.h) */
	struct fs_inode *ip = xmalloc_aligned(64, sizeof(*ip));
	memset(ip, 0, sizeof(*ip));
	ip->i_fs = fs;
	ip->i_ino = ino;
	atomic_store(&ip->i_ref, 1);
	/* unique over the mount, so that a window of an earlier instance of
	 * this number never matches (readahead.c, R1) */
	atomic_store(&ip->i_data_gen, atomic_fetch_add(&fs->f_data_gen, 1) + 1);
	rwlock_init(&ip->i_iolock, &iolock_class);
	mutex_init(&ip->i_ilock, &ilock_class);
	list_init(&ip->i_lru);
	list_init(&ip->i_eof_link);
	ino_item_init(ip);
	return ip;
}

unsigned ino_ftype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return FS_FT_REG;
	case S_IFDIR:
		return FS_FT_DIR;
	case S_IFCHR:
		return FS_FT_CHR;
	case S_IFBLK:
		return FS_FT_BLK;
	case S_IFIFO:
		return FS_FT_FIFO;
	case S_IFSOCK:
		return FS_FT_SOCK;
	case S_IFLNK:
		return FS_FT_LNK;
	}
	return FS_FT_UNKNOWN;
}

static void ts_to_disk(struct fs_dts *d, const struct timespec *t)
{
	d->sec = (int64_t)htole64((uint64_t)t->tv_sec);
	d->nsec = htole32((uint32_t)t->tv_nsec);
	d->pad = 0;
}

static void ts_from_disk(struct timespec *t, const struct fs_dts *d)
{
	t->tv_sec = (time_t)le64toh((uint64_t)d->sec);
	t->tv_nsec = (long)le32toh(d->nsec);
}

void ino_to_disk(const struct fs_inode *ip, struct fs_dinode *d)
{
	const struct fs_icore *c = &ip->i_d;
	memset(d, 0, sizeof(*d));
	d->di_magic = htole32(FS_INODE_MAGIC);
	d->di_ino = htole64(ip->i_ino);
	d->di_mode = htole32(c->mode);
	d->di_uid = htole32(c->uid);
	d->di_gid = htole32(c->gid);
	d->di_nlink = htole32(c->nlink);
	d->di_size = htole64(c->size);
	d->di_nblocks = htole64(c->nblocks);
	ts_to_disk(&d->di_atime, &c->atime);
	ts_to_disk(&d->di_mtime, &c->mtime);
	ts_to_disk(&d->di_ctime, &c->ctime);
	ts_to_disk(&d->di_btime, &c->btime);
	d->di_change = htole64(c->change);
	d->di_gen = htole32(c->gen);
	d->di_flags = htole32(c->flags);
	d->di_rdev = htole64(c->rdev);
	d->di_parent = htole64(c->parent);
	d->di_root = htole64(c->root);
	d->di_root_level = htole16(c->root_level);
	d->di_nextents = htole16(c->nextents);
	d->di_xattr_root = htole64(c->xattr_root);
	d->di_xattr_level = htole16(c->xattr_level);
	d->di_xattr_count = htole16(c->xattr_count);
	d->di_xattr_bytes = htole32(c->xattr_bytes);
	if (S_ISLNK(c->mode) && !(c->flags & FS_DIF_SYMLINK_EXT)) {
		memcpy(d->di_u.di_symlink, c->symlink, sizeof(d->di_u.di_symlink));
	} else {
		for (unsigned i = 0; i < c->nextents && i < FS_INLINE_EXTENTS; i++) {
			d->di_u.di_ext[i].e_off = htole64(c->ext[i].e_off);
			d->di_u.di_ext[i].e_start = htole64(c->ext[i].e_start);
			d->di_u.di_ext[i].e_len = htole32(c->ext[i].e_len);
			d->di_u.di_ext[i].e_flags = htole32(c->ext[i].e_flags);
		}
	}
	ino_stamp(d, 0);
}

int ino_from_disk(struct fs_inode *ip, const struct fs_dinode *d)
{
	int err = ino_verify(d, ip->i_ino, ip->i_fs->f_blocks);
	if (err)
		return err;
	struct fs_icore *c = &ip->i_d;
	memset(c, 0, sizeof(*c));
	c->mode = le32toh(d->di_mode);
	c->uid = le32toh(d->di_uid);
	c->gid = le32toh(d->di_gid);
	c->nlink = le32toh(d->di_nlink);
	c->size = le64toh(d->di_size);
	c->nblocks = le64toh(d->di_nblocks);
	ts_from_disk(&c->atime, &d->di_atime);
	ts_from_disk(&c->mtime, &d->di_mtime);
	ts_from_disk(&c->ctime, &d->di_ctime);
	ts_from_disk(&c->btime, &d->di_btime);
	c->change = le64toh(d->di_change);
	c->gen = le32toh(d->di_gen);
	c->flags = le32toh(d->di_flags);
	c->rdev = le64toh(d->di_rdev);
	c->parent = le64toh(d->di_parent);
	c->root = le64toh(d->di_root);
	c->root_level = le16toh(d->di_root_level);
	c->nextents = le16toh(d->di_nextents);
	c->xattr_root = le64toh(d->di_xattr_root);
	c->xattr_level = le16toh(d->di_xattr_level);
	c->xattr_count = le16toh(d->di_xattr_count);
	c->xattr_bytes = le32toh(d->di_xattr_bytes);
	if (S_ISLNK(c->mode) && !(c->flags & FS_DIF_SYMLINK_EXT)) {
		memcpy(c->symlink, d->di_u.di_symlink, sizeof(c->symlink));
		c->nextents = 0;
	} else {
		for (unsigned i = 0; i < c->nextents; i++) {
			c->ext[i].e_off = le64toh(d->di_u.di_ext[i].e_off);
			c->ext[i].e_start = le64toh(d->di_u.di_ext[i].e_start);
			c->ext[i].e_len = le32toh(d->di_u.di_ext[i].e_len);
			c->ext[i].e_flags = le32toh(d->di_u.di_ext[i].e_flags);
		}
	}
	return 0;
}

/*
 * Blocks past EOF in an inode just read from disk: preallocation a crash
 * (or a server killed) left before it was given back. Exact for inline
 * extents; with an extent tree, more blocks than the size needs (tree
 * blocks count too: a false alarm costs the trimmer one lookup past EOF).
 */
static bool ino_maybe_past_eof(const struct fs_inode *ip)
{
	const struct fs_icore *c = &ip->i_d;
	if (!S_ISREG(c->mode) || (c->flags & FS_DIF_PREALLOC))
		return false;
	uint64_t eof_blocks = DIV_ROUND_UP(c->size, (uint64_t)FS_BLOCK_SIZE);
	if (c->root)
		return c->nblocks > eof_blocks;
	for (unsigned i = 0; i < c->nextents; i++)
		if (c->ext[i].e_off + c->ext[i].e_len > eof_blocks)
			return true;
	return false;
}

/* Read inode ino from its chunk block. */
static int ino_read(struct fs *fs, uint64_t ino, struct fs_inode **ipp)
{
	struct fsbuf *bp;
	int err = fsbuf_read(fs, fs_ino_block(ino), &fs_ichunk_verifier, 0, &bp);
	if (err)
		return err;
	struct fs_dinode d;
	memcpy(&d, bp->b_data + fs_ino_slot(ino) * FS_INODE_SIZE, sizeof(d));
	fsbuf_rele(bp);
	struct fs_inode *ip = ino_alloc_incore(fs, ino);
	err = ino_from_disk(ip, &d);
	if (err) {
		ino_destroy(ip);
		return err;
	}
	*ipp = ip;
	return 0;
}

/*
 * Evict idle unreferenced inodes while over the limit. icache lock held.
 * As with buffers (fsbuf_shrink), every cached inode is on the LRU and a
 * use only marks it; a used, referenced or busy inode (pinned, or in the
 * AIL: not written back yet) gets a second chance at the tail of the LRU,
 * and one call looks at no more than ICACHE_SHRINK_SCAN inodes; when
 * none of them could go, the next ICACHE_SHRINK_SCAN calls do not try, so
 * an iput costs at most about one look on average. After a burst of creates the AIL can hold more inodes
 * than the cache limit until it writes them back: without the bound every
 * iput walked all of them (a lookup in a 100,000-entry directory ran 30-40x
 * slower than in a 1,000-entry one).
 */
#define ICACHE_SHRINK_SCAN 32

static void ino_shrink(struct fs *fs)
{
	assert_locked(&fs->f_icache_lock);
	if (fs->f_ishrink_skip) {
		fs->f_ishrink_skip--;
		return;
	}
	unsigned evicted = 0;
	for (unsigned scanned = 0; scanned < ICACHE_SHRINK_SCAN; scanned++) {
		if (fs->f_ninodes <= fs->f_ninodes_max || list_empty(&fs->f_ilru))
			break;
		struct fs_inode *ip = list_first_entry(&fs->f_ilru, struct fs_inode, i_lru);
		if (ip->i_lru_ref || atomic_load(&ip->i_ref) || ino_item_busy(ip)) {
			ip->i_lru_ref = false;
			list_move_tail(&ip->i_lru, &fs->f_ilru);
			continue;
		}
		list_del(&ip->i_lru);
		hashmap_remove(&fs->f_inodes, ip->i_ino);
		fs->f_ninodes--;
		ino_destroy(ip);
		evicted++;
	}
	if (!evicted)
		fs->f_ishrink_skip = ICACHE_SHRINK_SCAN;
}

/* A new in-core inode into the cache (on the LRU for as long as it is
 * cached, like buffers: see fsbuf_shrink). icache lock held. */
static void icache_insert(struct fs *fs, struct fs_inode *ip)
{
	assert_locked(&fs->f_icache_lock);
	hashmap_put(&fs->f_inodes, ip->i_ino, ip);
	list_add_tail(&ip->i_lru, &fs->f_ilru);
	fs->f_ninodes++;
}

static int ino_get(struct fs *fs, uint64_t ino, uint32_t gen, bool allow_unlinked,
		   struct fs_inode **ipp)
{
	*ipp = NULL;
	if (fs_is_shutdown(fs))
		return -EIO;
	if (fs_ino_block(ino) == 0 || fs_ino_block(ino) >= fs->f_blocks)
		return -ESTALE;
	mutex_lock(&fs->f_icache_lock);
	struct fs_inode *ip = hashmap_get(&fs->f_inodes, ino);
	if (ip) {
		if (ip->i_freed || ip->i_freeing) {
			mutex_unlock(&fs->f_icache_lock);
			return -ESTALE;
		}
		atomic_fetch_add(&ip->i_ref, 1);
		ip->i_lru_ref = true;
		mutex_unlock(&fs->f_icache_lock);
		goto found;
	}
	mutex_unlock(&fs->f_icache_lock);

	bool allocated;
	int err = ialloc_is_allocated(fs, ino, &allocated);
	if (err)
		return err;
	if (!allocated)
		return -ESTALE;
	struct fs_inode *nip;
	err = ino_read(fs, ino, &nip);
	if (err)
		return err;
	mutex_lock(&fs->f_icache_lock);
	ip = hashmap_get(&fs->f_inodes, ino);
	if (ip) {
		/* loaded by someone else meanwhile */
		bool freed = ip->i_freed || ip->i_freeing;
		if (!freed)
			atomic_fetch_add(&ip->i_ref, 1);
		mutex_unlock(&fs->f_icache_lock);
		ino_destroy(nip);
		if (freed)
			return -ESTALE;
		goto found;
	}
	if (!allow_unlinked && nip->i_d.nlink == 0) {
		/* not cached, so not unlinked while in use: on disk, only an orphan
		 * (freed at mount) has no links; anything else is damage, and
		 * must not be freed as if it were an orphan */
		mutex_unlock(&fs->f_icache_lock);
		msg_err("fs: inode %llu has no links and is not an orphan", (unsigned long long)ino);
		ino_destroy(nip);
		return -EUCLEAN;
	}
	ip = nip;
	icache_insert(fs, ip);
	mutex_unlock(&fs->f_icache_lock);
	if (ino_maybe_past_eof(ip))
		eof_note(ip);
found:
	if (!allow_unlinked) {
		/* A cached inode without links that is not being freed has a
		 * holder besides us: an open file whose last name went (REMOVE,
		 * or RENAME over it), which its handle still names until it is
		 * let go, as POSIX keeps an unlinked open file. A zombie has no
		 * type: freed, or its number being made anew (ino_get_new, which
		 * holds i_ilock until the new inode is whole: its generation is
		 * then read here, not a half-made one) */
		mutex_lock(&ip->i_ilock);
		bool gone = ip->i_d.mode == 0 || (gen && ip->i_d.gen != gen);
		mutex_unlock(&ip->i_ilock);
		if (gone) {
			fs_iput(ip);
			return -ESTALE;
		}
	}
	*ipp = ip;
	return 0;
}

int fs_iget(struct fs *fs, uint64_t ino, uint32_t gen, struct fs_inode **ipp)
{
	return ino_get(fs, ino, gen, false, ipp);
}

int fs_iget_orphan(struct fs *fs, uint64_t ino, struct fs_inode **ipp)
{
	return ino_get(fs, ino, 0, true, ipp);
}

int fs_root(struct fs *fs, struct fs_inode **ipp)
{
	return fs_iget(fs, le64toh(fs->f_sb->sb_root_ino), 0, ipp);
}

void fs_igrab(struct fs_inode *ip)
{
	/* the caller holds a reference, so the count cannot be 0 and the
	 * inode cannot be on its way out of the cache */
	int old = atomic_fetch_add(&ip->i_ref, 1);
	BUG_ON(old <= 0);
}

void fs_iput(struct fs_inode *ip)
{
	struct fs *fs = ip->i_fs;
	mutex_lock(&fs->f_icache_lock);
	int old = atomic_fetch_sub(&ip->i_ref, 1);
	BUG_ON(old <= 0);
	if (old > 1) {
		mutex_unlock(&fs->f_icache_lock);
		return;
	}
	bool inactive = ip->i_d.nlink == 0 && !ip->i_freed && !fs_is_shutdown(fs);
	if (inactive) {
		/*
		 * Keep it referenced while it is freed, and marked so that no
		 * get by number (a file handle) takes a reference meanwhile
		 * (under the icache lock, as the gets look): a get before this
		 * point found it in use and kept it alive, one after finds it
		 * going (-ESTALE). The count is given back, never reset.
		 */
		atomic_store(&ip->i_ref, 1);
		ip->i_freeing = true;
		mutex_unlock(&fs->f_icache_lock);
		int err = ino_inactive(ip);
		if (err && err != -EIO)
			msg_err("fs: freeing unlinked inode %llu failed: %s",
				(unsigned long long)ip->i_ino, strerror(-err));
		mutex_lock(&fs->f_icache_lock);
		old = atomic_fetch_sub(&ip->i_ref, 1);
		BUG_ON(old <= 0);
	}
	if (ip->i_freed) {
		/* an allocation of the freed number may wait for the last
		 * reference (ino_get_new) */
		cond_broadcast(&fs->f_icache_cond);
	}
	if (fs->f_ninodes > fs->f_ninodes_max)
		ino_shrink(fs);
	mutex_unlock(&fs->f_icache_lock);
}

void ino_cache_insert(struct fs *fs, struct fs_inode *ip)
{
	mutex_lock(&fs->f_icache_lock);
	struct fs_inode *old = hashmap_get(&fs->f_inodes, ip->i_ino);
	BUG_ON(old);
	icache_insert(fs, ip);
	mutex_unlock(&fs->f_icache_lock);
}

/*
 * The in-core inode for a number just allocated: a new one, or a cached
 * zombie of the inode that had the number before (its log item may still
 * be in the AIL; the new content is simply logged over it). Returned
 * referenced, with i_ilock and i_iolock (exclusive) held, as for any inode
 * whose extent map or tree a transaction builds. Nobody else can see the
 * number yet, so the only other holder of i_ilock is the AIL writing a
 * zombie back (ino_item_push), which waits for nothing the caller holds:
 * the lock is taken by retrying a trylock, since the caller holds locks of
 * higher rank. Nobody holds i_iolock: whoever locks an inode holds a
 * reference, and a zombie is reused only when its last one went.
 * A cached inode that is not freed means the inode index called a live
 * inode free: damage (-EUCLEAN).
 */
int ino_get_new(struct fs *fs, uint64_t ino, struct fs_inode **ipp)
{
	*ipp = NULL;
	mutex_lock(&fs->f_icache_lock);
	struct fs_inode *ip;
	for (;;) {
		ip = hashmap_get(&fs->f_inodes, ino);
		/* freed, but its last fs_iput() has not let go yet: it will at
		 * once (it waits for nothing the caller holds); look again after,
		 * the zombie may have been evicted meanwhile */
		if (!ip || !ip->i_freed || !atomic_load(&ip->i_ref))
			break;
		cond_wait(&fs->f_icache_cond, &fs->f_icache_lock);
	}
	if (ip) {
		if (!ip->i_freed) {
			mutex_unlock(&fs->f_icache_lock);
			msg_err("fs: the inode index calls inode %llu free, but it is in use",
				(unsigned long long)ino);
			return -EUCLEAN;
		}
		atomic_store(&ip->i_ref, 1);
		ip->i_freed = false;
		ip->i_freeing = false;
	} else {
		ip = ino_alloc_incore(fs, ino);
		icache_insert(fs, ip);
	}
	mutex_unlock(&fs->f_icache_lock);
	while (!mutex_trylock(&ip->i_ilock))
		sched_yield();
	bool iolocked = rwlock_trywrlock(&ip->i_iolock);
	BUG_ON(!iolocked);
	uint32_t old_gen = ip->i_d.gen;
	memset(&ip->i_d, 0, sizeof(ip->i_d));
	/* a generation that differs from the number's previous life */
	uint64_t seed = now_ns() ^ (ino * 0x9e3779b97f4a7c15ull);
	uint32_t gen;
	do {
		gen = (uint32_t)splitmix64(&seed);
	} while (gen == 0 || gen == old_gen);
	ip->i_d.gen = gen;
	ip->i_prealloc = 0;
	atomic_store(&ip->i_sync_next, 0);
	*ipp = ip;
	return 0;
}

void ino_join(struct fstx *tx, struct fs_inode *ip)
{
	if (trans_has_item(tx->tp, &ip->i_item.ii_item))
		return;
	mutex_lock(&ip->i_ilock);
	trans_join(tx->tp, &ip->i_item.ii_item);
}

/* Join a new inode whose i_ilock is already held (ino_get_new). */
void ino_join_locked(struct fstx *tx, struct fs_inode *ip)
{
	assert_locked(&ip->i_ilock);
	trans_join(tx->tp, &ip->i_item.ii_item);
}

void ino_join2(struct fstx *tx, struct fs_inode *a, struct fs_inode *b)
{
	if (a == b || !b) {
		ino_join(tx, a);
		return;
	}
	if (a->i_ino > b->i_ino) {
		struct fs_inode *t = a;
		a = b;
		b = t;
	}
	ino_join(tx, a);
	ino_join(tx, b);
}

void ino_data_changed(struct fs_inode *ip)
{
	atomic_store(&ip->i_data_gen, atomic_fetch_add(&ip->i_fs->f_data_gen, 1) + 1);
}

void ino_log(struct fstx *tx, struct fs_inode *ip, unsigned fields)
{
	assert_locked(&ip->i_ilock);
	ip->i_item.ii_fields |= fields;
	trans_dirty(tx->tp, &ip->i_item.ii_item);
	/* the caller changes the map or the size with the I/O lock held
	 * exclusively, which no read holds meanwhile: the bump is seen by
	 * every read after that lock goes (readahead.c, R2) */
	if (fields & (FS_ILOG_EXTENTS | FS_ILOG_CORE))
		ino_data_changed(ip);
}

void ino_log_only(struct fstx *tx, struct fs_inode *ip, unsigned fields)
{
	assert_locked(&ip->i_ilock);
	ip->i_item.ii_fields = fields;
	trans_dirty(tx->tp, &ip->i_item.ii_item);
}

void fs_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

void ino_touch(struct fs_inode *ip, bool mtime)
{
	struct timespec now;
	fs_now(&now);
	ip->i_d.ctime = now;
	if (mtime)
		ip->i_d.mtime = now;
	ip->i_d.change++;
}

uint64_t fs_ino(const struct fs_inode *ip)
{
	return ip->i_ino;
}

struct fs *fs_of(const struct fs_inode *ip)
{
	return ip->i_fs;
}

/*
 * The last reference to an unlinked inode went: free its extended
 * attributes (a batch per transaction), its blocks (a batch of extents per
 * transaction), its tree, then the inode and its orphan record.
 * Every step leaves a consistent filesystem; the orphan record makes a
 * crash in between harmless (mount finishes the job).
 */
int ino_inactive(struct fs_inode *ip)
{
	struct fs *fs = ip->i_fs;
	int err = 0;
	rwlock_wrlock(&ip->i_iolock);
	err = xattr_free_all(ip);
	if (err)
		goto out;
	/* data blocks, a batch at a time */
	uint64_t last = UINT64_MAX;
	for (;;) {
		mutex_lock(&ip->i_ilock);
		uint64_t nblocks = ip->i_d.nblocks;
		bool more = nblocks > 0 && !S_ISDIR(ip->i_d.mode);
		mutex_unlock(&ip->i_ilock);
		if (!more)
			break;
		if (nblocks == last) {
			/* punching freed nothing: it counts blocks it has not got */
			msg_err("fs: inode %llu counts %llu blocks but maps none of them",
				(unsigned long long)ip->i_ino, (unsigned long long)nblocks);
			err = -EUCLEAN;
			goto out;
		}
		last = nblocks;
		struct fstx *tx;
		err = fstx_begin(fs, 0, 0, &tx);
		if (err)
			goto out;
		ino_join(tx, ip);
		/* punching also frees an extent tree that becomes empty */
		uint64_t next;
		err = bmap_punch(tx, ip, 0, UINT64_MAX, &next);
		ino_log(tx, ip, FS_ILOG_EXTENTS | FS_ILOG_CORE);
		int cerr = fstx_commit(tx, NULL);
		if (!err)
			err = cerr;
		if (err)
			goto out;
	}
	struct fstx *tx;
	err = fstx_begin(fs, 0, 0, &tx);
	if (err)
		goto out;
	ino_join(tx, ip);
	fstx_lock(tx, FSTX_IALLOC);
	if (S_ISDIR(ip->i_d.mode)) {
		struct bt bt;
		dir_bt(ip, &bt);
		err = bt_destroy(tx, &bt);
	}
	if (!err)
		err = ialloc_free(tx, ip->i_ino);
	if (!err) {
		/* a zombie before the index calls the number free to anyone (the
		 * inode allocation lock is held until the commit): an allocation
		 * of the number must find it freed (ino_get_new) */
		mutex_lock(&fs->f_icache_lock);
		ip->i_freed = true;
		mutex_unlock(&fs->f_icache_lock);
		err = orphan_remove(tx, ip->i_ino);
	}
	ip->i_d.mode = 0;
	ip->i_d.nblocks = 0;
	ip->i_d.size = 0;
	ip->i_d.nextents = 0;
	ip->i_d.flags = 0;
	ino_log(tx, ip, FS_ILOG_CORE);
	int cerr = fstx_commit(tx, NULL);
	if (!err)
		err = cerr;
out:
	rwlock_unlock(&ip->i_iolock);
	return err;
}
