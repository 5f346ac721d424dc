/*
 * fuzz_nfs3.c - the NFSv3 argument decoders (nfs3_xdr.c), every procedure
 * through its row of the procedure table, as the server runs them. The
 * first input byte picks the procedure, the rest are its arguments.
 * Invariants: a decoder never reads outside the record nor writes outside
 * its zeroed args_size bytes (ASan: the arguments live in a buffer of
 * exactly that size); what decodes respects the protocol's limits (handles
 * of at most 64 bytes, names of at most NFS3_MAXNAME bytes, paths of at
 * most NFS3_MAXPATH, WRITE data of at most NFS3_MAXDATA) and points into
 * the record; enumerations hold values the protocol defines.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "nfs3/nfs3.h"
#include "nfs3/nfs3_xdr.h"

static const uint8_t *lo, *hi;

static void check_name(const struct nfs3_name *n, uint32_t max)
{
	FUZZ_CHECK(n->len <= max);
	if (n->len)
		FUZZ_CHECK((const uint8_t *)n->s >= lo && (const uint8_t *)n->s + n->len <= hi);
}

static void check_fh(const struct nfs3_fh *fh)
{
	FUZZ_CHECK(fh->len <= NFS3_FHSIZE);
}

static void check_sattr(const struct nfs3_sattr *s)
{
	FUZZ_CHECK(s->atime_how <= SET_TO_CLIENT_TIME && s->mtime_how <= SET_TO_CLIENT_TIME);
}

static void check_dirop(const struct nfs3_dirop *d)
{
	check_fh(&d->dir);
	check_name(&d->name, NFS3_MAXNAME);
}

static void check_args(uint32_t proc, const void *args)
{
	switch (proc) {
	case NFS3PROC_GETATTR: case NFS3PROC_READLINK: case NFS3PROC_FSSTAT:
	case NFS3PROC_FSINFO: case NFS3PROC_PATHCONF:
		check_fh(&((const struct nfs3_fh_args *)args)->fh);
		break;
	case NFS3PROC_SETATTR: {
		const struct nfs3_setattr_args *a = args;
		check_fh(&a->fh);
		check_sattr(&a->sattr);
		break;
	}
	case NFS3PROC_LOOKUP: case NFS3PROC_REMOVE: case NFS3PROC_RMDIR:
		check_dirop(&((const struct nfs3_dirop_args *)args)->what);
		break;
	case NFS3PROC_ACCESS:
		check_fh(&((const struct nfs3_access_args *)args)->fh);
		break;
	case NFS3PROC_READ:
		check_fh(&((const struct nfs3_read_args *)args)->fh);
		break;
	case NFS3PROC_WRITE: {
		const struct nfs3_write_args *a = args;
		check_fh(&a->fh);
		FUZZ_CHECK(a->stable <= FILE_SYNC);
		FUZZ_CHECK(a->data.iov_len <= NFS3_MAXDATA);
		if (a->data.iov_len)
			FUZZ_CHECK((const uint8_t *)a->data.iov_base >= lo &&
				   (const uint8_t *)a->data.iov_base + a->data.iov_len <= hi);
		break;
	}
	case NFS3PROC_CREATE: case NFS3PROC_MKDIR: case NFS3PROC_SYMLINK: case NFS3PROC_MKNOD: {
		const struct nfs3_create_args *a = args;
		check_dirop(&a->where);
		check_sattr(&a->sattr);
		check_name(&a->target, NFS3_MAXPATH);
		if (proc == NFS3PROC_CREATE)
			FUZZ_CHECK(a->how <= EXCLUSIVE);
		if (proc == NFS3PROC_MKNOD)
			FUZZ_CHECK(a->how >= NF3REG && a->how <= NF3FIFO);
		break;
	}
	case NFS3PROC_RENAME: {
		const struct nfs3_rename_args *a = args;
		check_dirop(&a->from);
		check_dirop(&a->to);
		break;
	}
	case NFS3PROC_LINK: {
		const struct nfs3_link_args *a = args;
		check_fh(&a->fh);
		check_dirop(&a->link);
		break;
	}
	case NFS3PROC_READDIR: case NFS3PROC_READDIRPLUS: {
		const struct nfs3_readdir_args *a = args;
		check_fh(&a->dir);
		if (proc == NFS3PROC_READDIR)
			FUZZ_CHECK(a->dircount == a->count);
		break;
	}
	case NFS3PROC_COMMIT:
		check_fh(&((const struct nfs3_commit_args *)args)->fh);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint32_t proc = data[0] % NFS3_NPROCS;
	const struct svc_proc *p = &nfs3_version.procs[proc];
	FUZZ_CHECK(p->decode && p->handler && p->encode);
	lo = data + 1;
	hi = data + size;
	struct xdr_dec x;
	xdr_dec_init(&x, lo, size - 1);
	void *args = calloc(1, p->args_size ? p->args_size : 1);
	FUZZ_CHECK(args != NULL);
	int err = p->decode(&x, args);
	FUZZ_CHECK(err == 0 || err == -EBADMSG);
	FUZZ_CHECK(x.p >= lo && x.p <= hi);
	if (!err)
		check_args(proc, args);
	free(args);
	return 0;
}
