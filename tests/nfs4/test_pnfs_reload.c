/*
 * test_pnfs_reload.c - the first `pnfs` export may come with a reload
 * (SIGHUP), and then it serves layouts as one present at the start does
 * (docs/pnfs.md): EXCHANGE_ID says USE_PNFS_MDS, GETDEVICEINFO describes
 * the device, and a layout handed out is recalled when another client
 * writes the file through the server. Taking `pnfs` away again leaves pNFS
 * on for the clients that may still hold layouts.
 *
 *   test-pnfs-reload JNFSD JNFS
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "check.h"
#include "nfs4c/pnfs.h"
#include "pnfs_util.h"

static struct pu_server srv;

static uint64_t counter(const char *name)
{
	static char out[PU_OUT_MAX];
	const char *argv[] = {srv.jnfs, "stat", "--server", srv.addr, NULL};
	CHECK_EQ(pu_run(out, argv), 0);
	uint64_t v = pu_value(out, name);
	return v == UINT64_MAX ? 0 : v;
}

/* Write the exports file anew and SIGHUP; wait until the reload counted. */
static void reload(const char *line)
{
	FILE *f = fopen(srv.exports, "w");
	CHECK(f != NULL);
	fputs(line, f);
	CHECK_OK(fclose(f));
	uint64_t before = counter("exports.reloads");
	CHECK_OK(kill(srv.j.pid, SIGHUP));
	for (int i = 0; i < 200 && counter("exports.reloads") == before; i++)
		sleep_ns(10 * NSEC_PER_MSEC);
	CHECK_EQ(counter("exports.reloads"), before + 1);
}

static uint32_t exchange_flags(struct nfs4c_client *cl)
{
	struct nfs4c_info info;
	nfs4c_get_info(cl, &info);
	return info.eir_flags;
}

int main(int argc, char **argv)
{
	CHECK(argc == 3);
	pu_init(&srv, argv[1], argv[2], "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n");
	pu_start(&srv, NULL);

	struct nfs4c_fh root;
	struct nfs4c_client *a = pu_client(&srv, "reload-a", &root);
	CHECK(!(exchange_flags(a) & EXCHGID4_FLAG_USE_PNFS_MDS));
	pu_client_end(a);

	reload("/ 127.0.0.1(rw,sync,insecure,no_root_squash,pnfs)\n");
	a = pu_client(&srv, "reload-a2", &root);
	CHECK(exchange_flags(a) & EXCHGID4_FLAG_USE_PNFS_MDS);
	const char *disks[1] = {srv.image};
	struct nfs4c_pnfs_cfg pc = {.disks = disks, .ndisks = 1, .retry_ms = 20000};
	struct nfs4c_pnfs *p;
	CHECK_OK(nfs4c_pnfs_create(a, &pc, &p));
	struct nfs4c_pnfs_file *f;
	uint8_t buf[8192];
	pu_pattern(buf, sizeof(buf), 0, 3);
	CHECK_OK(nfs4c_pnfs_open(p, &root, "f", NFS4C_PNFS_TRUNC, &f));
	/* the write needs GETDEVICEINFO of the layout's device */
	CHECK_OK(nfs4c_pnfs_write(f, 0, buf, sizeof(buf)));
	CHECK_OK(nfs4c_pnfs_commit(f, NULL));
	CHECK(nfs4c_pnfs_extents(f) > 0);

	/* pnfs goes again: the layout A holds is still recalled by B's WRITE */
	reload("/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n");
	struct nfs4c_fh broot, bfh;
	struct stateid4 bsid;
	struct nfs4c_client *b = pu_client(&srv, "reload-b", &broot);
	CHECK(exchange_flags(b) & EXCHGID4_FLAG_USE_PNFS_MDS);
	CHECK_EQ(pu_open(b, &broot, "f", false, OPEN4_SHARE_ACCESS_BOTH, &bfh, &bsid), NFS4_OK);
	uint64_t recalls = counter("nfs4.layout.recalls_sent");
	nfsstat4 st = NFS4ERR_DELAY;
	for (int i = 0; i < 200 && st == NFS4ERR_DELAY; i++) {
		st = pu_write(b, &bfh, &bsid, 0, "B", 1, FILE_SYNC4);
		if (st == NFS4ERR_DELAY)
			sleep_ns(20 * NSEC_PER_MSEC);
	}
	CHECK_EQ(st, NFS4_OK);
	CHECK(counter("nfs4.layout.recalls_sent") > recalls);
	pu_close(b, &bfh, &bsid);
	pu_client_end(b);
	CHECK_OK(nfs4c_pnfs_close(f));
	nfs4c_pnfs_destroy(p);
	pu_client_end(a);
	pu_stop(&srv);
	pu_finish(&srv);
	printf("test-pnfs-reload: ok\n");
	return 0;
}
