/*
 * fuzz_nfs3.c - the NFSv3 argument decoders the server runs: the codecs
 * generated from src/xdr/nfs3.x (docs/xdr.md), one per procedure, as
 * jnfsd's procedure table names them. The first input byte picks the
 * procedure, the rest are its arguments.
 *
 * Invariants: a decoder never reads outside the record nor writes outside
 * its arguments struct (ASan: the struct lives in a buffer of exactly its
 * size), answers 0, -EBADMSG or -E2BIG (a limit of nfs3.bounds), and
 * leaves the stream inside the record; what decodes respects the
 * protocol's limits (handles of at most NFS3_FHSIZE bytes, names of at
 * most the configured 1,024 bytes, paths of at most 4,096, WRITE data of
 * at most 1 MiB), points into the record (names, paths, WRITE data: never
 * copied), holds only values its enumerations define, and encodes back to
 * the bytes it was decoded from (padding aside).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "xdr/nfs3.h"

static const uint8_t *lo, *hi;

/* The argument decoders and encoders of the procedure table. */
struct args_codec {
	int (*dec)(struct xdr_dec *x, void *v);
	int (*enc)(struct xdr_enc *x, const void *v);
	size_t size;
};

#define ARGS(P)                                                                                    \
	[NFSPROC3_##P] = {nfs3_rpc_dec_##P##3args, nfs3_rpc_enc_##P##3args, sizeof(struct P##3args)}
static const struct args_codec procs[] = {
	[NFSPROC3_NULL] = {NULL, NULL, 0},
	ARGS(GETATTR),
	ARGS(SETATTR),
	ARGS(LOOKUP),
	ARGS(ACCESS),
	ARGS(READLINK),
	ARGS(READ),
	ARGS(WRITE),
	ARGS(CREATE),
	ARGS(MKDIR),
	ARGS(SYMLINK),
	ARGS(MKNOD),
	ARGS(REMOVE),
	ARGS(RMDIR),
	ARGS(RENAME),
	ARGS(LINK),
	ARGS(READDIR),
	ARGS(READDIRPLUS),
	ARGS(FSSTAT),
	ARGS(FSINFO),
	ARGS(PATHCONF),
	ARGS(COMMIT),
};
#define NPROCS (sizeof(procs) / sizeof(procs[0]))

static void check_in_record(const void *p, uint32_t len)
{
	if (len)
		FUZZ_CHECK((const uint8_t *)p >= lo && (const uint8_t *)p + len <= hi);
}

static void check_name(const filename3 *n)
{
	FUZZ_CHECK(n->len <= NFS3_LIMIT_filename3);
	check_in_record(n->val, n->len);
}

static void check_path(const nfspath3 *p)
{
	FUZZ_CHECK(p->len <= NFS3_LIMIT_nfspath3);
	check_in_record(p->val, p->len);
}

static void check_fh(const struct nfs_fh3 *fh)
{
	FUZZ_CHECK(fh->data.len <= NFS3_FHSIZE);
}

static void check_sattr(const struct sattr3 *s)
{
	FUZZ_CHECK(s->atime.set_it >= DONT_CHANGE && s->atime.set_it <= SET_TO_CLIENT_TIME);
	FUZZ_CHECK(s->mtime.set_it >= DONT_CHANGE && s->mtime.set_it <= SET_TO_CLIENT_TIME);
}

static void check_dirop(const struct diropargs3 *d)
{
	check_fh(&d->dir);
	check_name(&d->name);
}

static void check_args(uint32_t proc, const void *args)
{
	switch (proc) {
	case NFSPROC3_GETATTR:
	case NFSPROC3_READLINK:
	case NFSPROC3_FSSTAT:
	case NFSPROC3_FSINFO:
	case NFSPROC3_PATHCONF:
	case NFSPROC3_ACCESS:
	case NFSPROC3_READ:
	case NFSPROC3_COMMIT:
		/* each begins with its object's handle */
		check_fh(args);
		break;
	case NFSPROC3_SETATTR: {
		const struct SETATTR3args *a = args;
		check_fh(&a->object);
		check_sattr(&a->new_attributes);
		break;
	}
	case NFSPROC3_LOOKUP:
	case NFSPROC3_REMOVE:
	case NFSPROC3_RMDIR:
		/* each is one diropargs3 */
		check_dirop(args);
		break;
	case NFSPROC3_WRITE: {
		const struct WRITE3args *a = args;
		check_fh(&a->file);
		FUZZ_CHECK(a->stable >= UNSTABLE && a->stable <= FILE_SYNC);
		FUZZ_CHECK(a->data.len <= NFS3_LIMIT_WRITE3args_data);
		check_in_record(a->data.val, a->data.len);
		break;
	}
	case NFSPROC3_CREATE: {
		const struct CREATE3args *a = args;
		check_dirop(&a->where);
		FUZZ_CHECK(a->how.mode >= UNCHECKED && a->how.mode <= EXCLUSIVE);
		if (a->how.mode != EXCLUSIVE)
			check_sattr(&a->how.obj_attributes);
		break;
	}
	case NFSPROC3_MKDIR: {
		const struct MKDIR3args *a = args;
		check_dirop(&a->where);
		check_sattr(&a->attributes);
		break;
	}
	case NFSPROC3_SYMLINK: {
		const struct SYMLINK3args *a = args;
		check_dirop(&a->where);
		check_sattr(&a->symlink.symlink_attributes);
		check_path(&a->symlink.symlink_data);
		break;
	}
	case NFSPROC3_MKNOD: {
		const struct MKNOD3args *a = args;
		check_dirop(&a->where);
		FUZZ_CHECK(a->what.type >= NF3REG && a->what.type <= NF3FIFO);
		if (a->what.type == NF3CHR || a->what.type == NF3BLK)
			check_sattr(&a->what.device.dev_attributes);
		if (a->what.type == NF3SOCK || a->what.type == NF3FIFO)
			check_sattr(&a->what.pipe_attributes);
		break;
	}
	case NFSPROC3_RENAME: {
		const struct RENAME3args *a = args;
		check_dirop(&a->from);
		check_dirop(&a->to);
		break;
	}
	case NFSPROC3_LINK: {
		const struct LINK3args *a = args;
		check_fh(&a->file);
		check_dirop(&a->link);
		break;
	}
	case NFSPROC3_READDIR:
		check_fh(&((const struct READDIR3args *)args)->dir);
		break;
	case NFSPROC3_READDIRPLUS:
		check_fh(&((const struct READDIRPLUS3args *)args)->dir);
		break;
	}
}

/* What decoded encodes back to the bytes it came from; padding, which the
 * input may fill with anything, is written as zeros. */
static void check_round_trip(const struct args_codec *p, const void *args, size_t used)
{
	struct xdr_enc e;
	xdr_enc_init(&e, used + 64);
	FUZZ_CHECK(p->enc(&e, args) == 0);
	FUZZ_CHECK(xdr_enc_len(&e) == used);
	uint8_t *flat = malloc(used ? used : 1);
	FUZZ_CHECK(flat != NULL);
	xdr_enc_flatten(&e, flat);
	for (size_t i = 0; i < used; i++)
		FUZZ_CHECK(flat[i] == lo[i] || flat[i] == 0);
	free(flat);
	xdr_enc_destroy(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint32_t proc = data[0] % NPROCS;
	const struct args_codec *p = &procs[proc];
	if (!p->dec)
		return 0; /* NULL: no arguments */
	lo = data + 1;
	hi = data + size;
	struct xdr_dec x;
	xdr_dec_init(&x, lo, size - 1); /* no arena: NFSv3 arguments need none */
	void *args = calloc(1, p->size);
	FUZZ_CHECK(args != NULL);
	int err = p->dec(&x, args);
	FUZZ_CHECK(err == 0 || err == -EBADMSG || err == -E2BIG);
	FUZZ_CHECK(x.p >= lo && x.p <= hi);
	if (!err) {
		check_args(proc, args);
		check_round_trip(p, args, (size_t)(x.p - lo));
	}
	free(args);
	return 0;
}
