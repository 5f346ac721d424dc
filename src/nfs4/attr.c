/*
 * attr.c - NFSv4 file attributes (see attr.h).
 */
#include "nfs4/attr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "base/mem.h"
#include "xdr/nfs4.h"

/* What one encoder may need besides the object: statfs, fetched once. */
struct attr_enc {
	const struct nfs4_attr_obj *obj;
	struct fs_statfs st;
	bool have_st;
	int st_err;
};

typedef int (*attr_enc_fn)(struct xdr_enc *x, struct attr_enc *e);
typedef uint32_t (*attr_dec_fn)(struct xdr_dec *x, struct nfs4_sattr *sa);

#define A_SET  0x1u /* a client may set it */
#define A_EXCL 0x2u /* ... also at an EXCLUSIVE4_1 create */

struct attr_row {
	const char *name;
	attr_enc_fn enc; /* NULL: not supported (or write-only, see dec) */
	attr_dec_fn dec; /* settable attributes only */
	unsigned flags;
};

static const struct fs_statfs *need_statfs(struct attr_enc *e)
{
	if (!e->have_st) {
		e->have_st = true;
		e->st_err = e->obj->fsi->statfs(e->obj->fsi->statfs_arg, &e->st);
	}
	return e->st_err ? NULL : &e->st;
}

/* ---- encoders, in attribute-number order ---- */

static int enc_supported(struct xdr_enc *x, struct attr_enc *e)
{
	return nfs4_bm_encode(x, nfs4_attr_supported());
}

static int enc_type(struct xdr_enc *x, struct attr_enc *e)
{
	uint32_t t;
	switch (e->obj->a->mode & S_IFMT) {
	case S_IFDIR:
		t = NF4DIR;
		break;
	case S_IFLNK:
		t = NF4LNK;
		break;
	case S_IFBLK:
		t = NF4BLK;
		break;
	case S_IFCHR:
		t = NF4CHR;
		break;
	case S_IFSOCK:
		t = NF4SOCK;
		break;
	case S_IFIFO:
		t = NF4FIFO;
		break;
	default:
		t = NF4REG;
		break;
	}
	return xdr_enc_u32(x, t);
}

/* Handles outlive restarts and renames (export/fh.h). */
static int enc_fh_expire_type(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, FH4_PERSISTENT);
}

static int enc_change(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u64(x, e->obj->a->change);
}

static int enc_size(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u64(x, e->obj->a->size);
}

static int enc_true(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_bool(x, true);
}

static int enc_false(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_bool(x, false);
}

static int enc_fsid(struct xdr_enc *x, struct attr_enc *e)
{
	int err = xdr_enc_u64(x, e->obj->fsi->fsid_major);
	return err ? err : xdr_enc_u64(x, e->obj->fsi->fsid_minor);
}

static int enc_lease_time(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, e->obj->fsi->lease_time);
}

static int enc_rdattr_error(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, e->obj->rdattr_error);
}

/* No ACL types: the mode is the whole of the permissions. */
static int enc_aclsupport(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, 0);
}

static int enc_filehandle(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_opaque(x, e->obj->fh, e->obj->fh_len);
}

static int enc_fileid(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u64(x, e->obj->a->ino);
}

static int enc_files_avail(struct xdr_enc *x, struct attr_enc *e)
{
	const struct fs_statfs *st = need_statfs(e);
	return st ? xdr_enc_u64(x, st->ffree) : e->st_err;
}

static int enc_files_total(struct xdr_enc *x, struct attr_enc *e)
{
	const struct fs_statfs *st = need_statfs(e);
	return st ? xdr_enc_u64(x, st->files) : e->st_err;
}

static int enc_maxfilesize(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u64(x, e->obj->fsi->maxfilesize);
}

/* The engine keeps link counts in 32 bits. */
static int enc_maxlink(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, UINT32_MAX);
}

static int enc_maxname(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, e->obj->fsi->maxname);
}

static int enc_maxread(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u64(x, e->obj->fsi->maxread);
}

static int enc_maxwrite(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u64(x, e->obj->fsi->maxwrite);
}

static int enc_mode(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, e->obj->a->mode & 07777);
}

static int enc_numlinks(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, e->obj->a->nlink);
}

static int enc_id(struct xdr_enc *x, uint32_t id)
{
	char s[16];
	snprintf(s, sizeof(s), "%u", id);
	return xdr_enc_string(x, s);
}

static int enc_owner(struct xdr_enc *x, struct attr_enc *e)
{
	return enc_id(x, e->obj->a->uid);
}

static int enc_owner_group(struct xdr_enc *x, struct attr_enc *e)
{
	return enc_id(x, e->obj->a->gid);
}

static int enc_rawdev(struct xdr_enc *x, struct attr_enc *e)
{
	int err = xdr_enc_u32(x, major(e->obj->a->rdev));
	return err ? err : xdr_enc_u32(x, minor(e->obj->a->rdev));
}

static int enc_space_avail(struct xdr_enc *x, struct attr_enc *e)
{
	const struct fs_statfs *st = need_statfs(e);
	return st ? xdr_enc_u64(x, st->bfree * st->bsize) : e->st_err;
}

static int enc_space_total(struct xdr_enc *x, struct attr_enc *e)
{
	const struct fs_statfs *st = need_statfs(e);
	return st ? xdr_enc_u64(x, st->blocks * st->bsize) : e->st_err;
}

static int enc_space_used(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u64(x, e->obj->a->used);
}

static int enc_time(struct xdr_enc *x, struct timespec t)
{
	int err = xdr_enc_i64(x, t.tv_sec);
	return err ? err : xdr_enc_u32(x, (uint32_t)t.tv_nsec);
}

static int enc_time_access(struct xdr_enc *x, struct attr_enc *e)
{
	return enc_time(x, e->obj->a->atime);
}

static int enc_time_create(struct xdr_enc *x, struct attr_enc *e)
{
	return enc_time(x, e->obj->a->btime);
}

/* Times are kept to the nanosecond. */
static int enc_time_delta(struct xdr_enc *x, struct attr_enc *e)
{
	return enc_time(x, (struct timespec){.tv_sec = 0, .tv_nsec = 1});
}

static int enc_time_metadata(struct xdr_enc *x, struct attr_enc *e)
{
	return enc_time(x, e->obj->a->ctime);
}

static int enc_time_modify(struct xdr_enc *x, struct attr_enc *e)
{
	return enc_time(x, e->obj->a->mtime);
}

static int enc_mounted_on_fileid(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u64(x, e->obj->mounted_on_fileid);
}

static int enc_fs_layout_types(struct xdr_enc *x, struct attr_enc *e)
{
	uint32_t types = e->obj->fsi->layout_types, n = (uint32_t)__builtin_popcount(types);
	int err = xdr_enc_u32(x, n);
	for (unsigned t = 0; !err && t < 32; t++)
		if (types & (1u << t))
			err = xdr_enc_u32(x, t);
	return err;
}

static int enc_layout_blksize(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, e->obj->fsi->layout_blksize);
}

static int enc_suppattr_exclcreat(struct xdr_enc *x, struct attr_enc *e)
{
	return nfs4_bm_encode(x, nfs4_attr_exclcreat());
}

/* The change attribute grows by at least one on every change and is kept
 * in the inode, so it survives restarts (RFC 7862 §12.2.3). */
static int enc_change_attr_type(struct xdr_enc *x, struct attr_enc *e)
{
	return xdr_enc_u32(x, NFS4_CHANGE_TYPE_IS_MONOTONIC_INCR);
}

/* ---- decoders of settable attributes ---- */

static uint32_t dec_size(struct xdr_dec *x, struct nfs4_sattr *sa)
{
	if (xdr_dec_u64(x, &sa->size))
		return NFS4ERR_BADXDR;
	sa->mask |= NFS4_SA_SIZE;
	return NFS4_OK;
}

static uint32_t dec_mode(struct xdr_dec *x, struct nfs4_sattr *sa)
{
	if (xdr_dec_u32(x, &sa->mode))
		return NFS4ERR_BADXDR;
	if (sa->mode & ~07777u)
		return NFS4ERR_INVAL;
	sa->mask |= NFS4_SA_MODE;
	return NFS4_OK;
}

/* A numeric owner string (rule 3). */
static uint32_t dec_id(struct xdr_dec *x, uint32_t *id)
{
	const char *s;
	uint32_t len;
	if (xdr_dec_string_ref(x, NFS4_OPAQUE_LIMIT, &s, &len))
		return NFS4ERR_BADXDR;
	if (len == 0 || len > 10)
		return NFS4ERR_BADOWNER;
	uint64_t v = 0;
	for (uint32_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return NFS4ERR_BADOWNER;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return NFS4ERR_BADOWNER;
	*id = (uint32_t)v;
	return NFS4_OK;
}

static uint32_t dec_owner(struct xdr_dec *x, struct nfs4_sattr *sa)
{
	uint32_t st = dec_id(x, &sa->uid);
	if (!st)
		sa->mask |= NFS4_SA_UID;
	return st;
}

static uint32_t dec_owner_group(struct xdr_dec *x, struct nfs4_sattr *sa)
{
	uint32_t st = dec_id(x, &sa->gid);
	if (!st)
		sa->mask |= NFS4_SA_GID;
	return st;
}

/* settime4: SET_TO_SERVER_TIME4, or SET_TO_CLIENT_TIME4 and an nfstime4. */
static uint32_t dec_settime(struct xdr_dec *x, bool *now, struct timespec *t)
{
	uint32_t how, nsec;
	int64_t sec;
	if (xdr_dec_u32(x, &how))
		return NFS4ERR_BADXDR;
	if (how == SET_TO_SERVER_TIME4) {
		*now = true;
		return NFS4_OK;
	}
	if (how != SET_TO_CLIENT_TIME4)
		return NFS4ERR_BADXDR;
	if (xdr_dec_i64(x, &sec) || xdr_dec_u32(x, &nsec))
		return NFS4ERR_BADXDR;
	if (nsec >= 1000000000u)
		return NFS4ERR_INVAL;
	*now = false;
	*t = (struct timespec){.tv_sec = sec, .tv_nsec = nsec};
	return NFS4_OK;
}

static uint32_t dec_time_access_set(struct xdr_dec *x, struct nfs4_sattr *sa)
{
	uint32_t st = dec_settime(x, &sa->atime_now, &sa->atime);
	if (!st)
		sa->mask |= NFS4_SA_ATIME;
	return st;
}

static uint32_t dec_time_modify_set(struct xdr_dec *x, struct nfs4_sattr *sa)
{
	uint32_t st = dec_settime(x, &sa->mtime_now, &sa->mtime);
	if (!st)
		sa->mask |= NFS4_SA_MTIME;
	return st;
}

/* ---- the table ---- */

#define R(n, e)	      [FATTR4_##n] = {.name = #n, .enc = e}
#define W(n, e, d, f) [FATTR4_##n] = {.name = #n, .enc = e, .dec = d, .flags = A_SET | (f)}

static const struct attr_row attrs[32 * NFS4_ATTR_WORDS] = {
	R(SUPPORTED_ATTRS, enc_supported),
	R(TYPE, enc_type),
	R(FH_EXPIRE_TYPE, enc_fh_expire_type),
	R(CHANGE, enc_change),
	W(SIZE, enc_size, dec_size, A_EXCL),
	R(LINK_SUPPORT, enc_true),
	R(SYMLINK_SUPPORT, enc_true),
	R(NAMED_ATTR, enc_false),
	R(FSID, enc_fsid),
	R(UNIQUE_HANDLES, enc_true),
	R(LEASE_TIME, enc_lease_time),
	R(RDATTR_ERROR, enc_rdattr_error),
	R(ACLSUPPORT, enc_aclsupport),
	R(CANSETTIME, enc_true),
	R(CASE_INSENSITIVE, enc_false),
	R(CASE_PRESERVING, enc_true),
	R(CHOWN_RESTRICTED, enc_true),
	R(FILEHANDLE, enc_filehandle),
	R(FILEID, enc_fileid),
	R(FILES_AVAIL, enc_files_avail),
	R(FILES_FREE, enc_files_avail),
	R(FILES_TOTAL, enc_files_total),
	R(HOMOGENEOUS, enc_true),
	R(MAXFILESIZE, enc_maxfilesize),
	R(MAXLINK, enc_maxlink),
	R(MAXNAME, enc_maxname),
	R(MAXREAD, enc_maxread),
	R(MAXWRITE, enc_maxwrite),
	W(MODE, enc_mode, dec_mode, A_EXCL),
	R(NO_TRUNC, enc_true),
	R(NUMLINKS, enc_numlinks),
	W(OWNER, enc_owner, dec_owner, A_EXCL),
	W(OWNER_GROUP, enc_owner_group, dec_owner_group, A_EXCL),
	R(RAWDEV, enc_rawdev),
	R(SPACE_AVAIL, enc_space_avail),
	R(SPACE_FREE, enc_space_avail),
	R(SPACE_TOTAL, enc_space_total),
	R(SPACE_USED, enc_space_used),
	R(TIME_ACCESS, enc_time_access),
	W(TIME_ACCESS_SET, NULL, dec_time_access_set, 0),
	R(TIME_CREATE, enc_time_create),
	R(TIME_DELTA, enc_time_delta),
	R(TIME_METADATA, enc_time_metadata),
	R(TIME_MODIFY, enc_time_modify),
	W(TIME_MODIFY_SET, NULL, dec_time_modify_set, 0),
	R(MOUNTED_ON_FILEID, enc_mounted_on_fileid),
	R(FS_LAYOUT_TYPES, enc_fs_layout_types),
	R(LAYOUT_BLKSIZE, enc_layout_blksize),
	R(SUPPATTR_EXCLCREAT, enc_suppattr_exclcreat),
	R(CHANGE_ATTR_TYPE, enc_change_attr_type),
};

static struct nfs4_bitmap supported, exclcreat;

static void attr_tables_init(void)
{
	static _Atomic bool done;
	if (done)
		return;
	struct nfs4_bitmap s = {{0}}, e = {{0}};
	for (unsigned n = 0; n < 32 * NFS4_ATTR_WORDS; n++) {
		if (attrs[n].enc || attrs[n].dec)
			nfs4_bm_set(&s, n);
		if (attrs[n].flags & A_EXCL)
			nfs4_bm_set(&e, n);
	}
	/* the same values from every thread: a racing second writer is harmless */
	supported = s;
	exclcreat = e;
	done = true;
}

const struct nfs4_bitmap *nfs4_attr_supported(void)
{
	attr_tables_init();
	return &supported;
}

const struct nfs4_bitmap *nfs4_attr_exclcreat(void)
{
	attr_tables_init();
	return &exclcreat;
}

/* ---- bitmaps ---- */

bool nfs4_bm_from_wire(struct nfs4_bitmap *b, const uint32_t *w, uint32_t n)
{
	bool known = true;
	memset(b, 0, sizeof(*b));
	for (uint32_t i = 0; i < n; i++) {
		if (i < NFS4_ATTR_WORDS)
			b->w[i] = w[i];
		else if (w[i])
			known = false;
	}
	return known;
}

int nfs4_bm_encode(struct xdr_enc *x, const struct nfs4_bitmap *b)
{
	uint32_t n = NFS4_ATTR_WORDS;
	while (n && !b->w[n - 1])
		n--;
	int err = xdr_enc_u32(x, n);
	for (uint32_t i = 0; !err && i < n; i++)
		err = xdr_enc_u32(x, b->w[i]);
	return err;
}

/* ---- encoding ---- */

int nfs4_attr_values(struct xdr_enc *x, const struct nfs4_bitmap *req,
		     const struct nfs4_attr_obj *obj, struct nfs4_bitmap *ret)
{
	struct xdr_mark start = xdr_enc_mark(x);
	struct attr_enc e = {.obj = obj};
	attr_tables_init();
	memset(ret, 0, sizeof(*ret));
	for (unsigned n = 0; n < 32 * NFS4_ATTR_WORDS; n++) {
		if (!nfs4_bm_isset(req, n) || !attrs[n].enc)
			continue;
		int err = attrs[n].enc(x, &e);
		if (err) {
			xdr_enc_rollback(x, start);
			return err;
		}
		nfs4_bm_set(ret, n);
	}
	return 0;
}

/* ---- decoding ---- */

uint32_t nfs4_attr_decode(const struct nfs4_bitmap *bm, const void *vals, uint32_t len,
			  struct nfs4_sattr *out)
{
	struct xdr_dec x;
	memset(out, 0, sizeof(*out));
	xdr_dec_init(&x, vals, len);
	attr_tables_init();
	for (unsigned n = 0; n < 32 * NFS4_ATTR_WORDS; n++) {
		if (!nfs4_bm_isset(bm, n))
			continue;
		if (!attrs[n].enc && !attrs[n].dec)
			return NFS4ERR_ATTRNOTSUPP;
		if (!attrs[n].dec)
			return NFS4ERR_INVAL;
		uint32_t st = attrs[n].dec(&x, out);
		if (st)
			return st;
		nfs4_bm_set(&out->set, n);
	}
	return xdr_dec_remaining(&x) ? NFS4ERR_BADXDR : NFS4_OK;
}

uint32_t nfs4_attr_verify(const struct nfs4_bitmap *bm, const void *vals, uint32_t len,
			  const struct nfs4_attr_obj *obj, bool want_same)
{
	attr_tables_init();
	for (unsigned n = 0; n < 32 * NFS4_ATTR_WORDS; n++) {
		if (!nfs4_bm_isset(bm, n))
			continue;
		if (!attrs[n].enc && !attrs[n].dec)
			return NFS4ERR_ATTRNOTSUPP;
		if (!attrs[n].enc || n == FATTR4_RDATTR_ERROR)
			return NFS4ERR_INVAL;
	}
	struct xdr_enc x;
	struct nfs4_bitmap ret;
	uint32_t st;
	xdr_enc_init(&x, 64u << 10);
	int err = nfs4_attr_values(&x, bm, obj, &ret);
	if (err) {
		st = err == -EMSGSIZE ? NFS4ERR_INVAL : NFS4ERR_IO; /* no attribute is that large */
		goto out;
	}
	size_t mlen = xdr_enc_len(&x);
	uint8_t *mine = xmalloc(mlen ? mlen : 1);
	xdr_enc_flatten(&x, mine);
	bool same = mlen == len && !memcmp(mine, vals, len);
	free(mine);
	st = same == want_same ? NFS4_OK : (want_same ? NFS4ERR_NOT_SAME : NFS4ERR_SAME);
out:
	xdr_enc_destroy(&x);
	return st;
}
