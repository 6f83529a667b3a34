"""Saved policies, played: load a TorchScript or ONNX policy and play one
episode of a one-world CPU env with it, keeping the actions. A world's
trajectory depends only on its seed and actions, so render/'s tools replay the
episode exactly from them: `orrery view ENV --play POLICY` watches it in the
viewer, orrery.record.record_episode renders it to a video.

A saved policy maps a batch of observations [worlds, agents, ...] (any
numeric dtype; it is given float32) to either actions in the env's action
shape ([worlds, agents], or [worlds, agents, K] for K-part MultiDiscrete
actions such as hide-and-seek's) or logits, played greedily: [worlds,
agents, n] for n actions, and for K-part actions [worlds, agents, K, n] or
the parts' logits side by side, [worlds, agents, K * n] (``as_actions``). The
PPO example's --save-policy writes one.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from orrery._extras import require
from orrery.env import make

__all__ = ["as_actions", "load_policy", "play_episode"]

Policy = Callable[[np.ndarray], np.ndarray]


def _greedy(out: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Without an env: logits [worlds, agents, actions] -> argmax; actions [worlds, agents] as they are."""
    out = np.asarray(out)
    return out.argmax(-1) if out.ndim == 3 or (out.ndim > 2 and out.shape[:2] == obs.shape[:2]) else out


def as_actions(env: Any, out: Any) -> np.ndarray:
    """A policy's output as actions for ``env``: actions of env.actions' shape
    are kept (integers of the same count are reshaped); logits are played greedily (lowest value of env.action_range
    plus the argmax), shaped [..., n] after the action shape or, for K-part
    actions, the K parts' n logits side by side ([worlds, agents, K * n]).
    Anything else raises ValueError naming the shapes it accepts."""
    out = np.asarray(out)
    shape = tuple(env.actions.shape)
    if out.shape == shape:
        return out
    if np.issubdtype(out.dtype, np.integer) and out.size == int(np.prod(shape)):
        return out.reshape(shape)  # the right values in another shape, e.g. [agents] for one world
    low, high = env.action_range or (0, None)
    if high is not None:
        n = int(high) - int(low) + 1
        if out.shape == shape + (n,):
            return int(low) + out.argmax(-1)
        if len(shape) == 3 and out.shape == shape[:2] + (shape[2] * n,):
            return int(low) + out.reshape(shape + (n,)).argmax(-1)
    accepted = f"actions {shape}"
    if high is not None:
        accepted += f" or logits {shape + (n,)}" + (f" or {shape[:2] + (shape[2] * n,)}" if len(shape) == 3 else "")
    raise ValueError(f"the policy returned an array of shape {out.shape}; expected {accepted}")


class SavedPolicy:
    """A policy loaded from a file. ``outputs(obs)`` is what the file's model
    returns; calling it gives actions (as_actions for the env it was loaded
    for, else logits [worlds, agents, n] played greedily)."""

    def __init__(self, run: Callable[[np.ndarray], np.ndarray], env: Any = None) -> None:
        self._run, self.env = run, env

    def outputs(self, obs: Any) -> np.ndarray:
        return np.asarray(self._run(np.asarray(obs, np.float32)))

    def __call__(self, obs: Any) -> np.ndarray:
        out = self.outputs(obs)
        return as_actions(self.env, out) if self.env is not None else _greedy(out, np.asarray(obs))


def load_policy(path: "os.PathLike[str] | str", env: Any = None) -> SavedPolicy:
    """A policy(obs) -> actions from a TorchScript file (.pt, .ts) or an ONNX
    file (.onnx). With ``env`` its outputs become that env's actions
    (as_actions); play_episode converts them for the env it plays either way."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"policy file {path!r} does not exist")
    if path.endswith(".onnx"):
        ort = require("onnxruntime", "an ONNX policy")
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        return SavedPolicy(lambda obs: session.run(None, {name: obs})[0], env)
    torch = require("torch", "a TorchScript policy")
    try:
        module = torch.jit.load(path, map_location="cpu")
    except RuntimeError as e:
        raise ValueError(f"policy file {path!r} is not TorchScript ({e}); save one with torch.jit.save, "
                         "or pass an .onnx file") from None
    module.eval()

    def run(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return module(torch.as_tensor(obs)).numpy()

    return SavedPolicy(run, env)


def play_episode(env_name: str, policy: Callable[[Any], Any], seed: int = 0, max_steps: Optional[int] = None,
                 num_worlds: int = 1, **env_kwargs: Any) -> Dict[str, Any]:
    """Plays worlds 0 .. num_worlds - 1 of a CPU env from ``seed`` until world
    0's episode ends (or ``max_steps``); the others play on (auto-reset).

    Returns {"actions": one line per step (every world's values in world
    order, "5 2" for one Overcooked world, as orrery-record --actions and
    orrery-view --actions read them), "return": world 0's summed reward,
    "state_hash": world 0's hash after the last step, "state_hashes": every
    world's}. A SavedPolicy's outputs are made the env's actions (as_actions)."""
    env = make(env_name, num_worlds=num_worlds, device="cpu", seed=seed, framework="numpy", threads=1,
               **env_kwargs)
    try:
        obs, _ = env.reset(seed=seed)
        lines: List[str] = []
        total = 0.0
        while max_steps is None or len(lines) < max_steps:
            out = policy.outputs(obs) if isinstance(policy, SavedPolicy) else policy(obs)
            actions = as_actions(env, out).astype(np.int64)
            lines.append(" ".join(str(int(a)) for a in actions.reshape(-1)))
            obs, reward, terminated, truncated, _ = env.step(actions)
            total += float(np.asarray(reward)[0].sum())
            if bool(np.asarray(terminated)[0]) or bool(np.asarray(truncated)[0]):
                break
        hashes = [env.state_hash(w) for w in range(num_worlds)]
        return {"actions": lines, "return": total, "state_hash": hashes[0], "state_hashes": hashes}
    finally:
        env.close()
