/*
 * op_io.c - READ, WRITE and COMMIT (RFC 8881 §18.22, §18.32, §18.3).
 *
 * WRITE is as stable as the client asked (docs/design.md rule 8):
 * UNSTABLE4 writes the data and waits for nothing; DATA_SYNC4 and
 * FILE_SYNC4 note the inode's datasync or commit sequence, so the compound
 * replies once the journal holds it and the data device holds the data
 * (rule 5); COMMIT is an fsync of the whole file. The write verifier is
 * the shared server layer's (srv_write_verf), read before the data goes to
 * the engine for WRITE and before the sync for COMMIT, so a failed data
 * flush before it shows as a changed verifier; one after it, whoever ran
 * it, fails a stable WRITE and a COMMIT with NFS4ERR_IO (srv.h S1: both
 * read the data mark first).
 *
 * READ data is read into a buffer the reply splices in without a copy; it
 * is freed when the reply has been sent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "nfs4/nfs4_priv.h"
#include "srv/vfs.h"

/* The current filehandle as a regular file of an export. */
static uint32_t cur_file(struct nfs4_compound *c, struct fs_attr *at)
{
	if (c->cfh.kind == NFS4_FH_PSEUDO)
		return NFS4ERR_ISDIR;
	int err = fs_getattr(c->cfh.ip, at);
	if (err)
		return nfs4_status(err);
	if (S_ISREG(at->mode))
		return NFS4_OK;
	if (S_ISDIR(at->mode))
		return NFS4ERR_ISDIR;
	if (S_ISLNK(at->mode))
		return NFS4ERR_SYMLINK;
	return NFS4ERR_INVAL;
}

uint32_t nfs4_read_reply_size(const struct nfs_argop4 *a)
{
	uint32_t count = a->opread.count < NFS4_MAXIO ? a->opread.count : NFS4_MAXIO;
	return 16 + count;
}

uint32_t nfs4_op_read(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct READ4args *ra = &a->opread;
	struct READ4resok *ok = &r->opread.resok4;
	struct fs_attr at;
	uint32_t st;
	int err;
	if ((st = cur_file(c, &at)) ||
	    (st = nfs4_check_io_stateid(c, &ra->stateid, c->cfh.ip, false)))
		return st;
	if ((err = srv_may_read(&c->cfh.exp, c->cfh.ip)))
		return nfs4_status(err);
	uint32_t count = ra->count < NFS4_MAXIO ? ra->count : NFS4_MAXIO;
	/* what is left of the reply the session allows */
	if (c->maxresp) {
		size_t used = xdr_enc_len(&c->enc) + SVC_REPLY_HDR + 16;
		size_t room = c->maxresp > used ? c->maxresp - used : 0;
		if (count > room)
			count = (uint32_t)room;
	}
	size_t n = 0;
	bool eof = false;
	/* aligned for direct I/O when large (the device reads straight into
	 * it), and from the buffer cache (base/iobuf.h) */
	uint8_t *buf = iobuf_alloc(count);
	if (!nfs4_res_keep(c, buf)) {
		iobuf_free(buf);
		return NFS4ERR_REP_TOO_BIG;
	}
	err = fs_read(c->cfh.ip, ra->offset, buf, count, &n, &eof);
	if (err)
		return nfs4_status(err); /* buf goes with the results */
	ok->eof = eof;
	ok->data.len = (uint32_t)n;
	ok->data.val = buf;
	return NFS4_OK;
}

uint32_t nfs4_op_write(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct WRITE4args *wa = &a->opwrite;
	struct WRITE4resok *ok = &r->opwrite.resok4;
	struct fs_attr at;
	uint32_t st;
	int err;
	if (wa->stable < UNSTABLE4 || wa->stable > FILE_SYNC4)
		return NFS4ERR_INVAL;
	if ((st = cur_file(c, &at)) ||
	    (st = nfs4_check_io_stateid(c, &wa->stateid, c->cfh.ip, true)))
		return st;
	if (wa->offset > FS_MAX_FILE_SIZE || wa->data.len > FS_MAX_FILE_SIZE - wa->offset)
		return NFS4ERR_FBIG;
	if (wa->stable != UNSTABLE4)
		nfs4_mark_data(c); /* srv.h S1 */
	srv_write_verf(c->s->srv, ok->writeverf);
	struct fs_result res = {0};
	bool logged;
	err = srv_write(&c->cfh.exp, c->cfh.ip, wa->offset, wa->data.val, wa->data.len,
			wa->stable != UNSTABLE4, &res, &logged);
	if (err)
		return nfs4_err_on(c, err, c->cfh.ip);
	ok->count = wa->data.len;
	ok->committed = wa->stable;
	/* data logged with its metadata (docs/logged-data.md): the force is
	 * all its stability needs */
	if (wa->stable != UNSTABLE4)
		nfs4_note_change(c, fs_sync_seq(c->cfh.ip, wa->stable == DATA_SYNC4), !logged);
	return NFS4_OK;
}

uint32_t nfs4_op_commit(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct fs_attr at;
	uint32_t st;
	int err;
	if ((st = cur_file(c, &at)))
		return st;
	if (a->opcommit.count && a->opcommit.offset > UINT64_MAX - a->opcommit.count)
		return NFS4ERR_INVAL;
	if ((err = srv_may_commit(&c->cfh.exp, c->cfh.ip)))
		return nfs4_status(err);
	/* the engine tracks durability per inode, not per range: an fsync */
	nfs4_note_change(c, fs_sync_seq(c->cfh.ip, false), true);
	/* the verifier as it will be once the sync is done: a flush that
	 * fails meanwhile, this COMMIT's own or anyone's (the mark, srv.h
	 * S1, read first), fails this COMMIT (compound_failed) */
	nfs4_mark_data(c);
	srv_write_verf(c->s->srv, r->opcommit.resok4.writeverf);
	return NFS4_OK;
}
