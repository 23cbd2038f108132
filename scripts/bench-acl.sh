#!/usr/bin/env bash
# What ACLs cost on the write and read path (issue 18, docs/PERFORMANCE.md
# "ACL cost"). Two 3-controller clusters run side by side on loopback: one
# without ACLs, one bootstrapped, benchmarked with a client token whose
# policy grants kv write on the benchmark's prefix (the realistic case: a
# token lookup and a rule match on every request). Runs alternate between
# the clusters, so drift on the machine hits both alike.
#   scripts/bench-acl.sh [ROUNDS] [DURATION] [CLIENTS]   # defaults 3 10s 16
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
duration=${2:-10s}
clients=${3:-16}
bin=bin/corral
make -s build
off=/tmp/corral-acl-off
on=/tmp/corral-acl-on
stop() {
	scripts/cluster.sh stop "$off" >/dev/null 2>&1 || true
	CORRAL_HTTP_BASE=8090 CORRAL_CLUSTER_BASE=7090 scripts/cluster.sh stop "$on" >/dev/null 2>&1 || true
}
trap stop EXIT
stop
rm -rf "$off" "$on"
scripts/cluster.sh start "$off" >/dev/null
CORRAL_HTTP_BASE=8090 CORRAL_CLUSTER_BASE=7090 scripts/cluster.sh start "$on" >/dev/null
eoff=http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083
eon=http://127.0.0.1:8091,http://127.0.0.1:8092,http://127.0.0.1:8093
root=$("$bin" acl bootstrap --endpoints "$eon" 2>/dev/null)
"$bin" acl policy create --endpoints "$eon" --token "$root" --rule kv:bench/=write bench >/dev/null
tok=$("$bin" acl token create --endpoints "$eon" --token "$root" --name bench --policy bench 2>/dev/null)

# The same topology in both: node 1 leads (a follower forwards writes and
# read indexes to the leader, so who leads changes the figures more than
# ACLs do).
"$bin" controller transfer-leader --endpoints "$eoff" 1 >/dev/null 2>&1 || true
"$bin" controller transfer-leader --endpoints "$eon" --token "$root" 1 >/dev/null 2>&1 || true

# run LABEL ENDPOINTS [TOKEN]: one bench kv, its put and get lines.
run() {
	local label=$1 eps=$2 t=${3:-}
	"$bin" bench kv --endpoints "$eps" ${t:+--token "$t"} --clients "$clients" --duration "$duration" \
		--value-size 256 --keys 1000 2>&1 | awk -v l="$label" '$1 == "put" || $1 == "get" { print l, $0 }'
}
echo "# bench kv, $clients clients, $duration per op, 256-byte values, $rounds rounds alternating"
for r in $(seq 1 "$rounds"); do
	run "acl-off round-$r" "$eoff"
	run "acl-on  round-$r" "$eon" "$tok"
done
