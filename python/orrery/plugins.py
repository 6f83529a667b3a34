"""Envs built outside the Orrery tree, as plugins (docs/writing-an-env.md).

A plugin is a shared library made by ``orrery_add_plugin()`` of the CMake
package ``find_package(Orrery)`` (``python -m orrery --cmake-dir`` says where it
is). ``load_plugin(path)`` registers its envs, after which ``orrery.make(name)``
and ``gymnasium.make("orrery/<name>-v0")`` work. A Python package can ship a
plugin and declare it under the entry-point group ``orrery.envs``; ``import
orrery`` loads every such plugin:

    [project.entry-points."orrery.envs"]
    reach = "reach_env:plugin_path"   # a path, or a callable returning one

Plugins named in ``$ORRERY_PLUGINS`` (paths separated by ``:``) load on import
too, as they do in the native tools (``orrery bench``, ``view``, ``record``).
Every plugin Python loads is added to that variable, so the native tools this
process starts (``orrery view reach``, ``render_mode="human"``) see its envs.
"""

from __future__ import annotations

import os
import warnings
from typing import List, Union

from orrery import _core

__all__ = ["load_plugin", "compile_gpu_kernels", "cmake_dir", "include_dir", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "orrery.envs"
ENV_VAR = "ORRERY_PLUGINS"


def load_plugin(path: Union[str, "os.PathLike[str]"]) -> List[str]:
    """Loads the env plugin at ``path`` and returns the names of the envs it
    registered (the same names again for a file already loaded). Raises
    ValueError when the file is missing, is not a plugin, was built against
    another Orrery installation, or registers a name already taken."""
    names = _load(os.fspath(path))
    _register_gymnasium_ids()
    return list(names)


def _load(path: str) -> List[str]:
    names = _core.load_plugin(path)
    real = os.path.realpath(path)
    known = [p for p in os.environ.get(ENV_VAR, "").split(":") if p]
    if real not in {os.path.realpath(p) for p in known}:
        os.environ[ENV_VAR] = ":".join(known + [real])
    return names


def compile_gpu_kernels(name: str, arch: int = 90, **options: object) -> dict:
    """Generates env ``name``'s megakernel and compiles it through NVRTC for
    ``sm_<arch>``, with no GPU (NVRTC must be installed): the check CI runs on
    every shipped env, for a plugin's device code. Returns ``cubin_bytes``,
    ``seconds`` and ``kernels``; a compile error raises ValueError with NVRTC's log."""
    return dict(_core.compile_gpu_kernels(name, {k: str(v) for k, v in options.items()}, int(arch)))


def _sdk_root() -> str:
    # Beside the extension module: where the build installed the SDK, also for
    # an editable install whose Python files stay in the source tree.
    return os.path.dirname(os.path.abspath(_core.__file__))


def cmake_dir() -> str:
    """The folder of OrreryConfig.cmake: ``cmake -DOrrery_DIR=<this>``."""
    return os.path.join(_sdk_root(), "lib", "cmake", "Orrery")


def include_dir() -> str:
    """The folder of the headers an env includes (ecs/, engine/, envs/options.hpp)."""
    return os.path.join(_sdk_root(), "include")


def _register_gymnasium_ids() -> None:
    import importlib.util

    if importlib.util.find_spec("gymnasium") is not None:
        from orrery.gymnasium import register_envs

        register_envs()


def _entry_points():
    from importlib.metadata import entry_points

    try:
        return list(entry_points(group=ENTRY_POINT_GROUP))
    except TypeError:  # Python < 3.10
        return list(entry_points().get(ENTRY_POINT_GROUP, []))


def load_entry_point_plugins() -> None:
    """Loads the plugins of ``$ORRERY_PLUGINS`` and of every installed
    ``orrery.envs`` entry point. A broken plugin is reported as a warning: it
    must not stop ``import orrery``."""
    for path in [p for p in os.environ.get(ENV_VAR, "").split(":") if p]:
        try:
            _core.load_plugin(path)
        except Exception as e:  # noqa: BLE001 - any failure of a third-party plugin
            warnings.warn(f"orrery: env plugin {path} (from ${ENV_VAR}) was not loaded: {e}", RuntimeWarning,
                          stacklevel=2)
    for ep in _entry_points():
        try:
            target = ep.load()
            path = target() if callable(target) else target
            _load(os.fspath(path))
        except Exception as e:  # noqa: BLE001 - any failure of a third-party plugin
            warnings.warn(f"orrery: env plugin '{ep.name}' ({ep.value}) was not loaded: {e}", RuntimeWarning,
                          stacklevel=2)
