/*
 * nfs4_priv.h - what the NFSv4.1/4.2 server's source files share: the
 * server, one COMPOUND being served, the current and saved filehandles,
 * and the operation table's row type.
 *
 * Lock order (ranks: base/lock_classes.h, docs/locking.md). The server has
 * four lock classes of its own, all ranked above the engine, so none is
 * held across an engine call: the back-channel connections (nfs4.conns,
 * 530, cb.c), the layout table (nfs4.layouts, 535, layout.c), the open
 * table's buckets (nfs4.opens, 540, op_open.c) and the lock-state table's
 * buckets (nfs4.locks, 545, op_lock.c). The last three are taken before
 * the state core's locks (a new stateid takes 610-630 under them) and
 * never with a stateid's lock held. The state core (state/client.h) ranks
 * above the engine too, but for its registry (nfs4.registry, 80): the
 * operations that change the set of clients (EXCHANGE_ID, CREATE_SESSION,
 * DESTROY_CLIENTID, RECLAIM_COMPLETE, the reaper) hold it while the engine
 * writes their durable records, so it ranks below the whole engine. A
 * stateid's lock (nfs4.stid, 550) is held by OPEN, OPEN_DOWNGRADE, CLOSE,
 * LOCK, LOCKU, LAYOUTGET, LAYOUTRETURN and a layout recall, across the
 * byte-range lock and share tables (570-580), never across the engine.
 */
#ifndef JNFS_NFS4_NFS4_PRIV_H
#define JNFS_NFS4_NFS4_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <pthread.h>

#include "base/stats.h"
#include "nfs4/attr.h"
#include "nfs4/nfs4.h"
#include "nfs4/state/brlock.h"
#include "nfs4/state/client.h"
#include "nfs4/state/session.h"
#include "nfs4/state/share.h"
#include "nfs4/state/stateid.h"
#include "nfs4/stid.h"
#include "rpc/svc.h"
#include "srv/srv.h"
#include "xdr/nfs4.h"

/* Operations decoded in one compound (sessions get at most this as
 * maxoperations), and the largest request and reply a session allows:
 * a READ or WRITE of NFS4_MAXIO plus its compound. */
#define NFS4_MAX_OPS	 128
#define NFS4_MAXIO	 (1u << 20)
#define NFS4_MAX_REQUEST (NFS4_MAXIO + (64u << 10))
#define NFS4_MAX_REPLY	 (NFS4_MAXIO + (64u << 10))
/* The fsid of the pseudo filesystem's handles (no export may have it). */
#define NFS4_PSEUDO_FSID 0xffffffffu

/* ---- the server ---- */

struct nfs4_pseudo;

struct nfs4_op_stats {
	counter_t calls, errors;
	struct stat_lat lat;
};

struct nfs4_lock_table;
struct nfs4_conn_table;
struct nfs4_layout_table;

struct nfs4_server {
	struct srv *srv;
	struct nfs4_state *state;
	/* Built from the exports table; replaced with it (nfs4_exports_changed):
	 * a compound loads it once (c->pseudo) and keeps it until it ends. */
	struct nfs4_pseudo *_Atomic pseudo;
	struct share_table *shares;
	struct brl_table *brl;
	struct nfs4_pltable *opens;	   /* op_open.c */
	uint8_t owner_key[16];		   /* nfs4_owner_key's (op_open.c) */
	struct nfs4_lock_table *locks;	   /* op_lock.c */
	struct nfs4_conn_table *conns;	   /* cb.c */
	struct nfs4_layout_table *layouts; /* layout.c */
	uint8_t deviceid[16];		   /* the pNFS block device's id (layout.c) */
	char *fence_cmd;		   /* run for a client that kept a recalled layout */
	uint32_t lease_s;
	uint64_t start_sec; /* the pseudo filesystem's times */
	_Atomic bool pnfs; /* some export offers pNFS, now or since the start: EXCHANGE_ID says
			    * USE_PNFS_MDS (nfs4_exports_changed turns it on, never off) */
	struct nfs4_op_stats ops[OP_CLONE + 1];
	struct {
		counter_t compounds, replays, too_many_ops, minor_mismatch;
		counter_t cb_calls, cb_replies, cb_delays, cb_resyncs, cb_failures;
		counter_t layoutgets, layoutcommits, layoutreturns;
		counter_t recalls_sent, recalls_resent, recalls_answered, recalls_failed;
		counter_t fenced, fence_failed, recall_waits, recall_waits_own;
		counter_t delays, delays_after_wait; /* compounds answered DELAY (finish) */
	} st;
	pthread_t reaper;
	pthread_mutex_t reap_mu;
	pthread_cond_t reap_cv;
	bool reap_stop;
	uint64_t reap_due_ns; /* [reap_mu] a pass is due then at the latest */
	uint64_t trim_peak;   /* reaper only: state held at most since the last trim */
};

/* An open (op_open.c): the payload of an open stateid, keyed by its open
 * owner (pl.pl_share) and file. */
struct nfs4_open {
	struct nfs4_payload pl; /* first (stid.h) */
	struct nfs4_server *s;
	struct fs_inode *ip; /* held while the open lives */
	/* the lock stateids made from it (op_lock.c), under the open
	 * stateid's lock (nfs4_stid_lock) */
	struct nfs4_lockst *lockl;
};
struct nfs4_lockst;

/* ---- filehandles ---- */

enum nfs4_fh_kind {
	NFS4_FH_NONE = 0,
	NFS4_FH_FS,	/* an inode of an export */
	NFS4_FH_PSEUDO, /* a directory of the pseudo filesystem */
};

/* A current or saved filehandle, with what the caller may do under it. */
struct nfs4_fh {
	enum nfs4_fh_kind kind;
	struct fs_inode *ip; /* NFS4_FH_FS: a reference, released with the fh */
	struct srv_exp exp;  /* NFS4_FH_FS: export, options, squashed credential */
	uint32_t pnode;	     /* NFS4_FH_PSEUDO: node index */
};

void nfs4_fh_clear(struct nfs4_fh *fh);
/* dst becomes a copy of src (a new inode reference). */
void nfs4_fh_copy(struct nfs4_fh *dst, const struct nfs4_fh *src);

/* ---- one COMPOUND ---- */

/* The decoded request (svc args): ops are decoded one by one into the
 * request's arena (nfs4_dec_compound). */
struct nfs4_compound_args {
	struct xdr_arena arena;
	const uint8_t *tag;
	uint32_t tag_len;
	uint32_t minorversion;
	uint32_t count; /* operations the client sent */
	uint32_t nops;	/* decoded: ops[0..nops) */
	struct nfs_argop4 *ops;
	uint32_t bad_status; /* nonzero: op nops could not be decoded: this status */
	uint32_t bad_opcode;
	size_t record_len;
	_Alignas(16) uint8_t arena_buf[2048];
};

/* The COMPOUND being served (svc res). */
struct nfs4_compound {
	struct nfs4_server *s;
	struct nfs4_pseudo *pseudo; /* as the compound started */
	struct svc_req *rq;
	const struct rpc_cred *rc;
	struct nfs4_compound_args *args;

	/* the reply body as it is built: status, tag, count, results */
	struct xdr_enc enc;
	size_t status_off, count_off;
	uint32_t status;
	uint32_t nres;
	unsigned next_op; /* the op to run (a resumed compound goes on there) */

	struct nfs4_fh cfh, sfh;
	struct nfs4_stateid cur_sid;
	bool have_cur_sid, saved_have_sid;
	struct nfs4_stateid saved_sid;

	/* SEQUENCE */
	struct nfs4_session *sess; /* referenced while the compound runs */
	struct nfs4_client *clp;   /* the session's client (borrowed from sess) */
	uint32_t slotid;
	bool slot_held; /* nfs4_sequence_done() still owed */
	bool cachethis;
	bool replayed;       /* the reply is a slot's cached one, whole */
	bool retry_uncached; /* a retry whose reply was not cached: no op runs */
	uint32_t maxresp, maxresp_cached;

	/* stability: the highest commit sequence the ops made, and whether
	 * data must be durable too (rules 7 and 8, once per compound) */
	uint64_t csn;
	bool sync_data;
	bool data_marked;   /* data_mark read (nfs4_mark_data) */
	uint64_t data_mark; /* before the first stable data went (srv.h S1) */
	unsigned first_change; /* index+1 of the first op that made csn (0: none) */
	struct xdr_mark first_change_mark;
	struct xdr_mark op_mark; /* where the result of the op being run starts */

	/* rule 9: an op that started the recall of an idle layout may wait
	 * for its return, parked (nfs4_err_on says how long); then the
	 * compound goes on from that op (next_op) */
	enum { NFS4_RUNNING, NFS4_PARKED_LAYOUT, NFS4_PARKED_STABLE } phase;
	struct fs_inode *park_ip; /* referenced while parked */
	struct fs_layout_waiter lw;
	bool waited; /* once per compound */

	/* what the encoded reply points into, freed at release */
	struct xdr_arena resarena;
	struct nfs4_kept *kept; /* nfs4_res_keep's buffers, nodes in resarena */
	_Alignas(16) uint8_t resarena_buf[1024];
	uint8_t enc_buf[512];
};

/* Allocate n bytes that live until the reply has been sent. */
void *nfs4_res_alloc(struct nfs4_compound *c, size_t n);
/* Keep p (from iobuf_alloc, base/iobuf.h: READ data) until the reply has
 * been sent, when it is freed with the compound's results. As many as the
 * compound has operations; false when the results' arena is full (then p
 * is the caller's still, and the op answers REP_TOO_BIG). */
bool nfs4_res_keep(struct nfs4_compound *c, void *p);

/*
 * The status of an engine error for an op that changed (or would have
 * changed) ip: an -EINPROGRESS of fs_break_layouts (this request started
 * recalling an idle layout, or its own client's layout is being recalled)
 * parks the compound until the layouts are returned, and the op runs
 * again; or until NFS4_RECALL_WAIT passed when another client's layout is
 * recalled, NFS4_OWN_RECALL_WAIT when only the requester's own are. The
 * client that sent the request is the one that returns its layout, at
 * once (the Linux client returns a recalled layout while its SETATTR or
 * ALLOCATE waits); an answer of DELAY instead would cost it 100 ms or
 * more of back-off for every truncate and fallocate of a file it holds a
 * layout of. Anything else is nfs4_status(err) (DELAY for a recall under
 * way).
 */
#define NFS4_RECALL_WAIT     (30 * 1000000ull)
#define NFS4_OWN_RECALL_WAIT (1000 * 1000000ull)
uint32_t nfs4_err_on(struct nfs4_compound *c, int err, struct fs_inode *ip);

/* Note what an op changed (its commit sequence) for the stability wait;
 * data: data must be durable too (WRITE stable, COMMIT). */
void nfs4_note_change(struct nfs4_compound *c, uint64_t csn, bool data);
/* Before an op's data that must be stable goes to the engine (a stable
 * WRITE), or a COMMIT reads its verifier: the compound's reply fails if a
 * data flush fails from here until its wait ends (srv.h S1). The first
 * op's mark holds for the compound. */
void nfs4_mark_data(struct nfs4_compound *c);

/* ---- the operation table ---- */

#define OP4_CFH	     0x01u /* needs a current filehandle (NOFILEHANDLE) */
#define OP4_SFH	     0x02u /* needs a saved filehandle (NOFILEHANDLE) */
#define OP4_FIRST    0x04u /* may start a compound without SEQUENCE (then alone) */
#define OP4_SETS_CFH 0x08u /* a new current filehandle: the current stateid goes */
#define OP4_MODIFIES 0x10u /* changes the filesystem: refused on a pseudo fh (ROFS) */
#define OP4_V42	     0x20u /* minor version 2 and later */
#define OP4_NOTSUPP  0x40u /* known, not supported here: NOTSUPP */
#define OP4_ERRDATA  0x80u /* its result carries data on some errors: encoded whole */

struct nfs4_op {
	const char *name;
	/* The op's work: fills res (its union arm; res->resop and the status
	 * word are the caller's) and returns the nfsstat4. */
	uint32_t (*fn)(struct nfs4_compound *c, struct nfs_argop4 *arg, struct nfs_resop4 *res);
	unsigned flags;
	/* Largest encoded result (bytes), before the op runs: the reply space
	 * it is checked against (REP_TOO_BIG). NULL: 256 bytes. */
	uint32_t (*reply_size)(const struct nfs_argop4 *arg);
};

extern const struct nfs4_op nfs4_ops[];
extern const unsigned nfs4_nops;

/* Engine errors become nfsstat4 here, and only here. */
uint32_t nfs4_status(int err);

/* ---- the back channel (cb.c) ---- */

/* One call to a client; freed after its done() ran. */
struct nfs4_cb {
	struct svc_call call;
	struct nfs4_server *s;
	struct nfs4_session *sess; /* referenced */
	struct svc_conn *conn;	   /* referenced */
	struct nfs4_cb_seq seq;
	bool probe;
	unsigned retries;     /* sent again at once (cb.c invariant 3) */
	struct rpc_cred cred; /* call.cred points here for AUTH_SYS */
	struct CB_COMPOUND4args args;
	struct nfs_cb_argop4 ops[2];
	struct CB_COMPOUND4res res;
	struct xdr_arena arena;
	_Alignas(16) uint8_t arena_buf[512];
	/* the answer: the op's status, or DELAY when the client did not run it */
	void (*done)(struct nfs4_cb *cb, uint32_t status);
	void *arg;
};

void nfs4_conns_init(struct nfs4_server *s);
void nfs4_conns_destroy(struct nfs4_server *s);
void nfs4_conns_add(struct nfs4_server *s, struct svc_conn *conn);
void nfs4_conns_remove(struct nfs4_server *s, uint64_t id);
/* A CB_NULL on the session's back channel; no reply marks it faulty. */
void nfs4_cb_probe(struct nfs4_server *s, struct nfs4_session *sess);
/* CB_SEQUENCE + op on the session's back channel: NFS4_OK (done() will
 * run on a worker, exactly once, with the op's status, or DELAY when the
 * client did not run it: cb.c's table), or, and done() never runs, DELAY
 * (the slot is busy, or the connection died a moment ago: try later),
 * CONN_NOT_BOUND_TO_SESSION, BADSESSION. op is copied; it may be encoded
 * again until done() (a call resent at once), so what it points to must
 * live that long. */
uint32_t nfs4_cb_compound(struct nfs4_server *s, struct nfs4_session *sess,
			  const struct nfs_cb_argop4 *op, void (*done)(struct nfs4_cb *, uint32_t),
			  void *arg);

/* ---- what the files share ---- */

/* nfs4.c: have the reaper make a pass at due_ns at the latest (a recall
 * to resend then); any thread, no lock of ours held. */
void nfs4_reaper_kick(struct nfs4_server *s, uint64_t due_ns);

/* compound.c */
uint32_t nfs4_op_sequence(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
/* nfs4.c: the connection's closing unbinds it from every session */
void nfs4_conn_watch(struct nfs4_server *s, struct svc_conn *conn);

/* op_fh.c: the pseudo filesystem and the current filehandle */
struct nfs4_pseudo *nfs4_pseudo_build(const struct exports *e);
void nfs4_pseudo_free(struct nfs4_pseudo *p);
unsigned nfs4_pseudo_count(const struct nfs4_pseudo *p);
unsigned nfs4_pseudo_parent(const struct nfs4_pseudo *p, unsigned k);
uint64_t nfs4_pseudo_fileid(const struct nfs4_pseudo *p, unsigned k);
const char *nfs4_pseudo_name(const struct nfs4_pseudo *p, unsigned k);
uint32_t nfs4_pnode_resolve(struct nfs4_compound *c, unsigned k, struct nfs4_fh *out);
/* fh (of an export) stands at the root of another export that admits the
 * caller: it becomes that export's */
void nfs4_fh_cross(struct nfs4_compound *c, struct nfs4_fh *fh);
int nfs4_fh_attr(struct nfs4_compound *c, const struct nfs4_fh *fh, struct fs_attr *a);
void nfs4_fh_wire(struct nfs4_compound *c, const struct nfs4_fh *fh, const struct fs_attr *a,
		  nfs_fh4 *out);
void nfs4_fh_fsinfo(struct nfs4_compound *c, const struct nfs4_fh *fh, struct nfs4_fsinfo *fsi);
/* for an object whose attributes cannot be read (rdattr_error) */
void nfs4_fsinfo_none(struct nfs4_fsinfo *fsi);
uint64_t nfs4_fh_mounted_on(struct nfs4_compound *c, const struct nfs4_fh *fh,
			    const struct fs_attr *a);
uint32_t nfs4_name_check(const component4 *n);

/* op_attr.c */
void nfs4_attr_obj_of(struct nfs4_compound *c, const struct nfs4_fh *fh, const struct fs_attr *a,
		      struct nfs4_fsinfo *fsi, nfs_fh4 *wfh, struct nfs4_attr_obj *obj);
int nfs4_fattr(struct nfs4_compound *c, const bitmap4 *req, const struct nfs4_attr_obj *obj,
	       struct fattr4 *out);
void nfs4_sattr_to_fs(const struct nfs4_sattr *sa, struct fs_setattr *fsa);
static inline bool nfs4_bm_isset_wire(const bitmap4 *b, unsigned n)
{
	return n / 32 < b->len && (b->val[n / 32] >> (n % 32)) & 1;
}

/* op_open.c */
void nfs4_opens_init(struct nfs4_server *s);
void nfs4_opens_destroy(struct nfs4_server *s);
uint64_t nfs4_owner_key(const struct nfs4_server *s, uint64_t clientid, const void *owner,
			uint32_t len);
void nfs4_open_release(struct nfs4_server *s, struct nfs4_open *op);
/* May an I/O (write or read) of ip go ahead under the stateid w? */
uint32_t nfs4_check_io_stateid(struct nfs4_compound *c, const struct stateid4 *w,
			       struct fs_inode *ip, bool write);

/* op_lock.c */
void nfs4_locks_init(struct nfs4_server *s);
void nfs4_locks_destroy(struct nfs4_server *s);
struct nfs4_open *nfs4_lock_open(struct nfs4_lockst *ls);
/* Do op's lock owners hold byte-range locks? (open stateid locked) */
bool nfs4_open_has_locks(struct nfs4_server *s, struct nfs4_open *op);
/* The open is closed (open stateid locked): its lock stateids, which hold
 * no locks, go too; *out gets them referenced, to be ended by
 * nfs4_lockst_end_all() once the open's lock is dropped. */
size_t nfs4_open_take_locks(struct nfs4_open *op, struct nfs4_stid ***out);
void nfs4_lockst_end_all(struct nfs4_stid **v, size_t n);
bool nfs4_lockst_has_locks(struct nfs4_server *s, struct nfs4_lockst *ls);
void nfs4_lockst_release(struct nfs4_server *s, struct nfs4_lockst *ls);

/* layout.c */
struct nfs4_layout;
void nfs4_layouts_init(struct nfs4_server *s);
void nfs4_layouts_start(struct nfs4_server *s);
void nfs4_layouts_destroy(struct nfs4_server *s);
void nfs4_layout_release(struct nfs4_server *s, struct nfs4_layout *lo);
/* On the reaper: resend the recalls that are due, fence and revoke the
 * layouts recalled a lease ago and never returned. Returns when the next
 * resend is due (UINT64_MAX: none). */
uint64_t nfs4_layouts_reap(struct nfs4_server *s);
uint32_t nfs4_layoutget_reply_size(const struct nfs_argop4 *a);

/* op_io.c, op_io42.c */
uint32_t nfs4_read_reply_size(const struct nfs_argop4 *a);
uint32_t nfs4_read_plus_reply_size(const struct nfs_argop4 *a);

/* The operations, one handler each (optable.c has the table). */
uint32_t nfs4_op_exchange_id(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_create_session(struct nfs4_compound *c, struct nfs_argop4 *a,
				struct nfs_resop4 *r);
uint32_t nfs4_op_destroy_session(struct nfs4_compound *c, struct nfs_argop4 *a,
				 struct nfs_resop4 *r);
uint32_t nfs4_op_destroy_clientid(struct nfs4_compound *c, struct nfs_argop4 *a,
				  struct nfs_resop4 *r);
uint32_t nfs4_op_bind_conn(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_set_ssv(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_backchannel_ctl(struct nfs4_compound *c, struct nfs_argop4 *a,
				 struct nfs_resop4 *r);
uint32_t nfs4_op_reclaim_complete(struct nfs4_compound *c, struct nfs_argop4 *a,
				  struct nfs_resop4 *r);
uint32_t nfs4_op_test_stateid(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_free_stateid(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_putfh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_putrootfh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_getfh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_savefh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_restorefh(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_lookup(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_lookupp(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_secinfo(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_secinfo_no_name(struct nfs4_compound *c, struct nfs_argop4 *a,
				 struct nfs_resop4 *r);
uint32_t nfs4_op_getattr(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_setattr(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_verify(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_nverify(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_access(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_create(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_remove(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_rename(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_link(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_readlink(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_readdir(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_open(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_open_downgrade(struct nfs4_compound *c, struct nfs_argop4 *a,
				struct nfs_resop4 *r);
uint32_t nfs4_op_close(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_lock(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_lockt(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_locku(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_read(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_write(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_commit(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_allocate(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_deallocate(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_seek(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_copy(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_read_plus(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_layoutget(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_layoutcommit(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_layoutreturn(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_getdeviceinfo(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);
uint32_t nfs4_op_getdevicelist(struct nfs4_compound *c, struct nfs_argop4 *a, struct nfs_resop4 *r);

#endif
