"""orrery.make(), reset and step on every registered env: shapes, dtypes,
determinism by seed, autoreset and the views' live semantics."""

import numpy as np
import pytest

import orrery
from conftest import ENVS, random_actions


def test_registry_lists_the_tutorial_env():
    assert "tag" in orrery.list_envs()
    assert orrery.describe_envs()["tag"]


@pytest.mark.parametrize("name", ENVS)
def test_shapes_follow_the_export_table(name):
    env = orrery.make(name, num_worlds=5, device="cpu", seed=0, threads=1)
    obs, info = env.reset()
    assert obs.shape[0] == 5
    assert env.actions.shape[0] == 5
    obs, reward, term, trunc, info = env.step(random_actions(env, np.random.default_rng(0)))
    assert reward.shape[:1] == (5,) and term.shape == (5,) and trunc.shape == (5,)
    assert term.dtype == np.bool_ and trunc.dtype == np.bool_
    for key, value in info.items():
        assert value.shape[0] == 5, key
    env.close()


def test_tag_shapes_and_options(tag):
    assert tag.num_agents == 4
    assert tag.obs.shape == (8, 4, 7 + 4 * 3)
    assert tag.actions.shape == (8, 4) and tag.actions.dtype == np.int32
    assert tag.action_range == (0, 4)
    env = orrery.make("tag", num_worlds=2, device="cpu", pursuers=3, evaders=1, pellets=0)
    assert env.obs.shape == (2, 4, 19) and env.num_agents == 4


# Options under which an env's trajectories depend on the seed (Overcooked's
# standard start and rules are deterministic).
SEEDED_OPTIONS = {"overcooked": {"start": "random"}}


@pytest.mark.parametrize("name", ENVS)
def test_same_seed_same_trajectory_different_seed_diverges(name):
    def run(seed):
        env = orrery.make(name, num_worlds=4, device="cpu", seed=seed, threads=1, **SEEDED_OPTIONS.get(name, {}))
        rng = np.random.default_rng(7)
        frames = [env.obs.copy()]
        for _ in range(20):
            obs, reward, term, trunc, _ = env.step(random_actions(env, rng))
            frames.append(np.concatenate([obs.ravel(), np.asarray(reward, np.float64).ravel(), term, trunc]))
        env.close()
        return frames

    a, b, c = run(11), run(11), run(12)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_reset_seed_sequence_is_reproducible():
    e1 = orrery.make("tag", num_worlds=2, device="cpu", seed=5)
    e2 = orrery.make("tag", num_worlds=2, device="cpu", seed=5)
    first = e1.obs.copy()
    np.testing.assert_array_equal(first, e2.obs)
    o1, _ = e1.reset()
    o2, _ = e2.reset()
    np.testing.assert_array_equal(o1, o2)
    assert not np.array_equal(o1, first)  # the next seed of the sequence
    o1, _ = e1.reset(seed=5)
    np.testing.assert_array_equal(o1, first)


def test_views_are_live_and_stable(tag):
    obs, reward, _, _, _ = tag.step(np.zeros((8, 4), np.int32))
    before = obs.copy()
    obs2, reward2, _, _, _ = tag.step(np.full((8, 4), 4, np.int32))
    assert obs2 is obs and reward2 is reward
    assert not np.array_equal(before, obs)  # the same array now holds the new step


def test_actions_written_in_place(tag):
    twin = orrery.make("tag", num_worlds=8, device="cpu", seed=3, threads=2)
    acts = np.random.default_rng(1).integers(0, 5, size=(8, 4)).astype(np.int32)
    tag.actions[:] = acts
    tag.step()
    twin.step(acts)
    np.testing.assert_array_equal(tag.obs, twin.obs)
    assert [tag.state_hash(w) for w in range(8)] == [twin.state_hash(w) for w in range(8)]


def test_integer_kinds_are_cast(tag):
    twin = orrery.make("tag", num_worlds=8, device="cpu", seed=3, threads=2)
    acts = np.random.default_rng(2).integers(0, 5, size=(8, 4))
    tag.step(acts.astype(np.uint8))
    twin.step(acts.tolist())
    np.testing.assert_array_equal(tag.obs, twin.obs)


def test_next_step_autoreset_semantics():
    env = orrery.make("tag", num_worlds=3, device="cpu", seed=0, horizon=4, tag_limit=1000)
    acts = np.zeros((3, 4), np.int32)
    for t in range(1, 4):
        _, _, term, trunc, _ = env.step(acts)
        assert not trunc.any()
    obs, reward, term, trunc, _ = env.step(acts)
    assert trunc.all() and not term.any()
    final = obs.copy()
    obs, reward, term, trunc, _ = env.step(np.full((3, 4), 4, np.int32))  # ignored: this step resets
    assert not trunc.any() and not term.any()
    assert np.all(reward == 0)
    assert not np.array_equal(obs, final)


def test_same_step_autoreset_keeps_final_values():
    env = orrery.make("tag", num_worlds=3, device="cpu", seed=0, horizon=2, autoreset="same_step")
    acts = np.zeros((3, 4), np.int32)
    env.step(acts)
    obs, reward, term, trunc, info = env.step(acts)
    assert trunc.all()
    assert "final_obs" in info and info["final_obs"].shape == obs.shape
    assert not np.array_equal(info["final_obs"], obs)  # obs is the new episode's first
    np.testing.assert_array_equal(reward, env.view("final_reward"))
    np.testing.assert_array_equal(info["position"], env.view("final_position"))  # the step just taken
    assert not np.array_equal(info["position"], env.view("position"))  # the new episode's start
    twin = orrery.make("tag", num_worlds=3, device="cpu", seed=0, horizon=2, autoreset="disabled")
    twin.step(acts)
    tobs, treward, _, _, tinfo = twin.step(acts)
    np.testing.assert_array_equal(info["final_obs"], tobs)
    np.testing.assert_array_equal(reward, treward)
    np.testing.assert_array_equal(info["position"], tinfo["position"])


def test_disabled_autoreset_waits_for_reset_worlds():
    env = orrery.make("tag", num_worlds=2, device="cpu", seed=0, horizon=2, autoreset="disabled")
    acts = np.zeros((2, 4), np.int32)
    env.step(acts)
    obs, _, _, trunc, _ = env.step(acts)
    assert trunc.all()
    frozen = obs.copy()
    obs, _, _, trunc, _ = env.step(acts)
    np.testing.assert_array_equal(obs, frozen)  # finished worlds do not move
    assert trunc.all()
    obs, _ = env.reset_worlds(np.array([True, False]))
    assert not env.view("truncated")[0] and env.view("truncated")[1]
    assert not np.array_equal(obs[0], frozen[0])
    np.testing.assert_array_equal(obs[1], frozen[1])


def test_context_manager_closes():
    with orrery.make("tag", num_worlds=1, device="cpu") as env:
        env.step(np.zeros((1, 4), np.int32))
    assert env.closed
    assert "closed" in repr(env)


def test_threads_may_share_an_env():
    import threading

    env = orrery.make("tag", num_worlds=64, device="cpu", seed=4, threads=2)
    twin = orrery.make("tag", num_worlds=64, device="cpu", seed=4, threads=2)
    env.actions[:] = 1  # the same actions every step, so the order of the calls does not matter
    twin.actions[:] = 1

    def run():
        for _ in range(50):
            env.step()

    workers = [threading.Thread(target=run) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for _ in range(150):
        twin.step()
    assert [env.state_hash(w) for w in range(64)] == [twin.state_hash(w) for w in range(64)]
