"""The pure loss and target functions of the multi-agent algorithms, as the backends' ``marl_functional`` modules
export them: each is written once in its algorithm's module (:mod:`~parl_algorithms.algorithms.maddpg`, ...) with
the backend's layer ``ops`` as its first argument; :func:`bind` gives a backend's module the same functions with
its ``ops`` bound (``parl_algorithms.torch.marl_functional.huber_loss(error, delta)``).

Every function: tensors in, tensors out, no side effects, a ``ValueError`` naming the expected shapes when the
inputs do not fit, and the equation of its paper in the docstring.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from parl_algorithms.algorithms import coma, maddpg, qmix

__all__ = ["FUNCTIONS", "bind"]

#: the functions, in the backends' module order (one section per algorithm)
FUNCTIONS: tuple[Callable[..., Any], ...] = (
    maddpg.gumbel_softmax_sample, maddpg.squashed_gaussian_sample, maddpg.maddpg_target_q, maddpg.maddpg_actor_loss,
    qmix.qmix_target_max_q, qmix.qmix_td_loss,
    coma.coma_policy_probs, coma.coma_counterfactual_advantage, coma.coma_td_lambda_targets, coma.coma_critic_loss,
    coma.coma_actor_loss,
)


def bind(ops: Any, module: str) -> dict[str, Callable[..., Any]]:
    """:data:`FUNCTIONS` with ``ops`` bound, by name, for the backend module ``module`` to export.

    Each has its function's name, docstring and signature without ``ops`` (what ``help`` and autodoc show).
    """
    bound = {}
    for fn in FUNCTIONS:
        partial = functools.partial(fn, ops)
        signature = inspect.signature(fn)
        partial.__signature__ = signature.replace(parameters=list(signature.parameters.values())[1:])
        partial.__name__ = partial.__qualname__ = fn.__name__
        partial.__doc__, partial.__module__ = fn.__doc__, module
        bound[fn.__name__] = partial
    return bound
