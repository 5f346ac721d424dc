/*
 * untar_counters.h - the server-side counters nfs3-untar and nfs4-untar
 * read before and after their timed phase, so that they can print log
 * writes and device flushes per file. Kept apart from nfs3_untar.c because the jnfsd side
 * talks to the administration program with jnfs's own RPC client, whose
 * headers must not meet libnfs's.
 *
 * Two sources:
 *   jnfsd   the administration program (daemon/admin.h) on the server's
 *           own port: log.buffer_writes, log.checkpoints, and dev.flushes +
 *           dev.fua_writes (each is one fdatasync or RWF_DSYNC write on
 *           the image: what a cache flush costs the disk under it);
 *   XFS     /sys/fs/xfs/DEV/stats/stats ("log" line: log writes, forces)
 *           and /sys/block/DEV/stat (field 16: flush requests the block
 *           layer completed on DEV; a loop device has no FUA, so a FUA
 *           write shows there as a flush after the write, and every flush
 *           is an fsync of the loop's backing file).
 */
#ifndef JNFS_BENCH_UNTAR_COUNTERS_H
#define JNFS_BENCH_UNTAR_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

struct untar_counters {
	bool have_log, have_flush;
	uint64_t log_writes;  /* log buffer (XFS: iclog) writes */
	uint64_t log_forces;  /* jnfsd: checkpoints written; XFS: log force calls */
	const char *forces_name; /* "checkpoints" or "xfs_log_forces" */
	uint64_t flushes;     /* device cache flushes, FUA writes included */
};

/* jnfsd's counters through the administration program at ADDR:PORT.
 * Returns 0 or -errno. */
int untar_counters_jnfsd(const char *addr, struct untar_counters *c);

/* A kernel XFS filesystem on block device DEV ("loop3"). Returns 0 or
 * -errno; a missing file leaves the matching have_ flag false. */
int untar_counters_xfs(const char *dev, struct untar_counters *c);

/* The disk under both images (e.g. "vda"), shared with everything else on
 * the machine: flush requests completed and milliseconds spent on them
 * (/sys/block/DEV/stat fields 16 and 17). Returns 0 or -errno. */
int untar_disk_flushes(const char *dev, uint64_t *flushes, uint64_t *ms);

#endif
