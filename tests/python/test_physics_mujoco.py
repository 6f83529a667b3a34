"""The physics module against MuJoCo on canonical scenes.

Two checks. (1) The MuJoCo reference committed in
tests/data/physics/mujoco_reference.txt (read by the C++ test
PhysicsScene.MatchesMuJoCoOnCanonicalScenes) is what MuJoCo gives today:
mujoco_reference.py regenerates it. (2) Orrery's physics_scenes env, through
the Python package, matches MuJoCo within the documented tolerances:

    quantity                     tolerance   why
    sphere / box rest height     2 mm        both use soft contacts: MuJoCo rests 0.1-0.4 mm deep, Orrery 0.02-0.5 mm
    sphere touch-down time       0.02 s      one env step either side
    box stopping distance        5 %         Coulomb: v^2 / (2 mu g) = 0.4077 m; MuJoCo 0.4069, Orrery 0.4053
    box stopping time            5 % + 1 step  MuJoCo's soft contact lets the last mm/s decay slowly
    penetration while falling    5 mm        Orrery's speculative contacts; MuJoCo sinks 28 mm on impact
    energy                       never grows by more than 1 mJ per step
    3-box stack, 10 s:           top box's sag 1 mm of MuJoCo's (0.87 mm), sideways drift 1 mm
    box on a 0.3 rad incline:
      mu 0.5 (> tan 0.3): drift  1 cm        both hold it; MuJoCo's soft friction creeps 3.8 mm in 5 s
      mu 0.2: acceleration       5 %         analytic g (sin - mu cos) 0.3 = 1.0247; MuJoCo 1.0248
    ball, restitution 0.8:       5 %         restitution from the first apex, sqrt(rise / drop); MuJoCo
                                             has no coefficient: its contact spring is damped for e = 0.8
                                             (mujoco_reference.py), which returns 0.808
    box on the 45 degree ramp:
      mu 1.2 (> tan 45): drift   1 cm        both hold it; MuJoCo's soft friction creeps 9 mm in 3 s, Orrery < 0.1 mm
      mu 0.8: acceleration       5 %         analytic g (sin - mu cos) 45 = 1.3873; MuJoCo 1.3800, Orrery 1.3874
      dropped 10 cm, mu 0.5:     5 %         distance down the slope 0.2 s and 0.4 s later (MuJoCo 0.1211, 0.3276 m)

OpenAI's hide-and-seek agent (a 1 kg sphere on slide joints damped 10, 10, 1
and a hinge damped 10; 90 N along x; 0.075 s steps of 15 substeps; gravity
-50; floor friction 0.2, which is the pair's, MuJoCo taking the larger):

    agent's terminal speed       1 %         (90 - 10) N / 10 N s/m = 8 m/s: MuJoCo 8.000, Orrery 8.000
                                             (contacts solved with the damped mass: physics/README.md)
    agent's time constant        5 %         m / d = 0.1 s: MuJoCo 0.0999, Orrery 0.1000
    distance in 10 steps         5 %         MuJoCo 5.202, Orrery 5.201 m
    cube pushed 10 / 20 steps    5 %         the 0.5 m, 1 kg cube, friction 0.2, 5 cm ahead: Orrery 0.3-0.8 % short
"""

import importlib.util
import math
import pathlib
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

requires_mujoco = pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="needs mujoco (PyPI)")


def committed():
    out = {}
    for line in (HERE.parent / "data" / "physics" / "mujoco_reference.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = line.split()
            out[key] = float(value)
    return out


@requires_mujoco
def test_committed_reference_is_what_mujoco_gives():
    import mujoco_reference

    fresh = mujoco_reference.reference()
    for key, value in committed().items():
        assert fresh[key] == pytest.approx(value, abs=2e-4), key


def orrery_track(scene, steps, action=0, body=1, **options):
    """A body's positions and velocities, steps + 1 rows (row 0 is the start),
    the action held at `action` (0: none, 1: push body 1 along +x)."""
    orrery = pytest.importorskip("orrery")
    if "physics_scenes" not in orrery.list_envs():
        pytest.skip("this orrery build has no physics_scenes env")
    env = orrery.make("physics_scenes", num_worlds=1, device="cpu", seed=1, threads=1, framework="numpy",
                      scene=scene, horizon=steps + 10, **options)
    env.reset(seed=1)
    pos, vel = [], []
    for i in range(steps + 1):
        if i:
            env.step(np.full((1, 1), action, dtype=np.int32))
        pos.append(np.array(env.view("pose"))[0, body, :3].copy())
        vel.append(np.array(env.view("velocity"))[0, body, :3].copy())
    env.close()
    return np.array(pos), np.array(vel)


def test_orrery_matches_mujoco_on_canonical_scenes():
    ref = committed()
    p, v = orrery_track("sphere_drop", 200)
    assert p[-1, 2] == pytest.approx(ref["sphere_drop.rest_z"], abs=2e-3)
    touch = 0.01 * int(np.argmax(p[:, 2] <= 0.1005))
    assert touch == pytest.approx(ref["sphere_drop.touch_time"], abs=0.02)
    assert p[:, 2].min() > 0.1 - 5e-3
    energy = 9.81 * p[:, 2] + 0.5 * (v * v).sum(axis=1)
    assert np.all(np.diff(energy) < 1e-3)

    p, v = orrery_track("box_slide", 150)
    assert p[-1, 0] == pytest.approx(ref["box_slide.stop_distance"], rel=0.05)
    stop = 0.01 * int(np.argmax(v[:, 0] <= 1e-3))
    assert stop == pytest.approx(ref["box_slide.stop_time"], abs=0.05 * ref["box_slide.stop_time"] + 0.01)

    p, _ = orrery_track("box_rest", 1000)
    assert p[-1, 2] == pytest.approx(ref["box_rest.rest_z"], abs=2e-3)
    assert np.abs(p[:, :2]).max() < 1e-3


def test_orrery_matches_mujoco_on_the_ramp():
    ref = committed()
    down = np.array([0.0, -math.sqrt(0.5), -math.sqrt(0.5)])

    def slope(p):
        return (p - p[0]) @ down

    held = slope(orrery_track("ramp", 300, friction=1.2)[0])
    assert np.abs(held).max() == pytest.approx(ref["ramp.rest_drift"], abs=0.01)
    assert np.abs(held).max() < 1e-3  # at rest, as the analytic answer says
    slide = slope(orrery_track("ramp", 50, friction=0.8)[0])
    accel = (slide[50] - 2 * slide[30] + slide[10]) / 0.2**2
    assert accel == pytest.approx(ref["ramp.slide_accel"], rel=0.05)
    drop = slope(orrery_track("ramp", 40, friction=0.5, height=0.1)[0])
    assert drop[20] == pytest.approx(ref["ramp.drop_distance_0.2"], rel=0.05)
    assert drop[40] == pytest.approx(ref["ramp.drop_distance_0.4"], rel=0.05)


OPENAI = dict(dt=0.075, substeps=15, gravity=-50.0, push_force=90.0)


def test_openais_agent_matches_mujoco_driving_and_pushing():
    import mujoco_reference

    ref = committed()
    p, _ = orrery_track("drive", 40, action=1, **OPENAI)
    terminal, tau = mujoco_reference.drive_quantities(p[:, 0])
    assert terminal == pytest.approx(ref["drive.terminal_speed"], rel=0.01)
    assert tau == pytest.approx(ref["drive.time_constant"], rel=0.05)
    assert p[10, 0] == pytest.approx(ref["drive.distance_10"], rel=0.05)
    cube, _ = orrery_track("push", 20, action=1, body=2, **OPENAI)
    assert cube[10, 0] == pytest.approx(ref["push.cube_x_10"], rel=0.05)
    assert cube[20, 0] == pytest.approx(ref["push.cube_x_20"], rel=0.05)
    assert abs(cube[20, 1]) < 0.01


def test_orrery_matches_mujoco_stacking_inclines_and_bouncing():
    import mujoco_reference

    ref = committed()
    top, _ = orrery_track("stack", 1000, body=3)
    assert 0.5 - top[-1, 2] == pytest.approx(ref["stack.top_compression"], abs=1e-3)
    assert np.abs(top[:, :2]).max() == pytest.approx(ref["stack.drift"], abs=1e-3)

    angle = 0.3
    down = np.array([0.0, -math.cos(angle), -math.sin(angle)])
    held = orrery_track("incline", 500, friction=0.5, angle=angle)[0] @ down
    held -= held[0]
    assert np.abs(held).max() == pytest.approx(ref["incline.rest_drift"], abs=0.01)
    assert np.abs(held).max() < 1e-3  # at rest, as the analytic answer says
    slide = orrery_track("incline", 150, friction=0.2, angle=angle)[0] @ down
    accel = (slide[150] - 2 * slide[100] + slide[50]) / 0.5**2
    assert accel == pytest.approx(ref["incline.slide_accel"], rel=0.05)

    z = orrery_track("bounce", 120)[0][:, 2]
    apex, e = mujoco_reference.bounce_restitution(list(z))
    assert e == pytest.approx(ref["bounce.restitution"], rel=0.05)
    assert e == pytest.approx(mujoco_reference.RESTITUTION, rel=0.05)
