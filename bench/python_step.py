"""What a Python step costs beside the engine's own step, in one process and one run.

Rows (median over interleaved repeats, microseconds per step of all worlds):
  engine        `orrery bench`'s loop in C++ on a simulator of its own (orrery._core.engine_step_seconds):
                random actions drawn inside the step on a GPU, one of 16 host action sets copied in per
                step on the CPU. The figure to beat.
  binding       the env's Simulator called from a Python loop with no Python-side work: an action set
                copied in (np.copyto on the CPU; the binding's device copy on the GPU), then its step.
  step(actions) env.step(a) eager, `a` one of 16 pre-drawn action arrays (NumPy on the CPU, torch int32
                tensors on the GPU), cycled; every row steps these same 16 sets.
  step() in place  the set written into env.actions (np.copyto / Tensor.copy_), then env.step().
  graph         GPU only: T env.step(a) calls (the same 16 sets in turn) captured in one torch CUDA graph, replayed; per step.
"host" is the time the Python loop took before the final device wait: on a GPU, the step is
host-bound only when it exceeds the engine's step.

  python bench/python_step.py                       # the CPU, 1,024 Overcooked worlds
  python bench/python_step.py --device cuda --json python_step.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

import orrery
from orrery import _core


def commit() -> str:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "-uno"], capture_output=True, text=True)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if out.returncode == 0 else "?"
    except OSError:
        return "?"


class Timer:
    """Wall and host time of `steps` calls of `body(i)`, waiting for the device at the end."""

    def __init__(self, sync):
        self.sync = sync

    def __call__(self, body, steps: int):
        self.sync()
        t0 = time.perf_counter()
        for i in range(steps):
            body(i)
        t1 = time.perf_counter()
        self.sync()
        t2 = time.perf_counter()
        return (t2 - t0) / steps, (t1 - t0) / steps


def captured(env, pool, T: int, timer):
    """A measure() of T env.step(pool[k % 16]) calls captured in one torch CUDA graph, per step."""
    import torch

    dev = torch.device(env.device)
    side = torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):  # torch's recipe: warm up on a side stream before capturing
        for k in range(3):
            env.step(pool[k & 15])
    torch.cuda.current_stream(dev).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for k in range(T):
            env.step(pool[k & 15])

    def measure(steps):
        wall, host = timer(lambda i: graph.replay(), max(1, steps // T))
        return wall / T, host / T
    return measure


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="overcooked")
    ap.add_argument("--layout", default="cramped_room")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    ap.add_argument("--worlds", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: all)")
    ap.add_argument("--steps", type=int, default=0, help="steps per repeat (0: about 0.2 s)")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--graph-steps", type=int, default=64, help="T: steps captured in one CUDA graph")
    ap.add_argument("--json", default="", help="also write the rows here")
    ap.add_argument("--profile", action="store_true", help="also print cProfile's top functions of env.step(a)")
    a = ap.parse_args()

    options = {"layout": a.layout} if a.layout else {}
    cuda = a.device != "cpu"
    env = orrery.make(a.env, num_worlds=a.worlds, device=a.device, seed=0, threads=a.threads,
                      framework="torch" if cuda else "numpy", **options)
    sim = env._sim
    rng = np.random.default_rng(0)
    lo, hi = env.action_range
    shape = tuple(env.tensors[env._action_name()].shape)
    dtype = np.dtype(env.tensors[env._action_name()].dtype)
    host_pool = [rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype) for _ in range(16)]
    if cuda:
        import torch

        dev = torch.device(env.device)
        pool = [torch.from_numpy(h).to(dev) for h in host_pool]
        sync = torch.cuda.synchronize
    else:
        pool = host_pool
        sync = env.synchronize
    timer = Timer(sync)
    engine_opts = {k: str(v) for k, v in options.items()}

    def loop(body):
        return lambda steps: timer(body, steps)

    def engine(steps):
        s = _core.engine_step_seconds(a.env, engine_opts, a.worlds, env.device, a.threads, steps)
        return s, float("nan")

    # Every row steps the same 16 random action sets in turn, as the engine row
    # does: a step's cost depends on what the chefs do.
    name = env._action_name()
    if cuda:
        current = env._stream
        binding = lambda i: sim.step_after_copy(current(), name, pool[i & 15].data_ptr())  # noqa: E731
        in_place = lambda i: (env.actions.copy_(pool[i & 15]), env.step())  # noqa: E731
    else:
        dst = env.actions
        binding = lambda i: (np.copyto(dst, pool[i & 15]), sim.step())  # noqa: E731
        in_place = lambda i: (np.copyto(env.actions, pool[i & 15]), env.step())  # noqa: E731
    rows = {
        "engine": engine,
        "binding": loop(binding),
        "step(actions)": loop(lambda i: env.step(pool[i & 15])),
        "step() in place": loop(in_place),
    }
    if cuda:
        rows[f"graph (T={a.graph_steps})"] = captured(env, pool, a.graph_steps, timer)

    for measure in rows.values():  # warm-up
        measure(64)
    steps = a.steps
    if steps == 0:
        per, _ = rows["step(actions)"](200)
        steps = int(min(200000, max(200, 0.2 / per)))
    results = {name: ([], []) for name in rows}
    for _ in range(a.repeats):  # interleaved, so drift in the machine's load hits every row alike
        for name, measure in rows.items():
            wall, host = measure(steps)
            results[name][0].append(wall * 1e6)
            results[name][1].append(host * 1e6)
    env.check_errors()

    if a.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(timer, lambda i: env.step(pool[i & 15]), steps)
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)

    base = statistics.median(results["engine"][0])
    print(f"orrery {commit()}  {a.env}/{a.layout}  {a.worlds} worlds  {env.backend}")
    print(f"{platform.node()}  {os.cpu_count()} CPUs  python {platform.python_version()}  "
          f"{a.repeats} repeats x {steps} steps (median; spread = max - min)")
    print(f"{'':17}{'us/step':>10}{'spread':>9}{'host us':>10}{'over engine':>13}")
    out = []
    for name, (walls, hosts) in results.items():
        wall, host = statistics.median(walls), statistics.median(hosts)
        spread = max(walls) - min(walls)
        over = wall - base
        host_text = "" if host != host else f"{host:10.2f}"
        print(f"{name:17}{wall:10.2f}{spread:9.2f}{host_text:>10}{over:+13.2f}")
        out.append({"row": name, "us_per_step": wall, "host_us_per_step": None if host != host else host,
                    "spread_us": spread, "over_engine_us": over})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"commit": commit(), "env": a.env, "layout": a.layout, "worlds": a.worlds,
                       "device": env.device, "backend": env.backend, "steps": steps, "repeats": a.repeats,
                       "rows": out}, f, indent=1)
    env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
