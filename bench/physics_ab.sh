#!/usr/bin/env bash
# A/B of prebuilt `orrery` binaries on the physics envs, in one GPU session:
# each binary's kernels are compiled first (all at once, each tree with its
# own cache), then `orrery bench` runs round-robin over trees, REPEAT rounds,
# so every row is measured on the same machine, clocks and driver. Companion
# of bench/gpu_ab.sh, which builds Overcooked's orrery_cuda_bench per tree;
# here the binaries come prebuilt (the CUDA backend loads the driver and
# NVRTC at run time, so a binary built on a machine without a GPU runs here).
#
# Usage (on the GPU machine): bench/physics_ab.sh LABEL=BIN [LABEL=BIN ...]
#   make a binary: git archive COMMIT | tar -x -C /tmp/src && cmake ... --target orrery_cli,
#   then copy build/tools/orrery to .ab/LABEL/orrery (.ab/ is git-ignored; carry it)
#   AB_RUNS    ";"-separated bench arguments (default: gpu_hideseek, the crowd, the default game)
#   AB_WORLDS  world counts (default: 16384)
#   AB_STEPS   steps timed per row (default: 40)
#   REPEAT     rounds (default: 2)
set -uo pipefail
runs=${AB_RUNS:-"hide_and_seek --opt variant=gpu_hideseek;physics_scenes --opt scene=crowd;hide_and_seek"}
worlds=${AB_WORLDS:-16384}
steps=${AB_STEPS:-40}
labels=() bins=()
for spec in "$@"; do
    labels+=("${spec%%=*}") bins+=("$(cd "$(dirname "${spec#*=}")" && pwd)/$(basename "${spec#*=}")")
done
IFS=';' read -r -a rows <<<"$runs"
t0=$(date +%s)
for i in "${!labels[@]}"; do
    for r in "${rows[@]}"; do
        # shellcheck disable=SC2086 # a row is a list of bench arguments
        ORRERY_CACHE_DIR=/tmp/orrery_ab_cache_${labels[$i]} timeout 300 "${bins[$i]}" bench $r --device cuda \
            --worlds 64 --steps 2 >/dev/null 2>&1 &
    done
done
wait
echo "kernels compiled: $(($(date +%s) - t0)) s"
printf "%-6s %-10s %-48s %9s %14s\n" round tree run worlds env-steps/s
for round in $(seq 1 "${REPEAT:-2}"); do
    for r in "${rows[@]}"; do
        for i in "${!labels[@]}"; do
            # shellcheck disable=SC2086
            ORRERY_CACHE_DIR=/tmp/orrery_ab_cache_${labels[$i]} timeout 300 "${bins[$i]}" bench $r --device cuda \
                --worlds "$worlds" --steps "$steps" 2>/dev/null | awk '$NF ~ /^[0-9]+$/ {print $(NF-3), $NF}' |
                while read -r n rate; do
                    printf "%-6s %-10s %-48s %9s %14s\n" "$round" "${labels[$i]}" "$r" "$n" "$rate"
                done
        done
    done
done
