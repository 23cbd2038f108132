#!/usr/bin/env bash
# Start (or stop) a local 3-controller corral cluster on 127.0.0.1 for
# benchmarks and manual testing.
#   scripts/cluster.sh start [DIR]   # HTTP on :8081-8083, QUIC on :7081-7083
#   scripts/cluster.sh stop  [DIR]
set -euo pipefail
cmd=${1:-start}
dir=${2:-/tmp/corral-cluster}
bin=${CORRAL_BIN:-$(dirname "$0")/../bin/corral}
peers="1@127.0.0.1:7081,2@127.0.0.1:7082,3@127.0.0.1:7083"

case "$cmd" in
start)
	mkdir -p "$dir"
	[ -f "$dir/tls/ca.pem" ] || "$bin" certs create --dir "$dir/tls" --hosts 127.0.0.1,localhost
	for i in 1 2 3; do
		# CORRAL_FLAGS: extra flags for every controller (e.g. --enable-pprof).
		"$bin" run --role=controller --node-id=$i --data-dir="$dir/data-$i" \
			--cluster-addr=127.0.0.1:708$i --http-addr=127.0.0.1:808$i \
			--controllers=$peers --tls-dir="$dir/tls" ${CORRAL_FLAGS:-} >"$dir/node-$i.log" 2>&1 &
		echo $! >"$dir/node-$i.pid"
	done
	for _ in $(seq 1 100); do
		if curl -fsS http://127.0.0.1:8081/readyz >/dev/null 2>&1; then
			echo "cluster up: endpoints http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083"
			exit 0
		fi
		sleep 0.1
	done
	echo "cluster did not become ready; see $dir/node-*.log" >&2
	exit 1
	;;
stop)
	for f in "$dir"/node-*.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
		rm -f "$f"
	done
	# Controllers restarted by someone else (corral bench workers
	# --kill-leader-every restarts the leaders it kills) have other pids:
	# find them by their data dir.
	pkill -f -- "--data-dir=$dir/data-" 2>/dev/null || true
	;;
*)
	echo "usage: $0 start|stop [DIR]" >&2
	exit 1
	;;
esac
