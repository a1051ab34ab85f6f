"""parl_algorithms: PARL's single-process algorithm zoo on PyTorch and PaddlePaddle.

``import parl_algorithms`` imports no deep-learning framework; the classes resolve lazily.
``parl_algorithms.DQN`` is the class of the selected backend (``parl_core.get_backend()``: the
``PARL_BACKEND`` environment variable, else the installed framework, paddle when both are, as PARL);
``parl_algorithms.torch.DQN`` and ``parl_algorithms.paddle.DQN`` pin a framework whatever the default.

Algorithms: ``PolicyGradient`` (REINFORCE), ``DQN``, ``DDQN``, ``A2C``, ``A3C``, ``IMPALA``, ``PPO``,
``DDPG``, ``TD3``, ``SAC``, ``CQL``, ``OAC``, ``IQL``, ``DecisionTransformer``; multi-agent: ``MADDPG``,
``QMIX``, ``MAPPO`` (and its ``PopArt``), ``COMA``;
meta-learning (torch): ``MAML`` (with the MAML++ options) and its sine-task sampler ``parl_algorithms.sine_tasks``.
"""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
from typing import Any

__version__ = "3.0.0"

# class name -> module (under parl_algorithms.torch / parl_algorithms.paddle) that defines it
_ALGORITHMS: dict[str, str] = {
    "PolicyGradient": "policy_gradient",
    "DQN": "dqn",
    "DDQN": "dqn",
    "A2C": "a2c",
    "A3C": "a3c",
    "PPO": "ppo",
    "DDPG": "ddpg",
    "TD3": "td3",
    "SAC": "sac",
    "CQL": "cql",
    "IMPALA": "impala",
    "OAC": "oac",
    "IQL": "iql",
    "COMA": "coma",
    "DecisionTransformer": "dt",
    "MADDPG": "maddpg",
    "QMIX": "qmix",
    "MAPPO": "mappo",
    "PopArt": "mappo",
    "MAML": "maml",
}

__all__ = sorted(_ALGORITHMS) + ["__version__"]

_FRAMEWORK = {"torch": "torch", "paddle": "paddle"}


def load_algorithm(backend: str, name: str) -> Any:
    """The class ``name`` of ``parl_algorithms.<backend>`` (``"torch"`` or ``"paddle"``).

    Raises:
        AttributeError: ``name`` is not an algorithm of the zoo.
        ImportError: the backend's framework is not installed, or the algorithm has no implementation on
            that backend; the message names the fix.
    """
    module = _ALGORITHMS.get(name)
    if module is None:
        raise AttributeError(f"module 'parl_algorithms.{backend}' has no attribute {name!r}")
    try:
        impl = importlib.import_module(f"parl_algorithms.{backend}.{module}")
    except ModuleNotFoundError as err:
        if err.name == _FRAMEWORK[backend]:
            raise ImportError(
                f"parl_algorithms.{backend}.{name} runs on {backend}, which is not installed; install "
                f"it with `pip install 'parl-algorithms[{backend}]'`"
            ) from err
        if err.name != f"parl_algorithms.{backend}.{module}":
            raise
        other = "paddle" if backend == "torch" else "torch"
        raise ImportError(
            f"{name} has no {backend} implementation in this release; use "
            f"parl_algorithms.{other}.{name} (or `export PARL_BACKEND={other}`)"
        ) from err
    return getattr(impl, name)


def _implemented(backend: str) -> list[str]:
    """The algorithms ``parl_algorithms.<backend>`` implements (a module of that name is there), sorted: that
    module's ``__all__``; the others raise ImportError naming the backend that has them (``load_algorithm``)."""
    here = pathlib.Path(__file__).parent / backend
    return sorted(name for name, module in _ALGORITHMS.items() if (here / f"{module}.py").exists())


def __getattr__(name: str) -> Any:
    if name not in _ALGORITHMS:
        raise AttributeError(f"module 'parl_algorithms' has no attribute {name!r}")
    from parl_core.backend import get_backend

    backend = get_backend()
    if importlib.util.find_spec(_FRAMEWORK[backend]) is not None:
        from parl_core.backend import backend_module

        backend_module()  # fixes the process's backend, as parl_core.Model does
    value = load_algorithm(backend, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ALGORITHMS))
