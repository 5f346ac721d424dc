#!/bin/sh
# run-sync-loop.sh - build/bench/sync-loop, jnfs against kernel XFS on one disk.
#
# Mounts kernel XFS from a loop device over an image file in $BENCH_DIR
# (bench/xfs-loop.sh: default /var/tmp, the same disk as the engine's image)
# and runs sync-loop with the engine's image in the same directory and the
# XFS mount as --xfs-dir. Needs root (losetup, mount) and
# scripts/install-bench-deps.
#
# Results go to $OUT (default build/bench-results): sync-loop.txt (the
# "name value" lines), sync-loop.csv and, with gnuplot, sync-loop.png.
#
# usage: bench/run-sync-loop.sh [sync-loop options...]
#   e.g. bench/run-sync-loop.sh --threads 1,8 --seconds 5 --rounds 3
# environment: BENCH_DIR, OUT, IMAGE_MIB (both images, default 2048),
#   LOOP_DIRECT_IO=off (the loop device goes through the page cache to its
#   image; default on, like the engine, which reaches its image with O_DIRECT)
set -eu
cd "$(dirname "$0")/.."
OUT=${OUT:-build/bench-results}
. bench/xfs-loop.sh

xfs_loop_setup sync-loop

mkdir -p "$OUT"
./build/bench/sync-loop --dir "$TMP" --image-mib "$IMAGE_MIB" --xfs-dir "$MNT" --csv "$@" \
	>"$OUT/sync-loop.out"
grep -v '^csv,' "$OUT/sync-loop.out" >"$OUT/sync-loop.txt"
sed -n 's/^csv,//p' "$OUT/sync-loop.out" >"$OUT/sync-loop.csv"
rm -f "$OUT/sync-loop.out"
cat "$OUT/sync-loop.txt"
echo
column -s, -t <"$OUT/sync-loop.csv" 2>/dev/null || cat "$OUT/sync-loop.csv"

if command -v gnuplot >/dev/null 2>&1; then
	# one cluster per workload and thread count: jnfs and XFS ops/s; below,
	# the paired jnfs/XFS ratio against the goal of 1.0
	awk -F, 'NR > 1 { printf "\"%s T=%s\" %s %s %s\n", $1, $2, $3, $4, $6 }' \
		"$OUT/sync-loop.csv" >"$TMP/plot.dat"
	gnuplot <<GP
set terminal png size 1200,900 noenhanced
set output "$OUT/sync-loop.png"
set multiplot layout 2,1 title "sync-loop: jnfs engine vs kernel XFS (loop device over an image file, same disk)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -25 scale 0 font ",9"
set grid ytics
set key top left
set ylabel "ops/s (median of rounds)"
plot "$TMP/plot.dat" using 2:xtic(1) title "jnfs", "" using 3 title "XFS"
set ylabel "jnfs / XFS (median of paired rounds)"
set yrange [0:*]
plot "$TMP/plot.dat" using 4:xtic(1) title "ratio" lc rgb "#4060c0", 1.0 with lines lw 2 lc rgb "red" title "goal"
unset multiplot
GP
	echo "run-sync-loop: plot in $OUT/sync-loop.png" >&2
fi
