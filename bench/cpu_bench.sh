#!/usr/bin/env bash
# Overcooked on the CPU backend beside overcooked_ai on one core, in one run,
# and the section "Overcooked (CPU)" of docs/benchmarks.md written from it.
# The machine is often shared, so it first waits (up to WAIT seconds) for the
# 1-minute load average to fall under MAX_LOAD, and keeps the best of 3 runs of
# every point, Orrery's and the peer's alike.
#
# Usage: bench/cpu_bench.sh [orrery-binary | build-dir]   (default: newest build/*/tools/orrery)
#   A build dir is rebuilt first (target orrery_cli), so the binary matches the tree.
#   WAIT=900 MAX_LOAD=1.0 DOC=docs/benchmarks.md (DOC= to leave the docs alone)
# Needs bench/.peers/overcooked_ai (bench/fetch_peers.sh), numpy and matplotlib.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
wait_s="${WAIT:-900}"
max_load="${MAX_LOAD:-1.0}"
doc="${DOC-docs/benchmarks.md}"
bin_args=()
if [ $# -ge 1 ] && [ -d "$1" ]; then
  cmake --build "$1" --target orrery_cli >&2 || exit 1
  bin_args=(--bin "$1/tools/orrery")
elif [ $# -ge 1 ]; then
  bin_args=(--bin "$1")
fi

start=$(date +%s)
while :; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  if python3 -c "import sys; sys.exit(0 if float('$load') < float('$max_load') else 1)"; then break; fi
  if [ $(( $(date +%s) - start )) -ge "$wait_s" ]; then
    echo "cpu_bench: load still $load after ${wait_s}s; measuring anyway (best of 3 per point)" >&2
    break
  fi
  sleep 10
done

echo "== host memory bandwidth" >&2
bw="$(python3 bench/cpu_bandwidth.py --mib 256 --runs 5 2>&1)" || true
echo "$bw" >&2
note="Host bandwidth at the start (bench/cpu_bandwidth.py, best of 5, read + write counted for copy):

$(echo "$bw" | sed 's/^/    /')"

doc_args=()
[ -n "$doc" ] && doc_args=(--doc "$doc" --section "Overcooked (CPU)" --note "$note")
ORRERY_BENCH_COMMAND="bench/cpu_bench.sh $*" python3 bench/run.py "${bin_args[@]}" --devices cpu --threads 1,2 --repeat 3 --pick best \
  --cases overcooked:cramped_room overcooked:counter_circuit_o_1order --peers overcooked_ai \
  --peer-seconds 3 --name cpu_bench --target cpu:cramped_room=2e6 --target cpu:counter_circuit_o_1order=2e6 \
  "${doc_args[@]}"
