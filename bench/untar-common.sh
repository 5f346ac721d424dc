# untar-common.sh - sourced by run-nfs3-untar.sh and run-nfs4-untar.sh: an
# untar client (build/bench/nfs3-untar or nfs4-untar) against jnfsd and
# NFS-Ganesha, side by side in one run, and the ratio jnfsd/Ganesha. What
# differs between the two protocols (Ganesha's configuration, how the client
# reaches Ganesha's export, the calls whose latency is reported, and why each
# server's replies are durable) is in the calling script; the rest is here.
#
# Storage, the same for both: two image files in $BENCH_DIR (default
# /var/tmp, one local disk), each filled with zeros first so that neither
# server pays for the filesystem under it allocating blocks.
#   jnfsd:   `jnfs mkfs` on one image, served with --image, which jnfsd
#            reaches with O_DIRECT; its device flushes are fdatasync() of
#            that image (RWF_DSYNC for a FUA write).
#   Ganesha: FSAL_VFS over kernel XFS on a loop device over the other image
#            (mkfs.xfs -K), mounted with wsync. The loop device does direct
#            I/O to its image (LOOP_DIRECT_IO=on, as bench/xfs-loop.sh):
#            neither server has the host's page cache between it and the
#            disk, as on a real device, so a flush costs what the disk's
#            flush costs, not a writeback of cached pages first. A flush of the loop device (XFS's cache flushes
#            and, since a loop device has no FUA, its FUA writes) is an
#            fsync() of the image.
# jnfsd's export line says sync; XFS is mounted wsync, which commits every
# namespace transaction synchronously (what knfsd's sync export gets from
# XFS). Neither server is given anything the other is not: same disk, same
# client, same files, 127.0.0.1.
#
# The whole measurement runs in a private network and mount namespace
# (unshare), with its own rpcbind (Ganesha refuses to serve NFSv3 without
# registering, and registers NFSv4 when it can), since its mounts and ports
# must not touch the machine's. Every process started here is stopped by
# its PID; the loop device attached here is detached by name; the directory
# is removed.
#
# For each client count C and mode (filesync: every WRITE FILE_SYNC;
# unstable: UNSTABLE WRITEs + COMMIT per file), ROUNDS runs on each server,
# the servers taking turns (who goes first changes every round). Reported:
# the median files/s over the rounds, log writes and device flushes per
# file (from the median run), the median of the per-round ratios
# jnfsd/Ganesha with their smallest and largest (the spread of this run),
# and the mean latency per call of each of $UNTAR_OPS (the median over
# rounds).
#
# BASELINE_JNFSD=/path/to/an/older/jnfsd runs that jnfsd as a third server
# in the same rounds, taking turns with the other two, on a third image
# made the same way and formatted by its own mkfs (BASELINE_JNFS, default
# the jnfs beside BASELINE_JNFSD, else this build's), and prints its
# figures and the ratio new/old (this build's jnfsd over it, median of the
# per-round ratios, min-max) beside the others: a change compared before
# and after in one run.
#
# The calling script sets, then sources this file:
#   UNTAR        the benchmark's name (nfs3-untar): the client is
#                build/bench/$UNTAR, results are $OUT/$UNTAR*, messages
#                start with run-$UNTAR
#   UNTAR_PROTO  the protocol as the plot's title names it (NFSv3)
#   UNTAR_OPS    the calls whose mean latency is reported, as the client
#                prints them (untar.lat_us.OP)
# and defines two functions:
#   ganesha_conf     prints Ganesha's configuration ($GPORT, $GMPORT, $MNT,
#                    $TMP are set when it runs)
#   client_ganesha   runs "$BENCH" "$@" with what reaches Ganesha's export
# then calls untar_main "$@".
#
# environment: ROUNDS (5), MODES ("filesync unstable"), FILES_1 (files at
#   C=1, default 3000), FILES_N (files at C>1, default 12000), THREADS
#   (jnfsd --threads, default 8), BENCH_DIR, IMAGE_MIB (4096), JNFS_LOG_MIB
#   (jnfs journal size, default: the size of the XFS journal), OUT
#   (build/bench-results), BASELINE_JNFSD, BASELINE_JNFS, LOOP_DIRECT_IO
#   (on; off: the loop device goes through the page cache to its image),
#   JNFSD_ARGS (more options for jnfsd and the baseline, e.g.
#   "--flush-latency-us 1000", the 1 ms flush model: Ganesha's disk does
#   not get them, so the ratio to Ganesha then compares unlike disks)
# Results in $OUT: $UNTAR-runs.csv (every run), $UNTAR.csv (the table),
# $UNTAR.txt (as printed), $UNTAR.png (gnuplot).

log() { echo "run-$UNTAR: $*" >&2; }

# Outside the namespace: check the baseline, install, build, and run the
# script again inside a private network and mount namespace.
untar_enter() {
	BASELINE_JNFSD=${BASELINE_JNFSD:-}
	if [ -n "$BASELINE_JNFSD" ]; then
		if [ -z "${BASELINE_JNFS:-}" ]; then
			BASELINE_JNFS=./build/jnfs
			[ -x "$(dirname "$BASELINE_JNFSD")/jnfs" ] &&
				BASELINE_JNFS=$(dirname "$BASELINE_JNFSD")/jnfs
		fi
		for b in "$BASELINE_JNFSD" "$BASELINE_JNFS"; do
			if [ ! -x "$b" ]; then
				log "$b (baseline) is not an executable"
				exit 1
			fi
		done
		export BASELINE_JNFSD BASELINE_JNFS
	fi

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
}

untar_cleanup() {
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

# Inside the namespace: the images, XFS, the jnfs journal.
untar_storage() {
	ip link set lo up
	mount -t tmpfs tmpfs /run
	mkdir -p /run/rpcbind /run/ganesha

	TMP=$(mktemp -d "$BENCH_DIR/jnfs-$UNTAR.XXXXXX")
	LOOP=
	MNT=
	RPCBIND_PID=
	JPID=
	GPID=
	BPID=
	trap untar_cleanup EXIT
	trap 'exit 130' INT TERM HUP

	dd if=/dev/zero of="$TMP/jnfs.img" bs=4M count=$((IMAGE_MIB / 4)) conv=fsync status=none
	dd if=/dev/zero of="$TMP/xfs.img" bs=4M count=$((IMAGE_MIB / 4)) conv=fsync status=none
	if [ -n "$BASELINE_JNFSD" ]; then
		dd if=/dev/zero of="$TMP/base.img" bs=4M count=$((IMAGE_MIB / 4)) conv=fsync \
			status=none
	fi
	LOOP=$(losetup --find --show --direct-io="$LOOP_DIRECT_IO" "$TMP/xfs.img")
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
	# what the loop driver does, not what was asked: it falls back to the
	# page cache where the image's filesystem refuses direct I/O
	STORAGE="$STORAGE; loop direct-io $(sed 's/^1$/on/; s/^0$/off/' \
		"/sys/block/$LOOPDEV/loop/dio" 2>/dev/null || echo "$LOOP_DIRECT_IO?")"
	log "storage: $STORAGE; XFS on $LOOP mounted wsync"
}

client_jnfsd() { "$BENCH" "$@" --port "$JPORT"; }
client_baseline() { "$BENCH" "$@" --port "$BPORT"; }

# rpcbind, jnfsd (and the baseline), Ganesha; each must answer a one-file
# run before anything is measured.
untar_servers() {
	rpcbind -f &
	RPCBIND_PID=$!
	for _ in $(seq 100); do
		rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
		sleep 0.05
	done

	printf '/ 127.0.0.1(rw,sync,insecure,no_root_squash)\n' >"$TMP/exports"
	./build/jnfsd --image "$TMP/jnfs.img" --exports "$TMP/exports" \
		--listen "127.0.0.1:$JPORT" --threads "$THREADS" --rpcbind off ${JNFSD_ARGS:-} \
		>"$TMP/jnfsd.out" 2>"$TMP/jnfsd.err" &
	JPID=$!
	if [ -n "$BASELINE_JNFSD" ]; then
		"$BASELINE_JNFSD" --image "$TMP/base.img" --exports "$TMP/exports" \
			--listen "127.0.0.1:$BPORT" --threads "$THREADS" --rpcbind off ${JNFSD_ARGS:-} \
			>"$TMP/base.out" 2>"$TMP/base.err" &
		BPID=$!
	fi

	ganesha_conf >"$TMP/ganesha.conf"
	ganesha.nfsd -F -f "$TMP/ganesha.conf" -L "$TMP/ganesha.log" -p "$TMP/ganesha.pid" \
		-N NIV_WARN &
	GPID=$!

	untar_wait_server jnfsd
	[ -n "$BASELINE_JNFSD" ] && untar_wait_server baseline
	untar_wait_server ganesha
}

untar_wait_server() { # name
	for _ in $(seq 100); do
		if "client_$1" --files 1 --label warmup >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.2
	done
	log "$1 does not answer"
	[ "$1" = ganesha ] && tail -5 "$TMP/ganesha.log" >&2
	[ "$1" = jnfsd ] && cat "$TMP/jnfsd.err" >&2
	[ "$1" = baseline ] && cat "$TMP/base.err" >&2
	exit 1
}

# Before each run: jnfsd's idle files trimmed of their preallocation,
# everything written so far made durable (sync) and the disk quiet for a
# second, at most 30 s, so that neither server's run pays
# for the other's leftover writeback (XFS's and the journals' in-place
# metadata writes; the loop device's dirty pages with LOOP_DIRECT_IO=off).
untar_settle() {
	# jnfsd gives back the preallocation past EOF of files idle for 5 s
	# (what XFS does at Ganesha's close, inside Ganesha's run): that work
	# is done before anyone's next run
	# (a jnfsd that does not count them has none to trim)
	for _port in "$JPORT" ${BASELINE_JNFSD:+"$BPORT"}; do
		for _i in $(seq 150); do
			./build/jnfs stat --server "127.0.0.1:$_port" 2>/dev/null \
				>"$TMP/settle.stat" || true
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

untar_one() { # round server mode clients files
	_r=$1 _s=$2 _m=$3 _c=$4 _n=$5
	shift 5
	if [ "$_s" = ganesha ]; then
		set -- "$@" --xfs-dev "$LOOPDEV"
	else
		set -- "$@" --jnfsd-stats
	fi
	[ -n "$DISKDEV" ] && set -- "$@" --disk "$DISKDEV"
	untar_settle
	"client_$_s" --label "$_s" --mode "$_m" --clients "$_c" --files "$_n" --csv "$@" \
		>"$TMP/one.out"
	row=$(tail -1 "$TMP/one.out" | cut -d, -f2-)
	dfl=$(sed -n 's/^untar.disk_flush_us_avg //p' "$TMP/one.out")
	lat=
	for _op in $UNTAR_OPS; do
		_l=$(sed -n "s/^untar.lat_us.$_op //p" "$TMP/one.out")
		lat="$lat,${_l:-n/a}"
	done
	echo "$_r,$_s,$row,${dfl:-n/a}$lat" >>"$RUNS"
	log "round $_r $_s $_m C=$_c: $(sed -n 's/^untar.files_per_sec //p' "$TMP/one.out") files/s (disk flush ${dfl:-?} us)"
}

# the servers in the order of round $1: rotated by one every round
untar_order() {
	echo $SERVERS | awk -v r="$1" '{ for (i = 0; i < NF; i++) print $((i + r) % NF + 1) }'
}

untar_runs() {
	LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
	mkdir -p "$OUT"
	RUNS="$OUT/$UNTAR-runs.csv"
	{
		printf "round,server,mode,clients,files,dirs,bytes,seconds,files_per_sec,log_writes,"
		printf "log_writes_per_file,flushes,flushes_per_file,disk_flush_us"
		for _op in $UNTAR_OPS; do
			printf ",lat_%s_us" "$_op"
		done
		printf "\n"
	} >"$RUNS"
	SERVERS="jnfsd ganesha${BASELINE_JNFSD:+ baseline}"
	for c in $CLIENTS; do
		n=$FILES_N
		[ "$c" = 1 ] && n=$FILES_1
		for m in $MODES; do
			for r in $(seq "$ROUNDS"); do
				# take turns, and change who goes first each round
				for s in $(untar_order "$r"); do
					untar_one "$r" "$s" "$m" "$c" "$n"
				done
			done
		done
	done
}

# The table: medians over rounds, counters of the median run.
untar_table() {
	awk -F, -v baseline="${BASELINE_JNFSD:+1}" -v ops="$UNTAR_OPS" '
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
BEGIN { nops = split(ops, op, " ") }
NR > 1 {
	k = $3 "," $4
	if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
	i = ++cnt[k "," $2]
	fps[k "," $2 "," i] = $9
	lw[k "," $2 "," i] = $11
	fl[k "," $2 "," i] = $13
	# 14: disk_flush_us, then one latency per op
	for (c = 14; c <= 14 + nops; c++) val[k "," $2 "," i "," c] = $c
	files[k] = $5
}
END {
	nsrv = baseline ? 3 : 2
	srvs[1] = "jnfsd"; srvs[2] = "ganesha"; srvs[3] = "baseline"
	printf "mode,clients,files,jnfsd_files_per_sec,ganesha_files_per_sec,ratio,ratio_min,ratio_max," \
	       "jnfsd_log_writes_per_file,ganesha_log_writes_per_file," \
	       "jnfsd_flushes_per_file,ganesha_flushes_per_file,jnfsd_disk_flush_us,ganesha_disk_flush_us"
	for (s = 1; s <= nsrv; s++)
		for (o = 1; o <= nops; o++)
			printf ",%s_lat_%s_us", srvs[s], op[o]
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
			for (c = 15; c <= 14 + nops; c++)
				printf ",%s", medcol(k, srvs[s], c)
		if (baseline)
			printf ",%.1f,%s,%s,%s,%s", med["baseline"], ratios(k, "jnfsd", "baseline"),
			       mlw["baseline"], mfl["baseline"], mdl["baseline"]
		printf "\n"
	}
}' "$RUNS"
}

untar_report() {
	untar_table >"$OUT/$UNTAR.csv"
	{
		echo "$UNTAR: jnfsd (sync export, --threads $THREADS) vs NFS-Ganesha $(dpkg-query -W -f='${Version}' nfs-ganesha 2>/dev/null) (FSAL_VFS, XFS mounted wsync on $LOOP)"
		[ -n "$BASELINE_JNFSD" ] && echo "baseline: $BASELINE_JNFSD (mkfs: $BASELINE_JNFS), same exports and threads; new_over_old = median (min, max) of per-round jnfsd/baseline files/s"
		[ -n "${JNFSD_ARGS:-}" ] && echo "jnfsd${BASELINE_JNFSD:+ and the baseline} ran with $JNFSD_ARGS (Ganesha did not: its ratio compares unlike disks)"
		echo "storage: $STORAGE"
		echo "kernel $(uname -r); $(nproc) CPUs; load average $LOAD0 before, $(cut -d' ' -f1-3 /proc/loadavg) after"
		echo "median of $ROUNDS rounds, servers taking turns; ratio = median (min, max) of per-round jnfsd/Ganesha files/s"
		echo "lat_*_us: mean latency of one call (WRITE: a file's first WRITE to its last reply), median over rounds"
		echo "log writes: jnfsd log.buffer_writes, XFS log writes (/sys/fs/xfs/$LOOPDEV/stats);"
		echo "flushes: jnfsd dev.flushes + dev.fua_writes, loop device flush requests (/sys/block/$LOOPDEV/stat)"
		echo "disk_flush_us: mean time of a flush on ${DISKDEV:-the disk} during the runs (everyone's flushes: context only)"
		echo
		column -s, -t <"$OUT/$UNTAR.csv" 2>/dev/null || cat "$OUT/$UNTAR.csv"
	} | tee "$OUT/$UNTAR.txt"

	command -v gnuplot >/dev/null 2>&1 || return 0
	awk -F, 'NR > 1 { printf "\"%s C=%s\" %s %s\n", $1, $2, $4, $5 }' "$OUT/$UNTAR.csv" \
		>"$TMP/plot.dat"
	gnuplot <<GP
set terminal png size 1000,550
set output "$OUT/$UNTAR.png"
set title "$UNTAR: files/s over $UNTAR_PROTO, sync export (jnfsd vs NFS-Ganesha on XFS wsync, same disk)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "files/s (median)"
set key top left
set grid ytics
plot "$TMP/plot.dat" using 2:xtic(1) title "jnfsd", "" using 3 title "Ganesha"
GP
	log "plot in $OUT/$UNTAR.png"
}

untar_main() {
	untar_enter "$@"
	CLIENTS=${*:-1 8}
	ROUNDS=${ROUNDS:-5}
	MODES=${MODES:-filesync unstable}
	FILES_1=${FILES_1:-3000}
	FILES_N=${FILES_N:-12000}
	THREADS=${THREADS:-8}
	BENCH_DIR=${BENCH_DIR:-/var/tmp}
	IMAGE_MIB=${IMAGE_MIB:-4096}
	LOOP_DIRECT_IO=${LOOP_DIRECT_IO:-on}
	OUT=${OUT:-build/bench-results}
	JPORT=2049
	GPORT=2050
	GMPORT=2051
	BPORT=2052
	BENCH=./build/bench/$UNTAR

	untar_storage
	untar_servers
	untar_runs
	untar_report
}
