"""Tabulates the ``summary:`` lines that examples/ippo_overcooked.py prints.

    python bench/ppo_table.py bench/results/ppo_gpu/*.log
    python bench/ppo_table.py --target 200 LOG...

One row per run (layout, seed, seconds from process start to the first mean
sparse return >= target, env steps then, final and best return, the mean
return of the last million env steps, env steps,
env-steps/s), then the median per layout of the runs that reached the target (runs whose
file name starts with "cold", made with an empty kernel cache, left out), then
the start-up of each run from its ``startup:`` line: when each stage was
reached, in seconds from process start (STARTUP_STAGES; the env is made on a
thread while torch imports, so "env_native" and "torch" overlap).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys


def parse_summary(line: str) -> dict:
    """The key=value fields of one summary line."""
    return dict(re.findall(r"(\S+?)=(\S+)", line.split("summary:", 1)[1]))


# The stages of examples/ippo_overcooked.py's startup line, in the order they usually come.
STARTUP_STAGES = ("script", "orrery", "env_native", "torch", "device", "env", "model", "first_iteration", "captured",
                  "first_row")


def parse_startup(line: str) -> dict:
    """stage -> seconds from process start (and env_native_s) of one startup line."""
    return {k: float(v) for k, v in re.findall(r"(\S+?)=(\S+)", line.split("startup:", 1)[1])}


def read_runs(paths):
    runs = []
    for path in paths:
        startup = None
        with open(path) as f:
            for line in f:
                if line.startswith("startup:"):
                    startup = parse_startup(line)
                if line.startswith("summary:"):
                    run = parse_summary(line)
                    run["file"] = path
                    run["startup"] = startup
                    runs.append(run)
    return runs


def number(text: str):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def table(runs, target: str) -> str:
    key_s, key_steps = f"first_{target}_s", f"first_{target}_steps"
    rows = [f"| run | layout | rules | seed | graphs | s to {target} (from process start) | env steps at {target} | "
            "final return | best return | return over the last 1 M steps | env steps | env-steps/s |",
            "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(runs, key=lambda r: (r.get("layout", ""), r.get("rules", ""), int(r.get("seed", 0)))):
        s, steps = number(r.get(key_s, "none")), number(r.get(key_steps, "none"))
        name = os.path.splitext(os.path.basename(r["file"]))[0]
        rows.append(f"| {name} | {r.get('layout')} | {r.get('rules')} | {r.get('seed')} | {r.get('graphs')} | "
                    f"{'-' if s is None else f'{s:.1f}'} | {'-' if steps is None else f'{steps / 1e6:.2f} M'} | "
                    f"{r.get('final_return')} | {r.get('best_return')} | {r.get('last_1m_return', '-')} | {number(r.get('steps', '0')) / 1e6:.2f} M | "
                    f"{r.get('sps')} |")
    lines = ["\n".join(rows), ""]
    for layout, rules in sorted({(r.get("layout"), r.get("rules")) for r in runs}):
        mine = [r for r in runs if (r.get("layout"), r.get("rules")) == (layout, rules)
                and not os.path.basename(r["file"]).startswith("cold")]
        hit = [r for r in mine if number(r.get(key_s, "none")) is not None]
        if hit:
            med_s = statistics.median(number(r[key_s]) for r in hit)
            med_steps = statistics.median(number(r[key_steps]) for r in hit)
            lines.append(f"- {layout} ({rules} rules): {len(hit)} of {len(mine)} runs reached {target}; "
                         f"median {med_s:.1f} s from process start, {med_steps / 1e6:.2f} M env steps")
        else:
            lines.append(f"- {layout} ({rules} rules): none of {len(mine)} runs reached {target}")
    timed = [r for r in runs if r.get("startup")]
    if timed:
        lines += ["", "Start-up (s from process start at which each stage was reached; env_native_s: the simulator's "
                      "own start, on the thread):", "",
                  "| run | " + " | ".join(STARTUP_STAGES) + " | env_native_s |",
                  "|---|" + "---:|" * (len(STARTUP_STAGES) + 1)]
        for r in sorted(timed, key=lambda r: os.path.basename(r["file"])):
            st = r["startup"]
            cells = [f"{st[k]:.2f}" if k in st else "-" for k in STARTUP_STAGES + ("env_native_s",)]
            lines.append(f"| {os.path.splitext(os.path.basename(r['file']))[0]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("logs", nargs="+")
    p.add_argument("--target", default="200")
    args = p.parse_args(argv)
    runs = read_runs(args.logs)
    if not runs:
        print("ppo_table: no summary lines in " + " ".join(args.logs), file=sys.stderr)
        return 1
    print(table(runs, args.target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
