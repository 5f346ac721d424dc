/*
 * op_ns.c - the namespace operations: CREATE, REMOVE, RENAME, LINK,
 * READDIR, READLINK (RFC 8881 §18.4, §18.9, §18.23, §18.24, §18.25,
 * §18.26). Who may do what is the shared server layer's (srv/vfs.h);
 * change_info4 comes from the engine's before/after attributes of the
 * directory, taken under the lock that orders its changes, so it is
 * atomic.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "nfs4/nfs4_priv.h"
#include "srv/vfs.h"

/* The largest symbolic link target (the engine's). */
#define NFS4_LINK_MAX 4096

static void cinfo_of(const struct fs_res_ino *ri, struct change_info4 *ci)
{
	ci->atomic = ri->has_pre && ri->has_post;
	ci->before = ri->has_pre ? ri->pre.change : 0;
	ci->after = ri->has_post ? ri->post.change : 0;
}

/* A directory of an export (not the pseudo filesystem's). */
static uint32_t fs_dir(struct nfs4_compound *c, const struct nfs4_fh *fh)
{
	struct fs_attr a;
	if (fh->kind == NFS4_FH_PSEUDO)
		return NFS4ERR_ROFS;
	int err = fs_getattr(fh->ip, &a);
	if (err)
		return nfs4_status(err);
	return S_ISDIR(a.mode) ? NFS4_OK : NFS4ERR_NOTDIR;
}

static void note(struct nfs4_compound *c, const struct nfs4_fh *fh, uint64_t csn)
{
	if (fh->exp.opts->sync)
		nfs4_note_change(c, csn, false);
}

uint32_t nfs4_op_create(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct CREATE4args *ca = &a->opcreate;
	struct CREATE4resok *ok = &r->opcreate.resok4;
	struct fs_create_args fca = {0};
	struct nfs4_bitmap bm;
	struct nfs4_sattr set;
	struct fs_setattr req;
	uint32_t st;
	switch (ca->objtype.type) {
	case NF4DIR:
		fca.mode = S_IFDIR | 0755;
		break;
	case NF4SOCK:
		fca.mode = S_IFSOCK | 0644;
		break;
	case NF4FIFO:
		fca.mode = S_IFIFO | 0644;
		break;
	case NF4CHR:
	case NF4BLK:
		fca.mode = (ca->objtype.type == NF4CHR ? S_IFCHR : S_IFBLK) | 0644;
		fca.rdev = makedev(ca->objtype.devdata.specdata1, ca->objtype.devdata.specdata2);
		break;
	case NF4LNK:
		if (ca->objtype.linkdata.len == 0)
			return NFS4ERR_INVAL;
		if (memchr(ca->objtype.linkdata.val, 0, ca->objtype.linkdata.len))
			return NFS4ERR_BADCHAR;
		fca.mode = S_IFLNK | 0777;
		fca.target = (const char *)ca->objtype.linkdata.val;
		fca.target_len = ca->objtype.linkdata.len;
		break;
	default:
		return NFS4ERR_BADTYPE; /* a regular file is made by OPEN */
	}
	if ((st = fs_dir(c, &c->cfh)) || (st = nfs4_name_check(&ca->objname)))
		return st;
	if (!nfs4_bm_from_wire(&bm, ca->createattrs.attrmask.val, ca->createattrs.attrmask.len))
		return NFS4ERR_ATTRNOTSUPP;
	if ((st = nfs4_attr_decode(&bm, ca->createattrs.attr_vals.val,
				   ca->createattrs.attr_vals.len, &set)))
		return st;
	nfs4_sattr_to_fs(&set, &req);
	struct fs_result res = {.want = FS_RES_ATTRS};
	struct fs_inode *ip;
	int err = srv_create(&c->cfh.exp, c->cfh.ip, (const char *)ca->objname.val, ca->objname.len,
			     &fca, &req, &ip, &res);
	note(c, &c->cfh, res.csn);
	if (err)
		return nfs4_status(err);
	cinfo_of(&res.ino[0], &ok->cinfo);
	ok->attrset.len = NFS4_ATTR_WORDS;
	memcpy(ok->attrset.val, set.set.w, sizeof(set.set.w));
	fs_iput(c->cfh.ip);
	c->cfh.ip = ip; /* the new object is the current filehandle */
	return NFS4_OK;
}

uint32_t nfs4_op_remove(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const component4 *name = &a->opremove.target;
	uint32_t st;
	if ((st = fs_dir(c, &c->cfh)) || (st = nfs4_name_check(name)))
		return st;
	struct fs_result res = {.want = FS_RES_ATTRS};
	int err = srv_remove(&c->cfh.exp, c->cfh.ip, (const char *)name->val, name->len, SRV_RM_ANY,
			     &res);
	note(c, &c->cfh, res.csn);
	if (err)
		return nfs4_status(err);
	cinfo_of(&res.ino[0], &r->opremove.resok4.cinfo);
	return NFS4_OK;
}

/* The saved and current filehandles of RENAME and LINK: one export. */
static uint32_t same_export(struct nfs4_compound *c)
{
	if (c->sfh.kind == NFS4_FH_PSEUDO || c->cfh.kind == NFS4_FH_PSEUDO)
		return NFS4ERR_ROFS;
	return c->sfh.exp.ex == c->cfh.exp.ex ? NFS4_OK : NFS4ERR_XDEV;
}

uint32_t nfs4_op_rename(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct RENAME4args *ra = &a->oprename;
	uint32_t st;
	if ((st = same_export(c)) || (st = fs_dir(c, &c->sfh)) || (st = fs_dir(c, &c->cfh)) ||
	    (st = nfs4_name_check(&ra->oldname)) || (st = nfs4_name_check(&ra->newname)))
		return st;
	struct fs_result res = {.want = FS_RES_ATTRS};
	int err = srv_rename(&c->cfh.exp, c->sfh.ip, (const char *)ra->oldname.val, ra->oldname.len,
			     c->cfh.ip, (const char *)ra->newname.val, ra->newname.len, &res);
	note(c, &c->cfh, res.csn);
	if (err)
		return nfs4_status(err);
	cinfo_of(&res.ino[0], &r->oprename.resok4.source_cinfo);
	cinfo_of(&res.ino[1], &r->oprename.resok4.target_cinfo);
	return NFS4_OK;
}

uint32_t nfs4_op_link(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const component4 *name = &a->oplink.newname;
	struct fs_attr at;
	uint32_t st;
	int err;
	if ((st = same_export(c)) || (st = fs_dir(c, &c->cfh)) || (st = nfs4_name_check(name)))
		return st;
	if ((err = fs_getattr(c->sfh.ip, &at)))
		return nfs4_status(err);
	if (S_ISDIR(at.mode))
		return NFS4ERR_ISDIR;
	struct fs_result res = {.want = FS_RES_ATTRS};
	err = srv_link(&c->cfh.exp, c->sfh.ip, c->cfh.ip, (const char *)name->val, name->len, &res);
	note(c, &c->cfh, res.csn);
	if (err)
		return nfs4_status(err);
	cinfo_of(&res.ino[0], &r->oplink.resok4.cinfo);
	return NFS4_OK;
}

uint32_t nfs4_op_readlink(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	struct fs_attr at;
	int err = nfs4_fh_attr(c, &c->cfh, &at);
	if (err)
		return nfs4_status(err);
	if (!S_ISLNK(at.mode))
		return S_ISDIR(at.mode) ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
	char *buf = nfs4_res_alloc(c, NFS4_LINK_MAX);
	size_t len = 0;
	if (!buf)
		return NFS4ERR_REP_TOO_BIG;
	if ((err = fs_readlink(c->cfh.ip, buf, NFS4_LINK_MAX, &len)))
		return nfs4_status(err);
	r->opreadlink.resok4.link.len = (uint32_t)len;
	r->opreadlink.resok4.link.val = (const uint8_t *)buf;
	return NFS4_OK;
}

/* ---- READDIR ---- */

/* Cookies are the engine's, stable while entries come and go (the
 * verifier is srv_cookie_verf's); the first two ("." and "..", cookies 1
 * and 2) are not NFSv4 entries and are never handed out. */
_Static_assert(NFS4_VERIFIER_SIZE == 8, "srv_cookie_verf's size");

/* An entry as readdir gave it, before its attributes are read. */
struct rd_name {
	const char *name;
	uint32_t len;
	uint64_t ino, cookie;
};

struct rd {
	struct nfs4_compound *c;
	const struct READDIR4args *ra;
	struct entry4 *head, **tail;
	uint32_t left;	  /* maxcount bytes left */
	uint32_t dirleft; /* dircount bytes left (UINT32_MAX: not bounded) */
	uint32_t n;
	bool stopped;
	/* the names gathered under the directory's lock (rd_gather) */
	struct rd_name *names;
	uint32_t nnames, cap;
	uint64_t guess; /* bytes the gathered entries take at least */
};

/* XDR size of an entry4 in a reply: value_follows, cookie, name, fattr4. */
static uint32_t entry_size(uint32_t namelen, const struct fattr4 *fa)
{
	return 4 + 8 + 4 + namelen + XDR_PAD(namelen) + 4 + 4 * fa->attrmask.len + 4 +
	       fa->attr_vals.len + XDR_PAD(fa->attr_vals.len);
}

/* Attributes of one entry: its object's (crossing into a nested export
 * it is the root of), or only rdattr_error when it cannot be read. */
static uint32_t entry_attrs(struct rd *d, const struct nfs4_fh *dir, const char *name, size_t len,
			    uint64_t ino, struct fattr4 *fa)
{
	struct nfs4_compound *c = d->c;
	struct nfs4_fh fh = {0};
	struct fs_attr at;
	struct nfs4_fsinfo fsi;
	nfs_fh4 wfh;
	struct nfs4_attr_obj obj;
	int err = export_lookup_entry(dir->exp.ex, dir->ip, name, len, ino, &fh.ip);
	if (!err) {
		fh.kind = NFS4_FH_FS;
		fh.exp = dir->exp;
		nfs4_fh_cross(c, &fh);
		err = fs_getattr(fh.ip, &at);
	}
	if (err) {
		nfs4_fh_clear(&fh);
		if (!nfs4_bm_isset_wire(&d->ra->attr_request, FATTR4_RDATTR_ERROR))
			return nfs4_status(err);
		/* only rdattr_error itself, as RFC 8881 §5.8.1.12 says */
		memset(&at, 0, sizeof(at));
		at.ino = ino;
		struct nfs4_bitmap one = {{0}};
		nfs4_bm_set(&one, FATTR4_RDATTR_ERROR);
		nfs4_fsinfo_none(&fsi);
		memset(&obj, 0, sizeof(obj));
		obj.a = &at;
		obj.fsi = &fsi;
		obj.rdattr_error = nfs4_status(err);
		bitmap4 req = {.len = NFS4_ATTR_WORDS};
		memcpy(req.val, one.w, sizeof(one.w));
		return nfs4_fattr(c, &req, &obj, fa) ? NFS4ERR_SERVERFAULT : NFS4_OK;
	}
	nfs4_attr_obj_of(c, &fh, &at, &fsi, &wfh, &obj);
	obj.mounted_on_fileid = ino;
	err = nfs4_fattr(c, &d->ra->attr_request, &obj, fa);
	nfs4_fh_clear(&fh);
	return err ? nfs4_status(err) : NFS4_OK;
}

/* Add one entry if it fits: 0 to go on, 1 when full. */
static int rd_add(struct rd *d, const char *name, size_t len, uint64_t cookie,
		  const struct fattr4 *fa)
{
	uint32_t need = entry_size((uint32_t)len, fa);
	uint32_t dneed = 8 + 4 + (uint32_t)len + XDR_PAD(len);
	if (need > d->left || dneed > d->dirleft) {
		d->stopped = true;
		return 1;
	}
	struct entry4 *e = nfs4_res_alloc(d->c, sizeof(*e));
	if (!e) {
		/* the compound's result memory is used up: end the page here */
		d->stopped = true;
		return 1;
	}
	d->left -= need;
	if (d->dirleft != UINT32_MAX)
		d->dirleft -= dneed;
	memset(e, 0, sizeof(*e));
	e->cookie = cookie;
	e->name.len = (uint32_t)len;
	e->name.val = (const uint8_t *)name; /* in the result arena, or a pseudo node's */
	e->attrs = *fa;
	*d->tail = e;
	d->tail = &e->nextentry;
	d->n++;
	return 0;
}

/*
 * The engine calls this with the directory's lock held, so nothing here
 * may look a name up: it only keeps the names, as many as could fit the
 * reply with the smallest attributes; their attributes are read after
 * fs_readdir returned (rd_attrs).
 */
static int rd_gather(void *arg, const char *name, size_t len, uint64_t ino, unsigned type,
		     uint64_t cookie)
{
	struct rd *d = arg;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0; /* not NFSv4 entries */
	uint32_t least = entry_size((uint32_t)len, &(struct fattr4){0});
	if (d->guess + least > d->left) {
		d->stopped = true;
		return 1;
	}
	if (d->nnames == d->cap) {
		uint32_t cap = d->cap ? 2 * d->cap : 64;
		struct rd_name *v = nfs4_res_alloc(d->c, cap * sizeof(*v));
		if (!v) {
			d->stopped = true;
			return 1;
		}
		if (d->nnames)
			memcpy(v, d->names, d->nnames * sizeof(*v));
		d->names = v;
		d->cap = cap;
	}
	char *nm = nfs4_res_alloc(d->c, len ? len : 1);
	if (!nm) {
		d->stopped = true;
		return 1;
	}
	memcpy(nm, name, len);
	d->names[d->nnames++] = (struct rd_name){nm, (uint32_t)len, ino, cookie};
	d->guess += least;
	return 0;
}

/* The attributes of the gathered names, as many entries as fit. */
static uint32_t rd_attrs(struct rd *d)
{
	for (uint32_t i = 0; i < d->nnames; i++) {
		const struct rd_name *e = &d->names[i];
		struct fattr4 fa = {0};
		uint32_t st = entry_attrs(d, &d->c->cfh, e->name, e->len, e->ino, &fa);
		if (st)
			return st;
		if (rd_add(d, e->name, e->len, e->cookie, &fa))
			break; /* full: the rest comes with the next READDIR */
	}
	return NFS4_OK;
}

static uint32_t readdir_pseudo(struct rd *d)
{
	struct nfs4_compound *c = d->c;
	uint64_t cookie = d->ra->cookie;
	unsigned n = nfs4_pseudo_count(c->pseudo);
	for (unsigned k = 1; k < n; k++) {
		/* cookies of pseudo entries: the node index, past 2 */
		if (k + 2 <= cookie || nfs4_pseudo_parent(c->pseudo, k) != c->cfh.pnode)
			continue;
		struct nfs4_fh fh;
		struct fs_attr at;
		struct nfs4_fsinfo fsi;
		nfs_fh4 wfh;
		struct nfs4_attr_obj obj;
		struct fattr4 fa = {0};
		uint32_t st = nfs4_pnode_resolve(c, k, &fh);
		if (st)
			continue; /* an export it cannot reach: not listed */
		int err = nfs4_fh_attr(c, &fh, &at);
		if (!err) {
			nfs4_attr_obj_of(c, &fh, &at, &fsi, &wfh, &obj);
			obj.mounted_on_fileid = nfs4_pseudo_fileid(c->pseudo, k);
			err = nfs4_fattr(c, &d->ra->attr_request, &obj, &fa);
		}
		nfs4_fh_clear(&fh);
		if (err)
			return nfs4_status(err);
		const char *name = nfs4_pseudo_name(c->pseudo, k);
		if (rd_add(d, name, strlen(name), k + 2, &fa))
			return NFS4_OK;
	}
	return NFS4_OK;
}

uint32_t nfs4_op_readdir(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r)
{
	const struct READDIR4args *ra = &a->opreaddir;
	struct READDIR4resok *ok = &r->opreaddir.resok4;
	struct fs_attr dat;
	int err = nfs4_fh_attr(c, &c->cfh, &dat);
	if (err)
		return nfs4_status(err);
	if (!S_ISDIR(dat.mode))
		return NFS4ERR_NOTDIR;
	if (ra->cookie == 1 || ra->cookie == 2)
		return NFS4ERR_BAD_COOKIE; /* reserved (RFC 8881 §18.23.3) */
	uint8_t verf[NFS4_VERIFIER_SIZE];
	srv_cookie_verf(c->s->srv, &dat, verf);
	static const uint8_t zero[NFS4_VERIFIER_SIZE];
	if (ra->cookie && memcmp(ra->cookieverf, zero, sizeof(zero)) &&
	    memcmp(ra->cookieverf, verf, sizeof(verf)))
		return NFS4ERR_NOT_SAME;
	/* the reply's fixed part: verifier, the list's end and eof */
	uint32_t fixed = NFS4_VERIFIER_SIZE + 4 + 4;
	uint32_t maxcount = ra->maxcount < NFS4_MAXIO ? ra->maxcount : NFS4_MAXIO;
	if (maxcount <= fixed)
		return NFS4ERR_TOOSMALL;
	struct rd d = {
		.c = c,
		.ra = ra,
		.tail = &d.head,
		.left = maxcount - fixed,
		.dirleft = ra->dircount ? ra->dircount : UINT32_MAX,
	};
	uint32_t st = NFS4_OK;
	if (c->cfh.kind == NFS4_FH_PSEUDO) {
		st = readdir_pseudo(&d);
	} else {
		/* entries go with their attributes whether or not the caller
		 * may search the directory (NULL: not asked) */
		if ((err = srv_may_readdir(&c->cfh.exp, c->cfh.ip, NULL)))
			return nfs4_status(err);
		err = fs_readdir(c->cfh.ip, ra->cookie, rd_gather, &d);
		st = err ? nfs4_status(err) : rd_attrs(&d);
	}
	if (st)
		return st;
	if (d.n == 0 && d.stopped)
		return NFS4ERR_TOOSMALL;
	memcpy(ok->cookieverf, verf, sizeof(verf));
	ok->reply.entries = d.head;
	ok->reply.eof = !d.stopped;
	return NFS4_OK;
}
