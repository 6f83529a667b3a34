#!/usr/bin/env bash
# Where a GPU step's time goes, kernel by kernel: Nsight Compute times every
# launch of a window of `orrery bench ... --per-node` (one launch per task-graph
# node), and the table sums them by kernel name over the window, with each
# kernel's share of the total, its mean duration, registers and grid.
#
# Usage (on the GPU machine): bench/kernel_breakdown.sh BIN "BENCH ARGS" [...]
#   e.g. bench/kernel_breakdown.sh .ab/main/orrery "hide_and_seek" "physics_scenes --opt scene=crowd"
#   KB_WORLDS  worlds (default: 65536)   KB_SKIP / KB_COUNT  launches skipped / timed (default: 150 / 200)
#   KB_METRICS more Nsight Compute metrics, comma-separated: a column each (mean per launch)
#   KB_PER_NODE  "--per-node" (default) or "" for the env's own form
#   KB_NCU_ARGS  more Nsight Compute options, e.g. "--cache-control none --clock-control none"
#              (by default ncu flushes the caches before each launch, which
#              inflates the small kernels of a small batch)
#   OUT        where the CSVs go (default: ./kernel_breakdown)
set -uo pipefail
bin=$1
shift
out=${OUT:-$PWD/kernel_breakdown}
mkdir -p "$out"
metrics=gpu__time_duration.sum,launch__registers_per_thread,launch__grid_size,launch__block_size
extra=${KB_METRICS:-}
[ -n "$extra" ] && metrics+=,$extra
form=${KB_PER_NODE---per-node}
n=0
for args in "$@"; do
    n=$((n + 1))
    # A warm cache first, so the profiled process compiles nothing.
    # shellcheck disable=SC2086 # a row is a list of bench arguments
    "$bin" bench $args --device cuda $form --worlds 64 --steps 2 >/dev/null 2>&1
    # shellcheck disable=SC2086
    timeout 240 ncu ${KB_NCU_ARGS:-} --csv --print-units base --metrics "$metrics" --launch-skip "${KB_SKIP:-150}" --launch-count "${KB_COUNT:-200}" \
        "$bin" bench $args --device cuda $form --worlds "${KB_WORLDS:-65536}" --steps 40 \
        >"$out/run$n.csv" 2>"$out/run$n.err"
    echo "== $args, ${KB_WORLDS:-65536} worlds, ${form:-own form} (rc $?)"
    python3 - "$out/run$n.csv" "$extra" <<'EOF'
import csv, sys, collections
# Nsight Compute's rows only: the bench's own table line has commas too.
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10 and (r[0] == "ID" or r[0].isdigit())]
if not rows:
    print("no kernels profiled"); sys.exit()
head = rows[0]
k, m, v = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
i = head.index("ID")
launches = collections.defaultdict(dict)
for r in rows[1:]:
    launches[r[i]]["name"] = r[k].split("(")[0]
    launches[r[i]][r[m]] = r[v].replace(",", "")
extra = [m for m in sys.argv[2].split(",") if m]
total = collections.Counter(); count = collections.Counter(); info = {}
more = collections.defaultdict(collections.Counter)
for l in launches.values():
    t = float(l.get("gpu__time_duration.sum", 0))
    total[l["name"]] += t; count[l["name"]] += 1
    for m in extra:
        try: more[l["name"]][m] += float(l.get(m, "nan"))
        except ValueError: pass
    info[l["name"]] = (l.get("launch__registers_per_thread"), l.get("launch__grid_size"), l.get("launch__block_size"))
s = sum(total.values())
print(f"{'kernel':48s} {'launches':>8s} {'share':>7s} {'mean us':>10s} {'regs':>5s} {'grid':>8s} {'block':>6s}"
      + "".join(f" {m}" for m in extra))
for name, t in total.most_common():
    r, g, b = info[name]
    print(f"{name[:48]:48s} {count[name]:8d} {100*t/s:6.1f}% {t/count[name]/1e3:10.1f} {r:>5s} {g:>8s} {b:>6s}"
          + "".join(f" {more[name][m] / count[name]:.4g}" for m in extra))
print(f"sum over {len(launches)} launches: {s/1e6:.3f} ms")
EOF
done
