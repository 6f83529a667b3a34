"""Saved policies, played: load a TorchScript or ONNX policy and play one
episode of a one-world CPU env with it, keeping the actions. A world's
trajectory depends only on its seed and actions, so render/'s tools replay the
episode exactly from them: `orrery view ENV --play POLICY` watches it in the
viewer, orrery.record.record_episode renders it to a video.

A saved policy maps a batch of observations [worlds, agents, ...] (any
numeric dtype; it is given float32) to either logits [worlds, agents,
actions], played greedily, or actions [worlds, agents]. The PPO example's
--save-policy writes one.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from orrery._extras import require
from orrery.env import make

__all__ = ["load_policy", "play_episode"]

Policy = Callable[[np.ndarray], np.ndarray]


def _greedy(out: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Logits [worlds, agents, actions] -> argmax; actions [worlds, agents] as they are."""
    out = np.asarray(out)
    return out.argmax(-1) if out.ndim == 3 or (out.ndim > 2 and out.shape[:2] == obs.shape[:2]) else out


def load_policy(path: "os.PathLike[str] | str") -> Policy:
    """A policy(obs) -> actions from a TorchScript file (.pt, .ts) or an ONNX file (.onnx)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"policy file {path!r} does not exist")
    if path.endswith(".onnx"):
        ort = require("onnxruntime", "an ONNX policy")
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        return lambda obs: _greedy(session.run(None, {name: np.asarray(obs, np.float32)})[0], obs)
    torch = require("torch", "a TorchScript policy")
    try:
        module = torch.jit.load(path, map_location="cpu")
    except RuntimeError as e:
        raise ValueError(f"policy file {path!r} is not TorchScript ({e}); save one with torch.jit.save, "
                         "or pass an .onnx file") from None
    module.eval()

    def policy(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return _greedy(module(torch.as_tensor(np.asarray(obs), dtype=torch.float32)).numpy(), obs)

    return policy


def play_episode(env_name: str, policy: Callable[[Any], Any], seed: int = 0, max_steps: Optional[int] = None,
                 **env_kwargs: Any) -> Dict[str, Any]:
    """Plays one episode of world 0 of a one-world CPU env from ``seed``.

    Returns {"actions": one line per step ("5 2": every agent's value, as
    orrery-record --actions and orrery-view --actions read them), "return":
    the summed reward, "state_hash": the world's hash after the last step}."""
    env = make(env_name, num_worlds=1, device="cpu", seed=seed, framework="numpy", threads=1, **env_kwargs)
    try:
        obs, _ = env.reset(seed=seed)
        lines: List[str] = []
        total = 0.0
        while max_steps is None or len(lines) < max_steps:
            actions = np.asarray(policy(obs)).reshape(1, -1).astype(np.int64)
            lines.append(" ".join(str(int(a)) for a in actions[0]))
            obs, reward, terminated, truncated, _ = env.step(actions.reshape(env.actions.shape))
            total += float(np.asarray(reward).sum())
            if bool(np.asarray(terminated)[0]) or bool(np.asarray(truncated)[0]):
                break
        return {"actions": lines, "return": total, "state_hash": env.state_hash(0)}
    finally:
        env.close()
