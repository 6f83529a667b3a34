#!/usr/bin/env bash
# A/B timing of orrery_cuda_bench across source trees in one GPU session, so
# each change in docs/perf-notes.md is measured against its parent on the same
# machine, clocks and driver. Each tree is built on its own, then the benches
# run round-robin, REPEAT times, and the table lists every run.
#
# Usage (on the GPU machine): bench/gpu_ab.sh LABEL=DIR [LABEL=DIR ...]
#   make a tree here with:  git archive COMMIT | tar -x -C .ab/COMMIT
#   (.ab/ is git-ignored; name it and .gpu_deps in the device run's carry list)
#   AB_ENVS     "env[:layout] ..."  (default: overcooked:cramped_room overcooked:counter_circuit_o_1order tag)
#   AB_WORLDS   world counts        (default: 1024,16384,1048576)
#   REPEAT      rounds              (default: 2)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
envs=${AB_ENVS:-"overcooked:cramped_room overcooked:counter_circuit_o_1order tag"}
worlds=${AB_WORLDS:-1024,16384,1048576}
prefix=""
[ -d "$root/.gpu_deps/prefix" ] && prefix="$root/.gpu_deps/prefix"
labels=() bins=()
for spec in "$@"; do
  label=${spec%%=*} dir=$(cd "${spec#*=}" && pwd)
  build=/tmp/orrery_ab_$label
  t0=$(date +%s)
  if cmake -S "$dir" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DORRERY_BUILD_PYTHON=OFF \
       -DORRERY_BUILD_TESTS=OFF "-DCMAKE_PREFIX_PATH=$prefix" >"$build.log" 2>&1 &&
     cmake --build "$build" --target orrery_cuda_bench >>"$build.log" 2>&1; then
    # Trees from before the programs left the library folders build it in engine/cuda/.
    bin="$build/bench/orrery_cuda_bench"
    [ -f "$dir/bench/cuda_bench.cpp" ] || bin="$build/engine/cuda/orrery_cuda_bench"
    echo "built $label from $dir ($(( $(date +%s) - t0 ))s)"
    labels+=("$label") bins+=("$bin")
  else
    echo "build of $label FAILED:"; tail -20 "$build.log"
  fi
done
printf "%-6s %-12s %-26s %9s %6s %10s %10s %14s\n" round tree env worlds block queued_us graph_us env-steps/s
for round in $(seq 1 "${REPEAT:-2}"); do
  for e in $envs; do
    env=${e%%:*} layout=""
    [[ $e == *:* ]] && layout="--layout ${e#*:}"
    for i in "${!labels[@]}"; do
      # Each tree compiles its own kernel source; separate caches keep the runs apart.
      ORRERY_CACHE_DIR=/tmp/orrery_ab_cache_${labels[$i]} "${bins[$i]}" --env "$env" $layout --worlds "$worlds" \
          --steps "${AB_STEPS:-2000}" --only staged 2>/dev/null | tail -n +3 |
        while read -r name kernels n block queued synced graph rate; do
          printf "%-6s %-12s %-26s %9s %6s %10s %10s %14s\n" "$round" "${labels[$i]}" "$name" "$n" "$block" "$queued" \
              "$graph" "$rate"
        done
    done
  done
done
