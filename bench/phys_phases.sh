#!/usr/bin/env bash
# Where the GPU physics step's time goes, phase by phase (phys::PhaseClock):
# builds simulate with ORRERY_PHYS_CLOCKS, runs `orrery bench` for each env
# at WORLDS, and prints each phase's share of the step's SM cycles with the
# step's mean sizes (pairs, points, colours, rounds of a pass), read from the
# lines every 128th world prints (bench/phys_phases.py).
#
#   bash bench/phys_phases.sh /tmp/orrery_gpu_build/tools/orrery
#   WORLDS=1024 STEPS=60 ENVS="hide_and_seek" bash bench/phys_phases.sh BIN
#   EVERY=1 WORLDS=1024 ENVS="hide_and_seek" bash bench/phys_phases.sh BIN
# NVRTC_EXTRA: more NVRTC options beside the clocks' define (a define to measure).
# EVERY: a line from every EVERY-th world (default 128); EVERY=1 adds the
# table of each step's slowest world, whose chain sets a one-wave batch's
# kernel time. Device printf gets PRINTF_MB megabytes (default 256), so the
# steps between synchronizations keep every line. With EVERY=1 on a GPU the
# printing disturbs the clocks (worlds that finished print while others
# still solve: 244 k env-steps/s against 1.7 M for OpenAI's game at 1,024
# worlds): its sizes are exact, its cycles are not the undisturbed chain;
# a host build's clocks are not disturbed that way (docs/benchmarks.md).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:?usage: phys_phases.sh path/to/orrery}
WORLDS=${WORLDS:-1024,16384}
STEPS=${STEPS:-40}
OUT=${OUT:-/tmp/orrery_phys_phases}
mkdir -p "$OUT"
IFS=';' read -ra envs <<<"${ENVS:-hide_and_seek;hide_and_seek --opt variant=gpu_hideseek;physics_scenes --opt scene=crowd}"
for args in "${envs[@]}"; do
    for w in ${WORLDS//,/ }; do
        log="$OUT/$(echo "$args" | tr -c 'a-z0-9' '_')_$w.log"
        # shellcheck disable=SC2086 # bench arguments
        ORRERY_CUDA_PRINTF_MB=${PRINTF_MB:-256} \
            ORRERY_NVRTC_OPTIONS="-DORRERY_PHYS_CLOCKS=1 -DORRERY_PHYS_CLOCKS_EVERY=${EVERY:-128} ${NVRTC_EXTRA:-}" timeout 200 "$BIN" bench $args --device cuda --worlds "$w" \
            --steps "$STEPS" >"$log" 2>&1
        echo "== $args, $w worlds ($(grep -c '^phys-phases' "$log") lines; bench: $(awk '$NF ~ /^[0-9]+$/ {print $NF}' "$log" | tail -1) env-steps/s with the clocks)"
        python3 "$ROOT/bench/phys_phases.py" "$log"
    done
done
