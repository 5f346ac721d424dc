/*
 * attr.c - fattr4 values: decoding a GETATTR's into struct nfs4c_attr and
 * encoding what CREATE, OPEN and SETATTR set.
 *
 * An fattr4 is a bitmap and the XDR encodings of the attributes it names,
 * in bit order, with no lengths in between: one attribute whose type is
 * unknown hides where every later one starts. So each value is decoded
 * with its own generated decoder, found by name (fattr4_<name> in
 * nfs4_xdr_types[]) once, for every attribute nfs4.x defines - also those
 * the client does not keep, so they can be stepped over. Array-valued
 * attributes (ACLs, locations) decode from a local arena with a cap and
 * are dropped, except fs_layout_types, whose first entries are kept.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/msg.h"
#include "nfs4c/nfs4c_priv.h"

#define ATTR_ARENA_CAP (1u << 20)

static const char *const attr_names[] = {
	[FATTR4_SUPPORTED_ATTRS] = "supported_attrs",
	[FATTR4_TYPE] = "type",
	[FATTR4_FH_EXPIRE_TYPE] = "fh_expire_type",
	[FATTR4_CHANGE] = "change",
	[FATTR4_SIZE] = "size",
	[FATTR4_LINK_SUPPORT] = "link_support",
	[FATTR4_SYMLINK_SUPPORT] = "symlink_support",
	[FATTR4_NAMED_ATTR] = "named_attr",
	[FATTR4_FSID] = "fsid",
	[FATTR4_UNIQUE_HANDLES] = "unique_handles",
	[FATTR4_LEASE_TIME] = "lease_time",
	[FATTR4_RDATTR_ERROR] = "rdattr_error",
	[FATTR4_ACL] = "acl",
	[FATTR4_ACLSUPPORT] = "aclsupport",
	[FATTR4_ARCHIVE] = "archive",
	[FATTR4_CANSETTIME] = "cansettime",
	[FATTR4_CASE_INSENSITIVE] = "case_insensitive",
	[FATTR4_CASE_PRESERVING] = "case_preserving",
	[FATTR4_CHOWN_RESTRICTED] = "chown_restricted",
	[FATTR4_FILEHANDLE] = "filehandle",
	[FATTR4_FILEID] = "fileid",
	[FATTR4_FILES_AVAIL] = "files_avail",
	[FATTR4_FILES_FREE] = "files_free",
	[FATTR4_FILES_TOTAL] = "files_total",
	[FATTR4_FS_LOCATIONS] = "fs_locations",
	[FATTR4_HIDDEN] = "hidden",
	[FATTR4_HOMOGENEOUS] = "homogeneous",
	[FATTR4_MAXFILESIZE] = "maxfilesize",
	[FATTR4_MAXLINK] = "maxlink",
	[FATTR4_MAXNAME] = "maxname",
	[FATTR4_MAXREAD] = "maxread",
	[FATTR4_MAXWRITE] = "maxwrite",
	[FATTR4_MIMETYPE] = "mimetype",
	[FATTR4_MODE] = "mode",
	[FATTR4_NO_TRUNC] = "no_trunc",
	[FATTR4_NUMLINKS] = "numlinks",
	[FATTR4_OWNER] = "owner",
	[FATTR4_OWNER_GROUP] = "owner_group",
	[FATTR4_QUOTA_AVAIL_HARD] = "quota_avail_hard",
	[FATTR4_QUOTA_AVAIL_SOFT] = "quota_avail_soft",
	[FATTR4_QUOTA_USED] = "quota_used",
	[FATTR4_RAWDEV] = "rawdev",
	[FATTR4_SPACE_AVAIL] = "space_avail",
	[FATTR4_SPACE_FREE] = "space_free",
	[FATTR4_SPACE_TOTAL] = "space_total",
	[FATTR4_SPACE_USED] = "space_used",
	[FATTR4_SYSTEM] = "system",
	[FATTR4_TIME_ACCESS] = "time_access",
	[FATTR4_TIME_ACCESS_SET] = "time_access_set",
	[FATTR4_TIME_BACKUP] = "time_backup",
	[FATTR4_TIME_CREATE] = "time_create",
	[FATTR4_TIME_DELTA] = "time_delta",
	[FATTR4_TIME_METADATA] = "time_metadata",
	[FATTR4_TIME_MODIFY] = "time_modify",
	[FATTR4_TIME_MODIFY_SET] = "time_modify_set",
	[FATTR4_MOUNTED_ON_FILEID] = "mounted_on_fileid",
	[FATTR4_DIR_NOTIF_DELAY] = "dir_notif_delay",
	[FATTR4_DIRENT_NOTIF_DELAY] = "dirent_notif_delay",
	[FATTR4_DACL] = "dacl",
	[FATTR4_SACL] = "sacl",
	[FATTR4_CHANGE_POLICY] = "change_policy",
	[FATTR4_FS_STATUS] = "fs_status",
	[FATTR4_FS_LAYOUT_TYPES] = "fs_layout_types",
	[FATTR4_LAYOUT_HINT] = "layout_hint",
	[FATTR4_LAYOUT_TYPES] = "layout_types",
	[FATTR4_LAYOUT_BLKSIZE] = "layout_blksize",
	[FATTR4_LAYOUT_ALIGNMENT] = "layout_alignment",
	[FATTR4_FS_LOCATIONS_INFO] = "fs_locations_info",
	[FATTR4_MDSTHRESHOLD] = "mdsthreshold",
	[FATTR4_RETENTION_GET] = "retention_get",
	[FATTR4_RETENTION_SET] = "retention_set",
	[FATTR4_RETENTEVT_GET] = "retentevt_get",
	[FATTR4_RETENTEVT_SET] = "retentevt_set",
	[FATTR4_RETENTION_HOLD] = "retention_hold",
	[FATTR4_MODE_SET_MASKED] = "mode_set_masked",
	[FATTR4_SUPPATTR_EXCLCREAT] = "suppattr_exclcreat",
	[FATTR4_FS_CHARSET_CAP] = "fs_charset_cap",
	[FATTR4_CLONE_BLKSIZE] = "clone_blksize",
	[FATTR4_SPACE_FREED] = "space_freed",
	[FATTR4_CHANGE_ATTR_TYPE] = "change_attr_type",
	[FATTR4_SEC_LABEL] = "sec_label",
};

#define NATTRS ARRAY_SIZE(attr_names)

/* Every attribute value decodes into this (its type's member). */
union attr_val {
	bitmap4 bm;
	nfs_ftype4 type;
	nfsstat4 status;
	uint32_t u32;
	uint64_t u64;
	struct fsid4 fsid;
	nfs_fh4 fh;
	utf8string str;
	struct specdata4 spec;
	struct nfstime4 time;
	fattr4_fs_layout_types layout_types;
	uint8_t any[512];
};

static const struct xdr_type *attr_types[NATTRS];
static pthread_once_t attr_once = PTHREAD_ONCE_INIT;

static void attr_resolve(void)
{
	char name[64];
	for (size_t bit = 0; bit < NATTRS; bit++) {
		if (!attr_names[bit])
			continue;
		snprintf(name, sizeof(name), "fattr4_%s", attr_names[bit]);
		for (unsigned i = 0; i < nfs4_xdr_ntypes; i++) {
			if (strcmp(nfs4_xdr_types[i].name, name))
				continue;
			/* the buffer every value decodes into must hold it */
			BUG_ON(nfs4_xdr_types[i].size > sizeof(union attr_val));
			attr_types[bit] = &nfs4_xdr_types[i];
			break;
		}
		BUG_ON(!attr_types[bit]);
	}
}

/* "1000" -> 1000; anything else (a name@domain) -> UINT32_MAX. */
static uint32_t parse_id(const utf8string *s, char *copy, size_t cap)
{
	size_t n = MIN((size_t)s->len, cap - 1);
	memcpy(copy, s->val, n);
	copy[n] = '\0';
	if (s->len == 0 || s->len > 10)
		return UINT32_MAX;
	uint64_t v = 0;
	for (uint32_t i = 0; i < s->len; i++) {
		if (s->val[i] < '0' || s->val[i] > '9')
			return UINT32_MAX;
		v = v * 10 + (uint64_t)(s->val[i] - '0');
	}
	return v > UINT32_MAX - 1 ? UINT32_MAX : (uint32_t)v;
}

static void attr_store(struct nfs4c_attr *a, unsigned bit, const union attr_val *v)
{
	switch (bit) {
	case FATTR4_SUPPORTED_ATTRS:
		a->supported = v->bm;
		break;
	case FATTR4_TYPE:
		a->type = v->type;
		break;
	case FATTR4_CHANGE:
		a->change = v->u64;
		break;
	case FATTR4_SIZE:
		a->size = v->u64;
		break;
	case FATTR4_FSID:
		a->fsid = v->fsid;
		break;
	case FATTR4_LEASE_TIME:
		a->lease_time = v->u32;
		break;
	case FATTR4_RDATTR_ERROR:
		a->rdattr_error = v->status;
		break;
	case FATTR4_FILEHANDLE:
		a->fh.len = v->fh.len;
		memcpy(a->fh.val, v->fh.val, v->fh.len);
		break;
	case FATTR4_FILEID:
		a->fileid = v->u64;
		break;
	case FATTR4_FILES_AVAIL:
		a->files_avail = v->u64;
		break;
	case FATTR4_FILES_FREE:
		a->files_free = v->u64;
		break;
	case FATTR4_FILES_TOTAL:
		a->files_total = v->u64;
		break;
	case FATTR4_MAXFILESIZE:
		a->maxfilesize = v->u64;
		break;
	case FATTR4_MAXNAME:
		a->maxname = v->u32;
		break;
	case FATTR4_MAXREAD:
		a->maxread = v->u64;
		break;
	case FATTR4_MAXWRITE:
		a->maxwrite = v->u64;
		break;
	case FATTR4_MODE:
		a->mode = v->u32;
		break;
	case FATTR4_NUMLINKS:
		a->nlink = v->u32;
		break;
	case FATTR4_OWNER:
		a->uid = parse_id(&v->str, a->owner, sizeof(a->owner));
		break;
	case FATTR4_OWNER_GROUP:
		a->gid = parse_id(&v->str, a->group, sizeof(a->group));
		break;
	case FATTR4_RAWDEV:
		a->rawdev = v->spec;
		break;
	case FATTR4_SPACE_AVAIL:
		a->space_avail = v->u64;
		break;
	case FATTR4_SPACE_FREE:
		a->space_free = v->u64;
		break;
	case FATTR4_SPACE_TOTAL:
		a->space_total = v->u64;
		break;
	case FATTR4_SPACE_USED:
		a->space_used = v->u64;
		break;
	case FATTR4_TIME_ACCESS:
		a->atime = v->time;
		break;
	case FATTR4_TIME_CREATE:
		a->btime = v->time;
		break;
	case FATTR4_TIME_METADATA:
		a->ctime = v->time;
		break;
	case FATTR4_TIME_MODIFY:
		a->mtime = v->time;
		break;
	case FATTR4_MOUNTED_ON_FILEID:
		a->mounted_on_fileid = v->u64;
		break;
	case FATTR4_LAYOUT_BLKSIZE:
		a->layout_blksize = v->u32;
		break;
	case FATTR4_FS_LAYOUT_TYPES:
		a->nlayout_types = MIN(v->layout_types.len, (uint32_t)ARRAY_SIZE(a->layout_types));
		for (uint32_t i = 0; i < a->nlayout_types; i++)
			a->layout_types[i] = v->layout_types.val[i];
		break;
	default:
		break; /* decoded to be stepped over */
	}
}

int nfs4c_attr_decode(const struct fattr4 *f, struct nfs4c_attr *a)
{
	uint8_t first[1024] __attribute__((aligned(16)));
	struct xdr_arena arena;
	struct xdr_dec x;
	union attr_val v;
	int err = 0;

	pthread_once(&attr_once, attr_resolve);
	memset(a, 0, sizeof(*a));
	a->uid = a->gid = UINT32_MAX;
	xdr_arena_init(&arena, first, sizeof(first), ATTR_ARENA_CAP);
	xdr_dec_init(&x, f->attr_vals.val, f->attr_vals.len);
	x.arena = &arena;
	for (uint32_t w = 0; w < f->attrmask.len && !err; w++) {
		for (unsigned b = 0; b < 32 && !err; b++) {
			if (!(f->attrmask.val[w] >> b & 1))
				continue;
			unsigned bit = w * 32 + b;
			if (bit >= NATTRS || !attr_types[bit]) {
				err = -ENOTSUP;
				break;
			}
			memset(&v, 0, sizeof(v));
			err = attr_types[bit]->dec(&x, &v);
			if (err) {
				err = err == -E2BIG ? -E2BIG : -EBADMSG;
				break;
			}
			attr_store(a, bit, &v);
			nfs4c_bitmap_set(&a->have, bit);
		}
	}
	if (!err && xdr_dec_remaining(&x))
		err = -EBADMSG; /* values the bitmap does not name */
	xdr_arena_reset(&arena);
	return err;
}

void nfs4c_bitmap_std(bitmap4 *bm)
{
	static const unsigned bits[] = {
		FATTR4_TYPE,	      FATTR4_CHANGE,	  FATTR4_SIZE,
		FATTR4_FSID,	      FATTR4_FILEID,	  FATTR4_MODE,
		FATTR4_NUMLINKS,      FATTR4_OWNER,	  FATTR4_OWNER_GROUP,
		FATTR4_RAWDEV,	      FATTR4_SPACE_USED,  FATTR4_TIME_ACCESS,
		FATTR4_TIME_METADATA, FATTR4_TIME_MODIFY, FATTR4_MOUNTED_ON_FILEID,
	};
	memset(bm, 0, sizeof(*bm));
	for (size_t i = 0; i < ARRAY_SIZE(bits); i++)
		nfs4c_bitmap_set(bm, bits[i]);
}

static int enc_id(struct xdr_enc *x, uint32_t id)
{
	char s[16];
	int n = snprintf(s, sizeof(s), "%u", id);
	utf8string u = {(uint32_t)n, (const uint8_t *)s};
	return nfs4_enc_utf8string(x, &u);
}

static int enc_settime(struct xdr_enc *x, bool now, const struct nfstime4 *t)
{
	struct settime4 st = {.set_it = now ? SET_TO_SERVER_TIME4 : SET_TO_CLIENT_TIME4};
	if (!now)
		st.time = *t;
	return nfs4_enc_settime4(x, &st);
}

int nfs4c_sattr_encode(struct nfs4c_compound *c, const struct nfs4c_sattr *sa, struct fattr4 *f)
{
	struct xdr_enc x;
	uint8_t buf[256];
	int err = 0;

	memset(f, 0, sizeof(*f));
	xdr_enc_init_buf(&x, buf, sizeof(buf), 4096);
	/* in bit order: size 4, mode 33, owner 36, owner_group 37,
	 * time_access_set 48, time_modify_set 54 */
	if (sa->set & NFS4C_SA_SIZE) {
		nfs4c_bitmap_set(&f->attrmask, FATTR4_SIZE);
		err = err ? err : xdr_enc_u64(&x, sa->size);
	}
	if (sa->set & NFS4C_SA_MODE) {
		nfs4c_bitmap_set(&f->attrmask, FATTR4_MODE);
		err = err ? err : xdr_enc_u32(&x, sa->mode);
	}
	if (sa->set & NFS4C_SA_UID) {
		nfs4c_bitmap_set(&f->attrmask, FATTR4_OWNER);
		err = err ? err : enc_id(&x, sa->uid);
	}
	if (sa->set & NFS4C_SA_GID) {
		nfs4c_bitmap_set(&f->attrmask, FATTR4_OWNER_GROUP);
		err = err ? err : enc_id(&x, sa->gid);
	}
	if (sa->set & NFS4C_SA_ATIME) {
		nfs4c_bitmap_set(&f->attrmask, FATTR4_TIME_ACCESS_SET);
		err = err ? err : enc_settime(&x, sa->atime_now, &sa->atime);
	}
	if (sa->set & NFS4C_SA_MTIME) {
		nfs4c_bitmap_set(&f->attrmask, FATTR4_TIME_MODIFY_SET);
		err = err ? err : enc_settime(&x, sa->mtime_now, &sa->mtime);
	}
	if (!err && xdr_enc_len(&x)) {
		uint8_t *p = nfs4c_scratch(c, xdr_enc_len(&x));
		if (p) {
			xdr_enc_flatten(&x, p);
			f->attr_vals.len = (uint32_t)xdr_enc_len(&x);
			f->attr_vals.val = p;
		} else {
			err = -E2BIG;
		}
	}
	xdr_enc_destroy(&x);
	if (err)
		c->build_err = c->build_err ? c->build_err : -E2BIG;
	return err ? -E2BIG : 0;
}
