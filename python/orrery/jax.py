"""A step callable inside ``jax.jit`` and ``jax.lax.scan``, for CPU and CUDA envs.

``step = orrery.jax.make_step(env)`` returns a function of the actions array
that steps the simulator and returns (obs, reward, terminated, truncated) as
JAX arrays. It is one XLA custom call through XLA's FFI (``jax.ffi.ffi_call``,
the handler lives in orrery._core): no Python runs per step, and the call is
marked side-effecting, so XLA keeps every step, in order. The handler steps
reading the actions where XLA holds them and writing the outputs into XLA's
result buffers (XLA owns them): on a GPU the step's kernel does both itself,
on the CPU they are copied. Where the FFI is unavailable (an old jax) it falls
back to ``jax.experimental.io_callback(..., ordered=True)``, same results.

Called eagerly (outside ``jax.jit``) on a CPU env, the step is zero-copy: it
writes the actions into the simulator, steps it, and returns JAX arrays that
are views of the simulator's own output tensors (``jax.dlpack``; the suite
compares data pointers). JAX arrays are values, and these views are refreshed
in place by the next step, so each call *lends* its arrays until the next one:
the next call deletes them (using one afterwards raises JAX's "Array has been
deleted") and, before stepping, waits until XLA has finished every computation
already dispatched that reads them (the simulator's memory is released only
then), so no computation sees a later step's values. Action values are
checked first: a refused call raises with the lent arrays still valid. Copy what you keep
(``jnp.array(obs, copy=True)``), or pass ``zero_copy=False`` for copies.

Inside ``jax.jit`` (and ``lax.scan``) the outputs are copies, and must be: XLA
allocates and owns a custom call's result buffers (the FFI cannot return
memory it did not allocate), and a scan keeps every step's outputs as values
while the next step overwrites the simulator's one buffer per tensor.

On a CUDA env the actions must be on that GPU (jax's CUDA backend, the same
device): the handler queues the engine's step (which reads the actions and
writes the results in place) on XLA's stream, or orders it after and before
that stream with CUDA events, so nothing waits on the host and nothing leaves
the GPU. As with every CUDA step, an out-of-range
action is not raised: that world records ``ErrorCode.kBadAction`` and skips
the step (``env.world_errors()``). Needs jax (pip install 'orrery-rl[jax]').
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any, Callable, List, Tuple

import numpy as np

from orrery import _actions, _core
from orrery._extras import require

__all__ = ["make_step", "FFI_TARGET"]

FFI_TARGET = "orrery_cpu_step"
FFI_TARGET_CUDA = "orrery_cuda_step"
IN_PLACE_TARGET = "orrery_cpu_step_in_place"
IN_PLACE_TARGET_CUDA = "orrery_cuda_step_in_place"
_OUTPUTS = ("obs", "reward", "terminated", "truncated")
_registered: set = set()


def _register(jax: Any, platform: str) -> bool:
    """Registers the platform's handlers with XLA once; False where this jax has no FFI."""
    if platform not in _registered:
        ffi = getattr(jax, "ffi", None)
        if ffi is None or not hasattr(ffi, "ffi_call"):
            return False
        if platform == "cpu":
            ffi.register_ffi_target(FFI_TARGET, _core.xla_ffi_cpu_step_handler(), platform="cpu")
            ffi.register_ffi_target(IN_PLACE_TARGET, _core.xla_ffi_cpu_step_in_place_handler(), platform="cpu")
        else:
            ffi.register_ffi_target(FFI_TARGET_CUDA, _core.xla_ffi_cuda_step_handler(), platform="CUDA")
            ffi.register_ffi_target(IN_PLACE_TARGET_CUDA, _core.xla_ffi_cuda_step_in_place_handler(),
                                    platform="CUDA")
        _registered.add(platform)
    return True


def view_maker(env: Any) -> Callable[[Any], Any]:
    """``jax.dlpack.from_dlpack`` for ``env``'s tensors (Env.view with
    framework="jax", which makes a view per call: JAX arrays are values),
    without the public function's per-call Python: it looks up the device and
    canonicalises the dtype through ``jnp.asarray`` every time, 20 of its 25 µs
    a view on the 2-core VM. This calls the jaxlib function it ends in, with
    the device looked up once, and the same stream and copy arguments; no
    dtype here needs canonicalising (no 64-bit one, or x64 on). Where that
    function is not the one this was written against (jaxlib's extension
    version, or a first view that is not the tensor's own memory), it is the
    public function."""
    jax = require("jax", "orrery.jax")
    public = jax.dlpack.from_dlpack
    try:
        from jax._src import xla_bridge
        from jax._src.lib import _jax, jaxlib_extension_version

        cuda = env.device != "cpu"
        index = int(env.device.split(":")[1]) if cuda else 0
        device = xla_bridge.get_backend("cuda" if cuda else "cpu").device_from_local_hardware_id(index)
        kind = 2 if cuda else 1  # DLPack's kDLCUDA, kDLCPU
        wide = {"int64", "uint64", "float64"}
        if any(t.dtype in wide for t in env.tensors.values()) and not jax.config.jax_enable_x64:
            return public

        ordered = cuda
        if cuda:
            try:  # the public function passes no stream where this is unimplemented
                device.get_stream_for_external_ready_events()
            except Exception:
                ordered = False

        def stream() -> Any:
            return device.get_stream_for_external_ready_events() if ordered else None

        if jaxlib_extension_version >= 467:
            def view(tensor: Any) -> Any:
                s = stream()
                return _jax.dlpack_managed_tensor_to_buffer(tensor.__dlpack__(stream=s), device, s, None, kind)
        else:
            def view(tensor: Any) -> Any:
                s = stream()
                return _jax.dlpack_managed_tensor_to_buffer(tensor.__dlpack__(stream=s), device, s, None)

        first = next(iter(env.tensors.values()))
        arr = view(first)
        if (not isinstance(arr, jax.Array) or arr.unsafe_buffer_pointer() != first.data_ptr
                or tuple(arr.shape) != tuple(first.shape) or np.dtype(arr.dtype) != np.dtype(first.dtype)):
            return public
        return view
    except Exception:  # another jax: its public function
        return public


class InPlaceStep:
    """``Env.step`` with a JAX array of actions on a CUDA env (framework="jax"):
    one XLA custom call that steps the simulator reading the actions where XLA
    holds them, on XLA's stream, no copy (the step's kernel loads them), its
    outputs left in the simulator's tensors. XLA keeps the actions' buffer
    alive and unwritten until the step has read it, as for any operand of its
    own. A call returns once the handler has queued the step (XLA may run it
    on a thread of its own), so whatever Python does next with the simulator
    comes after it. On a CPU env (for tests) the handler is the CPU one:
    values range-checked where XLA holds them, then copied in.
    """

    def __init__(self, env: Any) -> None:
        jax = require("jax", "orrery.jax")
        cuda = env.device != "cpu"
        if cuda:
            _check_cuda(jax, env)
        if not _register(jax, "cuda" if cuda else "cpu"):
            raise ValueError("orrery.jax: stepping with JAX actions in place needs jax's FFI (jax >= 0.4.31)")
        self._jax = jax
        name = env._action_name()
        self.shape, self.dtype = tuple(env.tensors[name].shape), np.dtype(env.tensors[name].dtype)
        self.device = jax.devices("cuda")[int(env.device.split(":")[1])] if cuda else jax.devices("cpu")[0]
        self._stepper = env._live().ffi_stepper(name, [])
        call = jax.ffi.ffi_call(IN_PLACE_TARGET_CUDA if cuda else IN_PLACE_TARGET,
                                jax.ShapeDtypeStruct((0,), np.uint8), has_side_effect=True)
        handle = np.uint64(self._stepper.handle)
        self._call = jax.jit(lambda actions: call(actions, handle=handle))

    def accepts(self, actions: Any) -> bool:
        """True for a JAX array of the action's shape and dtype on this env's device."""
        return (isinstance(actions, self._jax.Array) and tuple(actions.shape) == self.shape
                and actions.dtype == self.dtype and actions.devices() == {self.device})

    def __call__(self, actions: Any) -> None:
        stepper = self._stepper
        token = stepper.calls
        try:
            done = self._call(actions)
        except Exception:  # XLA ran the call at once and it failed: the handler's message, as a ValueError
            error = stepper.take_error()
            if error:
                raise ValueError(error) from None
            raise
        while stepper.calls == token:  # the handler queues the step within microseconds of dispatch
            if done.is_ready():  # finished without running the handler: XLA failed the call
                self._jax.block_until_ready(done)  # raises XLA's error
                if stepper.calls == token:
                    raise RuntimeError("orrery.jax: XLA finished the step's call without running it")
            time.sleep(0)
        error = stepper.take_error()
        if error:
            raise ValueError(error)


def _check_cuda(jax: Any, env: Any) -> None:
    """A CUDA env's step runs where jax's CUDA backend and the env share the device."""
    try:
        gpus = jax.devices("cuda")
    except RuntimeError:
        gpus = []
    if not gpus:
        raise ValueError(f"orrery.jax.make_step: the env is on {env.device}, but this jax has no CUDA backend "
                         "(install jax[cuda12] or jax[cuda13], or make the env with device='cpu')")
    index = int(env.device.split(":")[1]) if ":" in env.device else 0
    if index >= len(gpus):
        raise ValueError(f"orrery.jax.make_step: the env is on {env.device}, but jax sees {len(gpus)} GPU(s)")


class _Lent:
    """The output arrays an eager step lends: JAX views of the simulator's
    tensors, each through its own DLPack owner, whose release (when XLA drops
    the buffer, after every computation reading it has run) sets an event."""

    def __init__(self, jax: Any, tensors: List[Any]) -> None:
        self._jax, self._tensors = jax, tensors
        self._arrays: Tuple[Any, ...] = ()
        self._released: List[threading.Event] = []

    def lend(self) -> Tuple[Any, ...]:
        arrays = []
        for t in self._tensors:
            owner = t.view(t.dtype, list(t.shape))  # a fresh owner per array: its release is this array's
            released = threading.Event()
            weakref.finalize(owner, released.set)
            arrays.append(self._jax.dlpack.from_dlpack(owner))
            self._released.append(released)
        self._arrays = tuple(arrays)
        return self._arrays

    def take_back(self) -> None:
        """Deletes the lent arrays and waits until XLA has let go of them."""
        for a in self._arrays:
            a.delete()  # returns at once; XLA frees the buffer once its pending readers have run
        for released in self._released:
            released.wait()  # releases the GIL: the owner is freed on XLA's thread
        self._arrays, self._released = (), []


def make_step(env: Any, use_ffi: bool = True, zero_copy: bool = True) -> Callable[[Any], Tuple[Any, Any, Any, Any]]:
    """A jit- and scan-safe ``step(actions) -> (obs, reward, terminated, truncated)`` of ``env``
    (CPU or CUDA). use_ffi=False takes the io_callback path (for comparison; CPU envs only).
    Called eagerly on a CPU env with zero_copy=True, the step returns views of the
    simulator's outputs, lent until the next call (see the module's notes)."""
    jax = require("jax", "orrery.jax")
    cuda = env.device != "cpu"
    if cuda:
        _check_cuda(jax, env)
    tensors = {n: env.tensors[n] for n in _OUTPUTS}
    shapes = tuple(jax.ShapeDtypeStruct(tuple(tensors[n].shape), np.dtype(tensors[n].dtype)) for n in _OUTPUTS)
    name = env._action_name()
    action_shape, action_dtype = tuple(env.tensors[name].shape), np.dtype(env.tensors[name].dtype)

    if use_ffi and _register(jax, "cuda" if cuda else "cpu"):
        # The env and the stepper stay alive as long as the step function: the
        # handle is the stepper's address, and it locks the env's simulator.
        owner = (env, env._live().ffi_stepper(name, list(_OUTPUTS)))
        call = jax.ffi.ffi_call(FFI_TARGET_CUDA if cuda else FFI_TARGET, shapes, has_side_effect=True)

        def run(actions: Any) -> Tuple[Any, ...]:
            return tuple(call(actions, handle=np.uint64(owner[1].handle)))
    elif cuda:
        raise ValueError("orrery.jax.make_step: a CUDA env needs jax's FFI (jax >= 0.4.31); "
                         "use_ffi=False serves CPU envs only")
    else:
        host = {n: env.host_view(n) for n in _OUTPUTS}
        from jax.experimental import io_callback

        def host_step(actions: np.ndarray) -> Tuple[np.ndarray, ...]:
            env.step(np.asarray(actions))
            return tuple(np.array(host[n]) for n in _OUTPUTS)  # copies: the views change with the next step

        def run(actions: Any) -> Tuple[Any, ...]:
            return tuple(io_callback(host_step, shapes, actions, ordered=True))

    lent = _Lent(jax, [tensors[n] for n in _OUTPUTS]) if zero_copy and not cuda else None

    def eager(actions: Any) -> Tuple[Any, ...]:
        # The same step as the CPU handler's (actions cast to the tensor's dtype, then
        # the simulator's step), outputs lent instead of copied. Values are checked
        # first, so a refused call raises with the lent arrays still valid.
        assert lent is not None
        values = np.asarray(actions).astype(action_dtype, copy=False)
        _actions._check_host_values(env, name, "actions", values, action_dtype)
        lent.take_back()
        np.copyto(env.host_view(name), values)
        env._live().step()
        return lent.lend()

    def step(actions: Any) -> Tuple[Any, Any, Any, Any]:
        if tuple(actions.shape) != action_shape:
            raise ValueError(f"actions has shape {tuple(actions.shape)}; expected {action_shape}")
        if lent is not None and not isinstance(actions, jax.core.Tracer):
            return eager(actions)
        return run(actions.astype(action_dtype))

    return step
