#!/usr/bin/env python3
"""Times JaxMARL's Overcooked (v1) the way its users run it, on whatever device
JAX has, so Orrery's GPU figures can be read as ratios measured in the same run.

Timed function: jax.jit of a lax.scan over T steps of jax.vmap(env.step) over N
envs, uniform random actions drawn on the device inside the scan. JaxMARL's
step includes the transition, both agents' 26-channel uint8 observations and
its auto-reset (a reset computed every step, then a per-env select). The
observations are carried through the scan so they are written every step.
Compilation is timed apart; after one warm-up call the median of --runs timed
calls is reported. env-steps/s = N * T / seconds.

Only jaxmarl/environments/overcooked and the two modules it imports are loaded
(bench/fetch_peers.sh puts them in bench/.peers/JaxMARL): jaxmarl/__init__.py
imports every env and its dependencies. Needs jax, numpy, flax and jaxtyping.

Usage: bench/peer_jaxmarl.py [--layouts L ...] [--worlds N,N,...] [--steps T]
                             [--runs R] [--json FILE]
"""
import argparse
import json
import os
import statistics
import sys
import time
import types
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.join(HERE, ".peers", "JaxMARL")
# Orrery's layout names (overcooked_ai's) -> JaxMARL's names for the same kitchens.
LAYOUT_NAMES = {
    "cramped_room": "cramped_room",
    "asymmetric_advantages": "asymm_advantages",
    "coordination_ring": "coord_ring",
    "forced_coordination": "forced_coord",
    "counter_circuit_o_1order": "counter_circuit",
}
DEFAULT_WORLDS = "1024,16384,65536,262144,1048576"


def load_overcooked(src):
    """Imports JaxMARL's Overcooked without running jaxmarl/__init__.py: the two
    parent packages are registered as bare namespace modules pointing at the source."""
    pkg = os.path.join(src, "jaxmarl")
    if not os.path.isdir(os.path.join(pkg, "environments", "overcooked")):
        sys.exit(f"peer_jaxmarl: no jaxmarl/environments/overcooked under {src}; run bench/fetch_peers.sh first")
    for name, path in (("jaxmarl", pkg), ("jaxmarl.environments", os.path.join(pkg, "environments"))):
        if name not in sys.modules:
            mod = types.ModuleType(name)
            mod.__path__ = [path]
            sys.modules[name] = mod
    from jaxmarl.environments.overcooked import Overcooked, overcooked_layouts
    return Overcooked, overcooked_layouts


def make_runner(jax, env, n, steps):
    """jit(scan over `steps` of vmap(env.step)) carrying (key, state, obs)."""
    step_v = jax.vmap(env.step)

    def body(carry, _):
        key, state, obs = carry
        key, k_act, k_step = jax.random.split(key, 3)
        a = jax.random.randint(k_act, (2, n), 0, env.num_actions)
        obs, state, _rew, _done, _info = step_v(jax.random.split(k_step, n), state,
                                               {"agent_0": a[0], "agent_1": a[1]})
        return (key, state, obs), None

    def run(key, state, obs):
        carry, _ = jax.lax.scan(body, (key, state, obs), None, length=steps)
        return carry

    return jax.jit(run, donate_argnums=(1, 2))


def bench_point(jax, env, n, steps, runs):
    key = jax.random.PRNGKey(0)
    key, k_reset = jax.random.split(key)
    obs, state = jax.jit(jax.vmap(env.reset))(jax.random.split(k_reset, n))
    run = make_runner(jax, env, n, steps)
    t0 = time.perf_counter()
    compiled = run.lower(key, state, obs).compile()
    compile_s = time.perf_counter() - t0
    carry = jax.block_until_ready(compiled(key, state, obs))  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        carry = jax.block_until_ready(compiled(*carry))
        times.append(time.perf_counter() - t0)
    final_step = int(carry[1].step[0])  # auto-reset check: (warm-up + runs) * T mod horizon
    obs_bytes = sum(int(v[0].size) * v.dtype.itemsize for v in carry[2].values())
    return statistics.median(times), times, compile_s, final_step, obs_bytes


def device_name(jax):
    d = jax.devices()[0]
    return d.platform, getattr(d, "device_kind", d.platform)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", default=os.environ.get("JAXMARL_SRC", DEFAULT_SRC), help="JaxMARL checkout (holds jaxmarl/)")
    p.add_argument("--layouts", nargs="+", default=["cramped_room", "counter_circuit_o_1order"])
    p.add_argument("--worlds", default=DEFAULT_WORLDS, help="comma-separated env counts")
    p.add_argument("--steps", type=int, default=1000, help="scan length T (>= 400 so auto-reset fires)")
    p.add_argument("--runs", type=int, default=5, help="timed calls per point; the median is reported")
    p.add_argument("--json", help="write the JSON records here")
    args = p.parse_args()

    import jax

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    Overcooked, layouts = load_overcooked(args.src)
    platform, kind = device_name(jax)
    commit_file = os.path.join(args.src, "COMMIT")
    commit = open(commit_file).read().strip() if os.path.exists(commit_file) else "unknown"
    backend = f"jaxmarl {commit[:12]}, jax {jax.__version__}, {kind}"
    print(f"# {backend}", flush=True)
    print("| layout | envs | T | env-steps/s | µs per step | compile s | final step |\n|---|---:|---:|---:|---:|---:|---:|")
    records = []
    for layout in args.layouts:
        if layout not in LAYOUT_NAMES:
            sys.exit(f"peer_jaxmarl: layout={layout} is unknown; expected one of {', '.join(LAYOUT_NAMES)}")
        env = Overcooked(layout=layouts[LAYOUT_NAMES[layout]])
        for n in [int(x) for x in args.worlds.split(",") if x]:
            try:
                secs, times, compile_s, final_step, obs_bytes = bench_point(jax, env, n, args.steps, args.runs)
            except Exception as e:  # one failed point (e.g. out of memory) must not stop the rest
                print(f"| {layout} | {n:,} | {args.steps} | failed: {type(e).__name__}: {str(e)[:200]} |", flush=True)
                continue
            rate = n * args.steps / secs
            us = secs / args.steps * 1e6
            print(f"| {layout} | {n:,} | {args.steps} | {rate:,.0f} | {us:,.1f} | {compile_s:.1f} | {final_step} |",
                  flush=True)
            records.append({
                "env": "overcooked", "layout": layout, "device": "cuda" if platform == "gpu" else platform,
                "impl": "jaxmarl", "backend": backend, "num_worlds": n, "steps": args.steps, "seconds": secs,
                "env_steps_per_s": rate, "us_per_step": us, "compile_s": compile_s, "runs": times,
                # rewards and dones are not carried, so XLA may drop them: observations only
                "bytes_moved_per_step": obs_bytes * n, "peer_layout": LAYOUT_NAMES[layout],
                "peer_commit": commit, "final_step": final_step,
            })
            if args.json:  # after every point, so a run cut short keeps what it measured
                with open(args.json, "w") as f:
                    json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
