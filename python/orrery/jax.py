"""A step callable inside ``jax.jit`` and ``jax.lax.scan``, for CPU envs.

``step = orrery.jax.make_step(env)`` returns a function of the actions array
that steps the simulator and returns (obs, reward, terminated, truncated) as
JAX arrays. It goes through ``jax.experimental.io_callback`` with
``ordered=True``: XLA keeps the steps in program order and never drops or
repeats one, so a scanned rollout is the same trajectory as eager steps. Each
call copies the outputs into XLA's buffers (they are small next to a step).
The zero-copy path through XLA's FFI (custom call), which would also serve
CUDA envs, is not written yet. Needs jax (pip install 'orrery-rl[jax]').
"""

from __future__ import annotations

from typing import Any, Callable, Tuple

import numpy as np

from orrery._extras import require

__all__ = ["make_step"]


def make_step(env: Any) -> Callable[[Any], Tuple[Any, Any, Any, Any]]:
    """A jit- and scan-safe ``step(actions) -> (obs, reward, terminated, truncated)`` of a CPU ``env``."""
    jax = require("jax", "orrery.jax")
    from jax.experimental import io_callback

    if env.device != "cpu":
        raise ValueError(f"orrery.jax.make_step needs a CPU env; this one is on {env.device} "
                         "(the XLA FFI path for CUDA envs is not written yet)")
    names = ("obs", "reward", "terminated", "truncated")
    host = {n: env.host_view(n) for n in names}
    shapes = tuple(jax.ShapeDtypeStruct(host[n].shape, host[n].dtype) for n in names)
    action = env.tensors[env._action_name()]
    action_shape, action_dtype = tuple(action.shape), np.dtype(action.dtype)

    def host_step(actions: np.ndarray) -> Tuple[np.ndarray, ...]:
        env.step(np.asarray(actions))
        return tuple(np.array(host[n]) for n in names)  # copies: the views change with the next step

    def step(actions: Any) -> Tuple[Any, Any, Any, Any]:
        if tuple(actions.shape) != action_shape:
            raise ValueError(f"actions has shape {tuple(actions.shape)}; expected {action_shape}")
        return io_callback(host_step, shapes, actions.astype(action_dtype), ordered=True)

    return step
