/*
 * nfs3_bench.c - synchronous libnfs set-up for the NFSv3 benchmarks (see
 * nfs3_bench.h).
 */
#include <sys/time.h> /* before libnfs.h, which uses struct timeval */

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "base/time.h"
#include "bench_util.h"
#include "nfs3_bench.h"

#define STALL_SEC 120

/* One synchronous call: the callback fills it and clears busy. */
struct sync_call {
	const char *what;
	bool busy;
	struct fh *out;
};

nfs_fh3 fh_arg(struct fh *fh)
{
	return (nfs_fh3){.data = {.data_len = fh->len, .data_val = fh->data}};
}

void fh_copy(struct fh *dst, const nfs_fh3 *src)
{
	if (src->data.data_len > NFS3_FHSIZE)
		die("file handle of %u bytes", src->data.data_len);
	dst->len = src->data.data_len;
	memcpy(dst->data, src->data.data_val, dst->len);
}

void create_args(CREATE3args *a, struct fh *dir, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->where.dir = fh_arg(dir);
	a->where.name = (char *)name;
	a->how.mode = GUARDED;
	a->how.createhow3_u.g_obj_attributes.mode.set_it = 1;
	a->how.createhow3_u.g_obj_attributes.mode.set_mode3_u.mode = 0644;
}

/* Serve rpc until the call in sc is answered. */
static void wait_call(struct rpc_context *rpc, struct sync_call *sc)
{
	uint64_t t0 = now_ns();
	while (sc->busy) {
		struct pollfd pfd = {.fd = rpc_get_fd(rpc), .events = (short)rpc_which_events(rpc)};
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (rpc_service(rpc, pfd.revents) < 0)
			die("%s: %s", sc->what, rpc_get_error(rpc));
		if (now_ns() - t0 > (uint64_t)STALL_SEC * NSEC_PER_SEC)
			die("%s: no reply for %d s", sc->what, STALL_SEC);
	}
}

/* The message of a failed RPC (libnfs passes it as the result). */
static const char *rpc_failure(int status, void *res)
{
	return status == RPC_STATUS_ERROR && res ? (const char *)res : "cancelled or timed out";
}

static void connect_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct sync_call *sc = priv;
	if (status != RPC_STATUS_SUCCESS)
		die("%s: %s", sc->what, rpc_failure(status, res));
	sc->busy = false;
}

struct rpc_context *bench_nfs3_connect(const char *addr, unsigned port)
{
	struct rpc_context *rpc = rpc_init_context();
	if (!rpc)
		die("rpc_init_context failed");
	struct sync_call sc = {.what = "connect", .busy = true};
	if (rpc_connect_async(rpc, addr, (int)port, connect_cb, &sc))
		die("connect to %s:%u: %s", addr, port, rpc_get_error(rpc));
	wait_call(rpc, &sc);
	return rpc;
}

static void mnt_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct sync_call *sc = priv;
	mountres3 *r = res;
	if (status != RPC_STATUS_SUCCESS)
		die("%s: %s", sc->what, rpc_failure(status, res));
	if (r->fhs_status != MNT3_OK)
		die("%s: refused (status %d)", sc->what, (int)r->fhs_status);
	fhandle3 *h = &r->mountres3_u.mountinfo.fhandle;
	if (h->fhandle3_len > NFS3_FHSIZE)
		die("MNT: handle of %u bytes", h->fhandle3_len);
	sc->out->len = h->fhandle3_len;
	memcpy(sc->out->data, h->fhandle3_val, sc->out->len);
	sc->busy = false;
}

void bench_nfs3_mount(const char *addr, unsigned port, const char *export, struct fh *root)
{
	struct rpc_context *rpc = bench_nfs3_connect(addr, port);
	struct sync_call sc = {.what = "MNT", .busy = true, .out = root};
	if (rpc_mount3_mnt_async(rpc, mnt_cb, (char *)export, &sc))
		die("MNT: %s", rpc_get_error(rpc));
	wait_call(rpc, &sc);
	rpc_destroy_context(rpc);
}

static void mkdir_cb(struct rpc_context *rpc, int status, void *res, void *priv)
{
	struct sync_call *sc = priv;
	MKDIR3res *r = res;
	if (status != RPC_STATUS_SUCCESS)
		die("%s: %s", sc->what, rpc_failure(status, res));
	if (r->status != NFS3_OK)
		die("%s: NFS3 status %d", sc->what, (int)r->status);
	if (!r->MKDIR3res_u.resok.obj.handle_follows)
		die("%s returned no handle", sc->what);
	fh_copy(sc->out, &r->MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
	sc->busy = false;
}

void bench_nfs3_mkdir(struct rpc_context *rpc, struct fh *dir, const char *name, struct fh *out)
{
	MKDIR3args a;
	memset(&a, 0, sizeof(a));
	a.where.dir = fh_arg(dir);
	a.where.name = (char *)name;
	a.attributes.mode.set_it = 1;
	a.attributes.mode.set_mode3_u.mode = 0755;
	struct sync_call sc = {.what = "MKDIR", .busy = true, .out = out};
	if (rpc_nfs3_mkdir_async(rpc, mkdir_cb, &a, &sc))
		die("MKDIR: %s", rpc_get_error(rpc));
	wait_call(rpc, &sc);
}
