"""A step callable inside ``jax.jit`` and ``jax.lax.scan``, for CPU envs.

``step = orrery.jax.make_step(env)`` returns a function of the actions array
that steps the simulator and returns (obs, reward, terminated, truncated) as
JAX arrays. It is one XLA custom call through XLA's FFI (``jax.ffi.ffi_call``,
the handler lives in orrery._core): no Python runs per step, and the call is
marked side-effecting, so XLA keeps every step, in order. The handler copies
the actions XLA hands it into the simulator and the outputs into XLA's result
buffers (XLA owns both). Where the FFI is unavailable (an old jax) it falls
back to ``jax.experimental.io_callback(..., ordered=True)``, same results.
CUDA envs are not served yet. Needs jax (pip install 'orrery-rl[jax]').
"""

from __future__ import annotations

from typing import Any, Callable, Tuple

import numpy as np

from orrery import _core
from orrery._extras import require

__all__ = ["make_step", "FFI_TARGET"]

FFI_TARGET = "orrery_cpu_step"
_OUTPUTS = ("obs", "reward", "terminated", "truncated")
_registered = False


def _register(jax: Any) -> bool:
    """Registers the handler with XLA once; False where this jax has no FFI."""
    global _registered
    if not _registered:
        ffi = getattr(jax, "ffi", None)
        if ffi is None or not hasattr(ffi, "ffi_call"):
            return False
        ffi.register_ffi_target(FFI_TARGET, _core.xla_ffi_cpu_step_handler(), platform="cpu")
        _registered = True
    return True


def make_step(env: Any, use_ffi: bool = True) -> Callable[[Any], Tuple[Any, Any, Any, Any]]:
    """A jit- and scan-safe ``step(actions) -> (obs, reward, terminated, truncated)`` of a CPU ``env``.
    use_ffi=False takes the io_callback path (for comparison)."""
    jax = require("jax", "orrery.jax")
    if env.device != "cpu":
        raise ValueError(f"orrery.jax.make_step needs a CPU env; this one is on {env.device} "
                         "(the XLA FFI step for CUDA envs is not written yet)")
    host = {n: env.host_view(n) for n in _OUTPUTS}
    shapes = tuple(jax.ShapeDtypeStruct(host[n].shape, host[n].dtype) for n in _OUTPUTS)
    name = env._action_name()
    action_shape, action_dtype = tuple(env.tensors[name].shape), np.dtype(env.tensors[name].dtype)

    if use_ffi and _register(jax):
        stepper = env._live().ffi_stepper(name, list(_OUTPUTS))  # kept alive by the closure below
        call = jax.ffi.ffi_call(FFI_TARGET, shapes, has_side_effect=True)

        def run(actions: Any) -> Tuple[Any, ...]:
            return tuple(call(actions, handle=np.uint64(stepper.handle)))
    else:
        from jax.experimental import io_callback

        def host_step(actions: np.ndarray) -> Tuple[np.ndarray, ...]:
            env.step(np.asarray(actions))
            return tuple(np.array(host[n]) for n in _OUTPUTS)  # copies: the views change with the next step

        def run(actions: Any) -> Tuple[Any, ...]:
            return tuple(io_callback(host_step, shapes, actions, ordered=True))

    def step(actions: Any) -> Tuple[Any, Any, Any, Any]:
        if tuple(actions.shape) != action_shape:
            raise ValueError(f"actions has shape {tuple(actions.shape)}; expected {action_shape}")
        return run(actions.astype(action_dtype))

    return step
