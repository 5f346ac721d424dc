/*
 * fuzz_nfs4.h - what the nfs4 fuzz target (fuzz_nfs4.c) and the writer of
 * its seeds (nfs4_seeds.c) agree on.
 *
 * An input is the body of an NFSv4 COMPOUND call (COMPOUND4args: tag,
 * minor version, operations) as a client encodes it. The values a file
 * cannot know - the harness's session id and client ID, and the next
 * sequence id of a slot - are written as placeholders, which the harness
 * replaces before it sends the call:
 *   - every 16 bytes equal to FUZZ_NFS4_SESSIONID: the current session id;
 *   - every 8 bytes equal to FUZZ_NFS4_CLIENTID (big-endian, as XDR has
 *     it): the client ID (open and lock owners, CREATE_SESSION,
 *     DESTROY_CLIENTID);
 *   - a first operation SEQUENCE with sequence id 0 and a slot below
 *     FUZZ_NFS4_SLOTS: that slot's next sequence id;
 *   - every 16 bytes equal to FUZZ_NFS4_DEVICEID: the pNFS block device's
 *     id (GETDEVICEINFO, the extents of a LAYOUTCOMMIT), which depends on
 *     the filesystem's UUID.
 * Anything else is sent as it is.
 */
#ifndef JNFS_FUZZ_FUZZ_NFS4_H
#define JNFS_FUZZ_FUZZ_NFS4_H

#define FUZZ_NFS4_SESSIONID "jnfs-fuzz-sessid"
#define FUZZ_NFS4_CLIENTID  0x6a6e66732d636964ull /* "jnfs-cid" */
#define FUZZ_NFS4_SLOTS	    64
#define FUZZ_NFS4_DEVICEID  "jnfs-fuzz-devid!"

#endif
