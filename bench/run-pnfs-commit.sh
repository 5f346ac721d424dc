#!/bin/sh
# run-pnfs-commit.sh - what a pNFS LAYOUTCOMMIT costs: made stable the way
# fdatasync is (docs/design.md rule 6) against a synchronous transaction.
#
# jnfsd serves an image file with a `pnfs` export on the 1 ms flush model
# (--flush-latency-us 1000: every cache flush and FUA write of the image
# takes 1 ms more, a disk with a volatile cache), and `jnfs pnfs overwrite`,
# on the same machine with the image file as its disk, writes a file and
# then overwrites it in W-byte writes through its layout, each followed by
# a LAYOUTCOMMIT (the seed's workloads):
#
#   1 thread   16 MiB in 64 KiB writes   256 commits
#   4 threads  16 MiB in 64 KiB writes   1,024 commits (a file each)
#   1 thread    4 MiB in 4 KiB writes    1,024 commits
#
# each with the server as it is ("datasync": an overwrite that keeps the
# size logs only its timestamps and costs one cache flush, no journal
# write) and with --bench-sync-layoutcommit ("sync": the whole inode logged
# and the journal forced every time, as a synchronous transaction; a
# benchmark-only switch of the same build). The modes take turns round by
# round (which goes first changes every round); each run has a fresh jnfsd
# and image. Printed per workload (medians of the rounds): the run's time,
# the client's mean LAYOUTCOMMIT latency in each mode and their ratio
# sync/datasync with the per-round ratios' min and max, and the server's
# journal writes and data device flushes per commit (its counters, read
# by `jnfs pnfs` before and after the overwrites); the last column says
# whether every commit of the datasync runs cost no journal write and one
# flush (0 journal writes and as many flushes as commits, in every round).
# Not part of the test suite; no root needed.
#
# usage: bench/run-pnfs-commit.sh [ROUNDS]   (default 5)
# environment: FLUSH_US (1000), THREADS (jnfsd --threads, 8), WORK (where
#   the images go; default a temporary directory under build/), OUT
#   (build/bench-results)
# Results in $OUT: pnfs-commit-runs.csv (every run), pnfs-commit.csv (the
# table), pnfs-commit.txt (as printed).
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${1:-${ROUNDS:-5}}
FLUSH_US=${FLUSH_US:-1000}
THREADS=${THREADS:-8}
OUT=${OUT:-build/bench-results}

make -s build >/dev/null
mkdir -p build "$OUT"
TMP=$(mktemp -d "${WORK:-build}/pnfs-commit.XXXXXX")
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

echo "/ 127.0.0.1(rw,sync,insecure,no_root_squash,pnfs)" >"$TMP/exports"

# start jnfsd in mode $1 (sync or datasync) on a fresh image; sets JPID, ADDR
start_jnfsd() {
	rm -f "$TMP/img" "$TMP/ports"
	_extra=
	[ "$1" = sync ] && _extra=--bench-sync-layoutcommit
	# shellcheck disable=SC2086
	./build/jnfsd --image "$TMP/img" --size 1G --exports "$TMP/exports" \
		--listen 127.0.0.1:0 --port-file "$TMP/ports" --rpcbind off \
		--threads "$THREADS" --flush-latency-us "$FLUSH_US" $_extra \
		>"$TMP/jnfsd.out" 2>"$TMP/jnfsd.err" &
	JPID=$!
	for _ in $(seq 300); do
		[ -s "$TMP/ports" ] && break
		kill -0 "$JPID" 2>/dev/null || { cat "$TMP/jnfsd.err" >&2; exit 1; }
		sleep 0.1
	done
	[ -s "$TMP/ports" ] || { echo "run-pnfs-commit: jnfsd did not start" >&2; exit 1; }
	ADDR=127.0.0.1:$(head -n 1 "$TMP/ports")
}

stop_jnfsd() {
	kill "$JPID"
	wait "$JPID" || { echo "run-pnfs-commit: jnfsd failed" >&2; cat "$TMP/jnfsd.err" >&2; exit 1; }
	JPID=
}

WORKLOADS="1:16M:64K 4:16M:64K 1:4M:4K"
RUNS="$OUT/pnfs-commit-runs.csv"
echo "round,mode,threads,file,write,commits,seconds,commit_us_mean,commit_us_p50,commit_us_p99,log_writes,flushes,checkpoints" >"$RUNS"
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then modes="datasync sync"; else modes="sync datasync"; fi
	for w in $WORKLOADS; do
		t=${w%%:*} rest=${w#*:}
		size=${rest%%:*} io=${rest#*:}
		for m in $modes; do
			start_jnfsd "$m"
			./build/jnfs pnfs "nfs://$ADDR/" --device "$TMP/img" overwrite "ow" \
				--size "$size" --io "$io" --threads "$t" >"$TMP/one.out" 2>"$TMP/one.err" || {
				echo "run-pnfs-commit: jnfs pnfs failed ($m, $w)" >&2
				cat "$TMP/one.err" >&2
				exit 1
			}
			stop_jnfsd
			v() { sed -n "s/^pnfs\.overwrite\.$1 //p" "$TMP/one.out"; }
			echo "$r,$m,$t,$size,$io,$(v commits),$(v seconds),$(v commit_us_mean),$(v commit_us_p50),$(v commit_us_p99),$(v server.log_writes),$(v server.flushes),$(v server.checkpoints)" >>"$RUNS"
			echo "run-pnfs-commit: round $r $m T=$t $size/$io: $(v commits) commits in $(v seconds) s, mean $(v commit_us_mean) us, $(v server.log_writes) log writes, $(v server.flushes) flushes" >&2
		done
	done
done

# the table: medians over the rounds per workload and mode; the ratio of
# the mean commit latencies sync/datasync (median, and the min and max of
# the per-round ratios)
awk -F, '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function med(w, m, col,    r, n, a) {
	n = 0
	for (r = 1; r <= rounds; r++)
		if ((w "," r "," m) in have) a[++n] = v[w "," r "," m "," col]
	return n ? median(a, n) : 0
}
NR > 1 {
	w = $3 "," $4 "," $5
	if (!(w in seen)) { seen[w] = 1; ws[++nw] = w }
	if ($1 > rounds) rounds = $1
	k = w "," $1 "," $2
	have[k] = 1
	v[k ",commits"] = $6; v[k ",ms"] = $7 * 1000; v[k ",mean"] = $8
	v[k ",lw"] = ($6 > 0 ? $11 / $6 : 0); v[k ",fl"] = ($6 > 0 ? $12 / $6 : 0)
	if ($2 == "datasync" && ($11 != 0 || $12 != $6)) notevery[w] = 1
}
END {
	print "threads,file,write,commits,sync_ms,datasync_ms,sync_commit_ms,datasync_commit_ms,ratio,ratio_min,ratio_max,sync_log_writes_per_commit,datasync_log_writes_per_commit,sync_flushes_per_commit,datasync_flushes_per_commit,datasync_every_commit_0_log_1_flush"
	for (i = 1; i <= nw; i++) {
		w = ws[i]
		lo = ""; hi = ""; n = 0
		for (r = 1; r <= rounds; r++) {
			if (!((w "," r ",sync") in have) || !((w "," r ",datasync") in have)) continue
			d = v[w "," r ",datasync,mean"]
			if (d <= 0) continue
			q = v[w "," r ",sync,mean"] / d
			rr[++n] = q
			if (lo == "" || q < lo) lo = q
			if (hi == "" || q > hi) hi = q
		}
		printf "%s,%d,%.0f,%.0f,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f,%.3f,%.3f,%s\n", w,
		       med(w, "datasync", "commits"), med(w, "sync", "ms"), med(w, "datasync", "ms"),
		       med(w, "sync", "mean") / 1000, med(w, "datasync", "mean") / 1000,
		       (n ? median(rr, n) : 0), lo, hi, med(w, "sync", "lw"), med(w, "datasync", "lw"),
		       med(w, "sync", "fl"), med(w, "datasync", "fl"), (w in notevery ? "no" : "yes")
		delete rr
	}
}' "$RUNS" >"$OUT/pnfs-commit.csv"

{
	echo "LAYOUTCOMMIT after each overwrite, jnfs pnfs on the image file, --flush-latency-us $FLUSH_US, medians of $ROUNDS rounds"
	echo "sync: --bench-sync-layoutcommit (a synchronous transaction); datasync: as served (docs/design.md rule 6)"
	echo
	printf "%-7s %-6s %-6s %7s %16s %22s %18s %16s %16s %s\n" threads file write commits \
		"run ms sync/ds" "ms each sync -> ds" "ratio (min-max)" "log wr/commit" "flushes/commit" \
		"ds: every commit 0 log, 1 flush"
	awk -F, 'NR > 1 {
		printf "%-7s %-6s %-6s %7s %7.0f / %-6.0f %9.2f -> %-9.2f %5.2f (%.2f-%.2f) %6.2f / %-6.2f %6.2f / %-6.2f %s\n",
		       $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16
	}' "$OUT/pnfs-commit.csv"
	echo
	echo "CSV:"
	cat "$OUT/pnfs-commit.csv"
} | tee "$OUT/pnfs-commit.txt"
