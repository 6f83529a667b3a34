"""MuJoCo reference for hide-and-seek's physical behaviour (issue 15, item 6).

OpenAI's agent (mujoco_reference.OPENAI: a 1 kg sphere of radius 0.15 on
slide joints damped 10, 10, 1 and a hinge damped 10, motors of gear 100,
friction 0.01; floor friction 0.2; 15 steps of 5 ms per 0.075 s env step,
gravity -50, Euler, pyramidal cones, MuJoCo's default contact softness) in
two scenes beside the two physics already measured (driving alone, pushing
its cube: tests/data/physics/mujoco_reference.txt):

    climb  a locked ramp: OpenAI's 45 degree wedge, 0.5 m on each side,
           friction 0.01 (a static mesh geom of its 6 corners), its low edge
           at x = 0; the agent starts touching the slope's foot and drives
           +x at full force (ctrl 0.9: 90 N)
    wall   a wall: a static box 0.1 m thick and 4 m tall (OpenAI's outer
           walls; friction 1.0, walls keep MuJoCo's default), its face 1 m
           ahead of the agent's centre; the agent drives into it at full
           force along x and 36 N along it (ctrl 0.9, 0.36)

Positions are sampled at every env step (0.075 s), as Orrery steps:

    python tests/python/mujoco_hide_and_seek.py [--write]

prints the quantities, and with --write stores them in
tests/data/hide_and_seek/mujoco_reference.txt, which
tests/python/test_hide_and_seek_mujoco.py compares Orrery's hide_and_seek with.
"""

import argparse
import math
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import mujoco_reference  # noqa: E402  (the OPENAI scene template)

OUT = HERE.parents[0] / "data" / "hide_and_seek" / "mujoco_reference.txt"
RAMP = 0.5  # OpenAI's ramp: 0.5 m wide, long and high (45 degrees)
CLIMB_START = 0.15 - 0.15 * math.sqrt(2.0)  # the agent's centre when it touches the slope's foot
WALL_FACE = 1.0  # the wall's face, from the agent's start
CLIMB_STEPS, WALL_STEPS = 12, 20


def wedge_corners():
    """The wedge's corners, rising toward +x from its low edge at x = 0."""
    a, h = RAMP, RAMP / 2
    return [(0, -h, 0), (a, -h, 0), (0, h, 0), (a, h, 0), (a, -h, a), (a, h, a)]


def simulate(agent_x, ctrl, steps, extra, asset="", options=""):
    """The agent's (x, y, z) at every env step, steps + 1 rows, ctrl held;
    `options`: attributes added to the scene's <option>."""
    import mujoco

    xml = mujoco_reference.OPENAI.format(agent_x=agent_x, box=extra)
    if options:
        xml = xml.replace("<option ", f"<option {options} ", 1)
    if asset:
        xml = xml.replace("<worldbody>", f"<asset>{asset}</asset><worldbody>", 1)
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.ctrl[:] = ctrl
    return mujoco_reference.sample(
        model, data, steps, lambda i, data: (agent_x + float(data.qpos[0]), float(data.qpos[1]),
                                             0.15 + float(data.qpos[2])),
        every=mujoco_reference.OPENAI_STEP)


def climb_track():
    corners = " ".join(f"{x} {y} {z}" for x, y, z in wedge_corners())
    ramp = '<geom name="ramp" type="mesh" mesh="wedge" friction="0.01 0.005 0.0001"/>'
    return simulate(CLIMB_START, (0.9, 0.0), CLIMB_STEPS, ramp, f'<mesh name="wedge" vertex="{corners}"/>')


def wall_track(options=""):
    wall = (f'<geom name="wall" type="box" pos="{WALL_FACE + 0.05} 0 2" size="0.05 3 2" '
            'friction="1 0.005 0.0001"/>')
    return simulate(0.0, (0.9, 0.36), WALL_STEPS, wall, options=options)


def crossing(xs, at):
    """The (fractional) env step at which xs first passes `at`, linearly interpolated."""
    for i in range(1, len(xs)):
        if xs[i] > at:
            return i - 1 + (at - xs[i - 1]) / (xs[i] - xs[i - 1])
    return float("inf")


def climb_quantities(track):
    """Distance along x from the start after 2, 3 and 4 steps (on the slope),
    the step the centre passes over the top edge, the highest centre, x after
    10 steps (landed beyond the ramp, at full speed again)."""
    xs, zs = [r[0] for r in track], [r[2] for r in track]
    return {"climb.dx_2": xs[2] - xs[0], "climb.dx_3": xs[3] - xs[0], "climb.dx_4": xs[4] - xs[0],
            "climb.top_step": crossing(xs, RAMP), "climb.peak_z": max(zs), "climb.dx_10": xs[10] - xs[0]}


def wall_quantities(track):
    """The agent's highest centre, where it rests against the face (x after 20
    steps), how far it moved along the wall before it met it (y after 3
    steps), and its speed along the wall while pressed to it (steps 10-20)."""
    return {"wall.peak_z": max(r[2] for r in track), "wall.rest_x": track[-1][0], "wall.y_3": track[3][1],
            "wall.slide_speed": (track[20][1] - track[10][1]) / (10 * mujoco_reference.OPENAI_STEP)}


def reference():
    return {**climb_quantities(climb_track()), **wall_quantities(wall_track())}


def write(values, path=OUT):
    mujoco_reference.write(values, path, "tests/python/test_hide_and_seek_mujoco.py",
                           "tests/python/mujoco_hide_and_seek.py")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"store the values in {OUT}")
    args = parser.parse_args()
    values = reference()
    for k, v in values.items():
        print(f"{k:20s} {v:.6f}")
    if args.write:
        write(values)
