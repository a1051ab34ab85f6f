"""What ``Agent`` means on every backend: numpy in, numpy out around the algorithm, weights and modes.

``parl_core.torch.Agent`` and ``parl_core.paddle.Agent`` subclass :class:`AgentBase` and add their
framework's tensor conversion (``_call``) and checkpoints; this module imports no deep-learning framework.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["AgentBase"]


class AgentBase:
    """Framework-neutral half of ``Agent``: ``learn`` / ``predict`` / ``sample``, weights, train / eval."""

    alg: Any
    training: bool

    def _call(self, method: str, args: tuple, kwargs: dict) -> Any:
        """Run ``self.alg.<method>`` on tensors made from ``args`` / ``kwargs``; return numpy (per backend)."""
        raise NotImplementedError

    def learn(self, *args: Any, **kwargs: Any) -> Any:
        """Call ``self.alg.learn`` with numpy arguments converted to tensors; return numpy."""
        return self._call("learn", args, kwargs)

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Call ``self.alg.predict`` without gradients; return numpy."""
        return self._call("predict", args, kwargs)

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """Call ``self.alg.sample`` without gradients; return numpy."""
        return self._call("sample", args, kwargs)

    # -- weights ---------------------------------------------------------------------------------
    def get_weights(self) -> dict[str, np.ndarray]:
        """Weights of the algorithm's main model, ``{name: np.ndarray}`` (PARL's; see ``Algorithm.get_weights``)."""
        return self.alg.get_weights()

    def set_weights(self, weights: dict[str, Any]) -> None:
        """Load weights from ``get_weights`` or ``Algorithm.get_all_weights`` (see ``Algorithm.set_weights``)."""
        self.alg.set_weights(weights)

    # -- modes -----------------------------------------------------------------------------------
    def train(self) -> None:
        """Put every model of the algorithm in training mode (dropout, batch-norm updates)."""
        for model in self.alg.models().values():
            model.train()
        self.training = True

    def eval(self) -> None:
        """Put every model of the algorithm in evaluation mode."""
        for model in self.alg.models().values():
            model.eval()
        self.training = False
