/*
 * mount.c - making, mounting and unmounting a filesystem; counters.
 *
 * mkfs layout: block 0 superblock, the internal log from block 1, then the
 * roots of the free-space, inode index and orphan trees, the first inode
 * chunk (the root directory is its first inode), the root directory's tree,
 * and everything after that free. Every block is written stamped, then the
 * superblock, then a flush.
 *
 * Mount: verify the superblock, recover the log (replay restamps what it
 * changed), read the superblock again, count free space and inodes, and
 * finish the orphans a crash left.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/rand.h"
#include "base/time.h"
#include "fs/fs_priv.h"

static struct lock_class ialloc_lock_class = LOCK_CLASS(FS_IALLOC);
static struct lock_class alloc_lock_class = LOCK_CLASS(FS_ALLOC);
static struct lock_class resv_lock_class = LOCK_CLASS(FS_RESV);
static struct lock_class rename_lock_class = LOCK_CLASS(FS_RENAME);
static struct lock_class layout_lock_class = LOCK_CLASS(FS_LAYOUT);

static void random_bytes(uint8_t *p, size_t n)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read(fd, p, n) : -1;
	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)n) {
		uint64_t seed = now_ns() ^ (uint64_t)getpid();
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)splitmix64(&seed);
	}
}

static void bt_leaf_init(uint8_t *blk, uint32_t magic, uint64_t blkno, uint64_t owner,
			 const uint8_t *uuid)
{
	memset(blk, 0, FS_BLOCK_SIZE);
	struct fs_bthdr *h = (struct fs_bthdr *)blk;
	h->bh_magic = htole32(magic);
	h->bh_blkno = htole64(blkno);
	h->bh_owner = htole64(owner);
	memcpy(h->bh_uuid, uuid, 16);
	h->bh_data = htole16(FS_BLOCK_SIZE);
}

/* Append a record to a leaf being built (keys in order). */
static void bt_leaf_add(uint8_t *blk, uint64_t k0, const void *val, uint16_t vlen)
{
	struct fs_bthdr *h = (struct fs_bthdr *)blk;
	unsigned n = le16toh(h->bh_nrecs), data = le16toh(h->bh_data);
	data -= FS_BT_REC_HDR + vlen;
	struct fs_btkey k = {htole64(k0), 0};
	memcpy(blk + data, &k, sizeof(k));
	uint16_t vl = htole16(vlen);
	memcpy(blk + data + sizeof(k), &vl, 2);
	memcpy(blk + data + FS_BT_REC_HDR, val, vlen);
	uint16_t off = htole16((uint16_t)data);
	memcpy(blk + sizeof(*h) + 2 * n, &off, 2);
	h->bh_nrecs = htole16((uint16_t)(n + 1));
	h->bh_data = htole16((uint16_t)data);
}

int fs_mkfs(const struct fs_mkfs_opts *o)
{
	struct dev *d = o->ddev;
	uint64_t blocks = dev_size(d) / FS_BLOCK_SIZE;
	if (blocks < 2048) {
		msg_err("mkfs: the device has %llu blocks; at least 2048 (8 MiB) are needed",
			(unsigned long long)blocks);
		return -EINVAL;
	}
	uint64_t log_size = o->log_size;
	if (!log_size)
		log_size = MIN(MAX(blocks * FS_BLOCK_SIZE / 128, 2ull << 20), 256ull << 20);
	log_size = ALIGN_UP(log_size, (uint64_t)FS_BLOCK_SIZE);
	/* a transaction may reserve at most a quarter of the log, and the
	 * engine's default reservation is some 70 KB: below this, every
	 * change would fail */
	if (log_size < FS_LOG_MIN) {
		msg_err("mkfs: a log of %llu bytes is too small; it needs at least %u KiB",
			(unsigned long long)log_size, FS_LOG_MIN >> 10);
		return -EINVAL;
	}
	uint64_t log_blocks = log_size / FS_BLOCK_SIZE;
	bool external = o->ldev != NULL;
	uint64_t log_start = external ? 0 : 1;
	if (external && o->ldev->d_size < log_size) {
		msg_err("mkfs: the log device is smaller than the log (%llu bytes)",
			(unsigned long long)log_size);
		return -EINVAL;
	}
	uint64_t next = external ? 1 : 1 + log_blocks;
	uint64_t free_root = next++, ino_root = next++, orphan_root = next++;
	uint64_t chunk = next;
	next += FS_CHUNK_BLOCKS;
	uint64_t root_tree = next++;
	if (next + 16 > blocks) {
		msg_err("mkfs: the log of %llu bytes leaves no room on the device",
			(unsigned long long)log_size);
		return -EINVAL;
	}
	uint8_t uuid[16];
	if (o->uuid)
		memcpy(uuid, o->uuid, 16);
	else
		random_bytes(uuid, 16);

	/* the log */
	struct log_params lp = {.ldev = external ? o->ldev : d, .ddev = d,
				.log_offset = log_start * FS_BLOCK_SIZE, .log_size = log_size};
	memcpy(lp.uuid, uuid, 16);
	int err = log_format(&lp);
	if (err)
		return err;

	uint8_t *blk = xmalloc_aligned(4096, FS_BLOCK_SIZE);
	const struct fs_verifier *fv = fs_bt_verifier(FS_BT_FREE_MAGIC);
	/* free space: everything after the root directory's tree */
	bt_leaf_init(blk, FS_BT_FREE_MAGIC, free_root, 0, uuid);
	uint64_t flen = htole64(blocks - next);
	bt_leaf_add(blk, next, &flen, sizeof(flen));
	fv->stamp(blk, 0);
	err = dev_write(d, blk, FS_BLOCK_SIZE, fs_daddr(free_root), 0);
	/* inode index: the first chunk, its first inode (the root) in use */
	uint64_t first_ino = chunk * FS_INODES_PER_BLK;
	if (!err) {
		bt_leaf_init(blk, FS_BT_INO_MAGIC, ino_root, 0, uuid);
		uint64_t mask = htole64(~1ull);
		bt_leaf_add(blk, first_ino, &mask, sizeof(mask));
		fv->stamp(blk, 0);
		err = dev_write(d, blk, FS_BLOCK_SIZE, fs_daddr(ino_root), 0);
	}
	if (!err) {
		bt_leaf_init(blk, FS_BT_ORPHAN_MAGIC, orphan_root, 0, uuid);
		fv->stamp(blk, 0);
		err = dev_write(d, blk, FS_BLOCK_SIZE, fs_daddr(orphan_root), 0);
	}
	if (!err) {
		bt_leaf_init(blk, FS_BT_DIR_MAGIC, root_tree, first_ino, uuid);
		fv->stamp(blk, 0);
		err = dev_write(d, blk, FS_BLOCK_SIZE, fs_daddr(root_tree), 0);
	}
	/* the inode chunk: the root directory in slot 0, the rest free */
	for (unsigned b = 0; b < FS_CHUNK_BLOCKS && !err; b++) {
		memset(blk, 0, FS_BLOCK_SIZE);
		if (b == 0) {
			struct fs_dinode *di = (struct fs_dinode *)blk;
			struct timespec now;
			clock_gettime(CLOCK_REALTIME, &now);
			di->di_magic = htole32(FS_INODE_MAGIC);
			di->di_ino = htole64(first_ino);
			di->di_mode = htole32(S_IFDIR | 0755);
			di->di_nlink = htole32(2);
			di->di_nblocks = htole64(1);
			struct fs_dts ts = {.sec = (int64_t)htole64((uint64_t)now.tv_sec),
					    .nsec = htole32((uint32_t)now.tv_nsec)};
			di->di_atime = di->di_mtime = di->di_ctime = di->di_btime = ts;
			di->di_change = htole64(1);
			uint32_t gen;
			random_bytes((uint8_t *)&gen, sizeof(gen));
			di->di_gen = htole32(gen | 1);
			di->di_parent = htole64(first_ino);
			di->di_root = htole64(root_tree);
			ino_stamp(di, 0);
		}
		err = dev_write(d, blk, FS_BLOCK_SIZE, fs_daddr(chunk + b), 0);
	}
	/* the superblock last */
	if (!err) {
		memset(blk, 0, FS_BLOCK_SIZE);
		struct fs_dsb *sb = (struct fs_dsb *)blk;
		sb->sb_magic = htole32(FS_SB_MAGIC);
		sb->sb_version = htole32(FS_VERSION);
		sb->sb_blocksize = htole32(FS_BLOCK_SIZE);
		sb->sb_blocks = htole64(blocks);
		memcpy(sb->sb_uuid, uuid, 16);
		memcpy(sb->sb_log_uuid, uuid, 16);
		sb->sb_log_start = htole64(log_start);
		sb->sb_log_blocks = htole64(log_blocks);
		sb->sb_flags = htole32(external ? FS_SB_EXTERNAL_LOG : 0);
		sb->sb_root_ino = htole64(first_ino);
		sb->sb_free_root = htole64(free_root);
		sb->sb_ino_root = htole64(ino_root);
		sb->sb_orphan_root = htole64(orphan_root);
		random_bytes(sb->sb_secret, sizeof(sb->sb_secret));
		sb->sb_mkfs_time = htole64((uint64_t)time(NULL));
		if (o->label)
			snprintf(sb->sb_label, sizeof(sb->sb_label), "%s", o->label);
		fs_sb_verifier.stamp(blk, 0);
		err = dev_write(d, blk, FS_BLOCK_SIZE, 0, 0);
	}
	free(blk);
	if (!err)
		err = dev_flush(d);
	if (!err && external)
		err = dev_flush(o->ldev);
	return err;
}

static const struct log_item_ops *const fs_item_ops[] = {&ino_item_ops};

int fs_mount(const struct fs_mount_opts *o, struct fs **out)
{
	*out = NULL;
	struct fs *fs = xcalloc(1, sizeof(*fs));
	fs->f_ddev = o->ddev;
	fs->f_readonly_check = o->readonly_check;
	fs->f_ldata_max = o->logged_data_max == FS_LOGGED_DATA_OFF ? 0
			  : o->logged_data_max		   ? o->logged_data_max
							   : FS_LOGGED_DATA_DEFAULT;
	fs->f_bench_sync_lc = o->bench_sync_layoutcommit;
	mutex_init(&fs->f_ialloc_lock, &ialloc_lock_class);
	mutex_init(&fs->f_alloc_lock, &alloc_lock_class);
	mutex_init(&fs->f_resv_lock, &resv_lock_class);
	cond_init(&fs->f_resv_cond);
	mutex_init(&fs->f_rename_lock, &rename_lock_class);
	mutex_init(&fs->f_layout_lock, &layout_lock_class);
	cond_init(&fs->f_layout_cond);
	ra_init(fs, o->readahead_off, o->readahead_windows);

	uint8_t *blk = xmalloc_aligned(4096, FS_BLOCK_SIZE);
	int err = 0;
	if (dev_size(o->ddev) < FS_BLOCK_SIZE) {
		msg_err("fs: the device holds %llu bytes, not even a superblock: truncated image?",
			(unsigned long long)dev_size(o->ddev));
		err = -EUCLEAN;
	}
	if (!err)
		err = dev_read(o->ddev, blk, FS_BLOCK_SIZE, 0);
	if (!err)
		err = fs_verify_sb((struct fs_dsb *)blk, dev_size(o->ddev) / FS_BLOCK_SIZE);
	if (err) {
		free(blk);
		goto out_free;
	}
	struct fs_dsb *sb = (struct fs_dsb *)blk;
	bool external = le32toh(sb->sb_flags) & FS_SB_EXTERNAL_LOG;
	if (external && !o->ldev) {
		msg_err("fs: the filesystem has an external log: give its device");
		free(blk);
		err = -EINVAL;
		goto out_free;
	}
	fs->f_ldev = external ? o->ldev : o->ddev;
	fs->f_blocks = le64toh(sb->sb_blocks);
	memcpy(fs->f_uuid, sb->sb_uuid, 16);
	struct log_params lp = {
		.ldev = fs->f_ldev,
		.ddev = fs->f_ddev,
		.log_offset = le64toh(sb->sb_log_start) * FS_BLOCK_SIZE,
		.log_size = le64toh(sb->sb_log_blocks) * FS_BLOCK_SIZE,
		.nbufs = o->log_bufs,
		.buf_size = o->log_buf_size,
		.push_interval_ns = o->push_interval_ns,
		.item_ops = fs_item_ops,
		.nitem_ops = ARRAY_SIZE(fs_item_ops),
		.restamp = fs_restamp,
		.restamp_arg = fs,
	};
	memcpy(lp.uuid, sb->sb_uuid, 16);
	free(blk);
	err = log_mount(&lp, &fs->f_log);
	if (err)
		goto out_free;

	fsbuf_cache_init(fs);
	ino_cache_init(fs);
	/* the superblock again: replay may have changed it */
	err = fsbuf_read(fs, 0, &fs_sb_verifier, 0, &fs->f_sbp);
	if (err)
		goto out_log;
	fs->f_sb = (struct fs_dsb *)fs->f_sbp->b_data;
	memcpy(fs->f_secret, fs->f_sb->sb_secret, FS_SECRET_SIZE);
	err = rec_mount(fs);
	if (!err)
		err = alloc_mount(fs);
	if (!err)
		err = ialloc_mount(fs);
	if (!err) {
		struct fs_inode *root;
		err = fs_root(fs, &root);
		if (err == -ESTALE) {
			msg_err("fs: the root inode %llu is not allocated",
				(unsigned long long)le64toh(fs->f_sb->sb_root_ino));
			err = -EUCLEAN;
		}
		if (!err) {
			if (!S_ISDIR(root->i_d.mode)) {
				msg_err("fs: the root inode is not a directory");
				err = -EUCLEAN;
			}
			fs_iput(root);
		}
	}
	if (!err && !o->readonly_check)
		err = orphan_recover(fs);
	if (!err && !o->readonly_check)
		err = eof_start(fs, o->eof_idle_ns);
	if (err)
		goto out_log;
	*out = fs;
	return 0;

out_log:
	log_shutdown(fs->f_log, "mount failed");
	log_unmount(fs->f_log);
	if (fs->f_sbp)
		fsbuf_rele(fs->f_sbp);
	ino_cache_destroy(fs);
	fsbuf_cache_destroy(fs);
out_free:
	ra_destroy(fs);
	free(fs);
	return err;
}

int fs_unmount(struct fs *fs)
{
	eof_stop(fs);
	/* everything the journal holds is written back by its unmount */
	int err = log_unmount(fs->f_log);
	fsbuf_rele(fs->f_sbp);
	ino_cache_destroy(fs);
	fsbuf_cache_destroy(fs);
	mutex_lock(&fs->f_layout_lock);
	mutex_unlock(&fs->f_layout_lock);
	ra_destroy(fs);
	free(fs);
	return err;
}

void fs_shutdown(struct fs *fs, const char *why)
{
	if (!atomic_exchange(&fs->f_shutdown, true))
		msg_err("fs: shut down: %s", why);
	log_shutdown(fs->f_log, why);
}

struct dev *fs_data_dev(struct fs *fs)
{
	return fs->f_ddev;
}

const uint8_t *fs_uuid(struct fs *fs)
{
	return fs->f_uuid;
}

const uint8_t *fs_handle_secret(struct fs *fs)
{
	return fs->f_secret;
}

int fs_force(struct fs *fs, uint64_t csn, bool *log_written)
{
	assert_none_held(LOCK_RANK_FS_IOLOCK, LOCK_RANK_FS_ILOCK); /* no inode lock */
	return log_force_seq(fs->f_log, csn, true, log_written);
}

/* The journal waiter lives in the caller's struct fs_sync_waiter (fs.h). */
_Static_assert(sizeof(struct log_force_waiter) <= FS_SYNC_WAITER_PRIV,
	       "struct fs_sync_waiter has room for a journal waiter");
_Static_assert(_Alignof(struct log_force_waiter) <= _Alignof(struct fs_sync_waiter),
	       "struct fs_sync_waiter is aligned for a journal waiter");

static void sync_waiter_done(struct log_force_waiter *lw, int err, bool flushed)
{
	struct fs_sync_waiter *w =
		(struct fs_sync_waiter *)((char *)lw - offsetof(struct fs_sync_waiter, priv));
	w->fn(w, err, flushed);
}

int fs_force_async(struct fs *fs, uint64_t csn, struct fs_sync_waiter *w)
{
	assert_none_held(0, LOCK_RANK_FS_LAYOUT); /* no engine or journal lock */
	struct log_force_waiter *lw = (struct log_force_waiter *)w->priv.bytes;
	memset(lw, 0, sizeof(*lw));
	lw->fn = sync_waiter_done;
	lw->may_push = true;
	return log_force_async(fs->f_log, csn, lw);
}

int fs_flush_data(struct fs *fs)
{
	return dev_flush(fs->f_ddev);
}

uint64_t fs_data_epoch(struct fs *fs)
{
	/* the device counts every failed write and flush, and a flush that
	 * returned 0 after one failed sees it counted (dev.h, F4) */
	return dev_write_errors(fs->f_ddev);
}

uint64_t fs_data_mark(struct fs *fs)
{
	return dev_flush_errors(fs->f_ddev);
}

bool fs_data_lost_since(struct fs *fs, uint64_t mark)
{
	return dev_flush_errors(fs->f_ddev) != mark;
}

/* The device waiter lives in the caller's struct fs_flush_waiter (fs.h). */
_Static_assert(sizeof(struct dev_flush_waiter) <= FS_FLUSH_WAITER_PRIV,
	       "struct fs_flush_waiter has room for a device waiter");
_Static_assert(_Alignof(struct dev_flush_waiter) <= _Alignof(struct fs_flush_waiter),
	       "struct fs_flush_waiter is aligned for a device waiter");

static void flush_waiter_done(struct dev_flush_waiter *dw, int err)
{
	struct fs_flush_waiter *w =
		(struct fs_flush_waiter *)((char *)dw - offsetof(struct fs_flush_waiter, priv));
	w->fn(w, err);
}

int fs_flush_data_async(struct fs *fs, struct fs_flush_waiter *w, bool may_lead)
{
	struct dev_flush_waiter *dw = (struct dev_flush_waiter *)w->priv.bytes;
	memset(dw, 0, sizeof(*dw));
	dw->fn = flush_waiter_done;
	return dev_flush_async(fs->f_ddev, dw, may_lead);
}

int fs_sync(struct fs *fs)
{
	if (fs_is_shutdown(fs))
		return -EIO;
	int err = log_force_all(fs->f_log);
	if (!err)
		err = dev_flush(fs->f_ddev);
	return err;
}

void fs_stats(struct fs *fs, const struct stat_sink *s)
{
#define C(name) stat_emitf(s, "fs", #name, counter_get(&fs->f_stats.name))
	C(writes);
	C(write_bytes);
	C(reads);
	C(read_bytes);
	C(fsyncs);
	C(fdatasyncs);
	C(fsync_log_writes);
	C(fsync_flushes);
	C(allocs);
	C(alloc_blocks);
	C(frees);
	C(free_blocks);
	C(busy_forces);
	C(inode_writebacks);
	C(inode_allocs);
	C(inode_frees);
	C(timestamp_txns);
	C(commit_blocks);
	C(map_blocks);
	C(layout_recalls);
	C(layout_delays);
	C(layout_waits);
	C(freelist_short);
	C(layout_givebacks);
	C(layout_giveback_blocks);
	C(buf_reads);
	C(buf_hits);
	C(buf_evictions);
	C(eof_trims);
	C(eof_trim_blocks);
	C(rec_puts);
	C(rec_deletes);
	C(xattr_sets);
	C(xattr_removes);
	C(xattr_gets);
	C(xattr_lists);
	C(xattr_frees);
	C(logged_writes);
	C(logged_bytes);
	C(logged_overwrites);
	C(logged_concurrent);
	C(logged_streaming);
	C(shared_conversions);
	C(shared_conversion_redos);
	C(ra_fills);
	C(ra_prefetches);
	C(ra_hits);
	C(ra_stale);
#undef C
	stat_gauge(s, "fs.records", le32toh(fs->f_sb->sb_rec_count));
	stat_gauge(s, "fs.free_blocks_now", (uint64_t)MAX(alloc_free_blocks(fs), 0));
	stat_gauge(s, "fs.inodes", atomic_load(&fs->f_icount));
	stat_gauge(s, "fs.eof_listed", eof_listed(fs));
	log_stats(fs->f_log, s);
	dev_stats(fs->f_ddev, "dev", s);
	if (fs->f_ldev != fs->f_ddev)
		dev_stats(fs->f_ldev, "logdev", s);
}
