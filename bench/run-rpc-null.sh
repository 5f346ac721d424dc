#!/bin/sh
# run-rpc-null.sh - NULL calls per second, jnfsd against NFS-Ganesha.
#
# Runs build/bench/rpc-null against jnfsd and against Ganesha's NFSv4 NULL
# procedure (100003 v4), both on loopback ports of this machine, for each
# connection count, and prints both figures and their ratio. Installs
# nfs-ganesha and nfs-ganesha-vfs if they are missing (Debian packages; as
# root). Not part of the test suite. Stops every server it started by PID.
#
# Each figure is the best of ROUNDS runs (default 3), the servers taking
# turns (who goes first changes every round), so that a burst of load from
# something else on the machine does not decide the comparison; the ratio
# is best over best, and its spread the smallest and largest of the
# per-round ratios (the two runs of a round were back to back). Latency
# percentiles (call sent to reply read, from rpc-null) are medians over the
# rounds.
#
# BASELINE_JNFSD=/path/to/an/older/jnfsd runs that jnfsd as a third server
# in the same rounds, taking turns with the other two, and prints its
# figures and new/old (this build's jnfsd over it) beside the others, with
# the same spread: a change measured before and after in one run. Each
# jnfsd serves an image of its own, created by itself, in a temporary
# directory.
#
# usage: bench/run-rpc-null.sh [SECONDS] [CONNS...]   (default: 5 s; 1 4 16)
# environment: ROUNDS (3), THREADS (jnfsd --threads, 8), JPORT, GPORT, BPORT,
#   BASELINE_JNFSD, OUT (build/bench-results)
# Results in $OUT: rpc-null-runs.csv (every run), rpc-null.csv (the table),
# rpc-null.txt (as printed).
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-5}
[ $# -gt 0 ] && shift
CONNS=${*:-1 4 16}
JPORT=${JPORT:-20491}
GPORT=${GPORT:-20492}
BPORT=${BPORT:-20493}
THREADS=${THREADS:-8}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-build/bench-results}
BASELINE_JNFSD=${BASELINE_JNFSD:-}

if [ -n "$BASELINE_JNFSD" ] && [ ! -x "$BASELINE_JNFSD" ]; then
	echo "run-rpc-null: BASELINE_JNFSD=$BASELINE_JNFSD is not an executable" >&2
	exit 1
fi
for p in nfs-ganesha nfs-ganesha-vfs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		echo "installing $p"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
	fi
done
make -s build >/dev/null

TMP=$(mktemp -d)
JPID=
GPID=
BPID=
cleanup() {
	for p in $JPID $GPID $BPID; do
		kill "$p" 2>/dev/null || true
	done
	for p in $JPID $GPID $BPID; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

wait_port() {
	for _ in $(seq 200); do
		if ./build/bench/rpc-null --conns 1 --seconds 0.01 --port "$1" --vers 4 \
			>/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	echo "server on port $1 did not answer" >&2
	exit 1
}

./build/jnfsd --image "$TMP/jnfs.img" --size 1G --listen "127.0.0.1:$JPORT" \
	--threads "$THREADS" --rpcbind off >"$TMP/jnfsd.out" 2>"$TMP/jnfsd.err" &
JPID=$!
wait_port "$JPORT"
if [ -n "$BASELINE_JNFSD" ]; then
	"$BASELINE_JNFSD" --image "$TMP/base.img" --size 1G --listen "127.0.0.1:$BPORT" \
		--threads "$THREADS" --rpcbind off >"$TMP/base.out" 2>"$TMP/base.err" &
	BPID=$!
	wait_port "$BPORT"
fi

mkdir -p "$TMP/export"
cat >"$TMP/ganesha.conf" <<CONF
NFS_CORE_PARAM {
	NFS_Port = $GPORT;
	Bind_addr = 127.0.0.1;
	NFS_Protocols = 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFSV4 { Graceless = true; }
LOG { Default_Log_Level = WARN; }
EXPORT {
	Export_Id = 1;
	Path = $TMP/export;
	Pseudo = /export;
	Access_Type = RW;
	Squash = No_Root_Squash;
	FSAL { Name = VFS; }
}
CONF
ganesha.nfsd -F -f "$TMP/ganesha.conf" -L "$TMP/ganesha.log" -p "$TMP/ganesha.pid" \
	-N NIV_WARN &
GPID=$!
wait_port "$GPORT"

SERVERS="jnfsd ganesha"
[ -n "$BASELINE_JNFSD" ] && SERVERS="jnfsd ganesha baseline"
port_of() {
	case $1 in
	jnfsd) echo "$JPORT" ;;
	ganesha) echo "$GPORT" ;;
	baseline) echo "$BPORT" ;;
	esac
}
# the servers in the order of round $1: rotated by one every round
order() {
	echo $SERVERS | awk -v r="$1" '{ for (i = 0; i < NF; i++) print $((i + r) % NF + 1) }'
}

mkdir -p "$OUT"
RUNS="$OUT/rpc-null-runs.csv"
echo "round,server,conns,calls_per_sec,latency_us_avg,latency_us_p50,latency_us_p90,latency_us_p99,latency_us_p999" >"$RUNS"
for c in $CONNS; do
	for r in $(seq "$ROUNDS"); do
		for s in $(order "$r"); do
			./build/bench/rpc-null --conns "$c" --seconds "$SECS" --port "$(port_of "$s")" \
				--vers 4 >"$TMP/one.out"
			v() { sed -n "s/^rpc_null\.$1 //p" "$TMP/one.out"; }
			echo "$r,$s,$c,$(v calls_per_sec),$(v latency_us_avg),$(v latency_us_p50),$(v latency_us_p90),$(v latency_us_p99),$(v latency_us_p999)" >>"$RUNS"
			echo "run-rpc-null: round $r $s C=$c: $(v calls_per_sec) calls/s, p50 $(v latency_us_p50) us" >&2
		done
	done
done

# the table: best of the rounds per server, ratios of the bests with the
# per-round ratios' min and max, latency percentiles' medians
awk -F, -v baseline="${BASELINE_JNFSD:+1}" '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function spread(num, den, c,    r, q, lo, hi) {
	lo = ""; hi = ""
	for (r = 1; r <= rounds[c]; r++) {
		if (!((c "," r "," den) in cps) || cps[c "," r "," den] == 0) continue
		q = cps[c "," r "," num] / cps[c "," r "," den]
		if (lo == "" || q < lo) lo = q
		if (hi == "" || q > hi) hi = q
	}
	return sprintf("%.2f,%.2f", lo, hi)
}
function med(c, s, col,    r, n, a) {
	n = 0
	for (r = 1; r <= rounds[c]; r++)
		if ((c "," r "," s) in cps) a[++n] = lat[c "," r "," s "," col]
	return n ? median(a, n) : 0
}
NR > 1 {
	c = $3
	if (!(c in seen)) { seen[c] = 1; cs[++nc] = c }
	if ($1 > rounds[c]) rounds[c] = $1
	cps[c "," $1 "," $2] = $4
	lat[c "," $1 "," $2 ",50"] = $6
	lat[c "," $1 "," $2 ",99"] = $8
	if ($4 > best[c "," $2]) best[c "," $2] = $4
}
END {
	printf "conns,jnfsd,ganesha,ratio,ratio_min,ratio_max,jnfsd_p50_us,jnfsd_p99_us,ganesha_p50_us,ganesha_p99_us"
	if (baseline) printf ",baseline,new_over_old,new_over_old_min,new_over_old_max,baseline_p50_us,baseline_p99_us"
	printf "\n"
	for (i = 1; i <= nc; i++) {
		c = cs[i]
		j = best[c ",jnfsd"]; g = best[c ",ganesha"]
		printf "%s,%.0f,%.0f,%.2f,%s,%.1f,%.1f,%.1f,%.1f", c, j, g, (g > 0 ? j / g : 0),
		       spread("jnfsd", "ganesha", c), med(c, "jnfsd", 50), med(c, "jnfsd", 99),
		       med(c, "ganesha", 50), med(c, "ganesha", 99)
		if (baseline) {
			b = best[c ",baseline"]
			printf ",%.0f,%.2f,%s,%.1f,%.1f", b, (b > 0 ? j / b : 0),
			       spread("jnfsd", "baseline", c), med(c, "baseline", 50),
			       med(c, "baseline", 99)
		}
		printf "\n"
	}
}' "$RUNS" >"$OUT/rpc-null.csv"

{
	echo "NULL calls per second, NFSv4 (100003 v4), best of $ROUNDS runs of ${SECS} s," \
		"jnfsd --threads $THREADS${BASELINE_JNFSD:+; baseline: $BASELINE_JNFSD}"
	echo "ratio = best/best, (min-max) of the per-round ratios; latencies: median over rounds (us)"
	echo
	column -s, -t <"$OUT/rpc-null.csv" 2>/dev/null || cat "$OUT/rpc-null.csv"
} | tee "$OUT/rpc-null.txt"
