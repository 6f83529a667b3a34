#!/usr/bin/env bash
# Checks every C++ source of the repository against .clang-format (STYLE.md:
# LLVM base, 4-space indent, 120 columns); tools/test.sh runs it, so CI fails
# on a file that is not formatted. `tools/format.sh --fix` rewrites them.
# Vendored code (python/third_party) keeps its own style.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if ! command -v clang-format >/dev/null; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends clang-format >/dev/null
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cuh' '*.h' '*.c' | grep -v '^python/third_party/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i --style=file "${files[@]}"
  echo "format: rewrote ${#files[@]} files"
  exit 0
fi
if ! clang-format --dry-run --Werror --style=file "${files[@]}" 2>/tmp/orrery_format.log; then
  grep -E "^[^ ].*: (error|warning):" /tmp/orrery_format.log | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /'
  echo "format: run tools/format.sh --fix (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
  exit 1
fi
echo "format: ${#files[@]} files match .clang-format"
