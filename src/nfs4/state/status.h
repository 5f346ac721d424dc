/*
 * status.h - the status values and flag words of the NFSv4.1 state core.
 *
 * Protocol answers are nfsstat4 values (RFC 8881 §15.1) under their RFC
 * names (NFS4_OK, NFS4ERR_*), from the constants generated from
 * src/xdr/nfs4.x: xdr/nfs4_const.h has the enumerations and nothing of the
 * codecs, so the state core still knows no XDR type. The COMPOUND layer
 * returns them as they are.
 *
 * Functions of the state core that answer a protocol question return a
 * uint32_t holding one of these (NFS4_OK = 0). Functions that can only fail
 * for local reasons return 0 or -errno, as everywhere else in the tree.
 */
#ifndef JNFS_NFS4_STATUS_H
#define JNFS_NFS4_STATUS_H

#include "xdr/nfs4_const.h"

/* The flag words of SEQUENCE (SEQ4_STATUS_*), EXCHANGE_ID (EXCHGID4_FLAG_*)
 * and CREATE_SESSION (CREATE_SESSION4_FLAG_*) are the generated constants
 * too. Every EXCHANGE_ID flag a client may send; anything else is
 * NFS4ERR_INVAL (RFC 8881 §18.35.3). */
#define NFS4_EXCHGID_MASK_A                                                                        \
	((uint32_t)(EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_SUPP_MOVED_MIGR |               \
		    EXCHGID4_FLAG_BIND_PRINC_STATEID | EXCHGID4_FLAG_MASK_PNFS |                   \
		    EXCHGID4_FLAG_UPD_CONFIRMED_REC_A))

#endif
