"""MuJoCo reference for the physics module's ray casts (physics/query.hpp).

Builds a seeded scene of spheres, capsules, boxes, convex hulls (MuJoCo meshes
of vertices: two wedge ramps, two random polytopes) and two planes (a floor
and a wall) in MuJoCo, casts seeded rays with mujoco.mj_ray and writes the scene,
the rays (most aimed near a solid) and MuJoCo's answers (distance and geom hit, or -1 and -1), which the
C++ test (tests/cpp/physics_query_test.cpp, MatchesMuJoCoRays) casts in Orrery
and compares (distance within 1e-4 m, the same geom):

    python tests/python/mujoco_rays.py [--write]

prints a summary, and with --write stores tests/data/physics/mujoco_rays.txt.

Every number is rounded to float32 before MuJoCo sees it, so both engines get
the same inputs. A ray is kept only if mj_ray hits the same geom when its
origin moves 1e-3 m along each axis, and hits within 20 m (or nothing): rays grazing a silhouette or passing two
surfaces at nearly the same distance would compare rounding, not geometry.

All geoms belong to the world body, so mj_ray gets flg_static=1. In MuJoCo
2.3.6 and later, flg_static=0 skips geoms of the world body and of bodies
welded to it (walls); before 2.3.6 it skipped only the world body's own
geoms. OpenAI's hide-and-seek called mj_ray with flg_static=0 on MuJoCo
1.50/2.0, so its walls (jointless bodies) blocked rays and only the floor did
not: Orrery's kSkipPlanes filter is that old rule for a plane floor.
"""

import argparse
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "data" / "physics" / "mujoco_rays.txt"
SEED = 14
RAYS = 400
SHIFT = 1e-3  # how far a kept ray's origin may move without changing the geom it hits
REACH = 20.0  # kept rays hit within this (a plane met at a grazing angle 100 m away tests float32, not geometry)


def f32(x):
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def unit_quat(rng):
    q = f32(rng.normal(size=4))
    return f32(q / np.linalg.norm(q))


def scene(rng):
    """Geoms as (type, pos, quat, size): a floor and a wall plane, 8 of each primitive solid, 4 hulls
    (size: their vertices, flattened, in the frame pos and quat place)."""
    geoms = [("plane", f32([0, 0, 0]), f32([1, 0, 0, 0]), f32([0, 0, 1]))]
    # The wall x = 3.5 facing -x: the plane's +z turned onto -x (-90 degrees about y).
    s = np.sqrt(0.5)
    geoms.append(("plane", f32([3.5, 0, 0]), f32([s, 0, -s, 0]), f32([0, 0, 1])))
    for kind in ("sphere", "capsule", "box"):
        for _ in range(8):
            pos = f32([rng.uniform(-3, 3), rng.uniform(-3, 3), rng.uniform(0.2, 2.0)])
            if kind == "sphere":
                size = f32([rng.uniform(0.1, 0.5), 0, 0])
            elif kind == "capsule":
                size = f32([rng.uniform(0.05, 0.3), rng.uniform(0.1, 0.6), 0])
            else:
                size = f32(rng.uniform(0.05, 0.6, size=3))
            geoms.append((kind, pos, unit_quat(rng), size))
    # Convex hulls (their own stream, so the solids above stay as they were): two of
    # hide-and-seek's wedge ramps and two random polytopes of 10 points on an ellipsoid.
    hull_rng = np.random.default_rng(SEED + 1)
    for i in range(4):
        pos = f32([hull_rng.uniform(-3, 3), hull_rng.uniform(-3, 3), hull_rng.uniform(0.2, 2.0)])
        if i < 2:
            w, l, h = hull_rng.uniform(0.3, 1.0, size=3)
            v = [[sx * w / 2, sy * l / 2, 0] for sy in (-1, 1) for sx in (-1, 1)]
            v += [[sx * w / 2, l / 2, h] for sx in (-1, 1)]
        else:
            axes = hull_rng.uniform(0.2, 0.6, size=3)
            d = hull_rng.normal(size=(10, 3))
            v = axes * d / np.linalg.norm(d, axis=1, keepdims=True)
        geoms.append(("hull", pos, unit_quat(hull_rng), f32(v).reshape(-1)))
    return geoms


def model_of(geoms):
    import mujoco

    fmt = lambda v: " ".join(repr(float(x)) for x in v)  # noqa: E731
    lines, meshes = [], []
    for i, (kind, pos, quat, size) in enumerate(geoms):
        where = f'pos="{fmt(pos)}" quat="{fmt(quat)}"'
        if kind == "hull":  # a mesh of vertices only: MuJoCo takes their convex hull as its faces
            meshes.append(f'<mesh name="m{i}" vertex="{fmt(size)}"/>')
            lines.append(f'<geom name="g{i}" type="mesh" mesh="m{i}" {where}/>')
            continue
        n = {"sphere": 1, "capsule": 2, "box": 3, "plane": 3}[kind]
        lines.append(f'<geom name="g{i}" type="{kind}" {where} size="{fmt(size[:n])}"/>')
    xml = ("<mujoco><asset>" + "".join(meshes) + "</asset><worldbody>" + "".join(lines) +
           "</worldbody></mujoco>")
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


def cast(model, data, origin, direction):
    import mujoco

    geom = np.zeros(1, dtype=np.int32)
    d = mujoco.mj_ray(model, data, origin, direction, None, 1, -1, geom)
    return float(d), int(geom[0])


def reference():
    """(geoms, rays): rays as (origin, direction, distance, geom index)."""
    rng = np.random.default_rng(SEED)
    geoms = scene(rng)
    model, data = model_of(geoms)
    rays = []
    while len(rays) < RAYS:
        origin = f32([rng.uniform(-4, 4), rng.uniform(-4, 4), rng.uniform(0.05, 3.0)])
        if rng.uniform() < 0.75:  # most rays aim near a solid, the rest anywhere
            target = geoms[int(rng.integers(2, len(geoms)))][1]
            v = target + rng.normal(scale=0.3, size=3) - origin
        else:
            v = rng.normal(size=3)
        direction = f32(v / np.linalg.norm(v))
        dist, geom = cast(model, data, origin, direction)
        stable = all(cast(model, data, origin + SHIFT * s * e, direction)[1] == geom
                     for e in np.eye(3) for s in (-1, 1))
        if stable and dist < REACH:
            rays.append((origin, direction, dist, geom))
    return geoms, rays


def write(geoms, rays, path=OUT):
    import mujoco

    g = lambda v: " ".join(f"{float(x):.9g}" for x in v)  # noqa: E731
    lines = [f"# MuJoCo {mujoco.__version__} mj_ray reference for tests/cpp/physics_query_test.cpp;",
             "# regenerate with: python tests/python/mujoco_rays.py --write",
             "# geom <type> <pos x y z> <quat w x y z> <size 3>   (index = order)",
             "# geom hull <pos> <quat> <n> <n vertices x y z>    (pose of the vertices' frame)",
             "# ray <origin x y z> <unit direction x y z> <distance, -1: none> <geom, -1: none>"]
    for kind, pos, quat, size in geoms:
        count = f"{len(size) // 3} " if kind == "hull" else ""
        lines.append(f"geom {kind} {g(pos)} {g(quat)} {count}{g(size)}")
    lines += [f"ray {g(o)} {g(d)} {dist:.7f} {geom}" for o, d, dist, geom in rays]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def read(path=OUT):
    """The committed (geoms, rays) in the same form as reference()."""
    geoms, rays = [], []
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        f = line.split()
        if f[0] == "geom":
            v = [float(x) for x in f[2:]]
            size = v[8:] if f[1] == "hull" else v[7:10]  # a hull's vertices follow their count
            geoms.append((f[1], f32(v[0:3]), f32(v[3:7]), f32(size)))
        else:
            v = [float(x) for x in f[1:7]]
            rays.append((f32(v[0:3]), f32(v[3:6]), float(f[7]), int(f[8])))
    return geoms, rays


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"store the reference in {OUT}")
    args = parser.parse_args()
    geoms, rays = reference()
    hits = [r for r in rays if r[3] >= 0]
    kinds = {}
    for r in hits:
        kinds[geoms[r[3]][0]] = kinds.get(geoms[r[3]][0], 0) + 1
    print(f"{len(geoms)} geoms, {len(rays)} rays, {len(hits)} hit: {kinds}")
    if args.write:
        write(geoms, rays)
