#!/usr/bin/env bash
# On a fresh GPU machine: builds Orrery, runs the GPU and NVRTC tests, runs
# compute-sanitizer (memcheck, racecheck) on a small batch, runs the GPU
# benchmarks, and prints a summary table. Logs go to $OUT (default ./gpu_check_out).
#
#   tools/gpu_check.sh            # everything
#   STAGES="build test" tools/gpu_check.sh
#   stages: build test sanitize bench sweep profile hotspots python soak watch
#   PYTEST_ARGS   what the python stage runs (default: tests/python)
#   TEST_REGEX    which ctest tests the test stage runs (default: Cuda|Nvrtc|Cache)
#
# Build dependencies the machine may lack (GoogleTest, nlohmann_json, zlib) are
# taken from .gpu_deps/ when present (made by tools/make_gpu_deps.sh on a
# Debian machine; carry it to the GPU machine); nothing is downloaded.

set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/gpu_check_out}
BUILD=${BUILD:-/tmp/orrery_gpu_build}
STAGES=${STAGES:-"build test sanitize bench"}
JOBS=${JOBS:-$(nproc)}
# Only what the GPU checks need, so unrelated parts of the tree cannot block them.
TARGETS=${TARGETS:-"cuda_backend_test cuda_alloc_test cuda_world_view_test overcooked_parity_test nvrtc_kernels_test nvrtc_cache_test orrery_cuda_bench orrery_cli"}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
export PATH=/usr/local/cuda/bin:$PATH

note() { echo "$*" | tee -a "$SUMMARY"; }
want() { [[ " $STAGES " == *" $1 "* ]]; }
elapsed() { echo $(( $(date +%s) - $1 ))s; }

machine_info() {
    note "== machine"
    note "commit: ${ORRERY_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>/dev/null || echo none)"
    note "nvcc: $(nvcc --version 2>/dev/null | tail -1 || echo none)"
    note "cxx: $(c++ --version | head -1)"
}

deps_prefix() {
    # GoogleTest from source when the system has none; the bundle's prefix for the rest.
    local prefix="" deps="$ROOT/.gpu_deps"
    if [ ! -f /usr/include/gtest/gtest.h ] && [ -d "$deps/googletest" ]; then
        cmake -S "$deps/googletest" -B /tmp/orrery_gtest_build -G Ninja -DCMAKE_BUILD_TYPE=Release \
            -DBUILD_GMOCK=OFF -DCMAKE_INSTALL_PREFIX=/tmp/orrery_gtest >/dev/null &&
            cmake --build /tmp/orrery_gtest_build --target install -j "$JOBS" >/dev/null &&
            prefix="/tmp/orrery_gtest"
    fi
    if { [ ! -d /usr/include/nlohmann ] || [ ! -f /usr/include/zlib.h ]; } && [ -d "$deps/prefix" ]; then
        prefix="$prefix;$deps/prefix"
    fi
    echo "$prefix"
}

stage_build() {
    local t0; t0=$(date +%s)
    note "== build ($BUILD)"
    local prefix; prefix=$(deps_prefix)
    if cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DORRERY_VALIDATE=ON \
        -DORRERY_BUILD_PYTHON=OFF "-DCMAKE_PREFIX_PATH=$prefix" >"$OUT/build.log" 2>&1 &&
        cmake --build "$BUILD" -j "$JOBS" --target $TARGETS >>"$OUT/build.log" 2>&1; then
        note "build: ok ($(elapsed "$t0"))"
    else
        note "build: FAILED ($(elapsed "$t0")); tail of build.log:"
        tail -30 "$OUT/build.log" | tee -a "$SUMMARY"
        exit 1
    fi
}

stage_test() {
    local t0; t0=$(date +%s)
    local regex=${TEST_REGEX:-Cuda|Nvrtc|Cache}
    note "== tests (ctest -R '$regex')"
    # The tools and Python read ORRERY_CACHE_DIR; the C++ tests' simulators use the
    # platform default (GpuOptions::cache_dir unset), so XDG_CACHE_HOME keeps theirs in /tmp too.
    export ORRERY_CACHE_DIR=/tmp/orrery_test_cache XDG_CACHE_HOME=/tmp/orrery_test_xdg
    (cd "$BUILD" && ctest -R "$regex" --output-on-failure --timeout 300 -j "${TEST_JOBS:-1}") >"$OUT/tests.log" 2>&1
    local rc=$?
    note "tests: $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1) ($(elapsed "$t0"))"
    grep -E '^\s*[0-9]+ - ' "$OUT/tests.log" | tee -a "$SUMMARY"
    grep -E 'SKIPPED|Skipped' "$OUT/tests.log" | head -3 | tee -a "$SUMMARY"
    return $rc
}

stage_sanitize() {
    local t0; t0=$(date +%s)
    note "== compute-sanitizer (small batch)"
    # The tools and Python read ORRERY_CACHE_DIR; the C++ tests' simulators use the
    # platform default (GpuOptions::cache_dir unset), so XDG_CACHE_HOME keeps theirs in /tmp too.
    export ORRERY_CACHE_DIR=/tmp/orrery_test_cache XDG_CACHE_HOME=/tmp/orrery_test_xdg
    local log="$OUT/sanitizer.log"
    : >"$log"
    for tool in memcheck racecheck; do
        for run in "cuda_backend_test --gtest_filter=CudaSanitize.*" "cuda_alloc_test"; do
            set -- $run
            echo "### $tool $run" >>"$log"
            # Racecheck instruments every shared-memory access of the staged kernel: few steps, bounded time.
            ORRERY_SANITIZE_STEPS=${SANITIZE_STEPS:-12} timeout "${SANITIZE_TIMEOUT:-150}" \
                compute-sanitizer --tool "$tool" --error-exitcode 9 "$BUILD/tests/$1" "${@:2}" >>"$log" 2>&1
            local rc=$?
            note "$tool $1: $([ $rc -eq 0 ] && echo clean || echo "FAILED rc=$rc") ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1))"
        done
    done
    note "sanitize: $(elapsed "$t0")"
}

stage_bench() {
    local t0; t0=$(date +%s)
    local bench="$BUILD/bench/orrery_cuda_bench" log="$OUT/bench.log"
    note "== start-up (fresh process each; cold = empty compile cache)"
    : >"$log"
    for env in tag overcooked; do
        local cache; cache=$(mktemp -d)/cache
        for kind in cold warm; do
            local line; line=$(ORRERY_CACHE_DIR=$cache "$bench" --env "$env" --startup-only 2>>"$log")
            echo "$line" >>"$log"
            note "$kind $line"
        done
    done
    note "== per-step time (orrery_cuda_bench; us per step, mean over many queued steps)"
    for env in tag overcooked; do
        "$bench" --env "$env" --worlds "${BENCH_WORLDS:-1024,16384,262144}" --steps "${BENCH_STEPS:-2000}" 2>>"$log" |
            tee -a "$log" "$SUMMARY"
    done
    note "== per-step time without programmatic dependent launch (ORRERY_CUDA_PDL=0)"
    for env in tag overcooked; do
        ORRERY_CUDA_PDL=0 "$bench" --env "$env" --worlds "${PDL_WORLDS:-1024,16384}" --steps "${BENCH_STEPS:-2000}" \
            --only staged 2>>"$log" | tail -n +3 | tee -a "$log" "$SUMMARY"
    done
    if [ "${BENCH_CLI:-1}" = 0 ]; then note "bench: $(elapsed "$t0")"; return; fi
    note "== orrery bench (host-side actions copied every step)"
    for mode in "" "--per-node"; do
        "$BUILD/tools/orrery" bench tag overcooked --device cuda --worlds 1024,65536 $mode 2>>"$log" |
            tee -a "$log" "$SUMMARY"
    done
    "$BUILD/tools/orrery" bench tag overcooked --device cpu --worlds 1024,65536 2>>"$log" | tee -a "$log" "$SUMMARY"
    note "bench: $(elapsed "$t0")"
}

stage_sweep() {
    local t0; t0=$(date +%s)
    note "== tuning sweep (bench/gpu_sweep.sh)"
    BUILD="$BUILD" "$ROOT/bench/gpu_sweep.sh" "$BUILD/bench/orrery_cuda_bench" 2>>"$OUT/sweep.log" |
        tee -a "$OUT/sweep.log" "$SUMMARY"
    note "sweep: $(elapsed "$t0")"
}

stage_profile() {
    # One staged Overcooked step under Nsight Compute: the figures docs/perf-notes.md reasons with.
    local t0; t0=$(date +%s)
    note "== ncu: one staged overcooked step, ${PROFILE_WORLDS:-262144} worlds"
    ncu --clock-control none --kernel-name regex:orrery_step_staged --launch-skip 40 --launch-count 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        --section WarpStateStats --section SchedulerStats \
        "$BUILD/bench/orrery_cuda_bench" --env overcooked --layout "${PROFILE_LAYOUT:-cramped_room}" \
        --worlds "${PROFILE_WORLDS:-262144}" --steps 40 --only staged >"$OUT/ncu.txt" 2>&1
    grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Issued Ipc|No Eligible|Dynamic Shared|L2 Hit|L1/TEX Hit|Stall" \
        "$OUT/ncu.txt" | head -40 | tee -a "$SUMMARY"
    note "profile: $(elapsed "$t0")"
}

stage_watch() {
    # orrery-watch-bench (built where Vulkan is installed, passed in as WATCH_BENCH) with
    # the Vulkan loader and glvnd libraries unpacked from .gl/*.deb when the machine lacks them.
    local t0; t0=$(date +%s) bin=${WATCH_BENCH:-}
    note "== watching a world while 65,536 step (orrery-watch-bench; WATCH_ENVS)"
    if [ -z "$bin" ] || [ ! -x "$bin" ]; then note "watch: skipped (WATCH_BENCH not set)"; return; fi
    if ! ldconfig -p | grep -q libvulkan.so.1 && [ -d "$ROOT/.gl" ]; then
        for deb in "$ROOT"/.gl/*.deb; do dpkg -x "$deb" /tmp/orrery_gl; done
        export LD_LIBRARY_PATH=/tmp/orrery_gl/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
    fi
    for env in ${WATCH_ENVS:-overcooked tag hide_and_seek}; do
        timeout 240 "$bin" "$env" --worlds 65536 --device cuda --seconds "${WATCH_SECONDS:-3}" ${WATCH_ARGS:-} 2>&1 |
            tee -a "$OUT/watch.log" "$SUMMARY"
    done
    note "watch: $(elapsed "$t0")"
}

stage_python() {
    # The Python package on the GPU: a real pip install of this tree (no build
    # isolation: the GPU machine has no internet, so pybind11 and
    # scikit-build-core must already be there) and the whole pytest suite.
    local t0; t0=$(date +%s)
    note "== python: pip install . and pytest tests/python"
    (cd "$ROOT" && CMAKE_PREFIX_PATH="$ROOT/.gpu_deps/prefix" CMAKE_BUILD_PARALLEL_LEVEL=$JOBS PIP_BREAK_SYSTEM_PACKAGES=1 \
        python3 -m pip install --no-build-isolation --no-deps -q --config-settings=cmake.build-type=RelWithDebInfo . \
            >"$OUT/python.log" 2>&1 &&
        ORRERY_CACHE_DIR=/tmp/orrery_py_cache timeout "${PYTHON_TIMEOUT:-400}" \
            python3 -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-tests/python} >>"$OUT/python.log" 2>&1)
    local rc=$?
    note "python: $(grep -E '[0-9]+ (passed|failed)' "$OUT/python.log" | tail -1) rc=$rc ($(elapsed "$t0"))"
    [ $rc -eq 0 ] || grep -E '^(FAILED|ERROR)' "$OUT/python.log" | head -20 | tee -a "$SUMMARY"
    if [ $rc -ne 0 ]; then # a crash: where, in the smallest repro (no gdb here: tools/segv_backtrace.c)
        gcc -shared -fPIC -O1 -o /tmp/orrery_segv.so "$ROOT/tools/segv_backtrace.c" -ldl
        local py="import orrery; e = orrery.make('tag', num_worlds=4, device='cuda'); e.reset(); print('made', e.device)"
        note "repro: $py"
        (cd /tmp && ORRERY_VERBOSE=1 LD_PRELOAD=/tmp/orrery_segv.so timeout 120 python3 -c "$py") >"$OUT/python_repro.log" 2>&1
        note "  rc=$?"
        grep -E "^(segv_backtrace|frame)" "$OUT/python_repro.log" | head -24 | while read -r tag n lib off sym; do
            local where=""
            case "$lib" in *orrery*|*_core*) where=$(addr2line -f -C -i -e "$lib" "$off" 2>/dev/null | paste -sd' ' | cut -c1-220) ;; esac
            note "  $tag $n $(basename "$lib" 2>/dev/null) $off $sym $where"
        done
    fi
    return $rc
}

stage_soak() {
    # bench/soak.py on the GPU (needs the python stage's install): a plain window
    # with every check, then a short one under compute-sanitizer memcheck (the
    # NVRTC megakernels, the masked resets, save/restore and checkpoints).
    local t0; t0=$(date +%s)
    note "== soak on the GPU: ${SOAK_STEPS:-2e9} world-steps, then memcheck on ${SOAK_SANITIZE_STEPS:-2e6}"
    (cd /tmp && ORRERY_CACHE_DIR=/tmp/orrery_py_cache timeout "${SOAK_TIMEOUT:-200}" python3 "$ROOT/bench/soak.py" \
        --device cuda --worlds 65536 --world-steps "${SOAK_STEPS:-2e9}" --every 2000 --out "$OUT/soak.jsonl") \
        >"$OUT/soak.log" 2>&1
    note "soak: rc=$? $(tail -1 "$OUT/soak.log" | cut -c1-400)"
    (cd /tmp && ORRERY_CACHE_DIR=/tmp/orrery_py_cache timeout "${SOAK_SANITIZE_TIMEOUT:-200}" compute-sanitizer \
        --tool memcheck --error-exitcode 9 python3 "$ROOT/bench/soak.py" --device cuda --worlds 1024 \
        --world-steps "${SOAK_SANITIZE_STEPS:-2e6}" --every 200 --replay 20) >"$OUT/soak_memcheck.log" 2>&1
    note "soak under memcheck: rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/soak_memcheck.log" | tail -1) $(grep -v '^=' "$OUT/soak_memcheck.log" | tail -1 | cut -c1-300)"
    note "soak: $(elapsed "$t0")"
}

stage_hotspots() {
    # Where one world's step spends its time at 1,024 worlds (the latency target):
    # warp-stall samples per source line and per SASS instruction. The megakernel
    # is compiled with -lineinfo from a fresh cache in the repo root, with its
    # generated source dumped there, so ncu finds every file it names.
    local t0; t0=$(date +%s) rep="$OUT/hotspots"
    note "== ncu source hotspots: one staged ${HOTSPOT_ENV:-overcooked} step, ${HOTSPOT_WORLDS:-1024} worlds"
    (cd "$ROOT" && ORRERY_CACHE_DIR=$(mktemp -d) ORRERY_DUMP_SOURCE="$ROOT" \
        ncu --clock-control none --kernel-name regex:orrery_step --launch-skip 40 --launch-count 1 \
        --section SourceCounters --section WarpStateStats --section SpeedOfLight --import-source yes -f -o "$rep" \
        "$BUILD/bench/orrery_cuda_bench" --env "${HOTSPOT_ENV:-overcooked}" ${HOTSPOT_ARGS:---layout cramped_room} \
        --worlds "${HOTSPOT_WORLDS:-1024}" --steps 60 --only staged) >"$OUT/hotspots.log" 2>&1
    (cd "$ROOT" && ncu -i "$rep.ncu-rep" --page source --csv --print-source cuda) >"$OUT/hotspots_cuda.csv" 2>>"$OUT/hotspots.log"
    (cd "$ROOT" && ncu -i "$rep.ncu-rep" --page source --csv --print-source sass) >"$OUT/hotspots_sass.csv" 2>>"$OUT/hotspots.log"
    (cd "$ROOT" && ncu -i "$rep.ncu-rep" --page details) >"$OUT/hotspots_details.txt" 2>>"$OUT/hotspots.log"
    grep -E "Duration|Warp Cycles Per Issued|Executed Ipc|Elapsed Cycles" "$OUT/hotspots_details.txt" | head -8 | tee -a "$SUMMARY"
    note "hotspots: $(wc -l <"$OUT/hotspots_cuda.csv") source rows, $(wc -l <"$OUT/hotspots_sass.csv") sass rows ($(elapsed "$t0"))"
    rm -f "$ROOT/orrery_kernels.cu"
}

machine_info
want build && stage_build
status=0
want test && { stage_test || status=1; }
want sanitize && stage_sanitize
want bench && stage_bench
want sweep && stage_sweep
want profile && stage_profile
want hotspots && stage_hotspots
want watch && stage_watch
want python && { stage_python || status=1; }
want soak && stage_soak
echo
echo "==================== summary ===================="
cat "$SUMMARY"
exit $status
