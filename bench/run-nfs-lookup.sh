#!/bin/sh
# run-nfs-lookup.sh - build/bench/nfs-lookup against jnfsd: a LOOKUP in a
# 100,000-entry directory against one in a 1,000-entry directory, over
# NFSv3 and NFSv4.1, on one server (bench/nfs_lookup.c says what a lookup
# is in each protocol and how the rounds go).
#
# jnfsd serves a fresh image of its own (IMAGE_MIB, in $BENCH_DIR, default
# /var/tmp) on a free loopback port, without rpcbind. The export is async:
# only the set-up writes (the CREATEs that fill the directories), and what
# is measured, LOOKUP, writes nothing; the set-up is then made durable by
# nothing but the server's own log forces. jnfsd's counters (`jnfs stat
# --server`) are read before the timed rounds and after them: the metadata
# buffer cache's hits, reads and evictions (fs.buf_*) say whether the
# big directory's blocks stayed cached.
#
# The machine may be shared: the program alternates the small and big
# directory within each round (who goes first changes every round) so
# that load from elsewhere hits both alike, and reports the median of the
# per-round ratios with their smallest and largest.
#
# usage: bench/run-nfs-lookup.sh [nfs-lookup options...]
#   e.g. bench/run-nfs-lookup.sh --big 10000 --lookups 5000   (quick)
# environment: THREADS (jnfsd --threads, 8), IMAGE_MIB (2048), BENCH_DIR,
#   OUT (build/bench-results)
# Results in $OUT: nfs-lookup.txt (the "name value" lines and the
# counters), nfs-lookup.csv (one row per protocol and lookups in flight).
set -eu
cd "$(dirname "$0")/.."
THREADS=${THREADS:-8}
IMAGE_MIB=${IMAGE_MIB:-2048}
BENCH_DIR=${BENCH_DIR:-/var/tmp}
OUT=${OUT:-build/bench-results}

[ -x build/bench/nfs-lookup ] || make -s build >/dev/null
if [ ! -x build/bench/nfs-lookup ]; then
	echo "run-nfs-lookup: build/bench/nfs-lookup was not built (libnfs-dev missing?)" >&2
	exit 1
fi

TMP=$(mktemp -d "$BENCH_DIR/jnfs-nfs-lookup.XXXXXX")
JPID=
cleanup() {
	if [ -n "$JPID" ]; then
		kill "$JPID" 2>/dev/null || true
		wait "$JPID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

printf '/ 127.0.0.1(rw,async,insecure,no_root_squash)\n' >"$TMP/exports"
./build/jnfsd --image "$TMP/jnfs.img" --size "${IMAGE_MIB}M" --exports "$TMP/exports" \
	--listen 127.0.0.1:0 --port-file "$TMP/ports" --threads "$THREADS" --rpcbind off \
	>"$TMP/jnfsd.out" 2>"$TMP/jnfsd.err" &
JPID=$!
for _ in $(seq 100); do
	[ -s "$TMP/ports" ] && break
	sleep 0.1
done
PORT=$(head -1 "$TMP/ports" 2>/dev/null || true)
if [ -z "$PORT" ]; then
	echo "run-nfs-lookup: jnfsd did not start" >&2
	cat "$TMP/jnfsd.err" >&2
	exit 1
fi

mkdir -p "$OUT"
status=0
./build/bench/nfs-lookup --port "$PORT" --csv "$OUT/nfs-lookup.csv" "$@" \
	>"$TMP/lookup.out" || status=$?
./build/jnfs stat --server "127.0.0.1:$PORT" >"$TMP/stat.after" 2>/dev/null || true
{
	echo "nfs_lookup.server jnfsd"
	echo "nfs_lookup.jnfsd_threads $THREADS"
	cat "$TMP/lookup.out"
	grep -E '^fs\.(buf_|inodes|icache|dcache)' "$TMP/stat.after" |
		sed 's/^/nfs_lookup.jnfsd./' || true
} >"$OUT/nfs-lookup.txt"
cat "$OUT/nfs-lookup.txt"
[ -s "$OUT/nfs-lookup.csv" ] && column -s, -t <"$OUT/nfs-lookup.csv"
exit $status
