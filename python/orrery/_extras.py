"""Optional dependencies: a missing one names the pip extra that installs it."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

#: The distribution on PyPI (the import name stays ``orrery``).
DISTRIBUTION = "orrery-rl"

#: module -> the extra of DISTRIBUTION that brings it.
EXTRAS = {
    "gymnasium": "gymnasium",
    "pettingzoo": "pettingzoo",
    "torch": "torch",
    "stable_baselines3": "sb3",
    "torchrl": "torchrl",
    "tensordict": "torchrl",
    "jax": "jax",
    "onnxruntime": "onnx",
}


def missing(module: str, feature: str) -> ModuleNotFoundError:
    """The error saying that ``feature`` needs ``module``'s package and what to pip install."""
    top = module.split(".")[0]
    extra = EXTRAS.get(top)
    hint = f"pip install '{DISTRIBUTION}[{extra}]'" if extra else f"pip install {top}"
    return ModuleNotFoundError(f"{feature} needs the package {top!r}, which is not installed; "
                               f"install it with: {hint}", name=top)


def require(module: str, feature: str) -> ModuleType:
    """Imports ``module``; when it is missing, raises ModuleNotFoundError saying
    which feature needs it and what to pip install."""
    try:
        return import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module.split(".")[0]:
            raise  # the module is there but one of its own imports failed: show that
        raise missing(module, feature) from None
