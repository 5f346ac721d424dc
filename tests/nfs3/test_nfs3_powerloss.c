/*
 * test_nfs3_powerloss.c - power loss under NFSv3.
 *
 * jnfsd serves its image through the crash device (--crash): what it has
 * not flushed lives only in its memory, so SIGKILL is a power cut. Four
 * client threads create files, write them with FILE_SYNC and with
 * UNSTABLE + COMMIT, make directories, rename and remove, on a sync export;
 * each records an operation only once its reply said it was stable. At a
 * random moment the server is killed. Then `jnfs check` must find the
 * image clean (after recovery), a new jnfsd must come up, and every
 * recorded operation must be there (those of the life just ended and a
 * sample of older ones after each cut, all of them at the end): files and directories exist,
 * renamed and removed names are gone, and every byte written stably reads back. The write verifier
 * must differ from the previous life's.
 *
 * The server bounds its unflushed data (--flush-behind 8 KiB, so writers
 * wait past 32 KiB: src/dev/dev.h, B1-B3), and every fourth round a
 * worker also writes 96 KiB UNSTABLE to a new file that it never COMMITs,
 * crossing the bound: that data may be lost, but only as the protocol
 * allows: each sector of it reads back as what was written or as zeros
 * (the file's blocks were new), never as anything else, as far as the size
 * that became durable. Flush-behind flushes must have happened.
 *
 * usage: test-nfs3-powerloss JNFSD JNFS [CYCLES [SEED]]
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/compiler.h"
#include "base/rand.h"
#include "check.h"
#include "jnfsd_proc.h"
#include "nfs3/nfs3_client.h"

#define NWORKERS     4
#define CHUNK	     4096
#define UNCOMMITTED  (96u << 10) /* past the bound (FLUSH_BEHIND) */
#define FLUSH_BEHIND "8192"

/* ACK_MAYBE: UNSTABLE data never COMMITted: each sector is the data or zeros */
enum ack_type { ACK_EXISTS, ACK_ABSENT, ACK_DATA, ACK_MAYBE };

struct ack {
	enum ack_type type;
	char path[48];
	uint64_t off;
	uint32_t len;
	uint64_t seed;
};

static struct {
	pthread_mutex_t lock;
	struct ack *v;
	size_t n, cap;
	uint8_t verf[8]; /* this life's write verifier */
	bool have_verf;
} acks = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct tc_jnfsd jnfsd;
static unsigned cycle;

static void kill_server(void)
{
	if (jnfsd.pid > 0)
		kill(jnfsd.pid, SIGKILL);
}

static void ack(enum ack_type type, const char *path, uint64_t off, uint32_t len, uint64_t seed)
{
	pthread_mutex_lock(&acks.lock);
	if (acks.n == acks.cap) {
		acks.cap = acks.cap ? acks.cap * 2 : 1024;
		acks.v = realloc(acks.v, acks.cap * sizeof(*acks.v));
		CHECK(acks.v != NULL);
	}
	struct ack *a = &acks.v[acks.n++];
	a->type = type;
	snprintf(a->path, sizeof(a->path), "%s", path);
	a->off = off;
	a->len = len;
	a->seed = seed;
	pthread_mutex_unlock(&acks.lock);
}

static void pattern(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = splitmix64(&seed);
		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
}

static void note_verf(const uint8_t verf[8])
{
	pthread_mutex_lock(&acks.lock);
	if (!acks.have_verf) {
		memcpy(acks.verf, verf, 8);
		acks.have_verf = true;
	}
	CHECK(memcmp(acks.verf, verf, 8) == 0); /* one verifier per life */
	pthread_mutex_unlock(&acks.lock);
}

/* Until a reply of this life brought its write verifier (20 s at most). */
static void wait_first_verf(void)
{
	for (int i = 0; i < 20000; i++) {
		pthread_mutex_lock(&acks.lock);
		bool have = acks.have_verf;
		pthread_mutex_unlock(&acks.lock);
		if (have)
			return;
		usleep(1000);
	}
}

/* One client: operations until the server is gone. */
struct worker {
	pthread_t thread;
	int id;
	struct nfs_context *nfs;
	struct rpc_context *rpc;
	struct nfs_fh3 dir;
	struct raw keep_dir;
};

static int create(struct worker *w, const char *name, struct raw *r)
{
	CREATE3args a = {.where = {w->dir, (char *)name}, .how = {.mode = UNCHECKED}};
	a.how.createhow3_u.obj_attributes.mode.set_it = 1;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
	r->inspect = inspect_create;
	if (RAW_TRY(w->rpc, r, rpc_nfs3_create_async(w->rpc, raw_cb, &a, r)))
		return -1;
	CHECK_EQ(r->nfs_status, NFS3_OK);
	return 0;
}

static int write_chunk(struct worker *w, struct nfs_fh3 fh, uint64_t off, uint64_t seed,
		       stable_how how, struct raw *r)
{
	uint8_t buf[CHUNK];
	pattern(buf, sizeof(buf), seed);
	WRITE3args a = {.file = fh, .offset = off, .count = CHUNK, .stable = how};
	a.data.data_len = CHUNK;
	a.data.data_val = (char *)buf;
	r->inspect = inspect_write;
	if (RAW_TRY(w->rpc, r, rpc_nfs3_write_async(w->rpc, raw_cb, &a, r)))
		return -1;
	CHECK_EQ(r->nfs_status, NFS3_OK);
	CHECK_EQ(r->u32[0], CHUNK);
	CHECK(r->u32[1] >= (uint32_t)how);
	return 0;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	char path[48], name[40], name2[40];
	for (unsigned i = 0;; i++) {
		struct raw r = {0}, f = {0};
		/* a file, stable once CREATE returned (sync export) */
		snprintf(name, sizeof(name), "c%u-%u", cycle, i);
		if (create(w, name, &f))
			return NULL;
		snprintf(path, sizeof(path), "/w%d/%s", w->id, name);
		ack(ACK_EXISTS, path, 0, 0, 0);
		struct nfs_fh3 fh = f.fh;
		fh.data.data_val = f.fhbuf;
		/* FILE_SYNC data */
		uint64_t seed = ((uint64_t)cycle << 40) | ((uint64_t)w->id << 32) | i << 8;
		if (write_chunk(w, fh, 0, seed, FILE_SYNC, &r))
			return NULL;
		note_verf(r.verf);
		ack(ACK_DATA, path, 0, CHUNK, seed);
		/* UNSTABLE data, then COMMIT */
		if (i % 2) {
			uint8_t verf[8];
			for (int k = 1; k <= 3; k++) {
				if (write_chunk(w, fh, (uint64_t)k * CHUNK, seed + k, UNSTABLE, &r))
					return NULL;
				if (k == 1)
					memcpy(verf, r.verf, 8);
				CHECK(memcmp(verf, r.verf, 8) == 0);
			}
			r.inspect = inspect_commit;
			if (RAW_TRY(w->rpc, &r,
				    rpc_nfs3_commit_async(w->rpc, raw_cb, &(COMMIT3args){fh, 0, 0},
							  &r)))
				return NULL;
			CHECK_EQ(r.nfs_status, NFS3_OK);
			CHECK(memcmp(verf, r.verf, 8) == 0);
			for (int k = 1; k <= 3; k++)
				ack(ACK_DATA, path, (uint64_t)k * CHUNK, CHUNK, seed + k);
		}
		if (i % 4 == 2) {
			/* UNSTABLE past the flush-behind bound, no COMMIT */
			snprintf(name, sizeof(name), "u%u-%u", cycle, i);
			if (create(w, name, &f))
				return NULL;
			snprintf(path, sizeof(path), "/w%d/%s", w->id, name);
			ack(ACK_EXISTS, path, 0, 0, 0);
			struct nfs_fh3 uh = f.fh;
			uh.data.data_val = f.fhbuf;
			for (int k = 0; k < (int)(UNCOMMITTED / CHUNK); k++) {
				if (write_chunk(w, uh, (uint64_t)k * CHUNK, seed + 16 + k, UNSTABLE,
						&r))
					return NULL;
				ack(ACK_MAYBE, path, (uint64_t)k * CHUNK, CHUNK, seed + 16 + k);
			}
		}
		if (i % 4 != 0)
			continue;
		/* MKDIR */
		snprintf(name, sizeof(name), "d%u-%u", cycle, i);
		MKDIR3args md = {.where = {w->dir, name}};
		md.attributes.mode.set_it = 1;
		md.attributes.mode.set_mode3_u.mode = 0755;
		r.inspect = NULL;
		if (RAW_TRY(w->rpc, &r, rpc_nfs3_mkdir_async(w->rpc, raw_cb, &md, &r)))
			return NULL;
		CHECK_EQ(r.nfs_status, NFS3_OK);
		snprintf(path, sizeof(path), "/w%d/%s", w->id, name);
		ack(ACK_EXISTS, path, 0, 0, 0);
		/* RENAME: the old name is gone, the new one is there */
		snprintf(name, sizeof(name), "x%u-%u", cycle, i);
		snprintf(name2, sizeof(name2), "y%u-%u", cycle, i);
		if (create(w, name, &f))
			return NULL;
		r.inspect = NULL;
		if (RAW_TRY(w->rpc, &r,
			    rpc_nfs3_rename_async(w->rpc, raw_cb,
						  &(RENAME3args){{w->dir, name}, {w->dir, name2}},
						  &r)))
			return NULL;
		CHECK_EQ(r.nfs_status, NFS3_OK);
		snprintf(path, sizeof(path), "/w%d/%s", w->id, name);
		ack(ACK_ABSENT, path, 0, 0, 0);
		snprintf(path, sizeof(path), "/w%d/%s", w->id, name2);
		ack(ACK_EXISTS, path, 0, 0, 0);
		/* REMOVE */
		snprintf(name, sizeof(name), "z%u-%u", cycle, i);
		if (create(w, name, &f))
			return NULL;
		if (RAW_TRY(w->rpc, &r,
			    rpc_nfs3_remove_async(w->rpc, raw_cb, &(REMOVE3args){{w->dir, name}},
						  &r)))
			return NULL;
		CHECK_EQ(r.nfs_status, NFS3_OK);
		snprintf(path, sizeof(path), "/w%d/%s", w->id, name);
		ack(ACK_ABSENT, path, 0, 0, 0);
	}
}

/*
 * The acknowledged operations of the life before (from `from` on) and a
 * sample of 500 older ones; all of them when all is set (the last time).
 */
static void verify(size_t from, bool all, struct rng *rng)
{
	struct nfs_context *n = tn_mount(jnfsd.port[0], "/", 0, 0);
	uint8_t want[CHUNK], got[CHUNK];
	size_t data = 0, checked = 0, maybe_kept = 0;
	for (size_t j = 0; j < acks.n; j++) {
		size_t i = j;
		if (!all && j < from) {
			if (j >= 500)
				continue;
			i = rng_below(rng, from);
		}
		const struct ack *a = &acks.v[i];
		checked++;
		struct nfs_stat_64 st;
		int rc = nfs_stat64(n, a->path, &st);
		switch (a->type) {
		case ACK_EXISTS:
			if (rc)
				fprintf(stderr, "cycle %u: %s was created stably, but: %s\n", cycle,
					a->path, nfs_get_error(n));
			CHECK_OK(rc);
			break;
		case ACK_ABSENT:
			if (rc != -ENOENT)
				fprintf(stderr, "cycle %u: %s was removed stably, but is there\n",
					cycle, a->path);
			CHECK_EQ(rc, -ENOENT);
			break;
		case ACK_DATA: {
			struct nfsfh *f;
			CHECK_OK(rc);
			CHECK(st.nfs_size >= a->off + a->len);
			CHECK_OK(nfs_open(n, a->path, O_RDONLY, &f));
			CHECK_EQ(nfs_pread(n, f, a->off, a->len, got), (int)a->len);
			nfs_close(n, f);
			pattern(want, a->len, a->seed);
			if (memcmp(want, got, a->len))
				fprintf(stderr,
					"cycle %u: %s [%llu, +%u) was written stably, but "
					"reads back different\n",
					cycle, a->path, (unsigned long long)a->off, a->len);
			CHECK(memcmp(want, got, a->len) == 0);
			data++;
			break;
		}
		case ACK_MAYBE: {
			struct nfsfh *f;
			CHECK_OK(rc);
			if (st.nfs_size <= a->off)
				break; /* the size that became durable ends before it */
			uint32_t len = (uint32_t)MIN((uint64_t)a->len, st.nfs_size - a->off);
			CHECK_OK(nfs_open(n, a->path, O_RDONLY, &f));
			CHECK_EQ(nfs_pread(n, f, a->off, len, got), (int)len);
			nfs_close(n, f);
			pattern(want, a->len, a->seed);
			static const uint8_t zero[512];
			for (uint32_t s = 0; s < len; s += 512) {
				uint32_t k = MIN(512u, len - s);
				if (memcmp(got + s, want + s, k) && memcmp(got + s, zero, k)) {
					fprintf(stderr,
						"cycle %u: %s at %llu holds neither what was "
						"written UNSTABLE nor zeros\n",
						cycle, a->path, (unsigned long long)(a->off + s));
					CHECK(0);
				}
				maybe_kept += memcmp(got + s, want + s, k) == 0;
			}
			break;
		}
		}
	}
	nfs_destroy_context(n);
	printf("cycle %u: %zu of %zu acknowledged operations verified (%zu data ranges; %zu "
	       "sectors of uncommitted data kept)\n",
	       cycle, checked, acks.n, data, maybe_kept);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test-nfs3-powerloss JNFSD JNFS [CYCLES [SEED]]\n");
		return 2;
	}
	unsigned cycles = argc > 3 ? (unsigned)atoi(argv[3]) : 24;
	uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
	struct rng rng;
	rng_seed(&rng, seed);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	atexit(kill_server);

	char dir[] = "/tmp/test-nfs3-pl.XXXXXX", image[64], exports[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(image, sizeof(image), "%s/img", dir);
	snprintf(exports, sizeof(exports), "%s/exports", dir);
	tn_sh("%s mkfs %s --size 512M >/dev/null", argv[2], image);
	tn_sh("%s io %s -c 'mkdir w0' -c 'mkdir w1' -c 'mkdir w2' -c 'mkdir w3' >/dev/null",
	      argv[2], image);
	FILE *f = fopen(exports, "w");
	CHECK(f != NULL);
	fprintf(f, "/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n");
	fclose(f);
	const char *args[] = {"--image",    image,
			      "--exports",  exports,
			      "--listen",   "127.0.0.1:0",
			      "--rpcbind",  "off",
			      "--threads",  "4",
			      "--crash",    "--flush-latency-us",
			      "200",	    "--flush-behind",
			      FLUSH_BEHIND, NULL};
	uint64_t fb_flushes = 0;

	uint8_t last_verf[8] = {0};
	size_t last_from = 0;
	for (cycle = 1; cycle <= cycles; cycle++) {
		tc_jnfsd_start(&jnfsd, argv[1], args);
		verify(last_from, false, &rng);
		acks.have_verf = false;
		struct worker w[NWORKERS];
		for (int i = 0; i < NWORKERS; i++) {
			char wdir[16];
			memset(&w[i], 0, sizeof(w[i]));
			w[i].id = i;
			w[i].nfs = tn_mount(jnfsd.port[0], "/", 0, 0);
			w[i].rpc = nfs_get_rpc_context(w[i].nfs);
			snprintf(wdir, sizeof(wdir), "/w%d", i);
			w[i].dir = tn_handle_of(w[i].rpc, jnfsd.port[0], "/", wdir, &w[i].keep_dir);
			w[i].dir.data.data_val = w[i].keep_dir.fhbuf;
		}
		size_t before = last_from = acks.n;
		for (int i = 0; i < NWORKERS; i++)
			CHECK_OK(pthread_create(&w[i].thread, NULL, worker_run, &w[i]));
		/* the cut comes at a random moment after the life's first
		 * verifier (a busy machine may take longer than the shortest
		 * moment to bring one) */
		wait_first_verf();
		usleep((useconds_t)(50000 + rng_below(&rng, 600000)));
		fb_flushes += tc_jnfsd_stat(&jnfsd, "dev.flush_behind_flushes");
		CHECK_OK(kill(jnfsd.pid, SIGKILL)); /* power cut */
		tn_abort = 1;
		int status;
		CHECK_EQ(waitpid(jnfsd.pid, &status, 0), jnfsd.pid);
		jnfsd.pid = 0;
		close(jnfsd.out_fd);
		for (int i = 0; i < NWORKERS; i++) {
			CHECK_OK(pthread_join(w[i].thread, NULL));
			nfs_destroy_context(w[i].nfs);
		}
		tn_abort = 0;
		printf("cycle %u: killed after %zu acknowledged operations\n", cycle,
		       acks.n - before);
		CHECK(acks.have_verf);
		CHECK(memcmp(last_verf, acks.verf, 8) != 0); /* a new verifier every start */
		memcpy(last_verf, acks.verf, 8);
		tn_sh("%s check %s >/dev/null", argv[2], image);
	}
	/* the last life, then a clean stop */
	tc_jnfsd_start(&jnfsd, argv[1], args);
	verify(0, true, &rng);
	int status = tc_jnfsd_stop(&jnfsd);
	jnfsd.pid = 0;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	tn_sh("%s check %s", argv[2], image);
	tn_sh("rm -rf %s", dir);
	printf("%llu flush-behind flushes before the cuts\n", (unsigned long long)fb_flushes);
	CHECK(fb_flushes > 0);
	printf("ok %u power cuts, every stable reply kept\n", cycles);
	return 0;
}
