"""Decision Transformer (Chen, Lu, Rajeswaran, Lee, Grover, Laskin, Abbeel, Srinivas and Mordatch 2021,
"Decision Transformer: Reinforcement Learning via Sequence Modeling", NeurIPS) on PaddlePaddle: the torch
``DecisionTransformer``'s API and math (return-conditioned behaviour cloning of action sequences)."""

from __future__ import annotations

from typing import Any

import numpy as np
import paddle

from parl_algorithms._checks import dt_hyperparameters, dt_segments
from parl_algorithms._validation import check_model_method
from parl_core.paddle import Algorithm, Model

__all__ = ["DecisionTransformer"]


class DecisionTransformer(Algorithm):
    """Train a return-conditioned sequence model to predict the dataset's actions (same math as the torch class).

    ``learn`` minimises the mean squared error between the model's action predictions and the dataset's
    actions over the unpadded positions of a batch of ``K``-step segments, with AdamW, a linear learning-rate
    warm-up over ``warmup_steps`` (``LambdaDecay``) and the global gradient norm clipped to ``max_grad_norm``.

    The model must define ``forward(states, actions, rewards, returns_to_go, timesteps, attention_mask=None)
    -> (state_preds, action_preds, reward_preds)`` with ``action_preds`` float32 ``[B, K, act_dim]``, and
    ``get_action(states, actions, rewards, returns_to_go, timesteps)`` (PARL's model contract).

    Args:
        model: the sequence model (a ``parl_core.paddle.Model``).
        learning_rate: AdamW learning rate after the warm-up (> 0).
        warmup_steps: ``learn`` calls over which the learning rate rises linearly to ``learning_rate``.
        weight_decay: AdamW (decoupled) weight decay (>= 0).
        max_grad_norm: clip of the global gradient norm (0.25 as PARL and the paper).
        device: ``"cpu"``, ``"gpu"``, ``"gpu:1"`` (or ``"cuda"``): paddle's device (process-wide).

    Raises:
        TypeError: the model is not a paddle ``parl.Model``.
        ValueError: the model lacks ``forward`` / ``get_action``, or a hyperparameter is out of range.
    """

    def __init__(self, model: Model, learning_rate: float | None = None, warmup_steps: int | None = None,
                 weight_decay: float | None = None, *, max_grad_norm: float = 0.25, device: str | None = None) -> None:
        super().__init__(model, device=device)
        check_model_method(model, "forward", "DecisionTransformer")
        check_model_method(model, "get_action", "DecisionTransformer")
        checked = dt_hyperparameters(learning_rate, warmup_steps, weight_decay, max_grad_norm)
        self.learning_rate: float = checked["learning_rate"]
        self.warmup_steps: int = checked["warmup_steps"]
        self.weight_decay: float = checked["weight_decay"]
        self.max_grad_norm: float = checked["max_grad_norm"]
        self.scheduler = paddle.optimizer.lr.LambdaDecay(self.learning_rate,
                                                         lambda step: min((step + 1) / self.warmup_steps, 1.0))
        self.optimizer = paddle.optimizer.AdamW(learning_rate=self.scheduler, parameters=model.parameters(),
                                                weight_decay=self.weight_decay,
                                                grad_clip=paddle.nn.ClipGradByGlobalNorm(self.max_grad_norm))

    def predict(self, states: paddle.Tensor, actions: paddle.Tensor, rewards: paddle.Tensor,
                returns_to_go: paddle.Tensor, timesteps: paddle.Tensor, **kwargs: Any) -> paddle.Tensor:
        """The model's next action given the trajectory so far (``model.get_action``)."""
        return self.model.get_action(states, actions, rewards, returns_to_go, timesteps)

    def learn(self, states: paddle.Tensor, actions: paddle.Tensor, rewards: paddle.Tensor, dones: paddle.Tensor,
              rtg: paddle.Tensor, timesteps: paddle.Tensor, attention_mask: paddle.Tensor) -> paddle.Tensor:
        """One AdamW step on the action MSE of a batch of segments.

        Args:
            states: float32 ``[B, K, obs_dim]`` (paddle tensors or numpy arrays, as every argument).
            actions: float32 ``[B, K, act_dim]`` (the targets).
            rewards: float32 ``[B, K, 1]``.
            dones: ``[B, K]`` (unused by the loss; PARL's signature).
            rtg: float32 ``[B, K + 1, 1]`` returns-to-go (``[B, K, 1]`` accepted too; the first ``K`` are used).
            timesteps: int64 ``[B, K]`` positions in the episode.
            attention_mask: ``[B, K]``, 1 for real steps, 0 for left padding.

        Returns:
            the 0-d loss tensor (PARL's return).

        Raises:
            ValueError: a tensor's shape does not fit, or the mask selects no step.
        """
        states, actions, rewards, rtg, timesteps, attention_mask = (
            paddle.to_tensor(x) if isinstance(x, np.ndarray) else x  # numpy in, as the torch class (on_device)
            for x in (states, actions, rewards, rtg, timesteps, attention_mask))
        _, length = dt_segments(paddle.Tensor, states, actions, rtg, timesteps, attention_mask)
        _, action_preds, _ = self.model(states, actions, rewards, rtg[:, :length], timesteps,
                                        attention_mask=attention_mask)
        real = paddle.nonzero(attention_mask.reshape([-1]) > 0).squeeze(1)
        if real.shape[0] == 0:
            raise ValueError("DecisionTransformer.learn: attention_mask selects no step; each segment needs at "
                             "least one real (mask 1) step")
        act_dim = actions.shape[2]
        pred = paddle.index_select(action_preds.reshape([-1, act_dim]), real)
        loss = paddle.mean((pred - paddle.index_select(actions.reshape([-1, act_dim]), real)) ** 2)
        self.optimizer.clear_grad()
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        return loss
