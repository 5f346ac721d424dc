/*
 * test_nfs4_conform.c - answers RFC 8881 gives (and the Linux server
 * gives) where a conformance suite asks in ways the project's client does
 * not (docs/nfs4.md "Conformance").
 *
 *   test-nfs4-conform JNFSD JNFS [CASE]
 *
 * Cases:
 *   - RENAME over a file that is open, and REMOVE of one: the open keeps
 *     the file (WRITE, CLOSE are OK through its handle), whose inode is
 *     freed when the open goes (then the handle is STALE).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nfs4_test.h"

static struct nfs4t_server srv;
static struct nfs4c_client *a;
static struct nfs4c_fh root, dir;

static void kill_server(void)
{
	if (srv.j.pid > 0)
		kill(srv.j.pid, SIGKILL);
}

/* Inodes in use: files_total - files_free (each counts free blocks as
 * inodes that could be made; the difference is what is allocated). */
static uint64_t inodes_used(void)
{
	bitmap4 bm = {0};
	nfs4c_bitmap_set(&bm, FATTR4_FILES_FREE);
	nfs4c_bitmap_set(&bm, FATTR4_FILES_TOTAL);
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &dir);
	nfs4c_op_getattr(&c, &bm);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	struct nfs4c_attr at;
	CHECK_OK(nfs4c_res_attr(&c, &at));
	CHECK(nfs4c_bitmap_isset(&at.have, FATTR4_FILES_FREE));
	CHECK(nfs4c_bitmap_isset(&at.have, FATTR4_FILES_TOTAL));
	nfs4c_compound_destroy(&c);
	return at.files_total - at.files_free;
}

static void unlinked_open(void)
{
	struct nfs4c_fh fh1, fh2;
	struct stateid4 s1, s2;
	nfs4t_open_create(a, &dir, "rn-src", "ro", &fh1, &s1);
	nfs4t_close(a, &fh1, &s1);
	nfs4t_open_create(a, &dir, "rn-dst", "ro", &fh2, &s2);
	uint64_t before = inodes_used();

	struct nfs4c_compound c;
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &dir);
	nfs4c_op_savefh(&c);
	nfs4c_op_rename(&c, "rn-src", "rn-dst");
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	/* the replaced file lives on while it is open: usable, not freed */
	static const uint8_t data[4] = "abc";
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &fh2);
	nfs4c_op_write(&c, &s2, 0, FILE_SYNC4, data, sizeof(data));
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	CHECK_EQ(inodes_used(), before);

	/* CLOSE is OK, and the open was the last thing holding the inode */
	CHECK_EQ(nfs4t_stateid_op(a, &fh2, OP_CLOSE, &s2, NULL), NFS4_OK);
	CHECK_EQ(inodes_used(), before - 1);
	CHECK_EQ(nfs4t_stateid_op(a, &fh2, OP_CLOSE, &s2, NULL), NFS4ERR_STALE);
	TEST_PASS("RENAME over an open file: CLOSE OK, the inode freed then");

	/* REMOVE of an open file: the same */
	nfs4t_open_create(a, &dir, "rm-open", "ro", &fh1, &s1);
	before = inodes_used();
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &dir);
	nfs4c_op_remove(&c, "rm-open");
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &fh1);
	nfs4c_op_write(&c, &s1, 0, FILE_SYNC4, data, sizeof(data));
	nfs4c_op_read(&c, &s1, 0, sizeof(data));
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	const struct READ4resok *rd = &nfs4c_res(&c, OP_READ, 0)->opread.resok4;
	CHECK_EQ(rd->data.len, sizeof(data));
	CHECK(!memcmp(rd->data.val, data, sizeof(data)));
	nfs4c_compound_destroy(&c);
	CHECK_EQ(inodes_used(), before);
	/* a write, so that the reply waits for the journal, and the CLOSE:
	 * the compound's filehandle is the last reference */
	nfs4c_compound_init(&c, a);
	nfs4c_op_putfh(&c, &fh1);
	nfs4c_op_write(&c, &s1, sizeof(data), FILE_SYNC4, data, sizeof(data));
	nfs4c_op_close(&c, &s1);
	CHECK_EQ(nfs4t_send(&c), NFS4_OK);
	nfs4c_compound_destroy(&c);
	CHECK_EQ(inodes_used(), before - 1);
	CHECK_EQ(nfs4t_stateid_op(a, &fh1, OP_CLOSE, &s1, NULL), NFS4ERR_STALE);
	TEST_PASS("REMOVE of an open file: WRITE, READ and CLOSE OK, the inode freed then");
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: test-nfs4-conform JNFSD JNFS [CASE]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(300);
	const char *dirs[] = {"d", NULL};
	nfs4t_server_init(&srv, argv[1], argv[2], 256, dirs,
			  "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n");
	nfs4t_server_start(&srv, NULL);
	atexit(kill_server);

	a = nfs4t_client(srv.addr, "conform-a", &root);
	nfs4t_lookup(a, &root, "d", &dir);

	/* an optional fourth argument runs one case alone */
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = {
		{"unlinked_open", unlinked_open},
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (argc < 4 || !strcmp(argv[3], cases[i].name))
			cases[i].fn();

	nfs4t_unmount(a);
	struct nfs4t_stats st;
	nfs4t_stats(&srv.j, &st);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.clients"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.stateids"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.brl.locks"), 0);
	CHECK_EQ(nfs4t_stat(&st, "nfs4.share.opens"), 0);
	TEST_PASS("the clients left nothing behind");
	nfs4t_server_fini(&srv);
	return 0;
}
