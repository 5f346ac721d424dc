/*
 * fh.h - file handles: opaque to clients, authenticated by the server.
 *
 * Wire format (32 bytes, all little-endian):
 *   u8  version (1)   u8 reserved   u16 reserved
 *   u32 fsid          the export that gave it out
 *   u64 ino           u32 gen (generation)   u32 reserved
 *   u64 mac           SipHash-2-4 over the 24 bytes before it, keyed with
 *                     the filesystem's secret (kept in its superblock, so
 *                     handles outlive restarts)
 * A handle of another length or version is malformed (BADHANDLE); one whose
 * MAC does not verify was forged or altered (BADHANDLE); a valid one whose
 * inode is gone or has another generation is STALE, and so is one whose
 * fsid no export has (an export's fsid is derived from its root, so editing
 * the exports file never hands one export's handles to another). None of
 * them can ever name another file. The generation is always the inode's
 * own: a handle is only made from an inode found by name or created, never
 * from a bare inode number (exports.h).
 *
 * A valid handle is not a claim that its inode still lies under its
 * export: one moved out keeps resolving (no_subtree_check). What handles
 * guarantee about the export boundary, and how ".." keeps it, is in
 * exports.h.
 */
#ifndef JNFS_EXPORT_FH_H
#define JNFS_EXPORT_FH_H

#include <stddef.h>
#include <stdint.h>

#define FH_SIZE    32
#define FH_VERSION 1

struct fh {
	uint32_t fsid;
	uint64_t ino;
	uint32_t gen;
};

void fh_encode(const uint8_t key[16], const struct fh *fh, uint8_t out[FH_SIZE]);
/* 0, or -EBADMSG for a malformed or forged handle. */
int fh_decode(const uint8_t key[16], const void *data, size_t len, struct fh *fh);

#endif
