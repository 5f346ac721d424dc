/*
 * test_nfs3_exports.c - the export boundary through a running jnfsd, with
 * libnfs as the client.
 *
 * Handles outlive restarts, and the exports file may change in between.
 * The image holds
 *   /a/file /a/d/ /a/m/      exported as /a
 *   /b/file                  exported as /b
 *   /secret /out/            exported by nobody
 * Handles of /a are taken, then jnfsd restarts with the lines reordered
 * (and /a/m moved to /out/m meanwhile, offline): an old /a handle must
 * still name /a's inode in /a's export (same fileid, same fsid as a fresh
 * MNT of /a gives), never /b's; LOOKUP ".." and the ".." entry of
 * READDIRPLUS from the root of /a and from /a/d stay in /a, and from the
 * moved-out /a/m give nothing (ACCES, no handle), so /, /out and /secret
 * stay out of reach. Then jnfsd restarts without /a: its handles are STALE.
 *
 * READDIRPLUS hands out a handle per entry: it must be the handle of the
 * inode the name names (with its generation), so that once the file is
 * removed and its number reused the old handle is STALE.
 *
 * Without an exports file jnfsd exports "/" read-write with root not
 * squashed: it must refuse a listener that is not loopback, and admit
 * loopback clients only.
 *
 * usage: test-nfs3-exports JNFSD JNFS
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/time.h"
#include "check.h"
#include "jnfsd_proc.h"
#include "nfs3/nfs3_client.h"

static const char *jnfsd_bin, *jnfs_bin;
static struct tc_jnfsd jnfsd;
static char tmpdir[] = "/tmp/test-nfs3-exports.XXXXXX";
static char image[96], exports_path[96];

static void kill_server(void)
{
	if (jnfsd.pid > 0)
		kill(jnfsd.pid, SIGKILL); /* a failed check leaves it running */
}

/* A handle kept across calls and restarts. */
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

static struct nfs_fh3 fh3(struct handle *h)
{
	return (struct nfs_fh3){{h->len, h->buf}};
}

/* ---- the server, restarted with another exports file ---- */

static void serve(const char *exports_text)
{
	FILE *f = fopen(exports_path, "w");
	CHECK(f != NULL);
	fputs(exports_text, f);
	fclose(f);
	const char *args[] = {"--image", image, "--exports", exports_path, "--listen", "127.0.0.1:0",
			      "--rpcbind", "off", "--threads", "2", NULL};
	tc_jnfsd_start(&jnfsd, jnfsd_bin, args);
}

static void stop(void)
{
	int status = tc_jnfsd_stop(&jnfsd);
	jnfsd.pid = 0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The inode number of name in the root, read offline (jnfs io readdir
 * prints "name ino type"). */
static uint64_t offline_ino(const char *name)
{
	char cmd[256], line[512];
	snprintf(cmd, sizeof(cmd), "%s io %s -c 'readdir'", jnfs_bin, image);
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	uint64_t ino = 0;
	while (fgets(line, sizeof(line), p)) {
		char n[256];
		unsigned long long i;
		if (sscanf(line, "%255s %llu", n, &i) == 2 && !strcmp(n, name))
			ino = i;
	}
	CHECK_OK(pclose(p));
	CHECK(ino != 0);
	return ino;
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

/* GETATTR: the status; fileid and fsid when OK. */
static uint32_t getattr(struct rpc_context *rpc, struct handle *h, uint64_t *fileid, uint64_t *fsid)
{
	struct raw r = {.inspect = inspect_getattr_ids};
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){fh3(h)}, &r));
	if (fileid)
		*fileid = r.u64[0];
	if (fsid)
		*fsid = r.u64[1];
	return r.nfs_status;
}

/* LOOKUP: the status; the handle when OK. */
static uint32_t lookup(struct rpc_context *rpc, struct handle *dir, const char *name,
		       struct handle *out)
{
	struct raw r = {.inspect = inspect_lookup};
	RAW(rpc, &r,
	    rpc_nfs3_lookup_async(rpc, raw_cb, &(LOOKUP3args){{fh3(dir), (char *)name}}, &r));
	if (r.nfs_status == NFS3_OK)
		*out = keep(&r);
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

/* READ of the first bytes, as a string. */
static uint32_t read_text(struct rpc_context *rpc, struct handle *h, char *out, size_t len)
{
	struct raw r = {.inspect = inspect_read};
	RAW(rpc, &r, rpc_nfs3_read_async(rpc, raw_cb, &(READ3args){fh3(h), 0, 100}, &r));
	r.text[len - 1] = '\0';
	memcpy(out, r.text, strlen(r.text) + 1);
	return r.nfs_status;
}

/* READDIRPLUS: finds the entry named r->text; u32[0] found, u32[1] with a
 * handle (kept), u64[0] its fileid. */
static void inspect_rdplus_entry(struct raw *r, void *res)
{
	READDIRPLUS3res *d = res;
	r->u32[0] = r->u32[1] = 0;
	if (d->status != NFS3_OK)
		return;
	for (entryplus3 *e = d->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
		if (strcmp(e->name, r->text))
			continue;
		r->u32[0] = 1;
		r->u64[0] = e->fileid;
		if (e->name_handle.handle_follows) {
			r->u32[1] = 1;
			keep_fh(r, &e->name_handle.post_op_fh3_u.handle);
		}
	}
}

/* READDIRPLUS of dir (one call: small directories): the entry name, its
 * fileid, and its handle if one was given (returns whether). */
static bool rdplus_entry(struct rpc_context *rpc, struct handle *dir, const char *name,
			 uint64_t *fileid, struct handle *out)
{
	struct raw r = {.inspect = inspect_rdplus_entry};
	snprintf(r.text, sizeof(r.text), "%s", name);
	READDIRPLUS3args a = {.dir = fh3(dir), .dircount = 8192, .maxcount = 65536};
	RAW(rpc, &r, rpc_nfs3_readdirplus_async(rpc, raw_cb, &a, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK(r.u32[0]); /* the entry is there */
	if (fileid)
		*fileid = r.u64[0];
	if (r.u32[1] && out)
		*out = keep(&r);
	return r.u32[1];
}

/* The root handle of an export (MNT). */
static struct handle mnt(struct rpc_context *rpc, const char *export)
{
	struct raw r;
	tn_handle_of(rpc, jnfsd.port[0], export, "/", &r);
	return keep(&r);
}

/* ---- the tests ---- */

/* Handles of /a, taken before the restarts. */
static struct handle a_root, a_file, a_d, a_m;
static uint64_t a_root_id, a_file_id, a_m_id, a_fsid, b_file_id;

/* dir's ".." (LOOKUP, and the READDIRPLUS entry) must be want (a fileid),
 * and the directory it gives must not show /secret. */
static void check_dotdot_is(struct rpc_context *rpc, struct handle *dir, uint64_t want)
{
	struct handle up, rd, x;
	uint64_t id, fsid;
	CHECK_EQ(lookup(rpc, dir, "..", &up), NFS3_OK);
	CHECK_EQ(getattr(rpc, &up, &id, &fsid), NFS3_OK);
	CHECK_EQ(id, want);
	CHECK_EQ(fsid, a_fsid);
	CHECK_EQ(lookup(rpc, &up, "secret", &x), NFS3ERR_NOENT);
	CHECK(rdplus_entry(rpc, dir, "..", NULL, &rd));
	CHECK_EQ(getattr(rpc, &rd, &id, NULL), NFS3_OK);
	CHECK_EQ(id, want);
}

static void test_take_handles(void)
{
	serve("/a 127.0.0.1(rw,insecure,no_root_squash)\n"
	      "/b 127.0.0.1(rw,insecure,no_root_squash)\n");
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/a", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(n);
	a_root = mnt(rpc, "/a");
	struct handle b_root = mnt(rpc, "/b"), b_file;
	CHECK_EQ(lookup(rpc, &a_root, "file", &a_file), NFS3_OK);
	CHECK_EQ(lookup(rpc, &a_root, "d", &a_d), NFS3_OK);
	CHECK_EQ(lookup(rpc, &a_root, "m", &a_m), NFS3_OK);
	CHECK_EQ(lookup(rpc, &b_root, "file", &b_file), NFS3_OK);
	CHECK_EQ(getattr(rpc, &a_root, &a_root_id, &a_fsid), NFS3_OK);
	CHECK_EQ(getattr(rpc, &a_file, &a_file_id, NULL), NFS3_OK);
	CHECK_EQ(getattr(rpc, &a_m, &a_m_id, NULL), NFS3_OK);
	CHECK_EQ(getattr(rpc, &b_file, &b_file_id, NULL), NFS3_OK);
	check_dotdot_is(rpc, &a_root, a_root_id);
	check_dotdot_is(rpc, &a_d, a_root_id);
	check_dotdot_is(rpc, &a_m, a_root_id);
	nfs_destroy_context(n);
	stop();
	TEST_PASS("handles of /a taken; '..' of /a, /a/d and /a/m is /a");
}

static void test_reordered(void)
{
	uint64_t root_id = offline_ino("."), out_id = offline_ino("out");
	/* moved out of the export while the server is down */
	tn_sh("%s io %s -c 'rename a/m out/m' >/dev/null", jnfs_bin, image);
	serve("/b 127.0.0.1(rw,insecure,no_root_squash)\n"
	      "/a 127.0.0.1(rw,insecure,no_root_squash)\n");
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/b", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(n);
	struct handle fresh = mnt(rpc, "/a"), h;
	uint64_t id, fsid, fresh_fsid;
	char text[64];

	/* the old handles still name /a's inodes, in /a's export */
	CHECK_EQ(getattr(rpc, &fresh, &id, &fresh_fsid), NFS3_OK);
	CHECK_EQ(id, a_root_id);
	CHECK_EQ(fresh_fsid, a_fsid);
	CHECK_EQ(getattr(rpc, &a_root, &id, &fsid), NFS3_OK);
	CHECK_EQ(id, a_root_id);
	CHECK_EQ(fsid, a_fsid);
	CHECK_EQ(getattr(rpc, &a_file, &id, &fsid), NFS3_OK);
	CHECK_EQ(id, a_file_id);
	CHECK_EQ(fsid, a_fsid);
	CHECK_EQ(read_text(rpc, &a_file, text, sizeof(text)), NFS3_OK);
	CHECK(strcmp(text, "aaaaa") == 0);

	/* ".." from the root and from a directory of /a stays in /a */
	check_dotdot_is(rpc, &a_root, a_root_id);
	check_dotdot_is(rpc, &a_d, a_root_id);

	/* /a/m was moved to /out/m: its handle still resolves (no_subtree_check)
	 * but never climbs to /out, / or /secret */
	CHECK_EQ(getattr(rpc, &a_m, &id, NULL), NFS3_OK);
	CHECK_EQ(id, a_m_id);
	CHECK_EQ(lookup(rpc, &a_m, "..", &h), NFS3ERR_ACCES);
	CHECK(!rdplus_entry(rpc, &a_m, "..", &id, NULL));
	CHECK_EQ(id, out_id); /* its fileid is the true parent's, with no handle */
	CHECK(root_id != a_root_id && out_id != a_root_id);
	nfs_destroy_context(n);
	stop();
	TEST_PASS("exports reordered: old /a handles stay /a's; '..' never leaves /a, "
		  "not even from a directory moved out");
}

static void test_removed(void)
{
	serve("/b 127.0.0.1(rw,insecure,no_root_squash)\n");
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/b", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(n);
	struct handle b_root = mnt(rpc, "/b"), b_file, h;
	uint64_t id;
	CHECK_EQ(getattr(rpc, &a_root, NULL, NULL), NFS3ERR_STALE);
	CHECK_EQ(getattr(rpc, &a_file, NULL, NULL), NFS3ERR_STALE);
	CHECK_EQ(lookup(rpc, &a_d, "..", &h), NFS3ERR_STALE);
	CHECK_EQ(lookup(rpc, &b_root, "file", &b_file), NFS3_OK);
	CHECK_EQ(getattr(rpc, &b_file, &id, NULL), NFS3_OK);
	CHECK_EQ(id, b_file_id);
	nfs_destroy_context(n);
	stop();
	TEST_PASS("/a removed from the exports: its handles are STALE");
}

/* ---- READDIRPLUS handles ---- */

/* A handle READDIRPLUS gave for a name must be the handle of the inode that
 * name named: once that file is removed and its number reused, the handle
 * is STALE. (A handle made from the entry's number alone, generation 0,
 * would name whatever inode has the number now.) */
static void test_readdirplus_reuse(void)
{
	serve("/a 127.0.0.1(rw,insecure,no_root_squash)\n");
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/a", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(n);
	struct handle root = mnt(rpc, "/a"), r, hx, h;
	struct nfsfh *f;
	struct nfs_stat_64 st;
	uint64_t xid, id;
	CHECK_OK(nfs_mkdir(n, "/r"));
	CHECK_OK(nfs_creat(n, "/r/x", 0644, &f));
	nfs_close(n, f);
	CHECK_EQ(lookup(rpc, &root, "r", &r), NFS3_OK);
	CHECK(rdplus_entry(rpc, &r, "x", &xid, &hx));
	CHECK_EQ(getattr(rpc, &hx, &id, NULL), NFS3_OK);
	CHECK_EQ(id, xid);

	/* x goes; a new file takes its number (the allocator gives back the
	 * lowest free one: nearly always at once) */
	CHECK_OK(nfs_unlink(n, "/r/x"));
	int i;
	for (i = 0; i < 64; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/r/y%d", i);
		CHECK_OK(nfs_creat(n, p, 0600, &f));
		nfs_close(n, f);
		CHECK_OK(nfs_stat64(n, p, &st));
		if (st.nfs_ino == xid)
			break;
	}
	CHECK(i < 64); /* the number was reused */
	CHECK_EQ(getattr(rpc, &hx, &id, NULL), NFS3ERR_STALE);

	/* and the handles it gives now are the new files' */
	char name[32];
	snprintf(name, sizeof(name), "y%d", i);
	CHECK(rdplus_entry(rpc, &r, name, &id, &h));
	CHECK_EQ(id, xid);
	CHECK_EQ(getattr(rpc, &h, &id, NULL), NFS3_OK);
	CHECK_EQ(id, xid);
	nfs_destroy_context(n);
	stop();
	TEST_PASS("READDIRPLUS: a removed file's handle is STALE once its number is reused");
}

/*
 * The race itself: READDIRPLUS of a directory of 1,000 files while another
 * client creates x<N> (a 0644 file), removes it, and makes y<N> (a 0700
 * directory) that takes the freed number. An entry named x<N> that comes
 * with attributes must have x<N>'s (a 0644 file), never y<N>'s: handing
 * out the inode that has the entry's number when the reply is built is
 * exactly that mistake. Bounded: until the first wrong entry, or 5 s (up
 * to 60 s on a machine too loaded to show 20 x entries in 5 s).
 */
struct rdp_scan {
	unsigned long entries, x_with_attrs, wrong;
	char first_wrong[128];
};

static void inspect_rdp_scan(struct raw *r, void *res)
{
	READDIRPLUS3res *d = res;
	struct rdp_scan *sc = (struct rdp_scan *)(uintptr_t)r->u64[3];
	if (d->status != NFS3_OK)
		return;
	r->u32[1] = d->READDIRPLUS3res_u.resok.reply.eof;
	memcpy(r->verf, d->READDIRPLUS3res_u.resok.cookieverf, 8);
	for (entryplus3 *e = d->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
		sc->entries++;
		r->u64[0] = e->cookie;
		if (e->name[0] != 'x' || !e->name_attributes.attributes_follow)
			continue;
		fattr3 *a = &e->name_attributes.post_op_attr_u.attributes;
		sc->x_with_attrs++;
		if (a->type != NF3REG || (a->mode & 07777) != 0644 || a->fileid != e->fileid) {
			if (!sc->wrong++)
				snprintf(sc->first_wrong, sizeof(sc->first_wrong),
					 "%s (fileid %llu) came with type %d mode %o fileid %llu",
					 e->name, (unsigned long long)e->fileid, (int)a->type,
					 (unsigned)a->mode, (unsigned long long)a->fileid);
		}
	}
}

static void churn_names(uint16_t port, volatile unsigned long *rounds)
{
	struct nfs_context *n = tn_mount(port, "/a", 0, 0);
	struct nfsfh *f;
	for (unsigned long i = 0;; i++) {
		char x[48], y[48];
		snprintf(x, sizeof(x), "/race/x%lu", i);
		snprintf(y, sizeof(y), "/race/y%lu", i);
		CHECK_OK(nfs_creat(n, x, 0644, &f));
		nfs_close(n, f);
		CHECK_OK(nfs_unlink(n, x));
		CHECK_OK(nfs_mkdir2(n, y, 0700));
		CHECK_OK(nfs_rmdir(n, y));
		*rounds = i + 1;
	}
}

static void test_readdirplus_race(void)
{
	serve("/a 127.0.0.1(rw,async,insecure,no_root_squash)\n");
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/a", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(n);
	struct handle root = mnt(rpc, "/a"), race;
	struct nfsfh *f;
	CHECK_OK(nfs_mkdir(n, "/race"));
	for (int i = 0; i < 1000; i++) {
		char p[48];
		snprintf(p, sizeof(p), "/race/filler-%04d", i);
		CHECK_OK(nfs_creat(n, p, 0600, &f));
		nfs_close(n, f);
	}
	CHECK_EQ(lookup(rpc, &root, "race", &race), NFS3_OK);

	volatile unsigned long *rounds =
		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(rounds != MAP_FAILED);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		churn_names(jnfsd.port[0], rounds);
		_exit(0);
	}
	struct rdp_scan sc = {0};
	unsigned long calls = 0;
	/* 5 s, and then on until 20 x entries with attributes were seen
	 * (a loaded machine), 60 s at most */
	uint64_t start = now_ns();
	while (!sc.wrong && now_ns() - start < 60 * NSEC_PER_SEC &&
	       (now_ns() - start < 5 * NSEC_PER_SEC || sc.x_with_attrs < 20)) {
		/* the whole directory, a few calls */
		READDIRPLUS3args a = {.dir = fh3(&race), .dircount = 1 << 20, .maxcount = 1 << 20};
		struct raw r = {.inspect = inspect_rdp_scan};
		r.u64[3] = (uint64_t)(uintptr_t)&sc;
		do {
			r.u32[1] = 0;
			RAW(rpc, &r, rpc_nfs3_readdirplus_async(rpc, raw_cb, &a, &r));
			CHECK_EQ(r.nfs_status, NFS3_OK);
			a.cookie = r.u64[0];
			memcpy(a.cookieverf, r.verf, 8);
			calls++;
		} while (!r.u32[1]);
	}
	CHECK_OK(kill(pid, 0)); /* the churn is still going: it never failed */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	printf("READDIRPLUS calls %lu, entries %lu, x entries with attributes %lu, churn rounds "
	       "%lu, wrong %lu\n",
	       calls, sc.entries, sc.x_with_attrs, *rounds, sc.wrong);
	if (sc.wrong)
		fprintf(stderr, "READDIRPLUS: %s\n", sc.first_wrong);
	CHECK_EQ(sc.wrong, 0);
	CHECK(sc.x_with_attrs > 0 && *rounds > 0);
	munmap((void *)rounds, 4096);
	nfs_destroy_context(n);
	stop();
	TEST_PASS("READDIRPLUS racing remove and reuse: attributes are the entry's own");
}

/* ---- without an exports file ---- */

/* Run jnfsd with args until it exits, 10 s at most (then kill it: it did
 * not refuse); returns its exit status, what it printed in out. */
static int run_refused(const char *const *args, char *out, size_t len)
{
	const char *argv[32];
	int argc = 0, pfd[2], status;
	argv[argc++] = jnfsd_bin;
	for (int i = 0; args[i]; i++)
		argv[argc++] = args[i];
	argv[argc] = NULL;
	CHECK_OK(pipe(pfd));
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		execv(jnfsd_bin, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	int waited = 0;
	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (waited++ == 1000) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fprintf(stderr, "jnfsd did not refuse to start\n");
			CHECK(0);
		}
		usleep(10000);
	}
	ssize_t n = read(pfd[0], out, len - 1);
	out[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	CHECK(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void inspect_export_list(struct raw *r, void *res)
{
	r->text[0] = '\0';
	r->nfs_status = 0;
	for (exportnode *e = *(exports *)res; e; e = e->ex_next) {
		size_t len = strlen(r->text);
		snprintf(r->text + len, sizeof(r->text) - len, "%s(", e->ex_dir);
		for (groupnode *g = e->ex_groups; g; g = g->gr_next) {
			len = strlen(r->text);
			snprintf(r->text + len, sizeof(r->text) - len, "%s,", g->gr_name);
		}
		len = strlen(r->text);
		snprintf(r->text + len, sizeof(r->text) - len, ") ");
	}
}

static void test_builtin_exports(void)
{
	char out[1024], img[128];
	snprintf(img, sizeof(img), "%s/builtin.img", tmpdir);
	/* a listener other clients can reach, with "/" to root for anyone: refused,
	 * before the image is even created */
	const char *any4[] = {"--image", img, "--size", "64M", "--rpcbind", "off",
			      "--listen", "0.0.0.0:0", NULL};
	CHECK_EQ(run_refused(any4, out, sizeof(out)), 1);
	CHECK(strstr(out, "--listen 0.0.0.0:0 is not a loopback address") &&
	      strstr(out, "without --exports"));
	CHECK(access(img, F_OK) != 0);
	const char *any6[] = {"--image", img, "--size", "64M", "--rpcbind", "off", "--listen",
			      "127.0.0.1:0", "--listen", "[::]:0", NULL};
	CHECK_EQ(run_refused(any6, out, sizeof(out)), 1);
	CHECK(strstr(out, "--listen [::]:0 is not a loopback address"));

	/* on loopback it serves "/" to loopback clients, and says so */
	const char *lo[] = {"--listen", "127.0.0.1:0", "--rpcbind", "off", NULL};
	tc_jnfsd_start(&jnfsd, jnfsd_bin, lo);
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct nfsfh *f;
	CHECK_OK(nfs_creat(n, "/root-owned", 0600, &f)); /* root is not squashed */
	nfs_close(n, f);
	nfs_destroy_context(n);
	struct rpc_context *rpc = rpc_init_context();
	struct raw r = {0};
	RAW(rpc, &r, rpc_connect_port_async(rpc, "127.0.0.1", jnfsd.port[0], MOUNT_PROGRAM,
					    MOUNT_V3, connect_cb, &r));
	r.inspect = inspect_export_list;
	RAW(rpc, &r, rpc_mount3_export_async(rpc, raw_cb, &r));
	CHECK(strcmp(r.text, "/(127.0.0.0/8,::1,) ") == 0);
	rpc_destroy_context(rpc);
	stop();
	TEST_PASS("without an exports file: loopback listeners and clients only");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs3-exports JNFSD JNFS\n");
		return 2;
	}
	jnfsd_bin = argv[1];
	jnfs_bin = argv[2];
	signal(SIGPIPE, SIG_IGN);
	CHECK(mkdtemp(tmpdir) != NULL);
	atexit(kill_server);
	snprintf(image, sizeof(image), "%s/img", tmpdir);
	snprintf(exports_path, sizeof(exports_path), "%s/exports", tmpdir);
	tn_sh("%s mkfs %s --size 64M >/dev/null", jnfs_bin, image);
	tn_sh("%s io %s -c 'mkdir a' -c 'mkdir a/d' -c 'mkdir a/m' -c 'mkdir b' -c 'mkdir out' "
	      "-c 'open a/file create' -c 'pwrite 0 5 0x61' -c 'open b/file create' "
	      "-c 'pwrite 0 5 0x62' -c 'open secret create' -c 'pwrite 0 6 0x73' >/dev/null",
	      jnfs_bin, image);

	test_take_handles();
	test_reordered();
	test_removed();
	test_readdirplus_reuse();
	test_readdirplus_race();
	test_builtin_exports();

	tn_sh("%s check %s >/dev/null", jnfs_bin, image);
	tn_sh("rm -rf %s", tmpdir);
	return 0;
}
