"""The PettingZoo adapters: PettingZoo's own parallel API test on one world,
and the batched form's agent masks."""

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
from pettingzoo.test import parallel_api_test  # noqa: E402

from conftest import ENVS  # noqa: E402
from orrery.pettingzoo import OrreryBatchedParallelEnv, OrreryParallelEnv  # noqa: E402


@pytest.mark.parametrize("name", ENVS)
def test_pettingzoo_parallel_api_test(name):
    env = OrreryParallelEnv(name)
    parallel_api_test(env, num_cycles=300)
    env.close()


def test_parallel_env_episode_end_removes_agents():
    env = OrreryParallelEnv("tag", horizon=3)
    obs, infos = env.reset(seed=2)
    assert env.agents == ["agent_0", "agent_1", "agent_2", "agent_3"]
    assert obs["agent_0"].shape == (19,)
    assert infos["agent_1"]["role"] == 0 and infos["agent_3"]["role"] == 1
    for _ in range(3):
        obs, rew, term, trunc, infos = env.step({a: 0 for a in env.agents})
    assert all(trunc.values()) and env.agents == []
    with pytest.raises(ValueError, match="one action for each live agent"):
        env.reset(seed=2)
        env.step({"agent_0": 0})


def test_parallel_env_seeds_reproduce():
    a, b = OrreryParallelEnv("tag"), OrreryParallelEnv("tag")
    oa, _ = a.reset(seed=5)
    ob, _ = b.reset(seed=5)
    for k in oa:
        np.testing.assert_array_equal(oa[k], ob[k])


def test_batched_env_agent_masks():
    env = OrreryBatchedParallelEnv("tag", num_worlds=3, seed=0, horizon=2)
    obs, infos = env.reset(seed=0)
    assert obs["agent_2"].shape == (3, 19)
    assert infos["agent_0"]["agent_mask"].all()
    acts = {a: np.zeros(3, np.int32) for a in env.possible_agents}
    env.step(acts)
    obs, rew, term, trunc, infos = env.step(acts)
    assert trunc["agent_0"].all() and rew["agent_1"].shape == (3,)
    assert not infos["agent_0"]["agent_mask"].any()  # the next step resets every world
    assert env.agent_mask.shape == (3, 4)
    obs, rew, term, trunc, infos = env.step(acts)
    assert infos["agent_3"]["agent_mask"].all()
    np.testing.assert_array_equal(obs["agent_1"], env.env.obs[:, 1])


def test_batched_env_rejects_missing_agents():
    env = OrreryBatchedParallelEnv("tag", num_worlds=2)
    with pytest.raises(ValueError, match="an action array for each agent"):
        env.step({"agent_0": np.zeros(2, np.int32)})
