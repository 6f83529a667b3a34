"""Gymnasium 1.x adapters: OrreryVectorEnv (the whole batch, every autoreset
mode) and OrreryEnv (one world, for code and checkers that want a gym.Env).

A multi-agent Orrery env is seen as one Gymnasium env per world: the agent
axis is part of the observation and action spaces. The reward is what the env
declares (orrery.meta): a team env's team reward, once (Overcooked: 20 per
soup, as overcooked_ai); each agent's row is in info["reward_by_agent"]. An env
whose agents have rewards of their own (tag) has no one reward per world: use
orrery.puffer's agents-as-rows vector env (what ``gymnasium.make_vec`` gives
for it) or the PettingZoo adapters.

Importing orrery registers ``orrery/<env>-v0`` for every env (register_envs()),
so ``gymnasium.make`` and ``gymnasium.make_vec`` work.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Union

from orrery._extras import require

gym = require("gymnasium", "orrery.gymnasium")

import numpy as np  # noqa: E402
from gymnasium.vector import AutoresetMode, VectorEnv  # noqa: E402
from gymnasium.vector.utils import batch_space  # noqa: E402

import orrery  # noqa: E402
from orrery import spaces as _spaces  # noqa: E402
from orrery.env import Env, batch_seed  # noqa: E402
from orrery.meta import meta_of  # noqa: E402

__all__ = ["OrreryVectorEnv", "OrreryEnv", "make_vec", "observation_space", "action_space", "register_envs",
           "team_reward"]

_MODES = {
    AutoresetMode.NEXT_STEP: "next_step",
    AutoresetMode.SAME_STEP: "same_step",
    AutoresetMode.DISABLED: "disabled",
}


observation_space = _spaces.world_observation_space
action_space = _spaces.world_action_space


def _one_reward_per_world(env: Env) -> None:
    """Raises ValueError for an env whose agents' rewards cannot be one number per world."""
    if env.reward_mode == "per_agent" and env.num_agents > 1:
        env.close()
        raise ValueError(f"env {env.name!r} rewards each of its {env.num_agents} agents separately "
                         "(reward_mode='per_agent'), so one Gymnasium reward per world would mix them; "
                         "use orrery.puffer.OrreryAgentsVectorEnv (one row per agent; "
                         f"gymnasium.make_vec('orrery/{env.name}-v0') gives it) or orrery.pettingzoo")


def team_reward(env: Env, reward: np.ndarray) -> np.ndarray:
    """The one reward per world of ``reward`` ([worlds] or [worlds, agents]), as the env declares it."""
    reward = np.asarray(reward)
    if reward.ndim == 1:
        return reward
    # Team: every row holds the team's reward. Per agent: there is one agent
    # (_one_reward_per_world refused more at construction). Row 0 either way.
    return reward.reshape(reward.shape[0], -1)[:, 0]


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
                 render_mode: Optional[str] = None, **env_kwargs: Any):
        self.autoreset_mode = _mode(autoreset_mode)
        self.env = orrery.make(name, num_worlds=num_envs, device=device, seed=seed,
                               autoreset=_MODES[self.autoreset_mode], threads=threads, render_mode=render_mode,
                               **env_kwargs)
        _one_reward_per_world(self.env)
        self.metadata = {"autoreset_mode": self.autoreset_mode, "render_modes": list(orrery.RENDER_MODES)}
        self.num_envs = num_envs
        self.copy = copy
        self.single_observation_space = observation_space(self.env)
        self.single_action_space = action_space(self.env)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = render_mode
        self._agent_axis = len(self.env.tensors["reward"].shape) > 1

    def reset(self, *, seed: Union[int, Sequence[Optional[int]], None] = None,
              options: Optional[Dict[str, Any]] = None):
        """Resets every world (seed: one int, each world's RNG is keyed by its index
        too, or a list of one seed per world, see orrery.env.batch_seed), or with
        options={"reset_mask": mask} only the masked worlds."""
        seed = batch_seed(seed, self.num_envs)
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
            reward_h = team_reward(self.env, reward_h)
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

    def render(self) -> Optional[np.ndarray]:
        """render_mode="rgb_array": every world's frame, [num_envs, H, W, 3] uint8;
        "human": opens the viewer."""
        if self.render_mode == "human":
            return self.env.render()
        return self.env.render(list(range(self.num_envs)))

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()


class OrreryEnv(gym.Env):
    """One world of an Orrery env as a gymnasium.Env (no autoreset: call reset()
    after an episode ends). Meant for tools and checkers; train on OrreryVectorEnv."""

    metadata = {"render_modes": list(orrery.RENDER_MODES), "render_fps": 10}

    def __init__(self, name: str, threads: int = 1, render_mode: Optional[str] = None, **env_kwargs: Any):
        self.env = orrery.make(name, num_worlds=1, device="cpu", autoreset="disabled", threads=threads,
                               framework="numpy", render_mode=render_mode, **env_kwargs)
        _one_reward_per_world(self.env)
        self.render_mode = render_mode
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
        return obs[0].copy(), float(team_reward(self.env, reward)[0]), bool(term[0]), bool(trunc[0]), out

    def render(self) -> Optional[np.ndarray]:
        """render_mode="rgb_array": the world's frame, [H, W, 3] uint8; "human": opens the viewer."""
        return self.env.render()

    @staticmethod
    def _info(info: Dict[str, Any]) -> Dict[str, Any]:
        return {k: np.array(v[0]) for k, v in info.items()}

    def close(self) -> None:
        self.env.close()


def make_vec(name: str, num_envs: int = 1, **kwargs: Any) -> OrreryVectorEnv:
    """Shorthand for OrreryVectorEnv(name, num_envs, ...)."""
    return OrreryVectorEnv(name, num_envs, **kwargs)


def _vector_entry(name: str, num_envs: int = 1, **kwargs: Any) -> VectorEnv:
    """What ``gymnasium.make_vec('orrery/<name>-v0', num_envs)`` builds: one world per
    sub-env, or for an env with per-agent rewards one agent per sub-env."""
    if meta_of(name).reward == "per_agent":
        from orrery.puffer import OrreryAgentsVectorEnv
        probe = orrery.make(name, num_worlds=1, device="cpu", threads=1, **{k: v for k, v in kwargs.items()
                                                                             if k not in _VECTOR_ARGS})
        agents = probe.num_agents
        probe.close()
        if agents > 1:
            if num_envs % agents:
                raise ValueError(f"num_envs={num_envs} is not a multiple of {name!r}'s {agents} agents; "
                                 "each sub-env is one agent, so expected a multiple of that")
            return OrreryAgentsVectorEnv(name, num_worlds=num_envs // agents, **kwargs)
    return OrreryVectorEnv(name, num_envs, **kwargs)


_VECTOR_ARGS = ("autoreset_mode", "device", "seed", "threads", "copy", "render_mode")


def register_envs() -> None:
    """Registers ``orrery/<env>-v0`` with Gymnasium for every env (make and make_vec)."""
    for name in orrery.list_envs():
        env_id = f"orrery/{name}-v0"
        if env_id in gym.registry:
            continue
        gym.register(id=env_id, entry_point="orrery.gymnasium:OrreryEnv", kwargs={"name": name},
                     vector_entry_point="orrery.gymnasium:_vector_entry", disable_env_checker=True)
