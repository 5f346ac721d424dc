/*
 * rpc_test.h - helpers shared by the RPC tests: raw client connections
 * that send hand-built call records, reply checks, and starting/stopping a
 * jnfsd child process by PID.
 */
#ifndef JNFS_TESTS_RPC_TEST_H
#define JNFS_TESTS_RPC_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rpc/rpc_msg.h"
#include "rpc/xdr.h"
#include "jnfsd_proc.h"

/* Connect to 127.0.0.1:port (or "[::1]" when v6); 10 s I/O timeouts. */
int tc_connect(uint16_t port, bool v6);

/* Send one call record: header with cred (NULL: AUTH_NONE), then args. */
void tc_send_call(int fd, uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
		  const struct rpc_cred *cred, const void *args, size_t alen);
/* Send raw bytes. */
void tc_send_raw(int fd, const void *buf, size_t len);

/* Receive one record; CHECK-fails on error. */
uint8_t *tc_recv(int fd, size_t *len);
/* Receive a reply record and decode its header; *res is positioned at the
 * results (valid until the caller frees the returned buffer). */
uint8_t *tc_recv_reply(int fd, struct rpc_reply_hdr *rh, struct xdr_dec *res);
/* True when the peer closed the connection (EOF or reset) within ms. */
bool tc_wait_closed(int fd, unsigned ms);

uint64_t tc_now_us(void);

#endif
