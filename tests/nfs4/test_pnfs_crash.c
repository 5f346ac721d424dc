/*
 * test_pnfs_crash.c - a LAYOUTCOMMIT is durable when it is answered
 * (docs/design.md rule 6), checked through the protocol with power cuts.
 *
 *   test-pnfs-crash JNFSD JNFS
 *
 * jnfsd runs with --crash: its image sits behind the crash device, so the
 * writes it has not flushed live only in its memory and SIGKILL is a power
 * cut. The client (this process, the project's NFSv4.1 library) does what
 * a block-layout client does: LAYOUTGET RW, its data written straight to
 * the image file at the storage offsets of the extents and made durable
 * there (fdatasync, the client's own cache flush), then LAYOUTCOMMIT. The
 * server is killed right after the LAYOUTCOMMIT reply, once per case, and
 * started again on what the image holds:
 *
 *  1. Converted extent: a file with a size but no blocks (SETATTR size);
 *     its RW layout allocates unwritten extents (INVALID_DATA), the
 *     client writes them all, the LAYOUTCOMMIT converts them (no size
 *     change). After the cut a READ through the server returns the
 *     client's data, not the zeros of an unwritten extent.
 *  2. New file: created empty; the client writes 100,003 bytes through
 *     the layout and commits with last_write_offset 100,002. After the
 *     cut the size is 100,003, a READ layout maps the range to
 *     written data (READ_DATA) at the very blocks the client wrote, and a READ
 *     through the server returns its data.
 *  3. Overwrite: the client overwrites the first 64 KiB of case 2's file
 *     in place (READ_WRITE_DATA extents: the commit writes no log, it is a
 *     flush) and commits. After the cut the new data is there and the
 *     rest of the file and its size are as they were.
 * Each check runs after every later cut too. At the end jnfsd stops
 * cleanly and `jnfs check` is clean.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "check.h"
#include "pnfs_util.h"

#define KIB	 1024u
#define CONV_LEN (256 * KIB)
#define NEW_LEN	 100003u
#define OVER_LEN (64 * KIB)

static struct pu_server srv;
static const char *extra[] = {"--crash", "--grace-seconds", "0", NULL};

/* What the client knows once a case was committed. */
static struct {
	bool conv, fresh, over;
	uint8_t conv_data[CONV_LEN], new_data[NEW_LEN];
	uint64_t new_soff[PU_MAX_EXT], new_foff[PU_MAX_EXT];
	unsigned new_n;
} st;

/* A client doing one case's work: on the server, with its files open. */
struct cl {
	struct nfs4c_client *c;
	struct nfs4c_fh root;
};

static struct cl connect(const char *owner)
{
	struct cl c;
	c.c = pu_client(&srv, owner, &c.root);
	return c;
}

/*
 * The client's writes through a layout: each byte of data at its file
 * offset off goes to the storage of the extent covering it, then the image
 * file is flushed. Every byte must be covered by an extent the layout
 * gives for writing.
 */
static void write_through(const struct pu_layout *l, uint64_t off, const uint8_t *data,
			  uint64_t len)
{
	int fd = open(srv.image, O_RDWR);
	CHECK(fd >= 0);
	for (uint64_t done = 0; done < len;) {
		uint64_t at = off + done;
		const struct nfs4c_blk_ext *e = NULL;
		for (unsigned i = 0; i < l->n && !e; i++)
			if (l->ext[i].foff <= at && at - l->ext[i].foff < l->ext[i].len)
				e = &l->ext[i];
		CHECK(e != NULL);
		CHECK(e->state == PNFS_BLOCK_READ_WRITE_DATA ||
		      e->state == PNFS_BLOCK_INVALID_DATA);
		uint64_t n = MIN(len - done, e->foff + e->len - at);
		CHECK_EQ(pwrite(fd, data + done, n, (off_t)(e->soff + (at - e->foff))), (ssize_t)n);
		done += n;
	}
	CHECK_OK(fdatasync(fd));
	close(fd);
}

/* LAYOUTCOMMIT of [off, off + len) as the extents of l cover it. */
static nfsstat4 commit(struct cl *c, const struct nfs4c_fh *fh, const struct pu_layout *l,
		       uint64_t off, uint64_t len, uint64_t last_write, uint64_t *new_size)
{
	struct nfs4c_blk_ext e[PU_MAX_EXT];
	unsigned n = 0;
	for (unsigned i = 0; i < l->n; i++) {
		uint64_t s = MAX(l->ext[i].foff, off & ~4095ull);
		uint64_t end = MIN(l->ext[i].foff + l->ext[i].len, (off + len + 4095) & ~4095ull);
		if (s >= end)
			continue;
		e[n] = l->ext[i];
		e[n].soff += s - e[n].foff;
		e[n].foff = s;
		e[n].len = end - s;
		e[n].state = PNFS_BLOCK_READ_WRITE_DATA;
		n++;
	}
	return pu_layoutcommit(c->c, fh, &l->stateid, e, n, last_write, new_size);
}

/* READ of the whole range through the server equals want. */
static void check_read(struct cl *c, const char *name, const uint8_t *want, uint64_t len)
{
	struct nfs4c_fh fh;
	struct stateid4 sid;
	uint8_t *buf = xmalloc(len + 4096);
	uint32_t got;
	CHECK_EQ(pu_open(c->c, &c->root, name, false, OPEN4_SHARE_ACCESS_READ, &fh, &sid), NFS4_OK);
	CHECK_EQ(pu_read(c->c, &fh, &sid, 0, buf, (uint32_t)len + 4096, &got), NFS4_OK);
	if (got != len || memcmp(buf, want, len)) {
		uint64_t i = 0;
		while (i < MIN(got, len) && buf[i] == want[i])
			i++;
		fprintf(stderr, "%s: read %u bytes, %llu expected; first difference at %llu\n",
			name, got, (unsigned long long)len, (unsigned long long)i);
		exit(1);
	}
	pu_close(c->c, &fh, &sid);
	free(buf);
}

/* Every case committed so far is there. */
static void check_all(struct cl *c)
{
	if (st.conv) {
		check_read(c, "conv", st.conv_data, CONV_LEN);
		printf("conv: the converted extent holds the client's %u bytes\n", CONV_LEN);
	}
	if (!st.fresh)
		return;
	struct nfs4c_fh fh;
	struct stateid4 sid;
	uint64_t size, change;
	CHECK_EQ(pu_open(c->c, &c->root, "new", false, OPEN4_SHARE_ACCESS_READ, &fh, &sid),
		 NFS4_OK);
	pu_getattr(c->c, &fh, &size, &change);
	CHECK_EQ(size, NEW_LEN);
	/* the extents: written data (READ_DATA in a READ layout) at the
	 * blocks the client wrote */
	struct pu_layout l;
	CHECK_EQ(pu_layoutget(c->c, &fh, LAYOUTIOMODE4_READ, 0, NEW_LEN, NEW_LEN, &sid, 0, &l),
		 NFS4_OK);
	for (uint64_t off = 0; off < NEW_LEN; off += 4096) {
		const struct nfs4c_blk_ext *e = NULL;
		for (unsigned i = 0; i < l.n && !e; i++)
			if (l.ext[i].foff <= off && off - l.ext[i].foff < l.ext[i].len)
				e = &l.ext[i];
		CHECK(e != NULL);
		CHECK_EQ(e->state, PNFS_BLOCK_READ_DATA); /* written data, in a READ layout */
		uint64_t want = UINT64_MAX;
		for (unsigned i = 0; i < st.new_n; i++)
			if (off >= st.new_foff[i] &&
			    (i + 1 == st.new_n || off < st.new_foff[i + 1]))
				want = st.new_soff[i] + (off - st.new_foff[i]);
		CHECK_EQ(e->soff + (off - e->foff), want);
	}
	CHECK_EQ(pu_layoutreturn(c->c, &fh, LAYOUTIOMODE4_ANY, LAYOUTRETURN4_FILE, 0, UINT64_MAX,
				 &l.stateid, NULL),
		 NFS4_OK);
	pu_close(c->c, &fh, &sid);
	check_read(c, "new", st.new_data, NEW_LEN);
	printf("new: size %llu, %u READ_DATA extents at the blocks written, the data%s\n",
	       (unsigned long long)size, l.n, st.over ? " (its first 64 KiB overwritten)" : "");
}

/* The power cut right after the reply; a new jnfsd on what is left. */
static struct cl cut(struct cl *c, const char *owner)
{
	pu_kill(&srv);
	nfs4c_destroy(c->c); /* its server is gone: nothing to say to it */
	pu_start(&srv, extra);
	struct cl n = connect(owner);
	check_all(&n);
	return n;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(240); /* the watchdog */
	if (argc != 3) {
		fprintf(stderr, "usage: test-pnfs-crash JNFSD JNFS\n");
		return 2;
	}
	pu_init(&srv, argv[1], argv[2], NULL);
	pu_start(&srv, extra);
	struct cl c = connect("crash-1");
	struct nfs4c_fh fh;
	struct stateid4 sid;
	struct pu_layout l;
	uint64_t new_size;

	/* 1: a converted extent */
	CHECK_EQ(pu_open(c.c, &c.root, "conv", true, OPEN4_SHARE_ACCESS_BOTH, &fh, &sid), NFS4_OK);
	struct nfs4c_compound cp;
	nfs4c_compound_init(&cp, c.c);
	nfs4c_op_putfh(&cp, &fh);
	nfs4c_op_setattr(&cp, &sid, &(struct nfs4c_sattr){.set = NFS4C_SA_SIZE, .size = CONV_LEN});
	CHECK_OK(nfs4c_send(&cp));
	CHECK_EQ(cp.status, NFS4_OK);
	nfs4c_compound_destroy(&cp);
	CHECK_EQ(pu_layoutget(c.c, &fh, LAYOUTIOMODE4_RW, 0, CONV_LEN, CONV_LEN, &sid, 0, &l),
		 NFS4_OK);
	for (unsigned i = 0; i < l.n; i++)
		CHECK_EQ(l.ext[i].state, PNFS_BLOCK_INVALID_DATA);
	pu_pattern(st.conv_data, CONV_LEN, 0, 11);
	write_through(&l, 0, st.conv_data, CONV_LEN);
	CHECK_EQ(commit(&c, &fh, &l, 0, CONV_LEN, UINT64_MAX, &new_size), NFS4_OK);
	st.conv = true;
	printf("conv: %u INVALID_DATA extents written and committed; power cut\n", l.n);
	c = cut(&c, "crash-2");
	TEST_PASS("a LAYOUTCOMMIT that converts an extent survives a power cut");

	/* 2: a new file */
	CHECK_EQ(pu_open(c.c, &c.root, "new", true, OPEN4_SHARE_ACCESS_BOTH, &fh, &sid), NFS4_OK);
	CHECK_EQ(pu_layoutget(c.c, &fh, LAYOUTIOMODE4_RW, 0, NEW_LEN, NEW_LEN, &sid, 0, &l),
		 NFS4_OK);
	pu_pattern(st.new_data, NEW_LEN, 0, 12);
	write_through(&l, 0, st.new_data, NEW_LEN);
	CHECK_EQ(commit(&c, &fh, &l, 0, NEW_LEN, NEW_LEN - 1, &new_size), NFS4_OK);
	CHECK_EQ(new_size, NEW_LEN);
	st.new_n = l.n;
	for (unsigned i = 0; i < l.n; i++) {
		st.new_foff[i] = l.ext[i].foff;
		st.new_soff[i] = l.ext[i].soff;
	}
	st.fresh = true;
	printf("new: %u bytes in %u extents written and committed, size %llu; power cut\n", NEW_LEN,
	       l.n, (unsigned long long)new_size);
	c = cut(&c, "crash-3");
	TEST_PASS("a new file's size, extents and data survive a power cut");

	/* 3: an overwrite in place */
	CHECK_EQ(pu_open(c.c, &c.root, "new", false, OPEN4_SHARE_ACCESS_BOTH, &fh, &sid), NFS4_OK);
	CHECK_EQ(pu_layoutget(c.c, &fh, LAYOUTIOMODE4_RW, 0, OVER_LEN, OVER_LEN, &sid, 0, &l),
		 NFS4_OK);
	for (unsigned i = 0; i < l.n; i++)
		CHECK_EQ(l.ext[i].state, PNFS_BLOCK_READ_WRITE_DATA);
	pu_pattern(st.new_data, OVER_LEN, 0, 13);
	write_through(&l, 0, st.new_data, OVER_LEN);
	CHECK_EQ(commit(&c, &fh, &l, 0, OVER_LEN, OVER_LEN - 1, &new_size), NFS4_OK);
	st.over = true;
	printf("new: its first %u bytes overwritten in place and committed; power cut\n", OVER_LEN);
	c = cut(&c, "crash-4");
	TEST_PASS("an overwrite's LAYOUTCOMMIT survives a power cut");

	pu_client_end(c.c);
	pu_finish(&srv);
	TEST_PASS("LAYOUTCOMMIT replies only once it is durable");
	return 0;
}
