#!/usr/bin/env bash
# Cold start on one GPU (issue #14 item 9, #15 item 7: hide-and-seek's first
# step <= 5 s from process start on an empty cache): each variant in a fresh
# process on an empty compile cache, with the driver's compute cache off, by
# `orrery_cuda_bench --startup-only --wait-full` (the first step, then the
# fully optimised kernels swapped in, then how long destroying took); then a
# warm start on the cache the default variant left; then the cold-start GPU
# tests. Logs go to $OUT (default ./cold_start_out).
#
#   bash bench/cold_start_gpu.sh
#   COLD="default bg0" SKIP_TESTS=1 bash bench/cold_start_gpu.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/cold_start_out}
BUILD=${BUILD:-/tmp/orrery_gpu_build}
ENV_NAME=${ENV_NAME:-hide_and_seek}
mkdir -p "$OUT"

OUT="$OUT" BUILD="$BUILD" STAGES="build" \
    TARGETS="orrery_cuda_bench cuda_backend_test hide_and_seek_test nvrtc_kernels_test ${EXTRA_TARGETS:-}" \
    "$ROOT/tools/gpu_check.sh" >"$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
grep -E "^(commit|gpu|build):" "$OUT/build.txt"
BIN="$BUILD/bench/orrery_cuda_bench"

# default: quick kernels at --Ofast-compile=max, the full ones swapped in behind;
# bg-mid: the quick level mid; bg0: everything fully compiled first (as before);
# nosplit: the quick programs without --split-compile=0; tN: N compile threads;
# mega: the megakernel (one program) the same way; quit: the default, destroyed
# right after its first step (destroy_s: the wait for the compiles running).
variant_env() {
    case "$1" in
    bg0) echo "ORRERY_NVRTC_BACKGROUND=0" ;;
    bg-*) echo "ORRERY_NVRTC_BACKGROUND=${1#bg-}" ;;
    mega) echo "ORRERY_CUDA_PER_NODE=0" ;;
    nosplit) echo "ORRERY_NVRTC_OPTIONS=--split-compile=1" ;; # the quick programs without --split-compile=0
    t*) echo "ORRERY_NVRTC_THREADS=${1#t}" ;;
    *) echo "" ;;
    esac
}
warm=""
for v in ${COLD:-default quit nosplit t8 bg0}; do
    c=$(mktemp -d)
    t0=$(date +%s.%N)
    env ORRERY_CACHE_DIR="$c" CUDA_CACHE_DISABLE=1 CUDA_CACHE_PATH="$c/nv" $(variant_env "$v") \
        "$BIN" --env "$ENV_NAME" --startup-only $([ "$v" = quit ] || echo --wait-full) >"$OUT/cold_$v.log" 2>&1
    t1=$(date +%s.%N)
    printf "cold %-8s process %6.2f s | %s\n" "$v" "$(awk "BEGIN {print $t1 - $t0}")" \
        "$(grep -hoE '(first_step_s|module_s|first_level|full_kernels_s|swapped|failed|early_step_us|full_step_us|destroy_s)=[^ ]*' \
            "$OUT/cold_$v.log" | tr '\n' ' ')"
    grep -h "^orrery:" "$OUT/cold_$v.log" | sed 's/^/    /'
    if [ "$v" = default ]; then warm=$c; else rm -rf "$c"; fi
done
if [ -n "$warm" ]; then # a second process on the cache the default cold start filled
    env ORRERY_CACHE_DIR="$warm" CUDA_CACHE_DISABLE=1 "$BIN" --env "$ENV_NAME" --startup-only >"$OUT/warm.log" 2>&1
    printf "warm default  | %s\n" "$(grep -hoE '(first_step_s|module_s|from_cache|first_level|destroy_s)=[^ ]*' \
        "$OUT/warm.log" | tr '\n' ' ')"
    rm -rf "$warm"
fi

if [ "${SKIP_TESTS:-0}" != 1 ]; then
    export XDG_CACHE_HOME=/tmp/orrery_cold_xdg ORRERY_CACHE_DIR=/tmp/orrery_cold_xdg/orrery
    (cd "$BUILD" && ctest -j "${TEST_JOBS:-4}" --timeout 400 --output-on-failure \
        -R "${TEST_REGEX:-CudaColdStart|HideAndSeekGpu\.ColdStart|NvrtcColdStart}" >"$OUT/tests.log" 2>&1)
    echo "tests: $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)"
    grep -E '\*\*\*Failed|Timeout|Passed' "$OUT/tests.log" | sed 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: //' | head -20
fi
