"""Hide-and-seek's physical behaviour against MuJoCo with OpenAI's parameters
(issue 15, item 6; envs/hide_and_seek/README.md, "Against MuJoCo").

The same scenes built in MuJoCo (tests/python/mujoco_hide_and_seek.py and,
for driving and pushing, tests/python/mujoco_reference.py) and in Orrery's
hide_and_seek env itself, through the Python package on the CPU backend: the
env's own agent, cube and ramp (masses, damping, friction, actions), placed
by writing the exported pose columns after a reset (exports are the
components' columns, so a write moves the body; velocities are zero then).

    quantity                          tolerance  MuJoCo 4.0.0     Orrery
    agent's terminal speed (90 N)     1 %        8.000            8.000 m/s
    agent's time constant             5 %        0.0999           0.1000 s
    agent's distance in 10 steps      5 %        5.202            5.201 m
    cube pushed 10 / 20 steps         5 %        3.872 / 9.082    3.842 / 9.053 m
    climbing a locked ramp (static wedge, from its foot, 90 N up it):
      peak centre height              over the top (>= 0.64 m) in both: 0.670, 0.750 m
      step its centre passes the top  5 %        4.00             4.06
      distance in 2 / 3 / 4 steps     5 %        0.171/0.342/0.562  0.172/0.341/0.542 m
      distance in 10 steps            5 %        3.818            3.711 m (landed, at full speed again)
    not climbing a wall (90 N into it, 36 N along it):
      highest centre                  2 mm of 0.15 m in both: 0.1500, 0.1500 m
      rests against the face at x     5 mm       0.8518           0.8502 m (never 1 cm into it; MuJoCo 39 mm at impact)
      along it before contact (3 steps) 10 %     0.427            0.401 m (0.0832 / 0.2633 m after 1 / 2 steps in both)
      rolling along it, pressed to it  1 % of the rigid 0.0572,  0.0566 (impratio 100)  0.0572 m/s
                                       5 % of MuJoCo's hard friction

How damping and friction enter (physics/README.md, "Damping"; docs/physics.md):
the agent's joint damping (AxisDamping) is implicit, and contacts are solved
with the damped mass M + h D, as MuJoCo does: without that (Orrery before), a
steady friction force f was felt as f (1 + h d / m) (terminal speed 7.955),
the climb fell 7-11 % short in 2-4 steps, and the hinge (10 N m s on a 0.009
kg m^2 sphere: h D / I = 5.6 per 5 ms substep) let a wall's friction spin the
agent 6.5 times too freely (0.313 m/s along the wall). Friction takes
MuJoCo's default pyramidal cone (FrictionCone::kPyramid), as OpenAI ran: a
body sliding along one tangent feels no friction across it, so the agent
driven at 90 N along x and 36 N along y keeps all of its y drive on the floor
(the circle would take 4 N of it: 0.372 m in 3 steps, as MuJoCo's elliptic
cone gives).

Known gap (xfail, strict): pressed to the wall, MuJoCo's agent moves along it
at 0.081 m/s, 41 % faster than the rigid answer (36 N less the floor's 10 N,
against the y damping 10 and the hinge's 10 N m s seen at the contact as 10 /
r^2: 26 / 454.4 = 0.0572 m/s, Orrery's). That is MuJoCo's soft friction
creeping at its default impratio 1: harder friction brings MuJoCo there
(impratio 10: 0.0605, 100: 0.0566 m/s). Orrery's friction is rigid (Coulomb
with a stick), so the creep is not modelled.
"""

import importlib.util
import math
import pathlib
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import ENVS  # noqa: E402

requires_mujoco = pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="needs mujoco (PyPI)")
pytestmark = pytest.mark.skipif("hide_and_seek" not in ENVS, reason="hide_and_seek is not registered")

RAMP = 0.5
STILL = (5, 5)


def committed(name):
    out = {}
    for line in (HERE.parent / "data" / name / "mujoco_reference.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = line.split()
            out[key] = float(value)
    return out


@requires_mujoco
def test_committed_reference_is_what_mujoco_gives():
    import mujoco_hide_and_seek

    fresh = mujoco_hide_and_seek.reference()
    kept = committed("hide_and_seek")
    assert set(kept) == set(fresh)
    for key, value in kept.items():
        assert fresh[key] == pytest.approx(value, abs=2e-4), key


def qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


class Scene:
    """One world of hide_and_seek, 1 v 1 with one cube and one ramp, no inner
    walls; the hider (row 0) is the agent under test, the rest set aside."""

    def __init__(self, walls=False, **options):
        import orrery

        self.env = orrery.make("hide_and_seek", num_worlds=1, device="cpu", seed=1, threads=1, framework="numpy",
                               hiders=1, seekers=1, min_boxes=1, max_boxes=1, elongated=False, ramps=1, max_rooms=1,
                               outer_wall_prob=1 if walls else 0, prep_steps=1, horizon=1000, **options)
        self.env.reset(seed=1)
        self.agents, self.objects = self.env.view("agent_pose"), self.env.view("object_pose")
        self.ramp_frame = self.objects[0, 1, 3:].copy()  # spawned unturned: the wedge's principal axes
        self.agents[0, 1, :3] = [0.5, 5.5, 0.15]  # the seeker, aside
        self.objects[0, 0, :3] = [0.5, 0.5, 0.25]  # the cube
        self.place_ramp(-20.0, -20.0, 0.0)

    def place_ramp(self, x, y, yaw, locked=False):
        """The ramp's own frame (middle of its bottom face) at (x, y, 0) turned by yaw."""
        turn = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
        self.objects[0, 1, :3] = [x - math.sin(yaw) * RAMP / 6, y + math.cos(yaw) * RAMP / 6, RAMP / 3]  # centroid
        self.objects[0, 1, 3:] = qmul(turn, self.ramp_frame)
        if locked:  # locked by the seekers' team: static, and the hider cannot unlock it
            self.env.view("object_state")[0, 1] = [3, 1, 1, 1]

    def track(self, start, move, steps, body=None):
        """Positions of the hider (or object `body`) at every step, the hider's move bins held."""
        self.agents[0, 0, :3] = start
        action = np.zeros((1, 2, 5), dtype=np.int32)
        action[0, :, :3] = 5
        action[0, 0, :2] = move
        view = self.agents if body is None else self.objects
        row = 0 if body is None else body
        out = [view[0, row, :3].copy()]
        for _ in range(steps):
            self.env.step(action)
            out.append(view[0, row, :3].copy())
        assert self.env.errors().max() == 0
        return np.array(out)


def test_the_agent_drives_and_pushes_its_cube_as_in_mujoco():
    import mujoco_reference

    ref = committed("physics")
    scene = Scene()
    p = scene.track([1.0, 3.0, 0.15], (10, 5), 40)
    terminal, tau = mujoco_reference.drive_quantities(p[:, 0] - p[0, 0])
    assert terminal == pytest.approx(ref["drive.terminal_speed"], rel=0.01)
    assert tau == pytest.approx(ref["drive.time_constant"], rel=0.05)
    assert p[10, 0] - p[0, 0] == pytest.approx(ref["drive.distance_10"], rel=0.05)
    assert np.abs(p[:, 1] - 3.0).max() < 1e-3 and np.abs(p[:, 2] - 0.15).max() < 1e-3

    scene = Scene()
    scene.objects[0, 0, :3] = [1.45, 3.0, 0.25]  # the cube 5 cm ahead of the agent
    cube = scene.track([1.0, 3.0, 0.15], (10, 5), 20, body=0)
    assert cube[10, 0] - 1.45 == pytest.approx(ref["push.cube_x_10"], rel=0.05)
    assert cube[20, 0] - 1.45 == pytest.approx(ref["push.cube_x_20"], rel=0.05)
    assert abs(cube[20, 1] - 3.0) < 0.01


def climb():
    import mujoco_hide_and_seek as mh

    scene = Scene()
    scene.place_ramp(3.0 + RAMP / 2, 3.0, -math.pi / 2, locked=True)  # rising toward +x from x = 3
    p = scene.track([3.0 + mh.CLIMB_START, 3.0, 0.15], (10, 5), mh.CLIMB_STEPS)
    p[:, 0] -= 3.0
    return mh.climb_quantities([tuple(r) for r in p]), p


def test_the_agent_climbs_a_locked_ramp_as_in_mujoco():
    ref = committed("hide_and_seek")
    got, p = climb()
    assert got["climb.peak_z"] >= RAMP + 0.15 - 0.01 and ref["climb.peak_z"] >= RAMP + 0.15 - 0.01  # over the top
    assert np.abs(p[:, 1] - 3.0).max() < 1e-3  # straight up the slope
    assert p[-1, 2] == pytest.approx(0.15, abs=2e-3)  # landed beyond it
    assert got["climb.top_step"] == pytest.approx(ref["climb.top_step"], rel=0.10)
    for k in ("climb.dx_2", "climb.dx_3", "climb.dx_4"):
        assert got[k] == pytest.approx(ref[k], rel=0.15), k
    assert got["climb.dx_10"] == pytest.approx(ref["climb.dx_10"], rel=0.10)


def test_the_climb_is_within_five_percent_of_mujocos():
    ref = committed("hide_and_seek")
    got, _ = climb()
    for k in ("climb.dx_2", "climb.dx_3", "climb.dx_4", "climb.top_step", "climb.dx_10"):
        assert got[k] == pytest.approx(ref[k], rel=0.05), k


def wall():
    import mujoco_hide_and_seek as mh

    scene = Scene(walls=True)  # the outer wall at x = 6: its face at 5.95
    start = [5.95 - mh.WALL_FACE, 3.0, 0.15]
    p = scene.track(start, (10, 7), mh.WALL_STEPS)
    p[:, 0] -= start[0] - 0.0
    p[:, 1] -= 3.0
    return mh.wall_quantities([tuple(r) for r in p]), p


def test_the_agent_does_not_climb_a_wall():
    ref = committed("hide_and_seek")
    got, p = wall()
    assert got["wall.peak_z"] == pytest.approx(0.15, abs=2e-3) and ref["wall.peak_z"] == pytest.approx(0.15, abs=2e-3)
    assert got["wall.rest_x"] == pytest.approx(ref["wall.rest_x"], abs=5e-3)
    assert np.all(p[:, 0] <= 1.0 - 0.15 + 0.01)  # never 1 cm into the face (MuJoCo: 39 mm at the impact)
    assert got["wall.y_3"] == pytest.approx(ref["wall.y_3"], rel=0.10)


@pytest.mark.xfail(strict=True, reason="MuJoCo's soft friction creeps (0.081 m/s at impratio 1, 0.057 at 100); "
                                       "Orrery's rigid friction rolls at the rigid 0.057")
def test_the_agent_pressed_to_a_wall_slides_along_it_as_in_mujoco():
    ref = committed("hide_and_seek")
    got, _ = wall()
    assert got["wall.slide_speed"] == pytest.approx(ref["wall.slide_speed"], rel=0.05)


@requires_mujoco
def test_the_agent_pressed_to_a_wall_rolls_along_it_as_rigid_friction_does():
    """Pressed to the wall (friction 1: its point sticks), the agent rolls along
    it: 36 N less the floor's 0.2 x 50 N against its y damping 10 and its
    hinge's 10 N m s, seen at the contact as 10 / r^2, for a steady speed of
    26 / (10 + 10 / 0.15^2). MuJoCo gives it with its friction made hard
    (impratio 100; its default creeps: the xfail above)."""
    import mujoco_hide_and_seek as mh

    got, _ = wall()
    assert got["wall.slide_speed"] == pytest.approx(26.0 / (10.0 + 10.0 / 0.15**2), rel=0.01)
    hard = mh.wall_quantities(mh.wall_track('impratio="100"'))
    assert got["wall.slide_speed"] == pytest.approx(hard["wall.slide_speed"], rel=0.05)


WALL_RAYS = """
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1"/>
    <body name="wall" pos="6 3 2"><geom type="box" size="0.05 3.05 2"/></body>
    <body name="hider" pos="5.5 3 0.15">
      <joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/><joint type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.15"/>
    </body>
    <body name="seeker" pos="6.5 3 0.15">
      <joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/><joint type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.15"/>
    </body>
  </worldbody>
</mujoco>
"""


@requires_mujoco
def test_walls_occlude_as_openais_mj_ray_did_and_pass_as_todays_does():
    """The decision 'walls block rays' (README, Decisions): OpenAI's walls are
    jointless bodies and its rays called mj_ray with flg_static=0, which before
    MuJoCo 2.3.6 skipped only world-body geoms (the floor) and so hit walls;
    today it also skips bodies welded to the world. The same ray, from a hider
    0.45 m from the outer wall at x = 6 toward a seeker beyond it, in MuJoCo
    (the old rule emulated by flg_static=1: nothing here is a world-body geom
    in its path) and in Orrery, walls_block_rays=1 (default) and 0."""
    import mujoco

    model = mujoco.MjModel.from_xml_string(WALL_RAYS)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    hider = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "hider")
    geom = np.zeros(1, dtype=np.int32)

    def mj_ray(flg_static):
        d = mujoco.mj_ray(model, data, np.array([5.5, 3.0, 0.15]), np.array([1.0, 0.0, 0.0]), None, flg_static,
                          hider, geom)
        return d, model.geom_bodyid[geom[0]]

    old, old_body = mj_ray(1)  # OpenAI's MuJoCo: the wall is hit
    new, new_body = mj_ray(0)  # MuJoCo >= 2.3.6: through the wall, onto the seeker
    assert old_body == mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "wall") and old == pytest.approx(0.45)
    assert new_body == mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "seeker") and new == pytest.approx(0.85)
    for block, distance, seen in ((1, old, 0.0), (0, new, 1.0)):
        scene = Scene(walls=True, walls_block_rays=block)
        scene.agents[0, 0] = [5.5, 3.0, 0.15, 1.0, 0.0, 0.0, 0.0]  # facing +x, the wall and the seeker ahead
        scene.agents[0, 1] = [6.5, 3.0, 0.15, 1.0, 0.0, 0.0, 0.0]
        obs, *_ = scene.env.step(np.full((1, 2, 5), 5, dtype=np.int32) * np.array([1, 1, 1, 0, 0], dtype=np.int32))
        names = list(scene.env.obs_names)
        assert obs[0, 0, names.index("lidar0")] == pytest.approx(distance, abs=1e-3), block
        assert obs[0, 0, names.index("sees_agent0")] == seen, block
