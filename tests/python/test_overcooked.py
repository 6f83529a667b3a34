"""Overcooked through the Python API: observation layout, reward tensors in
info, a scripted soup delivery, the JSON state round trip, and the adapters.
Skipped where Overcooked is not registered."""

import numpy as np
import pytest

import orrery

pytestmark = pytest.mark.skipif("overcooked" not in orrery.list_envs(), reason="Overcooked is not registered")

NORTH, SOUTH, EAST, WEST, STAY, INTERACT = range(6)  # overcooked_ai's Action.ALL_ACTIONS order


def cramped(n=2, **kw):
    return orrery.make("overcooked", num_worlds=n, device="cpu", layout="cramped_room", seed=0, threads=1, **kw)


def soup_script():
    """Chef 1 puts three onions in the pot and starts it; chef 0 fetches a dish,
    waits for the soup, picks it up and serves it."""
    chef1 = [EAST, INTERACT, WEST, NORTH, INTERACT] * 3 + [INTERACT, EAST]
    chef0 = [SOUTH, INTERACT] + [STAY] * 14 + [NORTH]
    steps = list(zip(chef0, chef1))
    steps += [(EAST, STAY), (NORTH, STAY)] + [(STAY, STAY)] * 20
    steps += [(INTERACT, STAY), (SOUTH, STAY), (EAST, STAY), (SOUTH, STAY), (INTERACT, STAY)]
    return steps


def test_observation_and_info_layout():
    env = cramped(3)
    obs, info = env.reset()
    assert obs.shape == (3, 2, 26, 4, 5) and obs.dtype == np.uint8  # [N, agents, 26, H, W]
    assert env.actions.shape == (3, 2) and env.action_range == (0, 5)
    obs, reward, term, trunc, info = env.step(np.zeros((3, 2), np.int64))
    assert reward.shape == (3, 2)
    assert set(info) == {"sparse_r_by_agent", "shaped_r_by_agent"}
    assert info["sparse_r_by_agent"].shape == (3, 2) and info["shaped_r_by_agent"].shape == (3, 2)
    assert env.env_info["layout"] == "cramped_room"


def test_scripted_soup_is_rewarded():
    env = cramped(1)
    sparse, shaped, team = np.zeros(2), np.zeros(2), np.zeros(2)
    for a, b in soup_script():
        _, reward, term, trunc, info = env.step(np.array([[a, b]]))
        sparse += info["sparse_r_by_agent"][0]
        shaped += info["shaped_r_by_agent"][0]
        team += reward[0]
        assert not term[0] and not trunc[0]
    assert sparse.tolist() == [20.0, 0.0]  # chef 0 served one onion soup
    assert team.tolist() == [20.0, 20.0]  # the team reward reaches both chefs
    assert shaped[0] > 0 and shaped[1] > 0  # dish/soup pickup; onions into the pot


def test_state_round_trip():
    env = cramped(2)
    for a, b in soup_script()[:12]:
        env.step(np.array([[a, b], [STAY, STAY]]))
    state = env.get_state(0)
    assert set(state) >= {"players", "objects", "timestep"}
    assert state["timestep"] == 12
    env.set_state(1, state)
    assert env.get_state(1) == state
    np.testing.assert_array_equal(env.obs[0], env.obs[1])
    for a, b in soup_script()[12:30]:
        env.step(np.array([[a, b], [a, b]]))
    np.testing.assert_array_equal(env.obs[0], env.obs[1])
    assert env.get_state(0) == env.get_state(1)


def test_bad_state_is_rejected_and_world_untouched():
    env = cramped(1)
    before = env.state_hash(0)
    state = env.get_state(0)
    state["players"][0]["position"] = [0, 0]  # a counter, not floor
    with pytest.raises(ValueError):
        env.set_state(0, state)
    with pytest.raises(ValueError):
        env.set_state(0, "{not json")
    assert env.state_hash(0) == before


def test_old_dynamics_option():
    env = orrery.make("overcooked", num_worlds=1, device="cpu", layout="cramped_room", old_dynamics=True)
    assert env.env_info["old_dynamics"] == "true"
    with pytest.raises(ValueError, match="layout"):
        orrery.make("overcooked", layout="no_such_kitchen")


def test_gymnasium_and_pettingzoo_adapters():
    pytest.importorskip("gymnasium")
    from orrery.gymnasium import OrreryVectorEnv

    env = OrreryVectorEnv("overcooked", 4, layout="cramped_room", seed=0)
    assert env.single_observation_space.shape == (2, 26, 4, 5)
    assert list(env.single_action_space.nvec) == [6, 6]
    obs, info = env.reset(seed=0)
    obs, rew, term, trunc, info = env.step(env.action_space.sample())
    assert set(info) >= {"sparse_r_by_agent", "shaped_r_by_agent", "reward_by_agent"}


def test_featurized_option_adds_info_tensor():
    """featurized=True adds overcooked_ai's featurize_state (96 values per chef)
    to info; the start state of cramped_room matches the recorded reference."""
    import gzip
    import json
    import pathlib

    ref = pathlib.Path(__file__).parents[1] / "data/overcooked/featurized/cramped_room_old.jsonl.gz"
    lines = [json.loads(line) for line in gzip.open(ref, "rt")]
    env = orrery.make("overcooked", num_worlds=2, device="cpu", layout="cramped_room", old_dynamics=True,
                      horizon=1000, seed=0, threads=1, featurized=True)
    obs, info = env.reset()
    assert info["featurized_obs"].shape == (2, 2, 96) and info["featurized_obs"].dtype == np.float32
    np.testing.assert_array_equal(info["featurized_obs"][0], np.array(lines[1]["f"], np.float32))
    for line in lines[2:50]:
        obs, reward, term, trunc, info = env.step(np.array([line["a"], line["a"]], np.int64))
        np.testing.assert_array_equal(info["featurized_obs"][1], np.array(line["f"], np.float32))
    with pytest.raises(ValueError, match="featurized=2"):
        orrery.make("overcooked", device="cpu", featurized=2)
