"""Sums the `phys-phases` lines a clocked simulate prints (bench/phys_phases.sh).

Each line is one world's step: its sizes, then the SM cycles of each phase
(phys::Phase's order). Prints the mean cycles per step, each phase's share,
and the mean sizes, over the lines after the first quarter (the warm-up).
"""

import sys

PHASES = ["gather", "begin", "pairs", "narrow", "order", "make", "align", "integrate", "warm", "solve", "relax", "end", "scatter"]


def own_cycles(row):
    """A line's cycles of each phase but the align phase (the others' wait)."""
    align = PHASES.index("align")
    return [c for k, c in enumerate(row[1]) if k != align]


def hint(j):
    """step_cost's shape (the hint the GPU orders by) with joint weight j."""
    return lambda s: 2 * s["points"] + s["awake"] + j * s["joints"] + 4 * s["colours"]


# Cost keys of a step's sizes.
SIZE_KEYS = {
    "rounds": lambda s: s["rounds"],
    "rounds + serial": lambda s: s["rounds"] + s["serial"],
    "rounds + 4 joints": lambda s: s["rounds"] + 4 * s["joints"],
    "colours + serial + 4 joints": lambda s: s["colours"] + s["serial"] + 4 * s["joints"],
    "points": lambda s: s["points"],
    **{f"2 points + awake + {j} joints + 4 colours": hint(j) for j in (16, 8, 4, 0)},
}


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
    # Each row's step before in the same world (None for a world's first line): the
    # GPU orders a step's worlds by what the step before left (Ctx::cost_hint).
    last, prev = {}, []
    for r in rows:
        prev.append(last.get(r[0]["world"]))
        last[r[0]["world"]] = r
    slowest(rows)
    rows, prev = rows[len(rows) // 4 :], prev[len(rows) // 4 :]
    n = len(rows)
    mean = [sum(r[1][k] for r in rows) / n for k in range(len(PHASES))]
    total = sum(mean)
    print(f"  {n} world-steps, mean {total:,.0f} cycles a step")
    for k, name in enumerate(PHASES):
        print(f"  {name:<10} {mean[k]:>12,.0f} {100 * mean[k] / total:6.1f} %")
    keys = [k for k in rows[0][0] if k != "world"]
    print("  sizes: " + ", ".join(f"{k} {sum(r[0][k] for r in rows) / n:.1f}" for k in keys))
    if "cost" in rows[0][0]:
        # A pass's cost in points (the clocked simulate's `cost`: over the
        # rounds of its colours, the round's largest constraint): the pass
        # phases' cycles over it, a step's substeps together (divide by the
        # substeps for one pass's cycles a point).
        cost = sum(r[0]["cost"] for r in rows)
        if cost:
            print("  cycles a point of pass cost, the step's substeps together: " + ", ".join(
                f"{name} {sum(r[1][PHASES.index(name)] for r in rows) / cost:,.0f}" for name in ("warm", "solve", "relax")))
    same_step = {name: [key(r[0]) for r in rows] for name, key in SIZE_KEYS.items()}
    same_step["own cycles (oracle)"] = [sum(own_cycles(r)) for r in rows]
    for team in (12, 16):
        balance(rows, same_step, team)
    # The same model with keys the GPU can have: the step before's, as its order takes them.
    lagged = [(r, p) for r, p in zip(rows, prev) if p is not None]
    if lagged:
        print(f"  keys from the step before (what the GPU's order can use), {len(lagged)} world-steps:")
        before = {
            "the step before's 2 points + awake + 16 joints + 4 colours": [hint(16)(p[0]) for _, p in lagged],
            "the step before's own cycles": [sum(own_cycles(p)) for _, p in lagged],
            "own cycles (oracle)": [sum(own_cycles(r)) for r, _ in lagged],
        }
        balance([r for r, _ in lagged], before, 16)


def slowest(rows):
    """With a line from every world (ORRERY_PHYS_CLOCKS_EVERY=1), the step's
    slowest world: at a batch of one wave its chain is the kernel's, since a
    block's aligned teams wait for it. A world's k-th line is its k-th step;
    steps in the first quarter are dropped as warm-up, and so is any step
    with lines from fewer than half the worlds."""
    steps, seen = {}, {}
    for r in rows:
        w = r[0]["world"]
        k = seen.get(w, 0)
        seen[w] = k + 1
        steps.setdefault(k, []).append(r)
    worlds = len(seen)
    if worlds < 64:
        return
    keep = [k for k in sorted(steps) if k >= len(steps) // 4 and len(steps[k]) * 2 >= worlds]
    if not keep:
        return
    own = lambda r: sum(own_cycles(r))
    align = PHASES.index("align")
    tops, medians, p90s, split, sizes = [], [], [], [0.0] * len(PHASES), {}
    for k in keep:
        v = sorted(steps[k], key=own)
        top = v[-1]
        tops.append(own(top))
        medians.append(own(v[len(v) // 2]))
        p90s.append(own(v[(9 * len(v)) // 10]))
        for j, c in enumerate(top[1]):
            split[j] += c / len(keep)
        for name, x in top[0].items():
            if name != "world":
                sizes[name] = sizes.get(name, 0) + x / len(keep)
    mean = lambda a: sum(a) / len(a)
    print(f"  the slowest world of each of {len(keep)} steps ({worlds} worlds): own cycles max {mean(tops):,.0f}, "
          f"p90 {mean(p90s):,.0f}, median {mean(medians):,.0f} (means over the steps)")
    print("  its phases: " + ", ".join(f"{name} {split[j]:,.0f}" for j, name in enumerate(PHASES) if j != align))
    print("  its sizes: " + ", ".join(f"{name} {x:.1f}" for name, x in sizes.items()))


def balance(rows, keys, team=16, seed=1):
    """What grouping a block's teams by a cost key could save: a block of
    `team` worlds takes about the sum over phases of its slowest world's own
    cycles (the align phase is the others' wait), so blocks of random worlds
    (as today) and blocks of worlds sorted by each key (name: a value per
    row) are compared. A model, not a measurement: the aligns come per
    substep and per pass, where this sums whole steps."""
    import random

    own = [own_cycles(r) for r in rows]

    def cost(order):
        total = 0
        for b in range(0, len(order) - team + 1, team):
            block = order[b : b + team]
            total += sum(max(own[i][k] for i in block) for k in range(len(own[0])))
        return total / (len(order) // team)

    idx = list(range(len(rows)))
    random.Random(seed).shuffle(idx)
    base = cost(idx)
    mean_total = sum(sum(r[1]) for r in rows) / len(rows)
    print(f"  blocks of {team}: measured {mean_total:,.0f} cycles a step; model, random blocks {base:,.0f}")
    this_step = [sum(o) for o in own]
    for name, v in keys.items():
        order = sorted(idx, key=lambda i: (v[i], i))
        c = cost(order)
        print(f"  sorted by {name:<58} {c:>12,.0f}  {100 * (base / c - 1):+6.1f} % a block, r {correlation(v, this_step):.2f}")


def correlation(a, b):
    """Pearson's r of two lists (a key against the step's own cycles)."""
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    sab = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    saa, sbb = sum((x - ma) ** 2 for x in a), sum((y - mb) ** 2 for y in b)
    return sab / (saa * sbb) ** 0.5 if saa > 0 and sbb > 0 else 0.0


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
