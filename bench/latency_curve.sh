#!/usr/bin/env bash
# A step's latency against the batch size: `orrery bench` of each env at
# worlds 1 to 2,048, two rounds, printed as worlds, env-steps/s and µs a step
# (worlds / env-steps/s: the steps are queued back to back, one
# synchronisation at the end). Where the GPU's curve and the CPU's cross is
# the batch below which the CPU backend answers a step sooner
# (docs/benchmarks.md, "A step's latency from 1 to 2,048 worlds").
#
# Usage: bench/latency_curve.sh BIN DEVICE ["ENV ARGS" ...]
#   BIN     an `orrery` binary (build/release/tools/orrery)
#   DEVICE  cuda, or cpu (then THREADS threads, default 2)
#   default envs: hide_and_seek, its gpu_hideseek variant, physics_scenes' crowd
#   WORLDS  the batch sizes (default 1,2,4,8,16,32,64,132,264,528,1024,2048)
#   STEPS   steps a row (default 300 on the GPU, 2000 on the CPU)
#   OUT     where the raw rows go (default ./latency_curve)
set -uo pipefail
bin=$1 device=$2
shift 2
[ $# -gt 0 ] || set -- "hide_and_seek" "hide_and_seek --opt variant=gpu_hideseek" "physics_scenes --opt scene=crowd"
out=${OUT:-$PWD/latency_curve}
mkdir -p "$out"
worlds=${WORLDS:-1,2,4,8,16,32,64,132,264,528,1024,2048}
extra=()
if [ "$device" = cpu ]; then
    extra=(--threads "${THREADS:-2}")
    steps=${STEPS:-2000}
else
    steps=${STEPS:-300}
fi
n=0
for args in "$@"; do
    n=$((n + 1))
    : >"$out/rows_$n.txt"
    for round in 1 2; do
        # shellcheck disable=SC2086 # a row is a list of bench arguments
        "$bin" bench $args --device "$device" "${extra[@]}" --worlds "$worlds" --steps "$steps" 2>&1 |
            grep -E "^[a-z_]+ +$device " | sed "s/^/round $round: /" >>"$out/rows_$n.txt"
    done
    echo "== $args ($device)"
    echo "worlds  env-steps/s (rounds 1, 2)  us a step (rounds 1, 2)"
    awk '{n = NF; w = $(n - 3); r = $n; k = w; if (!(k in a)) { order[++m] = k; a[k] = r } else b[k] = r }
         END { for (i = 1; i <= m; ++i) { k = order[i];
                 printf "%6d  %11d %11d  %10.1f %10.1f\n", k, a[k], b[k], 1e6 * k / a[k], (b[k] ? 1e6 * k / b[k] : 0) } }' \
        "$out/rows_$n.txt"
done
