"""Hide-and-seek's checks against MuJoCo at each physics substep count.

Runs the scenes of tests/python/test_hide_and_seek_mujoco.py (driving,
pushing the cube, climbing a locked ramp, pressed to a wall) through the
Python package with `substeps=N` and prints each validated quantity with its
error against the committed MuJoCo reference (tests/data/*/mujoco_reference.txt)
and whether it is within the test's tolerance (`!` where not). The roll along
the wall is checked against its rigid answer, 26 / (10 + 10 / 0.15^2) m/s.

    python bench/hideseek_substeps.py [N ...]     (default: 15 10 8 6 5 4)

envs/hide_and_seek/README.md ("Substeps") has the table this made.
"""

import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))

import numpy as np  # noqa: E402

import mujoco_hide_and_seek as mh  # noqa: E402
import mujoco_reference as mr  # noqa: E402
import test_hide_and_seek_mujoco as t  # noqa: E402

ROLL = 26.0 / (10.0 + 10.0 / 0.15**2)


def measure(n):
    out = {}
    s = t.Scene(substeps=n)
    p = s.track([1.0, 3.0, 0.15], (10, 5), 40)
    out["terminal"], out["tau"] = mr.drive_quantities(p[:, 0] - p[0, 0])
    out["dist10"] = p[10, 0] - p[0, 0]
    s = t.Scene(substeps=n)
    s.objects[0, 0, :3] = [1.45, 3.0, 0.25]
    c = s.track([1.0, 3.0, 0.15], (10, 5), 20, body=0)
    out["cube10"], out["cube20"] = c[10, 0] - 1.45, c[20, 0] - 1.45
    s = t.Scene(substeps=n)
    s.place_ramp(3.0 + t.RAMP / 2, 3.0, -math.pi / 2, locked=True)
    p = s.track([3.0 + mh.CLIMB_START, 3.0, 0.15], (10, 5), mh.CLIMB_STEPS)
    p[:, 0] -= 3.0
    out.update(mh.climb_quantities([tuple(r) for r in p]))
    out["climb_y"], out["climb_land"] = np.abs(p[:, 1] - 3.0).max(), p[-1, 2]
    s = t.Scene(walls=True, substeps=n)
    start = [5.95 - mh.WALL_FACE, 3.0, 0.15]
    p = s.track(start, (10, 7), mh.WALL_STEPS)
    p[:, 0] -= start[0]
    p[:, 1] -= 3.0
    out.update(mh.wall_quantities([tuple(r) for r in p]))
    out["wall_max_x"] = p[:, 0].max()
    return out


def checks():
    phys, hs = t.committed("physics"), t.committed("hide_and_seek")
    ref = {"terminal": (phys["drive.terminal_speed"], "rel", 0.01), "tau": (phys["drive.time_constant"], "rel", 0.05),
           "dist10": (phys["drive.distance_10"], "rel", 0.05), "cube10": (phys["push.cube_x_10"], "rel", 0.05),
           "cube20": (phys["push.cube_x_20"], "rel", 0.05)}
    for k in ("climb.dx_2", "climb.dx_3", "climb.dx_4", "climb.top_step", "climb.dx_10"):
        ref[k] = (hs[k], "rel", 0.05)
    ref["wall.rest_x"] = (hs["wall.rest_x"], "abs", 5e-3)
    ref["wall.y_3"] = (hs["wall.y_3"], "rel", 0.10)
    ref["wall.peak_z"] = (0.15, "abs", 2e-3)
    ref["wall.slide_speed"] = (ROLL, "rel", 0.01)
    return ref


def main(argv):
    ref = checks()
    for n in [int(a) for a in argv] or [15, 10, 8, 6, 5, 4]:
        m, bad, row = measure(n), [], []
        for k, (r, kind, tol) in ref.items():
            v = float(m[k])
            err = abs(v - r) / abs(r) if kind == "rel" else abs(v - r)
            if err > tol:
                bad.append(k)
            shown = f"{100 * err:.1f}%" if kind == "rel" else f"{1000 * err:.1f}mm"
            row.append(f"{k}={v:.4f}({shown}{'' if err <= tol else '!'})")
        print(f"substeps {n}: {'PASS' if not bad else 'FAIL ' + ','.join(bad)}\n  " + " ".join(row) +
              f"\n  peak_z={m['climb.peak_z']:.3f} climb_y={m['climb_y']:.4f} land_z={m['climb_land']:.4f} "
              f"wall_max_x={m['wall_max_x']:.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
