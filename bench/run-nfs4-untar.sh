#!/bin/sh
# run-nfs4-untar.sh - build/bench/nfs4-untar against jnfsd and NFS-Ganesha's
# NFSv4.1, side by side in one run, and the ratio jnfsd/Ganesha.
#
# Storage, namespace, rounds, the table and BASELINE_JNFSD are those of
# every untar benchmark (bench/untar-common.sh says how). What is NFSv4's:
# the clients are the project's own (src/nfs4c), one connection, client ID
# and session each; a file is SEQUENCE PUTFH OPEN(create) GETFH, then its
# WRITE (FILE_SYNC, or UNSTABLE and a COMMIT), then CLOSE; a directory is
# CREATE(NF4DIR) (bench/nfs4_untar.c). Ganesha serves NFSv4.1 only
# (Minor_Versions = 1), from its pseudo file system at /bench, without a
# grace period at its start (nor has jnfsd one on a fresh image), with its
# client records in the run's directory rather than the machine's
# /var/lib/nfs.
#
# Every create is durable before its reply, on both servers:
#   jnfsd    the export line says sync: a compound that changed metadata
#            forces the journal once, to the highest commit sequence its
#            operations made, before its reply is sent (docs/nfs4.md,
#            "Stability"); OPEN(create) and CREATE are such compounds.
#   Ganesha  has no such export option: it answers OPEN(create) as soon
#            as openat(O_CREAT) returns, CREATE as soon as mkdir() does.
#            XFS is therefore mounted wsync, which commits every namespace
#            transaction synchronously (a log force before the system call
#            returns): what knfsd's sync export gets from XFS, and what
#            makes Ganesha's replies as durable as jnfsd's.
# A FILE_SYNC WRITE and a COMMIT are durable before their replies on both
# as the protocol asks (jnfsd: an fsync of the file, docs/design.md rule 8;
# Ganesha: its VFS FSAL syncs the file on XFS).
#
# usage: bench/run-nfs4-untar.sh [CLIENTS...]        (default: 1 8)
# environment: ROUNDS (5), MODES ("filesync unstable"), FILES_1 (files at
#   C=1, default 3000), FILES_N (files at C>1, default 12000), THREADS
#   (jnfsd --threads, default 8), BENCH_DIR, IMAGE_MIB (4096), JNFS_LOG_MIB
#   (jnfs journal size, default: the size of the XFS journal), OUT
#   (build/bench-results), BASELINE_JNFSD, BASELINE_JNFS, LOOP_DIRECT_IO
#   (on)
# Results in $OUT: nfs4-untar-runs.csv (every run), nfs4-untar.csv (the
# table), nfs4-untar.txt (as printed), nfs4-untar.png (gnuplot).
# The goal (bench/report.py): jnfsd/Ganesha >= 1.5 at 8 clients, >= 1.2 at 1.
set -eu
cd "$(dirname "$0")/.."

UNTAR=nfs4-untar
UNTAR_PROTO=NFSv4.1
UNTAR_OPS="mkdir open write commit close"

# No Bind_addr: see run-nfs3-untar.sh.
ganesha_conf() {
	mkdir -p "$TMP/ganesha-recovery"
	cat <<CONF
NFS_CORE_PARAM {
	NFS_Port = $GPORT;
	NFS_Protocols = 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFSV4 {
	Graceless = true;
	Minor_Versions = 1;
	RecoveryBackend = fs;
	RecoveryRoot = $TMP/ganesha-recovery;
}
LOG { Default_Log_Level = WARN; }
EXPORT {
	Export_Id = 1;
	Path = $MNT;
	Pseudo = /bench;
	Protocols = 4;
	Transports = TCP;
	Access_Type = RW;
	Squash = No_Root_Squash;
	SecType = sys;
	FSAL { Name = VFS; }
}
CONF
}

client_ganesha() { "$BENCH" "$@" --port "$GPORT" --export /bench; }

. bench/untar-common.sh
untar_main "$@"
