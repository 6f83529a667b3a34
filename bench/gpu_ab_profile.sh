#!/usr/bin/env bash
# Where two source trees' steps differ on the GPU: Nsight Compute reads every
# kernel launch of a window of steps (duration, instructions, DRAM bytes,
# registers, shared memory, grid) for each tree, env and world count, and
# prints them side by side; then one step kernel per tree at the first world
# count is profiled in full (warp states and per-SASS-instruction samples) for
# a diff. Companion of bench/gpu_ab.sh, which times the same trees.
#
# Usage (on the GPU machine): bench/gpu_ab_profile.sh LABEL=DIR [LABEL=DIR ...]
#   PROF_ENVS    "env[:layout] ..."  (default: overcooked:cramped_room tag)
#   PROF_WORLDS  world counts, space-separated (default: "1024 1048576")
#   OUT          where the CSVs and reports go (default: ./ab_profile)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
envs=${PROF_ENVS:-"overcooked:cramped_room tag"}
worlds=${PROF_WORLDS:-"1024 1048576"}
out=${OUT:-$PWD/ab_profile}
mkdir -p "$out"
prefix=""
[ -d "$root/.gpu_deps/prefix" ] && prefix="$root/.gpu_deps/prefix"
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__grid_size,launch__block_size
labels=() bins=()
for spec in "$@"; do
  label=${spec%%=*} dir=$(cd "${spec#*=}" && pwd)
  build=/tmp/orrery_ab_$label
  if cmake -S "$dir" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DORRERY_BUILD_PYTHON=OFF \
       -DORRERY_BUILD_TESTS=OFF "-DCMAKE_PREFIX_PATH=$prefix" >"$build.log" 2>&1 &&
     cmake --build "$build" --target orrery_cuda_bench >>"$build.log" 2>&1; then
    bin="$build/bench/orrery_cuda_bench"
    [ -f "$dir/bench/cuda_bench.cpp" ] || bin="$build/engine/cuda/orrery_cuda_bench"
    labels+=("$label") bins+=("$bin")
  else
    echo "build of $label FAILED:"; tail -20 "$build.log"
  fi
done
run_bench() { # tree-index env-spec worlds steps: the bench's argument list
  local e=$2 env=${2%%:*} layout=()
  [[ $e == *:* ]] && layout=(--layout "${e#*:}")
  echo "${bins[$1]}" --env "$env" "${layout[@]}" --worlds "$3" --steps "$4" --only staged
}
# Per-launch metrics over 24 launches after 60 of warm-up, summarised per kernel name.
printf "%-8s %-24s %8s %-24s %5s %10s %12s %10s %10s %4s %6s %8s\n" tree env worlds kernel n median_us inst_exec \
    dram_rd_MB dram_wr_MB reg smem grid
for e in $envs; do
  for n in $worlds; do
    for i in "${!labels[@]}"; do
      csv="$out/${labels[$i]}_${e//:/_}_$n.csv"
      # shellcheck disable=SC2046
      ORRERY_CACHE_DIR=/tmp/orrery_prof_cache_${labels[$i]} ncu --clock-control none --csv --metrics "$metrics" \
          --launch-skip 60 --launch-count 24 $(run_bench "$i" "$e" "$n" 100) >"$csv" 2>"$csv.log"
      python3 - "$csv" "${labels[$i]}" "$e" "$n" <<'EOF'
import csv, statistics, sys
path, tree, env, n = sys.argv[1:]
rows = [r for r in csv.reader(open(path)) if len(r) > 10]
if not rows:
    print(f"{tree:8} {env:24} {n:>8} (no ncu rows; see {path}.log)"); sys.exit()
head = rows[0]; col = {k: head.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")}
scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
per = {}
for r in rows[1:]:
    v = float(r[col["Metric Value"]].replace(",", "")) * scale.get(r[col["Metric Unit"]], 1.0)
    per.setdefault((r[col["Kernel Name"]], r[col["ID"]]), {})[r[col["Metric Name"]]] = v
by = {}
for (name, _), m in per.items(): by.setdefault(name, []).append(m)
for name, ms in by.items():
    med = lambda k: statistics.median(m.get(k, 0.0) for m in ms)
    print(f"{tree:8} {env:24} {n:>8} {name[:24]:24} {len(ms):5} {med('gpu__time_duration.sum'):10.2f} "
          f"{med('smsp__inst_executed.sum'):12.0f} {med('dram__bytes_read.sum') / 1e6:10.2f} "
          f"{med('dram__bytes_write.sum') / 1e6:10.2f} {med('launch__registers_per_thread'):4.0f} "
          f"{med('launch__shared_mem_per_block_dynamic'):6.0f} {med('launch__grid_size'):8.0f}")
EOF
    done
  done
done
# One step kernel per tree in full, at the first env and world count, for a SASS-level diff.
e=${envs%% *} n=${worlds%% *}
for i in "${!labels[@]}"; do
  rep="$out/${labels[$i]}_full"
  # shellcheck disable=SC2046
  ORRERY_CACHE_DIR=$(mktemp -d) ncu --clock-control none --kernel-name regex:orrery_step --launch-skip 40 \
      --launch-count 1 --section SourceCounters --section WarpStateStats --section SpeedOfLight \
      --section LaunchStats --section Occupancy -f -o "$rep" $(run_bench "$i" "$e" "$n" 60) >"$rep.log" 2>&1
  ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.sass.csv" 2>>"$rep.log"
  ncu -i "$rep.ncu-rep" --page details >"$rep.details.txt" 2>>"$rep.log"
  echo "== ${labels[$i]} full profile: $e, $n worlds"
  grep -E "Duration|Elapsed Cycles|Warp Cycles Per Issued|Executed Ipc|Achieved Occupancy|Registers Per|Stall" \
      "$rep.details.txt" | head -12
done
