# xfs-loop.sh - sourced by the bench/run-*.sh scripts that compare with
# kernel XFS. xfs_loop_setup NAME checks for root, installs the benchmark
# dependencies, builds, then makes a temporary directory $TMP in $BENCH_DIR
# (default /var/tmp, the same disk as the engine's image), writes an XFS
# image file there full of zeros ($IMAGE_MIB, default 2048), attaches it to
# a loop device, runs mkfs.xfs (-K: no discard, which would punch holes in
# the image) and mounts it at $MNT. Whatever happens after, the mount is
# unmounted, the loop device this script attached is detached (by its name,
# never any other) and $TMP removed.
# LOOP_DIRECT_IO=on: the loop device does O_DIRECT to its image (the
# default, like the engine, which reaches its image with O_DIRECT: neither
# has the host's page cache between it and the disk, as on a real device).
BENCH_DIR=${BENCH_DIR:-/var/tmp}
IMAGE_MIB=${IMAGE_MIB:-2048}
LOOP_DIRECT_IO=${LOOP_DIRECT_IO:-on}
TMP=
LOOP=
MNT=

xfs_loop_cleanup() {
	if [ -n "$MNT" ]; then
		umount "$MNT" || umount -l "$MNT" || true
	fi
	if [ -n "$LOOP" ]; then
		losetup -d "$LOOP" || true
	fi
	if [ -n "$TMP" ]; then
		rm -rf "$TMP"
	fi
}

xfs_loop_need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "$1: needs root (losetup, mount)" >&2
		exit 1
	fi
}

xfs_loop_up() {
	xfs_loop_need_root "$1"
	trap xfs_loop_cleanup EXIT
	trap 'exit 130' INT TERM HUP
	TMP=$(mktemp -d "$BENCH_DIR/jnfs-$1.XXXXXX")
	dd if=/dev/zero of="$TMP/xfs.img" bs=4M count=$((IMAGE_MIB / 4)) conv=fsync status=none
	LOOP=$(losetup --find --show --direct-io="$LOOP_DIRECT_IO" "$TMP/xfs.img")
	mkfs.xfs -q -K "$LOOP"
	mkdir "$TMP/mnt"
	mount -t xfs "$LOOP" "$TMP/mnt"
	MNT="$TMP/mnt"
	echo "$1: XFS on $LOOP (direct-io=$LOOP_DIRECT_IO) at $MNT;" \
		"kernel $(uname -r); $(xfs_info "$MNT" | grep -o 'log *=internal[^,]*,[^,]*' || true)" >&2
}

xfs_loop_setup() {
	xfs_loop_need_root "$1"
	scripts/install-bench-deps
	make -s build >/dev/null
	xfs_loop_up "$1"
}
