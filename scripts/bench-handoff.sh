#!/usr/bin/env bash
# What a restarted leader costs the workers (issue 16, docs/PERFORMANCE.md
# "A restarted leader hands over"). Starts 3 controllers and N simulated
# workers, lets every worker open its standbys, then kills the leader with
# SIGKILL, restarts it with its own command line and, once another
# controller leads, moves the leadership to the restarted one (as when it
# wins the next election itself). That controller holds no worker's
# standby; with the hand-off it passes the leadership straight on. The
# bench's report says how many workers were fenced.
#   scripts/bench-handoff.sh [WORKERS]          # default 2000
#   CORRAL_BIN=/path/to/corral scripts/bench-handoff.sh   # another build
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${1:-2000}
if [ -z "${CORRAL_BIN:-}" ]; then
	make -s build
	export CORRAL_BIN=$PWD/bin/corral
fi
bin=$CORRAL_BIN
dir=/tmp/corral-handoff
export CORRAL_HTTP_BASE=${CORRAL_HTTP_BASE:-18180} CORRAL_CLUSTER_BASE=${CORRAL_CLUSTER_BASE:-17180}
hb=$CORRAL_HTTP_BASE cb=$CORRAL_CLUSTER_BASE
stop() { scripts/cluster.sh stop "$dir" >/dev/null 2>&1 || true; pkill -f -- "--data-dir=$dir/" || true; }
trap stop EXIT
stop
rm -rf "$dir"
scripts/cluster.sh start "$dir" >/dev/null
endpoints=http://127.0.0.1:$((hb + 1)),http://127.0.0.1:$((hb + 2)),http://127.0.0.1:$((hb + 3))
leader() { # the leader's id as some controller sees it, or nothing
	for i in 1 2 3; do
		curl -s -m 2 "http://127.0.0.1:$((hb + i))/v1/cluster" |
			python3 -c 'import sys,json; print(json.load(sys.stdin)["leader_id"] or "")' 2>/dev/null && return
	done
}
for _ in $(seq 100); do [ -n "$(leader)" ] && break; sleep 0.1; done
"$bin" bench workers --endpoints "$endpoints" \
	--controllers 127.0.0.1:$((cb + 1)),127.0.0.1:$((cb + 2)),127.0.0.1:$((cb + 3)) --tls-dir "$dir/tls" \
	--workers "$workers" --duration 100s &
bench=$!
# The ramp (10 ms per worker) and up to a session timeout for every standby.
sleep $((workers / 100 + 25))
old=$(leader)
pid=$(cat "$dir/node-$old.pid")
mapfile -d '' argv <"/proc/$pid/cmdline"
cwd=$(readlink "/proc/$pid/cwd")
kill -9 "$pid"
echo "killed leader $old (pid $pid) at $(date +%T.%N)"
while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
(cd "$cwd" && exec "${argv[@]}" >>"$dir/node-$old.restart.log" 2>&1) &
new=
for _ in $(seq 200); do
	new=$(leader)
	[ -n "$new" ] && [ "$new" != "$old" ] && break
	sleep 0.05
done
echo "controller $new leads at $(date +%T.%N)"
for _ in $(seq 200); do curl -s -m 1 -o /dev/null "http://127.0.0.1:$((hb + old))/v1/cluster" && break; sleep 0.05; done
# The call waits for the restarted controller to lead; with the hand-off it
# may never see it (it hands on within milliseconds) and time out.
curl -s -m 5 -X POST -H 'X-Corral-Client: 1' "http://127.0.0.1:$((hb + new))/v1/controllers/$old/transfer-leader" || true
echo
echo "leadership moved to the restarted controller $old at $(date +%T.%N)"
sleep 3
echo "leader now: $(leader)"
curl -s "http://127.0.0.1:$((hb + old))/metrics" | grep '^corral_controller_leadership_handoffs_total' || true
wait "$bench" || true
