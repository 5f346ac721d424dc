#!/bin/sh
# test_jnfsd_size.sh - jnfsd and jnfs read sizes with one parser
# (base/parse.h): `jnfsd --size 8g` creates an image of 8 GiB, as
# `jnfs mkfs --size 8g` does (the same byte count), and serves it;
# sizes that are not sizes, 0, and more than 2^50 bytes are refused with
# exit status 2 and the option named. Every process it starts is stopped
# by PID.
# usage: test_jnfsd_size.sh JNFSD JNFS
set -eu
JNFSD=$1
JNFS=$2
TMP=$(mktemp -d /tmp/jnfsd-size.XXXXXX)
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

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
