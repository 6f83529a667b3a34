#!/usr/bin/env python3
"""Soak test: steps one env for a long time through the public Python API and
checks, as it goes, what a long training run relies on. Not a benchmark (no
speed is asserted); it fails on the first broken check.

Every step takes uniformly random actions. Every --every steps it
- resets a random 1 % of the worlds through a mask (reset_worlds);
- saves a random world, restores it into another slot and checks both hashes
  agree, then replays --replay steps of recorded actions for that world in a
  one-world simulator made from its snapshot and checks every step's hash;
- writes a checkpoint, loads it into a second simulator, and checks every
  world's hash agrees;
- checks no world reported an error code;
- records RSS (VmRSS) and the mean step time since the last report.

One JSON record per report goes to stdout (and --out); the last line is a
summary. Examples
  bench/soak.py --world-steps 1e9                      # the issue-19 run, CPU
  bench/soak.py --world-steps 1e8 --worlds 8192        # a shorter window
  bench/soak.py --device cuda --world-steps 1e10       # GPU (with compute-sanitizer
                                                       # around a short window)
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time

import numpy as np

import orrery


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def hashes(env, worlds):
    return [env.state_hash(w) for w in worlds]


def on_device(args, actions):
    """The env's own device takes its actions there: a torch tensor on a GPU."""
    if args.device == "cpu":
        return actions
    import torch
    return torch.from_numpy(np.ascontiguousarray(actions)).to(args.device if args.device != "cuda" else "cuda:0")


def check_replay(args, env, world, actions_log, hash_log, snapshot):
    """A world restored into a fresh one-world simulator replays bit-exactly."""
    solo = orrery.make(args.env, num_worlds=1, device=args.device, framework="numpy" if args.device == "cpu" else None,
                       threads=1, **args.options)
    try:
        solo.restore_world(0, snapshot)
        for t, (a, h) in enumerate(zip(actions_log, hash_log)):
            solo.step(on_device(args, a[None]))
            if solo.state_hash(0) != h:
                raise SystemExit(f"soak: replay of world {world} diverged at step {t}")
    finally:
        solo.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="overcooked")
    p.add_argument("--worlds", type=int, default=16384)
    p.add_argument("--world-steps", type=float, default=1e9, help="total world-steps (worlds x steps)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--every", type=int, default=2000, help="steps between checks")
    p.add_argument("--replay", type=int, default=200, help="steps replayed per replay check")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="also write the JSON records here")
    p.add_argument("--opt", action="append", default=[], help="env option key=value (repeatable)")
    args = p.parse_args()
    args.options = dict(kv.split("=", 1) for kv in args.opt)

    rng = np.random.default_rng(args.seed)
    pick = random.Random(args.seed)
    env = orrery.make(args.env, num_worlds=args.worlds, device=args.device, seed=args.seed, threads=args.threads,
                      framework="numpy" if args.device == "cpu" else None, **args.options)
    twin = orrery.make(args.env, num_worlds=args.worlds, device=args.device, threads=args.threads,
                       framework="numpy" if args.device == "cpu" else None, **args.options)
    lo, hi = env.action_range
    shape = env.actions.shape
    total_steps = int(args.world_steps // args.worlds)
    out = open(args.out, "w") if args.out else None
    ckpt = os.path.join(tempfile.mkdtemp(prefix="orrery_soak_"), "soak.ckpt")
    start = last = time.perf_counter()
    rss0 = rss_mib()
    replay = None  # (world, snapshot, actions, hashes) being recorded
    step_time, steps_since = 0.0, 0
    for step in range(1, total_steps + 1):
        actions = rng.integers(lo, hi + 1, size=shape).astype(np.int32)
        device_actions = on_device(args, actions)
        t0 = time.perf_counter()
        env.step(device_actions)
        step_time += time.perf_counter() - t0
        steps_since += 1
        if replay is not None:
            w, snap, acts, hs = replay
            acts.append(actions[w].copy())
            hs.append(env.state_hash(w))
            if len(acts) == args.replay:
                check_replay(args, env, w, acts, hs, snap)
                replay = None
        if step % args.every:
            continue
        mask = rng.random(args.worlds) < 0.01
        env.reset_worlds(mask)
        src, dst = pick.randrange(args.worlds), pick.randrange(args.worlds)
        env.restore_world(dst, env.save_world(src))
        if env.state_hash(dst) != env.state_hash(src):
            raise SystemExit(f"soak: world {dst} restored from {src} differs")
        if replay is None:
            w = pick.randrange(args.worlds)
            replay = (w, env.save_world(w), [], [])
        env.save_checkpoint(ckpt)
        twin.load_checkpoint(ckpt)
        if hashes(twin, range(args.worlds)) != hashes(env, range(args.worlds)):
            raise SystemExit("soak: a checkpoint round trip changed a world")
        errors = np.asarray(env._sim.errors())
        if errors.any():
            raise SystemExit(f"soak: {int((errors != 0).sum())} world(s) reported error codes at step {step}")
        now = time.perf_counter()
        record = {"step": step, "world_steps": step * args.worlds, "seconds": round(now - start, 1),
                  "rss_mib": round(rss_mib(), 1), "step_ms": round(1e3 * step_time / steps_since, 3),
                  "world_steps_per_s": round(steps_since * args.worlds / (now - last))}
        print(json.dumps(record), flush=True)
        if out:
            out.write(json.dumps(record) + "\n")
        step_time, steps_since, last = 0.0, 0, now
    summary = {"env": args.env, "device": args.device, "worlds": args.worlds, "steps": total_steps,
               "world_steps": total_steps * args.worlds, "seconds": round(time.perf_counter() - start, 1),
               "rss_start_mib": round(rss0, 1), "rss_end_mib": round(rss_mib(), 1), "result": "ok"}
    print(json.dumps(summary), flush=True)
    if out:
        out.write(json.dumps(summary) + "\n")
    os.remove(ckpt) if os.path.exists(ckpt) else None


if __name__ == "__main__":
    sys.exit(main())
