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
