#!/bin/sh
# run-fs-scale.sh - build/bench/fs-scale, with kernel XFS beside it for the
# big-directory lookups.
#
# Mounts kernel XFS from a loop device over an image file in $BENCH_DIR
# (bench/xfs-loop.sh: default /var/tmp, the same disk as the engine's image)
# and runs fs-scale with its image in the same directory and the XFS mount
# as --xfs-dir: the 1,000- and 100,000-entry directories are made on both,
# and the same names are looked up on both in the same rounds. Needs root
# (losetup, mount) and scripts/install-bench-deps.
#
# Results go to $OUT (default build/bench-results): fs-scale.txt (the
# "name value" lines).
#
# usage: bench/run-fs-scale.sh [fs-scale options...]
#   e.g. bench/run-fs-scale.sh --inodes 1 --sparse-gib 1 --image-gib 4
#        (the directory part only, in a few seconds)
# environment: BENCH_DIR, OUT, IMAGE_MIB (the XFS image, default 1024)
set -eu
cd "$(dirname "$0")/.."
OUT=${OUT:-build/bench-results}
IMAGE_MIB=${IMAGE_MIB:-1024}
. bench/xfs-loop.sh

xfs_loop_setup fs-scale

mkdir -p "$OUT"
status=0
./build/bench/fs-scale --dir "$TMP" --xfs-dir "$MNT" "$@" >"$OUT/fs-scale.txt" || status=$?
cat "$OUT/fs-scale.txt"
exit $status
