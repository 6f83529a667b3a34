"""Orrery: batched game environments for reinforcement learning.

    import orrery
    env = orrery.make("tag", num_worlds=4096, seed=0)
    obs, info = env.reset()
    obs, reward, terminated, truncated, info = env.step(actions)

Adapters: orrery.gymnasium (a Gymnasium VectorEnv) and orrery.pettingzoo
(ParallelEnv). Tensors are zero-copy: see docs/python.md.
"""

from orrery._core import Tensor
from orrery.env import AUTORESET_MODES, FRAMEWORKS, Env, describe_envs, list_envs, make

__version__ = "0.1.0"
__all__ = ["make", "Env", "Tensor", "list_envs", "describe_envs", "AUTORESET_MODES", "FRAMEWORKS", "__version__"]
