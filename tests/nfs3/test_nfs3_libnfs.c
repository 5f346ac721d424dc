/*
 * test_nfs3_libnfs.c - an independent client
 * (libnfs) calls every NFSv3 and MOUNT v3 procedure of a running jnfsd and
 * checks results and error codes: ENOENT, EEXIST, ENOTEMPTY, EACCES under
 * root_squash, ROFS, STALE and BADHANDLE for damaged handles, exclusive
 * create verifiers, the SETATTR guard, READDIR counts and cookies, WRITE
 * counts that disagree with their data, names with '/' or of 256 bytes.
 *
 * The image is made with the jnfs tool first (directories for the extra
 * exports), then jnfsd serves it with:
 *   /        rw, sync, no_root_squash
 *   /squash  rw, sync, root_squash
 *   /ro      ro
 *   /async   rw, async
 *   /other   only for 10.9.9.9 (not us)
 *
 * usage: test-nfs3-libnfs JNFSD JNFS
 */
#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fs/fs.h" /* FS_MAX_FILE_SIZE */
#include "jnfsd_proc.h"
#include "nfs3/nfs3_client.h"

static struct tc_jnfsd jnfsd;
static char tmpdir[] = "/tmp/test-nfs3.XXXXXX";

static void kill_server(void)
{
	if (jnfsd.pid > 0)
		kill(jnfsd.pid, SIGKILL); /* a failed check leaves it running */
}

static void inspect_readdir(struct raw *r, void *res)
{
	READDIR3res *d = res;
	if (d->status != NFS3_OK)
		return;
	memcpy(r->verf, d->READDIR3res_u.resok.cookieverf, 8);
	r->u32[0] = 0;
	r->u32[1] = d->READDIR3res_u.resok.reply.eof;
	r->text[0] = '\0';
	for (entry3 *e = d->READDIR3res_u.resok.reply.entries; e; e = e->nextentry) {
		r->u32[0]++;
		r->u64[0] = e->cookie;
		if (strlen(r->text) + strlen(e->name) + 2 < sizeof(r->text)) {
			strcat(r->text, e->name);
			strcat(r->text, " ");
		}
	}
}

static void inspect_readdirplus(struct raw *r, void *res)
{
	READDIRPLUS3res *d = res;
	if (d->status != NFS3_OK)
		return;
	r->u32[0] = r->u32[2] = 0;
	r->u32[1] = d->READDIRPLUS3res_u.resok.reply.eof;
	for (entryplus3 *e = d->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
		r->u32[0]++;
		if (e->name_handle.handle_follows && e->name_attributes.attributes_follow)
			r->u32[2]++;
	}
}

static void inspect_fsinfo(struct raw *r, void *res)
{
	FSINFO3res *f = res;
	if (f->status == NFS3_OK) {
		r->u32[0] = f->FSINFO3res_u.resok.rtmax;
		r->u32[1] = f->FSINFO3res_u.resok.wtmax;
		r->u32[2] = f->FSINFO3res_u.resok.properties;
		r->u64[0] = f->FSINFO3res_u.resok.maxfilesize;
	}
}

static void inspect_pathconf(struct raw *r, void *res)
{
	PATHCONF3res *p = res;
	if (p->status == NFS3_OK) {
		r->u32[0] = p->PATHCONF3res_u.resok.name_max;
		r->u32[1] = p->PATHCONF3res_u.resok.no_trunc;
		r->u32[2] = p->PATHCONF3res_u.resok.case_preserving;
	}
}

static void inspect_access(struct raw *r, void *res)
{
	ACCESS3res *a = res;
	if (a->status == NFS3_OK)
		r->u32[0] = a->ACCESS3res_u.resok.access;
}

/* ---- MOUNT v3 ---- */

static void inspect_dump(struct raw *r, void *res)
{
	r->text[0] = '\0';
	r->nfs_status = 0;
	for (mountbody *m = *(mountlist *)res; m; m = m->ml_next) {
		size_t len = strlen(r->text);
		snprintf(r->text + len, sizeof(r->text) - len, "%s:%s ", m->ml_hostname,
			 m->ml_directory);
	}
}

static void inspect_export(struct raw *r, void *res)
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

static void test_mount_protocol(void)
{
	struct rpc_context *rpc = rpc_init_context();
	struct raw r = {0};
	RAW(rpc, &r, rpc_connect_port_async(rpc, "127.0.0.1", jnfsd.port[0], MOUNT_PROGRAM,
					    MOUNT_V3, connect_cb, &r));
	RAW(rpc, &r, rpc_mount3_null_async(rpc, raw_cb, &r));

	r.inspect = inspect_mnt;
	RAW(rpc, &r, rpc_mount3_mnt_async(rpc, raw_cb, "/squash", &r));
	CHECK_EQ(r.nfs_status, MNT3_OK);
	CHECK_EQ(r.u32[0], 32);
	CHECK_EQ(r.u32[1], 1);
	CHECK_EQ(r.u32[2], 1); /* AUTH_SYS */
	RAW(rpc, &r, rpc_mount3_mnt_async(rpc, raw_cb, "/squash/", &r));
	CHECK_EQ(r.nfs_status, MNT3_OK);
	RAW(rpc, &r, rpc_mount3_mnt_async(rpc, raw_cb, "/nonexistent", &r));
	CHECK_EQ(r.nfs_status, MNT3ERR_NOENT);
	RAW(rpc, &r, rpc_mount3_mnt_async(rpc, raw_cb, "/other", &r));
	CHECK_EQ(r.nfs_status, MNT3ERR_ACCES);
	RAW(rpc, &r, rpc_mount3_mnt_async(rpc, raw_cb, "/ro", &r));
	CHECK_EQ(r.nfs_status, MNT3_OK);

	r.inspect = inspect_dump;
	RAW(rpc, &r, rpc_mount3_dump_async(rpc, raw_cb, &r));
	CHECK(strstr(r.text, "127.0.0.1:/squash ") && strstr(r.text, "127.0.0.1:/ro "));
	CHECK(!strstr(r.text, "/other"));
	r.inspect = NULL;
	RAW(rpc, &r, rpc_mount3_umnt_async(rpc, raw_cb, "/squash", &r));
	r.inspect = inspect_dump;
	RAW(rpc, &r, rpc_mount3_dump_async(rpc, raw_cb, &r));
	CHECK(!strstr(r.text, "/squash") && strstr(r.text, "127.0.0.1:/ro "));
	r.inspect = NULL;
	RAW(rpc, &r, rpc_mount3_umntall_async(rpc, raw_cb, &r));
	r.inspect = inspect_dump;
	RAW(rpc, &r, rpc_mount3_dump_async(rpc, raw_cb, &r));
	CHECK(!strstr(r.text, "127.0.0.1"));

	r.inspect = inspect_export;
	RAW(rpc, &r, rpc_mount3_export_async(rpc, raw_cb, &r));
	CHECK(strstr(r.text, "/(127.0.0.1,) "));
	CHECK(strstr(r.text, "/squash(127.0.0.1,) "));
	CHECK(strstr(r.text, "/other(10.9.9.9,) "));
	rpc_destroy_context(rpc);
	TEST_PASS("MOUNT v3: NULL, MNT (OK, NOENT, ACCES), DUMP, UMNT, UMNTALL, EXPORT");
}

/* ---- NFSv3 through libnfs's file API ---- */

static void test_file_api(void)
{
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct nfsfh *f;
	struct nfs_stat_64 st;
	char buf[8192], back[8192];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7 + 3);

	/* MKDIR, CREATE, WRITE, COMMIT, READ, GETATTR */
	CHECK_OK(nfs_mkdir(n, "/d"));
	CHECK_EQ(nfs_mkdir(n, "/d"), -EEXIST);
	CHECK_OK(nfs_mkdir2(n, "/d/e", 0750));
	CHECK_OK(nfs_creat(n, "/d/f", 0640, &f));
	CHECK_EQ(nfs_pwrite(n, f, 0, sizeof(buf), buf), (int)sizeof(buf));
	CHECK_EQ(nfs_pwrite(n, f, 100000, 10, buf), 10);
	CHECK_OK(nfs_fsync(n, f));
	CHECK_EQ(nfs_pread(n, f, 0, sizeof(back), back), (int)sizeof(back));
	CHECK(memcmp(buf, back, sizeof(buf)) == 0);
	CHECK_EQ(nfs_pread(n, f, 50000, 100, back), 100); /* the hole reads as zeros */
	for (int i = 0; i < 100; i++)
		CHECK_EQ(back[i], 0);
	nfs_close(n, f);
	CHECK_OK(nfs_stat64(n, "/d/f", &st));
	CHECK_EQ(st.nfs_size, 100010);
	CHECK_EQ(st.nfs_mode & 07777, 0640);
	CHECK(S_ISREG(st.nfs_mode));
	CHECK_OK(nfs_stat64(n, "/d/e", &st));
	CHECK(S_ISDIR(st.nfs_mode));
	CHECK_EQ(st.nfs_mode & 07777, 0750);
	CHECK_EQ(nfs_stat64(n, "/d/nothing", &st), -ENOENT);
	CHECK_EQ(nfs_creat(n, "/d/nothing/x", 0644, &f), -ENOENT);

	/* SETATTR: chmod, chown, truncate, utimes */
	CHECK_OK(nfs_chmod(n, "/d/f", 0600));
	CHECK_OK(nfs_chown(n, "/d/f", 1234, 5678));
	CHECK_OK(nfs_truncate(n, "/d/f", 4096));
	struct timeval tv[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1100000000}};
	CHECK_OK(nfs_utimes(n, "/d/f", tv));
	CHECK_OK(nfs_stat64(n, "/d/f", &st));
	CHECK_EQ(st.nfs_mode & 07777, 0600);
	CHECK_EQ(st.nfs_uid, 1234);
	CHECK_EQ(st.nfs_gid, 5678);
	CHECK_EQ(st.nfs_size, 4096);
	CHECK_EQ(st.nfs_atime, 1000000000);
	CHECK_EQ(st.nfs_mtime, 1100000000);

	/* SYMLINK, READLINK, LINK, RENAME, REMOVE, RMDIR */
	CHECK_OK(nfs_symlink(n, "f", "/d/s"));
	char target[64] = {0};
	CHECK_OK(nfs_readlink(n, "/d/s", target, sizeof(target)));
	CHECK(strcmp(target, "f") == 0);
	CHECK_OK(nfs_link(n, "/d/f", "/d/g"));
	CHECK_OK(nfs_stat64(n, "/d/g", &st));
	CHECK_EQ(st.nfs_nlink, 2);
	CHECK_EQ(nfs_link(n, "/d/f", "/d/g"), -EEXIST);
	CHECK_OK(nfs_rename(n, "/d/g", "/d/e/h"));
	CHECK_EQ(nfs_stat64(n, "/d/g", &st), -ENOENT);
	CHECK_OK(nfs_stat64(n, "/d/e/h", &st));
	CHECK_EQ(st.nfs_size, 4096);
	CHECK_EQ(nfs_rmdir(n, "/d/e"), -ENOTEMPTY);
	CHECK_EQ(nfs_rename(n, "/d/e", "/d/e/h2"), -EINVAL); /* into itself */
	CHECK_OK(nfs_unlink(n, "/d/e/h"));
	CHECK_EQ(nfs_unlink(n, "/d/e/h"), -ENOENT);
	CHECK_OK(nfs_rmdir(n, "/d/e"));
	CHECK_OK(nfs_stat64(n, "/d/f", &st));
	CHECK_EQ(st.nfs_nlink, 1);

	/* MKNOD */
	CHECK_OK(nfs_mknod(n, "/d/fifo", S_IFIFO | 0644, 0));
	CHECK_OK(nfs_stat64(n, "/d/fifo", &st));
	CHECK(S_ISFIFO(st.nfs_mode));
	CHECK_OK(nfs_mknod(n, "/d/chr", S_IFCHR | 0600, makedev(1, 3)));
	CHECK_OK(nfs_stat64(n, "/d/chr", &st));
	CHECK(S_ISCHR(st.nfs_mode));
	CHECK_EQ(st.nfs_rdev, makedev(1, 3));

	/* READDIRPLUS (libnfs lists with it) */
	struct nfsdir *d;
	CHECK_OK(nfs_opendir(n, "/d", &d));
	unsigned seen = 0;
	for (struct nfsdirent *e; (e = nfs_readdir(n, d));) {
		if (!strcmp(e->name, "f")) {
			seen |= 1;
			CHECK_EQ(e->size, 4096);
		} else if (!strcmp(e->name, "s"))
			seen |= 2;
		else if (!strcmp(e->name, "fifo"))
			seen |= 4;
		else if (!strcmp(e->name, "chr"))
			seen |= 8;
		else
			CHECK(!strcmp(e->name, ".") || !strcmp(e->name, ".."));
	}
	nfs_closedir(n, d);
	CHECK_EQ(seen, 15);

	/* a directory of 500 entries lists completely over several calls */
	CHECK_OK(nfs_mkdir(n, "/big"));
	for (int i = 0; i < 500; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/big/a-rather-long-file-name-to-need-several-calls-%04d", i);
		CHECK_OK(nfs_creat(n, p, 0644, &f));
		nfs_close(n, f);
	}
	CHECK_OK(nfs_opendir(n, "/big", &d));
	int count = 0;
	while (nfs_readdir(n, d))
		count++;
	nfs_closedir(n, d);
	CHECK_EQ(count, 502);

	/* FSSTAT, ACCESS */
	struct statvfs sv;
	CHECK_OK(nfs_statvfs(n, "/", &sv));
	CHECK(sv.f_blocks > 0 && sv.f_bfree > 0 && sv.f_bfree <= sv.f_blocks);
	CHECK(sv.f_files > 0 && sv.f_ffree < sv.f_files);
	CHECK_OK(nfs_access(n, "/d/f", R_OK | W_OK));
	nfs_destroy_context(n);

	/* as an ordinary user: permissions are checked on every call */
	n = tn_mount(jnfsd.port[0], "/", 1234, 5678);
	CHECK_OK(nfs_open(n, "/d/f", O_RDWR, &f)); /* owner, mode 0600 */
	nfs_close(n, f);
	CHECK_EQ(nfs_creat(n, "/d/mine", 0644, &f), -EACCES); /* /d is root's 0755 */
	CHECK_EQ(nfs_chown(n, "/d/f", 0, 0), -EPERM);
	CHECK_EQ(nfs_chmod(n, "/d/chr", 0666), -EPERM);
	nfs_destroy_context(n);
	n = tn_mount(jnfsd.port[0], "/", 4321, 4321);
	CHECK_EQ(nfs_open(n, "/d/f", O_RDONLY, &f), -EACCES);
	CHECK_EQ(nfs_access(n, "/d/f", R_OK), -EACCES);
	nfs_destroy_context(n);
	TEST_PASS("NFSv3 through libnfs: every namespace and data procedure, errors");
}

/* ---- exports: root_squash, ro, async ---- */

/*
 * WRITE data sits wherever the client's call header leaves it in the
 * record. The service learns where a connection's WRITE data lies and
 * places the next record so that the data is aligned (record.h, invariant
 * 4): so on a direct-I/O image only the first WRITE of a stream is copied
 * through an aligned bounce buffer (dev.bounced_bytes), and READ data,
 * read into aligned buffers, never is. The bytes land where they belong
 * either way.
 */
static void test_write_alignment(void)
{
	enum { CHUNK = 128 << 10, N = 8 };
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct nfsfh *f;
	uint8_t *buf = malloc(CHUNK * N), *back = malloc(CHUNK * N);
	for (size_t i = 0; i < (size_t)CHUNK * N; i++)
		buf[i] = (uint8_t)(i * 13 + (i >> 9));
	CHECK_OK(nfs_creat(n, "/aligned", 0644, &f));
	uint64_t b0 = tc_jnfsd_stat(&jnfsd, "dev.bounced_bytes");
	for (int i = 0; i < N; i++)
		CHECK_EQ(nfs_pwrite(n, f, (uint64_t)i * CHUNK, CHUNK, buf + (size_t)i * CHUNK),
			 CHUNK);
	CHECK_OK(nfs_fsync(n, f));
	uint64_t b1 = tc_jnfsd_stat(&jnfsd, "dev.bounced_bytes");
	for (int i = 0; i < N; i++)
		CHECK_EQ(nfs_pread(n, f, (uint64_t)i * CHUNK, CHUNK, back + (size_t)i * CHUNK),
			 CHUNK);
	CHECK(memcmp(buf, back, (size_t)CHUNK * N) == 0);
	uint64_t b2 = tc_jnfsd_stat(&jnfsd, "dev.bounced_bytes");
	bool direct = tc_jnfsd_stat(&jnfsd, "dev.direct_io") == 1;
	if (direct) {
		CHECK(b1 - b0 <= CHUNK); /* the first WRITE at most */
		CHECK_EQ(b2, b1);
	}
	nfs_close(n, f);
	CHECK_OK(nfs_unlink(n, "/aligned"));
	nfs_destroy_context(n);
	free(buf);
	free(back);
	TEST_PASS(direct ? "WRITE data aligned for direct I/O after a stream's first"
			 : "WRITE data lands right (no direct I/O here)");
}

static void test_exports(void)
{
	struct nfs_context *n;
	struct nfsfh *f;
	struct nfs_stat_64 st;

	/* root_squash: root is nobody, /squash is root's 0755 */
	n = tn_mount(jnfsd.port[0], "/squash", 0, 0);
	CHECK_EQ(nfs_creat(n, "/x", 0644, &f), -EACCES);
	CHECK_EQ(nfs_mkdir(n, "/x"), -EACCES);
	CHECK_OK(nfs_stat64(n, "/", &st));
	nfs_destroy_context(n);

	/* read-only */
	n = tn_mount(jnfsd.port[0], "/ro", 0, 0);
	CHECK_EQ(nfs_creat(n, "/x", 0644, &f), -EROFS);
	CHECK_EQ(nfs_mkdir(n, "/x"), -EROFS);
	CHECK_EQ(nfs_chmod(n, "/", 0777), -EROFS);
	CHECK_OK(nfs_open(n, "/file", O_RDONLY, &f));
	char b[16] = {0};
	CHECK_EQ(nfs_pread(n, f, 0, 5, b), 5);
	nfs_close(n, f);
	nfs_destroy_context(n);

	/* async: works the same from the client's side */
	n = tn_mount(jnfsd.port[0], "/async", 0, 0);
	CHECK_OK(nfs_creat(n, "/x", 0644, &f));
	CHECK_EQ(nfs_pwrite(n, f, 0, 5, "hello"), 5);
	nfs_close(n, f);
	CHECK_OK(nfs_stat64(n, "/x", &st));
	CHECK_EQ(st.nfs_size, 5);
	/* LOOKUP ".." of an export's root stays in the export */
	struct rpc_context *rpc = nfs_get_rpc_context(n);
	struct raw root = {0}, up = {0};
	tn_handle_of(rpc, jnfsd.port[0], "/async", "/", &root);
	tn_handle_of(rpc, jnfsd.port[0], "/async", "/..", &up);
	CHECK(up.fh.data.data_len == root.fh.data.data_len &&
	      memcmp(up.fhbuf, root.fhbuf, root.fh.data.data_len) == 0);
	nfs_destroy_context(n);
	TEST_PASS("exports: root_squash (EACCES), ro (EROFS), async, '..' at an export root");
}

/* ---- wire-level checks through libnfs's raw calls ---- */

static void sattr_none(sattr3 *s)
{
	memset(s, 0, sizeof(*s));
}

static void test_raw(void)
{
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(n);
	struct raw r = {0}, keep_root = {0}, keep_d = {0}, keep_f = {0};
	struct nfs_fh3 root = tn_handle_of(rpc, jnfsd.port[0], "/", "/", &keep_root);
	struct nfs_fh3 d = tn_handle_of(rpc, jnfsd.port[0], "/", "/d", &keep_d);
	struct nfs_fh3 f = tn_handle_of(rpc, jnfsd.port[0], "/", "/d/f", &keep_f);
	char name256[257], name255[256];
	memset(name256, 'n', 256);
	name256[256] = '\0';
	memset(name255, 'n', 255);
	name255[255] = '\0';

	/* NULL, GETATTR, FSINFO, PATHCONF, ACCESS */
	RAW(rpc, &r, rpc_nfs3_null_async(rpc, raw_cb, &r));
	r.inspect = inspect_fsinfo;
	RAW(rpc, &r, rpc_nfs3_fsinfo_async(rpc, raw_cb, &(FSINFO3args){root}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK_EQ(r.u32[0], 1 << 20);
	CHECK_EQ(r.u32[1], 1 << 20);
	CHECK_EQ(r.u32[2] & 0x1b, 0x1b); /* LINK SYMLINK HOMOGENEOUS CANSETTIME */
	CHECK_EQ(r.u64[0], FS_MAX_FILE_SIZE); /* what the engine takes, not INT64_MAX */
	r.inspect = inspect_pathconf;
	RAW(rpc, &r, rpc_nfs3_pathconf_async(rpc, raw_cb, &(PATHCONF3args){root}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK_EQ(r.u32[0], 255);
	CHECK(r.u32[1] && r.u32[2]);
	r.inspect = inspect_access;
	RAW(rpc, &r, rpc_nfs3_access_async(rpc, raw_cb, &(ACCESS3args){d, 0x3f}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK_EQ(r.u32[0], ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
				   ACCESS3_DELETE);

	/* names: '/', 256 bytes (NAMETOOLONG), 255 bytes (NOENT), empty */
	r.inspect = inspect_lookup;
	RAW(rpc, &r, rpc_nfs3_lookup_async(rpc, raw_cb, &(LOOKUP3args){{d, "e/f"}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_ACCES);
	RAW(rpc, &r, rpc_nfs3_lookup_async(rpc, raw_cb, &(LOOKUP3args){{d, name256}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NAMETOOLONG);
	RAW(rpc, &r, rpc_nfs3_lookup_async(rpc, raw_cb, &(LOOKUP3args){{d, name255}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NOENT);
	RAW(rpc, &r, rpc_nfs3_lookup_async(rpc, raw_cb, &(LOOKUP3args){{d, ""}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_ACCES);
	RAW(rpc, &r, rpc_nfs3_lookup_async(rpc, raw_cb, &(LOOKUP3args){{f, "x"}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NOTDIR);
	CREATE3args ca = {.where = {d, name256}, .how = {.mode = UNCHECKED}};
	sattr_none(&ca.how.createhow3_u.obj_attributes);
	r.inspect = inspect_create;
	RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &ca, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NAMETOOLONG);
	ca.where.name = "a/b";
	RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &ca, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_ACCES);

	/* CREATE: GUARDED on an existing name, EXCLUSIVE with its verifier */
	ca.where.name = "f";
	ca.how.mode = GUARDED;
	RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &ca, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_EXIST);
	ca.how.mode = UNCHECKED; /* opens what is there */
	RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &ca, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	ca.where.name = "excl";
	ca.how.mode = EXCLUSIVE;
	memcpy(ca.how.createhow3_u.verf, "verifier", 8);
	RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &ca, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	struct raw keep_x = r;
	struct nfs_fh3 x = keep_x.fh;
	x.data.data_val = keep_x.fhbuf;
	RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &ca, &r)); /* a retransmission */
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK(r.fh.data.data_len == x.data.data_len &&
	      memcmp(r.fhbuf, keep_x.fhbuf, x.data.data_len) == 0);
	memcpy(ca.how.createhow3_u.verf, "another!", 8);
	RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &ca, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_EXIST);

	/* SETATTR with the ctime guard */
	r.inspect = inspect_getattr;
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){x}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	SETATTR3args sa = {.object = x};
	sattr_none(&sa.new_attributes);
	sa.new_attributes.mode.set_it = 1;
	sa.new_attributes.mode.set_mode3_u.mode = 0604;
	sa.guard.check = 1;
	sa.guard.sattrguard3_u.obj_ctime.seconds = r.u32[1];
	sa.guard.sattrguard3_u.obj_ctime.nseconds = r.u32[2] + 1;
	r.inspect = NULL;
	RAW(rpc, &r, rpc_nfs3_setattr_async(rpc, raw_cb, &sa, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NOT_SYNC);
	sa.guard.sattrguard3_u.obj_ctime.nseconds--;
	RAW(rpc, &r, rpc_nfs3_setattr_async(rpc, raw_cb, &sa, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	r.inspect = inspect_getattr;
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){x}, &r));
	CHECK_EQ(r.u32[0] & 07777, 0604);

	/* WRITE: stability, verifier, a count that disagrees with the data */
	char data[4096];
	memset(data, 'w', sizeof(data));
	WRITE3args wa = {.file = x, .offset = 0, .count = 4096, .stable = FILE_SYNC};
	wa.data.data_len = 4096;
	wa.data.data_val = data;
	r.inspect = inspect_write;
	RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &wa, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK_EQ(r.u32[0], 4096);
	CHECK_EQ(r.u32[1], FILE_SYNC);
	uint8_t verf[8];
	memcpy(verf, r.verf, 8);
	wa.stable = DATA_SYNC;
	RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &wa, &r));
	CHECK_EQ(r.u32[1], DATA_SYNC);
	wa.stable = UNSTABLE;
	wa.offset = 4096;
	RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &wa, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK_EQ(r.u32[1], UNSTABLE);
	CHECK(memcmp(verf, r.verf, 8) == 0);
	r.inspect = inspect_commit;
	RAW(rpc, &r, rpc_nfs3_commit_async(rpc, raw_cb, &(COMMIT3args){x, 0, 0}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK(memcmp(verf, r.verf, 8) == 0);
	wa.count = 4000; /* but 4096 bytes follow */
	r.inspect = inspect_write;
	RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &wa, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_INVAL);
	wa.file = d;
	wa.count = 4096;
	RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &wa, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_ISDIR);
	r.inspect = NULL;
	RAW(rpc, &r, rpc_nfs3_read_async(rpc, raw_cb, &(READ3args){d, 0, 100}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_ISDIR);
	r.inspect = inspect_getattr;
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){x}, &r));
	CHECK_EQ(r.u64[0], 8192);

	/* a WRITE may end at FSINFO's maxfilesize, not a byte past it */
	CREATE3args bca = {.where = {d, "big"}, .how = {.mode = UNCHECKED}};
	struct raw big = {.inspect = inspect_create};
	RAW(rpc, &big, rpc_nfs3_create_async(rpc, raw_cb, &bca, &big));
	CHECK_EQ(big.nfs_status, NFS3_OK);
	big.fh.data.data_val = big.fhbuf;
	wa = (WRITE3args){.file = big.fh, .offset = FS_MAX_FILE_SIZE - 4096, .count = 4096,
			  .stable = UNSTABLE};
	wa.data.data_len = 4096;
	wa.data.data_val = data;
	r.inspect = inspect_write;
	RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &wa, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	wa.offset++;
	RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &wa, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_FBIG);
	r.inspect = inspect_getattr;
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){big.fh}, &r));
	CHECK_EQ(r.u64[0], FS_MAX_FILE_SIZE);
	r.inspect = NULL;
	RAW(rpc, &r, rpc_nfs3_remove_async(rpc, raw_cb, &(REMOVE3args){{d, "big"}}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);

	/* MKNOD of a type MKNOD does not make */
	MKNOD3args ma = {.where = {d, "reg"}, .what = {.type = NF3REG}};
	r.inspect = NULL;
	RAW(rpc, &r, rpc_nfs3_mknod_async(rpc, raw_cb, &ma, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_BADTYPE);

	/* READDIR: counts, verifiers, cookies */
	READDIR3args ra = {.dir = d, .cookie = 0, .count = 0};
	r.inspect = inspect_readdir;
	RAW(rpc, &r, rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_TOOSMALL);
	ra.count = 120; /* room for the header, not for one entry */
	RAW(rpc, &r, rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_TOOSMALL);
	ra.count = UINT32_MAX;
	RAW(rpc, &r, rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK(r.u32[1]); /* eof */
	CHECK(strstr(r.text, ". ") && strstr(r.text, ".. ") && strstr(r.text, "excl "));
	ra.count = 160; /* a few entries per call */
	RAW(rpc, &r, rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK(r.u32[0] >= 1 && !r.u32[1]);
	ra.cookie = r.u64[0];
	memcpy(ra.cookieverf, r.verf, 8);
	RAW(rpc, &r, rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK); /* resumes with the verifier it was given */
	memcpy(ra.cookieverf, "badverf!", 8);
	RAW(rpc, &r, rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_BAD_COOKIE);
	memset(ra.cookieverf, 0, 8);
	ra.cookie = 77; /* a cookie no directory ever hands out */
	RAW(rpc, &r, rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_BAD_COOKIE);
	ra.dir = f;
	ra.cookie = 0;
	RAW(rpc, &r, rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NOTDIR);
	READDIRPLUS3args rp = {.dir = d, .dircount = 4096, .maxcount = 32768};
	r.inspect = inspect_readdirplus;
	RAW(rpc, &r, rpc_nfs3_readdirplus_async(rpc, raw_cb, &rp, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	CHECK(r.u32[1] && r.u32[0] >= 5 && r.u32[2] == r.u32[0]); /* handles, attributes */
	rp.maxcount = 0;
	RAW(rpc, &r, rpc_nfs3_readdirplus_async(rpc, raw_cb, &rp, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_TOOSMALL);

	/* handles: forged, truncated, stale */
	char forged[64];
	struct nfs_fh3 bad = x;
	memcpy(forged, keep_x.fhbuf, x.data.data_len);
	bad.data.data_val = forged;
	forged[28] ^= 1; /* a bit of the MAC */
	r.inspect = inspect_getattr;
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){bad}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_BADHANDLE);
	forged[28] ^= 1;
	forged[8] ^= 1; /* the inode number: another file, if the MAC let it through */
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){bad}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_BADHANDLE);
	forged[8] ^= 1;
	bad.data.data_len = 20;
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){bad}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_BADHANDLE);
	bad.data.data_len = 0;
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){bad}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_BADHANDLE);
	r.inspect = NULL;
	RAW(rpc, &r, rpc_nfs3_remove_async(rpc, raw_cb, &(REMOVE3args){{d, "excl"}}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	RAW(rpc, &r, rpc_nfs3_remove_async(rpc, raw_cb, &(REMOVE3args){{d, "excl"}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NOENT);
	r.inspect = inspect_getattr;
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){x}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_STALE);
	wa.file = x;
	r.inspect = inspect_write;
	RAW(rpc, &r, rpc_nfs3_write_async(rpc, raw_cb, &wa, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_STALE);

	/* RMDIR, RENAME, LINK errors */
	r.inspect = NULL;
	RAW(rpc, &r, rpc_nfs3_rmdir_async(rpc, raw_cb, &(RMDIR3args){{root, "d"}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NOTEMPTY);
	RAW(rpc, &r, rpc_nfs3_rmdir_async(rpc, raw_cb, &(RMDIR3args){{d, "f"}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NOTDIR);
	RAW(rpc, &r, rpc_nfs3_remove_async(rpc, raw_cb, &(REMOVE3args){{root, "d"}}, &r));
	CHECK(r.nfs_status == NFS3ERR_ISDIR || r.nfs_status == NFS3ERR_PERM);
	RAW(rpc, &r,
	    rpc_nfs3_rename_async(rpc, raw_cb, &(RENAME3args){{d, "nothing"}, {d, "y"}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NOENT);
	RAW(rpc, &r,
	    rpc_nfs3_rename_async(rpc, raw_cb, &(RENAME3args){{d, "f"}, {root, name256}}, &r));
	CHECK_EQ(r.nfs_status, NFS3ERR_NAMETOOLONG);
	RAW(rpc, &r, rpc_nfs3_link_async(rpc, raw_cb, &(LINK3args){d, {root, "dlink"}}, &r));
	CHECK(r.nfs_status == NFS3ERR_ISDIR || r.nfs_status == NFS3ERR_PERM);
	RAW(rpc, &r, rpc_nfs3_link_async(rpc, raw_cb, &(LINK3args){f, {root, "flink"}}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	nfs_destroy_context(n);
	TEST_PASS("raw NFSv3: names, CREATE modes, SETATTR guard, WRITE stability and counts, "
		  "READDIR counts and cookies, forged/truncated/stale handles");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs3-libnfs JNFSD JNFS\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	CHECK(mkdtemp(tmpdir) != NULL);
	char image[64], exports[64];
	snprintf(image, sizeof(image), "%s/img", tmpdir);
	snprintf(exports, sizeof(exports), "%s/exports", tmpdir);
	tn_sh("%s mkfs %s --size 256M >/dev/null", argv[2], image);
	tn_sh("%s io %s -c 'mkdir squash' -c 'mkdir ro' -c 'mkdir async' -c 'mkdir other' "
	   "-c 'open ro/file create' -c 'pwrite 0 5 65' >/dev/null",
	   argv[2], image);
	FILE *f = fopen(exports, "w");
	CHECK(f != NULL);
	fprintf(f, "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n"
		   "/squash 127.0.0.1(rw,sync,insecure,root_squash)\n"
		   "/ro 127.0.0.1(ro,insecure,no_root_squash)\n"
		   "/async 127.0.0.1(rw,async,insecure,no_root_squash)\n"
		   "/other 10.9.9.9(rw,insecure)\n");
	fclose(f);

	const char *args[] = {"--image", image, "--exports", exports, "--listen", "127.0.0.1:0",
			      "--rpcbind", "off", "--threads", "4", NULL};
	tc_jnfsd_start(&jnfsd, argv[1], args);
	atexit(kill_server);

	test_mount_protocol();
	test_file_api();
	test_write_alignment();
	test_exports();
	test_raw();

	CHECK(tc_jnfsd_stat(&jnfsd, "rpc.nfs.v3.readdirplus") > 0);
	CHECK(tc_jnfsd_stat(&jnfsd, "srv.badhandle") >= 4);
	CHECK(tc_jnfsd_stat(&jnfsd, "srv.stale") >= 2);
	int status = tc_jnfsd_stop(&jnfsd);
	jnfsd.pid = 0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tn_sh("%s check %s", argv[2], image);
	tn_sh("rm -rf %s", tmpdir);
	TEST_PASS("jnfsd stopped cleanly, image checks clean");
	return 0;
}
