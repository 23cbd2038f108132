#!/usr/bin/env bash
# A/B two corral builds on one 3-controller cluster and one data dir, the
# binary switched by a restart before each run, so both builds serve the
# same znode tree (docs/PERFORMANCE.md, "Less garbage per write, again").
# Each run: restart with the run's build, 4 s of warm-up writes, then
# `bin/compare zk` setData for DURATION; it prints the run's ops/s, p50,
# p99, and the leader's collections and allocated bytes per write over the
# run (go_gc_duration_seconds_count, go_memstats_alloc_bytes_total).
#   scripts/ab-restart.sh A_BIN B_BIN [ORDER]   # ORDER default "A B B A A B B A"
# Environment: AB_DIR (the cluster's dir, default /tmp/corral-ab; grow its
# tree first, e.g. with a `bin/compare zk -ops create` run against it),
# AB_CLIENTS (128), AB_DURATION (10s). The cluster listens where
# scripts/cluster.sh puts it (CORRAL_HTTP_BASE is honoured), with
# CORRAL_ZK_BASE=2280. Every run is
# bounded by DURATION; the cluster is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
	echo "usage: $0 A_BIN B_BIN [ORDER]   (e.g. $0 bin/corral-old bin/corral \"A B B A\")" >&2
	exit 1
fi
a_bin=$1 b_bin=$2 order=${3:-"A B B A A B B A"}
dir=${AB_DIR:-/tmp/corral-ab} clients=${AB_CLIENTS:-128} duration=${AB_DURATION:-10s}
for b in "$a_bin" "$b_bin"; do
	[ -x "$b" ] || { echo "$b: not an executable; build it first (go build -o $b .)" >&2; exit 1; }
done
[ -x bin/compare ] || (cd scripts/compare && go build -o ../../bin/compare .)
zk=127.0.0.1:2281,127.0.0.1:2282,127.0.0.1:2283
http_base=${CORRAL_HTTP_BASE:-8080}
stop() { scripts/cluster.sh stop "$dir" >/dev/null 2>&1 || true; }
trap stop EXIT
# metric PORT NAME: the value of an unlabelled metric, as an integer.
metric() { curl -s "127.0.0.1:$1/metrics" | awk -v k="$2" '$1==k{printf "%.0f\n", $2}'; }
for x in $order; do
	case $x in
	A) bin=$a_bin ;;
	B) bin=$b_bin ;;
	*) echo "ORDER holds only A and B, got $x" >&2; exit 1 ;;
	esac
	stop
	CORRAL_BIN=$bin CORRAL_ZK_BASE=2280 scripts/cluster.sh start "$dir" >/dev/null
	bin/compare zk -corral $zk -ops setData -clients "$clients" -duration 4s -rounds 1 -sessions 0 -quiet-idle 0 >/dev/null 2>&1
	port=
	for i in 1 2 3; do
		[ "$(metric $((http_base + i)) corral_raft_is_leader)" = 1 ] && port=$((http_base + i))
	done
	[ -n "$port" ] || { echo "no leader after the warm-up" >&2; exit 1; }
	g0=$(metric $port go_gc_duration_seconds_count) a0=$(metric $port go_memstats_alloc_bytes_total)
	line=$(bin/compare zk -corral $zk -ops setData -clients "$clients" -duration "$duration" -rounds 1 -sessions 0 2>&1 | grep '^round-')
	g1=$(metric $port go_gc_duration_seconds_count) a1=$(metric $port go_memstats_alloc_bytes_total)
	ops=$(sed 's/.* ops=\([0-9]*\) .*/\1/' <<<"$line")
	echo "$x leader=:$port $(awk '{print $7, $8, $10}' <<<"$line") collections=$((g1 - g0)) bytes/write=$(((a1 - a0) / ops))"
done
