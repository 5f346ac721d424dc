/*
 * nfs3_client.c - see nfs3_client.h.
 */
#include "nfs3/nfs3_client.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"


void raw_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct raw *r = priv;
	r->done = true;
	r->rpc_status = status;
	if (status == RPC_STATUS_SUCCESS && data) {
		r->nfs_status = *(uint32_t *)data; /* every result starts with its status */
		if (r->inspect)
			r->inspect(r, data);
	}
}

volatile int tn_abort;

int raw_wait(struct rpc_context *rpc, struct raw *r)
{
	/* 100 ms at a time, so that tn_abort is seen; 20 s in all */
	for (int waited = 0; !r->done; waited += 100) {
		if (tn_abort || waited >= 20000)
			return -1;
		struct pollfd p = {.fd = rpc_get_fd(rpc), .events = rpc_which_events(rpc)};
		int n = poll(&p, 1, 100);
		if (n < 0 || (n > 0 && rpc_service(rpc, p.revents) < 0))
			return -1;
	}
	return r->rpc_status == RPC_STATUS_SUCCESS ? 0 : -1;
}



void keep_fh(struct raw *r, const struct nfs_fh3 *fh)
{
	CHECK(fh->data.data_len <= sizeof(r->fhbuf));
	memcpy(r->fhbuf, fh->data.data_val, fh->data.data_len);
	r->fh.data.data_len = fh->data.data_len;
	r->fh.data.data_val = r->fhbuf;
}

void inspect_lookup(struct raw *r, void *res)
{
	LOOKUP3res *l = res;
	if (l->status == NFS3_OK)
		keep_fh(r, &l->LOOKUP3res_u.resok.object);
}

void inspect_create(struct raw *r, void *res)
{
	CREATE3res *c = res;
	if (c->status == NFS3_OK && c->CREATE3res_u.resok.obj.handle_follows)
		keep_fh(r, &c->CREATE3res_u.resok.obj.post_op_fh3_u.handle);
}

void inspect_write(struct raw *r, void *res)
{
	WRITE3res *w = res;
	if (w->status == NFS3_OK) {
		r->u32[0] = w->WRITE3res_u.resok.count;
		r->u32[1] = w->WRITE3res_u.resok.committed;
		memcpy(r->verf, w->WRITE3res_u.resok.verf, 8);
	}
}

void inspect_commit(struct raw *r, void *res)
{
	COMMIT3res *c = res;
	if (c->status == NFS3_OK)
		memcpy(r->verf, c->COMMIT3res_u.resok.verf, 8);
}

void inspect_getattr(struct raw *r, void *res)
{
	GETATTR3res *g = res;
	if (g->status == NFS3_OK) {
		fattr3 *a = &g->GETATTR3res_u.resok.obj_attributes;
		r->u64[0] = a->size;
		r->u32[0] = a->mode;
		r->u32[1] = a->ctime.seconds;
		r->u32[2] = a->ctime.nseconds;
		r->u32[3] = a->nlink;
		r->u64[1] = a->atime.seconds;
		r->u64[2] = a->mtime.seconds;
	}
}

struct nfs_context *tn_mount(uint16_t port, const char *export, int uid, int gid)
{
	char url[256];
	struct nfs_context *n = nfs_init_context();
	CHECK(n != NULL);
	nfs_set_uid(n, uid);
	nfs_set_gid(n, gid);
	snprintf(url, sizeof(url),
		 "nfs://127.0.0.1%s?version=3&nfsport=%u&mountport=%u&auto-traverse-mounts=0",
		 export, port, port);
	struct nfs_url *u = nfs_parse_url_dir(n, url);
	CHECK(u != NULL);
	int rc = nfs_mount(n, u->server, u->path);
	if (rc)
		fprintf(stderr, "mount %s: %s\n", export, nfs_get_error(n));
	CHECK_OK(rc);
	nfs_destroy_url(u);
	return n;
}

void inspect_mnt(struct raw *r, void *res)
{
	mountres3 *m = res;
	if (m->fhs_status == MNT3_OK) {
		struct nfs_fh3 fh = {{m->mountres3_u.mountinfo.fhandle.fhandle3_len,
				      m->mountres3_u.mountinfo.fhandle.fhandle3_val}};
		keep_fh(r, &fh);
		r->u32[0] = m->mountres3_u.mountinfo.fhandle.fhandle3_len;
		r->u32[1] = m->mountres3_u.mountinfo.auth_flavors.auth_flavors_len;
		r->u32[2] = r->u32[1] ? (uint32_t)m->mountres3_u.mountinfo.auth_flavors
						.auth_flavors_val[0]
				      : 0;
	}
}

void connect_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct raw *r = priv;
	r->done = true;
	r->rpc_status = status;
}

struct nfs_fh3 tn_handle_of(struct rpc_context *nfs_rpc, uint16_t port, const char *export,
			    const char *path, struct raw *keep)
{
	struct rpc_context *rpc = rpc_init_context();
	struct raw r = {0};
	RAW(rpc, &r, rpc_connect_port_async(rpc, "127.0.0.1", port, MOUNT_PROGRAM, MOUNT_V3,
					    connect_cb, &r));
	r.inspect = inspect_mnt;
	RAW(rpc, &r, rpc_mount3_mnt_async(rpc, raw_cb, (char *)export, &r));
	CHECK_EQ(r.nfs_status, MNT3_OK);
	rpc_destroy_context(rpc);
	char *copy = strdup(path), *save = NULL;
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		struct nfs_fh3 dir = r.fh;
		r.inspect = inspect_lookup;
		RAW(nfs_rpc, &r, rpc_nfs3_lookup_async(nfs_rpc, raw_cb, &(LOOKUP3args){{dir, c}}, &r));
		CHECK_EQ(r.nfs_status, NFS3_OK);
	}
	free(copy);
	*keep = r;
	keep->fh.data.data_val = keep->fhbuf;
	return keep->fh;
}

void tn_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	if (st != 0)
		fprintf(stderr, "command failed (%d): %s\n", st, cmd);
	CHECK_EQ(st, 0);
}
