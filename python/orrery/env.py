"""orrery.make() and Env: a batch of worlds of one env behind a step/reset API.

Every tensor the env exports is shared with the caller without copying: the
arrays returned by reset() and step() are views of the simulator's memory at
fixed addresses, refreshed in place by every step. Copy them (``obs.copy()``,
``obs.clone()``) to keep a value across steps.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import operator
import os
import re
import subprocess
import time
import warnings
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from orrery import _core
from orrery._actions import write_input
from orrery._extras import missing, require
from orrery.meta import meta_of

__all__ = ["Env", "make", "list_envs", "describe_envs", "AUTORESET_MODES", "FRAMEWORKS", "RENDER_MODES",
           "CpuFallbackWarning"]

RENDER_MODES = ("rgb_array", "human")


class CpuFallbackWarning(RuntimeWarning):
    """device="auto" found no usable CUDA device and runs on the CPU (said once per process)."""


_fallback_warned = False

AUTORESET_MODES = ("next_step", "same_step", "disabled")
FRAMEWORKS = ("numpy", "torch", "jax", "dlpack")
_ENGINE_TENSORS = ("terminated", "truncated", "errors")
_DEVICE = re.compile(r"^(auto|cpu|cuda|cuda:\d+)$")


def list_envs() -> list:
    """Names of every registered env, in registration order."""
    return [name for name, _ in _core.list_envs()]


def describe_envs() -> Dict[str, str]:
    """Name -> one-line summary of every registered env."""
    return dict(_core.list_envs())


def make(name: str, num_worlds: int = 1, device: str = "auto", seed: Optional[int] = None,
         autoreset: str = "next_step", threads: int = 0, framework: Optional[str] = None,
         render_mode: Optional[str] = None, **env_kwargs: Any) -> "Env":
    """Creates ``num_worlds`` worlds of env ``name``.

    device: "auto" (CUDA when usable, else the CPU), "cpu", "cuda" or "cuda:N".
    seed: seed of the first reset (None draws one from the OS).
    autoreset: "next_step", "same_step" or "disabled" (Gymnasium's modes).
    threads: CPU worker threads (0: every hardware thread).
    framework: array type returned by reset/step: "numpy" (default on the CPU),
        "torch" (default on CUDA), "jax", or "dlpack" (orrery.Tensor objects).
    render_mode: None, "rgb_array" (render() returns frames) or "human" (render() opens the viewer).
    env_kwargs: the env's own options, e.g. ``layout="cramped_room"``.
    """
    return Env(name, num_worlds=num_worlds, device=device, seed=seed, autoreset=autoreset,
               threads=threads, framework=framework, render_mode=render_mode, **env_kwargs)


def _option_string(key: str, value: Any) -> str:
    """Env options travel as strings: bools as true/false, numbers as text."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"env option {key}={value!r} is invalid; expected a finite number")
        return repr(float(value))
    if isinstance(value, str):
        return value
    raise TypeError(f"env option {key}={value!r} has type {type(value).__name__}; "
                    "expected a str, bool, int or float")


def _check_int(name: str, value: Any, lo: int, hi: Optional[int] = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}={value!r} has type {type(value).__name__}; expected an int")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        bound = f"an int >= {lo}" if hi is None else f"an int in [{lo}, {hi}]"
        raise ValueError(f"{name}={value} is out of range; expected {bound}")
    return value


def batch_seed(seed: Any, num_worlds: int) -> Optional[int]:
    """One engine seed from an int or from Gymnasium's list of per-world seeds.

    The engine keys each world's random stream by (seed, world index), so
    Gymnasium's [s, s+1, ..., s+N-1] (what its vector envs make of seed=s) is
    seed s; any other list is hashed into one seed: the same list gives the
    same worlds, different lists different ones. A list of Nones is no seed."""
    if seed is None or isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        return None if seed is None else _check_int("seed", seed, 0, 2**64 - 1)
    if isinstance(seed, (str, bytes)) or not isinstance(seed, (Sequence, np.ndarray)):
        raise TypeError(f"seed={seed!r} has type {type(seed).__name__}; expected an int, None, "
                        f"or a list of {num_worlds} ints (one per world)")
    seeds = list(seed)
    if len(seeds) != num_worlds:
        raise ValueError(f"seed is a list of {len(seeds)} values; expected one per world ({num_worlds})")
    if all(s is None for s in seeds):
        return None
    values = [_check_int(f"seed[{i}]", s, 0, 2**64 - 1) for i, s in enumerate(seeds)]
    if values == list(range(values[0], values[0] + num_worlds)):
        return values[0]
    digest = hashlib.sha256(np.asarray(values, dtype=np.uint64).tobytes()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _check_choice(name: str, value: Any, choices: Tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name}={value!r} has type {type(value).__name__}; expected one of {choices}")
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not understood; expected one of {choices}")
    return value


def _host_jax(actions: Any) -> Any:
    """A JAX array on the CPU as NumPy's view of its buffer (no copy), for
    Env._step_fast's host path; anything else (a GPU array, a tracer) as it is."""
    try:
        on_cpu = int(actions.__dlpack_device__()[0]) == 1  # DLPack's kDLCPU
    except Exception:
        return actions
    return np.asarray(actions) if on_cpu else actions


class MissingFrameworkError(ModuleNotFoundError, ValueError):
    """``framework=`` names a package that is not installed: a ValueError for
    the argument, a ModuleNotFoundError for the package."""


def _check_framework_installed(framework: str, import_it: bool = True) -> None:
    """Raises MissingFrameworkError at make() time, when the framework's package
    is not installed (rather than later, from reset()), saying what to pip
    install. With import_it=False only its presence is checked, which is cheap:
    Env checks that before it starts the simulator and imports the package
    after, so a make() on a thread overlaps the caller's own import of torch
    (examples/ippo_overcooked.py) instead of waiting for it."""
    if framework not in ("torch", "jax"):
        return
    try:
        absent = importlib.util.find_spec(framework) is None
    except (ValueError, AttributeError):  # sys.modules holds None for it: an import would fail
        absent = True
    feature = f"framework={framework!r}"
    try:
        if absent:
            raise missing(framework, feature)
        if import_it:
            require(framework, feature)
    except ModuleNotFoundError as e:
        raise MissingFrameworkError(f"{e} (or pass framework='dlpack' for orrery.Tensor objects)",
                                    name=e.name) from None


class Env:
    """A batch of ``num_worlds`` worlds of one env, stepped in lockstep.

    Attributes: ``num_worlds``, ``device`` ("cpu" or "cuda:N"), ``autoreset``,
    ``framework``, ``num_agents``, ``obs`` / ``actions`` (the live views),
    ``tensors`` (every export as an orrery.Tensor, DLPack-capable),
    ``startup_seconds`` (what starting the native simulator took; on CUDA the
    driver, the context, device memory and the kernels compiled or loaded
    from the compile cache).
    """

    def __init__(self, name: str, num_worlds: int = 1, device: str = "auto", seed: Optional[int] = None,
                 autoreset: str = "next_step", threads: int = 0, framework: Optional[str] = None,
                 render_mode: Optional[str] = None, **env_kwargs: Any):
        if not isinstance(name, str):
            raise TypeError(f"name={name!r} has type {type(name).__name__}; expected a str")
        num_worlds = _check_int("num_worlds", num_worlds, 1, 2**32 - 1)
        threads = _check_int("threads", threads, 0, 4096)
        autoreset = _check_choice("autoreset", autoreset, AUTORESET_MODES)
        if not isinstance(device, str) or not _DEVICE.match(device):
            raise (TypeError if not isinstance(device, str) else ValueError)(
                f"device={device!r} is not understood; expected 'auto', 'cpu', 'cuda' or 'cuda:N'")
        if seed is not None:
            seed = _check_int("seed", seed, 0, 2**64 - 1)
        if framework is not None:
            framework = _check_choice("framework", framework, FRAMEWORKS)
            _check_framework_installed(framework, import_it=False)  # imported once the simulator exists
        if render_mode is not None:
            render_mode = _check_choice("render_mode", render_mode, RENDER_MODES)
        options = {k: _option_string(k, v) for k, v in env_kwargs.items()}
        self._closed = True  # until the simulator exists, so close() is safe
        self._views: Dict[str, Any] = {}
        self._host: Dict[str, np.ndarray] = {}
        self._viewer: Optional[subprocess.Popen] = None
        started = time.perf_counter()
        self._sim = _simulator(name, options, num_worlds, device, autoreset, threads)
        self.startup_seconds = time.perf_counter() - started
        self._closed = False
        self.render_mode = render_mode
        self.threads = threads
        self.name = name
        self.options = options
        self.num_worlds = num_worlds
        self.autoreset = autoreset
        self.device = self._sim.device
        self.framework = framework or ("numpy" if self.device == "cpu" else "torch")
        if self.framework != "numpy":
            try:
                _check_framework_installed(self.framework)
            except ValueError:
                self.close()
                raise
        if self.framework == "numpy" and self.device != "cpu":
            self.close()
            raise ValueError(f"framework='numpy' needs device='cpu'; this env is on {self.device} "
                             "(use framework='torch', 'jax' or 'dlpack')")
        self._exports = {e["name"]: e for e in self._sim.exports()}
        self.tensors = self._shaped_tensors()
        self.input_ranges = dict(self._sim.input_ranges())
        self._prepare_step()
        self._seeds = np.random.default_rng(seed)
        self._next_seed = seed
        self.reset()

    # ----- shapes and views ------------------------------------------------

    def _shaped_tensors(self) -> Dict[str, "_core.Tensor"]:
        """Each tensor in the shape the engine computes for users (TensorView::user_shape):
        [worlds] + [rows unless per-world] + [dims unless a scalar component]."""
        out = {}
        for name, t in self._sim.tensors().items():
            if name in ("terminated", "truncated"):
                out[name] = t.view("bool", list(t.user_shape))
            else:
                out[name] = t.view(t.dtype, list(t.user_shape))
        return out

    def view(self, name: str) -> Any:
        """The live view of tensor ``name`` in this env's framework (made once, zero-copy)."""
        if name not in self.tensors:
            raise ValueError(f"no tensor named {name!r}; this env has: {', '.join(self.tensors)}")
        if self.framework == "jax":  # JAX arrays are values: a fresh (still zero-copy) wrapper per call
            make = self._views.get("_jax_view")
            if make is None:
                from orrery.jax import view_maker

                make = self._views["_jax_view"] = view_maker(self)
            return make(self.tensors[name])
        view = self._views.get(name)
        if view is None:
            view = self._views[name] = self._wrap(self.tensors[name])
        return view

    def _wrap(self, tensor: "_core.Tensor") -> Any:
        if self.framework == "numpy":
            return np.from_dlpack(tensor)
        if self.framework == "torch":
            import torch
            return torch.from_dlpack(tensor)
        return tensor

    def host_view(self, name: str) -> np.ndarray:
        """A NumPy view of tensor ``name`` (CPU envs only)."""
        if self.device != "cpu":
            raise ValueError(f"host_view({name!r}) needs a CPU env; this env is on {self.device}")
        if name not in self.tensors:
            raise ValueError(f"no tensor named {name!r}; this env has: {', '.join(self.tensors)}")
        view = self._host.get(name)
        if view is None:
            view = self._host[name] = np.from_dlpack(self.tensors[name])
        return view

    @property
    def inputs(self) -> Tuple[str, ...]:
        """Names of the tensors users write before step() (usually just "action")."""
        return tuple(n for n, e in self._exports.items() if e["input"])

    @property
    def outputs(self) -> Tuple[str, ...]:
        """Names of the env's own output tensors (obs, reward and the rest)."""
        return tuple(n for n, e in self._exports.items() if not e["input"])

    @property
    def obs(self) -> Any:
        return self.view("obs")

    @property
    def actions(self) -> Any:
        """The live action tensor: write into it in place, then call step()."""
        return self.view(self._action_name())

    @property
    def num_agents(self) -> int:
        """Rows of the action tensor per world (1 for a per-world action)."""
        export = self._exports[self._action_name()]
        return 1 if export["singleton"] else int(export["capacity"])

    @property
    def action_range(self) -> Optional[Tuple[int, int]]:
        """Inclusive (low, high) of the action values, when the env declares one."""
        return self.input_ranges.get(self._action_name())

    @property
    def env_info(self) -> Dict[str, str]:
        """The env's description (layout name, sizes), as recorded in checkpoints."""
        return dict(self._live().env_info)

    @property
    def backend(self) -> str:
        return self._live().backend

    @property
    def closed(self) -> bool:
        return self._closed

    def _prepare_step(self) -> None:
        """What step() reads, made once. The views: tensors stay at fixed
        addresses for the simulator's life, and taking a view waits for the
        device, which a step must not (nor a CUDA graph capture). The action
        input's expected shape and dtype, for step()'s fast paths. On CUDA with
        torch, how to read torch's current stream: engine work is ordered after
        it and it after the engine work (two events in the binding, no host wait)."""
        names = self.inputs
        self._input = "action" if "action" in names else (names[0] if len(names) == 1 else None)
        self._info_names = tuple(n for n in self.outputs if n not in ("obs", "reward"))
        self._cpu = self.device == "cpu"
        self._torch = self._current_stream = self._external = None
        self._device_index = -1 if self._cpu else int(self.device.split(":")[1])
        if not self._cpu:
            try:
                import torch
            except ImportError:
                torch = None
            if torch is not None and torch.cuda.is_available():
                torch.cuda.init()  # before the raw stream query below, which skips torch's lazy init
                self._torch = torch
                raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # a public call costs ~1 us more
                self._current_stream = raw or (lambda i: torch.cuda.current_stream(i).cuda_stream)
                for name in names:  # where write_input copies torch actions of another dtype
                    self._views["_torch_" + name] = torch.from_dlpack(self.tensors[name])
        if self.framework != "jax":  # JAX arrays are values: view() wraps afresh per call
            for name in self.tensors:
                self.view(name)
        if self._input is not None:
            t = self.tensors[self._input]
            self._input_shape = tuple(t.shape)
            self._input_torch_dtype = getattr(self._torch, t.dtype, None) if self._torch else None
        self._fixed = None
        if self.framework != "jax" and self.autoreset != "same_step":
            obs = self.view("obs") if "obs" in self.tensors else None
            reward = self.view("reward") if "reward" in self.tensors else None
            self._fixed = (obs, reward, self.view("terminated"), self.view("truncated"),
                           {n: self.view(n) for n in self._info_names})

    @property
    def stream(self) -> Any:
        """On CUDA with torch, the stream the engine made for itself, as a
        ``torch.cuda.ExternalStream`` (None on the CPU or without torch). The
        engine queues each step on torch's current stream (moving there once,
        with one event), so any stream costs the same; this one is where it
        works during a CUDA graph capture on another stream, and the one to
        use with ``ORRERY_CUDA_FOLLOW=0`` (``with torch.cuda.stream(env.stream):``
        puts the policy and the engine on one stream: no events per step)."""
        if self._torch is None:
            return None
        if self._external is None:
            self._external = self._torch.cuda.ExternalStream(self._sim.cuda_stream, device=self.device)
        return self._external

    def _stream(self) -> Optional[int]:
        """torch's current CUstream on this env's device (None on the CPU or without torch)."""
        return None if self._current_stream is None else self._current_stream(self._device_index)

    def _action_name(self) -> str:
        if self._input is not None:
            return self._input
        names = self.inputs
        if "action" in names:
            return "action"
        if len(names) == 1:
            return names[0]
        raise ValueError(f"env {self.name!r} has inputs {names}; pass step() a dict of them")

    def _live(self) -> "_core.Simulator":
        if self._closed:
            raise ValueError(f"this {self.name!r} env is closed; make a new one with orrery.make()")
        return self._sim

    # ----- what the env declares ---------------------------------------------

    @property
    def reward_mode(self) -> str:
        """"team" (each agent's reward row holds the one team reward) or "per_agent"."""
        return meta_of(self.name, self.options).reward

    @property
    def action_meanings(self) -> Optional[Tuple[str, ...]]:
        """Name of each action value from the range's low end (None when the env names none)."""
        return meta_of(self.name, self.options).action_meanings

    @property
    def obs_names(self) -> Optional[Tuple[str, ...]]:
        """Name of each entry along the first per-agent axis of "obs": the channels
        of a [C, H, W] grid, or a vector's entries (None when the env names none)."""
        names = meta_of(self.name, self.options).obs_names
        return None if names is None else names(dict(self.options), self.num_agents)

    @property
    def single_observation_space(self) -> Any:
        """One world's observation space (gymnasium Box; needs gymnasium)."""
        from orrery import spaces
        return spaces.world_observation_space(self)

    @property
    def single_action_space(self) -> Any:
        """One world's action space (MultiDiscrete over agents, Discrete or Box)."""
        from orrery import spaces
        return spaces.world_action_space(self)

    @property
    def agent_observation_space(self) -> Any:
        """One agent's observation space."""
        from orrery import spaces
        return spaces.agent_observation_space(self)

    @property
    def agent_action_space(self) -> Any:
        """One agent's action space (Discrete for a ranged integer action)."""
        from orrery import spaces
        return spaces.agent_action_space(self)

    @property
    def observation_space(self) -> Any:
        """The whole batch's observation space, [num_worlds, ...]."""
        from gymnasium.vector.utils import batch_space
        return batch_space(self.single_observation_space, self.num_worlds)

    @property
    def action_space(self) -> Any:
        """The whole batch's action space, [num_worlds, ...]."""
        from gymnasium.vector.utils import batch_space
        return batch_space(self.single_action_space, self.num_worlds)

    def sample_actions(self, seed: Optional[int] = None) -> Any:
        """Uniformly random valid actions for every world, on this env's device and
        in its framework (NumPy on the CPU, torch on CUDA): a random policy."""
        name = self._action_name()
        t = self.tensors[name]
        dtype = np.dtype(t.dtype)
        if dtype.kind not in "iu":
            raise ValueError(f"sample_actions() needs an integer action; {name!r} has dtype {dtype}")
        lo, hi = self.input_ranges.get(name) or (np.iinfo(dtype).min, np.iinfo(dtype).max)
        rng = np.random.default_rng(seed)
        host = rng.integers(lo, hi, size=tuple(t.shape), endpoint=True).astype(dtype)
        if self.device == "cpu":
            return host
        if self.framework == "jax":
            import jax
            return jax.device_put(host, jax.devices("gpu")[int(self.device.split(":")[1])])
        import torch
        return torch.from_numpy(host).to(self.device)

    # ----- stepping --------------------------------------------------------

    def reset(self, seed: Any = None) -> Tuple[Any, Dict[str, Any]]:
        """Starts episode 0 in every world; returns (obs, info).

        seed: an int; or Gymnasium's list of per-world seeds (see batch_seed());
        None continues the seed sequence of make(seed=...)."""
        sim = self._live()
        seed = batch_seed(seed, self.num_worlds)
        if seed is None:
            seed, self._next_seed = self._next_seed, None
            if seed is None:
                seed = int(self._seeds.integers(0, 2**63 - 1))
        else:
            self._seeds = np.random.default_rng(seed)
        sim.reset(seed, self._stream())
        self.seed = seed
        return self.view("obs") if "obs" in self.tensors else None, self._info()

    def reset_worlds(self, mask: Any) -> Tuple[Any, Dict[str, Any]]:
        """Starts the next episode in the worlds where ``mask`` (shape [num_worlds]) is true."""
        sim = self._live()
        host = _host_array(mask)
        if host.shape != (self.num_worlds,):
            raise ValueError(f"reset mask has shape {host.shape}; expected ({self.num_worlds},)")
        if host.dtype.kind not in "biu":
            raise TypeError(f"reset mask has dtype {host.dtype}; expected bool or an integer dtype")
        host = np.ascontiguousarray(host != 0, dtype=np.uint8)
        sim.reset_worlds(host, self._stream())
        return self.view("obs") if "obs" in self.tensors else None, self._info()

    def step(self, actions: Any = None) -> Tuple[Any, Any, Any, Any, Dict[str, Any]]:
        """Advances every world one step; returns (obs, reward, terminated, truncated, info).

        actions: an array of the action tensor's shape (NumPy, torch, JAX or any
        DLPack producer on this env's device), a dict of input name -> array,
        or None to use what was written into ``env.actions`` in place. Bad
        actions raise ValueError/TypeError before any state changes (on the
        GPU, out-of-range values are recorded per world instead: errors()).
        On the GPU the step follows the work queued on torch's current stream
        and precedes what is queued there next, never waiting on the host, so
        it can be captured in a CUDA graph. A contiguous torch tensor of the
        action's dtype on this device is read in place by the step, not copied
        (the action tensor holds its values afterwards): writes to it queued on
        torch's current stream after step() returns come after the step's read
        and do not affect it, but a write from another stream not ordered after
        this one (or from the host, through a pointer) may race with the read.

        The action tensor is part of each world's state: a world that is reset
        (by auto-reset, ``reset()`` or ``reset_worlds()``) starts its new episode
        with its actions zeroed, like every other component. Actions written
        once in place therefore read 0 in that world afterwards; write them
        before every step (or pass ``actions``) to keep them.
        """
        sim = self._live()
        if actions is None:
            sim.step(self._stream())
        elif not self._step_fast(sim, actions):
            if isinstance(actions, Mapping):
                for name in actions:
                    if name not in self.inputs:
                        raise ValueError(f"step() got input {name!r}; this env's inputs are {self.inputs}")
                for name, value in actions.items():
                    write_input(self, name, value)
            else:
                write_input(self, self._action_name(), actions)
            sim.step(self._stream())
        return self._outputs()

    def _step_fast(self, sim: "_core.Simulator", actions: Any) -> bool:
        """Steps with the common forms of actions at the cost of a few attribute
        reads, or returns False (nothing written) for write_input's full path.
        CPU: a NumPy array of the action's shape and dtype, C order; the binding
        checks every value's range before copying. CUDA: a contiguous torch
        tensor of the action's shape and dtype on this device, which the step
        reads in place (no copy), ordered after torch's current stream."""
        if self._input is None or actions.__class__ is dict:
            return False
        if self._cpu:
            if type(actions).__module__.startswith("jax"):
                actions = _host_jax(actions)
            return (type(actions) is np.ndarray and actions.shape == self._input_shape
                    and sim.step_host(self._input, actions))
        if self.framework == "jax" and type(actions).__module__.startswith("jax"):
            return self._step_jax(actions)
        torch = self._torch
        if (torch is None or type(actions) is not torch.Tensor or actions.dtype is not self._input_torch_dtype
                or actions.shape != self._input_shape or actions.get_device() != self._device_index
                or not actions.is_contiguous()):
            return False
        sim.step_reading(self._current_stream(self._device_index), self._input, actions.data_ptr())
        return True

    def _step_jax(self, actions: Any) -> bool:
        """CUDA, framework="jax": a JAX array of the action's shape and dtype on
        this device is read in place by the step, which XLA queues on its own
        stream (orrery.jax.InPlaceStep: no copy, no torch); anything else
        (another dtype, another device) takes write_input's full path."""
        step = self._views.get("_jax_in_place")
        if step is None:
            from orrery.jax import InPlaceStep

            try:
                step = InPlaceStep(self)
            except ValueError:  # this jax has no CUDA backend (or no FFI): the full path says why
                step = False
            self._views["_jax_in_place"] = step
        if not step or not step.accepts(actions):
            return False
        step(actions)
        return True

    def _outputs(self) -> Tuple[Any, Any, Any, Any, Dict[str, Any]]:
        if self._fixed is not None:
            obs, reward, term, trunc, info = self._fixed
            return obs, reward, term, trunc, dict(info)
        obs = self.view("obs") if "obs" in self.tensors else None
        term, trunc = self.view("terminated"), self.view("truncated")
        if self.autoreset != "same_step":
            reward = self.view("reward") if "reward" in self.tensors else None
            return obs, reward, term, trunc, self._info()
        # Same-step mode resets finished worlds inside the step: obs is the new
        # episode's first, every other output describes the step just taken.
        done = np.from_dlpack(term) | np.from_dlpack(trunc) if self.framework == "dlpack" else term | trunc
        merged = {n: self._final_where(done, n) for n in self.outputs if n != "obs"}
        reward = merged.pop("reward", None)
        merged["final_obs"] = self.view("final_obs")
        return obs, reward, term, trunc, merged

    def _final_where(self, done: Any, name: str) -> Any:
        """final_<name> where the world just ended, else <name> (a new array)."""
        final, now = self.view("final_" + name), self.view(name)
        done = done.reshape(tuple(done.shape) + (1,) * (len(now.shape) - 1))
        if self.framework == "torch":
            import torch
            return torch.where(done, final, now)
        if self.framework == "jax":
            import jax.numpy as jnp
            return jnp.where(done, final, now)
        if self.framework == "dlpack":
            return np.where(done, np.from_dlpack(final), np.from_dlpack(now))
        return np.where(done, final, now)

    def _info(self) -> Dict[str, Any]:
        """Every other output of the env by name."""
        return {n: self.view(n) for n in self._info_names}

    def synchronize(self) -> None:
        """Waits for queued device work (no-op on the CPU)."""
        self._live().synchronize()

    def errors(self) -> np.ndarray:
        """Per-world error codes of the last step (0: none; 1 capacity overflow,
        2 stale entity, 3 bad action, >= 256 env-specific). Synchronises."""
        return self._live().errors()

    def check_errors(self) -> None:
        """Raises ValueError describing the worlds that recorded an error in the last step."""
        self._live().check_errors()

    # ----- world state -----------------------------------------------------

    def _world(self, world: Any, what: str = "world") -> int:
        try:
            w = operator.index(world)
        except TypeError:
            raise TypeError(f"{what}={world!r} has type {type(world).__name__}; expected an int") from None
        if isinstance(world, (bool, np.bool_)):
            raise TypeError(f"{what}={world!r} is a bool; expected an int")
        if not 0 <= w < self.num_worlds:
            raise ValueError(f"{what}={w} is out of range; expected 0 <= {what} < {self.num_worlds}")
        return w

    def get_state(self, world: int) -> Dict[str, Any]:
        """The env's JSON state of one world, as a dict (for example overcooked_ai's state dict)."""
        return json.loads(self._live().get_state_json(self._world(world)))

    def set_state(self, world: int, state: Any) -> None:
        """Replaces one world's state from get_state()'s form (dict or JSON text); on error it is untouched."""
        if isinstance(state, (bytes, bytearray)):
            try:
                state = bytes(state).decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"state: not UTF-8 text (byte {bytes(state)[e.start:e.start + 1]!r} at offset "
                                 f"{e.start}); expected JSON text") from None
        if not isinstance(state, str):
            if not isinstance(state, Mapping):
                raise TypeError(f"state has type {type(state).__name__}; expected a dict or JSON text")
            state = json.dumps(state)
        self._live().set_state_json(self._world(world), state)

    def state_hash(self, world: int) -> int:
        """64-bit hash of one world's whole state (equal states, equal hashes)."""
        return self._live().state_hash(self._world(world))

    def save_world(self, world: int) -> bytes:
        """A byte snapshot of one world, for restore_world()."""
        return self._live().save_world(self._world(world))

    def restore_world(self, world: int, snapshot: bytes) -> None:
        """Restores a save_world() snapshot into slot ``world``; it continues bit-exactly."""
        if not isinstance(snapshot, (bytes, bytearray)):
            raise TypeError(f"snapshot has type {type(snapshot).__name__}; expected bytes from save_world()")
        self._live().restore_world(self._world(world), bytes(snapshot))

    def copy_world(self, src: int, dst: int) -> None:
        """Copies world ``src`` over world ``dst``."""
        self._live().copy_world(self._world(src, "src"), self._world(dst, "dst"))

    def save_checkpoint(self, path: "os.PathLike[str] | str") -> None:
        """Writes every world to ``path`` (atomically)."""
        self._live().save_checkpoint(os.fspath(path))

    def load_checkpoint(self, path: "os.PathLike[str] | str") -> None:
        """Loads a checkpoint of the same env, options and world count; a bad file raises ValueError."""
        self._live().load_checkpoint(os.fspath(path))

    def memory_report(self) -> Dict[str, Any]:
        """Bytes per archetype from the declared capacities, the step-scratch pool
        (``scratch_slots`` slots of ``scratch_slot_bytes``: one per CPU thread or
        resident GPU team, not per world) and the total."""
        return self._live().memory_report()

    # ----- rendering ---------------------------------------------------------

    def render(self, world: Union[int, Sequence[int]] = 0, width: int = 512, height: int = 512) -> Any:
        """With render_mode="rgb_array": world ``world``'s frame as [height, width, 3]
        uint8, or for a list of world ids a batch [len, height, width, 3]. Drawn by
        render/'s offscreen Vulkan renderer (the one `orrery record` uses); copies
        only those worlds to the host. With render_mode="human": opens the viewer
        (`orrery view`) on this env's name, options and seed, and returns None."""
        sim = self._live()
        if self.render_mode is None:
            raise ValueError(f"render() needs render_mode; make the env with render_mode in {RENDER_MODES}")
        if self.render_mode == "human":
            return self._open_viewer()
        width = _check_int("width", width, 1, 16384)
        height = _check_int("height", height, 1, 16384)
        if not hasattr(sim, "render"):
            raise RuntimeError("this build of Orrery has no renderer (render/ needs libvulkan-dev, glslang-tools "
                               "and libstb-dev at build time); rebuild with them installed")
        many = not isinstance(world, (int, np.integer))
        worlds = [self._world(w) for w in world] if many else [self._world(world)]
        frames = np.empty((len(worlds), height, width, 3), dtype=np.uint8)
        for k, w in enumerate(worlds):
            rgba = np.frombuffer(sim.render(w, width, height), dtype=np.uint8)
            frames[k] = rgba.reshape(height, width, 4)[:, :, :3]
        return frames if many else frames[0]

    def _open_viewer(self) -> None:
        if self._viewer is not None and self._viewer.poll() is None:
            return None  # already open
        from orrery.cli import native_tool
        argv = [native_tool("orrery-view"), self.name, "--worlds", str(self.num_worlds),
                "--seed", str(self.seed), "--device", self.device]
        for key, value in self.options.items():
            argv += ["--opt", f"{key}={value}"]
        if self.obs_names:
            argv += ["--obs-names", ",".join(self.obs_names)]
        if self.action_meanings:
            argv += ["--action-names", ",".join(self.action_meanings)]
        self._viewer = subprocess.Popen(argv)
        return None

    # ----- lifetime ----------------------------------------------------------

    def close(self) -> None:
        """Releases the simulator (and closes a viewer render() opened). Views
        already taken stay valid until dropped."""
        if self._viewer is not None and self._viewer.poll() is None:
            self._viewer.terminate()
        if not self._closed:
            self._closed = True
            self._fixed = None
            self._views.clear()
            self._host.clear()
            self._sim.close()

    def __enter__(self) -> "Env":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.backend
        return (f"orrery.Env({self.name!r}, num_worlds={self.num_worlds}, device={self.device!r}, "
                f"autoreset={self.autoreset!r}, framework={self.framework!r}, {state})")


def _simulator(name: str, options: Dict[str, str], num_worlds: int, device: str, autoreset: str,
               threads: int) -> "_core.Simulator":
    """The native simulator. device="auto" tries CUDA, then the CPU; the fallback
    is said once per process through ``warnings`` (CpuFallbackWarning), so
    Python can filter it, instead of on the C++ side's stderr."""
    if device != "auto":
        return _core.Simulator(name, options, num_worlds, device, autoreset, threads)
    try:
        return _core.Simulator(name, options, num_worlds, "cuda", autoreset, threads)
    except ValueError as e:
        why = str(e)
        sim = _core.Simulator(name, options, num_worlds, "cpu", autoreset, threads)  # a bad option raises here
    global _fallback_warned
    if not _fallback_warned:
        _fallback_warned = True
        warnings.warn(f"orrery: device='auto' runs on the CPU: {why}", CpuFallbackWarning, stacklevel=4)
    return sim


def _host_array(value: Any) -> np.ndarray:
    """A NumPy array of ``value`` (copied to the host if it lives on a device)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch
        return value.detach().cpu().numpy()
    return np.asarray(value)
