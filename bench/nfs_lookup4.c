/*
 * nfs_lookup4.c - nfs-lookup's NFSv4.1 half (src/nfs4c): one client ID and
 * session, the timed lookups as SEQUENCE PUTFH LOOKUP GETFH GETATTR, k
 * compounds in flight from k threads on the one session (see
 * nfs_lookup.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/time.h"
#include "bench_util.h"
#include "nfs4c/nfs4c.h"
#include "nfs_lookup.h"

struct nfs_lookup_conn {
	struct nfs4c_client *cl;
	struct nfs4c_fh root, exp;
	struct nfs4c_fh dirs[NFS_LOOKUP_DIRS];
	bitmap4 attrs;
};

static void send_checked(struct nfs4c_compound *c, const char *what)
{
	int err = nfs4c_send(c);
	if (err)
		die("%s: %s", what, strerror(-err));
	if (c->status != NFS4_OK)
		die("%s: NFS4 status %d", what, (int)c->status);
}

struct nfs_lookup_conn *nfs_lookup4_open(const struct nfs_lookup_server *s, unsigned k)
{
	struct nfs_lookup_conn *c = calloc(1, sizeof(*c));
	if (!c)
		die("out of memory");
	struct nfs4c_cfg cfg;
	char addr[160], owner[96];
	nfs4c_cfg_default(&cfg);
	snprintf(addr, sizeof(addr), "%s:%u", s->addr, s->port);
	snprintf(owner, sizeof(owner), "nfs-lookup/%d", (int)getpid());
	cfg.addr = addr;
	cfg.owner = owner;
	cfg.cred.uid = cfg.cred.gid = 0;
	if (cfg.fore_slots < k)
		cfg.fore_slots = k;
	int err = nfs4c_create(&cfg, &c->cl);
	if (err)
		die("connect to %s: %s", addr, strerror(-err));
	err = nfs4c_mount(c->cl, &c->root);
	if (err)
		die("mount: %s", err < 0 ? strerror(-err) : "the server refused (NFS4 status)");
	nfs4c_bitmap_std(&c->attrs);

	struct nfs4c_compound cc;
	nfs4c_compound_init(&cc, c->cl);
	nfs4c_op_putfh(&cc, &c->root);
	nfs4c_op_lookup_path(&cc, s->export);
	nfs4c_op_getfh(&cc);
	send_checked(&cc, "LOOKUP of the export");
	if (nfs4c_res_fh(&cc, &c->exp))
		die("LOOKUP %s returned no handle", s->export);
	nfs4c_compound_destroy(&cc);
	return c;
}

void nfs_lookup4_find_dir(struct nfs_lookup_conn *c, int dir, const char *path)
{
	struct nfs4c_compound cc;
	nfs4c_compound_init(&cc, c->cl);
	nfs4c_op_putfh(&cc, &c->exp);
	nfs4c_op_lookup_path(&cc, path);
	nfs4c_op_getfh(&cc);
	send_checked(&cc, "LOOKUP of a directory");
	if (nfs4c_res_fh(&cc, &c->dirs[dir]))
		die("LOOKUP %s returned no handle", path);
	nfs4c_compound_destroy(&cc);
}

/* One thread's share: lookups i = first, first + step, ... */
struct worker {
	pthread_t thread;
	struct nfs_lookup_conn *c;
	const struct nfs4c_fh *dir;
	const uint64_t *idx;
	uint64_t *lat_ns;
	uint64_t first, n, step;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct nfs4c_compound cc;
	char name[32];
	nfs4c_compound_init(&cc, w->c->cl);
	for (uint64_t i = w->first; i < w->n; i += w->step) {
		nfs_lookup_name(name, sizeof(name), w->idx[i]);
		nfs4c_compound_reset(&cc);
		/* built before the clock starts: the client's building is not
		 * the server's lookup */
		nfs4c_op_putfh(&cc, w->dir);
		nfs4c_op_lookup(&cc, name);
		nfs4c_op_getfh(&cc);
		nfs4c_op_getattr(&cc, &w->c->attrs);
		uint64_t t0 = now_ns();
		send_checked(&cc, "LOOKUP");
		w->lat_ns[i] = now_ns() - t0;
	}
	nfs4c_compound_destroy(&cc);
	return NULL;
}

void nfs_lookup4_lookups(struct nfs_lookup_conn *c, int dir, const uint64_t *idx, uint64_t n,
			 unsigned k, uint64_t *lat_ns)
{
	struct worker *w = calloc(k, sizeof(*w));
	if (!w)
		die("out of memory");
	for (unsigned t = 0; t < k; t++) {
		w[t] = (struct worker){.c = c,
				       .dir = &c->dirs[dir],
				       .idx = idx,
				       .lat_ns = lat_ns,
				       .first = t,
				       .n = n,
				       .step = k};
		if (k == 1)
			worker_main(&w[t]);
		else if (pthread_create(&w[t].thread, NULL, worker_main, &w[t]))
			die("cannot start a thread");
	}
	for (unsigned t = 0; k > 1 && t < k; t++)
		pthread_join(w[t].thread, NULL);
	free(w);
}

void nfs_lookup4_close(struct nfs_lookup_conn *c)
{
	nfs4c_unmount(c->cl);
	nfs4c_destroy(c->cl);
	free(c);
}
