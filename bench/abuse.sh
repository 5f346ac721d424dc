#!/bin/sh
# abuse.sh - well-behaved clients' latency beside hostile ones, and what the
# hostile ones make jnfsd hold.
#
# One jnfsd (its default limits unless JNFSD_ARGS says otherwise) serves
# every phase, from an image in IMG_DIR (default /dev/shm: a disk's flush
# time - 1 to 100 ms on a shared virtual disk - would drown what is
# measured) with FLUSH_US added to every flush (default 100, an SSD); in each, build/bench/nfs-load runs CLIENTS
# verifying clients for SECONDS, THINK_US apart (a load well below what the
# machine can do, so that latency measures the server's attention, not a
# queue), with beside them:
#   alone        nothing (the reference)
#   idle-noread  IDLE connections that made one NULL call and stay silent,
#                and NOREAD clients that pipeline 1 MiB READs and never read
#                a reply
#   halfsent     HALFSENT connections, each with a record header announcing
#                1 MiB and half of it sent, then nothing
#   flood        FLOOD clients that pipeline NULL and GETATTR calls as fast as
#                the loopback takes them
#   alone-again  nothing (the reference again: how much the machine's noise
#                moves it)
# jnfsd's VmRSS is sampled every 200 ms. Printed per phase: the measured
# clients' ops/s and p50/p99 latency, p99 against the first phase's, jnfsd's
# VmRSS at the start and its peak, what the hostile clients did and what the
# server did to them (abuse.* lines of nfs-load), mismatches. Nothing is
# asserted on time; it fails only if a client's reply contradicts its model
# or jnfsd does not survive. With ROUNDS > 1 the phases run that many times
# in turn (alone, abused, alone, abused, ...), each round's figures are
# printed with the round in the name, and abuse.PHASE.p99_us_median and
# .p99_vs_alone_median sum them up: on a machine shared with other work,
# p99 moves between two runs alone as much as an abuser moves it.
#
# usage: bench/abuse.sh [PHASE...]     (default: every phase above)
# environment: ROUNDS (1), IMG_DIR, FLUSH_US, CLIENTS (8), SECONDS_ (20), THINK_US (2000), IDLE (5000),
#   NOREAD (8), HALFSENT (1000), FLOOD (1), THREADS (jnfsd --threads, 8),
#   JNFSD_ARGS, OUT (a temporary directory, removed unless given), JNFSD,
#   JNFS, LOAD (the programs; default ./build/...)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
JNFSD=${JNFSD:-$here/build/jnfsd}
JNFS=${JNFS:-$here/build/jnfs}
LOAD=${LOAD:-$here/build/bench/nfs-load}
CLIENTS=${CLIENTS:-8}
SECONDS_=${SECONDS_:-20}
THINK_US=${THINK_US:-2000}
IDLE=${IDLE:-5000}
NOREAD=${NOREAD:-8}
HALFSENT=${HALFSENT:-1000}
FLOOD=${FLOOD:-1}
THREADS=${THREADS:-8}
JNFSD_ARGS=${JNFSD_ARGS:-}
PHASES=${*:-alone idle-noread halfsent flood alone-again}
ROUNDS=${ROUNDS:-1}

FLUSH_US=${FLUSH_US:-100}
IMG_DIR=${IMG_DIR:-/dev/shm}
[ -d "$IMG_DIR" ] || IMG_DIR=${TMPDIR:-/tmp}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/jnfs-abuse.XXXXXX")
IMG=$(mktemp "$IMG_DIR/jnfs-abuse-img.XXXXXX")
rm -f "$IMG"
KEEP=${OUT:+1}
OUT=${OUT:-$TMP}
mkdir -p "$OUT"
JPID=
SAMPLER=
cleanup() {
	[ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null || true
	[ -z "$JPID" ] || kill -9 "$JPID" 2>/dev/null || true
	rm -f "$IMG"
	[ -n "$KEEP" ] || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
log() { echo "abuse: $*" >&2; }
value() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }

"$JNFS" mkfs "$IMG" --size 2G >/dev/null
echo "/ 127.0.0.1(rw,sync,insecure,no_root_squash)" >"$TMP/exports"
# shellcheck disable=SC2086
"$JNFSD" --image "$IMG" --exports "$TMP/exports" --listen 127.0.0.1:0 --rpcbind off \
	--threads "$THREADS" --flush-latency-us "$FLUSH_US" --port-file "$TMP/port" $JNFSD_ARGS </dev/null >"$OUT/jnfsd.log" 2>&1 &
JPID=$!
i=0
while [ ! -s "$TMP/port" ]; do
	kill -0 "$JPID" 2>/dev/null && [ $i -lt 300 ] || { log "jnfsd did not start"; exit 1; }
	sleep 0.1
	i=$((i + 1))
done
ADDR=127.0.0.1:$(head -n 1 "$TMP/port")
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$JPID/status"; }
log "jnfsd on $ADDR (pid $JPID); $CLIENTS clients ${THINK_US} us apart, ${SECONDS_} s a phase"

REF=
FAILED=
: >"$OUT/summary.csv"
echo "round,phase,ops_per_s,p50_us,p99_us,p99_vs_alone,rss_start_kib,rss_peak_kib,mismatches" \
	>>"$OUT/summary.csv"
round=0
while [ $round -lt "$ROUNDS" ]; do
	round=$((round + 1))
	REF=
	for phase in $PHASES; do
		name=$phase
		[ "$ROUNDS" = 1 ] || name=$phase.r$round
		case $phase in
		alone | alone-again) extra= ;;
		idle-noread) extra="--idle $IDLE --noread $NOREAD" ;;
		halfsent) extra="--halfsent $HALFSENT" ;;
		flood) extra="--flood $FLOOD" ;;
		*) log "unknown phase $phase"; exit 2 ;;
		esac
		start=$(rss)
		(
			while :; do
				awk '/^VmRSS:/ { print $2 }' "/proc/$JPID/status" 2>/dev/null || exit 0
				sleep 0.2
			done
		) >"$OUT/rss.$name" &
		SAMPLER=$!
		status=0
		# shellcheck disable=SC2086
		"$LOAD" --addr "$ADDR" --clients "$CLIENTS" --seconds "$SECONDS_" --think-us "$THINK_US" \
			--dir "abuse-$name" $extra >"$OUT/load.$name" 2>"$OUT/err.$name" || status=$?
		kill "$SAMPLER" 2>/dev/null || true
		wait "$SAMPLER" 2>/dev/null || true
		SAMPLER=
		kill -0 "$JPID" 2>/dev/null || { log "jnfsd died in phase $name"; exit 1; }
		peak=$(sort -n "$OUT/rss.$name" | tail -n 1)
		p99=$(value load.lat_us.p99 "$OUT/load.$name")
		[ -n "$REF" ] || REF=$p99
		ratio=$(awk -v a="$p99" -v b="$REF" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
		mism=$(($(value load.mismatches "$OUT/load.$name") + $(value load.lost "$OUT/load.$name")))
		[ "$status" = 0 ] && [ "$mism" = 0 ] || FAILED="$FAILED $name"
		echo "abuse.$name.ops_per_s $(value load.ops_per_s "$OUT/load.$name")"
		echo "abuse.$name.p50_us $(value load.lat_us.p50 "$OUT/load.$name")"
		echo "abuse.$name.p99_us $p99"
		echo "abuse.$name.p99_vs_alone $ratio"
		echo "abuse.$name.rss_kib_start $start"
		echo "abuse.$name.rss_kib_peak $peak"
		echo "abuse.$name.mismatches $mism"
		grep '^abuse\.' "$OUT/load.$name" | sed "s/^abuse\./abuse.$name./" || true
		echo "$round,$phase,$(value load.ops_per_s "$OUT/load.$name"),$(value load.lat_us.p50 "$OUT/load.$name"),$p99,$ratio,$start,$peak,$mism" >>"$OUT/summary.csv"
	done
done
# the medians over the rounds, per phase
if [ "$ROUNDS" -gt 1 ]; then
	for phase in $PHASES; do
		awk -F, -v p="$phase" '$2 == p { print $5 " " $6 }' "$OUT/summary.csv" |
			sort -n -k1,1 | awk -v p="$phase" '{ a[NR] = $1 } END {
				printf "abuse.%s.p99_us_median %s\n", p, a[int((NR + 1) / 2)] }'
		awk -F, -v p="$phase" '$2 == p { print $6 }' "$OUT/summary.csv" |
			sort -n | awk -v p="$phase" '{ a[NR] = $1 } END {
				printf "abuse.%s.p99_vs_alone_median %s\n", p, a[int((NR + 1) / 2)] }'
	done
fi
"$JNFS" stat --server "$ADDR" >"$OUT/jnfsd.stats" 2>&1 || true
grep -E '^rpc\.(connections|connections_(accepted|closed|refused|evicted|idle|stalled|send_timeout|partial|pressure)|calls_held) ' \
	"$OUT/jnfsd.stats" | sed 's/^/abuse.server./' || true
kill -TERM "$JPID"
wait "$JPID" || { log "jnfsd did not stop cleanly"; FAILED="$FAILED stop"; }
JPID=
"$JNFS" check "$IMG" >/dev/null || FAILED="$FAILED check"
if [ -n "$FAILED" ]; then
	log "FAILED:$FAILED (output in $OUT)"
	KEEP=1
	exit 1
fi
log "done (summary in $OUT/summary.csv)"
