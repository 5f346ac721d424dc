#!/bin/sh
# test_jnfsd_start.sh - jnfsd's start, good and bad.
#
# Sizes: jnfsd and jnfs read them with one parser (base/parse.h):
# `jnfsd --size 8g` creates an image of 8 GiB, as `jnfs mkfs --size 8g`
# does (the same byte count), and serves it; sizes that are not sizes, 0,
# and more than 2^50 bytes are refused with exit status 2 and the option
# named.
#
# The one unwind path (server_close in jnfsd.c): a start that fails at
# each step of server_open - the exports file, the image, the log device,
# the mount, an export that does not resolve, a listener, the metrics
# endpoint - exits 1 with its message, undoes what was done (no crash;
# under ASan no leak), and leaves an image it had mounted clean for
# `jnfs check`.
#
# Every process it starts is stopped by PID.
# usage: test_jnfsd_start.sh JNFSD JNFS
set -eu
JNFSD=$1
JNFS=$2
TMP=$(mktemp -d /tmp/jnfsd-start.XXXXXX)
PID=
HOLD=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null || true
	[ -n "$HOLD" ] && kill "$HOLD" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# ---- sizes ----

"$JNFSD" --image "$TMP/d.img" --size 8g --listen 127.0.0.1:0 --rpcbind off --threads 2 \
	>"$TMP/out" 2>"$TMP/err" &
PID=$!
for _ in $(seq 600); do
	grep -q '^listening on' "$TMP/out" 2>/dev/null && break
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.1
done
grep -q '^listening on 127\.0\.0\.1:' "$TMP/out" ||
	fail "jnfsd --size 8g did not start: $(cat "$TMP/err")"
grep -q "created $TMP/d.img (8192 MiB)" "$TMP/err" ||
	fail "jnfsd --size 8g: no 8192 MiB image: $(cat "$TMP/err")"
kill -TERM "$PID"
st=0
wait "$PID" || st=$?
PID=
[ "$st" -eq 0 ] || fail "jnfsd exited $st after SIGTERM: $(cat "$TMP/err")"

"$JNFS" mkfs "$TMP/c.img" --size 8g >/dev/null
[ "$(stat -c %s "$TMP/d.img")" = "$(stat -c %s "$TMP/c.img")" ] ||
	fail "jnfsd and jnfs mkfs made images of $(stat -c %s "$TMP/d.img") and" \
		"$(stat -c %s "$TMP/c.img") bytes for --size 8g"
echo "ok: jnfsd --size 8g and jnfs mkfs --size 8g: $(stat -c %s "$TMP/d.img") bytes"
rm -f "$TMP/d.img" "$TMP/c.img"

for bad in 8x 8gg -8g "" 0 2000t 0x; do
	st=0
	"$JNFSD" --image "$TMP/never.img" --size "$bad" --listen 127.0.0.1:0 --rpcbind off \
		>/dev/null 2>"$TMP/err" || st=$?
	[ "$st" -eq 2 ] || fail "jnfsd --size '$bad' exited $st, expected 2"
	grep -q -- "bad value '$bad' for --size" "$TMP/err" ||
		fail "jnfsd --size '$bad': $(cat "$TMP/err")"
	[ ! -e "$TMP/never.img" ] || fail "jnfsd --size '$bad' created an image"
done
echo "ok: bad sizes refused"

# ---- failed starts ----

# a port in use, for the listener and the metrics endpoint to fail on
python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(600)' >"$TMP/port" &
HOLD=$!
for _ in $(seq 100); do
	[ -s "$TMP/port" ] && break
	sleep 0.05
done
BUSY=$(cat "$TMP/port")
[ -n "$BUSY" ] || fail "no busy port"

printf 'garbage line (\n' >"$TMP/bad-exports"
printf '/ 127.0.0.1(rw)\n/nonexistent 127.0.0.1(rw)\n' >"$TMP/unresolved"
head -c 1048576 /dev/zero >"$TMP/zero.img"

# start WHAT MESSAGE CHECK-IMAGE ARGS...: jnfsd ARGS must exit 1 saying MESSAGE
start() {
	what=$1 msg=$2 check=$3
	shift 3
	rm -f "$TMP/img"
	st=0
	"$JNFSD" --rpcbind off --threads 2 --size 64m "$@" >"$TMP/out" 2>"$TMP/err" || st=$?
	[ "$st" -eq 1 ] || fail "$what: exit status $st, expected 1: $(cat "$TMP/err")"
	grep -q -- "$msg" "$TMP/err" || fail "$what: no '$msg' in: $(cat "$TMP/err")"
	! grep -q '^listening on' "$TMP/out" || fail "$what: said it listens"
	if [ "$check" = check ]; then
		"$JNFS" check "$TMP/img" >"$TMP/check" 2>&1 ||
			fail "$what: jnfs check after the failed start: $(cat "$TMP/check")"
	fi
	echo "ok: $what"
}

L="--listen 127.0.0.1:0"
start "bad exports file" "bad-exports:1:" - --exports "$TMP/bad-exports" --image "$TMP/img" $L
[ ! -e "$TMP/img" ] || fail "a bad exports file still created the image"
start "no exports file" "No such file or directory" - --exports "$TMP/none" \
	--image "$TMP/img" $L
start "no log device" "cannot open log device" - --image "$TMP/img" \
	--log-device "$TMP/nolog" $L
start "not an image" "cannot mount" - --image "$TMP/zero.img" $L
start "export that does not resolve" "cannot export /nonexistent" check \
	--exports "$TMP/unresolved" --image "$TMP/img" $L
start "listener" "cannot listen on 127.0.0.1:$BUSY" check --image "$TMP/img" \
	$L --listen "127.0.0.1:$BUSY"
start "metrics endpoint" "--metrics 127.0.0.1:$BUSY" check --image "$TMP/img" $L \
	--metrics "127.0.0.1:$BUSY"
