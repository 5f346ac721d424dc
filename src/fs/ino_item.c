/*
 * ino_item.c - the inode log item (docs/design.md rule 3).
 *
 * A transaction that changes an inode records which fields it changed
 * (ii_fields: FS_ILOG_*). At commit the item is formatted whole (the 512-byte
 * on-disk inode), and committing(csn), still before the inode is unlocked,
 * sets under the item's own lock:
 *   ii_commit_seq   = csn                unless only the change attribute
 *                                         changed (an overwrite within one
 *                                         timestamp tick, file.c: it goes
 *                                         out with the next checkpoint, as
 *                                         a kernel filesystem's unlogged
 *                                         i_version does);
 *   ii_datasync_seq = csn                unless only timestamps or the change
 *                                         attribute changed (rule 4), or
 *                                         blocks past EOF were given back.
 * Both are cleared together when the inode's last pinned checkpoint becomes
 * durable (last unpin), under the same lock; the decrement of the pin count
 * and the clearing happen in one critical section, so a commit that pins
 * again meanwhile keeps its sequence. A non-zero sequence therefore means
 * "changes not yet durable": fsync reads it under ii_lock, drops it, and
 * forces with no inode lock held.
 *
 * Write-back (AIL push) copies the inode into its chunk block and writes
 * the block, holding the inode's metadata lock until the write completed
 * (journal invariant I5).
 */
#include <sys/stat.h>

#include "base/crc32c.h"
#include "fs/fs_priv.h"

static struct lock_class ii_lock_class = LOCK_CLASS(FS_INO_ITEM);

static struct fs_inode *to_ip(struct log_item *lip)
{
	struct ino_item *ii = container_of(lip, struct ino_item, ii_item);
	return container_of(ii, struct fs_inode, i_item);
}

static size_t ino_item_size(struct log_item *lip)
{
	return sizeof(struct fs_ino_log);
}

static void ino_item_format(struct log_item *lip, void *buf)
{
	struct fs_inode *ip = to_ip(lip);
	struct fs_ino_log *il = buf;
	memset(il, 0, sizeof(*il));
	il->il_ino = htole64(ip->i_ino);
	ino_to_disk(ip, &il->il_dinode);
}

static void ino_item_pin(struct log_item *lip)
{
	struct ino_item *ii = &to_ip(lip)->i_item;
	mutex_lock(&ii->ii_lock);
	ii->ii_pin++;
	mutex_unlock(&ii->ii_lock);
}

static void ino_item_committing(struct log_item *lip, uint64_t csn)
{
	struct ino_item *ii = &to_ip(lip)->i_item;
	mutex_lock(&ii->ii_lock);
	if (ii->ii_fields != FS_ILOG_CHANGE)
		ii->ii_commit_seq = csn;
	if (ii->ii_fields & ~FS_ILOG_NOSYNC)
		ii->ii_datasync_seq = csn;
	ii->ii_fields = 0;
	mutex_unlock(&ii->ii_lock);
}

static void ino_item_unpin(struct log_item *lip, bool aborted)
{
	struct ino_item *ii = &to_ip(lip)->i_item;
	mutex_lock(&ii->ii_lock);
	BUG_ON(ii->ii_pin <= 0);
	if (--ii->ii_pin == 0) {
		ii->ii_commit_seq = 0;
		ii->ii_datasync_seq = 0;
	}
	mutex_unlock(&ii->ii_lock);
}

static int ino_item_push(struct log_item *lip, uint64_t lsn)
{
	struct fs_inode *ip = to_ip(lip);
	struct fs *fs = ip->i_fs;
	if (!mutex_trylock(&ip->i_ilock))
		return LOG_PUSH_LOCKED;
	mutex_lock(&ip->i_item.ii_lock);
	bool pinned = ip->i_item.ii_pin > 0;
	mutex_unlock(&ip->i_item.ii_lock);
	if (pinned) {
		mutex_unlock(&ip->i_ilock);
		return LOG_PUSH_PINNED;
	}
	struct fsbuf *bp;
	int err = fsbuf_read(fs, fs_ino_block(ip->i_ino), &fs_ichunk_verifier, 0, &bp);
	if (err) {
		mutex_unlock(&ip->i_ilock);
		return err;
	}
	mutex_lock(&bp->b_bi.bi_lock);
	struct fs_dinode *d = (struct fs_dinode *)(bp->b_data + fs_ino_slot(ip->i_ino) * FS_INODE_SIZE);
	ino_to_disk(ip, d);
	ino_stamp(d, lsn);
	/* the inode is locked: never behind others' unstable data (dev.h, B2) */
	err = dev_write(fs->f_ddev, bp->b_data, FS_BLOCK_SIZE, fs_daddr(bp->b_blkno),
			DEV_NOTHROTTLE);
	mutex_unlock(&bp->b_bi.bi_lock);
	mutex_unlock(&ip->i_ilock);
	fsbuf_rele(bp);
	if (err) {
		msg_err("fs: writing back inode %llu failed: %s", (unsigned long long)ip->i_ino,
			strerror(-err));
		return err;
	}
	counter_inc(&fs->f_stats.inode_writebacks);
	return LOG_PUSH_OK;
}

static void ino_item_release(struct log_item *lip)
{
	mutex_unlock(&to_ip(lip)->i_ilock);
}

/* Recovery: the logged inode goes to its slot (pass 2, oldest first). */
static int ino_item_recover(struct log_recovery *rc, const void *img, size_t len)
{
	if (len != sizeof(struct fs_ino_log))
		return -EUCLEAN;
	const struct fs_ino_log *il = img;
	uint64_t ino = le64toh(il->il_ino);
	if (le64toh(il->il_dinode.di_ino) != ino)
		return -EUCLEAN;
	int err = 0;
	uint8_t *blk = log_recovery_block(rc, fs_daddr(fs_ino_block(ino)), FS_BLOCK_SIZE, &err);
	if (!blk)
		return err;
	memcpy(blk + fs_ino_slot(ino) * FS_INODE_SIZE, &il->il_dinode, FS_INODE_SIZE);
	return 0;
}

const struct log_item_ops ino_item_ops = {
	.type = LOG_ITEM_INODE,
	.name = "inode",
	.size = ino_item_size,
	.format = ino_item_format,
	.pin = ino_item_pin,
	.committing = ino_item_committing,
	.unpin = ino_item_unpin,
	.push = ino_item_push,
	.release = ino_item_release,
	.recover = ino_item_recover,
};

void ino_item_init(struct fs_inode *ip)
{
	log_item_init(&ip->i_item.ii_item, ip->i_fs->f_log, &ino_item_ops);
	mutex_init(&ip->i_item.ii_lock, &ii_lock_class);
}

bool ino_item_busy(struct fs_inode *ip)
{
	mutex_lock(&ip->i_item.ii_lock);
	bool pinned = ip->i_item.ii_pin > 0;
	mutex_unlock(&ip->i_item.ii_lock);
	return pinned || log_item_in_ail(&ip->i_item.ii_item);
}
