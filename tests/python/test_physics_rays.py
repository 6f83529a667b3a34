"""The physics module's ray casts against MuJoCo's mj_ray, and the lidar option.

(1) The reference committed in tests/data/physics/mujoco_rays.txt (read by the
C++ test PhysicsQueryRay.MatchesMuJoCoRays, which casts the same 400 rays in
Orrery and requires the same geom and the distance within 1e-4 m) is what
MuJoCo gives today: mujoco_rays.py regenerates it. (2) physics_scenes' lidar
(rays=N) through the Python package: its shape, the range where nothing is
hit, and the walls of the crowd's room bounding every reading.
"""

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

requires_mujoco = pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="needs mujoco (PyPI)")


@requires_mujoco
def test_committed_ray_reference_is_what_mujoco_gives():
    import mujoco_rays

    geoms, rays = mujoco_rays.reference()
    kept_geoms, kept_rays = mujoco_rays.read()
    assert len(kept_geoms) == len(geoms) and len(kept_rays) == len(rays) == mujoco_rays.RAYS
    for (kind, pos, quat, size), (k2, p2, q2, s2) in zip(geoms, kept_geoms):
        assert kind == k2
        assert np.array_equal(pos, p2) and np.array_equal(quat, q2) and np.array_equal(size, s2)
    for i, ((o, d, dist, geom), (o2, d2, dist2, geom2)) in enumerate(zip(rays, kept_rays)):
        assert np.array_equal(o, o2) and np.array_equal(d, d2), i
        assert geom == geom2, i
        assert dist == pytest.approx(dist2, abs=1e-6), i
    assert sum(r[3] >= 0 for r in rays) > 300


@requires_mujoco
def test_flg_static_skips_welded_walls_in_current_mujoco():
    """Why Orrery's filter has kSkipPlanes and not a 'static' rule for hide-and-seek: since MuJoCo 2.3.6,
    flg_static=0 also passes through jointless bodies (OpenAI's walls), which blocked rays in the MuJoCo
    OpenAI ran; the floor, a world-body geom, never blocked."""
    import mujoco

    model = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><geom type="plane" size="0 0 1"/>'
        '<body pos="2 0 0.5"><geom type="box" size="0.1 1 0.5"/></body></worldbody></mujoco>')
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    geom = np.zeros(1, dtype=np.int32)
    through = mujoco.mj_ray(model, data, np.array([0, 0, 0.5]), np.array([1.0, 0, 0]), None, 0, -1, geom)
    assert through == -1 and geom[0] == -1
    blocked = mujoco.mj_ray(model, data, np.array([0, 0, 0.5]), np.array([1.0, 0, 0]), None, 1, -1, geom)
    assert blocked == pytest.approx(1.9) and geom[0] == 1


def lidar_env(scene, **options):
    orrery = pytest.importorskip("orrery")
    if "physics_scenes" not in orrery.list_envs():
        pytest.skip("this orrery build has no physics_scenes env")
    return orrery.make("physics_scenes", num_worlds=4, device="cpu", seed=1, threads=1, framework="numpy",
                       scene=scene, rays=30, count=36, **options)


def test_lidar_reads_the_range_in_the_open_and_stays_inside_the_walls():
    env = lidar_env("mixed")
    env.reset(seed=1)
    for _ in range(20):
        env.step()
    lidar = np.array(env.view("lidar"))
    assert lidar.shape == (4, 9, 30)
    assert np.all(lidar[:, 3:] == 0.0), "only the mixed scene's three agents scan"
    assert np.any(lidar[:, :3] == 6.0) and np.all((lidar[:, :3] > 0) & (lidar[:, :3] <= 6.0))
    env.close()

    env = lidar_env("crowd", lidar_range=10.0)
    env.reset(seed=1)
    lidar = np.array(env.view("lidar"))
    pose = np.array(env.view("pose"))
    angles = 2 * np.pi * np.arange(30) / 30
    for w in range(4):
        agents = pose[w, 1:37:4, :2]  # the crowd's pieces 0, 4, 8, ...: its turn-locked spheres
        for a, (x, y) in enumerate(agents):
            c, s = np.cos(angles), np.sin(angles)
            with np.errstate(divide="ignore"):
                tx = np.where(c > 1e-6, (3 - x) / c, np.where(c < -1e-6, (-3 - x) / c, np.inf))
                ty = np.where(s > 1e-6, (3 - y) / s, np.where(s < -1e-6, (-3 - y) / s, np.inf))
            assert np.all(lidar[w, a] <= np.minimum(tx, ty) + 1e-3), (w, a)
    env.close()
