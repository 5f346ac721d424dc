#!/bin/sh
# guest-init.sh - /init of the kernel-client test's guest (kclient.sh builds
# the initramfs around it: busybox, the NFS client modules listed in
# /etc/kclient-modules, mount.nfs and its libraries, workload.sh).
#
# It brings up the machine, runs /workload.sh against the server named on
# the kernel command line, and reports on the serial console. Protocol with
# the host, one line each, all starting with "KCLIENT: ":
#   step NAME uptime=S     progress (the log's only use for them)
#   fail step=NAME WHY     the first mismatch or failed command
#   result=PASS | result=FAIL
# The host passes the test only on "result=PASS"; a guest that dies before
# printing a result (panic=-1 and QEMU's -no-reboot end it) is a failure.
#
# Kernel command line: kc.server=ADDR kc.port=PORT kc.ip=ADDR/PREFIX
/bin/busybox --install -s
export PATH=/sbin:/usr/sbin:/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

finish() {
	echo "KCLIENT: result=$1"
	if [ "$1" != PASS ]; then
		echo "KCLIENT: kernel messages about NFS, RPC and the network:"
		dmesg | grep -iE 'nfs|rpc|lockd|virtio|eth0' | tail -30
	fi
	poweroff -f
}

SERVER= PORT= IP=
for arg in $(cat /proc/cmdline); do
	case $arg in
	kc.server=*) SERVER=${arg#*=} ;;
	kc.port=*) PORT=${arg#*=} ;;
	kc.ip=*) IP=${arg#*=} ;;
	esac
done
if [ -z "$SERVER" ] || [ -z "$PORT" ] || [ -z "$IP" ]; then
	echo "KCLIENT: fail step=boot kernel command line lacks kc.server/kc.port/kc.ip"
	finish FAIL
fi

# The list is in dependency order (modprobe --show-depends), so plain insmod
# suffices and nothing is left for the kernel to request later.
while read -r mod; do
	insmod "$mod" || { echo "KCLIENT: fail step=boot insmod $mod"; finish FAIL; }
done </etc/kclient-modules

ip link set lo up
if ! ip addr add "$IP" dev eth0 || ! ip link set eth0 up; then
	echo "KCLIENT: fail step=boot no eth0"
	finish FAIL
fi
# the link comes up asynchronously; the server answers ping once it has
tries=0
until ping -c 1 -W 1 "$SERVER" >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ $tries -ge 20 ]; then
		echo "KCLIENT: fail step=boot server $SERVER unreachable"
		finish FAIL
	fi
done

if sh /workload.sh "$SERVER" "$PORT"; then
	finish PASS
fi
finish FAIL
