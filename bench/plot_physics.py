"""Plots the physics module's validation scenes: each scene's trajectory in
Orrery (physics_scenes on the CPU backend, through the Python package) beside
the same scene in MuJoCo (tests/python/mujoco_reference.py, the settings the
test suite compares against), with the analytic answer where there is one.

    python bench/plot_physics.py --out docs/images/physics-validation.png

Needs matplotlib and mujoco (neither is needed by Orrery itself). The numbers
the tests check are in docs/physics.md; this shows the curves behind them.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import mujoco_reference as ref  # noqa: E402


def track(scene, steps, action=0, body=1, **options):
    """Positions of one body, steps + 1 rows (row 0 is the start)."""
    import orrery

    env = orrery.make("physics_scenes", num_worlds=1, device="cpu", seed=1, threads=1, framework="numpy",
                      scene=scene, horizon=steps + 10, **options)
    env.reset(seed=1)
    pos = []
    for i in range(steps + 1):
        if i:
            env.step(np.full((1, 1), action, dtype=np.int32))
        pos.append(np.array(env.view("pose"))[0, body, :3].copy())
    env.close()
    return np.array(pos)


def panels():
    """(title, x label, y label, x values, {label: y values}) for each panel."""
    out = []
    t = np.arange(201) * ref.STEP
    g = 9.81
    out.append(("sphere dropped from 1 m", "s", "height, m", t,
                {"Orrery": track("sphere_drop", 200)[:, 2],
                 "MuJoCo": np.array([r[1] for r in ref.simulate("sphere", "0.1", 1.0, 2.0)]),
                 "analytic": np.maximum(1.0 - 0.5 * g * t**2, 0.1)}))
    t = np.arange(121) * ref.STEP
    out.append(("ball, restitution 0.8", "s", "height, m", t,
                {"Orrery": track("bounce", 120)[:, 2],
                 "MuJoCo (damped spring for e = 0.8)": np.array([z for _, z in ref.bounce(1.2)])}))
    t = np.arange(151) * ref.STEP
    slide = ref.simulate("box", "0.1 0.1 0.1", 0.1, 1.5, vx=2.0)
    stop = 2.0 / (0.5 * g)
    out.append(("box sliding from 2 m/s, mu 0.5", "s", "distance, m", t,
                {"Orrery": track("box_slide", 150)[:, 0], "MuJoCo": np.array([r[2] for r in slide]),
                 "analytic": np.where(t < stop, 2.0 * t - 0.25 * g * t**2, 2.0 * stop - 0.25 * g * stop**2)}))
    t = np.arange(1001) * ref.STEP
    out.append(("3-box stack: top box", "s", "sag, mm", t,
                {"Orrery": 1e3 * (0.5 - track("stack", 1000, body=3)[:, 2]),
                 "MuJoCo": 1e3 * (0.5 - np.array([p[2] for _, p in ref.stack(10.0)]))}))
    angle = 0.3
    down = np.array([0.0, -math.cos(angle), -math.sin(angle)])
    t = np.arange(151) * ref.STEP
    a = g * (math.sin(angle) - 0.2 * math.cos(angle))
    s = track("incline", 150, friction=0.2, angle=angle) @ down
    out.append(("box on a 0.3 rad incline, mu 0.2", "s", "down the slope, m", t,
                {"Orrery": s - s[0], "MuJoCo": np.array(ref.incline(0.2, 1.5)), "analytic": 0.5 * a * t**2}))
    slope = np.array([0.0, -math.sqrt(0.5), -math.sqrt(0.5)])
    t = np.arange(41) * ref.STEP
    s = track("ramp", 40, friction=0.5, height=0.1) @ slope
    out.append(("box dropped 10 cm onto the 45° wedge, mu 0.5", "s", "down the slope, m", t,
                {"Orrery": s - s[0], "MuJoCo": np.array(ref.ramp(0.5, 0.1, 0.4))}))
    openai = dict(dt=0.075, substeps=15, gravity=-50.0, push_force=90.0)
    t = np.arange(41) * ref.OPENAI_STEP
    out.append(("OpenAI's agent, 90 N (hide-and-seek)", "s", "x, m", t,
                {"Orrery": track("drive", 40, action=1, **openai)[:, 0],
                 "MuJoCo": np.array([r[0] for r in ref.simulate_openai(40, with_cube=False)]),
                 "analytic": 8.0 * (t - 0.1 * (1 - np.exp(-t / 0.1)))}))
    t = np.arange(21) * ref.OPENAI_STEP
    out.append(("agent pushing its cube", "s", "cube x, m", t,
                {"Orrery": track("push", 20, action=1, body=2, **openai)[:, 0],
                 "MuJoCo": np.array([r[2] for r in ref.simulate_openai(20, with_cube=True)])}))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="PNG to write")
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = panels()
    fig, axes = plt.subplots(2, 4, figsize=(18, 7.5))
    style = {"Orrery": dict(color="#1f77b4", lw=2.2), "analytic": dict(color="black", lw=1, ls=":")}
    for ax, (title, xl, yl, x, series) in zip(axes.flat, rows):
        for label, y in series.items():
            ax.plot(x, y, label=label, **style.get(label, dict(color="#d62728", lw=1.4, ls="--")))
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Orrery physics against MuJoCo on the validation scenes (tests/python/test_physics_mujoco.py)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=90)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
