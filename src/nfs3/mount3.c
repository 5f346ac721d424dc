/*
 * mount3.c - MOUNT v3 (RFC 1813 appendix I), and the NFSv3 server's set-up.
 *
 * MNT hands out the root handle of an export the client is admitted to
 * (srv_admit, as for every NFS call); the list DUMP shows is advisory (as
 * everywhere: a client that never calls UMNT stays in it until UMNTALL or
 * a restart). Nothing depends on it: every NFS call checks access again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "nfs3/nfs3.h"
#include "nfs3/nfs3_xdr.h"

#define MNTPATHLEN 1024

enum mountstat3 {
	MNT3_OK = 0,
	MNT3ERR_PERM = 1,
	MNT3ERR_NOENT = 2,
	MNT3ERR_ACCES = 13,
	MNT3ERR_NOTDIR = 20,
	MNT3ERR_NAMETOOLONG = 63,
	MNT3ERR_SERVERFAULT = 10006,
};

#define AUTH_SYS_FLAVOR 1

/* One DUMP entry. */
struct nfs3_mount {
	struct nfs3_mount *next;
	char *host, *dir;
};

static struct lock_class mnt_lock_class = LOCK_CLASS(NFS3_MNT);

struct mnt_args {
	char path[MNTPATHLEN + 1];
};

struct mnt_res {
	uint32_t status;
	struct nfs3_fh fh;
};

/* DUMP and EXPORT replies are built as text-free lists of strings. */
struct strlist_res {
	char **a, **b; /* DUMP: hosts and dirs; EXPORT: dirs and group lists */
	uint32_t *nb;  /* EXPORT: groups per export */
	uint32_t n;
};

static int dec_path(struct xdr_dec *x, void *args)
{
	struct mnt_args *a = args;
	return xdr_dec_string(x, a->path, MNTPATHLEN);
}

static int enc_mnt(struct xdr_enc *x, const void *res)
{
	const struct mnt_res *r = res;
	int err;
	if ((err = xdr_enc_u32(x, r->status)) || r->status != MNT3_OK)
		return err;
	if ((err = xdr_enc_opaque(x, r->fh.data, r->fh.len)))
		return err;
	if ((err = xdr_enc_u32(x, 1)))
		return err;
	return xdr_enc_u32(x, AUTH_SYS_FLAVOR);
}

static int enc_dump(struct xdr_enc *x, const void *res)
{
	const struct strlist_res *r = res;
	int err;
	for (uint32_t i = 0; i < r->n; i++) {
		if ((err = xdr_enc_bool(x, true)) || (err = xdr_enc_string(x, r->a[i])) ||
		    (err = xdr_enc_string(x, r->b[i])))
			return err;
	}
	return xdr_enc_bool(x, false);
}

static int enc_export(struct xdr_enc *x, const void *res)
{
	const struct strlist_res *r = res;
	int err;
	for (uint32_t i = 0, g = 0; i < r->n; i++) {
		if ((err = xdr_enc_bool(x, true)) || (err = xdr_enc_string(x, r->a[i])))
			return err;
		for (uint32_t j = 0; j < r->nb[i]; j++, g++)
			if ((err = xdr_enc_bool(x, true)) || (err = xdr_enc_string(x, r->b[g])))
				return err;
		if ((err = xdr_enc_bool(x, false)))
			return err;
	}
	return xdr_enc_bool(x, false);
}

static void release_strlist(void *args, void *res)
{
	struct strlist_res *r = res;
	uint32_t nb = r->n;
	if (r->nb) {
		nb = 0;
		for (uint32_t i = 0; i < r->n; i++)
			nb += r->nb[i];
	}
	for (uint32_t i = 0; i < r->n; i++)
		free(r->a[i]);
	for (uint32_t i = 0; i < nb; i++)
		free(r->b[i]);
	free(r->a);
	free(r->b);
	free(r->nb);
}

static void peer_name(struct svc_req *rq, char *buf, size_t len)
{
	const struct sockaddr_storage *ss = svc_conn_peer(svc_req_conn(rq));
	const void *addr = ss->ss_family == AF_INET6
				   ? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
				   : (const void *)&((const struct sockaddr_in *)ss)->sin_addr;
	if (!inet_ntop(ss->ss_family, addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static enum svc_stat mnt_null(struct svc_req *rq, const struct rpc_cred *rc, void *args,
			      void *res)
{
	return SVC_OK;
}

static enum svc_stat mnt_mnt(struct svc_req *rq, const struct rpc_cred *rc, void *args,
			     void *res)
{
	struct nfs3_server *s = svc_req_ctx(rq);
	struct mnt_args *a = args;
	struct mnt_res *r = res;
	size_t len = strlen(a->path);
	while (len > 1 && a->path[len - 1] == '/')
		a->path[--len] = '\0';
	if (len == 0)
		strcpy(a->path, "/"); /* libnfs asks for "" when the URL names the root */
	const struct export *ex = exports_by_path(srv_exports(s->srv), a->path);
	if (!ex) {
		r->status = MNT3ERR_NOENT;
		return SVC_OK;
	}
	/* admitted as any NFS call is; the handle is the export's root's */
	struct srv_exp e;
	int err = srv_admit(s->srv, ex, rq, rc, &e);
	if (err) {
		r->status = err == -EPERM ? MNT3ERR_PERM : MNT3ERR_ACCES;
		return SVC_OK;
	}
	struct fs_attr root = {.ino = ex->root_ino, .gen = ex->root_gen};
	srv_fh_make(s->srv, ex, &root, r->fh.data);
	r->fh.len = FH_SIZE;
	r->status = MNT3_OK;

	char host[INET6_ADDRSTRLEN];
	peer_name(rq, host, sizeof(host));
	mutex_lock(&s->mnt_lock);
	struct nfs3_mount *m;
	for (m = s->mounts; m; m = m->next)
		if (!strcmp(m->host, host) && !strcmp(m->dir, ex->path))
			break;
	if (!m) {
		m = xmalloc(sizeof(*m));
		m->host = xstrdup(host);
		m->dir = xstrdup(ex->path);
		m->next = s->mounts;
		s->mounts = m;
	}
	mutex_unlock(&s->mnt_lock);
	return SVC_OK;
}

static enum svc_stat mnt_dump(struct svc_req *rq, const struct rpc_cred *rc, void *args,
			      void *res)
{
	struct nfs3_server *s = svc_req_ctx(rq);
	struct strlist_res *r = res;
	mutex_lock(&s->mnt_lock);
	for (struct nfs3_mount *m = s->mounts; m; m = m->next)
		r->n++;
	r->a = xcalloc(r->n + 1, sizeof(char *));
	r->b = xcalloc(r->n + 1, sizeof(char *));
	uint32_t i = 0;
	for (struct nfs3_mount *m = s->mounts; m; m = m->next, i++) {
		r->a[i] = xstrdup(m->host);
		r->b[i] = xstrdup(m->dir);
	}
	mutex_unlock(&s->mnt_lock);
	return SVC_OK;
}

/* Forget host's entries (all of them, or those for dir). */
static void mounts_forget(struct nfs3_server *s, const char *host, const char *dir)
{
	mutex_lock(&s->mnt_lock);
	for (struct nfs3_mount **pp = &s->mounts; *pp;) {
		struct nfs3_mount *m = *pp;
		if (!strcmp(m->host, host) && (!dir || !strcmp(m->dir, dir))) {
			*pp = m->next;
			free(m->host);
			free(m->dir);
			free(m);
		} else {
			pp = &m->next;
		}
	}
	mutex_unlock(&s->mnt_lock);
}

static enum svc_stat mnt_umnt(struct svc_req *rq, const struct rpc_cred *rc, void *args,
			      void *res)
{
	struct mnt_args *a = args;
	char host[INET6_ADDRSTRLEN];
	peer_name(rq, host, sizeof(host));
	mounts_forget(svc_req_ctx(rq), host, a->path);
	return SVC_OK;
}

static enum svc_stat mnt_umntall(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				 void *res)
{
	char host[INET6_ADDRSTRLEN];
	peer_name(rq, host, sizeof(host));
	mounts_forget(svc_req_ctx(rq), host, NULL);
	return SVC_OK;
}

static char *client_name(const struct export_client *cl)
{
	char addr[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 8];
	if (!cl->family)
		return xstrdup("*");
	inet_ntop(cl->family, cl->addr, addr, sizeof(addr));
	unsigned full = cl->family == AF_INET ? 32 : 128;
	if (cl->prefix == full)
		return xstrdup(addr);
	snprintf(buf, sizeof(buf), "%s/%u", addr, cl->prefix);
	return xstrdup(buf);
}

static enum svc_stat mnt_export(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	struct nfs3_server *s = svc_req_ctx(rq);
	struct strlist_res *r = res;
	const struct exports *e = srv_exports(s->srv);
	uint32_t ng = 0;
	for (unsigned i = 0; i < e->n; i++)
		ng += e->v[i].nclients;
	r->n = e->n;
	r->a = xcalloc(e->n + 1, sizeof(char *));
	r->b = xcalloc(ng + 1, sizeof(char *));
	r->nb = xcalloc(e->n + 1, sizeof(uint32_t));
	for (unsigned i = 0, g = 0; i < e->n; i++) {
		r->a[i] = xstrdup(e->v[i].path);
		r->nb[i] = e->v[i].nclients;
		for (unsigned j = 0; j < e->v[i].nclients; j++)
			r->b[g++] = client_name(&e->v[i].clients[j]);
	}
	return SVC_OK;
}

/* Reply bounds (svc.h): MNT's status, handle and one flavour; DUMP and
 * EXPORT list every export and client, so they take the server's
 * max_reply (0). */
static const struct svc_proc mount3_procs[] = {
	[0] = {.name = "null", .decode = svc_dec_void, .handler = mnt_null, .encode = svc_enc_void,
	       .flags = SVC_PROC_INLINE, .reply_max = SVC_REPLY_HDR},
	[1] = {.name = "mnt", .decode = dec_path, .handler = mnt_mnt, .encode = enc_mnt,
	       .args_size = sizeof(struct mnt_args), .res_size = sizeof(struct mnt_res),
	       .reply_max = SVC_REPLY_HDR + 4 + 4 + NFS3_FHSIZE + 4 + 4},
	[2] = {.name = "dump", .decode = svc_dec_void, .handler = mnt_dump, .encode = enc_dump,
	       .release = release_strlist, .res_size = sizeof(struct strlist_res)},
	[3] = {.name = "umnt", .decode = dec_path, .handler = mnt_umnt, .encode = svc_enc_void,
	       .args_size = sizeof(struct mnt_args), .reply_max = SVC_REPLY_HDR},
	[4] = {.name = "umntall", .decode = svc_dec_void, .handler = mnt_umntall,
	       .encode = svc_enc_void, .reply_max = SVC_REPLY_HDR},
	[5] = {.name = "export", .decode = svc_dec_void, .handler = mnt_export, .encode = enc_export,
	       .release = release_strlist, .res_size = sizeof(struct strlist_res)},
};

const struct svc_version mount3_version = {.vers = 3, .nprocs = 6, .procs = mount3_procs};

/* ---- the server ---- */

void nfs3_server_init(struct nfs3_server *s, struct srv *srv)
{
	memset(s, 0, sizeof(*s));
	s->srv = srv;
	mutex_init(&s->mnt_lock, &mnt_lock_class);
}

void nfs3_server_destroy(struct nfs3_server *s)
{
	while (s->mounts) {
		struct nfs3_mount *m = s->mounts;
		s->mounts = m->next;
		free(m->host);
		free(m->dir);
		free(m);
	}
	mutex_destroy(&s->mnt_lock);
}
