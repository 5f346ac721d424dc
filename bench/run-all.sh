#!/bin/sh
# run-all.sh - `make bench`: every benchmark of bench/ against its anchor, in
# one run, and a report an administrator can read as pictures.
#
#   rpc-null    NULL calls/s, jnfsd against NFS-Ganesha (run-rpc-null.sh)
#   sync-loop   synchronous writes, the engine against kernel XFS on a loop
#               device over an image on the same disk (run-sync-loop.sh)
#   fs-scale    lookups in a 1,000- and a 100,000-entry directory, the
#               engine and kernel XFS (run-fs-scale.sh)
#   nfs3-untar  an untar over NFSv3, jnfsd against NFS-Ganesha over XFS
#               (run-nfs3-untar.sh)
#   nfs4-untar  the same untar over NFSv4.1, jnfsd against NFS-Ganesha's
#               NFSv4.1 over XFS (run-nfs4-untar.sh)
#   pnfs-commit a pNFS LAYOUTCOMMIT after each overwrite, as served (an
#               fdatasync) against a synchronous transaction of the same
#               build (run-pnfs-commit.sh)
#   nfs-lookup  an NFS LOOKUP in a 100,000-entry directory against one in a
#               1,000-entry directory, jnfsd against itself, over NFSv3 and
#               NFSv4.1 (run-nfs-lookup.sh)
#   stream      MiB/s moving large files over NFSv3 and NFSv4.1, jnfsd
#               against NFS-Ganesha over XFS, with the disk (O_DIRECT) and
#               loopback TCP as ceilings, and a pNFS cell (run-stream.sh)
# Each script alternates the systems it compares round by round; they run
# one after the other. The report goes to a dated folder,
# $BENCH_REPORTS/YYYY-MM-DD-HHMMSS (default bench-reports/): raw/ (every
# CSV and text file the scripts write, each one's log, status.csv),
# report.md (the table: workload, jnfs, anchor, ratio with the run's
# min-max, goal, met or not), results.csv, one PNG per benchmark
# (bench/report.py). A benchmark that fails is named in the report and the
# others still run.
#
# Needs root (loop devices, mounts, network namespaces); installs what it
# needs (scripts/install-deps, scripts/install-bench-deps) and builds.
# About 30-35 minutes on 2 cores; BENCH_QUICK=1 runs fewer rounds, files and
# seconds (about 7 minutes): for trying the machinery, not for conclusions.
# BASELINE_JNFSD (and BASELINE_JNFS) are passed to run-rpc-null.sh,
# run-nfs3-untar.sh and run-nfs4-untar.sh, which then also measure that
# older jnfsd (the report gets a table of new/old).
set -eu
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "make bench: needs root (loop devices, mounts, network namespaces)" >&2
	exit 1
fi
scripts/install-deps
scripts/install-bench-deps
make -s build >/dev/null

QUICK=${BENCH_QUICK:-0}
REPORT=${BENCH_REPORTS:-bench-reports}/$(date +%Y-%m-%d-%H%M%S)
RAW=$REPORT/raw
mkdir -p "$RAW"
export OUT="$RAW"

# what each script runs: full, or quick (fewer rounds, files, seconds)
if [ "$QUICK" = 1 ]; then
	RPC_NULL_ENV="ROUNDS=2"
	RPC_NULL_ARGS="1 1 16"
	SYNC_LOOP_ENV="IMAGE_MIB=1024"
	SYNC_LOOP_ARGS="--threads 1,8 --seconds 1 --rounds 2"
	FS_SCALE_ENV="IMAGE_MIB=1024"
	FS_SCALE_ARGS="--inodes 1 --sparse-gib 1 --image-gib 4 --lookups 20000"
	UNTAR_ENV="ROUNDS=2 MODES=filesync FILES_1=300 FILES_N=1200 IMAGE_MIB=1024"
	UNTAR_ARGS="1 8"
	PNFS_ARGS="2"
	NFS_LOOKUP_ARGS="--big 20000 --lookups 5000 --rounds 2"
	STREAM_ENV="BENCH_QUICK=1"
else
	RPC_NULL_ENV="ROUNDS=3"
	RPC_NULL_ARGS="3 1 4 16"
	SYNC_LOOP_ENV="IMAGE_MIB=2048"
	SYNC_LOOP_ARGS="--threads 1,8 --seconds 3 --rounds 3"
	FS_SCALE_ENV="IMAGE_MIB=1024"
	FS_SCALE_ARGS=""
	UNTAR_ENV="ROUNDS=3 FILES_1=2000 FILES_N=8000 IMAGE_MIB=4096"
	UNTAR_ARGS="1 8"
	PNFS_ARGS="5"
	NFS_LOOKUP_ARGS=""
	STREAM_ENV="ROUNDS=3"
fi

{
	echo "jnfs $(./build/jnfsd --version | cut -d' ' -f2-) on $(uname -n), kernel $(uname -r), $(nproc) CPUs, $(free -g | awk '/^Mem:/ { print $2 }') GiB"
	echo "started $(date '+%Y-%m-%d %H:%M:%S %z'), BENCH_QUICK=$QUICK, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	[ -n "${BASELINE_JNFSD:-}" ] && echo "baseline: BASELINE_JNFSD=$BASELINE_JNFSD${BASELINE_JNFS:+ BASELINE_JNFS=$BASELINE_JNFS}"
	echo "rpc-null:   $RPC_NULL_ENV bench/run-rpc-null.sh $RPC_NULL_ARGS"
	echo "sync-loop:  $SYNC_LOOP_ENV bench/run-sync-loop.sh $SYNC_LOOP_ARGS"
	echo "fs-scale:   $FS_SCALE_ENV bench/run-fs-scale.sh $FS_SCALE_ARGS"
	echo "nfs3-untar: $UNTAR_ENV bench/run-nfs3-untar.sh $UNTAR_ARGS"
	echo "nfs4-untar: $UNTAR_ENV bench/run-nfs4-untar.sh $UNTAR_ARGS"
	echo "pnfs-commit: bench/run-pnfs-commit.sh $PNFS_ARGS"
	echo "nfs-lookup: bench/run-nfs-lookup.sh $NFS_LOOKUP_ARGS"
	echo "stream:     $STREAM_ENV bench/run-stream.sh"
} >"$REPORT/run.txt"
cat "$REPORT/run.txt"

echo "name,exit_status,seconds" >"$RAW/status.csv"
bench() { # name env args script
	_name=$1 _env=$2 _args=$3 _script=$4
	echo "make bench: $_name ..." >&2
	_t0=$(date +%s)
	_status=0
	# word splitting of env and args is wanted: they are lists
	# shellcheck disable=SC2086
	env $_env sh "$_script" $_args >"$RAW/$_name.log" 2>&1 || _status=$?
	_t1=$(date +%s)
	echo "$_name,$_status,$((_t1 - _t0))" >>"$RAW/status.csv"
	echo "make bench: $_name: exit $_status after $((_t1 - _t0)) s (log: $RAW/$_name.log)" >&2
}
bench rpc-null "$RPC_NULL_ENV" "$RPC_NULL_ARGS" bench/run-rpc-null.sh
bench sync-loop "$SYNC_LOOP_ENV" "$SYNC_LOOP_ARGS" bench/run-sync-loop.sh
bench fs-scale "$FS_SCALE_ENV" "$FS_SCALE_ARGS" bench/run-fs-scale.sh
bench nfs3-untar "$UNTAR_ENV" "$UNTAR_ARGS" bench/run-nfs3-untar.sh
bench nfs4-untar "$UNTAR_ENV" "$UNTAR_ARGS" bench/run-nfs4-untar.sh
bench pnfs-commit "" "$PNFS_ARGS" bench/run-pnfs-commit.sh
bench nfs-lookup "" "$NFS_LOOKUP_ARGS" bench/run-nfs-lookup.sh
bench stream "$STREAM_ENV" "" bench/run-stream.sh

python3=/usr/bin/python3
[ -x "$python3" ] || python3=python3
"$python3" bench/report.py "$REPORT"
echo
sed -n '/^| benchmark/,/^$/p' "$REPORT/report.md"
echo "make bench: report in $REPORT/report.md"
