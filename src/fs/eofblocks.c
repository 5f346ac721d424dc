/*
 * eofblocks.c - speculative preallocation past EOF, given back when idle.
 *
 * An appending write preallocates unwritten blocks past EOF (fs_write), so
 * that the next appends only convert. NFSv3 has no close: nothing tells the
 * engine that a file is done growing, and without a rule those blocks would
 * stay allocated for good (an untar of small files kept twice its size).
 * So every inode given preallocation goes on f_eof, referenced, stamped with
 * the time of its last appending write and kept in that order; the trimmer
 * thread frees the blocks past EOF of each one idle for f_eof_idle_ns, and
 * lets it go. An allocation that finds no space asks for a pass over every
 * listed inode, idle or not, and waits for it (fs_trim_eofblocks); unmount
 * trims what is left. After a crash, preallocation that was not given back
 * yet is found when its inode is next read from disk (more blocks than the
 * size needs, as XFS finds it when it reclaims an inode) and listed then.
 *
 * Blocks past EOF that someone asked for stay: a file fallocated past its
 * size carries FS_DIF_PREALLOC and is never trimmed, and one with pNFS
 * layouts is put back on the list (its client may be writing to blocks it
 * mapped past EOF).
 *
 * Locks: f_eof_lock (fs.eofblocks, 105) is taken under a file's I/O lock
 * and never held across anything else. The trimmer takes I/O locks with trylock only:
 * whoever waits for a pass may hold one (its own file's).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "base/msg.h"
#include "base/time.h"
#include "fs/fs_priv.h"

static struct lock_class eof_lock_class = LOCK_CLASS(FS_EOFBLOCKS);

#define EOF_IDLE_DEFAULT_NS (5 * NSEC_PER_SEC)

void eof_note(struct fs_inode *ip)
{
	struct fs *fs = ip->i_fs;
	if (!fs->f_eof_running)
		return;
	/* an unlinked file (open, its names gone) is not kept: its blocks all
	 * go with its last reference, which the list must not hold back */
	mutex_lock(&ip->i_ilock);
	bool unlinked = ip->i_d.nlink == 0;
	mutex_unlock(&ip->i_ilock);
	if (unlinked)
		return;
	mutex_lock(&fs->f_eof_lock);
	ip->i_eof_ns = now_ns();
	if (list_empty(&ip->i_eof_link)) {
		atomic_fetch_add(&ip->i_ref, 1); /* the list's */
		if (list_empty(&fs->f_eof))
			cond_broadcast(&fs->f_eof_cond);
		list_add_tail(&ip->i_eof_link, &fs->f_eof);
		fs->f_eof_count++;
	} else {
		list_move_tail(&ip->i_eof_link, &fs->f_eof);
	}
	mutex_unlock(&fs->f_eof_lock);
}

/* Free the blocks of ip past its EOF block (I/O lock held exclusively).
 * false: not now (pNFS layouts), keep it listed. */
static bool eof_trim_one(struct fs_inode *ip, int *errp)
{
	assert_wrlocked(&ip->i_iolock);
	struct fs *fs = ip->i_fs;
	*errp = 0;
	mutex_lock(&fs->f_layout_lock);
	bool layouts = ip->i_layouts != NULL;
	mutex_unlock(&fs->f_layout_lock);
	if (layouts)
		return false;
	mutex_lock(&ip->i_ilock);
	bool skip = !S_ISREG(ip->i_d.mode) || ip->i_d.nlink == 0 ||
		    (ip->i_d.flags & FS_DIF_PREALLOC) || fs_is_shutdown(fs);
	uint64_t next = ALIGN_UP(ip->i_d.size, (uint64_t)FS_BLOCK_SIZE) / FS_BLOCK_SIZE;
	mutex_unlock(&ip->i_ilock);
	ip->i_prealloc = 0;
	int err = 0;
	while (!skip && !err && next != UINT64_MAX) {
		struct bmap_ext e;
		bool hole;
		err = bmap_lookup(ip, next, &e, &hole);
		if (err || (hole && e.len == UINT64_MAX - next))
			break; /* nothing mapped from next on */
		struct fstx *tx;
		err = fstx_begin(fs, 0, 0, &tx);
		if (err)
			break;
		fstx_unordered(tx); /* frees blocks past EOF */
		ino_join(tx, ip);
		uint64_t before = ip->i_d.nblocks;
		err = bmap_punch(tx, ip, next, UINT64_MAX - next, &next);
		uint64_t freed = before - ip->i_d.nblocks;
		/* no fdatasync waits for this (FS_ILOG_NOSYNC): a crash before
		 * it is durable only brings back blocks past EOF */
		ino_log_only(tx, ip, FS_ILOG_EOFBLOCKS);
		int cerr = fstx_commit(tx, NULL);
		if (!err)
			err = cerr;
		if (!err) {
			counter_inc(&fs->f_stats.eof_trims);
			counter_add(&fs->f_stats.eof_trim_blocks, freed);
		}
	}
	*errp = err;
	return true;
}

/* Take the next inode to trim off the list (f_eof_lock held): the oldest,
 * if idle or if `all`; NULL if none is due. *wait_ns: until the oldest is. */
static struct fs_inode *eof_next(struct fs *fs, bool all, uint64_t *wait_ns)
{
	assert_locked(&fs->f_eof_lock);
	*wait_ns = 0;
	if (list_empty(&fs->f_eof))
		return NULL;
	struct fs_inode *ip = list_first_entry(&fs->f_eof, struct fs_inode, i_eof_link);
	uint64_t now = now_ns(), due = ip->i_eof_ns + fs->f_eof_idle_ns;
	if (!all && now < due) {
		*wait_ns = due - now;
		return NULL;
	}
	list_del(&ip->i_eof_link);
	fs->f_eof_count--;
	return ip;
}

/* Trim ip, taken off the list with its reference; back on the list (as
 * recently used) if it cannot be trimmed now. */
static void eof_process(struct fs *fs, struct fs_inode *ip)
{
	int err = 0;
	bool done = true;
	if (rwlock_trywrlock(&ip->i_iolock)) {
		done = eof_trim_one(ip, &err);
		rwlock_unlock(&ip->i_iolock);
	} else {
		done = false;
	}
	if (err && err != -EIO)
		msg_err("fs: freeing the preallocation of inode %llu failed: %s",
			(unsigned long long)ip->i_ino, strerror(-err));
	if (!done) {
		mutex_lock(&fs->f_eof_lock);
		if (list_empty(&ip->i_eof_link) && !fs->f_eof_stop) {
			ip->i_eof_ns = now_ns();
			list_add_tail(&ip->i_eof_link, &fs->f_eof);
			fs->f_eof_count++;
			mutex_unlock(&fs->f_eof_lock);
			return; /* the list keeps the reference */
		}
		mutex_unlock(&fs->f_eof_lock);
	}
	fs_iput(ip);
}

/* One pass over what is listed now, idle or not. */
static void eof_pass_all(struct fs *fs)
{
	mutex_lock(&fs->f_eof_lock);
	uint64_t n = fs->f_eof_count;
	mutex_unlock(&fs->f_eof_lock);
	while (n--) {
		uint64_t wait;
		mutex_lock(&fs->f_eof_lock);
		struct fs_inode *ip = eof_next(fs, true, &wait);
		mutex_unlock(&fs->f_eof_lock);
		if (!ip)
			break;
		eof_process(fs, ip);
	}
}

static void *eof_thread(void *arg)
{
	struct fs *fs = arg;
	pthread_setname_np(pthread_self(), "fs-eofblocks");
	mutex_lock(&fs->f_eof_lock);
	while (!fs->f_eof_stop) {
		uint64_t asked = fs->f_eof_asked;
		if (asked != fs->f_eof_done) {
			mutex_unlock(&fs->f_eof_lock);
			eof_pass_all(fs);
			mutex_lock(&fs->f_eof_lock);
			fs->f_eof_done = asked;
			cond_broadcast(&fs->f_eof_cond);
			continue;
		}
		uint64_t wait;
		struct fs_inode *ip = eof_next(fs, false, &wait);
		if (!ip) {
			if (wait)
				cond_timedwait_ns(&fs->f_eof_cond, &fs->f_eof_lock, wait);
			else
				cond_wait(&fs->f_eof_cond, &fs->f_eof_lock);
			continue;
		}
		mutex_unlock(&fs->f_eof_lock);
		eof_process(fs, ip);
		mutex_lock(&fs->f_eof_lock);
	}
	mutex_unlock(&fs->f_eof_lock);
	return NULL;
}

int eof_start(struct fs *fs, uint64_t idle_ns)
{
	mutex_init(&fs->f_eof_lock, &eof_lock_class);
	cond_init(&fs->f_eof_cond);
	list_init(&fs->f_eof);
	fs->f_eof_idle_ns = idle_ns ? idle_ns : EOF_IDLE_DEFAULT_NS;
	int err = pthread_create(&fs->f_eof_thread, NULL, eof_thread, fs);
	if (err) {
		msg_err("fs: cannot start the preallocation trimmer: %s", strerror(err));
		return -err;
	}
	fs->f_eof_running = true;
	return 0;
}

void eof_stop(struct fs *fs)
{
	if (!fs->f_eof_running)
		return;
	mutex_lock(&fs->f_eof_lock);
	fs->f_eof_stop = true;
	cond_broadcast(&fs->f_eof_cond);
	mutex_unlock(&fs->f_eof_lock);
	pthread_join(fs->f_eof_thread, NULL);
	fs->f_eof_running = false;
	/* what is left, on this thread (nobody else holds an I/O lock now);
	 * with f_eof_stop set nothing goes back on the list: one pass */
	eof_pass_all(fs);
}

void eof_forget(struct fs_inode *ip)
{
	struct fs *fs = ip->i_fs;
	if (!fs->f_eof_running)
		return;
	mutex_lock(&ip->i_ilock);
	bool unlinked = ip->i_d.nlink == 0;
	mutex_unlock(&ip->i_ilock);
	if (!unlinked)
		return;
	mutex_lock(&fs->f_eof_lock);
	bool listed = !list_empty(&ip->i_eof_link);
	if (listed) {
		list_del(&ip->i_eof_link);
		fs->f_eof_count--;
	}
	mutex_unlock(&fs->f_eof_lock);
	if (listed)
		fs_iput(ip); /* the list's; the caller still holds its own */
}

uint64_t eof_listed(struct fs *fs)
{
	if (!fs->f_eof_running)
		return 0;
	mutex_lock(&fs->f_eof_lock);
	uint64_t n = fs->f_eof_count;
	mutex_unlock(&fs->f_eof_lock);
	return n;
}

void fs_trim_eofblocks(struct fs *fs)
{
	/* the trimmer's own transactions (and the frees of unlinked inodes it
	 * lets go) reserve no blocks, but never wait for itself */
	if (!fs->f_eof_running || pthread_equal(pthread_self(), fs->f_eof_thread))
		return;
	mutex_lock(&fs->f_eof_lock);
	uint64_t mine = ++fs->f_eof_asked;
	cond_broadcast(&fs->f_eof_cond);
	while (fs->f_eof_done < mine && !fs->f_eof_stop)
		cond_wait(&fs->f_eof_cond, &fs->f_eof_lock);
	mutex_unlock(&fs->f_eof_lock);
}
