#!/bin/sh
# kclient.sh - the Linux kernel's NFS client (NFSv3, NFSv4.1, NFSv4.2),
# booted in QEMU (TCG), runs a verified workload against jnfsd - or against
# NFS-Ganesha's NFSv4.1/4.2 server, to develop and check the harness itself.
#
# usage: kclient.sh [options] PATH-TO-JNFSD PATH-TO-JNFS WORKDIR
#   --vers 3|4.1|4.2        the NFS version the guest mounts (default 3)
#   --server jnfsd|ganesha  the server started (default jnfsd). Ganesha
#                           (FSAL_VFS over a directory in WORKDIR) serves
#                           NFSv4 only here: for NFSv3 it insists on rpcbind.
#   --mode workload|restart|fsx
#                           restart (NFSv4): the server is killed with
#                           SIGKILL in the middle of the workload, while the
#                           guest holds open files and a lock, and started
#                           again (jnfsd on the crash device, --crash); the
#                           client must reclaim, and the grace period's
#                           length is printed. fsx (jnfsd, NFSv4.1/4.2,
#                           implies --pnfs): no workload; per seed, kcio fsx
#                           through a plain mount (export /plain, no pnfs)
#                           and then through the pNFS mount (export /), each
#                           timed on the guest, the file compared with
#                           kcio's model after drop_caches and read back
#                           through the server; one "fsx-run" line each
#                           with the server's layout and DELAY counters
#   --fsx-ops N             fsx mode: operations per run (default 1000)
#   --fsx-seeds "S ..."     fsx mode: the seeds, one run each (default 1)
#   --copy required|fallback  NFSv4.2: must copy_file_range be done by the
#                           server's COPY (the client's counts, and the
#                           --copy-counter)? default: required for jnfsd,
#                           fallback for Ganesha (which answers NOTSUPP)
#   --op-counter FMT        NFSv4: the server counter of operation %s; every
#                           operation the workload needs must be above 0
#                           (default jnfsd nfs4.op.%s; Ganesha ganesha.op.%s,
#                           counted from its log; "" checks none)
#   --copy-counter NAME     NFSv4.2: a server counter that must be above 0
#                           after the run (default jnfsd nfs4.op.COPY,
#                           Ganesha none; ganesha.op_ok.COPY counts the COPYs
#                           it answered NFS4_OK)
#   --grace-counter NAME    restart, jnfsd: the counter that appears once the
#                           grace period is over, its length in ms (default
#                           nfs4.grace_ms)
#   --server-args "ARGS"    more arguments for jnfsd (e.g. "--lease-seconds 20")
#   --pnfs                  (NFSv4, jnfsd) pNFS block layouts: the export is
#                           marked pnfs, the guest gets jnfsd's image as a
#                           virtio disk and runs blkmapd; it writes and reads
#                           files through the layout while the server counts
#                           no READ or WRITE, then through the server as well
#                           (workload.sh step 1p); the files are read back
#                           through jnfsd by a client without the disk
#                           (libnfs's nfs-cat, here on the host). Skips (77)
#                           when the kernel has no blocklayoutdriver
# Exit status: 0 passed; 77 skipped (not root, or the server answers the
# NFS version with PROG_MISMATCH at mount: mount.nfs says "Protocol not
# supported"; --pnfs: no blocklayoutdriver); anything else failed.
#
# The guest is Debian's own kernel (/boot/vmlinuz-*) with an initramfs built
# here into WORKDIR (rebuilt when the kernel or the guest files change):
# static busybox, the virtio, NFSv3 and NFSv4 client modules with their
# dependencies (and, loaded with --pnfs only, virtio_blk, dm_mod and
# blocklayoutdriver), mount.nfs and blkmapd with their libraries, kcio
# (kcio.c, built static here with the host's cc), guest-init.sh as /init
# and workload.sh (which says what is verified). The guest mounts NFSv3 with
# vers=3,proto=tcp,port=P,mountport=P,mountproto=tcp,nolock,retry=0 - no
# rpcbind - and NFSv4 with vers=4.x,proto=tcp,port=P,retry=0; owners travel
# as numeric strings (no idmapd; the client's default for AUTH_SYS). It
# reports on its serial console (guest-init.sh); in restart and pnfs modes
# the host answers it on a second serial port (a pair of fifos in the run
# directory).
#
# Network: a namespace made for this run (its name holds this script's PID,
# so runs do not collide) holds a tap device with the server address; the
# server listens there and QEMU's virtio-net is attached to the tap. Nothing
# else is reachable from the guest, and the test talks to nothing outside
# the namespace.
#
# The test passes when the guest prints "result=PASS", the server's counters
# show the procedures or operations the workload needs were called (jnfsd:
# and no call was refused as garbage or failed in the server), the server
# exits 0 on SIGTERM, and (jnfsd) `jnfs check` finds the image clean. Every
# process it starts is stopped by its PID. Needs root (network namespace,
# tap); skips (77) without. Missing packages are an error: run
# scripts/install-deps (and scripts/install-bench-deps for Ganesha).
set -eu
# depmod, modprobe and ip live in sbin, which a non-login PATH may lack
PATH=$PATH:/usr/sbin:/sbin

usage() {
	sed -n '6,55p' "$0" >&2
	exit 1
}

VERS=3
SERVER=jnfsd
MODE=workload
COPY=
OP_COUNTER=-
COPY_COUNTER=-
GRACE_COUNTER=nfs4.grace_ms
SERVER_ARGS=
PNFS=
FSX_OPS=1000
FSX_SEEDS=1
while [ $# -gt 0 ]; do
	case $1 in
	--pnfs)
		PNFS=1
		shift
		continue
		;;
	--vers) VERS=$2 ;;
	--server) SERVER=$2 ;;
	--mode) MODE=$2 ;;
	--copy) COPY=$2 ;;
	--op-counter) OP_COUNTER=$2 ;;
	--copy-counter) COPY_COUNTER=$2 ;;
	--grace-counter) GRACE_COUNTER=$2 ;;
	--server-args) SERVER_ARGS=$2 ;;
	--fsx-ops) FSX_OPS=$2 ;;
	--fsx-seeds) FSX_SEEDS=$2 ;;
	--*) usage ;;
	*) break ;;
	esac
	[ $# -ge 2 ] || usage
	shift 2
done
[ $# = 3 ] || usage
JNFSD=$1
JNFS=$2
# absolute: Ganesha's configuration names paths in it
WORK=$(mkdir -p "$3" && cd "$3" && pwd)
case $VERS in 3 | 4.1 | 4.2) ;; *) usage ;; esac
case $SERVER in jnfsd | ganesha) ;; *) usage ;; esac
case $MODE in workload | restart | fsx) ;; *) usage ;; esac
case $FSX_OPS in '' | *[!0-9]*) usage ;; esac
case $FSX_SEEDS in '' | *[!0-9\ ]*) usage ;; esac
# fsx compares the pNFS mount with a plain one: it needs the pNFS set-up
[ "$MODE" != fsx ] || PNFS=1
[ "$MODE" = workload ] || [ "$VERS" != 3 ] || {
	echo "restart mode needs NFSv4: NFSv3 keeps no state to reclaim" >&2
	exit 1
}
[ "$SERVER" = jnfsd ] || [ "$VERS" != 3 ] || {
	echo "Ganesha serves NFSv3 only when it can register with rpcbind: not here" >&2
	exit 1
}
[ -z "$PNFS" ] || { [ "$SERVER" = jnfsd ] && [ "$VERS" != 3 ] && [ "$MODE" != restart ]; } || {
	echo "--pnfs and --mode fsx need jnfsd, NFSv4.1 or 4.2 and not the restart mode" >&2
	exit 1
}
if [ "$SERVER" = jnfsd ]; then
	: "${COPY:=required}"
	[ "$OP_COUNTER" != - ] || OP_COUNTER=nfs4.op.%s
	[ "$COPY_COUNTER" != - ] || COPY_COUNTER=nfs4.op.COPY
else
	: "${COPY:=fallback}"
	[ "$OP_COUNTER" != - ] || OP_COUNTER=ganesha.op.%s
	[ "$COPY_COUNTER" != - ] || COPY_COUNTER=
fi
case $COPY in required | fallback) ;; *) usage ;; esac

HERE=$(cd "$(dirname "$0")" && pwd)
# the NFSv3 test keeps its old directory; the others get their own
TAG=
[ "$VERS/$SERVER/$MODE" = 3/jnfsd/workload ] || TAG=-v$VERS-$SERVER-$MODE
[ -z "$PNFS" ] || [ "$MODE" = fsx ] || TAG=$TAG-pnfs
RUN=$WORK/run$TAG
NS=jnfs-kclient-$$
TAP=kc0
HOST_IP=10.211.0.1
GUEST_IP=10.211.0.2
PORT=2049
# a guard against a hung guest, not a time limit on the test (ctest's is 1200)
GUEST_TIMEOUT=900
# fsx: up to 50 ms an operation, both mounts together
[ "$MODE" != fsx ] ||
	GUEST_TIMEOUT=$((GUEST_TIMEOUT + $(echo $FSX_SEEDS | wc -w) * FSX_OPS / 20))

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# --- what the machine must have
missing=
for cmd in qemu-system-x86_64 cpio gzip depmod modprobe ip timeout cc; do
	command -v $cmd >/dev/null 2>&1 || missing="$missing $cmd"
done
for f in /bin/busybox /sbin/mount.nfs /usr/sbin/blkmapd /etc/netconfig; do
	[ -e $f ] || missing="$missing $f"
done
[ -z "$PNFS" ] || command -v nfs-cat >/dev/null 2>&1 || missing="$missing nfs-cat"
KERNEL=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
KVER=${KERNEL#/boot/vmlinuz-}
[ -n "$KERNEL" ] && [ -d "/lib/modules/$KVER" ] || missing="$missing kernel"
if [ -n "$missing" ]; then
	echo "missing:$missing (run scripts/install-deps: qemu-system-x86 linux-image-amd64" \
		"busybox-static nfs-common cpio kmod gcc libnfs-utils)" >&2
	exit 1
fi
# pNFS block layouts need the client's layout driver (a module, or built in)
if [ -n "$PNFS" ] && ! modprobe -S "$KVER" --show-depends blocklayoutdriver >/dev/null 2>&1; then
	echo "SKIP: the guest kernel $KVER has no blocklayoutdriver (pNFS block layouts)"
	exit 77
fi
if [ "$SERVER" = ganesha ] && ! command -v ganesha.nfsd >/dev/null 2>&1; then
	echo "missing: ganesha.nfsd (run scripts/install-bench-deps: nfs-ganesha nfs-ganesha-vfs)" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ] || ! ip netns add "$NS" 2>/dev/null; then
	echo "SKIP: cannot create a network namespace here (not root?)"
	exit 77
fi

SERVER_PID=
QEMU_PID=
cleanup() {
	[ -n "$QEMU_PID" ] && kill "$QEMU_PID" 2>/dev/null || true
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
	wait 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --- the guest's initramfs
INITRD=$WORK/initramfs-$KVER.cpio.gz
STAMP=$(cat "$HERE/kclient.sh" "$HERE/guest-init.sh" "$HERE/workload.sh" "$HERE/kcio.c" |
	md5sum | cut -d' ' -f1)

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
	root=$WORK/root.$$
	rm -rf "$root"
	for d in bin sbin usr/bin usr/sbin etc proc sys dev tmp run mnt var/lib/nfs/rpc_pipefs; do
		mkdir -p "$root/$d"
	done
	ln -s /run "$root/var/run"
	copy_binary "$root" /bin/busybox
	# /init is a script: its interpreter must be there before it installs
	# the other applets
	ln -s busybox "$root/bin/sh"
	copy_binary "$root" /sbin/mount.nfs
	# the pNFS block layout's helper: finds the disk a device id names
	copy_binary "$root" /usr/sbin/blkmapd
	cc -static -O2 -std=gnu11 -Wall -Wextra -Werror -o "$root/bin/kcio" "$HERE/kcio.c"
	# the NFSv3 and NFSv4 clients and the virtio network card,
	# dependencies first
	for mod in virtio_pci virtio_net nfsv3 nfsv4; do
		modprobe -S "$KVER" --show-depends $mod
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$root/etc/kclient-modules"
	# pNFS block layouts (--pnfs; loaded only then): the shared disk, the
	# device mapper blkmapd builds on, the layout driver - what the list
	# above lacks. A kernel without the driver gets none of them.
	if modprobe -S "$KVER" --show-depends blocklayoutdriver >/dev/null 2>&1; then
		for mod in virtio_blk dm_mod blocklayoutdriver; do
			modprobe -S "$KVER" --show-depends $mod
		done | awk 'NR == FNR { seen[$1] = 1; next }
			    $1 == "insmod" && !seen[$2]++ { print $2 }' \
			"$root/etc/kclient-modules" - >"$root/etc/kclient-pnfs-modules"
	fi
	cat "$root/etc/kclient-modules" "$root/etc/kclient-pnfs-modules" 2>/dev/null |
		while read -r mod; do
			mkdir -p "$root$(dirname "$mod")"
			cp "$mod" "$root$mod"
		done
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
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$INITRD.$$"
	mv "$INITRD.$$" "$INITRD"
	rm -rf "$root"
	echo "$STAMP" >"$INITRD.stamp"
}

mkdir -p "$WORK"
if [ ! -s "$INITRD" ] || [ "$(cat "$INITRD.stamp" 2>/dev/null)" != "$STAMP" ]; then
	build_initramfs
fi

# --- the servers. Each provides:
#   <server>_start N     start instance N (1, then 2 after a restart), in
#                        the background, SERVER_PID set; return once it
#                        listens
#   <server>_counters    the counters into $RUN/counters, one "name
#                        value" line each, of every instance this run
#                        started (after a restart: summed)
#   <server>_killed      called just before the SIGKILL of a restart
#   <server>_grace_over  (after a restart) true once the grace period is
#                        over; prints what the server says about it
#   <server>_stop        SIGTERM; fails unless it exits 0
#   <server>_check       after the stop: the storage is consistent
EXPORT_PATH=/

jnfsd_start() {
	out=$RUN/jnfsd.out err=$RUN/jnfsd.err
	[ "$1" = 1 ] || out=$RUN/jnfsd-$1.out err=$RUN/jnfsd-$1.err
	# --crash only where the kill is the point: the crash device keeps
	# the writes jnfsd has not flushed in jnfsd's memory, where the
	# guest's pNFS client, reading the disk itself, cannot see them (a
	# punch's zeros stay invisible to it until the next flush; fsx mode
	# read the bytes from before the punch that way)
	crash=
	[ "$MODE" != restart ] || crash=--crash
	# shellcheck disable=SC2086
	ip netns exec "$NS" "$JNFSD" --image "$RUN/img" --size 1G --exports "$RUN/exports" \
		--listen $HOST_IP:$PORT --rpcbind off --threads 4 $crash $SERVER_ARGS \
		>"$out" 2>"$err" &
	SERVER_PID=$!
	JNFSD_OUT=$out JNFSD_ERR=$err
	until grep -q '^listening on' "$out"; do
		kill -0 "$SERVER_PID" 2>/dev/null || fail "jnfsd did not start: $(cat "$err")"
		sleep 0.1
	done
}

# the running instance's counters now, into $RUN/counters
jnfsd_dump() {
	n=$(lines '^stats.end' "$JNFSD_OUT")
	kill -USR1 "$SERVER_PID" 2>/dev/null || fail "jnfsd is gone: $(cat "$JNFSD_ERR")"
	until [ "$(lines '^stats.end' "$JNFSD_OUT")" -gt "$n" ]; do
		kill -0 "$SERVER_PID" 2>/dev/null || fail "jnfsd died: $(cat "$JNFSD_ERR")"
		sleep 0.1
	done
	# the newest dump: the lines after the n-th "stats.end"
	awk -v n="$n" '$1 == "stats.end" { c++; next } c == n' "$JNFSD_OUT" >"$RUN/counters"
}

# a killed instance's counters are gone with it: taken just before
jnfsd_killed() {
	jnfsd_dump
	mv "$RUN/counters" "$RUN/counters.killed"
}

jnfsd_counters() {
	jnfsd_dump
	[ -e "$RUN/counters.killed" ] || return 0
	awk '{ sum[$1] += $2; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
	     END { for (i = 0; i < n; i++) print order[i], sum[order[i]] }' \
		"$RUN/counters.killed" "$RUN/counters" >"$RUN/counters.sum"
	mv "$RUN/counters.sum" "$RUN/counters"
}

jnfsd_grace_over() {
	jnfsd_dump
	ms=$(counter "$GRACE_COUNTER")
	[ -n "$ms" ] || return 1
	echo "jnfsd: grace period over after $ms ms ($GRACE_COUNTER); its other grace counters:"
	grep -E '^nfs4\.(grace|reclaim)' "$RUN/counters" | grep -v "^$GRACE_COUNTER " | sed 's/^/  /'
}

jnfsd_stop() {
	kill -TERM "$SERVER_PID"
	status=0
	wait "$SERVER_PID" || status=$?
	SERVER_PID=
	[ "$status" = 0 ] || fail "jnfsd exited with status $status on SIGTERM: $(cat "$JNFSD_ERR")"
	echo "jnfsd's messages:"
	sed 's/^/  /' "$JNFSD_ERR"
}

jnfsd_check() {
	out=$("$JNFS" check "$RUN/img" 2>&1) || fail "jnfs check: $out"
	echo "$out"
	case $out in
	*clean*) ;;
	*) fail "jnfs check: $out" ;;
	esac
}

# Ganesha: FSAL_VFS over $RUN/export, at /kc in its pseudo file system.
# Its NFSv4 component logs every operation at DEBUG ("Request N: opcode
# M is OP_X", "Status of OP_X in position N = STATUS"): the counters are
# counted from there. Client records go to $RUN/recovery (the fs recovery
# backend), never to the machine's /var/lib/nfs.
GANESHA_LOG=
ganesha_start() {
	GANESHA_LOG=$RUN/ganesha.log
	# a real restart has a grace period; a plain run has no use for one
	graceless=true
	[ "$MODE" = workload ] || graceless=false
	cat >"$RUN/ganesha.conf" <<CONF
NFS_CORE_PARAM {
	NFS_Port = $PORT;
	NFS_Protocols = 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFSV4 {
	Graceless = $graceless;
	Lease_Lifetime = 20;
	Grace_Period = 40;
	Minor_Versions = 1, 2;
	Only_Numeric_Owners = true;
	RecoveryBackend = fs;
	RecoveryRoot = $RUN/recovery;
}
LOG {
	Default_Log_Level = EVENT;
	COMPONENTS { NFS4 = DEBUG; }
}
EXPORT {
	Export_Id = 1;
	Path = $RUN/export;
	Pseudo = /kc;
	Protocols = 4;
	Transports = TCP;
	Access_Type = RW;
	Squash = No_Root_Squash;
	SecType = sys;
	FSAL { Name = VFS; }
}
CONF
	mkdir -p "$RUN/export" "$RUN/recovery"
	n=$(lines 'NFS SERVER INITIALIZED' "$GANESHA_LOG")
	ip netns exec "$NS" ganesha.nfsd -F -f "$RUN/ganesha.conf" -L "$GANESHA_LOG" \
		-p "$RUN/ganesha.pid" >"$RUN/ganesha-$1.out" 2>&1 &
	SERVER_PID=$!
	until [ "$(lines 'NFS SERVER INITIALIZED' "$GANESHA_LOG")" -gt "$n" ]; do
		kill -0 "$SERVER_PID" 2>/dev/null ||
			fail "ganesha did not start: $(tail -5 "$GANESHA_LOG" "$RUN/ganesha-$1.out")"
		sleep 0.1
	done
	# it serves on without an export it could not load
	! grep ' :EXPORT :CRIT :' "$GANESHA_LOG" || fail "ganesha has no export"
	GRACE_ENDS=$(lines 'NFS Server Now NOT IN GRACE' "$GANESHA_LOG")
}

# one log for every instance
ganesha_killed() {
	:
}

ganesha_counters() {
	awk '/ :Request [0-9]+: opcode [0-9]+ is OP_/ { n[substr($NF, 4)]++ }
	     / :Status of OP_[A-Z_0-9]+ in position [0-9]+ = NFS4_OK/ {
		for (i = 1; i + 2 <= NF; i++)
			if ($i == ":Status" && $(i + 1) == "of") { ok[substr($(i + 2), 4)]++; break }
	     }
	     END {
		for (k in n) print "ganesha.op." k, n[k]
		for (k in ok) print "ganesha.op_ok." k, ok[k]
	     }' "$GANESHA_LOG" | sort >"$RUN/counters"
}

ganesha_grace_over() {
	[ "$(lines 'NFS Server Now NOT IN GRACE' "$GANESHA_LOG")" -gt "$GRACE_ENDS" ] ||
		return 1
	echo "ganesha's log about grace (its clock, to the second):"
	grep -E 'NFS Server (Now|skipping)' "$GANESHA_LOG" | tail -n 3 |
		sed -E 's/^[^ ]+ ([^ ]+) .*\] [^ ]+ :[^:]+:[A-Z]+ :/  \1 /'
}

ganesha_stop() {
	kill -TERM "$SERVER_PID"
	status=0
	wait "$SERVER_PID" || status=$?
	SERVER_PID=
	[ "$status" = 0 ] || fail "ganesha exited with status $status on SIGTERM: $(tail -5 "$GANESHA_LOG")"
	echo "ganesha's messages above EVENT:"
	grep -E ':(WARN|MAJ|CRIT|FATAL) :' "$GANESHA_LOG" | grep -v ':DBUS :' |
		sed -E 's/^.*\] //' | sort | uniq -c | sed 's/^/  /'
}

ganesha_check() {
	:
}

counter() {
	awk -v name="$1" '$1 == name { print $2; exit }' "$RUN/counters"
}

# lines PATTERN FILE: how many lines of FILE match (0 if it does not exist)
lines() {
	c=$(grep -c -- "$1" "$2" 2>/dev/null) || true
	echo "${c:-0}"
}

# --- the namespace, the server
ip -n "$NS" link set lo up
ip -n "$NS" tuntap add dev $TAP mode tap
ip -n "$NS" addr add $HOST_IP/24 dev $TAP
ip -n "$NS" link set $TAP up

rm -rf "$RUN"
mkdir -p "$RUN"
if [ "$MODE" = fsx ]; then
	# the plain mount's export: a directory of the same image without
	# pnfs, made before jnfsd starts (it must exist to be exported)
	"$JNFS" mkfs "$RUN/img" --size 1G >/dev/null || fail "jnfs mkfs"
	"$JNFS" io "$RUN/img" -c "mkdir plain" >/dev/null || fail "jnfs io mkdir plain"
	cat >"$RUN/exports" <<EXPORTS
/ $HOST_IP/24(rw,sync,no_root_squash,pnfs)
/plain $HOST_IP/24(rw,sync,no_root_squash)
EXPORTS
elif [ -n "$PNFS" ]; then
	echo "/ $HOST_IP/24(rw,sync,no_root_squash,pnfs)" >"$RUN/exports"
else
	echo "/ $HOST_IP/24(rw,sync,no_root_squash)" >"$RUN/exports"
fi
[ "$SERVER" = jnfsd ] || EXPORT_PATH=/kc
${SERVER}_start 1

# --- the guest
# One vCPU: on a 2-core host that also runs the server, two TCG vCPUs made
# every RPC about twice as slow. The memory holds the reference tree (about
# 90 MiB on tmpfs) and the page cache.
set -- -serial "file:$RUN/guest.log"
KARGS=
if [ "$MODE" = restart ] || [ -n "$PNFS" ]; then
	# the host's answers: QEMU reads ctl.in into the guest's ttyS1
	mkfifo "$RUN/ctl.in" "$RUN/ctl.out"
	set -- "$@" -chardev "pipe,id=ctl,path=$RUN/ctl" -serial chardev:ctl
fi
if [ -n "$PNFS" ]; then
	# jnfsd's own image as the guest's disk, written by both: QEMU without
	# a cache of its own (cache=none: O_DIRECT on the image) and without
	# its lock on the file, which jnfsd holds open
	set -- "$@" -drive "file=$RUN/img,format=raw,if=none,id=shared,cache=none,aio=threads,file.locking=off" \
		-device virtio-blk-pci,drive=shared,serial=jnfs-pnfs
	# The layout driver asks blkmapd which disk a device id names and
	# then sleeps for the answer - after it has woken blkmapd
	# (bl_resolve_deviceid: rpc_queue_upcall, then set_current_state and
	# schedule, no condition to test). Where the upcall's wake-up lets
	# blkmapd run at once (a voluntary preemption point on the way) and
	# blkmapd answers without sleeping (the disk's signature already in
	# its cache: every upcall after the first), the answer's wake-up
	# comes before the sleep and is lost: the reader hangs for ever in
	# bl_resolve_deviceid (seen in 2 of 6 runs, at the second and third
	# upcall). On one vCPU without voluntary preemption the driver
	# always sleeps before blkmapd runs.
	KARGS="$KARGS preempt=none"
fi
echo "booting $KERNEL in QEMU (TCG): NFS $VERS against $SERVER on $HOST_IP:$PORT ($MODE)"
T_BOOT=$(date +%s)
ip netns exec "$NS" timeout $GUEST_TIMEOUT qemu-system-x86_64 \
	-accel tcg -cpu max -smp 1 -m 768 \
	-nodefaults -no-user-config -display none -no-reboot \
	"$@" \
	-kernel "$KERNEL" -initrd "$INITRD" \
	-append "console=ttyS0 quiet panic=-1$KARGS kc.server=$HOST_IP kc.port=$PORT kc.ip=$GUEST_IP/24 kc.vers=$VERS kc.path=$EXPORT_PATH kc.mode=$MODE kc.copy=$COPY kc.pnfs=${PNFS:-0} kc.fsxops=$FSX_OPS kc.fsxseeds=$(echo $FSX_SEEDS | tr ' ' ,)" \
	-netdev tap,id=net0,ifname=$TAP,script=no,downscript=no \
	-device virtio-net-pci,netdev=net0 \
	</dev/null >"$RUN/qemu.out" 2>&1 &
QEMU_PID=$!

# restart: SIGKILL, start again, tell the guest; then watch for the end of
# the grace period (measured here from the moment the new instance listens)
RESTARTED=
GRACE_REPORT=
restart_server() {
	${SERVER}_killed
	echo "restart: SIGKILL to $SERVER (pid $SERVER_PID)"
	kill -KILL "$SERVER_PID"
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
	${SERVER}_start 2
	T_RESTART=$(date +%s.%N)
	echo "restart: $SERVER listens again"
	# QEMU holds the fifo open: this cannot block unless QEMU is gone
	timeout 10 sh -c 'echo "$1 restarted" >"$2"' sh "$SERVER" "$RUN/ctl.in" ||
		fail "the guest's second serial port does not take the answer"
	RESTARTED=1
}
check_grace() {
	if out=$(${SERVER}_grace_over); then
		GRACE_REPORT="grace period over $(awk -v a="$T_RESTART" -v b="$(date +%s.%N)" \
			'BEGIN { printf "%.1f", b - a }') s after the restart (seen by polling every 0.5 s)
$out"
		echo "restart: $GRACE_REPORT"
	fi
}

# pnfs: the guest asks for the server's counters around what must not go
# through the server ("KCLIENT: counters NAME"); they are kept as
# $RUN/counters.NAME and the guest is told on its second serial port
COUNTED=0
take_counters() {
	asked=$(lines 'KCLIENT: counters ' "$RUN/guest.log")
	while [ "$COUNTED" -lt "$asked" ]; do
		COUNTED=$((COUNTED + 1))
		name=$(grep 'KCLIENT: counters ' "$RUN/guest.log" | sed -n "${COUNTED}p" |
			tr -d '\r' | awk '{ print $3 }')
		case $name in
		[a-z]*) ;;
		*) fail "the guest asked for counters under a bad name: '$name'" ;;
		esac
		jnfsd_dump
		cp "$RUN/counters" "$RUN/counters.$name"
		timeout 10 sh -c 'echo "counted $1" >"$2"' sh "$name" "$RUN/ctl.in" ||
			fail "the guest's second serial port does not take the answer"
	done
}

# the mount is hard: a guest whose server died would wait for it until the
# timeout, so a dead server stops the guest at once
while kill -0 "$QEMU_PID" 2>/dev/null; do
	if [ "$MODE" = restart ] && [ -z "$RESTARTED" ] &&
		grep -qs "KCLIENT: restart-server" "$RUN/guest.log"; then
		restart_server
	elif [ -n "$RESTARTED" ] && [ -z "$GRACE_REPORT" ]; then
		check_grace
	fi
	[ -z "$PNFS" ] || take_counters
	if ! kill -0 "$SERVER_PID" 2>/dev/null; then
		kill "$QEMU_PID" 2>/dev/null || true
		echo "$SERVER died while the guest ran"
		[ "$SERVER" = jnfsd ] && cat "$JNFSD_ERR"
		[ "$SERVER" = ganesha ] && tail -5 "$GANESHA_LOG"
		break
	fi
	if [ -n "$RESTARTED" ] || [ -n "$PNFS" ]; then sleep 0.5; else sleep 1; fi
done
qemu_status=0
wait "$QEMU_PID" || qemu_status=$?
QEMU_PID=
T_END=$(date +%s)
tr -d '\r' <"$RUN/guest.log"
[ "$qemu_status" = 0 ] || echo "qemu exited with status $qemu_status: $(cat "$RUN/qemu.out")"
echo "the guest ran $((T_END - T_BOOT)) s"
if [ -n "$RESTARTED" ] && [ -z "$GRACE_REPORT" ]; then
	check_grace
	[ -n "$GRACE_REPORT" ] || echo "restart: the grace period was not over when the guest finished"
fi

# --- the server's side: counters, clean stop, clean storage
${SERVER}_counters

# Not served: the guest saw "Protocol not supported" (PROG_MISMATCH, or
# MINOR_VERS_MISMATCH); or a jnfsd answered COMPOUND with PROC_UNAVAIL
# (the jnfsd of before NFSv4 knew its NULL procedure alone; mount.nfs then
# only says "mount system call failed").
skip=
if grep -q 'KCLIENT: result=SKIP' "$RUN/guest.log"; then
	skip=$(sed -n 's/^KCLIENT: skip //p' "$RUN/guest.log" | tr -d '\r')
elif [ "$SERVER" = jnfsd ] && [ "$VERS" != 3 ] &&
	grep -q 'KCLIENT: fail step=mount ' "$RUN/guest.log" &&
	[ "$(counter rpc.replies.proc_unavail)" -gt 0 ] 2>/dev/null &&
	[ "$(counter rpc.nfs.v4.compound)" = "" ]; then
	skip="jnfsd answers NFSv4 COMPOUND with PROC_UNAVAIL"
fi
if [ -n "$skip" ]; then
	${SERVER}_stop >/dev/null
	rm -rf "$RUN"
	echo "SKIP: $SERVER does not serve NFS $VERS ($skip)"
	exit 77
fi
if [ "$VERS" = 3 ]; then
	echo "server counters (non-zero, rpc.nfs.* and rpc.mount.*, srv.*):"
	grep -E "^(rpc\.(nfs|mount)\.v3\.[a-z]+(\.p50_us|\.p99_us)?|srv\.[a-z_]+|rpc\.replies\.[a-z_]+) [1-9]" \
		"$RUN/counters" | sed 's/^/  /'
else
	echo "server counters (non-zero, NFSv4):"
	grep -E "^(rpc\.nfs\.v4\.[a-z]+|nfs4\.[a-zA-Z_.]+|ganesha\.op(_ok)?\.[A-Z_]+|rpc\.replies\.[a-z_]+) [1-9]" \
		"$RUN/counters" | sed 's/^/  /'
fi

grep -q 'KCLIENT: result=PASS' "$RUN/guest.log" ||
	fail "the guest did not pass (log above; kept in $RUN)"

if [ "$VERS" = 3 ]; then
	# every procedure the workload must have made the client send
	for proc in getattr setattr lookup access readlink read write create mkdir symlink mknod \
		remove rmdir rename link readdir readdirplus fsstat fsinfo pathconf commit; do
		n=$(counter rpc.nfs.v3.$proc)
		[ "${n:-0}" -gt 0 ] || fail "the client sent no NFSv3 $proc (rpc.nfs.v3.$proc ${n:-missing})"
	done
	[ "$(counter rpc.mount.v3.mnt)" -gt 0 ] || fail "no MOUNT v3 MNT call"
elif [ -n "$OP_COUNTER" ] && [ "$MODE" != fsx ]; then
	# every operation the workload must have made the client send (the
	# instance after a restart sees what comes after it)
	ops="EXCHANGE_ID CREATE_SESSION RECLAIM_COMPLETE SEQUENCE PUTROOTFH PUTFH GETATTR GETFH
		LOOKUP ACCESS OPEN CLOSE READ WRITE COMMIT CREATE REMOVE RENAME LINK READDIR
		READLINK SETATTR SAVEFH LOCK LOCKT LOCKU DESTROY_SESSION"
	[ "$VERS" = 4.1 ] || ops="$ops ALLOCATE DEALLOCATE SEEK COPY"
	[ -z "$PNFS" ] || ops="$ops LAYOUTGET GETDEVICEINFO LAYOUTCOMMIT LAYOUTRETURN"
	for op in $ops; do
		# shellcheck disable=SC2059
		name=$(printf "$OP_COUNTER" "$op")
		n=$(counter "$name")
		[ "${n:-0}" -gt 0 ] || fail "the client sent no $op ($name ${n:-missing})"
	done
fi
# (fsx copies within one file: the Linux client does that by READ and
# WRITE, never COPY)
if [ "$VERS" = 4.2 ] && [ -n "$COPY_COUNTER" ] && [ "$MODE" != fsx ]; then
	n=$(counter "$COPY_COUNTER")
	[ "${n:-0}" -gt 0 ] || fail "the server did no COPY ($COPY_COUNTER ${n:-missing})"
fi
if [ "$SERVER" = jnfsd ]; then
	for bad in rpc.replies.garbage_args rpc.replies.system_err rpc.replies.proc_unavail; do
		[ "$(counter $bad)" = 0 ] || fail "$bad $(counter $bad)"
	done
fi

# --- pnfs: what went through the server, and the data read back through it
# delta A B NAME: counter NAME in counters.B less that in counters.A
delta() {
	awk -v n="$3" 'FNR == 1 { f++ } $1 == n { v[f] = $2 } END { print v[2] - v[1] }' \
		"$RUN/counters.$1" "$RUN/counters.$2"
}
# print_deltas A B: the counters about I/O and layouts that moved from A to B
print_deltas() {
	awk 'FNR == 1 { f++ }
	     $1 ~ /^(nfs4\.op\.(READ|WRITE|COMMIT|LAYOUT[A-Z]*|GETDEVICE[A-Z]*)(\.errors)?|nfs4\.(layout|cb)\.[a-z_]+|fs\.[a-z_.]*(map|commit|layout|recall)[a-z_.]*)$/ {
		if (f == 1) a[$1] = $2; else if ($2 != a[$1]) print "  " $1, $2 - a[$1]
	     }' "$RUN/counters.$1" "$RUN/counters.$2"
}
check_pnfs() {
	for c in pnfs-before pnfs-after mixed-before mixed-after; do
		[ -s "$RUN/counters.$c" ] || fail "the guest never asked for the counters '$c'"
	done
	echo "pNFS: what the server counted while the guest wrote and read through its layouts:"
	print_deltas pnfs-before pnfs-after
	for op in READ WRITE; do
		n=$(delta pnfs-before pnfs-after nfs4.op.$op)
		[ "$n" = 0 ] ||
			fail "$n $op operations went through the server while the guest used its layouts"
	done
	for name in nfs4.op.LAYOUTGET nfs4.op.GETDEVICEINFO nfs4.op.LAYOUTCOMMIT \
		nfs4.layout.gets nfs4.layout.commits; do
		n=$(delta pnfs-before pnfs-after $name)
		[ "$n" -gt 0 ] || fail "the guest wrote through no layout: $name $n"
	done
	echo "pNFS: what the server counted while one file was written through the layout and through the server (kcio mixed):"
	print_deltas mixed-before mixed-after
	n=$(delta mixed-before mixed-after nfs4.op.WRITE)
	[ "$n" -ge 16 ] || fail "the mixed writes sent $n WRITEs through the server, not 16 or more"
	n=$(delta mixed-before mixed-after nfs4.layout.gets)
	[ "$n" -gt 0 ] || fail "the mixed writes got no layout"
	read_back 6
}
# read_back MIN: every file the guest listed ("KCLIENT: pnfs-file"), read
# back through jnfsd by a client without the disk (NFSv3, libnfs); at
# least MIN of them
read_back() {
	files=0
	tr -d '\r' <"$RUN/guest.log" | sed -n 's/^KCLIENT: pnfs-file //p' >"$RUN/pnfs-files"
	while read -r path size sum; do
		# libnfs mounts the directory of the URL's path: "//NAME" is
		# NAME in the export /, "/DIR/NAME" NAME in the export /DIR
		url=nfs://$HOST_IP//$path
		case $path in */*) url=nfs://$HOST_IP/$path ;; esac
		ip netns exec "$NS" nfs-cat "$url?version=3&nfsport=$PORT&mountport=$PORT" \
			>"$RUN/readback" || fail "nfs-cat $path through jnfsd"
		got_size=$(stat -c %s "$RUN/readback")
		got_sum=$(md5sum <"$RUN/readback" | cut -d' ' -f1)
		[ "$got_size $got_sum" = "$size $sum" ] ||
			fail "$path read back through jnfsd: $got_size bytes, MD5 $got_sum; the guest wrote $size, $sum"
		files=$((files + 1))
	done <"$RUN/pnfs-files"
	[ "$files" -ge "$1" ] || fail "the guest listed $files files to read back, not $1"
	rm -f "$RUN/readback"
	echo "$files files read back through jnfsd (NFSv3, nfs-cat) as the guest wrote them"
}
# fsx: per run ("KCLIENT: fsx-run KIND SEED OPS SECONDS"), what the server
# counted between the guest's counters before and after it. A pNFS run
# must have taken layouts, a plain one none.
check_fsx() {
	tr -d '\r' <"$RUN/guest.log" | sed -n 's/^KCLIENT: fsx-run //p' >"$RUN/fsx-runs"
	runs=0
	echo "fsx: the runs (recalls: CB_LAYOUTRECALLs sent; own_waits: requests parked for" \
		"the caller's own layout; delays: NFS4ERR_DELAY answers; fs_delays: engine breaks" \
		"answered busy):"
	while read -r kind seed ops secs; do
		a=fsx-$kind-$seed-before b=fsx-$kind-$seed-after
		for c in $a $b; do
			[ -s "$RUN/counters.$c" ] || fail "the guest never asked for the counters '$c'"
		done
		gets=$(delta $a $b nfs4.op.LAYOUTGET)
		echo "fsx-run vers=$VERS kind=$kind seed=$seed ops=$ops seconds=$secs" \
			"recalls=$(delta $a $b nfs4.layout.recalls_sent)" \
			"own_waits=$(delta $a $b nfs4.layout.recall_waits_own)" \
			"other_waits=$(delta $a $b nfs4.layout.recall_waits)" \
			"delays=$(delta $a $b nfs4.delays)" \
			"fs_delays=$(delta $a $b fs.layout_delays)" \
			"layoutgets=$gets returns=$(delta $a $b nfs4.op.LAYOUTRETURN)" \
			"reads=$(delta $a $b nfs4.op.READ) writes=$(delta $a $b nfs4.op.WRITE)" \
			"compounds=$(delta $a $b rpc.nfs.v4.compound)"
		case $kind in
		pnfs) [ "$gets" -gt 0 ] || fail "the pNFS fsx run (seed $seed) took no layout" ;;
		*) [ "$gets" = 0 ] || fail "the plain fsx run (seed $seed) took $gets layouts" ;;
		esac
		runs=$((runs + 1))
	done <"$RUN/fsx-runs"
	want=$(($(echo $FSX_SEEDS | wc -w) * 2))
	[ "$runs" = "$want" ] || fail "$runs fsx runs, not $want"
	read_back "$want"
}
if [ "$MODE" = fsx ]; then
	check_fsx
elif [ -n "$PNFS" ]; then
	check_pnfs
fi

${SERVER}_stop
${SERVER}_check
# the logs stay for a look at a passing run (Ganesha's, some 50 MB of
# DEBUG lines, only as the counters counted from it); the storage goes
mv "$RUN/guest.log" "$WORK/guest$TAG.log"
if [ "$SERVER" = jnfsd ]; then
	mv "$RUN/jnfsd.out" "$WORK/jnfsd$TAG.out"
	[ ! -e "$RUN/jnfsd-2.out" ] || mv "$RUN/jnfsd-2.out" "$WORK/jnfsd-2$TAG.out"
else
	mv "$RUN/counters" "$WORK/counters$TAG.txt"
fi
rm -rf "$RUN"
echo "ok the Linux NFS $VERS client in QEMU against $SERVER ($MODE)"
