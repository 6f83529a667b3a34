"""MuJoCo reference for the physics module's canonical scenes.

Runs each scene of envs/physics_scenes (a sphere dropped on a plane, a box
sliding to rest under friction, a box resting on a plane, a flat box on a 45
degree wedge ramp, resting, sliding, and dropped onto it; a stack of three
boxes; a box on a 0.3 rad incline below and above its friction angle; a ball
bouncing with restitution 0.8; OpenAI's
hide-and-seek agent driven through its damped slide joints, and pushing its
cube) in MuJoCo with the same sizes, masses, friction and start, and writes the
quantities the C++ tests (tests/cpp/physics_test.cpp,
MatchesMuJoCoOnCanonicalScenes; physics_hull_test.cpp, MatchesMuJoCoOnTheRamp)
compare against, sampled as Orrery steps (every 0.01 s; OpenAI's scenes every
0.075 s):

    python tests/python/mujoco_reference.py [--write]

prints them, and with --write stores them in tests/data/physics/mujoco_reference.txt.
"""

import argparse
import math
import pathlib

OUT = pathlib.Path(__file__).resolve().parents[1] / "data" / "physics" / "mujoco_reference.txt"
STEP = 0.01  # Orrery's env step in these scenes (PhysicsOptions.dt)

def sample(model, data, count, read, every=STEP):
    """read(data) at t = 0 and after each of `count` spans of `every` seconds,
    MuJoCo stepping at its own timestep in between: a list of count + 1 rows."""
    import mujoco

    per = int(round(every / model.opt.timestep))
    rows = []
    for i in range(count + 1):
        rows.append(read(i, data))
        if i < count:
            for _ in range(per):
                mujoco.mj_step(model, data)
    return rows


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
    return sample(model, data, int(round(seconds / STEP)),
                  lambda i, d: (i * STEP, float(d.qpos[2]), float(d.qpos[0]), float(d.qvel[0])))


# Three 0.2 m cubes of 1 kg stacked on the floor, friction 0.5 (physics_scenes
# scene `stack`).
STACK = """
<mujoco>
  <option timestep="0.001" cone="elliptic" integrator="implicitfast"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" friction="0.5 0.005 0.0001"/>
{boxes}
  </worldbody>
</mujoco>
"""


def stack(seconds):
    """(times, [top box x, y, z]) every STEP seconds."""
    import mujoco

    box = ('    <body pos="0 0 {z}"><freejoint/>'
           '<geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5 0.005 0.0001"/></body>')
    model = mujoco.MjModel.from_xml_string(STACK.format(boxes="\n".join(box.format(z=0.1 + 0.2 * i) for i in range(3))))
    data = mujoco.MjData(model)
    return sample(model, data, int(round(seconds / STEP)),
                  lambda i, data: (i * STEP, [float(x) for x in data.qpos[14:17]]))


# A 0.2 m cube of 1 kg on a plane tilted `angle` about x (physics_scenes scene
# `incline`), both of friction `mu`, at rest on it at the start.
INCLINE = """
<mujoco>
  <option timestep="0.001" cone="elliptic" integrator="implicitfast"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" quat="{quat}" friction="{mu} 0.005 0.0001"/>
    <body pos="{pos}" quat="{quat}">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="1" friction="{mu} 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>
"""


def incline(mu, seconds, angle=0.3):
    """Distances the cube moved down the slope (from its start) every STEP seconds."""
    import mujoco

    quat = f"{math.cos(angle / 2)} {math.sin(angle / 2)} 0 0"
    up = (0.0, -math.sin(angle), math.cos(angle))
    down = (0.0, -math.cos(angle), -math.sin(angle))
    model = mujoco.MjModel.from_xml_string(INCLINE.format(quat=quat, mu=mu, pos=" ".join(str(0.1 * u) for u in up)))
    data = mujoco.MjData(model)
    start = [float(x) for x in data.qpos[:3]]
    return sample(model, data, int(round(seconds / STEP)),
                  lambda i, data: sum((float(data.qpos[k]) - start[k]) * down[k] for k in range(3)))


# A ball of radius 0.1 dropped from 1 m (physics_scenes scene `bounce`,
# restitution 0.8). MuJoCo has no coefficient of restitution: its contact is a
# spring-damper. With solref's direct form (-stiffness, -damping) and solimp
# near 1, a linear spring of damping ratio z returns e = exp(-pi z / sqrt(1 -
# z^2)) of the approach speed, so z is set for e = 0.8 (stiffness 1e5, 0.2 ms
# steps to resolve the 20 ms contact).
BOUNCE = """
<mujoco>
  <option timestep="0.0002" cone="elliptic" integrator="implicitfast"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" friction="0.5 0.005 0.0001" solref="{solref}" solimp="0.99 0.99 0.001"/>
    <body pos="0 0 1">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" friction="0.5 0.005 0.0001" solref="{solref}" solimp="0.99 0.99 0.001"/>
    </body>
  </worldbody>
</mujoco>
"""
RESTITUTION = 0.8


def bounce(seconds):
    """(times, z) of the ball every STEP seconds."""
    import mujoco

    e = RESTITUTION
    zeta = -math.log(e) / math.sqrt(math.pi**2 + math.log(e) ** 2)
    k = 1e5
    model = mujoco.MjModel.from_xml_string(BOUNCE.format(solref=f"{-k} {-2 * zeta * math.sqrt(k)}"))
    data = mujoco.MjData(model)
    return sample(model, data, int(round(seconds / STEP)), lambda i, data: (i * STEP, float(data.qpos[2])))


def bounce_restitution(z, first=0.1, drop=0.9, window=(50, 120)):
    """The apex after the first contact and the restitution it implies,
    sqrt(rise / drop), from heights sampled every STEP seconds."""
    apex = max(z[window[0]:window[1]])
    return apex, math.sqrt(max(apex - first, 0.0) / drop)


# The ramp scene: a static 45 degree wedge `a` m on each side (MuJoCo's mesh
# geoms are convex hulls, so the same 6 vertices make the same solid as
# phys::wedge_vertices) and a flat 0.2 x 0.2 x 0.1 m box of 1 kg lying on the
# slope's middle, `height` above it.
RAMP = """
<mujoco>
  <option timestep="0.001" cone="elliptic" integrator="implicitfast"/>
  <asset>
    <mesh name="wedge" vertex="{vertices}"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" friction="{mu} 0.005 0.0001"/>
    <geom name="ramp" type="mesh" mesh="wedge" friction="{mu} 0.005 0.0001"/>
    <body pos="{pos}" quat="{quat}">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.05" mass="1" friction="{mu} 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>
"""
DOWN_SLOPE = (0.0, -math.sqrt(0.5), -math.sqrt(0.5))


def ramp(mu, height, seconds, a=1.0):
    """Distances the box moved down the slope (from its start) every STEP seconds."""
    import mujoco

    h = a / 2
    corners = [(-h, -h, 0), (h, -h, 0), (-h, h, 0), (h, h, 0), (-h, h, a), (h, h, a)]
    up = (0.0, -math.sqrt(0.5), math.sqrt(0.5))
    pos = [0.0 + up[0] * (0.05 + height), up[1] * (0.05 + height), a / 2 + up[2] * (0.05 + height)]
    quat = f"{math.cos(math.pi / 8)} {math.sin(math.pi / 8)} 0 0"  # 45 degrees about x
    xml = RAMP.format(vertices=" ".join(f"{x} {y} {z}" for x, y, z in corners), mu=mu,
                      pos=" ".join(str(p) for p in pos), quat=quat)
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    start = [float(x) for x in data.qpos[:3]]
    return sample(model, data, int(round(seconds / STEP)),
                  lambda i, data: sum((float(data.qpos[k]) - start[k]) * DOWN_SLOPE[k] for k in range(3)))
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
    offset = -0.45 if with_cube else 0.0

    def read(_, data):
        cube_x = float(data.qpos[4]) if with_cube else 0.0  # the cube's x slide follows the agent's 4 joints
        return float(data.qpos[0]) + offset, float(data.qvel[0]), cube_x

    return sample(model, data, steps, read, every=OPENAI_STEP)


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
    held = ramp(1.2, 0.0, 3.0)  # mu 1.2 > tan 45: rests
    out["ramp.rest_drift"] = max(abs(s) for s in held)
    slide = ramp(0.8, 0.0, 0.5)  # mu 0.8 < tan 45: a = g (sin 45 - mu cos 45) = 1.3873
    out["ramp.slide_accel"] = (slide[50] - 2 * slide[30] + slide[10]) / 0.2**2
    drop = ramp(0.5, 0.1, 0.4)  # dropped from 10 cm above the slope, mu 0.5
    out["ramp.drop_distance_0.2"] = drop[20]
    out["ramp.drop_distance_0.4"] = drop[40]
    top = stack(10.0)
    out["stack.top_compression"] = 0.5 - top[-1][1][2]
    out["stack.drift"] = max(abs(p[0]) + abs(p[1]) for _, p in top)
    held = incline(0.5, 5.0)  # mu 0.5 > tan 0.3: rests
    out["incline.rest_drift"] = max(abs(s) for s in held)
    slide = incline(0.2, 1.5)  # mu 0.2 < tan 0.3: a = g (sin 0.3 - 0.2 cos 0.3) = 1.0247
    out["incline.slide_accel"] = (slide[150] - 2 * slide[100] + slide[50]) / 0.5**2
    apex, e = bounce_restitution([z for _, z in bounce(1.2)])
    out["bounce.apex"] = apex
    out["bounce.restitution"] = e
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


def write(values, path=OUT, checked_by="tests/cpp/physics_test.cpp", script="tests/python/mujoco_reference.py"):
    import mujoco

    lines = [f"# MuJoCo {mujoco.__version__} reference for {checked_by};",
             f"# regenerate with: python {script} --write"]
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
