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


def _obs_box(env: Any, shape: tuple) -> Any:
    """A Box of ``shape`` ending in the obs row's own dims, with the env's declared
    bounds (one per entry of the row's first axis) where it declares them."""
    from orrery.meta import meta_of

    dtype = np.dtype(env.tensors["obs"].dtype)
    bounds = meta_of(env.name, dict(env.options)).obs_bounds
    if bounds is None:
        return _box(shape, dtype)
    low, high = (np.asarray(b, dtype=np.float64) for b in bounds(dict(env.options), env.num_agents))
    row = tuple(env._exports["obs"]["dims"])  # the per-agent row: [entries, ...]
    lead = len(shape) - len(row)
    per_entry = (len(low),) + (1,) * (len(row) - 1)
    low = np.broadcast_to(low.reshape(per_entry), row)
    high = np.broadcast_to(high.reshape(per_entry), row)
    low, high = (np.broadcast_to(b, shape[:lead] + row).astype(dtype) for b in (low, high))
    return _spaces().Box(low=low, high=high, shape=shape, dtype=dtype)


def world_observation_space(env: Any) -> Any:
    """One world's observation: [agents, ...] (or [...] for a per-world obs)."""
    return _obs_box(env, tuple(env.tensors["obs"].shape[1:]))


def world_action_space(env: Any) -> Any:
    """One world's action: Discrete, MultiDiscrete (one per agent) or Box."""
    return _action(env, tuple(env.tensors[env._action_name()].shape[1:]))


def _per_agent_shape(env: Any, name: str) -> tuple:
    shape = tuple(env.tensors[name].shape[1:])
    export = env._exports[name]
    return shape if export["singleton"] else shape[1:]


def agent_observation_space(env: Any) -> Any:
    """One agent's observation (the world's, when the env has one agent row per world)."""
    return _obs_box(env, _per_agent_shape(env, "obs"))


def agent_action_space(env: Any) -> Any:
    """One agent's action: Discrete for a ranged integer action."""
    return _action(env, _per_agent_shape(env, env._action_name()))
