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

from parl_algorithms.algorithms import coma, maddpg, mappo, qmix

__all__ = ["FUNCTIONS", "bind"]

#: the functions, in the backends' module order (one section per algorithm)
FUNCTIONS: tuple[Callable[..., Any], ...] = (
    maddpg.gumbel_softmax_sample, maddpg.squashed_gaussian_sample, maddpg.maddpg_target_q, maddpg.maddpg_actor_loss,
    qmix.qmix_target_max_q, qmix.qmix_td_loss,
    mappo.masked_mean, mappo.huber_loss, mappo.mappo_value_loss, mappo.mappo_policy_loss, mappo.popart_update,
    mappo.popart_debiased_mean_var, mappo.popart_preserve_outputs,
    coma.coma_policy_probs, coma.coma_counterfactual_advantage, coma.coma_td_lambda_targets, coma.coma_critic_loss,
    coma.coma_actor_loss,
)


def bind(ops: Any, namespace: dict[str, Any], **keywords: dict[str, Any]) -> list[str]:
    """Define :data:`FUNCTIONS` with ``ops`` bound in ``namespace`` (a backend module's ``globals()``); return their
    names (the module's ``__all__``).

    Each has its function's name, docstring and signature without ``ops`` (what ``help`` and autodoc show), and
    without the keyword arguments ``keywords[name]`` binds (``popart_preserve_outputs={"out_axis": 0}``: the
    framework's Linear layout).
    """
    for fn in FUNCTIONS:
        fixed = keywords.get(fn.__name__, {})
        partial = functools.partial(fn, ops, **fixed)
        signature = inspect.signature(fn)
        parameters = [p for p in list(signature.parameters.values())[1:] if p.name not in fixed]
        partial.__signature__ = signature.replace(parameters=parameters)
        partial.__name__ = partial.__qualname__ = fn.__name__
        partial.__doc__, partial.__module__ = fn.__doc__, namespace["__name__"]
        namespace[fn.__name__] = partial
    return [fn.__name__ for fn in FUNCTIONS]
