"""MuJoCo reference for the physics module's canonical scenes.

Runs each scene of envs/physics_scenes (a sphere dropped on a plane, a box
sliding to rest under friction, a box resting on a plane; OpenAI's
hide-and-seek agent driven through its damped slide joints, and pushing its
cube) in MuJoCo with the same sizes, masses, friction and start, and writes the
quantities the C++ test (tests/cpp/physics_test.cpp,
MatchesMuJoCoOnCanonicalScenes) compares against, sampled as Orrery steps
(every 0.01 s; OpenAI's scenes every 0.075 s):

    python tests/python/mujoco_reference.py [--write]

prints them, and with --write stores them in tests/data/physics/mujoco_reference.txt.
"""

import argparse
import pathlib

OUT = pathlib.Path(__file__).resolve().parents[1] / "data" / "physics" / "mujoco_reference.txt"
STEP = 0.01  # Orrery's env step in these scenes (PhysicsOptions.dt)

SCENE = """
<mujoco>
  <option timestep="0.001" cone="elliptic" integrator="implicitfast"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" friction="{mu} 0.005 0.0001"/>
    <body pos="0 0 {z}">
      <freejoint/>
      <geom type="{shape}" size="{size}" mass="1" friction="{mu} 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>
"""


def simulate(shape, size, z, seconds, vx=0.0, mu=0.5):
    """(times, z, x, vx) of the body every STEP seconds, starting at t = 0."""
    import mujoco

    model = mujoco.MjModel.from_xml_string(SCENE.format(shape=shape, size=size, z=z, mu=mu))
    data = mujoco.MjData(model)
    data.qvel[0] = vx
    per = int(round(STEP / model.opt.timestep))
    rows = []
    for i in range(int(round(seconds / STEP)) + 1):
        rows.append((i * STEP, float(data.qpos[2]), float(data.qpos[0]), float(data.qvel[0])))
        for _ in range(per):
            mujoco.mj_step(model, data)
    return rows


# OpenAI's hide-and-seek agent (research/hideseek.md, section 1): a 1 kg
# sphere of radius 0.15 on slide joints x, y (damping 10), z (damping 1) and a
# hinge z (damping 10), driven by motors of gear 100 on x and y, friction 0.01,
# on a floor of friction 0.2; its cube: 0.5 m, 1 kg, slides x, y, z and hinge z
# with damping 0.01, friction 0.2. MuJoCo's defaults otherwise (Euler, which
# integrates joint damping implicitly; pyramidal cones; default solref and
# solimp), 5 ms steps, 15 per env step, gravity -50. The agent's two massless
# "arms" never touch the floor and are left out.
OPENAI = """
<mujoco>
  <option timestep="0.005" gravity="0 0 -50"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" friction="0.2 0.005 0.0001"/>
    <body name="agent" pos="{agent_x} 0 0.15">
      <joint name="ax" type="slide" axis="1 0 0" damping="10"/>
      <joint name="ay" type="slide" axis="0 1 0" damping="10"/>
      <joint name="az" type="slide" axis="0 0 1" damping="1"/>
      <joint name="ar" type="hinge" axis="0 0 1" damping="10"/>
      <geom type="sphere" size="0.15" mass="1" friction="0.01 0.005 0.0001"/>
    </body>
    {box}
  </worldbody>
  <actuator>
    <motor joint="ax" gear="100" ctrlrange="-1 1"/>
    <motor joint="ay" gear="100" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""
CUBE = """
    <body name="cube" pos="0 0 0.25">
      <joint type="slide" axis="1 0 0" damping="0.01"/>
      <joint type="slide" axis="0 1 0" damping="0.01"/>
      <joint type="slide" axis="0 0 1" damping="0.01"/>
      <joint type="hinge" axis="0 0 1" damping="0.01"/>
      <geom type="box" size="0.25 0.25 0.25" mass="1" friction="0.2 0.005 0.0001"/>
    </body>
"""
OPENAI_STEP = 0.075  # 15 substeps of 5 ms
CTRL = 0.9  # OpenAI's largest move action: 0.9 x gear 100 = 90 N


def simulate_openai(steps, with_cube):
    """(agent x, agent vx, cube x) at every env step of the agent held at ctrl 0.9 along +x."""
    import mujoco

    model = mujoco.MjModel.from_xml_string(
        OPENAI.format(agent_x=-0.45 if with_cube else 0.0, box=CUBE if with_cube else ""))
    data = mujoco.MjData(model)
    data.ctrl[0] = CTRL
    per = int(round(OPENAI_STEP / model.opt.timestep))
    rows = []
    for _ in range(steps + 1):
        cube_x = float(data.qpos[4]) if with_cube else 0.0  # the cube's x slide follows the agent's 4 joints
        rows.append((float(data.qpos[0]) + (-0.45 if with_cube else 0.0), float(data.qvel[0]), cube_x))
        for _ in range(per):
            mujoco.mj_step(model, data)
    return rows


def drive_quantities(x):
    """Terminal speed and time constant from the positions at every env step
    (40 of them, 3 s): an exponential approach to v_t from rest covers
    x(t) -> v_t (t - tau). Positions, not sampled speeds: MuJoCo's agent hops
    on its soft contact under gravity -50 (a few mm, touching the floor in
    bursts), so its speed at the sampled instants swings by 1 % (7.92 and 8.02
    on alternate steps) while the distance grows evenly."""
    terminal = (x[40] - x[20]) / (20 * OPENAI_STEP)
    tau = 40 * OPENAI_STEP - x[40] / terminal
    return terminal, tau


def reference():
    """The compared quantities, by name (units: metres and seconds)."""
    out = {}
    drop = simulate("sphere", "0.1", 1.0, 2.0)
    out["sphere_drop.rest_z"] = drop[-1][1]
    out["sphere_drop.lowest_z"] = min(r[1] for r in drop)
    out["sphere_drop.touch_time"] = next(t for t, z, _, _ in drop if z <= 0.1005)
    slide = simulate("box", "0.1 0.1 0.1", 0.1, 1.5, vx=2.0)
    out["box_slide.stop_distance"] = slide[-1][2]
    out["box_slide.stop_time"] = next(t for t, _, _, v in slide if v <= 1e-3)
    rest = simulate("box", "0.1 0.1 0.1", 0.1, 10.0)
    out["box_rest.rest_z"] = rest[-1][1]
    out["box_rest.drift"] = max(abs(x) + abs(z - rest[0][1]) for _, z, x, _ in rest)
    drive = simulate_openai(40, with_cube=False)
    terminal, tau = drive_quantities([r[0] for r in drive])
    out["drive.terminal_speed"] = terminal
    out["drive.time_constant"] = tau
    out["drive.distance_10"] = drive[10][0]
    push = simulate_openai(20, with_cube=True)
    out["push.cube_x_10"] = push[10][2]
    out["push.cube_x_20"] = push[20][2]
    out["push.agent_x_20"] = push[20][0]
    return out


def write(values, path=OUT):
    import mujoco

    lines = [f"# MuJoCo {mujoco.__version__} reference for tests/cpp/physics_test.cpp;",
             "# regenerate with: python tests/python/mujoco_reference.py --write"]
    lines += [f"{k} {v:.6f}" for k, v in values.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"store the values in {OUT}")
    args = parser.parse_args()
    values = reference()
    for k, v in values.items():
        print(f"{k:28s} {v:.6f}")
    if args.write:
        write(values)
