#!/bin/sh
# run-nfs3-untar.sh - build/bench/nfs3-untar against jnfsd and NFS-Ganesha's
# NFSv3, side by side in one run, and the ratio jnfsd/Ganesha.
#
# Storage, namespace, rounds, the table and BASELINE_JNFSD are those of
# every untar benchmark (bench/untar-common.sh says how). What is NFSv3's:
# the clients are libnfs's (MOUNT, then MKDIR, CREATE, WRITE, COMMIT), and
# Ganesha serves NFSv3 only, which it will not do without registering with
# rpcbind (the namespace has its own).
#
# Both exports are sync in the NFSv3 sense: jnfsd's export line says sync
# (every metadata procedure forces the journal to its own transaction
# before replying); Ganesha has no such export option and replies to
# CREATE/MKDIR as soon as the VFS call returns, so XFS is mounted wsync,
# which commits every namespace transaction synchronously: that is what
# knfsd's sync export gets from XFS, and what makes Ganesha's replies as
# durable as jnfsd's.
#
# usage: bench/run-nfs3-untar.sh [CLIENTS...]        (default: 1 8)
# environment: ROUNDS (5), MODES ("filesync unstable"), FILES_1 (files at
#   C=1, default 3000), FILES_N (files at C>1, default 12000), THREADS
#   (jnfsd --threads, default 8), BENCH_DIR, IMAGE_MIB (4096), JNFS_LOG_MIB
#   (jnfs journal size, default: the size of the XFS journal), OUT
#   (build/bench-results), BASELINE_JNFSD, BASELINE_JNFS, LOOP_DIRECT_IO
#   (on)
# Results in $OUT: nfs3-untar-runs.csv (every run), nfs3-untar.csv (the
# table), nfs3-untar.txt (as printed), nfs3-untar.png (gnuplot).
set -eu
cd "$(dirname "$0")/.."

UNTAR=nfs3-untar
UNTAR_PROTO=NFSv3
UNTAR_OPS="mkdir create write commit"

# No Bind_addr: Ganesha resolves it with AI_ADDRCONFIG, which finds nothing
# in a namespace that has only lo; the namespace has no other interface, so
# it listens on 127.0.0.1 all the same.
ganesha_conf() {
	cat <<CONF
NFS_CORE_PARAM {
	NFS_Port = $GPORT;
	MNT_Port = $GMPORT;
	NFS_Protocols = 3;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFSV4 { Graceless = true; }
LOG { Default_Log_Level = WARN; }
EXPORT {
	Export_Id = 1;
	Path = $MNT;
	Pseudo = /bench;
	Protocols = 3;
	Access_Type = RW;
	Squash = No_Root_Squash;
	FSAL { Name = VFS; }
}
CONF
}

client_ganesha() { "$BENCH" "$@" --port "$GPORT" --mount-port "$GMPORT" --export "$MNT"; }

. bench/untar-common.sh
untar_main "$@"
