#!/usr/bin/env bash
# Configures and builds one CMake preset (default: release) after installing
# missing dependencies. Usage: tools/build.sh [preset]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
preset="${1:-release}"
"$root/tools/setup_deps.sh"
cd "$root"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
