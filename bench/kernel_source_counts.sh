#!/usr/bin/env bash
# Per-SASS-instruction execution counts of one step kernel, for each of
# several prebuilt `orrery` binaries (Nsight Compute's SourceCounters of one
# launch), summed into: warp instructions, thread instructions, threads per
# warp instruction, and the most executed instructions with their threads.
# Threads per warp instruction falling while thread instructions stay the
# same means the warp's lanes run apart (how docs/benchmarks.md found the
# step-scratch regression: 13.3 against 8.4 in `phys::simulate`).
#
# Usage (on the GPU machine): bench/kernel_source_counts.sh LABEL=BIN [LABEL=BIN ...]
#   KSC_ARGS    bench arguments (default: "hide_and_seek --opt variant=gpu_hideseek --per-node")
#   KSC_KERNEL  kernel name (default: orrery_step_op8, phys::simulate in the per-node form)
#   KSC_WORLDS  worlds (default: 16384)
#   OUT         where the reports and CSVs go (default: ./kernel_source_counts)
#   KSC_LINES=1 the kernel compiled with -lineinfo, so that bench/sass_lines.py
#               can sum the CSV per source line on a machine without a GPU
#               (through the same program compiled there with -lineinfo)
#   KSC_SECTIONS more Nsight Compute sections of the same launch, printed as
#               their details page (e.g. "WarpStateStats Occupancy
#               LaunchStats MemoryWorkloadAnalysis": why the warps stall,
#               how many are resident, where the loads hit)
set -uo pipefail
args=${KSC_ARGS:-"hide_and_seek --opt variant=gpu_hideseek --per-node"}
kernel=${KSC_KERNEL:-orrery_step_op8}
out=${OUT:-$PWD/kernel_source_counts}
mkdir -p "$out"
for spec in "$@"; do
    label=${spec%%=*} bin=${spec#*=}
    export ORRERY_CACHE_DIR=/tmp/orrery_ksc_cache_$label
    if [ "${KSC_LINES:-0}" = 1 ]; then
        export ORRERY_CACHE_DIR=/tmp/orrery_ksc_lines_cache_$label \
            ORRERY_NVRTC_OPTIONS="${ORRERY_NVRTC_OPTIONS:+$ORRERY_NVRTC_OPTIONS }-lineinfo"
    fi
    # shellcheck disable=SC2086 # a list of bench arguments
    "$bin" bench $args --device cuda --worlds 64 --steps 2 >/dev/null 2>&1 # a warm cache first
    # shellcheck disable=SC2086
    sections=(--section SourceCounters)
    for sec in ${KSC_SECTIONS:-}; do sections+=(--section "$sec"); done
    timeout 240 ncu --set none "${sections[@]}" -k "regex:^$kernel\$" --launch-skip 3 --launch-count 1 -f \
        -o "$out/$label" "$bin" bench $args --device cuda --worlds "${KSC_WORLDS:-16384}" --steps 8 \
        >"$out/$label.log" 2>&1 || { echo "$label: ncu failed"; tail -3 "$out/$label.log"; continue; }
    ncu -i "$out/$label.ncu-rep" --page source --csv --print-source sass >"$out/$label.csv" 2>/dev/null
    [ -n "${KSC_SECTIONS:-}" ] && ncu -i "$out/$label.ncu-rep" --page details >"$out/$label.details.txt" 2>&1
    echo "== $label ($kernel, $args)"
    python3 - "$out/$label.csv" <<'EOF'
import csv, sys
rows, head = [], None
for r in csv.reader(open(sys.argv[1])):
    if r and r[0] == "Address":
        head = r
    elif head and len(r) == len(head):
        rows.append(dict(zip(head, r)))
if not rows:
    sys.exit("no SASS rows")
num = lambda x, k: float(x[k] or 0)
warp = sum(num(x, "Instructions Executed") for x in rows)
thread = sum(num(x, "Thread Instructions Executed") for x in rows)
print(f"warp instructions {warp:.4g}, thread instructions {thread:.4g}, threads per warp instruction {thread / warp:.2f}")
for x in sorted(rows, key=lambda x: -num(x, "Instructions Executed"))[:8]:
    print(f"  {num(x, 'Instructions Executed'):>12.0f} x {x['Avg. Threads Executed']:>5s} threads  {x['Source'].strip()[:60]}")
EOF
    [ -n "${KSC_SECTIONS:-}" ] && grep -vE "^ *(-+|Section:.*)$" "$out/$label.details.txt" | grep -E "^ +[A-Z]" | head -80
    [ "${KSC_LINES:-0}" = 1 ] && echo "  per source line: python bench/sass_lines.py DIR/$kernel.cu.cubin $out/$label.csv --caller" \
        "(DIR from ORRERY_DUMP_SOURCE=DIR ORRERY_NVRTC_OPTIONS=-lineinfo orrery_cuda_bench --compile --per-node ...)"
done
