"""A TorchRL EnvBase over an Orrery batch: batch_size [num_worlds], tensors on
the env's device (zero-copy views of the simulator's outputs, cloned into each
returned TensorDict).

TorchRL resets finished worlds itself (the collector passes a "_reset" mask),
so the simulator runs with autoreset "disabled" and "_reset" becomes
Env.reset_worlds(mask). The reward is the env's declared team reward,
[num_worlds, 1]; an env with per-agent rewards is refused, as in
orrery.gymnasium. Needs torchrl (pip install 'orrery-rl[torchrl]').
"""

from __future__ import annotations

from typing import Any, Optional

from orrery._extras import require

require("torchrl", "orrery.torchrl")

import torch  # noqa: E402
from tensordict import TensorDict, TensorDictBase  # noqa: E402
from torchrl.data import Bounded, Categorical, Composite, MultiCategorical, Unbounded  # noqa: E402
from torchrl.envs import EnvBase  # noqa: E402

import orrery  # noqa: E402
from orrery.gymnasium import _one_reward_per_world  # noqa: E402

__all__ = ["OrreryTorchRLEnv"]


class OrreryTorchRLEnv(EnvBase):
    """``num_worlds`` worlds of env ``name`` as a batched TorchRL env: keys
    "observation", "action", "reward", "done", "terminated", "truncated"."""

    def __init__(self, name: str, num_worlds: int = 1, device: str = "cpu", seed: Optional[int] = None,
                 threads: int = 0, **env_kwargs: Any):
        self.env = orrery.make(name, num_worlds=num_worlds, device=device, seed=seed, autoreset="disabled",
                               threads=threads, framework="torch", **env_kwargs)
        _one_reward_per_world(self.env)
        super().__init__(device=torch.device(self.env.device), batch_size=torch.Size([num_worlds]))
        self._make_specs()

    def _make_specs(self) -> None:
        n, dev = self.env.num_worlds, self.device
        obs = self.env.tensors["obs"]
        obs_dtype = torch.from_dlpack(obs).dtype
        shape = torch.Size(obs.shape)
        if obs_dtype.is_floating_point:
            obs_spec = Unbounded(shape=shape, dtype=obs_dtype, device=dev)
        else:
            info = torch.iinfo(obs_dtype)
            obs_spec = Bounded(low=info.min, high=info.max, shape=shape, dtype=obs_dtype, device=dev)
        self.observation_spec = Composite(observation=obs_spec, shape=self.batch_size)
        name = self.env._action_name()
        act_shape = torch.Size(self.env.tensors[name].shape)
        lo, hi = self.env.action_range
        if lo != 0:
            raise ValueError(f"env {self.env.name!r}'s actions start at {lo}; TorchRL's categorical specs "
                             "expected a range starting at 0")
        if len(act_shape) == 1:
            self.action_spec = Categorical(n=hi + 1, shape=act_shape, dtype=torch.int64, device=dev)
        else:
            nvec = torch.full(act_shape, hi + 1, dtype=torch.int64)
            self.action_spec = MultiCategorical(nvec=nvec, shape=act_shape, dtype=torch.int64, device=dev)
        self.reward_spec = Unbounded(shape=torch.Size([n, 1]), dtype=torch.float32, device=dev)
        flag = lambda: Categorical(n=2, shape=torch.Size([n, 1]), dtype=torch.bool, device=dev)  # noqa: E731
        self.done_spec = Composite(done=flag(), terminated=flag(), truncated=flag(), shape=self.batch_size)

    def _flags(self) -> TensorDict:
        term = self.env.view("terminated").clone().unsqueeze(-1)
        trunc = self.env.view("truncated").clone().unsqueeze(-1)
        return term, trunc, term | trunc

    def _reset(self, tensordict: Optional[TensorDictBase] = None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if mask is None:
            self.env.reset(seed=self._next_seed)
            self._next_seed = None
        else:
            self.env.reset_worlds(mask.reshape(-1).cpu().numpy())
        term, trunc, done = self._flags()
        return TensorDict({"observation": self.env.view("obs").clone(), "terminated": term, "truncated": trunc,
                           "done": done}, batch_size=self.batch_size, device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get("action")
        if action.dtype != torch.int64 and not action.dtype.is_floating_point:
            action = action.long()
        _, reward, term, trunc, _ = self.env.step(action.to(torch.int64))
        reward = reward.reshape(self.env.num_worlds, -1)[:, :1].clone()  # the team reward, once
        term, trunc, done = self._flags()
        return TensorDict({"observation": self.env.view("obs").clone(), "reward": reward, "terminated": term,
                           "truncated": trunc, "done": done}, batch_size=self.batch_size, device=self.device)

    _next_seed: Optional[int] = None

    def _set_seed(self, seed: Optional[int]) -> Optional[int]:
        """The next full reset uses ``seed`` (each world's stream is also keyed by its index)."""
        self._next_seed = seed
        return seed

    def close(self, *, raise_if_closed: bool = True) -> None:
        self.env.close()
        super().close()
