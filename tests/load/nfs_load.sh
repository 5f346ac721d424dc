#!/bin/sh
# nfs_load.sh - build/bench/nfs-load against jnfsd, without power cuts:
#  1. 4 clients for 6 s: every reply agrees with each client's model
#     (bench/load/work.c), and the final check of every name and file too;
#  2. the same with 300 ms between operations and jnfsd closing connections
#     idle for 200 ms (--idle-timeout): every operation then finds its
#     connection closed, reconnects, checks what the server has (nothing
#     may be missing, unstable data included: the server did not restart)
#     and sends the operation again;
#  3. 4 clients for 5 s beside hostile ones (bench/load/abuse.h): 200 idle
#     connections, 2 that never read their replies, 20 with half-sent
#     records, 1 flooding: each did its work, the measured clients agree
#     with their models, jnfsd survives;
# then a clean stop and `jnfs check`.
#
# usage: sh tests/load/nfs_load.sh JNFSD JNFS NFS-LOAD
set -eu
JNFSD=$1
JNFS=$2
LOAD=$3
TMP=$(mktemp -d "${TMPDIR:-/tmp}/jnfs-load.XXXXXX")
JPID=
cleanup() {
	[ -z "$JPID" ] || kill -9 "$JPID" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
	echo "nfs_load: FAILED: $*" >&2
	exit 1
}
# value NAME FILE
value() { awk -v n="$1" '$1 == n { print $2 }' "$2"; }

"$JNFS" mkfs "$TMP/img" --size 256M >/dev/null
echo "/ 127.0.0.1(rw,sync,insecure,no_root_squash)" >"$TMP/exports"
"$JNFSD" --image "$TMP/img" --exports "$TMP/exports" --listen 127.0.0.1:0 --rpcbind off \
	--threads 4 --idle-timeout 200 --port-file "$TMP/port" </dev/null >"$TMP/jnfsd.log" 2>&1 &
JPID=$!
i=0
while [ ! -s "$TMP/port" ]; do
	[ $i -lt 300 ] || fail "jnfsd did not start: $(cat "$TMP/jnfsd.log")"
	sleep 0.1
	i=$((i + 1))
done
ADDR=127.0.0.1:$(head -n 1 "$TMP/port")

echo "nfs_load: 4 clients, 6 s"
"$LOAD" --addr "$ADDR" --clients 4 --seconds 6 --seed 7 >"$TMP/a.out" 2>"$TMP/a.err" ||
	fail "nfs-load: $(cat "$TMP/a.err")"
grep -E '^load\.(ops_per_s|lat_us.p99|verified_files|mismatches|lost) ' "$TMP/a.out"
[ "$(value load.mismatches "$TMP/a.out")" = 0 ] || fail "mismatches"
[ "$(value load.verified_files "$TMP/a.out")" -gt 0 ] || fail "nothing verified"

echo "nfs_load: 4 clients, 300 ms apart, idle connections closed after 200 ms"
"$LOAD" --addr "$ADDR" --clients 4 --seconds 6 --seed 8 --think-us 300000 \
	>"$TMP/b.out" 2>"$TMP/b.err" || fail "nfs-load: $(cat "$TMP/b.err")"
grep -E '^load\.(ops|reconnects|resends|recoveries|restarts_seen|mismatches|lost) ' "$TMP/b.out"
[ "$(value load.mismatches "$TMP/b.out")" = 0 ] || fail "mismatches"
[ "$(value load.restarts_seen "$TMP/b.out")" = 0 ] || fail "a restart that did not happen"
[ "$(value load.recoveries "$TMP/b.out")" -ge 8 ] || fail "too few reconnects and checks"

echo "nfs_load: 4 clients beside idle, never-reading, half-sending and flooding ones"
"$LOAD" --addr "$ADDR" --clients 4 --seconds 5 --seed 9 --idle 200 --noread 2 --halfsent 20 \
	--flood 1 >"$TMP/c.out" 2>"$TMP/c.err" || fail "nfs-load: $(cat "$TMP/c.err")"
grep -E '^(load\.(ops_per_s|mismatches)|abuse\.(idle\.connections|noread\.reads_sent|halfsent\.records|flood\.replies)) ' "$TMP/c.out"
[ "$(value load.mismatches "$TMP/c.out")" = 0 ] || fail "mismatches"
[ "$(value abuse.noread.reads_sent "$TMP/c.out")" -gt 0 ] || fail "no READ sent by the never-readers"
[ "$(value abuse.halfsent.records "$TMP/c.out")" -ge 20 ] || fail "too few half-sent records"
[ "$(value abuse.flood.replies "$TMP/c.out")" -gt 0 ] || fail "the flood got no replies"
kill -0 "$JPID" || fail "jnfsd died"

kill -TERM "$JPID"
status=0
wait "$JPID" || status=$?
JPID=
[ "$status" = 0 ] || fail "jnfsd exited with $status"
"$JNFS" check "$TMP/img" || fail "jnfs check"
echo "nfs_load: passed"
