/*
 * nfs_lookup3.c - nfs-lookup's NFSv3 half (libnfs): the directories made by
 * pipelined CREATEs, and the timed LOOKUP3 calls, k in flight on one
 * connection (see nfs_lookup.h).
 */
#include <sys/time.h> /* before libnfs.h, which uses struct timeval */

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "base/time.h"
#include "bench_util.h"
#include "nfs3_bench.h"
#include "nfs_lookup.h"

#define STALL_SEC 120

struct nfs_lookup_conn {
	struct rpc_context *rpc;
	struct fh root;
	struct fh dirs[NFS_LOOKUP_DIRS];
};

/* One call in flight: its send time, and where its latency goes. */
struct call {
	struct nfs_lookup_conn *c;
	const char *what;
	uint64_t t0;
	uint64_t *lat;
	struct fh *out; /* LOOKUP of a directory: its handle */
	bool busy;
	char name[32];
};

/* Serve the connection until fewer than `most` calls are busy. */
static void serve_until(struct nfs_lookup_conn *c, const unsigned *busy, unsigned most)
{
	uint64_t t0 = now_ns();
	while (*busy >= most && *busy) {
		struct pollfd pfd = {.fd = rpc_get_fd(c->rpc),
				     .events = (short)rpc_which_events(c->rpc)};
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (rpc_service(c->rpc, pfd.revents) < 0)
			die("NFSv3: %s", rpc_get_error(c->rpc));
		if (now_ns() - t0 > (uint64_t)STALL_SEC * NSEC_PER_SEC)
			die("NFSv3: no reply for %d s", STALL_SEC);
	}
}

static unsigned g_busy; /* calls in flight (one connection at a time) */

static void create_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct call *k = priv;
	CREATE3res *r = res;
	(void)rpc;
	if (status != RPC_STATUS_SUCCESS)
		die("CREATE %s: RPC failed", k->name);
	if (r->status != NFS3_OK)
		die("CREATE %s: NFS3 status %d", k->name, (int)r->status);
	k->busy = false;
	g_busy--;
}

static void lookup_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct call *k = priv;
	LOOKUP3res *r = res;
	(void)rpc;
	if (status != RPC_STATUS_SUCCESS)
		die("LOOKUP %s: RPC failed", k->name);
	if (r->status != NFS3_OK)
		die("LOOKUP %s: NFS3 status %d", k->name, (int)r->status);
	if (k->lat)
		*k->lat = now_ns() - k->t0;
	if (k->out)
		fh_copy(k->out, &r->LOOKUP3res_u.resok.object);
	k->busy = false;
	g_busy--;
}

/* A free call among the k in calls (one must be free). */
static struct call *free_call(struct call *calls, unsigned k)
{
	for (unsigned i = 0; i < k; i++)
		if (!calls[i].busy)
			return &calls[i];
	die("NFSv3: no free call");
}

struct nfs_lookup_conn *nfs_lookup3_open(const struct nfs_lookup_server *s)
{
	struct nfs_lookup_conn *c = calloc(1, sizeof(*c));
	if (!c)
		die("out of memory");
	bench_nfs3_mount(s->addr, s->mount_port, s->export, &c->root);
	c->rpc = bench_nfs3_connect(s->addr, s->port);
	return c;
}

void nfs_lookup3_make_dir(struct nfs_lookup_conn *c, int dir, const char *path, uint64_t n,
			  unsigned inflight)
{
	bench_nfs3_mkdir(c->rpc, &c->root, path, &c->dirs[dir]);
	struct call *calls = calloc(inflight, sizeof(*calls));
	if (!calls)
		die("out of memory");
	for (uint64_t i = 0; i < n; i++) {
		serve_until(c, &g_busy, inflight);
		struct call *k = free_call(calls, inflight);
		nfs_lookup_name(k->name, sizeof(k->name), i);
		CREATE3args a;
		create_args(&a, &c->dirs[dir], k->name);
		k->busy = true;
		g_busy++;
		if (rpc_nfs3_create_async(c->rpc, create_cb, &a, k))
			die("CREATE: %s", rpc_get_error(c->rpc));
	}
	serve_until(c, &g_busy, 1);
	free(calls);
}

static void lookup_start(struct nfs_lookup_conn *c, struct call *k, struct fh *dir)
{
	LOOKUP3args a;
	memset(&a, 0, sizeof(a));
	a.what.dir = fh_arg(dir);
	a.what.name = k->name;
	k->busy = true;
	g_busy++;
	k->t0 = now_ns();
	if (rpc_nfs3_lookup_async(c->rpc, lookup_cb, &a, k))
		die("LOOKUP: %s", rpc_get_error(c->rpc));
}

void nfs_lookup3_find_dir(struct nfs_lookup_conn *c, int dir, const char *path)
{
	struct call k = {.c = c, .out = &c->dirs[dir]};
	snprintf(k.name, sizeof(k.name), "%s", path);
	lookup_start(c, &k, &c->root);
	serve_until(c, &g_busy, 1);
}

void nfs_lookup3_lookups(struct nfs_lookup_conn *c, int dir, const uint64_t *idx, uint64_t n,
			 unsigned k, uint64_t *lat_ns)
{
	struct call *calls = calloc(k, sizeof(*calls));
	if (!calls)
		die("out of memory");
	for (uint64_t i = 0; i < n; i++) {
		serve_until(c, &g_busy, k);
		struct call *call = free_call(calls, k);
		call->c = c;
		call->lat = &lat_ns[i];
		nfs_lookup_name(call->name, sizeof(call->name), idx[i]);
		lookup_start(c, call, &c->dirs[dir]);
	}
	serve_until(c, &g_busy, 1);
	free(calls);
}

void nfs_lookup3_close(struct nfs_lookup_conn *c)
{
	rpc_destroy_context(c->rpc);
	free(c);
}
