"""``Algorithm``: losses and optimizers over one or more ``Model``s."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch

from parl_core.torch.model import Model

__all__ = ["Algorithm"]

_StateHolder = (Model, torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler)


class Algorithm:
    """Base class of an algorithm: defines ``learn``, ``predict`` and ``sample`` over ``self.model``.

    Every ``Model`` attribute of the algorithm (``self.model``, ``self.target_model``, models inside a
    list, tuple or dict attribute) is covered by :meth:`get_weights` / :meth:`set_weights`; every
    model, optimizer, LR scheduler and tensor attribute (e.g. SAC's ``log_alpha``), plus the attribute
    names listed in ``checkpoint_attrs`` (counters such as a policy-delay step), is covered by
    :meth:`state_dict` / :meth:`load_state_dict`, which ``Agent.save`` / ``Agent.restore`` use.

    Args:
        model: the algorithm's main model.

    Raises:
        TypeError: ``model`` is not a ``parl.Model``.
    """

    checkpoint_attrs: tuple[str, ...] = ()

    def __init__(self, model: Model | None = None) -> None:
        if model is not None and not isinstance(model, Model):
            if any(cls.__module__.startswith(("paddle", "parl_core.paddle")) for cls in type(model).__mro__):
                raise TypeError(f"{type(self).__name__} is a PyTorch algorithm but got the paddle model "
                                f"{type(model).__name__}; build it on parl_core.torch.Model (torch.nn layers), or "
                                "use the paddle algorithm (parl_algorithms.paddle, export PARL_BACKEND=paddle)")
            raise TypeError(f"{type(self).__name__} expects a parl.Model (a torch.nn.Module subclass of "
                            f"parl.Model), got {type(model).__name__}; define `class MyModel(parl.Model)`")
        self.model = model

    # -- the algorithm's interface -------------------------------------------------------------
    def learn(self, *args: Any, **kwargs: Any) -> Any:
        """Update the model(s) from a batch; defined by each algorithm."""
        raise NotImplementedError(f"{type(self).__name__} does not define learn()")

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Return the greedy / deterministic output for evaluation; defined by each algorithm."""
        raise NotImplementedError(f"{type(self).__name__} does not define predict()")

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """Return an exploratory output for data collection; defined by each algorithm."""
        raise NotImplementedError(f"{type(self).__name__} does not define sample()")

    # -- the models it owns ------------------------------------------------------------------------
    def _named(self, kinds: tuple[type, ...]) -> Iterator[tuple[str, Any]]:
        """Yield ``(key, obj)`` for attributes of the given kinds, one level into containers."""
        for attr, value in vars(self).items():
            if isinstance(value, kinds):
                yield attr, value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, kinds):
                        yield f"{attr}.{i}", item
            elif isinstance(value, Mapping):
                for key, item in value.items():
                    if isinstance(item, kinds):
                        yield f"{attr}.{key}", item

    def models(self) -> dict[str, Model]:
        """Every model the algorithm owns, by attribute name (``"model"``, ``"target_model"``, ...)."""
        return dict(self._named((Model,)))

    def get_weights(self) -> dict[str, dict]:
        """Weights of every model the algorithm owns, target networks included.

        Returns:
            ``{attribute: {name: np.ndarray}}``, e.g. ``{"model": ..., "target_model": ...}``.
        """
        return {key: model.get_weights() for key, model in self.models().items()}

    def set_weights(self, weights: Mapping[str, Mapping]) -> None:
        """Load weights produced by :meth:`get_weights`.

        Raises:
            TypeError: ``weights`` is not a mapping.
            ValueError: a model is missing or unexpected, or a model's keys / shapes differ.
        """
        if not isinstance(weights, Mapping):
            raise TypeError(f"set_weights expects the dict returned by get_weights(), got {type(weights).__name__}")
        models = self.models()
        if set(weights) != set(models):
            raise ValueError(f"{type(self).__name__}.set_weights: weights cover models {sorted(weights)}, the "
                             f"algorithm owns {sorted(models)}; pass the output of get_weights()")
        for key, model in models.items():
            model.set_weights(weights[key])

    # -- checkpoints -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume training exactly: models, optimizers, schedulers, tensors."""
        state: dict[str, Any] = {}
        for key, obj in self._named(_StateHolder):
            state[key] = obj.state_dict()
        for key, tensor in self._named((torch.Tensor,)):
            state[key] = tensor.detach().clone()
        for attr in self.checkpoint_attrs:
            state[attr] = getattr(self, attr)
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned.

        Raises:
            ValueError: the checkpoint's entries do not match this algorithm's (another algorithm or
                another architecture wrote it).
        """
        holders = dict(self._named(_StateHolder))
        tensors = dict(self._named((torch.Tensor,)))
        expected = set(holders) | set(tensors) | set(self.checkpoint_attrs)
        if set(state) != expected:
            raise ValueError(f"checkpoint does not match {type(self).__name__}: it has {sorted(state)}, "
                             f"expected {sorted(expected)}; restore it into the agent that saved it")
        for key, obj in holders.items():
            if isinstance(obj, Model):
                obj.set_weights(state[key])
            else:
                obj.load_state_dict(state[key])
        with torch.no_grad():
            for key, tensor in tensors.items():
                tensor.copy_(state[key].to(tensor.device))
        for attr in self.checkpoint_attrs:
            setattr(self, attr, state[attr])
