/*
 * optable.c - the NFSv4.1/4.2 operation table and the one translation of
 * engine errors into nfsstat4.
 *
 * One row per operation number, written out in full: its handler, its
 * flags (compound.c applies them before the handler runs) and the bound of
 * its encoded result. Decoding and encoding are the generated codecs' arms
 * of nfs_argop4 and nfs_resop4 (docs/xdr.md), so a row needs no functions
 * of its own for them; a result is encoded with the generated encoder when
 * the op succeeded or carries data on error (OP4_ERRDATA), otherwise as
 * its status alone.
 *
 * Operations that NFSv4.1 forbids (the 4.0 client and open-owner
 * confirmation ops: RFC 8881 §15.2 "MNI") and optional ones jnfs does not
 * offer are rows with OP4_NOTSUPP: NFS4ERR_NOTSUPP, as the RFC asks.
 * docs/nfs4.md lists them.
 */
#include <errno.h>
#include <string.h>

#include "base/msg.h"

#include "nfs4/nfs4_priv.h"

static uint32_t getattr_size(const struct nfs_argop4 *a)
{
	return 16 + 4 * 8 + 4 + 4096 + 128;
}

static uint32_t readdir_size(const struct nfs_argop4 *a)
{
	uint32_t n = a->opreaddir.maxcount;
	return 16 + (n < NFS4_MAXIO ? n : NFS4_MAXIO);
}

static uint32_t readlink_size(const struct nfs_argop4 *a)
{
	return 16 + 4096;
}

static uint32_t lock_size(const struct nfs_argop4 *a)
{
	return 64 + NFS4_OPAQUE_LIMIT;
}

static uint32_t exchange_id_size(const struct nfs_argop4 *a)
{
	return 512;
}

static uint32_t test_stateid_size(const struct nfs_argop4 *a)
{
	return 16 + 4 * a->optest_stateid.ts_stateids.len;
}

#define ROW(op, f, fl, sz) [OP_##op] = {.name = #op, .fn = f, .flags = fl, .reply_size = sz}
#define NOTSUPP(op, fl) [OP_##op] = {.name = #op, .fn = nfs4_op_notsupp, .flags = OP4_NOTSUPP | (fl)}

static uint32_t nfs4_op_notsupp(struct nfs4_compound *c, struct nfs_argop4 *a,
				struct nfs_resop4 *r)
{
	return NFS4ERR_NOTSUPP;
}

/* No delegation is ever handed out: any stateid given back is not one. */
static uint32_t nfs4_op_delegreturn(struct nfs4_compound *c, struct nfs_argop4 *a,
				    struct nfs_resop4 *r)
{
	struct nfs4_stid *sp;
	uint32_t st = nfs4_stid_lookup(c, &a->opdelegreturn.deleg_stateid, NFS4_STID_DELEG, &sp);
	if (st)
		return st;
	nfs4_stid_put(sp);
	return NFS4ERR_BAD_STATEID;
}

const struct nfs4_op nfs4_ops[OP_CLONE + 1] = {
	ROW(ACCESS, nfs4_op_access, OP4_CFH, NULL),
	ROW(CLOSE, nfs4_op_close, OP4_CFH, NULL),
	ROW(COMMIT, nfs4_op_commit, OP4_CFH, NULL),
	ROW(CREATE, nfs4_op_create, OP4_CFH | OP4_MODIFIES | OP4_SETS_CFH, NULL),
	NOTSUPP(DELEGPURGE, 0),
	ROW(DELEGRETURN, nfs4_op_delegreturn, OP4_CFH, NULL),
	ROW(GETATTR, nfs4_op_getattr, OP4_CFH, getattr_size),
	ROW(GETFH, nfs4_op_getfh, OP4_CFH, NULL),
	ROW(LINK, nfs4_op_link, OP4_CFH | OP4_SFH | OP4_MODIFIES, NULL),
	ROW(LOCK, nfs4_op_lock, OP4_CFH | OP4_ERRDATA, lock_size),
	ROW(LOCKT, nfs4_op_lockt, OP4_CFH | OP4_ERRDATA, lock_size),
	ROW(LOCKU, nfs4_op_locku, OP4_CFH, NULL),
	ROW(LOOKUP, nfs4_op_lookup, OP4_CFH | OP4_SETS_CFH, NULL),
	ROW(LOOKUPP, nfs4_op_lookupp, OP4_CFH | OP4_SETS_CFH, NULL),
	ROW(NVERIFY, nfs4_op_nverify, OP4_CFH, NULL),
	ROW(OPEN, nfs4_op_open, OP4_CFH | OP4_SETS_CFH, getattr_size),
	NOTSUPP(OPENATTR, OP4_CFH),
	NOTSUPP(OPEN_CONFIRM, 0),
	ROW(OPEN_DOWNGRADE, nfs4_op_open_downgrade, OP4_CFH, NULL),
	ROW(PUTFH, nfs4_op_putfh, OP4_SETS_CFH, NULL),
	ROW(PUTPUBFH, nfs4_op_putrootfh, OP4_SETS_CFH, NULL),
	ROW(PUTROOTFH, nfs4_op_putrootfh, OP4_SETS_CFH, NULL),
	ROW(READ, nfs4_op_read, OP4_CFH, nfs4_read_reply_size),
	ROW(READDIR, nfs4_op_readdir, OP4_CFH, readdir_size),
	ROW(READLINK, nfs4_op_readlink, OP4_CFH, readlink_size),
	ROW(REMOVE, nfs4_op_remove, OP4_CFH | OP4_MODIFIES, NULL),
	ROW(RENAME, nfs4_op_rename, OP4_CFH | OP4_SFH | OP4_MODIFIES, NULL),
	NOTSUPP(RENEW, 0),
	ROW(RESTOREFH, nfs4_op_restorefh, OP4_SFH | OP4_SETS_CFH, NULL),
	ROW(SAVEFH, nfs4_op_savefh, OP4_CFH, NULL),
	ROW(SECINFO, nfs4_op_secinfo, OP4_CFH | OP4_SETS_CFH, NULL),
	ROW(SETATTR, nfs4_op_setattr, OP4_CFH | OP4_ERRDATA, NULL),
	NOTSUPP(SETCLIENTID, 0),
	NOTSUPP(SETCLIENTID_CONFIRM, 0),
	ROW(VERIFY, nfs4_op_verify, OP4_CFH, NULL),
	ROW(WRITE, nfs4_op_write, OP4_CFH | OP4_MODIFIES, NULL),
	NOTSUPP(RELEASE_LOCKOWNER, 0),
	ROW(BACKCHANNEL_CTL, nfs4_op_backchannel_ctl, 0, NULL),
	ROW(BIND_CONN_TO_SESSION, nfs4_op_bind_conn, OP4_FIRST, NULL),
	ROW(EXCHANGE_ID, nfs4_op_exchange_id, OP4_FIRST, exchange_id_size),
	ROW(CREATE_SESSION, nfs4_op_create_session, OP4_FIRST, NULL),
	ROW(DESTROY_SESSION, nfs4_op_destroy_session, OP4_FIRST, NULL),
	ROW(FREE_STATEID, nfs4_op_free_stateid, 0, NULL),
	NOTSUPP(GET_DIR_DELEGATION, OP4_CFH),
	ROW(GETDEVICEINFO, nfs4_op_getdeviceinfo, OP4_ERRDATA, NULL),
	ROW(GETDEVICELIST, nfs4_op_getdevicelist, OP4_CFH, NULL),
	ROW(LAYOUTCOMMIT, nfs4_op_layoutcommit, OP4_CFH | OP4_MODIFIES, NULL),
	ROW(LAYOUTGET, nfs4_op_layoutget, OP4_CFH | OP4_ERRDATA, nfs4_layoutget_reply_size),
	ROW(LAYOUTRETURN, nfs4_op_layoutreturn, 0, NULL),
	ROW(SECINFO_NO_NAME, nfs4_op_secinfo_no_name, OP4_CFH | OP4_SETS_CFH, NULL),
	ROW(SEQUENCE, nfs4_op_sequence, OP4_FIRST, NULL),
	ROW(SET_SSV, nfs4_op_set_ssv, 0, NULL),
	ROW(TEST_STATEID, nfs4_op_test_stateid, 0, test_stateid_size),
	NOTSUPP(WANT_DELEGATION, OP4_CFH),
	ROW(DESTROY_CLIENTID, nfs4_op_destroy_clientid, OP4_FIRST, NULL),
	ROW(RECLAIM_COMPLETE, nfs4_op_reclaim_complete, 0, NULL),
	ROW(ALLOCATE, nfs4_op_allocate, OP4_V42 | OP4_CFH | OP4_MODIFIES, NULL),
	ROW(COPY, nfs4_op_copy, OP4_V42 | OP4_CFH | OP4_SFH | OP4_MODIFIES, NULL),
	NOTSUPP(COPY_NOTIFY, OP4_V42 | OP4_CFH),
	ROW(DEALLOCATE, nfs4_op_deallocate, OP4_V42 | OP4_CFH | OP4_MODIFIES, NULL),
	NOTSUPP(IO_ADVISE, OP4_V42 | OP4_CFH),
	NOTSUPP(LAYOUTERROR, OP4_V42 | OP4_CFH),
	NOTSUPP(LAYOUTSTATS, OP4_V42 | OP4_CFH),
	NOTSUPP(OFFLOAD_CANCEL, OP4_V42 | OP4_CFH),
	NOTSUPP(OFFLOAD_STATUS, OP4_V42 | OP4_CFH),
	ROW(READ_PLUS, nfs4_op_read_plus, OP4_V42 | OP4_CFH, nfs4_read_plus_reply_size),
	ROW(SEEK, nfs4_op_seek, OP4_V42 | OP4_CFH, NULL),
	NOTSUPP(WRITE_SAME, OP4_V42 | OP4_CFH),
	NOTSUPP(CLONE, OP4_V42 | OP4_CFH),
};

const unsigned nfs4_nops = OP_CLONE + 1;

uint32_t nfs4_status(int err)
{
	switch (err) {
	case 0: return NFS4_OK;
	case -EPERM: return NFS4ERR_PERM;
	case -ENOENT: return NFS4ERR_NOENT;
	case -EIO:
	case -EUCLEAN:
	case -EBADMSG: return NFS4ERR_IO;
	case -ENXIO: return NFS4ERR_NXIO;
	case -EACCES: return NFS4ERR_ACCESS;
	case -EEXIST: return NFS4ERR_EXIST;
	case -EXDEV: return NFS4ERR_XDEV;
	case -ENOTDIR: return NFS4ERR_NOTDIR;
	case -EISDIR: return NFS4ERR_ISDIR;
	case -EINVAL: return NFS4ERR_INVAL;
	case -ELOOP: return NFS4ERR_SYMLINK;
	case -EFBIG: return NFS4ERR_FBIG;
	case -ENOSPC: return NFS4ERR_NOSPC;
	case -EROFS: return NFS4ERR_ROFS;
	case -EMLINK: return NFS4ERR_MLINK;
	case -ENAMETOOLONG: return NFS4ERR_NAMETOOLONG;
	case -ENOTEMPTY: return NFS4ERR_NOTEMPTY;
	case -EDQUOT: return NFS4ERR_DQUOT;
	case -ESTALE: return NFS4ERR_STALE;
	case -SRV_EBADHANDLE: return NFS4ERR_BADHANDLE;
	case -EOPNOTSUPP: return NFS4ERR_NOTSUPP;
	case -EWOULDBLOCK:
	case -EINPROGRESS:
	case -ENOMEM: return NFS4ERR_DELAY;
	case -ECANCELED: return NFS4ERR_NOT_SAME;
	}
	msg_warn("nfs4: unexpected engine error %d (%s)", err, strerror(-err));
	return NFS4ERR_SERVERFAULT;
}
