"""Sums the `phys-phases` lines a clocked simulate prints (bench/phys_phases.sh).

Each line is one world's step: its sizes, then the SM cycles of each phase
(phys::Phase's order). Prints the mean cycles per step, each phase's share,
and the mean sizes, over the lines after the first quarter (the warm-up).
"""

import sys

PHASES = ["gather", "begin", "pairs", "narrow", "order", "make", "align", "integrate", "warm", "solve", "relax", "end", "scatter"]


def main(path):
    rows = []
    with open(path) as f:
        for line in f:
            if not line.startswith("phys-phases "):
                continue
            w = line.split()
            sizes = {w[i]: int(w[i + 1]) for i in range(1, w.index("cycles"), 2)}
            cycles = [int(x) for x in w[w.index("cycles") + 1 :]]
            if len(cycles) != len(PHASES):
                continue
            rows.append((sizes, cycles))
    if not rows:
        print("  no phys-phases lines (built without ORRERY_PHYS_CLOCKS?)")
        return
    rows = rows[len(rows) // 4 :]
    n = len(rows)
    mean = [sum(r[1][k] for r in rows) / n for k in range(len(PHASES))]
    total = sum(mean)
    print(f"  {n} world-steps, mean {total:,.0f} cycles a step")
    for k, name in enumerate(PHASES):
        print(f"  {name:<10} {mean[k]:>12,.0f} {100 * mean[k] / total:6.1f} %")
    keys = [k for k in rows[0][0] if k != "world"]
    print("  sizes: " + ", ".join(f"{k} {sum(r[0][k] for r in rows) / n:.1f}" for k in keys))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
