#!/usr/bin/env bash
# Stop the scheduler and workers started by ./start-cluster.sh DIR
# (workers first, then the scheduler; SIGTERM, then SIGKILL after 30 s).
#
#   ./stop-cluster.sh [DIR]           (DIR default: ./dask-cluster)
set -uo pipefail

dir=${1:-dask-cluster}
[[ -f $dir/pids ]] || { echo "stop-cluster.sh: no $dir/pids: nothing started there" >&2; exit 1; }
mapfile -t pids < <(tac "$dir/pids")
for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
done
rm -f "$dir/pids" "$dir/scheduler.json"
echo "stopped the cluster of $dir"
