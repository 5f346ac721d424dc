#!/bin/sh
# soak.sh - build/bench/nfs-load against a jnfsd that is killed and
# restarted under it, with the server's memory, descriptors and threads
# sampled every second.
#
# jnfsd serves a fresh image through the crash device (--crash): what it
# has not flushed lives only in its memory, so SIGKILL is a power cut.
# nfs-load runs CLIENTS verifying clients for SECONDS (bench/load/work.c:
# each keeps a model of what every reply promised). Meanwhile the server is
# killed at random moments - KILLS of them spread over the run, or one
# every KILL_EVERY seconds (+-25%) - then `jnfs check` must find the image
# clean (after log recovery), and jnfsd restarts on the same port. The
# clients reconnect, send again what was in flight, check that everything
# the server had acknowledged as stable is there (UNSTABLE writes only
# once COMMITted with the same verifier) and send again what was not, and
# at the end check everything once more. Then jnfsd stops (SIGTERM) and
# `jnfs check` must find the image clean.
#
# Every second the sampler records jnfsd's VmRSS, open descriptors and
# threads (/proc/PID/status, /proc/PID/fd); nfs-load records ops/s and
# latency per second. With gnuplot (scripts/install-bench-deps) both go
# into OUT/soak.png, kills marked.
#
# Passes (exit 0) only when nfs-load reports no mismatch and no lost
# acknowledged operation and every client reached the server to the end,
# every `jnfs check` is clean, and every kill was done. Needs no root.
#
# usage: bench/soak.sh [--clients N] [--seconds S] [--kills K | --kill-every S]
#                      [--size SIZE] [--threads T] [--flush-latency-us U] [--seed S]
#                      [--fill] [--out DIR] [--warmup S] [--no-plot]
#        bench/soak.sh --replot DIR     (draw DIR/soak.png again from its CSVs)
#                      [--jnfsd PATH] [--jnfs PATH] [--load PATH] [-- NFS-LOAD-ARGS...]
# defaults: 16 clients, 60 s, 5 kills, a 1G image, 4 threads, seed 1, OUT a
# temporary directory removed when the run passes (kept and named when it
# fails), warm-up (left out of the RSS figures) 20% of the run, at most 60 s.
# --fill: nfs-load's full-disk workload (give a small --size: the image
# must fill): appending writes of 64 KiB, and a client that gets NOSPC
# removes its largest file and goes on; the run then also needs NOSPC
# answers and writes that succeeded after one (every acknowledged write is
# checked like any other). Prints "name value" lines: soak.* and
# nfs-load's load.*.
set -eu

CLIENTS=16
SECONDS_=60
KILLS=5
KILL_EVERY=
SIZE=1G
THREADS=4
FLUSH_US=0
SEED=1
FILL=
OUT=
WARMUP=
PLOT=1
REPLOT=
here=$(cd "$(dirname "$0")/.." && pwd)
JNFSD=$here/build/jnfsd
JNFS=$here/build/jnfs
LOAD=$here/build/bench/nfs-load

while [ $# -gt 0 ]; do
	case $1 in
	--clients) CLIENTS=$2; shift ;;
	--seconds) SECONDS_=$2; shift ;;
	--kills) KILLS=$2; KILL_EVERY=; shift ;;
	--kill-every) KILL_EVERY=$2; shift ;;
	--size) SIZE=$2; shift ;;
	--threads) THREADS=$2; shift ;;
	--flush-latency-us) FLUSH_US=$2; shift ;;
	--seed) SEED=$2; shift ;;
	--fill) FILL=--fill ;;
	--out) OUT=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--no-plot) PLOT= ;;
	--replot) REPLOT=$2; shift ;;
	--jnfsd) JNFSD=$2; shift ;;
	--jnfs) JNFS=$2; shift ;;
	--load) LOAD=$2; shift ;;
	--) shift; break ;;
	*) echo "soak: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

log() { echo "soak: $*" >&2; }

# plot OUT/load.csv, OUT/server.csv and OUT/kills.txt into OUT/soak.png
plot() {
	kl=""
	while read -r k; do
		kl="$kl set arrow from $k, graph 0 to $k, graph 1 nohead lc rgb 'red' dt 2;"
	done <"$OUT/kills.txt"
	gnuplot <<-GP 2>"$OUT/gnuplot.err" || log "gnuplot failed (see $OUT/gnuplot.err)"
	set terminal png size 1100,900
	set output "$OUT/soak.png"
	set datafile separator ","
	set multiplot layout 3,1 title "soak: $1"
	set key top left
	set grid
	set xlabel "seconds"
	$kl
	set ylabel "ops/s"
	set yrange [0:*]
	set y2label "p99 latency (ms, log)"
	set y2tics
	set logscale y2
	plot "$OUT/load.csv" using 1:3 skip 1 with lines title "ops/s", \
	     "" using 1:(\$5/1000) skip 1 axes x1y2 with lines title "p99 (ms)"
	unset y2tics
	unset y2label
	unset logscale y2
	set ylabel "MiB"
	set yrange [0:*]
	plot "$OUT/server.csv" using 1:(\$3/1024) skip 1 with lines title "jnfsd VmRSS"
	set ylabel "count"
	plot "$OUT/server.csv" using 1:4 skip 1 with lines title "open descriptors", \
	     "" using 1:5 skip 1 with lines title "threads"
	unset multiplot
	GP
	[ -s "$OUT/soak.png" ] && log "plot in $OUT/soak.png"
}

if [ -n "$REPLOT" ]; then
	OUT=$REPLOT
	v() { awk -v n="$1" '$1 == n { print $2 }' "$OUT/result.txt"; }
	plot "$(v soak.clients) clients, $(v soak.kills) kills (red), $(v soak.seconds) s"
	exit 0
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/jnfs-soak.XXXXXX")
[ -n "$OUT" ] || OUT=$TMP
mkdir -p "$OUT"
IMG=$TMP/img
PIDFILE=$TMP/jnfsd.pid
JPID=
SAMPLER=
LOADPID=

cleanup() {
	[ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null || true
	[ -z "$LOADPID" ] || kill "$LOADPID" 2>/dev/null || true
	[ -z "$JPID" ] || kill -9 "$JPID" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM

"$JNFS" mkfs "$IMG" --size "$SIZE" >/dev/null
echo "/ 127.0.0.1(rw,sync,insecure,no_root_squash)" >"$TMP/exports"

LISTEN=127.0.0.1:0
start_jnfsd() {
	rm -f "$TMP/port"
	"$JNFSD" --image "$IMG" --exports "$TMP/exports" --listen "$LISTEN" --rpcbind off \
		--threads "$THREADS" --flush-latency-us "$FLUSH_US" --crash \
		--port-file "$TMP/port" </dev/null >>"$OUT/jnfsd.log" 2>&1 &
	JPID=$!
	echo "$JPID" >"$PIDFILE"
	i=0
	while [ ! -s "$TMP/port" ]; do
		if ! kill -0 "$JPID" 2>/dev/null || [ $i -ge 600 ]; then
			log "jnfsd did not start; see $OUT/jnfsd.log"
			exit 1
		fi
		sleep 0.1
		i=$((i + 1))
	done
	PORT=$(head -n 1 "$TMP/port")
	LISTEN=127.0.0.1:$PORT
}

# the kill schedule: seconds from the start, one per line
if [ -n "$KILL_EVERY" ]; then
	awk -v s="$SEED" -v every="$KILL_EVERY" -v total="$SECONDS_" 'BEGIN {
		srand(s); t = 0
		for (;;) { t += every * (0.75 + 0.5 * rand()); if (t > total - 10) break; printf "%.1f\n", t }
	}' >"$TMP/kills"
else
	# spread over the first 85% of the run, at least 3 s apart
	awk -v s="$SEED" -v k="$KILLS" -v total="$SECONDS_" 'BEGIN {
		srand(s); if (k == 0) exit
		lo = 2; hi = total * 0.85; gap = (hi - lo) / k
		for (i = 0; i < k; i++) printf "%.1f\n", lo + i * gap + (gap - 3) * rand() + 1.5
	}' >"$TMP/kills"
fi
NKILLS=$(wc -l <"$TMP/kills" | tr -d ' ')

start_jnfsd
log "jnfsd on $LISTEN (pid $JPID), $CLIENTS clients for ${SECONDS_} s, $NKILLS kills; output in $OUT"

# the sampler: t_s,pid,rss_kib,fds,threads every second
(
	echo "t_s,pid,rss_kib,fds,threads"
	t0=$(date +%s.%N)
	while :; do
		p=$(cat "$PIDFILE" 2>/dev/null || true)
		if [ -n "$p" ] && [ -r "/proc/$p/status" ]; then
			rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)
			thr=$(awk '/^Threads:/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)
			fds=$(ls "/proc/$p/fd" 2>/dev/null | wc -l)
			now=$(date +%s.%N)
			[ -z "$rss" ] || echo "$(awk -v a="$now" -v b="$t0" 'BEGIN { printf "%.1f", a - b }'),$p,$rss,$fds,$thr"
		fi
		sleep 1
	done
) >"$OUT/server.csv" &
SAMPLER=$!

T0=$(date +%s.%N)
"$LOAD" --addr "$LISTEN" --clients "$CLIENTS" --seconds "$SECONDS_" --seed "$SEED" $FILL \
	--series "$OUT/load.csv" "$@" </dev/null >"$OUT/load.out" 2>"$OUT/load.err" &
LOADPID=$!

elapsed() { awk -v a="$(date +%s.%N)" -v b="$T0" 'BEGIN { printf "%.1f", a - b }'; }
before() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
KILLED=0
CHECK_FAIL=0
: >"$OUT/kills.txt"
while read -r at; do
	while before "$(elapsed)" "$at"; do
		kill -0 "$LOADPID" 2>/dev/null || break 2
		sleep 0.1
	done
	kill -0 "$LOADPID" 2>/dev/null || break
	kill -9 "$JPID"
	wait "$JPID" 2>/dev/null || true
	JPID=
	t=$(elapsed)
	KILLED=$((KILLED + 1))
	echo "$t" >>"$OUT/kills.txt"
	if ! "$JNFS" check "$IMG" </dev/null >"$OUT/check.$KILLED.txt" 2>&1; then
		CHECK_FAIL=$((CHECK_FAIL + 1))
		log "kill $KILLED: jnfs check found damage (see $OUT/check.$KILLED.txt)"
	fi
	start_jnfsd
	log "kill $KILLED at ${t} s; checked; jnfsd restarted (pid $JPID)"
done <"$TMP/kills"

LOAD_STATUS=0
wait "$LOADPID" || LOAD_STATUS=$?
LOADPID=
kill "$SAMPLER" 2>/dev/null || true
wait "$SAMPLER" 2>/dev/null || true
SAMPLER=
kill -TERM "$JPID"
STOP_STATUS=0
wait "$JPID" || STOP_STATUS=$?
JPID=
FINAL_CHECK=0
"$JNFS" check "$IMG" >"$OUT/check.final.txt" 2>&1 || FINAL_CHECK=1

# figures: the server's memory after the warm-up (a run without kills), and
# per life of the server (consecutive samples of one pid, the first 20% of
# each left out) its peak: a leak shows as peaks that grow life after life;
# and how flat the memory of each life of 60 s or more is once its caches
# have filled (after its first 40%): the largest (max - min) / min
[ -n "$WARMUP" ] || WARMUP=$(awk -v s="$SECONDS_" 'BEGIN { w = s * 0.2; if (w > 60) w = 60; print w }')
awk -F, -v w="$WARMUP" '
	function life_end() {
		if (!np) return
		cut = t[1] + (t[np] - t[1]) * 0.2; pk = 0
		for (i = 1; i <= np; i++) if (t[i] >= cut && r[i] > pk) pk = r[i]
		nl++; peaks = peaks (nl > 1 ? " " : "") pk
		if (lmin == "" || pk < lmin) lmin = pk; if (pk > lmax) lmax = pk
		if (nl == 1) lfirst = pk; llast = pk
		if (t[np] - t[1] >= 60) {
			cut = t[1] + (t[np] - t[1]) * 0.4; fmin = ""; fmax = 0
			for (i = 1; i <= np; i++) if (t[i] >= cut) {
				if (fmin == "" || r[i] < fmin) fmin = r[i]; if (r[i] > fmax) fmax = r[i]
			}
			f = fmin ? 100 * (fmax - fmin) / fmin : 0; nf++; if (f > flat) flat = f
		}
		np = 0
	}
	NR > 1 {
		if ($2 != pid) { life_end(); pid = $2 }
		np++; t[np] = $1; r[np] = $3
		if ($3 > peak) peak = $3; if ($4 > fds) fds = $4; if ($5 > thr) thr = $5
		if ($1 >= w) {
			n++; if (n == 1) first = $3; last = $3
			if (min == "" || $3 < min) min = $3; if ($3 > max) max = $3
		}
	}
	END {
		life_end()
		printf "soak.rss_kib.peak %d\n", peak
		if (n) {
			printf "soak.rss_kib.after_warmup.first %d\n", first
			printf "soak.rss_kib.after_warmup.min %d\n", min
			printf "soak.rss_kib.after_warmup.max %d\n", max
			printf "soak.rss_kib.after_warmup.last %d\n", last
			printf "soak.rss.after_warmup.spread_pct %.1f\n", min ? 100 * (max - min) / min : 0
		}
		printf "soak.lives %d\n", nl
		printf "soak.rss_kib.life_peaks %s\n", peaks
		printf "soak.rss_kib.life_peak.first %d\n", lfirst
		printf "soak.rss_kib.life_peak.last %d\n", llast
		printf "soak.rss.life_peak.spread_pct %.1f\n", lmin ? 100 * (lmax - lmin) / lmin : 0
		if (nf) printf "soak.rss.life_flat_after_warmup_pct %.1f\n", flat
		printf "soak.fds.max %d\n", fds
		printf "soak.threads.max %d\n", thr
	}' "$OUT/server.csv" >"$OUT/soak.txt"
{
	echo "soak.clients $CLIENTS"
	echo "soak.seconds $SECONDS_"
	echo "soak.kills $KILLED"
	echo "soak.kills_planned $NKILLS"
	echo "soak.check_failures $CHECK_FAIL"
	echo "soak.final_check_failed $FINAL_CHECK"
	echo "soak.jnfsd_stop_status $STOP_STATUS"
	echo "soak.load_status $LOAD_STATUS"
	cat "$OUT/soak.txt"
	cat "$OUT/load.out"
} >"$OUT/result.txt"
cat "$OUT/result.txt"
if [ -s "$OUT/load.err" ]; then
	log "nfs-load said:"
	head -n 40 "$OUT/load.err" >&2
fi

if [ -n "$PLOT" ] && command -v gnuplot >/dev/null 2>&1; then
	plot "$CLIENTS clients, $KILLED kills (red), ${SECONDS_} s"
fi

ok=1
[ "$LOAD_STATUS" = 0 ] || ok=
[ "$CHECK_FAIL" = 0 ] || ok=
[ "$FINAL_CHECK" = 0 ] || ok=
[ "$STOP_STATUS" = 0 ] || ok=
[ "$KILLED" = "$NKILLS" ] || { log "only $KILLED of $NKILLS kills were done"; ok=; }
grep -q '^load.mismatches 0$' "$OUT/load.out" || ok=
grep -q '^load.lost 0$' "$OUT/load.out" || ok=
if [ -n "$FILL" ]; then
	# the image filled, and the clients went on writing after freeing space
	nospc=$(awk '$1 == "load.nospc" { print $2 }' "$OUT/load.out")
	after=$(awk '$1 == "load.ok_after_nospc" { print $2 }' "$OUT/load.out")
	[ "${nospc:-0}" -gt 0 ] || { log "the image never filled (no NOSPC)"; ok=; }
	[ "${after:-0}" -gt 0 ] || { log "no write succeeded after a NOSPC"; ok=; }
fi
if [ -n "$ok" ]; then
	log "passed"
	rm -rf "$TMP"
	exit 0
fi
log "FAILED; the output is in $OUT, the image in $IMG"
exit 1
