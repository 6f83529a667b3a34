"""CPU throughput of hide-and-seek: Orrery's env beside the same scene's physics
stepped by MuJoCo (PyPI `mujoco`), in one run on one machine.

The MuJoCo scene is OpenAI's full game as research/peer_mjwarp_hideseek.md
describes it: a 6 x 6 m floor (friction 0.2), 4 m outer walls and a 0.5 m
inner wall with a 0.7 m door (friction 1), 4 sphere agents (r 0.15, 1 kg, two
massless arm spheres, slide x y z and hinge z damped 10, 10, 1, 10, motors of
gear 100 on x, y and yaw, friction 0.01), 3 cubes of 0.5 m and 3 elongated
1.65 x 0.15 x 0.5 m boxes (1 kg, damping 0.01, friction 0.2), 2 wedge ramps
0.5 m (1 kg, damping 0.1, friction 0.01), one inactive weld per agent;
timestep 5 ms, 15 per env step, gravity -50, MuJoCo's defaults otherwise
(Euler, pyramidal cones, Newton). Before each env step every agent draws 3 of
11 bins (ctrl = -0.9 + 0.18 bin); episodes of 240 steps restart from the
initial state.

Orrery runs `hide_and_seek` (OpenAI's rules, 2 v 2, 6 boxes, 2 ramps, random
rooms; its default 8 substeps of 9.4 ms, where MuJoCo takes 15 of 5 ms) through `orrery bench`, with its full
observation (30 lidar rays and the visibility masks per agent), rewards and
auto-reset, which MuJoCo's number does not include.

    python bench/mujoco_hideseek.py [--threads 1,2] [--worlds 256] [--steps 100] [--rounds 3] [--json FILE]

Prints env-steps/s for each and two ratios (issue #14 asks Orrery's CPU
backend >= 20 x CPU MuJoCo on this scene, #15 >= 50,000 env-steps/s on the
2-core machine):

- per thread against MuJoCo alone: Orrery's env-steps/s over its threads,
  over one MuJoCo process's on an otherwise idle machine;
- against MuJoCo on as many cores: that many one-thread MuJoCo processes
  stepping side by side, their env-steps/s summed (MuJoCo's use of the same
  cores, which share caches, memory and clock as Orrery's threads do).

The measurements go in rounds: each round steps MuJoCo and Orrery at every
count back to back (the order reversed every other round), and a round's
ratios divide by that round's MuJoCo figures. A shared machine's speed drifts
by 10-20 % within an hour and the two engines drift together, so the median
of the rounds' ratios is steadier than one ratio of two runs minutes apart;
the summary gives it with the rounds' range.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from statistics import median

AGENT = """
    <body name="agent{i}" pos="{x} {y} 0.15">
      <joint name="a{i}x" type="slide" axis="1 0 0" damping="10"/>
      <joint name="a{i}y" type="slide" axis="0 1 0" damping="10"/>
      <joint name="a{i}z" type="slide" axis="0 0 1" damping="1"/>
      <joint name="a{i}r" type="hinge" axis="0 0 1" damping="10"/>
      <geom type="sphere" size="0.15" mass="1" friction="0.01 0.005 0.0001"/>
      <geom type="sphere" size="0.05" pos="0.12 0.1 0" mass="0" friction="0.01 0.005 0.0001"/>
      <geom type="sphere" size="0.05" pos="0.12 -0.1 0" mass="0" friction="0.01 0.005 0.0001"/>
    </body>"""
OBJECT = """
    <body name="{name}" pos="{x} {y} {z}">
      <joint type="slide" axis="1 0 0" damping="{damping}"/>
      <joint type="slide" axis="0 1 0" damping="{damping}"/>
      <joint type="slide" axis="0 0 1" damping="{damping}"/>
      <joint type="hinge" axis="0 0 1" damping="{damping}"/>
      {geom}
    </body>"""
WALL = '    <geom type="box" pos="{x} {y} {z}" size="{sx} {sy} {sz}" friction="1 0.005 0.0001"/>'
SCENE = """
<mujoco>
  <option timestep="0.005" gravity="0 0 -50"/>
  <asset>
    <mesh name="ramp" vertex="{ramp}"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" pos="3 3 0" size="3 3 1" friction="0.2 0.005 0.0001"/>
{walls}
{bodies}
  </worldbody>
  <equality>
{welds}
  </equality>
  <actuator>
{motors}
  </actuator>
</mujoco>
"""


def scene_xml():
    walls = [
        WALL.format(x=3, y=-0.05, z=2, sx=3.1, sy=0.05, sz=2), WALL.format(x=3, y=6.05, z=2, sx=3.1, sy=0.05, sz=2),
        WALL.format(x=-0.05, y=3, z=2, sx=0.05, sy=3, sz=2), WALL.format(x=6.05, y=3, z=2, sx=0.05, sy=3, sz=2),
        # the inner wall at x = 2.8, its door from y = 2.6 to 3.3
        WALL.format(x=2.8, y=1.3, z=0.25, sx=0.05, sy=1.3, sz=0.25),
        WALL.format(x=2.8, y=4.65, z=0.25, sx=0.05, sy=1.35, sz=0.25),
    ]
    agents = [AGENT.format(i=i, x=x, y=y) for i, (x, y) in enumerate([(1, 1), (1, 5), (4.5, 1), (4.5, 5)])]
    box = '<geom type="box" size="{} {} 0.25" mass="1" friction="0.2 0.005 0.0001"/>'
    objects = [OBJECT.format(name=f"cube{i}", x=x, y=y, z=0.25, damping=0.01, geom=box.format(0.25, 0.25))
               for i, (x, y) in enumerate([(1.5, 3), (4, 3), (5, 4.3)])]
    objects += [OBJECT.format(name="long0", x=4, y=2, z=0.25, damping=0.01, geom=box.format(0.825, 0.075)),
                OBJECT.format(name="long1", x=4, y=3.9, z=0.25, damping=0.01, geom=box.format(0.825, 0.075)),
                OBJECT.format(name="long2", x=0.6, y=2.0, z=0.25, damping=0.01, geom=box.format(0.075, 0.825))]
    ramp = '<geom type="mesh" mesh="ramp" mass="1" friction="0.01 0.005 0.0001"/>'
    objects += [OBJECT.format(name=f"ramp{i}", x=x, y=y, z=0, damping=0.1, geom=ramp)
                for i, (x, y) in enumerate([(2, 1.2), (5.2, 1.6)])]
    h = 0.25
    corners = [(-h, -h, 0), (h, -h, 0), (-h, h, 0), (h, h, 0), (-h, h, 2 * h), (h, h, 2 * h)]
    welds = [f'    <weld body1="agent{i}" body2="cube0" active="false"/>' for i in range(4)]
    motors = [f'    <motor joint="a{i}{j}" gear="100" ctrlrange="-1 1"/>' for i in range(4) for j in "xyr"]
    return SCENE.format(ramp=" ".join(f"{x} {y} {z}" for x, y, z in corners), walls="\n".join(walls),
                        bodies="\n".join(agents + objects), welds="\n".join(welds), motors="\n".join(motors))


def mujoco_env_steps_per_s(steps=1200, warmup=48, horizon=240, seed=0):
    """Env steps per second of one thread stepping the scene, and the mean contact count."""
    import mujoco
    import numpy as np

    model = mujoco.MjModel.from_xml_string(scene_xml())
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    rng = np.random.default_rng(seed)
    ctrl = -0.9 + 0.18 * rng.integers(0, 11, size=(steps + warmup, model.nu))
    contacts = 0
    t0 = 0.0
    for k in range(steps + warmup):
        if k == warmup:
            t0 = time.perf_counter()
        if k % horizon == 0:
            mujoco.mj_resetData(model, data)
        data.ctrl[:] = ctrl[k]
        mujoco.mj_step(model, data, nstep=15)  # one call per env step: no Python between substeps
        contacts += data.ncon if k >= warmup else 0
        if not np.all(np.isfinite(data.qpos)):
            raise RuntimeError(f"MuJoCo's state is not finite at env step {k}")
    return steps / (time.perf_counter() - t0), contacts / steps


def _mujoco_worker(barrier, steps, out):
    barrier.wait()
    out.put(mujoco_env_steps_per_s(steps))


def mujoco_side_by_side(processes, steps):
    """MuJoCo on `processes` cores at once: as many processes, each stepping
    its own copy of the scene from a shared start, and their env-steps/s
    summed (the machine's MuJoCo throughput with that many cores busy), with
    the mean contact count."""
    if processes == 1:
        return mujoco_env_steps_per_s(steps)
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(processes), ctx.Queue()
    procs = [ctx.Process(target=_mujoco_worker, args=(barrier, steps, out)) for _ in range(processes)]
    for q in procs:
        q.start()
    results = [out.get() for _ in procs]
    for q in procs:
        q.join()
        if q.exitcode != 0:
            raise RuntimeError(f"a MuJoCo process exited with code {q.exitcode}")
    return sum(r for r, _ in results), sum(c for _, c in results) / processes


def orrery_env_steps_per_s(threads, worlds, steps):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        cmd = [sys.executable, "-m", "orrery", "bench", "hide_and_seek", "--device", "cpu", "--threads",
               str(threads), "--worlds", str(worlds), "--steps", str(steps), "--opt", "min_boxes=6", "--opt",
               "max_boxes=6", "--json", out]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)[0]["env_steps_per_s"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default="1,2",
                   help="Orrery's CPU thread counts; MuJoCo runs as many one-thread processes at once")
    p.add_argument("--worlds", type=int, default=256)
    p.add_argument("--steps", type=int, default=100, help="Orrery's timed steps per run")
    p.add_argument("--mujoco-steps", type=int, default=1200, help="MuJoCo's timed env steps per round")
    p.add_argument("--rounds", type=int, default=3, help="rounds of back-to-back measurements")
    p.add_argument("--json", default="", help="write the results here")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds is {args.rounds}; expected at least 1")
    import mujoco

    threads = [int(x) for x in args.threads.split(",")]
    rows = []
    for r in range(args.rounds):
        work = [("mujoco", t) for t in sorted({1, *threads})] + [("orrery", t) for t in threads]
        for engine, t in (work if r % 2 == 0 else work[::-1]):
            if engine == "mujoco":
                mj, ncon = mujoco_side_by_side(t, args.mujoco_steps)
                rows.append({"round": r, "engine": "mujoco", "version": mujoco.__version__, "threads": t,
                             "env_steps_per_s": mj, "contacts": ncon})
                print(f"round {r}: MuJoCo {mujoco.__version__}, {t} process(es) of 1 thread: {mj:,.0f} env-steps/s "
                      f"(physics only; {ncon:.1f} contacts)")
            else:
                orr = orrery_env_steps_per_s(t, args.worlds, args.steps)
                rows.append({"round": r, "engine": "orrery", "threads": t, "worlds": args.worlds,
                             "env_steps_per_s": orr})
                print(f"round {r}: Orrery, {t} thread(s), {args.worlds} worlds: {orr:,.0f} env-steps/s (full env)")

        def mujoco_at(t):
            return next(x["env_steps_per_s"] for x in rows if x["round"] == r and x["engine"] == "mujoco"
                        and x["threads"] == t)

        for x in rows:
            if x["round"] == r and x["engine"] == "orrery":
                # per thread against MuJoCo alone on one core, and against
                # MuJoCo with as many cores busy as Orrery has threads
                x["per_thread_ratio"] = x["env_steps_per_s"] / x["threads"] / mujoco_at(1)
                x["same_cores_ratio"] = x["env_steps_per_s"] / mujoco_at(x["threads"])
    summary = []
    for t in sorted({1, *threads}):
        mjs = [x["env_steps_per_s"] for x in rows if x["engine"] == "mujoco" and x["threads"] == t]
        print(f"MuJoCo, {t} process(es), over {args.rounds} round(s): median {median(mjs):,.0f} env-steps/s "
              f"({min(mjs):,.0f}-{max(mjs):,.0f})")
    for t in threads:
        mine = [x for x in rows if x["engine"] == "orrery" and x["threads"] == t]
        speeds = [x["env_steps_per_s"] for x in mine]
        ratios, same = [x["per_thread_ratio"] for x in mine], [x["same_cores_ratio"] for x in mine]
        summary.append({"threads": t, "median_env_steps_per_s": median(speeds),
                        "median_per_thread_ratio": median(ratios), "min_ratio": min(ratios),
                        "max_ratio": max(ratios), "median_same_cores_ratio": median(same),
                        "min_same_cores_ratio": min(same), "max_same_cores_ratio": max(same)})
        print(f"Orrery, {t} thread(s): median {median(speeds):,.0f} env-steps/s; "
              f"{median(ratios):.1f} x MuJoCo per thread against MuJoCo alone (rounds {min(ratios):.1f}-"
              f"{max(ratios):.1f}); {median(same):.1f} x MuJoCo on {t} core(s) "
              f"(rounds {min(same):.1f}-{max(same):.1f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": os.cpu_count(), "rounds": args.rounds, "rows": rows, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
