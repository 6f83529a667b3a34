"""How far the solver's greedy colouring is from the fewest colours a step allows.

Reads the `phys-graph` lines (and the `phys-phases` lines beside them) that a
host build with ORRERY_PHYS_CLOCKS, ORRERY_PHYS_CLOCKS_EVERY=1 and
ORRERY_PHYS_GRAPH prints for every world and step:

    cmake -S . -B /tmp/clk -G Ninja -DCMAKE_BUILD_TYPE=Release -DORRERY_BUILD_TESTS=OFF -DORRERY_PGO=OFF \\
        "-DCMAKE_CXX_FLAGS=-DORRERY_PHYS_CLOCKS=1 -DORRERY_PHYS_CLOCKS_EVERY=1 -DORRERY_PHYS_GRAPH=1"
    ninja -C /tmp/clk orrery_cli
    /tmp/clk/tools/orrery bench hide_and_seek --device cpu --worlds 1024 --threads 1 --steps 24 > LOG
    python bench/phys_colouring.py LOG

A colour's constraints share no dynamic body, so a step needs at least as
many colours as its busiest dynamic body has constraints (its degree, Delta).
On a GPU a world's warp takes a colour's constraints a lane each, a pair's
points in turn on its lane, so a pass costs about the sum over colours of the
colour's largest pair (in points; a joint counted as 8). For each step this
prints, over the worlds, the mean and the largest (each figure's own
largest: the slowest world's set a one-wave batch's kernel) of: Delta, the colours of the solver's order
(checked against the phases line), and both figures for two other greedy
orders, the busiest bodies' constraints first and the largest pairs first,
and the solver's order's dataflow chain: the longest run of constraints
through shared bodies, the least any schedule of the same per-body order
(the same bits) could make a pass cost.
"""

import collections
import sys

COLOURS = 24  # phys::kColours
JOINT_POINTS = 8  # a joint's lane runs about 8 times a point's instructions (docs/perf-notes.md row 55)


def parse(path):
    graphs, colours = [], []
    with open(path) as f:
        for line in f:
            if line.startswith("phys-graph "):
                w = line.split()
                cons = []
                for t in w[3:]:
                    kind, a, b, n = t.split(":")
                    cons.append((kind, int(a), int(b), int(n)))
                graphs.append((int(w[2]), cons))
            elif line.startswith("phys-phases "):
                w = line.split()
                colours.append(int(w[w.index("colours") + 1]))
    return graphs, colours


def weight(c):
    return JOINT_POINTS if c[0] == "j" else c[3]


def greedy(cons, order):
    """phys::pick_colour over `order`: the lowest colour neither dynamic body has."""
    used, colour = collections.defaultdict(int), {}
    for i in order:
        _, a, b, _ = cons[i]
        taken = (used[a] if a >= 0 else 0) | (used[b] if b >= 0 else 0)
        c = 0
        while c < COLOURS and (taken >> c) & 1:
            c += 1
        if c < COLOURS:
            if a >= 0:
                used[a] |= 1 << c
            if b >= 0:
                used[b] |= 1 << c
        colour[i] = c
    return colour


def pass_cost(cons, colour):
    """(sum over colours of the colour's largest constraint, colours used)."""
    largest = collections.defaultdict(int)
    for i, c in colour.items():
        largest[c] = max(largest[c], weight(cons[i]))
    return sum(largest.values()), len(largest)


def dataflow_cost(cons, colour):
    """The longest chain of constraints through shared dynamic bodies, in
    points (a joint as 8), with each body meeting its constraints in the
    colour order: what a pass would cost if each constraint started as soon
    as its bodies' earlier constraints were done, with no wait for the rest
    of its colour. The same order on every body, so the same bits as the
    colour-by-colour pass; the bound below which no schedule of this
    Gauss-Seidel order can go."""
    finish, longest = collections.defaultdict(int), 0
    for i in sorted(colour, key=lambda i: (colour[i], i)):
        _, a, b, _ = cons[i]
        end = max(finish[a] if a >= 0 else 0, finish[b] if b >= 0 else 0) + weight(cons[i])
        for x in (a, b):
            if x >= 0:
                finish[x] = end
        longest = max(longest, end)
    return longest


def main(path):
    graphs, colours = parse(path)
    if not graphs:
        print("  no phys-graph lines (built without ORRERY_PHYS_GRAPH and ORRERY_PHYS_CLOCKS_EVERY=1?)")
        return
    steps, seen, mismatches = collections.defaultdict(list), {}, 0
    for g, (world, cons) in enumerate(graphs):
        k = seen.get(world, 0)
        seen[world] = k + 1
        degree = collections.Counter()
        for _, a, b, _ in cons:
            degree.update(x for x in (a, b) if x >= 0)
        busiest = lambda i: max(degree.get(cons[i][1], 0), degree.get(cons[i][2], 0))
        orders = {
            "solver's order": range(len(cons)),
            "busiest bodies first": sorted(range(len(cons)), key=lambda i: (-busiest(i), -weight(cons[i]), i)),
            "largest pairs first": sorted(range(len(cons)), key=lambda i: (-weight(cons[i]), -busiest(i), i)),
        }
        row = {"Delta": max(degree.values(), default=0)}
        for name, order in orders.items():
            colour = greedy(cons, order)
            cost, used = pass_cost(cons, colour)
            row[f"{name}: colours"], row[f"{name}: pass cost"] = used, cost
            if name == "solver's order":
                row["solver's order: dataflow chain"] = dataflow_cost(cons, colour)
        if g < len(colours) and row["solver's order: colours"] != colours[g]:
            mismatches += 1
        steps[k].append(row)
    keep = [k for k in sorted(steps) if k >= len(steps) // 4]
    print(f"  {len(seen)} worlds, {len(keep)} steps after the first quarter; "
          f"colours unlike the phases line's: {mismatches} of {len(graphs)}")
    for key in steps[keep[0]][0]:
        mean = sum(sum(r[key] for r in steps[k]) / len(steps[k]) for k in keep) / len(keep)
        top = sum(max(r[key] for r in steps[k]) for k in keep) / len(keep)
        print(f"  {key:<34} mean {mean:6.2f}   largest a step {top:6.2f}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
