#!/usr/bin/env bash
# Tuning sweep of the CUDA megakernel on a GPU machine: µs per step and
# env-steps/s for the staged and direct megakernels across batch sizes, then
# the staged kernel's shared-memory blocks per SM, on tag and two Overcooked
# kitchens. Actions are drawn inside each step on the device. Prints one table
# (orrery_cuda_bench's columns); docs/perf-notes.md records what it showed.
#
# Usage: bench/gpu_sweep.sh [path/to/orrery_cuda_bench]   (default: $BUILD/bench/orrery_cuda_bench)
#   WORLDS=1024,16384,262144,1048576   STEPS=1000   BLOCKS="1 2 3"   BLOCKS_WORLDS=1048576
set -uo pipefail
bench="${1:-${BUILD:-/tmp/orrery_gpu_build}/bench/orrery_cuda_bench}"
worlds="${WORLDS:-1024,16384,262144,1048576}"
steps="${STEPS:-1000}"
cases=("--env tag" "--env overcooked --layout cramped_room" "--env overcooked --layout counter_circuit_o_1order")
echo "== staged and direct megakernels (blocks per SM: default)"
for c in "${cases[@]}"; do
  for only in staged direct; do
    # shellcheck disable=SC2086
    "$bench" $c --worlds "$worlds" --steps "$steps" --only "$only" | grep -v '^startup' | sed '1!{/^env /d}'
  done
done
echo "== staged: shared-memory blocks per SM (ORRERY_CUDA_STAGE_BLOCKS) at ${BLOCKS_WORLDS:-1048576} worlds"
for c in "${cases[@]:1}"; do
  for k in ${BLOCKS:-1 2 3}; do
    # shellcheck disable=SC2086
    echo "blocks/SM=$k $c: $(ORRERY_CUDA_STAGE_BLOCKS=$k "$bench" $c --worlds "${BLOCKS_WORLDS:-1048576}" \
      --steps "$steps" --only staged | tail -1)"
  done
done
