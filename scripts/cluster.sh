#!/usr/bin/env bash
# Start (or stop) a local 3-controller corral cluster on 127.0.0.1 for
# benchmarks and manual testing.
#   scripts/cluster.sh start [DIR]   # HTTP on :8081-8083, QUIC on :7081-7083
#   scripts/cluster.sh stop  [DIR]
# stop returns once the controllers have exited (after their stop
# snapshot); start refuses while controllers of DIR still run, and waits
# up to 60 s for a large state to be restored.
# CORRAL_HTTP_BASE and CORRAL_CLUSTER_BASE move the ports (node i listens
# on BASE+i), so two clusters can run side by side (scripts/bench-acl.sh).
# CORRAL_ZK_BASE, when set, serves the ZooKeeper protocol too: node i on
# 127.0.0.1:BASE+i (--zk-addr; scripts/compare.sh zk).
# Certificates: DIR/ca (the CA), DIR/tls-N (controller N), DIR/tls (for
# corral bench).
set -euo pipefail
cmd=${1:-start}
dir=${2:-/tmp/corral-cluster}
bin=${CORRAL_BIN:-$(dirname "$0")/../bin/corral}
http_base=${CORRAL_HTTP_BASE:-8080}
cluster_base=${CORRAL_CLUSTER_BASE:-7080}
peers="1@127.0.0.1:$((cluster_base + 1)),2@127.0.0.1:$((cluster_base + 2)),3@127.0.0.1:$((cluster_base + 3))"

case "$cmd" in
start)
	if pgrep -f -- "--data-dir=$dir/data-" >/dev/null; then
		echo "controllers under $dir are already running; run: $0 stop $dir" >&2
		exit 1
	fi
	mkdir -p "$dir"
	# The CA is made once per DIR and its key stays in $dir/ca: the node
	# dirs get no ca-key.pem, as on real machines.
	[ -f "$dir/ca/ca.pem" ] || "$bin" certs ca --dir "$dir/ca" --cluster local >/dev/null
	# issue ROLE ID OUT: a certificate from this CA, re-issued when OUT is
	# missing or was issued by another CA (a dir left by an older script).
	issue() {
		cmp -s "$dir/ca/ca.pem" "$3/ca.pem" && [ -f "$3/node.pem" ] && return 0
		rm -rf "$3"
		"$bin" certs issue --ca-dir "$dir/ca" --role "$1" --id "$2" --hosts 127.0.0.1,localhost --out "$3" >/dev/null
	}
	# Each controller needs its own: peers accept raft messages from node i
	# only over a certificate that names controller i.
	for i in 1 2 3; do
		issue controller $i "$dir/tls-$i"
	done
	# $dir/tls is for `corral bench workers` and `corral bench schedule`.
	# They speak for many simulated workers at once, which only a controller
	# certificate may do (a worker certificate names one worker). Id 100 is
	# outside the quorum, so the certificate cannot pass for a member: raft
	# drops messages from non-members anyway.
	issue controller 100 "$dir/tls"
	for i in 1 2 3; do
		# CORRAL_FLAGS: extra flags for every controller (e.g. --enable-pprof).
		zk=()
		[ -n "${CORRAL_ZK_BASE:-}" ] && zk=(--zk-addr=127.0.0.1:$((CORRAL_ZK_BASE + i)))
		"$bin" run --role=controller --node-id=$i --data-dir="$dir/data-$i" \
			--cluster-addr=127.0.0.1:$((cluster_base + i)) --http-addr=127.0.0.1:$((http_base + i)) \
			--controllers=$peers --tls-dir="$dir/tls-$i" "${zk[@]}" ${CORRAL_FLAGS:-} >"$dir/node-$i.log" 2>&1 &
		echo $! >"$dir/node-$i.pid"
	done
	# A controller restoring a large state (a few hundred MB) takes seconds
	# before it serves: wait up to 60 s, and stop early if one exited.
	for _ in $(seq 1 600); do
		for i in 1 2 3; do
			kill -0 "$(cat "$dir/node-$i.pid")" 2>/dev/null && continue
			echo "controller $i exited; see $dir/node-$i.log" >&2
			exit 1
		done
		if curl -fsS "http://127.0.0.1:$((http_base + 1))/readyz" >/dev/null 2>&1; then
			echo "cluster up: endpoints http://127.0.0.1:$((http_base + 1)),http://127.0.0.1:$((http_base + 2)),http://127.0.0.1:$((http_base + 3))"
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
	# Wait for them to exit: a stopped controller snapshots its state
	# first (up to 5 s, OPERATIONS.md "Snapshots"), and a start meanwhile
	# finds its data dir locked and its ports taken.
	for _ in $(seq 1 300); do
		pgrep -f -- "--data-dir=$dir/data-" >/dev/null || exit 0
		sleep 0.1
	done
	echo "controllers under $dir still running after 30 s" >&2
	exit 1
	;;
*)
	echo "usage: $0 start|stop [DIR]" >&2
	exit 1
	;;
esac
