#!/usr/bin/env bash
# corral beside etcd and ZooKeeper on this machine, in one run (issue 21,
# docs/PERFORMANCE.md "Against etcd and ZooKeeper"). Starts three
# 3-node clusters on loopback, fsync on in all three:
#   corral    scripts/cluster.sh (HTTP 8081-8083)
#   etcd      Debian's etcd-server, clients on 23791-23793
#   ZooKeeper Debian's zookeeper, clients on 21811-21813
# then runs scripts/compare (one load generator for all three: 256-byte
# overwrites of 1,000 keys) for each client count, the three systems in
# turn, ROUNDS times, so drift on the machine hits all three alike.
# corral runs twice: "corral" through its Go client listing every node
# (a follower's first answer names the leader, and the client's later
# puts go there) over its KV stream (one upgraded connection per client,
# binary frames), "corral-http" the same with one HTTP request per put
# (client.Config.HTTPOnly). (bin/compare -system corral-pinned holds each
# client to one node, as etcd's and ZooKeeper's clients are here.)
#   scripts/compare.sh [ROUNDS] [DURATION] [CLIENT COUNTS]   # defaults: 3 10s "1 16 128"
#
# With "failover" it measures instead the longest gap between acknowledged
# writes after kill -9 of each system's leader (issue 16, item 6;
# docs/PERFORMANCE.md "Failover"): per trial and per system in turn, 8
# writers (each client listing every node, 250 ms per operation), the
# leader killed after 3 s, 5 s more of writes, the node restarted with its
# own command line and the cluster healthy again before the next trial.
#   scripts/compare.sh failover [--trials N]   # default: 10 trials
#
# With "zk" it puts corral's ZooKeeper port (--zk-addr, 127.0.0.1:2281-2283)
# beside ZooKeeper, both through go-zookeeper (issue 20, item 5;
# docs/PERFORMANCE.md "ZooKeeper protocol: corral's --zk-addr beside
# ZooKeeper 3.8"), etcd not started: create/setData/getData throughput and
# latency, the systems in turn per round; then SESSIONS sessions with an
# ephemeral znode each, pinging at a third of a 30 s timeout (ping round
# trips, RSS and CPU of the nodes, expiry of 100 sessions whose sockets are
# closed without closeSession).
#   scripts/compare.sh zk [--rounds N] [--duration D] [--clients "1 16 128"] [--sessions 10000]
#                         [--ops "create setData getData"]   # which ops, in this order
#
# With "restart" it loads each system with KEYS distinct keys of 256 bytes
# (64 writers; corral PUT, etcd Put, ZooKeeper create of KEYS znodes under
# /restart), reports the load rate and each node's RSS before and after it
# (bytes per key: the growth averaged over the 3 nodes), then per trial and
# per system in turn stops all 3 nodes (SIGTERM, waiting for them to exit;
# kill -9 with --kill), starts them again with their own argv, working
# directory and environment, and times from that start to the first
# linearizable read and to the first write (issue 21, items 3 and 4;
# docs/PERFORMANCE.md "A million keys"). ZooKeeper gets a 3 GiB heap here
# (COMPARE_ZK_HEAP) instead of 512 MiB: by our estimate a million znodes of
# 256 bytes take 0.6-1 GiB of heap, and a heap that small would fail the
# load rather than measure it. Its RSS follows the JVM's heap sizing.
# With --snapshot-windows N, after the trials, 16 writers write to random
# loaded keys of corral in N windows of 3 s, and the windows a snapshot may
# have overlapped are marked (issue 21, item 5: their p99 under 100 ms).
#   scripts/compare.sh restart [--keys N] [--trials T] [--kill] [--snapshot-windows N]   # defaults: 1000000 keys, 3 trials, 0
#
# With "goals" it runs the throughput comparison (the defaults), then the
# restart with 100,000 and with 1,000,000 keys (2 trials each; 30
# snapshot windows at a million), and prints issue 21's goals with the
# rounds, trials and windows that met them (bin/compare goals; about 35
# minutes). Outputs stay in COMPARE_DIR (default
# /tmp/corral-compare-goals).
#   scripts/compare.sh goals
#
# Before each measured run (throughput, zk) and each restart trial the
# driver waits up to 30 s (restart: 60 s, after a sync) for a second in
# which the CPUs were 80 % idle, and prints how idle that second was
# ("before: 93% idle after 2.0s"): what one system left running after its
# turn (a snapshot, a collection, write-back) is not charged to the next.
# Needs: apt-get install etcd-server zookeeper (Java comes with it).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
	echo "usage: $0 [ROUNDS] [DURATION] [CLIENT COUNTS]" >&2
	echo "       $0 failover [--trials N]" >&2
	echo "       $0 zk [--rounds N] [--duration D] [--clients \"1 16 128\"] [--sessions N] [--ops \"create setData getData\"]" >&2
	echo "       $0 restart [--keys N] [--trials T] [--kill] [--snapshot-windows N]" >&2
	echo "       $0 goals" >&2
	exit 1
}
mode=throughput
if [ "${1:-}" = goals ]; then
	[ $# -eq 1 ] || usage
	g=${COMPARE_DIR:-/tmp/corral-compare-goals}
	rm -rf "$g"
	mkdir -p "$g"
	# Each part starts its own clusters in a directory of its own and
	# stops them before the next; the outputs stay beside them.
	COMPARE_DIR="$g/throughput" scripts/compare.sh | tee "$g/throughput.log"
	COMPARE_DIR="$g/restart-100k" scripts/compare.sh restart --keys 100000 --trials 2
	COMPARE_DIR="$g/restart-1m" scripts/compare.sh restart --keys 1000000 --trials 2 --snapshot-windows 30
	echo
	echo "# issue 21's goals in this run, $(date -u +%FT%TZ), corral built from $(sort -u "$g"/*/corral.rev | paste -sd, -):"
	bin/compare goals -throughput "$g/throughput.log" -restart "$g/restart-100k/restart.json" -restart "$g/restart-1m/restart.json"
	exit 0
fi
if [ "${1:-}" = failover ]; then
	mode=failover
	shift
	trials=10
	while [ $# -gt 0 ]; do
		case "$1" in
		--trials) [ $# -ge 2 ] || usage; trials=$2; shift 2 ;;
		--trials=*) trials=${1#--trials=}; shift ;;
		*) usage ;;
		esac
	done
	[[ "$trials" =~ ^[0-9]+$ ]] && [ "$trials" -ge 1 ] && [ "$trials" -le 100 ] || { echo "--trials: want 1-100, got $trials" >&2; exit 1; }
fi
if [ "${1:-}" = restart ]; then
	mode=restart
	shift
	keys=1000000 trials=3 signal=TERM windows=0
	while [ $# -gt 0 ]; do
		case "$1" in
		--keys) [ $# -ge 2 ] || usage; keys=$2; shift 2 ;;
		--keys=*) keys=${1#--keys=}; shift ;;
		--trials) [ $# -ge 2 ] || usage; trials=$2; shift 2 ;;
		--trials=*) trials=${1#--trials=}; shift ;;
		--kill) signal=KILL; shift ;;
		--snapshot-windows) [ $# -ge 2 ] || usage; windows=$2; shift 2 ;;
		*) usage ;;
		esac
	done
	[[ "$keys" =~ ^[0-9]+$ ]] && [ "$keys" -ge 1 ] && [ "$keys" -le 10000000 ] || { echo "--keys: want 1-10000000, got $keys" >&2; exit 1; }
	[[ "$trials" =~ ^[0-9]+$ ]] && [ "$trials" -ge 1 ] && [ "$trials" -le 100 ] || { echo "--trials: want 1-100, got $trials" >&2; exit 1; }
	[[ "$windows" =~ ^[0-9]+$ ]] && [ "$windows" -le 1000 ] || { echo "--snapshot-windows: want 0-1000, got $windows" >&2; exit 1; }
fi
rounds=${1:-3}
duration=${2:-10s}
counts=${3:-1 16 128}
if [ "${1:-}" = zk ]; then
	mode=zk
	shift
	rounds=3 duration=10s counts="1 16 128" sessions=10000 ops="create setData getData"
	while [ $# -gt 0 ]; do
		[ $# -ge 2 ] || usage
		case "$1" in
		--rounds) rounds=$2 ;;
		--duration) duration=$2 ;;
		--clients) counts=$2 ;;
		--sessions) sessions=$2 ;;
		--ops) ops=$2 ;;
		*) usage ;;
		esac
		shift 2
	done
	[[ "$rounds" =~ ^[0-9]+$ ]] && [[ "$sessions" =~ ^[0-9]+$ ]] || usage
fi
base=${COMPARE_DIR:-/tmp/corral-compare}
[ "$mode" = zk ] || command -v etcd >/dev/null || { echo "etcd not found: apt-get install etcd-server" >&2; exit 1; }
[ -f /usr/share/java/zookeeper.jar ] || { echo "ZooKeeper not found: apt-get install zookeeper" >&2; exit 1; }
command -v java >/dev/null || { echo "java not found: apt-get install zookeeper (it pulls Java in)" >&2; exit 1; }

make -s build
(cd scripts/compare && go build -o ../../bin/compare .)
# The commit the binary was built from, marked when the tree differed
# outside docs/: a goals run rebuilds for each part, so each records its own.
rev=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- . ':!docs' || rev="$rev-modified"

pids=()
stop() {
	local all=("${pids[@]}")
	# Nodes the failover and restart modes restarted (their pids are new):
	# only those still running a command line under $base.
	if [ -f "$base/restarted.pids" ]; then
		while read -r p; do
			grep -qaF -- "$base" "/proc/$p/cmdline" 2>/dev/null && all+=("$p")
		done <"$base/restarted.pids"
	fi
	for p in "${all[@]}"; do kill "$p" 2>/dev/null || true; done
	scripts/cluster.sh stop "$base/corral" >/dev/null 2>&1 || true
	wait 2>/dev/null || true
	# Disowned and restarted nodes are not this shell's to wait for.
	for _ in $(seq 1 100); do
		local left=0
		for p in "${all[@]}"; do [ -e "/proc/$p" ] && left=1; done
		[ "$left" -eq 0 ] && break
		sleep 0.1
	done
}
trap stop EXIT
rm -rf "$base"
mkdir -p "$base"
echo "$rev" > "$base/corral.rev"

if [ "$mode" = zk ]; then
	CORRAL_ZK_BASE=2280 scripts/cluster.sh start "$base/corral" >/dev/null
else
	scripts/cluster.sh start "$base/corral" >/dev/null
fi
ecorral=http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083

cluster=""
for i in 1 2 3; do cluster+="${cluster:+,}e$i=http://127.0.0.1:2380$i"; done
for i in 1 2 3; do
	[ "$mode" = zk ] && break
	etcd --name "e$i" --data-dir "$base/etcd-$i" \
		--listen-client-urls "http://127.0.0.1:2379$i" --advertise-client-urls "http://127.0.0.1:2379$i" \
		--listen-peer-urls "http://127.0.0.1:2380$i" --initial-advertise-peer-urls "http://127.0.0.1:2380$i" \
		--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token compare \
		>"$base/etcd-$i.log" 2>&1 &
	pids+=($!)
done
eetcd=127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793

zk_heap=${COMPARE_ZK_HEAP:-512m}
[ "$mode" = restart ] && zk_heap=${COMPARE_ZK_HEAP:-3g}
for i in 1 2 3; do
	mkdir -p "$base/zk-$i"
	echo "$i" >"$base/zk-$i/myid"
	cat >"$base/zk-$i.cfg" <<EOF
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$base/zk-$i
clientPort=2181$i
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok
$([ "$mode" = zk ] && echo "maxClientCnxns=0")
server.1=127.0.0.1:28881:38881
server.2=127.0.0.1:28882:38882
server.3=127.0.0.1:28883:38883
EOF
	java -Dzookeeper.log.dir="$base" "-Xmx$zk_heap" -cp /usr/share/java/zookeeper.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$base/zk-$i.cfg" >"$base/zk-$i.log" 2>&1 &
	pids+=($!)
done
ezk=127.0.0.1:21811,127.0.0.1:21812,127.0.0.1:21813

# Wait for each to serve: etcd's health, ZooKeeper's srvr naming a mode.
for _ in $(seq 1 300); do
	ok=0
	if [ "$mode" = zk ]; then
		ok=$((ok + 1))
	else
		etcdctl --endpoints "$eetcd" endpoint health >/dev/null 2>&1 && ok=$((ok + 1))
	fi
	for i in 1 2 3; do
		{ exec 3<>"/dev/tcp/127.0.0.1/2181$i"; } 2>/dev/null || continue
		printf srvr >&3
		grep -q "Mode: " <&3 && ok=$((ok + 1))
		exec 3<&- 3>&-
	done
	[ "$ok" -eq 4 ] && break
	sleep 0.2
done
[ "$ok" -eq 4 ] || { echo "etcd or ZooKeeper did not start; see $base/*.log" >&2; exit 1; }

if [ "$mode" = zk ]; then
	echo "# $(date -u +%FT%TZ) $(nproc) cores; ZooKeeper $(dpkg-query -W -f '${Version}' zookeeper) (forceSync on), corral $rev (--zk-addr, fsync on)"
	bin/compare zk -corral 127.0.0.1:2281,127.0.0.1:2282,127.0.0.1:2283 -zk "$ezk" \
		-rounds "$rounds" -duration "$duration" -clients "$counts" -sessions "$sessions" -ops "$ops" -json "$base/zk.json"
	echo "# every run as JSON: $base/zk.json"
	exit 0
fi
echo "# $(date -u +%FT%TZ) $(nproc) cores; etcd $(etcd --version | head -1 | awk '{print $3}'), ZooKeeper $(dpkg-query -W -f '${Version}' zookeeper), corral $rev"
if [ "$mode" = failover ]; then
	# The nodes it kills are this shell's children: without disown, bash
	# reports each one "Killed" in the middle of the output.
	disown -a
	echo "# uptime at start: $(uptime)"
	bin/compare failover -trials "$trials" -corral "$ecorral" -etcd "$eetcd" -zk "$ezk" \
		-pid-file "$base/restarted.pids" -json "$base/failover.json"
	echo "# uptime at end: $(uptime)"
	echo "# every trial as JSON: $base/failover.json"
	exit 0
fi
if [ "$mode" = restart ]; then
	# As in failover: the nodes it stops are this shell's children, and
	# bash would report each one "Terminated" in the middle of the output.
	disown -a
	echo "# uptime at start: $(uptime); ZooKeeper heap -Xmx$zk_heap"
	bin/compare restart -keys "$keys" -trials "$trials" -signal "$signal" -snapshot-windows "$windows" -corral "$ecorral" -etcd "$eetcd" -zk "$ezk" \
		-pid-file "$base/restarted.pids" -json "$base/restart.json"
	echo "# uptime at end: $(uptime)"
	echo "# every result as JSON: $base/restart.json"
	exit 0
fi
# The servers' pids, for the CPU each system's three nodes spend per write.
pcorral=$(cat "$base"/corral/node-{1,2,3}.pid | paste -sd,)
petcd=$(IFS=,; echo "${pids[*]:0:3}")
pzk=$(IFS=,; echo "${pids[*]:3:3}")
echo "# 256-byte overwrites of 1,000 keys, $duration per run, $rounds rounds, systems in turn"
echo "# cpu/op: CPU time per acknowledged write, of the system's 3 servers together and of the load generator"
for r in $(seq 1 "$rounds"); do
	for c in $counts; do
		bin/compare -system corral -endpoints "$ecorral" -cpu-pids "$pcorral" -clients "$c" -duration "$duration" | sed "s/^/round-$r /"
		bin/compare -system corral-http -endpoints "$ecorral" -cpu-pids "$pcorral" -clients "$c" -duration "$duration" | sed "s/^/round-$r /"
		bin/compare -system etcd -endpoints "$eetcd" -cpu-pids "$petcd" -clients "$c" -duration "$duration" | sed "s/^/round-$r /"
		bin/compare -system zk -endpoints "$ezk" -cpu-pids "$pzk" -clients "$c" -duration "$duration" | sed "s/^/round-$r /"
	done
done
