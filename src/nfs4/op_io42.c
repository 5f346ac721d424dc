/*
 * op_io42.c - the NFSv4.2 data operations (RFC 7862): ALLOCATE, DEALLOCATE,
 * SEEK, COPY (synchronous, within this server), READ_PLUS.
 *
 * ALLOCATE and DEALLOCATE change metadata like SETATTR does, so on a sync
 * export the compound replies once the journal holds them (docs/design.md
 * rule 7). COPY copies on the server with the engine's copy, at most
 * COPY_MAX bytes per operation (the client asks again for the rest, as
 * RFC 7862 §15.2.3 allows a short copy), and answers UNSTABLE4 with the
 * write verifier: the client COMMITs, as after unstable WRITEs. It is
 * always done before the reply (cr_synchronous), so no COPY stateid or
 * CB_OFFLOAD is ever needed; copies from other servers are not offered
 * (NOTSUPP for a non-empty ca_source_server). READ_PLUS returns holes as
 * holes, found with the engine's SEEK.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "nfs4/nfs4_priv.h"
#include "srv/vfs.h"

/* The most one COPY copies before it replies. */
#define COPY_MAX (64ull << 20)
/* Segments (data or hole) one READ_PLUS returns at most. */
#define READ_PLUS_SEGS 16

/* A regular file of an export as the current (or saved) filehandle. */
static uint32_t reg_file(const struct nfs4_fh *fh, struct fs_attr *at)
{
	if (fh->kind == NFS4_FH_PSEUDO)
		return NFS4ERR_ISDIR;
	int err = fs_getattr(fh->ip, at);
	if (err)
		return nfs4_status(err);
	if (S_ISREG(at->mode))
		return NFS4_OK;
	return S_ISDIR(at->mode) ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
}

/* A byte range that must lie within what a file may hold. */
static uint32_t range_ok(uint64_t off, uint64_t len)
{
	if (len > UINT64_MAX - off)
		return NFS4ERR_INVAL;
	return off + len > FS_MAX_FILE_SIZE ? NFS4ERR_FBIG : NFS4_OK;
}

static uint32_t falloc(struct nfs4_compound *c, const struct stateid4 *sid, uint64_t off,
		       uint64_t len, int mode)
{
	struct fs_attr at;
	uint32_t st;
	if ((st = reg_file(&c->cfh, &at)) || (st = nfs4_check_io_stateid(c, sid, c->cfh.ip, true)))
		return st;
	if (len == 0)
		return NFS4ERR_INVAL;
	if ((st = range_ok(off, len)))
		return st;
	struct fs_result res = {0};
	int err = srv_fallocate(&c->cfh.exp, c->cfh.ip, mode, off, len, &res);
	if (c->cfh.exp.opts->sync)
		nfs4_note_change(c, res.csn, false);
	return err ? nfs4_err_on(c, err, c->cfh.ip) : NFS4_OK;
}

uint32_t nfs4_op_allocate(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct ALLOCATE4args *aa = &a->opallocate;
	return falloc(c, &aa->aa_stateid, aa->aa_offset, aa->aa_length, FS_FALLOC_ALLOC);
}

uint32_t nfs4_op_deallocate(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct DEALLOCATE4args *da = &a->opdeallocate;
	return falloc(c, &da->da_stateid, da->da_offset, da->da_length,
		      FS_FALLOC_PUNCH | FS_FALLOC_KEEP_SIZE);
}

uint32_t nfs4_op_seek(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct SEEK4args *sa = &a->opseek;
	struct seek_res4 *ok = &r->opseek.resok4;
	struct fs_attr at;
	uint32_t st;
	if (sa->sa_what != NFS4_CONTENT_DATA && sa->sa_what != NFS4_CONTENT_HOLE)
		return NFS4ERR_UNION_NOTSUPP;
	if ((st = reg_file(&c->cfh, &at)) ||
	    (st = nfs4_check_io_stateid(c, &sa->sa_stateid, c->cfh.ip, false)))
		return st;
	int err = srv_may_read(&c->cfh.exp, c->cfh.ip);
	if (err)
		return nfs4_status(err);
	/* as lseek(2): at or past the end there is nothing, not even a hole
	 * (NXIO, which the client turns into ENXIO) */
	if (sa->sa_offset >= at.size)
		return NFS4ERR_NXIO;
	uint64_t out;
	err = fs_seek(c->cfh.ip, sa->sa_offset,
		      sa->sa_what == NFS4_CONTENT_DATA ? FS_SEEK_DATA : FS_SEEK_HOLE, &out);
	if (err)
		return nfs4_status(err);
	ok->sr_offset = out;
	ok->sr_eof = out >= at.size;
	return NFS4_OK;
}

uint32_t nfs4_op_copy(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct COPY4args *ca = &a->opcopy;
	struct COPY4resok *ok = &r->opcopy.cr_resok4;
	struct fs_attr sat, dat;
	uint32_t st;
	if (ca->ca_source_server.len)
		return NFS4ERR_NOTSUPP; /* no inter-server copy */
	/* the saved filehandle is the source, the current one the target */
	if ((st = reg_file(&c->sfh, &sat)) || (st = reg_file(&c->cfh, &dat)))
		return st;
	if (c->sfh.exp.ex != c->cfh.exp.ex)
		return NFS4ERR_XDEV;
	if ((st = nfs4_check_io_stateid(c, &ca->ca_src_stateid, c->sfh.ip, false)) ||
	    (st = nfs4_check_io_stateid(c, &ca->ca_dst_stateid, c->cfh.ip, true)))
		return st;
	uint64_t len = ca->ca_count;
	if (ca->ca_src_offset > sat.size)
		return NFS4ERR_INVAL; /* RFC 7862 §15.2.3 */
	if (len == 0 || len > sat.size - ca->ca_src_offset)
		len = sat.size - ca->ca_src_offset; /* 0: to the end of the source */
	if (len > COPY_MAX)
		len = COPY_MAX;
	if ((st = range_ok(ca->ca_dst_offset, len ? len : 1)))
		return st;
	/* within one file, the ranges may not overlap */
	if (c->sfh.ip == c->cfh.ip && len && ca->ca_src_offset < ca->ca_dst_offset + len &&
	    ca->ca_dst_offset < ca->ca_src_offset + len)
		return NFS4ERR_INVAL;
	uint64_t copied = 0;
	struct fs_result res = {0};
	srv_write_verf(c->s->srv, ok->cr_response.wr_writeverf);
	int err = len ? srv_copy(&c->cfh.exp, c->sfh.ip, ca->ca_src_offset, c->cfh.ip,
				 ca->ca_dst_offset, len, &copied, &res)
		      : 0;
	if (err)
		return nfs4_err_on(c, err, c->cfh.ip);
	ok->cr_response.wr_callback_id.len = 0;
	ok->cr_response.wr_count = copied;
	ok->cr_response.wr_committed = UNSTABLE4;
	ok->cr_requirements.cr_consecutive = true;
	ok->cr_requirements.cr_synchronous = true;
	return NFS4_OK;
}

uint32_t nfs4_read_plus_reply_size(const struct nfs_argop4 *a)
{
	uint32_t count =
		a->opread_plus.rpa_count < NFS4_MAXIO ? a->opread_plus.rpa_count : NFS4_MAXIO;
	return 16 + READ_PLUS_SEGS * 24 + count;
}

uint32_t nfs4_op_read_plus(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct READ_PLUS4args *ra = &a->opread_plus;
	struct read_plus_res4 *ok = &r->opread_plus.rp_resok4;
	struct fs_attr at;
	uint32_t st;
	int err;
	if ((st = reg_file(&c->cfh, &at)) ||
	    (st = nfs4_check_io_stateid(c, &ra->rpa_stateid, c->cfh.ip, false)))
		return st;
	if ((err = srv_may_read(&c->cfh.exp, c->cfh.ip)))
		return nfs4_status(err);
	uint64_t end = ra->rpa_offset + (ra->rpa_count < NFS4_MAXIO ? ra->rpa_count : NFS4_MAXIO);
	if (end < ra->rpa_offset || end > at.size)
		end = at.size;
	struct read_plus_content *seg = nfs4_res_alloc(c, READ_PLUS_SEGS * sizeof(*seg));
	uint8_t *buf = end > ra->rpa_offset ? iobuf_alloc(end - ra->rpa_offset) : NULL;
	if (!seg || (buf && !nfs4_res_keep(c, buf))) {
		iobuf_free(buf);
		return NFS4ERR_REP_TOO_BIG;
	}
	uint32_t n = 0;
	uint64_t pos = ra->rpa_offset, used = 0;
	while (pos < end && n < READ_PLUS_SEGS) {
		uint64_t data;
		err = fs_seek(c->cfh.ip, pos, FS_SEEK_DATA, &data);
		if (err == -ENXIO)
			data = end; /* a hole to the end */
		else if (err)
			return nfs4_status(err);
		if (data > pos) {
			uint64_t hend = data < end ? data : end;
			seg[n].rpc_content = NFS4_CONTENT_HOLE;
			seg[n].rpc_hole.di_offset = pos;
			seg[n].rpc_hole.di_length = hend - pos;
			n++;
			pos = hend;
			continue;
		}
		uint64_t hole;
		if ((err = fs_seek(c->cfh.ip, pos, FS_SEEK_HOLE, &hole)))
			return nfs4_status(err);
		uint64_t dend = hole < end ? hole : end;
		size_t got = 0;
		bool eof = false;
		if ((err = fs_read(c->cfh.ip, pos, buf + used, dend - pos, &got, &eof)))
			return nfs4_status(err);
		if (!got)
			break;
		seg[n].rpc_content = NFS4_CONTENT_DATA;
		seg[n].rpc_data.d_offset = pos;
		seg[n].rpc_data.d_data.len = (uint32_t)got;
		seg[n].rpc_data.d_data.val = buf + used;
		n++;
		used += got;
		pos += got;
	}
	ok->rpr_eof = pos >= at.size;
	ok->rpr_contents.len = n;
	ok->rpr_contents.val = seg;
	return NFS4_OK;
}
