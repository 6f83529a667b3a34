"""orrery.record: an episode played by a Python policy is replayed by the native
recorder from the same seed; the recorder's final state hash must match."""

import os

import numpy as np
import pytest

import orrery
from orrery import record

pytestmark = pytest.mark.skipif(not record.available(), reason="this build has no recorder (needs Vulkan)")


def test_policy_episode_is_recorded_and_reproduced(tmp_path):
    rng = np.random.default_rng(0)
    out = tmp_path / "clip"
    result = record.record_episode("tag", str(out), policy=lambda obs: rng.integers(0, 5, size=(1, 4)),
                                   seed=7, max_steps=12, size="64x64")
    assert result["steps"] == 12
    frames = sorted(p for p in os.listdir(out) if p.startswith("frame_"))
    assert len(frames) == 13  # the start state and one frame per step
    assert result["video"] is not None and os.path.getsize(result["video"]) > 0


@pytest.mark.skipif("overcooked" not in orrery.list_envs(), reason="overcooked not registered")
def test_overcooked_episode_runs_to_the_horizon(tmp_path):
    result = record.record_episode("overcooked", str(tmp_path / "oc"), policy=lambda obs: np.array([[5, 2]]),
                                   seed=1, size="64x64", layout="cramped_room", horizon=20)
    assert result["steps"] == 20  # truncated at the horizon


def test_out_of_range_action_is_rejected_before_recording(tmp_path):
    with pytest.raises(ValueError, match="action"):
        record.record_episode("tag", str(tmp_path / "bad"), policy=lambda obs: np.array([[0, 0, 0, 9]]),
                              seed=0, max_steps=3, size="64x64")
    assert not (tmp_path / "bad").exists()


def _hide_and_seek_policy(path):
    """A TorchScript policy for hide-and-seek: obs [N, 4, 249] -> the five action
    parts' 11 logits side by side, [N, 4, 55]."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(torch.nn.Linear(249, 55)), str(path))
    return path


@pytest.mark.skipif("hide_and_seek" not in orrery.list_envs(), reason="hide_and_seek not registered")
def test_orrery_record_plays_a_saved_policy_in_a_grid_of_worlds(tmp_path):
    """`orrery record ENV --play POLICY --grid N`: the policy plays N worlds in
    Python, the recorder replays all N from one actions file with the camera
    and overlays asked for, and its N state hashes are the played ones."""
    import subprocess
    import sys

    from orrery.play import load_policy, play_episode

    policy = _hide_and_seek_policy(tmp_path / "hs.pt")
    played = play_episode("hide_and_seek", load_policy(policy), seed=2, max_steps=12, num_worlds=4)
    assert len(played["actions"]) == 12 and all(len(line.split()) == 4 * 4 * 5 for line in played["actions"])
    assert len(set(played["actions"])) > 1 and len(set(played["state_hashes"])) == 4
    out = tmp_path / "clip"
    run = subprocess.run([sys.executable, "-m", "orrery", "record", "hide_and_seek", "--play", str(policy),
                          "--seed", "2", "--grid", "4", "--steps", "12", "--size", "128x128", "--camera", "top",
                          "--overlays", "vision", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    for w, h in enumerate(played["state_hashes"]):
        assert f"world {w} state hash after step 12: {h:016x}" in run.stdout, run.stdout
    assert len(sorted(out.glob("frame_*.png"))) == 13
    assert any((out / v).exists() and (out / v).stat().st_size > 0 for v in ("video.mp4", "video.gif"))
    # Another seed plays other worlds, so the recorder's check has something to catch.
    other = play_episode("hide_and_seek", load_policy(policy), seed=3, max_steps=12, num_worlds=4)
    assert other["state_hashes"] != played["state_hashes"]


def test_recorder_reads_one_or_grid_worlds_of_actions_and_names_the_counts(tmp_path):
    """An actions file holds one world's values a line, or --grid N worlds'; any
    other count is refused naming both (tag: 4 agents, one value each)."""
    from orrery.cli import native_tool
    import subprocess

    tool = native_tool("orrery-record")
    lines = tmp_path / "grid.txt"
    lines.write_text("0 1 2 3 4 0 1 2\n1 1 1 1 2 2 2 2\n")
    ok = subprocess.run([tool, "tag", "--seed", "5", "--grid", "2", "--actions", str(lines), "--size", "32x32",
                         "--out", str(tmp_path / "ok")], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    env = orrery.make("tag", num_worlds=2, device="cpu", seed=5, threads=1, framework="numpy")
    env.reset(seed=5)
    for step in ([[0, 1, 2, 3], [4, 0, 1, 2]], [[1, 1, 1, 1], [2, 2, 2, 2]]):
        env.step(np.array(step, dtype=np.int32))
    for w in range(2):
        assert f"world {w} state hash after step 2: {env.state_hash(w):016x}" in ok.stdout, ok.stdout
    env.close()
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1 2 3 4 0\n")
    run = subprocess.run([tool, "tag", "--grid", "2", "--actions", str(bad), "--size", "32x32",
                          "--out", str(tmp_path / "bad")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "line 1: expected 4 (one world) or 8 (2 worlds) integers" in run.stderr, run.stderr
