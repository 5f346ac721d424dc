/*
 * test_export.c - exports parsing (and its error messages), client
 * matching, the built-in export (loopback only), credential squashing, file handles (forgery, truncation) and
 * the SipHash that authenticates them; on a filesystem in memory, fsids
 * derived from the export roots (stable when the file is reordered,
 * collisions refused) and the export boundary ('..' never leaves an
 * export, also from a directory moved out of it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/stat.h>

#include "base/siphash.h"
#include "check.h"
#include "dev/dev.h"
#include "export/exports.h"
#include "export/fh.h"
#include "fs/fs.h"

static void test_siphash(void)
{
	uint8_t key[16], msg[64];
	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	/* reference vectors of the SipHash paper's implementation */
	CHECK(siphash24(key, msg, 0) == 0x726fdb47dd0e0e31ull);
	CHECK(siphash24(key, msg, 1) == 0x74f839c593dc67fdull);
	CHECK(siphash24(key, msg, 15) == 0xa129ca6149be45e5ull);
	TEST_PASS("siphash");
}

static struct sockaddr_storage addr(const char *ip, int port)
{
	struct sockaddr_storage ss = {0};
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (void *)&ss;
		s6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, ip, &s6->sin6_addr);
		s6->sin6_port = htons((uint16_t)port);
	} else {
		struct sockaddr_in *s4 = (void *)&ss;
		s4->sin_family = AF_INET;
		inet_pton(AF_INET, ip, &s4->sin_addr);
		s4->sin_port = htons((uint16_t)port);
	}
	return ss;
}

static void expect_error(const char *text, const char *want)
{
	struct exports e;
	char err[256] = "";
	CHECK_EQ(exports_parse(text, "exports", &e, err, sizeof(err)), -EINVAL);
	if (!strstr(err, want)) {
		fprintf(stderr, "error '%s' does not contain '%s'\n", err, want);
		CHECK(0);
	}
}

static void test_exports(void)
{
	const char *text = "# comment\n"
			   "/ *(rw,sync,insecure,no_subtree_check)\n"
			   "\n"
			   "/data 10.0.0.0/8(rw,async,no_root_squash) \\\n"
			   "      192.168.1.5(ro,all_squash,anonuid=1000,anongid=1001) fd00::/8(rw)\n"
			   "/pub -ro,insecure 127.0.0.1 ::1(rw,fsid=77,pnfs)\n";
	struct exports e;
	char err[256];
	CHECK_OK(exports_parse(text, "exports", &e, err, sizeof(err)));
	CHECK_EQ(e.n, 3);
	const struct export *root = exports_by_path(&e, "/");
	CHECK(root && !root->fsid_given); /* derived once resolved */
	struct sockaddr_storage lo = addr("127.0.0.1", 40000);
	const struct export_opts *o = export_client_opts(root, &lo);
	CHECK(o && o->rw && o->sync && !o->secure && o->squash == SQUASH_ROOT);
	const struct export *data = exports_by_path(&e, "/data");
	CHECK(data && !data->fsid_given);
	struct sockaddr_storage a = addr("10.1.2.3", 700);
	o = export_client_opts(data, &a);
	CHECK(o && o->rw && !o->sync && o->squash == SQUASH_NONE && o->secure);
	a = addr("192.168.1.5", 700);
	o = export_client_opts(data, &a);
	CHECK(o && !o->rw && o->squash == SQUASH_ALL && o->anonuid == 1000 && o->anongid == 1001);
	a = addr("192.168.1.6", 700);
	CHECK(export_client_opts(data, &a) == NULL);
	a = addr("fd12::1", 700);
	CHECK(export_client_opts(data, &a) != NULL);
	a = addr("::ffff:10.9.9.9", 700); /* v4-mapped */
	CHECK(export_client_opts(data, &a) != NULL);
	const struct export *pub = exports_by_path(&e, "/pub");
	CHECK(pub && pub->fsid_given && pub->fsid == 77);
	o = export_client_opts(pub, &lo);
	CHECK(o && !o->rw && !o->secure && !o->pnfs);
	a = addr("::1", 2000);
	o = export_client_opts(pub, &a);
	CHECK(o && o->rw && o->pnfs && !o->secure);
	CHECK(exports_by_fsid(&e, 77) == pub);
	a = addr("127.0.0.1", 800);
	CHECK(export_peer_secure(&a));
	CHECK(!export_peer_secure(&lo));
	exports_free(&e);

	expect_error("/ *(rw,frobnicate)\n", "exports:1: unknown option 'frobnicate'");
	expect_error("\n\nrelative *(rw)\n", "exports:3:");
	expect_error("/ host.example(rw)\n", "exports:1: 'host.example' is not a client");
	expect_error("/ 10.0.0.0/33(rw)\n", "exports:1:");
	expect_error("/a *(rw)\n/a *(ro)\n", "exports:2: /a is exported twice");
	expect_error("/a\n", "exports:1: export /a names no client");
	expect_error("/a *(rw\n", "exports:1: unterminated");
	expect_error("/a *(rw,fsid=5)\n/b *(fsid=5)\n",
		     "exports:2: fsid 5 is used twice: by /b here and by /a on line 1");
	expect_error("# nothing\n", "no exports");
	expect_error("/a/ *(rw)\n", "not an absolute path");
	TEST_PASS("exports");
}

/* Without an exports file: "/" to loopback clients, nobody else. */
static void test_builtin(void)
{
	static const char *const loopback[] = {"127.0.0.1", "127.1.2.3", "127.255.255.254", "::1",
					       "::ffff:127.0.0.1"};
	static const char *const others[] = {"10.0.0.1",	 "192.168.1.5", "128.0.0.1",
					     "0.0.0.0",	 "::",	 "::2",
					     "fe80::1",	 "fd00::1",	 "::ffff:10.0.0.1",
					     "::ffff:192.168.1.5"};
	struct exports e;
	char err[256];
	CHECK_OK(exports_parse(EXPORTS_BUILTIN, "builtin", &e, err, sizeof(err)));
	CHECK_EQ(e.n, 1);
	const struct export *root = exports_by_path(&e, "/");
	CHECK(root != NULL);
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		struct sockaddr_storage a = addr(loopback[i], 40000);
		const struct export_opts *o = export_client_opts(root, &a);
		CHECK(o && o->rw && o->sync && !o->secure && o->squash == SQUASH_NONE);
	}
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		struct sockaddr_storage a = addr(others[i], 700);
		if (export_client_opts(root, &a)) {
			fprintf(stderr, "the built-in export admits %s\n", others[i]);
			CHECK(0);
		}
	}
	exports_free(&e);
	TEST_PASS("built-in export: loopback clients only");
}

static void test_squash(void)
{
	struct export_opts o = {.squash = SQUASH_ROOT, .anonuid = 65534, .anongid = 65534};
	struct export_cred c;
	uint32_t groups[] = {0, 10};
	export_squash(&o, true, 0, 0, groups, 2, &c);
	CHECK(c.uid == 65534 && c.gid == 65534 && c.groups[0] == 65534 && c.groups[1] == 10);
	export_squash(&o, true, 1000, 100, groups, 2, &c);
	CHECK(c.uid == 1000 && c.gid == 100);
	o.squash = SQUASH_NONE;
	export_squash(&o, true, 0, 0, NULL, 0, &c);
	CHECK(c.uid == 0 && c.gid == 0);
	export_squash(&o, false, 0, 0, NULL, 0, &c); /* AUTH_NONE: anonymous */
	CHECK(c.uid == 65534);
	o.squash = SQUASH_ALL;
	export_squash(&o, true, 1000, 100, groups, 2, &c);
	CHECK(c.uid == 65534 && c.ngroups == 0);
	TEST_PASS("squash");
}

static void test_fh(void)
{
	uint8_t key[16] = {1, 2, 3}, other[16] = {9};
	struct fh in = {.fsid = 7, .ino = 123456789, .gen = 42}, out;
	uint8_t wire[FH_SIZE];
	fh_encode(key, &in, wire);
	CHECK_OK(fh_decode(key, wire, FH_SIZE, &out));
	CHECK(out.fsid == 7 && out.ino == 123456789 && out.gen == 42);
	/* every single-bit change is refused */
	for (int bit = 0; bit < FH_SIZE * 8; bit++) {
		uint8_t f[FH_SIZE];
		memcpy(f, wire, FH_SIZE);
		f[bit / 8] ^= (uint8_t)(1 << (bit % 8));
		CHECK_EQ(fh_decode(key, f, FH_SIZE, &out), -EBADMSG);
	}
	for (size_t len = 0; len < FH_SIZE; len++)
		CHECK_EQ(fh_decode(key, wire, len, &out), -EBADMSG);
	CHECK_EQ(fh_decode(other, wire, FH_SIZE, &out), -EBADMSG);
	TEST_PASS("file handles");
}

/* ---- fsids derived from the export roots ---- */

struct memfs {
	struct dev *d;
	struct fs *fs;
	struct fs_attr root, a, b, c; /* "/" and /a, /b, /c */
};

static void memfs_dir(struct memfs *m, const char *name, struct fs_attr *at)
{
	struct fs_inode *root, *ip;
	struct fs_create_args ca = {.mode = S_IFDIR | 0755};
	CHECK_OK(fs_root(m->fs, &root));
	CHECK_OK(fs_create(root, name, strlen(name), &ca, &ip, NULL));
	CHECK_OK(fs_getattr(ip, at));
	fs_iput(ip);
	fs_iput(root);
}

static void memfs_open(struct memfs *m)
{
	struct fs_inode *root;
	CHECK_OK(dev_mem_create(64 << 20, NULL, &m->d));
	CHECK_OK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = m->d}));
	CHECK_OK(fs_mount(&(struct fs_mount_opts){.ddev = m->d}, &m->fs));
	CHECK_OK(fs_root(m->fs, &root));
	CHECK_OK(fs_getattr(root, &m->root));
	fs_iput(root);
	memfs_dir(m, "a", &m->a);
	memfs_dir(m, "b", &m->b);
	memfs_dir(m, "c", &m->c);
}

static void memfs_close(struct memfs *m)
{
	CHECK_OK(fs_unmount(m->fs));
	dev_close(m->d);
}

/* Parse and resolve text; 0 or the error, its message in err. */
static int load(struct memfs *m, const char *text, struct exports *e, char *err, size_t len)
{
	int rc = exports_parse(text, "exports", e, err, len);
	if (!rc && (rc = exports_resolve(e, m->fs, "exports", err, len)))
		exports_free(e);
	return rc;
}

static uint32_t fsid_of(const struct exports *e, const char *path)
{
	const struct export *ex = exports_by_path(e, path);
	CHECK(ex != NULL);
	CHECK(exports_by_fsid(e, ex->fsid) == ex);
	return ex->fsid;
}

static void test_fsid_derived(void)
{
	/* pinned: handles outlive restarts and upgrades, so the derivation
	 * may never change */
	CHECK_EQ(export_fsid_derive(0, 0), 0xbbfa393du);
	CHECK_EQ(export_fsid_derive(4096, 0x12345678), 0xe77bcc96u);
	CHECK(export_fsid_derive(4096, 1) != export_fsid_derive(4096, 2));
	CHECK(export_fsid_derive(4096, 1) != export_fsid_derive(4097, 1));

	struct memfs m;
	struct exports e;
	char err[256];
	memfs_open(&m);
	CHECK_OK(load(&m, "/a *(rw)\n/b *(rw)\n", &e, err, sizeof(err)));
	uint32_t fa = fsid_of(&e, "/a"), fb = fsid_of(&e, "/b");
	CHECK_EQ(fa, export_fsid_derive(m.a.ino, m.a.gen));
	CHECK_EQ(fb, export_fsid_derive(m.b.ino, m.b.gen));
	exports_free(&e);

	/* reordered, a line added before them, "/" too: the same fsids */
	CHECK_OK(load(&m, "/ *(ro)\n/c *(rw)\n/b *(rw)\n/a *(ro)\n", &e, err, sizeof(err)));
	CHECK_EQ(fsid_of(&e, "/a"), fa);
	CHECK_EQ(fsid_of(&e, "/b"), fb);
	CHECK_EQ(fsid_of(&e, "/"), export_fsid_derive(m.root.ino, m.root.gen));
	exports_free(&e);

	/* /a gone from the file: its fsid names nothing (its handles are STALE) */
	CHECK_OK(load(&m, "/c *(rw)\n/b *(rw)\n", &e, err, sizeof(err)));
	CHECK(exports_by_fsid(&e, fa) == NULL);
	CHECK_EQ(fsid_of(&e, "/b"), fb);
	exports_free(&e);

	/* an explicit fsid= is kept as given */
	CHECK_OK(load(&m, "/b *(rw)\n/a *(rw,fsid=77)\n", &e, err, sizeof(err)));
	CHECK_EQ(fsid_of(&e, "/a"), 77);
	CHECK_EQ(fsid_of(&e, "/b"), fb);
	exports_free(&e);

	/* a given fsid that meets a derived one is refused, naming both lines
	 * (either way round) */
	char text[256];
	snprintf(text, sizeof(text), "/a *(rw)\n# /b takes /a's\n/b *(rw,fsid=%u)\n", fa);
	CHECK_EQ(load(&m, text, &e, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "exports:3: /b has the same fsid") && strstr(err, "as /a on line 1"));
	snprintf(text, sizeof(text), "/b *(rw,fsid=%u)\n/a *(rw)\n", fa);
	CHECK_EQ(load(&m, text, &e, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "exports:2: /a has the same fsid") && strstr(err, "as /b on line 1"));
	memfs_close(&m);
	TEST_PASS("fsids derived from the export roots: stable when reordered, collisions refused");
}

/* ---- the export boundary ---- */

static struct fs_inode *mkdir_in(struct fs_inode *dir, const char *name)
{
	struct fs_inode *ip;
	struct fs_create_args ca = {.mode = S_IFDIR | 0755};
	CHECK_OK(fs_create(dir, name, strlen(name), &ca, &ip, NULL));
	return ip;
}

static struct fs_inode *get(struct memfs *m, const struct fs_attr *a)
{
	struct fs_inode *ip;
	CHECK_OK(fs_iget(m->fs, a->ino, a->gen, &ip));
	return ip;
}

/* export_lookup(dir, name) must give want (NULL: an error, err). */
static void expect_lookup(const struct export *ex, struct fs_inode *dir, const char *name,
			  struct fs_inode *want, int err)
{
	struct fs_inode *ip;
	int rc = export_lookup(ex, dir, name, strlen(name), &ip);
	if (!want) {
		CHECK_EQ(rc, err);
		CHECK(ip == NULL);
		return;
	}
	CHECK_OK(rc);
	CHECK_EQ(fs_ino(ip), fs_ino(want));
	fs_iput(ip);
}

static void test_boundary(void)
{
	struct memfs m;
	struct exports e;
	char err[256];
	memfs_open(&m);
	struct fs_inode *root = get(&m, &m.root), *a = get(&m, &m.a), *c = get(&m, &m.c);
	struct fs_inode *d = mkdir_in(a, "d"), *sub = mkdir_in(d, "sub");
	CHECK_OK(load(&m, "/a *(rw)\n/ *(rw)\n", &e, err, sizeof(err)));
	const struct export *ea = exports_by_path(&e, "/a"), *eroot = exports_by_path(&e, "/");
	CHECK(export_is_root(ea, a) && !export_is_root(ea, d) && export_is_root(eroot, root));

	/* ".." at the export root is the root; below it, the parent */
	expect_lookup(ea, a, "..", a, 0);
	expect_lookup(ea, d, "..", a, 0);
	expect_lookup(ea, sub, "..", d, 0);
	expect_lookup(ea, a, "d", d, 0);
	expect_lookup(eroot, a, "..", root, 0);
	expect_lookup(eroot, root, "..", root, 0);

	/* /a/d moved to /c/d: its handle still works downwards, but ".." from
	 * it (or from below it) would leave /a: refused */
	CHECK_OK(fs_rename(a, "d", 1, c, "d", 1, NULL));
	expect_lookup(ea, d, "..", NULL, -EACCES);
	expect_lookup(ea, sub, "..", NULL, -EACCES);
	expect_lookup(ea, d, "sub", sub, 0);
	expect_lookup(eroot, d, "..", c, 0); /* "/" holds everything */
	/* ... and moved back, it climbs again */
	CHECK_OK(fs_rename(c, "d", 1, a, "d", 1, NULL));
	expect_lookup(ea, sub, "..", d, 0);
	expect_lookup(ea, d, "..", a, 0);
	/* the root of another export is outside this one */
	struct fs_inode *b = get(&m, &m.b);
	expect_lookup(ea, root, "..", NULL, -EACCES);
	expect_lookup(ea, b, "..", NULL, -EACCES);

	/* readdir entries resolve by name, and only to the inode they name */
	struct fs_inode *ip, *w;
	struct fs_attr x1, x2, wa;
	struct fs_create_args fa = {.mode = S_IFREG | 0644};
	CHECK_OK(fs_create(a, "x", 1, &fa, &ip, NULL));
	CHECK_OK(fs_getattr(ip, &x1));
	fs_iput(ip);
	CHECK_OK(export_lookup_entry(ea, a, "x", 1, x1.ino, &ip));
	CHECK_EQ(fs_ino(ip), x1.ino);
	fs_iput(ip);
	CHECK_OK(fs_unlink(a, "x", 1, NULL));
	CHECK_EQ(export_lookup_entry(ea, a, "x", 1, x1.ino, &ip), -ENOENT);
	CHECK(ip == NULL);
	/* made again: whatever its number, the entry gives the new inode, with
	 * its own generation */
	CHECK_OK(fs_create(a, "x", 1, &fa, &ip, NULL));
	CHECK_OK(fs_getattr(ip, &x2));
	fs_iput(ip);
	CHECK_OK(export_lookup_entry(ea, a, "x", 1, x2.ino, &ip));
	CHECK_OK(fs_getattr(ip, &wa));
	CHECK(wa.ino == x2.ino && wa.gen == x2.gen && (x2.ino != x1.ino || x2.gen != x1.gen));
	fs_iput(ip);
	/* renamed over by another file: the entry readdir saw is gone */
	CHECK_OK(fs_create(a, "w", 1, &fa, &w, NULL));
	CHECK_OK(fs_rename(a, "w", 1, a, "x", 1, NULL));
	CHECK_EQ(export_lookup_entry(ea, a, "x", 1, x2.ino, &ip), -ENOENT);
	CHECK_OK(export_lookup_entry(ea, a, "x", 1, fs_ino(w), &ip));
	fs_iput(ip);
	fs_iput(w);
	/* ".." and "." entries */
	CHECK_OK(export_lookup_entry(ea, a, "..", 2, fs_ino(a), &ip));
	fs_iput(ip);
	CHECK_OK(export_lookup_entry(ea, d, ".", 1, fs_ino(d), &ip));
	fs_iput(ip);
	CHECK_OK(fs_rename(a, "d", 1, c, "d", 1, NULL));
	CHECK_EQ(export_lookup_entry(ea, d, "..", 2, fs_ino(c), &ip), -EACCES);
	exports_free(&e);

	fs_iput(b);
	fs_iput(sub);
	fs_iput(d);
	fs_iput(c);
	fs_iput(a);
	fs_iput(root);
	memfs_close(&m);
	TEST_PASS("export boundary: '..' stays in the export, also from a directory moved out; "
		  "readdir entries resolve by name");
}

int main(void)
{
	test_siphash();
	test_exports();
	test_builtin();
	test_squash();
	test_fh();
	test_fsid_derived();
	test_boundary();
	return 0;
}
