"""Bad input raises ValueError/TypeError naming the argument and what was
expected, and leaves every world exactly as it was."""

import numpy as np
import pytest

import orrery
from conftest import requires_jax, requires_torch


def hashes(env):
    return [env.state_hash(w) for w in range(env.num_worlds)]


@pytest.fixture
def env():
    e = orrery.make("tag", num_worlds=4, device="cpu", seed=9, threads=1)
    e.step(np.ones((4, 4), np.int32))
    yield e
    e.close()


@pytest.mark.parametrize("actions, error, words", [
    (np.zeros((4, 3), np.int32), ValueError, ["shape (4, 3)", "expected (4, 4)"]),
    (np.zeros((4, 4, 1), np.int32), ValueError, ["shape (4, 4, 1)", "expected (4, 4)"]),
    (np.zeros(16, np.int32), ValueError, ["shape (16,)"]),
    (np.zeros((4, 4), np.float32), TypeError, ["dtype float32", "integer"]),
    (np.zeros((4, 4), np.bool_), TypeError, ["dtype bool", "integer"]),
    (np.full((4, 4), np.nan, np.float32), ValueError, ["nan", "finite"]),
    (np.full((4, 4), 5, np.int64), ValueError, ["= 5", "[0, 4]"]),
    (np.full((4, 4), 5, np.int32), ValueError, ["= 5", "[0, 4]"]),  # the fast path's dtype: checked in C++
    (np.full((4, 4), -1, np.int8), ValueError, ["= -1", "[0, 4]"]),
    (np.full((4, 4), 2**40, np.int64), ValueError, ["out of range", "[0, 4]"]),
    ([["a"] * 4] * 4, TypeError, ["dtype <U1"]),
])
def test_bad_actions_are_rejected_before_any_change(env, actions, error, words):
    before, obs_before, acts_before = hashes(env), env.obs.copy(), env.actions.copy()
    with pytest.raises(error) as e:
        env.step(actions)
    message = str(e.value)
    assert message.startswith("actions")
    for w in words:
        assert w in message, message
    assert hashes(env) == before
    np.testing.assert_array_equal(env.obs, obs_before)
    np.testing.assert_array_equal(env.actions, acts_before)


def test_one_bad_value_names_its_index(env):
    acts = np.zeros((4, 4), np.int32)
    acts[2, 3] = 7
    with pytest.raises(ValueError, match=r"actions\[2, 3\] = 7 is out of range; expected an integer in \[0, 4\]"):
        env.step(acts)


def test_bad_value_written_in_place_is_caught_by_the_engine(env):
    before = env.obs.copy()
    env.actions[1, 2] = 9
    with pytest.raises(ValueError, match=r"'action' holds 9 at world 1, index 2; expected a value in \[0, 4\]"):
        env.step()
    np.testing.assert_array_equal(env.obs, before)


@requires_torch
def test_torch_tensor_of_wrong_dtype_or_grad():
    import torch

    env = orrery.make("tag", num_worlds=2, device="cpu")
    with pytest.raises(TypeError, match="dtype float32"):
        env.step(torch.zeros(2, 4))
    env.step(torch.zeros(2, 4, dtype=torch.int64))  # integer kinds are accepted


@requires_torch
def test_gpu_actions_for_a_cpu_env():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    env = orrery.make("tag", num_worlds=2, device="cpu")
    with pytest.raises(ValueError, match="actions is on cuda:0; expected an array on cpu"):
        env.step(torch.zeros(2, 4, dtype=torch.int32, device="cuda"))


def test_unknown_env_name():
    with pytest.raises(ValueError, match="unknown env 'nope'; expected one of: .*tag"):
        orrery.make("nope")


def test_unknown_or_bad_env_option():
    with pytest.raises(ValueError, match="unknown option 'pursuer'; expected one of: .*pursuers"):
        orrery.make("tag", pursuer=2)
    with pytest.raises(ValueError, match="option pursuers=0 is invalid; expected an integer in \\[1, 64\\]"):
        orrery.make("tag", pursuers=0)
    with pytest.raises(TypeError, match="env option pursuers=\\[1\\] has type list"):
        orrery.make("tag", pursuers=[1])


@pytest.mark.parametrize("kwargs, error, words", [
    ({"num_worlds": 0}, ValueError, "num_worlds=0 is out of range"),
    ({"num_worlds": 2.5}, TypeError, "num_worlds=2.5 has type float"),
    ({"device": "tpu"}, ValueError, "device='tpu' is not understood"),
    ({"autoreset": "sometimes"}, ValueError, "autoreset='sometimes' is not understood"),
    ({"framework": "tensorflow"}, ValueError, "framework='tensorflow' is not understood"),
    ({"seed": -1}, ValueError, "seed=-1 is out of range"),
    ({"threads": -2}, ValueError, "threads=-2 is out of range"),
])
def test_bad_make_arguments(kwargs, error, words):
    with pytest.raises(error, match=words.replace("(", "\\(").replace("[", "\\[")):
        orrery.make("tag", **kwargs)


def test_cuda_without_a_cuda_backend_is_a_clear_error():
    from conftest import cuda_available

    if cuda_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="device='cuda'"):
        orrery.make("tag", device="cuda")


def test_step_after_close(env):
    env.close()
    for call in (lambda: env.step(np.zeros((4, 4), np.int32)), env.reset, lambda: env.state_hash(0)):
        with pytest.raises(ValueError, match="closed"):
            call()
    env.close()  # closing twice is harmless


def test_bad_world_indices(env):
    with pytest.raises(ValueError, match="world=4 is out of range; expected 0 <= world < 4"):
        env.state_hash(4)
    with pytest.raises(TypeError, match="world='0' has type str"):
        env.state_hash("0")
    with pytest.raises(ValueError, match="dst=-1 is out of range"):
        env.copy_world(0, -1)


def test_bad_reset_masks(env):
    before = hashes(env)
    with pytest.raises(ValueError, match=r"reset mask has shape \(3,\); expected \(4,\)"):
        env.reset_worlds(np.ones(3, bool))
    with pytest.raises(TypeError, match="reset mask has dtype float64"):
        env.reset_worlds(np.ones(4))
    assert hashes(env) == before


def test_unknown_input_name(env):
    with pytest.raises(ValueError, match="step\\(\\) got input 'actions'; this env's inputs are \\('action',\\)"):
        env.step({"actions": np.zeros((4, 4), np.int32)})


@requires_jax
def test_jax_actions_are_accepted():
    import jax
    import jax.numpy as jnp

    env = orrery.make("tag", num_worlds=2, device="cpu", seed=1)
    twin = orrery.make("tag", num_worlds=2, device="cpu", seed=1)
    env.step(jax.device_put(jnp.ones((2, 4), dtype=jnp.int32), jax.devices("cpu")[0]))
    twin.step(np.ones((2, 4), np.int32))
    np.testing.assert_array_equal(env.obs, twin.obs)
