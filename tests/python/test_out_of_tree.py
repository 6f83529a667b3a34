"""An env written outside this tree becomes an Orrery env without touching it
(docs/writing-an-env.md, "An env outside the tree"): examples/out_of_tree is
copied to a scratch folder, configured with find_package(Orrery) against the
installed package, built, loaded as a plugin, stepped on the CPU, drawn, and
its megakernel compiled through NVRTC for the GPU.

The plugin is loaded in child processes, so the envs the rest of the suite
sees (conftest.ENVS) stay the shipped ones.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import orrery

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "out_of_tree")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{cmd} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """reach.so, built from a copy of the example outside the repository."""
    if shutil.which("cmake") is None:
        pytest.fail("cmake is needed to build an env outside the tree")
    work = tmp_path_factory.mktemp("out_of_tree")
    src, build = work / "reach", work / "build"
    shutil.copytree(EXAMPLE, src)
    cmake_dir = run([sys.executable, "-m", "orrery", "--cmake-dir"]).strip()
    assert os.path.isfile(os.path.join(cmake_dir, "OrreryConfig.cmake")), cmake_dir
    run(["cmake", "-S", str(src), "-B", str(build), f"-DOrrery_DIR={cmake_dir}", "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", str(build), "-j", "2"])
    path = build / "reach.so"
    assert path.is_file() and (build / "reach.hpp").is_file()  # the header NVRTC reads, beside the library
    return str(path)


def child(plugin: str, body: str) -> dict:
    """Runs `body` in a fresh interpreter after loading the plugin; returns the JSON it prints last."""
    code = f"import json, numpy as np, orrery\nNAMES = orrery.load_plugin({plugin!r})\n" + textwrap.dedent(body)
    out = run([sys.executable, "-c", code], cwd=os.path.dirname(plugin))
    return json.loads(out.strip().splitlines()[-1])


def test_the_plugin_registers_and_steps_on_the_cpu(plugin):
    r = child(plugin, """
        env = orrery.make("reach", num_worlds=16, device="cpu", seed=1)
        obs, info = env.reset(seed=1)
        shapes = [list(obs.shape), list(env.tensors["reward"].shape), list(env.tensors["action"].shape)]
        ends, total = 0, 0.0
        for _ in range(40):
            o = np.asarray(env.tensors["obs"])
            # Walk along the larger axis of the goal's offset: every world reaches its goal.
            dx, dy = o[:, 2], o[:, 3]
            a = np.where(np.abs(dx) > np.abs(dy), np.where(dx > 0, 4, 3), np.where(dy > 0, 2, 1)).astype(np.int32)
            obs, reward, terminated, truncated, info = env.step(a)
            ends += int(np.asarray(terminated).sum())
            total += float(np.asarray(reward).sum())
        print(json.dumps({"names": NAMES, "again": orrery.load_plugin(%r), "envs": orrery.list_envs(),
                          "shapes": shapes, "ends": ends, "num_agents": env.num_agents,
                          "facts": [env.reward_mode, env.action_meanings, env.obs_names]}))
    """ % plugin)
    assert r["names"] == ["reach"] and r["again"] == ["reach"]  # loading twice is harmless
    assert "reach" in r["envs"] and "tag" in r["envs"]
    assert r["shapes"] == [[16, 4], [16], [16]]  # single-agent: per-world tensors, no agent axis
    assert r["num_agents"] == 1
    # What the plugin's registration table declares reaches the adapters (EnvSpec::facts).
    assert r["facts"] == ["per_agent", ["noop", "up", "down", "left", "right"], ["x", "y", "goal_dx", "goal_dy"]]
    assert r["ends"] >= 16  # a goal within sqrt(2) at 0.05 a step is reached in under 40 steps


def test_same_seed_same_trajectory(plugin):
    r = child(plugin, """
        def run(seed):
            env = orrery.make("reach", num_worlds=8, device="cpu", seed=seed)
            env.reset(seed=seed)
            rng = np.random.default_rng(0)
            for _ in range(30):
                env.step(rng.integers(0, 5, size=8).astype(np.int32))
            return np.asarray(env.tensors["obs"]).tolist()
        print(json.dumps({"same": run(3) == run(3), "other": run(3) == run(4)}))
    """)
    assert r["same"] and not r["other"]


def test_gymnasium_ids_and_options(plugin):
    pytest.importorskip("gymnasium")
    r = child(plugin, """
        import gymnasium
        env = gymnasium.make("orrery/reach-v0", horizon=5)
        obs, info = env.reset(seed=0)
        steps = 0
        while True:
            obs, reward, terminated, truncated, info = env.step(0)
            steps += 1
            if terminated or truncated:
                break
        vec = gymnasium.make_vec("orrery/reach-v0", num_envs=4)
        vobs, _ = vec.reset(seed=0)
        print(json.dumps({"obs": list(obs.shape), "steps": steps, "space": str(env.action_space),
                          "vec": list(vobs.shape)}))
    """)
    assert r["obs"] == [4] and r["vec"] == [4, 4]
    assert r["space"] == "Discrete(5)"
    assert r["steps"] <= 5  # horizon=5 reached the plugin's OptionReader


def test_bad_plugins_are_refused(plugin, tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        orrery.load_plugin(str(tmp_path / "missing.so"))
    # A shared library without the ORRERY_PLUGIN entry (the extension module itself).
    with pytest.raises(ValueError, match="not an Orrery env plugin"):
        orrery.load_plugin(orrery._core.__file__)
    r = child(plugin, """
        try:
            orrery.make("reach", horizon=0)
        except ValueError as e:
            print(json.dumps({"error": str(e)}))
    """)
    assert "horizon" in r["error"]


def test_an_entry_point_loads_the_plugin_on_import(plugin, tmp_path):
    """A Python package declaring the plugin under the `orrery.envs` group."""
    pkg = tmp_path / "site"
    (pkg / "reach_env").mkdir(parents=True)
    (pkg / "reach_env" / "__init__.py").write_text(f"def plugin_path():\n    return {plugin!r}\n")
    info = pkg / "reach_env-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: reach-env\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[orrery.envs]\nreach = reach_env:plugin_path\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pkg), os.environ.get("PYTHONPATH", "")]))
    out = run([sys.executable, "-c", "import orrery; print(orrery.list_envs())"], env=env, cwd=str(tmp_path))
    assert "'reach'" in out


def test_the_megakernel_compiles_through_nvrtc(plugin):
    """The GPU path: NVRTC compiles the generated megakernel with the plugin's
    header read from its folder at run time (no GPU needed)."""
    code = """
        try:
            r = orrery.plugins.compile_gpu_kernels("reach", arch=90, horizon=50)
        except ValueError as e:
            r = {"error": str(e)}
        print(json.dumps(r))
    """
    r = child(plugin, code)
    if "error" in r and "nvrtc" in r["error"].lower() and "load" in r["error"].lower():
        pytest.skip(f"NVRTC is not installed here: {r['error']}")
    assert "error" not in r, r["error"]
    assert r["cubin_bytes"] > 0 and all(r["kernels"])


def test_render_draws_the_draw_table(plugin):
    from orrery import record

    if not record.available():
        pytest.skip("this build has no renderer (needs Vulkan)")
    r = child(plugin, """
        env = orrery.make("reach", num_worlds=2, device="cpu", seed=0, render_mode="rgb_array")
        env.reset(seed=0)
        frame = np.asarray(env.render(0, width=64, height=64))
        print(json.dumps({"shape": list(frame.shape), "colours": len(np.unique(frame.reshape(-1, frame.shape[-1]), axis=0))}))
    """)
    assert r["shape"] == [64, 64, 3] or r["shape"] == [64, 64, 4]
    assert r["colours"] >= 3  # background, the goal's ring and the agent


@pytest.mark.gpu
def test_cpu_and_gpu_agree(plugin):
    from conftest import cuda_available

    if not cuda_available():
        pytest.skip("needs a CUDA GPU")
    r = child(plugin, """
        import torch
        out = {}
        for device in ("cpu", "cuda"):
            env = orrery.make("reach", num_worlds=64, device=device, seed=5)
            env.reset(seed=5)
            rng = np.random.default_rng(1)
            for _ in range(50):
                actions = rng.integers(0, 5, size=64).astype(np.int32)
                # A GPU env takes its actions on its own device.
                env.step(actions if device == "cpu" else torch.from_numpy(actions).cuda())
            out[device] = torch.from_dlpack(env.tensors["obs"]).cpu().tolist()
        print(json.dumps({"same": out["cpu"] == out["cuda"]}))
    """)
    assert r["same"]


def test_native_tools_load_plugins_from_the_environment(plugin):
    """$ORRERY_PLUGINS: what `orrery bench/view/record` load, and what Python sets for them."""
    env = dict(os.environ, ORRERY_PLUGINS=plugin)
    out = run([sys.executable, "-m", "orrery", "bench", "reach", "--device", "cpu", "--worlds", "8", "--steps", "20",
               "--threads", "1"], env=env)
    assert "reach" in out
    r = child(plugin, """
        import os
        print(json.dumps({"var": os.environ.get("ORRERY_PLUGINS", "")}))
    """)
    assert os.path.realpath(plugin) in r["var"].split(":")
