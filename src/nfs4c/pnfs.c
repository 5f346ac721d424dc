/*
 * pnfs.c - the pNFS block layout client: disks, devices, files with their
 * layouts, I/O through them, LAYOUTCOMMIT, returns and recalls. pnfs.h
 * has the design and the invariants; blk.h the extent arithmetic.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/mem.h"
#include "base/time.h"
#include "nfs4c/pnfs.h"

#define DIO_ALIGN     4096u	 /* O_DIRECT: offsets, lengths and buffers */
#define IO_CHUNK      (1u << 20) /* bytes of one disk I/O */
#define MAX_DEVICES   64	 /* device ids described per client */
#define DEVINFO_MAX   65536u	 /* gdia_maxcount */
#define LAYOUT_MAX    32768u	 /* loga_maxcount */
#define COMMIT_MAX    1024u	 /* extents per LAYOUTCOMMIT (44 bytes each) */
#define RETRY_FIRST   (10 * NSEC_PER_MSEC)
#define RETRY_MAX     (500 * NSEC_PER_MSEC)
#define RETRY_DEFAULT 60000u

static const struct lock_class pnfs_class = LOCK_CLASS(NFS4C_PNFS);
static const struct lock_class file_class = LOCK_CLASS(NFS4C_PNFS_FILE);

struct pnfs_disk {
	char *path;
	int fd;
	uint64_t size;
};

struct pnfs_dev {
	uint8_t id[NFS4_DEVICEID4_SIZE];
	struct nfs4c_blk_topo topo; /* resolved; never changes once listed */
};

/* A return to make: a recalled file range, or everything (FSID, ALL,
 * CB_RECALL_ANY). */
struct ret_job {
	struct list link;
	layoutrecall_type4 kind;
	layoutiomode4 iomode;
	struct nfs4c_pnfs_file *f; /* FILE: referenced */
	uint64_t off, len;
	struct nfs4c_pnfs_file **files; /* the others: referenced */
	unsigned nfiles;
};

struct nfs4c_pnfs {
	struct nfs4c_client *cl;
	struct nfs4c_pnfs_cfg cfg;
	uint32_t bs;
	unsigned ndisk;
	struct pnfs_disk disk[NFS4C_PNFS_MAX_DISKS];
	char owner[64];

	struct mutex lock; /* everything below */
	struct cond cv;
	struct pnfs_dev *dev[MAX_DEVICES];
	unsigned ndev;
	bool dev_busy; /* a device is being described (cv: done) */
	struct list files;
	struct list jobs;
	bool stop;
	pthread_t thread;
	struct nfs4c_pnfs_stats st;
};

struct nfs4c_pnfs_file {
	struct nfs4c_pnfs *p;
	struct list link; /* p->files, under p->lock, as is refs */
	unsigned refs;
	bool listed;
	struct nfs4c_fh fh;
	struct stateid4 open_sid;

	struct mutex lock; /* everything below */
	struct cond cv;
	bool have_lsid;
	struct stateid4 lsid;
	struct nfs4c_blk_map map;
	uint64_t size;
	bool written;		   /* since the last LAYOUTCOMMIT */
	uint64_t wr_lo, wr_hi;	   /* block-aligned range written since */
	uint64_t last_end;	   /* one past the last byte written since */
	uint64_t wr_gen;	   /* one more per write */
	unsigned io_busy;	   /* I/Os using the layout (invariant 2) */
	unsigned recalling;	   /* returns pending (invariant 2) */
	bool lg_busy, commit_busy; /* invariant 4 */
};

static void note(struct nfs4c_pnfs *p, const char *fmt, ...) __printf(2, 3);
static void note(struct nfs4c_pnfs *p, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	if (!p->cfg.note)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	p->cfg.note(p->cfg.note_arg, line);
}

static void count(struct nfs4c_pnfs *p, uint64_t *ctr, uint64_t n)
{
	mutex_lock(&p->lock);
	*ctr += n;
	mutex_unlock(&p->lock);
}

static bool busy_status(int st)
{
	return st == NFS4ERR_DELAY || st == NFS4ERR_GRACE || st == NFS4ERR_RECALLCONFLICT ||
	       st == NFS4ERR_LAYOUTTRYLATER;
}

/* A retry schedule for busy answers (pnfs.h: up to retry_ms). */
struct backoff {
	uint64_t pause, deadline;
};

static void backoff_init(struct nfs4c_pnfs *p, struct backoff *b)
{
	b->pause = RETRY_FIRST;
	b->deadline = now_ns() + (uint64_t)p->cfg.retry_ms * NSEC_PER_MSEC;
}

/* Sleep before trying again; false when the time is up. */
static bool backoff_wait(struct backoff *b)
{
	if (now_ns() >= b->deadline)
		return false;
	sleep_ns(b->pause);
	b->pause = MIN(2 * b->pause, RETRY_MAX);
	return true;
}

/* a is later than b in seqid order (RFC 8881 8.2.2: a 32-bit sequence) */
static bool seqid_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* ---- disks ------------------------------------------------------------ */

static int disk_open(struct pnfs_disk *d, const char *path)
{
	struct stat sb;
	d->path = xstrdup(path);
	d->fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (d->fd < 0)
		return -errno;
	if (fstat(d->fd, &sb))
		return -errno;
	if (S_ISBLK(sb.st_mode)) {
		if (ioctl(d->fd, BLKGETSIZE64, &d->size))
			return -errno;
	} else if (S_ISREG(sb.st_mode)) {
		d->size = (uint64_t)sb.st_size;
	} else {
		return -ENOTBLK;
	}
	return 0;
}

/* Whole aligned transfers (buf, off, len aligned to DIO_ALIGN): 0 or
 * -errno, -EIO for a transfer cut short by the disk's end. A read with
 * done stops there instead and says how far it got. */
static int disk_pio(struct pnfs_disk *d, bool wr, void *buf, size_t len, uint64_t off, size_t *done)
{
	size_t n = 0;
	while (n < len) {
		ssize_t r = wr ? pwrite(d->fd, (uint8_t *)buf + n, len - n, (off_t)(off + n))
			       : pread(d->fd, (uint8_t *)buf + n, len - n, (off_t)(off + n));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (done) {
		*done = n;
		return 0;
	}
	return n == len ? 0 : -EIO;
}

/* Any bytes of a disk (signatures): through an aligned bounce buffer. */
static int disk_read_any(void *arg, unsigned disk, uint64_t off, void *buf, size_t len)
{
	struct nfs4c_pnfs *p = arg;
	struct pnfs_disk *d = &p->disk[disk];
	if (disk >= p->ndisk || off > d->size || len > d->size - off)
		return -ERANGE;
	uint64_t a = ALIGN_DOWN(off, (uint64_t)DIO_ALIGN);
	uint64_t b = ALIGN_UP(off + len, (uint64_t)DIO_ALIGN);
	uint8_t *bb = xmalloc_aligned(DIO_ALIGN, b - a);
	size_t done = 0;
	int err = disk_pio(d, false, bb, b - a, a, &done);
	if (!err && done < off + len - a)
		err = -EIO;
	if (!err)
		memcpy(buf, bb + (off - a), len);
	free(bb);
	return err;
}

/* ---- devices ------------------------------------------------------------ */

static struct pnfs_dev *dev_find(struct nfs4c_pnfs *p, const uint8_t id[NFS4_DEVICEID4_SIZE])
{
	for (unsigned i = 0; i < p->ndev; i++)
		if (!memcmp(p->dev[i]->id, id, NFS4_DEVICEID4_SIZE))
			return p->dev[i];
	return NULL;
}

static void dev_free(struct pnfs_dev *d)
{
	nfs4c_blk_topo_free(&d->topo);
	free(d);
}

/* GETDEVICEINFO and find its volumes on the disks. */
static int dev_describe(struct nfs4c_pnfs *p, const uint8_t id[NFS4_DEVICEID4_SIZE],
			struct pnfs_dev **out)
{
	struct nfs4c_compound c;
	struct backoff b;
	uint64_t sizes[NFS4C_PNFS_MAX_DISKS];
	int ret;

	backoff_init(p, &b);
	nfs4c_compound_init(&c, p->cl);
	for (;;) {
		nfs4c_compound_reset(&c);
		nfs4c_op_getdeviceinfo(&c, id, LAYOUT4_BLOCK_VOLUME, DEVINFO_MAX, 0);
		ret = nfs4c_send(&c);
		if (!ret)
			ret = c.status;
		if (!busy_status(ret) || !backoff_wait(&b))
			break;
	}
	count(p, &p->st.getdeviceinfos, 1);
	if (ret == NFS4ERR_TOOSMALL)
		ret = -EMSGSIZE; /* a device description over DEVINFO_MAX */
	if (ret)
		goto out;
	const struct nfs_resop4 *r = nfs4c_res(&c, OP_GETDEVICEINFO, 0);
	if (!r) {
		ret = -EBADMSG;
		goto out;
	}
	const struct device_addr4 *da = &r->opgetdeviceinfo.gdir_resok4.gdir_device_addr;
	if (da->da_layout_type != LAYOUT4_BLOCK_VOLUME) {
		ret = -EPROTO;
		goto out;
	}
	struct pnfs_dev *d = xcalloc(1, sizeof(*d));
	memcpy(d->id, id, NFS4_DEVICEID4_SIZE);
	ret = nfs4c_blk_topo_decode(da->da_addr_body.val, da->da_addr_body.len, &d->topo);
	for (unsigned i = 0; i < p->ndisk; i++)
		sizes[i] = p->disk[i].size;
	if (!ret)
		ret = nfs4c_blk_topo_resolve(&d->topo, p->ndisk, sizes, disk_read_any, p);
	if (ret) {
		if (ret == -ENODEV)
			note(p,
			     "device %02x%02x%02x%02x...: its signature is on none of the %u disks",
			     id[0], id[1], id[2], id[3], p->ndisk);
		dev_free(d);
		goto out;
	}
	*out = d;
out:
	nfs4c_compound_destroy(&c);
	return ret;
}

/* A device, described once: the first I/Os of a stream all want it at
 * once, and those that find a description under way wait for it instead
 * of sending a GETDEVICEINFO (and searching the disks) each. One at a
 * time per client; after a failed one the next waiter tries again. */
static int dev_get(struct nfs4c_pnfs *p, const uint8_t id[NFS4_DEVICEID4_SIZE],
		   struct pnfs_dev **out)
{
	mutex_lock(&p->lock);
	while (!(*out = dev_find(p, id)) && p->dev_busy)
		cond_wait(&p->cv, &p->lock);
	if (!*out)
		p->dev_busy = true;
	mutex_unlock(&p->lock);
	if (*out)
		return 0;
	struct pnfs_dev *d;
	int ret = dev_describe(p, id, &d);
	mutex_lock(&p->lock);
	if (!ret && p->ndev < MAX_DEVICES) {
		p->dev[p->ndev++] = d;
		*out = d;
	} else if (!ret) {
		dev_free(d);
		ret = -E2BIG;
	}
	p->dev_busy = false;
	cond_broadcast(&p->cv); /* the waiters; the return thread looks and waits again */
	mutex_unlock(&p->lock);
	return ret;
}

/* Read or write [soff, soff + len) of a device (aligned buffer). */
static int dev_io(struct nfs4c_pnfs *p, const uint8_t id[NFS4_DEVICEID4_SIZE], uint64_t soff,
		  void *buf, size_t len, bool wr)
{
	struct pnfs_dev *d;
	int err = dev_get(p, id, &d);
	while (!err && len) {
		unsigned disk;
		uint64_t doff, contig;
		err = nfs4c_blk_topo_map(&d->topo, soff, len, &disk, &doff, &contig);
		if (err == -ERANGE)
			err = -EPROTO; /* an extent past the device's end */
		if (err)
			break;
		if (p->cfg.io_hook)
			err = p->cfg.io_hook(p->cfg.io_hook_arg, wr, disk, doff, contig);
		if (!err)
			err = disk_pio(&p->disk[disk], wr, buf, contig, doff, NULL);
		if (!err)
			count(p, wr ? &p->st.disk_write_bytes : &p->st.disk_read_bytes, contig);
		buf = (uint8_t *)buf + contig;
		soff += contig;
		len -= contig;
	}
	if (!err)
		count(p, wr ? &p->st.disk_writes : &p->st.disk_reads, 1);
	return err;
}

int nfs4c_pnfs_device(struct nfs4c_pnfs *p, const uint8_t id[NFS4_DEVICEID4_SIZE],
		      struct nfs4c_pnfs_device *out)
{
	struct pnfs_dev *d;
	int err = dev_get(p, id, &d);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	out->nvol = d->topo.nvol;
	for (unsigned i = 0; i < d->topo.nvol; i++) {
		const struct nfs4c_blk_vol *v = &d->topo.vol[i];
		out->vol[i].type = v->type;
		out->vol[i].size = v->size;
		out->vol[i].disk = v->disk;
		out->vol[i].nsig = v->nsig;
		if (v->nsig) {
			out->vol[i].sig_off = v->sig[0].off;
			out->vol[i].sig_len = v->sig[0].len;
		}
	}
	return 0;
}

/* ---- files ---------------------------------------------------------------- */

static void file_put(struct nfs4c_pnfs_file *f)
{
	struct nfs4c_pnfs *p = f->p;
	mutex_lock(&p->lock);
	bool last = --f->refs == 0;
	mutex_unlock(&p->lock);
	if (!last)
		return;
	nfs4c_blk_map_destroy(&f->map);
	cond_destroy(&f->cv);
	mutex_destroy(&f->lock);
	free(f);
}

const struct nfs4c_fh *nfs4c_pnfs_fh(const struct nfs4c_pnfs_file *f)
{
	return &f->fh;
}

struct stateid4 nfs4c_pnfs_open_stateid(const struct nfs4c_pnfs_file *f)
{
	return f->open_sid;
}

uint64_t nfs4c_pnfs_size(struct nfs4c_pnfs_file *f)
{
	mutex_lock(&f->lock);
	uint64_t s = f->size;
	mutex_unlock(&f->lock);
	return s;
}

bool nfs4c_pnfs_layout_stateid(struct nfs4c_pnfs_file *f, struct stateid4 *sid)
{
	mutex_lock(&f->lock);
	bool have = f->have_lsid;
	if (have)
		*sid = f->lsid;
	mutex_unlock(&f->lock);
	return have;
}

unsigned nfs4c_pnfs_extents(struct nfs4c_pnfs_file *f)
{
	mutex_lock(&f->lock);
	unsigned n = nfs4c_blk_map_count(&f->map);
	mutex_unlock(&f->lock);
	return n;
}

int nfs4c_pnfs_open(struct nfs4c_pnfs *p, const struct nfs4c_fh *dir, const char *name,
		    unsigned flags, struct nfs4c_pnfs_file **out)
{
	struct nfs4c_compound c;
	struct nfs4c_attr attr;
	struct backoff b;
	bitmap4 bm = {0};
	int ret;

	struct nfs4c_open o = {.owner = p->owner,
			       .owner_len = (uint32_t)strlen(p->owner),
			       .access = flags & NFS4C_PNFS_RDONLY ? OPEN4_SHARE_ACCESS_READ
								   : OPEN4_SHARE_ACCESS_BOTH,
			       .deny = OPEN4_SHARE_DENY_NONE,
			       .claim = CLAIM_NULL,
			       .name = name,
			       .create = flags &
					 (NFS4C_PNFS_CREATE | NFS4C_PNFS_EXCL | NFS4C_PNFS_TRUNC),
			       .how = flags & NFS4C_PNFS_EXCL ? GUARDED4 : UNCHECKED4,
			       .attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	/* an existing file gets only a size of zero from UNCHECKED4's
	 * attributes (RFC 8881 18.16.3): the truncation */
	if (flags & NFS4C_PNFS_TRUNC)
		o.attrs.set |= NFS4C_SA_SIZE;
	nfs4c_bitmap_set(&bm, FATTR4_SIZE);
	backoff_init(p, &b);
	nfs4c_compound_init(&c, p->cl);
	for (;;) {
		nfs4c_compound_reset(&c);
		nfs4c_op_putfh(&c, dir);
		nfs4c_op_open(&c, &o);
		nfs4c_op_getfh(&c);
		nfs4c_op_getattr(&c, &bm);
		ret = nfs4c_send(&c);
		if (!ret)
			ret = c.status;
		if (!busy_status(ret) || !backoff_wait(&b))
			break;
	}
	if (ret)
		goto out;
	struct nfs4c_pnfs_file *f = xcalloc(1, sizeof(*f));
	f->p = p;
	f->refs = 1;
	f->open_sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	mutex_init(&f->lock, &file_class);
	cond_init(&f->cv);
	nfs4c_blk_map_init(&f->map);
	ret = nfs4c_res_fh(&c, &f->fh);
	if (!ret)
		ret = nfs4c_res_attr(&c, &attr);
	if (ret) {
		file_put(f);
		goto out;
	}
	f->size = attr.size;
	mutex_lock(&p->lock);
	list_add_tail(&f->link, &p->files);
	f->listed = true;
	mutex_unlock(&p->lock);
	*out = f;
out:
	nfs4c_compound_destroy(&c);
	return ret;
}

/* ---- LAYOUTGET ---------------------------------------------------------- */

/* The server no longer knows the file's layout stateid: forget its
 * extents. -EIO when blocks written since the last LAYOUTCOMMIT went with
 * it (they cannot be committed any more: the write is lost, and said so),
 * else 0. */
static int layout_forget(struct nfs4c_pnfs_file *f)
{
	struct nfs4c_blk_ext one;
	unsigned n;
	bool more;
	mutex_lock(&f->lock);
	nfs4c_blk_map_pending(&f->map, &one, 1, &n, &more);
	bool lost = n || f->written;
	f->have_lsid = false;
	f->written = false;
	nfs4c_blk_map_remove(&f->map, LAYOUTIOMODE4_ANY, 0, UINT64_MAX);
	mutex_unlock(&f->lock);
	if (lost)
		note(f->p, "the server no longer knows a layout with blocks written and not "
			   "committed: those writes are lost");
	return lost ? -EIO : 0;
}

/* Take what a LAYOUTGET gave (f->lg_busy is ours): the stateid, the
 * extents; -EPROTO when they still do not map off for iomode. */
static int layout_take(struct nfs4c_pnfs_file *f, const struct LAYOUTGET4resok *ok,
		       layoutiomode4 iomode, uint64_t off)
{
	struct nfs4c_pnfs *p = f->p;
	unsigned cap = PNFS_BLOCK_LIMIT_pnfs_block_layout4_blo_extents;
	struct nfs4c_blk_ext *e = xcalloc(cap, sizeof(*e));
	int err = 0;

	mutex_lock(&f->lock);
	bool other = f->have_lsid && memcmp(f->lsid.other, ok->logr_stateid.other, NFS4_OTHER_SIZE);
	mutex_unlock(&f->lock);
	/* another layout stateid: the layouts of the one before are gone */
	if (other && (err = layout_forget(f))) {
		free(e);
		return err;
	}
	mutex_lock(&f->lock);
	if (!f->have_lsid || seqid_after(ok->logr_stateid.seqid, f->lsid.seqid)) {
		f->lsid = ok->logr_stateid;
		f->have_lsid = true;
	}
	mutex_unlock(&f->lock);
	for (uint32_t i = 0; !err && i < ok->logr_layout.len; i++) {
		const struct layout4 *lo = &ok->logr_layout.val[i];
		unsigned n;
		if (lo->lo_content.loc_type != LAYOUT4_BLOCK_VOLUME) {
			err = -EPROTO;
			break;
		}
		err = nfs4c_blk_layout_decode(lo->lo_content.loc_body.val,
					      lo->lo_content.loc_body.len, lo->lo_iomode, p->bs, e,
					      cap, &n);
		if (!err) {
			mutex_lock(&f->lock);
			err = nfs4c_blk_map_add(&f->map, e, n);
			mutex_unlock(&f->lock);
		}
	}
	free(e);
	if (err)
		return err;
	mutex_lock(&f->lock);
	bool mapped = nfs4c_blk_map_covers(&f->map, iomode == LAYOUTIOMODE4_RW, off, p->bs);
	mutex_unlock(&f->lock);
	return mapped ? 0 : -EPROTO;
}

/* One LAYOUTGET of the file at a time (invariant 4): when another
 * thread's is in flight, wait for it and return 0 without sending, for
 * the caller to plan again with what it got (another thread's LAYOUTGET
 * ahead of a stream's writers, or of the same range for the file's other
 * I/O, saves this one). */
static int layoutget(struct nfs4c_pnfs_file *f, layoutiomode4 iomode, uint64_t off, uint64_t len)
{
	struct nfs4c_pnfs *p = f->p;
	struct nfs4c_compound c;
	struct backoff b;
	int ret;

	mutex_lock(&f->lock);
	bool waited = f->lg_busy;
	while (f->lg_busy)
		cond_wait(&f->cv, &f->lock);
	if (!waited)
		f->lg_busy = true;
	mutex_unlock(&f->lock);
	if (waited) {
		count(p, &p->st.layoutget_waits, 1);
		return 0;
	}
	uint64_t t0 = now_ns();

	backoff_init(p, &b);
	nfs4c_compound_init(&c, p->cl);
	for (;;) {
		mutex_lock(&f->lock);
		bool used_lsid = f->have_lsid;
		struct stateid4 sid = used_lsid ? f->lsid : f->open_sid;
		mutex_unlock(&f->lock);
		nfs4c_compound_reset(&c);
		nfs4c_op_putfh(&c, &f->fh);
		nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, iomode, off, len, p->bs, &sid,
				   LAYOUT_MAX);
		ret = nfs4c_send(&c);
		if (ret)
			break;
		ret = c.status;
		count(p, &p->st.layoutgets, 1);
		if (ret == NFS4_OK) {
			const struct nfs_resop4 *r = nfs4c_res(&c, OP_LAYOUTGET, 0);
			ret = r ? layout_take(f, &r->oplayoutget.logr_resok4, iomode, off)
				: -EBADMSG;
			break;
		}
		if (busy_status(ret)) {
			count(p, &p->st.layoutget_retries, 1);
			if (backoff_wait(&b))
				continue;
			break;
		}
		if ((ret == NFS4ERR_BAD_STATEID || ret == NFS4ERR_OLD_STATEID) && used_lsid) {
			/* the server no longer has that layout state (returned
			 * or revoked), or moved it on without this client
			 * knowing: forget it and start again from the open
			 * stateid, unless written blocks went with it */
			if ((ret = layout_forget(f)))
				break;
			continue;
		}
		break;
	}
	nfs4c_compound_destroy(&c);
	mutex_lock(&p->lock);
	p->st.layoutget_ns += now_ns() - t0;
	p->st.layoutget_bytes += len;
	mutex_unlock(&p->lock);

	mutex_lock(&f->lock);
	f->lg_busy = false;
	cond_broadcast(&f->cv);
	mutex_unlock(&f->lock);
	return ret;
}

int nfs4c_pnfs_layoutget(struct nfs4c_pnfs_file *f, layoutiomode4 iomode, uint64_t off,
			 uint64_t len)
{
	uint32_t bs = f->p->bs;
	if (!len || off + len < off)
		return -EINVAL;
	uint64_t a = ALIGN_DOWN(off, (uint64_t)bs), end = ALIGN_UP(off + len, (uint64_t)bs);
	while (a < end) {
		mutex_lock(&f->lock);
		struct nfs4c_blk_piece pc;
		nfs4c_blk_map_plan(&f->map, iomode == LAYOUTIOMODE4_RW, a, end - a, &pc);
		mutex_unlock(&f->lock);
		bool need = pc.how == NFS4C_BLK_UNMAPPED ||
			    (iomode == LAYOUTIOMODE4_RW &&
			     (pc.how == NFS4C_BLK_READONLY || pc.how == NFS4C_BLK_HOLE));
		if (need) {
			int ret = layoutget(f, iomode, a, end - a);
			if (ret)
				return ret;
			continue;
		}
		a += pc.len;
	}
	return 0;
}

/* ---- I/O ------------------------------------------------------------------ */

/* Plan the piece of [off, end) at ALIGN_DOWN(off), getting layouts as
 * needed, and count it as I/O in flight (invariant 2). */
static int io_begin(struct nfs4c_pnfs_file *f, bool wr, uint64_t off, uint64_t end,
		    struct nfs4c_blk_piece *pc)
{
	uint32_t bs = f->p->bs;
	uint64_t a = ALIGN_DOWN(off, (uint64_t)bs), b = ALIGN_UP(end, (uint64_t)bs);
	for (;;) {
		mutex_lock(&f->lock);
		while (f->recalling)
			cond_wait(&f->cv, &f->lock);
		nfs4c_blk_map_plan(&f->map, wr, a, b - a, pc);
		bool ready = pc->how == NFS4C_BLK_DEV || pc->how == NFS4C_BLK_ZERO;
		if (ready)
			f->io_busy++;
		mutex_unlock(&f->lock);
		if (ready)
			return 0;
		if (pc->how == NFS4C_BLK_HOLE)
			return -EIO; /* an RW layout that gives no storage to write */
		/* RW: the blocks this write needs (the server allocates what
		 * it maps); READ: up to the end of the file, which costs the
		 * server nothing and saves the next reads a LAYOUTGET */
		uint64_t want = b - a;
		if (!wr) {
			uint64_t eof = ALIGN_UP(nfs4c_pnfs_size(f), (uint64_t)bs);
			want = MAX(want, eof > a ? eof - a : 0);
		}
		int ret = layoutget(f, wr ? LAYOUTIOMODE4_RW : LAYOUTIOMODE4_READ, a, want);
		if (ret)
			return ret;
	}
}

static int io_end(struct nfs4c_pnfs_file *f, bool wr, const struct nfs4c_blk_piece *pc, uint64_t a,
		  uint64_t b, uint64_t uend, int err)
{
	mutex_lock(&f->lock);
	if (!err && wr && pc->fill)
		err = nfs4c_blk_map_mark_written(&f->map, a, b - a);
	if (!err && wr) {
		f->wr_lo = f->written ? MIN(f->wr_lo, a) : a;
		f->wr_hi = f->written ? MAX(f->wr_hi, b) : b;
		f->last_end = f->written ? MAX(f->last_end, uend) : uend;
		f->written = true;
		f->wr_gen++;
	}
	if (--f->io_busy == 0)
		cond_broadcast(&f->cv);
	mutex_unlock(&f->lock);
	return err;
}

/* One disk I/O of a read or write at off (of a request ending at end) in
 * the piece pc: the bytes [off, *uend) of the caller's buffer, in the
 * whole blocks [*a, *b) around them; at most IO_CHUNK, and then *uend is
 * cut to *b, a block boundary, so that the next I/O starts aligned. */
static void io_window(uint32_t bs, uint64_t off, uint64_t end, const struct nfs4c_blk_piece *pc,
		      uint64_t *a, uint64_t *b, uint64_t *uend)
{
	*uend = MIN(end, pc->foff + pc->len);
	*a = ALIGN_DOWN(off, (uint64_t)bs);
	*b = ALIGN_UP(*uend, (uint64_t)bs);
	if (*b - *a > IO_CHUNK) {
		*b = *a + IO_CHUNK;
		*uend = *b;
	}
}

/* Block blk of the piece as it is before the write: for the rest of a
 * block the write covers only in part. */
static int fill_block(struct nfs4c_pnfs *p, const struct nfs4c_blk_piece *pc, uint64_t blk,
		      uint8_t *dst)
{
	if (!pc->fill)
		return dev_io(p, pc->devid, pc->soff + (blk - pc->foff), dst, p->bs, false);
	if (pc->cow)
		return dev_io(p, pc->cow_devid, pc->cow_soff + (blk - pc->foff), dst, p->bs, false);
	memset(dst, 0, p->bs); /* INVALID_DATA reads as zeros (RFC 5663 2.3.1) */
	return 0;
}

/* The caller's bytes at src can go to or from the disk as they are:
 * whole blocks [off, uend), src aligned for O_DIRECT. */
static bool io_direct(uint64_t off, uint64_t a, uint64_t b, uint64_t uend, const void *src)
{
	return off == a && uend == b && (uintptr_t)src % DIO_ALIGN == 0;
}

int nfs4c_pnfs_write(struct nfs4c_pnfs_file *f, uint64_t off, const void *buf, size_t len)
{
	struct nfs4c_pnfs *p = f->p;
	uint32_t bs = p->bs;
	uint64_t end = off + len, off0 = off;
	if (end < off || end > INT64_MAX)
		return -EFBIG;
	uint8_t *bb = NULL; /* the bounce buffer, once needed */
	int err = 0;
	while (!err && off < end) {
		struct nfs4c_blk_piece pc;
		err = io_begin(f, true, off, end, &pc);
		if (err)
			break;
		uint64_t a, b, uend;
		io_window(bs, off, end, &pc, &a, &b, &uend);
		const uint8_t *src = (const uint8_t *)buf + (off - off0);
		if (io_direct(off, a, b, uend, src)) {
			/* pwrite only reads the buffer */
			err = dev_io(p, pc.devid, pc.soff + (a - pc.foff), (void *)src, b - a,
				     true);
			err = io_end(f, true, &pc, a, b, uend, err);
			off = uend;
			continue;
		}
		if (!bb)
			bb = xmalloc_aligned(DIO_ALIGN, IO_CHUNK);
		if (off > a)
			err = fill_block(p, &pc, a, bb);
		if (!err && uend < b && (b - bs > a || off == a))
			err = fill_block(p, &pc, b - bs, bb + (b - bs - a));
		if (!err) {
			memcpy(bb + (off - a), src, uend - off);
			err = dev_io(p, pc.devid, pc.soff + (a - pc.foff), bb, b - a, true);
		}
		err = io_end(f, true, &pc, a, b, uend, err);
		off = uend;
	}
	free(bb);
	return err;
}

int nfs4c_pnfs_read(struct nfs4c_pnfs_file *f, uint64_t off, void *buf, size_t len, size_t *got)
{
	struct nfs4c_pnfs *p = f->p;
	uint32_t bs = p->bs;
	*got = 0;
	uint64_t size = nfs4c_pnfs_size(f);
	if (off >= size || !len)
		return 0;
	uint64_t end = off + MIN((uint64_t)len, size - off), off0 = off;
	uint8_t *bb = NULL; /* the bounce buffer, once needed */
	int err = 0;
	while (!err && off < end) {
		struct nfs4c_blk_piece pc;
		err = io_begin(f, false, off, end, &pc);
		if (err)
			break;
		uint64_t a, b, uend;
		io_window(bs, off, end, &pc, &a, &b, &uend);
		uint8_t *dst = (uint8_t *)buf + (off - off0);
		if (pc.how == NFS4C_BLK_ZERO) {
			memset(dst, 0, uend - off);
			count(p, &p->st.zero_bytes, uend - off);
		} else if (io_direct(off, a, b, uend, dst)) {
			err = dev_io(p, pc.devid, pc.soff + (a - pc.foff), dst, b - a, false);
		} else {
			if (!bb)
				bb = xmalloc_aligned(DIO_ALIGN, IO_CHUNK);
			err = dev_io(p, pc.devid, pc.soff + (a - pc.foff), bb, b - a, false);
			if (!err)
				memcpy(dst, bb + (off - a), uend - off);
		}
		err = io_end(f, false, &pc, a, b, uend, err);
		if (!err)
			*got += uend - off;
		off = uend;
	}
	free(bb);
	return err;
}

/* ---- streams --------------------------------------------------------------- */

#define STREAM_DEPTH  8u
#define STREAM_IO_MAX (64u << 20)
#define STREAM_AHEAD  (64ull << 20)

enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_BUSY, SLOT_DONE };

struct stream_slot {
	uint8_t *buf; /* aligned, s->io bytes */
	uint64_t off;
	size_t len, got;
	enum slot_state state;
};

struct nfs4c_pnfs_stream {
	struct nfs4c_pnfs_file *f;
	bool wr;
	size_t io;
	unsigned depth, nslot; /* threads; slots (one more: the caller's) */
	struct stream_slot *slot;
	void *mem; /* the slots' buffers, one mapping of mem_len bytes */
	size_t mem_len;
	pthread_t *thr;
	unsigned nthr;
	pthread_t ahead_thr;
	bool have_ahead;
	uint64_t ahead;

	/* under f->lock */
	struct cond cv;
	uint64_t fill_off;   /* write: where the slot being filled starts */
	uint64_t pos;	     /* write: where its bytes end; read: the next offset to queue */
	uint64_t end;	     /* write: the hint (0: none); read: where reading stops */
	uint64_t nsub, nrun; /* slots queued, taken by a worker (both in order) */
	uint64_t ncons;	     /* read: slots consumed by the caller */
	bool held;	     /* read: slot ncons is the caller's */
	unsigned inflight;   /* QUEUED or BUSY */
	uint64_t lg_have;    /* write: layouts got ahead up to here */
	int err;	     /* the first error */
	bool stop;
};

/* The slot being filled (write) or consumed (read). Its off and len are
 * the caller's while FREE or DONE, a worker's while QUEUED or BUSY. */
static struct stream_slot *stream_cur(struct nfs4c_pnfs_stream *s)
{
	return &s->slot[(s->wr ? s->nsub : s->ncons) % s->nslot];
}

static void *stream_worker(void *arg)
{
	struct nfs4c_pnfs_stream *s = arg;
	struct nfs4c_pnfs_file *f = s->f;
	mutex_lock(&f->lock);
	for (;;) {
		while (!s->stop && s->nrun == s->nsub)
			cond_wait(&s->cv, &f->lock);
		if (s->nrun == s->nsub)
			break;
		struct stream_slot *sl = &s->slot[s->nrun++ % s->nslot];
		sl->state = SLOT_BUSY;
		/* after an error (or a read stream's end) nothing new starts */
		bool skip = s->err || (!s->wr && s->stop);
		mutex_unlock(&f->lock);
		int err = 0;
		sl->got = 0;
		if (!skip && s->wr)
			err = nfs4c_pnfs_write(f, sl->off, sl->buf, sl->len);
		else if (!skip)
			err = nfs4c_pnfs_read(f, sl->off, sl->buf, sl->len, &sl->got);
		mutex_lock(&f->lock);
		if (err && !s->err)
			s->err = err;
		sl->state = SLOT_DONE;
		s->inflight--;
		cond_broadcast(&s->cv);
	}
	mutex_unlock(&f->lock);
	return NULL;
}

/* Write streams that know their end: RW layouts ahead of the writers. A
 * return pending stops it until done (the recalled range is not asked for
 * again while it goes back); an error stops it for good, the writer that
 * reaches the range gets again and reports. */
static void *stream_ahead(void *arg)
{
	struct nfs4c_pnfs_stream *s = arg;
	struct nfs4c_pnfs_file *f = s->f;
	uint64_t step = ALIGN_UP(s->ahead / 2, (uint64_t)f->p->bs);
	mutex_lock(&f->lock);
	for (;;) {
		uint64_t want = MIN(s->pos + s->ahead, s->end);
		while (!s->stop && !s->err && (s->lg_have >= want || f->recalling)) {
			/* woken by the writer (s->cv) or a return done (f->cv):
			 * both are broadcast under f->lock, so wait on each in
			 * turn */
			if (f->recalling)
				cond_wait(&f->cv, &f->lock);
			else
				cond_wait(&s->cv, &f->lock);
			want = MIN(s->pos + s->ahead, s->end);
		}
		if (s->stop || s->err)
			break;
		uint64_t from = s->lg_have, to = MIN(MAX(want, from + step), s->end);
		mutex_unlock(&f->lock);
		int err = nfs4c_pnfs_layoutget(f, LAYOUTIOMODE4_RW, from, to - from);
		mutex_lock(&f->lock);
		if (err)
			break;
		s->lg_have = to;
	}
	mutex_unlock(&f->lock);
	return NULL;
}

/*
 * The slots' buffers: one anonymous mapping on a huge page boundary,
 * asked to be backed by transparent huge pages, and touched now. A fault
 * of a 4 KiB page costs tens of microseconds on some virtual machines
 * (2,304 of them for 9 slots of 1 MiB: more than a 1 GiB read's own CPU),
 * and O_DIRECT pins every page of an I/O's buffer again for each I/O: one
 * huge page is one fault and one entry to pin instead of 512. Without
 * transparent huge pages (or with MADV_HUGEPAGE refused) it is a mapping
 * of 4 KiB pages touched now, as before.
 */
#define STREAM_HUGE (2u << 20)

static int stream_mem(struct nfs4c_pnfs_stream *s, size_t len)
{
	size_t map = len + STREAM_HUGE;
	uint8_t *m = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	/* keep [a, a + len), a on a huge page boundary; unmap the rest */
	uint8_t *a = (uint8_t *)ALIGN_UP((uintptr_t)m, (uintptr_t)STREAM_HUGE);
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (map - (size_t)(a - m) > len)
		munmap(a + len, map - (size_t)(a - m) - len);
	(void)madvise(a, len, MADV_HUGEPAGE); /* advice: 4 KiB pages still work */
	memset(a, 0, len);		      /* touched now, not in the stream */
	s->mem = a;
	s->mem_len = len;
	return 0;
}

int nfs4c_pnfs_stream_open(struct nfs4c_pnfs_file *f, bool wr, uint64_t off,
			   const struct nfs4c_pnfs_stream_cfg *cfg, struct nfs4c_pnfs_stream **out)
{
	uint32_t bs = f->p->bs;
	unsigned depth = cfg->depth ? cfg->depth : STREAM_DEPTH;
	size_t io = cfg->io ? cfg->io : IO_CHUNK;
	if (depth > NFS4C_PNFS_DEPTH_MAX || io > STREAM_IO_MAX || off > INT64_MAX)
		return -EINVAL;
	struct nfs4c_pnfs_stream *s = xcalloc(1, sizeof(*s));
	s->f = f;
	s->wr = wr;
	s->io = ALIGN_UP(io, (size_t)bs);
	s->depth = depth;
	s->nslot = depth + 1;
	s->ahead = ALIGN_UP(cfg->ahead ? cfg->ahead : STREAM_AHEAD, (uint64_t)bs);
	s->slot = xcalloc(s->nslot, sizeof(*s->slot));
	cond_init(&s->cv);
	s->thr = xcalloc(depth, sizeof(*s->thr));
	int err = stream_mem(s, s->nslot * s->io);
	if (err) {
		s->wr = false;
		nfs4c_pnfs_stream_close(s);
		return err;
	}
	for (unsigned i = 0; i < s->nslot; i++)
		s->slot[i].buf = (uint8_t *)s->mem + i * s->io;
	s->pos = off;
	s->end = wr ? cfg->end : (cfg->end ? cfg->end : nfs4c_pnfs_size(f));
	s->fill_off = off;
	s->lg_have = ALIGN_DOWN(off, (uint64_t)bs);
	for (; s->nthr < depth; s->nthr++)
		if ((err = -pthread_create(&s->thr[s->nthr], NULL, stream_worker, s)))
			break;
	if (!err && wr && s->end > off) {
		err = -pthread_create(&s->ahead_thr, NULL, stream_ahead, s);
		s->have_ahead = !err;
	}
	if (err) {
		s->wr = false; /* nothing was queued: nothing to flush */
		nfs4c_pnfs_stream_close(s);
		return err;
	}
	*out = s;
	return 0;
}

/* Queue the slot being filled (f->lock held): its bytes end at s->pos. */
static void stream_queue(struct nfs4c_pnfs_stream *s)
{
	struct stream_slot *sl = stream_cur(s);
	sl->off = s->fill_off;
	sl->len = (size_t)(s->pos - s->fill_off);
	sl->state = SLOT_QUEUED;
	s->inflight++;
	s->nsub++;
	s->fill_off = s->pos;
	cond_broadcast(&s->cv);
}

int nfs4c_pnfs_stream_buf(struct nfs4c_pnfs_stream *s, void **buf, size_t *room)
{
	struct nfs4c_pnfs_file *f = s->f;
	mutex_lock(&f->lock);
	struct stream_slot *sl = stream_cur(s);
	while (!s->err && (sl->state == SLOT_QUEUED || sl->state == SLOT_BUSY))
		cond_wait(&s->cv, &f->lock);
	int err = s->err;
	if (!err) {
		sl->state = SLOT_FREE;
		/* a slot ends where io-sized slots from 0 would: on a block */
		uint64_t lim = ALIGN_DOWN(s->fill_off, (uint64_t)s->io) + s->io;
		*buf = sl->buf + (s->pos - s->fill_off);
		*room = (size_t)(lim - s->pos);
	}
	mutex_unlock(&f->lock);
	return err;
}

void nfs4c_pnfs_stream_submit(struct nfs4c_pnfs_stream *s, size_t n)
{
	struct nfs4c_pnfs_file *f = s->f;
	mutex_lock(&f->lock);
	s->pos += n;
	if (s->pos == ALIGN_DOWN(s->fill_off, (uint64_t)s->io) + s->io)
		stream_queue(s);
	mutex_unlock(&f->lock);
}

int nfs4c_pnfs_stream_write(struct nfs4c_pnfs_stream *s, const void *buf, size_t len)
{
	while (len) {
		void *dst;
		size_t room;
		int err = nfs4c_pnfs_stream_buf(s, &dst, &room);
		if (err)
			return err;
		size_t n = MIN(room, len);
		memcpy(dst, buf, n);
		nfs4c_pnfs_stream_submit(s, n);
		buf = (const uint8_t *)buf + n;
		len -= n;
	}
	return 0;
}

int nfs4c_pnfs_stream_next(struct nfs4c_pnfs_stream *s, const void **data, size_t *len)
{
	struct nfs4c_pnfs_file *f = s->f;
	*len = 0;
	mutex_lock(&f->lock);
	if (s->held) {
		stream_cur(s)->state = SLOT_FREE;
		s->ncons++;
		s->held = false;
	}
	/* read ahead: every free slot */
	while (!s->err && s->nsub - s->ncons < s->nslot && s->pos < s->end) {
		struct stream_slot *sl = &s->slot[s->nsub % s->nslot];
		sl->off = s->pos;
		sl->len = (size_t)MIN((uint64_t)s->io - s->pos % s->io, s->end - s->pos);
		sl->state = SLOT_QUEUED;
		s->pos += sl->len;
		s->inflight++;
		s->nsub++;
		cond_broadcast(&s->cv);
	}
	struct stream_slot *sl = stream_cur(s);
	while (!s->err && s->ncons < s->nsub && sl->state != SLOT_DONE)
		cond_wait(&s->cv, &f->lock);
	int err = s->err;
	if (!err && s->ncons < s->nsub) {
		s->held = true;
		if (sl->off < s->end) {
			*data = sl->buf;
			*len = sl->got;
		}
		if (sl->got < sl->len)
			s->end = MIN(s->end, sl->off + sl->got); /* the file ends here */
	}
	mutex_unlock(&f->lock);
	return err;
}

int nfs4c_pnfs_stream_close(struct nfs4c_pnfs_stream *s)
{
	struct nfs4c_pnfs_file *f = s->f;
	mutex_lock(&f->lock);
	if (s->wr && s->pos > s->fill_off && !s->err)
		stream_queue(s); /* the last slot, in part */
	s->stop = !s->wr;	 /* a read stream's queued slots need not run */
	cond_broadcast(&s->cv);
	while (s->inflight)
		cond_wait(&s->cv, &f->lock);
	s->stop = true;
	cond_broadcast(&s->cv);
	cond_broadcast(&f->cv); /* the layout thread, if it waits for a return */
	int err = s->err;
	mutex_unlock(&f->lock);
	for (unsigned i = 0; i < s->nthr; i++)
		pthread_join(s->thr[i], NULL);
	if (s->have_ahead)
		pthread_join(s->ahead_thr, NULL);
	if (s->mem)
		munmap(s->mem, s->mem_len);
	free(s->slot);
	free(s->thr);
	cond_destroy(&s->cv);
	free(s);
	return err;
}

/* ---- LAYOUTCOMMIT, LAYOUTRETURN -------------------------------------------- */

/* Send one LAYOUTCOMMIT (retrying busy answers). */
static int commit_send(struct nfs4c_pnfs_file *f, const struct nfs4c_layoutcommit *lc,
		       struct newsize4 *ns)
{
	struct nfs4c_pnfs *p = f->p;
	struct nfs4c_compound c;
	struct backoff b;
	int ret;

	backoff_init(p, &b);
	nfs4c_compound_init(&c, p->cl);
	for (;;) {
		nfs4c_compound_reset(&c);
		nfs4c_op_putfh(&c, &f->fh);
		nfs4c_op_layoutcommit(&c, lc);
		ret = nfs4c_send(&c);
		if (!ret)
			ret = c.status;
		if (!busy_status(ret) || !backoff_wait(&b))
			break;
	}
	count(p, &p->st.layoutcommits, 1);
	const struct nfs_resop4 *r = ret ? NULL : nfs4c_res(&c, OP_LAYOUTCOMMIT, 0);
	if (!ret && !r)
		ret = -EBADMSG;
	if (!ret)
		*ns = r->oplayoutcommit.locr_resok4.locr_newsize;
	nfs4c_compound_destroy(&c);
	return ret;
}

/* One LAYOUTCOMMIT of at most COMMIT_MAX pending extents (commit_busy is
 * ours). *more: extents were left for another. */
static int commit_one(struct nfs4c_pnfs_file *f, struct nfs4c_pnfs_commit_res *res, bool *more)
{
	struct nfs4c_blk_ext *e = xcalloc(COMMIT_MAX, sizeof(*e));
	struct nfs4c_layoutcommit lc = {.have_mtime = true, .type = LAYOUT4_BLOCK_VOLUME};
	struct newsize4 ns = {0};
	struct xdr_enc x;
	uint8_t *body = NULL;
	unsigned n;
	int ret = 0;

	mutex_lock(&f->lock);
	nfs4c_blk_map_pending(&f->map, e, COMMIT_MAX, &n, more);
	bool have = f->have_lsid, written = f->written;
	uint64_t lo = f->wr_lo, hi = f->wr_hi, last_end = f->last_end, gen = f->wr_gen;
	lc.stateid = f->lsid;
	mutex_unlock(&f->lock);
	if (!written && !n)
		goto out; /* nothing written since the last commit */
	if (!have) {
		/* written, but the layout is gone: invariant 3 says this
		 * cannot happen, unless the server revoked the layout */
		ret = -ENOLCK;
		goto out;
	}
	/* the range: what was written, and every extent of the update */
	for (unsigned i = 0; i < n; i++) {
		bool first = !written && i == 0;
		lo = first ? e[i].foff : MIN(lo, e[i].foff);
		hi = first ? e[i].foff + e[i].len : MAX(hi, e[i].foff + e[i].len);
	}
	lc.off = lo;
	lc.len = hi - lo;
	lc.have_last_write = written;
	lc.last_write = written ? last_end - 1 : 0;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	lc.mtime.seconds = now.tv_sec;
	lc.mtime.nseconds = (uint32_t)now.tv_nsec;

	xdr_enc_init(&x, 1u << 20);
	ret = nfs4c_blk_update_encode(&x, e, n);
	if (!ret) {
		body = xmalloc(xdr_enc_len(&x));
		xdr_enc_flatten(&x, body);
		lc.body = body;
		lc.body_len = (uint32_t)xdr_enc_len(&x);
	}
	xdr_enc_destroy(&x);
	if (!ret)
		ret = commit_send(f, &lc, &ns);
	if (res) {
		res->commits++;
		res->extents += n;
		if (!ret && ns.ns_sizechanged) {
			res->size_changed = true;
			res->new_size = ns.ns_size;
		}
	}
	if (ret)
		goto out;
	mutex_lock(&f->lock);
	nfs4c_blk_map_committed(&f->map, e, n);
	if (ns.ns_sizechanged)
		f->size = ns.ns_size;
	else if (written && last_end > f->size)
		f->size = last_end;
	if (f->wr_gen == gen)
		f->written = false; /* nothing written meanwhile */
	mutex_unlock(&f->lock);
out:
	free(body);
	free(e);
	return ret;
}

int nfs4c_pnfs_commit(struct nfs4c_pnfs_file *f, struct nfs4c_pnfs_commit_res *res)
{
	bool more = true;
	int ret = 0;
	if (res)
		memset(res, 0, sizeof(*res));
	mutex_lock(&f->lock);
	while (f->commit_busy)
		cond_wait(&f->cv, &f->lock);
	f->commit_busy = true;
	mutex_unlock(&f->lock);
	while (!ret && more)
		ret = commit_one(f, res, &more);
	mutex_lock(&f->lock);
	f->commit_busy = false;
	cond_broadcast(&f->cv);
	mutex_unlock(&f->lock);
	return ret;
}

static void wait_io_done(struct nfs4c_pnfs_file *f)
{
	mutex_lock(&f->lock);
	while (f->io_busy)
		cond_wait(&f->cv, &f->lock);
	mutex_unlock(&f->lock);
}

/* LAYOUTRETURN of the file's [off, off + len) of iomode, then forget
 * those extents (whatever the answer: the layout is not ours to use). */
static int return_range(struct nfs4c_pnfs_file *f, layoutiomode4 iomode, uint64_t off, uint64_t len)
{
	struct nfs4c_pnfs *p = f->p;
	struct nfs4c_compound c;
	struct backoff b;
	int ret;

	mutex_lock(&f->lock);
	bool have = f->have_lsid;
	struct stateid4 sid = f->lsid;
	mutex_unlock(&f->lock);
	if (!have)
		return 0;
	backoff_init(p, &b);
	nfs4c_compound_init(&c, p->cl);
	for (;;) {
		nfs4c_compound_reset(&c);
		nfs4c_op_putfh(&c, &f->fh);
		nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, iomode, LAYOUTRETURN4_FILE, off,
				      len, &sid);
		ret = nfs4c_send(&c);
		if (!ret)
			ret = c.status;
		if (!busy_status(ret) || !backoff_wait(&b))
			break;
	}
	count(p, &p->st.layoutreturns, 1);
	const struct nfs_resop4 *r = ret ? NULL : nfs4c_res(&c, OP_LAYOUTRETURN, 0);
	mutex_lock(&f->lock);
	if (r && r->oplayoutreturn.lorr_stateid.lrs_present) {
		f->lsid = r->oplayoutreturn.lorr_stateid.lrs_stateid;
	} else if (r || ret == NFS4ERR_BAD_STATEID) {
		/* nothing left (RFC 8881 18.44.3), or the server lost it */
		f->have_lsid = false;
		off = 0;
		len = UINT64_MAX;
		iomode = LAYOUTIOMODE4_ANY;
	}
	nfs4c_blk_map_remove(&f->map, iomode, off, len);
	mutex_unlock(&f->lock);
	nfs4c_compound_destroy(&c);
	return ret;
}

int nfs4c_pnfs_return(struct nfs4c_pnfs_file *f, layoutiomode4 iomode)
{
	int ret = nfs4c_pnfs_commit(f, NULL);
	wait_io_done(f);
	int ret2 = return_range(f, iomode, 0, NFS4_UINT64_MAX);
	return ret ? ret : ret2;
}

int nfs4c_pnfs_close(struct nfs4c_pnfs_file *f)
{
	struct nfs4c_pnfs *p = f->p;
	struct nfs4c_compound c;
	struct backoff b;
	int ret = nfs4c_pnfs_commit(f, NULL), ret2 = 0;

	if (!p->cfg.hold)
		ret2 = return_range(f, LAYOUTIOMODE4_ANY, 0, NFS4_UINT64_MAX);
	ret = ret ? ret : ret2;
	backoff_init(p, &b);
	nfs4c_compound_init(&c, p->cl);
	for (;;) {
		nfs4c_compound_reset(&c);
		nfs4c_op_putfh(&c, &f->fh);
		nfs4c_op_close(&c, &f->open_sid);
		ret2 = nfs4c_send(&c);
		if (!ret2)
			ret2 = c.status;
		if (!busy_status(ret2) || !backoff_wait(&b))
			break;
	}
	nfs4c_compound_destroy(&c);
	ret = ret ? ret : ret2;
	mutex_lock(&p->lock);
	if (f->listed)
		list_del(&f->link);
	f->listed = false;
	mutex_unlock(&p->lock);
	file_put(f);
	return ret;
}

/* ---- recalls ---------------------------------------------------------------- */

static void job_free(struct ret_job *j)
{
	if (j->f)
		file_put(j->f);
	for (unsigned i = 0; i < j->nfiles; i++)
		file_put(j->files[i]);
	free(j->files);
	free(j);
}

static void recall_done(struct nfs4c_pnfs_file *f)
{
	mutex_lock(&f->lock);
	f->recalling--;
	cond_broadcast(&f->cv);
	mutex_unlock(&f->lock);
}

/* A recalled file range: its I/O drains, what it wrote is committed
 * (invariant 3), then the range goes back. */
static void return_file_job(struct nfs4c_pnfs *p, struct ret_job *j)
{
	struct nfs4c_pnfs_file *f = j->f;
	wait_io_done(f);
	int ret = nfs4c_pnfs_commit(f, NULL);
	if (ret)
		note(p, "recall: LAYOUTCOMMIT before the return failed: %d", ret);
	ret = return_range(f, j->iomode, j->off, j->len);
	count(p, &p->st.recalls_returned, 1);
	note(p, "recall: layout returned (%s)", ret ? "the server refused the return" : "ok");
	recall_done(f);
}

/* FSID, ALL, CB_RECALL_ANY: every file's I/O drains and its writes are
 * committed, then one LAYOUTRETURN of that kind gives back the rest. */
static void return_all_job(struct nfs4c_pnfs *p, struct ret_job *j)
{
	for (unsigned i = 0; i < j->nfiles; i++) {
		wait_io_done(j->files[i]);
		int ret = nfs4c_pnfs_commit(j->files[i], NULL);
		if (ret)
			note(p, "recall: LAYOUTCOMMIT before the return failed: %d", ret);
	}
	for (unsigned i = 0; i < j->nfiles; i++) {
		struct nfs4c_pnfs_file *f = j->files[i];
		mutex_lock(&f->lock);
		f->have_lsid = false;
		nfs4c_blk_map_remove(&f->map, LAYOUTIOMODE4_ANY, 0, UINT64_MAX);
		mutex_unlock(&f->lock);
	}
	struct nfs4c_compound c;
	struct backoff b;
	int ret;
	backoff_init(p, &b);
	nfs4c_compound_init(&c, p->cl);
	for (;;) {
		nfs4c_compound_reset(&c);
		/* FSID names the current file's filesystem */
		if (j->nfiles)
			nfs4c_op_putfh(&c, &j->files[0]->fh);
		else
			nfs4c_op_putrootfh(&c);
		nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, j->iomode,
				      j->kind == LAYOUTRECALL4_FSID ? LAYOUTRETURN4_FSID
								    : LAYOUTRETURN4_ALL,
				      0, 0, NULL);
		ret = nfs4c_send(&c);
		if (!ret)
			ret = c.status;
		if (!busy_status(ret) || !backoff_wait(&b))
			break;
	}
	nfs4c_compound_destroy(&c);
	count(p, &p->st.layoutreturns, 1);
	count(p, &p->st.recalls_returned, 1);
	note(p, "recall: every layout returned (%s)", ret ? "the server refused the return" : "ok");
	for (unsigned i = 0; i < j->nfiles; i++)
		recall_done(j->files[i]);
}

static void *ret_main(void *arg)
{
	struct nfs4c_pnfs *p = arg;
	for (;;) {
		mutex_lock(&p->lock);
		while (list_empty(&p->jobs) && !p->stop)
			cond_wait(&p->cv, &p->lock);
		if (list_empty(&p->jobs)) {
			mutex_unlock(&p->lock);
			return NULL;
		}
		struct ret_job *j = list_first_entry(&p->jobs, struct ret_job, link);
		list_del(&j->link);
		mutex_unlock(&p->lock);
		if (j->kind == LAYOUTRECALL4_FILE)
			return_file_job(p, j);
		else
			return_all_job(p, j);
		job_free(j);
	}
}

static void job_queue(struct nfs4c_pnfs *p, struct ret_job *j)
{
	mutex_lock(&p->lock);
	list_add_tail(&j->link, &p->jobs);
	cond_broadcast(&p->cv);
	mutex_unlock(&p->lock);
}

static struct nfs4c_pnfs_file *file_find(struct nfs4c_pnfs *p, const nfs_fh4 *fh)
{
	struct nfs4c_pnfs_file *f, *found = NULL;
	mutex_lock(&p->lock);
	list_for_each_entry (f, &p->files, link) {
		if (f->fh.len == fh->len && !memcmp(f->fh.val, fh->val, fh->len)) {
			found = f;
			found->refs++;
			break;
		}
	}
	mutex_unlock(&p->lock);
	return found;
}

/* A FILE recall: OK with a return queued, or why not (pnfs.h). */
static nfsstat4 recall_file(struct nfs4c_pnfs *p, const struct CB_LAYOUTRECALL4args *a)
{
	const struct layoutrecall_file4 *r = &a->clora_recall.lor_layout;
	struct nfs4c_pnfs_file *f = file_find(p, &r->lor_fh);
	if (!f)
		return NFS4ERR_NOMATCHING_LAYOUT;
	nfsstat4 st = NFS4_OK;
	mutex_lock(&f->lock);
	bool same = f->have_lsid && !memcmp(f->lsid.other, r->lor_stateid.other, NFS4_OTHER_SIZE);
	if (!same) {
		/* a first LAYOUTGET whose reply is still on its way, or a
		 * layout this client does not hold */
		st = f->lg_busy ? NFS4ERR_DELAY : NFS4ERR_NOMATCHING_LAYOUT;
	} else if (seqid_after(r->lor_stateid.seqid, f->lsid.seqid + 1) && f->lg_busy) {
		st = NFS4ERR_DELAY; /* a LAYOUTGET reply it follows is to come */
	} else {
		if (seqid_after(r->lor_stateid.seqid, f->lsid.seqid))
			f->lsid.seqid = r->lor_stateid.seqid; /* returns carry the recall's */
		f->recalling++;
	}
	mutex_unlock(&f->lock);
	if (st != NFS4_OK) {
		file_put(f);
		return st;
	}
	struct ret_job *j = xcalloc(1, sizeof(*j));
	j->kind = LAYOUTRECALL4_FILE;
	j->iomode = a->clora_iomode;
	j->f = f;
	j->off = r->lor_offset;
	j->len = r->lor_length;
	job_queue(p, j);
	return NFS4_OK;
}

/* Every file that holds a layout, each marked as being returned. */
static struct ret_job *recall_everything(struct nfs4c_pnfs *p, layoutrecall_type4 kind,
					 layoutiomode4 iomode)
{
	struct ret_job *j = xcalloc(1, sizeof(*j));
	struct nfs4c_pnfs_file *f;
	unsigned n = 0;
	j->kind = kind;
	j->iomode = iomode;
	mutex_lock(&p->lock);
	list_for_each_entry (f, &p->files, link)
		n++;
	j->files = xcalloc(n ? n : 1, sizeof(*j->files));
	list_for_each_entry (f, &p->files, link) {
		f->refs++;
		j->files[j->nfiles++] = f;
	}
	mutex_unlock(&p->lock);
	unsigned holding = 0;
	for (unsigned i = 0; i < j->nfiles; i++) {
		f = j->files[i];
		mutex_lock(&f->lock);
		holding += f->have_lsid;
		f->recalling++;
		mutex_unlock(&f->lock);
	}
	if (!holding) {
		for (unsigned i = 0; i < j->nfiles; i++)
			recall_done(j->files[i]);
		job_free(j);
		return NULL;
	}
	return j;
}

/* CB_LAYOUTRECALL, on the callback thread: never waits for I/O. */
static nfsstat4 on_layoutrecall(void *arg, const struct nfs4c_cb_req *rq,
				const struct nfs_cb_argop4 *op, struct nfs_cb_resop4 *res)
{
	struct nfs4c_pnfs *p = arg;
	const struct CB_LAYOUTRECALL4args *a = &op->opcblayoutrecall;
	layoutrecall_type4 kind = a->clora_recall.lor_recalltype;
	nfsstat4 st;

	count(p, &p->st.recalls, 1);
	if (a->clora_type != LAYOUT4_BLOCK_VOLUME) {
		st = NFS4ERR_NOMATCHING_LAYOUT;
	} else if (p->cfg.hold) {
		count(p, &p->st.recalls_ignored, 1);
		note(p, "recall %s: acknowledged, not returning (hold)",
		     kind == LAYOUTRECALL4_FILE	  ? "FILE"
		     : kind == LAYOUTRECALL4_FSID ? "FSID"
						  : "ALL");
		return NFS4_OK;
	} else if (kind == LAYOUTRECALL4_FILE) {
		st = recall_file(p, a);
	} else {
		struct ret_job *j = recall_everything(p, kind, a->clora_iomode);
		st = j ? NFS4_OK : NFS4ERR_NOMATCHING_LAYOUT;
		if (j)
			job_queue(p, j);
	}
	if (st == NFS4ERR_NOMATCHING_LAYOUT)
		count(p, &p->st.recalls_nomatch, 1);
	else if (st == NFS4ERR_DELAY)
		count(p, &p->st.recalls_delayed, 1);
	note(p, "recall %s: answered %s", kind == LAYOUTRECALL4_FILE ? "FILE" : "FSID/ALL",
	     st == NFS4_OK	   ? "OK, returning"
	     : st == NFS4ERR_DELAY ? "DELAY"
				   : "NOMATCHING_LAYOUT");
	return st;
}

/* CB_RECALL_ANY with the block layout bit: give every layout back. */
static nfsstat4 on_recall_any(void *arg, const struct nfs4c_cb_req *rq,
			      const struct nfs_cb_argop4 *op, struct nfs_cb_resop4 *res)
{
	struct nfs4c_pnfs *p = arg;
	const bitmap4 *mask = &op->opcbrecall_any.craa_type_mask;
	if (!nfs4c_bitmap_isset(mask, RCA4_TYPE_MASK_BLK_LAYOUT))
		return NFS4_OK;
	count(p, &p->st.recall_any, 1);
	if (p->cfg.hold)
		return NFS4_OK;
	struct ret_job *j = recall_everything(p, LAYOUTRECALL4_ALL, LAYOUTIOMODE4_ANY);
	if (j)
		job_queue(p, j);
	return NFS4_OK;
}

/* ---- the client ------------------------------------------------------------ */

int nfs4c_pnfs_create(struct nfs4c_client *cl, const struct nfs4c_pnfs_cfg *cfg,
		      struct nfs4c_pnfs **out)
{
	static _Atomic unsigned serial;
	if (!cfg->ndisks || cfg->ndisks > NFS4C_PNFS_MAX_DISKS ||
	    (cfg->blksize && (cfg->blksize % DIO_ALIGN || (cfg->blksize & (cfg->blksize - 1)))))
		return -EINVAL;
	struct nfs4c_pnfs *p = xcalloc(1, sizeof(*p));
	int err = 0;
	p->cl = cl;
	p->cfg = *cfg;
	p->cfg.disks = NULL;
	if (!p->cfg.retry_ms)
		p->cfg.retry_ms = RETRY_DEFAULT;
	p->bs = cfg->blksize ? cfg->blksize : DIO_ALIGN;
	snprintf(p->owner, sizeof(p->owner), "nfs4c-pnfs/%d/%u", (int)getpid(), serial++);
	mutex_init(&p->lock, &pnfs_class);
	cond_init(&p->cv);
	list_init(&p->files);
	list_init(&p->jobs);
	for (unsigned i = 0; i < cfg->ndisks; i++) {
		p->disk[i].fd = -1;
		p->ndisk = i + 1;
		err = disk_open(&p->disk[i], cfg->disks[i]);
		if (err) {
			note(p, "%s: %s", cfg->disks[i], strerror(-err));
			goto out_free;
		}
	}
	err = -pthread_create(&p->thread, NULL, ret_main, p);
	if (err)
		goto out_free;
	nfs4c_set_cb(cl, OP_CB_LAYOUTRECALL, on_layoutrecall, p);
	nfs4c_set_cb(cl, OP_CB_RECALL_ANY, on_recall_any, p);
	*out = p;
	return 0;

out_free:
	for (unsigned i = 0; i < p->ndisk; i++) {
		if (p->disk[i].fd >= 0)
			close(p->disk[i].fd);
		free(p->disk[i].path);
	}
	cond_destroy(&p->cv);
	mutex_destroy(&p->lock);
	free(p);
	return err;
}

void nfs4c_pnfs_destroy(struct nfs4c_pnfs *p)
{
	/* no handler runs with p once these return (nfs4c_set_cb) */
	nfs4c_set_cb(p->cl, OP_CB_LAYOUTRECALL, NULL, NULL);
	nfs4c_set_cb(p->cl, OP_CB_RECALL_ANY, NULL, NULL);
	mutex_lock(&p->lock);
	p->stop = true;
	cond_broadcast(&p->cv);
	mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL); /* runs what is queued, then ends */
	for (unsigned i = 0; i < p->ndev; i++)
		dev_free(p->dev[i]);
	for (unsigned i = 0; i < p->ndisk; i++) {
		close(p->disk[i].fd);
		free(p->disk[i].path);
	}
	cond_destroy(&p->cv);
	mutex_destroy(&p->lock);
	free(p);
}

void nfs4c_pnfs_stats(struct nfs4c_pnfs *p, struct nfs4c_pnfs_stats *st)
{
	mutex_lock(&p->lock);
	*st = p->st;
	mutex_unlock(&p->lock);
}
