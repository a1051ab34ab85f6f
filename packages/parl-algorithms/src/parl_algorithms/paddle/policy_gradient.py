"""REINFORCE (Williams 1992, "Simple statistical gradient-following algorithms for connectionist
reinforcement learning") on PaddlePaddle, with PARL's paddle ``PolicyGradient`` API."""

from __future__ import annotations

import paddle

from parl_algorithms._validation import check_model_method
from parl_algorithms.paddle._common import (
    adam,
    as_float,
    positive,
    readable_shape_errors,
    rewrite_shape_error,
    step,
)
from parl_core.paddle import Algorithm, Model

__all__ = ["PolicyGradient"]


class PolicyGradient(Algorithm):
    """Monte-Carlo policy gradient for discrete actions: ``loss = mean(-log pi(a_t | s_t) * G_t)``, Adam.

    The model must define ``forward(obs) -> probs``: float32 ``[B, act_dim]`` action probabilities.

    Args:
        model: the policy network (a ``parl_core.paddle.Model``).
        lr: Adam learning rate (> 0).
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device for this algorithm (set
            process-wide with ``paddle.set_device``); default paddle's own (the GPU in a CUDA build).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model does not define ``forward``, or ``lr`` is missing / not positive.
    """

    def __init__(self, model: Model, lr: float | None = None, *, device: str | None = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "forward", type(self).__name__)
        self.lr = positive(lr, "lr", "PolicyGradient", "1e-3")
        self.optimizer = adam(self.model.parameters(), lr=self.lr)

    def _probs(self, obs: paddle.Tensor) -> paddle.Tensor:
        probs = self.model(obs)
        if not isinstance(probs, paddle.Tensor) or len(probs.shape) not in (1, 2):  # (paddle 2.6: ndim is Python)
            raise ValueError("PolicyGradient: model.forward(obs) must return action probabilities float32 "
                             "[B, act_dim] (end the network with softmax)")
        return probs

    def predict(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Action probabilities float32 ``[B, act_dim]`` of obs ``[B, obs_dim]`` (or ``[obs_dim]``)."""
        try:  # (not @readable_shape_errors: see rewrite_shape_error)
            return self._probs(as_float(obs, "obs"))
        except (ValueError, RuntimeError) as err:
            rewrite_shape_error(self, "predict", err, (obs,))
            raise

    @readable_shape_errors
    def sample(self, obs: paddle.Tensor) -> paddle.Tensor:
        """Sampled action indices int64 ``[B]`` (0-d for one observation)."""
        probs = self.predict(obs)
        flat = probs.reshape([-1, probs.shape[-1]])
        action = paddle.multinomial(flat, 1).squeeze(1)
        return action.reshape(probs.shape[:-1])

    @readable_shape_errors
    def learn(self, obs: paddle.Tensor, action: paddle.Tensor, reward: paddle.Tensor) -> paddle.Tensor:
        """One gradient step on ``mean(-log pi(a|s) * reward)``.

        Args:
            obs: float32 ``[B, obs_dim]``.
            action: int64 ``[B]`` or ``[B, 1]`` action indices.
            reward: float32 ``[B]`` or ``[B, 1]`` returns (or advantages) weighting each log-prob.

        Returns:
            the scalar loss tensor (before the step).

        Raises:
            ValueError: batch sizes differ or an action index is out of range.
        """
        obs = as_float(obs, "obs")
        action = (action if isinstance(action, paddle.Tensor) else paddle.to_tensor(action)).reshape([-1])
        action = action.astype("int64")
        reward = as_float(reward, "reward").reshape([-1])
        probs = self._probs(obs)
        if probs.ndim != 2 or probs.shape[0] != action.shape[0] or reward.shape[0] != action.shape[0]:
            raise ValueError(f"PolicyGradient.learn: obs {tuple(obs.shape)}, action {tuple(action.shape)} and "
                             f"reward {tuple(reward.shape)} must share the batch size B (obs [B, obs_dim], "
                             "action [B], reward [B])")
        values = action.numpy()  # one host read, checked in numpy (two reductions read back cost ~2x more)
        if values.size and (values.min() < 0 or values.max() >= probs.shape[1]):
            raise ValueError(f"PolicyGradient.learn: action indices must lie in [0, {probs.shape[1]}); "
                             "PolicyGradient supports discrete action spaces only")
        chosen = paddle.take_along_axis(probs, action.unsqueeze(1), axis=1).squeeze(1)
        loss = paddle.mean(-paddle.log(paddle.clip(chosen, min=1e-8)) * reward)
        step(self.optimizer, loss)
        return loss
