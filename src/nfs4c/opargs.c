/*
 * opargs.c - helpers that append the common operations to a compound
 * (nfs4c.h). Each fills the generated argument struct as RFC 8881 and RFC
 * 7862 define it; strings and attribute values go to the compound's
 * scratch memory, data is referenced. A failed append is remembered in
 * the compound (build_err), so a caller may chain helpers and look only
 * at the send's result.
 */
#include <errno.h>
#include <string.h>

#include "base/compiler.h"
#include "nfs4c/nfs4c_priv.h"

static struct nfs_argop4 *add(struct nfs4c_compound *c, nfs_opnum4 op)
{
	return nfs4c_op_add(c, op);
}

/* A name as a component4: copied, and an error when it is not a string
 * the protocol can carry. */
static int name_arg(struct nfs4c_compound *c, const char *s, component4 *out)
{
	if (!s) {
		c->build_err = c->build_err ? c->build_err : -EINVAL;
		return -EINVAL;
	}
	*out = nfs4c_str(c, s);
	return c->build_err;
}

static clientid4 clientid_of(const struct nfs4c_compound *c)
{
	return c->cl ? nfs4c_clientid(c->cl) : 0;
}

static int owner_arg(struct nfs4c_compound *c, const void *owner, uint32_t len,
		     struct state_owner4 *o)
{
	uint8_t *p = nfs4c_scratch(c, len);
	if (!p)
		return -E2BIG;
	memcpy(p, owner, len);
	o->clientid = clientid_of(c);
	o->owner.len = len;
	o->owner.val = p;
	return 0;
}

int nfs4c_op_putrootfh(struct nfs4c_compound *c)
{
	return add(c, OP_PUTROOTFH) ? 0 : -E2BIG;
}

int nfs4c_op_getfh(struct nfs4c_compound *c)
{
	return add(c, OP_GETFH) ? 0 : -E2BIG;
}

int nfs4c_op_savefh(struct nfs4c_compound *c)
{
	return add(c, OP_SAVEFH) ? 0 : -E2BIG;
}

int nfs4c_op_restorefh(struct nfs4c_compound *c)
{
	return add(c, OP_RESTOREFH) ? 0 : -E2BIG;
}

int nfs4c_op_lookupp(struct nfs4c_compound *c)
{
	return add(c, OP_LOOKUPP) ? 0 : -E2BIG;
}

int nfs4c_op_readlink(struct nfs4c_compound *c)
{
	return add(c, OP_READLINK) ? 0 : -E2BIG;
}

int nfs4c_op_putfh(struct nfs4c_compound *c, const struct nfs4c_fh *fh)
{
	struct nfs_argop4 *a = add(c, OP_PUTFH);
	if (!a)
		return -E2BIG;
	a->opputfh.object.len = MIN(fh->len, (uint32_t)NFS4_FHSIZE);
	memcpy(a->opputfh.object.val, fh->val, a->opputfh.object.len);
	return 0;
}

int nfs4c_op_lookup(struct nfs4c_compound *c, const char *name)
{
	struct nfs_argop4 *a = add(c, OP_LOOKUP);
	return a ? name_arg(c, name, &a->oplookup.objname) : -E2BIG;
}

int nfs4c_op_lookup_path(struct nfs4c_compound *c, const char *path)
{
	char comp[NFS4_LIMIT_utf8string + 1];
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (!n)
			break;
		if (n >= sizeof(comp)) {
			c->build_err = c->build_err ? c->build_err : -ENAMETOOLONG;
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		int err = nfs4c_op_lookup(c, comp);
		if (err)
			return err;
		p += n;
	}
	return 0;
}

int nfs4c_op_getattr(struct nfs4c_compound *c, const bitmap4 *bm)
{
	struct nfs_argop4 *a = add(c, OP_GETATTR);
	if (!a)
		return -E2BIG;
	if (bm)
		a->opgetattr.attr_request = *bm;
	else
		nfs4c_bitmap_std(&a->opgetattr.attr_request);
	return 0;
}

int nfs4c_op_access(struct nfs4c_compound *c, uint32_t access)
{
	struct nfs_argop4 *a = add(c, OP_ACCESS);
	if (!a)
		return -E2BIG;
	a->opaccess.access = access;
	return 0;
}

int nfs4c_op_open(struct nfs4c_compound *c, const struct nfs4c_open *o)
{
	struct nfs_argop4 *a = add(c, OP_OPEN);
	if (!a)
		return -E2BIG;
	struct OPEN4args *oa = &a->opopen;
	int err;
	oa->seqid = 0; /* NFSv4.1: sessions order requests (RFC 8881 18.16.3) */
	oa->share_access = o->access;
	oa->share_deny = o->deny;
	if ((err = owner_arg(c, o->owner, o->owner_len, &oa->owner)))
		return err;
	if (o->create) {
		oa->openhow.opentype = OPEN4_CREATE;
		struct createhow4 *h = &oa->openhow.how;
		h->mode = o->how;
		switch (o->how) {
		case UNCHECKED4:
		case GUARDED4:
			err = nfs4c_sattr_encode(c, &o->attrs, &h->createattrs);
			break;
		case EXCLUSIVE4:
			memcpy(h->createverf, o->verf, NFS4_VERIFIER_SIZE);
			break;
		case EXCLUSIVE4_1:
			memcpy(h->ch_createboth.cva_verf, o->verf, NFS4_VERIFIER_SIZE);
			err = nfs4c_sattr_encode(c, &o->attrs, &h->ch_createboth.cva_attrs);
			break;
		default:
			break; /* sent as given: the encoder refuses what it cannot send */
		}
		if (err)
			return err;
	} else {
		oa->openhow.opentype = OPEN4_NOCREATE;
	}
	oa->claim.claim = o->claim;
	switch (o->claim) {
	case CLAIM_NULL:
		return name_arg(c, o->name, &oa->claim.file);
	case CLAIM_PREVIOUS:
		oa->claim.delegate_type = o->prev_deleg;
		return 0;
	default:
		return 0; /* CLAIM_FH and the others without arguments here */
	}
}

int nfs4c_op_open_downgrade(struct nfs4c_compound *c, const struct stateid4 *sid, uint32_t access,
			    uint32_t deny)
{
	struct nfs_argop4 *a = add(c, OP_OPEN_DOWNGRADE);
	if (!a)
		return -E2BIG;
	a->opopen_downgrade.open_stateid = *sid;
	a->opopen_downgrade.share_access = access;
	a->opopen_downgrade.share_deny = deny;
	return 0;
}

int nfs4c_op_close(struct nfs4c_compound *c, const struct stateid4 *sid)
{
	struct nfs_argop4 *a = add(c, OP_CLOSE);
	if (!a)
		return -E2BIG;
	a->opclose.open_stateid = *sid;
	return 0;
}

int nfs4c_op_read(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		  uint32_t count)
{
	struct nfs_argop4 *a = add(c, OP_READ);
	if (!a)
		return -E2BIG;
	a->opread.stateid = *sid;
	a->opread.offset = off;
	a->opread.count = count;
	return 0;
}

int nfs4c_op_write(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		   stable_how4 stable, const void *data, uint32_t len)
{
	struct nfs_argop4 *a = add(c, OP_WRITE);
	if (!a)
		return -E2BIG;
	a->opwrite.stateid = *sid;
	a->opwrite.offset = off;
	a->opwrite.stable = stable;
	a->opwrite.data.len = len;
	a->opwrite.data.val = data;
	return 0;
}

int nfs4c_op_commit(struct nfs4c_compound *c, uint64_t off, uint32_t count)
{
	struct nfs_argop4 *a = add(c, OP_COMMIT);
	if (!a)
		return -E2BIG;
	a->opcommit.offset = off;
	a->opcommit.count = count;
	return 0;
}

int nfs4c_op_lock(struct nfs4c_compound *c, const struct nfs4c_lock *l)
{
	struct nfs_argop4 *a = add(c, OP_LOCK);
	if (!a)
		return -E2BIG;
	struct LOCK4args *la = &a->oplock;
	la->locktype = l->type;
	la->reclaim = l->reclaim;
	la->offset = l->off;
	la->length = l->len;
	la->locker.new_lock_owner = l->new_owner;
	if (l->new_owner) {
		struct open_to_lock_owner4 *o = &la->locker.open_owner;
		o->open_seqid = 0;
		o->open_stateid = l->open_stateid;
		o->lock_seqid = 0;
		return owner_arg(c, l->owner, l->owner_len, &o->lock_owner);
	}
	la->locker.lock_owner.lock_stateid = l->lock_stateid;
	la->locker.lock_owner.lock_seqid = 0;
	return 0;
}

int nfs4c_op_lockt(struct nfs4c_compound *c, nfs_lock_type4 type, uint64_t off, uint64_t len,
		   const void *owner, uint32_t owner_len)
{
	struct nfs_argop4 *a = add(c, OP_LOCKT);
	if (!a)
		return -E2BIG;
	a->oplockt.locktype = type;
	a->oplockt.offset = off;
	a->oplockt.length = len;
	return owner_arg(c, owner, owner_len, &a->oplockt.owner);
}

int nfs4c_op_locku(struct nfs4c_compound *c, nfs_lock_type4 type, const struct stateid4 *sid,
		   uint64_t off, uint64_t len)
{
	struct nfs_argop4 *a = add(c, OP_LOCKU);
	if (!a)
		return -E2BIG;
	a->oplocku.locktype = type;
	a->oplocku.seqid = 0;
	a->oplocku.lock_stateid = *sid;
	a->oplocku.offset = off;
	a->oplocku.length = len;
	return 0;
}

int nfs4c_op_remove(struct nfs4c_compound *c, const char *name)
{
	struct nfs_argop4 *a = add(c, OP_REMOVE);
	return a ? name_arg(c, name, &a->opremove.target) : -E2BIG;
}

int nfs4c_op_rename(struct nfs4c_compound *c, const char *oldname, const char *newname)
{
	struct nfs_argop4 *a = add(c, OP_RENAME);
	if (!a)
		return -E2BIG;
	int err = name_arg(c, oldname, &a->oprename.oldname);
	return err ? err : name_arg(c, newname, &a->oprename.newname);
}

int nfs4c_op_link(struct nfs4c_compound *c, const char *name)
{
	struct nfs_argop4 *a = add(c, OP_LINK);
	return a ? name_arg(c, name, &a->oplink.newname) : -E2BIG;
}

int nfs4c_op_create(struct nfs4c_compound *c, nfs_ftype4 type, const char *name,
		    const char *linkdata, const struct specdata4 *rdev,
		    const struct nfs4c_sattr *attrs)
{
	static const struct nfs4c_sattr none;
	struct nfs_argop4 *a = add(c, OP_CREATE);
	if (!a)
		return -E2BIG;
	struct CREATE4args *ca = &a->opcreate;
	ca->objtype.type = type;
	if (type == NF4LNK) {
		utf8string s = nfs4c_str(c, linkdata ? linkdata : "");
		ca->objtype.linkdata.len = s.len;
		ca->objtype.linkdata.val = s.val;
	} else if ((type == NF4BLK || type == NF4CHR) && rdev) {
		ca->objtype.devdata = *rdev;
	}
	int err = name_arg(c, name, &ca->objname);
	return err ? err : nfs4c_sattr_encode(c, attrs ? attrs : &none, &ca->createattrs);
}

int nfs4c_op_readdir(struct nfs4c_compound *c, uint64_t cookie,
		     const uint8_t verf[NFS4_VERIFIER_SIZE], uint32_t dircount, uint32_t maxcount,
		     const bitmap4 *bm)
{
	struct nfs_argop4 *a = add(c, OP_READDIR);
	if (!a)
		return -E2BIG;
	struct READDIR4args *r = &a->opreaddir;
	r->cookie = cookie;
	if (verf)
		memcpy(r->cookieverf, verf, NFS4_VERIFIER_SIZE);
	r->dircount = dircount;
	r->maxcount = maxcount;
	if (bm)
		r->attr_request = *bm;
	return 0;
}

int nfs4c_op_setattr(struct nfs4c_compound *c, const struct stateid4 *sid,
		     const struct nfs4c_sattr *sa)
{
	struct nfs_argop4 *a = add(c, OP_SETATTR);
	if (!a)
		return -E2BIG;
	if (sid)
		a->opsetattr.stateid = *sid;
	return nfs4c_sattr_encode(c, sa, &a->opsetattr.obj_attributes);
}

int nfs4c_op_reclaim_complete(struct nfs4c_compound *c, bool one_fs)
{
	struct nfs_argop4 *a = add(c, OP_RECLAIM_COMPLETE);
	if (!a)
		return -E2BIG;
	a->opreclaim_complete.rca_one_fs = one_fs;
	return 0;
}

int nfs4c_op_free_stateid(struct nfs4c_compound *c, const struct stateid4 *sid)
{
	struct nfs_argop4 *a = add(c, OP_FREE_STATEID);
	if (!a)
		return -E2BIG;
	a->opfree_stateid.fsa_stateid = *sid;
	return 0;
}

int nfs4c_op_test_stateid(struct nfs4c_compound *c, const struct stateid4 *sids, uint32_t n)
{
	struct nfs_argop4 *a = add(c, OP_TEST_STATEID);
	if (!a)
		return -E2BIG;
	struct stateid4 *v = nfs4c_scratch(c, (size_t)n * sizeof(*v));
	if (!v)
		return -E2BIG;
	memcpy(v, sids, (size_t)n * sizeof(*v));
	a->optest_stateid.ts_stateids.len = n;
	a->optest_stateid.ts_stateids.val = v;
	return 0;
}

int nfs4c_op_secinfo_no_name(struct nfs4c_compound *c, secinfo_style4 style)
{
	struct nfs_argop4 *a = add(c, OP_SECINFO_NO_NAME);
	if (!a)
		return -E2BIG;
	a->opsecinfo_no_name = style;
	return 0;
}

int nfs4c_op_sequence(struct nfs4c_compound *c, uint32_t slot, uint32_t seqid, uint32_t highest,
		      bool cachethis)
{
	struct nfs_argop4 *a = add(c, OP_SEQUENCE);
	if (!a)
		return -E2BIG;
	struct SEQUENCE4args *s = &a->opsequence;
	if (c->cl) {
		struct nfs4c_info info;
		nfs4c_get_info(c->cl, &info);
		memcpy(s->sa_sessionid, info.sessionid, NFS4_SESSIONID_SIZE);
	}
	s->sa_sequenceid = seqid;
	s->sa_slotid = slot;
	s->sa_highest_slotid = highest;
	s->sa_cachethis = cachethis;
	return 0;
}

int nfs4c_op_getdeviceinfo(struct nfs4c_compound *c, const uint8_t id[NFS4_DEVICEID4_SIZE],
			   layouttype4 type, uint32_t maxcount, uint32_t notify_types)
{
	struct nfs_argop4 *a = add(c, OP_GETDEVICEINFO);
	if (!a)
		return -E2BIG;
	struct GETDEVICEINFO4args *g = &a->opgetdeviceinfo;
	memcpy(g->gdia_device_id, id, NFS4_DEVICEID4_SIZE);
	g->gdia_layout_type = type;
	g->gdia_maxcount = maxcount;
	if (notify_types) {
		g->gdia_notify_types.len = 1;
		g->gdia_notify_types.val[0] = notify_types;
	}
	return 0;
}

int nfs4c_op_getdevicelist(struct nfs4c_compound *c, layouttype4 type, uint32_t maxdevices,
			   uint64_t cookie, const uint8_t verf[NFS4_VERIFIER_SIZE])
{
	struct nfs_argop4 *a = add(c, OP_GETDEVICELIST);
	if (!a)
		return -E2BIG;
	struct GETDEVICELIST4args *g = &a->opgetdevicelist;
	g->gdla_layout_type = type;
	g->gdla_maxdevices = maxdevices;
	g->gdla_cookie = cookie;
	if (verf)
		memcpy(g->gdla_cookieverf, verf, NFS4_VERIFIER_SIZE);
	return 0;
}

int nfs4c_op_layoutget(struct nfs4c_compound *c, layouttype4 type, layoutiomode4 iomode,
		       uint64_t off, uint64_t len, uint64_t minlen, const struct stateid4 *sid,
		       uint32_t maxcount)
{
	struct nfs_argop4 *a = add(c, OP_LAYOUTGET);
	if (!a)
		return -E2BIG;
	struct LAYOUTGET4args *g = &a->oplayoutget;
	g->loga_signal_layout_avail = false;
	g->loga_layout_type = type;
	g->loga_iomode = iomode;
	g->loga_offset = off;
	g->loga_length = len;
	g->loga_minlength = minlen;
	g->loga_stateid = *sid;
	g->loga_maxcount = maxcount;
	return 0;
}

int nfs4c_op_layoutcommit(struct nfs4c_compound *c, const struct nfs4c_layoutcommit *lc)
{
	struct nfs_argop4 *a = add(c, OP_LAYOUTCOMMIT);
	if (!a)
		return -E2BIG;
	struct LAYOUTCOMMIT4args *l = &a->oplayoutcommit;
	l->loca_offset = lc->off;
	l->loca_length = lc->len;
	l->loca_reclaim = lc->reclaim;
	l->loca_stateid = lc->stateid;
	l->loca_last_write_offset.no_newoffset = lc->have_last_write;
	l->loca_last_write_offset.no_offset = lc->last_write;
	l->loca_time_modify.nt_timechanged = lc->have_mtime;
	l->loca_time_modify.nt_time = lc->mtime;
	l->loca_layoutupdate.lou_type = lc->type;
	if (lc->body_len) {
		uint8_t *p = nfs4c_scratch(c, lc->body_len);
		if (!p)
			return -E2BIG;
		memcpy(p, lc->body, lc->body_len);
		l->loca_layoutupdate.lou_body.len = lc->body_len;
		l->loca_layoutupdate.lou_body.val = p;
	}
	return 0;
}

int nfs4c_op_layoutreturn(struct nfs4c_compound *c, layouttype4 type, layoutiomode4 iomode,
			  layoutreturn_type4 kind, uint64_t off, uint64_t len,
			  const struct stateid4 *sid)
{
	struct nfs_argop4 *a = add(c, OP_LAYOUTRETURN);
	if (!a)
		return -E2BIG;
	struct LAYOUTRETURN4args *r = &a->oplayoutreturn;
	r->lora_reclaim = false;
	r->lora_layout_type = type;
	r->lora_iomode = iomode;
	r->lora_layoutreturn.lr_returntype = kind;
	if (kind == LAYOUTRETURN4_FILE) {
		r->lora_layoutreturn.lr_layout.lrf_offset = off;
		r->lora_layoutreturn.lr_layout.lrf_length = len;
		if (sid)
			r->lora_layoutreturn.lr_layout.lrf_stateid = *sid;
	}
	return 0;
}

int nfs4c_op_allocate(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		      uint64_t len)
{
	struct nfs_argop4 *a = add(c, OP_ALLOCATE);
	if (!a)
		return -E2BIG;
	a->opallocate.aa_stateid = *sid;
	a->opallocate.aa_offset = off;
	a->opallocate.aa_length = len;
	return 0;
}

int nfs4c_op_deallocate(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
			uint64_t len)
{
	struct nfs_argop4 *a = add(c, OP_DEALLOCATE);
	if (!a)
		return -E2BIG;
	a->opdeallocate.da_stateid = *sid;
	a->opdeallocate.da_offset = off;
	a->opdeallocate.da_length = len;
	return 0;
}

int nfs4c_op_seek(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		  data_content4 what)
{
	struct nfs_argop4 *a = add(c, OP_SEEK);
	if (!a)
		return -E2BIG;
	a->opseek.sa_stateid = *sid;
	a->opseek.sa_offset = off;
	a->opseek.sa_what = what;
	return 0;
}

int nfs4c_op_copy(struct nfs4c_compound *c, const struct stateid4 *src, const struct stateid4 *dst,
		  uint64_t src_off, uint64_t dst_off, uint64_t count)
{
	struct nfs_argop4 *a = add(c, OP_COPY);
	if (!a)
		return -E2BIG;
	struct COPY4args *ca = &a->opcopy;
	ca->ca_src_stateid = *src;
	ca->ca_dst_stateid = *dst;
	ca->ca_src_offset = src_off;
	ca->ca_dst_offset = dst_off;
	ca->ca_count = count;
	ca->ca_consecutive = true;
	ca->ca_synchronous = true;
	return 0;
}

int nfs4c_op_read_plus(struct nfs4c_compound *c, const struct stateid4 *sid, uint64_t off,
		       uint32_t count)
{
	struct nfs_argop4 *a = add(c, OP_READ_PLUS);
	if (!a)
		return -E2BIG;
	a->opread_plus.rpa_stateid = *sid;
	a->opread_plus.rpa_offset = off;
	a->opread_plus.rpa_count = count;
	return 0;
}

int nfs4c_op_clone(struct nfs4c_compound *c, const struct stateid4 *src, const struct stateid4 *dst,
		   uint64_t src_off, uint64_t dst_off, uint64_t count)
{
	struct nfs_argop4 *a = add(c, OP_CLONE);
	if (!a)
		return -E2BIG;
	struct CLONE4args *ca = &a->opclone;
	ca->cl_src_stateid = *src;
	ca->cl_dst_stateid = *dst;
	ca->cl_src_offset = src_off;
	ca->cl_dst_offset = dst_off;
	ca->cl_count = count;
	return 0;
}
