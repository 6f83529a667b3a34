"""Hide-and-seek from Python: orrery.make, the dict of observation parts and
its Gymnasium Dict space, agents-as-rows Gymnasium vector env, rewards as
teams, and bad actions refused (the rules themselves are tested in C++:
tests/cpp/hide_and_seek_test.cpp)."""

import numpy as np
import pytest

import orrery
from conftest import ENVS

pytestmark = pytest.mark.skipif("hide_and_seek" not in ENVS, reason="hide_and_seek is not registered")


def test_make_gives_openai_shapes_and_a_dict_of_views():
    from orrery import hide_and_seek as hs

    env = orrery.make("hide_and_seek", num_worlds=3, device="cpu", seed=1, threads=1)
    assert env.obs.shape == (3, 4, 249) and env.actions.shape == (3, 4, 5) and env.reward_mode == "per_agent"
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, reward, term, trunc, info = env.step(rng.integers(0, 11, size=(3, 4, 5)).astype(np.int32))
    parts = hs.split(env, obs)
    shapes = {k: v.shape for k, v in parts.items()}
    assert shapes == {"self": (3, 4, 10), "agents": (3, 4, 3, 10), "boxes": (3, 4, 9, 15), "ramps": (3, 4, 2, 15),
                      "lidar": (3, 4, 30), "mask_aa": (3, 4, 3), "mask_ab": (3, 4, 9), "mask_ar": (3, 4, 2)}
    assert all(np.shares_memory(v, obs) for v in parts.values())  # views, no copies
    np.testing.assert_array_equal(parts["self"][..., 0], info["agent_pose"][..., 0])  # x
    assert set(np.unique(parts["mask_ab"])) <= {0.0, 1.0}
    assert ((parts["lidar"] > 0) & (parts["lidar"] <= 6)).all()
    boxes = info["round"][:, 2]
    for w in range(3):  # padding rows past this world's boxes are zeros and unseen
        assert not parts["boxes"][w, :, boxes[w]:].any() and not parts["mask_ab"][w, :, boxes[w]:].any()
    space = hs.dict_space(env)
    assert space.contains({k: np.ascontiguousarray(v[0, 0]) for k, v in parts.items()})
    env.close()


def test_rewards_are_team_rewards_and_zero_during_preparation():
    env = orrery.make("hide_and_seek", num_worlds=8, device="cpu", seed=2, threads=1, prep_steps=4)
    rng = np.random.default_rng(1)
    for step in range(12):
        _, reward, _, _, info = env.step(rng.integers(0, 11, size=(8, 4, 5)).astype(np.int32))
        if step < 4:
            assert not reward.any()
            continue
        inside = (np.abs(info["agent_pose"][..., :2] - 3.0) <= 9.0).all(axis=-1)
        for w in range(8):
            if inside[w].all():  # no boundary overwrite: hiders share one sign, seekers the other
                assert reward[w, 0] == reward[w, 1] == -reward[w, 2] == -reward[w, 3]
                assert abs(reward[w, 0]) == 1.0
    env.close()


def test_gymnasium_make_vec_gives_one_row_per_agent():
    gym = pytest.importorskip("gymnasium")
    vec = gym.make_vec("orrery/hide_and_seek-v0", num_envs=8, seed=0)  # 2 worlds x 4 agents
    obs, _ = vec.reset(seed=0)
    assert obs.shape == (8, 249)
    obs, reward, term, trunc, _ = vec.step(vec.action_space.sample())
    assert reward.shape == (8,)
    vec.close()


def test_out_of_range_actions_are_refused_naming_the_tensor():
    env = orrery.make("hide_and_seek", num_worlds=2, device="cpu", seed=3, threads=1)
    bad = np.full((2, 4, 5), 5, np.int32)
    bad[1, 2, 0] = 11
    with pytest.raises(ValueError, match=r"actions\[1, 2, 0\] = 11 is out of range; expected an integer in \[0, 10\]"):
        env.step(bad)
    env.close()


def test_dict_observations_for_gymnasium_and_pettingzoo():
    gym = pytest.importorskip("gymnasium")
    from orrery import hide_and_seek as hs

    vec = hs.dict_observations(gym.make_vec("orrery/hide_and_seek-v0", num_envs=8, seed=0))  # 2 worlds x 4 agents
    obs, _ = vec.reset(seed=0)
    obs, reward, _, _, _ = vec.step(vec.action_space.sample())
    assert {k: v.shape for k, v in obs.items()} == {
        "self": (8, 10), "agents": (8, 3, 10), "boxes": (8, 9, 15), "ramps": (8, 2, 15), "lidar": (8, 30),
        "mask_aa": (8, 3), "mask_ab": (8, 9), "mask_ar": (8, 2)}
    assert vec.observation_space.contains(obs) and reward.shape == (8,)
    bases = {id(v.base) for v in obs.values() if v.base is not None}
    assert len(bases) == 1 and all(v.base is not None for v in obs.values())  # views of one flat batch
    vec.close()

    pytest.importorskip("pettingzoo")
    from pettingzoo.test import parallel_api_test

    par = hs.parallel_env(seed=4)
    parallel_api_test(par, num_cycles=60)
    obs, _ = par.reset(seed=5)
    flat = par.env.obs[0]
    names = list(par.env.obs_names)
    for i, agent in enumerate(par.possible_agents):
        assert par.observation_space(agent).contains(obs[agent])
        np.testing.assert_array_equal(obs[agent]["lidar"], flat[i, names.index("lidar0"):names.index("lidar29") + 1])
        np.testing.assert_array_equal(obs[agent]["ramps"][1], flat[i, names.index("ramp1_x"):names.index("ramp1_locked") + 1])
        assert obs[agent]["self"][8] == (1.0 if i < 2 else 0.0)  # hiders first
    par.close()
