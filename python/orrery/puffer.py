"""Agents as rows, the way PufferLib batches multi-agent envs: every agent of
every world is one sub-env of a Gymnasium VectorEnv, so a single-agent
trainer (PufferLib, CleanRL, SB3) trains one shared policy on all of them.

Row r is agent r % A of world r // A. Each row's reward is that agent's own
reward as the env declares it (tag: +1 to the pursuer, -1 to the evader it
tags; Overcooked: the team reward, on both chefs' rows). A world's end ends all
of its rows. Worlds reset themselves (next-step autoreset).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Union

from orrery._extras import require

require("gymnasium", "orrery.puffer")

import numpy as np  # noqa: E402
from gymnasium.vector import AutoresetMode, VectorEnv  # noqa: E402
from gymnasium.vector.utils import batch_space  # noqa: E402

import orrery  # noqa: E402
from orrery.env import batch_seed  # noqa: E402

__all__ = ["OrreryAgentsVectorEnv"]


class OrreryAgentsVectorEnv(VectorEnv):
    """``num_worlds`` worlds of env ``name`` as ``num_worlds * agents`` sub-envs,
    one per agent: obs [rows, ...], actions [rows], rewards and flags [rows]."""

    def __init__(self, name: str, num_worlds: int = 1, device: str = "cpu", seed: Optional[int] = None,
                 threads: int = 0, copy: bool = True, render_mode: Optional[str] = None,
                 autoreset_mode: Any = AutoresetMode.NEXT_STEP, **env_kwargs: Any):
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, "next_step"):
            raise ValueError(f"autoreset_mode={autoreset_mode!r} is not offered here; expected 'next_step'")
        self.env = orrery.make(name, num_worlds=num_worlds, device=device, seed=seed, threads=threads,
                               autoreset="next_step", render_mode=render_mode, **env_kwargs)
        self.num_worlds, self.num_agents = num_worlds, self.env.num_agents
        self.num_envs = num_worlds * self.num_agents
        self.copy = copy
        self.render_mode = render_mode
        self.metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": list(orrery.RENDER_MODES)}
        self.single_observation_space = self.env.agent_observation_space
        self.single_action_space = self.env.agent_action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def _rows(self, value: Any, copy: bool) -> np.ndarray:
        arr = value if isinstance(value, np.ndarray) else value.detach().cpu().numpy()
        arr = arr.reshape((self.num_envs,) + arr.shape[2:]) if arr.ndim >= 2 else np.repeat(arr, self.num_agents)
        return arr.copy() if copy else arr

    def _info(self, info: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for key, value in info.items():
            arr = value if isinstance(value, np.ndarray) else value.detach().cpu().numpy()
            per_agent = arr.ndim >= 2 and arr.shape[1] == self.num_agents
            out[key] = self._rows(arr, True) if per_agent or arr.ndim == 1 else np.repeat(arr, self.num_agents, 0)
            out["_" + key] = np.ones(self.num_envs, dtype=np.bool_)
        return out

    def reset(self, *, seed: Union[int, Sequence[Optional[int]], None] = None,
              options: Optional[Dict[str, Any]] = None):
        """Resets every world; seed is one int, or one per row (see orrery.env.batch_seed)."""
        if options:
            raise ValueError(f"reset options {sorted(options)} are not understood; expected none")
        obs, info = self.env.reset(seed=batch_seed(seed, self.num_envs))
        return self._rows(obs, self.copy), self._info(info)

    def step(self, actions: Any):
        actions = np.asarray(actions)
        if actions.shape[:1] != (self.num_envs,):
            raise ValueError(f"actions has shape {actions.shape}; expected ({self.num_envs},) "
                             f"(one per agent row: {self.num_worlds} worlds x {self.num_agents} agents)")
        obs, reward, term, trunc, info = self.env.step(actions.reshape((self.num_worlds, self.num_agents)
                                                                       + actions.shape[1:]))
        return (self._rows(obs, self.copy), self._rows(reward, True).astype(np.float64),
                self._rows(term, True), self._rows(trunc, True), self._info(info))

    def render(self) -> Optional[np.ndarray]:
        """render_mode="rgb_array": every world's frame, [num_worlds, H, W, 3] uint8."""
        if self.render_mode == "human":
            return self.env.render()
        return self.env.render(list(range(self.num_worlds)))

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()
