"""Plots the learning curves that examples/ippo_overcooked.py writes with --csv:
mean team sparse return against seconds from process start and against env
steps, one line per CSV, with JaxMARL's IPPO milestones on cramped_room (one
H200; docs/python.md gives the source) as reference marks.

    python bench/plot_ppo.py --out docs/benchmarks/ippo-cramped-room-gpu.png bench/results/ppo_gpu/cramped_room_s*.csv
    python bench/plot_ppo.py --no-jaxmarl-time --title "CPU" --out docs/benchmarks/ippo-cramped-room-cpu.png runs/*.csv

Needs matplotlib (not needed by the trainer).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

# JaxMARL IPPO (FLAIROx/JaxMARL c793d095, ippo_ff_overcooked with its yaml) on one H200,
# cramped_room, median of 5 seeds: (label, env steps, seconds from a cold process).
JAXMARL = [("JaxMARL: return 200", 846e3, 26.0), ("JaxMARL: plateau 240", 1.1e6, 28.0)]


def read_curve(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return ([float(r["wall_s"]) for r in rows], [float(r["env_steps"]) for r in rows],
            [float(r["sparse_return"]) for r in rows])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csvs", nargs="+")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--title", default="IPPO self-play, cramped_room")
    p.add_argument("--no-jaxmarl", action="store_true", help="leave out JaxMARL's reference marks")
    p.add_argument("--no-jaxmarl-time", action="store_true",
                   help="leave out JaxMARL's marks on the time axis (they are H200 seconds; for other hardware)")
    args = p.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_ppo: needs matplotlib (pip install matplotlib)", file=sys.stderr)
        return 1
    fig, (by_time, by_steps) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    for path in args.csvs:
        wall, steps, ret = read_curve(path)
        label = os.path.splitext(os.path.basename(path))[0]
        line, = by_time.plot(wall, ret, linewidth=1.2, label=label)
        by_steps.plot([s / 1e6 for s in steps], ret, linewidth=1.2, color=line.get_color(), label=label)
    if not args.no_jaxmarl:
        for label, steps, seconds in JAXMARL:
            marker = "*" if "200" in label else "D"
            if not args.no_jaxmarl_time:
                by_time.plot([seconds], [200 if "200" in label else 240], marker, color="black", label=label)
            by_steps.plot([steps / 1e6], [200 if "200" in label else 240], marker, color="black", label=label)
    for ax, xlabel in ((by_time, "seconds from process start"), (by_steps, "env steps (millions)")):
        ax.axhline(200, color="grey", linestyle=":", linewidth=0.8)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("mean team sparse return")
        ax.grid(True, alpha=0.3)
    by_steps.legend(fontsize=7, loc="lower right")
    fig.suptitle(args.title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
