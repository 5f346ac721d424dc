/*
 * nfs4c_priv.h - what client.c and compound.c share: the client's state
 * and the recovery entry point. Not for users of the library.
 */
#ifndef JNFS_NFS4C_NFS4C_PRIV_H
#define JNFS_NFS4C_NFS4C_PRIV_H

#include <pthread.h>

#include "base/list.h"
#include "base/lock.h"
#include "nfs4c/nfs4c.h"

#define NFS4C_CBQ_MAX	  64	     /* queued server calls before they are dropped */
#define NFS4C_SCRATCH_CAP (1u << 20) /* per compound (nfs4c_scratch) */

/* A call from the server waiting for the callback thread. */
struct nfs4c_cbq_item {
	struct list link;
	struct nfs4c_conn *conn; /* referenced: the reply goes back on it */
	uint8_t *rec;
	size_t len;
};

struct nfs4c_client {
	struct nfs4c_cfg cfg; /* addr and owner point at the copies below */
	char *addr;
	uint8_t *owner;
	uint32_t owner_len;
	struct nfs4c_hooks hooks;

	struct mutex recover_lock; /* nfs4c.h invariant 3 */

	struct mutex lock;    /* everything below, to the callback queue */
	struct cond slot_cv;  /* a slot was freed, or the session changed */
	struct cond renew_cv; /* the renewal thread's sleep */
	struct nfs4c_conn *conn;
	uint64_t conn_gen; /* one more each time conn is replaced */
	uint32_t minorversion;
	bool have_clientid;
	clientid4 clientid;
	sequenceid4 cs_seq; /* csa_sequence of the next CREATE_SESSION */
	uint32_t eir_flags;
	bool have_session;
	uint8_t sid[NFS4_SESSIONID_SIZE];
	uint64_t sess_gen; /* one more each time the session changes */
	uint32_t csr_flags;
	struct channel_attrs4 fore, back;
	struct nfs4c_slots slots;
	uint32_t status_flags;
	uint32_t lease_s;
	uint64_t last_renew_ns; /* the last SEQUENCE that succeeded */
	uint64_t last_rebind_ns;
	bool stopping;
	bool renew_started;
	pthread_t renew_thread;
	struct nfs4c_info ctr; /* the counters of nfs4c_get_info */

	/* the back channel */
	struct nfs4c_cb cb;
	struct mutex cbq_lock; /* the queue below */
	struct cond cbq_cv;
	struct list cbq;
	unsigned cbq_len;
	bool cb_stop;
	pthread_t cb_thread;
	uint64_t cb_count[NFS4C_CB_NOPS]; /* operations received, by opcode */
	nfs4c_cb_fn cb_fn[NFS4C_CB_NOPS];  /* the handlers (cfg.cb, nfs4c_set_cb) */
	void *cb_arg[NFS4C_CB_NOPS];
	bool cb_in_handler;   /* the callback thread runs a handler */
	struct cond cb_idle_cv; /* ... and finished it */
	uint64_t cb_dropped;
};

/* What nfs4c_recover() restores. */
enum { NFS4C_REC_CONN = 1, NFS4C_REC_SESSION = 2 };

/*
 * Restore the connection (NFS4C_REC_CONN: reconnect, bind the new one to
 * the session; a session the server lost is recovered too) or the session
 * (NFS4C_REC_SESSION: a new one; a new client ID first if the server lost
 * that too), unless the connection or session generation has moved past
 * seen (someone else did it). 0 or -errno; takes recover_lock, so never
 * from inside a recovery.
 */
int nfs4c_recover(struct nfs4c_client *cl, int what, uint64_t seen);

/* A compound that must not start a recovery (those sent by one). */
void nfs4c_compound_no_recover(struct nfs4c_compound *c);

#endif
