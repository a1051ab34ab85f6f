"""REINFORCE (Williams 1992, "Simple statistical gradient-following algorithms for connectionist
reinforcement learning"), with PARL's ``PolicyGradient`` API; written once for torch and paddle."""

from __future__ import annotations

from typing import Any, ClassVar

from parl_algorithms._validation import check_model_method, positive

__all__ = ["PolicyGradient"]


class PolicyGradient:
    """Monte-Carlo policy gradient for discrete actions.

    ``loss = mean(-log pi(a_t | s_t) * G_t)`` where ``G_t`` is the (usually normalised) return the
    caller passes as ``reward``, optimised with Adam.

    The model must define ``forward(obs) -> probs``: float32 ``[B, act_dim]`` action probabilities
    (a softmax output, as in PARL's quickstart).

    Args:
        model: the policy network (a ``parl.Model`` of the class's framework).
        lr: Adam learning rate (> 0).
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model does not define ``forward``, or ``lr`` is missing / not positive.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops

    def __init__(self, model: Any, lr: float | None = None, *, device: Any = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "forward", type(self).__name__)
        self.lr = positive(lr, "lr", "PolicyGradient", "1e-3")
        self.optimizer = self.ops.adam(self.model.parameters(), lr=self.lr)

    def _probs(self, obs: Any) -> Any:
        probs = self.model(obs)
        if not isinstance(probs, self.ops.Tensor) or len(probs.shape) not in (1, 2):
            raise ValueError("PolicyGradient: model.forward(obs) must return action probabilities float32 "
                             "[B, act_dim] (end the network with softmax)")
        return probs

    def predict(self, obs: Any) -> Any:
        """Action probabilities.

        Args:
            obs: float32 ``[B, obs_dim]`` (or ``[obs_dim]``).

        Returns:
            float32 ``[B, act_dim]`` probabilities (``model.forward(obs)``).

        Raises:
            TypeError: ``obs`` is not numeric.
            ValueError: the model rejects the shape of ``obs`` or does not return probabilities.
        """
        (obs,) = self.ops.to_device(self.device, obs)
        try:
            return self._probs(self.ops.as_float(obs, "obs"))
        except (ValueError, RuntimeError) as err:
            self.ops.shape_error(self, "predict", err, (obs,))
            raise

    def sample(self, obs: Any) -> Any:
        """Sample actions from the policy.

        Args:
            obs: float32 ``[B, obs_dim]`` (or ``[obs_dim]``).

        Returns:
            int64 ``[B]`` (or a 0-d tensor for one observation) sampled action indices.
        """
        return self.ops.categorical_sample(self.predict(obs))

    def learn(self, obs: Any, action: Any, reward: Any) -> Any:
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
        ops = self.ops
        obs, action, reward = args = ops.to_device(self.device, obs, action, reward)
        try:
            obs = ops.as_float(obs, "obs")
            action = ops.as_int64(action, self.device).reshape([-1])
            reward = ops.as_float(reward, "reward").reshape([-1])
            probs = self._probs(obs)
            if len(probs.shape) != 2 or probs.shape[0] != action.shape[0] or reward.shape[0] != action.shape[0]:
                raise ValueError(f"PolicyGradient.learn: obs {tuple(obs.shape)}, action {tuple(action.shape)} and "
                                 f"reward {tuple(reward.shape)} must share the batch size B (obs [B, obs_dim], "
                                 "action [B], reward [B])")
            low, high = ops.value_range(action)
            if low < 0 or high >= probs.shape[1]:
                raise ValueError(f"PolicyGradient.learn: action indices must lie in [0, {probs.shape[1]}); "
                                 "PolicyGradient supports discrete action spaces only")
            chosen = ops.take_along_axis(probs, action.unsqueeze(1), 1).squeeze(1)
            loss = (-chosen.clip(min=1e-8).log() * reward).mean()
            ops.step(self.optimizer, loss)
            return loss
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise
