/*
 * fuzz_nfs4.c - NFSv4.1/4.2 COMPOUND decoding and dispatch, the whole
 * server path, in this process: a filesystem on a memory device, the
 * shared server layer with the built-in export, the NFSv4 server, and the
 * RPC service on a loopback port of its own, which the harness's client
 * (src/nfs4c) talks to. Each input is the body of a COMPOUND call
 * (fuzz_nfs4.h: placeholders stand for the session id, the client ID and
 * the slot's next sequence id, the device id); the harness sends it as an
 * RPC record on the client's session and reads the answer. The export is
 * a `pnfs` one, so that the layout operations (LAYOUTGET, LAYOUTCOMMIT
 * with its block layout update, LAYOUTRETURN, GETDEVICEINFO/LIST) run on
 * a real block map.
 *
 * Why through a socket: the server decodes, dispatches, parks replies for
 * stability and caches them in session slots exactly as it does for a
 * real client, so nothing test-only stands in for the RPC layer, and
 * nothing in src/nfs4 exists only for this target.
 *
 * Invariants (FUZZ_CHECK; ASan and UBSan catch the rest):
 *  1. Every call is answered: an accepted reply, SUCCESS or GARBAGE_ARGS
 *     (a COMPOUND whose header does not decode); never SYSTEM_ERR, never
 *     a dropped connection.
 *  2. A COMPOUND reply decodes with the generated decoder, with no byte
 *     left over.
 *  3. The results agree with the status: each result but the last is OK,
 *     and the COMPOUND's status is the last result's (with no result: OK
 *     for an empty compound, MINOR_VERS_MISMATCH otherwise). (Their number
 *     is not compared with the operations sent: a retry on a slot may be
 *     answered with the reply it cached for another compound, RFC 8881
 *     §2.10.6.1.3 leaves false retries undetected.)
 *  4. At exit everything is stopped and freed (the leak check of the
 *     sanitizer builds).
 * The client's session and client ID are kept for the next input; an
 * input that destroys them gets a new one for the next. An input that got
 * a layout gives it back after (LAYOUTRETURN ALL): a layout kept would
 * make every later write to the file wait for its return, so that later
 * inputs would reach only the DELAY answer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/iobuf.h"
#include "base/mem.h"
#include "base/msg.h"
#include "dev/dev.h"
#include "export/exports.h"
#include "fs/fs.h"
#include "fuzz.h"
#include "fuzz_nfs4.h"
#include "nfs4/nfs4.h"
#include "nfs4c/nfs4c.h"
#include "rpc/rpc_msg.h"
#include "rpc/svc.h"
#include "srv/srv.h"

#define MAX_INPUT (1u << 20) /* a call record stays under the server's limit */

static const struct svc_program nfs4_program = {
	.prog = NFS4_PROGRAM, .name = "nfs", .nversions = 1, .versions = &nfs4_version};

static struct {
	bool up;
	struct dev *dev;
	struct fs *fs;
	struct exports *exports;
	struct srv srv;
	struct nfs4_server *nfs4;
	struct svc *svc;
	struct nfs4c_client *cl;
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	uint64_t clientid;
	uint32_t next[FUZZ_NFS4_SLOTS]; /* each slot's next sequence id */
	deviceid4 devid;
} h;

/* "/" as the built-in export, with pnfs */
#define FUZZ_EXPORTS                                                                               \
	"/ 127.0.0.0/8(rw,sync,insecure,no_root_squash,pnfs) "                                     \
	"::1(rw,sync,insecure,no_root_squash,pnfs)\n"

static void teardown(void)
{
	nfs4c_destroy(h.cl);
	svc_stop(h.svc);
	svc_destroy(h.svc);
	nfs4_server_destroy(h.nfs4);
	FUZZ_CHECK(fs_unmount(h.fs) == 0);
	dev_close(h.dev);
	exports_free(h.exports);
	free(h.exports);
}

/* The client's session now; a new session starts every slot at 1. */
static void session_sync(void)
{
	struct nfs4c_info info;
	nfs4c_get_info(h.cl, &info);
	if (memcmp(info.sessionid, h.sessionid, sizeof(h.sessionid)) != 0) {
		memcpy(h.sessionid, info.sessionid, sizeof(h.sessionid));
		for (unsigned i = 0; i < FUZZ_NFS4_SLOTS; i++)
			h.next[i] = 1;
	}
	h.clientid = info.clientid;
}

/* After an input that may have taken the session or the client ID away:
 * a SEQUENCE of the client's own, which recovers them. */
static void session_check(void)
{
	int err = -1;
	for (int i = 0; i < 4 && err; i++)
		err = nfs4c_sequence(h.cl);
	FUZZ_CHECK(err == 0);
	session_sync();
}

static void must(struct nfs4c_compound *c)
{
	FUZZ_CHECK(nfs4c_send(c) == 0 && c->status == NFS4_OK);
	nfs4c_compound_reset(c);
}

/* What the seeds name: directory "d", file "f" with 8 KiB in it, symlink "l". */
static void populate(void)
{
	static uint8_t data[8192];
	struct nfs4c_compound c;
	memset(data, 'x', sizeof(data));
	nfs4c_compound_init(&c, h.cl);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_create(&c, NF4DIR, "d", NULL, NULL, NULL);
	must(&c);
	nfs4c_op_putrootfh(&c);
	nfs4c_op_create(&c, NF4LNK, "l", "d", NULL, NULL);
	must(&c);
	nfs4c_op_putrootfh(&c);
	struct nfs4c_open o = {.owner = "setup",
			       .owner_len = 5,
			       .access = OPEN4_SHARE_ACCESS_BOTH,
			       .claim = CLAIM_NULL,
			       .name = "f",
			       .create = true,
			       .how = UNCHECKED4};
	nfs4c_op_open(&c, &o);
	struct stateid4 current = {.seqid = 1};
	nfs4c_op_write(&c, &current, 0, FILE_SYNC4, data, sizeof(data));
	nfs4c_op_close(&c, &current);
	must(&c);
	/* the one device's id, for the placeholder */
	nfs4c_op_putrootfh(&c);
	static const uint8_t verf[NFS4_VERIFIER_SIZE];
	nfs4c_op_getdevicelist(&c, LAYOUT4_BLOCK_VOLUME, 4, 0, verf);
	FUZZ_CHECK(nfs4c_send(&c) == 0 && c.status == NFS4_OK);
	const struct nfs_resop4 *r = nfs4c_res(&c, OP_GETDEVICELIST, 0);
	FUZZ_CHECK(r && r->opgetdevicelist.gdlr_resok4.gdlr_deviceid_list.len == 1);
	memcpy(h.devid, r->opgetdevicelist.gdlr_resok4.gdlr_deviceid_list.val[0], sizeof(h.devid));
	nfs4c_compound_destroy(&c);
}

/* After an input that got a layout: give back every layout (invariant 3
 * of the results holds for it too). The input may have left the slot's
 * sequence out of step with the client's (the session is checked and
 * synced first), and a layout still going away answers DELAY, which a
 * client meets by coming back. */
static void layouts_return(void)
{
	struct nfs4c_compound c;
	session_check();
	nfs4c_compound_init(&c, h.cl);
	int err = 0;
	for (int i = 0; i < 10; i++) {
		nfs4c_compound_reset(&c);
		nfs4c_op_putrootfh(&c);
		nfs4c_op_layoutreturn(&c, LAYOUT4_BLOCK_VOLUME, LAYOUTIOMODE4_ANY,
				      LAYOUTRETURN4_ALL, 0, UINT64_MAX, NULL);
		err = nfs4c_send(&c);
		if (err || c.status != NFS4ERR_DELAY)
			break;
	}
	if (err || c.status != NFS4_OK)
		fprintf(stderr, "fuzz-nfs4: LAYOUTRETURN ALL: send %d, status %u\n", err,
			(unsigned)c.status);
	FUZZ_CHECK(err == 0 && c.status == NFS4_OK);
	nfs4c_compound_destroy(&c);
}

static void setup(void)
{
	char why[256];
	uint16_t port;
	char addr[64];
	msg_set_level(MSG_ERR);
	FUZZ_CHECK(dev_mem_create(256u << 20, NULL, &h.dev) == 0);
	FUZZ_CHECK(fs_mkfs(&(struct fs_mkfs_opts){.ddev = h.dev, .label = "fuzz-nfs4"}) == 0);
	FUZZ_CHECK(fs_mount(&(struct fs_mount_opts){.ddev = h.dev}, &h.fs) == 0);
	h.exports = xcalloc(1, sizeof(*h.exports));
	FUZZ_CHECK(exports_parse(FUZZ_EXPORTS, "(fuzz)", h.exports, why, sizeof(why)) == 0);
	FUZZ_CHECK(exports_resolve(h.exports, h.fs, "(fuzz)", why, sizeof(why)) == 0);
	srv_init(&h.srv, h.fs, h.exports);
	struct nfs4_server_config nc;
	nfs4_server_config_default(&nc);
	h.nfs4 = nfs4_server_create(&h.srv, &nc);
	FUZZ_CHECK(h.nfs4 != NULL);
	struct svc_config sc;
	svc_config_default(&sc);
	sc.threads = 2;
	h.svc = svc_create(&sc);
	FUZZ_CHECK(svc_add_program(h.svc, &nfs4_program, h.nfs4) == 0);
	FUZZ_CHECK(svc_listen(h.svc, "127.0.0.1:0", &port) == 0);
	FUZZ_CHECK(svc_start(h.svc) == 0);

	struct nfs4c_cfg cfg;
	struct nfs4c_fh root;
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	nfs4c_cfg_default(&cfg);
	cfg.addr = addr;
	cfg.owner = "fuzz-nfs4";
	cfg.cred.uid = cfg.cred.gid = 0;
	cfg.timeout_ms = 10000; /* invariant 1: an answer, soon */
	cfg.reconnect_ms = 10000;
	cfg.no_renew = true; /* no renewal thread using slots behind the inputs' back */
	FUZZ_CHECK(nfs4c_create(&cfg, &h.cl) == 0);
	FUZZ_CHECK(nfs4c_mount(h.cl, &root) == 0);
	populate();
	session_sync();
	h.up = true;
	atexit(teardown);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The placeholders of fuzz_nfs4.h, replaced in body. */
static void patch(uint8_t *body, size_t n)
{
	uint8_t cid[8], real_cid[8];
	put_be64(cid, FUZZ_NFS4_CLIENTID);
	put_be64(real_cid, h.clientid);
	for (size_t i = 0; i + NFS4_SESSIONID_SIZE <= n; i++)
		if (!memcmp(body + i, FUZZ_NFS4_SESSIONID, NFS4_SESSIONID_SIZE))
			memcpy(body + i, h.sessionid, NFS4_SESSIONID_SIZE);
	for (size_t i = 0; i + 8 <= n; i++)
		if (!memcmp(body + i, cid, 8))
			memcpy(body + i, real_cid, 8);
	for (size_t i = 0; i + NFS4_DEVICEID4_SIZE <= n; i++)
		if (!memcmp(body + i, FUZZ_NFS4_DEVICEID, NFS4_DEVICEID4_SIZE))
			memcpy(body + i, h.devid, NFS4_DEVICEID4_SIZE);
	/* tag, minor version, count, then SEQUENCE: session id, sequence id,
	 * slot id */
	if (n < 4)
		return;
	uint64_t at = 4 + ((uint64_t)get_be32(body) + 3) / 4 * 4 + 8;
	if (at + 4 + 16 + 8 > n || get_be32(body + at) != OP_SEQUENCE)
		return;
	uint8_t *seq = body + at + 4 + 16, *slot = seq + 4;
	if (get_be32(seq) == 0 && get_be32(slot) < FUZZ_NFS4_SLOTS && get_be32(slot) > 0)
		put_be32(seq, h.next[get_be32(slot)]);
}

/* Invariants 2 and 3 on a COMPOUND reply; true when the client's session
 * or client ID may be gone; *layout when a LAYOUTGET succeeded. */
static bool check_compound(const uint8_t *res, size_t len, bool *layout)
{
	struct xdr_dec d;
	struct xdr_arena arena;
	struct COMPOUND4res r;
	bool check_session = false;
	memset(&r, 0, sizeof(r));
	xdr_arena_init(&arena, NULL, 0, 64u << 20);
	xdr_dec_init(&d, res, len);
	d.arena = &arena;
	FUZZ_CHECK(nfs4_dec_COMPOUND4res(&d, &r) == 0);
	FUZZ_CHECK(xdr_dec_remaining(&d) == 0);
	uint32_t n = r.resarray.len;
	if (n == 0)
		FUZZ_CHECK(r.status == NFS4_OK || r.status == NFS4ERR_MINOR_VERS_MISMATCH);
	for (uint32_t i = 0; i < n; i++) {
		const struct nfs_resop4 *op = &r.resarray.val[i];
		nfsstat4 st = nfs_resop4_status(op);
		FUZZ_CHECK(i + 1 == n ? st == r.status : st == NFS4_OK);
		if (st == NFS4_OK && op->resop == OP_LAYOUTGET)
			*layout = true;
		if (st == NFS4_OK &&
		    (op->resop == OP_DESTROY_SESSION || op->resop == OP_DESTROY_CLIENTID ||
		     op->resop == OP_EXCHANGE_ID))
			check_session = true;
	}
	if (n && r.resarray.val[0].resop == OP_SEQUENCE) {
		const struct SEQUENCE4res *s = &r.resarray.val[0].opsequence;
		if (s->sr_status == NFS4_OK && s->sr_resok4.sr_slotid < FUZZ_NFS4_SLOTS &&
		    !memcmp(s->sr_resok4.sr_sessionid, h.sessionid, NFS4_SESSIONID_SIZE))
			h.next[s->sr_resok4.sr_slotid] = s->sr_resok4.sr_sequenceid + 1;
		if (s->sr_status == NFS4ERR_BADSESSION)
			check_session = true;
	}
	xdr_arena_reset(&arena);
	return check_session;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_INPUT)
		return 0;
	if (!h.up)
		setup();
	struct xdr_enc x;
	struct rpc_cred cred = {.flavor = RPC_AUTH_SYS};
	uint32_t xid = nfs4c_next_xid();
	xdr_enc_init(&x, 4096);
	FUZZ_CHECK(rpc_enc_call_hdr(&x, xid, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, &cred) == 0);
	size_t hdr = xdr_enc_len(&x), len = hdr + size;
	uint8_t *rec = xmalloc(len ? len : 1);
	xdr_enc_flatten(&x, rec);
	xdr_enc_destroy(&x);
	memcpy(rec + hdr, data, size);
	patch(rec + hdr, size);

	uint8_t *reply = NULL;
	size_t rlen = 0;
	int err = nfs4c_call_raw(h.cl, NULL, rec, len, xid, &reply, &rlen);
	FUZZ_CHECK(err == 0);

	struct xdr_dec d;
	struct rpc_reply_hdr rh;
	xdr_dec_init(&d, reply, rlen);
	FUZZ_CHECK(rpc_dec_reply_hdr(&d, &rh) == 0);
	FUZZ_CHECK(rh.reply_stat == RPC_MSG_ACCEPTED);
	FUZZ_CHECK(rh.stat == RPC_SUCCESS || rh.stat == RPC_GARBAGE_ARGS);
	bool check = false, layout = false;
	if (rh.stat == RPC_SUCCESS)
		check = check_compound(reply + (rlen - xdr_dec_remaining(&d)),
				       xdr_dec_remaining(&d), &layout);
	iobuf_free(reply);
	free(rec);
	if (check)
		session_check();
	if (layout)
		layouts_return();
	return 0;
}
