"""A Stable-Baselines3 VecEnv over an Orrery batch: one SB3 env per world.

Worlds reset inside the step (same-step autoreset), as SB3 expects: the
observation returned for a world that just ended is its next episode's first,
and infos[i]["terminal_observation"] holds the last one; infos[i]
["TimeLimit.truncated"] is True when the episode was cut by the time limit, so
SB3 bootstraps from the terminal observation. The reward is the env's declared
team reward (orrery.gymnasium.team_reward). Needs stable-baselines3
(pip install 'orrery-rl[sb3]').
"""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Sequence

from orrery._extras import require

require("stable_baselines3", "orrery.sb3")

import numpy as np  # noqa: E402
from stable_baselines3.common.vec_env.base_vec_env import VecEnv  # noqa: E402

import orrery  # noqa: E402
from orrery.gymnasium import _one_reward_per_world, team_reward  # noqa: E402

__all__ = ["OrrerySB3VecEnv"]


class OrrerySB3VecEnv(VecEnv):
    """``num_envs`` worlds of env ``name`` as an SB3 VecEnv (NumPy, CPU or a copy from the GPU)."""

    def __init__(self, name: str, num_envs: int = 1, device: str = "cpu", seed: Optional[int] = None,
                 threads: int = 0, render_mode: Optional[str] = None, **env_kwargs: Any):
        self.env = orrery.make(name, num_worlds=num_envs, device=device, seed=seed, autoreset="same_step",
                               threads=threads, render_mode=render_mode, **env_kwargs)
        _one_reward_per_world(self.env)
        self.render_mode = render_mode  # read by VecEnv.__init__
        super().__init__(num_envs, self.env.single_observation_space, self.env.single_action_space)
        self._seed: Optional[int] = seed
        self._actions: Any = None

    @staticmethod
    def _host(value: Any) -> np.ndarray:
        return value if isinstance(value, np.ndarray) else value.detach().cpu().numpy()

    def reset(self) -> np.ndarray:
        obs, _ = self.env.reset(seed=self._seed)
        self._seed = None
        return self._host(obs).copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.env.tensors[self.env._action_name()].shape)

    def step_wait(self):
        obs, reward, term, trunc, info = self.env.step(self._actions)
        term, trunc = self._host(term), self._host(trunc)
        done = term | trunc
        infos: List[dict] = [{} for _ in range(self.num_envs)]
        if done.any():
            final = self._host(info["final_obs"])
            for w in np.flatnonzero(done):
                infos[w]["terminal_observation"] = final[w].copy()
                infos[w]["TimeLimit.truncated"] = bool(trunc[w] and not term[w])
        rew = team_reward(self.env, self._host(reward)).astype(np.float32)
        return self._host(obs).copy(), rew, done.copy(), infos

    def seed(self, seed: Optional[int] = None) -> Sequence[Optional[int]]:
        """The next reset() uses ``seed`` (each world's stream is also keyed by its index)."""
        self._seed = seed
        return [seed] * self.num_envs

    def render(self, mode: Optional[str] = None) -> Optional[np.ndarray]:
        return self.env.render(list(range(self.num_envs)))

    def get_images(self) -> Sequence[Optional[np.ndarray]]:
        return list(self.env.render(list(range(self.num_envs))))

    def close(self) -> None:
        self.env.close()

    def _indices(self, indices: Any) -> Iterable[int]:
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else indices

    def get_attr(self, attr_name: str, indices: Any = None) -> List[Any]:
        return [getattr(self, attr_name) for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> List[Any]:
        raise AttributeError(f"OrrerySB3VecEnv has no per-world env objects to call {method_name!r} on")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> List[bool]:
        return [False for _ in self._indices(indices)]
