#!/bin/sh
# run-rpc-null.sh - NULL calls per second, jnfsd against NFS-Ganesha.
#
# Runs build/bench/rpc-null against jnfsd and against Ganesha's NFSv4 NULL
# procedure (100003 v4), both on loopback ports of this machine, for each
# connection count, and prints both figures and their ratio. Installs
# nfs-ganesha and nfs-ganesha-vfs if they are missing (Debian packages; as
# root). Not part of the test suite. Stops both servers by PID.
#
# Each figure is the best of ROUNDS runs (default 3), the two servers
# taking turns, so that a burst of load from something else on the machine
# does not decide the comparison.
#
# usage: bench/run-rpc-null.sh [SECONDS] [CONNS...]   (default: 5 s; 1 4 16)
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-5}
[ $# -gt 0 ] && shift
CONNS=${*:-1 4 16}
JPORT=${JPORT:-20491}
GPORT=${GPORT:-20492}
THREADS=${THREADS:-8}
ROUNDS=${ROUNDS:-3}

for p in nfs-ganesha nfs-ganesha-vfs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		echo "installing $p"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
	fi
done
make -s build >/dev/null

TMP=$(mktemp -d)
JPID=
GPID=
cleanup() {
	[ -n "$JPID" ] && kill "$JPID" 2>/dev/null || true
	[ -n "$GPID" ] && kill "$GPID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

wait_port() {
	for _ in $(seq 200); do
		if ./build/bench/rpc-null --conns 1 --seconds 0.01 --port "$1" --vers 4 \
			>/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	echo "server on port $1 did not answer" >&2
	exit 1
}

measure() { # port conns
	./build/bench/rpc-null --conns "$2" --seconds "$SECS" --port "$1" --vers 4 |
		sed -n 's/^rpc_null.calls_per_sec //p'
}

./build/jnfsd --listen "127.0.0.1:$JPORT" --threads "$THREADS" --rpcbind off \
	>"$TMP/jnfsd.out" 2>"$TMP/jnfsd.err" &
JPID=$!
wait_port "$JPORT"

mkdir -p "$TMP/export"
cat >"$TMP/ganesha.conf" <<CONF
NFS_CORE_PARAM {
	NFS_Port = $GPORT;
	Bind_addr = 127.0.0.1;
	NFS_Protocols = 4;
	Enable_NLM = false;
	Enable_RQUOTA = false;
	Enable_UDP = false;
}
NFSV4 { Graceless = true; }
LOG { Default_Log_Level = WARN; }
EXPORT {
	Export_Id = 1;
	Path = $TMP/export;
	Pseudo = /export;
	Access_Type = RW;
	Squash = No_Root_Squash;
	FSAL { Name = VFS; }
}
CONF
ganesha.nfsd -F -f "$TMP/ganesha.conf" -L "$TMP/ganesha.log" -p "$TMP/ganesha.pid" \
	-N NIV_WARN &
GPID=$!
wait_port "$GPORT"

best() { # a b
	awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'
}

echo "NULL calls per second, NFSv4 (100003 v4), best of $ROUNDS runs of ${SECS} s," \
	"jnfsd --threads $THREADS"
echo "conns,jnfsd,ganesha,ratio"
for c in $CONNS; do
	j=0
	g=0
	for _ in $(seq "$ROUNDS"); do
		j=$(best "$j" "$(measure "$JPORT" "$c")")
		g=$(best "$g" "$(measure "$GPORT" "$c")")
	done
	r=$(awk -v j="$j" -v g="$g" 'BEGIN { printf "%.2f", (g > 0 ? j / g : 0) }')
	echo "$c,$j,$g,$r"
done
