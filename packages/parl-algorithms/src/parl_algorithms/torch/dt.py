"""Decision Transformer (Chen, Lu, Rajeswaran, Lee, Grover, Laskin, Abbeel, Srinivas and Mordatch 2021,
"Decision Transformer: Reinforcement Learning via Sequence Modeling", NeurIPS), with PARL's
``DecisionTransformer`` API: offline RL as return-conditioned behaviour cloning of action sequences."""

from __future__ import annotations

from typing import Any

import torch

from parl_algorithms._checks import dt_hyperparameters, dt_segments
from parl_algorithms._validation import check_model_method
from parl_algorithms.torch._common import clip_grad_norm
from parl_core.torch import Algorithm, Model
from parl_core.torch.device import DeviceLike, on_device

__all__ = ["DecisionTransformer"]


class DecisionTransformer(Algorithm):
    """Train a return-conditioned sequence model to predict the dataset's actions (Chen et al. 2021).

    ``learn`` takes a batch of trajectory segments of ``K`` steps and minimises the mean squared error
    between the model's action predictions and the dataset's actions over the unpadded positions, with
    AdamW, a linear learning-rate warm-up over ``warmup_steps`` and the global gradient norm clipped to
    ``max_grad_norm`` (the paper's settings; PARL's).

    The model must define ``forward(states, actions, rewards, returns_to_go, timesteps,
    attention_mask=None) -> (state_preds, action_preds, reward_preds)`` with ``action_preds`` float32
    ``[B, K, act_dim]``, and ``get_action(states, actions, rewards, returns_to_go, timesteps)`` for
    acting (PARL's model contract).

    Args:
        model: the sequence model.
        learning_rate: AdamW learning rate after the warm-up (> 0).
        warmup_steps: ``learn`` calls over which the learning rate rises linearly to ``learning_rate``.
        weight_decay: AdamW weight decay (>= 0).
        max_grad_norm: clip of the global gradient norm (0.25 as PARL and the paper).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``: where the models, optimizer state and
            every tensor of the algorithm live; default CUDA when available (PARL's rule).

    Raises:
        ValueError: the model lacks ``forward`` / ``get_action``, or a hyperparameter is out of range.
    """

    def __init__(self, model: Model, learning_rate: float | None = None, warmup_steps: int | None = None,
                 weight_decay: float | None = None, *, max_grad_norm: float = 0.25, device: DeviceLike = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "forward", "DecisionTransformer")
        check_model_method(model, "get_action", "DecisionTransformer")
        checked = dt_hyperparameters(learning_rate, warmup_steps, weight_decay, max_grad_norm)
        self.learning_rate: float = checked["learning_rate"]
        self.warmup_steps: int = checked["warmup_steps"]
        self.weight_decay: float = checked["weight_decay"]
        self.max_grad_norm: float = checked["max_grad_norm"]
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer,
                                                           lambda step: min((step + 1) / self.warmup_steps, 1.0))

    @on_device
    def predict(self, states: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor,
                returns_to_go: torch.Tensor, timesteps: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        """The model's next action given the trajectory so far (``model.get_action``)."""
        return self.model.get_action(states, actions, rewards, returns_to_go, timesteps)

    @on_device
    def learn(self, states: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor, dones: torch.Tensor,
              rtg: torch.Tensor, timesteps: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """One AdamW step on the action MSE of a batch of segments.

        Args:
            states: float32 ``[B, K, obs_dim]``.
            actions: float32 ``[B, K, act_dim]`` (the targets).
            rewards: float32 ``[B, K, 1]``.
            dones: ``[B, K]`` (unused by the loss; PARL's signature).
            rtg: float32 ``[B, K + 1, 1]`` returns-to-go (PARL's data loader appends one step; the first
                ``K`` condition the model). ``[B, K, 1]`` is accepted too.
            timesteps: int64 ``[B, K]`` positions in the episode.
            attention_mask: ``[B, K]``, 1 for real steps, 0 for left padding.

        Returns:
            the scalar loss tensor (PARL's return; ``loss.item()`` for a float).

        Raises:
            ValueError: a tensor's shape does not fit, or the mask selects no step.
        """
        _, length = dt_segments(torch.Tensor, states, actions, rtg, timesteps, attention_mask)
        _, action_preds, _ = self.model(states, actions, rewards, rtg[:, :length], timesteps,
                                        attention_mask=attention_mask)
        real = attention_mask.reshape(-1) > 0
        if not bool(real.any()):
            raise ValueError("DecisionTransformer.learn: attention_mask selects no step; each segment needs at "
                             "least one real (mask 1) step")
        act_dim = actions.shape[2]
        loss = torch.mean((action_preds.reshape(-1, act_dim)[real] - actions.reshape(-1, act_dim)[real]) ** 2)
        self.optimizer.zero_grad()
        loss.backward()
        clip_grad_norm(self.model.parameters(), self.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        return loss
