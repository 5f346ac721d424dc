#!/bin/sh
# workload.sh - the workload of the kernel-client test, run by the guest's
# /init (guest-init.sh, which also describes the "KCLIENT:" lines).
#
# usage: workload.sh SERVER PORT [VERS [PATH [MODE [COPY [PNFS [OPS [SEEDS]]]]]]]
#   VERS  3 (default), 4.1 or 4.2: the NFS version mounted
#   PATH  the path mounted on the server (default /)
#   MODE  workload (default), or restart: the server is killed and
#         restarted in the middle (NFSv4 only, step 1b), or fsx: step F
#         alone
#   OPS, SEEDS  (fsx) operations per run, the seeds (comma-separated)
#   COPY  required: copy_file_range must be done by the server's COPY
#         (NFSv4.2); fallback (default): any correct copy will do, how it
#         was done is reported
#   PNFS  1: the export serves pNFS block layouts and the server's image is
#         this machine's disk, blkmapd running (guest-init.sh): step 1p
#         first; 0 (default): not
# Exit status 0: passed; 77: the server does not serve this NFS version
# (mount.nfs says "Protocol not supported"); anything else: failed.
#
# Every change is made twice by the same command: in a reference tree on the
# guest's tmpfs ($REF) and on the NFS mount ($NFS). The two trees must then
# look the same - names, types, sizes, modes, owners, link counts, device
# numbers, symlink targets, file mtimes and MD5 sums of the data - first
# through the client's caches, then after a remount, when every answer comes
# from the server. Any difference, and any command failing, ends the run
# with a "fail" line naming the step.
#
#   1. mount; 1,000 files of varied sizes (0 to 400 KB), modes and owners in
#      10x10 nested directories, copied by ten cp -a at once (CREATE, WRITE,
#      COMMIT, SETATTR of mode, owner, mtime); 50 more written with fsync;
#      1 MiB written and read with O_DIRECT; a 64 MiB file written
#      sequentially with fsync
#   1p. (pnfs) files written and read through the block layout, the host
#      keeping the server's counters before and after (it checks that the
#      server did no READ or WRITE meanwhile, and counted LAYOUTGET and
#      LAYOUTCOMMIT): new files of several sizes through the page cache
#      with fsync, O_DIRECT at page-aligned offsets, holes, an overwrite of
#      written blocks, a partial block, an append; compared through the
#      cache, after dropping the cache (the disk, through the layout) and
#      after a remount (new layouts: the server's block map after the
#      LAYOUTCOMMITs). Then read through a second mount that cannot use
#      layouts (NFSv3: every byte through the server) while the first holds
#      them, and listed for the host, which reads them back through the
#      server too. Then one file written by one process both through the
#      layout (1 MiB with O_DIRECT) and through the server (512 bytes with
#      O_DIRECT inside each block just written: every such WRITE recalls
#      the client's own layout), fsync, every byte read back (kcio mixed).
#      Then the rest of the workload, on the pnfs export
#   1b. (restart mode) open files, data written through one of them and not
#      yet flushed, a byte-range write lock held by another process; the
#      host kills the server with SIGKILL and restarts it; then the held
#      files and the lock are used again (the client must reclaim them in
#      the grace period), a second process must still be refused the lock
#      by the server (through a second mount), and every byte must be
#      there; then the workload goes on
#   2. rename (in a directory, across directories, over an existing file,
#      directories across parents), link, symlink (also a 1,001-byte
#      target), mknod (fifo, devices), truncate (shrink, grow), writes after
#      a hole and in the middle, append, a rewrite with O_TRUNC, a block
#      written past 4 GiB, O_EXCL create, chmod, chown and chgrp (also of a
#      symlink), remove (also of an open file), rmdir, a deep mkdir, a
#      directory of 600 long names (several READDIR replies), a 255-byte
#      name, statfs
#   2b. (NFSv4) numeric owners; fcntl and flock locks between two processes
#      (the second waits until the first unlocks) and byte-range semantics
#      (kcio, kcio.c), decided by the server: the second process goes
#      through a second mount (nosharecache); fallocate (allocate, punch a
#      hole), SEEK_DATA and SEEK_HOLE, copy_file_range; O_DIRECT at
#      unaligned offsets. NFSv4.1 has
#      no ALLOCATE, DEALLOCATE, SEEK or COPY: there fallocate must fail with
#      EOPNOTSUPP, lseek must answer as for a file without holes, and
#      copy_file_range must still copy
#   3. compare (cached); umount; mount (NFSv3: with nordirplus, so listings
#      use READDIR where the first mount used READDIRPLUS); compare; read
#      the 64 MiB file and the sparse one back and check them; (NFSv4) the
#      space the files of 2b use, as the server now reports it
#   4. remove a third of the tree; umount; mount; compare; umount
#   F. (fsx mode, instead of all the above) PATH/plain mounted (an export
#      without pnfs) and PATH (pnfs, blkmapd running); per seed, kcio fsx
#      (kcio.c) with OPS operations first through the plain mount, then
#      through the pNFS one, each timed here and between "counters" asks
#      (fsx-KIND-SEED-before/after), then its file compared, after
#      drop_caches, with kcio's model of it (--save), and listed for the
#      host to read back through the server
SERVER=$1
PORT=$2
VERS=${3:-3}
EXPORT=${4:-/}
MODE=${5:-workload}
COPY=${6:-fallback}
PNFS=${7:-0}
FSX_OPS=${8:-1000}
FSX_SEEDS=${9:-1}
MNT=/mnt/nfs
NFS=$MNT/kclient
# NFSv4: a second mount of the same server with its own inodes, so that its
# lock requests are decided by the server (kcio.c)
MNT2=/mnt/nfs2
NFS2=$MNT2/kclient
REF=/tmp/ref
case $VERS in
3) OPTS=vers=3,proto=tcp,port=$PORT,mountport=$PORT,mountproto=tcp,nolock,retry=0 ;;
# NFSv4: one port, no MOUNT protocol, locks in the protocol itself; owners
# go as numeric strings (the client's nfs4_disable_idmapping default)
4.1 | 4.2) OPTS=vers=$VERS,proto=tcp,port=$PORT,retry=0 ;;
*)
	echo "KCLIENT: fail step=start unknown NFS version $VERS"
	exit 1
	;;
esac
if [ "$MODE" = restart ] && [ "$VERS" = 3 ]; then
	echo "KCLIENT: fail step=start restart mode needs NFSv4 (NFSv3 keeps no state to reclaim)"
	exit 1
fi
# A regular file's mtime is set to this after its data last changed, so the
# comparison covers mtimes (SETATTR) without depending on either clock.
export STAMP='2001-09-09 01:46:40'
STEP=start

step() {
	STEP=$1
	read -r up _ </proc/uptime
	echo "KCLIENT: step $STEP uptime=$up"
}

fail() {
	echo "KCLIENT: fail step=$STEP $*"
	exit 1
}

# both CMD [ARG...]: run CMD in the reference tree, then in the NFS tree
# (paths relative; use "sh -c" where a glob must expand in each tree)
both() {
	(cd "$REF" && "$@") || fail "in the reference tree: $*"
	(cd "$NFS" && "$@") || fail "on NFS: $*"
}

mount_nfs() {
	if ! mount.nfs "$SERVER:$EXPORT" "$MNT" -o "$OPTS$1" 2>/tmp/mount.err; then
		# a server that answers this NFS version with PROG_MISMATCH (or
		# this minor version with MINOR_VERS_MISMATCH) does not serve it
		if [ "$STEP" = mount ] && grep -q "Protocol not supported" /tmp/mount.err; then
			echo "KCLIENT: skip $(cat /tmp/mount.err)"
			exit 77
		fi
		fail "mount.nfs -o $OPTS$1: $(cat /tmp/mount.err)"
	fi
	grep -E " $MNT nfs4? " /proc/mounts | grep -q "vers=$VERS," ||
		fail "not an NFS $VERS mount: $(grep " $MNT " /proc/mounts)"
}

umount_nfs() {
	umount "$MNT" || fail "umount $MNT"
}

mount_second() {
	mkdir -p "$MNT2" || fail "mkdir $MNT2"
	mount.nfs "$SERVER:$EXPORT" "$MNT2" -o "$OPTS,nosharecache" 2>/tmp/mount.err ||
		fail "mount.nfs -o $OPTS,nosharecache: $(cat /tmp/mount.err)"
}

# locks2 FILE ARGS...: kcio ARGS FILE in the reference tree, then kcio ARGS
# FILE FILE-through-the-second-mount on NFS
locks2() {
	f=$1
	shift
	kcio "$@" "$REF/$f" || fail "in the reference tree: kcio $* $f"
	kcio "$@" "$NFS/$f" "$NFS2/$f" || fail "on NFS: kcio $* $f (two mounts)"
}

# slice FILE SIZE OFFSET: FILE gets SIZE bytes of /tmp/src from OFFSET
slice() {
	if [ "$2" = 0 ]; then
		: >"$1"
		return
	fi
	dd if=/tmp/src of="$1" bs="$2" count=1 skip="$3" iflag=skip_bytes,fullblock 2>/dev/null ||
		fail "dd to $1"
}

# describe DIR: every entry below DIR, sorted, one line each: type, name
# (with the target for a symlink), mode, owner, group, links, size, mtime,
# device numbers. A directory's size is its filesystem's own business and
# its mtime moves with its entries; only regular files have fixed mtimes.
describe() {
	(cd "$1" && find . | sort | xargs stat -c '%F|%N|%a|%u|%g|%h|%s|%Y|%t,%T') |
		awk -F'|' -v OFS='|' '
			$1 == "directory" { $7 = "-" }
			$1 != "regular file" { $8 = "-" }
			{ print }'
}

# checksums DIR: MD5 of every regular file below DIR but the 64 MiB one and
# the sparse one of 4 GiB (checked on their own)
checksums() {
	(cd "$1" && find . -type f ! -name big ! -name sparse | sort | xargs md5sum)
}

# compare: the NFS tree must look exactly like the reference tree
compare() {
	describe "$REF" >/tmp/want.list
	describe "$NFS" >/tmp/got.list
	if ! cmp -s /tmp/want.list /tmp/got.list; then
		diff /tmp/want.list /tmp/got.list | head -40
		fail "listings differ (- reference, + NFS)"
	fi
	checksums "$REF" >/tmp/want.sums
	checksums "$NFS" >/tmp/got.sums
	if ! cmp -s /tmp/want.sums /tmp/got.sums; then
		diff /tmp/want.sums /tmp/got.sums | head -40
		fail "file data differs (- reference, + NFS)"
	fi
	echo "KCLIENT: compared $(wc -l </tmp/want.list) entries, $(wc -l </tmp/want.sums) files"
}

# now: seconds since boot; since T: seconds from T to now, one decimal
now() {
	read -r up _ </proc/uptime
	echo "$up"
}
since() {
	awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'
}

# --- 1p. pNFS block layouts (pnfs)

# host_counters NAME: the host keeps the server's counters now, as NAME
host_counters() {
	stty -F /dev/ttyS1 clocal -echo 2>/dev/null
	echo "KCLIENT: counters $1"
	read -r ack </dev/ttyS1 || fail "no answer from the host on /dev/ttyS1"
	[ "$ack" = "counted $1" ] || fail "the host answered '$ack' to 'counters $1'"
}

# pnfs_compare HOW [DIR]: the files below pnfs/ (of the NFS tree, or DIR)
# must have the reference's sizes and data
pnfs_compare() {
	(cd "$REF/pnfs" && stat -c '%n %s' * && md5sum *) >/tmp/pnfs.want
	(cd "${2:-$NFS/pnfs}" && stat -c '%n %s' * && md5sum *) >/tmp/pnfs.got ||
		fail "listing the pNFS files ($1)"
	if ! cmp -s /tmp/pnfs.want /tmp/pnfs.got; then
		diff /tmp/pnfs.want /tmp/pnfs.got | head -20
		fail "the pNFS files differ $1 (- reference, + NFS)"
	fi
}

# client_ops: what this client sent on the mount at $MNT, as it counts
# (/proc/self/mountstats), for the log: I/O through the server and layouts
client_ops() {
	awk -v mnt="$MNT" '
		$1 == "device" { on = $5 == mnt; next }
		on && $1 ~ /^(READ|WRITE|COMMIT|LAYOUT[A-Z]+|GETDEVICE[A-Z]+):$/ {
			printf "%s%s%s", sep, $1, $2; sep = " "
		}' /proc/self/mountstats
}

pnfs_steps() {
	step pnfs-write
	dd if=/dev/urandom of=/tmp/pnfs.src bs=1M count=8 2>/dev/null || fail "dd from /dev/urandom"
	host_counters pnfs-before
	both mkdir pnfs
	# new files through the page cache, each made stable by fsync (the
	# client's LAYOUTCOMMIT); a whole number of blocks, a partial one, one
	# byte
	both dd if=/tmp/pnfs.src of=pnfs/big bs=1M conv=fsync status=none
	both dd if=/tmp/pnfs.src of=pnfs/odd bs=1000000 count=1 skip=3 conv=fsync status=none
	both dd if=/tmp/pnfs.src of=pnfs/byte bs=1 count=1 skip=5 conv=fsync status=none
	# holes: 64 KiB at 3 MiB of an empty file, then 4 KiB at 8 KiB
	both dd if=/tmp/pnfs.src of=pnfs/sparse bs=64k count=1 seek=48 conv=fsync status=none
	both dd if=/tmp/pnfs.src of=pnfs/sparse bs=4k count=1 seek=2 skip=5 conv=notrunc,fsync status=none
	# O_DIRECT from page-aligned buffers at page-aligned offsets: the
	# layout driver writes the disk itself; a hole between; no fsync
	both kcio direct pnfs/direct 0 1048576 1
	both kcio direct pnfs/direct 2097152 65536 2
	# written blocks overwritten (the layout says READ_WRITE_DATA), part of
	# a block (the client reads the rest from the disk first), an append
	both dd if=/tmp/pnfs.src of=pnfs/big bs=4k count=256 seek=513 skip=7 conv=notrunc,fsync status=none
	both dd if=/tmp/pnfs.src of=pnfs/odd bs=1000 count=1 seek=5 skip=77 conv=notrunc,fsync status=none
	both dd if=/tmp/pnfs.src of=pnfs/odd bs=3000 count=1 skip=11 oflag=append conv=notrunc,fsync status=none
	echo "KCLIENT: pnfs: the client sent $(client_ops)"

	step pnfs-read
	pnfs_compare "through the client's cache"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	pnfs_compare "read from the disk through the layout"
	# a new mount gets new layouts: the server's block map after the
	# LAYOUTCOMMITs (converted extents, sizes)
	umount_nfs
	mount_nfs ""
	pnfs_compare "after a remount"
	echo "KCLIENT: pnfs: after the remount the client sent $(client_ops)"
	host_counters pnfs-after

	# one file through the layout and through the server at once
	step pnfs-mixed
	host_counters mixed-before
	t0=$(now)
	both kcio mixed pnfs/mixed 16
	echo "KCLIENT: pnfs: 16 rounds of kcio mixed took $(since "$t0") s"
	host_counters mixed-after
	sync
	echo 3 >/proc/sys/vm/drop_caches
	pnfs_compare "after the mixed writes"

	# A mount that cannot use layouts: NFSv3, every byte read by the
	# server from its image, while the first mount still holds layouts
	step pnfs-server-read
	mkdir -p /mnt/nfs3 || fail "mkdir /mnt/nfs3"
	o3=vers=3,proto=tcp,port=$PORT,mountport=$PORT,mountproto=tcp,nolock,retry=0
	mount.nfs "$SERVER:$EXPORT" /mnt/nfs3 -o $o3 2>/tmp/mount.err ||
		fail "mount.nfs -o $o3: $(cat /tmp/mount.err)"
	pnfs_compare "read through the server (NFSv3)" /mnt/nfs3/kclient/pnfs
	umount /mnt/nfs3 || fail "umount /mnt/nfs3"
	# and for the host, which reads them back through the server too: at
	# the export's root (libnfs mounts the directory a file's URL names,
	# and jnfsd exports only its root), renamed there - the same inodes
	# and blocks - and out of the trees the workload compares
	for f in "$REF"/pnfs/*; do
		name=${f##*/}
		mv "$NFS/pnfs/$name" "$MNT/pnfs.$name" || fail "mv pnfs/$name to the export's root"
		echo "KCLIENT: pnfs-file pnfs.$name $(stat -c %s "$f") $(md5sum <"$f" | cut -d' ' -f1)"
	done
	rm -r "$REF/pnfs" || fail "rm -r $REF/pnfs"
	rmdir "$NFS/pnfs" || fail "rmdir $NFS/pnfs"
}

# --- 1b. the server restarted under open files and a lock (restart mode)

# hold CMD REPLY: send CMD (none if empty) to the lock holder, expect REPLY
hold() {
	[ -z "$1" ] || echo "$1" >&7
	read -r reply <&8
	[ "$reply" = "$2" ] ||
		fail "the lock holder answered '$reply' to '$1', not '$2': $(cat /tmp/hold.err)"
}

restart_server() {
	step restart-prepare
	both mkdir restart
	both sh -c 'dd if=/tmp/src of=restart/rw bs=64k count=1 2>/dev/null'
	both sh -c 'dd if=/tmp/src of=restart/ro bs=64k count=2 skip=3 2>/dev/null'
	both sh -c ': >restart/locked'
	# held open across the restart, one for writing, one for reading
	exec 5<>"$NFS/restart/rw" 6<"$NFS/restart/ro" || fail "open restart/rw and restart/ro"
	# 32 KiB written through the open file stay dirty in the client's page
	# cache: they are flushed to the new instance
	dd if=/tmp/src bs=4096 count=8 skip=40 2>/dev/null >&5 || fail "write through the open file"
	dd if=/tmp/src of="$REF/restart/rw" bs=4096 count=8 skip=40 conv=notrunc 2>/dev/null
	# another process holds a write lock on [0, 100) of restart/locked and
	# writes under it, on command through two fifos; the second process
	# asks through the second mount, so that the server decides
	mount_second
	mkfifo /tmp/hold.in /tmp/hold.out || fail "mkfifo"
	kcio hold "$NFS/restart/locked" 0 100 </tmp/hold.in >/tmp/hold.out 2>/tmp/hold.err &
	HOLDER=$!
	exec 7>/tmp/hold.in 8</tmp/hold.out
	hold "" held
	hold write written
	printf 'written under the lock 0\n' | dd of="$REF/restart/locked" conv=notrunc 2>/dev/null
	[ "$(kcio trylock "$NFS2/restart/locked" 50 10)" = denied ] ||
		fail "a second process was granted the held lock"

	step restart-server
	# The host kills the server with SIGKILL when it sees the next line,
	# starts it again, and answers on the second serial port once it
	# listens. Nothing here touches the mount meanwhile.
	stty -F /dev/ttyS1 clocal -echo 2>/dev/null
	echo "KCLIENT: restart-server"
	read -r ack </dev/ttyS1 || fail "no answer from the host on /dev/ttyS1"
	t0=$(now)
	echo "KCLIENT: host: $ack"

	step restart-reclaim
	# only what was open and locked before: a new OPEN or LOCK would wait
	# for the end of the grace period, these must be reclaimed in it
	hold write written
	printf 'written under the lock 1\n' | dd of="$REF/restart/locked" conv=notrunc 2>/dev/null
	echo "KCLIENT: restart: the reclaimed lock and its open file took a write and fsync $(since "$t0") s after the restart"
	cat <&6 | cmp - "$REF/restart/ro" || fail "the file held open for reading reads back different"
	echo "written through an open file after the server restarted" >&5 ||
		fail "write through the open file after the restart"
	echo "written through an open file after the server restarted" |
		dd of="$REF/restart/rw" bs=32768 seek=1 conv=notrunc 2>/dev/null
	sync
	echo "KCLIENT: restart: reads and writes through the files held open worked $(since "$t0") s after the restart"
	# a new lock waits for the end of grace; then the reclaimed lock must
	# refuse it
	[ "$(kcio trylock "$NFS2/restart/locked" 50 10)" = denied ] ||
		fail "after the restart a second process was granted the held lock"
	echo "KCLIENT: restart: a second process was refused the lock $(since "$t0") s after the restart (new locks wait for the grace period to end)"
	hold release released
	wait "$HOLDER" || fail "the lock holder failed: $(cat /tmp/hold.err)"
	exec 5>&- 6<&- 7>&- 8<&-
	[ "$(kcio trylock "$NFS2/restart/locked" 50 10)" = locked ] ||
		fail "the lock is still held after its holder released it"
	umount "$MNT2" || fail "umount $MNT2"
	for f in rw ro locked; do
		cmp "$NFS/restart/$f" "$REF/restart/$f" || fail "restart/$f reads back different"
	done
	both touch -d "$STAMP" restart/rw restart/ro restart/locked
}

# --- 2b. NFSv4: owners, locks, fallocate, seek, copy, unaligned O_DIRECT

v4_extras() {
	step numeric-owners
	[ "$(cat /sys/module/nfs/parameters/nfs4_disable_idmapping)" = Y ] ||
		fail "the client maps owners to names (nfs4_disable_idmapping is not Y)"
	[ "$(stat -c %u:%g "$NFS/tree/d4/s4/f4")" = 1234:5678 ] ||
		fail "chown 1234:5678 reads back as $(stat -c %u:%g "$NFS/tree/d4/s4/f4")"
	[ "$(stat -c %u:%g "$NFS/tree")" = 0:0 ] ||
		fail "a directory root made is owned by $(stat -c %u:%g "$NFS/tree")"
	ls -ln "$NFS/tree/d4/s4" | grep -E ' f[45]$'

	step locks
	both mkdir v4
	# between two processes on one mount the client decides by itself
	both kcio lockwait fcntl v4/lock-local
	# through two mounts the server does (LOCK, LOCKT, LOCKU, denials)
	mount_second
	locks2 v4/lock-fcntl lockwait fcntl
	locks2 v4/lock-flock lockwait flock
	locks2 v4/lock-ranges ranges
	umount "$MNT2" || fail "umount $MNT2"
	both touch -d "$STAMP" v4/lock-local v4/lock-fcntl v4/lock-flock v4/lock-ranges

	step fallocate
	# punched and full, filled and sparse start alike; after the remount
	# the server's space_used must tell each pair apart (v4_space)
	for f in punched full; do
		both dd if=/tmp/src of=v4/$f bs=64k count=16 status=none
	done
	for f in filled sparse; do
		both dd if=/tmp/src of=v4/$f bs=64k count=1 skip=3 status=none
		both truncate -s 1048576 v4/$f
	done
	both sh -c ': >v4/grown'
	if [ "$VERS" = 4.1 ]; then
		# NFSv4.1 has no ALLOCATE or DEALLOCATE
		for op in "punch v4/punched 262144 262144" "falloc v4/filled 65536 983040"; do
			# shellcheck disable=SC2086
			r=$(cd "$NFS" && kcio $op)
			[ "$r" = EOPNOTSUPP ] || fail "fallocate over NFSv4.1 gave '$r', not EOPNOTSUPP"
		done
	else
		both kcio punch v4/punched 262144 262144
		both kcio punch v4/punched 1000000 48576
		both kcio falloc v4/filled 65536 983040
		# past the end of the file: the size grows
		both kcio falloc v4/grown 0 2097152
		[ "$(stat -c %s "$NFS/v4/grown")" = 2097152 ] ||
			fail "fallocate of 2 MiB made a file of $(stat -c %s "$NFS/v4/grown") bytes"
	fi
	both touch -d "$STAMP" v4/punched v4/full v4/filled v4/sparse v4/grown

	step seek
	# data [0, 64K) and [1M, 1M+64K), holes between and after, to 3 MiB
	both dd if=/tmp/src of=v4/holes bs=64k count=1 status=none
	both dd if=/tmp/src of=v4/holes bs=64k count=1 skip=2 seek=16 conv=notrunc status=none
	both truncate -s 3145728 v4/holes
	both touch -d "$STAMP" v4/holes
	for q in "data 0" "hole 0" "data 65536" "data 100000" "hole 1048576" "hole 1100000" \
		"data 1114112" "hole 2000000" "data 3145728" "hole 3145728" "hole 5000000"; do
		# shellcheck disable=SC2086
		set -- $q
		got=$(kcio seek "$NFS/v4/holes" "$1" "$2") || fail "lseek SEEK_$1 $2"
		if [ "$VERS" = 4.2 ]; then
			want=$(kcio seek "$REF/v4/holes" "$1" "$2")
		elif [ "$2" -ge 3145728 ]; then
			want=ENXIO
		elif [ "$1" = data ]; then
			# NFSv4.1 has no SEEK: the client sees no holes
			want=$2
		else
			want=3145728
		fi
		[ "$got" = "$want" ] || fail "SEEK_$1 from $2 gave $got, not $want"
	done

	step copy
	both dd if=big of=v4/copysrc bs=1M count=4 status=none
	both kcio copy v4/copysrc v4/copydst 0 0 4194304
	both dd if=/tmp/src of=v4/copymid bs=64k count=4 status=none
	# unaligned, into the middle of a file and past its end
	both kcio copy v4/copysrc v4/copymid 4097 12289 300000
	# a copy that runs into the end of its source
	both kcio copy v4/copysrc v4/copytail 4000000 0 1000000
	for f in copydst copymid copytail; do
		cmp "$NFS/v4/$f" "$REF/v4/$f" || fail "v4/$f: copy_file_range copied different bytes"
	done
	both touch -d "$STAMP" v4/copysrc v4/copydst v4/copymid v4/copytail
	# how the client copied, from its per-operation counts: calls ... errors
	for op in COPY ALLOCATE DEALLOCATE SEEK; do
		echo "KCLIENT: $op calls and errors: $(awk -v op="$op:" '$1 == op { print $2, $NF }' /proc/self/mountstats)"
	done
	if [ "$VERS" = 4.2 ] && [ "$COPY" = required ]; then
		# shellcheck disable=SC2046
		set -- $(awk '$1 == "COPY:" { print $2, $NF }' /proc/self/mountstats)
		if [ "$PNFS" = 1 ]; then
			# a COPY recalls the client's own layouts of both files
			# and is answered DELAY meanwhile (docs/design.md rule
			# 9); the client sends it again: three copies, three
			# COPYs that succeeded
			[ $((${1:-0} - ${2:-0})) -ge 3 ] ||
				fail "copy_file_range was not done by the server's COPY (COPY calls ${1:-0}, errors ${2:-?})"
		else
			[ "${1:-0}" -gt 0 ] && [ "${2:-1}" = 0 ] ||
				fail "copy_file_range was not done by the server's COPY (COPY calls ${1:-0}, errors ${2:-?})"
		fi
	fi

	step direct-unaligned
	both dd if=/tmp/src of=v4/direct bs=64k count=4 skip=5 status=none
	# O_DIRECT on the mount only (tmpfs takes none); the client sends the
	# application's own unaligned offsets and lengths
	dd if=/tmp/src of="$NFS/v4/direct" bs=1000 count=37 skip=5 seek=11 oflag=direct conv=notrunc \
		2>/dev/null || fail "dd oflag=direct, 1000-byte blocks"
	dd if=/tmp/src of="$REF/v4/direct" bs=1000 count=37 skip=5 seek=11 conv=notrunc 2>/dev/null
	dd if=/tmp/src of="$NFS/v4/direct" bs=777 count=5 skip=3 seek=400 oflag=direct conv=notrunc \
		2>/dev/null || fail "dd oflag=direct past the end"
	dd if=/tmp/src of="$REF/v4/direct" bs=777 count=5 skip=3 seek=400 conv=notrunc 2>/dev/null
	dd if="$NFS/v4/direct" bs=777 skip=13 iflag=direct 2>/dev/null >/tmp/direct.got ||
		fail "dd iflag=direct, 777-byte blocks"
	dd if="$REF/v4/direct" bs=777 skip=13 2>/dev/null >/tmp/direct.want
	cmp /tmp/direct.got /tmp/direct.want || fail "an unaligned O_DIRECT read differs"
	both touch -d "$STAMP" v4/direct
}

# after the remount: the space the server says the files of 2b use
v4_space() {
	step space
	[ "$VERS" = 4.2 ] || return 0
	# shellcheck disable=SC2046
	set -- $(cd "$NFS/v4" && stat -c %b punched full filled sparse grown)
	echo "KCLIENT: 512-byte blocks used: punched $1 full $2 filled $3 sparse $4 grown $5"
	[ "$1" -lt "$2" ] || fail "punching holes freed no space ($1 blocks, unpunched $2)"
	[ "$3" -gt "$4" ] || fail "fallocate allocated no space ($3 blocks, sparse $4)"
	[ "$5" -ge 4096 ] || fail "a file fallocated to 2 MiB uses $5 blocks"
}

# --- F. fsx through a plain mount and through the pNFS one
fsx_steps() {
	step fsx-mount
	mkdir -p "$MNT" "$MNT2" "$REF" || fail "mkdir"
	mount_nfs ""
	mount.nfs "$SERVER:${EXPORT%/}/plain" "$MNT2" -o "$OPTS" 2>/tmp/mount.err ||
		fail "mount.nfs $SERVER:${EXPORT%/}/plain: $(cat /tmp/mount.err)"
	for seed in $(echo "$FSX_SEEDS" | tr , ' '); do
		for kind in plain pnfs; do
			step fsx-$kind-$seed
			file=$MNT/fsx-$kind-$seed path=fsx-$kind-$seed
			[ "$kind" = pnfs ] || file=$MNT2/fsx-$kind-$seed path=plain/fsx-$kind-$seed
			host_counters "fsx-$kind-$seed-before"
			t0=$(now)
			got=$(kcio fsx "$file" --seed "$seed" --ops "$FSX_OPS" --save "$REF/fsx") ||
				fail "kcio fsx through the $kind mount, seed $seed"
			secs=$(since "$t0")
			host_counters "fsx-$kind-$seed-after"
			echo "KCLIENT: fsx $kind: $got"
			echo "KCLIENT: fsx-run $kind $seed $FSX_OPS $secs"
			# from the disk (pNFS) or the server, not the page cache
			sync && echo 3 >/proc/sys/vm/drop_caches
			cmp "$REF/fsx" "$file" ||
				fail "the fsx file ($kind, seed $seed) differs from kcio's model after drop_caches"
			echo "KCLIENT: pnfs-file $path $(stat -c %s "$file") $(md5sum <"$file" | cut -d' ' -f1)"
		done
	done
	umount "$MNT2" || fail "umount $MNT2"
	umount_nfs
	step done
}
if [ "$MODE" = fsx ]; then
	fsx_steps
	exit 0
fi

# --- 1. files, fsync, the large file
step mount
mkdir -p "$MNT" "$REF/tree" || fail "mkdir"
mount_nfs ""
mkdir -p "$NFS" || fail "mkdir $NFS"
if [ "$PNFS" = 1 ]; then
	pnfs_steps
fi
step generate
# the files are slices of 1 MiB of random data
dd if=/dev/urandom of=/tmp/src bs=64k count=16 2>/dev/null || fail "dd from /dev/urandom"
i=0
for d in 0 1 2 3 4 5 6 7 8 9; do
	for s in 0 1 2 3 4 5 6 7 8 9; do
		mkdir -p "$REF/tree/d$d/s$s" || fail "mkdir"
		for f in 0 1 2 3 4 5 6 7 8 9; do
			size=$(((i * 7919) % 20000))
			# a few span several WRITEs, a few are empty
			[ $((i % 97)) = 0 ] && size=$((300000 + i * 100))
			[ $((i % 50)) = 7 ] && size=0
			slice "$REF/tree/d$d/s$s/f$f" $size $(((i * 4099) % (1048576 - size)))
			i=$((i + 1))
		done
	done
done
(
	cd "$REF/tree" &&
		chmod 600 d*/s*/f1 && chmod 755 d*/s*/f2 && chmod 640 d*/s*/f3 &&
		chmod 444 d*/s*/f4 && chmod 000 d0/s0/f9 &&
		chown 1000:1000 d*/s3/f* && chown 65534:65534 d*/s4/f* && chgrp 100 d*/s5/f* &&
		chmod 700 d1/s* && chmod 1777 d2/s2 && chown 1000:100 d3
) || fail "modes and owners in the reference tree"

step copy
mkdir "$NFS/tree" || fail "mkdir $NFS/tree"
# ten copies at once: concurrent calls on the client's one connection
pids=
for d in 0 1 2 3 4 5 6 7 8 9; do
	cp -a "$REF/tree/d$d" "$NFS/tree/" &
	pids="$pids $!"
done
for pid in $pids; do
	wait "$pid" || fail "cp -a"
done

step fsync
both mkdir fsync
i=0
while [ $i -lt 50 ]; do
	slice "$REF/fsync/f$i" $((i * 1000 + 1)) $((i * 20000))
	dd if="$REF/fsync/f$i" of="$NFS/fsync/f$i" bs=4k conv=fsync 2>/dev/null ||
		fail "dd conv=fsync to fsync/f$i"
	i=$((i + 1))
done
both sh -c 'touch -d "$STAMP" fsync/*'

step direct-io
# O_DIRECT bypasses the client's page cache: WRITEs and READs of the
# application's own 64 KiB requests (tmpfs takes no O_DIRECT, so the
# reference copy is written normally)
slice "$REF/direct" 1048576 0
dd if="$REF/direct" of="$NFS/direct" bs=64k oflag=direct 2>/dev/null || fail "dd oflag=direct"
dd if="$NFS/direct" bs=64k iflag=direct 2>/dev/null | cmp - "$REF/direct" ||
	fail "O_DIRECT read differs"
both touch -d "$STAMP" direct

step big-write
dd if=/dev/urandom of="$REF/big" bs=1M count=64 2>/dev/null || fail "dd from /dev/urandom"
BIGSUM=$(md5sum <"$REF/big")
dd if="$REF/big" of="$NFS/big" bs=1M conv=fsync 2>/dev/null || fail "dd conv=fsync to big"
both touch -d "$STAMP" big

if [ "$MODE" = restart ]; then
	restart_server
fi

# --- 2. the namespace and attribute operations
step rename
both mv tree/d0/s0/f0 tree/d0/s0/f0.renamed
both mv tree/d0/s0/f1 tree/d1/s1/from-d0
both mv tree/d0/s0/f2 tree/d0/s0/f3
both mv tree/d9 tree/d9.renamed
both mv tree/d8/s8 tree/d7/s8.moved

step link
both ln tree/d1/s1/f4 tree/d1/s1/f4.link
both ln tree/d1/s1/f4 tree/d2/f4.link
both ln tree/d1/s2/f5 tree/d1/s2/f5.link
both rm tree/d1/s2/f5
[ "$(stat -c %i "$NFS/tree/d1/s1/f4")" = "$(stat -c %i "$NFS/tree/d2/f4.link")" ] ||
	fail "two names of one file have different inode numbers"

step symlink
both ln -s f6 tree/d2/s0/f6.sym
both ln -s ../../d3/s3/f3 tree/d2/s0/rel.sym
both ln -s /no/such/target tree/d2/s0/dangling.sym
both ln -s s1 tree/d2/dir.sym
both sh -c 'ln -s "/$(printf "%01000d" 0)" tree/d2/s0/long.sym'
cmp "$REF/tree/d3/s3/f3" "$NFS/tree/d2/s0/rel.sym" || fail "reading through a symlink"
[ "$(ls "$NFS/tree/d2/dir.sym/" | wc -l)" = 10 ] || fail "listing through a directory symlink"

step mknod
both mkfifo tree/d2/fifo
both mknod tree/d2/null c 1 3
both mknod tree/d2/loop b 7 200

step truncate
both truncate -s 0 tree/d3/s0/f0
both truncate -s 100 tree/d3/s0/f1
both truncate -s 1048577 tree/d3/s0/f2
both truncate -s 5000 tree/d3/s0/f3
both sh -c 'echo appended >>tree/d3/s0/f3'
# a write after a hole, and one in the middle of the data
both dd if=/tmp/src of=tree/d3/s0/f4 bs=1000 count=3 seek=700 conv=notrunc status=none
both dd if=/tmp/src of=tree/d3/s0/f5 bs=100 count=1 seek=3 skip=9 conv=notrunc status=none
# rewritten through an O_TRUNC open
both sh -c 'echo rewritten >tree/d3/s1/f0'
both sh -c 'touch -d "$STAMP" tree/d3/s0/f[0-5] tree/d3/s1/f0'
# 64-bit offsets: a block written 4 GiB and 4 KiB into an empty file
both dd if=/tmp/src of=sparse bs=4096 count=1 seek=1048577 status=none
both touch -d "$STAMP" sparse

step exclusive-create
# noclobber makes the shell open with O_EXCL: CREATE in EXCLUSIVE mode,
# then SETATTR; a second one must fail
both sh -c 'set -C && echo once >tree/d0/excl && ! { echo twice >tree/d0/excl; } 2>/dev/null'
both touch -d "$STAMP" tree/d0/excl

step remove-open
# the client renames a removed file that is still open (.nfsXXXX) and removes
# it at the last close; the data stays readable meanwhile
both sh -c 'exec 3<tree/d4/s5/f6 && rm tree/d4/s5/f6 && cat <&3 >"/tmp/open$(pwd | tr / _)"'
cmp "/tmp/open$(echo "$REF" | tr / _)" "/tmp/open$(echo "$NFS" | tr / _)" ||
	fail "a removed open file read back different"

step chmod
both chmod 0 tree/d4/s0/f0
both chmod 751 tree/d4/s2/f2
both chmod 1777 tree/d4/s1
both chmod 2750 tree/d4/s3

step chown
both chown 1234:5678 tree/d4/s4/f4
both chgrp 42 tree/d4/s4/f5
both chown 1000 tree/d4/s4
both chown -h 77:88 tree/d2/s0/f6.sym

step remove
both rm tree/d5/s5/f5
both rm -r tree/d5/s6
both mkdir tree/d5/empty
both rmdir tree/d5/empty

step mkdir
both mkdir -p deep/a/b/c/d/e/f/g/h
both sh -c 'echo bottom >deep/a/b/c/d/e/f/g/h/file && touch -d "$STAMP" deep/a/b/c/d/e/f/g/h/file'

step wide
both mkdir wide
both sh -c 'seq 600 | sed "s/^/entry-with-a-name-long-enough-to-fill-readdir-replies-/" |
	(cd wide && xargs touch -d "$STAMP")'
both sh -c 'n=$(printf "%0255d" 0) && echo long >wide/$n && touch -d "$STAMP" wide/$n'

step statfs
df -k "$MNT" || fail "df"

if [ "$VERS" != 3 ]; then
	v4_extras
fi

# --- 3. compare through the caches, then from the server
step compare-cached
compare
step remount
umount_nfs
if [ "$VERS" = 3 ]; then
	mount_nfs ",nordirplus"
else
	mount_nfs ""
fi
step compare-remounted
compare
step big-read
[ "$(md5sum <"$NFS/big")" = "$BIGSUM" ] || fail "the 64 MiB file reads back different"
for at in 0 1048576 1048577; do
	[ "$(dd if="$REF/sparse" bs=4096 count=1 skip=$at 2>/dev/null | md5sum)" = \
		"$(dd if="$NFS/sparse" bs=4096 count=1 skip=$at 2>/dev/null | md5sum)" ] ||
		fail "the sparse file reads back different at block $at"
done
if [ "$VERS" != 3 ]; then
	v4_space
fi

# --- 4. removal of many entries, seen after a remount
step remove-tree
both rm -rf tree/d5 tree/d6 tree/d7 wide
umount_nfs
mount_nfs ""
step compare-final
compare
umount_nfs
step done
