#!/bin/sh
# run-pnfs-throughput.sh - what `jnfs pnfs put` and `get` of one file move
# through a block layout, against the raw O_DIRECT speed of the same disk
# at the same offsets in the same run.
#
# jnfsd serves an image file with a `pnfs` export; the image is written in
# full once (a disk has no holes: the host filesystem allocates nothing
# during the runs) and made a fresh filesystem (`jnfs mkfs`) before each
# run. Each run, on the same machine with the image file as the client's
# disk:
#
#   put   jnfs pnfs put SRC f --io IO [--depth D]   (SRC: SIZE random bytes)
#   raw write   dd of the same bytes to where the server put f (found on
#               the image by its first and last blocks; the file must be
#               contiguous there), oflag=direct bs=IO: one write at a time
#   raw read    dd of those offsets, iflag=direct bs=IO
#   get   jnfs pnfs get f - --io IO [--depth D] > /dev/null
#
# put and get are timed from the command's start to its end (mount,
# LAYOUTGETs, LAYOUTCOMMIT and close included). With JNFS_BEFORE (another
# jnfs binary, e.g. one built from an earlier commit) each round runs it
# too (without --depth), the two taking turns in which goes first. Printed:
# medians of the rounds in MB/s (10^6 bytes) and each client's fraction of
# the raw figure of its own run. Not part of the test suite; no root
# needed; the machine's other load shows in the figures.
#
# usage: bench/run-pnfs-throughput.sh [ROUNDS]   (default 3)
# environment: SIZE (1G), IO (1M), DEPTH (empty: the default), WORK (where
#   the image goes; default /var/tmp), IMAGE_SIZE (3G), JNFS_BEFORE, OUT
#   (build/bench-results)
# Results in $OUT: pnfs-throughput-runs.csv, pnfs-throughput.txt.
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${1:-${ROUNDS:-3}}
SIZE=${SIZE:-1G}
IO=${IO:-1M}
DEPTH=${DEPTH:-}
IMAGE_SIZE=${IMAGE_SIZE:-3G}
OUT=${OUT:-build/bench-results}
JNFS_AFTER=./build/jnfs

make -s build >/dev/null
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d "${WORK:-/var/tmp}/pnfs-throughput.XXXXXX")
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

bytes() { numfmt --from=iec "$1"; }
SIZE_B=$(bytes "$SIZE")
IO_B=$(bytes "$IO")
COUNT=$((SIZE_B / IO_B))
[ $((COUNT * IO_B)) = "$SIZE_B" ] || { echo "run-pnfs-throughput: SIZE must be a multiple of IO" >&2; exit 2; }

echo "/ 127.0.0.1(rw,sync,insecure,no_root_squash,pnfs)" >"$TMP/exports"
head -c "$SIZE_B" /dev/urandom >"$TMP/src"
dd if=/dev/zero of="$TMP/img" bs=1M count=$(($(bytes "$IMAGE_SIZE") >> 20)) oflag=direct status=none

start_jnfsd() {
	rm -f "$TMP/ports"
	./build/jnfs mkfs "$TMP/img" >/dev/null
	./build/jnfsd --image "$TMP/img" --exports "$TMP/exports" --listen 127.0.0.1:0 \
		--port-file "$TMP/ports" --rpcbind off >"$TMP/jnfsd.out" 2>"$TMP/jnfsd.err" &
	JPID=$!
	for _ in $(seq 300); do
		[ -s "$TMP/ports" ] && break
		kill -0 "$JPID" 2>/dev/null || { cat "$TMP/jnfsd.err" >&2; exit 1; }
		sleep 0.1
	done
	[ -s "$TMP/ports" ] || { echo "run-pnfs-throughput: jnfsd did not start" >&2; exit 1; }
	URL=nfs://127.0.0.1:$(head -n 1 "$TMP/ports")/
}

stop_jnfsd() {
	kill "$JPID"
	wait "$JPID" || { echo "run-pnfs-throughput: jnfsd failed" >&2; cat "$TMP/jnfsd.err" >&2; exit 1; }
	JPID=
}

# seconds a command takes (its output to $TMP/cmd.out, errors to cmd.err)
timed() {
	_t0=$(date +%s.%N)
	"$@" >"$TMP/cmd.out" 2>"$TMP/cmd.err" || {
		echo "run-pnfs-throughput: failed: $*" >&2
		cat "$TMP/cmd.err" >&2
		exit 1
	}
	_t1=$(date +%s.%N)
	echo "$_t0 $_t1" | awk '{ printf "%.3f", $2 - $1 }'
}

# where the server put the file: the offset on the image of its first
# block, if its last block is where a contiguous file's would be
find_file() {
	python3 - "$TMP/img" "$TMP/src" <<'PY'
import os, sys
img, src = sys.argv[1], sys.argv[2]
size = os.path.getsize(src)
with open(src, 'rb') as f:
    first = f.read(4096)
    f.seek(size - 4096)
    last = f.read(4096)
fd = os.open(img, os.O_RDONLY)
end, off, step = os.fstat(fd).st_size, 0, 64 << 20
while off < end:
    buf = os.pread(fd, step + 4096, off)
    i = buf.find(first)
    while i >= 0:
        if (off + i) % 4096 == 0 and os.pread(fd, 4096, off + i + size - 4096) == last:
            print(off + i)
            sys.exit(0)
        i = buf.find(first, i + 1)
    off += step
sys.exit(1)
PY
}

RUNS="$OUT/pnfs-throughput-runs.csv"
echo "round,client,put_s,raw_write_s,get_s,raw_read_s" >"$RUNS"
run_one() { # round client binary
	_depth=
	[ "$2" = after ] && [ -n "$DEPTH" ] && _depth="--depth $DEPTH"
	start_jnfsd
	# shellcheck disable=SC2086
	put_s=$(timed "$3" pnfs "$URL" --device "$TMP/img" --no-stats put "$TMP/src" f --io "$IO" $_depth)
	at=$(find_file) || { echo "run-pnfs-throughput: the file is not contiguous on the image" >&2; exit 1; }
	wr_s=$(timed dd if="$TMP/src" of="$TMP/img" bs="$IO_B" oflag=direct,seek_bytes seek="$at" conv=notrunc status=none)
	rd_s=$(timed dd if="$TMP/img" of=/dev/null bs="$IO_B" iflag=direct,skip_bytes skip="$at" count="$COUNT" status=none)
	# shellcheck disable=SC2086
	get_s=$(timed sh -c "\"\$0\" pnfs \"$URL\" --device \"$TMP/img\" --no-stats get f - --io $IO $_depth >/dev/null" "$3")
	stop_jnfsd
	echo "$1,$2,$put_s,$wr_s,$get_s,$rd_s" >>"$RUNS"
	echo "run-pnfs-throughput: round $1 $2: put $put_s s (raw write $wr_s s), get $get_s s (raw read $rd_s s)" >&2
}

for r in $(seq "$ROUNDS"); do
	if [ -n "${JNFS_BEFORE:-}" ]; then
		if [ $((r % 2)) = 1 ]; then
			run_one "$r" before "$JNFS_BEFORE"
			run_one "$r" after "$JNFS_AFTER"
		else
			run_one "$r" after "$JNFS_AFTER"
			run_one "$r" before "$JNFS_BEFORE"
		fi
	else
		run_one "$r" after "$JNFS_AFTER"
	fi
done

{
	echo "jnfs pnfs put/get of $SIZE in $IO I/O against dd O_DIRECT at the same offsets, medians of $ROUNDS rounds (MB/s)"
	echo "depth: ${DEPTH:-the default}; before: ${JNFS_BEFORE:-none}"
	echo
	awk -F, -v size="$SIZE_B" '
	function median(a, n,    i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	NR > 1 {
		c = $2
		if (!(c in n)) cs[++nc] = c
		k = ++n[c]
		put[c, k] = size / $3 / 1e6; rw[c, k] = size / $4 / 1e6
		get[c, k] = size / $5 / 1e6; rr[c, k] = size / $6 / 1e6
		pf[c, k] = $4 / $3; gf[c, k] = $6 / $5
	}
	END {
		printf "%-7s %9s %9s %8s %9s %9s %8s\n", "client", "put", "raw wr", "put/raw", "get", "raw rd", "get/raw"
		for (i = 1; i <= nc; i++) {
			c = cs[i]
			for (k = 1; k <= n[c]; k++) {
				a[k] = put[c, k]; b[k] = rw[c, k]; d[k] = pf[c, k]
				e[k] = get[c, k]; g[k] = rr[c, k]; h[k] = gf[c, k]
			}
			printf "%-7s %9.0f %9.0f %7.0f%% %9.0f %9.0f %7.0f%%\n", c, median(a, n[c]), median(b, n[c]),
			       100 * median(d, n[c]), median(e, n[c]), median(g, n[c]), 100 * median(h, n[c])
		}
	}' "$RUNS"
	echo
	echo "CSV:"
	cat "$RUNS"
} | tee "$OUT/pnfs-throughput.txt"
