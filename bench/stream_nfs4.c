/*
 * stream_nfs4.c - stream-bench's NFSv4.1 streams, on the project's client
 * (src/nfs4c; bench/stream.c says what they do). Each stream is one thread
 * with its own client ID, session and connection; its timed WRITE or READ
 * compounds (SEQUENCE PUTFH WRITE|READ) are started D at a time and waited
 * for oldest first, each answered one making room for the next.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfs4c/nfs4c.h"
#include "bench_util.h"
#include "stream.h"

struct s4 {
	unsigned k;
	struct nfs4c_client *cl;
	struct nfs4c_fh root, file;
	struct stateid4 sid;
	char owner[48];
	uint8_t verf[NFS4_VERIFIER_SIZE];
	bool verf_set;
	uint64_t resent; /* calls sent again after RETRY_UNCACHED_REP */
	struct nfs4c_compound c[STREAM_MAX_DEPTH];
};

/* Send c; a transport error or a status other than OK ends the run. */
static void send_checked(struct s4 *s, struct nfs4c_compound *c, const char *what)
{
	int err = nfs4c_send(c);
	if (err)
		die("stream %u: %s: %s", s->k, what, strerror(-err));
	if (c->status != NFS4_OK)
		die("stream %u: %s: NFS4 status %d", s->k, what, (int)c->status);
}

void *nfs4_stream_setup(unsigned k)
{
	struct s4 *s = calloc(1, sizeof(*s));
	struct nfs4c_cfg cfg;
	struct nfs4c_compound c;
	struct nfs4c_fh dir;
	char addr[160], owner[96], name[160];
	if (!s)
		die("out of memory");
	s->k = k;
	nfs4c_cfg_default(&cfg);
	snprintf(addr, sizeof(addr), "%s:%u", so.addr, so.port);
	snprintf(owner, sizeof(owner), "stream-bench/%d/%u", (int)getpid(), k);
	cfg.addr = addr;
	cfg.owner = owner;
	cfg.minorversion = 1;
	cfg.cred.uid = cfg.cred.gid = 0;
	int err = nfs4c_create(&cfg, &s->cl);
	if (err)
		die("stream %u: connect to %s: %s", k, addr, strerror(-err));
	err = nfs4c_mount(s->cl, &s->root);
	if (err)
		die("stream %u: mount: %s", k,
		    err < 0 ? strerror(-err) : "the server refused (NFS4 status)");

	/* D compounds in flight need D slots (nfs4c_start waits for a free
	 * one, and this thread would then wait for itself) */
	struct nfs4c_info info;
	nfs4c_get_info(s->cl, &info);
	if (info.fore_slots < so.depth)
		die("stream %u: the server granted %u session slots, fewer than --depth %u", k,
		    info.fore_slots, so.depth);

	/* the export, then its directory (made when missing) */
	nfs4c_compound_init(&c, s->cl);
	nfs4c_op_putfh(&c, &s->root);
	nfs4c_op_lookup_path(&c, so.export);
	nfs4c_op_lookup(&c, so.dir);
	nfs4c_op_getfh(&c);
	err = nfs4c_send(&c);
	if (err)
		die("stream %u: LOOKUP: %s", k, strerror(-err));
	if (c.status == NFS4ERR_NOENT && !so.read) {
		nfs4c_compound_reset(&c);
		nfs4c_op_putfh(&c, &s->root);
		nfs4c_op_lookup_path(&c, so.export);
		struct nfs4c_sattr sa = {.set = NFS4C_SA_MODE, .mode = 0755};
		nfs4c_op_create(&c, NF4DIR, so.dir, NULL, NULL, &sa);
		nfs4c_op_getfh(&c);
		send_checked(s, &c, "CREATE (directory)");
	} else if (c.status != NFS4_OK) {
		die("stream %u: LOOKUP %s/%s: NFS4 status %d", k, so.export, so.dir, (int)c.status);
	}
	if (nfs4c_res_fh(&c, &dir))
		die("stream %u: no handle of %s", k, so.dir);
	nfs4c_compound_destroy(&c);

	/* OPEN the file (created for a write when missing, never truncated) */
	snprintf(name, sizeof(name), "%s-f%u", so.prefix, k);
	snprintf(s->owner, sizeof(s->owner), "stream-open-%u", k);
	nfs4c_compound_init(&c, s->cl);
	nfs4c_op_putfh(&c, &dir);
	struct nfs4c_open op = {.owner = s->owner,
				.owner_len = (uint32_t)strlen(s->owner),
				.access =
					so.read ? OPEN4_SHARE_ACCESS_READ : OPEN4_SHARE_ACCESS_BOTH,
				.deny = OPEN4_SHARE_DENY_NONE,
				.claim = CLAIM_NULL,
				.name = name,
				.create = !so.read,
				.how = UNCHECKED4,
				.attrs = {.set = NFS4C_SA_MODE, .mode = 0644}};
	nfs4c_op_open(&c, &op);
	nfs4c_op_getfh(&c);
	send_checked(s, &c, "OPEN");
	if (nfs4c_res_fh(&c, &s->file))
		die("stream %u: OPEN returned no handle", k);
	s->sid = nfs4c_res(&c, OP_OPEN, 0)->opopen.resok4.stateid;
	nfs4c_compound_destroy(&c);
	return s;
}

static void start_one(struct s4 *s, struct nfs4c_compound *c, uint64_t off)
{
	nfs4c_compound_init(c, s->cl);
	nfs4c_op_putfh(c, &s->file);
	if (so.read)
		nfs4c_op_read(c, &s->sid, off, so.io);
	else
		nfs4c_op_write(c, &s->sid, off, so.filesync ? FILE_SYNC4 : UNSTABLE4,
			       stream_data_at(off), so.io);
	int err = nfs4c_start(c);
	if (err)
		die("stream %u: %s: %s", s->k, so.read ? "READ" : "WRITE", strerror(-err));
}

static void finish_one(struct s4 *s, struct nfs4c_compound *c, uint64_t off)
{
	const char *what = so.read ? "READ" : "WRITE";
	int err = nfs4c_wait(c);
	/* a call sent again on its slot after a reconnect, whose reply the
	 * server did not keep (a READ's or WRITE's is too big to): the same
	 * call as a new request, counted (RFC 8881 2.10.6.1.3) */
	for (unsigned n = 0; !err && c->status == NFS4ERR_RETRY_UNCACHED_REP && n < 3; n++) {
		s->resent++;
		nfs4c_compound_destroy(c);
		start_one(s, c, off);
		err = nfs4c_wait(c);
	}
	if (err)
		die("stream %u: %s: %s", s->k, what, strerror(-err));
	if (c->status != NFS4_OK)
		die("stream %u: %s: NFS4 status %d", s->k, what, (int)c->status);
	if (so.read) {
		const struct READ4resok *ok = &nfs4c_res(c, OP_READ, 0)->opread.resok4;
		if (ok->data.len != so.io)
			die("stream %u: short READ (%u of %u): is the file %" PRIu64 " bytes long?",
			    s->k, ok->data.len, so.io, so.bytes);
		if (memcmp(ok->data.val, stream_data_at(off), so.io))
			die("stream %u: READ at %" PRIu64
			    " returned other data than stream-bench writes",
			    s->k, off);
	} else {
		const struct WRITE4resok *ok = &nfs4c_res(c, OP_WRITE, 0)->opwrite.resok4;
		if (ok->count != so.io)
			die("stream %u: short WRITE (%u of %u)", s->k, ok->count, so.io);
		if (so.filesync && ok->committed != FILE_SYNC4)
			die("stream %u: FILE_SYNC WRITE answered as %d", s->k, (int)ok->committed);
		if (s->verf_set && memcmp(s->verf, ok->writeverf, sizeof(s->verf)))
			die("stream %u: WRITE verifier changed (server restarted?)", s->k);
		memcpy(s->verf, ok->writeverf, sizeof(s->verf));
		s->verf_set = true;
	}
	nfs4c_compound_destroy(c);
}

void *nfs4_stream_run(void *arg)
{
	struct s4 *s = arg;
	uint64_t n = so.bytes / so.io;
	stream_wait_start();
	/* call i uses ring entry i % depth: started D ahead, waited in order */
	for (uint64_t i = 0; i < n; i++) {
		if (i >= so.depth)
			finish_one(s, &s->c[(i - so.depth) % so.depth], (i - so.depth) * so.io);
		start_one(s, &s->c[i % so.depth], i * so.io);
	}
	for (uint64_t i = n > so.depth ? n - so.depth : 0; i < n; i++)
		finish_one(s, &s->c[i % so.depth], i * so.io);
	if (!so.read && !so.filesync) {
		struct nfs4c_compound c;
		nfs4c_compound_init(&c, s->cl);
		nfs4c_op_putfh(&c, &s->file);
		nfs4c_op_commit(&c, 0, 0);
		send_checked(s, &c, "COMMIT");
		if (memcmp(nfs4c_res(&c, OP_COMMIT, 0)->opcommit.resok4.writeverf, s->verf,
			   sizeof(s->verf)))
			die("stream %u: COMMIT verifier differs from the WRITEs'", s->k);
		nfs4c_compound_destroy(&c);
	}
	return NULL;
}

void nfs4_stream_teardown(void *arg)
{
	struct s4 *s = arg;
	struct nfs4c_compound c;
	nfs4c_compound_init(&c, s->cl);
	nfs4c_op_putfh(&c, &s->file);
	nfs4c_op_close(&c, &s->sid);
	send_checked(s, &c, "CLOSE");
	nfs4c_compound_destroy(&c);
	struct nfs4c_info info;
	nfs4c_get_info(s->cl, &info);
	if (info.reconnects || s->resent)
		fprintf(stderr,
			"stream-bench: stream %u: %" PRIu64 " reconnects, %" PRIu64
			" calls sent again after RETRY_UNCACHED_REP\n",
			s->k, info.reconnects, s->resent);
	nfs4c_unmount(s->cl);
	nfs4c_destroy(s->cl);
	free(s);
}
