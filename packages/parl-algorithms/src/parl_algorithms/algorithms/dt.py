"""Decision Transformer (Chen, Lu, Rajeswaran, Lee, Grover, Laskin, Abbeel, Srinivas and Mordatch 2021,
"Decision Transformer: Reinforcement Learning via Sequence Modeling", NeurIPS), with PARL's
``DecisionTransformer`` API: offline RL as return-conditioned behaviour cloning of action sequences; written once
for torch and paddle."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from parl_algorithms._validation import check_model_method, positive

__all__ = ["DecisionTransformer"]


def _hyperparameters(learning_rate: Any, warmup_steps: Any, weight_decay: Any, max_grad_norm: Any) -> dict[str, Any]:
    """DecisionTransformer's checked constructor arguments (``learning_rate``, ``warmup_steps``, ``weight_decay``,
    ``max_grad_norm``).

    Raises:
        ValueError: ``learning_rate`` / ``max_grad_norm`` not > 0, ``warmup_steps`` < 1 or ``weight_decay`` < 0.
    """
    learning_rate = positive(learning_rate, "learning_rate", "DecisionTransformer", "1e-4")
    if warmup_steps is None or isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) \
            or warmup_steps < 1:
        raise ValueError(f"DecisionTransformer needs warmup_steps >= 1, got {warmup_steps!r}; e.g. "
                         "DecisionTransformer(model, warmup_steps=10_000)")
    if weight_decay is None or isinstance(weight_decay, bool) or not isinstance(weight_decay, (int, float)) \
            or weight_decay < 0:
        raise ValueError(f"DecisionTransformer needs weight_decay >= 0, got {weight_decay!r}; e.g. "
                         "DecisionTransformer(model, weight_decay=1e-4)")
    return {"learning_rate": learning_rate, "warmup_steps": warmup_steps, "weight_decay": float(weight_decay),
            "max_grad_norm": positive(max_grad_norm, "max_grad_norm", "DecisionTransformer", "0.25")}


def _segment(tensor: Any, tensor_type: type, name: str, shape: str, rank: int, batch: int | None,
             length: int | None) -> Any:
    if not isinstance(tensor, tensor_type) or tensor.ndim != rank or (batch is not None and tensor.shape[0] != batch) \
            or (length is not None and tensor.shape[1] != length):
        got = tuple(tensor.shape) if hasattr(tensor, "shape") else type(tensor).__name__
        raise ValueError(f"DecisionTransformer.learn: {name} must be a tensor {shape}, got {got}; batch segments as "
                         "[B, K, ...] with K the context length")
    return tensor


def _segments(tensor_type: type, states: Any, actions: Any, rtg: Any, timesteps: Any,
              attention_mask: Any) -> tuple[int, int]:
    """Check DecisionTransformer.learn's segment tensors (of ``tensor_type``); return ``(B, K)``.

    Raises:
        ValueError: a tensor is not of its documented shape ``[B, K, ...]``, or ``rtg`` has neither ``K`` nor
            ``K + 1`` steps.
    """
    batch, length = _segment(states, tensor_type, "states", "[B, K, obs_dim]", 3, None, None).shape[:2]
    _segment(actions, tensor_type, "actions", "[B, K, act_dim]", 3, batch, length)
    _segment(attention_mask, tensor_type, "attention_mask", "[B, K]", 2, batch, length)
    _segment(timesteps, tensor_type, "timesteps", "[B, K]", 2, batch, length)
    _segment(rtg, tensor_type, "rtg", "[B, K + 1, 1]", 3, batch, None)
    if rtg.shape[1] not in (length, length + 1):
        raise ValueError(f"DecisionTransformer.learn: rtg must have K or K + 1 = {length + 1} steps, got "
                         f"{rtg.shape[1]}")
    return batch, length


class DecisionTransformer:
    """Train a return-conditioned sequence model to predict the dataset's actions (Chen et al. 2021).

    ``learn`` takes a batch of trajectory segments of ``K`` steps and minimises the mean squared error
    between the model's action predictions and the dataset's actions over the unpadded positions, with
    AdamW (decoupled weight decay), a linear learning-rate warm-up over ``warmup_steps`` and the global
    gradient norm clipped to ``max_grad_norm`` (the paper's settings; PARL's).

    The model must define ``forward(states, actions, rewards, returns_to_go, timesteps,
    attention_mask=None) -> (state_preds, action_preds, reward_preds)`` with ``action_preds`` float32
    ``[B, K, act_dim]``, and ``get_action(states, actions, rewards, returns_to_go, timesteps)`` for
    acting (PARL's model contract).

    Args:
        model: the sequence model (a ``parl.Model`` of the class's framework).
        learning_rate: AdamW learning rate after the warm-up (> 0).
        warmup_steps: ``learn`` calls over which the learning rate rises linearly to ``learning_rate``.
        weight_decay: AdamW (decoupled) weight decay (>= 0).
        max_grad_norm: clip of the global gradient norm (0.25 as PARL and the paper).
        device: where models, optimizer state and tensors live (README, "Devices"): torch ``"cpu"``, ``"cuda:1"``, a
            ``torch.device`` (default CUDA when available); paddle ``"cpu"``, ``"gpu:1"`` (set process-wide).

    Raises:
        TypeError: the model is not a ``parl.Model`` of the class's framework.
        ValueError: the model lacks ``forward`` / ``get_action``, or a hyperparameter is out of range.
    """

    ops: ClassVar[Any]  # the backend's layer: parl_algorithms.torch.ops or parl_algorithms.paddle.ops

    def __init__(self, model: Any, learning_rate: float | None = None, warmup_steps: int | None = None,
                 weight_decay: float | None = None, *, max_grad_norm: float = 0.25, device: Any = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "forward", "DecisionTransformer")
        check_model_method(model, "get_action", "DecisionTransformer")
        checked = _hyperparameters(learning_rate, warmup_steps, weight_decay, max_grad_norm)
        self.learning_rate: float = checked["learning_rate"]
        self.warmup_steps: int = checked["warmup_steps"]
        self.weight_decay: float = checked["weight_decay"]
        self.max_grad_norm: float = checked["max_grad_norm"]
        self.optimizer, self.scheduler = self.ops.adamw(
            self.model.parameters(), self.learning_rate, self.weight_decay,
            lambda step: min((step + 1) / self.warmup_steps, 1.0), self.max_grad_norm)

    def predict(self, states: Any, actions: Any, rewards: Any, returns_to_go: Any, timesteps: Any,
                **kwargs: Any) -> Any:
        """The model's next action given the trajectory so far (``model.get_action``)."""
        return self.model.get_action(*self.ops.to_device(self.device, states, actions, rewards, returns_to_go,
                                                         timesteps))

    def learn(self, states: Any, actions: Any, rewards: Any, dones: Any, rtg: Any, timesteps: Any,
              attention_mask: Any) -> Any:
        """One AdamW step on the action MSE of a batch of segments.

        Args:
            states: float32 ``[B, K, obs_dim]`` (tensors of the class's framework or numpy arrays, as every
                argument).
            actions: float32 ``[B, K, act_dim]`` (the targets).
            rewards: float32 ``[B, K, 1]``.
            dones: ``[B, K]`` (unused by the loss; PARL's signature).
            rtg: float32 ``[B, K + 1, 1]`` returns-to-go (PARL's data loader appends one step; the first
                ``K`` condition the model). ``[B, K, 1]`` is accepted too.
            timesteps: int64 ``[B, K]`` positions in the episode.
            attention_mask: ``[B, K]``, 1 for real steps, 0 for left padding.

        Returns:
            the 0-d loss tensor (PARL's return; ``loss.item()`` for a float).

        Raises:
            ValueError: a tensor's shape does not fit, or the mask selects no step.
        """
        ops = self.ops
        states, actions, rewards, rtg, timesteps, attention_mask = (
            ops.tensor(x) if isinstance(x, np.ndarray) else x  # (paddle: to_device leaves numpy arrays as they are)
            for x in ops.to_device(self.device, states, actions, rewards, rtg, timesteps, attention_mask))
        _, length = _segments(ops.Tensor, states, actions, rtg, timesteps, attention_mask)
        _, action_preds, _ = self.model(states, actions, rewards, rtg[:, :length], timesteps,
                                        attention_mask=attention_mask)
        real = (attention_mask.reshape([-1]) > 0).nonzero().squeeze(1)
        if real.shape[0] == 0:
            raise ValueError("DecisionTransformer.learn: attention_mask selects no step; each segment needs at "
                             "least one real (mask 1) step")
        act_dim = actions.shape[2]
        loss = ((action_preds.reshape([-1, act_dim])[real] - actions.reshape([-1, act_dim])[real]) ** 2).mean()
        ops.step(self.optimizer, loss, self.max_grad_norm)
        self.scheduler.step()
        return loss
