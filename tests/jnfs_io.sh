#!/bin/sh
# jnfs_io.sh - the seed's counting experiment and crash cases through the
# jnfs tool, through jnfs io's counters on a fresh image
# (test_fs_stability.c does the same at the API level).
#
# Counting, on a fresh image after the file is written and fsynced once
# (deltas of `counters` printed before and after, in one jnfs io run):
#   5 x (overwrite 4 KiB + fdatasync)                  0 checkpoints, 5 flushes
#   5 x (sleep 5 ms + overwrite + fsync)               5 checkpoints
#       (past the 4 ms timestamp granularity, FS_TIME_GRAN_NS)
#   5 x (extending write + fdatasync)                  5 checkpoints
#   5 x (map_blocks rw, write_direct, commit_blocks    0 checkpoints, 5 flushes
#        keeping the size)
#   commit_blocks after map_blocks allocated           the log is written
# Crash cases, for several seeds (--crash, powerfail SEED, then jnfs io to
# read the data and the block map back, and jnfs check):
#   (a) 4 MiB preallocated, written and converted through the server path,
#       overwritten by a client through the layout, power cut: the extent
#       is written and holds the client's data;
#   (b) a new 4 MiB file written through the layout: size, extent and data.
# Durable records: put, delete, listed after a remount, counted by jnfs
# stat, walked by jnfs check.
# Extended attributes: set, replace, create and replace refused, removed,
# listed after a remount (more than a page of names), read back, counted,
# walked by jnfs check, and gone with their file.
# Damaged images: jnfs check and jnfs io refuse a flipped superblock byte
# and a truncated image with a message saying which. jnfs mkfs with a log
# device that does not exist makes no image.
#
# usage: jnfs_io.sh PATH-TO-JNFS
set -eu
JNFS=$1
TMP=$(mktemp -d /tmp/jnfs-io-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
IMG=$TMP/img
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# ctr FILE N NAME: the value of counter NAME in the N-th `counters` output
ctr() {
	awk -v b="$2" -v n="$3" '/^fs\.writes /{k++} k==b && $1==n {print $2; exit}' "$1"
}

# delta FILE NAME: second counters output minus the first
delta() {
	echo $(($(ctr "$1" 2 "$2") - $(ctr "$1" 1 "$2")))
}

# expect WHAT FILE NAME VALUE
expect() {
	d=$(delta "$2" "$3")
	if [ "$d" -eq "$4" ]; then
		echo "ok: $1: $3 +$d"
	else
		fail "$1: $3 went up by $d, expected $4"
		cat "$2" >&2
	fi
}

"$JNFS" mkfs "$IMG" --size 64M >/dev/null
"$JNFS" io "$IMG" -c "open f create" -c "pwrite 0 1M 0x11" -c fsync >/dev/null

# 5 x (overwrite 4 KiB + fdatasync)
set -- -c "open f" -c counters
for i in 0 1 2 3 4; do
	set -- "$@" -c "pwrite $((i * 4096)) 4096 0x22" -c fdatasync
done
"$JNFS" io "$IMG" "$@" -c counters >"$TMP/a"
expect "overwrite + fdatasync x5" "$TMP/a" log.checkpoints 0
expect "overwrite + fdatasync x5" "$TMP/a" log.buffer_writes 0
expect "overwrite + fdatasync x5" "$TMP/a" dev.flushes 5

# 5 x (overwrite + fsync), each after the timestamp granularity
set -- -c "open f" -c counters
for i in 0 1 2 3 4; do
	set -- "$@" -c "sleep 5" -c "pwrite $((i * 4096)) 4096 0x33" -c fsync
done
"$JNFS" io "$IMG" "$@" -c counters >"$TMP/b"
expect "overwrite + fsync x5" "$TMP/b" log.checkpoints 5

# 5 x (extending write + fdatasync)
set -- -c "open f" -c counters
for i in 0 1 2 3 4; do
	set -- "$@" -c "pwrite $((1048576 + i * 4096)) 4096 0x44" -c fdatasync
done
"$JNFS" io "$IMG" "$@" -c counters >"$TMP/c"
expect "extending write + fdatasync x5" "$TMP/c" log.checkpoints 5

# 5 x (map_blocks rw + write_direct + commit_blocks keeping the size), on
# blocks already written
set -- -c "open f" -c counters
for i in 0 1 2 3 4; do
	off=$((i * 65536))
	set -- "$@" -c "map_blocks $off 65536 rw" -c "write_direct $off 65536 0x55" \
		-c "commit_blocks $off 65536"
done
"$JNFS" io "$IMG" "$@" -c counters -c "pread 0 327680 0x55" >"$TMP/d"
expect "write_direct + commit_blocks x5" "$TMP/d" log.checkpoints 0
expect "write_direct + commit_blocks x5" "$TMP/d" dev.flushes 5
if grep -q "log written" "$TMP/d"; then
	fail "a layout commit that kept the size wrote the log"
fi
grep -q "^read 327680 bytes at 0" "$TMP/d" || fail "the client's data did not read back"

# commit_blocks after map_blocks allocated new blocks: the log is written
"$JNFS" io "$IMG" -c "open f" -c counters -c "map_blocks 8M 64K rw" \
	-c "write_direct 8M 64K 0x66" -c "commit_blocks 8M 64K 8454144" -c counters \
	-c "pread 8M 64K 0x66" >"$TMP/e"
if grep -q "^committed 8388608+65536 (log written)" "$TMP/e" &&
	[ "$(delta "$TMP/e" log.checkpoints)" -ge 1 ]; then
	echo "ok: commit_blocks after an allocating map_blocks: the log is written"
else
	fail "commit_blocks after an allocating map_blocks did not write the log"
	cat "$TMP/e" >&2
fi
"$JNFS" check "$IMG" >"$TMP/check" || fail "check after counting: $(cat "$TMP/check")"

# crash cases
M4=4194304
for seed in 1 2 3 4 5 6 7 8; do
	for case in a b; do
		"$JNFS" mkfs "$IMG" --size 64M >/dev/null
		if [ $case = a ]; then
			set -- -c "open f create" -c "open /" -c fsync -c "open f" \
				-c "falloc 0 $M4" -c fsync -c "pwrite 0 $M4 0x77"
		else
			set -- -c "open f create" -c "open /" -c fsync -c "open f"
		fi
		"$JNFS" io "$IMG" --crash "$@" -c "map_blocks 0 $M4 rw" \
			-c "write_direct 0 $M4 0xee" -c "commit_blocks 0 $M4 $M4" \
			-c "powerfail $seed" >"$TMP/cut" 2>&1 || {
			fail "case ($case) seed $seed: the run before the power cut failed"
			cat "$TMP/cut" >&2
			continue
		}
		grep -q "^power failed" "$TMP/cut" || fail "case ($case) seed $seed: no power cut"
		if [ $case = b ] && ! grep -q "(log written)" "$TMP/cut"; then
			fail "case (b) seed $seed: the layout commit of new blocks wrote no log"
		fi
		"$JNFS" io "$IMG" -c "open f" -c stat -c "map_blocks 0 $M4" \
			-c "pread 0 $M4 0xee" >"$TMP/after" 2>&1 || {
			fail "case ($case) seed $seed: after the power cut: $(cat "$TMP/after")"
			continue
		}
		grep -q "^size $M4\$" "$TMP/after" || fail "case ($case) seed $seed: size lost"
		if grep "^map " "$TMP/after" | grep -qv " written at "; then
			fail "case ($case) seed $seed: extent not written: $(grep '^map ' "$TMP/after")"
		fi
		"$JNFS" check "$IMG" >"$TMP/check" ||
			fail "case ($case) seed $seed: check: $(cat "$TMP/check")"
	done
	echo "ok: crash cases (a) and (b), seed $seed"
done

# durable records through the tool: written, listed after a remount, counted
# by jnfs stat, and walked by jnfs check (a record tree it did not know would
# be blocks owned by nobody)
"$JNFS" mkfs "$IMG" --size 64M >/dev/null
"$JNFS" io "$IMG" -c "recput client-a 10" -c "recput client-b 1024 0x5a" -c "recput client-c 0" \
	-c "recdel client-a" -c "recput client-c 900" >/dev/null || fail "recput/recdel"
"$JNFS" io "$IMG" -c recls | sort >"$TMP/recs"
printf 'client-b 1024\nclient-c 900\n' | cmp -s - "$TMP/recs" ||
	fail "records after a remount: $(cat "$TMP/recs")"
"$JNFS" stat "$IMG" >"$TMP/stat"
grep -q '^fs.records 2$' "$TMP/stat" || fail "jnfs stat: $(grep records "$TMP/stat")"
"$JNFS" check "$IMG" >"$TMP/check" || fail "check with records: $(cat "$TMP/check")"
echo "ok: durable records through jnfs io, jnfs stat and jnfs check"

# extended attributes through the tool: set (up to 64 KiB), refused flags,
# listed in pages after a remount, read back, walked by jnfs check, counted,
# and freed with their file (check finds none of their blocks left)
"$JNFS" mkfs "$IMG" --size 64M >/dev/null
set -- -c "open f create"
for i in $(seq 1 20); do set -- "$@" -c "setxattr user.n$i $i"; done
"$JNFS" io "$IMG" "$@" -c "setxattr user.big 64K 0x5a create" -c "setxattr user.n1 100 0x11 replace" \
	-c "removexattr user.n2" >/dev/null || fail "setxattr/removexattr"
"$JNFS" io "$IMG" -c "open f" -c "setxattr user.n1 1 0 create" -c "setxattr user.new 1 0 replace" \
	-c "removexattr user.n2" -c "getxattr user.n2" >"$TMP/out" 2>&1 && fail "xattr errors: none"
grep -q '^setxattr: EEXIST$' "$TMP/out" && grep -q '^setxattr: ENODATA$' "$TMP/out" &&
	grep -q '^removexattr: ENODATA$' "$TMP/out" && grep -q '^getxattr: ENODATA$' "$TMP/out" ||
	fail "xattr errors: $(cat "$TMP/out")"
"$JNFS" io "$IMG" -c "open f" -c listxattr -c "getxattr user.big 0x5a" -c "getxattr user.n1 0x11" \
	-c counters >"$TMP/out" || fail "listxattr/getxattr: $(cat "$TMP/out")"
[ "$(grep -c '^user\.' "$TMP/out")" -eq 22 ] && grep -q '^user.big 65536$' "$TMP/out" &&
	grep -q '^user.n1 100$' "$TMP/out" && grep -q '^user.n20 20$' "$TMP/out" &&
	! grep -q '^user.n2 ' "$TMP/out" && grep -q '^fs.xattr_gets 2$' "$TMP/out" ||
	fail "xattrs after a remount: $(cat "$TMP/out")"
"$JNFS" check "$IMG" >"$TMP/check" || fail "check with xattrs: $(cat "$TMP/check")"
"$JNFS" io "$IMG" -c "unlink f" -c counters >"$TMP/out" || fail "unlink with xattrs"
grep -q '^fs.xattr_frees [1-9]' "$TMP/out" || fail "xattrs freed: $(grep xattr "$TMP/out")"
"$JNFS" check "$IMG" >"$TMP/check" || fail "check after unlink with xattrs: $(cat "$TMP/check")"
echo "ok: extended attributes through jnfs io and jnfs check"

# damaged images through the tool: check and io refuse, saying what is wrong
"$JNFS" mkfs "$IMG" --size 64M >/dev/null
"$JNFS" io "$IMG" -c "open f create" -c "pwrite 0 64K" >/dev/null
cp "$IMG" "$TMP/good"
printf '\377' | dd of="$IMG" bs=1 seek=100 conv=notrunc 2>/dev/null
if "$JNFS" check "$IMG" >"$TMP/out" 2>&1 || ! grep -q "superblock CRC mismatch" "$TMP/out"; then
	fail "check of a damaged superblock: $(cat "$TMP/out")"
fi
if "$JNFS" io "$IMG" -c "open f" >"$TMP/out" 2>&1 || ! grep -q "cannot mount" "$TMP/out"; then
	fail "io on a damaged superblock: $(cat "$TMP/out")"
fi
cp "$TMP/good" "$IMG"
truncate -s 40M "$IMG"
if "$JNFS" check "$IMG" >"$TMP/out" 2>&1 || ! grep -q "truncated image" "$TMP/out"; then
	fail "check of a truncated image: $(cat "$TMP/out")"
fi
cp "$TMP/good" "$IMG"
"$JNFS" check "$IMG" >/dev/null || fail "the undamaged copy is not clean"
echo "ok: jnfs check and jnfs io refuse damaged images"

# mkfs with a log device that does not exist: refused, and no image made
if "$JNFS" mkfs "$TMP/new-img" --size 64M --log-device "$TMP/no-such-log" >"$TMP/out" 2>&1 ||
	! grep -q "cannot open log device" "$TMP/out" || [ -e "$TMP/new-img" ]; then
	fail "mkfs with a missing log device: $(cat "$TMP/out"; ls "$TMP")"
fi
echo "ok: jnfs mkfs with a missing log device makes no image"

if [ $fails -ne 0 ]; then
	echo "$fails failures" >&2
	exit 1
fi
echo "ok jnfs io counting experiment and crash cases"
