"""Orrery: batched game environments for reinforcement learning.

    import orrery
    env = orrery.make("tag", num_worlds=4096, seed=0)
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step(actions)

Adapters: orrery.gymnasium (a Gymnasium VectorEnv; importing orrery registers
the ids "orrery/<env>-v0" when Gymnasium is installed), orrery.pettingzoo
(ParallelEnv), orrery.puffer (agents as rows), orrery.sb3 (Stable-Baselines3
VecEnv). Tensors are zero-copy: see docs/python.md. Envs built outside this
tree are plugins: orrery.load_plugin(path), or an "orrery.envs" entry point
(orrery.plugins).
"""

import importlib.util as _importlib_util

from orrery._core import Tensor
from orrery.env import AUTORESET_MODES, FRAMEWORKS, RENDER_MODES, CpuFallbackWarning, Env, describe_envs, list_envs, make
from orrery.plugins import load_entry_point_plugins as _load_entry_point_plugins
from orrery.plugins import load_plugin

__version__ = "0.1.0"
__all__ = ["make", "Env", "Tensor", "list_envs", "describe_envs", "AUTORESET_MODES", "FRAMEWORKS", "RENDER_MODES",
           "CpuFallbackWarning", "load_plugin", "__version__"]


def _register_gymnasium_ids() -> None:
    """gymnasium.make("orrery/<env>-v0") and make_vec work after `import orrery`."""
    if _importlib_util.find_spec("gymnasium") is not None:
        from orrery.gymnasium import register_envs

        register_envs()


_load_entry_point_plugins()
_register_gymnasium_ids()
