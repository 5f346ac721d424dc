/*
 * load.h - what nfs-load's workload sees of a protocol: file handles,
 * attributes, statuses, and one table of operations per protocol (struct
 * load_proto). The workload, its model and the verification are written
 * against this table only, so that NFSv4.1 is one more table beside
 * NFSv3's (proto_nfs3.c).
 *
 * Design note.
 *
 * A client (struct load_client) is one thread with one connection, doing
 * one operation at a time. A protocol keeps its own per-client state in
 * lc_pd and must behave as a real client does when the connection fails:
 * reconnect, then send the very same request again (NFSv3: the same xid,
 * so that a server that kept its duplicate request cache answers from it;
 * NFSv4.1: the same slot and sequence id while the session lives). Between
 * reconnecting and sending again it calls lc_recover() (the workload's
 * hook, which checks what the server still has, see work.c); an operation
 * made from inside the hook that loses the connection again fails at once
 * with LOAD_ERR_CONN, the hook returns nonzero, and the protocol
 * reconnects and calls the hook again. After every operation lc_sends
 * says how many times its request went out: more than one means the
 * server may have run it before (the answers a repeated non-idempotent
 * operation gives - REMOVE: NOENT - are then expected, see work.c).
 *
 * Every operation returns a enum load_st: a protocol status mapped to the
 * common set, or LOAD_ERR_RPC (the server answered with an RPC error or a
 * reply that does not decode) or LOAD_ERR_CONN (the connection could not
 * be restored: the client gives up). Attributes are filled only when the
 * status is LOAD_OK unless said otherwise; la_valid says whether the
 * server sent them.
 *
 * An NFSv4.1 table would keep in lc_pd its client id, session and one
 * open stateid per file handle (OPEN at create or first use, so that
 * WRITE, READ and SETATTR of the size have one), build each operation as
 * a COMPOUND with SEQUENCE, and after a reconnect BIND_CONN_TO_SESSION
 * and send the same slot and sequence id again; when the server restarted
 * (BADSESSION, STALE_CLIENTID) it makes a new client and session, opens
 * its files again, calls lc_recover() and sends the operation again as a
 * new request. The write verifier rules are the same, so the workload and
 * its model need nothing else.
 */
#ifndef JNFS_BENCH_LOAD_H
#define JNFS_BENCH_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#define LOAD_FH_MAX   128
#define LOAD_VERF_LEN 8

struct load_fh {
	uint32_t len;
	uint8_t data[LOAD_FH_MAX];
};

enum load_type { LOAD_T_REG = 1, LOAD_T_DIR = 2, LOAD_T_OTHER = 3 };

struct load_attr {
	bool la_valid;
	uint32_t la_type; /* enum load_type */
	uint32_t la_mode; /* permission bits and set-id bits, no type */
	uint32_t la_nlink;
	uint64_t la_size;
	uint64_t la_fileid;
};

enum load_st {
	LOAD_OK,
	LOAD_NOENT,
	LOAD_EXIST,
	LOAD_NOTEMPTY,
	LOAD_NOSPC,
	LOAD_STALE,
	LOAD_BADHANDLE,
	LOAD_IO,
	LOAD_DELAY, /* NFS3ERR_JUKEBOX / NFS4ERR_DELAY: try again later */
	LOAD_ISDIR,
	LOAD_NOTDIR,
	LOAD_INVAL,
	LOAD_ACCES,
	LOAD_NOT_SYNC,	 /* a SETATTR guard did not match */
	LOAD_BAD_COOKIE, /* a READDIR cookie the server no longer knows: list again */
	LOAD_OTHER,	 /* any other protocol status */
	LOAD_ERR_RPC,
	LOAD_ERR_CONN,
	LOAD_NST
};

const char *load_st_name(enum load_st st);

enum load_stable { LOAD_UNSTABLE = 0, LOAD_DATA_SYNC = 1, LOAD_FILE_SYNC = 2 };
enum load_create { LOAD_UNCHECKED = 0, LOAD_GUARDED = 1, LOAD_EXCLUSIVE = 2 };

/* What SETATTR changes. */
struct load_sattr {
	bool set_mode, set_size;
	uint32_t mode;
	uint64_t size;
};

/* One directory entry; return nonzero to stop. fileid is 0 when the
 * protocol gave none; a is NULL or the entry's attributes (READDIRPLUS). */
typedef int (*load_dirent_fn)(void *arg, const char *name, uint64_t fileid,
			      const struct load_attr *a);

struct load_client;

/* Options every protocol understands. */
struct load_conn_opts {
	const char *addr;	 /* "ADDR:PORT" of the server */
	const char *export_path; /* what to mount */
	unsigned timeout_ms;	 /* a reply later than this: reconnect and resend */
	unsigned give_up_ms;	 /* failing to reconnect for this long: LOAD_ERR_CONN */
	uint32_t uid, gid;
};

/*
 * The operations, one row per protocol. All block; none may be called
 * from two threads for one client.
 */
struct load_proto {
	const char *name;
	/* Connect and find the export's root; 0 or -errno. */
	int (*open)(struct load_client *c, const struct load_conn_opts *o, struct load_fh *root);
	void (*close)(struct load_client *c);
	enum load_st (*lookup)(struct load_client *c, const struct load_fh *dir, const char *name,
			       struct load_fh *fh, struct load_attr *a);
	enum load_st (*getattr)(struct load_client *c, const struct load_fh *fh,
				struct load_attr *a);
	enum load_st (*setattr)(struct load_client *c, const struct load_fh *fh,
				const struct load_sattr *sa, struct load_attr *post);
	/* verf is used with LOAD_EXCLUSIVE only (mode is then not sent) */
	enum load_st (*create)(struct load_client *c, const struct load_fh *dir, const char *name,
			       enum load_create how, const uint8_t verf[LOAD_VERF_LEN],
			       uint32_t mode, struct load_fh *fh, struct load_attr *a);
	enum load_st (*mkdir)(struct load_client *c, const struct load_fh *dir, const char *name,
			      uint32_t mode, struct load_fh *fh, struct load_attr *a);
	enum load_st (*remove)(struct load_client *c, const struct load_fh *dir, const char *name);
	enum load_st (*rmdir)(struct load_client *c, const struct load_fh *dir, const char *name);
	enum load_st (*rename)(struct load_client *c, const struct load_fh *fdir, const char *fname,
			       const struct load_fh *tdir, const char *tname);
	enum load_st (*link)(struct load_client *c, const struct load_fh *fh,
			     const struct load_fh *dir, const char *name);
	/* *count and *committed say what the server wrote and how stably;
	 * verf is the server's write verifier */
	enum load_st (*write)(struct load_client *c, const struct load_fh *fh, uint64_t off,
			      const void *buf, uint32_t len, enum load_stable how, uint32_t *count,
			      enum load_stable *committed, uint8_t verf[LOAD_VERF_LEN]);
	enum load_st (*commit)(struct load_client *c, const struct load_fh *fh,
			       uint8_t verf[LOAD_VERF_LEN]);
	/* at most len bytes into buf; *n read, *eof */
	enum load_st (*read)(struct load_client *c, const struct load_fh *fh, uint64_t off,
			     uint32_t len, void *buf, uint32_t *n, bool *eof);
	/* every entry but "." and "..", in as many calls as it takes */
	enum load_st (*readdir)(struct load_client *c, const struct load_fh *dir, bool plus,
				load_dirent_fn fn, void *arg);
	/* free bytes for the caller */
	enum load_st (*fsstat)(struct load_client *c, const struct load_fh *fh, uint64_t *avail);
};

extern const struct load_proto load_nfs3;

/* Per-client transport counters, kept by the protocol. */
struct load_conn_stats {
	uint64_t reconnects; /* connections made again after a failure */
	uint64_t resends;    /* requests sent again after a failure */
	uint64_t timeouts;   /* replies that did not come within timeout_ms */
	uint64_t rpc_errors; /* replies with an RPC error or that did not decode */
	uint64_t down_ns;    /* time spent reconnecting */
};

struct load_client {
	unsigned lc_id;
	const struct load_proto *lc_proto;
	void *lc_pd; /* the protocol's */
	/* the workload's hook, run after a reconnect before the operation in
	 * progress is sent again: 0, or nonzero to reconnect and run it again */
	int (*lc_recover)(struct load_client *c);
	void *lc_work;	   /* the workload's */
	unsigned lc_sends; /* transmissions of the last operation's request */
	bool lc_in_recover;
	struct load_conn_stats lc_cs;
};

#endif
