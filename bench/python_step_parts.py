"""Per-part cost of env.step(actions) on the CPU: 1,024 Overcooked worlds, one
thread, NumPy int32 actions; this thread's CPU time per call, median of 15
interleaved repeats. Runs against either Python layer (before/after the fast
paths: docs/benchmarks.md, "Python step overhead").

  python bench/python_step_parts.py
"""
import statistics
import time

import numpy as np

import orrery
from orrery import _actions

env = orrery.make("overcooked", num_worlds=1024, device="cpu", seed=0, layout="cramped_room", threads=1)
sim = env._sim
rng = np.random.default_rng(0)
lo, hi = env.action_range
pool = [rng.integers(lo, hi, size=(1024, 2), endpoint=True).astype(np.int32) for _ in range(16)]
name = env._action_name()
dst = env.host_view(name)
new = hasattr(env, "_step_fast")
parts = {
    "env.step(actions)": lambda i: env.step(pool[i & 15]),
    "np.copyto + sim.step() [binding]": lambda i: (np.copyto(dst, pool[i & 15]), sim.step()),
    "write_input (checks + copy)": lambda i: _actions.write_input(env, name, pool[i & 15]),
    "  _expect (shape, dtype, name)": lambda i: _actions._expect(env, name),
    "  _source_device": lambda i: _actions._source_device(pool[i & 15]),
    "  _check_host_values (min/max)": lambda i: _actions._check_host_values(env, name, "actions", pool[i & 15], np.dtype(np.int32)),
    "  np.copyto into the host view": lambda i: np.copyto(env.host_view(name), pool[i & 15], casting="unsafe"),
    "_outputs() (views, info dict)": lambda i: env._outputs(),
    "env.actions (property)": lambda i: env.actions,
    "python call of a no-op": lambda i: None,
}
if new:
    parts["_step_fast -> sim.step_host"] = lambda i: env._step_fast(sim, pool[i & 15])
else:
    parts["_ordered(no-op)"] = lambda i: env._ordered(lambda: None)
res = {k: [] for k in parts}
for r in range(15):
    for k, f in parts.items():
        n = 200 if "step" in k else 20000
        c0 = time.thread_time()
        for i in range(n):
            f(i)
        res[k].append((time.thread_time() - c0) / n * 1e6)
for k, v in res.items():
    print(f"{k:36s} {statistics.median(v):8.3f} us")
