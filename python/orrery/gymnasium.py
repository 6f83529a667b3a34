"""Gymnasium 1.x adapters: OrreryVectorEnv (the whole batch, every autoreset
mode) and OrreryEnv (one world, for code and checkers that want a gym.Env).

A multi-agent Orrery env is seen as one Gymnasium env per world: the agent
axis is part of the observation and action spaces, and the reward is the team
reward (the sum over agents); the per-agent rewards are in info["reward_by_agent"].
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

import orrery
from orrery.env import Env

__all__ = ["OrreryVectorEnv", "OrreryEnv", "make_vec", "observation_space", "action_space"]

_MODES = {
    AutoresetMode.NEXT_STEP: "next_step",
    AutoresetMode.SAME_STEP: "same_step",
    AutoresetMode.DISABLED: "disabled",
}


def _bounds(dtype: np.dtype) -> Tuple[Any, Any]:
    if dtype.kind in "iu":
        return np.iinfo(dtype).min, np.iinfo(dtype).max
    if dtype.kind == "b":
        return 0, 1
    return -np.inf, np.inf


def observation_space(env: Env) -> spaces.Box:
    """The space of one world's observation (every agent's rows)."""
    t = env.tensors["obs"]
    dtype = np.dtype(t.dtype)
    lo, hi = _bounds(dtype)
    return spaces.Box(low=lo, high=hi, shape=tuple(t.shape[1:]), dtype=dtype)


def action_space(env: Env) -> spaces.Space:
    """The space of one world's action: Discrete, MultiDiscrete (one per agent) or Box."""
    name = env._action_name()
    t = env.tensors[name]
    shape, dtype = tuple(t.shape[1:]), np.dtype(t.dtype)
    lo_hi = env.input_ranges.get(name)
    if dtype.kind not in "iu":
        return spaces.Box(low=-np.inf, high=np.inf, shape=shape, dtype=dtype)
    lo, hi = lo_hi if lo_hi is not None else _bounds(dtype)
    if not shape:
        return spaces.Discrete(int(hi - lo + 1), start=int(lo))
    return spaces.MultiDiscrete(np.full(shape, hi - lo + 1, dtype=np.int64), start=np.full(shape, lo, dtype=np.int64))


def _mode(autoreset_mode: Any) -> AutoresetMode:
    if isinstance(autoreset_mode, str):
        by_name = {v: k for k, v in _MODES.items()}
        if autoreset_mode in by_name:
            return by_name[autoreset_mode]
        try:
            return AutoresetMode(autoreset_mode)
        except ValueError:
            pass
    if isinstance(autoreset_mode, AutoresetMode):
        return autoreset_mode
    raise ValueError(f"autoreset_mode={autoreset_mode!r} is not understood; expected an AutoresetMode "
                     "or one of 'next_step', 'same_step', 'disabled'")


class OrreryVectorEnv(VectorEnv):
    """``num_envs`` worlds of an Orrery env as a Gymnasium VectorEnv (NumPy arrays).

    autoreset_mode: AutoresetMode.NEXT_STEP, SAME_STEP (info["final_obs"] and
    info["final_info"] for worlds that ended) or DISABLED (reset the finished
    worlds with ``reset(options={"reset_mask": mask})``).
    copy: return copies of the observations (Gymnasium's default); False returns
    the simulator's live arrays, which the next step overwrites.
    """

    def __init__(self, name: str, num_envs: int = 1, autoreset_mode: Any = AutoresetMode.NEXT_STEP,
                 device: str = "cpu", seed: Optional[int] = None, threads: int = 0, copy: bool = True,
                 **env_kwargs: Any):
        self.autoreset_mode = _mode(autoreset_mode)
        self.env = orrery.make(name, num_worlds=num_envs, device=device, seed=seed,
                               autoreset=_MODES[self.autoreset_mode], threads=threads, **env_kwargs)
        self.metadata = {"autoreset_mode": self.autoreset_mode, "render_modes": []}
        self.num_envs = num_envs
        self.copy = copy
        self.single_observation_space = observation_space(self.env)
        self.single_action_space = action_space(self.env)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = None
        self._agent_axis = len(self.env.tensors["reward"].shape) > 1

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        """Resets every world (seed: one int, each world's RNG is keyed by its index
        too), or with options={"reset_mask": mask} only the masked worlds."""
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed={seed!r} is not an int; Orrery seeds the batch with one int "
                            "(each world's random stream is also keyed by its index)")
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"reset options {sorted(options)} are not understood; expected only 'reset_mask'")
        if mask is not None:
            mask = self._check_mask(mask)
            if seed is not None:
                raise ValueError("reset(seed=..., options={'reset_mask': ...}): a masked reset starts the "
                                 "next episode of each masked world and takes no seed")
            obs, info = self.env.reset_worlds(mask)
        else:
            obs, info = self.env.reset(seed=seed)
        return self._host(obs, self.copy), self._vector_info(info)

    def _check_mask(self, mask: Any) -> np.ndarray:
        if not isinstance(mask, np.ndarray):
            raise TypeError(f"options['reset_mask'] must be a numpy array, got {type(mask).__name__}")
        if mask.shape != (self.num_envs,):
            raise ValueError(f"options['reset_mask'] has shape {mask.shape}; expected ({self.num_envs},)")
        if mask.dtype != np.bool_:
            raise TypeError(f"options['reset_mask'] has dtype {mask.dtype}; expected bool")
        return mask

    def step(self, actions: Any):
        obs, reward, term, trunc, info = self.env.step(actions)
        reward_h = self._host(reward, True)
        term_h, trunc_h = self._host(term, True), self._host(trunc, True)
        out = self._vector_info(info)
        if self._agent_axis:
            out["reward_by_agent"] = reward_h
            out["_reward_by_agent"] = np.ones(self.num_envs, dtype=np.bool_)
            reward_h = reward_h.reshape(self.num_envs, -1).sum(axis=1)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            self._add_final(out, info, term_h | trunc_h)
        return self._host(obs, self.copy), reward_h.astype(np.float64), term_h, trunc_h, out

    def _add_final(self, out: Dict[str, Any], info: Dict[str, Any], done: np.ndarray) -> None:
        """Gymnasium's same-step format: final_obs as an object array over worlds,
        final_info as a dict of arrays, each with its "_" mask."""
        if not done.any():
            return
        final_obs = np.full(self.num_envs, None, dtype=object)
        obs = self._host(info["final_obs"], False)
        for w in np.flatnonzero(done):
            final_obs[w] = obs[w].copy()
        final_info: Dict[str, Any] = {}
        for name in self.env.outputs:
            if name != "obs":
                final_info[name] = self._host(self.env.view("final_" + name), True)
                final_info["_" + name] = done.copy()
        out["final_obs"], out["_final_obs"] = final_obs, done.copy()
        out["final_info"], out["_final_info"] = final_info, done.copy()

    def _vector_info(self, info: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name, value in info.items():
            if name.startswith("final_"):
                continue
            out[name] = self._host(value, True)
            out["_" + name] = np.ones(self.num_envs, dtype=np.bool_)
        return out

    @staticmethod
    def _host(value: Any, copy: bool) -> np.ndarray:
        if isinstance(value, np.ndarray):
            return value.copy() if copy else value
        return value.detach().cpu().numpy()  # torch on a GPU: a host copy

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()


class OrreryEnv(gym.Env):
    """One world of an Orrery env as a gymnasium.Env (no autoreset: call reset()
    after an episode ends). Meant for tools and checkers; train on OrreryVectorEnv."""

    metadata = {"render_modes": []}

    def __init__(self, name: str, threads: int = 1, **env_kwargs: Any):
        self.env = orrery.make(name, num_worlds=1, device="cpu", autoreset="disabled", threads=threads,
                               framework="numpy", **env_kwargs)
        self.observation_space = observation_space(self.env)
        self.action_space = action_space(self.env)

    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(0, 2**63 - 1))
        obs, info = self.env.reset(seed=seed)
        return obs[0].copy(), self._info(info)

    def step(self, action: Any):
        action = np.asarray(action).reshape((1,) + tuple(self.env.tensors[self.env._action_name()].shape[1:]))
        obs, reward, term, trunc, info = self.env.step(action)
        out = self._info(info)
        out["reward_by_agent"] = reward[0].copy()
        return obs[0].copy(), float(np.sum(reward[0])), bool(term[0]), bool(trunc[0]), out

    @staticmethod
    def _info(info: Dict[str, Any]) -> Dict[str, Any]:
        return {k: np.array(v[0]) for k, v in info.items()}

    def close(self) -> None:
        self.env.close()


def make_vec(name: str, num_envs: int = 1, **kwargs: Any) -> OrreryVectorEnv:
    """Shorthand for OrreryVectorEnv(name, num_envs, ...)."""
    return OrreryVectorEnv(name, num_envs, **kwargs)
