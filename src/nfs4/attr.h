/*
 * attr.h - NFSv4 file attributes (RFC 8881 §5): the fattr4 bitmap and the
 * values behind it, encoded for GETATTR, READDIR and VERIFY/NVERIFY, and
 * decoded for SETATTR, CREATE and OPEN.
 *
 * Design note.
 *
 * One table row per attribute number says whether jnfs supports it,
 * whether a client may set it, and how its value is encoded (and decoded,
 * for the settable ones). Everything else follows from the table: the
 * supported_attrs bitmap, suppattr_exclcreat, and the answers to a bitmap
 * that names what the server does not know.
 *
 * Encoding an object's attributes needs its engine attributes (struct
 * fs_attr), facts about the filesystem it lives in (struct nfs4_fsinfo:
 * fsid, limits, layout types) and, only when a space or file-count
 * attribute is asked for, the filesystem's statistics, fetched once per
 * object through a callback. Values are written in attribute-number order
 * into attr_vals, as RFC 8881 §5.2 requires; the returned bitmap has a bit
 * for each value written and nothing else.
 *
 * Rules kept:
 *  1. A requested attribute the server does not support is left out of the
 *     returned bitmap (GETATTR never fails for it); words of the request
 *     bitmap beyond the attributes the server knows are ignored.
 *  2. SETATTR-style decoding (and VERIFY/NVERIFY) answers ATTRNOTSUPP for
 *     an unsupported attribute, one past the words the server knows too,
 *     INVAL for a supported one that cannot be set (read-only,
 *     RFC 8881 §18.30.3), BADXDR when the values do not parse or do not
 *     fill attr_vals exactly, BADOWNER for an owner that is not a number.
 *  3. Owners are numeric strings ("0", "1000"), as the Linux client sends
 *     when no id mapper runs; jnfs keeps no name service.
 *  4. Times set by the client must have nseconds < 10^9 (INVAL otherwise).
 *  5. VERIFY/NVERIFY compare the encoded bytes of the requested attributes
 *     with the client's, so both sides of the comparison use this file.
 */
#ifndef JNFS_NFS4_ATTR_H
#define JNFS_NFS4_ATTR_H

#include <stdbool.h>
#include <stdint.h>

#include "fs/fs.h"
#include "rpc/xdr.h"

/* Words of an attribute bitmap the server looks at (attributes 0-95). */
#define NFS4_ATTR_WORDS 3

struct nfs4_bitmap {
	uint32_t w[NFS4_ATTR_WORDS];
};

static inline bool nfs4_bm_isset(const struct nfs4_bitmap *b, unsigned n)
{
	return n < 32 * NFS4_ATTR_WORDS && (b->w[n / 32] >> (n % 32)) & 1;
}

static inline void nfs4_bm_set(struct nfs4_bitmap *b, unsigned n)
{
	if (n < 32 * NFS4_ATTR_WORDS)
		b->w[n / 32] |= 1u << (n % 32);
}

/* A bitmap4 from the wire (any number of words) as the words we know.
 * False when a later word has a bit set: an attribute the server does not
 * know, which GETATTR ignores (rule 1) and whoever sets or compares
 * attributes answers with ATTRNOTSUPP (rule 2). */
bool nfs4_bm_from_wire(struct nfs4_bitmap *b, const uint32_t *w, uint32_t n);
/* Encode b as a bitmap4 without trailing zero words. */
int nfs4_bm_encode(struct xdr_enc *x, const struct nfs4_bitmap *b);

/* What an object's filesystem contributes (constant per export). */
struct nfs4_fsinfo {
	uint64_t fsid_major, fsid_minor;
	uint32_t lease_time; /* seconds */
	uint64_t maxfilesize;
	uint32_t maxread, maxwrite;
	uint32_t maxname;
	uint32_t layout_types;	 /* bit n: layouttype4 n offered on this fs (0: none) */
	uint32_t layout_blksize; /* with layout types */
	/* Space and file counts (fetched only when asked for). */
	int (*statfs)(void *arg, struct fs_statfs *st);
	void *statfs_arg;
};

/* One object whose attributes are encoded. */
struct nfs4_attr_obj {
	const struct fs_attr *a;
	const struct nfs4_fsinfo *fsi;
	const void *fh; /* its file handle */
	uint32_t fh_len;
	uint64_t mounted_on_fileid; /* the fileid, or what the object is mounted on */
	uint32_t rdattr_error;	    /* READDIR: why the attributes could not be read */
};

/* The attributes jnfs supports, and those that may be set at an
 * EXCLUSIVE4_1 create (the verifier lives in the times). */
const struct nfs4_bitmap *nfs4_attr_supported(void);
const struct nfs4_bitmap *nfs4_attr_exclcreat(void);

/*
 * Encode the values of the requested attributes of obj, in attribute
 * order, into vals (attr_vals without its length word); *ret gets the
 * bitmap of what was written. Returns 0, -EMSGSIZE if the stream is full,
 * or the -errno of a failed statfs.
 */
int nfs4_attr_values(struct xdr_enc *vals, const struct nfs4_bitmap *req,
		     const struct nfs4_attr_obj *obj, struct nfs4_bitmap *ret);

/* Attributes a client asks to set (SETATTR, CREATE, OPEN). */
#define NFS4_SA_SIZE  0x01u
#define NFS4_SA_MODE  0x02u
#define NFS4_SA_UID   0x04u
#define NFS4_SA_GID   0x08u
#define NFS4_SA_ATIME 0x10u /* to .atime, or now with .atime_now */
#define NFS4_SA_MTIME 0x20u

struct nfs4_sattr {
	unsigned mask;
	uint64_t size;
	uint32_t mode; /* permission bits (07777) */
	uint32_t uid, gid;
	bool atime_now, mtime_now;
	struct timespec atime, mtime;
	struct nfs4_bitmap set; /* the bits decoded: SETATTR's attrsset */
};

/*
 * Decode the values of a fattr4 a client sent (bitmap as decoded from the
 * wire, vals = attr_vals). Returns an nfsstat4: NFS4_OK, or one of the
 * errors of rule 2.
 */
uint32_t nfs4_attr_decode(const struct nfs4_bitmap *bm, const void *vals, uint32_t len,
			  struct nfs4_sattr *out);

/*
 * VERIFY (want_same) / NVERIFY: NFS4_OK when the client's values for the
 * attributes in bm are the same (differ), NFS4ERR_NOT_SAME (NFS4ERR_SAME)
 * otherwise; ATTRNOTSUPP for an unsupported attribute, INVAL for
 * rdattr_error or a write-only one (RFC 8881 §18.31.3).
 */
uint32_t nfs4_attr_verify(const struct nfs4_bitmap *bm, const void *vals, uint32_t len,
			  const struct nfs4_attr_obj *obj, bool want_same);

#endif
