#!/bin/sh
# run-stream.sh - how many MiB/s clients move in large files: jnfsd against
# NFS-Ganesha over NFSv3 and NFSv4.1, in the same run as the two ceilings
# of every cell, the disk itself with O_DIRECT and loopback TCP.
#
# Storage, as the untar benchmarks (bench/untar-common.sh): image files
# on $BENCH_DIR (default /var/tmp, one local disk), each zero-filled first.
#   jnfsd    `jnfs mkfs` on one image, served with --image (O_DIRECT);
#   Ganesha  FSAL_VFS over kernel XFS (mkfs.xfs -K, default mount options:
#            this is about data, not namespace durability) on a loop
#            device (direct-io on) over the other image;
#   raw      a third zero-filled file of the size of one cell's data,
#            which build/bench/stream-bench reaches with O_DIRECT: the
#            disk's figure for the same I/O size, streams and depth.
# Both servers serve NFSv3 and NFSv4.1 on 127.0.0.1 in a private network
# and mount namespace with its own rpcbind (as bench/untar-common.sh).
#
# The client is build/bench/stream-bench (bench/stream.c): S streams, each
# one file and one connection, DEPTH calls in flight per stream (as the
# Linux client keeps several per mount: its sunrpc slot table holds up to
# 16 per mount); NFSv3 through libnfs, NFSv4.1 through the project's own
# client (src/nfs4c: OPEN, WRITE or READ, COMMIT, CLOSE). Workloads:
#   write unstable   UNSTABLE WRITEs from offset 0 to the end, then one
#                    COMMIT of the file (timed to the COMMIT's reply)
#   write filesync   FILE_SYNC WRITEs
#   read             READs of files written before
# All writes are overwrites: every file is written once before the first
# measured cell (untimed). Before every read cell, Ganesha's files are
# dropped from the page cache (dd iflag=nocache count=0: posix_fadvise
# DONTNEED, after a sync), so that its reads come from the disk as jnfsd's
# do (jnfsd has no page cache of file data: docs/design.md, section 5).
#
# Cells: each workload x I/O size (IOS, default "1M 64K") x streams
# (STREAMS, default "1 4 16") x protocol (nfs3, nfs4). Data per cell: 1 MiB
# I/O moves TOTAL_MIB (1024) in all, split over the streams (1 x 1 GiB,
# 4 x 256 MiB, 16 x 64 MiB: on a disk that moves 1-4 GB/s, a cell of less
# than a second is mostly set-up); 64 KiB I/O moves SMALL_TOTAL_MIB (256),
# the first part of the same files. (TOTAL_MIB=512 SMALL_TOTAL_MIB=128 halves
# the data and nearly the time.) ROUNDS rounds (3): in each, every cell runs
# on jnfsd, on Ganesha and on the disk (raw) taking turns, who goes first
# rotating round by round; the TCP ceiling runs once per I/O size and
# stream count per round. Between runs: everything written is made durable
# (sync) and the disk is left quiet, at most SETTLE_S seconds (default 2;
# on a machine shared with other work the disk may never be quiet).
#
# Reported per cell: MiB/s (median over rounds, min-max), server CPU
# seconds per GiB moved (utime + stime of the server process from
# /proc/PID/stat around the timed phase; for Ganesha that leaves out the
# kernel's share done in other threads: XFS writeback and the loop
# device's workers), the ratio jnfsd/Ganesha (median of the per-round
# ratios, min-max), and jnfsd as a fraction of the lesser ceiling (the
# median raw and TCP figures of the cell). Client and servers share the
# machine's CPUs: on 2 cores, 16 streams contend with the server for them.
#
# PNFS=1 (the default) adds the pNFS cell: jnfsd's export is marked pnfs
# and `jnfs pnfs put` / `get` (the block layout client: docs/pnfs-client.md)
# copy a TOTAL_MIB file into jnfsd and back in 1 MiB I/O, the client
# reading and writing the image itself with O_DIRECT; beside it in the
# table the NFSv4.1 1-stream 1 MiB cells (the same bytes through the
# server) and the disk's raw figure of the same run. `put` creates the
# file (allocating writes, one LAYOUTCOMMIT), `get` reads it through a
# READ layout; both keep DEPTH I/Os in flight (`--depth`), as the raw
# figure beside them does.
#
# usage: bench/run-stream.sh
# environment: ROUNDS (3), IOS ("1M 64K"), STREAMS ("1 4 16"), PROTOS
#   ("nfs3 nfs4"), WORKLOADS ("unstable filesync read"), DEPTH (calls in
#   flight per stream, 8), TOTAL_MIB (1024), SMALL_TOTAL_MIB (256),
#   THREADS (jnfsd --threads, 8), PNFS (1), SETTLE_S (2), IMAGE_MIB (each
#   server's image: 2 x (streams counts + 1) x TOTAL_MIB + 1024), BENCH_DIR
#   (/var/tmp), OUT (build/bench-results), LOOP_DIRECT_IO (on);
#   BENCH_QUICK=1: 1 round, TOTAL_MIB=128, SMALL_TOTAL_MIB=32, SETTLE_S=1.
# Results in $OUT: stream-runs.csv (every run), stream.csv (the table),
# stream.txt (as printed), stream.png (gnuplot).
set -eu
cd "$(dirname "$0")/.."

log() { echo "run-stream: $*" >&2; }

if [ "${JNFS_IN_NETNS:-}" != 1 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		log "needs root (losetup, mount, namespaces)"
		exit 1
	fi
	scripts/install-deps
	scripts/install-bench-deps
	make -s build >/dev/null
	JNFS_IN_NETNS=1 exec unshare --net --mount sh "$0" "$@"
fi

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	ROUNDS=${ROUNDS:-1}
	TOTAL_MIB=${TOTAL_MIB:-128}
	SMALL_TOTAL_MIB=${SMALL_TOTAL_MIB:-32}
	SETTLE_S=${SETTLE_S:-1}
fi
ROUNDS=${ROUNDS:-3}
IOS=${IOS:-1M 64K}
STREAMS=${STREAMS:-1 4 16}
PROTOS=${PROTOS:-nfs3 nfs4}
WORKLOADS=${WORKLOADS:-unstable filesync read}
DEPTH=${DEPTH:-8}
TOTAL_MIB=${TOTAL_MIB:-1024}
SMALL_TOTAL_MIB=${SMALL_TOTAL_MIB:-256}
THREADS=${THREADS:-8}
PNFS=${PNFS:-1}
SETTLE_S=${SETTLE_S:-2}
BENCH_DIR=${BENCH_DIR:-/var/tmp}
OUT=${OUT:-build/bench-results}
LOOP_DIRECT_IO=${LOOP_DIRECT_IO:-on}
NSTREAMS=$(echo "$STREAMS" | wc -w)
# every stream count's files, the pNFS file, the journal, and as much again:
# XFS's speculative preallocation grows with a file (with 1 GiB cells, a
# 5 GiB XFS filled up and Ganesha answered short WRITEs)
IMAGE_MIB=${IMAGE_MIB:-$((2 * (NSTREAMS + 1) * TOTAL_MIB + 1024))}
JPORT=2049
GPORT=2050
GMPORT=2051
BENCH=./build/bench/stream-bench
[ -x "$BENCH" ] || { log "$BENCH is not built (libnfs missing?)"; exit 1; }

cleanup() {
	[ -n "$JPID" ] && kill "$JPID" 2>/dev/null || true
	[ -n "$GPID" ] && kill "$GPID" 2>/dev/null || true
	[ -n "$JPID" ] && wait "$JPID" 2>/dev/null || true
	[ -n "$GPID" ] && wait "$GPID" 2>/dev/null || true
	[ -n "$RPCBIND_PID" ] && kill "$RPCBIND_PID" 2>/dev/null || true
	if [ -n "$MNT" ]; then
		umount "$MNT" || umount -l "$MNT" || true
	fi
	if [ -n "$LOOP" ]; then
		losetup -d "$LOOP" || true
	fi
	rm -rf "$TMP"
}

# ---- storage and servers ----

ip link set lo up
mount -t tmpfs tmpfs /run
mkdir -p /run/rpcbind /run/ganesha
TMP=$(mktemp -d "$BENCH_DIR/jnfs-stream.XXXXXX")
LOOP='' MNT='' RPCBIND_PID='' JPID='' GPID=''
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

T_START=$(date +%s)
dd if=/dev/zero of="$TMP/jnfs.img" bs=4M count=$((IMAGE_MIB / 4)) conv=fsync status=none
dd if=/dev/zero of="$TMP/xfs.img" bs=4M count=$((IMAGE_MIB / 4)) conv=fsync status=none
dd if=/dev/zero of="$TMP/raw.img" bs=4M count=$((TOTAL_MIB / 4)) conv=fsync status=none
LOOP=$(losetup --find --show --direct-io="$LOOP_DIRECT_IO" "$TMP/xfs.img")
mkfs.xfs -q -K "$LOOP"
mkdir "$TMP/mnt"
mount -t xfs "$LOOP" "$TMP/mnt"
MNT="$TMP/mnt"
LOOPDEV=${LOOP#/dev/}
./build/jnfs mkfs "$TMP/jnfs.img" >/dev/null
DISK=$(df --output=source "$BENCH_DIR" | tail -1)
DISKDEV=$(lsblk -no PKNAME "$DISK" 2>/dev/null | head -1)
[ -n "$DISKDEV" ] || DISKDEV=$(basename "$DISK")
[ -r "/sys/block/$DISKDEV/stat" ] || DISKDEV=
STORAGE="image files on $BENCH_DIR ($DISK, $(findmnt -n -o FSTYPE --target "$BENCH_DIR")), zero-filled, ${IMAGE_MIB} MiB each (raw: ${TOTAL_MIB} MiB); loop direct-io $(sed 's/^1$/on/; s/^0$/off/' "/sys/block/$LOOPDEV/loop/dio" 2>/dev/null || echo "$LOOP_DIRECT_IO?")"
log "storage: $STORAGE; XFS on $LOOP"

rpcbind -f &
RPCBIND_PID=$!
for _ in $(seq 100); do
	rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
	sleep 0.05
done

_pnfs=
[ "$PNFS" = 1 ] && _pnfs=,pnfs
printf '/ 127.0.0.1(rw,sync,insecure,no_root_squash%s)\n' "$_pnfs" >"$TMP/exports"
./build/jnfsd --image "$TMP/jnfs.img" --exports "$TMP/exports" --listen "127.0.0.1:$JPORT" \
	--threads "$THREADS" --rpcbind off >"$TMP/jnfsd.out" 2>"$TMP/jnfsd.err" &
JPID=$!

# No Bind_addr: see run-nfs3-untar.sh. The RPC buffers hold a 1 MiB WRITE
# or READ with its headers.
mkdir -p "$TMP/ganesha-recovery"
cat >"$TMP/ganesha.conf" <<CONF
NFS_CORE_PARAM {
	NFS_Port = $GPORT;
	MNT_Port = $GMPORT;
	NFS_Protocols = 3, 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
	MaxRPCSendBufferSize = 2097152;
	MaxRPCRecvBufferSize = 2097152;
}
NFSV4 {
	Graceless = true;
	Minor_Versions = 1;
	RecoveryBackend = fs;
	RecoveryRoot = $TMP/ganesha-recovery;
}
LOG { Default_Log_Level = WARN; }
EXPORT {
	Export_Id = 1;
	Path = $MNT;
	Pseudo = /bench;
	Protocols = 3, 4;
	Transports = TCP;
	Access_Type = RW;
	Squash = No_Root_Squash;
	SecType = sys;
	MaxRead = 1048576;
	MaxWrite = 1048576;
	FSAL { Name = VFS; }
}
CONF
ganesha.nfsd -F -f "$TMP/ganesha.conf" -L "$TMP/ganesha.log" -p "$TMP/ganesha.pid" -N NIV_WARN &
GPID=$!

# what reaches each server's export over each protocol
client() { # server proto args...
	_s=$1 _p=$2
	shift 2
	case $_s,$_p in
	jnfsd,nfs3) "$BENCH" --proto nfs3 --port "$JPORT" --export / --server-pid "$JPID" "$@" ;;
	jnfsd,nfs4) "$BENCH" --proto nfs4 --port "$JPORT" --export / --server-pid "$JPID" "$@" ;;
	ganesha,nfs3)
		"$BENCH" --proto nfs3 --port "$GPORT" --mount-port "$GMPORT" --export "$MNT" \
			--server-pid "$GPID" "$@" ;;
	ganesha,nfs4) "$BENCH" --proto nfs4 --port "$GPORT" --export /bench --server-pid "$GPID" "$@" ;;
	esac
}

for s in jnfsd ganesha; do
	for p in $PROTOS; do
		ok=
		for _ in $(seq 100); do
			if client "$s" "$p" --op write --io 64K --bytes 64K --prefix warmup >/dev/null 2>"$TMP/warm.err"; then
				ok=1
				break
			fi
			sleep 0.2
		done
		if [ -z "$ok" ]; then
			log "$s does not answer over $p"
			cat "$TMP/warm.err" >&2
			[ "$s" = ganesha ] && tail -5 "$TMP/ganesha.log" >&2
			[ "$s" = jnfsd ] && cat "$TMP/jnfsd.err" >&2
			exit 1
		fi
	done
done

# Before each run: jnfsd's idle files trimmed of their preallocation,
# everything written made durable, the disk quiet (as untar-common.sh).
settle() {
	for _i in $(seq 150); do
		./build/jnfs stat --server "127.0.0.1:$JPORT" 2>/dev/null >"$TMP/settle.stat" || true
		grep -q '^fs.eof_listed ' "$TMP/settle.stat" || break
		grep -qx 'fs.eof_listed 0' "$TMP/settle.stat" && break
		sleep 0.2
	done
	sync
	[ -n "$DISKDEV" ] || return 0
	_prev=
	for _i in $(seq $((SETTLE_S * 2))); do
		_cur=$(awk '{ print $5, $7, $9 }' "/sys/block/$DISKDEV/stat")
		[ "$_cur" = "$_prev" ] && return 0
		_prev=$_cur
		sleep 0.5
	done
}

bytes_per_stream() { # io streams
	if [ "$1" = 1M ]; then echo $((TOTAL_MIB / $2))M; else echo $((SMALL_TOTAL_MIB / $2))M; fi
}

mkdir -p "$OUT"
RUNS="$OUT/stream-runs.csv"
echo "round,system,proto,op,stable,streams,io,depth,bytes,seconds,mib_per_s,server_cpu_s,server_cpu_s_per_gib" >"$RUNS"

one() { # round system proto workload io streams
	_r=$1 _sys=$2 _p=$3 _w=$4 _io=$5 _n=$6
	_op=write _st=unstable
	case $_w in
	read) _op='read' ;;
	filesync) _st=filesync ;;
	esac
	_b=$(bytes_per_stream "$_io" "$_n")
	_t0=$(date +%s)
	settle
	_t1=$(date +%s)
	case $_sys in
	raw)
		"$BENCH" --proto raw --path "$TMP/raw.img" --op "$_op" --stable "$_st" --streams "$_n" \
			--io "$_io" --bytes "$_b" --depth "$DEPTH" --csv >"$TMP/one.out" ;;
	tcp)
		"$BENCH" --proto tcp --op write --streams "$_n" --io "$_io" --bytes "$_b" --csv \
			>"$TMP/one.out" ;;
	*)
		if [ "$_sys" = ganesha ] && [ "$_op" = read ]; then
			for _k in $(seq 0 $((_n - 1))); do
				_f="$MNT/stream/s$_n-f$_k"
				dd if="$_f" iflag=nocache count=0 status=none
				_res=$(fincore -nb -o RES "$_f" 2>/dev/null | tr -d ' ' || echo 0)
				[ "${_res:-0}" = 0 ] || log "$_f: $_res bytes still cached before the read"
			done
		fi
		client "$_sys" "$_p" --op "$_op" --stable "$_st" --streams "$_n" --io "$_io" \
			--bytes "$_b" --depth "$DEPTH" --prefix "s$_n" --csv >"$TMP/one.out" ;;
	esac
	_row=$(tail -1 "$TMP/one.out" | cut -d, -f2-)
	echo "$_r,$_sys,$_row" >>"$RUNS"
	log "round $_r $_sys $_p $_w io=$_io S=$_n: $(sed -n 's/^stream.mib_per_s //p' "$TMP/one.out") MiB/s, server CPU $(sed -n 's/^stream.server_cpu_s_per_gib //p' "$TMP/one.out") s/GiB ($((_t1 - _t0)) s settling, $(($(date +%s) - _t1)) s run; $(($(date +%s) - T_START)) s since the start)"
}

# the systems in the order of round $1, rotated by one every round
order() { # round systems...
	_r=$1
	shift
	echo "$@" | awk -v r="$_r" '{ for (i = 0; i < NF; i++) print $((i + r) % NF + 1) }'
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
# every file written once, untimed: the measured writes are overwrites
for n in $STREAMS; do
	for s in jnfsd ganesha; do
		client "$s" nfs3 --op write --streams "$n" --io 1M --bytes "$(bytes_per_stream 1M "$n")" \
			--depth "$DEPTH" --prefix "s$n" >/dev/null
	done
done
log "files written ($(($(date +%s) - T_START)) s since the start)"

for r in $(seq "$ROUNDS"); do
	for io in $IOS; do
		for n in $STREAMS; do
			one "$r" tcp tcp - "$io" "$n"
			for w in $WORKLOADS; do
				for p in $PROTOS; do
					for s in $(order "$r" jnfsd ganesha raw); do
						# the disk's figure once per workload
						[ "$s" = raw ] && [ "$p" != "${PROTOS%% *}" ] && continue
						_sp=$p
						[ "$s" = raw ] && _sp=raw
						one "$r" "$s" "$_sp" "$w" "$io" "$n"
					done
				done
			done
		done
	done
done

# ---- the pNFS cell: jnfs pnfs put / get, 1 MiB I/O ----
PNFS_RUNS="$OUT/stream-pnfs-runs.csv"
if [ "$PNFS" = 1 ]; then
	echo "round,op,depth,bytes,seconds,mib_per_s" >"$PNFS_RUNS"
	dd if=/dev/urandom of=/run/pnfs-src bs=1M count="$TOTAL_MIB" status=none
	for r in $(seq "$ROUNDS"); do
		for op in put get; do
			settle
			_t0=$(date +%s.%N)
			if [ "$op" = put ]; then
				./build/jnfs pnfs "nfs://127.0.0.1:$JPORT/stream" --device "$TMP/jnfs.img" \
					--minor 1 --no-stats put /run/pnfs-src pnfs-f0 --io 1M --depth "$DEPTH" \
					>"$TMP/pnfs.out" 2>"$TMP/pnfs.err"
			else
				./build/jnfs pnfs "nfs://127.0.0.1:$JPORT/stream" --device "$TMP/jnfs.img" \
					--minor 1 --no-stats get pnfs-f0 /dev/null --io 1M --depth "$DEPTH" \
					>"$TMP/pnfs.out" 2>"$TMP/pnfs.err"
			fi || { log "jnfs pnfs $op failed"; cat "$TMP/pnfs.err" >&2; exit 1; }
			_t1=$(date +%s.%N)
			awk -v r="$r" -v op="$op" -v d="$DEPTH" -v b=$((TOTAL_MIB * 1048576)) -v t0="$_t0" -v t1="$_t1" \
				'BEGIN { printf "%s,%s,%s,%s,%.3f,%.1f\n", r, op, d, b, t1 - t0, b / 1048576 / (t1 - t0) }' \
				>>"$PNFS_RUNS"
			log "round $r pnfs $op: $(tail -1 "$PNFS_RUNS" | cut -d, -f6) MiB/s"
		done
	done
	rm -f /run/pnfs-src
fi

# ---- the table ----
python3 bench/stream_table.py "$RUNS" "$OUT/stream.csv" "$PNFS_RUNS" "$OUT/stream-pnfs.csv"
T_END=$(date +%s)
{
	echo "stream: jnfsd (sync export, --threads $THREADS) vs NFS-Ganesha $(dpkg-query -W -f='${Version}' nfs-ganesha 2>/dev/null) (FSAL_VFS, XFS on $LOOP); ceilings: the disk (O_DIRECT on a file beside the images) and loopback TCP"
	echo "storage: $STORAGE"
	echo "kernel $(uname -r); $(nproc) CPUs; load average $LOAD0 before, $(cut -d' ' -f1-3 /proc/loadavg) after; $((T_END - T_START)) s"
	echo "$ROUNDS round(s), systems taking turns; $DEPTH calls in flight per stream; data per cell: 1M I/O ${TOTAL_MIB} MiB, 64K I/O ${SMALL_TOTAL_MIB} MiB, split over the streams"
	echo "MiB/s: median (min-max) over rounds; ratio: median (min-max) of per-round jnfsd/Ganesha; of_ceiling: jnfsd / min(raw, tcp)"
	echo "cpu s/GiB: the server process's utime+stime per GiB moved (Ganesha's kernel work in other threads, XFS writeback and loop workers, is not in it)"
	echo "Ganesha's files dropped from the page cache before every read (posix_fadvise DONTNEED); jnfsd keeps no data but its readahead windows (64 of 1 MiB; --readahead-mib, --no-readahead)"
	echo
	column -s, -t <"$OUT/stream.csv" 2>/dev/null || cat "$OUT/stream.csv"
	if [ -s "$OUT/stream-pnfs.csv" ]; then
		echo
		echo "pNFS: jnfs pnfs put (creates the file, one LAYOUTCOMMIT) / get (READ layout) of ${TOTAL_MIB} MiB in 1 MiB I/O, --depth $DEPTH (I/Os in flight), timed with the command's start (mount) and end; beside jnfsd's NFSv4.1 1-stream 1 MiB write-unstable / read and the disk's raw figure, both at depth $DEPTH"
		column -s, -t <"$OUT/stream-pnfs.csv" 2>/dev/null || cat "$OUT/stream-pnfs.csv"
	fi
} | tee "$OUT/stream.txt"
