/*
 * slots.h - the client's fore channel slot table of an NFSv4.1 session
 * (RFC 8881 2.10.6.1): which slots are free, the sequence id each sends
 * next, and the limits the server sets in every SEQUENCE reply. Plain
 * data with no lock and no I/O: the session layer holds its own lock
 * around every call, and the tests drive it directly.
 *
 * Design note.
 *
 * A slot carries one request at a time. Its sequence id is the one its
 * next request sends: 1 for a new session (the server's slot starts at 0
 * and expects 1), one more after every request the server processed on it.
 *
 *   FREE --take--> BUSY --done(PROCESSED): seqid + 1----------> FREE
 *                   |  \--done(UNUSED): seqid kept-------------> FREE
 *                   \----done(LOST): the outcome is unknown-----> DEAD
 *
 * PROCESSED: SEQUENCE succeeded (the server's slot moved to this seqid).
 * UNUSED: the server answered without moving the slot (SEQUENCE failed:
 * SEQ_MISORDERED, BADSLOT...; an RPC-level error; an empty result).
 * LOST: no usable answer (the connection could not be restored, or the
 * reply could not be decoded as far as SEQUENCE's result): the server may
 * or may not have executed the request, so neither seqid is safe to send
 * next - a wrong guess would be answered from the server's reply cache
 * with another request's reply. A DEAD slot is never handed out again;
 * the session keeps working with the others.
 *
 * Limits (2.10.6.1, 18.46.3). highest: sr_highest_slotid, the highest
 * slot the server will accept; target: sr_target_highest_slotid, the
 * highest it would like the client to use. take() hands out only slots
 * at or below both. When highest drops, the server has forgotten the
 * slots above it: their seqid restarts at 1 (the server accepts that or
 * the next one when it raises highest again). sa_highest_slotid sent with
 * a request is the highest slot busy at that moment (the request's own
 * included).
 *
 * Invariants:
 *  1. nbusy == the number of BUSY slots; a slot is handed out only FREE.
 *  2. highest and target are always < nslots (a server's larger values
 *     are clamped: the table cannot grow after CREATE_SESSION).
 *  3. Only done(PROCESSED) advances a seqid, by exactly one (modulo 2^32,
 *     as the server counts).
 */
#ifndef JNFS_NFS4C_SLOTS_H
#define JNFS_NFS4C_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

#define NFS4C_MAX_SLOTS 256

enum nfs4c_slot_state { NFS4C_SLOT_FREE, NFS4C_SLOT_BUSY, NFS4C_SLOT_DEAD };

enum nfs4c_slot_outcome {
	NFS4C_SLOT_PROCESSED, /* SEQUENCE succeeded: seqid + 1 */
	NFS4C_SLOT_UNUSED,    /* answered without moving the slot: seqid kept */
	NFS4C_SLOT_LOST,      /* outcome unknown: the slot is retired (DEAD) */
};

struct nfs4c_slot {
	uint32_t seqid; /* what the next request on this slot sends */
	uint8_t state;	/* enum nfs4c_slot_state */
};

struct nfs4c_slots {
	uint32_t nslots;  /* what CREATE_SESSION granted, <= NFS4C_MAX_SLOTS */
	uint32_t highest; /* sr_highest_slotid (invariant 2) */
	uint32_t target;  /* sr_target_highest_slotid (invariant 2) */
	uint32_t nbusy, ndead;
	struct nfs4c_slot slot[NFS4C_MAX_SLOTS];
};

/* n slots (clamped to 1..NFS4C_MAX_SLOTS), all FREE with seqid 1. */
void nfs4c_slots_init(struct nfs4c_slots *s, uint32_t n);

/*
 * Take a slot. want < 0: the lowest FREE slot at or below the limits;
 * -EAGAIN when none is free now (wait for a done()), -ENOSPC when none can
 * ever be (every usable one DEAD). want >= 0: exactly that slot, whatever
 * the limits say (tests send on slots the server has not offered);
 * -EINVAL past the table, -EBUSY while it is BUSY, -ENOSPC when DEAD.
 */
int nfs4c_slots_take(struct nfs4c_slots *s, int want, uint32_t *slotid);

/* sa_highest_slotid for a request sent now. */
uint32_t nfs4c_slots_highest_busy(const struct nfs4c_slots *s);

/* A BUSY slot's request is over (invariant 3). */
void nfs4c_slots_done(struct nfs4c_slots *s, uint32_t slotid, enum nfs4c_slot_outcome how);

/* The limits of a SEQUENCE reply (clamped, invariant 2); slots above a
 * lower highest restart at seqid 1. */
void nfs4c_slots_set_limits(struct nfs4c_slots *s, uint32_t highest, uint32_t target);

/* Set a slot's next seqid (a hook's answer to SEQ_MISORDERED). */
void nfs4c_slots_set_seqid(struct nfs4c_slots *s, uint32_t slotid, uint32_t seqid);

/* Panics unless the invariants hold (tests). */
void nfs4c_slots_assert(const struct nfs4c_slots *s);

#endif
