#!/bin/sh
# workload.sh - the NFSv3 workload of the kernel-client test, run by the
# guest's /init (guest-init.sh, which also describes the "KCLIENT:" lines).
#
# usage: workload.sh SERVER PORT
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
#   2. rename (in a directory, across directories, over an existing file,
#      directories across parents), link, symlink (also a 1,001-byte
#      target), mknod (fifo, devices), truncate (shrink, grow), writes after
#      a hole and in the middle, append, a rewrite with O_TRUNC, a block
#      written past 4 GiB, O_EXCL create, chmod, chown and chgrp (also of a
#      symlink), remove (also of an open file), rmdir, a deep mkdir, a
#      directory of 600 long names (several READDIR replies), a 255-byte
#      name, statfs
#   3. compare (cached); umount; mount with nordirplus, so listings use
#      READDIR where the first mount used READDIRPLUS; compare; read the
#      64 MiB file and the sparse one back and check them
#   4. remove a third of the tree; umount; mount; compare; umount
SERVER=$1
PORT=$2
MNT=/mnt/nfs
NFS=$MNT/kclient
REF=/tmp/ref
OPTS=vers=3,proto=tcp,port=$PORT,mountport=$PORT,mountproto=tcp,nolock,retry=0
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
	mount.nfs "$SERVER:/" "$MNT" -o "$OPTS$1" || fail "mount.nfs -o $OPTS$1"
	grep " $MNT nfs " /proc/mounts | grep -q "vers=3," ||
		fail "not an NFSv3 mount: $(grep " $MNT " /proc/mounts)"
}

umount_nfs() {
	umount "$MNT" || fail "umount $MNT"
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

# --- 1. files, fsync, the large file
step generate
mkdir -p "$MNT" "$REF/tree" || fail "mkdir"
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
mount_nfs ""
mkdir "$NFS" "$NFS/tree" || fail "mkdir $NFS/tree"
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

# --- 3. compare through the caches, then from the server
step compare-cached
compare
step remount
umount_nfs
mount_nfs ",nordirplus"
step compare-remounted
compare
step big-read
[ "$(md5sum <"$NFS/big")" = "$BIGSUM" ] || fail "the 64 MiB file reads back different"
for at in 0 1048576 1048577; do
	[ "$(dd if="$REF/sparse" bs=4096 count=1 skip=$at 2>/dev/null | md5sum)" = \
		"$(dd if="$NFS/sparse" bs=4096 count=1 skip=$at 2>/dev/null | md5sum)" ] ||
		fail "the sparse file reads back different at block $at"
done

# --- 4. removal of many entries, seen after a remount
step remove-tree
both rm -rf tree/d5 tree/d6 tree/d7 wide
umount_nfs
mount_nfs ""
step compare-final
compare
umount_nfs
step done
