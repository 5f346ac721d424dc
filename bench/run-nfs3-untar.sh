#!/bin/sh
# run-nfs3-untar.sh - build/bench/nfs3-untar against jnfsd and NFS-Ganesha,
# side by side in one run, and the ratio jnfsd/Ganesha.
#
# Storage, the same for both: two image files in $BENCH_DIR (default
# /var/tmp, one local disk), each filled with zeros first so that neither
# server pays for the filesystem under it allocating blocks.
#   jnfsd:   `jnfs mkfs` on one image, served with --image; its device
#            flushes are fdatasync() of that image (RWF_DSYNC for a FUA
#            write).
#   Ganesha: FSAL_VFS over kernel XFS on a loop device over the other image
#            (mkfs.xfs -K, loop direct-io off like the engine's buffered
#            image), mounted with wsync. A flush of the loop device (XFS's
#            cache flushes and, since a loop device has no FUA, its FUA
#            writes) is an fsync() of the image.
# Both exports are sync in the NFSv3 sense: jnfsd's export line says sync
# (every metadata procedure forces the journal to its own transaction
# before replying); Ganesha has no such export option and replies to
# CREATE/MKDIR as soon as the VFS call returns, so XFS is mounted wsync,
# which commits every namespace transaction synchronously: that is what
# knfsd's sync export gets from XFS, and what makes Ganesha's replies as
# durable as jnfsd's. Neither server is given anything the other is not:
# same disk, same client, same files, 127.0.0.1.
#
# The whole measurement runs in a private network and mount namespace
# (unshare), with its own rpcbind, since Ganesha refuses to serve NFSv3
# without registering, and its mounts and ports must not touch the
# machine's. Every process the script starts is stopped by its PID; the
# loop device it attached is detached by name; the directory is removed.
# Needs root; installs missing packages with scripts/install-bench-deps.
#
# For each client count C and mode (filesync: every WRITE FILE_SYNC;
# unstable: UNSTABLE WRITEs + COMMIT per file), ROUNDS runs on each server,
# the servers taking turns (who goes first changes every round). Reported:
# the median files/s over the rounds, log writes and device flushes per
# file (from the median run), the median of the per-round ratios
# jnfsd/Ganesha with their smallest and largest (the spread of this run),
# and the mean latency per call of MKDIR, CREATE, WRITE and COMMIT (the
# median over rounds).
#
# BASELINE_JNFSD=/path/to/an/older/jnfsd runs that jnfsd as a third server
# in the same rounds, taking turns with the other two, on a third image
# made the same way and formatted by its own mkfs (BASELINE_JNFS, default
# the jnfs beside BASELINE_JNFSD, else this build's), and prints its
# figures and the ratio new/old (this build's jnfsd over it, median of the
# per-round ratios, min-max) beside the others: a change compared before
# and after in one run.
#
# usage: bench/run-nfs3-untar.sh [CLIENTS...]        (default: 1 8)
# environment: ROUNDS (5), MODES ("filesync unstable"), FILES_1 (files at
#   C=1, default 3000), FILES_N (files at C>1, default 12000), THREADS
#   (jnfsd --threads, default 8), BENCH_DIR, IMAGE_MIB (4096), JNFS_LOG_MIB
#   (jnfs journal size, default: the size of the XFS journal), OUT
#   (build/bench-results), BASELINE_JNFSD, BASELINE_JNFS
# Results in $OUT: nfs3-untar-runs.csv (every run), nfs3-untar.csv (the
# table), nfs3-untar.txt (as printed), nfs3-untar.png (gnuplot).
set -eu
cd "$(dirname "$0")/.."

BASELINE_JNFSD=${BASELINE_JNFSD:-}
if [ -n "$BASELINE_JNFSD" ]; then
	if [ -z "${BASELINE_JNFS:-}" ]; then
		BASELINE_JNFS=./build/jnfs
		[ -x "$(dirname "$BASELINE_JNFSD")/jnfs" ] && BASELINE_JNFS=$(dirname "$BASELINE_JNFSD")/jnfs
	fi
	for b in "$BASELINE_JNFSD" "$BASELINE_JNFS"; do
		if [ ! -x "$b" ]; then
			echo "run-nfs3-untar: $b (baseline) is not an executable" >&2
			exit 1
		fi
	done
	export BASELINE_JNFSD BASELINE_JNFS
fi

if [ "${JNFS_IN_NETNS:-}" != 1 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "run-nfs3-untar: needs root (losetup, mount, namespaces)" >&2
		exit 1
	fi
	scripts/install-deps
	scripts/install-bench-deps
	make -s build >/dev/null
	JNFS_IN_NETNS=1 exec unshare --net --mount sh "$0" "$@"
fi

CLIENTS=${*:-1 8}
ROUNDS=${ROUNDS:-5}
MODES=${MODES:-filesync unstable}
FILES_1=${FILES_1:-3000}
FILES_N=${FILES_N:-12000}
THREADS=${THREADS:-8}
BENCH_DIR=${BENCH_DIR:-/var/tmp}
IMAGE_MIB=${IMAGE_MIB:-4096}
OUT=${OUT:-build/bench-results}
JPORT=2049
GPORT=2050
GMPORT=2051
BPORT=2052
BENCH=./build/bench/nfs3-untar

ip link set lo up
mount -t tmpfs tmpfs /run
mkdir -p /run/rpcbind /run/ganesha

TMP=$(mktemp -d "$BENCH_DIR/jnfs-nfs3-untar.XXXXXX")
LOOP=
MNT=
RPCBIND_PID=
JPID=
GPID=
BPID=
cleanup() {
	[ -n "$JPID" ] && kill "$JPID" 2>/dev/null || true
	[ -n "$GPID" ] && kill "$GPID" 2>/dev/null || true
	[ -n "$BPID" ] && kill "$BPID" 2>/dev/null || true
	[ -n "$JPID" ] && wait "$JPID" 2>/dev/null || true
	[ -n "$GPID" ] && wait "$GPID" 2>/dev/null || true
	[ -n "$BPID" ] && wait "$BPID" 2>/dev/null || true
	[ -n "$RPCBIND_PID" ] && kill "$RPCBIND_PID" 2>/dev/null || true
	if [ -n "$MNT" ]; then
		umount "$MNT" || umount -l "$MNT" || true
	fi
	if [ -n "$LOOP" ]; then
		losetup -d "$LOOP" || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

log() { echo "run-nfs3-untar: $*" >&2; }

# ---- storage
dd if=/dev/zero of="$TMP/jnfs.img" bs=4M count=$((IMAGE_MIB / 4)) conv=fsync status=none
dd if=/dev/zero of="$TMP/xfs.img" bs=4M count=$((IMAGE_MIB / 4)) conv=fsync status=none
if [ -n "$BASELINE_JNFSD" ]; then
	dd if=/dev/zero of="$TMP/base.img" bs=4M count=$((IMAGE_MIB / 4)) conv=fsync status=none
fi
LOOP=$(losetup --find --show --direct-io=off "$TMP/xfs.img")
mkfs.xfs -q -K "$LOOP"
mkdir "$TMP/mnt"
mount -t xfs -o wsync "$LOOP" "$TMP/mnt"
MNT="$TMP/mnt"
LOOPDEV=${LOOP#/dev/}
# the journal: as large as the one mkfs.xfs chose (unless JNFS_LOG_MIB says)
XFS_LOG_MIB=$(xfs_info "$MNT" | awk '/^log/ { for (i = 1; i <= NF; i++) {
	if ($i ~ /^bsize=/) { sub(/bsize=/, "", $i); b = $i }
	if ($i ~ /^blocks=/) { sub(/blocks=/, "", $i); sub(/,/, "", $i); n = $i } } }
	END { print int(b * n / 1048576) }')
JNFS_LOG_MIB=${JNFS_LOG_MIB:-$XFS_LOG_MIB}
./build/jnfs mkfs "$TMP/jnfs.img" --log-size "${JNFS_LOG_MIB}M" >/dev/null
if [ -n "$BASELINE_JNFSD" ]; then
	"$BASELINE_JNFS" mkfs "$TMP/base.img" --log-size "${JNFS_LOG_MIB}M" >/dev/null
fi
DISK=$(df --output=source "$BENCH_DIR" | tail -1)
# the whole disk under both images, for its flush times (shared with
# everything else on the machine: context, not a measurement of a server)
DISKDEV=$(lsblk -no PKNAME "$DISK" 2>/dev/null | head -1)
[ -n "$DISKDEV" ] || DISKDEV=$(basename "$DISK")
[ -r "/sys/block/$DISKDEV/stat" ] || DISKDEV=
STORAGE="image files on $BENCH_DIR ($DISK, $(findmnt -n -o FSTYPE --target "$BENCH_DIR")), zero-filled, ${IMAGE_MIB} MiB each; journals: jnfs ${JNFS_LOG_MIB} MiB, XFS ${XFS_LOG_MIB} MiB internal"
log "storage: $STORAGE; XFS on $LOOP mounted wsync"

# ---- servers
rpcbind -f &
RPCBIND_PID=$!
for _ in $(seq 100); do
	rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
	sleep 0.05
done

printf '/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n' >"$TMP/exports"
./build/jnfsd --image "$TMP/jnfs.img" --exports "$TMP/exports" --listen "127.0.0.1:$JPORT" \
	--threads "$THREADS" --rpcbind off >"$TMP/jnfsd.out" 2>"$TMP/jnfsd.err" &
JPID=$!
if [ -n "$BASELINE_JNFSD" ]; then
	"$BASELINE_JNFSD" --image "$TMP/base.img" --exports "$TMP/exports" \
		--listen "127.0.0.1:$BPORT" --threads "$THREADS" --rpcbind off \
		>"$TMP/base.out" 2>"$TMP/base.err" &
	BPID=$!
fi

# No Bind_addr: Ganesha resolves it with AI_ADDRCONFIG, which finds nothing
# in a namespace that has only lo; the namespace has no other interface, so
# it listens on 127.0.0.1 all the same.
cat >"$TMP/ganesha.conf" <<CONF
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
ganesha.nfsd -F -f "$TMP/ganesha.conf" -L "$TMP/ganesha.log" -p "$TMP/ganesha.pid" \
	-N NIV_WARN &
GPID=$!

# both answer a one-file run before anything is measured
wait_server() { # name args...
	name=$1
	shift
	for _ in $(seq 100); do
		if "$BENCH" --files 1 --label warmup "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	log "$name does not answer"
	[ "$name" = ganesha ] && tail -5 "$TMP/ganesha.log" >&2
	[ "$name" = jnfsd ] && cat "$TMP/jnfsd.err" >&2
	[ "$name" = baseline ] && cat "$TMP/base.err" >&2
	exit 1
}
wait_server jnfsd --port "$JPORT"
[ -n "$BASELINE_JNFSD" ] && wait_server baseline --port "$BPORT"
wait_server ganesha --port "$GPORT" --mount-port "$GMPORT" --export "$MNT"

# ---- runs
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$OUT"
RUNS="$OUT/nfs3-untar-runs.csv"
echo "round,server,mode,clients,files,dirs,bytes,seconds,files_per_sec,log_writes,log_writes_per_file,flushes,flushes_per_file,disk_flush_us,lat_mkdir_us,lat_create_us,lat_write_us,lat_commit_us" >"$RUNS"
# Before each run: jnfsd's idle files trimmed of their preallocation,
# everything written so far made durable (sync) and the disk quiet for a
# second, at most 30 s, so that neither server's run pays
# for the other's leftover writeback (the loop device's dirty pages under
# XFS, the journals' in-place metadata writes).
settle() {
	# jnfsd gives back the preallocation past EOF of files idle for 5 s
	# (what XFS does at Ganesha's close, inside Ganesha's run): that work
	# is done before anyone's next run
	# (a jnfsd that does not count them has none to trim)
	for _port in "$JPORT" ${BASELINE_JNFSD:+"$BPORT"}; do
		for _i in $(seq 150); do
			./build/jnfs stat --server "127.0.0.1:$_port" 2>/dev/null >"$TMP/settle.stat" || true
			grep -q '^fs.eof_listed ' "$TMP/settle.stat" || break
			grep -qx 'fs.eof_listed 0' "$TMP/settle.stat" && break
			sleep 0.2
		done
	done
	sync
	[ -n "$DISKDEV" ] && [ -r "/sys/block/$DISKDEV/stat" ] || return 0
	_prev=
	for _i in $(seq 60); do
		_cur=$(awk '{ print $5, $7, $9 }' "/sys/block/$DISKDEV/stat")
		[ "$_cur" = "$_prev" ] && return 0
		_prev=$_cur
		sleep 0.5
	done
}
one() { # round server mode clients files
	if [ "$2" = jnfsd ]; then
		set -- "$@" --port "$JPORT" --jnfsd-stats
	elif [ "$2" = baseline ]; then
		set -- "$@" --port "$BPORT" --jnfsd-stats
	else
		set -- "$@" --port "$GPORT" --mount-port "$GMPORT" --export "$MNT" --xfs-dev "$LOOPDEV"
	fi
	_r=$1 _s=$2 _m=$3 _c=$4 _n=$5
	shift 5
	[ -n "$DISKDEV" ] && set -- "$@" --disk "$DISKDEV"
	settle
	"$BENCH" --label "$_s" --mode "$_m" --clients "$_c" --files "$_n" --csv "$@" >"$TMP/one.out"
	row=$(tail -1 "$TMP/one.out" | cut -d, -f2-)
	dfl=$(sed -n 's/^untar.disk_flush_us_avg //p' "$TMP/one.out")
	lat=
	for _op in mkdir create write commit; do
		_l=$(sed -n "s/^untar.lat_us.$_op //p" "$TMP/one.out")
		lat="$lat,${_l:-n/a}"
	done
	echo "$_r,$_s,$row,${dfl:-n/a}$lat" >>"$RUNS"
	log "round $_r $_s $_m C=$_c: $(sed -n 's/^untar.files_per_sec //p' "$TMP/one.out") files/s (disk flush ${dfl:-?} us)"
}
SERVERS="jnfsd ganesha${BASELINE_JNFSD:+ baseline}"
# the servers in the order of round $1: rotated by one every round
order() {
	echo $SERVERS | awk -v r="$1" '{ for (i = 0; i < NF; i++) print $((i + r) % NF + 1) }'
}
for c in $CLIENTS; do
	n=$FILES_N
	[ "$c" = 1 ] && n=$FILES_1
	for m in $MODES; do
		for r in $(seq "$ROUNDS"); do
			# take turns, and change who goes first each round
			for s in $(order "$r"); do
				one "$r" "$s" "$m" "$c" "$n"
			done
		done
	done
done

# ---- the table: medians over rounds, counters of the median run
awk -F, -v baseline="${BASELINE_JNFSD:+1}" '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# median (min, max) of the per-round ratios num/den of key k
function ratios(k, num, den,    n, i, a, m) {
	n = cnt[k "," num] < cnt[k "," den] ? cnt[k "," num] : cnt[k "," den]
	delete a
	for (i = 1; i <= n; i++)
		a[i] = fps[k "," num "," i] / fps[k "," den "," i]
	m = median(a, n) # sorts a
	return sprintf("%.2f,%.2f,%.2f", m, a[1], a[n])
}
# the median of column col over the rounds of server srv, or n/a
function medcol(k, srv, col,    n, i, a) {
	n = cnt[k "," srv]
	if (val[k "," srv ",1," col] == "n/a") return "n/a"
	delete a
	for (i = 1; i <= n; i++) a[i] = val[k "," srv "," i "," col] + 0
	return median(a, n)
}
NR > 1 {
	k = $3 "," $4
	if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
	i = ++cnt[k "," $2]
	fps[k "," $2 "," i] = $9
	lw[k "," $2 "," i] = $11
	fl[k "," $2 "," i] = $13
	for (c = 14; c <= 18; c++) val[k "," $2 "," i "," c] = $c
	files[k] = $5
}
END {
	nsrv = baseline ? 3 : 2
	srvs[1] = "jnfsd"; srvs[2] = "ganesha"; srvs[3] = "baseline"
	printf "mode,clients,files,jnfsd_files_per_sec,ganesha_files_per_sec,ratio,ratio_min,ratio_max," \
	       "jnfsd_log_writes_per_file,ganesha_log_writes_per_file," \
	       "jnfsd_flushes_per_file,ganesha_flushes_per_file,jnfsd_disk_flush_us,ganesha_disk_flush_us"
	for (s = 1; s <= nsrv; s++)
		printf ",%s_lat_mkdir_us,%s_lat_create_us,%s_lat_write_us,%s_lat_commit_us", srvs[s],
		       srvs[s], srvs[s], srvs[s]
	if (baseline)
		printf ",baseline_files_per_sec,new_over_old,new_over_old_min,new_over_old_max," \
		       "baseline_log_writes_per_file,baseline_flushes_per_file,baseline_disk_flush_us"
	printf "\n"
	for (q = 1; q <= nk; q++) {
		k = keys[q]
		for (s = 1; s <= nsrv; s++) {
			srv = srvs[s]
			n = cnt[k "," srv]
			delete a
			for (i = 1; i <= n; i++) a[i] = fps[k "," srv "," i]
			med[srv] = median(a, n)
			# counters of the run closest to the median
			best = 1
			for (i = 1; i <= n; i++)
				if ((fps[k "," srv "," i] - med[srv])^2 < (fps[k "," srv "," best] - med[srv])^2)
					best = i
			mlw[srv] = lw[k "," srv "," best]
			mfl[srv] = fl[k "," srv "," best]
			mdl[srv] = medcol(k, srv, 14)
		}
		printf "%s,%s,%.1f,%.1f,%s,%s,%s,%s,%s,%s,%s", k, files[k], med["jnfsd"], med["ganesha"],
		       ratios(k, "jnfsd", "ganesha"), mlw["jnfsd"], mlw["ganesha"], mfl["jnfsd"],
		       mfl["ganesha"], mdl["jnfsd"], mdl["ganesha"]
		for (s = 1; s <= nsrv; s++)
			for (c = 15; c <= 18; c++)
				printf ",%s", medcol(k, srvs[s], c)
		if (baseline)
			printf ",%.1f,%s,%s,%s,%s", med["baseline"], ratios(k, "jnfsd", "baseline"),
			       mlw["baseline"], mfl["baseline"], mdl["baseline"]
		printf "\n"
	}
}' "$RUNS" >"$OUT/nfs3-untar.csv"

{
	echo "nfs3-untar: jnfsd (sync export, --threads $THREADS) vs NFS-Ganesha $(dpkg-query -W -f='${Version}' nfs-ganesha 2>/dev/null) (FSAL_VFS, XFS mounted wsync on $LOOP)"
	[ -n "$BASELINE_JNFSD" ] && echo "baseline: $BASELINE_JNFSD (mkfs: $BASELINE_JNFS), same exports and threads; new_over_old = median (min, max) of per-round jnfsd/baseline files/s"
	echo "storage: $STORAGE"
	echo "kernel $(uname -r); $(nproc) CPUs; load average $LOAD0 before, $(cut -d' ' -f1-3 /proc/loadavg) after"
	echo "median of $ROUNDS rounds, servers taking turns; ratio = median (min, max) of per-round jnfsd/Ganesha files/s"
	echo "lat_*_us: mean latency of one call (WRITE: a file's first WRITE to its last reply), median over rounds"
	echo "log writes: jnfsd log.buffer_writes, XFS log writes (/sys/fs/xfs/$LOOPDEV/stats);"
	echo "flushes: jnfsd dev.flushes + dev.fua_writes, loop device flush requests (/sys/block/$LOOPDEV/stat)"
	echo "disk_flush_us: mean time of a flush on ${DISKDEV:-the disk} during the runs (everyone's flushes: context only)"
	echo
	column -s, -t <"$OUT/nfs3-untar.csv" 2>/dev/null || cat "$OUT/nfs3-untar.csv"
} | tee "$OUT/nfs3-untar.txt"

if command -v gnuplot >/dev/null 2>&1; then
	awk -F, 'NR > 1 { printf "\"%s C=%s\" %s %s\n", $1, $2, $4, $5 }' "$OUT/nfs3-untar.csv" \
		>"$TMP/plot.dat"
	gnuplot <<GP
set terminal png size 1000,550
set output "$OUT/nfs3-untar.png"
set title "nfs3-untar: files/s over NFSv3, sync export (jnfsd vs NFS-Ganesha on XFS wsync, same disk)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "files/s (median)"
set key top left
set grid ytics
plot "$TMP/plot.dat" using 2:xtic(1) title "jnfsd", "" using 3 title "Ganesha"
GP
	log "plot in $OUT/nfs3-untar.png"
fi
