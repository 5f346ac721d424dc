/*
 * test_nfs3_wcc.c - weak cache consistency and the SETATTR guard through
 * jnfsd, with several clients changing one directory at once.
 *
 *   1. Every reply about the shared directory (CREATE, REMOVE, RENAME,
 *      MKDIR, RMDIR, LINK, SETATTR) carries its pre and post attributes.
 *      Taken atomically with the change, their ctimes form one chain: no
 *      two operations report the same pre, each post is the pre of the
 *      next, from the directory's ctime before the run to its ctime after.
 *      A pre taken apart from the change breaks the chain: a client whose
 *      cache matched it would adopt a post that hides another client's
 *      change.
 *   2. Guarded SETATTRs: each round reads the file's ctime, then sends
 *      several SETATTRs guarded by it at once; exactly one gets through,
 *      the others get NOT_SYNC.
 *
 * usage: test-nfs3-wcc JNFSD JNFS
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "jnfsd_proc.h"
#include "nfs3/nfs3_client.h"

#define NCLIENTS     6
#define OPS	     300
#define GUARD_ROUNDS 300
#define GUARD_BURST  8

static struct tc_jnfsd jnfsd;

static void kill_server(void)
{
	if (jnfsd.pid > 0)
		kill(jnfsd.pid, SIGKILL);
}

static uint64_t ns3(const nfstime3 *t)
{
	return (uint64_t)t->seconds * 1000000000ull + t->nseconds;
}

/* What a reply said about the directory: u64[0] pre ctime, u64[1] post
 * ctime, u32[0] pre present, u32[1] post present. */
static void keep_wcc(struct raw *r, const wcc_data *w)
{
	r->u32[0] = w->before.attributes_follow;
	r->u32[1] = w->after.attributes_follow;
	if (w->before.attributes_follow)
		r->u64[0] = ns3(&w->before.pre_op_attr_u.attributes.ctime);
	if (w->after.attributes_follow)
		r->u64[1] = ns3(&w->after.post_op_attr_u.attributes.ctime);
}

static void inspect_create_wcc(struct raw *r, void *res)
{
	CREATE3res *c = res;
	keep_wcc(r, c->status == NFS3_OK ? &c->CREATE3res_u.resok.dir_wcc
					 : &c->CREATE3res_u.resfail.dir_wcc);
}

static void inspect_mkdir_wcc(struct raw *r, void *res)
{
	MKDIR3res *c = res;
	keep_wcc(r, c->status == NFS3_OK ? &c->MKDIR3res_u.resok.dir_wcc
					 : &c->MKDIR3res_u.resfail.dir_wcc);
}

static void inspect_remove_wcc(struct raw *r, void *res)
{
	REMOVE3res *c = res;
	keep_wcc(r, c->status == NFS3_OK ? &c->REMOVE3res_u.resok.dir_wcc
					 : &c->REMOVE3res_u.resfail.dir_wcc);
}

static void inspect_rmdir_wcc(struct raw *r, void *res)
{
	RMDIR3res *c = res;
	keep_wcc(r, c->status == NFS3_OK ? &c->RMDIR3res_u.resok.dir_wcc
					 : &c->RMDIR3res_u.resfail.dir_wcc);
}

/* RENAME within the directory: both wcc_data are about it; keep from,
 * and the to side in u64[2], u64[3]. */
static void inspect_rename_wcc(struct raw *r, void *res)
{
	RENAME3res *c = res;
	RENAME3resok *ok = &c->RENAME3res_u.resok;
	if (c->status != NFS3_OK)
		return;
	keep_wcc(r, &ok->todir_wcc);
	r->u64[2] = r->u64[0];
	r->u64[3] = r->u64[1];
	keep_wcc(r, &ok->fromdir_wcc);
}

static void inspect_link_wcc(struct raw *r, void *res)
{
	LINK3res *c = res;
	keep_wcc(r, c->status == NFS3_OK ? &c->LINK3res_u.resok.linkdir_wcc
					 : &c->LINK3res_u.resfail.linkdir_wcc);
}

static void inspect_setattr_wcc(struct raw *r, void *res)
{
	SETATTR3res *c = res;
	keep_wcc(r, c->status == NFS3_OK ? &c->SETATTR3res_u.resok.obj_wcc
					 : &c->SETATTR3res_u.resfail.obj_wcc);
}

struct pair {
	uint64_t pre, post;
	const char *what; /* the procedure, and who sent it: for the message */
	int client;
	unsigned seq;
};

struct client {
	int id;
	struct nfs_fh3 dir, other; /* the shared directory, a file outside it */
	struct raw keep_dir, keep_other;
	struct pair pairs[2 * OPS];
	unsigned npairs;
};

static void keep_pair(struct client *cl, const struct raw *r, const char *what)
{
	if (r->nfs_status != NFS3_OK) {
		fprintf(stderr, "client %d: %s: status %u\n", cl->id, what, r->nfs_status);
		CHECK(0);
	}
	CHECK(r->u32[0] && r->u32[1]); /* a change: pre and post both */
	cl->pairs[cl->npairs] = (struct pair){r->u64[0], r->u64[1], what, cl->id, cl->npairs};
	cl->npairs++;
}

static void *client_run(void *arg)
{
	struct client *cl = arg;
	struct nfs_context *nfs = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(nfs);
	cl->dir = tn_handle_of(rpc, jnfsd.port[0], "/", "/shared", &cl->keep_dir);
	cl->other = tn_handle_of(rpc, jnfsd.port[0], "/", "/other", &cl->keep_other);
	char names[OPS][32];
	unsigned live = 0, next = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(cl->id + 1);
	for (unsigned i = 0; i < OPS; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		unsigned k = (unsigned)(seed >> 33) % 6;
		if (live == 0)
			k = 0;
		struct raw r = {0};
		char name[32];
		switch (k) {
		case 0: {
			snprintf(names[live], sizeof(names[live]), "c%d-%u", cl->id, next++);
			CREATE3args a = {.where = {cl->dir, names[live]},
					 .how = {.mode = UNCHECKED}};
			r.inspect = inspect_create_wcc;
			RAW(rpc, &r, rpc_nfs3_create_async(rpc, raw_cb, &a, &r));
			keep_pair(cl, &r, "CREATE");
			live++;
			break;
		}
		case 1:
			live--;
			r.inspect = inspect_remove_wcc;
			RAW(rpc, &r,
			    rpc_nfs3_remove_async(rpc, raw_cb,
						  &(REMOVE3args){{cl->dir, names[live]}}, &r));
			keep_pair(cl, &r, "REMOVE");
			break;
		case 2:
			snprintf(name, sizeof(name), "c%d-%u", cl->id, next++);
			r.inspect = inspect_rename_wcc;
			RAW(rpc, &r,
			    rpc_nfs3_rename_async(
				    rpc, raw_cb,
				    &(RENAME3args){{cl->dir, names[live - 1]}, {cl->dir, name}},
				    &r));
			keep_pair(cl, &r, "RENAME");
			CHECK_EQ(r.u64[2], r.u64[0]); /* one directory: one pair */
			CHECK_EQ(r.u64[3], r.u64[1]);
			memcpy(names[live - 1], name, sizeof(name));
			break;
		case 3: {
			snprintf(name, sizeof(name), "d%d-%u", cl->id, next++);
			MKDIR3args a = {.where = {cl->dir, name}};
			r.inspect = inspect_mkdir_wcc;
			RAW(rpc, &r, rpc_nfs3_mkdir_async(rpc, raw_cb, &a, &r));
			keep_pair(cl, &r, "MKDIR");
			r = (struct raw){.inspect = inspect_rmdir_wcc};
			RAW(rpc, &r,
			    rpc_nfs3_rmdir_async(rpc, raw_cb, &(RMDIR3args){{cl->dir, name}}, &r));
			keep_pair(cl, &r, "RMDIR");
			break;
		}
		case 4:
			snprintf(names[live], sizeof(names[live]), "l%d-%u", cl->id, next++);
			r.inspect = inspect_link_wcc;
			RAW(rpc, &r,
			    rpc_nfs3_link_async(rpc, raw_cb,
						&(LINK3args){cl->other, {cl->dir, names[live]}},
						&r));
			keep_pair(cl, &r, "LINK");
			live++;
			break;
		default: {
			SETATTR3args a = {.object = cl->dir};
			a.new_attributes.mode.set_it = 1;
			a.new_attributes.mode.set_mode3_u.mode = i & 1 ? 0777 : 0775;
			r.inspect = inspect_setattr_wcc;
			RAW(rpc, &r, rpc_nfs3_setattr_async(rpc, raw_cb, &a, &r));
			keep_pair(cl, &r, "SETATTR");
			break;
		}
		}
	}
	nfs_destroy_context(nfs);
	return NULL;
}

static uint64_t ctime_of(struct rpc_context *rpc, struct nfs_fh3 fh)
{
	struct raw r = {.inspect = inspect_getattr};
	RAW(rpc, &r, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){fh}, &r));
	CHECK_EQ(r.nfs_status, NFS3_OK);
	return (uint64_t)r.u32[1] * 1000000000ull + r.u32[2];
}

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	return x->pre < y->pre ? -1 : x->pre > y->pre;
}

static void test_chain(void)
{
	struct nfs_context *nfs = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(nfs);
	struct raw keep;
	struct nfs_fh3 dir = tn_handle_of(rpc, jnfsd.port[0], "/", "/shared", &keep);
	uint64_t first = ctime_of(rpc, dir);
	static struct client cl[NCLIENTS];
	pthread_t t[NCLIENTS];
	for (int i = 0; i < NCLIENTS; i++) {
		cl[i].id = i;
		CHECK_OK(pthread_create(&t[i], NULL, client_run, &cl[i]));
	}
	static struct pair all[NCLIENTS * 2 * OPS];
	unsigned n = 0;
	for (int i = 0; i < NCLIENTS; i++) {
		CHECK_OK(pthread_join(t[i], NULL));
		memcpy(all + n, cl[i].pairs, cl[i].npairs * sizeof(all[0]));
		n += cl[i].npairs;
	}
	uint64_t last = ctime_of(rpc, dir);
	nfs_destroy_context(nfs);

	qsort(all, n, sizeof(all[0]), pair_cmp);
	uint64_t at = first;
	for (unsigned i = 0; i < n; i++) {
		if (all[i].pre != at || all[i].post <= all[i].pre) {
			fprintf(stderr,
				"operation %u of %u (%s, client %d's change %u): pre %llu post %llu, "
				"but the directory's ctime was %llu: another change fell between "
				"its pre and post\n",
				i, n, all[i].what, all[i].client, all[i].seq,
				(unsigned long long)all[i].pre, (unsigned long long)all[i].post,
				(unsigned long long)at);
			if (i)
				fprintf(stderr, "  the change before it: %s, client %d's change %u: "
						"pre %llu post %llu\n",
					all[i - 1].what, all[i - 1].client, all[i - 1].seq,
					(unsigned long long)all[i - 1].pre,
					(unsigned long long)all[i - 1].post);
			CHECK(0);
		}
		at = all[i].post;
	}
	CHECK_EQ(at, last);
	printf("%d clients, %u changes of one directory: one chain of pre/post ctimes\n", NCLIENTS,
	       n);
	TEST_PASS("wcc pre/post attributes are atomic with the change");
}

/* ---- the guard ---- */

/*
 * Each round reads the file's ctime, then sends GUARD_BURST SETATTRs
 * guarded by it back to back on one connection, so that jnfsd's workers
 * take them up at the same moment: exactly one may get through.
 */
static void test_guard(void)
{
	struct nfs_context *nfs = tn_mount(jnfsd.port[0], "/", 0, 0);
	struct rpc_context *rpc = nfs_get_rpc_context(nfs);
	struct raw keep;
	struct nfs_fh3 fh = tn_handle_of(rpc, jnfsd.port[0], "/", "/guarded", &keep);
	unsigned twice = 0;
	for (unsigned round = 0; round < GUARD_ROUNDS; round++) {
		struct raw g = {.inspect = inspect_getattr};
		RAW(rpc, &g, rpc_nfs3_getattr_async(rpc, raw_cb, &(GETATTR3args){fh}, &g));
		CHECK_EQ(g.nfs_status, NFS3_OK);
		struct raw r[GUARD_BURST] = {{0}};
		for (unsigned i = 0; i < GUARD_BURST; i++) {
			SETATTR3args a = {.object = fh};
			a.new_attributes.mode.set_it = 1;
			a.new_attributes.mode.set_mode3_u.mode = 0600 | i;
			a.guard.check = 1;
			a.guard.sattrguard3_u.obj_ctime = (nfstime3){g.u32[1], g.u32[2]};
			CHECK_OK(rpc_nfs3_setattr_async(rpc, raw_cb, &a, &r[i]));
		}
		unsigned ok = 0;
		for (unsigned i = 0; i < GUARD_BURST; i++) {
			CHECK_OK(raw_wait(rpc, &r[i]));
			CHECK(r[i].nfs_status == NFS3_OK || r[i].nfs_status == NFS3ERR_NOT_SYNC);
			ok += r[i].nfs_status == NFS3_OK;
		}
		twice += ok > 1;
		if (ok != 1)
			fprintf(stderr,
				"round %u: %u guarded SETATTRs with one ctime got through\n", round,
				ok);
		CHECK(ok > 0);
	}
	nfs_destroy_context(nfs);
	CHECK_EQ(twice, 0);
	TEST_PASS("one guarded SETATTR per ctime gets through");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-nfs3-wcc JNFSD JNFS\n");
		return 2;
	}
	char dir[] = "/tmp/test-nfs3-wcc.XXXXXX", image[64], exports[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(image, sizeof(image), "%s/img", dir);
	snprintf(exports, sizeof(exports), "%s/exports", dir);
	tn_sh("%s mkfs %s --size 256M >/dev/null", argv[2], image);
	tn_sh("%s io %s -c 'mkdir shared' -c 'open other create' -c 'open guarded create' "
	      ">/dev/null",
	      argv[2], image);
	FILE *f = fopen(exports, "w");
	CHECK(f != NULL);
	/* async: the replies do not wait for the journal, so the clients'
	 * changes overlap as much as they can */
	fprintf(f, "/ 127.0.0.1(rw,async,insecure,no_root_squash)\n");
	fclose(f);
	const char *args[] = {"--image",   image, "--exports", exports, "--listen", "127.0.0.1:0",
			      "--rpcbind", "off", "--threads", "8",	NULL};
	tc_jnfsd_start(&jnfsd, argv[1], args);
	atexit(kill_server);

	test_chain();
	test_guard();

	int status = tc_jnfsd_stop(&jnfsd);
	jnfsd.pid = 0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tn_sh("%s check %s >/dev/null", argv[2], image);
	tn_sh("rm -rf %s", dir);
	return 0;
}
