#!/usr/bin/env bash
# Builds and runs the whole test suite: C++ (release with assertions, then
# ASan + UBSan) and, where the Python package exists, pytest. GPU tests skip
# themselves on machines without a GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc)"
"$root/tools/build.sh" release
ctest --preset release -j "$jobs"
"$root/tools/build.sh" asan
ctest --preset asan -j "$jobs"
if [ -x "$root/tools/test_python.sh" ]; then
  "$root/tools/test_python.sh"
fi
echo "test: all suites passed"
