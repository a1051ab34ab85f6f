"""A3C's loss (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning", Algorithm S3),
the update shared by synchronous A2C and GA3C (Babaeizadeh et al. 2017, "Reinforcement Learning through
Asynchronous Advantage Actor-Critic on a GPU"), with PARL's ``A3C`` API (PARL 2.2.1 has A3C on fluid only:
``A3C(model, vf_loss_coeff=None)``); written once for torch and paddle."""

from __future__ import annotations

from typing import Any, ClassVar

from parl_algorithms._validation import check_model_method, positive
from parl_algorithms.algorithms._acting import act

__all__ = ["A3C"]


def _hyperparameters(vf_loss_coeff: Any, max_grad_norm: Any, reduction: Any) -> dict[str, Any]:
    """A3C's checked constructor arguments: ``{"vf_loss_coeff": float, "max_grad_norm": float or None,
    "reduction": "sum" | "mean"}``.

    Raises:
        ValueError: ``vf_loss_coeff`` is missing or negative, ``max_grad_norm`` not > 0, or ``reduction``
            unknown.
    """
    if vf_loss_coeff is None or isinstance(vf_loss_coeff, bool) or not isinstance(vf_loss_coeff, (int, float)) \
            or not vf_loss_coeff >= 0:
        raise ValueError(f"A3C needs vf_loss_coeff >= 0, got vf_loss_coeff={vf_loss_coeff!r}; "
                         "e.g. A3C(model, vf_loss_coeff=0.5)")
    max_grad_norm = None if max_grad_norm is None else positive(max_grad_norm, "max_grad_norm", "A3C", "40")
    if reduction not in ("sum", "mean"):
        raise ValueError(f"A3C: reduction must be 'sum' (PARL) or 'mean', got {reduction!r}")
    return {"vf_loss_coeff": float(vf_loss_coeff), "max_grad_norm": max_grad_norm, "reduction": reduction}


def _logits(logits: Any, batch: int) -> Any:
    """``logits`` (any tensor type) if it is ``[B, num_actions]``.

    Raises:
        ValueError: not a 2-D tensor of ``batch`` rows (e.g. a continuous policy's ``(mean, std)``).
    """
    if isinstance(logits, (tuple, list)) or getattr(logits, "ndim", 0) != 2 or logits.shape[0] != batch:
        got = f"a {type(logits).__name__}" if isinstance(logits, (tuple, list)) else \
            f"shape {tuple(getattr(logits, 'shape', ()))}"
        raise ValueError(f"A3C needs model.policy(obs) to return logits float32 [B, num_actions], got {got}; "
                         "A3C is for Discrete action spaces (for a continuous Box space use "
                         "PPO(continuous_action=True), SAC or TD3)")
    return logits


def _value(value: Any, batch: int) -> Any:
    """``value`` (any tensor type) ``[B]`` or ``[B, 1]`` as ``[B]``.

    Raises:
        ValueError: another shape.
    """
    if value.ndim == 2 and value.shape[1] == 1:
        value = value.squeeze(1)
    if value.ndim != 1 or value.shape[0] != batch:
        raise ValueError(f"A3C needs model.value(obs) to return float32 [B] or [B, 1], got shape "
                         f"{tuple(value.shape)} for B={batch}")
    return value


def _number(value: Any, name: str, example: str) -> float:
    """``float(value)`` of a Python / numpy number or a one-element tensor (``Agent.learn`` passes tensors).

    Raises:
        TypeError: ``value`` is not a number; the message gives ``name=example``.
    """
    if hasattr(value, "item") and _size(value) == 1:
        value = value.item()
    try:
        if isinstance(value, (bool, str, bytes)) or value is None:
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"A3C.learn: {name} must be a number, got {value!r}; e.g. {name}={example}") from None


def _size(value: Any) -> int:
    size = getattr(value, "size", None)  # numpy / paddle: an int; torch: a method
    if callable(size):
        size = value.numel()
    return int(size) if size is not None else -1


class A3C:
    """Advantage actor-critic loss with Adam, for discrete actions (PARL's ``A3C``; the same math and API on
    torch and paddle).

    ``total_loss = pi_loss + vf_loss_coeff * vf_loss + entropy_coeff * entropy`` with
    ``pi_loss = -sum(log pi(a|s) * advantages)``, ``vf_loss = 0.5 * sum((V(s) - target_values)^2)`` and
    ``entropy = sum(H(pi(.|s)))`` over the batch (PARL's sums; ``reduction="mean"`` averages instead),
    then one Adam step with the global gradient norm clipped to ``max_grad_norm`` (PARL: 40). PARL's
    ``entropy_coeff`` is negative (e.g. ``-0.01``) to reward entropy. The advantages and value targets (n-step
    returns or GAE) are computed by the caller, e.g. with ``parl.utils.compute_gae``; they are treated as
    constants.

    The model must define ``policy(obs) -> logits`` float32 ``[B, num_actions]`` and
    ``value(obs) -> float32 [B] or [B, 1]``; ``policy_and_value(obs) -> (logits, value)`` (one pass of a
    shared torso) is used when the model defines it.

    Args:
        model: the actor-critic model (a ``parl.Model`` of the class's framework).
        vf_loss_coeff: weight of the value loss, >= 0 (required, as in PARL; PARL's examples use 0.5).
        max_grad_norm: global gradient-norm clip (PARL: 40); ``None`` does not clip.
        reduction: ``"sum"`` over the batch (PARL) or ``"mean"``.
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda"``,
            ``"cuda:1"`` or a ``torch.device`` (default CUDA when available, PARL's rule); paddle ``"cpu"``,
            ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``), set process-wide (``paddle.set_device``; default paddle's own,
            the GPU in a CUDA build).

    Attributes:
        last_info: diagnostics of the last ``learn`` call: ``train/total_loss``, ``train/pi_loss``,
            ``train/vf_loss``, ``train/entropy``, ``train/grad_norm`` (before clipping), floats.

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks ``policy`` / ``value``, or a hyperparameter is missing or out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops

    def __init__(self, model: Any, vf_loss_coeff: float | None = None, *, max_grad_norm: float | None = 40.0,
                 reduction: str = "sum", device: Any = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "policy", "A3C")
        check_model_method(model, "value", "A3C")
        checked = _hyperparameters(vf_loss_coeff, max_grad_norm, reduction)
        self.vf_loss_coeff: float = checked["vf_loss_coeff"]
        self.max_grad_norm: float | None = checked["max_grad_norm"]
        self.reduction: str = checked["reduction"]
        # the learning rate is an argument of every learn() call (PARL's schedule lives in the caller)
        self.optimizer = self.ops.adam(self.model.parameters(), lr=1e-3, max_grad_norm=self.max_grad_norm)
        self.last_info: dict[str, float] = {}

    def _policy_and_value(self, obs: Any) -> tuple[Any, Any]:
        fused = getattr(self.model, "policy_and_value", None)
        logits, value = fused(obs) if callable(fused) else (self.model.policy(obs), self.model.value(obs))
        return _logits(logits, obs.shape[0]), _value(value, obs.shape[0])

    def _sample(self, obs: Any) -> tuple[Any, Any]:
        logits, value = self._policy_and_value(obs)
        return self.ops.F.softmax(logits, -1).multinomial(1).squeeze(1), value

    def sample(self, obs: Any) -> tuple[Any, Any]:
        """Sample actions from the policy (PARL: ``sample_actions, values``).

        Args:
            obs: float32 ``[B, *obs_shape]``.

        Returns:
            ``(actions int64 [B], values float32 [B])``.
        """
        return act(self, "sample", obs, self._sample, single=False)

    def predict(self, obs: Any) -> Any:
        """Greedy actions: int64 ``[B]`` for obs float32 ``[B, *obs_shape]``."""
        return act(self, "predict", obs, lambda x: _logits(self.model.policy(x), x.shape[0]).argmax(-1),
                   single=False)

    def value(self, obs: Any) -> Any:
        """State values ``V(s)``: float32 ``[B]`` for obs float32 ``[B, *obs_shape]``."""
        return act(self, "value", obs, lambda x: _value(self.model.value(x), x.shape[0]), single=False)

    def learn(self, obs: Any, actions: Any, advantages: Any, target_values: Any, learning_rate: float,
              entropy_coeff: float) -> tuple[Any, Any, Any, Any]:
        """One Adam step on the A3C loss of a batch.

        Args:
            obs: float32 ``[B, *obs_shape]`` (e.g. ``[B, 4, 84, 84]`` stacked Atari frames).
            actions: int64 ``[B]`` (or ``[B, 1]``) indices of the actions taken.
            advantages: float32 ``[B]`` (or ``[B, 1]``), e.g. GAE advantages.
            target_values: float32 ``[B]`` (or ``[B, 1]``), value targets (n-step returns / GAE returns).
            learning_rate: Adam's learning rate for this step, > 0 (a float or a one-element tensor).
            entropy_coeff: multiplies the entropy in the loss; negative rewards entropy (PARL's sign).

        Returns:
            ``(total_loss, pi_loss, vf_loss, entropy)``: 0-d float32 tensors (PARL's return).

        Raises:
            ValueError: shapes do not match ``B`` of ``obs``, actions are not discrete indices in
                ``[0, num_actions)`` (a continuous action space), or ``learning_rate <= 0``.
            TypeError: an input is not numeric.
        """
        ops = self.ops
        args = ops.to_device(self.device, obs, actions, advantages, target_values, learning_rate, entropy_coeff)
        try:
            return self._learn(*args)
        except (ValueError, RuntimeError) as err:
            ops.shape_error(self, "learn", err, args)
            raise

    def _learn(self, obs: Any, actions: Any, advantages: Any, target_values: Any, learning_rate: Any,
               entropy_coeff: Any) -> tuple[Any, Any, Any, Any]:
        ops = self.ops
        lr = positive(_number(learning_rate, "learning_rate", "1e-3"), "learning_rate", "A3C", "1e-3")
        entropy_coeff = _number(entropy_coeff, "entropy_coeff", "-0.01")
        obs = ops.obs_batch(obs, "A3C")
        batch = obs.shape[0]
        advantages = ops.column(advantages, "advantages", batch, "A3C")
        target_values = ops.column(target_values, "target_values", batch, "A3C")
        logits, values = self._policy_and_value(obs)
        actions = ops.discrete_actions(actions, batch, logits.shape[1], "A3C")
        log_probs, entropies = ops.functional.categorical_log_prob_entropy(logits, actions)
        reduce = (lambda x: x.sum()) if self.reduction == "sum" else (lambda x: x.mean())
        pi_loss = -reduce(log_probs * advantages.detach())
        vf_loss = 0.5 * reduce((values - target_values.detach()).pow(2))
        entropy = reduce(entropies)
        total_loss = pi_loss + self.vf_loss_coeff * vf_loss + entropy_coeff * entropy
        ops.set_lr(self.optimizer, lr)
        grad_norm = ops.step(self.optimizer, total_loss, self.max_grad_norm, return_norm=True)
        self.last_info = {"train/total_loss": ops.info_scalar(total_loss), "train/pi_loss": ops.info_scalar(pi_loss),
                          "train/vf_loss": ops.info_scalar(vf_loss), "train/entropy": ops.info_scalar(entropy),
                          "train/grad_norm": ops.info_scalar(grad_norm)}
        return total_loss.detach(), pi_loss.detach(), vf_loss.detach(), entropy.detach()

    def get_info(self) -> dict[str, Any]:
        """Diagnostics of the last ``learn`` call (a copy of :attr:`last_info`)."""
        return dict(self.last_info)
