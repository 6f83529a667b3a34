"""MuJoCo reference for the physics module's canonical scenes.

Runs each scene of envs/physics_scenes (a sphere dropped on a plane, a box
sliding to rest under friction, a box resting on a plane) in MuJoCo with the
same sizes, masses, friction and start, and writes the quantities the C++ test
(tests/cpp/physics_test.cpp, MatchesMuJoCoOnCanonicalScenes) compares against,
sampled every 0.01 s as Orrery steps:

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
