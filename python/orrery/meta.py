"""What an env declares beyond its tensors: how its reward is meant (one team
reward or each agent's own), what its actions and observation entries mean,
and the observations' bounds. Adapters read these instead of guessing: the
Gymnasium reward of a team env is the team reward (20 per Overcooked soup, as
overcooked_ai), not the sum over agents.

The facts come from the env's C++ registration table (EnvSpec::facts), built
for the options at hand, so an env loaded as a plugin declares them the same
way as a shipped one; an env that declares nothing is per-agent and unnamed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

__all__ = ["EnvMeta", "meta_of", "REWARD_MODES"]

REWARD_MODES = ("team", "per_agent")


@dataclass(frozen=True)
class EnvMeta:
    """reward: "team" (every agent's reward row holds the same team reward) or
    "per_agent" (each row is that agent's own, e.g. +1 / -1 in a chase).
    action_meanings: the name of each action value, from the range's low end.
    obs_names: (env options, agents) -> the name of each entry along the first
    per-agent axis of "obs" (channels of a [C, H, W] grid, or a vector's entries).
    obs_bounds: (env options, agents) -> (low, high), one value per such entry;
    None leaves the dtype's own range."""

    reward: str = "per_agent"
    action_meanings: Optional[Tuple[str, ...]] = None
    obs_names: Optional[Callable[[Dict[str, str], int], Tuple[str, ...]]] = None
    obs_bounds: Optional[Callable[[Dict[str, str], int], Tuple[Tuple[float, ...], Tuple[float, ...]]]] = None


def _facts(name: str, options: Dict[str, str]) -> Dict[str, object]:
    from orrery import _core
    key = (name, tuple(sorted((str(k), str(v)) for k, v in options.items())))
    if key not in _CACHE:
        try:
            _CACHE[key] = _core.env_facts(name, dict(key[1]))
        except ValueError:  # not a registered env (an adapter's stand-in): it declares nothing
            _CACHE[key] = {"reward": "per_agent", "action_meanings": [], "obs_names": [], "obs_low": [],
                           "obs_high": []}
    return _CACHE[key]


_CACHE: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], Dict[str, object]] = {}


def meta_of(name: str, options: Optional[Dict[str, str]] = None) -> EnvMeta:
    """The declared facts of env ``name`` (built with ``options``, by default
    its defaults): EnvMeta's callables take the options an env was made with."""
    facts = _facts(name, options or {})

    def names(opts: Dict[str, str], agents: int) -> Optional[Tuple[str, ...]]:
        return tuple(_facts(name, opts)["obs_names"]) or None

    def bounds(opts: Dict[str, str], agents: int) -> Optional[Tuple[Tuple[float, ...], Tuple[float, ...]]]:
        f = _facts(name, opts)
        return (tuple(f["obs_low"]), tuple(f["obs_high"])) if f["obs_low"] else None

    return EnvMeta(reward=str(facts["reward"]),
                   action_meanings=tuple(facts["action_meanings"]) or None,
                   obs_names=names if facts["obs_names"] else None,
                   obs_bounds=bounds if facts["obs_low"] else None)
