/*
 * blk.h - the block layout type of pNFS (RFC 5663) as a client sees it:
 * volume topologies and their signatures, layout extents, the client's
 * extent map of a file, and the layout update a LAYOUTCOMMIT carries. Pure
 * functions over memory (device reads go through a callback), so that the
 * unit tests and pnfs.c run exactly the same arithmetic.
 *
 * Design note.
 *
 * Volumes. GETDEVICEINFO describes a device as an array of volumes whose
 * last one is the whole device (RFC 5663 2.2.2): SIMPLE volumes are found
 * by their signature (every component's bytes at its offset on a disk; a
 * negative offset counts from the disk's end), SLICE, CONCAT and STRIPE
 * volumes are built from volumes earlier in the array. A volume may only
 * name volumes before it, so the topology is a DAG walked in at most
 * NFS4C_BLK_MAX_VOLS steps. nfs4c_blk_topo_resolve() finds each SIMPLE
 * volume on one of the candidate disks and computes every volume's size;
 * nfs4c_blk_topo_map() turns an offset of the whole device into a disk and
 * an offset on it, and how far the mapping stays contiguous.
 *
 * Extents (2.3). An extent maps a block-aligned range of the file to
 * storage in one state: READ_WRITE_DATA (valid, writable), READ_DATA
 * (valid, read only: in an RW layout, the source of copy-on-write),
 * INVALID_DATA (allocated, reads as zeros, written blocks must be
 * committed), NONE_DATA (a hole, no storage). The client's map of a file
 * keeps two lists, each sorted by file offset with no overlap:
 *
 *   rw   extents of RW layouts: READ_WRITE_DATA, INVALID_DATA, NONE_DATA
 *   ro   READ_DATA extents (of either iomode) and the extents of READ
 *        layouts
 *
 * An extent newly given replaces what its list held for its range. A
 * write is planned from rw only; a read from rw first (written data, or
 * the zeros of unwritten blocks no READ_DATA extent covers), then ro.
 *
 * Written INVALID blocks. Once the client wrote blocks of an INVALID_DATA
 * extent they hold its data: the extent is split and those blocks marked
 * `written`, so that a later partial write or read of the same blocks uses
 * the storage instead of zeros. They are the layout update of the next
 * LAYOUTCOMMIT (2.3.2: the blocks written, READ_WRITE_DATA, sorted,
 * disjoint, block-aligned); once it succeeded they are READ_WRITE_DATA.
 *
 * Invariants:
 *  1. Each list is sorted by foff, its extents disjoint, non-empty,
 *     block-aligned (file offset, length and, unless NONE_DATA, storage
 *     offset), and no extent's end overflows.
 *  2. `written` is only ever set on INVALID_DATA extents of rw.
 *  3. A map holds at most NFS4C_BLK_MAX_EXTENTS extents; an addition that
 *     would exceed it fails with nothing changed.
 */
#ifndef JNFS_NFS4C_BLK_H
#define JNFS_NFS4C_BLK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc/xdr.h"
#include "xdr/nfs4.h"
#include "xdr/pnfs_block.h"

#define NFS4C_BLK_MAX_VOLS    64    /* volumes of one device (the codec's bound) */
#define NFS4C_BLK_MAX_SUBS    32    /* volumes a CONCAT or STRIPE names */
#define NFS4C_BLK_MAX_EXTENTS 65536 /* in one file's map */

/* ---- volumes ---------------------------------------------------------- */

struct nfs4c_blk_sig {
	int64_t off; /* from the start of the disk, or its end if negative */
	uint32_t len;
	uint8_t *bytes; /* owned by the topology */
};

struct nfs4c_blk_vol {
	pnfs_block_volume_type4 type;
	uint64_t size; /* bytes; known once resolved */
	/* SIMPLE */
	unsigned nsig;
	struct nfs4c_blk_sig *sig;
	int disk; /* the candidate disk it was found on, -1 before */
	/* SLICE */
	uint64_t start, length;
	/* SLICE (one), CONCAT, STRIPE: volumes of this device, earlier ones */
	unsigned nsub;
	uint32_t sub[NFS4C_BLK_MAX_SUBS];
	/* STRIPE */
	uint64_t unit;
};

struct nfs4c_blk_topo {
	unsigned nvol; /* the last one is the device */
	struct nfs4c_blk_vol vol[NFS4C_BLK_MAX_VOLS];
};

/*
 * Decode a pnfs_block_deviceaddr4 (da_addr_body of GETDEVICEINFO) into t:
 * 0, -EBADMSG when it does not decode or describes no valid topology (no
 * volume, a volume naming itself or a later one, a SLICE of other than
 * one volume, a CONCAT or STRIPE of none, a zero stripe unit, a SIMPLE
 * volume without a signature or with an empty component), -E2BIG past the
 * limits above. Free with nfs4c_blk_topo_free() (also after a failure).
 */
int nfs4c_blk_topo_decode(const uint8_t *body, uint32_t len, struct nfs4c_blk_topo *t);
void nfs4c_blk_topo_free(struct nfs4c_blk_topo *t);

/* Read len bytes at off of candidate disk `disk`: 0 or -errno. */
typedef int (*nfs4c_blk_read_fn)(void *arg, unsigned disk, uint64_t off, void *buf, size_t len);

/*
 * Find every SIMPLE volume on the first of the ndisk candidate disks (of
 * the sizes given) whose bytes match all of its signature components, and
 * compute every volume's size: 0; -ENODEV when a SIMPLE volume is on none
 * of them; -EBADMSG when a SLICE reaches past its volume or a size
 * overflows; a read's error.
 */
int nfs4c_blk_topo_resolve(struct nfs4c_blk_topo *t, unsigned ndisk, const uint64_t *disk_size,
			   nfs4c_blk_read_fn rd, void *arg);

/* Does the signature sig match a disk of disk_size bytes (reading with
 * rd)? 1 yes, 0 no, or a read's -errno. */
int nfs4c_blk_sig_match(const struct nfs4c_blk_sig *sig, unsigned nsig, unsigned disk,
			uint64_t disk_size, nfs4c_blk_read_fn rd, void *arg);

/*
 * Map [off, off + len) of the (resolved) device to a disk: *disk, the
 * offset on it and the bytes from there that stay contiguous on it (at
 * most len). 0, or -ERANGE when off is past the device's end.
 */
int nfs4c_blk_topo_map(const struct nfs4c_blk_topo *t, uint64_t off, uint64_t len, unsigned *disk,
		       uint64_t *disk_off, uint64_t *contig);

/* ---- extents ----------------------------------------------------------- */

struct nfs4c_blk_ext {
	uint64_t foff, len; /* file range */
	uint64_t soff;	    /* offset on the device (not for NONE_DATA) */
	pnfs_block_extent_state4 state;
	layoutiomode4 iomode; /* of the layout that gave it */
	bool written;	      /* INVALID_DATA the client wrote (invariant 2) */
	uint8_t devid[NFS4_DEVICEID4_SIZE];
};

/*
 * Decode a pnfs_block_layout4 (loc_body of a layout4) of iomode into at
 * most max extents: 0, -EBADMSG when it does not decode or an extent is
 * empty, overflows or is not aligned to blksize (a power of two), -E2BIG
 * with more than max extents.
 */
int nfs4c_blk_layout_decode(const uint8_t *body, uint32_t len, layoutiomode4 iomode,
			    uint32_t blksize, struct nfs4c_blk_ext *out, unsigned max, unsigned *n);

/* Encode a pnfs_block_layoutupdate4 listing the extents given (each sent
 * as READ_WRITE_DATA): 0 or the encoder's error. */
int nfs4c_blk_update_encode(struct xdr_enc *x, const struct nfs4c_blk_ext *e, unsigned n);

/* ---- a file's extent map ------------------------------------------------- */

struct nfs4c_blk_list {
	struct nfs4c_blk_ext *e;
	unsigned n, cap;
};

struct nfs4c_blk_map {
	struct nfs4c_blk_list rw, ro;
};

void nfs4c_blk_map_init(struct nfs4c_blk_map *m);
void nfs4c_blk_map_destroy(struct nfs4c_blk_map *m);
unsigned nfs4c_blk_map_count(const struct nfs4c_blk_map *m);

/* Add the extents of one layout (each to its list, replacing what was
 * there for its range, but blocks written and not committed stay written
 * where the new INVALID_DATA extent puts them on the same storage): 0, or
 * -E2BIG past NFS4C_BLK_MAX_EXTENTS with the map unchanged. The extents
 * must satisfy invariant 1 on their own. */
int nfs4c_blk_map_add(struct nfs4c_blk_map *m, const struct nfs4c_blk_ext *e, unsigned n);

/* Forget [off, off + len) (len UINT64_MAX: to the end) of the extents
 * given by layouts of iomode (LAYOUTIOMODE4_ANY: all), e.g. after a
 * return; -E2BIG when a split would exceed the bound (nothing changed). */
int nfs4c_blk_map_remove(struct nfs4c_blk_map *m, layoutiomode4 iomode, uint64_t off, uint64_t len);

/* How a piece of an I/O is done. */
enum nfs4c_blk_how {
	NFS4C_BLK_UNMAPPED = 0, /* no extent: a layout is needed first */
	NFS4C_BLK_DEV,		/* storage at soff of device devid */
	NFS4C_BLK_ZERO,		/* reads as zeros (NONE_DATA, unwritten INVALID_DATA) */
	NFS4C_BLK_HOLE,		/* a write onto NONE_DATA of an RW layout: refused */
	NFS4C_BLK_READONLY,	/* a write where only READ_DATA or a READ layout maps */
};

struct nfs4c_blk_piece {
	uint64_t foff, len;
	enum nfs4c_blk_how how;
	uint64_t soff;
	uint8_t devid[NFS4_DEVICEID4_SIZE];
	/* writes: an INVALID_DATA range not written before. The rest of each
	 * block the write covers only in part must be filled: from the
	 * copy-on-write source if there is one, with zeros otherwise. */
	bool fill;
	bool cow;
	uint64_t cow_soff;
	uint8_t cow_devid[NFS4_DEVICEID4_SIZE];
};

/*
 * The first piece of [off, off + len): where it starts at off, how it is
 * read or written, and how far (p->len <= len) that holds. len > 0.
 */
void nfs4c_blk_map_plan(const struct nfs4c_blk_map *m, bool for_write, uint64_t off, uint64_t len,
			struct nfs4c_blk_piece *p);

/* The blocks [off, off + len) (block-aligned) of rw's INVALID_DATA
 * extents were written: mark them (splitting extents). 0 or -E2BIG. */
int nfs4c_blk_map_mark_written(struct nfs4c_blk_map *m, uint64_t off, uint64_t len);

/* The written INVALID_DATA ranges, merged where file and storage are both
 * contiguous on one device, in file order: at most max into out, *n of
 * them, *more set when some did not fit. */
void nfs4c_blk_map_pending(const struct nfs4c_blk_map *m, struct nfs4c_blk_ext *out, unsigned max,
			   unsigned *n, bool *more);

/* A LAYOUTCOMMIT of those ranges succeeded: they are READ_WRITE_DATA now
 * (only what is still written INVALID_DATA within them changes). */
void nfs4c_blk_map_committed(struct nfs4c_blk_map *m, const struct nfs4c_blk_ext *e, unsigned n);

/* Is every byte of [off, off + len) in an extent that can be written
 * (READ_WRITE_DATA or INVALID_DATA of rw)? / read (any extent)? */
bool nfs4c_blk_map_covers(const struct nfs4c_blk_map *m, bool for_write, uint64_t off,
			  uint64_t len);

#endif
