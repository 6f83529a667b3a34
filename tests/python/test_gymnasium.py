"""The Gymnasium adapters: Gymnasium's own env checker on one world, and the
three autoreset modes of the VectorEnv against Gymnasium's documented rules.
They run on Overcooked, whose reward is one team reward per world (tag's
per-agent rewards go through orrery.puffer, tested in test_ecosystem.py)."""

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402
from gymnasium.vector import AutoresetMode  # noqa: E402

from conftest import ENVS  # noqa: E402
from orrery.gymnasium import OrreryEnv, OrreryVectorEnv  # noqa: E402
from orrery.meta import meta_of  # noqa: E402

pytestmark = pytest.mark.skipif("overcooked" not in ENVS, reason="Overcooked is not registered")
OBS = (2, 26, 4, 5)  # one cramped_room world: [agents, channels, H, W]


def overcooked(n, **kw):
    return OrreryVectorEnv("overcooked", n, layout="cramped_room", threads=1, **kw)


@pytest.mark.parametrize("name", [n for n in ENVS if meta_of(n).reward == "team"])
def test_gymnasium_env_checker(name):
    env = OrreryEnv(name)
    check_env(env, skip_render_check=True)
    env.close()


def test_spaces_of_overcooked():
    env = overcooked(3, seed=0)
    assert env.single_observation_space.shape == OBS
    assert isinstance(env.single_action_space, gym.spaces.MultiDiscrete)
    assert list(env.single_action_space.nvec) == [6, 6]
    assert env.observation_space.shape == (3,) + OBS
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP


def run_until_truncated(env):
    for _ in range(2):
        out = env.step(env.action_space.sample())
    assert out[3].all()
    return out


def test_next_step_mode():
    env = overcooked(3, autoreset_mode=AutoresetMode.NEXT_STEP, seed=0, horizon=2)
    env.reset(seed=0)
    obs, rew, term, trunc, info = run_until_truncated(env)
    assert rew.shape == (3,) and rew.dtype == np.float64
    np.testing.assert_allclose(rew, info["reward_by_agent"][:, 0])  # the team reward, once
    obs2, rew2, term2, trunc2, _ = env.step(env.action_space.sample())
    assert not trunc2.any() and np.all(rew2 == 0)
    assert not np.array_equal(obs2, obs)
    obs2[:] = 0  # copies by default: the env's next step is not affected
    assert np.any(env.env.obs != 0)


def test_same_step_mode_final_obs_and_info():
    env = overcooked(3, autoreset_mode="same_step", seed=0, horizon=2)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    env.reset(seed=0)
    obs, rew, term, trunc, info = run_until_truncated(env)
    assert info["_final_obs"].all() and info["final_obs"].dtype == object
    final = np.stack(info["final_obs"])
    assert final.shape == (3,) + OBS and not np.array_equal(final, obs)
    assert env.single_observation_space.contains(info["final_obs"][0])
    np.testing.assert_allclose(info["final_info"]["reward"][:, 0], rew)
    _, _, _, trunc, info = env.step(env.action_space.sample())
    assert not trunc.any() and "final_obs" not in info


def test_disabled_mode_with_reset_mask():
    env = overcooked(3, autoreset_mode=AutoresetMode.DISABLED, seed=0, horizon=2)
    env.reset(seed=0)
    obs, _, _, trunc, _ = run_until_truncated(env)
    obs, info = env.reset(options={"reset_mask": np.array([True, False, True])})
    assert obs.shape == (3,) + OBS
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

    vec = overcooked(4, seed=8, copy=False)
    core = orrery.make("overcooked", num_worlds=4, device="cpu", seed=8, layout="cramped_room")
    vec.reset(seed=8)
    core.reset(seed=8)
    rng = np.random.default_rng(0)
    for _ in range(10):
        a = rng.integers(0, 6, size=(4, 2))
        o1, r1, *_ = vec.step(a)
        o2, r2, *_ = core.step(a)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_allclose(r1, r2[:, 0])
