"""The Gymnasium adapters: Gymnasium's own env checker on one world, and the
three autoreset modes of the VectorEnv against Gymnasium's documented rules."""

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402

from conftest import ENVS  # noqa: E402
from orrery.gymnasium import OrreryEnv, OrreryVectorEnv  # noqa: E402


@pytest.mark.parametrize("name", ENVS)
def test_gymnasium_env_checker(name):
    env = OrreryEnv(name)
    check_env(env, skip_render_check=True)
    env.close()


def test_spaces_of_tag():
    env = OrreryVectorEnv("tag", 3, seed=0)
    assert env.single_observation_space.shape == (4, 19)
    assert isinstance(env.single_action_space, gym.spaces.MultiDiscrete)
    assert list(env.single_action_space.nvec) == [5, 5, 5, 5]
    assert env.observation_space.shape == (3, 4, 19)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP


def run_until_truncated(env):
    for _ in range(2):
        out = env.step(env.action_space.sample())
    assert out[3].all()
    return out


def test_next_step_mode():
    env = OrreryVectorEnv("tag", 3, autoreset_mode=AutoresetMode.NEXT_STEP, seed=0, horizon=2)
    env.reset(seed=0)
    obs, rew, term, trunc, info = run_until_truncated(env)
    assert rew.shape == (3,) and rew.dtype == np.float64
    np.testing.assert_allclose(rew, info["reward_by_agent"].sum(axis=1))
    obs2, rew2, term2, trunc2, _ = env.step(env.action_space.sample())
    assert not trunc2.any() and np.all(rew2 == 0)
    assert not np.array_equal(obs2, obs)
    obs2[:] = 0  # copies by default: the env's next step is not affected
    assert np.any(env.env.obs != 0)


def test_same_step_mode_final_obs_and_info():
    env = OrreryVectorEnv("tag", 3, autoreset_mode="same_step", seed=0, horizon=2)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    env.reset(seed=0)
    obs, rew, term, trunc, info = run_until_truncated(env)
    assert info["_final_obs"].all() and info["final_obs"].dtype == object
    final = np.stack(info["final_obs"])
    assert final.shape == (3, 4, 19) and not np.array_equal(final, obs)
    assert env.single_observation_space.contains(info["final_obs"][0])
    np.testing.assert_allclose(info["final_info"]["reward"].sum(axis=1), rew)
    _, _, _, trunc, info = env.step(env.action_space.sample())
    assert not trunc.any() and "final_obs" not in info


def test_disabled_mode_with_reset_mask():
    env = OrreryVectorEnv("tag", 3, autoreset_mode=AutoresetMode.DISABLED, seed=0, horizon=2)
    env.reset(seed=0)
    obs, _, _, trunc, _ = run_until_truncated(env)
    obs, info = env.reset(options={"reset_mask": np.array([True, False, True])})
    assert obs.shape == (3, 4, 19)
    trunc_now = env.env.view("truncated")
    assert list(trunc_now) == [False, True, False]
    with pytest.raises(TypeError, match="must be a numpy array"):
        env.reset(options={"reset_mask": [True, False, True]})
    with pytest.raises(TypeError, match="expected bool"):
        env.reset(options={"reset_mask": np.ones(3, np.int32)})
    with pytest.raises(ValueError, match="expected \\(3,\\)"):
        env.reset(options={"reset_mask": np.ones(2, bool)})


def test_vector_env_matches_the_core_env():
    import orrery

    vec = OrreryVectorEnv("tag", 4, seed=8, copy=False)
    core = orrery.make("tag", num_worlds=4, device="cpu", seed=8)
    vec.reset(seed=8)
    core.reset(seed=8)
    rng = np.random.default_rng(0)
    for _ in range(10):
        a = rng.integers(0, 5, size=(4, 4))
        o1, r1, *_ = vec.step(a)
        o2, r2, *_ = core.step(a)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_allclose(r1, r2.sum(axis=1))
