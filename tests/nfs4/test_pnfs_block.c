/*
 * test_pnfs_block.c - pNFS block layouts end to end: jnfsd serves an
 * image with a `pnfs` export and `jnfs pnfs` (src/cli/cmd_pnfs.c) writes and
 * reads files through layouts, opening the same image file O_DIRECT as
 * its disk.
 *
 *   test-pnfs-block JNFSD JNFS
 *
 *  1. EXCHANGE_ID answers USE_PNFS_MDS and the export's fs_layout_types
 *     has LAYOUT4_BLOCK_VOLUME (a `pnfs` export, docs/design.md §6).
 *  2. Files written with `jnfs pnfs put` (1 MiB; 1,000,003 bytes; 70,000
 *     bytes in unaligned 3,000-byte writes each committed) and read back
 *     with `jnfs pnfs get` are equal to the local files, while the server
 *     counts no READ and no WRITE, and counts the LAYOUTGETs and
 *     LAYOUTCOMMITs; then a READ through the server by this test's own
 *     client returns the same bytes (the server keeps no stale copy).
 *  3. An overwrite's LAYOUTCOMMIT is an fdatasync (docs/design.md rule
 *     6): `jnfs pnfs overwrite` of a 1 MiB file in 64 KiB writes, each
 *     followed by a LAYOUTCOMMIT: every commit costs no log write and one
 *     flush of the data device (the client wrote the disk itself, so the
 *     flush is needed even though the server wrote nothing). A run during
 *     which the background push wrote a checkpoint proves nothing; the
 *     run is made again (at most three times).
 *  4. New files (`jnfs pnfs newfiles`): each LAYOUTCOMMIT converts blocks
 *     and grows the size, so each writes the log.
 *  5. A recall: `jnfs pnfs hold --return-on-recall` holds an RW layout;
 *     a WRITE through the server to that file recalls it (rule 9: DELAY
 *     until the layout is back, never a wait on the client), the client
 *     returns it, the WRITE succeeds and its data is read back.
 *  6. jnfsd stops cleanly and `jnfs check` finds the image clean.
 *
 * A jnfsd that answered LAYOUTGET with NOTSUPP (one of before the server
 * side of pNFS) would make the test skip (exit 77).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/time.h"
#include "check.h"
#include "pnfs_util.h"

static struct pu_server srv;

/* A counter of the running jnfsd (its administration program): jnfsd
 * lists an operation once it was called, so an absent one is 0. */
static uint64_t counter(const char *name)
{
	static char out[PU_OUT_MAX];
	const char *argv[] = {srv.jnfs, "stat", "--server", srv.addr, NULL};
	CHECK_EQ(pu_run(out, argv), 0); /* quietly: the whole dump is long */
	uint64_t v = pu_value(out, name);
	return v == UINT64_MAX ? 0 : v;
}

static void make_local(const char *name, size_t len, uint32_t seed)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/%s", srv.dir, name);
	uint8_t *b = xmalloc(len);
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (uint8_t)x;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, b, len), (ssize_t)len);
	close(fd);
	free(b);
}

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/%s", srv.dir, name);
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	off_t end = lseek(fd, 0, SEEK_END);
	CHECK(end >= 0);
	uint8_t *b = xmalloc((size_t)end + 1);
	CHECK_EQ(pread(fd, b, (size_t)end, 0), end);
	close(fd);
	*len = (size_t)end;
	return b;
}

/* 1: the server is a pNFS block metadata server for this export; 0: it
 * answers LAYOUTGET with NOTSUPP (a jnfsd of before pNFS). */
static int probe(struct nfs4c_client *cl, const struct nfs4c_fh *root)
{
	struct nfs4c_info info;
	struct nfs4c_compound c;
	struct nfs4c_attr attr;
	struct nfs4c_fh fh;
	struct stateid4 sid;
	bitmap4 bm = {0};

	nfs4c_get_info(cl, &info);
	printf("EXCHANGE_ID flags 0x%x\n", info.eir_flags);
	CHECK(info.eir_flags & EXCHGID4_FLAG_USE_PNFS_MDS);
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, root);
	nfs4c_bitmap_set(&bm, FATTR4_FS_LAYOUT_TYPES);
	nfs4c_bitmap_set(&bm, FATTR4_LAYOUT_BLKSIZE);
	nfs4c_op_getattr(&c, &bm);
	CHECK_OK(nfs4c_send(&c));
	CHECK_EQ(c.status, NFS4_OK);
	CHECK_OK(nfs4c_res_attr(&c, &attr));
	CHECK(attr.nlayout_types >= 1);
	bool block = false;
	for (unsigned i = 0; i < attr.nlayout_types; i++)
		block |= attr.layout_types[i] == LAYOUT4_BLOCK_VOLUME;
	CHECK(block);
	CHECK(nfs4c_bitmap_isset(&attr.have, FATTR4_LAYOUT_BLKSIZE) && attr.layout_blksize);
	printf("fs_layout_types has LAYOUT4_BLOCK_VOLUME, layout_blksize %u\n",
	       attr.layout_blksize);
	nfs4c_compound_destroy(&c);

	CHECK_EQ(pu_open(cl, root, "probe", true, OPEN4_SHARE_ACCESS_BOTH, &fh, &sid), NFS4_OK);
	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_layoutget(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_READ, 0, 4096, 4096, &sid,
			   65536);
	CHECK_OK(nfs4c_send(&c));
	nfsstat4 st = c.status;
	nfs4c_compound_destroy(&c);
	printf("LAYOUTGET of an empty file: %d\n", st);
	if (st == NFS4_OK) {
		nfs4c_compound_init(&c, cl);
		nfs4c_op_putfh(&c, &fh);
		nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_ANY,
				      LAYOUTRETURN4_ALL, 0, 0, NULL);
		CHECK_OK(nfs4c_send(&c));
		CHECK_EQ(c.status, NFS4_OK);
		nfs4c_compound_destroy(&c);
	}
	pu_close(cl, &fh, &sid);
	return st != NFS4ERR_NOTSUPP;
}

/* READ name through the server; equal to the local file? */
static void read_through_server(struct nfs4c_client *cl, const struct nfs4c_fh *root,
				const char *name)
{
	struct nfs4c_fh fh;
	struct stateid4 sid;
	struct nfs4c_compound c;
	size_t len;
	uint8_t *want = slurp(name, &len);
	CHECK_EQ(pu_open(cl, root, name, false, OPEN4_SHARE_ACCESS_BOTH, &fh, &sid), NFS4_OK);
	for (size_t off = 0;; off += 65536) {
		nfs4c_compound_init(&c, cl);
		nfs4c_op_putfh(&c, &fh);
		nfs4c_op_read(&c, &sid, off, 65536);
		CHECK_OK(nfs4c_send(&c));
		CHECK_EQ(c.status, NFS4_OK);
		const struct READ4resok *r = &nfs4c_res(&c, OP_READ, 0)->opread.resok4;
		size_t expect = off < len ? (len - off < 65536 ? len - off : 65536) : 0;
		CHECK_EQ(r->data.len, expect);
		CHECK(!memcmp(r->data.val, want + off, expect));
		bool eof = r->eof;
		nfs4c_compound_destroy(&c);
		if (eof || !expect) {
			CHECK(off + expect == len);
			break;
		}
	}
	pu_close(cl, &fh, &sid);
	free(want);
	printf("READ through the server: %s equal (%zu bytes)\n", name, len);
}

static void put_get(const char *name, size_t len, const char *io, bool commit_each)
{
	char *out = xmalloc(PU_OUT_MAX), local[160], back[160];
	make_local(name, len, (uint32_t)len);
	snprintf(local, sizeof(local), "%s/%s", srv.dir, name);
	snprintf(back, sizeof(back), "%s/%s.back", srv.dir, name);
	const char *put[] = {srv.jnfs,
			     "pnfs",
			     srv.url,
			     "--device",
			     srv.image,
			     "put",
			     local,
			     name,
			     "--io",
			     io,
			     commit_each ? "--commit-each" : NULL,
			     NULL};
	CHECK_EQ(pu_run_echo(out, put), 0);
	CHECK_EQ(pu_value(out, "pnfs.put.bytes"), len);
	CHECK(pu_value(out, "pnfs.put.client.disk_write_bytes") >= len);
	const char *get[] = {srv.jnfs, "pnfs", srv.url, "--device", srv.image,
			     "get",    name,   back,	NULL};
	CHECK_EQ(pu_run_echo(out, get), 0);
	CHECK_EQ(pu_value(out, "pnfs.get.bytes"), len);
	size_t n1, n2;
	uint8_t *a = slurp(name, &n1), *b = slurp(strrchr(back, '/') + 1, &n2);
	CHECK(n1 == len && n2 == len && !memcmp(a, b, len));
	free(a);
	free(b);
	free(out);
	printf("%s: %zu bytes through the layout and back, equal\n", name, len);
}

/* 3: overwrite LAYOUTCOMMITs (rule 6). */
static void overwrites(void)
{
	char *out = xmalloc(PU_OUT_MAX);
	const char *argv[] = {srv.jnfs, "pnfs",	  srv.url, "--device", srv.image, "overwrite",
			      "ow",	"--size", "1M",	   "--io",     "64K",	  NULL};
	for (int attempt = 1;; attempt++) {
		CHECK_EQ(pu_run_echo(out, argv), 0);
		uint64_t commits = pu_value(out, "pnfs.overwrite.commits");
		uint64_t ckpts = pu_value(out, "pnfs.overwrite.server.checkpoints");
		uint64_t lw = pu_value(out, "pnfs.overwrite.server.log_writes");
		uint64_t fl = pu_value(out, "pnfs.overwrite.server.flushes");
		uint64_t lc = pu_value(out, "pnfs.overwrite.server.layoutcommits");
		CHECK_EQ(commits, 16);
		CHECK_EQ(lc, commits);
		CHECK_EQ(pu_value(out, "pnfs.overwrite.server.writes"), 0);
		CHECK_EQ(pu_value(out, "pnfs.overwrite.server.reads"), 0);
		printf("overwrite, run %d: %llu LAYOUTCOMMITs, %llu log writes, %llu flushes, %llu "
		       "checkpoints\n",
		       attempt, (unsigned long long)commits, (unsigned long long)lw,
		       (unsigned long long)fl, (unsigned long long)ckpts);
		/* the background push (every 30 s) or the AIL may write or
		 * flush during a run: such a run proves nothing either way,
		 * so make another; a server that pays more for every commit
		 * does so in all three */
		if ((ckpts != 0 || lw != 0 || fl != commits) && attempt < 3)
			continue;
		CHECK_EQ(lw, 0);
		CHECK_EQ(fl, commits);
		break;
	}
	free(out);
}

/* 4: new files: each LAYOUTCOMMIT converts and grows, so it logs. */
static void newfiles(void)
{
	char *out = xmalloc(PU_OUT_MAX);
	const char *argv[] = {srv.jnfs, "pnfs", srv.url, "--device", srv.image, "newfiles", "nf",
			      "--size", "256K", "--io",	 "64K",	     "--count", "2",	    NULL};
	CHECK_EQ(pu_run_echo(out, argv), 0);
	uint64_t commits = pu_value(out, "pnfs.newfiles.commits");
	CHECK_EQ(commits, 8);
	CHECK_EQ(pu_value(out, "pnfs.newfiles.server.layoutcommits"), commits);
	/* each commit's conversion and new size are logged and forced
	 * before the next one starts: a log write each at least */
	CHECK(pu_value(out, "pnfs.newfiles.server.log_writes") >= commits);
	CHECK_EQ(pu_value(out, "pnfs.newfiles.server.writes"), 0);
	free(out);
}

/* 5: a WRITE through the server recalls a layout; the client returns it. */
static void recall(struct nfs4c_client *cl, const struct nfs4c_fh *root)
{
	int fd;
	const char *argv[] = {srv.jnfs, "pnfs", srv.url,     "--device", srv.image,
			      "hold",	"held", "--seconds", "120",	 "--return-on-recall",
			      NULL};
	pid_t pid = pu_spawn(argv, &fd);
	FILE *in = fdopen(fd, "r");
	char line[512];
	CHECK(fgets(line, sizeof(line), in));
	printf("%s", line);
	CHECK(!strncmp(line, "pnfs.hold: holding", 18));

	struct nfs4c_fh fh;
	struct stateid4 sid;
	struct nfs4c_compound c;
	static const char data[] = "written through the server";
	CHECK_EQ(pu_open(cl, root, "held", false, OPEN4_SHARE_ACCESS_BOTH, &fh, &sid), NFS4_OK);
	unsigned delays = 0;
	uint64_t end = now_ns() + 60 * NSEC_PER_SEC; /* a watchdog */
	for (;;) {
		nfs4c_compound_init(&c, cl);
		nfs4c_op_putfh(&c, &fh);
		nfs4c_op_write(&c, &sid, 100, FILE_SYNC4, data, sizeof(data));
		CHECK_OK(nfs4c_send(&c));
		nfsstat4 st = c.status;
		nfs4c_compound_destroy(&c);
		if (st == NFS4_OK)
			break;
		CHECK_EQ(st, NFS4ERR_DELAY);
		delays++;
		CHECK(now_ns() < end);
		sleep_ns(50 * NSEC_PER_MSEC);
	}
	printf("WRITE through the server: %u DELAY answers, then OK\n", delays);
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	size_t n = 0;
	char rest[4096];
	while (n < sizeof(rest) - 1 && fgets(rest + n, (int)(sizeof(rest) - n), in))
		n += strlen(rest + n);
	fclose(in);
	printf("%s", rest);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ(pu_value(rest, "pnfs.hold.recalls_returned"), 1);

	nfs4c_compound_init(&c, cl);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_read(&c, &sid, 100, sizeof(data));
	CHECK_OK(nfs4c_send(&c));
	CHECK_EQ(c.status, NFS4_OK);
	const struct READ4resok *r = &nfs4c_res(&c, OP_READ, 0)->opread.resok4;
	CHECK(r->data.len == sizeof(data) && !memcmp(r->data.val, data, sizeof(data)));
	nfs4c_compound_destroy(&c);
	pu_close(cl, &fh, &sid);
}

int main(int argc, char **argv)
{
	struct nfs4c_fh root;
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(600);
	if (argc != 3) {
		fprintf(stderr, "usage: test-pnfs-block JNFSD JNFS\n");
		return 2;
	}
	pu_init(&srv, argv[1], argv[2], NULL);
	pu_start(&srv, NULL);

	struct nfs4c_client *cl = pu_client(&srv, "pnfs-block", &root);
	if (!probe(cl, &root)) {
		printf("SKIP: jnfsd answers LAYOUTGET with NFS4ERR_NOTSUPP\n");
		nfs4c_unmount(cl);
		nfs4c_destroy(cl);
		pu_stop(&srv);
		char cmd[160];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", srv.dir);
		CHECK_EQ(system(cmd), 0);
		return 77;
	}

	/* 2: through layouts only */
	uint64_t reads = counter("nfs4.op.READ"), writes = counter("nfs4.op.WRITE");
	uint64_t lg = counter("nfs4.op.LAYOUTGET"), lc = counter("nfs4.op.LAYOUTCOMMIT");
	uint64_t gdi = counter("nfs4.op.GETDEVICEINFO");
	put_get("one-mib", 1u << 20, "1M", false);
	put_get("odd-size", 1000003, "256K", false);
	put_get("small-writes", 70000, "3000", true);
	CHECK_EQ(counter("nfs4.op.READ") - reads, 0);
	CHECK_EQ(counter("nfs4.op.WRITE") - writes, 0);
	uint64_t nlg = counter("nfs4.op.LAYOUTGET") - lg,
		 nlc = counter("nfs4.op.LAYOUTCOMMIT") - lc;
	printf("the server counted %llu LAYOUTGETs, %llu LAYOUTCOMMITs, %llu GETDEVICEINFOs, "
	       "no READ, no WRITE\n",
	       (unsigned long long)nlg, (unsigned long long)nlc,
	       (unsigned long long)(counter("nfs4.op.GETDEVICEINFO") - gdi));
	CHECK(nlg >= 6);
	CHECK(nlc >= 2 + 24); /* one per put, one per small write */
	CHECK(counter("nfs4.op.GETDEVICEINFO") > gdi);
	read_through_server(cl, &root, "one-mib");
	read_through_server(cl, &root, "odd-size");
	read_through_server(cl, &root, "small-writes");
	TEST_PASS("files through block layouts, no READ or WRITE through the server");

	overwrites();
	TEST_PASS("an overwrite's LAYOUTCOMMIT: no log write, one flush");
	newfiles();
	TEST_PASS("new files: every LAYOUTCOMMIT writes the log");
	recall(cl, &root);
	TEST_PASS("a WRITE through the server recalls the layout, the client returns it");

	pu_client_end(cl);
	pu_finish(&srv); /* stops jnfsd; `jnfs check` finds the image clean */
	TEST_PASS("pnfs block layouts end to end");
	return 0;
}
