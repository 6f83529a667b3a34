#!/usr/bin/env bash
# One device call that finishes what the longer drivers leave over, each part
# under its own time limit so a slow one leaves the others' results:
#   1. the C++ tools and the GPU tests named by TESTS (tools/gpu_check.sh's
#      build), with `pip install .` of the package in the background;
#   2. `orrery bench` rows of hide-and-seek, gpu_hideseek and the physics
#      crowd at WORLDS, with each env's team size and again under each team
#      size in LANES (ORRERY_CUDA_LANES), every kernel compiled first while
#      the tests run;
#   3. orrery-watch-bench (prebuilt where Vulkan is, in .gl/; tools/gpu_check.sh's
#      `watch` stage) with each of WATCH_RUNS' argument sets (default: frames on
#      the host's cores from .lvp/'s lavapipe, then on the GPU);
#   4. the Python GPU tests in PYTESTS;
#   5. with PARTS including "phases", the physics step's phase clocks
#      (bench/phys_phases.sh) at PHASE_WORLDS (default 1024,16384).
# EXTRA_TARGETS adds build targets (their tests join the ctest run).
# TESTS_EXCLUDE leaves out the GPU tests it matches (ctest -E), e.g. the two
# slow every-kernel-form comparisons when a call has no time for them.
# Prints a summary; logs go to $OUT (default ./gpu_call_out), or with PACK=1
# into the one file $OUT.tar.gz (the phase clocks' lines among them, for
# `python3 bench/phys_phases.py` here).
#
#   bash bench/gpu_call.sh
#   PARTS="rows watch" LANES="8 32" bash bench/gpu_call.sh
#   PARTS=rows ROW_ENVS="ORRERY_CUDA_FIT_BLOCKS=0;ORRERY_NVRTC_OPTIONS=--maxrregcount=128" bash bench/gpu_call.sh
#   PARTS=rows ROW_ARGS="--opt on_chip=0;--opt on_chip=2" bash bench/gpu_call.sh
# ROW_ARGS: ';'-separated sets of extra `orrery bench` arguments, each a block
# of rows of its own (after the ROW_ENVS blocks); a set's leading VAR=VALUE
# words are its environment, e.g. "ORRERY_NVRTC_OPTIONS=--maxrregcount=128 --opt on_chip=1",
# where a ',' in the value stands for a space ("ORRERY_NVRTC_OPTIONS=-DA,-DB": two defines).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu_call_out}
BUILD=${BUILD:-/tmp/orrery_gpu_build}
PARTS=" ${PARTS:-tests rows watch python} "
WORLDS=${WORLDS:-1024,16384,65536}
STEPS=${STEPS:-40}
TESTS=${TESTS:-PhysicsGpu|Module\.Gpu}
mkdir -p "$OUT"
t0=$(date +%s)
at() { echo "[$(($(date +%s) - t0)) s] $*"; }
want() { [[ "$PARTS" == *" $1 "* ]]; }
export XDG_CACHE_HOME=/tmp/orrery_gpu_call_xdg ORRERY_CACHE_DIR=/tmp/orrery_gpu_call_xdg/orrery
BIN="$BUILD/tools/orrery"

if want python; then
    at "pip install (in the background)"
    (CMAKE_PREFIX_PATH=$ROOT/.gpu_deps/prefix CMAKE_BUILD_PARALLEL_LEVEL=12 PIP_BREAK_SYSTEM_PACKAGES=1 \
        timeout 300 python3 -m pip install --no-build-isolation --no-deps -q . >"$OUT/pip.txt" 2>&1
    echo "pip rc $? at $(($(date +%s) - t0)) s" >>"$OUT/pip.txt") &
    pip_pid=$!
fi

at "build"
OUT="$OUT" BUILD="$BUILD" STAGES="build" \
    TARGETS="module_test physics_test physics_hull_test physics_query_test hide_and_seek_test hide_and_seek_gpu_test determinism_test orrery_cli orrery_cuda_bench ${EXTRA_TARGETS:-}" \
    "$ROOT/tools/gpu_check.sh" >"$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
grep -E "^(commit|gpu|build):" "$OUT/build.txt"

if want tests; then
    at "GPU tests: ctest -R '$TESTS' (in the background, beside the compiles)"
    (cd "$BUILD" && timeout "${TEST_LIMIT:-270}" ctest -j "${TEST_JOBS:-8}" --timeout 400 --output-on-failure -R "$TESTS" ${TESTS_EXCLUDE:+-E "$TESTS_EXCLUDE"} \
        >"$OUT/tests.log" 2>&1) &
    tests_pid=$!
fi

# The rows' settings: the defaults, then each of LANES as ORRERY_CUDA_LANES,
# then each of ROW_ENVS (';'-separated sets of VAR=VALUE words).
row_envs=("")
for l in ${LANES:-}; do row_envs+=("ORRERY_CUDA_LANES=$l"); done
IFS=';' read -ra extra <<<"${ROW_ENVS:-}"
for e in "${extra[@]}"; do [ -n "$e" ] && row_envs+=("$e"); done
IFS=';' read -ra row_args <<<"${ROW_ARGS:-}"
split_args() { # a ROW_ARGS set into ae (its leading VAR=VALUE words) and ar (the rest)
    local w lead=1
    ae="" ar=""
    for w in $1; do
        if [[ $lead == 1 && "$w" =~ ^[A-Z_][A-Z0-9_]*= ]]; then ae+="$w "; else lead=0 ar+="$w "; fi
    done
}
env_words() { # VAR=VALUE words into the array ew, each ',' in a value a space
    local w
    ew=()
    for w in $1; do ew+=("${w//,/ }"); done
}
if want rows; then
    pids=()
    for k in "${!row_envs[@]}"; do
        for args in "hide_and_seek" "hide_and_seek --opt variant=gpu_hideseek" "physics_scenes --opt scene=crowd"; do
            # shellcheck disable=SC2086 # VAR=VALUE words and bench arguments
            env_words "${row_envs[$k]}"
            env "${ew[@]}" "$BIN" bench $args --device cuda --worlds 64 --steps 2 \
                >"$OUT/warm_${args%% *}_${args##*=}_$k.log" 2>&1 &
            pids+=($!)
        done
    done
    for k in "${!row_args[@]}"; do
        for args in "hide_and_seek" "hide_and_seek --opt variant=gpu_hideseek" "physics_scenes --opt scene=crowd"; do
            split_args "${row_args[$k]}"
            # shellcheck disable=SC2086 # VAR=VALUE words and bench arguments
            env_words "$ae"
            env "${ew[@]}" "$BIN" bench $args $ar --device cuda --worlds 64 --steps 2 \
                >"$OUT/warm_${args%% *}_${args##*=}_a$k.log" 2>&1 &
            pids+=($!)
        done
    done
    for p in "${pids[@]}"; do wait "$p"; done
    at "kernels compiled"
fi
if want tests; then
    wait "$tests_pid"
    at "GPU tests: $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)"
    grep -E '\*\*\*Failed|Timeout|Passed' "$OUT/tests.log" | sed 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: //'
fi
if want rows; then
    at "orrery bench, env-steps/s at $WORLDS worlds, $STEPS steps"
    row() { # label, environment (VAR=VALUE words, ',' as ' '), bench args
        local label=$1
        env_words "$2"
        shift 2
        printf "  %-28s %s\n" "$label" "$(env "${ew[@]}" timeout 150 "$BIN" bench "$@" --device cuda --worlds "$WORLDS" \
            --steps "$STEPS" 2>>"$OUT/bench.err" | tee -a "$OUT/bench.log" | awk '$NF ~ /^[0-9]+$/ {printf " %12s", $NF}')"
    }
    for e in "${row_envs[@]}"; do
        [ -n "$e" ] && echo "  -- $e"
        row "hide_and_seek" "$e" hide_and_seek
        row "gpu_hideseek" "$e" hide_and_seek --opt variant=gpu_hideseek
        row "crowd" "$e" physics_scenes --opt scene=crowd
    done
    for a in "${row_args[@]}"; do
        [ -z "$a" ] && continue
        echo "  -- $a"
        # shellcheck disable=SC2086 # bench arguments
        split_args "$a"
        row "hide_and_seek" "$ae" hide_and_seek $ar
        # shellcheck disable=SC2086
        row "gpu_hideseek" "$ae" hide_and_seek --opt variant=gpu_hideseek $ar
        # shellcheck disable=SC2086
        row "crowd" "$ae" physics_scenes --opt scene=crowd $ar
    done
fi
if want watch; then
    at "orrery-watch-bench"
    # Mesa's lavapipe for --vk-device cpu, where tools/make_gpu_deps.sh packed it into .lvp/.
    if [ -f "$ROOT/.lvp/lvp.tar.xz" ]; then
        mkdir -p /opt/lvp && tar xJf "$ROOT/.lvp/lvp.tar.xz" -C /opt/lvp &&
            export LD_LIBRARY_PATH=/opt/lvp/lib:${LD_LIBRARY_PATH:-} VK_ADD_DRIVER_FILES=/opt/lvp/lvp_icd.json
    fi
    # Whole-episode phases (hide-and-seek's worlds reset together every 240 steps), frames
    # drawn on the host's cores and on the GPU, each with the camera turning every frame.
    w="--phase-steps 240 --thread-only --ahead 4 --rounds 2"
    IFS=';' read -ra runs <<<"${WATCH_RUNS:-$w --vk-device cpu --moving-camera;$w --vk-device gpu --moving-camera}"
    for r in "${runs[@]}"; do
        echo "  -- $r"
        OUT="$OUT/watch" WATCH_BENCH="$ROOT/.gl/orrery-watch-bench" WATCH_ARGS="$r" WATCH_SECONDS=${WATCH_SECONDS:-2} \
            WATCH_ENVS=hide_and_seek STAGES=watch timeout "${WATCH_LIMIT:-150}" "$ROOT/tools/gpu_check.sh" 2>&1 |
            grep -vE "^(==|commit|gpu|nvcc|cxx|$)" | sed 's/^/    /'
    done
fi
if want phases; then
    at "physics phases (bench/phys_phases.sh)"
    OUT="$OUT/phases" WORLDS=${PHASE_WORLDS:-1024,16384} STEPS="$STEPS" timeout "${PHASE_LIMIT:-400}" \
        bash "$ROOT/bench/phys_phases.sh" "$BIN" 2>&1
fi
if want python; then
    wait "$pip_pid"
    at "$(tail -1 "$OUT/pip.txt")"
    (cd /tmp && timeout "${PY_LIMIT:-200}" python3 -m pytest -q -p no:cacheprovider -rs ${PYTESTS:-"$ROOT/tests/python/test_gpu.py" "$ROOT/tests/python/test_ippo_example.py"}) \
        >"$OUT/pytest.txt" 2>&1
    at "pytest: $(tail -1 "$OUT/pytest.txt")"
    grep -E "^(FAILED|ERROR|SKIPPED)" "$OUT/pytest.txt" | head -20
fi
at "done"
# PACK=1: every log in one file, $OUT.tar.gz beside the folder, which goes
# (the device tool brings back at most 8 files of a call).
if [ "${PACK:-0}" = 1 ]; then
    tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT" &&
        echo "logs: $OUT.tar.gz"
fi
