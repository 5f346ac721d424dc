#!/bin/sh
# libnfs_tools.sh - jnfsd's NFSv3 checked with libnfs's command-line tools:
# nfs-cp copies a file to jnfsd and back, nfs-cat prints it, nfs-ls lists
# it, all through nfs://127.0.0.1/?version=3&nfsport=P&mountport=P on the
# embedded default exports; `jnfs stat --server` then shows the counters. jnfsd is stopped by PID and must exit 0; the
# image must then check clean.
#
# usage: libnfs_tools.sh JNFSD JNFS
set -eu
JNFSD=$1
JNFS=$2
for t in nfs-ls nfs-cp nfs-cat; do
	command -v $t >/dev/null || { echo "$t missing (scripts/install-deps installs libnfs-utils)" >&2; exit 1; }
done
TMP=$(mktemp -d)
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

"$JNFSD" --image "$TMP/img" --size 128M --listen 127.0.0.1:0 --rpcbind off --threads 2 \
	>"$TMP/out" 2>"$TMP/err" &
PID=$!
for _ in $(seq 200); do
	grep -q '^listening on' "$TMP/out" 2>/dev/null && break
	sleep 0.05
done
PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/out")
[ -n "$PORT" ] || fail "jnfsd did not start: $(cat "$TMP/err")"
Q="?version=3&nfsport=$PORT&mountport=$PORT"

head -c 3000000 /dev/urandom >"$TMP/data"
nfs-cp "$TMP/data" "nfs://127.0.0.1//data$Q" || fail "nfs-cp to the server"
nfs-cp "nfs://127.0.0.1//data$Q" "$TMP/back" || fail "nfs-cp from the server"
cmp "$TMP/data" "$TMP/back" || fail "the copy that came back differs"
echo "hello, jnfs" >"$TMP/small"
nfs-cp "$TMP/small" "nfs://127.0.0.1//small.txt$Q" || fail "nfs-cp small"
[ "$(nfs-cat "nfs://127.0.0.1//small.txt$Q")" = "hello, jnfs" ] || fail "nfs-cat"
nfs-ls "nfs://127.0.0.1/$Q" >"$TMP/ls" || fail "nfs-ls"
cat "$TMP/ls"
grep -q ' 3000000 data$' "$TMP/ls" || fail "nfs-ls does not show data with its size"
grep -q ' small.txt$' "$TMP/ls" || fail "nfs-ls does not show small.txt"

# the running server's counters, as `jnfs stat --server` prints them
"$JNFS" stat --server "127.0.0.1:$PORT" >"$TMP/stat" || fail "jnfs stat --server"
for c in rpc.nfs.v3.write rpc.nfs.v3.create rpc.mount.v3.mnt; do
	v=$(sed -n "s/^$c \([0-9]*\)$/\1/p" "$TMP/stat")
	[ -n "$v" ] && [ "$v" -gt 0 ] || fail "jnfs stat: $c is '$v'"
done
for c in rpc.nfs.v3.write.p50_us rpc.nfs.v3.write.p99_us log.buffer_writes dev.flushes \
	srv.sync_waits fs.inode_writebacks; do
	grep -q "^$c [0-9]*$" "$TMP/stat" || fail "jnfs stat does not print $c"
done

kill -TERM "$PID"
status=0
wait "$PID" || status=$?
PID=
[ "$status" = 0 ] || fail "jnfsd exited with $status: $(cat "$TMP/err")"
"$JNFS" check "$TMP/img" || fail "jnfs check"
echo "ok nfs-cp both ways, nfs-cat, nfs-ls"
