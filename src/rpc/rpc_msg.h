/*
 * rpc_msg.h - ONC RPC v2 messages (RFC 5531): call and reply headers,
 * AUTH_NONE and AUTH_SYS credentials.
 *
 * Design note.
 *
 * Decoding a call is split in two so that every failure maps to exactly
 * one RFC 5531 answer:
 *   rpc_dec_call_hdr()  framing: xid, CALL, rpcvers, prog, vers, proc and
 *                       both opaque_auth fields. A failure here means the
 *                       message cannot be answered sensibly (truncated
 *                       header): the transport drops the connection.
 *   rpc_auth_check()    the credential and verifier: returns an auth_stat,
 *                       answered with MSG_DENIED/AUTH_ERROR. AUTH_NONE and
 *                       AUTH_SYS (at most RPC_AUTH_SYS_MAX_GIDS groups) are
 *                       accepted; RPCSEC_GSS is AUTH_TOOWEAK for now; every
 *                       other flavour is AUTH_BADCRED. An opaque_auth body
 *                       longer than 400 bytes is AUTH_BADCRED, not garbage,
 *                       so such a caller learns why it was refused.
 * The credential that results is a plain value (struct rpc_cred) handed to
 * procedures as an argument; nothing about a call lives in thread state.
 */
#ifndef JNFS_RPC_RPC_MSG_H
#define JNFS_RPC_RPC_MSG_H

#include <stdint.h>

#include "rpc/xdr.h"

#define RPC_VERSION 2

enum rpc_msg_type { RPC_CALL = 0, RPC_REPLY = 1 };
enum rpc_reply_stat { RPC_MSG_ACCEPTED = 0, RPC_MSG_DENIED = 1 };
enum rpc_accept_stat {
	RPC_SUCCESS = 0,
	RPC_PROG_UNAVAIL = 1,
	RPC_PROG_MISMATCH = 2,
	RPC_PROC_UNAVAIL = 3,
	RPC_GARBAGE_ARGS = 4,
	RPC_SYSTEM_ERR = 5,
};
enum rpc_reject_stat { RPC_MISMATCH = 0, RPC_AUTH_ERROR = 1 };
enum rpc_auth_stat {
	RPC_AUTH_OK = 0,
	RPC_AUTH_BADCRED = 1,
	RPC_AUTH_REJECTEDCRED = 2,
	RPC_AUTH_BADVERF = 3,
	RPC_AUTH_REJECTEDVERF = 4,
	RPC_AUTH_TOOWEAK = 5,
};
enum rpc_auth_flavor {
	RPC_AUTH_NONE = 0,
	RPC_AUTH_SYS = 1,
	RPC_AUTH_SHORT = 2,
	RPC_AUTH_DH = 3,
	RPC_RPCSEC_GSS = 6,
};

#define RPC_AUTH_MAX_BODY         400 /* opaque_auth body<400> */
#define RPC_AUTH_SYS_MAX_MACHINE  255
#define RPC_AUTH_SYS_MAX_GIDS     16

/* The caller's identity, as checked by rpc_auth_check(). */
struct rpc_cred {
	uint32_t flavor; /* RPC_AUTH_NONE or RPC_AUTH_SYS */
	uint32_t stamp;
	uint32_t uid, gid;
	uint32_t ngids;
	uint32_t gids[RPC_AUTH_SYS_MAX_GIDS];
	char machine[RPC_AUTH_SYS_MAX_MACHINE + 1];
};

/* A decoded call header. The auth bodies point into the message buffer. */
struct rpc_call_hdr {
	uint32_t xid, rpcvers, prog, vers, proc;
	uint32_t cred_flavor, cred_len;
	const void *cred_body;
	uint32_t verf_flavor, verf_len;
	const void *verf_body;
};

/* A decoded reply header (for calls we make: backchannel, rpcbind). */
struct rpc_reply_hdr {
	uint32_t xid;
	uint32_t reply_stat;  /* RPC_MSG_ACCEPTED / RPC_MSG_DENIED */
	uint32_t stat;        /* accept_stat, or reject_stat when denied */
	uint32_t auth_stat;   /* when denied with RPC_AUTH_ERROR */
	uint32_t low, high;   /* PROG_MISMATCH / RPC_MISMATCH range */
};

/* Decode xid and msg_type only (the transport's demultiplexing peek). */
int rpc_dec_xid_type(struct xdr_dec *x, uint32_t *xid, uint32_t *type);
/* Decode the rest of a call header after xid and msg_type (-EBADMSG). */
int rpc_dec_call_body(struct xdr_dec *x, uint32_t xid, struct rpc_call_hdr *h);
/* The whole header: xid, msg_type (must be CALL), then the body. */
int rpc_dec_call_hdr(struct xdr_dec *x, struct rpc_call_hdr *h);
/* Check the credential and verifier; fill *cred. Returns an auth_stat. */
enum rpc_auth_stat rpc_auth_check(const struct rpc_call_hdr *h, struct rpc_cred *cred);

/* Encode a call header; cred NULL or AUTH_NONE flavour sends AUTH_NONE. */
int rpc_enc_call_hdr(struct xdr_enc *x, uint32_t xid, uint32_t prog, uint32_t vers,
		     uint32_t proc, const struct rpc_cred *cred);
/* MSG_ACCEPTED with a NULL verifier and the given accept_stat. */
int rpc_enc_accepted(struct xdr_enc *x, uint32_t xid, enum rpc_accept_stat stat);
int rpc_enc_prog_mismatch(struct xdr_enc *x, uint32_t xid, uint32_t low, uint32_t high);
int rpc_enc_rpc_mismatch(struct xdr_enc *x, uint32_t xid);
int rpc_enc_auth_error(struct xdr_enc *x, uint32_t xid, enum rpc_auth_stat stat);

/* Decode a reply header up to (not including) the results. Returns 0 when
 * the header decoded, whatever its status; -EBADMSG when it is malformed. */
int rpc_dec_reply_hdr(struct xdr_dec *x, struct rpc_reply_hdr *r);

const char *rpc_accept_stat_name(uint32_t stat);
const char *rpc_auth_stat_name(uint32_t stat);

#endif
