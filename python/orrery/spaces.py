"""Gymnasium spaces of an Orrery env, from its export table and declared input
ranges: one world's (every agent's rows), one agent's, or the whole batch's.
Needs gymnasium (pip install 'orrery-rl[gymnasium]')."""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from orrery._extras import require

__all__ = ["world_observation_space", "world_action_space", "agent_observation_space", "agent_action_space"]


def _spaces() -> Any:
    return require("gymnasium.spaces", "Orrery's Gymnasium spaces")


def dtype_bounds(dtype: np.dtype) -> Tuple[Any, Any]:
    if dtype.kind in "iu":
        return np.iinfo(dtype).min, np.iinfo(dtype).max
    if dtype.kind == "b":
        return 0, 1
    return -np.inf, np.inf


def _box(shape: tuple, dtype: np.dtype) -> Any:
    lo, hi = dtype_bounds(dtype)
    return _spaces().Box(low=lo, high=hi, shape=shape, dtype=dtype)


def _action(env: Any, shape: tuple) -> Any:
    spaces = _spaces()
    name = env._action_name()
    dtype = np.dtype(env.tensors[name].dtype)
    if dtype.kind not in "iu":
        return spaces.Box(low=-np.inf, high=np.inf, shape=shape, dtype=dtype)
    lo, hi = env.input_ranges.get(name) or dtype_bounds(dtype)
    if not shape:
        return spaces.Discrete(int(hi - lo + 1), start=int(lo))
    return spaces.MultiDiscrete(np.full(shape, hi - lo + 1, dtype=np.int64), start=np.full(shape, lo, dtype=np.int64))


def world_observation_space(env: Any) -> Any:
    """One world's observation: [agents, ...] (or [...] for a per-world obs)."""
    t = env.tensors["obs"]
    return _box(tuple(t.shape[1:]), np.dtype(t.dtype))


def world_action_space(env: Any) -> Any:
    """One world's action: Discrete, MultiDiscrete (one per agent) or Box."""
    return _action(env, tuple(env.tensors[env._action_name()].shape[1:]))


def _per_agent_shape(env: Any, name: str) -> tuple:
    shape = tuple(env.tensors[name].shape[1:])
    export = env._exports[name]
    return shape if export["singleton"] else shape[1:]


def agent_observation_space(env: Any) -> Any:
    """One agent's observation (the world's, when the env has one agent row per world)."""
    return _box(_per_agent_shape(env, "obs"), np.dtype(env.tensors["obs"].dtype))


def agent_action_space(env: Any) -> Any:
    """One agent's action: Discrete for a ranged integer action."""
    return _action(env, _per_agent_shape(env, env._action_name()))
