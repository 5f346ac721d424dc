/*
 * nfs4_untar.c - unpack a source tree over NFSv4.1 the way tar does, with
 * the project's own client (src/nfs4c), and count what making it stable
 * costs the server.
 *
 *   nfs4-untar --port P [--addr A] [--export PATH] [--files N]
 *              [--clients C] [--mode filesync|unstable] [--per-dir F]
 *              [--fanout B] [--wsize W] [--seed S] [--label L]
 *              [--jnfsd-stats] [--xfs-dev DEV] [--disk DEV] [--csv]
 *
 * The workload is nfs3-untar's (bench/nfs3_untar.c), in NFSv4.1 terms. C
 * clients, each a thread with its own connection, client ID and session,
 * create N files between them (N/C each) in a fresh directory under the
 * export (PATH from the pseudo-root, LOOKUP by LOOKUP; "/" for jnfsd's
 * built-in export). Client k unpacks its own tree "cK": directory 0 is cK
 * itself, directory d > 0 is "dD" inside directory (d - 1) / B, and file i
 * ("fI") goes into directory i / F; a directory is made just before its
 * first file, as tar meets it in the archive. Per file, one compound at a
 * time, as a kernel client does it:
 *
 *   SEQUENCE PUTFH(dir) OPEN(create GUARDED, mode 0644) GETFH
 *   SEQUENCE PUTFH(file) WRITE        one per W bytes, all in flight at once
 *   SEQUENCE PUTFH(file) COMMIT       --mode unstable only (verifier checked)
 *   SEQUENCE PUTFH(file) CLOSE
 *
 * and per directory SEQUENCE PUTFH(parent) CREATE(NF4DIR, 0755) GETFH.
 * --mode filesync makes every WRITE FILE_SYNC; unstable makes them
 * UNSTABLE and commits the file after its last WRITE. Sizes are drawn per
 * file from a fixed seed (the same as nfs3-untar: 5% 64 B-1 KiB, 85%
 * 1-16 KiB, 10% 16-64 KiB). Every reply is checked; an error stops the
 * run with a message.
 *
 * The timed phase runs from when every client is connected and mounted to
 * the last client's last reply. Counters are read just before and after
 * it, as nfs3-untar does (untar_counters.h). Output: "name value" lines
 * (untar.*), and with --csv one header and one row: label,mode,clients,
 * files,dirs,bytes,seconds,files_per_sec,log_writes,log_writes_per_file,
 * flushes,flushes_per_file. Latencies (untar.lat_us.*) are means per
 * compound; for WRITE, from the first WRITE of a file to its last reply.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/time.h"
#include "nfs4c/nfs4c.h"
#include "bench_util.h"
#include "untar_common.h"

#define MAX_WRITES  32 /* WRITE compounds of one file in flight (64 KiB / wsize) */

enum step { ST_MKDIR, ST_OPEN, ST_WRITE, ST_COMMIT, ST_CLOSE, ST_N };
static const char *const step_name[ST_N] = {"mkdir", "open", "write", "commit", "close"};


struct client {
	pthread_t thread;
	unsigned id;
	struct nfs4c_client *cl;
	struct nfs4c_fh root;
	uint32_t nfiles;
	struct nfs4c_fh *dirs; /* dirs[d] once directory d is made */
	uint32_t ndirs;
	char open_owner[32];
	/* results, summed by main after the join */
	uint64_t step_count[ST_N], step_ns[ST_N], bytes, dirs_made;
};

static struct untar_opts o;
static struct nfs4c_fh run_dir;
static char data[UNTAR_MAX_WSIZE];
static pthread_barrier_t start_barrier;

/* Send c; a transport error or an NFS status other than OK ends the run. */
static void send_checked(struct client *k, struct nfs4c_compound *c, const char *what)
{
	int err = nfs4c_send(c);
	if (err)
		die("client %u: %s: %s", k->id, what, strerror(-err));
	if (c->status != NFS4_OK)
		die("client %u: %s: NFS4 status %d", k->id, what, (int)c->status);
}

static void step_done(struct client *k, enum step st, uint64_t t0)
{
	k->step_count[st]++;
	k->step_ns[st] += now_ns() - t0;
}

/* CREATE(NF4DIR) name in parent; the new directory's handle in *fh. */
static void make_dir(struct client *k, const struct nfs4c_fh *parent, const char *name,
		     struct nfs4c_fh *fh, bool timed)
{
	struct nfs4c_compound c;
	struct nfs4c_sattr sa = {.set = NFS4C_SA_MODE, .mode = 0755};
	uint64_t t0 = now_ns();
	nfs4c_compound_init(&c, k->cl);
	nfs4c_op_putfh(&c, parent);
	nfs4c_op_create(&c, NF4DIR, name, NULL, NULL, &sa);
	nfs4c_op_getfh(&c);
	send_checked(k, &c, "CREATE (directory)");
	if (nfs4c_res_fh(&c, fh))
		die("client %u: CREATE returned no handle", k->id);
	nfs4c_compound_destroy(&c);
	if (timed) {
		step_done(k, ST_MKDIR, t0);
		k->dirs_made++;
	}
}

static void one_file(struct client *k, uint32_t i)
{
	struct nfs4c_compound c, w[MAX_WRITES];
	struct nfs4c_fh fh;
	char name[32];
	uint8_t verf[NFS4_VERIFIER_SIZE];
	uint32_t d = i / o.per_dir;

	if (d >= k->ndirs) {
		if (d == 0) {
			snprintf(name, sizeof(name), "c%u", k->id);
			make_dir(k, &run_dir, name, &k->dirs[0], true);
		} else {
			snprintf(name, sizeof(name), "d%u", d);
			make_dir(k, &k->dirs[(d - 1) / o.fanout], name, &k->dirs[d], true);
		}
		k->ndirs = d + 1;
	}

	/* OPEN(create) + GETFH */
	uint64_t t0 = now_ns();
	snprintf(name, sizeof(name), "f%u", i);
	nfs4c_compound_init(&c, k->cl);
	nfs4c_op_putfh(&c, &k->dirs[d]);
	struct nfs4c_open op = {.owner = k->open_owner,
				.owner_len = (uint32_t)strlen(k->open_owner),
				.access = OPEN4_SHARE_ACCESS_WRITE,
				.deny = OPEN4_SHARE_DENY_NONE,
				.claim = CLAIM_NULL,
				.name = name,
				.create = true,
				.how = GUARDED4,
				.attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	nfs4c_op_open(&c, &op);
	nfs4c_op_getfh(&c);
	send_checked(k, &c, "OPEN");
	if (nfs4c_res_fh(&c, &fh))
		die("client %u: OPEN returned no handle", k->id);
	struct stateid4 sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	step_done(k, ST_OPEN, t0);

	/* the WRITEs, all in flight together */
	uint32_t size = untar_file_size(&o, k->id, i), nw = 0;
	t0 = now_ns();
	for (uint32_t off = 0; off < size; off += o.wsize) {
		uint32_t n = size - off < o.wsize ? size - off : o.wsize;
		nfs4c_compound_init(&w[nw], k->cl);
		nfs4c_op_putfh(&w[nw], &fh);
		nfs4c_op_write(&w[nw], &sid, off, o.unstable ? UNSTABLE4 : FILE_SYNC4,
			       data + ((uint64_t)i * 4096u + off) % (UNTAR_MAX_WSIZE - o.wsize), n);
		int err = nfs4c_start(&w[nw]);
		if (err)
			die("client %u: WRITE: %s", k->id, strerror(-err));
		nw++;
	}
	for (uint32_t j = 0; j < nw; j++) {
		int err = nfs4c_wait(&w[j]);
		if (err)
			die("client %u: WRITE: %s", k->id, strerror(-err));
		if (w[j].status != NFS4_OK)
			die("client %u: WRITE: NFS4 status %d", k->id, (int)w[j].status);
		const struct WRITE4resok *ok = &nfs4c_res(&w[j], OP_WRITE, 0)->opwrite.resok4;
		if (ok->count != w[j].ops[1].opwrite.data.len)
			die("client %u: short WRITE (%u of %u)", k->id, ok->count,
			    w[j].ops[1].opwrite.data.len);
		if (!o.unstable && ok->committed != FILE_SYNC4)
			die("client %u: FILE_SYNC WRITE answered as %d", k->id, (int)ok->committed);
		if (j && memcmp(verf, ok->writeverf, sizeof(verf)))
			die("client %u: WRITE verifier changed (server restarted?)", k->id);
		memcpy(verf, ok->writeverf, sizeof(verf));
		nfs4c_compound_destroy(&w[j]);
	}
	step_done(k, ST_WRITE, t0);
	k->bytes += size;

	if (o.unstable) {
		t0 = now_ns();
		nfs4c_compound_reset(&c);
		nfs4c_op_putfh(&c, &fh);
		nfs4c_op_commit(&c, 0, 0);
		send_checked(k, &c, "COMMIT");
		if (memcmp(nfs4c_res(&c, OP_COMMIT, 0)->opcommit.resok4.writeverf, verf, 8))
			die("client %u: COMMIT verifier differs from the WRITEs'", k->id);
		step_done(k, ST_COMMIT, t0);
	}

	t0 = now_ns();
	nfs4c_compound_reset(&c);
	nfs4c_op_putfh(&c, &fh);
	nfs4c_op_close(&c, &sid);
	send_checked(k, &c, "CLOSE");
	step_done(k, ST_CLOSE, t0);
	nfs4c_compound_destroy(&c);
}

static void *client_main(void *arg)
{
	struct client *k = arg;
	pthread_barrier_wait(&start_barrier);
	for (uint32_t i = 0; i < k->nfiles; i++)
		one_file(k, i);
	return NULL;
}

/* Connect and mount client k (not timed). */
static void client_setup(struct client *k)
{
	struct nfs4c_cfg cfg;
	char addr[160], owner[96];
	nfs4c_cfg_default(&cfg);
	snprintf(addr, sizeof(addr), "%s:%u", o.addr, o.port);
	snprintf(owner, sizeof(owner), "nfs4-untar/%d/%u", (int)getpid(), k->id);
	cfg.addr = addr;
	cfg.owner = owner;
	cfg.cred.uid = cfg.cred.gid = 0;
	int err = nfs4c_create(&cfg, &k->cl);
	if (err)
		die("client %u: connect to %s: %s", k->id, addr, strerror(-err));
	err = nfs4c_mount(k->cl, &k->root);
	if (err)
		die("client %u: mount: %s", k->id,
		    err < 0 ? strerror(-err) : "the server refused (NFS4 status)");
	snprintf(k->open_owner, sizeof(k->open_owner), "untar-open-%u", k->id);
}

/* The run's directory, by client 0: LOOKUP the export, then CREATE. */
static void make_run_dir(struct client *k)
{
	struct nfs4c_compound c;
	struct nfs4c_fh exp;
	char name[96];
	struct timespec ts;
	nfs4c_compound_init(&c, k->cl);
	nfs4c_op_putfh(&c, &k->root);
	nfs4c_op_lookup_path(&c, o.export);
	nfs4c_op_getfh(&c);
	send_checked(k, &c, "LOOKUP of the export");
	if (nfs4c_res_fh(&c, &exp))
		die("LOOKUP %s returned no handle", o.export);
	nfs4c_compound_destroy(&c);
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "untar4-%s-%ld-%ld.%09ld", o.label, (long)getpid(),
		 (long)ts.tv_sec, ts.tv_nsec);
	make_dir(k, &exp, name, &run_dir, false);
}

static const char usage[] =
	"usage: nfs4-untar --port P [--addr A] [--export PATH] [--files N]\n"
	"                  [--clients C] [--mode filesync|unstable] [--per-dir F]\n"
	"                  [--fanout B] [--wsize W] [--seed S] [--label L]\n"
	"                  [--jnfsd-stats] [--xfs-dev DEV] [--disk DEV] [--csv]\n";

int main(int argc, char **argv)
{
	/* a file is at most 64 KiB: at most 64 KiB / wsize WRITEs in flight */
	untar_parse_opts(argc, argv, &o, false, 2048, usage);
	untar_fill(data, sizeof(data));

	struct client *cl = calloc(o.clients, sizeof(*cl));
	if (!cl)
		die("out of memory");
	for (unsigned k = 0; k < o.clients; k++) {
		struct client *c = &cl[k];
		c->id = k;
		c->nfiles = untar_client_files(&o, k);
		c->dirs = calloc((c->nfiles + o.per_dir - 1) / o.per_dir, sizeof(*c->dirs));
		if (!c->dirs)
			die("out of memory");
		client_setup(c);
	}
	make_run_dir(&cl[0]);

	struct untar_sample s0, s1;
	untar_sample(&o, &s0);

	/* every client connected and mounted: the timed phase */
	pthread_barrier_init(&start_barrier, NULL, o.clients + 1);
	for (unsigned k = 0; k < o.clients; k++)
		if (pthread_create(&cl[k].thread, NULL, client_main, &cl[k]))
			die("cannot start a thread");
	pthread_barrier_wait(&start_barrier);
	uint64_t t0 = now_ns();
	for (unsigned k = 0; k < o.clients; k++)
		pthread_join(cl[k].thread, NULL);
	uint64_t t1 = now_ns();

	untar_sample(&o, &s1);
	uint64_t step_count[ST_N] = {0}, step_ns[ST_N] = {0}, bytes = 0, dirs = 0;
	for (unsigned k = 0; k < o.clients; k++) {
		for (int i = 0; i < ST_N; i++) {
			step_count[i] += cl[k].step_count[i];
			step_ns[i] += cl[k].step_ns[i];
		}
		bytes += cl[k].bytes;
		dirs += cl[k].dirs_made;
		nfs4c_unmount(cl[k].cl);
		nfs4c_destroy(cl[k].cl);
		free(cl[k].dirs);
	}
	free(cl);

	struct untar_result r = {.protocol = "nfs4.1",
				 .seconds = (double)(t1 - t0) / 1e9,
				 .dirs = dirs,
				 .bytes = bytes,
				 .nsteps = ST_N,
				 .step_name = step_name,
				 .step_count = step_count,
				 .step_ns = step_ns};
	untar_report(&o, &r, &s0, &s1);
	return 0;
}
