"""PettingZoo adapters: OrreryParallelEnv (one world, the standard
ParallelEnv API) and OrreryBatchedParallelEnv (every world at once: each
agent's values are arrays over worlds, with an agent mask saying which
(world, agent) pairs act in the next step).

Agents are named "agent_0" ... "agent_{A-1}", in the env's row order.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, Optional

import numpy as np

from orrery._extras import require

require("pettingzoo", "orrery.pettingzoo")
from gymnasium import spaces  # noqa: E402
from pettingzoo import ParallelEnv  # noqa: E402

import orrery  # noqa: E402

__all__ = ["OrreryParallelEnv", "OrreryBatchedParallelEnv", "parallel_env", "batched_parallel_env"]


def _agent_spaces(env: orrery.Env):
    """(observation space, action space) of one agent of one world."""
    return env.agent_observation_space, env.agent_action_space


def _agent_axis(env: orrery.Env, name: str) -> bool:
    """Whether tensor ``name`` has an agent axis: a per-world (singleton) export has none."""
    export = env._exports.get(name)
    return export is not None and not export["singleton"] and int(export["capacity"]) == env.num_agents


def _by_agent(env: orrery.Env, name: str, value: Any) -> Any:
    """``value`` as [worlds, agents, ...]: a per-world tensor gets an agent axis of 1
    (a single-agent env), or is shared by every agent."""
    if _agent_axis(env, name):
        return value
    return value[:, None]  # NumPy and torch alike


def _per_agent(value: np.ndarray, num_agents: int) -> bool:
    return value.ndim >= 2 and value.shape[1] == num_agents


class OrreryParallelEnv(ParallelEnv):
    """One world of an Orrery env as a PettingZoo ParallelEnv. When the
    episode ends every agent leaves ``agents``; call reset() to start again."""

    metadata = {"render_modes": list(orrery.RENDER_MODES), "is_parallelizable": True}

    def __init__(self, name: str, threads: int = 1, render_mode: Optional[str] = None, **env_kwargs: Any):
        self.env = orrery.make(name, num_worlds=1, device="cpu", autoreset="disabled", threads=threads,
                               framework="numpy", render_mode=render_mode, **env_kwargs)
        self.metadata = dict(self.metadata, name=f"orrery_{name}")
        self.possible_agents = [f"agent_{i}" for i in range(self.env.num_agents)]
        self.agents: list = []
        self._spaces = _agent_spaces(self.env)
        self._rng = np.random.default_rng()
        self.render_mode = render_mode

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Space:
        return self._spaces[0]

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Space:
        return self._spaces[1]

    def reset(self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        obs, info = self.env.reset(seed=int(self._rng.integers(0, 2**63 - 1)) if seed is None else seed)
        self.agents = list(self.possible_agents)
        return self._obs(obs), self._infos(info)

    def step(self, actions: Dict[str, Any]):
        missing = [a for a in self.agents if a not in actions]
        if missing or any(a not in self.agents for a in actions):
            raise ValueError(f"step() needs one action for each live agent {self.agents}; got {sorted(actions)}")
        name = self.env._action_name()
        batch = np.zeros(self.env.tensors[name].shape, dtype=self.env.tensors[name].dtype)
        rows = _by_agent(self.env, name, batch)  # a view: writes land in batch
        for i, agent in enumerate(self.possible_agents):
            rows[0, i] = np.asarray(actions[agent])
        obs, reward, term, trunc, info = self.env.step(batch)
        rew = _by_agent(self.env, "reward", reward)[0].reshape(len(self.possible_agents), -1)[:, 0]
        out = (self._obs(obs), {a: float(rew[i]) for i, a in enumerate(self.agents)},
               {a: bool(term[0]) for a in self.agents}, {a: bool(trunc[0]) for a in self.agents},
               self._infos(info))
        if term[0] or trunc[0]:
            self.agents = []
        return out

    def _obs(self, obs: np.ndarray) -> Dict[str, np.ndarray]:
        rows = _by_agent(self.env, "obs", obs)
        return {a: rows[0, i].copy() for i, a in enumerate(self.possible_agents)}

    def _infos(self, info: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
        out: Dict[str, Dict[str, Any]] = {a: {} for a in self.possible_agents}
        for key, value in info.items():
            rows = _by_agent(self.env, key, value)
            for i, a in enumerate(self.possible_agents):
                out[a][key] = np.array(rows[0, i] if rows.shape[1] == len(self.possible_agents) else rows[0, 0])
        return out

    def render(self) -> Optional[np.ndarray]:
        """render_mode="rgb_array": the world's frame, [H, W, 3] uint8; "human": opens the viewer."""
        return self.env.render()

    def state(self) -> np.ndarray:
        """The whole world's observation (every agent's rows)."""
        return self.env.obs[0].copy()

    def close(self) -> None:
        self.env.close()


class OrreryBatchedParallelEnv:
    """Every world of an Orrery env with PettingZoo's parallel dict-of-agents
    API, each value an array over worlds: obs[agent] is [num_worlds, ...],
    rewards/terminations/truncations[agent] are [num_worlds].

    Worlds reset themselves (autoreset="next_step" by default). ``agent_mask``
    ([num_worlds, num_agents] bool, also infos[agent]["agent_mask"]) is True
    where the agent's next action takes effect: False in a world whose next
    step is its reset (next-step mode) or that waits for reset_worlds()
    (disabled mode). Values are live views unless copy=True.
    """

    def __init__(self, name: str, num_worlds: int, device: str = "cpu", seed: Optional[int] = None,
                 autoreset: str = "next_step", threads: int = 0, copy: bool = False,
                 render_mode: Optional[str] = None, **env_kwargs: Any):
        if autoreset == "same_step":
            raise ValueError("autoreset='same_step' is not offered by the batched PettingZoo env; "
                             "expected 'next_step' or 'disabled'")
        self.env = orrery.make(name, num_worlds=num_worlds, device=device, seed=seed, autoreset=autoreset,
                               threads=threads, render_mode=render_mode, **env_kwargs)
        self.render_mode = render_mode
        self.num_worlds = num_worlds
        self.copy = copy
        self.possible_agents = [f"agent_{i}" for i in range(self.env.num_agents)]
        self.agents = list(self.possible_agents)
        self._spaces = _agent_spaces(self.env)
        self.metadata = {"name": f"orrery_{name}_batched", "render_modes": list(orrery.RENDER_MODES)}

    def observation_space(self, agent: str) -> spaces.Space:
        return self._spaces[0]

    def action_space(self, agent: str) -> spaces.Space:
        return self._spaces[1]

    @property
    def agent_mask(self) -> Any:
        live = ~(self.env.view("terminated") | self.env.view("truncated"))
        if isinstance(live, np.ndarray):
            return np.repeat(live[:, None], len(self.possible_agents), axis=1)
        return live[:, None].expand(-1, len(self.possible_agents))  # torch

    def reset(self, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        mask = (options or {}).get("reset_mask")
        obs, info = self.env.reset_worlds(mask) if mask is not None else self.env.reset(seed=seed)
        return self._split(obs), self._infos(info)

    def step(self, actions: Dict[str, Any]):
        if sorted(actions) != sorted(self.possible_agents):
            raise ValueError(f"step() needs an action array for each agent {self.possible_agents}; "
                             f"got {sorted(actions)}")
        stacked = self._stack([actions[a] for a in self.possible_agents])
        if not _agent_axis(self.env, self.env._action_name()):
            stacked = stacked[:, 0]  # a single-agent env's action has no agent axis
        obs, reward, term, trunc, info = self.env.step(stacked)
        rew = _by_agent(self.env, "reward", reward)
        return (self._split(obs), {a: self._maybe_copy(rew[:, i]) for i, a in enumerate(self.possible_agents)},
                {a: self._maybe_copy(term) for a in self.possible_agents},
                {a: self._maybe_copy(trunc) for a in self.possible_agents}, self._infos(info))

    def render(self, world: Any = None) -> Any:
        """render_mode="rgb_array": frames of ``world`` (an id or a list; default every
        world), [H, W, 3] or [k, H, W, 3] uint8; "human": opens the viewer."""
        return self.env.render(list(range(self.num_worlds)) if world is None else world)

    def _stack(self, arrays: list) -> Any:
        first = arrays[0]
        if type(first).__module__.startswith("torch"):
            import torch
            return torch.stack(arrays, dim=1)
        return np.stack([np.asarray(a) for a in arrays], axis=1)

    def _maybe_copy(self, value: Any) -> Any:
        if not self.copy:
            return value
        return value.copy() if isinstance(value, np.ndarray) else value.clone()

    def _split(self, obs: Any) -> Dict[str, Any]:
        rows = _by_agent(self.env, "obs", obs)
        return {a: self._maybe_copy(rows[:, i]) for i, a in enumerate(self.possible_agents)}

    def _infos(self, info: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
        mask = self.agent_mask
        out = {a: {"agent_mask": mask[:, i]} for i, a in enumerate(self.possible_agents)}
        for key, value in info.items():
            for i, a in enumerate(self.possible_agents):
                out[a][key] = value[:, i] if _agent_axis(self.env, key) else value
        return out

    def close(self) -> None:
        self.env.close()


def parallel_env(name: str, **kwargs: Any) -> OrreryParallelEnv:
    """One world of env ``name`` as a PettingZoo ParallelEnv."""
    return OrreryParallelEnv(name, **kwargs)


def batched_parallel_env(name: str, num_worlds: int, **kwargs: Any) -> OrreryBatchedParallelEnv:
    """``num_worlds`` worlds of env ``name`` with array-valued PettingZoo dicts."""
    return OrreryBatchedParallelEnv(name, num_worlds, **kwargs)
