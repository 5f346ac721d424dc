#!/bin/sh
# kclient.sh - acceptance 2 of issue 5: the Linux kernel's NFSv3 client,
# booted in QEMU (TCG), runs a verified workload against jnfsd.
#
# usage: kclient.sh PATH-TO-JNFSD PATH-TO-JNFS WORKDIR
#
# The guest is Debian's own kernel (/boot/vmlinuz-*) with an initramfs built
# here into WORKDIR (rebuilt when the kernel or the guest scripts change):
# static busybox, the virtio and NFSv3 client modules with their
# dependencies, mount.nfs with its libraries, guest-init.sh as /init and
# workload.sh (which says what is verified). The guest mounts with
# vers=3,proto=tcp,port=P,mountport=P,mountproto=tcp,nolock,retry=0 - no
# rpcbind - and reports on its serial console (guest-init.sh).
#
# Network: a namespace made for this run holds a tap device with the server
# address; jnfsd listens there and QEMU's virtio-net is attached to the
# tap. Nothing else is reachable from the guest, and the test talks to
# nothing outside the namespace.
#
# The test passes when the guest prints "result=PASS", the server's counters
# show the NFSv3 procedures the workload needs were called (and no call
# was refused as garbage or failed in the server), jnfsd exits 0 on
# SIGTERM, and `jnfs check` finds the image clean. Every process it starts
# is stopped by its PID. Needs root (network namespace, tap); skips (77)
# without. Missing packages are an error: run scripts/install-deps.
set -eu
# depmod, modprobe and ip live in sbin, which a non-login PATH may lack
PATH=$PATH:/usr/sbin:/sbin
JNFSD=$1
JNFS=$2
WORK=$3
HERE=$(cd "$(dirname "$0")" && pwd)
RUN=$WORK/run
NS=jnfs-kclient-$$
TAP=kc0
HOST_IP=10.211.0.1
GUEST_IP=10.211.0.2
PORT=2049
# a guard against a hung guest, not a time limit on the test (ctest's is 1200)
GUEST_TIMEOUT=900

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# --- what the machine must have
missing=
for cmd in qemu-system-x86_64 cpio gzip depmod modprobe ip timeout; do
	command -v $cmd >/dev/null 2>&1 || missing="$missing $cmd"
done
for f in /bin/busybox /sbin/mount.nfs /etc/netconfig; do
	[ -e $f ] || missing="$missing $f"
done
KERNEL=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
KVER=${KERNEL#/boot/vmlinuz-}
[ -n "$KERNEL" ] && [ -d "/lib/modules/$KVER" ] || missing="$missing kernel"
if [ -n "$missing" ]; then
	echo "missing:$missing (run scripts/install-deps: qemu-system-x86 linux-image-amd64" \
		"busybox-static nfs-common cpio kmod)" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ] || ! ip netns add "$NS" 2>/dev/null; then
	echo "SKIP: cannot create a network namespace here (not root?)"
	exit 77
fi

JNFSD_PID=
QEMU_PID=
cleanup() {
	[ -n "$QEMU_PID" ] && kill "$QEMU_PID" 2>/dev/null || true
	[ -n "$JNFSD_PID" ] && kill "$JNFSD_PID" 2>/dev/null || true
	wait 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- the guest's initramfs
INITRD=$WORK/initramfs-$KVER.cpio.gz
STAMP=$(cat "$HERE/kclient.sh" "$HERE/guest-init.sh" "$HERE/workload.sh" | md5sum | cut -d' ' -f1)

# copy_binary ROOT FILE: FILE and the shared libraries it loads, same paths
copy_binary() {
	mkdir -p "$1$(dirname "$2")"
	cp "$2" "$1$2"
	ldd "$2" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' |
		while read -r lib; do
			mkdir -p "$1$(dirname "$lib")"
			cp -L "$lib" "$1$lib"
		done
}

build_initramfs() {
	root=$WORK/root
	rm -rf "$root"
	for d in bin sbin usr/bin usr/sbin etc proc sys dev tmp run mnt; do
		mkdir -p "$root/$d"
	done
	copy_binary "$root" /bin/busybox
	# /init is a script: its interpreter must be there before it installs
	# the other applets
	ln -s busybox "$root/bin/sh"
	copy_binary "$root" /sbin/mount.nfs
	# the NFSv3 client and the virtio network card, dependencies first
	for mod in virtio_pci virtio_net nfsv3; do
		modprobe -S "$KVER" --show-depends $mod
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$root/etc/kclient-modules"
	while read -r mod; do
		mkdir -p "$root$(dirname "$mod")"
		cp "$mod" "$root$mod"
	done <"$root/etc/kclient-modules"
	# modules.dep, should the kernel ask for a module after all
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		cp "/lib/modules/$KVER/$f" "$root/lib/modules/$KVER/"
	done
	depmod -b "$root" "$KVER"
	# mount.nfs: libtirpc's transports, service and protocol names, mtab
	cp /etc/netconfig /etc/services /etc/protocols "$root/etc/"
	ln -s /proc/self/mounts "$root/etc/mtab"
	cp "$HERE/guest-init.sh" "$root/init"
	cp "$HERE/workload.sh" "$root/workload.sh"
	chmod 755 "$root/init"
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
	rm -rf "$root"
	echo "$STAMP" >"$INITRD.stamp"
}

mkdir -p "$WORK"
if [ ! -s "$INITRD" ] || [ "$(cat "$INITRD.stamp" 2>/dev/null)" != "$STAMP" ]; then
	build_initramfs
fi

# --- the namespace, the server
ip -n "$NS" link set lo up
ip -n "$NS" tuntap add dev $TAP mode tap
ip -n "$NS" addr add $HOST_IP/24 dev $TAP
ip -n "$NS" link set $TAP up

rm -rf "$RUN"
mkdir -p "$RUN"
echo "/ $HOST_IP/24(rw,sync,no_root_squash)" >"$RUN/exports"
ip netns exec "$NS" "$JNFSD" --image "$RUN/img" --size 1G --exports "$RUN/exports" \
	--listen $HOST_IP:$PORT --rpcbind off --threads 4 \
	>"$RUN/jnfsd.out" 2>"$RUN/jnfsd.err" &
JNFSD_PID=$!
until grep -q '^listening on' "$RUN/jnfsd.out"; do
	kill -0 "$JNFSD_PID" 2>/dev/null || fail "jnfsd did not start: $(cat "$RUN/jnfsd.err")"
	sleep 0.1
done

# --- the guest
# One vCPU: on a 2-core host that also runs the server, two TCG vCPUs made
# every RPC about twice as slow. The memory holds the reference tree (about
# 80 MiB on tmpfs) and the page cache.
echo "booting $KERNEL in QEMU (TCG) against jnfsd on $HOST_IP:$PORT"
ip netns exec "$NS" timeout $GUEST_TIMEOUT qemu-system-x86_64 \
	-accel tcg -cpu max -smp 1 -m 768 \
	-nodefaults -no-user-config -display none -no-reboot \
	-serial "file:$RUN/guest.log" \
	-kernel "$KERNEL" -initrd "$INITRD" \
	-append "console=ttyS0 quiet panic=-1 kc.server=$HOST_IP kc.port=$PORT kc.ip=$GUEST_IP/24" \
	-netdev tap,id=net0,ifname=$TAP,script=no,downscript=no \
	-device virtio-net-pci,netdev=net0 \
	</dev/null >"$RUN/qemu.out" 2>&1 &
QEMU_PID=$!
# the mount is hard: a guest whose server died would wait for it until the
# timeout, so a dead server stops the guest at once
while kill -0 "$QEMU_PID" 2>/dev/null; do
	if ! kill -0 "$JNFSD_PID" 2>/dev/null; then
		kill "$QEMU_PID" 2>/dev/null || true
		echo "jnfsd died while the guest ran: $(cat "$RUN/jnfsd.err")"
		break
	fi
	sleep 1
done
qemu_status=0
wait "$QEMU_PID" || qemu_status=$?
QEMU_PID=
tr -d '\r' <"$RUN/guest.log"
[ "$qemu_status" = 0 ] || echo "qemu exited with status $qemu_status: $(cat "$RUN/qemu.out")"

# --- the server's side: counters, clean stop, clean image
kill -USR1 "$JNFSD_PID" 2>/dev/null || fail "jnfsd is gone: $(cat "$RUN/jnfsd.err")"
until grep -q '^stats.end 1' "$RUN/jnfsd.out"; do
	kill -0 "$JNFSD_PID" 2>/dev/null || fail "jnfsd died: $(cat "$RUN/jnfsd.err")"
	sleep 0.1
done
counter() {
	awk -v name="$1" '$1 == name { print $2; exit }' "$RUN/jnfsd.out"
}
echo "server counters (non-zero, rpc.nfs.* and rpc.mount.*, nfs3.*):"
grep -E "^(rpc\.(nfs|mount)\.v3\.[a-z]+(\.p50_us|\.p99_us)?|nfs3\.[a-z_]+|rpc\.replies\.[a-z_]+) [1-9]" "$RUN/jnfsd.out" |
	sed 's/^/  /'

grep -q 'KCLIENT: result=PASS' "$RUN/guest.log" ||
	fail "the guest did not pass (log above; kept in $RUN)"

# every procedure the workload must have made the client send
for proc in getattr setattr lookup access readlink read write create mkdir symlink mknod \
	remove rmdir rename link readdir readdirplus fsstat fsinfo pathconf commit; do
	n=$(counter rpc.nfs.v3.$proc)
	[ "${n:-0}" -gt 0 ] || fail "the client sent no NFSv3 $proc (rpc.nfs.v3.$proc ${n:-missing})"
done
[ "$(counter rpc.mount.v3.mnt)" -gt 0 ] || fail "no MOUNT v3 MNT call"
for bad in rpc.replies.garbage_args rpc.replies.system_err rpc.replies.proc_unavail; do
	[ "$(counter $bad)" = 0 ] || fail "$bad $(counter $bad)"
done

kill -TERM "$JNFSD_PID"
status=0
wait "$JNFSD_PID" || status=$?
JNFSD_PID=
[ "$status" = 0 ] || fail "jnfsd exited with status $status on SIGTERM: $(cat "$RUN/jnfsd.err")"
echo "jnfsd's messages:"
sed 's/^/  /' "$RUN/jnfsd.err"
out=$("$JNFS" check "$RUN/img" 2>&1) || fail "jnfs check: $out"
echo "$out"
case $out in
*clean*) ;;
*) fail "jnfs check: $out" ;;
esac
# the logs stay for a look at a passing run; the image goes
mv "$RUN/guest.log" "$RUN/jnfsd.out" "$WORK/"
rm -rf "$RUN"
echo "ok the Linux NFSv3 client in QEMU against jnfsd"
