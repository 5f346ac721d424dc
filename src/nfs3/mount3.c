/*
 * mount3.c - MOUNT v3 (RFC 1813 appendix I), and the NFSv3 server's set-up.
 *
 * MNT hands out the root handle of an export the client is admitted to
 * (srv_admit, as for every NFS call); the list DUMP shows is advisory (as
 * everywhere: a client that never calls UMNT stays in it until UMNTALL or
 * a restart). Nothing depends on it: every NFS call checks access again.
 *
 * Arguments and results are the types generated from src/xdr/mount3.x
 * (docs/xdr.md). DUMP's and EXPORT's lists are built in memory of their
 * own (a node array and one block of text), freed by the release hook:
 * the exports table a reply names may be replaced before the reply is
 * encoded, and the mount list may change, so nothing points into either.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "nfs3/nfs3.h"
#include "xdr/mount3.h"

#define AUTH_SYS_FLAVOR 1
/* An EXPORT group: "*", an address, or an address and a prefix. */
#define GROUP_NAME_MAX (INET6_ADDRSTRLEN + 8)

_Static_assert(FH_SIZE <= FHSIZE3, "our handles fit MOUNT's");

/* One DUMP entry. */
struct nfs3_mount {
	struct nfs3_mount *next;
	char *host, *dir;
};

static struct lock_class mnt_lock_class = LOCK_CLASS(NFS3_MNT);

/* DUMP's result, and the memory it is in (freed by release). */
struct dump_res {
	mountlist3 list; /* first: what the encoder sees */
	struct mountbody *nodes;
	char *text;
};

/* EXPORT's result, and the memory it is in (freed by release). */
struct export_res {
	exports3 list; /* first: what the encoder sees */
	struct exportnode *nodes;
	struct groupnode *groups;
	char *text;
};

/* A path of the wire as a C string, within MNTPATHLEN (the decoder's
 * bound). */
static void path_of(const dirpath3 *p, char out[MNTPATHLEN + 1])
{
	memcpy(out, p->val, p->len);
	out[p->len] = '\0';
}

/* Copy s to *cursor in the text block; the wire string that names it. */
static const char *text_put(char **cursor, const char *s, uint32_t *len)
{
	char *at = *cursor;
	size_t n = strlen(s);
	memcpy(at, s, n);
	*cursor += n;
	*len = (uint32_t)n;
	return at;
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

static enum svc_stat mnt_null(struct svc_req *rq, const struct rpc_cred *rc, void *args, void *res)
{
	return SVC_OK;
}

static enum svc_stat mnt_mnt(struct svc_req *rq, const struct rpc_cred *rc, void *args, void *res)
{
	struct nfs3_server *s = svc_req_ctx(rq);
	struct mountres3 *r = res;
	char path[MNTPATHLEN + 1];
	path_of(args, path);
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	if (len == 0)
		strcpy(path, "/"); /* libnfs asks for "" when the URL names the root */
	const struct export *ex = exports_by_path(srv_exports(s->srv), path);
	if (!ex) {
		r->fhs_status = MNT3ERR_NOENT;
		return SVC_OK;
	}
	/* admitted as any NFS call is; the handle is the export's root's */
	struct srv_exp e;
	int err = srv_admit(s->srv, ex, rq, rc, &e);
	if (err) {
		r->fhs_status = err == -EPERM ? MNT3ERR_PERM : MNT3ERR_ACCES;
		return SVC_OK;
	}
	struct fs_attr root = {.ino = ex->root_ino, .gen = ex->root_gen};
	struct mountres3_ok *ok = &r->mountinfo;
	srv_fh_make(s->srv, ex, &root, ok->fhandle.val);
	ok->fhandle.len = FH_SIZE;
	ok->auth_flavors.len = 1;
	ok->auth_flavors.val[0] = AUTH_SYS_FLAVOR;
	r->fhs_status = MNT3_OK;

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

static enum svc_stat mnt_dump(struct svc_req *rq, const struct rpc_cred *rc, void *args, void *res)
{
	struct nfs3_server *s = svc_req_ctx(rq);
	struct dump_res *r = res;
	uint32_t n = 0;
	size_t text = 0;
	mutex_lock(&s->mnt_lock);
	for (struct nfs3_mount *m = s->mounts; m; m = m->next, n++)
		text += strlen(m->host) + strlen(m->dir);
	r->nodes = xcalloc(n + 1, sizeof(*r->nodes));
	r->text = xmalloc(text + 1);
	char *cursor = r->text;
	struct mountbody *b = r->nodes;
	for (struct nfs3_mount *m = s->mounts; m; m = m->next, b++) {
		b->ml_hostname.val = text_put(&cursor, m->host, &b->ml_hostname.len);
		b->ml_directory.val = text_put(&cursor, m->dir, &b->ml_directory.len);
		b->ml_next = m->next ? b + 1 : NULL;
	}
	mutex_unlock(&s->mnt_lock);
	r->list = n ? r->nodes : NULL;
	return SVC_OK;
}

static void mnt_release_dump(void *args, void *res)
{
	struct dump_res *r = res;
	free(r->nodes);
	free(r->text);
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

static enum svc_stat mnt_umnt(struct svc_req *rq, const struct rpc_cred *rc, void *args, void *res)
{
	char host[INET6_ADDRSTRLEN], path[MNTPATHLEN + 1];
	path_of(args, path);
	peer_name(rq, host, sizeof(host));
	mounts_forget(svc_req_ctx(rq), host, path);
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

static void client_name(const struct export_client *cl, char out[GROUP_NAME_MAX])
{
	char addr[INET6_ADDRSTRLEN];
	if (!cl->family) {
		snprintf(out, GROUP_NAME_MAX, "*");
		return;
	}
	inet_ntop(cl->family, cl->addr, addr, sizeof(addr));
	unsigned full = cl->family == AF_INET ? 32 : 128;
	if (cl->prefix == full)
		snprintf(out, GROUP_NAME_MAX, "%s", addr);
	else
		snprintf(out, GROUP_NAME_MAX, "%s/%u", addr, cl->prefix);
}

static enum svc_stat mnt_export(struct svc_req *rq, const struct rpc_cred *rc, void *args,
				void *res)
{
	struct nfs3_server *s = svc_req_ctx(rq);
	struct export_res *r = res;
	const struct exports *e = srv_exports(s->srv);
	uint32_t ng = 0;
	size_t text = 0;
	for (unsigned i = 0; i < e->n; i++) {
		ng += e->v[i].nclients;
		text += strlen(e->v[i].path) + e->v[i].nclients * GROUP_NAME_MAX;
	}
	r->nodes = xcalloc(e->n + 1, sizeof(*r->nodes));
	r->groups = xcalloc(ng + 1, sizeof(*r->groups));
	r->text = xmalloc(text + 1);
	char *cursor = r->text;
	struct exportnode *x = r->nodes, *prev = NULL;
	struct groupnode *g = r->groups;
	for (unsigned i = 0; i < e->n; i++) {
		const struct export *ex = &e->v[i];
		if (strlen(ex->path) > MNTPATHLEN)
			continue; /* not a dirpath3: MNT could not name it either */
		x->ex_dir.val = text_put(&cursor, ex->path, &x->ex_dir.len);
		x->ex_groups = ex->nclients ? g : NULL;
		for (unsigned j = 0; j < ex->nclients; j++, g++) {
			char name[GROUP_NAME_MAX];
			client_name(&ex->clients[j], name);
			g->gr_name.val = text_put(&cursor, name, &g->gr_name.len);
			g->gr_next = j + 1 < ex->nclients ? g + 1 : NULL;
		}
		if (prev)
			prev->ex_next = x;
		prev = x++;
	}
	r->list = prev ? r->nodes : NULL;
	return SVC_OK;
}

static void mnt_release_export(void *args, void *res)
{
	struct export_res *r = res;
	free(r->nodes);
	free(r->groups);
	free(r->text);
}

/* Reply bounds (svc.h): MNT's status, handle and one flavour; DUMP and
 * EXPORT list every export and client, so they take the server's
 * max_reply (0). */
static const struct svc_proc mount3_procs[] = {
	[MOUNTPROC3_NULL] = {.name = "null",
			     .decode = svc_dec_void,
			     .handler = mnt_null,
			     .encode = svc_enc_void,
			     .flags = SVC_PROC_INLINE,
			     .reply_max = SVC_REPLY_HDR},
	[MOUNTPROC3_MNT] = {.name = "mnt",
			    .decode = mount3_rpc_dec_dirpath3,
			    .handler = mnt_mnt,
			    .encode = mount3_rpc_enc_mountres3,
			    .args_size = sizeof(dirpath3),
			    .res_size = sizeof(struct mountres3),
			    .reply_max = SVC_REPLY_HDR + 4 + 4 + FHSIZE3 + 4 + 4},
	[MOUNTPROC3_DUMP] = {.name = "dump",
			     .decode = svc_dec_void,
			     .handler = mnt_dump,
			     .encode = mount3_rpc_enc_mountlist3,
			     .release = mnt_release_dump,
			     .res_size = sizeof(struct dump_res)},
	[MOUNTPROC3_UMNT] = {.name = "umnt",
			     .decode = mount3_rpc_dec_dirpath3,
			     .handler = mnt_umnt,
			     .encode = svc_enc_void,
			     .args_size = sizeof(dirpath3),
			     .reply_max = SVC_REPLY_HDR},
	[MOUNTPROC3_UMNTALL] = {.name = "umntall",
				.decode = svc_dec_void,
				.handler = mnt_umntall,
				.encode = svc_enc_void,
				.reply_max = SVC_REPLY_HDR},
	[MOUNTPROC3_EXPORT] = {.name = "export",
			       .decode = svc_dec_void,
			       .handler = mnt_export,
			       .encode = mount3_rpc_enc_exports3,
			       .release = mnt_release_export,
			       .res_size = sizeof(struct export_res)},
};

const struct svc_version mount3_version = {.vers = MOUNT_V3,
					   .nprocs = sizeof(mount3_procs) / sizeof(mount3_procs[0]),
					   .procs = mount3_procs};

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
