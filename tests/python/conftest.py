"""Shared fixtures for the Python suite: which envs and devices exist here."""

import importlib.util

import pytest

import orrery


def has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def cuda_available() -> bool:
    if not has_module("torch"):
        return False
    import torch

    return torch.cuda.is_available()


ENVS = orrery.list_envs()

requires_torch = pytest.mark.skipif(not has_module("torch"), reason="needs PyTorch")
requires_jax = pytest.mark.skipif(not has_module("jax"), reason="needs JAX")
requires_cuda = pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")


def random_actions(env, rng):
    """Valid random actions for any env with a ranged integer action tensor."""
    import numpy as np

    lo, hi = env.action_range
    return rng.integers(lo, hi + 1, size=env.tensors[env._action_name()].shape).astype(np.int64)


@pytest.fixture
def tag():
    env = orrery.make("tag", num_worlds=8, device="cpu", seed=3, threads=2)
    yield env
    env.close()
