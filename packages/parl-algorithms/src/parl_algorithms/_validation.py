"""Input validation shared by the algorithms: model-method checks and tensor shape checks."""

from __future__ import annotations

from typing import Any

__all__ = ["check_model_method", "as_float_tensor", "positive", "nonnegative", "unit_interval", "mlp_sizes",
           "mlp_activation"]

MLP_ACTIVATIONS = ("relu", "tanh")


def check_model_method(model: Any, method: str, algo_name: str) -> None:
    """Raise ``ValueError`` when ``model`` lacks a callable ``method`` (PARL's model-method contract).

    Delegates to ``parl_core.utils.check_model_method`` when it exists, so the message is the same
    across packages.

    Args:
        model: the user's ``parl.Model``.
        method: the method the algorithm calls, e.g. ``"value"``.
        algo_name: the algorithm's name, used in the message.

    Raises:
        ValueError: the method is missing (or, for ``forward``, not overridden).
    """
    try:
        from parl_core.utils import check_model_method as core_check
    except ImportError:
        core_check = None
    if core_check is not None:
        core_check(model, method, algo_name)
        return
    func = getattr(model, method, None)
    if not callable(func):
        raise ValueError(f"{algo_name} needs the model to define `{method}`; add a method "
                         f"`def {method}(self, ...)` to {type(model).__name__}")
    if method == "forward":
        import torch

        if type(model).forward is torch.nn.Module.forward:
            raise ValueError(f"{algo_name} needs the model to define `forward`; override "
                             f"`def forward(self, obs)` in {type(model).__name__}")


def as_float_tensor(value: Any, name: str, device: Any = None) -> Any:
    """Convert ``value`` (tensor / numpy / list) to a float32 tensor on ``device``.

    Raises:
        TypeError: ``value`` is not numeric.
    """
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        if not (value.is_floating_point() or value.dtype in (torch.int32, torch.int64, torch.bool, torch.uint8)):
            raise TypeError(f"{name} must be a numeric tensor, got {value.dtype}")
        out = value if value.dtype == torch.float32 else value.float()
        return out if device is None else out.to(device)
    array = np.asarray(value)
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise TypeError(f"{name} must be numeric, got dtype {array.dtype}; pass np.asarray(x, dtype=np.float32)")
    return torch.as_tensor(array, dtype=torch.float32, device=device)


def positive(value: Any, name: str, algo: str, example: str) -> float:
    """Return ``float(value)`` or raise ``ValueError`` when it is missing or not > 0."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{algo} needs {name} > 0, got {name}={value!r}; e.g. {algo}(model, {name}={example})")
    return float(value)


def nonnegative(value: Any, name: str, algo: str, example: str) -> float:
    """Return ``float(value)`` or raise ``ValueError`` when it is missing or negative."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{algo} needs {name} >= 0, got {name}={value!r}; e.g. {algo}(model, {name}={example})")
    return float(value)


def unit_interval(value: Any, name: str, algo: str, example: str) -> float:
    """Return ``float(value)`` or raise ``ValueError`` when it is missing or outside ``[0, 1]``."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{algo} needs {name} in [0, 1], got {name}={value!r}; e.g. {algo}(model, {name}={example})")
    return float(value)


def mlp_sizes(sizes: Any, cls: str) -> list[int]:
    """``sizes`` as a list of at least two positive ints (an MLP's ``[in, hidden..., out]``).

    Raises:
        ValueError: fewer than two sizes, or one that is not a positive int; the message shows a valid call.
    """
    sizes = list(sizes)
    if len(sizes) < 2 or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes):
        raise ValueError(f"{cls} needs sizes [in, hidden..., out] of at least two positive ints, got {sizes!r}; "
                         f"e.g. {cls}([obs_dim, 64, 64, num_actions])")
    return sizes


def mlp_activation(name: Any) -> str:
    """``name`` if it is one of :data:`MLP_ACTIVATIONS`.

    Raises:
        ValueError: an unknown activation name.
    """
    if name not in MLP_ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(MLP_ACTIVATIONS)}, got {name!r}")
    return name
