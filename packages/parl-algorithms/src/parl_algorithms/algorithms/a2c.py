"""A2C (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", synchronous variant)
with PARL's ``A2C`` API; written once for torch and paddle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from parl_algorithms._validation import check_model_method, positive
from parl_algorithms.algorithms._acting import act

__all__ = ["A2C"]


class A2C:
    """Advantage actor-critic for discrete actions.

    ``loss = pi_loss + vf_loss_coeff * vf_loss + entropy_coeff * entropy`` with
    ``pi_loss = -sum(log pi(a|s) * adv)``, ``vf_loss = 0.5 * sum((V(s) - target)^2)`` and
    ``entropy = sum(H(pi(.|s)))`` (PARL's sums; ``reduction="mean"`` averages over the batch instead), Adam with
    the global gradient norm clipped to 40 (PARL). PARL's ``entropy_coeff`` is negative (e.g. ``-0.01``) to
    reward entropy.

    The model must define ``policy(obs) -> logits`` float32 ``[B, num_actions]`` and
    ``value(obs) -> float32 [B] or [B, 1]``; ``policy_and_value(obs)`` is used when defined.

    Both of PARL's constructors work on both backends: torch's ``A2C(model, config)`` and paddle's
    ``A2C(model, vf_loss_coeff)``.

    Args:
        model: the actor-critic model (a ``parl.Model`` of the class's framework).
        config: PARL's torch dict with ``vf_loss_coeff`` and ``learning_rate`` (the keyword arguments below take
            precedence when given), or a number: PARL's paddle positional ``vf_loss_coeff``.
        vf_loss_coeff: weight of the value loss (>= 0; default 0.5).
        learning_rate: initial Adam learning rate (> 0; default 1e-3; ``learn(..., learning_rate)`` sets it per
            call, as PARL).
        max_grad_norm: global gradient-norm clip (PARL: 40); ``None`` does not clip.
        reduction: ``"sum"`` (PARL) or ``"mean"``.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks ``policy`` / ``value``, or a hyperparameter is out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops

    def __init__(self, model: Any, config: Mapping[str, Any] | float | None = None, *,
                 vf_loss_coeff: float | None = None, learning_rate: float | None = None,
                 max_grad_norm: float | None = 40.0, reduction: str = "sum", device: Any = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "value", "A2C")
        check_model_method(model, "policy", "A2C")
        if config is not None and not isinstance(config, Mapping):  # PARL paddle's A2C(model, vf_loss_coeff)
            config = {"vf_loss_coeff": config}
        config = dict(config or {})
        vf = vf_loss_coeff if vf_loss_coeff is not None else config.get("vf_loss_coeff", 0.5)
        lr = learning_rate if learning_rate is not None else config.get("learning_rate", 1e-3)
        if isinstance(vf, bool) or not isinstance(vf, (int, float)) or vf < 0:
            raise ValueError(f"A2C: vf_loss_coeff must be a number >= 0, got {vf!r}; "
                             "e.g. A2C(model, vf_loss_coeff=0.5)")
        self.vf_loss_coeff = float(vf)
        self.learning_rate = positive(lr, "learning_rate", "A2C", "1e-3")
        self.max_grad_norm = None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "A2C", "40")
        if reduction not in ("sum", "mean"):
            raise ValueError(f"A2C: reduction must be 'sum' or 'mean', got {reduction!r}")
        self.reduction = reduction
        self.optimizer = self.ops.adam(self.model.parameters(), lr=self.learning_rate,
                                       max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _logits(self, obs: Any) -> Any:
        logits = self.model.policy(obs)
        if isinstance(logits, (tuple, list)) or len(logits.shape) != 2:
            raise ValueError("A2C needs model.policy(obs) to return logits float32 [B, num_actions]; A2C supports "
                             "Discrete action spaces only (use PPO(continuous_action=True) or SAC for Box)")
        return logits

    @staticmethod
    def _flat(value: Any) -> Any:
        return value.squeeze(1) if len(value.shape) == 2 and value.shape[1] == 1 else value

    def _policy_and_value(self, obs: Any) -> tuple[Any, Any]:
        fused = getattr(self.model, "policy_and_value", None)
        if callable(fused):
            logits, value = fused(obs)
            return logits, self._flat(value)
        return self._logits(obs), self._flat(self.model.value(obs))

    def _sample(self, obs: Any) -> tuple[Any, Any]:
        logits, value = self._policy_and_value(obs)
        return self.ops.F.softmax(logits, -1).multinomial(1).squeeze(1), value

    def sample(self, obs: Any) -> tuple[Any, Any]:
        """Sample actions.

        Args:
            obs: float32 ``[B, *obs_shape]``, or one vector observation ``[obs_dim]``.

        Returns:
            ``(action int64 [B], value float32 [B])`` (0-d each for one observation).
        """
        return act(self, "sample", obs, self._sample)

    def predict(self, obs: Any) -> Any:
        """Greedy actions int64 ``[B]`` (0-d for one observation) for obs ``[B, *obs_shape]`` (or ``[obs_dim]``)."""
        return act(self, "predict", obs, lambda x: self._logits(x).argmax(-1))

    def value(self, obs: Any) -> Any:
        """State values float32 ``[B]`` for obs ``[B, *obs_shape]`` (0-d for one observation ``[obs_dim]``)."""
        return act(self, "value", obs, lambda x: self._flat(self.model.value(x)))

    def _prob_and_value(self, obs: Any) -> tuple[Any, Any]:
        logits, value = self._policy_and_value(obs)
        return self.ops.F.softmax(logits, -1), value

    def prob_and_value(self, obs: Any) -> tuple[Any, Any]:
        """``(probs float32 [B, num_actions], value float32 [B])`` for obs ``[B, *obs_shape]`` (or ``[obs_dim]``)."""
        return act(self, "prob_and_value", obs, self._prob_and_value)

    def learn(self, obs: Any, actions: Any, advantages: Any, target_values: Any,
              learning_rate: float | None = None, entropy_coeff: float = -0.01) -> tuple[Any, Any, Any, Any]:
        """One Adam step.

        Args:
            obs: float32 ``[B, *obs_shape]``.
            actions: int64 ``[B]``.
            advantages: float32 ``[B]``.
            target_values: float32 ``[B]`` value targets (n-step or GAE returns).
            learning_rate: if given, set the optimizer's learning rate first (PARL passes it every call).
            entropy_coeff: multiplies the entropy in the loss (negative rewards entropy; PARL's sign).

        Returns:
            ``(total_loss, pi_loss, vf_loss, entropy)`` scalar tensors (PARL's return).

        Raises:
            ValueError: shapes do not fit (the message names the argument), or an action is not an index of the
                model's ``[0, num_actions)``.
        """
        ops = self.ops
        obs, actions, advantages, target_values = args = ops.to_device(self.device, obs, actions, advantages,
                                                                       target_values)
        try:
            obs = ops.obs_batch(obs, "A2C")
            batch = obs.shape[0]
            advantages = ops.column(advantages, "advantages", batch, "A2C")
            target_values = ops.column(target_values, "target_values", batch, "A2C")
            logits, values = self._policy_and_value(obs)
            actions = ops.discrete_actions(actions, batch, logits.shape[1], "A2C")
            action_log_probs, entropy_per = ops.functional.categorical_log_prob_entropy(logits, actions)
            total = self.reduction == "sum"
            pi_loss = -(action_log_probs * advantages).sum() if total else -(action_log_probs * advantages).mean()
            squared = (values - target_values).pow(2)
            vf_loss = 0.5 * (squared.sum() if total else squared.mean())
            entropy = entropy_per.sum() if total else entropy_per.mean()
            total_loss = pi_loss + self.vf_loss_coeff * vf_loss + float(entropy_coeff) * entropy
            if learning_rate is not None:
                ops.set_lr(self.optimizer, learning_rate)
            ops.step(self.optimizer, total_loss, self.max_grad_norm)
            self.last_info = {"train/pi_loss": ops.info_scalar(pi_loss), "train/vf_loss": ops.info_scalar(vf_loss),
                              "train/entropy": ops.info_scalar(entropy)}
            return total_loss, pi_loss, vf_loss, entropy
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call."""
        return dict(self.last_info)
