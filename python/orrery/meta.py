"""What each shipped env declares beyond its tensors: how its reward is meant
(one team reward or each agent's own), what its actions and observation
channels mean. Adapters read these instead of guessing: the Gymnasium reward of
a team env is the team reward (20 per Overcooked soup, as overcooked_ai), not
the sum over agents.

The facts sit here, keyed by the env's registered name, until the C++
registration table carries them; an env missing here is treated as
per-agent, with no names.
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


def _overcooked_channels(options: Dict[str, str], agents: int) -> Tuple[str, ...]:
    # overcooked_ai's lossless_state_encoding layer names; player_0 is the observer.
    players = ["player_0_loc", "player_1_loc"]
    players += [f"player_{p}_orientation_{d}" for p in (0, 1) for d in range(4)]
    base = ["pot_loc", "counter_loc", "onion_disp_loc", "tomato_disp_loc", "dish_disp_loc", "serve_loc"]
    variable = ["onions_in_pot", "tomatoes_in_pot", "onions_in_soup", "tomatoes_in_soup",
                "soup_cook_time_remaining", "soup_done", "dishes", "onions", "tomatoes"]
    return tuple(players + base + variable + ["urgency"])


def _overcooked_bounds(options: Dict[str, str], agents: int) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
    # Every layer is a 0/1 mask except the ingredient counts (16-19: at most 3
    # per soup) and the cook time left (20: up to a recipe's cook time, a byte).
    high = [1.0] * 16 + [3.0] * 4 + [255.0] + [1.0] * 5
    return tuple([0.0] * 26), tuple(high)


def _tag_bounds(options: Dict[str, str], agents: int) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
    # Role is 0 or 1; positions stay in the unit square, so offsets to a pellet
    # or another agent are in [-1, 1]; speeds have no declared bound.
    inf = float("inf")
    low = [0.0, 0.0, 0.0, -inf, -inf, -1.0, -1.0] + [-1.0, -1.0, -inf, -inf] * (agents - 1)
    high = [1.0, 1.0, 1.0, inf, inf, 1.0, 1.0] + [1.0, 1.0, inf, inf] * (agents - 1)
    return tuple(low), tuple(high)


def _tag_entries(options: Dict[str, str], agents: int) -> Tuple[str, ...]:
    # envs/tutorial/tag.hpp observe(): own role, position, velocity, the nearest
    # pellet relative to us, then each other agent (row order) relative to us.
    names = ["role", "x", "y", "vx", "vy", "pellet_dx", "pellet_dy"]
    for k in range(agents - 1):
        names += [f"other{k}_dx", f"other{k}_dy", f"other{k}_vx", f"other{k}_vy"]
    return tuple(names)


_META: Dict[str, EnvMeta] = {
    "overcooked": EnvMeta(reward="team",
                          action_meanings=("north", "south", "east", "west", "stay", "interact"),
                          obs_names=_overcooked_channels, obs_bounds=_overcooked_bounds),
    "tag": EnvMeta(reward="per_agent", action_meanings=("noop", "up", "down", "left", "right"),
                   obs_names=_tag_entries, obs_bounds=_tag_bounds),
}


def meta_of(name: str) -> EnvMeta:
    """The declared facts of env ``name`` (defaults for an env not listed)."""
    return _META.get(name, EnvMeta())
