#!/bin/sh
# run-kclient-fsx.sh - fsx through the Linux kernel's pNFS block layout
# client against fsx through its plain NFSv4.2 client, in one QEMU session
# (docs/kclient.md says what the ratio shows and what it was).
#
# tests/kclient/kclient.sh --mode fsx boots the guest with jnfsd's image as
# its disk and blkmapd running, mounts the export `/plain` (no pnfs) and the
# export `/` (pnfs), and per seed runs `kcio fsx` (tests/kclient/kcio.c:
# read, write, mapread, mapwrite, truncate, fallocate, punch, copy within the
# file, every read verified against a model) first through the plain mount,
# then through the pNFS one; each run timed on the guest, its file compared
# with the model after drop_caches and read back through jnfsd by the host.
# Printed per run: the seconds, the operations, and what the server counted
# meanwhile: CB_LAYOUTRECALLs sent, requests parked for the caller's own
# layout (own_waits) and for another's (other_waits), compounds answered
# NFS4ERR_DELAY (delays; after a parked wait: delays_after_wait is in the
# log), engine breaks answered busy (fs_delays), LAYOUTGETs; and per seed
# the ratio pNFS/plain. The guest has one vCPU under TCG: its times follow
# the host's load, printed with them.
#
# usage: bench/run-kclient-fsx.sh [OPS [SEEDS]]   (default 20000 "1 2")
# environment: VERS (4.2), WORK (build/kclient-fsx), OUT (build/bench-results)
# Needs root (a network namespace); not part of `make bench` (QEMU takes
# about 15-20 minutes for the default). Results in $OUT: kclient-fsx.csv,
# kclient-fsx.txt (as printed), kclient-fsx.log (kclient.sh's output).
set -eu
cd "$(dirname "$0")/.."
OPS=${1:-20000}
SEEDS=${2:-1 2}
VERS=${VERS:-4.2}
WORK=${WORK:-build/kclient-fsx}
OUT=${OUT:-build/bench-results}

make -s build >/dev/null
mkdir -p "$OUT"
LOG=$OUT/kclient-fsx.log
load0=$(cut -d' ' -f1-3 /proc/loadavg)
status=0
sh tests/kclient/kclient.sh --vers "$VERS" --mode fsx --fsx-ops "$OPS" --fsx-seeds "$SEEDS" \
	build/jnfsd build/jnfs "$WORK" >"$LOG" 2>&1 || status=$?
load1=$(cut -d' ' -f1-3 /proc/loadavg)
if [ "$status" != 0 ]; then
	tail -30 "$LOG" >&2
	echo "run-kclient-fsx: kclient.sh failed (status $status); its output is in $LOG" >&2
	exit 1
fi
# "fsx-run vers=V kind=K seed=S ops=N seconds=T name=value ..." -> CSV
sed -n 's/^fsx-run //p' "$LOG" | awk '
	{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		key = v["seed"]
		if (v["kind"] == "plain") plain[key] = v["seconds"]; else pnfs[key] = v["seconds"]
		row[++n] = v["vers"] "," v["kind"] "," v["seed"] "," v["ops"] "," v["seconds"] "," \
			v["recalls"] "," v["own_waits"] "," v["other_waits"] "," v["delays"] "," \
			v["fs_delays"] "," v["layoutgets"]
		kind[n] = v["kind"]; seed[n] = key
	}
	END {
		print "vers,kind,seed,ops,seconds,recalls,own_waits,other_waits,delays,fs_delays,layoutgets,ratio_pnfs_plain"
		for (i = 1; i <= n; i++) {
			r = ""
			if (kind[i] == "pnfs" && plain[seed[i]] > 0)
				r = sprintf("%.2f", pnfs[seed[i]] / plain[seed[i]])
			print row[i] "," r
		}
	}' >"$OUT/kclient-fsx.csv"
{
	echo "fsx through the Linux client in QEMU (TCG, one vCPU), NFSv$VERS, $OPS operations a run"
	echo "host load average before: $load0; after: $load1"
	column -s, -t <"$OUT/kclient-fsx.csv"
} | tee "$OUT/kclient-fsx.txt"
