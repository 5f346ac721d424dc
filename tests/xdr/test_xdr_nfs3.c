/*
 * test_xdr_nfs3.c - a live jnfsd through the codecs generated from
 * src/xdr/nfs3.x and mount3.x (xdr/nfs3.h, xdr/mount3.h; docs/xdr.md), the
 * same codecs the server decodes and encodes with: MOUNT (MNT, DUMP,
 * EXPORT, UMNT) and every NFSv3 procedure, called with arguments encoded
 * by the generated encoders, every reply decoded by the generated
 * decoders to its end and checked.
 *
 *   test-xdr-nfs3 JNFSD
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rpc/rpc_test.h"
#include "xdr/mount3.h"
#include "xdr/nfs3.h"

static int fd;
static uint32_t xid = 1;
static struct xdr_arena arena;
static uint8_t *replies[256];
static unsigned nreplies;

/* Call prog.vers.proc with args encoded by enc; decode the reply into res
 * with dec (from the arena; the reply record is kept, as res may point
 * into it). */
static void call(uint32_t prog, uint32_t vers, uint32_t proc,
		 int (*enc)(struct xdr_enc *, const void *), const void *args,
		 int (*dec)(struct xdr_dec *, void *), void *res)
{
	struct rpc_cred cred = {.flavor = RPC_AUTH_SYS, .uid = 0, .gid = 0};
	strcpy(cred.machine, "test");
	struct xdr_enc e;
	xdr_enc_init(&e, 2 << 20);
	if (enc)
		CHECK_OK(enc(&e, args));
	uint8_t *flat = malloc(xdr_enc_len(&e) + 1);
	xdr_enc_flatten(&e, flat);
	tc_send_call(fd, xid++, prog, vers, proc, &cred, flat, xdr_enc_len(&e));
	free(flat);
	xdr_enc_destroy(&e);
	struct rpc_reply_hdr rh;
	struct xdr_dec d;
	CHECK(nreplies < sizeof(replies) / sizeof(replies[0]));
	replies[nreplies++] = tc_recv_reply(fd, &rh, &d);
	CHECK(rh.reply_stat == RPC_MSG_ACCEPTED && rh.stat == RPC_SUCCESS);
	d.arena = &arena;
	if (dec)
		CHECK_OK(dec(&d, res));
	CHECK_EQ(xdr_dec_remaining(&d), 0);
}

#define NFS(P, A, R, a, r)                                                                         \
	call(NFS_PROGRAM, NFS_V3, NFSPROC3_##P, nfs3_rpc_enc_##A, a, nfs3_rpc_dec_##R, r)

/* filename3 and nfspath3 are distinct types of the same shape */
#define set_name(n, s) ((n)->val = (s), (n)->len = (uint32_t)strlen(s))

static void test_server(const char *jnfsd)
{
	struct tc_jnfsd j;
	const char *args[] = {"--listen", "127.0.0.1:0", "--rpcbind", "off", NULL};
	tc_jnfsd_start(&j, jnfsd, args);
	fd = tc_connect(j.port[0], false);
	xdr_arena_init(&arena, NULL, 0, 16 << 20);

	/* MOUNT */
	dirpath3 root = {.len = 1, .val = "/"};
	struct mountres3 mnt;
	call(MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_MNT, mount3_rpc_enc_dirpath3, &root,
	     mount3_rpc_dec_mountres3, &mnt);
	CHECK_EQ(mnt.fhs_status, MNT3_OK);
	CHECK(mnt.mountinfo.fhandle.len > 0);
	CHECK(mnt.mountinfo.auth_flavors.len == 1 && mnt.mountinfo.auth_flavors.val[0] == 1);
	mountlist3 ml;
	call(MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_DUMP, NULL, NULL, mount3_rpc_dec_mountlist3, &ml);
	CHECK(ml && !ml->ml_next);
	CHECK(ml->ml_directory.len == 1 && ml->ml_directory.val[0] == '/');
	CHECK(ml->ml_hostname.len == 9 && !memcmp(ml->ml_hostname.val, "127.0.0.1", 9));
	exports3 ex;
	call(MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_EXPORT, NULL, NULL, mount3_rpc_dec_exports3, &ex);
	CHECK(ex && !ex->ex_next && ex->ex_dir.len == 1 && ex->ex_groups);
	call(MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_UMNT, mount3_rpc_enc_dirpath3, &root, NULL, NULL);
	call(MOUNT_PROGRAM, MOUNT_V3, MOUNTPROC3_DUMP, NULL, NULL, mount3_rpc_dec_mountlist3, &ml);
	CHECK(ml == NULL);

	/* NFSv3: every procedure */
	struct nfs_fh3 rootfh;
	rootfh.data.len = mnt.mountinfo.fhandle.len;
	memcpy(rootfh.data.val, mnt.mountinfo.fhandle.val, rootfh.data.len);

	struct GETATTR3args ga = {.object = rootfh};
	struct GETATTR3res gr;
	NFS(GETATTR, GETATTR3args, GETATTR3res, &ga, &gr);
	CHECK(gr.status == NFS3_OK && gr.resok.obj_attributes.type == NF3DIR);

	struct CREATE3args ca = {.where.dir = rootfh, .how.mode = UNCHECKED};
	set_name(&ca.where.name, "file");
	ca.how.obj_attributes.mode.set_it = true;
	ca.how.obj_attributes.mode.mode = 0644;
	struct CREATE3res cr;
	NFS(CREATE, CREATE3args, CREATE3res, &ca, &cr);
	CHECK(cr.status == NFS3_OK && cr.resok.obj.handle_follows);
	struct nfs_fh3 file = cr.resok.obj.handle;
	CHECK(cr.resok.obj_attributes.attributes_follow &&
	      cr.resok.obj_attributes.attributes.mode == 0644);

	static uint8_t data[70000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	struct WRITE3args wa = {.file = file,
				.offset = 0,
				.count = sizeof(data),
				.stable = FILE_SYNC,
				.data = {sizeof(data), data}};
	struct WRITE3res wr;
	NFS(WRITE, WRITE3args, WRITE3res, &wa, &wr);
	CHECK(wr.status == NFS3_OK && wr.resok.count == sizeof(data) &&
	      wr.resok.committed == FILE_SYNC);

	struct READ3args ra = {.file = file, .offset = 0, .count = 1 << 17};
	struct READ3res rr;
	NFS(READ, READ3args, READ3res, &ra, &rr);
	CHECK(rr.status == NFS3_OK && rr.resok.eof && rr.resok.count == sizeof(data));
	CHECK(rr.resok.data.len == sizeof(data) && !memcmp(rr.resok.data.val, data, sizeof(data)));

	struct SETATTR3args sa = {.object = file};
	sa.new_attributes.size.set_it = true;
	sa.new_attributes.size.size = 10;
	sa.guard.check = true;
	sa.guard.obj_ctime.seconds = 1; /* not the file's ctime: NOT_SYNC */
	struct SETATTR3res sr;
	NFS(SETATTR, SETATTR3args, SETATTR3res, &sa, &sr);
	CHECK(sr.status == NFS3ERR_NOT_SYNC);
	sa.guard.check = false;
	NFS(SETATTR, SETATTR3args, SETATTR3res, &sa, &sr);
	CHECK(sr.status == NFS3_OK && sr.resok.obj_wcc.after.attributes_follow &&
	      sr.resok.obj_wcc.after.attributes.size == 10);
	memset(&sa.new_attributes, 0, sizeof(sa.new_attributes));
	sa.new_attributes.mtime.set_it = SET_TO_CLIENT_TIME;
	sa.new_attributes.mtime.mtime.seconds = 1000000000;
	sa.new_attributes.mtime.mtime.nseconds = 5;
	NFS(SETATTR, SETATTR3args, SETATTR3res, &sa, &sr);
	CHECK(sr.status == NFS3_OK && sr.resok.obj_wcc.before.attributes_follow &&
	      sr.resok.obj_wcc.after.attributes.mtime.seconds == 1000000000 &&
	      sr.resok.obj_wcc.after.attributes.mtime.nseconds == 5);

	struct MKDIR3args ma = {.where.dir = rootfh};
	set_name(&ma.where.name, "dir");
	struct MKDIR3res mr;
	NFS(MKDIR, MKDIR3args, MKDIR3res, &ma, &mr);
	CHECK(mr.status == NFS3_OK && mr.resok.obj.handle_follows);
	struct nfs_fh3 dir = mr.resok.obj.handle;

	struct SYMLINK3args sla = {.where.dir = rootfh};
	set_name(&sla.where.name, "link");
	set_name(&sla.symlink.symlink_data, "file");
	struct SYMLINK3res slr;
	NFS(SYMLINK, SYMLINK3args, SYMLINK3res, &sla, &slr);
	CHECK(slr.status == NFS3_OK && slr.resok.obj.handle_follows);
	struct READLINK3args rla = {.symlink = slr.resok.obj.handle};
	struct READLINK3res rlr;
	NFS(READLINK, READLINK3args, READLINK3res, &rla, &rlr);
	CHECK(rlr.status == NFS3_OK && rlr.resok.data.len == 4 &&
	      !memcmp(rlr.resok.data.val, "file", 4));

	struct MKNOD3args mka = {.where.dir = dir, .what.type = NF3FIFO};
	set_name(&mka.where.name, "fifo");
	struct MKNOD3res mkr;
	NFS(MKNOD, MKNOD3args, MKNOD3res, &mka, &mkr);
	CHECK(mkr.status == NFS3_OK && mkr.resok.obj_attributes.attributes.type == NF3FIFO);
	mka.what.type = NF3CHR;
	mka.what.device.spec.specdata1 = 1;
	mka.what.device.spec.specdata2 = 3;
	set_name(&mka.where.name, "null");
	NFS(MKNOD, MKNOD3args, MKNOD3res, &mka, &mkr);
	CHECK(mkr.status == NFS3_OK && mkr.resok.obj_attributes.attributes.rdev.specdata2 == 3);
	mka.what.type = NF3DIR; /* the default arm: NFS3ERR_BADTYPE */
	NFS(MKNOD, MKNOD3args, MKNOD3res, &mka, &mkr);
	CHECK(mkr.status == NFS3ERR_BADTYPE);

	struct LOOKUP3args la = {.what.dir = rootfh};
	set_name(&la.what.name, "file");
	struct LOOKUP3res lr;
	NFS(LOOKUP, LOOKUP3args, LOOKUP3res, &la, &lr);
	CHECK(lr.status == NFS3_OK && lr.resok.object.data.len == file.data.len &&
	      !memcmp(lr.resok.object.data.val, file.data.val, file.data.len));
	set_name(&la.what.name, "absent");
	NFS(LOOKUP, LOOKUP3args, LOOKUP3res, &la, &lr);
	CHECK(lr.status == NFS3ERR_NOENT && lr.resfail.dir_attributes.attributes_follow);

	struct ACCESS3args aa = {.object = file, .access = 0x3f};
	struct ACCESS3res ar;
	NFS(ACCESS, ACCESS3args, ACCESS3res, &aa, &ar);
	CHECK(ar.status == NFS3_OK && (ar.resok.access & ACCESS3_READ));

	struct LINK3args lka = {.file = file, .link.dir = dir};
	set_name(&lka.link.name, "hard");
	struct LINK3res lkr;
	NFS(LINK, LINK3args, LINK3res, &lka, &lkr);
	CHECK(lkr.status == NFS3_OK && lkr.resok.file_attributes.attributes.nlink == 2);

	struct RENAME3args rna = {.from.dir = dir, .to.dir = rootfh};
	set_name(&rna.from.name, "hard");
	set_name(&rna.to.name, "hard2");
	struct RENAME3res rnr;
	NFS(RENAME, RENAME3args, RENAME3res, &rna, &rnr);
	CHECK(rnr.status == NFS3_OK && rnr.resok.todir_wcc.after.attributes_follow);

	struct READDIRPLUS3args rpa = {.dir = rootfh, .dircount = 4096, .maxcount = 32768};
	struct READDIRPLUS3res rpr;
	NFS(READDIRPLUS, READDIRPLUS3args, READDIRPLUS3res, &rpa, &rpr);
	CHECK(rpr.status == NFS3_OK && rpr.resok.reply.eof);
	unsigned seen = 0;
	for (const struct entryplus3 *e = rpr.resok.reply.entries; e; e = e->nextentry) {
		static const char *const want[] = {"file", "dir", "link", "hard2"};
		for (int i = 0; i < 4; i++)
			if (e->name.len == strlen(want[i]) &&
			    !memcmp(e->name.val, want[i], e->name.len)) {
				seen |= 1u << i;
				CHECK(e->name_attributes.attributes_follow &&
				      e->name_handle.handle_follows);
			}
	}
	CHECK_EQ(seen, 15);
	struct READDIR3args rda = {.dir = dir, .count = 4096};
	struct READDIR3res rdr;
	NFS(READDIR, READDIR3args, READDIR3res, &rda, &rdr);
	CHECK(rdr.status == NFS3_OK && rdr.resok.reply.eof);
	unsigned nents = 0;
	for (const struct entry3 *e = rdr.resok.reply.entries; e; e = e->nextentry)
		nents++;
	CHECK_EQ(nents, 4); /* ., .., fifo, null */

	struct FSSTAT3args fsa = {.fsroot = rootfh};
	struct FSSTAT3res fsr;
	NFS(FSSTAT, FSSTAT3args, FSSTAT3res, &fsa, &fsr);
	CHECK(fsr.status == NFS3_OK && fsr.resok.tbytes >= fsr.resok.fbytes);
	struct FSINFO3args fia = {.fsroot = rootfh};
	struct FSINFO3res fir;
	NFS(FSINFO, FSINFO3args, FSINFO3res, &fia, &fir);
	CHECK(fir.status == NFS3_OK && fir.resok.rtmax > 0 && fir.resok.wtmax > 0);
	struct PATHCONF3args pca = {.object = rootfh};
	struct PATHCONF3res pcr;
	NFS(PATHCONF, PATHCONF3args, PATHCONF3res, &pca, &pcr);
	CHECK(pcr.status == NFS3_OK && pcr.resok.name_max == 255);
	struct COMMIT3args cma = {.file = file};
	struct COMMIT3res cmr;
	NFS(COMMIT, COMMIT3args, COMMIT3res, &cma, &cmr);
	CHECK(cmr.status == NFS3_OK && !memcmp(cmr.resok.verf, wr.resok.verf, 8));

	struct REMOVE3args rma = {.object.dir = rootfh};
	set_name(&rma.object.name, "hard2");
	struct REMOVE3res rmr;
	NFS(REMOVE, REMOVE3args, REMOVE3res, &rma, &rmr);
	CHECK(rmr.status == NFS3_OK);
	struct RMDIR3args rda2 = {.object.dir = rootfh};
	set_name(&rda2.object.name, "dir");
	struct RMDIR3res rdr2;
	NFS(RMDIR, RMDIR3args, RMDIR3res, &rda2, &rdr2);
	CHECK(rdr2.status == NFS3ERR_NOTEMPTY && rdr2.resfail.dir_wcc.after.attributes_follow);

	close(fd);
	for (unsigned i = 0; i < nreplies; i++)
		free(replies[i]);
	xdr_arena_reset(&arena);
	CHECK_OK(tc_jnfsd_stop(&j));
	printf("server: %u calls of all MOUNT and NFSv3 procedures through the generated codecs\n",
	       xid - 1);
	TEST_PASS("server: every MOUNT and NFSv3 procedure through the generated codecs");
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	test_server(argv[1]);
	return 0;
}
