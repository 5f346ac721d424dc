/*
 * drc.h - duplicate request cache for non-idempotent calls.
 *
 * Design note.
 *
 * A client that loses a reply retransmits the call with the same xid,
 * often on a new connection. Running a CREATE or REMOVE twice gives the
 * wrong answer the second time (EEXIST, ENOENT), so the reply to such a
 * call is kept and sent again.
 *
 * Key: xid, client address and port, program, version, procedure and a
 * CRC32C of the argument bytes (so a reused xid with different arguments
 * is not a duplicate). The port, as the Linux server keys it: a Linux
 * client reconnects from the port it had, and two clients behind one
 * address (NAT, containers, one process with several connections) may
 * send the same xid with the same arguments; keyed by the address alone,
 * one got the other's cached reply and its own call never ran.
 *
 * Entry states:  IN_PROGRESS --drc_finish--> DONE --evicted--> (freed)
 *                     \--drc_abort--> (freed)
 * A retransmission that finds IN_PROGRESS is dropped (the original's reply
 * is still coming); one that finds DONE gets a copy of the cached reply.
 *
 * Invariants:
 *  1. DONE entries <= max_entries and their reply bytes <= max_bytes after
 *     every drc_finish(): the least recently used DONE entries go first.
 *  2. IN_PROGRESS entries are never evicted (their owner will finish or
 *     abort them) and are at most max_entries: beyond that drc_begin()
 *     declines and the call runs uncached.
 */
#ifndef JNFS_RPC_DRC_H
#define JNFS_RPC_DRC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/stats.h"

struct drc;
struct drc_entry;

struct drc_key {
	uint32_t xid, prog, vers, proc, csum;
	uint8_t addr[16]; /* IPv4 mapped into IPv6 form */
	uint16_t port;
};

/* The key's address and port (the rest of the key zeroed first: keys are
 * compared and hashed as bytes). */
void drc_key_addr(struct drc_key *k, const struct sockaddr_storage *ss);

struct drc *drc_create(size_t max_entries, size_t max_bytes);
void drc_destroy(struct drc *d);

enum drc_result { DRC_MISS, DRC_HIT, DRC_IN_PROGRESS, DRC_UNCACHED };

/*
 * Look the call up. DRC_MISS: *e is a new IN_PROGRESS entry the caller must
 * drc_finish() or drc_abort(). DRC_HIT: *reply is a malloc'd copy of the
 * cached reply (the caller frees it). DRC_IN_PROGRESS: drop the call.
 * DRC_UNCACHED: the cache is full of calls in progress; run uncached.
 */
enum drc_result drc_begin(struct drc *d, const struct drc_key *k, struct drc_entry **e,
			  uint8_t **reply, size_t *len);
/* Store the reply (copied) and make the entry DONE. */
void drc_finish(struct drc *d, struct drc_entry *e, const void *reply, size_t len);
void drc_abort(struct drc *d, struct drc_entry *e);

/* drc.entries, drc.bytes, drc.in_progress, drc.evictions under prefix. */
void drc_stats(struct drc *d, const struct stat_sink *sink, const char *prefix);

#endif
