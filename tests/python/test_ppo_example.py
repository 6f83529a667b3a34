"""A short smoke run of examples/ppo_overcooked.py (a few hundred steps):
it trains, logs to TensorBoard and reports episode returns. Learning to the
target is measured separately (docs/python.md), not asserted here."""

import importlib.util
import pathlib

import pytest

import orrery

pytest.importorskip("torch")
pytest.importorskip("tqdm")

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "ppo_overcooked.py"


def load_example():
    spec = importlib.util.spec_from_file_location("ppo_overcooked", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("env_args", [
    ["--env", "tag", "--env-opt", "horizon=16"],
    pytest.param(["--env", "overcooked", "--layout", "cramped_room", "--env-opt", "horizon=32"],
                 marks=pytest.mark.skipif("overcooked" not in orrery.list_envs(), reason="no Overcooked")),
])
def test_ppo_smoke_run(tmp_path, env_args):
    ppo = load_example()
    model = tmp_path / "policy.pt"
    result = ppo.main(env_args + [
        "--num-worlds", "8", "--num-steps", "40", "--total-timesteps", "640", "--update-epochs", "2",
        "--device", "cpu", "--threads", "1", "--torch-threads", "1", "--log-dir", str(tmp_path / "runs"),
        "--no-progress", "--save-model", str(model), "--seed", "3"])
    assert result["steps"] == 640
    assert result["history"], "no episode finished during the run"
    assert all(r == r for _, _, r in result["history"])  # returns are numbers, not NaN
    logs = list((tmp_path / "runs").rglob("events.out.tfevents.*"))
    assert logs and logs[0].stat().st_size > 0
    assert model.stat().st_size > 0


@pytest.mark.slow
def test_ppo_video_records_a_trained_episode(tmp_path):
    from orrery import record

    if not record.available():
        pytest.skip("this build has no recorder (needs Vulkan)")
    ppo = load_example()
    clip = tmp_path / "clip"
    ppo.main(["--env", "tag", "--env-opt", "horizon=16", "--num-worlds", "8", "--num-steps", "16",
              "--total-timesteps", "128", "--update-epochs", "1", "--device", "cpu", "--threads", "1",
              "--torch-threads", "1", "--log-dir", str(tmp_path / "runs"), "--no-progress", "--seed", "5",
              "--video", str(clip)])
    frames = sorted(clip.glob("frame_*.png"))
    assert len(frames) == 17  # start state + the 16 steps of one episode
    assert (clip / "video.mp4").exists() or (clip / "video.gif").exists()
