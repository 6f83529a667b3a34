#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan; preset "fuzz") and runs
# each on its committed seed corpus for a fixed budget. tools/test.sh calls it
# with the short CI budget; a longer run is the same script with more seconds:
#   tools/fuzz.sh 3600          # an hour per target
#   tools/fuzz.sh 60 fuzz_checkpoint
# Crashes, leaks and timeouts fail the script; the reproducer is left in
# build/fuzz/findings/<target>/ (rerun: build/fuzz/tests/fuzz/<target> <file>).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_layout fuzz_state_json fuzz_checkpoint fuzz_snapshot fuzz_hull_build)

if ! command -v clang++ >/dev/null; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends clang >/dev/null
fi
"$root/tools/setup_deps.sh"
cd "$root"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

for t in "${targets[@]}"; do
  corpus="$root/build/fuzz/corpus/$t"     # grows as the fuzzer finds new paths
  findings="$root/build/fuzz/findings/$t"
  mkdir -p "$corpus" "$findings"
  echo "fuzz: $t for ${seconds}s"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$root/build/fuzz/tests/fuzz/$t" "$corpus" "$root/tests/fuzz/corpus/$t" \
    -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$findings/" -print_final_stats=1 2>&1 | tail -n 12
done
echo "fuzz: no crash in ${#targets[@]} target(s)"
