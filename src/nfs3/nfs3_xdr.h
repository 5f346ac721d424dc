/*
 * nfs3_xdr.h - NFSv3 (RFC 1813) and MOUNT v3 protocol types, and their
 * decoders and encoders. Decoders work on the request's record buffer
 * (names and WRITE data point into it and live as long as the request);
 * encoders never free anything (the procedures' release hooks do).
 */
#ifndef JNFS_NFS3_NFS3_XDR_H
#define JNFS_NFS3_NFS3_XDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rpc/xdr.h"

#define NFS_PROGRAM   100003
#define MOUNT_PROGRAM 100005

#define NFS3_FHSIZE    64
#define NFS3_VERFSIZE  8
#define NFS3_MAXNAME   1024 /* decoded; longer than 255 is NAMETOOLONG */
#define NFS3_MAXPATH   4096
#define NFS3_MAXDATA   (1u << 20)

enum nfs3_proc {
	NFS3PROC_NULL, NFS3PROC_GETATTR, NFS3PROC_SETATTR, NFS3PROC_LOOKUP, NFS3PROC_ACCESS,
	NFS3PROC_READLINK, NFS3PROC_READ, NFS3PROC_WRITE, NFS3PROC_CREATE, NFS3PROC_MKDIR,
	NFS3PROC_SYMLINK, NFS3PROC_MKNOD, NFS3PROC_REMOVE, NFS3PROC_RMDIR, NFS3PROC_RENAME,
	NFS3PROC_LINK, NFS3PROC_READDIR, NFS3PROC_READDIRPLUS, NFS3PROC_FSSTAT, NFS3PROC_FSINFO,
	NFS3PROC_PATHCONF, NFS3PROC_COMMIT, NFS3_NPROCS
};

enum nfsstat3 {
	NFS3_OK = 0,
	NFS3ERR_PERM = 1,
	NFS3ERR_NOENT = 2,
	NFS3ERR_IO = 5,
	NFS3ERR_NXIO = 6,
	NFS3ERR_ACCES = 13,
	NFS3ERR_EXIST = 17,
	NFS3ERR_XDEV = 18,
	NFS3ERR_NODEV = 19,
	NFS3ERR_NOTDIR = 20,
	NFS3ERR_ISDIR = 21,
	NFS3ERR_INVAL = 22,
	NFS3ERR_FBIG = 27,
	NFS3ERR_NOSPC = 28,
	NFS3ERR_ROFS = 30,
	NFS3ERR_MLINK = 31,
	NFS3ERR_NAMETOOLONG = 63,
	NFS3ERR_NOTEMPTY = 66,
	NFS3ERR_DQUOT = 69,
	NFS3ERR_STALE = 70,
	NFS3ERR_REMOTE = 71,
	NFS3ERR_BADHANDLE = 10001,
	NFS3ERR_NOT_SYNC = 10002,
	NFS3ERR_BAD_COOKIE = 10003,
	NFS3ERR_NOTSUPP = 10004,
	NFS3ERR_TOOSMALL = 10005,
	NFS3ERR_SERVERFAULT = 10006,
	NFS3ERR_BADTYPE = 10007,
	NFS3ERR_JUKEBOX = 10008,
};

enum ftype3 { NF3REG = 1, NF3DIR, NF3BLK, NF3CHR, NF3LNK, NF3SOCK, NF3FIFO };
enum stable_how { UNSTABLE = 0, DATA_SYNC = 1, FILE_SYNC = 2 };
enum createmode3 { UNCHECKED = 0, GUARDED = 1, EXCLUSIVE = 2 };
enum time_how { DONT_CHANGE = 0, SET_TO_SERVER_TIME = 1, SET_TO_CLIENT_TIME = 2 };

#define ACCESS3_READ    0x01
#define ACCESS3_LOOKUP  0x02
#define ACCESS3_MODIFY  0x04
#define ACCESS3_EXTEND  0x08
#define ACCESS3_DELETE  0x10
#define ACCESS3_EXECUTE 0x20

struct nfs3_fh {
	uint32_t len;
	uint8_t data[NFS3_FHSIZE];
};

struct nfs3_time {
	uint32_t sec, nsec;
};

struct nfs3_fattr {
	uint32_t type, mode, nlink, uid, gid;
	uint64_t size, used;
	uint32_t rdev_major, rdev_minor;
	uint64_t fsid, fileid;
	struct nfs3_time atime, mtime, ctime;
};

struct nfs3_post_attr {
	bool present;
	struct nfs3_fattr a;
};

struct nfs3_wcc {
	bool pre_present;
	uint64_t pre_size;
	struct nfs3_time pre_mtime, pre_ctime;
	struct nfs3_post_attr post;
};

struct nfs3_sattr {
	bool set_mode, set_uid, set_gid, set_size;
	uint32_t mode, uid, gid;
	uint64_t size;
	uint32_t atime_how, mtime_how;
	struct nfs3_time atime, mtime;
};

struct nfs3_name {
	const char *s; /* into the request; not NUL-terminated */
	uint32_t len;
};

struct nfs3_dirop {
	struct nfs3_fh dir;
	struct nfs3_name name;
};

/* ---- arguments and results ---- */

struct nfs3_fh_args {
	struct nfs3_fh fh;
};

struct nfs3_getattr_res {
	uint32_t status;
	struct nfs3_fattr attr;
};

struct nfs3_setattr_args {
	struct nfs3_fh fh;
	struct nfs3_sattr sattr;
	bool guard;
	struct nfs3_time guard_ctime;
};

struct nfs3_wcc_res {
	uint32_t status;
	struct nfs3_wcc wcc;
};

struct nfs3_dirop_args {
	struct nfs3_dirop what;
};

struct nfs3_lookup_res {
	uint32_t status;
	struct nfs3_fh fh;
	struct nfs3_post_attr obj, dir;
};

struct nfs3_access_args {
	struct nfs3_fh fh;
	uint32_t access;
};

struct nfs3_access_res {
	uint32_t status;
	struct nfs3_post_attr obj;
	uint32_t access;
};

struct nfs3_readlink_res {
	uint32_t status;
	struct nfs3_post_attr obj;
	char *path; /* freed by release */
	uint32_t len;
};

struct nfs3_read_args {
	struct nfs3_fh fh;
	uint64_t offset;
	uint32_t count;
};

struct nfs3_read_res {
	uint32_t status;
	struct nfs3_post_attr obj;
	uint32_t count;
	bool eof;
	uint8_t *data; /* freed by release */
};

struct nfs3_write_args {
	struct nfs3_fh fh;
	uint64_t offset;
	uint32_t count, stable;
	struct iovec data; /* into the request */
};

struct nfs3_write_res {
	uint32_t status;
	struct nfs3_wcc wcc;
	uint32_t count, committed;
	uint8_t verf[NFS3_VERFSIZE];
};

struct nfs3_create_args {
	struct nfs3_dirop where;
	uint32_t how; /* createmode3, or the ftype3 of MKNOD */
	struct nfs3_sattr sattr;
	uint8_t verf[NFS3_VERFSIZE];
	struct nfs3_name target; /* SYMLINK */
	uint32_t major, minor;   /* MKNOD */
};

struct nfs3_create_res {
	uint32_t status;
	bool fh_present;
	struct nfs3_fh fh;
	struct nfs3_post_attr obj;
	struct nfs3_wcc dir;
};

struct nfs3_rename_args {
	struct nfs3_dirop from, to;
};

struct nfs3_rename_res {
	uint32_t status;
	struct nfs3_wcc from, to;
};

struct nfs3_link_args {
	struct nfs3_fh fh;
	struct nfs3_dirop link;
};

struct nfs3_link_res {
	uint32_t status;
	struct nfs3_post_attr obj;
	struct nfs3_wcc dir;
};

struct nfs3_readdir_args {
	struct nfs3_fh dir;
	uint64_t cookie;
	uint8_t verf[NFS3_VERFSIZE];
	uint32_t dircount, count; /* READDIR: dircount == count */
};

struct nfs3_dirent {
	uint64_t fileid, cookie;
	char *name; /* into the result's name arena */
	uint32_t namelen;
	struct nfs3_post_attr attr; /* READDIRPLUS */
	bool fh_present;
	struct nfs3_fh fh;
};

struct nfs3_readdir_res {
	uint32_t status;
	bool plus;
	struct nfs3_post_attr dir;
	uint8_t verf[NFS3_VERFSIZE];
	struct nfs3_dirent *ents; /* freed by release */
	uint32_t nents;
	char *names;              /* freed by release */
	bool eof;
};

struct nfs3_fsstat_res {
	uint32_t status;
	struct nfs3_post_attr obj;
	uint64_t tbytes, fbytes, abytes, tfiles, ffiles, afiles;
	uint32_t invarsec;
};

struct nfs3_fsinfo_res {
	uint32_t status;
	struct nfs3_post_attr obj;
	uint32_t rtmax, rtpref, rtmult, wtmax, wtpref, wtmult, dtpref;
	uint64_t maxfilesize;
	struct nfs3_time time_delta;
	uint32_t properties;
};

struct nfs3_pathconf_res {
	uint32_t status;
	struct nfs3_post_attr obj;
	uint32_t linkmax, name_max;
	bool no_trunc, chown_restricted, case_insensitive, case_preserving;
};

struct nfs3_commit_args {
	struct nfs3_fh fh;
	uint64_t offset;
	uint32_t count;
};

struct nfs3_commit_res {
	uint32_t status;
	struct nfs3_wcc wcc;
	uint8_t verf[NFS3_VERFSIZE];
};

/* ---- codecs ---- */

int nfs3_dec_fh(struct xdr_dec *x, void *args);
int nfs3_dec_setattr(struct xdr_dec *x, void *args);
int nfs3_dec_dirop(struct xdr_dec *x, void *args);
int nfs3_dec_access(struct xdr_dec *x, void *args);
int nfs3_dec_read(struct xdr_dec *x, void *args);
int nfs3_dec_write(struct xdr_dec *x, void *args);
int nfs3_dec_create(struct xdr_dec *x, void *args);
int nfs3_dec_mkdir(struct xdr_dec *x, void *args);
int nfs3_dec_symlink(struct xdr_dec *x, void *args);
int nfs3_dec_mknod(struct xdr_dec *x, void *args);
int nfs3_dec_rename(struct xdr_dec *x, void *args);
int nfs3_dec_link(struct xdr_dec *x, void *args);
int nfs3_dec_readdir(struct xdr_dec *x, void *args);
int nfs3_dec_readdirplus(struct xdr_dec *x, void *args);
int nfs3_dec_commit(struct xdr_dec *x, void *args);

int nfs3_enc_getattr(struct xdr_enc *x, const void *res);
int nfs3_enc_wcc_res(struct xdr_enc *x, const void *res);
int nfs3_enc_lookup(struct xdr_enc *x, const void *res);
int nfs3_enc_access(struct xdr_enc *x, const void *res);
int nfs3_enc_readlink(struct xdr_enc *x, const void *res);
int nfs3_enc_read(struct xdr_enc *x, const void *res);
int nfs3_enc_write(struct xdr_enc *x, const void *res);
int nfs3_enc_create(struct xdr_enc *x, const void *res);
int nfs3_enc_rename(struct xdr_enc *x, const void *res);
int nfs3_enc_link(struct xdr_enc *x, const void *res);
int nfs3_enc_readdir(struct xdr_enc *x, const void *res);
int nfs3_enc_fsstat(struct xdr_enc *x, const void *res);
int nfs3_enc_fsinfo(struct xdr_enc *x, const void *res);
int nfs3_enc_pathconf(struct xdr_enc *x, const void *res);
int nfs3_enc_commit(struct xdr_enc *x, const void *res);

/* Bytes a READDIR(PLUS) entry takes in the reply. */
uint32_t nfs3_dirent_size(uint32_t namelen, bool plus, uint32_t fhlen);
#define NFS3_FATTR_SIZE 84

#endif
