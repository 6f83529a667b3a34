#!/usr/bin/env python3
"""Times the reference Overcooked (HumanCompatibleAI/overcooked_ai) on one CPU
core, so Orrery's CPU figures can be read as ratios measured on the same machine.

One env, uniformly random joint actions, `OvercookedGridworld.get_state_transition`
(what `OvercookedEnv.step` calls) from the layout's standard start state, a
restart every 400 steps (the horizon) and, with --obs on, both players'
`lossless_state_encoding` (26 channels) every step. Prints a table and JSON
records shaped like `orrery bench`'s (impl="overcooked_ai", obs="lossless"|"none").

The source comes from bench/fetch_peers.sh (bench/.peers/overcooked_ai). Only
numpy is needed: the package's __init__ imports gymnasium to register a gym id,
so a no-op stub stands in when gymnasium is missing.

Usage: bench/peer_overcooked_ai.py [--layouts L ...] [--obs both|on|off] [--seconds S]
                                   [--repeat R] [--pick median|best] [--core C] [--json FILE]
"""
import argparse
import json
import os
import platform
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.join(HERE, ".peers", "overcooked_ai", "src")
HORIZON = 400
LAYOUTS = ["cramped_room", "counter_circuit_o_1order"]


def stub_gymnasium():
    """overcooked_ai_py/__init__.py only registers a gym id; the MDP never uses gymnasium."""
    try:
        import gymnasium  # noqa: F401
        return
    except ImportError:
        pass
    g = types.ModuleType("gymnasium")
    envs = types.ModuleType("gymnasium.envs")
    reg = types.ModuleType("gymnasium.envs.registration")
    reg.register = lambda *a, **k: None
    g.envs, envs.registration = envs, reg
    sys.modules.update({"gymnasium": g, "gymnasium.envs": envs, "gymnasium.envs.registration": reg})


def import_overcooked_ai(src):
    if not os.path.isdir(os.path.join(src, "overcooked_ai_py")):
        sys.exit(f"peer_overcooked_ai: no overcooked_ai_py under {src}; run bench/fetch_peers.sh first")
    sys.path.insert(0, os.path.abspath(src))
    stub_gymnasium()
    from overcooked_ai_py.mdp.actions import Action
    from overcooked_ai_py.mdp.overcooked_mdp import OvercookedGridworld
    return Action, OvercookedGridworld


def time_one(Action, OvercookedGridworld, layout, with_obs, seconds):
    """Steps one env for about `seconds`; returns (steps, elapsed seconds, episodes)."""
    import numpy as np

    mdp = OvercookedGridworld.from_layout_name(layout)
    rng = np.random.RandomState(0)
    # Pre-drawn so that drawing actions is not timed (Orrery's bench does the same).
    joint = [tuple(Action.INDEX_TO_ACTION[a] for a in row) for row in rng.randint(0, 6, size=(HORIZON * 25, 2))]
    state = mdp.get_standard_start_state()
    steps = episodes = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:  # whole episodes, checking the clock at each restart
        for ja in joint:
            state, _info = mdp.get_state_transition(state, ja)
            if with_obs:
                mdp.lossless_state_encoding(state, horizon=HORIZON)
            steps += 1
            if state.timestep >= HORIZON:
                state = mdp.get_standard_start_state()
                episodes += 1
                if time.perf_counter() >= deadline:
                    return steps, time.perf_counter() - t0, episodes


def commit_of(src):
    path = os.path.join(src, "..", "COMMIT")
    return open(path).read().strip() if os.path.exists(path) else "unknown"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", default=os.environ.get("OVERCOOKED_AI_SRC", DEFAULT_SRC),
                   help="overcooked_ai's src/ folder (holds overcooked_ai_py)")
    p.add_argument("--layouts", nargs="+", default=LAYOUTS)
    p.add_argument("--obs", choices=["both", "on", "off"], default="both",
                   help="also encode both players' lossless 26-channel observation every step")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per configuration")
    p.add_argument("--repeat", type=int, default=1, help="timed runs per configuration")
    p.add_argument("--pick", choices=["median", "best"], default="median",
                   help="which run to report (best: least disturbed, for a shared machine)")
    p.add_argument("--core", type=int, default=0, help="CPU core to pin to (-1: no pinning)")
    p.add_argument("--json", help="write the JSON records here (else only the table is printed)")
    args = p.parse_args()

    if args.core >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
    Action, OvercookedGridworld = import_overcooked_ai(args.src)
    commit = commit_of(args.src)
    flags = {"both": [False, True], "on": [True], "off": [False]}[args.obs]
    records = []
    print("| layout | observation | steps | seconds | env-steps/s |\n|---|---|---:|---:|---:|")
    for layout in args.layouts:
        for with_obs in flags:
            tries = [time_one(Action, OvercookedGridworld, layout, with_obs, args.seconds)
                     for _ in range(args.repeat)]
            tries.sort(key=lambda t: t[0] / t[1])
            steps, secs, episodes = tries[-1] if args.pick == "best" else tries[len(tries) // 2]
            rate = steps / secs
            obs = "lossless" if with_obs else "none"
            print(f"| {layout} | {obs} | {steps:,} | {secs:.2f} | {rate:,.0f} |", flush=True)
            records.append({
                "env": "overcooked", "layout": layout, "device": "cpu", "impl": "overcooked_ai",
                "backend": f"overcooked_ai {commit[:12]}, CPython {platform.python_version()}, 1 core",
                "obs": obs, "num_worlds": 1, "threads": 1, "steps": steps, "seconds": secs,
                "env_steps_per_s": rate, "episodes": episodes, "peer_commit": commit,
                "repeats": [t[0] / t[1] for t in tries], "picked": args.pick,
            })
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
