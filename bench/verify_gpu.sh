#!/usr/bin/env bash
# The GPU side of a release in one call on one H200 (about 9 min), each part
# under a time limit so that a slow one still leaves the others' results:
#   1. the Python package installed (pip, in the background while the C++ tools build);
#   2. bench/physics_gpu.sh: the C++ GPU tests (physics, hide-and-seek, modules,
#      pinned hashes, and the CUDA backend's), hide-and-seek's cold starts and
#      its env-steps/s under the kernel variants in $VARIANTS;
#   3. `orrery memory hide_and_seek --worlds 65536` for both variants in both
#      kernel forms (the step scratch pool and the total);
#   4. bench/python_step_gpu.sh: the Python step beside the engine's, then the
#      Python GPU tests.
# Prints a summary with the seconds at which each part started; $OUT holds the
# logs and verify_gpu.tgz (all of them in one file).
#
#   bash bench/verify_gpu.sh
#   VARIANTS="default mega" COLD=default PY_PARTS="after tests" bash bench/verify_gpu.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/verify_gpu_out}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
t0=$(date +%s)
at() { echo "[$(($(date +%s) - t0)) s] $*"; }

at "pip install (in the background)"
(
    CMAKE_PREFIX_PATH=$ROOT/.gpu_deps/prefix CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-16} PIP_BREAK_SYSTEM_PACKAGES=1 \
        timeout 300 "$PY" -m pip install --no-build-isolation --no-deps -q . >"$OUT/pip.txt" 2>&1
    echo "pip rc $? at $(($(date +%s) - t0)) s" >>"$OUT/pip.txt"
) &
pip_pid=$!

at "bench/physics_gpu.sh"
OUT=$OUT/physics EXTRA_TARGETS="cuda_backend_test ${EXTRA_TARGETS:-}" EXTRA_TESTS="CudaBackend\\.${EXTRA_TESTS:+|$EXTRA_TESTS}" \
    COLD=${COLD:-default fc-mid} VARIANTS=${VARIANTS:-default fc-mid mega} BIG_VARIANTS=${BIG_VARIANTS:-default fc-mid} \
    WORLDS=${WORLDS:-1024,16384} BIG=${BIG:-65536} timeout "${PHYSICS_LIMIT:-330}" bash bench/physics_gpu.sh 2>&1 |
    tee "$OUT/physics.txt"
wait "$pip_pid"
at "$(tail -1 "$OUT/pip.txt")"

at "orrery memory at 65,536 worlds"
export XDG_CACHE_HOME=/tmp/orrery_physics_gpu_xdg ORRERY_CACHE_DIR=/tmp/orrery_physics_gpu_xdg/orrery
for variant in openai gpu_hideseek; do
    for per_node in 0 1; do
        echo "== hide_and_seek variant=$variant ORRERY_CUDA_PER_NODE=$per_node"
        ORRERY_CUDA_PER_NODE=$per_node timeout 120 /tmp/orrery_gpu_build/tools/orrery memory hide_and_seek \
            --worlds 65536 --device cuda --opt variant=$variant 2>&1 | grep -E "pool|^total|rror"
    done
done 2>&1 | tee "$OUT/memory.txt"

at "bench/python_step_gpu.sh (PARTS=${PY_PARTS:-after tests})"
OUT=$OUT PYTHON=$PY PARTS=${PY_PARTS:-after tests} timeout "${PY_LIMIT:-240}" bash bench/python_step_gpu.sh \
    >"$OUT/python_step.txt" 2>&1
grep -E "^==|us|passed|failed|error|results" "$OUT/python_step.txt" | tail -45
at "done"
tar czf "$OUT/verify_gpu.tgz" -C "$OUT" --exclude verify_gpu.tgz .
