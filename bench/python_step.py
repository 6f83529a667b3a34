"""What a Python step costs beside the engine's own step, in one process and one run.

Rows (median over interleaved repeats, microseconds per step of all worlds):
  orrery bench     `orrery bench`'s loop in C++ on a simulator of its own
                   (orrery._core.engine_step_seconds): random actions drawn inside
                   the step on a GPU, one of 16 host action sets copied in before
                   each step on the CPU. The issue's reference figure.
  engine loop      the same C++ loop on this env's simulator, copying in the 16
                   action sets every other row uses (Simulator.engine_loop): no
                   Python per step. A step's cost depends on what the chefs do, so
                   this is the like-for-like reference.
  engine loop, in place  the same loop, each step reading its set where it is
                   (Simulator.engine_loop(in_place=True): on a GPU the staged
                   step's load reads it, no copy), as env.step(a) now does.
  binding          this simulator from a Python loop with no Python-side work: an
                   action set copied in (np.copyto) then its step on the CPU; on
                   the GPU the binding's step reading the set in place, ordered
                   against torch's current stream (Simulator.step_reading).
  step(actions)    env.step(a), eager, `a` one of the 16 sets (NumPy on the CPU,
                   torch int32 tensors on the GPU) in turn.
  step() in place  the set written into env.actions (np.copyto / Tensor.copy_),
                   then env.step().
  step(a), env.stream  GPU only: step(actions) with env.stream (the engine's
                   own stream) made torch's current one. With the engine following
                   torch's current stream (the default) the same as step(actions);
                   with ORRERY_CUDA_FOLLOW=0 the only form without two events a step.
  graph (T=..)     GPU only: T env.step(a) calls captured in one torch CUDA graph,
                   replayed; per step ("graph, env.stream": captured on env.stream).
  jax scan (T=..)  with --jax: orrery.jax.make_step inside jax.jit(lax.scan) over
                   T steps (the XLA FFI custom call; the 16 sets in turn, on the
                   env's device), per step; obs, reward and the done flags of
                   every step come back as XLA arrays.
  jax scan, kept none  the same scan keeping no step's outputs (one obs element
                   summed into the carry): the custom call and XLA's loop without
                   the stacking of T steps' outputs.
  jax env.step(a)  with --jax: eager env.step(a) on a twin env made with
                   framework="jax", `a` one of the 16 sets as JAX arrays on the
                   env's device (on a GPU read in place through one XLA custom
                   call; outputs JAX views made per call).
Columns: +bench / +loop are us/step over those two rows. "host" is the time the
loop took before the final device wait (on a GPU the step is host-bound only when
that exceeds the engine's step). "cpu us" (CPU device, one thread) is this
thread's CPU time per step: the whole step, not counting time slices that other
processes take, which on a shared machine makes it the steadier measure.

  python bench/python_step.py --threads 1        # the CPU, 1,024 Overcooked worlds
  python bench/python_step.py --threads 1 --jax --only "jax scan"   # the jitted scan beside the references
  python bench/python_step.py --device cuda --json python_step.json --profile
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
    """(wall, host, this thread's CPU) seconds per call over `steps` calls of
    `body(i)`, waiting for the device at the end. With one CPU thread the step
    runs on this thread, so its CPU time is the whole cost, and time slices
    that other processes take do not count."""

    def __init__(self, sync):
        self.sync = sync

    def __call__(self, body, steps: int):
        self.sync()
        c0, t0 = time.thread_time(), time.perf_counter()
        for i in range(steps):
            body(i)
        t1 = time.perf_counter()
        self.sync()
        t2, c2 = time.perf_counter(), time.thread_time()
        return (t2 - t0) / steps, (t1 - t0) / steps, (c2 - c0) / steps


def captured(env, pool, T: int, timer, stream=None):
    """A measure() of T env.step(pool[k % 16]) calls captured in one torch CUDA
    graph, per step: on torch's side stream, or on `stream` (env.stream)."""
    import torch

    dev = torch.device(env.device)
    side = stream or torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):  # torch's recipe: warm up on a side stream before capturing
        for k in range(3):
            env.step(pool[k & 15])
    torch.cuda.current_stream(dev).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for k in range(T):
            env.step(pool[k & 15])

    def measure(steps):
        wall, host, cpu = timer(lambda i: graph.replay(), max(1, steps // T))
        return wall / T, host / T, cpu / T
    return measure


def jax_eager(a, options, stacked, timer):
    """A measure() of env.step(a) with JAX actions (the 16 sets as JAX arrays on
    the env's device) on a twin env made with framework="jax": on a GPU one XLA
    custom call reading them in place (orrery.jax.InPlaceStep), on the CPU the
    general path (checked, copied in). The outputs are JAX views, made per call."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # beside torch in one process
    import jax
    import jax.numpy as jnp

    jenv = orrery.make(a.env, num_worlds=a.worlds, device=a.device, seed=0, threads=a.threads, framework="jax",
                       **options)
    host = np.asarray(stacked.cpu() if hasattr(stacked, "cpu") else stacked)
    device = jax.devices("cuda" if jenv.device != "cpu" else "cpu")[0]
    pool = [jax.device_put(jnp.asarray(host[k]), device) for k in range(16)]
    jax.block_until_ready(pool)

    def measure(steps):
        return timer(lambda i: jenv.step(pool[i & 15]), steps)
    return measure


def jax_scan(env, stacked, T: int, timer, keep: bool = True):
    """A measure() of jit(lax.scan) over T steps of orrery.jax.make_step(env), per step.
    keep=False: the scan keeps no step's outputs (one obs element goes into its
    carry), so XLA stacks nothing: the custom call and the while loop alone."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # beside torch in one process
    import jax
    import jax.numpy as jnp

    from orrery.jax import make_step

    step = make_step(env)
    host = np.asarray(stacked.cpu() if hasattr(stacked, "cpu") else stacked)
    device = jax.devices("cuda" if env.device != "cpu" else "cpu")[0]
    acts = jax.device_put(jnp.asarray(host[np.arange(T) % 16]), device)

    @jax.jit
    def rollout(a):
        if not keep:
            return jax.lax.scan(lambda carry, x: (carry + step(x)[0].ravel()[0].astype(jnp.int32), None), 0, a)[0]
        return jax.lax.scan(lambda carry, x: (carry, step(x)), 0, a)[1]

    jax.block_until_ready(rollout(acts))  # compile

    def measure(steps):
        wall, host_s, cpu = Timer(lambda: None)(lambda i: jax.block_until_ready(rollout(acts)), max(1, steps // T))
        return wall / T, host_s / T, cpu / T
    return measure


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="overcooked")
    ap.add_argument("--layout", default="cramped_room")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    ap.add_argument("--worlds", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: all)")
    ap.add_argument("--steps", type=int, default=0, help="steps per repeat (0: about 0.05 s)")
    ap.add_argument("--repeats", type=int, default=41)
    ap.add_argument("--graph-steps", type=int, default=64, help="T: steps captured in one CUDA graph")
    ap.add_argument("--json", default="", help="also write the rows here")
    ap.add_argument("--profile", action="store_true", help="also print cProfile's top functions of env.step(a)")
    ap.add_argument("--jax", action="store_true", help="also time orrery.jax.make_step in jit(lax.scan)")
    ap.add_argument("--only", default="", help="of the other rows, time only those starting with this "
                    "(orrery bench, engine loop and step(actions) always run: the references)")
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
    # 16 action sets, consecutive in memory so the engine loop can read them too.
    stacked = rng.integers(lo, hi, size=(16,) + shape, endpoint=True).astype(dtype)
    if cuda:
        import torch

        stacked = torch.from_numpy(stacked).to(torch.device(env.device))
        pool, address = list(stacked.unbind(0)), stacked.data_ptr()
        sync = torch.cuda.synchronize
    else:
        pool, address = [stacked[k] for k in range(16)], stacked.ctypes.data
        sync = env.synchronize
    timer = Timer(sync)
    engine_opts = {k: str(v) for k, v in options.items()}

    def loop(body):
        return lambda steps: timer(body, steps)

    def bench(steps):
        wall, cpu = _core.engine_step_seconds(a.env, engine_opts, a.worlds, env.device, a.threads, steps)
        return wall, float("nan"), cpu

    def engine_loop(steps):
        sync()
        wall, cpu = sim.engine_loop(action, address, 16, steps)
        return wall, float("nan"), cpu

    def engine_loop_in_place(steps):
        sync()
        wall, cpu = sim.engine_loop(action, address, 16, steps, in_place=True)
        return wall, float("nan"), cpu

    # Every row but the first steps the same 16 action sets in turn: a step's
    # cost depends on what the chefs do.
    action = env._action_name()
    if cuda:
        raw, index = torch._C._cuda_getCurrentRawStream, torch.device(env.device).index
        binding = lambda i: sim.step_reading(raw(index), action, pool[i & 15].data_ptr())  # noqa: E731
        in_place = lambda i: (env.actions.copy_(pool[i & 15]), env.step())  # noqa: E731
    else:
        dst = env.actions
        binding = lambda i: (np.copyto(dst, pool[i & 15]), sim.step())  # noqa: E731
        in_place = lambda i: (np.copyto(env.actions, pool[i & 15]), env.step())  # noqa: E731
    rows = {
        "orrery bench": bench,
        "engine loop": engine_loop,
        "engine loop, in place": engine_loop_in_place,
        "binding": loop(binding),
        "step(actions)": loop(lambda i: env.step(pool[i & 15])),
        "step() in place": loop(in_place),
    }
    if cuda:
        # Torch's work on the engine's own stream: no events between the two.
        def on_env_stream(measure):
            def run(steps):
                with torch.cuda.stream(env.stream):
                    return measure(steps)
            return run

        if getattr(env, "stream", None) is not None:
            rows["step(a), env.stream"] = on_env_stream(loop(lambda i: env.step(pool[i & 15])))
        T = a.graph_steps
        for label, stream in ((f"graph (T={T})", None), ("graph, env.stream", getattr(env, "stream", None))):
            if label.endswith("env.stream") and stream is None:
                continue
            try:
                rows[label] = captured(env, pool, T, timer, stream)
            except Exception as e:  # report, and measure the rest
                print(f"{label}: capture failed: {type(e).__name__}: {e}")

    if a.jax:
        try:
            rows[f"jax scan (T={a.graph_steps})"] = jax_scan(env, stacked, a.graph_steps, timer)
            rows["jax scan, kept none"] = jax_scan(env, stacked, a.graph_steps, timer, keep=False)
            rows["jax env.step(a)"] = jax_eager(a, options, stacked, timer)
        except Exception as e:  # report, and measure the rest
            print(f"jax scan: not measured: {type(e).__name__}: {e}")

    if a.only:
        rows = {k: v for k, v in rows.items()
                if k in ("orrery bench", "engine loop", "step(actions)") or k.startswith(a.only)}
    for label, measure in list(rows.items()):  # warm-up; a row that fails is reported and left out
        try:
            measure(64)
        except Exception as e:
            if label in ("orrery bench", "engine loop", "step(actions)"):
                raise
            print(f"{label}: failed: {type(e).__name__}: {e}")
            del rows[label]
    steps = a.steps
    if steps == 0:
        per = rows["step(actions)"](200)[0]
        steps = int(min(200000, max(100, 0.05 / per)))
    results = {name: ([], [], []) for name in rows}
    for _ in range(a.repeats):  # interleaved, so drift in the machine's load hits every row alike
        for name, measure in rows.items():
            for column, seconds in zip(results[name], measure(steps)):
                column.append(seconds * 1e6)
    env.check_errors()

    if a.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(timer, lambda i: env.step(pool[i & 15]), steps)
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)

    # Thread CPU time is the whole step only when the step runs on this thread alone.
    one_thread = not cuda and (env.threads == 1 or os.cpu_count() == 1)
    med = {name: [statistics.median(c) for c in cols] for name, cols in results.items()}
    print(f"orrery {commit()}  {a.env}/{a.layout}  {a.worlds} worlds  {env.backend}")
    print(f"{platform.node()}  {os.cpu_count()} CPUs  python {platform.python_version()}  "
          f"{a.repeats} repeats x {steps} steps, interleaved (median; best: fastest repeat)")
    head = f"{'':21}{'us/step':>9}{'best':>9}{'host':>9}{'+bench':>9}{'+loop':>9}"
    print(head + (f"{'cpu us':>9}{'+bench':>9}{'+loop':>9}" if one_thread else ""))
    out = []
    ref_bench, ref_loop = med["orrery bench"], med["engine loop"]
    for name, (wall, host, cpu) in med.items():
        best = min(results[name][0])
        line = (f"{name:21}{wall:9.2f}{best:9.2f}{'' if host != host else f'{host:9.2f}':>9}"
                f"{wall - ref_bench[0]:+9.2f}{wall - ref_loop[0]:+9.2f}")
        if one_thread:
            line += f"{cpu:9.2f}{cpu - ref_bench[2]:+9.2f}{cpu - ref_loop[2]:+9.2f}"
        print(line)
        out.append({"row": name, "us_per_step": wall, "best_us_per_step": best,
                    "host_us_per_step": None if host != host else host,
                    "thread_cpu_us_per_step": cpu if one_thread else None,
                    "over_bench_us": wall - ref_bench[0], "over_loop_us": wall - ref_loop[0],
                    "cpu_over_bench_us": cpu - ref_bench[2] if one_thread else None,
                    "cpu_over_loop_us": cpu - ref_loop[2] if one_thread else None})
    print("+bench, +loop: over the orrery bench and engine loop rows; cpu us: this thread's CPU time per step")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"commit": commit(), "env": a.env, "layout": a.layout, "worlds": a.worlds,
                       "device": env.device, "backend": env.backend, "steps": steps, "repeats": a.repeats,
                       "rows": out}, f, indent=1)
    env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
