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
#   skip WHY               the server does not serve the NFS version asked for
#   restart-server         (restart mode) kill and restart the server now;
#                          the host answers with a line on /dev/ttyS1
#   counters NAME          (pnfs) the host keeps the server's counters now
#                          under NAME and answers with a line on /dev/ttyS1
#   pnfs-file PATH SIZE MD5  (pnfs, fsx) a file written through the layout
#                          (or the plain mount), for the host to read back
#                          through the server
#   fsx-run KIND SEED OPS SECONDS  (fsx) one run of kcio fsx, plain or pnfs
#   hung: TEXT             a task blocked for 60 s: the kernel stacks of the
#                          blocked tasks, the processes (for the log only)
#   result=PASS | result=FAIL | result=SKIP
# The host passes the test only on "result=PASS"; a guest that dies before
# printing a result (panic=-1 and QEMU's -no-reboot end it) is a failure.
#
# Kernel command line: kc.server=ADDR kc.port=PORT kc.ip=ADDR/PREFIX, and
# optionally kc.vers=3|4.1|4.2 kc.path=PATH kc.mode=workload|restart|fsx
# kc.copy=required|fallback kc.pnfs=0|1 kc.fsxops=N kc.fsxseeds=S,S...
# (see workload.sh). With kc.pnfs=1
# the machine also gets what pNFS block layouts need: the modules in
# /etc/kclient-pnfs-modules (virtio_blk, dm_mod, blocklayoutdriver),
# rpc_pipefs, and blkmapd, which answers the layout driver's questions
# about which disk carries a volume's signature; it must run before the
# mount.
/bin/busybox --install -s
export PATH=/sbin:/usr/sbin:/bin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

finish() {
	echo "KCLIENT: result=$1"
	if [ "$1" = FAIL ]; then
		echo "KCLIENT: kernel messages about NFS, RPC and the network:"
		dmesg | grep -iE 'nfs|rpc|lockd|virtio|eth0' | tail -30
	fi
	poweroff -f
}

SERVER= PORT= IP= VERS=3 EXPORT=/ MODE=workload COPY=fallback PNFS=0 FSXOPS=1000 FSXSEEDS=1
for arg in $(cat /proc/cmdline); do
	case $arg in
	kc.server=*) SERVER=${arg#*=} ;;
	kc.port=*) PORT=${arg#*=} ;;
	kc.ip=*) IP=${arg#*=} ;;
	kc.vers=*) VERS=${arg#*=} ;;
	kc.path=*) EXPORT=${arg#*=} ;;
	kc.mode=*) MODE=${arg#*=} ;;
	kc.copy=*) COPY=${arg#*=} ;;
	kc.pnfs=*) PNFS=${arg#*=} ;;
	kc.fsxops=*) FSXOPS=${arg#*=} ;;
	kc.fsxseeds=*) FSXSEEDS=${arg#*=} ;;
	esac
done
if [ -z "$SERVER" ] || [ -z "$PORT" ] || [ -z "$IP" ]; then
	echo "KCLIENT: fail step=boot kernel command line lacks kc.server/kc.port/kc.ip"
	finish FAIL
fi

# The list is in dependency order (modprobe --show-depends), so plain insmod
# suffices and nothing is left for the kernel to request later.
modules=/etc/kclient-modules
if [ "$PNFS" = 1 ]; then
	if [ ! -e /etc/kclient-pnfs-modules ]; then
		echo "KCLIENT: fail step=boot the initramfs has no pNFS block layout modules"
		finish FAIL
	fi
	modules="$modules /etc/kclient-pnfs-modules"
fi
cat $modules | while read -r mod; do
	insmod "$mod" || { echo "KCLIENT: fail step=boot insmod $mod"; exit 1; }
done || finish FAIL

# the NFSv4 client names itself after the host name in its client owner
hostname kclient
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

if [ "$PNFS" = 1 ]; then
	# blkmapd scans whole disks (not partitions) for the signature
	if [ ! -e /sys/block/vda ]; then
		echo "KCLIENT: fail step=boot no shared disk (vda)"
		finish FAIL
	fi
	mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs
	blkmapd -f </dev/null >/tmp/blkmapd.log 2>&1 &
	BLKMAPD=$!
	# Ready once it holds its pipe open: an upcall with no reader fails,
	# and the client would then quietly go through the server.
	tries=0
	until ls -l /proc/$BLKMAPD/fd 2>/dev/null | grep -q 'rpc_pipefs/nfs/blocklayout'; do
		tries=$((tries + 1))
		if ! kill -0 $BLKMAPD 2>/dev/null || [ $tries -ge 100 ]; then
			echo "KCLIENT: fail step=boot blkmapd did not open its pipe: $(cat /tmp/blkmapd.log)"
			finish FAIL
		fi
		sleep 0.1
	done
fi

# A task stuck for 60 s is reported once, with every blocked task's kernel
# stack (the console shows only warnings, so they are taken from dmesg):
# a hung guest then says where it hangs before the host's timeout ends it.
echo 60 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
(
	until dmesg | grep -q 'blocked for more than'; do sleep 10; done
	echo w >/proc/sysrq-trigger 2>/dev/null
	sleep 1
	echo "KCLIENT: a task hangs; blocked tasks and recent kernel messages:"
	dmesg | tail -150 | sed 's/^/KCLIENT: hung: /'
	{ ps -o pid,stat,args 2>/dev/null || ps; } | sed 's/^/KCLIENT: hung: ps: /'
	[ "$PNFS" != 1 ] || sed 's/^/KCLIENT: hung: blkmapd: /' /tmp/blkmapd.log | tail -20
) &

status=0
sh /workload.sh "$SERVER" "$PORT" "$VERS" "$EXPORT" "$MODE" "$COPY" "$PNFS" "$FSXOPS" "$FSXSEEDS" ||
	status=$?
[ "$PNFS" != 1 ] || sed 's/^/KCLIENT: blkmapd: /' /tmp/blkmapd.log | tail -20
case $status in
0) finish PASS ;;
77) finish SKIP ;;
*) finish FAIL ;;
esac
