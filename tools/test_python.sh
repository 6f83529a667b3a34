#!/usr/bin/env bash
# Installs the Python package from this checkout (pip install .) with the
# suite's requirements and runs pytest. tools/test.sh calls it; GPU tests skip
# themselves on machines without a GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/tools/setup_deps.sh"
# CPU wheels of torch when it is missing: the suite needs no GPU, and PyPI's
# torch brings about 4 GiB of CUDA libraries. Where that index cannot be
# reached, the requirements below take torch from PyPI instead.
if ! python3 -c "import torch" >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check torch \
      --index-url https://download.pytorch.org/whl/cpu --retries 1 --timeout 30 \
    || echo "test_python: the CPU torch index is unreachable; torch comes from PyPI"
fi
python3 -m pip install --quiet --disable-pip-version-check -r "$root/tests/python/requirements.txt"
python3 -m pip install --quiet --disable-pip-version-check "$root"
cd "$root"
python3 -m pytest -q tests/python
