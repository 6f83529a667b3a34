#!/usr/bin/env bash
# Tutorial-env (tag) throughput on the CPU at 1, 1,024 and 65,536 worlds with 1
# and 2 threads; prints a markdown table and writes bench/results/tutorial.json.
# Usage: bench/tutorial.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$root/build/release}/tools/orrery"
mkdir -p "$root/bench/results"
out="$root/bench/results/tutorial.json"
echo "[" > "$out"
first=1
printf '| threads | worlds | steps | seconds | env-steps/s |\n|---:|---:|---:|---:|---:|\n'
for threads in 1 2; do
  tmp="$(mktemp)"
  "$bin" bench tag --device cpu --threads "$threads" --worlds 1,1024,65536 --json "$tmp" >/dev/null
  python3 - "$tmp" "$threads" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    print(f"| {sys.argv[2]} | {r['num_worlds']:,} | {r['steps']:,} | {r['seconds']:.3f} | {r['env_steps_per_s']:,.0f} |")
PY
  body="$(python3 -c 'import json,sys; print(",\n".join(json.dumps(dict(r, threads=int(sys.argv[2]))) for r in json.load(open(sys.argv[1]))))' "$tmp" "$threads")"
  [ $first -eq 1 ] || echo "," >> "$out"
  printf '%s' "$body" >> "$out"
  first=0
  rm -f "$tmp"
done
printf '\n]\n' >> "$out"
