"""The `orrery` command. Subcommands live in a registry so other parts of
Orrery add theirs without touching this file's logic: a module calls
``register(Command(...))`` (or decorates a function with ``@subcommand``) and
is listed in COMMAND_MODULES, or ships an entry point in the group
"orrery.commands" that names such a module.

`bench` and `memory` run the native tool built from tools/orrery_cli.cpp,
which the wheel carries as orrery/bin/orrery, so timings never include Python;
`record` and `view` run render/'s orrery-record and orrery-view where the
build had Vulkan to make them.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from importlib import import_module
from typing import Callable, Dict, List, Optional

__all__ = ["Command", "register", "subcommand", "main", "native_tool"]

#: Modules imported before parsing; each registers its subcommands.
COMMAND_MODULES: List[str] = []
ENTRY_POINT_GROUP = "orrery.commands"


@dataclass
class Command:
    """One subcommand: ``configure`` adds its arguments, ``run`` returns an exit code."""

    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    configure: Optional[Callable[[argparse.ArgumentParser], None]] = None
    passthrough: bool = False  # hand the raw arguments to run() as args.rest


_COMMANDS: Dict[str, Command] = {}


def register(command: Command) -> Command:
    """Adds a subcommand; registering a name twice is an error."""
    if command.name in _COMMANDS:
        raise ValueError(f"orrery subcommand {command.name!r} is registered twice")
    _COMMANDS[command.name] = command
    return command


def subcommand(name: str, help: str, configure: Optional[Callable[[argparse.ArgumentParser], None]] = None):
    """Decorator form of register() for a ``run(args) -> int`` function."""
    def wrap(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        register(Command(name, help, run, configure))
        return run
    return wrap


def native_tool(name: str = "orrery") -> str:
    """Path of a native tool shipped next to the extension module (orrery/bin/NAME)."""
    from orrery import _core

    path = os.path.join(os.path.dirname(os.path.abspath(_core.__file__)), "bin", name)
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"the native tool {name} is missing at {path}; reinstall the package")
    return path


def _forward(tool: str, with_command: bool) -> Callable[[argparse.Namespace], int]:
    """A run() that replaces this process with native `tool` (its exit code is ours)."""
    def run(args: argparse.Namespace) -> int:
        path = native_tool(tool)
        argv = [path, *([args.command] if with_command else []), *args.rest]
        sys.stdout.flush()
        os.execv(path, argv)
        return 0  # not reached
    return run


def _env_and_options(rest: List[str]):
    """(ENV, env options) from orrery-view's arguments (--layout L, --opt key=value)."""
    env, options, i = None, {}, 0
    while i < len(rest):
        arg = rest[i]
        if arg in ("--layout", "--opt") and i + 1 < len(rest):
            key, _, value = (f"layout={rest[i + 1]}" if arg == "--layout" else rest[i + 1]).partition("=")
            options[key] = value
            i += 2
        elif arg.startswith("--"):
            i += 2 if arg not in ("--paused",) else 1
        else:
            env = env or arg
            i += 1
    return env, options


def viewer_names(rest: List[str]) -> List[str]:
    """--obs-names/--action-names for orrery-view from what the env declares
    (orrery.meta), unless the arguments name them already or the env declares none."""
    if "--obs-names" in rest or "--action-names" in rest or any(a in ("-h", "--help") for a in rest):
        return []
    env, options = _env_and_options(rest)
    if env is None:
        return []
    from orrery.env import make

    try:
        with make(env, num_worlds=1, device="cpu", threads=1, **options) as probe:
            obs, actions = probe.obs_names, probe.action_meanings
    except (ValueError, TypeError):
        return []  # the viewer itself reports a bad env or option
    out = []
    if obs:
        out += ["--obs-names", ",".join(obs)]
    if actions:
        out += ["--action-names", ",".join(actions)]
    return out


def _take_play(rest: List[str]) -> Optional[str]:
    """Removes ``--play POLICY`` from `rest` and returns POLICY (None without --play)."""
    if "--play" not in rest:
        return None
    at = rest.index("--play")
    if at + 1 >= len(rest):
        raise ValueError("--play needs a policy file (TorchScript .pt or ONNX .onnx)")
    path = rest.pop(at + 1)
    rest.pop(at)
    return path


def _view(args: argparse.Namespace) -> int:
    """orrery-view with the names the env declares, so its panels show names.
    ``--play POLICY`` (TorchScript or ONNX, see orrery.play) first plays one
    episode of world 0 from --seed with the policy, then has the viewer replay
    it (one world), pausing on its last state."""
    rest = list(args.rest)
    path = _take_play(rest)
    if path is None:
        args.rest = rest + viewer_names(rest)
        return _forward("orrery-view", False)(args)
    return _view_policy(path, rest)


def _view_policy(path: str, rest: List[str]) -> int:
    import subprocess
    import tempfile

    from orrery.play import load_policy, play_episode

    env, options = _env_and_options(rest)
    if env is None:
        raise ValueError("orrery view --play needs ENV")
    seed = int(rest[rest.index("--seed") + 1]) if "--seed" in rest else 0
    if "--worlds" in rest:
        raise ValueError("orrery view --play shows one world; leave out --worlds")
    played = play_episode(env, load_policy(path), seed=seed, **options)
    with tempfile.TemporaryDirectory() as tmp:
        actions = os.path.join(tmp, "actions.txt")
        with open(actions, "w") as f:
            f.write("\n".join(played["actions"]) + "\n")
        argv = [native_tool("orrery-view"), *rest, *viewer_names(rest), "--worlds", "1", "--actions", actions]
        print(f"orrery view: the policy played {len(played['actions'])} steps (return {played['return']:.2f}, "
              f"state hash {played['state_hash']:016x}); replaying them", flush=True)
        return subprocess.run(argv).returncode


def _option_value(rest: List[str], name: str) -> Optional[str]:
    """The value after option `name` in `rest` (the last one given), or None."""
    at = [i for i, a in enumerate(rest) if a == name]
    return rest[at[-1] + 1] if at and at[-1] + 1 < len(rest) else None


def _record(args: argparse.Namespace) -> int:
    """orrery-record, or with ``--play POLICY`` (TorchScript or ONNX, see
    orrery.play): the policy plays worlds 0 .. N - 1 (N from --grid, else 1)
    from --seed until world 0's episode ends (or --steps), then the recorder
    replays those actions with the other options (camera, overlays, size,
    fps, ...) and every world's final state hash is checked against the play."""
    rest = list(args.rest)
    path = _take_play(rest)
    if path is None:
        return _forward("orrery-record", False)(args)
    env, options = _env_and_options(rest)
    if env is None:
        raise ValueError("orrery record --play needs ENV")
    for fixed in ("--worlds", "--world", "--actions", "--device"):
        if fixed in rest:
            raise ValueError(f"orrery record --play plays worlds 0 .. N - 1 on the CPU (N from --grid); leave out {fixed}")
    out = _option_value(rest, "--out")
    if out is None:
        raise ValueError("orrery record --play needs --out DIR")
    seed = int(_option_value(rest, "--seed") or 0)
    grid = int(_option_value(rest, "--grid") or 1)
    steps = _option_value(rest, "--steps")
    # What play_episode and record_episode set themselves; the rest goes to the recorder as given.
    taken = {"--seed", "--grid", "--steps", "--out", "--layout", "--opt"}
    passed, i, env_seen = [], 0, False
    while i < len(rest):  # every recorder option takes a value; the first bare word is ENV
        if rest[i].startswith("--"):
            passed += [] if rest[i] in taken else rest[i:i + 2]
            i += 2
        else:
            if env_seen:
                passed.append(rest[i])
            env_seen = True
            i += 1
    from orrery.play import load_policy
    from orrery.record import record_episode

    result = record_episode(env, out, load_policy(path), seed=seed, max_steps=int(steps) if steps else None,
                            num_worlds=grid, recorder_args=passed, **options)
    print(result["recorder_output"], end="")
    print(f"orrery record: the policy played {result['steps']} steps of {grid} world(s) from seed {seed} "
          f"(world 0's return {result['return']:.2f}); the recording reproduces every world's state hash",
          flush=True)
    return 0


def _has_tool(name: str) -> bool:
    try:
        native_tool(name)
        return True
    except (FileNotFoundError, ImportError):
        return False


def _envs(args: argparse.Namespace) -> int:
    from orrery import describe_envs

    for name, summary in describe_envs().items():
        print(f"{name:<12} {summary}")
    return 0


register(Command("envs", "list the registered envs", _envs))
register(Command("bench", "measure env-steps per second (native tool; options as in tools/orrery_cli.cpp)",
                 _forward("orrery", True), passthrough=True))
register(Command("memory", "report the memory an env's worlds take (native tool)", _forward("orrery", True),
                 passthrough=True))
# The recorder and viewer ship only where render/ could be built (Vulkan).
if _has_tool("orrery-record"):
    register(Command("record", "render worlds offscreen to frames and a video; --play POLICY records a saved "
                     "policy's episode (orrery-record --help)", _record, passthrough=True))
if _has_tool("orrery-view"):
    register(Command("view", "watch worlds in a window: pause, step, inspect (orrery-view --help)",
                     _view, passthrough=True))


def _load_plugins() -> None:
    for module in COMMAND_MODULES:
        import_module(module)
    try:
        from importlib.metadata import entry_points
        found = entry_points(group=ENTRY_POINT_GROUP)
    except TypeError:  # Python < 3.10
        from importlib.metadata import entry_points as eps
        found = eps().get(ENTRY_POINT_GROUP, [])
    for ep in found:
        ep.load()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orrery", description="Orrery: batched game environments for RL.")
    parser.add_argument("--cmake-dir", action="store_true",
                        help="print the folder of OrreryConfig.cmake, for cmake -DOrrery_DIR=... (envs outside the tree)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in _COMMANDS.values():
        p = sub.add_parser(cmd.name, help=cmd.help, add_help=not cmd.passthrough)
        if cmd.passthrough:
            p.add_argument("rest", nargs=argparse.REMAINDER)
        elif cmd.configure:
            cmd.configure(p)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the `orrery` console script."""
    _load_plugins()
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if argv and argv[0] in _COMMANDS and _COMMANDS[argv[0]].passthrough:
        args = argparse.Namespace(command=argv[0], rest=argv[1:])  # argparse would eat --options
    else:
        args = parser.parse_args(argv)
    if getattr(args, "cmake_dir", False):
        from orrery.plugins import cmake_dir

        print(cmake_dir())
        return 0
    if not args.command:
        parser.print_help()
        return 2
    try:
        return int(_COMMANDS[args.command].run(args) or 0)
    except (ValueError, TypeError, FileNotFoundError) as e:
        print(f"orrery: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
