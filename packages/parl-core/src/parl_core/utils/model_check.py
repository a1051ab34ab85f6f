"""``check_model_method``: the duck-typed contract between an algorithm and the user's model."""

from __future__ import annotations

from typing import Any

__all__ = ["check_model_method"]


def _overrides_forward(model: Any) -> bool:
    """True when ``type(model)`` defines ``forward`` itself rather than inheriting a framework default."""
    for cls in type(model).__mro__:
        if "forward" in vars(cls):
            module = getattr(cls, "__module__", "") or ""
            # torch.nn.Module / paddle.nn.Layer / parl_core bases provide placeholders only.
            return not (module.startswith("torch.") or module.startswith("paddle.")
                        or module.startswith("parl_core."))
    return False


def check_model_method(model: Any, method: str, algo_name: str) -> None:
    """Check that ``model`` defines the method ``method`` an algorithm needs (PARL's contract).

    Args:
        model: the user's model (a ``parl.Model``).
        method: the method name the algorithm calls, e.g. ``"forward"``, ``"value"``, ``"policy"``.
        algo_name: the algorithm's name, used in the message (e.g. ``"PPO"``).

    Raises:
        ValueError: ``model`` has no callable ``method``; for ``"forward"``, also when the model's class
            does not override ``forward`` (``torch.nn.Module``'s placeholder would fail at run time).
    """
    attr = getattr(model, method, None)
    if attr is None or not callable(attr):
        raise ValueError(f"{algo_name} needs the model to define `{method}`: add a method "
                         f"`def {method}(self, ...)` to {type(model).__name__}")
    if method == "forward" and not _overrides_forward(model):
        raise ValueError(f"{algo_name} needs the model to define `forward`: {type(model).__name__} inherits "
                         "the framework's placeholder; add `def forward(self, obs)` to the class")
