"""Hide-and-seek's gpu_hideseek variant from Python: orrery.make with
variant="gpu_hideseek", its observation parts (gpu_hideseek's tensors) as
views with their Gymnasium Dict space, team rewards with -10 added, and the
PettingZoo and Gymnasium adapters (the rules are tested in C++:
tests/cpp/hide_and_seek_gpu_test.cpp)."""

import numpy as np
import pytest

import orrery
from conftest import ENVS

pytestmark = pytest.mark.skipif("hide_and_seek" not in ENVS, reason="hide_and_seek is not registered")
GPU = {"variant": "gpu_hideseek"}


def test_make_gives_gpu_hideseek_shapes_and_a_dict_of_its_tensors():
    from orrery import hide_and_seek as hs

    env = orrery.make("hide_and_seek", num_worlds=3, device="cpu", seed=1, threads=1, **GPU)
    assert env.env_info["variant"] == "gpu_hideseek"
    assert env.obs.shape == (3, 5, 141) and env.actions.shape == (3, 5, 5) and env.reward_mode == "per_agent"
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, reward, term, trunc, info = env.step(rng.integers(0, 11, size=(3, 5, 5)).astype(np.int32))
    parts = hs.split(env, obs)
    shapes = {k: v.shape for k, v in parts.items()}
    assert shapes == {"agent_data": (3, 5, 5, 4), "box_data": (3, 5, 9, 7), "ramp_data": (3, 5, 2, 5),
                      "lidar": (3, 5, 30), "visible_agents": (3, 5, 5), "visible_boxes": (3, 5, 9),
                      "visible_ramps": (3, 5, 2), "prep_counter": (3, 5, 1), "agent_type": (3, 5, 1)}
    assert all(np.shares_memory(v, obs) for v in parts.values())  # views, no copies
    np.testing.assert_array_equal(parts["prep_counter"][..., 0], 95 - 5)
    np.testing.assert_array_equal(parts["agent_type"][..., 0], np.tile([1, 1, 1, 0, 0], (3, 1)))
    assert ((parts["lidar"] >= 0) & (parts["lidar"] <= 200)).all() and (parts["lidar"] > 0).any()
    for mask in ("visible_agents", "visible_boxes", "visible_ramps"):
        assert set(np.unique(parts[mask])) <= {0.0, 1.0}
    boxes = info["round"][:, 2]
    assert ((boxes >= 3) & (boxes <= 8)).all()
    for w in range(3):  # box slots past this world's boxes are zeros and unseen; sizes (8, 1.5) or (2, 2)
        assert not parts["box_data"][w, :, boxes[w]:].any() and not parts["visible_boxes"][w, :, boxes[w]:].any()
        sizes = {tuple(s) for s in parts["box_data"][w, :, :boxes[w], 4:6].reshape(-1, 2)}
        assert sizes <= {(8.0, 1.5), (2.0, 2.0)}
    space = hs.dict_space(env)
    assert space.contains({k: np.ascontiguousarray(v[0, 0]) for k, v in parts.items()})
    env.close()


def test_rewards_are_zero_in_preparation_then_team_rewards_with_minus_ten_added():
    env = orrery.make("hide_and_seek", num_worlds=8, device="cpu", seed=2, threads=1, prep_steps=4, **GPU)
    rng = np.random.default_rng(1)
    for step in range(12):
        _, reward, _, _, info = env.step(rng.integers(0, 11, size=(8, 5, 5)).astype(np.int32))
        if step < 4:
            assert not reward.any()
            continue
        out = (np.abs(info["agent_pose"][..., :2]) >= 18.0).any(axis=-1)
        team = reward + 10.0 * out  # -10 is added, not overwritten: the team's +-1 remains
        for w in range(8):
            assert team[w, 0] == team[w, 1] == team[w, 2] == -team[w, 3] == -team[w, 4]
            assert abs(team[w, 0]) == 1.0
    env.close()


def test_pettingzoo_parallel_api_test_passes_on_the_variant():
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    from orrery.pettingzoo import OrreryParallelEnv

    from orrery import hide_and_seek as hs

    env = OrreryParallelEnv("hide_and_seek", **GPU)
    parallel_api_test(env, num_cycles=300)
    env.close()
    env = hs.parallel_env(**GPU)  # observations as the dict of gpu_hideseek's parts
    parallel_api_test(env, num_cycles=100)
    obs, _ = env.reset(seed=1)
    assert obs["agent_0"]["box_data"].shape == (9, 7) and obs["agent_0"]["agent_type"][0] == 1.0
    env.close()


def test_gymnasium_make_vec_gives_one_row_per_agent_within_its_space():
    gym = pytest.importorskip("gymnasium")
    vec = gym.make_vec("orrery/hide_and_seek-v0", num_envs=10, seed=0, **GPU)  # 2 worlds x 5 agents
    obs, _ = vec.reset(seed=0)
    assert obs.shape == (10, 141) and vec.single_observation_space.contains(obs[0])
    for _ in range(3):
        obs, reward, term, trunc, _ = vec.step(vec.action_space.sample())
    assert reward.shape == (10,) and vec.single_action_space.contains(vec.action_space.sample()[0])
    from orrery import hide_and_seek as hs

    parts = hs.dict_observations(vec)  # the same vector env with the dict of parts
    obs, _ = parts.reset(seed=0)
    assert obs["lidar"].shape == (10, 30) and obs["ramp_data"].shape == (10, 2, 5)
    assert parts.single_observation_space.contains({k: v[0] for k, v in obs.items()})
    parts.close()


def test_unknown_variant_and_options_of_the_other_variant_are_refused():
    with pytest.raises(ValueError, match="variant=madrona is unknown; expected openai or gpu_hideseek"):
        orrery.make("hide_and_seek", num_worlds=1, device="cpu", variant="madrona")
    with pytest.raises(ValueError, match="unknown option 'max_rooms'"):
        orrery.make("hide_and_seek", num_worlds=1, device="cpu", max_rooms=2, **GPU)
