/*
 * op_fh.c - filehandles and the namespace a client walks: PUTFH,
 * PUTROOTFH, PUTPUBFH, GETFH, SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, SECINFO,
 * SECINFO_NO_NAME, and the pseudo filesystem.
 *
 * The pseudo filesystem (RFC 8881 §7.3). NFSv4 has no MOUNT protocol: a
 * client starts at PUTROOTFH and looks its way down to an export. The
 * server presents the paths of the exports file as a read-only tree of
 * directories: a node for every export root and every ancestor of one.
 * Which a client sees at a node depends on the exports that admit it:
 *   - the node is the root of an export that admits the client: that
 *     export's root directory (crossing into it changes the fsid);
 *   - else it lies inside an export that admits the client: that export's
 *     real directory at the path (so with "/" exported, a client sees the
 *     real tree, with the other exports' roots crossed into as it walks);
 *   - else a pseudo directory (mode 0555, owned by root, listing its child
 *     nodes), never written to (ROFS).
 * A pseudo directory's handle carries the reserved fsid NFS4_PSEUDO_FSID
 * and the node's fileid (a hash of its path), under the same MAC as every
 * handle; after an exports change a node that is gone answers STALE.
 *
 * Crossing: a LOOKUP inside an export that lands on another export's root
 * (nested exports) continues in that export if it admits the client, and
 * stays in the first otherwise. LOOKUPP at an export's root goes to the
 * node above it; everywhere else ".." is export_lookup's, which never
 * leaves the export (export/exports.h, handle guarantee 3).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/mem.h"
#include "base/siphash.h"
#include "nfs4/nfs4_priv.h"
#include "srv/vfs.h"

/* ---- the pseudo filesystem ---- */

struct nfs4_pnode {
	char *path;	  /* "/", "/a", "/a/b" */
	const char *name; /* last component (points into path) */
	unsigned parent;  /* the root is its own parent */
	uint64_t fileid;
	const struct export *ex; /* the export rooted here, or NULL */
};

struct nfs4_pseudo {
	struct nfs4_pnode *v;
	unsigned n;
};

static uint64_t path_fileid(const char *path)
{
	static const uint8_t key[16] = "jnfs-pseudo-node";
	/* never a real inode number: those are block * 8 + slot, far below */
	return siphash24(key, path, strlen(path)) | (1ull << 63);
}

static int pnode_find(const struct nfs4_pseudo *p, const char *path)
{
	for (unsigned i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].path, path))
			return (int)i;
	return -1;
}

static unsigned pnode_add(struct nfs4_pseudo *p, const char *path)
{
	int i = pnode_find(p, path);
	if (i >= 0)
		return (unsigned)i;
	unsigned parent = 0;
	if (strcmp(path, "/")) {
		char *up = xstrdup(path);
		char *slash = strrchr(up, '/');
		if (slash == up)
			slash[1] = 0;
		else
			*slash = 0;
		parent = pnode_add(p, up);
		free(up);
	}
	p->v = xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
	struct nfs4_pnode *nd = &p->v[p->n];
	memset(nd, 0, sizeof(*nd));
	nd->path = xstrdup(path);
	nd->name = strcmp(path, "/") ? strrchr(nd->path, '/') + 1 : nd->path;
	nd->parent = parent;
	nd->fileid = path_fileid(path);
	return p->n++;
}

struct nfs4_pseudo *nfs4_pseudo_build(const struct exports *e)
{
	struct nfs4_pseudo *p = xcalloc(1, sizeof(*p));
	pnode_add(p, "/");
	for (unsigned i = 0; i < e->n; i++) {
		unsigned k = pnode_add(p, e->v[i].path);
		p->v[k].ex = &e->v[i];
	}
	return p;
}

unsigned nfs4_pseudo_count(const struct nfs4_pseudo *p)
{
	return p->n;
}

unsigned nfs4_pseudo_parent(const struct nfs4_pseudo *p, unsigned k)
{
	return p->v[k].parent;
}

uint64_t nfs4_pseudo_fileid(const struct nfs4_pseudo *p, unsigned k)
{
	return p->v[k].fileid;
}

const char *nfs4_pseudo_name(const struct nfs4_pseudo *p, unsigned k)
{
	return p->v[k].name;
}

void nfs4_pseudo_free(struct nfs4_pseudo *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->n; i++)
		free(p->v[i].path);
	free(p->v);
	free(p);
}

/* The nearest export at or above node k that admits the caller, and the
 * path below its root. */
static const struct export *covering_export(struct nfs4_compound *c, unsigned k, struct srv_exp *e)
{
	const struct nfs4_pseudo *p = c->pseudo;
	for (;;) {
		const struct export *ex = p->v[k].ex;
		if (ex && !srv_admit(c->s->srv, ex, c->rq, c->rc, e))
			return ex;
		if (k == 0)
			return NULL;
		k = p->v[k].parent;
	}
}

/* What the caller sees at node k (see above). */
uint32_t nfs4_pnode_resolve(struct nfs4_compound *c, unsigned k, struct nfs4_fh *out)
{
	struct srv_exp e;
	const struct export *ex = covering_export(c, k, &e);
	memset(out, 0, sizeof(*out));
	if (!ex) {
		out->kind = NFS4_FH_PSEUDO;
		out->pnode = k;
		return NFS4_OK;
	}
	/* walk from the export's root down to the node's path */
	struct fs_inode *ip;
	int err = fs_iget(c->s->srv->fs, ex->root_ino, ex->root_gen, &ip);
	if (err)
		return nfs4_status(err);
	const char *rest = c->pseudo->v[k].path + strlen(ex->path);
	while (*rest) {
		while (*rest == '/')
			rest++;
		size_t len = strcspn(rest, "/");
		if (!len)
			break;
		struct fs_inode *next;
		err = export_lookup(ex, ip, rest, len, &next);
		fs_iput(ip);
		if (err)
			return nfs4_status(err);
		ip = next;
		rest += len;
	}
	out->kind = NFS4_FH_FS;
	out->ip = ip;
	out->exp = e;
	return NFS4_OK;
}

/* The pseudo node an export's root stands at. */
static unsigned pnode_of_export(const struct nfs4_compound *c, const struct export *ex)
{
	const struct nfs4_pseudo *p = c->pseudo;
	for (unsigned i = 0; i < p->n; i++)
		if (p->v[i].ex == ex)
			return i;
	return 0;
}

/* ---- attributes and handles of the current filehandle ---- */

static void pseudo_attr(const struct nfs4_compound *c, unsigned k, struct fs_attr *a)
{
	const struct nfs4_pseudo *p = c->pseudo;
	memset(a, 0, sizeof(*a));
	a->ino = p->v[k].fileid;
	a->mode = S_IFDIR | 0555;
	a->nlink = 2;
	for (unsigned i = 1; i < p->n; i++)
		if (p->v[i].parent == k)
			a->nlink++;
	a->size = 4096;
	a->used = 4096;
	struct timespec t = {.tv_sec = (time_t)c->s->start_sec};
	a->atime = a->mtime = a->ctime = a->btime = t;
	a->change = c->s->start_sec;
}

int nfs4_fh_attr(struct nfs4_compound *c, const struct nfs4_fh *fh, struct fs_attr *a)
{
	if (fh->kind == NFS4_FH_PSEUDO) {
		pseudo_attr(c, fh->pnode, a);
		return 0;
	}
	return fs_getattr(fh->ip, a);
}

void nfs4_fh_wire(struct nfs4_compound *c, const struct nfs4_fh *fh, const struct fs_attr *a,
		  nfs_fh4 *out)
{
	if (fh->kind == NFS4_FH_PSEUDO) {
		srv_fh_make_pseudo(c->s->srv, NFS4_PSEUDO_FSID, c->pseudo->v[fh->pnode].fileid,
				   out->val);
	} else {
		srv_fh_make(c->s->srv, fh->exp.ex, a, out->val);
	}
	out->len = FH_SIZE;
}

static int pseudo_statfs(void *arg, struct fs_statfs *st)
{
	memset(st, 0, sizeof(*st));
	st->bsize = 4096;
	st->namemax = 255;
	return 0;
}

static int engine_statfs(void *arg, struct fs_statfs *st)
{
	return fs_statfs(arg, st);
}

void nfs4_fsinfo_none(struct nfs4_fsinfo *fsi)
{
	memset(fsi, 0, sizeof(*fsi));
	fsi->statfs = pseudo_statfs;
}

void nfs4_fh_fsinfo(struct nfs4_compound *c, const struct nfs4_fh *fh, struct nfs4_fsinfo *fsi)
{
	memset(fsi, 0, sizeof(*fsi));
	fsi->lease_time = c->s->lease_s;
	fsi->maxread = fsi->maxwrite = NFS4_MAXIO;
	fsi->maxname = 255;
	if (fh->kind == NFS4_FH_PSEUDO) {
		fsi->fsid_major = NFS4_PSEUDO_FSID;
		fsi->statfs = pseudo_statfs;
		return;
	}
	fsi->fsid_major = fh->exp.ex->fsid;
	fsi->maxfilesize = FS_MAX_FILE_SIZE;
	fsi->statfs = engine_statfs;
	fsi->statfs_arg = c->s->srv->fs;
	if (fh->exp.opts->pnfs) {
		fsi->layout_types = 1u << LAYOUT4_BLOCK_VOLUME;
		fsi->layout_blksize = 4096;
	}
}

uint64_t nfs4_fh_mounted_on(struct nfs4_compound *c, const struct nfs4_fh *fh,
			    const struct fs_attr *a)
{
	if (fh->kind == NFS4_FH_FS && export_is_root(fh->exp.ex, fh->ip))
		return c->pseudo->v[pnode_of_export(c, fh->exp.ex)].fileid;
	return a->ino;
}

/* ---- names ---- */

uint32_t nfs4_name_check(const component4 *n)
{
	if (n->len == 0)
		return NFS4ERR_INVAL;
	if (n->len > 255)
		return NFS4ERR_NAMETOOLONG;
	if (memchr(n->val, '/', n->len) || memchr(n->val, 0, n->len))
		return NFS4ERR_BADNAME;
	if ((n->len == 1 && n->val[0] == '.') ||
	    (n->len == 2 && n->val[0] == '.' && n->val[1] == '.'))
		return NFS4ERR_BADNAME;
	return NFS4_OK;
}

/* ---- operations ---- */

uint32_t nfs4_op_putfh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const nfs_fh4 *w = &a->opputfh.object;
	struct fh h;
	nfs4_fh_clear(&c->cfh);
	int err = srv_fh_decode(c->s->srv, w->val, w->len, &h);
	if (err)
		return nfs4_status(err);
	if (h.fsid == NFS4_PSEUDO_FSID) {
		const struct nfs4_pseudo *p = c->pseudo;
		for (unsigned k = 0; k < p->n; k++) {
			if (p->v[k].fileid == h.ino) {
				c->cfh.kind = NFS4_FH_PSEUDO;
				c->cfh.pnode = k;
				return NFS4_OK;
			}
		}
		return NFS4ERR_STALE;
	}
	struct srv_exp e = {0};
	struct fs_inode *ip;
	if ((err = srv_fh_resolve(c->s->srv, c->rq, c->rc, &h, &e, &ip)))
		return nfs4_status(err);
	c->cfh.kind = NFS4_FH_FS;
	c->cfh.ip = ip;
	c->cfh.exp = e;
	return NFS4_OK;
}

uint32_t nfs4_op_putrootfh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	nfs4_fh_clear(&c->cfh);
	return nfs4_pnode_resolve(c, 0, &c->cfh);
}

uint32_t nfs4_op_getfh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct fs_attr at;
	int err = nfs4_fh_attr(c, &c->cfh, &at);
	if (err)
		return nfs4_status(err);
	nfs4_fh_wire(c, &c->cfh, &at, &r->opgetfh.resok4.object);
	return NFS4_OK;
}

uint32_t nfs4_op_savefh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	nfs4_fh_copy(&c->sfh, &c->cfh);
	/* the current stateid goes with it (RFC 8881 §16.2.3.1.2) */
	c->saved_sid = c->cur_sid;
	c->saved_have_sid = c->have_cur_sid;
	return NFS4_OK;
}

uint32_t nfs4_op_restorefh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	nfs4_fh_copy(&c->cfh, &c->sfh);
	c->cur_sid = c->saved_sid;
	c->have_cur_sid = c->saved_have_sid;
	return NFS4_OK;
}

/* Does ip (in export e) stand at another export's root that admits the
 * caller? Then the walk continues there. */
void nfs4_fh_cross(struct nfs4_compound *c, struct nfs4_fh *fh)
{
	const struct nfs4_pseudo *p = c->pseudo;
	for (unsigned k = 0; k < p->n; k++) {
		const struct export *ex = p->v[k].ex;
		struct srv_exp e;
		if (!ex || ex == fh->exp.ex || !export_is_root(ex, fh->ip))
			continue;
		if (!srv_admit(c->s->srv, ex, c->rq, c->rc, &e))
			fh->exp = e;
		return;
	}
}

static uint32_t pseudo_child(struct nfs4_compound *c, const component4 *name, unsigned *out)
{
	const struct nfs4_pseudo *p = c->pseudo;
	for (unsigned k = 1; k < p->n; k++) {
		if (p->v[k].parent == c->cfh.pnode && strlen(p->v[k].name) == name->len &&
		    !memcmp(p->v[k].name, name->val, name->len)) {
			*out = k;
			return NFS4_OK;
		}
	}
	return NFS4ERR_NOENT;
}

uint32_t nfs4_op_lookup(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const component4 *name = &a->oplookup.objname;
	struct fs_attr dat;
	uint32_t st;
	int err;
	if ((err = nfs4_fh_attr(c, &c->cfh, &dat)))
		return nfs4_status(err);
	if (S_ISLNK(dat.mode))
		return NFS4ERR_SYMLINK;
	if (!S_ISDIR(dat.mode))
		return NFS4ERR_NOTDIR;
	if ((st = nfs4_name_check(name)))
		return st;
	if (c->cfh.kind == NFS4_FH_PSEUDO) {
		unsigned k;
		if ((st = pseudo_child(c, name, &k)))
			return st;
		struct nfs4_fh nfh;
		if ((st = nfs4_pnode_resolve(c, k, &nfh)))
			return st;
		nfs4_fh_clear(&c->cfh);
		c->cfh = nfh;
		return NFS4_OK;
	}
	struct fs_inode *ip;
	if ((err = srv_lookup(&c->cfh.exp, c->cfh.ip, (const char *)name->val, name->len, &ip)))
		return nfs4_status(err);
	fs_iput(c->cfh.ip);
	c->cfh.ip = ip;
	nfs4_fh_cross(c, &c->cfh);
	return NFS4_OK;
}

/* The current filehandle becomes its directory's parent (LOOKUPP, and
 * SECINFO_NO_NAME of SECINFO_STYLE4_PARENT): NOENT above the root, SYMLINK
 * for a symlink and NOTDIR for any other non-directory, as for LOOKUP. */
static uint32_t lookup_parent(struct nfs4_compound *c)
{
	struct fs_attr dat;
	int err;
	if ((err = nfs4_fh_attr(c, &c->cfh, &dat)))
		return nfs4_status(err);
	if (S_ISLNK(dat.mode))
		return NFS4ERR_SYMLINK;
	if (!S_ISDIR(dat.mode))
		return NFS4ERR_NOTDIR;
	unsigned up;
	if (c->cfh.kind == NFS4_FH_PSEUDO) {
		if (c->cfh.pnode == 0)
			return NFS4ERR_NOENT; /* the root has no parent */
		up = c->pseudo->v[c->cfh.pnode].parent;
	} else if (export_is_root(c->cfh.exp.ex, c->cfh.ip)) {
		unsigned k = pnode_of_export(c, c->cfh.exp.ex);
		if (k == 0)
			return NFS4ERR_NOENT;
		up = c->pseudo->v[k].parent;
	} else {
		struct fs_inode *ip;
		if ((err = srv_lookup(&c->cfh.exp, c->cfh.ip, "..", 2, &ip)))
			return nfs4_status(err);
		fs_iput(c->cfh.ip);
		c->cfh.ip = ip;
		return NFS4_OK;
	}
	struct nfs4_fh nfh;
	uint32_t st = nfs4_pnode_resolve(c, up, &nfh);
	if (st)
		return st;
	nfs4_fh_clear(&c->cfh);
	c->cfh = nfh;
	return NFS4_OK;
}

uint32_t nfs4_op_lookupp(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	return lookup_parent(c);
}

/* AUTH_SYS is what every export serves (and AUTH_NONE, squashed). */
static uint32_t secinfo_result(struct nfs4_compound *c, SECINFO4resok *ok)
{
	struct secinfo4 *v = nfs4_res_alloc(c, 2 * sizeof(*v));
	if (!v)
		return NFS4ERR_REP_TOO_BIG;
	memset(v, 0, 2 * sizeof(*v));
	v[0].flavor = RPC_AUTH_SYS;
	v[1].flavor = RPC_AUTH_NONE;
	ok->len = 2;
	ok->val = v;
	/* SECINFO consumes the current filehandle (RFC 8881 §18.29.3) */
	nfs4_fh_clear(&c->cfh);
	return NFS4_OK;
}

uint32_t nfs4_op_secinfo(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const component4 *name = &a->opsecinfo.name;
	struct fs_attr dat;
	uint32_t st;
	int err;
	if ((err = nfs4_fh_attr(c, &c->cfh, &dat)))
		return nfs4_status(err);
	if (!S_ISDIR(dat.mode))
		return NFS4ERR_NOTDIR;
	if ((st = nfs4_name_check(name)))
		return st;
	if (c->cfh.kind == NFS4_FH_PSEUDO) {
		unsigned k;
		if ((st = pseudo_child(c, name, &k)))
			return st;
	} else {
		struct fs_inode *ip;
		if ((err = srv_lookup(&c->cfh.exp, c->cfh.ip, (const char *)name->val, name->len,
				      &ip)))
			return nfs4_status(err);
		fs_iput(ip);
	}
	return secinfo_result(c, &r->opsecinfo.resok4);
}

uint32_t nfs4_op_secinfo_no_name(struct nfs4_compound *c, struct nfs_argop4 *a,
				 struct nfs_resop4 *r)
{
	if (a->opsecinfo_no_name != SECINFO_STYLE4_CURRENT_FH &&
	    a->opsecinfo_no_name != SECINFO_STYLE4_PARENT)
		return NFS4ERR_INVAL;
	/* the parent's, found as LOOKUPP finds it: NOENT at the root
	 * (RFC 8881 §18.45.3) */
	uint32_t st;
	if (a->opsecinfo_no_name == SECINFO_STYLE4_PARENT && (st = lookup_parent(c)))
		return st;
	return secinfo_result(c, &r->opsecinfo_no_name.resok4);
}
