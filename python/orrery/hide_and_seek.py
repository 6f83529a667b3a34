"""Hide-and-seek's observation as OpenAI's policy sees it: a dict of named
parts with their masks, as zero-copy views of the flat ``obs`` tensor.

The env exports one flat row per agent (the adapters' ``obs``);
``split(env, obs)`` cuts any array of such rows ([..., obs_size], NumPy or
torch) into::

    self     [..., 10]          agents  [..., A - 1, 10]   boxes   [..., 9, 15]
    ramps    [..., 2, 15]       lidar   [..., 30]
    mask_aa  [..., A - 1]       mask_ab [..., 9]           mask_ar [..., 2]

The gpu_hideseek variant (``variant="gpu_hideseek"``) has its own parts, named
as gpu_hideseek's tensors::

    agent_data     [..., 5, 4]   box_data       [..., 9, 7]   ramp_data [..., 2, 5]
    lidar          [..., 30]     visible_agents [..., 5]      visible_boxes [..., 9]
    visible_ramps  [..., 2]      prep_counter   [..., 1]      agent_type [..., 1]

``dict_space(env)`` is one agent's observation as a Gymnasium ``Dict``. The
layout comes from the env's declared entry names (envs/hide_and_seek/README.md).

The adapters with dict observations (the flat row stays the default, for
simple policies):

    vec = hide_and_seek.dict_observations(gymnasium.make_vec("orrery/hide_and_seek-v0", num_envs=8))
    par = hide_and_seek.parallel_env(hiders=2, seekers=2)     # PettingZoo, one world

The env exports one flat column and the parts are views of it, not tensors of
their own (README, Decisions: "One observation column").
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

import numpy as np

__all__ = ["layout", "split", "dict_space", "dict_observations", "parallel_env"]

_PARTS = (("self", "self_"), ("agents", "agent"), ("boxes", "box"), ("ramps", "ramp"), ("lidar", "lidar"),
          ("mask_aa", "sees_agent"), ("mask_ab", "sees_box"), ("mask_ar", "sees_ramp"))
_GPU_PARTS = (("agent_data", "agent"), ("box_data", "box"), ("ramp_data", "ramp"), ("lidar", "lidar"),
              ("visible_agents", "sees_agent"), ("visible_boxes", "sees_box"), ("visible_ramps", "sees_ramp"),
              ("prep_counter", "prep_counter"), ("agent_type", "agent_type"))
_ENTITY_PARTS = {"agents": 10, "boxes": 15, "ramps": 15, "agent_data": 4, "box_data": 7, "ramp_data": 5}


def _gpu(env: Any) -> bool:
    return env.env_info.get("variant") == "gpu_hideseek"


def layout(env: Any) -> Dict[str, Tuple[int, int, Tuple[int, ...]]]:
    """Each part's (start, stop, shape) along the flat row, read from ``env.obs_names``."""
    names = env.obs_names
    if env.name != "hide_and_seek" or not names:
        raise ValueError(f"orrery.hide_and_seek.layout needs a hide_and_seek env; got {env.name!r}")
    out: Dict[str, Tuple[int, int, Tuple[int, ...]]] = {}
    i = 0
    for part, prefix in _GPU_PARTS if _gpu(env) else _PARTS:
        start = i
        entities = set()
        while i < len(names) and names[i].startswith(prefix):
            entities.add(names[i][len(prefix):].split("_")[0])  # "box3_x" -> "3"
            i += 1
        count = i - start
        if part in _ENTITY_PARTS:
            n = len(entities)
            out[part] = (start, i, (n, count // n) if n else (0, _ENTITY_PARTS[part]))
        else:
            out[part] = (start, i, (count,))
    if i != len(names):
        raise ValueError(f"hide_and_seek's obs_names end with {names[i]!r}, which no part claims")
    return out


def split(env: Any, obs: Any) -> Dict[str, Any]:
    """The parts of ``obs`` ([..., obs_size], NumPy or torch), as views (no copy)."""
    out = {}
    for part, (start, stop, shape) in layout(env).items():
        piece = obs[..., start:stop]
        if len(shape) == 2:
            piece = piece.unflatten(-1, shape) if hasattr(piece, "unflatten") else piece.reshape(
                piece.shape[:-1] + shape)
        out[part] = piece
    return out


def dict_space(env: Any) -> Any:
    """One agent's observation as a gymnasium.spaces.Dict of Boxes (masks in [0, 1], lidar in [0, 6];
    gpu_hideseek: lidar in [0, 200], the preparation counter in [0, prep_steps], the type 0 or 1)."""
    from gymnasium import spaces

    masks = ("mask_aa", "mask_ab", "mask_ar", "visible_agents", "visible_boxes", "visible_ramps", "agent_type")
    bounds = {m: (0.0, 1.0) for m in masks}
    bounds["lidar"] = (0.0, 200.0) if _gpu(env) else (0.0, 6.0)
    bounds["prep_counter"] = (0.0, float(env.env_info.get("option.prep_steps", 95)))
    return spaces.Dict({
        part: spaces.Box(*bounds.get(part, (-np.inf, np.inf)), shape=shape, dtype=np.float32)
        for part, (_, _, shape) in layout(env).items()
    })


def dict_observations(vec: Any) -> Any:
    """A Gymnasium vector env of hide_and_seek's agents as rows (``gymnasium.make_vec(
    "orrery/hide_and_seek-v0")``) whose observations are the dict of parts: each
    [num_envs, ...], views of the flat rows the wrapped env returns."""
    from gymnasium.vector import VectorObservationWrapper
    from gymnasium.vector.utils import batch_space

    class DictObservations(VectorObservationWrapper):
        def __init__(self, env: Any):
            super().__init__(env)
            self._orrery = env.unwrapped.env
            self.single_observation_space = dict_space(self._orrery)
            self.observation_space = batch_space(self.single_observation_space, env.num_envs)

        def observations(self, observations: Any) -> Dict[str, Any]:
            return split(self._orrery, observations)

    return DictObservations(vec)


def parallel_env(**env_kwargs: Any) -> Any:
    """One world of hide_and_seek as a PettingZoo ParallelEnv whose observations
    are the dict of parts (copies, as PettingZoo's one-world adapter returns)."""
    from orrery.pettingzoo import OrreryParallelEnv

    class DictParallelEnv(OrreryParallelEnv):
        def __init__(self, **kwargs: Any):
            super().__init__("hide_and_seek", **kwargs)
            self._spaces = (dict_space(self.env), self._spaces[1])
            self.metadata = dict(self.metadata, name="orrery_hide_and_seek_dict")

        def _obs(self, obs: np.ndarray) -> Dict[str, Dict[str, np.ndarray]]:
            return {agent: split(self.env, row) for agent, row in super()._obs(obs).items()}

    return DictParallelEnv(**env_kwargs)
