"""Checks and writes user actions into an env's input tensors.

Everything is validated before a byte is written (shape, dtype, device, NaN,
range), so a rejected call leaves the simulator exactly as it was. On the GPU
only what needs no host synchronisation is checked here (shape, dtype,
device); out-of-range values are caught by the device and reported per world
by Env.errors() / Env.check_errors().

Env.step() comes here only off its fast paths (Env._step_fast: an exact-dtype
C-order NumPy array on the CPU, whose range the binding checks before writing,
and an exact-dtype contiguous torch tensor on the GPU), and when a fast-path
NumPy array holds an out-of-range value, so that this module's message names it.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

_DL_CPU, _DL_CUDA = 1, 2


def _device_name(dev: Tuple[int, int]) -> str:
    kind, index = int(dev[0]), int(dev[1])
    if kind == _DL_CPU:
        return "cpu"
    if kind == _DL_CUDA:
        return f"cuda:{index}"
    return f"DLPack device ({kind}, {index})"


def _source_device(value: Any) -> str:
    get = getattr(value, "__dlpack_device__", None)
    if get is None:
        return "cpu"  # lists, scalars, objects NumPy can read
    try:
        return _device_name(get())
    except Exception:  # a broken producer: let the conversion report it
        return "cpu"


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch")


def _to_numpy(value: Any, what: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if _is_torch(value):
        return value.detach().numpy()
    try:
        return np.asarray(value)
    except Exception as e:
        raise TypeError(f"{what} of type {type(value).__name__} cannot be read as an array ({e})") from None


def _expect(env: Any, name: str) -> Tuple[tuple, np.dtype, str]:
    tensor = env.tensors[name]
    return tuple(tensor.shape), np.dtype(tensor.dtype), "actions" if name == env._action_name() else name


def _check_shape(what: str, shape: tuple, expected: tuple) -> None:
    if tuple(shape) != expected:
        raise ValueError(f"{what} has shape {tuple(shape)}; expected {expected} "
                         f"(num_worlds, agents, ...) of this env's '{what}' tensor")


def _check_host_values(env: Any, name: str, what: str, arr: np.ndarray, dtype: np.dtype) -> None:
    kind = arr.dtype.kind
    if kind == "f" and arr.size and not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{what}[{', '.join(map(str, bad))}] is {arr[tuple(bad)]}; expected finite values")
    if dtype.kind in "iu" and kind not in "iu":
        raise TypeError(f"{what} has dtype {arr.dtype}; expected an integer dtype (cast to {dtype})")
    if dtype.kind == "f" and kind not in "iuf":
        raise TypeError(f"{what} has dtype {arr.dtype}; expected a numeric dtype (cast to {dtype})")
    if not arr.size or kind not in "iu":
        return
    lo, hi = env.input_ranges.get(name, (None, None))
    if lo is None and dtype.kind in "iu":
        lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    if lo is None:
        return
    low, high = int(arr.min()), int(arr.max())
    if low < lo or high > hi:
        bad = np.argwhere((arr < lo) | (arr > hi))[0]
        raise ValueError(f"{what}[{', '.join(map(str, bad))}] = {arr[tuple(bad)]} is out of range; "
                         f"expected an integer in [{lo}, {hi}]")


def _write_host(env: Any, name: str, value: Any) -> None:
    shape, dtype, what = _expect(env, name)
    arr = _to_numpy(value, what)
    _check_shape(what, arr.shape, shape)
    _check_host_values(env, name, what, arr, dtype)
    dst = env.host_view(name)
    if arr.ctypes.data != dst.ctypes.data:  # the caller may pass env.actions itself
        np.copyto(dst, arr, casting="unsafe")


def _write_device(env: Any, name: str, value: Any) -> None:
    import torch

    shape, dtype, what = _expect(env, name)
    src = value if isinstance(value, torch.Tensor) else torch.from_dlpack(value)
    _check_shape(what, tuple(src.shape), shape)
    if src.dtype.is_floating_point and dtype.kind in "iu":
        raise TypeError(f"{what} has dtype {src.dtype}; expected an integer dtype (cast to {dtype})")
    if src.dtype == torch.bool or src.dtype.is_complex:
        raise TypeError(f"{what} has dtype {src.dtype}; expected {'an integer' if dtype.kind in 'iu' else 'a numeric'} dtype")
    dst = env._views.get(name) if env.framework == "torch" else None
    if dst is None:  # made once: taking a view orders streams (or waits, in a capture), which a step must not
        dst = env._views.get("_torch_" + name)
        if dst is None:
            dst = env._views["_torch_" + name] = torch.from_dlpack(env.tensors[name])
    if src.data_ptr() != dst.data_ptr():
        dst.copy_(src.detach(), non_blocking=True)  # stream-ordered: no host synchronisation


def write_input(env: Any, name: str, value: Any) -> None:
    """Validates ``value`` against input tensor ``name`` and copies it in."""
    shape, dtype, what = _expect(env, name)
    source = _source_device(value)
    if source != env.device:
        raise ValueError(f"{what} is on {source}; expected an array on {env.device} (this env's device)")
    if env.device == "cpu":
        _write_host(env, name, value)
    else:
        _write_device(env, name, value)
