"""The `orrery` command. Subcommands live in a registry so other parts of
Orrery add theirs without touching this file's logic: a module calls
``register(Command(...))`` (or decorates a function with ``@subcommand``) and
is listed in COMMAND_MODULES, or ships an entry point in the group
"orrery.commands" that names such a module.

`bench` and `memory` run the native tool built from tools/orrery_cli.cpp,
which the wheel carries as orrery/bin/orrery, so timings never include Python.
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


def native_tool() -> str:
    """Path of the native `orrery` tool shipped next to the extension module."""
    from orrery import _core

    path = os.path.join(os.path.dirname(os.path.abspath(_core.__file__)), "bin", "orrery")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"the native orrery tool is missing at {path}; reinstall the package")
    return path


def _run_native(args: argparse.Namespace) -> int:
    tool = native_tool()
    argv = [tool, args.command, *args.rest]
    sys.stdout.flush()
    os.execv(tool, argv)  # replaces this process: the tool's exit code is ours
    return 0  # not reached


def _envs(args: argparse.Namespace) -> int:
    from orrery import describe_envs

    for name, summary in describe_envs().items():
        print(f"{name:<12} {summary}")
    return 0


register(Command("envs", "list the registered envs", _envs))
register(Command("bench", "measure env-steps per second (native; `orrery bench --help` for options)",
                 _run_native, passthrough=True))
register(Command("memory", "report the memory an env's worlds take (native)", _run_native, passthrough=True))


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
