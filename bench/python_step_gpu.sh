#!/usr/bin/env bash
# The GPU half of issue #17 item 1, unattended: the Python step beside the
# engine's own step (bench/python_step.py) with this tree's Python layer and,
# for the "before" row, with the Python layer of commit d16c543 (the last one
# before the fast paths) over the same installed extension; "nofollow": the
# same rows with ORRERY_CUDA_FOLLOW=0 (two events per call); then the GPU
# tests (a T-step policy rollout captured in one CUDA graph, bit for bit
# against eager stepping) and docs/python.md's GPU example. Each part is
# guarded: a failing part is reported and the rest still run.
#
# Usage, from the repository root with the package installed (pip install .):
#   bash bench/python_step_gpu.sh          # writes $OUT/python_step (default bench/results/python_step)
#   PARTS="after tests" bash bench/python_step_gpu.sh   # only those parts (of: after nofollow before cpu tests)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-$root/bench/results}/python_step"
mkdir -p "$out"
py=${PYTHON:-python}
failed=()
parts=" ${PARTS:-after nofollow before cpu tests} "
run() { # name, command...
    local name=$1; shift
    [[ "$parts" == *" $name "* ]] || { echo "== $name: skipped (PARTS)"; return 0; }
    echo "== $name: $*"
    "$@" 2>&1 | tee "$out/$name.txt"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("$name")
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
run after $py bench/python_step.py --device cuda --repeats 21 --profile --jax --json "$out/after.json"
# The same with each Python call ordered by two events instead of the engine following torch's stream.
run nofollow env ORRERY_CUDA_FOLLOW=0 $py bench/python_step.py --device cuda --repeats 21 \
    --json "$out/nofollow.json"
# The old Python layer: from git, or (a tree without .git) from BEFORE=<folder holding orrery/*.py of d16c543>.
before="$(mktemp -d)"
core="$($py -c 'import orrery, os; print(os.path.dirname(orrery.__file__))')"
mkdir -p "$before/python/orrery"
if [[ "$parts" != *" before "* ]]; then
    echo "== before: skipped (PARTS)"
elif { if [ -n "${BEFORE:-}" ]; then cp "$BEFORE"/*.py "$before/python/orrery/"; \
     else git archive d16c543 python/orrery | tar -x -C "$before"; fi; } &&
   cp "$core"/_core*.so "$before/python/orrery/"; then
    run before env PYTHONPATH="$before/python" $py bench/python_step.py --device cuda --repeats 21 --profile \
        --json "$out/before.json"
else
    echo "== before: no d16c543 Python layer (no git history here and no BEFORE=...); skipped"
    failed+=(before)
fi
run cpu $py bench/python_step.py --device cpu --repeats 21 --json "$out/cpu.json"
run tests $py -m pytest -q tests/python/test_gpu.py "tests/python/test_docs.py::test_python_blocks_run[docs/python.md]"
echo "results in $out; failed parts: ${failed[*]:-none}"
[ ${#failed[@]} -eq 0 ]
