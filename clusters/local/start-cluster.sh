#!/usr/bin/env bash
# Start a Dask scheduler and workers on this machine, in the background, and
# wait until every worker has joined. By default one worker with a thread per
# core (numba's threading layer must be thread-safe: TBB or OpenMP; where it is
# not, single-threaded worker processes, as `NTHREADS=1` asks).
#
#   ./start-cluster.sh [DIR]          (DIR default: ./dask-cluster)
#
# Environment (all optional):
#   NTHREADS   threads per worker (default: the number of cores / NWORKERS;
#              1 where numba's threading layer is not thread-safe)
#   NWORKERS   worker processes (default: 1; with NTHREADS: cores / NTHREADS;
#              where numba's threading layer is not thread-safe: the cores, at most 4)
#   HOST       address to listen on (default 127.0.0.1: this machine only;
#              use the machine's address for workers started elsewhere)
#   PORT       scheduler port (default 8786; 0 picks a free one)
#   DASHBOARD  scheduler dashboard address (default :8787; "none" to disable)
#
# Each worker's numba (and OpenMP) runs NTHREADS threads (NUMBA_NUM_THREADS).
# Writes DIR/scheduler.json (for `--scheduler-file`), DIR/scheduler.log,
# DIR/workers.log and DIR/pids, and prints the scheduler address. Stop with
# ./stop-cluster.sh DIR.
set -euo pipefail

dir=${1:-dask-cluster}
cores=$(nproc 2>/dev/null || echo 1)
nworkers=${NWORKERS:-}
nthreads=${NTHREADS:-}
if [[ -z $nthreads ]]; then
    # numba's threading layer: 0 thread-safe (TBB or OpenMP), 3 not, else unknown
    safe=0
    python -c 'import logging, sys
logging.disable(logging.WARNING)
from dscir.engine.cluster import numba_threadsafe
sys.exit(0 if numba_threadsafe() else 3)' 2>/dev/null || safe=$?
    if ((safe)); then
        if ((safe == 3)); then
            why="numba's threading layer is not thread-safe here (no TBB or OpenMP: pip install tbb)"
        else
            why="cannot tell whether numba's threading layer is thread-safe (\`python\` does not import dscir)"
        fi
        echo "start-cluster.sh: $why: single-threaded worker processes" >&2
        nthreads=1 nworkers=${nworkers:-$((cores < 4 ? cores : 4))}
    fi
fi
if [[ -z $nworkers ]]; then
    nworkers=$((nthreads && cores / nthreads > 1 ? cores / nthreads : 1))
fi
nthreads=${nthreads:-$((cores / nworkers > 1 ? cores / nworkers : 1))}
host=${HOST:-127.0.0.1}
port=${PORT:-8786}
dashboard=${DASHBOARD:-:8787}
command -v dask >/dev/null || { echo "start-cluster.sh: no \`dask\` command (pip install dscir)" >&2; exit 1; }
mkdir -p "$dir"
if [[ -e $dir/pids ]]; then
    echo "start-cluster.sh: $dir/pids exists: a cluster may be running (./stop-cluster.sh $dir)" >&2
    exit 1
fi
rm -f "$dir/scheduler.json"

if [[ $dashboard == none ]]; then dash=(--no-dashboard); else dash=(--dashboard-address "$dashboard"); fi
nohup dask scheduler --host "$host" --port "$port" "${dash[@]}" \
    --scheduler-file "$dir/scheduler.json" >"$dir/scheduler.log" 2>&1 &
echo $! >"$dir/pids"

fail() {
    echo "start-cluster.sh: $1; see $dir/scheduler.log and $dir/workers.log" >&2
    "$(dirname "${BASH_SOURCE[0]}")/stop-cluster.sh" "$dir" >/dev/null 2>&1 || true
    exit 1
}
for _ in $(seq 600); do
    [[ -s $dir/scheduler.json ]] && break
    kill -0 "$(head -n1 "$dir/pids")" 2>/dev/null || fail "the scheduler exited"
    sleep 0.1
done
[[ -s $dir/scheduler.json ]] || fail "no scheduler file after 60 s"

NUMBA_NUM_THREADS=$nthreads OMP_NUM_THREADS=$nthreads nohup dask worker \
    --scheduler-file "$dir/scheduler.json" --nworkers "$nworkers" --nthreads "$nthreads" \
    --host "$host" --no-dashboard >"$dir/workers.log" 2>&1 &
echo $! >>"$dir/pids"
for _ in $(seq 1200); do
    joined=$(grep -c "Registered to:" "$dir/workers.log" || true)
    ((joined >= nworkers)) && break
    kill -0 "$(tail -n1 "$dir/pids")" 2>/dev/null || fail "the workers exited"
    sleep 0.1
done
((joined >= nworkers)) || fail "only $joined of $nworkers workers joined after 120 s"
address=$(grep -o '"address": *"[^"]*"' "$dir/scheduler.json" | head -n1 | cut -d'"' -f4)
echo "scheduler $address with $nworkers worker(s) of $nthreads thread(s); scheduler file $dir/scheduler.json"
