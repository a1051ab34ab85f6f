"""What ``Algorithm`` means on every backend: the interface, the models it owns, and their weights.

``parl_core.torch.Algorithm`` and ``parl_core.paddle.Algorithm`` subclass :class:`AlgorithmBase` and add
their framework's checkpoints; this module imports no deep-learning framework.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np

__all__ = ["AlgorithmBase"]


class AlgorithmBase:
    """Framework-neutral half of ``Algorithm``: ``learn`` / ``predict`` / ``sample`` and weights.

    Every model attribute (``self.model``, ``self.target_model``, models inside a list, tuple or dict
    attribute) is one of :meth:`models`. :meth:`get_weights` is PARL's: the main model's
    ``{name: np.ndarray}``; :meth:`get_all_weights` has every model.
    """

    #: the backend's ``Model`` class; set by each backend's ``Algorithm``
    _model_type: ClassVar[type]

    model: Any

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
        for attr, value in vars(self).items():
            if isinstance(value, kinds):
                yield attr, value
            elif isinstance(value, (list, tuple)):
                yield from ((f"{attr}.{i}", v) for i, v in enumerate(value) if isinstance(v, kinds))
            elif isinstance(value, Mapping):
                yield from ((f"{attr}.{k}", v) for k, v in value.items() if isinstance(v, kinds))

    def models(self) -> dict[str, Any]:
        """Every model the algorithm owns, by attribute name (``"model"``, ``"target_model"``, ...)."""
        return dict(self._named((self._model_type,)))

    def get_weights(self) -> dict[str, np.ndarray]:
        """Weights of the main model ``self.model`` (PARL's ``Algorithm.get_weights``).

        Returns:
            ``{parameter name: np.ndarray}``, the model's ``state_dict`` as numpy arrays. Target
            networks are not included (as in PARL); :meth:`get_all_weights` has every model.

        Raises:
            ValueError: the algorithm has no ``self.model`` (use :meth:`get_all_weights`).
        """
        if self.model is None:
            raise ValueError(f"{type(self).__name__} has no self.model; use get_all_weights() for the weights of "
                             f"the models it owns ({sorted(self.models())})")
        return self.model.get_weights()

    def get_all_weights(self) -> dict[str, dict[str, np.ndarray]]:
        """Weights of every model the algorithm owns, target networks included.

        Returns:
            ``{attribute: {name: np.ndarray}}``, e.g. ``{"model": ..., "target_model": ...}``.
        """
        return {key: model.get_weights() for key, model in self.models().items()}

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        """Load weights from :meth:`get_weights` (into ``self.model``) or :meth:`get_all_weights` (every model).

        Raises:
            TypeError: ``weights`` is not a mapping.
            ValueError: a model is missing or unexpected, or a model's keys / shapes differ.
        """
        if not isinstance(weights, Mapping):
            raise TypeError(f"set_weights expects the dict returned by get_weights(), got {type(weights).__name__}")
        if not weights or not all(isinstance(value, Mapping) for value in weights.values()):
            if self.model is None:
                raise ValueError(f"{type(self).__name__} has no self.model to load {{name: array}} weights into; "
                                 "pass the output of get_all_weights()")
            self.model.set_weights(weights)
            return
        models = self.models()
        if set(weights) != set(models):
            raise ValueError(f"{type(self).__name__}.set_weights: weights cover models {sorted(weights)}, the "
                             f"algorithm owns {sorted(models)}; pass the output of get_all_weights()")
        for key, model in models.items():
            model.set_weights(weights[key])
