#!/usr/bin/env python3
"""Reference data for Orrery's featurized Overcooked observation.

Plays one episode per (layout, dynamics) in overcooked_ai with a seeded
epsilon-greedy cook (so soups get cooked, carried and served) and records, per
step, the joint action and OvercookedGridworld.featurize_state(state, mlam,
num_pots=2) of both players for the state after the step. featurize_state reads
only mlam.motion_planner; OvercookedEnv's mlam uses NO_COUNTERS_PARAMS, whose
motion planner is MotionPlanner(mdp, counter_goals=[]), built here directly
(the joint planner is slow and unused).

Output: <layout>_<old|new>.jsonl.gz, first line a header, then one line per
step: {"t", "a": [a0, a1], "f": [[96 values of player 0], [... player 1]]};
step t=0 has no action and holds the start state's features.

Usage: python3 gen_featurized.py --oc-src <overcooked_ai>/src [--steps 400] [--out DIR]
"""
import argparse
import gzip
import json
import os
import random
import sys
import types
from collections import deque

EPISODES = [  # (layout, old_dynamics, seed)
    ("cramped_room", True, 1),
    ("asymmetric_advantages", True, 2),
    ("coordination_ring", True, 3),
    ("forced_coordination", True, 4),
    ("counter_circuit_o_1order", True, 5),
    ("cramped_room", False, 6),
]
MOVES = [(0, -1), (0, 1), (1, 0), (-1, 0)]  # action index 0..3 = N, S, E, W


def import_overcooked(src):
    sys.path.insert(0, os.path.abspath(src))
    try:
        import gymnasium  # noqa: F401
    except ImportError:  # the package registers a gym id on import; the MDP never uses gym
        reg = types.ModuleType("gymnasium.envs.registration")
        reg.register = lambda *args, **kwargs: None
        envs = types.ModuleType("gymnasium.envs")
        envs.registration = reg
        gym = types.ModuleType("gymnasium")
        gym.envs = envs
        sys.modules.update({"gymnasium": gym, "gymnasium.envs": envs, "gymnasium.envs.registration": reg})
    # This source copy lacks data/planners.py (pickle caches); nothing here loads or saves one.
    import overcooked_ai_py.data  # noqa: F401
    if "overcooked_ai_py.data.planners" not in sys.modules:
        try:
            import overcooked_ai_py.data.planners  # noqa: F401
        except ImportError:
            cache = types.ModuleType("overcooked_ai_py.data.planners")
            cache.PLANNERS_DIR = None
            cache.load_saved_action_manager = cache.load_saved_motion_planner = None
            sys.modules[cache.__name__] = cache
    from overcooked_ai_py.mdp.actions import Action
    from overcooked_ai_py.mdp.overcooked_mdp import OvercookedGridworld
    from overcooked_ai_py.planning.planners import NO_COUNTERS_PARAMS, MotionPlanner
    return Action, OvercookedGridworld, MotionPlanner, NO_COUNTERS_PARAMS


def step_toward(floor, pos, facing, targets, avoid):
    """Action index moving pos toward facing one of `targets`; INTERACT when there."""
    stands = {}
    for tx, ty in targets:
        for d, (dx, dy) in enumerate(MOVES):
            stands.setdefault((tx - dx, ty - dy), d)
    stands = {p: d for p, d in stands.items() if p in floor}
    if pos in stands:
        return 5 if facing == MOVES[stands[pos]] else stands[pos]
    first = {pos: None}
    queue = deque([pos])
    while queue:
        cur = queue.popleft()
        if cur in stands:
            while first[cur] is not None and first[cur][0] != pos:
                cur = first[cur][0]
            return first[cur][1] if first[cur] else None
        for d, (dx, dy) in enumerate(MOVES):
            nxt = (cur[0] + dx, cur[1] + dy)
            if nxt in floor and nxt not in first and nxt != avoid:
                first[nxt] = (cur, d)
                queue.append(nxt)
    return None


def choose(mdp, floor, state, i, rng, eps=0.25):
    if rng.random() < eps:
        return rng.randrange(6)
    me, other = state.players[i], state.players[1 - i]
    held = me.held_object.name if me.held_object else None
    pots = mdp.get_pot_states(state)
    open_pots = pots["empty"] + pots["1_items"] + pots["2_items"]
    busy = pots["cooking"] + pots["ready"] + pots["3_items"]
    if held == "soup":
        goals = [mdp.get_serving_locations(), mdp.get_empty_counter_locations(state)]
    elif held == "dish":
        goals = [pots["ready"], busy, mdp.get_empty_counter_locations(state)]
    elif held:
        goals = [open_pots, mdp.get_empty_counter_locations(state)]
    else:
        goals = [pots["3_items"] if not mdp.old_dynamics else [],
                 mdp.get_dish_dispenser_locations() if busy else [],
                 mdp.get_onion_dispenser_locations(), mdp.get_counter_objects_dict(state)["onion"]]
    for targets in goals:
        if targets:
            a = step_toward(floor, me.position, me.orientation, targets, other.position)
            if a is not None:
                return a
    return rng.randrange(6)


def featurize(mdp, state, planner):
    mlam = types.SimpleNamespace(motion_planner=planner)
    return [[float(v) for v in f] for f in mdp.featurize_state(state, mlam, num_pots=2)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oc-src", required=True)
    ap.add_argument("--oc-commit", default="739950a079cdaed5a44fcc662efc40244c205d06")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    Action, Gridworld, MotionPlanner, params = import_overcooked(args.oc_src)
    for layout, old, seed in EPISODES:
        mdp = Gridworld.from_layout_name(layout, old_dynamics=old)
        planner = MotionPlanner(mdp, counter_goals=params["counter_goals"])
        floor = set(mdp.get_valid_player_positions())
        rng = random.Random(seed)
        state = mdp.get_standard_start_state()
        name = "%s_%s.jsonl.gz" % (layout, "old" if old else "new")
        with gzip.open(os.path.join(args.out, name), "wt") as out:
            header = {"layout": layout, "old_dynamics": old, "seed": seed, "steps": args.steps,
                      "overcooked_ai_commit": args.oc_commit, "policy": "epsilon-greedy cook, eps=0.25"}
            out.write(json.dumps(header) + "\n")
            out.write(json.dumps({"t": 0, "f": featurize(mdp, state, planner)}) + "\n")
            for t in range(1, args.steps + 1):
                joint = [choose(mdp, floor, state, i, rng) for i in range(2)]
                state, _ = mdp.get_state_transition(state, tuple(Action.INDEX_TO_ACTION[a] for a in joint))
                out.write(json.dumps({"t": t, "a": joint, "f": featurize(mdp, state, planner)},
                                     separators=(",", ":")) + "\n")
        print(name, os.path.getsize(os.path.join(args.out, name)), "bytes")


if __name__ == "__main__":
    main()
