#!/usr/bin/env bash
# Physics and hide-and-seek on one GPU, in one call: build the C++ tools and
# the GPU parity tests (tools/gpu_check.sh), run the parity tests (CPU = GPU
# bit for bit, pinned hashes), cold starts, then `orrery bench` of
# hide-and-seek under kernel variants (the default per-node form, the direct
# megakernel, its NVRTC register caps through ORRERY_NVRTC_OPTIONS, teams of 8
# and 32 lanes through ORRERY_CUDA_LANES, NVRTC's fast-compile levels),
# gpu_hideseek and the physics crowd. Every variant's kernel is compiled first, all at once (one NVRTC
# compile per process, on the host's cores), so the timed rows start warm.
# Prints a table; logs go to $OUT (default ./physics_gpu_out).
#
#   bash bench/physics_gpu.sh                    # everything (~6 min on one H200)
#   SKIP_TESTS=1 WORLDS=1024 BIG=16384 bash bench/physics_gpu.sh
#   VARIANTS="default r128" bash bench/physics_gpu.sh
#   EXTRA_TARGETS=cuda_backend_test EXTRA_TESTS='CudaBackend\.' ...   # more GPU tests in the same batch
#   COLD="default fc-mid mega" VARIANTS="default fc-mid mega" bash bench/physics_gpu.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/physics_gpu_out}
BUILD=${BUILD:-/tmp/orrery_gpu_build}
WORLDS=${WORLDS:-1024,16384}
BIG=${BIG:-65536} # the extra rows: BIG_VARIANTS (default "default mega"), gpu_hideseek, the crowd
STEPS=${STEPS:-40}
VARIANTS=${VARIANTS:-default mega r128 r96 r64 l8 l32 split}
# Cold-start rows (each alone on an empty cache): COLD="default mega fc-mid ..."
mkdir -p "$OUT"
# One compile cache for the bench rows and the C++ tests (whose simulators use
# the platform's default, $XDG_CACHE_HOME/orrery), so a test finds the kernels
# the rows compiled where the sources are the same.
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/orrery_physics_gpu_xdg}
export ORRERY_CACHE_DIR=$XDG_CACHE_HOME/orrery
BIN="$BUILD/tools/orrery"

OUT="$OUT" BUILD="$BUILD" STAGES="build" \
    TARGETS="module_test physics_test physics_hull_test physics_query_test physics_validate_test hide_and_seek_test hide_and_seek_gpu_test determinism_test orrery_cli orrery_cuda_bench ${EXTRA_TARGETS:-}" \
    "$ROOT/tools/gpu_check.sh" >"$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
grep -E "^(commit|gpu|build):" "$OUT/build.txt"

# A variant: its name, then the environment and bench flags it runs with.
# Hide-and-seek runs the per-node form by default (EnvSpec::prefer_per_node);
# "mega" is the megakernel (ORRERY_CUDA_PER_NODE=0), "fc-mid"/"fc-min" NVRTC's
# fast-compile levels, "t8" the per-node programs on 8 host threads (the
# cold-start settings of docs/perf-notes.md row 30).
variant_env() {
    case "$1" in
    r*) echo "ORRERY_CUDA_PER_NODE=0 ORRERY_NVRTC_OPTIONS=--maxrregcount=${1#r}" ;;
    l*) echo "ORRERY_CUDA_PER_NODE=0 ORRERY_CUDA_LANES=${1#l}" ;;
    split) echo "ORRERY_CUDA_PER_NODE=0 ORRERY_NVRTC_OPTIONS=--split-compile=0" ;;
    mega) echo "ORRERY_CUDA_PER_NODE=0" ;;
    fc-*) echo "ORRERY_NVRTC_OPTIONS=--Ofast-compile=${1#fc-}" ;;
    mega-fc-*) echo "ORRERY_CUDA_PER_NODE=0 ORRERY_NVRTC_OPTIONS=--Ofast-compile=${1#mega-fc-}" ;;
    t*) echo "ORRERY_NVRTC_THREADS=${1#t}" ;; # the per-node programs on fewer host threads
    *) echo "" ;;
    esac
}
variant_flags() { [ "$1" = per-node ] && echo "--per-node" || echo ""; }

if [ "${SKIP_TESTS:-0}" != 1 ]; then
    # The parity tests (CPU = GPU bit for bit, pinned hashes) compile their own
    # kernels: they run beside the variants' compiles, and end before the timed rows.
    (cd "$BUILD" && ctest -j "${TEST_JOBS:-10}" --timeout 400 --output-on-failure \
        -R 'Module\.Gpu|Module\.WorldLanes|PhysicsGpu|HullGpu|PhysicsQueryGpu|PhysicsBadHull|HideAndSeekGpu|GpuHideSeekGpu|PinnedHash\.Cuda/(physics_crowd|hide_and_seek)'"${EXTRA_TESTS:+|$EXTRA_TESTS}" \
        >"$OUT/tests.log" 2>&1) &
    tests_pid=$!
fi

# Warm every variant's kernel at once (one NVRTC compile per process).
pids=()
for v in $VARIANTS; do
    env $(variant_env "$v") "$BIN" bench hide_and_seek --device cuda --worlds 64 --steps 2 \
        $(variant_flags "$v") >"$OUT/warm_$v.log" 2>&1 &
    pids+=($!)
done
"$BIN" bench hide_and_seek --device cuda --opt variant=gpu_hideseek --worlds 64 --steps 2 >"$OUT/warm_gpu.log" 2>&1 &
pids+=($!)
"$BIN" bench physics_scenes --device cuda --opt scene=crowd --worlds 64 --steps 2 >"$OUT/warm_crowd.log" 2>&1 &
pids+=($!)
for p in "${pids[@]}"; do wait "$p"; done
grep -h "NVRTC compiled" "$OUT"/warm_*.log | sed 's/^/  /'

if [ "${SKIP_TESTS:-0}" != 1 ]; then
    wait "$tests_pid"
    echo "parity tests: $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)"
    grep -E '\*\*\*Failed|Timeout|Passed' "$OUT/tests.log" | sed 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: //' | head -30
fi

# Cold start: each COLD variant alone on an empty cache, in a process of its
# own (`orrery_cuda_bench --startup-only`, 1,024 worlds): the seconds from
# process start to the first step done (the issue's measure; a cold start then
# compiles the fully optimised kernels behind, GpuOptions::cold_start_level),
# and the whole process, whose exit waits for the compiles still running.
# bench/cold_start_gpu.sh has more rows. The driver's compute cache is off
# and empty too (CUDA 13's NVRTC can reuse it: docs/perf-notes.md row 12).
for v in ${COLD:-default mega}; do
    c=$(mktemp -d)
    t0=$(date +%s.%N)
    env ORRERY_CACHE_DIR="$c" CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH="$c/nv" $(variant_env "$v") \
        "$BUILD/bench/orrery_cuda_bench" --env hide_and_seek --startup-only >"$OUT/cold_$v.log" 2>&1
    t1=$(date +%s.%N)
    printf "  cold %-12s first step %s s, process %6.2f s; %s\n" "$v" \
        "$(grep -hoE 'first_step_s=[0-9.]+' "$OUT/cold_$v.log" | cut -d= -f2)" "$(awk "BEGIN {print $t1 - $t0}")" \
        "$(grep -h "NVRTC compiled" "$OUT/cold_$v.log" | sed 's/^orrery: //' | tr '\n' ' ')"
    rm -rf "$c"
done

echo "== hide_and_seek (env-steps/s), $STEPS steps a row"
printf "%-10s %-34s" variant environment
IFS=, read -ra ws <<<"$WORLDS"
for w in "${ws[@]}"; do printf " %12s" "$w"; done
echo
row() { # name, environment, then bench args
    local name=$1 opts=$2
    shift 2
    local line
    line=$(env $opts timeout 200 "$BIN" bench "$@" --worlds "$WORLDS" --steps "$STEPS" 2>>"$OUT/bench.err" |
        tee -a "$OUT/bench.log" | awk '$NF ~ /^[0-9]+$/ {printf " %12s", $NF}')
    printf "%-10s %-34s%s\n" "$name" "${opts:--}" "$line"
}
for v in $VARIANTS; do
    row "$v" "$(variant_env "$v")" hide_and_seek --device cuda $(variant_flags "$v")
done
row gpu_hideseek "" hide_and_seek --device cuda --opt variant=gpu_hideseek
row crowd "" physics_scenes --device cuda --opt scene=crowd
echo "== at $BIG worlds (env-steps/s)"
big() { # environment, then bench args
    local opts=$1
    shift
    printf "%-50s %12s\n" "${opts:+$opts }$*" "$(env $opts timeout 200 "$BIN" bench "$@" --device cuda --worlds "$BIG" \
        --steps "$STEPS" 2>>"$OUT/bench.err" | tee -a "$OUT/bench.log" | awk '$NF ~ /^[0-9]+$/ {print $NF}')"
}
for v in ${BIG_VARIANTS:-default mega}; do # warm only when also in VARIANTS
    big "$(variant_env "$v")" hide_and_seek $(variant_flags "$v")
done
big "" hide_and_seek --opt variant=gpu_hideseek
big "" physics_scenes --opt scene=crowd

