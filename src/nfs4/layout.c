/*
 * layout.c - pNFS block layouts (RFC 8881 §12, §18.40-§18.44; RFC 5663):
 * LAYOUTGET, GETDEVICEINFO, GETDEVICELIST, LAYOUTCOMMIT, LAYOUTRETURN,
 * recalls (CB_LAYOUTRECALL) and fencing.
 *
 * Design note.
 *
 * One device. Every export marked `pnfs` lives on the one engine device,
 * named by one device id (derived from the filesystem's UUID, so it is the
 * same after a restart) and described by GETDEVICEINFO as one SIMPLE volume
 * whose signature is the UUID at FS_PNFS_SIG_OFFSET of block 0: the Linux
 * client's blkmapd finds the disk that carries it.
 *
 * Layouts. A client's layouts of one file share one layout stateid (struct
 * nfs4_layout, its payload); the ranges themselves are the engine's layout
 * leases (fs_layout_get, holder = clientid), which also decide conflicts
 * and recalls (docs/design.md rule 9). LAYOUTGET maps the range with
 * fs_map_blocks (RW: holes get unwritten blocks, durable before the reply)
 * and hands out extents: written blocks READ_WRITE_DATA (READ_DATA for a
 * READ layout), unwritten INVALID_DATA, holes NONE_DATA.
 *
 * Who gets which layout. A LAYOUTGET needs the permission the I/O would
 * need through the server (Linux's nfsd4_layoutget: fh_verify with
 * MAY_READ, and MAY_WRITE for RW, the owner override as for READ and
 * WRITE): an RW layout of a file on a read-only export is ROFS, of a file
 * the caller may not write ACCESS, before any block is allocated. An RW
 * layout also stands for an open for writing that is still open: the
 * open of an open or lock stateid, and for a layout stateid the client's
 * opens of the file (a client that opened for reading and got a READ
 * layout asks with that stateid once it has opened for writing too);
 * without one the answer is OPENMODE (RFC 8881: the stateid does not
 * allow the access asked for). A READ layout ends at the EOF block (there
 * is nothing to read past it) but covers at least minlength: a hole or an
 * empty file is a NONE_DATA extent, never LAYOUTTRYLATER.
 *
 * Blocks an RW layout's map allocated over holes and no LAYOUTCOMMIT
 * converted go back to the free space when no RW layout covers them any
 * more: returned, lost with the client, or revoked after the fence
 * (fs_layout_map; src/fs/layouts.c, invariants L1-L4).
 *
 * LAYOUTCOMMIT is an fdatasync (rule 6): the file ranges of the extents the
 * client says it wrote (storage offsets are never trusted: the engine maps
 * the file range itself) are converted by fs_commit_blocks, which forces the
 * log only to the inode's datasync sequence and flushes the data device when
 * that wrote nothing. Ranges the client holds no layout for, or with no
 * blocks, are refused with INVAL.
 *
 * Recalls. The engine calls engine_recall() when another client's
 * request (or the holder's own through the server) conflicts with a
 * layout; it sends CB_LAYOUTRECALL for the whole file on a session of the
 * holder that has a back channel, and never waits. A client that has not
 * returned a recalled layout one lease later is fenced: its layout stateids
 * of that file are revoked (SEQUENCE then reports
 * RECALLABLE_STATE_REVOKED), the engine's leases are given back so that
 * the waiting requests go on, and --fence-cmd, when given, is run with the
 * client's address (as the Linux server's recall-failed helper), so that
 * the client can no longer reach the storage.
 *
 * The order matters: the fence runs first, and only when it succeeded are
 * the stateids revoked and the leases given back. Until then the client
 * may still write the blocks its layout maps, so no other request may
 * change what they hold or give them to another file: the conflicting
 * requests keep getting DELAY (each at once: no worker waits), the fence
 * is tried again on every reaper pass (at least FENCE_RETRY_NS apart) and
 * each failure is logged and counted (nfs4.layout.fence_failed). A stuck
 * fence stops the writers to one file, never the server, and never risks
 * another file's data. Without --fence-cmd there is nothing to run: the
 * leases go after the lease time, as the Linux server does.
 *
 * Resends. A client may answer a recall NFS4ERR_DELAY (RFC 8881 §20.3.4:
 * a LAYOUTGET reply it has not seen yet, a return already under way), or
 * its CB_SEQUENCE (§20.9.3: its callback slot busy), and a recall may fail
 * to go out at all (the session's one back channel slot busy with another
 * recall, no back channel bound for a moment) or get no answer (cb.c
 * answers DELAY for both: only the lost answer marks the back channel
 * faulty, and a CB_SEQUENCE out of step is put right by cb.c itself).
 * None of these is the client refusing: the recall is sent again, not by
 * the worker that heard the answer but by the reaper (nfs4_layouts_reap,
 * woken for it through nfs4_reaper_kick), so no thread waits for the
 * client. The invariants:
 *
 *  1. A recall round starts when a layout that was not recalled is
 *     recalled (recall_gen counts rounds) and ends with its return, its
 *     revocation, or the fence. An answer to a call of an earlier round
 *     changes nothing.
 *  2. Resends are bounded: at most RECALL_RESENDS per round, the first
 *     RECALL_RESEND_FIRST_NS after the answer, each delay twice the last,
 *     and none due after the fence deadline (recall_ns + lease), which
 *     resends never move.
 *  3. A resend carries the seqid the recall carried when the layout's
 *     stateid has not changed since (the client that answered DELAY did
 *     not take the recall in, and one seqid further on it would answer
 *     DELAY again: RFC 8881 §12.5.5.2.1); if a LAYOUTRETURN of a part
 *     changed it meanwhile, the next one.
 *  4. No resend for a layout returned (recalled false), revoked or
 *     unhashed (nfs4_stid_tryget fails) before it is due.
 *
 * When the resends are spent, or the client answers anything else but OK
 * or NOMATCHING_LAYOUT, the recall has failed: counted, logged with the
 * client ID and the status (rate limited), and the fence decides.
 *
 * Lock order: the layout table's mutex (nfs4.layouts, 535) is taken before
 * the state core's locks (a new layout stateid is made under it: 610-630)
 * and never with a stateid's lock held; no engine lock is taken and no
 * callback runs under it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/lock.h"
#include "base/mem.h"
#include "base/msg.h"
#include "base/siphash.h"
#include "base/time.h"
#include "nfs4/nfs4_priv.h"
#include "srv/vfs.h"
#include "xdr/pnfs_block.h"

#define LAYOUT_BUCKETS 256
/* Extents one LAYOUTGET hands out at most, and the longest range. */
#define LAYOUT_MAX_EXTENTS 64
#define LAYOUT_MAX_LEN	   (1ull << 30)
/* Bytes of one pnfs_block_extent4 on the wire. */
#define BLOCK_EXTENT_XDR (NFS4_DEVICEID4_SIZE + 8 + 8 + 8 + 4)
/* Resends of one recall (invariant 2): 10, 20, ... 1280 ms after the
 * answers, 2.55 s in all, far inside any lease (5 s at least). */
#define RECALL_RESENDS	       8
#define RECALL_RESEND_FIRST_NS (10 * NSEC_PER_MSEC)
/* Failed recalls logged at most this many per RECALL_LOG_WINDOW_NS; the
 * next line after a quiet window says how many went unlogged. */
#define RECALL_LOG_BURST     10
#define RECALL_LOG_WINDOW_NS (60 * NSEC_PER_SEC)

static struct lock_class layouts_class = LOCK_CLASS(NFS4_LAYOUTS);

/* A layout stateid's payload, keyed by its client (pl.pl_client; no
 * owner) and file. */
struct nfs4_layout {
	struct nfs4_payload pl; /* first (stid.h); in the table's buckets */
	struct nfs4_server *s;
	struct fs_inode *ip;
	nfs_fh4 fh;		      /* for CB_LAYOUTRECALL */
	bool recalled;		      /* [table] a recall was sent and not answered by a return */
	uint64_t recall_ns;	      /* [table] the round began: the fence is due a lease on */
	uint32_t recall_gen;	      /* [table] rounds begun (invariant 1) */
	uint32_t recall_seqid;	      /* [table] the seqid the last recall carried */
	unsigned resends;	      /* [table] of this round so far */
	uint64_t resend_ns;	      /* [table] a resend is due then; 0: none */
	uint64_t fence_retry_ns;      /* [table] a failed fence: not again before */
	struct sockaddr_storage peer; /* where the client was: --fence-cmd's argument */
};

/* The layouts, an (owner, file) table (stid.h) of one lock, which also
 * guards the [table] fields of every layout. */
struct nfs4_layout_table {
	struct mutex lock;
	struct nfs4_pltable *pl;
	/* failed recalls logged in this window, and those left unlogged */
	uint64_t log_window_ns;
	unsigned log_lines, log_dropped;
};

static struct nfs4_layout *lo_of(struct nfs4_payload *pl)
{
	return pl ? container_of(pl, struct nfs4_layout, pl) : NULL;
}

struct layout_make {
	struct nfs4_compound *c;
	struct fs_inode *ip;
	nfs_fh4 fh;
};

/* A new layout (nfs4_pltable_get, under the table's lock). */
static void layout_init(struct nfs4_payload *pl, void *arg)
{
	struct layout_make *m = arg;
	struct nfs4_layout *lo = lo_of(pl);
	lo->s = m->c->s;
	fs_igrab(m->ip);
	lo->ip = m->ip;
	lo->peer = *svc_conn_peer(svc_req_conn(m->c->rq));
	lo->fh = m->fh;
}

static void layout_fini(struct nfs4_payload *pl)
{
	fs_iput(lo_of(pl)->ip);
}

_Static_assert(offsetof(struct nfs4_layout, pl) == 0, "the header first");
static const struct nfs4_payload_ops layout_ops = {
	.type = NFS4_STID_LAYOUT,
	.size = sizeof(struct nfs4_layout),
	.init = layout_init,
	.fini = layout_fini,
};

void nfs4_layouts_init(struct nfs4_server *s)
{
	s->layouts = xcalloc(1, sizeof(*s->layouts));
	mutex_init(&s->layouts->lock, &layouts_class);
	s->layouts->pl = nfs4_pltable_create(LAYOUT_BUCKETS, NULL, &s->layouts->lock, &layout_ops);
	/* one device id for the one device, the same after a restart */
	static const uint8_t key[16] = "jnfs-pnfs-device";
	uint64_t h[2];
	h[0] = siphash24(key, fs_uuid(s->srv->fs), 16);
	h[1] = h[0] ^ 0x5a5a5a5a5a5a5a5aull;
	memcpy(s->deviceid, h, sizeof(s->deviceid));
}

void nfs4_layouts_destroy(struct nfs4_server *s)
{
	nfs4_pltable_destroy(s->layouts->pl);
	mutex_destroy(&s->layouts->lock);
	free(s->layouts);
	s->layouts = NULL;
}

/* ---- the table ---- */

/* The layout stateid of (client, file), referenced: found or made (DELAY
 * for one going: LAYOUTRETURN, its client leaving). */
static uint32_t layout_get_stid(struct nfs4_compound *c, struct fs_inode *ip,
				struct nfs4_stid **out, bool *fresh)
{
	struct nfs4_payload key = {.pl_client = nfs4_client_id(c->clp), .pl_file = fs_ino(ip)};
	struct layout_make m = {.c = c, .ip = ip};
	/* the handle a recall will name, made before the table's lock (a
	 * leaf: no engine lock under it) */
	struct fs_attr at;
	if (!fs_getattr(ip, &at))
		nfs4_fh_wire(c, &c->cfh, &at, &m.fh);
	struct nfs4_payload *pl;
	uint32_t st = nfs4_pltable_get(c->s->layouts->pl, c->clp, &key, &m, &pl, fresh);
	*out = st ? NULL : pl->pl_stid;
	return st;
}

/* The payload goes (stid_ops.release, or a revocation): its leases too. */
void nfs4_layout_release(struct nfs4_server *s, struct nfs4_layout *lo)
{
	nfs4_pltable_remove(s->layouts->pl, &lo->pl);
	fs_layout_return(lo->ip, lo->pl.pl_client, 0, UINT64_MAX, FS_LAYOUT_ANY);
	fs_iput(lo->ip);
	free(lo);
}

/* ---- operations ---- */

/* The current filehandle as a regular file of a pnfs export. */
static uint32_t pnfs_file(struct nfs4_compound *c, struct fs_attr *at)
{
	if (c->cfh.kind != NFS4_FH_FS)
		return NFS4ERR_LAYOUTUNAVAILABLE;
	int err = fs_getattr(c->cfh.ip, at);
	if (err)
		return nfs4_status(err);
	if (!S_ISREG(at->mode))
		return S_ISDIR(at->mode) ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
	return c->cfh.exp.opts->pnfs ? NFS4_OK : NFS4ERR_LAYOUTUNAVAILABLE;
}

static pnfs_block_extent_state4 extent_state(enum fs_map_state st, bool rw)
{
	switch (st) {
	case FS_MAP_WRITTEN:
		return rw ? PNFS_BLOCK_READ_WRITE_DATA : PNFS_BLOCK_READ_DATA;
	case FS_MAP_UNWRITTEN:
		/* allocated, never written: INVALID_DATA is for RW layouts
		 * only (RFC 5663 §2.3.1: the writer initializes it); a
		 * reader is told there is nothing to read (the Linux client
		 * fails a read of an INVALID_DATA extent with EIO) */
		return rw ? PNFS_BLOCK_INVALID_DATA : PNFS_BLOCK_NONE_DATA;
	default:
		return PNFS_BLOCK_NONE_DATA;
	}
}

uint32_t nfs4_layoutget_reply_size(const struct nfs_argop4 *a)
{
	uint32_t n = a->oplayoutget.loga_maxcount;
	uint32_t most = 64 + LAYOUT_MAX_EXTENTS * BLOCK_EXTENT_XDR;
	return n && n < most ? n : most;
}

/*
 * The stateid of a LAYOUTGET: an open, lock or layout stateid of the
 * current file (RFC 8881 §18.43.3: another file's stands for no open of
 * this one). An RW layout stands for an open for writing, still open: an
 * open or lock stateid's own; after the first LAYOUTGET the client
 * presents the layout stateid (RFC 8881 §12.5.3), which stands for the
 * client's opens of the file.
 */
static uint32_t layoutget_stateid(struct nfs4_compound *c, const struct stateid4 *w, bool rw)
{
	struct nfs4_stid *given;
	uint32_t st = nfs4_stid_of(c, w, NFS4_STID_OPEN | NFS4_STID_LOCK | NFS4_STID_LAYOUT, &given);
	if (st)
		return st;
	unsigned given_type = nfs4_stid_type(given);
	nfs4_stid_put(given);
	if (!rw)
		return NFS4_OK;
	if (given_type != NFS4_STID_LAYOUT)
		return nfs4_check_io_stateid(c, w, c->cfh.ip, true);
	if (!(share_client_access(c->s->shares, fs_ino(c->cfh.ip), nfs4_client_id(c->clp)) &
	      SHARE_ACCESS_WRITE))
		return NFS4ERR_OPENMODE;
	return NFS4_OK;
}

/*
 * The range a LAYOUTGET maps, [*off, *end), and the extents it may hand
 * out at most (*max): whole blocks, at most LAYOUT_MAX_LEN, within what a
 * file may hold; for a READ layout not past the EOF block (at: the file's
 * attributes) but at least minlength.
 */
static uint32_t layoutget_range(const struct LAYOUTGET4args *la, const struct fs_attr *at,
				bool rw, uint64_t *off, uint64_t *end, unsigned *max)
{
	*off = la->loga_offset / FS_MAP_BLOCK * FS_MAP_BLOCK;
	*end = la->loga_length == UINT64_MAX || la->loga_length > FS_MAX_FILE_SIZE
		       ? FS_MAX_FILE_SIZE
		       : la->loga_offset + la->loga_length;
	if (*off >= FS_MAX_FILE_SIZE)
		return NFS4ERR_INVAL;
	if (*end > FS_MAX_FILE_SIZE)
		*end = FS_MAX_FILE_SIZE;
	if (!rw) {
		/* past EOF there is nothing to read, but what the client
		 * needs at least is covered: a hole (NONE_DATA) */
		uint64_t eof = (at->size + FS_MAP_BLOCK - 1) / FS_MAP_BLOCK * FS_MAP_BLOCK;
		uint64_t least = la->loga_minlength >= *end - la->loga_offset
					 ? *end
					 : la->loga_offset + la->loga_minlength;
		uint64_t last = eof > least ? eof : least;
		if (*end > last)
			*end = last;
	}
	if (*end <= *off)
		*end = *off + FS_MAP_BLOCK;
	*end = (*end + FS_MAP_BLOCK - 1) / FS_MAP_BLOCK * FS_MAP_BLOCK;
	if (*end - *off > LAYOUT_MAX_LEN)
		*end = *off + LAYOUT_MAX_LEN;
	*max = LAYOUT_MAX_EXTENTS;
	if (la->loga_maxcount) {
		uint32_t room =
			la->loga_maxcount > 64 ? (la->loga_maxcount - 64) / BLOCK_EXTENT_XDR : 0;
		if (room == 0)
			return NFS4ERR_TOOSMALL;
		if (room < *max)
			*max = room;
	}
	return NFS4_OK;
}

/* The layout handed out: its body the pnfs_block_layout4 of the n extents
 * mapped, all in memory of the reply (its range and iomode the caller's). */
static uint32_t layoutget_body(struct nfs4_compound *c, const struct fs_map *maps, unsigned n,
			       bool rw, struct layout4 **out)
{
	struct pnfs_block_extent4 *ex = nfs4_res_alloc(c, (n ? n : 1) * sizeof(*ex));
	struct layout4 *l4 = nfs4_res_alloc(c, sizeof(*l4));
	uint8_t *body = nfs4_res_alloc(c, 4 + n * BLOCK_EXTENT_XDR + 8);
	if (!ex || !l4 || !body)
		return NFS4ERR_REP_TOO_BIG;
	for (unsigned i = 0; i < n; i++) {
		memcpy(ex[i].bex_vol_id, c->s->deviceid, NFS4_DEVICEID4_SIZE);
		ex[i].bex_file_offset = maps[i].off;
		ex[i].bex_length = maps[i].len;
		ex[i].bex_storage_offset = maps[i].state == FS_MAP_HOLE ? 0 : maps[i].addr;
		ex[i].bex_state = extent_state(maps[i].state, rw);
	}
	struct pnfs_block_layout4 bl = {.blo_extents = {.len = n, .val = ex}};
	struct xdr_enc x;
	xdr_enc_init_buf(&x, body, 4 + n * BLOCK_EXTENT_XDR + 8, 4 + n * BLOCK_EXTENT_XDR + 8);
	int err = pnfs_block_enc_pnfs_block_layout4(&x, &bl);
	size_t blen = xdr_enc_len(&x);
	xdr_enc_destroy(&x);
	if (err)
		return NFS4ERR_SERVERFAULT;
	l4->lo_content.loc_type = LAYOUT4_BLOCK_VOLUME;
	l4->lo_content.loc_body.len = (uint32_t)blen;
	l4->lo_content.loc_body.val = body;
	*out = l4;
	return NFS4_OK;
}

static uint32_t layoutget(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct LAYOUTGET4args *la = &a->oplayoutget;
	struct LAYOUTGET4resok *ok = &r->oplayoutget.logr_resok4;
	struct fs_attr at;
	uint32_t st;
	int err;
	if ((st = pnfs_file(c, &at)))
		return st;
	if (la->loga_layout_type != LAYOUT4_BLOCK_VOLUME)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (la->loga_iomode != LAYOUTIOMODE4_READ && la->loga_iomode != LAYOUTIOMODE4_RW)
		return NFS4ERR_BADIOMODE;
	bool rw = la->loga_iomode == LAYOUTIOMODE4_RW;
	/* the permission of the I/O through the server, before anything is
	 * allocated: ROFS on a read-only export, ACCESS by the mode bits */
	if ((err = srv_may_layout(&c->cfh.exp, c->cfh.ip, rw)))
		return nfs4_status(err);
	if (la->loga_length == 0 ||
	    (la->loga_length != UINT64_MAX && la->loga_offset > UINT64_MAX - la->loga_length) ||
	    la->loga_minlength > la->loga_length)
		return NFS4ERR_INVAL;
	if ((st = layoutget_stateid(c, &la->loga_stateid, rw)))
		return st;
	/* a LAYOUTGET racing a recall fails: no layout escapes the recall */
	if (fs_layout_recalling(c->cfh.ip))
		return NFS4ERR_RECALLCONFLICT;
	uint64_t off, end;
	unsigned max;
	if ((st = layoutget_range(la, &at, rw, &off, &end, &max)))
		return st;

	struct nfs4_stid *lsid;
	bool fresh;
	uint64_t lid = 0; /* the lease this LAYOUTGET adds: exactly what it hands out */
	if ((st = layout_get_stid(c, c->cfh.ip, &lsid, &fresh)))
		return st;
	err = fs_layout_get(c->cfh.ip, nfs4_client_id(c->clp), off, end - off, rw, &lid);
	if (err) {
		/* another client's layout was in the way: it is being recalled */
		st = err == -EAGAIN ? NFS4ERR_LAYOUTTRYLATER : nfs4_status(err);
		goto out;
	}
	struct fs_map maps[LAYOUT_MAX_EXTENTS];
	unsigned n = 0;
	err = fs_layout_map(c->cfh.ip, lid, off, end - off, maps, max, &n);
	if (err) {
		/* -EAGAIN: the client returned it meanwhile */
		st = err == -EAGAIN ? NFS4ERR_LAYOUTTRYLATER : nfs4_status(err);
		goto out;
	}
	uint64_t got_end = n ? maps[n - 1].off + maps[n - 1].len : off;
	if (la->loga_minlength && got_end < la->loga_offset + la->loga_minlength &&
	    got_end < FS_MAX_FILE_SIZE) {
		/* fewer extents than the range needs: the client asks again */
		st = NFS4ERR_LAYOUTTRYLATER;
		goto out;
	}
	/* the client holds what it is told, not what it asked for: a
	 * LAYOUTCOMMIT or a recall past got_end concerns none of its layouts */
	if (got_end < end)
		fs_layout_trim(c->cfh.ip, lid, got_end - off);
	struct layout4 *l4;
	if ((st = layoutget_body(c, maps, n, rw, &l4)))
		goto out;
	l4->lo_offset = off;
	l4->lo_length = got_end - off;
	l4->lo_iomode = la->loga_iomode;
	struct nfs4_stateid sid;
	nfs4_stid_lock(lsid);
	if (fresh)
		nfs4_stid_value(lsid, &sid);
	else
		nfs4_stid_bump(lsid, &sid);
	nfs4_stid_unlock(lsid);
	nfs4_sid_to_wire(&sid, &ok->logr_stateid);
	ok->logr_return_on_close = false;
	ok->logr_layout.len = 1;
	ok->logr_layout.val = l4;
	nfs4_set_cur_sid(c, &sid);
	counter_inc(&c->s->st.layoutgets);
out:
	/* a failed LAYOUTGET takes back its own lease, nothing held before */
	if (st && lid)
		fs_layout_trim(c->cfh.ip, lid, 0);
	if (st && fresh)
		nfs4_stid_unhash(lsid);
	nfs4_stid_put(lsid);
	return st;
}

/* LAYOUTTRYLATER carries a result of its own (the row has OP4_ERRDATA):
 * the client is never told when a layout becomes available. */
uint32_t nfs4_op_layoutget(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	uint32_t st = layoutget(c, a, r);
	r->oplayoutget.logr_status = st;
	if (st == NFS4ERR_LAYOUTTRYLATER)
		r->oplayoutget.logr_will_signal_layout_avail = false;
	return st;
}

uint32_t nfs4_op_getdeviceinfo(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct GETDEVICEINFO4args *ga = &a->opgetdeviceinfo;
	struct GETDEVICEINFO4resok *ok = &r->opgetdeviceinfo.gdir_resok4;
	if (ga->gdia_layout_type != LAYOUT4_BLOCK_VOLUME)
		return r->opgetdeviceinfo.gdir_status = NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (!atomic_load(&c->s->pnfs) || memcmp(ga->gdia_device_id, c->s->deviceid, NFS4_DEVICEID4_SIZE))
		return r->opgetdeviceinfo.gdir_status = NFS4ERR_NOENT;
	/* one SIMPLE volume: the UUID at its offset of block 0 */
	uint8_t *uuid = nfs4_res_alloc(c, 16);
	uint8_t *body = nfs4_res_alloc(c, 64);
	if (!uuid || !body)
		return r->opgetdeviceinfo.gdir_status = NFS4ERR_REP_TOO_BIG;
	memcpy(uuid, fs_uuid(c->s->srv->fs), 16);
	struct pnfs_block_sig_component4 sig = {.bsc_sig_offset = FS_PNFS_SIG_OFFSET,
						.bsc_contents = {.len = 16, .val = uuid}};
	struct pnfs_block_volume4 vol = {.type = PNFS_BLOCK_VOLUME_SIMPLE};
	vol.bv_simple_info.bsv_ds.len = 1;
	vol.bv_simple_info.bsv_ds.val = &sig;
	struct pnfs_block_deviceaddr4 da = {.bda_volumes = {.len = 1, .val = &vol}};
	struct xdr_enc x;
	xdr_enc_init_buf(&x, body, 64, 64);
	int err = pnfs_block_enc_pnfs_block_deviceaddr4(&x, &da);
	size_t blen = xdr_enc_len(&x);
	xdr_enc_destroy(&x);
	if (err)
		return r->opgetdeviceinfo.gdir_status = NFS4ERR_SERVERFAULT;
	/* the device_addr4 takes its type, the body's length and the body */
	uint32_t need = 4 + 4 + (uint32_t)blen + 4 + 4;
	if (ga->gdia_maxcount && ga->gdia_maxcount < need) {
		r->opgetdeviceinfo.gdir_mincount = need;
		return r->opgetdeviceinfo.gdir_status = NFS4ERR_TOOSMALL;
	}
	ok->gdir_device_addr.da_layout_type = LAYOUT4_BLOCK_VOLUME;
	ok->gdir_device_addr.da_addr_body.len = (uint32_t)blen;
	ok->gdir_device_addr.da_addr_body.val = body;
	/* the device never changes nor goes while the server runs: the client
	 * may cache it, and the notifications it asked for will never be due */
	ok->gdir_notification.len = ga->gdia_notify_types.len ? 1 : 0;
	ok->gdir_notification.val[0] =
		ga->gdia_notify_types.len
			? ga->gdia_notify_types.val[0] & ((1u << NOTIFY_DEVICEID4_CHANGE) |
							  (1u << NOTIFY_DEVICEID4_DELETE))
			: 0;
	return r->opgetdeviceinfo.gdir_status = NFS4_OK;
}

uint32_t nfs4_op_getdevicelist(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct GETDEVICELIST4args *ga = &a->opgetdevicelist;
	struct GETDEVICELIST4resok *ok = &r->opgetdevicelist.gdlr_resok4;
	struct fs_attr at;
	if (c->cfh.kind != NFS4_FH_FS || !c->cfh.exp.opts->pnfs)
		return NFS4ERR_LAYOUTUNAVAILABLE;
	(void)at;
	if (ga->gdla_layout_type != LAYOUT4_BLOCK_VOLUME)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (ga->gdla_maxdevices == 0)
		return NFS4ERR_INVAL;
	memset(ok->gdlr_cookieverf, 0, sizeof(ok->gdlr_cookieverf));
	ok->gdlr_eof = true;
	ok->gdlr_cookie = 1;
	if (ga->gdla_cookie >= 1) {
		ok->gdlr_deviceid_list.len = 0;
		return NFS4_OK;
	}
	deviceid4 *ids = nfs4_res_alloc(c, sizeof(deviceid4));
	if (!ids)
		return NFS4ERR_REP_TOO_BIG;
	memcpy(ids[0], c->s->deviceid, NFS4_DEVICEID4_SIZE);
	ok->gdlr_deviceid_list.len = 1;
	ok->gdlr_deviceid_list.val = ids;
	return NFS4_OK;
}

uint32_t nfs4_op_layoutcommit(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct LAYOUTCOMMIT4args *la = &a->oplayoutcommit;
	struct LAYOUTCOMMIT4resok *ok = &r->oplayoutcommit.locr_resok4;
	struct fs_attr at;
	uint32_t st;
	if ((st = pnfs_file(c, &at)))
		return st;
	if (la->loca_reclaim)
		return NFS4ERR_NO_GRACE; /* no layout outlives a restart here */
	if (la->loca_layoutupdate.lou_type != LAYOUT4_BLOCK_VOLUME)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	struct nfs4_stid *sp;
	if ((st = nfs4_stid_of(c, &la->loca_stateid, NFS4_STID_LAYOUT, &sp)))
		return st;
	/* the extents the client wrote: their file ranges, whole blocks */
	struct xdr_dec x;
	struct xdr_arena arena;
	uint8_t abuf[1024];
	xdr_dec_init(&x, la->loca_layoutupdate.lou_body.val, la->loca_layoutupdate.lou_body.len);
	xdr_arena_init(&arena, abuf, sizeof(abuf), 256u << 10);
	x.arena = &arena;
	struct pnfs_block_layoutupdate4 up;
	memset(&up, 0, sizeof(up));
	struct fs_range *ranges = NULL;
	if (pnfs_block_dec_pnfs_block_layoutupdate4(&x, &up) || xdr_dec_remaining(&x)) {
		st = NFS4ERR_BADXDR;
		goto out;
	}
	ranges = xcalloc(up.blu_commit_list.len ? up.blu_commit_list.len : 1, sizeof(*ranges));
	unsigned n = 0;
	for (uint32_t i = 0; i < up.blu_commit_list.len; i++) {
		const struct pnfs_block_extent4 *e = &up.blu_commit_list.val[i];
		if (memcmp(e->bex_vol_id, c->s->deviceid, NFS4_DEVICEID4_SIZE) ||
		    e->bex_file_offset % FS_MAP_BLOCK || e->bex_length % FS_MAP_BLOCK ||
		    e->bex_length == 0 || e->bex_file_offset > FS_MAX_FILE_SIZE ||
		    e->bex_length > FS_MAX_FILE_SIZE - e->bex_file_offset) {
			st = NFS4ERR_INVAL;
			goto out;
		}
		if (e->bex_state != PNFS_BLOCK_READ_WRITE_DATA &&
		    e->bex_state != PNFS_BLOCK_INVALID_DATA)
			continue; /* nothing was written there */
		/* only what the client holds a layout for (never trusting the
		 * storage offsets it sends: the engine maps the file range) */
		if (!fs_layout_covers(c->cfh.ip, nfs4_client_id(c->clp), e->bex_file_offset,
				      e->bex_length, true)) {
			st = NFS4ERR_BADLAYOUT;
			goto out;
		}
		ranges[n].off = e->bex_file_offset;
		ranges[n].len = e->bex_length;
		n++;
	}
	uint64_t new_size = 0;
	if (la->loca_last_write_offset.no_newoffset) {
		if (la->loca_last_write_offset.no_offset >= FS_MAX_FILE_SIZE) {
			st = NFS4ERR_INVAL;
			goto out;
		}
		/* a byte the client wrote lies in an RW layout it holds: one
		 * past them would make the file any size it likes */
		if (!fs_layout_covers(c->cfh.ip, nfs4_client_id(c->clp),
				      la->loca_last_write_offset.no_offset, 1, true)) {
			st = NFS4ERR_INVAL;
			goto out;
		}
		new_size = la->loca_last_write_offset.no_offset + 1;
	}
	struct timespec mtime;
	const struct timespec *mt = NULL;
	if (la->loca_time_modify.nt_timechanged) {
		if (la->loca_time_modify.nt_time.nseconds >= 1000000000u) {
			st = NFS4ERR_INVAL;
			goto out;
		}
		mtime.tv_sec = la->loca_time_modify.nt_time.seconds;
		mtime.tv_nsec = la->loca_time_modify.nt_time.nseconds;
		mt = &mtime;
	}
	/* the permission of a write, as through the server */
	int err = srv_may_commit(&c->cfh.exp, c->cfh.ip);
	if (!err)
		err = fs_commit_blocks(c->cfh.ip, ranges, n, new_size, mt, NULL);
	if (err) {
		st = nfs4_status(err);
		goto out;
	}
	counter_inc(&c->s->st.layoutcommits);
	if ((err = fs_getattr(c->cfh.ip, &at))) {
		st = nfs4_status(err);
		goto out;
	}
	ok->locr_newsize.ns_sizechanged = new_size && at.size == new_size;
	ok->locr_newsize.ns_size = at.size;
out:
	free(ranges);
	xdr_arena_reset(&arena);
	nfs4_stid_put(sp);
	return st;
}

/* Give back the layouts of a layout stateid in a range; the stateid goes
 * when nothing is left (lrs_present false). */
static uint32_t return_file(struct nfs4_compound *c, const struct layoutreturn_file4 *rf,
			    layoutiomode4 iomode, struct layoutreturn_stateid *out)
{
	struct nfs4_stid *sp;
	uint32_t st = nfs4_stid_of(c, &rf->lrf_stateid, NFS4_STID_LAYOUT, &sp);
	if (st)
		return st;
	struct nfs4_layout *lo = nfs4_stid_payload(sp);
	/* the range and iomode given, no more (RFC 8881 18.44.3): what is
	 * left stays held, and recalled if it was */
	unsigned modes = iomode == LAYOUTIOMODE4_READ ? FS_LAYOUT_READ
			 : iomode == LAYOUTIOMODE4_RW ? FS_LAYOUT_RW
						      : FS_LAYOUT_ANY;
	bool held = fs_layout_return(lo->ip, lo->pl.pl_client, rf->lrf_offset, rf->lrf_length, modes);
	if (!held) {
		mutex_lock(&c->s->layouts->lock);
		lo->recalled = false;
		mutex_unlock(&c->s->layouts->lock);
	}
	struct nfs4_stateid sid;
	nfs4_stid_lock(sp);
	nfs4_stid_bump(sp, &sid);
	nfs4_stid_unlock(sp);
	if (!held) {
		nfs4_stid_unhash(sp);
		out->lrs_present = false;
	} else {
		out->lrs_present = true;
		nfs4_sid_to_wire(&sid, &out->lrs_stateid);
	}
	nfs4_stid_put(sp);
	counter_inc(&c->s->st.layoutreturns);
	return NFS4_OK;
}

/* Every layout stateid of the client (FSID and ALL: one device holds all
 * of them). */
static void return_all(struct nfs4_compound *c)
{
	struct nfs4_layout_table *t = c->s->layouts;
	uint64_t clientid = nfs4_client_id(c->clp);
	for (;;) {
		struct nfs4_stid *sp = NULL;
		bool going = false;
		mutex_lock(&t->lock);
		for (struct nfs4_payload *pl = nfs4_pltable_next_locked(t->pl, NULL); pl;
		     pl = nfs4_pltable_next_locked(t->pl, pl)) {
			if (pl->pl_client != clientid)
				continue;
			/* one already going is left to its release */
			sp = nfs4_stid_tryget(pl->pl_stid) ? pl->pl_stid : NULL;
			going = !sp;
			/* out of the table now, so the loop ends */
			nfs4_pltable_unlink_locked(t->pl, pl);
			break;
		}
		mutex_unlock(&t->lock);
		if (going)
			continue;
		if (!sp)
			return;
		struct nfs4_layout *lo = nfs4_stid_payload(sp);
		if (lo) /* NULL once revoked: the revocation returned its leases */
			fs_layout_return(lo->ip, lo->pl.pl_client, 0, UINT64_MAX, FS_LAYOUT_ANY);
		nfs4_stid_unhash(sp);
		nfs4_stid_put(sp);
		counter_inc(&c->s->st.layoutreturns);
	}
}

uint32_t nfs4_op_layoutreturn(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct LAYOUTRETURN4args *la = &a->oplayoutreturn;
	struct layoutreturn_stateid *out = &r->oplayoutreturn.lorr_stateid;
	if (la->lora_layout_type != LAYOUT4_BLOCK_VOLUME)
		return NFS4ERR_UNKNOWN_LAYOUTTYPE;
	if (la->lora_iomode < LAYOUTIOMODE4_READ || la->lora_iomode > LAYOUTIOMODE4_ANY)
		return NFS4ERR_BADIOMODE;
	switch (la->lora_layoutreturn.lr_returntype) {
	case LAYOUTRETURN4_FILE:
		if (c->cfh.kind != NFS4_FH_FS)
			return NFS4ERR_NOFILEHANDLE;
		return return_file(c, &la->lora_layoutreturn.lr_layout, la->lora_iomode, out);
	case LAYOUTRETURN4_FSID:
	case LAYOUTRETURN4_ALL:
		return_all(c);
		out->lrs_present = false;
		return NFS4_OK;
	}
	return NFS4ERR_INVAL;
}

/* ---- recalls and fencing ---- */

/* A failed recall, counted and said, with at most RECALL_LOG_BURST lines
 * a window: a client that fails every recall cannot flood the log. */
static void recall_failed(struct nfs4_server *s, uint64_t clientid, uint32_t st, const char *how)
{
	struct nfs4_layout_table *t = s->layouts;
	uint64_t now = now_ns();
	unsigned dropped = 0;
	counter_inc(&s->st.recalls_failed);
	mutex_lock(&t->lock);
	if (!t->log_window_ns || now - t->log_window_ns >= RECALL_LOG_WINDOW_NS) {
		t->log_window_ns = now;
		t->log_lines = 0;
		dropped = t->log_dropped;
		t->log_dropped = 0;
	}
	bool say = t->log_lines < RECALL_LOG_BURST;
	if (say)
		t->log_lines++;
	else
		t->log_dropped++;
	mutex_unlock(&t->lock);
	if (dropped)
		msg_warn("nfs4: %u more failed layout recalls were not logged", dropped);
	if (say)
		msg_warn("nfs4: layout recall of client %016llx failed (%s: %s, status %u): "
			 "the layout stays recalled until the client returns it, or is fenced one "
			 "lease after the recall",
			 (unsigned long long)clientid, how, nfsstat4_name(st) ?: "?", st);
}

/*
 * A call of round gen got DELAY (or no answer), or could not go out (st):
 * its resend is due after the next delay (invariant 2) and the reaper is
 * told; nothing when the round is over (invariants 1, 4); a failure when
 * the resends are spent or the next would come after the fence deadline.
 */
static void recall_again(struct nfs4_server *s, struct nfs4_layout *lo, uint32_t gen, uint32_t st,
			 const char *how)
{
	struct nfs4_layout_table *t = s->layouts;
	uint64_t lease = (uint64_t)s->lease_s * NSEC_PER_SEC, now = now_ns(), due = 0;
	bool over, again = false;
	mutex_lock(&t->lock);
	over = !lo->recalled || lo->recall_gen != gen;
	if (!over && lo->resends < RECALL_RESENDS) {
		due = now + (RECALL_RESEND_FIRST_NS << lo->resends);
		again = due < lo->recall_ns + lease;
		if (again)
			lo->resend_ns = due;
	}
	mutex_unlock(&t->lock);
	if (again)
		nfs4_reaper_kick(s, due);
	else if (!over)
		recall_failed(s, lo->pl.pl_client, st, how);
}

/* What recall_done gets: the layout's stateid and the round. */
struct recall_call {
	struct nfs4_stid *sp; /* referenced */
	uint32_t gen;
};

static void recall_done(struct nfs4_cb *cb, uint32_t status)
{
	struct nfs4_server *s = cb->s;
	struct recall_call *rc = cb->arg;
	struct nfs4_stid *sp = rc->sp;
	struct nfs4_layout *lo = nfs4_stid_payload(sp); /* kept by the reference */
	if (status == NFS4_OK || status == NFS4ERR_NOMATCHING_LAYOUT) {
		counter_inc(&s->st.recalls_answered);
		/* NOMATCHING: the client holds none (returned meanwhile, or
		 * never used it): as if it had returned everything */
		if (status == NFS4ERR_NOMATCHING_LAYOUT)
			nfs4_stid_unhash(sp);
	} else if (status == NFS4ERR_DELAY) {
		/* the client asked for time, for the recall or its
		 * CB_SEQUENCE, or no answer came (cb.c) */
		recall_again(s, lo, rc->gen, status, "DELAY or no answer, no resend left");
	} else {
		recall_failed(s, lo->pl.pl_client, status, "answered");
	}
	nfs4_stid_put(sp);
	free(rc);
}

/* CB_LAYOUTRECALL of lo's whole file on sess: NFS4_OK when it went out
 * (recall_done will run), else why not. */
static uint32_t call_recall(struct nfs4_server *s, struct nfs4_session *sess,
			    struct nfs4_layout *lo, struct nfs4_stid *sp, uint32_t gen, bool resend)
{
	struct nfs4_layout_table *t = s->layouts;
	struct nfs_cb_argop4 op;
	memset(&op, 0, sizeof(op));
	op.argop = OP_CB_LAYOUTRECALL;
	struct CB_LAYOUTRECALL4args *ra = &op.opcblayoutrecall;
	ra->clora_type = LAYOUT4_BLOCK_VOLUME;
	ra->clora_iomode = LAYOUTIOMODE4_ANY;
	ra->clora_changed = true;
	ra->clora_recall.lor_recalltype = LAYOUTRECALL4_FILE;
	ra->clora_recall.lor_layout.lor_fh = lo->fh;
	ra->clora_recall.lor_layout.lor_offset = 0;
	ra->clora_recall.lor_layout.lor_length = UINT64_MAX;
	/* A recall changes the layout state: it carries the stateid's next
	 * seqid (RFC 8881 §12.5.3), and the client refuses one that is not
	 * exactly one past the seqid it holds (OLD_STATEID), or waits for the
	 * reply it must have missed (DELAY; §12.5.5.2.1). A resend carries
	 * the same one unless the stateid changed since (invariant 3). */
	mutex_lock(&t->lock);
	uint32_t last = lo->recall_seqid;
	mutex_unlock(&t->lock);
	struct nfs4_stateid sid;
	nfs4_stid_lock(sp);
	nfs4_stid_value(sp, &sid);
	if (!resend || sid.seqid != last)
		nfs4_stid_bump(sp, &sid);
	nfs4_stid_unlock(sp);
	mutex_lock(&t->lock);
	lo->recall_seqid = sid.seqid;
	mutex_unlock(&t->lock);
	nfs4_sid_to_wire(&sid, &ra->clora_recall.lor_layout.lor_stateid);
	struct recall_call *rc = xmalloc(sizeof(*rc));
	rc->sp = sp;
	rc->gen = gen;
	nfs4_stid_get(sp); /* recall_done's */
	uint32_t st = nfs4_cb_compound(s, sess, &op, recall_done, rc);
	if (st) {
		/* recall_done will not run */
		nfs4_stid_put(sp);
		free(rc);
	}
	return st;
}

/* Send CB_LAYOUTRECALL for lo's file, a call of round gen, a resend or
 * not (no lock held). One that cannot go out now (the session's back
 * channel slot busy with another call, no back channel bound for a
 * moment) is tried again as a DELAY answer is. */
static void send_recall(struct nfs4_server *s, struct nfs4_layout *lo, struct nfs4_stid *sp,
			uint32_t gen, bool resend)
{
	assert_no_locks();
	struct nfs4_client *clp = nfs4_client_find(s->state, lo->pl.pl_client);
	if (!clp)
		return; /* gone: its layouts go with its state */
	struct nfs4_session *sess = nfs4_client_back_session(clp);
	nfs4_client_put(clp);
	uint32_t st = NFS4ERR_CB_PATH_DOWN; /* no back channel (yet) */
	if (sess) {
		st = call_recall(s, sess, lo, sp, gen, resend);
		nfs4_session_put(sess);
	}
	if (st == NFS4_OK) {
		counter_inc(&s->st.recalls_sent);
		if (resend)
			counter_inc(&s->st.recalls_resent);
		return;
	}
	recall_again(s, lo, gen, st, "not sent, no resend left");
}

/* The engine's recall (fs_layout_ops.recall): holder's layouts of ip. */
static void engine_recall(void *arg, struct fs_inode *ip, uint64_t holder)
{
	struct nfs4_server *s = arg;
	struct nfs4_layout_table *t = s->layouts;
	struct nfs4_payload key = {.pl_client = holder, .pl_file = fs_ino(ip)};
	mutex_lock(&t->lock);
	struct nfs4_layout *lo = lo_of(nfs4_pltable_find_locked(t->pl, &key));
	struct nfs4_stid *sp = NULL;
	uint32_t gen = 0;
	if (lo) {
		if (!lo->recalled) {
			/* a new round (invariant 1) */
			lo->recalled = true;
			lo->recall_ns = now_ns();
			lo->recall_gen++;
			lo->recall_seqid = 0; /* no seqid: the first call bumps */
			lo->resends = 0;
			lo->resend_ns = 0;
		}
		gen = lo->recall_gen;
		sp = lo->pl.pl_stid;
		if (!nfs4_stid_tryget(sp)) {
			/* going: its release returns the lease */
			mutex_unlock(&t->lock);
			return;
		}
	}
	mutex_unlock(&t->lock);
	if (!sp) {
		/* a lease without a stateid (its LAYOUTGET failed half way) */
		fs_layout_return(ip, holder, 0, UINT64_MAX, FS_LAYOUT_ANY);
		return;
	}
	send_recall(s, lo, sp, gen, false);
	nfs4_stid_put(sp);
}

void nfs4_layouts_start(struct nfs4_server *s)
{
	struct fs_layout_ops ops = {.recall = engine_recall, .arg = s};
	fs_set_layout_ops(s->srv->fs, &ops);
}

#define FENCE_RETRY_NS (1 * NSEC_PER_SEC)

/* Run --fence-cmd ADDR for a client that kept a recalled layout: true when
 * the client is fenced (the command exited 0, or there is none to run). */
static bool fence(struct nfs4_server *s, const struct nfs4_layout *lo)
{
	char addr[INET6_ADDRSTRLEN + 8] = "?";
	svc_addr_name(&lo->peer, addr, sizeof(addr));
	bool ok = true;
	if (s->fence_cmd) {
		pid_t pid = fork();
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", s->fence_cmd, "jnfsd-fence", addr,
			      (char *)NULL);
			_exit(127);
		}
		int status = 0;
		/* on the reaper thread: no request waits for it */
		ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		     WEXITSTATUS(status) == 0;
	}
	if (!ok) {
		counter_inc(&s->st.fence_failed);
		msg_err("nfs4: the fence command failed for client %016llx (%s): its recalled "
			"layout stays, and the requests that conflict with it wait, until a fence "
			"succeeds (tried again each reaper pass)",
			(unsigned long long)lo->pl.pl_client, addr);
		return false;
	}
	counter_inc(&s->st.fenced);
	msg_warn("nfs4: client %016llx (%s) did not return a recalled layout within the lease: "
		 "fenced",
		 (unsigned long long)lo->pl.pl_client, addr);
	return true;
}

/* The first layout whose resend is due, referenced, its resend taken and
 * counted; *next the earliest resend still to come (UINT64_MAX: none). */
static struct nfs4_stid *resend_due_locked(struct nfs4_layout_table *t, uint64_t now, uint32_t *gen,
					   uint64_t *next)
{
	assert_locked(&t->lock);
	*next = UINT64_MAX;
	for (struct nfs4_layout *lo = lo_of(nfs4_pltable_next_locked(t->pl, NULL)); lo;
	     lo = lo_of(nfs4_pltable_next_locked(t->pl, &lo->pl))) {
		if (!lo->resend_ns)
			continue;
		if (lo->resend_ns > now) {
			if (lo->resend_ns < *next)
				*next = lo->resend_ns;
			continue;
		}
		lo->resend_ns = 0;
		/* returned, revoked or going meanwhile: no resend (invariant 4) */
		if (!lo->recalled || !nfs4_stid_tryget(lo->pl.pl_stid))
			continue;
		lo->resends++;
		*gen = lo->recall_gen;
		return lo->pl.pl_stid;
	}
	return NULL;
}

uint64_t nfs4_layouts_reap(struct nfs4_server *s)
{
	struct nfs4_layout_table *t = s->layouts;
	/* the resends due first: a fence command below may take a while */
	uint64_t next;
	for (;;) {
		uint32_t gen = 0;
		mutex_lock(&t->lock);
		struct nfs4_stid *sp = resend_due_locked(t, now_ns(), &gen, &next);
		mutex_unlock(&t->lock);
		if (!sp)
			break;
		send_recall(s, nfs4_stid_payload(sp), sp, gen, true);
		nfs4_stid_put(sp);
	}

	uint64_t lease = (uint64_t)s->lease_s * NSEC_PER_SEC, now = now_ns();
	for (;;) {
		struct nfs4_stid *sp = NULL;
		struct nfs4_layout copy;
		mutex_lock(&t->lock);
		for (struct nfs4_layout *lo = lo_of(nfs4_pltable_next_locked(t->pl, NULL)); lo && !sp;
		     lo = lo_of(nfs4_pltable_next_locked(t->pl, &lo->pl))) {
			if (lo->recalled && now - lo->recall_ns > lease && now >= lo->fence_retry_ns) {
				lo->recalled = false;
				lo->resend_ns = 0; /* the round is over */
				if (!nfs4_stid_tryget(lo->pl.pl_stid))
					continue; /* going: nothing to fence */
				sp = lo->pl.pl_stid;
				copy = *lo;
			}
		}
		mutex_unlock(&t->lock);
		if (!sp)
			return next;
		if (!fence(s, &copy)) {
			/* still recalled; the reference keeps lo */
			struct nfs4_layout *lo = nfs4_stid_payload(sp);
			mutex_lock(&t->lock);
			lo->recalled = true;
			lo->fence_retry_ns = now_ns() + FENCE_RETRY_NS;
			mutex_unlock(&t->lock);
			nfs4_stid_put(sp);
			continue;
		}
		/* the last reference releases the payload: its leases go,
		 * waiters go on */
		nfs4_stid_revoke(sp, NFS4_REVOKE_RECALL);
		nfs4_stid_put(sp);
	}
}
