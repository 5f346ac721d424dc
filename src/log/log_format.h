/*
 * log_format.h - the on-disk format of the journal. Shared by the journal,
 * the filesystem engine and every offline tool. All fields little-endian.
 *
 * The log is a circular region of 512-byte basic blocks (BB) on the log
 * device. A log sequence number (LSN) names a BB: cycle << 32 | block, where
 * block is the BB index inside the log and cycle counts passes over the
 * region (starting at 1). Internally the journal uses the linear position
 * pos = cycle * log_bbs + block, which only grows.
 *
 * The log is a chain of records. A record is one header BB followed by
 * payload BBs; it may wrap around the physical end of the region. Every
 * record carries:
 *   - its own LSN and the filesystem UUID (stale or foreign blocks never
 *     validate),
 *   - a CRC32C over header and payload,
 *   - the CRC of the record before it (h_prev_crc), so that a record left
 *     beyond a torn write never joins the chain,
 *   - the log tail as of its writing: recovery replays from there.
 *
 * A checkpoint is the unit of atomicity: one or more consecutive records
 * with the same h_csn, the first flagged LOG_REC_START and the last
 * LOG_REC_COMMIT (its commit record, written with FUA). Their payloads,
 * concatenated, are a stream of operations: each an op header followed by an
 * item image, padded to 8 bytes. A checkpoint without its commit record is
 * never replayed.
 *
 * A clean unmount writes a record flagged LOG_REC_UNMOUNT whose tail is its
 * own LSN: mount then finds nothing to replay.
 */
#ifndef JNFS_LOG_LOG_FORMAT_H
#define JNFS_LOG_LOG_FORMAT_H

#include <stdint.h>

#define LOG_BB_SHIFT 9
#define LOG_BB_SIZE  (1u << LOG_BB_SHIFT)

#define LOG_REC_MAGIC	0x524c4e4au /* "JNLR" */
#define LOG_REC_VERSION 1

/* h_flags */
#define LOG_REC_START	0x1u /* first record of a checkpoint */
#define LOG_REC_COMMIT	0x2u /* last record of a checkpoint: its commit record */
#define LOG_REC_UNMOUNT 0x4u /* clean unmount: everything before is written back */

/* Largest payload of one record; log buffers are at most this plus a header. */
#define LOG_MAX_BUF_SIZE (256u * 1024u)
#define LOG_MIN_BUF_SIZE (4u * 1024u)

struct log_rec_hdr {
	uint32_t h_magic;
	uint16_t h_version;
	uint16_t h_flags;
	uint32_t h_crc;	 /* crc32c of this BB with h_crc = 0, then the payload */
	uint32_t h_len;	 /* payload bytes after the header BB */
	uint64_t h_lsn;	 /* LSN of this header */
	uint64_t h_tail; /* log tail when written */
	uint64_t h_csn;	 /* checkpoint sequence; 0 for an unmount record */
	uint32_t h_prev_crc;
	uint32_t h_index;   /* record number within the checkpoint, from 0 */
	uint8_t h_uuid[16]; /* filesystem UUID */
	uint32_t h_log_bbs; /* size of the log region in BBs */
	uint8_t h_pad[LOG_BB_SIZE - 72];
};
_Static_assert(sizeof(struct log_rec_hdr) == LOG_BB_SIZE, "log record header is one BB");

/* One operation in a checkpoint's stream. o_type is the item type. */
struct log_op_hdr {
	uint16_t o_type;
	uint16_t o_flags;
	uint32_t o_len; /* image bytes that follow; the op is padded to 8 */
};
_Static_assert(sizeof(struct log_op_hdr) == 8, "op header size");

#define LOG_OP_ALIGN 8u

/* Item types. */
#define LOG_ITEM_BUF   1 /* buffer item: dirty ranges of a 4 KiB metadata block */
#define LOG_ITEM_INODE 2 /* inode item (filesystem engine) */
#define LOG_ITEM_DATA  3 /* data item: file data, or a cancel of it (data_item.h) */
#define LOG_ITEM_MAX   16

/*
 * Buffer item image: header, then the dirty 128-byte chunks named by
 * bl_map, in ascending order. With LOG_BUF_CANCEL the block was freed: no
 * chunks follow, and recovery skips every image of this block in this and
 * earlier checkpoints.
 */
#define LOG_BUF_BLOCK  4096u
#define LOG_BUF_CHUNK  128u
#define LOG_BUF_CHUNKS (LOG_BUF_BLOCK / LOG_BUF_CHUNK)
#define LOG_BUF_CANCEL 0x1u

struct log_buf_fmt {
	uint64_t bl_daddr; /* byte offset of the block on the data device */
	uint32_t bl_map;   /* bit i: chunk i follows */
	uint16_t bl_flags;
	uint16_t bl_pad;
};
_Static_assert(sizeof(struct log_buf_fmt) == 16, "buffer item header size");
_Static_assert(LOG_BUF_CHUNKS == 32, "chunk map is one 32-bit word");

/*
 * Data item image: header, then dl_len bytes of data for the data device at
 * dl_daddr (both multiples of 512). With LOG_DATA_CANCEL no data follows:
 * recovery skips, in every 4 KiB block of [dl_daddr, dl_daddr + dl_len),
 * what the data images before this one in log order would write.
 */
#define LOG_DATA_CANCEL 0x1u

struct log_data_fmt {
	uint64_t dl_daddr; /* byte offset on the data device */
	uint32_t dl_len;   /* bytes */
	uint16_t dl_flags;
	uint16_t dl_pad;
};
_Static_assert(sizeof(struct log_data_fmt) == 16, "data item header size");

#endif
