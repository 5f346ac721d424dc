/*
 * pnfs_util.c - see pnfs_util.h.
 */
#include "pnfs_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "check.h"

/* ---- the server ---- */

void pu_init(struct pu_server *s, const char *jnfsd, const char *jnfs, const char *exports)
{
	memset(s, 0, sizeof(*s));
	s->jnfsd = jnfsd;
	s->jnfs = jnfs;
	strcpy(s->dir, "/tmp/pnfs-test.XXXXXX");
	CHECK(mkdtemp(s->dir));
	snprintf(s->image, sizeof(s->image), "%s/img", s->dir);
	snprintf(s->exports, sizeof(s->exports), "%s/exports", s->dir);
	FILE *f = fopen(s->exports, "w");
	CHECK(f);
	fputs(exports ? exports : "/ 127.0.0.1(rw,sync,insecure,no_root_squash,pnfs)\n", f);
	fclose(f);
}

void pu_start(struct pu_server *s, const char *const *extra)
{
	const char *args[48] = {"--image",  s->image,	"--size",      "256M",	    "--exports",
				s->exports, "--listen", "127.0.0.1:0", "--rpcbind", "off"};
	unsigned n = 10;
	for (unsigned i = 0; extra && extra[i]; i++) {
		CHECK(n < 46);
		args[n++] = extra[i];
	}
	args[n] = NULL;
	tc_jnfsd_start(&s->j, s->jnfsd, args);
	snprintf(s->addr, sizeof(s->addr), "127.0.0.1:%u", s->j.port[0]);
	snprintf(s->url, sizeof(s->url), "nfs://%s/", s->addr);
	s->running = true;
}

void pu_stop(struct pu_server *s)
{
	int status = tc_jnfsd_stop(&s->j);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	s->running = false;
}

void pu_kill(struct pu_server *s)
{
	int status;
	CHECK_OK(kill(s->j.pid, SIGKILL));
	CHECK_EQ(waitpid(s->j.pid, &status, 0), s->j.pid);
	close(s->j.out_fd);
	s->running = false;
}

void pu_finish(struct pu_server *s)
{
	if (s->running)
		pu_stop(s);
	char *out = xmalloc(PU_OUT_MAX);
	const char *check[] = {s->jnfs, "check", s->image, NULL};
	CHECK_EQ(pu_run(out, check), 0);
	printf("jnfs check: %s", out);
	free(out);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
	CHECK_EQ(system(cmd), 0);
}

pid_t pu_spawn(const char *const *argv, int *out)
{
	int pfd[2];
	CHECK_OK(pipe(pfd));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	*out = pfd[0];
	return pid;
}

int pu_run(char *out, const char *const *argv)
{
	int fd;
	pid_t pid = pu_spawn(argv, &fd);
	static char sink[4096];
	size_t n = 0;
	for (;;) {
		ssize_t r = out ? read(fd, out + n, PU_OUT_MAX - 1 - n)
				: read(fd, sink, sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (out)
			n += (size_t)r;
	}
	if (out)
		out[n] = '\0';
	close(fd);
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int pu_run_echo(char *out, const char *const *argv)
{
	int status = pu_run(out, argv);
	printf("$");
	for (int i = 0; argv[i]; i++)
		printf(" %s", argv[i]);
	printf("\n%s", out);
	return status;
}

uint64_t pu_value(const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, name, n) && l[n] == ' ')
			return strtoull(l + n + 1, NULL, 10);
	return UINT64_MAX;
}

/* ---- clients ---- */

struct nfs4c_client *pu_client(const struct pu_server *s, const char *owner, struct nfs4c_fh *root)
{
	struct nfs4c_cfg cfg;
	struct nfs4c_client *cl;
	nfs4c_cfg_default(&cfg);
	cfg.addr = s->addr;
	cfg.owner = owner;
	cfg.eia_flags = EXCHGID4_FLAG_USE_PNFS_MDS;
	cfg.cred.uid = cfg.cred.gid = 0;
	cfg.reconnect_ms = 10000; /* a jnfsd that died fails the test soon */
	CHECK_OK(nfs4c_create(&cfg, &cl));
	CHECK_OK(nfs4c_mount(cl, root));
	return cl;
}

void pu_client_end(struct nfs4c_client *cl)
{
	CHECK_EQ(nfs4c_unmount(cl), NFS4_OK);
	nfs4c_destroy(cl);
}

/* Send c and reset it for the next use: the compound's status. */
static nfsstat4 send(struct nfs4c_compound *c)
{
	int err = nfs4c_send(c);
	if (err) {
		fprintf(stderr, "a compound of %u operations (the last %d) failed: %d, rpc %d\n",
			c->nops, c->nops ? (int)c->ops[c->nops - 1].argop : -1, err,
			(int)c->rh.stat);
		CHECK_OK(err);
	}
	return c->status;
}

void pu_lookup(struct nfs4c_client *cl, const struct nfs4c_fh *root, const char *path,
	       struct nfs4c_fh *out)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, root);
	nfs4c_op_lookup_path(&c, path);
	nfs4c_op_getfh(&c);
	CHECK_EQ(send(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_fh(&c, out));
	nfs4c_compound_destroy(&c);
}

nfsstat4 pu_open(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *name, bool create,
		 uint32_t access, struct nfs4c_fh *fh, struct stateid4 *sid)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, dir);
	nfs4c_op_open(&c, &(struct nfs4c_open){.owner = "pnfs-test",
					       .owner_len = 9,
					       .access = access,
					       .claim = CLAIM_NULL,
					       .name = name,
					       .create = create,
					       .how = UNCHECKED4,
					       .attrs = {.set = NFS4C_SA_MODE, .mode = 0644}});
	nfs4c_op_getfh(&c);
	nfsstat4 st = send(&c);
	if (st == NFS4_OK) {
		CHECK_OK(nfs4c_res_fh(&c, fh));
		*sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	}
	nfs4c_compound_destroy(&c);
	return st;
}

void pu_close(struct nfs4c_client *cl, const struct nfs4c_fh *fh, const struct stateid4 *sid)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_close(&c, sid);
	CHECK_EQ(send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
}

nfsstat4 pu_write(struct nfs4c_client *cl, const struct nfs4c_fh *fh, const struct stateid4 *sid,
		  uint64_t off, const void *data, uint32_t len, stable_how4 how)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_write(&c, sid, off, how, data, len);
	nfsstat4 st = send(&c);
	if (st == NFS4_OK)
		CHECK_EQ(nfs4c_res(&c, OP_WRITE, 0)->opwrite.resok4.count, len);
	nfs4c_compound_destroy(&c);
	return st;
}

nfsstat4 pu_read(struct nfs4c_client *cl, const struct nfs4c_fh *fh, const struct stateid4 *sid,
		 uint64_t off, void *buf, uint32_t len, uint32_t *got)
{
	*got = 0;
	while (*got < len) {
		struct nfs4c_compound c;
		nfs4c_compound_init(&c, cl);
		nfs4c_op_putfh(&c, fh);
		nfs4c_op_read(&c, sid, off + *got, MIN(len - *got, 1u << 20));
		nfsstat4 st = send(&c);
		if (st) {
			nfs4c_compound_destroy(&c);
			return st;
		}
		const struct READ4resok *r = &nfs4c_res(&c, OP_READ, 0)->opread.resok4;
		CHECK(r->data.len <= len - *got);
		memcpy((uint8_t *)buf + *got, r->data.val, r->data.len);
		*got += r->data.len;
		bool done = r->eof || !r->data.len;
		nfs4c_compound_destroy(&c);
		if (done)
			break;
	}
	return NFS4_OK;
}

void pu_getattr(struct nfs4c_client *cl, const struct nfs4c_fh *fh, uint64_t *size,
		uint64_t *change)
{
	struct nfs4c_compound c;
	struct nfs4c_attr a;
	bitmap4 bm = {0};
	nfs4c_bitmap_set(&bm, FATTR4_CHANGE);
	nfs4c_bitmap_set(&bm, FATTR4_SIZE);
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_getattr(&c, &bm);
	CHECK_EQ(send(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_attr(&c, &a));
	if (size)
		*size = a.size;
	if (change)
		*change = a.change;
	nfs4c_compound_destroy(&c);
}

/* ---- layouts ---- */

nfsstat4 pu_layoutget(struct nfs4c_client *cl, const struct nfs4c_fh *fh, layoutiomode4 iomode,
		      uint64_t off, uint64_t len, uint64_t minlen, const struct stateid4 *sid,
		      uint32_t maxcount, struct pu_layout *out)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, iomode, off, len, minlen, sid, maxcount);
	nfsstat4 st = send(&c);
	if (st == NFS4_OK && out) {
		const struct LAYOUTGET4resok *ok =
			&nfs4c_res(&c, OP_LAYOUTGET, 0)->oplayoutget.logr_resok4;
		CHECK_EQ(ok->logr_layout.len, 1);
		const struct layout4 *l = &ok->logr_layout.val[0];
		CHECK_EQ(l->lo_content.loc_type, LAYOUT4_BLOCK_VOLUME);
		memset(out, 0, sizeof(*out));
		out->stateid = ok->logr_stateid;
		out->off = l->lo_offset;
		out->len = l->lo_length;
		out->iomode = l->lo_iomode;
		CHECK_OK(nfs4c_blk_layout_decode(l->lo_content.loc_body.val,
						 l->lo_content.loc_body.len, l->lo_iomode, 4096,
						 out->ext, PU_MAX_EXT, &out->n));
	}
	nfs4c_compound_destroy(&c);
	return st;
}

nfsstat4 pu_layoutcommit(struct nfs4c_client *cl, const struct nfs4c_fh *fh,
			 const struct stateid4 *sid, const struct nfs4c_blk_ext *ext, unsigned n,
			 uint64_t last_write, uint64_t *new_size)
{
	struct xdr_enc x;
	xdr_enc_init(&x, 1u << 20);
	CHECK_OK(nfs4c_blk_update_encode(&x, ext, n));
	uint8_t *body = xmalloc(xdr_enc_len(&x) + 1);
	xdr_enc_flatten(&x, body);
	struct nfs4c_layoutcommit lc = {.off = 0,
					.len = UINT64_MAX,
					.stateid = *sid,
					.have_last_write = last_write != UINT64_MAX,
					.last_write = last_write,
					.type = LAYOUT4_BLOCK_VOLUME,
					.body = body,
					.body_len = (uint32_t)xdr_enc_len(&x)};
	xdr_enc_destroy(&x);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_layoutcommit(&c, &lc);
	nfsstat4 st = send(&c);
	if (st == NFS4_OK && new_size) {
		const struct newsize4 *ns =
			&nfs4c_res(&c, OP_LAYOUTCOMMIT, 0)->oplayoutcommit.locr_resok4.locr_newsize;
		*new_size = ns->ns_sizechanged ? ns->ns_size : UINT64_MAX;
	}
	nfs4c_compound_destroy(&c);
	free(body);
	return st;
}

nfsstat4 pu_layoutreturn(struct nfs4c_client *cl, const struct nfs4c_fh *fh, layoutiomode4 iomode,
			 layoutreturn_type4 kind, uint64_t off, uint64_t len,
			 const struct stateid4 *sid, struct stateid4 *out)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	if (fh)
		nfs4c_op_putfh(&c, fh);
	nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, iomode, kind, off, len, sid);
	nfsstat4 st = send(&c);
	if (st == NFS4_OK && out) {
		const struct layoutreturn_stateid *r =
			&nfs4c_res(&c, OP_LAYOUTRETURN, 0)->oplayoutreturn.lorr_stateid;
		memset(out, 0, sizeof(*out));
		if (r->lrs_present)
			*out = r->lrs_stateid;
	}
	nfs4c_compound_destroy(&c);
	return st;
}

nfsstat4 pu_getdeviceinfo(struct nfs4c_client *cl, const uint8_t id[NFS4_DEVICEID4_SIZE],
			  uint32_t maxcount)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_getdeviceinfo(&c, id, LAYOUT4_BLOCK_VOLUME, maxcount, 0);
	nfsstat4 st = send(&c);
	nfs4c_compound_destroy(&c);
	return st;
}

void pu_pattern(uint8_t *b, size_t len, uint64_t off, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t v = (off + i) * 0x9e3779b97f4a7c15ull + seed * 0x632be59bd9b4e019ull;
		b[i] = (uint8_t)(v >> 56);
	}
}
