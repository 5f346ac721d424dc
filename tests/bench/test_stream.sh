#!/bin/sh
# test_stream.sh - build/bench/stream-bench (bench/stream.c) against jnfsd,
# the disk and loopback TCP, without root: what bench/run-stream.sh relies
# on it for.
#  1. over NFSv3 and NFSv4.1, 2 streams: UNSTABLE writes + COMMIT, FILE_SYNC
#     writes, reads in 1 MiB and 64 KiB calls, several in flight; each run
#     moves the bytes it says and reads back exactly what was written (any
#     I/O size, either protocol: NFSv3 writes read over NFSv4.1);
#  2. reads that must fail: other data than written (--pattern), and a file
#     shorter than the read (a short READ);
#  3. the server's CPU time is read (--server-pid);
#  4. raw (O_DIRECT on a file) and tcp move their bytes;
# then a clean stop of jnfsd and `jnfs check` of its image.
#
# usage: sh tests/bench/test_stream.sh JNFSD JNFS STREAM-BENCH
set -eu
JNFSD=$1
JNFS=$2
SB=$3
# on the build's disk, not /tmp: the raw mode needs O_DIRECT
TMP=$(mktemp -d "$PWD/jnfs-stream-test.XXXXXX")
JPID=
cleanup() {
	[ -z "$JPID" ] || kill -9 "$JPID" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
	echo "test_stream: FAILED: $*" >&2
	exit 1
}
value() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }

"$JNFS" mkfs "$TMP/img" --size 256M >/dev/null
echo "/ 127.0.0.1(rw,sync,insecure,no_root_squash)" >"$TMP/exports"
"$JNFSD" --image "$TMP/img" --exports "$TMP/exports" --listen 127.0.0.1:0 --rpcbind off \
	--threads 4 --port-file "$TMP/port" </dev/null >"$TMP/jnfsd.log" 2>&1 &
JPID=$!
i=0
while [ ! -s "$TMP/port" ]; do
	[ $i -lt 300 ] || fail "jnfsd did not start: $(cat "$TMP/jnfsd.log")"
	sleep 0.1
	i=$((i + 1))
done
PORT=$(head -n 1 "$TMP/port")

# ok NAME BYTES ARGS...: a run that must succeed and move BYTES
ok() {
	_name=$1 _bytes=$2
	shift 2
	"$SB" --port "$PORT" --server-pid "$JPID" "$@" >"$TMP/$_name.out" 2>"$TMP/$_name.err" ||
		fail "$_name: $(cat "$TMP/$_name.err")"
	[ "$(value stream.bytes "$TMP/$_name.out")" = "$_bytes" ] ||
		fail "$_name moved $(value stream.bytes "$TMP/$_name.out") bytes, not $_bytes"
	echo "test_stream: $_name: $(value stream.mib_per_s "$TMP/$_name.out") MiB/s"
}
# refused NAME MESSAGE ARGS...: a run that must fail, saying MESSAGE
refused() {
	_name=$1 _msg=$2
	shift 2
	if "$SB" --port "$PORT" "$@" >"$TMP/$_name.out" 2>"$TMP/$_name.err"; then
		fail "$_name succeeded"
	fi
	grep -q "$_msg" "$TMP/$_name.err" || fail "$_name: $(cat "$TMP/$_name.err")"
	echo "test_stream: $_name: refused ($_msg)"
}

for p in nfs3 nfs4; do
	ok "$p-unstable" 8388608 --proto "$p" --op write --stable unstable --streams 2 --io 1M \
		--bytes 4M --depth 4 --prefix "$p"
	ok "$p-filesync" 8388608 --proto "$p" --op write --stable filesync --streams 2 --io 64K \
		--bytes 4M --depth 8 --prefix "$p"
	ok "$p-read-1M" 8388608 --proto "$p" --op read --streams 2 --io 1M --bytes 4M --depth 4 \
		--prefix "$p"
	ok "$p-read-64K" 4194304 --proto "$p" --op read --streams 2 --io 64K --bytes 2M \
		--depth 8 --prefix "$p"
	refused "$p-other-data" "other data" --proto "$p" --op read --streams 1 --io 64K \
		--bytes 1M --prefix "$p" --pattern 1
	refused "$p-short" "short READ" --proto "$p" --op read --streams 1 --io 1M --bytes 8M \
		--prefix "$p"
done
# written over NFSv3 with another pattern, read over NFSv4.1
ok cross-write 2097152 --proto nfs3 --op write --streams 1 --io 64K --bytes 2M --prefix x \
	--pattern 7
ok cross-read 2097152 --proto nfs4 --op read --streams 1 --io 1M --bytes 2M --prefix x \
	--pattern 7
refused cross-other "other data" --proto nfs4 --op read --streams 1 --io 1M --bytes 2M \
	--prefix x
cpu=$(value stream.server_cpu_s "$TMP/nfs3-unstable.out")
case $cpu in
[0-9]*) ;;
*) fail "no server CPU time: $cpu" ;;
esac

dd if=/dev/zero of="$TMP/raw.img" bs=1M count=8 status=none
for st in unstable filesync; do
	ok "raw-$st" 8388608 --proto raw --path "$TMP/raw.img" --op write --stable "$st" \
		--streams 2 --io 64K --bytes 4M --depth 4
done
ok raw-read 8388608 --proto raw --path "$TMP/raw.img" --op read --streams 4 --io 1M \
	--bytes 2M --depth 2
ok tcp 16777216 --proto tcp --op write --streams 2 --io 64K --bytes 8M

kill "$JPID"
wait "$JPID" || fail "jnfsd did not stop cleanly: $(cat "$TMP/jnfsd.log")"
JPID=
"$JNFS" check "$TMP/img" >"$TMP/check.out" 2>&1 || fail "jnfs check: $(cat "$TMP/check.out")"
echo "test_stream: ok"
