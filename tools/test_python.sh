#!/usr/bin/env bash
# Installs the Python package from this checkout (pip install .) with the
# suite's requirements and runs pytest. tools/test.sh calls it; GPU tests skip
# themselves on machines without a GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/tools/setup_deps.sh"
python3 -m pip install --quiet --disable-pip-version-check -r "$root/tests/python/requirements.txt"
python3 -m pip install --quiet --disable-pip-version-check "$root"
cd "$root"
python3 -m pytest -q tests/python
