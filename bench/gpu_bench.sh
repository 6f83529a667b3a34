#!/usr/bin/env bash
# The benchmark part of a GPU-machine run: Orrery's CUDA backend on Overcooked
# (cramped_room and counter_circuit_o_1order, 1,024 .. 4,194,304 worlds), the
# microseconds per step at 1,024 worlds, and JaxMARL's Overcooked in the same
# session. Each part is guarded: a failing part is reported and the rest still
# run. Writes $OUT/bench/gpu_bench.{json,md,png}; bench/run.py --from-json on
# that JSON later updates docs/benchmarks.md on a machine without a GPU.
#
# Usage: bench/gpu_bench.sh [orrery-binary]   (default: newest build/*/tools/orrery)
#   OUT=<folder>   where results go (default bench/results)
#   QUICK=1        fewer world counts and steps (a smoke test)
#   WORLDS, JM_WORLDS  world counts for Orrery and for JaxMARL; SKIP="stage0 jaxmarl" leaves parts out
#   LIMIT_ORRERY, LIMIT_LATENCY, LIMIT_STAGE0, LIMIT_JAXMARL: seconds allowed to
#                  each part (240, 60, 120, 240; the whole usually takes 3 to 6 minutes)
# Needs on that machine: python3 with jax, flax, jaxtyping, numpy, matplotlib, and
# bench/.peers/JaxMARL (bench/fetch_peers.sh; git-ignored, so name bench/.peers
# in the device run's carry list).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-$root/bench/results}/bench"
mkdir -p "$out"
parts="$(mktemp -d)"
bin_args=()
[ $# -ge 1 ] && bin_args=(--bin "$1")
failed=()

worlds=${WORLDS:-1024,4096,16384,65536,262144,1048576,4194304}
jm_worlds=${JM_WORLDS:-1024,16384,65536,262144,1048576}
us_steps=20000
if [ "${QUICK:-0}" = 1 ]; then
  worlds=1024,65536; jm_worlds="${JM_WORLDS:-1024,65536}"; us_steps=2000
fi
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }   # SKIP="stage0 jaxmarl ..." leaves parts out

# part NAME SECONDS CMD... : runs one part with a time limit, logging its failure.
part() {
  local name="$1" limit="$2" rc=0
  shift 2
  echo "== $name (at most ${limit}s)" >&2
  timeout "$limit" "$@" >&2 || rc=$?
  if [ $rc -ne 0 ]; then
    echo "== $name FAILED (exit $rc$([ $rc -eq 124 ] && echo ', time limit'))" >&2
    failed+=("$name")
  fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >&2 || true

# 0. The copy bandwidth of this GPU, the ceiling docs/perf-notes.md derives the floor from.
copy_tbps="$(timeout 120 python3 - <<'PY' 2>/dev/null
import torch
n = 4 << 30  # 4 GiB each way: far past the L2
a = torch.empty(n, dtype=torch.uint8, device="cuda")
b = torch.empty_like(a)
for _ in range(3):
    b.copy_(a)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
best = 0.0
for _ in range(10):
    s.record(); b.copy_(a); e.record(); e.synchronize()
    best = max(best, 2 * n / (s.elapsed_time(e) / 1e3) / 1e12)
print(f"{best:.2f}")
PY
)" || copy_tbps=""
echo "== device-to-device copy (read + write counted, best of 10): ${copy_tbps:-failed} TB/s" >&2
export ORRERY_BENCH_GPU_COPY_TBPS="$copy_tbps"

# 1. Throughput against world count (buffers up to several times the 60 MB L2).
part orrery-throughput "${LIMIT_ORRERY:-240}" python3 bench/run.py "${bin_args[@]}" --devices cuda --peers none \
  --cases overcooked:cramped_room overcooked:counter_circuit_o_1order --worlds "$worlds" \
  --out "$parts" --name orrery_throughput --section "Overcooked (GPU)"

# 2. Latency at 1,024 worlds: many steps, so launch and synchronisation costs show.
part orrery-1024 "${LIMIT_LATENCY:-60}" python3 bench/run.py "${bin_args[@]}" --devices cuda --peers none \
  --cases overcooked:cramped_room overcooked:counter_circuit_o_1order --worlds 1024 --steps "$us_steps" \
  --role latency --out "$parts" --name orrery_1024 --section "Overcooked (GPU)"

# 3. The megakernel without shared-memory staging (ORRERY_CUDA_STAGE=0), past
#    the L2 only: the "direct stores" rows of docs/perf-notes.md's prediction log.
skip stage0 || part orrery-stage0 "${LIMIT_STAGE0:-120}" env ORRERY_CUDA_STAGE=0 python3 bench/run.py "${bin_args[@]}" \
  --devices cuda --peers none --cases overcooked:cramped_room overcooked:counter_circuit_o_1order \
  --worlds "$([ "${QUICK:-0}" = 1 ] && echo 65536 || echo 262144,4194304)" --role stage0 \
  --out "$parts" --name orrery_stage0 --section "Overcooked (GPU)"

# 4. The peer, same GPU, same session.
skip jaxmarl || part jaxmarl "${LIMIT_JAXMARL:-240}" python3 bench/peer_jaxmarl.py --layouts cramped_room counter_circuit_o_1order \
  --worlds "$jm_worlds" --steps 500 --runs 3 --json "$parts/jaxmarl.json"

# Merge, print the table and the ratios, draw the plot.
inputs=()
for f in orrery_throughput.json orrery_1024.json orrery_stage0.json jaxmarl.json; do
  [ -s "$parts/$f" ] && inputs+=("$parts/$f")
done
if [ ${#inputs[@]} -gt 0 ]; then
  python3 bench/run.py --from-json "${inputs[@]}" --out "$out" --name gpu_bench "${bin_args[@]}" \
    --machine-command "$([ "${QUICK:-0}" = 1 ] && echo "QUICK=1 ")bench/gpu_bench.sh $*" --section "Overcooked (GPU)" \
    --target cuda:cramped_room=1e9@262144 --target cuda:counter_circuit_o_1order=6e8@262144 --latency-target 10 || { failed+=("report"); cp "${inputs[@]}" "$out/"; }
else
  echo "gpu_bench: no records at all" >&2
fi
rm -rf "$parts"
if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu_bench: failed parts: ${failed[*]}" >&2
  exit 1
fi
echo "gpu_bench: results in $out" >&2
