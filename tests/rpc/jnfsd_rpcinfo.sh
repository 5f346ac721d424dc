#!/bin/sh
# jnfsd_rpcinfo.sh - jnfsd's RPC layer checked with the real rpcinfo (Debian rpcbind):
# `rpcinfo -n PORT -t 127.0.0.1 100003 3`, `... 100003 4` and `... 100005 3`
# report the programs ready; version 2 is refused with the supported range;
# jnfsd registers with rpcbind (rpcinfo -p lists it) and unregisters on
# SIGTERM, exiting 0; with no rpcbind it logs once and serves anyway.
#
# rpcinfo asks rpcbind even with -n, and registering must not touch the
# machine's own rpcbind, so the test runs in a private network and mount
# namespace with its own rpcbind (as root; CI runs as root). Every process
# it starts is stopped by PID.
#
# usage: jnfsd_rpcinfo.sh PATH-TO-JNFSD PATH-TO-TEST-RPC-TIRPC
set -eu
JNFSD=$1
TIRPC_TEST=$2

if [ "${JNFS_IN_NETNS:-}" != 1 ]; then
	if ! command -v rpcinfo >/dev/null || ! command -v rpcbind >/dev/null; then
		echo "rpcinfo/rpcbind missing (scripts/install-deps installs rpcbind)" >&2
		exit 1
	fi
	if ! unshare --net --mount true 2>/dev/null; then
		echo "SKIP: cannot create a network namespace here (not root?)"
		exit 77
	fi
	JNFS_IN_NETNS=1 exec unshare --net --mount sh "$0" "$@"
fi

ip link set lo up
mount -t tmpfs tmpfs /run
mkdir -p /run/rpcbind
TMP=$(mktemp -d)
RPCBIND_PID=
JNFSD_PID=
cleanup() {
	[ -n "$JNFSD_PID" ] && kill "$JNFSD_PID" 2>/dev/null || true
	[ -n "$RPCBIND_PID" ] && kill "$RPCBIND_PID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

start_jnfsd() {
	"$JNFSD" --listen 127.0.0.1:0 --listen '[::1]:0' --threads 2 --image "$TMP/img" \
		--size 64M "$@" \
		>"$TMP/out" 2>"$TMP/err" &
	JNFSD_PID=$!
	for _ in $(seq 100); do
		[ "$(grep -c '^listening on' "$TMP/out" 2>/dev/null)" = 2 ] && break
		sleep 0.05
	done
	PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/out")
	[ -n "$PORT" ] || fail "jnfsd did not report its port: $(cat "$TMP/err")"
}

stop_jnfsd() {
	kill -TERM "$JNFSD_PID"
	status=0
	wait "$JNFSD_PID" || status=$?
	JNFSD_PID=
	[ "$status" = 0 ] || fail "jnfsd exited with status $status on SIGTERM"
}

rpcbind -f &
RPCBIND_PID=$!
for _ in $(seq 100); do
	rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break
	sleep 0.05
done

# --- with rpcbind
start_jnfsd --rpcbind 127.0.0.1:111
for pv in "100003 3" "100003 4" "100005 3"; do
	out=$(rpcinfo -n "$PORT" -t 127.0.0.1 $pv 2>&1) || fail "rpcinfo $pv: $out"
	echo "$out"
	echo "$out" | grep -q "ready and waiting" || fail "rpcinfo $pv: $out"
done
if out=$(rpcinfo -n "$PORT" -t 127.0.0.1 100003 2 2>&1); then
	fail "version 2 answered: $out"
fi
echo "$out"
echo "$out" | grep -q "low version = 3, high version = 4" || fail "no PROG_MISMATCH range: $out"
if out=$(rpcinfo -n "$PORT" -t 127.0.0.1 100004 1 2>&1); then
	fail "program 100004 answered: $out"
fi
echo "$out" | grep -qi "not available\|unavailable\|not registered" || fail "no PROG_UNAVAIL: $out"

rpcinfo -p 127.0.0.1 >"$TMP/p"
cat "$TMP/p"
for pv in "100003 *3 *tcp *$PORT" "100003 *4 *tcp *$PORT" "100005 *3 *tcp *$PORT"; do
	grep -q "$pv" "$TMP/p" || fail "rpcbind does not list '$pv'"
done
# found through rpcbind, as a client that does not know the port would
rpcinfo -t 127.0.0.1 nfs 3 | grep -q "ready and waiting" || fail "rpcinfo -t nfs 3 via rpcbind"
rpcinfo -T tcp6 ::1 100003 4 | grep -q "ready and waiting" || fail "tcp6 registration"
grep -c "rpcbind not reachable" "$TMP/err" >/dev/null && fail "rpcbind reported unreachable"
stop_jnfsd
if rpcinfo -p 127.0.0.1 | grep -q "100003"; then
	fail "still registered after SIGTERM"
fi

# --- without rpcbind at the configured address: log once, serve anyway
# (rpcinfo -n itself needs the program registered, so a libtirpc client
# that is given the port checks the serving)
start_jnfsd --rpcbind 127.0.0.1:1
"$TIRPC_TEST" --port "$PORT" || fail "no rpcbind: jnfsd does not serve"
stop_jnfsd
n=$(grep -c "rpcbind not reachable" "$TMP/err" || true)
[ "$n" = 1 ] || fail "expected one 'rpcbind not reachable' message, got $n: $(cat "$TMP/err")"
echo "ok jnfsd and rpcinfo"
