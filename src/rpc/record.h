/*
 * record.h - RPC record marking over a byte stream (RFC 5531 §11).
 *
 * Design note.
 *
 * A record is a sequence of fragments; each fragment starts with a 4-byte
 * big-endian header whose top bit marks the last fragment and whose low 31
 * bits give the fragment length. The reassembler is a pure state machine
 * with no I/O, so the transport, the tests and the fuzz target drive the
 * very same code.
 *
 * States:  HEADER (0..3 header bytes seen) --4th byte--> BODY (frag_left
 *          bytes to come) --frag_left==0, last--> DONE --rec_take--> HEADER
 *                                         --frag_left==0, !last--> HEADER
 *
 * Invariants:
 *  1. len <= max_record at all times: a header that would let the record
 *     grow past max_record is refused (-EMSGSIZE) before any byte of its
 *     body is accepted or any memory is reserved for it.
 *  2. Memory follows the bytes actually received, not the length a header
 *     merely claims: while fewer than REC_EAGER bytes of the record have
 *     arrived, cap <= 2 * len + REC_EAGER; from then on the buffer may take
 *     the rest of the current fragment at once, cap <= len + frag_left
 *     (one move of the first REC_EAGER bytes, where doubling would copy
 *     the record's size over again in five moves). So a header claiming
 *     1 MiB that never sends more costs 60 KiB, and one that sent 60 KiB
 *     costs its fragment: at most max_record per connection, and the
 *     server bounds all connections' incomplete records together
 *     (svc.h, partial_max). Buffers come from base/iobuf.h: a large one
 *     freed is reused by the next record of its size, pages mapped.
 *  3. After an error the reassembler accepts nothing more; the connection
 *     is to be dropped.
 *  4. Alignment (rec_align): the transport may ask that the byte at offset
 *     off of the next record sit at an address that is a multiple of
 *     REC_ALIGN, so that bulk data there (a WRITE's) can go to a direct-I/O
 *     device without a bounce. The buffer then has up to REC_ALIGN - 1
 *     bytes before the record (not counted in cap), and the record moves
 *     within it when a growth moves the buffer to an address of another
 *     alignment. It is a hint: the bytes of the record are the same
 *     whatever it asks, and a record shorter than off is simply stored.
 */
#ifndef JNFS_RPC_RECORD_H
#define JNFS_RPC_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REC_LAST_FRAG 0x80000000u
#define REC_LEN_MASK  0x7fffffffu
#define REC_ALIGN     4096u
#define REC_EAGER     (60u << 10) /* invariant 2; with REC_ALIGN, under IOBUF_BIG */

struct rec_asm {
	size_t max_record;
	uint8_t hdr[4];
	unsigned hdr_have;   /* header bytes seen in state HEADER */
	uint32_t frag_left;  /* body bytes still to come in state BODY */
	bool in_body;
	bool last;           /* the current fragment is the last one */
	bool done;           /* a complete record waits for rec_take() */
	int error;           /* sticky (invariant 3) */
	unsigned nfrags;
	uint8_t *buf;        /* the record so far, fragment headers removed */
	size_t len, cap;
	uint8_t *base;       /* the allocation: buf - lead */
	size_t lead;
	size_t align_next;   /* rec_align() for the next record; 0: none */
	size_t align_off;    /* this record's, taken when its buffer is made */
	size_t copied;       /* bytes copied when this record's buffer moved */
};

void rec_init(struct rec_asm *r, size_t max_record);
void rec_destroy(struct rec_asm *r);

/*
 * Feed bytes. Consumes a prefix of data and reports how much in *used.
 * Returns 1 when a record is complete (take it with rec_take() before
 * feeding more), 0 when every byte was consumed and more are needed, or
 * -EMSGSIZE when the record would exceed max_record.
 */
int rec_feed(struct rec_asm *r, const uint8_t *data, size_t len, size_t *used);

/*
 * For large fragments the transport may read straight into the record:
 * rec_direct() gives the space for the rest of the current fragment body
 * (0 when not in a body) and rec_direct_commit() accounts n bytes written
 * there. Returns like rec_feed().
 */
size_t rec_direct(struct rec_asm *r, uint8_t **space);
int rec_direct_commit(struct rec_asm *r, size_t n);

/* Hand the complete record to the caller, who frees it with iobuf_free()
 * (base/iobuf.h). An empty record returns NULL with *len == 0. Only
 * without rec_align(). */
uint8_t *rec_take(struct rec_asm *r, size_t *len);

/* The same where rec_align() may be in use: the caller frees *alloc (NULL
 * with an empty record) with iobuf_free(), not the record. */
uint8_t *rec_take_at(struct rec_asm *r, size_t *len, void **alloc);

/* Ask that offset off (0: no request) of the records from the next one on
 * lie at a multiple of REC_ALIGN in memory (invariant 4). */
void rec_align(struct rec_asm *r, size_t off);

/* True while part of a record has arrived (for the stall timeout). */
bool rec_partial(const struct rec_asm *r);

#endif
