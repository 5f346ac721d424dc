/*
 * nfs4_test.c - see nfs4_test.h.
 */
#include "nfs4_test.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

void nfs4t_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	if (st != 0)
		fprintf(stderr, "command failed (%d): %s\n", st, cmd);
	CHECK_EQ(st, 0);
}

void nfs4t_server_init(struct nfs4t_server *s, const char *jnfsd, const char *jnfs,
		       unsigned size_mib, const char *const *mkdirs, const char *exports)
{
	memset(s, 0, sizeof(*s));
	s->jnfsd = jnfsd;
	s->jnfs = jnfs;
	strcpy(s->tmp, "/tmp/test-nfs4.XXXXXX");
	CHECK(mkdtemp(s->tmp) != NULL);
	snprintf(s->image, sizeof(s->image), "%s/img", s->tmp);
	snprintf(s->exports, sizeof(s->exports), "%s/exports", s->tmp);
	nfs4t_sh("%s mkfs %s --size %uM >/dev/null", jnfs, s->image, size_mib);
	for (unsigned i = 0; mkdirs && mkdirs[i]; i++)
		nfs4t_sh("%s io %s -c 'mkdir %s' >/dev/null", jnfs, s->image, mkdirs[i]);
	FILE *f = fopen(s->exports, "w");
	CHECK(f != NULL);
	CHECK(fputs(exports, f) >= 0);
	CHECK_OK(fclose(f));
}

void nfs4t_server_start(struct nfs4t_server *s, const char *const *args)
{
	int n = 0;
	/* started again: on the same address, where the clients reconnect */
	const char *listen = s->addr[0] ? s->addr : "127.0.0.1:0";
	const char *base[] = {"--image",  s->image, "--exports", s->exports,
			      "--listen", listen,   "--rpcbind", "off"};
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		s->args[n++] = base[i];
	for (int i = 0; args && args[i]; i++) {
		CHECK(n < 31);
		s->args[n++] = args[i];
	}
	s->args[n] = NULL;
	tc_jnfsd_start(&s->j, s->jnfsd, s->args);
	snprintf(s->addr, sizeof(s->addr), "127.0.0.1:%u", s->j.port[0]);
}

void nfs4t_server_stop(struct nfs4t_server *s)
{
	int status = tc_jnfsd_stop(&s->j);
	s->j.pid = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "jnfsd: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit status",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

void nfs4t_server_fini(struct nfs4t_server *s)
{
	if (s->j.pid > 0)
		nfs4t_server_stop(s);
	nfs4t_sh("%s check %s >/dev/null", s->jnfs, s->image);
	nfs4t_sh("rm -rf %s", s->tmp);
}

struct nfs4c_client *nfs4t_client(const char *addr, const char *owner, struct nfs4c_fh *root)
{
	struct nfs4c_cfg cfg;
	struct nfs4c_client *cl;
	nfs4c_cfg_default(&cfg);
	cfg.addr = addr;
	cfg.owner = owner;
	cfg.cred.uid = cfg.cred.gid = 0;
	cfg.reconnect_ms = 15000; /* a server that died is not waited for long */
	CHECK_OK(nfs4c_create(&cfg, &cl));
	CHECK_OK(nfs4c_mount(cl, root));
	return cl;
}

void nfs4t_unmount(struct nfs4c_client *cl)
{
	CHECK_EQ(nfs4c_unmount(cl), NFS4_OK);
	nfs4c_destroy(cl);
}

nfsstat4 nfs4t_send(struct nfs4c_compound *c)
{
	int err = nfs4c_send(c);
	if (err)
		fprintf(stderr, "compound not answered: %d\n", err);
	CHECK_OK(err);
	return c->status;
}

void nfs4t_lookup(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *path,
		  struct nfs4c_fh *out)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, dir);
	nfs4c_op_lookup_path(&c, path);
	nfs4c_op_getfh(&c);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_fh(&c, out));
	nfs4c_compound_destroy(&c);
}

void nfs4t_getattr(struct nfs4c_client *cl, const struct nfs4c_fh *fh, struct nfs4c_attr *a)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_getattr(&c, NULL);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_attr(&c, a));
	nfs4c_compound_destroy(&c);
}

nfsstat4 nfs4t_exists(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *name)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, dir);
	nfs4c_op_lookup(&c, name);
	nfsstat4 st = nfs4t_send(&c);
	nfs4c_compound_destroy(&c);
	return st;
}

void nfs4t_open_create(struct nfs4c_client *cl, const struct nfs4c_fh *dir, const char *name,
		       const char *owner, struct nfs4c_fh *fh, struct stateid4 *sid)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, dir);
	struct nfs4c_open o = {.owner = owner,
			       .owner_len = (uint32_t)strlen(owner),
			       .access = OPEN4_SHARE_ACCESS_BOTH,
			       .deny = OPEN4_SHARE_DENY_NONE,
			       .claim = CLAIM_NULL,
			       .name = name,
			       .create = true,
			       .how = UNCHECKED4,
			       .attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	nfs4c_op_open(&c, &o);
	nfs4c_op_getfh(&c);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	CHECK_OK(nfs4c_res_fh(&c, fh));
	*sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	nfs4c_compound_destroy(&c);
}

void nfs4t_close(struct nfs4c_client *cl, const struct nfs4c_fh *fh, const struct stateid4 *sid)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	nfs4c_op_close(&c, sid);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
}

nfsstat4 nfs4t_stateid_op(struct nfs4c_client *cl, const struct nfs4c_fh *fh, nfs_opnum4 op,
			  const struct stateid4 *sid, struct stateid4 *out)
{
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, fh);
	switch (op) {
	case OP_CLOSE:
		nfs4c_op_close(&c, sid);
		break;
	case OP_LOCKU:
		nfs4c_op_locku(&c, WRITE_LT, sid, 0, 10);
		break;
	case OP_FREE_STATEID:
		nfs4c_op_free_stateid(&c, sid);
		break;
	case OP_OPEN_DOWNGRADE:
		nfs4c_op_open_downgrade(&c, sid, OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_NONE);
		break;
	case OP_LOCK: {
		struct nfs4c_lock l = {.type = WRITE_LT, .off = 0, .len = 10, .lock_stateid = *sid};
		nfs4c_op_lock(&c, &l);
		break;
	}
	default:
		CHECK(false);
	}
	nfsstat4 st = nfs4t_send(&c);
	if (st == NFS4_OK && op == OP_LOCKU && out)
		*out = nfs4c_res(&c, OP_LOCKU, 0)->oplocku.lock_stateid;
	nfs4c_compound_destroy(&c);
	return st;
}

void nfs4t_stats(struct tc_jnfsd *j, struct nfs4t_stats *st)
{
	char line[256];
	size_t n = 0;
	st->n = 0;
	CHECK_OK(kill(j->pid, SIGUSR1));
	for (;;) {
		char ch;
		if (read(j->out_fd, &ch, 1) != 1) {
			fprintf(stderr, "jnfsd is gone while its counters were read\n");
			exit(1);
		}
		if (ch != '\n') {
			if (n < sizeof(line) - 1)
				line[n++] = ch;
			continue;
		}
		line[n] = '\0';
		n = 0;
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		if (strcmp(line, "stats.end") == 0)
			return;
		if (sp - line >= (long)sizeof(st->name[0]) || st->n == NFS4T_MAX_STATS)
			continue;
		strcpy(st->name[st->n], line);
		st->value[st->n++] = strtoull(sp + 1, NULL, 10);
	}
}

static bool stat_find(const struct nfs4t_stats *st, const char *name, uint64_t *v)
{
	bool found = false;
	for (unsigned i = 0; i < st->n; i++) {
		if (strcmp(st->name[i], name) == 0) {
			*v = st->value[i];
			found = true;
		}
	}
	return found;
}

uint64_t nfs4t_stat(const struct nfs4t_stats *st, const char *name)
{
	uint64_t v = 0;
	if (!stat_find(st, name, &v)) {
		fprintf(stderr, "no counter %s\n", name);
		exit(1);
	}
	return v;
}

uint64_t nfs4t_stat0(const struct nfs4t_stats *st, const char *name)
{
	uint64_t v = 0;
	return stat_find(st, name, &v) ? v : 0;
}

long nfs4t_rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	CHECK(kib > 0);
	return kib;
}
