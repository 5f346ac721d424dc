/*
 * test_nfs3_reload.c - SIGHUP makes jnfsd read its exports file again,
 * with libnfs as the client and its connections open all along.
 *
 * The image holds /a/file ("aaaaa"), /b/file ("bbbbb") and /c/. jnfsd
 * starts with "/" as its only export, and one connection mounts it and
 * stays open to the end.
 *   1. New exports appear: the file gains /a and /b; after SIGHUP both
 *      mount, and the connection opened before reads through them.
 *   2. Removed and restricted exports: /b goes, "/" is admitted only to
 *      another address, /a stays as it was on another line. Handles of /a
 *      work on, with the same fsid; /b's answer STALE and MNT of /b NOENT;
 *      "/"'s answer ACCES; and the same connections answer the next call.
 *   3. Broken files (an unknown option, a path that is no directory, no
 *      file at all): refused and counted (exports.reload_failures), the log
 *      names the file and line, and every handle answers as after 2.
 *   4. /b back: its old handles work again (its fsid is its root's).
 *   5. Reloads under load: 200 reloads between two files that both keep
 *      /a, while another thread calls GETATTR and READ on /a's file, MNT of
 *      /a and EXPORT (which walks the whole table) on its own connections:
 *      every call succeeds. A table freed while a handler still read it
 *      would show as a wrong answer, or under AddressSanitizer.
 *   6. SIGTERM: exit 0; the image checks clean.
 *
 * usage: test-nfs3-reload JNFSD JNFS
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "jnfsd_proc.h"
#include "nfs3/nfs3_client.h"

static const char *jnfsd_bin, *jnfs_bin;
static struct tc_jnfsd jnfsd;
static char tmpdir[] = "/tmp/test-nfs3-reload.XXXXXX";
static char image[96], exports_path[96], log_path[96];
static uint64_t reloads, failures;

#define EXP_OPTS "(rw,insecure,no_root_squash)"

static void kill_server(void)
{
	if (jnfsd.pid > 0)
		kill(jnfsd.pid, SIGKILL); /* a failed check leaves it running */
}

struct handle {
	char buf[64];
	unsigned len;
};

static struct handle keep(const struct raw *r)
{
	struct handle h;
	CHECK(r->fh.data.data_len <= sizeof(h.buf));
	h.len = r->fh.data.data_len;
	memcpy(h.buf, r->fhbuf, h.len);
	return h;
}

static struct nfs_fh3 fh3(const struct handle *h)
{
	return (struct nfs_fh3){{h->len, (char *)h->buf}};
}

/* Written beside it and renamed over it, as an administrator's editor does. */
static void write_exports(const char *text)
{
	char tmp[128];
	snprintf(tmp, sizeof(tmp), "%s.new", exports_path);
	FILE *f = fopen(tmp, "w");
	CHECK(f != NULL);
	fputs(text, f);
	CHECK_OK(fclose(f));
	CHECK_OK(rename(tmp, exports_path));
}

/* SIGHUP, then wait until the server counted the reload (or the refusal). */
static void reload(bool good)
{
	uint64_t *want = good ? &reloads : &failures;
	const char *name = good ? "exports.reloads" : "exports.reload_failures";
	(*want)++;
	CHECK_OK(kill(jnfsd.pid, SIGHUP));
	uint64_t v = 0;
	for (int i = 0; i < 1000 && (v = tc_jnfsd_stat(&jnfsd, name)) < *want; i++)
		usleep(2000);
	CHECK_EQ(v, *want);
	CHECK_EQ(tc_jnfsd_stat(&jnfsd, good ? "exports.reload_failures" : "exports.reloads"),
		 good ? failures : reloads);
}

/* ---- calls ---- */

static void inspect_getattr_ids(struct raw *r, void *res)
{
	GETATTR3res *g = res;
	if (g->status == NFS3_OK) {
		r->u64[0] = g->GETATTR3res_u.resok.obj_attributes.fileid;
		r->u64[1] = g->GETATTR3res_u.resok.obj_attributes.fsid;
	}
}

static uint32_t getattr(struct rpc_context *rpc, const struct handle *h, uint64_t *fsid)
{
	struct raw r = {.inspect = inspect_getattr_ids};
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){fh3(h)}, &r));
	if (fsid && r.nfs_status == NFS3_OK)
		*fsid = r.u64[1];
	return r.nfs_status;
}

static void inspect_read(struct raw *r, void *res)
{
	READ3res *d = res;
	if (d->status == NFS3_OK) {
		u_int n = d->READ3res_u.resok.data.data_len;
		n = n < sizeof(r->text) - 1 ? n : sizeof(r->text) - 1;
		memcpy(r->text, d->READ3res_u.resok.data.data_val, n);
		r->text[n] = '\0';
	}
}

/* READ of the first bytes: the status, and the text in r->text. */
static uint32_t read_file(struct rpc_context *rpc, const struct handle *h, struct raw *r)
{
	*r = (struct raw){.inspect = inspect_read};
	RAW(rpc, r, rpc_nfs3_read_async(rpc, raw_cb, &(READ3args){fh3(h), 0, 100}, r));
	return r->nfs_status;
}

static uint32_t lookup(struct rpc_context *rpc, const struct handle *dir, const char *name,
		       struct handle *out)
{
	struct raw r = {.inspect = inspect_lookup};
	RAW(rpc, &r,
	    rpc_nfs3_lookup_async(rpc, raw_cb, &(LOOKUP3args){{fh3(dir), (char *)name}}, &r));
	if (r.nfs_status == NFS3_OK)
		*out = keep(&r);
	return r.nfs_status;
}

/* A connection to the MOUNT program. */
static struct rpc_context *mount_conn(void)
{
	struct rpc_context *rpc = rpc_init_context();
	struct raw r = {0};
	RAW(rpc, &r, rpc_connect_port_async(rpc, "127.0.0.1", jnfsd.port[0], MOUNT_PROGRAM,
					    MOUNT_V3, connect_cb, &r));
	return rpc;
}

/* MNT on rpc: the status, and the root handle when MNT3_OK. */
static uint32_t mnt(struct rpc_context *rpc, const char *export, struct handle *out)
{
	struct raw r = {.inspect = inspect_mnt};
	RAW(rpc, &r, rpc_mount3_mnt_async(rpc, raw_cb, (char *)export, &r));
	if (r.nfs_status == MNT3_OK && out)
		*out = keep(&r);
	return r.nfs_status;
}

static uint32_t mnt_once(const char *export, struct handle *out)
{
	struct rpc_context *rpc = mount_conn();
	uint32_t st = mnt(rpc, export, out);
	rpc_destroy_context(rpc);
	return st;
}

/* EXPORT: how many exports the list holds (-1 on error). */
static void inspect_export_count(struct raw *r, void *res)
{
	exports *e = res;
	r->u32[0] = 0;
	for (exportnode *x = *e; x; x = x->ex_next)
		r->u32[0]++;
}

static bool log_says(const char *what)
{
	char buf[8192];
	int fd = open(log_path, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n >= 0);
	buf[n] = '\0';
	return strstr(buf, what) != NULL;
}

/* ---- the load of step 5 ---- */

struct load {
	struct handle file;
	_Atomic bool stop;
	unsigned long calls, failed;
	char why[128];
};

static void *load_main(void *arg)
{
	struct load *l = arg;
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/a", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(n), *mrpc = mount_conn();
	while (!atomic_load(&l->stop) && !l->failed) {
		struct raw r;
		uint32_t st = getattr(rpc, &l->file, NULL);
		if (st == NFS3_OK)
			st = read_file(rpc, &l->file, &r);
		if (st == NFS3_OK && strcmp(r.text, "aaaaa"))
			st = 0xffff;
		if (st == NFS3_OK)
			st = mnt(mrpc, "/a", NULL);
		if (st == NFS3_OK) {
			r = (struct raw){.inspect = inspect_export_count};
			RAW(mrpc, &r, rpc_mount3_export_async(mrpc, raw_cb, &r));
			if (r.u32[0] != 2 && r.u32[0] != 3)
				st = 0xfffe;
		}
		l->calls += 4;
		if (st != NFS3_OK) {
			l->failed++;
			snprintf(l->why, sizeof(l->why), "status %u after %lu calls", st, l->calls);
		}
	}
	rpc_destroy_context(mrpc);
	nfs_destroy_context(n);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs3-reload JNFSD JNFS\n");
		return 2;
	}
	jnfsd_bin = argv[1];
	jnfs_bin = argv[2];
	signal(SIGPIPE, SIG_IGN);
	CHECK(mkdtemp(tmpdir) != NULL);
	atexit(kill_server);
	snprintf(image, sizeof(image), "%s/img", tmpdir);
	snprintf(exports_path, sizeof(exports_path), "%s/exports", tmpdir);
	snprintf(log_path, sizeof(log_path), "%s/jnfsd.log", tmpdir);
	tn_sh("%s mkfs %s --size 64M >/dev/null", jnfs_bin, image);
	tn_sh("%s io %s -c 'mkdir a' -c 'mkdir b' -c 'mkdir c' -c 'open a/file create' "
	      "-c 'pwrite 0 5 0x61' -c 'open b/file create' -c 'pwrite 0 5 0x62' >/dev/null",
	      jnfs_bin, image);

	/* jnfsd's messages go to a file the test reads (the child inherits fd 2) */
	write_exports("/ 127.0.0.1" EXP_OPTS "\n");
	int saved = dup(2), logfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(saved >= 0 && logfd >= 0);
	dup2(logfd, 2);
	const char *args[] = {"--image", image, "--exports", exports_path, "--listen", "127.0.0.1:0",
			      "--rpcbind", "off", "--threads", "4", NULL};
	tc_jnfsd_start(&jnfsd, jnfsd_bin, args);
	dup2(saved, 2);
	close(saved);
	close(logfd);

	/* the connection that stays open: "/" mounted */
	struct nfs_context *root_ctx = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(root_ctx);
	struct handle root, root_afile;
	CHECK_EQ(mnt_once("/", &root), MNT3_OK);
	CHECK_EQ(lookup(rpc, &root, "a", &root_afile), NFS3_OK);
	CHECK_EQ(lookup(rpc, &root_afile, "file", &root_afile), NFS3_OK);
	CHECK_EQ(mnt_once("/a", NULL), MNT3ERR_NOENT);

	/* 1. new exports */
	write_exports("/ 127.0.0.1" EXP_OPTS "\n/a 127.0.0.1" EXP_OPTS "\n/b 127.0.0.1" EXP_OPTS
		      "\n");
	reload(true);
	CHECK(log_says("exports reloaded from ") && log_says("(2 new, 0 removed, 1 with the same fsid)"));
	struct handle a_root, a_file, b_root, b_file;
	struct raw r;
	uint64_t a_fsid, b_fsid, fsid;
	CHECK_EQ(mnt_once("/a", &a_root), MNT3_OK);
	CHECK_EQ(mnt_once("/b", &b_root), MNT3_OK);
	CHECK_EQ(lookup(rpc, &a_root, "file", &a_file), NFS3_OK); /* on the old connection */
	CHECK_EQ(lookup(rpc, &b_root, "file", &b_file), NFS3_OK);
	CHECK_EQ(read_file(rpc, &a_file, &r), NFS3_OK);
	CHECK(strcmp(r.text, "aaaaa") == 0);
	CHECK_EQ(read_file(rpc, &b_file, &r), NFS3_OK);
	CHECK(strcmp(r.text, "bbbbb") == 0);
	CHECK_EQ(getattr(rpc, &a_file, &a_fsid), NFS3_OK);
	CHECK_EQ(getattr(rpc, &b_file, &b_fsid), NFS3_OK);
	CHECK(a_fsid != b_fsid);
	CHECK_EQ(read_file(rpc, &root_afile, &r), NFS3_OK); /* "/" as before */
	struct nfs_context *a_ctx = tn_mount(jnfsd.port[0], "/a", 0, 0);
	TEST_PASS("SIGHUP: new exports mount; the open connection reads through them");

	/* 2. /b removed, "/" for another address only, /a unchanged on another line */
	write_exports("# edited\n/ 10.9.9.9" EXP_OPTS "\n\n/a 127.0.0.1" EXP_OPTS "\n");
	reload(true);
	CHECK(log_says("(0 new, 1 removed, 2 with the same fsid)"));
	CHECK_EQ(getattr(rpc, &a_file, &fsid), NFS3_OK);
	CHECK_EQ(fsid, a_fsid);
	CHECK_EQ(read_file(rpc, &a_file, &r), NFS3_OK);
	CHECK_EQ(getattr(rpc, &b_file, NULL), NFS3ERR_STALE);
	CHECK_EQ(getattr(rpc, &b_root, NULL), NFS3ERR_STALE);
	CHECK_EQ(mnt_once("/b", NULL), MNT3ERR_NOENT);
	CHECK_EQ(getattr(rpc, &root, NULL), NFS3ERR_ACCES);
	CHECK_EQ(read_file(rpc, &root_afile, &r), NFS3ERR_ACCES);
	CHECK_EQ(mnt_once("/", NULL), MNT3ERR_ACCES);
	CHECK_EQ(getattr(rpc, &a_file, NULL), NFS3_OK); /* the same connection, still there */
	struct nfs_stat_64 st;
	CHECK_OK(nfs_stat64(a_ctx, "/file", &st)); /* a mount of /a from before */
	CHECK_EQ(st.nfs_size, 5);
	TEST_PASS("SIGHUP: removed export STALE, client not admitted ACCES, /a unchanged");

	/* 3. broken files change nothing */
	write_exports("/a 127.0.0.1" EXP_OPTS "\n/b 127.0.0.1(rw,nosuchoption)\n");
	reload(false);
	CHECK(log_says("exports not reloaded, the previous ones stay: "));
	char want[256];
	snprintf(want, sizeof(want), "%s:2: unknown option 'nosuchoption'", exports_path);
	CHECK(log_says(want));
	write_exports("/a 127.0.0.1" EXP_OPTS "\n\n/c/nowhere 127.0.0.1" EXP_OPTS "\n");
	reload(false);
	snprintf(want, sizeof(want), "%s:3: cannot export /c/nowhere", exports_path);
	CHECK(log_says(want));
	char moved[128];
	snprintf(moved, sizeof(moved), "%s.away", exports_path);
	CHECK_OK(rename(exports_path, moved));
	reload(false);
	CHECK_OK(rename(moved, exports_path));
	CHECK_EQ(getattr(rpc, &a_file, &fsid), NFS3_OK);
	CHECK_EQ(fsid, a_fsid);
	CHECK_EQ(getattr(rpc, &b_file, NULL), NFS3ERR_STALE);
	CHECK_EQ(getattr(rpc, &root, NULL), NFS3ERR_ACCES);
	CHECK_EQ(mnt_once("/a", NULL), MNT3_OK);
	CHECK_EQ(mnt_once("/b", NULL), MNT3ERR_NOENT);
	TEST_PASS("SIGHUP: a broken file is refused with its line named, nothing changes");

	/* 4. /b back: its old handles are good again */
	write_exports("/b 127.0.0.1" EXP_OPTS "\n/a 127.0.0.1" EXP_OPTS "\n/ 127.0.0.1" EXP_OPTS
		      "\n");
	reload(true);
	CHECK_EQ(getattr(rpc, &b_file, &fsid), NFS3_OK);
	CHECK_EQ(fsid, b_fsid);
	CHECK_EQ(read_file(rpc, &b_file, &r), NFS3_OK);
	CHECK(strcmp(r.text, "bbbbb") == 0);
	CHECK_EQ(getattr(rpc, &root, NULL), NFS3_OK);
	TEST_PASS("SIGHUP: an export back is the same export (its fsid is its root's)");

	/* 5. reloads while another thread calls */
	struct load load = {.file = a_file};
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, load_main, &load));
	for (int i = 0; i < 200 && !load.failed; i++) {
		if (i % 2)
			write_exports("/b 127.0.0.1" EXP_OPTS "\n/a 127.0.0.1" EXP_OPTS
				      "\n/ 127.0.0.1" EXP_OPTS "\n");
		else
			write_exports("/a 127.0.0.1" EXP_OPTS "\n/c 127.0.0.1" EXP_OPTS "\n");
		reload(true);
	}
	atomic_store(&load.stop, true);
	CHECK_OK(pthread_join(t, NULL));
	if (load.failed)
		fprintf(stderr, "load: %s\n", load.why);
	CHECK_EQ(load.failed, 0);
	CHECK(load.calls > 0);
	printf("reloads: %llu, calls during them: %lu, all answered\n",
	       (unsigned long long)reloads, load.calls);
	TEST_PASS("SIGHUP: 200 reloads under load, every call answered");

	/* 6. a clean stop */
	nfs_destroy_context(a_ctx);
	nfs_destroy_context(root_ctx);
	int status = tc_jnfsd_stop(&jnfsd);
	jnfsd.pid = 0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tn_sh("%s check %s >/dev/null", jnfs_bin, image);
	tn_sh("rm -rf %s", tmpdir);
	return 0;
}
