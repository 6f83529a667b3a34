#!/usr/bin/env bash
# Issue #17 items 2-4 on one GPU, unattended: examples/ippo_overcooked.py with
# its default hyperparameters on cramped_room (seeds 1-5, under JaxMARL's rules
# and under overcooked_ai's) and on the other four classic layouts (seed 1,
# JaxMARL's rules), each run stopped by a wall-clock limit counted from its
# process start. Prints a table (bench/ppo_table.py) and leaves each run's log
# and CSV in $OUT/ppo_gpu (default bench/results/ppo_gpu).
#
# The first run uses an empty NVRTC kernel cache (what a first start costs);
# then one short run per layout fills the cache in ORRERY_CACHE_DIR, and every
# timed run after it starts warm. Needs torch with CUDA and the orrery package
# (pip install --no-build-isolation .); no network, gymnasium or tensorboard.
#
# Each run's log holds its "startup:" line (when each start-up stage was
# reached, seconds from process start) and, with ORRERY_VERBOSE=1, the kernel
# cache's load time; the table at the end has one start-up row per run.
#
# Usage, from the repository root (each PART fits in 10 minutes):
#   PART=cramped bash bench/ppo_gpu.sh   # cold run, then 5 seeds x 2 rule sets on cramped_room, 15 s each (~4 min)
#   PART=others bash bench/ppo_gpu.sh    # the other four layouts, 60 s each (~4.5 min)
#   bash bench/ppo_gpu.sh                # both (~9 min)
#   SEEDS="1 2" CR_LIMIT=30 OTHER_LIMIT=60 CR_RULES=jaxmarl OTHER_RULES=overcooked_ai EXTRA="--num-worlds 128" ...
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-$root/bench/results}/ppo_gpu"
mkdir -p "$out"
py=${PYTHON:-python}
part=${PART:-all}
seeds=${SEEDS:-1 2 3 4 5}
cr_limit=${CR_LIMIT:-15}
cr_rules=${CR_RULES:-jaxmarl overcooked_ai}
other_rules=${OTHER_RULES:-jaxmarl}
other_limit=${OTHER_LIMIT:-60}
others=${LAYOUTS:-asymmetric_advantages coordination_ring forced_coordination counter_circuit_o_1order}
extra=${EXTRA:-}
export PYTHONUNBUFFERED=1
export ORRERY_VERBOSE=1  # the log says how long the kernel took to load (or compile)
export ORRERY_CACHE_DIR="${ORRERY_CACHE_DIR:-$out/kernel_cache}"
trainer=examples/ippo_overcooked.py

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
git rev-parse --short HEAD > "$out/commit.txt" 2>/dev/null || echo "no git here" > "$out/commit.txt"

run() { # name, trainer args...
    local name=$1; shift
    echo "== $name: $py $trainer $* $extra"
    # shellcheck disable=SC2086
    $py $trainer "$@" --total-timesteps 1000000000 --quiet --csv "$out/$name.csv" $extra > "$out/$name.log" 2>&1
    grep -h "summary:" "$out/$name.log" || { echo "   failed:"; tail -5 "$out/$name.log"; }
}

warm() { # layout, rules: one iteration to fill the kernel cache
    # shellcheck disable=SC2086
    $py $trainer --layout "$1" --rules "$2" --total-timesteps 1 --quiet $extra > "$out/warm_$1.txt" 2>&1 ||
        { echo "warm-up of $1 failed:"; tail -5 "$out/warm_$1.txt"; }
}

if [ "$part" = all ] || [ "$part" = cramped ]; then
    first_rules=${cr_rules%% *}
    cold_cache="$(mktemp -d)"
    ORRERY_CACHE_DIR="$cold_cache" run "cold_cramped_room_${first_rules}_s1" --layout cramped_room \
        --rules "$first_rules" --seed 1 --time-limit "$cr_limit"
    rm -rf "$cold_cache"
    for rules in $cr_rules; do
        warm cramped_room "$rules"
        for seed in $seeds; do
            run "cramped_room_${rules}_s$seed" --layout cramped_room --rules "$rules" --seed "$seed" \
                --time-limit "$cr_limit"
        done
    done
fi
if [ "$part" = all ] || [ "$part" = others ]; then
    for layout in $others; do
        warm "$layout" "$other_rules"
        run "${layout}_${other_rules}_s1" --layout "$layout" --rules "$other_rules" --seed 1 --time-limit "$other_limit"
    done
fi
echo
echo "== results ($(cat "$out/gpu.txt"), commit $(cat "$out/commit.txt"))"
$py bench/ppo_table.py "$out"/*.log
